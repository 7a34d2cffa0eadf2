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
The derivatives of contact-constrained forward dynamics (v', lambda) in q, v and tau.

Against Pinocchio's computeConstraintDynamicsDerivatives (fixed, floating and planar bases,
point and surface contacts, both reference frames, contacts at rest and moving), against
central differences of constrained_forward_dynamics itself (q moved by integrate; mimic
joints, armature and random floating trees too), and the compiled kernels against the
readable reference.
"""

import numpy as np
import pinocchio as pin     # a declared test dependency (requirements.txt): no skip
import pytest

from kron_dynamics import Contact, RobotModel, SingularJacobianError
from kron_dynamics.algorithms.constrained_dynamics_derivatives import (
    contact_acceleration_derivatives, contact_force_derivative, kkt_derivatives)
from kron_dynamics.kernels import native
from kron_dynamics.testing.random_urdf import random_urdf
from model_helpers import step_differences
from pinocchio_oracle import (build_case, ONE_MODEL_CONTACTS, PinPair, PROXIMAL,
                              random_state, robots_dir)

FRAMES = ['local_world_aligned', 'local']
CASES = ONE_MODEL_CONTACTS     # a model of ONE_MODEL_CASES (or TALOS): its contacts
_MODELS = {}


def case(kind):
    """Return (model, PinPair) of a case, built once per session."""
    if kind not in _MODELS:
        if kind == 'talos':
            path = robots_dir() / 'talos_data/robots/talos_reduced.urdf'
            model = RobotModel.from_urdf_file(path, root_joint='floating')
            _MODELS[kind] = model, PinPair(model, pin.buildModelFromUrdf(
                str(path), pin.JointModelFreeFlyer()))
        else:
            _MODELS[kind] = build_case(kind)
    return _MODELS[kind]


def in_frame(contacts, frame):
    """Return the contacts with every reference_frame set to frame."""
    return [Contact(c.link, c.point, c.dim, frame) for c in contacts]


def state(model, contacts, seed, moving):
    """Return (q, v, tau) at random; contacts at rest (J_c v = 0) unless ``moving``."""
    q, v, _ = random_state(model, seed)
    if not moving:
        J = model.contact_jacobian(q, contacts)
        v = v - np.linalg.pinv(J) @ (J @ v)
    return q, v, np.random.default_rng(seed + 1).uniform(-2, 2, model.nv)


def relative(ours, theirs):
    """Return the largest difference relative to 1 + the largest entry of theirs."""
    return np.abs(np.asarray(ours) - theirs).max() / (1.0 + np.abs(theirs).max())


@pytest.mark.parametrize('moving', [False, True], ids=['contacts at rest', 'contacts moving'])
@pytest.mark.parametrize('frame', FRAMES)
@pytest.mark.parametrize('kind', ['fixed arm', 'floating quadruped', 'planar base', 'talos'])
def test_they_equal_pinocchios_constraint_dynamics_derivatives(kind, frame, moving):
    """All six derivatives equal computeConstraintDynamicsDerivatives' to 1e-9."""
    model, pair = case(kind)
    contacts = in_frame(CASES.get(kind) or [Contact('left_sole_link', dim=6),
                                            Contact('right_sole_link', dim=6)], frame)
    for seed in (3, 4):
        q, v, tau = state(model, contacts, seed, moving)
        ours = model.constrained_forward_dynamics_derivatives(q, v, tau, contacts)
        kinds, datas = pair.constraint_models(contacts)
        pin.constraintDynamics(pair.pm, pair.pd, pair.q(q), pair.v(v), pair.v(tau), kinds,
                               datas, pin.ProximalSettings(*PROXIMAL))
        pin.computeConstraintDynamicsDerivatives(pair.pm, pair.pd, kinds, datas)
        d, P = pair.pd, pair.P
        theirs = (P.T @ d.ddq_dq @ P, P.T @ d.ddq_dv @ P, P.T @ d.ddq_dtau @ P,
                  d.dlambda_dq @ P, d.dlambda_dv @ P, d.dlambda_dtau @ P)
        for name, x, y in zip(ours._fields, ours, theirs):
            assert relative(x, y) < 1e-9, (kind, frame, seed, name, relative(x, y))


