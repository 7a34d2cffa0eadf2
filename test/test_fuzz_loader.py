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
Property-based fuzzing of the URDF loader: mutated valid URDFs load or raise ModelError.

Each example takes one valid document (the project's URDFs, random trees of
``kron_dynamics.testing.random_urdf``) and applies one to four mutations: delete, duplicate,
reorder or move elements; replace, delete or add attributes with junk (NaN, inf, huge, negative,
empty, text); rename links (breaking references) or point references elsewhere; change
joint types; truncate the text, inject characters (including lone surrogates, NUL, markup
and DTDs), delete or repeat slices. A second test replaces one number of one numeric
attribute (NaN, inf, 1e308, negative, denormal, junk text), which random structural edits
rarely reach.

The property: ``RobotModel.from_urdf_string`` either raises ``ModelError`` whose message
starts with the source name, or returns a model; nothing else escapes (not even a NumPy
RuntimeWarning), and every warning logged names the source. A model that loads must be
usable: M, C*, G and inverse dynamics at a random state (prismatic travel up to 1e3 m,
within finite joint limits) are finite, M is symmetric. This is the decided contract: the
loader refuses values that could make the dynamics overflow (``urdf_loader.MAX_MAGNITUDE``),
so evaluation never raises for a finite, in-range state.

Reproducible (``derandomize=True``): 500 examples per test, about 10 s in all here.
"""

import logging
import math
import warnings
import xml.etree.ElementTree as ET

from hypothesis import HealthCheck, given, note, settings, strategies as st
import numpy as np
import pytest

from kron_dynamics import ModelError, RobotModel
from kron_dynamics.testing.random_urdf import random_urdf

from conftest import URDF_DIR

SOURCE = 'fuzz.urdf'

BASES = {path.stem: path.read_text() for path in sorted(URDF_DIR.glob('*.urdf'))}
BASES.update({f'random_{seed}': random_urdf(np.random.default_rng(seed), n, 2)
              for seed, n in ((0, 3), (1, 5), (2, 8))})
BASES['random_massless'] = random_urdf(np.random.default_rng(3), 4, 1, massless_fraction=0.5)

JUNK = ['', ' ', 'nan', 'NaN', '-nan', 'inf', '-inf', 'Infinity', '1e308', '-1e308', '1e400',
        '1e-320', '-1', '-0', '0', '0 0 0', '1e15', '1e16', '-1e16', 'abc', '1 2', '1 2 3',
        '1 2 3 4', '0x1F', '1,5', '1,2,3', '\u0661\u0662', 'None', 'true', '\u221e', '1e',
        '.', '--1', '+1', ' 1 ', '1\t2\n3', '${pi/2}', '&amp;', 'base_link', 'link1',
        'revolute', 'fixed']
NUMBERS = ['nan', 'inf', '-inf', '1e308', '-1e308', '1e300', '1e200', '1e16', '-1e16', '1e15',
           '-1', '-1e-9', '0', '-0', '1e-320', '1e-300', '1e-12', '3.5']
NUMERIC_KEYS = {'xyz', 'rpy', 'value', 'ixx', 'ixy', 'ixz', 'iyy', 'iyz', 'izz', 'lower',
                'upper', 'effort', 'velocity', 'damping', 'friction'}
JOINT_TYPES = ['revolute', 'continuous', 'prismatic', 'fixed', 'floating', 'planar',
               'hinge', '', 'REVOLUTE']
INJECTIONS = ['\ud800', '\x00', '\x0b', '\ufffe', '<', '>', '&', '"', "'", '</robot>',
              '<link name="x"/>', '<!-- -->', '<![CDATA[x]]>', '&lt;', '&nope;', ']]>',
              '<!DOCTYPE robot [<!ENTITY a "b">]>', '<?xml version="1.0"?>', '\ufeff']


class _Messages(logging.Handler):
    """Keep the formatted messages of logger kron_dynamics (formatting errors propagate)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


WARNINGS = _Messages()


@pytest.fixture(autouse=True, scope='module')
def _quiet_logger_and_warm_kernels():
    """Collect the loader's warnings here, not in pytest; load the compiled kernels once."""
    logger = logging.getLogger('kron_dynamics')
    logger.addHandler(WARNINGS)
    logger.propagate = False
    model = RobotModel.from_urdf_string(BASES['rp_arm'])
    model.mass_matrix(np.zeros(model.n))
    model.inverse_dynamics(np.zeros(model.n), np.zeros(model.n), np.zeros(model.n))
    yield
    logger.removeHandler(WARNINGS)
    logger.propagate = True


