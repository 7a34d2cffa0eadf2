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
Derivatives of the dynamics (issue 23) on every kind of model.

Against Pinocchio's computeRNEADerivatives and computeABADerivatives on a fixed arm, a
floating quadruped, a planar base and (projected with B, which Pinocchio's mimic model
refuses) a mimic gripper; against central differences along integrate(q, e_k h) on all of
them and on random trees; the compiled kernel against the readable reference; and against
000 eq. (101): dtau/dq' = C*(I kron q' + q' kron I).
"""

import numpy as np
import pinocchio as pin     # a declared test dependency (requirements.txt): no skip
import pytest

from kron_dynamics import ModelError, RobotModel, SingularMassMatrixError
from kron_dynamics.algorithms.rnea_derivatives import rnea_derivatives
from kron_dynamics.testing.pinocchio_pair import symmetric_from_upper
import model_helpers
from pinocchio_oracle import build_case, close, ONE_MODEL_CASES, random_state


@pytest.fixture(scope='module', params=sorted(ONE_MODEL_CASES))
def case(request):
    model, pair = build_case(request.param)
    return request.param, model, pair


def along(model, f, q, direction, h=1e-6):
    """Central difference of f along integrate(q, direction t) at t = 0."""
    return (f(model.integrate(q, direction, h)) - f(model.integrate(q, direction, -h))) / (2 * h)


def columns(model, f, q):
    """Return d f / dq in the tangent space, one column per velocity direction (last axis)."""
    E = np.eye(model.nv)
    return np.stack([along(model, f, q, E[k]) for k in range(model.nv)], axis=-1)


def test_inverse_dynamics_derivatives_are_pinocchios(case):
    """P^T dtau/dx P of the unconstrained Pinocchio model (P: our v -> its v)."""
    kind, model, pair = case
    P = pair.P
    for seed in range(3):
        q, v, dv = random_state(model, seed)
        dq, dvv, M = model.inverse_dynamics_derivatives(q, v, dv)
        pdq, pdv, pM = pin.computeRNEADerivatives(pair.pm, pair.pd, pair.q(q), pair.v(v),
                                                  pair.v(dv))
        # with mimic joints q = B u + d, so that d/du = (d/dq) B: the projection again
        close(dq, P.T @ pdq @ P, 'dtau/dq against computeRNEADerivatives', 1e-9)
        close(dvv, P.T @ pdv @ P, 'dtau/dv against computeRNEADerivatives', 1e-9)
        close(M, P.T @ symmetric_from_upper(pM) @ P, 'M', 1e-9)
        close(M, model.mass_matrix(q), 'M of the derivatives is mass_matrix', 1e-12)
        close(model.gravity_derivative(q),
              P.T @ pin.computeGeneralizedGravityDerivatives(pair.pm, pair.pd, pair.q(q)) @ P,
              'dG/dq against computeGeneralizedGravityDerivatives', 1e-9)


def test_the_compiled_path_equals_the_general_one(case):
    """Lists skip the compiled entry points: the NumPy path around the kernels must agree."""
    kind, model, pair = case
    q, v, dv = random_state(model, 9)
    tau = model.inverse_dynamics(q, v, dv)
    for method, args in (('inverse_dynamics_derivatives', (q, v, dv)),
                         ('forward_dynamics_derivatives', (q, v, tau))):
        fast = getattr(model, method)(*args)
        general = getattr(model, method)(*(list(x) for x in args))
        for a, b in zip(fast, general):
            close(a, b, f'{method}: compiled against general', 1e-10)


def test_forward_dynamics_derivatives_are_pinocchios(case):
    """Pinocchio's computeABADerivatives where its model is ours (mimic: by differences)."""
    kind, model, pair = case
    q, v, dv = random_state(model, 4)
    tau = model.inverse_dynamics(q, v, dv)
    da_dq, da_dv, Minv = model.forward_dynamics_derivatives(q, v, tau)
    close(Minv @ model.mass_matrix(q), np.eye(model.nv), 'M^-1 M', 1e-9)
    if model.mimic_joints:          # Pinocchio's ABA is the unconstrained system's
        return
    P = pair.P                      # a permutation of the coordinates here
    pa, pv, pMinv = pin.computeABADerivatives(pair.pm, pair.pd, pair.q(q), pair.v(v),
                                              pair.v(tau))
    close(da_dq, P.T @ pa @ P, "dv'/dq against computeABADerivatives", 1e-8)
    close(da_dv, P.T @ pv @ P, "dv'/dv against computeABADerivatives", 1e-8)
    close(Minv, P.T @ pMinv @ P, 'M^-1 against computeABADerivatives', 1e-8)


