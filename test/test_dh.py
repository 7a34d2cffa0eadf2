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

"""DH builder: link frames equal the product of DH matrices; bundled URDFs match generators."""

import math

import numpy as np
import pytest

from conftest import URDF_DIR
from kron_dynamics import RobotModel
from kron_dynamics.model.dh import DHRow, dh_to_urdf
from kron_dynamics.model.machines import stacker_dh_rows, URDFS
from kron_dynamics.testing.random_urdf import random_inertia


def dh_matrix(theta, d, a, alpha):
    """Return A = Rz(theta) Tz(d) Tx(a) Rx(alpha), 4 x 4."""
    ct, st, ca, sa = math.cos(theta), math.sin(theta), math.cos(alpha), math.sin(alpha)
    return np.array([[ct, -st * ca, st * sa, a * ct], [st, ct * ca, -ct * sa, a * st],
                     [0, sa, ca, d], [0, 0, 0, 1]])


def random_rows(rng, n):
    rows = []
    for i in range(n):
        rows.append(DHRow(f'j{i + 1}', 'prismatic' if rng.random() < 0.3 else 'revolute',
                          a=rng.uniform(-1, 1), alpha=rng.uniform(-np.pi, np.pi),
                          d=rng.uniform(-1, 1), theta=rng.uniform(-np.pi, np.pi),
                          mass=rng.uniform(0.5, 3), com=tuple(rng.uniform(-0.5, 0.5, 3)),
                          inertia=random_inertia(rng)))
    return rows


@pytest.mark.parametrize('seed', range(5))
def test_dh_frames_are_products_of_dh_matrices(seed):
    rng = np.random.default_rng(seed)
    rows = random_rows(rng, 5)
    model = RobotModel.from_dh(rows)
    assert model.joint_names == tuple(r.joint for r in rows)
    q = rng.uniform(-2, 2, 5)
    T = np.eye(4)
    for i, (row, qi) in enumerate(zip(rows, q), start=1):
        if row.type == 'revolute':
            T = T @ dh_matrix(row.theta + qi, row.d, row.a, row.alpha)
        else:
            T = T @ dh_matrix(row.theta, row.d + qi, row.a, row.alpha)
        np.testing.assert_allclose(model.link_pose(q, f'link{i}'), T, rtol=0, atol=1e-12)


def test_dh_model_inertia_is_in_dh_frame():
    """A single revolute body: M = I_zz(frame 0 axis) + m |com offset from axis|^2."""
    I_ = np.diag([0.1, 0.2, 0.3])
    row = DHRow('j1', a=0.5, alpha=math.pi / 2, mass=2.0, com=(-0.2, 0.0, 0.0), inertia=I_)
    model = RobotModel.from_dh([row])
    # for alpha = 90 deg the joint axis z0 is y1: I_yy about it, CoM 0.5 - 0.2 from it
    expected = 0.2 + 2.0 * (0.5 - 0.2) ** 2
    np.testing.assert_allclose(model.mass_matrix([0.7]), [[expected]], rtol=1e-12)


def test_stacker_urdf_is_generated_from_dh_table():
    assert (URDF_DIR / 'stacker.urdf').read_text() == dh_to_urdf(
        stacker_dh_rows(), 'stacker', base_rpy=(-math.pi / 2, 0.0, 0.0))


@pytest.mark.parametrize('filename', sorted(URDFS))
def test_bundled_urdfs_match_their_generators(filename):
    assert (URDF_DIR / filename).read_text() == URDFS[filename](), (
        f'urdf/{filename} is stale: run `make urdf`')
    RobotModel.from_urdf_file(URDF_DIR / filename)


def test_stacker_base_link_is_z_up(stacker):
    R0 = stacker.link_pose(np.zeros(3), 'link0')[:3, :3]
    np.testing.assert_allclose(R0 @ [0, 1, 0], [0, 0, -1], atol=1e-15)   # y0 points down
    np.testing.assert_allclose(R0 @ [0, 0, 1], [0, 1, 0], atol=1e-15)    # z0: the rail
