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
Compiled (numba) kernels: Newton-Euler, CRBA, dM/dq and C*, forward dynamics, RK4, batches.

These are the fast paths of :class:`~kron_dynamics.model.RobotModel`; the readable
implementations in :mod:`kron_dynamics.algorithms` are the reference they are tested
against. The model is packed into two arrays (:func:`pack`) so that a call from Python
unboxes few arguments; joint vectors go in and come out in the user's joint order (the
permutation is applied inside), and the inputs' lengths and finiteness are checked inside.
A kernel writes into an output array the caller allocates (returning a new array from
compiled code costs more than the dynamics of a 7-DOF arm) and returns False when an input
is wrong (or M is singular, for forward dynamics); the facade then takes its general path,
which raises the descriptive error.
Per-body arithmetic is on scalars and tuples, with one work array per call, so that a call
costs little more than numba's argument unboxing.

Batch kernels run their rows on numba's thread pool (``NUMBA_NUM_THREADS``, default one
thread per core). Kernels are compiled on first use and cached on disk (``cache=True``).
:data:`native` gives their entry points for fixed argument types, which skips numba's type
dispatch.
"""

import numba
from numba import types as nt
import numpy as np

from .tree import KinematicTree

_jit = numba.njit(cache=True, fastmath=False, nogil=True)
# batch kernels split the rows into chunks that run on numba's thread pool (prange)
_pjit = numba.njit(cache=True, fastmath=False, nogil=True, parallel=True)


@_jit
def _chunks(N):
    """Return the number of row chunks for a batch (prange spreads them over the threads)."""
    # a constant: numba.get_num_threads() here would keep the kernels out of the disk cache
    return max(1, min(N, 64))


# columns of the packed real array, one row per body; row n holds gravity in columns 0:3
AX, R0, P0, MASS, COM, INER, ARM = 0, 3, 12, 15, 16, 19, 28
NREAL = 29
# columns of the packed integer array: parent, revolute (0/1), internal index of user joint,
# user index of internal joint
PARENT, REVOLUTE, PERM, INV = 0, 1, 2, 3

# rnea modes: what the Newton-Euler pass includes
ID, GRAVITY, CORIOLIS, BIAS = 0, 1, 2, 3


def pack(tree: KinematicTree, perm: np.ndarray, armature_user: np.ndarray):
    """Pack a tree into (ints (n, 4) int64, reals (n + 1, 29) float64) for the kernels."""
    n = tree.n
    ints = np.zeros((n, 4), dtype=np.int64)
    ints[:, PARENT] = tree.parent
    ints[:, REVOLUTE] = np.asarray(tree.revolute, dtype=bool)
    ints[:, PERM] = perm
    ints[perm, INV] = np.arange(n)
    reals = np.zeros((n + 1, NREAL))
    reals[:n, AX:AX + 3] = tree.axis
    reals[:n, R0:R0 + 9] = np.asarray(tree.R0).reshape(n, 9)
    reals[:n, P0:P0 + 3] = tree.p0
    reals[:n, MASS] = tree.mass
    reals[:n, COM:COM + 3] = tree.com
    reals[:n, INER:INER + 9] = np.asarray(tree.inertia).reshape(n, 9)
    reals[perm, ARM] = armature_user
    reals[n, 0:3] = tree.gravity
    return np.ascontiguousarray(ints), np.ascontiguousarray(reals)


# ------------------------------------------------------------------ small tuple algebra
@_jit
def _add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@_jit
def _sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@_jit
def _scl(a, s):
    return (a[0] * s, a[1] * s, a[2] * s)


@_jit
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@_jit
def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@_jit
def _get3(A, i, o):
    return (A[i, o], A[i, o + 1], A[i, o + 2])


@_jit
def _set3(A, i, o, v):
    A[i, o] = v[0]
    A[i, o + 1] = v[1]
    A[i, o + 2] = v[2]


@_jit
def _acc3(A, i, o, v):
    A[i, o] += v[0]
    A[i, o + 1] += v[1]
    A[i, o + 2] += v[2]


@_jit
def _get9(A, i, o):
    return (A[i, o], A[i, o + 1], A[i, o + 2], A[i, o + 3], A[i, o + 4], A[i, o + 5],
            A[i, o + 6], A[i, o + 7], A[i, o + 8])


@_jit
def _set9(A, i, o, R):
    for k in range(9):
        A[i, o + k] = R[k]


@_jit
def _mv(R, v):
    """R v for R a row-major 9-tuple."""
    return (R[0] * v[0] + R[1] * v[1] + R[2] * v[2],
            R[3] * v[0] + R[4] * v[1] + R[5] * v[2],
            R[6] * v[0] + R[7] * v[1] + R[8] * v[2])


@_jit
def _mtv(R, v):
    """R^T v for R a row-major 9-tuple."""
    return (R[0] * v[0] + R[3] * v[1] + R[6] * v[2],
            R[1] * v[0] + R[4] * v[1] + R[7] * v[2],
            R[2] * v[0] + R[5] * v[1] + R[8] * v[2])


@_jit
def _mm(A, B):
    """Return A B for row-major 9-tuples."""
    return (A[0] * B[0] + A[1] * B[3] + A[2] * B[6], A[0] * B[1] + A[1] * B[4] + A[2] * B[7],
            A[0] * B[2] + A[1] * B[5] + A[2] * B[8],
            A[3] * B[0] + A[4] * B[3] + A[5] * B[6], A[3] * B[1] + A[4] * B[4] + A[5] * B[7],
            A[3] * B[2] + A[4] * B[5] + A[5] * B[8],
            A[6] * B[0] + A[7] * B[3] + A[8] * B[6], A[6] * B[1] + A[7] * B[4] + A[8] * B[7],
            A[6] * B[2] + A[7] * B[5] + A[8] * B[8])


@_jit
def _mmt(A, B):
    """Return A B^T for row-major 9-tuples."""
    return (A[0] * B[0] + A[1] * B[1] + A[2] * B[2], A[0] * B[3] + A[1] * B[4] + A[2] * B[5],
            A[0] * B[6] + A[1] * B[7] + A[2] * B[8],
            A[3] * B[0] + A[4] * B[1] + A[5] * B[2], A[3] * B[3] + A[4] * B[4] + A[5] * B[5],
            A[3] * B[6] + A[4] * B[7] + A[5] * B[8],
            A[6] * B[0] + A[7] * B[1] + A[8] * B[2], A[6] * B[3] + A[7] * B[4] + A[8] * B[5],
            A[6] * B[6] + A[7] * B[7] + A[8] * B[8])


@_jit
def _joint(ints, reals, i, qi):
    """(R, p) of body i in its parent's frame at joint coordinate qi; R a row-major 9-tuple."""
    Rz = _get9(reals, i, R0)
    pz = _get3(reals, i, P0)
    x, y, z = reals[i, AX], reals[i, AX + 1], reals[i, AX + 2]
    if ints[i, REVOLUTE]:
        c, s = np.cos(qi), np.sin(qi)
        t = 1.0 - c
        Rq = (t * x * x + c, t * x * y - s * z, t * x * z + s * y,
              t * x * y + s * z, t * y * y + c, t * y * z - s * x,
              t * x * z - s * y, t * y * z + s * x, t * z * z + c)
        return _mm(Rz, Rq), pz
    return Rz, _add(pz, _mv(Rz, (x * qi, y * qi, z * qi)))


