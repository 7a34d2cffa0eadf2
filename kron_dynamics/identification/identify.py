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
Fit a model's inertial parameters (and joint friction) to measured joint torques.

tau = Y(q, q', q'') p + F(q', q'') f is linear in the standard inertial parameters p (10 per
body, ``RobotModel.dynamic_parameters``) and the friction parameters f. The stacked
equations are compressed first by a QR factorisation, so that the solver sees a square
problem whatever the recording's length. Two methods:

- ``'least_squares'``: the identifiable combinations (base parameters) by least squares;
  the directions the data cannot see keep the prior model's values. Exact on noise-free
  data, but nothing keeps a body physical: with noise, M(q) can lose positive
  definiteness.
- ``'physically_consistent'`` (default): one convex fit over all standard parameters with
  every body's pseudo-inertia J = [[tr(I)/2 1 - I, h], [h^T, m]] positive definite (Wensing,
  Kim and Slotine, 2017), friction >= 0, and the log-det (Bregman) divergence to the prior's
  pseudo-inertias, weighted by ``prior_weight``, so that unidentifiable directions stay near
  the user's URDF (Lee, Wensing and Park, 2019). Needs cvxpy (with Clarabel, or SCS).
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
import warnings

import numpy as np

from ..checks import real_array, real_number
from ..errors import ModelError
from .base_parameters import base_parameters, BaseParameters

FRICTION_TERMS = ('viscous', 'coulomb', 'offset', 'armature')
METHODS = ('physically_consistent', 'least_squares')
# what a recorded effort sample is: the effort at its stamp, or the effort held since the
# sample before (zero-order hold)
EFFORTS = ('instant', 'held')
# the prior's pseudo-inertia eigenvalues are floored at this fraction of its largest (real
# URDFs carry links of 1e-7 kg m^2 and massless ones: a singular prior has no divergence)
PRIOR_FLOOR = 1e-6


def friction_terms(terms) -> tuple:
    """Return the friction terms as a tuple; ValueError naming an unknown or repeated one."""
    if isinstance(terms, str) or not isinstance(terms, Iterable):
        raise ValueError(f'friction must be a list of terms from {list(FRICTION_TERMS)} (such '
                         f"as ['viscous', 'coulomb']), got {terms!r}")
    terms = tuple(terms)
    unknown = [t for t in terms if not isinstance(t, str) or t not in FRICTION_TERMS]
    if unknown:
        raise ValueError(f'unknown friction term(s) {unknown}; choose from {FRICTION_TERMS}')
    repeated = sorted({t for t in terms if terms.count(t) > 1})
    if repeated:
        raise ValueError(f'friction term(s) {repeated} given more than once: each term is one '
                         'column per joint')
    return terms


def _smooth(smooth) -> float:
    smooth = real_number(smooth, 'smooth')
    if not (np.isfinite(smooth) and smooth >= 0.0):
        raise ValueError(f"smooth must be >= 0 [rad/s or m/s] (0: sign(q') for Coulomb "
                         f'friction), got {smooth}')
    return smooth


def friction_regressor(qd, qdd, terms=('viscous', 'coulomb'), smooth: float = 0.0):
    """
    Return F (..., n, len(terms) n): per term, one column per joint (a diagonal block).

    'viscous': q'; 'coulomb': sign(q') (tanh(q'/smooth) with ``smooth`` > 0 [rad/s or m/s]);
    'offset': 1 (a torque sensor's offset); 'armature': q'' (rotor inertia).
    """
    terms, smooth = friction_terms(terms), _smooth(smooth)
    qd, qdd = real_array(qd, 'qd'), real_array(qdd, 'qdd')
    if qd is None or qdd is None or qd.ndim == 0 or qd.shape != qdd.shape:
        raise ValueError("friction_regressor: qd and qdd must be arrays of numbers of the "
                         'same shape, (n,) or (..., n), got '
                         + ', '.join('no array of numbers' if x is None else f'shape {x.shape}'
                                     for x in (qd, qdd)))
    n = qd.shape[-1]
    blocks = []
    for term in terms:
        if term == 'viscous':
            values = qd
        elif term == 'coulomb':
            values = np.tanh(qd / smooth) if smooth > 0.0 else np.sign(qd)
        elif term == 'offset':
            values = np.ones_like(qd)
        else:
            values = qdd
        blocks.append(values[..., :, None] * np.eye(n))
    if not blocks:
        return np.zeros(qd.shape + (0,))
    return np.concatenate(blocks, axis=-1)


