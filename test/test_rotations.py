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

"""The hand-written rotations of the model layer against scipy.spatial.transform.Rotation."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from kron_dynamics.model.rotations import (
    axis_angle, elementary_rows, matrix_to_quaternion, quaternion_to_matrix, rpy_to_matrix, skew)


@pytest.mark.parametrize('seed', range(20))
def test_rpy_is_scipys_extrinsic_xyz(seed):
    rpy = np.random.default_rng(seed).uniform(-4, 4, 3)
    np.testing.assert_allclose(rpy_to_matrix(rpy),
                               Rotation.from_euler('xyz', rpy).as_matrix(), atol=1e-15)


@pytest.mark.parametrize('seed', range(20))
def test_axis_angle_is_scipys_rotation_vector(seed):
    rng = np.random.default_rng(seed)
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    angle = rng.uniform(-7, 7)
    np.testing.assert_allclose(axis_angle(axis, angle),
                               Rotation.from_rotvec(angle * axis).as_matrix(), atol=1e-14)


@pytest.mark.parametrize('axis', 'xyz')
def test_elementary_rows_are_scipys_rotation_about_an_axis(axis):
    """The rows the symbolic DH model takes for Rz(theta) and Rx(alpha), and Ry."""
    for angle in np.random.default_rng(0).uniform(-4, 4, 10):
        np.testing.assert_allclose(
            np.array(elementary_rows(axis, np.cos(angle), np.sin(angle)), dtype=float),
            Rotation.from_euler(axis, angle).as_matrix(), atol=1e-15)


def test_skew_is_the_cross_product():
    rng = np.random.default_rng(0)
    v, w = rng.normal(size=(2, 3))
    np.testing.assert_allclose(skew(v) @ w, np.cross(v, w), atol=1e-15)


@pytest.mark.parametrize('seed', range(5))
def test_matrix_to_quaternion_is_scipys_quaternion(seed):
    rng = np.random.default_rng(seed)
    rotations = [Rotation.random(random_state=100 * seed + k).as_matrix() for k in range(200)]
    axis = rng.normal(size=3)
    rotations += [np.eye(3), np.diag([1.0, -1, -1]), np.diag([-1.0, 1, -1]),
                  np.diag([-1.0, -1, 1]), axis_angle(axis / np.linalg.norm(axis), np.pi)]
    for R in rotations:
        q = matrix_to_quaternion(R)
        expected = Rotation.from_matrix(R).as_quat()
        expected = -expected if expected[3] < 0 else expected
        if abs(q[3]) < 1e-12:     # w = 0: q and -q both have w >= 0
            expected = expected * np.sign(expected @ q)
        np.testing.assert_allclose(q, expected, atol=1e-12)
        np.testing.assert_allclose(Rotation.from_quat(q).as_matrix(), R, atol=1e-12)


def test_matrix_to_quaternion_of_a_nearly_orthonormal_matrix_is_a_unit_quaternion():
    """A rotation read from float32 data or a product of many: the quaternion is unit."""
    rng = np.random.default_rng(7)
    for k in range(100):
        R = Rotation.random(random_state=k).as_matrix() + rng.uniform(-1e-6, 1e-6, (3, 3))
        q = matrix_to_quaternion(R)
        assert abs(np.linalg.norm(q) - 1.0) < 1e-15 and q[3] >= 0
        np.testing.assert_allclose(quaternion_to_matrix(q), R, atol=1e-5)


def test_quaternion_to_matrix_is_scipys_matrix():
    for k in range(200):
        quat = Rotation.random(random_state=k).as_quat()
        np.testing.assert_allclose(quaternion_to_matrix(quat),
                                   Rotation.from_quat(quat).as_matrix(), atol=1e-14)
        np.testing.assert_allclose(quaternion_to_matrix(-quat), quaternion_to_matrix(quat),
                                   atol=1e-15)
        np.testing.assert_allclose(matrix_to_quaternion(quaternion_to_matrix(quat)),
                                   quat * np.sign(quat[3]), atol=1e-12)
