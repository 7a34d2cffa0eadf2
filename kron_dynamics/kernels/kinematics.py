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
dM/dq, centre of mass). :func:`path_frames` does the same step for one body and its
ancestors only (the Hessians and velocity terms of a link need no other frame), and
:func:`to_root` applies it from a body up to the root to one frame (poses and Jacobians:
no work array).
"""

import numba
import numpy as np

from .algebra import add, chunks, get3, get9, inline, jit, mm, mv, pjit, set3, set9
from .layout import AX, AXIS, INV, P0, PARENT, PERM, R0, REVOLUTE, SITE_BODY, SITE_P, SITE_R

# the frame block at the start of every work array
FR, FP = 0, 9
# work array of the pose kernels: frame block, q
KQ = 12
NK = 13


@jit
def _turn(R, c, s, k):
    """R times the rotation by (cos, sin) = (c, s) about coordinate axis k (1 x, 2 y, 3 z)."""
    if k == 3:      # columns 0, 1 turn
        return (c * R[0] + s * R[1], c * R[1] - s * R[0], R[2],
                c * R[3] + s * R[4], c * R[4] - s * R[3], R[5],
                c * R[6] + s * R[7], c * R[7] - s * R[6], R[8])
    if k == 2:      # columns 2, 0 turn
        return (c * R[0] - s * R[2], R[1], c * R[2] + s * R[0],
                c * R[3] - s * R[5], R[4], c * R[5] + s * R[3],
                c * R[6] - s * R[8], R[7], c * R[8] + s * R[6])
    return (R[0], c * R[1] + s * R[2], c * R[2] - s * R[1],     # x: columns 1, 2 turn
            R[3], c * R[4] + s * R[5], c * R[5] - s * R[4],
            R[6], c * R[7] + s * R[8], c * R[8] - s * R[7])


@inline
def joint(ints, reals, i, qi):
    """(R, p) of body i in its parent's frame at joint coordinate qi; R a row-major 9-tuple."""
    Rz = get9(reals, i, R0)
    pz = get3(reals, i, P0)
    x, y, z = reals[i, AX], reals[i, AX + 1], reals[i, AX + 2]
    if ints[i, REVOLUTE]:
        c, s = np.cos(qi), np.sin(qi)
        k = ints[i, AXIS]
        if k != 0:      # a coordinate axis (most URDFs): R0 Rq by turning two columns
            return (_turn(Rz, c, s, k) if k > 0 else _turn(Rz, c, -s, -k)), pz
        t = 1.0 - c
        Rq = (t * x * x + c, t * x * y - s * z, t * x * z + s * y,
              t * x * y + s * z, t * y * y + c, t * y * z - s * x,
              t * x * z - s * y, t * y * z + s * x, t * z * z + c)
        return mm(Rz, Rq), pz
    return Rz, add(pz, mv(Rz, (x * qi, y * qi, z * qi)))


@inline
def body_frame(ints, reals, wk, qcol, i, world):
    """Frame of body i into wk[i, 0:12]; in the root frame, its parent's must be there first."""
    R, p = joint(ints, reals, i, wk[i, qcol])
    par = ints[i, PARENT]
    if world and par >= 0:
        Rp = get9(wk, par, FR)
        p = add(get3(wk, par, FP), mv(Rp, p))
        R = mm(Rp, R)
    set9(wk, i, FR, R)
    set3(wk, i, FP, p)


@inline
def compose_frames(ints, local, wk):
    """
    Root-frame body frames into wk[:, 0:12] from parent-relative ones in local[:, 0:12].

    What :func:`frames` (``world``) writes, the same bits, without evaluating the joints
    again where a pass (Newton-Euler's) has just written their parent-relative frames.
    """
    for i in range(ints.shape[0]):
        R, p = get9(local, i, FR), get3(local, i, FP)
        par = ints[i, PARENT]
        if par >= 0:
            Rp = get9(wk, par, FR)
            p = add(get3(wk, par, FP), mv(Rp, p))
            R = mm(Rp, R)
        set9(wk, i, FR, R)
        set3(wk, i, FP, p)


@jit
def frames(ints, reals, wk, qcol, world):
    """
    Body frames into wk[:, 0:12] at the joint coordinates in wk[:, qcol] (internal order).

    Parent-relative if not ``world``; otherwise in the root frame.
    """
    for i in range(ints.shape[0]):
        body_frame(ints, reals, wk, qcol, i, world)


@jit
def support(ints, body, path):
    """Write body and its ancestors into path, root first; return how many (0 for the root)."""
    m = 0
    i = body
    while i >= 0:
        m += 1
        i = ints[i, PARENT]
    i = body
    for k in range(m - 1, -1, -1):
        path[k] = i
        i = ints[i, PARENT]
    return m


