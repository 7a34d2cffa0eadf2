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

"""dynamics_node as a real process: ~/get_kinematics, ~/get_linearization, ~/external_wrench."""

import math

from geometry_msgs.msg import WrenchStamped
from kron_dynamics_interfaces.srv import GetKinematics, GetLinearization, GetMassMatrix
import numpy as np
import pytest
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from scipy.spatial.transform import Rotation
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectoryPoint

from conftest import URDF_DIR
from kron_dynamics import RobotModel
from model_helpers import fitted_files
from ros_harness import EVERY_STATE, NodeProcess, Probe, wait_for

pytestmark = pytest.mark.ros

STACKER = str(URDF_DIR / 'stacker.urdf')
JOINTS = ['q1_travel', 'q2_slew', 'q3_luff']


@pytest.fixture(scope='module')
def model():
    return RobotModel.from_urdf_file(STACKER)


@pytest.fixture(scope='module')
def graph():
    node = NodeProcess('dynamics_node', [
        *EVERY_STATE, '-r', '__node:=kin_node', '-p', f'urdf_file:={STACKER}',
        '-p', 'publish_mass_matrix:=false'])
    probe = Probe('kinematics_probe')
    bias = probe.collect(Float64MultiArray, '/kin_node/bias_torque')
    ff = probe.collect(Float64MultiArray, '/kin_node/feedforward_torque')
    states = probe.node.create_publisher(JointState, '/joint_states', 100)
    refs = probe.node.create_publisher(JointTrajectoryPoint, '/kin_node/reference', 10)
    wrenches = probe.node.create_publisher(WrenchStamped, '/kin_node/external_wrench', 10)
    assert wait_for(lambda: states.get_subscription_count() > 0
                    and wrenches.get_subscription_count() > 0 and node.alive(), 30), node.stop()
    yield node, probe, bias, ff, states, refs, wrenches
    probe.close()
    print(node.stop())


def state(q, qd=()):
    return JointState(name=list(JOINTS), position=list(q), velocity=list(qd))


def wrench(frame, values):
    msg = WrenchStamped()
    msg.header.frame_id = frame
    f, t = msg.wrench.force, msg.wrench.torque
    f.x, f.y, f.z, t.x, t.y, t.z = (float(v) for v in values)
    return msg


def request(q, qd, link, point=(), frame=''):
    return GetKinematics.Request(state=state(q, qd), link=link, point=list(point), frame=frame)


def layout(msg):
    return [(d.label, d.size, d.stride) for d in msg.layout.dim]


@pytest.mark.parametrize('frame', ['', 'local', 'world', 'local_world_aligned'])
def test_get_kinematics_answers_pose_jacobian_and_velocity_term(graph, model, frame):
    _, probe, *_ = graph
    q, qd = np.array([2.0, -0.7, 0.25]), np.array([0.3, 0.1, -0.2])
    point = (-17.0, 0.5, 0.0)
    res = probe.call(GetKinematics, '/kin_node/get_kinematics',
                     request(q, qd, 'link3', point, frame))
    assert res.success, res.message
    assert list(res.joint_names) == JOINTS
    name = frame or 'local_world_aligned'
    J = model.jacobian(q, 'link3', point, name)
    np.testing.assert_allclose(np.reshape(res.jacobian.data, (6, 3)), J, rtol=1e-12, atol=1e-12)
    assert layout(res.jacobian) == [('rows', 6, 18), ('cols', 3, 3)]
    np.testing.assert_allclose(res.jacobian_dot_qd.data,
                               model.jacobian_derivative(q, qd, 'link3', point, name) @ qd,
                               rtol=1e-12, atol=1e-12)
    T = model.link_pose(q, 'link3')
    p = res.pose.pose.position
    np.testing.assert_allclose([p.x, p.y, p.z], T[:3, 3] + T[:3, :3] @ point, atol=1e-12)
    o = res.pose.pose.orientation
    np.testing.assert_allclose(Rotation.from_quat([o.x, o.y, o.z, o.w]).as_matrix(),
                               T[:3, :3], atol=1e-12)
    assert res.pose.header.frame_id == model.root_link


