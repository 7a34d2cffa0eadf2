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
The packed model the compiled kernels read, and the constants of its layout (no numba here).

A :class:`~kron_dynamics.model.tree.KinematicTree` is packed into two arrays so that a call
from Python unboxes few arguments: ``ints`` (n, 5) and ``reals`` (n + 1, 29), one row per
body in the tree's internal order (parents first). Joint vectors go in and come out of the
kernels in the user's joint order; the permutation columns map between the two.
"""

import numpy as np

from ..model.tree import KinematicTree

# columns of the packed real array, one row per body; row n is the fixed root: gravity in
# columns 0:3, the mass welded to it and its centre of mass in MASS and COM
AX, R0, P0, MASS, COM, INER, ARM = 0, 3, 12, 15, 16, 19, 28
NREAL = 29
# columns of the packed integer array: parent, revolute (0/1), internal index of user joint,
# user index of internal joint, coordinate axis of the joint (kinematics.joint's fast path:
# +-1, +-2, +-3 for an axis along +-x, +-y, +-z; 0 for any other direction)
PARENT, REVOLUTE, PERM, INV, AXIS = 0, 1, 2, 3, 4
NINT = 5

# Newton-Euler modes: what the pass includes
ID, GRAVITY, CORIOLIS, BIAS = 0, 1, 2, 3

# reference frames of a 6 x n Jacobian (Pinocchio's ReferenceFrame): WORLD spatial (linear
# part: velocity of the body point at the root origin), LOCAL (the link's axes),
# LOCAL_WORLD_ALIGNED (the point's velocity and the angular velocity in root axes)
WORLD, LOCAL, LOCAL_WORLD_ALIGNED = 0, 1, 2
# columns of the packed site array, one row per link: the body that carries it (as a float,
# -1 for the root), then the link frame in that body's frame (R row-major, p)
SITE_BODY, SITE_R, SITE_P = 0, 1, 10
NSITE = 13


def pack(tree: KinematicTree, perm: np.ndarray, armature_user: np.ndarray,
         root_mass: float = 0.0, root_com=(0.0, 0.0, 0.0)):
    """Pack a tree into (ints (n, 5) int64, reals (n + 1, 29) float64) for the kernels."""
    n = tree.n
    ints = np.zeros((n, NINT), dtype=np.int64)
    ints[:, PARENT] = tree.parent
    ints[:, REVOLUTE] = np.asarray(tree.revolute, dtype=bool)
    ints[:, PERM] = perm
    ints[perm, INV] = np.arange(n)
    for i, axis in enumerate(np.asarray(tree.axis)):
        nonzero = np.flatnonzero(axis)
        if len(nonzero) == 1 and abs(axis[nonzero[0]]) == 1.0:
            ints[i, AXIS] = (nonzero[0] + 1) * int(np.sign(axis[nonzero[0]]))
    reals = np.zeros((n + 1, NREAL))
    reals[:n, AX:AX + 3] = tree.axis
    reals[:n, R0:R0 + 9] = np.asarray(tree.R0).reshape(n, 9)
    reals[:n, P0:P0 + 3] = tree.p0
    reals[:n, MASS] = tree.mass
    reals[:n, COM:COM + 3] = tree.com
    reals[:n, INER:INER + 9] = np.asarray(tree.inertia).reshape(n, 9)
    reals[perm, ARM] = armature_user
    reals[n, 0:3] = tree.gravity
    reals[n, MASS] = root_mass
    reals[n, COM:COM + 3] = root_com
    return np.ascontiguousarray(ints), np.ascontiguousarray(reals)


def pack_sites(frames) -> np.ndarray:
    """
    Pack link frames {link: (body, R, p)} into a (L, 13) float64 array, one row per link.

    Row k holds the body index (exact as a float) and the link frame in that body's frame;
    the kernels take the array and a row index, so a call unboxes one array for any link.
    """
    sites = np.zeros((len(frames), NSITE))
    for k, (body, R, p) in enumerate(frames.values()):
        sites[k, SITE_BODY] = body
        sites[k, SITE_R:SITE_R + 9] = np.asarray(R, dtype=float).reshape(9)
        sites[k, SITE_P:SITE_P + 3] = p
    return np.ascontiguousarray(sites)
