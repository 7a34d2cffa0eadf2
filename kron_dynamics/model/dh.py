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
Standard Denavit-Hartenberg tables to URDF text (``RobotModel.from_dh`` builds the model).

Body i moves with DH frame i, A_i = Rz(theta) Tz(d) Tx(a) Rx(alpha), and the joint
variable q_i is theta_i (revolute) or d_i (prismatic) exactly, including its zero: the
table's theta (revolute) or d (prismatic) is an offset added to q_i, 0 in the papers.

URDF puts the constant part of a joint transform before the motion and DH after it, so
each row becomes a movable joint into ``link{i}_base`` (DH frame i-1 moved by q_i) and a
fixed joint to ``link{i}`` (DH frame i), which carries body i's inertia.

A row may follow another joint (``mimic``: q_i = multiplier * q_primary + offset, a URDF
``<mimic>``): it is then no coordinate of the model (004 section 5, see model.mimic).
"""

from dataclasses import dataclass, field
import math

import numpy as np

from ..errors import ModelError
from .inertia import check_inertia


@dataclass
class DHRow:
    """One row of a standard DH table, with the body it moves."""

    joint: str
    type: str = 'revolute'          # 'revolute' or 'prismatic'
    a: float = 0.0
    alpha: float = 0.0
    d: float = 0.0
    theta: float = 0.0
    mass: float = 0.0
    com: tuple = (0.0, 0.0, 0.0)    # in DH frame i
    inertia: object = field(default_factory=lambda: np.zeros((3, 3)))  # central, DH frame i
    lower: float = -math.pi
    upper: float = math.pi
    effort: float = 1e3
    velocity: float = 10.0
    mimic: object = None    # None, a joint name, (joint, multiplier[, offset]) or a dict


def mimic_spec(value, where: str):
    """
    Return (joint, multiplier, offset) of a DH row's ``mimic`` entry, or None.

    Accepted: a joint name; a sequence (joint, multiplier[, offset]); a mapping with keys
    joint, multiplier (default 1), offset (default 0). Numbers must be finite.
    """
    if value is None:
        return None
    if isinstance(value, str):
        joint, multiplier, offset = value, 1.0, 0.0
    elif isinstance(value, dict):
        unknown = sorted(set(value) - {'joint', 'multiplier', 'offset'})
        if unknown or 'joint' not in value:
            raise ModelError(f'{where}: mimic needs a joint and may have multiplier and '
                             f'offset, got {value!r}')
        joint = value['joint']
        multiplier, offset = value.get('multiplier', 1.0), value.get('offset', 0.0)
    elif isinstance(value, (list, tuple)) and 1 <= len(value) <= 3:
        defaults = (1.0, 0.0)[len(value) - 1:]      # multiplier 1, offset 0 if absent
        joint, multiplier, offset = (*value, *defaults)
    else:
        raise ModelError(f'{where}: mimic must be a joint name, (joint, multiplier, offset) '
                         f'or a mapping, got {value!r}')
    try:
        multiplier, offset = float(multiplier), float(offset)
    except (TypeError, ValueError):
        multiplier = offset = math.nan
    if not (isinstance(joint, str) and joint and math.isfinite(multiplier)
            and math.isfinite(offset)):
        raise ModelError(f'{where}: mimic needs a joint name and finite numbers, got '
                         f'{value!r}')
    return joint, multiplier, offset


def _fmt(values) -> str:
    return ' '.join(repr(float(v)) for v in values)


def _inertia_matrix(inertia) -> np.ndarray:
    inertia = np.asarray(inertia, dtype=float)
    return np.diag(inertia) if inertia.shape == (3,) else inertia


def dh_to_urdf(rows: list[DHRow], name: str = 'dh_robot', base_xyz=(0.0, 0.0, 0.0),
               base_rpy=(0.0, 0.0, 0.0)) -> str:
    """URDF text for a DH table; ``base_*`` place DH frame 0 (``link0``) in ``base_link``."""
    if not rows:
        raise ModelError('DH table is empty')
    out = ['<?xml version="1.0"?>', f'<robot name="{name}">', '  <link name="base_link"/>',
           '  <link name="link0"/>',
           '  <joint name="base_link_to_link0" type="fixed">',
           '    <parent link="base_link"/>', '    <child link="link0"/>',
           f'    <origin xyz="{_fmt(base_xyz)}" rpy="{_fmt(base_rpy)}"/>', '  </joint>']
    for i, row in enumerate(rows, start=1):
        if not isinstance(row, DHRow):
            raise ModelError(f'DH row {i}: expected a DHRow (kron_dynamics.model.dh), got '
                             f'{type(row).__name__} {row!r}')
        where = f"DH row {i} (joint '{row.joint}')"
        if row.type not in ('revolute', 'prismatic'):
            raise ModelError(f"{where}: type must be 'revolute' or 'prismatic', got {row.type!r}")
        try:
            values = [float(v) for v in (row.a, row.alpha, row.d, row.theta, row.mass, *row.com)]
            limits = [float(v) for v in (row.lower, row.upper, row.effort, row.velocity)]
            inertia = _inertia_matrix(row.inertia)
        except (TypeError, ValueError):
            raise ModelError(f'{where}: parameters must be finite numbers') from None
        if len(values) != 8:
            raise ModelError(f'{where}: com must be 3 numbers, got {row.com!r}')
        if not all(math.isfinite(v) for v in values) or any(math.isnan(v) for v in limits):
            raise ModelError(f'{where}: parameters must be finite numbers')
        if row.mass < 0:
            raise ModelError(f'{where}: mass must be >= 0')
        check_inertia(inertia, where)
        mimic = mimic_spec(row.mimic, where)
        if row.type == 'revolute':
            j_xyz, j_rpy = (0.0, 0.0, 0.0), (0.0, 0.0, row.theta)
            c_xyz = (row.a, 0.0, row.d)
        else:
            j_xyz, j_rpy = (0.0, 0.0, row.d), (0.0, 0.0, row.theta)
            c_xyz = (row.a, 0.0, 0.0)
        out += [
            f'  <link name="link{i}_base"/>',
            f'  <joint name="{row.joint}" type="{row.type}">',
            f'    <parent link="link{i - 1}"/>', f'    <child link="link{i}_base"/>',
            f'    <origin xyz="{_fmt(j_xyz)}" rpy="{_fmt(j_rpy)}"/>',
            '    <axis xyz="0 0 1"/>',
            f'    <limit lower="{_fmt([row.lower])}" upper="{_fmt([row.upper])}" '
            f'effort="{_fmt([row.effort])}" velocity="{_fmt([row.velocity])}"/>',
            *([f'    <mimic joint="{mimic[0]}" multiplier="{mimic[1]!r}" '
               f'offset="{mimic[2]!r}"/>'] if mimic else []),
            '  </joint>',
            f'  <link name="link{i}">',
            '    <inertial>',
            f'      <origin xyz="{_fmt(row.com)}" rpy="0 0 0"/>',
            f'      <mass value="{float(row.mass)!r}"/>',
            f'      <inertia ixx="{_fmt([inertia[0, 0]])}" ixy="{_fmt([inertia[0, 1]])}" '
            f'ixz="{_fmt([inertia[0, 2]])}" iyy="{_fmt([inertia[1, 1]])}" '
            f'iyz="{_fmt([inertia[1, 2]])}" izz="{_fmt([inertia[2, 2]])}"/>',
            '    </inertial>',
            '  </link>',
            f'  <joint name="link{i}_base_to_link{i}" type="fixed">',
            f'    <parent link="link{i}_base"/>', f'    <child link="link{i}"/>',
            f'    <origin xyz="{_fmt(c_xyz)}" rpy="{_fmt((row.alpha, 0.0, 0.0))}"/>',
            '  </joint>',
        ]
    out.append('</robot>')
    return '\n'.join(out) + '\n'
