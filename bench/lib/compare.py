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

"""The benchmarks' one agreement measure."""

import math

import numpy as np

# bench_dynamics' agreement tolerances, relative to the largest entry of the reference
AGREE_TOL = 1e-8
AGREE_TOL_LOOSE = 1e-6   # PyBullet (btScalar arithmetic, inertia diagonalised on load)


def relerr(a, b, floor: float = 1.0) -> float:
    """
    Return max |a - b| / max(floor, max |b|): the benchmarks' one agreement measure.

    ``floor`` 1 (default): relative to the larger of 1 and the reference; 0: purely
    relative (absolute where the reference is all zeros). Shapes that differ: inf.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        return math.inf
    if not b.size:
        return 0.0
    scale = max(floor, float(np.max(np.abs(b))))
    return float(np.max(np.abs(a - b))) / (scale if scale > 0 else 1.0)
