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
The coordinates map: a model's coordinates -> the coordinates of the tree the kernels run.

One module for both reductions of 004 section 5 (a constant P, holonomic constraints):

- :class:`JointMap`, mimic joints: the positions of every movable joint of the tree are
  q = B u + d, u the independent joints, B constant (one nonzero per row for URDF
  ``<mimic>``). Results come back projected: tau_u = B^T tau, M_u = B^T M B, J_u = J B,
  C*_u = B^T C* (B kron B) (since (B kron B)(u' kron u') = (B u') kron (B u')), Hessians
  B^T H B per row.
- :class:`BaseMap`, a moving base: the kernels run the tree behind a chain of six massless
  joints (prismatic x, y, z, revolute x, y, z) whose velocities are the base twist; the
  model's velocity v (base coordinates, then u) maps to the kernels' by the constant
  P = diag(P_base, B) (P_base: identity for a floating base, the (vx, vy, wz) columns for a
  planar one), generalized forces back by P^T.

The facade (``robot_model.py``, ``floating_model.py``) and ``symbolic/`` take B, d and P from
here; nothing else builds them.
"""

from collections.abc import Mapping, Sequence
import functools

import numpy as np

from .mimic import MimicJoint

# configuration and velocity names of a moving base's coordinates (Pinocchio's order)
BASE_NAMES = {
    'floating': (('base_x', 'base_y', 'base_z', 'base_qx', 'base_qy', 'base_qz', 'base_qw'),
                 ('base_vx', 'base_vy', 'base_vz', 'base_wx', 'base_wy', 'base_wz')),
    'planar': (('base_x', 'base_y', 'base_cos', 'base_sin'), ('base_vx', 'base_vy', 'base_wz')),
}
# the base twist (6) from the base velocity coordinates: identity, or (vx, vy, wz)
P_BASE = {'floating': np.eye(6), 'planar': np.eye(6)[:, [0, 1, 5]]}


def _read_only(*arrays):
    for a in arrays:
        a.setflags(write=False)


class JointMap:
    """
    q = B u + d: the tree's joints (``full_names``) from the model's coordinates (``names``).

    ``B`` (n_full x n) and ``d`` are constant and read-only. ``kernel_table``: per joint of
    the tree, (the coordinate it follows, multiplier, offset), what the compiled projection
    of ``kernels/coupled.py`` takes; None when a row of B has more than one nonzero.
    """

    def __init__(self, full_names: Sequence[str], names: Sequence[str],
                 mimic_joints: Mapping[str, MimicJoint]):
        """Read q = B u + d from the resolved mimic joints (rows: ``full_names``)."""
        column = {name: k for k, name in enumerate(names)}
        n_full = len(full_names)
        # one nonzero per row: the coordinate each joint follows, its multiplier, its offset
        # (linear in the number of joints: B itself, n_full x n, is built only when asked for)
        source = np.empty(n_full, dtype=int)
        multiplier = np.ones(n_full)
        d = np.zeros(n_full)
        for i, name in enumerate(full_names):
            mimic = mimic_joints.get(name)
            if mimic is None:
                source[i] = column[name]
            else:
                source[i] = column[mimic.primary]
                multiplier[i], d[i] = mimic.multiplier, mimic.offset
        _read_only(d)
        self.full_names, self.names = tuple(full_names), tuple(names)
        self.d = d
        self._entries = (source, multiplier)
        self.kernel_table = None
        if n_full and np.all(multiplier != 0.0):
            self.kernel_table = np.ascontiguousarray(
                np.column_stack([source, multiplier, d]), dtype=float)

    @functools.cached_property
    def B(self) -> np.ndarray:
        """Return the dense matrix of q = B u + d (n_full x n, read-only), built on first use."""
        source, multiplier = self._entries
        B = np.zeros((len(self.full_names), len(self.names)))
        B[np.arange(len(B)), source] = multiplier
        _read_only(B)
        return B

    @functools.cached_property
    def Bt(self) -> np.ndarray:
        """Return B^T, C-contiguous and read-only."""
        Bt = np.ascontiguousarray(self.B.T)
        _read_only(Bt)
        return Bt

    def lift(self, u: np.ndarray) -> np.ndarray:
        """Return the tree's positions q = B u + d, for u of shape (n,) or (N, n)."""
        return u @ self.Bt + self.d

    def rate(self, ud: np.ndarray) -> np.ndarray:
        """Return the tree's velocities or accelerations B u' (no offset)."""
        return ud @ self.Bt

    def force(self, tau: np.ndarray) -> np.ndarray:
        """Return B^T tau for tau of shape (..., n_full): generalized forces in u."""
        return tau @ self.B

    def matrix(self, M: np.ndarray) -> np.ndarray:
        """Return B^T M B for M of shape (..., n_full, n_full)."""
        return self.Bt @ M @ self.B

    def columns(self, J: np.ndarray) -> np.ndarray:
        """Return J B for J of shape (..., k, n_full)."""
        return J @ self.B

    def star(self, C: np.ndarray) -> np.ndarray:
        """Return B^T C* (B kron B) for C* of shape (..., n_full, n_full^2)."""
        nf, n = self.B.shape
        lead = C.shape[:-2]
        C3 = C.reshape(*lead, nf, nf, nf) @ self.B              # [i, j, c]
        C3 = self.Bt @ C3                                       # [i, b, c]
        return self.Bt @ C3.reshape(*lead, nf, n * n)           # [a, b c]

    def hessian(self, H: np.ndarray) -> np.ndarray:
        """Return H_u[:, a n + c] = sum B_sa B_kc H[:, s nf + k] for H of shape (..., 3, nf^2)."""
        nf, n = self.B.shape
        lead = H.shape[:-1]
        return (self.Bt @ H.reshape(*lead, nf, nf) @ self.B).reshape(*lead, n * n)


