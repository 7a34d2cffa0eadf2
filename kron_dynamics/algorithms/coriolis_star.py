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

"""The velocity-free Coriolis matrix C*(q) of seed 000, eq. (101), from Jacobians and Hessians."""

import numpy as np

from ..model.rotations import skew
from ..model.tree import KinematicTree
from .jacobians import hessian_r, hessian_t
from .mass_matrix_jacobian import body_jacobians


def mass_matrix_derivative(tree: KinematicTree, q: np.ndarray) -> np.ndarray:
    """
    dM/dq as an (n, n, n) array dM[i, j, k] = dM_ij/dq_k, analytically from 000 eq. (95).

    Differentiating M = sum m J_TG^T J_TG + J_R^T I_G J_R with dJ/dq_k from the Hessians
    (000 eqs. 51, 60) and dI_G/dq_k = [w_k]x I_G - I_G [w_k]x, w_k = J_R[:, k].
    """
    n = tree.n
    dM = np.zeros((n, n, n))
    for i, JT, JR, IG, axes in body_jacobians(tree, q):
        HT = hessian_t(tree, i, JT, axes).reshape(3, n, n)
        HR = hessian_r(tree, i, axes).reshape(3, n, n)
        t = tree.mass[i] * np.einsum('xik,xj->ijk', HT, JT)
        r = np.einsum('xik,xy,yj->ijk', HR, IG, JR)
        S = np.array([skew(w) for w in JR.T])
        dI = S @ IG - IG @ S
        dM += t + t.transpose(1, 0, 2) + r + r.transpose(1, 0, 2)
        dM += np.einsum('xi,kxy,yj->ijk', JR, dI, JR)
    return dM


def coriolis_star(tree: KinematicTree, q: np.ndarray) -> np.ndarray:
    """C*(q) (000 eq. 101): n x n^2, C*[i, j*n + k] = dM_ij/dq_k - 1/2 dM_kj/dq_i."""
    n = tree.n
    dM = mass_matrix_derivative(tree, q)
    return (dM - 0.5 * dM.transpose(2, 1, 0)).reshape(n, n * n)


def christoffel(tree: KinematicTree, q: np.ndarray) -> np.ndarray:
    """Christoffel symbols of the first kind, the (j, k) symmetrisation of C*, n x n^2."""
    n = tree.n
    C = coriolis_star(tree, q).reshape(n, n, n)
    return (0.5 * (C + C.transpose(0, 2, 1))).reshape(n, n * n)


def coriolis_matrix(tree: KinematicTree, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Return the n x n Coriolis matrix sum_k Gamma[:, :, k] q'_k; M' - 2C is skew."""
    n = tree.n
    return christoffel(tree, q).reshape(n, n, n) @ qd
