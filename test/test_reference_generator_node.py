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
The reference generator on a real node in this process (no graph, no clock waits).

test_reference_generator.py checks the trajectories' formulas; the graph tests play them
through DDS. These pin the node between the two: its settings refused by name, the
excitation file's joints matched by name, the clock that waits for the first command, and
the two messages of a point (time_from_start, the stamp of the clock's start).
"""

import math
import time

import numpy as np
import pytest
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from conftest import node_in_process
from kron_dynamics.errors import ConfigurationError
from kron_dynamics.identification import FourierTrajectory
from kron_dynamics.nodes.reference_generator import QuinticPath, ReferenceGenerator, sine

pytestmark = pytest.mark.ros


def generator(rclpy_context, name, *parameters):
    """Return a reference generator named ``name`` with the given ``name:=value`` parameters."""
    topics = f'/reference_test/{name}'
    return node_in_process(ReferenceGenerator, rclpy_context, name, (
        f'command_topic:={topics}/commands', *parameters), [
        f'reference:={topics}/reference', f'reference_trajectory:={topics}/reference_trajectory'])


@pytest.fixture
def excitation_file(tmp_path):
    """Write a two-harmonic excitation of joints a, b, c (2 s) and return its path."""
    trajectory = FourierTrajectory(('a', 'b', 'c'), [0.1, 0.2, 0.3],
                                   [[0.4, -0.4], [0.2, -0.2], [0.1, -0.1]],
                                   [[0.2, -0.1], [0.0, 0.0], [0.4, -0.2]], 0.5, 2.0)
    path = tmp_path / 'excitation.yaml'
    trajectory.save(path)
    return path, trajectory


def seconds(point) -> float:
    """Return a point's time_from_start [s]."""
    return point.time_from_start.sec + 1e-9 * point.time_from_start.nanosec


def refused(rclpy_context, message, *parameters):
    """Assert that a generator with these parameters is a ConfigurationError: ``message``."""
    with pytest.raises(ConfigurationError) as info:
        generator(rclpy_context, 'refused', *parameters)
    assert str(info.value) == message


def test_settings_are_refused_by_name(rclpy_context, excitation_file):
    """Each mode's parameters, the rate and the joints, with what they must be."""
    path, _ = excitation_file
    refused(rclpy_context, 'reference_generator needs the joints parameter')
    two = "joints:=['a', 'b']"
    refused(rclpy_context, "parameter mode must be 'sine', 'quintic' or 'excitation', got "
            "'circle'", two, 'mode:=circle')
    refused(rclpy_context, 'parameter amplitude must be 1 or 2 finite numbers, got '
            '[1.0, 2.0, 3.0]', two, 'amplitude:=[1.0, 2.0, 3.0]')
    refused(rclpy_context, 'parameter frequency must be 1 or 2 finite numbers, got [nan]',
            two, 'frequency:=[.nan]')
    refused(rclpy_context, 'parameter ramp_time must be >= 0', two, 'ramp_time:=-1.0')
    for waypoints in ('[0.0, 1.0]', '[0.0, 1.0, 2.0]', '[0.0, 1.0, 2.0, 3.0, 4.0]',
                      '[0.0, 1.0, .nan, 2.0]'):
        refused(rclpy_context, 'parameter waypoints must hold at least 2 rows of 2 finite '
                'numbers', two, 'mode:=quintic', f'waypoints:={waypoints}')
    refused(rclpy_context, 'parameter segment_durations must be 1 or 2 finite numbers, got '
            '[1.0, 2.0, 3.0]', two, 'mode:=quintic', 'waypoints:=[0.0, 0.0, 1.0, 1.0, 2.0, 2.0]',
            'segment_durations:=[1.0, 2.0, 3.0]')
    refused(rclpy_context, 'segment_durations must be > 0', two, 'mode:=quintic',
            'waypoints:=[0.0, 0.0, 1.0, 1.0, 2.0, 2.0]', 'segment_durations:=[1.0, 0.0]')
    refused(rclpy_context, 'parameter rate must be > 0', two, 'rate:=0.0')
    refused(rclpy_context, "mode 'excitation' needs the parameter excitation_file", two,
            'mode:=excitation')
    refused(rclpy_context, f"excitation file {path} moves joints ['a', 'b', 'c']; the parameter "
            "joints ['a', 'b', 'd'] has ['d'] that it lacks and lacks ['c']",
            "joints:=['a', 'b', 'd']", 'mode:=excitation', f'excitation_file:={path}')
    refused(rclpy_context, f"excitation file {path} moves joints ['a', 'b', 'c']; the parameter "
            "joints ['a', 'b'] lacks ['c']", two, 'mode:=excitation',
            f'excitation_file:={path}')
    refused(rclpy_context, f"excitation file {path} moves joints ['a', 'b', 'c']; the parameter "
            "joints ['a', 'b', 'c', 'e'] has ['e'] that it lacks",
            "joints:=['a', 'b', 'c', 'e']", 'mode:=excitation', f'excitation_file:={path}')


@pytest.mark.parametrize('loop', [False, True])
def test_the_excitation_is_played_by_joint_name(rclpy_context, excitation_file, loop):
    """Joints in another order than the file's; after its 2 s: repeated, or held where it began."""
    path, trajectory = excitation_file
    node = generator(rclpy_context, 'excitation', "joints:=['c', 'a', 'b']", 'mode:=excitation',
                     f'excitation_file:={path}', f'loop:={str(loop).lower()}')
    try:
        for t in (0.0, 0.3, 1.7, 2.6, 5.1):
            expected = trajectory(t % 2.0 if loop else t)
            for got, want in zip(node.trajectory(t), expected):
                np.testing.assert_array_equal(got, want[[2, 0, 1]])
        assert len(set(trajectory(0.6)[0])) == 3          # each joint moves its own way
        np.testing.assert_allclose(node.trajectory(2.6)[0], trajectory(
            0.6 if loop else 2.0)[0][[2, 0, 1]], rtol=0.0, atol=1e-12)
    finally:
        node.destroy_node()


def test_sine_and_quintic_modes_play_the_formulas_with_their_parameters(rclpy_context):
    """Mode sine with its ramp; mode quintic through the waypoints, looped."""
    node = generator(rclpy_context, 'sine', "joints:=['a', 'b']", 'offset:=[0.1, -0.2]',
                     'amplitude:=[0.5]', 'frequency:=[0.3, 0.7]', 'phase:=[0.0, 1.0]',
                     'ramp_time:=1.5')
    try:
        args = (np.array([0.1, -0.2]), np.array([0.5, 0.5]), np.array([0.3, 0.7]),
                np.array([0.0, 1.0]))
        for t in (0.0, 0.4, 1.5, 3.2):
            for got, want in zip(node.trajectory(t), sine(t, *args, ramp_time=1.5)):
                np.testing.assert_array_equal(got, want)
    finally:
        node.destroy_node()
    node = generator(rclpy_context, 'quintic', "joints:=['a', 'b']", 'mode:=quintic',
                     'waypoints:=[0.0, 0.0, 1.0, 2.0, -1.0, 0.5]',
                     'segment_durations:=[1.0, 2.0]', 'loop:=true')
    try:
        path = QuinticPath(np.array([[0.0, 0.0], [1.0, 2.0], [-1.0, 0.5]]),
                           np.array([1.0, 2.0]), True)
        for t in (0.0, 0.5, 1.0, 2.2, 4.5, 5.0, 6.3):
            for got, want in zip(node.trajectory(t), path(t)):
                np.testing.assert_array_equal(got, want)
    finally:
        node.destroy_node()


def test_the_clock_waits_for_the_first_command_and_starts_once(rclpy_context):
    """wait_for_commands: t = 0 until a command; a second command does not restart it."""
    node = generator(rclpy_context, 'waiting', "joints:=['a']", 'amplitude:=[1.0]',
                     'ramp_time:=0.0')
    try:
        assert node.start is None and node.start_ns is None
        before_ns = node.get_clock().now().nanoseconds
        node._on_command(Float64MultiArray(data=[0.0]))
        start, start_ns = node.start, node.start_ns
        assert start is not None and before_ns <= start_ns <= node.get_clock().now().nanoseconds
        node._on_command(Float64MultiArray(data=[0.0]))
        assert (node.start, node.start_ns) == (start, start_ns)
        assert node._wait not in node.subscriptions         # listens no more
    finally:
        node.destroy_node()
    node = generator(rclpy_context, 'started', "joints:=['a']", 'wait_for_commands:=false')
    try:
        assert node.start is not None and node.start_ns is not None
        assert not hasattr(node, '_wait')
    finally:
        node.destroy_node()


def test_a_point_holds_its_time_from_start_and_the_trajectory_the_clocks_start(rclpy_context):
    """The point on reference, and as a one-point trajectory stamped at the clock's start."""
    node = generator(rclpy_context, 'points', "joints:=['a', 'b']", 'amplitude:=[0.5, 0.25]',
                     'ramp_time:=0.0')
    point = node.point(2.75)
    assert (point.time_from_start.sec, point.time_from_start.nanosec) == (2, 750_000_000)
    q, qd, qdd = node.trajectory(2.75)
    assert (list(point.positions), list(point.velocities), list(point.accelerations)) == (
        q.tolist(), qd.tolist(), qdd.tolist())
    listener = Node('reference_listener', context=rclpy_context)
    points, trajectories = [], []
    listener.create_subscription(JointTrajectoryPoint, '/reference_test/points/reference',
                                 points.append, 10)
    listener.create_subscription(JointTrajectory, '/reference_test/points/reference_trajectory',
                                 trajectories.append, 10)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(listener)
    try:
        deadline = time.monotonic() + 60.0     # discovery in this process: well under that

        def receive(t_min):
            """Tick until a point and a trajectory at t >= t_min came; return them."""
            points.clear()
            trajectories.clear()
            while time.monotonic() < deadline:
                node._tick()
                executor.spin_once(timeout_sec=0.05)
                got = ([p for p in points if seconds(p) >= t_min],
                       [m for m in trajectories if seconds(m.points[0]) >= t_min])
                if got[0] and got[1]:
                    return got
            raise AssertionError(f'no reference at t >= {t_min} within 60 s')
        first_ns = node.get_clock().now().nanoseconds
        at_zero, stamped = receive(0.0)          # before the clock starts: t = 0, now
        for received in at_zero + [m.points[0] for m in stamped]:
            assert seconds(received) == 0.0 and list(received.positions) == [0.0, 0.0]
            np.testing.assert_allclose(received.velocities, [0.1 * math.pi, 0.05 * math.pi],
                                       rtol=1e-15)
        for message in stamped:
            assert list(message.joint_names) == ['a', 'b']
            stamp = message.header.stamp
            assert first_ns <= stamp.sec * 1_000_000_000 + stamp.nanosec <= (
                node.get_clock().now().nanoseconds)
        node._on_command(Float64MultiArray(data=[0.0, 0.0]))
        node.start -= 3.5                          # 3.5 s into the trajectory
        late, stamped = receive(3.5)
        for received in late + [m.points[0] for m in stamped]:
            np.testing.assert_allclose(received.positions, node.trajectory(seconds(received))[0],
                                       atol=1e-8)
        for message in stamped:
            stamp = message.header.stamp
            assert 0 <= stamp.nanosec < 1_000_000_000
            assert stamp.sec * 1_000_000_000 + stamp.nanosec == node.start_ns
    finally:
        executor.shutdown()
        listener.destroy_node()
        node.destroy_node()
