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
URDF text to a validated kinematic tree, using urdf_parser_py for the object model.

Every problem is reported as :class:`~kron_dynamics.errors.ModelError` naming the file and the
link or joint concerned; nothing else escapes from here.
"""

import contextvars
from collections.abc import Mapping
from dataclasses import dataclass
import logging
import math
import re
from types import MappingProxyType
import xml.etree.ElementTree as ET

import numpy as np
from urdf_parser_py import xml_reflection
from urdf_parser_py.urdf import URDF

from ..errors import ModelError
from .inertia import check_inertia, merge_inertias, warn_unusual
from .rotations import rpy_to_matrix
from .tree import KinematicTree

logger = logging.getLogger('kron_dynamics')

XML_DECLARATION = re.compile(r'^\ufeff?<\?xml[^>]*\?>')
SUPPORTED_TYPES = ('revolute', 'continuous', 'prismatic', 'fixed')
# element -> attributes that must be numbers (with their count)
NUMERIC_ATTRIBUTES = {
    'origin': {'xyz': 3, 'rpy': 3},
    'axis': {'xyz': 3},
    'mass': {'value': 1},
    'inertia': {k: 1 for k in ('ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz')},
    'limit': {'lower': 1, 'upper': 1, 'effort': 1, 'velocity': 1},
    'dynamics': {'damping': 1, 'friction': 1},
    'mimic': {'multiplier': 1, 'offset': 1},
    'safety_controller': {k: 1 for k in ('soft_lower_limit', 'soft_upper_limit',
                                         'k_position', 'k_velocity')},
    'calibration': {'rising': 1, 'falling': 1},
    'box': {'size': 3},
    'cylinder': {'radius': 1, 'length': 1},
    'sphere': {'radius': 1},
    'mesh': {'scale': 3},
    'color': {'rgba': 4},
}
# (element, attribute) whose magnitude must stay below MAX_MAGNITUDE (they enter the dynamics)
BOUNDED_ATTRIBUTES = {('origin', 'xyz'), ('mass', 'value'),
                      *(('inertia', k) for k in NUMERIC_ATTRIBUTES['inertia'])}
# element -> sub-elements whose attribute urdf_parser_py needs but does not check
REQUIRED_ATTRIBUTES = {
    'joint': {'parent': 'link', 'child': 'link', 'axis': 'xyz'},
    'link': {'inertial/mass': 'value'},
}
# child elements that may appear at most once (a second one would be silently ignored)
AT_MOST_ONCE = {
    'joint': ('origin', 'parent', 'child', 'axis', 'limit', 'dynamics', 'mimic',
              'calibration', 'safety_controller'),
    'link': ('inertial',),
    'inertial': ('origin', 'mass', 'inertia'),
}
# Size limits: a URDF beyond them is refused before it can exhaust time or memory (the tree
# keeps n x n arrays; M itself is n x n). Real robots have at most a few hundred links.
MAX_LINKS = 5000
MAX_ELEMENTS = 200_000
MAX_DEPTH = 64
XML_CHUNK = 1 << 16
# Largest |value| accepted for lengths [m], masses [kg] and inertias [kg m^2]: beyond it a
# number is garbage or in the wrong units, and products in the dynamics could overflow.
MAX_MAGNITUDE = 1e15


_SOURCE = contextvars.ContextVar('urdf_source', default='<string>')


def _route_parser_messages(message):
    logger.warning('%s: urdf_parser_py: %s', _SOURCE.get(), message)


xml_reflection.core.on_error = _route_parser_messages


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
    document order); ``frames`` maps every link to (body index, or -1 for the root; R; p):
    the link frame in the frame of the body that carries it. ``root_inertia`` is
    (mass, centre of mass, central inertia) of what is welded to the fixed root link, in
    the root frame (it never moves, so it is not part of the tree).
    """

    name: str
    tree: KinematicTree
    joint_names: tuple
    joints: Mapping[str, JointInfo]
    frames: Mapping[str, tuple]
    root_link: str
    total_mass: float
    root_inertia: tuple = (0.0, np.zeros(3), np.zeros((3, 3)))

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


def _parse_error_message(exc, source):
    """Say which link or joint a urdf_parser_py error is about, with its XPath for the field."""
    if not isinstance(exc, xml_reflection.core.ParseError):
        return f'{source}: invalid URDF: {exc}'
    path = str(exc.path)
    owners = re.findall(r"/(link|joint)\[@name='(.*?)'\]", path)
    if not owners:
        return f'{source}: invalid URDF at {path}: {exc.e}'
    kind, name = owners[-1]
    return f"{source}: {kind} '{name}': {exc.e} (at {path})"


