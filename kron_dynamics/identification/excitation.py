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
Excitation trajectories for identification: finite Fourier series (Swevers et al., 1997).

Per joint i, with w = 2 pi ``base_frequency`` and H harmonics,

    q_i(t)  = q0_i + sum_l [a_il sin(l w t) - b_il (cos(l w t) - 1)] / (l w)
    q'_i(t) = sum_l a_il cos(l w t) + b_il sin(l w t)

so q(0) = q0 and, with sum_l a_il = 0 and sum_l l b_il = 0, the motion starts at rest
(q' = q'' = 0); over a whole number of periods it ends where it started, at rest.
:func:`excitation_trajectory` chooses a, b and q0 to make the base regressor (and the
friction columns) well conditioned, within the joints' position, velocity, acceleration and
effort limits. A :class:`FourierTrajectory` evaluates q, q', q'' at any t, saves to and
loads from YAML, and gives a ``trajectory_msgs/JointTrajectory``.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..checks import _generator, integer, real_array, real_number
from ..errors import ConfigurationError, ModelError
from .identify import _smooth, friction_regressor, friction_terms

CRITERIA = ('cond', 'logdet')
# limits for joints whose URDF gives none: +-pi rad (revolute, continuous), +-0.5 m
# (prismatic); 2 rad/s or m/s
UNLIMITED_RANGE = {'prismatic': 0.5}
UNLIMITED_VELOCITY = 2.0
# default acceleration limit: this many times the velocity limit, per second
ACCELERATION_PER_VELOCITY = 5.0


@dataclass(frozen=True)
class FourierTrajectory:
    """
    A finite Fourier series per joint: rest to rest over ``duration`` s.

    ``q0`` (n,): the start and end position; ``a``, ``b`` (n, H): the velocity's cosine and
    sine amplitudes per harmonic [rad/s or m/s]; ``base_frequency`` [Hz]; ``duration`` a
    whole number of periods. Outside [0, duration] the trajectory rests at q0.
    ``condition_number``: of the stacked base regressor on the trajectory (NaN if unknown).
    """

    joint_names: tuple
    q0: np.ndarray
    a: np.ndarray
    b: np.ndarray
    base_frequency: float
    duration: float
    condition_number: float = float('nan')

    def __post_init__(self):
        n = len(self.joint_names)
        for name in ('q0', 'a', 'b'):
            value = real_array(getattr(self, name), f'excitation: {name}', ConfigurationError)
            if value is None:
                raise ConfigurationError(f'excitation: {name} is no array of numbers')
            value = value.copy()                     # the trajectory never holds a caller's
            if value.ndim == 1 and name != 'q0' and n and value.size % n == 0:
                value = value.reshape(n, -1)
            object.__setattr__(self, name, value)
        if self.q0.shape != (n,) or self.a.ndim != 2 or self.a.shape[0] != n \
                or self.b.shape != self.a.shape:
            raise ConfigurationError(
                f'excitation: q0 must hold {n} numbers (one per joint of '
                f'{list(self.joint_names)}) and a, b {n} rows of as many harmonics; got q0 '
                f'{self.q0.shape}, a {self.a.shape}, b {self.b.shape}')
        for name in ('q0', 'a', 'b'):
            if not np.all(np.isfinite(getattr(self, name))):
                raise ConfigurationError(f'excitation: {name} is not finite')
        for name in ('base_frequency', 'duration'):
            try:
                object.__setattr__(self, name, real_number(getattr(self, name), name))
            except ValueError as err:
                raise ConfigurationError(f'excitation: {err}') from None
        periods = self.duration * self.base_frequency
        if not (0 < self.base_frequency < np.inf and 0 < self.duration < np.inf
                and abs(periods - round(periods)) < 1e-6 * max(periods, 1.0)):
            raise ConfigurationError(
                f'excitation: duration {self.duration} s must be a whole number of periods of '
                f'the base frequency {self.base_frequency} Hz, both > 0')

    @property
    def harmonics(self) -> int:
        """Return H, the number of harmonics per joint."""
        return self.a.shape[1]

    def __call__(self, t):
        """Return (q, q', q'') at time t [s] (a number: (n,) each; an array (N,): (N, n))."""
        t_in = real_array(t, 'excitation: t')
        if t_in is None:
            raise ValueError(f'excitation: t must be a number or an array of numbers [s], got '
                             f'{t!r}')
        ts = np.atleast_1d(t_in)
        if not np.all(np.isfinite(ts)):
            raise ValueError('excitation: t must be finite')
        moving = (ts > 0.0) & (ts < self.duration)
        tm = np.where(moving, ts, 0.0)
        q, qd, qdd = _evaluate(self.a, self.b, self.base_frequency, tm)
        q = self.q0 + np.where(moving[:, None], q, 0.0)
        qd, qdd = np.where(moving[:, None], qd, 0.0), np.where(moving[:, None], qdd, 0.0)
        if t_in.ndim == 0:
            return q[0], qd[0], qdd[0]
        return q, qd, qdd

    def sample(self, rate: float):
        """Return (t, q, q', q''), sampled at ``rate`` Hz from 0 to duration inclusive."""
        rate = real_number(rate, 'rate')
        if not (0 < rate < np.inf and np.isfinite(self.duration * rate)):
            raise ValueError(f'excitation: rate must be finite and > 0 [Hz], got {rate}')
        t = np.linspace(0.0, self.duration, int(round(self.duration * rate)) + 1)
        return (t, *self(t))

    def to_dict(self) -> dict:
        """Return the trajectory as plain lists and numbers (the YAML's ``excitation``)."""
        return {'joint_names': list(self.joint_names),
                'base_frequency': float(self.base_frequency),
                'duration': float(self.duration),
                'harmonics': int(self.harmonics),
                'q0': self.q0.tolist(), 'a': self.a.tolist(), 'b': self.b.tolist(),
                'condition_number': float(self.condition_number)}

    def save(self, path) -> None:
        """Write the trajectory to a YAML file (key ``excitation``)."""
        import yaml
        header = ('# kron_dynamics excitation trajectory: q_i(t) = q0_i + sum_l [a_il sin(l w t)'
                  ' - b_il (cos(l w t) - 1)] / (l w),\n# w = 2 pi base_frequency; rest to rest '
                  'over duration s (a whole number of periods)\n')
        body = yaml.safe_dump({'excitation': self.to_dict()}, sort_keys=False)
        Path(path).write_text(header + body)

    @classmethod
    def load(cls, path) -> 'FourierTrajectory':
        """Read a trajectory written by :meth:`save`; errors name the file and the field."""
        import yaml
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as e:
            raise ConfigurationError(f'excitation file {path}: cannot read it ({e})') from None
        if not isinstance(data, dict) or not isinstance(data.get('excitation'), dict):
            raise ConfigurationError(f"excitation file {path}: no 'excitation' mapping at the "
                                     'top level')
        e = data['excitation']
        fields = ('joint_names', 'base_frequency', 'duration', 'q0', 'a', 'b')
        missing = [f for f in fields if f not in e]
        if missing:
            raise ConfigurationError(f'excitation file {path}: missing {missing}')
        try:
            return cls(tuple(map(str, e['joint_names'])), e['q0'], e['a'], e['b'],
                       float(e['base_frequency']), float(e['duration']),
                       float(e.get('condition_number', float('nan'))))
        except (TypeError, ValueError) as err:
            raise ConfigurationError(f'excitation file {path}: {err}') from None
        except ConfigurationError as err:
            raise ConfigurationError(f'excitation file {path}: {err}') from None

    def joint_trajectory(self, rate: float = 50.0):
        """Return a ``trajectory_msgs/JointTrajectory`` sampled at ``rate`` Hz."""
        from builtin_interfaces.msg import Duration
        from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
        t, q, qd, qdd = self.sample(rate)
        points = []
        for k in range(len(t)):
            ns = int(round(t[k] * 1e9))
            points.append(JointTrajectoryPoint(
                positions=q[k].tolist(), velocities=qd[k].tolist(),
                accelerations=qdd[k].tolist(),
                time_from_start=Duration(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)))
        return JointTrajectory(joint_names=list(self.joint_names), points=points)


def _evaluate(a, b, base_frequency, t):
    """Return the series' (q - q0, q', q''), (N, n) each, at times t (N,)."""
    w = 2.0 * np.pi * base_frequency * np.arange(1, a.shape[1] + 1)     # (H,)
    arg = np.multiply.outer(t, w)                                       # (N, H)
    S, C = np.sin(arg), np.cos(arg)
    q = (S / w) @ a.T - ((C - 1.0) / w) @ b.T
    qd = C @ a.T + S @ b.T
    qdd = (-S * w) @ a.T + (C * w) @ b.T
    return q, qd, qdd


def _coefficients(x, n, H):
    """Return (a, b) (n, H) from the free coefficients: the rest conditions eliminate l = 1."""
    x = x.reshape(2, n, H - 1)
    a = np.concatenate([-x[0].sum(axis=1, keepdims=True), x[0]], axis=1)
    b = np.concatenate([-(x[1] * np.arange(2, H + 1)).sum(axis=1, keepdims=True), x[1]],
                       axis=1)
    return a, b


@dataclass
class _Limits:
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    effort: np.ndarray


def _limits(model, margin, max_acceleration) -> _Limits:
    lower, upper = model.position_limits
    types = [model.joints[j].type for j in model.joint_names]
    half = np.array([UNLIMITED_RANGE.get(kind, np.pi) for kind in types])
    lower = np.where(np.isfinite(lower), lower, -half)
    upper = np.where(np.isfinite(upper), upper, half)
    span = upper - lower
    velocity = model.velocity_limits
    velocity = np.where(np.isfinite(velocity) & (velocity > 0), velocity, UNLIMITED_VELOCITY)
    if max_acceleration is None:
        acceleration = ACCELERATION_PER_VELOCITY * velocity
    else:
        acceleration = real_array(max_acceleration, 'max_acceleration')
        if acceleration is None or acceleration.shape not in ((), (1,), (model.n,)):
            raise ValueError(f'max_acceleration must be one number or {model.n} (one per joint '
                             f'of {list(model.joint_names)}) [rad/s^2 or m/s^2], got '
                             f'{max_acceleration!r}')
        acceleration = np.broadcast_to(acceleration, (model.n,)).copy()
        if not np.all(acceleration > 0):
            raise ValueError(f'max_acceleration must be > 0 per joint, got {max_acceleration}')
    effort = np.where(model.effort_limits > 0, model.effort_limits, np.inf)
    keep = 1.0 - margin
    return _Limits(lower + margin * span, upper - margin * span, keep * velocity,
                   keep * acceleration, keep * effort)


class _Problem:
    """The excitation optimisation: free coefficients -> a trajectory within the limits."""

    def __init__(self, model, limits, base_frequency, H, columns, terms, smooth, criterion,
                 samples):
        self.model, self.limits, self.H = model, limits, H
        self.base_frequency = base_frequency
        self.columns, self.terms, self.smooth, self.criterion = columns, terms, smooth, criterion
        # the series has the base period: one period holds every value it takes
        self.t = np.linspace(0.0, 1.0 / base_frequency, samples, endpoint=False)

    def fit(self, x, t=None, effort=False):
        """
        Return (q0, a, b) scaled per joint into the limits, or None where effort forbids.

        ``effort``: also scale every amplitude down (by 0.8 at a time) until the torques
        are within the effort limits (the optimisation leaves it to the end: it costs an
        RNEA pass).
        """
        t = self.t if t is None else t
        n = self.model.n
        a, b = _coefficients(x, n, self.H)
        q, qd, qdd = _evaluate(a, b, self.base_frequency, t)
        lim = self.limits
        with np.errstate(divide='ignore', invalid='ignore'):
            spread = q.max(axis=0) - q.min(axis=0)
            s = np.minimum.reduce([
                np.where(spread > 0, (lim.upper - lim.lower) / spread, np.inf),
                np.where(np.abs(qd).max(axis=0) > 0, lim.velocity / np.abs(qd).max(axis=0),
                         np.inf),
                np.where(np.abs(qdd).max(axis=0) > 0,
                         lim.acceleration / np.abs(qdd).max(axis=0), np.inf)])
        s = np.where(np.isfinite(s), s, 0.0)
        middle = 0.5 * (lim.upper + lim.lower)
        for _ in range(16):
            aa, bb = a * s[:, None], b * s[:, None]
            q0 = middle - 0.5 * s * (q.max(axis=0) + q.min(axis=0))
            if not effort or not np.any(np.isfinite(lim.effort)):
                return q0, aa, bb
            tau = self.model.inverse_dynamics(q0 + q * s, qd * s, qdd * s)
            if np.all(np.abs(tau).max(axis=0) <= lim.effort):
                return q0, aa, bb
            s = 0.8 * s
        return None

    def regressor(self, q0, a, b, t=None):
        """Return the stacked base regressor with the friction columns on the samples."""
        t = self.t if t is None else t
        q, qd, qdd = _evaluate(a, b, self.base_frequency, t)
        Y = self.model.regressor(q0 + q, qd, qdd)[:, :, self.columns]
        F = friction_regressor(qd, qdd, self.terms, self.smooth)
        return np.concatenate([Y, F], axis=-1).reshape(-1, Y.shape[-1] + F.shape[-1])

    def cost(self, x) -> float:
        """Return log cond (or -log det of the normalised information matrix)."""
        fitted = self.fit(x)
        if fitted is None:
            return 1e3
        W = self.regressor(*fitted)
        sv = np.sqrt(np.maximum(np.linalg.eigvalsh(W.T @ W)[::-1], 0.0))
        if sv[-1] <= 1e-12 * sv[0]:
            return 1e3
        if self.criterion == 'cond':
            return float(np.log(sv[0] / sv[-1]))
        return float(-2.0 * np.sum(np.log(sv / np.sqrt(len(self.t)))) / len(sv))


def excitation_trajectory(model, duration: float, harmonics: int = 5,
                          base_frequency: float | None = None, criterion: str = 'cond',
                          friction=('viscous', 'coulomb'), smooth: float = 0.01,
                          margin: float = 0.05, max_acceleration=None, samples: int | None = None,
                          maxiter: int = 60, restarts: int = 1, rng=0) -> FourierTrajectory:
    """
    Return a rest-to-rest Fourier excitation for a fixed-base model, optimised for its fit.

    ``duration`` [s] is a whole number of periods of ``base_frequency`` [Hz] (default: one
    period, 1 / duration). The coefficients minimise the condition number (``criterion=
    'cond'``) or maximise the log-determinant (``'logdet'``) of the base regressor stacked
    with the ``friction`` columns (:func:`~kron_dynamics.identification.friction_regressor`)
    on ``samples`` instants, each joint scaled into its position, velocity and acceleration
    limits, less ``margin`` of each (positions: of the range), and every amplitude scaled
    down together until the torques of ``model`` stay within the effort limits. Joints
    without limits get +-pi rad (+-0.5 m), 2 rad/s; the acceleration limit (URDF has none)
    is ``max_acceleration`` or 5 / s times the velocity limit. Self-collision is not checked.
    The result is checked on a grid ten times finer and reports its ``condition_number``.
    """
    from scipy.optimize import minimize
    from .base_parameters import base_parameters
    if model.nv != model.n:
        raise ModelError(f"excitation_trajectory: robot '{model.name}' has a {model.base} "
                         'base; excitation and identification take fixed bases')
    if not isinstance(criterion, str) or criterion not in CRITERIA:
        raise ValueError(f'unknown criterion {criterion!r}; choose one of {list(CRITERIA)}')
    if not (isinstance(harmonics, (int, np.integer)) and harmonics >= 2):
        raise ValueError(f'harmonics must be an integer >= 2 (the rest conditions take one), '
                         f'got {harmonics!r}')
    duration = real_number(duration, 'duration')
    if not (np.isfinite(duration) and duration > 0):
        raise ValueError(f'duration must be > 0 s, got {duration}')
    if base_frequency is None:
        base_frequency = 1.0 / duration
    base_frequency = real_number(base_frequency, 'base_frequency')
    periods = duration * base_frequency
    if not (np.isfinite(periods) and base_frequency > 0 and periods >= 1 - 1e-9
            and abs(periods - round(periods)) < 1e-6 * periods):
        raise ValueError(f'duration {duration} s must be a whole number (>= 1) of periods of '
                         f'base_frequency {base_frequency} Hz')
    margin = real_number(margin, 'margin')
    if not 0 <= margin < 0.5:
        raise ValueError(f'margin must be in [0, 0.5), got {margin}')
    terms, smooth = friction_terms(friction), _smooth(smooth)
    maxiter, restarts = integer(maxiter, 'maxiter', 0), integer(restarts, 'restarts', 1)
    n, H = model.n, int(harmonics)
    samples = int(min(max(10 * H, 100), 400)) if samples is None else \
        integer(samples, 'samples', 1)
    generator = _generator(rng)
    limits = _limits(model, margin, max_acceleration)
    bp = base_parameters(model)
    problem = _Problem(model, limits, base_frequency, H, bp.independent,
                       terms, smooth, criterion, samples)
    best = None
    for _ in range(restarts):
        # decaying amplitudes: the higher harmonics are the costlier in acceleration
        x0 = (generator.standard_normal((2, n, H - 1))
              / np.arange(2, H + 1)).ravel()
        result = minimize(problem.cost, x0, method='L-BFGS-B',
                          options={'maxiter': maxiter, 'maxfun': maxiter * (x0.size + 1) * 3})
        if best is None or result.fun < best.fun:
            best = result
    fine = np.linspace(0.0, 1.0 / base_frequency, 10 * samples + 1)
    fitted = problem.fit(best.x, fine, effort=True)
    if fitted is None:
        tau = model.gravity_torque(0.5 * (limits.lower + limits.upper))
        over = [j for j, g, e in zip(model.joint_names, np.abs(tau), limits.effort) if g > e]
        raise ValueError('excitation_trajectory: no motion within the effort limits was found'
                         + (f' (gravity alone exceeds them at mid-range on {over})' if over
                            else ''))
    q0, a, b = fitted
    sv = np.linalg.svd(problem.regressor(q0, a, b, fine), compute_uv=False)
    return FourierTrajectory(tuple(model.joint_names), q0, a, b, float(base_frequency),
                             float(duration), float(sv[0] / sv[-1]))
