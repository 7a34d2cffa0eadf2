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
The compiled kernels against the readable reference algorithms, batches and the fast path.

The facade's default methods run the kernels; the readable implementations in
``kron_dynamics.algorithms`` (papers' notation) are the reference: same results to round-off
on random trees with shuffled joint orders, external wrenches, prismatic joints, branches.
"""

from pathlib import Path
import sys

import numpy as np
import pytest

from kron_dynamics import ModelError, RobotModel, SingularMassMatrixError
from kron_dynamics.algorithms.coriolis_star import christoffel, coriolis_matrix, coriolis_star
from kron_dynamics.algorithms.crba import crba
from kron_dynamics.algorithms.forward_dynamics import solve_mass_matrix
from kron_dynamics.algorithms.rnea import rnea

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / 'bench'))
from lib.compiled_jsim import entry_points as jsim_kernels  # noqa: E402  (bench/, not a package)
import model_helpers  # noqa: E402
from model_helpers import close, to_internal  # noqa: E402


def random_model(seed, shuffle=True, armature=True, n=None, branching=0.5):
    """Return (model, rng) for a random tree, joints in a shuffled order, with armature."""
    return model_helpers.random_model(seed, n, max_joints=10,
                                      fixed=lambda n: 2 if n < 10 else n // 5,
                                      shuffle=shuffle, armature=armature, branching=branching)


# (seed, movable joints, branching): small trees of every kind, and larger ones up to n = 40
# (long chains, bushy trees with many branches)
TREES = ([(seed, None, 0.5) for seed in range(12)]
         + [(100, 12, 0.5), (101, 25, 0.3), (102, 25, 0.9)]
         + [pytest.param(seed, 40, b, marks=pytest.mark.slow)
            for seed, b in ((103, 0.5), (104, 0.9))])


@pytest.mark.parametrize('seed, n, branching', TREES)
def test_kernels_match_reference(seed, n, branching):
    model, rng = random_model(seed, n=n, branching=branching)
    tree, n, p = model.tree, model.n, model._perm
    ix = np.ix_(p, p)
    links = model.link_names
    for _ in range(3):
        q, qd, qdd = rng.uniform(-2, 2, (3, n))
        qi, qdi, qddi = (to_internal(model, x) for x in (q, qd, qdd))
        arm = model.armature
        close(model.inverse_dynamics(q, qd, qdd), rnea(tree, qi, qdi, qddi)[p] + arm * qdd)
        close(model.bias_torque(q, qd), rnea(tree, qi, qdi, 0 * qi)[p])
        close(model.gravity_torque(q), rnea(tree, qi, 0 * qi, 0 * qi)[p])
        close(model.coriolis_vector(q, qd),
              rnea(tree.with_gravity(np.zeros(3)), qi, qdi, 0 * qi)[p])
        M = crba(tree, qi)[ix] + np.diag(arm)
        close(model.mass_matrix(q), M)
        for kernel in jsim_kernels().values():   # compiled 000 eq. 95 and 003 (bench/)
            out = np.empty((n, n))
            assert kernel(model._ints, model._reals, q, out)
            close(out, M)
        close(model.coriolis_star(q), model.coriolis_star(q, method='hessian'), 1e-10)
        Cs = model._cube(coriolis_star(tree, qi))
        close(model.coriolis_star(q), Cs, 1e-10)
        close(model.christoffel(q), model._cube(christoffel(tree, qi)), 1e-10)
        close(model.coriolis_matrix(q, qd), coriolis_matrix(tree, qi, qdi)[ix], 1e-10)
        # external wrenches (kernel with W) against the readable Newton-Euler with f_ext
        link = links[int(rng.integers(len(links)))]
        wrench = rng.normal(size=6)
        W = model._external_wrenches(q, {link: wrench})
        close(model.inverse_dynamics(q, qd, qdd, f_ext={link: wrench}),
              rnea(tree, qi, qdi, qddi, f_ext=W)[p] + arm * qdd)
        tau = rng.uniform(-5, 5, n)
        try:
            ref = solve_mass_matrix(M, tau - model.bias_torque(q, qd), model.joint_names)
        except SingularMassMatrixError:
            with pytest.raises(SingularMassMatrixError):
                model.forward_dynamics(q, qd, tau)
            continue
        close(model.forward_dynamics(q, qd, tau), ref, 1e-8)


def rk4_reference(model, q, qd, tau, dt, damping):
    """One RK4 step with the facade's forward dynamics (same scheme as the compiled one)."""
    def f(x, v):
        return model.forward_dynamics(x, v, tau - damping * v)
    a1 = f(q, qd)
    v2 = qd + dt / 2 * a1
    a2 = f(q + dt / 2 * qd, v2)
    v3 = qd + dt / 2 * a2
    a3 = f(q + dt / 2 * v2, v3)
    v4 = qd + dt * a3
    a4 = f(q + dt * v3, v4)
    return (q + dt / 6 * (qd + 2 * v2 + 2 * v3 + v4),
            qd + dt / 6 * (a1 + 2 * a2 + 2 * a3 + a4))


@pytest.mark.parametrize('seed, n, branching', TREES[:4] + TREES[-3:])
def test_compiled_rk4_matches_python_rk4(seed, n, branching):
    model, rng = random_model(seed, armature=False, n=n, branching=branching)
    model = model.with_armature(np.full(model.n, 0.1))   # never singular
    q, qd, tau = rng.uniform(-1, 1, (3, model.n))
    damping = rng.uniform(0, 1, model.n)
    x, v = model.simulate(q, qd, tau, 1e-3, 1, damping=damping)
    xr, vr = rk4_reference(model, q, qd, tau, 1e-3, damping)
    close(x, xr, 1e-12)
    close(v, vr, 1e-10)


@pytest.mark.parametrize('seed, n, branching', TREES)
def test_forward_dynamics_m_is_the_crbas_bit_for_bit(seed, n, branching):
    """Forward dynamics builds M from Newton-Euler's joint frames: the CRBA's frames and M."""
    from kron_dynamics.kernels.crba import assemble_mass_matrix, CQ, crba_pass, NC
    from kron_dynamics.kernels.forward_dynamics import _fd_internal, fd_work
    model, rng = random_model(seed, n=n, branching=branching)
    ints, reals, n = model._ints, model._reals, model.n
    q, qd, tau = rng.uniform(-3, 3, (3, n))              # internal order
    work = fd_work(n)
    assert _fd_internal(ints, reals, q, qd, tau, np.zeros(n), work, np.empty(n))
    wk = np.zeros((n, NC))
    wk[:, CQ] = q
    crba_pass(ints, reals, wk)
    M = np.empty((n, n))
    assemble_mass_matrix(ints, reals, wk, M, False)
    np.testing.assert_array_equal(work[1][:, :CQ], wk[:, :CQ])   # frames, S, Ic, F
    np.testing.assert_array_equal(work[2], M)


BATCH_METHODS = [
    ('inverse_dynamics', 3), ('bias_torque', 2), ('gravity_torque', 1),
    ('coriolis_vector', 2), ('mass_matrix', 1), ('coriolis_star', 1), ('christoffel', 1),
    ('coriolis_matrix', 2), ('kinetic_energy', 2), ('potential_energy', 1),
]


@pytest.mark.parametrize('seed', range(4))
def test_batch_equals_stacked_single_calls(seed):
    model, rng = random_model(seed)
    n, N = model.n, 6
    X = rng.uniform(-2, 2, (3, N, n))
    for name, nargs in BATCH_METHODS:
        method = getattr(model, name)
        batch = method(*X[:nargs])
        single = np.stack([np.asarray(method(*(x[k] for x in X[:nargs]))) for k in range(N)])
        assert batch.shape == single.shape, name
        close(batch, single, 1e-13)
    # 1-D arguments broadcast against a batch
    close(model.inverse_dynamics(X[0], X[1][0], X[2][0]),
          np.stack([model.inverse_dynamics(x, X[1][0], X[2][0]) for x in X[0]]), 1e-13)
    close(model.mass_matrix(X[0], method='jacobian'),
          np.stack([model.mass_matrix(x, method='jacobian') for x in X[0]]), 1e-13)
    link = model.link_names[-1]
    JT, JR = model.jacobians(X[0], link)
    assert JT.shape == JR.shape == (N, 3, n)
    close(JT[2], model.jacobians(X[0][2], link)[0], 1e-14)
    T = model.link_pose(X[0], link)
    assert T.shape == (N, 4, 4)
    HT, HR = model.hessians(X[0], link)
    assert HT.shape == (N, 3, n * n)
    assert model.friction_torque(X[1]).shape == (N, n)
    safe = model.with_armature(np.full(n, 0.2))
    close(safe.forward_dynamics(*X), np.stack([safe.forward_dynamics(*x) for x in zip(*X)]),
          1e-12)
    Q, V = safe.simulate(X[0], X[1], X[2], 1e-3, 2)
    q1, v1 = safe.simulate(X[0][3], X[1][3], X[2][3], 1e-3, 2)
    close(Q[3], q1, 1e-14)
    close(V[3], v1, 1e-14)


def test_batch_errors_name_the_row_and_joint():
    model, rng = random_model(1, shuffle=False)
    n = model.n
    Q = rng.uniform(-1, 1, (5, n))
    Q[3, 1] = np.nan
    with pytest.raises(ValueError, match=rf"q\[3\] is not finite at "
                                         rf"\['{model.joint_names[1]}'\]"):
        model.inverse_dynamics(Q, Q, Q)
    with pytest.raises(ValueError, match=r'qd has 4 rows, the other inputs 5'):
        model.bias_torque(np.zeros((5, n)), np.zeros((4, n)))
    with pytest.raises(ValueError, match=rf'must have shape \({n},\) or \(N, {n}\)'):
        model.mass_matrix(np.zeros((5, n + 1)))
    with pytest.raises(ValueError, match=rf"f_ext\['{model.link_names[-1]}'\] is not finite at "
                                         r'batch row\(s\) \[1\]'):
        model.inverse_dynamics(np.zeros((2, n)), np.zeros(n), np.zeros(n),
                               f_ext={model.link_names[-1]: [np.ones(6), np.full(6, np.nan)]})
    singular = RobotModel.from_urdf_file(model_path('rover_arm.urdf'))
    Q = np.zeros((3, singular.n))
    with pytest.raises(SingularMassMatrixError, match=r'^row 0: mass matrix is singular'):
        singular.forward_dynamics(Q, Q, Q)


def model_path(name):
    from pathlib import Path
    return Path(__file__).resolve().parent.parent / 'urdf' / name


def test_fast_path_takes_any_array_like_and_never_misreads_it():
    """Ints, float32, lists, strided views, byte-swapped or read-only arrays: same answer."""
    model, rng = random_model(2)
    n = model.n
    q, qd, qdd = rng.integers(-2, 3, (3, n))
    ref = model.inverse_dynamics(q.astype(float), qd.astype(float), qdd.astype(float))
    wide = np.zeros((3, 2 * n))
    wide[:, ::2] = q, qd, qdd
    ro = q.astype(float)
    ro.flags.writeable = False
    variants = [
        (q, qd, qdd),                                          # int64: must not be reinterpreted
        (q.astype(np.float32), qd.astype(np.float32), qdd.astype(np.float32)),
        (list(q), tuple(qd), list(qdd)),
        (wide[0, ::2], wide[1, ::2], wide[2, ::2]),            # non-contiguous views
        (q.astype('>f8'), qd.astype('>f8'), qdd.astype('>f8')),  # byte-swapped
        (ro, qd.astype(float), qdd.astype(float)),
    ]
    for args in variants:
        close(model.inverse_dynamics(*args), ref, 1e-15)
    M = model.mass_matrix(q.astype(float))
    close(model.mass_matrix(q), M, 1e-15)
    close(model.mass_matrix(list(q)), M, 1e-15)
    # an n x n float array is a batch of n configurations, not a misread vector
    square = np.tile(q.astype(float), (n, 1))
    assert model.gravity_torque(square).shape == (n, n)
    with pytest.raises(ValueError, match='must have shape'):
        model.gravity_torque(np.float64(1.0))
    with pytest.raises(ValueError, match='must be an array of'):
        model.gravity_torque('abc')
    with pytest.raises(ValueError, match='not finite'):
        model.gravity_torque(np.full(n, np.inf))


def test_the_input_check_finds_every_non_finite_entry():
    """kernels.algebra.all_finite (the checker's fast path) against np.isfinite, entry by entry."""
    from kron_dynamics.kernels import native
    model, rng = random_model(4)
    for size in (0, 1, 7, 40):
        x = rng.normal(size=size)
        assert native.all_finite(x) and native.all_finite(x[::2])
        for i in range(size):
            for bad in (np.nan, np.inf, -np.inf):
                y = x.copy()
                y[i] = bad
                assert not native.all_finite(y)
                assert native.all_finite(y[::2]) == bool(np.isfinite(y[::2]).all())
    # through the facade: the entry at fault is named, wherever it is; a good array is taken
    # as given (no copy)
    n = model.n
    q = rng.uniform(-1, 1, n)
    checked, N = model._inputs(q=q)
    assert checked[0] is q and N is None
    for i in range(n):
        bad = q.copy()
        bad[i] = np.nan
        with pytest.raises(ValueError, match=rf"q is not finite at \['{model.joint_names[i]}'\]"):
            model.gravity_torque(bad)


def test_outputs_are_fresh_arrays():
    model, rng = random_model(3)
    q = rng.uniform(-1, 1, model.n)
    a = model.gravity_torque(q)
    b = model.gravity_torque(q)
    assert a is not b
    a[:] = 1e9
    close(b, model.gravity_torque(q), 0)


def test_no_movable_joint():
    xml = ('<robot name="r"><link name="a"><inertial><mass value="1"/><inertia ixx="1" '
           'iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link><link name="b"/>'
           '<joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint></robot>')
    model = RobotModel.from_urdf_string(xml)
    z = np.zeros(0)
    assert model.inverse_dynamics(z, z, z).shape == (0,)
    assert model.mass_matrix(z).shape == (0, 0)
    assert model.coriolis_star(z).shape == (0, 0)
    assert model.inverse_dynamics(np.zeros((3, 0)), z, z).shape == (3, 0)
    with pytest.raises(ValueError):
        model.gravity_torque(np.zeros(1))


def test_unknown_method_names():
    model, _ = random_model(0)
    with pytest.raises(ValueError, match="unknown C\\* method 'fast'"):
        model.coriolis_star(np.zeros(model.n), method='fast')
    with pytest.raises(ValueError, match="unknown mass-matrix method"):
        model.mass_matrix(np.zeros(model.n), method='fast')
    assert issubclass(SingularMassMatrixError, ModelError)
