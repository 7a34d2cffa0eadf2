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
URDF text to a validated kinematic tree: a strict reader of what dynamics uses.

Only what the dynamics reads can fail a load, with a :class:`~kron_dynamics.errors.ModelError`
naming the file and the link, joint, element or field: robot, link and joint names, joint
types, parent and child, origin, axis, limit, dynamics, mimic, inertial (mass, origin,
inertia), and the XML size limits. Everything else (visual, collision, material, texture,
transmission in any format, gazebo, ros2_control, sensors, calibration, safety_controller,
unknown elements and attributes) is ignored; at debug level one line per kind of element
says how many were ignored. The yardstick is urdfdom, the C++ parser behind
robot_state_publisher, RViz, MoveIt and Pinocchio: what it accepts loads here, unless the
dynamics it describes is wrong.

The document is read from the guarded ElementTree directly. urdf_parser_py, the reader of
earlier versions, is not used: its reflection parser validates every element, so a
``<texture>`` without a filename or an old-style ``<transmission>`` (iCub, Romeo, PR2)
ended the load, and it costs about 40 us per element, ten times Pinocchio's whole load of a
typical robot (bench/bench_loading.py).
"""

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
import logging
import math
import re
import sys
from types import MappingProxyType
import xml.etree.ElementTree as ET

import numpy as np

from ..errors import ModelError
from .inertia import check_link_inertias, INERTIA_CHECKS, merge_inertias, warn_unusual
from .mimic import MimicJoint, resolve_mimics
from .rotations import rpy_to_matrix
from .tree import KinematicTree

logger = logging.getLogger('kron_dynamics')

SUPPORTED_TYPES = ('revolute', 'continuous', 'prismatic', 'fixed')
# joints with more than one coordinate: only as the root joint, between a massless world link
# and the robot's base (RobotDescription.root_joint; the base model is then floating/planar)
ROOT_JOINT_TYPES = ('floating', 'planar')
# the children of <joint> that dynamics reads, per joint kind (each at most once)
JOINT_ELEMENTS = ('origin', 'parent', 'child', 'axis', 'limit', 'dynamics', 'mimic')
FIXED_JOINT_ELEMENTS = ('origin', 'parent', 'child')
INERTIAL_ELEMENTS = ('origin', 'mass', 'inertia')
INERTIA_KEYS = ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz')
# Size limits: a URDF beyond them is refused before it can exhaust time or memory (the tree
# keeps n x n arrays; M itself is n x n). Real robots have at most a few hundred links.
MAX_LINKS = 5000
MAX_ELEMENTS = 200_000
MAX_DEPTH = 64
MAX_NODE_CHARACTERS = 10_000_000     # longest text, comment or attribute value
XML_CHUNK = 1 << 16
# Largest |value| accepted for lengths [m], masses [kg] and inertias [kg m^2]: beyond it a
# number is garbage or in the wrong units, and products in the dynamics could overflow.
MAX_MAGNITUDE = 1e15
# shared read-only identity pose (most frames and inertial origins)
_FLOAT_MAX = sys.float_info.max
_EYE = np.eye(3)
_ZERO = np.zeros(3)
_EYE.setflags(write=False)
_ZERO.setflags(write=False)
# attribute text -> its numbers, for texts whose numbers are all within +-MAX_MAGNITUDE
# (valid wherever numbers are read): real URDFs repeat "0 0 0", "0", "1" ... thousands of times
_PARSED: dict = {}
MAX_PARSED = 10_000
_NO_INERTIA = np.zeros((3, 3))
_NO_INERTIA.setflags(write=False)


@dataclass(frozen=True)
class JointInfo:
    """What the URDF says about one movable joint (limits in SI units, +-inf if none)."""

    name: str
    type: str
    parent_link: str
    child_link: str
    axis: tuple
    lower: float
    upper: float
    effort: float
    velocity: float
    damping: float
    friction: float


@dataclass(frozen=True)
class RobotDescription:
    """
    A validated URDF: its kinematic tree and the names of its joints and links (read-only).

    ``joint_names`` are the movable joints in the tree's order (depth first, children in
    document order), one per body of ``tree``; ``frames`` maps every link to (body index,
    or -1 for the root; R; p): the link frame in the frame of the body that carries it.
    ``mimic_joints`` maps each movable joint with a ``<mimic>`` to its resolved coupling
    (:mod:`~kron_dynamics.model.mimic`); ``independent_joints`` are the others, the model's
    coordinates.
    ``root_inertia`` is (mass, centre of mass, central inertia) of what is welded to the
    root link, in the root frame (with a fixed root it never moves, so it is not in the tree).
    ``root_joint`` is (type, name, world link, R, p) of a ``floating`` or ``planar`` joint
    that joins a massless world link to the root link (the base), None without one; the
    world link and that joint are not in the tree or the frames. ``document``: the URDF
    text it was read from (the identification's ``to_urdf`` edits a copy).
    ``locked_joints`` maps each movable joint of the URDF that :func:`~kron_dynamics.model.
    reduce.lock_joints` fixed (a locked primary's mimic joints too) to its coordinate.
    """

    name: str
    tree: KinematicTree
    joint_names: tuple
    joints: Mapping[str, JointInfo]
    frames: Mapping[str, tuple]
    root_link: str
    total_mass: float
    root_inertia: tuple = (0.0, np.zeros(3), np.zeros((3, 3)))
    mimic_joints: Mapping[str, MimicJoint] = field(default_factory=dict)
    root_joint: tuple | None = None
    document: str = ''
    locked_joints: Mapping[str, float] = field(default_factory=dict)
    independent_joints: tuple = field(init=False)

    def __post_init__(self):
        mass, com, inertia = self.root_inertia
        com, inertia = np.array(com, dtype=float), np.array(inertia, dtype=float)
        com.setflags(write=False)
        inertia.setflags(write=False)
        object.__setattr__(self, 'root_inertia', (float(mass), com, inertia))
        object.__setattr__(self, 'joint_names', tuple(self.joint_names))
        object.__setattr__(self, 'joints', MappingProxyType(dict(self.joints)))
        for _, R, p in self.frames.values():
            R.setflags(write=False)
            p.setflags(write=False)
        object.__setattr__(self, 'frames', MappingProxyType(dict(self.frames)))
        unknown = [m for m in self.mimic_joints if m not in self.joints]
        if unknown:
            raise ModelError(f'mimic joints {unknown} are not movable joints of the model')
        object.__setattr__(self, 'mimic_joints', MappingProxyType(dict(self.mimic_joints)))
        object.__setattr__(self, 'locked_joints', MappingProxyType(dict(self.locked_joints)))
        object.__setattr__(self, 'independent_joints', tuple(
            j for j in self.joint_names if j not in self.mimic_joints))


# ----------------------------------------------------------------- XML
class _Refused(Exception):
    """Raised from inside the XML parser to stop it; the message says why."""


class _GuardedTreeBuilder(ET.TreeBuilder):
    """An ElementTree builder that refuses DTDs and documents too large or too deep."""

    def __init__(self):
        super().__init__()
        self.depth = 0
        self.elements = 0
        self.text = 0

    def start(self, tag, attrs):
        self.depth += 1
        self.elements += 1
        self.text = 0
        if self.depth > MAX_DEPTH:
            raise _Refused(f'XML elements nested deeper than {MAX_DEPTH} levels (at <{tag}>)')
        if self.elements > MAX_ELEMENTS:
            raise _Refused(f'more than {MAX_ELEMENTS} XML elements')
        for value in attrs.values():
            if len(value) > MAX_NODE_CHARACTERS:
                raise _Refused(f'an attribute value of <{tag}> is longer than '
                               f'{MAX_NODE_CHARACTERS} characters')
        return super().start(tag, attrs)

    def end(self, tag):
        self.depth -= 1
        self.text = 0
        return super().end(tag)

    def data(self, data):
        self.text += len(data)
        if self.text > MAX_NODE_CHARACTERS:
            raise _Refused(f'a text node longer than {MAX_NODE_CHARACTERS} characters')
        return super().data(data)

    def comment(self, text):
        if len(text) > MAX_NODE_CHARACTERS:
            raise _Refused(f'a comment longer than {MAX_NODE_CHARACTERS} characters')
        self.text = 0
        return super().comment(text)

    def doctype(self, name, pubid, system):
        raise _Refused('a <!DOCTYPE> declaration is not allowed in a URDF (its entities could '
                       'expand without bound or read local files)')


_PREFIX_USED = re.compile(r'[<\s/]([A-Za-z_][\w.-]*):[A-Za-z_]')
_PREFIX_DECLARED = re.compile(r'xmlns:([A-Za-z_][\w.-]*)\s*=')


def _declare_prefixes(xml: str, source: str) -> str | None:
    """
    Return xml with its undeclared namespace prefixes declared on <robot>, or None.

    Drake's URDFs use ``drake:`` elements and attributes without declaring the prefix; such
    a document is not namespace-well-formed, but urdfdom and Pinocchio read it (they ignore
    what they do not know, as dynamics here does). One warning names the prefixes.
    """
    used = set(_PREFIX_USED.findall(xml)) - set(_PREFIX_DECLARED.findall(xml)) - {
        'xml', 'xmlns'}
    robot = re.search(r'<robot\b', xml)
    if not used or robot is None:
        return None
    logger.warning('%s: XML namespace prefix(es) %s used but never declared (as Drake '
                   'writes them): declared here; what they mark is not read', source,
                   sorted(used))
    declarations = ''.join(f' xmlns:{p}="urn:kron_dynamics:undeclared:{p}"'
                           for p in sorted(used))
    return xml[:robot.end()] + declarations + xml[robot.end():]


def _parse_xml(xml: str, source: str) -> ET.Element:
    """
    Parse XML text within the size limits; ModelError for malformed or refused documents.

    A document that has no ``<!DOCTYPE``, at most MAX_ELEMENTS '<' and at most
    MAX_NODE_CHARACTERS characters cannot exceed any limit but the nesting depth, which is
    harmless at that size (nothing here recurses): the compiled builder reads it. Anything
    else goes through the guarded builder, which stops at the first element past a limit.
    """
    guarded = ('<!DOCTYPE' in xml or len(xml) > MAX_NODE_CHARACTERS
               or xml.count('<') > MAX_ELEMENTS)
    parser = ET.XMLParser(target=_GuardedTreeBuilder()) if guarded else ET.XMLParser()
    try:
        if not guarded:
            parser.feed(xml)
            return parser.close()
        # In growing chunks: fed at once, expat would go on reading (and, for deep nesting,
        # allocating) to the end after a refusal; fixed small chunks would make it rescan a
        # long token (comment, attribute) once per chunk, quadratic time.
        start, size = 0, XML_CHUNK
        while start < len(xml):
            parser.feed(xml[start:start + size])
            start, size = start + size, 2 * size
        return parser.close()
    except ET.ParseError as exc:
        declared = _declare_prefixes(xml, source) if 'unbound prefix' in str(exc) else None
        if declared is not None:
            return _parse_xml(declared, source)
        raise ModelError(f'{source}: malformed XML: {exc}') from None
    except UnicodeError as exc:     # e.g. lone surrogates in the text
        raise ModelError(f'{source}: malformed XML: {exc}') from None
    except _Refused as exc:
        raise ModelError(f'{source}: refused: {exc}') from None


# ----------------------------------------------------------------- fields
class _Reader:
    """Read the fields dynamics uses from one document; every error names source and owner."""

    def __init__(self, source: str, debug: bool):
        self.source = source
        self.ignored = Counter() if debug else None
        self.fixed_mimics = []      # fixed joints whose <mimic> is ignored (debug only)
        self.inverted = []          # joints whose <limit> has lower > upper (one warning)
        self.point_masses = []      # links whose <inertial> has a mass but no <inertia>

    def fail(self, owner: str, message: str):
        raise ModelError(f'{self.source}: {owner}: {message}')

    def ignore(self, kind: str, count: int = 1):
        if self.ignored is not None:
            self.ignored[kind] += count

    def numbers(self, elem, attr: str, count: int, owner: str, bounded: bool = False,
                infinite: bool = False):
        """Return the numbers of an attribute (None if absent), checked."""
        text = elem.get(attr)
        if text is None:
            return None
        values = _PARSED.get(text)
        if values is not None and len(values) == count:
            return values               # seen before: valid in every mode
        try:
            values = list(map(float, text.split()))
        except ValueError:
            self.fail(owner, f'<{elem.tag} {attr}="{text}"> is not numeric')
        if len(values) != count:
            self.fail(owner, f'<{elem.tag} {attr}="{text}"> needs {count} number(s), got '
                             f'{len(values)}')
        limit = MAX_MAGNITUDE if bounded else _FLOAT_MAX
        for v in values:
            if -limit <= v <= limit and not infinite:
                continue                # the common case: one comparison (False for NaN, inf)
            if infinite:
                if v != v:
                    self.fail(owner, f'<{elem.tag} {attr}="{text}"> is NaN')
            elif not math.isfinite(v):
                self.fail(owner, f'<{elem.tag} {attr}="{text}"> is not finite')
            if bounded and abs(v) > MAX_MAGNITUDE:
                self.fail(owner, f'<{elem.tag} {attr}="{text}"> is out of range (|value| > '
                                 f'{MAX_MAGNITUDE:g}; SI units expected)')
        if all(-MAX_MAGNITUDE <= v <= MAX_MAGNITUDE for v in values):
            if len(_PARSED) >= MAX_PARSED:
                _PARSED.clear()
            _PARSED[text] = values = tuple(values)
        return values

    def required(self, elem, attr: str, count: int, owner: str, **kw):
        values = self.numbers(elem, attr, count, owner, **kw)
        if values is None:
            self.fail(owner, f'<{elem.tag}> has no {attr} attribute')
        return values

    def children(self, elem, wanted, owner: str, where: str = '') -> dict:
        """Return the wanted children by tag (at most one each); count the others."""
        found = {}
        for child in elem:
            tag = child.tag
            if tag in wanted:
                if tag in found:
                    first = found[tag]
                    if child.attrib != first.attrib or len(child) or len(first):
                        raise ModelError(f'{self.source}: {owner}{where} has more than one '
                                         f'<{tag}> element')
                    # a copy-paste repeat (PyBullet's spirit40): urdfdom reads the first
                    logger.warning('%s: %s%s has two identical <%s> elements: the first is '
                                   'used, as urdfdom does', self.source, owner, where, tag)
                    continue
                found[tag] = child
            elif self.ignored is not None:
                self.ignored[f'{elem.tag}/{tag}'] += 1
        return found

    def pose(self, origin, owner: str):
        """Return (R, p) of an <origin> element (the shared read-only identity if None)."""
        if origin is None:
            return _EYE, _ZERO
        xyz = self.numbers(origin, 'xyz', 3, owner, bounded=True)
        rpy = self.numbers(origin, 'rpy', 3, owner)
        R = rpy_to_matrix(rpy) if rpy is not None and any(rpy) else _EYE
        return R, (np.array(xyz) if xyz is not None and any(xyz) else _ZERO)


@dataclass
class _Joint:
    """The fields of one <joint> that dynamics reads (positions in the parent link frame)."""

    name: str
    type: str
    parent: str
    child: str
    R: np.ndarray
    p: np.ndarray
    elements: dict


def _read_joint(elem, reader: _Reader) -> _Joint:
    name = elem.get('name')
    owner = f"joint '{name}'"
    kind = elem.get('type')
    if kind is None:
        reader.fail(owner, 'has no type attribute')
    if kind not in SUPPORTED_TYPES + ROOT_JOINT_TYPES:
        reader.fail(owner, f"unknown joint type '{kind}' (URDF joint types are "
                           f"{', '.join(SUPPORTED_TYPES + ROOT_JOINT_TYPES)})")
    wanted = (FIXED_JOINT_ELEMENTS if kind == 'fixed' else
              FIXED_JOINT_ELEMENTS + ('axis',) if kind in ROOT_JOINT_TYPES else JOINT_ELEMENTS)
    found = reader.children(elem, wanted, f"joint '{name}'")
    if kind == 'fixed' and reader.ignored is not None and elem.find('mimic') is not None:
        reader.fixed_mimics.append(name)
    links = []
    for role in ('parent', 'child'):
        tag = found.get(role)
        if tag is None:
            reader.fail(owner, f'has no <{role}> element')
        link = tag.get('link')
        if link is None:
            reader.fail(owner, f'<{role}> has no link attribute')
        if not link:
            reader.fail(owner, f'has no {role} link')
        links.append(link)
    R, p = reader.pose(found.get('origin'), owner)
    return _Joint(name, kind, links[0], links[1], R, p, found)


def _joint_axis(joint: _Joint, reader: _Reader) -> np.ndarray:
    owner = f"joint '{joint.name}'"
    axis_elem = joint.elements.get('axis')
    if axis_elem is None:
        return np.array([1.0, 0.0, 0.0])
    x, y, z = reader.required(axis_elem, 'xyz', 3, owner)
    norm = math.hypot(x, y, z)      # no overflow for huge components
    if not norm > 1e-12:
        reader.fail(owner, '<axis> is zero')
    biggest = max(abs(x), abs(y), abs(z))    # scaled first: a unit vector even if norm = inf
    x, y, z = x / biggest, y / biggest, z / biggest
    norm = math.hypot(x, y, z)
    return np.array((x / norm, y / norm, z / norm))


def _joint_info(joint: _Joint, axis, reader: _Reader) -> JointInfo:
    owner = f"joint '{joint.name}'"
    lower, upper, effort, velocity = -math.inf, math.inf, math.inf, math.inf
    limit = joint.elements.get('limit')
    if limit is not None:
        effort = reader.required(limit, 'effort', 1, owner, infinite=True)[0]
        velocity = reader.required(limit, 'velocity', 1, owner, infinite=True)[0]
        bounds = [reader.numbers(limit, key, 1, owner, infinite=True)
                  for key in ('lower', 'upper')]
        for field_, value in (('effort', effort), ('velocity', velocity)):
            if value < 0:
                reader.fail(owner, f'<limit> {field_} {value} must be >= 0')
    if joint.type in ('revolute', 'prismatic'):
        if limit is None:
            reader.fail(owner, f'a {joint.type} joint needs a <limit> element')
        lower, upper = (0.0 if b is None else b[0] for b in bounds)   # urdfdom's defaults
        if lower > upper:       # urdfdom and Pinocchio load it; some simulators mean no limit
            reader.inverted.append(f'{joint.name} ({lower:g} > {upper:g})')
            lower, upper = -math.inf, math.inf
        if lower == math.inf or upper == -math.inf:
            reader.fail(owner, f'<limit> lower {lower}, upper {upper} leave no position')
    damping = friction = 0.0
    dynamics = joint.elements.get('dynamics')
    if dynamics is not None:
        damping, friction = (
            (reader.numbers(dynamics, key, 1, owner) or [0.0])[0]
            for key in ('damping', 'friction'))
        for field_, value in (('damping', damping), ('friction', friction)):
            if value < 0:
                reader.fail(owner, f'<dynamics> {field_} {value} must be >= 0')
    return JointInfo(joint.name, joint.type, joint.parent, joint.child, tuple(axis),
                     lower, upper, effort, velocity, damping, friction)


def _mimic_tag(joint: _Joint, reader: _Reader):
    """Return (joint, multiplier, offset) of a movable joint's <mimic>, or None."""
    mimic = joint.elements.get('mimic')
    if mimic is None:
        return None
    owner = f"joint '{joint.name}'"
    primary = mimic.get('joint')
    if not primary:
        reader.fail(owner, '<mimic> has no joint attribute')
    multiplier = reader.numbers(mimic, 'multiplier', 1, owner)
    offset = reader.numbers(mimic, 'offset', 1, owner)
    return (primary, 1.0 if multiplier is None else multiplier[0],
            0.0 if offset is None else offset[0])


def _link_inertia(link, reader: _Reader):
    """Return (mass, com, inertia in the inertial frame, R of that frame) of a link, or None."""
    owner = f"link '{link.get('name')}'"
    inertials = link.findall('inertial') if reader.ignored is None else None
    if inertials is not None and len(inertials) < 2:
        inertial = inertials[0] if inertials else None
    else:
        inertial = reader.children(link, ('inertial',), owner).get('inertial')
    if inertial is None:
        return None
    parts = reader.children(inertial, INERTIAL_ELEMENTS, owner, ' <inertial>')
    mass_elem = parts.get('mass')
    if mass_elem is None:
        reader.fail(owner, '<inertial> has no <mass> element')
    mass = reader.required(mass_elem, 'value', 1, owner, bounded=True)[0]
    if mass < 0.0:
        reader.fail(owner, f'mass {mass} must be finite and >= 0')
    tensor = _NO_INERTIA
    inertia = parts.get('inertia')
    if inertia is None:
        if mass > 0.0:
            reader.point_masses.append(link.get('name'))
    else:
        texts = [inertia.get(key) for key in INERTIA_KEYS]
        try:        # the common case at once; anything odd gets the field's own message
            ixx, ixy, ixz, iyy, iyz, izz = values = list(map(float, texts))
            if not sum(map(abs, values)) <= MAX_MAGNITUDE:    # False for NaN and inf too
                raise ValueError
        except (TypeError, ValueError):
            ixx, ixy, ixz, iyy, iyz, izz = (reader.required(inertia, key, 1, owner,
                                                            bounded=True)[0]
                                            for key in INERTIA_KEYS)
        tensor = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    R, c = reader.pose(parts.get('origin'), owner)
    return mass, c, tensor, R


# ----------------------------------------------------------------- structure
def _structure(links, joints, reader: _Reader):
    """Check parents, children, roots and cycles; return (root, children_of)."""
    source = reader.source
    children_of = {name: [] for name in links}
    joint_by_child = {}
    for joint in joints:
        where = f"{source}: joint '{joint.name}'"
        for role in ('parent', 'child'):
            name = getattr(joint, role)
            if name not in links:
                raise ModelError(f"{where}: {role} link '{name}' does not exist")
        if joint.parent == joint.child:
            raise ModelError(f"{where}: parent and child are the same link '{joint.child}'")
        if joint.child in joint_by_child:
            raise ModelError(
                f"{where}: link '{joint.child}' is already the child of joint "
                f"'{joint_by_child[joint.child].name}' (a link has at most one parent)")
        joint_by_child[joint.child] = joint
        children_of[joint.parent].append(joint)
    roots = [name for name in links if name not in joint_by_child]
    if not links:
        raise ModelError(f'{source}: the robot has no links')
    if not roots:
        raise ModelError(f'{source}: no root link: joints '
                         f'{_cycle(next(iter(links)), joint_by_child)} form a cycle')
    if len(roots) > 1:
        raise ModelError(f"{source}: several root links ({', '.join(roots)}); "
                         'a URDF must be one connected tree')
    reached = set()
    stack = [roots[0]]
    while stack:
        name = stack.pop()
        reached.add(name)
        stack.extend(j.child for j in children_of[name])
    if len(reached) < len(links):
        missing = [name for name in links if name not in reached]
        raise ModelError(f"{source}: links {', '.join(missing)} are not connected to the root "
                         f"link '{roots[0]}': joints {_cycle(missing[0], joint_by_child)} "
                         'form a cycle')
    return roots[0], children_of


def _root_joint(joints, root_link, children_of, links, reader: _Reader) -> tuple:
    """
    Return (type, joint name, world link, R, p of its origin) of the root joint.

    The floating or planar joint of a document must join a massless world root link to the
    robot's base, alone.
    """
    source = reader.source
    free = [j for j in joints if j.type in ROOT_JOINT_TYPES]
    for joint in free:
        if joint.parent != root_link or len(free) > 1 or len(children_of[root_link]) > 1:
            raise ModelError(
                f"{source}: joint '{joint.name}': a {joint.type} joint is supported only as "
                f"the one joint of the root link (a massless world link, here "
                f"'{root_link}') to the robot's base: the base model is then {joint.type} "
                "(RobotModel.from_urdf_file(path, root_joint=...))")
    joint = free[0]
    if _link_inertia(links[root_link], reader) is not None:
        raise ModelError(f"{source}: link '{root_link}' (the world, parent of the "
                         f"{joint.type} joint '{joint.name}') has an <inertial>: the world "
                         'has no mass; move it to the base link')
    if joint.type == 'planar':
        axis_tag = joint.elements.get('axis')
        xyz = (None if axis_tag is None else
               reader.numbers(axis_tag, 'xyz', 3, f"joint '{joint.name}' <axis>"))
        axis = np.array([0.0, 0.0, 1.0] if xyz is None else xyz, dtype=float)
        if not np.allclose(axis / max(np.linalg.norm(axis), 1e-300), [0.0, 0.0, 1.0]):
            raise ModelError(f"{source}: joint '{joint.name}': a planar root joint moves in "
                             f'the x-y plane of its origin frame (axis 0 0 1), got axis '
                             f'{axis.tolist()}: turn its <origin> instead')
    return joint.type, joint.name, root_link, joint.R, joint.p


def _cycle(link, joint_by_child):
    """Name the joints of the cycle met by walking up from a link whose ancestors never end."""
    seen = []
    while link not in seen:
        seen.append(link)
        link = joint_by_child[link].parent
    loop = reversed(seen[seen.index(link):])    # parent -> child order
    return ', '.join(joint_by_child[name].name for name in loop)


def _named_elements(root, kind: str, reader: _Reader) -> dict:
    """Return {name: element} of the robot's <link> or <joint> elements; names unique."""
    named = {}
    for elem in root.findall(kind):
        name = elem.get('name')
        if not name:
            raise ModelError(f'{reader.source}: a <{kind}> element has no name attribute')
        if name in named:
            raise ModelError(f"{reader.source}: duplicate {kind} name '{name}'")
        named[name] = elem
    return named


# ----------------------------------------------------------------- the loader
def parse_urdf(xml: str, source: str = '<string>', gravity=(0.0, 0.0, -9.81),
               inertia_check: str = 'error', warn: bool = True) -> RobotDescription:
    """
    Parse and validate URDF text; return the tree in depth-first joint order.

    ``inertia_check``: 'error' (default) refuses a link of a moving body whose inertia no
    rigid body can have; 'warn' loads it as written with one warning per link.
    ``warn=False`` leaves the warning about joints that move no or a tiny inertia to the
    caller (``RobotModel`` gives it once it knows the armature).
    """
    if not isinstance(xml, str):
        raise ModelError(f'{source}: URDF must be text, got {type(xml).__name__}')
    if not isinstance(inertia_check, str) or inertia_check not in INERTIA_CHECKS:
        raise ModelError(f'inertia_check must be one of {INERTIA_CHECKS}, got '
                         f'{inertia_check!r}')
    if xml[:1].isspace() and xml.lstrip().startswith('<?xml'):
        # not well-formed XML, but urdfdom (tinyxml2) reads it and real files have it
        logger.warning('%s: blank text before the XML declaration (not well-formed XML, as '
                       'urdfdom reads it): ignored', source)
        xml = xml.lstrip()
    root = _parse_xml(xml, source)
    if root.tag != 'robot':
        raise ModelError(f"{source}: the root element is <{root.tag}>, expected <robot>")
    reader = _Reader(source, logger.isEnabledFor(logging.DEBUG))
    if root.get('name') is None:
        raise ModelError(f'{source}: <robot> has no name attribute')
    n_links = len(root.findall('link'))
    if n_links > MAX_LINKS:
        raise ModelError(f'{source}: refused: {n_links} links, more than the limit of '
                         f'{MAX_LINKS}')
    links = _named_elements(root, 'link', reader)
    joint_elems = _named_elements(root, 'joint', reader)
    if reader.ignored is not None:
        reader.ignored.update(elem.tag for elem in root if elem.tag not in ('link', 'joint'))
    joints = [_read_joint(elem, reader) for elem in joint_elems.values()]
    root_link, children_of = _structure(links, joints, reader)
    root_joint = None
    if any(j.type in ROOT_JOINT_TYPES for j in joints):
        root_joint = _root_joint(joints, root_link, children_of, links, reader)
        joints = [j for j in joints if j.name != root_joint[1]]
        del links[root_link]
        root_link, children_of = _structure(links, joints, reader)
    try:
        g = np.asarray(gravity)
        g = None if g.dtype.kind == 'c' else g.astype(float)     # never its real part
    except (TypeError, ValueError):
        g = None
    if g is None or g.shape != (3,) or not np.all(np.isfinite(g)):
        raise ModelError(f'gravity must be 3 finite numbers, got {gravity!r}')

    frames = {root_link: (-1, _EYE, _ZERO)}
    parent, revolute, axes, R0s, p0s = [], [], [], [], []
    bodies = []      # per body: list of (mass, com, inertia) in body frame
    joint_names, infos, declared, fixed = [], {}, {}, []
    root_parts = []
    checked = ([], [], [])      # link names, tensors (own frame), welded to the root

    def add_inertia(link_name):
        found = _link_inertia(links[link_name], reader)
        if found is None:
            return
        body, R, p = frames[link_name]
        m, c, tensor, Ri = found
        checked[0].append(link_name)
        checked[1].append(tensor)
        checked[2].append(body < 0)
        Rl = Ri if R is _EYE else R @ Ri
        com = c if R is _EYE else R @ c
        part = (m, com if p is _ZERO else com + p,
                tensor if Rl is _EYE else Rl @ tensor @ Rl.T)
        (root_parts if body < 0 else bodies[body]).append(part)

    add_inertia(root_link)
    stack = list(reversed(children_of[root_link]))
    while stack:  # depth first, children in document order
        joint = stack.pop()
        body, Rb, pb = frames[joint.parent]
        if Rb is _EYE:
            R_rel, p_rel = joint.R, (joint.p if pb is _ZERO else joint.p + pb)
        else:
            R_rel, p_rel = Rb @ joint.R, Rb @ joint.p + pb
        if joint.type == 'fixed':
            frames[joint.child] = (body, R_rel, p_rel)
            fixed.append(joint.name)
        else:
            axis = _joint_axis(joint, reader)
            parent.append(body)
            revolute.append(joint.type != 'prismatic')
            axes.append(axis)
            R0s.append(R_rel)
            p0s.append(p_rel)
            bodies.append([])
            frames[joint.child] = (len(bodies) - 1, _EYE, _ZERO)
            joint_names.append(joint.name)
            infos[joint.name] = _joint_info(joint, axis, reader)
            tag = _mimic_tag(joint, reader)
            if tag is not None:
                declared[joint.name] = tag
        add_inertia(joint.child)
        stack.extend(reversed(children_of[joint.child]))
    mimic_joints = resolve_mimics(declared, joint_names, fixed, source) if declared else {}
    check_link_inertias(*checked, source, inertia_check)
    mass, com, inertia = [], [], []
    for parts in bodies:
        m, c, inertia_ = merge_inertias(parts)
        mass.append(m)
        com.append(c)
        inertia.append(inertia_)
    n = len(bodies)
    tree = KinematicTree(
        parent=np.array(parent, dtype=int).reshape(n), revolute=np.array(revolute, dtype=bool),
        axis=np.array(axes, dtype=float).reshape(n, 3), R0=np.array(R0s).reshape(n, 3, 3),
        p0=np.array(p0s).reshape(n, 3), mass=np.array(mass, dtype=float),
        com=np.array(com, dtype=float).reshape(n, 3),
        inertia=np.array(inertia, dtype=float).reshape(n, 3, 3), gravity=g)
    if reader.inverted:
        logger.warning('%s: <limit> lower > upper at joint(s) %s: read as unlimited (as some '
                       'simulators write "no position limit")', source,
                       ', '.join(reader.inverted))
    if reader.point_masses:
        logger.warning('%s: <inertial> without <inertia> at link(s) %s: read as point masses '
                       '(no rotational inertia about the centre of mass, as urdfdom reads '
                       'it)', source, ', '.join(f"'{name}'" for name in reader.point_masses))
    if warn:
        warn_unusual(tree, joint_names, frames, source, mimic_joints)
    if reader.ignored:
        for kind, count in sorted(reader.ignored.items()):
            if kind == 'joint/mimic':
                logger.debug('%s: ignored %d <joint/mimic> element(s) of fixed joints %s: a '
                             'fixed joint has no position to follow (as urdfdom does)', source,
                             count, reader.fixed_mimics)
            else:
                logger.debug('%s: ignored %d <%s> element(s): not used by dynamics', source,
                             count, kind)
    total = float(sum(mass)) + sum(part[0] for part in root_parts)
    return RobotDescription(root.get('name'), tree, joint_names, infos, frames, root_link,
                            total, merge_inertias(root_parts), mimic_joints, root_joint, xml)
