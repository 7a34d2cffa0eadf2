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
Compiled (numba) kernels of Newton-Euler, CRBA and forward dynamics.

These are the fast paths used by :class:`~kron_dynamics.model.RobotModel`; the readable
implementations in :mod:`kron_dynamics.algorithms` are the reference they are tested
against. Kernels are compiled on first use and cached on disk (``cache=True``).
"""

import numba
import numpy as np

from .tree import KinematicTree

_jit = numba.njit(cache=True, fastmath=False, nogil=True)


@_jit
def _cross(a, b):
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


@_jit
def _joint_transform(revolute, axis, R0, p0, qi):
    if revolute:
        x, y, z = axis[0], axis[1], axis[2]
        c, s = np.cos(qi), np.sin(qi)
        t = 1.0 - c
        Rq = np.array([[t * x * x + c, t * x * y - s * z, t * x * z + s * y],
                       [t * x * y + s * z, t * y * y + c, t * y * z - s * x],
                       [t * x * z - s * y, t * y * z + s * x, t * z * z + c]])
        return R0 @ Rq, p0.copy()
    return R0.copy(), p0 + R0 @ (axis * qi)


@_jit
def rnea_kernel(parent, revolute, axis, R0, p0, mass, com, inertia, gravity, q, qd, qdd,
                f_ext):
    """Recursive Newton-Euler in body frames; f_ext is (n, 6) body-frame wrenches or (0, 6)."""
    n = parent.shape[0]
    Rs = np.empty((n, 3, 3))
    ps = np.empty((n, 3))
    w = np.empty((n, 3))
    dw = np.empty((n, 3))
    a = np.empty((n, 3))
    f = np.empty((n, 3))
    m = np.empty((n, 3))
    zero = np.zeros(3)
    for i in range(n):
        R, r = _joint_transform(revolute[i], axis[i], R0[i], p0[i], q[i])
        Rs[i] = R
        ps[i] = r
        par = parent[i]
        if par < 0:
            w_p, dw_p, a_p = zero, zero, -gravity
        else:
            w_p, dw_p, a_p = w[par], dw[par], a[par]
        z = axis[i]
        RT = R.T
        a_o = RT @ (a_p + _cross(dw_p, r) + _cross(w_p, _cross(w_p, r)))
        w_in = RT @ w_p
        dw_in = RT @ dw_p
        if revolute[i]:
            w[i] = w_in + z * qd[i]
            dw[i] = dw_in + z * qdd[i] + _cross(w_in, z * qd[i])
            a[i] = a_o
        else:
            w[i] = w_in
            dw[i] = dw_in
            a[i] = a_o + z * qdd[i] + 2.0 * _cross(w_in, z * qd[i])
        c = com[i]
        a_c = a[i] + _cross(dw[i], c) + _cross(w[i], _cross(w[i], c))
        F = mass[i] * a_c
        f[i] = F
        m[i] = inertia[i] @ dw[i] + _cross(w[i], inertia[i] @ w[i]) + _cross(c, F)
        if f_ext.shape[0] == n:
            f[i] -= f_ext[i, :3]
            m[i] -= f_ext[i, 3:]
    tau = np.empty(n)
    for i in range(n - 1, -1, -1):
        z = axis[i]
        if revolute[i]:
            tau[i] = z @ m[i]
        else:
            tau[i] = z @ f[i]
        par = parent[i]
        if par >= 0:
            fp = Rs[i] @ f[i]
            f[par] += fp
            m[par] += Rs[i] @ m[i] + _cross(ps[i], fp)
    return tau


@_jit
def crba_kernel(parent, revolute, axis, R0, p0, mass, com, inertia, q):
    """Composite-rigid-body algorithm with spatial quantities in the root frame."""
    n = parent.shape[0]
    R = np.empty((n, 3, 3))
    p = np.empty((n, 3))
    Ic = np.zeros((n, 6, 6))
    S = np.zeros((n, 6))
    for i in range(n):
        Rl, pl = _joint_transform(revolute[i], axis[i], R0[i], p0[i], q[i])
        par = parent[i]
        if par < 0:
            R[i] = Rl
            p[i] = pl
        else:
            R[i] = R[par] @ Rl
            p[i] = p[par] + R[par] @ pl
        a = R[i] @ axis[i]
        if revolute[i]:
            S[i, :3] = a
            S[i, 3:] = _cross(p[i], a)
        else:
            S[i, 3:] = a
        c = p[i] + R[i] @ com[i]
        IG = R[i] @ inertia[i] @ R[i].T
        mi = mass[i]
        C = np.array([[0.0, -c[2], c[1]], [c[2], 0.0, -c[0]], [-c[1], c[0], 0.0]])
        Ic[i, :3, :3] = IG + mi * (C @ C.T)
        Ic[i, :3, 3:] = mi * C
        Ic[i, 3:, :3] = mi * C.T
        for k in range(3):
            Ic[i, 3 + k, 3 + k] = mi
    for i in range(n - 1, -1, -1):
        if parent[i] >= 0:
            Ic[parent[i]] += Ic[i]
    M = np.zeros((n, n))
    for j in range(n):
        F = Ic[j] @ S[j]
        i = j
        while i >= 0:
            v = S[i] @ F
            M[i, j] = v
            M[j, i] = v
            i = parent[i]
    return M


@_jit
def _cholesky_solve(M, b, rcond):
    """
    Solve M x = b for symmetric M by Cholesky; ok is False if cond(M) > 1/rcond.

    Same rule as :func:`kron_dynamics.algorithms.forward_dynamics.solve_mass_matrix`: accept
    at once when trace(M) ||L^-1||_F^2 < 1/rcond (a guaranteed bound on cond(M)), otherwise
    decide on the exact eigenvalues.
    """
    n = M.shape[0]
    L = np.zeros((n, n))
    pd = True
    for j in range(n):
        s = M[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 0.0:
            pd = False
            break
        L[j, j] = np.sqrt(s)
        for i in range(j + 1, n):
            t = M[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            L[i, j] = t / L[j, j]
    if pd:
        # ||L^-1||_F^2 by forward substitution on the identity
        inv_norm = 0.0
        trace = 0.0
        for c in range(n):
            trace += M[c, c]
            col = np.zeros(n)
            for i in range(c, n):
                t = 1.0 if i == c else 0.0
                for k in range(c, i):
                    t -= L[i, k] * col[k]
                col[i] = t / L[i, i]
                inv_norm += col[i] * col[i]
        pd = inv_norm * rcond * trace < 1.0
        if not pd:
            ev = np.linalg.eigvalsh(M)
            pd = ev[0] > rcond * max(abs(ev[0]), abs(ev[-1]))
    if not pd:
        return False, np.full(n, np.nan)
    y = np.empty(n)
    for i in range(n):
        t = b[i]
        for k in range(i):
            t -= L[i, k] * y[k]
        y[i] = t / L[i, i]
    x = np.empty(n)
    for i in range(n - 1, -1, -1):
        t = y[i]
        for k in range(i + 1, n):
            t -= L[k, i] * x[k]
        x[i] = t / L[i, i]
    return True, x


@_jit
def forward_dynamics_kernel(parent, revolute, axis, R0, p0, mass, com, inertia, gravity,
                            armature, damping, q, qd, tau):
    """Return (ok, q'') of (M + diag(armature)) q'' = tau - damping q' - C*(q' kron q') - G."""
    M = crba_kernel(parent, revolute, axis, R0, p0, mass, com, inertia, q)
    for i in range(M.shape[0]):
        M[i, i] += armature[i]
    bias = rnea_kernel(parent, revolute, axis, R0, p0, mass, com, inertia, gravity, q, qd,
                       np.zeros_like(q), np.zeros((0, 6)))
    return _cholesky_solve(M, tau - damping * qd - bias, 1e-12)


