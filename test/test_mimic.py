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
Mimic joints as holonomic constraints q = B u + d (004 section 5), on hand-written robots.

The cases: a gripper whose fingers are coupled with an offset, a chain of mimics (a mimic of
a mimic of a mimic), a mimic whose primary sits in another branch and comes later in the
document, and a prismatic joint following a revolute one; plus ``urdf/gripper_arm.urdf``
and random trees with mimics. Each test states its independent reference: the coupling
written out by hand from the tags, Pinocchio (its mimic model where it accepts one, else the
projection of its unconstrained model with the hand-written B), finite differences of M_u
(C*_u is eq. 101 of M_u) and of V, Lagrange vs Newton-Euler, M_u' - 2 C_u skew, the energy
balance along an integrated trajectory, and Jacobians by finite differences of link poses.
"""

import inspect
import logging
import re

import numpy as np
import pytest

from kron_dynamics import ModelError, RobotModel
from kron_dynamics.model.rotations import skew
from kron_dynamics.robot_model import CoupledRobotModel
from kron_dynamics.testing.random_urdf import random_inertia, random_urdf

from conftest import URDF_DIR
import pinocchio_oracle

H = 1e-6


def _v(x) -> str:
    return ' '.join(repr(float(v)) for v in x)


def robot(name: str, joints: list, seed: int = 0) -> str:
    """
    URDF text of a tree: joints are (name, parent link, type, axis, mimic or None) in order.

    Every joint's child link is named after it (``<joint>_link``); ``base`` is the root.
    Origins, axes' tilts and the full inertias are random (seeded).
    """
    rng = np.random.default_rng(seed)
    lines = ['<?xml version="1.0"?>', f'<robot name="{name}">', '<link name="base"/>']
    for joint, parent, kind, axis, mimic in joints:
        I_ = random_inertia(rng, rng.uniform(0.01, 0.1))
        lines += [
            f'<joint name="{joint}" type="{kind}"><parent link="{parent}"/>'
            f'<child link="{joint}_link"/>'
            f'<origin xyz="{_v(rng.uniform(-0.3, 0.3, 3))}" '
            f'rpy="{_v(rng.uniform(-1, 1, 3))}"/>'
            f'<axis xyz="{_v(np.asarray(axis) + rng.uniform(-0.2, 0.2, 3))}"/>'
            '<limit lower="-2" upper="2" effort="10" velocity="1"/>'
            + (f'<mimic joint="{mimic[0]}" multiplier="{mimic[1]!r}" offset="{mimic[2]!r}"/>'
               if mimic else '') + '</joint>',
            f'<link name="{joint}_link"><inertial>'
            f'<origin xyz="{_v(rng.uniform(-0.2, 0.2, 3))}" '
            f'rpy="{_v(rng.uniform(-1, 1, 3))}"/>'
            f'<mass value="{float(rng.uniform(0.2, 2.0))!r}"/><inertia '
            + ' '.join(f'{k}="{float(I_[i, j])!r}"' for k, i, j in (
                ('ixx', 0, 0), ('ixy', 0, 1), ('ixz', 0, 2), ('iyy', 1, 1), ('iyz', 1, 2),
                ('izz', 2, 2)))
            + '/></inertial></link>']
    lines.append('</robot>')
    return '\n'.join(lines)


X, Y, Z = (1, 0, 0), (0, 1, 0), (0, 0, 1)
# case: (joints, the coupling written out by hand: mimic -> (primary, multiplier, offset))
CASES = {
    'gripper_with_offset_fingers': (
        [('arm1', 'base', 'revolute', Z, None),
         ('arm2', 'arm1_link', 'revolute', Y, None),
         ('finger_l', 'arm2_link', 'prismatic', Y, None),
         ('finger_r', 'arm2_link', 'prismatic', Y, ('finger_l', -1.0, 0.01))],
        {'finger_r': ('finger_l', -1.0, 0.01)}),
    'mimic_chain': (
        [('j1', 'base', 'revolute', Z, None),
         ('j2', 'j1_link', 'revolute', X, ('j1', 0.5, 0.1)),
         ('j3', 'j2_link', 'revolute', Y, ('j2', -2.0, 0.3)),
         ('j4', 'j3_link', 'prismatic', Z, ('j3', 0.05, 0.0)),
         ('j5', 'j4_link', 'revolute', X, None)],
        # q2 = 0.5 u1 + 0.1; q3 = -2 q2 + 0.3 = -u1 + 0.1; q4 = 0.05 q3 = -0.05 u1 + 0.005
        {'j2': ('j1', 0.5, 0.1), 'j3': ('j1', -1.0, 0.1), 'j4': ('j1', -0.05, 0.005)}),
    'cross_branch': (
        [('left1', 'base', 'revolute', Z, None),
         ('right1', 'base', 'revolute', Z, ('left2', 1.5, -0.2)),   # primary comes later
         ('left2', 'left1_link', 'revolute', Y, None),
         ('right2', 'right1_link', 'revolute', X, None)],
        {'right1': ('left2', 1.5, -0.2)}),
    'prismatic_follows_revolute': (
        [('shoulder', 'base', 'revolute', Z, None),
         ('slide', 'shoulder_link', 'prismatic', X, ('shoulder', 0.02, 0.01)),
         ('wrist', 'slide_link', 'continuous', Y, None)],
        {'slide': ('shoulder', 0.02, 0.01)}),
}


def case_model(case: str) -> RobotModel:
    """Load one hand-written case."""
    return RobotModel.from_urdf_string(robot(case, CASES[case][0]), source=f'{case}.urdf')


def hand_coupling(model, expected: dict):
    """B and d written out from the expected couplings, rows in full_joint_names order."""
    B = np.zeros((len(model.full_joint_names), model.n))
    d = np.zeros(len(model.full_joint_names))
    for i, name in enumerate(model.full_joint_names):
        primary, multiplier, offset = expected.get(name, (name, 1.0, 0.0))
        B[i, model.joint_names.index(primary)] = multiplier
        d[i] = offset
    return B, d


def state(model, seed=1):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, model.n), rng.uniform(-1, 1, model.n),
            rng.uniform(-1, 1, model.n))


def scale(A):
    return max(float(np.max(np.abs(A))), 1e-12)


ALL = [*CASES, 'gripper_arm']


def load(case):
    if case == 'gripper_arm':
        return RobotModel.from_urdf_file(URDF_DIR / 'gripper_arm.urdf')
    return case_model(case)


GRIPPER_ARM = {'right_finger_joint': ('left_finger_joint', 1.0, 0.002),
               'flap_joint': ('elbow', 0.02, 0.01)}


def expected_coupling(case):
    return GRIPPER_ARM if case == 'gripper_arm' else CASES[case][1]


# ----------------------------------------------------------------- the coupling
@pytest.mark.parametrize('case', ALL)
def test_coupling_resolved_as_written_by_hand(case):
    model = load(case)
    expected = expected_coupling(case)
    assert isinstance(model, CoupledRobotModel)
    assert set(model.mimic_joints) == set(expected)
    written = {} if case == 'gripper_arm' else {
        name: tag for name, _, _, _, tag in CASES[case][0] if tag is not None}
    for name, (primary, multiplier, offset) in expected.items():
        mimic = model.mimic_joints[name]
        assert mimic.primary == primary
        if written:         # the <mimic> element as written, before chains are resolved
            assert mimic.tag == written[name]
        assert mimic.multiplier == pytest.approx(multiplier, rel=1e-15)
        assert mimic.offset == pytest.approx(offset, rel=1e-15, abs=1e-16)
    assert model.joint_names == tuple(j for j in model.description.joint_names
                                      if j not in expected)
    assert model.full_joint_names[:model.n] == model.joint_names
    B, d = model.coupling()
    B_hand, d_hand = hand_coupling(model, expected)
    np.testing.assert_allclose(B, B_hand, rtol=1e-15)
    np.testing.assert_allclose(d, d_hand, atol=1e-16)
    u, ud, udd = state(model)
    np.testing.assert_allclose(model.full_configuration(u), B_hand @ u + d_hand, atol=1e-15)
    np.testing.assert_allclose(model.full_velocity(ud), B_hand @ ud, atol=1e-15)
    np.testing.assert_allclose(model.full_acceleration(udd), B_hand @ udd, atol=1e-15)


def test_model_without_mimic_is_a_plain_robot_model():
    model = RobotModel.from_urdf_file(URDF_DIR / 'rp_arm.urdf')
    assert type(model) is RobotModel and not model.mimic_joints
    assert model.full_joint_names == model.joint_names
    B, d = model.coupling()
    np.testing.assert_array_equal(B, np.eye(2))
    q = np.array([0.3, 0.2])
    np.testing.assert_array_equal(model.full_configuration(q), q)


def test_mimic_on_a_fixed_joint_is_ignored_with_a_debug_line(caplog):
    xml = robot('fixed_mimic', [('j1', 'base', 'revolute', Z, None),
                                ('j2', 'j1_link', 'revolute', X, None)])
    xml = xml.replace('type="revolute"><parent link="j1_link"/>',
                      'type="fixed"><parent link="j1_link"/>').replace(
        '<child link="j2_link"/>', '<child link="j2_link"/><mimic joint="j1"/>')
    with caplog.at_level(logging.DEBUG, logger='kron_dynamics'):
        model = RobotModel.from_urdf_string(xml, source='fixed_mimic.urdf')
    assert type(model) is RobotModel and model.joint_names == ('j1',)
    lines = [r for r in caplog.records if '<joint/mimic>' in r.getMessage()]
    assert len(lines) == 1 and lines[0].levelno == logging.DEBUG, lines
    assert ("ignored 1 <joint/mimic> element(s) of fixed joints ['j2']: a fixed joint has no "
            'position to follow') in lines[0].getMessage()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_joint_order_of_the_independent_joints():
    default = load('mimic_chain')
    model = RobotModel.from_urdf_string(robot('mimic_chain', CASES['mimic_chain'][0]),
                                        joint_names=['j5', 'j1'])
    assert model.joint_names == ('j5', 'j1')
    u = np.array([0.3, -0.4])
    np.testing.assert_allclose(model.mass_matrix(u),
                               default.mass_matrix(u[::-1])[::-1, ::-1], atol=1e-15)
    with pytest.raises(ModelError, match=r"\['j3'\] are mimic joints, which follow other"):
        RobotModel.from_urdf_string(robot('mimic_chain', CASES['mimic_chain'][0]),
                                    joint_names=['j1', 'j3', 'j5'])


# ----------------------------------------------------------------- against Pinocchio
@pytest.mark.parametrize('case', ALL)
def test_dynamics_agree_with_pinocchio(case, tmp_path):
    """Pinocchio's mimic model if it accepts one, else its tree projected with the hand B."""
    pin = pytest.importorskip('pinocchio', reason='Pinocchio (PyPI pin) is the oracle here')
    model = load(case)
    path = URDF_DIR / 'gripper_arm.urdf' if case == 'gripper_arm' else tmp_path / 'r.urdf'
    if case != 'gripper_arm':
        path.write_text(robot(case, CASES[case][0]))
    B, d = hand_coupling(model, expected_coupling(case))
    try:
        pmodel, mimic = pin.buildModelFromUrdf(str(path), True), True
    except ValueError:      # Pinocchio refuses some mimic layouts
        pmodel, mimic = pin.buildModelFromUrdf(str(path)), False
    for seed in range(3):
        u, ud, udd = state(model, seed)
        if mimic:
            ref = pinocchio_oracle.dynamics(pin, pmodel, model.joint_names, u, ud, udd)
        else:
            full = pinocchio_oracle.dynamics(pin, pmodel, model.full_joint_names, B @ u + d,
                                             B @ ud, B @ udd)
            ref = {'M': B.T @ full['M'] @ B, 'G': B.T @ full['G'], 'tau': B.T @ full['tau'],
                   'coriolis': B.T @ full['coriolis']}
        floor = scale(ref['M']) * (1 + scale(ud) ** 2)
        ours = {'M': model.mass_matrix(u), 'G': model.gravity_torque(u),
                'tau': model.inverse_dynamics(u, ud, udd),
                'coriolis': model.coriolis_vector(u, ud)}
        for key, value in ours.items():
            assert pinocchio_oracle.relative_error(value, ref[key], 1e-6 * floor) < 1e-9, key
        assert pinocchio_oracle.relative_error(model.coriolis_star(u) @ np.kron(ud, ud),
                                               ref['coriolis'], 1e-6 * floor) < 1e-9
    assert mimic == (case != 'mimic_chain')   # Pinocchio 4.1 refuses a mimic of a mimic


