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
Forward dynamics q'' = M^-1 (tau - C*(q' kron q') - G) and RK4 integration, compiled.

Mirrors :mod:`kron_dynamics.algorithms.forward_dynamics`: M by CRBA, the bias by
Newton-Euler, a factorisation that refuses an ill-conditioned M by the same rule (the tree's
M = L^T L, which keeps M's sparsity; the dense Cholesky M = L L^T for other matrices).
"""

import numba
import numpy as np

from .algebra import chunks, inline, jit, pjit
from .crba import composite_pass, NC, write_mass_matrix
from .kinematics import compose_frames
from .layout import PARENT, PERM
from .rnea import NW, rnea_pass, WQ, WQD, WQDD, WTAU


@jit
def condition_bound(M, L):
    """Return :func:`condition_bound_into` with a new work vector."""
    return condition_bound_into(M, L, np.empty(M.shape[0]))


@inline
def condition_bound_into(M, L, y):
    """
    Return trace(M) ||C^-1 e||_inf ||C^-T e||_inf, an O(n^2) upper bound on cond_2(M).

    M = L L^T; C is L's comparison matrix (|L_ii| on the diagonal, -|L_ij| below it), whose
    inverse is non-negative and bounds |L^-1| entry by entry (Higham, Accuracy and Stability
    of Numerical Algorithms, 2nd ed., Thm. 8.12), so ||L^-1||_inf <= ||C^-1 e||_inf and
    ||L^-1||_1 <= ||C^-T e||_inf, two substitutions with e = (1, ..., 1). Then
    ||M^-1||_2 = ||L^-1||_2^2 <= ||L^-1||_1 ||L^-1||_inf and ||M||_2 <= trace(M). y: n of
    work.
    """
    n = M.shape[0]
    trace = 0.0
    row = 0.0
    for i in range(n):
        trace += M[i, i]
        t = 1.0
        for k in range(i):
            t += abs(L[i, k]) * y[k]
        y[i] = t / L[i, i]
        row = max(row, y[i])
    col = 0.0
    for j in range(n - 1, -1, -1):
        t = 1.0
        for k in range(j + 1, n):
            t += abs(L[k, j]) * y[k]
        y[j] = t / L[j, j]           # y[k > j] now hold C^-T e
        col = max(col, y[j])
    return trace * row * col


@jit
def cholesky_factor(M, rcond):
    """
    Return (ok, L): the Cholesky factor of symmetric M; ok is False if cond(M) > 1/rcond.

    Same rule as :func:`kron_dynamics.algorithms.forward_dynamics.solve_mass_matrix`: accept
    at once when a guaranteed bound on cond(M) is below 1/rcond (first
    :func:`condition_bound`, O(n^2); where it is too loose, trace(M) ||L^-1||_F^2, O(n^3)),
    otherwise decide on the exact eigenvalues. The bounds only decide how soon M is
    accepted: what is accepted is what the eigenvalues accept.
    """
    n = M.shape[0]
    L = np.zeros((n, n))
    return cholesky_factor_into(M, rcond, L, np.empty(n)), L


@inline
def cholesky_factor_into(M, rcond, L, y):
    """:func:`cholesky_factor` into L's lower triangle (the rest is not written); y: n of work."""
    n = M.shape[0]
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
    if pd and not condition_bound_into(M, L, y) * rcond < 1.0:
        pd = conditioned(M, L, rcond)
    return pd


@inline
def cholesky_solve_into(M, rcond, L, b, y, x):
    """
    Solve M x = b as :func:`cholesky_factor_into`, then :func:`substitute`: the same bits.

    One pass row by row (each row of L, then its forward-substitution step and its step of
    :func:`condition_bound_into`'s C y = e) and one backward pass (the back substitution
    and C^T z = e together), so that the three chains of dependent steps overlap; x is
    computed before the bound decides and is kept if the decision accepts M. b is
    overwritten (L^-1 b), y: n of work. False if M is not positive definite or cond(M) >
    1/rcond.
    """
    n = M.shape[0]
    trace = 0.0
    row = 0.0
    for i in range(n):
        for j in range(i):
            t = M[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            L[i, j] = t / L[j, j]
        s = M[i, i]
        for k in range(i):
            s -= L[i, k] * L[i, k]
        if not s > 0.0:
            return False
        d = np.sqrt(s)
        L[i, i] = d
        trace += M[i, i]
        t = b[i]
        u = 1.0
        for k in range(i):
            t -= L[i, k] * b[k]
            u += abs(L[i, k]) * y[k]
        b[i] = t / d
        y[i] = u / d
        row = max(row, y[i])
    col = 0.0
    for i in range(n - 1, -1, -1):
        t = b[i]
        u = 1.0
        for k in range(i + 1, n):
            t -= L[k, i] * x[k]
            u += abs(L[k, i]) * y[k]
        x[i] = t / L[i, i]
        y[i] = u / L[i, i]
        col = max(col, y[i])
    if trace * row * col * rcond < 1.0:
        return True
    return conditioned(M, L, rcond)


@jit
def conditioned(M, L, rcond):
    """
    Return whether cond(M) < 1/rcond, M = L L^T or L^T L (L lower triangular, zero elsewhere).

    Accept at once when trace(M) ||L^-1||_F^2 < 1/rcond (both factorisations give
    ||M^-1||_2 = ||L^-1||_2^2), otherwise decide on the exact eigenvalues. O(n^3): called
    where the O(n^2) bound is too loose to accept.
    """
    n = M.shape[0]
    # ||L^-1||_F^2 by forward substitution on the identity
    inv_norm = 0.0
    trace = 0.0
    col = np.zeros(n)
    for c in range(n):
        trace += M[c, c]
        for i in range(c, n):
            t = 1.0 if i == c else 0.0
            for k in range(c, i):
                t -= L[i, k] * col[k]
            col[i] = t / L[i, i]
            inv_norm += col[i] * col[i]
    if inv_norm * rcond * trace < 1.0:
        return True
    ev = np.linalg.eigvalsh(M)
    return ev[0] > rcond * max(abs(ev[0]), abs(ev[-1]))


@jit
def cholesky_substitute(L, b, x):
    """Write the solution of L L^T x = b into x (forward, then back substitution)."""
    substitute(L, b, np.empty(L.shape[0]), x)


@inline
def substitute(L, b, y, x):
    """:func:`cholesky_substitute` with y (n) as its work vector."""
    n = L.shape[0]
    for i in range(n):
        t = b[i]
        for k in range(i):
            t -= L[i, k] * y[k]
        y[i] = t / L[i, i]
    for i in range(n - 1, -1, -1):
        t = y[i]
        for k in range(i + 1, n):
            t -= L[k, i] * x[k]
        x[i] = t / L[i, i]


@inline
def tree_factor_into(ints, M, rcond, L, y):
    """
    M = L^T L, L lower triangular with M's tree sparsity; ok as :func:`cholesky_factor`'s.

    Featherstone's LTL factorisation ("Efficient factorization of the joint-space inertia
    matrix for branched kinematic trees", IJRR 24(6), 2005, sec. 4): M_ij = 0 unless i is
    an ancestor of j or j of i, L keeps that pattern, so the cost is O(sum of depth^2) where
    the dense factorisation is O(n^3). Only the pattern's entries of L are written: the rest
    must be zero (:func:`fd_work`'s L). Accepted on the same rule: an O(sum of depths)
    bound (:func:`tree_condition_bound`), else :func:`conditioned`. y: n of work. The plain
    form of what forward dynamics runs fused (:func:`tree_solve_into`, tested against it).
    """
    tree_pattern_into(ints, M, L)
    if not ltl_in_place(ints, L):
        return False
    if tree_condition_bound(ints, M, L, y) * rcond < 1.0:
        return True
    return conditioned(M, L, rcond)


@inline
def tree_pattern_into(ints, M, L):
    """Copy M's entries on the tree's pattern (each row up to its ancestors) into L."""
    for k in range(M.shape[0]):
        L[k, k] = M[k, k]
        i = ints[k, PARENT]
        while i >= 0:
            L[k, i] = M[k, i]
            i = ints[i, PARENT]


@inline
def ltl_in_place(ints, L):
    """
    Overwrite L, holding M's entries on the tree's pattern, with the L of M = L^T L; ok.

    Featherstone, RBDA sec. 6.5: internal order (parents first), leaves first; no fill-in,
    only the pattern's entries are read and written. False when a pivot is not positive.
    """
    return ltl_steps(ints, L, np.empty(0), np.empty(0))[0]


@inline
def ltl_steps(ints, L, x, z):
    """
    Return (ok, max z): :func:`ltl_in_place`, and where x and z have n entries the steps.

    Of the two descendants-first substitutions, each as soon as its row of L is final:
    L^T y = x (:func:`tree_substitute`'s first, x overwritten with y) and C^T z = z
    (:func:`tree_condition_bound`'s second, z = e on entry): the same operations in the
    same order as those functions', so the same bits.
    """
    steps = x.shape[0] == L.shape[0]
    col = 0.0
    for k in range(L.shape[0] - 1, -1, -1):
        d = L[k, k]
        if not d > 0.0:
            return False, col
        a = np.sqrt(d)
        L[k, k] = a
        i = ints[k, PARENT]
        while i >= 0:
            L[k, i] /= a
            i = ints[i, PARENT]
        i = ints[k, PARENT]
        while i >= 0:
            lki = L[k, i]
            j = i
            while j >= 0:
                L[i, j] -= lki * L[k, j]
                j = ints[j, PARENT]
            i = ints[i, PARENT]
        if steps:
            x[k] /= a
            t = x[k]
            zk = z[k] / a
            z[k] = zk
            col = max(col, zk)
            j = ints[k, PARENT]
            while j >= 0:
                x[j] -= L[k, j] * t
                z[j] += abs(L[k, j]) * zk
                j = ints[j, PARENT]
    return True, col


@inline
def tree_solve_into(ints, M, rcond, L, b, y, x):
    """
    Solve M x = b as :func:`tree_factor_into`, then :func:`tree_substitute`: the same bits.

    The descendants-first substitutions run inside the factorisation (:func:`ltl_steps`),
    the ancestors-first ones (L x = y and :func:`tree_condition_bound`'s C y = e) in one
    pass; x is computed before the bound decides and is kept if the decision accepts M.
    L: zero off the pattern (:func:`fd_work`'s); b is overwritten, y: n of work. False if M
    is not positive definite or cond(M) > 1/rcond.
    """
    n = M.shape[0]
    tree_pattern_into(ints, M, L)
    for k in range(n):
        x[k] = b[k]
        y[k] = 1.0
    ok, col = ltl_steps(ints, L, x, y)
    if not ok:
        return False
    trace = 0.0
    row = 0.0
    for i in range(n):          # ancestors first: C w = e into b, and L x = y
        trace += M[i, i]
        t = 1.0
        s = x[i]
        j = ints[i, PARENT]
        while j >= 0:
            t += abs(L[i, j]) * b[j]
            s -= L[i, j] * x[j]
            j = ints[j, PARENT]
        b[i] = t / L[i, i]
        row = max(row, b[i])
        x[i] = s / L[i, i]
    if trace * row * col * rcond < 1.0:
        return True
    return conditioned(M, L, rcond)


@inline
def tree_condition_bound(ints, M, L, y):
    """
    :func:`condition_bound_into` for M = L^T L with the tree's pattern, in O(sum of depths).

    ||M^-1||_2 = ||L^-1||_2^2 as for L L^T; C^-1 e by forward and C^-T e by backward
    substitution along each coordinate's ancestors.
    """
    n = M.shape[0]
    trace = 0.0
    row = 0.0
    for i in range(n):          # C y = e: ancestors first
        trace += M[i, i]
        t = 1.0
        j = ints[i, PARENT]
        while j >= 0:
            t += abs(L[i, j]) * y[j]
            j = ints[j, PARENT]
        y[i] = t / L[i, i]
        row = max(row, y[i])
    for i in range(n):
        y[i] = 1.0
    col = 0.0
    for i in range(n - 1, -1, -1):    # C^T z = e: descendants first, z_i into y_i
        z = y[i] / L[i, i]
        y[i] = z
        col = max(col, z)
        j = ints[i, PARENT]
        while j >= 0:
            y[j] += abs(L[i, j]) * z
            j = ints[j, PARENT]
    return trace * row * col


@inline
def tree_substitute(ints, L, b, x):
    """Write the solution of L^T L x = b into x (L of :func:`tree_factor_into`)."""
    n = L.shape[0]
    for i in range(n):
        x[i] = b[i]
    for i in range(n - 1, -1, -1):      # L^T y = b, descendants first
        x[i] /= L[i, i]
        t = x[i]
        j = ints[i, PARENT]
        while j >= 0:
            x[j] -= L[i, j] * t
            j = ints[j, PARENT]
    for i in range(n):                  # L x = y, ancestors first
        t = x[i]
        j = ints[i, PARENT]
        while j >= 0:
            t -= L[i, j] * x[j]
            j = ints[j, PARENT]
        x[i] = t / L[i, i]


@jit
def forward_substitute(L, Y):
    """Overwrite Y (n x k) with L^-1 Y, every column at once (L lower triangular)."""
    for i in range(L.shape[0]):
        d = L[i, i]
        for c in range(Y.shape[1]):
            t = Y[i, c]
            for k in range(i):
                t -= L[i, k] * Y[k, c]
            Y[i, c] = t / d


@inline
def solve_rows(L, Y, w):
    """
    Overwrite Y[:, :w] with L^-1 Y[:, :w] (L lower triangular), row by row.

    Each row's updates run along contiguous rows of Y, every column at once.
    """
    for i in range(L.shape[0]):
        for k in range(i):
            f = L[i, k]
            for c in range(w):
                Y[i, c] -= f * Y[k, c]
        d = 1.0 / L[i, i]
        for c in range(w):
            Y[i, c] *= d


@inline
def solve_rows_transposed(L, Y, w):
    """Overwrite Y[:, :w] with L^-T Y[:, :w] (L lower triangular), row by row, last first."""
    n = L.shape[0]
    for i in range(n - 1, -1, -1):
        for k in range(i + 1, n):
            f = L[k, i]
            for c in range(w):
                Y[i, c] -= f * Y[k, c]
        d = 1.0 / L[i, i]
        for c in range(w):
            Y[i, c] *= d


@jit
def gram(Y, first, out):
    """Write out[r, c] = column first + r of Y dotted with column first + c (symmetric)."""
    m = out.shape[0]
    for r in range(m):
        for c in range(r, m):
            s = 0.0
            for i in range(Y.shape[0]):
                s += Y[i, first + r] * Y[i, first + c]
            out[r, c] = out[c, r] = s


@jit
def cholesky_solve(M, b, rcond):
    """Solve M x = b for symmetric M by Cholesky; ok is False if cond(M) > 1/rcond."""
    n = M.shape[0]
    ok, L = cholesky_factor(M, rcond)
    if not ok:
        return False, np.full(n, np.nan)
    x = np.empty(n)
    cholesky_substitute(L, b, x)
    return True, x


@jit
def solve_columns(M, B, rcond, out):
    """M X = B (B: n x k) into out with one factorisation; False if cond(M) > 1/rcond."""
    n = M.shape[0]
    if M.shape[1] != n or B.shape[0] != n or out.shape[0] != n or out.shape[1] != B.shape[1]:
        return False
    for i in range(n):
        for j in range(n):
            if not np.isfinite(M[i, j]):
                return False
    ok, L = cholesky_factor(M, rcond)
    if not ok:
        return False
    x = np.empty(n)
    for c in range(B.shape[1]):
        cholesky_substitute(L, B[:, c], x)
        out[:, c] = x
    return True


@jit
def fd_work(n):
    """Return the work arrays of :func:`forward_dynamics_into` (and rk4) for n coordinates."""
    return (np.empty((n, NW)), np.empty((n, NC)), np.zeros((n, n)), np.zeros((n, n)),
            np.empty(n), np.empty(n), np.zeros((0, 6)))


@inline
def _fd_solve(ints, reals, work, a):
    """
    Write q'' into a, internal order: (M + armature) q'' = rhs - C* - G; False if M singular.

    work (:func:`fd_work`) holds q, q' in the Newton-Euler work's columns WQ, WQD (WQDD 0)
    and tau - damping q' in its vector rhs. The CRBA takes its root-frame frames from the
    joint frames Newton-Euler wrote (:func:`.kinematics.compose_frames`), not from q again.
    M = L^T L keeping the tree's sparsity (:func:`tree_factor_into`); an unbranched chain has
    none to keep and takes the dense M = L L^T, whose contiguous loops run faster.
    """
    wk, cw, M, L, rhs, y, W = work
    rnea_pass(ints, reals, 1.0, W, wk)
    compose_frames(ints, wk, cw)
    composite_pass(ints, reals, cw)
    write_mass_matrix(ints, reals, cw, M, False)    # M's zeros are fd_work's
    for i in range(ints.shape[0]):
        rhs[i] -= wk[i, WTAU]
    if is_chain(ints):
        return cholesky_solve_into(M, 1e-12, L, rhs, y, a)
    return tree_solve_into(ints, M, 1e-12, L, rhs, y, a)


@inline
def is_chain(ints):
    """Return whether every body's parent is the body before it (an unbranched chain)."""
    for i in range(ints.shape[0]):
        if ints[i, PARENT] != i - 1:
            return False
    return True


@jit
def _fd_internal(ints, reals, q, qd, tau, damping, work, a):
    """Write into a q'' (internal order) of (M + armature) q'' = tau - damping q' - C* - G; ok."""
    wk, rhs = work[0], work[4]
    for i in range(ints.shape[0]):
        wk[i, WQ] = q[i]
        wk[i, WQD] = qd[i]
        wk[i, WQDD] = 0.0
        rhs[i] = tau[i] - damping[i] * qd[i]
    return _fd_solve(ints, reals, work, a)


@jit
def forward_dynamics(ints, reals, q, qd, tau, damping, out):
    """Write q'' in user order into out; False on a bad input or a singular M."""
    n = ints.shape[0]
    return forward_dynamics_into(ints, reals, q, qd, tau, damping, out, fd_work(n),
                                 np.empty(n))


@inline
def forward_dynamics_into(ints, reals, q, qd, tau, damping, out, work, a):
    """:func:`forward_dynamics` with the work arrays of :func:`fd_work` and a (n)."""
    n = ints.shape[0]
    if q.shape[0] != n or qd.shape[0] != n or tau.shape[0] != n or damping.shape[0] != n:
        return False
    wk, rhs = work[0], work[4]
    for u in range(n):
        if not (np.isfinite(q[u]) and np.isfinite(qd[u]) and np.isfinite(tau[u])
                and np.isfinite(damping[u])):
            return False
        i = ints[u, PERM]
        wk[i, WQ] = q[u]
        wk[i, WQD] = qd[u]
        wk[i, WQDD] = 0.0
        rhs[i] = tau[u] - damping[u] * qd[u]
    if not _fd_solve(ints, reals, work, a):
        return False
    for u in range(n):
        out[u] = a[ints[u, PERM]]
    return True


@pjit
def forward_dynamics_batch(ints, reals, Q, Qd, Tau, damping, out):
    """:func:`forward_dynamics` over the rows of (N, n) arrays into out; False on failure."""
    N, n = Q.shape[0], ints.shape[0]
    if Q.shape[1] != n or Qd.shape[0] != N or Tau.shape[0] != N:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        work, a = fd_work(n), np.empty(n)       # one set per chunk, reused row after row
        for r in range(c * N // K, (c + 1) * N // K):
            if not forward_dynamics_into(ints, reals, Q[r], Qd[r], Tau[r], damping, out[r],
                                         work, a):
                ok[c] = False
                break
    return np.all(ok)


@jit
def rk4(ints, reals, q, qd, tau, damping, dt, steps, out):
    """
    Integrate ``steps`` RK4 steps of length dt with tau held, user order.

    Writes (q, q') into out (2, n); False on a bad input or a singular M.
    """
    n = ints.shape[0]
    return rk4_into(ints, reals, q, qd, tau, damping, dt, steps, out, fd_work(n),
                    np.empty((RK4_ROWS, n)))


# rows of rk4_into's state work s: x, v, tau, damping, the stages' a (4), v (3) and x
RK4_ROWS = 12


@inline
def rk4_into(ints, reals, q, qd, tau, damping, dt, steps, out, work, s):
    """:func:`rk4` with the work arrays of :func:`fd_work` and s (RK4_ROWS, n)."""
    n = ints.shape[0]
    if q.shape[0] != n or qd.shape[0] != n or tau.shape[0] != n or damping.shape[0] != n \
            or not np.isfinite(dt):
        return False
    x, v, t, d, xs = s[0], s[1], s[2], s[3], s[4]
    a1, a2, a3, a4, v2, v3, v4 = s[5], s[6], s[7], s[8], s[9], s[10], s[11]
    for u in range(n):
        if not (np.isfinite(q[u]) and np.isfinite(qd[u]) and np.isfinite(tau[u])
                and np.isfinite(damping[u])):
            return False
        i = ints[u, PERM]
        x[i], v[i], t[i], d[i] = q[u], qd[u], tau[u], damping[u]
    for _ in range(steps):
        if not _fd_internal(ints, reals, x, v, t, d, work, a1):
            return False
        for i in range(n):
            v2[i] = v[i] + dt / 2 * a1[i]
            xs[i] = x[i] + dt / 2 * v[i]
        if not _fd_internal(ints, reals, xs, v2, t, d, work, a2):
            return False
        for i in range(n):
            v3[i] = v[i] + dt / 2 * a2[i]
            xs[i] = x[i] + dt / 2 * v2[i]
        if not _fd_internal(ints, reals, xs, v3, t, d, work, a3):
            return False
        for i in range(n):
            v4[i] = v[i] + dt * a3[i]
            xs[i] = x[i] + dt * v3[i]
        if not _fd_internal(ints, reals, xs, v4, t, d, work, a4):
            return False
        for i in range(n):
            x[i] = x[i] + dt / 6 * (v[i] + 2 * v2[i] + 2 * v3[i] + v4[i])
            v[i] = v[i] + dt / 6 * (a1[i] + 2 * a2[i] + 2 * a3[i] + a4[i])
    for u in range(n):
        out[0, u] = x[ints[u, PERM]]
        out[1, u] = v[ints[u, PERM]]
    return True


@pjit
def rk4_batch(ints, reals, Q, Qd, Tau, damping, dt, steps, out):
    """:func:`rk4` over the rows of (N, n) arrays into out (N, 2, n); False on failure."""
    N, n = Q.shape[0], ints.shape[0]
    if Qd.shape[0] != N or Tau.shape[0] != N or out.shape[0] != N:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        work, s = fd_work(n), np.empty((RK4_ROWS, n))   # one set per chunk
        for r in range(c * N // K, (c + 1) * N // K):
            if not rk4_into(ints, reals, Q[r], Qd[r], Tau[r], damping, dt, steps, out[r],
                            work, s):
                ok[c] = False
                break
    return np.all(ok)


@jit
def task_inertia(M, J, damping, rcond, out):
    """
    Write (J M^-1 J^T + damping^2 E)^-1 (m x m) into out; False where the readable refuses.

    Mirrors :func:`kron_dynamics.algorithms.operational_space.operational_space_inertia`:
    M = L L^T (refused as solve_mass_matrix refuses it), A = Y^T Y + damping^2 E with
    Y = L^-1 J^T, refused when its smallest eigenvalue is at most rcond times its largest;
    then A^-1 by Cholesky. On False the readable algorithm raises the error that says why.
    """
    n, m = M.shape[0], J.shape[0]
    if M.shape[1] != n or J.shape[1] != n or out.shape[0] != m or out.shape[1] != m or m == 0:
        return False
    for i in range(m):
        for c in range(n):
            if not np.isfinite(J[i, c]):
                return False
    ok, L = cholesky_factor(M, 1e-12)
    if not ok:
        return False
    Y = np.ascontiguousarray(J.T)
    forward_substitute(L, Y)            # Y = L^-1 J^T
    A = np.empty((m, m))
    gram(Y, 0, A)                       # J M^-1 J^T = Y^T Y
    for r in range(m):
        A[r, r] += damping * damping
    ev = np.linalg.eigvalsh(A)
    if not (ev[-1] > 0.0 and ev[0] > rcond * ev[-1]):
        return False
    ok, La = cholesky_factor(A, 0.0)
    if not ok:
        return False
    e = np.zeros(m)
    x = np.empty(m)
    for c in range(m):                  # A^-1, column by column
        e[:] = 0.0
        e[c] = 1.0
        cholesky_substitute(La, e, x)
        for r in range(m):
            out[r, c] = x[r]
    return True


@pjit
def task_inertia_batch(M, J, damping, rcond, out, ok):
    """:func:`task_inertia` per row of M (N, n, n) and J (N, m, n) into out; ok[r] per row."""
    N = M.shape[0]
    if J.shape[0] != N or out.shape[0] != N or ok.shape[0] != N:
        return False
    for r in numba.prange(N):
        ok[r] = task_inertia(M[r], J[r], damping, rcond, out[r])
    return True