@_jit
def _load(ints, x, n, wk, col):
    """Copy user-order x into column col of wk in internal order; False if not finite."""
    if x.shape[0] != n:
        return False
    for u in range(n):
        v = x[u]
        if not np.isfinite(v):
            return False
        wk[ints[u, PERM], col] = v
    return True


# ------------------------------------------------------------------ Newton-Euler (002)
# work array columns: R (9), p (3), w (3), dw (3), a (3), f (3), m (3), q, qd, qdd, tau
_WR, _WP, _WW, _WDW, _WA, _WF, _WM = 0, 9, 12, 15, 18, 21, 24
_WQ, _WQD, _WQDD, _WTAU = 27, 28, 29, 30
_NW = 31


@_jit
def _rnea(ints, reals, gscale, W, wk):
    """Newton-Euler in body frames on wk's q, qd, qdd columns; tau into wk's tau column."""
    n = ints.shape[0]
    g = (reals[n, 0] * gscale, reals[n, 1] * gscale, reals[n, 2] * gscale)
    zero = (0.0, 0.0, 0.0)
    has_w = W.shape[0] == n
    for i in range(n):
        R, r = _joint(ints, reals, i, wk[i, _WQ])
        _set9(wk, i, _WR, R)
        _set3(wk, i, _WP, r)
        par = ints[i, PARENT]
        if par < 0:
            wp, dwp, ap = zero, zero, (-g[0], -g[1], -g[2])
        else:
            wp, dwp, ap = _get3(wk, par, _WW), _get3(wk, par, _WDW), _get3(wk, par, _WA)
        ao = _mtv(R, _add(ap, _add(_cross(dwp, r), _cross(wp, _cross(wp, r)))))
        win = _mtv(R, wp)
        dwin = _mtv(R, dwp)
        z = _get3(reals, i, AX)
        zqd = _scl(z, wk[i, _WQD])
        zqdd = _scl(z, wk[i, _WQDD])
        if ints[i, REVOLUTE]:
            wi = _add(win, zqd)
            dwi = _add(_add(dwin, zqdd), _cross(win, zqd))
            ai = ao
        else:
            wi = win
            dwi = dwin
            ai = _add(_add(ao, zqdd), _scl(_cross(win, zqd), 2.0))
        _set3(wk, i, _WW, wi)
        _set3(wk, i, _WDW, dwi)
        _set3(wk, i, _WA, ai)
        c = _get3(reals, i, COM)
        ac = _add(ai, _add(_cross(dwi, c), _cross(wi, _cross(wi, c))))
        F = _scl(ac, reals[i, MASS])
        Ib = _get9(reals, i, INER)
        Mo = _add(_add(_mv(Ib, dwi), _cross(wi, _mv(Ib, wi))), _cross(c, F))
        if has_w:
            F = _sub(F, (W[i, 0], W[i, 1], W[i, 2]))
            Mo = _sub(Mo, (W[i, 3], W[i, 4], W[i, 5]))
        _set3(wk, i, _WF, F)
        _set3(wk, i, _WM, Mo)
    for i in range(n - 1, -1, -1):
        z = _get3(reals, i, AX)
        F = _get3(wk, i, _WF)
        Mo = _get3(wk, i, _WM)
        wk[i, _WTAU] = _dot(z, Mo) if ints[i, REVOLUTE] else _dot(z, F)
        par = ints[i, PARENT]
        if par >= 0:
            R = _get9(wk, i, _WR)
            fp = _mv(R, F)
            _acc3(wk, par, _WF, fp)
            _acc3(wk, par, _WM, _add(_mv(R, Mo), _cross(_get3(wk, i, _WP), fp)))


