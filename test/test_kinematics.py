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
The kinematics API: compiled kernels against the readable section-3 forms and finite differences.

Random trees (revolute, continuous, prismatic, fixed joints, branches, tilted axes) with
shuffled joint orders; every link of each tree, at its origin and at a point on it, in the
three frames. The readable forms are those of :mod:`kron_dynamics.algorithms.jacobians`
(root frame, body frame, starred Hessian, eq. 8); the relative-motion recursions are checked
in test_relative_motion.py, Pinocchio in test_kinematics_pinocchio.py.
"""

import numpy as np
import pytest

from kron_dynamics import ModelError, RobotModel, SingularJacobianError
from kron_dynamics.algorithms import jacobians as ref
from kron_dynamics.algorithms.center_of_mass import center_of_mass, center_of_mass_jacobian
from kron_dynamics.algorithms.kinematics import forward_kinematics, world_axes
from kron_dynamics.model.rotations import skew
from model_helpers import close, random_model, to_internal as internal

FRAMES = ('world', 'local', 'local_world_aligned')
H = 1e-6


def user_cols(model, A):
    """Columns of A (internal order, ... x n) in user order."""
    return A[..., model._perm]


def user_hessian(model, H):
    """Return a 3 or 6 x n^2 Hessian in internal order in user order."""
    n, p = model.n, model._perm
    return H.reshape(-1, n, n)[:, p][:, :, p].reshape(-1, n * n)


def reference(model, q, link, point):
    """Readable J_T, J_R, H_T, H_R (root frame, user order), R and x of a point on a link."""
    tree = model.tree
    qi = internal(model, q)
    R, p = forward_kinematics(tree, qi)
    axes = world_axes(tree, R)
    body, Rb, pb = model.description.frames[link]
    local = pb + Rb @ point
    if body < 0:
        RL, x = Rb, local
    else:
        RL, x = R[body] @ Rb, p[body] + R[body] @ local
    JT = ref.jacobian_t(tree, body, x, axes, p)
    JR = ref.jacobian_r(tree, body, axes)
    HT = ref.hessian_t(tree, body, JT, axes)
    HR = ref.hessian_r(tree, body, axes)
    return (user_cols(model, JT), user_cols(model, JR), user_hessian(model, HT),
            user_hessian(model, HR), RL, x)


def reference_6(model, q, link, point, frame):
    """Readable 6 x n Jacobian and its Khang derivative in a frame (000 eqs. 31, 42, 53, 61)."""
    JT, JR, HT, HR, R, x = reference(model, q, link, point)
    J, Hs = np.vstack([JT, JR]), np.vstack([HT, HR])
    if frame == 'local_world_aligned':
        return J, Hs
    if frame == 'local':      # eq. (57) solved for the body-frame Hessian, both halves
        return (np.vstack([ref.jacobian_local(JT, R), ref.jacobian_local(JR, R)]),
                np.vstack([ref.hessian_local(HT, JT, JR, R), ref.hessian_local(HR, JR, JR, R)]))
    # world: J_T + x~ J_R; its derivative by the product rule (x moves with J_T)
    n = model.n
    Hw = HT + skew(x) @ HR + np.cross(JT.T[None, :, :], JR.T[:, None, :]).transpose(
        2, 0, 1).reshape(3, n * n)
    return ref.jacobian_world(JT, JR, x), np.vstack([Hw, HR])


@pytest.mark.parametrize('seed', range(10))
def test_kernels_match_the_readable_section_3_forms(seed):
    model, rng = random_model(seed)
    n = model.n
    for _ in range(2):
        q, qd, qdd = rng.uniform(-2, 2, (3, n))
        for link in model.link_names:
            point = rng.uniform(-0.5, 0.5, 3)
            JT, JR, HT, HR, R, x = reference(model, q, link, point)
            T = model.link_pose(q, link)
            close(T[:3, :3], R)
            close(T[:3, 3], reference(model, q, link, np.zeros(3))[5])
            np.testing.assert_array_equal(T[3], [0, 0, 0, 1])
            got_JT, got_JR = model.jacobians(q, link, point)
            close(got_JT, JT)
            close(got_JR, JR)
            got_HT, got_HR = model.hessians(q, link, point)
            close(got_HT, HT)
            close(got_HR, HR)
            for frame in FRAMES:
                J, Hs = reference_6(model, q, link, point, frame)
                close(model.jacobian(q, link, point, frame), J)
                close(model.hessian(q, link, point, frame), Hs, 1e-10)
                # 000 eq. (8): J' = H (E_n kron q')
                close(model.jacobian_derivative(q, qd, link, point, frame),
                      ref.jacobian_derivative(Hs, qd), 1e-10)
            J, Hs = np.vstack([JT, JR]), np.vstack([HT, HR])
            acc = ref.acceleration(J, Hs, qd, qdd)          # 000 eqs. (52), (62), (66)
            close(model.acceleration(q, qd, qdd, link, point), acc, 1e-10)
            # in the link's axes: the starred Hessian (000 eqs. 58, 59)
            acc_local = np.concatenate([ref.jacobian_local(JT, R) @ qdd
                                        + ref.hessian_star(HT, R) @ np.kron(qd, qd),
                                        ref.jacobian_local(JR, R) @ qdd
                                        + ref.hessian_star(HR, R) @ np.kron(qd, qd)])
            close(model.acceleration(q, qd, qdd, link, point, 'local'), acc_local, 1e-10)
        poses = model.link_poses(q)
        assert poses.shape == (len(model.link_names), 4, 4)
        for k, link in enumerate(model.link_names):
            close(poses[k], model.link_pose(q, link), 1e-14)


def pose_of(model, q, link, point):
    T = model.link_pose(q, link)
    return T[:3, :3], T[:3, 3] + T[:3, :3] @ point


@pytest.mark.parametrize('mimic_fraction', [0.0, 0.4], ids=['independent', 'mimic'])
@pytest.mark.parametrize('seed', range(8))
def test_jacobians_hessians_and_derivatives_against_finite_differences(seed, mimic_fraction):
    """Every derivative by central differences in the model's coordinates (u with mimics)."""
    model, rng = random_model(seed, mimic_fraction=mimic_fraction)
    n = model.n
    q, qd, qdd = rng.uniform(-2, 2, (3, n))
    for link in model.link_names:
        point = rng.uniform(-0.5, 0.5, 3)
        R, x = pose_of(model, q, link, point)
        Jl = model.jacobian(q, link, point)
        for k in range(n):
            e = np.zeros(n)
            e[k] = H
            (Rp, xp), (Rm, xm) = pose_of(model, q + e, link, point), pose_of(model, q - e,
                                                                             link, point)
            v, W = (xp - xm) / (2 * H), (Rp - Rm) / (2 * H) @ R.T
            w = np.array([W[2, 1], W[0, 2], W[1, 0]])
            close(Jl[:, k], np.concatenate([v, w]), 1e-8)
            close(model.jacobian(q, link, point, 'local')[:, k],
                  np.concatenate([R.T @ v, R.T @ w]), 1e-8)
            close(model.jacobian(q, link, point, 'world')[:, k],
                  np.concatenate([v + np.cross(x, w), w]), 1e-8)   # v_O = v_x - w x x
            for frame in FRAMES:
                dJ = (model.jacobian(q + e, link, point, frame)
                      - model.jacobian(q - e, link, point, frame)) / (2 * H)
                close(model.hessian(q, link, point, frame).reshape(6, n, n)[:, :, k], dJ, 1e-8)
        for frame in FRAMES:
            dJ = (model.jacobian(q + H * qd, link, point, frame)
                  - model.jacobian(q - H * qd, link, point, frame)) / (2 * H)
            close(model.jacobian_derivative(q, qd, link, point, frame), dJ, 1e-8)
        # classical acceleration: second difference of the point and of the velocity
        h = 1e-4
        traj = [pose_of(model, q + t * qd + 0.5 * t * t * qdd, link, point)[1]
                for t in (-h, 0.0, h)]
        acc = model.acceleration(q, qd, qdd, link, point)
        close(acc[:3], (traj[0] - 2 * traj[1] + traj[2]) / h ** 2, 1e-5)
        omega = [model.jacobian(q + t * qd + 0.5 * t * t * qdd, link, point)[3:]
                 @ (qd + t * qdd) for t in (-h, h)]
        close(acc[3:], (omega[1] - omega[0]) / (2 * h), 1e-6)
        close(model.acceleration(q, qd, qdd, link, point, 'local'),
              np.concatenate([R.T @ acc[:3], R.T @ acc[3:]]), 1e-12)


