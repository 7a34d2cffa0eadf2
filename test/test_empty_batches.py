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
The facade's one empty-batch rule, for every public method that takes configurations.

A batch of N = 0 rows, shape (0, n), returns arrays whose first axis has length 0 and whose
other axes are those of a single call (tuples item by item), never an error and never a
different layout. Checked on a random tree, on a model whose M(q) is singular (an empty batch
must not evaluate anything) and on a model without movable joints.
"""

import numpy as np
import pytest

from conftest import URDF_DIR
from kron_dynamics import RobotModel
from model_helpers import random_model

NO_JOINT_URDF = (
    '<robot name="r"><link name="a"><inertial><mass value="1"/><inertia ixx="1" iyy="1" '
    'izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link><link name="b"/>'
    '<joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint></robot>')


def random_tree():
    model, _ = random_model(11, n=6, fixed=2, shuffle=False)
    return model.with_armature(np.full(model.n, 0.1))


MODELS = {
    'random_tree': random_tree,
    'singular_rover_arm': lambda: RobotModel.from_urdf_file(URDF_DIR / 'rover_arm.urdf'),
    'no_movable_joint': lambda: RobotModel.from_urdf_string(NO_JOINT_URDF),
}

# name -> call(model, q, link): every public method that takes q (other per-joint arrays
# get q's shape too, so that the call is a batch exactly when q is)
METHODS = {
    'mass_matrix': lambda m, q, link: m.mass_matrix(q),
    'mass_matrix_jacobian': lambda m, q, link: m.mass_matrix(q, method='jacobian'),
    'mass_matrix_explicit': lambda m, q, link: m.mass_matrix(q, method='explicit'),
    'mass_matrix_crba': lambda m, q, link: m.mass_matrix(q, method='crba'),
    'coriolis_star': lambda m, q, link: m.coriolis_star(q),
    'coriolis_star_hessian': lambda m, q, link: m.coriolis_star(q, method='hessian'),
    'christoffel': lambda m, q, link: m.christoffel(q),
    'coriolis_matrix': lambda m, q, link: m.coriolis_matrix(q, q),
    'coriolis_vector': lambda m, q, link: m.coriolis_vector(q, q),
    'gravity_torque': lambda m, q, link: m.gravity_torque(q),
    'bias_torque': lambda m, q, link: m.bias_torque(q, q),
    'inverse_dynamics': lambda m, q, link: m.inverse_dynamics(q, q, q),
    'forward_dynamics': lambda m, q, link: m.forward_dynamics(q, q, q),
    'kinetic_energy': lambda m, q, link: m.kinetic_energy(q, q),
    'potential_energy': lambda m, q, link: m.potential_energy(q),
    'simulate': lambda m, q, link: m.simulate(q, q, q, 1e-3, 3),
    'friction_torque': lambda m, q, link: m.friction_torque(q),
    'link_pose': lambda m, q, link: m.link_pose(q, link),
    'jacobians': lambda m, q, link: m.jacobians(q, link),
    'jacobians_point': lambda m, q, link: m.jacobians(q, link, point=[0.1, 0.0, 0.2]),
    'hessians': lambda m, q, link: m.hessians(q, link),
}


@pytest.fixture(scope='module', params=sorted(MODELS))
def model(request):
    return MODELS[request.param]()


def items(result):
    """Return the arrays of a result (a tuple item by item, or the one array)."""
    return [np.asarray(r) for r in result] if isinstance(result, tuple) else [np.asarray(result)]


@pytest.mark.parametrize('name', sorted(METHODS))
def test_empty_batch_has_the_shape_of_a_single_call_with_a_zero_first_axis(model, name):
    call = METHODS[name]
    link = model.link_names[-1]
    # the single call at a state where M is regular (armature if need be), for its shapes
    regular = model.with_armature(np.full(model.n, 0.5))
    single = call(regular, np.full(model.n, 0.3), link)
    empty = call(model, np.zeros((0, model.n)), link)
    assert isinstance(empty, tuple) == isinstance(single, tuple), (name, type(empty))
    single_items, empty_items = items(single), items(empty)
    assert len(empty_items) == len(single_items), name
    for s, e in zip(single_items, empty_items):
        assert e.shape == (0, *s.shape), (name, e.shape, s.shape)
        assert e.dtype == np.float64, (name, e.dtype)
    # and a batch of one row has the same layout with a first axis of 1
    one = items(call(regular, np.full((1, model.n), 0.3), link))
    for s, o in zip(single_items, one):
        assert o.shape == (1, *s.shape), (name, o.shape, s.shape)
        np.testing.assert_allclose(o[0], s, rtol=1e-12, atol=1e-12)


def test_one_dimensional_arguments_broadcast_against_an_empty_batch(model):
    n = model.n
    Z, z = np.zeros((0, n)), np.zeros(n)
    assert model.inverse_dynamics(Z, z, z).shape == (0, n)
    assert model.inverse_dynamics(z, Z, z).shape == (0, n)
    assert model.bias_torque(z, Z).shape == (0, n)
    assert model.forward_dynamics(z, z, Z).shape == (0, n)
    assert model.coriolis_matrix(z, Z).shape == (0, n, n)
    assert model.kinetic_energy(z, Z).shape == (0,)
    q, v = model.simulate(z, Z, z, 1e-3, 1)
    assert q.shape == v.shape == (0, n)


def test_an_empty_batch_still_validates_its_other_arguments(model):
    n = model.n
    Z = np.zeros((0, n))
    with pytest.raises(ValueError, match=r'qd has 1 rows, the other inputs 0'):
        model.bias_torque(Z, np.zeros((1, n)))
    with pytest.raises(ValueError, match='must have shape'):
        model.gravity_torque(np.zeros((0, n + 1)))
    with pytest.raises(ValueError, match='dt must be finite'):
        model.simulate(Z, Z, Z, np.nan, 1)
    with pytest.raises(ValueError, match='steps must be an integer >= 0'):
        model.simulate(Z, Z, Z, 1e-3, -1)
    with pytest.raises(Exception, match="unknown link 'nope'"):
        model.jacobians(Z, 'nope')
    with pytest.raises(ValueError, match='unknown mass-matrix method'):
        model.mass_matrix(Z, method='fast')
