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
Run a demo graph (separate processes, as the launch file would) and report tracking.

Used by ``kron-dynamics demo``; :func:`run_demo` returns the recorded data for tests.
"""

from dataclasses import dataclass, field
import os
import sys
import threading
import time

import numpy as np

from ..robot_model import RobotModel
from .graph import COMMAND_TOPIC, demo_graph, REFERENCE_TOPIC
from .processes import interrupt, start_logged, stop

SETTLE_S = 1.0   # statistics exclude the first second after the first command


@dataclass
class Recording:
    """What the recorder saw: receive times [s] and values."""

    joint_names: list
    states: list = field(default_factory=list)       # (t, q, qd)
    references: list = field(default_factory=list)   # (t, q_d, qd_d, qdd_d)
    commands: list = field(default_factory=list)     # (t, tau)
    feedforward: list = field(default_factory=list)  # (t, tau_ff)
    bias: list = field(default_factory=list)         # (t, bias)
    # publish-side times, for pairing that a late recorder cannot distort: per state its
    # header stamp [s, system clock] and the effort the simulator applied; per reference
    # its time_from_start [s] and the system time it was received
    state_stamps: list = field(default_factory=list)      # (stamp, effort)
    reference_times: list = field(default_factory=list)   # (time_from_start, received)
    exit_codes: dict = field(default_factory=dict)
    logs: dict = field(default_factory=dict)
    start: float = field(default_factory=time.monotonic)   # the zero of the times above

    def tracking(self):
        """Return (t, q, q_d): each state paired with the latest reference before it."""
        ts, qs, qds = [], [], []
        refs = self.references
        k = -1
        for t, q, _ in self.states:
            while k + 1 < len(refs) and refs[k + 1][0] <= t:
                k += 1
            if k >= 0:
                ts.append(t)
                qs.append(q)
                qds.append(refs[k][1])
        return np.array(ts), np.array(qs), np.array(qds)

    def statistics(self, settle: float = SETTLE_S):
        """Per joint: RMS and max |q - q_d| after ``settle`` s, and max |tau|."""
        t, q, q_d = self.tracking()
        if not len(t) or not self.commands:
            raise RuntimeError('no tracking data recorded')
        t0 = self.commands[0][0]
        keep = t >= t0 + settle
        err = np.abs(q[keep] - q_d[keep])
        tau = np.array([c[1] for c in self.commands])
        return {'rms_error': np.sqrt(np.mean(err ** 2, axis=0)), 'max_error': err.max(axis=0),
                'max_torque': np.abs(tau).max(axis=0), 'samples': int(keep.sum())}


def node_command(spec, graph) -> list:
    """Return the command line that runs one node of a graph (as its launch file would)."""
    cmd = [sys.executable, '-m', f'kron_dynamics.nodes.{spec.executable}', '--ros-args',
           '-r', f'__node:={spec.name}', '--params-file', graph.params_file,
           '-p', f'urdf_file:={graph.urdf_file}']
    for src, dst in spec.remappings:
        cmd += ['-r', f'{src}:={dst}']
    return cmd


def start_recorder(recording: Recording):
    """Start recording in a background thread; return a function that stops it."""
    stop, ready = threading.Event(), threading.Event()
    thread = threading.Thread(target=_recorder, args=(recording, stop, ready), daemon=True)
    thread.start()
    ready.wait(10.0)

    def finish():
        stop.set()
        thread.join(5.0)
    return finish


def _recorder(recording: Recording, stop: threading.Event, ready: threading.Event):
    import rclpy
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    from trajectory_msgs.msg import JointTrajectoryPoint

    from ..nodes.executor import make_executor
    from ..nodes.joint_states import JointStateIndex

    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('kron_dynamics_demo_recorder', context=context)
    index = JointStateIndex(recording.joint_names)

    def now():
        return time.monotonic() - recording.start

    def on_state(msg):
        q, qd = index.from_joint_state(msg)
        recording.states.append((now(), q, qd))
        stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        recording.state_stamps.append((stamp, np.array(msg.effort)))

    def on_reference(msg):
        recording.references.append((now(), np.array(msg.positions), np.array(msg.velocities),
                                     np.array(msg.accelerations)))
        t = msg.time_from_start.sec + 1e-9 * msg.time_from_start.nanosec
        recording.reference_times.append((t, time.time()))

    def on_array(target):
        return lambda msg: target.append((now(), np.array(msg.data)))

    depth = 1000   # 4 s of each stream: a recorder starved by a busy machine loses nothing
    node.create_subscription(JointState, '/joint_states', on_state, depth)
    node.create_subscription(JointTrajectoryPoint, REFERENCE_TOPIC, on_reference, depth)
    node.create_subscription(Float64MultiArray, COMMAND_TOPIC, on_array(recording.commands),
                             depth)
    node.create_subscription(Float64MultiArray, '/dynamics_node/feedforward_torque',
                             on_array(recording.feedforward), depth)
    node.create_subscription(Float64MultiArray, '/dynamics_node/bias_torque',
                             on_array(recording.bias), depth)
    executor = make_executor(context)
    executor.add_node(node)
    ready.set()
    try:
        while not stop.is_set():
            executor.spin_once(timeout_sec=0.05)
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)


def run_demo(machine: str, duration: float, share_dir: str, env=None,
             startup_timeout: float = 180.0, min_commands: int = 0) -> Recording:
    """
    Start the demo graph's nodes as processes, record for ``duration`` s, stop them.

    Recording time starts at the first torque command (the simulator holds the plant until
    then); start-up may take up to ``startup_timeout`` s (cold compile caches). With
    ``min_commands``, recording goes on past ``duration`` until that many commands are in
    (for at most ``startup_timeout`` s more: a busy machine runs the loop slower).
    """
    graph = demo_graph(machine, share_dir)
    model = RobotModel.from_urdf_file(graph.urdf_file)
    recording = Recording(list(model.joint_names))
    stop_recorder = start_recorder(recording)
    processes = {}
    env = dict(os.environ if env is None else env)
    for spec in graph.nodes:
        processes[spec.name] = start_logged(node_command(spec, graph), env=env)
    try:
        deadline = time.monotonic() + startup_timeout
        while not recording.commands:
            dead = {name: p.poll() for name, p in processes.items() if p.poll() is not None}
            if dead or time.monotonic() > deadline:
                raise RuntimeError(f'demo did not start (exited: {dead or "none"}); '
                                   'see the node logs')
            time.sleep(0.05)
        t_end = time.monotonic() + duration
        while (time.monotonic() < t_end or (len(recording.commands) < min_commands
                                            and time.monotonic() < t_end + startup_timeout)):
            if any(p.poll() is not None for p in processes.values()):
                break
            time.sleep(0.05)
    finally:
        for p in processes.values():
            interrupt(p)
        for name, p in processes.items():
            recording.logs[name] = stop(p)
            recording.exit_codes[name] = p.returncode
        stop_recorder()
    return recording


def plot(recording: Recording, path: str, title: str) -> None:
    """Plot q and q_d (left) and tau (right) of every joint against time."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    t, q, q_d = recording.tracking()
    tc = np.array([c[0] for c in recording.commands])
    tau = np.array([c[1] for c in recording.commands])
    t0 = tc[0]
    n = len(recording.joint_names)
    fig, axes = plt.subplots(n, 2, figsize=(11, 2.2 * n), sharex=True, squeeze=False)
    for i, name in enumerate(recording.joint_names):
        axes[i, 0].plot(t - t0, q_d[:, i], 'k--', lw=1, label='q_d')
        axes[i, 0].plot(t - t0, q[:, i], 'C0', lw=1, label='q')
        axes[i, 0].set_ylabel(name)
        axes[i, 1].plot(tc - t0, tau[:, i], 'C3', lw=1)
        axes[i, 1].set_ylabel('tau')
    axes[0, 0].legend(loc='upper right')
    axes[-1, 0].set_xlabel('t [s]')
    axes[-1, 1].set_xlabel('t [s]')
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def report(recording: Recording, model: RobotModel) -> str:
    """Return a table of the tracking statistics."""
    stats = recording.statistics()
    lines = [f"{'joint':<14}{'type':<11}{'RMS error':>13}{'max error':>14}{'max |tau|':>14}"]
    for i, name in enumerate(recording.joint_names):
        kind = model.joints[name].type
        unit, tunit = ('m', 'N') if kind == 'prismatic' else ('rad', 'N m')
        lines.append(f"{name:<14}{kind:<11}{stats['rms_error'][i]:>9.3g} {unit:<3} "
                     f"{stats['max_error'][i]:>9.3g} {unit:<3} "
                     f"{stats['max_torque'][i]:>10.4g} {tunit}")
    lines.append(f"({stats['samples']} joint states after the first {SETTLE_S:g} s; "
                 f'{len(recording.commands)} commands, {len(recording.bias)} bias torques, '
                 f'{len(recording.feedforward)} feedforward torques)')
    return '\n'.join(lines)
