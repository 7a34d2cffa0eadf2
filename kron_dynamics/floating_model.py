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
FloatingBaseModel: a tree on a free-flying or planar base, Pinocchio's conventions.

Configuration q (nq): the base pose, then the joints in ``joint_names`` order (one angle per
continuous joint). Floating: (x, y, z, qx, qy, qz, qw), the base origin in the world and a
unit quaternion, as Pinocchio's JointModelFreeFlyer. Planar: (x, y, cos t, sin t), as
JointModelPlanar: the base moves in the x-y plane of the world (of the root joint's origin).

Velocity v (nv = 6 + n or 3 + n): the base twist in base-frame coordinates, linear first
(floating: vx, vy, vz, wx, wy, wz; planar: vx, vy, wz), then the joint velocities.
Accelerations are the time derivatives of v; generalized forces tau (nv) are the base
wrench in the base frame (force; moment about the base origin), then the joint forces.
Gravity is a world vector.

The dynamics are the constrained system of 004 section 5 and appendix B in quasi-velocities:
Newton-Euler on the tree with a moving base (:mod:`kron_dynamics.algorithms.floating_base`,
the readable reference), projected by the constant matrix P = diag(P_base, B) of the planar
restriction and the mimic couplings, as :class:`~kron_dynamics.robot_model.CoupledRobotModel`
does with B alone. The compiled path runs the fixed-base kernels on the tree behind a chain
of six massless joints (prismatic x, y, z, then revolute x, y, z, all at 0) whose root is
the base frame of the moment: their velocities are the base twist, their forces the base
wrench, gravity enters as R^T g, and the chain's own velocity products are cancelled in its
accelerations (:mod:`kron_dynamics.kernels.floating_base`). The kinematics relative to the
base are the fixed-base model's (``model.fixed``, compiled), composed with the base pose.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .algorithms.forward_dynamics import solve_mass_matrix
from .errors import ModelError, SingularJacobianError
from .kernels import CORIOLIS, GRAVITY, ID, native, pack, pack_sites
from .kernels.layout import LOCAL_WORLD_ALIGNED, SITE_BODY
from .model.rotations import matrix_to_quaternion, quaternion_to_matrix, skew
from .model.tree import KinematicTree

Array = NDArray[np.float64]

BASE_TYPES = ('floating', 'planar')
QUATERNION_TOLERANCE = 1e-3     # |q| within this of 1 is normalised; beyond, refused
_NAMES = {
    'floating': (('base_x', 'base_y', 'base_z', 'base_qx', 'base_qy', 'base_qz', 'base_qw'),
                 ('base_vx', 'base_vy', 'base_vz', 'base_wx', 'base_wy', 'base_wz')),
    'planar': (('base_x', 'base_y', 'base_cos', 'base_sin'), ('base_vx', 'base_vy', 'base_wz')),
}
# the base twist (6) from the base velocity coordinates: identity, or (vx, vy, wz)
_P_BASE = {'floating': np.eye(6), 'planar': np.eye(6)[:, [0, 1, 5]]}
_NO_WRENCH = np.zeros((0, 6))
_CHAIN_AT_ZERO = np.zeros(6)
_F64 = np.dtype(np.float64)


def _plain(*arrays) -> bool:
    """Return True if every argument is a 1-D float64 ndarray: what the kernels take as is."""
    for a in arrays:      # a loop, not all() over a generator: this is on every fast call
        if type(a) is not np.ndarray or a.dtype is not _F64 or a.ndim != 1:
            return False
    return True


def base_chain(tree: KinematicTree, root_inertia) -> KinematicTree:
    """
    Return the tree behind six massless joints: prismatic x, y, z, then revolute x, y, z.

    At zero chain coordinates, with its root at the base frame, the chain's velocities are
    the base twist (linear, angular; base axes) and its joint forces the base wrench; the
    base body (``root_inertia``: mass, centre of mass, central inertia) is its last body.
    """
    n = tree.n
    E = np.eye(3)
    mass, com, inertia = root_inertia
    parent = np.concatenate([np.arange(-1, 5), np.where(tree.parent < 0, 5, tree.parent + 6)])
    return KinematicTree(
        parent=parent,
        revolute=np.concatenate([[False] * 3 + [True] * 3, np.asarray(tree.revolute, bool)]),
        axis=np.vstack([E, E, np.reshape(tree.axis, (n, 3))]),
        R0=np.concatenate([np.tile(E, (6, 1, 1)), np.reshape(tree.R0, (n, 3, 3))]),
        p0=np.vstack([np.zeros((6, 3)), np.reshape(tree.p0, (n, 3))]),
        mass=np.concatenate([[0.0] * 5, [mass], tree.mass]),
        com=np.vstack([np.zeros((5, 3)), [com], np.reshape(tree.com, (n, 3))]),
        inertia=np.concatenate([np.zeros((5, 3, 3)), [inertia],
                                np.reshape(tree.inertia, (n, 3, 3))]),
        gravity=np.zeros(3))


def _chain_acceleration(vk: np.ndarray, dvk: np.ndarray) -> np.ndarray:
    """Return the chain accelerations that give the base dvk[:6] (kernels.floating_base)."""
    out = np.empty(len(vk))
    native.chain_acceleration(vk, dvk, out)
    return out


CONTACT_FRAMES = {'local_world_aligned': 0, 'local': 1}


@dataclass(frozen=True)
class Contact:
    """
    A contact of a link with the world: a point (dim 3) or a surface (dim 6), as Pinocchio's.

    ``point`` is in link coordinates. A 3-D contact keeps the point still: its classical
    acceleration is zero (Pinocchio's CONTACT_3D). A 6-D contact keeps the frame at the point
    still: its spatial acceleration is zero (CONTACT_6D; when the frame moves, J_c v != 0,
    that is not the classical acceleration of the point). ``reference_frame`` chooses the
    axes of lambda and of the contact Jacobian's rows, not the constraint:
    'local_world_aligned' (default: world axes at the point) or 'local' (the link's axes);
    Pinocchio's spellings 'LOCAL_WORLD_ALIGNED' and 'LOCAL' are accepted. lambda is what the
    world applies to the robot: a force (3), then for dim 6 a moment about the point (3).
    """

    link: str
    point: tuple = (0.0, 0.0, 0.0)
    dim: int = 3
    reference_frame: str = 'local_world_aligned'

    def __post_init__(self):
        """Check dim and reference_frame; store the frame in lower case."""
        frame = self.reference_frame
        key = frame.lower() if isinstance(frame, str) else frame
        if key not in CONTACT_FRAMES:
            raise ValueError(f'Contact({self.link!r}): reference_frame must be one of '
                             f"{list(CONTACT_FRAMES)} (or Pinocchio's 'LOCAL_WORLD_ALIGNED', "
                             f"'LOCAL'), got {frame!r}")
        object.__setattr__(self, 'reference_frame', key)
        if self.dim not in (3, 6):
            raise ValueError(f'Contact({self.link!r}): dim must be 3 (a point) or 6 (a '
                             f'surface), got {self.dim!r}')


def _contacts(contacts) -> list[Contact]:
    """Normalise a contact list: Contact, a link name (point contact at its origin)."""
    if isinstance(contacts, (str, Contact)) or not isinstance(contacts, Sequence):
        raise ValueError('contacts must be a list of Contact(link, point, dim) or link names, '
                         f'got {contacts!r}')
    out = []
    for c in contacts:
        c = Contact(c) if isinstance(c, str) else c
        if not isinstance(c, Contact):
            raise ValueError(f'a contact must be Contact(link, point, dim=3 or 6) or a link '
                             f'name, got {c!r}')
        out.append(c)
    return out


def _unit(x: np.ndarray, what: str) -> np.ndarray:
    """Return x normalised; ValueError naming it if its norm is not within tolerance of 1."""
    norm = math.sqrt(float(x @ x))
    if abs(norm - 1.0) > QUATERNION_TOLERANCE:
        raise ValueError(f'{what} has norm {norm:.6g}; it must be a unit vector (within '
                         f'{QUATERNION_TOLERANCE}: normalised)')
    return x / norm


def _exp6(twist: np.ndarray) -> np.ndarray:
    """Return the 4x4 exponential of a twist (v, w): the motion it gives in unit time."""
    v, w = twist[:3], twist[3:]
    theta = float(np.linalg.norm(w))
    W = skew(w)
    if theta < 1e-6:      # series to third order
        A, Bc, Cc = 1.0 - theta ** 2 / 6, 0.5 - theta ** 2 / 24, 1.0 / 6 - theta ** 2 / 120
    else:
        A = math.sin(theta) / theta
        Bc = (1.0 - math.cos(theta)) / theta ** 2
        Cc = (theta - math.sin(theta)) / theta ** 3
    T = np.eye(4)
    T[:3, :3] = np.eye(3) + A * W + Bc * W @ W
    T[:3, 3] = (np.eye(3) + Bc * W + Cc * W @ W) @ v
    return T


def _ad(twist: np.ndarray) -> np.ndarray:
    """Return ad of a twist (v, w), 6 x 6: its Lie bracket [twist, .] in (linear; angular)."""
    A = np.zeros((6, 6))
    A[:3, :3] = A[3:, 3:] = skew(twist[3:])
    A[:3, 3:] = skew(twist[:3])
    return A


def _rotation_ad(w: np.ndarray) -> np.ndarray:
    """Return blockdiag(w x, w x): how both halves of a vector turn with angular rate w."""
    A = np.zeros((6, 6))
    A[:3, :3] = A[3:, 3:] = skew(w)
    return A


def _log6(T: np.ndarray) -> np.ndarray:
    """Return the twist (v, w) whose exponential is T (rotation angle below pi)."""
    from scipy.spatial.transform import Rotation
    w = Rotation.from_matrix(T[:3, :3]).as_rotvec()
    theta = float(np.linalg.norm(w))
    W = skew(w)
    if theta < 1e-6:
        D = 1.0 / 12 + theta ** 2 / 720
    else:
        D = (1.0 - theta * math.sin(theta) / (2.0 * (1.0 - math.cos(theta)))) / theta ** 2
    V_inv = np.eye(3) - 0.5 * W + D * W @ W
    return np.concatenate([V_inv @ T[:3, 3], w])


class FloatingBaseModel:
    """
    A rigid-body tree on a floating (6 DOF) or planar (3 DOF) base; see the module docstring.

    Build it with ``RobotModel.from_urdf_file(path, root_joint='floating' | 'planar')`` (a
    URDF whose root is a world link joined to the base by a floating or planar joint gets
    that base by default). ``fixed`` is the model of the same tree with the base held still:
    every kinematic quantity relative to the base comes from it.
    """

    def __init__(self, fixed, base: str, origin: tuple | None = None):
        """Wrap the fixed-base model ``fixed`` (a RobotModel) on a ``base`` in BASE_TYPES."""
        if base not in BASE_TYPES:
            raise ModelError(f'root_joint must be one of {["fixed", *BASE_TYPES]}, got {base!r}')
        description = fixed.description
        self.fixed = fixed
        self.base = base
        self.name: str = fixed.name
        self.base_link: str = fixed.root_link
        self.joint_names: tuple[str, ...] = fixed.joint_names
        self.n: int = fixed.n
        self.total_mass: float = fixed.total_mass
        self.gravity: Array = fixed.gravity         # world frame
        self.configuration_names: tuple[str, ...] = _NAMES[base][0] + self.joint_names
        self.velocity_names: tuple[str, ...] = _NAMES[base][1] + self.joint_names
        self.nq, self.nv = len(self.configuration_names), len(self.velocity_names)
        self._nb = self.nv - self.n
        T0 = np.eye(4)
        if origin is not None:
            T0[:3, :3], T0[:3, 3] = origin
        T0.setflags(write=False)
        self.origin: Array = T0      # the world frame of the base motion (root joint origin)
        self._at_origin = origin is None or np.array_equal(T0, np.eye(4))
        self._origin_inverse = np.linalg.inv(T0)
        self._tree = description.tree
        self._root = description.root_inertia
        B, d = fixed.coupling()
        internal = {j: i for i, j in enumerate(description.joint_names)}
        order = [internal[j] for j in fixed.full_joint_names]
        self._B = np.zeros((self._tree.n, self.n))
        self._B[order] = B
        self._d = np.zeros(self._tree.n)
        self._d[order] = d
        P = np.zeros((6 + self._tree.n, self.nv))
        P[:6, :self._nb] = _P_BASE[base]
        P[6:, self._nb:] = self._B
        self._P = P
        self._armature = np.concatenate([np.zeros(self._nb), fixed.armature])
        # the compiled path: the tree behind the base chain; kernel order = the chain, then
        # the joints in joint_names order (without mimic joints) or the tree's own order
        nk = 6 + self._tree.n
        order = np.arange(nk)
        if not fixed.mimic_joints:
            order[6:] = 6 + np.array([internal[j] for j in self.joint_names], dtype=int)
        self._tree_order = order[6:] - 6      # kernel input k >= 6 is tree coordinate [k-6]
        sites = pack_sites(description.frames)      # rows as fixed._site numbers them
        sites[:, SITE_BODY] = np.where(sites[:, SITE_BODY] < 0, 5, sites[:, SITE_BODY] + 6)
        self._sites = sites
        Pk = P[order]
        cols = np.argmax(Pk, axis=0)
        # P in kernel order is often a selection of coordinates: index instead of multiply
        self._Pk, self._sel = Pk, (cols if np.array_equal(Pk, np.eye(nk)[:, cols]) else None)
        # the model's coordinates are the kernel's (floating base, no mimic joints)
        self._same = self._sel is not None and np.array_equal(cols, np.arange(self.nv))
        # armature in the kernels where each joint is a kernel coordinate; else after P
        armature = np.zeros(nk)
        if self._sel is not None:
            armature[6:] = fixed.armature
            self._armature_after = np.zeros(self.nv)
        else:
            self._armature_after = self._armature
        self._ints, self._reals = pack(base_chain(self._tree, self._root), order, armature)
        self._reals[-1, :3] = self.gravity      # world gravity: kernels.floating_base
        self._origin = np.array(T0)             # writable: what the kernels take
        self._zero_v = np.zeros(self.nv)

    @property
    def link_names(self) -> tuple[str, ...]:
        """Return the names of every link (the world link of the root joint excluded)."""
        return self.fixed.link_names

    @property
    def mimic_joints(self):
        """Return the mimic joints (as RobotModel.mimic_joints)."""
        return self.fixed.mimic_joints

    # ----------------------------------------------------------------- inputs
    def _vector(self, x, size: int, what: str) -> Array:
        try:
            a = np.array(x, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f'{what} must be numbers, got {x!r}') from None
        if a.shape == (size,) and np.isfinite(a).all():
            return a
        names = self._names(what, size)
        if a.shape != (size,):
            raise ValueError(f'{what} must have {size} entries ({", ".join(names)}), got '
                             f'shape {a.shape}')
        bad = [names[i] for i in np.nonzero(~np.isfinite(a))[0]]
        raise ValueError(f'{what} is not finite at {bad}')

    def _names(self, what: str, size: int) -> tuple:
        if what == 'q':
            return self.configuration_names
        if what in ('v', 'dv', 'tau'):
            return self.velocity_names
        return tuple('xyzw'[:size]) if size <= 4 else tuple(map(str, range(size)))

    def _configuration(self, q) -> Array:
        """Check q; return it with the base orientation normalised (ValueError if far off)."""
        q = self._vector(q, self.nq, 'q')
        part = slice(3, 7) if self.base == 'floating' else slice(2, 4)
        what = 'quaternion (qx, qy, qz, qw)' if self.base == 'floating' else '(cos, sin)'
        q[part] = _unit(q[part], f'q: the base {what}')
        return q

    def _batch(self, method, *arrays):
        """Return method applied to each row of 2-D inputs (1-D ones broadcast), or None."""
        arrays = [np.asarray(a, dtype=float) if a is not None else None for a in arrays]
        rows = {a.shape[0] for a in arrays if a is not None and a.ndim == 2}
        if not rows:
            return None
        if len(rows) > 1:
            raise ValueError(f'batch inputs have different numbers of rows: {sorted(rows)}')
        N = rows.pop()
        out = [method(*[a[k] if a is not None and a.ndim == 2 else a for a in arrays])
               for k in range(N)]
        if not out:
            raise ValueError('empty batch: nothing to compute')
        return np.array(out)

    # ----------------------------------------------------------------- base pose
    def base_pose(self, q: ArrayLike) -> Array:
        """Return the 4x4 pose of the base link in the world."""
        return self._base_pose(self._configuration(q))

    def _base_pose(self, q: Array) -> Array:
        """Return the base pose of a checked configuration."""
        T = np.eye(4)
        if self.base == 'floating':
            T[:3, :3] = quaternion_to_matrix(q[3:7])     # (x, y, z, w)
            T[:3, 3] = q[:3]
        else:
            c, s = q[2], q[3]
            T[:2, :2] = [[c, -s], [s, c]]
            T[:2, 3] = q[:2]
        return T if self._at_origin else self.origin @ T

    def _split(self, q):
        """Return (checked q, base pose, joint coordinates u, the kernels' configuration)."""
        q = self._configuration(q)
        u = q[self.nq - self.n:]
        if self._same:
            qk = np.concatenate((_CHAIN_AT_ZERO, u))
        else:
            qk = np.zeros(len(self._Pk))
            qk[6:] = (self._B @ u + self._d)[self._tree_order]
        return q, self._base_pose(q), u, qk

    def _gravity_base(self, T) -> Array:
        return T[:3, :3].T @ self.gravity

    # ----------------------------------------------------------------- dynamics
    def _lift(self, x: Array) -> Array:
        """Return P x in kernel order: a velocity of the model -> the chain and the tree."""
        if self._same:
            return x
        if self._sel is None:
            return self._Pk @ x
        out = np.zeros(len(self._Pk))
        out[self._sel] = x
        return out

    def _project(self, tau: Array) -> Array:
        """Return P^T tau of a kernel-order force: the model's generalized forces."""
        if self._same:
            return tau
        return self._Pk.T @ tau if self._sel is None else tau[self._sel]

    def _rnea(self, qk: Array, vk: Array, dvk: Array, gravity_base: Array) -> Array:
        """Return the compiled Newton-Euler forces (kernel order) with the base moving."""
        reals = self._reals.copy()
        reals[-1, :3] = gravity_base
        tau = np.empty(len(vk))
        if not native.rnea(self._ints, reals, qk, vk,
                           _chain_acceleration(vk, dvk), ID, _NO_WRENCH, tau):
            raise ValueError('inverse dynamics: q, v and dv must be finite')
        return tau

    def _mass_matrix_kernel(self, qk: Array) -> Array:
        """Return M of the tree behind the chain (kernel order), before the projection."""
        M = np.empty((len(self._Pk),) * 2)
        if not native.crba(self._ints, self._reals, qk, M):
            raise ValueError('mass matrix: q must be finite')
        return M

    def inverse_dynamics(self, q: ArrayLike, v: ArrayLike, dv: ArrayLike) -> Array:
        """Return tau = M(q) v' + h(q, v) (nv): RNEA with the base moving (002, 004 app. B)."""
        if self._same and _plain(q, v, dv):
            tau = np.empty(self.nv)
            if native.floating_rnea(self._ints, self._reals, self._origin, q, v, dv, ID,
                                    QUATERNION_TOLERANCE, tau):
                return tau
        batch = self._batch(self.inverse_dynamics, q, v, dv)
        if batch is not None:
            return batch
        q, T, _, qk = self._split(q)
        v = self._vector(v, self.nv, 'v')
        dv = self._vector(dv, self.nv, 'dv')
        tau = self._rnea(qk, self._lift(v), self._lift(dv), self._gravity_base(T))
        return self._project(tau) + self._armature_after * dv

    def mass_matrix(self, q: ArrayLike) -> Array:
        """Return M(q), nv x nv, symmetric positive definite for a physical robot."""
        if self._same and _plain(q):
            M = np.empty((self.nv, self.nv))
            if native.floating_crba(self._ints, self._reals, q, QUATERNION_TOLERANCE, M):
                return M
        batch = self._batch(self.mass_matrix, q)
        if batch is not None:
            return batch
        _, _, _, qk = self._split(q)
        M = self._mass_matrix_kernel(qk)
        if self._sel is None:
            return self._Pk.T @ M @ self._Pk + np.diag(self._armature_after)
        return M if self._same else M[np.ix_(self._sel, self._sel)]

    def gravity_torque(self, q: ArrayLike) -> Array:
        """Return G(q) = tau at rest (nv): the generalized gravity forces."""
        if self._same and _plain(q):
            tau = np.empty(self.nv)
            if native.floating_rnea(self._ints, self._reals, self._origin, q, self._zero_v,
                                    self._zero_v, GRAVITY, QUATERNION_TOLERANCE, tau):
                return tau
        if np.ndim(q) == 2:
            return self._batch(self.gravity_torque, q)
        _, T, _, qk = self._split(q)
        reals = self._reals.copy()
        reals[-1, :3] = self._gravity_base(T)
        tau = np.empty(len(self._Pk))
        if not native.gravity(self._ints, reals, qk, tau):
            raise ValueError('gravity torque: q must be finite')
        return self._project(tau)

    def bias_torque(self, q: ArrayLike, v: ArrayLike) -> Array:
        """Return h(q, v) = C*(q)(v kron v) + G(q) (nv): tau with v' = 0."""
        if self._same and _plain(q, v):
            tau = np.empty(self.nv)
            if native.floating_rnea(self._ints, self._reals, self._origin, q, v, self._zero_v,
                                    ID, QUATERNION_TOLERANCE, tau):
                return tau
        if np.ndim(q) == 2 or np.ndim(v) == 2:
            return self._batch(self.bias_torque, q, v)
        return self.inverse_dynamics(q, v, np.zeros(self.nv))

    def coriolis_vector(self, q: ArrayLike, v: ArrayLike) -> Array:
        """Return C*(q)(v kron v) = h(q, v) - G(q) (nv)."""
        if self._same and _plain(q, v):
            tau = np.empty(self.nv)
            if native.floating_rnea(self._ints, self._reals, self._origin, q, v, self._zero_v,
                                    CORIOLIS, QUATERNION_TOLERANCE, tau):
                return tau
        if np.ndim(q) == 2 or np.ndim(v) == 2:
            return self._batch(self.coriolis_vector, q, v)
        q, T, _, qk = self._split(q)
        vk = self._lift(self._vector(v, self.nv, 'v'))
        return self._project(self._rnea(qk, vk, np.zeros(len(vk)), np.zeros(3)))

    def coriolis_star(self, q: ArrayLike) -> Array:
        """
        Return C*(q), nv x nv^2, with C*(q)(v kron v) = h(q, v) - G(q) for every v.

        With quasi-velocities eq. (101) has no partial derivatives to take: C* is defined as
        the matrix of the quadratic form h - G, symmetric in its two velocity indices
        (C*[:, j nv + k] = C*[:, k nv + j]). For holonomic coordinates that is the
        Christoffel form of eq. (101) symmetrized (README, "Floating and planar bases").
        """
        if np.ndim(q) == 2:
            return self._batch(self.coriolis_star, q)
        _, _, _, qk = self._split(q)
        nv = self.nv
        E = np.eye(nv)
        zero, g0 = np.zeros(len(self._Pk)), np.zeros(3)

        def quadratic(v):     # h - G at v: the recursion without gravity, v' = 0
            return self._project(self._rnea(qk, self._lift(v), zero, g0))
        h = [quadratic(E[j]) for j in range(nv)]
        C = np.empty((nv, nv, nv))
        for j in range(nv):
            C[:, j, j] = h[j]
            for k in range(j + 1, nv):
                # polarization: Q(e_j + e_k) = Q_jj + Q_kk + 2 Q_jk
                C[:, j, k] = C[:, k, j] = 0.5 * (quadratic(E[j] + E[k]) - h[j] - h[k])
        return C.reshape(nv, nv * nv)

    def forward_dynamics(self, q: ArrayLike, v: ArrayLike, tau: ArrayLike) -> Array:
        """Return v' = M^-1 (tau - h(q, v)); SingularMassMatrixError naming the coordinates."""
        if np.ndim(q) == 2 or np.ndim(v) == 2 or np.ndim(tau) == 2:
            return self._batch(self.forward_dynamics, q, v, tau)
        if self._same and _plain(q, v, tau):      # singular M or bad input: the path below
            dv = np.empty(self.nv)
            if native.floating_forward_dynamics(self._ints, self._reals, self._origin, q, v,
                                                tau, QUATERNION_TOLERANCE, dv):
                return dv
        tau = self._vector(tau, self.nv, 'tau')
        return solve_mass_matrix(self.mass_matrix(q), tau - self.bias_torque(q, v),
                                 list(self.velocity_names))

    def kinetic_energy(self, q: ArrayLike, v: ArrayLike) -> float:
        """Return T = v^T M(q) v / 2."""
        v = self._vector(v, self.nv, 'v')
        return 0.5 * float(v @ self.mass_matrix(q) @ v)

    def potential_energy(self, q: ArrayLike) -> float:
        """Return V = -m g . c: the whole robot's mass at its centre (world frame)."""
        return -self.total_mass * float(self.gravity @ self.center_of_mass(q))

    # ----------------------------------------------------------------- configuration space
    def integrate(self, q: ArrayLike, v: ArrayLike, dt: float = 1.0) -> Array:
        """
        Return q moved by the constant velocity v for dt (Pinocchio's ``integrate``).

        The base moves along the exponential of its twist (body frame), exactly; the joints
        by v dt; the orientation comes out a unit quaternion (or (cos, sin)).
        """
        q, T, u, _ = self._split(q)
        v = self._vector(v, self.nv, 'v') * float(dt)
        T_rel = np.linalg.solve(self.origin, T) @ _exp6(_P_BASE[self.base] @ v[:self._nb])
        out = np.empty(self.nq)
        if self.base == 'floating':
            from scipy.spatial.transform import Rotation
            out[:3] = T_rel[:3, 3]
            quat = Rotation.from_matrix(T_rel[:3, :3]).as_quat()
            # q and -q are one rotation: keep the input's sign (Pinocchio multiplies them)
            out[3:7] = quat / np.linalg.norm(quat) * (1.0 if quat @ q[3:7] >= 0 else -1.0)
        else:
            angle = math.atan2(T_rel[1, 0], T_rel[0, 0])
            out[:4] = T_rel[0, 3], T_rel[1, 3], math.cos(angle), math.sin(angle)
        out[self.nq - self.n:] = u + v[self._nb:]
        return out

    def difference(self, q0: ArrayLike, q1: ArrayLike) -> Array:
        """Return v (nv) with integrate(q0, v) = q1 (Pinocchio's ``difference``)."""
        _, T0, u0, _ = self._split(q0)
        _, T1, u1, _ = self._split(q1)
        twist = _log6(np.linalg.solve(T0, T1))
        return np.concatenate([_P_BASE[self.base].T @ twist, u1 - u0])

    def base_state(self, position: ArrayLike, orientation: ArrayLike, linear: ArrayLike,
                   angular: ArrayLike) -> tuple[Array, Array]:
        """
        Return the base's entries of (q, v) from a pose and a twist (nav_msgs/Odometry).

        ``position`` and the unit quaternion ``orientation`` (x, y, z, w): the base in the
        world; ``linear`` and ``angular``: its twist in the base frame. A planar base takes
        x, y and the yaw, vx, vy and wz (the rest of the motion is not in its plane).
        """
        quat = _unit(self._vector(orientation, 4, 'orientation'), 'orientation: the quaternion')
        position = self._vector(position, 3, 'position')
        twist = np.concatenate([self._vector(linear, 3, 'linear'),
                                self._vector(angular, 3, 'angular')])
        if self._at_origin and self.base == 'floating':
            return np.concatenate([position, quat]), twist
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = quaternion_to_matrix(quat), position
        if not self._at_origin:
            T = self._origin_inverse @ T          # relative to the root joint's origin
        if self.base == 'floating':
            return np.concatenate([T[:3, 3], matrix_to_quaternion(T[:3, :3])]), twist
        yaw = math.atan2(T[1, 0], T[0, 0])
        return np.array([T[0, 3], T[1, 3], math.cos(yaw), math.sin(yaw)]), twist[[0, 1, 5]]

    def neutral(self) -> Array:
        """Return the neutral configuration: base at the origin, joints at 0."""
        q = np.zeros(self.nq)
        q[6 if self.base == 'floating' else 2] = 1.0
        return q

    # ----------------------------------------------------------------- kinematics
    def link_pose(self, q: ArrayLike, link: str) -> Array:
        """Return the 4x4 pose of a link in the world."""
        _, T, u, _ = self._split(q)
        return T @ self.fixed.link_pose(u, link)

    def jacobian(self, q: ArrayLike, link: str, point: ArrayLike | None = None,
                 frame: str = 'local_world_aligned') -> Array:
        """
        Return the 6 x nv Jacobian of a link or a point on it (rows: linear, angular).

        Frames as :meth:`RobotModel.jacobian` (Pinocchio's), with the world in place of the
        root: 'local_world_aligned' (world axes at the point), 'local' (link axes), 'world'
        (spatial velocity at the world origin).
        """
        if frame not in ('local_world_aligned', 'local', 'world'):
            raise ValueError("frame must be one of ['world', 'local', 'local_world_aligned'], "
                             f'got {frame!r}')
        _, T, u, _ = self._split(q)
        J_joints = self.fixed.jacobian(u, link, point, 'local')
        T_bk = self.fixed.link_pose(u, link)
        if point is not None:
            T_bk = T_bk.copy()
            T_bk[:3, 3] += T_bk[:3, :3] @ np.asarray(point, dtype=float)
        R, p = T_bk[:3, :3], T_bk[:3, 3]
        base = np.zeros((6, 6))          # base twist -> the frame's twist, its own axes
        base[:3, :3] = base[3:, 3:] = R.T
        base[:3, 3:] = -R.T @ skew(p)
        J = np.hstack([base @ _P_BASE[self.base], J_joints])
        if frame == 'local':
            return J
        T_wk = T @ T_bk
        R_w = T_wk[:3, :3]
        out = np.vstack([R_w @ J[:3], R_w @ J[3:]])
        if frame == 'world':
            out[:3] += skew(T_wk[:3, 3]) @ out[3:]
        return out

    def hessian(self, q: ArrayLike, link: str, point: ArrayLike | None = None,
                frame: str = 'local_world_aligned') -> Array:
        """
        Return the 6 x nv^2 Hessian of :meth:`jacobian`: H[:, s*nv + k] = dJ[:, s]/dq_k.

        The derivative along the k-th velocity direction, q moving as integrate(q, e_k t)
        (the base's twist is no coordinate derivative; for the joints this is Khang's
        derivative of 000 eq. 5), so that J' v = H (v kron v) as on a fixed base. In 'local'
        axes J depends on the joints only: the base directions give 0, the base columns turn
        with the link (-ad(J_k) Ad^-1); the other frames turn with the link's rotation.
        """
        if frame not in ('local_world_aligned', 'local', 'world'):
            raise ValueError("frame must be one of ['world', 'local', 'local_world_aligned'], "
                             f'got {frame!r}')
        _, T, u, _ = self._split(q)
        nb, nv = self._nb, self.nv
        J = self.jacobian(q, link, point, 'local')
        H = np.zeros((6, nv, nv))        # H[:, s, k]
        H[:, nb:, nb:] = self.fixed.hessian(u, link, point, 'local').reshape(6, self.n, self.n)
        for k in range(nb, nv):
            H[:, :nb, k] = -_ad(J[:, k]) @ J[:, :nb]
        if frame == 'local':
            return H.reshape(6, nv * nv)
        T_wk = self.link_pose(q, link)
        if point is not None:
            T_wk[:3, 3] += T_wk[:3, :3] @ np.asarray(point, dtype=float)
        R = T_wk[:3, :3]
        for k in range(nv):              # d/dq_k of X J_local with X turning with the link
            turn = _ad(J[:, k]) if frame == 'world' else _rotation_ad(J[3:, k])
            H[:, :, k] += turn @ J
        X = np.zeros((6, 6))
        X[:3, :3] = X[3:, 3:] = R
        if frame == 'world':
            X[:3, 3:] = skew(T_wk[:3, 3]) @ R
        return np.einsum('ij,jsk->isk', X, H).reshape(6, nv * nv)

    def acceleration(self, q: ArrayLike, v: ArrayLike, dv: ArrayLike, link: str,
                     point: ArrayLike | None = None) -> Array:
        """
        Return the classical acceleration of a link point (6: linear, angular), world axes.

        That is J v' + J' v in 'local_world_aligned': the second derivative of the point's
        world position, and the angular acceleration (Pinocchio's
        ``getFrameClassicalAcceleration`` in LOCAL_WORLD_ALIGNED). Compiled: the kernel's
        classical acceleration on the tree behind the base chain, in base axes, turned to
        the world.
        """
        row, p = self.fixed._site(link), self.fixed._point3(point)
        _, T, _, qk = self._split(q)
        vk = self._lift(self._vector(v, self.nv, 'v'))
        dvk = _chain_acceleration(vk, self._lift(self._vector(dv, self.nv, 'dv')))
        a = np.empty(6)
        if not native.acceleration(self._ints, self._reals, self._sites, row, p,
                                   qk, vk, dvk, LOCAL_WORLD_ALIGNED, a):
            raise ValueError('acceleration: q, v and dv must be finite')
        R = T[:3, :3]
        return np.concatenate([R @ a[:3], R @ a[3:]])

    def jacobian_time_variation(self, q: ArrayLike, v: ArrayLike, link: str,
                                point: ArrayLike | None = None,
                                frame: str = 'local_world_aligned') -> Array:
        """
        Return J'(q, v) v (6,) of :meth:`jacobian` in the same frame.

        J v' + J' v is then the time derivative of the velocity J v that frame gives.
        'local_world_aligned': the classical acceleration at v' = 0; 'local': its derivative
        in the link's moving axes; 'world': that of the spatial velocity at the world origin.
        """
        a = self.acceleration(q, v, np.zeros(self.nv), link, point)
        if frame == 'local_world_aligned':
            return a
        v = self._vector(v, self.nv, 'v')
        V = self.jacobian(q, link, point, 'local_world_aligned') @ v
        T = self.link_pose(q, link)
        x = T[:3, 3] + (0.0 if point is None else T[:3, :3] @ np.asarray(point, dtype=float))
        if frame == 'world':      # d/dt (v_p + x x w) = a_p + v_p x w + x x w'
            return np.concatenate([a[:3] + np.cross(V[:3], V[3:]) + np.cross(x, a[3:]),
                                   a[3:]])
        if frame == 'local':      # d/dt (R^T u) = R^T u' - w_l x R^T u
            R = T[:3, :3]
            w_l = R.T @ V[3:]
            return np.concatenate([R.T @ a[:3] - np.cross(w_l, R.T @ V[:3]), R.T @ a[3:]])
        raise ValueError("frame must be one of ['world', 'local', 'local_world_aligned'], "
                         f'got {frame!r}')

    def center_of_mass(self, q: ArrayLike) -> Array:
        """Return the centre of mass of the whole robot (base included) in the world (3,)."""
        _, T, u, _ = self._split(q)
        return T[:3, :3] @ self.fixed.center_of_mass(u, include_root=True) + T[:3, 3]

    def center_of_mass_jacobian(self, q: ArrayLike) -> Array:
        """Return the 3 x nv Jacobian of :meth:`center_of_mass` (world axes)."""
        _, T, u, _ = self._split(q)
        R = T[:3, :3]
        c = self.fixed.center_of_mass(u, include_root=True)
        base = np.hstack([R, -R @ skew(c)])
        J_joints = R @ self.fixed.center_of_mass_jacobian(u, include_root=True)
        return np.hstack([base @ _P_BASE[self.base], J_joints])

    def centroidal_momentum_matrix(self, q: ArrayLike) -> Array:
        """
        Return the centroidal momentum matrix A_G (6 x nv), Pinocchio's ``ccrba``.

        A_G v = (linear momentum, angular momentum about the centre of mass), world axes.

        The base rows of M, computed at the base origin in base axes before the planar and
        mimic projections, are the whole robot's momentum (the base twist's conjugate);
        A_G moves them to the centre of mass and turns them to world axes.
        """
        _, T, u, qk = self._split(q)
        R = T[:3, :3]
        c = self.fixed.center_of_mass(u, include_root=True)
        rows = (self._mass_matrix_kernel(qk) @ self._Pk)[:6]
        X = np.zeros((6, 6))
        X[:3, :3] = X[3:, 3:] = R
        X[3:, :3] = -R @ skew(c)
        return X @ rows

    # ----------------------------------------------------------------- contacts
    def contact_jacobian(self, q: ArrayLike, contacts) -> Array:
        """Return J_c (k x nv): the contacts' Jacobian rows, in each contact's reference_frame."""
        return self._contact_terms(q, None, contacts)[0]

    def _contact_terms(self, q, v, contacts) -> tuple[Array, Array | None]:
        """
        Return (J_c, gamma) of the contacts (gamma None without v), each in its own axes.

        J_c v' + gamma is what the contacts keep at zero: the classical acceleration of a
        3-D contact's point, the spatial acceleration of a 6-D contact's frame (Pinocchio's
        constraints). Compiled (kernels.floating_base.contact_terms) on the tree behind the
        base chain, turned from base axes to the world or the link; then projected by P.
        """
        contacts = _contacts(contacts)
        _, T, _, qk = self._split(q)
        nk = len(qk)
        rows = np.array([self.fixed._site(c.link) for c in contacts], dtype=np.int64)
        points = np.array([self.fixed._point3(c.point) for c in contacts]).reshape(-1, 3)
        dims = np.array([c.dim for c in contacts], dtype=np.int64)
        local = np.array([CONTACT_FRAMES[c.reference_frame] for c in contacts], dtype=np.int64)
        vk = np.zeros(nk) if v is None else self._lift(self._vector(v, self.nv, 'v'))
        Jk, drift = np.empty((int(dims.sum()), nk)), np.empty(int(dims.sum()))
        if not native.contact_terms(self._ints, self._reals, self._sites,
                                    np.ascontiguousarray(T[:3, :3]), qk, vk,
                                    _chain_acceleration(vk, np.zeros(nk)), rows, points, dims,
                                    local, Jk, drift):
            raise ValueError('contacts: q and v must be finite')
        J = Jk if self._same else (Jk @ self._Pk if self._sel is None else Jk[:, self._sel])
        return J, (None if v is None else drift)

    def _actuated(self, tau) -> Array:
        """Return the generalized forces of tau: joint forces only (n), or all of them (nv)."""
        tau = np.asarray(tau, dtype=float)
        if tau.shape == (self.n,):
            tau = np.concatenate([np.zeros(self._nb), tau])
        return self._vector(tau, self.nv, 'tau')

    def constrained_forward_dynamics(self, q: ArrayLike, v: ArrayLike, tau: ArrayLike,
                                     contacts) -> tuple[Array, Array]:
        """
        Return (v', lambda): M v' + h = S^T tau + J_c^T lambda with J_c v' + J_c' v = 0.

        ``tau``: the joint forces (n; the base is not actuated, S = [0 I]) or all nv
        generalized forces. ``contacts``: :class:`Contact` objects or link names (point contacts at
        the link origins); J_c v' + J_c' v = 0 is Pinocchio's constraint (``constraintDynamics``):
        a 3-D contact's point has no classical acceleration, a 6-D contact's frame no spatial
        acceleration. lambda: per contact a force at the contact point (and a moment for dim
        6) in the contact's ``reference_frame`` axes, what the world applies to the robot.
        Redundant contacts (J_c without full row rank) get the minimum-norm lambda of the same
        v'; contacts that contradict each other are refused (SingularJacobianError).
        """
        q = self._configuration(q)
        v = self._vector(v, self.nv, 'v')
        rhs = self._actuated(tau) - self.bias_torque(q, v)
        names = list(self.velocity_names)
        J, gamma = self._contact_terms(q, v, contacts)
        if len(J) == 0:
            return solve_mass_matrix(self.mass_matrix(q), rhs, names), np.zeros(0)
        M = self.mass_matrix(q)
        B = np.empty((self.nv, 1 + len(J)))     # C order: what the compiled entry takes
        B[:, 0], B[:, 1:] = rhs, J.T
        both = np.empty(B.shape)
        if not native.solve_columns(M, B, 1e-12, both):    # one factorisation, compiled
            both = solve_mass_matrix(M, B, names)    # raises, naming the coordinates
        Minv_rhs, Minv_JT = both[:, 0], both[:, 1:]
        A = J @ Minv_JT
        b = -gamma - J @ Minv_rhs
        lam, *_ = np.linalg.lstsq(A, b, rcond=1e-10)
        residual = float(np.linalg.norm(A @ lam - b))
        if residual > 1e-8 * (1.0 + float(np.linalg.norm(b))):
            links = [c.link for c in _contacts(contacts)]
            moving = J @ v
            why = (f'; the velocity v moves them (J_c v = {np.round(moving, 9).tolist()}), '
                   'which redundant contacts cannot absorb: give a v with J_c v = 0'
                   if np.linalg.norm(moving) > 1e-9 * (1.0 + float(np.linalg.norm(v))) else '')
            raise SingularJacobianError(
                f'contacts {links}: their constraints contradict each other (residual '
                f'{residual:.3g}): no acceleration keeps all of them still{why}')
        return Minv_rhs + Minv_JT @ lam, lam

    def contact_inverse_dynamics(self, q: ArrayLike, v: ArrayLike, dv: ArrayLike,
                                 contacts) -> tuple[Array, Array]:
        """
        Return (tau, lambda): joint forces (n) and contact forces realising v' in contact.

        The base rows of M v' + h = S^T tau + J_c^T lambda fix lambda: of all the contact
        forces that give the base its acceleration, the one of minimum norm. ValueError if
        v' moves a contact (J_c v' + J_c' v != 0) or no contact force can give the base that
        acceleration (for instance, no contact and a base that does not fall freely).
        """
        q = self._configuration(q)
        v = self._vector(v, self.nv, 'v')
        dv = self._vector(dv, self.nv, 'dv')
        total = self.inverse_dynamics(q, v, dv)
        nb = self._nb
        J, gamma = self._contact_terms(q, v, contacts)
        links = [c.link for c in _contacts(contacts)]
        if len(J):
            moved = J @ dv + gamma
            scale = 1.0 + float(np.linalg.norm(J @ dv))
            if np.linalg.norm(moved) > 1e-6 * scale:
                raise ValueError(f'dv moves the contacts {links} (J_c dv + J_c\' v = '
                                 f'{np.round(moved, 9).tolist()}): it cannot be realised '
                                 'in contact')
            lam, *_ = np.linalg.lstsq(J[:, :nb].T, total[:nb], rcond=1e-10)
        else:
            lam = np.zeros(0)
        base_left = total[:nb] - J[:, :nb].T @ lam
        if np.linalg.norm(base_left) > 1e-8 * (1.0 + float(np.linalg.norm(total[:nb]))):
            raise ValueError(f'contacts {links} cannot give the base this acceleration: a '
                             f'base wrench of {np.round(base_left, 9).tolist()} is left '
                             'that only an actuated base could apply')
        return (total - J.T @ lam)[nb:], lam
