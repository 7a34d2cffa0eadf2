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
Node parameters: typed declarations, the model parameters every node shares, per-joint values.

Every parameter is declared with a typed default (so ``ros2 param dump/get/describe`` show
it) through :func:`declare`; a parameter a node cannot apply while running is declared
read-only with the reason in its description.
"""

import math
import re

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import InvalidParameterTypeException, ParameterUninitializedException
from rclpy.node import Node
from rclpy.parameter import Parameter

from ..errors import ConfigurationError, ModelError
from ..robot_model import RobotModel

MODEL_PARAMETERS = ('robot_description', 'urdf_file', 'joints', 'gravity',
                    'inertia_check', 'root_joint', 'armature', 'locked_joints',
                    'locked_positions')
INERTIA_CHECKS = ('error', 'warn')
ROOT_JOINTS = ('', 'fixed', 'floating', 'planar')
RESTART = 'read-only, restart the node to change it'
EMPTY_ARRAYS = {Parameter.Type.STRING_ARRAY: 'a list of strings',
                Parameter.Type.INTEGER_ARRAY: 'a list of integers',
                Parameter.Type.DOUBLE_ARRAY: 'a list of numbers with a decimal point',
                Parameter.Type.BOOL_ARRAY: 'a list of true/false'}
TYPE_NAMES = {Parameter.Type.BOOL: 'true or false', Parameter.Type.INTEGER: 'an integer',
              Parameter.Type.DOUBLE: 'a number with a decimal point',
              Parameter.Type.STRING: 'a string', **EMPTY_ARRAYS}


def declare(node: Node, name: str, default, description: str, read_only: str = '') -> None:
    """
    Declare a parameter with a typed default; read-only with the reason if ``read_only``.

    ``default`` is a value, or ``(Parameter.Type.X_ARRAY, [])`` for an empty array (rclpy
    cannot infer the type of ``[]``). A start-up value of the wrong type (``gravity:=down``,
    ``kp:=100``) raises ConfigurationError in one line naming the parameter, the expected
    type and an example, instead of rclpy's traceback.
    """
    if isinstance(default, tuple):
        type_, default = default
    else:
        type_ = Parameter.Type.from_parameter_value(default)
    text = f'{description} ({RESTART}: {read_only})' if read_only else description
    final = ParameterDescriptor(description=text, read_only=bool(read_only), type=type_.value)
    try:
        if default == [] and type_ in EMPTY_ARRAYS:
            # declared by type (uninitialised unless overridden), then given its typed empty
            # value, then made read-only: all public API
            node.declare_parameter(name, type_, ParameterDescriptor(description=text))
            if parameter_value(node, name) is None:
                node.set_parameters([Parameter(name, type_, [])])
            node.set_descriptor(name, final)
        else:
            node.declare_parameter(name, default, final)
    except InvalidParameterTypeException as exc:
        # rclpy: "Trying to set parameter 'x' to 'value' of type 'TYPE', expecting ..."
        got = re.search(r"to '(.*)' of type '(\w+)'", str(exc))
        got = f", got {got.group(1)} ({got.group(2).lower().replace('_', ' ')})" if got else ''
        raise ConfigurationError(
            f'parameter {name} must be {TYPE_NAMES.get(type_, type_.name.lower())}, '
            f'e.g. {name}:={_example(type_, default)}{got}') from None


def _example(type_, default) -> str:
    """Return a command-line example value of a parameter type."""
    examples = {Parameter.Type.STRING_ARRAY: '[joint1, joint2]',
                Parameter.Type.INTEGER_ARRAY: '[0, 1]',
                Parameter.Type.DOUBLE_ARRAY: '[1.0, 2.0]'}
    if default == [] or default is None:
        return examples.get(type_, "''")
    if type_ == Parameter.Type.BOOL:
        return 'true' if default else 'false'
    if type_ == Parameter.Type.STRING:
        return repr(default) if default else "''"
    return str(default).replace("'", '')


def declare_model_parameters(node: Node, read_only: str = '') -> None:
    """Declare the model parameters (MODEL_PARAMETERS); read-only with the reason if given."""
    declare(node, 'robot_description', '',
            'URDF text; if it and urdf_file are empty, /robot_description is used', read_only)
    declare(node, 'urdf_file', '', 'URDF file path', read_only)
    declare(node, 'joints', (Parameter.Type.STRING_ARRAY, []),
            'joint order of every output; []: the model order', read_only)
    declare(node, 'locked_joints', (Parameter.Type.STRING_ARRAY, []),
            'joints held at locked_positions, their links welded to their parents (no '
            'coordinates of the model: joints names the others)', read_only)
    declare(node, 'locked_positions', (Parameter.Type.DOUBLE_ARRAY, []),
            'the coordinate of each of locked_joints [rad or m]; []: each at 0', read_only)
    declare(node, 'gravity', [0.0, 0.0, -9.81],
            'gravity acceleration in the URDF root frame [m/s^2]', read_only)
    declare(node, 'inertia_check', 'error',
            "'error' refuses a URDF whose moving links have inertias no rigid body can have; "
            "'warn' loads it as written with one warning per link", read_only)
    declare(node, 'root_joint', '',
            "'fixed', 'floating' or 'planar' base; '': as the URDF says (a world link joined "
            "to the base by a floating or planar joint gives that base)", read_only)
    declare(node, 'armature', [0.0],
            'rotor inertia added to the diagonal of M [kg m^2 or kg]: one value for every '
            'joint, or one per joint', read_only)


def parameter_value(node: Node, name: str, overrides: dict | None = None):
    """Return a parameter's value (None if uninitialised), or its pending override."""
    if overrides and name in overrides:
        return overrides[name]
    try:
        return node.get_parameter(name).value
    except ParameterUninitializedException:
        return None


