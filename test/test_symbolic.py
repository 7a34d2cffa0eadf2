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
Closed-form equations of motion (kron_dynamics.symbolic, kron_dynamics.symbolic.codegen).

The stacker's eqs. (102)-(107) of 000 with the typos corrected, the rover arm's explicit
elements of 003, generated straight-line code against the numeric core, the bounds and the
``kron-dynamics equations`` command.
"""

import dataclasses
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
import sympy as sp

import closed_forms
from conftest import REPO, URDF_DIR
from kron_dynamics import ModelError, RobotModel
from kron_dynamics.symbolic.codegen import load_module
from kron_dynamics.testing.random_urdf import random_urdf
from kron_dynamics.symbolic import (DEFAULT_MAX_OPERATIONS, DEFAULT_MAX_SECONDS, load_dh_yaml,
                                    load_source, stacker_symbolic, SymbolicModel,
                                    SymbolicTooLarge)
from kron_dynamics.symbolic.budget import Budget
from kron_dynamics.symbolic.codegen import _decimal, CSE_SECONDS_PER_OPERATION, latex_name

RANDOM_TREES = [(20, 2), (21, 3), (22, 4), (23, 4), (24, 3), (25, 4)]   # (seed, n movable)
# CPU seconds of this process (not wall-clock time: a busy machine must not fail the test) for
# the two machines' equations, which take about one; against an expression blow-up
CPU_SECONDS = 60.0

STACKER_YAML = """\
robot: stacker_yaml
base_rpy: [-pi/2, 0, 0]
gravity: [0, 0, -g]
parameters: {m1: 200000, m2: 150000, m3: 60000, d2: 9, yG2: -3.5, a3: 40, l3: 17,
             I2x: 2.05e6, I2y: 2.60e6, I2z: 3.05e6, I3x: 1.25e5, I3y: 8.045e6, I3z: 8.08e6,
             g: 9.81}
rows:
  - {joint: q1_travel, type: prismatic, alpha: pi/2, mass: m1, inertia: [0.001, 0.001, 0.001]}
  - {joint: q2_slew, d: d2, alpha: pi/2, mass: m2, com: [0, yG2, 0], inertia: [I2x, I2y, I2z]}
  - joint: q3_luff
    a: a3
    mass: m3
    com: [l3 - a3, 0, 0]
    inertia: [[I3x, 0, 0], [0, I3y, 0], [0, 0, I3z]]
"""

# one revolute joint about a vertical axis: M = m + 1, C* = 0, G = 0
ONE_ROW = 'rows:\n  - {joint: j1, a: 1, mass: m, inertia: [1, 1, 1]}\nparameters: {m: 2}\n'


def is_zero(expr) -> bool:
    """Return True if sympy proves expr == 0."""
    return sp.simplify(expr) == 0


def assert_equal_matrix(actual, expected):
    """Assert two sympy matrices are equal element by element (simplify of the difference)."""
    expected = sp.Matrix(expected)
    assert actual.shape == expected.shape
    bad = [(i, j, actual[i, j], expected[i, j]) for i in range(actual.rows)
           for j in range(actual.cols) if not is_zero(actual[i, j] - expected[i, j])]
    assert not bad, f'elements differ (row, column, actual, expected): {bad}'


def assert_close(actual, expected, rtol=1e-9):
    """Assert agreement relative to the largest entry of expected."""
    scale = max(1e-12, float(np.max(np.abs(expected))))
    np.testing.assert_allclose(actual, expected, rtol=0, atol=rtol * scale)


@pytest.fixture(scope='module')
def stacker_eom():
    """Compute the symbolic stacker's equations once; return them and the CPU time taken."""
    start = time.process_time()
    model = stacker_symbolic()
    eom = model.equations()
    return model, eom, time.process_time() - start


@pytest.fixture(scope='module')
def rover_eom():
    """Compute the rover arm's equations (003 Table 3) once; return them and the CPU time."""
    start = time.process_time()
    model = SymbolicModel.from_urdf_file(URDF_DIR / 'rover_arm.urdf')
    eom = model.equations()
    return model, eom, time.process_time() - start


# ----------------------------------------------------------------------------- stacker (000)
def test_stacker_M_Cstar_G_eqs_106_107(stacker_eom):
    """Reproduce eqs. (106), (107) and G with the typos corrected, in a few seconds."""
    model, eom, cpu_seconds = stacker_eom
    assert cpu_seconds < CPU_SECONDS
    paper = {name: closed_forms.in_symbols(expr, model.q, model.symbols)
             for name, expr in closed_forms.stacker().items()}
    q1 = model.q[0]
    assert_equal_matrix(eom.M, paper['M_106'])
    assert_equal_matrix(eom.Cstar, paper['Cstar_107'])
    assert_equal_matrix(eom.G, paper['G'])
    # exact structure: the zeros of eq. (107) are exact zeros, no float appears
    assert eom.M[1, 2] == 0 and eom.Cstar[0, 0] == 0 and eom.Cstar[1, 4] == 0
    assert not any(e.atoms(sp.Float) for e in list(eom.M) + list(eom.Cstar) + list(eom.G))
    assert q1 not in eom.M.free_symbols


