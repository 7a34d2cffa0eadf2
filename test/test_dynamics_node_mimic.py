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
dynamics_node on a URDF with mimic joints, and its inertia_check parameter (real processes).

joint_state_broadcaster publishes every joint, mimic ones included: the node reads the
independent joints by name, ignores the mimic entries (whatever their values) and publishes
the constrained system's quantities in independent-joint order.
"""

from kron_dynamics_interfaces.srv import GetDynamics
import numpy as np
import pytest
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from conftest import TEST_DIR, URDF_DIR
from kron_dynamics import RobotModel
from ros_harness import EVERY_STATE, NodeProcess, Probe, wait_for

pytestmark = pytest.mark.ros

GRIPPER_ARM = str(URDF_DIR / 'gripper_arm.urdf')
JOINTS = ['shoulder', 'elbow', 'left_finger_joint']
NON_PHYSICAL = str(TEST_DIR / 'urdf_corpus' / 'inertia_triangle_violation.urdf')


@pytest.fixture(scope='module')
def graph():
    node = NodeProcess('dynamics_node', [
        *EVERY_STATE, '-p', f'urdf_file:={GRIPPER_ARM}'])
    probe = Probe('mimic_probe')
    outputs = {name: probe.collect(Float64MultiArray, f'/dynamics_node/{name}')
               for name in ('bias_torque', 'gravity_torque', 'mass_matrix')}
    pub = probe.node.create_publisher(JointState, '/joint_states', 100)
    assert wait_for(lambda: pub.get_subscription_count() > 0 and node.alive(), 30), node.stop()
    yield node, probe, outputs, pub
    probe.close()
    print(node.stop())


def test_joint_states_with_mimic_entries_give_the_constrained_dynamics(graph):
    node, probe, outputs, pub = graph
    model = RobotModel.from_urdf_file(GRIPPER_ARM)
    assert list(model.joint_names) == JOINTS
    u, ud = np.array([0.4, -0.6, 0.02]), np.array([0.3, -0.2, 0.05])
    # every joint, as joint_state_broadcaster publishes them, shuffled; the mimic entries are
    # deliberately inconsistent with the constraint: they are not inputs
    names = ['right_finger_joint', 'elbow', 'flap_joint', 'left_finger_joint', 'shoulder']
    msg = JointState(name=names, position=[0.5, u[1], 9.0, u[2], u[0]],
                     velocity=[1.0, ud[1], -3.0, ud[2], ud[0]])
    n0 = len(outputs['mass_matrix'])
    pub.publish(msg)
    assert wait_for(lambda: len(outputs['mass_matrix']) > n0, 10), node.output()
    np.testing.assert_allclose(outputs['bias_torque'][-1].data, model.bias_torque(u, ud),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(outputs['gravity_torque'][-1].data, model.gravity_torque(u),
                               rtol=1e-12, atol=1e-12)
    M = np.reshape(outputs['mass_matrix'][-1].data, (3, 3))
    np.testing.assert_allclose(M, model.mass_matrix(u), rtol=1e-12, atol=1e-15)
    assert node.alive()
    assert "mimic joint 'right_finger_joint' = 1 * 'left_finger_joint' + 0.002" in node.output()


def test_service_accepts_the_mimic_names_and_answers_in_independent_order(graph):
    _, probe, _, _ = graph
    model = RobotModel.from_urdf_file(GRIPPER_ARM)
    u, ud, udd = np.array([0.1, 0.2, 0.01]), np.array([0.0, 0.5, 0.0]), np.array([1.0, 0, 0])
    state = JointState(name=['flap_joint', *JOINTS[::-1]], position=[0.0, *u[::-1]],
                       velocity=[0.0, *ud[::-1]])
    res = probe.call(GetDynamics, '/dynamics_node/get_dynamics',
                     GetDynamics.Request(state=state,
                                         acceleration=[0.0, *udd[::-1]]))
    assert res.success, res.message
    assert list(res.joint_names) == JOINTS
    np.testing.assert_allclose(res.torque.data, model.inverse_dynamics(u, ud, udd), rtol=1e-12)
    missing = JointState(name=['right_finger_joint', 'shoulder', 'elbow'], position=[0, 0, 0])
    res = probe.call(GetDynamics, '/dynamics_node/get_dynamics',
                     GetDynamics.Request(state=missing))
    assert not res.success and "missing joint(s) ['left_finger_joint']" in res.message


def test_panda_with_its_hand_agrees_with_pinocchio_mimic_model():
    """
    example-robot-data's Panda: the hand's second finger mimics the first (Franka's URDF).

    Fed every joint, as joint_state_broadcaster publishes them (the mimic finger included),
    the node's outputs must be Pinocchio's with its mimic model (buildModelFromUrdf(path,
    True)), in independent-joint order.
    """
    import pinocchio as pin     # a declared test dependency (requirements.txt): no skip
    import pinocchio_oracle

    directory = pinocchio_oracle.robots_dir()
    assert directory is not None, 'example-robot-data (requirements.txt) is not installed'
    urdf = str(directory / 'panda_description/urdf/panda.urdf')
    name = 'panda_dynamics'
    model = RobotModel.from_urdf_file(urdf)
    assert set(model.mimic_joints) == {'panda_finger_joint2'}
    rng = np.random.default_rng(3)
    u, ud = next(iter(pinocchio_oracle.random_states(model, rng, 1)))[:2]
    ref = pinocchio_oracle.dynamics(pin, pin.buildModelFromUrdf(urdf, True),
                                    model.joint_names, u, ud, np.zeros(model.n))
    B, d = model.coupling()
    names, q, qd = list(model.full_joint_names), B @ u + d, B @ ud
    order = rng.permutation(len(names))
    node = NodeProcess('dynamics_node', [
        *EVERY_STATE, '-r', f'__node:={name}', '-p', f'urdf_file:={urdf}',
        '-r', 'joint_states:=/panda/joint_states'])
    probe = Probe('panda_probe')
    try:
        outputs = {topic: probe.collect(Float64MultiArray, f'/{name}/{topic}')
                   for topic in ('bias_torque', 'gravity_torque', 'mass_matrix')}
        pub = probe.node.create_publisher(JointState, '/panda/joint_states', 10)
        assert wait_for(lambda: pub.get_subscription_count() > 0, 60), node.output()
        pub.publish(JointState(name=[names[i] for i in order], position=list(q[order]),
                               velocity=list(qd[order])))
        assert wait_for(lambda: outputs['mass_matrix'], 30), node.output()
        got = {'M': np.reshape(outputs['mass_matrix'][-1].data, (model.n, model.n)),
               'G': np.asarray(outputs['gravity_torque'][-1].data),
               'tau': np.asarray(outputs['bias_torque'][-1].data)}     # q'' = 0: C q' + G
        for key, value in got.items():
            error = pinocchio_oracle.relative_error(value, ref[key])
            assert error < 1e-9, (key, error)
    finally:
        probe.close()
        print(node.stop())


def test_inertia_check_parameter():
    code, out = NodeProcess('dynamics_node', [
        *EVERY_STATE, '-p', f'urdf_file:={NON_PHYSICAL}']).wait(60)
    assert code != 0 and "inertia_check='warn'" in out and "link 'link2'" in out, out
    code, out = NodeProcess('dynamics_node', [
        *EVERY_STATE, '-p', f'urdf_file:={NON_PHYSICAL}',
        '-p', 'inertia_check:=maybe']).wait(60)
    assert code != 0 and 'parameter inertia_check must be one of' in out, out
    assert 'Traceback' not in out
    node = NodeProcess('dynamics_node', [
        *EVERY_STATE, '-p', f'urdf_file:={NON_PHYSICAL}',
        '-p', 'inertia_check:=warn',
        '-r', '__node:=dynamics_node_warn'])
    probe = Probe('warn_probe')
    try:
        model = RobotModel.from_urdf_file(NON_PHYSICAL, inertia_check='warn')
        out = probe.collect(Float64MultiArray, '/dynamics_node_warn/gravity_torque')
        pub = probe.node.create_publisher(JointState, '/joint_states', 10)
        q = np.full(model.n, 0.2)

        def got_output():
            pub.publish(JointState(name=list(model.joint_names), position=list(q)))
            return len(out) > 0
        assert wait_for(got_output, 30, period=0.2), node.stop()
        np.testing.assert_allclose(out[-1].data, model.gravity_torque(q), rtol=1e-12)
        assert "link 'link2'" in node.output() and "inertia_check='warn'" in node.output()
    finally:
        probe.close()
        node.stop()
