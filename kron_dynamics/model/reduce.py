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
Reduced models: a description with some movable joints locked (Pinocchio's buildReducedModel).

A locked joint becomes a fixed joint at the given coordinate: its body is welded to its
parent (its mass, centre of mass and inertia merged into the parent's, or into the mass
welded to the root), its children hang from the parent with the locked transform folded into
their joint origins, and every link frame it carried moves to the parent's body.
"""

from collections.abc import Mapping
import dataclasses
import logging
import math

import numpy as np

from ..errors import ModelError
from .inertia import merge_inertias
from .tree import joint_transform, KinematicTree
from .urdf import RobotDescription

logger = logging.getLogger('kron_dynamics')


def _check_values(description: RobotDescription, values) -> dict:
    if not isinstance(values, Mapping):
        raise ModelError('locked joints must be a mapping {joint name: coordinate}, got '
                         f'{values!r}')
    movable = description.joint_names
    unknown = [j for j in values if j not in movable]
    if unknown:
        raise ModelError(f'cannot lock {unknown}: not movable joints of '
                         f"'{description.name}'; movable joints are {list(movable)}")
    checked = {}
    for joint, value in values.items():
        try:
            v = float(value)
        except (TypeError, ValueError):
            v = math.nan
        if not math.isfinite(v):
            raise ModelError(f"cannot lock joint '{joint}' at {value!r}: need a finite number "
                             '(rad or m)')
        info = description.joints[joint]
        if not info.lower <= v <= info.upper:
            logger.warning("joint '%s' locked at %g, outside its limits [%g, %g]", joint, v,
                           info.lower, info.upper)
        checked[joint] = v
    return checked


def lock_joints(description: RobotDescription, values: Mapping[str, float]) -> RobotDescription:
    """
    Return the description with the joints of ``values`` fixed at those coordinates.

    A mimic joint is not a coordinate and cannot be locked itself; locking its primary locks
    it too, at multiplier * value + offset.
    """
    mimics = description.mimic_joints
    followers = [j for j in values if j in mimics] if isinstance(values, Mapping) else []
    if followers:
        raise ModelError(f'cannot lock {followers}: mimic joint(s) of '
                         f'{sorted({mimics[j].primary for j in followers})}; lock those')
    values = _check_values(description, values)
    for mimic in mimics.values():
        if mimic.primary in values:
            values[mimic.name] = mimic.multiplier * values[mimic.primary] + mimic.offset
    tree = description.tree
    locked = {description.joint_names.index(j): v for j, v in values.items()}
    eye, zero = np.eye(3), np.zeros(3)
    where = []                 # per old body: (new body or -1, R, p) of its frame in that body
    parent, revolute, axis, R0, p0, names, parts = [], [], [], [], [], [], []
    root_parts = [description.root_inertia]
    for i in range(tree.n):
        par = int(tree.parent[i])
        body, Rb, pb = where[par] if par >= 0 else (-1, eye, zero)
        own = (float(tree.mass[i]), tree.com[i], tree.inertia[i])
        if i in locked:
            Rl, pl = joint_transform(tree, i, locked[i])
            R, p = Rb @ Rl, pb + Rb @ pl
            where.append((body, R, p))
            part = (own[0], R @ own[1] + p, R @ own[2] @ R.T)
            (parts[body] if body >= 0 else root_parts).append(part)
            continue
        where.append((len(names), eye, zero))
        parent.append(body)
        revolute.append(bool(tree.revolute[i]))
        axis.append(tree.axis[i])
        R0.append(Rb @ tree.R0[i])
        p0.append(pb + Rb @ tree.p0[i])
        names.append(description.joint_names[i])
        parts.append([own])
    inertias = [merge_inertias(body_parts) for body_parts in parts]
    n = len(names)
    new_tree = KinematicTree(
        parent=np.array(parent, dtype=int).reshape(n), revolute=np.array(revolute, dtype=bool),
        axis=np.array(axis, dtype=float).reshape(n, 3), R0=np.array(R0).reshape(n, 3, 3),
        p0=np.array(p0).reshape(n, 3), mass=np.array([m for m, _, _ in inertias]),
        com=np.array([c for _, c, _ in inertias]).reshape(n, 3),
        inertia=np.array([inertia for _, _, inertia in inertias]).reshape(n, 3, 3),
        gravity=tree.gravity)
    frames = {}
    for link, (b, R, p) in description.frames.items():
        if b >= 0:
            b, Rw, pw = where[b]
            R, p = Rw @ R, pw + Rw @ p
        frames[link] = (b, np.array(R), np.array(p))
    return dataclasses.replace(
        description, tree=new_tree, joint_names=tuple(names),
        joints={j: description.joints[j] for j in names}, frames=frames,
        root_inertia=merge_inertias(root_parts),
        mimic_joints={j: m for j, m in mimics.items() if j not in values},
        locked_joints={**description.locked_joints, **values})
