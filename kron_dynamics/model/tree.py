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

"""The kinematic tree: the data every algorithm works on (one body per movable joint)."""

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .rotations import axis_angle


@dataclass(frozen=True)
class KinematicTree:
    """
    Arrays describing a fixed-base tree of n bodies, parents before children (read-only).

    Body i is moved by joint i relative to body ``parent[i]`` (-1 is the fixed root).
    Its frame is ``T_parent * (R0[i], p0[i]) * joint(q_i)``: a rotation by q_i about
    ``axis[i]`` (revolute) or a translation by q_i along it (prismatic). ``com[i]`` and
    ``inertia[i]`` (about the CoM) are expressed in body i's frame. ``gravity`` is the
    gravity acceleration in the root frame.
    """

    parent: np.ndarray
    revolute: np.ndarray
    axis: np.ndarray
    R0: np.ndarray
    p0: np.ndarray
    mass: np.ndarray
    com: np.ndarray
    inertia: np.ndarray
    gravity: np.ndarray
    children: tuple = field(init=False, repr=False)

    def __post_init__(self):
        n = len(self.parent)
        children = [[] for _ in range(n)]
        for i in range(n):
            p = int(self.parent[i])
            if p >= i:
                raise ValueError('KinematicTree: parents must come before children')
            if p >= 0:
                children[p].append(i)
        object.__setattr__(self, 'children', tuple(tuple(c) for c in children))
        for name in ('parent', 'revolute', 'axis', 'R0', 'p0', 'mass', 'com', 'inertia',
                     'gravity'):
            array = np.array(getattr(self, name))     # a copy: nobody else can write it
            array.setflags(write=False)
            object.__setattr__(self, name, array)

    @cached_property
    def support(self) -> np.ndarray:
        """
        Return support[i, k]: joint k is at or above body i (n x n, read-only).

        Made when a readable algorithm first asks for it, not on loading: it is O(n^2),
        and the compiled kernels walk the parent array instead.
        """
        n = self.n
        support = np.zeros((n, n), dtype=bool)
        for i in range(n):
            p = int(self.parent[i])
            if p >= 0:
                support[i] = support[p]
            support[i, i] = True
        support.setflags(write=False)
        return support

    @property
    def n(self) -> int:
        """Return the number of joint coordinates."""
        return len(self.parent)

    def subtree(self, i: int) -> np.ndarray:
        """Boolean mask of body i and its descendants."""
        return self.support[:, i]

    def with_gravity(self, gravity) -> 'KinematicTree':
        """Return a copy of this tree with another gravity vector."""
        return KinematicTree(self.parent, self.revolute, self.axis, self.R0, self.p0,
                             self.mass, self.com, self.inertia,
                             np.asarray(gravity, dtype=float))


def joint_transform(tree: KinematicTree, i: int, qi: float):
    """Return (R, p) of body i in its parent's frame at joint coordinate qi."""
    if tree.revolute[i]:
        return tree.R0[i] @ axis_angle(tree.axis[i], qi), tree.p0[i]
    return tree.R0[i], tree.p0[i] + tree.R0[i] @ (tree.axis[i] * qi)