class _Refused(Exception):
    """Raised from inside the XML parser to stop it; the message says why."""


class _GuardedTreeBuilder(ET.TreeBuilder):
    """An ElementTree builder that refuses DTDs and documents too large or too deep."""

    def __init__(self):
        super().__init__()
        self.depth = 0
        self.elements = 0

    def start(self, tag, attrs):
        self.depth += 1
        self.elements += 1
        if self.depth > MAX_DEPTH:
            raise _Refused(f'XML elements nested deeper than {MAX_DEPTH} levels (at <{tag}>)')
        if self.elements > MAX_ELEMENTS:
            raise _Refused(f'more than {MAX_ELEMENTS} XML elements')
        return super().start(tag, attrs)

    def end(self, tag):
        self.depth -= 1
        return super().end(tag)

    def doctype(self, name, pubid, system):
        raise _Refused('a <!DOCTYPE> declaration is not allowed in a URDF (its entities could '
                       'expand without bound or read local files)')


def _parse_xml(xml: str, source: str) -> ET.Element:
    parser = ET.XMLParser(target=_GuardedTreeBuilder())
    try:
        # In growing chunks: fed at once, expat would go on reading (and, for deep nesting,
        # allocating) to the end after a refusal; fixed small chunks would make it rescan a
        # long token (comment, attribute) once per chunk, quadratic time.
        start, size = 0, XML_CHUNK
        while start < len(xml):
            parser.feed(xml[start:start + size])
            start, size = start + size, 2 * size
        return parser.close()
    except ET.ParseError as exc:
        raise ModelError(f'{source}: malformed XML: {exc}') from None
    except UnicodeError as exc:     # e.g. lone surrogates in the text
        raise ModelError(f'{source}: malformed XML: {exc}') from None
    except _Refused as exc:
        raise ModelError(f'{source}: refused: {exc}') from None


def _check_xml(xml: str, source: str) -> ET.Element:
    root = _parse_xml(xml, source)
    if root.tag != 'robot':
        raise ModelError(f"{source}: the root element is <{root.tag}>, expected <robot>")
    n_links = len(root.findall('link'))
    if n_links > MAX_LINKS:
        raise ModelError(f'{source}: refused: {n_links} links, more than the limit of '
                         f'{MAX_LINKS}')
    for kind in ('link', 'joint'):
        seen = set()
        for elem in root.findall(kind):
            name = elem.get('name')
            if not name:
                raise ModelError(f'{source}: a <{kind}> element has no name attribute')
            if name in seen:
                raise ModelError(f"{source}: duplicate {kind} name '{name}'")
            seen.add(name)
            for parent_tag, tags in AT_MOST_ONCE.items():
                holders = [elem] if parent_tag == kind else elem.findall(parent_tag)
                for holder in holders:
                    for tag in tags:
                        if len(holder.findall(tag)) > 1:
                            where = kind if parent_tag == kind else f'{kind} <{parent_tag}>'
                            raise ModelError(f"{source}: {where} '{name}' has more than one "
                                             f'<{tag}> element')
    for top in root:
        owner = f"{top.tag} '{top.get('name')}'"
        for path, attr in REQUIRED_ATTRIBUTES.get(top.tag, {}).items():
            for elem in top.findall(path):
                if elem.get(attr) is None:
                    raise ModelError(f'{source}: {owner}: <{elem.tag}> has no {attr} attribute')
        for elem in top.iter():
            spec = NUMERIC_ATTRIBUTES.get(elem.tag)
            if not spec:
                continue
            for attr, count in spec.items():
                text = elem.get(attr)
                if text is None:
                    continue
                parts = text.split()
                try:
                    values = [float(v) for v in parts]
                except ValueError:
                    raise ModelError(
                        f"{source}: {owner}: <{elem.tag} {attr}=\"{text}\"> is not numeric"
                    ) from None
                if len(values) != count:
                    raise ModelError(
                        f"{source}: {owner}: <{elem.tag} {attr}=\"{text}\"> needs {count} "
                        f"number(s), got {len(values)}")
                if elem.tag not in ('limit',) and not all(math.isfinite(v) for v in values):
                    raise ModelError(
                        f"{source}: {owner}: <{elem.tag} {attr}=\"{text}\"> is not finite")
                if elem.tag == 'limit' and any(math.isnan(v) for v in values):
                    raise ModelError(f"{source}: {owner}: <limit {attr}=\"{text}\"> is NaN")
                if ((elem.tag, attr) in BOUNDED_ATTRIBUTES
                        and any(abs(v) > MAX_MAGNITUDE for v in values)):
                    raise ModelError(
                        f"{source}: {owner}: <{elem.tag} {attr}=\"{text}\"> is out of range "
                        f'(|value| > {MAX_MAGNITUDE:g}; SI units expected)')
    return root


