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
import logging
import os
import sys
import threading
import time

import numpy as np

from ..robot_model import RobotModel
from .graph import (COMMAND_TOPIC, demo_graph, node_parameters, REFERENCE_TOPIC,
                    STAMPED_REFERENCE_TOPIC)
from .processes import interrupt, start_logged, stop

SETTLE_S = 1.0   # statistics exclude the first second of the closed loop


@dataclass
class Recording:
    """What the recorder saw: receive times [s] and values."""

    joint_names: list
    joint_types: tuple = ()                          # URDF type per joint (units of plots)
    controller_model: RobotModel | None = None       # the controller's (armature included)
    states: list = field(default_factory=list)       # (t, q, qd)
    references: list = field(default_factory=list)   # (t, q_d, qd_d, qdd_d)
    commands: list = field(default_factory=list)     # (t, tau)
    feedforward: list = field(default_factory=list)  # (t, tau_ff)
    bias: list = field(default_factory=list)         # (t, bias)
    # publish-side times, for pairing that a late recorder cannot distort: per state its
    # header stamp [s, system clock] and the effort the simulator applied; per reference
    # its time_from_start [s]
    state_stamps: list = field(default_factory=list)      # (stamp, effort)
    reference_times: list = field(default_factory=list)   # time_from_start
    # the header stamp [s, system clock] of the latest stamped reference (reference_trajectory)
    # of the moving trajectory: the instant its t = 0 (the generator's clock start)
    reference_stamp: float | None = None
    exit_codes: dict = field(default_factory=dict)
    logs: dict = field(default_factory=dict)
    start: float = field(default_factory=time.monotonic)   # the zero of the times above

    def loop_closed(self):
        """
        Return the index of the first state with an applied effort (the loop is closed), or None.

        The simulator holds the plant until it hears a command, and it can discover the
        controller seconds after the recorder and the reference generator do (1.9 s seen):
        the tracking transient starts here, not at the first command recorded.
        """
        return next((k for k, (_, effort) in enumerate(self.state_stamps)
                     if np.any(effort != 0)), None)

    def reference_start(self) -> float:
        """Return the instant [s, system clock] of the trajectory's t = 0; RuntimeError if none."""
        if self.reference_stamp is None:
            raise RuntimeError('no stamped reference of a moving trajectory was recorded')
        return self.reference_stamp

    def settle_start(self) -> float:
        """Return the time (recorder clock) at which the loop is closed and the reference moves."""
        k = self.loop_closed()
        first_command = self.commands[0][0]
        return first_command if k is None else max(first_command, self.states[k][0])

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

    def torque_split(self):
        """
        Return (t, tau, tau_ff, tau_fb): each command split into the model's part and feedback.

        tau_ff is the feedforward of the reference that was the latest when the command went
        out: the inverse dynamics at q_d, q'_d, q''_d with the controller's model (URDF and
        armature; what dynamics_node's ``~/feedforward_torque`` gives, with the same armature).
        tau_fb = tau - tau_ff is what the error correction adds.
        """
        refs = self.references
        ts, taus, ffs = [], [], []
        k, cached = -1, {}
        for t, tau in self.commands:
            while k + 1 < len(refs) and refs[k + 1][0] <= t:
                k += 1
            if k >= 0:
                if k not in cached:
                    _, q_d, qd_d, qdd_d = refs[k]
                    cached = {k: self.controller_model.inverse_dynamics(q_d, qd_d, qdd_d)}
                ts.append(t)
                taus.append(tau)
                ffs.append(cached[k])
        t, tau, tau_ff = np.array(ts), np.array(taus), np.array(ffs)
        return t, tau, tau_ff, tau - tau_ff

    def judged(self, settle: float = SETTLE_S) -> int:
        """
        Return how many of the last 1000 states the statistics judge.

        Those ``settle`` s after the loop closed that have a reference before them (the
        recorder can discover the reference generator after the plant and the controller).
        """
        if not self.commands or not self.states or not self.references:
            return 0
        start = max(self.settle_start() + settle, self.references[0][0])
        return sum(1 for t, _, _ in self.states[-1000:] if t >= start)

    def statistics(self, settle: float = SETTLE_S):
        """Per joint: RMS and max |q - q_d| after ``settle`` s, and max |tau|."""
        t, q, q_d = self.tracking()
        if not len(t) or not self.commands:
            raise RuntimeError('no tracking data recorded')
        keep = t >= self.settle_start() + settle
        if not keep.any():
            raise RuntimeError(f'no joint state recorded {settle:g} s after the loop closed '
                               f'({len(t)} states in all): the machine too busy?')
        err = np.abs(q[keep] - q_d[keep])
        tau = np.array([c[1] for c in self.commands])
        return {'rms_error': np.sqrt(np.mean(err ** 2, axis=0)), 'max_error': err.max(axis=0),
                'max_torque': np.abs(tau).max(axis=0), 'samples': int(keep.sum())}