def test_stacker_boom_tip_jacobians_hessians_eqs_102_105(stacker_eom):
    """J_T, H_T, J_R, H_R of the boom tip (link3) in DH frame 0 equal eqs. (102)-(105)."""
    model = stacker_eom[0]
    JT, JR = model.jacobians('link3', frame='link0')
    HT, HR = model.hessians('link3', frame='link0')
    for actual, eq in [(JT, 'JT_102'), (HT, 'HT_103'), (JR, 'JR_104'), (HR, 'HR_105')]:
        assert_equal_matrix(actual, closed_forms.in_symbols(closed_forms.stacker()[eq],
                                                            model.q, model.symbols))


def test_stacker_urdf_numeric_is_exact():
    """The stacker URDF (numbers, pi/2 rotations) gives exact entries: 40 s2 c3, not floats."""
    model = SymbolicModel.from_urdf_file(URDF_DIR / 'stacker.urdf')
    values = {s.name: v for s, v in closed_forms.stacker_values().items()}
    paper = {name: closed_forms.in_symbols(expr, model.q, values.get)
             for name, expr in closed_forms.stacker().items()}
    JT, _ = model.jacobians('link3', frame='link0')
    assert_equal_matrix(JT, paper['JT_102'])             # 40 s2 c3, exactly
    M = model.mass_matrix()
    assert not any(e.atoms(sp.Float) for e in M)
    assert sp.expand(M[0, 1] - paper['M_106'][0, 1]) == 0
    assert M[2, 2] == paper['M_106'][2, 2]


def test_stacker_symbolic_values_match_the_urdf(stacker_eom):
    """Substituting Table 1-2 values into the symbolic stacker gives the URDF model's numbers."""
    model = stacker_eom[0]
    numeric = RobotModel.from_urdf_file(URDF_DIR / 'stacker.urdf')
    values = {model.symbols(k): v for k, v in model.parameter_values.items()}
    M = sp.lambdify([model.q], model.mass_matrix().subs(values), 'numpy')
    G = sp.lambdify([model.q], model.gravity_torque().subs(values), 'numpy')
    for q in np.random.default_rng(3).uniform([-50, -3, -0.6], [50, 3, 0.6], (4, 3)):
        assert_close(np.array(M(q), dtype=float), numeric.mass_matrix(q), 1e-12)
        assert_close(np.array(G(q), dtype=float).ravel(), numeric.gravity_torque(q), 1e-12)


# ----------------------------------------------------------------------------- rover arm (003)
def test_rover_arm_explicit_elements(rover_eom):
    """M[2][1] = 0.00192 cos q2 (1-based) exactly; branch blocks and M33, M55 exactly zero."""
    model, eom, cpu_seconds = rover_eom
    assert cpu_seconds < CPU_SECONDS
    M = eom.M
    assert M[1, 0] == closed_forms.in_symbols(closed_forms.ROVER_ARM_M21, model.q)
    assert M[0, 1] == M[1, 0]
    for i, j in [(1, 3), (1, 4), (2, 3), (2, 4)]:
        assert M[i, j] == 0 and M[j, i] == 0           # sympy zero, not a small number
    assert M[2, 2] == 0 and M[4, 4] == 0
    # C* and G have the same branch structure: q3 never meets q4, q5 in one element
    for e in eom.Cstar:
        names = {s.name for s in e.free_symbols}
        assert not ({'q2', 'q3'} & names and {'q4', 'q5'} & names)
    text = eom.to_text()
    assert 'M[1][2] = 0.00192*c2' in text


def test_rover_arm_symbolic_parameter_names():
    """URDF parameters are named by body index: m3, xG3, I3y, r3z, g with the URDF values."""
    model = SymbolicModel.from_urdf_file(URDF_DIR / 'rover_arm.urdf', symbolic_parameters=True)
    names = {s.name for s in model.parameters}
    assert {'m1', 'm5', 'xG3', 'zG2', 'I3y', 'I3z', 'I2x', 'r2y', 'r3z', 'g'} <= names
    assert 'I3x' not in names and 'yG3' not in names         # zeros stay zeros
    assert model.parameter_values['m3'] == 0.6
    assert model.parameter_values['r3z'] == -0.08
    assert model.parameter_values['g'] == 9.81
    m3, xG3, r3x, r3z = model.symbols('m3 xG3 r3x r3z')
    q2 = model.q[1]
    M = model.mass_matrix()
    # 003: M[2][1] = -m3 (r3x + xG3) r3z cos q2 + (inertia term of link 3)
    expected = -m3 * r3z * (r3x + xG3) * sp.cos(q2)
    assert is_zero((M[1, 0] - expected).subs(model.symbols('I3y'), model.symbols('I3z')))


# ----------------------------------------------------------------------------- generated code
def generated(model):
    """Return the imported module generated from a SymbolicModel."""
    return load_module(model.equations().to_python(), f'kron_gen_{model.name}')


def compare_module(module, numeric, rng, states=4, **params):
    """Compare M, C*, G and tau of a generated module with the numeric RobotModel (1e-9)."""
    n = numeric.n
    for _ in range(states):
        q, qd, qdd = rng.uniform(-2, 2, n), rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
        expected = [numeric.mass_matrix(q), numeric.coriolis_star(q), numeric.gravity_torque(q),
                    numeric.inverse_dynamics(q, qd, qdd)]
        actual = [module.mass_matrix(q, **params), module.coriolis_star(q, **params),
                  module.gravity_torque(q, **params),
                  module.inverse_dynamics(q, qd, qdd, **params)]
        scale = max(float(np.max(np.abs(e))) for e in expected)   # |qd|, |qdd| <= 1
        for a, e in zip(actual, expected):
            np.testing.assert_allclose(a, e, rtol=0, atol=1e-9 * scale)