# ----------------------------------------------------------------- internal consistency
def fd(f, u, k, h=H):
    e = np.zeros_like(u)
    e[k] = h
    return (f(u + e) - f(u - e)) / (2 * h)


@pytest.mark.parametrize('case', ALL)
def test_coriolis_star_is_eq_101_of_the_constrained_mass_matrix(case):
    """C*_u = B^T C*(q)(B kron B) equals eq. (101) applied to M_u, by finite differences."""
    model = load(case)
    u, _, _ = state(model)
    n = model.n
    dM = np.stack([fd(model.mass_matrix, u, k) for k in range(n)], axis=2)   # [i, j, k]
    expected = (dM - 0.5 * dM.transpose(2, 1, 0)).reshape(n, n * n)
    C = model.coriolis_star(u)
    np.testing.assert_allclose(C, expected, atol=1e-7 * scale(expected))
    np.testing.assert_allclose(model.coriolis_star(u, 'hessian'), C, atol=1e-12 * scale(C))


@pytest.mark.parametrize('case', ALL)
def test_gravity_is_the_gradient_of_the_potential(case):
    model = load(case)
    u, _, _ = state(model)
    expected = np.array([fd(model.potential_energy, u, k) for k in range(model.n)])
    np.testing.assert_allclose(model.gravity_torque(u), expected, atol=1e-7 * scale(expected))


