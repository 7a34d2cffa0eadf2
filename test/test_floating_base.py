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
Floating and planar bases (issue 14) against Pinocchio's JointModelFreeFlyer / Planar.

Random trees (prismatic, continuous, fixed joints, tilted axes, full inertias) and real
robots of example-robot-data (a1, solo12, TALOS with its gripper mimics, TIAGo on a planar
base): M, G, RNEA, the Coriolis vector, forward dynamics, energies, the centre of mass and
its Jacobian, A_G, link poses, Jacobians in three frames, classical accelerations,
integrate and difference. Independent checks: C*(v kron v) against RNEA, momentum and
energy conserved along a free-floating trajectory, finite differences through integrate,
contact dynamics against Pinocchio's constraintDynamics and its own balance equations.
"""

import numpy as np
import pinocchio as pin     # a declared test dependency (requirements.txt): no skip
import pytest

from conftest import URDF_DIR
from kron_dynamics import (Contact, ModelError, RobotModel, SingularJacobianError,
                           SingularMassMatrixError)
from kron_dynamics.robot_model import FloatingBaseModel
from kron_dynamics.testing.random_urdf import random_urdf
import model_helpers
from pinocchio_oracle import close, hand_coupling, PinPair, PROXIMAL, robots_dir

RTOL = 1e-9
PIN_FRAMES = {'world': pin.WORLD, 'local': pin.LOCAL,
              'local_world_aligned': pin.LOCAL_WORLD_ALIGNED}


# ------------------------------------------------------------------ Pinocchio side
def random_moving_model(rng, high, base, mimic):
    """
    Return a random tree (2 to high - 1 movable joints) on a base, half its joints mimics.

    With armature: M regular (random trees have massless leaves), and armature is tested too.
    """
    n = int(rng.integers(2, high))
    xml = random_urdf(rng, n, n_fixed=2, mimic_fraction=0.5 if mimic else 0.0)
    joints = RobotModel.from_urdf_string(xml).joint_names
    return RobotModel.from_urdf_string(xml, armature=rng.uniform(0.05, 0.2, len(joints)),
                                       root_joint=base)


def random_state(model, rng):
    """Return (q, v, dv): a random base pose and unit quaternion, joints within limits."""
    lower = np.array([model.fixed.joints[j].lower for j in model.joint_names])
    upper = np.array([model.fixed.joints[j].upper for j in model.joint_names])
    lower = np.where(np.isfinite(lower), lower, -np.pi)
    upper = np.where(np.isfinite(upper), upper, np.pi)
    joints = rng.uniform(lower, upper)
    if model.base == 'floating':
        quat = rng.normal(size=4)
        base = np.concatenate([rng.normal(size=3), quat / np.linalg.norm(quat)])
    else:
        t = rng.uniform(-np.pi, np.pi)
        base = np.array([*rng.normal(size=2), np.cos(t), np.sin(t)])
    return (np.concatenate([base, joints]), rng.uniform(-1, 1, model.nv),
            rng.uniform(-1, 1, model.nv))


def compare_dynamics(pair: PinPair, q, v, dv):
    """M, G, tau, Coriolis vector, forward dynamics, energies, CoM, A_G against Pinocchio."""
    m, pm, pd, P = pair.m, pair.pm, pair.pd, pair.P
    pq, pv, pa = pair.q(q), pair.v(v), pair.v(dv)
    M = pin.crba(pm, pd, pq)
    M = np.triu(M) + np.triu(M, 1).T
    close(m.mass_matrix(q), P.T @ M @ P, 'M')
    close(m.inverse_dynamics(q, v, dv), P.T @ pin.rnea(pm, pd, pq, pv, pa), 'RNEA')
    G = pin.computeGeneralizedGravity(pm, pd, pq)
    close(m.gravity_torque(q), P.T @ G, 'G')
    close(m.coriolis_vector(q, v), P.T @ (pin.nonLinearEffects(pm, pd, pq, pv) - G),
          'Coriolis vector')
    close(m.kinetic_energy(q, v), pin.computeKineticEnergy(pm, pd, pq, pv), 'kinetic energy')
    close(m.potential_energy(q), pin.computePotentialEnergy(pm, pd, pq), 'potential energy')
    close(m.center_of_mass(q), pin.centerOfMass(pm, pd, pq), 'centre of mass')
    close(m.center_of_mass_jacobian(q), pin.jacobianCenterOfMass(pm, pd, pq) @ P,
          'CoM Jacobian')
    close(m.centroidal_momentum_matrix(q), pin.ccrba(pm, pd, pq, pv) @ P, 'A_G')
    if np.allclose(P.T @ P, np.eye(m.nv)):     # no mimic: Pinocchio's ABA is the same system
        tau = m.inverse_dynamics(q, v, dv)
        close(m.forward_dynamics(q, v, tau), dv, 'forward dynamics')
        close(P.T @ pin.aba(pm, pd, pq, pv, P @ tau), dv, 'ABA')


def compare_kinematics(pair: PinPair, q, v, dv, links):
    """Link poses, Jacobians (three frames), classical accelerations, integrate, difference."""
    m, pm, pd, P = pair.m, pair.pm, pair.pd, pair.P
    pq, pv, pa = pair.q(q), pair.v(v), pair.v(dv)
    pin.forwardKinematics(pm, pd, pq, pv, pa)
    pin.updateFramePlacements(pm, pd)
    pin.computeJointJacobians(pm, pd, pq)
    for link in links:
        fid = pm.getFrameId(link)
        close(m.link_pose(q, link), pd.oMf[fid].homogeneous, f'pose of {link}')
        for name, frame in PIN_FRAMES.items():
            close(m.jacobian(q, link, frame=name), pin.getFrameJacobian(pm, pd, fid, frame) @ P,
                  f'{name} Jacobian of {link}')
        close(m.acceleration(q, v, dv, link),
              pin.getFrameClassicalAcceleration(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED).vector,
              f'classical acceleration of {link}')
    q1 = m.integrate(q, v, 0.3)
    close(pair.q(q1)[:pair.nbq], pin.integrate(pm, pq, 0.3 * pv)[:pair.nbq], 'integrate')
    close(m.difference(q, q1), 0.3 * v, 'difference')


# ------------------------------------------------------------------ random trees
@pytest.mark.parametrize('base', ['floating', 'planar'])
@pytest.mark.parametrize('seed', range(6))
def test_random_trees_agree_with_pinocchio(base, seed):
    rng = np.random.default_rng(100 + seed)
    xml = random_urdf(rng, int(rng.integers(1, 8)), n_fixed=2)
    model = RobotModel.from_urdf_string(xml, root_joint=base)
    assert isinstance(model, RobotModel) and model.base == base
    base_q, base_v = (7, 6) if base == 'floating' else (4, 3)
    assert (model.nq, model.nv) == (base_q + model.n, base_v + model.n)
    root = pin.JointModelFreeFlyer() if base == 'floating' else pin.JointModelPlanar()
    pair = PinPair(model, pin.buildModelFromXML(xml, root))
    for _ in range(2):
        q, v, dv = random_state(model, rng)
        compare_dynamics(pair, q, v, dv)
        compare_kinematics(pair, q, v, dv, model.fixed.link_names)


def test_a_world_link_with_a_floating_joint_gives_a_floating_base_by_default():
    xml = random_urdf(np.random.default_rng(14), 3, n_fixed=1)
    root = RobotModel.from_urdf_string(xml).root_link
    world = model_helpers.with_world_joint(xml, 'floating', '0.1 0.2 0.3', '0.1 0.2 0.3')
    model = RobotModel.from_urdf_string(world)
    assert isinstance(model, RobotModel) and model.base == 'floating'
    assert model.configuration_names[:7] == ('base_x', 'base_y', 'base_z', 'base_qx',
                                             'base_qy', 'base_qz', 'base_qw')
    # the base moves relative to the joint's origin, as Pinocchio reads the document
    pmodel = pin.buildModelFromXML(world)
    assert pmodel.nv == model.nv
    rng = np.random.default_rng(3)
    q, v, dv = random_state(model, rng)
    origin = np.eye(4)
    origin[:3, :3] = pin.rpy.rpyToMatrix(0.1, 0.2, 0.3)
    origin[:3, 3] = [0.1, 0.2, 0.3]
    plain = RobotModel.from_urdf_string(xml, root_joint='floating')
    close(model.base_pose(q), origin @ plain.base_pose(q), 'base pose after the origin')
    pair = PinPair(model, pmodel)
    compare_dynamics(pair, q, v, dv)
    compare_kinematics(pair, q, v, dv, model.fixed.link_names)
    fixed = RobotModel.from_urdf_string(world, root_joint='fixed')
    assert fixed.base == 'fixed' and fixed.root_link == root


@pytest.mark.parametrize('origin', [False, True], ids=['at the world origin', 'offset'])
@pytest.mark.parametrize('base', ['floating', 'planar'])
def test_base_state_is_the_configuration_of_the_given_pose(base, origin):
    """base_pose(base_state(pose)) is the pose (odometry: the base in the world)."""
    from scipy.spatial.transform import Rotation
    xml = random_urdf(np.random.default_rng(20), 3, n_fixed=1)
    if origin:
        xml = model_helpers.with_world_joint(xml, base, '0.1 -0.2 0.3', '0 0 0.7')
    model = RobotModel.from_urdf_string(xml, root_joint=base)
    assert model._at_origin != origin
    rng = np.random.default_rng(21)
    for _ in range(5):
        if base == 'floating':
            R = Rotation.random(random_state=rng.integers(1 << 30))
            p = rng.normal(size=3)
        else:      # a pose the planar base can have: the origin's plane, turned about its z
            R = Rotation.from_euler('z', 0.7 + rng.uniform(-3, 3))
            p = np.array([0.1, -0.2, 0.3]) * origin + np.append(rng.normal(size=2), 0.0)
        pose = np.eye(4)
        pose[:3, :3], pose[:3, 3] = R.as_matrix(), p
        twist = rng.normal(size=6)
        qb, vb = model.base_state(p, R.as_quat(), twist[:3], twist[3:])
        q = np.concatenate([qb, np.zeros(model.n)])
        np.testing.assert_allclose(model.base_pose(q), pose, atol=1e-14)
        np.testing.assert_allclose(vb, twist if base == 'floating' else twist[[0, 1, 5]])


def test_planar_joint_of_a_document_and_its_refusals():
    xml = (URDF_DIR / 'rp_arm.urdf').read_text()
    root = RobotModel.from_urdf_string(xml).root_link

    def with_root(joint):
        return xml.replace('<robot name="rp_arm">',
                           f'<robot name="rp_arm"><link name="world"/>{joint}')
    planar = with_root(f'<joint name="p" type="planar"><parent link="world"/>'
                       f'<child link="{root}"/><axis xyz="0 0 1"/></joint>')
    assert RobotModel.from_urdf_string(planar).base == 'planar'
    tilted = planar.replace('<axis xyz="0 0 1"/>', '<axis xyz="1 0 0"/>')
    with pytest.raises(ModelError, match=r"joint 'p': a planar root joint moves in the x-y"):
        RobotModel.from_urdf_string(tilted)
    heavy = planar.replace('<link name="world"/>', '<link name="world"><inertial><mass '
                           'value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" '
                           'iyz="0"/></inertial></link>')
    with pytest.raises(ModelError, match=r"link 'world' .* has an <inertial>: the world has "
                                         r'no mass'):
        RobotModel.from_urdf_string(heavy)
    with pytest.raises(ModelError, match=r"root_joint must be one of \['fixed', 'floating', "
                                         r"'planar'\] or None"):
        RobotModel.from_urdf_string(xml, root_joint='free')


def test_inputs_are_checked_and_named():
    model = RobotModel.from_urdf_file(URDF_DIR / 'rp_arm.urdf', root_joint='floating')
    q = model.neutral()
    with pytest.raises(ValueError, match=r'q must have shape \(9,\) or \(N, 9\), got \(8,\) '
                                         r'\(entries: base_x, base_y, base_z, base_qx'):
        model.mass_matrix(q[:-1])
    bad = q.copy()
    bad[6] = 2.0
    with pytest.raises(ValueError, match=r'quaternion \(qx, qy, qz, qw\) has norm 2; it must '
                                         r'be a unit vector'):
        model.mass_matrix(bad)
    near = q.copy()
    near[6] = 1.0005          # within the tolerance: normalised
    np.testing.assert_allclose(model.mass_matrix(near), model.mass_matrix(q), rtol=1e-15)
    nan = q.copy()
    nan[7] = np.nan
    with pytest.raises(ValueError, match=r"q is not finite at \['theta1'\]"):
        model.gravity_torque(nan)
    with pytest.raises(ValueError, match=r'v must have shape \(8,\) or \(N, 8\), got \(3,\)'):
        model.inverse_dynamics(q, np.zeros(3), np.zeros(8))
    with pytest.raises(ModelError, match=r"unknown link 'nope'"):
        model.acceleration(q, np.zeros(8), np.zeros(8), 'nope')
    with pytest.raises(ValueError, match=r"frame must be one of"):
        model.jacobian(q, model.base_link, frame='body')
    for method in ('jacobian', 'explicit', 'crba'):    # the fixed base's readable forms
        with pytest.raises(ValueError, match=rf"^mass_matrix: method '{method}' is for a fixed "
                                             'base; a moving base has the compiled default'):
            model.mass_matrix(q, method=method)
    with pytest.raises(ValueError, match=r"^coriolis_star: method 'hessian' is for a fixed "
                                         r'base; a moving base has the default only'):
        model.coriolis_star(q, method='hessian')
    assert model.mass_matrix(q, method=None).shape == (8, 8)


def test_batches_stack_rows():
    model = RobotModel.from_urdf_file(URDF_DIR / 'rp_arm.urdf', root_joint='floating')
    rng = np.random.default_rng(4)
    states = [random_state(model, rng) for _ in range(3)]
    Q = np.array([s[0] for s in states])
    V = np.array([s[1] for s in states])
    tau = model.inverse_dynamics(Q, V, np.zeros(model.nv))
    for k in range(3):
        np.testing.assert_allclose(tau[k], model.bias_torque(Q[k], V[k]), rtol=1e-14)
    assert model.mass_matrix(Q).shape == (3, model.nv, model.nv)


@pytest.mark.parametrize('mimic', [False, True], ids=['independent', 'mimic'])
@pytest.mark.parametrize('base', ['floating', 'planar'])
@pytest.mark.parametrize('seed', range(4))
def test_compiled_dynamics_are_the_readable_recursion(base, seed, mimic):
    """
    The kernels behind the base chain equal 004 app. B's recursion, mimics included.

    Every base runs kernels.floating_base whole (one compiled call per method): a floating
    base without mimic joints the floating_* entry points, a planar base or mimic joints the
    moving_* ones (coordinates lifted and results projected inside the kernel).
    """
    from kron_dynamics.algorithms.floating_base import mass_matrix_floating, rnea_floating
    rng = np.random.default_rng(300 + seed)
    model = random_moving_model(rng, 8, base, mimic)
    assert model._same == (base == 'floating' and not model.mimic_joints)
    tree, root = model.fixed.description.tree, model.fixed.description.root_inertia
    P = model._base_map.P
    for _ in range(3):
        q, v, dv = random_state(model, rng)
        T = model.base_pose(q)
        u = q[model.nq - model.n:]
        internal = model.fixed.description.joint_names
        full = dict(zip(model.fixed.full_joint_names, model.fixed.full_configuration(u)))
        qt = np.array([full[j] for j in internal])
        g = T[:3, :3].T @ model.gravity
        close(model.inverse_dynamics(q, v, dv),
              P.T @ rnea_floating(tree, root, qt, P @ v, P @ dv, g)
              + model._armature * dv, 'RNEA')
        close(model.mass_matrix(q), P.T @ mass_matrix_floating(tree, root, qt) @ P
              + np.diag(model._armature), 'M')
        zero = np.zeros(len(P))
        close(model.gravity_torque(q), P.T @ rnea_floating(tree, root, qt, zero, zero, g), 'G')
        close(model.coriolis_vector(q, v),
              P.T @ rnea_floating(tree, root, qt, P @ v, zero, np.zeros(3)), 'Coriolis')
        close(model.bias_torque(q, v), P.T @ rnea_floating(tree, root, qt, P @ v, zero, g),
              'bias')
        tau = model.inverse_dynamics(q, v, dv)
        close(model.forward_dynamics(q, v, tau), dv, 'forward dynamics')


MOVING_CASES = {     # a planar base or mimic joints: kernels.floating_base's moving_* path
    'random planar': ('random', 'planar', False),
    'random planar mimic': ('random', 'planar', True),
    'random floating mimic': ('random', 'floating', True),
    'tiago planar': ('tiago_description/robots/tiago.urdf', 'planar', False),
    'panda with hand, floating': ('panda_description/urdf/panda.urdf', 'floating', True),
    'panda with hand, planar': ('panda_description/urdf/panda.urdf', 'planar', True),
    # the root joint's origin offset and tilted: the plane of a planar base is not level
    'random planar mimic, tilted root': ('tilted', 'planar', True),
    'random floating mimic, tilted root': ('tilted', 'floating', True),
}


def moving_case_model(source, base, mimic, rng):
    """Return the model of a MOVING_CASES entry (random trees drawn from rng)."""
    if source in ('random', 'tilted'):
        xml = random_urdf(rng, int(rng.integers(3, 8)), n_fixed=2,
                          mimic_fraction=0.5 if mimic else 0.0)
        joints = RobotModel.from_urdf_string(xml).joint_names
        armature = rng.uniform(0.05, 0.2, len(joints))
        if source == 'tilted':
            return RobotModel.from_urdf_string(model_helpers.with_world_joint(
                xml, base, '0.1 -0.2 0.3', '0.3 -0.2 0.7'), armature=armature)
        return RobotModel.from_urdf_string(xml, armature=armature, root_joint=base)
    return RobotModel.from_urdf_file(erd_robots() / source, root_joint=base)


@pytest.mark.parametrize('case', sorted(MOVING_CASES))
def test_a_moving_base_without_mimics_solves_with_the_tree_factorisation(case):
    """
    model_tree orders a planar base's coordinates as a tree, parents first; mimics: dense.

    Where it does, M is zero off that tree's pattern (so M = L^T L keeps it), and forward
    dynamics (which then takes the tree's factorisation) solves M v' = tau - h to round-off.
    """
    from kron_dynamics.kernels.floating_base import model_tree
    source, base, mimic = MOVING_CASES[case]
    rng = np.random.default_rng(17)
    model = moving_case_model(source, base, mimic, rng)
    ok, parent, order = model_tree(model._ints, model._pk, model.nv)
    assert ok == (not model.mimic_joints), case
    q, v, dv = random_state(model, rng)
    M = model.mass_matrix(q)
    tau = model.inverse_dynamics(q, v, dv)
    close(model.forward_dynamics(q, v, tau), np.linalg.solve(M, tau - model.bias_torque(q, v)),
          'forward dynamics')
    if not ok:
        return
    assert sorted(order) == list(range(model.nv))
    assert all(parent[k] < k for k in range(model.nv))
    related = np.eye(model.nv, dtype=bool)
    for k in range(model.nv):
        j = parent[k]
        while j >= 0:
            related[k, j] = related[j, k] = True
            j = parent[j]
    assert not np.any(M[np.ix_(order, order)][~related]), 'M has entries off the tree pattern'


@pytest.mark.parametrize('case', sorted(MOVING_CASES))
def test_the_moving_kernels_equal_the_general_path_and_serve_every_call(case, monkeypatch):
    """
    A planar base or mimic joints: one compiled call (moving_*) equals MovingBase's NumPy path.

    Single states, batches and the Jacobian in three frames; a single state never reaches
    the general path (it raises here while the compiled calls run), a bad one does and is
    named by it.
    """
    source, base, mimic = MOVING_CASES[case]
    rng = np.random.default_rng(sorted(MOVING_CASES).index(case))
    model = moving_case_model(source, base, mimic, rng)
    assert not model._same and model._pk is not None
    assert model.base == base and (bool(model.mimic_joints) == mimic or source != 'random')
    link = model.link_names[-1]
    states = [random_state(model, rng) for _ in range(3)]
    general = {
        'inverse_dynamics': lambda q, v, dv: model._general_inverse_dynamics(q, v, dv),
        'mass_matrix': lambda q, v, dv: model._general_mass_matrix(q),
        'gravity_torque': lambda q, v, dv: model._general_gravity_torque(q),
        'coriolis_vector': lambda q, v, dv: model._general_coriolis_vector(q, v),
        'bias_torque': lambda q, v, dv: model._general_inverse_dynamics(q, v, 0 * v),
        'forward_dynamics': lambda q, v, dv: model._general_forward_dynamics(q, v, dv),
        **{f'jacobian {frame}': (lambda frame: lambda q, v, dv: model._jacobian(
            q, link, None, frame))(frame) for frame in ('local', 'world', 'local_world_aligned')}}
    expected = {name: [f(*state) for state in states] for name, f in general.items()}
    compiled = {
        'inverse_dynamics': lambda q, v, dv: model.inverse_dynamics(q, v, dv),
        'mass_matrix': lambda q, v, dv: model.mass_matrix(q),
        'gravity_torque': lambda q, v, dv: model.gravity_torque(q),
        'coriolis_vector': lambda q, v, dv: model.coriolis_vector(q, v),
        'bias_torque': lambda q, v, dv: model.bias_torque(q, v),
        'forward_dynamics': lambda q, v, dv: model.forward_dynamics(q, v, dv),
        **{f'jacobian {frame}': (lambda frame: lambda q, v, dv: model.jacobian(
            q, link, frame=frame))(frame) for frame in ('local', 'world', 'local_world_aligned')}}

    def refuse(*args, **kwargs):
        raise AssertionError('a single plain state reached the general path')
    with monkeypatch.context() as patch:
        for name in ('_general_inverse_dynamics', '_general_mass_matrix',
                     '_general_gravity_torque', '_general_coriolis_vector',
                     '_general_forward_dynamics', '_jacobian', '_split'):
            patch.setattr(model, name, refuse)
        for name, f in compiled.items():
            for state, want in zip(states, expected[name]):
                close(f(*state), want, f'{case}: {name}', 1e-11)
        Q, V, DV = (np.array(x) for x in zip(*states))
        for name in ('inverse_dynamics', 'mass_matrix', 'gravity_torque', 'coriolis_vector',
                     'bias_torque', 'forward_dynamics'):
            close(compiled[name](Q, V, DV), np.array(expected[name]), f'{case}: {name} batch',
                  1e-11)
    q, v, dv = states[0]
    # constrained forward dynamics: one compiled call (moving_constrained_forward_dynamics)
    deepest = max(model.link_names, key=lambda name: np.count_nonzero(
        model._jacobian(q, name, None, 'local').any(axis=0)))        # a regular contact
    contacts = [Contact(deepest, dim=3)]
    tau = rng.uniform(-1.0, 1.0, model.n)
    fast = model._constrained_compiled(q, v, tau, contacts)
    assert fast is not None, 'the compiled constrained forward dynamics refused a regular state'
    with monkeypatch.context() as patch:
        patch.setattr(model, '_constrained_compiled', lambda *args: None)
        want = model.constrained_forward_dynamics(q, v, tau, contacts)
    for got, expected, what in zip(fast, want, ("v'", 'lambda')):
        close(got, expected, f'{case}: constrained {what}', 1e-10)
    off = q.copy()
    off[model.nq - model.n - 2 if base == 'planar' else 3] += 0.1     # not a unit rotation
    with pytest.raises(ValueError, match='q: the base'):
        model.inverse_dynamics(off, v, dv)
    bad = q.copy()
    bad[-1] = np.nan
    with pytest.raises(ValueError, match='not finite'):
        model.mass_matrix(bad)
    with pytest.raises(ValueError, match=r'q\[1\] is not finite'):
        model.gravity_torque(np.array([q, bad]))


@pytest.mark.parametrize('case', sorted(MOVING_CASES) + ['solo12 floating'])
def test_the_compiled_kinematics_and_coriolis_matrix_equal_their_references(case, monkeypatch):
    """
    Poses, CoM, A_G, J', H, accelerations, C and C* of a moving base: one compiled call each.

    Equal to the NumPy references (the fixed model's kinematics composed with the base pose,
    J' from the Hessian, H with the base's columns in NumPy, C body by body, C* by
    polarization of h - G), which a single plain state never reaches;
    C + C^T = M' by finite differences along the motion.
    """
    source, base, mimic = MOVING_CASES.get(
        case, ('solo_description/robots/solo12.urdf', 'floating', False))
    rng = np.random.default_rng(40 + len(case))
    model = moving_case_model(source, base, mimic, rng)
    assert model._pk is not None
    links = model.link_names[1::max(1, len(model.link_names) // 4)]
    states = [random_state(model, rng) for _ in range(2)]
    frames = ('local', 'world', 'local_world_aligned')
    expected = [([[model._jacobian_derivative(q, v, link, None, frame) for frame in frames]
                  for link in links], model._coriolis_matrix_readable(q, v))
                for q, v, _ in states]
    kinematics = {      # the public method -> its reference
        'link_poses': lambda q: model._link_poses_readable(q),
        'center_of_mass': lambda q: model._center_of_mass_readable(q),
        'center_of_mass_jacobian': lambda q: model._center_of_mass_jacobian_readable(q),
        'centroidal_momentum_matrix': lambda q: model._centroidal_momentum_matrix_readable(q),
        'coriolis_star': lambda q: model._coriolis_star_readable(q),
        **{f'link_pose {link}': (lambda link: lambda q: model._link_pose_readable(q, link))(
            link) for link in links}}
    kinematics_expected = [{name: f(q) for name, f in kinematics.items()} for q, _, _ in states]
    accelerations = [[[model._acceleration_readable(q, v, dv, link, None, frame)
                       for frame in ('local', 'local_world_aligned')] for link in links]
                     for q, v, dv in states]
    hessians = [[[model._hessian_readable(q, link, None, frame) for frame in frames]
                 for link in links] for q, _, _ in states]

    def refuse(*args, **kwargs):
        raise AssertionError('a single plain state reached the NumPy path')
    with monkeypatch.context() as patch:
        for name in ('_jacobian_derivative', '_coriolis_matrix_readable', '_split',
                     '_acceleration_readable', '_hessian_readable',
                     *(f'_{name.split()[0]}_readable' for name in kinematics)):
            patch.setattr(model, name, refuse)
        for (q, _, _), per_link in zip(states, hessians):
            for link, want in zip(links, per_link):
                for frame, H in zip(frames, want):
                    close(model.hessian(q, link, frame=frame), H,
                          f'{case}: {frame} Hessian of {link}', 1e-11)
        for (q, v, dv), per_link in zip(states, accelerations):
            for link, want in zip(links, per_link):
                for frame, a in zip(('local', 'local_world_aligned'), want):
                    close(model.acceleration(q, v, dv, link, frame=frame), a,
                          f'{case}: {frame} acceleration of {link}', 1e-11)
        for (q, _, _), want in zip(states, kinematics_expected):
            for name, value in want.items():
                method, *link = name.split()
                close(getattr(model, method)(q, *link), value, f'{case}: {name}', 1e-12)
        for (q, v, _), (dJs, C) in zip(states, expected):
            for link, want in zip(links, dJs):
                for frame, dJ in zip(frames, want):
                    close(model.jacobian_derivative(q, v, link, frame=frame), dJ,
                          f"{case}: {frame} J' of {link}", 1e-11)
            close(model.coriolis_matrix(q, v), C, f'{case}: C', 1e-11)
    q, v, _ = states[0]
    h = 1e-6
    dM = (model.mass_matrix(model.integrate(q, v, h))
          - model.mass_matrix(model.integrate(q, v, -h))) / (2 * h)
    C = model.coriolis_matrix(q, v)
    close(C + C.T, dM, f'{case}: C + C^T = M\'', 1e-6)


@pytest.mark.parametrize('base', ['floating', 'planar'])
def test_the_compiled_integrate_is_the_readable_exponential(base, monkeypatch):
    """
    One compiled call of q (+) v dt, and of difference, equals the NumPy form and Pinocchio's.

    The NumPy forms: MovingBase's exponential and logarithm of the base's motion.

    Turns of every size (the series below 1e-6 rad, beyond pi), the input quaternion's sign
    kept; a single plain state never reaches the NumPy path, a bad one does and is named.
    """
    rng = np.random.default_rng(11)
    path = ('talos_data/robots/talos_reduced.urdf' if base == 'floating'
            else 'tiago_description/robots/tiago.urdf')
    model = RobotModel.from_urdf_file(erd_robots() / path, root_joint=base)
    pm = pin.buildModelFromUrdf(str(erd_robots() / path), pin.JointModelFreeFlyer()
                                if base == 'floating' else pin.JointModelPlanar())
    pair = PinPair(model, pm)
    cases = []
    for scale in (5.0, 1.0, 1e-3, 1e-7, 0.0):
        q, v, _ = random_state(model, rng)
        if base == 'floating' and scale == 1.0:
            q[3:7] = -q[3:7]            # the same rotation, the other sign: kept
        cases.append((q, scale * v, float(rng.uniform(-1.0, 1.0))))
    expected = [model._integrate_readable(q, v, dt) for q, v, dt in cases]
    ends = [model._integrate_readable(q, rng.standard_normal(model.nv), 1.0)
            for q, _, _ in cases]
    differences = [model._difference_readable(q, end) for (q, _, _), end in zip(cases, ends)]

    def refuse(*args, **kwargs):
        raise AssertionError('a single plain state reached the NumPy path')
    with monkeypatch.context() as patch:
        patch.setattr(model, '_integrate_readable', refuse)
        patch.setattr(model, '_difference_readable', refuse)
        for (q, _, _), end, want in zip(cases, ends, differences):
            got = model.difference(q, end)
            close(got, want, f'{base}: difference', 1e-12)
            close(got, pin.difference(pm, pair.q(q), pair.q(end))[pair.iv], 'difference vs '
                  'Pinocchio', 1e-9)
        for (q, v, dt), want in zip(cases, expected):
            got = model.integrate(q, v, dt)
            close(got, want, f'{base}: integrate', 1e-13)
            theirs = pin.integrate(pm, pair.q(q), dt * pair.v(v))[:pair.nbq]
            if base == 'floating':      # one rotation, either sign of its quaternion
                close(got[:3], theirs[:3], 'integrate vs Pinocchio: position', 1e-9)
                assert abs(abs(got[3:7] @ theirs[3:7]) - 1.0) < 1e-12
                assert got[3:7] @ q[3:7] >= 0.0
            else:
                close(got[:4], theirs, 'integrate vs Pinocchio', 1e-9)
    q, v, _ = cases[0]
    off = q.copy()
    off[3 if base == 'floating' else 2] += 0.1
    with pytest.raises(ValueError, match='q: the base'):
        model.integrate(off, v, 0.1)
    nan = v.copy()
    nan[-1] = np.nan
    with pytest.raises(ValueError, match='not finite'):
        model.integrate(q, nan, 0.1)


@pytest.mark.parametrize('base', ['floating', 'planar'])
def test_integrate_and_difference_are_exact_at_every_turn_size(base):
    """
    Integrate and difference equal SciPy's matrix exponential of the twist to 1e-14 of |v|.

    An oracle independent of the closed forms (a Pade approximant of the 4 x 4 twist matrix),
    at turns from 1e-8 rad to 3 rad, the small ones where (1 - cos t) / t^2 computed as written
    loses eps / t^2 (it gave 2e-11 of |v| in the position at 2e-6 rad, and the logarithm's
    (1 - t sin t / (2 (1 - cos t))) / t^2 1e-5 of |v| in difference). Compiled single states,
    compiled batches and the readable NumPy forms alike.
    """
    from scipy.linalg import expm
    from scipy.spatial.transform import Rotation
    rng = np.random.default_rng(31)
    path = ('solo_description/robots/solo12.urdf' if base == 'floating'
            else 'tiago_description/robots/tiago.urdf')
    model = RobotModel.from_urdf_file(erd_robots() / path, root_joint=base)
    turn = slice(3, 6) if base == 'floating' else slice(2, 3)
    Q, V, Q1 = [], [], []
    for size in (1e-8, 9e-7, 2e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.3, 3.0):
        for _ in range(3):
            q, v, _ = random_state(model, rng)
            w = rng.standard_normal(3 if base == 'floating' else 1)
            v[turn] = size * w / np.linalg.norm(w)
            twist = np.zeros((4, 4))          # the base's twist (body axes) as a matrix
            if base == 'floating':
                twist[:3, :3] = [[0, -v[5], v[4]], [v[5], 0, -v[3]], [-v[4], v[3], 0]]
                twist[:3, 3] = v[:3]
            else:
                twist[:2, :2] = [[0, -v[2]], [v[2], 0]]
                twist[:2, 3] = v[:2]
            E = expm(twist)
            q1 = q.copy()
            q1[model.nq - model.n:] += v[model.nv - model.n:]
            if base == 'floating':
                R0 = Rotation.from_quat(q[3:7])
                q1[:3] = q[:3] + R0.apply(E[:3, 3])
                q1[3:7] = (R0 * Rotation.from_matrix(E[:3, :3])).as_quat()
                if q1[3:7] @ q[3:7] < 0.0:
                    q1[3:7] *= -1.0
            else:
                c, s = q[2], q[3]
                q1[:2] = q[:2] + [c * E[0, 3] - s * E[1, 3], s * E[0, 3] + c * E[1, 3]]
                q1[2:4] = np.cos(np.arctan2(s, c) + v[2]), np.sin(np.arctan2(s, c) + v[2])
            Q.append(q)
            V.append(v)
            Q1.append(q1)
    Q, V, Q1 = np.array(Q), np.array(V), np.array(Q1)
    scale = np.linalg.norm(V, axis=1)[:, None]

    def within(got, want, what):
        error = np.abs(got - want) / scale
        worst = int(np.argmax(error.max(axis=1)))
        assert error.max() <= 1e-14, (f'{base} {what}: {error.max():.3g} of |v| at a turn of '
                                      f'{np.linalg.norm(V[worst, turn]):.3g} rad')
    within(model.integrate(Q, V, 1.0), Q1, 'integrate (batch)')
    within(model.difference(Q, Q1), V, 'difference (batch)')
    within(np.array([model.integrate(q, v, 1.0) for q, v in zip(Q, V)]), Q1, 'integrate')
    within(np.array([model.difference(q, q1) for q, q1 in zip(Q, Q1)]), V, 'difference')
    within(np.array([model._integrate_readable(q, v, 1.0) for q, v in zip(Q, V)]), Q1,
           'integrate (NumPy)')
    within(np.array([model._difference_readable(q, q1) for q, q1 in zip(Q, Q1)]), V,
           'difference (NumPy)')


# ------------------------------------------------------------------ real robots
ROBOTS = {      # example-robot-data file, base, links whose kinematics are compared
    'a1': ('a1_description/urdf/a1.urdf', 'floating', ['FR_foot', 'RL_calf']),
    'solo12': ('solo_description/robots/solo12.urdf', 'floating', ['FL_FOOT', 'HR_LOWER_LEG']),
    'talos': ('talos_data/robots/talos_reduced.urdf', 'floating',
              ['left_sole_link', 'gripper_right_base_link']),
    'tiago': ('tiago_description/robots/tiago.urdf', 'planar', ['arm_7_link']),
}


def erd_robots():
    """Return example-robot-data's robots directory (a declared test dependency: no skip)."""
    directory = robots_dir()
    assert directory is not None, 'example-robot-data (requirements.txt) is not installed'
    return directory


@pytest.mark.slow
@pytest.mark.parametrize('robot', sorted(ROBOTS))
def test_example_robot_data_agrees_with_pinocchio(robot):
    relative, base, links = ROBOTS[robot]
    path = erd_robots() / relative
    model = RobotModel.from_urdf_file(path, root_joint=base)
    root = pin.JointModelFreeFlyer() if base == 'floating' else pin.JointModelPlanar()
    pair = PinPair(model, pin.buildModelFromUrdf(str(path), root))
    rng = np.random.default_rng(5)
    q, v, dv = random_state(model, rng)
    compare_dynamics(pair, q, v, dv)
    compare_kinematics(pair, q, v, dv, links)


# ------------------------------------------------------------------ independent checks
FLOATING_TREE_URDF = random_urdf(np.random.default_rng(7), 4, n_fixed=1)


@pytest.fixture(scope='module')
def floating_tree():
    return RobotModel.from_urdf_string(FLOATING_TREE_URDF, root_joint='floating')


def test_coriolis_star_is_the_symmetric_quadratic_form_of_the_bias(floating_tree):
    model = floating_tree
    rng = np.random.default_rng(8)
    q, v, _ = random_state(model, rng)
    C = model.coriolis_star(q)
    nv = model.nv
    assert C.shape == (nv, nv * nv)
    C3 = C.reshape(nv, nv, nv)
    np.testing.assert_allclose(C3, C3.transpose(0, 2, 1), atol=1e-12)
    for _ in range(3):
        v = rng.normal(size=nv)
        close(C @ np.kron(v, v), model.inverse_dynamics(q, v, np.zeros(nv))
              - model.gravity_torque(q), 'C*(v kron v) against RNEA at zero acceleration')


def rk4(model, q, v, rates, dt, steps):
    """
    Return (q, v, integral of the third rate) after RK4 steps on the configuration manifold.

    ``rates(q, v)`` returns (q' as a velocity, v', the rate of a scalar riding along).
    """
    total = 0.0
    for _ in range(steps):
        k1 = rates(q, v)
        k2 = rates(model.integrate(q, k1[0], dt / 2), v + dt / 2 * k1[1])
        k3 = rates(model.integrate(q, k2[0], dt / 2), v + dt / 2 * k2[1])
        k4 = rates(model.integrate(q, k3[0], dt), v + dt * k3[1])
        q = model.integrate(q, (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]) / 6, dt)
        v = v + dt * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1]) / 6
        total += dt * (k1[2] + 2 * k2[2] + 2 * k3[2] + k4[2]) / 6
    return q, v, total


