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

import importlib.metadata
from pathlib import Path

import numpy as np


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


def relative_error(ours, theirs, floor: float = 0.0) -> float:
    """Return max |ours - theirs| / max(max |theirs|, floor)."""
    ours, theirs = np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float)
    if not theirs.size:
        return 0.0
    scale = max(float(np.max(np.abs(theirs))), floor, 1e-300)
    return float(np.max(np.abs(ours - theirs))) / scale