def required_model(node: Node) -> RobotModel:
    """Return the model of a node that cannot wait for /robot_description (error if unset)."""
    model = model_from_parameters(node)
    if model is None:
        raise ConfigurationError(f'{node.get_name()} needs the parameter robot_description or '
                                 'urdf_file')
    return model


def locked_from_parameters(node: Node, overrides: dict | None = None) -> dict:
    """Return {joint: coordinate} of the parameters locked_joints and locked_positions."""
    joints = [str(j) for j in parameter_value(node, 'locked_joints', overrides) or []]
    positions = parameter_value(node, 'locked_positions', overrides)
    positions = [] if positions is None else list(positions)
    twice = sorted({j for j in joints if joints.count(j) > 1})
    if twice:
        raise ConfigurationError(f'parameter locked_joints names {twice} more than once')
    if positions and len(positions) != len(joints):
        raise ConfigurationError(
            f'parameter locked_positions must be [] (each locked joint at 0) or one value per '
            f'entry of locked_joints ({len(joints)}: {joints}), got {positions}')
    if not all(math.isfinite(v) for v in positions):
        raise ConfigurationError(f'parameter locked_positions must be finite, got {positions}')
    return dict(zip(joints, positions or [0.0] * len(joints)))


def model_from_parameters(node: Node, overrides: dict | None = None,
                          urdf_text: str | None = None, moving_base: bool = False):
    """
    Build the model the node's parameters describe; None if it must wait for a topic.

    ``overrides`` are parameter values about to be set (to validate them before they are
    accepted); ``urdf_text`` is a description received on /robot_description. A floating or
    planar base only where the node reads the base state
    (``moving_base``). The model carries the parameter ``armature`` from its load on, so
    that the load's warning about joints that move a tiny inertia counts it.
    Raises ModelError (the URDF) or ConfigurationError (a parameter) with the reason.
    """
    description = parameter_value(node, 'robot_description', overrides) or ''
    path = parameter_value(node, 'urdf_file', overrides) or ''
    joints = parameter_value(node, 'joints', overrides)
    gravity = parameter_value(node, 'gravity', overrides)
    gravity = list(gravity) if gravity is not None else [0.0, 0.0, -9.81]
    if len(gravity) != 3 or not all(math.isfinite(g) for g in gravity):
        raise ConfigurationError(f'parameter gravity must be 3 finite numbers, got {gravity}')
    inertia_check = parameter_value(node, 'inertia_check', overrides) or 'error'
    if inertia_check not in INERTIA_CHECKS:
        raise ConfigurationError(f'parameter inertia_check must be one of {INERTIA_CHECKS}, '
                                 f'got {inertia_check!r}')
    root_joint = parameter_value(node, 'root_joint', overrides) or ''
    if root_joint not in ROOT_JOINTS:
        raise ConfigurationError(f'parameter root_joint must be one of {list(ROOT_JOINTS)}, '
                                 f'got {root_joint!r}')
    options = {'inertia_check': inertia_check, 'root_joint': root_joint or None}
    armature = parameter_value(node, 'armature', overrides)
    armature = [0.0] if armature is None else list(armature)
    if not armature or not all(math.isfinite(a) and a >= 0 for a in armature):
        raise ConfigurationError('parameter armature must be one value or one per joint, each '
                                 f'finite and >= 0, got {armature}')
    options['armature'] = armature[0] if len(armature) == 1 else armature
    options['locked'] = locked = locked_from_parameters(node, overrides)
    joints = list(joints) if joints else None
    try:
        if description:
            model = RobotModel.from_urdf_string(description, joints, gravity,
                                                source='parameter robot_description', **options)
        elif path:
            model = RobotModel.from_urdf_file(path, joints, gravity, **options)
        elif urdf_text is not None:
            model = RobotModel.from_urdf_string(urdf_text, joints, gravity,
                                                source='topic /robot_description', **options)
        else:
            return None
    except ModelError as exc:
        if exc.argument == 'locked':
            raise ConfigurationError(f'parameter locked_joints: {exc}') from None
        if exc.argument == 'armature':      # one per joint: the count the URDF gives
            raise ConfigurationError(f'parameter {exc}') from None
        raise
    if not moving_base and model.nv != model.n:     # the one capability check: an actuated base
        raise ConfigurationError(
            f"robot '{model.name}' has a {model.base} base (parameter root_joint "
            f"{root_joint!r}; '': as its URDF says) that no joint actuates: computed-torque "
            'control of an unactuated base is ill-posed, and without contacts its free fall '
            f'is no plant, so {node.get_name()} takes fixed and mimic models only; set '
            "root_joint to 'fixed' to hold the base still (dynamics_node serves a moving "
            'base, its state from ~/odometry)')
    if model.n == 0:
        source = ('parameter robot_description' if description else path if path
                  else 'topic /robot_description')
        raise ConfigurationError(f"{source}: robot '{model.name}' has no movable joint (every "
                                 f"joint is fixed{' or locked' if locked else ''}): there is "
                                 'nothing to compute or control')
    return model


