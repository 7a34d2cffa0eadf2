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
The numeric tests' shared helpers: one random model, one closeness check, one order map.

(Pinocchio's side of the comparisons lives in pinocchio_oracle.py.)
"""

import numpy as np

from kron_dynamics import RobotModel
from kron_dynamics.testing.random_urdf import random_urdf


def close(a, b, tol=1e-11):
    """Assert |a - b| <= tol times the largest entry of b (at least 1), entry by entry."""
    np.testing.assert_allclose(a, b, rtol=0, atol=tol * max(1.0, np.abs(b).max(initial=0)))


def random_model(seed, n=None, min_joints=1, max_joints=9, fixed=None, max_fixed=4,
                 shuffle=True, armature=False, root_joint=None, **urdf_options):
    """
    Return (model, rng): a random URDF tree (kron_dynamics.testing.random_urdf).

    ``n`` movable joints (drawn from [min_joints, max_joints) if None); ``fixed`` fixed
    joints (a number, a function of n, or drawn from [0, max_fixed) if None); the joints in
    a shuffled order with ``shuffle``; armature uniform in [0, 0.5) per joint with
    ``armature``; on a ``root_joint`` ('floating', 'planar') or fixed; ``urdf_options`` go
    to random_urdf (branching, mimic_fraction, ...). The returned rng continues the seeded
    stream, for the test's states.
    """
    rng = np.random.default_rng(seed)
    n = int(rng.integers(min_joints, max_joints)) if n is None else n
    if fixed is None:
        fixed = int(rng.integers(0, max_fixed))
    elif callable(fixed):
        fixed = fixed(n)
    xml = random_urdf(rng, n, fixed, **urdf_options)
    names = RobotModel.from_urdf_string(xml).joint_names
    if shuffle:
        names = list(rng.permutation(names))
    arm = rng.uniform(0.0, 0.5, len(names)) if armature else None
    return RobotModel.from_urdf_string(xml, joint_names=names, armature=arm,
                                       root_joint=root_joint), rng


def to_internal(model, x):
    """Return a per-joint vector in the model's internal (tree) order."""
    v = np.empty(model.n)
    v[model._perm] = x
    return v


def with_world_joint(xml: str, joint: str, xyz: str, rpy: str) -> str:
    """Return a URDF with a world link joined to its root by a ``joint`` (floating, planar)."""
    root = RobotModel.from_urdf_string(xml).root_link
    head, _, body = xml.partition('<link ')
    return head + f'''<link name="world"/>
      <joint name="free" type="{joint}"><parent link="world"/><child link="{root}"/>
        <origin xyz="{xyz}" rpy="{rpy}"/></joint>
      <link ''' + body


def step_differences(model, step, q, v, u, h=1e-6):
    """
    Return d(q+, v+)/d(q, v, u) of a step (q, v, u) -> (q+, v+) by central differences.

    q moved along integrate, q+ compared by difference: the tangent-space columns that
    linearize(..., dt) gives, (2 nv) x (2 nv + n).
    """
    nv = model.nv
    q1, v1 = step(q, v, u)
    columns = []
    for k in range(2 * nv + len(u)):
        e = np.zeros(2 * nv + len(u))
        e[k] = h
        ends = []
        for sign in (1.0, -1.0):
            qn, vn = step(model.integrate(q, sign * e[:nv], 1.0), v + sign * e[nv:2 * nv],
                          u + sign * e[2 * nv:])
            ends.append(np.concatenate([model.difference(q1, qn), vn - v1]))
        columns.append((ends[0] - ends[1]) / (2 * h))
    return np.stack(columns, axis=1)


def fitted_files(prior, directory, samples: int, seed: int):
    """
    Return (fit, params, urdf): a least-squares fit of prior's own torques, and its files.

    ``samples`` random states (seed ``seed``), noise-free; ``params`` and ``urdf`` are the
    paths of its to_params and to_urdf files, written in ``directory``.
    """
    from kron_dynamics.identification import identify
    rng = np.random.default_rng(seed)
    q, qd, qdd = (rng.uniform(-1.0, 1.0, (samples, prior.n)) for _ in range(3))
    fit = identify(prior, q, prior.inverse_dynamics(q, qd, qdd), qd, qdd,
                   friction=(), method='least_squares')
    params, urdf = directory / 'fitted.yaml', directory / 'fitted.urdf'
    fit.to_params(params)
    fit.to_urdf(urdf)
    return fit, params, urdf
