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

from .messages import all_finite
from .wire import JointStateReader

STATE_QUEUE = 1000   # joint_states queue depth: 1 s at 1 kHz, nothing lost to a stall


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
                strict: bool = False):
        """
        Return (q, qd) in our order; raise InputError naming the problem.

        Extra joints are ignored (an error if ``strict``). An empty velocity array means zero
        velocity; otherwise it must be as long as the names. Values must be finite.
        """
        names = list(names)
        if len(position) != len(names):
            raise InputError(f'{what}: {len(names)} names but {len(position)} positions')
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
            for label, values in (('position', q), ('velocity', qd)):
                bad = [self.joint_names[i] for i in np.nonzero(~np.isfinite(values))[0]]
                if bad:
                    raise InputError(f'{what}: non-finite {label} of joint(s) {bad}')
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
        q, qd = self.from_joint_state(msg, what)
        self._reader.remember(self._names, self._rows)
        return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec, q, qd


class StampGuard:
    """
    Refuse messages whose header stamp is older than the last accepted one (0 = unset).

    After ``restart_s`` without an accepted message the stream counts as restarted and any
    stamp is accepted again (a publisher restarted with a rewound clock recovers by itself).
    """

    def __init__(self, restart_s: float = 1.0):
        self.last = 0
        self.last_accept = -math.inf
        self.restart_s = restart_s

    def check(self, header, what: str = 'joint_states') -> int:
        """Return the stamp in ns; raise InputError if it goes backwards."""
        return self.check_ns(header.stamp.sec * 1_000_000_000 + header.stamp.nanosec, what)

    def check_ns(self, stamp: int, what: str = 'joint_states') -> int:
        """Return the stamp (ns); raise InputError if it goes backwards."""
        if stamp and stamp < self.last and time.monotonic() - self.last_accept < self.restart_s:
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
        qd = (index.extract(names, point.velocities, [], where)[0] if len(point.velocities)
              else np.zeros(index.n))
        qdd = (index.extract(names, point.accelerations, [], where)[0]
               if len(point.accelerations) else np.zeros(index.n))
        result.append((q, qd, qdd))
    return result