def test_generated_python_stacker_symbolic(stacker_eom):
    """The symbolic stacker's module takes the parameters as keyword arguments or a dict."""
    model, eom, _ = stacker_eom
    module = load_module(eom.to_python(), 'kron_gen_stacker_symbolic')
    numeric = RobotModel.from_urdf_file(URDF_DIR / 'stacker.urdf')
    compare_module(module, numeric, np.random.default_rng(1))
    assert module.JOINT_NAMES == list(numeric.joint_names)
    q = np.array([1.0, 0.3, -0.2])
    heavier = numeric.mass_matrix(q)
    M = module.mass_matrix(q, m1=300000.0)
    assert M[0, 0] - heavier[0, 0] == pytest.approx(100000.0)
    assert np.allclose(module.mass_matrix(q, {'m1': 300000.0}), M)
    with pytest.raises(TypeError, match='unknown parameter'):
        module.gravity_torque(q, m7=1.0)
    with pytest.raises(ValueError, match='3 entries'):
        module.gravity_torque([0.0, 0.0])
    # the generated module names bad input as RobotModel does: never math's or NumPy's words
    for bad in (q + 1j, np.array([q, q]), 'abc', '123', b'123', None):
        with pytest.raises(ValueError, match='^q must be 3 real numbers, got '):
            module.mass_matrix(bad)
    with pytest.raises(ValueError, match=r'^q is not finite: \[1\.0, nan, -0\.2\]$'):
        module.gravity_torque([1.0, np.nan, -0.2])
    with pytest.raises(ValueError, match=r'^qd is not finite: \[0\.0, inf, 0\.0\]$'):
        module.inverse_dynamics(q, [0.0, np.inf, 0.0], q)
    for value in (np.nan, 'heavy'):
        with pytest.raises(ValueError, match=r"^parameter\(s\) \['m1'\] must be finite numbers"):
            module.gravity_torque(q, m1=value)


def test_generated_python_of_one_joint_and_one_parameter_without_a_value():
    """One joint and one parameter unpack as 1-tuples; a parameter with no value is required."""
    model = load_dh_yaml(ONE_ROW.replace('parameters: {m: 2}\n', ''))
    eom = model.equations()
    module = load_module(eom.to_python(), 'kron_gen_one_row')
    assert module.PARAMETERS == {'m': None}
    with pytest.raises(TypeError, match=r"^missing parameter value\(s\) \['m'\]$"):
        module.mass_matrix([0.3])
    assert module.mass_matrix([0.3], m=2.0).tolist() == [[3.0]]       # M = m + 1
    assert module.inverse_dynamics([0.3], [1.0], [0.5], {'m': 2.0}).tolist() == [1.5]
    text = eom.to_text()
    assert 'parameters:\n  m (no value)\n' in text and '  M[1][1] = m + 1\n' in text
    assert 'C* (n x n^2; entries not listed are 0):\n  C* = 0\n' in text
    assert 'abbreviations' not in text            # no sin or cos in M, C*, G
    tiny = load_dh_yaml(ONE_ROW.replace('{m: 2}', '{m: 2.5e-12}'))
    assert r'Parameters: $m = 2.5 \cdot 10^{-12}$.' in tiny.equations().to_latex()


def test_generating_python_is_bounded_by_max_seconds_too(stacker_eom):
    """The CSE's predicted time counts against max_seconds like the derivation's."""
    _, eom, _ = stacker_eom
    predicted = eom.operations * CSE_SECONDS_PER_OPERATION
    small = dataclasses.replace(eom, max_seconds=predicted / 2)
    with pytest.raises(SymbolicTooLarge, match=rf"^'stacker': generating Python code for "
                                               rf'{eom.operations} operations would take about '):
        small.to_python()
    assert 'def inverse_dynamics(' in dataclasses.replace(eom, max_seconds=None).to_python()


def test_text_and_latex_name_what_they_abbreviate_and_escape(stacker_eom):
    """The printers' conventions: s_k, c_k listed; 000's symbols; TeX-safe joint names."""
    _, eom, _ = stacker_eom
    assert 'abbreviations: s2 = sin(q2), c2 = cos(q2), s3 = sin(q3), c3 = cos(q3)\n' \
        in eom.to_text()
    tex = eom.to_latex()
    assert (r'Abbreviations: $s_{2} = \sin q_{2}$, $c_{2} = \cos q_{2}$, '
            r'$s_{3} = \sin q_{3}$, $c_{3} = \cos q_{3}$.') in tex
    assert r'$q_{1}$ = \texttt{q1\_travel} (prismatic)' in tex
    assert '$y_{G2} = -3.5$' in tex and '$I_{3y} = 8045000$' in tex
    assert latex_name('theta1') == r'\theta_{1}' and latex_name('len2') == r'\mathrm{len}_{2}'
    assert latex_name('yG2') == 'y_{G2}' and latex_name('I3x') == 'I_{3x}'


def test_latex_splits_an_element_longer_than_a_line_between_terms():
    """An element of the rover arm's symbolic M, C*, G over LATEX_LINE runs on several lines."""
    rover = SymbolicModel.from_urdf_file(URDF_DIR / 'rover_arm.urdf', symbolic_parameters=True)
    lines = rover.equations().to_latex().splitlines()
    continued = [k for k, line in enumerate(lines) if line.startswith(r'  &\quad ')]
    assert continued
    for k in continued:     # a new line of the same row, starting with a term's sign
        assert lines[k][len(r'  &\quad '):][:2] in ('+ ', '- '), lines[k]
        assert lines[k - 1].endswith(' \\\\'), lines[k - 1]


