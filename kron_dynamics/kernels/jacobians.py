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
Jacobians, their time derivative, Hessians and accelerations of a link or point (000 sec. 3).

Mirrors :mod:`kron_dynamics.algorithms.jacobians`. The kernels visit only the joints on
the path from the root to the link, so their cost grows with the depth of the link, not
with n: the Jacobian by :func:`.kinematics.to_root`'s leaf-to-root composition (no work
array), the others from :func:`.kinematics.site_frame` (the root-frame frames of the path).

For a point x fixed on body b and a joint s on its path (a_s its axis, p_s its origin, both
in the root frame): J_T[:, s] = a_s x (x - p_s) and J_R[:, s] = a_s if s is revolute,
J_T[:, s] = a_s and J_R[:, s] = 0 if prismatic (000 eqs. 29, 37, 45). A 6 x n Jacobian
stacks the linear rows over the angular ones, in one of three frames (layout.WORLD, LOCAL,
LOCAL_WORLD_ALIGNED, Pinocchio's conventions): LOCAL_WORLD_ALIGNED is (J_T, J_R); LOCAL is
R^T times it (R the link's orientation, 000 eqs. 31, 42); WORLD has the linear rows
J_T + x~ J_R, the velocity of the body point at the root origin (no longer depends on x).

Hessians are Khang's derivative (000 eq. 5), ``H[:, s*n + k] = dJ[:, s]/dq_k`` exactly (not
only up to the symmetric part that multiplies q' kron q'): for k a proper ancestor of s on
the path, dJ_s/dq_k = a_k x J_s if k is revolute (the sub-chain turns about a_k), else 0;
for k at or below s, dJ_T,s/dq_k = a_s x J_T,k if s is revolute (x moves, a_s and p_s do
not), else 0, and dJ_R,s/dq_k = 0.

Velocity terms are never formed from H: one outward pass along the path gives the angular
velocity w_s and origin velocity v_s of every body on it, then J'(q, q') column by column
(da_s/dt = w_s x a_s) and the classical acceleration J q'' + H (q' kron q') (000 eqs. 52, 62,
66) by the acceleration recursion of 000 eqs. 83-85.
"""

import numba
import numpy as np

from .algebra import (add, chunks, cross, get3, get9, inline, jit, mm, mtv, mv, pjit, scl, set3,
                      sub)
from .kinematics import finite, FP, FR, joint, load, site_frame
from .layout import (AX, INV, LOCAL, LOCAL_WORLD_ALIGNED, PARENT, REVOLUTE, SITE_BODY, SITE_P,
                     SITE_R, WORLD)

# work array columns: frame block (R 9, p 3, root frame), q, q', q'', axis a (3), angular
# velocity w (3), origin velocity v (3), J_T column (3)
JQ, JQD, JQDD, JA, JW, JV, JT = 12, 13, 14, 15, 18, 21, 24
NJ = 27
_ZERO = (0.0, 0.0, 0.0)
_ORIGIN = np.zeros(3)           # a global array: numba compiles it in as a constant


@inline
def _good_site(sites, k, point, frame):
    """Check a site row index, a finite 3-vector point and a frame code."""
    if k < 0 or k >= sites.shape[0] or point.shape[0] != 3 or frame < 0 or frame > 2:
        return False
    return np.isfinite(point[0]) and np.isfinite(point[1]) and np.isfinite(point[2])


@jit
def _columns(ints, reals, wk, path, m, x):
    """Axis a_s and J_T column of every joint on the path into wk (root frame)."""
    for t in range(m):
        s = path[t]
        a = mv(get9(wk, s, FR), get3(reals, s, AX))
        set3(wk, s, JA, a)
        if ints[s, REVOLUTE]:
            set3(wk, s, JT, cross(a, sub(x, get3(wk, s, FP))))
        else:
            set3(wk, s, JT, a)


@inline
def _put6(out, u, lin, ang, frame, R, x):
    """Write a (linear, angular) column in LOCAL_WORLD_ALIGNED terms into out[:, u] in frame."""
    if frame == LOCAL:
        lin, ang = mtv(R, lin), mtv(R, ang)
    elif frame == WORLD:
        lin = add(lin, cross(x, ang))
    out[0, u], out[1, u], out[2, u] = lin
    out[3, u], out[4, u], out[5, u] = ang


@inline
def _jacobian_row(ints, reals, sites, k, point, q, frame, out, chain):
    """
    6 x n Jacobian of ``point`` on link k in frame, user order, into out.

    Leaf to root, with no work array: at joint i, (R, x) is the link frame and the point in
    body i's frame, where the column is a_i x x (revolute) or a_i (prismatic); it is stored
    in the link's axes (LOCAL), then (R, x) moves into the parent's frame. At the root
    (R, x) is the link's orientation and the point in the root frame, which turn the
    columns into the other frames. The first ``chain`` bodies (a floating base's chain, at
    zero) have identity joint frames: their columns are written, (R, x) left as it is.
    """
    n = ints.shape[0]
    if not (_good_site(sites, k, point, frame) and finite(q, n)):
        return False
    out[:, :] = 0.0
    body = int(sites[k, SITE_BODY])
    R = get9(sites, k, SITE_R)
    x = add(get3(sites, k, SITE_P), mv(R, (point[0], point[1], point[2])))
    i = body
    while i >= 0:
        a = get3(reals, i, AX)
        u = ints[i, INV]
        if ints[i, REVOLUTE]:
            lin, ang = mtv(R, cross(a, x)), mtv(R, a)
        else:
            lin, ang = mtv(R, a), _ZERO
        out[0, u], out[1, u], out[2, u] = lin
        out[3, u], out[4, u], out[5, u] = ang
        if i >= chain:
            Rj, pj = joint(ints, reals, i, q[u])
            R, x = mm(Rj, R), add(pj, mv(Rj, x))
        i = ints[i, PARENT]
    if frame != LOCAL:
        i = body
        while i >= 0:
            u = ints[i, INV]
            _put6(out, u, mv(R, (out[0, u], out[1, u], out[2, u])),
                  mv(R, (out[3, u], out[4, u], out[5, u])), frame, R, x)
            i = ints[i, PARENT]
    return True


@jit
def _velocities(ints, wk, path, m):
    """Angular velocity w and origin velocity v of every body on the path (outward pass)."""
    w, v, p = _ZERO, _ZERO, _ZERO
    for t in range(m):
        s = path[t]
        ps = get3(wk, s, FP)
        aqd = scl(get3(wk, s, JA), wk[s, JQD])
        v = add(v, cross(w, sub(ps, p)))
        if ints[s, REVOLUTE]:
            w = add(w, aqd)
        else:
            v = add(v, aqd)
        p = ps
        set3(wk, s, JW, w)
        set3(wk, s, JV, v)
    return w, v, p


@jit
def _jacobian_derivative_row(ints, reals, sites, k, point, q, qd, frame, wk, path, out):
    """J'(q, q') = dJ/dt of the 6 x n Jacobian in frame, user order, into out."""
    n = ints.shape[0]
    if not (_good_site(sites, k, point, frame) and load(ints, q, n, wk, JQ)
            and load(ints, qd, n, wk, JQD)):
        return False
    m, body, R, x = site_frame(ints, reals, sites, k, point, wk, JQ, path)
    out[:, :] = 0.0
    _columns(ints, reals, wk, path, m, x)
    wb, vb, pb = _velocities(ints, wk, path, m)
    vx = add(vb, cross(wb, sub(x, pb)))          # velocity of the point
    for t in range(m):
        s = path[t]
        a = get3(wk, s, JA)
        da = cross(get3(wk, s, JW), a)           # the axis turns with body s
        J = get3(wk, s, JT)
        if ints[s, REVOLUTE]:
            lin = add(cross(da, sub(x, get3(wk, s, FP))), cross(a, sub(vx, get3(wk, s, JV))))
            ang = da
        else:
            lin, ang, a = da, _ZERO, _ZERO
        if frame == LOCAL:      # d/dt (R^T J) = R^T (J' - w x J)
            lin, ang = sub(lin, cross(wb, J)), sub(ang, cross(wb, a))
        elif frame == WORLD:    # d/dt (J_T + x~ J_R) = J_T' + v_x~ J_R + x~ J_R'
            lin = add(lin, cross(vx, a))
        _put6(out, ints[s, INV], lin, ang, frame, R, x)
    return True


@jit
def _acceleration_row(ints, reals, sites, k, point, q, qd, qdd, frame, wk, path, out):
    """
    Classical acceleration (point, angular) = J q'' + H (q' kron q') into out (6,).

    In root axes (LOCAL_WORLD_ALIGNED) or the link's (LOCAL: 000 eq. 59, the starred
    Hessian); False for WORLD, which has no classical acceleration.
    """
    n = ints.shape[0]
    if frame != LOCAL and frame != LOCAL_WORLD_ALIGNED:
        return False
    if not (_good_site(sites, k, point, frame) and load(ints, q, n, wk, JQ)
            and load(ints, qd, n, wk, JQD) and load(ints, qdd, n, wk, JQDD)):
        return False
    m, body, R, x = site_frame(ints, reals, sites, k, point, wk, JQ, path)
    # outward along the path: 000 eqs. 83-84 with frame (b) the parent, (c) the body
    w, dw, acc, p = _ZERO, _ZERO, _ZERO, _ZERO
    for t in range(m):
        s = path[t]
        a = mv(get9(wk, s, FR), get3(reals, s, AX))
        ps = get3(wk, s, FP)
        r = sub(ps, p)
        acc = add(acc, add(cross(dw, r), cross(w, cross(w, r))))
        aqd, aqdd = scl(a, wk[s, JQD]), scl(a, wk[s, JQDD])
        if ints[s, REVOLUTE]:
            dw = add(dw, add(aqdd, cross(w, aqd)))
            w = add(w, aqd)
        else:
            acc = add(acc, add(aqdd, scl(cross(w, aqd), 2.0)))
        p = ps
    r = sub(x, p)                                   # 000 eq. 85: the point
    acc = add(acc, add(cross(dw, r), cross(w, cross(w, r))))
    if frame == LOCAL:
        acc, dw = mtv(R, acc), mtv(R, dw)
    out[0], out[1], out[2] = acc
    out[3], out[4], out[5] = dw
    return True


@jit
def _hessian_row(ints, reals, sites, k, point, q, frame, wk, path, out):
    """6 x n^2 Hessian, out[:, s*n + k] = dJ[:, s]/dq_k of the Jacobian in frame, user order."""
    n = ints.shape[0]
    if not (_good_site(sites, k, point, frame) and load(ints, q, n, wk, JQ)):
        return False
    m, body, R, x = site_frame(ints, reals, sites, k, point, wk, JQ, path)
    out[:, :] = 0.0
    _columns(ints, reals, wk, path, m, x)
    for ts in range(m):
        s = path[ts]
        a_s, J_s = get3(wk, s, JA), get3(wk, s, JT)
        rev_s = ints[s, REVOLUTE]
        A_s = a_s if rev_s else _ZERO               # J_R column of s
        for tk in range(m):
            j = path[tk]
            lin, ang = _ZERO, _ZERO                 # root axes first
            if tk < ts:                             # j a proper ancestor of s
                if ints[j, REVOLUTE]:
                    a_j = get3(wk, j, JA)
                    lin, ang = cross(a_j, J_s), cross(a_j, A_s)
            elif rev_s:                             # j at or below s: only x moves
                lin = cross(a_s, get3(wk, j, JT))
            if frame == LOCAL:      # d(R^T J_s)/dq_j = R^T (dJ_s/dq_j - J_R,j x J_s)
                A_j = get3(wk, j, JA) if ints[j, REVOLUTE] else _ZERO
                lin, ang = sub(lin, cross(A_j, J_s)), sub(ang, cross(A_j, A_s))
            elif frame == WORLD:    # d(J_T,s + x~ J_R,s)/dq_j adds J_T,j x J_R,s
                lin = add(lin, cross(get3(wk, j, JT), A_s))
            _put6(out, ints[s, INV] * n + ints[j, INV], lin, ang, frame, R, x)
    return True


# ------------------------------------------------------------------ entry points
@jit
def _work(n):
    return np.empty((n, NJ)), np.empty(n, dtype=np.int64)


@inline
def jacobian(ints, reals, sites, k, point, q, frame, out):
    """6 x n Jacobian of point (link frame) on link k in frame into out; False on bad input."""
    return _jacobian_row(ints, reals, sites, k, point, q, frame, out, 0)


@jit
def jacobian_derivative(ints, reals, sites, k, point, q, qd, frame, out):
    """J'(q, q') of the 6 x n Jacobian into out; False on bad input."""
    wk, path = _work(ints.shape[0])
    return _jacobian_derivative_row(ints, reals, sites, k, point, q, qd, frame, wk, path, out)


@jit
def acceleration(ints, reals, sites, k, point, q, qd, qdd, frame, out):
    """Classical acceleration J q'' + H (q' kron q') (6,) into out; False on bad input."""
    wk, path = _work(ints.shape[0])
    return _acceleration_row(ints, reals, sites, k, point, q, qd, qdd, frame, wk, path, out)


@jit
def hessian(ints, reals, sites, k, point, q, frame, out):
    """6 x n^2 Hessian (Khang's derivative of the Jacobian in frame) into out."""
    wk, path = _work(ints.shape[0])
    return _hessian_row(ints, reals, sites, k, point, q, frame, wk, path, out)


@jit
def jacobians(ints, reals, sites, k, q, out):
    """(J_T, J_R) of link k's origin into out (2, 3, n), root axes; False on bad input."""
    return _jacobian_row(ints, reals, sites, k, _ORIGIN, q, LOCAL_WORLD_ALIGNED,
                         out.reshape(6, ints.shape[0]), 0)


@jit
def hessians(ints, reals, sites, k, point, q, out):
    """(H_T, H_R) of point on link k into out (2, 3, n^2), root axes; False on bad input."""
    n = ints.shape[0]
    wk, path = _work(n)
    return _hessian_row(ints, reals, sites, k, point, q, LOCAL_WORLD_ALIGNED, wk, path,
                        out.reshape(6, n * n))


@pjit
def jacobian_batch(ints, reals, sites, k, point, Q, frame, out):
    """:func:`jacobian` over the rows of Q (N, n) into out (N, 6, n)."""
    N = Q.shape[0]
    if Q.shape[1] != ints.shape[0]:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        for r in range(c * N // K, (c + 1) * N // K):
            if not _jacobian_row(ints, reals, sites, k, point, Q[r], frame, out[r], 0):
                ok[c] = False
                break
    return np.all(ok)


@pjit
def jacobian_derivative_batch(ints, reals, sites, k, point, Q, Qd, frame, out):
    """:func:`jacobian_derivative` over the rows of Q, Qd (N, n) into out (N, 6, n)."""
    N = Q.shape[0]
    if Q.shape[1] != ints.shape[0] or Qd.shape[0] != N:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        wk, path = _work(ints.shape[0])
        for r in range(c * N // K, (c + 1) * N // K):
            if not _jacobian_derivative_row(ints, reals, sites, k, point, Q[r], Qd[r], frame,
                                            wk, path, out[r]):
                ok[c] = False
                break
    return np.all(ok)


@pjit
def acceleration_batch(ints, reals, sites, k, point, Q, Qd, Qdd, frame, out):
    """:func:`acceleration` over the rows of Q, Qd, Qdd (N, n) into out (N, 6)."""
    N = Q.shape[0]
    if Q.shape[1] != ints.shape[0] or Qd.shape[0] != N or Qdd.shape[0] != N:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        wk, path = _work(ints.shape[0])
        for r in range(c * N // K, (c + 1) * N // K):
            if not _acceleration_row(ints, reals, sites, k, point, Q[r], Qd[r], Qdd[r], frame,
                                     wk, path, out[r]):
                ok[c] = False
                break
    return np.all(ok)


@pjit
def hessian_batch(ints, reals, sites, k, point, Q, frame, out):
    """:func:`hessian` over the rows of Q (N, n) into out (N, 6, n^2)."""
    N = Q.shape[0]
    if Q.shape[1] != ints.shape[0]:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        wk, path = _work(ints.shape[0])
        for r in range(c * N // K, (c + 1) * N // K):
            if not _hessian_row(ints, reals, sites, k, point, Q[r], frame, wk, path, out[r]):
                ok[c] = False
                break
    return np.all(ok)