@pytest.mark.parametrize('seed', range(8))
def test_center_of_mass_and_its_jacobian(seed):
    model, rng = random_model(seed, massless_fraction=0.3)
    n = model.n
    q = rng.uniform(-2, 2, n)
    qi = internal(model, q)
    m0, c0, _ = model.description.root_inertia
    close(model.center_of_mass(q), center_of_mass(model.tree, qi))
    close(model.center_of_mass(q, include_root=True), center_of_mass(model.tree, qi, m0, c0))
    Jc = model.center_of_mass_jacobian(q)
    close(Jc, user_cols(model, center_of_mass_jacobian(model.tree, qi)))
    close(model.center_of_mass_jacobian(q, include_root=True),
          user_cols(model, center_of_mass_jacobian(model.tree, qi, m0)))
    # the definition: mass-weighted link CoMs, all at once through link_poses
    for k in range(n):
        e = np.zeros(n)
        e[k] = H
        close(Jc[:, k], (model.center_of_mass(q + e) - model.center_of_mass(q - e)) / (2 * H),
              1e-8)
    total = model.tree.mass.sum()
    assert np.isclose(model.total_mass, total + m0)
    c_all = (total * model.center_of_mass(q) + m0 * c0) / (total + m0)
    close(model.center_of_mass(q, include_root=True), c_all)
    # with mimic joints, in u: the centre of mass at q = B u + d, its Jacobian J_c B
    coupled, _ = random_model(seed, massless_fraction=0.3, mimic_fraction=0.4)
    free = coupled.unconstrained
    assert free.joint_names == coupled.full_joint_names
    u = rng.uniform(-2, 2, coupled.n)
    B, _ = coupled.coupling()
    for root in (False, True):
        close(coupled.center_of_mass(u, include_root=root),
              free.center_of_mass(coupled.full_configuration(u), include_root=root))
        close(coupled.center_of_mass_jacobian(u, include_root=root),
              free.center_of_mass_jacobian(coupled.full_configuration(u),
                                           include_root=root) @ B)


