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

"""A smooth motion within a model's joint limits, for identification tests and benchmarks."""

import numpy as np


def sum_of_sines(model, seconds: float = 20.0, rate: float = 100.0, rng=1):
    """
    Return (t, q, q', q''): five sines per joint (0.1 to 0.5 Hz) about mid-range.

    Each joint moves by at most 0.9 of its half-range (+-pi where unlimited); amplitudes and
    phases are drawn from ``rng`` (a seed or a Generator). ``model``: anything with
    ``position_limits`` and ``n`` (a fixed-base RobotModel).
    """
    rng = np.random.default_rng(rng)
    lower, upper = model.position_limits
    lower = np.where(np.isfinite(lower), lower, -np.pi)
    upper = np.where(np.isfinite(upper), upper, np.pi)
    middle, half = 0.5 * (lower + upper), 0.5 * (upper - lower)
    t = np.arange(0.0, seconds, 1.0 / rate)
    w = 2 * np.pi * 0.1 * np.arange(1, 6)
    a = rng.uniform(-0.18, 0.18, (model.n, 5)) * half[:, None]
    phase = rng.uniform(0, 2 * np.pi, (model.n, 5))
    arg = w[None, None, :] * t[:, None, None] + phase[None]
    q = middle + np.sum(a * np.sin(arg), axis=-1)
    qd = np.sum(a * w * np.cos(arg), axis=-1)
    qdd = np.sum(-a * w ** 2 * np.sin(arg), axis=-1)
    return t, q, qd, qdd
