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

"""dynamics_node as a real process: topics, services, bad input, parameters, start-up errors."""

import math
import time

from kron_dynamics_interfaces.srv import GetDynamics, GetMassMatrix
import numpy as np
import pytest
from rcl_interfaces.msg import Parameter as ParameterMsg, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from rclpy.qos import DurabilityPolicy, QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from conftest import URDF_DIR
from kron_dynamics import RobotModel
from ros_harness import EVERY_STATE, NodeProcess, Probe, wait_for

pytestmark = pytest.mark.ros

STACKER = str(URDF_DIR / 'stacker.urdf')
JOINTS = ['q1_travel', 'q2_slew', 'q3_luff']
OUT = ['gravity_torque', 'bias_torque', 'mass_matrix', 'coriolis_star', 'feedforward_torque']


@pytest.fixture(scope='module')
def model():
    return RobotModel.from_urdf_file(STACKER)


@pytest.fixture(scope='module')
def graph():
    node = NodeProcess('dynamics_node', [*EVERY_STATE, '-p', f'urdf_file:={STACKER}',
                                         '-p', 'publish_coriolis_star:=true'])
    probe = Probe('dynamics_probe')
    outputs = {name: probe.collect(Float64MultiArray, f'/dynamics_node/{name}') for name in OUT}
    pub = probe.node.create_publisher(JointState, '/joint_states', 100)
    ref_pub = probe.node.create_publisher(JointTrajectoryPoint, '/dynamics_node/reference', 10)
    traj_pub = probe.node.create_publisher(JointTrajectory,
                                           '/dynamics_node/reference_trajectory', 10)
    assert wait_for(lambda: pub.get_subscription_count() > 0 and node.alive(), 30), node.stop()
    yield node, probe, outputs, pub, ref_pub, traj_pub
    probe.close()
    log = node.stop()
    print(log)


def publish_and_wait(graph, msg, expect_output=True, timeout=30.0):
    node, probe, outputs, pub, *_ = graph
    before = {k: len(v) for k, v in outputs.items()}
    pub.publish(msg)
    if expect_output:
        assert wait_for(lambda: len(outputs['bias_torque']) > before['bias_torque'], timeout)
        assert wait_for(lambda: len(outputs['mass_matrix']) > before['mass_matrix'], timeout)
        assert wait_for(lambda: len(outputs['coriolis_star']) > before['coriolis_star'],
                        timeout)
    return before


def layout(msg):
    return [(d.label, d.size, d.stride) for d in msg.layout.dim]


def test_joint_state_gives_core_values(graph, model):
    _, _, outputs, *_ = graph
    q = np.array([3.0, 0.4, -0.2])
    qd = np.array([0.5, -0.3, 0.2])
    # shuffled order plus an extra joint
    msg = JointState(name=['q3_luff', 'wheel', 'q1_travel', 'q2_slew'],
                     position=[q[2], 9.0, q[0], q[1]], velocity=[qd[2], 1.0, qd[0], qd[1]])
    before = publish_and_wait(graph, msg)
    assert wait_for(lambda: len(outputs['gravity_torque']) > before['gravity_torque'])
    G = outputs['gravity_torque'][-1]
    bias = outputs['bias_torque'][-1]
    M = outputs['mass_matrix'][-1]
    Cs = outputs['coriolis_star'][-1]
    np.testing.assert_allclose(G.data, model.gravity_torque(q), rtol=1e-12, atol=1e-6)
    np.testing.assert_allclose(bias.data, model.coriolis_star(q) @ np.kron(qd, qd)
                               + model.gravity_torque(q), rtol=1e-9, atol=1e-6)
    np.testing.assert_allclose(np.reshape(M.data, (3, 3)), model.mass_matrix(q, 'jacobian'),
                               rtol=1e-12, atol=1e-6)
    np.testing.assert_allclose(np.reshape(Cs.data, (3, 9)), model.coriolis_star(q),
                               rtol=1e-12, atol=1e-6)
    assert layout(G) == [('rows', 3, 3)]
    assert layout(M) == [('rows', 3, 9), ('cols', 3, 3)]
    assert layout(Cs) == [('rows', 3, 27), ('cols', 9, 9)]


def test_empty_velocity_means_zero(graph, model):
    _, _, outputs, *_ = graph
    q = np.array([1.0, 0.2, 0.1])
    publish_and_wait(graph, JointState(name=JOINTS, position=list(q)))
    np.testing.assert_allclose(outputs['bias_torque'][-1].data, model.gravity_torque(q),
                               atol=1e-6)