def pseudo_inertia(p) -> np.ndarray:
    """Return a body's 4 x 4 pseudo-inertia of (m, m c, Ixx, Ixy, Iyy, Ixz, Iyz, Izz)."""
    p = real_array(p, 'p')
    if p is None or p.shape != (10,):
        raise ValueError('pseudo_inertia: p must be a body\'s 10 parameters (m, m cx, m cy, '
                         'm cz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz), got '
                         + ('no array of numbers' if p is None else f'shape {p.shape}'))
    m, h = p[0], p[1:4]
    inertia = np.array([[p[4], p[5], p[7]], [p[5], p[6], p[8]], [p[7], p[8], p[9]]])
    J = np.zeros((4, 4))
    J[:3, :3] = 0.5 * np.trace(inertia) * np.eye(3) - inertia
    J[:3, 3] = J[3, :3] = h
    J[3, 3] = m
    return J


def body_parameters(J) -> np.ndarray:
    """Return a body's 10 parameters from its 4 x 4 pseudo-inertia (pseudo_inertia's inverse)."""
    J = real_array(J, 'J')
    if J is None or J.shape != (4, 4):
        raise ValueError('body_parameters: J must be a body\'s 4 x 4 pseudo-inertia, got '
                         + ('no array of numbers' if J is None else f'shape {J.shape}'))
    if not np.isfinite(J).all():
        raise ValueError('body_parameters: J must be finite, got NaN or inf')
    if not np.allclose(J, J.T, rtol=0.0, atol=1e-12 * max(np.abs(J).max(), 1e-300)):
        raise ValueError('body_parameters: J must be symmetric (a pseudo-inertia is); '
                         f'largest J - J^T entry {np.abs(J - J.T).max():.3g}')
    sigma = J[:3, :3]
    inertia = np.trace(sigma) * np.eye(3) - sigma
    return np.array([J[3, 3], *J[:3, 3], inertia[0, 0], inertia[0, 1], inertia[1, 1],
                     inertia[0, 2], inertia[1, 2], inertia[2, 2]])


