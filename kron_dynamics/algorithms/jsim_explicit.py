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
Explicit joint-space inertia matrix of a tree chain (seed 003, eqs. 30-37).

Element M[u][k] is a sum over the links l of the subtree of the lower of the two joints
(``uL`` when k is an ancestor of u, ``kL`` when k is a descendant of u), with r_ul the
vector from joint u to the CoM of link l and n the joint axes, all in the root frame.
Joints on different branches give 0.
"""

import numpy as np

from ..model.rotations import skew
from ..model.tree import KinematicTree
from .kinematics import com_positions, forward_kinematics, world_axes, world_inertias


def jsim_element(u_rev: bool, k_rev: bool, n_u, n_k, r_ul, r_kl, m_l, I_l) -> float:
    """One of the eight cases of 003 eqs. (30)-(37), for the links l of the summed subtree."""
    if u_rev and k_rev:      # CASES 1 and 3 (eqs. 30, 32)
        S_u = np.array([skew(r) for r in r_ul])
        S_k = np.array([skew(r) for r in r_kl])
        A = I_l.sum(axis=0) - np.einsum('l,lij,ljk->ik', m_l, S_u, S_k)
        return n_u @ A @ n_k
    if u_rev:                # CASES 2 and 4 (eqs. 31, 33)
        return n_u @ np.cross(m_l @ r_ul, n_k)
    if k_rev:                # CASES 5 and 7 (eqs. 34, 36)
        return -n_u @ np.cross(m_l @ r_kl, n_k)
    return m_l.sum() * (n_u @ n_k)  # CASES 6 and 8 (eqs. 35, 37)


def jsim_explicit(tree: KinematicTree, q: np.ndarray) -> np.ndarray:
    """M(q) element by element from the explicit expressions of 003 (eqs. 30-37)."""
    n = tree.n
    R, p = forward_kinematics(tree, q)
    axes = world_axes(tree, R)
    coms = com_positions(tree, R, p)
    inertias = world_inertias(tree, R)
    M = np.zeros((n, n))
    for u in range(n):
        for k in range(n):
            if tree.support[u, k]:      # k in iI_u: k is u or an ancestor of u
                links = tree.subtree(u)
            elif tree.support[k, u]:    # k in uL: k is a descendant of u
                links = tree.subtree(k)
            else:                       # different branches
                continue
            M[u, k] = jsim_element(
                bool(tree.revolute[u]), bool(tree.revolute[k]), axes[u], axes[k],
                coms[links] - p[u], coms[links] - p[k], tree.mass[links], inertias[links])
    return M
