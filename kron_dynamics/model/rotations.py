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
Small rotation helpers: rpy, axis-angle, quaternions and the skew (cross-product) matrix.

Written out rather than taken from scipy.spatial.transform.Rotation, which gives the same
matrices (test/test_rotations.py checks them against it) but costs 55 us a call against
5 us here, and 0.8 s to import: the loader calls rpy_to_matrix once per joint and inertial
origin, and a node's start-up should not pay for scipy.spatial.
"""

import math

import numpy as np


def skew(v: np.ndarray) -> np.ndarray:
    """Return the 3 x 3 cross-product matrix of v (so that its product with w is v x w)."""
    x, y, z = v
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def rpy_rows(cr, sr, cp, sp, cy, sy) -> list:
    """
    Return the rows of Rz(yaw) Ry(pitch) Rx(roll) from the angles' cosines and sines.

    The URDF convention for origin rpy, written once for numbers (:func:`rpy_to_matrix`)
    and for sympy expressions (``symbolic.model.rpy_matrix``).
    """
    return [[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr]]


def elementary_rows(axis: str, c, s) -> list:
    """Return the rows of the rotation by an angle about 'x', 'y' or 'z' (its cos c, sin s)."""
    if axis == 'x':
        return [[1, 0, 0], [0, c, -s], [0, s, c]]
    if axis == 'y':
        return [[c, 0, s], [0, 1, 0], [-s, 0, c]]
    return [[c, -s, 0], [s, c, 0], [0, 0, 1]]


def rpy_to_matrix(rpy) -> np.ndarray:
    """Return R = Rz(yaw) Ry(pitch) Rx(roll), the URDF convention for origin rpy."""
    r, p, y = (float(a) for a in rpy)
    return np.array(rpy_rows(math.cos(r), math.sin(r), math.cos(p), math.sin(p),
                             math.cos(y), math.sin(y)))


def axis_angle(axis: np.ndarray, angle: float) -> np.ndarray:
    """Return the rotation by angle [rad] about the unit vector axis (Rodrigues)."""
    K = skew(axis)
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)


def quaternion_to_matrix(quat) -> np.ndarray:
    """Return the rotation matrix of a unit quaternion (x, y, z, w)."""
    x, y, z, w = np.asarray(quat, dtype=float).tolist()
    return np.array([
        [1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w)],
        [2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w)],
        [2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y)],
    ])


def matrix_to_quaternion(R: np.ndarray) -> np.ndarray:
    """Return the unit quaternion (x, y, z, w), w >= 0, of a rotation matrix (Shepperd)."""
    R = np.asarray(R, dtype=float)
    t = np.trace(R)
    k = int(np.argmax([R[0, 0], R[1, 1], R[2, 2], t]))
    if k == 3:
        s = 2.0 * np.sqrt(1.0 + t)
        q = np.array([(R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s,
                      (R[1, 0] - R[0, 1]) / s, 0.25 * s])
    else:
        i, j, m = k, (k + 1) % 3, (k + 2) % 3
        s = 2.0 * np.sqrt(max(1.0 + R[i, i] - R[j, j] - R[m, m], 0.0))
        q = np.empty(4)
        q[i] = 0.25 * s
        q[j] = (R[j, i] + R[i, j]) / s
        q[m] = (R[m, i] + R[i, m]) / s
        q[3] = (R[m, j] - R[j, m]) / s
    q /= np.linalg.norm(q)
    return -q if q[3] < 0 else q
