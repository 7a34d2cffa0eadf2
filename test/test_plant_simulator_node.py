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
The plant simulator's steps on a real node in this process (no graph, no clock waits).

test_node_faults.py and test_controller_node.py run it as a process on the graph; these pin
what they reach only by chance in a few seconds: which commands are refused or saturated,
a step that fails, the brakes, the cap on steps per tick, the stamp of the state and the
clock offset behind it, and settings refused by name with the old ones kept. Time is moved
by setting the node's start back, never by waiting.
"""

import math
import time

import numpy as np
import pytest
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from conftest import node_in_process, URDF_DIR
from kron_dynamics import ModelError, RobotModel
from kron_dynamics.errors import ConfigurationError
from kron_dynamics.nodes.plant_simulator import (CLOCK_READ_NS, CLOCK_STEP_NS,
                                                 MAX_STEPS_PER_TICK, PlantSimulator)

pytestmark = pytest.mark.ros

RP_ARM = str(URDF_DIR / 'rp_arm.urdf')
Q0, QD0 = np.array([0.3, 0.5]), np.array([0.2, 0.1])


def plant(rclpy_context, name, *parameters, urdf=RP_ARM):
    """Return a plant of the RP arm (at Q0, QD0) with the given ``name:=value`` parameters."""
    return node_in_process(PlantSimulator, rclpy_context, name, (
        f'urdf_file:={urdf}', f'command_topic:=/plant_test/{name}/commands',
        'initial_positions:=[0.3, 0.5]', 'initial_velocities:=[0.2, 0.1]', *parameters),
        [f'joint_states:=/plant_test/{name}/joint_states'])


@pytest.fixture(scope='module')
def model():
    """Return the RP arm the plants simulate."""
    return RobotModel.from_urdf_file(RP_ARM)


def test_commands_are_refused_by_length_and_finiteness_and_saturated_at_the_limits(
        rclpy_context):
    """A refused command leaves the held one; one beyond the 50 N / N m limits is clipped."""
    node = plant(rclpy_context, 'commands')
    try:
        for data in ([1.0], [1.0, 2.0, 3.0], [1.0, math.nan], [math.inf, 0.0]):
            node._on_command(Float64MultiArray(data=data))
        assert node.counts['rejected_commands'] == 4 and node.counts['commands'] == 0
        assert node.last_command is None and node.tau.tolist() == [0.0, 0.0]
        node._on_command(Float64MultiArray(data=[10.0, -20.0]))
        assert node.tau.tolist() == [10.0, -20.0] and node.last_command is not None
        node._on_command(Float64MultiArray(data=[-50.0, 50.0]))      # at the limits
        assert node.tau.tolist() == [-50.0, 50.0] and node.counts['saturated'] == 0
        node._on_command(Float64MultiArray(data=[80.0, -50.5]))
        assert node.tau.tolist() == [50.0, -50.0]
        node._on_command(Float64MultiArray(data=[1.0, 2.0, 3.0]))   # refused: 50, -50 held
        assert node.tau.tolist() == [50.0, -50.0]
        assert node.counts == {'steps': 0, 'commands': 3, 'rejected_commands': 5,
                               'saturated': 1, 'failed_steps': 0}
    finally:
        node.destroy_node()


def test_a_step_integrates_the_held_torque_with_damping_and_a_failed_one_is_undone(
        rclpy_context, model):
    """RobotModel.simulate's RK4 with the damping; an overflow: state held, braked, counted."""
    node = plant(rclpy_context, 'steps', 'damping:=[0.5, 2.0]', 'integration_rate:=500.0')
    try:
        assert node.dt == 1.0 / 500.0
        tau = np.array([1.0, -2.0])
        node.step(tau, 7)
        q, qd = model.simulate(Q0, QD0, tau, 1.0 / 500.0, 7, damping=np.array([0.5, 2.0]))
        np.testing.assert_array_equal(node.q, q)
        np.testing.assert_array_equal(node.qd, qd)
        assert node.counts['steps'] == 7 and node.sim_time == pytest.approx(7 / 500.0)
        cause = node._cause(ValueError('the state became non-finite'), np.array([1e300, 0.0]))
        assert cause.startswith('the state overflowed within the step: at its start max '
                                f'|velocity| {np.abs(qd).max():.3g} and max |acceleration| ')
        assert cause.endswith(' over dt 0.002 s (torques too large for the time step?)')
        node.step(np.array([1e300, 0.0]), 3)
        assert node.counts['failed_steps'] == 1 and node.counts['steps'] == 10
        np.testing.assert_array_equal(node.q, q)                       # where it was
        assert node.qd.tolist() == [0.0, 0.0]                          # braked
        assert node.sim_time == pytest.approx(10 / 500.0)              # time went on
        # the start state's own dynamics overflow (qdd inf), or the state itself is bad
        assert node._cause(ValueError('y'), np.array([1e308, 1e308])) == 'y'
        node.q = np.array([math.nan, 0.0])
        assert node._cause(ValueError('x'), np.zeros(2)) == 'x'
    finally:
        node.destroy_node()


