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
The papers' mass-matrix forms compiled like the library's CRBA, for timing them (bench only).

Compiled versions of the readable :mod:`kron_dynamics.algorithms.mass_matrix_jacobian`
(000 eq. 95) and :mod:`kron_dynamics.algorithms.jsim_explicit` (003 eqs. 30-37), so that
the three mass-matrix algorithms can be timed against each other at compiled speed
(bench_dynamics.py). They start from the library's one kinematics pass and are tested
against the readable forms (test/test_kernels.py).
"""

import numpy as np

from kron_dynamics.kernels.algebra import (add, cross, dot, get3, get9, jit, mm, mmt, mv, scl,
                                           set3, set9, sub)
from kron_dynamics.kernels.kinematics import FP, FR, frames, load
from kron_dynamics.kernels.layout import ARM, AX, COM, INER, MASS, PARENT, PERM, REVOLUTE

# work array columns (root frame): frame block (R 9, p 3), axis a (3), CoM c (3),
# central inertia (9), q
_KA, _KC, _KI, _KQ = 12, 15, 18, 27
_NK = 28


@jit
def _world_bodies(ints, reals, q):
    """
    Return (ok, wk, sup) at q: root-frame axes, CoMs and central inertias in wk.

    sup[l, u]: u is at or above l; ok is False on a bad q.
    """
    n = ints.shape[0]
    wk = np.empty((n, _NK))
    sup = np.empty((n, n), dtype=np.bool_)
    if not load(ints, q, n, wk, _KQ):
        return False, wk, sup
    frames(ints, reals, wk, _KQ, True)
    for i in range(n):
        R, p = get9(wk, i, FR), get3(wk, i, FP)
        set3(wk, i, _KA, mv(R, get3(reals, i, AX)))
        set3(wk, i, _KC, add(p, mv(R, get3(reals, i, COM))))
        set9(wk, i, _KI, mmt(mm(R, get9(reals, i, INER)), R))
        for u in range(n):
            sup[i, u] = False
        k = i
        while k >= 0:
            sup[i, k] = True
            k = ints[k, PARENT]
    return True, wk, sup


@jit
def _to_user(ints, reals, Mi, out):
    """Permute an internal-order M into user order and add the armature."""
    n = ints.shape[0]
    for u in range(n):
        i = ints[u, PERM]
        for v in range(n):
            out[u, v] = Mi[i, ints[v, PERM]]
        out[u, u] += reals[i, ARM]


@jit
def mass_matrix_jacobian(ints, reals, q, out):
    """M(q) by 000 eq. (95), sum of m J_TG^T J_TG + J_R^T I_G J_R, compiled; False on bad q."""
    n = ints.shape[0]
    ok, wk, sup = _world_bodies(ints, reals, q)
    if not ok:
        return False
    Mi = np.zeros((n, n))
    JT = np.empty((n, 3))
    JR = np.empty((n, 3))
    for b in range(n):
        c = get3(wk, b, _KC)
        IG = get9(wk, b, _KI)
        m = reals[b, MASS]
        for s in range(b + 1):
            if not sup[b, s]:
                continue
            a = get3(wk, s, _KA)
            if ints[s, REVOLUTE]:
                set3(JT, s, 0, cross(a, sub(c, get3(wk, s, FP))))
                set3(JR, s, 0, a)
            else:
                set3(JT, s, 0, a)
                set3(JR, s, 0, (0.0, 0.0, 0.0))
        for s in range(b + 1):
            if not sup[b, s]:
                continue
            jts, jrs = get3(JT, s, 0), get3(JR, s, 0)
            Ijr = mv(IG, jrs)
            for k in range(s + 1):
                if sup[b, k]:
                    v = m * dot(jts, get3(JT, k, 0)) + dot(Ijr, get3(JR, k, 0))
                    Mi[s, k] += v
                    if k != s:
                        Mi[k, s] += v
    _to_user(ints, reals, Mi, out)
    return True


@jit
def jsim_explicit(ints, reals, q, out):
    """M(q) element by element from 003 eqs. (30)-(37), compiled; False on a bad q."""
    n = ints.shape[0]
    ok, wk, sup = _world_bodies(ints, reals, q)
    if not ok:
        return False
    Mi = np.zeros((n, n))
    for u in range(n):
        nu, pu = get3(wk, u, _KA), get3(wk, u, FP)
        k = u
        while k >= 0:             # k in iI_u: u's own joint and its ancestors; links in uL
            nk, pk = get3(wk, k, _KA), get3(wk, k, FP)
            v = 0.0
            if ints[u, REVOLUTE] and ints[k, REVOLUTE]:      # CASES 1, 3 (eqs. 30, 32)
                nn = dot(nu, nk)
                for lk in range(u, n):
                    if sup[lk, u]:
                        m = reals[lk, MASS]
                        c = get3(wk, lk, _KC)
                        ru, rk = sub(c, pu), sub(c, pk)
                        # n_u (I_l - m [r_ul]x [r_kl]x) n_k, [a]x [b]x = b a^T - (a.b) 1
                        v += (dot(nu, mv(get9(wk, lk, _KI), nk))
                              + m * (dot(ru, rk) * nn - dot(nu, rk) * dot(ru, nk)))
            elif ints[u, REVOLUTE]:                          # CASES 2, 4 (eqs. 31, 33)
                h = (0.0, 0.0, 0.0)
                for lk in range(u, n):
                    if sup[lk, u]:
                        h = add(h, scl(sub(get3(wk, lk, _KC), pu), reals[lk, MASS]))
                v = dot(nu, cross(h, nk))
            elif ints[k, REVOLUTE]:                          # CASES 5, 7 (eqs. 34, 36)
                h = (0.0, 0.0, 0.0)
                for lk in range(u, n):
                    if sup[lk, u]:
                        h = add(h, scl(sub(get3(wk, lk, _KC), pk), reals[lk, MASS]))
                v = -dot(nu, cross(h, nk))
            else:                                            # CASES 6, 8 (eqs. 35, 37)
                mass = 0.0
                for lk in range(u, n):
                    if sup[lk, u]:
                        mass += reals[lk, MASS]
                v = mass * dot(nu, nk)
            Mi[u, k] = v
            Mi[k, u] = v
            k = ints[k, PARENT]
    _to_user(ints, reals, Mi, out)
    return True


def entry_points():
    """Return {name: compiled entry point} of both kernels for the library's argument types."""
    from kron_dynamics.kernels.native import SIGNATURES
    signature = SIGNATURES['crba'][1]
    return {'mass_matrix_jacobian': mass_matrix_jacobian.compile(signature),
            'jsim_explicit': jsim_explicit.compile(signature)}