@dataclass
class Identification:
    """
    A fit: the fitted ``model``, its ``friction`` per term and joint, the base parameters.

    ``base_values`` and ``base_relative_std``: the fitted base parameters and their relative
    standard deviations (from the residual's variance, as for least squares);
    ``residual_rms``: per joint, of the fitting data.
    """

    model: object
    prior: object
    friction: dict
    base: BaseParameters
    base_values: np.ndarray
    base_relative_std: np.ndarray
    residual_rms: np.ndarray
    method: str
    smooth: float = 0.0
    terms: tuple = field(default_factory=tuple)
    solver_status: str = ''

    def predict(self, q, qd, qdd) -> np.ndarray:
        """Return the torques of the fitted model with friction (single states or batches)."""
        tau = self.model.inverse_dynamics(q, qd, qdd)
        if not self.terms:
            return tau
        if 'armature' in self.terms:     # fitted: the term below, not the model's
            tau = tau - self.model.armature * np.asarray(qdd, dtype=float)
        F = friction_regressor(qd, qdd, self.terms, self.smooth)
        f = np.concatenate([self.friction[t] for t in self.terms])
        return tau + F @ f

    def physically_consistent(self) -> np.ndarray:
        """Return, per body, True if its pseudo-inertia is positive semidefinite."""
        return np.array([np.linalg.eigvalsh(pseudo_inertia(p))[0] >= -1e-12 * max(
            1.0, np.abs(p).max()) for p in self.model.dynamic_parameters()])

    def to_urdf(self, path=None) -> str:
        """Return the prior's URDF with the fitted inertials and friction (:mod:`.export`)."""
        from .export import to_urdf
        return to_urdf(self, path)

    def to_params(self, path=None) -> str:
        """Return params YAML of armature, friction and offsets for the nodes (:mod:`.export`)."""
        from .export import to_params
        return to_params(self, path)

    def report(self) -> str:
        """Return old -> new mass and centre of mass per body, with implausible values flagged."""
        lines = [f'identification ({self.method}): {self.base.count} base parameters; residual '
                 'RMS per joint ' + ', '.join(f'{r:.4g}' for r in self.residual_rms)]
        if self.solver_status.endswith('inaccurate'):
            lines.append(f'the convex solver reports {self.solver_status}: its tolerances were '
                         'not all met (check the residual and the flags below)')
        ok = self.physically_consistent()
        bodies = zip(self.model.body_names, self.prior.dynamic_parameters(),
                     self.model.dynamic_parameters())
        for k, (name, old, new) in enumerate(bodies):
            c_old = old[1:4] / old[0] if old[0] > 0 else np.zeros(3)
            c_new = new[1:4] / new[0] if new[0] > 0 else np.zeros(3)
            flags = [] if ok[k] else ['not physically consistent']
            if new[0] > 0 and old[0] > 0 and not 0.5 <= new[0] / old[0] <= 2.0:
                flags.append('mass changed more than 2x')
            lines.append(f'{name}: mass {old[0]:.4g} -> {new[0]:.4g} kg, com '
                         f'{np.round(c_old, 4).tolist()} -> {np.round(c_new, 4).tolist()} m'
                         + (f"  [{'; '.join(flags)}]" if flags else ''))
        for term in self.terms:
            lines.append(f'{term}: ' + ', '.join(
                f'{j} {v:.4g}' for j, v in zip(self.model.joint_names, self.friction[term])))
        return '\n'.join(lines)


