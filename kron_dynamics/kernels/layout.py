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
from Python unboxes few arguments: ``ints`` (n, 4) and ``reals`` (n + 1, 29), one row per
body in the tree's internal order (parents first). Joint vectors go in and come out of the
kernels in the user's joint order; the permutation columns map between the two.
"""

import numpy as np

from ..model.tree import KinematicTree

# columns of the packed real array, one row per body; row n holds gravity in columns 0:3
AX, R0, P0, MASS, COM, INER, ARM = 0, 3, 12, 15, 16, 19, 28
NREAL = 29
# columns of the packed integer array: parent, revolute (0/1), internal index of user joint,
# user index of internal joint
PARENT, REVOLUTE, PERM, INV = 0, 1, 2, 3

# Newton-Euler modes: what the pass includes
ID, GRAVITY, CORIOLIS, BIAS = 0, 1, 2, 3


def pack(tree: KinematicTree, perm: np.ndarray, armature_user: np.ndarray):
    """Pack a tree into (ints (n, 4) int64, reals (n + 1, 29) float64) for the kernels."""
    n = tree.n
    ints = np.zeros((n, 4), dtype=np.int64)
    ints[:, PARENT] = tree.parent
    ints[:, REVOLUTE] = np.asarray(tree.revolute, dtype=bool)
    ints[:, PERM] = perm
    ints[perm, INV] = np.arange(n)
    reals = np.zeros((n + 1, NREAL))
    reals[:n, AX:AX + 3] = tree.axis
    reals[:n, R0:R0 + 9] = np.asarray(tree.R0).reshape(n, 9)
    reals[:n, P0:P0 + 3] = tree.p0
    reals[:n, MASS] = tree.mass
    reals[:n, COM:COM + 3] = tree.com
    reals[:n, INER:INER + 9] = np.asarray(tree.inertia).reshape(n, 9)
    reals[perm, ARM] = armature_user
    reals[n, 0:3] = tree.gravity
    return np.ascontiguousarray(ints), np.ascontiguousarray(reals)
