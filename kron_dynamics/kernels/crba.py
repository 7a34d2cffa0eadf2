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
Composite-rigid-body algorithm for M(q), compiled, with spatial quantities in the root frame.

Mirrors :mod:`kron_dynamics.algorithms.crba`. :func:`crba_pass` leaves in the work array
everything that M and its derivatives (:mod:`.coriolis_star`) are made of: root-frame body
frames, motion subspaces S, composite inertias Ic and F = Ic S.
"""

import numba
import numpy as np

from .algebra import (add, chunks, cross, dot, get3, get9, inline, jit, mm, mmt, mv, pjit, scl,
                      set3, set9)
from .kinematics import FP, FR, frames, load
from .layout import ARM, AX, COM, INER, INV, MASS, PARENT, REVOLUTE

# work array columns (root frame): frame block (R 9, p 3), S (6), composite m, h (3),
# Io (9), F = Ic S (6), q, qd
CS, CM, CH, CI, CF, CQ, CQD = 12, 18, 19, 22, 31, 37, 38
NC = 39


@jit
def inertia_times(wk, k, sw, sv):
    """Composite spatial inertia of body k times the motion vector (sw, sv)."""
    m = wk[k, CM]
    h = get3(wk, k, CH)
    Io = get9(wk, k, CI)
    return add(mv(Io, sw), cross(h, sv)), add(scl(sv, m), cross(sw, h))


@jit
def motion_subspaces(ints, reals, wk):
    """
    Every body's S into wk[:, CS:CS + 6] from its root-frame frame in wk[:, 0:12].

    (angular, linear) in root axes, the linear part the velocity of the body point at the
    root origin: (a, p x a) for a revolute joint of axis a at p, (0, a) for a prismatic one.
    """
    for i in range(ints.shape[0]):
        a = mv(get9(wk, i, FR), get3(reals, i, AX))
        if ints[i, REVOLUTE]:
            set3(wk, i, CS, a)
            set3(wk, i, CS + 3, cross(get3(wk, i, FP), a))
        else:
            set3(wk, i, CS, (0.0, 0.0, 0.0))
            set3(wk, i, CS + 3, a)


@jit
def body_inertia(reals, wk, i):
    """Body i's spatial inertia about the root origin (m, h = m c, Io) into wk's CM, CH, CI."""
    R, p = get9(wk, i, FR), get3(wk, i, FP)
    m = reals[i, MASS]
    c = add(p, mv(R, get3(reals, i, COM)))
    IG = mmt(mm(R, get9(reals, i, INER)), R)
    cc = dot(c, c)
    wk[i, CM] = m
    set3(wk, i, CH, scl(c, m))
    set9(wk, i, CI, (IG[0] + m * (cc - c[0] * c[0]), IG[1] - m * c[0] * c[1],
                     IG[2] - m * c[0] * c[2], IG[3] - m * c[1] * c[0],
                     IG[4] + m * (cc - c[1] * c[1]), IG[5] - m * c[1] * c[2],
                     IG[6] - m * c[2] * c[0], IG[7] - m * c[2] * c[1],
                     IG[8] + m * (cc - c[2] * c[2])))


@jit
def crba_pass(ints, reals, wk):
    """Kinematics, motion subspaces S, composite inertias Ic and F = Ic S, about the root."""
    frames(ints, reals, wk, CQ, True)
    composite_pass(ints, reals, wk)


@inline
def composite_pass(ints, reals, wk):
    """:func:`crba_pass` after its first step: the root-frame frames are in wk[:, 0:12]."""
    n = ints.shape[0]
    motion_subspaces(ints, reals, wk)
    for i in range(n):
        body_inertia(reals, wk, i)
    for i in range(n - 1, -1, -1):
        par = ints[i, PARENT]
        if par >= 0:
            for k in range(CM, CI + 9):
                wk[par, k] += wk[i, k]
    for j in range(n):
        fn, ff = inertia_times(wk, j, get3(wk, j, CS), get3(wk, j, CS + 3))
        set3(wk, j, CF, fn)
        set3(wk, j, CF + 3, ff)


@jit
def sdot(wk, i, fn, ff):
    """S_i . (fn, ff)."""
    return dot(get3(wk, i, CS), fn) + dot(get3(wk, i, CS + 3), ff)


@jit
def assemble_mass_matrix(ints, reals, wk, out, user_order):
    """M_ij = S_i . F_j from a finished :func:`crba_pass`, armature included, into out."""
    n = ints.shape[0]
    for u in range(n):
        for v in range(n):
            out[u, v] = 0.0
    write_mass_matrix(ints, reals, wk, out, user_order)


@inline
def write_mass_matrix(ints, reals, wk, out, user_order):
    """
    :func:`assemble_mass_matrix` without zeroing out first: only M's tree pattern is written.

    For a work matrix whose other entries are zero already and stay so (forward dynamics':
    a tree's M is zero wherever neither body is an ancestor of the other).
    """
    for j in range(ints.shape[0]):
        fn, ff = get3(wk, j, CF), get3(wk, j, CF + 3)
        uj = ints[j, INV] if user_order else j
        i = j
        while i >= 0:
            ui = ints[i, INV] if user_order else i
            v = sdot(wk, i, fn, ff)
            out[ui, uj] = v
            out[uj, ui] = v
            i = ints[i, PARENT]
        out[uj, uj] += reals[j, ARM]


@inline
def _crba_row(ints, reals, q, wk, out):
    """M(q) in user order into out (n, n), armature included; False on a bad q."""
    n = ints.shape[0]
    if not load(ints, q, n, wk, CQ):
        return False
    crba_pass(ints, reals, wk)
    assemble_mass_matrix(ints, reals, wk, out, True)
    return True


@jit
def crba(ints, reals, q, out):
    """Composite-rigid-body M(q) in user order into out, armature included; False on bad q."""
    return _crba_row(ints, reals, q, np.empty((ints.shape[0], NC)), out)


@pjit
def crba_batch(ints, reals, Q, out):
    """:func:`crba` over the rows of an (N, n) array into out (N, n, n); False on bad input."""
    n = ints.shape[0]
    N = Q.shape[0]
    if Q.shape[1] != n:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        wk = np.empty((n, NC))
        for r in range(c * N // K, (c + 1) * N // K):
            if not _crba_row(ints, reals, Q[r], wk, out[r]):
                ok[c] = False
                break
    return np.all(ok)


@jit
def _centroidal_row(ints, reals, q, wk, out):
    """
    A_G (6 x n, user order): Pinocchio's ccrba from a :func:`crba_pass`; False on bad input.

    Column j of sum_b I_b J_b (world spatial Jacobians) is Ic_j S_j = F_j: the momentum
    about the root origin (angular n, linear f) of the unit velocity of joint j; about the
    centre of mass c of the moving bodies the angular part is n - c x f. Rows: linear, then
    angular. False when the moving bodies have no mass.
    """
    n = ints.shape[0]
    if out.shape[1] != n or not load(ints, q, n, wk, CQ):
        return False
    crba_pass(ints, reals, wk)
    m, h = 0.0, (0.0, 0.0, 0.0)
    for i in range(n):
        if ints[i, PARENT] < 0:
            m += wk[i, CM]
            h = add(h, get3(wk, i, CH))
    if not m > 0.0:
        return False
    c = scl(h, 1.0 / m)
    for j in range(n):
        u = ints[j, INV]
        f = get3(wk, j, CF + 3)
        a = cross(f, c)             # n - c x f
        a = add(get3(wk, j, CF), a)
        out[0, u], out[1, u], out[2, u] = f[0], f[1], f[2]
        out[3, u], out[4, u], out[5, u] = a[0], a[1], a[2]
    return True


@jit
def centroidal_momentum_matrix(ints, reals, q, out):
    """Pinocchio's A_G (6 x n) into out; False on a bad q or massless moving bodies."""
    return _centroidal_row(ints, reals, q, np.empty((ints.shape[0], NC)), out)


@pjit
def centroidal_momentum_matrix_batch(ints, reals, Q, out):
    """:func:`centroidal_momentum_matrix` over the rows of Q (N, n) into out (N, 6, n)."""
    n = ints.shape[0]
    N = Q.shape[0]
    if Q.shape[1] != n:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        wk = np.empty((n, NC))
        for r in range(c * N // K, (c + 1) * N // K):
            if not _centroidal_row(ints, reals, Q[r], wk, out[r]):
                ok[c] = False
                break
    return np.all(ok)
