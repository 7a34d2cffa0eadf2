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
The URDF corpus (``test/urdf_corpus/``) and enormous documents.

Every corpus file is a realistic robot with one defect; ``index.yaml`` says what must
happen: ``ModelError`` whose message names the file and matches a regex naming the culprit,
or a model that loads with the expected warning on logger ``kron_dynamics`` (or none).

Enormous documents are generated here: long chains and wide trees load, and the work grows
linearly with their size; beyond ``urdf_loader.MAX_LINKS`` links, and for 50 MB garbage, deep
nesting, millions of elements or huge text, the loader refuses with ``ModelError`` after
little work and without allocating much memory. Work is measured as CPU time of this process
(``time.process_time``), compared within one run or against a very generous bound, never as
wall-clock time: a busy machine must not fail these tests.
"""

import gc
import logging
import re
import time
import tracemalloc

import numpy as np
import pinocchio as pin     # a declared test dependency (requirements.txt): no skip
import pytest
import yaml

from kron_dynamics import ModelError, RobotModel
from kron_dynamics.model import inertia, urdf as urdf_loader
from kron_dynamics.testing.random_urdf import chain_urdf, random_urdf

from conftest import TEST_DIR
import pinocchio_oracle

CORPUS = TEST_DIR / 'urdf_corpus'
INDEX = yaml.safe_load((CORPUS / 'index.yaml').read_text())
REFUSED = sorted(name for name, entry in INDEX.items() if entry['expect'] == 'error')
LOADED = sorted(name for name, entry in INDEX.items() if entry['expect'] == 'load')

# Work bounds. Loading four times as many links may cost at most LINEAR_RATIO times the CPU
# time (linear: 4; a quadratic step: 16; the bound is their geometric middle, so that the
# cache and load noise of a busy machine, which moved a 2x ratio from 2.2 to 3.1, cannot
# decide). A 50 MB document is refused within REFUSE_CPU_SECONDS of
# CPU time (this machine: at most 0.8 s) and REFUSE_MEMORY_MB of peak memory growth (at most
# 170 MB, for the 50 MB comment and attribute, which libxml2 buffers).
LINEAR_RATIO = 8.0
REFUSE_CPU_SECONDS = 15.0
REFUSE_MEMORY_MB = 400


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name == 'kron_dynamics' and r.levelno >= logging.WARNING]


def test_index_and_directory_agree():
    files = sorted(p.name for p in CORPUS.iterdir() if p.name != 'index.yaml')
    assert files == sorted(INDEX), 'every corpus file needs an index entry and vice versa'
    assert len(INDEX) >= 25
    for name, entry in INDEX.items():
        assert entry['expect'] in ('error', 'load'), name
        assert entry['defect'], name
        assert ('match' if entry['expect'] == 'error' else 'warning') in entry, name


@pytest.mark.parametrize('name', REFUSED)
def test_corpus_file_is_refused_naming_the_culprit(name):
    path = CORPUS / name
    with pytest.raises(ModelError) as info:
        RobotModel.from_urdf_file(path)
    message = str(info.value)
    assert str(path) in message, message
    assert re.search(INDEX[name]['match'], message), message


@pytest.mark.parametrize('name', LOADED)
def test_corpus_file_loads_with_the_expected_warning(name, caplog):
    path = CORPUS / name
    with caplog.at_level(logging.WARNING, logger='kron_dynamics'):
        model = RobotModel.from_urdf_file(path)
    warnings = _warnings(caplog)
    expected = INDEX[name]['warning']
    if expected is None:
        assert not warnings, warnings
    else:
        assert any(re.search(expected, w) for w in warnings), warnings
        assert all(w.startswith(f'{path}: ') for w in warnings), warnings
    # a floating or planar base (a world link and its root joint): q starts with the base
    q = model.neutral()
    M = model.mass_matrix(q)
    assert np.all(np.isfinite(M)) and np.allclose(M, M.T)


def test_an_inertial_without_inertia_is_the_point_mass_urdfdom_reads():
    """Its mass counts (gravity, M) with a zero tensor, as Pinocchio's urdfdom reads it."""
    path = CORPUS / 'inertial_without_inertia.urdf'
    model = RobotModel.from_urdf_file(path)
    pinocchio_oracle.assert_agrees(pin, model, path, states=4, rtol=1e-12)
    xml = path.read_text(encoding='utf-8')
    mass = '<mass value="0.072"/>'
    assert xml.count(mass) == 1
    zero = '<inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/>'
    written = RobotModel.from_urdf_string(xml.replace(mass, mass + zero))
    without = RobotModel.from_urdf_string(xml.replace(mass, '<mass value="0"/>'))
    q = model.random_configuration(np.random.default_rng(3))
    np.testing.assert_array_equal(model.mass_matrix(q), written.mass_matrix(q))
    np.testing.assert_array_equal(model.gravity_torque(q), written.gravity_torque(q))
    # the camera's 72 g is felt at the shoulder lift (0.14 N m at this q)
    assert abs(model.gravity_torque(q) - without.gravity_torque(q))[1] > 0.1


