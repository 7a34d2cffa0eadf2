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
The joint torque regressor: tau = Y(q, q', q'') p, linear in the inertial parameters.

Newton-Euler (seed 002) is linear in each body's ten inertial parameters p_j = (m, m c,
I_o), with I_o the inertia about the body frame origin in body axes (Ixx, Ixy, Iyy, Ixz, Iyz,
Izz; Pinocchio's order). The force and the moment about its origin that body j needs are

    F = m a + w' x h + w x (w x h),        M = I_o w' + w x (I_o w) + h x a,    h = m c,

with (w, w', a) its angular velocity, angular acceleration and the classical acceleration of
its origin (gravity in a, as an upward acceleration of the base: the outward pass of
:func:`.rnea.body_motion`). Written as F = A_F p_j, M = A_M p_j (3 x 10 each), every joint k
at or above body j carries the block moved to its frame: Y[k, 10 j : 10 j + 10] = z_k . A_M
(revolute) or z_k . A_F (prismatic), the blocks passed inward as the wrenches are in
:func:`.rnea.inward_pass`.
"""

import numpy as np

from ..model.rotations import skew
from ..model.tree import KinematicTree
from .rnea import body_motion

# the six independent entries of a symmetric 3 x 3 matrix, in Pinocchio's order
INERTIA_ENTRIES = ((0, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 2))
PARAMETER_NAMES = ('m', 'mcx', 'mcy', 'mcz', 'Ixx', 'Ixy', 'Iyy', 'Ixz', 'Iyz', 'Izz')


def body_parameters(mass: float, com, inertia) -> np.ndarray:
    """Return p = (m, m c, Ixx, Ixy, Iyy, Ixz, Iyz, Izz) with the inertia about the origin."""
    c = np.asarray(com, dtype=float)
    I_o = np.asarray(inertia, dtype=float) + mass * (c @ c * np.eye(3) - np.outer(c, c))
    return np.concatenate([[mass], mass * c, [I_o[i, j] for i, j in INERTIA_ENTRIES]])


def body_inertia(p) -> tuple:
    """Return (mass, com, inertia about the com) of a parameter vector (mass > 0)."""
    m, h = float(p[0]), np.asarray(p[1:4], dtype=float)
    I_o = np.zeros((3, 3))
    for k, (i, j) in enumerate(INERTIA_ENTRIES):
        I_o[i, j] = I_o[j, i] = p[4 + k]
    c = h / m if m > 0.0 else np.zeros(3)
    return m, c, I_o - m * (c @ c * np.eye(3) - np.outer(c, c))


def body_regressor(w, dw, a) -> tuple:
    """Return (A_F, A_M), 3 x 10 each: a body's force and moment about its origin, per p."""
    A_F, A_M = np.zeros((3, 10)), np.zeros((3, 10))
    A_F[:, 0] = a
    for k, e in enumerate(np.eye(3)):
        A_F[:, 1 + k] = np.cross(dw, e) + np.cross(w, np.cross(w, e))
        A_M[:, 1 + k] = np.cross(e, a)
    for k, (i, j) in enumerate(INERTIA_ENTRIES):
        E = np.zeros((3, 3))
        E[i, j] = E[j, i] = 1.0
        A_M[:, 4 + k] = E @ dw + np.cross(w, E @ w)
    return A_F, A_M


def regressor(tree: KinematicTree, q, qd, qdd, gravity=None) -> np.ndarray:
    """Return Y (n x 10 n), tau = Y p with p the bodies' parameters stacked (tree order)."""
    g = tree.gravity if gravity is None else np.asarray(gravity, dtype=float)
    zero = np.zeros(3)
    Rs, ps, w, dw, a = body_motion(tree, q, qd, qdd, zero, zero, -g)
    n = tree.n
    Y = np.zeros((n, 10 * n))
    for j in range(n):
        A_F, A_M = body_regressor(w[j], dw[j], a[j])
        k = j
        while k >= 0:
            z = tree.axis[k]
            Y[k, 10 * j:10 * j + 10] = z @ A_M if tree.revolute[k] else z @ A_F
            A_F = Rs[k] @ A_F
            A_M = Rs[k] @ A_M + skew(ps[k]) @ A_F
            k = int(tree.parent[k])
    return Y