def test_rationals_print_as_decimals_when_short_and_exact():
    """6/3125 -> 0.00192 (003's value); 1/2, 1/3 and 1/2^20 stay fractions."""
    assert _decimal(sp.Rational(6, 3125)) == '0.00192'
    assert _decimal(sp.Rational(1, 2)) is None          # denominator <= 10: reads better
    assert _decimal(sp.Rational(1, 3)) is None          # no finite decimal
    assert _decimal(sp.Rational(1, 2 ** 20)) is None    # 9.5367431640625e-07: too long


@pytest.mark.parametrize('name', ['stacker', 'rover_arm', 'rover_arm_regularized', 'rp_arm',
                                  pytest.param('planar3r', marks=pytest.mark.slow)])
def test_generated_python_machines(name):
    """Generated straight-line functions agree with the numeric core on the bundled URDFs."""
    model = SymbolicModel.from_urdf_file(URDF_DIR / f'{name}.urdf')
    numeric = RobotModel.from_urdf_file(URDF_DIR / f'{name}.urdf')
    compare_module(generated(model), numeric, np.random.default_rng(2))


def test_generated_python_urdf_symbolic_parameters():
    """With --symbolic-parameters the defaults are the URDF numbers; changing one matches."""
    xml = (URDF_DIR / 'rover_arm_regularized.urdf').read_text()
    model = SymbolicModel.from_urdf_string(xml, symbolic_parameters=True, source='rover')
    module = generated(model)
    rng = np.random.default_rng(5)
    compare_module(module, RobotModel.from_urdf_string(xml), rng, states=2)
    heavier = xml.replace('<mass value="0.8"/>', '<mass value="1.3"/>', 1)   # link2
    assert heavier != xml
    compare_module(module, RobotModel.from_urdf_string(heavier), rng, states=2, m2=1.3)


@pytest.mark.parametrize('seed, n', RANDOM_TREES)
def test_generated_python_random_trees(seed, n):
    """Random trees (prismatic, tilted axes, fixed links, full inertias): agree to 1e-9."""
    rng = np.random.default_rng(seed)
    numeric = RobotModel.from_urdf_string(random_urdf(rng, n, n_fixed=2))
    model = SymbolicModel.from_model(numeric)
    compare_module(generated(model), numeric, rng)


def test_random_tree_jacobians_and_hessians():
    """Link Jacobians and Hessians (any link, a point, another frame) match RobotModel."""
    rng = np.random.default_rng(22)
    numeric = RobotModel.from_urdf_string(random_urdf(rng, 4, n_fixed=2))
    model = SymbolicModel.from_model(numeric)
    point = (0.1, -0.2, 0.3)
    for link in numeric.link_names[1:]:
        JT, JR = model.jacobians(link, point=point)
        HT, HR = model.hessians(link, point=point)
        JT0, _ = model.jacobians(link, frame='link1')
        f = sp.lambdify([model.q], [JT, JR, HT, HR, JT0], 'numpy')
        for q in rng.uniform(-2, 2, (2, numeric.n)):
            jt, jr, ht, hr, jt0 = (np.array(a, dtype=float) for a in f(q))
            njt, njr = numeric.jacobians(q, link, point)
            nht, nhr = numeric.hessians(q, link, point)
            R1 = numeric.link_pose(q, 'link1')[:3, :3]
            for a, b in [(jt, njt), (jr, njr), (ht, nht), (hr, nhr),
                         (jt0, R1.T @ numeric.jacobians(q, link)[0])]:
                np.testing.assert_allclose(a, b, atol=1e-10)


def test_armature_and_joint_order():
    """Armature is on M's diagonal and the joint order of the RobotModel is kept."""
    order = ['q3_luff', 'q1_travel', 'q2_slew']
    numeric = RobotModel.from_urdf_file(URDF_DIR / 'stacker.urdf', joint_names=order,
                                        armature=[10.0, 20.0, 30.0])
    model = SymbolicModel.from_model(numeric)
    assert model.joint_names == order
    compare_module(generated(model), numeric, np.random.default_rng(4))


# ----------------------------------------------------------------------------- DH YAML
def test_dh_yaml_stacker(tmp_path, stacker_eom):
    """A DH YAML file with symbolic entries gives the stacker's closed forms."""
    path = tmp_path / 'stacker.yaml'
    path.write_text(STACKER_YAML)
    model = load_dh_yaml(path)
    assert model.name == 'stacker_yaml'
    assert_equal_matrix(model.mass_matrix(), stacker_eom[1].M)
    assert_equal_matrix(model.gravity_torque(), stacker_eom[1].G)
    numbers = model.with_parameters()
    assert not numbers.parameters
    numeric = RobotModel.from_urdf_file(URDF_DIR / 'stacker.urdf')
    compare_module(generated(numbers), numeric, np.random.default_rng(6))


