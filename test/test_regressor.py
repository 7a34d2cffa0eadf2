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
The inertial parameters, the joint torque regressor and the base parameters (issue 22).

Independent references: Pinocchio's ``computeJointTorqueRegressor`` and
``Inertia.toDynamicParameters`` on real robots (a fixed arm, the Panda with its mimic hand
projected with B, solo12 on a free flyer, TIAGo on a planar base), bodies mapped by joint
name; our own inverse dynamics (Y p = tau on random trees with every kind of joint); the
readable regressor for the compiled one; and the rank of Pinocchio's stacked regressor for
the number of base parameters.
"""

import re

import numpy as np
import pytest

from kron_dynamics import ModelError, RobotModel
from kron_dynamics.algorithms.regressor import body_inertia, body_parameters, regressor
from kron_dynamics.identification import base_parameters
from kron_dynamics.testing.random_urdf import random_urdf
from pinocchio_oracle import build_case, ONE_MODEL_CASES, random_state, robots_dir

KINDS = list(ONE_MODEL_CASES)


def pinocchio_columns(model, pair):
    """Return, per Pinocchio body (joint 1, 2, ...), our body index (by joint name)."""
    fixed = getattr(model, 'fixed', model)
    ours = list(fixed._description.joint_names)
    offset = len(model.body_names) - len(ours)        # 1 with a moving base (its body 0)
    out = []
    for name in list(pair.pm.names)[1:]:
        out.append(0 if name == 'root_joint' else offset + ours.index(name))
    return out


def ours_in_pinocchio_order(Y, columns):
    """Return Y's column blocks of ten reordered as Pinocchio's bodies."""
    return np.concatenate([Y[..., 10 * b:10 * b + 10] for b in columns], axis=-1)


@pytest.mark.parametrize('kind', KINDS)
def test_parameters_and_regressor_are_pinocchios(kind):
    import pinocchio as pin
    model, pair = build_case(kind)
    columns = pinocchio_columns(model, pair)
    P = model.dynamic_parameters()
    assert P.shape == (len(model.body_names), 10)
    expected = np.array([pair.pm.inertias[k].toDynamicParameters()
                         for k in range(1, pair.pm.njoints)])
    np.testing.assert_allclose(P[columns], expected, rtol=1e-12, atol=1e-12)
    for seed in range(3):
        q, v, a = random_state(model, seed)
        Y = model.regressor(q, v, a)
        assert Y.shape == (model.nv, 10 * len(model.body_names))
        Yp = pin.computeJointTorqueRegressor(pair.pm, pair.pd, pair.q(q), pair.v(v),
                                             pair.v(a))
        scale = max(1.0, np.abs(Yp).max())
        np.testing.assert_allclose(ours_in_pinocchio_order(Y, columns), pair.P.T @ Yp,
                                   rtol=0, atol=1e-12 * scale)
        armature = np.concatenate([np.zeros(model.nv - model.n), model.armature])
        np.testing.assert_allclose(Y @ P.ravel() + armature * a,
                                   model.inverse_dynamics(q, v, a), rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize('seed', range(12))
def test_regressor_times_parameters_is_inverse_dynamics_on_random_trees(seed):
    """Prismatic, revolute, continuous, fixed and mimic joints, branches, tilted axes."""
    rng = np.random.default_rng(seed)
    model = RobotModel.from_urdf_string(random_urdf(
        rng, int(rng.integers(1, 9)), mimic_fraction=0.3 if seed % 3 == 0 else 0.0))
    q, v, a = rng.uniform(-1, 1, (3, model.n))
    P = model.dynamic_parameters()
    Y = model.regressor(q, v, a)
    np.testing.assert_allclose(Y @ P.ravel() + model.armature * a,
                               model.inverse_dynamics(q, v, a), rtol=1e-11, atol=1e-11)
    # another set of parameters: the model built from it has the torques Y gives
    P2 = P * rng.uniform(0.5, 1.5, P.shape)
    P2[:, 0] = np.abs(P2[:, 0]) + 0.1
    other = model.with_dynamic_parameters(P2)
    np.testing.assert_allclose(other.dynamic_parameters(), P2, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(other.inverse_dynamics(q, v, a),
                               Y @ P2.ravel() + model.armature * a, rtol=1e-10, atol=1e-10)
    assert other.joint_names == model.joint_names and other.link_names == model.link_names


@pytest.mark.parametrize('seed', range(6))
def test_the_compiled_regressor_is_the_readable_one(seed):
    rng = np.random.default_rng(seed)
    model = RobotModel.from_urdf_string(random_urdf(rng, int(rng.integers(1, 9))))
    q, v, a = rng.uniform(-1, 1, (3, model.n))
    internal = model._perm          # user order -> the tree's order
    qi, vi, ai = (np.empty(model.n) for _ in range(3))
    qi[internal], vi[internal], ai[internal] = q, v, a
    Y = regressor(model.tree, qi, vi, ai)
    np.testing.assert_allclose(model.regressor(q, v, a), Y[internal], rtol=1e-13,
                               atol=1e-13)


def test_body_parameters_round_trip():
    rng = np.random.default_rng(5)
    A = rng.normal(size=(3, 3))
    inertia = A @ A.T + np.eye(3)
    com = rng.normal(size=3)
    p = body_parameters(2.5, com, inertia)
    m, c, I_c = body_inertia(p)
    assert m == 2.5
    np.testing.assert_allclose(c, com, rtol=1e-14)
    np.testing.assert_allclose(I_c, inertia, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize('kind', KINDS)
def test_regressor_batches_and_empty_batches(kind):
    model, _ = build_case(kind)
    states = [random_state(model, seed) for seed in range(3)]
    Q, V, A = (np.stack(x) for x in zip(*states))
    Y = model.regressor(Q, V, A)
    for k in range(3):
        np.testing.assert_allclose(Y[k], model.regressor(*states[k]), rtol=1e-14, atol=1e-14)
    empty = model.regressor(np.empty((0, model.nq)), np.empty((0, model.nv)),
                            np.empty((0, model.nv)))
    assert empty.shape == (0, model.nv, 10 * len(model.body_names))


def test_bad_arguments_are_named():
    model = RobotModel.from_urdf_file(robots_dir() / ONE_MODEL_CASES['fixed arm'][0])
    with pytest.raises(ValueError, match='qd'):
        model.regressor(np.zeros(model.n), [np.nan] * model.n, np.zeros(model.n))
    P = model.dynamic_parameters()
    with pytest.raises(ModelError, match='6 x 10'):
        model.with_dynamic_parameters(P[:3])
    bad = P.copy()
    bad[2, 0] = -1.0
    with pytest.raises(ModelError, match=f"'{model.body_names[2]}'.*mass"):
        model.with_dynamic_parameters(bad)
    bad = P.copy()
    bad[1, 5] = np.inf
    with pytest.raises(ModelError, match=f"'{model.body_names[1]}'.*not finite"):
        model.with_dynamic_parameters(bad)


# ------------------------------------------------------------------ base parameters
def pinocchio_rank(model, pair, samples=40):
    """Return the rank of Pinocchio's stacked regressor (projected on our coordinates)."""
    import pinocchio as pin
    rows = []
    for seed in range(samples):
        q, v, a = random_state(model, 100 + seed)
        rows.append(pair.P.T @ pin.computeJointTorqueRegressor(
            pair.pm, pair.pd, pair.q(q), pair.v(v), pair.v(a)))
    return rank(np.vstack(rows))