def test_brakes_hold_the_plant_without_fresh_commands_and_a_fresh_one_moves_it(
        rclpy_context, model):
    """on_command_timeout brake: no command, or one older than command_timeout, holds q."""
    node = plant(rclpy_context, 'brakes', 'command_timeout:=60.0')   # a busy machine's stall
    try:
        node._tick()                                     # the first tick starts the clock
        assert node.start is not None and node.counts['steps'] == 0
        node.start -= 0.05                               # 50 steps due
        node._tick()
        assert node.counts['steps'] == 0 and node.sim_time >= 0.05 - 1e-9
        np.testing.assert_array_equal(node.q, Q0)
        assert node.qd.tolist() == [0.0, 0.0]
        node._on_command(Float64MultiArray(data=[3.0, -4.0]))
        node.start -= 0.02
        q, sim_time = node.q.copy(), node.sim_time
        node._tick()
        steps = node.counts['steps']
        assert steps >= 19, steps                  # 20 due (one lost to rounding at most)
        assert node.sim_time == pytest.approx(sim_time + steps * node.dt)
        np.testing.assert_array_equal(node.q, model.simulate(q, np.zeros(2), np.array(
            [3.0, -4.0]), node.dt, steps)[0])
        node.last_command = time.monotonic() - 61.0      # older than command_timeout
        node.start -= 0.02
        q = node.q.copy()
        node._tick()
        assert node.counts['steps'] == steps
        np.testing.assert_array_equal(node.q, q)
        assert node.qd.tolist() == [0.0, 0.0]
    finally:
        node.destroy_node()


def test_zero_mode_moves_under_zero_effort_and_a_tick_never_takes_more_than_its_cap(
        rclpy_context, model):
    """on_command_timeout zero: gravity moves it; 10 s behind: MAX_STEPS_PER_TICK, time dropped."""
    node = plant(rclpy_context, 'zero_mode', 'on_command_timeout:=zero')
    try:
        assert node.brake is False
        node._tick()
        node.start -= 0.03
        node._tick()
        steps = node.counts['steps']
        assert steps >= 29, steps
        q, qd = model.simulate(Q0, QD0, np.zeros(2), node.dt, steps)
        np.testing.assert_array_equal(node.q, q)
        np.testing.assert_array_equal(node.qd, qd)
        node._on_command(Float64MultiArray(data=[40.0, 40.0]))
        node.last_command = time.monotonic() - 1.0        # stale: zero effort, not 40
        node.start -= 0.03
        q, qd, steps = node.q.copy(), node.qd.copy(), node.counts['steps']
        node._tick()
        q, qd = model.simulate(q, qd, np.zeros(2), node.dt, node.counts['steps'] - steps)
        np.testing.assert_array_equal(node.q, q)
        np.testing.assert_array_equal(node.qd, qd)
        steps = node.counts['steps']
        node.start -= 10.0                        # 10,000 steps due
        start = node.start
        node._tick()
        assert node.counts['steps'] == steps + MAX_STEPS_PER_TICK
        # the rest of the lag dropped: real time, not accuracy. The start moves on by the
        # steps not taken, at least 10,000 - 1 (rounding) - MAX_STEPS_PER_TICK of them
        assert node.start - start >= (10_000 - 1 - MAX_STEPS_PER_TICK) * node.dt - 1e-9
    finally:
        node.destroy_node()