def node_command(spec, graph) -> list:
    """Return the command line that runs one node of a graph (as its launch file would)."""
    cmd = [sys.executable, '-m', 'kron_dynamics.nodes', spec.executable, '--ros-args',
           '-r', f'__node:={spec.name}', '--params-file', graph.params_file,
           '-p', f'urdf_file:={graph.urdf_for(spec.name)}']
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
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

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
        recording.reference_times.append(t)

    def on_stamped_reference(msg):
        point = msg.points[0]
        if point.time_from_start.sec or point.time_from_start.nanosec:
            recording.reference_stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec

    def on_array(target):
        return lambda msg: target.append((now(), np.array(msg.data)))

    depth = 1000   # 4 s of each stream: a recorder starved by a busy machine loses nothing
    node.create_subscription(JointState, '/joint_states', on_state, depth)
    node.create_subscription(JointTrajectoryPoint, REFERENCE_TOPIC, on_reference, depth)
    node.create_subscription(JointTrajectory, STAMPED_REFERENCE_TOPIC, on_stamped_reference,
                             depth)
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


def load_machine(path) -> tuple:
    """
    Load a bundled machine; return (model, note): note says in one line why M is singular.

    The papers' machines keep the papers' parameters (the comparisons with the papers'
    values depend on them), and the rover arm's (003) give links with no inertia about
    their joint axes at q = 0, which the loader warns about, joint by joint, as it would for
    any URDF. For the package's own machine the demo says it once instead, with what the
    nodes do about it (armature); every other loader message is passed on as it is.
    """
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)

    logger = logging.getLogger('kron_dynamics')
    keep, propagate = Keep(), logger.propagate
    logger.addHandler(keep)
    logger.propagate = False
    try:
        model = RobotModel.from_urdf_file(path)
    finally:
        logger.removeHandler(keep)
        logger.propagate = propagate
    joints = []
    for record in records:
        text = record.getMessage()
        if 'tiny inertia' in text or 'moves no mass' in text:
            joints.append(str(record.args[1]))
        else:
            logger.handle(record)
    if not joints:
        return model, ''
    return model, (f"{model.name}: M is singular at q = 0 (joints {', '.join(joints)} move no "
                   "inertia about their axes there, as the paper's parameters give); the "
                   'simulator, the controller and the dynamics node add armature on every '
                   "joint (the demo's params file), which makes forward dynamics defined")


def run_demo(machine: str, duration: float, share_dir: str, env=None,
             startup_timeout: float = 180.0, min_commands: int = 0,
             model: RobotModel | None = None) -> Recording:
    """
    Start the demo graph's nodes as processes, record for ``duration`` s, stop them.

    Recording time starts at the first torque command (the simulator holds the plant until
    then); start-up may take up to ``startup_timeout`` s (cold compile caches). With
    ``min_commands``, recording goes on past ``duration`` until that many commands are in
    (for at most ``startup_timeout`` s more: a busy machine runs the loop slower).
    """
    graph = demo_graph(machine, share_dir)
    if model is None:
        model, _ = load_machine(graph.urdf_file)
    return run_graph(graph, duration, model, env, startup_timeout, min_commands)