def identify(model, q, tau, qd=None, qdd=None, t=None, friction=('viscous', 'coulomb'),
             method: str = 'physically_consistent', prior_weight: float = 1e-6,
             smooth: float = 0.0, cutoff: float = 10.0, max_gap=None,
             effort: str = 'instant') -> Identification:
    """
    Fit the inertial parameters and friction of a fixed-base model to measured torques.

    ``q``, ``tau`` (N, n) in ``model.joint_names`` order; ``qd``, ``qdd`` likewise, or
    both None: then they come from q by zero-phase low-pass filtering (Butterworth, ``cutoff``
    Hz) and differentiation on a uniform grid, tau filtered alike (:func:`filtered`), which
    needs the sample times ``t`` (N,); a gap longer than ``max_gap`` [s] splits the
    recording there (see :func:`filtered`); ``effort``: 'instant' (a tau sample is the effort
    at its stamp) or 'held' (the effort held since the sample before, as a simulator or a
    driver applying each command until the next reports it; see :func:`filtered`).
    ``friction``: terms of :func:`friction_regressor`;
    the model's own armature is taken as known unless 'armature' is a term (then a joint
    whose rotor inertia the link parameters can mimic, as the first joint's about a fixed
    axis, keeps the model's value and its base parameter takes the difference).
    ``prior_weight`` (physically consistent fit): the weight of the log-det divergence to
    the model's own parameters, per body, against the squared torque residual relative to
    the squared torques (so the same for a small arm and a heavy machine).
    """
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f'unknown method {method!r}; choose one of {list(METHODS)}')
    _check_effort(effort)
    terms, smooth = friction_terms(friction), _smooth(smooth)
    prior_weight = real_number(prior_weight, 'prior_weight')
    if not (np.isfinite(prior_weight) and prior_weight > 0):
        raise ValueError(f'prior_weight must be > 0 (the divergence to the URDF decides what '
                         f'the data cannot see), got {prior_weight}')
    if model.nv != model.n:
        raise ModelError(f"identify: robot '{model.name}' has a {model.base} base, whose "
                         'motion and contact wrenches a recording of joint states does not '
                         'have; identify takes fixed bases (mimic joints included)')
    q, tau = _samples(q, model, 'q'), _samples(tau, model, 'tau')
    if tau.shape != q.shape:
        raise ValueError(f'tau has shape {tau.shape}, q {q.shape}: one torque per joint and '
                         'sample')
    if (qd is None) != (qdd is None):
        raise ValueError(f"identify: give both qd and qdd, or neither (then both come from q "
                         f"and the sample times t); got {'qd' if qdd is None else 'qdd'} only")
    if qd is None:
        t, q, qd, qdd, tau = filtered(t, q, tau, cutoff, max_gap, effort)
    qd, qdd = _samples(qd, model, 'qd'), _samples(qdd, model, 'qdd')
    N, n = q.shape
    Y = model.regressor(q, qd, qdd).reshape(N * n, -1)
    F_all = friction_regressor(qd, qdd, terms, smooth).reshape(N * n, -1)
    bp = base_parameters(model)
    # friction columns held at the prior's value: the armature of a joint whose rotor
    # inertia the base parameters already hold (the first joint's, about a fixed axis)
    held = np.zeros(F_all.shape[1], dtype=bool)
    f_all = np.zeros(F_all.shape[1])
    if 'armature' in terms:
        first = terms.index('armature') * n
        held[first:first + n] = bp.armature_in_span
        f_all[first:first + n] = model.armature
    known = (tau - (0.0 if 'armature' in terms else model.armature * qdd)).reshape(-1) \
        - F_all[:, held] @ f_all[held]
    F = F_all[:, ~held]
    column_terms = np.repeat(np.array(terms, dtype=object), n)[~held]
    nonnegative = [c for c, term in enumerate(column_terms)
                   if term in ('viscous', 'coulomb', 'armature')]
    k_inertial, k_friction = Y.shape[1], F.shape[1]
    # compression: one QR of [W tau], W's columns ordered base columns first, so that R's
    # leading k x k block and R[:k, -1] are the least-squares problem on the base columns
    # and the whole R the problem on every standard parameter, square whatever N
    base_columns = np.concatenate([bp.independent, k_inertial + np.arange(k_friction)])
    order = np.concatenate([base_columns, bp.dependent])
    R = np.linalg.qr(np.hstack([Y[:, bp.independent], F, Y[:, bp.dependent],
                                known.reshape(-1, 1)]), mode='r')
    k = len(base_columns)
    if N * n < 2 * k or np.linalg.cond(R[:k, :k]) > 1e12:
        cond = np.linalg.cond(R[:k, :k]) if N * n >= k else np.inf
        raise ValueError(f'identify: the data excite the {k} parameters to fit ({bp.count} '
                         f'base inertial, {k - bp.count} friction) too little ({N} samples, '
                         f'condition number of the base regressor {cond:.3g}); record a '
                         'richer motion (an excitation trajectory)')
    x = np.linalg.solve(R[:k, :k], R[:k, -1])
    prior = model.dynamic_parameters().ravel()
    if method == 'least_squares':
        beta, f = x[:bp.count], x[bp.count:]
        p = prior.copy()
        p[bp.independent] = beta - bp.combination @ prior[bp.dependent]
        status = 'least squares'
    else:
        p, f, status = _consistent_fit(R, order, k_inertial, k_friction, prior, nonnegative,
                                       prior_weight, float(known @ known))
    residual = (known - Y @ p - F @ f).reshape(N, n)
    f_all[~held] = f
    fitted = model.with_dynamic_parameters(p.reshape(-1, 10))
    if 'armature' in terms:
        # the model carries the fitted armature (a negative least-squares value as 0; the
        # friction dict and predict keep the value as fitted)
        fitted = fitted.with_armature(np.maximum(f_all[first:first + n], 0.0))
    dof = max(N * n - k, 1)
    sigma2 = float(residual.ravel() @ residual.ravel()) / dof
    Rinv = np.linalg.inv(R[:k, :k])
    std = np.sqrt(sigma2 * np.sum(Rinv ** 2, axis=1))
    beta = np.concatenate([bp.to_base(p), f])
    with np.errstate(divide='ignore', invalid='ignore'):
        rel = np.where(beta != 0.0, std / np.abs(beta), np.inf)
    parts = np.split(f_all, np.cumsum([n] * len(terms))[:-1]) if terms else []
    return Identification(fitted, model, dict(zip(terms, parts)), bp, beta[:bp.count],
                          rel[:bp.count], np.sqrt(np.mean(residual ** 2, axis=0)), method,
                          smooth, terms, status)


