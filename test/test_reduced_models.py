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
Reduced models (model.locked, lock_others=True) against URDFs written with those joints fixed.

The independent construction: the URDF text itself, with each locked joint turned into a
fixed joint whose origin has the joint's motion at the locked value folded in. Both models
must agree on every quantity (M, C*, G, tau, poses, Jacobians, centre of mass), also when
the locked joints carry branches, fixed links and massless links.
"""

from functools import partial
import logging
import math
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from conftest import URDF_DIR
from kron_dynamics import ModelError, RobotModel
from kron_dynamics.model.rotations import axis_angle, rpy_to_matrix
from kron_dynamics.testing.random_urdf import random_urdf
import model_helpers
from pinocchio_oracle import ONE_MODEL_CASES, PinPair, robots_dir


def matrix_to_rpy(R):
    """Inverse of rpy_to_matrix (R = Rz(y) Ry(p) Rx(r)), away from pitch = +-pi/2."""
    return (math.atan2(R[2, 1], R[2, 2]), -math.asin(max(-1.0, min(1.0, R[2, 0]))),
            math.atan2(R[1, 0], R[0, 0]))


def fixed_urdf(xml: str, values: dict) -> str:
    """Return the URDF with the joints of values made fixed at those coordinates."""
    root = ET.fromstring(xml)
    for joint in root.findall('joint'):
        name = joint.get('name')
        if name not in values:
            continue
        origin = joint.find('origin')
        xyz = np.array([float(v) for v in origin.get('xyz', '0 0 0').split()])
        R = rpy_to_matrix([float(v) for v in origin.get('rpy', '0 0 0').split()])
        axis = np.array([float(v) for v in joint.find('axis').get('xyz').split()])
        axis /= np.linalg.norm(axis)
        if joint.get('type') == 'prismatic':
            xyz = xyz + R @ axis * values[name]
        else:
            R = R @ axis_angle(axis, values[name])
        origin.set('xyz', ' '.join(repr(float(v)) for v in xyz))
        origin.set('rpy', ' '.join(repr(float(v)) for v in matrix_to_rpy(R)))
        joint.set('type', 'fixed')
        for child in list(joint):
            if child.tag in ('axis', 'limit', 'dynamics'):
                joint.remove(child)
    return ET.tostring(root, encoding='unicode')


close = partial(model_helpers.close, tol=1e-10)


def assert_same_model(a: RobotModel, b: RobotModel, rng):
    assert a.joint_names == b.joint_names
    assert set(a.link_names) == set(b.link_names)
    assert math.isclose(a.total_mass, b.total_mass, rel_tol=1e-12)
    n = a.n
    q, qd, qdd = rng.uniform(-2, 2, (3, n))
    close(a.mass_matrix(q), b.mass_matrix(q))
    close(a.coriolis_star(q), b.coriolis_star(q))
    close(a.gravity_torque(q), b.gravity_torque(q))
    close(a.inverse_dynamics(q, qd, qdd), b.inverse_dynamics(q, qd, qdd))
    for link in a.link_names:
        close(a.link_pose(q, link), b.link_pose(q, link))
        close(a.jacobian(q, link, (0.1, 0.2, 0.3), 'local'),
              b.jacobian(q, link, (0.1, 0.2, 0.3), 'local'))
        close(a.hessian(q, link), b.hessian(q, link))
    for include_root in (False, True):
        try:
            expected = b.center_of_mass(q, include_root)
        except ValueError:
            with pytest.raises(ValueError, match='no mass'):
                a.center_of_mass(q, include_root)
            continue
        close(a.center_of_mass(q, include_root), expected)
        close(a.center_of_mass_jacobian(q, include_root),
              b.center_of_mass_jacobian(q, include_root))


@pytest.mark.parametrize('seed', range(10))
def test_locked_equals_the_urdf_with_fixed_joints(seed):
    rng = np.random.default_rng(seed)
    xml = random_urdf(rng, int(rng.integers(2, 9)), int(rng.integers(0, 3)))
    model = RobotModel.from_urdf_string(xml)
    order = list(rng.permutation(model.joint_names))
    model = RobotModel.from_urdf_string(xml, joint_names=order)
    locked_names = list(rng.choice(order, size=int(rng.integers(1, len(order))), replace=False))
    values = {str(j): float(rng.uniform(-2, 2)) for j in locked_names}
    reduced = model.locked(values)
    kept = [j for j in order if j not in values]
    expected = RobotModel.from_urdf_string(fixed_urdf(xml, values), joint_names=kept)
    assert reduced.joint_names == tuple(kept)
    assert_same_model(reduced, expected, rng)
    # locking at the current q: the kept joints' dynamics at that q are the full model's
    q = rng.uniform(-2, 2, model.n)
    idx = [order.index(j) for j in kept]
    for j, v in values.items():
        q[order.index(j)] = v
    close(reduced.mass_matrix(q[idx]), model.mass_matrix(q)[np.ix_(idx, idx)])
    close(reduced.jacobian(q[idx], model.link_names[-1]),
          model.jacobian(q, model.link_names[-1])[:, idx])


@pytest.mark.parametrize('seed', range(4))
def test_lock_others_locks_the_unlisted_joints_at_zero(seed):
    rng = np.random.default_rng(100 + seed)
    xml = random_urdf(rng, 6, 2)
    full = RobotModel.from_urdf_string(xml)
    subset = list(rng.choice(full.joint_names, size=3, replace=False))
    model = RobotModel.from_urdf_string(xml, joint_names=iter(subset), lock_others=True)
    assert model.joint_names == tuple(subset)
    others = {j: 0.0 for j in full.joint_names if j not in subset}
    expected = RobotModel.from_urdf_string(fixed_urdf(xml, others), joint_names=subset)
    assert_same_model(model, expected, rng)
    with pytest.raises(ModelError, match=r"missing movable joint\(s\) .*lock_others=True"):
        RobotModel.from_urdf_string(xml, joint_names=subset)
    with pytest.raises(ModelError, match=re.escape(  # every movable joint, none locked yet
            f"unknown or non-movable joint(s) ['ghost']; movable joints are "
            f'{list(full.joint_names)}')):
        RobotModel.from_urdf_string(xml, joint_names=subset + ['ghost'], lock_others=True)


def test_locked_keeps_gravity_and_armature_and_checks_its_input(stacker):
    moon = stacker.with_gravity([0, 0, -1.62]).with_armature({'q2_slew': 5.0, 'q3_luff': 2.0})
    reduced = moon.locked({'q1_travel': 3.0})
    assert reduced.joint_names == ('q2_slew', 'q3_luff')
    np.testing.assert_array_equal(reduced.armature, [5.0, 2.0])
    np.testing.assert_array_equal(reduced.gravity, [0, 0, -1.62])
    q = np.array([3.0, 0.4, 0.2])
    close(reduced.gravity_torque(q[1:]), moon.gravity_torque(q)[1:])
    close(reduced.mass_matrix(q[1:]), moon.mass_matrix(q)[1:, 1:])
    assert stacker.locked({}).joint_names == stacker.joint_names
    with pytest.raises(ModelError, match=r"cannot lock \['link3'\]: not movable joints"):
        stacker.locked({'link3': 0.0})
    with pytest.raises(ModelError, match="cannot lock joint 'q2_slew' at nan"):
        stacker.locked({'q2_slew': float('nan')})
    with pytest.raises(ModelError, match="cannot lock joint 'q2_slew' at 'x'"):
        stacker.locked({'q2_slew': 'x'})
    with pytest.raises(ModelError, match='must be a mapping'):
        stacker.locked(['q2_slew'])


def test_a_joint_locked_outside_its_limits_is_locked_there_with_one_warning(stacker, caplog):
    """q3_luff's limits are [-0.6, 0.6]: locked at 0.8 (a URDF's limits can be wrong)."""
    with caplog.at_level(logging.WARNING, logger='kron_dynamics'):
        stacker.locked({'q3_luff': 0.6, 'q2_slew': -3.0})
    assert not caplog.records, caplog.text
    with caplog.at_level(logging.WARNING, logger='kron_dynamics'):
        reduced = stacker.locked({'q3_luff': 0.8})
    assert [r.getMessage() for r in caplog.records] == [
        "joint 'q3_luff' locked at 0.8, outside its limits [-0.6, 0.6]"]
    q = np.array([0.3, 0.2, 0.8])
    close(reduced.gravity_torque(q[:2]), stacker.gravity_torque(q)[:2])


def test_locking_every_joint_leaves_a_rigid_body(stacker):
    rigid = stacker.locked({j: 0.1 for j in stacker.joint_names})
    assert rigid.n == 0
    assert rigid.mass_matrix(np.zeros(0)).shape == (0, 0)
    assert math.isclose(rigid.total_mass, stacker.total_mass)
    q = np.full(3, 0.1)
    close(rigid.link_pose([], 'link3'), stacker.link_pose(q, 'link3'))
    close(rigid.center_of_mass([], include_root=True),
          stacker.center_of_mass(q, include_root=True))
    with pytest.raises(ValueError, match='no mass'):
        rigid.center_of_mass([])          # everything is welded to the root now


@pytest.mark.parametrize('seed', range(4))
def test_joints_locked_at_load_equal_the_model_locked_after(seed):
    """from_urdf_string(locked=...): joint_names and armature are the other joints'."""
    rng = np.random.default_rng(200 + seed)
    xml = random_urdf(rng, 7, 2)
    full = RobotModel.from_urdf_string(xml)
    names = list(full.joint_names)
    values = {str(j): float(rng.uniform(-1, 1))
              for j in rng.choice(names, size=3, replace=False)}
    kept = [j for j in rng.permutation(names) if j not in values]
    armature = rng.uniform(0.1, 1.0, len(kept))
    model = RobotModel.from_urdf_string(xml, joint_names=kept, armature=armature,
                                        locked=values)
    expected = RobotModel.from_urdf_string(
        xml, joint_names=kept + list(values),
        armature=[*armature, *[0.0] * len(values)]).locked(values)
    assert model.joint_names == tuple(kept) and dict(model.locked_joints) == values
    np.testing.assert_array_equal(model.armature, armature)
    assert_same_model(model, expected, rng)
    assert_same_model(model, RobotModel.from_urdf_string(fixed_urdf(xml, values), kept,
                                                         armature=armature), rng)
    # with lock_others, the joints neither listed nor locked are locked at 0
    some = RobotModel.from_urdf_string(xml, joint_names=kept[:2], locked=values,
                                       lock_others=True)
    assert some.joint_names == tuple(kept[:2])
    assert dict(some.locked_joints) == {**values, **{j: 0.0 for j in kept[2:]}}
    assert dict(some.locked({kept[0]: 0.5}).locked_joints) == {**some.locked_joints,
                                                               kept[0]: 0.5}


