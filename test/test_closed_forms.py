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
The papers' closed forms: stacker eqs. (102)-(107) of 000 (typos fixed), rover arm of 003.

The closed forms are typed once, in ``closed_forms.py`` (shared with ``test_symbolic.py``);
here they are evaluated with the papers' numbers and compared with the numeric model.
"""

import numpy as np
import pytest
import sympy as sp

import closed_forms
from conftest import ORACLE

RNG = np.random.default_rng(102)
STATES = [np.zeros(3)] + [RNG.uniform([-50, -np.pi, -0.6], [50, np.pi, 0.6]) for _ in range(8)]


def _numeric(expr):
    """Return the closed form with the papers' numbers as a function f(q) -> float array."""
    f = sp.lambdify([closed_forms.q1, closed_forms.q2, closed_forms.q3],
                    expr.xreplace(closed_forms.stacker_values()), 'numpy')
    return lambda q: np.array(f(*q), dtype=float)


STACKER = {name: _numeric(expr) for name, expr in closed_forms.stacker().items()}


def in_frame0(stacker, q, A):
    """Express root-frame (base_link) columns in DH frame 0 (link0), as the paper does."""
    R0 = stacker.link_pose(q, 'link0')[:3, :3]
    return R0.T @ A


@pytest.mark.parametrize('q', STATES)
def test_stacker_jacobians_and_hessians_eqs_102_105(stacker, q):
    JT, JR = stacker.jacobians(q, 'link3')      # frame 3: the boom tip
    HT, HR = stacker.hessians(q, 'link3')
    for actual, eq in [(JT, 'JT_102'), (HT, 'HT_103'), (JR, 'JR_104'), (HR, 'HR_105')]:
        np.testing.assert_allclose(in_frame0(stacker, q, actual), STACKER[eq](q), atol=1e-9,
                                   err_msg=eq)


@pytest.mark.parametrize('q', STATES)
def test_stacker_M_G_Cstar_eqs_106_107(stacker, q):
    M_106 = STACKER['M_106'](q)
    for method in ('jacobian', 'explicit', 'crba'):
        np.testing.assert_allclose(stacker.mass_matrix(q, method), M_106, rtol=1e-12,
                                   atol=1e-9 * np.max(np.abs(M_106)))
    np.testing.assert_allclose(stacker.coriolis_star(q), STACKER['Cstar_107'](q), rtol=1e-12,
                               atol=1e-3)
    np.testing.assert_allclose(stacker.gravity_torque(q), STACKER['G'](q).ravel(),
                               rtol=1e-12, atol=1e-3)


ROVER_ARM_M21 = sp.lambdify([closed_forms.q2], closed_forms.ROVER_ARM_M21, 'numpy')


@pytest.mark.parametrize('seed', range(5))
def test_rover_arm_structure(rover_arm, seed):
    q = np.random.default_rng(seed).uniform(-np.pi, np.pi, 5)
    for method in ('jacobian', 'explicit', 'crba'):
        M = rover_arm.mass_matrix(q, method)
        # 1-based M[2][4], M[2][5], M[3][4], M[3][5]: different branches, exactly zero
        for i, j in [(1, 3), (1, 4), (2, 3), (2, 4)]:
            assert M[i, j] == 0.0 and M[j, i] == 0.0
        # links 3 and 5 spin about their own axis with zero inertia: M singular
        assert abs(M[2, 2]) < 1e-15 and abs(M[4, 4]) < 1e-15
        np.testing.assert_allclose(M[1, 0], ROVER_ARM_M21(q[1]), rtol=1e-12, atol=1e-15)


def test_rover_arm_M21_trajectory(rover_arm):
    traj = ORACLE['rover_arm_M21_trajectory']
    t = np.asarray(traj['t'])
    M21 = [rover_arm.mass_matrix(np.full(5, 5 * np.sin(ti)))[1, 0] for ti in t]
    np.testing.assert_allclose(M21, traj['M21_radians'], rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(M21, ROVER_ARM_M21(5 * np.sin(t)), rtol=1e-9, atol=1e-15)
