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

"""Composite-rigid-body algorithm for M(q), with spatial quantities in the root frame."""

import numpy as np

from ..model.rotations import skew
from ..model.tree import KinematicTree
from .kinematics import com_positions, forward_kinematics, world_axes, world_inertias


def spatial_inertia(m: float, c: np.ndarray, I_G: np.ndarray) -> np.ndarray:
    """6 x 6 spatial inertia (angular first) about the root origin of a body with CoM c."""
    C = skew(c)
    return np.block([[I_G + m * C @ C.T, m * C], [m * C.T, m * np.eye(3)]])


def spatial_terms(tree: KinematicTree, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return every body's spatial inertia (n, 6, 6) and motion subspace S (n, 6), root frame."""
    n = tree.n
    R, p = forward_kinematics(tree, q)
    axes = world_axes(tree, R)
    coms = com_positions(tree, R, p)
    inertias = world_inertias(tree, R)
    inertia = np.array([spatial_inertia(tree.mass[i], coms[i], inertias[i]) for i in range(n)])
    S = np.zeros((n, 6))
    for i in range(n):
        if tree.revolute[i]:
            S[i] = np.concatenate([axes[i], np.cross(p[i], axes[i])])
        else:
            S[i, 3:] = axes[i]
    return inertia.reshape(n, 6, 6), S


def crba(tree: KinematicTree, q: np.ndarray) -> np.ndarray:
    """M(q) by the composite-rigid-body algorithm: M_ij = s_i^T I^c_j s_j for j in subtree(i)."""
    n = tree.n
    Ic, S = spatial_terms(tree, q)
    for i in range(n - 1, -1, -1):
        if tree.parent[i] >= 0:
            Ic[tree.parent[i]] += Ic[i]
    M = np.zeros((n, n))
    for j in range(n):
        F = Ic[j] @ S[j]
        i = j
        while i >= 0:
            M[i, j] = M[j, i] = S[i] @ F
            i = tree.parent[i]
    return M