def test_tiny_inertia_warning_is_about_m_not_about_small_numbers(caplog):
    """The stacker's 1e-3 kg m^2 carriage only translates: M is fine, no warning."""
    with caplog.at_level(logging.WARNING, logger='kron_dynamics'):
        RobotModel.from_urdf_file(TEST_DIR.parent / 'urdf' / 'stacker.urdf')
        RobotModel.from_urdf_file(TEST_DIR.parent / 'urdf' / 'rover_arm_regularized.urdf')
    assert not _warnings(caplog)


def test_tiny_inertia_warnings_are_capped(caplog):
    """A long chain has many joints that move little: a summary and the worst few only."""
    with caplog.at_level(logging.WARNING, logger='kron_dynamics'):
        RobotModel.from_urdf_string(chain_urdf(1000), source='chain.urdf')
    warnings = _warnings(caplog)
    assert re.search(r'chain\.urdf: \d+ joints move a tiny inertia', warnings[0]), warnings
    assert len(warnings) == 1 + inertia.MAX_TINY_WARNINGS
    assert re.search(r"chain\.urdf: joint 'j\d+' \(link 'l\d+'\) moves a tiny", warnings[1])


# ----------------------------------------------------------------- enormous models
def _load(xml, root_joint=None):
    logging.getLogger('kron_dynamics').disabled = True   # thousands of tiny-inertia joints
    try:
        return RobotModel.from_urdf_string(xml, source='big.urdf', root_joint=root_joint)
    finally:
        logging.getLogger('kron_dynamics').disabled = False


def cpu_seconds(function, repeat: int = 1) -> float:
    """Return the least CPU time of this process [s] that function() took in repeat calls."""
    best = float('inf')
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        function()
        best = min(best, time.process_time() - start)
    return best


def peak_memory_growth_mb(function) -> float:
    """
    Return how far function() raised the peak memory of this process above its start [MB].

    The resident high-water mark (VmHWM), reset just before the call through
    /proc/self/clear_refs (Linux); where that is not allowed, the peak of Python's allocations
    (tracemalloc, which sees less: not the buffers of C libraries).
    """
    gc.collect()
    try:
        with open('/proc/self/clear_refs', 'w') as f:
            f.write('5')    # resets VmHWM to the current resident size
    except OSError:
        tracemalloc.start()
        try:
            function()
            return tracemalloc.get_traced_memory()[1] / 2 ** 20
        finally:
            tracemalloc.stop()
    before = _proc_status_mb('VmRSS')
    function()
    return _proc_status_mb('VmHWM') - before


def _proc_status_mb(key: str) -> float:
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith(key + ':'):
                return int(line.split()[1]) / 1024
    raise KeyError(key)


