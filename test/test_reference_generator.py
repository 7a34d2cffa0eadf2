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

"""Reference trajectories: q, qd and qdd consistent (finite differences), ends at rest."""

import numpy as np
import pytest

from kron_dynamics.nodes.reference_generator import QuinticPath, quintic, sine

H = 1e-5


def check_consistent(traj, times):
    for t in times:
        q, qd, qdd = traj(t)
        qm, qdm, _ = traj(t - H)
        qp, qdp, _ = traj(t + H)
        np.testing.assert_allclose(qd, (qp - qm) / (2 * H), atol=1e-6)
        np.testing.assert_allclose(qdd, (qdp - qdm) / (2 * H), atol=1e-5)


def test_sine_with_ramp_starts_at_rest_and_is_consistent():
    args = (np.array([0.1, -0.2]), np.array([0.5, 1.0]), np.array([0.3, 0.7]),
            np.array([0.0, 1.0]))
    q, qd, qdd = sine(0.0, *args, ramp_time=2.0)
    np.testing.assert_allclose(q, args[0])
    np.testing.assert_allclose(qd, 0.0, atol=1e-15)
    np.testing.assert_allclose(qdd, 0.0, atol=1e-15)
    check_consistent(lambda t: sine(t, *args, ramp_time=2.0), np.linspace(0.01, 5.0, 37))
    offset, amplitude, frequency, phase = args
    for t in (0.5, 1.0, 1.5, 1.99, 2.0, 3.0):     # the amplitude times 10 s^3 - 15 s^4 + 6 s^5
        s = min(t / 2.0, 1.0)
        ramp = 10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5
        np.testing.assert_allclose(
            sine(t, *args, ramp_time=2.0)[0],
            offset + ramp * amplitude * np.sin(2 * np.pi * frequency * t + phase), atol=1e-15)
    check_consistent(lambda t: sine(t, *args), np.linspace(0.0, 5.0, 11))


def test_quintic_is_rest_to_rest():
    q0, q1 = np.array([0.0, 1.0]), np.array([2.0, -1.0])
    for t, expected in ((0.0, q0), (3.0, q1)):
        q, qd, qdd = quintic(t, q0, q1, 3.0)
        np.testing.assert_allclose(q, expected)
        np.testing.assert_allclose(qd, 0.0, atol=1e-15)
        np.testing.assert_allclose(qdd, 0.0, atol=1e-15)
    check_consistent(lambda t: quintic(t, q0, q1, 3.0), np.linspace(0.01, 2.99, 23))


@pytest.mark.parametrize('loop', [False, True])
def test_quintic_path_through_waypoints(loop):
    waypoints = np.array([[0.0, 0.0], [1.0, 2.0], [-1.0, 0.5]])
    path = QuinticPath(waypoints, np.array([1.0, 2.0]), loop)
    np.testing.assert_allclose(path(1.0)[0], waypoints[1])
    np.testing.assert_allclose(path(3.0)[0], waypoints[2])
    check_consistent(path, [0.3, 0.9, 1.5, 2.7] + ([3.5, 4.2] if loop else []))
    if loop:
        np.testing.assert_allclose(path(5.0)[0], waypoints[0])   # back after 3 + 2 s
        np.testing.assert_allclose(path(6.0)[0], waypoints[1])
    else:
        q, qd, qdd = path(10.0)
        np.testing.assert_allclose(q, waypoints[2])
        assert not np.any(qd) and not np.any(qdd)