@pytest.mark.parametrize('case', ALL)
def test_newton_euler_equals_lagrange_in_u(case):
    model = load(case).with_armature({})
    u, ud, udd = state(model)
    M, C, G = model.mass_matrix(u), model.coriolis_star(u), model.gravity_torque(u)
    tau = model.inverse_dynamics(u, ud, udd)
    np.testing.assert_allclose(tau, M @ udd + C @ np.kron(ud, ud) + G, atol=1e-12 * scale(tau))
    np.testing.assert_allclose(model.bias_torque(u, ud), C @ np.kron(ud, ud) + G,
                               atol=1e-12 * scale(tau))
    np.testing.assert_allclose(model.coriolis_matrix(u, ud) @ ud, C @ np.kron(ud, ud),
                               atol=1e-12 * scale(tau))
    np.testing.assert_allclose(model.forward_dynamics(u, ud, tau), udd, atol=1e-8)
    for method in ('jacobian', 'explicit', 'crba'):
        np.testing.assert_allclose(model.mass_matrix(u, method), M, atol=1e-12 * scale(M))


@pytest.mark.parametrize('case', ALL)
def test_mdot_minus_2c_is_skew_in_u(case):
    model = load(case)
    u, ud, _ = state(model)
    Mdot = (model.mass_matrix(u + H * ud) - model.mass_matrix(u - H * ud)) / (2 * H)
    N = Mdot - 2 * model.coriolis_matrix(u, ud)
    np.testing.assert_allclose(N, -N.T, atol=1e-7 * scale(Mdot))


