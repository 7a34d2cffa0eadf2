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

"""The papers' closed forms: stacker eqs. (102)-(107) of 000 (typos fixed), rover arm of 003."""

import numpy as np
import pytest

from conftest import ORACLE
from kron_dynamics.model.machines import STACKER

P = STACKER
g = 9.81
RNG = np.random.default_rng(102)
STATES = [np.zeros(3)] + [RNG.uniform([-50, -np.pi, -0.6], [50, np.pi, 0.6]) for _ in range(8)]


def in_frame0(stacker, q, A):
    """Express root-frame (base_link) columns in DH frame 0 (link0), as the paper does."""
    R0 = stacker.link_pose(q, 'link0')[:3, :3]
    return R0.T @ A


@pytest.mark.parametrize('q', STATES)
def test_stacker_jacobians_and_hessians_eqs_102_105(stacker, q):
    a3 = P['a3']
    s2, c2, s3, c3 = np.sin(q[1]), np.cos(q[1]), np.sin(q[2]), np.cos(q[2])
    JT, JR = stacker.jacobians(q, 'link3')      # frame 3: the boom tip
    HT, HR = stacker.hessians(q, 'link3')
    JT_102 = [[0, -a3 * s2 * c3, -a3 * c2 * s3], [0, 0, -a3 * c3],
              [1, a3 * c2 * c3, -a3 * s2 * s3]]
    HT_103 = [[0, 0, 0, 0, -a3 * c2 * c3, a3 * s2 * s3, 0, a3 * s2 * s3, -a3 * c2 * c3],
              [0, 0, 0, 0, 0, 0, 0, 0, a3 * s3],            # printed 'a3 sin q'
              [0, 0, 0, 0, -a3 * s2 * c3, -a3 * c2 * s3, 0, -a3 * c2 * s3, -a3 * s2 * c3]]
    JR_104 = [[0, 0, s2], [0, -1, 0], [0, 0, -c2]]
    HR_105 = np.zeros((3, 9))
    HR_105[0, 7], HR_105[2, 7] = c2, s2                      # printed '-sin q2'
    for actual, expected in [(JT, JT_102), (HT, HT_103), (JR, JR_104), (HR, HR_105)]:
        np.testing.assert_allclose(in_frame0(stacker, q, actual), expected, atol=1e-9)


@pytest.mark.parametrize('q', STATES)
def test_stacker_M_G_Cstar_eqs_106_107(stacker, q):
    m1, m2, m3, l3 = P['m1'], P['m2'], P['m3'], P['l3']
    I2x, I2y, I2z = P['I2']
    I3x, I3y, I3z = P['I3']
    s2, c2, s3, c3 = np.sin(q[1]), np.cos(q[1]), np.sin(q[2]), np.cos(q[2])
    M12 = m3 * l3 * c2 * c3
    M13 = -m3 * l3 * s2 * s3
    M_106 = [[m1 + m2 + m3, M12, M13],
             [M12, I2y + (m3 * l3 ** 2 + I3y) * c3 ** 2 + I3x * s3 ** 2, 0],
             [M13, 0, m3 * l3 ** 2 + I3z]]                   # printed 'm3 l3^2 I3z'
    k = m3 * l3
    e = (m3 * l3 ** 2 + I3y - I3x) * s3 * c3
    C_107 = [[0, 0, 0, 0, -k * s2 * c3, -k * c2 * s3, 0, -k * c2 * s3, -k * s2 * c3],
             [0, -k * s2 * c3 / 2, -k * c2 * s3 / 2, k * s2 * c3 / 2, 0, -2 * e, k * c2 * s3 / 2,
              0, 0],
             [0, -k * c2 * s3 / 2, -k * s2 * c3 / 2, k * c2 * s3 / 2, e, 0, k * s2 * c3 / 2, 0,
              0]]
    G = [0, 0, m3 * g * l3 * c3]
    for method in ('jacobian', 'explicit', 'crba'):
        np.testing.assert_allclose(stacker.mass_matrix(q, method), M_106, rtol=1e-12,
                                   atol=1e-9 * np.max(np.abs(M_106)))
    np.testing.assert_allclose(stacker.coriolis_star(q), C_107, rtol=1e-12, atol=1e-3)
    np.testing.assert_allclose(stacker.gravity_torque(q), G, rtol=1e-12, atol=1e-3)


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
        np.testing.assert_allclose(M[1, 0], 0.00192 * np.cos(q[1]), rtol=1e-12, atol=1e-15)


def test_rover_arm_M21_trajectory(rover_arm):
    traj = ORACLE['rover_arm_M21_trajectory']
    t = np.asarray(traj['t'])
    M21 = [rover_arm.mass_matrix(np.full(5, 5 * np.sin(ti)))[1, 0] for ti in t]
    np.testing.assert_allclose(M21, traj['M21_radians'], rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(M21, 0.00192 * np.cos(5 * np.sin(t)), rtol=1e-9, atol=1e-15)
