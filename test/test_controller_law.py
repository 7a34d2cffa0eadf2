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
The computed-torque controller's law on a real node in this process (no graph, no clock).

test_controller_node.py closes the loop through DDS; these pin what it cannot reach in a
few seconds: a torque offset alone is fed forward, a feed-forward beyond the effort limits
is clamped, and negative gains are refused.
"""

import numpy as np
import pytest
from rclpy.parameter import Parameter

from conftest import node_in_process, URDF_DIR
from kron_dynamics import RobotModel
from kron_dynamics.nodes.computed_torque_controller import ComputedTorqueController

pytestmark = pytest.mark.ros

RP_ARM = str(URDF_DIR / 'rp_arm.urdf')


def controller(rclpy_context, name, *parameters):
    """Return a controller of the RP arm with the given ``name:=value`` parameters."""
    return node_in_process(ComputedTorqueController, rclpy_context, name, (
        f'urdf_file:={RP_ARM}', 'command_topic:=/law_test/commands', *parameters))


def test_a_torque_offset_alone_is_fed_forward(rclpy_context):
    """torque_offset without viscous or Coulomb friction: still added to every command."""
    node = controller(rclpy_context, 'offset_only', 'torque_offset:=[0.5, -0.25]')
    try:
        assert node.friction(np.zeros(2)).tolist() == [0.5, -0.25]
        q, qd = np.array([0.3, 0.1]), np.zeros(2)
        node._set_reference(q, qd, np.zeros(2), 0)
        model = RobotModel.from_urdf_file(RP_ARM)
        np.testing.assert_allclose(node.control(q, qd, 0),
                                   model.gravity_torque(q) + [0.5, -0.25], rtol=1e-12)
    finally:
        node.destroy_node()


def test_a_feed_forward_beyond_the_effort_limits_is_clamped(rclpy_context):
    """A reference acceleration no actuator can give: the command is the clamped feed-forward."""
    node = controller(rclpy_context, 'clamped_feed_forward')
    try:
        q, qd = np.array([0.3, 0.1]), np.zeros(2)
        node._set_reference(q, qd, np.array([1e6, -1e6]), 0)
        model = RobotModel.from_urdf_file(RP_ARM)
        tau0 = model.inverse_dynamics(q, qd, np.array([1e6, -1e6]))
        assert np.all(np.abs(tau0) > model.effort_limits)
        tau = node.control(q, qd, 0)
        np.testing.assert_array_equal(tau, np.clip(tau0, -model.effort_limits,
                                                   model.effort_limits))
        assert node.counts['clamped'] == 1
    finally:
        node.destroy_node()


def test_bad_gains_and_durations_are_refused_and_the_watchdog_follows(rclpy_context):
    """Gains kp >= 0 and kd > 0, durations > 0, at run time as at start-up; the old ones kept."""
    node = controller(rclpy_context, 'gains', 'kp:=[50.0, 40.0]', 'kd:=[10.0, 12.0]')
    try:
        for name, value in (('kp', [-1.0, 40.0]), ('kd', [0.0, 12.0]), ('kd', [10.0, -1.0])):
            result = node.set_parameters([Parameter(name, value=value)])[0]
            assert not result.successful and result.reason == (
                'parameters kp must be >= 0 and kd > 0'), (name, value, result.reason)
        assert node.kp.tolist() == [50.0, 40.0] and node.kd.tolist() == [10.0, 12.0]
        assert node.set_parameters([Parameter('kp', value=[0.0, 1.0])])[0].successful
        assert node.kp.tolist() == [0.0, 1.0]
        for name, value, reason in (
                ('max_approach_velocity', [0.0], 'parameter max_approach_velocity must be > 0'),
                ('max_approach_velocity', [1.0, -1.0],
                 'parameter max_approach_velocity must be > 0'),
                ('state_timeout', 0.0, 'parameter state_timeout must be > 0'),
                ('state_timeout', float('inf'), 'parameter state_timeout must be > 0'),
                ('max_reference_age', -0.01, 'parameter max_reference_age must be >= 0'),
                ('max_reference_age', float('nan'), 'parameter max_reference_age must be >= 0')):
            result = node.set_parameters([Parameter(name, value=value)])[0]
            assert (result.successful, result.reason) == (False, reason), (name, value)
        assert node.timeout == 0.1 and node.max_reference_age == 0.02
        # a shorter state_timeout: the watchdog looks four times per timeout (at most 50 ms)
        assert node._watchdog_timer.timer_period_ns == 25_000_000
        assert node.set_parameters([Parameter('state_timeout', value=0.02)])[0].successful
        assert node._watchdog_timer.timer_period_ns == 5_000_000
        assert node.set_parameters([Parameter('state_timeout', value=1.0)])[0].successful
        assert node._watchdog_timer.timer_period_ns == 50_000_000
    finally:
        node.destroy_node()
    with pytest.raises(Exception, match='parameters kp must be >= 0 and kd > 0'):
        controller(rclpy_context, 'negative_at_start', 'kp:=[-5.0]')


def test_the_watchdog_stops_once_per_stall(rclpy_context):
    """A state older than state_timeout: one stop (its zero command), none again until fresh."""
    node = controller(rclpy_context, 'watchdog')
    try:
        node._watchdog()
        assert not node.stale and node.counts['stale_stops'] == 0   # no state yet: nothing
        node.last_state_time = node.stamp_clock.now_ns() - 1_000_000_000     # 1 s ago
        node._watchdog()
        node._watchdog()
        assert node.stale and node.counts['stale_stops'] == 1
        node.last_state_time = node.stamp_clock.now_ns()
        node.stale = False                                    # a fresh state was answered
        node._watchdog()
        assert not node.stale and node.counts['stale_stops'] == 1
    finally:
        node.destroy_node()
