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
Base parameters: the combinations of inertial parameters that the joint torques determine.

tau = Y(q, q', q'') p is linear in the standard parameters p (10 per body). Some columns of
Y are zero for every motion (a parameter with no effect) and others are linear
combinations of the rest (a proximal body's inertia about its joint axis only ever adds to
the next body's, say). Pivoted QR of Y stacked over random states (Gautier, "Numerical
calculation of the base inertial parameters of robots", 1991) orders the columns so that
the first r are independent: with W P = Q [R11 R12], the base parameters are
beta = p1 + R11^-1 R12 p2 (p1: the r independent columns' parameters, p2 the others), and
Y p = Y1 beta for every p, exactly.
"""

from dataclasses import dataclass

import numpy as np

from ..algorithms.regressor import PARAMETER_NAMES
from ..checks import _generator, integer
from ..errors import ModelError

# a column of the scaled stacked regressor is independent if QR leaves it more than this
# relative to the largest: far above the rounding of double precision (1e-16 times the
# stack's size), far below any physical coupling
RANK_TOLERANCE = 1e-9
# entries of R11^-1 R12 below this are rounding, written as exact zeros
ZERO = 1e-10
# a regressor column smaller than this relative to the largest is zero (rounding)
ZERO_COLUMN = 1e-10


@dataclass(frozen=True)
class BaseParameters:
    """
    The base parameters of a model: ``count`` of them, each a combination of standard ones.

    ``names``: the standard parameters, 'body.m', 'body.mcx', ..., 'body.Izz' (the order of
    ``model.dynamic_parameters().ravel()``); ``independent``: the indices of the r standard
    parameters that the base parameters are named after; ``dependent``: the others;
    ``combination`` (r x len(dependent)): beta = p[independent] + combination @
    p[dependent]. A standard parameter whose column is zero in every motion appears in no
    base parameter (``unidentifiable``). ``armature_in_span`` (per joint): True where a
    rotor inertia of the joint (tau_j += I_a q''_j) is a combination of the base
    parameters' columns, so cannot be told from the links' inertia (the first joint's,
    about an axis fixed in the world).
    """

    names: tuple
    independent: np.ndarray
    dependent: np.ndarray
    combination: np.ndarray
    armature_in_span: np.ndarray

    @property
    def count(self) -> int:
        """Return the number of base parameters (the rank of the regressor)."""
        return len(self.independent)

    @property
    def unidentifiable(self) -> tuple:
        """Return the standard parameters that enter no base parameter (no effect on tau)."""
        unused = ~np.any(self.combination, axis=0)
        return tuple(self.names[k] for k in self.dependent[unused])

    def to_base(self, parameters) -> np.ndarray:
        """Return beta (count,) of standard parameters ((nb, 10) or flat)."""
        p = self._standard(parameters)
        return p[..., self.independent] + p[..., self.dependent] @ self.combination.T

    def to_standard(self, beta) -> np.ndarray:
        """Return the standard parameters (flat) with these base parameters and p2 = 0."""
        beta = np.asarray(beta, dtype=float)
        if beta.shape[-1:] != (self.count,):
            raise ValueError(f'beta must have {self.count} entries, got shape {beta.shape}')
        p = np.zeros(beta.shape[:-1] + (len(self.names),))
        p[..., self.independent] = beta
        return p

    def base_regressor(self, Y) -> np.ndarray:
        """Return Y1 (the independent columns): Y p = Y1 beta for every p."""
        return np.asarray(Y)[..., self.independent]

    def table(self) -> str:
        """Return one line per base parameter: the standard parameters it groups."""
        lines = []
        for k, i in enumerate(self.independent):
            terms = [self.names[i]]
            for c, j in zip(self.combination[k], self.dependent):
                if c:
                    sign = '-' if c < 0 else '+'
                    value = '' if abs(abs(c) - 1.0) < 1e-9 else f'{abs(c):.6g} '
                    terms.append(f'{sign} {value}{self.names[j]}')
            lines.append(f'beta{k + 1} = ' + ' '.join(terms))
        unused = self.unidentifiable
        if unused:
            lines.append(f'no effect on the joint torques: {", ".join(unused)}')
        return '\n'.join(lines)

    def _standard(self, parameters) -> np.ndarray:
        p = np.asarray(parameters, dtype=float)
        if p.ndim >= 2 and p.shape[-1] == 10:
            p = p.reshape(p.shape[:-2] + (-1,))
        if p.shape[-1:] != (len(self.names),):
            raise ValueError(f'standard parameters must be {len(self.names)} numbers (10 per '
                             f'body), got shape {np.shape(parameters)}')
        return p


def base_parameters(model, samples: int = 40, rng=0) -> BaseParameters:
    """
    Return the base parameters of a model, by pivoted QR of its regressor (Gautier).

    ``samples`` random states (``rng``: a seed, fixed by default so that the choice of
    independent columns is the same in every run, or a Generator): positions by
    ``random_configuration``, velocities and accelerations standard normal. Gravity is part
    of the model, so the gravity terms count (a robot on a table identifies parameters that
    one in space would not). The columns are scaled to unit norm before the QR (SI units
    differ by orders of magnitude per column).
    """
    from scipy.linalg import qr
    if model.nv != model.n:
        raise ModelError(f"base_parameters: robot '{model.name}' has a {model.base} base; "
                         'identification here takes fixed bases (mimic joints included)')
    samples, rng = integer(samples, 'samples', 1), _generator(rng)
    q = np.stack([model.random_configuration(rng=rng) for _ in range(samples)])
    v = rng.standard_normal((samples, model.nv))
    a = rng.standard_normal((samples, model.nv))
    W = model.regressor(q, v, a).reshape(samples * model.nv, -1)
    scale = np.linalg.norm(W, axis=0)
    # a column that is rounding noise (a parameter with no effect computed as 1e-15) would
    # look independent once scaled to unit norm
    used = scale > ZERO_COLUMN * scale.max()
    Ws = np.where(used, W / np.where(used, scale, 1.0), 0.0)
    Q, R, pivots = qr(Ws, mode='economic', pivoting=True)
    diag = np.abs(np.diag(R))
    r = int(np.sum(diag > RANK_TOLERANCE * diag[0])) if diag.size and diag[0] > 0 else 0
    independent, dependent = pivots[:r], pivots[r:]
    # an armature column (joint j's acceleration in joint j's rows) in the span of Q[:, :r]
    in_span = np.zeros(model.nv, dtype=bool)
    for j in range(model.nv):
        column = np.zeros((samples, model.nv))
        column[:, j] = a[:, j]
        column = column.ravel() / np.linalg.norm(column)
        in_span[j] = np.linalg.norm(column - Q[:, :r] @ (Q[:, :r].T @ column)) < 1e-8
    # beta = p1 + K p2 in the unscaled parameters: K = S1^-1 R11^-1 R12 S2
    K = np.linalg.solve(R[:r, :r], R[:r, r:])
    K = K / np.where(used, scale, 1.0)[independent][:, None] * scale[dependent][None, :]
    K[np.abs(K) < ZERO] = 0.0
    names = tuple(f'{body}.{p}' for body in model.body_names for p in PARAMETER_NAMES)
    order = np.argsort(independent, kind='stable')       # base parameters in body order
    dep_order = np.argsort(dependent, kind='stable')
    return BaseParameters(names, independent[order], dependent[dep_order],
                          K[order][:, dep_order], in_span)