def rank(W):
    """Return the numerical rank of W, columns scaled to unit norm (rounding columns out)."""
    norms = np.linalg.norm(W, axis=0)
    keep = norms > 1e-10 * norms.max()      # a column of rounding noise is a zero column
    s = np.linalg.svd(W[:, keep] / norms[keep], compute_uv=False)
    return int(np.sum(s > 1e-9 * s[0]))


@pytest.mark.parametrize('kind', ['fixed arm', 'mimic gripper'])
def test_base_parameters_count_is_the_rank_pinocchio_gives(kind):
    model, pair = build_case(kind)
    bp = base_parameters(model, rng=1)
    assert bp.count == pinocchio_rank(model, pair)
    assert bp.count == {'fixed arm': 36, 'mimic gripper': 48}[kind]


def test_base_parameters_of_the_panda_arm_with_its_fingers_locked():
    """
    The 7-DOF Panda arm (fingers locked into the hand): 43 base parameters.

    Pinocchio's reduced model (buildReducedModel) gives the same rank, with gravity. A
    column of rounding noise (panda_link2.mcz has no effect: 1e-15) must not count.
    """
    import pinocchio as pin
    path = robots_dir() / ONE_MODEL_CASES['mimic gripper'][0]
    panda = RobotModel.from_urdf_file(path)
    arm = panda.locked({j: 0.0 for j in panda.joint_names if 'finger' in j})
    assert arm.n == 7 and len(arm.body_names) == 7
    bp = base_parameters(arm, rng=2)
    full = pin.buildModelFromUrdf(str(path))
    reduced = pin.buildReducedModel(full, [full.getJointId(n) for n in full.names
                                           if 'finger' in n], pin.neutral(full))
    rows = []
    data = reduced.createData()
    rng = np.random.default_rng(0)
    for _ in range(40):
        rows.append(pin.computeJointTorqueRegressor(
            reduced, data, pin.randomConfiguration(reduced), rng.standard_normal(7),
            rng.standard_normal(7)).copy())
    assert bp.count == rank(np.vstack(rows)) == 43
    assert 'panda_link2.mcz' in bp.unidentifiable