def test_center_of_mass_of_a_massless_robot_is_refused():
    xml = '''<robot name="ghost"><link name="base"><inertial><mass value="2"/>
      <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
      <joint name="j" type="continuous"><parent link="base"/><child link="tip"/></joint>
      <link name="tip"/></robot>'''
    model = RobotModel.from_urdf_string(xml)
    with pytest.raises(ValueError, match='no mass.*include_root=True'):
        model.center_of_mass([0.3])
    with pytest.raises(ValueError, match='no mass'):
        model.center_of_mass_jacobian(np.zeros((2, 1)))
    np.testing.assert_allclose(model.center_of_mass([0.3], include_root=True), 0.0)


BATCH = [
    ('link_pose', lambda m, link, Q, V, A: m.link_pose(Q, link)),
    ('link_poses', lambda m, link, Q, V, A: m.link_poses(Q)),
    ('jacobian', lambda m, link, Q, V, A: m.jacobian(Q, link, (0.1, 0.2, 0.3), 'local')),
    ('jacobians', lambda m, link, Q, V, A: m.jacobians(Q, link)[0]),
    ('hessian', lambda m, link, Q, V, A: m.hessian(Q, link, None, 'world')),
    ('hessians', lambda m, link, Q, V, A: m.hessians(Q, link)[1]),
    ('jacobian_derivative', lambda m, link, Q, V, A: m.jacobian_derivative(Q, V, link)),
    ('acceleration', lambda m, link, Q, V, A: m.acceleration(Q, V, A, link, [0, 0, 1.0])),
    ('center_of_mass', lambda m, link, Q, V, A: m.center_of_mass(Q)),
    ('center_of_mass_jacobian', lambda m, link, Q, V, A: m.center_of_mass_jacobian(Q, True)),
    ('operational_space_inertia', lambda m, link, Q, V, A: m.operational_space_inertia(
        Q, link, part='linear', damping=0.1)),
]


@pytest.mark.parametrize('name, call', BATCH, ids=[b[0] for b in BATCH])
def test_batches_equal_stacked_single_calls(name, call):
    model, rng = random_model(4, n=6, massless_fraction=0.0)
    model = model.with_armature(np.full(model.n, 0.1))
    link = model.link_names[-1]
    N = 5
    Q, V, A = rng.uniform(-2, 2, (3, N, model.n))
    batch = call(model, link, Q, V, A)
    single = np.stack([call(model, link, Q[k], V[k], A[k]) for k in range(N)])
    assert batch.shape == single.shape
    close(batch, single, 1e-13)
    empty = call(model, link, Q[:0], V[:0], A[:0])
    assert empty.shape == (0, *single.shape[1:])
    # lists and strided views take the general path with the same answer
    wide = np.zeros((2, 2 * model.n))
    wide[:, ::2] = V[0], A[0]
    close(call(model, link, Q[0].tolist(), wide[0, ::2], wide[1, ::2]), single[0], 1e-13)
    # a 1-D q broadcasts against 2-D velocities
    if name in ('jacobian_derivative', 'acceleration'):
        close(call(model, link, Q[0], V, A), np.stack([call(model, link, Q[0], V[k], A[k])
                                                       for k in range(N)]), 1e-13)


