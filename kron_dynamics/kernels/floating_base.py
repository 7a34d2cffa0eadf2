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
Dynamics of a tree on a free-flying base in quasi-velocities (004 app. B), compiled.

Mirrors :mod:`kron_dynamics.algorithms.floating_base` on the packed tree behind the base
chain (:func:`kron_dynamics.floating_model.base_chain`: prismatic x, y, z, then revolute x,
y, z, at zero, rooted at the base frame of the moment): the chain's velocities are the base
twist (v, w), its joint forces the base wrench, gravity enters as R^T g, and its
accelerations are the base's v', w' shifted by the velocity products that a free body has
and the chain has not (:func:`chain_acceleration`). The packed model's gravity row holds
the world gravity; a call writes R^T g into a copy. Inputs: q = (x, y, z, qx, qy, qz, qw,
joints), v and the forces in the kernel order (the chain, then the joints); False when q is
not finite or its quaternion is not within ``tol`` of unit norm (the facade then raises
the error that names it).
"""

import numba
import numpy as np

from .algebra import add, chunks, cross, get3, get9, inline, jit, mm, mv, pjit, scl, set3
from .crba import (_crba_row, body_inertia, CH, CI, CM, CQ, crba_pass, CS, motion_subspaces, NC,
                   write_mass_matrix)
from .forward_dynamics import (cholesky_factor, cholesky_factor_into, cholesky_substitute,
                               fd_work, forward_dynamics_into, forward_substitute, gram,
                               substitute, tree_factor_into, tree_solve_into)
from .jacobians import _jacobian_row, acceleration, hessian, jacobian, jacobian_derivative
from .center_of_mass import center_of_mass, center_of_mass_jacobian
from .coriolis_star import coriolis_star, mass_matrix_derivative
from .coupled import lift, project_columns, project_cube, project_matrix, project_vector
from .kinematics import FP, FR, frames, link_pose, link_poses, load, to_root
from .layout import (GRAVITY, ID, INV, LOCAL, LOCAL_WORLD_ALIGNED, PARENT, PERM, SITE_BODY,
                     SITE_P, SITE_R, WORLD)
from .regressor import regressor
from .rnea import _rnea_row, NW


@jit
def chain_acceleration(v, dv, out):
    """Write the chain accelerations that give the base the twist derivative dv[:6]."""
    vx, vy, vz, wx, wy, wz = v[0], v[1], v[2], v[3], v[4], v[5]
    out[:] = dv
    out[0] += wy * vz - wz * vy       # w x v: the base's classical acceleration
    out[1] += wz * vx - wx * vz
    out[2] += wx * vy - wy * vx
    out[3] -= wy * wz                 # the chain's revolute products, cancelled
    out[4] += wx * wz
    out[5] -= wx * wy


@jit
def configuration(q, tol, qk):
    """Check q (finite, quaternion norm within tol of 1); fill qk; return the unit quaternion."""
    n = qk.shape[0]
    if q.shape[0] != n + 1:
        return False, (0.0, 0.0, 0.0, 1.0)
    for i in range(n + 1):
        if not np.isfinite(q[i]):
            return False, (0.0, 0.0, 0.0, 1.0)
    x, y, z, w = q[3], q[4], q[5], q[6]
    norm = np.sqrt(x * x + y * y + z * z + w * w)
    if abs(norm - 1.0) > tol:
        return False, (0.0, 0.0, 0.0, 1.0)
    qk[:6] = 0.0
    qk[6:] = q[7:]
    return True, (x / norm, y / norm, z / norm, w / norm)


@jit
def base_axes(origin, x, y, z, w):
    """Return the base orientation in the world (row-major 9-tuple): the origin's times q's."""
    Rq = (1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w),
          2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w),
          2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y))
    return mm((origin[0, 0], origin[0, 1], origin[0, 2], origin[1, 0], origin[1, 1],
               origin[1, 2], origin[2, 0], origin[2, 1], origin[2, 2]), Rq)


@jit
def base_rotation(origin, x, y, z, w):
    """Return :func:`base_axes` as a 3 x 3 array."""
    A = base_axes(origin, x, y, z, w)
    R = np.empty((3, 3))
    R[0, 0], R[0, 1], R[0, 2] = A[0], A[1], A[2]
    R[1, 0], R[1, 1], R[1, 2] = A[3], A[4], A[5]
    R[2, 0], R[2, 1], R[2, 2] = A[6], A[7], A[8]
    return R


@jit
def base_frame(ints, reals, origin, q, tol, qk, wreals):
    """
    Fill qk (the chain at 0, then the joints) and wreals (reals, gravity R^T g); ok.

    R is the base orientation in the world (:func:`base_rotation`): the root joint's origin
    times the unit quaternion of q (normalised when its norm is within tol of 1).
    """
    wreals[:, :] = reals
    return base_gravity(ints, reals, origin, q, tol, qk, wreals)


@inline
def base_gravity(ints, reals, origin, q, tol, qk, wreals):
    """
    :func:`base_frame` into a wreals that holds reals already: only its gravity row is written.

    A batch's rows share one wreals (:func:`floating_fd_work`): copying all of reals per row
    cost TALOS's forward dynamics about a tenth of its time.
    """
    n = ints.shape[0]
    ok, (x, y, z, w) = configuration(q, tol, qk)
    if not ok:
        return False
    R = base_rotation(origin, x, y, z, w)
    for c in range(3):          # R^T g: the world gravity in the base frame
        wreals[n, c] = R[0, c] * reals[n, 0] + R[1, c] * reals[n, 1] + R[2, c] * reals[n, 2]
    return True


@jit
def floating_rnea(ints, reals, origin, q, v, dv, mode, tol, out):
    """
    Newton-Euler with the base moving into out (kernel order); False on a bad input.

    mode ID: M v' + h(q, v); GRAVITY: G(q) (v, dv ignored); CORIOLIS: h - G (dv ignored).
    """
    return floating_rnea_into(ints, reals, origin, q, v, dv, mode, tol, out,
                              floating_rnea_work(ints, reals))


@jit
def floating_rnea_work(ints, reals):
    """Return the work arrays of :func:`floating_rnea_into` (reals' copy: wreals)."""
    n = ints.shape[0]
    return np.empty(n), reals.copy(), np.empty(n), np.zeros(n), np.zeros((0, 6)), np.empty((n, NW))


@inline
def floating_rnea_into(ints, reals, origin, q, v, dv, mode, tol, out, work):
    """:func:`floating_rnea` with the work arrays of :func:`floating_rnea_work`."""
    n = ints.shape[0]
    if v.shape[0] != n or dv.shape[0] != n or out.shape[0] != n:
        return False
    qk, wreals, a, zeros, W, wk = work
    if not base_gravity(ints, reals, origin, q, tol, qk, wreals):
        return False
    if mode == ID:
        chain_acceleration(v, dv, a)
    else:
        chain_acceleration(v, zeros, a)
    if mode != ID and mode != GRAVITY:     # CORIOLIS: no gravity, no acceleration
        wreals[n, 0] = wreals[n, 1] = wreals[n, 2] = 0.0
    return _rnea_row(ints, wreals, qk, v, a, GRAVITY if mode == GRAVITY else ID, W, wk, out)


@jit
def floating_crba(ints, reals, q, tol, out):
    """M(q) of the base and the joints into out (kernel order); False on a bad q."""
    n = ints.shape[0]
    return floating_crba_into(ints, reals, q, tol, out, np.empty(n), np.empty((n, NC)))


@inline
def floating_crba_into(ints, reals, q, tol, out, qk, wk):
    """:func:`floating_crba` with work arrays qk (n) and wk (n, NC)."""
    ok, _ = configuration(q, tol, qk)      # M does not depend on the base pose
    return ok and _crba_row(ints, reals, qk, wk, out)


@jit
def floating_forward_dynamics(ints, reals, origin, q, v, tau, tol, out):
    """Write v' = M^-1 (tau - h(q, v)) into out; False on a bad input or a singular M."""
    return floating_forward_dynamics_into(ints, reals, origin, q, v, tau, tol, out,
                                          floating_fd_work(ints, reals))


@jit
def floating_fd_work(ints, reals):
    """Return the work arrays of :func:`floating_forward_dynamics_into` (reals' copy: wreals)."""
    n = ints.shape[0]
    return (fd_work(n), np.empty(n), reals.copy(), np.zeros(n), np.empty(n), np.empty(n))


@jit
def floating_forward_dynamics_into(ints, reals, origin, q, v, tau, tol, out, work):
    """:func:`floating_forward_dynamics` with the work arrays of :func:`floating_fd_work`."""
    n = ints.shape[0]
    if v.shape[0] != n or tau.shape[0] != n or out.shape[0] != n:
        return False
    fd, qk, wreals, zeros, shift, a = work
    if not (base_gravity(ints, reals, origin, q, tol, qk, wreals)
            and forward_dynamics_into(ints, wreals, qk, v, tau, zeros, out, fd, a)):
        return False
    chain_acceleration(v, zeros, shift)   # the chain's v' is the base's plus velocity products
    for i in range(6):
        out[i] -= shift[i]
    return True


@pjit
def floating_rnea_batch(ints, reals, origin, Q, V, DV, mode, tol, out):
    """:func:`floating_rnea` over the rows of (N, nq) and (N, nv) arrays into out (N, nv)."""
    N = Q.shape[0]
    if V.shape[0] != N or DV.shape[0] != N or out.shape[0] != N:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        work = floating_rnea_work(ints, reals)    # one set per chunk, reused row after row
        for r in range(c * N // K, (c + 1) * N // K):
            if not floating_rnea_into(ints, reals, origin, Q[r], V[r], DV[r], mode, tol, out[r],
                                      work):
                ok[c] = False
                break
    return np.all(ok)


@pjit
def floating_crba_batch(ints, reals, Q, tol, out):
    """:func:`floating_crba` over the rows of an (N, nq) array into out (N, nv, nv)."""
    N = Q.shape[0]
    if out.shape[0] != N:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    n = ints.shape[0]
    for c in numba.prange(K):
        qk, wk = np.empty(n), np.empty((n, NC))     # one set per chunk, reused row after row
        for r in range(c * N // K, (c + 1) * N // K):
            if not floating_crba_into(ints, reals, Q[r], tol, out[r], qk, wk):
                ok[c] = False
                break
    return np.all(ok)


@pjit
def floating_forward_dynamics_batch(ints, reals, origin, Q, V, TAU, tol, out):
    """:func:`floating_forward_dynamics` over the rows of Q, V, TAU into out (N, nv)."""
    N = Q.shape[0]
    if V.shape[0] != N or TAU.shape[0] != N or out.shape[0] != N:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        work = floating_fd_work(ints, reals)    # one set per chunk, reused row after row
        for r in range(c * N // K, (c + 1) * N // K):
            if not floating_forward_dynamics_into(ints, reals, origin, Q[r], V[r], TAU[r], tol,
                                                  out[r], work):
                ok[c] = False
                break
    return np.all(ok)


@jit
def contact_rows(ints, sites, wk, R, v, a, rows, points, dims, local, J, drift):
    """
    Contact Jacobians and drifts J' v into J (m, n) and drift (m,), Pinocchio's constraints.

    wk holds the root-frame frames and motion subspaces S of every body (:func:`crba_pass`
    or :func:`~kron_dynamics.kernels.crba.motion_subspaces`); v and a are the velocities and
    the accelerations at v' = 0 (the chain's, :func:`chain_acceleration`), kernel order. One
    outward pass gives every body's spatial velocity V and acceleration A at v' = 0 (root
    axes, at the root origin: A_i = A_parent + S_i a_i + V_parent x S_i v_i). Contact c is the
    point points[c] (link frame) of link row rows[c]; x its root-frame position, w, v_x its
    angular and linear velocity. A 3-D contact constrains the classical acceleration of the
    point, drift A_lin + A_ang x x + w x v_x; a 6-D contact the spatial acceleration of the
    frame at the point (Pinocchio's CONTACT_6D), drift (A_lin + A_ang x x, A_ang). The rows
    are in world axes (local[c] = 0: R turns base axes to the world) or in the link's
    (local[c] = 1): the axes of lambda, not the constraint.
    """
    n = ints.shape[0]
    V, A = np.empty((n, 6)), np.empty((n, 6))
    for i in range(n):
        u = ints[i, INV]
        par = ints[i, PARENT]
        sw, sv = get3(wk, i, CS), get3(wk, i, CS + 3)
        vw, vl = scl(sw, v[u]), scl(sv, v[u])
        aw, al = scl(sw, a[u]), scl(sv, a[u])
        if par >= 0:
            w, vo = get3(V, par, 0), get3(V, par, 3)
            aw = add(add(get3(A, par, 0), aw), cross(w, vw))
            al = add(add(get3(A, par, 3), al), add(cross(w, vl), cross(vo, vw)))
            vw, vl = add(w, vw), add(vo, vl)
        set3(V, i, 0, vw)
        set3(V, i, 3, vl)
        set3(A, i, 0, aw)
        set3(A, i, 3, al)
    r = 0
    zero = (0.0, 0.0, 0.0)
    for c in range(rows.shape[0]):
        k = rows[c]
        body = int(sites[k, SITE_BODY])
        Rs = get9(sites, k, SITE_R)
        point = add(get3(sites, k, SITE_P), mv(Rs, (points[c, 0], points[c, 1], points[c, 2])))
        if body >= 0:
            Rb = get9(wk, body, FR)
            x = add(get3(wk, body, FP), mv(Rb, point))
            Rl = mm(Rb, Rs)
            w, vo, aw, al = get3(V, body, 0), get3(V, body, 3), get3(A, body, 0), get3(A, body, 3)
        else:
            x, Rl, w, vo, aw, al = point, Rs, zero, zero, zero, zero
        lin = add(al, cross(aw, x))          # the spatial acceleration at the point
        if dims[c] == 3:                     # classical: + w x v_x
            lin = add(lin, cross(w, add(vo, cross(w, x))))
        if local[c]:                         # base axes -> link axes: Rl^T
            T = (Rl[0], Rl[3], Rl[6], Rl[1], Rl[4], Rl[7], Rl[2], Rl[5], Rl[8])
        else:
            T = (R[0, 0], R[0, 1], R[0, 2], R[1, 0], R[1, 1], R[1, 2], R[2, 0], R[2, 1],
                 R[2, 2])
        d = dims[c]
        for i in range(d):
            for col in range(n):
                J[r + i, col] = 0.0
        j = body
        while j >= 0:
            col = ints[j, INV]
            sw = get3(wk, j, CS)
            cl = mv(T, add(get3(wk, j, CS + 3), cross(sw, x)))
            J[r, col], J[r + 1, col], J[r + 2, col] = cl[0], cl[1], cl[2]
            if d == 6:
                ca = mv(T, sw)
                J[r + 3, col], J[r + 4, col], J[r + 5, col] = ca[0], ca[1], ca[2]
            j = ints[j, PARENT]
        dl = mv(T, lin)
        drift[r], drift[r + 1], drift[r + 2] = dl[0], dl[1], dl[2]
        if d == 6:
            da = mv(T, aw)
            drift[r + 3], drift[r + 4], drift[r + 5] = da[0], da[1], da[2]
        r += d
    return True


@jit
def contact_terms(ints, reals, sites, R, q, v, a, rows, points, dims, local, J, drift):
    """
    :func:`contact_rows` at q (kernel coordinates): the root-frame frames and S first.

    False on a bad input (a q, v or a that is not finite or not of the kernel's size).
    """
    n = ints.shape[0]
    if v.shape[0] != n or a.shape[0] != n:
        return False
    for i in range(n):
        if not (np.isfinite(v[i]) and np.isfinite(a[i])):
            return False
    wk = np.empty((n, NC))
    if not load(ints, q, n, wk, CQ):
        return False
    frames(ints, reals, wk, CQ, True)
    motion_subspaces(ints, reals, wk)
    return contact_rows(ints, sites, wk, R, v, a, rows, points, dims, local, J, drift)


@jit
def floating_jacobian(ints, reals, sites, origin, q, tol, k, point, frame, out):
    """
    6 x n Jacobian (kernel order: the base twist, then the joints) of a point on link k.

    frame as the fixed-base kernels' (WORLD, LOCAL, LOCAL_WORLD_ALIGNED) with the world in
    place of the root: the kernel's Jacobian in base axes behind the base chain at zero,
    turned to the world (or to the link's axes), and for WORLD moved to the world origin.
    False on a bad input (the facade then raises the error that names it).
    """
    n = ints.shape[0]
    if out.shape[1] != n or frame < WORLD or frame > LOCAL_WORLD_ALIGNED:
        return False
    qk = np.empty(n)
    ok, (x, y, z, w) = configuration(q, tol, qk)
    if not ok:
        return False
    if not _jacobian_row(ints, reals, sites, k, point, qk, LOCAL_WORLD_ALIGNED, out, 6):
        return False              # base axes, turned below column by column
    body = int(sites[k, SITE_BODY])
    if frame != LOCAL_WORLD_ALIGNED:    # the link's pose in base axes
        T, t = to_root(ints, reals, qk, body, get9(sites, k, SITE_R), get3(sites, k, SITE_P))
    A = ((T[0], T[3], T[6], T[1], T[4], T[7], T[2], T[5], T[8]) if frame == LOCAL
         else base_axes(origin, x, y, z, w))    # base axes -> link axes, or the world
    pw = (0.0, 0.0, 0.0)
    if frame == WORLD:                  # the linear rows at the world origin: + p x w
        p = (t[0] + T[0] * point[0] + T[1] * point[1] + T[2] * point[2],   # base axes
             t[1] + T[3] * point[0] + T[4] * point[1] + T[5] * point[2],
             t[2] + T[6] * point[0] + T[7] * point[1] + T[8] * point[2])
        pw = add(mv(A, p), (origin[0, 0] * q[0], origin[1, 0] * q[0], origin[2, 0] * q[0]))
        pw = (pw[0] + origin[0, 1] * q[1] + origin[0, 2] * q[2] + origin[0, 3],   # the world
              pw[1] + origin[1, 1] * q[1] + origin[1, 2] * q[2] + origin[1, 3],
              pw[2] + origin[2, 1] * q[1] + origin[2, 2] * q[2] + origin[2, 3])
    i = body                            # the columns off the link's path are zero
    while i >= 0:
        c = ints[i, INV]
        lin = mv(A, (out[0, c], out[1, c], out[2, c]))
        ang = mv(A, (out[3, c], out[4, c], out[5, c]))
        if frame == WORLD:
            lin = add(lin, cross(pw, ang))
        out[0, c], out[1, c], out[2, c] = lin
        out[3, c], out[4, c], out[5, c] = ang
        i = ints[i, PARENT]
    return True


@jit
def floating_constrained_forward_dynamics(ints, reals, sites, origin, q, v, tau, tol, rows,
                                          points, dims, local, dv, lam):
    """
    (v', lambda) of M v' + h = tau + J_c^T lambda, J_c v' + gamma = 0, into dv and lam.

    Kernel order (a floating base without mimic joints). M and h by the compiled recursions,
    the contact rows by :func:`contact_rows`, then :func:`tree_constrained_solve`. False on
    a bad input, a singular M or a Delassus matrix that is singular or nearly so (redundant
    or contradicting contacts): the facade's general path then gives the minimum-norm lambda
    or the error that says why.
    """
    return floating_constrained_forward_dynamics_into(
        ints, reals, sites, origin, q, v, tau, tol, rows, points, dims, local, dv, lam,
        floating_constrained_work(ints, reals, lam.shape[0]))


@inline
def floating_constrained_work(ints, reals, m):
    """Return the work arrays of :func:`floating_constrained_forward_dynamics_into`."""
    n = ints.shape[0]
    return ((np.empty(n), reals.copy(), np.empty(n), np.zeros(n), np.empty(n),
             np.empty((n, NW)), np.zeros((0, 6)), np.zeros((n, n)), np.empty((n, NC)),
             np.empty((m, n)), np.empty(m)),
            (np.zeros((n, n)), np.empty((1 + m, n)), np.empty((m, m)), np.empty(m),
             np.zeros((m, m)), np.empty(max(n, m)), np.empty(n), np.empty(n),
             np.empty(m, dtype=np.int64)))


@inline
def floating_constrained_forward_dynamics_into(ints, reals, sites, origin, q, v, tau, tol,
                                               rows, points, dims, local, dv, lam, work):
    """:func:`floating_constrained_forward_dynamics` with the work of a batch's chunk."""
    n = ints.shape[0]
    if v.shape[0] != n or tau.shape[0] != n or dv.shape[0] != n:
        return False
    for i in range(n):
        if not (np.isfinite(v[i]) and np.isfinite(tau[i])):
            return False
    (qk, wreals, a, zeros, h, rw, no_wrench, M, wk, J, gamma), solve = work
    if not base_gravity(ints, reals, origin, q, tol, qk, wreals):   # wreals holds reals
        return False
    norm = np.sqrt(q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6])
    R = base_rotation(origin, q[3] / norm, q[4] / norm, q[5] / norm, q[6] / norm)
    chain_acceleration(v, zeros, a)
    if not _rnea_row(ints, wreals, qk, v, a, ID, no_wrench, rw, h):
        return False
    load(ints, qk, n, wk, CQ)         # the CRBA's frames and S serve the contact rows
    crba_pass(ints, reals, wk)
    write_mass_matrix(ints, reals, wk, M, False)    # internal order; zero off the pattern
    contact_rows(ints, sites, wk, R, v, a, rows, points, dims, local, J, gamma)
    return tree_constrained_solve(ints, sites, rows, dims, M, h, tau, J, gamma, dv, lam, solve)


@inline
def tree_constrained_solve(ints, sites, rows, dims, M, h, tau, J, gamma, dv, lam, work):
    """
    :func:`constrained_solve` with M = L^T L keeping the tree's sparsity (M internal order).

    Featherstone's LTL factorisation (:func:`tree_factor_into`, accepted on the same rule as
    the dense one) gives Y = L^-T [tau - h, J^T] descendants first. A contact's rows of J
    (:func:`contact_rows`) are zero off its body's ancestors, and so are its columns of Y:
    their substitutions and their entries of the Delassus matrix J M^-1 J^T = Y^T Y run
    along that path only. v' = L^-1 (y0 + Y lambda), ancestors first. h, tau, J and dv are
    in user order (``ints``' INV).
    """
    L, YT, A, b, La, y, x, inv, body = work
    n, m = M.shape[0], J.shape[0]
    for i in range(n):
        for c in range(n):
            if not np.isfinite(M[i, c]):
                return False
    if not tree_factor_into(ints, M, 1e-12, L, y):
        return False
    for i in range(n):
        inv[i] = 1.0 / L[i, i]
    r = 0
    for c in range(rows.shape[0]):    # each row of J: its contact's body
        for k in range(dims[c]):
            body[r + k] = int(sites[rows[c], SITE_BODY])
        r += dims[c]
    for i in range(n):
        YT[0, i] = tau[ints[i, INV]] - h[ints[i, INV]]
    for i in range(n - 1, -1, -1):    # L^T y0 = tau - h: descendants first
        t = YT[0, i] * inv[i]
        YT[0, i] = t
        j = ints[i, PARENT]
        while j >= 0:
            YT[0, j] -= L[i, j] * t
            j = ints[j, PARENT]
    for r in range(m):                # L^T Y = J^T along each contact's path
        for i in range(n):
            YT[1 + r, i] = 0.0
        i = body[r]
        while i >= 0:
            YT[1 + r, i] = J[r, ints[i, INV]]
            i = ints[i, PARENT]
        i = body[r]
        while i >= 0:
            t = YT[1 + r, i] * inv[i]
            YT[1 + r, i] = t
            j = ints[i, PARENT]
            while j >= 0:
                YT[1 + r, j] -= L[i, j] * t
                j = ints[j, PARENT]
            i = ints[i, PARENT]
    for r in range(m):                # the Delassus matrix, b = -gamma - Y^T y0
        for k in range(r + 1):
            t = 0.0
            i = body[r]
            while i >= 0:
                t += YT[1 + r, i] * YT[1 + k, i]
                i = ints[i, PARENT]
            A[r, k] = t
            A[k, r] = t
        t = -gamma[r]
        i = body[r]
        while i >= 0:
            t -= YT[1 + r, i] * YT[0, i]
            i = ints[i, PARENT]
        b[r] = t
    if not cholesky_factor_into(A, 1e-10, La, y):
        return False
    substitute(La, b, y, lam)
    for i in range(n):                # v' = L^-1 (y0 + Y lambda): ancestors first
        s = YT[0, i]
        for c in range(m):
            s += YT[1 + c, i] * lam[c]
        j = ints[i, PARENT]
        while j >= 0:
            s -= L[i, j] * x[j]
            j = ints[j, PARENT]
        x[i] = s * inv[i]
        dv[ints[i, INV]] = x[i]
    return True


@jit
def constrained_solve(M, h, tau, J, gamma, dv, lam):
    """
    Solve M v' + h = tau + J^T lambda, J v' + gamma = 0 into dv and lam; False if singular.

    One Cholesky factorisation of M for M^-1 [tau - h, J^T] and one of the Delassus matrix
    J M^-1 J^T (refused when nearly singular: redundant or contradicting contacts).
    """
    return constrained_solve_into(M, h, tau, J, gamma, dv, lam,
                                  constrained_solve_work(M.shape[0], J.shape[0]))


@inline
def constrained_solve_work(n, m):
    """Return the work arrays of :func:`constrained_solve_into` (n coordinates, m rows)."""
    return (np.zeros((n, n)), np.empty(max(n, m)), np.empty((n, 1 + m)), np.empty((m, m)),
            np.empty(m), np.zeros((m, m)), np.empty(n))


@inline
def constrained_solve_into(M, h, tau, J, gamma, dv, lam, work):
    """:func:`constrained_solve` with the work of :func:`constrained_solve_work`: the same bits."""
    L, y, Y, A, b, La, z = work
    n, m = M.shape[0], J.shape[0]
    # M = L L^T: y0 = L^-1 (tau - h), Y = L^-1 J^T; the Delassus matrix J M^-1 J^T = Y^T Y
    for i in range(n):
        for c in range(n):
            if not np.isfinite(M[i, c]):
                return False
    if not cholesky_factor_into(M, 1e-12, L, y):
        return False
    for i in range(n):                # column 0: y0, then Y
        Y[i, 0] = tau[i] - h[i]
        for r in range(m):
            Y[i, 1 + r] = J[r, i]
    forward_substitute(L, Y)
    gram(Y, 1, A)                     # the Delassus matrix
    for r in range(m):                # b = -gamma - J M^-1 (tau - h) = -gamma - Y^T y0
        t = -gamma[r]
        for i in range(n):
            t -= Y[i, 1 + r] * Y[i, 0]
        b[r] = t
    if not cholesky_factor_into(A, 1e-10, La, y):
        return False
    substitute(La, b, y, lam)
    for i in range(n):                # v' = L^-T (y0 + Y lambda)
        s = Y[i, 0]
        for c in range(m):
            s += Y[i, 1 + c] * lam[c]
        z[i] = s
    for i in range(n - 1, -1, -1):
        t = z[i]
        for k in range(i + 1, n):
            t -= L[k, i] * dv[k]
        dv[i] = t / L[i, i]
    return True


# ------------------------------------------------------------------ any moving base
# A planar base, or mimic joints on either base: the model's coordinates (nq = nv + 1) are
# lifted to the kernels' (a free-flying base and every joint of the tree, kernel order), the
# kernels above run, and the results are projected back: P^T tau, P^T M P, J P (004 sec. 5),
# as MovingBase's general path does in NumPy (its reference). ``pk`` (nk, 3): per kernel
# coordinate, the model velocity it follows (-1: none, the planar base's z, wx, wy), the
# multiplier and the offset (a joint's q = multiplier q_model + offset; the model's joint
# coordinate of velocity c is q[c + 1]): kernels.coupled's coupling format, whose lift and
# projections serve here too. ``planar``: the base is (x, y, cos t, sin t).
@jit
def lift_configuration(planar, pk, q, tol, qf):
    """Write the free-flying configuration of q into qf; False on a bad q (size, finite, unit)."""
    nq = q.shape[0]
    nv = 0                  # every model velocity is followed by some kernel coordinate
    for f in range(pk.shape[0]):
        nv = max(nv, int(pk[f, 0]) + 1)
    if nq != nv + 1 or qf.shape[0] != pk.shape[0] + 1:
        return False
    for i in range(nq):
        if not np.isfinite(q[i]):
            return False
    if planar:          # (cos t, sin t) -> the quaternion of a rotation t about z
        c, s = q[2], q[3]
        norm = np.sqrt(c * c + s * s)
        if abs(norm - 1.0) > tol:
            return False
        c, s = c / norm, s / norm
        if c >= 0.0:
            w = np.sqrt(0.5 * (1.0 + c))
            z = s / (2.0 * w)
        else:
            z = np.sqrt(0.5 * (1.0 - c))
            if s < 0.0:
                z = -z
            w = s / (2.0 * z)
        qf[0], qf[1], qf[2], qf[3], qf[4], qf[5], qf[6] = q[0], q[1], 0.0, 0.0, 0.0, z, w
    else:
        for i in range(7):
            qf[i] = q[i]
    for f in range(6, pk.shape[0]):
        c = int(pk[f, 0])
        if c + 1 >= nq:
            return False
        qf[f + 1] = pk[f, 2] if c < 0 else pk[f, 1] * q[c + 1] + pk[f, 2]
    return True


@jit
def moving_rnea(ints, reals, origin, planar, pk, arm, q, v, dv, mode, tol, out):
    """:func:`floating_rnea` of any moving base (model coordinates); ID adds arm * dv."""
    n = ints.shape[0]
    return moving_rnea_into(ints, reals, origin, planar, pk, arm, q, v, dv, mode, tol, out,
                            np.empty(n + 1), np.empty(n), np.empty(n), np.empty(n),
                            floating_rnea_work(ints, reals))


@jit
def moving_rnea_into(ints, reals, origin, planar, pk, arm, q, v, dv, mode, tol, out, qf, vf,
                     af, tk, work):
    """:func:`moving_rnea` with work arrays qf (n + 1), vf, af, tk (n) and floating_rnea's."""
    n, nv = ints.shape[0], out.shape[0]
    if pk.shape[0] != n or q.shape[0] != nv + 1 or v.shape[0] != nv or dv.shape[0] != nv \
            or arm.shape[0] != nv:
        return False
    if not lift_configuration(planar, pk, q, tol, qf):
        return False
    if not (lift(pk, v, False, vf) and lift(pk, dv, False, af)
            and floating_rnea_into(ints, reals, origin, qf, vf, af, mode, tol, tk, work)):
        return False
    project_vector(pk, tk, out)
    if mode == ID:
        for i in range(nv):
            out[i] += arm[i] * dv[i]
    return True


@jit
def moving_crba(ints, reals, planar, pk, arm, q, tol, out):
    """P^T M P + diag(arm) of any moving base into out; False on a bad q."""
    n = ints.shape[0]
    return moving_crba_into(ints, reals, planar, pk, arm, q, tol, out, np.empty(n + 1),
                            np.empty((n, n)), np.empty(n), np.empty((n, NC)))


@jit
def moving_crba_into(ints, reals, planar, pk, arm, q, tol, out, qf, Mk, qk, wk):
    """:func:`moving_crba` with work arrays qf (n + 1), Mk (n, n), qk (n) and wk (n, NC)."""
    n, nv = ints.shape[0], out.shape[0]
    if pk.shape[0] != n or q.shape[0] != nv + 1 or arm.shape[0] != nv:
        return False
    if not (lift_configuration(planar, pk, q, tol, qf)
            and floating_crba_into(ints, reals, qf, tol, Mk, qk, wk)):
        return False
    project_matrix(pk, Mk, arm, out)
    return True


@jit
def moving_forward_dynamics(ints, reals, origin, planar, pk, arm, q, v, tau, tol, out):
    """Write v' = M^-1 (tau - h) of any moving base into out; False on bad input, singular M."""
    nv = out.shape[0]
    return _moving_forward_dynamics(ints, reals, origin, planar, pk, arm, q, v, tau, tol,
                                    model_tree(ints, pk, nv), out, moving_fd_work(ints, reals, nv))


@jit
def moving_fd_work(ints, reals, nv):
    """Return the work arrays of :func:`_moving_forward_dynamics` (nv model velocities)."""
    n = ints.shape[0]
    return (np.empty(n + 1), np.empty(n), np.empty(n), np.empty(n),     # qf, vf, af, tk
            floating_rnea_work(ints, reals),
            np.empty((n, n)), np.empty(n), np.empty((n, NC)),          # Mk, qk, wk: the CRBA
            np.empty((nv, nv)), np.empty(nv), np.zeros(nv),            # M, h, a zero v'
            np.zeros((nv, ints.shape[1]), dtype=np.int64),            # the tree's parents
            np.zeros((nv, nv)), np.zeros((nv, nv)),                    # M reordered, L
            np.empty(nv), np.empty(nv), np.empty(nv))                  # rhs, y, x


@inline
def _moving_forward_dynamics(ints, reals, origin, planar, pk, arm, q, v, tau, tol, shape, out,
                             work):
    """
    :func:`moving_forward_dynamics` with ``shape`` = :func:`model_tree`'s result and work.

    ``work``: :func:`moving_fd_work`, reused call after call (its L and reordered M are
    written on the tree's pattern only, zero elsewhere).
    """
    nv = out.shape[0]
    if tau.shape[0] != nv:
        return False
    qf, vf, af, tk, rnea_work, Mk, qk, wk, M, h, zeros, lints, Mt, L, rhs, y, x = work
    if not (moving_crba_into(ints, reals, planar, pk, arm, q, tol, M, qf, Mk, qk, wk)
            and moving_rnea_into(ints, reals, origin, planar, pk, arm, q, v, zeros, ID, tol, h,
                                 qf, vf, af, tk, rnea_work)):
        return False
    for i in range(nv):
        if not np.isfinite(tau[i]):
            return False
        h[i] = tau[i] - h[i]
    tree, parent, order = shape
    if tree:        # M keeps the tree's sparsity: M = L^T L in a parents-first order
        for k in range(nv):     # M is zero off the pattern: Mt is M reordered
            lints[k, PARENT] = parent[k]
            rhs[k] = h[order[k]]
            Mt[k, k] = M[order[k], order[k]]
            j = parent[k]
            while j >= 0:
                Mt[k, j] = Mt[j, k] = M[order[k], order[j]]
                j = parent[j]
        if not tree_solve_into(lints, Mt, 1e-12, L, rhs, y, x):
            return False
        for k in range(nv):
            out[order[k]] = x[k]
        return True
    ok, dense = cholesky_factor(M, 1e-12)      # mimic joints couple branches: dense
    if not ok:
        return False
    cholesky_substitute(dense, h, out)
    return True


@jit
def model_tree(ints, pk, nv):
    """
    Return (ok, parent, order): the model's coordinates as a tree, parents first.

    ok where every model velocity is followed by exactly one kernel coordinate (no mimic
    joint: a planar base's x, y, t and the joints), so that P^T M P keeps the tree's
    sparsity; order[k]: the model coordinate at position k (kernel internal order), parent[k]
    the position of its nearest ancestor that is a model coordinate (-1: none).
    """
    n = ints.shape[0]
    kernel = np.full(nv, -1, dtype=np.int64)
    parent, order = np.full(nv, -1, dtype=np.int64), np.empty(nv, dtype=np.int64)
    for f in range(n):
        a = int(pk[f, 0])
        if a >= 0:
            if a >= nv or kernel[a] >= 0:
                return False, parent, order
            kernel[a] = f
    internal = np.empty(nv, dtype=np.int64)
    for a in range(nv):
        if kernel[a] < 0:
            return False, parent, order
        internal[a] = ints[kernel[a], PERM]
    order[:] = np.argsort(internal)
    position = np.full(n, -1, dtype=np.int64)
    for k in range(nv):
        position[internal[order[k]]] = k
    for k in range(nv):
        i = ints[internal[order[k]], PARENT]
        while i >= 0 and position[i] < 0:
            i = ints[i, PARENT]
        parent[k] = position[i] if i >= 0 else -1
    return True, parent, order


@jit
def _bracket(x, m):
    """Return ad_x m of two twists (linear, angular): (w_x x m_v + v_x x m_w, w_x x m_w)."""
    vx, wx = (x[0], x[1], x[2]), (x[3], x[4], x[5])
    mv_, mw = (m[0], m[1], m[2]), (m[3], m[4], m[5])
    lin, ang = add(cross(wx, mv_), cross(vx, mw)), cross(wx, mw)
    return (lin[0], lin[1], lin[2], ang[0], ang[1], ang[2])


@jit
def _dexp_inverse(planar, xi, w, out):
    """
    Write xi' of q0 (+) xi(t) moving with velocity w into out (RKMK, order 4).

    The base block: w + [xi, w] / 2 + [xi, [xi, w]] / 12 (the planar twists (vx, vy, wz) a
    subalgebra); the joints: w itself. Mirrors ``MovingBase._dexp_inverse``.
    """
    out[:] = w
    if planar:
        x6 = (xi[0], xi[1], 0.0, 0.0, 0.0, xi[2])
        w6 = (w[0], w[1], 0.0, 0.0, 0.0, w[2])
    else:
        x6 = (xi[0], xi[1], xi[2], xi[3], xi[4], xi[5])
        w6 = (w[0], w[1], w[2], w[3], w[4], w[5])
    a = _bracket(x6, w6)
    b = _bracket(x6, a)
    r = (w6[0] + 0.5 * a[0] + b[0] / 12.0, w6[1] + 0.5 * a[1] + b[1] / 12.0,
         w6[2] + 0.5 * a[2] + b[2] / 12.0, w6[3] + 0.5 * a[3] + b[3] / 12.0,
         w6[4] + 0.5 * a[4] + b[4] / 12.0, w6[5] + 0.5 * a[5] + b[5] / 12.0)
    if planar:
        out[0], out[1], out[2] = r[0], r[1], r[5]
    else:
        for i in range(6):
            out[i] = r[i]


@inline
def _damped_forward_dynamics(ints, reals, origin, planar, pk, arm, same, q, v, tau, damping,
                             tol, shape, force, fwork, mwork, out):
    """
    Write v' = forward dynamics at (q, v) under tau - damping v into out (force: work).

    ``same`` (a floating base whose coordinates are the kernel's, no mimic joints): the
    floating kernel, :func:`floating_forward_dynamics_into` with fwork, as the facade's
    forward_dynamics; otherwise the moving one with mwork (:func:`moving_fd_work`).
    """
    for i in range(v.shape[0]):
        force[i] = tau[i] - damping[i] * v[i]
    if same:
        return floating_forward_dynamics_into(ints, reals, origin, q, v, force, tol, out, fwork)
    return _moving_forward_dynamics(ints, reals, origin, planar, pk, arm, q, v, force, tol,
                                    shape, out, mwork)


@inline
def _rkmk_stage(ints, reals, origin, planar, pk, arm, same, x, w, a, xi, h, tau, damping, tol,
                shape, qa, force, fwork, mwork, xi_next, a_next):
    """
    One RKMK4 stage: v_s = w + h a, xi_next = dexp^-1(h xi, v_s), a_next at (x (+) xi h, v_s).

    ``qa``, ``force``, ``fwork``, ``mwork``: work arrays; False on a bad input or a singular M.
    """
    v_s = w + h * a
    _dexp_inverse(planar, h * xi, v_s, xi_next)
    return (moving_integrate(planar, x, xi, h, tol, qa)
            and _damped_forward_dynamics(ints, reals, origin, planar, pk, arm, same, qa, v_s,
                                         tau, damping, tol, shape, force, fwork, mwork,
                                         a_next))


@jit
def moving_simulate(ints, reals, origin, planar, pk, arm, same, q, v, tau, damping, dt, steps,
                    tol, q_out, v_out):
    """
    Write (q, v) after ``steps`` RKMK4 steps of dt under tau held into q_out, v_out.

    v' = forward dynamics under tau - damping v (:func:`_damped_forward_dynamics`), q moved
    by :func:`moving_integrate` (Runge-Kutta-Munthe-Kaas in the chart q (+) xi: fourth order
    on the manifold). Mirrors ``MovingBase.simulate``; False on a bad input or a singular M.
    """
    nq, nv = q.shape[0], v.shape[0]
    if nq != nv + 1 or tau.shape[0] != nv or damping.shape[0] != nv or q_out.shape[0] != nq \
            or v_out.shape[0] != nv or steps < 0 or not dt > 0.0 or not np.isfinite(dt):
        return False
    for i in range(nv):
        if not (np.isfinite(tau[i]) and np.isfinite(damping[i])):
            return False
    x, w, x_new = q.copy(), v.copy(), np.empty(nq)
    a1, a2, a3, a4 = np.empty(nv), np.empty(nv), np.empty(nv), np.empty(nv)
    x2, x3, x4, xi = np.empty(nv), np.empty(nv), np.empty(nv), np.empty(nv)
    qa, force = np.empty(nq), np.empty(nv)
    shape = model_tree(ints, pk, nv)        # the model's, once for every stage
    fwork = floating_fd_work(ints, reals)
    mwork = moving_fd_work(ints, reals, nv)
    for _ in range(steps):
        if not (_damped_forward_dynamics(ints, reals, origin, planar, pk, arm, same, x, w, tau,
                                         damping, tol, shape, force, fwork, mwork, a1)
                and _rkmk_stage(ints, reals, origin, planar, pk, arm, same, x, w, a1, w,
                                0.5 * dt, tau, damping, tol, shape, qa, force, fwork, mwork,
                                x2, a2)
                and _rkmk_stage(ints, reals, origin, planar, pk, arm, same, x, w, a2, x2,
                                0.5 * dt, tau, damping, tol, shape, qa, force, fwork, mwork,
                                x3, a3)
                and _rkmk_stage(ints, reals, origin, planar, pk, arm, same, x, w, a3, x3, dt,
                                tau, damping, tol, shape, qa, force, fwork, mwork, x4, a4)):
            return False
        for i in range(nv):
            xi[i] = (w[i] + 2.0 * x2[i] + 2.0 * x3[i] + x4[i]) / 6.0
        if not moving_integrate(planar, x, xi, dt, tol, x_new):
            return False
        x[:] = x_new
        for i in range(nv):
            w[i] = w[i] + dt / 6.0 * (a1[i] + 2.0 * a2[i] + 2.0 * a3[i] + a4[i])
    q_out[:] = x
    v_out[:] = w
    return True


@pjit
def moving_simulate_batch(ints, reals, origin, planar, pk, arm, same, Q, V, TAU, damping, dt,
                          steps, tol, q_out, v_out):
    """:func:`moving_simulate` over the rows of Q, V, TAU into q_out (N, nq), v_out (N, nv)."""
    N = Q.shape[0]
    if V.shape[0] != N or TAU.shape[0] != N or q_out.shape[0] != N or v_out.shape[0] != N:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        for r in range(c * N // K, (c + 1) * N // K):
            if not moving_simulate(ints, reals, origin, planar, pk, arm, same, Q[r], V[r],
                                   TAU[r], damping, dt, steps, tol, q_out[r], v_out[r]):
                ok[c] = False
                break
    return np.all(ok)


@jit
def moving_jacobian(ints, reals, sites, origin, planar, pk, q, tol, k, point, frame, out):
    """:func:`floating_jacobian` of any moving base: J P (6 x nv); False on a bad input."""
    n, nv = ints.shape[0], out.shape[1]
    if pk.shape[0] != n or q.shape[0] != nv + 1:
        return False
    qf, Jk = np.empty(n + 1), np.empty((6, n))
    if not (lift_configuration(planar, pk, q, tol, qf) and floating_jacobian(
            ints, reals, sites, origin, qf, tol, k, point, frame, Jk)):
        return False
    project_columns(pk, Jk, out)
    return True


@pjit
def moving_rnea_batch(ints, reals, origin, planar, pk, arm, Q, V, DV, mode, tol, out):
    """:func:`moving_rnea` over the rows of (N, nq) and (N, nv) arrays into out (N, nv)."""
    N = Q.shape[0]
    if V.shape[0] != N or DV.shape[0] != N or out.shape[0] != N:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    n = ints.shape[0]
    for c in numba.prange(K):       # one set of work arrays per chunk
        qf, vf, af, tk = np.empty(n + 1), np.empty(n), np.empty(n), np.empty(n)
        work = floating_rnea_work(ints, reals)
        for r in range(c * N // K, (c + 1) * N // K):
            if not moving_rnea_into(ints, reals, origin, planar, pk, arm, Q[r], V[r], DV[r],
                                    mode, tol, out[r], qf, vf, af, tk, work):
                ok[c] = False
                break
    return np.all(ok)


@pjit
def moving_crba_batch(ints, reals, planar, pk, arm, Q, tol, out):
    """:func:`moving_crba` over the rows of an (N, nq) array into out (N, nv, nv)."""
    N = Q.shape[0]
    if out.shape[0] != N:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    n = ints.shape[0]
    for c in numba.prange(K):       # one set of work arrays per chunk
        qf, Mk, qk, wk = np.empty(n + 1), np.empty((n, n)), np.empty(n), np.empty((n, NC))
        for r in range(c * N // K, (c + 1) * N // K):
            if not moving_crba_into(ints, reals, planar, pk, arm, Q[r], tol, out[r], qf, Mk, qk,
                                    wk):
                ok[c] = False
                break
    return np.all(ok)


@pjit
def moving_forward_dynamics_batch(ints, reals, origin, planar, pk, arm, Q, V, TAU, tol, out):
    """:func:`moving_forward_dynamics` over the rows of Q, V, TAU into out (N, nv)."""
    N = Q.shape[0]
    if V.shape[0] != N or TAU.shape[0] != N or out.shape[0] != N:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    nv = out.shape[1]
    shape = model_tree(ints, pk, nv)      # the model's, once for every row
    for c in numba.prange(K):
        work = moving_fd_work(ints, reals, nv)      # one set per chunk, reused row after row
        for r in range(c * N // K, (c + 1) * N // K):
            if not _moving_forward_dynamics(ints, reals, origin, planar, pk, arm, Q[r], V[r],
                                            TAU[r], tol, shape, out[r], work):
                ok[c] = False
                break
    return np.all(ok)


@jit
def moving_integrate(planar, q, v, dt, tol, out):
    """
    Write q moved by the constant velocity v for dt (q (+) v dt, Pinocchio's integrate).

    The base along the exponential of its twist (body axes), the joints by v dt; the
    quaternion is q times exp(w dt / 2) with the input's sign kept, (cos, sin) is turned.
    Mirrors ``MovingBase._integrate_readable``. False on a bad input.
    """
    nq = q.shape[0]
    if v.shape[0] != nq - 1 or out.shape[0] != nq or not np.isfinite(dt):
        return False
    for i in range(nq):
        if not np.isfinite(q[i]):
            return False
    for i in range(nq - 1):
        if not np.isfinite(v[i]):
            return False
    nb = 3 if planar else 6
    for i in range(nb + 1, nq):
        out[i] = q[i] + v[i - 1] * dt
    if planar:
        vx, vy, w = v[0] * dt, v[1] * dt, v[2] * dt
        theta = abs(w)
    else:
        vx, vy, vz = v[0] * dt, v[1] * dt, v[2] * dt
        wx, wy, wz = v[3] * dt, v[4] * dt, v[5] * dt
        theta = np.sqrt(wx * wx + wy * wy + wz * wz)
    if theta < 1e-6:        # the series of _exp6
        b, c = 0.5 - theta * theta / 24.0, 1.0 / 6.0 - theta * theta / 120.0
    else:
        sh = np.sin(0.5 * theta) / theta      # b = (1 - cos t) / t^2, no cancellation
        b = 2.0 * sh * sh
        c = (theta - np.sin(theta)) / (theta * theta * theta)
    if planar:
        co, si = q[2], q[3]
        norm = np.sqrt(co * co + si * si)
        if abs(norm - 1.0) > tol:
            return False
        co, si = co / norm, si / norm
        px = vx - b * w * vy - c * w * w * vx      # (I + b W + c W^2) v
        py = vy + b * w * vx - c * w * w * vy
        out[0] = q[0] + co * px - si * py
        out[1] = q[1] + si * px + co * py
        angle = np.arctan2(si, co) + w
        out[2], out[3] = np.cos(angle), np.sin(angle)
        return True
    x1, y1, z1, w1 = q[3], q[4], q[5], q[6]
    norm = np.sqrt(x1 * x1 + y1 * y1 + z1 * z1 + w1 * w1)
    if abs(norm - 1.0) > tol:
        return False
    x1, y1, z1, w1 = x1 / norm, y1 / norm, z1 / norm, w1 / norm
    cx, cy, cz = wy * vz - wz * vy, wz * vx - wx * vz, wx * vy - wy * vx      # w x v
    ccx, ccy, ccz = wy * cz - wz * cy, wz * cx - wx * cz, wx * cy - wy * cx   # w x (w x v)
    p = (vx + b * cx + c * ccx, vy + b * cy + c * ccy, vz + b * cz + c * ccz)
    R = base_rotation(np.eye(4), x1, y1, z1, w1)
    for r in range(3):
        out[r] = q[r] + R[r, 0] * p[0] + R[r, 1] * p[1] + R[r, 2] * p[2]
    s = 0.5 - theta * theta / 48.0 if theta < 1e-6 else np.sin(0.5 * theta) / theta
    x2, y2, z2, w2 = s * wx, s * wy, s * wz, np.cos(0.5 * theta)
    x = w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2
    y = w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2
    z = w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2
    w = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2
    n = np.sqrt(x * x + y * y + z * z + w * w)
    if x * x1 + y * y1 + z * z1 + w * w1 < 0.0:       # keep the input's sign
        n = -n
    out[3], out[4], out[5], out[6] = x / n, y / n, z / n, w / n
    return True


@jit
def moving_jacobian_derivative(ints, reals, sites, origin, planar, pk, q, v, tol, k, point,
                               frame, out):
    """
    J'(q, v) (6 x nv) of :func:`moving_jacobian` in the same frame; False on a bad input.

    Behind the base chain at zero the Jacobian in base axes, J_b, depends on the joints
    only, so its derivative J_b' is the fixed-base kernel's along the joint velocities (the
    base's set to zero). 'local': J' = J_b' (link axes). The world turns with the base:
    'local_world_aligned' J' = R ([w]x J_b + J_b') row block by row block; 'world' J' =
    Ad_T (ad(V_b) J_b + J_b') with V_b = (v_b, w) the base twist in base axes and T the base
    pose, as d/dt Ad_T = Ad_T ad(V_b).
    """
    n, nv = ints.shape[0], out.shape[1]
    if pk.shape[0] != n or q.shape[0] != nv + 1 or v.shape[0] != nv \
            or frame < WORLD or frame > LOCAL_WORLD_ALIGNED:
        return False
    for i in range(nv):
        if not np.isfinite(v[i]):
            return False
    qf, qk = np.empty(n + 1), np.empty(n)
    if not lift_configuration(planar, pk, q, tol, qf):
        return False
    ok, (x, y, z, w) = configuration(qf, tol, qk)
    if not ok:
        return False
    vk = np.empty(n)
    lift(pk, v, False, vk)
    vb, wb = (vk[0], vk[1], vk[2]), (vk[3], vk[4], vk[5])
    vk[:6] = 0.0                        # the joints' motion only
    Jb, D = np.empty((6, n)), np.empty((6, n))
    if not (jacobian(ints, reals, sites, k, point, qk, frame, Jb)
            and jacobian_derivative(ints, reals, sites, k, point, qk, vk, frame, D)):
        return False
    if frame != LOCAL:
        A = base_rotation(origin, x, y, z, w)
        R = (A[0, 0], A[0, 1], A[0, 2], A[1, 0], A[1, 1], A[1, 2], A[2, 0], A[2, 1], A[2, 2])
        for c in range(n):
            lin = (Jb[0, c], Jb[1, c], Jb[2, c])
            ang = (Jb[3, c], Jb[4, c], Jb[5, c])
            dl = cross(wb, lin)
            if frame == WORLD:
                dl = add(dl, cross(vb, ang))
            da = cross(wb, ang)
            lin = mv(R, add(dl, (D[0, c], D[1, c], D[2, c])))
            ang = mv(R, add(da, (D[3, c], D[4, c], D[5, c])))
            if frame == WORLD:          # at the world origin: + p x (R ang)
                p = (origin[0, 0] * qf[0] + origin[0, 1] * qf[1] + origin[0, 2] * qf[2]
                     + origin[0, 3], origin[1, 0] * qf[0] + origin[1, 1] * qf[1]
                     + origin[1, 2] * qf[2] + origin[1, 3], origin[2, 0] * qf[0]
                     + origin[2, 1] * qf[1] + origin[2, 2] * qf[2] + origin[2, 3])
                lin = add(lin, cross(p, ang))
            D[0, c], D[1, c], D[2, c] = lin[0], lin[1], lin[2]
            D[3, c], D[4, c], D[5, c] = ang[0], ang[1], ang[2]
    project_columns(pk, D, out)
    return True


@jit
def _spatial_inertia(wk, i, out):
    """Write the 6 x 6 spatial inertia (m, h, Io of wk row i; angular first) into out."""
    m, hx, hy, hz = wk[i, CM], wk[i, CH], wk[i, CH + 1], wk[i, CH + 2]
    for r in range(3):
        for c in range(3):
            out[r, c] = wk[i, CI + 3 * r + c]
            out[3 + r, 3 + c] = m if r == c else 0.0
    H = ((0.0, -hz, hy), (hz, 0.0, -hx), (-hy, hx, 0.0))     # [h]x
    for r in range(3):
        for c in range(3):
            out[r, 3 + c] = H[r][c]          # n = Io w + h x v
            out[3 + r, c] = -H[r][c]         # f = m v - h x w


@jit
def _motion_cross(V, a):
    """Return V x a for spatial motions (angular, linear)."""
    w, v = (V[0], V[1], V[2]), (V[3], V[4], V[5])
    aw, al = (a[0], a[1], a[2]), (a[3], a[4], a[5])
    x, y = cross(w, aw), add(cross(w, al), cross(v, aw))
    return (x[0], x[1], x[2], y[0], y[1], y[2])


@jit
def _coriolis_term(In, V, out):
    """
    Write B(I, V) = 1/2 (V x* I + (I V) xbar* - I V x), I = In (angular first), into out.

    Pinocchio's body term of computeCoriolisMatrix (algorithms.coriolis_matrix): its sum
    with its transpose is d/dt I along V.
    """
    Vx = np.zeros((6, 6))                # V x: (w x a, w x l + v x a)
    w, v = (V[0], V[1], V[2]), (V[3], V[4], V[5])
    for b in range(2):
        Vx[3 * b + 0, 3 * b + 1], Vx[3 * b + 0, 3 * b + 2] = -w[2], w[1]
        Vx[3 * b + 1, 3 * b + 0], Vx[3 * b + 1, 3 * b + 2] = w[2], -w[0]
        Vx[3 * b + 2, 3 * b + 0], Vx[3 * b + 2, 3 * b + 1] = -w[1], w[0]
    Vx[3, 1], Vx[3, 2], Vx[4, 0], Vx[4, 2], Vx[5, 0], Vx[5, 1] = -v[2], v[1], v[2], -v[0], \
        -v[1], v[0]
    f = np.zeros(6)                      # I V
    for r in range(6):
        for c in range(6):
            f[r] += In[r, c] * V[c]
    F = np.zeros((6, 6))                 # (I V) xbar*: V -> V x* f
    n_, fl = (f[0], f[1], f[2]), (f[3], f[4], f[5])
    for blk, (r0, c0) in enumerate(((0, 0), (0, 3), (3, 0))):
        x = n_ if blk == 0 else fl
        F[r0 + 0, c0 + 1], F[r0 + 0, c0 + 2] = x[2], -x[1]      # -[x]x
        F[r0 + 1, c0 + 0], F[r0 + 1, c0 + 2] = -x[2], x[0]
        F[r0 + 2, c0 + 0], F[r0 + 2, c0 + 1] = x[1], -x[0]
    for r in range(6):
        for c in range(6):
            s = F[r, c]
            for k in range(6):           # V x* = -(V x)^T
                s += -Vx[k, r] * In[k, c] - In[r, k] * Vx[k, c]
            out[r, c] = 0.5 * s


@jit
def moving_coriolis_matrix(ints, reals, planar, pk, q, v, tol, out):
    """
    Pinocchio's Coriolis matrix of any moving base (nv x nv) into out; False on bad input.

    C = sum_b J_b^T (I_b J_b' + B(I_b, V_b) J_b) (algorithms.coriolis_matrix) by columns:
    J_b's column of joint j is its axis S_j wherever b is below j, and J_b' the same column
    of V_j x S_j (the base's six columns: V_base x S), so entry (a, c), a at or above c on
    one path, is S_a . (Ic_c (V_c x S_c) + Bc_c S_c) and entry (c, a) is
    S_c . (Ic_c (V_a x S_a) + Bc_c S_a), with Ic and Bc the sums of I_b and B(I_b, V_b)
    over the subtree of c. Everything in the base frame behind the chain (C is a scalar
    product of motions and forces, the same in every frame); projected by P.
    """
    n, nv = ints.shape[0], out.shape[0]
    if pk.shape[0] != n or q.shape[0] != nv + 1 or v.shape[0] != nv or out.shape[1] != nv:
        return False
    for i in range(nv):
        if not np.isfinite(v[i]):
            return False
    qf, qk, vk = np.empty(n + 1), np.empty(n), np.empty(n)
    if not lift_configuration(planar, pk, q, tol, qf):
        return False
    ok, _ = configuration(qf, tol, qk)
    if not ok:
        return False
    lift(pk, v, False, vk)
    wk = np.empty((n, NC))
    load(ints, qk, n, wk, CQ)
    frames(ints, reals, wk, CQ, True)
    motion_subspaces(ints, reals, wk)
    S, V, dS = np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 6))
    Ic, Bc = np.empty((n, 6, 6)), np.empty((n, 6, 6))
    for i in range(n):
        for r in range(6):
            S[i, r] = wk[i, CS + r]
        u = vk[ints[i, INV]]
        par = ints[i, PARENT]
        for r in range(6):
            V[i, r] = S[i, r] * u + (V[par, r] if par >= 0 else 0.0)
        body_inertia(reals, wk, i)
        _spatial_inertia(wk, i, Ic[i])
        _coriolis_term(Ic[i], V[i], Bc[i])
    for i in range(n):                   # the base's columns turn with the base body (5)
        t = _motion_cross(V[5] if i < 6 else V[i], S[i])
        for r in range(6):
            dS[i, r] = t[r]
    for i in range(n - 1, 0, -1):
        par = ints[i, PARENT]
        if par >= 0:
            for r in range(6):
                for c in range(6):
                    Ic[par, r, c] += Ic[i, r, c]
                    Bc[par, r, c] += Bc[i, r, c]
    Ck = np.zeros((n, n))
    x, y = np.empty(6), np.empty(6)
    for c_ in range(n):
        cc = ints[c_, INV]
        for r in range(6):              # Ic_c (V_c x S_c) + Bc_c S_c
            s = 0.0
            for k in range(6):
                s += Ic[c_, r, k] * dS[c_, k] + Bc[c_, r, k] * S[c_, k]
            x[r] = s
        a = c_
        while a >= 0:
            ca = ints[a, INV]
            for r in range(6):          # Ic_c (V_a x S_a) + Bc_c S_a
                s = 0.0
                for k in range(6):
                    s += Ic[c_, r, k] * dS[a, k] + Bc[c_, r, k] * S[a, k]
                y[r] = s
            sa, sc = 0.0, 0.0
            for r in range(6):
                sa += S[a, r] * x[r]
                sc += S[c_, r] * y[r]
            Ck[ca, cc] = sa
            Ck[cc, ca] = sc
            a = ints[a, PARENT]
    project_matrix(pk, Ck, np.zeros(nv), out)
    return True


@jit
def _lifted_base(origin, planar, pk, q, tol, qk):
    """
    Fill qk (the chain at zero, the joints) from a moving base's q; ok, R, p of the base.

    R and p: the base's orientation and origin in the world (the root joint's origin times
    the pose of q).
    """
    n = qk.shape[0]
    R, p = np.eye(3), np.zeros(3)
    qf = np.empty(n + 1)
    if not lift_configuration(planar, pk, q, tol, qf):
        return False, R, p
    ok, (x, y, z, w) = configuration(qf, tol, qk)
    if not ok:
        return False, R, p
    R = base_rotation(origin, x, y, z, w)
    for r in range(3):
        p[r] = origin[r, 0] * qf[0] + origin[r, 1] * qf[1] + origin[r, 2] * qf[2] + origin[r, 3]
    return True, R, p


@jit
def _to_world(R, p, T):
    """Turn a 4 x 4 pose T in base coordinates into the world's, in place."""
    for c in range(4):
        a, b, d = T[0, c], T[1, c], T[2, c]
        for r in range(3):
            T[r, c] = R[r, 0] * a + R[r, 1] * b + R[r, 2] * d + (p[r] if c == 3 else 0.0)


@jit
def moving_link_pose(ints, reals, sites, origin, planar, pk, q, tol, k, out):
    """World pose (4 x 4) of link k of any moving base into out; False on a bad input."""
    n = ints.shape[0]
    if pk.shape[0] != n:
        return False
    qk = np.empty(n)
    ok, R, p = _lifted_base(origin, planar, pk, q, tol, qk)
    if not (ok and link_pose(ints, reals, sites, k, qk, out)):
        return False
    _to_world(R, p, out)
    return True


@jit
def moving_link_poses(ints, reals, sites, origin, planar, pk, q, tol, out):
    """World poses (L, 4, 4) of every link of any moving base into out; False on bad input."""
    n = ints.shape[0]
    if pk.shape[0] != n:
        return False
    qk = np.empty(n)
    ok, R, p = _lifted_base(origin, planar, pk, q, tol, qk)
    if not (ok and link_poses(ints, reals, sites, qk, out)):
        return False
    for i in range(out.shape[0]):
        _to_world(R, p, out[i])
    return True


@jit
def moving_center_of_mass(ints, reals, origin, planar, pk, q, tol, out):
    """Centre of mass of the whole robot (base included; world) into out; False on bad q."""
    n = ints.shape[0]
    if pk.shape[0] != n:
        return False
    qk, c = np.empty(n), np.empty(3)
    ok, R, p = _lifted_base(origin, planar, pk, q, tol, qk)
    if not (ok and center_of_mass(ints, reals, qk, False, c)):
        return False
    for r in range(3):
        out[r] = R[r, 0] * c[0] + R[r, 1] * c[1] + R[r, 2] * c[2] + p[r]
    return True


@jit
def moving_center_of_mass_jacobian(ints, reals, origin, planar, pk, q, tol, out):
    """3 x nv Jacobian of :func:`moving_center_of_mass` (world axes) into out; ok."""
    n, nv = ints.shape[0], out.shape[1]
    if pk.shape[0] != n or q.shape[0] != nv + 1:
        return False
    qk, Jb = np.empty(n), np.empty((3, n))
    ok, R, p = _lifted_base(origin, planar, pk, q, tol, qk)
    if not (ok and center_of_mass_jacobian(ints, reals, qk, False, Jb)):
        return False
    project_columns(pk, R @ Jb, out)        # world axes, then P
    return True


@jit
def moving_centroidal_momentum_matrix(ints, reals, origin, planar, pk, q, tol, out):
    """
    Write Pinocchio's A_G (6 x nv) of any moving base into out; False on a bad q.

    Rows: linear and angular momentum about the centre of mass, world axes. The base rows of
    M (the whole robot's momentum at the base origin, base axes; 004 app. B) projected by P,
    moved to the centre of mass and turned to the world.
    """
    n, nv = ints.shape[0], out.shape[1]
    if pk.shape[0] != n or q.shape[0] != nv + 1:
        return False
    qk, c, Mk = np.empty(n), np.empty(3), np.empty((n, n))
    ok, R, p = _lifted_base(origin, planar, pk, q, tol, qk)
    if not (ok and center_of_mass(ints, reals, qk, False, c)
            and _crba_row(ints, reals, qk, np.empty((n, NC)), Mk)):
        return False
    rows = np.empty((6, nv))
    project_columns(pk, Mk[:6], rows)
    for col in range(nv):
        lin = (rows[0, col], rows[1, col], rows[2, col])
        ang = add((rows[3, col], rows[4, col], rows[5, col]), cross(lin, (c[0], c[1], c[2])))
        for r in range(3):
            out[r, col] = R[r, 0] * lin[0] + R[r, 1] * lin[1] + R[r, 2] * lin[2]
            out[3 + r, col] = R[r, 0] * ang[0] + R[r, 1] * ang[1] + R[r, 2] * ang[2]
    return True


# the chain's velocity products (chain_acceleration at v' = 0) as a symmetric bilinear form
# of the base twist (vx, vy, vz, wx, wy, wz): (row, j, k, coefficient of x_j x_k)
_CHAIN_PRODUCTS = ((0, 4, 2, 1.0), (0, 5, 1, -1.0), (1, 5, 0, 1.0), (1, 3, 2, -1.0),
                   (2, 3, 1, 1.0), (2, 4, 0, -1.0), (3, 4, 5, -1.0), (4, 3, 5, 1.0),
                   (5, 3, 4, -1.0))


@jit
def moving_coriolis_star(ints, reals, planar, pk, q, tol, out):
    """
    C* (nv x nv^2) of any moving base, the symmetric matrix of the quadratic form h - G.

    Behind the chain h - G = C*_k (v_k kron v_k) + M_k c(v_k), with C*_k the chain system's
    (holonomic coordinates: kernels.coriolis_star) and c the chain's velocity products
    (:func:`chain_acceleration`); both symmetrized in their two velocity indices and
    projected by P in all three. False on a bad q.
    """
    n, nv = ints.shape[0], out.shape[0]
    if pk.shape[0] != n or q.shape[0] != nv + 1 or out.shape[1] != nv * nv:
        return False
    qf, qk = np.empty(n + 1), np.empty(n)
    if not lift_configuration(planar, pk, q, tol, qf):
        return False
    ok, _ = configuration(qf, tol, qk)
    Ck, Mk = np.empty((n, n * n)), np.empty((n, n))
    if not (ok and coriolis_star(ints, reals, qk, Ck)
            and _crba_row(ints, reals, qk, np.empty((n, NC)), Mk)):
        return False
    out[:, :] = 0.0
    for i in range(n):
        a = int(pk[i, 0])
        if a < 0:
            continue
        for j in range(n):
            b = int(pk[j, 0])
            if b < 0:
                continue
            mij = pk[i, 1] * pk[j, 1]
            for k in range(n):
                c = int(pk[k, 0])
                if c >= 0:
                    out[a, b * nv + c] += mij * pk[k, 1] * 0.5 * (Ck[i, j * n + k]
                                                                  + Ck[i, k * n + j])
        for t in range(len(_CHAIN_PRODUCTS)):
            r, j, k, s = _CHAIN_PRODUCTS[t]
            b, c = int(pk[j, 0]), int(pk[k, 0])
            if b >= 0 and c >= 0:
                x = 0.5 * s * pk[i, 1] * Mk[i, r] * pk[j, 1] * pk[k, 1]
                out[a, b * nv + c] += x
                out[a, c * nv + b] += x
    return True


@jit
def moving_difference(planar, q0, q1, tol, out):
    """
    Write v with q0 (+) v = q1 (Pinocchio's difference) into out; False on a bad input.

    The base's twist is the logarithm of T0^-1 T1 (rotation angle up to pi), the joints
    u1 - u0. Mirrors ``MovingBase._difference_readable``.
    """
    nq = q0.shape[0]
    if q1.shape[0] != nq or out.shape[0] != nq - 1:
        return False
    for i in range(nq):
        if not (np.isfinite(q0[i]) and np.isfinite(q1[i])):
            return False
    nb = 3 if planar else 6
    for i in range(nb + 1, nq):
        out[i - 1] = q1[i] - q0[i]
    if planar:
        n0, n1 = np.sqrt(q0[2] ** 2 + q0[3] ** 2), np.sqrt(q1[2] ** 2 + q1[3] ** 2)
        if abs(n0 - 1.0) > tol or abs(n1 - 1.0) > tol:
            return False
        c0, s0, c1, s1 = q0[2] / n0, q0[3] / n0, q1[2] / n1, q1[3] / n1
        dx, dy = q1[0] - q0[0], q1[1] - q0[1]
        px, py = c0 * dx + s0 * dy, -s0 * dx + c0 * dy        # R0^T (p1 - p0)
        w = np.arctan2(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1)
        theta = abs(w)
        if theta < 1e-6:
            d = 1.0 / 12.0 + theta * theta / 720.0
        else:
            d = (1.0 - 0.5 * theta / np.tan(0.5 * theta)) / (theta * theta)      # see _log6
        out[0] = px + 0.5 * w * py - d * w * w * px      # (I - W / 2 + d W^2) p
        out[1] = py - 0.5 * w * px - d * w * w * py
        out[2] = w
        return True
    a = np.empty(4)
    b = np.empty(4)
    for i in range(4):
        a[i], b[i] = q0[3 + i], q1[3 + i]
    na, nb_ = np.sqrt(a @ a), np.sqrt(b @ b)
    if abs(na - 1.0) > tol or abs(nb_ - 1.0) > tol:
        return False
    x1, y1, z1, w1 = -a[0] / na, -a[1] / na, -a[2] / na, a[3] / na      # q0^-1
    x2, y2, z2, w2 = b[0] / nb_, b[1] / nb_, b[2] / nb_, b[3] / nb_
    x = w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2                         # q0^-1 q1
    y = w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2
    z = w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2
    w = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2
    if w < 0.0:                         # the same rotation, angle up to pi
        x, y, z, w = -x, -y, -z, -w
    s = np.sqrt(x * x + y * y + z * z)
    theta = 2.0 * np.arctan2(s, w)
    k = 2.0 / w if s < 1e-12 else theta / s       # rotation vector = k (x, y, z)
    r = (k * x, k * y, k * z)
    R0 = base_rotation(np.eye(4), a[0] / na, a[1] / na, a[2] / na, a[3] / na)
    dp = (q1[0] - q0[0], q1[1] - q0[1], q1[2] - q0[2])
    p = (R0[0, 0] * dp[0] + R0[1, 0] * dp[1] + R0[2, 0] * dp[2],
         R0[0, 1] * dp[0] + R0[1, 1] * dp[1] + R0[2, 1] * dp[2],
         R0[0, 2] * dp[0] + R0[1, 2] * dp[1] + R0[2, 2] * dp[2])
    if theta < 1e-6:
        d = 1.0 / 12.0 + theta * theta / 720.0
    else:
        d = (1.0 - 0.5 * theta / np.tan(0.5 * theta)) / (theta * theta)      # see _log6
    c1 = cross(r, p)
    c2 = cross(r, c1)
    for i in range(3):                  # (I - W / 2 + d W^2) p, then the rotation vector
        out[i] = p[i] - 0.5 * c1[i] + d * c2[i]
        out[3 + i] = r[i]
    return True


@jit
def moving_acceleration(ints, reals, sites, origin, planar, pk, q, v, dv, tol, k, point,
                        frame, out):
    """
    Classical acceleration (6,) of a point on link k of any moving base; False on bad input.

    The fixed-base kernel's behind the chain (whose accelerations carry the base's velocity
    products: :func:`chain_acceleration`) in base axes, turned to the world
    ('local_world_aligned') or to the link's axes ('local'); 'world' has none (False).
    """
    n, nv = ints.shape[0], v.shape[0]
    if pk.shape[0] != n or q.shape[0] != nv + 1 or dv.shape[0] != nv \
            or (frame != LOCAL and frame != LOCAL_WORLD_ALIGNED):
        return False
    for i in range(nv):
        if not (np.isfinite(v[i]) and np.isfinite(dv[i])):
            return False
    qk, vk, ak, a = np.empty(n), np.empty(n), np.empty(n), np.empty(6)
    ok, R, p = _lifted_base(origin, planar, pk, q, tol, qk)
    if not ok:
        return False
    lift(pk, v, False, vk)
    lift(pk, dv, False, ak)
    chain_acceleration(vk, ak, ak)
    if not acceleration(ints, reals, sites, k, point, qk, vk, ak, LOCAL_WORLD_ALIGNED, a):
        return False
    if frame == LOCAL:                  # the link's axes: R_base_link^T
        T = np.empty((4, 4))
        if not link_pose(ints, reals, sites, k, qk, T):
            return False
        for r in range(3):
            R[r, 0], R[r, 1], R[r, 2] = T[0, r], T[1, r], T[2, r]
    for h in range(2):
        x, y, z = a[3 * h], a[3 * h + 1], a[3 * h + 2]
        for r in range(3):
            out[3 * h + r] = R[r, 0] * x + R[r, 1] * y + R[r, 2] * z
    return True


@jit
def _ad_apply(V, x, world):
    """
    Return ad(V) x (world) or blockdiag(w x, w x) x for spatial (linear, angular) vectors.

    ad(V) (l, a) = (w x l + v x a, w x a) with V = (v, w).
    """
    v, w = (V[0], V[1], V[2]), (V[3], V[4], V[5])
    lin, ang = (x[0], x[1], x[2]), (x[3], x[4], x[5])
    dl = cross(w, lin)
    if world:
        dl = add(dl, cross(v, ang))
    da = cross(w, ang)
    return (dl[0], dl[1], dl[2], da[0], da[1], da[2])


@jit
def moving_hessian(ints, reals, sites, origin, planar, pk, q, tol, k, point, frame, out):
    """
    6 x nv^2 Hessian of :func:`moving_jacobian`: H[:, s nv + c] = dJ[:, s]/dq_c; ok.

    The derivative along velocity direction c (the base moving as integrate(q, e_c t)). In
    the link's axes J depends on the joints only: the joints' block is the fixed-base
    kernel's behind the chain, the base columns turn with the link (-ad(J_c) J_s), the
    base directions give 0; the other frames add the link's turn (ad(J_c) J_s for 'world',
    the rotation alone for 'local_world_aligned') and are turned to the world. Mirrors
    ``MovingBase._hessian_readable``.
    """
    n, nv = ints.shape[0], q.shape[0] - 1
    if pk.shape[0] != n or out.shape[0] != 6 or out.shape[1] != nv * nv \
            or frame < WORLD or frame > LOCAL_WORLD_ALIGNED:
        return False
    qk = np.empty(n)
    ok, R, p = _lifted_base(origin, planar, pk, q, tol, qk)
    J, Hk = np.empty((6, n)), np.empty((6, n * n))
    if not (ok and jacobian(ints, reals, sites, k, point, qk, LOCAL, J)
            and hessian(ints, reals, sites, k, point, qk, LOCAL, Hk)):
        return False
    H = np.zeros((n, n, 6))             # [s, c, :]
    for s in range(6, n):
        for c in range(6, n):
            for r in range(6):
                H[s, c, r] = Hk[r, s * n + c]
    for c in range(6, n):
        Jc = (J[0, c], J[1, c], J[2, c], J[3, c], J[4, c], J[5, c])
        for s in range(6):
            t = _ad_apply(Jc, (J[0, s], J[1, s], J[2, s], J[3, s], J[4, s], J[5, s]), True)
            for r in range(6):
                H[s, c, r] = -t[r]
    if frame != LOCAL:
        T = np.empty((4, 4))
        if not link_pose(ints, reals, sites, k, qk, T):
            return False
        for c in range(n):
            Jc = (J[0, c], J[1, c], J[2, c], J[3, c], J[4, c], J[5, c])
            for s in range(n):
                t = _ad_apply(Jc, (J[0, s], J[1, s], J[2, s], J[3, s], J[4, s], J[5, s]),
                              frame == WORLD)
                for r in range(6):
                    H[s, c, r] += t[r]
        A = np.zeros((3, 3))            # the link's axes in the world: R_wb R_bl
        for r in range(3):
            for c in range(3):
                A[r, c] = R[r, 0] * T[0, c] + R[r, 1] * T[1, c] + R[r, 2] * T[2, c]
        x = (0.0, 0.0, 0.0)
        if frame == WORLD:              # the point in the world
            pb = (T[0, 3] + T[0, 0] * point[0] + T[0, 1] * point[1] + T[0, 2] * point[2],
                  T[1, 3] + T[1, 0] * point[0] + T[1, 1] * point[1] + T[1, 2] * point[2],
                  T[2, 3] + T[2, 0] * point[0] + T[2, 1] * point[1] + T[2, 2] * point[2])
            x = (R[0, 0] * pb[0] + R[0, 1] * pb[1] + R[0, 2] * pb[2] + p[0],
                 R[1, 0] * pb[0] + R[1, 1] * pb[1] + R[1, 2] * pb[2] + p[1],
                 R[2, 0] * pb[0] + R[2, 1] * pb[1] + R[2, 2] * pb[2] + p[2])
        for s in range(n):
            for c in range(n):
                lin = (H[s, c, 0], H[s, c, 1], H[s, c, 2])
                ang = (H[s, c, 3], H[s, c, 4], H[s, c, 5])
                la = (A[0, 0] * lin[0] + A[0, 1] * lin[1] + A[0, 2] * lin[2],
                      A[1, 0] * lin[0] + A[1, 1] * lin[1] + A[1, 2] * lin[2],
                      A[2, 0] * lin[0] + A[2, 1] * lin[1] + A[2, 2] * lin[2])
                aa = (A[0, 0] * ang[0] + A[0, 1] * ang[1] + A[0, 2] * ang[2],
                      A[1, 0] * ang[0] + A[1, 1] * ang[1] + A[1, 2] * ang[2],
                      A[2, 0] * ang[0] + A[2, 1] * ang[1] + A[2, 2] * ang[2])
                la = add(la, cross(x, aa))
                H[s, c, 0], H[s, c, 1], H[s, c, 2] = la[0], la[1], la[2]
                H[s, c, 3], H[s, c, 4], H[s, c, 5] = aa[0], aa[1], aa[2]
    out[:, :] = 0.0
    for s in range(n):
        a = int(pk[s, 0])
        if a < 0:
            continue
        for c in range(n):
            b = int(pk[c, 0])
            if b >= 0:
                m = pk[s, 1] * pk[c, 1]
                for r in range(6):
                    out[r, a * nv + b] += m * H[s, c, r]
    return True


@jit
def moving_constrained_forward_dynamics(ints, reals, sites, origin, planar, pk, arm, q, v,
                                        tau, tol, rows, points, dims, local, dv, lam):
    """
    :func:`floating_constrained_forward_dynamics` of any moving base (model coordinates).

    M, h and the contact rows behind the chain in kernel coordinates, projected by P
    (P^T M P + armature, P^T h, J_c P; gamma as it is), then :func:`constrained_solve`.
    """
    n, nv, m = ints.shape[0], dv.shape[0], lam.shape[0]
    if pk.shape[0] != n or q.shape[0] != nv + 1 or v.shape[0] != nv or tau.shape[0] != nv \
            or arm.shape[0] != nv:
        return False
    for i in range(nv):
        if not np.isfinite(tau[i]):
            return False
    qf, qk, vk = np.empty(n + 1), np.empty(n), np.empty(n)
    wreals = np.empty_like(reals)
    if not (lift_configuration(planar, pk, q, tol, qf) and lift(pk, v, False, vk)
            and base_frame(ints, reals, origin, qf, tol, qk, wreals)):
        return False
    norm = np.sqrt(qf[3] * qf[3] + qf[4] * qf[4] + qf[5] * qf[5] + qf[6] * qf[6])
    R = base_rotation(origin, qf[3] / norm, qf[4] / norm, qf[5] / norm, qf[6] / norm)
    a = np.empty(n)
    chain_acceleration(vk, np.zeros(n), a)
    hk, Mk, wk = np.empty(n), np.empty((n, n)), np.empty((n, NC))
    if not (_rnea_row(ints, wreals, qk, vk, a, ID, np.zeros((0, 6)), np.empty((n, NW)), hk)
            and _crba_row(ints, reals, qk, wk, Mk)):
        return False
    Jk, gamma = np.empty((m, n)), np.empty(m)
    contact_rows(ints, sites, wk, R, vk, a, rows, points, dims, local, Jk, gamma)
    M, h, J = np.empty((nv, nv)), np.empty(nv), np.empty((m, nv))
    project_matrix(pk, Mk, arm, M)
    project_vector(pk, hk, h)
    project_columns(pk, Jk, J)
    return constrained_solve(M, h, tau, J, gamma, dv, lam)


@jit
def fixed_contact_terms(ints, reals, sites, cpl, u, ud, rows, points, dims, local, J, gamma):
    """
    Write the contact rows J_c B (m x n) and drifts J_c' v of a fixed base (mimic too).

    q = B u + d, q' = B u' by ``cpl`` (kernels.coupled's format; the identity without mimic
    joints), then :func:`contact_terms` on the whole tree, the root frame being the world.
    False on a bad input: the facade then says why.
    """
    nf, n, m = ints.shape[0], u.shape[0], gamma.shape[0]
    if cpl.shape[0] != nf or ud.shape[0] != n or J.shape[0] != m or J.shape[1] != n:
        return False
    q, qd, zero = np.empty(nf), np.empty(nf), np.zeros(nf)
    if not (lift(cpl, u, True, q) and lift(cpl, ud, False, qd)):
        return False
    Jk = np.empty((m, nf))
    if not contact_terms(ints, reals, sites, np.eye(3), q, qd, zero, rows, points, dims, local,
                         Jk, gamma):
        return False
    project_columns(cpl, Jk, J)
    return True


@jit
def fixed_constrained_forward_dynamics(ints, reals, sites, cpl, arm, u, ud, tau, rows, points,
                                       dims, local, dv, lam):
    """
    Constrained forward dynamics of a fixed base in one call (user order; mimic joints too).

    q = B u + d by ``cpl`` (kernels.coupled's format; the identity without mimic joints), M,
    h and the contact rows (:func:`contact_rows`, the root frame being the world) of the
    whole tree, projected (B^T M B + armature, B^T h, J_c B), then :func:`constrained_solve`.
    False on a bad input or a singular M or Delassus matrix: the facade then says why.
    """
    return fixed_constrained_forward_dynamics_into(
        ints, reals, sites, cpl, arm, u, ud, tau, rows, points, dims, local, dv, lam,
        fixed_constrained_work(ints.shape[0], dv.shape[0], lam.shape[0]))


@inline
def fixed_constrained_work(nf, n, m):
    """Return the work of :func:`fixed_constrained_forward_dynamics_into` (nf tree joints)."""
    return ((np.empty(nf), np.empty(nf), np.zeros(nf), np.empty(nf), np.empty((nf, nf)),
             np.empty((nf, NC)), np.zeros((0, 6)), np.empty((nf, NW)), np.empty((m, nf)),
             np.empty(m), np.empty((n, n)), np.empty(n), np.empty((m, n)), np.eye(3)),
            constrained_solve_work(n, m))


@inline
def fixed_constrained_forward_dynamics_into(ints, reals, sites, cpl, arm, u, ud, tau, rows,
                                            points, dims, local, dv, lam, work):
    """:func:`fixed_constrained_forward_dynamics` with the work of a batch's chunk."""
    nf, n = ints.shape[0], dv.shape[0]
    if cpl.shape[0] != nf or u.shape[0] != n or ud.shape[0] != n or tau.shape[0] != n \
            or arm.shape[0] != n:
        return False
    for i in range(n):
        if not np.isfinite(tau[i]):
            return False
    (q, qd, zero, hk, Mk, wk, no_wrench, rw, Jk, gamma, M, h, J, eye3), solve = work
    if not (lift(cpl, u, True, q) and lift(cpl, ud, False, qd)):
        return False
    if not (_rnea_row(ints, reals, q, qd, zero, ID, no_wrench, rw, hk)
            and _crba_row(ints, reals, q, wk, Mk)):
        return False
    contact_rows(ints, sites, wk, eye3, qd, zero, rows, points, dims, local, Jk, gamma)
    project_matrix(cpl, Mk, arm, M)
    project_vector(cpl, hk, h)
    project_columns(cpl, Jk, J)
    return constrained_solve_into(M, h, tau, J, gamma, dv, lam, solve)


# ------------------------------------------------------------------ constrained batches
# One compiled call for a batch of contact states (legged rollouts, MPPI): each row is the
# single call's kernel, bit for bit, and ok[r] says whether it gave the answer. A row it
# refuses (a bad input, a singular M, redundant or contradicting contacts) is left to the
# facade's general path for that row alone: the minimum-norm lambda, or the error naming it.
@pjit
def floating_constrained_forward_dynamics_batch(ints, reals, sites, origin, Q, V, TAU, tol,
                                                rows, points, dims, local, DV, LAM, ok):
    """:func:`floating_constrained_forward_dynamics` per row of Q, V, TAU; ok[r] per row."""
    N = Q.shape[0]
    if V.shape[0] != N or TAU.shape[0] != N or DV.shape[0] != N or LAM.shape[0] != N \
            or ok.shape[0] != N:
        return False
    K = chunks(N)
    for c in numba.prange(K):
        work = floating_constrained_work(ints, reals, LAM.shape[1])    # one set per chunk
        for r in range(c * N // K, (c + 1) * N // K):
            ok[r] = floating_constrained_forward_dynamics_into(
                ints, reals, sites, origin, Q[r], V[r], TAU[r], tol, rows, points, dims, local,
                DV[r], LAM[r], work)
    return True


@pjit
def moving_constrained_forward_dynamics_batch(ints, reals, sites, origin, planar, pk, arm, Q,
                                              V, TAU, tol, rows, points, dims, local, DV, LAM,
                                              ok):
    """:func:`moving_constrained_forward_dynamics` per row of Q, V, TAU; ok[r] per row."""
    N = Q.shape[0]
    if V.shape[0] != N or TAU.shape[0] != N or DV.shape[0] != N or LAM.shape[0] != N \
            or ok.shape[0] != N:
        return False
    for r in numba.prange(N):
        ok[r] = moving_constrained_forward_dynamics(ints, reals, sites, origin, planar, pk,
                                                    arm, Q[r], V[r], TAU[r], tol, rows, points,
                                                    dims, local, DV[r], LAM[r])
    return True


@pjit
def fixed_constrained_forward_dynamics_batch(ints, reals, sites, cpl, arm, U, UD, TAU, rows,
                                             points, dims, local, DV, LAM, ok):
    """:func:`fixed_constrained_forward_dynamics` per row of U, UD, TAU; ok[r] per row."""
    N = U.shape[0]
    if UD.shape[0] != N or TAU.shape[0] != N or DV.shape[0] != N or LAM.shape[0] != N \
            or ok.shape[0] != N:
        return False
    K = chunks(N)
    for c in numba.prange(K):
        work = fixed_constrained_work(ints.shape[0], DV.shape[1], LAM.shape[1])    # per chunk
        for r in range(c * N // K, (c + 1) * N // K):
            ok[r] = fixed_constrained_forward_dynamics_into(
                ints, reals, sites, cpl, arm, U[r], UD[r], TAU[r], rows, points, dims, local,
                DV[r], LAM[r], work)
    return True


# ------------------------------------------------------------------ kinematic batches
# The batch twins of the moving base's kinematics and Coriolis terms: the single kernel per
# row (bit for bit), the rows spread over the threads; False if any row is refused (the
# facade's per-row loop then names it).
@pjit
def floating_jacobian_batch(ints, reals, sites, origin, Q, tol, k, point, frame, out):
    """:func:`floating_jacobian` per row of Q (N, nq) into out (N, 6, nv)."""
    N = Q.shape[0]
    if out.shape[0] != N:
        return False
    ok = np.ones(N, dtype=np.bool_)
    for r in numba.prange(N):
        ok[r] = floating_jacobian(ints, reals, sites, origin, Q[r], tol, k, point, frame, out[r])
    return np.all(ok)


@pjit
def moving_jacobian_batch(ints, reals, sites, origin, planar, pk, Q, tol, k, point, frame, out):
    """:func:`moving_jacobian` per row of Q (N, nq) into out (N, 6, nv)."""
    N = Q.shape[0]
    if out.shape[0] != N:
        return False
    ok = np.ones(N, dtype=np.bool_)
    for r in numba.prange(N):
        ok[r] = moving_jacobian(ints, reals, sites, origin, planar, pk, Q[r], tol, k, point,
                                frame, out[r])
    return np.all(ok)


@pjit
def moving_jacobian_derivative_batch(ints, reals, sites, origin, planar, pk, Q, V, tol, k,
                                     point, frame, out):
    """:func:`moving_jacobian_derivative` per row of Q, V into out (N, 6, nv)."""
    N = Q.shape[0]
    if V.shape[0] != N or out.shape[0] != N:
        return False
    ok = np.ones(N, dtype=np.bool_)
    for r in numba.prange(N):
        ok[r] = moving_jacobian_derivative(ints, reals, sites, origin, planar, pk, Q[r], V[r],
                                           tol, k, point, frame, out[r])
    return np.all(ok)


@pjit
def moving_acceleration_batch(ints, reals, sites, origin, planar, pk, Q, V, DV, tol, k, point,
                              frame, out):
    """:func:`moving_acceleration` per row of Q, V, DV into out (N, 6)."""
    N = Q.shape[0]
    if V.shape[0] != N or DV.shape[0] != N or out.shape[0] != N:
        return False
    ok = np.ones(N, dtype=np.bool_)
    for r in numba.prange(N):
        ok[r] = moving_acceleration(ints, reals, sites, origin, planar, pk, Q[r], V[r], DV[r],
                                    tol, k, point, frame, out[r])
    return np.all(ok)


@pjit
def moving_hessian_batch(ints, reals, sites, origin, planar, pk, Q, tol, k, point, frame, out):
    """:func:`moving_hessian` per row of Q (N, nq) into out (N, 6, nv^2)."""
    N = Q.shape[0]
    if out.shape[0] != N:
        return False
    ok = np.ones(N, dtype=np.bool_)
    for r in numba.prange(N):
        ok[r] = moving_hessian(ints, reals, sites, origin, planar, pk, Q[r], tol, k, point,
                               frame, out[r])
    return np.all(ok)


@pjit
def moving_link_pose_batch(ints, reals, sites, origin, planar, pk, Q, tol, k, out):
    """:func:`moving_link_pose` per row of Q (N, nq) into out (N, 4, 4)."""
    N = Q.shape[0]
    if out.shape[0] != N:
        return False
    ok = np.ones(N, dtype=np.bool_)
    for r in numba.prange(N):
        ok[r] = moving_link_pose(ints, reals, sites, origin, planar, pk, Q[r], tol, k, out[r])
    return np.all(ok)


@pjit
def moving_link_poses_batch(ints, reals, sites, origin, planar, pk, Q, tol, out):
    """:func:`moving_link_poses` per row of Q (N, nq) into out (N, L, 4, 4)."""
    N = Q.shape[0]
    if out.shape[0] != N:
        return False
    ok = np.ones(N, dtype=np.bool_)
    for r in numba.prange(N):
        ok[r] = moving_link_poses(ints, reals, sites, origin, planar, pk, Q[r], tol, out[r])
    return np.all(ok)


@pjit
def moving_center_of_mass_batch(ints, reals, origin, planar, pk, Q, tol, out):
    """:func:`moving_center_of_mass` per row of Q (N, nq) into out (N, 3)."""
    N = Q.shape[0]
    if out.shape[0] != N:
        return False
    ok = np.ones(N, dtype=np.bool_)
    for r in numba.prange(N):
        ok[r] = moving_center_of_mass(ints, reals, origin, planar, pk, Q[r], tol, out[r])
    return np.all(ok)


@pjit
def moving_center_of_mass_jacobian_batch(ints, reals, origin, planar, pk, Q, tol, out):
    """:func:`moving_center_of_mass_jacobian` per row of Q (N, nq) into out (N, 3, nv)."""
    N = Q.shape[0]
    if out.shape[0] != N:
        return False
    ok = np.ones(N, dtype=np.bool_)
    for r in numba.prange(N):
        ok[r] = moving_center_of_mass_jacobian(ints, reals, origin, planar, pk, Q[r], tol,
                                               out[r])
    return np.all(ok)


@pjit
def moving_centroidal_momentum_matrix_batch(ints, reals, origin, planar, pk, Q, tol, out):
    """:func:`moving_centroidal_momentum_matrix` per row of Q (N, nq) into out (N, 6, nv)."""
    N = Q.shape[0]
    if out.shape[0] != N:
        return False
    ok = np.ones(N, dtype=np.bool_)
    for r in numba.prange(N):
        ok[r] = moving_centroidal_momentum_matrix(ints, reals, origin, planar, pk, Q[r], tol,
                                                  out[r])
    return np.all(ok)


@pjit
def moving_coriolis_star_batch(ints, reals, planar, pk, Q, tol, out):
    """:func:`moving_coriolis_star` per row of Q (N, nq) into out (N, nv, nv^2)."""
    N = Q.shape[0]
    if out.shape[0] != N:
        return False
    ok = np.ones(N, dtype=np.bool_)
    for r in numba.prange(N):
        ok[r] = moving_coriolis_star(ints, reals, planar, pk, Q[r], tol, out[r])
    return np.all(ok)


@pjit
def moving_coriolis_matrix_batch(ints, reals, planar, pk, Q, V, tol, out):
    """:func:`moving_coriolis_matrix` per row of Q, V into out (N, nv, nv)."""
    N = Q.shape[0]
    if V.shape[0] != N or out.shape[0] != N:
        return False
    ok = np.ones(N, dtype=np.bool_)
    for r in numba.prange(N):
        ok[r] = moving_coriolis_matrix(ints, reals, planar, pk, Q[r], V[r], tol, out[r])
    return np.all(ok)


@pjit
def moving_integrate_batch(planar, Q, V, dt, tol, out):
    """:func:`moving_integrate` per row of Q (N, nq), V (N, nv) into out (N, nq)."""
    N = Q.shape[0]
    if V.shape[0] != N or out.shape[0] != N:
        return False
    ok = np.ones(N, dtype=np.bool_)
    for r in numba.prange(N):
        ok[r] = moving_integrate(planar, Q[r], V[r], dt, tol, out[r])
    return np.all(ok)


@pjit
def moving_difference_batch(planar, Q0, Q1, tol, out):
    """:func:`moving_difference` per row of Q0, Q1 (N, nq) into out (N, nv)."""
    N = Q0.shape[0]
    if Q1.shape[0] != N or out.shape[0] != N:
        return False
    ok = np.ones(N, dtype=np.bool_)
    for r in numba.prange(N):
        ok[r] = moving_difference(planar, Q0[r], Q1[r], tol, out[r])
    return np.all(ok)


@jit
def moving_mass_matrix_derivative(ints, reals, planar, pk, q, tol, out):
    """
    dM/dq (nv, nv, nv) of any moving base into out: dM_ij/dq_k along integrate(q, e_k t).

    The kernel's dM/dq behind the base chain at zero, its base columns zero (moving the
    base moves the tree rigidly), projected by P on every index. False on a bad q.
    """
    n, nv = ints.shape[0], out.shape[0]
    if pk.shape[0] != n or q.shape[0] != nv + 1:
        return False
    qf, qk, dMk = np.empty(n + 1), np.empty(n), np.empty((n, n, n))
    if not lift_configuration(planar, pk, q, tol, qf):
        return False
    ok, _ = configuration(qf, tol, qk)
    if not (ok and mass_matrix_derivative(ints, reals, qk, dMk)):
        return False
    for a in range(n):
        for b in range(n):
            for c in range(6):
                dMk[a, b, c] = 0.0
    project_cube(pk, dMk, out)
    return True


@pjit
def moving_mass_matrix_derivative_batch(ints, reals, planar, pk, Q, tol, out):
    """:func:`moving_mass_matrix_derivative` per row of Q (N, nq) into out (N, nv, nv, nv)."""
    N = Q.shape[0]
    if out.shape[0] != N:
        return False
    ok = np.ones(N, dtype=np.bool_)
    for r in numba.prange(N):
        ok[r] = moving_mass_matrix_derivative(ints, reals, planar, pk, Q[r], tol, out[r])
    return np.all(ok)


@jit
def moving_contact_terms(ints, reals, sites, origin, planar, pk, q, v, tol, rows, points, dims,
                         local, J, gamma):
    """
    Write the contact rows J_c P (m x nv) and drifts J_c' v (m) of any moving base.

    :func:`contact_terms` on the tree behind the base chain (the base's rotation turning
    its rows to the world), the columns projected by P. False on a bad input: the facade's
    general path then says why.
    """
    n, nv = ints.shape[0], J.shape[1]
    if pk.shape[0] != n or q.shape[0] != nv + 1 or v.shape[0] != nv \
            or J.shape[0] != gamma.shape[0]:
        return False
    qf, qk, vk, a = np.empty(n + 1), np.empty(n), np.empty(n), np.empty(n)
    if not (lift_configuration(planar, pk, q, tol, qf) and lift(pk, v, False, vk)):
        return False
    ok, (x, y, z, w) = configuration(qf, tol, qk)
    if not ok:
        return False
    chain_acceleration(vk, np.zeros(n), a)
    Jk = np.empty((J.shape[0], n))
    if not contact_terms(ints, reals, sites, base_rotation(origin, x, y, z, w), qk, vk, a, rows,
                         points, dims, local, Jk, gamma):
        return False
    project_columns(pk, Jk, J)
    return True


@pjit
def moving_contact_terms_batch(ints, reals, sites, origin, planar, pk, Q, V, tol, rows, points,
                               dims, local, J, gamma):
    """:func:`moving_contact_terms` per row of Q, V into J (N, m, nv), gamma (N, m)."""
    N = Q.shape[0]
    if V.shape[0] != N or J.shape[0] != N or gamma.shape[0] != N:
        return False
    ok = np.ones(N, dtype=np.bool_)
    for r in numba.prange(N):
        ok[r] = moving_contact_terms(ints, reals, sites, origin, planar, pk, Q[r], V[r], tol,
                                     rows, points, dims, local, J[r], gamma[r])
    return np.all(ok)


@pjit
def fixed_contact_terms_batch(ints, reals, sites, cpl, U, UD, rows, points, dims, local, J,
                              gamma):
    """:func:`fixed_contact_terms` per row of U, UD into J (N, m, n), gamma (N, m)."""
    N = U.shape[0]
    if UD.shape[0] != N or J.shape[0] != N or gamma.shape[0] != N:
        return False
    ok = np.ones(N, dtype=np.bool_)
    for r in numba.prange(N):
        ok[r] = fixed_contact_terms(ints, reals, sites, cpl, U[r], UD[r], rows, points, dims,
                                    local, J[r], gamma[r])
    return np.all(ok)


@jit
def moving_regressor(ints, reals, origin, planar, pk, q, v, dv, tol, out):
    """
    Write the regressor Y (nv x 10 (n - 5)) of any moving base into out; False on bad input.

    The tree's regressor behind the base chain (gravity turned to base axes, the chain's
    accelerations carrying the base's velocity products), the columns of the chain's five
    massless links dropped, the rows projected by P^T as the forces are.
    """
    n, nv = ints.shape[0], out.shape[0]
    if pk.shape[0] != n or q.shape[0] != nv + 1 or v.shape[0] != nv or dv.shape[0] != nv \
            or out.shape[1] != 10 * (n - 5):
        return False
    qf, qk, vk, dvk, a = np.empty(n + 1), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    wreals = reals.copy()
    if not (lift_configuration(planar, pk, q, tol, qf) and lift(pk, v, False, vk)
            and lift(pk, dv, False, dvk) and base_gravity(ints, reals, origin, qf, tol, qk,
                                                          wreals)):
        return False
    chain_acceleration(vk, dvk, a)
    Yk = np.empty((n, 10 * n))
    if not regressor(ints, wreals, qk, vk, a, Yk):
        return False
    out[:, :] = 0.0
    for f in range(n):
        c = int(pk[f, 0])
        if c >= 0:
            m = pk[f, 1]
            for col in range(out.shape[1]):
                out[c, col] += m * Yk[f, 50 + col]
    return True


@pjit
def moving_regressor_batch(ints, reals, origin, planar, pk, Q, V, DV, tol, out):
    """:func:`moving_regressor` per row of Q, V, DV into out (N, nv, 10 (n - 5))."""
    N = Q.shape[0]
    if V.shape[0] != N or DV.shape[0] != N or out.shape[0] != N:
        return False
    ok = np.ones(N, dtype=np.bool_)
    for r in numba.prange(N):
        ok[r] = moving_regressor(ints, reals, origin, planar, pk, Q[r], V[r], DV[r], tol, out[r])
    return np.all(ok)


# ------------------------------------------------------------ the base blocks of linearize
_PLANAR_ROWS = (0, 1, 5)        # P of a planar base: the rows of (vx, vy, wz) in a twist


@inline
def _twist(planar, x, r):
    """Return the twist (v, w) of row r of x (N, nb), the base's tangent coordinates."""
    if planar:
        return (x[r, 0], x[r, 1], 0.0), (0.0, 0.0, x[r, 2])
    return (x[r, 0], x[r, 1], x[r, 2]), (x[r, 3], x[r, 4], x[r, 5])


@inline
def _put_skew(out, r, c, a, s):
    """Add s [a x] into the 3 x 3 block of out at (r, c)."""
    out[r, c + 1] -= s * a[2]
    out[r, c + 2] += s * a[1]
    out[r + 1, c] += s * a[2]
    out[r + 1, c + 2] -= s * a[0]
    out[r + 2, c] -= s * a[1]
    out[r + 2, c + 1] += s * a[0]


@inline
def _bracket_matrix(v, w, s, out):
    """Write s ad_(v, w) = s [[w x, v x], [0, w x]] (linear rows first) into out (6, 6)."""
    out[:, :] = 0.0
    _put_skew(out, 0, 0, w, s)
    _put_skew(out, 3, 3, w, s)
    _put_skew(out, 0, 3, v, s)


@inline
def _project(planar, full, out):
    """P^T full P (nb x nb) of a 6 x 6 matrix into out."""
    nb = 3 if planar else 6
    for i in range(nb):
        fi = _PLANAR_ROWS[i] if planar else i
        for j in range(nb):
            out[i, j] = full[fi, _PLANAR_ROWS[j] if planar else j]


@jit
def base_brackets(planar, V, out):
    """
    Write P^T ad_(P v) P of each row of V (N, nb) into out (N, nb, nb).

    How the base's tangent coordinates drift with its twist (the -ad_v block of linearize's
    continuous A). Mirrors ``MovingBase._tangent_bracket_readable``.
    """
    ad = np.empty((6, 6))
    for r in range(V.shape[0]):
        v, w = _twist(planar, V, r)
        _bracket_matrix(v, w, 1.0, ad)
        _project(planar, ad, out[r])


@inline
def _mul_into(A, B, d, out):
    """Write A B / d of square matrices into out (a loop: numba would call BLAS for @)."""
    n = A.shape[0]
    for i in range(n):
        for j in range(n):
            t = 0.0
            for m in range(n):
                t += A[i, m] * B[m, j]
            out[i, j] = t / d


@jit
def base_integrate_jacobians(planar, W, Jq, Jw):
    """
    Write the base blocks of d integrate(q, w)/dq and /dw at each row of W (N, nb).

    Jq = Ad(exp(-xi)) and Jw = J_r(xi) = sum_k (-ad_xi)^k / (k + 1)!, xi = P w, both
    projected by P: mirrors ``MovingBase._integrate_jacobians_readable`` (the same series,
    the same stop).
    """
    ad, term, nxt = np.empty((6, 6)), np.empty((6, 6)), np.empty((6, 6))
    Ad, Jr = np.empty((6, 6)), np.empty((6, 6))
    S, S2, E, X = np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3))
    for r in range(W.shape[0]):
        v, w = _twist(planar, W, r)
        mv_, mw = scl(v, -1.0), scl(w, -1.0)          # exp(-xi) = (R, p)
        theta = np.sqrt(mw[0] * mw[0] + mw[1] * mw[1] + mw[2] * mw[2])
        if theta < 1e-6:        # the series of _exp6
            a = 1.0 - theta * theta / 6.0
            b, c = 0.5 - theta * theta / 24.0, 1.0 / 6.0 - theta * theta / 120.0
        else:
            a = np.sin(theta) / theta
            sh = np.sin(0.5 * theta) / theta      # b = (1 - cos t) / t^2, no cancellation
            b = 2.0 * sh * sh
            c = (theta - np.sin(theta)) / (theta * theta * theta)
        S[:, :] = 0.0
        _put_skew(S, 0, 0, mw, 1.0)
        _mul_into(S, S, 1.0, S2)
        for i in range(3):
            for j in range(3):
                one = 1.0 if i == j else 0.0
                E[i, j] = one + a * S[i, j] + b * S2[i, j]      # R
                X[i, j] = one + b * S[i, j] + c * S2[i, j]      # V, with p = V (-v)
        p = (X[0, 0] * mv_[0] + X[0, 1] * mv_[1] + X[0, 2] * mv_[2],
             X[1, 0] * mv_[0] + X[1, 1] * mv_[1] + X[1, 2] * mv_[2],
             X[2, 0] * mv_[0] + X[2, 1] * mv_[1] + X[2, 2] * mv_[2])
        S[:, :] = 0.0
        _put_skew(S, 0, 0, p, 1.0)
        _mul_into(S, E, 1.0, X)                                 # [p x] R
        Ad[:, :] = 0.0
        for i in range(3):
            for j in range(3):
                Ad[i, j] = Ad[i + 3, j + 3] = E[i, j]
                Ad[i, j + 3] = X[i, j]
        _bracket_matrix(v, w, -1.0, ad)         # -ad_xi
        for i in range(6):
            for j in range(6):
                term[i, j] = Jr[i, j] = 1.0 if i == j else 0.0
        for k in range(1, 60):      # |ad| <= |xi|: the terms fall factorially
            _mul_into(term, ad, k + 1.0, nxt)
            big = 0.0
            for i in range(6):
                for j in range(6):
                    term[i, j] = nxt[i, j]
                    Jr[i, j] += nxt[i, j]
                    big = max(big, abs(nxt[i, j]))
            if big < 1e-18:
                break
        _project(planar, Ad, Jq[r])
        _project(planar, Jr, Jw[r])