@pytest.mark.slow
def test_a_free_floating_robot_keeps_its_momentum_and_energy():
    """No gravity, no torque: spatial momentum about the world origin and energy conserved."""
    model = RobotModel.from_urdf_string(FLOATING_TREE_URDF, gravity=(0.0, 0.0, 0.0),
                                        root_joint='floating')
    rng = np.random.default_rng(9)
    q, v, _ = random_state(model, rng)
    tau = np.zeros(model.nv)

    def momentum(q, v):
        h = model.centroidal_momentum_matrix(q) @ v       # about the centre of mass
        c = model.center_of_mass(q)
        return np.concatenate([h[:3], h[3:] + np.cross(c, h[:3])])

    def rates(q, v):
        return v, model.forward_dynamics(q, v, tau), 0.0

    h0, e0 = momentum(q, v), model.kinetic_energy(q, v)
    q, v, _ = rk4(model, q, v, rates, 2.5e-3, 80)
    assert abs(np.linalg.norm(q[3:7]) - 1.0) < 1e-14
    np.testing.assert_allclose(momentum(q, v), h0, atol=1e-7 * (1 + np.abs(h0).max()))
    assert abs(model.kinetic_energy(q, v) - e0) < 1e-7 * (1 + e0)


@pytest.mark.slow
@pytest.mark.parametrize('base', ['floating', 'planar'])
def test_power_balance_with_gravity_and_torques(base):
    """d(T + V)/dt = v^T tau along a trajectory driven by joint torques under gravity."""
    model = RobotModel.from_urdf_string(FLOATING_TREE_URDF, root_joint=base)
    rng = np.random.default_rng(19)
    q, v, _ = random_state(model, rng)
    tau = np.concatenate([np.zeros(model.nv - model.n), rng.uniform(-1, 1, model.n)])

    def energy(q, v):
        return model.kinetic_energy(q, v) + model.potential_energy(q)

    def rates(q, v):        # (q', v', work rate): the work rides along in the same RK4
        return v, model.forward_dynamics(q, v, tau), float(v @ tau)

    e0 = energy(q, v)
    q, v, work = rk4(model, q, v, rates, 2e-3, 100)
    change = energy(q, v) - e0
    assert abs(work) > 1e-3 and abs(change - work) < 1e-7 * (1.0 + abs(e0)), (change, work)