def test_locking_at_load_names_the_source_and_the_fault():
    xml = (URDF_DIR / 'stacker.urdf').read_text()
    for locked, words in (({'link3': 0.0}, r"cannot lock \['link3'\]: not movable joints of "
                           r"'.*'; movable joints are \['q1_travel'"),
                          ({'q2_slew': float('inf')}, "cannot lock joint 'q2_slew' at inf"),
                          (['q2_slew'], r'locked joints must be a mapping \{joint name: '
                           r'coordinate\}')):
        with pytest.raises(ModelError, match='^stacker text: ' + words):
            RobotModel.from_urdf_string(xml, locked=locked, source='stacker text')
    with pytest.raises(ModelError, match=re.escape(
            "joint_names: ['q2_slew'] are locked, not coordinates; the movable joints are "
            "['q1_travel', 'q3_luff']")):
        RobotModel.from_urdf_string(xml, ['q1_travel', 'q2_slew', 'q3_luff'],
                                    locked={'q2_slew': 0.1})


# real robots locked at load against Pinocchio's buildReducedModel: (case, joints to lock)
PINOCCHIO_LOCKS = {
    'mimic gripper': {'panda_finger_joint1': 0.02, 'panda_joint7': 0.3},
    'floating quadruped': {'FL_KFE': -1.2, 'HR_HAA': 0.1},
}


