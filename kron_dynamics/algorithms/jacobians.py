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
Translational and rotational Jacobians and Hessians (seed 000, sections 3.1 and 3.2).

``jacobian_t`` / ``jacobian_r`` give J_T = d r / d q (000 eq. 29) and J_R with
omega = J_R q' (000 eq. 37) in the root frame (a). ``hessian_t`` / ``hessian_r`` are
Khang's derivatives H = dJ/dq (000 eqs. 5, 51, 60), 3 x n^2 with
``H[:, s*n + k] = dJ[:, s]/dq_k``, so that the acceleration is J q'' + H (q' kron q').

The body-frame forms, for a frame (b) with orientation A = A_b^(a): J^(b) = A^T J^(a)
(eqs. 31, 42, 48), its Khang derivative H^(b) = dJ^(b)/dq (eqs. 53, 61) from eq. (57), and
the starred Hessian H*^(b) = A^T H^(a) (eq. 58), which gives the acceleration in (b),
a^(b) = J^(b) q'' + H*^(b) (q' kron q') (eq. 59), where H^(b) gives d/dt (v^(b)) instead
(eqs. 54, 55). The time derivative of any of them is J' = H (E_n kron q') (eq. 8).
``jacobian_world`` is Pinocchio's WORLD convention (not in the paper): the linear rows are
the velocity of the body point at the root origin, J_T + x~ J_R.
"""

import numpy as np

from ..model.rotations import skew
from ..model.tree import KinematicTree


def jacobian_t(tree: KinematicTree, body: int, x: np.ndarray, axes: np.ndarray,
               p: np.ndarray) -> np.ndarray:
    """J_T (000 eq. 29): 3 x n Jacobian of the root-frame point x fixed on body."""
    n = tree.n
    J = np.zeros((3, n))
    if body < 0:
        return J
    sup = tree.support[body]
    rev = sup & tree.revolute
    pri = sup & ~tree.revolute
    J[:, rev] = np.cross(axes[rev], x - p[rev]).T
    J[:, pri] = axes[pri].T
    return J


def jacobian_r(tree: KinematicTree, body: int, axes: np.ndarray) -> np.ndarray:
    """J_R (000 eq. 37): 3 x n rotational Jacobian of body in the root frame."""
    J = np.zeros((3, tree.n))
    if body < 0:
        return J
    rev = tree.support[body] & tree.revolute
    J[:, rev] = axes[rev].T
    return J


def _ancestor_masks(tree: KinematicTree, body: int):
    """Masks (s, k) on the path to body: k a proper ancestor of s; k = s or below s."""
    sup = tree.support[body]
    on_path = np.outer(sup, sup)
    k_above_s = tree.support & ~np.eye(tree.n, dtype=bool) & on_path
    return k_above_s, on_path & ~k_above_s


def hessian_t(tree: KinematicTree, body: int, JT: np.ndarray, axes: np.ndarray) -> np.ndarray:
    """
    H_T (000 eq. 51): 3 x n^2 Hessian of the point whose Jacobian is JT.

    For s, k on the path to the body: if joint k is a proper ancestor of s (and revolute),
    dJ_s/dq_k = a_k x J_s (the whole sub-chain rotates); otherwise, for revolute s,
    dJ_s/dq_k = a_s x J_k (the point moves); all other entries are zero.
    """
    n = tree.n
    if body < 0:
        return np.zeros((3, n * n))
    above, below = _ancestor_masks(tree, body)
    rev = tree.revolute
    a_k_x_J_s = np.cross(axes[None, :, :], JT.T[:, None, :])
    a_s_x_J_k = np.cross(axes[:, None, :], JT.T[None, :, :])
    H = (np.where((above & rev[None, :])[:, :, None], a_k_x_J_s, 0.0)
         + np.where((below & rev[:, None])[:, :, None], a_s_x_J_k, 0.0))
    return H.transpose(2, 0, 1).reshape(3, n * n)


def hessian_r(tree: KinematicTree, body: int, axes: np.ndarray) -> np.ndarray:
    """H_R (000 eq. 60): 3 x n^2, dJ_R[:, s]/dq_k = a_k x a_s for revolute k above revolute s."""
    n = tree.n
    if body < 0:
        return np.zeros((3, n * n))
    above, _ = _ancestor_masks(tree, body)
    rev = tree.revolute
    mask = above & rev[None, :] & rev[:, None]
    a_k_x_a_s = np.cross(axes[None, :, :], axes[:, None, :])
    H = np.where(mask[:, :, None], a_k_x_a_s, 0.0)
    return H.transpose(2, 0, 1).reshape(3, n * n)


def block_skew(A: np.ndarray) -> np.ndarray:
    """
    Return the 3 x 3m block skew-symmetric matrix of a 3 x m matrix A (000 eq. 16).

    Its product with (x kron E_m) is -x~ A (eq. 18); with (X kron E_m), X 3 x m, column
    (s, k) is A[:, k] x X[:, s].
    """
    a1, a2, a3 = A
    z = np.zeros_like(a1)
    return np.block([[z, -a3, a2], [a3, z, -a1], [-a2, a1, z]]).reshape(3, -1)


def khang_derivative_of_rotation(A: np.ndarray, JR: np.ndarray) -> np.ndarray:
    """
    dA/dq (000 eq. 5), 3 x 3n, of a rotation A whose angular velocity (root frame) is JR q'.

    Block i is d(a_i)/dq for the column a_i of A; its column k is JR[:, k] x a_i.
    """
    return np.hstack([np.cross(JR.T, A[:, i]).T for i in range(3)])


def jacobian_local(J: np.ndarray, A: np.ndarray) -> np.ndarray:
    """J^(b) = A_a^(b) J^(a) = A^T J (000 eqs. 31, 42, 48), for J_T, J_R or J_TG."""
    return A.T @ J


def hessian_local(H: np.ndarray, J: np.ndarray, JR: np.ndarray, A: np.ndarray) -> np.ndarray:
    """
    H^(b) = dJ^(b)/dq (000 eqs. 53, 61) from H^(a) = dJ^(a)/dq by eq. (57).

    Eq. (57), H^(a) = A H^(b) + dA/dq (J^(b) kron E_n), solved for H^(b); JR is the
    rotational Jacobian (root frame) of frame (b) and J the root-frame Jacobian that H
    differentiates.
    """
    n = J.shape[1]
    Jb = jacobian_local(J, A)
    return A.T @ (H - khang_derivative_of_rotation(A, JR) @ np.kron(Jb, np.eye(n)))


def hessian_star(H: np.ndarray, A: np.ndarray) -> np.ndarray:
    """Return the starred Hessian H*^(b) = A_a^(b) H^(a) = A^T H (000 eq. 58)."""
    return A.T @ H


def jacobian_derivative(H: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """J'(q, q') = dJ/dq (E_n kron q') (000 eq. 8), from Khang's derivative H of J."""
    return H @ np.kron(np.eye(len(qd)), qd[:, None])


def acceleration(J: np.ndarray, H: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
    """J q'' + H (q' kron q') (000 eqs. 52, 59, 62, 66)."""
    return J @ qdd + H @ np.kron(qd, qd)


def jacobian_world(JT: np.ndarray, JR: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Pinocchio's WORLD 6 x n Jacobian of a body carrying the point x: (J_T + x~ J_R, J_R)."""
    return np.vstack([JT + skew(x) @ JR, JR])
