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
dynamics_node's callbacks on a real node in this process (no node process).

The node tests (test_dynamics_node*.py) send messages through DDS to a node process and
watch its outputs; these call the callbacks with real messages, message by message, and pin
what a model swap must forget and what a parameter keeps: the stamps both guards accepted
for the old model, the 'odometry is not used' line said once per model, a URDF on
/robot_description while a parameter names one; and the checks the process tests missed.
Where an output must be seen, a ros_harness.Probe (a subscriber node of its own) takes it.
"""

from geometry_msgs.msg import WrenchStamped
from kron_dynamics_interfaces.srv import GetDynamics, GetLinearization, GetMassMatrix
from nav_msgs.msg import Odometry
import numpy as np
import pytest
from rclpy.parameter import Parameter
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from conftest import node_in_process, URDF_DIR
from kron_dynamics import RobotModel
from kron_dynamics.nodes.dynamics_node import DynamicsNode
from ros_harness import odometry, Probe, stamped_state, wait_for

pytestmark = pytest.mark.ros

RP_ARM = str(URDF_DIR / 'rp_arm.urdf')
GRIPPER_ARM = str(URDF_DIR / 'gripper_arm.urdf')
LEVEL = ([0.0, 0.0, 0.5], [0.0, 0.0, 0.0, 1.0], [0.0] * 3, [0.0] * 3)


def dynamics_node(rclpy_context, name, *parameters):
    """Return a dynamics_node of this process with the given ``name:=value`` parameters."""
    node = node_in_process(DynamicsNode, rclpy_context, name, parameters)
    # a stream counts as restarted after restart_s without an accepted message, and then
    # takes any stamp: far longer than these tests, so that an old stamp is refused
    node._stamps.restart_s = node._odometry_stamps.restart_s = 600.0
    return node


def send_state(node, joints, stamp_ns):
    """Answer one joint state (serialized, as the subscription takes it) at zero q and q'."""
    node._answer_state(serialize_message(stamped_state(joints, [0.0] * len(joints),
                                                       [0.0] * len(joints), stamp_ns)))


def test_a_model_swap_forgets_the_stamp_the_old_model_accepted(rclpy_context):
    """A state older than the last one is refused; after a swap the new model takes it."""
    node = dynamics_node(rclpy_context, 'swap_stamps', f'urdf_file:={RP_ARM}')
    try:
        now = node.get_clock().now().nanoseconds
        joints = list(node._active[0].joint_names)
        send_state(node, joints, now - 1_000_000_000)
        send_state(node, joints, now - 2_000_000_000)     # goes back: refused
        assert node.counts == {'accepted': 1, 'rejected': 1}
        assert node.set_parameters([Parameter('gravity', value=[0.0, 0.0, -1.62])])[0] \
            .successful                                   # a new model: the Moon's gravity
        send_state(node, joints, now - 2_000_000_000)
        assert node.counts == {'accepted': 2, 'rejected': 1}
    finally:
        node.destroy_node()


def test_a_model_swap_forgets_the_odometry_stamp_the_old_model_accepted(rclpy_context):
    """The same for ~/odometry of a floating base: its stamp guard starts again."""
    node = dynamics_node(rclpy_context, 'swap_odometry_stamps', f'urdf_file:={GRIPPER_ARM}',
                         'root_joint:=floating')
    try:
        now = node.get_clock().now().nanoseconds
        node._on_odometry(odometry(*LEVEL, stamp_ns=now - 1_000_000_000))
        assert node._odometry[0] == now - 1_000_000_000
        node._on_odometry(odometry(*LEVEL, stamp_ns=now - 2_000_000_000))     # goes back
        assert node._odometry[0] == now - 1_000_000_000
        assert node.set_parameters([Parameter('gravity', value=[0.0, 0.0, -1.62])])[0] \
            .successful
        assert node._odometry is None                     # the old model's: dropped
        node._on_odometry(odometry(*LEVEL, stamp_ns=now - 2_000_000_000))
        assert node._odometry is not None and node._odometry[0] == now - 2_000_000_000
    finally:
        node.destroy_node()


def test_odometry_on_a_fixed_base_is_said_unused_once_per_model(rclpy_context, capfd):
    """A stream of odometry to a fixed base: one line, and one again for the next model."""
    node = dynamics_node(rclpy_context, 'unused_odometry', f'urdf_file:={RP_ARM}')
    line = 'odometry: the active model has a fixed base (or there is none yet)'
    try:
        for _ in range(3):
            node._on_odometry(Odometry())
        assert capfd.readouterr().err.count(line) == 1
        assert node.set_parameters([Parameter('urdf_file', value=GRIPPER_ARM)])[0].successful
        for _ in range(3):
            node._on_odometry(Odometry())
        assert capfd.readouterr().err.count(line) == 1
        assert node._odometry is None
    finally:
        node.destroy_node()