@pytest.mark.parametrize('case', ALL)
def test_energy_balance_along_an_integrated_trajectory(case):
    """
    With constant tau_u and no damping, T + V - tau_u . u is conserved (its rate is zero).

    The constrained RK4 (u) against the energy of the constrained system; damping takes
    energy out.
    """
    model = load(case)
    rng = np.random.default_rng(3)
    u, ud = rng.uniform(-0.5, 0.5, model.n), rng.uniform(-0.5, 0.5, model.n)
    tau = rng.uniform(-0.2, 0.2, model.n)

    def energy(x, v):
        return model.kinetic_energy(x, v) + model.potential_energy(x) - tau @ x

    e0 = energy(u, ud)
    x, v = model.simulate(u, ud, tau, 2e-4, 500)
    assert abs(energy(x, v) - e0) < 1e-7 * (abs(e0) + model.kinetic_energy(u, ud) + 1)
    assert np.max(np.abs(x - u)) > 1e-3     # it did move
    xd, vd = model.simulate(u, ud, tau, 2e-4, 500, damping=np.full(model.n, 0.5))
    assert energy(xd, vd) < energy(x, v)


@pytest.mark.parametrize('case', ALL)
def test_kinematics_include_the_mimic_motion(case):
    """J_u and H_u by finite differences of link poses in u; a mimic link moves with u."""
    model = load(case)
    u, _, _ = state(model)
    n = model.n
    for link in model.link_names:
        JT, JR = model.jacobians(u, link)
        HT, HR = model.hessians(u, link)
        R = model.link_pose(u, link)[:3, :3]
        for k in range(n):
            np.testing.assert_allclose(JT[:, k], fd(lambda x: model.link_pose(x, link)[:3, 3],
                                                    u, k), atol=1e-8)
            dR = fd(lambda x: model.link_pose(x, link)[:3, :3], u, k)
            np.testing.assert_allclose(skew(JR[:, k]), dR @ R.T, atol=1e-8)
            dJT = fd(lambda x: model.jacobians(x, link)[0], u, k)
            dJR = fd(lambda x: model.jacobians(x, link)[1], u, k)
            for s in range(n):
                np.testing.assert_allclose(HT[:, s * n + k], dJT[:, s], atol=1e-7)
                np.testing.assert_allclose(HR[:, s * n + k], dJR[:, s], atol=1e-7)
    mimic = next(iter(model.mimic_joints.values()))
    child = model.description.joints[mimic.name].child_link
    JT, JR = model.jacobians(u, child)
    k = model.joint_names.index(mimic.primary)
    assert np.linalg.norm(JT[:, k]) + np.linalg.norm(JR[:, k]) > 1e-6