@pytest.mark.parametrize('change, message', [
    (('type: prismatic', 'type: spherical'), "type must be 'revolute' or 'prismatic'"),
    (('mass: m1', 'mass: m1 +* 2'), 'cannot parse'),
    (('mass: m1', 'mass: __import__'), 'cannot parse'),
    (('mass: m1', 'mass: q2'), 'reserved'),
    (('alpha: pi/2, mass', 'alfa: pi/2, mass'), "unknown key"),
    (('g: 9.81}', 'g: 9.81, zz: 1}'), 'unknown parameter'),
    (('inertia: [I2x, I2y, I2z]', 'inertia: [I2x, I2y]'), 'inertia'),
])
def test_dh_yaml_errors(tmp_path, change, message):
    """Bad DH YAML files raise ModelError naming the problem."""
    path = tmp_path / 'bad.yaml'
    path.write_text(STACKER_YAML.replace(*change))
    with pytest.raises(ModelError, match=message):
        load_dh_yaml(path)


@pytest.mark.parametrize('text, message', [
    ('rows: [\n', 'malformed YAML'),
    ('- {joint: j1}\n', "a DH YAML file is a mapping with a list 'rows'"),
    ('robot: arm\n', "a DH YAML file is a mapping with a list 'rows'"),
    (ONE_ROW + 'robots: arm\n', r"unknown key\(s\) \['robots'\]; allowed: \['base_rpy', "),
    (ONE_ROW.replace('rows:\n', 'rows:\n  - j0\n'), 'every entry of rows must be a mapping'),
    (ONE_ROW.replace('{m: 2}', '[m, 2]'), 'parameters must be a mapping name: value'),
    (ONE_ROW.replace('{m: 2}', '{m: two}'), "parameter 'm' must be a number, got 'two'"),
    (ONE_ROW.replace('{m: 2}', '{m: true}'), "parameter 'm' must be a number, got True"),
])
def test_dh_yaml_text_errors(text, message):
    """A DH YAML text that is not a table of rows and numeric parameters is named as such."""
    with pytest.raises(ModelError, match=r'^<yaml>: ' + message):
        load_dh_yaml(text)


def test_dh_yaml_files_that_cannot_be_read_are_named(tmp_path):
    missing = tmp_path / 'arm.yaml'
    with pytest.raises(ModelError, match=rf'^cannot read DH YAML file {re.escape(str(missing))}'):
        load_dh_yaml(missing)
    binary = tmp_path / 'binary.yaml'
    binary.write_bytes(b'\xff\xfe rows')
    with pytest.raises(ModelError, match=r'^cannot read DH YAML file .*binary\.yaml: .*decode'):
        load_dh_yaml(binary)


def test_dh_yaml_base_offset_and_yml_suffix(tmp_path):
    """base_xyz moves every link; a .yml file is a DH table too; no robot: named by its file."""
    path = tmp_path / 'one_row.yml'
    path.write_text(ONE_ROW + 'base_xyz: [1, 2, 3]\n')
    model = load_source(str(path))
    assert model.name == 'one_row'
    rotation, position = model.link_pose('link1')
    q1 = model.q[0]
    assert_equal_matrix(position, [sp.cos(q1) + 1, sp.sin(q1) + 2, 3])
    assert_equal_matrix(rotation, sp.rot_axis3(-q1))


def test_load_source_replaces_known_symbols_unless_asked_to_keep_them(tmp_path):
    """``kron-dynamics equations`` prints numbers; with --symbolic-parameters, symbols."""
    path = tmp_path / 'one_row.yaml'
    path.write_text(ONE_ROW)
    for source, mass in ((str(path), 'm'), ('stacker', 'm3')):
        kept = load_source(source, symbolic_parameters=True)
        numbers = load_source(source)
        assert kept.symbols(mass) in kept.parameters and not numbers.parameters
        values = {kept.symbols(k): v for k, v in kept.parameter_values.items()}
        assert_equal_matrix(kept.mass_matrix().xreplace(values), numbers.mass_matrix())


@pytest.mark.parametrize('change, message', [
    (dict(mass=''), 'mass: empty expression'),
    (dict(mass='1/0'), "mass: '1/0' is not a real expression"),
    (dict(mass=sp.sqrt(-2)), r'mass: sqrt\(2\)\*I is not a real expression'),
    (dict(com=[sp.I, 0, 0]), r'com\[0\]: I is not a real expression'),
    (dict(d=-sp.oo), 'd: -oo is not a real expression'),
    (dict(mass=sp.Eq(sp.Symbol('x'), 1)), r'mass: Eq\(x, 1\) is not an expression'),
    (dict(mass=True), 'mass: expected a number or an expression, got True'),
    (dict(mass=float('nan')), 'mass: nan is not finite'),
    (dict(mass=-1), 'mass must be >= 0'),
    (dict(com=[0, 1]), 'com: expected 3 entries, got 2'),
    (dict(com=5), 'com: expected a list of 3 entries, got 5$'),
    (dict(com='xyz'), "com: expected a list of 3 entries, got 'xyz'$"),   # not x, y and z
    (dict(com='0 0 0.1'), "com: expected a list of 3 entries, got '0 0 0.1'$"),   # as in URDF
    (dict(com={'x': 0, 'y': 0, 'z': 1}), 'com: expected a list of 3 entries, got {'),
    (dict(inertia='abc'), "inertia: inertia must be 3 values or a 3 x 3 matrix, got 'abc'$"),
    (dict(inertia=2.0), 'inertia: inertia must be 3 values or a 3 x 3 matrix, got 2.0$'),
    (dict(inertia=[1, 2]), r'inertia: inertia must be 3 values or a 3 x 3 matrix, got \[1, 2'),
    (dict(inertia=[[1, 0, 0], [0, 1], [0, 0, 1]]), 'inertia: expected a 3 x 3 matrix'),
    (dict(inertia=[[1, 0.5, 0], [0, 1, 0], [0, 0, 1]]), 'inertia: inertia tensor is not sym'),
])
def test_dh_rows_with_values_that_are_not_real_finite_3_vectors_are_named(change, message):
    """Each entry of a DH row (from YAML or Python) is refused with its row, joint and key."""
    row = {**dict(joint='j1', a=1, mass=2, inertia=[1, 1, 1]), **change}
    with pytest.raises(ModelError, match=r"^arm: DH row 1 \(joint 'j1'\): " + message):
        SymbolicModel.from_dh([row], 'arm')