def run_graph(graph, duration: float, model: RobotModel, env=None,
              startup_timeout: float = 180.0, min_commands: int = 0,
              until=None) -> Recording:
    """
    Run a graph's nodes as :func:`run_demo` does; ``model`` is the controller's URDF.

    ``until``: a function of the recording; recording goes on past ``duration`` until it
    returns True (for at most ``startup_timeout`` s more), as for ``min_commands``.
    """
    if not 0.0 < float(duration) < float('inf'):
        raise ValueError(f'duration must be a finite number of seconds > 0, got {duration}')
    armature = node_parameters(graph, 'computed_torque_controller').get('armature', [0.0])
    armature = np.broadcast_to(np.asarray(armature, dtype=float), (model.n,))
    recording = Recording(list(model.joint_names),
                          tuple(model.joints[j].type for j in model.joint_names),
                          model.with_armature(armature))
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
        # past duration while too few commands are in, or while no state is judged yet (on a
        # busy machine the loop can close seconds after the first command), or until says so
        while (time.monotonic() < t_end
               or ((len(recording.commands) < min_commands or not recording.judged()
                    or (until is not None and not until(recording)))
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


def units(joint_type: str) -> tuple:
    """Return (position unit, scale to it from SI, torque unit) of a joint type for plots."""
    return ('mm', 1e3, 'N') if joint_type == 'prismatic' else ('mrad', 1e3, 'N m')


def plot(recording: Recording, path: str, title: str) -> list:
    """
    Plot per joint the tracking error (left) and the torque split (right) against time.

    Left: e = q_d - q in mm or mrad, with its RMS after the first second. Right: the
    command tau [N or N m], the model's feedforward tau_ff along the reference and the
    feedback tau - tau_ff: does it track, and what does the model contribute. Returns the
    labels of the axes, the titles (the RMS) and the legend: what a reader of the plot sees.
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    t, q, q_d = recording.tracking()
    tc, tau, tau_ff, tau_fb = recording.torque_split()
    t0 = recording.settle_start()
    after = t >= t0       # before it the simulator holds the plant
    t, q, q_d = t[after], q[after], q_d[after]
    n = len(recording.joint_names)
    types = recording.joint_types or ('revolute',) * n
    fig, axes = plt.subplots(n, 2, figsize=(12, 2.4 * n), sharex=True, squeeze=False)
    for i, name in enumerate(recording.joint_names):
        unit, scale, torque_unit = units(types[i])
        err = (q_d[:, i] - q[:, i]) * scale
        settled = t >= t0 + SETTLE_S
        rms = float(np.sqrt(np.mean(err[settled] ** 2))) if settled.any() else float('nan')
        ax = axes[i, 0]
        ax.plot(t - t0, err, 'C0', lw=1)
        ax.axhline(0.0, color='k', lw=0.5)
        ax.set_ylabel(f'{name}\ne = q_d - q [{unit}]')
        ax.set_title(f'tracking error, RMS after {SETTLE_S:g} s: {rms:.3g} {unit}',
                     fontsize=9, loc='left')
        ax = axes[i, 1]
        ax.plot(tc - t0, tau[:, i], 'k', lw=1.6, label='command tau')
        ax.plot(tc - t0, tau_ff[:, i], 'C2--', lw=1, label='feedforward: model at q_d')
        ax.plot(tc - t0, tau_fb[:, i], 'C3', lw=1, label='feedback = tau - feedforward')
        ax.set_ylabel(f'torque [{torque_unit}]')
    axes[0, 1].legend(loc='upper right', fontsize=8)
    axes[-1, 0].set_xlabel('t since the first command [s]')
    axes[-1, 1].set_xlabel('t since the first command [s]')
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    labels = [ax.get_ylabel() for ax in axes.ravel()] + [
        ax.get_title('left') for ax in axes[:, 0]] + [
        text.get_text() for text in axes[0, 1].get_legend().get_texts()]
    plt.close(fig)
    return labels


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
