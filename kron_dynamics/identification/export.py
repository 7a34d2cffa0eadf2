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
A fit, written out: a corrected URDF and a params YAML for the nodes.

:func:`to_urdf`: the URDF the prior model was read from, with each moving body's
``<inertial>`` replaced by the fitted one (on the body's joint's child link, in that link's
frame; the ``<inertial>`` of links welded to it are removed, as the fit is of the welded
whole) and the fitted viscous and Coulomb friction in each joint's ``<dynamics damping
friction>``. Everything else (joints, limits, visuals, comments) is kept. :func:`to_params`:
what a URDF cannot hold (armature, torque offsets) with the friction, in ROS params YAML:
the joints and armature (and the locked joints) for every node (``/**``: the controller,
the dynamics node and the simulator compute with one model), the friction for
``computed_torque_controller``.
"""

from io import StringIO
import logging
from pathlib import Path
import xml.etree.ElementTree as ET

import numpy as np

from ..algorithms.regressor import body_inertia
from ..errors import ModelError

logger = logging.getLogger('kron_dynamics')


def _number(x: float) -> str:
    return repr(float(x))


def _inertial(link, mass, com, inertia) -> None:
    """Replace (or add) a link's <inertial>: mass, com and inertia about it, link frame."""
    old = link.find('inertial')
    position = list(link).index(old) if old is not None else 0
    if old is not None:
        link.remove(old)
    inertial = ET.Element('inertial')
    inertial.text, inertial.tail = '\n' + ' ' * 6, '\n' + ' ' * 4
    ET.SubElement(inertial, 'origin', xyz=' '.join(map(_number, com)), rpy='0 0 0').tail = \
        '\n' + ' ' * 6
    ET.SubElement(inertial, 'mass', value=_number(mass)).tail = '\n' + ' ' * 6
    ET.SubElement(inertial, 'inertia', ixx=_number(inertia[0, 0]), ixy=_number(inertia[0, 1]),
                  ixz=_number(inertia[0, 2]), iyy=_number(inertia[1, 1]),
                  iyz=_number(inertia[1, 2]), izz=_number(inertia[2, 2])).tail = '\n' + ' ' * 4
    link.insert(position, inertial)


def _physical_friction(fit, what: str) -> tuple[dict, str]:
    """
    Return ({'viscous': ..., 'coulomb': ...} of ``fit``, each >= 0, and a note, '' if none).

    A least-squares fit (``method='least_squares'``) can give a joint with little friction a
    small negative value, which no URDF loader or controller takes: it is written as 0, and
    the note (also logged, naming ``what`` is written) lists the joints and fitted values.
    """
    friction, negative = {}, []
    for term in ('viscous', 'coulomb'):
        if term in fit.friction:
            values = np.asarray(fit.friction[term], dtype=float)
            negative += [f'{term} {joint} {value:.3g}'
                         for joint, value in zip(fit.model.joint_names, values) if value < 0]
            friction[term] = np.maximum(values, 0.0)
    if not negative:
        return friction, ''
    note = (f"negative fitted friction ({', '.join(negative)}; not physical, a joint with "
            'little friction fitted by least squares) written as 0')
    logger.warning('%s: %s', what, note)
    return friction, note


def to_urdf(fit, path=None) -> str:
    """Return (and write to ``path``, if given) the prior's URDF with the fitted values."""
    fitted = fit.model
    note = (f' inertials of {list(fitted.body_names)} and joint friction fitted by '
            f'kron_dynamics identification ({fit.method}) ')
    bad = [name for name, ok in zip(fitted.body_names, fit.physically_consistent()) if not ok]
    if bad:
        note += (f'; {bad} are not physically consistent: load with inertia_check=\'warn\' '
                 'or fit with the default method ')
    friction, negative = _physical_friction(fit, 'to_urdf')
    if negative:
        note += f'; {negative} '
    return urdf_with_parameters(fit.prior, fitted.dynamic_parameters(), friction, note, path)


def urdf_with_parameters(model, parameters, friction=None, note: str = '', path=None) -> str:
    """
    Return ``model``'s URDF document with other body parameters and joint friction.

    ``parameters``: (nb, 10) in ``model.body_names`` order (``dynamic_parameters``);
    ``friction``: {'viscous': per joint, 'coulomb': per joint} (either optional) for
    ``model.joint_names``; ``note``: an XML comment put first in the robot element.
    """
    document = model.description.document
    if not document:
        raise ModelError(f"to_urdf: robot '{model.name}' was not read from a URDF document")
    P = np.asarray(parameters, dtype=float).reshape(len(model.body_names), 10)
    namespaces = dict(node for _, node in ET.iterparse(StringIO(document), events=['start-ns']))
    for prefix, uri in namespaces.items():
        ET.register_namespace(prefix, uri)
    parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))
    root = ET.fromstring(document.lstrip(), parser=parser)
    links = {link.get('name'): link for link in root.findall('link')}
    frames = model.description.frames
    for b, (name, p) in enumerate(zip(model.body_names, P)):
        mass, com, inertia = body_inertia(p)           # body frame, about the com
        _, R, origin = frames[name]                    # the link in the body frame
        _inertial(links[name], mass, R.T @ (com - origin), R.T @ inertia @ R)
        for other, (body, _, _) in frames.items():
            if body == b and other != name and links[other].find('inertial') is not None:
                links[other].remove(links[other].find('inertial'))
    joints = {joint.get('name'): joint for joint in root.findall('joint')}
    if model.locked_joints:
        every = ', '.join(f'{j}={v:g}' for j, v in model.locked_joints.items())
        primary = _locked_primaries(model)
        note += (f'; joints {every} were locked for the fit (their links\' inertials are merged '
                 f"into their parents'): load this file with them locked, locked={primary} "
                 '(the nodes: parameters locked_joints and locked_positions, as in the params '
                 'file of to_params) ')
    attributes = {'viscous': 'damping', 'coulomb': 'friction'}
    for term, attribute in attributes.items():
        if term not in (friction or {}):
            continue
        for joint, value in zip(model.joint_names, friction[term]):
            element = joints[joint]
            dynamics = element.find('dynamics')
            if dynamics is None:
                dynamics = ET.SubElement(element, 'dynamics')
                dynamics.tail = '\n' + ' ' * 2
            dynamics.set(attribute, _number(value))
    if note:
        comment = ET.Comment(note)
        comment.tail = '\n  '
        root.insert(0, comment)
    text = '<?xml version="1.0"?>\n' + ET.tostring(root, encoding='unicode') + '\n'
    if path is not None:
        Path(path).write_text(text)      # a path, never a file descriptor number
    return text


def _locked_primaries(model) -> dict:
    """Return {joint: coordinate} of the model's locked joints that are no mimic joints."""
    document = model.description.document.lstrip()
    mimics = {joint.get('name') for joint in ET.fromstring(document).iter('joint')
              if joint.find('mimic') is not None} if document else set()
    return {j: v for j, v in model.locked_joints.items() if j not in mimics}


def to_params(fit, path=None, node: str = 'computed_torque_controller') -> str:
    """
    Return (and write to ``path``) ROS params YAML of what the URDF cannot hold.

    For every node (``/**``), ``joints`` and ``armature`` (the fitted model's: fitted if
    'armature' was a term, else the prior's), with ``locked_joints`` and
    ``locked_positions`` if the fit locked joints, model parameters of the controller, the
    dynamics node and the simulator alike; for ``node`` (the controller), its friction
    feed-forward: ``viscous``, ``coulomb`` (with ``coulomb_smoothing``) and
    ``torque_offset``, per joint of ``joints``.
    """
    import yaml
    model = fit.model
    n = model.n
    shared = {'joints': list(model.joint_names),
              'armature': [float(x) for x in model.armature]}   # fitted if a term (>= 0)
    locked = _locked_primaries(model) if model.locked_joints else {}
    if locked:
        shared['locked_joints'] = list(locked)
        shared['locked_positions'] = [float(v) for v in locked.values()]
    friction, negative = _physical_friction(fit, 'to_params')
    friction = {**fit.friction, **friction}         # viscous and Coulomb as written: >= 0
    values = {}
    for term, name in (('viscous', 'viscous'), ('coulomb', 'coulomb'),
                       ('offset', 'torque_offset')):
        values[name] = [float(x) for x in friction.get(term, np.zeros(n))]
    values['coulomb_smoothing'] = float(fit.smooth)
    header = (f'# kron_dynamics identification ({fit.method}) of {model.name}: what URDF '
              'cannot hold.\n# The model (joints, armature, locked joints) for every node, the '
              f'friction feed-forward for {node}\n' + (f'# {negative}\n' if negative else ''))
    text = header + yaml.safe_dump({'/**': {'ros__parameters': shared},
                                    node: {'ros__parameters': values}}, sort_keys=False,
                                   default_flow_style=None, width=99)
    if path is not None:
        Path(path).write_text(text)      # a path, never a file descriptor number
    return text