def test_dh_rows_take_numpy_and_sympy_vectors_and_matrices_as_lists():
    """A com as a NumPy row or column or a SymPy column, an inertia as a 3 x 3 array: as lists."""
    base = dict(joint='j1', a=1, alpha=0.3, mass=2)
    lists = dict(com=[0.1, -0.2, 0.3], inertia=[[1, 0.1, 0], [0.1, 2, 0], [0, 0, 3]])
    expected = SymbolicModel.from_dh([{**base, **lists}, {**base, 'joint': 'j2', **lists}])
    com = np.array(lists['com'])
    for com in (com, com.reshape(3, 1), com.reshape(1, 3), sp.Matrix(com), tuple(lists['com'])):
        for inertia in (np.array(lists['inertia']), sp.Matrix(lists['inertia'])):
            row = {**base, 'com': com, 'inertia': inertia}
            model = SymbolicModel.from_dh([row, {**row, 'joint': 'j2'}])
            assert_equal_matrix(model.mass_matrix(), expected.mass_matrix())
            assert_equal_matrix(model.gravity_torque(), expected.gravity_torque())


@pytest.mark.parametrize('seed', range(3))
def test_dh_rows_with_offsets_and_twists_match_the_numeric_dh_model(seed):
    """
    Random DH tables (theta and alpha offsets, prismatic rows): M, C*, G and the link poses.

    Against RobotModel.from_dh, which builds a URDF from the same table (test_dh.py checks its
    frames against products of DH matrices).
    """
    from test_dh import random_rows
    rng = np.random.default_rng(seed)
    rows = [dataclasses.replace(r, inertia=(r.inertia + r.inertia.T) / 2)
            for r in random_rows(rng, 3)]
    numeric = RobotModel.from_dh(rows)
    keys = ('joint', 'type', 'a', 'alpha', 'd', 'theta', 'mass', 'com', 'inertia')
    model = SymbolicModel.from_dh([{k: np.asarray(getattr(r, k)).tolist() if k in keys[-2:]
                                    else getattr(r, k) for k in keys} for r in rows])
    assert tuple(model.joint_names) == numeric.joint_names
    f = sp.lambdify([model.q], [model.mass_matrix(), model.coriolis_star(),
                                model.gravity_torque()]
                    + [sp.Matrix.hstack(*model.link_pose(link)) for link in ('link2', 'link3')],
                    'numpy')
    # 1e-11: a number within DECIMAL_TOL (1e-12, relative) of a 10-digit decimal is made
    # that decimal, as cos(theta) and sin(theta) of a random offset often are
    for q in rng.uniform(-2, 2, (3, 3)):
        M, C, G, *poses = (np.array(x, dtype=float) for x in f(q))
        assert_close(M, numeric.mass_matrix(q), 1e-11)
        assert_close(C, numeric.coriolis_star(q), 1e-11)
        assert_close(G.ravel(), numeric.gravity_torque(q), 1e-11)
        for pose, link in zip(poses, ('link2', 'link3')):
            assert_close(pose, numeric.link_pose(q, link)[:3], 1e-11)


def test_models_that_have_no_closed_forms_here_are_named(tmp_path):
    """Duplicate DH joints, unknown parameters, a moving base, a tree without movable joints."""
    row = dict(joint='j1', a=1, mass='m', inertia=[1, 1, 1])
    with pytest.raises(ModelError, match=r"^arm: duplicate joint name\(s\) \['j1'\]"):
        SymbolicModel.from_dh([row, row], 'arm')
    with pytest.raises(ModelError, match=r"^unknown parameter\(s\) \['zz'\]"):
        SymbolicModel.from_dh([row], 'arm').with_parameters({'zz': 1.0})
    floating = RobotModel.from_urdf_file(URDF_DIR / 'rp_arm.urdf', root_joint='floating')
    with pytest.raises(ModelError, match=r"^robot '.*' has a floating base: the closed forms "
                                         'are of fixed-base trees'):
        SymbolicModel.from_model(floating)
    welded = tmp_path / 'welded.urdf'
    welded.write_text('<robot name="welded"><link name="a"/><link name="b"><inertial>'
                      '<mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" '
                      'izz="1"/></inertial></link><joint name="w" type="fixed">'
                      '<parent link="a"/><child link="b"/></joint></robot>')
    with pytest.raises(ModelError, match='the model has no movable joints'):
        SymbolicModel.from_urdf_file(welded)


