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

"""Forward kinematics of every body frame in the root frame."""

import numpy as np

from ..model.tree import joint_transform, KinematicTree

__all__ = ['com_positions', 'forward_kinematics', 'joint_transform', 'world_axes']


def forward_kinematics(tree: KinematicTree, q: np.ndarray):
    """Return rotations (n, 3, 3) and origins (n, 3) of all body frames in the root frame."""
    n = tree.n
    R = np.empty((n, 3, 3))
    p = np.empty((n, 3))
    for i in range(n):
        Rl, pl = joint_transform(tree, i, q[i])
        par = tree.parent[i]
        if par < 0:
            R[i], p[i] = Rl, pl
        else:
            R[i] = R[par] @ Rl
            p[i] = p[par] + R[par] @ pl
    return R, p


def world_axes(tree: KinematicTree, R: np.ndarray) -> np.ndarray:
    """Return the joint axes in the root frame, (n, 3)."""
    return np.einsum('nij,nj->ni', R, tree.axis)


def com_positions(tree: KinematicTree, R: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Return the body centres of mass in the root frame, (n, 3)."""
    return p + np.einsum('nij,nj->ni', R, tree.com)


def world_inertias(tree: KinematicTree, R: np.ndarray) -> np.ndarray:
    """Return the central inertia tensors in root-frame axes, (n, 3, 3)."""
    return np.einsum('nij,njk,nlk->nil', R, tree.inertia, R)
