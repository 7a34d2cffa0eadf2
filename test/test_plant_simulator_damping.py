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
plant_simulator's damping: any damping >= 0 is integrated stably (nodes.plant_simulator).

``ros2 param set`` of damping 1e6 on the RP arm made the explicit RK4 step diverge (dt times
the damping over the smallest eigenvalue of M about 2000, RK4's bound 2.79): a loaded run
published joint velocities of -9.7e6 rad/s. References: fixed-step RK4 with the damping in
the force where it is stable (unchanged), RK4 at a step 100 times smaller, and the terminal
velocity D^-1 (tau - G) that very large damping imposes.
"""

import numpy as np
import pytest

from conftest import URDF_DIR
from kron_dynamics import RobotModel
from kron_dynamics.errors import SingularMassMatrixError
from kron_dynamics.nodes.plant_simulator import damped_steps

DT = 1e-3


@pytest.fixture(scope='module')
def arm():
    return RobotModel.from_urdf_file(URDF_DIR / 'rp_arm.urdf')


def state():
    return np.array([0.3, 0.5]), np.array([0.2, -0.1]), np.array([1.0, -2.0])


def smallest_inertia(model, q):
    return float(np.linalg.eigvalsh(model.mass_matrix(q))[0])


@pytest.mark.parametrize('factor', [0.0, 0.2, 0.9])
def test_damping_an_explicit_step_integrates_is_rk4_as_before(arm, factor):
    q, qd, tau = state()
    damping = np.array([1.0, 0.5]) * factor * smallest_inertia(arm, q) / DT
    got = damped_steps(arm, q, qd, tau, DT, 20, damping)
    expected = arm.simulate(q, qd, tau, DT, 20, damping=damping)
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize('factor', [1.5, 5.0, 50.0])
def test_stiff_damping_follows_a_stable_fine_step_reference(arm, factor):
    q, qd, tau = state()
    damping = np.full(2, factor * smallest_inertia(arm, q) / DT)
    x, v = damped_steps(arm, q, qd, tau, DT, 50, damping)
    xr, vr = arm.simulate(q, qd, tau, DT / 100, 5000, damping=damping)
    assert np.max(np.abs(v - vr)) < 1e-3 * np.max(np.abs(vr))
    assert np.max(np.abs(x - xr)) < 1e-6
    if factor > 2.79:       # beyond RK4's bound: the explicit step diverges
        try:
            _, v_explicit = arm.simulate(q, qd, tau, DT, 50, damping=damping)
            assert not np.max(np.abs(v_explicit)) < 1e3, v_explicit
        except SingularMassMatrixError:
            pass


def test_very_large_damping_holds_the_plant_at_its_terminal_velocity(arm):
    q, qd, tau = state()
    damping = np.array([1e6, 1e6])
    x, v = damped_steps(arm, q, qd, tau, DT, 1000, damping)
    assert np.all(np.isfinite(x)) and np.all(np.isfinite(v))
    np.testing.assert_allclose(v, (tau - arm.gravity_torque(x)) / damping, rtol=1e-6)
    assert np.max(np.abs(v)) < 1e-4 and np.max(np.abs(x - q)) < 1e-4