def central_differences(model, q, v, tau, contacts, h=1e-6, f_ext=None):
    """Return d(v', lambda)/d(q, v, tau) by central differences, q moved by integrate."""
    def f(q, v, tau):
        return np.concatenate(model.constrained_forward_dynamics(q, v, tau, contacts, f_ext))

    nv = model.nv
    out = [np.empty((len(f(q, v, tau)), nv)) for _ in range(3)]
    for k in range(nv):
        e = np.zeros(nv)
        e[k] = h
        out[0][:, k] = (f(model.integrate(q, e), v, tau) - f(model.integrate(q, -e), v, tau))
        out[1][:, k] = f(q, v + e, tau) - f(q, v - e, tau)
        out[2][:, k] = f(q, v, tau + e) - f(q, v, tau - e)
    return [x / (2 * h) for x in out]


def assert_differences(model, q, v, tau, contacts, what, f_ext=None):
    """Assert the derivatives against central differences (1e-6 of their scale)."""
    d = model.constrained_forward_dynamics_derivatives(q, v, tau, contacts, f_ext)
    fd = central_differences(model, q, v, tau, contacts, f_ext=f_ext)
    for name, dv, dlam, D in zip(('q', 'v', 'tau'), d[:3], d[3:], fd):
        err = relative(np.vstack([dv, dlam]), D)
        assert err < 1e-6, (what, name, err)


@pytest.mark.parametrize('frame', FRAMES)
@pytest.mark.parametrize('kind', sorted(CASES))
def test_they_are_central_differences_on_every_base(kind, frame):
    """Fixed, mimic gripper, floating and planar: the derivatives of the dynamics' own call."""
    model, _ = case(kind)
    contacts = in_frame(CASES[kind], frame)
    q, v, tau = state(model, contacts, 5, moving=True)
    assert_differences(model, q, v, tau, contacts, kind)
    armed = model.with_armature(np.linspace(0.1, 0.5, model.n))
    assert_differences(armed, q, v, tau, contacts, f'{kind} with armature')


