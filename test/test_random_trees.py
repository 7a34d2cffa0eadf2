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
Random URDF trees: independent algorithms, finite differences, energy and consistency checks.

Trees mix revolute, continuous, prismatic and fixed joints, with branches, tilted axes, joint
origins with rpy, full inertia tensors with inertial rpy and massless links.
"""

import re

import numpy as np
import pytest

from kron_dynamics import RobotModel
from kron_dynamics.testing.random_urdf import random_urdf
from kron_dynamics.model.rotations import skew

SEEDS = range(12)
H = 1e-6


def make_model(seed, n=None, **kw):
    rng = np.random.default_rng(seed)
    n = n if n is not None else int(rng.integers(1, 8))
    xml = random_urdf(rng, n, n_fixed=int(rng.integers(0, 4)), **kw)
    return RobotModel.from_urdf_string(xml), rng, xml


def fd(f, q, k, h=H):
    e = np.zeros_like(q)
    e[k] = h
    return (f(q + e) - f(q - e)) / (2 * h)


def scale(A):
    return max(1.0, float(np.max(np.abs(A))))


@pytest.mark.parametrize('seed', SEEDS)
def test_mass_matrix_methods_agree_symmetric_psd(seed):
    model, rng, _ = make_model(seed)
    for _ in range(3):
        q = rng.uniform(-2, 2, model.n)
        Mj = model.mass_matrix(q, 'jacobian')
        Me = model.mass_matrix(q, 'explicit')
        Mc = model.mass_matrix(q, 'crba')
        np.testing.assert_allclose(Me, Mj, atol=1e-12 * scale(Mj))
        np.testing.assert_allclose(Mc, Mj, atol=1e-12 * scale(Mj))
        np.testing.assert_allclose(Mj, Mj.T, atol=1e-14 * scale(Mj))
        assert np.linalg.eigvalsh(Mj).min() > -1e-12 * scale(Mj)


@pytest.mark.parametrize('seed', SEEDS)
def test_coriolis_star_against_finite_differences_of_M(seed):
    model, rng, _ = make_model(seed)
    n = model.n
    q = rng.uniform(-2, 2, n)
    dM = np.stack([fd(model.mass_matrix, q, k) for k in range(n)], axis=2)  # [i, j, k]
    expected = (dM - 0.5 * dM.transpose(2, 1, 0)).reshape(n, n * n)
    Cs = model.coriolis_star(q)
    np.testing.assert_allclose(Cs, expected, atol=1e-7 * scale(expected))
    sym = model.christoffel(q).reshape(n, n, n)
    np.testing.assert_allclose(sym, sym.transpose(0, 2, 1), atol=1e-14 * scale(sym))


@pytest.mark.parametrize('seed', SEEDS)
def test_coriolis_vector_matrix_and_rnea_agree(seed):
    model, rng, _ = make_model(seed)
    n = model.n
    q, qd, qdd = rng.uniform(-2, 2, (3, n))
    cv = model.coriolis_vector(q, qd)
    s = scale(cv)
    np.testing.assert_allclose(model.coriolis_star(q) @ np.kron(qd, qd), cv, atol=1e-11 * s)
    np.testing.assert_allclose(model.coriolis_matrix(q, qd) @ qd, cv, atol=1e-11 * s)
    tau = model.inverse_dynamics(q, qd, qdd)
    for method in ('jacobian', 'explicit', 'crba'):
        rhs = model.mass_matrix(q, method) @ qdd + cv + model.gravity_torque(q)
        np.testing.assert_allclose(tau, rhs, atol=1e-11 * scale(tau))


@pytest.mark.parametrize('seed', SEEDS)
def test_Mdot_minus_2C_is_skew(seed):
    model, rng, _ = make_model(seed)
    q, qd = rng.uniform(-2, 2, (2, model.n))
    Mdot = (model.mass_matrix(q + H * qd) - model.mass_matrix(q - H * qd)) / (2 * H)
    N = Mdot - 2 * model.coriolis_matrix(q, qd)
    np.testing.assert_allclose(N, -N.T, atol=1e-7 * scale(Mdot))


@pytest.mark.parametrize('seed', SEEDS)
def test_jacobians_and_hessians_against_finite_differences(seed):
    model, rng, _ = make_model(seed)
    n = model.n
    q = rng.uniform(-2, 2, n)
    for link in model.link_names:
        point = rng.uniform(-0.5, 0.5, 3)
        JT, JR = model.jacobians(q, link, point)
        HT, HR = model.hessians(q, link, point)

        def position(x):
            T = model.link_pose(x, link)
            return T[:3, 3] + T[:3, :3] @ point

        R = model.link_pose(q, link)[:3, :3]
        for k in range(n):
            np.testing.assert_allclose(JT[:, k], fd(position, q, k), atol=1e-8)
            dR = fd(lambda x: model.link_pose(x, link)[:3, :3], q, k)
            np.testing.assert_allclose(skew(JR[:, k]), dR @ R.T, atol=1e-8)
            dJT = fd(lambda x: model.jacobians(x, link, point)[0], q, k)
            dJR = fd(lambda x: model.jacobians(x, link, point)[1], q, k)
            for s in range(n):
                np.testing.assert_allclose(HT[:, s * n + k], dJT[:, s], atol=1e-8)
                np.testing.assert_allclose(HR[:, s * n + k], dJR[:, s], atol=1e-8)
        # acceleration = J qdd + H (qd kron qd): compare with a second difference in time
        qd, qdd = rng.uniform(-1, 1, (2, n))
        h = 1e-4
        traj = [position(q + t * qd + 0.5 * t * t * qdd) for t in (-h, 0.0, h)]
        acc = (traj[0] - 2 * traj[1] + traj[2]) / h ** 2
        np.testing.assert_allclose(JT @ qdd + HT @ np.kron(qd, qd), acc, atol=1e-5)


@pytest.mark.parametrize('seed', SEEDS)
def test_gravity_is_gradient_of_potential(seed):
    model, rng, _ = make_model(seed)
    q = rng.uniform(-2, 2, model.n)
    G = model.gravity_torque(q)
    expected = [fd(model.potential_energy, q, k) for k in range(model.n)]
    np.testing.assert_allclose(G, expected, atol=1e-7 * scale(G))
    # -m g . c of the compiled centre of mass is the sum over the bodies (000's kinematics)
    V = model._potential_energy_readable(q)
    assert abs(model.potential_energy(q) - V) <= 1e-12 * max(1.0, abs(V))


@pytest.mark.parametrize('seed', SEEDS)
def test_the_compiled_centroidal_momentum_matrix_is_the_sum_over_the_bodies(seed):
    """A_G from the CRBA's composite inertias equals sum_b I_b J_b moved to the CoM."""
    model, rng, _ = make_model(seed)
    if model._moving_mass == 0.0:
        with pytest.raises(ValueError, match='no mass'):
            model.centroidal_momentum_matrix(np.zeros(model.n))
        return
    Q = rng.uniform(-2, 2, (3, model.n))
    A = model.centroidal_momentum_matrix(Q)
    for k in range(3):
        np.testing.assert_allclose(A[k], model._centroidal_momentum_matrix_readable(Q[k]),
                                   atol=1e-12 * max(1.0, np.abs(A[k]).max()))
    # A_G q' is the momentum: its linear part m c'
    qd = rng.uniform(-1, 1, model.n)
    np.testing.assert_allclose((A[0] @ qd)[:3], model._moving_mass * (
        model.center_of_mass_jacobian(Q[0]) @ qd), atol=1e-10 * max(1.0, np.abs(A[0]).max()))


