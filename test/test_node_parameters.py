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
The nodes' parameter layer (nodes/parameters.py) on a real rclpy node, in this process.

The node tests start processes and read their logs; these check each rule of the layer
itself: every model parameter that the nodes share is applied, and each bad value is refused
with a message that names the parameter; a start-up value of the wrong type and a run-time
change of the wrong type are refused in words, and the conversions a user means are made.
"""

import math
import re

import pytest
from rclpy.exceptions import ParameterNotDeclaredException
from rclpy.node import Node
from rclpy.parameter import Parameter

from conftest import URDF_DIR
from kron_dynamics.errors import ConfigurationError, ModelError
from kron_dynamics.nodes.parameters import (declare, declare_model_parameters,
                                            MODEL_PARAMETERS,
                                            model_from_parameters, ParameterTypes, per_joint,
                                            positive_limit, required_model)

pytestmark = pytest.mark.ros

GRIPPER_ARM = URDF_DIR / 'gripper_arm.urdf'
T = Parameter.Type


@pytest.fixture
def node(rclpy_context, request):
    """Yield a node with the model parameters declared, its urdf_file the gripper arm."""
    node = Node(f'parameters_{request.node.name.split("[")[0][5:]}'[:60], context=rclpy_context,
                parameter_overrides=[Parameter('urdf_file', value=str(GRIPPER_ARM))])
    declare_model_parameters(node)
    yield node
    node.destroy_node()


def test_every_model_parameter_is_applied(node):
    """joints, gravity, armature (one or per joint), locked joints, root_joint, the sources."""
    model = model_from_parameters(node)
    assert model.joint_names == ('shoulder', 'elbow', 'left_finger_joint')
    assert model.gravity.tolist() == [0.0, 0.0, -9.81] and model.armature.tolist() == [0.0] * 3
    assert model.nv == model.n and model.name == 'gripper_arm'
    order = ['elbow', 'left_finger_joint', 'shoulder']
    assert model_from_parameters(node, {'joints': order}).joint_names == tuple(order)
    assert model_from_parameters(node, {'gravity': [1.0, 2.0, 3.0]}).gravity.tolist() == [
        1.0, 2.0, 3.0]
    assert model_from_parameters(node, {'armature': [0.5]}).armature.tolist() == [0.5] * 3
    assert model_from_parameters(node, {'armature': [0.1, 0.2, 0.3]}).armature.tolist() == [
        0.1, 0.2, 0.3]
    locked = model_from_parameters(node, {'locked_joints': ['left_finger_joint'],
                                          'locked_positions': [0.02]})
    assert locked.joint_names == ('shoulder', 'elbow')
    # its mimic finger follows: 1.0 x 0.02 + 0.002 (as the URDF says)
    assert dict(locked.locked_joints) == {'left_finger_joint': 0.02, 'right_finger_joint': 0.022}
    at_zero = model_from_parameters(node, {'locked_joints': ['shoulder']})
    assert dict(at_zero.locked_joints) == {'shoulder': 0.0}
    moving = model_from_parameters(node, {'root_joint': 'floating'}, moving_base=True)
    assert moving.base == 'floating' and moving.nv == moving.n + 6
    # robot_description wins over urdf_file; the topic's text only where both are empty
    rp_arm = (URDF_DIR / 'rp_arm.urdf').read_text()
    assert model_from_parameters(node, {'robot_description': rp_arm}).name != 'gripper_arm'
    assert model_from_parameters(node, urdf_text=rp_arm).name == 'gripper_arm'
    assert model_from_parameters(node, {'urdf_file': ''}) is None
    from_topic = model_from_parameters(node, {'urdf_file': ''}, urdf_text=rp_arm)
    assert from_topic.name == model_from_parameters(node, {'robot_description': rp_arm}).name
    assert required_model(node).name == 'gripper_arm'
    assert node.set_parameters([Parameter('urdf_file', value='')])[0].successful
    with pytest.raises(ConfigurationError, match=r'^parameters_\w+ needs the parameter '
                                                 'robot_description or urdf_file$'):
        required_model(node)


@pytest.mark.parametrize('overrides, message', [
    ({'gravity': [0.0, -9.81]}, r'parameter gravity must be 3 finite numbers, got \[0\.0, -9'),
    ({'gravity': [0.0, 0.0, math.nan]}, 'parameter gravity must be 3 finite numbers, got '),
    ({'inertia_check': 'strict'}, r"parameter inertia_check must be one of \('error', 'warn'\), "
                                  "got 'strict'$"),
    ({'root_joint': 'wheeled'}, r"parameter root_joint must be one of \['', 'fixed', "
                                r"'floating', 'planar'\], got 'wheeled'$"),
    ({'armature': []}, r'parameter armature must be one value or one per joint, each finite '
                       r'and >= 0, got \[\]$'),
    ({'armature': [-0.1]}, r'parameter armature must be .*, got \[-0\.1\]$'),
    ({'armature': [math.inf]}, r'parameter armature must be .*, got \[inf\]$'),
    ({'armature': [0.1, 0.2]}, r'^parameter armature must have shape \(3,\), got \(2,\) '
                               r'\(entries: shoulder, elbow, left_finger_joint\)$'),
    ({'locked_joints': ['elbow', 'elbow']},
     r"^parameter locked_joints names \['elbow'\] more than once$"),
    ({'locked_joints': ['left_finger_joint'], 'locked_positions': [0.1, 0.2]},
     r"^parameter locked_positions must be \[\] \(each locked joint at 0\) or one value per "
     r"entry of locked_joints \(1: \['left_finger_joint'\]\), got \[0\.1, 0\.2\]$"),
    ({'locked_joints': ['elbow'], 'locked_positions': [math.nan]},
     r'^parameter locked_positions must be finite, got \[nan\]$'),
    ({'locked_joints': ['ghost']}, r"^parameter locked_joints: .*gripper_arm\.urdf: cannot lock "
                                   r"\['ghost'\]"),
    ({'root_joint': 'floating'}, r"^robot 'gripper_arm' has a floating base \(parameter "
                                 r"root_joint 'floating'.* that no joint actuates.* so "
                                 r'parameters_\w+ takes fixed and mimic models only'),
    ({'locked_joints': ['shoulder', 'elbow', 'left_finger_joint']},
     r"gripper_arm\.urdf: robot 'gripper_arm' has no movable joint \(every joint is fixed or "
     r'locked\): there is nothing to compute or control$'),
], ids=['gravity of 2', 'gravity nan', 'inertia_check', 'root_joint', 'armature empty',
        'armature negative', 'armature inf', 'armature of 2', 'locked twice',
        'locked positions of 2', 'locked position nan', 'lock an unknown joint',
        'floating without a base state', 'everything locked'])
def test_each_bad_model_parameter_is_named(node, overrides, message):
    """A bad value names its parameter (never only RobotModel's words for its argument)."""
    with pytest.raises(ConfigurationError, match=message):
        model_from_parameters(node, overrides)


def test_a_robot_description_without_movable_joints_names_its_source(node):
    """The source in the message: the parameter, the file or the topic."""
    urdf = ("<robot name='statue'><link name='base'/><link name='top'/><joint name='weld' "
            "type='fixed'><parent link='base'/><child link='top'/></joint></robot>")
    for overrides, text, source in (({'robot_description': urdf}, None, 'parameter '
                                     'robot_description'),
                                    ({'urdf_file': ''}, urdf, 'topic /robot_description')):
        with pytest.raises(ConfigurationError, match=f"^{source}: robot 'statue' has no movable "
                                                     r'joint \(every joint is fixed\)'):
            model_from_parameters(node, overrides, urdf_text=text)


def test_start_up_values_are_kept_and_read_only_parameters_say_why(rclpy_context):
    """A start-up array is not reset to its empty default; read_only names the reason."""
    order = ['elbow', 'left_finger_joint', 'shoulder']
    node = Node('start_up_values', context=rclpy_context, parameter_overrides=[
        Parameter('urdf_file', value=str(GRIPPER_ARM)), Parameter('joints', value=order),
        Parameter('locked_positions', value=[0.01])])
    try:
        declare_model_parameters(node, read_only='the model is built once')
        assert node.get_parameter('joints').value == order
        assert node.get_parameter('locked_positions').value == [0.01]
        assert node.get_parameter('locked_joints').value == []
        assert node.get_parameter('locked_joints').type_ == T.STRING_ARRAY
        for name in MODEL_PARAMETERS:
            descriptor = node.describe_parameter(name)
            assert descriptor.read_only, name
            assert descriptor.description.endswith(
                '(read-only, restart the node to change it: the model is built once)'), name
            assert not node.set_parameters([node.get_parameter(name)])[0].successful, name
        assert model_from_parameters(node, {'locked_positions': []}).joint_names == tuple(order)
    finally:
        node.destroy_node()


def test_a_bad_urdf_names_where_it_came_from(node, tmp_path):
    """The parameter robot_description, the file or the topic /robot_description."""
    broken = tmp_path / 'broken.urdf'
    broken.write_text('<robot')
    for overrides, text, source in (({'robot_description': '<robot'}, None,
                                     'parameter robot_description'),
                                    ({'urdf_file': str(broken)}, None, re.escape(str(broken))),
                                    ({'urdf_file': ''}, '<robot', 'topic /robot_description')):
        with pytest.raises(ModelError, match=f'^{source}: '):
            model_from_parameters(node, overrides, urdf_text=text)


def test_a_start_up_value_of_the_wrong_type_is_refused_in_one_line(rclpy_context):
    """``gravity:=down``, ``joints:=[1, 2]``: the parameter, the type, an example, the value."""
    for name, value, message in (
            ('gravity', 'down', 'parameter gravity must be a list of numbers with a decimal '
                                r'point, e\.g\. gravity:=\[0\.0, 0\.0, -9\.81\], got down '
                                r'\(string\)$'),
            ('joints', [1, 2], r'parameter joints must be a list of strings, e\.g\. '
                               r'joints:=\[joint1, joint2\], got \[1, 2\] \(integer array\)$'),
            ('inertia_check', 3, r"parameter inertia_check must be a string, e\.g\. "
                                 r"inertia_check:='error', got 3 \(integer\)$"),
            ('enabled', 'yes', r'parameter enabled must be true or false, e\.g\. '
                               r'enabled:=true, got yes \(string\)$'),
            ('paused', 1, r'parameter paused must be true or false, e\.g\. paused:=false, '
                          r'got 1 \(integer\)$')):
        node = Node('wrong_start_up_type', context=rclpy_context,
                    parameter_overrides=[Parameter(name, value=value)])
        try:
            with pytest.raises(ConfigurationError, match='^' + message):
                declare_model_parameters(node)
                declare(node, 'enabled', True, 'on or off')
                declare(node, 'paused', False, 'paused or not')
        finally:
            node.destroy_node()


def test_run_time_changes_are_converted_or_refused_by_type(node):
    """An integer for a double and an empty list are what a user means; other types refused."""
    declare(node, 'kp', 100.0, 'gain')
    declare(node, 'count', 3, 'a count')
    declare(node, 'enabled', True, 'on or off')
    declare(node, 'frame', 'base', 'a frame', read_only='it names the published frame')
    ParameterTypes(node)

    def set_one(name, type_, value):
        result = node.set_parameters([Parameter(name, type_, value)])[0]
        return result.successful, result.reason, node.get_parameter(name).value

    assert set_one('gravity', T.INTEGER_ARRAY, [0, 0, -10]) == (True, '', [0.0, 0.0, -10.0])
    assert node.get_parameter('gravity').type_ == T.DOUBLE_ARRAY
    assert set_one('kp', T.INTEGER, 50) == (True, '', 50.0)
    assert node.get_parameter('kp').type_ == T.DOUBLE
    assert set_one('joints', T.BOOL_ARRAY, []) == (True, '', [])    # `ros2 param set joints []`
    assert node.get_parameter('joints').type_ == T.STRING_ARRAY
    assert set_one('locked_positions', T.INTEGER_ARRAY, []) == (True, '', [])
    assert node.get_parameter('locked_positions').type_ == T.DOUBLE_ARRAY
    for name, type_, value, reason, kept in (
            ('kp', T.STRING, 'fast', "parameter kp must be a number with a decimal point, got "
                                     "'fast' (a string)", 50.0),
            ('gravity', T.STRING, 'down', 'parameter gravity must be a list of numbers with a '
                                          "decimal point, got 'down' (a string)",
             [0.0, 0.0, -10.0]),
            ('count', T.DOUBLE, 2.5, 'parameter count must be an integer, got 2.5 (a number '
                                     'with a decimal point)', 3),
            ('enabled', T.INTEGER, 1, 'parameter enabled must be true or false, got 1 (an '
                                      'integer)', True),
            ('joints', T.INTEGER_ARRAY, [1, 2], 'parameter joints must be a list of strings, '
                                                'got [1, 2] (a list of integers)', [])):
        successful, text, now = set_one(name, type_, value)
        assert (successful, text) == (False, reason) and now == kept
    # one bad value refuses the whole atomic change; the fault is not kept for the next
    result = node.set_parameters_atomically([Parameter('kp', T.INTEGER, 7),
                                             Parameter('count', T.STRING, 'x')])
    assert not result.successful and result.reason == ("parameter count must be an integer, "
                                                       "got 'x' (a string)")
    assert node.get_parameter('kp').value == 50.0
    assert set_one('kp', T.INTEGER, 7) == (True, '', 7.0)
    # a change that rclpy refuses after the pre-set callback (a name never declared) leaves
    # no fault behind for the next change
    with pytest.raises(ParameterNotDeclaredException):
        node.set_parameters_atomically([Parameter('kp', T.STRING, 'x'),
                                        Parameter('ghost', T.DOUBLE, 1.0)])
    assert set_one('kp', T.DOUBLE, 8.0) == (True, '', 8.0)
    # `ros2 param delete`: refused by rclpy (a declared parameter), not called a type fault
    result = node.set_parameters([Parameter('kp')])[0]
    assert not result.successful and 'must be' not in result.reason, result.reason
    assert node.get_parameter('kp').value == 8.0
    descriptor = node.describe_parameter('frame')
    assert descriptor.read_only and descriptor.description == (
        'a frame (read-only, restart the node to change it: it names the published frame)')
    assert not set_one('frame', T.STRING, 'tool')[0]
    assert not node.describe_parameter('joints').read_only


def test_per_joint_values_and_limits():
    """One value for every joint or one per joint, finite; a limit finite and > 0."""
    assert per_joint([2.0], 3, 'kp').tolist() == [2.0] * 3
    assert per_joint((1.0, 2.0, 3.0), 3, 'kp').tolist() == [1.0, 2.0, 3.0]
    for values in ([1.0, 2.0], [], [math.nan], [1.0, math.inf, 2.0]):
        with pytest.raises(ConfigurationError, match=r'^parameter kp must be 1 or 3 finite '
                                                     f'numbers, got {re.escape(str(values))}$'):
            per_joint(values, 3, 'kp')
    assert positive_limit('max_rate', 2.5) == 2.5
    for value in (0.0, -1.0, math.inf, math.nan, 'x', None):
        with pytest.raises(ConfigurationError, match=r'^parameter max_rate must be a finite '
                                                     rf'number > 0, got {value!r}$'):
            positive_limit('max_rate', value)