def test_every_derivative_against_central_differences(case):
    """Along integrate(q, e_k h), v + e_k h, dv + e_k h; with an external wrench too."""
    kind, model, pair = case
    q, v, dv = random_state(model, 7)
    link = ONE_MODEL_CASES[kind][2][0]
    wrench = {link: np.array([3.0, -2.0, 5.0, 0.4, -0.3, 0.2])}
    for f_ext in (None, wrench):
        dq, dvv, M = model.inverse_dynamics_derivatives(q, v, dv, f_ext=f_ext)
        E = np.eye(model.nv)
        close(dq, columns(model, lambda x: model.inverse_dynamics(x, v, dv, f_ext), q),
              f'dtau/dq (f_ext={f_ext})', 1e-6)
        close(dvv, np.stack([(model.inverse_dynamics(q, v + 1e-6 * E[k], dv, f_ext)
                              - model.inverse_dynamics(q, v - 1e-6 * E[k], dv, f_ext)) / 2e-6
                             for k in range(model.nv)], axis=1), 'dtau/dv', 1e-6)
        close(M, np.stack([(model.inverse_dynamics(q, v, dv + E[k], f_ext)
                            - model.inverse_dynamics(q, v, dv - E[k], f_ext)) / 2
                           for k in range(model.nv)], axis=1), 'dtau/ddv', 1e-9)
    tau = model.inverse_dynamics(q, v, dv)[model.nv - model.n:]
    tau = np.concatenate([np.zeros(model.nv - model.n), tau])
    da_dq, da_dv, _ = model.forward_dynamics_derivatives(q, v, tau)
    close(da_dq, columns(model, lambda x: model.forward_dynamics(x, v, tau), q),
          "dv'/dq", 1e-5)
    close(da_dv, np.stack([(model.forward_dynamics(q, v + 1e-6 * E[k], tau)
                            - model.forward_dynamics(q, v - 1e-6 * E[k], tau)) / 2e-6
                           for k in range(model.nv)], axis=1), "dv'/dv", 1e-5)
    close(model.mass_matrix_derivative(q), columns(model, model.mass_matrix, q), 'dM/dq', 1e-6)
    close(model.gravity_derivative(q), columns(model, model.gravity_torque, q), 'dG/dq', 1e-6)


def test_derivatives_take_batches_and_say_what_is_wrong(case):
    kind, model, pair = case
    states = [random_state(model, 20 + k) for k in range(3)]
    Q, V, A = (np.stack(x) for x in zip(*states))
    T = np.stack([model.inverse_dynamics(*s) for s in states])
    for method, args in (('inverse_dynamics_derivatives', (Q, V, A)),
                         ('forward_dynamics_derivatives', (Q, V, T)),
                         ('mass_matrix_derivative', (Q,)), ('gravity_derivative', (Q,))):
        batch = getattr(model, method)(*args)
        for k in range(3):
            single = getattr(model, method)(*(x[k] for x in args))
            for b, s in zip(batch if isinstance(batch, tuple) else (batch,),
                            single if isinstance(single, tuple) else (single,)):
                np.testing.assert_allclose(b[k], s, rtol=1e-12, atol=1e-12)
        empty = getattr(model, method)(*(x[:0] for x in args))
        for e in (empty if isinstance(empty, tuple) else (empty,)):
            assert e.shape[0] == 0
    bad = Q.copy()
    bad[1, -1] = np.nan
    last = model.configuration_names[-1]
    with pytest.raises(ValueError, match=rf"^q\[1\] is not finite at \['{last}'\]$"):
        model.inverse_dynamics_derivatives(bad, V, A)
    with pytest.raises(ValueError, match='qd|v'):
        model.inverse_dynamics_derivatives(Q[0], V[0][:-1], A[0])


def random_model(seed, mimic=0.0):
    """Return (model, rng): a random tree, shuffled joints, armature, mimic joints."""
    return model_helpers.random_model(seed, max_joints=10, fixed=2, armature=True,
                                      mimic_fraction=mimic)