@pytest.mark.parametrize('case', ALL)
def test_kinematics_api_in_u(case):
    """6 x n Jacobians, J', accelerations, Hessians, CoM in u: against derivatives in u."""
    model = load(case)
    u, ud, udd = state(model, 3)
    n = model.n
    for link in model.link_names:
        for frame in ('world', 'local', 'local_world_aligned'):
            J = model.jacobian(u, link, frame=frame)
            H = model.hessian(u, link, frame=frame)
            for k in range(n):
                np.testing.assert_allclose(
                    H.reshape(6, n, n)[:, :, k],
                    fd(lambda x: model.jacobian(x, link, frame=frame), u, k), atol=1e-7)
            np.testing.assert_allclose(model.jacobian_derivative(u, ud, link, frame=frame),
                                       H.reshape(6, n, n) @ ud, atol=1e-10)
        J = model.jacobian(u, link)
        np.testing.assert_allclose(
            model.acceleration(u, ud, udd, link),
            J @ udd + model.jacobian_derivative(u, ud, link) @ ud, atol=1e-10)
        np.testing.assert_allclose(model.link_poses(u)[model.link_names.index(link)],
                                   model.link_pose(u, link), atol=1e-14)
    Jc = model.center_of_mass_jacobian(u)
    for k in range(n):
        np.testing.assert_allclose(Jc[:, k], fd(model.center_of_mass, u, k), atol=1e-8)


def test_locking_a_primary_locks_its_mimics_and_a_mimic_cannot_be_locked():
    model = load('gripper_arm')
    reduced = model.locked({'left_finger_joint': 0.01})
    assert reduced.joint_names == ('shoulder', 'elbow')
    assert 'right_finger_joint' not in reduced.mimic_joints
    u = np.array([0.3, -0.2])
    np.testing.assert_allclose(reduced.link_pose(u, 'right_finger'),
                               model.link_pose(np.r_[u, 0.01], 'right_finger'), atol=1e-14)
    np.testing.assert_allclose(reduced.gravity_torque(u), model.gravity_torque(
        np.r_[u, 0.01])[:2], atol=1e-10)
    with pytest.raises(ModelError, match=r"cannot lock \['right_finger_joint'\]: mimic"):
        model.locked({'right_finger_joint': 0.01})
    others = RobotModel.from_urdf_file(URDF_DIR / 'gripper_arm.urdf', joint_names=['shoulder'],
                                       lock_others=True)
    assert others.joint_names == ('shoulder',)
    # a mimic joint in the list: named against the joints of the URDF, none locked yet
    with pytest.raises(ModelError, match=re.escape(
            "joint_names: ['right_finger_joint'] are mimic joints, which follow other joints "
            "and are not coordinates; the independent joints are ['shoulder', 'elbow', "
            "'left_finger_joint']")):
        RobotModel.from_urdf_file(URDF_DIR / 'gripper_arm.urdf',
                                  joint_names=['shoulder', 'right_finger_joint'],
                                  lock_others=True)


@pytest.mark.parametrize('case', ALL)
def test_external_wrench_through_the_jacobians(case):
    """tau_u(f_ext) - tau_u = -(J_T^T f + J_R^T m) for a wrench at a link frame origin."""
    model = load(case)
    u, ud, udd = state(model)
    base = model.inverse_dynamics(u, ud, udd)
    for link in model.link_names:
        w = np.random.default_rng(4).uniform(-2, 2, 6)
        JT, JR = model.jacobians(u, link)
        tau = model.inverse_dynamics(u, ud, udd, f_ext={link: w})
        np.testing.assert_allclose(tau - base, -(JT.T @ w[:3] + JR.T @ w[3:]), atol=1e-12)