def test_finite_differences_through_integrate(floating_tree):
    """d/dt of the centre of mass and of a link pose along integrate(q, v t)."""
    model = floating_tree
    rng = np.random.default_rng(10)
    q, v, _ = random_state(model, rng)
    h = 1e-6
    qp, qm = model.integrate(q, v, h), model.integrate(q, v, -h)
    dc = (model.center_of_mass(qp) - model.center_of_mass(qm)) / (2 * h)
    np.testing.assert_allclose(dc, model.center_of_mass_jacobian(q) @ v, atol=1e-7)
    link = model.fixed.link_names[-1]
    Tp, Tm = model.link_pose(qp, link), model.link_pose(qm, link)
    dp = (Tp[:3, 3] - Tm[:3, 3]) / (2 * h)
    np.testing.assert_allclose(dp, (model.jacobian(q, link) @ v)[:3], atol=1e-7)
    # the acceleration: derivative of the world velocity along the motion with v' = dv
    dv = rng.normal(size=model.nv)
    vel = [model.jacobian(model.integrate(q, v, s * h), link) @ (v + s * h * dv)
           for s in (1, -1)]
    np.testing.assert_allclose((vel[0] - vel[1]) / (2 * h), model.acceleration(q, v, dv, link),
                               atol=2e-6)
    M = model.mass_matrix(q)
    np.testing.assert_allclose(M, M.T, atol=1e-14)
    assert np.linalg.eigvalsh(M).min() > 0