@_jit
def rk4_kernel(parent, revolute, axis, R0, p0, mass, com, inertia, gravity, armature,
               damping, q, qd, tau, dt, steps):
    """Integrate ``steps`` RK4 steps of length dt with tau held; ok False if M is singular."""
    args = (parent, revolute, axis, R0, p0, mass, com, inertia, gravity, armature, damping)
    for _ in range(steps):
        ok1, a1 = forward_dynamics_kernel(*args, q, qd, tau)
        ok2, a2 = forward_dynamics_kernel(*args, q + dt / 2 * qd, qd + dt / 2 * a1, tau)
        v2 = qd + dt / 2 * a1
        ok3, a3 = forward_dynamics_kernel(*args, q + dt / 2 * v2, qd + dt / 2 * a2, tau)
        v3 = qd + dt / 2 * a2
        ok4, a4 = forward_dynamics_kernel(*args, q + dt * v3, qd + dt * a3, tau)
        v4 = qd + dt * a3
        if not (ok1 and ok2 and ok3 and ok4):
            return False, q, qd
        q = q + dt / 6 * (qd + 2 * v2 + 2 * v3 + v4)
        qd = qd + dt / 6 * (a1 + 2 * a2 + 2 * a3 + a4)
    return True, q, qd


@_jit
def rnea_batch_kernel(parent, revolute, axis, R0, p0, mass, com, inertia, gravity, Q, Qd,
                      Qdd):
    """rnea_kernel over the rows of (N, n) arrays."""
    N, n = Q.shape
    out = np.empty((N, n))
    no_ext = np.zeros((0, 6))
    for k in range(N):
        out[k] = rnea_kernel(parent, revolute, axis, R0, p0, mass, com, inertia, gravity,
                             Q[k], Qd[k], Qdd[k], no_ext)
    return out


@_jit
def crba_batch_kernel(parent, revolute, axis, R0, p0, mass, com, inertia, Q):
    """crba_kernel over the rows of an (N, n) array."""
    N, n = Q.shape
    out = np.empty((N, n, n))
    for k in range(N):
        out[k] = crba_kernel(parent, revolute, axis, R0, p0, mass, com, inertia, Q[k])
    return out


def tree_args(tree: KinematicTree) -> tuple:
    """Return the tree's arrays in the kernels' argument order (contiguous, typed)."""
    return (np.ascontiguousarray(tree.parent, dtype=np.int64),
            np.ascontiguousarray(tree.revolute, dtype=np.bool_),
            np.ascontiguousarray(tree.axis, dtype=np.float64),
            np.ascontiguousarray(tree.R0, dtype=np.float64),
            np.ascontiguousarray(tree.p0, dtype=np.float64),
            np.ascontiguousarray(tree.mass, dtype=np.float64),
            np.ascontiguousarray(tree.com, dtype=np.float64),
            np.ascontiguousarray(tree.inertia, dtype=np.float64))