def test_friction_armature_moved_mass_and_copies_on_the_gripper_arm():
    model = RobotModel.from_urdf_file(URDF_DIR / 'gripper_arm.urdf')
    assert model.joint_names == ('shoulder', 'elbow', 'left_finger_joint')
    # both fingers have damping 2 and friction 0.5; the right one moves with the left one
    np.testing.assert_allclose(model.friction_torque([0.0, 0.0, 0.1]),
                               [0.0, 0.0, 2 * (2.0 * 0.1 + 0.5)], atol=1e-15)
    moved = model.moved_mass()
    assert moved[2] == pytest.approx(0.1)           # both fingers, 0.05 kg each
    assert moved[1] == pytest.approx(1.2 + 0.6 + 0.1 + 0.2)     # forearm, hand, fingers, flap
    u = np.array([0.3, -0.5, 0.02])
    armed = model.with_armature({'elbow': 0.5})
    assert isinstance(armed, CoupledRobotModel)
    np.testing.assert_allclose(armed.mass_matrix(u) - model.mass_matrix(u),
                               np.diag([0.0, 0.5, 0.0]), atol=1e-15)
    np.testing.assert_allclose(armed.inverse_dynamics(u, u, u) - model.inverse_dynamics(u, u, u),
                               [0.0, 0.5 * u[1], 0.0], atol=1e-12)
    sideways = model.with_gravity([0.0, -9.81, 0.0])
    assert sideways.mimic_joints == model.mimic_joints
    assert not np.allclose(sideways.gravity_torque(u), model.gravity_torque(u))
    np.testing.assert_allclose(sideways.mass_matrix(u), model.mass_matrix(u), atol=1e-15)


def test_batches_stack_single_results():
    model = load('gripper_arm')
    rng = np.random.default_rng(5)
    U, Ud, Udd = (rng.uniform(-1, 1, (3, model.n)) for _ in range(3))
    for name, args in (('mass_matrix', (U,)), ('coriolis_star', (U,)),
                       ('gravity_torque', (U,)), ('coriolis_vector', (U, Ud)),
                       ('coriolis_matrix', (U, Ud)), ('bias_torque', (U, Ud)),
                       ('inverse_dynamics', (U, Ud, Udd)), ('forward_dynamics', (U, Ud, Udd)),
                       ('full_configuration', (U,)), ('potential_energy', (U,)),
                       ('kinetic_energy', (U, Ud)), ('friction_torque', (Ud,))):
        method = getattr(model, name)
        stacked = method(*args)
        single = np.stack([np.asarray(method(*(a[k] for a in args))) for k in range(3)])
        np.testing.assert_allclose(stacked, single, atol=1e-12, err_msg=name)
        empty = method(*(a[:0] for a in args))
        assert empty.shape == (0, *single.shape[1:]), name
    JT, JR = model.jacobians(U, 'right_finger')
    assert JT.shape == (3, 3, model.n)
    np.testing.assert_allclose(JT[1], model.jacobians(U[1], 'right_finger')[0])
    x, v = model.simulate(U, Ud, Udd, 1e-3, 2)
    np.testing.assert_allclose(x[2], model.simulate(U[2], Ud[2], Udd[2], 1e-3, 2)[0])


def test_the_stock_pandas_forward_dynamics_batch_is_one_compiled_call(monkeypatch):
    """
    example-robot-data's Panda with its hand (a mimic finger): one compiled batch.

    Each row is the single call's, bit for bit; no row falls back to a Python loop; a row
    that is not finite is named as the single call names it.
    """
    from kron_dynamics.testing.pinocchio_pair import robots_dir
    model = RobotModel.from_urdf_file(robots_dir() / 'panda_description/urdf/panda.urdf')
    assert isinstance(model, CoupledRobotModel) and model.n == 8
    rng = np.random.default_rng(21)
    N = 37
    U = np.array([model.random_configuration(rng) for _ in range(N)])
    Ud, Tau = rng.uniform(-2, 2, (2, N, model.n))
    single = np.array([model.forward_dynamics(U[k], Ud[k], Tau[k]) for k in range(N)])

    def no_loop(*args):
        raise AssertionError('the batch fell back to a loop over rows')
    monkeypatch.setattr(model, '_per_row', no_loop)
    np.testing.assert_array_equal(model.forward_dynamics(U, Ud, Tau), single)
    Tau[29, 3] = np.nan
    with pytest.raises(ValueError, match=re.escape("tau[29] is not finite at ['panda_joint4']")):
        model.forward_dynamics(U, Ud, Tau)


def test_the_stock_pandas_derivative_batches_are_one_compiled_call(monkeypatch):
    """inverse_dynamics_derivatives and forward_dynamics_derivatives: rows = single calls."""
    from kron_dynamics.testing.pinocchio_pair import robots_dir
    model = RobotModel.from_urdf_file(robots_dir() / 'panda_description/urdf/panda.urdf')
    rng = np.random.default_rng(22)
    N = 13
    U = np.array([model.random_configuration(rng) for _ in range(N)])
    Ud, A = rng.uniform(-2, 2, (2, N, model.n))
    singles = {name: [getattr(model, name)(U[k], Ud[k], A[k]) for k in range(N)]
               for name in ('inverse_dynamics_derivatives', 'forward_dynamics_derivatives')}

    def no_loop(*args):
        raise AssertionError('the batch fell back to a loop over rows')
    monkeypatch.setattr(model, '_per_row', no_loop)
    for name, rows in singles.items():
        batch = getattr(model, name)(U, Ud, A)
        for part in range(3):
            np.testing.assert_array_equal(batch[part], np.stack([r[part] for r in rows]), name)


