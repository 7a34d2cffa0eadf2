# Copyright 2026 kron_dynamics developers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
ROS latency benchmark: dynamics_node against a trivial echo node, joint states at 1 kHz.

How it measures (interleaved blocks, outputs matched to inputs by content, scheduling, the
targets): docs/performance.md, "ROS latency"::

    .venv/bin/python bench/ros_latency.py                 # 60 s per node, writes
    .venv/bin/python bench/ros_latency.py --duration 5    # bench/results/ros_latency.json
"""

import argparse
import gc
import math
import os
from pathlib import Path
import shutil
import subprocess
import sys
import tempfile
import time

from lib import provenance
from lib.ros_bench import (add_common_arguments, BUILD, cpu_seconds, node_command, node_env,
                           OUTPUT_TOPIC, PARAMS, prepare, REPO, Trajectory)
import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import HistoryPolicy, QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from kron_dynamics import RobotModel
from kron_dynamics.demo.processes import end, interrupt, wait_at_most
from kron_dynamics.nodes.executor import make_executor

GRAVITY = (0.0, 0.0, -9.81)     # as in config/dynamics.yaml
NODES = ('dynamics', 'echo')
TARGETS = {'median_ratio_max': 1.3, 'p99_ms_max': 2.0}
MATCH_RTOL = 1e-9
QUIET_CORES = 0.25   # a block is quiet if other processes used fewer cores meanwhile


def machine_busy_seconds() -> float:
    """Return the CPU seconds all processes of the machine have used (from /proc/stat)."""
    with open('/proc/stat') as f:
        values = [int(v) for v in f.readline().split()[1:9]]
    return (sum(values) - values[3] - values[4]) / os.sysconf('SC_CLK_TCK')


def foreign_cores(procs: dict, previous=None):
    """
    Return (sample, cores): CPU used by processes other than the nodes and this driver.

    ``cores`` is the mean number of cores they used since ``previous`` (None at the first
    call); it tells whether other jobs competed with the benchmark.
    """
    ours = time.process_time() + sum(cpu_seconds(p.pid) for p in procs.values())
    sample = (time.monotonic(), machine_busy_seconds(), ours)
    if previous is None:
        return sample, None
    wall = sample[0] - previous[0]
    return sample, max(0.0, (sample[1] - previous[1]) - (sample[2] - previous[2])) / wall


def schedule(duration: float, warmup: float, block: float, rate: float) -> list:
    """Return [(node, messages, measured)]: a warm-up for each node, then alternate blocks."""
    plan = [(key, round(warmup * rate), False) for key in NODES if warmup > 0]
    left = {key: round(duration * rate) for key in NODES}
    per_block = max(1, round(block * rate))
    while any(left.values()):
        for key in NODES:
            n = min(per_block, left[key])
            if n:
                plan.append((key, n, True))
                left[key] -= n
    return plan


def wait_ready(node, pubs: dict, procs: dict, timeout: float = 180.0) -> None:
    """Wait until both nodes subscribe to their inputs and publish their outputs."""
    deadline = time.monotonic() + timeout
    while True:
        ready = all(pubs[k].get_subscription_count() >= 1
                    and node.count_publishers(OUTPUT_TOPIC[k]) >= 1 for k in NODES)
        if ready:
            return
        dead = [k for k, p in procs.items() if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            raise RuntimeError(f'nodes not ready (exited: {dead})')
        time.sleep(0.05)


def start_load(count: int, seconds: float) -> list:
    """Start count busy-looping processes (normal scheduling) that end after seconds."""
    code = ('import time\nend = time.monotonic() + %r\nwhile time.monotonic() < end:\n'
            '    pass\n' % seconds)

    def normal_scheduling():   # not the driver's SCHED_FIFO, which children inherit
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    return [subprocess.Popen([sys.executable, '-c', code], preexec_fn=normal_scheduling)
            for _ in range(count)]


def run(urdf: Path, duration: float, rate: float, block: float, warmup: float, src=None,
        log=print, priority: int = 0, load: int = 0, middleware: int = 0) -> dict:
    """Run the nodes and the driver; return the raw records of the run."""
    model = RobotModel.from_urdf_file(urdf, None, GRAVITY)
    names = list(model.joint_names)
    traj = Trajectory(len(names), rate)
    plan = schedule(duration, warmup, block, rate)
    total = sum(n for _, n, _ in plan)
    node_of = np.empty(total, dtype=np.int8)
    measured = np.empty(total, dtype=bool)
    k = 0
    for key, n, is_measured in plan:
        node_of[k:k + n] = NODES.index(key)
        measured[k:k + n] = is_measured
        k += n
    target = np.arange(total) / rate
    send_mono = np.full(total, np.nan)
    offsets = np.zeros(total)    # schedule shift after driver stalls, s
    send_real = np.zeros(total, dtype=np.int64)
    received = {key: [] for key in NODES}

    env = node_env(src)
    env.setdefault('NUMBA_CACHE_DIR', str(BUILD / 'numba_cache'))   # kept between runs
    logdir = Path(tempfile.mkdtemp(prefix='ros_latency_logs_'))
    procs, logs = {}, {}
    for key in NODES:
        logs[key] = logdir / f'{key}.log'
        with open(logs[key], 'w') as out:
            # every input answered once (state_policy all), as the echo node does: the count
            # is part of the result
            args = ['-r', f'joint_states:=/bench/{key}/joint_states',
                    '-p', f'thread_priority:={priority}',
                    '-p', f'middleware_thread_priority:={middleware}',
                    *(['-p', 'state_policy:=all'] if key == 'dynamics' else [])]
            procs[key] = subprocess.Popen(node_command(key, urdf, *args),
                                          cwd=src or REPO,
                                          env=env, stdout=out, stderr=subprocess.STDOUT)
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('ros_latency_driver', context=context)
    # SingleThreadedExecutor: rclpy's EventsExecutor cannot call callbacks taking the
    # message info, which holds the DDS reception timestamp.
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    probe = make_executor(context)   # what the nodes spin with (common.run_node)
    node_executor = type(probe).__name__
    probe.shutdown()
    keep_all = QoSProfile(depth=1000, history=HistoryPolicy.KEEP_ALL)
    pubs = {}
    for key in NODES:
        pubs[key] = node.create_publisher(JointState, f'/bench/{key}/joint_states',
                                          QoSProfile(depth=10000))

        def on_output(msg, info, records=received[key]):
            records.append((time.monotonic(), info['received_timestamp'],
                            info['publication_sequence_number'], np.array(msg.data)))
        node.create_subscription(Float64MultiArray, OUTPUT_TOPIC[key], on_output, keep_all)

    cpu = {key: 0.0 for key in NODES}
    hogs = []
    foreign = {key: [] for key in NODES}   # cores used by other processes, per block
    late = 0
    load_before = os.getloadavg()
    try:
        wait_ready(node, pubs, procs)
        # the driver runs at the nodes' priority, all its threads: the DDS threads that
        # timestamp the receptions, and this one, which publishes on schedule (the nodes set
        # their executor thread only, as ros2_control does: thread_priority)
        driver_realtime = driver_priority(priority)
        for line in driver_realtime:
            log(f'driver: {line}')
        if load:
            hogs = start_load(load, total / rate + 30.0)
            log(f'background load: {load} busy-looping processes')
        settle = time.monotonic() + 1.0
        while time.monotonic() < settle:
            executor.spin_once(timeout_sec=0.05)
        log(f'nodes ready; {total} messages in {len(plan)} blocks '
            f'({duration:g} s per node at {rate:g} Hz, blocks of {block:g} s)')
        gc.disable()   # no collector pauses in the driver while it publishes
        t0 = time.monotonic() + 0.01
        shift = 0.0
        k = 0
        for key, n, is_measured in plan:
            pub = pubs[key]
            if is_measured:
                before = {p: cpu_seconds(procs[p].pid) for p in NODES}
                sample, _ = foreign_cores(procs)
            block_end = k + n
            while k < block_end:
                now = time.monotonic()
                due = t0 + shift + target[k]
                if now < due:
                    executor.spin_once(timeout_sec=due - now)
                    continue
                if now - due > 1e-3:
                    late += 1
                    # the driver stalled: shift the rest of the schedule instead of sending
                    # the overdue messages in a burst (a timer does not fire missed periods
                    # either), so the nodes always see at most 1 kHz
                    shift += now - due
                    due = now
                offsets[k] = shift
                q, qd = traj.state(k)
                msg = JointState(name=names, position=q, velocity=qd)
                real = time.time_ns()
                msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(real, 1_000_000_000)
                send_mono[k] = time.monotonic()
                send_real[k] = real
                pub.publish(msg)
                k += 1
            if is_measured:
                cpu[key] += cpu_seconds(procs[key].pid) - before[key]
                foreign[key].append(round(foreign_cores(procs, sample)[1], 3))
        t_end = time.monotonic()
        expected = {key: int(np.sum(node_of == i)) for i, key in enumerate(NODES)}
        deadline = time.monotonic() + 10.0
        while (time.monotonic() < deadline
               and any(len(received[key]) < expected[key] for key in NODES)):
            executor.spin_once(timeout_sec=0.05)
        extra = time.monotonic() + 0.5   # anything processed twice would arrive now
        while time.monotonic() < extra:
            executor.spin_once(timeout_sec=0.05)
        alive = {key: p.poll() is None for key, p in procs.items()}
    except BaseException:
        for key, path in logs.items():
            log(f'--- {key} log (tail):\n{path.read_text(errors="replace")[-3000:]}')
        raise
    finally:
        gc.enable()
        for p in hogs:
            p.kill()
            wait_at_most(p, 10.0)   # bounded: see its docstring
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        for p in procs.values():
            interrupt(p)   # all at once, so that they shut down together
        for p in procs.values():
            end(p)   # SIGKILL after 10 s; bounded (see wait_at_most)
    node_logs = {key: path.read_text(errors='replace') for key, path in logs.items()}
    shutil.rmtree(logdir, ignore_errors=True)
    return {'model': model, 'names': names, 'traj': traj, 'plan': plan, 'node_of': node_of,
            'measured': measured, 'target': target, 'offsets': offsets, 't0': t0, 't_end': t_end,
            'send_mono': send_mono, 'send_real': send_real, 'received': received,
            'cpu': cpu, 'foreign': foreign, 'late': late, 'node_executor': node_executor,
            'alive': alive, 'logs': node_logs, 'driver_realtime': driver_realtime,
            'load_before': load_before, 'load_after': os.getloadavg()}


def driver_priority(priority: int) -> list:
    """Put every thread of the driver under SCHED_FIFO at priority (0: leave it); lines done."""
    if not priority:
        return []
    count = 0
    try:
        for tid in os.listdir('/proc/self/task'):
            try:
                os.sched_setscheduler(int(tid), os.SCHED_FIFO, os.sched_param(priority))
                count += 1
            except ProcessLookupError:
                pass
    except OSError as exc:
        return [f'could not set SCHED_FIFO priority {priority} ({exc})']
    return [f'SCHED_FIFO priority {priority} on {count} threads']


def realtime_lines(node_log: str) -> list:
    """Return what a node's log says about its real-time settings (applied or refused)."""
    keys = ('SCHED_FIFO', 'CPU affinity', 'mlockall')
    return [line.split(']: ', 1)[-1] for line in node_log.splitlines()
            if any(k in line for k in keys)]