@_jit
def _rnea_row(ints, reals, q, qd, qdd, mode, W, wk, out):
    """One Newton-Euler evaluation in user order into out; False on a bad input."""
    n = ints.shape[0]
    if not _load(ints, q, n, wk, _WQ):
        return False
    if mode == GRAVITY:
        wk[:, _WQD] = 0.0
    elif not _load(ints, qd, n, wk, _WQD):
        return False
    if mode == ID:
        if not _load(ints, qdd, n, wk, _WQDD):
            return False
    else:
        wk[:, _WQDD] = 0.0
    _rnea(ints, reals, 0.0 if mode == CORIOLIS else 1.0, W, wk)
    for u in range(n):
        k = ints[u, PERM]
        out[u] = wk[k, _WTAU] + reals[k, ARM] * wk[k, _WQDD]
    return True


@_jit
def rnea(ints, reals, q, qd, qdd, mode, W, out):
    """
    Newton-Euler (002) in user order into out (n,); False on a bad input.

    mode ID: M q'' + C*(q' kron q') + G - external wrenches W (internal order, (n, 6) body-frame,
    or (0, 6)), armature included; GRAVITY: G (qd, qdd ignored); CORIOLIS: C*(q' kron q');
    BIAS: C*(q' kron q') + G (qdd ignored).
    """
    return _rnea_row(ints, reals, q, qd, qdd, mode, W, np.empty((ints.shape[0], _NW)), out)


@_jit
def gravity(ints, reals, q, out):
    """G(q) into out (n,) by Newton-Euler at rest: rnea's GRAVITY mode with fewer arguments."""
    return _rnea_row(ints, reals, q, q, q, GRAVITY, np.zeros((0, 6)),
                     np.empty((ints.shape[0], _NW)), out)


