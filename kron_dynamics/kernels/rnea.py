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
Recursive Newton-Euler inverse dynamics (seed 002), compiled.

Mirrors :mod:`kron_dynamics.algorithms.rnea`: body-frame outward pass (velocities and
accelerations, gravity as an upward acceleration of the base), inward pass (transmitted
force and moment, projected on the joint axis). Modes select the terms: ``ID`` gives
M q'' + C*(q' kron q') + G, ``GRAVITY`` G, ``CORIOLIS`` C*(q' kron q'), ``BIAS`` the sum of
the last two. At rest (``GRAVITY`` without external wrenches) the same recursion keeps only
what is not zero (:func:`gravity_pass`): gravity outward, each subtree's mass and first
moment inward.
"""

import numba
import numpy as np

from .algebra import (acc3, add, chunks, cross, dot, get3, get9, inline, jit, mtv, mv, pjit, scl,
                      set3, sub)
from .kinematics import FP, FR, frames, load
from .layout import ARM, AX, COM, CORIOLIS, GRAVITY, ID, INER, MASS, PARENT, PERM, REVOLUTE

# work array columns: frame block (R 9, p 3, parent-relative), w (3), dw (3), a (3), f (3),
# m (3), q, qd, qdd, tau
_WW, _WDW, _WA, _WF, _WM = 12, 15, 18, 21, 24
WQ, WQD, WQDD, WTAU = 27, 28, 29, 30
NW = 31


@jit
def rnea_pass(ints, reals, gscale, W, wk):
    """Newton-Euler in body frames on wk's q, qd, qdd columns; tau into wk's tau column."""
    n = ints.shape[0]
    g = (reals[n, 0] * gscale, reals[n, 1] * gscale, reals[n, 2] * gscale)
    zero = (0.0, 0.0, 0.0)
    has_w = W.shape[0] == n
    frames(ints, reals, wk, WQ, False)
    for i in range(n):
        R, r = get9(wk, i, FR), get3(wk, i, FP)
        par = ints[i, PARENT]
        if par < 0:
            wp, dwp, ap = zero, zero, (-g[0], -g[1], -g[2])
        else:
            wp, dwp, ap = get3(wk, par, _WW), get3(wk, par, _WDW), get3(wk, par, _WA)
        ao = mtv(R, add(ap, add(cross(dwp, r), cross(wp, cross(wp, r)))))
        win = mtv(R, wp)
        dwin = mtv(R, dwp)
        z = get3(reals, i, AX)
        zqd = scl(z, wk[i, WQD])
        zqdd = scl(z, wk[i, WQDD])
        if ints[i, REVOLUTE]:
            wi = add(win, zqd)
            dwi = add(add(dwin, zqdd), cross(win, zqd))
            ai = ao
        else:
            wi = win
            dwi = dwin
            ai = add(add(ao, zqdd), scl(cross(win, zqd), 2.0))
        set3(wk, i, _WW, wi)
        set3(wk, i, _WDW, dwi)
        set3(wk, i, _WA, ai)
        c = get3(reals, i, COM)
        ac = add(ai, add(cross(dwi, c), cross(wi, cross(wi, c))))
        F = scl(ac, reals[i, MASS])
        Ib = get9(reals, i, INER)
        Mo = add(add(mv(Ib, dwi), cross(wi, mv(Ib, wi))), cross(c, F))
        if has_w:
            F = sub(F, (W[i, 0], W[i, 1], W[i, 2]))
            Mo = sub(Mo, (W[i, 3], W[i, 4], W[i, 5]))
        set3(wk, i, _WF, F)
        set3(wk, i, _WM, Mo)
    for i in range(n - 1, -1, -1):
        z = get3(reals, i, AX)
        F = get3(wk, i, _WF)
        Mo = get3(wk, i, _WM)
        wk[i, WTAU] = dot(z, Mo) if ints[i, REVOLUTE] else dot(z, F)
        par = ints[i, PARENT]
        if par >= 0:
            R = get9(wk, i, FR)
            fp = mv(R, F)
            acc3(wk, par, _WF, fp)
            acc3(wk, par, _WM, add(mv(R, Mo), cross(get3(wk, i, FP), fp)))


@jit
def gravity_pass(ints, reals, wk):
    """
    G(q) by Newton-Euler at rest on wk's q column; tau into wk's tau column.

    With q' = q'' = 0 the outward pass carries only gravity, g_i = R_i^T g_parent, and the
    inward pass only each subtree's mass m and first moment h (about the body origin, body
    axes): the body's force is -m g and its moment -h x g, so tau_i = -z . (h x g_i)
    (revolute) or -z . (m g_i) (prismatic).
    """
    n = ints.shape[0]
    frames(ints, reals, wk, WQ, False)
    for i in range(n):
        R = get9(wk, i, FR)
        par = ints[i, PARENT]
        gp = (reals[n, 0], reals[n, 1], reals[n, 2]) if par < 0 else get3(wk, par, _WW)
        set3(wk, i, _WW, mtv(R, gp))
        m = reals[i, MASS]
        wk[i, _WDW] = m
        set3(wk, i, _WA, scl(get3(reals, i, COM), m))
    for i in range(n - 1, -1, -1):
        z = get3(reals, i, AX)
        g = get3(wk, i, _WW)
        m = wk[i, _WDW]
        h = get3(wk, i, _WA)
        wk[i, WTAU] = -dot(z, cross(h, g)) if ints[i, REVOLUTE] else -m * dot(z, g)
        par = ints[i, PARENT]
        if par >= 0:
            wk[par, _WDW] += m
            acc3(wk, par, _WA, add(mv(get9(wk, i, FR), h), scl(get3(wk, i, FP), m)))


@inline
def _rnea_row(ints, reals, q, qd, qdd, mode, W, wk, out):
    """One Newton-Euler evaluation in user order into out; False on a bad input."""
    n = ints.shape[0]
    if not load(ints, q, n, wk, WQ):
        return False
    if mode == GRAVITY and W.shape[0] != n:
        gravity_pass(ints, reals, wk)
        for u in range(n):
            out[u] = wk[ints[u, PERM], WTAU]
        return True
    if mode == GRAVITY:
        wk[:, WQD] = 0.0
    elif not load(ints, qd, n, wk, WQD):
        return False
    if mode == ID:
        if not load(ints, qdd, n, wk, WQDD):
            return False
    else:
        wk[:, WQDD] = 0.0
    rnea_pass(ints, reals, 0.0 if mode == CORIOLIS else 1.0, W, wk)
    for u in range(n):
        k = ints[u, PERM]
        out[u] = wk[k, WTAU] + reals[k, ARM] * wk[k, WQDD]
    return True


@jit
def rnea(ints, reals, q, qd, qdd, mode, W, out):
    """
    Newton-Euler (002) in user order into out (n,); False on a bad input.

    mode ID: M q'' + C*(q' kron q') + G - external wrenches W (internal order, (n, 6)
    body-frame, or (0, 6)), armature included; GRAVITY: G (qd, qdd ignored); CORIOLIS:
    C*(q' kron q'); BIAS: C*(q' kron q') + G (qdd ignored).
    """
    return _rnea_row(ints, reals, q, qd, qdd, mode, W, np.empty((ints.shape[0], NW)), out)


@jit
def gravity(ints, reals, q, out):
    """G(q) into out (n,) by Newton-Euler at rest: rnea's GRAVITY mode with fewer arguments."""
    return _rnea_row(ints, reals, q, q, q, GRAVITY, np.zeros((0, 6)),
                     np.empty((ints.shape[0], NW)), out)


@pjit
def rnea_batch(ints, reals, Q, Qd, Qdd, mode, out):
    """:func:`rnea` over the rows of (N, n) arrays into out (N, n); False on a bad input."""
    n = ints.shape[0]
    N = Q.shape[0]
    if Q.shape[1] != n or Qd.shape[0] != N or Qdd.shape[0] != N:
        return False
    K = chunks(N)
    ok = np.ones(K, dtype=np.bool_)
    for c in numba.prange(K):
        wk = np.empty((n, NW))
        W = np.zeros((0, 6))
        for r in range(c * N // K, (c + 1) * N // K):
            if not _rnea_row(ints, reals, Q[r], Qd[r], Qdd[r], mode, W, wk, out[r]):
                ok[c] = False
                break
    return np.all(ok)
