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
Jacobians and Hessians of every body by the relative-motion recursions (000 eqs. 77-91).

Frame (a) is the root, (b) the parent body and (c) the body; the joint gives the motion of
(c) relative to (b): ^bJ_Tc^(b) and ^bJ_Rc^(b) have the joint axis (in (b): R0 axis) in the
body's column (prismatic, revolute), and ^bH_Tc^(b) = ^bH_Rc^(b) = 0 (the relative
Jacobians do not depend on q). Outward from the root, in the root frame:

    J_Tc = J_Tb - ^bd~_c J_Rb + ^bJ_Tc                                            (77)
    J_Rc = J_Rb + ^bJ_Rc                                                         (78)
    H_Tc = H_Tb - ^bd~_c H_Rb + 2 J~_Rb (^bJ_Tc kron E_n)
           + J~_Rb (J~_Rb kron E_n) (^bd_c kron E_nn) + A_b ^bH_Tc^(b)           (86)
    H_Rc = H_Rb + A_b ^bH_Rc^(b) + J~_Rb (^bJ_Rc kron E_n)                       (87)

and in the body frame (c) (eqs. 80, 81, 89, 90), with A_b^(c) the transpose of the joint
rotation and the starred translational Hessian H* of eq. (58). X~ is the block skew matrix
of eq. (16). A point G fixed on (c) follows eqs. (79), (88) (root frame) and (82), (91)
(frame (c)). OCR readings: eq. (86)'s "E_{m_n}" is E_nn = E_{n^2} (from eq. 14 with m = n);
in eqs. (89) and (91) the tildes sit over the whole product A_b^(c) ^aJ_Rb^(b), the
rotational Jacobian of (b) expressed in (c).

The Hessians these equations give are only defined through their product with
q' kron q' (the paper says so after eqs. 52 and 65): they equal Khang's derivative
dJ/dq of :mod:`.jacobians` up to a part antisymmetric in the two velocity indices, i.e.
their symmetric parts H[:, s*n + k] + H[:, k*n + s] agree.
"""

from dataclasses import dataclass

import numpy as np

from ..model.rotations import skew
from ..model.tree import KinematicTree
from .jacobians import block_skew
from .kinematics import joint_transform


@dataclass(frozen=True)
class BodyMotion:
    """Kinematics of one body frame (c) relative to the root (a), in (a) and in (c)."""

    A: np.ndarray          # A_c^(a): orientation of (c) in the root frame
    d: np.ndarray          # ^0d_c^(a): origin of (c) in the root frame
    JT: np.ndarray         # ^0J_Tc^(a), 3 x n (eq. 77)
    JR: np.ndarray         # ^0J_Rc^(a), 3 x n (eq. 78)
    HT: np.ndarray         # ^0H_Tc^(a), 3 x n^2 (eq. 86)
    HR: np.ndarray         # ^0H_Rc^(a), 3 x n^2 (eq. 87)
    JT_c: np.ndarray       # ^0J_Tc^(c) (eq. 80)
    JR_c: np.ndarray       # ^0J_Rc^(c) (eq. 81)
    HT_star_c: np.ndarray  # ^0H*_Tc^(c) (eq. 89)
    HR_c: np.ndarray       # ^0H_Rc^(c) (eq. 90)


def _coriolis_terms(JR_b: np.ndarray, bJT_c: np.ndarray, bd_c: np.ndarray) -> np.ndarray:
    """2 J~_Rb (^bJ_Tc kron E_n) + J~_Rb (J~_Rb kron E_n) (^bd_c kron E_nn), all in one frame."""
    n = JR_b.shape[1]
    S = block_skew(JR_b)
    return (2.0 * S @ np.kron(bJT_c, np.eye(n))
            + S @ np.kron(S, np.eye(n)) @ np.kron(bd_c[:, None], np.eye(n * n)))


def relative_motion(tree: KinematicTree, q: np.ndarray) -> list[BodyMotion]:
    """Return every body's :class:`BodyMotion` by eqs. (77), (78), (80), (81), (86)-(90)."""
    n = tree.n
    zero_J, zero_H = np.zeros((3, n)), np.zeros((3, n * n))
    root = BodyMotion(np.eye(3), np.zeros(3), zero_J, zero_J, zero_H, zero_H,
                      zero_J, zero_J, zero_H, zero_H)
    bodies: list[BodyMotion] = []
    for i in range(n):
        b = bodies[tree.parent[i]] if tree.parent[i] >= 0 else root
        A_rel, bd_c_b = joint_transform(tree, i, q[i])     # A_c^(b), ^bd_c^(b)
        axis_b = tree.R0[i] @ tree.axis[i]                 # joint axis in (b)
        bJT_c_b, bJR_c_b = np.zeros((3, n)), np.zeros((3, n))
        (bJR_c_b if tree.revolute[i] else bJT_c_b)[:, i] = axis_b
        # root frame (a): eqs. (72), (71), (34), (77), (78), (86), (87)
        A = b.A @ A_rel
        bd_c = b.A @ bd_c_b
        bJT_c, bJR_c = b.A @ bJT_c_b, b.A @ bJR_c_b
        JT = b.JT - skew(bd_c) @ b.JR + bJT_c
        JR = b.JR + bJR_c
        HT = b.HT - skew(bd_c) @ b.HR + _coriolis_terms(b.JR, bJT_c, bd_c)   # + A_b 0
        HR = b.HR + block_skew(b.JR) @ np.kron(bJR_c, np.eye(n))           # + A_b 0
        # body frame (c): A_b^(c) = A_rel^T; eqs. (80), (81), (89), (90)
        Ab_c = A_rel.T
        bd_c_c = Ab_c @ bd_c_b
        bJT_c_c, bJR_c_c = Ab_c @ bJT_c_b, Ab_c @ bJR_c_b
        JR_b_in_c = Ab_c @ b.JR_c                            # ^aJ_Rb expressed in (c)
        JT_c = Ab_c @ b.JT_c - Ab_c @ skew(bd_c_b) @ b.JR_c + bJT_c_c
        JR_c = JR_b_in_c + bJR_c_c
        HT_star_c = (Ab_c @ b.HT_star_c - skew(bd_c_c) @ Ab_c @ b.HR_c
                     + _coriolis_terms(JR_b_in_c, bJT_c_c, bd_c_c))        # + ^bH*_Tc^(c) = 0
        HR_c = (Ab_c @ b.HR_c
                + block_skew(JR_b_in_c) @ np.kron(bJR_c_c, np.eye(n)))     # + ^bH_Rc^(c) = 0
        bodies.append(BodyMotion(A, b.d + bd_c, JT, JR, HT, HR, JT_c, JR_c, HT_star_c, HR_c))
    return bodies


def point_motion(JT: np.ndarray, JR: np.ndarray, HT: np.ndarray, HR: np.ndarray,
                 p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """
    (J_TG, H_TG) of a point G at p from the frame's origin, all in one frame.

    Root frame: eqs. (79), (88) with the plain H_T; frame (c): eqs. (82), (91) with the
    starred H*_T, p in (c) coordinates and the (c)-frame J_R, H_R.
    """
    n = JT.shape[1]
    S = block_skew(JR)
    JTG = JT - skew(p) @ JR
    HTG = HT - skew(p) @ HR + S @ np.kron(S, np.eye(n)) @ np.kron(p[:, None], np.eye(n * n))
    return JTG, HTG