def _finite_or_junk():
    return st.one_of(
        st.sampled_from(JUNK),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.text(max_size=8),
        st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=4).map(
            lambda v: ' '.join(map(repr, v))))


def _elements(root):
    """Return every element below the root, in document order."""
    return [e for e in root.iter() if e is not root]


def _parents(root):
    return {child: parent for parent in root.iter() for child in parent}


def _pick(data, items, label):
    return items[data.draw(st.integers(0, len(items) - 1), label=label)]


def _mutate_tree(data, root, kind):
    """Apply one element-level mutation in place; return False if it does not apply."""
    elems = _elements(root)
    if not elems:
        return False
    parents = _parents(root)
    if kind == 'delete':
        e = _pick(data, elems, 'element')
        parents[e].remove(e)
    elif kind == 'duplicate':
        e = _pick(data, elems, 'element')
        parent = parents[e]
        parent.insert(list(parent).index(e) + 1, ET.fromstring(ET.tostring(e)))
    elif kind == 'reorder':
        holders = [e for e in root.iter() if len(e) > 1]
        if not holders:
            return False
        holder = _pick(data, holders, 'holder')
        child = _pick(data, list(holder), 'child')
        holder.remove(child)
        holder.insert(data.draw(st.integers(0, len(holder)), label='index'), child)
    elif kind == 'move':
        e = _pick(data, elems, 'element')
        target = _pick(data, [root, *elems], 'target')
        if target is e or e in target.iter() or target in e.iter():
            return False
        parents[e].remove(e)
        target.append(e)
    elif kind in ('replace_attribute', 'delete_attribute'):
        attributed = [e for e in elems if e.attrib]
        if not attributed:
            return False
        e = _pick(data, attributed, 'element')
        key = _pick(data, sorted(e.attrib), 'attribute')
        if kind == 'delete_attribute':
            del e.attrib[key]
        else:
            e.set(key, data.draw(_finite_or_junk(), label='value'))
    elif kind == 'add_attribute':
        e = _pick(data, elems, 'element')
        key = data.draw(st.sampled_from(['name', 'type', 'xyz', 'rpy', 'value', 'link',
                                         'lower', 'effort', 'ixx', 'extra']), label='key')
        e.set(key, data.draw(_finite_or_junk(), label='value'))
    elif kind == 'replace_number':
        numeric = [(e, k) for e in elems for k in sorted(e.attrib) if k in NUMERIC_KEYS]
        if not numeric:
            return False
        e, key = _pick(data, numeric, 'numeric attribute')
        values = e.get(key).split() or ['']
        values[data.draw(st.integers(0, len(values) - 1), label='which')] = data.draw(
            st.one_of(st.sampled_from(NUMBERS), st.floats().map(repr)), label='number')
        e.set(key, ' '.join(values))
    elif kind == 'rename_link':
        links = [e for e in elems if e.tag == 'link' and e.get('name')]
        if not links:
            return False
        link = _pick(data, links, 'link')
        link.set('name', data.draw(st.sampled_from(['', 'renamed', 'base_link', 'link1']),
                                   label='name'))
    elif kind == 'redirect_reference':
        refs = [e for e in elems if e.tag in ('parent', 'child')]
        names = sorted({e.get('name', '') for e in elems if e.tag == 'link'} | {'ghost'})
        if not refs:
            return False
        _pick(data, refs, 'reference').set('link', _pick(data, names, 'link name'))
    elif kind == 'joint_type':
        joints = [e for e in elems if e.tag == 'joint']
        if not joints:
            return False
        _pick(data, joints, 'joint').set('type', data.draw(st.sampled_from(JOINT_TYPES)))
    return True


def _mutate_text(data, text, kind):
    """Apply one text-level mutation; return the new text."""
    i = data.draw(st.integers(0, len(text)), label='position')
    if kind == 'truncate':
        return text[:i]
    if kind == 'inject':
        junk = data.draw(st.one_of(st.sampled_from(INJECTIONS), st.text(min_size=1, max_size=5)),
                         label='injected')
        return text[:i] + junk + text[i:]
    j = data.draw(st.integers(i, min(len(text), i + 200)), label='end')
    if kind == 'delete_slice':
        return text[:i] + text[j:]
    return text[:j] + text[i:j] + text[j:]      # repeat the slice


TREE_MUTATIONS = ['delete', 'duplicate', 'reorder', 'move', 'replace_attribute',
                  'replace_attribute', 'replace_number', 'replace_number', 'replace_number',
                  'delete_attribute', 'add_attribute',
                  'rename_link', 'redirect_reference', 'joint_type']