def test_get_kinematics_of_the_link_origin_in_the_default_frame(graph, model):
    _, probe, *_ = graph
    q = np.array([1.0, 0.2, -0.1])
    res = probe.call(GetKinematics, '/kin_node/get_kinematics', request(q, (), 'link2'))
    assert res.success, res.message
    np.testing.assert_allclose(np.reshape(res.jacobian.data, (6, 3)),
                               np.vstack(model.jacobians(q, 'link2')), atol=1e-12)
    np.testing.assert_allclose(res.jacobian_dot_qd.data, 0.0)       # qd = 0


@pytest.mark.parametrize('req, reason', [
    (request([0, 0, 0], (), 'nope'), "request.link: unknown link 'nope'; links are"),
    (request([0, 0, 0], (), 'link3', frame='base'), "frame must be one of"),
    (request([0, 0, 0], (), 'link3', point=(1.0, 2.0)), 'request.point must be empty or 3'),
    (request([0, 0, 0], (), 'link3', point=(1.0, math.nan, 0.0)), 'point must be finite'),
    (request([0, math.nan, 0], (), 'link3'), 'non-finite position'),
    (request([0, 0], (), 'link3'), 'positions'),
])
def test_bad_kinematics_requests_answer_success_false(graph, req, reason):
    node, probe, *_ = graph
    res = probe.call(GetKinematics, '/kin_node/get_kinematics', req)
    assert not res.success and reason in res.message, res.message
    assert node.alive()


def test_external_wrench_enters_bias_and_feedforward_as_minus_J_transpose_F(graph, model):
    node, probe, bias, ff, states, refs, wrenches = graph
    q, qd = np.array([0.5, 0.3, 0.2]), np.array([0.1, -0.2, 0.3])
    F = np.array([1e4, -2e3, 5e4, 1e3, 2e5, -3e4])     # a payload on the boom tip frame

    def bias_becomes(expected):
        def check():
            states.publish(state(q, qd))
            return bool(bias) and np.allclose(bias[-1].data, expected, rtol=1e-9, atol=1e-6)
        return wait_for(check, 20, period=0.05)

    plain = model.bias_torque(q, qd)
    J = model.jacobian(q, 'link3', frame='local')
    with_wrench = plain - J.T @ F
    # the same as inverse dynamics with the wrench in root axes at the link origin
    R = model.link_pose(q, 'link3')[:3, :3]
    f_ext = {'link3': np.concatenate([R @ F[:3], R @ F[3:]])}
    np.testing.assert_allclose(with_wrench,
                               model.inverse_dynamics(q, qd, np.zeros(3), f_ext=f_ext),
                               rtol=1e-10)
    assert bias_becomes(plain), node.output()
    wrenches.publish(wrench('link3', F))
    assert bias_becomes(with_wrench), node.output()
    qdd = np.array([0.5, -1.0, 2.0])
    n0 = len(ff)
    refs.publish(JointTrajectoryPoint(positions=list(q), velocities=list(qd),
                                      accelerations=list(qdd)))
    assert wait_for(lambda: len(ff) > n0)
    np.testing.assert_allclose(ff[-1].data, model.inverse_dynamics(q, qd, qdd) - J.T @ F,
                               rtol=1e-9)
    # bad wrenches are refused with a clear error and the last good one stays
    wrenches.publish(wrench('no_such_link', F))
    wrenches.publish(wrench('', F))
    wrenches.publish(wrench('link3', [math.nan, 0, 0, 0, 0, 0]))
    assert wait_for(lambda: "frame 'no_such_link' is not a link of model" in node.output()
                    and 'header.frame_id is empty' in node.output()
                    and "wrench on 'link3' is not finite" in node.output()), node.output()
    assert bias_becomes(with_wrench)
    # a link that a fixed joint welds to its body, turned against the body's frame
    F1 = np.array([-3e3, 4e3, 1e3, 5e2, -2e3, 1e3])
    assert not np.allclose(model.link_pose(q, 'link1'), model.link_pose(q, 'link1_base'))
    wrenches.publish(wrench('link1', F1))
    assert bias_becomes(plain - model.jacobian(q, 'link1', frame='local').T @ F1)
    # a zero wrench replaces it
    wrenches.publish(wrench('link2', np.zeros(6)))
    assert bias_becomes(plain)
    assert node.alive()


