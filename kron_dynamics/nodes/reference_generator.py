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
reference_generator: a desired trajectory with consistent q, qd, qdd.

``mode: sine``: q_i = offset_i + r(t) amplitude_i sin(2 pi frequency_i t + phase_i), with
r(t) a quintic ramp from 0 to 1 over ``ramp_time`` s so that the motion starts at rest.
``mode: quintic``: quintic moves (zero velocity and acceleration at both ends) through
``waypoints`` (row-major, one row of n positions per waypoint) with ``segment_durations``,
holding the last waypoint (or looping back to the first with ``loop: true``).
``mode: excitation``: the Fourier excitation of ``excitation_file`` (written by
``kron-dynamics excite``), by joint name, rest to rest; repeated with ``loop: true``, else
held at its end (where it started).
Publishes trajectory_msgs/JointTrajectoryPoint on ``reference`` at ``rate``, and the same
point as a one-point trajectory_msgs/JointTrajectory on ``reference_trajectory`` (by joint
name; header.stamp: the instant the clock started, on the node clock; time_from_start: t), the
form a controller times exactly, where an unstamped point can only be timed by its arrival.
With ``wait_for_commands`` the clock starts at the first effort command on ``command_topic`` (the
loop is closed); until then the t = 0 point is published.
"""

import sys
import time

from builtin_interfaces.msg import Duration, Time
import numpy as np
from rclpy.parameter import Parameter
from std_msgs.msg import Float64MultiArray, Header
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..errors import ConfigurationError
from ..identification.excitation import FourierTrajectory
from .executor import DeferringNode, run_node
from .parameters import declare, per_joint
from . import realtime

PLANNED = ('the trajectory is planned at start-up; changing it while it runs would step the '
           'reference')
AT_START = 'set at start-up'


def sine(t, offset, amplitude, frequency, phase, ramp_time=0.0):
    """Return (q, qd, qdd) of per-joint sinusoids at time t, faded in over ramp_time."""
    w = 2.0 * np.pi * frequency
    s, c = np.sin(w * t + phase), np.cos(w * t + phase)
    S, dS, ddS = amplitude * s, amplitude * w * c, -amplitude * w * w * s
    if ramp_time > 0 and t < ramp_time:
        r, dr, ddr = quintic(t, 0.0, 1.0, ramp_time)
    else:
        r, dr, ddr = 1.0, 0.0, 0.0
    return offset + r * S, dr * S + r * dS, ddr * S + 2 * dr * dS + r * ddS


def quintic(t, q0, q1, duration):
    """Return (q, qd, qdd) of a rest-to-rest quintic from q0 to q1 at time t in [0, T]."""
    tau = min(max(t / duration, 0.0), 1.0)
    s = 10 * tau ** 3 - 15 * tau ** 4 + 6 * tau ** 5
    ds = (30 * tau ** 2 - 60 * tau ** 3 + 30 * tau ** 4) / duration
    dds = (60 * tau - 180 * tau ** 2 + 120 * tau ** 3) / duration ** 2
    d = q1 - q0
    return q0 + s * d, ds * d, dds * d


class QuinticPath:
    """Piecewise quintic through waypoints."""

    def __init__(self, waypoints: np.ndarray, durations: np.ndarray, loop: bool):
        if loop:
            waypoints = np.vstack([waypoints, waypoints[:1]])
            durations = np.append(durations, durations[-1])
        self.waypoints, self.durations, self.loop = waypoints, durations, loop
        self.total = float(durations.sum())

    def __call__(self, t):
        """Return (q, qd, qdd) at time t."""
        if self.loop:
            t = t % self.total
        for k, T in enumerate(self.durations):
            if t <= T:
                return quintic(t, self.waypoints[k], self.waypoints[k + 1], T)
            t -= T
        return quintic(1.0, self.waypoints[-2], self.waypoints[-1], 1.0)


class ReferenceGenerator(DeferringNode):
    """Publish a reference trajectory point at a fixed rate."""

    def __init__(self, **kwargs):
        super().__init__('reference_generator', **kwargs)
        realtime.declare_parameters(self)   # applied by run_node
        declare(self, 'joints', (Parameter.Type.STRING_ARRAY, []),
                'joint order of the published points (sets n)', PLANNED)
        declare(self, 'mode', 'sine', "'sine', 'quintic' or 'excitation'", PLANNED)
        for name, default, text in (
                ('offset', [0.0], 'sine: offset per joint [rad or m]'),
                ('amplitude', [0.0], 'sine: amplitude per joint [rad or m]'),
                ('frequency', [0.1], 'sine: frequency per joint [Hz]'),
                ('phase', [0.0], 'sine: phase per joint [rad]'),
                ('waypoints', [0.0], 'quintic: waypoints, row-major, n positions per row'),
                ('segment_durations', [1.0], 'quintic: duration of each segment [s]')):
            declare(self, name, default, text + ', one value or one per joint/segment',
                    PLANNED)
        declare(self, 'loop', False, 'quintic: loop back to the first waypoint; excitation: '
                'repeat it', PLANNED)
        declare(self, 'excitation_file', '',
                'excitation: the YAML of kron-dynamics excite (joints matched by name)', PLANNED)
        declare(self, 'ramp_time', 2.0, 'sine: the amplitude ramps up over this long [s]',
                PLANNED)
        declare(self, 'rate', 250.0, 'points per second [Hz]', AT_START)
        declare(self, 'wait_for_commands', True,
                'start the clock at the first effort command on command_topic', AT_START)
        declare(self, 'command_topic', '/effort_controller/commands',
                'topic whose first message starts the clock (wait_for_commands)', AT_START)
        joints = list(self.get_parameter('joints').value)
        if not joints:
            raise ConfigurationError('reference_generator needs the joints parameter')
        n = len(joints)
        mode = self.get_parameter('mode').value
        if mode == 'sine':
            args = [per_joint(self.get_parameter(p).value, n, p)
                    for p in ('offset', 'amplitude', 'frequency', 'phase')]
            ramp = float(self.get_parameter('ramp_time').value)
            if not ramp >= 0:
                raise ConfigurationError('parameter ramp_time must be >= 0')
            self.trajectory = lambda t: sine(t, *args, ramp_time=ramp)
        elif mode == 'quintic':
            flat = np.asarray(self.get_parameter('waypoints').value, dtype=float)
            if flat.size < 2 * n or flat.size % n or not np.all(np.isfinite(flat)):
                raise ConfigurationError(f'parameter waypoints must hold at least 2 rows of {n} '
                                         'finite numbers')
            waypoints = flat.reshape(-1, n)
            durations = per_joint(self.get_parameter('segment_durations').value,
                                  len(waypoints) - 1, 'segment_durations')
            if np.any(durations <= 0):
                raise ConfigurationError('segment_durations must be > 0')
            self.trajectory = QuinticPath(waypoints, durations,
                                          bool(self.get_parameter('loop').value))
        elif mode == 'excitation':
            self.trajectory = self._excitation(joints)
        else:
            raise ConfigurationError("parameter mode must be 'sine', 'quintic' or "
                                     f"'excitation', got {mode!r}")
        rate = float(self.get_parameter('rate').value)
        if not rate > 0:
            raise ConfigurationError('parameter rate must be > 0')
        self.joints = joints
        self.pub = self.create_publisher(JointTrajectoryPoint, 'reference', 10)
        self.stamped_pub = self.create_publisher(JointTrajectory, 'reference_trajectory', 10)
        self.start = self.start_ns = None   # the clock's start: time.monotonic(), node clock
        if self.get_parameter('wait_for_commands').value:
            self._wait = self.create_subscription(
                Float64MultiArray, self.get_parameter('command_topic').value, self._on_command,
                1)
        else:
            self._start_clock()
        self.create_timer(1.0 / rate, self._tick)

    def _excitation(self, joints):
        """Return t -> (q, qd, qdd) of the excitation file, in ``joints`` order."""
        path = self.get_parameter('excitation_file').value
        if not path:
            raise ConfigurationError("mode 'excitation' needs the parameter excitation_file")
        excitation = FourierTrajectory.load(path)
        missing = [j for j in joints if j not in excitation.joint_names]
        extra = [j for j in excitation.joint_names if j not in joints]
        if missing or extra:
            differences = ([f'has {missing} that it lacks'] if missing else []) + (
                [f'lacks {extra}'] if extra else [])
            raise ConfigurationError(
                f'excitation file {path} moves joints {list(excitation.joint_names)}; the '
                f"parameter joints {joints} {' and '.join(differences)}")
        order = [excitation.joint_names.index(j) for j in joints]
        loop = bool(self.get_parameter('loop').value)
        duration = excitation.duration
        self.get_logger().info(f'playing the excitation of {path}: {duration:g} s'
                               + (', repeated' if loop else ''))

        def trajectory(t):
            q, qd, qdd = excitation(t % duration if loop else t)
            return q[order], qd[order], qdd[order]
        return trajectory

    def _on_command(self, msg) -> None:
        if self.start is None:
            self._start_clock()
            self.get_logger().info('first effort command seen: reference clock started')
        self.destroy_subscription(self._wait)

    def _start_clock(self) -> None:
        """Start the trajectory's clock now: t = 0 at this instant of both clocks."""
        self.start = time.monotonic()
        self.start_ns = self.get_clock().now().nanoseconds

    def point(self, t: float) -> JointTrajectoryPoint:
        """Return the reference point at time t since start."""
        q, qd, qdd = self.trajectory(t)
        sec = int(t)
        return JointTrajectoryPoint(
            positions=list(map(float, q)), velocities=list(map(float, qd)),
            accelerations=list(map(float, qdd)),
            time_from_start=Duration(sec=sec, nanosec=int((t - sec) * 1e9)))

    def _tick(self) -> None:
        if self.start is None:    # the t = 0 point, now
            point, stamp_ns = self.point(0.0), self.get_clock().now().nanoseconds
        else:
            point, stamp_ns = self.point(time.monotonic() - self.start), self.start_ns
        self.pub.publish(point)
        self.stamped_pub.publish(JointTrajectory(
            header=Header(stamp=Time(sec=stamp_ns // 1_000_000_000,
                                     nanosec=stamp_ns % 1_000_000_000)),
            joint_names=self.joints, points=[point]))


def main(args=None) -> int:
    """Run the reference generator."""
    return run_node(ReferenceGenerator, args)


if __name__ == '__main__':
    sys.exit(main())
