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
The kinematics API against Pinocchio (PyPI ``pin``, requirements.txt) on random trees.

Same URDF text for both. Pinocchio makes a continuous joint a unit-circle joint (two
coordinates, cos q and sin q), so configurations are converted per joint; its velocity is
q'. Every link, at its origin and at a random point (a Pinocchio OP_FRAME placed there),
in Pinocchio's three reference frames: poses, frame Jacobians, their time variation,
classical accelerations, kinematic Hessians, the centre of mass and its Jacobian, the
operational-space inertia from Pinocchio's own J and M^-1, and reduced models
(buildReducedModel). Random trees with mimic joints: all of the above in u, against
Pinocchio's unconstrained model at q = B u + d projected with B written from the tags.
"""

import numpy as np
import pytest

from kron_dynamics import RobotModel
from kron_dynamics.testing.random_urdf import random_urdf
from model_helpers import close

pin = pytest.importorskip('pinocchio')

RF = {'world': pin.WORLD, 'local': pin.LOCAL, 'local_world_aligned': pin.LOCAL_WORLD_ALIGNED}


class Oracle:
    """Pinocchio on a URDF, with conversions to and from a RobotModel's joint order."""

    def __init__(self, xml: str, model: RobotModel, points: dict | None = None):
        self.kron = model
        self.model = pin.buildModelFromXML(xml)
        jid = {self.model.names[j]: j for j in range(1, self.model.njoints)}
        self.joints = [self.model.joints[jid[name]] for name in model.joint_names]
        self.jid = jid
        self.iv = np.array([j.idx_v for j in self.joints], dtype=int)
        self.points = {}
        for link, point in (points or {}).items():    # an OP_FRAME at a point on each link
            f = self.model.frames[self.model.getFrameId(link)]
            placement = f.placement * pin.SE3(np.eye(3), np.asarray(point, dtype=float))
            self.points[link] = self.model.addFrame(
                pin.Frame(f'{link}_point', f.parentJoint, placement, pin.OP_FRAME))
        self.data = self.model.createData()

    def q(self, q):
        out = pin.neutral(self.model)
        for joint, v in zip(self.joints, q):
            if joint.nq == 2:      # continuous: (cos q, sin q)
                out[joint.idx_q:joint.idx_q + 2] = np.cos(v), np.sin(v)
            else:
                out[joint.idx_q] = v
        return out

    def v(self, x):
        out = np.zeros(self.model.nv)
        out[self.iv] = x
        return out

    def cols(self, A):
        return np.asarray(A)[..., self.iv]

    def frame(self, link, point=False):
        return self.points[link] if point else self.model.getFrameId(link)


def random_case(seed, n=None, **kw):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 9)) if n is None else n
    xml = random_urdf(rng, n, int(rng.integers(0, 4)), **kw)
    names = list(rng.permutation(RobotModel.from_urdf_string(xml).joint_names))
    return xml, RobotModel.from_urdf_string(xml, joint_names=names), rng


@pytest.mark.parametrize('seed', range(10))
def test_poses_jacobians_derivatives_accelerations(seed):
    xml, model, rng = random_case(seed)
    points = {link: rng.uniform(-0.5, 0.5, 3) for link in model.link_names}
    o = Oracle(xml, model, points)
    for _ in range(2):
        q, qd, qdd = rng.uniform(-2, 2, (3, model.n))
        pq, pv, pa = o.q(q), o.v(qd), o.v(qdd)
        pin.forwardKinematics(o.model, o.data, pq, pv, pa)
        pin.updateFramePlacements(o.model, o.data)
        pin.computeJointJacobians(o.model, o.data, pq)
        pin.computeJointJacobiansTimeVariation(o.model, o.data, pq, pv)
        poses = model.link_poses(q)
        for k, link in enumerate(model.link_names):
            close(poses[k], o.data.oMf[o.frame(link)].homogeneous)
            close(model.link_pose(q, link), o.data.oMf[o.frame(link)].homogeneous)
            for point in (None, points[link]):
                fid = o.frame(link, point is not None)
                for name, rf in RF.items():
                    close(model.jacobian(q, link, point, name),
                          o.cols(pin.getFrameJacobian(o.model, o.data, fid, rf)))
                    close(model.jacobian_derivative(q, qd, link, point, name),
                          o.cols(pin.getFrameJacobianTimeVariation(o.model, o.data, fid, rf)),
                          1e-10)
                    if name != 'world':
                        close(model.acceleration(q, qd, qdd, link, point, name),
                              pin.getFrameClassicalAcceleration(o.model, o.data, fid,
                                                                rf).vector, 1e-10)


