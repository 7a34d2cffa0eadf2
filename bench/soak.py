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
Soak test: dynamics_node and computed_torque_controller fed joint states at a fixed rate.

A share of the messages is bad (NaN, inf, wrong lengths, duplicate or missing names, stamps
going backwards). Checks that both processes stay up, that every valid input gets exactly one
bias torque from dynamics_node and no invalid one does, that the controller commands at most
once per valid input and keeps up (it acts on the newest state only, so it may skip states it
was too busy for, never queue them: at least ``MIN_COMMAND_SHARE`` of them get a command),
that no output is NaN or inf, and that resident memory stops growing after warm-up. Reports
inputs, outputs, rejections, latency and memory.

    .venv/bin/python bench/soak.py --duration 600 --rate 1000 --bad 0.1

(the test suite runs a 5 s version: test/test_soak_and_faults.py). Writes
bench/results/soak.json, stamped with the revision and the machine (bench/lib/provenance.py), and
re-renders docs/ (bench/report.py).
"""

import argparse
from dataclasses import asdict, dataclass
import math
import os
from pathlib import Path
import random
import sys
import threading
import time

import numpy as np
from lib import provenance
import rclpy
from rclpy.qos import HistoryPolicy, QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from kron_dynamics import RobotModel
from kron_dynamics.demo import processes
from kron_dynamics.nodes.executor import make_executor

REPO = Path(__file__).resolve().parent.parent
URDF = REPO / 'urdf' / 'stacker.urdf'
JOINTS = ['q1_travel', 'q2_slew', 'q3_luff']


# the controller keeps one joint state (the newest): a valid state it had no time for before
# the next one arrived gets no command
MIN_COMMAND_SHARE = 0.9


@dataclass
class SoakResult:
    """Figures of one soak run."""

    duration_s: float
    rate_hz: float
    sent: int
    valid: int
    bad: int
    bias_outputs: int
    commands: int
    nonfinite_outputs: int
    latency_median_ms: float
    latency_p99_ms: float
    latency_max_ms: float
    rss_mb: dict
    rss_growth_after_warmup_mb: dict
    alive: dict
    longest_gap_s: dict
    paced_s: float = 0.0        # time the stream was held for the nodes (max_backlog)

    def ok(self, max_growth_mb: float = 5.0) -> bool:
        """Return True if the run met every criterion."""
        return (all(self.alive.values()) and self.bias_outputs == self.valid
                and MIN_COMMAND_SHARE * self.valid <= self.commands <= self.valid
                and self.nonfinite_outputs == 0
                and all(g < max_growth_mb for g in self.rss_growth_after_warmup_mb.values()))


def rss_mb(pid: int) -> float:
    """Return the resident set size of a process in MB."""
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024.0
    return math.nan


def bad_message(rng: random.Random, q, stamp) -> JointState:
    """Return a joint state with one defect that every node must reject."""
    kind = rng.randrange(7)
    msg = JointState(name=list(JOINTS), position=list(q), velocity=[0.1, 0.0, 0.0])
    msg.header.stamp = stamp
    if kind == 0:
        msg.position[rng.randrange(3)] = math.nan
    elif kind == 1:
        msg.velocity[rng.randrange(3)] = rng.choice([math.inf, -math.inf])
    elif kind == 2:
        msg.position = msg.position[:2]
    elif kind == 3:
        msg.velocity = [0.0]
    elif kind == 4:
        msg.name = ['q1_travel', 'q1_travel', 'q3_luff']
    elif kind == 5:
        msg.name, msg.position, msg.velocity = JOINTS[:2], msg.position[:2], msg.velocity[:2]
    else:
        msg.header.stamp.sec = max(0, stamp.sec - 10)   # goes backwards
    return msg


def start_nodes(env) -> dict:
    """Start dynamics_node and computed_torque_controller on the stacker."""
    common = ['--ros-args', '-p', f'urdf_file:={URDF}']
    procs = {}
    # the watchdog is not under test here (bench/faults.py tests it): a pause of the driver
    # on a busy machine must not add a zero-effort command to the count
    # dynamics_node answers every state (state_policy all): the soak counts one output per
    # valid input; the default policy, newest, would drop states that wait behind another
    for module, extra in (('dynamics_node', ['-p', 'state_policy:=all']),
                          ('computed_torque_controller', ['-p', 'state_timeout:=60.0'])):
        procs[module] = processes.start_logged(
            [sys.executable, '-m', f'kron_dynamics.nodes.{module}', *common, *extra], env=env)
    return procs


def run_soak(duration: float, rate: float, bad_fraction: float, seed: int = 1,
             warmup_fraction: float = 0.1, env=None, log=print,
             drain_timeout: float = 120.0, max_backlog: int | None = None) -> SoakResult:
    """
    Run one soak; return its figures (the node processes are stopped at the end).

    ``max_backlog``: hold the stream while more valid inputs than this are unanswered, so
    that the nodes' queues (1000 joint states) never overflow however busy the machine is
    (the rate is then at most ``rate``); None sends at ``rate`` regardless, a load test in
    which a node that falls more than its queue behind drops the oldest states.
    """
    env = dict(os.environ if env is None else env)
    procs = start_nodes(env)
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('soak_driver', context=context)
    executor = make_executor(context)
    executor.add_node(node)
    qos = QoSProfile(depth=1000)
    keep_all = QoSProfile(depth=1000, history=HistoryPolicy.KEEP_ALL)  # the driver loses none
    bias, commands = [], []
    node.create_subscription(Float64MultiArray, '/dynamics_node/bias_torque',
                             lambda m: bias.append((time.monotonic(), m.data)), keep_all)
    node.create_subscription(Float64MultiArray, '/effort_controller/commands',
                             lambda m: commands.append((time.monotonic(), m.data)), keep_all)
    pub = node.create_publisher(JointState, '/joint_states', qos)
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            executor.spin_once(timeout_sec=0.01)
    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    rng = random.Random(seed)
    sent_valid, n_bad = [], 0
    rss = {name: [] for name in procs}
    progress = []      # (t, valid sent, bias outputs, commands) once a second
    try:
        deadline = time.monotonic() + 120
        while (pub.get_subscription_count() < 2
               or node.count_publishers('/dynamics_node/bias_torque') < 1
               or node.count_publishers('/effort_controller/commands') < 1):
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs.values()):
                raise RuntimeError('nodes did not start')
            time.sleep(0.05)
        time.sleep(1.0)
        total = int(duration * rate)
        t0 = time.monotonic()
        next_rss = t0
        warm_end = t0 + warmup_fraction * duration
        warm_rss = None
        paced = 0.0
        for k in range(total):
            target = t0 + k / rate
            now = time.monotonic()
            if target > now:
                time.sleep(target - now)
            if max_backlog is not None:   # flow control: never more queued than that
                t_wait = time.monotonic()
                while (len(sent_valid) - min(len(bias), len(commands)) > max_backlog
                       and time.monotonic() - t_wait < drain_timeout):
                    time.sleep(0.001)
                paced += time.monotonic() - t_wait
            t = k / rate
            q = [0.5 * math.sin(0.3 * t), 0.2 * math.sin(0.5 * t), 0.2 + 0.1 * math.sin(t)]
            stamp = node.get_clock().now().to_msg()
            if rng.random() < bad_fraction:
                pub.publish(bad_message(rng, q, stamp))
                n_bad += 1
            else:
                msg = JointState(name=list(JOINTS), position=q, velocity=[0.1, 0.05, 0.02])
                msg.header.stamp = stamp
                sent_valid.append(time.monotonic())
                pub.publish(msg)
            if time.monotonic() >= next_rss:
                for name, p in procs.items():
                    rss[name].append((time.monotonic() - t0, rss_mb(p.pid)))
                progress.append((time.monotonic() - t0, len(sent_valid), len(bias),
                                 len(commands)))
                next_rss += 1.0
                if warm_rss is None and time.monotonic() >= warm_end:
                    warm_rss = {name: values[-1][1] for name, values in rss.items()}
        # a valid marker last: outputs come in input order, so once the marker's bias torque
        # is in, every output the dynamics node gives for this run is in (no short wait
        # decides that nothing more comes); then wait for the controller's commands
        q = [0.3, -0.2, 0.25]
        marker = JointState(name=list(JOINTS), position=q, velocity=[0.1, 0.05, 0.02])
        marker.header.stamp = node.get_clock().now().to_msg()
        expected = RobotModel.from_urdf_file(URDF).bias_torque(q, marker.velocity)
        sent_valid.append(time.monotonic())
        pub.publish(marker)
        deadline = time.monotonic() + drain_timeout

        def pending():
            marker_in = bool(bias) and np.allclose(bias[-1][1], expected, rtol=1e-9)
            return not marker_in or len(commands) < MIN_COMMAND_SHARE * len(sent_valid)
        while time.monotonic() < deadline and pending():
            time.sleep(0.05)
        for name, p in procs.items():
            rss[name].append((time.monotonic() - t0, rss_mb(p.pid)))
        alive = {name: p.poll() is None for name, p in procs.items()}
    finally:
        stop.set()
        spinner.join(2)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        logs = {}
        for name, p in procs.items():
            logs[name] = processes.stop(p)
    if warm_rss is None:
        warm_rss = {name: values[0][1] for name, values in rss.items()}
    growth = {name: max(v for _, v in values) - warm_rss[name]
              for name, values in rss.items()}
    # outputs carry no id: pair them with inputs by order, which is exact only if none is lost
    latency = (np.array([b[0] - s for b, s in zip(bias, sent_valid)]) * 1e3
               if len(bias) == len(sent_valid) else np.array([]))
    nonfinite = sum(not np.all(np.isfinite(d)) for _, d in bias + commands)
    gaps = {name: max(np.diff([t0] + [t for t, _ in out] + [t0 + duration]), default=0.0)
            for name, out in (('dynamics_node', bias), ('computed_torque_controller', commands))}
    result = SoakResult(
        duration_s=duration, rate_hz=rate, sent=len(sent_valid) + n_bad, valid=len(sent_valid),
        bad=n_bad, bias_outputs=len(bias), commands=len(commands),
        nonfinite_outputs=int(nonfinite),
        latency_median_ms=float(np.median(latency)) if len(latency) else math.nan,
        latency_p99_ms=float(np.percentile(latency, 99)) if len(latency) else math.nan,
        latency_max_ms=float(latency.max()) if len(latency) else math.nan,
        rss_mb={name: round(values[-1][1], 2) for name, values in rss.items()},
        rss_growth_after_warmup_mb={name: round(g, 3) for name, g in growth.items()},
        alive=alive, longest_gap_s={k: round(float(v), 3) for k, v in gaps.items()},
        paced_s=round(paced, 3))
    if not result.ok():
        for name, text in logs.items():
            log(f'--- {name} log (tail):\n{text[-3000:]}')
        log('--- progress (t s, valid sent, bias outputs, commands), every 10 s:')
        for row in progress[::10]:
            log('  %7.1f %8d %8d %8d' % row)
    return result


def main(argv=None) -> int:
    """Run the soak from the command line and write bench/results/soak.json."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--duration', type=float, default=600.0, help='seconds (600)')
    parser.add_argument('--rate', type=float, default=1000.0, help='joint states per s (1000)')
    parser.add_argument('--bad', type=float, default=0.1, help='fraction of bad messages')
    parser.add_argument('--out', default=str(REPO / 'bench' / 'results' / 'soak.json'))
    args = parser.parse_args(argv)
    os.environ.setdefault('ROS_DOMAIN_ID', str(random.randint(1, 200)))
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    result = run_soak(args.duration, args.rate, args.bad)
    for key, value in asdict(result).items():
        print(f'{key:>28}: {value}')
    print('PASS' if result.ok() else 'FAIL')
    out = Path(args.out)
    provenance.write_result(out.parent, out.stem, {}, {
        **asdict(result), 'ok': result.ok(), 'config': {'bad_fraction': args.bad}})
    return 0 if result.ok() else 1


if __name__ == '__main__':
    sys.exit(main())
