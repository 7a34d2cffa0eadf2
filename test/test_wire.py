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
The serialized hot path (kron_dynamics.nodes.wire) against rclpy's own (de)serializer.

The reader must return exactly what rclpy's deserializer plus JointStateIndex give, or None
(then the node takes that slow path): never a different value, never an exception.
"""

import math
import random

import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from kron_dynamics.nodes.joint_states import (FUTURE_TOLERANCE_NS, InputError,
                                              JointStateIndex, StampGuard)
from kron_dynamics.nodes.messages import all_finite, array_msg
from kron_dynamics.nodes.wire import (float64_multiarray_bytes, JointStateReader,
                                      stamped_effort_bytes, stamped_effort_prefix)

JOINTS = ['q1_travel', 'q2_slew', 'q3_luff']


def slow_path(data: bytes, index: JointStateIndex):
    """Return (stamp_ns, q, qd) as the node's fallback computes it, or the InputError."""
    msg = deserialize_message(data, JointState)
    try:
        q, qd = index.from_joint_state(msg)
    except InputError as exc:
        return exc
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec, q, qd


def random_name(rng: random.Random) -> str:
    alphabet = 'abcdefghijklmnopqrstuvwxyz_0123456789/äöü雪'
    return ''.join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))


def random_state(rng: random.Random, joints: list, names: list | None = None) -> JointState:
    """Return a JointState with our joints among others (shuffled), or the given names."""
    if names is None:
        names = list(joints) + [random_name(rng) + f'_x{i}' for i in range(rng.randint(0, 3))]
        rng.shuffle(names)
    n = len(names)
    msg = JointState(name=names, position=[rng.uniform(-1e3, 1e3) for _ in range(n)])
    if rng.random() < 0.8:
        msg.velocity = [rng.uniform(-1e3, 1e3) for _ in range(n)]
    if rng.random() < 0.5:
        msg.effort = [rng.uniform(-10, 10) for _ in range(rng.choice([0, 1, n]))]
    msg.header.stamp.sec = rng.choice([0, 1, 2 ** 31 - 1, -(2 ** 31), rng.randint(-5, 10 ** 9)])
    msg.header.stamp.nanosec = rng.randint(0, 999_999_999)
    msg.header.frame_id = ''.join(rng.choice('ab_/') for _ in range(rng.randint(0, 9)))
    return msg


def taught_reader(msg: JointState, joints: list):
    """Return (index, reader) with the reader taught msg's names (rows found here, by name)."""
    index = JointStateIndex(joints)
    reader = JointStateReader(len(joints))
    names = list(msg.name)
    reader.remember(names, [names.index(j) for j in joints])
    return index, reader


@pytest.mark.parametrize('seed', range(200))
def test_reader_gives_exactly_what_rclpy_gives(seed):
    rng = random.Random(seed)
    joints = [random_name(rng) + f'_j{i}' for i in range(rng.randint(1, 8))]
    first = random_state(rng, joints)
    index, reader = taught_reader(first, joints)
    for msg in [first] + [random_state(rng, joints, first.name) for _ in range(5)]:
        data = serialize_message(msg)
        fast = reader.read(data)
        assert fast is not None
        expected = slow_path(data, index)
        assert fast[0] == expected[0]
        assert np.array_equal(fast[1], expected[1]) and np.array_equal(fast[2], expected[2])


def test_other_names_or_order_fall_back():
    index, reader = taught_reader(JointState(name=JOINTS, position=[1.0, 2.0, 3.0]), JOINTS)
    for names in (JOINTS[::-1], JOINTS + ['extra'], ['q1_travel', 'q2_slew', 'q3_lufx'],
                  ['q1_travel', 'q2_slew', 'q3_luf'], ['q1_travel', 'q2_slew']):
        msg = JointState(name=names, position=[0.0] * len(names))
        assert reader.read(serialize_message(msg)) is None, names


@pytest.mark.parametrize('change', [
    {'position': [0.0, math.nan, 0.0]},
    {'position': [0.0, 0.0, 0.0], 'velocity': [math.inf, 0.0, 0.0]},
    {'position': [0.0, 0.0]},
    {'position': [0.0, 0.0, 0.0], 'velocity': [0.0]},
    {'position': [0.0, 0.0, 0.0, 0.0]},
])
def test_bad_values_and_lengths_fall_back_to_the_descriptive_errors(change):
    index, reader = taught_reader(JointState(name=JOINTS, position=[1.0, 2.0, 3.0]), JOINTS)
    data = serialize_message(JointState(name=JOINTS, **change))
    assert reader.read(data) is None
    assert isinstance(slow_path(data, index), InputError)