def test_mimic_joints_on_a_floating_base_are_the_projected_system():
    coupled = RobotModel.from_urdf_file(URDF_DIR / 'gripper_arm.urdf', root_joint='floating')
    free = RobotModel.from_urdf_file(URDF_DIR / 'gripper_arm.urdf', root_joint='floating')
    assert coupled.fixed.mimic_joints
    plain = FloatingBaseModel(free.fixed.unconstrained, 'floating')
    B, d = hand_coupling(coupled.fixed)
    names = plain.joint_names
    P = np.zeros((plain.nv, coupled.nv))
    P[:6, :6] = np.eye(6)
    for i, name in enumerate(coupled.fixed.full_joint_names):
        P[6 + names.index(name), 6:] = B[i]
    rng = np.random.default_rng(11)
    q, v, dv = random_state(coupled, rng)
    full = np.zeros(plain.nq)
    full[:7] = q[:7]
    for i, name in enumerate(coupled.fixed.full_joint_names):
        full[7 + names.index(name)] = B[i] @ q[7:] + d[i]
    close(coupled.mass_matrix(q), P.T @ plain.mass_matrix(full) @ P, 'M_u')
    close(coupled.inverse_dynamics(q, v, dv),
          P.T @ plain.inverse_dynamics(full, P @ v, P @ dv), 'tau_u')
    close(coupled.center_of_mass(q), plain.center_of_mass(full), 'centre of mass')