@pytest.mark.parametrize('mimic', [0.0, 0.4])
@pytest.mark.parametrize('seed', range(4))
def test_a_mass_matrix_derivative_batch_is_one_compiled_call(seed, mimic, monkeypatch):
    """dM/dq of N configurations: each row the single call's bit for bit, no loop over rows."""
    model, rng = random_model(seed + (300 if mimic else 0), mimic)
    Q = np.array([model.random_configuration(rng) for _ in range(9)])
    singles = np.stack([model.mass_matrix_derivative(q) for q in Q])

    def no_loop(*args):
        raise AssertionError('the batch fell back to a loop over rows')
    monkeypatch.setattr(model, '_per_row', no_loop)
    np.testing.assert_array_equal(model.mass_matrix_derivative(Q), singles)


@pytest.mark.parametrize('seed', range(12))
def test_random_trees_kernel_reference_and_kronecker_form(seed):
    """Compiled = readable reference; dtau/dq' = C*(I kron q' + q' kron I) (000 eq. 101)."""
    model, rng = random_model(seed)
    n, p = model.n, model._perm
    q, qd, qdd = rng.uniform(-2, 2, (3, n))
    dq, dv, M = model.inverse_dynamics_derivatives(q, qd, qdd)
    inner = [np.empty(n) for _ in range(3)]
    for x, y in zip(inner, (q, qd, qdd)):
        x[p] = y
    rdq, rdv, rM = rnea_derivatives(model.tree, *inner)
    ix = np.ix_(p, p)
    close(dq, rdq[ix], 'dtau/dq: kernel against reference', 1e-11)
    close(dv, rdv[ix], 'dtau/dv: kernel against reference', 1e-11)
    close(M, rM[ix] + np.diag(model.armature), 'M: kernel against reference', 1e-11)
    Cs = model.coriolis_star(q)
    identity = np.eye(n)
    close(dv, Cs @ (np.kron(identity, qd[:, None]) + np.kron(qd[:, None], identity)),
          "dtau/dq' = C*(I kron q' + q' kron I)", 1e-10)
    dM = model.mass_matrix_derivative(q)
    close(Cs.reshape(n, n, n), dM - 0.5 * np.transpose(dM, (2, 1, 0)),
          'C*[i, j n + k] = dM_ij/dq_k - 1/2 dM_kj/dq_i', 1e-10)


@pytest.mark.parametrize('seed', range(8))
def test_random_trees_with_mimic_joints_against_differences(seed):
    model, rng = random_model(100 + seed, mimic=0.3)
    n = model.n
    q, qd, qdd = rng.uniform(-1.5, 1.5, (3, n))
    dq, dv, M = model.inverse_dynamics_derivatives(q, qd, qdd)
    E = np.eye(n)
    h = 1e-6
    close(dq, np.stack([(model.inverse_dynamics(q + h * E[k], qd, qdd)
                         - model.inverse_dynamics(q - h * E[k], qd, qdd)) / (2 * h)
                        for k in range(n)], axis=1), 'dtau/dq', 1e-6)
    close(dv, np.stack([(model.inverse_dynamics(q, qd + h * E[k], qdd)
                         - model.inverse_dynamics(q, qd - h * E[k], qdd)) / (2 * h)
                        for k in range(n)], axis=1), 'dtau/dq\'', 1e-6)
    close(M, model.mass_matrix(q), 'M', 1e-12)
    close(model.mass_matrix_derivative(q),
          np.stack([(model.mass_matrix(q + h * E[k]) - model.mass_matrix(q - h * E[k]))
                    / (2 * h) for k in range(n)], axis=2), 'dM/dq', 1e-6)


def _two_wrenches(kind, rows=None):
    """Wrenches on the first and last test links of a case (N x 6 on the first for rows)."""
    links = ONE_MODEL_CASES[kind][2]
    last = links[-1] if len(links) > 1 else 'torso_lift_link'      # TIAGo's torso
    rng = np.random.default_rng(5)
    first = rng.uniform(-5, 5, 6 if rows is None else (rows, 6))
    return {links[0]: first, last: np.array([-1.0, 2.0, 0.5, 0.1, 0.2, -0.3])}


def _wrenched_state(model, kind, seed):
    """Return (q, v, tau, f_ext): a random state, its joint torques (no base force), wrenches."""
    q, v, dv = random_state(model, seed)
    tau = model.inverse_dynamics(q, v, dv)
    tau[:model.nv - model.n] = 0.0
    return q, v, tau, _two_wrenches(kind)