def test_bad_inputs_name_the_independent_joints():
    model = load('gripper_arm')
    with pytest.raises(ValueError, match=r'q must have shape \(3,\) or \(N, 3\)'):
        model.mass_matrix(np.zeros(5))
    with pytest.raises(ValueError, match=r"q is not finite at \['elbow'\]"):
        model.gravity_torque([0.0, np.nan, 0.0])
    with pytest.raises(ModelError, match="unknown link 'nope'"):
        model.jacobians(np.zeros(3), 'nope')


# ----------------------------------------------------------------- random trees
@pytest.mark.parametrize('seed', range(6))
def test_random_trees_with_mimics_against_the_projected_tree(seed):
    """On random trees with mimics: the coupled model = B^T (tree without tags) B."""
    xml = random_urdf(np.random.default_rng(seed), 7, 2, mimic_fraction=0.4)
    model = RobotModel.from_urdf_string(xml)
    if not model.mimic_joints:
        pytest.skip('no mimic drawn')   # not with these seeds (asserted below)
    plain = RobotModel.from_urdf_string(xml.replace('<mimic ', '<ignored_tag '),
                                        joint_names=model.full_joint_names)
    B, d = model.coupling()
    u, ud, udd = state(model, seed)
    q, qd, qdd = B @ u + d, B @ ud, B @ udd
    np.testing.assert_allclose(model.mass_matrix(u), B.T @ plain.mass_matrix(q) @ B,
                               atol=1e-12)
    np.testing.assert_allclose(model.coriolis_star(u),
                               B.T @ plain.coriolis_star(q) @ np.kron(B, B), atol=1e-12)
    np.testing.assert_allclose(model.inverse_dynamics(u, ud, udd),
                               B.T @ plain.inverse_dynamics(q, qd, qdd), atol=1e-11)
    n = model.n
    dM = np.stack([fd(model.mass_matrix, u, k) for k in range(n)], axis=2)
    expected = (dM - 0.5 * dM.transpose(2, 1, 0)).reshape(n, n * n)
    np.testing.assert_allclose(model.coriolis_star(u), expected, atol=1e-7 * scale(expected))


@pytest.mark.parametrize('seed', range(6))
def test_the_compiled_mimic_path_equals_the_numpy_projection(seed):
    """kernels/coupled.py (1-D float64 inputs) against the projections of the general path."""
    rng = np.random.default_rng(40 + seed)
    model = RobotModel.from_urdf_string(random_urdf(rng, 7, 2, mimic_fraction=0.5))
    assert model.mimic_joints and model._cpl is not None
    model = model.with_armature(rng.uniform(0, 0.1, model.n))
    u, ud, udd = state(model, seed)
    B, d = model.coupling()
    q = B @ u + d

    def both(method, *args, **kw):     # lists take the checked NumPy path
        fast = method(*args, **kw)
        slow = method(*[list(a) if isinstance(a, np.ndarray) else a for a in args], **kw)
        np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-12)
    both(model.mass_matrix, u)
    both(model.inverse_dynamics, u, ud, udd)
    both(model.gravity_torque, u)
    both(model.bias_torque, u, ud)
    both(model.coriolis_vector, u, ud)
    both(model.forward_dynamics, u, ud, udd)
    both(model.link_poses, u)
    both(model.coriolis_matrix, u, ud)
    both(model.centroidal_momentum_matrix, u)
    both(model.coriolis_star, u)
    both(model.christoffel, u)
    for root in (False, True):
        both(model.center_of_mass, u, root)
        both(model.center_of_mass_jacobian, u, root)
    for link in model.link_names:
        both(model.link_pose, u, link)
        for frame in ('world', 'local', 'LOCAL_WORLD_ALIGNED'):
            both(model.jacobian, u, link, frame=frame)
            both(model.jacobian_derivative, u, ud, link, frame=frame)
            both(model.hessian, u, link, frame=frame)
        both(model.jacobians, u, link)
        both(model.hessians, u, link)
        # the rows of the whole tree's (J_T, J_R) and (H_T, H_R), projected as the
        # general path did before the compiled one
        JT, JR = model.unconstrained.jacobians(q, link)
        HT, HR = model.unconstrained.hessians(q, link)
        N, n = B.shape

        def projected(H):           # H_u[:, s n + k] = sum_ab H[:, a N + b] B[a, s] B[b, k]
            return np.einsum('iab,as,bk->isk', H.reshape(3, N, N), B, B).reshape(3, n * n)
        for ours, theirs in zip(model.jacobians(u, link) + model.hessians(u, link),
                                (JT @ B, JR @ B, projected(HT), projected(HR))):
            np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)
        for frame in ('local', 'local_world_aligned'):
            both(model.acceleration, u, ud, udd, link, frame=frame)
    with pytest.raises(ValueError, match="frame 'world' has no classical acceleration"):
        model.acceleration(u, ud, udd, model.link_names[-1], frame='world')


