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
Mimic joints in one compiled call: q = B u + d, the full tree's kernel, then B^T (004 sec. 5).

URDF mimic couplings resolve to one primary per joint, so B has one non-zero per row: the
coupling array ``cpl`` (nf, 3) holds, per joint of the full tree in its user order, the
independent coordinate it follows (as a float; -1: none, as the planar base's unused chain
coordinates in kernels.floating_base, which lifts and projects with the same functions), the
multiplier and the offset. Every entry
point lifts u to q (q' = B u', q'' = B u''), runs the fixed-base kernel of the full tree and
projects: tau_u = B^T tau, M_u = B^T M B + armature, J_u = J B. Mirrors the projections of
:class:`kron_dynamics.robot_model.CoupledRobotModel`, which falls back to them in NumPy.
"""

import numba
import numpy as np

from .algebra import chunks, inline, jit, pjit
from .coriolis_star import coriolis_matrix, coriolis_star, mass_matrix_derivative
from .crba import _crba_row, centroidal_momentum_matrix, NC
from .forward_dynamics import cholesky_solve_into
from .center_of_mass import center_of_mass, center_of_mass_jacobian
from .jacobians import acceleration, hessian, jacobian, jacobian_derivative
from .kinematics import link_pose, link_poses
from .layout import BIAS, GRAVITY, ID
from .rnea import _rnea_row, NW

_NO_WRENCH = np.zeros((0, 6))


@jit
def lift(cpl, u, offset, out):
    """
    Write q = B u (+ d if offset) into out; False if u is not finite or has the wrong length.

    The right length is :func:`coordinates`' (every coordinate follows itself), so one entry
    too many is refused as one too few is.
    """
    n = u.shape[0]
    for a in range(n):
        if not np.isfinite(u[a]):
            return False
    top = -1
    for f in range(cpl.shape[0]):
        s = int(cpl[f, 0])
        if s >= n:
            return False
        top = max(top, s)
        out[f] = (0.0 if s < 0 else cpl[f, 1] * u[s]) + (cpl[f, 2] if offset else 0.0)
    return top + 1 == n


@jit
def project_vector(cpl, x, out):
    """Write B^T x into out."""
    out[:] = 0.0
    for f in range(cpl.shape[0]):
        a = int(cpl[f, 0])
        if a >= 0:
            out[a] += cpl[f, 1] * x[f]


@jit
def project_matrix(cpl, M, arm, out):
    """Write B^T M B + diag(arm) into out."""
    out[:, :] = 0.0
    nf = cpl.shape[0]
    for i in range(nf):
        a, mi = int(cpl[i, 0]), cpl[i, 1]
        if a < 0:
            continue
        for j in range(nf):
            b = int(cpl[j, 0])
            if b >= 0:
                out[a, b] += mi * cpl[j, 1] * M[i, j]
    for a in range(out.shape[0]):
        out[a, a] += arm[a]


@inline
def project_derivatives(cpl, full, arm, out):
    """Write B^T D B of the tree's (dtau/dq, dtau/dv, M), full (3, nf, nf); arm added to M."""
    none = np.zeros(out.shape[1])
    project_matrix(cpl, full[0], none, out[0])
    project_matrix(cpl, full[1], none, out[1])
    project_matrix(cpl, full[2], arm, out[2])


@jit
def project_columns(cpl, J, out):
    """Write J B into out, J with one column per joint of the full tree (any rows)."""
    out[:, :] = 0.0
    for f in range(cpl.shape[0]):
        a, m = int(cpl[f, 0]), cpl[f, 1]
        if a >= 0:
            for r in range(J.shape[0]):
                out[r, a] += m * J[r, f]


@jit
def project_cube(cpl, T, out):
    """Write out[a, b, c] = sum B_ia B_jb B_kc T[i, j, k] (T with the full tree's indices)."""
    out[:, :, :] = 0.0
    nf = cpl.shape[0]
    for i in range(nf):
        a = int(cpl[i, 0])
        if a < 0:
            continue
        for j in range(nf):
            b = int(cpl[j, 0])
            if b < 0:
                continue
            m = cpl[i, 1] * cpl[j, 1]
            for k in range(nf):
                c = int(cpl[k, 0])
                if c >= 0:
                    out[a, b, c] += m * cpl[k, 1] * T[i, j, k]


