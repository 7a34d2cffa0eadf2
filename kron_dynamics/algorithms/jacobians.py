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
Translational and rotational Jacobians and Hessians (seed 000, section 3).

``jacobian_t`` / ``jacobian_r`` give J_T = d r / d q (000 eq. 29) and J_R with
omega = J_R q' (000 eq. 37) in the root frame. ``hessian_t`` / ``hessian_r`` are
Khang's derivatives H = dJ/dq (000 eqs. 5, 51, 60), 3 x n^2 with
``H[:, s*n + k] = dJ[:, s]/dq_k``, so that the acceleration is J q'' + H (q' kron q').
"""

import numpy as np

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