# ----------------------------------------------------------------------------- bounds
def test_time_bound_raises_clear_error():
    """A tiny time budget stops a 7-joint tree with SymbolicTooLarge naming max_seconds."""
    rng = np.random.default_rng(7)
    numeric = RobotModel.from_urdf_string(random_urdf(rng, 7, n_fixed=0, prismatic_fraction=0))
    model = SymbolicModel.from_model(numeric, max_seconds=0.05)
    start = time.process_time()
    with pytest.raises(SymbolicTooLarge, match=r'max_seconds=0\.05.*--max-seconds'):
        model.equations()
    # it stopped early (unbounded, this tree takes about 40 s of CPU); CPU time, not the clock
    assert time.process_time() - start < 10.0
    assert issubclass(SymbolicTooLarge, ModelError)


def test_size_bound_raises_clear_error():
    """A tiny size budget raises SymbolicTooLarge naming max_operations."""
    model = SymbolicModel.from_urdf_file(URDF_DIR / 'rover_arm.urdf', max_operations=20)
    with pytest.raises(SymbolicTooLarge, match=r'max_operations=20.*--max-operations'):
        model.equations()


def test_the_time_bound_is_checked_between_steps_and_predicted_before_a_product():
    """Budget.check stops once max_seconds are spent; charge before a product that alone would."""
    budget = Budget('arm', max_seconds=30.0, max_operations=None)
    budget.check('step 1')
    budget.start -= 31.0                          # as if 31 s had been spent
    with pytest.raises(SymbolicTooLarge,
                       match=r'^arm: .* max_seconds=30 \(3\d\.\d s spent, at step 2\)'):
        budget.check('step 2')
    fresh = Budget('arm', max_seconds=30.0, max_operations=None)
    fresh.charge(1000, 'M')                       # about 4 ms by the cost model
    with pytest.raises(SymbolicTooLarge, match=r'max_seconds=30 \(\d+\.\d s spent, the next '
                                               r'product alone needs about 40 s, at C\*\)'):
        fresh.charge(10_000_000, 'C*')            # about 40 s by the cost model
    unbounded = Budget('arm', max_seconds=None, max_operations=None)
    unbounded.start -= 1e6
    unbounded.check('step 1')
    unbounded.charge(10 ** 12, 'M')


def test_unknown_link_and_no_joints():
    """Unknown links and models without movable joints are ModelErrors."""
    model = SymbolicModel.from_urdf_file(URDF_DIR / 'rp_arm.urdf')
    with pytest.raises(ModelError, match="unknown link 'nope'"):
        model.jacobians('nope')
    with pytest.raises(ModelError, match='empty'):
        SymbolicModel.from_dh([])


# ----------------------------------------------------------------------------- CLI
def run_cli(*args, timeout=120):
    """Run ``python -m kron_dynamics.cli equations ...`` and return the completed process."""
    return subprocess.run([sys.executable, '-m', 'kron_dynamics.cli', 'equations', *args],
                          capture_output=True, text=True, timeout=timeout, cwd=REPO)


@pytest.mark.slow   # the CLI tests run child processes
def test_cli_text_rover_arm():
    """Text output of the rover arm lists 003's element M[2][1] = 0.00192 cos q2."""
    result = run_cli(str(URDF_DIR / 'rover_arm.urdf'))
    assert result.returncode == 0, result.stderr
    assert "M(q) q'' + C*(q) (q' kron q') + G(q) = tau" in result.stdout
    assert 'M[1][2] = 0.00192*c2' in result.stdout
    assert 'M[2][4] = 0' in result.stdout


def latex_stacker() -> str:
    """Return the stacker's symbolic equations as a LaTeX document from the CLI."""
    result = run_cli('stacker', '--symbolic-parameters', '--format', 'latex')
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.slow
def test_cli_latex_stacker_symbolic():
    """Print a complete LaTeX document."""
    tex = latex_stacker()
    assert tex.startswith(r'\documentclass') and r'\begin{document}' in tex
    assert tex.rstrip().endswith(r'\end{document}')
    assert r'\usepackage{amsmath}' in tex and 'I_{3y}' in tex and 'l_{3}' in tex


@pytest.mark.slow
@pytest.mark.skipif(shutil.which('pdflatex') is None,
                    reason='pdflatex (TeX Live) is not a project dependency and is not installed '
                           'here; the document text is checked by '
                           'test_cli_latex_stacker_symbolic, and this compile check runs on '
                           'machines with TeX')
def test_cli_latex_stacker_compiles(tmp_path):
    """The LaTeX document compiles with pdflatex."""
    tex = latex_stacker()
    (tmp_path / 'eom.tex').write_text(tex)
    done = subprocess.run(['pdflatex', '-interaction=nonstopmode', '-halt-on-error', 'eom.tex'],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:]


@pytest.mark.slow
def test_cli_python_dh_yaml(tmp_path):
    """``--format python`` of a DH YAML file writes an importable module (symbolic defaults)."""
    path = tmp_path / 'stacker.yaml'
    path.write_text(STACKER_YAML)
    out = tmp_path / 'stacker_eom.py'
    result = run_cli(str(path), '--symbolic-parameters', '--format', 'python', '-o', str(out))
    assert result.returncode == 0, result.stderr
    source = out.read_text()
    assert 'def inverse_dynamics(q, qd, qdd, params=None, **kwargs)' in source
    assert 'Generated by kron_dynamics' in source and 'q1 = q1_travel' in source
    module = load_module(source, 'kron_gen_cli_stacker')
    numeric = RobotModel.from_urdf_file(URDF_DIR / 'stacker.urdf')
    compare_module(module, numeric, np.random.default_rng(8), states=2)


