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
Fault injection on the running stacker demo graph; the graph must recover by itself.

The faults and how the watchdog and the recovery are judged: docs/reliability.md,
"Faults"::

    .venv/bin/python bench/faults.py [--outage 1.5] [--settle 8] [--plot FILE]

Writes bench/results/faults.json and re-renders docs/ (bench/report.py).
"""

import argparse
from dataclasses import asdict, dataclass
import math
import os
from pathlib import Path
import random
import signal
import subprocess
import sys
import time

import numpy as np
from lib import provenance

from kron_dynamics.demo.run import node_command, plot, Recording, start_recorder
from kron_dynamics.demo.graph import demo_graph
from kron_dynamics import RobotModel

REPO = Path(__file__).resolve().parent.parent


@dataclass
class FaultResult:
    """What happened around one fault."""

    fault: str
    zero_commands_during_outage: int
    nonzero_commands_during_outage: int   # answers to states from before the fault
    zeros_after_last_answer: int          # the watchdog's zero commands
    resumed_after_s: float
    recovered_after_s: float      # then |q - q_d| stayed within the normal bound for hold s
    max_error_last_second: list   # of the hold window
    observed_s: float             # from the end of the outage until recovered (or gave up)

    def ok(self) -> bool:
        """Return True if the graph recovered by itself as the README says."""
        watchdog = (self.zeros_after_last_answer == 1 if self.fault != 'kill_controller'
                    else True)
        return (watchdog and math.isfinite(self.resumed_after_s)
                and math.isfinite(self.recovered_after_s))


def watchdog_zeros(commands) -> int:
    """Return how many zero-effort commands follow the last non-zero one (the last answer)."""
    zeros = 0
    for _, tau in reversed(commands):
        if np.any(tau):
            break
        zeros += 1
    return zeros


def recovery(recording, t_back, bound, hold):
    """
    Return (start of the first hold-s stretch after t_back with every error within bound,
    max error per joint in it), or (None, None) if there is none yet.
    """
    t, q, q_d = recording.tracking()
    keep = t >= t_back
    t, err = t[keep], np.abs(q - q_d)[keep]
    bad = np.any(err > bound, axis=1)
    start = 0       # first sample of the current stretch within the bound
    for k in range(len(t)):
        if bad[k]:
            start = k + 1
        elif t[k] - t[start] >= hold:
            return float(t[start]), err[start:k + 1].max(axis=0)
    return None, None


class Graph:
    """The stacker demo graph as processes that can be paused, killed and restarted."""

    def __init__(self, env):
        self.graph = demo_graph('stacker', str(REPO))
        self.specs = {s.name: s for s in self.graph.nodes}
        self.env = env
        self.procs = {}

    def start(self, name):
        """Start (or restart) one node."""
        self.procs[name] = subprocess.Popen(node_command(self.specs[name], self.graph),
                                            env=self.env, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL)

    def signal(self, name, signum):
        """Send a signal to one node."""
        self.procs[name].send_signal(signum)

    def alive(self) -> dict:
        """Return which nodes are running."""
        return {name: p.poll() is None for name, p in self.procs.items()}

    def stop(self):
        """Stop every node."""
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for p in self.procs.values():
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()


def wait_until(condition, timeout):
    """Poll condition until true or timeout; return the elapsed time (inf on timeout)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if condition():
            return time.monotonic() - t0
        time.sleep(0.02)
    return float('inf')


def run_faults(outage: float = 1.5, settle: float = 8.0, max_wait: float = 120.0,
               hold: float = 2.0, env=None, plot_file=None) -> list:
    """Run the three faults; return a FaultResult for each (and plot the run if asked)."""
    env = dict(os.environ if env is None else env)
    model = RobotModel.from_urdf_file(REPO / 'urdf' / 'stacker.urdf')
    recording = Recording(list(model.joint_names))
    stop_recorder = start_recorder(recording)
    graph = Graph(env)
    for name in graph.specs:
        graph.start(name)
    results = []
    try:
        assert wait_until(lambda: len(recording.commands) > 0, 180) < 180, 'graph did not start'
        time.sleep(settle)
        # the normal tracking bound: the dead-time bound of test_closed_loop.py (50 ms)
        qd_max = np.abs(np.array([r[2] for r in recording.references])).max(axis=0)
        bound = np.maximum(qd_max * 0.05, 1e-3)

        def now():
            return time.monotonic() - recording.start

        def last_is_zero():
            return bool(recording.commands) and not np.any(recording.commands[-1][1])

        for fault in ('pause_states', 'kill_simulator', 'kill_controller'):
            n0 = len(recording.commands)
            t_fault = time.monotonic()
            if fault == 'pause_states':
                graph.signal('plant_simulator', signal.SIGSTOP)
            elif fault == 'kill_simulator':
                graph.signal('plant_simulator', signal.SIGKILL)
            else:
                graph.signal('computed_torque_controller', signal.SIGKILL)
            time.sleep(outage)
            if fault != 'kill_controller':   # until the watchdog's zero has arrived
                wait_until(last_is_zero, max(0.0, max_wait - (time.monotonic() - t_fault)))
            during = recording.commands[n0:]
            if fault == 'pause_states':
                graph.signal('plant_simulator', signal.SIGCONT)
            elif fault == 'kill_simulator':
                graph.start('plant_simulator')
            else:
                graph.start('computed_torque_controller')
            t_back = now()
            n1 = len(recording.commands)
            resumed = wait_until(lambda: len(recording.commands) > n1 + 10, max_wait)
            found = []

            def recovered():
                found[:] = recovery(recording, t_back, bound, hold)
                return found[0] is not None
            wait_until(recovered, max_wait)
            observed = now() - t_back
            t_ok, err = found if found and found[0] is not None else (math.inf, [math.inf] * 3)
            zero = sum(1 for _, tau in during if not np.any(tau))
            results.append(FaultResult(fault, zero, len(during) - zero, watchdog_zeros(during),
                                       round(resumed, 3), round(t_ok - t_back, 3),
                                       [float(e) for e in err], round(observed, 3)))
    finally:
        graph.stop()
        stop_recorder()
    if plot_file:
        plot(recording, plot_file, 'stacker demo under faults: ' + ', '.join(
            f'{r.fault}' for r in results))
    return results


def main(argv=None) -> int:
    """Run the faults and print and save the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--outage', type=float, default=1.5, help='seconds of each outage')
    parser.add_argument('--settle', type=float, default=8.0, help='seconds before the faults')
    parser.add_argument('--max-wait', type=float, default=120.0,
                        help='longest wait for the watchdog and for recovery [s]')
    parser.add_argument('--hold', type=float, default=2.0,
                        help='recovered: tracking within the normal bound for this long [s]')
    parser.add_argument('--out', default=str(REPO / 'bench' / 'results' / 'faults.json'))
    parser.add_argument('--plot', default=None, help='PNG of the whole run')
    args = parser.parse_args(argv)
    os.environ.setdefault('ROS_DOMAIN_ID', str(random.randint(1, 200)))
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    results = run_faults(args.outage, args.settle, args.max_wait, args.hold,
                         plot_file=args.plot)
    for r in results:
        print(asdict(r), 'PASS' if r.ok() else 'FAIL')
    ok = all(r.ok() for r in results)
    out = Path(args.out)
    provenance.write_result(out.parent, out.stem, {}, {
        'faults': [{**asdict(r), 'ok': r.ok()} for r in results], 'ok': ok,
        'config': {'outage_s': args.outage, 'settle_s': args.settle,
                   'max_wait_s': args.max_wait, 'hold_s': args.hold, 'plot': args.plot}})
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