def pinocchio_hessian(o: Oracle, joint: str, rf) -> np.ndarray:
    """Pinocchio's 6 x nv x nv kinematic Hessian T[:, s, k] = dJ[:, s]/dq_k, joint order."""
    H = np.asarray(pin.getJointKinematicHessian(o.model, o.data, o.jid[joint], rf))
    # pin 4.1's Python binding hands the column-major Eigen tensor over as a C-order array
    # of the same shape: read the buffer back in Fortran order (checked against finite
    # differences of Pinocchio's own Jacobian in test_pinocchio_hessian_layout)
    T = H.reshape(-1).reshape(H.shape, order='F')
    return T[:, o.iv][:, :, o.iv]


def test_pinocchio_hessian_layout():
    """The reading of pinocchio_hessian is Pinocchio's own dJ/dq (finite differences)."""
    xml, model, rng = random_case(1, n=5)
    o = Oracle(xml, model)
    q = rng.uniform(-1, 1, model.n)
    pin.computeJointKinematicHessians(o.model, o.data, o.q(q))
    joint = model.joint_names[-1]
    T = pinocchio_hessian(o, joint, pin.LOCAL_WORLD_ALIGNED)
    h = 1e-6

    def J(x):
        data = o.model.createData()
        pin.computeJointJacobians(o.model, data, o.q(x))
        return o.cols(pin.getJointJacobian(o.model, data, o.jid[joint],
                                           pin.LOCAL_WORLD_ALIGNED))
    for k in range(model.n):
        e = np.zeros(model.n)
        e[k] = h
        close(T[:, :, k], (J(q + e) - J(q - e)) / (2 * h), 1e-8)


@pytest.mark.parametrize('seed', range(8))
def test_hessians(seed):
    xml, model, rng = random_case(seed)
    o = Oracle(xml, model)
    n = model.n
    q = rng.uniform(-2, 2, n)
    pin.computeJointKinematicHessians(o.model, o.data, o.q(q))
    for joint in model.joint_names:
        link = model.joints[joint].child_link       # the joint frame is its child's frame
        for name, rf in RF.items():
            close(model.hessian(q, link, None, name).reshape(6, n, n),
                  pinocchio_hessian(o, joint, rf))


@pytest.mark.parametrize('seed', range(8))
def test_center_of_mass_and_operational_space_inertia(seed):
    xml, model, rng = random_case(seed, n=6, massless_fraction=0.0, branching=0.0)
    o = Oracle(xml, model)
    q = rng.uniform(-2, 2, model.n)
    pq = o.q(q)
    if model.tree.mass.sum() > 0:
        # Pinocchio's centerOfMass of a fixed-base model leaves out what is welded to the
        # root, as ours does by default
        close(model.center_of_mass(q), pin.centerOfMass(o.model, o.data, pq))
        close(model.center_of_mass_jacobian(q),
              o.cols(pin.jacobianCenterOfMass(o.model, o.data, pq)))
    pin.computeJointJacobians(o.model, o.data, pq)
    pin.updateFramePlacements(o.model, o.data)
    Minv = pin.computeMinverse(o.model, o.data, pq)
    Minv = np.triu(Minv) + np.triu(Minv, 1).T
    Minv = Minv[np.ix_(o.iv, o.iv)]
    compared = 0
    for link in model.link_names:
        J = o.cols(pin.getFrameJacobian(o.model, o.data, o.frame(link), pin.LOCAL))[:3]
        A = J @ Minv @ J.T
        if np.linalg.cond(A) > 1e6:
            continue                                  # singular: test_kinematics.py
        close(model.operational_space_inertia(q, link, frame='local', part='linear'),
              np.linalg.inv(A), 1e-8)
        compared += 1
    assert compared > 0