# ------------------------------------------------------------------ contacts
@pytest.fixture(scope='module')
def solo():
    path = erd_robots() / 'solo_description/robots/solo12.urdf'
    return RobotModel.from_urdf_file(path, root_joint='floating'), str(path)


FEET = ['FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT']


def solo_state(model, seed):
    """Return (q, v, joint torques) of solo12 at random."""
    rng = np.random.default_rng(seed)
    q, v, _ = random_state(model, rng)
    return q, v, rng.uniform(-1, 1, model.n)


def pinocchio_constraint_dynamics(pair: PinPair, q, v, tau_full, contacts):
    """Return Pinocchio's (v', lambda) of constraintDynamics for our contacts, our order."""
    kinds, datas = pair.constraint_models(contacts)
    pdv = pin.constraintDynamics(pair.pm, pair.pd, pair.q(q), pair.v(v), pair.v(tau_full),
                                 kinds, datas, pin.ProximalSettings(*PROXIMAL))
    return pair.P.T @ pdv, np.array(pair.pd.lambda_c)


CONTACT_CASES = {   # robot: contacts (feet on the ground: 3-D points, 6-D soles)
    'solo12': [Contact('FL_FOOT'), Contact('HR_FOOT', dim=6)],
    'a1': [Contact(f, point=(0.0, 0.0, -0.02)) for f in
           ('FR_foot', 'FL_foot', 'RR_foot', 'RL_foot')],
    'talos': [Contact('left_sole_link', dim=6), Contact('right_sole_link', dim=6)],
}


