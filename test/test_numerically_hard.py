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
Numerically hard models: results stay finite and accurate, or singularity is reported.

- The rover arm of 003 (``urdf/rover_arm.urdf``): M is exactly singular (links 3 and 5 have
  no inertia about their own axes). Variants with 1e-16 .. 1e-6 kg m^2 in place of the zeros
  make M nearly singular, cond(M) ~ 0.1 / eps.
- The stacker of 000 (``urdf/stacker.urdf``): masses of 200 t, 150 t and a 60 t boom 40 m
  out, on a carriage of 1e-3 kg m^2, travelling hundreds of metres on its rail.
- A boom on a rail: a 1 kg point-like boom 1000 m out on a massless carriage. Rail travel
  and slew nearly cancel (cond(M) up to 1e16) although every Cholesky pivot of M looks
  harmless; this case caught forward dynamics accepting a numerically singular M.
- Random trees with prismatic travel up to 1e3 m.

Known limit (measured here, not a failure): the compiled CRBA (and the readable 'crba') works
with spatial inertias about the root origin, so M loses (distance from the root / size of
the body)^2 of relative accuracy: 3e-14 for the stacker 400 m down its rail, 4e-12 at 4 km.
The bounds below account for it by measuring M's error against the Jacobian method.

Checks: M symmetric and positive semidefinite; the compiled kernels (CRBA, Newton-Euler)
against the readable algorithms (CRBA, 000 eq. 95, 003 eqs. 30-37, Newton-Euler) and C*
against Newton-Euler, all relative to the size of the terms; Jacobians against central
differences; exact invariances (the stacker's rail travel changes nothing but the position).
Forward dynamics either raises ``SingularMassMatrixError`` naming the joints, exactly when
cond(M) > 1/rcond = 1e12, or inverts inverse dynamics to the accuracy that a backward
stable solve guarantees: |dq''| / |q''| <= c eps (cond(M) + |M^-1| s / |q''|), s the size
of the terms of tau.
"""

import logging
import re

import numpy as np
import pytest

from kron_dynamics import RobotModel, SingularMassMatrixError
from kron_dynamics.algorithms.kinematics import com_positions, forward_kinematics
from kron_dynamics.algorithms.rnea import rnea
from kron_dynamics.model.dh import DHRow

from conftest import URDF_DIR
from model_helpers import random_model

EPS = np.finfo(float).eps
RCOND = 1e-12           # the singularity threshold of algorithms/forward_dynamics.py
SLACK = 10.0            # the constant c of the error bounds (measured: below 0.5)
ROVER_TEXT = (URDF_DIR / 'rover_arm.urdf').read_text()
STACKER = RobotModel.from_urdf_file(URDF_DIR / 'stacker.urdf')


def rover_variant(inertia: float) -> RobotModel:
    """Return the rover arm with every zero principal moment set to ``inertia``."""
    logging.getLogger('kron_dynamics').disabled = True
    try:
        text = ROVER_TEXT.replace('ixx="0.0"', f'ixx="{inertia!r}"')
        return RobotModel.from_urdf_string(text.replace('izz="0.0"', f'izz="{inertia!r}"'))
    finally:
        logging.getLogger('kron_dynamics').disabled = False


def boom_on_rail(reach: float, inertia: float) -> str:
    """Return a rail carriage (massless) carrying a 1 kg slewing boom ``reach`` m out."""
    return f"""<robot name="boom_on_rail">
  <link name="base"/>
  <link name="carriage"/>
  <link name="boom"><inertial><origin xyz="0 {reach!r} 0"/><mass value="1"/>
    <inertia ixx="{inertia!r}" ixy="0" ixz="0" iyy="{inertia!r}" iyz="0" izz="{inertia!r}"/>
  </inertial></link>
  <joint name="travel" type="prismatic"><parent link="base"/><child link="carriage"/>
    <axis xyz="1 0 0"/><limit lower="-500" upper="500" effort="1e6" velocity="1"/></joint>
  <joint name="slew" type="revolute"><parent link="carriage"/><child link="boom"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1e6" velocity="1"/></joint>
</robot>"""


def random_tree(seed: int) -> RobotModel:
    """Return a random tree with many prismatic joints (massless links allowed)."""
    logging.getLogger('kron_dynamics').disabled = True
    try:
        return random_model(seed, min_joints=2, fixed=2, shuffle=False,
                            prismatic_fraction=0.6)[0]
    finally:
        logging.getLogger('kron_dynamics').disabled = False


def random_state(model: RobotModel, rng, travel: float = 1e3):
    """Return q (prismatic within +-travel m, revolute within +-pi), qd, qdd."""
    span = np.array([travel if model.joints[j].type == 'prismatic' else np.pi
                     for j in model.joint_names])
    return rng.uniform(-span, span), rng.uniform(-2, 2, model.n), rng.uniform(-5, 5, model.n)


def root_frame_scale(model: RobotModel, q) -> float:
    """Return sum m |c|^2 + tr I over the bodies, c the CoM from the root origin."""
    tree = model.tree
    R, p = forward_kinematics(tree, q)
    c = com_positions(tree, R, p)
    inertias = np.trace(tree.inertia, axis1=1, axis2=2).sum()
    return float(tree.mass @ np.sum(c * c, axis=1) + inertias)


def lever_scale(model: RobotModel, q) -> float:
    """Return sum m (|c| + |p0| + |q| if prismatic): the moment arms Newton-Euler uses."""
    tree = model.tree
    lever = (np.linalg.norm(tree.com, axis=1) + np.linalg.norm(tree.p0, axis=1)
             + np.where(tree.revolute, 0.0, np.abs(q)))
    return float(tree.mass @ lever)


def check_consistent(model: RobotModel, q, qd, qdd, rtol: float = 1e-11):
    """
    Check M, C*, G, tau: finite, M symmetric PSD, compiled = readable within rtol.

    Tolerances are relative to the size of the terms. For M that includes the root-frame
    spatial inertias the CRBA sums (m |c|^2 with c from the root origin): their rounding is
    the CRBA's error, 1e3 eps of them covers it (measured: below 20 eps). For the velocity
    terms it includes the inertial forces Newton-Euler sums (they cancel near some poses).
    """
    M = model.mass_matrix(q)
    assert np.all(np.isfinite(M))
    m_scale = max(np.abs(M).max(), np.finfo(float).tiny)
    np.testing.assert_allclose(M, M.T, rtol=0, atol=1e-13 * m_scale)
    ev = np.linalg.eigvalsh(M)
    assert ev[0] >= -1e-13 * model.n * ev[-1], f'M is not positive semidefinite: {ev}'
    m_tol = rtol * m_scale + 1e3 * EPS * root_frame_scale(model, q)
    for method in ('crba', 'jacobian', 'explicit'):
        np.testing.assert_allclose(model.mass_matrix(q, method), M, rtol=0, atol=m_tol,
                                   err_msg=method)
    Cs = model.coriolis_star(q)
    cv = model.coriolis_vector(q, qd)
    assert np.all(np.isfinite(Cs)) and np.all(np.isfinite(cv))
    # Newton-Euler sums inertial forces m |lever| |qd|^2, more than C* where they cancel
    c_scale = (np.abs(Cs).max() + lever_scale(model, q)) * (qd @ qd)
    np.testing.assert_allclose(Cs @ np.kron(qd, qd), cv, rtol=0, atol=rtol * c_scale)
    G = model.gravity_torque(q)
    g_ref = rnea(model.tree, q, np.zeros(model.n), np.zeros(model.n))
    tau = model.inverse_dynamics(q, qd, qdd)
    tau_ref = rnea(model.tree, q, qd, qdd)
    scale = m_scale * np.abs(qdd).max() + c_scale + np.abs(g_ref).max()
    for value, ref, tol in ((G, g_ref, 0.0), (tau, tau_ref, 0.0),
                            (tau, M @ qdd + cv + G, m_tol * np.abs(qdd).sum())):
        assert np.all(np.isfinite(value))
        np.testing.assert_allclose(value, ref, rtol=0, atol=rtol * scale + tol)
    return M, tau, scale


def check_forward_dynamics(model: RobotModel, q, qd, qdd):
    """
    Forward dynamics inverts inverse dynamics to the conditioning bound, or refuses.

    Return the relative error (None if refused) and cond(M).
    """
    M, tau, scale = check_consistent(model, q, qd, qdd)
    ev = np.linalg.eigvalsh(M)
    cond = ev[-1] / ev[0] if ev[0] > 0 else np.inf
    try:
        qdd_fd = model.forward_dynamics(q, qd, tau)
    except SingularMassMatrixError as exc:
        # refused exactly when lambda_min <= rcond * lambda_max (eigenvalues to rounding)
        assert ev[0] <= RCOND * ev[-1] * (1 + 1e-6) + 1e-15 * ev[-1], (cond, str(exc))
        assert exc.joints and all(j in str(exc) for j in exc.joints)
        return None, cond
    assert ev[0] >= RCOND * ev[-1] * (1 - 1e-6) - 1e-15 * ev[-1], f'accepted cond {cond:.3g}'
    err = np.linalg.norm(qdd_fd - qdd) / np.linalg.norm(qdd)
    # the solve sees M with its computational error: the compiled CRBA works about the root
    # origin and loses (distance from the root / size of the body)^2 relative accuracy; the
    # Jacobian method (000 eq. 95) uses relative positions only
    M_error = np.abs(M - model.mass_matrix(q, 'jacobian')).max() / np.abs(M).max()
    bound = SLACK * ((EPS + M_error) * cond + EPS * scale / ev[0] / np.linalg.norm(qdd))
    assert err <= bound, f'relative error {err:.3g} > bound {bound:.3g} (cond {cond:.3g})'
    return err, cond


# ----------------------------------------------------------------- rover arm
def test_rover_arm_forward_dynamics_and_integrate_report_the_singular_joints(rover_arm):
    rng = np.random.default_rng(0)
    for _ in range(20):
        q, qd, qdd = random_state(rover_arm, rng)
        check_consistent(rover_arm, q, qd, qdd)
        tau = rover_arm.inverse_dynamics(q, qd, qdd)
        with pytest.raises(SingularMassMatrixError, match=r'joint3, joint5') as info:
            rover_arm.forward_dynamics(q, qd, tau)
        assert info.value.joints == ['joint3', 'joint5']
        with pytest.raises(SingularMassMatrixError, match=r'joint3, joint5.*armature') as info:
            rover_arm.simulate(q, qd, tau, 1e-3, 5)
        assert info.value.joints == ['joint3', 'joint5']
    fixed = rover_arm.with_armature([0.0, 0.0, 1e-4, 0.0, 1e-4])
    q, qd, qdd = random_state(fixed, rng)
    tau = np.zeros((3, 5))
    tau[2] = 1e300          # row 2 overflows within the steps: the batch names it
    with pytest.raises(SingularMassMatrixError, match=r'^row 2: mass matrix became singular '
                                                      r'during integration'):
        fixed.simulate(np.stack([q] * 3), np.stack([qd] * 3), tau, 1e-3, 5)
    np.testing.assert_allclose(fixed.forward_dynamics(q, qd, fixed.inverse_dynamics(q, qd, qdd)),
                               qdd, rtol=1e-9)
    assert np.all(np.isfinite(np.concatenate(fixed.simulate(q, qd, np.zeros(5), 1e-3, 10))))


def test_rover_arm_load_warns_that_m_is_singular(caplog):
    with caplog.at_level(logging.WARNING, logger='kron_dynamics'):
        RobotModel.from_urdf_string(ROVER_TEXT, source='rover.urdf')
    messages = [r.getMessage() for r in caplog.records if r.name == 'kron_dynamics']
    for joint, link in (('joint3', 'link3'), ('joint5', 'link5')):
        assert any(re.search(rf"rover\.urdf: joint '{joint}' \(link '{link}'\) moves a tiny "
                             r'inertia: 0 .*M is singular', m) for m in messages), messages


@pytest.mark.parametrize('inertia', [1e-6, 1e-9, 1e-11])
def test_rover_arm_nearly_singular_is_accurate_to_its_conditioning(inertia):
    model = rover_variant(inertia)
    rng = np.random.default_rng(1)
    conds = []
    for _ in range(20):
        err, cond = check_forward_dynamics(model, *random_state(model, rng))
        assert err is not None, f'cond {cond:.3g} refused'
        conds.append(cond)
    # the conditioning is what the inertias make it: cond(M) ~ 0.1 kg m^2 / inertia
    assert 0.5e-2 / inertia < min(conds) and max(conds) < 1 / inertia


@pytest.mark.parametrize('inertia', [1e-14, 1e-16])
def test_rover_arm_numerically_singular_is_refused(inertia):
    model = rover_variant(inertia)
    rng = np.random.default_rng(2)
    for _ in range(10):
        q, qd, qdd = random_state(model, rng)
        err, cond = check_forward_dynamics(model, q, qd, qdd)
        assert err is None, f'cond {cond:.3g} accepted'
        with pytest.raises(SingularMassMatrixError, match=r'joint3, joint5'):
            model.simulate(q, qd, model.inverse_dynamics(q, qd, qdd), 1e-3)


def test_rover_arm_tiny_inertia_warns_on_load(caplog):
    with caplog.at_level(logging.WARNING, logger='kron_dynamics'):
        RobotModel.from_urdf_string(ROVER_TEXT.replace('ixx="0.0"', 'ixx="1e-09"').replace(
            'izz="0.0"', 'izz="1e-09"'), source='rover.urdf')
    messages = ' '.join(r.getMessage() for r in caplog.records)
    assert re.search(r"joint 'joint3' \(link 'link3'\) moves a tiny inertia: 1e-09 .*"
                     r'nearly singular \(cond\(M\) >= 1\.\d+e\+08\)', messages), messages
    assert "joint 'joint5' (link 'link5') moves a tiny inertia" in messages


def test_more_than_five_tiny_joints_are_summed_up_and_the_five_smallest_named(caplog):
    """
    A heavy first body and 7 light ones about the same axis: 7 tiny articulated inertias.

    One line counts them, then one per joint for the 5 smallest, smallest first.
    """
    rows = [DHRow('j1', mass=10.0, inertia=np.eye(3))]
    rows += [DHRow(f'j{i}', mass=1e-12, inertia=np.eye(3) * (10 - i) * 1e-12)
             for i in range(2, 9)]
    with caplog.at_level(logging.WARNING, logger='kron_dynamics'):
        RobotModel.from_dh(rows, 'light_chain')
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 6 and messages[0].startswith(
        'DH table light_chain: 7 joints move a tiny inertia (below 1e-08 times the largest '
        'diagonal entry of M, 1): M is nearly singular; the 5 smallest follow'), messages
    for message, (joint, inertia) in zip(messages[1:], [(8, 2), (7, 3), (6, 4), (5, 5), (4, 6)]):
        assert message.startswith(f"DH table light_chain: joint 'j{joint}' (link "
                                  f"'link{joint}_base', 'link{joint}') moves a tiny inertia: "
                                  f'{inertia}e-12 at q = 0'), message
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger='kron_dynamics'):
        RobotModel.from_dh(rows[:6], 'light_chain')     # 5 tiny: each named, no summary
    assert [r.getMessage()[:len("DH table light_chain: joint 'j6'")]
            for r in caplog.records] == [f"DH table light_chain: joint 'j{i}'"
                                         for i in (6, 5, 4, 3, 2)]


def test_rover_arm_warning_counts_the_armature(caplog):
    """An armature that makes M regular silenced nothing: 'add armature' came with it."""
    def warnings(**kwargs):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger='kron_dynamics'):
            model = RobotModel.from_urdf_string(ROVER_TEXT, source='rover.urdf', **kwargs)
        return model, [r.getMessage() for r in caplog.records]

    model, messages = warnings(armature=1e-3)          # one number: every joint
    assert messages == [] and list(model.armature) == [1e-3] * 5, messages
    assert np.linalg.cond(model.mass_matrix(np.zeros(5))) < 1e3
    _, messages = warnings(armature=[1e-3, 0.0, 1e-3, 0.0, 0.0])
    assert len(messages) == 1 and "joint 'joint5'" in messages[0], messages
    assert messages[0].endswith('M is singular, so forward dynamics is inaccurate or '
                                'refused; check the inertias or add armature'), messages
    _, messages = warnings(armature=1e-12)             # not enough: said with the armature
    assert len(messages) == 2 and all('raise its armature (1e-12)' in m for m in messages)
    assert all('moves a tiny inertia: 1e-12 ' in m for m in messages), messages


def test_rover_arm_locked_warns_once_about_the_model_it_returns(caplog):
    """lock_others warned three times per joint: the whole URDF, then twice the locked one."""
    caplog.set_level(logging.WARNING, logger='kron_dynamics')
    model = RobotModel.from_urdf_string(ROVER_TEXT, ['joint1', 'joint3', 'joint5'],
                                        source='rover.urdf', lock_others=True)
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2 and model.joint_names == ('joint1', 'joint3', 'joint5')
    assert all(m.startswith('rover.urdf with joint2=0, joint4=0 locked: ') for m in messages)
    caplog.clear()
    armed = RobotModel.from_urdf_string(ROVER_TEXT, source='rover.urdf', armature=1e-3)
    armed.locked({'joint2': 0.5})
    assert caplog.records == []                         # the armature stays, and is counted
    RobotModel.from_urdf_string(ROVER_TEXT, source='rover.urdf').locked({'joint2': 0.5})
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 4 and messages[2].startswith("'rover_arm' with joint2=0.5 locked")


# ----------------------------------------------------------------- stacker
@pytest.mark.parametrize('travel', [-400.0, -250.0, 0.0, 250.0, 400.0])
def test_stacker_is_accurate_at_long_rail_travel(travel):
    rng = np.random.default_rng(3)
    for _ in range(10):
        q, qd, qdd = random_state(STACKER, rng)
        q[0] = travel
        err, cond = check_forward_dynamics(STACKER, q, qd, qdd)
        # a 200 t carriage, a 60 t boom 40 m out: well conditioned in SI units, because the
        # carriage's 1e-3 kg m^2 only ever translates. Measured: 7e-15 at the origin, 3e-12
        # at 400 m (the root-frame CRBA's M is off by 3e-14 there).
        assert err is not None and cond < 1e3
        assert err < 2e-11


def test_stacker_rail_travel_changes_only_the_position():
    """Everything but the position is independent of q1: exact invariance at 400 m."""
    rng = np.random.default_rng(4)
    for _ in range(10):
        q, qd, qdd = random_state(STACKER, rng, travel=100.0)
        far = q.copy()
        far[0] = q[0] + 400.0
        for f in (STACKER.mass_matrix, STACKER.coriolis_star, STACKER.gravity_torque,
                  lambda x: STACKER.inverse_dynamics(x, qd, qdd),
                  lambda x: np.concatenate(STACKER.jacobians(x, 'link3', [-23.0, 0, 0]))):
            near_value, far_value = f(q), f(far)   # M: see the module docstring
            np.testing.assert_allclose(far_value, near_value, rtol=0,
                                       atol=1e-12 * np.abs(near_value).max())
        T0 = STACKER.link_pose(q, 'link3')
        R0, p0 = T0[:3, :3], T0[:3, 3]
        T1 = STACKER.link_pose(far, 'link3')
        R1, p1 = T1[:3, :3], T1[:3, 3]
        np.testing.assert_allclose(R1, R0, atol=1e-15)
        rail = STACKER.jacobians(q, 'link3')[0][:, 0]      # unit vector along the rail
        np.testing.assert_allclose(p1 - p0, 400.0 * rail, rtol=0, atol=1e-12 * 400)


def test_stacker_jacobians_match_finite_differences_at_long_travel():
    rng = np.random.default_rng(5)
    q = np.array([400.0, *rng.uniform(-1, 1, 2)])
    check_jacobians(STACKER, q, 'link3', [-23.0, 0.0, 0.0])


# ----------------------------------------------------------------- boom on a rail
@pytest.mark.parametrize('reach, inertia', [(1e3, 1e-4), (1e3, 1e-2), (1e4, 1.0),
                                            (1e2, 1e-6)])
def test_boom_on_rail_numerically_singular_is_refused_naming_both_joints(reach, inertia):
    """Boom across the rail: travel v and slew -v / reach move only the boom's inertia."""
    model = RobotModel.from_urdf_string(boom_on_rail(reach, inertia))
    q, qd, qdd = np.array([300.0, 0.0]), np.array([0.1, 0.2]), np.array([0.3, -0.7])
    err, cond = check_forward_dynamics(model, q, qd, qdd)
    assert err is None and cond > 1e13
    with pytest.raises(SingularMassMatrixError, match=r'travel, slew') as info:
        model.forward_dynamics(q, qd, model.inverse_dynamics(q, qd, qdd))
    assert info.value.joints == ['travel', 'slew']
    # the compiled integrator applies the same rule
    with pytest.raises(SingularMassMatrixError, match=r'travel, slew'):
        model.simulate(q, qd, model.inverse_dynamics(q, qd, qdd), 1e-3)


@pytest.mark.parametrize('reach, inertia', [(100.0, 1e-2), (10.0, 1e-6), (1.0, 1e-9)])
def test_boom_on_rail_ill_conditioned_is_accurate_to_its_conditioning(reach, inertia):
    """cond(M) ~ 1e9 .. 1e10 near the boom-across-the-rail pose: accepted, and accurate."""
    model = RobotModel.from_urdf_string(boom_on_rail(reach, inertia))
    rng = np.random.default_rng(6)
    for _ in range(10):
        q, qd, qdd = random_state(model, rng, travel=500.0)
        q[1] = rng.uniform(-1e-5, 1e-5)
        err, cond = check_forward_dynamics(model, q, qd, qdd)
        assert err is not None and 1e9 < cond < 1e11


# ----------------------------------------------------------------- random trees
def check_jacobians(model: RobotModel, q, link: str, point=None):
    """Compare J_T, J_R with central differences of the pose, relative to |J| and |p|."""
    JT, JR = model.jacobians(q, link, point)
    offset = np.zeros(3) if point is None else np.asarray(point, dtype=float)
    T0 = model.link_pose(q, link)
    R0, p0 = T0[:3, :3], T0[:3, 3]
    scale = max(1.0, np.abs(JT).max())
    for k in range(model.n):
        h = 1e-6 * max(1.0, abs(q[k]))
        dq = np.zeros(model.n)
        dq[k] = h
        Tp, Tm = model.link_pose(q + dq, link), model.link_pose(q - dq, link)
        (Rp, pp), (Rm, pm) = (Tp[:3, :3], Tp[:3, 3]), (Tm[:3, :3], Tm[:3, 3])
        dp = ((pp + Rp @ offset) - (pm + Rm @ offset)) / (2 * h)
        tol = 1e-6 * scale + 10 * EPS * (np.abs(p0).max() + np.abs(offset).max()) / h
        np.testing.assert_allclose(JT[:, k], dp, rtol=0, atol=tol)
        W = (Rp - Rm) / (2 * h) @ R0.T          # skew matrix of the angular velocity
        np.testing.assert_allclose(JR[:, k], [W[2, 1], W[0, 2], W[1, 0]], rtol=0, atol=1e-6)


@pytest.mark.parametrize('seed', range(12))
def test_random_trees_with_long_prismatic_travel(seed):
    model = random_tree(seed)
    rng = np.random.default_rng(100 + seed)
    for _ in range(4):
        q, qd, qdd = random_state(model, rng)
        check_forward_dynamics(model, q, qd, qdd)
        check_jacobians(model, q, model.link_names[-1], point=[0.1, -0.2, 0.3])


def spd_with_condition(rng, n, cond):
    """Return a random symmetric positive definite n x n matrix of condition number cond."""
    Q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    ev = np.geomspace(1.0, 1.0 / cond, n) * 10.0 ** rng.uniform(-3, 3)
    M = (Q * ev) @ Q.T
    return 0.5 * (M + M.T)


def test_condition_bound_is_an_upper_bound_on_cond():
    """The compiled Cholesky's O(n^2) bound never says an ill-conditioned M is fine."""
    from kron_dynamics.kernels.forward_dynamics import condition_bound
    rng = np.random.default_rng(7)
    matrices = [spd_with_condition(rng, n, cond) for n in (1, 2, 3, 7, 18, 38)
                for cond in (1.0, 1e2, 1e5, 1e8, 1e11)]
    # graded: rows and columns scaled over 16 orders (rail metres, boom milliradians)
    for n in (4, 12, 30):
        D = np.diag(10.0 ** rng.uniform(-8, 8, n))
        matrices.append(D @ spd_with_condition(rng, n, 10.0) @ D)
    checked = 0
    for M in matrices:
        ev = np.linalg.eigvalsh(M)
        if ev[-1] / ev[0] > 1e12:    # eigvalsh's lambda_min carries no digits there
            continue
        bound = condition_bound(M, np.linalg.cholesky(M))
        assert bound >= (ev[-1] / ev[0]) * (1 - 1e-6), (bound, ev[-1] / ev[0])
        checked += 1
    assert checked >= 30


def test_compiled_cholesky_refuses_exactly_what_the_eigenvalues_refuse():
    """
    Accepted exactly when cond(M) < 1/rcond, whichever bound accepts.

    Includes matrices where the O(n^2) bound is 2^n loose (L unit lower triangular with +1
    below the diagonal, n = 30 and 45: cond(M) 1.5e3 and 3.4e3, the bound 1e20 and 3e29),
    where the O(n^3) bound must accept.
    """
    from kron_dynamics.kernels.forward_dynamics import cholesky_factor, condition_bound
    rng = np.random.default_rng(11)
    cases = []
    for n in (2, 5, 12, 38):
        for cond in (1e6, 1e10, 0.5 / RCOND, 2.0 / RCOND, 1e14, 1e16):
            cases.append(spd_with_condition(rng, n, cond))
    loose = []
    for n in (30, 45):
        L = np.eye(n) + np.tril(np.ones((n, n)), -1)
        loose.append(L @ L.T)
    cases += loose
    for M in loose:
        assert condition_bound(M, np.linalg.cholesky(M)) * RCOND > 1.0    # too loose
    for M in cases:
        ev = np.linalg.eigvalsh(M)
        ok, L = cholesky_factor(M, RCOND)
        ratio = ev[0] / (RCOND * ev[-1])
        if ratio > 1.01:
            assert ok, ev[-1] / ev[0]
            np.testing.assert_allclose(L @ L.T, M, rtol=0, atol=1e-12 * ev[-1])
        elif ratio < 0.99:
            assert not ok, ev[-1] / ev[0]


def test_fused_cholesky_solve_is_the_factorisation_then_the_substitution_bit_for_bit():
    """
    cholesky_solve_into (a chain's forward dynamics) = cholesky_factor_into + substitute.

    The same decision on well, ill and too ill conditioned, graded, 2^n-loose and indefinite
    matrices, and where it accepts the same L and the same x to the last bit.
    """
    from kron_dynamics.kernels.forward_dynamics import (cholesky_factor_into,
                                                        cholesky_solve_into, substitute)
    rng = np.random.default_rng(13)
    cases = [spd_with_condition(rng, n, cond) for n in (1, 2, 7, 12, 38)
             for cond in (1.0, 1e6, 0.5 / RCOND, 2.0 / RCOND, 1e16)]
    for n in (4, 30):
        D = np.diag(10.0 ** rng.uniform(-8, 8, n))
        cases.append(D @ spd_with_condition(rng, n, 10.0) @ D)
        L = np.eye(n) + np.tril(np.ones((n, n)), -1)
        cases.append(L @ L.T)
    indefinite = spd_with_condition(rng, 7, 10.0)
    indefinite[3, 3] = -1.0
    cases.append(indefinite)
    decisions = set()
    for M in cases:
        n = M.shape[0]
        b = rng.standard_normal(n)
        L1, x1 = np.zeros((n, n)), np.empty(n)
        ok1 = cholesky_factor_into(M, RCOND, L1, np.empty(n))
        L2, x2, rhs = np.zeros((n, n)), np.empty(n), b.copy()
        ok2 = cholesky_solve_into(M, RCOND, L2, rhs, np.empty(n), x2)
        assert ok1 == ok2
        decisions.add(ok1)
        if ok1:
            substitute(L1, b, np.empty(n), x1)
            np.testing.assert_array_equal(L2, L1)
            np.testing.assert_array_equal(x2, x1)
    assert decisions == {True, False}


def internal_mass_matrix(model, q):
    """Return (ints, M) of a fixed-base model: M in the kernels' internal order (parents first)."""
    from kron_dynamics.kernels.layout import PERM
    ints = model._ints
    perm = ints[:, PERM]
    M = np.empty((model.n, model.n))
    M[np.ix_(perm, perm)] = model.mass_matrix(q)
    return ints, M


@pytest.mark.parametrize('seed', range(8))
def test_tree_factorisation_keeps_the_pattern_and_refuses_what_the_eigenvalues_refuse(seed):
    """
    M = L^T L with M's tree sparsity (Featherstone 2005), on random branched trees.

    L is zero off the tree's pattern, L^T L = M, the O(sum of depths) bound bounds cond(M),
    and scaling one coordinate's inertia down (a joint that moves almost nothing) is refused
    exactly when the eigenvalues refuse it, whichever test decides.
    """
    from kron_dynamics.kernels.forward_dynamics import (cholesky_factor, tree_condition_bound,
                                                        tree_factor_into)
    from kron_dynamics.kernels.layout import PARENT
    model, rng = random_model(seed, min_joints=4, max_joints=14, branching=0.6, armature=True)
    ints, M = internal_mass_matrix(model, rng.uniform(-2, 2, model.n))
    n = model.n
    related = np.eye(n, dtype=bool)
    for k in range(n):
        i = ints[k, PARENT]
        while i >= 0:
            related[k, i] = related[i, k] = True
            i = ints[i, PARENT]
    assert not np.any(M[~related]), 'M has entries off the tree pattern'
    L = np.zeros((n, n))
    assert tree_factor_into(ints, M, RCOND, L, np.empty(n))
    assert not np.any(L[~(related & np.tri(n, dtype=bool))])
    np.testing.assert_allclose(L.T @ L, M, rtol=0, atol=1e-14 * np.abs(M).max())
    ev = np.linalg.eigvalsh(M)
    assert tree_condition_bound(ints, M, L, np.empty(n)) >= ev[-1] / ev[0] * (1 - 1e-6)
    for scale in (1e-6, 1e-11, 1e-13, 1e-15, 1e-17):
        D = np.ones(n)
        D[rng.integers(n)] = np.sqrt(scale)     # a congruence keeps the pattern
        Ms = D[:, None] * M * D[None, :]
        ev = np.linalg.eigvalsh(Ms)
        ok = tree_factor_into(ints, Ms, RCOND, np.zeros((n, n)), np.empty(n))
        assert ok == cholesky_factor(Ms, RCOND)[0]
        ratio = ev[0] / (RCOND * ev[-1])
        if ratio > 1.01:
            assert ok, ev[-1] / ev[0]
        elif ratio < 0.99:
            assert not ok, ev[-1] / ev[0]


@pytest.mark.parametrize('seed', range(8))
def test_fused_tree_solve_is_the_factorisation_then_the_substitution_bit_for_bit(seed):
    """
    tree_solve_into (a branched tree's forward dynamics) = tree_factor_into + tree_substitute.

    On random branched trees with one coordinate's inertia scaled down (accepted, refused by
    either test, indefinite): the same decision, and where it accepts the same L and x.
    """
    from kron_dynamics.kernels.forward_dynamics import (tree_factor_into, tree_solve_into,
                                                        tree_substitute)
    model, rng = random_model(seed, min_joints=4, max_joints=14, branching=0.6, armature=True)
    ints, M = internal_mass_matrix(model, rng.uniform(-2, 2, model.n))
    n = model.n
    decisions = set()
    for scale in (1.0, 1e-6, 1e-11, 1e-13, 1e-17, -1.0):
        D = np.ones(n)
        D[rng.integers(n)] = np.sqrt(abs(scale))
        Ms = D[:, None] * M * D[None, :]
        if scale < 0:
            k = rng.integers(n)
            Ms[k, k] = -Ms[k, k]
        b = rng.standard_normal(n)
        L1, x1 = np.zeros((n, n)), np.empty(n)
        ok1 = tree_factor_into(ints, Ms, RCOND, L1, np.empty(n))
        L2, x2, rhs = np.zeros((n, n)), np.empty(n), b.copy()
        ok2 = tree_solve_into(ints, Ms, RCOND, L2, rhs, np.empty(n), x2)
        assert ok1 == ok2, scale
        decisions.add(ok1)
        if ok1:
            tree_substitute(ints, L1, b, x1)
            np.testing.assert_array_equal(L2, L1)
            np.testing.assert_array_equal(x2, x1)
    assert decisions == {True, False}
