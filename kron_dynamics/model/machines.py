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
The example machines of the papers, as URDF text generated from their parameter tables.

``python -m kron_dynamics.model.machines DIR`` writes the URDFs shipped in ``urdf/``.
"""

import math
from pathlib import Path
import sys

import numpy as np

from .dh import DHRow, dh_to_urdf

# Seed 000, section 5, Tables 1-2 (values in shared/reference/README.md).
STACKER = dict(m1=200000.0, m2=150000.0, m3=60000.0, d2=9.0, yG2=-3.5, a3=40.0, l3=17.0,
               I2=(2.05e6, 2.60e6, 3.05e6), I3=(1.25e5, 8.045e6, 8.08e6), I1=1e-3)


def stacker_dh_rows() -> list[DHRow]:
    """Return the stacker's DH table (000 Table 1): q1 rail travel [m], q2 slew, q3 luff [rad]."""
    p = STACKER
    return [
        DHRow('q1_travel', 'prismatic', alpha=math.pi / 2, mass=p['m1'],
              inertia=np.full(3, p['I1']), lower=-250.0, upper=250.0, effort=2.0e6,
              velocity=2.0),
        DHRow('q2_slew', 'revolute', d=p['d2'], alpha=math.pi / 2, mass=p['m2'],
              com=(0.0, p['yG2'], 0.0), inertia=p['I2'], lower=-math.pi, upper=math.pi,
              effort=5.0e7, velocity=0.5),
        DHRow('q3_luff', 'revolute', a=p['a3'], mass=p['m3'],
              com=(p['l3'] - p['a3'], 0.0, 0.0), inertia=p['I3'], lower=-0.6, upper=0.6,
              effort=5.0e7, velocity=0.25),
    ]


def stacker_urdf() -> str:
    """URDF of the stacker; base_link z-up, DH frame 0 (y0 down, z0 along the rail) as link0."""
    return dh_to_urdf(stacker_dh_rows(), 'stacker', base_rpy=(-math.pi / 2, 0.0, 0.0))


# Seed 003, section 7.2, Table 3 (consistent reading in shared/reference/README.md).
ROVER_ARM = [
    # name, parent, axis, r, c, principal moments, mass
    ('joint1', 0, (1, 0, 0), (0.0, 0.0, 0.0), (0.05, 0.0, 0.0), (0.0, 0.0833, 0.0833), 1.0),
    ('joint2', 1, (0, 0, 1), (0.1, -0.05, 0.0), (0.0, 0.0, -0.04), (0.0427, 0.0427, 0.0), 0.8),
    ('joint3', 2, (1, 0, 0), (0.01, 0.0, -0.08), (0.03, 0.0, 0.0), (0.0, 0.018, 0.018), 0.6),
    ('joint4', 1, (0, 0, 1), (0.1, 0.05, 0.0), (0.0, 0.0, -0.04), (0.0427, 0.0427, 0.0), 0.8),
    ('joint5', 4, (1, 0, 0), (0.01, 0.0, -0.08), (0.03, 0.0, 0.0), (0.0, 0.018, 0.018), 0.6),
]


def _v(values) -> str:
    return ' '.join(repr(float(x)) for x in values)


def _link(name, mass, com, moments):
    return [f'  <link name="{name}">', '    <inertial>',
            f'      <origin xyz="{_v(com)}" rpy="0 0 0"/>', f'      <mass value="{mass!r}"/>',
            f'      <inertia ixx="{moments[0]!r}" ixy="0.0" ixz="0.0" iyy="{moments[1]!r}" '
            f'iyz="0.0" izz="{moments[2]!r}"/>', '    </inertial>', '  </link>']


def _joint(name, jtype, parent, child, xyz, axis, limit):
    return [f'  <joint name="{name}" type="{jtype}">', f'    <parent link="{parent}"/>',
            f'    <child link="{child}"/>', f'    <origin xyz="{_v(xyz)}" rpy="0 0 0"/>',
            f'    <axis xyz="{_v(axis)}"/>', f'    <limit {limit}/>', '  </joint>']


