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
Operational-space (task-space) inertia Lambda = (J M^-1 J^T)^-1 of a link or point.

Lambda maps a task-space acceleration to the force that produces it (Khatib). It exists
only where J M^-1 J^T is invertible: at a kinematic singularity, or when fewer joints than
task directions move the link, it is singular and Lambda is refused with
SingularJacobianError (or use damping: (J M^-1 J^T + damping^2 E)^-1).
"""

import numpy as np

from ..errors import SingularJacobianError
from .forward_dynamics import solve_mass_matrix

# J M^-1 J^T counts as singular when its smallest eigenvalue is below RCOND times its
# largest: Lambda's largest entries are then beyond 1/RCOND times its smallest (a task
# direction the joints can barely move in).
RCOND = 1e-8


def operational_space_inertia(J: np.ndarray, M: np.ndarray, joint_names: list[str],
                              damping: float = 0.0, what: str = 'J M^-1 J^T',
                              rcond: float = RCOND) -> np.ndarray:
    """
    Return (J M^-1 J^T + damping^2 E)^-1 for a task Jacobian J (m x n) and M (n x n).

    SingularMassMatrixError if M is singular; SingularJacobianError (naming ``what`` and the
    condition number) if the task-space matrix is singular or nearly so (cond > 1/rcond).
    """
    X = solve_mass_matrix(M, J.T, joint_names)        # M^-1 J^T
    A = J @ X
    A = 0.5 * (A + A.T) + damping ** 2 * np.eye(len(A))
    if A.size == 0:
        return A
    evals = np.linalg.eigvalsh(A)
    largest = float(evals[-1])
    if not largest > 0.0 or evals[0] <= rcond * largest:
        cond = largest / evals[0] if evals[0] > 0.0 and largest > 0.0 else np.inf
        raise SingularJacobianError(
            f'{what} is singular (smallest eigenvalue {evals[0]:.3g}, largest {largest:.3g}, '
            f'condition number {cond:.3g} > {1 / rcond:.3g}): a kinematic singularity, or '
            'fewer joints than task directions move the link; use fewer task rows (part='
            "'linear' or 'angular'), move away from the singularity or pass damping > 0", cond)
    return np.linalg.inv(A)
