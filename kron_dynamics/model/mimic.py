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
Mimic joints as holonomic constraints: q = B u + d (004 section 5, with a constant B).

A URDF ``<mimic joint="p" multiplier="a" offset="b"/>`` on joint m says q_m = a q_p + b.
The model's coordinates u are the independent joints (those without a ``<mimic>``); every
movable joint's position is then q = B u + d with a constant n_full x n matrix B, one
nonzero entry per row: chains of mimics (a mimic of a mimic) are resolved here, a primary may
sit in another branch of the tree, and a prismatic joint may follow a revolute one (the
multiplier then has units m/rad). This module resolves the tags; B and d, and the
projections of the results (M_u = B^T M B, ...), are ``model/coordinates.py``'s JointMap.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
import math

from ..errors import ModelError


@dataclass(frozen=True)
class MimicJoint:
    """
    A joint that follows an independent one: q[name] = multiplier * q[primary] + offset.

    ``primary``, ``multiplier`` and ``offset`` are resolved through chains of mimics to an
    independent joint; ``tag`` is the ``<mimic>`` element as written: (joint, multiplier,
    offset).
    """

    name: str
    primary: str
    multiplier: float
    offset: float
    tag: tuple


def resolve_mimics(declared: Mapping[str, tuple], movable: Sequence[str],
                   fixed: Sequence[str], source: str) -> dict[str, MimicJoint]:
    """
    Resolve the ``<mimic>`` tags of movable joints: {mimic joint: MimicJoint}.

    ``declared`` maps each movable joint with a ``<mimic>`` to (joint, multiplier, offset)
    as written (multiplier and offset finite numbers). Raises ModelError naming the joints
    and the tag: primaries that do not exist (all of them, in one message), a fixed
    primary, a cycle of mimics.
    """
    movable_set, fixed_set = set(movable), set(fixed)
    unknown = [(name, tag[0]) for name, tag in declared.items()
               if tag[0] not in movable_set and tag[0] not in fixed_set]
    if unknown:
        listed = ', '.join(f"joint '{m}' <mimic joint=\"{p}\">" for m, p in unknown)
        missing = sorted({p for _, p in unknown})
        raise ModelError(f'{source}: <mimic> names joint(s) that do not exist: {listed} '
                         f'(no joint named {", ".join(repr(p) for p in missing)})')
    for name, (primary, _, _) in declared.items():
        if primary in fixed_set:
            raise ModelError(f"{source}: joint '{name}': <mimic joint=\"{primary}\"> names a "
                             'fixed joint, which has no position to follow')
    resolved = {}
    for name in declared:
        chain = [name]
        multiplier, offset = 1.0, 0.0
        joint = name
        while joint in declared:       # q_joint = a q_next + b, composed along the chain
            following, a, b = declared[joint]
            multiplier, offset = multiplier * a, multiplier * b + offset
            joint = following
            if joint in chain:
                loop = chain[chain.index(joint):] + [joint]
                raise ModelError(f'{source}: joint \'{name}\': <mimic> tags form a cycle: '
                                 + ' -> '.join(loop))
            chain.append(joint)
        if not (math.isfinite(multiplier) and math.isfinite(offset)):
            raise ModelError(f"{source}: joint '{name}': the chain of <mimic> tags "
                             f"{' -> '.join(chain)} gives a non-finite multiplier or offset")
        resolved[name] = MimicJoint(name, joint, multiplier, offset, tuple(declared[name]))
    return resolved