def _pose(origin):
    if origin is None:
        return np.eye(3), np.zeros(3)
    xyz = origin.xyz if origin.xyz is not None else [0.0, 0.0, 0.0]
    rpy = origin.rpy if origin.rpy is not None else [0.0, 0.0, 0.0]
    return rpy_to_matrix(rpy), np.array(xyz, dtype=float)


def _link_inertia(link, source):
    """Return (mass, com, central inertia) of a link in its own frame, validated."""
    inertial = link.inertial
    if inertial is None:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    where = f"{source}: link '{link.name}'"
    mass = 0.0 if inertial.mass is None else float(inertial.mass)
    if not math.isfinite(mass) or mass < 0.0:
        raise ModelError(f'{where}: mass {mass} must be finite and >= 0')
    inertia_ = np.zeros((3, 3))
    if inertial.inertia is not None:
        i = inertial.inertia
        inertia_ = np.array([[i.ixx, i.ixy, i.ixz], [i.ixy, i.iyy, i.iyz],
                             [i.ixz, i.iyz, i.izz]],
                            dtype=float)
    check_inertia(inertia_, where)
    R, c = _pose(inertial.origin)
    return mass, c, R @ inertia_ @ R.T


def _structure(robot, source):
    """Check parents, children, roots and cycles; return (root, children_of, joint_by_child)."""
    links = {link.name: link for link in robot.links}
    children_of = {name: [] for name in links}
    joint_by_child = {}
    for joint in robot.joints:
        where = f"{source}: joint '{joint.name}'"
        if joint.type not in SUPPORTED_TYPES:
            if joint.type in ('floating', 'planar'):
                raise ModelError(f"{where}: joint type '{joint.type}' is not supported "
                                 '(fixed-base trees with revolute, continuous, prismatic '
                                 'and fixed joints only)')
            raise ModelError(f"{where}: unknown joint type '{joint.type}'")
        if joint.mimic is not None:
            raise ModelError(f'{where}: mimic joints are not supported')
        for role in ('parent', 'child'):
            name = getattr(joint, role)
            if not name:
                raise ModelError(f'{where}: has no {role} link')
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
                         f'{_cycle(robot.links[0].name, joint_by_child)} form a cycle')
    if len(roots) > 1:
        raise ModelError(f"{source}: several root links ({', '.join(roots)}); "
                         'a URDF must be one connected tree')
    reached = set()
    stack = [roots[0]]
    while stack:
        name = stack.pop()
        reached.add(name)
        stack.extend(j.child for j in children_of[name])
    missing = [name for name in links if name not in reached]
    if missing:
        raise ModelError(f"{source}: links {', '.join(missing)} are not connected to the root "
                         f"link '{roots[0]}': joints {_cycle(missing[0], joint_by_child)} "
                         'form a cycle')
    return roots[0], children_of, links


def _cycle(link, joint_by_child):
    """Name the joints of the cycle met by walking up from a link whose ancestors never end."""
    seen = []
    while link not in seen:
        seen.append(link)
        link = joint_by_child[link].parent
    loop = reversed(seen[seen.index(link):])    # parent -> child order
    return ', '.join(joint_by_child[name].name for name in loop)