@pytest.mark.parametrize('seed', SEEDS)
def test_forward_dynamics_inverts_inverse_dynamics(seed):
    model, rng, _ = make_model(seed)
    model = model.with_armature(np.full(model.n, 1e-2))   # massless leaves would be singular
    q, qd, qdd = rng.uniform(-2, 2, (3, model.n))
    tau = model.inverse_dynamics(q, qd, qdd)
    np.testing.assert_allclose(model.forward_dynamics(q, qd, tau), qdd, atol=1e-8)


def rk4(model, q, qd, tau_of_t, t0, dt):
    def f(t, x):
        return np.concatenate([x[model.n:], model.forward_dynamics(x[:model.n], x[model.n:],
                                                                   tau_of_t(t))])
    x = np.concatenate([q, qd])
    k1 = f(t0, x)
    k2 = f(t0 + dt / 2, x + dt / 2 * k1)
    k3 = f(t0 + dt / 2, x + dt / 2 * k2)
    k4 = f(t0 + dt, x + dt * k3)
    x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return x[:model.n], x[model.n:]


@pytest.mark.parametrize('seed', range(4))
def test_energy_balance_along_integrated_trajectory(seed):
    model, rng, _ = make_model(seed, n=4, massless_fraction=0.0)
    model = model.with_armature(np.full(model.n, 0.05))
    amp = rng.uniform(-1, 1, model.n)

    def tau(t):
        return amp * np.sin(3 * t)

    q, qd = rng.uniform(-1, 1, (2, model.n))
    dt, steps = 1e-3, 400
    E0 = model.kinetic_energy(q, qd) + model.potential_energy(q)
    work = 0.0
    for i in range(steps):
        t = i * dt
        p0 = qd @ tau(t)
        qm, qdm = rk4(model, q, qd, tau, t, dt / 2)
        pm = qdm @ tau(t + dt / 2)
        q, qd = rk4(model, q, qd, tau, t, dt)
        p1 = qd @ tau(t + dt)
        work += dt / 6 * (p0 + 4 * pm + p1)    # Simpson
    E1 = model.kinetic_energy(q, qd) + model.potential_energy(q)
    assert abs((E1 - E0) - work) < 1e-6 * max(1.0, abs(E0), abs(work))


