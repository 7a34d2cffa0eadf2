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
Recursive Newton-Euler inverse dynamics in body frames (seed 002).

Outward pass: angular velocity and acceleration and linear acceleration of every body
frame, gravity entering as an upward acceleration of the base. Inward pass: the force and
moment each joint transmits; the joint torque is its projection on the joint axis.
"""

import numpy as np

from ..model.tree import KinematicTree
from .kinematics import joint_transform


def rnea(tree: KinematicTree, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray,
         gravity: np.ndarray | None = None, f_ext: np.ndarray | None = None) -> np.ndarray:
    """
    Return tau = M(q) q'' + C*(q)(q' kron q') + G(q) - sum J^T F_ext.

    ``gravity`` overrides the tree's gravity (use zeros for the velocity terms alone).
    ``f_ext`` is (n, 6): per body, a force and a moment about the body frame origin, both in
    body-frame coordinates, applied by the environment to the body (004 eq. 33).
    """
    n = tree.n
    g = tree.gravity if gravity is None else np.asarray(gravity, dtype=float)
    Rs = np.empty((n, 3, 3))
    ps = np.empty((n, 3))
    w = np.empty((n, 3))
    dw = np.empty((n, 3))
    a = np.empty((n, 3))
    f = np.empty((n, 3))
    m = np.empty((n, 3))
    for i in range(n):
        R, r = joint_transform(tree, i, q[i])
        Rs[i], ps[i] = R, r
        par = tree.parent[i]
        if par < 0:
            w_p, dw_p, a_p = np.zeros(3), np.zeros(3), -g
        else:
            w_p, dw_p, a_p = w[par], dw[par], a[par]
        z = tree.axis[i]
        a_o = R.T @ (a_p + np.cross(dw_p, r) + np.cross(w_p, np.cross(w_p, r)))
        w_in = R.T @ w_p
        dw_in = R.T @ dw_p
        if tree.revolute[i]:
            w[i] = w_in + z * qd[i]
            dw[i] = dw_in + z * qdd[i] + np.cross(w_in, z * qd[i])
            a[i] = a_o
        else:
            w[i] = w_in
            dw[i] = dw_in
            a[i] = a_o + z * qdd[i] + 2.0 * np.cross(w_in, z * qd[i])
        c = tree.com[i]
        a_c = a[i] + np.cross(dw[i], c) + np.cross(w[i], np.cross(w[i], c))
        F = tree.mass[i] * a_c
        Iw = tree.inertia[i] @ w[i]
        f[i] = F
        m[i] = tree.inertia[i] @ dw[i] + np.cross(w[i], Iw) + np.cross(c, F)
        if f_ext is not None:
            f[i] -= f_ext[i, :3]
            m[i] -= f_ext[i, 3:]
    tau = np.empty(n)
    for i in range(n - 1, -1, -1):
        z = tree.axis[i]
        tau[i] = z @ m[i] if tree.revolute[i] else z @ f[i]
        par = tree.parent[i]
        if par >= 0:
            fp = Rs[i] @ f[i]
            f[par] += fp
            m[par] += Rs[i] @ m[i] + np.cross(ps[i], fp)
    return tau