def wide_tree(n_movable: int) -> str:
    """Return a bushy random tree (branching 0.9) with n_movable movable joints."""
    return random_urdf(np.random.default_rng(7), n_movable, n_movable // 10, branching=0.9)


@pytest.mark.slow
@pytest.mark.parametrize('xml', [
    pytest.param(lambda: chain_urdf(2000), id='chain_2000_links'),
    pytest.param(lambda: wide_tree(500), id='tree_500_joints'),
])
def test_enormous_model_loads(xml):
    model = _load(xml())
    q = np.random.default_rng(0).uniform(-1, 1, model.n)
    M = model.mass_matrix(q)
    tau = model.inverse_dynamics(q, q, q)
    assert np.all(np.isfinite(M)) and np.all(np.isfinite(tau))
    assert np.allclose(M, M.T, rtol=0, atol=1e-12 * np.abs(M).max())


def mimic_chain(n_links: int) -> str:
    """Return chain_urdf(n_links) where every even joint mimics the joint before it."""
    def add_mimic(match):
        i = int(match.group(1))
        return match.group(0) + (f'<mimic joint="j{i - 1}" multiplier="0.5" offset="0.1"/>'
                                 if i % 2 == 0 else '')
    return re.sub(r'<joint name="j(\d+)"[^>]*>', add_mimic, chain_urdf(n_links))


@pytest.mark.slow
@pytest.mark.parametrize('make, size, root_joint', [
    pytest.param(chain_urdf, urdf_loader.MAX_LINKS // 4, None, id='chain_to_the_link_limit'),
    pytest.param(wide_tree, 250, None, id='wide_tree'),
    pytest.param(chain_urdf, urdf_loader.MAX_LINKS // 4, 'floating', id='floating_chain'),
    pytest.param(chain_urdf, urdf_loader.MAX_LINKS // 4, 'planar', id='planar_chain'),
    pytest.param(mimic_chain, urdf_loader.MAX_LINKS // 4, None, id='mimic_chain'),
])
def test_loading_work_grows_linearly_with_the_size(make, size, root_joint):
    """Four times the links, about four times the CPU time: no quadratic step in the loader."""
    small, large = make(size), make(4 * size)
    repeat = 3     # the least of a few runs: less noise
    ratio = (cpu_seconds(lambda: _load(large, root_joint), repeat)
             / cpu_seconds(lambda: _load(small, root_joint), repeat))
    assert ratio < LINEAR_RATIO, f'four times the size took {ratio:.2f} times the CPU time'


@pytest.mark.slow
def test_model_at_the_link_limit_loads_and_one_more_link_is_refused():
    loaded = []
    load_cpu = cpu_seconds(lambda: loaded.append(_load(chain_urdf(urdf_loader.MAX_LINKS))))
    assert loaded[0].n == urdf_loader.MAX_LINKS - 1
    over = chain_urdf(urdf_loader.MAX_LINKS + 1, 'fixed')

    def refuse():
        with pytest.raises(ModelError, match=rf'^big\.urdf: refused: {urdf_loader.MAX_LINKS + 1} '
                                             rf'links, more than the limit of '
                                             rf'{urdf_loader.MAX_LINKS}'):
            _load(over)
    # refused after counting, before the expensive steps: far less work than loading
    refuse_cpu = cpu_seconds(refuse)
    assert refuse_cpu < 0.5 * load_cpu, (refuse_cpu, load_cpu)


MB50 = 50 * 2 ** 20


def _garbage():
    codes = np.random.default_rng(0).integers(32, 127, MB50, dtype=np.uint8)
    return '<?xml version="1.0"?>\n' + codes.tobytes().decode('ascii')


HUGE_DOCUMENTS = {
    # id: (50 MB document, regex of the ModelError)
    'random_garbage': (_garbage, r'malformed XML: syntax error'),
    'garbage_after_valid_start': (lambda: '<robot name="r"><link name="a"/>'
                                  + _garbage()[22:], r'malformed XML'),
    'deep_nesting': (lambda: '<robot name="r">' + '<link>' * (MB50 // 13)
                     + '</link>' * (MB50 // 13) + '</robot>',
                     rf'refused: XML elements nested deeper than {urdf_loader.MAX_DEPTH}'),
    'millions_of_links': (lambda: '<robot name="r">' + ''.join(
        f'<link name="l{i}"/>' for i in range(MB50 // 20)) + '</robot>',
        rf'refused: more than {urdf_loader.MAX_ELEMENTS} XML elements'),
    'millions_of_unknown_elements': (lambda: '<robot name="r"><link name="a"/>'
                                     + '<gazebo/>' * (MB50 // 9) + '</robot>',
                                     r'refused: more than \d+ XML elements'),
    'huge_text_node': (lambda: '<robot name="r"><link name="a"/>' + 'x' * MB50 + '</robot>',
                       rf'refused: a text node longer than {urdf_loader.MAX_NODE_CHARACTERS}'),
    'huge_comment': (lambda: '<robot name="r"><link name="a"/><!--' + 'x' * MB50
                     + '--></robot>',
                     rf'refused: a comment longer than {urdf_loader.MAX_NODE_CHARACTERS}'),
    'huge_attribute': (lambda: '<robot name="' + 'x' * MB50 + '"><link name="a"/></robot>',
                       r'refused: an attribute value of <robot> is longer than '
                       rf'{urdf_loader.MAX_NODE_CHARACTERS}'),
    'entity_quadratic_blowup': (lambda: '<!DOCTYPE r [<!ENTITY a "' + 'x' * 100_000
                                + '">]><robot name="r">' + '&a;' * 100_000 + '</robot>',
                                r'refused: a <!DOCTYPE> declaration is not allowed'),
}


@pytest.mark.slow   # 50 MB each
@pytest.mark.parametrize('make, pattern', list(HUGE_DOCUMENTS.values()),
                         ids=list(HUGE_DOCUMENTS))
def test_huge_document_is_refused_after_little_work(make, pattern):
    xml = make()

    def refuse():
        with pytest.raises(ModelError, match=pattern):
            RobotModel.from_urdf_string(xml, source='huge.urdf')
    cpu = cpu_seconds(refuse)
    assert cpu < REFUSE_CPU_SECONDS, f'{cpu:.2f} s of CPU time to refuse'
    grown = peak_memory_growth_mb(refuse)
    assert grown < REFUSE_MEMORY_MB, f'peak memory grew by {grown:.0f} MB'


def test_each_text_node_is_held_to_the_limit_alone():
    """
    Two text nodes of 0.6 x MAX_NODE_CHARACTERS (an element's and the text after it) load.

    The document is past MAX_NODE_CHARACTERS, so the guarded reader counts its text: per
    node, not the sum of neighbours.
    """
    part = 'x' * (6 * urdf_loader.MAX_NODE_CHARACTERS // 10)
    xml = chain_urdf(2).replace('</robot>', f'<note>{part}</note>{part}</robot>')
    assert len(xml) > urdf_loader.MAX_NODE_CHARACTERS
    reference = RobotModel.from_urdf_string(chain_urdf(2))
    model = RobotModel.from_urdf_string(xml, source='long_text.urdf')
    assert model.joint_names == reference.joint_names and model.n >= 1
    q = np.linspace(0.3, -0.2, model.n)
    np.testing.assert_array_equal(model.mass_matrix(q), reference.mass_matrix(q))
