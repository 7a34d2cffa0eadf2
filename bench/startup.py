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
Start-up benchmark: from starting a dynamics_node process to its first bias torque.

How it measures (cold and warm compile caches, the echo node's floor, the targets):
docs/performance.md, "Start-up"::

    .venv/bin/python bench/startup.py --repeats 5    # writes bench/results/startup.json
"""

import argparse
import os
from pathlib import Path
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from lib import provenance
from lib.ros_bench import (add_common_arguments, cpu_seconds, node_command, node_env,
                           OUTPUT_TOPIC, PARAMS, prepare, REPO, Trajectory)
import numpy as np
import rclpy
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from kron_dynamics import RobotModel
from kron_dynamics.demo.processes import end
from kron_dynamics.nodes.executor import make_executor

TARGETS_S = {'warm': 3.0, 'cold': 20.0}
READY_LINE = re.compile(r'\[(\d+\.\d+)\] \[(dynamics_node\]: model |echo_node\]: ready)')


def cache_files_since(directory, since: float) -> int:
    """Return how many files under a directory were written at or after time.time() since."""
    if directory is None:
        return 0
    return sum(1 for root, _, files in os.walk(directory) for name in files
               if os.stat(os.path.join(root, name)).st_mtime >= since)


class Driver:
    """Publish joint states at a fixed rate and note when the first output of a run arrives."""

    def __init__(self, names: list, rate: float):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('startup_driver', context=self.context)
        self.executor = make_executor(self.context)
        self.executor.add_node(self.node)
        self._pub = self.node.create_publisher(JointState, '/joint_states',
                                               QoSProfile(depth=1000))
        self._lock = threading.Lock()
        self._armed = None
        self.first = None
        for key, topic in OUTPUT_TOPIC.items():
            self.node.create_subscription(Float64MultiArray, topic,
                                          lambda _, key=key: self._on_output(key), 10)
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._spin, daemon=True),
                         threading.Thread(target=self._publish, args=(names, rate),
                                          daemon=True)]
        for thread in self._threads:
            thread.start()

    def _on_output(self, key: str) -> None:
        now = time.monotonic()
        with self._lock:
            if self._armed == key and self.first is None:
                self.first = now

    def _spin(self) -> None:
        while not self._stop.is_set():
            self.executor.spin_once(timeout_sec=0.05)

    def _publish(self, names: list, rate: float) -> None:
        traj = Trajectory(len(names), rate)
        t0 = time.monotonic()
        k = 0
        while not self._stop.is_set():
            delay = t0 + k / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            q, qd = traj.state(k)
            msg = JointState(name=names, position=q, velocity=qd)
            msg.header.stamp = self.node.get_clock().now().to_msg()
            self._pub.publish(msg)
            k += 1

    def arm(self, key) -> None:
        """Wait for the first output of node key (None: ignore all outputs)."""
        with self._lock:
            self._armed, self.first = key, None

    def close(self) -> None:
        """Stop publishing and spinning; shut the context down."""
        self._stop.set()
        for thread in self._threads:
            thread.join(5.0)
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


def one_run(driver: Driver, key: str, urdf: Path, cache_dir, timeout: float,
            src=None) -> dict:
    """Start one node process; return the seconds until it is ready and its first output."""
    env = node_env(src)
    if cache_dir is not None:
        env['NUMBA_CACHE_DIR'] = str(cache_dir)
    lines = []
    time.sleep(0.5)   # the previous process's DDS participant is gone by now
    driver.arm(key)
    cache_since = time.time()
    time.sleep(0.02)   # file times have a granularity; no write of this run predates them
    t_start, real_start = time.monotonic(), time.time()
    proc = subprocess.Popen(node_command(key, urdf), cwd=src or REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def read():
        for line in proc.stdout:
            lines.append((time.monotonic(), line))
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = t_start + timeout
    while driver.first is None and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    first = driver.first
    try:
        cpu = cpu_seconds(proc.pid)   # CPU time until the first output: load-independent
    except (OSError, IndexError):
        cpu = None
    exited = proc.poll()
    end(proc)   # SIGINT, then SIGKILL after 10 s; bounded (see wait_at_most)
    reader.join(5.0)
    driver.arm(None)
    ready = None
    for _, line in lines:
        found = READY_LINE.search(line)
        if found:
            ready = float(found.group(1)) - real_start
            break
    result = {'first_output_s': None if first is None else first - t_start,
              'ready_s': ready, 'cpu_s': cpu if first is not None else None,
              'loadavg_1min': os.getloadavg()[0],
              'cache_files_written': cache_files_since(cache_dir, cache_since)}
    if first is None:
        result['error'] = (f'no output within {timeout:g} s' if exited is None
                           else f'exited with {exited} before any output')
        result['log_tail'] = ''.join(line for _, line in lines)[-2000:]
    return result


def summary(runs: list) -> dict:
    """Return min, median and max of the first-output and ready times of runs."""
    first = [r['first_output_s'] for r in runs if r['first_output_s'] is not None]
    ready = [r['ready_s'] for r in runs if r['ready_s'] is not None]
    cpu = [r['cpu_s'] for r in runs if r['cpu_s'] is not None]

    def figures(values):
        if not values:
            return {'min': None, 'median': None, 'max': None}
        return {'min': min(values), 'median': float(np.median(values)), 'max': max(values)}
    return {'runs': len(runs), 'failed': len(runs) - len(first),
            'first_output_s': figures(first), 'ready_s': figures(ready),
            'cpu_s': figures(cpu), 'loadavg_1min': [r['loadavg_1min'] for r in runs],
            'cache_files_written': [r['cache_files_written'] for r in runs]}


def main(argv=None) -> int:
    """Run the benchmark and write bench/results/startup.json (docs/performance.md)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--repeats', type=int, default=5, help='runs per case (5)')
    parser.add_argument('--rate', type=float, default=1000.0,
                        help='joint states per s while the node starts (1000)')
    parser.add_argument('--timeout', type=float, default=180.0, help='s per run (180)')
    parser.add_argument('--no-floor', action='store_true', help='skip the echo_node runs')
    add_common_arguments(parser, 'startup.json')
    args = parser.parse_args(argv)
    urdf, label, src, sources = prepare(args, 'startup_src')
    names = list(RobotModel.from_urdf_file(urdf).joint_names)
    tmp = Path(tempfile.mkdtemp(prefix='startup_bench_'))
    warm_dir = tmp / 'warm'
    warm_dir.mkdir()
    runs = {'warm': [], 'cold': [], 'echo_node (floor)': []}
    load_before = os.getloadavg()
    driver = Driver(names, args.rate)
    try:
        fill = one_run(driver, 'dynamics', urdf, warm_dir, args.timeout, src)
        print(f"filled the warm cache: {fill['first_output_s']} s, "
              f"{fill['cache_files_written']} files")
        for i in range(args.repeats):
            cold_dir = tmp / f'cold{i}'
            cold_dir.mkdir()
            runs['cold'].append(one_run(driver, 'dynamics', urdf, cold_dir, args.timeout, src))
            shutil.rmtree(cold_dir, ignore_errors=True)
            runs['warm'].append(one_run(driver, 'dynamics', urdf, warm_dir, args.timeout, src))
            if not args.no_floor:
                runs['echo_node (floor)'].append(one_run(driver, 'echo', urdf, None,
                                                         args.timeout, src))
            print(f'run {i + 1}/{args.repeats}: ' + ', '.join(
                f"{name} {r[-1]['first_output_s']}" for name, r in runs.items() if r))
    finally:
        driver.close()
        shutil.rmtree(tmp, ignore_errors=True)
    cases = {}
    for name, case_runs in runs.items():
        if not case_runs:
            continue
        s = summary(case_runs)
        case = {'summary': s, 'runs': case_runs}
        if name in TARGETS_S:
            case['target_s'] = TARGETS_S[name]
            median = s['first_output_s']['median']
            case['met'] = bool(s['failed'] == 0 and median is not None
                               and median <= TARGETS_S[name])
        cases[name] = case
    ok = all(case.get('met', True) for case in cases.values())
    for name, case in cases.items():
        f = case['summary']['first_output_s']
        print(f"{name}: first output median {f['median']} s (min {f['min']}, max {f['max']})"
              + (f", target <= {case['target_s']:g} s met: {case['met']}" if 'met' in case
                 else ''))
    stale = [r for r in runs['warm'] if r['cache_files_written']]
    if stale:
        print(f'\nWARNING: {len(stale)} warm run(s) wrote cache files, i.e. compiled again '
              '(did the kron_dynamics sources change during the benchmark?)')
    for name, case_runs in runs.items():
        for r in case_runs:
            if 'error' in r:
                print(f"\n{name}: {r['error']}\n{r['log_tail']}")
    result = {'cases': cases, 'ok': ok, 'warm_cache_fill': fill,
              'config': {'model': label, 'urdf': str(urdf), 'repeats': args.repeats,
                         'rate_hz': args.rate, 'params_file': str(PARAMS.relative_to(REPO)),
                         'measured': 'process creation to first ~/bias_torque received',
                         'target_on': 'median'}}
    print(f'\n{"PASS" if ok else "FAIL"}')
    out = Path(args.out)
    provenance.write_result(out.parent, out.stem, {
        'sources_sha256': sources, 'loadavg_before': load_before,
        'loadavg_after': os.getloadavg()}, result)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