def fingerprints(key: str, rec: dict, inputs: np.ndarray) -> np.ndarray:
    """Return the expected output of every input index (rows in the order of inputs)."""
    traj, model = rec['traj'], rec['model']
    rows = []
    for k in inputs:
        q, qd = traj.state(int(k))
        rows.append(q if key == 'echo' else model.bias_torque(np.array(q), np.array(qd)))
    return np.array(rows, dtype=float)


def match_outputs(outputs: list, expected: np.ndarray):
    """
    Return the row of expected that each output equals (-1: none), by content.

    Outputs come nearly in order, so the row after the previous match is tried first, then
    an exact lookup, then the nearest row within MATCH_RTOL.
    """
    exact = {row.tobytes(): i for i, row in enumerate(expected)}
    scale = 1.0 + np.abs(expected)
    rows = np.full(len(outputs), -1)
    prev = -1
    for i, data in enumerate(outputs):
        if data.shape != expected.shape[1:]:
            continue
        nxt = prev + 1
        if nxt < len(expected) and np.array_equal(data, expected[nxt]):
            j = nxt
        else:
            j = exact.get(data.tobytes(), -1)
            if j < 0:
                err = np.max(np.abs(expected - data) / scale, axis=1)
                best = int(np.argmin(err))
                j = best if err[best] <= MATCH_RTOL else -1
        rows[i] = j
        if j >= 0:
            prev = j
    return rows


