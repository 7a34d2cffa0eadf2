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

"""Small rotation helpers: rpy, axis-angle and the skew (cross-product) matrix."""

import numpy as np


def skew(v: np.ndarray) -> np.ndarray:
    """Return the 3 x 3 cross-product matrix of v (so that its product with w is v x w)."""
    x, y, z = v
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def rpy_to_matrix(rpy) -> np.ndarray:
    """Return R = Rz(yaw) Ry(pitch) Rx(roll), the URDF convention for origin rpy."""
    r, p, y = (float(a) for a in rpy)
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def matrix_to_rpy(R: np.ndarray) -> np.ndarray:
    """Return (roll, pitch, yaw) with rpy_to_matrix(rpy) == R (pitch in [-pi/2, pi/2])."""
    sp = -R[2, 0]
    if abs(sp) > 1.0 - 1e-12:
        pitch = np.copysign(np.pi / 2, sp)
        roll = 0.0
        yaw = np.arctan2(-R[0, 1], R[1, 1])
    else:
        pitch = np.arcsin(sp)
        roll = np.arctan2(R[2, 1], R[2, 2])
        yaw = np.arctan2(R[1, 0], R[0, 0])
    return np.array([roll, pitch, yaw])


def axis_angle(axis: np.ndarray, angle: float) -> np.ndarray:
    """Return the rotation by angle [rad] about the unit vector axis (Rodrigues)."""
    K = skew(axis)
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)