def _consistent_fit(R, order, k_inertial, k_friction, prior, nonnegative, prior_weight,
                    energy):
    """
    Return (p, f, solver status): the physically consistent fit (cvxpy, Clarabel or SCS).

    ``R``: the triangular factor of [W[:, order] tau] (W = [Y F], k_inertial + k_friction
    columns); ``nonnegative``: the friction columns whose values are >= 0; ``energy``: the
    sum of the squared torques fitted. The residual is taken relative to that energy, so that
    the divergence's weight means the same for a 3 kg arm and a 400 t machine (unscaled,
    the machine's 1e7 N m torques left the divergence below the solver's tolerance, and the
    directions the data cannot see went anywhere), and the whole objective in units of its
    value at the prior, so that the solver sees an optimum of order one; where the optimum is
    still far below that (the solver stops at 'optimal_inaccurate'), once more in units of
    the optimum it found.
    """
    try:
        import cvxpy as cp
    except ImportError:
        raise ModelError("identify(method='physically_consistent') needs cvxpy: pip install "
                         "'kron_dynamics[identification]' (or cvxpy clarabel), or use "
                         "method='least_squares'") from None
    nb = len(prior) // 10
    k = k_inertial + k_friction
    # R's columns back in W's order: |R_W x - r|^2 = |W x - tau|^2 - const
    R_W = np.empty((k, k))
    R_W[:, order] = R[:k, :k]
    r = R[:k, k]
    # the residual relative to the torques' energy, against the divergences, per body
    scale = np.sqrt(max(energy, 1e-300))
    A = R_W / scale
    # the solver works on x = g * (p, f) with g the columns' norms: parameters from 1e-7 kg m^2
    # to 1e8 kg m^2 (a 400 t machine) all of order one (a column the data cannot see at all
    # gets the typical norm)
    g = np.linalg.norm(A, axis=0)
    seen = g > 1e-12 * max(g.max(), 1e-300)
    g = np.where(seen, g, np.median(g[seen]) if seen.any() else 1.0)
    x = cp.Variable(k)
    p = cp.multiply(1.0 / g[:10 * nb], x[:10 * nb])
    f = cp.multiply(1.0 / g[10 * nb:], x[10 * nb:]) if k_friction else x[10 * nb:]
    objective = cp.sum_squares((A / g) @ x - r / scale)
    constraints = []
    divergence = 0
    # the objective at the prior (friction by least squares), to state the problem in units
    # of it: of order one whatever the machine, the data and the weight (a 410 t machine's
    # clean data gave 1e-4, and Clarabel stopped short, 'optimal_inaccurate', 8 % off)
    rest = r / scale - A[:, :10 * nb] @ prior
    if k_friction:
        rest = rest - A[:, 10 * nb:] @ np.linalg.lstsq(A[:, 10 * nb:], rest, rcond=None)[0]
    at_prior = float(rest @ rest)
    for j in range(nb):
        J0 = pseudo_inertia(prior[10 * j:10 * j + 10])
        w, V = np.linalg.eigh(J0)
        floor = PRIOR_FLOOR * max(w.max(), 1e-12)
        size = max(w.max(), 1e-12)      # each body's J in units of its prior's largest
        J0 = (V * np.maximum(w, floor)) @ V.T / size
        J0inv = np.linalg.inv(J0)
        at_prior += prior_weight * (4.0 - np.linalg.slogdet(J0)[1])     # its divergence
        pj = p[10 * j:10 * j + 10] / size
        Sigma = cp.bmat([
            [0.5 * (pj[6] + pj[9] - pj[4]), -pj[5], -pj[7]],
            [-pj[5], 0.5 * (pj[4] + pj[9] - pj[6]), -pj[8]],
            [-pj[7], -pj[8], 0.5 * (pj[4] + pj[6] - pj[9])]])
        h = pj[1:4]
        J = cp.bmat([[Sigma, cp.reshape(h, (3, 1), order='F')],
                     [cp.reshape(h, (1, 3), order='F'), cp.reshape(pj[0], (1, 1), order='F')]])
        divergence += -cp.log_det(J) + cp.trace(J0inv @ J)
        constraints.append(J >> 0)
    if nonnegative:
        constraints.append(f[nonnegative] >= 0)

    def solve(unit):
        """Solve with the objective in units of ``unit``; return (problem, solver or None)."""
        problem = cp.Problem(cp.Minimize((objective + prior_weight * divergence) / unit),
                             constraints)
        for solver in ('CLARABEL', 'SCS'):
            try:
                with warnings.catch_warnings():     # 'optimal_inaccurate' is reported
                    warnings.simplefilter('ignore', UserWarning)
                    problem.solve(solver=solver)
            except (cp.error.SolverError, ValueError):
                continue
            if x.value is not None and problem.status in ('optimal', 'optimal_inaccurate'):
                return problem, solver
        return problem, None

    problem, solver = solve(at_prior)
    if solver is not None:
        values, status = np.array(x.value), problem.status
        if status == 'optimal_inaccurate':
            # the optimum far below the prior's value (a prior far from the data): the
            # problem again in units of the optimum found, which the solver then reaches
            again, solver_again = solve(problem.value * at_prior)
            if solver_again is not None:
                values, status, solver = np.array(x.value), again.status, solver_again
        values = values / g
        fitted = np.concatenate([_nearest_consistent(body) for body in
                                 values[:10 * nb].reshape(nb, 10)])
        return fitted, values[10 * nb:], f'{solver.lower()}: {status}'
    raise ModelError(f'identify: the physically consistent fit failed ({problem.status}); '
                     "try method='least_squares' or a larger prior_weight")


