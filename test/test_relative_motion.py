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
The relative-motion recursions of 000 (eqs. 77-91) against the compiled kernels and motion.

The recursions give the Jacobians exactly and the Hessians up to a part antisymmetric in
the two velocity indices (what multiplies q' kron q'): the symmetric parts must equal the
kernels' Khang derivatives, and the accelerations must equal second differences of the
motion itself. In the body frame, the starred translational Hessian (eq. 58) and the
rotational one (eq. 65) give the accelerations in body axes.
"""

import numpy as np
import pytest

from kron_dynamics.algorithms.jacobians import block_skew
from kron_dynamics.algorithms.relative_motion import point_motion, relative_motion
from kron_dynamics.model.rotations import skew
import model_helpers
from model_helpers import close


def random_model(seed):
    """Return (model, rng): a small random tree, joints in tree order."""
    return model_helpers.random_model(seed, max_joints=8, max_fixed=3, shuffle=False)


def symmetric(H, n):
    """H[:, s*n + k] + H[:, k*n + s]: the part of a Hessian that q' kron q' sees."""
    H3 = H.reshape(-1, n, n)
    return (H3 + H3.transpose(0, 2, 1)).reshape(-1, n * n)


def test_block_skew_identities_of_section_2():
    """Eqs. (16)-(18): (A a)~ = A~ (E_3 kron a) (OCR drops the tilde), a~ A = -A~ (a kron E_m)."""
    rng = np.random.default_rng(0)
    A, a, b = rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=3)
    close(skew(A @ a), block_skew(A) @ np.kron(np.eye(3), a[:, None]))
    close(skew(b) @ A, -block_skew(A) @ np.kron(b[:, None], np.eye(4)))


@pytest.mark.parametrize('seed', range(10))
def test_recursions_match_the_kernels(seed):
    model, rng = random_model(seed)
    n, tree = model.n, model.tree
    for _ in range(2):
        q = rng.uniform(-2, 2, n)
        bodies = relative_motion(tree, q)
        for link, (body, Rb, pb) in model.description.frames.items():
            if body < 0:
                continue
            b = bodies[body]
            point = rng.uniform(-0.5, 0.5, 3)
            local = pb + Rb @ point                       # the point in body coordinates
            T = model.link_pose(q, link)
            close(b.A @ Rb, T[:3, :3])
            close(b.d + b.A @ pb, T[:3, 3])
            # root frame: eqs. (77)-(79), (86)-(88)
            JTG, HTG = point_motion(b.JT, b.JR, b.HT, b.HR, b.A @ local)
            J = model.jacobian(q, link, point)
            Hk = model.hessian(q, link, point)
            close(JTG, J[:3])
            close(b.JR, J[3:])
            close(symmetric(HTG, n), symmetric(Hk[:3], n), 1e-10)
            close(symmetric(b.HR, n), symmetric(Hk[3:], n), 1e-10)
            # body frame (c): eqs. (80)-(82), (89)-(91); the link frame is Rb in (c)
            JTGc, HTGc = point_motion(b.JT_c, b.JR_c, b.HT_star_c, b.HR_c, local)
            Jl = model.jacobian(q, link, point, 'local')
            close(Rb @ Jl[:3], JTGc)
            close(Rb @ Jl[3:], b.JR_c)
            R = b.A                                       # starred: A^T H (eq. 58)
            close(symmetric(HTGc, n), symmetric(R.T @ Hk[:3], n), 1e-10)
            close(symmetric(b.HR_c, n), symmetric(R.T @ Hk[3:], n), 1e-10)   # eq. (65)


@pytest.mark.parametrize('seed', range(6))
def test_recursions_give_the_accelerations_of_the_motion(seed):
    """J q'' + H (q' kron q') against a second difference in time along q + t q' + t^2 q''/2."""
    model, rng = random_model(seed)
    n, tree = model.n, model.tree
    q, qd, qdd = rng.uniform(-1, 1, (3, n))
    h = 1e-4
    path = [q + t * qd + 0.5 * t * t * qdd for t in (-h, 0.0, h)]
    states = [relative_motion(tree, x) for x in path]
    bodies = states[1]
    kk = np.kron(qd, qd)
    for i, b in enumerate(bodies):
        p = rng.uniform(-0.5, 0.5, 3)                     # body coordinates
        JTG, HTG = point_motion(b.JT, b.JR, b.HT, b.HR, b.A @ p)
        x = [s[i].d + s[i].A @ p for s in states]
        close(JTG @ qdd + HTG @ kk, (x[0] - 2 * x[1] + x[2]) / h ** 2, 1e-5)
        w = [s[i].JR @ (qd + t * qdd) for s, t in ((states[0], -h), (states[2], h))]
        close(b.JR @ qdd + b.HR @ kk, (w[1] - w[0]) / (2 * h), 1e-6)
        # in (c): the starred Hessian gives the acceleration in body axes (eq. 59), the
        # rotational one the angular acceleration in body axes (eqs. 63-65)
        JTGc, HTGc = point_motion(b.JT_c, b.JR_c, b.HT_star_c, b.HR_c, p)
        close(JTGc @ qdd + HTGc @ kk, b.A.T @ (JTG @ qdd + HTG @ kk), 1e-10)
        close(b.JR_c @ qdd + b.HR_c @ kk, b.A.T @ (b.JR @ qdd + b.HR @ kk), 1e-10)


def test_stacker_boom_tip_reproduces_eqs_102_to_105(stacker):
    """000 section 5.1 in DH frame 0 (link0), with the two typos of eqs. (103) and (105)."""
    q = np.array([2.0, 0.4, -0.3])
    _, q2, q3 = q
    a3 = 40.0
    bodies = relative_motion(stacker.tree, q)
    body, Rb, pb = stacker.description.frames['link3']
    b = bodies[body]
    R0 = stacker.link_pose(q, 'link0')[:3, :3]          # DH frame 0 in the root frame
    JT, HT = point_motion(b.JT, b.JR, b.HT, b.HR, b.A @ pb)
    s2, c2, s3, c3 = np.sin(q2), np.cos(q2), np.sin(q3), np.cos(q3)
    JT_102 = np.array([[0, -a3 * s2 * c3, -a3 * c2 * s3], [0, 0, -a3 * c3],
                       [1, a3 * c2 * c3, -a3 * s2 * s3]])
    close(R0.T @ JT, JT_102)
    HT_103 = np.zeros((3, 9))
    HT_103[0, [4, 5, 7, 8]] = [-a3 * c2 * c3, a3 * s2 * s3, a3 * s2 * s3, -a3 * c2 * c3]
    HT_103[1, 8] = a3 * s3                                 # printed "a3 sin q"
    HT_103[2, [4, 5, 7, 8]] = [-a3 * s2 * c3, -a3 * c2 * s3, -a3 * c2 * s3, -a3 * s2 * c3]
    close(symmetric(R0.T @ HT, 3), symmetric(HT_103, 3))
    close(R0.T @ b.JR, np.array([[0, 0, s2], [0, -1, 0], [0, 0, -c2]]))
    HR_105 = np.zeros((3, 9))
    HR_105[0, 7], HR_105[2, 7] = c2, s2                   # printed "-sin q2" at (3, 8)
    close(symmetric(R0.T @ b.HR, 3), symmetric(HR_105, 3))
