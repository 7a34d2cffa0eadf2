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

"""Inertia of the model's bodies: physical checks, merging welded parts, diagnostics."""

import logging
import math

import numpy as np

from ..errors import ModelError
from .rotations import skew
from .tree import KinematicTree

logger = logging.getLogger('kron_dynamics')

# Relative tolerance for the inertia checks (positive semidefinite, triangle inequality).
INERTIA_TOL = 1e-9
# Warn when the inertia a joint moves at q = 0 (the joints below it free) is below this
# fraction of the largest diagonal entry of M(0): cond(M) is then at least its inverse, so
# forward dynamics loses that many digits (and refuses M as singular beyond 1e12).
TINY_INERTIA_RATIO = 1e-8
MAX_TINY_WARNINGS = 5


def check_inertia(tensor: np.ndarray, where: str) -> None:
    """Raise ModelError unless tensor is a physical inertia tensor (symmetric, PSD, triangle)."""
    tensor = np.asarray(tensor, dtype=float)
    if tensor.shape != (3, 3) or not np.all(np.isfinite(tensor)):
        raise ModelError(f'{where}: inertia must be a finite 3 x 3 matrix')
    scale = max(float(np.max(np.abs(tensor))), 1e-300)
    if np.max(np.abs(tensor - tensor.T)) > INERTIA_TOL * scale:
        raise ModelError(f'{where}: inertia tensor is not symmetric')
    ev = np.linalg.eigvalsh(tensor)
    if ev[0] < -INERTIA_TOL * scale:
        raise ModelError(
            f'{where}: inertia tensor is not positive semidefinite (principal moments '
            f'{ev[0]:.6g}, {ev[1]:.6g}, {ev[2]:.6g})')
    if ev[2] > ev[0] + ev[1] + INERTIA_TOL * scale:
        raise ModelError(
            f'{where}: principal moments {ev[0]:.6g}, {ev[1]:.6g}, {ev[2]:.6g} violate the '
            'triangle inequality (largest > sum of the other two)')


def merge_inertias(parts):
    """Combine (mass, com, central inertia) parts in one frame into a single rigid body."""
    if not parts:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    m = sum(p[0] for p in parts)
    c = sum(p[0] * p[1] for p in parts) / m if m > 0 else np.zeros(3)
    inertia_ = np.zeros((3, 3))
    for mi, ci, Ii in parts:
        d = ci - c
        inertia_ += Ii + mi * (d @ d * np.eye(3) - np.outer(d, d))
    return float(m), c, inertia_


def warn_unusual(tree: KinematicTree, joint_names, frames, source):
    massless = set()
    for i in range(tree.n):
        sub = tree.subtree(i)
        if tree.mass[sub].sum() == 0.0 and not np.any(tree.inertia[sub]):
            massless.add(i)
            logger.warning("%s: joint '%s' moves no mass or inertia: M is singular",
                           source, joint_names[i])
    if not tree.n:
        return
    D, diag = joint_inertias_at_zero(tree)
    largest = float(diag.max())
    tiny = [i for i in np.argsort(D, kind='stable')
            if D[i] < TINY_INERTIA_RATIO * largest and i not in massless]
    if len(tiny) > MAX_TINY_WARNINGS:
        logger.warning('%s: %d joints move a tiny inertia (below %.3g times the largest '
                       'diagonal entry of M, %.3g): M is nearly singular; the %d smallest '
                       'follow',
                       source, len(tiny), TINY_INERTIA_RATIO, largest, MAX_TINY_WARNINGS)
    body_links = {}
    for name, frame in frames.items():
        body_links.setdefault(frame[0], []).append(f"'{name}'")
    for i in tiny[:MAX_TINY_WARNINGS]:
        links = ', '.join(body_links[i])
        ratio = largest / float(D[i]) if D[i] > 0 else math.inf     # Python floats: no warning
        state = f'nearly singular (cond(M) >= {ratio:.3g})' if D[i] > 0 else 'singular'
        logger.warning(
            "%s: joint '%s' (link %s) moves a tiny inertia: %.3g at q = 0 with the joints "
            'below it free, %.3g times the largest diagonal entry of M (%.3g): M is %s, so '
            'forward dynamics is inaccurate or refused; check the inertias or add armature',
            source, joint_names[i], links, D[i], D[i] / largest, largest, state)


def joint_inertias_at_zero(tree: KinematicTree):
    """
    Return (D, diag): per joint, the articulated and the composite inertia it moves at q = 0.

    ``diag`` is the diagonal of M(0) (composite rigid bodies); ``D[i]`` is the inertia felt
    at joint i with its parent held and the joints below it free (the pivots of the
    articulated-body algorithm). lambda_min(M) <= D[i] <= M[i, i], so a tiny D[i] means a
    nearly singular M even when the diagonal looks fine. O(n), spatial 6 x 6 algebra in
    body coordinates (angular part first).
    """
    n = tree.n
    IA = np.zeros((n, 6, 6))
    for i in range(n):
        m, C = float(tree.mass[i]), skew(tree.com[i])
        IA[i] = np.block([[tree.inertia[i] + m * C @ C.T, m * C], [m * C.T, m * np.eye(3)]])
    IC = IA.copy()
    D, diag = np.zeros(n), np.zeros(n)
    for i in range(n - 1, -1, -1):      # children come after their parents
        S = np.zeros(6)
        S[slice(0, 3) if tree.revolute[i] else slice(3, 6)] = tree.axis[i]
        U = IA[i] @ S
        D[i] = S @ U
        diag[i] = S @ IC[i] @ S
        p = int(tree.parent[i])
        if p < 0:
            continue
        E = tree.R0[i].T            # parent -> body i motion transform at q = 0
        X = np.block([[E, np.zeros((3, 3))], [-E @ skew(tree.p0[i]), E]])
        Ia = IA[i] - np.outer(U, U) / D[i] if D[i] > 0 else IA[i]
        IA[p] += X.T @ Ia @ X
        IC[p] += X.T @ IC[i] @ X
    return D, diag