def test_a_stamp_with_a_second_or_more_of_nanoseconds_falls_back():
    """A stamp's nanosec is a uint32: 1e9 and above is no valid stamp; the slow path says so."""
    index, reader = taught_reader(JointState(name=JOINTS, position=[1.0, 2.0, 3.0]), JOINTS)
    msg = JointState(name=JOINTS, position=[1.0, 2.0, 3.0])
    msg.header.stamp.sec = 7
    for nanosec, fast in ((999_999_999, 7_999_999_999), (1_000_000_000, None),
                          (2 ** 32 - 1, None)):
        msg.header.stamp.nanosec = nanosec
        got = reader.read(serialize_message(msg))
        assert (got if got is None else got[0]) == fast, nanosec


def test_untaught_reader_and_other_encodings_fall_back():
    msg = JointState(name=JOINTS, position=[1.0, 2.0, 3.0])
    data = serialize_message(msg)
    assert JointStateReader(3).read(data) is None
    _, reader = taught_reader(msg, JOINTS)
    assert reader.read(data) is not None
    big_endian = b'\x00\x00' + data[2:]
    assert reader.read(big_endian) is None
    assert reader.read(b'') is None and reader.read(data[:3]) is None


def test_truncated_and_corrupted_messages_never_give_a_wrong_state():
    rng = random.Random(7)
    msg = JointState(name=JOINTS, position=[1.0, 2.0, 3.0], velocity=[4.0, 5.0, 6.0],
                     effort=[7.0, 8.0, 9.0])
    msg.header.frame_id = 'base_link'
    index, reader = taught_reader(msg, JOINTS)
    data = serialize_message(msg)
    for cut in range(len(data)):
        assert reader.read(data[:cut]) is None, cut
    checked = 0
    for _ in range(20000):
        corrupt = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            corrupt[rng.randrange(len(corrupt))] = rng.randrange(256)
        corrupt = bytes(corrupt)
        fast = reader.read(corrupt)
        if fast is None:
            continue
        # whatever the reader accepts, rclpy reads the same way
        expected = slow_path(corrupt, index)
        assert not isinstance(expected, InputError)
        assert fast[0] == expected[0]
        assert np.array_equal(fast[1], expected[1]) and np.array_equal(fast[2], expected[2])
        checked += 1
    assert checked > 100   # most single-byte changes hit values, stamps or padding


@pytest.mark.parametrize('shape', [(0,), (1,), (3,), (7,), (2, 3), (3, 9), (7, 7), (1, 1)])
def test_float64_multiarray_bytes_is_the_message_array_msg_builds(shape):
    values = np.random.default_rng(1).normal(size=shape)
    received = deserialize_message(float64_multiarray_bytes(values), Float64MultiArray)
    assert received == array_msg(values)
    # and the same bytes as rclpy's serializer, apart from padding (left undefined there)
    reference = serialize_message(array_msg(values))
    assert len(reference) == len(float64_multiarray_bytes(values))
    assert reference[-values.size * 8 or len(reference):] == values.tobytes()


@pytest.mark.parametrize('labels', [('rows: base_vx base_vy base_wz j1',),
                                    ('rows: a', 'cols: kron(v, v) of the rows'),
                                    ('r', 'c\u00e9')])
def test_labelled_float64_multiarray_bytes_is_the_message_array_msg_builds(labels):
    values = np.random.default_rng(2).normal(size=(4,) if len(labels) == 1 else (4, 16))
    data = float64_multiarray_bytes(values, labels)
    received = deserialize_message(data, Float64MultiArray)
    assert received == array_msg(values, labels)
    assert tuple(d.label for d in received.layout.dim) == labels
    assert len(serialize_message(array_msg(values, labels))) == len(data)


def test_float64_multiarray_bytes_takes_any_float_array():
    values = np.arange(12.0).reshape(3, 4)
    for variant in (values.T.copy().T, values.astype(np.float32), values.astype('>f8'),
                    np.asfortranarray(values)):
        received = deserialize_message(float64_multiarray_bytes(variant), Float64MultiArray)
        assert list(received.data) == list(values.ravel())