def in_frame(contacts, frame):
    """Return the contacts with every reference_frame set to frame."""
    return [Contact(c.link, c.point, c.dim, frame) for c in contacts]


def constraint_residual(model, q, v, dv, contacts):
    """
    Return what each contact must keep at zero, computed from the Jacobians alone.

    3-D: the point's classical acceleration; 6-D: the frame's spatial acceleration in world
    axes, (a - w x v_p, w'), with a, w' classical and v_p, w from J v. Not from contact_terms.
    """
    out = []
    for c in contacts:
        a = model.acceleration(q, v, dv, c.link, c.point)
        if c.dim == 6:
            vel = model.jacobian(q, c.link, c.point) @ v
            a = np.concatenate([a[:3] - np.cross(vel[3:], vel[:3]), a[3:]])
        out.append(a[:c.dim])
    return np.concatenate(out)


@pytest.mark.slow
@pytest.mark.parametrize('frame', ['local_world_aligned', 'local'])
@pytest.mark.parametrize('moving', [False, True], ids=['feet at rest', 'feet moving'])
@pytest.mark.parametrize('robot', sorted(CONTACT_CASES) + ['random tree'])
def test_constrained_forward_dynamics_agrees_with_pinocchio(robot, moving, frame):
    """
    The contact dynamics equal constraintDynamics, feet at rest (J_c v = 0) and moving.

    A moving 6-D contact is where the classical and the spatial acceleration differ
    (Pinocchio constrains the spatial one); ``frame`` sets the axes of lambda only.
    """
    if robot == 'random tree':
        model = RobotModel.from_urdf_string(FLOATING_TREE_URDF, root_joint='floating')
        pm = pin.buildModelFromXML(FLOATING_TREE_URDF, pin.JointModelFreeFlyer())
        contacts = [Contact('link5', point=(0.05, -0.03, 0.1)),
                    Contact('link2', point=(0.0, 0.02, 0.0))]
    else:
        path = erd_robots() / ROBOTS[robot][0]
        model = RobotModel.from_urdf_file(path, root_joint='floating')
        pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
        contacts = CONTACT_CASES[robot]
    contacts = in_frame(contacts, frame)
    pair = PinPair(model, pm)
    rng = np.random.default_rng(12)
    for _ in range(2):
        q, v, _ = random_state(model, rng)
        tau = rng.uniform(-1, 1, model.n)
        J = model.contact_jacobian(q, contacts)
        assert np.linalg.matrix_rank(J) == len(J)     # lambda unique: comparable
        if not moving:
            v = v - np.linalg.pinv(J) @ (J @ v)       # contacts at rest
        else:
            assert np.abs(J @ v).max() > 1e-2         # the contact frames move
        dv, lam = model.constrained_forward_dynamics(q, v, tau, contacts)
        # its own equations: M v' + h = S^T tau + J^T lambda, and the constraints
        S_tau = np.concatenate([np.zeros(6), tau])
        close(model.mass_matrix(q) @ dv + model.bias_torque(q, v), S_tau + J.T @ lam,
              'equations of motion')
        residual = constraint_residual(model, q, v, dv, contacts)
        assert np.abs(residual).max() < 1e-9 * (1.0 + np.abs(dv).max())
        pdv, plam = pinocchio_constraint_dynamics(pair, q, v, S_tau, contacts)
        close(dv, pdv, 'v\' against constraintDynamics')
        close(lam, plam, 'lambda against constraintDynamics')