@pytest.mark.parametrize('seed', range(3))
def test_compiled_rk4_agrees_with_scipy_solve_ivp(seed):
    """RobotModel.integrate against scipy's DOP853 (rtol 1e-13) on q'' = M^-1 (tau - b)."""
    from scipy.integrate import solve_ivp
    model, rng, _ = make_model(100 + seed, n=6, branching=0.6)
    model = model.with_armature(rng.uniform(0.05, 0.2, model.n))
    n = model.n
    q, qd, tau = rng.uniform(-1, 1, (3, n))
    damping = rng.uniform(0.0, 0.5, n)

    def f(t, x):
        # the readable M (000 eq. 95) and C* (000 eq. 101), not the compiled forward dynamics
        x, v = x[:n], x[n:]
        b = model.coriolis_star(x, method='hessian') @ np.kron(v, v) + model.gravity_torque(x)
        M = model.mass_matrix(x, method='jacobian')
        return np.concatenate([v, np.linalg.solve(M, tau - damping * v - b)])

    T = 0.24
    sol = solve_ivp(f, (0.0, T), np.concatenate([q, qd]), method='DOP853', rtol=1e-13,
                    atol=1e-13)
    assert sol.success, sol.message
    reference = sol.y[:, -1]
    errors = []
    for steps in (240, 120, 60):
        x, v = model.simulate(q, qd, tau, T / steps, steps, damping=damping)
        errors.append(np.abs(np.concatenate([x, v]) - reference).max())
    assert errors[0] < 1e-10 * scale(reference), errors     # dt = 1 ms
    # fourth order: halving dt divides the error by 2^4 = 16
    assert 12 < errors[1] / errors[0] < 20, errors
    assert 12 < errors[2] / errors[1] < 20, errors


@pytest.mark.parametrize('seed', range(6))
def test_external_wrenches_enter_as_jacobian_transpose(seed):
    model, rng, _ = make_model(seed)
    q, qd, qdd = rng.uniform(-2, 2, (3, model.n))
    links = rng.choice(model.link_names, size=min(3, len(model.link_names)), replace=False)
    f_ext = {str(link): rng.normal(size=6) for link in links}
    expected = model.inverse_dynamics(q, qd, qdd)
    for link, w in f_ext.items():
        JT, JR = model.jacobians(q, link)
        expected = expected - JT.T @ w[:3] - JR.T @ w[3:]     # 004 eq. (33)
    np.testing.assert_allclose(model.inverse_dynamics(q, qd, qdd, f_ext=f_ext), expected,
                               atol=1e-10 * scale(expected))


