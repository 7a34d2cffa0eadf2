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
from .tree import KinematicTree

logger = logging.getLogger('kron_dynamics')

# Relative tolerance for the inertia checks (positive semidefinite, triangle inequality):
# relative to a tensor's own size for a single tensor (check_inertia), and with an absolute
# floor of INERTIA_TOL times the largest principal moment of the whole model for the links
# of a URDF (check_link_inertias): a violation below it changes no result at all.
INERTIA_TOL = 1e-9
# What check_link_inertias does with a real violation on a moving body
INERTIA_CHECKS = ('error', 'warn')
# Warn when the inertia a joint moves at q = 0 (the joints below it free) is below this
# fraction of the largest diagonal entry of M(0): cond(M) is then at least its inverse, so
# forward dynamics loses that many digits (and refuses M as singular beyond 1e12).
TINY_INERTIA_RATIO = 1e-8
MAX_TINY_WARNINGS = 5
# links named in full in one message; the others are counted
MAX_NAMED_LINKS = 5


def check_inertia(tensor: np.ndarray, where: str) -> None:
    """Raise ModelError unless tensor is a physical inertia tensor (symmetric, PSD, triangle)."""
    tensor = np.asarray(tensor, dtype=float)
    if tensor.shape != (3, 3) or not np.all(np.isfinite(tensor)):
        raise ModelError(f'{where}: inertia must be a finite 3 x 3 matrix')
    scale = max(float(np.max(np.abs(tensor))), 1e-300)
    if np.max(np.abs(tensor - tensor.T)) > INERTIA_TOL * scale:
        raise ModelError(f'{where}: inertia tensor is not symmetric')
    problem = _violation(np.linalg.eigvalsh(tensor), INERTIA_TOL * scale)
    if problem:
        raise ModelError(f'{where}: {problem}')


def _violation(ev, tol) -> str:
    """Say how sorted principal moments ev break physics beyond tol ('' if they do not)."""
    moments = f'{ev[0]:.6g}, {ev[1]:.6g}, {ev[2]:.6g}'
    if ev[0] < -tol:
        return (f'inertia tensor is not positive semidefinite (principal moments {moments}: '
                f'the smallest is {-ev[0]:.3g} below zero, tolerance {tol:.3g})')
    excess = ev[2] - ev[0] - ev[1]
    if excess > tol:
        return (f'principal moments {moments} violate the triangle inequality (largest > '
                f'sum of the other two by {excess:.3g}, {excess / ev[2]:.2%} of the largest; '
                f'tolerance {tol:.3g})')
    return ''


def check_link_inertias(links, tensors, welded_to_root, source: str,
                        inertia_check: str = 'error') -> None:
    """
    Check the inertia tensor of every URDF link (in its own frame) for physical sense.

    The tolerance has an absolute floor: INERTIA_TOL times the largest principal moment of
    the model. Links welded (through fixed joints) to the fixed root change no result: their
    violations are one debug line. A violation on a moving body is a ModelError naming the
    links, the size of the violation and the way out, or with ``inertia_check='warn'`` one
    warning per link (the tensor is then used as written).
    """
    if inertia_check not in INERTIA_CHECKS:
        raise ModelError(f'inertia_check must be one of {INERTIA_CHECKS}, got '
                         f'{inertia_check!r}')
    if not len(links):
        return
    ev = np.linalg.eigvalsh(np.asarray(tensors, dtype=float))
    tol = INERTIA_TOL * max(float(np.max(np.abs(ev))), 1e-300)
    bad = np.nonzero((ev[:, 0] < -tol) | (ev[:, 2] - ev[:, 0] - ev[:, 1] > tol))[0]
    if not len(bad):
        return
    welded = [i for i in bad if welded_to_root[i]]
    moving = [i for i in bad if not welded_to_root[i]]
    if welded:
        logger.debug('%s: non-physical inertia on %d link(s) welded to the fixed root, which '
                     'changes no result: %s', source, len(welded),
                     '; '.join(f"'{links[i]}': {_violation(ev[i], tol)}" for i in welded))
    if not moving:
        return
    if inertia_check == 'warn':
        for i in moving:
            logger.warning("%s: link '%s': %s; used as written (inertia_check='warn')",
                           source, links[i], _violation(ev[i], tol))
        return
    first = moving[0]
    others = [f"'{links[i]}'" for i in moving[1:]]
    more = ''
    if others:
        named = ', '.join(others[:MAX_NAMED_LINKS])
        extra = len(others) - MAX_NAMED_LINKS
        more = (f'; {len(others)} more link(s) also fail: {named}'
                + (f' and {extra} more' if extra > 0 else ''))
    raise ModelError(
        f"{source}: link '{links[first]}': {_violation(ev[first], tol)}{more}. No rigid body "
        'has such an inertia; to load the model as written, with one warning per link, use '
        "RobotModel.from_urdf_file(..., inertia_check='warn') (parameter inertia_check of "
        'the nodes)')