@pytest.mark.parametrize('kind', ['fixed arm', 'mimic gripper'])
def test_base_parameters_give_the_same_torques_for_any_parameters(kind):
    model, _ = build_case(kind)
    bp = base_parameters(model, rng=3)
    rng = np.random.default_rng(4)
    n_std = 10 * len(model.body_names)
    assert len(bp.names) == n_std and bp.names[0] == f'{model.body_names[0]}.m'
    for seed in range(4):
        q, v, a = random_state(model, 200 + seed)
        Y = model.regressor(q, v, a)
        p = rng.normal(size=n_std)
        np.testing.assert_allclose(bp.base_regressor(Y) @ bp.to_base(p), Y @ p, rtol=1e-10,
                                   atol=1e-10 * np.abs(Y).max())
        # the standard vector of those base parameters gives the same torques
        np.testing.assert_allclose(Y @ bp.to_standard(bp.to_base(p)), Y @ p, rtol=1e-10,
                                   atol=1e-10 * np.abs(Y).max())
    table = bp.table().splitlines()
    assert sum(line.startswith('beta') for line in table) == bp.count
    assert set(bp.independent) | set(bp.dependent) == set(range(n_std))


def table_combination(bp):
    """Return (independent, K) as bp.table() writes them: one 'betaK = ...' line each."""
    index = {name: k for k, name in enumerate(bp.names)}
    lines = [line for line in bp.table().splitlines() if line.startswith('beta')]
    independent, K = [], np.zeros((len(lines), len(bp.names)))
    for k, line in enumerate(lines):
        assert re.fullmatch(r'beta\d+ = \S+(?: [+-] (?:[0-9.e+-]+ )?\S+)*', line), line
        head, first = re.match(r'(beta\d+) = (\S+)', line).groups()
        assert head == f'beta{k + 1}', line
        independent.append(index[first])
        for sign, value, name in re.findall(r' ([+-]) ([0-9.e+-]+ )?(\S+)', line):
            K[k, index[name]] = (-1.0 if sign == '-' else 1.0) * float(value or 1.0)
    return np.array(independent), K


@pytest.mark.parametrize('kind', ['fixed arm', 'mimic gripper'])
def test_the_base_parameter_table_says_what_each_base_parameter_is(kind):
    """
    The table read back (6 significant digits) gives to_base's values; in body order.

    Its last line names the parameters without effect: their regressor columns are zero;
    it lists no rounding noise (a coefficient below 1e-9), and a coefficient of 1 unwritten.
    """
    model, _ = build_case(kind)
    bp = base_parameters(model, rng=3)
    independent, K = table_combination(bp)
    assert independent.tolist() == bp.independent.tolist()
    assert np.all(np.diff(bp.independent) > 0) and np.all(np.diff(bp.dependent) > 0)
    p = np.random.default_rng(5).normal(size=len(bp.names))
    np.testing.assert_allclose(p[independent] + K @ p, bp.to_base(p), rtol=1e-5, atol=1e-5)
    written = np.abs(K[K != 0])
    assert written.min() > 1e-9 and np.any(written == 1.0)
    assert not re.search(r' [+-] 1 ', bp.table())
    last = bp.table().splitlines()[-1]
    unused = [bp.names.index(name) for name in bp.unidentifiable]
    assert last == f'no effect on the joint torques: {", ".join(bp.unidentifiable)}'
    assert unused and not np.any(K[:, unused]) and not set(unused) & set(independent)
    Y = np.stack([model.regressor(*random_state(model, seed)) for seed in range(5)])
    assert np.abs(Y[..., unused]).max() < 1e-12 * np.abs(Y).max()
    assert np.all(np.abs(Y[..., [k for k in range(len(bp.names)) if k not in unused]])
                  .max(axis=(0, 1)) > 1e-9 * np.abs(Y).max())


