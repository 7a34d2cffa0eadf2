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
Partial derivatives of Newton-Euler inverse dynamics (dtau/dq, dtau/dq', M), compiled.

Mirrors :mod:`kron_dynamics.algorithms.rnea_derivatives` (its docstring has the formulas):
one outward pass of root-frame spatial velocities V, accelerations A, S' = V_parent x S,
each body's inertia I, Newton-Euler force f^B and K = V x* I - I V x + (I V) xbar*; one
inward pass summing I, f and K over sub-trees; then every ancestor pair (k, j). O(n d)
pairs for a tree of depth d, each a few 6-vector products: no n^3 tensor. Forward dynamics
derivatives follow at a = M^-1 (tau - h): da/dx = -M^-1 dtau/dx (Carpentier and Mansard).
"""

import numba
import numpy as np

from .algebra import add, chunks, cross, dot, get3, jit, pjit, scl, set3, sub
from .crba import body_inertia, CM, CQ, CQD, CS, inertia_times, motion_subspaces, NC
from .floating_base import (base_frame, chain_acceleration, floating_forward_dynamics,
                            lift_configuration, moving_forward_dynamics)
from .coupled import coupled_forward_dynamics, lift, project_derivatives
from .forward_dynamics import (cholesky_factor, forward_dynamics, ltl_in_place, solve_rows,
                               solve_rows_transposed)
from .kinematics import frames, load
from .layout import ARM, INV, PARENT

# work array: the CRBA's columns (frames, S, inertia m h Io, F, q, q'), then q'', V, A,
# V and A of the parent, S', f, K (6 x 6 row-major) and X = A_parent x S - S' x V_parent
DQDD = NC
DV, DA, DVP, DAP, DSD, DF = DQDD + 1, DQDD + 7, DQDD + 13, DQDD + 19, DQDD + 25, DQDD + 31
DK = DQDD + 37
DX = DK + 36
ND = DX + 6


@jit
def _mcross(w, v, mw, mv):
    """Motion cross product (w, v) x (mw, mv)."""
    return cross(w, mw), add(cross(w, mv), cross(v, mw))


@jit
def _fcross(w, v, fn, ff):
    """Force cross product (w, v) x* (fn, ff)."""
    return add(cross(w, fn), cross(v, ff)), cross(w, ff)


@jit
def _get6(wk, i, o):
    return get3(wk, i, o), get3(wk, i, o + 3)


@jit
def _set6(wk, i, o, a, b):
    set3(wk, i, o, a)
    set3(wk, i, o + 3, b)


@jit
def _k_row(wk, i, r, xw, xv):
    o = DK + 6 * r
    return (wk[i, o] * xw[0] + wk[i, o + 1] * xw[1] + wk[i, o + 2] * xw[2]
            + wk[i, o + 3] * xv[0] + wk[i, o + 4] * xv[1] + wk[i, o + 5] * xv[2])


@jit
def _k_times(wk, i, xw, xv):
    """K_i (x_w, x_v): the 6 x 6 block stored row-major at wk[i, DK:DK + 36]."""
    return ((_k_row(wk, i, 0, xw, xv), _k_row(wk, i, 1, xw, xv), _k_row(wk, i, 2, xw, xv)),
            (_k_row(wk, i, 3, xw, xv), _k_row(wk, i, 4, xw, xv), _k_row(wk, i, 5, xw, xv)))


@jit
def _sdot(wk, k, fn, ff):
    """S_k . (fn, ff)."""
    return dot(get3(wk, k, CS), fn) + dot(get3(wk, k, CS + 3), ff)


@jit
def derivative_pass(ints, reals, wk):
    """Outward and inward passes on wk's q, q', q'' columns (internal order)."""
    n = ints.shape[0]
    zero = (0.0, 0.0, 0.0)
    frames(ints, reals, wk, CQ, True)
    motion_subspaces(ints, reals, wk)
    for i in range(n):
        par = ints[i, PARENT]
        if par < 0:
            vpw, vpv = zero, zero
            apw, apv = zero, (-reals[n, 0], -reals[n, 1], -reals[n, 2])
        else:
            vpw, vpv = _get6(wk, par, DV)
            apw, apv = _get6(wk, par, DA)
        sw, sv = _get6(wk, i, CS)
        sdw, sdv = _mcross(vpw, vpv, sw, sv)
        qd, qdd = wk[i, CQD], wk[i, DQDD]
        vw, vv = add(vpw, scl(sw, qd)), add(vpv, scl(sv, qd))
        aw = add(add(apw, scl(sw, qdd)), scl(sdw, qd))
        av = add(add(apv, scl(sv, qdd)), scl(sdv, qd))
        _set6(wk, i, DVP, vpw, vpv)
        _set6(wk, i, DAP, apw, apv)
        _set6(wk, i, DSD, sdw, sdv)
        _set6(wk, i, DV, vw, vv)
        _set6(wk, i, DA, aw, av)
        xw1, xv1 = _mcross(apw, apv, sw, sv)
        xw2, xv2 = _mcross(sdw, sdv, vpw, vpv)
        _set6(wk, i, DX, sub(xw1, xw2), sub(xv1, xv2))
        body_inertia(reals, wk, i)
        hn, hf = inertia_times(wk, i, vw, vv)
        fn, ff = inertia_times(wk, i, aw, av)
        cn, cf = _fcross(vw, vv, hn, hf)
        _set6(wk, i, DF, add(fn, cn), add(ff, cf))
        for c in range(6):      # K e_c = V x* (I e_c) - I (V x e_c) + e_c x* h
            ew = (1.0 if c == 0 else 0.0, 1.0 if c == 1 else 0.0, 1.0 if c == 2 else 0.0)
            ev = (1.0 if c == 3 else 0.0, 1.0 if c == 4 else 0.0, 1.0 if c == 5 else 0.0)
            ien, ief = inertia_times(wk, i, ew, ev)
            an, af = _fcross(vw, vv, ien, ief)
            mw, mv = _mcross(vw, vv, ew, ev)
            bn, bf = inertia_times(wk, i, mw, mv)
            en, ef = _fcross(ew, ev, hn, hf)
            col = (an[0] - bn[0] + en[0], an[1] - bn[1] + en[1], an[2] - bn[2] + en[2],
                   af[0] - bf[0] + ef[0], af[1] - bf[1] + ef[1], af[2] - bf[2] + ef[2])
            for r in range(6):
                wk[i, DK + 6 * r + c] = col[r]
    for i in range(n - 1, -1, -1):
        par = ints[i, PARENT]
        if par >= 0:
            for k in range(CM, CM + 13):        # m, h, Io
                wk[par, k] += wk[i, k]
            for k in range(DF, DF + 6):
                wk[par, k] += wk[i, k]
            for k in range(DK, DK + 36):
                wk[par, k] += wk[i, k]


@jit
def _pair_terms(wk, m, j):
    """(Ic_m X_j + Kc_m S'_j, 2 Ic_m S'_j + Kc_m S_j) with the composites of body m."""
    xw, xv = _get6(wk, j, DX)
    sdw, sdv = _get6(wk, j, DSD)
    sw, sv = _get6(wk, j, CS)
    an, af = inertia_times(wk, m, xw, xv)
    bn, bf = _k_times(wk, m, sdw, sdv)
    cn, cf = inertia_times(wk, m, sdw, sdv)
    dn, df = _k_times(wk, m, sw, sv)
    return (add(an, bn), add(af, bf)), (add(scl(cn, 2.0), dn), add(scl(cf, 2.0), df))


@jit
def assemble_derivatives(ints, reals, wk, out):
    """dtau/dq, dtau/dq', M (armature in) in user order into out (3, n, n)."""
    n = ints.shape[0]
    for t in range(3):
        for u in range(n):
            for v in range(n):
                out[t, u, v] = 0.0
    for j in range(n):
        uj = ints[j, INV]
        (fn, ff), (rn, rf) = _pair_terms(wk, j, j)
        sw, sv = _get6(wk, j, CS)
        en, ef = _fcross(sw, sv, get3(wk, j, DF), get3(wk, j, DF + 3))
        Fn, Ff = inertia_times(wk, j, sw, sv)
        k = j
        while k >= 0:
            uk = ints[k, INV]
            out[0, uk, uj] = _sdot(wk, k, fn, ff) + (0.0 if k == j else _sdot(wk, k, en, ef))
            out[1, uk, uj] = _sdot(wk, k, rn, rf)
            m = _sdot(wk, k, Fn, Ff)
            out[2, uk, uj] = m
            out[2, uj, uk] = m
            k = ints[k, PARENT]
        out[2, uj, uj] += reals[j, ARM]
    # k strictly below j, the composites of k: S_k . (Ic_k X_j + Kc_k S'_j) is
    # F_k . X_j + G_k . S'_j with F_k = Ic_k S_k (Ic symmetric) and G_k = Kc_k^T S_k, made
    # once per k: two 6-vector dot products per pair
    for k in range(n):
        uk = ints[k, INV]
        sw, sv = _get6(wk, k, CS)
        Fn, Ff = inertia_times(wk, k, sw, sv)
        g = np.zeros(6)
        for r in range(6):
            o = DK + 6 * r
            s = wk[k, CS + r]
            for c in range(6):
                g[c] += wk[k, o + c] * s
        Gn, Gf = (g[0], g[1], g[2]), (g[3], g[4], g[5])
        j = ints[k, PARENT]
        while j >= 0:
            uj = ints[j, INV]
            xw, xv = _get6(wk, j, DX)
            dw, dv = _get6(wk, j, DSD)
            jw, jv = _get6(wk, j, CS)
            out[0, uk, uj] = dot(Fn, xw) + dot(Ff, xv) + dot(Gn, dw) + dot(Gf, dv)
            out[1, uk, uj] = (2.0 * (dot(Fn, dw) + dot(Ff, dv)) + dot(Gn, jw)
                              + dot(Gf, jv))
            j = ints[j, PARENT]


@jit
def _derivatives_row(ints, reals, q, qd, qdd, wk, out):
    n = ints.shape[0]
    if not (load(ints, q, n, wk, CQ) and load(ints, qd, n, wk, CQD)
            and load(ints, qdd, n, wk, DQDD)):
        return False
    derivative_pass(ints, reals, wk)
    assemble_derivatives(ints, reals, wk, out)
    return True


@jit
def rnea_derivatives(ints, reals, q, qd, qdd, out):
    """(dtau/dq, dtau/dq', M) in user order into out (3, n, n); False on a bad input."""
    return _derivatives_row(ints, reals, q, qd, qdd, np.empty((ints.shape[0], ND)), out)


@pjit
def rnea_derivatives_batch(ints, reals, Q, Qd, Qdd, out):
    """:func:`rnea_derivatives` over the rows of (N, n) arrays into out (N, 3, n, n)."""
    n = ints.shape[0]
    N = Q.shape[0]
    if Q.shape[1] != n or Qd.shape[0] != N or Qdd.shape[0] != N:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        wk = np.empty((n, ND))
        for r in range(c * N // K, (c + 1) * N // K):
            if not _derivatives_row(ints, reals, Q[r], Qd[r], Qdd[r], wk, out[r]):
                ok[c] = False
                break
    return np.all(ok)


@jit
def _fd_derivatives_row(ints, reals, q, qd, tau, wk, out):
    """(da/dq, da/dq', M^-1) at a = M^-1 (tau - h) into out (3, n, n); False if M singular."""
    n = ints.shape[0]
    a = np.empty(n)
    if not forward_dynamics(ints, reals, q, qd, tau, np.zeros(n), a):
        return False
    if not _derivatives_row(ints, reals, q, qd, a, wk, out):
        return False
    return tree_solve(ints, out, 1e-12)


@jit
def tree_solve(ints, out, rcond):
    """
    Replace out[0], out[1] by -M^-1 out[0], -M^-1 out[1] and out[2] = M by M^-1; ok.

    M = L^T L by the LTL factorisation of a tree's mass matrix
    (:func:`~kron_dynamics.kernels.forward_dynamics.ltl_in_place`: no fill-in, L[k, i] is
    non-zero only for i an ancestor of k), so each solve costs O(n d) for depth d instead of
    O(n^2). False when a pivot is not positive or trace(M) trace(M^-1) > 1 / rcond (the bound
    on cond(M) of :func:`~kron_dynamics.kernels.forward_dynamics.conditioned`): the facade's
    general path then decides, naming the joints of a singular M.
    """
    n = ints.shape[0]
    L = np.empty((n, n))
    trace = 0.0
    for i in range(n):
        ui = ints[i, INV]
        trace += out[2, ui, ui]
        for j in range(n):
            L[i, j] = out[2, ui, ints[j, INV]]
    if not ltl_in_place(ints, L):
        return False
    # every right-hand side at once, one row per body (internal order): [dq, dv, I]
    # columns in user order, so that each step is a row operation over 3 n contiguous values
    Y = np.zeros((n, 3 * n))
    for i in range(n):
        ui = ints[i, INV]
        for c in range(n):
            Y[i, c] = out[0, ui, c]
            Y[i, n + c] = out[1, ui, c]
        Y[i, 2 * n + ui] = 1.0
    w = 3 * n
    for k in range(n - 1, -1, -1):          # L^T Z = Y: leaves first
        d = 1.0 / L[k, k]
        for c in range(w):
            Y[k, c] *= d
        i = ints[k, PARENT]
        while i >= 0:
            f = L[k, i]
            for c in range(w):
                Y[i, c] -= f * Y[k, c]
            i = ints[i, PARENT]
    for k in range(n):                      # L X = Z: the root first
        i = ints[k, PARENT]
        while i >= 0:
            f = L[k, i]
            for c in range(w):
                Y[k, c] -= f * Y[i, c]
            i = ints[i, PARENT]
        d = 1.0 / L[k, k]
        for c in range(w):
            Y[k, c] *= d
    inv_trace = 0.0
    for i in range(n):
        ui = ints[i, INV]
        for c in range(n):
            out[0, ui, c] = -Y[i, c]
            out[1, ui, c] = -Y[i, n + c]
            out[2, ui, c] = Y[i, 2 * n + c]
        inv_trace += Y[i, 2 * n + ui]
    return inv_trace * trace * rcond < 1.0


@jit
def forward_dynamics_derivatives(ints, reals, q, qd, tau, out):
    """(da/dq, da/dq', M^-1) in user order into out (3, n, n); False on bad input or singular M."""
    return _fd_derivatives_row(ints, reals, q, qd, tau, np.empty((ints.shape[0], ND)), out)


@pjit
def forward_dynamics_derivatives_batch(ints, reals, Q, Qd, Tau, out):
    """:func:`forward_dynamics_derivatives` over the rows of (N, n) arrays into out."""
    n = ints.shape[0]
    N = Q.shape[0]
    if Q.shape[1] != n or Qd.shape[0] != N or Tau.shape[0] != N:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        wk = np.empty((n, ND))
        for r in range(c * N // K, (c + 1) * N // K):
            if not _fd_derivatives_row(ints, reals, Q[r], Qd[r], Tau[r], wk, out[r]):
                ok[c] = False
                break
    return np.all(ok)


@jit
def floating_corrections(v, gb, out):
    """
    Turn the base chain's (dtau/dq, dtau/dq', M) in out into the floating base's tangent ones.

    Moving the base changes nothing relative to it but gravity g_b (base axes), which turns
    the other way: the translation columns of dtau/dq are 0, the rotation columns
    -M[:, :3] [g_b]x; the chain's accelerations carry the base's velocity products
    (floating_base.chain_acceleration), whose derivative D enters dtau/dv as M[:, :6] D.
    """
    n = out.shape[1]
    vx, vy, vz, wx, wy, wz = v[0], v[1], v[2], v[3], v[4], v[5]
    D = np.zeros((6, 6))
    D[0, 1], D[0, 2], D[1, 0], D[1, 2], D[2, 0], D[2, 1] = -wz, wy, wz, -wx, -wy, wx
    D[0, 4], D[0, 5], D[1, 3], D[1, 5], D[2, 3], D[2, 4] = vz, -vy, -vz, vx, vy, -vx
    D[3, 4], D[3, 5], D[4, 3], D[4, 5], D[5, 3], D[5, 4] = -wz, -wy, wz, wx, -wy, -wx
    g0, g1, g2 = gb[0], gb[1], gb[2]
    for i in range(n):
        m0, m1, m2 = out[2, i, 0], out[2, i, 1], out[2, i, 2]
        out[0, i, 0] = out[0, i, 1] = out[0, i, 2] = 0.0
        # -(m0, m1, m2) [g]x: row vector times the skew matrix of g
        out[0, i, 3] = -(m1 * g2 - m2 * g1)
        out[0, i, 4] = -(m2 * g0 - m0 * g2)
        out[0, i, 5] = -(m0 * g1 - m1 * g0)
        for c in range(6):
            s = 0.0
            for k in range(6):
                s += out[2, i, k] * D[k, c]
            out[1, i, c] += s


@jit
def floating_rnea_derivatives(ints, reals, origin, q, v, dv, tol, out):
    """
    Floating-base (dtau/dq, dtau/dv, M) in the tangent space into out (3, nv, nv).

    Kernel order (a floating base without mimic joints, kernel = model coordinates); False on
    a bad input (the facade then names it).
    """
    n = ints.shape[0]
    if v.shape[0] != n or dv.shape[0] != n:
        return False
    qk, wreals = np.empty(n), np.empty_like(reals)
    if not base_frame(ints, reals, origin, q, tol, qk, wreals):
        return False
    a = np.empty(n)
    chain_acceleration(v, dv, a)
    if not _derivatives_row(ints, wreals, qk, v, a, np.empty((n, ND)), out):
        return False
    floating_corrections(v, wreals[n, :3], out)
    return True


@jit
def floating_forward_dynamics_derivatives(ints, reals, origin, q, v, tau, tol, out):
    """(dv'/dq, dv'/dv, M^-1) of a floating base into out (3, nv, nv); False if M singular."""
    n = ints.shape[0]
    a = np.empty(n)
    if not floating_forward_dynamics(ints, reals, origin, q, v, tau, tol, a):
        return False
    if not floating_rnea_derivatives(ints, reals, origin, q, v, a, tol, out):
        return False
    return tree_solve(ints, out, 1e-12)


@pjit
def floating_rnea_derivatives_batch(ints, reals, origin, Q, V, DV, tol, out):
    """:func:`floating_rnea_derivatives` over the rows of Q, V, DV into out (N, 3, nv, nv)."""
    N = Q.shape[0]
    if V.shape[0] != N or DV.shape[0] != N:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        for r in range(c * N // K, (c + 1) * N // K):
            if not floating_rnea_derivatives(ints, reals, origin, Q[r], V[r], DV[r], tol,
                                             out[r]):
                ok[c] = False
                break
    return np.all(ok)


@pjit
def floating_forward_dynamics_derivatives_batch(ints, reals, origin, Q, V, TAU, tol, out):
    """:func:`floating_forward_dynamics_derivatives` over the rows of Q, V, TAU into out."""
    N = Q.shape[0]
    if V.shape[0] != N or TAU.shape[0] != N:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        for r in range(c * N // K, (c + 1) * N // K):
            if not floating_forward_dynamics_derivatives(ints, reals, origin, Q[r], V[r],
                                                         TAU[r], tol, out[r]):
                ok[c] = False
                break
    return np.all(ok)


@jit
def dense_solve(out, rcond):
    """
    Do what :func:`tree_solve` does for a mass matrix without the tree's sparsity.

    Mimic joints couple branches: M = L L^T by Cholesky (cholesky_factor's conditioning
    rule), every right-hand side [dq, dv, I] at once by row operations; same order in and
    out.
    """
    n = out.shape[1]
    ok, L = cholesky_factor(out[2], rcond)
    if not ok:
        return False
    w = 3 * n
    Y = np.zeros((n, w))
    for i in range(n):
        for c in range(n):
            Y[i, c] = out[0, i, c]
            Y[i, n + c] = out[1, i, c]
        Y[i, 2 * n + i] = 1.0
    solve_rows(L, Y, w)                     # L Z = Y
    solve_rows_transposed(L, Y, w)          # L^T X = Z
    for i in range(n):
        for c in range(n):
            out[0, i, c] = -Y[i, c]
            out[1, i, c] = -Y[i, n + c]
            out[2, i, c] = Y[i, 2 * n + c]
    return True


@jit
def coupled_rnea_derivatives(ints, reals, cpl, arm, u, ud, udd, out):
    """
    Mimic joints: B^T (dtau/dq, dtau/dq', M) B (+ armature on M) at q = B u + d into out.

    ``ints``, ``reals`` the full tree (no armature), ``cpl`` its coupling
    (:mod:`.coupled`); (3, n, n) in u order; False on a bad input.
    """
    nf, n = ints.shape[0], out.shape[1]
    if u.shape[0] != n or ud.shape[0] != n or udd.shape[0] != n:
        return False
    q, qd, qdd = np.empty(nf), np.empty(nf), np.empty(nf)
    if not (lift(cpl, u, True, q) and lift(cpl, ud, False, qd)
            and lift(cpl, udd, False, qdd)):
        return False
    full = np.empty((3, nf, nf))
    if not _derivatives_row(ints, reals, q, qd, qdd, np.empty((nf, ND)), full):
        return False
    project_derivatives(cpl, full, arm, out)
    return True


@jit
def coupled_forward_dynamics_derivatives(ints, reals, cpl, arm, u, ud, tau, out):
    """Mimic joints: (du''/du, du''/du', M_u^-1) at u'' = forward dynamics into out."""
    n = out.shape[1]
    a = np.empty(n)
    if not coupled_forward_dynamics(ints, reals, cpl, arm, u, ud, tau, a):
        return False
    if not coupled_rnea_derivatives(ints, reals, cpl, arm, u, ud, a, out):
        return False
    return dense_solve(out, 1e-12)


@pjit
def coupled_rnea_derivatives_batch(ints, reals, cpl, arm, U, UD, UDD, out):
    """:func:`coupled_rnea_derivatives` over the rows of (N, n) arrays into out (N, 3, n, n)."""
    N = U.shape[0]
    if UD.shape[0] != N or UDD.shape[0] != N or out.shape[0] != N:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        for r in range(c * N // K, (c + 1) * N // K):
            if not coupled_rnea_derivatives(ints, reals, cpl, arm, U[r], UD[r], UDD[r], out[r]):
                ok[c] = False
                break
    return np.all(ok)


@pjit
def coupled_forward_dynamics_derivatives_batch(ints, reals, cpl, arm, U, UD, TAU, out):
    """:func:`coupled_forward_dynamics_derivatives` over rows into out (N, 3, n, n); ok."""
    N = U.shape[0]
    if UD.shape[0] != N or TAU.shape[0] != N or out.shape[0] != N:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        for r in range(c * N // K, (c + 1) * N // K):
            if not coupled_forward_dynamics_derivatives(ints, reals, cpl, arm, U[r], UD[r],
                                                        TAU[r], out[r]):
                ok[c] = False
                break
    return np.all(ok)


# ------------------------------------------------------------------ any moving base
# A planar base, or mimic joints on either base: lifted to the free-flying tree (kernels.
# floating_base's format ``pk``), the floating kernels above, then projected by P on both
# sides (P^T D P, 004 sec. 5), as MovingBase's NumPy path does (its reference).
@jit
def moving_rnea_derivatives(ints, reals, origin, planar, pk, arm, q, v, dv, tol, out):
    """P^T (dtau/dq, dtau/dv, M) P (+ armature on M) of any moving base into out (3, nv, nv)."""
    n, nv = ints.shape[0], out.shape[1]
    if pk.shape[0] != n or q.shape[0] != nv + 1 or v.shape[0] != nv or dv.shape[0] != nv \
            or arm.shape[0] != nv:
        return False
    qf, qk, vk, dvk, a = np.empty(n + 1), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    wreals = np.empty_like(reals)
    if not (lift_configuration(planar, pk, q, tol, qf) and lift(pk, v, False, vk)
            and lift(pk, dv, False, dvk) and base_frame(ints, reals, origin, qf, tol, qk,
                                                        wreals)):
        return False
    chain_acceleration(vk, dvk, a)
    full = np.empty((3, n, n))
    if not _derivatives_row(ints, wreals, qk, vk, a, np.empty((n, ND)), full):
        return False
    floating_corrections(vk, wreals[n, :3], full)
    project_derivatives(pk, full, arm, out)
    return True


@jit
def moving_forward_dynamics_derivatives(ints, reals, origin, planar, pk, arm, q, v, tau, tol,
                                        out):
    """(dv'/dq, dv'/dv, M^-1) of any moving base into out (3, nv, nv); False if M singular."""
    a = np.empty(out.shape[1])
    if not (moving_forward_dynamics(ints, reals, origin, planar, pk, arm, q, v, tau, tol, a)
            and moving_rnea_derivatives(ints, reals, origin, planar, pk, arm, q, v, a, tol,
                                        out)):
        return False
    return dense_solve(out, 1e-12)


@pjit
def moving_rnea_derivatives_batch(ints, reals, origin, planar, pk, arm, Q, V, DV, tol, out):
    """:func:`moving_rnea_derivatives` per row of Q, V, DV into out (N, 3, nv, nv)."""
    N = Q.shape[0]
    if V.shape[0] != N or DV.shape[0] != N or out.shape[0] != N:
        return False
    ok = np.ones(N, dtype=np.bool_)
    for r in numba.prange(N):
        ok[r] = moving_rnea_derivatives(ints, reals, origin, planar, pk, arm, Q[r], V[r], DV[r],
                                        tol, out[r])
    return np.all(ok)


@pjit
def moving_forward_dynamics_derivatives_batch(ints, reals, origin, planar, pk, arm, Q, V, TAU,
                                              tol, out):
    """:func:`moving_forward_dynamics_derivatives` per row of Q, V, TAU; a singular M: False."""
    N = Q.shape[0]
    if V.shape[0] != N or TAU.shape[0] != N or out.shape[0] != N:
        return False
    ok = np.ones(N, dtype=np.bool_)
    for r in numba.prange(N):
        ok[r] = moving_forward_dynamics_derivatives(ints, reals, origin, planar, pk, arm, Q[r],
                                                    V[r], TAU[r], tol, out[r])
    return np.all(ok)