class BaseMap:
    """
    A moving base's coordinates -> the kernels' (the base chain, then the tree's joints).

    ``tree_names``: the tree's movable joints in its own (internal) order; ``joints``: the
    JointMap of the model's joints (its ``full_names`` a permutation of ``tree_names``).
    Kernel order: the six chain coordinates, then the model's joints in ``joints.names``
    order where there are no mimic joints (so that P is a selection), else the tree's order.

    ``P`` (6 + n_tree x nv, tree order) and ``Pk`` (kernel order); ``selection``: the kernel
    coordinate of each model velocity where Pk is a selection of columns of the identity
    (then lift and project index instead of multiplying), else None; ``same``: the model's
    velocity is the kernels' (a floating base without mimic joints); ``tree_order``: the
    tree coordinate of each kernel coordinate after the chain; ``kernel_order``: the tree
    coordinates in kernel order (what ``kernels.pack`` takes); ``kernel_table``: P in the
    compiled kernels' format (see __init__).
    """

    def __init__(self, base: str, joints: JointMap, tree_names: Sequence[str]):
        """Read P of a ``base`` in BASE_NAMES for the model's joints (linear in their number)."""
        internal = {j: i for i, j in enumerate(tree_names)}
        n_tree, n = len(tree_names), len(joints.names)
        self.nb = nb = len(BASE_NAMES[base][1])
        self._base, self._n_tree, self._n = base, n_tree, n
        order = np.arange(6 + n_tree)
        if len(joints.full_names) == n:      # no mimic joints
            order[6:] = 6 + np.array([internal[j] for j in joints.names], dtype=int)
        self.kernel_order = order
        self.tree_order = order[6:] - 6
        # per tree coordinate (tree order): the model velocity it follows, multiplier, offset
        rows = np.array([internal[j] for j in joints.full_names], dtype=int)
        source, multiplier = joints._entries
        col, mult, d = np.zeros(n_tree, dtype=int), np.zeros(n_tree), np.zeros(n_tree)
        col[rows], mult[rows], d[rows] = nb + source, multiplier, joints.d
        _read_only(d)
        self.d, self._tree_entries = d, (col - nb, mult)
        # per kernel coordinate (the model velocity it follows, -1 for none; multiplier;
        # offset): JointMap.kernel_table's format, what kernels/floating_base.py's moving_*
        # entry points take. Every row of P has at most one nonzero.
        base_col = np.full(6, -1)
        base_mult = np.zeros(6)
        for k, row in enumerate(P_BASE[base]):
            nonzero = np.flatnonzero(row)
            if len(nonzero):
                base_col[k], base_mult[k] = nonzero[0], row[nonzero[0]]
        k_col = np.concatenate([base_col, col[self.tree_order]])
        k_mult = np.concatenate([base_mult, mult[self.tree_order]])
        k_col[k_mult == 0.0] = -1
        self.kernel_table = np.column_stack(
            [k_col, k_mult, np.concatenate([np.zeros(6), d[self.tree_order]])]).astype(float)
        # P in kernel order is a selection of the identity's columns when every model
        # velocity is exactly one kernel coordinate, with multiplier 1
        used = k_col >= 0
        counts = np.bincount(k_col[used], minlength=nb + n)
        selection = bool(np.all(counts == 1) and np.all(k_mult[used] == 1.0))
        cols = np.zeros(nb + n, dtype=int)
        cols[k_col[used]] = np.flatnonzero(used)
        self.selection = cols if selection else None
        self.same = selection and np.array_equal(cols, np.arange(nb + n))

    @functools.cached_property
    def B(self) -> np.ndarray:
        """Return the dense map of the tree's joints (n_tree x n, tree order, read-only)."""
        col, mult = self._tree_entries
        B = np.zeros((self._n_tree, self._n))
        nonzero = mult != 0.0
        B[np.flatnonzero(nonzero), col[nonzero]] = mult[nonzero]
        _read_only(B)
        return B

    @functools.cached_property
    def P(self) -> np.ndarray:
        """Return P = diag(P_base, B) (6 + n_tree x nv, tree order; read-only)."""
        B = self.B
        P = np.zeros((6 + len(B), self.nb + B.shape[1]))
        P[:6, :self.nb] = P_BASE[self._base]
        P[6:, self.nb:] = B
        _read_only(P)
        return P

    @functools.cached_property
    def Pk(self) -> np.ndarray:
        """Return P in kernel order (read-only)."""
        Pk = self.P[self.kernel_order]
        _read_only(Pk)
        return Pk

    def kernel_configuration(self, u: np.ndarray) -> np.ndarray:
        """Return the kernels' configuration: the chain at 0, the tree's joints at B u + d."""
        qk = np.zeros(6 + self._n_tree)
        if self.same:
            qk[6:] = u
        else:
            table = self.kernel_table[6:]
            source = np.maximum(table[:, 0].astype(int) - self.nb, 0)
            qk[6:] = table[:, 1] * np.asarray(u)[source] + table[:, 2]
        return qk

    def lift(self, x: np.ndarray) -> np.ndarray:
        """Return Pk x: a velocity of the model -> the chain's and the tree's (kernel order)."""
        if self.same:
            return x
        if self.selection is None:
            return self.Pk @ x
        out = np.zeros(len(self.Pk))
        out[self.selection] = x
        return out

    def project(self, tau: np.ndarray) -> np.ndarray:
        """Return Pk^T tau of a kernel-order force: the model's generalized forces."""
        if self.same:
            return tau
        return self.Pk.T @ tau if self.selection is None else tau[self.selection]
