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
The Coriolis matrix from spatial Jacobians: C = sum_b J_b^T (I_b J_b' + B(I_b, V_b) J_b).

For velocities that are no coordinate derivatives (a floating base's twist) the Christoffel
form of 000 eq. (101) does not apply; this is the form Pinocchio's ``computeCoriolisMatrix``
computes (Echeandia and Wensing, 2021): with J_b the 6 x nv spatial Jacobian of body b in
world axes at the world origin (rows linear, angular), V_b = J_b v its spatial velocity, I_b
its spatial inertia there and

    B(I, V) = 1/2 (V x* I + (I V) xbar* - I V x),   (f xbar*) V = V x* f,

C v = sum J^T (I J' v + V x* I V) is the Newton-Euler bias h - G, and C + C^T = M' because
d/dt I_b = V_b x* I_b - I_b V_b x in world axes and B + B^T is exactly that.
"""

import numpy as np

from ..model.rotations import skew


def spatial_inertia(mass: float, com: np.ndarray, inertia: np.ndarray) -> np.ndarray:
    """Return the 6 x 6 spatial inertia (linear, angular) about the origin of com's frame."""
    C = skew(com)
    out = np.zeros((6, 6))
    out[:3, :3] = mass * np.eye(3)
    out[:3, 3:] = -mass * C
    out[3:, :3] = mass * C
    out[3:, 3:] = inertia - mass * C @ C
    return out


def motion_cross(V: np.ndarray) -> np.ndarray:
    """
    Return V x for a spatial motion V = (v, w): (V x) m = (w x m_v + v x m_w, w x m_w).

    The Lie bracket ad_V of twists, linear rows first (the base's exponential coordinates in
    :mod:`kron_dynamics.floating_model` use it too).
    """
    out = np.zeros((6, 6))
    out[:3, :3] = out[3:, 3:] = skew(V[3:])
    out[:3, 3:] = skew(V[:3])
    return out


def force_cross_bar(f: np.ndarray) -> np.ndarray:
    """Return f xbar*, the map V -> V x* f for a spatial force f = (force, moment)."""
    out = np.zeros((6, 6))
    out[:3, 3:] = -skew(f[:3])
    out[3:, :3] = -skew(f[:3])
    out[3:, 3:] = -skew(f[3:])
    return out


def coriolis_matrix_spatial(bodies, v: np.ndarray) -> np.ndarray:
    """
    Return C (nv x nv) of bodies given as (mass, com, central inertia, J, J').

    com (3,) and the central inertia (3 x 3) in world axes, J and J' the 6 x nv world spatial
    Jacobian of the body and its time derivative along v.
    """
    nv = len(v)
    C = np.zeros((nv, nv))
    for mass, com, inertia, J, dJ in bodies:
        I6 = spatial_inertia(mass, com, inertia)
        V = J @ v
        Vx = motion_cross(V)
        B = 0.5 * (-Vx.T @ I6 + force_cross_bar(I6 @ V) - I6 @ Vx)     # V x* = -(V x)^T
        C += J.T @ (I6 @ dJ + B @ J)
    return C