def rover_arm_urdf(regularized: bool = False) -> str:
    """
    URDF of the lunar-rover rocker arm (003 Table 3), natural coordinates, z up.

    With ``regularized`` every zero principal moment becomes 1e-4 kg m^2 so that M is
    positive definite (the JSON oracle's ``rover_arm_regularized``).
    """
    name = 'rover_arm_regularized' if regularized else 'rover_arm'
    out = ['<?xml version="1.0"?>', f'<robot name="{name}">', '  <link name="base_link"/>']
    limit = 'lower="-3.14159" upper="3.14159" effort="20.0" velocity="5.0"'
    for i, (joint, parent, axis, r, c, moments, mass) in enumerate(ROVER_ARM, start=1):
        if regularized:
            moments = tuple(m if m != 0.0 else 1e-4 for m in moments)
        parent_link = 'base_link' if parent == 0 else f'link{parent}'
        out += _joint(joint, 'revolute', parent_link, f'link{i}', r, axis, limit)
        out += _link(f'link{i}', mass, c, moments)
    out.append('</robot>')
    return '\n'.join(out) + '\n'


def rp_arm_urdf() -> str:
    """
    Return the R-P arm of seed 002: q1 about z0, q2 = d2 along x1 to the link-2 CoM; plane x0-y0.

    base_link is z up; frame 0 of the slides (y0 up) is ``link0``.
    """
    out = ['<?xml version="1.0"?>', '<robot name="rp_arm">', '  <link name="base_link"/>',
           '  <link name="link0"/>',
           '  <joint name="base_link_to_link0" type="fixed">', '    <parent link="base_link"/>',
           '    <child link="link0"/>',
           f'    <origin xyz="0 0 0" rpy="{_v((math.pi / 2, 0, 0))}"/>',
           '  </joint>']
    out += _joint('theta1', 'revolute', 'link0', 'link1', (0, 0, 0), (0, 0, 1),
                  'lower="-3.14159" upper="3.14159" effort="50.0" velocity="3.0"')
    out += _link('link1', 2.0, (0.25, 0.0, 0.0), (0.002, 0.04, 0.04))
    out += _joint('d2', 'prismatic', 'link1', 'link2', (0, 0, 0), (1, 0, 0),
                  'lower="0.0" upper="1.0" effort="50.0" velocity="1.0"')
    out += _link('link2', 1.2, (0.0, 0.0, 0.0), (0.001, 0.015, 0.015))
    out.append('</robot>')
    return '\n'.join(out) + '\n'


def planar3r_urdf() -> str:
    """Return the planar 3R arm of seed 003 section 7.1 in the x-y plane of ``link0`` (y0 up)."""
    lengths, coms = (1.0, 0.8, 0.6), (0.45, 0.35, 0.25)
    masses, izz, ixx = (4.0, 3.0, 1.5), (0.35, 0.17, 0.05), (0.01, 0.008, 0.004)
    out = ['<?xml version="1.0"?>', '<robot name="planar3r">', '  <link name="base_link"/>',
           '  <link name="link0"/>',
           '  <joint name="base_link_to_link0" type="fixed">', '    <parent link="base_link"/>',
           '    <child link="link0"/>',
           f'    <origin xyz="0 0 0" rpy="{_v((math.pi / 2, 0, 0))}"/>',
           '  </joint>']
    for i in range(3):
        xyz = (0.0, 0.0, 0.0) if i == 0 else (lengths[i - 1], 0.0, 0.0)
        out += _joint(f'joint{i + 1}', 'revolute', f'link{i}', f'link{i + 1}', xyz, (0, 0, 1),
                      'lower="-3.14159" upper="3.14159" effort="100.0" velocity="3.0"')
        out += _link(f'link{i + 1}', masses[i], (coms[i], 0.0, 0.0), (ixx[i], izz[i], izz[i]))
    out.append('</robot>')
    return '\n'.join(out) + '\n'


URDFS = {
    'stacker.urdf': stacker_urdf,
    'rover_arm.urdf': rover_arm_urdf,
    'rover_arm_regularized.urdf': lambda: rover_arm_urdf(regularized=True),
    'rp_arm.urdf': rp_arm_urdf,
    'planar3r.urdf': planar3r_urdf,
}


def main(argv=None) -> int:
    """Write every example URDF into the directory given (default ``urdf``)."""
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0] if argv else 'urdf')
    out.mkdir(parents=True, exist_ok=True)
    for filename, make in URDFS.items():
        (out / filename).write_text(make())
        print(out / filename)
    return 0


if __name__ == '__main__':
    sys.exit(main())