def _nearest_consistent(p) -> np.ndarray:
    """
    Return a body's parameters with its pseudo-inertia's eigenvalues floored (> 0).

    The solver meets J >= 0 to its tolerance: a body the data cannot see can come back with
    a mass of -1e-7 times the robot's scale. Its eigenvalues are raised to 1e-12 of the
    largest, which no torque notices.
    """
    w, V = np.linalg.eigh(pseudo_inertia(p))
    J = (V * np.maximum(w, 1e-12 * max(w.max(), 1e-300))) @ V.T
    return body_parameters(0.5 * (J + J.T))


def _samples(x, model, name) -> np.ndarray:
    x = real_array(x, name)
    if x is None or x.ndim != 2 or x.shape[1] != model.n:
        raise ValueError(f'{name} must be (N, {model.n}): one row per sample, columns '
                         f'{list(model.joint_names)}; got '
                         + ('no array of numbers' if x is None else f'shape {x.shape}'))
    if not np.all(np.isfinite(x)):
        row = int(np.nonzero(~np.all(np.isfinite(x), axis=1))[0][0])
        raise ValueError(f'{name}[{row}] is not finite')
    return x


def _check_effort(effort) -> None:
    if not isinstance(effort, str) or effort not in EFFORTS:
        raise ValueError(f'unknown effort {effort!r}: a sample is the effort at its stamp '
                         f"('instant') or held since the sample before ('held'); choose one "
                         f'of {list(EFFORTS)}')


def held_on_grid(t, x, grid, dt: float) -> np.ndarray:
    """
    Return the mean over [g - dt/2, g + dt/2] of each grid point g of a held signal x.

    ``x[k]`` is held on (t[k-1], t[k]] (a zero-order hold read at the end of each interval),
    so its integral is piecewise linear between the stamps and exact by interpolation; the
    means are taken within [t[0], t[-1]] (a cell reaching past an end: over its part inside).
    """
    integral = np.concatenate([np.zeros((1, x.shape[1])),
                               np.cumsum(x[1:] * np.diff(t)[:, None], axis=0)])
    low = np.clip(grid - 0.5 * dt, t[0], t[-1])
    high = np.clip(grid + 0.5 * dt, t[0], t[-1])

    def at(s):
        return np.stack([np.interp(s, t, column) for column in integral.T], axis=1)
    return (at(high) - at(low)) / (high - low)[:, None]