def merge_inertias(parts):
    """Combine (mass, com, central inertia) parts in one frame into a single rigid body."""
    if not parts:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    if len(parts) == 1:
        return float(parts[0][0]), parts[0][1], parts[0][2]
    masses = np.array([p[0] for p in parts], dtype=float)
    coms = np.array([p[1] for p in parts], dtype=float)
    m = float(masses.sum())
    c = masses @ coms / m if m > 0 else np.zeros(3)
    d = coms - c                        # parallel axis theorem, all parts at once
    md = d * masses[:, None]
    inertia_ = sum(p[2] for p in parts) + float(np.sum(md * d)) * np.eye(3) - md.T @ d
    return m, c, inertia_


def warn_unusual(tree: KinematicTree, joint_names, frames, source, mimic_joints=None,
                 armature=None):
    """
    Warn about joints that move no mass (M singular) or a tiny inertia (M ill-conditioned).

    With ``mimic_joints`` (name -> MimicJoint) the warnings are about the independent
    joints: one moves no mass, or a tiny inertia, only if every joint it drives does.
    ``armature`` (joint name -> rotor inertia, a mapping) is added to what each joint moves
    and to M's diagonal: a joint whose armature makes M regular is not warned about.
    """
    n = tree.n
    if not n:
        return
    moved = tree.mass + np.abs(tree.inertia).reshape(n, 9).sum(axis=1)
    for i in range(n - 1, -1, -1):      # children come after their parents
        p = int(tree.parent[i])
        if p >= 0:
            moved[p] += moved[i]
    arm = np.array([float((armature or {}).get(name, 0.0)) for name in joint_names])
    moved += arm
    D, diag = joint_inertias_at_zero(tree)
    D, diag = D + arm, diag + arm       # a lower bound of the pivot of M + diag(arm)
    largest = float(diag.max())
    index = {name: i for i, name in enumerate(joint_names)}
    groups = {i: [i] for i, name in enumerate(joint_names)
              if not mimic_joints or name not in mimic_joints}
    for mimic in (mimic_joints or {}).values():
        if mimic.multiplier != 0.0:
            groups[index[mimic.primary]].append(index[mimic.name])
    massless = [i for i, group in groups.items() if all(moved[j] == 0.0 for j in group)]
    for i in massless:
        logger.warning("%s: joint '%s' moves no mass or inertia: M is singular",
                       source, joint_names[i])
    massless = set(massless)
    tiny = [i for i in np.argsort(D, kind='stable')
            if i in groups and i not in massless
            and all(D[j] < TINY_INERTIA_RATIO * largest for j in groups[i])]
    if not tiny:
        return
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
        advice = (f'raise its armature ({arm[i]:.3g})' if arm[i] > 0 else 'add armature')
        logger.warning(
            "%s: joint '%s' (link %s) moves a tiny inertia: %.3g at q = 0 with the joints "
            'below it free, %.3g times the largest diagonal entry of M (%.3g): M is %s, so '
            'forward dynamics is inaccurate or refused; check the inertias or %s',
            source, joint_names[i], links, D[i], D[i] / largest, largest, state, advice)


def _skews(v: np.ndarray) -> np.ndarray:
    """Return the cross-product matrices of the rows of v, (k, 3, 3)."""
    S = np.zeros((len(v), 3, 3))
    S[:, 0, 1], S[:, 0, 2], S[:, 1, 2] = -v[:, 2], v[:, 1], -v[:, 0]
    S[:, 1, 0], S[:, 2, 0], S[:, 2, 1] = v[:, 2], -v[:, 1], v[:, 0]
    return S


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
    m = np.asarray(tree.mass, dtype=float)[:, None, None]
    C = _skews(np.asarray(tree.com, dtype=float))
    A = np.zeros((n, 2, 6, 6))      # per body: articulated (0) and composite (1) inertia
    A[:, 0, :3, :3] = tree.inertia + m * (C @ C.transpose(0, 2, 1))
    A[:, 0, :3, 3:] = m * C
    A[:, 0, 3:, :3] = m * C.transpose(0, 2, 1)
    A[:, 0, 3:, 3:] = m * np.eye(3)
    A[:, 1] = A[:, 0]
    E = np.asarray(tree.R0).transpose(0, 2, 1)     # parent -> body motion transforms at q = 0
    X = np.zeros((n, 6, 6))
    X[:, :3, :3] = E
    X[:, 3:, :3] = -E @ _skews(np.asarray(tree.p0, dtype=float))
    X[:, 3:, 3:] = E
    Xt = X.transpose(0, 2, 1)
    S = np.zeros((n, 6))
    revolute = np.asarray(tree.revolute, dtype=bool)
    S[revolute, :3] = tree.axis[revolute]
    S[~revolute, 3:] = tree.axis[~revolute]
    D, diag = np.zeros(n), np.zeros(n)
    parents = tree.parent.tolist()
    for i in range(n - 1, -1, -1):      # children come after their parents
        Ai = A[i]
        U = Ai @ S[i]                   # (2, 6): articulated and composite I S
        D[i], diag[i] = U @ S[i]
        p = parents[i]
        if p < 0:
            continue
        if D[i] > 0:
            Ai = Ai.copy()
            Ai[0] -= np.outer(U[0], U[0] / D[i])
        A[p] += Xt[i] @ Ai @ X[i]
    return D, diag