def stats_ms(values: np.ndarray) -> dict:
    """Return median, p90, p99, p99.9, max and mean of latencies in ms."""
    if not len(values):
        return {q: math.nan for q in ('median', 'p90', 'p99', 'p99_9', 'max', 'mean')}
    return {'median': float(np.median(values)), 'p90': float(np.percentile(values, 90)),
            'p99': float(np.percentile(values, 99)),
            'p99_9': float(np.percentile(values, 99.9)), 'max': float(values.max()),
            'mean': float(values.mean())}


def analyse(key: str, rec: dict) -> dict:
    """Match the outputs of one node to its inputs; return counts and latencies."""
    inputs = np.nonzero(rec['node_of'] == NODES.index(key))[0]
    is_measured = rec['measured'][inputs]
    records = rec['received'][key]
    outputs = [r[3] for r in records]
    expected = fingerprints(key, rec, inputs)
    probe = match_outputs(outputs[:200], expected)
    matching = 'content'
    if len(outputs) and np.mean(probe < 0) > 0.5:
        # contents do not match (e.g. the node computes something else): order and count
        matching = 'order (contents did not match)'
        rows = np.arange(len(outputs))
        rows[rows >= len(inputs)] = -1
    else:
        rows = match_outputs(outputs, expected)
    counts = np.bincount(rows[rows >= 0], minlength=len(inputs))
    matched = rows[rows >= 0]
    first = {}
    for i, j in enumerate(rows):
        if j >= 0 and j not in first:
            first[j] = i
    lat_dds, lat_cb, block_of = [], [], []
    block = np.cumsum(np.r_[0, np.diff(inputs) > 1])   # inputs of one block are consecutive
    for j in np.nonzero(is_measured & (counts >= 1))[0]:
        k = inputs[j]
        recv_mono, recv_real, _, _ = records[first[j]]
        lat_dds.append((recv_real - rec['send_real'][k]) * 1e-6)
        lat_cb.append((recv_mono - rec['send_mono'][k]) * 1e3)
        block_of.append(block[j])
    lat_dds, block_of = np.array(lat_dds), np.array(block_of)
    seq = [r[2] for r in records if r[2] is not None]
    n_measured = int(is_measured.sum())
    handled = int(counts[is_measured].clip(max=1).sum())
    blocks = np.unique(block[is_measured])   # measured blocks, in order, even if empty
    return {
        'inputs_measured': n_measured,
        'inputs_warmup': int(len(inputs) - n_measured),
        'outputs_measured': int(counts[is_measured].sum()),
        'outputs_total': len(outputs),
        'matching': matching,
        'dropped': int(np.sum(counts[is_measured] == 0)),
        'processed_twice': int(np.sum(counts[is_measured] > 1)),
        'extra_outputs': int(np.sum(np.clip(counts[is_measured] - 1, 0, None))),
        'dropped_warmup': int(np.sum(counts[~is_measured] == 0)),
        'unmatched_outputs': int(np.sum(rows < 0)),
        'out_of_order': int(np.sum(np.diff(matched) < 0)) if len(matched) > 1 else 0,
        'publication_seq_gaps': int(max(seq) - min(seq) + 1 - len(set(seq))) if seq else None,
        'latency_ms': stats_ms(lat_dds),
        'latency_median_per_block_ms': [round(stats_ms(lat_dds[block_of == b])['median'], 4)
                                        for b in blocks],
        'latency_p99_per_block_ms': [round(stats_ms(lat_dds[block_of == b])['p99'], 4)
                                     for b in blocks],
        'other_processes_cores_per_block': rec['foreign'][key],
        'latency_to_callback_ms': stats_ms(np.array(lat_cb)),
        'cpu_us_per_message': rec['cpu'][key] / max(handled, 1) * 1e6,
        'alive_at_end': rec['alive'][key],
        '_latency_per_block': [lat_dds[block_of == b] for b in blocks],   # not in the JSON
    }