def test_the_compiled_contact_dynamics_equal_the_general_path(solo):
    """kernels.floating_base.floating_constrained_forward_dynamics against the NumPy path."""
    model, _ = solo
    for seed in range(3):
        q, v, tau = solo_state(model, 40 + seed)
        contacts = [Contact('FL_FOOT'), Contact('HR_FOOT', dim=6, reference_frame='local'),
                    Contact('HL_FOOT', point=(0.0, 0.01, -0.01))]
        fast = model.constrained_forward_dynamics(q, v, tau, contacts)
        general = model.constrained_forward_dynamics(list(q), list(v), list(tau), contacts)
        assert model._constrained_compiled(q, v, tau, contacts) is not None
        for a, b, what in zip(fast, general, ("v'", 'lambda')):
            close(a, b, f'{what}: compiled against the general path', 1e-10)
    # redundant contacts: the compiled call declines, the general path gives min-norm lambda
    twice = [Contact('FL_FOOT'), Contact('FL_FOOT')]
    assert model._constrained_compiled(q, v, tau, twice) is None


CONTACT_FRAMES = ('local_world_aligned', 'local')


@pytest.mark.parametrize('seed', range(4))
def test_the_tree_sparse_contact_solve_equals_the_general_path_on_branched_trees(seed):
    """M = L^T L and the contact paths (kernels) against the NumPy path, branches and 6-D."""
    rng = np.random.default_rng(300 + seed)
    xml = random_urdf(rng, 12, n_fixed=2, branching=0.6, massless_fraction=0.0)
    model = RobotModel.from_urdf_string(xml, root_joint='floating')
    links = [name for name in model.link_names if name != model.root_link]
    compared = declined = 0
    while compared < 4:
        first, second = rng.choice(links, size=2, replace=False)
        contacts = [Contact(first, dim=6, reference_frame=str(rng.choice(CONTACT_FRAMES))),
                    Contact(second, point=tuple(rng.uniform(-0.1, 0.1, 3)),
                            reference_frame=str(rng.choice(CONTACT_FRAMES)))]
        q, v, _ = random_state(model, rng)
        tau = rng.uniform(-1, 1, model.n)
        fast = model._constrained_compiled(q, v, tau, contacts)
        J = model.contact_jacobian(q, contacts)
        if np.linalg.matrix_rank(J) < len(J):       # redundant: the kernel must decline
            assert fast is None, f'seed {seed}: redundant contacts accepted'
            declined += 1
            assert declined < 50, f'seed {seed}: no full-rank pair of contacts found'
            continue
        assert fast is not None, f'seed {seed}: the kernel declined full-rank contacts'
        general = model.constrained_forward_dynamics(list(q), list(v), list(tau), contacts)
        for a, b, what in zip(fast, general, ("v'", 'lambda')):
            close(a, b, f'seed {seed} {[first, second]}: {what}', 1e-10)
        compared += 1


def test_contact_reference_frame_sets_the_axes_of_lambda_not_the_motion(solo):
    """The same v' in both frames; lambda and J_c rows turn with the link (R^T per contact)."""
    model, _ = solo
    q, v, tau = solo_state(model, 31)
    world = [Contact('FL_FOOT'), Contact('HR_FOOT', point=(0.0, 0.01, 0.0), dim=6)]
    local = in_frame(world, 'LOCAL')
    assert local[0].reference_frame == 'local'
    dv_w, lam_w = model.constrained_forward_dynamics(q, v, tau, world)
    dv_l, lam_l = model.constrained_forward_dynamics(q, v, tau, local)
    close(dv_l, dv_w, "v' does not depend on the axes of lambda", 1e-10)
    J_w, J_l = model.contact_jacobian(q, world), model.contact_jacobian(q, local)
    R = [model.link_pose(q, c.link)[:3, :3] for c in world]
    turn = np.zeros((9, 9))
    turn[:3, :3], turn[3:6, 3:6], turn[6:, 6:] = R[0].T, R[1].T, R[1].T
    close(J_l, turn @ J_w, 'J_c rows in link axes', 1e-12)
    close(lam_l, turn @ lam_w, 'lambda in link axes', 1e-9)
    with pytest.raises(ValueError, match=r"reference_frame must be one of \['local_world_al"):
        Contact('FL_FOOT', reference_frame='world')
    with pytest.raises(ValueError, match=r'dim must be 3 \(a point\) or 6'):
        Contact('FL_FOOT', dim=4)


def test_a_singular_mass_matrix_is_refused_naming_the_joint_with_contacts_too():
    """A joint that moves no inertia: forward dynamics, constrained or not, names it."""
    rng = np.random.default_rng(302)
    xml = random_urdf(rng, int(rng.integers(2, 8)), n_fixed=2)    # joint5 moves no mass
    model = RobotModel.from_urdf_string(xml, root_joint='floating')
    q, v, _ = random_state(model, rng)
    tau = np.zeros(model.n)
    with pytest.raises(SingularMassMatrixError, match=r'joint\(s\) joint5 moves'):
        model.forward_dynamics(q, v, np.zeros(model.nv))
    with pytest.raises(SingularMassMatrixError, match=r'joint\(s\) joint5 moves'):
        model.constrained_forward_dynamics(q, v, tau, [Contact(model.link_names[1])])


def test_contradicting_contacts_are_refused_with_the_cause(floating_tree):
    """Redundant contacts that v moves: no acceleration keeps them still; the error says why."""
    model = floating_tree
    q, v, _ = random_state(model, np.random.default_rng(18))
    link = model.link_names[-1]
    contacts = [Contact(link, dim=6), Contact(link, point=(0.1, 0.0, 0.0))]
    tau = np.zeros(model.n)
    with pytest.raises(SingularJacobianError, match=r'contradict each other .* the velocity v '
                                                    r'moves them \(J_c v = '):
        model.constrained_forward_dynamics(q, v, tau, contacts)
    J = model.contact_jacobian(q, contacts)
    still = v - np.linalg.pinv(J) @ (J @ v)
    dv, lam = model.constrained_forward_dynamics(q, still, tau, contacts)
    assert np.all(np.isfinite(dv)) and np.all(np.isfinite(lam))


