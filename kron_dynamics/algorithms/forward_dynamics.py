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

"""Forward dynamics q'' = M^-1 (tau - C*(q' kron q') - G), refusing a singular M."""

import numpy as np

from ..errors import SingularMassMatrixError


def solve_mass_matrix(M: np.ndarray, rhs: np.ndarray, joint_names: list[str],
                      rcond: float = 1e-12) -> np.ndarray:
    """
    Solve M x = rhs by Cholesky; raise SingularMassMatrixError naming joints if M is singular.

    M counts as singular when its smallest eigenvalue is below ``rcond`` times the largest
    (or not positive); the joints named are those that carry the null space.
    """
    if not np.all(np.isfinite(M)):
        raise SingularMassMatrixError('mass matrix has non-finite entries', [])
    try:
        L = np.linalg.cholesky(M)
        d = np.diag(L)
        if d.min() ** 2 > rcond * d.max() ** 2 * len(d):   # cheap, conservative test
            return np.linalg.solve(L.T, np.linalg.solve(L, rhs))
    except np.linalg.LinAlgError:
        pass
    evals, evecs = np.linalg.eigh(M)
    scale = max(float(np.max(np.abs(evals))), np.finfo(float).tiny)
    if evals[0] <= rcond * scale:
        weak = evecs[:, evals <= rcond * scale]
        culprits = [joint_names[i] for i in np.nonzero(np.max(np.abs(weak), axis=1) > 0.1)[0]]
        raise SingularMassMatrixError(
            'mass matrix is singular (smallest eigenvalue %.3g, largest %.3g); '
            'no inertia moves joint(s) %s: add armature or fix the inertias'
            % (evals[0], evals[-1], ', '.join(culprits)), culprits)
    return np.linalg.solve(M, rhs)