@jit
def path_frames(ints, reals, wk, qcol, path, m):
    """Root-frame frames of the bodies path[:m] (a body and its ancestors, root first) only."""
    for k in range(m):
        body_frame(ints, reals, wk, qcol, path[k], True)


@jit
def site_frame(ints, reals, sites, k, point, wk, qcol, path):
    """
    Frames of link k's body and its ancestors from q in wk[:, qcol]; return (m, body, R, x).

    ``sites`` is the packed link table (layout.pack_sites); path[:m] receives the body and its
    ancestors, root first (m = 0 for a link on the root). R is the link's orientation and x
    the root-frame position of ``point`` (3 numbers, link frame) on it.
    """
    body = int(sites[k, SITE_BODY])
    Rs = get9(sites, k, SITE_R)
    local = add(get3(sites, k, SITE_P), mv(Rs, (point[0], point[1], point[2])))
    if body < 0:
        return 0, body, Rs, local
    m = support(ints, body, path)
    path_frames(ints, reals, wk, qcol, path, m)
    Rb = get9(wk, body, FR)
    return m, body, mm(Rb, Rs), add(get3(wk, body, FP), mv(Rb, local))


@inline
def finite(q, n):
    """Return True if q has length n and finite entries."""
    if q.shape[0] != n:
        return False
    for u in range(n):
        if not np.isfinite(q[u]):
            return False
    return True


@inline
def to_root(ints, reals, q, body, R, p):
    """
    Compose (R, p), a frame given in body's frame, with the joints up to the root.

    The same per-joint step as :func:`frames`, applied from the body upward, so that a pose
    needs neither a work array nor the other frames; q in user order.
    """
    i = body
    while i >= 0:
        Rj, pj = joint(ints, reals, i, q[ints[i, INV]])
        R, p = mm(Rj, R), add(pj, mv(Rj, p))
        i = ints[i, PARENT]
    return R, p


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


@inline
def pose4(R, p, out):
    """Write the 4 x 4 homogeneous transform of (R, p) into out."""
    for r in range(3):
        out[r, 0], out[r, 1], out[r, 2] = R[3 * r], R[3 * r + 1], R[3 * r + 2]
        out[r, 3] = p[r]
    out[3, 0], out[3, 1], out[3, 2], out[3, 3] = 0.0, 0.0, 0.0, 1.0


@inline
def _link_pose_row(ints, reals, sites, k, q, out):
    """4 x 4 pose of link k in the root frame into out (its body's ancestors only)."""
    if k < 0 or k >= sites.shape[0] or not finite(q, ints.shape[0]):
        return False
    R, p = to_root(ints, reals, q, int(sites[k, SITE_BODY]), get9(sites, k, SITE_R),
                   get3(sites, k, SITE_P))
    pose4(R, p, out)
    return True


@jit
def _link_poses_row(ints, reals, sites, q, wk, out):
    """4 x 4 poses of every link (sites' rows) in the root frame into out (L, 4, 4)."""
    n = ints.shape[0]
    if not load(ints, q, n, wk, KQ):
        return False
    frames(ints, reals, wk, KQ, True)
    for k in range(sites.shape[0]):
        body = int(sites[k, SITE_BODY])
        R, p = get9(sites, k, SITE_R), get3(sites, k, SITE_P)
        if body >= 0:
            Rb = get9(wk, body, FR)
            R, p = mm(Rb, R), add(get3(wk, body, FP), mv(Rb, p))
        pose4(R, p, out[k])
    return True


@inline
def link_pose(ints, reals, sites, k, q, out):
    """4 x 4 pose of link k (row of sites) in the root frame into out; False on bad input."""
    return _link_pose_row(ints, reals, sites, k, q, out)


@jit
def link_poses(ints, reals, sites, q, out):
    """4 x 4 poses of all links into out (L, 4, 4), one forward pass; False on bad input."""
    return _link_poses_row(ints, reals, sites, q, np.empty((ints.shape[0], NK)), out)


@pjit
def link_pose_batch(ints, reals, sites, k, Q, out):
    """:func:`link_pose` over the rows of Q (N, n) into out (N, 4, 4)."""
    n = ints.shape[0]
    N = Q.shape[0]
    if Q.shape[1] != n:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        for r in range(c * N // K, (c + 1) * N // K):
            if not _link_pose_row(ints, reals, sites, k, Q[r], out[r]):
                ok[c] = False
                break
    return np.all(ok)


@pjit
def link_poses_batch(ints, reals, sites, Q, out):
    """:func:`link_poses` over the rows of Q (N, n) into out (N, L, 4, 4)."""
    n = ints.shape[0]
    N = Q.shape[0]
    if Q.shape[1] != n:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        wk = np.empty((n, NK))
        for r in range(c * N // K, (c + 1) * N // K):
            if not _link_poses_row(ints, reals, sites, Q[r], wk, out[r]):
                ok[c] = False
                break
    return np.all(ok)
