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
dynamics_node with a floating or planar base (issue 14; real processes).

The base state comes from nav_msgs/Odometry on ~/odometry (pose in the world, twist in the
base frame), the joints from joint_states; each state is paired with the newest odometry
within odometry_timeout. Outputs have nv entries with the coordinate names in their labels,
matched by value to the library's FloatingBaseModel; the services take the base state.
"""

import time

from kron_dynamics_interfaces.srv import (GetDynamics, GetKinematics, GetLinearization,
                                          GetMassMatrix)
from nav_msgs.msg import Odometry
import numpy as np
import pytest
from rcl_interfaces.msg import Parameter as ParameterMsg, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from conftest import URDF_DIR
from kron_dynamics import Contact, RobotModel
from ros_harness import EVERY_STATE, NodeProcess, odometry, Probe, stamped_state, wait_for

pytestmark = [pytest.mark.ros, pytest.mark.slow]

GRIPPER_ARM = str(URDF_DIR / 'gripper_arm.urdf')
JOINTS = ['shoulder', 'elbow', 'left_finger_joint']
NAME = 'floating_dynamics'


BASE = ([0.3, -0.2, 0.5], np.array([0.1, -0.2, 0.3, 0.9]) / np.linalg.norm([0.1, -0.2, 0.3,
                                                                            0.9]),
        [0.2, 0.1, -0.3], [0.4, -0.5, 0.6])


@pytest.fixture(scope='module')
def node():
    process = NodeProcess('dynamics_node', [
        *EVERY_STATE,
        '-r', f'__node:={NAME}', '-p', f'urdf_file:={GRIPPER_ARM}',
        '-p', 'root_joint:=floating', '-p', 'odometry_timeout:=0.5',
        '-r', 'joint_states:=/floating/joint_states'])
    probe = Probe('floating_probe')
    outputs = {name: probe.collect(Float64MultiArray, f'/{NAME}/{name}', 1000)
               for name in ('bias_torque', 'gravity_torque', 'mass_matrix')}
    states = probe.node.create_publisher(JointState, '/floating/joint_states', 100)
    odom = probe.node.create_publisher(Odometry, f'/{NAME}/odometry', 100)
    assert wait_for(lambda: states.get_subscription_count() > 0
                    and odom.get_subscription_count() > 0, 60), process.stop()
    yield process, probe, outputs, states, odom
    probe.close()
    print(process.stop())


def send_pair(states, odom, u, ud, base=BASE, stamp_ns=None, odom_stamp_ns=None):
    """Publish one odometry message, then one joint state."""
    stamp_ns = time.time_ns() if stamp_ns is None else stamp_ns
    odom.publish(odometry(*base, stamp_ns=stamp_ns if odom_stamp_ns is None else odom_stamp_ns))
    time.sleep(0.05)      # the two topics have separate queues: odometry first
    states.publish(stamped_state(JOINTS, u, ud, stamp_ns))


def test_outputs_are_the_floating_base_dynamics_with_coordinate_names(node):
    process, _, outputs, states, odom = node
    model = RobotModel.from_urdf_file(GRIPPER_ARM, root_joint='floating')
    u, ud = np.array([0.4, -0.6, 0.02]), np.array([0.3, -0.2, 0.05])
    qb, vb = model.base_state(*BASE)
    q, v = np.concatenate([qb, u]), np.concatenate([vb, ud])
    n0 = len(outputs['mass_matrix'])
    for _ in range(600):      # until the odometry subscription has matched too
        send_pair(states, odom, u, ud)
        if wait_for(lambda: len(outputs['mass_matrix']) > n0, 0.5):
            break
    assert len(outputs['mass_matrix']) > n0, process.output()
    bias = outputs['bias_torque'][-1]
    np.testing.assert_allclose(bias.data, model.bias_torque(q, v), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(outputs['gravity_torque'][-1].data, model.gravity_torque(q),
                               rtol=1e-12, atol=1e-12)
    M = np.reshape(outputs['mass_matrix'][-1].data, (model.nv, model.nv))
    np.testing.assert_allclose(M, model.mass_matrix(q), rtol=1e-12, atol=1e-14)
    labels = bias.layout.dim[0].label.split()
    assert labels[0] == 'rows:' and tuple(labels[1:]) == model.velocity_names
    assert outputs['mass_matrix'][-1].layout.dim[1].label.split()[1:] == list(
        model.velocity_names)
    assert f'/{NAME}/odometry' in process.output()


def test_a_state_without_fresh_odometry_gets_no_output(node):
    process, _, outputs, states, odom = node
    model = RobotModel.from_urdf_file(GRIPPER_ARM, root_joint='floating')
    u, ud = np.array([0.1, 0.2, 0.01]), np.zeros(3)
    n0 = len(outputs['bias_torque'])
    # odometry older than the state by more than odometry_timeout (0.5 s): no output. Its
    # stamp is 0, so its arrival time counts (odometry going back in time is refused
    # itself); the state is sent 1 s after it, to make it stale (a wait that makes a
    # condition, not one that concludes anything)
    odom.publish(odometry(*BASE, stamp_ns=0))
    time.sleep(1.0)
    states.publish(stamped_state(JOINTS, u, ud, time.time_ns()))
    assert wait_for(lambda: 'odometry_timeout 0.5 s' in process.output(), 30), \
        process.output()
    # a marker pair after it: the next output is the marker's (same topic, in order)
    marker = np.array([0.7, 0.1, 0.0])
    send_pair(states, odom, marker, ud)
    assert wait_for(lambda: len(outputs['bias_torque']) > n0, 30), process.output()
    qb, vb = model.base_state(*BASE)
    np.testing.assert_allclose(outputs['bias_torque'][n0].data, model.bias_torque(
        np.concatenate([qb, marker]), np.concatenate([vb, ud])), rtol=1e-12, atol=1e-12)
    # odometry whose twist is not in the base frame is refused, with the reason
    odom.publish(odometry(*BASE, child='elsewhere'))
    assert wait_for(lambda: "child_frame_id 'elsewhere' is not the base link 'base_link'"
                    in process.output(), 30), process.output()


def test_services_take_the_base_state(node):
    _, probe, _, _, _ = node
    model = RobotModel.from_urdf_file(GRIPPER_ARM, root_joint='floating')
    u, ud = np.array([0.2, -0.3, 0.015]), np.array([0.1, 0.2, -0.1])
    base_acc = [0.5, -0.1, 0.2, 0.3, 0.0, -0.4]
    qdd = np.array([1.0, -1.0, 0.5])
    qb, vb = model.base_state(*BASE)
    q, v = np.concatenate([qb, u]), np.concatenate([vb, ud])
    state = JointState(name=JOINTS[::-1], position=list(u[::-1]), velocity=list(ud[::-1]))
    base = odometry(*BASE)
    res = probe.call(GetDynamics, f'/{NAME}/get_dynamics', GetDynamics.Request(
        state=state, acceleration=list(qdd[::-1]), base=base, base_acceleration=base_acc))
    assert res.success, res.message
    assert tuple(res.joint_names) == model.velocity_names
    np.testing.assert_allclose(res.torque.data, model.inverse_dynamics(
        q, v, np.concatenate([base_acc, qdd])), rtol=1e-12, atol=1e-12)
    res = probe.call(GetDynamics, f'/{NAME}/get_dynamics', GetDynamics.Request(
        state=state, base=base, base_acceleration=[1.0]))
    assert not res.success and 'request.base_acceleration must be empty or 6' in res.message
    res = probe.call(GetMassMatrix, f'/{NAME}/get_mass_matrix',
                     GetMassMatrix.Request(state=state, base=base))
    assert res.success, res.message
    np.testing.assert_allclose(np.reshape(res.mass_matrix.data, (model.nv, model.nv)),
                               model.mass_matrix(q), rtol=1e-12, atol=1e-14)
    res = probe.call(GetKinematics, f'/{NAME}/get_kinematics', GetKinematics.Request(
        state=state, link='hand', frame='local', base=base))
    assert res.success, res.message
    np.testing.assert_allclose(np.reshape(res.jacobian.data, (6, model.nv)),
                               model.jacobian(q, 'hand', frame='local'), rtol=1e-12,
                               atol=1e-14)
    np.testing.assert_allclose(res.jacobian_dot_qd.data, model.jacobian_derivative_times_velocity(
        q, v, 'hand', frame='local'), rtol=1e-12, atol=1e-12)
    T = model.link_pose(q, 'hand')
    p = res.pose.pose.position
    np.testing.assert_allclose([p.x, p.y, p.z], T[:3, 3], rtol=1e-12, atol=1e-14)
    assert res.pose.header.frame_id == 'odom'
    tau = np.array([2.0, -1.0, 0.5])                # the joints' efforts (request order)
    effort_state = JointState(name=JOINTS[::-1], position=list(u[::-1]),
                              velocity=list(ud[::-1]), effort=list(tau[::-1]))
    res = probe.call(GetLinearization, f'/{NAME}/get_linearization',
                     GetLinearization.Request(state=effort_state, base=base, dt=0.01))
    assert res.success, res.message
    A, B = model.linearize(q, v, np.concatenate([np.zeros(6), tau]), 0.01)
    nv = model.nv
    np.testing.assert_allclose(np.reshape(res.a.data, (2 * nv, 2 * nv)), A, rtol=1e-10,
                               atol=1e-10)
    np.testing.assert_allclose(np.reshape(res.b.data, (2 * nv, model.n)), B, rtol=1e-10,
                               atol=1e-12)
    assert list(res.state_names[:nv]) == [f'position/{c}' for c in model.velocity_names]
    assert list(res.input_names) == list(model.joint_names)
    # in contact: the hand held on a surface, 5 cm along its z axis
    res = probe.call(GetLinearization, f'/{NAME}/get_linearization', GetLinearization.Request(
        state=effort_state, base=base, dt=0.01, contact_links=['hand'],
        contact_points=[0.0, 0.0, 0.05], contact_dims=[6]))
    assert res.success, res.message
    A, B = model.linearize(q, v, np.concatenate([np.zeros(6), tau]), 0.01,
                           contacts=[Contact('hand', (0.0, 0.0, 0.05), dim=6)])
    np.testing.assert_allclose(np.reshape(res.a.data, (2 * nv, 2 * nv)), A, rtol=1e-10,
                               atol=1e-10)
    np.testing.assert_allclose(np.reshape(res.b.data, (2 * nv, model.n)), B, rtol=1e-10,
                               atol=1e-12)
    for fields, words in (({'contact_links': ['hand'], 'contact_dims': [4]},
                           "request.contact_dims[0] ('hand') must be 3"),
                          ({'contact_links': ['hand'], 'contact_points': [0.0, 1.0]},
                           'request.contact_points must be empty or 3 numbers per contact'),
                          ({'contact_dims': [3]}, 'need request.contact_links'),
                          ({'contact_links': ['paw']}, "unknown link 'paw'")):
        res = probe.call(GetLinearization, f'/{NAME}/get_linearization',
                         GetLinearization.Request(state=effort_state, base=base, **fields))
        assert not res.success and words in res.message, res.message
    unit = odometry(*BASE)
    unit.pose.pose.orientation.w = 3.0
    res = probe.call(GetMassMatrix, f'/{NAME}/get_mass_matrix',
                     GetMassMatrix.Request(state=state, base=unit))
    # the same check and words as for ~/odometry
    assert not res.success and 'request.base: orientation is not a unit quaternion' \
        in res.message


def test_root_joint_switches_to_a_planar_base_at_run_time(node):
    process, probe, outputs, states, odom = node
    request = SetParameters.Request(parameters=[ParameterMsg(
        name='root_joint', value=ParameterValue(type=ParameterType.PARAMETER_STRING,
                                                string_value='planar'))])
    try:
        result = probe.call(SetParameters, f'/{NAME}/set_parameters', request).results[0]
        assert result.successful, result.reason
        model = RobotModel.from_urdf_file(GRIPPER_ARM, root_joint='planar')
        u, ud = np.array([0.3, 0.3, 0.01]), np.array([0.0, 0.1, 0.0])
        qb, vb = model.base_state(*BASE)
        expected = model.bias_torque(np.concatenate([qb, u]), np.concatenate([vb, ud]))
        assert expected.shape == (3 + 3,)
        assert wait_for(lambda: (send_pair(states, odom, u, ud), wait_for(
            lambda: outputs['bias_torque'] and len(outputs['bias_torque'][-1].data) == 6
            and np.allclose(outputs['bias_torque'][-1].data, expected, rtol=1e-12,
                            atol=1e-12), 0.5))[1], 60), process.output()
        request.parameters[0].value.string_value = 'sideways'
        result = probe.call(SetParameters, f'/{NAME}/set_parameters', request).results[0]
        assert not result.successful and 'parameter root_joint must be one of' in result.reason
    finally:
        request.parameters[0].value.string_value = 'floating'
        assert probe.call(SetParameters, f'/{NAME}/set_parameters',
                          request).results[0].successful


def test_solo12_from_odometry_and_joint_states_agrees_with_pinocchio():
    """
    A real quadruped (example-robot-data's solo12) on a free-flying base, against Pinocchio.

    The node is fed what a legged robot's state estimator and joint_state_broadcaster
    publish: nav_msgs/Odometry (pose in the odom frame, twist in the base frame) and the
    twelve joints by name, in an order of their own. Its bias torque (C(q, v) v + G),
    gravity torque and mass matrix must be Pinocchio's nonLinearEffects,
    computeGeneralizedGravity and crba with JointModelFreeFlyer, mapped by name.
    """
    import pinocchio as pin     # a declared test dependency (requirements.txt): no skip
    from pinocchio_oracle import PinPair, robots_dir

    directory = robots_dir()
    assert directory is not None, 'example-robot-data (requirements.txt) is not installed'
    urdf = str(directory / 'solo_description/robots/solo12.urdf')
    name = 'solo12_dynamics'
    model = RobotModel.from_urdf_file(urdf, root_joint='floating')
    pair = PinPair(model, pin.buildModelFromUrdf(urdf, pin.JointModelFreeFlyer()))
    pm, pd, P = pair.pm, pair.pd, pair.P
    rng = np.random.default_rng(12)
    joints = list(model.joint_names)
    u, ud = rng.uniform(-1.0, 1.0, model.n), rng.uniform(-2.0, 2.0, model.n)
    quat = rng.normal(size=4)
    base = ([0.1, -0.3, 0.35], quat / np.linalg.norm(quat), [0.4, -0.2, 0.1],
            [0.3, 0.5, -0.6])
    # Pinocchio's free flyer: (position, quaternion xyzw, joints), (twist in the base frame)
    pq = pair.q(np.concatenate([base[0], base[1], u]))
    pv = pair.v(np.concatenate([base[2], base[3], ud]))
    M = pin.crba(pm, pd, pq)
    M = P.T @ (np.triu(M) + np.triu(M, 1).T) @ P
    bias = P.T @ pin.nonLinearEffects(pm, pd, pq, pv)
    gravity = P.T @ pin.computeGeneralizedGravity(pm, pd, pq)
    process = NodeProcess('dynamics_node', [
        *EVERY_STATE,
        '-r', f'__node:={name}', '-p', f'urdf_file:={urdf}', '-p', 'root_joint:=floating',
        '-r', 'joint_states:=/solo12/joint_states'])
    probe = Probe('solo12_probe')
    try:
        outputs = {topic: probe.collect(Float64MultiArray, f'/{name}/{topic}', 100)
                   for topic in ('bias_torque', 'gravity_torque', 'mass_matrix')}
        states = probe.node.create_publisher(JointState, '/solo12/joint_states', 10)
        odom = probe.node.create_publisher(Odometry, f'/{name}/odometry', 10)
        assert wait_for(lambda: states.get_subscription_count() > 0
                        and odom.get_subscription_count() > 0, 60), process.output()
        order = rng.permutation(model.n)
        # joint states before any odometry: refused, saying why, and nothing published
        for _ in range(600):
            states.publish(stamped_state([joints[i] for i in order], u[order], ud[order],
                                         time.time_ns()))
            if wait_for(lambda: 'no odometry yet' in process.output(), 0.5):
                break
        assert 'no odometry yet' in process.output(), process.output()
        assert not any(outputs.values()), 'an output without a base state'
        for _ in range(600):      # until the odometry subscription has matched too
            stamp = time.time_ns()
            odom.publish(odometry(*base, stamp_ns=stamp, child=model.base_link))
            time.sleep(0.05)
            states.publish(stamped_state([joints[i] for i in order], u[order], ud[order],
                                         stamp))
            if wait_for(lambda: outputs['mass_matrix'], 0.5):
                break
        assert outputs['mass_matrix'], process.output()
        scale = max(1.0, float(np.max(np.abs(M))))
        got = np.reshape(outputs['mass_matrix'][-1].data, (model.nv, model.nv))
        assert np.max(np.abs(got - M)) / scale < 1e-9
        for topic, expected in (('bias_torque', bias), ('gravity_torque', gravity)):
            got = np.asarray(outputs[topic][-1].data)
            err = np.max(np.abs(got - expected)) / max(1.0, float(np.max(np.abs(expected))))
            assert err < 1e-9, (topic, err)
            assert outputs[topic][-1].layout.dim[0].label.split()[1:] == list(
                model.velocity_names)
    finally:
        probe.close()
        print(process.stop())


def test_the_controller_takes_the_arm_on_a_held_base_only():
    code, out = NodeProcess('computed_torque_controller', [
        '-p', f'urdf_file:={GRIPPER_ARM}', '-p', 'root_joint:=floating']).wait(60)
    assert code == 1 and 'has a floating base' in out and "set root_joint to 'fixed'" in out
    assert 'Traceback' not in out