def test_a_published_state_is_stamped_with_its_simulated_instant(rclpy_context):
    """Stamp = clock offset + start + sim_time; names, q, q' and the effort held, by name."""
    node = plant(rclpy_context, 'stamps', 'on_command_timeout:=zero', 'command_timeout:=60.0')
    node._tick()             # the clock's first instant (there, the stamp is the wall time)
    listener = Node('plant_stamp_listener', context=rclpy_context)
    received = []
    listener.create_subscription(JointState, '/plant_test/stamps/joint_states', received.append,
                                 10)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(listener)
    try:
        deadline = time.monotonic() + 60.0      # discovery in this process: well under that

        def receive():
            """Tick until a state comes; return it and the node's state at its stamp."""
            received.clear()
            expected = {}
            while not received and time.monotonic() < deadline:
                node._tick()
                stamp = node._offset_ns + round((node.start + node.sim_time) * 1e9)
                expected[stamp] = (node.q.tolist(), node.qd.tolist())
                executor.spin_once(timeout_sec=0.05)
            assert received, 'no joint_states within 60 s'
            msg = received[0]
            assert 0 <= msg.header.stamp.nanosec < 1_000_000_000
            stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
            assert stamp in expected, (stamp, sorted(expected))
            assert list(msg.name) == ['theta1', 'd2']
            assert (list(msg.position), list(msg.velocity)) == tuple(expected[stamp])
            return msg
        node._on_command(Float64MultiArray(data=[2.0, -1.0]))
        assert list(receive().effort) == [2.0, -1.0]
        node.last_command = time.monotonic() - 61.0      # stale: the effort applied is zero
        assert list(receive().effort) == [0.0, 0.0]
    finally:
        executor.shutdown()
        listener.destroy_node()
        node.destroy_node()


