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
Partial derivatives of contact-constrained forward dynamics (the KKT system of 004 sec. 5).

The dynamics M v' + h = S^T tau + J_c^T lambda, J_c v' + J_c' v = 0 are, at their solution
(v', lambda), the two identities ID(q, v, v') - J_c(q)^T lambda = S^T tau and
a_c(q, v, v') = 0, with a_c the contact accelerations. Their derivatives in x = q, v give
the KKT system (Carpentier and Mansard, 2018; Pinocchio's
``computeConstraintDynamicsDerivatives``)

    [ M    J_c^T ] [ dv'/dx      ]   [ -(dID/dx - d(J_c^T lambda)/dx) ]
    [ J_c  0     ] [ -dlambda/dx ] = [ -da_c/dx                       ],

and in tau the right-hand side (S^T, 0). dID/dx is :mod:`.rnea_derivatives`; this module
computes the contact terms along each contact's path, in root-frame spatial vectors at the
root origin (angular first, as :mod:`.rnea_derivatives`): S_j the motion of coordinate j,
Vp_j, Ap_j the velocity and acceleration of its parent body, S'_j = Vp_j x S_j. Joint j
moves its sub-tree rigidly, so every root-frame vector of a body below j changes by the
action of S_j, except Vp_j and Ap_j (the root at rest: a contact's acceleration has no
gravity); for the contact's body i

    dV_i/dq_j = S_j x (V_i - Vp_j),   dA_i/dq_j = S_j x (A_i - Ap_j) - (S_j x Vp_j) x (V_i - Vp_j),
    dV_i/dv_j = S_j,                  dA_i/dv_j = S'_j + S_j x (V_i - V_j),

V_j the velocity of the body of j. A moving base's coordinates are one block: each moves the
whole robot, the base's own columns included, and its parent is the root (Vp = Ap = 0,
S' = 0), as Pinocchio's tangent space (q moved as integrate(q, dq), v in base axes).
The contact frame moves with body i, so a root-frame motion m read in it changes by
-X^-1 (S_j x m). The generalized force J_c^T lambda of a wrench F (root frame, moment first)
is S_k . F over the path; lambda held in the contact's axes, F moves with the body ('local',
dF/dq_j = S_j x* F) or keeps its world axes at a moving point ('local_world_aligned',
dF/dq_j = ((S_j's velocity of the point) x f, 0)), and S_k turns with every coordinate above
it (dS_k/dq_j = S_j x S_k). A 'local_world_aligned' constraint is the 'local' one turned by
the contact's rotation, zero at the solution, so its derivatives are turned the same way.
"""

import numpy as np


def cross(m: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Return m x n of motions (angular first), column by column of (6, k) arrays or vectors."""
    w, v, w2, v2 = m[:3], m[3:], n[:3], n[3:]
    return np.concatenate([np.cross(w, w2, axis=0), np.cross(w, v2, axis=0)
                           + np.cross(v, w2, axis=0)])


def cross_force(m: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Return m x* f, motions acting on forces (moment first): (w x n + v x f, w x f)."""
    w, v, n, g = m[:3], m[3:], f[:3], f[3:]
    return np.concatenate([np.cross(w, n, axis=0) + np.cross(v, g, axis=0),
                           np.cross(w, g, axis=0)])


def path_motion(S: np.ndarray, nb: int, v: np.ndarray, a: np.ndarray):
    """
    Return the motion along a path: (Vp, Ap, Vj, Sd, V, A), per coordinate (6, k) columns.

    S (6, k): the path's coordinates root first, a moving base's nb first (one block);
    v, a (k): their velocities and accelerations. Per coordinate j the velocity and
    acceleration of its parent body (Vp, Ap), the velocity of its own body (Vj) and
    S'_j = Vp_j x S_j (Sd); V, A of the last body. True accelerations: the root is at rest
    (no gravity, which a contact's acceleration does not contain).
    """
    k = S.shape[1]
    Vp, Ap, Vj, Sd = (np.zeros((6, k)) for _ in range(4))
    V = S[:, :nb] @ v[:nb]
    A = S[:, :nb] @ a[:nb]
    Vj[:, :nb] = V[:, None]
    for j in range(nb, k):
        Vp[:, j], Ap[:, j] = V, A
        Sd[:, j] = cross(V, S[:, j])
        V = V + S[:, j] * v[j]
        A = A + S[:, j] * a[j] + Sd[:, j] * v[j]
        Vj[:, j] = V
    return Vp, Ap, Vj, Sd, V, A


def to_frame(R: np.ndarray, p: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Return root-frame motions m (6, k) or (6,), at the root origin, in the frame (R, p)."""
    at_p = m[3:] + np.cross(m[:3], p, axis=0)
    return np.concatenate([R.T @ m[:3], R.T @ at_p])


def contact_acceleration_derivatives(S, nb, v, a, R, p, dim):
    """
    Return (a_c, da_c/dq, da_c/dv) of one contact in its local axes: (dim,), (dim, k) twice.

    S, nb, v, a as :func:`path_motion` (the path of the contact's body); (R, p) the contact
    frame in the root frame. dim 6: the frame's spatial acceleration (linear rows first);
    dim 3: the classical acceleration of its point.
    """
    Vp, Ap, Vj, Sd, V, A = path_motion(S, nb, v, a)
    V_ = V[:, None]
    # the motion of body i less the turning of the frame, -X^-1 (S_j x m): S_j x V cancels
    dVq = to_frame(R, p, -cross(S, Vp))
    dAq = to_frame(R, p, -cross(S, Ap) - cross(cross(S, Vp), V_ - Vp))
    dVv = to_frame(R, p, S)
    dAv = to_frame(R, p, Sd + cross(S, V_ - Vj))
    Vl, Al = to_frame(R, p, V), to_frame(R, p, A)
    if dim == 6:
        return (np.concatenate([Al[3:], Al[:3]]), np.vstack([dAq[3:], dAq[:3]]),
                np.vstack([dAv[3:], dAv[:3]]))
    w, u = Vl[:3, None], Vl[3:, None]

    def classical(dA, dV):
        return dA[3:] + np.cross(dV[:3], u, axis=0) + np.cross(w, dV[3:], axis=0)

    return Al[3:] + np.cross(Vl[:3], Vl[3:]), classical(dAq, dVq), classical(dAv, dVv)


def contact_force_derivative(S, nb, R, p, lam, dim, local):
    """
    Return d(J_c^T lambda)/dq (k, k) on one contact's path, lambda held in the contact's axes.

    S, nb as :func:`path_motion`; (R, p) the contact frame; lam its force (then moment
    about the point for dim 6); ``local``: lambda in the contact's axes ('local'), else
    in world axes ('local_world_aligned'). Entry [i, j] = S_i . dF/dq_j + (S_j x S_i) . F
    where S_i turns with q_j (i below j, or both in the base block); (S_j x S_i) . F =
    -S_i . (S_j x* F).
    """
    k = S.shape[1]
    f = np.asarray(lam[:3], dtype=float)
    m = np.asarray(lam[3:], dtype=float) if dim == 6 else np.zeros(3)
    if local:
        f, m = R @ f, R @ m
    F = np.concatenate([m + np.cross(p, f), f])[:, None]
    turned = S.T @ cross_force(S, F)             # [i, j] = S_i . (S_j x* F)
    below = np.tri(k, k, -1, dtype=bool)          # i > j: S_i turns with q_j
    below[:nb, :nb] = True
    if local:       # F turns with the body: dF/dq_j = S_j x* F
        return np.where(below, 0.0, turned)
    moved = np.cross(np.cross(S[:3], p[:, None], axis=0) + S[3:], f[:, None], axis=0)
    return S[:3].T @ moved - np.where(below, turned, 0.0)


def kkt_derivatives(M, Jc, dtau_dq, dtau_dv, dQ_dq, da_dq, da_dv):
    """
    Return (dv'/dq, dv'/dv, dv'/dtau, dlambda/dq, dlambda/dv, dlambda/dtau) by the KKT system.

    M (nv, nv), Jc (m, nv) of full row rank; dtau_dq, dtau_dv: the inverse dynamics'
    derivatives at v'; dQ_dq: d(J_c^T lambda)/dq; da_dq, da_dv: the contact accelerations'.
    """
    nv, m = M.shape[0], Jc.shape[0]
    K = np.zeros((nv + m, nv + m))
    K[:nv, :nv], K[:nv, nv:], K[nv:, :nv] = M, Jc.T, Jc
    rhs = np.zeros((nv + m, 3 * nv))
    rhs[:nv, :nv] = -(dtau_dq - dQ_dq)
    rhs[nv:, :nv] = -da_dq
    rhs[:nv, nv:2 * nv] = -dtau_dv
    rhs[nv:, nv:2 * nv] = -da_dv
    rhs[:nv, 2 * nv:] = np.eye(nv)
    x = np.linalg.solve(K, rhs)
    dv, lam = x[:nv], -x[nv:]
    return (dv[:, :nv], dv[:, nv:2 * nv], dv[:, 2 * nv:],
            lam[:, :nv], lam[:, nv:2 * nv], lam[:, 2 * nv:])