def test_inverse_dynamics_derivatives_of_a_batch_with_wrenches_equal_each_row(case):
    """
    A batch with f_ext (a wrench per row and one for all): the compiled batch less sum F H.

    Each row as its single call; an empty batch; a non-finite wrench row named.
    """
    kind, model, _ = case
    states = [random_state(model, 60 + k) for k in range(3)]
    Q, V, A = (np.stack(x) for x in zip(*states))
    batch_ext = _two_wrenches(kind, rows=3)
    batch = model.inverse_dynamics_derivatives(Q, V, A, f_ext=batch_ext)
    plain = model.inverse_dynamics_derivatives(Q, V, A)
    assert np.abs(batch[0] - plain[0]).max() > 1e-3, 'the wrenches act'
    for k in range(3):
        row = {link: w if w.ndim == 1 else w[k] for link, w in batch_ext.items()}
        for got, want in zip(batch, model.inverse_dynamics_derivatives(Q[k], V[k], A[k], row)):
            close(got[k], want, f'row {k} of a batch with f_ext', 1e-12)
    empty = model.inverse_dynamics_derivatives(Q[:0], V[:0], A[:0], _two_wrenches(kind, 0))
    assert [x.shape for x in empty] == [(0, model.nv, model.nv)] * 3
    link = ONE_MODEL_CASES[kind][2][0]
    bad = batch_ext[link].copy()
    bad[1, 4] = np.nan
    with pytest.raises(ValueError, match=r"f_ext\['%s'\] is not finite at batch row\(s\) "
                                         r'\[1\]' % link):
        model.inverse_dynamics_derivatives(Q, V, A, f_ext={link: bad})


def test_forward_dynamics_derivatives_with_external_wrenches(case):
    """
    f_ext held constant in root axes: against central differences of forward_dynamics.

    And against the other route, -M^-1 of inverse_dynamics_derivatives with the same
    wrenches at v' = forward_dynamics(q, v, tau, f_ext); a batch row by row.
    """
    kind, model, pair = case
    q, v, tau, f_ext = _wrenched_state(model, kind, 12)
    da_dq, da_dv, Minv = model.forward_dynamics_derivatives(q, v, tau, f_ext=f_ext)
    E = np.eye(model.nv)
    close(da_dq, columns(model, lambda x: model.forward_dynamics(x, v, tau, f_ext), q),
          "dv'/dq with f_ext", 1e-5)
    close(da_dv, np.stack([(model.forward_dynamics(q, v + 1e-6 * E[k], tau, f_ext)
                            - model.forward_dynamics(q, v - 1e-6 * E[k], tau, f_ext)) / 2e-6
                           for k in range(model.nv)], axis=1), "dv'/dv with f_ext", 1e-5)
    close(Minv @ model.mass_matrix(q), E, 'M^-1 M', 1e-9)
    free = model.forward_dynamics_derivatives(q, v, tau)
    assert np.abs(da_dq - free[0]).max() > 1e-3, 'the wrenches change dv\'/dq'
    dq, dvv, M = model.inverse_dynamics_derivatives(
        q, v, model.forward_dynamics(q, v, tau, f_ext), f_ext=f_ext)
    close(da_dq, -np.linalg.solve(M, dq), "dv'/dq = -M^-1 dtau/dq (with f_ext)", 1e-9)
    close(da_dv, -np.linalg.solve(M, dvv), "dv'/dv = -M^-1 dtau/dv (with f_ext)", 1e-9)
    for a, b in zip(model.forward_dynamics_derivatives(q, v, tau, f_ext={}), free):
        close(a, b, 'no wrench', 1e-13)
    states = [random_state(model, 50 + k) for k in range(3)]
    Q, V = (np.stack(x) for x in list(zip(*states))[:2])
    T = np.repeat(tau[None], 3, axis=0)
    batch_ext = _two_wrenches(kind, rows=3)
    batch = model.forward_dynamics_derivatives(Q, V, T, f_ext=batch_ext)
    for k in range(3):
        row = {link: w if w.ndim == 1 else w[k] for link, w in batch_ext.items()}
        for got, want in zip(batch, model.forward_dynamics_derivatives(Q[k], V[k], T[k], row)):
            close(got[k], want, f'row {k} of a batch with f_ext', 1e-12)
    empty = model.forward_dynamics_derivatives(Q[:0], V[:0], T[:0], f_ext=_two_wrenches(kind, 0))
    assert [x.shape for x in empty] == [(0, model.nv, model.nv)] * 3
    bad = batch_ext[ONE_MODEL_CASES[kind][2][0]].copy()
    bad[2, 1] = np.inf
    with pytest.raises(ValueError, match=r"f_ext\['%s'\] is not finite at batch row\(s\) "
                                         r'\[2\]' % ONE_MODEL_CASES[kind][2][0]):
        model.forward_dynamics_derivatives(Q, V, T, f_ext={ONE_MODEL_CASES[kind][2][0]: bad})
    with pytest.raises(ModelError, match="unknown link 'no_such_link'"):
        model.forward_dynamics_derivatives(q, v, tau, f_ext={'no_such_link': np.ones(6)})


