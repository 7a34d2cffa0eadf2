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

"""Every oracle case of shared/reference/seed_models.json, relative error <= 1e-9."""

import numpy as np
import pytest

from conftest import load_oracle_model, ORACLE, ORACLE_URDFS

RTOL = 1e-9
CASES = [(name, i) for name in ORACLE_URDFS for i in range(len(ORACLE['models'][name]['cases']))]


def assert_close(actual, expected, scale, what):
    """Assert |actual - expected| <= RTOL * max(|expected|, scale) element-wise."""
    expected = np.asarray(expected, dtype=float)
    tol = RTOL * np.maximum(np.abs(expected), scale)
    err = np.abs(np.asarray(actual) - expected)
    assert np.all(err <= tol), f'{what}: max error {err.max():.3g} (scale {scale:.3g})'


def scale_of(name, key):
    """Magnitude of a quantity over all cases of a model (for entries that are ~0)."""
    return max(np.max(np.abs(c[key])) for c in ORACLE['models'][name]['cases']) or 1.0


@pytest.fixture(scope='module')
def models():
    return {name: load_oracle_model(name) for name in ORACLE_URDFS}


def test_joint_names_and_gravity(models):
    for name, model in models.items():
        assert list(model.joint_names) == ORACLE['models'][name]['joint_names']
        np.testing.assert_allclose(model.gravity, [0.0, 0.0, -9.81])  # z-up base_link


@pytest.mark.parametrize('name,case', CASES)
@pytest.mark.parametrize('method', [None, 'jacobian', 'explicit', 'crba'])
def test_mass_matrix(models, name, case, method):
    c = ORACLE['models'][name]['cases'][case]
    assert_close(models[name].mass_matrix(c['q'], method=method), c['M'],
                 scale_of(name, 'M'), f'{name} case {case} M ({method})')


@pytest.mark.parametrize('name,case', CASES)
def test_coriolis_star(models, name, case):
    c = ORACLE['models'][name]['cases'][case]
    model = models[name]
    Cs = model.coriolis_star(c['q'])
    assert Cs.shape == (model.n, model.n ** 2)
    assert_close(Cs, c['Cstar'], scale_of(name, 'Cstar'), f'{name} case {case} C*')
    kron = np.kron(c['qd'], c['qd'])
    assert_close(Cs @ kron, c['coriolis_vector'], scale_of(name, 'coriolis_vector'),
                 f'{name} case {case} C* (qd kron qd)')


@pytest.mark.parametrize('name,case', CASES)
def test_newton_euler_quantities(models, name, case):
    c = ORACLE['models'][name]['cases'][case]
    model = models[name]
    assert_close(model.coriolis_vector(c['q'], c['qd']), c['coriolis_vector'],
                 scale_of(name, 'coriolis_vector'), f'{name} case {case} coriolis vector')
    assert_close(model.gravity_torque(c['q']), c['G'], scale_of(name, 'G'),
                 f'{name} case {case} G')
    assert_close(model.inverse_dynamics(c['q'], c['qd'], c['qdd']), c['tau'],
                 scale_of(name, 'tau'), f'{name} case {case} tau')


@pytest.mark.parametrize('name,case', CASES)
def test_at_rest_the_bias_is_gravity_and_the_rest_is_m_qdd(models, name, case):
    """At every oracle configuration, at rest: no velocity terms, tau = M q'' + G (oracle's)."""
    c = ORACLE['models'][name]['cases'][case]
    model = models[name]
    rest = np.zeros(model.n)
    assert not np.any(model.coriolis_vector(c['q'], rest)), 'velocity terms at rest'
    assert not np.any(model.coriolis_matrix(c['q'], rest))
    expected = np.asarray(c['M']) @ np.asarray(c['qdd']) + np.asarray(c['G'])
    assert_close(model.inverse_dynamics(c['q'], rest, c['qdd']), expected,
                 max(scale_of(name, 'tau'), scale_of(name, 'G')), f'{name} case {case} at rest')
