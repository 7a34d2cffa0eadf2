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
Joint states and references in, by name: JointState, JointTrajectory(Point), their stamps.

Everything here raises :class:`InputError` naming the message, the field and the joints
at fault; the nodes log it (throttled) and drop the message.
"""

from dataclasses import dataclass, field
import math
import time

import numpy as np
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory

from .messages import all_finite
from .wire import JointStateReader, read_trajectory

STATE_QUEUE = 1000   # dynamics_node's joint_states queue: 1 s at 1 kHz, every state answered
FRESH_STATE_QUEUE = 1   # the controller's: only the newest state, never a backlog
FUTURE_TOLERANCE_NS = 100_000_000   # a stamp further ahead of the node's clock is refused


class InputError(ValueError):
    """A message or request that cannot be used; the text says why."""


@dataclass
class JointStateIndex:
    """
    Map JointState messages to arrays in a fixed joint order, by name.

    ``known`` are names a strict reader accepts without reading them (the mimic joints a
    joint_state_broadcaster publishes too: their positions follow from the others).
    """

    joint_names: list
    known: tuple = ()
    _names: list = field(default=None, init=False, repr=False)   # the last names seen
    _rows: np.ndarray = field(default=None, init=False, repr=False)
    _reader: JointStateReader = field(default=None, init=False, repr=False)  # from_serialized

    def __post_init__(self):
        self.n = len(self.joint_names)

    def extract(self, names, position, velocity, what: str = 'joint_states',
                strict: bool = False, label: str = 'position'):
        """
        Return (q, qd) in our order; raise InputError naming the problem.

        Extra joints are ignored (an error if ``strict``). An empty velocity array means zero
        velocity; otherwise it must be as long as the names. Values must be finite.
        ``label`` names the first array in errors (an acceleration array is read with
        ``label='acceleration'`` and no velocities).
        """
        names = list(names)
        if len(position) != len(names):
            raise InputError(f'{what}: {len(names)} names but {len(position)} '
                             f"{'velocities' if label == 'velocity' else label + 's'}")
        if len(velocity) not in (0, len(names)):
            raise InputError(f'{what}: {len(names)} names but {len(velocity)} velocities')
        if strict or names != self._names:   # a stream repeats its names: checked once
            rows = self._rows_of(names, what, strict)
            if not strict:
                self._names, self._rows = names, rows
        else:
            rows = self._rows
        q = np.asarray(position, dtype=float)[rows]
        qd = np.asarray(velocity, dtype=float)[rows] if len(velocity) else np.zeros(self.n)
        # the built-in sum of the message's own arrays is the cheapest test (NaN or inf if an
        # entry is, of our joints or of ignored ones); the per-joint check only runs then
        if not (math.isfinite(sum(position) + sum(velocity)) or (all_finite(q)
                                                                 and all_finite(qd))):
            for kind, values in ((label, q), ('velocity', qd)):
                bad = [self.joint_names[i] for i in np.nonzero(~np.isfinite(values))[0]]
                if bad:
                    raise InputError(f'{what}: non-finite {kind} of joint(s) {bad}')
        return q, qd

    def _rows_of(self, names: list, what: str, strict: bool) -> np.ndarray:
        """Return the message rows of our joints; raise InputError for bad names."""
        index = {}
        for i, name in enumerate(names):
            if name in index:
                raise InputError(f"{what}: duplicate joint name '{name}'")
            index[name] = i
        missing = [j for j in self.joint_names if j not in index]
        if missing:
            raise InputError(f'{what}: missing joint(s) {missing}')
        if strict:
            known = set(self.joint_names) | set(self.known)
            unknown = [name for name in names if name not in known]
            if unknown:
                raise InputError(f'{what}: unknown joint(s) {unknown}')
        return np.array([index[j] for j in self.joint_names], dtype=np.intp)

    def from_joint_state(self, msg, what: str = 'joint_states', strict: bool = False):
        """Return (q, qd) of a sensor_msgs/JointState."""
        return self.extract(msg.name, msg.position, msg.velocity, what, strict)

    def prepare_serialized(self) -> 'JointStateIndex':
        """Compile (or load) the serialized reader now rather than at the first message."""
        if self._reader is None:
            self._reader = JointStateReader(self.n)
        return self

    def from_serialized(self, data: bytes, what: str = 'joint_states'):
        """
        Return (stamp_ns, q, qd) of a serialized JointState (a ``raw=True`` subscription).

        A compiled reader (wire.JointStateReader) takes the common case; anything else is
        deserialized by rclpy and checked by extract (InputError naming the problem), and
        names it accepts are taught to the reader for the next message.
        """
        if self._reader is None:
            self._reader = JointStateReader(self.n)
        state = self._reader.read(data)
        if state is not None:
            return state
        try:
            msg = deserialize_message(data, JointState)
        except Exception as exc:   # rclpy raises several types for malformed data
            raise InputError(f'{what}: cannot deserialize ({exc})') from None
        stamp = stamp_ns(msg.header.stamp, what)
        q, qd = self.from_joint_state(msg, what)
        self._reader.remember(self._names, self._rows)
        return stamp, q, qd


def stamp_ns(stamp, what: str = 'joint_states') -> int:
    """Return a builtin_interfaces/Time in ns; InputError if nanosec is not below 1e9."""
    if not 0 <= stamp.nanosec < 1_000_000_000:
        raise InputError(f'{what}: invalid header.stamp (sec {stamp.sec}, nanosec '
                         f'{stamp.nanosec}): nanosec must be below 1e9')
    return stamp.sec * 1_000_000_000 + stamp.nanosec


class StampClock:
    """
    Now, in ns, on a node's ROS clock (its time base for header stamps).

    That is the system time unless ``use_sim_time`` made the clock follow ``/clock``; the
    system time is then read directly (0.4 us instead of rclpy's 11 us per ``now()``), and
    whether sim time is active is looked up again every ``RECHECK`` calls.
    """

    RECHECK = 1000

    def __init__(self, clock):
        self._clock = clock
        self._calls = 0
        self._sim = clock.ros_time_is_active

    def now_ns(self) -> int:
        """Return the current time of the node's clock in ns."""
        self._calls += 1
        if self._calls >= self.RECHECK:
            self._calls = 0
            self._sim = self._clock.ros_time_is_active
        return self._clock.now().nanoseconds if self._sim else time.time_ns()


class StampGuard:
    """
    Refuse messages stamped older than the last accepted one, or ahead of the clock (0 = unset).

    A stamp more than FUTURE_TOLERANCE_NS ahead of the node's clock is refused (and so cannot
    make the valid stamps after it look old); a stamp of 0 is always accepted. After
    ``restart_s`` without an accepted message the stream counts as restarted and any stamp is
    accepted again (a publisher restarted with a rewound clock recovers by itself).
    """

    def __init__(self, restart_s: float = 1.0):
        self.last = 0
        self.last_accept = -math.inf
        self.restart_s = restart_s

    def check_ns(self, stamp: int, now_ns: int = 0, what: str = 'joint_states') -> int:
        """Return the stamp (ns); InputError if it goes backwards or is ahead of now_ns."""
        if not stamp:
            return stamp
        if now_ns and stamp > now_ns + FUTURE_TOLERANCE_NS:
            raise InputError(f'{what}: stamp {stamp * 1e-9:.6f} s is '
                             f'{(stamp - now_ns) * 1e-9:.3f} s ahead of this node\'s clock '
                             '(clocks not synchronized?)')
        if stamp < self.last and time.monotonic() - self.last_accept < self.restart_s:
            raise InputError(f'{what}: stamp {stamp * 1e-9:.6f} s is older than the previous '
                             f'{self.last * 1e-9:.6f} s')
        return stamp

    def accept(self, stamp: int) -> None:
        """Remember the stamp of an accepted message."""
        self.last_accept = time.monotonic()
        if stamp:
            self.last = stamp

    def reset(self) -> None:
        """Forget the last stamp (new model)."""
        self.last = 0


def point_arrays(point, n: int, what: str = 'reference'):
    """
    Return (q, qd, qdd) of a JointTrajectoryPoint in our joint order.

    Positions are required; empty velocities or accelerations mean zeros.
    """
    arrays = []
    for label, values, required in (('positions', point.positions, True),
                                    ('velocities', point.velocities, False),
                                    ('accelerations', point.accelerations, False)):
        if len(values) == 0 and not required:
            arrays.append(np.zeros(n))
            continue
        if len(values) != n:
            raise InputError(f'{what}: {len(values)} {label}, expected {n}')
        v = np.asarray(values, dtype=float)
        if not np.all(np.isfinite(v)):
            raise InputError(f'{what}: non-finite {label}')
        arrays.append(v)
    return tuple(arrays)


def trajectory_points(msg, joint_names: list, what: str = 'reference_trajectory'):
    """Yield (q, qd, qdd) in our joint order for every point of a JointTrajectory."""
    index = JointStateIndex(joint_names)
    names = list(msg.joint_names)
    if not msg.points:
        raise InputError(f'{what}: no points')
    result = []
    for k, point in enumerate(msg.points):
        where = f'{what} point {k}'
        q, _ = index.extract(names, point.positions, [], where)
        qd = (index.extract(names, point.velocities, [], where, label='velocity')[0]
              if len(point.velocities) else np.zeros(index.n))
        qdd = (index.extract(names, point.accelerations, [], where, label='acceleration')[0]
               if len(point.accelerations) else np.zeros(index.n))
        result.append((q, qd, qdd))
    return result


@dataclass
class Trajectory:
    """A JointTrajectory in our joint order: (points, n) arrays and the points' times."""

    stamp_ns: int          # header.stamp (0: "now", the time it is received)
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    times_ns: np.ndarray   # time_from_start of each point

    def __len__(self):
        return len(self.q)


_LENGTH_ERRORS = {3: 'positions', 4: 'velocities', 5: 'accelerations'}


def trajectory_from_serialized(data: bytes, joint_names, what: str = 'reference_trajectory'):
    """
    Return the :class:`Trajectory` of a serialized JointTrajectory; InputError naming the fault.

    Read in one compiled pass (``wire.read_trajectory``: a 50,000-point trajectory in
    milliseconds, where rclpy's deserializer takes seconds); other encodings go through rclpy.
    Named joints in any order, extra joints ignored; empty velocities or accelerations of a
    point mean zeros.
    """
    parsed = read_trajectory(data)
    if parsed is None:
        try:
            msg = deserialize_message(data, JointTrajectory)
        except Exception as exc:   # rclpy raises several types for malformed data
            raise InputError(f'{what}: cannot deserialize ({exc})') from None
        points = trajectory_points(msg, joint_names, what)
        q, qd, qdd = (np.array([p[i] for p in points]) for i in range(3))
        times = np.array([t.time_from_start.sec * 1_000_000_000 + t.time_from_start.nanosec
                          for t in msg.points], dtype=np.int64)
        return Trajectory(stamp_ns(msg.header.stamp, what), q, qd, qdd, times)
    code, point, sec, nanosec, names, pos, vel, acc, times = parsed
    if code == 2:
        raise InputError(f'{what}: malformed or truncated message (at point {point})')
    if code in _LENGTH_ERRORS:
        count = len(names)
        raise InputError(f'{what} point {point}: {_LENGTH_ERRORS[code]} must hold {count} '
                         f'values (one per name) or, for velocities and accelerations, none')
    if not len(pos):
        raise InputError(f'{what}: no points')
    rows = JointStateIndex(list(joint_names))._rows_of(names, what, strict=False)
    q, qd, qdd = pos[:, rows], vel[:, rows], acc[:, rows]
    for label, values in (('positions', q), ('velocities', qd), ('accelerations', qdd)):
        bad = ~np.isfinite(values)
        if bad.any():
            k, j = np.argwhere(bad)[0]
            raise InputError(f'{what} point {k}: non-finite {label} of joint '
                             f"'{joint_names[j]}'")
    stamp = stamp_ns(_Time(sec, nanosec), what)
    return Trajectory(stamp, q, qd, qdd, times)


@dataclass
class _Time:
    sec: int
    nanosec: int