def test_index_from_serialized_teaches_itself_and_keeps_the_descriptive_errors():
    index = JointStateIndex(JOINTS)
    names = ['wheel', 'q3_luff', 'q1_travel', 'q2_slew']
    for k in range(3):   # the first goes through rclpy, the others through the reader
        msg = JointState(name=names, position=[9.0, 0.3 + k, 0.1, 0.2],
                         velocity=[1.0, 3.0, 1.0, 2.0])
        msg.header.stamp.sec, msg.header.stamp.nanosec = 5, k
        stamp, q, qd = index.from_serialized(serialize_message(msg))
        assert stamp == 5_000_000_000 + k
        assert list(q) == [0.1, 0.2, 0.3 + k] and list(qd) == [1.0, 2.0, 3.0]
    bad = serialize_message(JointState(name=names, position=[0.0, math.nan, 0.0, 0.0]))
    with pytest.raises(InputError, match=r"non-finite position of joint\(s\) \['q3_luff'\]"):
        index.from_serialized(bad)
    with pytest.raises(InputError, match='cannot deserialize'):
        index.from_serialized(b'\x00\x01\x00\x00' + b'\xff' * 7)
    with pytest.raises(InputError, match="missing joint"):
        index.from_serialized(serialize_message(JointState(name=['q1_travel'], position=[0.0])))
    # after the errors the stream's own names still take the fast path
    msg.position = [9.0, 0.5, 0.1, 0.2]
    assert list(index.from_serialized(serialize_message(msg))[1]) == [0.1, 0.2, 0.5]


def test_stamp_guard_refuses_a_stream_going_backwards_until_it_restarts():
    """Older than the last accepted stamp, or ahead of the clock: refused; 0 is unset."""
    guard = StampGuard(restart_s=3600.0)    # no restart between two lines of this test
    ms = 1_000_000
    now = 1_000_000 * ms
    assert guard.check_ns(now - 10 * ms, now) == now - 10 * ms
    guard.accept(now - 10 * ms)
    with pytest.raises(InputError, match=r'^joint_states: stamp 999\.980000 s is older than '
                                         r'the previous 999\.990000 s$'):
        guard.check_ns(now - 20 * ms, now)
    assert guard.check_ns(now - 10 * ms, now) == now - 10 * ms     # the same stamp: taken
    assert guard.check_ns(0, now) == 0                              # unset: always taken
    assert guard.check_ns(now + FUTURE_TOLERANCE_NS, now) == now + FUTURE_TOLERANCE_NS
    with pytest.raises(InputError, match='^odometry: .* ahead of this node'):
        guard.check_ns(now + FUTURE_TOLERANCE_NS + 1, now, 'odometry')
    # nothing accepted for restart_s: the stream counts as restarted (a rewound clock)
    guard.last_accept -= 2 * guard.restart_s
    assert guard.check_ns(now - 20 * ms, now) == now - 20 * ms
    guard.accept(now - 20 * ms)
    with pytest.raises(InputError, match='older than the previous'):
        guard.check_ns(now - 30 * ms, now)
    guard.reset()                                                   # a new model: any stamp
    assert guard.check_ns(now - 30 * ms, now) == now - 30 * ms


@pytest.mark.parametrize('names', [[], ['a'], ['ab', 'c', 'def'],
                                   [f'joint_{k}' for k in range(9)],
                                   ['x' * k for k in range(1, 12)]])
def test_stamped_effort_bytes_is_the_joint_state_it_stands_for(names):
    """The stamped outputs: names, no positions or velocities, the efforts, the stamp."""
    rng = np.random.default_rng(len(names))
    parts = stamped_effort_prefix(names)
    for stamp in (0, 1, 1_795_652_919_023_406_123, 2**31 * 10**9 - 1):
        values = rng.normal(size=len(names)) * 10.0 ** rng.integers(-300, 300, len(names))
        msg = deserialize_message(stamped_effort_bytes(parts, stamp, values), JointState)
        assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == divmod(stamp, 10**9)
        assert msg.header.frame_id == '' and list(msg.name) == names
        assert len(msg.position) == 0 and len(msg.velocity) == 0
        assert list(msg.effort) == values.tolist()


def test_all_finite_is_every_entry_finite_even_where_the_sum_overflows():
    """The nodes' publish guard: a sum is its fast path, np.isfinite the answer."""
    big = np.full((3, 3), 1e308)                # finite entries whose sum is inf
    with np.errstate(over='ignore', invalid='ignore'):      # as in a node (route_warnings)
        assert all_finite(big) and all_finite(np.zeros(2), big, -big)
        for bad in (np.inf, -np.inf, np.nan):
            for k in range(9):
                x = big.copy()
                x.flat[k] = bad
                assert not all_finite(x) and not all_finite(np.zeros(3), x)
    assert all_finite() and all_finite(np.zeros(0))