BAD_STATES = [
    JointState(name=JOINTS, position=[0.0, math.nan, 0.0]),
    JointState(name=JOINTS, position=[0.0, 0.0, 0.0], velocity=[0.0, math.inf, 0.0]),
    JointState(name=JOINTS, position=[0.0, 0.0]),
    JointState(name=JOINTS, position=[0.0, 0.0, 0.0], velocity=[0.0]),
    JointState(name=['q1_travel', 'q2_slew'], position=[0.0, 0.0]),
    JointState(name=['q1_travel', 'q1_travel', 'q2_slew', 'q3_luff'],
               position=[0.0, 0.0, 0.0, 0.0]),
    JointState(name=['a', 'b', 'c'], position=[0.0, 0.0, 0.0]),
]


def wait_for_value(outputs, expected, timeout=30.0):
    """Wait until the newest output equals expected (the answer to a marker message)."""
    return wait_for(lambda: bool(outputs) and np.allclose(outputs[-1].data, expected,
                                                          rtol=1e-9, atol=1e-9), timeout)


def test_bad_joint_states_are_rejected_and_the_node_keeps_going(graph, model):
    node, _, outputs, pub, *_ = graph
    before = {k: len(v) for k, v in outputs.items()}
    for msg in BAD_STATES:
        pub.publish(msg)
    # a valid marker last: outputs come in input order, so once its output is in, an output
    # for any bad message would be in too
    q, qd = np.array([0.5, -0.1, 0.3]), np.full(3, 0.1)
    pub.publish(JointState(name=JOINTS, position=list(q), velocity=list(qd)))
    assert wait_for_value(outputs['bias_torque'], model.bias_torque(q, qd))
    # exactly one output for the one valid message, and it is right
    assert len(outputs['bias_torque']) == before['bias_torque'] + 1
    assert wait_for(lambda: len(outputs['gravity_torque']) > before['gravity_torque'])
    np.testing.assert_allclose(outputs['gravity_torque'][-1].data, model.gravity_torque(q),
                               atol=1e-6)
    assert node.alive()
    for name in OUT:
        assert all(np.all(np.isfinite(m.data)) for m in outputs[name])


def stamped(q, stamp_ns: int) -> JointState:
    msg = JointState(name=JOINTS, position=list(q))
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
    return msg


def test_stamps_going_backwards_are_rejected(graph, model):
    _, _, outputs, pub, *_ = graph
    q = np.array([0.2, 0.1, 0.3])
    now = time.time_ns()
    publish_and_wait(graph, stamped(q, now))
    assert wait_for_value(outputs['bias_torque'], model.gravity_torque(q))
    n0 = len(outputs['bias_torque'])
    pub.publish(stamped(-q, now - 10_000_000_000))          # 10 s older: rejected
    pub.publish(stamped(2 * q, now + 1_000_000))            # the marker
    assert wait_for_value(outputs['bias_torque'], model.gravity_torque(2 * q))
    assert len(outputs['bias_torque']) == n0 + 1


def test_a_future_or_invalid_stamp_is_refused_and_blacks_nothing_out(graph, model):
    """Issue 15, item 11: one stamp ahead of the clock (or nanosec >= 1e9) is refused alone."""
    node, _, outputs, pub, *_ = graph
    q = np.array([0.4, 0.1, 0.3])
    publish_and_wait(graph, stamped(q, time.time_ns()))
    n0 = len(outputs['bias_torque'])
    pub.publish(stamped(q, time.time_ns() + 3600 * 1_000_000_000))    # an hour ahead
    bad = stamped(q, time.time_ns())
    bad.header.stamp.nanosec = 1_500_000_000
    pub.publish(bad)
    # the next valid states, right after, are answered (no 1 s blackout), each exactly once
    for k in range(3):
        publish_and_wait(graph, stamped(q + 0.01 * k, time.time_ns()))
    assert len(outputs['bias_torque']) == n0 + 3
    np.testing.assert_allclose(outputs['gravity_torque'][-1].data,
                               model.gravity_torque(q + 0.02), atol=1e-6)
    assert wait_for(lambda: 'ahead of this node' in node.output()
                    and 'nanosec must be below 1e9' in node.output(), 10), node.output()