def filtered(t, q, tau, cutoff, max_gap=None, effort: str = 'instant'):
    """
    Return (t, q, q', q'', tau) on a uniform grid, low-passed, the ends dropped.

    Recorded stamps jitter (a simulator or a driver publishes when its thread runs, not on a
    grid), and a filter that takes samples for a uniform grid turns that jitter into large
    accelerations: q is first interpolated (linearly) onto the grid of the median step, and
    tau too where a sample is the effort at its stamp (``effort='instant'``). Where it is
    the effort held since the sample before (``'held'``: a simulator that integrates a held
    command, or a driver that reports the command it applied, over ticks that a busy machine
    stretches), each grid point takes the held signal's mean over its cell
    (:func:`held_on_grid`): read as instant, a held sample lags the motion by half its
    interval, and the fit takes that lag, in phase with q', for viscous friction (6 % of a
    heavy machine's damping at 250 Hz, more where ticks stall). Both are then filtered by
    the same zero-phase 4th-order Butterworth (``cutoff`` Hz), so that torque and motion
    are attenuated alike, and q differentiated twice (central differences). 2 / cutoff s
    are dropped at each end (the filter's end effects).

    A gap between stamps longer than ``max_gap`` [s] (None: 0.5 / cutoff, where a straight
    line between the samples no longer follows the motion) splits the recording: each part
    is filtered alone, its ends dropped, and the parts joined; a part too short to keep
    anything is left out.
    """
    from scipy.signal import butter, filtfilt
    _check_effort(effort)
    if t is None:
        raise ValueError('identify: give qd and qdd, or the sample times t to compute them')
    t = real_array(t, 't')
    if t is None or t.shape != (q.shape[0],) or not np.all(np.diff(t) > 0):
        raise ValueError('t must be the increasing sample times, one per row of q')
    dt = float(np.median(np.diff(t)))
    nyquist = 0.5 / dt
    cutoff = real_number(cutoff, 'cutoff')
    if not 0 < cutoff < nyquist:
        raise ValueError(f'cutoff {cutoff} Hz must be between 0 and the Nyquist frequency '
                         f'{nyquist:.4g} Hz')
    max_gap = 0.5 / cutoff if max_gap is None else real_number(max_gap, 'max_gap')
    if not max_gap > 0:
        raise ValueError(f'max_gap must be > 0 [s], got {max_gap}')
    b, a = butter(4, cutoff / nyquist)
    parts = []
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(t) > max_gap) + 1, [len(t)]])
    for first, end in zip(bounds[:-1], bounds[1:]):
        ts = t[first:end]
        grid = ts[0] + dt * np.arange(int(np.floor((ts[-1] - ts[0]) / dt + 1e-9)) + 1)
        keep = (grid >= grid[0] + 2.0 / cutoff) & (grid <= grid[-1] - 2.0 / cutoff)
        # filtfilt pads 3 * (filter order + 1) samples at each end
        if keep.sum() < 2 or len(grid) <= 3 * max(len(a), len(b)):
            continue

        def on_grid(x):
            return np.stack([np.interp(grid, ts, column) for column in x[first:end].T], axis=1)
        qf = filtfilt(b, a, on_grid(q), axis=0)
        tau_grid = (held_on_grid(ts, tau[first:end], grid, dt) if effort == 'held'
                    else on_grid(tau))
        tauf = filtfilt(b, a, tau_grid, axis=0)
        qd = np.gradient(qf, dt, axis=0)
        qdd = np.gradient(qd, dt, axis=0)
        parts.append((grid[keep], qf[keep], qd[keep], qdd[keep], tauf[keep]))
    if not parts:
        gaps = len(bounds) - 2
        raise ValueError(f'identify: {t[-1] - t[0]:.3g} s of data is too short for cutoff '
                         f'{cutoff} Hz (2 / cutoff s are dropped at each end'
                         + (f' of each of the {gaps + 1} parts between gaps longer than '
                            f'max_gap {max_gap:g} s)' if gaps else ')'))
    return tuple(np.concatenate(column) for column in zip(*parts))