def test_a_urdf_on_the_topic_waits_while_a_parameter_names_one(rclpy_context, capfd):
    """urdf_file set: /robot_description is kept for later, the model stays the file's."""
    node = dynamics_node(rclpy_context, 'topic_waits', f'urdf_file:={RP_ARM}')
    try:
        with open(GRIPPER_ARM) as f:
            gripper = f.read()
        wrench = WrenchStamped()
        wrench.header.frame_id = node._active[0].link_names[-1]
        node._on_external_wrench(wrench)
        active = node._active
        node._on_description(String(data=gripper))
        # not even the parameter's model again: nothing of the running one is dropped
        assert node._active is active and node._wrench is not None
        assert node._topic_urdf == gripper
        assert ('URDF received on /robot_description; not used while the parameter '
                'robot_description or urdf_file is set') in capfd.readouterr().err
        # emptied, the parameter gives way to the URDF the topic sent
        assert node.set_parameters([Parameter('urdf_file', value='')])[0].successful
        assert node._active[0].name == 'gripper_arm'
    finally:
        node.destroy_node()


def test_emptying_the_urdf_parameters_without_a_topic_urdf_keeps_the_model(rclpy_context):
    """No URDF on /robot_description yet: the change is refused, the model kept, not lost."""
    node = dynamics_node(rclpy_context, 'keep_model', f'urdf_file:={RP_ARM}')
    try:
        result = node.set_parameters([Parameter('urdf_file', value='')])[0]
        assert (result.successful, result.reason) == (False, (
            'robot_description and urdf_file empty, and no valid URDF has been received on '
            '/robot_description: keeping the current model'))
        assert node._active[0].name == 'rp_arm'
        assert node.get_parameter('urdf_file').value == RP_ARM
    finally:
        node.destroy_node()


def test_a_state_stamped_0_has_its_stamped_outputs_stamped_with_its_arrival(rclpy_context):
    """publish_stamped: the input's stamp, or the node's clock when the input has none."""
    node = dynamics_node(rclpy_context, 'stamp_zero', f'urdf_file:={RP_ARM}')
    probe = Probe('stamp_zero_listener')
    received = probe.collect(JointState, '/stamp_zero/bias_torque_stamped', 1000)
    try:
        assert wait_for(lambda: node._pub_bias_stamped.get_subscription_count() > 0, 60)
        joints = list(node._active[0].joint_names)
        before = node.get_clock().now().nanoseconds
        send_state(node, joints, 0)
        after = node.get_clock().now().nanoseconds
        send_state(node, joints, before - 5_000_000_000)
        assert wait_for(lambda: len(received) >= 2, 60), len(received)
        first, second = received[:2]
        stamp = first.header.stamp.sec * 1_000_000_000 + first.header.stamp.nanosec
        assert before <= stamp <= after and first.name == joints
        assert (second.header.stamp.sec * 1_000_000_000 + second.header.stamp.nanosec
                == before - 5_000_000_000)
    finally:
        probe.close()
        node.destroy_node()


def test_a_queued_trajectory_goes_out_without_the_torque_of_the_external_wrench(
        rclpy_context):
    """~/reference_trajectory's chunks, as ~/reference: tau - J^T F of the current wrench."""
    node = dynamics_node(rclpy_context, 'chunk_wrench', f'urdf_file:={RP_ARM}')
    probe = Probe('chunk_wrench_listener')
    received = probe.collect(Float64MultiArray, '/chunk_wrench/feedforward_torque', 1000)
    try:
        assert wait_for(lambda: node._pub_ff.publisher.get_subscription_count() > 0, 60)
        model = RobotModel.from_urdf_file(RP_ARM)
        link = model.link_names[-1]
        wrench = WrenchStamped()
        wrench.header.frame_id = link
        wrench.wrench.force.x, wrench.wrench.torque.z = 3.0, -0.5
        node._on_external_wrench(wrench)
        assert node._wrench is not None and node._wrench[0] == link
        rng = np.random.default_rng(3)
        points = rng.uniform(-1, 1, (3, 3, model.n))      # (point, q / qd / qdd, joint)
        trajectory = JointTrajectory(joint_names=list(model.joint_names), points=[
            JointTrajectoryPoint(positions=q.tolist(), velocities=qd.tolist(),
                                 accelerations=qdd.tolist()) for q, qd, qdd in points])
        node._on_reference_trajectory(serialize_message(trajectory))
        node._next_trajectory_chunk()          # the timer's call: the 3 points, at once
        F = np.array([3.0, 0.0, 0.0, 0.0, 0.0, -0.5])
        assert wait_for(lambda: len(received) >= 3, 60), len(received)
        for msg, (q, qd, qdd) in zip(received, points):
            expected = (model.inverse_dynamics(q, qd, qdd)
                        - model.jacobian(q, link, None, 'local').T @ F)
            np.testing.assert_allclose(msg.data, expected, rtol=1e-12, atol=1e-12)
        assert not node._trajectories
    finally:
        probe.close()
        node.destroy_node()


