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
Closed forms and DH tables with mimic couplings (q = B u + d, 004 section 5).

The symbolic model of ``urdf/gripper_arm.urdf`` (an offset finger pair, a prismatic joint
following a revolute one in another branch) against the numeric RobotModel; its generated
Python module and the ``kron-dynamics equations`` command; a DH table with a coupled joint,
symbolic (own kinematics) against the numeric model of its URDF, from rows and from YAML.
"""

import subprocess
import sys

import numpy as np
import pytest
import sympy as sp

from conftest import REPO, URDF_DIR
from kron_dynamics import ModelError, RobotModel
from kron_dynamics.model.dh import DHRow
from kron_dynamics.symbolic import load_dh_yaml, SymbolicModel
from kron_dynamics.symbolic.codegen import load_module
from kron_dynamics.symbolic.model import CoupledSymbolicModel

GRIPPER_ARM = URDF_DIR / 'gripper_arm.urdf'


def numeric_values(model, u, expr):
    """Evaluate a sympy matrix at u (symbols q1 .. qn)."""
    f = sp.lambdify(model.q, expr, 'numpy')
    return np.array(f(*u), dtype=float)


def assert_close(actual, expected, rtol=1e-10):
    scale = max(1e-12, float(np.max(np.abs(expected))))
    np.testing.assert_allclose(actual, expected, rtol=0, atol=rtol * scale)


@pytest.fixture(scope='module')
def gripper():
    model = SymbolicModel.from_urdf_file(GRIPPER_ARM)
    return model, model.equations(), RobotModel.from_urdf_file(GRIPPER_ARM)


def test_gripper_arm_closed_forms_equal_the_numeric_model(gripper):
    model, eom, numeric = gripper
    assert isinstance(model, CoupledSymbolicModel)
    assert eom.joint_names == ['shoulder', 'elbow', 'left_finger_joint']
    assert eom.mimic == {'right_finger_joint': ('left_finger_joint', 1.0, 0.002),
                         'flap_joint': ('elbow', 0.02, 0.01)}
    for u in np.random.default_rng(0).uniform(-1, 1, (3, 3)):
        assert_close(numeric_values(model, u, eom.M), numeric.mass_matrix(u))
        assert_close(numeric_values(model, u, eom.Cstar), numeric.coriolis_star(u))
        assert_close(numeric_values(model, u, eom.G).ravel(), numeric.gravity_torque(u))
        JT, JR = model.jacobians('right_finger')
        nJT, nJR = numeric.jacobians(u, 'right_finger')
        assert_close(numeric_values(model, u, JT), nJT)
        assert_close(numeric_values(model, u, JR), nJR)
        HT, _ = model.hessians('flap')
        assert_close(numeric_values(model, u, HT), numeric.hessians(u, 'flap')[0])
        R, p = model.link_pose('right_finger')
        assert_close(numeric_values(model, u, p).ravel(),
                     numeric.link_pose(u, 'right_finger')[:3, 3])
        V = sp.lambdify(model.q, model.potential_energy())(*u)
        assert V == pytest.approx(numeric.potential_energy(u), rel=1e-10)
    # the Coriolis terms are C*_u (u' kron u') grouped by u'_j u'_k
    qd = sp.Matrix(model.qd)
    kron = sp.Matrix([qd[j] * qd[k] for j in range(3) for k in range(3)])
    grouped = sp.Matrix([sum((e * qd[j] * qd[k] for (i_, j, k), e in eom.coriolis_terms.items()
                              if i_ == i), sp.Integer(0)) for i in range(3)])
    assert sp.expand(eom.Cstar * kron - grouped) == sp.zeros(3, 1)


@pytest.mark.slow   # the CLI in a child process
def test_generated_python_and_the_command(gripper):
    _, eom, numeric = gripper
    module = load_module(eom.to_python(), 'kron_gen_gripper_arm')
    assert module.JOINT_NAMES == ['shoulder', 'elbow', 'left_finger_joint']
    rng = np.random.default_rng(1)
    for _ in range(3):
        u, ud, udd = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
        assert_close(module.mass_matrix(u), numeric.mass_matrix(u))
        assert_close(module.inverse_dynamics(u, ud, udd), numeric.inverse_dynamics(u, ud, udd))
    for fmt, marker in (('text', 'mimic joint (not a coordinate): right_finger_joint = 1.0 * '
                                 'left_finger_joint + 0.002'),
                        ('latex', r'Mimic joints (constraints, not coordinates)'),
                        ('python', '# Mimic joint (not a coordinate): flap_joint = 0.02 * elbow')):
        result = subprocess.run([sys.executable, '-m', 'kron_dynamics.cli', 'equations',
                                 str(GRIPPER_ARM), '--format', fmt], capture_output=True,
                                text=True, timeout=300, cwd=REPO)
        assert result.returncode == 0, result.stderr
        assert marker in result.stdout, result.stdout[:2000]


def dh_rows():
    """Return a 3-row arm whose third joint follows the second: q3 = -0.5 q2 + 0.2."""
    return [
        DHRow('j1', a=0.4, alpha=np.pi / 2, mass=2.0, com=(-0.2, 0.0, 0.0),
              inertia=np.diag([0.01, 0.05, 0.05])),
        DHRow('j2', a=0.3, d=0.1, mass=1.5, com=(-0.1, 0.02, 0.0),
              inertia=np.diag([0.01, 0.03, 0.03])),
        DHRow('j3', type='prismatic', alpha=-np.pi / 2, mass=0.5, com=(0.0, 0.0, -0.05),
              inertia=np.diag([0.002, 0.002, 0.001]), lower=-1, upper=1,
              mimic=('j2', -0.5, 0.2)),
    ]


def test_dh_table_with_a_mimic_row():
    numeric = RobotModel.from_dh(dh_rows())
    assert numeric.joint_names == ('j1', 'j2')
    assert numeric.mimic_joints['j3'].multiplier == -0.5
    rows = [dict(joint=r.joint, type=r.type, a=r.a, alpha=r.alpha, d=r.d, mass=r.mass,
                 com=list(r.com), inertia=np.diag(r.inertia).tolist(),
                 **({'mimic': {'joint': 'j2', 'multiplier': -0.5, 'offset': 0.2}}
                    if r.mimic else {}))
            for r in dh_rows()]
    symbolic = SymbolicModel.from_dh(rows, 'dh_mimic')
    assert isinstance(symbolic, CoupledSymbolicModel) and symbolic.joint_names == ['j1', 'j2']
    eom = symbolic.equations()
    for u in np.random.default_rng(2).uniform(-1, 1, (3, 2)):
        assert_close(numeric_values(symbolic, u, eom.M), numeric.mass_matrix(u))
        assert_close(numeric_values(symbolic, u, eom.Cstar), numeric.coriolis_star(u))
        assert_close(numeric_values(symbolic, u, eom.G).ravel(), numeric.gravity_torque(u))
    yaml_text = ('robot: dh_mimic_yaml\nrows:\n' + ''.join(
        f'  - {{joint: {r["joint"]}, type: {r["type"]}, a: {r["a"]!r}, alpha: {r["alpha"]!r}, '
        f'd: {r["d"]!r}, mass: {r["mass"]!r}, com: {r["com"]}, inertia: {r["inertia"]}'
        + (', mimic: [j2, -0.5, 0.2]' if 'mimic' in r else '') + '}\n' for r in rows))
    from_yaml = load_dh_yaml(yaml_text)
    u = np.array([0.3, -0.7])
    assert_close(numeric_values(from_yaml, u, from_yaml.mass_matrix()), numeric.mass_matrix(u))


@pytest.mark.parametrize('mimic, message', [
    (('nope', 1.0), r"<mimic> names joint\(s\) that do not exist: joint 'j3'"),
    ({'joint': 'j2', 'gain': 2}, r"DH row 3 \(joint 'j3'\): mimic needs a joint"),
    (('j2', float('nan')), r'mimic needs a joint name and finite numbers'),
    ('j3', r"joint 'j3': <mimic> tags form a cycle: j3 -> j3"),
])
def test_bad_dh_mimic(mimic, message):
    rows = dh_rows()
    rows[2].mimic = mimic
    with pytest.raises(ModelError, match=message):
        RobotModel.from_dh(rows)