@pytest.mark.slow
def test_redundant_contacts_and_contact_inverse_dynamics(solo):
    model, _ = solo
    q, v, tau = solo_state(model, 13)
    # the same foot twice: J_c has dependent rows; v' is unique, lambda the minimum-norm one
    one, _ = model.constrained_forward_dynamics(q, v, tau, [FEET[1]])
    twice, lam = model.constrained_forward_dynamics(q, v, tau, [FEET[1], FEET[1]])
    close(twice, one, 'v\' with a repeated contact', 1e-7)
    np.testing.assert_allclose(lam[:3], lam[3:], rtol=1e-6)
    # inverse dynamics in contact: the torques it returns give back the acceleration
    contacts = [Contact(f) for f in FEET]
    dv, _ = model.constrained_forward_dynamics(q, v, tau, contacts)
    tau_back, lam_back = model.contact_inverse_dynamics(q, v, dv, contacts)
    dv_back, _ = model.constrained_forward_dynamics(q, v, tau_back, contacts)
    close(dv_back, dv, 'v\' from the torques of contact_inverse_dynamics', 1e-6)
    J = model.contact_jacobian(q, contacts)
    close(model.inverse_dynamics(q, v, dv), np.concatenate([np.zeros(6), tau_back])
          + J.T @ lam_back, 'M v\' + h = S^T tau + J^T lambda')
    # refusals: an acceleration that moves a foot; a base acceleration no contact can give
    with pytest.raises(ValueError, match=r'dv moves the contacts'):
        model.contact_inverse_dynamics(q, v, dv + 0.1, contacts)
    with pytest.raises(ValueError, match=r'cannot give the base this acceleration'):
        model.contact_inverse_dynamics(q, v, np.zeros(model.nv), [])


def test_the_closed_forms_refuse_a_floating_base_clearly():
    from kron_dynamics.symbolic import SymbolicModel
    xml = (URDF_DIR / 'rp_arm.urdf').read_text()
    root = RobotModel.from_urdf_string(xml).root_link
    floating = xml.replace('<robot name="rp_arm">', (
        '<robot name="rp_arm"><link name="world"/><joint name="free" type="floating">'
        f'<parent link="world"/><child link="{root}"/></joint>'))
    with pytest.raises(ModelError, match=r"robot 'rp_arm' has a floating base: the closed "
                                         r'forms are of fixed-base trees'):
        SymbolicModel.from_urdf_string(floating)
    model = RobotModel.from_urdf_string(floating)
    with pytest.raises(ModelError, match=r"robot 'rp_arm' has a floating base: the closed "
                                         r'forms are of fixed-base trees'):
        SymbolicModel.from_model(model)
    assert SymbolicModel.from_model(model.fixed).n == model.n


def pinocchio_floating_tree(model, seed):
    """Return (Pinocchio pair of FLOATING_TREE_URDF on a free flyer, q, v) at random."""
    q, v, _ = random_state(model, np.random.default_rng(seed))
    pair = PinPair(model, pin.buildModelFromXML(FLOATING_TREE_URDF, pin.JointModelFreeFlyer()))
    return pair, q, v


def test_jacobian_derivative_times_velocity_in_three_frames_agrees_with_pinocchio(floating_tree):
    model = floating_tree
    pair, q, v = pinocchio_floating_tree(model, 15)
    pm, pd = pair.pm, pair.pd
    pin.computeJointJacobiansTimeVariation(pm, pd, pair.q(q), pair.v(v))
    pin.updateFramePlacements(pm, pd)
    for link in model.link_names:
        fid = pm.getFrameId(link)
        for name, frame in PIN_FRAMES.items():
            dJ = pin.getFrameJacobianTimeVariation(pm, pd, fid, frame) @ pair.P
            close(model.jacobian_derivative_times_velocity(q, v, link, frame=name), dJ @ v,
                  f"J' v ({name}) of {link}")


@pytest.mark.parametrize('base', ['floating', 'planar'])
def test_hessians_are_derivatives_along_integrate(base):
    """H[:, s*nv + k] = dJ[:, s]/dq_k along integrate(q, e_k t); J' v = H (v kron v)."""
    model = RobotModel.from_urdf_string(FLOATING_TREE_URDF, root_joint=base)
    rng = np.random.default_rng(16)
    q, v, _ = random_state(model, rng)
    link, h, nv = model.link_names[-1], 1e-6, model.nv
    for frame in ('local', 'local_world_aligned', 'world'):
        H = model.hessian(q, link, frame=frame)
        for k in range(nv):
            e = np.eye(nv)[k]
            dJ = (model.jacobian(model.integrate(q, e, h), link, frame=frame)
                  - model.jacobian(model.integrate(q, e, -h), link, frame=frame)) / (2 * h)
            np.testing.assert_allclose(H.reshape(6, nv, nv)[:, :, k], dJ, atol=2e-8)
        close(H @ np.kron(v, v), model.jacobian_derivative_times_velocity(q, v, link, frame=frame),
              f"H (v kron v) = J' v ({frame})")


def test_hessians_agree_with_pinocchio_kinematic_hessians(floating_tree):
    model = floating_tree
    pair, q, _ = pinocchio_floating_tree(model, 17)
    pm, pd = pair.pm, pair.pd
    pin.computeJointKinematicHessians(pm, pd, pair.q(q))
    nv = model.nv
    for joint in model.joint_names:
        link = model.fixed.joints[joint].child_link     # the joint frame is its child's frame
        jid = pm.getJointId(joint)
        for name, frame in PIN_FRAMES.items():
            T = np.asarray(pin.getJointKinematicHessian(pm, pd, jid, frame))
            T = T.reshape(-1).reshape(T.shape, order='F')     # as test_kinematics_pinocchio
            ours = model.hessian(q, link, frame=name).reshape(6, nv, nv)
            close(ours, np.einsum('isk,sa,kb->iab', T, pair.P, pair.P),
                  f'Hessian ({name}) of {link}')


def test_a_single_free_body_has_only_the_base_coordinates():
    """No movable joint: the base body alone, as Pinocchio's free flyer (nv = 6)."""
    xml = ('<robot name="block"><link name="b"><inertial><origin xyz="0.1 -0.2 0.05"/>'
           '<mass value="2"/><inertia ixx="1" iyy="2" izz="3" ixy="0.1" ixz="0" iyz="0"/>'
           '</inertial></link></robot>')
    model = RobotModel.from_urdf_string(xml, root_joint='floating')
    assert (model.nq, model.nv, model.n) == (7, 6, 0)
    B, d = model.coupling()
    assert B.shape == (0, 0) and d.shape == (0,)
    pair = PinPair(model, pin.buildModelFromXML(xml, pin.JointModelFreeFlyer()))
    q, v, dv = random_state(model, np.random.default_rng(30))
    compare_dynamics(pair, q, v, dv)


@pytest.mark.parametrize('seed', range(4))
@pytest.mark.parametrize('base', ['floating', 'planar'])
@pytest.mark.parametrize('mimic', [False, True])
def test_the_compiled_simulate_is_the_readable_rkmk_step(seed, base, mimic):
    """kernels.floating_base.moving_simulate against MovingBase.simulate's NumPy RKMK4."""
    rng = np.random.default_rng(700 + seed)
    model = random_moving_model(rng, 7, base, mimic)
    q, v, tau = random_state(model, rng)
    damping = rng.uniform(0.0, 0.5, model.n)
    for d in (None, damping):
        fast = model.simulate(q, v, tau, 1e-3, 5, damping=d)
        # lists take the readable path
        slow = model.simulate(list(q), list(v), list(tau), 1e-3, 5,
                              damping=None if d is None else list(d))
        for a, b in zip(fast, slow):
            np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-11 * np.abs(b).max())
    assert model.simulate(q, v, tau, 1e-3, 0)[0] is not q     # zero steps: a copy
    np.testing.assert_array_equal(model.simulate(q, v, tau, 1e-3, 0)[1], v)