@pytest.mark.parametrize('seed', range(6))
def test_fixed_joints_merge_like_locked_revolute_joints(seed):
    """A fixed joint must behave as a revolute joint held at q = 0 (independent of the merge)."""
    model, rng, xml = make_model(seed, massless_fraction=0.0)
    unlocked = re.sub(r'<joint name="([^"]+)" type="fixed">',
                      r'<joint name="\1" type="continuous">', xml)
    big = RobotModel.from_urdf_string(unlocked)
    idx = [big.joint_names.index(j) for j in model.joint_names]
    q, qd, qdd = rng.uniform(-2, 2, (3, model.n))
    Q, Qd, Qdd = (np.zeros(big.n) for _ in range(3))
    Q[idx], Qd[idx], Qdd[idx] = q, qd, qdd
    np.testing.assert_allclose(model.mass_matrix(q), big.mass_matrix(Q)[np.ix_(idx, idx)],
                               atol=1e-12 * scale(model.mass_matrix(q)))
    np.testing.assert_allclose(model.inverse_dynamics(q, qd, qdd),
                               big.inverse_dynamics(Q, Qd, Qdd)[idx], atol=1e-10)
    n, N = model.n, big.n
    C = big.coriolis_star(Q).reshape(N, N, N)[np.ix_(idx, idx, idx)].reshape(n, n * n)
    np.testing.assert_allclose(model.coriolis_star(q), C, atol=1e-10)


@pytest.mark.parametrize('seed', range(4))
def test_joint_order_permutes_every_output(seed):
    model, rng, xml = make_model(seed, n=5)
    order = list(rng.permutation(model.joint_names))
    other = RobotModel.from_urdf_string(xml, joint_names=order)
    p = [model.joint_names.index(j) for j in order]
    q, qd, qdd = rng.uniform(-2, 2, (3, model.n))
    n = model.n
    np.testing.assert_allclose(other.mass_matrix(q[p]), model.mass_matrix(q)[np.ix_(p, p)],
                               atol=1e-12)
    C = model.coriolis_star(q).reshape(n, n, n)[np.ix_(p, p, p)].reshape(n, n * n)
    np.testing.assert_allclose(other.coriolis_star(q[p]), C, atol=1e-12)
    np.testing.assert_allclose(other.inverse_dynamics(q[p], qd[p], qdd[p]),
                               model.inverse_dynamics(q, qd, qdd)[p], atol=1e-10)
    link = model.link_names[-1]
    np.testing.assert_allclose(other.jacobians(q[p], link)[0], model.jacobians(q, link)[0][:, p],
                               atol=1e-12)
    HT = model.hessians(q, link)[0].reshape(3, n, n)[:, p][:, :, p].reshape(3, n * n)
    np.testing.assert_allclose(other.hessians(q[p], link)[0], HT, atol=1e-12)


def test_default_joint_order_is_depth_first():
    xml = '''<robot name="t"><link name="base"/>
      <joint name="a" type="continuous"><parent link="base"/><child link="A"/></joint>
      <link name="A"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1"
        iyz="0" izz="1"/></inertial></link>
      <joint name="a1" type="continuous"><parent link="A"/><child link="A1"/></joint>
      <link name="A1"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1"
        iyz="0" izz="1"/></inertial></link>
      <joint name="a2" type="continuous"><parent link="A"/><child link="A2"/></joint>
      <link name="A2"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1"
        iyz="0" izz="1"/></inertial></link>
      <joint name="b" type="continuous"><parent link="A1"/><child link="B"/></joint>
      <link name="B"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1"
        iyz="0" izz="1"/></inertial></link>
    </robot>'''
    assert RobotModel.from_urdf_string(xml).joint_names == ('a', 'a1', 'b', 'a2')


def test_friction_torque_from_urdf_dynamics():
    model, rng, xml = make_model(3)
    qd = rng.uniform(-1, 1, model.n)
    damping = np.array([model.joints[j].damping for j in model.joint_names])
    friction = np.array([model.joints[j].friction for j in model.joint_names])
    np.testing.assert_allclose(model.friction_torque(qd), damping * qd + friction * np.sign(qd))
    assert np.any(model.friction_torque(qd))
    # friction is separate: inverse dynamics at rest position with velocity has none of it
    z = np.zeros(model.n)
    np.testing.assert_allclose(model.inverse_dynamics(z, qd, z),
                               model.coriolis_vector(z, qd) + model.gravity_torque(z), atol=1e-12)