@_pjit
def rnea_batch(ints, reals, Q, Qd, Qdd, mode, out):
    """:func:`rnea` over the rows of (N, n) arrays into out (N, n); False on a bad input."""
    n = ints.shape[0]
    N = Q.shape[0]
    if Q.shape[1] != n or Qd.shape[0] != N or Qdd.shape[0] != N:
        return False
    K = _chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        wk = np.empty((n, _NW))
        W = np.zeros((0, 6))
        for r in range(c * N // K, (c + 1) * N // K):
            if not _rnea_row(ints, reals, Q[r], Qd[r], Qdd[r], mode, W, wk, out[r]):
                ok[c] = False
                break
    return np.all(ok)


# ------------------------------------------------------------------ CRBA and dM/dq
# work array columns (root frame): R (9), p (3), S (6), composite m, h (3), Io (9), F = Ic S (6),
# q, qd
_CR, _CP, _CS, _CM, _CH, _CI, _CF, _CQ, _CQD = 0, 9, 12, 18, 19, 22, 31, 37, 38
_NC = 39


@_jit
def _inertia_times(wk, k, sw, sv):
    """Composite spatial inertia of body k times the motion vector (sw, sv)."""
    m = wk[k, _CM]
    h = _get3(wk, k, _CH)
    Io = _get9(wk, k, _CI)
    return _add(_mv(Io, sw), _cross(h, sv)), _add(_scl(sv, m), _cross(sw, h))


@_jit
def _crba_pass(ints, reals, wk):
    """Kinematics, motion subspaces S, composite inertias Ic and F = Ic S, about the root."""
    n = ints.shape[0]
    for i in range(n):
        Rl, pl = _joint(ints, reals, i, wk[i, _CQ])
        par = ints[i, PARENT]
        if par < 0:
            R, p = Rl, pl
        else:
            Rp = _get9(wk, par, _CR)
            R = _mm(Rp, Rl)
            p = _add(_get3(wk, par, _CP), _mv(Rp, pl))
        _set9(wk, i, _CR, R)
        _set3(wk, i, _CP, p)
        a = _mv(R, _get3(reals, i, AX))
        if ints[i, REVOLUTE]:
            _set3(wk, i, _CS, a)
            _set3(wk, i, _CS + 3, _cross(p, a))
        else:
            _set3(wk, i, _CS, (0.0, 0.0, 0.0))
            _set3(wk, i, _CS + 3, a)
        m = reals[i, MASS]
        c = _add(p, _mv(R, _get3(reals, i, COM)))
        IG = _mmt(_mm(R, _get9(reals, i, INER)), R)
        cc = _dot(c, c)
        wk[i, _CM] = m
        _set3(wk, i, _CH, _scl(c, m))
        _set9(wk, i, _CI, (IG[0] + m * (cc - c[0] * c[0]), IG[1] - m * c[0] * c[1],
                           IG[2] - m * c[0] * c[2], IG[3] - m * c[1] * c[0],
                           IG[4] + m * (cc - c[1] * c[1]), IG[5] - m * c[1] * c[2],
                           IG[6] - m * c[2] * c[0], IG[7] - m * c[2] * c[1],
                           IG[8] + m * (cc - c[2] * c[2])))
    for i in range(n - 1, -1, -1):
        par = ints[i, PARENT]
        if par >= 0:
            for k in range(_CM, _CI + 9):
                wk[par, k] += wk[i, k]
    for j in range(n):
        fn, ff = _inertia_times(wk, j, _get3(wk, j, _CS), _get3(wk, j, _CS + 3))
        _set3(wk, j, _CF, fn)
        _set3(wk, j, _CF + 3, ff)


@_jit
def _sdot(wk, i, fn, ff):
    """S_i . (fn, ff)."""
    return _dot(_get3(wk, i, _CS), fn) + _dot(_get3(wk, i, _CS + 3), ff)


@_jit
def _crba_row(ints, reals, q, wk, out):
    """M(q) in user order into out (n, n), armature included; False on a bad q."""
    n = ints.shape[0]
    if not _load(ints, q, n, wk, _CQ):
        return False
    _crba_pass(ints, reals, wk)
    _assemble_mass_matrix(ints, reals, wk, out, True)
    return True


@_jit
def _assemble_mass_matrix(ints, reals, wk, out, user_order):
    """M_ij = S_i . F_j from a finished :func:`_crba_pass`, armature included, into out."""
    n = ints.shape[0]
    for u in range(n):
        for v in range(n):
            out[u, v] = 0.0
    for j in range(n):
        fn, ff = _get3(wk, j, _CF), _get3(wk, j, _CF + 3)
        uj = ints[j, INV] if user_order else j
        i = j
        while i >= 0:
            ui = ints[i, INV] if user_order else i
            v = _sdot(wk, i, fn, ff)
            out[ui, uj] = v
            out[uj, ui] = v
            i = ints[i, PARENT]
        out[uj, uj] += reals[j, ARM]


@_jit
def crba(ints, reals, q, out):
    """Composite-rigid-body M(q) in user order into out, armature included; False on bad q."""
    return _crba_row(ints, reals, q, np.empty((ints.shape[0], _NC)), out)


@_pjit
def crba_batch(ints, reals, Q, out):
    """:func:`crba` over the rows of an (N, n) array into out (N, n, n); False on bad input."""
    n = ints.shape[0]
    N = Q.shape[0]
    if Q.shape[1] != n:
        return False
    K = _chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        wk = np.empty((n, _NC))
        for r in range(c * N // K, (c + 1) * N // K):
            if not _crba_row(ints, reals, Q[r], wk, out[r]):
                ok[c] = False
                break
    return np.all(ok)


@_jit
def _crf(sw, sv, fn, ff):
    """Force cross product (sw, sv) x* (fn, ff)."""
    return _add(_cross(sw, fn), _cross(sv, ff)), _cross(sw, ff)


@_jit
def _dmdq(ints, wk, dM):
    """
    dM/dq into dM[i, j, k] = dM_ij/dq_k (internal order) from a finished :func:`_crba_pass`.

    With root-frame S, Ic and F_j = Ic_j S_j, for i an ancestor of (or equal to) j:
    dM_ij/dq_k is 0 if k is at or above i (the whole sub-tree moves rigidly);
    S_i . (S_k x* F_j) if k lies on the path strictly below i down to j;
    S_i . (S_k x* (Ic_k S_j) - Ic_k (S_k x S_j)) if k is a proper descendant of j;
    and 0 otherwise. (000 eq. 101 takes C* from these derivatives.)
    """
    n = ints.shape[0]
    dM[:, :, :] = 0.0
    for j in range(n):
        Fn, Ff = _get3(wk, j, _CF), _get3(wk, j, _CF + 3)
        k = j
        while k >= 0:
            Dn, Df = _crf(_get3(wk, k, _CS), _get3(wk, k, _CS + 3), Fn, Ff)
            i = ints[k, PARENT]
            while i >= 0:
                v = _sdot(wk, i, Dn, Df)
                dM[i, j, k] = v
                dM[j, i, k] = v
                i = ints[i, PARENT]
            k = ints[k, PARENT]
    for k in range(n):
        skw, skv = _get3(wk, k, _CS), _get3(wk, k, _CS + 3)
        j = ints[k, PARENT]
        while j >= 0:
            sjw, sjv = _get3(wk, j, _CS), _get3(wk, j, _CS + 3)
            an, af = _inertia_times(wk, k, sjw, sjv)
            Bn, Bf = _crf(skw, skv, an, af)
            # crm(S_k) S_j = (skw x sjw, skw x sjv + skv x sjw)
            cn, cf = _inertia_times(wk, k, _cross(skw, sjw),
                                    _add(_cross(skw, sjv), _cross(skv, sjw)))
            Bn, Bf = _sub(Bn, cn), _sub(Bf, cf)
            i = j
            while i >= 0:
                v = _sdot(wk, i, Bn, Bf)
                dM[i, j, k] = v
                dM[j, i, k] = v
                i = ints[i, PARENT]
            j = ints[j, PARENT]


@_jit
def _cstar_row(ints, reals, q, wk, dM, out):
    """C*(q) in user order into out (n, n^2); False on a bad q."""
    n = ints.shape[0]
    if not _load(ints, q, n, wk, _CQ):
        return False
    _crba_pass(ints, reals, wk)
    _dmdq(ints, wk, dM)
    for u in range(n):
        i = ints[u, PERM]
        for v in range(n):
            j = ints[v, PERM]
            for w in range(n):
                k = ints[w, PERM]
                out[u, v * n + w] = dM[i, j, k] - 0.5 * dM[k, j, i]
    return True


@_jit
def coriolis_star(ints, reals, q, out):
    """C*(q), n x n^2 in user order (000 eq. 101), into out; False on a bad q."""
    n = ints.shape[0]
    return _cstar_row(ints, reals, q, np.empty((n, _NC)), np.empty((n, n, n)), out)


@_pjit
def coriolis_star_batch(ints, reals, Q, out):
    """:func:`coriolis_star` over the rows of an (N, n) array into out; False on bad input."""
    n = ints.shape[0]
    N = Q.shape[0]
    if Q.shape[1] != n:
        return False
    K = _chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        wk = np.empty((n, _NC))
        dM = np.empty((n, n, n))
        for r in range(c * N // K, (c + 1) * N // K):
            if not _cstar_row(ints, reals, Q[r], wk, dM, out[r]):
                ok[c] = False
                break
    return np.all(ok)


@_jit
def _coriolis_matrix_row(ints, reals, q, qd, wk, dM, out):
    """Coriolis matrix sum_k Gamma[:, :, k] q'_k in user order into out; False on bad input."""
    n = ints.shape[0]
    if not (_load(ints, q, n, wk, _CQ) and _load(ints, qd, n, wk, _CQD)):
        return False
    _crba_pass(ints, reals, wk)
    _dmdq(ints, wk, dM)
    # Gamma_ijk = 1/2 (C*_ijk + C*_ikj) = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i)
    for u in range(n):
        i = ints[u, PERM]
        for v in range(n):
            j = ints[v, PERM]
            s = 0.0
            for k in range(n):
                s += (dM[i, j, k] + dM[i, k, j] - dM[j, k, i]) * wk[k, _CQD]
            out[u, v] = 0.5 * s
    return True


@_jit
def coriolis_matrix(ints, reals, q, qd, out):
    """Write the n x n Coriolis matrix (M' - 2C skew) in user order; False on bad input."""
    n = ints.shape[0]
    return _coriolis_matrix_row(ints, reals, q, qd, np.empty((n, _NC)), np.empty((n, n, n)),
                                out)


@_pjit
def coriolis_matrix_batch(ints, reals, Q, Qd, out):
    """:func:`coriolis_matrix` over the rows of (N, n) arrays into out; False on bad input."""
    n = ints.shape[0]
    N = Q.shape[0]
    if Q.shape[1] != n or Qd.shape[0] != N:
        return False
    K = _chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        wk = np.empty((n, _NC))
        dM = np.empty((n, n, n))
        for r in range(c * N // K, (c + 1) * N // K):
            if not _coriolis_matrix_row(ints, reals, Q[r], Qd[r], wk, dM, out[r]):
                ok[c] = False
                break
    return np.all(ok)


# ------------------------------------------------------------------ the papers' JSIM forms
# Compiled versions of the readable algorithms/mass_matrix_jacobian.py (000 eq. 95) and
# algorithms/jsim_explicit.py (003 eqs. 30-37), so that the three mass-matrix algorithms can
# be timed against each other at compiled speed (bench/bench_dynamics.py).
# work array columns (root frame): R (9), p (3), axis a (3), CoM c (3), central inertia (9), q
_KR, _KP, _KA, _KC, _KI, _KQ = 0, 9, 12, 15, 18, 27
_NK = 28


@_jit
def _world_pass(ints, reals, wk, sup):
    """Root-frame frames, axes, CoMs and central inertias; sup[l, u]: u is at or above l."""
    n = ints.shape[0]
    for i in range(n):
        Rl, pl = _joint(ints, reals, i, wk[i, _KQ])
        par = ints[i, PARENT]
        if par < 0:
            R, p = Rl, pl
        else:
            Rp = _get9(wk, par, _KR)
            R = _mm(Rp, Rl)
            p = _add(_get3(wk, par, _KP), _mv(Rp, pl))
        _set9(wk, i, _KR, R)
        _set3(wk, i, _KP, p)
        _set3(wk, i, _KA, _mv(R, _get3(reals, i, AX)))
        _set3(wk, i, _KC, _add(p, _mv(R, _get3(reals, i, COM))))
        _set9(wk, i, _KI, _mmt(_mm(R, _get9(reals, i, INER)), R))
        for u in range(n):
            sup[i, u] = False
        k = i
        while k >= 0:
            sup[i, k] = True
            k = ints[k, PARENT]


@_jit
def _to_user(ints, reals, Mi, out):
    """Permute an internal-order M into user order and add the armature."""
    n = ints.shape[0]
    for u in range(n):
        i = ints[u, PERM]
        for v in range(n):
            out[u, v] = Mi[i, ints[v, PERM]]
        out[u, u] += reals[i, ARM]


@_jit
def mass_matrix_jacobian(ints, reals, q, out):
    """M(q) by 000 eq. (95), sum of m J_TG^T J_TG + J_R^T I_G J_R, compiled; False on bad q."""
    n = ints.shape[0]
    wk = np.empty((n, _NK))
    if not _load(ints, q, n, wk, _KQ):
        return False
    sup = np.empty((n, n), dtype=np.bool_)
    _world_pass(ints, reals, wk, sup)
    Mi = np.zeros((n, n))
    JT = np.empty((n, 3))
    JR = np.empty((n, 3))
    for b in range(n):
        c = _get3(wk, b, _KC)
        IG = _get9(wk, b, _KI)
        m = reals[b, MASS]
        for s in range(b + 1):
            if not sup[b, s]:
                continue
            a = _get3(wk, s, _KA)
            if ints[s, REVOLUTE]:
                _set3(JT, s, 0, _cross(a, _sub(c, _get3(wk, s, _KP))))
                _set3(JR, s, 0, a)
            else:
                _set3(JT, s, 0, a)
                _set3(JR, s, 0, (0.0, 0.0, 0.0))
        for s in range(b + 1):
            if not sup[b, s]:
                continue
            jts, jrs = _get3(JT, s, 0), _get3(JR, s, 0)
            Ijr = _mv(IG, jrs)
            for k in range(s + 1):
                if sup[b, k]:
                    v = m * _dot(jts, _get3(JT, k, 0)) + _dot(Ijr, _get3(JR, k, 0))
                    Mi[s, k] += v
                    if k != s:
                        Mi[k, s] += v
    _to_user(ints, reals, Mi, out)
    return True


@_jit
def jsim_explicit(ints, reals, q, out):
    """M(q) element by element from 003 eqs. (30)-(37), compiled; False on a bad q."""
    n = ints.shape[0]
    wk = np.empty((n, _NK))
    if not _load(ints, q, n, wk, _KQ):
        return False
    sup = np.empty((n, n), dtype=np.bool_)
    _world_pass(ints, reals, wk, sup)
    Mi = np.zeros((n, n))
    for u in range(n):
        nu, pu = _get3(wk, u, _KA), _get3(wk, u, _KP)
        k = u
        while k >= 0:             # k in iI_u: u's own joint and its ancestors; links in uL
            nk, pk = _get3(wk, k, _KA), _get3(wk, k, _KP)
            v = 0.0
            if ints[u, REVOLUTE] and ints[k, REVOLUTE]:      # CASES 1, 3 (eqs. 30, 32)
                nn = _dot(nu, nk)
                for lk in range(u, n):
                    if sup[lk, u]:
                        m = reals[lk, MASS]
                        c = _get3(wk, lk, _KC)
                        ru, rk = _sub(c, pu), _sub(c, pk)
                        # n_u (I_l - m [r_ul]x [r_kl]x) n_k, [a]x [b]x = b a^T - (a.b) 1
                        v += (_dot(nu, _mv(_get9(wk, lk, _KI), nk))
                              + m * (_dot(ru, rk) * nn - _dot(nu, rk) * _dot(ru, nk)))
            elif ints[u, REVOLUTE]:                          # CASES 2, 4 (eqs. 31, 33)
                h = (0.0, 0.0, 0.0)
                for lk in range(u, n):
                    if sup[lk, u]:
                        h = _add(h, _scl(_sub(_get3(wk, lk, _KC), pu), reals[lk, MASS]))
                v = _dot(nu, _cross(h, nk))
            elif ints[k, REVOLUTE]:                          # CASES 5, 7 (eqs. 34, 36)
                h = (0.0, 0.0, 0.0)
                for lk in range(u, n):
                    if sup[lk, u]:
                        h = _add(h, _scl(_sub(_get3(wk, lk, _KC), pk), reals[lk, MASS]))
                v = -_dot(nu, _cross(h, nk))
            else:                                            # CASES 6, 8 (eqs. 35, 37)
                mass = 0.0
                for lk in range(u, n):
                    if sup[lk, u]:
                        mass += reals[lk, MASS]
                v = mass * _dot(nu, nk)
            Mi[u, k] = v
            Mi[k, u] = v
            k = ints[k, PARENT]
    _to_user(ints, reals, Mi, out)
    return True


# ------------------------------------------------------------------ forward dynamics
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
        col = np.zeros(n)
        for c in range(n):
            trace += M[c, c]
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
def _fd_internal(ints, reals, q, qd, tau, damping, wk, cw, M, W):
    """(ok, q'') in internal order of (M + armature) q'' = tau - damping q' - C* - G."""
    n = ints.shape[0]
    for i in range(n):
        wk[i, _WQ] = q[i]
        wk[i, _WQD] = qd[i]
        wk[i, _WQDD] = 0.0
        cw[i, _CQ] = q[i]
    _rnea(ints, reals, 1.0, W, wk)
    _crba_pass(ints, reals, cw)
    _assemble_mass_matrix(ints, reals, cw, M, False)
    rhs = np.empty(n)
    for i in range(n):
        rhs[i] = tau[i] - damping[i] * qd[i] - wk[i, _WTAU]
    return _cholesky_solve(M, rhs, 1e-12)


@_jit
def _to_internal(ints, x, n):
    v = np.empty(n)
    for u in range(n):
        if not np.isfinite(x[u]):
            v[0] = np.nan
            return False, v
        v[ints[u, PERM]] = x[u]
    return True, v


@_jit
def forward_dynamics(ints, reals, q, qd, tau, damping, out):
    """Write q'' in user order into out; False on a bad input or a singular M."""
    n = ints.shape[0]
    if q.shape[0] != n or qd.shape[0] != n or tau.shape[0] != n or damping.shape[0] != n:
        return False
    ok1, qi = _to_internal(ints, q, n)
    ok2, qdi = _to_internal(ints, qd, n)
    ok3, ti = _to_internal(ints, tau, n)
    ok4, di = _to_internal(ints, damping, n)
    if not (ok1 and ok2 and ok3 and ok4):
        return False
    ok, a = _fd_internal(ints, reals, qi, qdi, ti, di, np.empty((n, _NW)), np.empty((n, _NC)),
                         np.empty((n, n)), np.zeros((0, 6)))
    if not ok:
        return False
    for u in range(n):
        out[u] = a[ints[u, PERM]]
    return True


@_pjit
def forward_dynamics_batch(ints, reals, Q, Qd, Tau, damping, out):
    """:func:`forward_dynamics` over the rows of (N, n) arrays into out; False on failure."""
    N = Q.shape[0]
    if Q.shape[1] != ints.shape[0] or Qd.shape[0] != N or Tau.shape[0] != N:
        return False
    K = _chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        for r in range(c * N // K, (c + 1) * N // K):
            if not forward_dynamics(ints, reals, Q[r], Qd[r], Tau[r], damping, out[r]):
                ok[c] = False
                break
    return np.all(ok)


@_jit
def rk4(ints, reals, q, qd, tau, damping, dt, steps, out):
    """
    Integrate ``steps`` RK4 steps of length dt with tau held, user order.

    Writes (q, q') into out (2, n); False on a bad input or a singular M.
    """
    n = ints.shape[0]
    if q.shape[0] != n or qd.shape[0] != n or tau.shape[0] != n or damping.shape[0] != n:
        return False
    ok1, x = _to_internal(ints, q, n)
    ok2, v = _to_internal(ints, qd, n)
    ok3, t = _to_internal(ints, tau, n)
    ok4, d = _to_internal(ints, damping, n)
    if not (ok1 and ok2 and ok3 and ok4 and np.isfinite(dt)):
        return False
    wk = np.empty((n, _NW))
    cw = np.empty((n, _NC))
    M = np.empty((n, n))
    W = np.zeros((0, 6))
    for _ in range(steps):
        ok1, a1 = _fd_internal(ints, reals, x, v, t, d, wk, cw, M, W)
        v2 = v + dt / 2 * a1
        ok2, a2 = _fd_internal(ints, reals, x + dt / 2 * v, v2, t, d, wk, cw, M, W)
        v3 = v + dt / 2 * a2
        ok3, a3 = _fd_internal(ints, reals, x + dt / 2 * v2, v3, t, d, wk, cw, M, W)
        v4 = v + dt * a3
        ok4, a4 = _fd_internal(ints, reals, x + dt * v3, v4, t, d, wk, cw, M, W)
        if not (ok1 and ok2 and ok3 and ok4):
            return False
        x = x + dt / 6 * (v + 2 * v2 + 2 * v3 + v4)
        v = v + dt / 6 * (a1 + 2 * a2 + 2 * a3 + a4)
    for u in range(n):
        out[0, u] = x[ints[u, PERM]]
        out[1, u] = v[ints[u, PERM]]
    return True


# ------------------------------------------------------------------ native entry points
_I = nt.int64[:, ::1]
_R = nt.float64[:, ::1]
_V = nt.float64[:]
_A2 = nt.float64[:, :]
_O1 = nt.float64[::1]
_O2 = nt.float64[:, ::1]
_O3 = nt.float64[:, :, ::1]
_SIGNATURES = {
    'rnea': (rnea, (_I, _R, _V, _V, _V, nt.int64, _A2, _O1)),
    'rnea_batch': (rnea_batch, (_I, _R, _A2, _A2, _A2, nt.int64, _O2)),
    'gravity': (gravity, (_I, _R, _V, _O1)),
    'crba': (crba, (_I, _R, _V, _O2)),
    'crba_batch': (crba_batch, (_I, _R, _A2, _O3)),
    'mass_matrix_jacobian': (mass_matrix_jacobian, (_I, _R, _V, _O2)),
    'jsim_explicit': (jsim_explicit, (_I, _R, _V, _O2)),
    'coriolis_star': (coriolis_star, (_I, _R, _V, _O2)),
    'coriolis_star_batch': (coriolis_star_batch, (_I, _R, _A2, _O3)),
    'coriolis_matrix': (coriolis_matrix, (_I, _R, _V, _V, _O2)),
    'coriolis_matrix_batch': (coriolis_matrix_batch, (_I, _R, _A2, _A2, _O3)),
    'forward_dynamics': (forward_dynamics, (_I, _R, _V, _V, _V, _V, _O1)),
    'forward_dynamics_batch': (forward_dynamics_batch, (_I, _R, _A2, _A2, _A2, _V, _O2)),
    'rk4': (rk4, (_I, _R, _V, _V, _V, _V, nt.float64, nt.int64, _O2)),
}


class _Native:
    """
    Entry points of the kernels for the argument types above, compiled on first use.

    ``native.rnea(...)`` calls the compiled code without numba's per-call type dispatch;
    the caller must pass exactly those types: int64 / float64 arrays of the stated
    dimensions (the entry point does not check dtype or ndim).
    """

    def __getattr__(self, name):
        try:
            kernel, signature = _SIGNATURES[name]
        except KeyError:
            raise AttributeError(name) from None
        entry = kernel.compile(signature)
        setattr(self, name, entry)
        return entry


native = _Native()