@jit
def coupled_mass_matrix_derivative(ints, reals, cpl, u, out):
    """dM_u/du (n, n, n) = dM/dq of the full tree at q = B u + d, projected; False on bad u."""
    nf, n = ints.shape[0], out.shape[0]
    if u.shape[0] != n:
        return False
    q, dM = np.empty(nf), np.empty((nf, nf, nf))
    if not (lift(cpl, u, True, q) and mass_matrix_derivative(ints, reals, q, dM)):
        return False
    project_cube(cpl, dM, out)
    return True


@pjit
def coupled_mass_matrix_derivative_batch(ints, reals, cpl, U, out):
    """:func:`coupled_mass_matrix_derivative` per row of U (N, n) into out (N, n, n, n)."""
    N = U.shape[0]
    if out.shape[0] != N:
        return False
    ok = np.ones(N, dtype=np.bool_)
    for r in numba.prange(N):
        ok[r] = coupled_mass_matrix_derivative(ints, reals, cpl, U[r], out[r])
    return np.all(ok)


@jit
def coupled_crba(ints, reals, cpl, arm, u, out):
    """M_u = B^T M(B u + d) B + armature into out (n, n); False on a bad u."""
    nf = ints.shape[0]
    if u.shape[0] != out.shape[0]:
        return False
    q, M = np.empty(nf), np.empty((nf, nf))
    if not lift(cpl, u, True, q) or not _crba_row(ints, reals, q, np.empty((nf, NC)), M):
        return False
    project_matrix(cpl, M, arm, out)
    return True


@jit
def _coupled_rnea_full(ints, reals, cpl, u, ud, udd, mode, tau):
    """Newton-Euler of the full tree at the lifted state into tau (nf,); False on bad input."""
    nf = ints.shape[0]
    return _coupled_rnea_into(ints, reals, cpl, u, ud, udd, mode, tau, np.empty(nf),
                              np.empty(nf), np.empty(nf), np.empty((nf, NW)))


@inline
def _coupled_rnea_into(ints, reals, cpl, u, ud, udd, mode, tau, q, qd, qdd, wk):
    """:func:`_coupled_rnea_full` with work arrays q, qd, qdd (nf) and wk (nf, NW)."""
    if not lift(cpl, u, True, q):
        return False
    if mode != GRAVITY and not lift(cpl, ud, False, qd):
        return False
    if mode == ID:
        if not lift(cpl, udd, False, qdd):
            return False
    else:
        qdd[:] = 0.0
    if mode == GRAVITY:
        qd[:] = 0.0
    return _rnea_row(ints, reals, q, qd, qdd, mode, _NO_WRENCH, wk, tau)


@jit
def coupled_rnea(ints, reals, cpl, arm, u, ud, udd, mode, out):
    """
    tau_u = B^T tau(B u + d, B u', B u'') (+ armature u'' for ID) into out; False on bad input.

    mode as :func:`kron_dynamics.kernels.rnea.rnea` (ID, GRAVITY, CORIOLIS, BIAS).
    """
    n = out.shape[0]
    if u.shape[0] != n or ud.shape[0] != n or udd.shape[0] != n:
        return False
    tau = np.empty(ints.shape[0])
    if not _coupled_rnea_full(ints, reals, cpl, u, ud, udd, mode, tau):
        return False
    project_vector(cpl, tau, out)
    if mode == ID:
        for a in range(n):
            out[a] += arm[a] * udd[a]
    return True


@jit
def coupled_forward_dynamics(ints, reals, cpl, arm, u, ud, tau, out):
    """Write u'' = M_u^-1 (tau - h_u) into out; False on a bad input or a singular M_u."""
    return coupled_forward_dynamics_into(ints, reals, cpl, arm, u, ud, tau, out,
                                         coupled_fd_work(ints.shape[0], out.shape[0]))


@jit
def coupled_fd_work(nf, n):
    """Return the work arrays of :func:`coupled_forward_dynamics_into` (nf joints, n coords)."""
    return (np.empty(nf), np.empty(nf), np.empty(nf), np.empty((nf, NC)), np.empty((nf, NW)),
            np.empty((nf, nf)), np.empty(nf), np.empty((n, n)), np.empty(n), np.zeros((n, n)),
            np.empty(n), np.empty(n))


