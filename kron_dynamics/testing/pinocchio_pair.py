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
Our model and Pinocchio's of the same robot, coordinates mapped by joint name.

The one adapter that the tests (``test/pinocchio_oracle.py``) and the benchmarks (``bench/``)
compare with Pinocchio through. Pinocchio orders its coordinates by its own joint ids and
writes a continuous joint as (cos, sin); a free-flyer or planar root has our base
coordinates (x, y, z, qx, qy, qz, qw; x, y, cos, sin). Its model is either

- one coordinate per independent joint (a tree without mimic joints, or Pinocchio's mimic
  model, ``buildModelFromUrdf(path, mimic=True)``): then our velocity maps to its velocity by
  a permutation P, or
- the unconstrained tree, every mimic joint a coordinate: then P = blockdiag(I, B) with B of
  q = B u + d written out here from the resolved ``<mimic>`` tags (not the facade's own
  ``coupling()``), so results come back as Pinocchio's projected with B (M_u = P^T M P).

Pinocchio is imported only by ``constraint_models``; the caller passes its models.
"""

import importlib.metadata
from pathlib import Path

import numpy as np

# constraintDynamics' proximal settings (accuracy, mu, iterations) of every comparison
PROXIMAL = (1e-14, 1e-12, 20)


def symmetric_from_upper(M) -> np.ndarray:
    """Return M with its lower triangle filled from the upper one (Pinocchio's crba), in place."""
    M = np.asarray(M, dtype=float)
    lower = np.tril_indices(M.shape[0], -1)
    M[lower] = M.T[lower]
    return M


def hand_coupling(model):
    """Return B, d of q = B u + d from the resolved tags, rows in full_joint_names order."""
    B = np.zeros((len(model.full_joint_names), model.n))
    d = np.zeros(len(model.full_joint_names))
    for i, name in enumerate(model.full_joint_names):
        mimic = model.mimic_joints.get(name)
        if mimic is None:
            B[i, model.joint_names.index(name)] = 1.0
        else:
            B[i, model.joint_names.index(mimic.primary)] = mimic.multiplier
            d[i] = mimic.offset
    return B, d


class PinocchioPair:
    """
    Our model ``m`` and a Pinocchio model ``pm`` (data ``pd``) of one robot, mapped by name.

    ``q(q)``, ``v(v)``: our configuration, velocity (or acceleration) -> Pinocchio's;
    ``force``, ``matrix``, ``columns``: Pinocchio's generalized force, n x n matrix or
    6 x nv Jacobian -> ours (P^T f, P^T A P, J P); ``tangent``: a velocity or acceleration
    back to ours (only where P is a permutation).
    """

    def __init__(self, model, pmodel):
        self.m, self.pm, self.pd = model, pmodel, pmodel.createData()
        joints = self.joints_model = getattr(model, 'fixed', model)   # the joints' tree
        self.nbq, self.nbv = model.nq - model.n, model.nv - model.n
        if pmodel.nv == model.nv:      # one coordinate per independent joint
            names = list(joints.joint_names)
            B, d = np.eye(len(names)), np.zeros(len(names))
        elif pmodel.nv == self.nbv + len(joints.full_joint_names):
            names = list(joints.full_joint_names)
            B, d = hand_coupling(joints)
        else:
            raise ValueError(f'{model.name}: Pinocchio has nv {pmodel.nv}, ours {model.nv} '
                             f'with {len(joints.full_joint_names)} joints in the tree')
        self.names, self.B, self.d = names, B, d
        self.P = np.zeros((pmodel.nv, model.nv))
        self.P[:self.nbv, :self.nbv] = np.eye(self.nbv)
        self._joints = []
        for i, name in enumerate(names):
            joint = pmodel.joints[pmodel.getJointId(name)]
            if joint.nv != 1:
                raise ValueError(f"{model.name}: Pinocchio's joint {name!r} has nv {joint.nv}")
            self.P[joint.idx_v, self.nbv:] = B[i]
            self._joints.append((joint.idx_q, joint.nq))
        # P a permutation: iv[k] = Pinocchio's index of our velocity k
        P = self.P
        permutation = (P.shape[0] == P.shape[1] and np.all((P == 0.0) | (P == 1.0))
                       and np.all(P.sum(axis=0) == 1.0) and np.all(P.sum(axis=1) == 1.0))
        self.iv = np.argmax(P, axis=0) if permutation and P.size else (
            np.zeros(0, dtype=int) if permutation else None)

    def q(self, q) -> np.ndarray:
        """Return Pinocchio's configuration (continuous joints as cos, sin)."""
        q = np.asarray(q, dtype=float)
        pq = np.zeros(self.pm.nq)
        pq[:self.nbq] = q[:self.nbq]
        full = self.B @ q[self.nbq:] + self.d
        for (idx, nq), value in zip(self._joints, full):
            if nq == 2:
                pq[idx], pq[idx + 1] = np.cos(value), np.sin(value)
            else:
                pq[idx] = value
        return pq

    def v(self, v) -> np.ndarray:
        """Return Pinocchio's velocity (or acceleration) of ours."""
        return self.P @ np.asarray(v, dtype=float)

    def force(self, f) -> np.ndarray:
        """Return Pinocchio's generalized force, torques say, in our coordinates: P^T f."""
        return self.P.T @ np.asarray(f, dtype=float)

    def matrix(self, A) -> np.ndarray:
        """Return Pinocchio's nv x nv matrix, M or C say, in our coordinates: P^T A P."""
        return self.P.T @ np.asarray(A, dtype=float) @ self.P

    def columns(self, J) -> np.ndarray:
        """Return a Jacobian (rows x Pinocchio's nv) in our coordinates: J P."""
        return np.asarray(J, dtype=float) @ self.P

    def tangent(self, x) -> np.ndarray:
        """Return Pinocchio's velocity or acceleration in our order (P a permutation)."""
        if self.iv is None:
            raise ValueError(f'{self.m.name}: Pinocchio has the mimic joints as coordinates; '
                             'its velocities are not ours')
        return np.asarray(x, dtype=float)[self.iv]

    def constraint_models(self, contacts):
        """
        Return Pinocchio's (constraint models, datas) of our contacts, initialised.

        A 3-D contact is CONTACT_3D at its point, a 6-D one CONTACT_6D at its frame; λ's axes
        LOCAL or LOCAL_WORLD_ALIGNED as the contact's ``reference_frame`` says.
        """
        import pinocchio as pin
        pm = self.pm
        kinds, datas = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
        for c in contacts:
            frame = pm.frames[pm.getFrameId(c.link)]
            at = frame.placement * pin.SE3(np.eye(3), np.asarray(c.point, dtype=float))
            kinds.append(pin.RigidConstraintModel(
                pin.ContactType.CONTACT_3D if c.dim == 3 else pin.ContactType.CONTACT_6D, pm,
                frame.parentJoint, at,
                pin.LOCAL if c.reference_frame == 'local' else pin.LOCAL_WORLD_ALIGNED))
        for kind in kinds:
            datas.append(kind.createData())
        pin.initConstraintDynamics(pm, self.pd, kinds, datas)
        return kinds, datas


def robots_dir():
    """Return example-robot-data's ``robots`` directory (version 6 is data only), or None."""
    try:
        files = importlib.metadata.files('example-robot-data') or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in files:
        parts = Path(str(f)).parts
        if 'robots' in parts and parts[-1].endswith('.urdf'):
            i = parts.index('robots')
            path = Path(f.locate()).parents[len(parts) - i - 2]
            if path.is_dir():
                return path
    return None
