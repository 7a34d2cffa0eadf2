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
The coordinates map (model/coordinates.py) against dense B and P built here from the mimics.

JointMap and BaseMap read their tables, selections and kernel configurations from one entry
per joint (linear in the number of joints) and build the dense B, P and Pk only on request;
here every one of those is compared with its definition on the dense matrices.
"""

import numpy as np
import pytest

from kron_dynamics import RobotModel
from kron_dynamics.model.coordinates import BaseMap, JointMap, P_BASE
from kron_dynamics.model.mimic import MimicJoint
from kron_dynamics.testing.random_urdf import random_urdf


def dense_b(full_names, names, mimics):
    """Return B and d of q = B u + d, written from the definition."""
    B, d = np.zeros((len(full_names), len(names))), np.zeros(len(full_names))
    for i, joint in enumerate(full_names):
        if joint in mimics:
            B[i, names.index(mimics[joint].primary)] = mimics[joint].multiplier
            d[i] = mimics[joint].offset
        else:
            B[i, names.index(joint)] = 1.0
    return B, d


def table_of(matrix, offsets):
    """Return (column or -1, multiplier, offset) per row of a matrix with <= 1 nonzero a row."""
    table = np.zeros((len(matrix), 3))
    table[:, 0], table[:, 2] = -1.0, offsets
    for r, row in enumerate(matrix):
        nonzero = np.flatnonzero(row)
        assert len(nonzero) <= 1
        if len(nonzero):
            table[r, :2] = nonzero[0], row[nonzero[0]]
    return table


def check_joint_map(full_names, names, mimics):
    m = JointMap(full_names, names, mimics)
    B, d = dense_b(list(full_names), list(names), mimics)
    np.testing.assert_array_equal(m.B, B)
    np.testing.assert_array_equal(m.Bt, B.T)
    np.testing.assert_array_equal(m.d, d)
    assert not (m.B.flags.writeable or m.Bt.flags.writeable or m.d.flags.writeable)
    if np.all(np.count_nonzero(B, axis=1) == 1):
        np.testing.assert_array_equal(m.kernel_table, table_of(B, d))
    else:
        assert m.kernel_table is None      # a zero multiplier: the general projections
    return m, B, d


def check_base_map(base, joints, B, d, tree_names):
    bm = BaseMap(base, joints, tree_names)
    internal = {j: i for i, j in enumerate(tree_names)}
    rows = [internal[j] for j in joints.full_names]
    n, nb = len(joints.names), P_BASE[base].shape[1]
    B_tree, d_tree = np.zeros((len(tree_names), n)), np.zeros(len(tree_names))
    B_tree[rows], d_tree[rows] = B, d
    P = np.zeros((6 + len(tree_names), nb + n))
    P[:6, :nb], P[6:, nb:] = P_BASE[base], B_tree
    Pk = P[bm.kernel_order]
    np.testing.assert_array_equal(bm.B, B_tree)
    np.testing.assert_array_equal(bm.d, d_tree)
    np.testing.assert_array_equal(bm.P, P)
    np.testing.assert_array_equal(bm.Pk, Pk)
    offsets = np.concatenate([np.zeros(6), d_tree[bm.tree_order]])
    np.testing.assert_array_equal(bm.kernel_table, table_of(Pk, offsets))
    # a selection: every column of Pk one 1, nothing else
    cols = np.argmax(Pk, axis=0)
    selection = np.array_equal(Pk, np.eye(len(Pk))[:, cols])
    assert (bm.selection is not None) == selection
    if selection:
        np.testing.assert_array_equal(bm.selection, cols)
    assert bm.same == (selection and np.array_equal(cols, np.arange(nb + n)))
    u = np.random.default_rng(1).normal(size=n)
    expected = np.zeros(len(Pk))
    expected[6:] = (B_tree @ u + d_tree)[bm.tree_order]
    np.testing.assert_allclose(bm.kernel_configuration(u), expected, rtol=0, atol=1e-15)
    x = np.random.default_rng(2).normal(size=nb + n)
    np.testing.assert_allclose(bm.lift(x), Pk @ x, rtol=0, atol=1e-15)
    tau = np.random.default_rng(3).normal(size=len(Pk))
    np.testing.assert_allclose(bm.project(tau), Pk.T @ tau, rtol=0, atol=1e-14)
    return bm


@pytest.mark.parametrize('seed', range(12))
@pytest.mark.parametrize('base', ['floating', 'planar'])
def test_maps_of_random_trees_match_their_dense_definition(seed, base):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 9))
    xml = random_urdf(rng, n, n_fixed=2, mimic_fraction=0.5 if seed % 2 else 0.0)
    model = RobotModel.from_urdf_string(xml)
    joints, B, d = check_joint_map(model.full_joint_names, model.joint_names,
                                   model.mimic_joints)
    check_base_map(base, joints, B, d, model.description.joint_names)


@pytest.mark.parametrize('base', ['floating', 'planar'])
def test_a_zero_multiplier_is_a_constant_joint(base):
    """A joint that mimics with multiplier 0 is a constant: its row of B is zero."""
    mimics = {'c': MimicJoint('c', 'a', 0.0, 0.3, ('a', 0.0, 0.3)),
              'd': MimicJoint('d', 'b', 2.0, -0.1, ('b', 2.0, -0.1))}
    joints, B, d = check_joint_map(('a', 'b', 'c', 'd'), ('a', 'b'), mimics)
    assert joints.kernel_table is None
    check_base_map(base, joints, B, d, ('d', 'a', 'c', 'b'))


@pytest.mark.parametrize('base', ['floating', 'planar'])
def test_without_mimics_the_map_is_a_selection_in_the_models_order(base):
    joints, B, d = check_joint_map(('a', 'b', 'c'), ('a', 'b', 'c'), {})
    bm = check_base_map(base, joints, B, d, ('c', 'a', 'b'))
    assert bm.selection is not None and bm.same == (base == 'floating')


@pytest.mark.parametrize('root_joint', ['fixed', 'floating', 'planar'])
@pytest.mark.parametrize('mimic', [False, True])
def test_loading_builds_no_dense_map(root_joint, mimic):
    """A loaded model holds one entry per joint: B, P and Pk (n x n) are built on request."""
    xml = random_urdf(np.random.default_rng(5), 6, mimic_fraction=0.5 if mimic else 0.0)
    model = RobotModel.from_urdf_string(xml, root_joint=root_joint)
    fixed = model if root_joint == 'fixed' else model.fixed
    maps = [fixed._joint_map] + ([] if root_joint == 'fixed' else [model._base_map])
    for m in maps:
        assert not {'B', 'Bt', 'P', 'Pk'} & set(vars(m)), type(m).__name__
    q = model.random_configuration(np.random.default_rng(6))
    model.mass_matrix(q)        # the compiled path: still no dense map
    for m in maps:
        assert not {'B', 'Bt', 'P', 'Pk'} & set(vars(m)), type(m).__name__
    assert model.coupling()[0].shape == (len(fixed.full_joint_names), model.n)