def test_a_joint_state_needs_odometry_within_odometry_timeout_by_stamps_or_arrivals(
        rclpy_context, capfd):
    """Both stamped: their stamps; a state stamped 0: the arrival times (one clock)."""
    node = dynamics_node(rclpy_context, 'odometry_gap', f'urdf_file:={GRIPPER_ARM}',
                         'root_joint:=floating', 'odometry_timeout:=5.0')
    try:
        joints = list(node._active[0].joint_names)
        now = node.get_clock().now().nanoseconds
        node._on_odometry(odometry(*LEVEL, stamp_ns=now - 20_000_000_000))  # arrives now
        send_state(node, joints, now)
        assert node.counts == {'accepted': 0, 'rejected': 1}
        assert ('rejected: joint_states: the newest odometry is 20.000 s from this state '
                '(odometry_timeout 5 s); no output for it') in capfd.readouterr().err
        send_state(node, joints, now - 16_000_000_000)      # 4 s from the odometry: taken
        send_state(node, joints, 0)      # no stamp: arrived moments after the odometry
        assert node.counts == {'accepted': 2, 'rejected': 1}
    finally:
        node.destroy_node()


def answer(node, service, callback, **fields):
    """Return the response of a service callback of the node to a request with fields."""
    request = service.Request()
    for name, value in fields.items():
        setattr(request, name, value)
    return callback(request, service.Response())


def test_a_fixed_base_takes_requests_whose_base_is_left_as_it_is(rclpy_context):
    """request.base and request.base_acceleration of a fixed base: refused unless default."""
    node = dynamics_node(rclpy_context, 'fixed_requests', f'urdf_file:={RP_ARM}')
    try:
        joints = list(node._active[0].joint_names)
        state = stamped_state(joints, [0.3, 0.1], [0.0, 0.0], 0)
        moved = odometry(*LEVEL, stamp_ns=0, child='')
        moved.header.frame_id = ''
        named = Odometry(child_frame_id='base_link')
        for service, callback in ((GetMassMatrix, node._get_mass_matrix),
                                  (GetDynamics, node._get_dynamics)):
            for base in (moved, named):
                response = answer(node, service, callback, state=state, base=base)
                assert (response.success, response.message) == (False, (
                    "request.base: model 'rp_arm' has a fixed base; leave base as it is by "
                    'default')), service
            assert answer(node, service, callback, state=state).success
        response = answer(node, GetDynamics, node._get_dynamics, state=state,
                          base_acceleration=[0.0] * 6)
        assert (response.success, response.message) == (False, (
            "request.base_acceleration: model 'rp_arm' has a fixed base; leave it empty (got "
            '6 numbers)'))
    finally:
        node.destroy_node()


def test_a_linearization_request_names_missing_efforts_and_a_bad_time_step(rclpy_context):
    """One effort per joint (the torques to linearise about), dt 0 (continuous) or > 0."""
    node = dynamics_node(rclpy_context, 'linearization_requests', f'urdf_file:={RP_ARM}')
    model = RobotModel.from_urdf_file(RP_ARM)
    try:
        q, tau = np.array([0.3, 0.1]), np.array([1.0, -2.0])
        state = stamped_state(model.joint_names, q, [0.0, 0.0], 0)
        response = answer(node, GetLinearization, node._get_linearization, state=state)
        assert (response.success, response.message) == (False, (
            'request.state: 2 names but 0 efforts (the torques to linearise about, one per '
            'joint)'))
        state.effort = tau.tolist()
        for dt in (-0.01, float('nan'), float('inf')):
            response = answer(node, GetLinearization, node._get_linearization, state=state,
                              dt=dt)
            assert (response.success, response.message) == (False, (
                f'request.dt must be 0 (continuous) or a time step > 0, got {dt}')), dt
        for dt in (0.0, 0.01):
            response = answer(node, GetLinearization, node._get_linearization, state=state,
                              dt=dt)
            A, B = model.linearize(q, np.zeros(2), tau, dt or None)
            assert response.success, response.message
            np.testing.assert_allclose(np.reshape(response.a.data, A.shape), A, rtol=1e-12,
                                       atol=1e-12)
            np.testing.assert_allclose(np.reshape(response.b.data, B.shape), B, rtol=1e-12,
                                       atol=1e-12)
    finally:
        node.destroy_node()