def test_linearize_with_external_wrenches_is_the_derivative_of_the_step(case):
    """f_ext in the dynamics of the step (not in u): against differences, batches per row."""
    kind, model, pair = case
    q, v, tau, f_ext = _wrenched_state(model, kind, 13)
    nb = model.nv - model.n
    dt = 0.01

    def step(q, v, u):
        a = model.forward_dynamics(q, v, np.concatenate([np.zeros(nb), u]), f_ext)
        return model.integrate(q, v + dt * a, dt), v + dt * a
    A, B = model.linearize(q, v, tau, dt, f_ext=f_ext)
    close(np.hstack([A, B]), model_helpers.step_differences(model, step, q, v, tau[nb:]),
          'discrete (A, B) with f_ext', 1e-6)
    assert np.abs(A - model.linearize(q, v, tau, dt)[0]).max() > 1e-5, 'f_ext changes A'
    Ac, Bc = model.linearize(q, v, tau, f_ext=f_ext)
    da_dq, da_dv, Minv = model.forward_dynamics_derivatives(q, v, tau, f_ext)
    assert np.array_equal(Ac[model.nv:], np.hstack([da_dq, da_dv]))
    assert np.array_equal(Bc[model.nv:], Minv[:, nb:])
    Q, V, T = (np.stack([x, x]) for x in (q, v, tau))
    A2, B2 = model.linearize(Q, V, T, dt, f_ext=_two_wrenches(kind, rows=2))
    row = {link: w if w.ndim == 1 else w[1] for link, w in _two_wrenches(kind, 2).items()}
    close(A2[1], model.linearize(q, v, tau, dt, f_ext=row)[0], 'batch row of A', 1e-12)


def test_a_singular_mass_matrix_is_named_by_forward_dynamics_derivatives():
    xml = '''<robot name="r"><link name="base"/>
      <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
        <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <link name="l1"/></robot>'''
    model = RobotModel.from_urdf_string(xml)      # logs that M is singular
    with pytest.raises(SingularMassMatrixError, match='j1'):
        model.forward_dynamics_derivatives(np.zeros(1), np.zeros(1), np.ones(1))


def test_linearize_is_the_derivative_of_the_discrete_map_and_its_limit(case):
    """(A, B) with dt against differences of semi-implicit Euler; without dt its limit."""
    kind, model, pair = case
    q, v, dv = random_state(model, 3)
    nb, nv, n = model.nv - model.n, model.nv, model.n
    tau = model.inverse_dynamics(q, v, dv)
    tau[:nb] = 0.0
    dt = 0.01

    def step(q, v, u):
        v_next = v + dt * model.forward_dynamics(q, v, np.concatenate([np.zeros(nb), u]))
        return model.integrate(q, v_next, dt), v_next
    A, B = model.linearize(q, v, tau, dt)
    assert A.shape == (2 * nv, 2 * nv) and B.shape == (2 * nv, n)
    close(np.hstack([A, B]), model_helpers.step_differences(model, step, q, v, tau[nb:]),
          'discrete (A, B)', 1e-6)
    Ac, Bc = model.linearize(q, v, tau)

    def rate(d):
        Ad, Bd = model.linearize(q, v, tau, d)
        return (Ad - np.eye(2 * nv)) / d, Bd / d
    (a1, b1), (a2, b2) = rate(1e-4), rate(5e-5)      # Richardson: error O(dt^2)
    close(Ac, 2 * a2 - a1, 'continuous A = lim (A_dt - I) / dt', 1e-7)
    close(Bc, 2 * b2 - b1, 'continuous B = lim B_dt / dt', 1e-7)
    with pytest.raises(ValueError, match='dt'):
        model.linearize(q, v, tau, 0.0)


