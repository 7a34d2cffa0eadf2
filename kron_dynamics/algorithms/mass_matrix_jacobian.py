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

"""Jacobian form of the JSIM: M = sum m J_TG^T J_TG + J_R^T I_G J_R (000 eq. 95)."""

import numpy as np

from ..model.tree import KinematicTree
from .jacobians import jacobian_r, jacobian_t
from .kinematics import com_positions, forward_kinematics, world_axes, world_inertias


def body_jacobians(tree: KinematicTree, q: np.ndarray):
    """Yield (i, J_TG, J_R, I_G) for every body: CoM Jacobians and root-frame central inertia."""
    R, p = forward_kinematics(tree, q)
    axes = world_axes(tree, R)
    coms = com_positions(tree, R, p)
    inertias = world_inertias(tree, R)
    for i in range(tree.n):
        JT = jacobian_t(tree, i, coms[i], axes, p)
        yield i, JT, jacobian_r(tree, i, axes), inertias[i], axes


def mass_matrix_jacobian(tree: KinematicTree, q: np.ndarray) -> np.ndarray:
    """M(q) by 000 eq. (95): the sum over bodies of m_i J_TGi^T J_TGi + J_Ri^T I_Gi J_Ri."""
    n = tree.n
    M = np.zeros((n, n))
    for i, JT, JR, IG, _ in body_jacobians(tree, q):
        M += tree.mass[i] * (JT.T @ JT) + JR.T @ IG @ JR
    return M
