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
Forward kinematics, compiled: the one pass every kernel starts from.

Mirrors :mod:`kron_dynamics.algorithms.kinematics`. :func:`frames` writes every body's frame
into columns ``0:12`` of a kernel's work array (rotation row-major in 0:9, origin in 9:12):
relative to its parent (Newton-Euler works in body frames) or in the root frame (CRBA,
dM/dq, Jacobians).
"""

import numpy as np

from .algebra import add, get3, get9, jit, mm, mv, set3, set9
from .layout import AX, P0, PARENT, PERM, R0, REVOLUTE

# the frame block at the start of every work array
FR, FP = 0, 9


@jit
def joint(ints, reals, i, qi):
    """(R, p) of body i in its parent's frame at joint coordinate qi; R a row-major 9-tuple."""
    Rz = get9(reals, i, R0)
    pz = get3(reals, i, P0)
    x, y, z = reals[i, AX], reals[i, AX + 1], reals[i, AX + 2]
    if ints[i, REVOLUTE]:
        c, s = np.cos(qi), np.sin(qi)
        t = 1.0 - c
        Rq = (t * x * x + c, t * x * y - s * z, t * x * z + s * y,
              t * x * y + s * z, t * y * y + c, t * y * z - s * x,
              t * x * z - s * y, t * y * z + s * x, t * z * z + c)
        return mm(Rz, Rq), pz
    return Rz, add(pz, mv(Rz, (x * qi, y * qi, z * qi)))


@jit
def frames(ints, reals, wk, qcol, world):
    """
    Body frames into wk[:, 0:12] at the joint coordinates in wk[:, qcol] (internal order).

    Parent-relative if not ``world``; otherwise in the root frame.
    """
    n = ints.shape[0]
    for i in range(n):
        R, p = joint(ints, reals, i, wk[i, qcol])
        par = ints[i, PARENT]
        if world and par >= 0:
            Rp = get9(wk, par, FR)
            p = add(get3(wk, par, FP), mv(Rp, p))
            R = mm(Rp, R)
        set9(wk, i, FR, R)
        set3(wk, i, FP, p)


@jit
def load(ints, x, n, wk, col):
    """Copy user-order x into column col of wk in internal order; False if not finite."""
    if x.shape[0] != n:
        return False
    for u in range(n):
        v = x[u]
        if not np.isfinite(v):
            return False
        wk[ints[u, PERM], col] = v
    return True


@jit
def to_internal(ints, x, n):
    """Return (ok, x in internal order); ok is False if an entry is not finite."""
    v = np.empty(n)
    for u in range(n):
        if not np.isfinite(x[u]):
            v[0] = np.nan
            return False, v
        v[ints[u, PERM]] = x[u]
    return True, v
