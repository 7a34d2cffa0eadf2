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
    g = tree.gravity if gravity is None else np.asarray(gravity, dtype=float)
    zero = np.zeros(3)
    Rs, ps, w, dw, a = body_motion(tree, q, qd, qdd, zero, zero, -g)
    f, m = body_wrenches(tree, w, dw, a, f_ext)
    return inward_pass(tree, Rs, ps, f, m)[0]


def body_motion(tree: KinematicTree, q, qd, qdd, root_w, root_dw, root_a):
    """
    Outward pass: per body (R, p in the parent; w, w', a), body coordinates.

    w, w' are the angular velocity and acceleration, a the classical linear acceleration of
    the body origin. ``root_w``, ``root_dw``, ``root_a``: the same of the root frame (at rest:
    zeros, with gravity g entering as root_a = -g, an upward acceleration of the base).
    """
    n = tree.n
    Rs, ps = np.empty((n, 3, 3)), np.empty((n, 3))
    w, dw, a = np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3))
    for i in range(n):
        R, r = joint_transform(tree, i, q[i])
        Rs[i], ps[i] = R, r
        par = tree.parent[i]
        if par < 0:
            w_p, dw_p, a_p = root_w, root_dw, root_a
        else:
            w_p, dw_p, a_p = w[par], dw[par], a[par]
        z = tree.axis[i]
        a_o = R.T @ (a_p + np.cross(dw_p, r) + np.cross(w_p, np.cross(w_p, r)))
        w_in, dw_in = R.T @ w_p, R.T @ dw_p
        if tree.revolute[i]:
            w[i] = w_in + z * qd[i]
            dw[i] = dw_in + z * qdd[i] + np.cross(w_in, z * qd[i])
            a[i] = a_o
        else:
            w[i], dw[i] = w_in, dw_in
            a[i] = a_o + z * qdd[i] + 2.0 * np.cross(w_in, z * qd[i])
    return Rs, ps, w, dw, a


def rigid_body_wrench(mass, com, inertia, w, dw, a):
    """Newton-Euler of one body: the force and moment about its origin it needs (body frame)."""
    a_c = a + np.cross(dw, com) + np.cross(w, np.cross(w, com))
    F = mass * a_c
    return F, inertia @ dw + np.cross(w, inertia @ w) + np.cross(com, F)


def body_wrenches(tree: KinematicTree, w, dw, a, f_ext=None):
    """Return (f, m), (n, 3) each: what every body needs, less the external wrench on it."""
    n = tree.n
    f, m = np.empty((n, 3)), np.empty((n, 3))
    for i in range(n):
        f[i], m[i] = rigid_body_wrench(tree.mass[i], tree.com[i], tree.inertia[i],
                                       w[i], dw[i], a[i])
        if f_ext is not None:
            f[i] -= f_ext[i, :3]
            m[i] -= f_ext[i, 3:]
    return f, m


def inward_pass(tree: KinematicTree, Rs, ps, f, m):
    """
    Return (tau, f0, m0) by the inward pass: joint forces, the wrench passed to the root.

    (f0, m0) is what the top bodies pass to the root: a force and a moment about the root
    origin, root frame. f and m are consumed.
    """
    n = tree.n
    tau = np.empty(n)
    f0, m0 = np.zeros(3), np.zeros(3)
    for i in range(n - 1, -1, -1):
        z = tree.axis[i]
        tau[i] = z @ m[i] if tree.revolute[i] else z @ f[i]
        fp = Rs[i] @ f[i]
        mp = Rs[i] @ m[i] + np.cross(ps[i], fp)
        par = tree.parent[i]
        if par >= 0:
            f[par] += fp
            m[par] += mp
        else:
            f0 += fp
            m0 += mp
    return tau, f0, m0