@pytest.mark.slow
def test_cli_reports_too_large(tmp_path):
    """A model over the bound exits with code 2 and names the option to raise."""
    path = tmp_path / 'big.urdf'
    path.write_text(random_urdf(np.random.default_rng(9), 7, n_fixed=0, prismatic_fraction=0))
    result = run_cli(str(path), '--max-seconds', '0.05')
    assert result.returncode == 2
    assert 'max_seconds=0.05' in result.stderr and '--max-seconds' in result.stderr
    bad = run_cli(str(tmp_path / 'missing.urdf'))
    assert bad.returncode == 2 and 'neither a file nor a bundled machine' in bad.stderr


@pytest.mark.parametrize('bounds', [dict(max_seconds=-1.0), dict(max_seconds=float('nan')),
                                    dict(max_seconds=True), dict(max_seconds='30'),
                                    dict(max_operations=-5), dict(max_operations=2.5),
                                    dict(max_operations=0), dict(max_operations=True)])
def test_bad_bounds_are_refused_by_name(bounds):
    """A bound is None (no bound) or > 0: never a NaN that no time exceeds, never -1."""
    (name, value), = bounds.items()
    with pytest.raises(ModelError, match=rf'^{name} must be .*> 0, or None for no bound .*got '
                                         + re.escape(repr(value))):
        SymbolicModel.from_urdf_file(URDF_DIR / 'rp_arm.urdf', **bounds)


def test_cli_refuses_bad_bounds_and_names_an_output_it_cannot_write(tmp_path, capsys):
    from kron_dynamics.cli import main
    urdf = str(URDF_DIR / 'rp_arm.urdf')
    for option, value in (('--max-seconds', '-1'), ('--max-seconds', 'nan'),
                          ('--max-operations', '-5')):
        assert main(['equations', urdf, option, value]) == 2
        name = option[2:].replace('-', '_')
        assert f'{name} must be' in capsys.readouterr().err
    missing = tmp_path / 'missing' / 'eom.txt'
    assert main(['equations', urdf, '-o', str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.startswith('kron-dynamics equations: ') and str(missing) in err, err
    assert err.count('\n') == 1 and 'Traceback' not in err
    assert main(['equations', urdf, '--max-seconds', '0', '--max-operations', '0']) == 0
    assert "M(q) q'' + C*(q) (q' kron q') + G(q) = tau" in capsys.readouterr().out


def test_the_command_bounds_by_default_and_says_what_it_wrote(tmp_path, capsys, monkeypatch):
    """Without --max-seconds / --max-operations the defaults (30 s, 500000) apply."""
    from kron_dynamics.cli import main
    from kron_dynamics.symbolic import command
    assert (DEFAULT_MAX_SECONDS, DEFAULT_MAX_OPERATIONS) == (30.0, 500_000)   # as --help says
    urdf = str(URDF_DIR / 'rp_arm.urdf')
    monkeypatch.setattr(command, 'DEFAULT_MAX_OPERATIONS', 3)
    assert main(['equations', urdf]) == 2
    assert 'max_operations=3 ' in capsys.readouterr().err
    monkeypatch.setattr(command, 'DEFAULT_MAX_OPERATIONS', DEFAULT_MAX_OPERATIONS)
    monkeypatch.setattr(command, 'DEFAULT_MAX_SECONDS', 1e-9)
    assert main(['equations', urdf]) == 2
    assert 'max_seconds=1e-09 ' in capsys.readouterr().err
    out = tmp_path / 'eom.txt'
    assert main(['equations', urdf, '--max-seconds', '0', '-o', str(out)]) == 0
    assert capsys.readouterr() == ('', f'wrote {out}\n')
    assert "M(q) q'' + C*(q) (q' kron q') + G(q) = tau" in out.read_text()


def test_armature_from_a_urdf_and_bad_options_are_named():
    """armature= as RobotModel.from_urdf_file takes it; a bad option named, not Python's."""
    path = URDF_DIR / 'rp_arm.urdf'
    numeric = RobotModel.from_urdf_file(path, armature=[0.5, 0.25])
    model = SymbolicModel.from_urdf_file(path, armature=[0.5, 0.25])
    module = load_module(model.equations().to_python(), 'kron_gen_rp_arm_armature')
    compare_module(module, numeric, np.random.default_rng(3))
    assert module.mass_matrix([0.0, 0.2])[0, 0] - RobotModel.from_urdf_file(path).mass_matrix(
        [0.0, 0.2])[0, 0] == pytest.approx(0.5)
    for options, message in [(dict(symbolic_parameters=np.array([True, False])),
                              '^symbolic_parameters must be True or False, got array'),
                             (dict(trig_simplify='yes'),
                              "^trig_simplify must be True or False, got 'yes'$"),
                             (dict(armature=[0.5]), r'armature must have shape \(2,\)')]:
        with pytest.raises(ModelError, match=message):
            SymbolicModel.from_urdf_file(path, **options)
    with pytest.raises(ModelError, match='^from_model takes the armature of the RobotModel'):
        SymbolicModel.from_model(numeric, armature=[1.0, 1.0])
    plain = SymbolicModel.from_urdf_file(path)
    for link in (['link2'], np.array(['link2'])):
        with pytest.raises(ModelError, match=r"^unknown link .*; links: \['base_link'"):
            plain.jacobians(link)
        with pytest.raises(ModelError, match='^unknown link '):
            plain.jacobians('link2', frame=link)
