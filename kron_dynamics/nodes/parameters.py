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

"""The model parameters every node shares, and per-joint parameter values."""

import math

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import ParameterUninitializedException
from rclpy.node import Node
from rclpy.parameter import Parameter

from ..errors import ConfigurationError
from ..robot_model import RobotModel

MODEL_PARAMETERS = ('robot_description', 'urdf_file', 'joints', 'gravity', 'inertia_check')
INERTIA_CHECKS = ('error', 'warn')


def declare_model_parameters(node: Node) -> None:
    """Declare robot_description, urdf_file, joints, gravity and inertia_check on a node."""
    node.declare_parameter('robot_description', '', ParameterDescriptor(
        description='URDF text; if it and urdf_file are empty, /robot_description is used'))
    node.declare_parameter('urdf_file', '', ParameterDescriptor(description='URDF file path'))
    node.declare_parameter('joints', Parameter.Type.STRING_ARRAY, ParameterDescriptor(
        description='joint order of every output (default: the model order)'))
    node.declare_parameter('gravity', [0.0, 0.0, -9.81], ParameterDescriptor(
        description='gravity acceleration in the URDF root frame [m/s^2]'))
    node.declare_parameter('inertia_check', 'error', ParameterDescriptor(
        description="'error' refuses a URDF whose moving links have inertias no rigid body "
                    "can have; 'warn' loads it as written with one warning per link"))


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


def model_from_parameters(node: Node, overrides: dict | None = None,
                          urdf_text: str | None = None) -> RobotModel | None:
    """
    Build the model the node's parameters describe; None if it must wait for a topic.

    ``overrides`` are parameter values about to be set (to validate them before they are
    accepted); ``urdf_text`` is a description received on /robot_description.
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
    joints = list(joints) if joints else None
    if description:
        return RobotModel.from_urdf_string(description, joints, gravity,
                                           source='parameter robot_description',
                                           inertia_check=inertia_check)
    if path:
        return RobotModel.from_urdf_file(path, joints, gravity, inertia_check=inertia_check)
    if urdf_text is not None:
        return RobotModel.from_urdf_string(urdf_text, joints, gravity,
                                           source='topic /robot_description',
                                           inertia_check=inertia_check)
    return None


def per_joint(values, n: int, name: str) -> np.ndarray:
    """Return a per-joint parameter as an n-vector (a single value is broadcast)."""
    v = np.asarray(list(values), dtype=float)
    if v.size == 1:
        v = np.full(n, float(v[0]))
    if v.shape != (n,) or not np.all(np.isfinite(v)):
        raise ConfigurationError(f'parameter {name} must be 1 or {n} finite numbers, '
                                 f'got {list(values)}')
    return v
