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
Pinocchio (PyPI ``pin``) as an independent oracle, and where example-robot-data keeps its URDFs.

Pinocchio orders and names its coordinates its own way, so everything here goes by joint
name: our q (one angle per continuous joint) becomes Pinocchio's configuration (cos, sin for
a continuous joint, nq = 2, nv = 1), and its results come back in our joint order.
"""

from pathlib import Path

import numpy as np

from kron_dynamics import Contact
# the one Pinocchio adapter, shared with bench/ (hand_coupling: B, d written out from the tags)
from kron_dynamics.testing.pinocchio_pair import (hand_coupling,  # noqa: F401
                                                  PinocchioPair as PinPair, PROXIMAL,
                                                  robots_dir)


def dynamics(pin, model, names, q, qd, qdd) -> dict:
    """
    Return Pinocchio's M, G, tau and Coriolis vector for the named joints, in that order.

    ``model`` is a Pinocchio model (with or without mimic joints); ``names`` are its
    coordinates' joints, ``q``, ``qd``, ``qdd`` our values for them (continuous joints as
    one angle). The Coriolis vector is nonLinearEffects - G.
    """
    pq, pv, pa = pin.neutral(model), np.zeros(model.nv), np.zeros(model.nv)
    rows = []
    for k, name in enumerate(names):
        joint = model.joints[model.getJointId(name)]
        if joint.nq == 2:      # continuous: (cos, sin)
            pq[joint.idx_q], pq[joint.idx_q + 1] = np.cos(q[k]), np.sin(q[k])
        else:
            pq[joint.idx_q] = q[k]
        pv[joint.idx_v], pa[joint.idx_v] = qd[k], qdd[k]
        rows.append(joint.idx_v)
    data = model.createData()
    M = pin.crba(model, data, pq)
    M = np.triu(M) + np.triu(M, 1).T      # Pinocchio fills the upper triangle
    G = pin.computeGeneralizedGravity(model, data, pq)
    tau = pin.rnea(model, data, pq, pv, pa)
    nle = pin.nonLinearEffects(model, data, pq, pv)
    return {'M': M[np.ix_(rows, rows)], 'G': G[rows], 'tau': tau[rows],
            'coriolis': (nle - G)[rows]}


def close(ours, theirs, what, rtol=1e-9):
    """Assert agreement relative to the largest entry of the reference (at least 1)."""
    scale = max(1.0, float(np.max(np.abs(theirs), initial=0.0)))
    err = float(np.max(np.abs(np.asarray(ours) - theirs), initial=0.0)) / scale
    assert err < rtol, f'{what}: relative difference {err:.3g}'


def relative_error(ours, theirs, floor: float = 0.0) -> float:
    """Return max |ours - theirs| / max(max |theirs|, floor)."""
    ours, theirs = np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float)
    if not theirs.size:
        return 0.0
    scale = max(float(np.max(np.abs(theirs))), floor, 1e-300)
    return float(np.max(np.abs(ours - theirs))) / scale


def tag_coupling(model, xml: str):
    """
    B, d resolved here from the document's own ``<mimic>`` tags (rows: full_joint_names).

    Independent of the loader's resolution: each mimic row is multiplier times its primary's
    row (itself resolved the same way: chains) plus the offset; tags on fixed joints mean
    nothing, as in urdfdom.
    """
    import re
    import xml.etree.ElementTree as ET
    tags = {}
    # lstrip: blank lines before the XML declaration, which urdfdom (and the loader) accept;
    # prefixed names (drake:..., possibly never declared) renamed: only <joint>/<mimic> count
    text = re.sub(r'<(/?)(\w+):', r'<\1\2_', xml.lstrip())
    text = re.sub(r'(\s)(\w+):([\w-]+)=', r'\1\2_\3=', text)
    for joint in ET.fromstring(text).findall('joint'):
        mimic = joint.find('mimic')
        if mimic is not None and joint.get('type') != 'fixed':
            tags[joint.get('name')] = (mimic.get('joint'), float(mimic.get('multiplier', 1.0)),
                                       float(mimic.get('offset', 0.0)))
    rows = {}

    def row(name):
        if name not in rows:
            if name in tags:
                primary, a, b = tags[name]
                B_p, d_p = row(primary)
                rows[name] = (a * B_p, a * d_p + b)
            else:
                rows[name] = (np.eye(model.n)[model.joint_names.index(name)], 0.0)
        return rows[name]
    B = np.zeros((len(model.full_joint_names), model.n))
    d = np.zeros(len(model.full_joint_names))
    for i, name in enumerate(model.full_joint_names):
        B[i], d[i] = row(name)
    return B, d


def random_states(model, rng, count):
    """Yield (q, qd, qdd) with q within the joint limits (continuous joints: +-pi)."""
    lower = np.array([model.joints[j].lower for j in model.joint_names])
    upper = np.array([model.joints[j].upper for j in model.joint_names])
    lower = np.where(np.isfinite(lower), lower, -np.pi)
    upper = np.where(np.isfinite(upper), upper, np.pi)
    for _ in range(count):
        yield (rng.uniform(lower, upper), rng.uniform(-1, 1, model.n),
               rng.uniform(-1, 1, model.n))


def assert_agrees(pin, model, path, states: int = 2, rtol: float = 1e-9) -> str:
    """
    Assert M, G, tau, Coriolis vector and C*(q' kron q') agree with Pinocchio (rtol).

    With mimic joints: Pinocchio's mimic model where it accepts them (buildModelFromUrdf(path,
    True): nq = nv = 0 for the mimic joints), else the B-projection of its unconstrained
    model. Returns 'mimic' or 'projection' (which reference was used).
    """
    mimic_model = None
    if model.mimic_joints:
        try:
            mimic_model = pin.buildModelFromUrdf(str(path), True)
        except ValueError:     # "The parent joint of the mimic joint is not in the tree"
            mimic_model = None
    plain = pin.buildModelFromUrdf(str(path))
    B, d = tag_coupling(model, Path(path).read_text(encoding='utf-8'))
    for u, ud, udd in random_states(model, np.random.default_rng(0), states):
        if mimic_model is not None:
            ref = dynamics(pin, mimic_model, model.joint_names, u, ud, udd)
        else:
            full = dynamics(pin, plain, model.full_joint_names, B @ u + d, B @ ud, B @ udd)
            ref = {'M': B.T @ full['M'] @ B, 'G': B.T @ full['G'], 'tau': B.T @ full['tau'],
                   'coriolis': B.T @ full['coriolis']}
        # a quantity that vanishes (G of a planar robot, C of parallel axes: round-off of
        # 1e-14 M on both sides) is compared on 1e-3 of the scale of the other terms
        speed = np.max(np.abs(ud), initial=0.0)
        floor = 1e-3 * (np.max(np.abs(ref['M']), initial=1e-12) * (1 + speed ** 2)
                        + np.max(np.abs(ref['G']), initial=0.0))
        ours = {'M': model.mass_matrix(u), 'G': model.gravity_torque(u),
                'tau': model.inverse_dynamics(u, ud, udd),
                'coriolis': model.coriolis_vector(u, ud)}
        ours['C*(qd kron qd)'] = model.coriolis_star(u) @ np.kron(ud, ud)
        ref['C*(qd kron qd)'] = ref['coriolis']
        for key, value in ours.items():
            error = relative_error(value, ref[key], floor)
            assert error < rtol, f'{path}: {key} differs from Pinocchio by {error:.3g}'
    return 'mimic' if mimic_model is not None else 'projection'


# the kinds of robot of the one-model tests: kind -> (example-robot-data file, root joint,
# links to look at)
ONE_MODEL_CASES = {
    'fixed arm': ('ur_description/urdf/ur5_robot.urdf', 'fixed', ['tool0', 'forearm_link']),
    'mimic gripper': ('panda_description/urdf/panda.urdf', 'fixed',
                      ['panda_rightfinger', 'panda_link7']),
    'floating quadruped': ('solo_description/robots/solo12.urdf', 'floating',
                           ['FL_FOOT', 'HR_LOWER_LEG']),
    'planar base': ('tiago_description/robots/tiago.urdf', 'planar', ['arm_7_link']),
}
# their contacts in the tests of the dynamics in contact (a point on a fixed base's link)
ONE_MODEL_CONTACTS = {
    'fixed arm': [Contact('tool0', point=(0.01, 0.02, 0.03))],
    'mimic gripper': [Contact('panda_link7', point=(0.0, 0.02, 0.1))],
    'floating quadruped': [Contact('FL_FOOT'), Contact('HR_FOOT', dim=6)],
    'planar base': [Contact('arm_7_link', point=(0.0, 0.0, 0.05))],
}
_ROOT_JOINTS = {'fixed': None, 'floating': 'JointModelFreeFlyer', 'planar': 'JointModelPlanar'}


def build_case(kind):
    """Return (our model, PinPair) of a case of ONE_MODEL_CASES."""
    import pinocchio as pin
    from kron_dynamics import RobotModel
    path, base, _ = ONE_MODEL_CASES[kind]
    path = robots_dir() / path
    model = RobotModel.from_urdf_file(path, root_joint=base)
    root = _ROOT_JOINTS[base]
    pm = (pin.buildModelFromUrdf(str(path)) if root is None
          else pin.buildModelFromUrdf(str(path), getattr(pin, root)()))
    return model, PinPair(model, pm)


def random_state(model, seed):
    """Return (q, v, dv) at random: q by random_configuration, v and dv uniform in [-1, 1]."""
    rng = np.random.default_rng(seed)
    return (model.random_configuration(rng), rng.uniform(-1, 1, model.nv),
            rng.uniform(-1, 1, model.nv))