def test_random_seeds_draw_mimics():
    drawn = [len(RobotModel.from_urdf_string(
        random_urdf(np.random.default_rng(seed), 7, 2, mimic_fraction=0.4)).mimic_joints)
        for seed in range(6)]
    assert all(drawn), drawn


# ----------------------------------------------------------------- the facade
# RobotModel methods whose general implementation is right for the constrained model
# because it only calls methods that CoupledRobotModel overrides (or reads joint info)
DERIVED = {'christoffel', 'kinetic_energy', 'with_gravity', 'with_armature', 'from_dh',
           'from_urdf_file', 'from_urdf_string', 'effort_limits', 'velocity_limits',
           'description', 'gravity', 'link_names', 'mimic_joints', 'locked_joints',
           'operational_space_inertia',
           # the configuration space: sizes, names and steps from n, joints and _inputs
           'base', 'nq', 'nv', 'configuration_names', 'velocity_names', 'position_limits',
           'neutral', 'random_configuration', 'integrate', 'difference', 'base_pose',
           'base_state',
           # B and d of the model's JointMap (model/coordinates.py), the identity without mimics
           'coupling',
           # the GPU kernels, generated from the whole tree and B (kron_dynamics.gpu)
           'on_gpu',
           # from the projected jacobian_derivative, link_pose, jacobian, center_of_mass
           'jacobian_derivative_times_velocity',
           # from the projected jacobian, acceleration, link_pose, M, h and tau
           'contact_jacobian', 'constrained_forward_dynamics', 'contact_inverse_dynamics',
           # a new description of the same tree, built as RobotModel(description, ...)
           'with_frame', 'with_dynamic_parameters',
           # the bodies of the whole tree (mimic ones included): the regressor's columns
           'body_names', 'dynamic_parameters',
           # from the projected inverse_dynamics_derivatives, forward_dynamics(_derivatives)
           'gravity_derivative', 'linearize',
           # from the projected inverse_dynamics_derivatives and constrained dynamics, and
           # the unconstrained tree's link poses, projected by B (test_constrained_derivatives)
           'constrained_forward_dynamics_derivatives'}


def test_every_public_method_is_constrained_or_derived():
    """A method added to RobotModel must be projected in CoupledRobotModel or listed here."""
    public = {name for name, _ in inspect.getmembers(RobotModel) if not name.startswith('_')}
    overridden = {name for name in public if name in vars(CoupledRobotModel)}
    assert public - overridden - DERIVED == set(), (
        'give these a u -> q / projection in CoupledRobotModel (or list them in DERIVED '
        'if they only call projected methods)')


@pytest.mark.parametrize('seed', range(4))
def test_the_compiled_rk4_of_a_mimic_model_is_the_readable_one(seed, monkeypatch):
    """kernels.coupled.coupled_rk4 against CoupledRobotModel.simulate's NumPy RK4."""
    rng = np.random.default_rng(80 + seed)
    model = RobotModel.from_urdf_string(random_urdf(rng, 6, 2, mimic_fraction=0.5))
    assert model.mimic_joints and model._cpl is not None
    model = model.with_armature(rng.uniform(0.05, 0.2, model.n))
    u, ud, udd = state(model, seed)
    tau = model.inverse_dynamics(u, ud, udd)
    damping = rng.uniform(0.0, 0.5, model.n)
    fast = [model.simulate(u, ud, tau, 1e-3, 5, damping=d) for d in (None, damping)]
    monkeypatch.setattr(model, '_cpl', None)       # the readable RK4
    slow = [model.simulate(u, ud, tau, 1e-3, 5, damping=d) for d in (None, damping)]
    for pair_fast, pair_slow in zip(fast, slow):
        for a, b in zip(pair_fast, pair_slow):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * np.abs(b).max())
