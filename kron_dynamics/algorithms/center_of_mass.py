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
Centre of mass of the robot and its Jacobian: c = sum m_i r_Gi / m, J_c = sum m_i J_TGi / m.

J_TGi is the translational Jacobian of body i's centre of mass by 000 eq. (45),
J_TG = J_T - p~ J_R with p the CoM offset from the body origin (root frame). Mass welded to
the fixed root (``root_mass`` at ``root_com``) does not move; it enters m and c only if given.
"""

import numpy as np

from ..model.rotations import skew
from ..model.tree import KinematicTree
from .jacobians import jacobian_r, jacobian_t
from .kinematics import forward_kinematics, world_axes


def center_of_mass(tree: KinematicTree, q: np.ndarray, root_mass: float = 0.0,
                   root_com=(0.0, 0.0, 0.0)) -> np.ndarray:
    """Return c (root frame); ValueError if the bodies counted have no mass."""
    R, p = forward_kinematics(tree, q)
    coms = p + np.einsum('nij,nj->ni', R, tree.com)
    m = float(tree.mass.sum()) + root_mass
    if not m > 0.0:
        raise ValueError('the bodies have no mass: the centre of mass is undefined')
    return (tree.mass @ coms + root_mass * np.asarray(root_com, dtype=float)) / m


def center_of_mass_jacobian(tree: KinematicTree, q: np.ndarray,
                            root_mass: float = 0.0) -> np.ndarray:
    """Return J_c = sum m_i J_TGi / m, 3 x n (000 eq. 45 per body); the root mass only in m."""
    R, p = forward_kinematics(tree, q)
    axes = world_axes(tree, R)
    m = float(tree.mass.sum()) + root_mass
    if not m > 0.0:
        raise ValueError('the bodies have no mass: the centre of mass is undefined')
    J = np.zeros((3, tree.n))
    for i in range(tree.n):
        JT, JR = jacobian_t(tree, i, p[i], axes, p), jacobian_r(tree, i, axes)
        J += tree.mass[i] * (JT - skew(R[i] @ tree.com[i]) @ JR)      # eq. (45)
    return J / m
