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
Centre of mass of the robot and its 3 x n Jacobian, compiled, O(n).

Mirrors :mod:`kron_dynamics.algorithms.center_of_mass` (c = sum m_i r_Gi / m and
J_c = sum m_i J_TGi / m with 000 eq. 45). Here one inward pass sums, per joint s, the mass
m_s and first moment h_s = sum m_i r_Gi of the bodies it moves; then column s is
a_s x (h_s - m_s p_s) / m (revolute) or a_s m_s / m (prismatic). The mass welded to the fixed
root (packed in the root row of ``reals``) enters m and c when asked (``include_root``).
"""

import numba
import numpy as np

from .algebra import acc3, add, chunks, cross, get3, get9, inline, jit, mv, pjit, scl, set3, sub
from .kinematics import FP, FR, frames, load
from .layout import AX, COM, INV, MASS, PARENT, REVOLUTE

# work array columns: frame block (root frame), q, moved mass, moved first moment (3)
CQ, CMS, CHS = 12, 13, 14
NCOM = 17


@jit
def _com_pass(ints, reals, q, include_root, wk):
    """Frames and subtree sums into wk; return (ok, m, first moment); ok is False if m <= 0."""
    n = ints.shape[0]
    if not load(ints, q, n, wk, CQ):
        return False, 0.0, (0.0, 0.0, 0.0)
    frames(ints, reals, wk, CQ, True)
    for i in range(n):
        m = reals[i, MASS]
        wk[i, CMS] = m
        c = add(get3(wk, i, FP), mv(get9(wk, i, FR), get3(reals, i, COM)))
        set3(wk, i, CHS, scl(c, m))
    total = 0.0
    h = (0.0, 0.0, 0.0)
    if include_root:
        total = reals[n, MASS]
        h = scl(get3(reals, n, COM), total)
    for i in range(n - 1, -1, -1):
        par = ints[i, PARENT]
        if par >= 0:
            wk[par, CMS] += wk[i, CMS]
            acc3(wk, par, CHS, get3(wk, i, CHS))
        else:
            total += wk[i, CMS]
            h = add(h, get3(wk, i, CHS))
    return total > 0.0, total, h


@inline
def _com_row(ints, reals, q, include_root, wk, out):
    ok, total, h = _com_pass(ints, reals, q, include_root, wk)
    if not ok:
        return False
    out[0], out[1], out[2] = scl(h, 1.0 / total)
    return True


@jit
def _com_jacobian_row(ints, reals, q, include_root, wk, out):
    ok, total, h = _com_pass(ints, reals, q, include_root, wk)
    if not ok:
        return False
    for s in range(ints.shape[0]):
        a = mv(get9(wk, s, FR), get3(reals, s, AX))
        ms, hs = wk[s, CMS], get3(wk, s, CHS)
        if ints[s, REVOLUTE]:
            col = scl(cross(a, sub(hs, scl(get3(wk, s, FP), ms))), 1.0 / total)
        else:
            col = scl(a, ms / total)
        u = ints[s, INV]
        out[0, u], out[1, u], out[2, u] = col
    return True


@jit
def center_of_mass(ints, reals, q, include_root, out):
    """Centre of mass (3,) in the root frame into out; False on bad q or no mass."""
    return _com_row(ints, reals, q, include_root, np.empty((ints.shape[0], NCOM)), out)


@jit
def center_of_mass_jacobian(ints, reals, q, include_root, out):
    """3 x n Jacobian of the centre of mass (user order) into out; False on bad q or no mass."""
    return _com_jacobian_row(ints, reals, q, include_root, np.empty((ints.shape[0], NCOM)), out)


@pjit
def center_of_mass_batch(ints, reals, Q, include_root, out):
    """:func:`center_of_mass` over the rows of Q (N, n) into out (N, 3)."""
    n = ints.shape[0]
    N = Q.shape[0]
    if Q.shape[1] != n:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        wk = np.empty((n, NCOM))
        for r in range(c * N // K, (c + 1) * N // K):
            if not _com_row(ints, reals, Q[r], include_root, wk, out[r]):
                ok[c] = False
                break
    return np.all(ok)


@pjit
def center_of_mass_jacobian_batch(ints, reals, Q, include_root, out):
    """:func:`center_of_mass_jacobian` over the rows of Q (N, n) into out (N, 3, n)."""
    n = ints.shape[0]
    N = Q.shape[0]
    if Q.shape[1] != n:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        wk = np.empty((n, NCOM))
        for r in range(c * N // K, (c + 1) * N // K):
            if not _com_jacobian_row(ints, reals, Q[r], include_root, wk, out[r]):
                ok[c] = False
                break
    return np.all(ok)
