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
Newton-Euler of a tree on a free-flying base in quasi-velocities (002; 004 appendix B).

The base body (the root link and everything welded to it) moves with the twist
v_b = (v, w): the velocity of its origin and its angular velocity, both in base-frame
coordinates. Its acceleration is the time derivative of those coordinates, v_b' = (v', w'),
so the classical acceleration of the base origin is v' + w x v. The outward pass of the
fixed-base RNEA starts from that motion instead of rest, with gravity R^T g in the base
frame; the inward pass ends at the base, whose wrench (force; moment about its origin, base
frame) are the first six generalized forces. M is assembled column by column from the same
pass (v = 0, no gravity, one unit acceleration), the bias h(q, v) with v' = 0.
"""

import numpy as np

from ..model.tree import KinematicTree
from .rnea import body_motion, body_wrenches, inward_pass, rigid_body_wrench


def base_acceleration(v, dv, gravity_base):
    """Return (w, w', a - g) of the base frame: a = v' + w x v, its origin's classical one."""
    return v[3:6], dv[3:6], dv[:3] + np.cross(v[3:6], v[:3]) - gravity_base


def rnea_floating(tree: KinematicTree, root_inertia, q, v, dv, gravity_base,
                  f_ext=None) -> np.ndarray:
    """
    Return tau = M(q) v' + h(q, v) (6 + n): base wrench (force; moment), joint forces.

    ``q``, the joint coordinates (tree order); ``v`` = (v_b, q'), ``dv`` = (v_b', q'');
    ``gravity_base``: gravity in base-frame coordinates; ``root_inertia`` = (mass, centre of
    mass, central inertia) of the base body in its frame; ``f_ext`` (n + 1, 6): per body
    (the base last) a force and a moment about its origin, body frame, applied to it.
    """
    n = tree.n
    wb, dwb, ab = base_acceleration(v, dv, gravity_base)
    Rs, ps, w, dw, a = body_motion(tree, q, v[6:], dv[6:], wb, dwb, ab)
    f, m = body_wrenches(tree, w, dw, a, None if f_ext is None else f_ext[:n])
    tau_joints, f0, m0 = inward_pass(tree, Rs, ps, f, m)
    fb, mb = rigid_body_wrench(*root_inertia, wb, dwb, ab)
    if f_ext is not None:
        fb, mb = fb - f_ext[n, :3], mb - f_ext[n, 3:]
    return np.concatenate([fb + f0, mb + m0, tau_joints])


def mass_matrix_floating(tree: KinematicTree, root_inertia, q) -> np.ndarray:
    """Return M(q) (6 + n square): column k is tau for the unit acceleration e_k at rest."""
    nv = 6 + tree.n
    zero, g0 = np.zeros(nv), np.zeros(3)
    M = np.empty((nv, nv))
    for k in range(nv):
        M[:, k] = rnea_floating(tree, root_inertia, q, zero, np.eye(nv)[k], g0)
    return 0.5 * (M + M.T)