def test_linearize_takes_batches_on_every_model(case):
    """(A, B) of N states: each row the single call's (continuous and discrete), N = 0 too."""
    kind, model, pair = case
    states = [random_state(model, 40 + k) for k in range(3)]
    Q, V, DV = (np.stack(x) for x in zip(*states))
    T = np.stack([model.inverse_dynamics(*s) for s in states])
    for dt in (None, 0.01):
        A, B = model.linearize(Q, V, T, dt)
        for k in range(3):
            a, b = model.linearize(Q[k], V[k], T[k], dt)
            close(A[k], a, f'{kind}: A row {k} (dt={dt})', 1e-12)
            close(B[k], b, f'{kind}: B row {k} (dt={dt})', 1e-12)
        A, B = model.linearize(Q[0], V, T, dt)          # one q for every row
        close(A[2], model.linearize(Q[0], V[2], T[2], dt)[0], f'{kind}: broadcast q', 1e-12)
        A, B = model.linearize(Q[:0], V[:0], T[:0], dt)
        assert A.shape == (0, 2 * model.nv, 2 * model.nv)
        assert B.shape == (0, 2 * model.nv, model.n)
    bad = V.copy()
    bad[1, 0] = np.nan
    with pytest.raises(ValueError, match=r'^(v|qd)\[1\] is not finite'):
        model.linearize(Q, bad, T)


@pytest.mark.parametrize('kind', ['floating quadruped', 'planar base'])
def test_the_compiled_base_blocks_of_linearize_are_the_readable_ones(kind):
    """ad_v, Ad(exp(-w)) and J_r(w) of the kernel against the NumPy reference, small to large."""
    model, _ = build_case(kind)
    nv, nb = model.nv, model.nv - model.n
    rng = np.random.default_rng(7)
    W = np.vstack([rng.uniform(-1, 1, (4, nv)) * scale
                   for scale in (0.0, 1e-8, 1e-3, 0.1, 1.0, 3.0)])
    Jq, Jw = model._base_integrate_jacobians(W)
    brackets = model._base_brackets(W)
    assert Jq.shape == Jw.shape == brackets.shape == (len(W), nb, nb)
    for k, w in enumerate(W):
        rq, rw = model._integrate_jacobians_readable(w)
        close(Jq[k], rq[:nb, :nb], f'{kind}: Jq row {k}', 1e-14)
        close(Jw[k], rw[:nb, :nb], f'{kind}: Jw row {k}', 1e-14)
        assert np.array_equal(rq[nb:], np.eye(nv)[nb:]), 'the joints: identity rows'
        close(brackets[k], model._tangent_bracket_readable(w)[:nb, :nb],
              f'{kind}: ad row {k}', 1e-15)
    one_q, one_w = model._base_integrate_jacobians(W[5])      # one state: no row axis
    assert np.array_equal(one_q, Jq[5]) and np.array_equal(one_w, Jw[5]), 'one w: the row'


def test_discrete_lqr_on_the_stacker_brings_a_perturbed_state_back():
    """LQR from linearize(..., dt) and solve_discrete_are, closed on the RK4 plant."""
    from scipy.linalg import solve_discrete_are
    from conftest import URDF_DIR
    model = RobotModel.from_urdf_file(URDF_DIR / 'stacker.urdf')
    q_star = np.array([2.0, -0.4, 0.3])
    tau_star = model.gravity_torque(q_star)
    dt = 0.01
    A, B = model.linearize(q_star, np.zeros(3), tau_star, dt)
    scale = model.effort_limits
    Q = np.diag(1.0 / np.array([0.01, 0.01, 0.01, 0.05, 0.05, 0.05]) ** 2)
    P = solve_discrete_are(A, B * scale, Q, np.eye(3))
    Bs = B * scale
    K = scale[:, None] * np.linalg.solve(np.eye(3) + Bs.T @ P @ Bs, Bs.T @ P @ A)
    assert np.abs(np.linalg.eigvals(A - B @ K)).max() < 1.0
    q, v = q_star + np.array([0.1, 0.05, -0.05]), np.zeros(3)
    start = np.abs(model.difference(q_star, q)).max()
    for _ in range(500):                            # 5 s, control held over each step
        x = np.concatenate([model.difference(q_star, q), v])
        q, v = model.simulate(q, v, tau_star - K @ x, dt / 10, steps=10)
    assert np.abs(model.difference(q_star, q)).max() < 1e-6 * start
    assert np.abs(v).max() < 1e-5
