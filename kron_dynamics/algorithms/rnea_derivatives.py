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
Partial derivatives of Newton-Euler inverse dynamics: dtau/dq, dtau/dq', and M = dtau/dq''.

Spatial quantities in the root frame at the root origin (angular first, as in
:mod:`.crba`): S_i the motion subspace of joint i, V_i and A_i the body's velocity and
acceleration (A_root = (0, -g): gravity as an upward acceleration of the base),
S'_i = V_parent x S_i, I_i the body's spatial inertia, f^B_i = I_i A_i + V_i x* I_i V_i its
Newton-Euler force and f_i the sum over its sub-tree D(i), tau_i = S_i . f_i (002).

Joint j moves its sub-tree rigidly, so every root-frame vector of a body in D(j) changes
with q_j by the action of S_j (S_j x for motions, S_j x* for forces, S_j x* I - I S_j x for
inertias); what does not move rigidly is V and A of the parent of j. Carried through (the
derivation of Carpentier and Mansard, 2018, in the Kronecker papers' root frame), with
K_i = V_i x* I_i - I_i V_i x + (I_i V_i) xbar* and the composites Ic_k, Kc_k over D(k):

    dtau_k/dq_j  = S_k . (Ic_k X_j + Kc_k S'_j)                     k in D(j)
                 = S_k . (S_j x* f_j + Ic_j X_j + Kc_j S'_j)        k a proper ancestor of j
    dtau_k/dq'_j = S_k . (2 Ic_m S'_j + Kc_m S_j),  m the lower of j and k on one path,

with X_j = A_parent(j) x S_j - S'_j x V_parent(j), and 0 when neither of j, k is an ancestor
of the other. (In the first line S_k's own change, (S_j x S_k) . f_k, cancels against the
rigid part S_k . (S_j x* f_k).) dtau/dq' is also C*(I kron q' + q' kron I) of 000 eq. (101),
which the tests check. Armature adds armature * q'' to tau: nothing to the derivatives.
"""

import numpy as np

from ..model.rotations import skew
from ..model.tree import KinematicTree
from .crba import spatial_terms


def motion_cross(V: np.ndarray) -> np.ndarray:
    """V x for a motion V = (w, v) (angular first): (w x m_w, w x m_v + v x m_w)."""
    out = np.zeros((6, 6))
    out[:3, :3] = out[3:, 3:] = skew(V[:3])
    out[3:, :3] = skew(V[3:])
    return out


def force_cross(V: np.ndarray) -> np.ndarray:
    """V x* for a motion V acting on forces (moment first): -(V x)^T."""
    return -motion_cross(V).T


def force_cross_bar(f: np.ndarray) -> np.ndarray:
    """Return f xbar*, the map X -> X x* f, for a force f = (moment, force)."""
    out = np.zeros((6, 6))
    out[:3, :3] = -skew(f[:3])
    out[:3, 3:] = out[3:, :3] = -skew(f[3:])
    return out


def rnea_derivatives(tree: KinematicTree, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray):
    """Return (dtau/dq, dtau/dq', M) at (q, q', q'') in the tree's order, armature excluded."""
    n = tree.n
    Ib, S = spatial_terms(tree, q)
    root_a = np.concatenate([np.zeros(3), -np.asarray(tree.gravity, dtype=float)])
    V, A, Sd = np.zeros((n, 6)), np.zeros((n, 6)), np.zeros((n, 6))
    Vp, Ap = np.zeros((n, 6)), np.zeros((n, 6))       # of each joint's parent body
    f, K = np.zeros((n, 6)), np.zeros((n, 6, 6))
    for i in range(n):
        par = tree.parent[i]
        Vp[i], Ap[i] = (V[par], A[par]) if par >= 0 else (np.zeros(6), root_a)
        Sd[i] = motion_cross(Vp[i]) @ S[i]
        V[i] = Vp[i] + S[i] * qd[i]
        A[i] = Ap[i] + S[i] * qdd[i] + Sd[i] * qd[i]
        h = Ib[i] @ V[i]
        f[i] = Ib[i] @ A[i] + force_cross(V[i]) @ h
        K[i] = force_cross(V[i]) @ Ib[i] - Ib[i] @ motion_cross(V[i]) + force_cross_bar(h)
    Ic, fc, Kc = Ib.copy(), f.copy(), K.copy()
    for i in range(n - 1, -1, -1):
        par = tree.parent[i]
        if par >= 0:
            Ic[par] += Ic[i]
            fc[par] += fc[i]
            Kc[par] += Kc[i]
    dq, dv, M = np.zeros((n, n)), np.zeros((n, n)), np.zeros((n, n))
    for j in range(n):
        X = motion_cross(Ap[j]) @ S[j] - motion_cross(Sd[j]) @ Vp[j]
        force = Ic[j] @ X + Kc[j] @ Sd[j]        # k = j and its ancestors: j is the lower
        rate = 2.0 * Ic[j] @ Sd[j] + Kc[j] @ S[j]
        k = j
        while k >= 0:
            dq[k, j] = S[k] @ (force if k == j else force + force_cross(S[j]) @ fc[j])
            dv[k, j] = S[k] @ rate
            M[k, j] = M[j, k] = S[k] @ Ic[j] @ S[j]
            k = tree.parent[k]
    # the pairs with k strictly below j (k in D(j), k != j): the composite of k
    for k in range(n):
        j = tree.parent[k]
        while j >= 0:
            X = motion_cross(Ap[j]) @ S[j] - motion_cross(Sd[j]) @ Vp[j]
            dq[k, j] = S[k] @ (Ic[k] @ X + Kc[k] @ Sd[j])
            dv[k, j] = S[k] @ (2.0 * Ic[k] @ Sd[j] + Kc[k] @ S[j])
            j = tree.parent[j]
    return dq, dv, M
