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
Forward dynamics q'' = M^-1 (tau - C*(q)(q' kron q') - G(q)), refusing a singular M.

M by the composite-rigid-body algorithm, the bias by Newton-Euler with q'' = 0 (002); the
solve is a Cholesky factorisation with a guaranteed conditioning test (scipy.linalg).
"""

import numpy as np

from ..errors import SingularMassMatrixError
from ..model.tree import KinematicTree
from .crba import crba
from .rnea import rnea


def forward_dynamics(tree: KinematicTree, q: np.ndarray, qd: np.ndarray, tau: np.ndarray,
                     joint_names=None) -> np.ndarray:
    """Return q'' (internal order); SingularMassMatrixError naming the joints if M is singular."""
    names = list(joint_names) if joint_names is not None else [str(i) for i in range(tree.n)]
    bias = rnea(tree, q, qd, np.zeros(tree.n))
    return solve_mass_matrix(crba(tree, q), tau - bias, names)


def solve_mass_matrix(M: np.ndarray, rhs: np.ndarray, joint_names: list[str],
                      rcond: float = 1e-12) -> np.ndarray:
    """
    Solve M x = rhs by Cholesky; raise SingularMassMatrixError naming joints if M is singular.

    M counts as singular when its smallest eigenvalue is below ``rcond`` times the largest
    (or not positive): cond(M) > 1/rcond, so x would carry fewer than about 4 correct
    digits. The joints named are those that carry the null space.
    """
    if not np.all(np.isfinite(M)):
        raise SingularMassMatrixError('mass matrix has non-finite entries', [])
    if M.shape == (0, 0):
        return np.zeros(0)
    # here, not at the top: scipy.linalg takes 0.4 s to import, and only this path needs it
    from scipy.linalg import cho_factor, cho_solve, eigh, LinAlgError, solve_triangular
    try:
        factor = cho_factor(M, lower=True, check_finite=False)
        with np.errstate(all='ignore'):    # inf or NaN just fail the test below
            L_inv = solve_triangular(factor[0], np.eye(len(M)), lower=True,
                                     check_finite=False)
            inv_norm = float(np.sum(np.tril(L_inv) ** 2))
        # cheap test that never accepts a singular M: lambda_min(M) >= 1 / ||L^-1||_F^2 and
        # lambda_max(M) <= trace(M). (Cholesky pivots alone are no such bound: a boom on a
        # rail gives pivots 1e-4 apart for cond(M) = 1e16.)
        if inv_norm * rcond * np.trace(M) < 1.0:
            return cho_solve(factor, rhs, check_finite=False)
    except LinAlgError:
        pass
    evals, evecs = eigh(M)
    scale = max(float(np.max(np.abs(evals))), np.finfo(float).tiny)
    if evals[0] <= rcond * scale:
        # The joints taking part in the null motions. Units differ (a rail travel of 1 m and
        # a slew of 1e-3 rad can cancel), so weigh each joint's share |v_i| by sqrt(M_ii):
        # both are then in sqrt(energy) units.
        weight = np.sqrt(np.maximum(np.diag(M), 0.0) + np.finfo(float).eps * scale)
        share = (np.abs(evecs[:, evals <= rcond * scale]) * weight[:, None]).max(axis=1)
        culprits = [joint_names[i] for i in np.nonzero(share > 0.1 * share.max())[0]]
        raise SingularMassMatrixError(
            'mass matrix is singular (smallest eigenvalue %.3g, largest %.3g); '
            'a motion of joint(s) %s moves (almost) no inertia: add armature or fix the '
            'inertias' % (evals[0], evals[-1], ', '.join(culprits)), culprits)
    return np.linalg.solve(M, rhs)