def test_inputs_are_checked_first_with_clear_errors():
    model, rng = random_model(2, n=4, shuffle=False)
    n = model.n
    q = np.zeros(n)
    link = model.link_names[-1]
    with pytest.raises(ModelError, match=r"unknown link 'nope'; links are \['base_link'"):
        model.jacobian(q, 'nope')
    for method in (model.link_pose, model.hessian, model.jacobian):
        with pytest.raises(ModelError, match='unknown link'):
            method(q, ['not', 'a', 'name'])
    with pytest.raises(ValueError, match=r"frame must be one of \['world', 'local', "
                                         r"'local_world_aligned'\] \(or Pinocchio's 'WORLD', "
                                         r"'LOCAL', 'LOCAL_WORLD_ALIGNED'\), got 'base'"):
        model.jacobian(q, link, frame='base')
    with pytest.raises(ValueError, match='point must be 3 numbers'):
        model.jacobian(q, link, point=[1.0, 2.0])
    with pytest.raises(ValueError, match='point must be finite'):
        model.hessian(q, link, point=[1.0, np.nan, 0.0])
    bad = q.copy()
    bad[1] = np.inf
    with pytest.raises(ValueError, match=rf"q is not finite at "
                                         rf"\['{model.joint_names[1]}'\]"):
        model.jacobian(bad, link)
    with pytest.raises(ValueError, match=rf'q must have shape \({n},\) or \(N, {n}\)'):
        model.link_pose(np.zeros(n + 1), link)
    with pytest.raises(ValueError, match=r'qd\[2\] is not finite'):
        Qd = np.zeros((3, n))
        Qd[2, 0] = np.nan
        model.jacobian_derivative(np.zeros((3, n)), Qd, link)
    with pytest.raises(ValueError, match="frame 'world' has no classical acceleration"):
        model.acceleration(q, q, q, link, frame='world')
    with pytest.raises(ValueError, match='part must be one of'):
        model.operational_space_inertia(q, link, part='position')
    with pytest.raises(ValueError, match='damping must be a finite number >= 0'):
        model.operational_space_inertia(q, link, damping=-1.0)


def test_links_on_the_root_have_constant_pose_and_zero_jacobians():
    model, rng = random_model(5, n=3, shuffle=False)
    q, qd = rng.uniform(-1, 1, (2, model.n))
    root = model.root_link
    np.testing.assert_array_equal(model.link_pose(q, root), np.eye(4))
    for frame in FRAMES:
        assert not model.jacobian(q, root, (1.0, 2.0, 3.0), frame).any()
        assert not model.hessian(q, root, None, frame).any()
        assert not model.jacobian_derivative(q, qd, root, None, frame).any()
    assert not model.acceleration(q, qd, qd, root).any()


def test_operational_space_inertia():
    """Lambda = (J M^-1 J^T)^-1 by its definition, its singularities and damping."""
    model, rng = random_model(3, n=8, massless_fraction=0.0, prismatic_fraction=0.2,
                              branching=0.0)
    model = model.with_armature(np.full(model.n, 0.05))
    q = rng.uniform(-2, 2, model.n)
    deep = max(model.link_names, key=lambda link: model.jacobian(q, link).any(axis=0).sum())
    J = model.jacobian(q, deep, frame='local')
    assert np.linalg.matrix_rank(J) == 6, 'test needs a link with a full-rank Jacobian'
    M = model.mass_matrix(q)
    L = model.operational_space_inertia(q, deep, frame='local')
    close(L, np.linalg.inv(J @ np.linalg.solve(M, J.T)), 1e-9)
    close(L, L.T, 1e-12)
    assert np.linalg.eigvalsh(L).min() > 0
    Lin = model.operational_space_inertia(q, deep, part='linear')
    Jl = model.jacobian(q, deep)[:3]
    close(Lin, np.linalg.inv(Jl @ np.linalg.solve(M, Jl.T)), 1e-9)
    # a force Lambda a produces the task acceleration a (from rest, no gravity, no bias)
    a = rng.normal(size=3)
    tau = Jl.T @ Lin @ a
    qdd = np.linalg.solve(M, tau)
    close(Jl @ qdd, a, 1e-9)