@inline
def coupled_forward_dynamics_into(ints, reals, cpl, arm, u, ud, tau, out, work):
    """
    :func:`coupled_forward_dynamics` with the work arrays of :func:`coupled_fd_work`.

    M_u = B^T M B + armature (the CRBA of the full tree at q = B u + d), h_u = B^T h(q, B u')
    (its Newton-Euler), then M_u u'' = tau - h_u by Cholesky, refused as
    :func:`.forward_dynamics.cholesky_factor` refuses.
    """
    n = out.shape[0]
    if u.shape[0] != n or ud.shape[0] != n or tau.shape[0] != n:
        return False
    for a in range(n):
        if not np.isfinite(tau[a]):
            return False
    q, qd, qdd, cw, wk, Mf, tf, M, h, L, y, x = work
    if not lift(cpl, u, True, q) or not _crba_row(ints, reals, q, cw, Mf):
        return False
    project_matrix(cpl, Mf, arm, M)
    if not _coupled_rnea_into(ints, reals, cpl, u, ud, ud, BIAS, tf, q, qd, qdd, wk):
        return False
    project_vector(cpl, tf, h)
    for a in range(n):
        h[a] = tau[a] - h[a]
    if not cholesky_solve_into(M, 1e-12, L, h, y, x):
        return False
    out[:] = x
    return True


