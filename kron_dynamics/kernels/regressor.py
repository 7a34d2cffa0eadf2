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
The joint torque regressor Y(q, q', q''), tau = Y p, compiled.

Mirrors :mod:`kron_dynamics.algorithms.regressor`: the Newton-Euler outward pass of
:func:`.rnea.rnea_pass` gives each body's (w, w', a); each body's 3 x 10 force and moment
blocks are then passed inward to every joint above it, projected on that joint's axis.
Rows in user order, column blocks of ten in the tree's (internal) order.
"""

import numba
import numpy as np

from .algebra import chunks, cross, get3, get9, jit, pjit
from .kinematics import FP, FR, load
from .layout import AX, INV, PARENT, REVOLUTE
from .rnea import NW, rnea_pass, WQ, WQD, WQDD

_WW, _WDW, _WA = 12, 15, 18        # rnea_pass's work columns: w, w', a (body axes)
# the six entries of a symmetric matrix (Pinocchio's order), as row and column
_EI = (0, 0, 1, 0, 1, 2)
_EJ = (0, 1, 1, 2, 2, 2)


@jit
def _blocks(w, dw, a, F, M):
    """Fill F, M (3 x 10): a body's force and moment about its origin per parameter."""
    for r in range(3):
        for c in range(10):
            F[r, c] = 0.0
            M[r, c] = 0.0
        F[r, 0] = a[r]
    for k in range(3):
        e = (1.0 if k == 0 else 0.0, 1.0 if k == 1 else 0.0, 1.0 if k == 2 else 0.0)
        f = cross(dw, e)
        ww = cross(w, cross(w, e))
        m = cross(e, a)
        for r in range(3):
            F[r, 1 + k] = f[r] + ww[r]
            M[r, 1 + k] = m[r]
    for k in range(6):
        i, j = _EI[k], _EJ[k]
        Edw = _sym(i, j, dw)     # E w' and E w, E the symmetric unit matrix of entry (i, j)
        c = cross(w, _sym(i, j, w))
        for r in range(3):
            M[r, 4 + k] = Edw[r] + c[r]


@jit
def _sym(i, j, v):
    """Return E v for E with ones at (i, j) and (j, i), zeros elsewhere."""
    return ((v[j] if i == 0 else 0.0) + (v[i] if j == 0 and i != j else 0.0),
            (v[j] if i == 1 else 0.0) + (v[i] if j == 1 and i != j else 0.0),
            (v[j] if i == 2 else 0.0) + (v[i] if j == 2 and i != j else 0.0))


@jit
def _regressor_row(ints, reals, q, qd, qdd, wk, F, M, no_wrench, out):
    """
    One regressor into out (n, 10 n): rows user order; False on a bad input.

    ``no_wrench``: an empty (0, 6) array, the external wrenches of the motion pass.
    """
    n = ints.shape[0]
    if not (load(ints, q, n, wk, WQ) and load(ints, qd, n, wk, WQD)
            and load(ints, qdd, n, wk, WQDD)):
        return False
    rnea_pass(ints, reals, 1.0, no_wrench, wk)
    out[:, :] = 0.0
    for j in range(n):
        _blocks(get3(wk, j, _WW), get3(wk, j, _WDW), get3(wk, j, _WA), F, M)
        k = j
        while True:
            z = get3(reals, k, AX)
            row = ints[k, INV]
            B = M if ints[k, REVOLUTE] else F
            for c in range(10):
                out[row, 10 * j + c] = z[0] * B[0, c] + z[1] * B[1, c] + z[2] * B[2, c]
            par = ints[k, PARENT]
            if par < 0:
                break
            R, p = get9(wk, k, FR), get3(wk, k, FP)
            for c in range(10):
                f = (R[0] * F[0, c] + R[1] * F[1, c] + R[2] * F[2, c],
                     R[3] * F[0, c] + R[4] * F[1, c] + R[5] * F[2, c],
                     R[6] * F[0, c] + R[7] * F[1, c] + R[8] * F[2, c])
                m = (R[0] * M[0, c] + R[1] * M[1, c] + R[2] * M[2, c],
                     R[3] * M[0, c] + R[4] * M[1, c] + R[5] * M[2, c],
                     R[6] * M[0, c] + R[7] * M[1, c] + R[8] * M[2, c])
                pf = cross(p, f)
                for r in range(3):
                    F[r, c] = f[r]
                    M[r, c] = m[r] + pf[r]
            k = par
    return True


@jit
def regressor(ints, reals, q, qd, qdd, out):
    """Y(q, q', q'') into out (n, 10 n); False on a bad input (armature not included)."""
    n = ints.shape[0]
    return _regressor_row(ints, reals, q, qd, qdd, np.empty((n, NW)), np.empty((3, 10)),
                          np.empty((3, 10)), np.zeros((0, 6)), out)


@pjit
def regressor_batch(ints, reals, Q, Qd, Qdd, out):
    """:func:`regressor` over the rows of (N, n) arrays into out (N, n, 10 n)."""
    n = ints.shape[0]
    N = Q.shape[0]
    if Q.shape[1] != n or Qd.shape[0] != N or Qdd.shape[0] != N:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        wk = np.empty((n, NW))
        F, M = np.empty((3, 10)), np.empty((3, 10))
        no_wrench = np.zeros((0, 6))
        for r in range(c * N // K, (c + 1) * N // K):
            if not _regressor_row(ints, reals, Q[r], Qd[r], Qdd[r], wk, F, M, no_wrench,
                                  out[r]):
                ok[c] = False
                break
    return np.all(ok)