@pytest.mark.parametrize('seed', range(6))
def test_reduced_models_match_build_reduced_model(seed):
    xml, model, rng = random_case(seed)
    o = Oracle(xml, model)
    locked = list(rng.choice(model.joint_names, size=max(1, model.n // 2), replace=False))
    q = rng.uniform(-2, 2, model.n)
    values = {str(j): float(q[model.joint_names.index(j)]) for j in locked}
    reduced = model.locked(values)
    pmodel = pin.buildReducedModel(o.model, [o.jid[j] for j in locked], o.q(q))
    kept = [j for j in model.joint_names if j not in values]
    sub = Oracle(xml, reduced)
    sub.model = pmodel                               # same joint names, reduced model
    sub.joints = [pmodel.joints[pmodel.getJointId(j)] for j in kept]
    sub.jid = {j: pmodel.getJointId(j) for j in kept}
    sub.iv = np.array([j.idx_v for j in sub.joints], dtype=int)
    sub.data = pmodel.createData()
    qr = np.array([q[model.joint_names.index(j)] for j in kept])
    pq = sub.q(qr)
    M = pin.crba(pmodel, sub.data, pq)
    M = np.triu(M) + np.triu(M, 1).T
    close(reduced.mass_matrix(qr), M[np.ix_(sub.iv, sub.iv)])
    close(reduced.gravity_torque(qr),
          pin.computeGeneralizedGravity(pmodel, sub.data, pq)[sub.iv])
    pin.computeJointJacobians(pmodel, sub.data, pq)
    pin.updateFramePlacements(pmodel, sub.data)
    for link in model.link_names:
        fid = pmodel.getFrameId(link)
        close(reduced.link_pose(qr, link), sub.data.oMf[fid].homogeneous)
        close(reduced.jacobian(qr, link, None, 'local'),
              sub.cols(pin.getFrameJacobian(pmodel, sub.data, fid, pin.LOCAL)))


@pytest.mark.parametrize('seed', range(6))
def test_mimic_trees_are_pinocchio_at_the_coupled_configuration(seed):
    """
    Random trees with ``<mimic>`` tags: the kinematics in u are Pinocchio's at q = B u + d.

    Pinocchio is given the same text without mimic support (every joint free), B and d are
    written out from the tags (pinocchio_oracle.hand_coupling): poses at q, Jacobians J B,
    their time variation J'(q, B u') B, classical accelerations at (q, B u', B u''), the
    Hessians sum_ab T[:, a, b] B[a, s] B[b, k], the centre of mass and its Jacobian J_c B.
    """
    from types import SimpleNamespace

    from pinocchio_oracle import hand_coupling

    rng = np.random.default_rng(seed)
    xml = random_urdf(rng, 7, 2, mimic_fraction=0.4)
    model = RobotModel.from_urdf_string(xml)
    assert model.mimic_joints, 'these seeds draw mimic joints'
    points = {link: rng.uniform(-0.5, 0.5, 3) for link in model.link_names}
    o = Oracle(xml, SimpleNamespace(joint_names=model.full_joint_names), points)
    B, d = hand_coupling(model)
    n = model.n
    u, ud, udd = rng.uniform(-1.5, 1.5, (3, n))
    pq, pv, pa = o.q(B @ u + d), o.v(B @ ud), o.v(B @ udd)
    pin.forwardKinematics(o.model, o.data, pq, pv, pa)
    pin.updateFramePlacements(o.model, o.data)
    pin.computeJointJacobians(o.model, o.data, pq)
    pin.computeJointJacobiansTimeVariation(o.model, o.data, pq, pv)
    poses = model.link_poses(u)
    for k, link in enumerate(model.link_names):
        close(poses[k], o.data.oMf[o.frame(link)].homogeneous)
        close(model.link_pose(u, link), o.data.oMf[o.frame(link)].homogeneous)
        for point in (None, points[link]):
            fid = o.frame(link, point is not None)
            for name, rf in RF.items():
                close(model.jacobian(u, link, point, name),
                      o.cols(pin.getFrameJacobian(o.model, o.data, fid, rf)) @ B)
                close(model.jacobian_derivative(u, ud, link, point, name),
                      o.cols(pin.getFrameJacobianTimeVariation(o.model, o.data, fid, rf)) @ B,
                      1e-10)
                if name != 'world':
                    close(model.acceleration(u, ud, udd, link, point, name),
                          pin.getFrameClassicalAcceleration(o.model, o.data, fid, rf).vector,
                          1e-10)
    if model.tree.mass.sum() > 0:
        close(model.center_of_mass(u), pin.centerOfMass(o.model, o.data, pq))
        close(model.center_of_mass_jacobian(u),
              o.cols(pin.jacobianCenterOfMass(o.model, o.data, pq)) @ B)
    pin.computeJointKinematicHessians(o.model, o.data, pq)
    for joint in model.full_joint_names:
        link = model.description.joints[joint].child_link    # the joint frame
        for name, rf in RF.items():
            T = np.einsum('iab,as,bk->isk', pinocchio_hessian(o, joint, rf), B, B)
            close(model.hessian(u, link, None, name).reshape(6, n, n), T)
