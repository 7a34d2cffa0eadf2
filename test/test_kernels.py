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

"""The compiled kernels against the readable reference algorithms on random trees."""

import numpy as np
import pytest

from kron_dynamics import RobotModel
from kron_dynamics.algorithms.crba import crba
from kron_dynamics.algorithms.rnea import rnea
from kron_dynamics.kernels import (crba_batch_kernel, crba_kernel, rnea_batch_kernel,
                                   rnea_kernel, tree_args)
from kron_dynamics.random_urdf import random_urdf


@pytest.mark.parametrize('seed', range(10))
def test_kernels_match_reference(seed):
    rng = np.random.default_rng(seed)
    model = RobotModel.from_urdf_string(random_urdf(rng, int(rng.integers(1, 10)), 2))
    tree, args, n = model.tree, tree_args(model.tree), model.n
    for _ in range(3):
        q, qd, qdd = rng.uniform(-2, 2, (3, n))
        W = rng.normal(size=(n, 6))
        ref = rnea(tree, q, qd, qdd, f_ext=W)
        np.testing.assert_allclose(rnea_kernel(*args, tree.gravity, q, qd, qdd, W), ref,
                                   atol=1e-11 * max(1, np.abs(ref).max()))
        ref = rnea(tree, q, qd, qdd)
        np.testing.assert_allclose(rnea_kernel(*args, tree.gravity, q, qd, qdd,
                                               np.zeros((0, 6))), ref,
                                   atol=1e-11 * max(1, np.abs(ref).max()))
        M = crba(tree, q)
        np.testing.assert_allclose(crba_kernel(*args, q), M, atol=1e-12 * max(1, np.abs(M).max()))
    Q, Qd, Qdd = rng.uniform(-2, 2, (3, 7, n))
    np.testing.assert_allclose(
        rnea_batch_kernel(*args, tree.gravity, Q, Qd, Qdd),
        [rnea(tree, *x) for x in zip(Q, Qd, Qdd)], atol=1e-10)
    np.testing.assert_allclose(crba_batch_kernel(*args, Q), [crba(tree, x) for x in Q],
                               atol=1e-10)