def per_joint(values, n: int, name: str) -> np.ndarray:
    """Return a per-joint parameter as an n-vector (a single value is broadcast)."""
    v = np.asarray(list(values), dtype=float)
    if v.size == 1:
        v = np.full(n, float(v[0]))
    if v.shape != (n,) or not np.all(np.isfinite(v)):
        raise ConfigurationError(f'parameter {name} must be 1 or {n} finite numbers, '
                                 f'got {list(values)}')
    return v


def positive_limit(name: str, value) -> float:
    """Return a checked magnitude limit parameter: a finite number > 0."""
    try:
        limit = float(value)
    except (TypeError, ValueError):
        limit = -1.0
    if not (0.0 < limit < math.inf):
        raise ConfigurationError(f'parameter {name} must be a finite number > 0, got {value!r}')
    return limit


def _type_text(type_: Parameter.Type) -> str:
    """Return what a parameter type is, in words (never rclpy's numeric type code)."""
    return TYPE_NAMES.get(type_, type_.name.lower().replace('_', ' '))


class ParameterTypes:
    """
    Run-time parameter changes checked against the declared types, with readable refusals.

    rclpy refuses a value of another type than the declared one with ``Wrong parameter
    type, expected '3' got '4'`` (its numeric type codes, as Python 3.11 prints an IntEnum).
    A pre-set callback sees the values first: it converts what a user means (an empty list,
    which ``ros2 param set name []`` sends as an empty bool array, becomes the declared
    array type's empty value; an integer given for a double becomes that double), and
    replaces any other mismatched value by the parameter's current value while remembering
    the fault; the on-set callback, registered last so that it runs before the node's own,
    then refuses the change naming the parameter, the type it needs and the value it got.
    """

    def __init__(self, node: Node):
        self._node = node
        self._faults = []
        node.add_pre_set_parameters_callback(self._convert)
        node.add_on_set_parameters_callback(self._refuse)

    def _convert(self, parameters: list) -> list:
        self._faults = []
        out = []
        node = self._node
        for p in parameters:
            if not node.has_parameter(p.name) or p.type_ == Parameter.Type.NOT_SET:
                out.append(p)
                continue
            declared = Parameter.Type(node.describe_parameter(p.name).type)
            if declared in (p.type_, Parameter.Type.NOT_SET):
                out.append(p)
            elif p.type_ in EMPTY_ARRAYS and declared in EMPTY_ARRAYS and len(p.value) == 0:
                out.append(Parameter(p.name, declared, []))
            elif declared == Parameter.Type.DOUBLE and p.type_ == Parameter.Type.INTEGER:
                out.append(Parameter(p.name, declared, float(p.value)))
            elif (declared == Parameter.Type.DOUBLE_ARRAY
                  and p.type_ == Parameter.Type.INTEGER_ARRAY):
                out.append(Parameter(p.name, declared, [float(v) for v in p.value]))
            else:
                value = list(p.value) if p.type_ in EMPTY_ARRAYS else p.value
                self._faults.append(f'parameter {p.name} must be {_type_text(declared)}, got '
                                    f'{value!r} ({_type_text(p.type_)})')
                current = node.get_parameter(p.name)
                out.append(Parameter(p.name, declared, current.value))
        return out

    def _refuse(self, parameters: list):
        from rcl_interfaces.msg import SetParametersResult
        faults, self._faults = self._faults, []
        if faults:
            return SetParametersResult(successful=False, reason='; '.join(faults))
        return SetParametersResult(successful=True)