def publisher_stats(rec: dict) -> dict:
    """Return how steadily the driver published (lateness against the 1 ms deadlines)."""
    sent = ~np.isnan(rec['send_mono'])
    due = rec['t0'] + rec['target'][sent] + rec['offsets'][sent]
    lateness = (rec['send_mono'][sent] - due) * 1e3
    span = rec['send_mono'][sent][-1] - rec['send_mono'][sent][0] if sent.sum() > 1 else 0
    return {'sent': int(sent.sum()),
            'rate_hz': float((sent.sum() - 1) / span) if span else math.nan,
            'lateness_ms': stats_ms(lateness), 'later_than_1ms': rec['late']}


def checks(nodes: dict) -> dict:
    """Return {name: (value, limit, met)} of the targets of the Performance issue."""
    dyn, echo = nodes['dynamics'], nodes['echo']
    ratio = dyn['latency_ms']['median'] / echo['latency_ms']['median']
    p99 = dyn['latency_ms']['p99']
    bad = dyn['dropped'] + dyn['processed_twice'] + dyn['unmatched_outputs']
    return {
        'median dynamics / median echo': (ratio, f"<= {TARGETS['median_ratio_max']}",
                                          bool(ratio <= TARGETS['median_ratio_max'])),
        'p99 dynamics [ms]': (p99, f"<= {TARGETS['p99_ms_max']}",
                              bool(p99 <= TARGETS['p99_ms_max'])),
        'dynamics inputs dropped / twice / unmatched outputs': (
            f"{dyn['dropped']} / {dyn['processed_twice']} / {dyn['unmatched_outputs']}",
            '0', bad == 0 and dyn['matching'] == 'content'),
    }