def test_external_wrench_times_out_when_asked():
    node = NodeProcess('dynamics_node', [
        *EVERY_STATE, '-r', '__node:=kin_timeout', '-p',
        f'urdf_file:={STACKER}', '-p',
        'external_wrench_timeout:=0.3'])
    probe = Probe('timeout_probe')
    try:
        model = RobotModel.from_urdf_file(STACKER)
        bias = probe.collect(Float64MultiArray, '/kin_timeout/bias_torque')
        states = probe.node.create_publisher(JointState, '/joint_states', 10)
        wrenches = probe.node.create_publisher(WrenchStamped, '/kin_timeout/external_wrench',
                                               10)
        assert wait_for(lambda: states.get_subscription_count() > 0
                        and wrenches.get_subscription_count() > 0, 30), node.stop()
        q = np.array([0.0, 0.4, 0.3])
        F = np.array([0, 0, -5e4, 0, 0, 0])
        plain = model.bias_torque(q, np.zeros(3))
        loaded = plain - model.jacobian(q, 'link3', frame='local').T @ F

        def seen(expected, resend_wrench):
            def check():
                if resend_wrench:
                    wrenches.publish(wrench('link3', F))
                states.publish(state(q))
                return bool(bias) and np.allclose(bias[-1].data, expected, rtol=1e-9)
            return wait_for(check, 20, period=0.05)
        assert seen(loaded, True), node.output()      # applied while it keeps coming
        assert seen(plain, False), node.output()      # dropped once it stops
        assert wait_for(lambda: 'is no longer applied' in node.output())
    finally:
        probe.close()
        node.stop()


def test_bad_external_wrench_timeout_stops_the_node():
    code, out = NodeProcess('dynamics_node', [
        *EVERY_STATE, '-p', f'urdf_file:={STACKER}', '-p',
        'external_wrench_timeout:=-1.0']).wait(60)
    assert code != 0 and 'external_wrench_timeout must be a finite number >= 0' in out, out
    assert 'Traceback' not in out


@pytest.mark.parametrize('dt', [0.0, 0.002])
def test_get_linearization_answers_the_models_a_and_b(graph, model, dt):
    """~/get_linearization: (A, B) of RobotModel.linearize, named rows; bad requests named."""
    _, probe, *_ = graph
    q, qd = np.array([2.0, -0.7, 0.25]), np.array([0.3, 0.1, -0.2])
    tau = model.gravity_torque(q) + np.array([1e3, -2e4, 5e4])
    msg = state(q, qd)
    msg.effort = list(tau)
    res = probe.call(GetLinearization, '/kin_node/get_linearization',
                     GetLinearization.Request(state=msg, dt=dt))
    assert res.success, res.message
    A, B = model.linearize(q, qd, tau, dt or None)
    np.testing.assert_allclose(np.reshape(res.a.data, (6, 6)), A, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.reshape(res.b.data, (6, 3)), B, rtol=1e-12, atol=1e-15)
    assert layout(res.a) == [('rows', 6, 36), ('cols', 6, 6)]
    assert layout(res.b) == [('rows', 6, 18), ('cols', 3, 3)]
    assert list(res.state_names) == ([f'position/{j}' for j in JOINTS]
                                     + [f'velocity/{j}' for j in JOINTS])
    assert list(res.input_names) == JOINTS
    msg.effort = []
    res = probe.call(GetLinearization, '/kin_node/get_linearization',
                     GetLinearization.Request(state=msg, dt=dt))
    assert not res.success and '3 names but 0 efforts' in res.message, res.message
    msg.effort = list(tau)
    res = probe.call(GetLinearization, '/kin_node/get_linearization',
                     GetLinearization.Request(state=msg, dt=-1.0))
    assert not res.success and 'request.dt' in res.message, res.message