def test_the_clock_offset_is_kept_within_a_step_and_read_again_after_a_clock_set(
        rclpy_context):
    """The node clock minus time.monotonic(): constant unless it moved by over CLOCK_STEP_NS."""
    node = plant(rclpy_context, 'clock_offset')
    try:
        reads = []
        while len(reads) < 200 or min(reads)[0] > CLOCK_READ_NS:   # until one was quick
            before = time.monotonic_ns()
            clock = node.get_clock().now().nanoseconds
            after = time.monotonic_ns()
            reads.append((after - before, clock - (before + after) // 2))
        width, offset = min(reads)               # the offset itself, from the quickest read
        node._offset_ns = offset + CLOCK_STEP_NS // 3     # within a step of the clock: kept
        for _ in range(100):
            assert node._clock_offset_ns() == offset + CLOCK_STEP_NS // 3
        node._offset_ns = offset + 10 * CLOCK_STEP_NS      # the clock was set
        real = time.monotonic_ns
        reads = iter(range(10))
        with pytest.MonkeyPatch.context() as patch:       # each read preempted for 1 ms
            patch.setattr(time, 'monotonic_ns', lambda: real() + 1_000_000 * (next(reads) % 2))
            for _ in range(5):
                assert node._clock_offset_ns() == offset + 10 * CLOCK_STEP_NS   # not taken
        # read again
        for _ in range(10_000):                            # a preempted read is not taken
            if node._clock_offset_ns() != offset + 10 * CLOCK_STEP_NS:
                break
        assert abs(node._offset_ns - offset) <= CLOCK_READ_NS + width
    finally:
        node.destroy_node()


def test_settings_are_refused_by_name_and_the_old_ones_kept(rclpy_context):
    """Damping >= 0 per joint, 0 < command_timeout < inf, brake or zero; at start-up too."""
    node = plant(rclpy_context, 'settings', 'damping:=[0.5]', 'command_timeout:=1.5',
                 'on_command_timeout:=zero')
    try:
        assert node.damping.tolist() == [0.5, 0.5] and node.command_timeout == 1.5
        assert node.brake is False
        for name, value, reason in (
                ('damping', [-1.0, 0.0], 'parameter damping must be >= 0'),
                ('damping', [1.0, 2.0, 3.0],
                 'parameter damping must be 1 or 2 finite numbers, got [1.0, 2.0, 3.0]'),
                ('damping', [math.nan], 'parameter damping must be 1 or 2 finite numbers'),
                ('command_timeout', 0.0, 'parameter command_timeout must be > 0'),
                ('command_timeout', -1.0, 'parameter command_timeout must be > 0'),
                ('command_timeout', math.inf, 'parameter command_timeout must be > 0'),
                ('on_command_timeout', 'hold',
                 "parameter on_command_timeout must be 'brake' or 'zero', got 'hold'")):
            result = node.set_parameters([Parameter(name, value=value)])[0]
            assert not result.successful and result.reason.startswith(reason), result.reason
        assert node.damping.tolist() == [0.5, 0.5] and node.command_timeout == 1.5
        assert node.brake is False
        assert node.set_parameters([Parameter('damping', value=[0.0, 3.0])])[0].successful
        assert node.damping.tolist() == [0.0, 3.0] and node.brake is False   # mode kept
        assert node.set_parameters([Parameter('command_timeout', value=0.25)])[0].successful
        assert node.command_timeout == 0.25 and node.damping.tolist() == [0.0, 3.0]
        assert node.set_parameters([Parameter('on_command_timeout',
                                              value='brake')])[0].successful
        assert node.brake is True and node.command_timeout == 0.25
    finally:
        node.destroy_node()
    for parameter, message in (
            ('integration_rate:=0.0', 'parameters integration_rate and publish_rate must be > 0'),
            ('publish_rate:=-1.0', 'parameters integration_rate and publish_rate must be > 0'),
            ('damping:=[-0.5]', 'parameter damping must be >= 0'),
            ('initial_positions:=[1.0, 2.0, 3.0]',
             'parameter initial_positions must be 1 or 2 finite numbers')):
        with pytest.raises(ConfigurationError, match=f'^{message}'.replace('[', r'\[')):
            plant(rclpy_context, 'bad_settings', parameter)


def test_a_plant_whose_m_is_singular_is_refused_naming_the_armature(rclpy_context, tmp_path):
    """A joint that moves no inertia: forward dynamics undefined; set the armature parameter."""
    urdf = tmp_path / 'massless.urdf'
    urdf.write_text(
        '<robot name="massless"><link name="base"/><link name="a"><inertial><mass value="1"/>'
        '<inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
        '<link name="tip"/>'
        '<joint name="j1" type="revolute"><parent link="base"/><child link="a"/>'
        '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
        '<joint name="j2" type="revolute"><parent link="a"/><child link="tip"/>'
        '<origin xyz="1 0 0"/><axis xyz="1 0 0"/>'
        '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>')
    with pytest.raises(ModelError, match=r'\(set the armature parameter\)$'):
        plant(rclpy_context, 'singular', 'inertia_check:=warn', urdf=str(urdf))
    node = plant(rclpy_context, 'armature', 'inertia_check:=warn', 'armature:=[0.01]',
                 urdf=str(urdf))
    node.destroy_node()