def quiet_pairs(nodes: dict, foreign: dict, limit: float = QUIET_CORES) -> dict:
    """Return the latencies of the block pairs during which other processes used < limit."""
    per_block = {key: nodes[key].pop('_latency_per_block') for key in NODES}
    quiet = [i for i, loads in enumerate(zip(*(foreign[key] for key in NODES)))
             if max(loads) < limit and all(i < len(per_block[key]) for key in NODES)]
    result = {'limit_cores': limit, 'pairs': len(quiet),
              'of': min(len(per_block[key]) for key in NODES)}
    for key in NODES:
        values = [per_block[key][i] for i in quiet]
        result[key] = stats_ms(np.concatenate(values) if values else np.array([]))
    result['median_ratio'] = result['dynamics']['median'] / result['echo']['median']
    return result


def main(argv=None) -> int:
    """Run the benchmark, print a Markdown table and write bench/results/ros_latency.json."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--duration', type=float, default=60.0,
                        help='seconds of 1 kHz input per node, measured (60)')
    parser.add_argument('--rate', type=float, default=1000.0, help='joint states per s (1000)')
    parser.add_argument('--block', type=float, default=5.0,
                        help='seconds per interleaved block (5)')
    parser.add_argument('--warmup', type=float, default=2.0,
                        help='seconds per node before the blocks, not counted (2)')
    parser.add_argument('--thread-priority', type=int, default=40,
                        help='SCHED_FIFO priority of both nodes (their thread_priority '
                             'parameter, as config/dynamics.yaml sets it) and of the driver; '
                             '0: normal scheduling (40)')
    parser.add_argument('--middleware-priority', type=int, default=0,
                        help='SCHED_FIFO priority of the nodes\' other (DDS) threads, their '
                             'middleware_thread_priority parameter; 0: normal (0)')
    parser.add_argument('--background-load', type=int, default=0,
                        help='busy-looping processes competing for the cores meanwhile (0)')
    add_common_arguments(parser, 'ros_latency.json')
    args = parser.parse_args(argv)
    urdf, label, src, sources = prepare(args, 'latency_src')
    rec = run(urdf, args.duration, args.rate, args.block, args.warmup, src,
              priority=args.thread_priority, load=args.background_load,
              middleware=args.middleware_priority)
    nodes = {key: analyse(key, rec) for key in NODES}
    quiet = quiet_pairs(nodes, rec['foreign'])
    result = {
        'nodes': nodes,
        'checks': checks(nodes),
        'quiet_block_pairs': quiet,
        'publisher': publisher_stats(rec),
        'config': {'model': label, 'urdf': str(urdf), 'joints': rec['names'],
                   'duration_s_per_node': args.duration, 'rate_hz': args.rate,
                   'block_s': args.block, 'warmup_s_per_node': args.warmup,
                   'background_load_processes': args.background_load,
                   'mode': 'interleaved blocks, one node fed at a time',
                   'latency': 'driver publish() to DDS reception of the output '
                              '(message info received_timestamp)',
                   'node_executor': rec['node_executor'],
                   'thread_priority': args.thread_priority,
                   'middleware_thread_priority': args.middleware_priority,
                   'realtime': {'driver': rec['driver_realtime'],
                                **{key: realtime_lines(rec['logs'][key]) for key in NODES}},
                   'params_file': str(PARAMS.relative_to(REPO))},
    }
    pairs = [d / e for d, e in zip(nodes['dynamics']['latency_median_per_block_ms'],
                                   nodes['echo']['latency_median_per_block_ms'])]
    result['median_ratio_per_block_pair'] = {
        'pairs': [round(r, 3) for r in pairs],
        'median': float(np.median(pairs)) if pairs else math.nan,
        'note': 'dynamics block median / median of the echo block right after it'}
    ok = all(met for _, _, met in result['checks'].values())
    result['ok'] = ok
    for key in NODES:
        lat = nodes[key]['latency_ms']
        print(f"{key}: latency median {lat['median']:.3f} ms, p99 {lat['p99']:.3f} ms")
    for name, (value, limit, met) in result['checks'].items():
        print(f"{name}: {value} (limit {limit}): {'met' if met else 'NOT MET'}")
    pairs = result['median_ratio_per_block_pair']
    print(f"\nmedian ratio per block pair (background-load drift check): "
          f"{pairs['pairs']}, median {pairs['median']:.3f}")
    if quiet['pairs']:
        print(f"quiet block pairs only ({quiet['pairs']} of {quiet['of']}, other processes "
              f"< {QUIET_CORES} cores): median dynamics {quiet['dynamics']['median']:.3f} ms, "
              f"echo {quiet['echo']['median']:.3f} ms, ratio {quiet['median_ratio']:.3f}; "
              f"p99 dynamics {quiet['dynamics']['p99']:.3f} ms, echo {quiet['echo']['p99']:.3f}"
              " ms")
    others = [c for key in NODES for c in rec['foreign'][key]]
    if others:
        print(f'other processes used {np.mean(others):.2f} cores on average during the '
              f'blocks, {max(others):.2f} at most (per block in the JSON)'
              + ('  WARNING: the machine was not quiet' if max(others) >= QUIET_CORES
                 else ''))
    pub = result['publisher']
    print(f"publisher: {pub['sent']} sent at {pub['rate_hz']:.1f} Hz, lateness median "
          f"{pub['lateness_ms']['median']:.3f} ms, p99 {pub['lateness_ms']['p99']:.3f} ms, "
          f"{pub['later_than_1ms']} more than 1 ms late; load average before/after "
          f"{rec['load_before'][0]:.2f}/{rec['load_after'][0]:.2f}")
    settings = result['config']['realtime']
    print('scheduling: ' + ('normal (thread_priority 0)' if not args.thread_priority else
                            '; '.join(f"{who}: {', '.join(lines) or 'nothing logged'}"
                                      for who, lines in settings.items())))
    for key in NODES:
        r = nodes[key]
        if not r['alive_at_end'] or r['dropped'] or 'rejected' in rec['logs'][key]:
            print(f'--- {key} log (tail):\n{rec["logs"][key][-3000:]}')
    result['checks'] = {name: {'value': v, 'limit': lim, 'met': met}
                        for name, (v, lim, met) in result['checks'].items()}
    print(f'\n{"PASS" if ok else "FAIL"}')
    out = Path(args.out)
    provenance.write_result(out.parent, out.stem, {
        'sources_sha256': sources,
        'rmw': os.environ.get('RMW_IMPLEMENTATION', 'default (rmw_fastrtps_cpp)'),
        'loadavg_before': rec['load_before'], 'loadavg_after': rec['load_after']}, result)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
