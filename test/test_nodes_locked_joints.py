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
The parameters locked_joints and locked_positions of every node (real processes).

A gripper held shut, or the joints an identification of a subset left out: the nodes
compute with the joints welded at those coordinates (RobotModel.from_urdf_file(locked=...),
itself checked against Pinocchio's buildReducedModel in test_reduced_models), ignore the
locked joints' joint_states entries, and the simulator publishes them, held still.
"""

from kron_dynamics_interfaces.srv import GetDynamics, GetMassMatrix
import numpy as np
import pytest
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters, SetParametersAtomically
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from conftest import URDF_DIR
from kron_dynamics import RobotModel
from model_helpers import fitted_files
from pinocchio_oracle import robots_dir
from ros_harness import EVERY_STATE, NodeProcess, Probe, wait_for

pytestmark = pytest.mark.ros

GRIPPER_ARM = str(URDF_DIR / 'gripper_arm.urdf')
HAND = {'left_finger_joint': 0.02}          # right_finger_joint mimics it: locked too


def value(v) -> ParameterValue:
    """Return a string-array or double-array ParameterValue."""
    if v and isinstance(v[0], str):
        return ParameterValue(type=ParameterType.PARAMETER_STRING_ARRAY, string_array_value=v)
    return ParameterValue(type=ParameterType.PARAMETER_DOUBLE_ARRAY, double_array_value=v)


def test_dynamics_node_locks_joints_ignores_their_states_and_swaps_them_checked():
    model = RobotModel.from_urdf_file(GRIPPER_ARM, locked=HAND)
    assert model.joint_names == ('shoulder', 'elbow')
    assert dict(model.locked_joints) == {'left_finger_joint': 0.02, 'right_finger_joint': 0.022}
    node = NodeProcess('dynamics_node', [
        *EVERY_STATE, '-r', '__node:=locked_node', '-p', f'urdf_file:={GRIPPER_ARM}',
        '-p', 'locked_joints:=[left_finger_joint]', '-p', 'locked_positions:=[0.02]',
        '-r', 'joint_states:=/locked/joint_states'])
    probe = Probe('locked_probe')

    def set_parameters(atomically=False, **values):
        parameters = [Parameter(name=k, value=value(v)) for k, v in values.items()]
        if atomically:
            return probe.call(SetParametersAtomically,
                              '/locked_node/set_parameters_atomically',
                              SetParametersAtomically.Request(parameters=parameters)).result
        return probe.call(SetParameters, '/locked_node/set_parameters',
                          SetParameters.Request(parameters=parameters)).results[0]

    try:
        outputs = {topic: probe.collect(Float64MultiArray, f'/locked_node/{topic}')
                   for topic in ('bias_torque', 'mass_matrix')}
        pub = probe.node.create_publisher(JointState, '/locked/joint_states', 10)
        assert wait_for(lambda: pub.get_subscription_count() > 0, 60), node.output()
        u, ud = np.array([0.4, -0.6]), np.array([0.3, -0.2])
        # every joint, as joint_state_broadcaster publishes them: the locked fingers' entries
        # (here far from where they are locked) are ignored, as the mimic flap's is
        every = JointState(name=['right_finger_joint', 'elbow', 'flap_joint',
                                 'left_finger_joint', 'shoulder'],
                           position=[0.3, u[1], 9.0, 0.5, u[0]],
                           velocity=[1.0, ud[1], -3.0, 2.0, ud[0]])
        pub.publish(every)
        assert wait_for(lambda: outputs['mass_matrix'], 30), node.output()
        np.testing.assert_allclose(outputs['bias_torque'][-1].data, model.bias_torque(u, ud),
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.reshape(outputs['mass_matrix'][-1].data, (2, 2)),
                                   model.mass_matrix(u), rtol=1e-12, atol=1e-15)
        assert 'left_finger_joint=0.02, right_finger_joint=0.022 locked' in node.output()
        # a service takes the same message (strict: unknown names are refused, locked ones not)
        res = probe.call(GetDynamics, '/locked_node/get_dynamics',
                         GetDynamics.Request(state=every, acceleration=[0.0, 1.0, 0.0, 0.0,
                                                                        2.0]))
        assert res.success, res.message
        assert list(res.joint_names) == ['shoulder', 'elbow']
        np.testing.assert_allclose(res.torque.data, model.inverse_dynamics(u, ud, [2.0, 1.0]),
                                   rtol=1e-12, atol=1e-12)
        # refused with the reason, the model kept
        for values, words in (({'locked_joints': ['ghost']},
                               ("parameter locked_joints", "cannot lock ['ghost']",
                                "movable joints are ['shoulder', 'elbow'")),
                              ({'locked_joints': ['right_finger_joint']},
                               ('mimic joint', "lock those", 'left_finger_joint')),
                              ({'locked_positions': [0.01, 0.02]},
                               ('locked_positions', 'one value per entry of locked_joints')),
                              ({'locked_positions': [float('nan')]},
                               ('locked_positions', 'finite'))):
            result = set_parameters(**values)
            assert not result.successful and all(w in result.reason for w in words), (
                values, result.reason)
        # the elbow locked too: both parameters at once, one model swap
        result = set_parameters(atomically=True, locked_joints=['left_finger_joint', 'elbow'],
                                locked_positions=[0.01, -0.5])
        assert result.successful, result.reason
        shoulder = RobotModel.from_urdf_file(GRIPPER_ARM,
                                             locked={'left_finger_joint': 0.01, 'elbow': -0.5})
        res = probe.call(GetMassMatrix, '/locked_node/get_mass_matrix',
                         GetMassMatrix.Request(state=every))
        assert res.success, res.message
        np.testing.assert_allclose(res.mass_matrix.data, shoulder.mass_matrix(u[:1]).ravel(),
                                   rtol=1e-12)
        assert shoulder.mass_matrix(u[:1])[0, 0] != model.mass_matrix(u)[0, 0]
    finally:
        probe.close()
        log = node.stop()
    assert 'Traceback' not in log, log


def test_simulator_publishes_the_locked_joints_held_still():
    sim = NodeProcess('plant_simulator', [
        '-p', f'urdf_file:={GRIPPER_ARM}', '-p', 'locked_joints:=[left_finger_joint]',
        '-p', 'locked_positions:=[0.02]', '-p', 'initial_positions:=[0.1, 0.2]',
        '-p', 'publish_rate:=100.0', '-p', 'command_topic:=/locked_sim/commands',
        '-r', 'joint_states:=/locked_sim/joint_states'])
    probe = Probe('locked_sim_probe')
    try:
        states = probe.collect(JointState, '/locked_sim/joint_states')
        assert wait_for(lambda: len(states) > 2, 60), sim.stop()
        last = states[-1]
        assert list(last.name) == ['shoulder', 'elbow', 'left_finger_joint',
                                   'right_finger_joint']
        assert list(last.position)[2:] == [0.02, 0.022]
        assert list(last.velocity)[2:] == [0.0, 0.0] and len(last.effort) == 4
    finally:
        probe.close()
        sim.stop()
    code, out = NodeProcess('plant_simulator', [
        '-p', f'urdf_file:={GRIPPER_ARM}', '-p', 'locked_joints:=[left_finger_joint]',
        '-p', 'locked_positions:=[0.02, 0.0]']).wait(60)
    assert code == 1 and 'locked_positions' in out and 'Traceback' not in out, out
    # a joint named twice: refused by name (taken silently, the last position would win)
    code, out = NodeProcess('plant_simulator', [
        '-p', f'urdf_file:={GRIPPER_ARM}', '-p', 'locked_joints:=[shoulder, shoulder]',
        '-p', 'locked_positions:=[0.1, 0.2]']).wait(60)
    assert code == 1 and "locked_joints names ['shoulder'] more than once" in out, out
    assert 'Traceback' not in out, out


def test_an_identification_of_a_subset_gives_the_nodes_their_model(tmp_path):
    """Its files needed lock_others=True, which only the Python API had: nodes refused them."""
    path = robots_dir() / 'panda_description/urdf/panda.urdf'
    prior = RobotModel.from_urdf_file(path, locked={'panda_finger_joint1': 0.03})
    fit, params, urdf = fitted_files(prior, tmp_path, samples=300, seed=8)
    assert 'locked_joints: [panda_finger_joint1]' in params.read_text()
    assert 'locked_positions: [0.03]' in params.read_text()
    node = NodeProcess('dynamics_node', ['-r', '__node:=subset_node', '-p',
                                         f'urdf_file:={urdf}', '--params-file', str(params)])
    controller = NodeProcess('computed_torque_controller', [
        '-p', f'urdf_file:={urdf}', '--params-file', str(params),
        '-r', 'joint_states:=/subset_test/nothing',
        '-p', 'command_topic:=/subset_test/commands'])
    probe = Probe('subset_probe')
    try:
        q0 = np.random.default_rng(9).uniform(-1.0, 1.0, 7)
        state = JointState(name=[*prior.joint_names, 'panda_finger_joint1',
                                 'panda_finger_joint2'], position=[*q0, 0.0, 0.0])
        res = probe.call(GetMassMatrix, '/subset_node/get_mass_matrix',
                         GetMassMatrix.Request(state=state))
        assert res.success, res.message
        M = fit.model.mass_matrix(q0)       # the fitted URDF reloads to 1e-9
        np.testing.assert_allclose(np.reshape(res.mass_matrix.data, (7, 7)), M, rtol=1e-9,
                                   atol=1e-9 * np.abs(M).max())
        assert wait_for(lambda: 'commanding' in controller.output(), 60), controller.stop()
    finally:
        probe.close()
        outputs = node.stop() + controller.stop()
    assert 'Traceback' not in outputs, outputs
    # without the locked joints of the params file, the URDF's joints are all there
    code, out = NodeProcess('computed_torque_controller', [
        '-p', f'urdf_file:={urdf}', '-p', f'joints:={list(prior.joint_names)}']).wait(60)
    assert code == 1 and "missing movable joint(s) ['panda_finger_joint1']" in out, out