def test_the_rover_arm_linearises_with_the_armature_parameter():
    """dynamics_node had no armature: the rover arm's singular M gave no linearisation."""
    rover = URDF_DIR / 'rover_arm.urdf'
    node = NodeProcess('dynamics_node', ['-r', '__node:=arm_node', '-p', f'urdf_file:={rover}',
                                         '-p', 'publish_mass_matrix:=false'])
    probe = Probe('armature_probe')

    def set_armature(values):
        value = ParameterValue(type=ParameterType.PARAMETER_DOUBLE_ARRAY,
                               double_array_value=values)
        request = SetParameters.Request(parameters=[Parameter(name='armature', value=value)])
        return probe.call(SetParameters, '/arm_node/set_parameters', request).results[0]

    def call(service, request_type, **fields):
        return probe.call(service, f'/arm_node/{request_type}', service.Request(**fields))

    try:
        model = RobotModel.from_urdf_file(rover)
        rng = np.random.default_rng(5)
        q, qd = rng.uniform(-1.0, 1.0, 5), rng.uniform(-1.0, 1.0, 5)
        tau = model.gravity_torque(q) + rng.uniform(-5.0, 5.0, 5)
        msg = JointState(name=list(model.joint_names), position=list(q), velocity=list(qd),
                         effort=list(tau))
        res = call(GetLinearization, 'get_linearization', state=msg)
        assert not res.success and 'joint3' in res.message, res.message
        assert 'armature' in res.message, res.message
        for armature in ([1e-3], [1e-3, 2e-3, 3e-3, 4e-3, 5e-3]):
            result = set_armature(armature)
            assert result.successful, result.reason
            armed = model.with_armature(armature if len(armature) > 1 else armature[0])
            res = call(GetLinearization, 'get_linearization', state=msg, dt=0.0)
            assert res.success, res.message
            A, B = armed.linearize(q, qd, tau)
            np.testing.assert_allclose(np.reshape(res.a.data, (10, 10)), A, rtol=1e-9,
                                       atol=1e-9 * np.abs(A).max())
            np.testing.assert_allclose(np.reshape(res.b.data, (10, 5)), B, rtol=1e-9,
                                       atol=1e-9 * np.abs(B).max())
            res = call(GetMassMatrix, 'get_mass_matrix', state=msg)
            assert res.success, res.message
            np.testing.assert_allclose(np.reshape(res.mass_matrix.data, (5, 5)),
                                       armed.mass_matrix(q), rtol=1e-12, atol=1e-15)
        # refused with the reason, the last armature kept
        for bad, words in (([1e-3, 1e-3], 'shape (5,)'), ([-1.0], '>= 0'), ([], 'one value')):
            result = set_armature(bad)
            assert not result.successful and 'armature' in result.reason, result.reason
            assert words in result.reason, result.reason
        res = call(GetMassMatrix, 'get_mass_matrix', state=msg)
        np.testing.assert_allclose(np.reshape(res.mass_matrix.data, (5, 5)),
                                   armed.mass_matrix(q), rtol=1e-12, atol=1e-15)
    finally:
        probe.close()
        log = node.stop()
    assert 'Traceback' not in log, log


def test_an_identifications_params_file_gives_the_dynamics_node_its_model(tmp_path):
    """to_params wrote armature for the controller only; the dynamics node's M lacked it."""
    prior = RobotModel.from_urdf_file(STACKER).with_armature([30.0, 20.0, 10.0])
    fit, params, urdf = fitted_files(prior, tmp_path, samples=100, seed=6)
    assert list(fit.model.armature) == [30.0, 20.0, 10.0]       # the prior's, kept
    node = NodeProcess('dynamics_node', ['-r', '__node:=fitted_node', '-p',
                                         f'urdf_file:={urdf}', '--params-file', str(params)])
    probe = Probe('fitted_probe')
    try:
        q0 = np.array([1.0, 0.4, -0.3])
        res = probe.call(GetMassMatrix, '/fitted_node/get_mass_matrix',
                         GetMassMatrix.Request(state=state(q0)))
        assert res.success, res.message
        M = fit.model.mass_matrix(q0)       # the fitted URDF reloads to 1e-9
        np.testing.assert_allclose(np.reshape(res.mass_matrix.data, (3, 3)), M, rtol=1e-9,
                                   atol=1e-9 * np.abs(M).max())
        assert np.abs(M - fit.model.with_armature(0.0).mass_matrix(q0)).max() == 30.0
    finally:
        probe.close()
        node.stop()