def test_feedforward_of_references(graph, model):
    _, _, outputs, _, ref_pub, traj_pub = graph
    q, qd, qdd = np.array([1.0, 0.3, 0.1]), np.array([0.2, -0.1, 0.05]), np.array([1, 2, 3.0])
    ff = outputs['feedforward_torque']
    n0 = len(ff)
    ref_pub.publish(JointTrajectoryPoint(positions=list(q), velocities=list(qd),
                                         accelerations=list(qdd)))
    expected = (model.mass_matrix(q) @ qdd + model.coriolis_star(q) @ np.kron(qd, qd)
                + model.gravity_torque(q))
    assert wait_for_value(ff, expected) and len(ff) == n0 + 1
    ref_pub.publish(JointTrajectoryPoint(positions=[1.0, math.nan, 0.0]))    # refused
    ref_pub.publish(JointTrajectoryPoint(positions=[1.0, 0.0]))              # refused
    ref_pub.publish(JointTrajectoryPoint(positions=list(2 * q)))              # the marker
    assert wait_for_value(ff, model.gravity_torque(2 * q))
    assert len(ff) == n0 + 2, 'an output for a refused reference'
    # a named trajectory in another order: one output per point
    traj = JointTrajectory(joint_names=['q2_slew', 'q3_luff', 'q1_travel'])
    traj.points = [JointTrajectoryPoint(positions=[q[1], q[2], q[0]],
                                        velocities=[qd[1], qd[2], qd[0]],
                                        accelerations=[qdd[1], qdd[2], qdd[0]]),
                   JointTrajectoryPoint(positions=[0.0, 0.0, 0.0])]
    traj_pub.publish(traj)
    assert wait_for(lambda: len(ff) >= n0 + 4)
    assert len(ff) == n0 + 4
    np.testing.assert_allclose(ff[-2].data, expected, rtol=1e-9)
    np.testing.assert_allclose(ff[-1].data, model.gravity_torque(np.zeros(3)), atol=1e-6)


def state(names, positions, velocities=()):
    return JointState(name=list(names), position=list(positions), velocity=list(velocities))


def test_get_mass_matrix_service(graph, model):
    _, probe, *_ = graph
    q = np.array([2.0, -0.7, 0.25])
    req = GetMassMatrix.Request(state=state(['q2_slew', 'q3_luff', 'q1_travel'],
                                            [q[1], q[2], q[0]]))
    res = probe.call(GetMassMatrix, '/dynamics_node/get_mass_matrix', req)
    assert res.success, res.message
    assert list(res.joint_names) == JOINTS
    assert layout(res.mass_matrix) == [('rows', 3, 9), ('cols', 3, 3)]
    np.testing.assert_allclose(np.reshape(res.mass_matrix.data, (3, 3)), model.mass_matrix(q),
                               rtol=1e-12)


def test_get_dynamics_service(graph, model):
    _, probe, *_ = graph
    q, qd, qdd = np.array([2.0, -0.7, 0.25]), np.array([0.3, 0.1, -0.2]), np.array([1, -1, 2.0])
    order = [2, 0, 1]
    req = GetDynamics.Request(state=state([JOINTS[i] for i in order], q[order], qd[order]),
                              acceleration=list(qdd[order]))
    res = probe.call(GetDynamics, '/dynamics_node/get_dynamics', req)
    assert res.success, res.message
    assert list(res.joint_names) == JOINTS
    np.testing.assert_allclose(np.reshape(res.mass_matrix.data, (3, 3)), model.mass_matrix(q),
                               rtol=1e-12)
    np.testing.assert_allclose(np.reshape(res.coriolis_star.data, (3, 9)),
                               model.coriolis_star(q), rtol=1e-12, atol=1e-6)
    np.testing.assert_allclose(res.gravity_torque.data, model.gravity_torque(q), atol=1e-6)
    np.testing.assert_allclose(res.coriolis_vector.data, model.coriolis_vector(q, qd), atol=1e-6)
    np.testing.assert_allclose(res.torque.data, model.inverse_dynamics(q, qd, qdd), rtol=1e-12)
    assert layout(res.coriolis_star) == [('rows', 3, 27), ('cols', 9, 9)]


@pytest.mark.parametrize('req,reason', [
    (state(JOINTS + ['ghost'], [0, 0, 0, 0]), 'unknown joint'),
    (state(JOINTS[:2], [0, 0]), 'missing joint'),
    (state(JOINTS, [0, 0]), 'positions'),
    (state(JOINTS, [0, math.nan, 0]), 'non-finite position'),
    (state(JOINTS, [0, 0, 0], [0, math.inf, 0]), 'non-finite velocity'),
    (state(['q1_travel', 'q1_travel', 'q3_luff'], [0, 0, 0]), 'duplicate'),
])
def test_bad_service_requests_answer_success_false(graph, req, reason):
    node, probe, *_ = graph
    res = probe.call(GetMassMatrix, '/dynamics_node/get_mass_matrix',
                     GetMassMatrix.Request(state=req))
    assert not res.success and reason in res.message, res.message
    res = probe.call(GetDynamics, '/dynamics_node/get_dynamics', GetDynamics.Request(state=req))
    assert not res.success and reason in res.message, res.message
    bad_acc = GetDynamics.Request(state=state(JOINTS, [0, 0, 0]), acceleration=[1.0])
    res = probe.call(GetDynamics, '/dynamics_node/get_dynamics', bad_acc)
    assert not res.success and 'acceleration' in res.message
    assert node.alive()