@pytest.mark.parametrize('kind', sorted(PINOCCHIO_LOCKS))
def test_real_robots_locked_at_load_equal_pinocchios_reduced_model(kind):
    """Panda hand and arm joint, Solo's knee and hip: M, tau, G, poses, Jacobians."""
    import pinocchio as pin
    path, base, links = ONE_MODEL_CASES[kind]
    path = robots_dir() / path
    values = PINOCCHIO_LOCKS[kind]
    model = RobotModel.from_urdf_file(path, root_joint=base, locked=values)
    pm = (pin.buildModelFromUrdf(str(path)) if base == 'fixed'
          else pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()))
    locked = dict(model.locked_joints)
    assert set(values) <= set(locked) and not set(locked) & set(model.joint_names)
    reference = pin.neutral(pm)
    ids = []
    for name, value in locked.items():     # the mimic finger too: Pinocchio's own joint
        ids.append(pm.getJointId(name))
        reference[pm.joints[ids[-1]].idx_q] = value
    pair = PinPair(model, pin.buildReducedModel(pm, ids, reference))
    rng = np.random.default_rng(7)
    for _ in range(3):
        q = model.random_configuration(rng)
        v, dv = rng.uniform(-1, 1, (2, model.nv))
        pq, pv, pa = pair.q(q), pair.v(v), pair.v(dv)
        M = pin.crba(pair.pm, pair.pd, pq)
        model_helpers.close(model.mass_matrix(q), pair.matrix(np.triu(M) + np.triu(M, 1).T),
                            tol=1e-12)
        model_helpers.close(model.inverse_dynamics(q, v, dv),
                            pair.force(pin.rnea(pair.pm, pair.pd, pq, pv, pa)), tol=1e-12)
        model_helpers.close(model.gravity_torque(q), pair.force(
            pin.computeGeneralizedGravity(pair.pm, pair.pd, pq)), tol=1e-12)
        pin.computeJointJacobians(pair.pm, pair.pd, pq)
        pin.updateFramePlacements(pair.pm, pair.pd)
        for link in links:
            frame = pair.pm.getFrameId(link)
            model_helpers.close(model.link_pose(q, link),
                                pair.pd.oMf[frame].homogeneous, tol=1e-12)
            J = pin.getFrameJacobian(pair.pm, pair.pd, frame, pin.LOCAL_WORLD_ALIGNED)
            model_helpers.close(model.jacobian(q, link, frame='local_world_aligned'),
                                pair.columns(J), tol=1e-12)