def test_base_and_standard_parameters_take_every_shape_and_name_a_wrong_one():
    """(nb, 10), flat, and batches of either; beta of another length is named."""
    model, _ = build_case('fixed arm')
    bp = base_parameters(model, rng=3)
    P = np.random.default_rng(6).normal(size=(4, len(model.body_names), 10))
    beta = bp.to_base(P)
    assert beta.shape == (4, bp.count)
    for k in range(4):      # a batch's products round apart from a row's: 1e-15
        np.testing.assert_allclose(bp.to_base(P[k]), beta[k], rtol=1e-15, atol=1e-15)
        np.testing.assert_array_equal(bp.to_base(P[k].ravel()), bp.to_base(P[k]))
    np.testing.assert_array_equal(bp.to_base(P.reshape(4, -1)), beta)
    assert bp.to_standard(beta).shape == (4, len(bp.names))
    np.testing.assert_allclose(bp.to_base(bp.to_standard(beta)), beta, rtol=1e-12)
    with pytest.raises(ValueError, match=rf'^beta must have {bp.count} entries, got shape '
                                         rf'\({bp.count + 1},\)$'):
        bp.to_standard(np.zeros(bp.count + 1))
    with pytest.raises(ValueError, match=rf'^standard parameters must be {len(bp.names)} '
                                         r'numbers \(10 per body\), got shape \(3, 10\)$'):
        bp.to_base(np.zeros((3, 10)))


@pytest.mark.parametrize('kind', ['fixed arm', 'mimic gripper'])
def test_an_armature_in_the_span_of_the_base_parameters_is_so_by_rank(kind):
    """A joint's rotor column added to the base regressor leaves its rank (SVD) unchanged."""
    model, _ = build_case(kind)
    bp = base_parameters(model, rng=3)
    states = [random_state(model, 300 + seed) for seed in range(40)]
    W = np.concatenate([bp.base_regressor(model.regressor(*s)) for s in states])
    W = W / np.linalg.norm(W, axis=0)
    for j in range(model.nv):
        column = np.concatenate([np.eye(model.nv)[:, j] * s[2][j] for s in states])
        rank = np.linalg.matrix_rank(np.column_stack([W, column / np.linalg.norm(column)]),
                                     tol=1e-7)
        assert bp.armature_in_span[j] == (rank == bp.count), (j, rank)
    # on both robots: the vertical first joint and the shoulder (as the ranks above say)
    assert bp.armature_in_span.tolist() == [True, True] + [False] * (model.nv - 2)


def test_base_parameters_refuse_a_moving_base():
    model, _ = build_case('floating quadruped')
    with pytest.raises(ModelError, match='floating base'):
        base_parameters(model)


@pytest.mark.parametrize('kind', KINDS)
def test_other_parameters_give_the_torques_the_regressor_says(kind):
    """with_dynamic_parameters on every kind of model, the base body included."""
    model, _ = build_case(kind)
    rng = np.random.default_rng(7)
    P = model.dynamic_parameters()
    P2 = P * rng.uniform(0.7, 1.3, P.shape)
    P2[:, 0] = np.abs(P2[:, 0]) + 0.05
    other = model.with_dynamic_parameters(P2)
    assert other.base == model.base and other.joint_names == model.joint_names
    np.testing.assert_allclose(other.dynamic_parameters(), P2, rtol=1e-12, atol=1e-12)
    q, v, a = random_state(model, 9)
    armature = np.concatenate([np.zeros(model.nv - model.n), model.armature])
    np.testing.assert_allclose(other.inverse_dynamics(q, v, a),
                               model.regressor(q, v, a) @ P2.ravel() + armature * a,
                               rtol=1e-10, atol=1e-10)
    assert other.total_mass == pytest.approx(P2[:, 0].sum() + (
        0.0 if model.base != 'fixed' else model._description.root_inertia[0]))
