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
The nodes' readers of joint states, references and trajectories (nodes/joint_states.py).

Each rule a node applies to an input message, checked on the function itself with real
messages (rclpy's serializer), no node: names by name, duplicates, missing and unknown
joints, lengths, non-finite values, stamps, and the compiled trajectory reader's errors
against what the message holds.
"""

import math

from builtin_interfaces.msg import Duration, Time
import numpy as np
import pytest
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from kron_dynamics.nodes.joint_states import (InputError, JointStateIndex, point_arrays,
                                              StampClock, StampGuard, stamp_ns,
                                              trajectory_from_serialized, trajectory_points)

JOINTS = ['a', 'b']


def trajectory(names, points, sec=0, nanosec=0) -> JointTrajectory:
    """Return a JointTrajectory of (positions, velocities, accelerations) points, 1 s apart."""
    msg = JointTrajectory(joint_names=names)
    msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
    for k, (q, qd, qdd) in enumerate(points):
        msg.points.append(JointTrajectoryPoint(positions=q, velocities=qd, accelerations=qdd,
                                               time_from_start=Duration(sec=k, nanosec=5)))
    return msg


def test_joint_states_are_read_by_name_and_their_faults_named():
    """Order by name, extra joints ignored (refused if strict), duplicates, lengths, NaN."""
    index = JointStateIndex(JOINTS, known=('a_mimic',))
    q, qd = index.extract(['x', 'b', 'a'], [9.0, 2.0, 1.0], [])
    assert q.tolist() == [1.0, 2.0] and qd.tolist() == [0.0, 0.0]      # no velocity: zero
    # the same names again (read from the cache), and strict: an unknown joint refused even so
    assert index.extract(['x', 'b', 'a'], [9.0, 4.0, 3.0], [0.0, 6.0, 5.0])[1].tolist() == [
        5.0, 6.0]
    with pytest.raises(InputError, match=r"^joint_states: unknown joint\(s\) \['x'\]$"):
        index.extract(['x', 'b', 'a'], [9.0, 2.0, 1.0], [], strict=True)
    assert index.extract(['a_mimic', 'b', 'a'], [9.0, 2.0, 1.0], [],
                         strict=True)[0].tolist() == [1.0, 2.0]       # known: not read
    for names, position, velocity, message in (
            (['a', 'b', 'a'], [1.0, 2.0, 3.0], [], "duplicate joint name 'a'"),
            (['a'], [1.0], [], r"missing joint\(s\) \['b'\]"),
            (['a', 'b'], [1.0], [], '2 names but 1 positions'),
            (['a', 'b'], [1.0, 2.0], [1.0], '2 names but 1 velocities'),
            (['a', 'b'], [1.0, math.nan], [], r"non-finite position of joint\(s\) \['b'\]"),
            (['a', 'b'], [1.0, 2.0], [math.inf, 0.0],
             r"non-finite velocity of joint\(s\) \['a'\]")):
        with pytest.raises(InputError, match=f'^joint_states: {message}$'):
            index.extract(names, position, velocity)
    # a NaN of a joint not ours is no fault of the state
    assert index.extract(['x', 'a', 'b'], [math.nan, 1.0, 2.0], [])[0].tolist() == [1.0, 2.0]


def test_a_state_read_by_rclpy_teaches_the_compiled_reader_its_names():
    """The first state of a stream goes through rclpy; its names are then read compiled."""
    index = JointStateIndex(JOINTS).prepare_serialized()
    msg = JointState(name=['x', 'b', 'a'], position=[9.0, 2.0, 1.0])
    data = serialize_message(msg)
    assert index._reader.read(data) is None              # not taught yet
    assert index.from_serialized(data)[1].tolist() == [1.0, 2.0]
    stamp, q, qd = index._reader.read(data)
    assert q.tolist() == [1.0, 2.0] and stamp == 0


def test_stamps_and_clocks():
    """A stamp's nanosec is below 1e9; an accepted 0 keeps the last stamp; sim time rechecked."""
    assert stamp_ns(Time(sec=2, nanosec=999_999_999)) == 2_999_999_999
    with pytest.raises(InputError, match=r'^odometry: invalid header.stamp \(sec 2, nanosec '
                                         r'1000000000\): nanosec must be below 1e9$'):
        stamp_ns(Time(sec=2, nanosec=1_000_000_000), 'odometry')
    guard = StampGuard(restart_s=3600.0)
    guard.accept(5_000)
    guard.accept(0)                        # unset: the stream's last stamp stays 5000
    with pytest.raises(InputError, match='older than the previous'):
        guard.check_ns(4_000)

    class Clock:                           # the two things StampClock asks of rclpy's Clock
        ros_time_is_active = False

        def now(self):
            return type('Now', (), {'nanoseconds': 42})()
    clock = Clock()
    stamps = StampClock(clock)
    assert stamps.now_ns() > 1_600_000_000 * 10 ** 9       # the system time
    clock.ros_time_is_active = True        # use_sim_time switched on: seen within RECHECK
    seen = [stamps.now_ns() for _ in range(StampClock.RECHECK)]
    assert seen[-1] == 42 and seen.count(42) >= 1


def test_a_reference_point_needs_its_positions_and_finite_values():
    """Empty velocities or accelerations are zeros; empty positions are not."""
    q, qd, qdd = point_arrays(JointTrajectoryPoint(positions=[1.0, 2.0]), 2)
    assert q.tolist() == [1.0, 2.0] and qd.tolist() == qdd.tolist() == [0.0, 0.0]
    for point, message in ((JointTrajectoryPoint(), '0 positions, expected 2'),
                           (JointTrajectoryPoint(positions=[1.0]), '1 positions, expected 2'),
                           (JointTrajectoryPoint(positions=[1.0, 2.0], velocities=[1.0]),
                            '1 velocities, expected 2'),
                           (JointTrajectoryPoint(positions=[1.0, math.nan]),
                            'non-finite positions'),
                           (JointTrajectoryPoint(positions=[1.0, 2.0],
                                                 accelerations=[1.0, math.inf]),
                            'non-finite accelerations')):
        with pytest.raises(InputError, match=f'^reference: {message}$'):
            point_arrays(point, 2)


@pytest.mark.parametrize('read', ['compiled', 'rclpy'])
def test_trajectories_are_read_by_name_and_their_faults_named(read):
    """The compiled reader and rclpy's deserializer (another encoding) give the same."""
    def parse(msg):
        if read == 'compiled':
            return trajectory_from_serialized(serialize_message(msg), JOINTS)
        points = trajectory_points(msg, JOINTS)
        return [np.array([p[i] for p in points]) for i in range(3)]

    msg = trajectory(['x', 'b', 'a'], [([9.0, 2.0, 1.0], [], []),
                                       ([9.0, 4.0, 3.0], [0.0, 1.0, 2.0], [5.0, 6.0, 7.0])],
                     3, 7)
    result = parse(msg)
    q, qd, qdd = (result.q, result.qd, result.qdd) if read == 'compiled' else result
    assert q.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert qd.tolist() == [[0.0, 0.0], [2.0, 1.0]] and qdd.tolist() == [[0.0, 0.0], [7.0, 6.0]]
    if read == 'compiled':
        assert result.stamp_ns == 3_000_000_007 and result.times_ns.tolist() == [5, 1_000_000_005]
    where = 'reference_trajectory point 1'
    faults = [
        ([], r'reference_trajectory: no points'),
        ([([2.0, 1.0], [], []), ([2.0, math.nan], [], [])],
         f"{where}: non-finite positions of joint 'a'" if read == 'compiled' else
         rf"{where}: non-finite position of joint\(s\) \['a'\]"),
        ([([2.0, 1.0], [], []), ([2.0, 1.0], [math.inf, 0.0], [])],
         f"{where}: non-finite velocities of joint 'b'" if read == 'compiled' else
         rf"{where}: non-finite velocity of joint\(s\) \['b'\]"),
        ([([2.0, 1.0], [], []), ([2.0, 1.0], [], [0.0, math.nan])],
         f"{where}: non-finite accelerations of joint 'a'" if read == 'compiled' else
         rf"{where}: non-finite acceleration of joint\(s\) \['a'\]")]
    for label, point in (('positions', ([2.0], [], [])), ('velocities', ([2.0, 1.0], [1.0], [])),
                         ('accelerations', ([2.0, 1.0], [], [1.0, 2.0, 3.0]))):
        got = len(point[('positions', 'velocities', 'accelerations').index(label)])
        faults.append(([([2.0, 1.0], [], []), point],
                       f'{where}: {label} must hold 2 values \\(one per name\\) or, for '
                       'velocities and accelerations, none' if read == 'compiled' else
                       f'{where}: 2 names but {got} {label}'))
    for points, message in faults:
        with pytest.raises(InputError, match=f'^{message}$'):
            parse(trajectory(['b', 'a'], points))
    with pytest.raises(InputError, match=r"^reference_trajectory( point 0)?: missing joint\(s\) "
                                         r"\['a'\]$"):
        parse(trajectory(['b'], [([2.0], [], [])]))
    with pytest.raises(InputError, match="^reference_trajectory( point 0)?: duplicate joint "
                                         "name 'a'$"):
        parse(trajectory(['a', 'b', 'a'], [([2.0, 1.0, 0.0], [], [])]))


def test_a_trajectorys_stamp_and_bytes_are_checked():
    """An invalid stamp; a message cut short inside its points."""
    with pytest.raises(InputError, match=r'^reference_trajectory: invalid header.stamp \(sec '
                                         r'1, nanosec 1000000000\)'):
        trajectory_from_serialized(serialize_message(trajectory(JOINTS, [([1.0, 2.0], [], [])],
                                                                1, 1_000_000_000)), JOINTS)
    data = serialize_message(trajectory(JOINTS, [([1.0, 2.0], [], [])] * 3))
    for cut in (40, 60, 80):
        with pytest.raises(InputError, match=r'^reference_trajectory: malformed or truncated '
                                             r'message \(at point \d\)$'):
            trajectory_from_serialized(data[:cut], JOINTS)
    with pytest.raises(InputError, match=r'^reference_trajectory: cannot deserialize'):
        trajectory_from_serialized(b'\x00\x01\x00\x00' + b'\xff' * 7, JOINTS)