def _joint_info(joint, axis, source):
    where = f"{source}: joint '{joint.name}'"
    lower, upper, effort, velocity = -math.inf, math.inf, math.inf, math.inf
    limit = joint.limit
    if joint.type in ('revolute', 'prismatic'):
        if limit is None:
            raise ModelError(f'{where}: a {joint.type} joint needs a <limit> element')
        if limit.lower is not None:
            lower = float(limit.lower)
        if limit.upper is not None:
            upper = float(limit.upper)
        if lower > upper:
            raise ModelError(f'{where}: <limit> lower {lower} > upper {upper}')
        if lower == math.inf or upper == -math.inf:
            raise ModelError(f'{where}: <limit> lower {lower}, upper {upper} leave no position')
    if limit is not None:
        if limit.effort is not None:
            effort = float(limit.effort)
        if limit.velocity is not None:
            velocity = float(limit.velocity)
        for field, value in (('effort', effort), ('velocity', velocity)):
            if value < 0:
                raise ModelError(f'{where}: <limit> {field} {value} must be >= 0')
    damping = friction = 0.0
    if joint.dynamics is not None:
        damping = float(joint.dynamics.damping or 0.0)
        friction = float(joint.dynamics.friction or 0.0)
        for field, value in (('damping', damping), ('friction', friction)):
            if value < 0:
                raise ModelError(f'{where}: <dynamics> {field} {value} must be >= 0')
    return JointInfo(joint.name, joint.type, joint.parent, joint.child, tuple(axis),
                     lower, upper, effort, velocity, damping, friction)


def parse_urdf(xml: str, source: str = '<string>',
               gravity=(0.0, 0.0, -9.81)) -> RobotDescription:
    """Parse and validate URDF text; return the tree in depth-first joint order."""
    if not isinstance(xml, str):
        raise ModelError(f'{source}: URDF must be text, got {type(xml).__name__}')
    _check_xml(xml, source)
    token = _SOURCE.set(source)     # for the warnings urdf_parser_py emits
    try:
        # lxml refuses text that declares an encoding; the text is decoded already
        robot = URDF.from_xml_string(XML_DECLARATION.sub('', xml, count=1))
    except Exception as exc:  # urdf_parser_py raises many kinds; report them all as ours
        raise ModelError(_parse_error_message(exc, source)) from None
    finally:
        _SOURCE.reset(token)
    root, children_of, links = _structure(robot, source)
    try:
        g = np.asarray(gravity, dtype=float)
    except (TypeError, ValueError):
        g = None
    if g is None or g.shape != (3,) or not np.all(np.isfinite(g)):
        raise ModelError(f'gravity must be 3 finite numbers, got {gravity!r}')
    gravity = g

    frames = {root: (-1, np.eye(3), np.zeros(3))}
    parent, revolute, axes, R0s, p0s = [], [], [], [], []
    bodies = []      # per body: list of (mass, com, inertia) in body frame
    joint_names, joints = [], {}
    root_parts = []

    def add_inertia(link_name):
        body, R, p = frames[link_name]
        m, c, inertia_ = _link_inertia(links[link_name], source)
        part = (m, R @ c + p, R @ inertia_ @ R.T)
        (root_parts if body < 0 else bodies[body]).append(part)

    add_inertia(root)
    stack = list(reversed(children_of[root]))
    while stack:  # depth first, children in document order
        joint = stack.pop()
        body, Rb, pb = frames[joint.parent]
        Ro, po = _pose(joint.origin)
        R_rel, p_rel = Rb @ Ro, Rb @ po + pb
        if joint.type == 'fixed':
            frames[joint.child] = (body, R_rel, p_rel)
        else:
            axis = np.array(joint.axis if joint.axis is not None else [1.0, 0.0, 0.0],
                            dtype=float)
            biggest = float(np.max(np.abs(axis)))   # scaled first: no overflow in the norm
            unit = axis / biggest if biggest > 0 else axis
            if not biggest * float(np.linalg.norm(unit)) > 1e-12:
                raise ModelError(f"{source}: joint '{joint.name}': <axis> is zero")
            axis = unit / np.linalg.norm(unit)
            parent.append(body)
            revolute.append(joint.type != 'prismatic')
            axes.append(axis)
            R0s.append(R_rel)
            p0s.append(p_rel)
            bodies.append([])
            frames[joint.child] = (len(bodies) - 1, np.eye(3), np.zeros(3))
            joint_names.append(joint.name)
            joints[joint.name] = _joint_info(joint, axis, source)
        add_inertia(joint.child)
        stack.extend(reversed(children_of[joint.child]))
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
        inertia=np.array(inertia, dtype=float).reshape(n, 3, 3), gravity=gravity)
    warn_unusual(tree, joint_names, frames, source)
    total = float(sum(mass)) + sum(part[0] for part in root_parts)
    return RobotDescription(robot.name or '', tree, joint_names, joints, frames, root, total,
                            merge_inertias(root_parts))