@pjit
def coupled_forward_dynamics_batch(ints, reals, cpl, arm, U, UD, TAU, out):
    """:func:`coupled_forward_dynamics` over the rows of (N, n) arrays into out; ok."""
    N, n = U.shape[0], out.shape[1]
    if UD.shape[0] != N or TAU.shape[0] != N or out.shape[0] != N:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        work = coupled_fd_work(ints.shape[0], n)     # one set per chunk, reused row after row
        for r in range(c * N // K, (c + 1) * N // K):
            if not coupled_forward_dynamics_into(ints, reals, cpl, arm, U[r], UD[r], TAU[r],
                                                 out[r], work):
                ok[c] = False
                break
    return np.all(ok)


@jit
def coupled_jacobian(ints, reals, sites, cpl, k, point, u, frame, out):
    """J_u = J(B u + d) B (6 x n) of a point on link k into out; False on a bad input."""
    nf = ints.shape[0]
    q, J = np.empty(nf), np.empty((6, nf))
    if u.shape[0] != out.shape[1] or not lift(cpl, u, True, q):
        return False
    if not jacobian(ints, reals, sites, k, point, q, frame, J):
        return False
    project_columns(cpl, J, out)
    return True


@jit
def coordinates(cpl):
    """Return n, the number of coordinates u (each follows itself: the largest column + 1)."""
    n = 0
    for f in range(cpl.shape[0]):
        n = max(n, int(cpl[f, 0]) + 1)
    return n


@jit
def coupled_link_pose(ints, reals, sites, cpl, k, u, out):
    """4 x 4 pose of link k at q = B u + d into out; False on a bad input."""
    q = np.empty(ints.shape[0])
    return lift(cpl, u, True, q) and link_pose(ints, reals, sites, k, q, out)


@jit
def coupled_link_poses(ints, reals, sites, cpl, u, out):
    """4 x 4 poses of every link at q = B u + d into out (L, 4, 4); False on a bad input."""
    q = np.empty(ints.shape[0])
    return lift(cpl, u, True, q) and link_poses(ints, reals, sites, q, out)


@jit
def coupled_jacobian_derivative(ints, reals, sites, cpl, k, point, u, ud, frame, out):
    """J_u' = J'(B u + d, B u') B (6 x n, B constant) into out; False on a bad input."""
    nf, n = ints.shape[0], out.shape[1]
    q, qd, Jd = np.empty(nf), np.empty(nf), np.empty((6, nf))
    if u.shape[0] != n or not (lift(cpl, u, True, q) and lift(cpl, ud, False, qd)):
        return False
    if not jacobian_derivative(ints, reals, sites, k, point, q, qd, frame, Jd):
        return False
    project_columns(cpl, Jd, out)
    return True


@jit
def coupled_acceleration(ints, reals, sites, cpl, k, point, u, ud, udd, frame, out):
    """Classical acceleration (6,) at q = B u + d, q' = B u', q'' = B u''; False if bad."""
    nf = ints.shape[0]
    q, qd, qdd = np.empty(nf), np.empty(nf), np.empty(nf)
    if not (lift(cpl, u, True, q) and lift(cpl, ud, False, qd) and lift(cpl, udd, False, qdd)):
        return False
    return acceleration(ints, reals, sites, k, point, q, qd, qdd, frame, out)


@jit
def coupled_center_of_mass(ints, reals, cpl, u, include_root, out):
    """Centre of mass (3,) at q = B u + d into out; False on a bad u or no mass."""
    q = np.empty(ints.shape[0])
    return lift(cpl, u, True, q) and center_of_mass(ints, reals, q, include_root, out)


@jit
def coupled_center_of_mass_jacobian(ints, reals, cpl, u, include_root, out):
    """Write the centre of mass's Jacobian in u, J_c B (3 x n), into out; False if bad."""
    nf, n = ints.shape[0], out.shape[1]
    q, J = np.empty(nf), np.empty((3, nf))
    if u.shape[0] != n or not lift(cpl, u, True, q) \
            or not center_of_mass_jacobian(ints, reals, q, include_root, J):
        return False
    project_columns(cpl, J, out)
    return True


@jit
def coupled_coriolis_matrix(ints, reals, cpl, u, ud, out):
    """C_u = B^T C(B u + d, B u') B (n x n) into out; False on a bad input."""
    nf, n = ints.shape[0], out.shape[0]
    q, qd, C = np.empty(nf), np.empty(nf), np.empty((nf, nf))
    if u.shape[0] != n or not (lift(cpl, u, True, q) and lift(cpl, ud, False, qd)) \
            or not coriolis_matrix(ints, reals, q, qd, C):
        return False
    project_matrix(cpl, C, np.zeros(n), out)
    return True


@jit
def coupled_centroidal_momentum_matrix(ints, reals, cpl, u, out):
    """A_G B (6 x n) at q = B u + d into out; False on a bad u or massless moving bodies."""
    nf, n = ints.shape[0], out.shape[1]
    q, A = np.empty(nf), np.empty((6, nf))
    if u.shape[0] != n or not lift(cpl, u, True, q) \
            or not centroidal_momentum_matrix(ints, reals, q, A):
        return False
    project_columns(cpl, A, out)
    return True


@jit
def project_hessian(cpl, H, n, out):
    """Write H_u[:, a n + c] = sum B_sa B_kc H[:, s nf + k] (rows of n^2 from rows of nf^2)."""
    nf = cpl.shape[0]
    out[:, :] = 0.0
    for s in range(nf):
        a, ms = int(cpl[s, 0]), cpl[s, 1]
        if a < 0:
            continue
        for k in range(nf):
            c, mk = int(cpl[k, 0]), cpl[k, 1]
            if c >= 0:
                w = ms * mk
                for r in range(H.shape[0]):
                    out[r, a * n + c] += w * H[r, s * nf + k]


@jit
def coupled_hessian(ints, reals, sites, cpl, k, point, u, frame, out):
    """Write the Hessian of J_u in u (6 x n^2), B^T H B per row, into out; False if bad."""
    nf, n = ints.shape[0], u.shape[0]
    q, H = np.empty(nf), np.empty((6, nf * nf))
    if out.shape[1] != n * n or not lift(cpl, u, True, q) \
            or not hessian(ints, reals, sites, k, point, q, frame, H):
        return False
    project_hessian(cpl, H, n, out)
    return True


@jit
def coupled_coriolis_star(ints, reals, cpl, u, out):
    """C*_u = B^T C*(B u + d) (B kron B) (n x n^2) into out; False on a bad u."""
    nf, n = ints.shape[0], out.shape[0]
    q, C = np.empty(nf), np.empty((nf, nf * nf))
    if u.shape[0] != n or not lift(cpl, u, True, q) \
            or not coriolis_star(ints, reals, q, C):
        return False
    out[:, :] = 0.0
    for i in range(nf):
        a, mi = int(cpl[i, 0]), cpl[i, 1]
        if a < 0:
            continue
        for j in range(nf):
            b, mj = int(cpl[j, 0]), cpl[j, 1]
            if b < 0:
                continue
            for k in range(nf):
                c, mk = int(cpl[k, 0]), cpl[k, 1]
                if c >= 0:
                    out[a, b * n + c] += mi * mj * mk * C[i, j * nf + k]
    return True


@jit
def _damped(ints, reals, cpl, arm, u, ud, tau, damping, force, out, work):
    """Write u'' under tau - damping u' into out (force: work); False if M_u is singular."""
    for i in range(ud.shape[0]):
        force[i] = tau[i] - damping[i] * ud[i]
    return coupled_forward_dynamics_into(ints, reals, cpl, arm, u, ud, force, out, work)


@jit
def coupled_rk4(ints, reals, cpl, arm, u, ud, tau, damping, dt, steps, out):
    """
    Write (u, u') after ``steps`` RK4 steps of dt, tau held, into out (2, n).

    u'' = :func:`coupled_forward_dynamics` under tau - damping u'. Mirrors the NumPy RK4 of
    ``CoupledRobotModel.simulate``; False on a bad input or a singular M_u.
    """
    n = out.shape[1]
    return coupled_rk4_into(ints, reals, cpl, arm, u, ud, tau, damping, dt, steps, out,
                            coupled_fd_work(ints.shape[0], n), np.empty((COUPLED_RK4_ROWS, n)))


# rows of coupled_rk4_into's state work s: x, v, the force, the stages' x, a (4) and v (3)
COUPLED_RK4_ROWS = 11


@inline
def coupled_rk4_into(ints, reals, cpl, arm, u, ud, tau, damping, dt, steps, out, work, s):
    """:func:`coupled_rk4` with the work arrays of :func:`coupled_fd_work` and s."""
    n = out.shape[1]
    if u.shape[0] != n or ud.shape[0] != n or tau.shape[0] != n or damping.shape[0] != n \
            or coordinates(cpl) != n or steps < 0 or not dt > 0.0 or not np.isfinite(dt):
        return False
    for i in range(n):
        if not (np.isfinite(u[i]) and np.isfinite(ud[i]) and np.isfinite(damping[i])):
            return False
    x, v, force, xs = s[0], s[1], s[2], s[3]
    a1, a2, a3, a4, v2, v3, v4 = s[4], s[5], s[6], s[7], s[8], s[9], s[10]
    for i in range(n):
        x[i], v[i] = u[i], ud[i]
    for _ in range(steps):
        if not _damped(ints, reals, cpl, arm, x, v, tau, damping, force, a1, work):
            return False
        for i in range(n):
            v2[i] = v[i] + dt / 2 * a1[i]
            xs[i] = x[i] + dt / 2 * v[i]
        if not _damped(ints, reals, cpl, arm, xs, v2, tau, damping, force, a2, work):
            return False
        for i in range(n):
            v3[i] = v[i] + dt / 2 * a2[i]
            xs[i] = x[i] + dt / 2 * v2[i]
        if not _damped(ints, reals, cpl, arm, xs, v3, tau, damping, force, a3, work):
            return False
        for i in range(n):
            v4[i] = v[i] + dt * a3[i]
            xs[i] = x[i] + dt * v3[i]
        if not _damped(ints, reals, cpl, arm, xs, v4, tau, damping, force, a4, work):
            return False
        for i in range(n):
            x[i] = x[i] + dt / 6 * (v[i] + 2 * v2[i] + 2 * v3[i] + v4[i])
            v[i] = v[i] + dt / 6 * (a1[i] + 2 * a2[i] + 2 * a3[i] + a4[i])
    out[0] = x
    out[1] = v
    return True


@pjit
def coupled_rk4_batch(ints, reals, cpl, arm, U, UD, TAU, damping, dt, steps, out):
    """:func:`coupled_rk4` over the rows of (N, n) arrays into out (N, 2, n); ok."""
    N, n = U.shape[0], out.shape[2]
    if UD.shape[0] != N or TAU.shape[0] != N or out.shape[0] != N:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):       # one set of work arrays per chunk
        work, s = coupled_fd_work(ints.shape[0], n), np.empty((COUPLED_RK4_ROWS, n))
        for r in range(c * N // K, (c + 1) * N // K):
            if not coupled_rk4_into(ints, reals, cpl, arm, U[r], UD[r], TAU[r], damping, dt,
                                    steps, out[r], work, s):
                ok[c] = False
                break
    return np.all(ok)