ARM_3R = '''<robot name="arm3r"><link name="base"/>
  <joint name="yaw" type="continuous"><parent link="base"/><child link="l1"/>
    <axis xyz="0 0 1"/></joint>
  <link name="l1"><inertial><mass value="2"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1"
    iyz="0" izz="0.1"/></inertial></link>
  <joint name="shoulder" type="continuous"><parent link="l1"/><child link="l2"/>
    <origin xyz="0 0 0.3"/><axis xyz="0 1 0"/></joint>
  <link name="l2"><inertial><origin xyz="0.5 0 0"/><mass value="2"/><inertia ixx="0.01"
    ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.2"/></inertial></link>
  <joint name="elbow" type="continuous"><parent link="l2"/><child link="l3"/>
    <origin xyz="1 0 0"/><axis xyz="0 1 0"/></joint>
  <link name="l3"><inertial><origin xyz="0.5 0 0"/><mass value="1"/><inertia ixx="0.01"
    ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
</robot>'''


def test_operational_space_inertia_refuses_singular_task_matrices(stacker):
    q = np.array([1.0, 0.3, 0.2])
    with pytest.raises(SingularJacobianError,
                       match=r"J M\^-1 J\^T of link 'link3' \(full rows.*is singular.*"
                             r"condition number .* > 1e\+08.*damping") as err:
        stacker.operational_space_inertia(q, 'link3')       # 3 joints, 6 task rows
    assert err.value.condition > 1e8
    assert stacker.operational_space_inertia(q, 'link3', part='linear').shape == (3, 3)
    damped = stacker.operational_space_inertia(q, 'link3', damping=1e-2)
    assert damped.shape == (6, 6) and np.all(np.isfinite(damped))
    # a kinematic singularity: the arm stretched out (elbow at 0) cannot move its tip along
    # the arm; the condition number grows like 1/elbow^2 on the way there
    arm = RobotModel.from_urdf_string(ARM_3R)
    tip = [1.0, 0.0, 0.0]
    conds = []
    for elbow in (0.5, 1e-2, 1e-3):
        L = arm.operational_space_inertia([0.2, 0.3, elbow], 'l3', tip, part='linear')
        conds.append(np.linalg.cond(L))
    assert conds[0] < conds[1] < conds[2] < 1e8
    for elbow in (1e-5, 0.0):
        with pytest.raises(SingularJacobianError, match="link 'l3' \\(linear rows"):
            arm.operational_space_inertia([0.2, 0.3, elbow], 'l3', tip, part='linear')
    L = arm.operational_space_inertia([0.2, 0.3, 0.0], 'l3', tip, part='linear', damping=0.05)
    assert np.all(np.isfinite(L))


def test_the_compiled_operational_space_inertia_is_the_readable_one(monkeypatch):
    """kernels.forward_dynamics.task_inertia equals algorithms.operational_space, refusals too."""
    from kron_dynamics import robot_model
    from kron_dynamics.algorithms.operational_space import operational_space_inertia as readable
    model, rng = random_model(5, n=7, massless_fraction=0.0, branching=0.0)
    model = model.with_armature(np.full(model.n, 0.05))
    arm = RobotModel.from_urdf_string(ARM_3R)
    cases = [(model, rng.uniform(-2, 2, model.n), link, None, part, damping)
             for link in model.link_names[-3:] for part in ('full', 'linear', 'angular')
             for damping in (0.0, 0.1)]
    cases += [(arm, np.array([0.2, 0.3, elbow]), 'l3', [1.0, 0.0, 0.0], 'linear', 0.0)
              for elbow in (0.5, 1e-2, 1e-3, 1e-5, 0.0)]
    rows = {'full': slice(0, 6), 'linear': slice(0, 3), 'angular': slice(3, 6)}
    expected = []
    for m, q, link, point, part, damping in cases:
        try:
            expected.append(readable(m.jacobian(q, link, point)[rows[part]], m.mass_matrix(q),
                                     list(m.joint_names), damping))
        except SingularJacobianError:
            expected.append(None)
    assert sum(e is None for e in expected) == 2        # the stretched arm, twice
    with monkeypatch.context() as patch:        # a state the kernel serves never gets here
        patch.setattr(robot_model, 'operational_space_inertia', lambda *a, **k: None)
        for (m, q, link, point, part, damping), want in zip(cases, expected):
            got = m.operational_space_inertia(q, link, point, part=part, damping=damping)
            if want is None:
                assert got is None, 'the kernel served a task matrix the readable refuses'
            else:
                close(got, want, 1e-9 * max(1.0, np.abs(want).max()))
