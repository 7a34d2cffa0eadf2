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
The velocity-free Coriolis matrix C*(q) (seed 000, eq. 101) and the Coriolis matrix, compiled.

Mirrors :mod:`kron_dynamics.algorithms.coriolis_star`, which differentiates eq. (95) with the
Jacobians and Hessians; here dM/dq comes from the spatial derivatives of the CRBA terms
(:func:`dmdq`, O(n^3)), and C*[i, j*n + k] = dM_ij/dq_k - 1/2 dM_kj/dq_i.
"""

import numba
import numpy as np

from .algebra import add, chunks, cross, get3, inline, jit, pjit, sub
from .crba import CF, CQ, CQD, CS, crba_pass, inertia_times, NC, sdot
from .kinematics import load
from .layout import PARENT, PERM


@jit
def _crf(sw, sv, fn, ff):
    """Force cross product (sw, sv) x* (fn, ff)."""
    return add(cross(sw, fn), cross(sv, ff)), cross(sw, ff)


@jit
def dmdq(ints, wk, dM):
    """
    dM/dq into dM[i, j, k] = dM_ij/dq_k (internal order) from a finished crba_pass.

    With root-frame S, Ic and F_j = Ic_j S_j, for i an ancestor of (or equal to) j:
    dM_ij/dq_k is 0 if k is at or above i (the whole sub-tree moves rigidly);
    S_i . (S_k x* F_j) if k lies on the path strictly below i down to j;
    S_i . (S_k x* (Ic_k S_j) - Ic_k (S_k x S_j)) if k is a proper descendant of j;
    and 0 otherwise. (000 eq. 101 takes C* from these derivatives.)
    """
    n = ints.shape[0]
    dM[:, :, :] = 0.0
    for j in range(n):
        Fn, Ff = get3(wk, j, CF), get3(wk, j, CF + 3)
        k = j
        while k >= 0:
            Dn, Df = _crf(get3(wk, k, CS), get3(wk, k, CS + 3), Fn, Ff)
            i = ints[k, PARENT]
            while i >= 0:
                v = sdot(wk, i, Dn, Df)
                dM[i, j, k] = v
                dM[j, i, k] = v
                i = ints[i, PARENT]
            k = ints[k, PARENT]
    for k in range(n):
        skw, skv = get3(wk, k, CS), get3(wk, k, CS + 3)
        j = ints[k, PARENT]
        while j >= 0:
            sjw, sjv = get3(wk, j, CS), get3(wk, j, CS + 3)
            an, af = inertia_times(wk, k, sjw, sjv)
            Bn, Bf = _crf(skw, skv, an, af)
            # crm(S_k) S_j = (skw x sjw, skw x sjv + skv x sjw)
            cn, cf = inertia_times(wk, k, cross(skw, sjw),
                                   add(cross(skw, sjv), cross(skv, sjw)))
            Bn, Bf = sub(Bn, cn), sub(Bf, cf)
            i = j
            while i >= 0:
                v = sdot(wk, i, Bn, Bf)
                dM[i, j, k] = v
                dM[j, i, k] = v
                i = ints[i, PARENT]
            j = ints[j, PARENT]


@jit
def _dmdq_at(ints, reals, q, wk, dM):
    """dM/dq at q (user order) into dM (internal order) after a crba_pass; False on a bad q."""
    if not load(ints, q, ints.shape[0], wk, CQ):
        return False
    crba_pass(ints, reals, wk)
    dmdq(ints, wk, dM)
    return True


@jit
def _cstar_row(ints, reals, q, wk, dM, out):
    """C*(q) in user order into out (n, n^2); False on a bad q."""
    n = ints.shape[0]
    if not _dmdq_at(ints, reals, q, wk, dM):
        return False
    for u in range(n):
        i = ints[u, PERM]
        for v in range(n):
            j = ints[v, PERM]
            for w in range(n):
                k = ints[w, PERM]
                out[u, v * n + w] = dM[i, j, k] - 0.5 * dM[k, j, i]
    return True


@jit
def coriolis_star(ints, reals, q, out):
    """C*(q), n x n^2 in user order (000 eq. 101), into out; False on a bad q."""
    n = ints.shape[0]
    return _cstar_row(ints, reals, q, np.empty((n, NC)), np.empty((n, n, n)), out)


@jit
def mass_matrix_derivative(ints, reals, q, out):
    """dM/dq in user order into out (n, n, n), out[u, v, w] = dM_uv/dq_w; False on a bad q."""
    n = ints.shape[0]
    return _mass_matrix_derivative_row(ints, reals, q, np.empty((n, NC)), np.empty((n, n, n)),
                                       out)


@pjit
def mass_matrix_derivative_batch(ints, reals, Q, out):
    """:func:`mass_matrix_derivative` over the rows of an (N, n) array into out (N, n, n, n)."""
    n, N = ints.shape[0], Q.shape[0]
    if Q.shape[1] != n or out.shape[0] != N:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        wk, dM = np.empty((n, NC)), np.empty((n, n, n))     # one set per chunk
        for r in range(c * N // K, (c + 1) * N // K):
            if not _mass_matrix_derivative_row(ints, reals, Q[r], wk, dM, out[r]):
                ok[c] = False
                break
    return np.all(ok)


@inline
def _mass_matrix_derivative_row(ints, reals, q, wk, dM, out):
    """:func:`mass_matrix_derivative` with the work arrays wk (n, NC) and dM (n, n, n)."""
    n = ints.shape[0]
    if not _dmdq_at(ints, reals, q, wk, dM):
        return False
    for u in range(n):
        i = ints[u, PERM]
        for v in range(n):
            j = ints[v, PERM]
            for w in range(n):
                out[u, v, w] = dM[i, j, ints[w, PERM]]
    return True


@pjit
def coriolis_star_batch(ints, reals, Q, out):
    """:func:`coriolis_star` over the rows of an (N, n) array into out; False on bad input."""
    n = ints.shape[0]
    N = Q.shape[0]
    if Q.shape[1] != n:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        wk = np.empty((n, NC))
        dM = np.empty((n, n, n))
        for r in range(c * N // K, (c + 1) * N // K):
            if not _cstar_row(ints, reals, Q[r], wk, dM, out[r]):
                ok[c] = False
                break
    return np.all(ok)


@jit
def _coriolis_matrix_row(ints, reals, q, qd, wk, dM, out):
    """Coriolis matrix sum_k Gamma[:, :, k] q'_k in user order into out; False on bad input."""
    n = ints.shape[0]
    if not (load(ints, q, n, wk, CQ) and load(ints, qd, n, wk, CQD)):
        return False
    crba_pass(ints, reals, wk)
    dmdq(ints, wk, dM)
    # Gamma_ijk = 1/2 (C*_ijk + C*_ikj) = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i)
    for u in range(n):
        i = ints[u, PERM]
        for v in range(n):
            j = ints[v, PERM]
            s = 0.0
            for k in range(n):
                s += (dM[i, j, k] + dM[i, k, j] - dM[j, k, i]) * wk[k, CQD]
            out[u, v] = 0.5 * s
    return True


@jit
def coriolis_matrix(ints, reals, q, qd, out):
    """Write the n x n Coriolis matrix (M' - 2C skew) in user order; False on bad input."""
    n = ints.shape[0]
    return _coriolis_matrix_row(ints, reals, q, qd, np.empty((n, NC)), np.empty((n, n, n)),
                                out)


@pjit
def coriolis_matrix_batch(ints, reals, Q, Qd, out):
    """:func:`coriolis_matrix` over the rows of (N, n) arrays into out; False on bad input."""
    n = ints.shape[0]
    N = Q.shape[0]
    if Q.shape[1] != n or Qd.shape[0] != N:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        wk = np.empty((n, NC))
        dM = np.empty((n, n, n))
        for r in range(c * N // K, (c + 1) * N // K):
            if not _coriolis_matrix_row(ints, reals, Q[r], Qd[r], wk, dM, out[r]):
                ok[c] = False
                break
    return np.all(ok)
