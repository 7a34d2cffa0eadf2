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
Random URDF trees for tests and benchmarks.

Revolute, continuous, prismatic and fixed joints, branches, tilted axes, joint origins with
xyz/rpy, full inertia tensors with inertial rpy, and some massless links; optionally mimic
joints (``mimic_fraction``): a movable joint follows an earlier one, in any branch, with a
random multiplier and offset (chains of mimics included). And one model that is not random:
a long uniform chain (:func:`chain_urdf`), for the loader's size limits and load time.
"""

import numpy as np


def random_inertia(rng: np.random.Generator, scale: float = 1.0) -> np.ndarray:
    """Return a random central inertia whose principal moments obey the triangle inequality."""
    a, b = rng.uniform(0.1, 1.0, 2) * scale
    c = rng.uniform(abs(a - b), a + b)
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return Q @ np.diag([a, b, c]) @ Q.T


def _v(x) -> str:
    return ' '.join(repr(float(v)) for v in x)


def random_urdf(rng: np.random.Generator, n_movable: int, n_fixed: int = 2,
                prismatic_fraction: float = 0.3, massless_fraction: float = 0.1,
                branching: float = 0.5, name: str = 'random_tree',
                mimic_fraction: float = 0.0, damping: bool = True,
                continuous_fraction: float = 0.2) -> str:
    """
    Return URDF text of a random tree with n_movable movable and n_fixed fixed joints.

    With ``mimic_fraction`` > 0, each movable joint after the first follows (``<mimic>``) a
    random earlier movable joint with that probability. With ``damping``, half the movable
    joints have a ``<dynamics>`` element. A rotating joint is continuous with probability
    ``continuous_fraction``, else revolute.
    """
    kinds = ['movable'] * n_movable + ['fixed'] * n_fixed
    rng.shuffle(kinds)
    links = ['base_link']
    movable = []
    lines = ['<?xml version="1.0"?>', f'<robot name="{name}">',
             '  <link name="base_link">', '    <inertial><mass value="5.0"/>',
             '      <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>',
             '  </link>']
    for k, kind in enumerate(kinds):
        # prefer the newest link (chains) but branch off an older one with some probability
        parent = links[-1] if rng.random() > branching else links[rng.integers(len(links))]
        child = f'link{k + 1}'
        if kind == 'fixed':
            jtype = 'fixed'
        elif rng.random() < prismatic_fraction:
            jtype = 'prismatic'
        else:
            jtype = 'continuous' if rng.random() < continuous_fraction else 'revolute'
        axis = rng.normal(size=3)
        if rng.random() < 0.3:
            axis = np.eye(3)[rng.integers(3)] * rng.choice([-1.0, 1.0])
        lines += [f'  <joint name="joint{k + 1}" type="{jtype}">',
                  f'    <parent link="{parent}"/>', f'    <child link="{child}"/>',
                  f'    <origin xyz="{_v(rng.uniform(-0.5, 0.5, 3))}" '
                  f'rpy="{_v(rng.uniform(-np.pi, np.pi, 3))}"/>']
        if jtype != 'fixed':
            lines.append(f'    <axis xyz="{_v(axis)}"/>')
        if jtype in ('revolute', 'prismatic'):
            lines.append('    <limit lower="-3.0" upper="3.0" effort="100.0" velocity="5.0"/>')
        if jtype != 'fixed' and damping and rng.random() < 0.5:
            lines.append(f'    <dynamics damping="{float(rng.uniform(0, 1))!r}" '
                         f'friction="{float(rng.uniform(0, 0.5))!r}"/>')
        if jtype != 'fixed' and mimic_fraction > 0:
            if movable and rng.random() < mimic_fraction:
                primary = movable[rng.integers(len(movable))]
                lines.append(f'    <mimic joint="{primary}" '
                             f'multiplier="{float(rng.uniform(-2, 2))!r}" '
                             f'offset="{float(rng.uniform(-0.3, 0.3))!r}"/>')
            movable.append(f'joint{k + 1}')
        lines.append('  </joint>')
        lines.append(f'  <link name="{child}">')
        if rng.random() >= massless_fraction:
            I_ = random_inertia(rng, rng.uniform(0.05, 1.0))
            lines += ['    <inertial>',
                      f'      <origin xyz="{_v(rng.uniform(-0.3, 0.3, 3))}" '
                      f'rpy="{_v(rng.uniform(-np.pi, np.pi, 3))}"/>',
                      f'      <mass value="{float(rng.uniform(0.2, 5.0))!r}"/>',
                      '      <inertia ' + ' '.join(
                          f'{k}="{float(I_[i, j])!r}"' for k, i, j in (
                              ('ixx', 0, 0), ('ixy', 0, 1), ('ixz', 0, 2), ('iyy', 1, 1),
                              ('iyz', 1, 2), ('izz', 2, 2))) + '/>',
                      '    </inertial>']
        lines.append('  </link>')
        links.append(child)
    lines.append('</robot>')
    return '\n'.join(lines) + '\n'


def chain_urdf(n_links: int, joint_type: str = 'revolute') -> str:
    """Return a chain of n_links links (n_links - 1 joints), 0.1 m apart, 1 kg each."""
    inertial = ('<inertial><origin xyz="0 0 0.05"/><mass value="1"/><inertia ixx="0.01" '
                'ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.005"/></inertial>')
    lines = ['<?xml version="1.0"?>', '<robot name="chain">', '<link name="l0"/>']
    for i in range(1, n_links):
        lines.append(f'<link name="l{i}">{inertial}</link>')
        lines.append(f'<joint name="j{i}" type="{joint_type}"><parent link="l{i - 1}"/>'
                     f'<child link="l{i}"/><origin xyz="0 0 0.1"/><axis xyz="0 1 0"/>'
                     '<limit lower="-1" upper="1" effort="10" velocity="1"/></joint>')
    lines.append('</robot>')
    return '\n'.join(lines)