TEXT_MUTATIONS = ['truncate', 'inject', 'delete_slice', 'repeat_slice']


def mutated_urdf(data):
    """Draw a valid base URDF and apply one to four mutations."""
    text = BASES[data.draw(st.sampled_from(sorted(BASES)), label='base')]
    for _ in range(data.draw(st.integers(1, 4), label='mutations')):
        kind = data.draw(st.sampled_from(TREE_MUTATIONS + TEXT_MUTATIONS), label='mutation')
        root = None
        if kind in TREE_MUTATIONS:
            try:
                root = ET.fromstring(text)
            except (ET.ParseError, UnicodeError):
                kind = 'inject'     # the text no longer parses: mutate it as text
        if root is not None:
            if _mutate_tree(data, root, kind):
                text = ET.tostring(root, encoding='unicode')
        else:
            text = _mutate_text(data, text, kind)
    return text


def _state(data, model):
    """Draw a random state: revolute within +-pi, prismatic within +-1e3 m, both limited."""
    q = []
    for name in model.joint_names:
        info = model.joints[name]
        span = 1e3 if info.type == 'prismatic' else math.pi
        lo, hi = max(info.lower, -span), min(info.upper, span)
        if not lo <= hi:
            lo = hi = min(max(0.0, info.lower), info.upper)
        q.append(data.draw(st.floats(lo, hi), label=f'q[{name}]'))
    qd, qdd = (np.array(data.draw(st.lists(st.floats(-10, 10), min_size=model.n,
                                           max_size=model.n), label=label))
               for label in ('qd', 'qdd'))
    return np.array(q, dtype=float), qd, qdd


def numeric_junk_urdf(data):
    """Draw a valid base URDF and replace one number of one numeric attribute."""
    root = ET.fromstring(BASES[data.draw(st.sampled_from(sorted(BASES)), label='base')])
    numeric = [(e, k) for e in root.iter() for k in sorted(e.attrib) if k in NUMERIC_KEYS]
    e, key = _pick(data, numeric, 'numeric attribute')
    values = e.get(key).split()
    values[data.draw(st.integers(0, len(values) - 1), label='which')] = data.draw(
        st.one_of(st.sampled_from(NUMBERS), st.floats().map(repr), st.sampled_from(JUNK)),
        label='number')
    e.set(key, ' '.join(values))
    return ET.tostring(root, encoding='unicode')


# no per-example deadline: a wall-clock limit fails on a busy machine; the loader's work is
# bounded by test_urdf_corpus.py (CPU time and scaling), not here
FUZZ_SETTINGS = settings(max_examples=500, deadline=None, derandomize=True, database=None,
                         suppress_health_check=[HealthCheck.too_slow,
                                                HealthCheck.data_too_large])


@pytest.mark.slow
@FUZZ_SETTINGS
@given(data=st.data())
def test_mutated_urdf_loads_or_raises_model_error(data):
    check_loads_or_refuses(mutated_urdf(data), data)


@pytest.mark.slow
@FUZZ_SETTINGS
@given(data=st.data())
def test_numeric_junk_loads_or_raises_model_error(data):
    check_loads_or_refuses(numeric_junk_urdf(data), data)


def check_loads_or_refuses(text, data):
    """Load text: ModelError naming the source, or a model with finite dynamics."""
    note(f'URDF:\n{text}')
    with warnings.catch_warnings():
        warnings.simplefilter('error', RuntimeWarning)    # numpy overflow etc. count too
        _check_loads_or_refuses(text, data)


def _check_loads_or_refuses(text, data):
    WARNINGS.messages.clear()
    try:
        model = RobotModel.from_urdf_string(text, source=SOURCE)
    except ModelError as exc:
        message = str(exc)
        assert message.startswith(f'{SOURCE}: ') and len(message) > len(SOURCE) + 10, message
        return
    finally:
        for message in WARNINGS.messages:
            assert message.startswith(f'{SOURCE}: '), message
    q, qd, qdd = _state(data, model)
    M = model.mass_matrix(q)
    G = model.gravity_torque(q)
    tau = model.inverse_dynamics(q, qd, qdd)
    for name, value in (('M', M), ('G', G), ('tau', tau)):
        assert np.all(np.isfinite(value)), f'{name} is not finite: {value}'
    assert np.allclose(M, M.T, rtol=0, atol=1e-12 * max(1.0, np.abs(M).max()))
    if model.n <= 12:
        assert np.all(np.isfinite(model.coriolis_star(q)))
