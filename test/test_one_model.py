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
One RobotModel for every robot (issue 20), against Pinocchio 4.1 on example-robot-data.

The same methods on a fixed arm, a mimic gripper, a floating quadruped and a planar base.

Pinocchio's model is the unconstrained tree with the same root joint (or none); our
velocities map to its by the constant P (the base, then B of the mimic couplings), so that a
quantity in the tangent space compares as P^T X P, X P or X. Pinocchio's mimic model refuses
most algorithms: the projection of its unconstrained model is the reference there.
"""

import dis
import functools
import inspect
import re
import warnings

import numpy as np
import pinocchio as pin     # a declared test dependency (requirements.txt): no skip
import pytest

import kron_dynamics
from kron_dynamics import Contact, ModelError, RobotModel
from kron_dynamics.floating_model import MovingBase
from pinocchio_oracle import build_case as build, close, ONE_MODEL_CASES as CASES
from pinocchio_oracle import PinPair, PROXIMAL, random_state as state, robots_dir

FRAMES = {'world': pin.WORLD, 'local': pin.LOCAL, 'local_world_aligned': pin.LOCAL_WORLD_ALIGNED}


@pytest.fixture(scope='module', params=sorted(CASES))
def case(request):
    model, pair = build(request.param)
    return request.param, model, pair


# ------------------------------------------------------------------ one class, one API
# RobotModel methods that a moving base inherits as they are, because they only call
# methods MovingBase defines (or read sizes and names): each one is checked below.
INHERITED = {'from_dh', 'from_urdf_file', 'from_urdf_string', 'description', 'christoffel',
             'random_configuration', 'integrate', 'contact_jacobian',
             'constrained_forward_dynamics', 'contact_inverse_dynamics', 'mimic_joints',
             'base', 'gravity_derivative',
             # from forward_dynamics(_derivatives), _base_brackets, _base_integrate_jacobians
             'linearize',
             # from jacobian (world), link_pose, inverse_dynamics_derivatives, coupling
             # (test_constrained_derivatives: floating and planar against Pinocchio)
             'constrained_forward_dynamics_derivatives',
             # kron_dynamics.gpu writes a moving base's kernels from the model (test_gpu)
             'on_gpu'}


def test_every_public_method_is_defined_for_a_moving_base_or_inherited_on_purpose():
    """A RobotModel method a moving base would inherit unchecked computes fixed-base values."""
    public = {name for name, _ in inspect.getmembers(RobotModel) if not name.startswith('_')}
    defined = {name for name in public if name in vars(MovingBase)}
    assert public - defined - INHERITED == set(), (
        'define these in floating_model.MovingBase (or list them in INHERITED when the '
        "RobotModel implementation only calls methods MovingBase defines)")


def test_every_model_is_a_robot_model_with_a_configuration_and_a_tangent_space(case):
    kind, model, pair = case
    assert isinstance(model, RobotModel)
    assert (model.nq, model.nv) == (pair.pm.nq - count_continuous(pair.pm) - extra(pair),
                                    len(model.velocity_names))
    assert len(model.configuration_names) == model.nq
    assert model.velocity_names[model.nv - model.n:] == model.joint_names
    base = CASES[kind][1]
    assert model.base == base
    assert model.nv - model.n == {'fixed': 0, 'floating': 6, 'planar': 3}[base]
    assert model.nq - model.nv == (0 if base == 'fixed' else 1)
    lower, upper = model.position_limits
    assert lower.shape == upper.shape == (model.nq,) and np.all(lower <= upper)
    assert model.effort_limits.shape == model.velocity_limits.shape == (model.nv,)
    assert repr(model).startswith('RobotModel(')


def count_continuous(pm):
    """Return how many of Pinocchio's joints are continuous (nq = 2 there, 1 here)."""
    return sum(1 for j in pm.joints[1:] if j.nq == 2 and j.nv == 1)


def extra(pair):
    """Return the mimic joints' entries in Pinocchio's unconstrained q (none in ours)."""
    fixed = pair.joints_model
    return len(fixed.full_joint_names) - fixed.n


def test_neutral_integrate_difference_and_random_configurations_are_pinocchios(case):
    kind, model, pair = case
    pm = pair.pm
    close(pair.q(model.neutral()), pin.neutral(pm), 'neutral')
    q, v, _ = state(model, 1)
    for dt in (0.3, -0.2):
        q1 = model.integrate(q, v, dt)
        close(pair.q(q1), pin.integrate(pm, pair.q(q), dt * pair.v(v)), f'integrate dt={dt}')
        close(model.difference(q, q1), dt * v, 'difference')
    # random configurations: within the limits, reproducible by seed, base orientation unit
    lower, upper = model.position_limits
    draws = np.stack([model.random_configuration(seed) for seed in range(50)])
    assert np.all(draws >= lower) and np.all(draws <= upper)
    np.testing.assert_array_equal(model.random_configuration(7), model.random_configuration(7))
    if model.base == 'floating':
        np.testing.assert_allclose(np.linalg.norm(draws[:, 3:7], axis=1), 1.0, rtol=1e-12)
        assert np.all(np.abs(draws[:, :3]) <= 1.0)         # the default box
        assert np.all(np.abs(model.random_configuration(3, base_box=0.1)[:3]) <= 0.1)


def test_coriolis_matrix_is_pinocchios_and_skew_balanced(case):
    """C = P^T C_pin P; C v = h - G; M' - 2C skew, M' by central differences along v."""
    kind, model, pair = case
    pm, pd, P = pair.pm, pair.pd, pair.P
    q, v, _ = state(model, 2)
    C = model.coriolis_matrix(q, v)
    close(C, P.T @ pin.computeCoriolisMatrix(pm, pd, pair.q(q), pair.v(v)) @ P,
          'Coriolis matrix against computeCoriolisMatrix')
    close(C @ v, model.coriolis_vector(q, v), 'C v against the Coriolis vector')
    h = 1e-6
    dM = (model.mass_matrix(model.integrate(q, v, h))
          - model.mass_matrix(model.integrate(q, v, -h))) / (2 * h)
    N = dM - 2 * C
    close(N + N.T, np.zeros_like(N), "M' - 2C skew", 1e-6)


def test_jacobians_gravity_and_centre_of_mass_against_finite_differences(case):
    """Along integrate(q, e_k h): J (LWA), J', G = dV/dq and the centre-of-mass Jacobian."""
    kind, model, pair = case
    q, v, _ = state(model, 12)
    h = 1e-6
    link = CASES[kind][2][0]

    def along(f, direction, step=h):
        return (f(model.integrate(q, direction, step))
                - f(model.integrate(q, direction, -step))) / (2 * step)
    E = np.eye(model.nv)
    J = model.jacobian(q, link)
    R = model.link_pose(q, link)[:3, :3]
    for k in range(model.nv):
        dp = along(lambda x: model.link_pose(x, link)[:3, 3], E[k])
        dR = along(lambda x: model.link_pose(x, link)[:3, :3], E[k])
        W = dR @ R.T
        close(J[:3, k], dp, f'linear column {k} of J ({link})', 1e-6)
        close(J[3:, k], [W[2, 1], W[0, 2], W[1, 0]], f'angular column {k} of J', 1e-6)
        close(model.gravity_torque(q)[k], along(model.potential_energy, E[k]),
              f'G[{k}] = dV/dq_k', 1e-6)
        close(model.center_of_mass_jacobian(q)[:, k], along(model.center_of_mass, E[k]),
              f'centre-of-mass Jacobian column {k}', 1e-6)
    for frame in ('local_world_aligned', 'local', 'world'):
        close(model.jacobian_derivative(q, v, link, frame=frame),
              along(lambda x: model.jacobian(x, link, frame=frame), v),
              f"{frame} J' along v", 1e-6)


def test_centroidal_momentum_matrix_is_ccrba(case):
    kind, model, pair = case
    q, v, _ = state(model, 3)
    A = pin.ccrba(pair.pm, pair.pd, pair.q(q), np.zeros(pair.pm.nv))
    close(model.centroidal_momentum_matrix(q), A @ pair.P, 'A_G against ccrba')


