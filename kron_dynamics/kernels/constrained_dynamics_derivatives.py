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
Derivatives of contact-constrained forward dynamics, compiled: the contact terms, the KKT solve.

Mirrors :mod:`kron_dynamics.algorithms.constrained_dynamics_derivatives` (its readable
reference, which states the formulas): :func:`contact_derivative_terms` is its
``contact_acceleration_derivatives`` and ``contact_force_derivative`` along every contact's
path in one call (and the contact Jacobian's rows, from the same columns); :func:`kkt_solve`
solves the KKT system by the Schur complement on M = L L^T (the Delassus matrix
J_c M^-1 J_c^T), where the readable one factorises the whole KKT matrix.
"""

import numba
import numpy as np

from .algebra import add, chunks, cross, dot, inline, jit, mtv, mv, pjit, scl, sub
from .coupled import project_columns, project_matrix
from .forward_dynamics import cholesky_factor_into, solve_rows, solve_rows_transposed


@inline
def _mcross(w, v, w2, v2):
    """Return the motion cross product (w, v) x (w2, v2), angular first."""
    return cross(w, w2), add(cross(w, v2), cross(v, w2))


@inline
def _col(S, j):
    """Return column j of a (6, k) array of motions as (angular, linear) tuples."""
    return (S[0, j], S[1, j], S[2, j]), (S[3, j], S[4, j], S[5, j])


@inline
def _in_frame(R, p, w, v):
    """Return a root-frame motion (w, v) at the root origin in the frame (R 9-tuple, p)."""
    return mtv(R, w), mtv(R, add(v, cross(w, p)))


@inline
def _put(out, r, c, x):
    """Write a 3-tuple into rows r..r+2 of column c."""
    out[r, c], out[r + 1, c], out[r + 2, c] = x[0], x[1], x[2]


@jit
def contact_derivative_terms(axes, paths, lengths, nb, v, a, poses, rows, points, dims, local,
                             lam, J, da_dq, da_dv, dQ):
    """
    Write the contacts' J_c, da_c/dq, da_c/dv and d(J_c^T lambda)/dq into zeroed outputs.

    poses (L, 4, 4): every link's pose (``link_poses``); axes (nv, 5) per velocity
    coordinate the row of the link it moves (its joint's child link, a moving base's link),
    1 if it turns (0: it slides) and its axis in that link's axes: its motion in the root
    frame is (R a, p x R a) or (0, R a). Per contact c: its path paths[c, :lengths[c]] (a
    moving base's nb coordinates first, then the body's joints root first), its link's row
    rows[c], its point points[c], dims[c] 3 or 6, local[c] 1 for rows in the contact's axes
    (0: world axes). v, a (nv) the velocities and accelerations, lam the contact forces. J,
    da_dq, da_dv (m, nv): the contacts' rows in order; dQ (nv, nv).
    """
    _terms(axes, paths, lengths, nb, v, a, poses, rows, points, dims, local, lam, J, da_dq,
           da_dv, dQ)
    return True


@inline
def _terms(axes, paths, lengths, nb, v, a, poses, rows, points, dims, local, lam, J, da_dq,
           da_dv, dQ):
    """Write every contact's rows and terms (:func:`_contact`, the contacts in order)."""
    r0 = 0
    for c in range(paths.shape[0]):
        _contact(axes, paths[c, :lengths[c]], nb, v, a, poses, poses[rows[c]], points[c],
                 dims[c], local[c] != 0, lam, r0, J, da_dq, da_dv, dQ)
        r0 += dims[c]


@inline
def _contact(axes, idx, nb, v, a, poses, T, point, dim, local, lam, r0, J, da_dq, da_dv, dQ):
    """
    Write one contact's rows r0.. r0 + dim of J, da_dq, da_dv and add its terms to dQ.

    The readable reference's formulas, column by column along the contact's path idx.
    """
    k = idx.shape[0]
    S = np.empty((6, k))              # the path's motions, angular first
    for j in range(k):
        c = idx[j]
        L = poses[int(axes[c, 0])]
        e = (axes[c, 2], axes[c, 3], axes[c, 4])
        u = (L[0, 0] * e[0] + L[0, 1] * e[1] + L[0, 2] * e[2],
             L[1, 0] * e[0] + L[1, 1] * e[1] + L[1, 2] * e[2],
             L[2, 0] * e[0] + L[2, 1] * e[1] + L[2, 2] * e[2])
        if axes[c, 1] != 0.0:
            w, t = u, cross((L[0, 3], L[1, 3], L[2, 3]), u)
        else:
            w, t = (0.0, 0.0, 0.0), u
        S[0, j], S[1, j], S[2, j], S[3, j], S[4, j], S[5, j] = w[0], w[1], w[2], t[0], t[1], t[2]
    R = (T[0, 0], T[0, 1], T[0, 2], T[1, 0], T[1, 1], T[1, 2], T[2, 0], T[2, 1], T[2, 2])
    p = add(mv(R, (point[0], point[1], point[2])), (T[0, 3], T[1, 3], T[2, 3]))
    zero = (0.0, 0.0, 0.0)
    Vw, Vv, Aw, Av = zero, zero, zero, zero
    for j in range(nb):
        w, u = _col(S, j)
        vj, aj = v[idx[j]], a[idx[j]]
        Vw, Vv = add(Vw, scl(w, vj)), add(Vv, scl(u, vj))
        Aw, Av = add(Aw, scl(w, aj)), add(Av, scl(u, aj))
    par = np.zeros((k, 18))       # per coordinate: Vp, Ap (6 each), S'_j (6)
    own = np.empty((k, 6))        # the velocity of the coordinate's body
    for j in range(k):
        if j < nb:
            own[j, 0:3], own[j, 3:6] = Vw, Vv
            continue
        w, u = _col(S, j)
        vj, aj = v[idx[j]], a[idx[j]]
        for c in range(3):
            par[j, c], par[j, 3 + c], par[j, 6 + c], par[j, 9 + c] = Vw[c], Vv[c], Aw[c], Av[c]
        sw, sv = _mcross(Vw, Vv, w, u)
        Vw, Vv = add(Vw, scl(w, vj)), add(Vv, scl(u, vj))
        Aw, Av = add(Aw, add(scl(w, aj), scl(sw, vj))), add(Av, add(scl(u, aj), scl(sv, vj)))
        for c in range(3):
            par[j, 12 + c], par[j, 15 + c] = sw[c], sv[c]
            own[j, c], own[j, 3 + c] = Vw[c], Vv[c]
    wl, ul = _in_frame(R, p, Vw, Vv)
    for j in range(k):
        w, u = _col(S, j)
        cj = idx[j]
        pw, pv = (par[j, 0], par[j, 1], par[j, 2]), (par[j, 3], par[j, 4], par[j, 5])
        qw, qv = (par[j, 6], par[j, 7], par[j, 8]), (par[j, 9], par[j, 10], par[j, 11])
        dw, dv = (par[j, 12], par[j, 13], par[j, 14]), (par[j, 15], par[j, 16], par[j, 17])
        # dV/dq_j and dA/dq_j less the turning of the frame (readable: dVq, dAq)
        xw, xv = _mcross(w, u, pw, pv)
        Vq = _in_frame(R, p, scl(xw, -1.0), scl(xv, -1.0))
        yw, yv = _mcross(w, u, qw, qv)
        zw, zv = _mcross(xw, xv, sub(Vw, pw), sub(Vv, pv))
        Aq = _in_frame(R, p, scl(add(yw, zw), -1.0), scl(add(yv, zv), -1.0))
        Vd = _in_frame(R, p, w, u)
        ow, ov = _mcross(w, u, sub(Vw, (own[j, 0], own[j, 1], own[j, 2])),
                         sub(Vv, (own[j, 3], own[j, 4], own[j, 5])))
        Ad = _in_frame(R, p, add(dw, ow), add(dv, ov))
        if dim == 6:
            lin_q, ang_q, lin_v, ang_v = Aq[1], Aq[0], Ad[1], Ad[0]
        else:       # the classical acceleration of the point
            lin_q = add(Aq[1], add(cross(Vq[0], ul), cross(wl, Vq[1])))
            lin_v = add(Ad[1], add(cross(Vd[0], ul), cross(wl, Vd[1])))
            ang_q, ang_v = zero, zero
        lin_j, ang_j = Vd[1], Vd[0]           # the contact Jacobian's column
        if not local:
            lin_q, lin_v, ang_q, ang_v = mv(R, lin_q), mv(R, lin_v), mv(R, ang_q), mv(R, ang_v)
            lin_j, ang_j = mv(R, lin_j), mv(R, ang_j)
        _put(J, r0, cj, lin_j)
        _put(da_dq, r0, cj, lin_q)
        _put(da_dv, r0, cj, lin_v)
        if dim == 6:
            _put(J, r0 + 3, cj, ang_j)
            _put(da_dq, r0 + 3, cj, ang_q)
            _put(da_dv, r0 + 3, cj, ang_v)
    # d(J_c^T lambda)/dq: F = (m + p x f, f) in the root frame, moment first
    f = (lam[r0], lam[r0 + 1], lam[r0 + 2])
    m = (lam[r0 + 3], lam[r0 + 4], lam[r0 + 5]) if dim == 6 else zero
    if local:
        f, m = mv(R, f), mv(R, m)
    Fm = add(m, cross(p, f))
    for j in range(k):
        w, u = _col(S, j)
        tm, tf = add(cross(w, Fm), cross(u, f)), cross(w, f)      # S_j x* F
        moved = cross(add(cross(w, p), u), f)
        for i in range(k):
            wi, ui = _col(S, i)
            turned = dot(wi, tm) + dot(ui, tf)
            below = i > j or (i < nb and j < nb)
            if local:
                dQ[idx[i], idx[j]] += 0.0 if below else turned
            else:
                dQ[idx[i], idx[j]] += dot(wi, moved) - (turned if below else 0.0)


@jit
def kkt_solve(M, J, dtau_dq, dtau_dv, dQ, da_dq, da_dv, X, Y):
    """Solve the KKT system of the derivatives (:func:`_kkt`); 0, or why not."""
    return _kkt(M, J, dtau_dq, dtau_dv, dQ, da_dq, da_dv, X, Y)


@inline
def _kkt(M, J, dtau_dq, dtau_dv, dQ, da_dq, da_dv, X, Y):
    """
    Solve the KKT system of the derivatives into X (n, 3n) and Y (m, 3n); 0, or why not.

    [[M, J^T], [J, 0]] [X; Y] = [R1; R2] with R1 = (dQ - dtau_dq, -dtau_dv, I) and
    R2 = (-da_dq, -da_dv, 0): X = (dv'/dq, dv'/dv, dv'/dtau), Y = -(dlambda/dq, ...).
    M = L L^T (refused beyond cond 1e12, as forward dynamics), W = L^-1 J^T, Z = L^-1 R1,
    the Delassus matrix D = W^T W (refused beyond cond 1e10, as the constrained forward
    dynamics' redundant contacts): D Y = W^T Z - R2, X = L^-T (Z - W Y). Row by row, so
    that the inner loops run along contiguous rows. Returns 0, 1 (M refused) or 2 (D
    refused).
    """
    n, m = M.shape[0], J.shape[0]
    c = 3 * n
    L, y = np.zeros((n, n)), np.empty(max(n, m))
    if not cholesky_factor_into(M, 1e-12, L, y):
        return 1
    ZW = np.zeros((n, c + m))     # (Z | W)
    for i in range(n):
        for j in range(n):
            ZW[i, j] = dQ[i, j] - dtau_dq[i, j]
            ZW[i, n + j] = -dtau_dv[i, j]
        ZW[i, 2 * n + i] = 1.0
        for r in range(m):
            ZW[i, c + r] = J[r, i]
    solve_rows(L, ZW, c + m)          # L^-1 (R1 | J^T)
    D, Ld = np.empty((m, m)), np.zeros((m, m))
    for r in range(m):
        for s in range(r, m):
            t = 0.0
            for i in range(n):
                t += ZW[i, c + r] * ZW[i, c + s]
            D[r, s] = D[s, r] = t
    if not cholesky_factor_into(D, 1e-10, Ld, y):
        return 2
    for r in range(m):                # Y = D^-1 (W^T Z - R2)
        for j in range(n):
            Y[r, j] = da_dq[r, j]
            Y[r, n + j] = da_dv[r, j]
        for j in range(2 * n, c):
            Y[r, j] = 0.0
    for i in range(n):
        for r in range(m):
            t = ZW[i, c + r]
            for j in range(c):
                Y[r, j] += t * ZW[i, j]
    solve_rows(Ld, Y, c)
    solve_rows_transposed(Ld, Y, c)
    for i in range(n):                # X = L^-T (Z - W Y)
        for j in range(c):
            X[i, j] = ZW[i, j]
        for r in range(m):
            t = ZW[i, c + r]
            for j in range(c):
                X[i, j] -= t * Y[r, j]
    solve_rows_transposed(L, X, c)
    return 0


@pjit
def constrained_derivatives_batch(axes, paths, lengths, nb, VF, AF, poses, rows, points, dims,
                                  local, lam, cpl, project, dtau_dq, dtau_dv, M, X, Y, ok):
    """
    Write the derivatives of N states' constrained dynamics into X, Y; ok (N) per row.

    Per row r: :func:`contact_derivative_terms` on the unconstrained tree (VF, AF, poses
    (N, L, 4, 4) of its coordinates), projected by P when ``project`` (mimic joints:
    J_c = J_f P, d(J_c^T lambda)/dq = P^T dQ_f P; ``cpl`` is P in kernels.coupled's
    coupling format, one non-zero per row), then :func:`kkt_solve` with the
    row's inverse-dynamics derivatives and M, into X[r] (n, 3n) and Y[r] (m, 3n). ok[r]
    False where the solve refuses (the single call says why). Work once per chunk; each
    row one call of :func:`_row` (not
    inlined: numba's parfor analysis rejects the inlined tuple arithmetic).
    """
    N, n, m, nf = VF.shape[0], M.shape[1], lam.shape[1], VF.shape[1]
    K = chunks(N)
    for c in numba.prange(K):
        work = _work(m, nf, n)
        for r in range(c * N // K, (c + 1) * N // K):
            ok[r] = _row(axes, paths, lengths, nb, VF[r], AF[r], poses[r], rows, points, dims,
                         local, lam[r], cpl, project, dtau_dq[r], dtau_dv[r], M[r], X[r], Y[r],
                         work) == 0
    return True


@jit
def constrained_derivatives(axes, paths, lengths, nb, vf, af, poses, rows, points, dims, local,
                            lam, cpl, project, dtau_dq, dtau_dv, M, X, Y):
    """
    One state's row of :func:`constrained_derivatives_batch`: 0, or why not (:func:`_kkt`).

    The same steps in the same order as a batch row: the same bits.
    """
    m, nf, n = lam.shape[0], vf.shape[0], M.shape[0]
    return _row(axes, paths, lengths, nb, vf, af, poses, rows, points, dims, local, lam, cpl,
                project, dtau_dq, dtau_dv, M, X, Y, _work(m, nf, n))


@jit
def _work(m, nf, n):
    """Return the work of :func:`_row`: the terms on the full tree, projected, zeros (n)."""
    return (np.empty((m, nf)), np.empty((m, nf)), np.empty((m, nf)), np.empty((nf, nf)),
            np.empty((m, n)), np.empty((m, n)), np.empty((m, n)), np.empty((n, n)),
            np.zeros(n))


@jit
def _row(axes, paths, lengths, nb, vf, af, poses, rows, points, dims, local, lam, cpl, project,
         dtau_dq, dtau_dv, M, X, Y, work):
    """One row of :func:`constrained_derivatives_batch`: :func:`_kkt`'s code (0: solved)."""
    Jf, aqf, avf, dQf, J, aq, av, dQ, none = work
    Jf[:, :], aqf[:, :], avf[:, :], dQf[:, :] = 0.0, 0.0, 0.0, 0.0
    _terms(axes, paths, lengths, nb, vf, af, poses, rows, points, dims, local, lam, Jf, aqf,
           avf, dQf)
    if not project:
        return _kkt(M, Jf, dtau_dq, dtau_dv, dQf, aqf, avf, X, Y)
    project_columns(cpl, Jf, J)       # J_c = J_f P, P^T dQ_f P (kernels.coupled)
    project_columns(cpl, aqf, aq)
    project_columns(cpl, avf, av)
    project_matrix(cpl, dQf, none, dQ)
    return _kkt(M, J, dtau_dq, dtau_dv, dQ, aq, av, X, Y)