def set_parameter(probe, name, value):
    if isinstance(value, str):
        pv = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value)
    else:
        pv = ParameterValue(type=ParameterType.PARAMETER_DOUBLE_ARRAY, double_array_value=value)
    req = SetParameters.Request(parameters=[ParameterMsg(name=name, value=pv)])
    return probe.call(SetParameters, '/dynamics_node/set_parameters', req).results[0]


def test_runtime_parameter_updates_validate_and_keep_the_old_model(graph, model):
    _, probe, outputs, *_ = graph
    result = set_parameter(probe, 'gravity', [0.0, -9.81])
    assert not result.successful and 'gravity' in result.reason
    result = set_parameter(probe, 'urdf_file', '/nonexistent/robot.urdf')
    assert not result.successful and '/nonexistent/robot.urdf' in result.reason
    q = np.array([0.0, 0.3, 0.4])
    publish_and_wait(graph, state(JOINTS, q))
    np.testing.assert_allclose(outputs['gravity_torque'][-1].data, model.gravity_torque(q),
                               atol=1e-6)
    result = set_parameter(probe, 'gravity', [0.0, 0.0, -1.62])     # the moon
    assert result.successful, result.reason
    publish_and_wait(graph, state(JOINTS, q))
    np.testing.assert_allclose(outputs['gravity_torque'][-1].data,
                               model.with_gravity([0, 0, -1.62]).gravity_torque(q), atol=1e-6)
    assert set_parameter(probe, 'gravity', [0.0, 0.0, -9.81]).successful


def test_robot_description_topic():
    node = NodeProcess('dynamics_node', [*EVERY_STATE, '-r', '__node:=dynamics_node_topic'])
    probe = Probe('description_probe')
    try:
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        desc = probe.node.create_publisher(String, '/robot_description', latched)
        out = probe.collect(Float64MultiArray, '/dynamics_node_topic/gravity_torque')
        pub = probe.node.create_publisher(JointState, '/joint_states', 10)
        desc.publish(String(data='<robot name="broken">'))   # rejected, node keeps waiting
        desc.publish(String(data=(URDF_DIR / 'rp_arm.urdf').read_text()))
        model = RobotModel.from_urdf_file(URDF_DIR / 'rp_arm.urdf')
        q = [0.3, 0.5]
        assert wait_for(lambda: pub.get_subscription_count() > 0)

        def got_output():
            pub.publish(state(['theta1', 'd2'], q))
            return len(out) > 0
        assert wait_for(got_output, 30, period=0.2), node.stop()
        np.testing.assert_allclose(out[-1].data, model.gravity_torque(q), atol=1e-9)
        # a broken description later is rejected and the good model kept
        rejected = node.output().count('rejected /robot_description')
        desc.publish(String(data='<robot name="broken"><link name="a"/></robot'))
        assert wait_for(lambda: node.output().count('rejected /robot_description') > rejected,
                        30), node.output()[-2000:]
        n0 = len(out)

        def new_output():
            pub.publish(state(['theta1', 'd2'], q))
            return len(out) > n0
        assert wait_for(new_output, 10, period=0.2)
        np.testing.assert_allclose(out[-1].data, model.gravity_torque(q), atol=1e-9)
        assert node.alive()
    finally:
        probe.close()
        node.stop()


@pytest.mark.parametrize('args,message', [
    (['-p', 'urdf_file:=/nonexistent/x.urdf'], '/nonexistent/x.urdf'),
    (['-p', f'urdf_file:={STACKER}', '-p', 'gravity:=[0.0, 9.81]'], 'gravity'),
    (['-p', f'urdf_file:={STACKER}', '-p', 'joints:=[q1_travel, nope, q3_luff]'], 'nope'),
    (['-p', 'robot_description:=<robot name="x"><link name="a"/>'], 'malformed XML'),
])
def test_bad_start_up_parameters_exit_non_zero_with_a_clear_error(args, message):
    code, out = NodeProcess('dynamics_node', args).wait(60)
    assert code != 0 and message in out, out
    assert 'Traceback' not in out