def test_kinematics_in_every_frame_are_pinocchios(case):
    """link_poses, jacobian, jacobian_derivative (J') and J' v, acceleration, with both names."""
    kind, model, pair = case
    pm, pd, P = pair.pm, pair.pd, pair.P
    q, v, dv = state(model, 4)
    pq, pv, pa = pair.q(q), pair.v(v), pair.v(dv)
    pin.forwardKinematics(pm, pd, pq, pv, pa)
    pin.updateFramePlacements(pm, pd)
    pin.computeJointJacobiansTimeVariation(pm, pd, pq, pv)
    poses = model.link_poses(q)
    for link in CASES[kind][2]:
        fid = pm.getFrameId(link)
        close(poses[model.link_names.index(link)], pd.oMf[fid].homogeneous, f'pose of {link}')
        for name, frame in FRAMES.items():
            J = pin.getFrameJacobian(pm, pd, fid, frame) @ P
            close(model.jacobian(q, link, frame=name), J, f'{name} Jacobian of {link}')
            close(model.jacobian(q, link, frame=name.upper()), J, f"Pinocchio's name {name}")
            dJ = pin.getFrameJacobianTimeVariation(pm, pd, fid, frame) @ P
            close(model.jacobian_derivative(q, v, link, frame=name), dJ, f"{name} J' of {link}")
            close(model.jacobian_derivative_times_velocity(q, v, link, frame=name), dJ @ v,
                  f"{name} J' v of {link}")
        for name in ('local_world_aligned', 'local'):
            a = pin.getFrameClassicalAcceleration(pm, pd, fid, FRAMES[name]).vector
            close(model.acceleration(q, v, dv, link, frame=name), a,
                  f'{name} classical acceleration of {link}')
        JT, JR = model.jacobians(q, link)
        J = model.jacobian(q, link)
        close(np.vstack([JT, JR]), J, 'jacobians')
        HT, HR = model.hessians(q, link)
        close(np.vstack([HT, HR]).reshape(6, model.nv, model.nv) @ v,
              model.jacobian_derivative(q, v, link), "hessians: H (E kron v) = J'")


def _pinocchio_rnea_with_fext(pair, q, v, dv, f_ext):
    """Pinocchio's rnea with f_ext's world-aligned wrenches at link origins made joint-local."""
    pm, pd = pair.pm, pair.pd
    pq = pair.q(q)
    pin.forwardKinematics(pm, pd, pq)
    pin.updateFramePlacements(pm, pd)
    fext = [pin.Force.Zero() for _ in range(pm.njoints)]
    for link, wrench in f_ext.items():
        fid = pm.getFrameId(link)
        joint = pm.frames[fid].parentJoint
        oMi, oMf = pd.oMi[joint], pd.oMf[fid]
        R = oMi.rotation
        moment = wrench[3:] + np.cross(oMf.translation - oMi.translation, wrench[:3])
        fext[joint] += pin.Force(R.T @ wrench[:3], R.T @ moment)
    return pair.P.T @ pin.rnea(pm, pd, pq, pair.v(v), pair.v(dv), fext)


def _pinocchio_forward_dynamics_with_fext(pair, q, v, tau, f_ext):
    """(P^T M P)^-1 (tau - P^T rnea(q, P v, 0, fext)): Pinocchio's crba and rnea with fext."""
    pm, pd, P = pair.pm, pair.pd, pair.P
    M = pin.crba(pm, pd, pair.q(q))
    M = np.triu(M) + np.triu(M, 1).T
    bias = _pinocchio_rnea_with_fext(pair, q, v, np.zeros_like(v), f_ext)
    return np.linalg.solve(P.T @ M @ P, tau - bias)


def test_inverse_dynamics_with_external_wrenches_is_pinocchios_rnea_with_fext(case):
    """f_ext: world-aligned wrench at the link origin; Pinocchio's fext is joint-local."""
    kind, model, pair = case
    q, v, dv = state(model, 5)
    link = CASES[kind][2][0]
    wrench = np.array([3.0, -2.0, 5.0, 0.4, -0.3, 0.2])
    tau = model.inverse_dynamics(q, v, dv, f_ext={link: wrench})
    close(tau, _pinocchio_rnea_with_fext(pair, q, v, dv, {link: wrench}),
          'inverse dynamics with f_ext against rnea with fext')
    with pytest.raises(ValueError, match=r"f_ext\['%s'\] must be 6 finite numbers" % link):
        model.inverse_dynamics(q, v, dv, f_ext={link: [1.0, np.nan, 0, 0, 0, 0]})


def _batch_with_wrenches(model, links, seed):
    """
    Return (Q, V, A, f_ext, row): three states, wrenches, and row(k), row k's wrenches.

    f_ext: a wrench per row (3 x 6) on the first link, one for every row (6 numbers) on the
    last (the same link where ``links`` has one: the first wins).
    """
    Q, V, A = (np.stack(x) for x in zip(*(state(model, seed + k) for k in range(3))))
    rng = np.random.default_rng(seed)
    f_ext = {links[-1]: rng.uniform(-5, 5, 6), links[0]: rng.uniform(-5, 5, (3, 6))}

    def row(k):
        return {link: w if w.ndim == 1 else w[k] for link, w in f_ext.items()}
    return Q, V, A, f_ext, row


def test_a_batch_takes_external_wrenches_one_per_row_or_one_for_all(case):
    """
    f_ext on a batch: a wrench of N x 6 gives each row its own, one of 6 is every row's.

    Each row against Pinocchio's rnea with that row's wrenches, the derivatives against the
    single calls; a batch with wrenches was refused ('call per configuration').
    """
    kind, model, pair = case
    links = CASES[kind][2]
    Q, V, A, f_ext, row = _batch_with_wrenches(model, links, 11)
    per_row = f_ext[links[0]]
    tau = model.inverse_dynamics(Q, V, A, f_ext=f_ext)
    assert tau.shape == (3, model.nv)
    for k in range(3):
        close(tau[k], _pinocchio_rnea_with_fext(pair, Q[k], V[k], A[k], row(k)),
              f'row {k} of a batch with f_ext against rnea with fext')
    # one state broadcast against a batch of wrenches, as the joint arrays broadcast
    close(model.inverse_dynamics(Q[1], V, A, f_ext=f_ext)[1], tau[1], 'q broadcast')
    D = model.inverse_dynamics_derivatives(Q, V, A, f_ext=f_ext)
    for k in range(3):
        for got, want in zip(D, model.inverse_dynamics_derivatives(Q[k], V[k], A[k], row(k))):
            close(got[k], want, f'row {k} of the derivatives with f_ext')
    empty = model.inverse_dynamics(Q[:0], V[:0], A[:0], f_ext={links[0]: np.zeros((0, 6))})
    assert empty.shape == (0, model.nv)
    with pytest.raises(ValueError, match=r"f_ext\['%s'\] must be 6 numbers \(every row's\) or "
                                         r'3 x 6 \(one wrench per batch row\), got shape '
                                         r'\(2, 6\)' % links[0]):
        model.inverse_dynamics(Q, V, A, f_ext={links[0]: per_row[:2]})
    bad = per_row.copy()
    bad[2, 4] = np.inf
    with pytest.raises(ValueError, match=r"f_ext\['%s'\] is not finite at batch row\(s\) "
                                         r'\[2\]' % links[0]):
        model.inverse_dynamics_derivatives(Q, V, A, f_ext={links[0]: bad})
    with pytest.raises(ModelError, match="unknown link 'no_such_link'"):
        model.inverse_dynamics(Q[:0], V[:0], A[:0], f_ext={'no_such_link': np.ones(6)})


def test_forward_dynamics_with_external_wrenches_against_pinocchio(case):
    """
    forward_dynamics(q, v, tau, f_ext): one state and a batch (6 or N x 6 per link).

    Against Pinocchio's crba and rnea with fext (the mimic gripper projected by P), and
    inverse dynamics with the same wrenches gives tau back.
    """
    kind, model, pair = case
    assert not np.any(model.armature)       # the reference has none
    links = CASES[kind][2]
    Q, V, _, f_ext, row = _batch_with_wrenches(model, links, 21)
    per_row = f_ext[links[0]]
    Tau = np.random.default_rng(4).uniform(-5, 5, (3, model.nv))
    batch = model.forward_dynamics(Q, V, Tau, f_ext=f_ext)
    assert batch.shape == (3, model.nv)
    for k in range(3):
        single = model.forward_dynamics(Q[k], V[k], Tau[k], f_ext=row(k))
        close(single, _pinocchio_forward_dynamics_with_fext(pair, Q[k], V[k], Tau[k], row(k)),
              f'forward dynamics with f_ext, state {k}, against Pinocchio')
        close(batch[k], single, f'row {k} of the batch against the single call')
        close(model.inverse_dynamics(Q[k], V[k], single, f_ext=row(k)), Tau[k],
              f'inverse dynamics of state {k} with the same wrenches')
    close(model.forward_dynamics(Q[0], V[0], Tau[0], f_ext={}),
          model.forward_dynamics(Q[0], V[0], Tau[0]), 'no wrench')
    bad = per_row.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match=r"f_ext\['%s'\] is not finite at batch row\(s\) "
                                         r'\[0\]' % links[0]):
        model.forward_dynamics(Q, V, Tau, f_ext={links[0]: bad})
    with pytest.raises(ValueError, match=r"f_ext\['%s'\] must be 6 finite numbers" % links[0]):
        model.forward_dynamics(Q[0], V[0], Tau[0], f_ext={links[0]: np.ones(5)})