@pytest.mark.parametrize('seed', range(4))
def test_they_are_central_differences_on_random_floating_trees_with_mimic_joints(seed):
    """Random trees (mimic joints, prismatic, tilted axes) on a free flyer, one contact."""
    rng = np.random.default_rng(100 + seed)
    xml = random_urdf(rng, 7, n_fixed=2, mimic_fraction=0.4, massless_fraction=0.0)
    model = RobotModel.from_urdf_string(xml, root_joint='floating')
    links = [link for link, (body, _, _) in model.description.frames.items() if body >= 0]
    link = links[int(rng.integers(len(links)))]
    contacts = [Contact(link, point=tuple(rng.uniform(-0.1, 0.1, 3)), dim=3 + 3 * (seed % 2),
                        reference_frame=FRAMES[seed // 2])]
    q, v, tau = state(model, contacts, seed, moving=True)
    assert_differences(model, q, v, tau, contacts, f'random tree {seed}')


def test_the_compiled_terms_and_solve_are_the_readable_ones():
    """kernels/constrained_dynamics_derivatives.py against its readable reference, 1e-12."""
    model, _ = case('floating quadruped')
    rng = np.random.default_rng(9)
    for frame in FRAMES:
        contacts = in_frame(CASES['floating quadruped'], frame)
        q, v, tau = state(model, contacts, 6, moving=True)
        a = rng.uniform(-1, 1, model.nv)
        lam = rng.uniform(-5, 5, 9)
        J, da_dq, da_dv, dQ = model._contact_derivative_terms(q, v, a, lam, contacts)
        assert relative(J, model.contact_jacobian(q, contacts)) < 1e-14
        readable = np.zeros((model.nv, model.nv))
        r = 0
        paths, lengths = model._contact_paths(contacts)[2][1:3]
        for c, idx in zip(contacts, [path[:k] for path, k in zip(paths, lengths)]):
            Jw = model.jacobian(q, c.link, frame='world')
            T = model.link_pose(q, c.link)
            S = np.vstack([Jw[3:], Jw[:3]])[:, idx]
            R, p = T[:3, :3], T[:3, :3] @ np.asarray(c.point) + T[:3, 3]
            _, aq, av = contact_acceleration_derivatives(S, 6, v[idx], a[idx], R, p, c.dim)
            if frame != 'local':
                turn = np.kron(np.eye(c.dim // 3), R)
                aq, av = turn @ aq, turn @ av
            readable[np.ix_(idx, idx)] += contact_force_derivative(
                S, 6, R, p, lam[r:r + c.dim], c.dim, frame == 'local')
            assert relative(da_dq[r:r + c.dim, idx], aq) < 1e-12
            assert relative(da_dv[r:r + c.dim, idx], av) < 1e-12
            r += c.dim
        assert relative(dQ, readable) < 1e-12
        M = model.mass_matrix(q)
        J = model.contact_jacobian(q, contacts)
        terms = [rng.uniform(-1, 1, (model.nv, model.nv)) for _ in range(3)]
        rows = [rng.uniform(-1, 1, (9, model.nv)) for _ in range(2)]
        X, Y = np.empty((model.nv, 3 * model.nv)), np.empty((9, 3 * model.nv))
        assert native.kkt_solve(M, J, terms[0], terms[1], terms[2], rows[0], rows[1], X, Y) == 0
        readable = kkt_derivatives(M, J, terms[0], terms[1], terms[2], rows[0], rows[1])
        nv = model.nv
        compiled = (X[:, :nv], X[:, nv:2 * nv], X[:, 2 * nv:], -Y[:, :nv], -Y[:, nv:2 * nv],
                    -Y[:, 2 * nv:])
        for x, y in zip(compiled, readable):
            assert relative(x, y) < 1e-12


def test_redundant_contacts_are_refused_naming_them():
    """Two surface contacts on one foot: lambda is not unique, neither its derivatives."""
    model, _ = case('floating quadruped')
    contacts = [Contact('FL_FOOT', dim=6), Contact('FL_FOOT', point=(0.0, 0.0, 0.01))]
    q, v, tau = state(model, contacts, 2, moving=False)
    with pytest.raises(SingularJacobianError, match=r"contacts \['FL_FOOT', 'FL_FOOT'\].*"
                                                    r'redundant'):
        model.constrained_forward_dynamics_derivatives(q, v, tau, contacts)
    arm, _ = case('fixed arm')            # base_link is welded to the fixed root
    q, v, _ = random_state(arm, 1)
    with pytest.raises(SingularJacobianError, match=r"contacts \['base_link'\]: no "
                                                    'coordinate moves them'):
        arm.constrained_forward_dynamics_derivatives(q, v, np.zeros(6), ['base_link'])


@pytest.mark.parametrize('kind', sorted(CASES))
def test_a_batch_is_one_compiled_call_of_the_single_calls_rows(kind, monkeypatch):
    """(N, nq), (N, nv) in: each row the single call's bits, no loop of single calls."""
    model, _ = case(kind)
    contacts = CASES[kind]
    m = sum(c.dim for c in contacts)
    rows = [state(model, contacts, seed, moving=True) for seed in range(3)]
    Q, V, T = (np.stack(x) for x in zip(*rows))
    singles = [model.constrained_forward_dynamics_derivatives(*r, contacts) for r in rows]
    with monkeypatch.context() as patch:
        calls = []
        single = native.constrained_derivatives
        patch.setattr(native, 'constrained_derivatives', lambda *a: calls.append(a) or single(*a))
        batch = model.constrained_forward_dynamics_derivatives(Q, V, T, contacts)
        assert not calls, 'a batch is not a loop of single calls'
    for k, one in enumerate(singles):
        for name, x, y in zip(one._fields, batch, one):
            assert np.array_equal(x[k], y), (kind, k, name)
    assert batch.dv_dq.shape == (3, model.nv, model.nv)
    assert batch.dlambda_dtau.shape == (3, m, model.nv)
    one_q = model.constrained_forward_dynamics_derivatives(Q[0], V, T, contacts)
    assert np.array_equal(one_q.dv_dq[2], model.constrained_forward_dynamics_derivatives(
        Q[0], V[2], T[2], contacts).dv_dq), 'a 1-D q is broadcast'
    empty = model.constrained_forward_dynamics_derivatives(Q[:0], V[:0], T[:0], contacts)
    assert empty.dlambda_dq.shape == (0, m, model.nv)


def test_a_batch_names_a_bad_row():
    """A non-finite row is named; a row the solve refuses is the single call's error."""
    model, _ = case('floating quadruped')
    contacts = CASES['floating quadruped']
    rows = [state(model, contacts, seed, moving=True) for seed in range(3)]
    Q, V, T = (np.stack(x) for x in zip(*rows))
    bad = V.copy()
    bad[1, 7] = np.nan
    with pytest.raises(ValueError, match=r"v\[1\] is not finite at \['FL_HFE'\]"):
        model.constrained_forward_dynamics_derivatives(Q, bad, T, contacts)
    twice = [Contact('FL_FOOT', dim=6), Contact('FL_FOOT', point=(0.0, 0.0, 0.01))]
    with pytest.raises(SingularJacobianError, match=r'^row 0: contacts .*redundant'):
        model.constrained_forward_dynamics_derivatives(Q, V, T, twice)


WRENCHED = {'fixed arm': 'forearm_link', 'mimic gripper': 'panda_rightfinger',
            'floating quadruped': 'FR_LOWER_LEG', 'planar base': 'torso_lift_link'}


@pytest.mark.parametrize('kind', sorted(CASES))
def test_external_wrenches_in_contact(kind):
    """
    f_ext beside the contacts: S^T tau + sum J^T F is what constrained dynamics then takes.

    Its derivatives (the wrench held in root axes) against central differences, a batch
    row by row, linearize in contact with f_ext against differences of the step, and
    contact_inverse_dynamics with f_ext: M v' + h - sum J^T F = S^T tau + J_c^T lambda (a
    batch row by row).
    """
    model, _ = case(kind)
    contacts = CASES[kind]
    nb, nv = model.nv - model.n, model.nv
    q, v, tau = state(model, contacts, 9, moving=True)
    link = WRENCHED[kind]
    wrench = np.array([4.0, -3.0, 6.0, 0.5, -0.4, 0.3])
    f_ext = {link: wrench}
    got = model.constrained_forward_dynamics(q, v, tau, contacts, f_ext)
    want = model.constrained_forward_dynamics(q, v, tau + model.jacobian(q, link).T @ wrench,
                                              contacts)
    for a, b, what in zip(got, want, ("v'", 'lambda')):
        assert relative(a, b) < 1e-12, (kind, what)
    free = model.constrained_forward_dynamics(q, v, tau, contacts)
    assert relative(got[0], free[0]) > 1e-6, 'the wrench changes the motion'
    if nb:      # the joint forces only (n): the base's are 0 as without f_ext
        joints = tau.copy()
        joints[:nb] = 0.0
        one = model.constrained_forward_dynamics(q, v, joints[nb:], contacts, f_ext)
        assert relative(one[0], model.constrained_forward_dynamics(
            q, v, joints, contacts, f_ext)[0]) < 1e-14
        for x, y in zip(model.constrained_forward_dynamics_derivatives(q, v, joints[nb:],
                                                                       contacts, f_ext),
                        model.constrained_forward_dynamics_derivatives(q, v, joints, contacts,
                                                                       f_ext)):
            assert relative(x, y) < 1e-14
    assert_differences(model, q, v, tau, contacts, f'{kind} with f_ext', f_ext)
    Q, V, T = (np.stack([x, x]) for x in (q, v, tau))
    both = {link: np.stack([wrench, -wrench])}
    batch = model.constrained_forward_dynamics_derivatives(Q, V, T, contacts, both)
    for k, w in enumerate((wrench, -wrench)):
        single = model.constrained_forward_dynamics_derivatives(q, v, tau, contacts, {link: w})
        for x, y in zip(batch, single):
            assert relative(x[k], y) < 1e-12, (kind, k)
    tau[:nb] = 0.0
    dv, _ = model.constrained_forward_dynamics(q, v, tau, contacts, f_ext)
    back, lam = model.contact_inverse_dynamics(q, v, dv, contacts, f_ext)
    J_c = model.contact_jacobian(q, contacts)
    left = model.inverse_dynamics(q, v, dv) - model.jacobian(q, link).T @ wrench
    assert relative(np.concatenate([np.zeros(nb), back]) + J_c.T @ lam, left) < 1e-10, kind
    assert relative(model.constrained_forward_dynamics(q, v, back, contacts, f_ext)[0],
                    dv) < 1e-8, kind
    DV = np.stack([dv, dv])
    backs, lams = model.contact_inverse_dynamics(Q, V, DV, contacts, {link: np.stack([wrench,
                                                                                      wrench])})
    assert relative(backs[1], back) < 1e-14 and relative(lams[1], lam) < 1e-14, kind
    # a wrench per row: each row as its single call (the batch's compiled rows)
    dv2, _ = model.constrained_forward_dynamics(q, v, tau, contacts, {link: -wrench})
    backs, lams = model.contact_inverse_dynamics(Q, V, np.stack([dv, dv2]), contacts,
                                                 {link: np.stack([wrench, -wrench])})
    for k, (w, a) in enumerate(((wrench, dv), (-wrench, dv2))):
        one, one_lam = model.contact_inverse_dynamics(q, v, a, contacts, {link: w})
        assert relative(backs[k], one) < 1e-12 and relative(lams[k], one_lam) < 1e-12, k
    assert relative(backs[0], backs[1]) > 1e-6, 'the rows differ'
    DV[1] += 1.0
    with pytest.raises(ValueError, match=r'^row 1: dv moves the contacts'):
        model.contact_inverse_dynamics(Q, V, DV, contacts, f_ext)
    dt = 0.01

    def step(q, v, u):
        dv, _ = model.constrained_forward_dynamics(q, v, u, contacts, f_ext)
        return model.integrate(q, v + dt * dv, dt), v + dt * dv
    A, B = model.linearize(q, v, tau, dt, contacts=contacts, f_ext=f_ext)
    err = relative(np.hstack([A, B]), step_differences(model, step, q, v, tau[nb:]))
    assert err < 1e-6, (kind, err)
    d = model.constrained_forward_dynamics_derivatives(q, v, tau, contacts, f_ext)
    Ac, Bc = model.linearize(q, v, tau, contacts=contacts, f_ext=f_ext)
    assert np.array_equal(Ac[nv:], np.hstack([d.dv_dq, d.dv_dv]))
    assert np.array_equal(Bc[nv:], d.dv_dtau[:, nb:])


@pytest.mark.parametrize('kind', sorted(CASES))
def test_linearize_in_contact_is_the_derivative_of_the_constrained_step(kind):
    """linearize(..., contacts=...) against differences of semi-implicit Euler in contact."""
    model, _ = case(kind)
    contacts = CASES[kind]
    nb, nv, n = model.nv - model.n, model.nv, model.n
    q, v, tau = state(model, contacts, 7, moving=True)
    tau[:nb] = 0.0          # the base is not actuated: linearize takes all nv forces
    u = tau[nb:]
    dt = 0.01

    def step(q, v, u):
        dv, _ = model.constrained_forward_dynamics(q, v, u, contacts)
        v_next = v + dt * dv
        return model.integrate(q, v_next, dt), v_next
    A, B = model.linearize(q, v, tau, dt, contacts=contacts)
    assert A.shape == (2 * nv, 2 * nv) and B.shape == (2 * nv, n)
    err = relative(np.hstack([A, B]), step_differences(model, step, q, v, u))
    assert err < 1e-6, (kind, err)
    d = model.constrained_forward_dynamics_derivatives(q, v, tau, contacts)
    Ac, Bc = model.linearize(q, v, tau, contacts=contacts)
    assert np.array_equal(Ac[nv:], np.hstack([d.dv_dq, d.dv_dv]))
    assert np.array_equal(Bc[nv:], d.dv_dtau[:, nb:]) and not Bc[:nv].any()
    free = model.linearize(q, v, tau)
    assert relative(free[0], Ac) > 1e-6, 'the contacts change the linearisation'
    Q, V, T = (np.stack([x, x]) for x in (q, v, tau))
    A2, B2 = model.linearize(Q, V, T, dt, contacts=contacts)
    assert np.array_equal(A2[1], A) and np.array_equal(B2[1], B)