def test_operational_space_inertia_and_energies(case):
    kind, model, pair = case
    q, v, _ = state(model, 6)
    link = CASES[kind][2][0]
    J = model.jacobian(q, link)[:3]
    M = model.mass_matrix(q)
    close(model.operational_space_inertia(q, link, part='linear'),
          np.linalg.inv(J @ np.linalg.solve(M, J.T)), 'Lambda, linear rows')
    pm, pd = pair.pm, pair.pd
    close(model.kinetic_energy(q, v), pin.computeKineticEnergy(pm, pd, pair.q(q), pair.v(v)),
          'kinetic energy')


def test_simulate_is_the_rk4_step_and_the_old_integrate_call_still_works_with_a_warning(case):
    kind, model, pair = case
    q, v, _ = state(model, 7)
    rng = np.random.default_rng(8)
    tau = np.concatenate([np.zeros(model.nv - model.n), rng.uniform(-0.5, 0.5, model.n)])
    # fourth order, on the manifold too: against 400 fine steps over 4 ms, halving dt
    # divides the error by 16 (a naive q (+) dt v-average on SO(3) would give 4)
    q_ref, v_ref = model.simulate(q, v, tau, 1e-5, 400)

    def error(x, w):
        return np.abs(np.concatenate([model.difference(q_ref, x), w - v_ref])).max()
    coarse, fine = error(*model.simulate(q, v, tau, 2e-3, 2)), error(*model.simulate(
        q, v, tau, 1e-3, 4))
    assert coarse < 1e-5 and 12.0 < coarse / fine < 20.0, (coarse, fine)
    q1, v1 = model.simulate(q, v, tau, 1e-3, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        q3, v3 = model.integrate(q, v, tau, 1e-3, 4)
    assert any(issubclass(w.category, DeprecationWarning) and 'simulate' in str(w.message)
               for w in caught), [str(w.message) for w in caught]
    np.testing.assert_array_equal(q3, q1)
    for dt, steps, message in ((0.0, 1, 'dt must be finite and > 0'),
                               (-1e-3, 1, 'dt must be finite and > 0'),
                               (np.inf, 1, 'dt must be finite and > 0'),
                               (1e-3, 1.5, 'steps must be an integer >= 0'),
                               (1e-3, -1, 'steps must be an integer >= 0'),
                               (1e-3, True, 'steps must be an integer >= 0')):
        with pytest.raises(ValueError, match=message):
            model.simulate(q, v, tau, dt, steps)


def test_simulate_with_external_wrenches_does_their_work(case):
    """
    simulate(..., f_ext): E(t) - E(0) = the work of tau and of the wrenches, fourth order.

    The work of a wrench F on a link is the integral of F . (J v) (trapezoid over 200
    steps of 0.1 ms); on a fixed base (coordinates in R^n), against RK4 written here over
    Pinocchio's crba and rnea with fext; a batch row by row (rows of one state and of
    different states).
    """
    kind, model, pair = case
    links = CASES[kind][2]
    f_ext = {links[0]: np.array([6.0, -4.0, 8.0, 0.6, -0.5, 0.4])}
    q, v, _ = state(model, 17)
    nb = model.nv - model.n
    tau = np.concatenate([np.zeros(nb), np.random.default_rng(3).uniform(-1, 1, model.n)])
    for a, b in zip(model.simulate(q, v, tau, 1e-3, 3, f_ext={}),
                    model.simulate(q, v, tau, 1e-3, 3)):
        assert np.array_equal(a, b), 'no wrench'

    def powers(x, w):
        forces = sum(w @ model.jacobian(x, link).T @ F for link, F in f_ext.items())
        return tau @ w, forces

    def energy(x, w):
        return model.kinetic_energy(x, w) + model.potential_energy(x)
    dt, x, w = 1e-4, q, v
    work = np.zeros(2)
    before = np.array(powers(x, w))
    for _ in range(200):
        x, w = model.simulate(x, w, tau, dt, 1, f_ext=f_ext)
        after = np.array(powers(x, w))
        work += 0.5 * dt * (before + after)
        before = after
    gained = energy(x, w) - energy(q, v)
    assert abs(work[1]) > 1e-2 * (abs(gained) + 1e-3), 'the wrench does work here'
    assert abs(gained - work.sum()) < 1e-5 * (1.0 + abs(gained)), (gained, work)
    q_ref, v_ref = model.simulate(q, v, tau, 1e-5, 400, f_ext=f_ext)

    def error(x, w):
        return np.abs(np.concatenate([model.difference(q_ref, x), w - v_ref])).max()
    coarse = error(*model.simulate(q, v, tau, 2e-3, 2, f_ext=f_ext))
    fine = error(*model.simulate(q, v, tau, 1e-3, 4, f_ext=f_ext))
    assert coarse < 1e-2 and 12.0 < coarse / fine < 20.0, (coarse, fine)    # 8 N on a foot
    if not nb:      # RK4 in coordinates over Pinocchio's dynamics with fext
        def a(x, w):
            return _pinocchio_forward_dynamics_with_fext(pair, x, w, tau, f_ext)
        x, w = q, v
        for _ in range(5):
            a1 = a(x, w)
            a2 = a(x + 5e-4 * w, w + 5e-4 * a1)
            a3 = a(x + 5e-4 * (w + 5e-4 * a1), w + 5e-4 * a2)
            a4 = a(x + 1e-3 * (w + 5e-4 * a2), w + 1e-3 * a3)
            x, w = (x + 1e-3 / 6 * (6 * w + 1e-3 * (a1 + a2 + a3)),
                    w + 1e-3 / 6 * (a1 + 2 * a2 + 2 * a3 + a4))
        ours = model.simulate(q, v, tau, 1e-3, 5, f_ext=f_ext)
        close(ours[0], x, 'q against RK4 over Pinocchio with fext', 1e-12)
        close(ours[1], w, 'v against RK4 over Pinocchio with fext', 1e-12)
    Q, V, T = (np.stack([y, y]) for y in (q, v, tau))
    both = {links[0]: np.stack([f_ext[links[0]], -f_ext[links[0]]])}
    QB, VB = model.simulate(Q, V, T, 1e-3, 3, f_ext=both)
    for k, sign in enumerate((1.0, -1.0)):
        x, w = model.simulate(q, v, tau, 1e-3, 3, f_ext={links[0]: sign * f_ext[links[0]]})
        close(QB[k], x, f'batch row {k}: q', 1e-14)
        close(VB[k], w, f'batch row {k}: v', 1e-14)
    # rows of different states (fast turns: the base's dexp^-1 terms matter), one wrench
    # for all and one per row: each row as its single call
    Q3, V3 = (np.stack(y) for y in list(zip(*(state(model, 40 + k) for k in range(3))))[:2])
    V3 *= 4.0
    per_row = {links[0]: np.stack([f_ext[links[0]], -f_ext[links[0]], 2 * f_ext[links[0]]]),
               CASES[kind][2][-1] if len(links) > 1 else 'torso_lift_link':
               np.array([1.0, 2.0, -3.0, 0.1, 0.2, 0.3])}
    QB, VB = model.simulate(Q3, V3, tau, 5e-3, 4, f_ext=per_row)
    for k in range(3):
        row = {link: w if w.ndim == 1 else w[k] for link, w in per_row.items()}
        x, w = model.simulate(Q3[k], V3[k], tau, 5e-3, 4, f_ext=row)
        close(QB[k], x, f'batch row {k} of different states: q', 1e-12)
        close(VB[k], w, f'batch row {k} of different states: v', 1e-12)
    assert np.abs(VB[0] - VB[1]).max() > 1e-3
    with pytest.raises(ValueError, match=r"f_ext\['%s'\] must be 6 finite numbers" % links[0]):
        model.simulate(q, v, tau, 1e-3, 0, f_ext={links[0]: np.ones(5)})
    with pytest.raises(ValueError, match=r"f_ext\['%s'\] is not finite at batch row\(s\) "
                                         r'\[1\]' % links[0]):
        model.simulate(Q, V, T, 1e-3, 1, f_ext={links[0]: np.array([np.ones(6), [np.nan] * 6])})


def test_a_free_floating_robot_keeps_its_energy_under_simulate():
    """No gravity, no torque, no damping: simulate conserves T on the manifold (solo12)."""
    model, _ = build('floating quadruped')
    model = model.with_gravity([0.0, 0.0, 0.0])
    assert model.base == 'floating' and isinstance(model, RobotModel)
    q, v, _ = state(model, 9)
    energy = model.kinetic_energy(q, v)
    q1, v1 = model.simulate(q, v, np.zeros(model.nv), 1e-3, 200)
    assert abs(model.kinetic_energy(q1, v1) - energy) < 1e-7 * energy


def test_contacts_on_a_fixed_base_are_pinocchios_constraint_dynamics():
    """An arm pushing on a wall is a contact: constrained dynamics on the fixed UR5."""
    model, pair = build('fixed arm')
    pm, pd = pair.pm, pair.pd
    q, v, _ = state(model, 10)
    tau = np.random.default_rng(11).uniform(-5, 5, model.n)
    for contact in (Contact('tool0', point=(0.0, 0.0, 0.05)),
                    Contact('tool0', dim=6, reference_frame='LOCAL'),
                    Contact('forearm_link', point=(0.1, 0.0, 0.0), reference_frame='local')):
        dv, lam = model.constrained_forward_dynamics(q, v, tau, [contact])
        kinds, datas = pair.constraint_models([contact])
        pdv = pin.constraintDynamics(pm, pd, pair.q(q), v, tau, kinds, datas,
                                     pin.ProximalSettings(*PROXIMAL))
        close(dv, pdv, f"v' with {contact}")
        close(lam, pd.lambda_c, f'lambda with {contact}')
        # inverse: the torques that give v' in contact; the fixed base needs no contact force
        tau_back, lam_back = model.contact_inverse_dynamics(q, v, dv, [contact])
        close(tau_back, model.inverse_dynamics(q, v, dv), 'contact inverse dynamics')
        np.testing.assert_array_equal(lam_back, np.zeros(contact.dim))


@pytest.mark.parametrize('kind', ['fixed arm', 'mimic gripper'])
def test_the_compiled_contact_dynamics_of_a_fixed_base_is_the_general_path(kind, monkeypatch):
    """fixed_constrained_forward_dynamics (mimic joints lifted and projected) in one call."""
    model, _ = build(kind)
    link = CASES[kind][2][0]        # moved by six joints or more: a 6-D contact is regular
    rng = np.random.default_rng(12)
    contacts = [[Contact(link)], [Contact(link, point=(0.05, 0.0, 0.02), dim=6,
                                          reference_frame='local')]]
    for k, given in enumerate(contacts):
        q, v, _ = state(model, 30 + k)
        tau = rng.uniform(-2.0, 2.0, model.n)
        fast = model._constrained_compiled(q, v, tau, given)
        assert fast is not None, f'{kind}: the kernel refused a regular state'
        got = model.constrained_forward_dynamics(q, v, tau, given)
        with monkeypatch.context() as patch:
            patch.setattr(model, '_constrained_compiled', lambda *args: None)
            want = model.constrained_forward_dynamics(q, v, tau, given)
        for a, b, c, what in zip(fast, got, want, ("v'", 'lambda')):
            np.testing.assert_array_equal(a, b)
            close(b, c, f'{kind}: {what} with {given}')


@pytest.mark.parametrize('kind', ['fixed arm', 'mimic gripper'])
def test_the_contact_terms_of_a_fixed_base_are_one_compiled_call(kind, monkeypatch):
    """contact_jacobian, contact_inverse_dynamics: fixed_contact_terms, the general path's."""
    from kron_dynamics.kernels import native
    model, _ = build(kind)
    link = CASES[kind][2][0]
    rng = np.random.default_rng(14)
    calls = []
    kernel = native.fixed_contact_terms
    for k, given in enumerate([[Contact(link)], [Contact(link, point=(0.05, 0.0, 0.02), dim=6,
                                                         reference_frame='local')]]):
        q, v, _ = state(model, 50 + k)
        dv, _ = model.constrained_forward_dynamics(q, v, rng.uniform(-2, 2, model.n), given)
        with monkeypatch.context() as patch:
            patch.setattr(native, 'fixed_contact_terms',
                          lambda *args: calls.append(1) or kernel(*args))
            fast = (model.contact_jacobian(q, given),
                    *model.contact_inverse_dynamics(q, v, dv, given))
        assert len(calls) == 2 * (k + 1), f'{kind}: one compiled call per method'
        with monkeypatch.context() as patch:
            patch.setattr(model, '_contact_kernel', None)     # the general path
            slow = (model.contact_jacobian(q, given),
                    *model.contact_inverse_dynamics(q, v, dv, given))
        for a, b, what in zip(fast, slow, ('J_c', 'tau', 'lambda')):
            close(a, b, f'{kind}: {what} with {given}')
    with pytest.raises(ValueError, match='dv moves the contacts'):
        model.contact_inverse_dynamics(q, v, dv + 1.0, given)


def test_an_operational_frame_is_usable_wherever_a_link_name_is(case):
    """with_frame against Pinocchio's addFrame: pose, Jacobians in three frames, J', contact."""
    kind, model, _ = case
    link = CASES[kind][2][0]
    xyz, rpy = (0.02, -0.01, 0.12), (0.3, -0.2, 0.5)
    tcp = model.with_frame('tcp', link, xyz, rpy)
    assert isinstance(tcp, RobotModel) and tcp.base == model.base
    assert 'tcp' in tcp.link_names and 'tcp' not in model.link_names
    pm = build(kind)[1].pm
    parent = pm.frames[pm.getFrameId(link)]
    placement = parent.placement * pin.SE3(pin.rpy.rpyToMatrix(*rpy), np.array(xyz))
    pm.addFrame(pin.Frame('tcp', parent.parentJoint, pm.getFrameId(link), placement,
                          pin.FrameType.OP_FRAME))
    pair = PinPair(tcp, pm)
    pd, P = pair.pd, pair.P
    q, v, _ = state(tcp, 13)
    pin.forwardKinematics(pm, pd, pair.q(q), pair.v(v))
    pin.updateFramePlacements(pm, pd)
    pin.computeJointJacobiansTimeVariation(pm, pd, pair.q(q), pair.v(v))
    fid = pm.getFrameId('tcp')
    close(tcp.link_pose(q, 'tcp'), pd.oMf[fid].homogeneous, 'pose of the new frame')
    for name, frame in FRAMES.items():
        close(tcp.jacobian(q, 'tcp', frame=name), pin.getFrameJacobian(pm, pd, fid, frame) @ P,
              f'{name} Jacobian of the new frame')
        close(tcp.jacobian_derivative(q, v, 'tcp', frame=name),
              pin.getFrameJacobianTimeVariation(pm, pd, fid, frame) @ P, f"{name} J'")
    close(tcp.contact_jacobian(q, [Contact('tcp', dim=6, reference_frame='local')]),
          tcp.jacobian(q, 'tcp', frame='local'), 'a 6-D contact at the new frame')
    close(tcp.mass_matrix(q), model.mass_matrix(q), 'a frame adds no mass')
    with pytest.raises(ModelError, match="with_frame: 'tcp' is already a link or frame"):
        tcp.with_frame('tcp', link)
    with pytest.raises(ModelError, match="unknown link 'nope'"):
        model.with_frame('x', 'nope')
    with pytest.raises(ModelError, match='with_frame: rpy must be 3 finite numbers'):
        model.with_frame('x', link, rpy=(0, np.nan, 0))
    for name in ('', 5, None):
        with pytest.raises(ModelError, match=rf'^with_frame: the name must be a non-empty '
                                             rf'string, got {re.escape(repr(name))}$'):
            model.with_frame(name, link)


# ------------------------------------------------------------------ batches, every method
METHODS = {   # name -> call on (model, q, v, dv, link) of one state or a batch
    'mass_matrix': lambda m, q, v, a, link: m.mass_matrix(q),
    'inverse_dynamics': lambda m, q, v, a, link: m.inverse_dynamics(q, v, a),
    'forward_dynamics': lambda m, q, v, a, link: m.forward_dynamics(q, v, a),
    'gravity_torque': lambda m, q, v, a, link: m.gravity_torque(q),
    'bias_torque': lambda m, q, v, a, link: m.bias_torque(q, v),
    'coriolis_vector': lambda m, q, v, a, link: m.coriolis_vector(q, v),
    'coriolis_matrix': lambda m, q, v, a, link: m.coriolis_matrix(q, v),
    'coriolis_star': lambda m, q, v, a, link: m.coriolis_star(q),
    'christoffel': lambda m, q, v, a, link: m.christoffel(q),
    'jacobian': lambda m, q, v, a, link: m.jacobian(q, link),
    'jacobian_derivative': lambda m, q, v, a, link: m.jacobian_derivative(q, v, link),
    'jacobian_derivative_times_velocity':
        lambda m, q, v, a, link: m.jacobian_derivative_times_velocity(q, v, link),
    'acceleration': lambda m, q, v, a, link: m.acceleration(q, v, a, link),
    'hessian': lambda m, q, v, a, link: m.hessian(q, link),
    'mass_matrix_derivative': lambda m, q, v, a, link: m.mass_matrix_derivative(q),
    'regressor': lambda m, q, v, a, link: m.regressor(q, v, a),
    'linearize': lambda m, q, v, a, link: m.linearize(q, v, a, 0.01),
    'inverse_dynamics_derivatives':
        lambda m, q, v, a, link: m.inverse_dynamics_derivatives(q, v, a),
    'forward_dynamics_derivatives':
        lambda m, q, v, a, link: m.forward_dynamics_derivatives(q, v, a),
    'link_pose': lambda m, q, v, a, link: m.link_pose(q, link),
    'link_poses': lambda m, q, v, a, link: m.link_poses(q),
    'center_of_mass': lambda m, q, v, a, link: m.center_of_mass(q),
    'center_of_mass_jacobian': lambda m, q, v, a, link: m.center_of_mass_jacobian(q),
    'centroidal_momentum_matrix': lambda m, q, v, a, link: m.centroidal_momentum_matrix(q),
    'operational_space_inertia':
        lambda m, q, v, a, link: m.operational_space_inertia(q, link, part='linear'),
    'kinetic_energy': lambda m, q, v, a, link: m.kinetic_energy(q, v),
    'potential_energy': lambda m, q, v, a, link: m.potential_energy(q),
    'integrate': lambda m, q, v, a, link: m.integrate(q, v, 0.01),
    'difference': lambda m, q, v, a, link: m.difference(q, m.integrate(q, v, 0.01)),
    'simulate': lambda m, q, v, a, link: m.simulate(q, v, a, 1e-3, 2),
    'contact_jacobian': lambda m, q, v, a, link: m.contact_jacobian(q, [Contact(link)]),
    'constrained_forward_dynamics': lambda m, q, v, a, link: m.constrained_forward_dynamics(
        q, v, a[..., m.nv - m.n:], [Contact(link)]),
    'contact_inverse_dynamics': lambda m, q, v, a, link: m.contact_inverse_dynamics(
        q, v, m.constrained_forward_dynamics(q, v, a[..., m.nv - m.n:], [Contact(link)])[0],
        [Contact(link)]),
}


@pytest.mark.parametrize('method', sorted(METHODS))
def test_every_method_takes_batches_and_empty_batches_the_same_way(case, method):
    kind, model, pair = case
    call = METHODS[method]
    link = CASES[kind][2][0]
    states = [state(model, 20 + k) for k in range(3)]
    Q, V, A = (np.stack(x) for x in zip(*states))
    batch = call(model, Q, V, A, link)
    for k in range(3):
        single = call(model, Q[k], V[k], A[k], link)
        for b, s in zip(batch if isinstance(batch, tuple) else (batch,),
                        single if isinstance(single, tuple) else (single,)):
            np.testing.assert_allclose(b[k], s, rtol=1e-12, atol=1e-12)
    empty = call(model, Q[:0], V[:0], A[:0], link)
    for e, s in zip(empty if isinstance(empty, tuple) else (empty,),
                    single if isinstance(single, tuple) else (single,)):
        assert np.shape(e) == (0, *np.shape(s)), (method, np.shape(e), np.shape(s))


def test_simulate_runs_a_batch_in_one_compiled_call_equal_to_the_single_calls(
        case, monkeypatch):
    """Rollouts (MPPI, RL): every row is the single call's bit for bit, no loop over rows."""
    kind, model, pair = case
    rng = np.random.default_rng(6)
    states = [state(model, 50 + k) for k in range(7)]
    Q, V, A = (np.stack(x) for x in zip(*states))
    tau = 0.1 * A
    damping = rng.uniform(0.0, 0.5, model.n)
    single = [[model.simulate(Q[k], V[k], tau[k], 1e-3, 3, damping=d) for k in range(7)]
              for d in (None, damping)]
    broadcast = [model.simulate(Q[0], V[k], tau[k], 1e-3, 2) for k in range(7)]

    def no_loop(*args, **kwargs):
        raise AssertionError('the batch fell back to a loop over rows')
    monkeypatch.setattr(model, '_simulate_rows' if model.nv == model.n else '_batch', no_loop)
    for d, rows in zip((None, damping), single):
        x, v = model.simulate(Q, V, tau, 1e-3, 3, damping=d)
        np.testing.assert_array_equal(x, np.stack([r[0] for r in rows]))
        np.testing.assert_array_equal(v, np.stack([r[1] for r in rows]))
    x, v = model.simulate(Q[0], V, tau, 1e-3, 2)       # one q for every row
    np.testing.assert_array_equal(x, np.stack([r[0] for r in broadcast]))
    np.testing.assert_array_equal(v, np.stack([r[1] for r in broadcast]))


# what a moving base computes for a batch in one compiled call, no loop over rows in Python
MOVING_BATCHES = ['acceleration', 'bias_torque', 'center_of_mass', 'center_of_mass_jacobian',
                  'centroidal_momentum_matrix', 'christoffel', 'constrained_forward_dynamics',
                  'coriolis_matrix', 'coriolis_star', 'difference', 'forward_dynamics',
                  'gravity_torque', 'hessian', 'integrate', 'inverse_dynamics', 'jacobian',
                  'jacobian_derivative', 'link_pose', 'link_poses', 'mass_matrix', 'simulate',
                  'potential_energy', 'mass_matrix_derivative', 'regressor',
                  'inverse_dynamics_derivatives', 'forward_dynamics_derivatives']
# the same, from the compiled batches and a NumPy product per row (not the single call's bits)
MOVING_NEAR = ['kinetic_energy', 'jacobian_derivative_times_velocity',
               'operational_space_inertia']


@pytest.mark.parametrize('method', MOVING_BATCHES + MOVING_NEAR)
@pytest.mark.parametrize('kind', ['floating quadruped', 'planar base'])
def test_a_moving_base_computes_a_batch_in_one_compiled_call(kind, method, monkeypatch):
    """Each row is the single call's, bit for bit; a broadcast q too; empty batches."""
    import kron_dynamics.robot_model as robot_model
    model, _ = build(kind)
    call, link = METHODS[method], CASES[kind][2][0]
    states = [state(model, 90 + k) for k in range(5)]
    Q, V, A = (np.stack(x) for x in zip(*states))
    single = [call(model, Q[k], V[k], A[k], link) for k in range(5)]
    broadcast = [call(model, Q[0], V[k], A[k], link) for k in range(5)]

    def no_loop(*args, **kwargs):
        raise AssertionError(f'{method}: the batch took the per-row path')
    monkeypatch.setattr(model, '_rows', no_loop)
    monkeypatch.setattr(robot_model, '_row_call', no_loop)
    first = single[0][0] if isinstance(single[0], tuple) else single[0]
    for got, rows in ((call(model, Q, V, A, link), single),
                      (call(model, Q[0], V, A, link), broadcast)):
        if np.ndim(got[0] if isinstance(got, tuple) else got) == np.ndim(first):
            continue        # a method of q alone: one q is one state, not a batch
        for k, want in enumerate(rows):
            for g, w in zip(got if isinstance(got, tuple) else (got,),
                            want if isinstance(want, tuple) else (want,)):
                if method in MOVING_NEAR:
                    np.testing.assert_allclose(g[k], w, rtol=1e-13, atol=1e-13,
                                               err_msg=f'{method} row {k}')
                else:
                    np.testing.assert_array_equal(g[k], w, err_msg=f'{method} row {k}')
    empty = call(model, Q[:0], V[:0], A[:0], link)
    for e, w in zip(empty if isinstance(empty, tuple) else (empty,),
                    single[0] if isinstance(single[0], tuple) else (single[0],)):
        assert np.shape(e) == (0, *np.shape(w)), method


@pytest.mark.parametrize('kind', ['floating quadruped', 'planar base'])
def test_base_pose_friction_and_full_coordinates_take_batches(kind):
    """A moving base's pose, joint friction, full q, v, v' of N states: the single calls'."""
    model, _ = build(kind)
    Q, V = (np.stack(x) for x in zip(*[state(model, 160 + k)[:2] for k in range(3)]))
    full = len(model.fixed.full_joint_names)
    for method, X, shape in (('base_pose', Q, (4, 4)), ('friction_torque', V, (model.nv,)),
                             ('full_configuration', Q, (full,)), ('full_velocity', V, (full,)),
                             ('full_acceleration', V, (full,))):
        batch = getattr(model, method)(X)
        for k in range(3):
            np.testing.assert_array_equal(batch[k], getattr(model, method)(X[k]))
        assert getattr(model, method)(X[:0]).shape == (0, *shape), method
    far, nan, bad = Q.copy(), Q.copy(), V.copy()
    far[1:3, 3 if model.base == 'floating' else 2] += 1.0    # the base orientation, not unit
    nan[2, -1], bad[2, -1] = np.nan, np.inf
    for method in ('base_pose', 'full_configuration'):
        with pytest.raises(ValueError, match=r'^row 1: q: the base .* has norm .*unit vector'):
            getattr(model, method)(far)     # the first of rows 1 and 2
        with pytest.raises(ValueError, match=r'^q\[2\] is not finite'):
            getattr(model, method)(nan)
    for method in ('friction_torque', 'full_velocity', 'full_acceleration'):
        with pytest.raises(ValueError, match=r'^(v|dv)\[2\] is not finite'):
            getattr(model, method)(bad)


@pytest.mark.parametrize('kind', ['mimic gripper', 'floating quadruped', 'planar base'])
def test_the_compiled_mass_matrix_derivative_and_regressor_are_their_numpy_projections(kind):
    """dM/dq (and Y) lifted and projected in one compiled call against B or P by NumPy."""
    model, _ = build(kind)
    for k in range(3):
        q, v, dv = state(model, 130 + k)
        close(model.mass_matrix_derivative(q), model._mass_matrix_derivative_readable(q),
              f'{kind}: dM/dq', 1e-12)
        if model.base != 'fixed':       # the regressor, derivatives: against NumPy around
            close(model.regressor(q, v, dv), model._regressor_readable(q, v, dv),
                  f'{kind}: regressor', 1e-12)
            for x, y, what in zip(model.inverse_dynamics_derivatives(q, v, dv),
                                  model._general_inverse_dynamics_derivatives(q, v, dv),
                                  ('dtau/dq', 'dtau/dv', 'M')):
                close(x, y, f'{kind}: {what}', 1e-12)
            for x, y, what in zip(model.forward_dynamics_derivatives(q, v, dv),
                                  model._derivatives_at(q, v, dv), ("dv'/dq", "dv'/dv", 'M^-1')):
                close(x, y, f'{kind}: {what}', 1e-10)


def test_operational_space_inertia_of_a_batch_is_compiled_and_names_a_singular_row(
        case, monkeypatch):
    """task_inertia_batch on every model: the single call's values; a singular row is named."""
    import kron_dynamics.robot_model as robot_model
    from kron_dynamics import SingularJacobianError
    kind, model, pair = case
    link = CASES[kind][2][0]
    Q = np.stack([state(model, 110 + k)[0] for k in range(4)])
    single = [model.operational_space_inertia(Q[k], link) for k in range(4)]

    def no_loop(*args, **kwargs):
        raise AssertionError('a regular row of the batch took the per-row path')
    with monkeypatch.context() as patch:
        patch.setattr(robot_model, '_row_call', no_loop)
        patch.setattr(model, '_per_row', no_loop)
        got = model.operational_space_inertia(Q, link)
    np.testing.assert_allclose(got, np.stack(single), rtol=1e-12, atol=1e-12)
    if model.base == 'floating':
        return      # every link moves in 6 directions with the base: no singular row
    # a link too few coordinates move (the first after the root): singular in every row,
    # the first named; damped, every row is the single damped call's
    root_child = model.link_names[1]
    with pytest.raises(SingularJacobianError, match=r'^row 0: '):
        model.operational_space_inertia(Q, root_child)
    damped = model.operational_space_inertia(Q, root_child, damping=0.1)
    for k in range(4):
        np.testing.assert_allclose(damped[k], model.operational_space_inertia(
            Q[k], root_child, damping=0.1), rtol=1e-12, atol=1e-12)


def test_contact_jacobian_of_a_batch_is_one_compiled_call(case, monkeypatch):
    """Each row is the single call's bit for bit (both compiled); a bad row is named."""
    import kron_dynamics.robot_model as robot_model
    kind, model, pair = case
    link = CASES[kind][2][0]
    Q = np.stack([state(model, 140 + k)[0] for k in range(5)])
    contacts = [Contact(link), Contact(link, point=(0.05, 0.0, 0.02), dim=6,
                                       reference_frame='local')]
    single = [model.contact_jacobian(Q[k], contacts) for k in range(5)]
    with monkeypatch.context() as patch:
        patch.setattr(robot_model, '_row_call', lambda *args: pytest.fail('per-row path'))
        np.testing.assert_array_equal(model.contact_jacobian(Q, contacts), np.stack(single))
    # the kernel against the general path (NumPy, per contact) of one state
    with monkeypatch.context() as patch:
        patch.setattr(model, '_pk' if model.base != 'fixed' else '_contact_kernel', None)
        for k in range(2):
            close(single[k], model.contact_jacobian(Q[k], contacts), f'{kind}: J_c', 1e-12)
    if model.base == 'floating':
        Q[3, 3:7] = [0.0, 0.0, 0.0, 2.0]
        with pytest.raises(ValueError, match=r'^row 3: q: the base quaternion'):
            model.contact_jacobian(Q, contacts)


def test_contact_inverse_dynamics_of_a_batch_needs_no_loop_over_rows(case, monkeypatch):
    """Compiled contact terms and inverse dynamics, one stacked pseudo-inverse: the rows'."""
    import kron_dynamics.robot_model as robot_model
    kind, model, pair = case
    link = CASES[kind][2][0]
    rng = np.random.default_rng(17)
    states = [state(model, 150 + k) for k in range(5)]
    Q, V, _ = (np.stack(x) for x in zip(*states))
    contacts = (['FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT'] if model.base == 'floating'
                else [Contact(link)])
    DV, _ = model.constrained_forward_dynamics(Q, V, rng.uniform(-2, 2, (5, model.n)),
                                               contacts)       # realisable in contact
    single = [model.contact_inverse_dynamics(Q[k], V[k], DV[k], contacts) for k in range(5)]
    with monkeypatch.context() as patch:
        patch.setattr(robot_model, '_row_call', lambda *args: pytest.fail('per-row path'))
        tau, lam = model.contact_inverse_dynamics(Q, V, DV, contacts)
    for k, (t, f) in enumerate(single):
        close(tau[k], t, f'{kind}: tau row {k}', 1e-12)
        close(lam[k], f, f'{kind}: lambda row {k}', 1e-12)
    DV[2] += 1.0        # moves the contacts: row 2 named, with the single call's words
    with pytest.raises(ValueError, match=r'^row 2: dv moves the contacts'):
        model.contact_inverse_dynamics(Q, V, DV, contacts)


def test_constrained_forward_dynamics_of_a_batch_is_one_compiled_call(case, monkeypatch):
    """Legged rollouts: every row is the single call's bit for bit, with no loop over rows."""
    import kron_dynamics.robot_model as robot_model
    kind, model, pair = case
    link = CASES[kind][2][0]
    rng = np.random.default_rng(16)
    states = [state(model, 70 + k) for k in range(6)]
    Q, V, _ = (np.stack(x) for x in zip(*states))
    T = rng.uniform(-2.0, 2.0, (6, model.n))
    lists = [[Contact(link)], [Contact(link, point=(0.05, 0.0, 0.02), dim=6,
                                       reference_frame='local')]]
    if model.base == 'floating':        # four feet, and tau of every velocity
        lists.append(['FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT'])
    single = [[model.constrained_forward_dynamics(Q[k], V[k], T[k], c) for k in range(6)]
              for c in lists]

    def no_loop(*args):
        raise AssertionError('a regular row of the batch took the per-row path')
    with monkeypatch.context() as patch:
        patch.setattr(robot_model, '_row_call', no_loop)
        for contacts, rows in zip(lists, single):
            dv, lam = model.constrained_forward_dynamics(Q, V, T, contacts)
            np.testing.assert_array_equal(dv, np.stack([r[0] for r in rows]))
            np.testing.assert_array_equal(lam, np.stack([r[1] for r in rows]))
        dv, lam = model.constrained_forward_dynamics(Q[0], V, T, lists[0])   # q broadcast
        for k in range(6):
            want = model.constrained_forward_dynamics(Q[0], V[k], T[k], lists[0])
            np.testing.assert_array_equal(dv[k], want[0])
            np.testing.assert_array_equal(lam[k], want[1])
        if model.base != 'fixed':
            full = np.concatenate([np.zeros((6, model.nv - model.n)), T], axis=1)
            dv, lam = model.constrained_forward_dynamics(Q, V, full, lists[0])
            np.testing.assert_array_equal(dv, np.stack([r[0] for r in single[0]]))
    # a row the kernel refuses takes the single call's general path: redundant contacts get
    # the minimum-norm lambda; a bad tau is named with its row
    twice = [Contact(link), Contact(link)]
    still = np.stack([v - np.linalg.pinv(J) @ (J @ v) for v, J in
                      zip(V, model.contact_jacobian(Q, twice))])    # J_c v = 0: consistent
    dv, lam = model.constrained_forward_dynamics(Q, still, T, twice)
    for k in range(6):
        want = model.constrained_forward_dynamics(Q[k], still[k], T[k], twice)
        np.testing.assert_array_equal(dv[k], want[0])
        np.testing.assert_array_equal(lam[k], want[1])
    T[4, 0] = np.inf
    with pytest.raises(ValueError, match=r'^row 4: '):
        model.constrained_forward_dynamics(Q, V, T, lists[0])


@pytest.mark.parametrize('method', ['mass_matrix', 'inverse_dynamics', 'gravity_torque',
                                    'bias_torque', 'forward_dynamics', 'simulate'])
def test_a_bad_row_of_a_batch_is_named_on_every_model(case, method):
    """The compiled batch refuses the batch; the one checker names the row and the entry."""
    kind, model, pair = case
    states = [state(model, 30 + k) for k in range(3)]
    Q, V, A = (np.stack(x) for x in zip(*states))
    Q[1, -1] = np.nan
    name = model.configuration_names[-1]
    with pytest.raises(ValueError, match=rf"^q\[1\] is not finite at \['{name}'\]$"):
        METHODS[method](model, Q, V, A, CASES[kind][2][0])


@pytest.mark.parametrize('method', sorted(METHODS))
def test_one_checker_gives_every_model_and_method_the_same_messages(case, method):
    """A q of the wrong width, one state or a batch, or a bad row: the same words everywhere."""
    kind, model, pair = case
    call, link, nq = METHODS[method], CASES[kind][2][0], model.nq
    q, v, a = state(model, 40)
    entries = re.escape(f"(entries: {', '.join(model.configuration_names)})")
    for width in (nq - 1, nq + 1):      # too short, too long (the fast path too)
        with pytest.raises(ValueError, match=rf'q must have shape \({nq},\) or \(N, {nq}\), '
                                             rf'got \({width},\) {entries}$'):
            call(model, np.zeros(width), v, a, link)
    wrong = np.zeros(nq - 1)
    with pytest.raises(ValueError, match=rf'q must have shape \({nq},\) or \(N, {nq}\), got '
                                         rf'\(2, {nq - 1}\) {entries}$'):
        call(model, np.stack([wrong, wrong]), v, a, link)
    Q = np.stack([q, q])
    Q[1, 0] = np.inf
    name = re.escape(model.configuration_names[0])
    with pytest.raises(ValueError, match=rf"^q\[1\] is not finite at \['{name}'\]$"):
        call(model, Q, v, a, link)


COMPLEX_ENTRIES = (r' has complex entries \(dtype complex128\): kron_dynamics takes real '
                   r'numbers, and casting would drop the imaginary part$')


def _reads(call) -> tuple:
    """Return which of the state arrays v, a a METHODS entry passes on (from its bytecode)."""
    loaded = {i.argval for i in dis.get_instructions(call) if i.opname.startswith('LOAD_FAST')}
    return tuple(name for name in ('v', 'a') if name in loaded)


@pytest.mark.parametrize('method', sorted(METHODS))
def test_complex_ragged_and_three_dimensional_arrays_are_refused_by_name(case, method):
    """
    No imaginary part dropped without a word, no NumPy message, no StopIteration.

    A complex q (a complex step) was cast to its real part with only NumPy's ComplexWarning;
    ragged rows raised NumPy's 'inhomogeneous shape' from np.ndim on a moving base; a
    (1, 1, nq) q reached the contact batches as a StopIteration.
    """
    kind, model, pair = case
    call, link, nq = METHODS[method], CASES[kind][2][0], model.nq
    q, v, a = state(model, 41)
    entries = re.escape(f"(entries: {', '.join(model.configuration_names)})")
    for Q in (q + 1e-20j, np.stack([q, q]) + 1e-20j):
        with pytest.raises(ValueError, match='^q' + COMPLEX_ENTRIES):
            call(model, Q, v, a, link)
    with pytest.raises(ValueError, match=rf'^q must be an array of {nq} numbers '
                                         rf'\(or N x {nq}\) {entries}$'):
        call(model, [list(q), list(q[:-1])], v, a, link)
    with pytest.raises(ValueError, match=rf'^q must have shape \({nq},\) or \(N, {nq}\), '
                                         rf'got \(1, 1, {nq}\) {entries}$'):
        call(model, q[None, None], v, a, link)
    for name in _reads(call):
        arrays = {'v': v, 'a': a}
        arrays[name] = arrays[name] + 1e-20j
        with pytest.raises(ValueError, match=r'^\w+' + COMPLEX_ENTRIES):
            call(model, q, arrays['v'], arrays['a'], link)
    if 'v' in _reads(call):
        with pytest.raises(ValueError, match=r'^\w+ must be an array of \d+ numbers \(or N x '):
            call(model, q, [list(v), list(v[:-1])], a, link)


def test_arguments_beside_the_state_are_refused_by_name(case):
    """
    Arguments beside the state that are complex, of the wrong size or meaningless are named.

    A point, gravity, wrench, frame offset, parameter table, damping or frame: no silent real
    part either.
    """
    kind, model, pair = case
    link = CASES[kind][2][0]
    q, v, a = state(model, 43)
    z3, z6 = np.zeros(3) + 1e-20j, np.zeros(6) + 1e-20j
    for name, call in (
            ('point', lambda: model.jacobian(q, link, point=z3)),
            ('point', lambda: model.acceleration(q, v, a, link, point=z3)),
            ('gravity', lambda: model.with_gravity(z3)),
            ('dynamic parameters', lambda: model.with_dynamic_parameters(
                model.dynamic_parameters() + 1e-20j)),
            (rf"f_ext\['{link}'\]", lambda: model.inverse_dynamics(q, v, a, f_ext={link: z6})),
            ('with_frame: xyz', lambda: model.with_frame('tcp', link, xyz=z3)),
            (rf"Contact\('{link}'\): point", lambda: Contact(link, point=z3))):
        with pytest.raises(ValueError, match='^' + name + COMPLEX_ENTRIES):
            call()
    for point in ((0.0, 0.0), (0.0, np.nan, 0.0), 'abc'):
        with pytest.raises(ValueError, match=rf"^Contact\('{link}'\): point must be 3 finite "
                                             rf'numbers \(link frame\), got '):
            Contact(link, point=point)
    assert Contact(link, point=np.array([1, 2, 3])).point == (1.0, 2.0, 3.0)
    with pytest.raises(ValueError, match=r'^dynamic parameters must be \d+ x 10 numbers .*, '
                                         r'got no array of numbers$'):
        model.with_dynamic_parameters([[1.0, 2.0], [3.0]])
    nb = len(model.body_names)
    with pytest.raises(ModelError, match=rf'^dynamic parameters must be {nb} x 10 numbers '
                                         rf'\(one row per body of .*\), got \({nb - 1}, 10\)$'):
        model.with_dynamic_parameters(model.dynamic_parameters()[1:])
    with pytest.raises(ValueError, match=r"^acceleration: frame 'world' has no classical "
                                         r'acceleration'):
        model.acceleration(q, v, a, link, frame='world')
    for damping in (1 + 1j, 1e200):       # the value given (not -1); 1e200: its square is inf
        with pytest.raises(ValueError, match=r'^damping must be a finite number >= 0 \(its square '
                                             rf'finite\), got {re.escape(repr(damping))}$'):
            model.operational_space_inertia(q, link, damping=damping)
    with pytest.raises(ValueError, match=r'^f_ext must map link names to 6-vectors \(fx, fy, fz, '
                                         r'mx, my, mz\), got ndarray$'):
        model.inverse_dynamics(q, v, a, f_ext=np.zeros(6))      # was NumPy's 'truth value'
    with pytest.raises(ValueError, match=r'^f_ext must map link names.*, got ndarray$'):
        model.inverse_dynamics_derivatives(q, v, a, f_ext=np.zeros(6))
    for flag in (np.array([1, 0]), 2, 'yes'):   # was NumPy's 'truth value' or taken as True
        for method in (model.center_of_mass, model.center_of_mass_jacobian):
            with pytest.raises(ValueError, match=r'^include_root must be True or False, got '):
                method(q, include_root=flag)
    with pytest.raises(ValueError, match=r'^steps must be an integer >= 0 \(below 2\*\*63\)'):
        model.simulate(q, v, a[model.nv - model.n:], 1e-3, 2 ** 70)     # was an OverflowError


@pytest.mark.parametrize('method', ['constrained_forward_dynamics',
                                    'constrained_forward_dynamics_derivatives', 'linearize'])
def test_a_contact_batch_names_a_misshapen_tau(case, method):
    """A tau of n or nv entries per row is taken; any other shape is named (no StopIteration)."""
    kind, model, pair = case
    contacts = [Contact(CASES[kind][2][0])]
    call = functools.partial(getattr(model, method), contacts=contacts)
    q, v, a = state(model, 42)
    sizes = sorted({model.n, model.nv})
    shapes = re.escape(', '.join([f'({n},)' for n in sizes] + [f'(N, {n})' for n in sizes][:-1])
                       + f' or (N, {sizes[-1]})')
    for tau, got in ((np.zeros((1, 1, model.nv)), r'\(1, 1, \d+\)'),
                     (np.zeros((2, model.n + 1)), rf'\(2, {model.n + 1}\)'),
                     ('abc', 'no array of numbers')):
        with pytest.raises(ValueError, match=rf"^tau must have shape {shapes} \(the joints' or "
                                             rf"every velocity's\), got {got}$"):
            call(np.stack([q, q]), v, tau)
    with pytest.raises(ValueError, match=r'^tau has complex entries'):
        call(np.stack([q, q]), v, np.zeros((2, model.nv)) + 1e-20j)
    with pytest.raises(ValueError, match=r'^tau has 3 rows, the other inputs 2$'):
        call(np.stack([q, q]), v, np.zeros((3, model.nv)))


@pytest.mark.parametrize('method', ['mass_matrix', 'inverse_dynamics', 'gravity_torque',
                                    'bias_torque', 'forward_dynamics', 'coriolis_star'])
def test_a_single_state_never_pays_for_the_batch_loop(case, method, monkeypatch):
    """One state takes no batch bookkeeping: reading a signature cost 15 us per call."""
    kind, model, pair = case
    q, v, a = state(model, 50)
    expected = METHODS[method](model, q, v, a, CASES[kind][2][0])

    def refuse(*args, **kwargs):
        raise AssertionError('inspect.signature on a single state')
    monkeypatch.setattr(inspect, 'signature', refuse)
    np.testing.assert_array_equal(METHODS[method](model, q, v, a, CASES[kind][2][0]), expected)


# ------------------------------------------------------------------ what only a base has
def test_a_fixed_base_refuses_base_pose_and_base_state_clearly():
    model, _ = build('fixed arm')
    with pytest.raises(ModelError, match=r"base_pose: ur5 has a fixed base.*root_joint="):
        model.base_pose(model.neutral())
    with pytest.raises(ModelError, match=r'base_state: ur5 has a fixed base'):
        model.base_state([0, 0, 0], [0, 0, 0, 1], [0, 0, 0], [0, 0, 0])


def test_derived_models_keep_their_base():
    model, _ = build('floating quadruped')
    for derived in (model.with_gravity([0, 0, -1.62]), model.with_armature(np.full(12, 0.01)),
                    model.locked({'FL_KFE': 0.3})):
        assert isinstance(derived, RobotModel) and derived.base == 'floating'
        assert derived.nv == derived.n + 6
    locked = model.locked({'FL_KFE': 0.3})
    assert 'FL_KFE' not in locked.joint_names and locked.n == 11
    np.testing.assert_allclose(model.with_gravity([0, 0, -1.62]).gravity, [0, 0, -1.62])
    armed = model.with_armature(np.full(12, 0.01))
    q = model.neutral()
    close(armed.mass_matrix(q) - model.mass_matrix(q),
          np.diag(np.concatenate([np.zeros(6), np.full(12, 0.01)])), 'armature')


def test_the_package_lists_its_public_names_and_the_old_class_name_warns():
    names = dir(kron_dynamics)
    assert {'RobotModel', 'Contact', 'ModelError', 'SingularMassMatrixError'} <= set(names)
    assert 'FloatingBaseModel' not in names
    with pytest.warns(DeprecationWarning, match='every model is a RobotModel'):
        alias = kron_dynamics.FloatingBaseModel
    assert issubclass(alias, RobotModel)


def test_locking_every_mimic_joint_away_gives_the_plain_compiled_model():
    """lock_others on the Panda's arm joints locks the fingers: no mimic joint is left."""
    path = robots_dir() / CASES['mimic gripper'][0]
    arm = [f'panda_joint{i}' for i in range(1, 8)]
    model = RobotModel.from_urdf_file(path, joint_names=arm, lock_others=True)
    assert type(model) is RobotModel and not model.mimic_joints and model.n == 7
    also = RobotModel.from_urdf_file(path, joint_names=iter(arm), lock_others=True)
    assert type(also) is RobotModel and also.joint_names == tuple(arm)
    q = model.random_configuration(1)
    full = RobotModel.from_urdf_file(path)
    close(model.mass_matrix(q), full.mass_matrix(np.append(q, 0.0))[:7, :7], 'M, fingers at 0')


MASS_ON_THE_ROOT = """<robot name="mass_on_the_root">
  <link name="base"><inertial><origin xyz="0.1 0.2 0.3"/><mass value="2"/>
    <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="arm"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="arm"/>
    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"""


def test_a_centre_of_mass_of_massless_bodies_is_refused_and_says_what_counts_the_root():
    """The moving bodies have no mass, the root 2 kg: include_root=True has a centre."""
    model = RobotModel.from_urdf_string(MASS_ON_THE_ROOT)
    hint = r' \(include_root=True adds the mass welded to the root\)$'
    for q in (np.zeros(1), np.zeros((3, 1))):
        for method in (model.center_of_mass, model.center_of_mass_jacobian):
            with pytest.raises(ValueError, match='^center of mass: the bodies counted have no '
                                                 'mass' + hint):
                method(q)
        com = model.center_of_mass(q, include_root=True)
        np.testing.assert_array_equal(com, np.broadcast_to([0.1, 0.2, 0.3], com.shape))
        assert not np.any(model.center_of_mass_jacobian(q, include_root=True))
    massless = RobotModel.from_urdf_string(MASS_ON_THE_ROOT.replace('value="2"', 'value="0"'))
    with pytest.raises(ValueError, match='^center of mass: the bodies counted have no mass$'):
        massless.center_of_mass(np.zeros(1), include_root=True)


def test_integrate_names_an_argument_it_does_not_take():
    """integrate(q, v, dt=1.0): any other keyword is a TypeError that names it."""
    model = RobotModel.from_urdf_string(MASS_ON_THE_ROOT)
    with pytest.raises(TypeError, match=r"^integrate\(q, v, dt=1.0\) got unexpected "
                                        r"argument\(s\) \['h', 'step'\]$"):
        model.integrate(np.zeros(1), np.ones(1), step=0.1, h=0.2)
    assert model.integrate(np.zeros(1), np.ones(1), dt=0.5).tolist() == [0.5]
