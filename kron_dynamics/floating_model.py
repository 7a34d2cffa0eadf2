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
MovingBase: RobotModel's methods on a free-flying or planar base, Pinocchio's conventions.

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

from collections.abc import Mapping
import dataclasses
import functools
import math
from typing import NamedTuple
import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .algorithms.coriolis_matrix import coriolis_matrix_spatial, motion_cross
from .algorithms.forward_dynamics import solve_mass_matrix
from .algorithms.operational_space import operational_space_inertia, RCOND as OPERATIONAL_RCOND
from .algorithms.regressor import body_inertia, body_parameters
from .errors import ModelError
from .kernels import CORIOLIS, FRAMES, GRAVITY, ID, native, pack, pack_sites  # noqa: F401
#                    (CORIOLIS, FRAMES and GRAVITY: in the rows of _COMPILED_BASE)
from .kernels.layout import LOCAL_WORLD_ALIGNED, SITE_BODY
from .model.coordinates import BASE_NAMES, BaseMap, P_BASE
from .model.rotations import matrix_to_quaternion, quaternion_to_matrix, skew
from .model.tree import KinematicTree
from .written_out import parameter_names, write_out
from .checks import _boolean  # noqa: F401  (_ROOT_FLAG's written-out check)
from .checks import (_batch_wrenches, _body_parameters, _has_wrenches, _host_only, _on_device,
                     _step_arguments, _task_arguments, _wrenches, argument_names, ArrayChecker,
                     BASE_TYPES, frame_name, ndim, real_array)

Array = NDArray[np.float64]

QUATERNION_TOLERANCE = 1e-3     # |q| within this of 1 is normalised; beyond, refused
_BATCHED_ARRAYS = frozenset({'q', 'q0', 'q1', 'v', 'dv', 'tau'})   # the methods take (N, size)
_NO_WRENCH = np.zeros((0, 6))
_ORIGIN3 = np.zeros(3)
_F64 = np.dtype(np.float64)
_ND = np.ndarray
_empty = np.empty


def _plain(*arrays) -> bool:
    """Return True if every argument is a 1-D float64 ndarray: what the kernels take as is."""
    for a in arrays:      # a loop, not all() over a generator: this is on every fast call
        if type(a) is not np.ndarray or a.dtype is not _F64 or a.ndim != 1:
            return False
    return True


def _batch_rows(*arrays):
    """
    Return 1-D / 2-D float64 arrays as rows of a batch (1-D ones broadcast), or None.

    None unless at least one array is 2-D and every 2-D array has the same number of rows:
    what the compiled batch kernels take; anything else goes the per-row path, which names
    what is wrong.
    """
    N = None
    for a in arrays:
        if type(a) is not np.ndarray or a.dtype is not _F64 or not 1 <= a.ndim <= 2:
            return None
        if a.ndim == 2:
            if N is not None and a.shape[0] != N:
                return None
            N = a.shape[0]
    if N is None:
        return None
    return [a if a.ndim == 2 else np.broadcast_to(a, (N, a.shape[0])) for a in arrays]


def _batched(*names):
    """
    Let a single-state method take batches: 2-D arrays among ``names`` are looped over.

    Rows of the 2-D arguments go in together (1-D ones are broadcast); the results are
    stacked along a new first axis (tuples item by item), also for N = 0.
    """
    def wrap(method):
        code = method.__code__
        positions = {name: code.co_varnames.index(name) - 1 for name in names}

        @functools.wraps(method)
        def call(self, *args, **kwargs):
            values = {}
            for name, k in positions.items():
                value = args[k] if k < len(args) else kwargs.get(name)
                if _on_device(value):          # CUDA arrays: the method sends them to the GPU
                    return method(self, *args, **kwargs)
                if value is not None and ndim(value) >= 2:
                    array = real_array(value, name)
                    values[name] = (k, value if array is None else array)
            if not values:
                return method(self, *args, **kwargs)
            return self._rows(functools.partial(method, self), values, list(args), kwargs)
        return call
    return wrap


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


def _norms(x: np.ndarray):
    """Return the norm of x along its last axis, summed in order: one vector's as a row's."""
    if x.ndim == 1:         # the same operations on Python floats (the single call's cost)
        values = x.tolist()
        total = values[0] * values[0]
        for value in values[1:]:
            total = total + value * value
        return math.sqrt(total)
    total = x[..., 0] * x[..., 0]
    for i in range(1, x.shape[-1]):
        total = total + x[..., i] * x[..., i]
    return np.sqrt(total)


def _unit(x: np.ndarray, what: str) -> np.ndarray:
    """Return x normalised; ValueError naming it if its norm is not within tolerance of 1."""
    norm = _norms(x)
    if abs(norm - 1.0) > QUATERNION_TOLERANCE:
        raise ValueError(_not_unit(what, norm))
    return x / norm


def _not_unit(what: str, norm: float) -> str:
    return (f'{what} has norm {norm:.6g}; it must be a unit vector (within '
            f'{QUATERNION_TOLERANCE}: normalised)')


def _exp6(twist: np.ndarray) -> np.ndarray:
    """Return the 4x4 exponential of a twist (v, w): the motion it gives in unit time."""
    v, w = twist[:3], twist[3:]
    theta = float(np.linalg.norm(w))
    W = skew(w)
    if theta < 1e-6:      # series to third order
        A, Bc, Cc = 1.0 - theta ** 2 / 6, 0.5 - theta ** 2 / 24, 1.0 / 6 - theta ** 2 / 120
    else:
        A = math.sin(theta) / theta
        Bc = 2.0 * (math.sin(0.5 * theta) / theta) ** 2       # (1 - cos t) / t^2, exactly
        Cc = (theta - math.sin(theta)) / theta ** 3
    T = np.eye(4)
    T[:3, :3] = np.eye(3) + A * W + Bc * W @ W
    T[:3, 3] = (np.eye(3) + Bc * W + Cc * W @ W) @ v
    return T


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
        D = (1.0 - 0.5 * theta / math.tan(0.5 * theta)) / theta ** 2
    V_inv = np.eye(3) - 0.5 * W + D * W @ W
    return np.concatenate([V_inv @ T[:3, 3], w])


class MovingBase:
    """
    A rigid-body tree on a floating (6 DOF) or planar (3 DOF) base; see the module docstring.

    The methods of a :class:`~kron_dynamics.robot_model.RobotModel` whose base moves: the
    facade's FloatingBaseModel is this mixin on RobotModel, so a moving-base model is a
    RobotModel with the same methods (test/test_one_model.py checks that every public
    RobotModel method is defined here or derived from those that are).

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
        self._origin_argument = origin
        self._description = description
        self.tree = description.tree
        self.name: str = fixed.name
        self.root_link: str = fixed.root_link
        self.base_link: str = fixed.root_link
        self.joint_names: tuple[str, ...] = fixed.joint_names
        self.joints = fixed.joints
        self.armature = fixed.armature
        self._n_joints: int = fixed.n
        self.total_mass: float = fixed.total_mass
        self._gravity: Array = fixed.gravity         # world frame
        self._gravity.setflags(write=False)
        self._configuration_names = BASE_NAMES[base][0] + self.joint_names
        self._velocity_names = BASE_NAMES[base][1] + self.joint_names
        self._nq, self._nv = len(self._configuration_names), len(self._velocity_names)
        self._check = ArrayChecker(self._configuration_names, self._velocity_names)
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
        # v -> the kernels' velocities: P = diag(P_base, B) (model/coordinates.py)
        m = self._base_map = BaseMap(base, fixed._joint_map, description.joint_names)
        self._lift, self._project = m.lift, m.project
        self._armature = np.concatenate([np.zeros(self._nb), fixed.armature])
        # the compiled path: the tree behind the base chain, in the map's kernel order
        order = m.kernel_order
        self._tree_order = m.tree_order      # kernel input k >= 6 is tree coordinate [k-6]
        sites = pack_sites(description.frames)      # rows as fixed._site numbers them
        sites[:, SITE_BODY] = np.where(sites[:, SITE_BODY] < 0, 5, sites[:, SITE_BODY] + 6)
        self._sites = sites
        # P in kernel order is often a selection of coordinates: index instead of multiply;
        # the model's coordinates are the kernel's (floating base, no mimic joints)
        self._sel, self._same = m.selection, m.same
        self._nk = nk = len(order)
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
        self._site_rows = fixed._site_rows          # link -> row of the packed sites
        self._contact_cache = {}                    # contact list -> the kernels' arrays
        self._6nv = (6, self.nv)
        self._planar, self._pk = base == 'planar', m.kernel_table
        self._orientation = '(cos, sin)' if self._planar else 'quaternion (qx, qy, qz, qw)'
        self._L44, self._shape_3v = (len(self._site_rows), 4, 4), (3, self.nv)
        self._shape_star = (self.nv, self.nv * self.nv)
        self._shape_h = (6, self.nv * self.nv)
        self._shape_dm = (self.nv, self.nv, self.nv)
        self._regressor_columns = 10 * (self._ints.shape[0] - 5)    # the base chain's 5 dropped
        self._shape_v, self._shape_m = (self.nv,), (self.nv, self.nv)
        self._shape_d = (3, self.nv, self.nv)        # the derivatives' three results

    @property
    def _Pk(self) -> Array:
        """Return P in kernel order (the general paths; built on first use)."""
        return self._base_map.Pk

    # ----------------------------------------------------------------- sizes and names
    @property
    def n(self) -> int:
        """Return the number of joint coordinates (nv less the base's)."""
        return self._n_joints

    @property
    def nq(self) -> int:
        """Return the size of q: the base pose (7 or 4 entries), then the joints."""
        return self._nq

    @property
    def nv(self) -> int:
        """Return the size of v: the base twist (6 or 3 entries), then the joints."""
        return self._nv

    @property
    def configuration_names(self) -> tuple[str, ...]:
        """Return the name of every entry of q."""
        return self._configuration_names

    @property
    def velocity_names(self) -> tuple[str, ...]:
        """Return the name of every entry of v, v' and tau."""
        return self._velocity_names

    @property
    def gravity(self) -> Array:
        """Return the gravity acceleration in the world frame."""
        return self._gravity.copy()

    @property
    def link_names(self) -> tuple[str, ...]:
        """Return the names of every link (the world link of the root joint excluded)."""
        return self.fixed.link_names

    @property
    def position_limits(self) -> tuple[Array, Array]:
        """
        Return (lower, upper), each of length nq.

        The base's translation is unlimited (+-inf), its quaternion or (cos, sin) within
        [-1, 1]; then the joints' URDF limits (+-inf where none).
        """
        nt = 3 if self.base == 'floating' else 2
        lower, upper = self.fixed.position_limits
        box = np.concatenate([np.full(nt, np.inf), np.ones(self.nq - self.n - nt)])
        return np.concatenate([-box, lower]), np.concatenate([box, upper])

    @property
    def effort_limits(self) -> Array:
        """Return the effort limits (nv): +inf for the base (it is not actuated), the joints'."""
        return np.concatenate([np.full(self._nb, np.inf), self.fixed.effort_limits])

    @property
    def velocity_limits(self) -> Array:
        """Return the velocity limits (nv): +inf for the base, then the joints' URDF limits."""
        return np.concatenate([np.full(self._nb, np.inf), self.fixed.velocity_limits])

    @property
    def full_joint_names(self) -> tuple[str, ...]:
        """Return every movable joint: ``joint_names``, then the mimic joints."""
        return self.fixed.full_joint_names

    @property
    def locked_joints(self):
        """Return the URDF's locked joints (as RobotModel.locked_joints)."""
        return self.fixed.locked_joints

    @property
    def unconstrained(self) -> MovingBase:
        """Return the same base and tree without the mimic constraints."""
        return self._rebuilt(self.fixed.unconstrained)

    def coupling(self) -> tuple[Array, Array]:
        """Return (B, d) of the joints: positions of ``full_joint_names`` = B u + d."""
        return self.fixed.coupling()

    def full_configuration(self, q: ArrayLike) -> Array:
        """Return the position of every movable joint (``full_joint_names``) at q (batches)."""
        return self.fixed.full_configuration(self._configurations(q)[..., self.nq - self.n:])

    def full_velocity(self, v: ArrayLike) -> Array:
        """Return the velocity of every movable joint (``full_joint_names``; batches)."""
        return self.fixed.full_velocity(self._tangent(v, 'v')[..., self._nb:])

    def full_acceleration(self, dv: ArrayLike) -> Array:
        """Return the acceleration of every movable joint (``full_joint_names``; batches)."""
        return self.fixed.full_acceleration(self._tangent(dv, 'dv')[..., self._nb:])

    def moved_mass(self) -> Array:
        """Return, per joint, the mass of the bodies it moves."""
        return self.fixed.moved_mass()

    def friction_torque(self, v: ArrayLike) -> Array:
        """Return the URDF <dynamics> joint friction (nv): 0 for the base, then the joints."""
        v = self._tangent(v, 'v')
        return np.concatenate([np.zeros(v.shape[:-1] + (self._nb,)),
                               self.fixed.friction_torque(v[..., self._nb:])], axis=-1)

    # ----------------------------------------------------------------- derived models
    def _rebuilt(self, fixed) -> MovingBase:
        """Return the same base (type, origin) on another fixed-base model of the tree."""
        return type(self)(fixed, self.base, self._origin_argument)

    def with_gravity(self, gravity: ArrayLike) -> MovingBase:
        """Return a copy with another gravity vector (world frame)."""
        return self._rebuilt(self.fixed.with_gravity(gravity))

    def with_armature(self, armature) -> MovingBase:
        """Return a copy with per-joint armature (n values or a mapping by joint name)."""
        return self._rebuilt(self.fixed.with_armature(armature))

    def with_frame(self, name: str, link: str, xyz=(0.0, 0.0, 0.0),
                   rpy=(0.0, 0.0, 0.0)) -> MovingBase:
        """Return a copy with an operational frame on a link (as on a fixed base)."""
        return self._rebuilt(self.fixed.with_frame(name, link, xyz, rpy))

    def locked(self, values: Mapping[str, float]) -> MovingBase:
        """Return the model with the given joints locked at the given coordinates; same base."""
        return self._rebuilt(self.fixed.locked(values))

    def __repr__(self) -> str:
        return (f'RobotModel({self.name!r}, base={self.base!r}, nq={self.nq}, nv={self.nv}, '
                f'joints={list(self.joint_names)})')

    @property
    def mimic_joints(self):
        """Return the mimic joints (as RobotModel.mimic_joints)."""
        return self.fixed.mimic_joints

    # ----------------------------------------------------------------- inputs
    def _vector(self, x, size: int, what: str) -> Array:
        """Check one state's array of ``size`` entries (checks.ArrayChecker)."""
        return self._check.vector(x, what, size, what in _BATCHED_ARRAYS)

    def _tangent(self, x, what: str) -> Array:
        """Check a tangent-space array (``what``: 'v', 'dv'), one state or a batch (N, nv)."""
        if ndim(x) >= 2:
            (x,), _ = self._check.arrays(True, **{what: x})
            return x
        return self._vector(x, self.nv, what)

    def _configurations(self, q) -> Array:
        """
        Check q, one state or a batch (N, nq); return it with base orientations normalised.

        A row whose orientation is far from unit norm is named, as a batch's rows are.
        """
        if ndim(q) < 2:
            return self._configuration(q)
        (q,), _ = self._check.arrays(True, q=q)
        q = np.array(q, dtype=float)
        part = slice(3, 7) if self.base == 'floating' else slice(2, 4)
        norms = _norms(q[:, part])
        far = np.flatnonzero(np.abs(norms - 1.0) > QUATERNION_TOLERANCE)
        if far.size:
            raise ValueError(f'row {far[0]}: ' + _not_unit(f'q: the base {self._orientation}',
                                                           norms[far[0]]))
        q[:, part] /= norms[:, None]
        return q

    def _configuration(self, q, batch: bool = True) -> Array:
        """
        Check q; return it with the base orientation normalised (ValueError if far off).

        ``batch``: the method takes batches too (the error says so).
        """
        q = self._check.vector(q, 'q', batch=batch)
        part = slice(3, 7) if self.base == 'floating' else slice(2, 4)
        q[part] = _unit(q[part], f'q: the base {self._orientation}')
        return q

    def _batch(self, method, *arrays, names: tuple | None = None):
        """
        Return method applied to each row of 2-D inputs (1-D ones broadcast), or None.

        ``names``: the arrays' names (default: the method's first parameters), which say
        their sizes to the checker (nq for q, nv for the others).
        """
        for a in arrays:        # one state: every single call passes here, keep it cheap
            if a is not None and ndim(a) >= 2:
                break
        else:
            return None
        names = names or argument_names(method, len(arrays))
        for name, a in zip(names, arrays):
            _host_only(a, name, getattr(getattr(method, 'func', method), '__name__', ''))
        values = {name: (k, a if (array := real_array(a, name)) is None else array)
                  for k, (name, a) in enumerate(zip(names, arrays))
                  if a is not None and ndim(a) >= 2}
        return self._rows(method, values, list(arrays), {})

    def _rows(self, method, values, args, kwargs):
        """
        Call method per row of the 2-D arrays in values ({name: (position, array)}).

        N = 0 gives empty results shaped as one evaluation at the neutral configuration.
        """
        self._check.arrays(True, **{name: a for name, (_, a) in values.items()})
        N = next(iter(values.values()))[1].shape[0]

        def put(name, k, value):
            if k < len(args):
                args[k] = value
            else:
                kwargs[name] = value
        if N == 0:
            for name, (k, a) in values.items():
                width = a.shape[1]
                put(name, k, self.neutral() if width == self.nq and name in ('0', 'q', 'q0', 'q1')
                    else np.zeros(width))
            sample = method(*args, **kwargs)
            if isinstance(sample, tuple):
                return tuple(np.empty((0, *np.shape(x))) for x in sample)
            return np.empty((0, *np.shape(sample)))
        out = []
        for row in range(N):
            for name, (k, a) in values.items():
                put(name, k, a[row])
            try:
                out.append(method(*args, **kwargs))
            except ValueError as exc:       # name the row, as a fixed base's batch does
                exc.args = (f'row {row}: {exc.args[0] if exc.args else exc}', *exc.args[1:])
                raise
        if isinstance(out[0], tuple):
            return tuple(np.stack(items) for items in zip(*out))
        return np.array(out)

    # ----------------------------------------------------------------- base pose
    def base_pose(self, q: ArrayLike) -> Array:
        """Return the 4x4 pose of the base link in the world ((N, 4, 4) for a batch)."""
        return self._base_pose(self._configurations(q))

    def _base_pose(self, q: Array) -> Array:
        """Return the base pose (..., 4, 4) of checked configurations (..., nq)."""
        if q.ndim == 1:
            T = np.eye(4)
            if self.base == 'floating':
                T[:3, :3] = quaternion_to_matrix(q[3:7])     # (x, y, z, w)
                T[:3, 3] = q[:3]
            else:
                c, s = q[2], q[3]
                T[:2, :2] = [[c, -s], [s, c]]
                T[:2, 3] = q[:2]
            return T if self._at_origin else self.origin @ T
        T = np.zeros(q.shape[:-1] + (4, 4))     # the same entries, row-wise
        T[..., 3, 3] = 1.0
        if self.base == 'floating':     # quaternion_to_matrix of (x, y, z, w)
            x, y, z, w = q[..., 3], q[..., 4], q[..., 5], q[..., 6]
            T[..., 0, 0] = 1.0 - 2.0 * (y * y + z * z)
            T[..., 0, 1] = 2.0 * (x * y - z * w)
            T[..., 0, 2] = 2.0 * (x * z + y * w)
            T[..., 1, 0] = 2.0 * (x * y + z * w)
            T[..., 1, 1] = 1.0 - 2.0 * (x * x + z * z)
            T[..., 1, 2] = 2.0 * (y * z - x * w)
            T[..., 2, 0] = 2.0 * (x * z - y * w)
            T[..., 2, 1] = 2.0 * (y * z + x * w)
            T[..., 2, 2] = 1.0 - 2.0 * (x * x + y * y)
            T[..., :3, 3] = q[..., :3]
        else:
            c, s = q[..., 2], q[..., 3]
            T[..., 0, 0], T[..., 0, 1], T[..., 1, 0], T[..., 1, 1] = c, -s, s, c
            T[..., 2, 2] = 1.0
            T[..., :2, 3] = q[..., :2]
        return T if self._at_origin else self.origin @ T

    def _split(self, q):
        """Return (checked q, base pose, joint coordinates u, the kernels' configuration)."""
        q = self._configuration(q)
        u = q[self.nq - self.n:]
        return q, self._base_pose(q), u, self._base_map.kernel_configuration(u)

    def _gravity_base(self, T) -> Array:
        return T[:3, :3].T @ self.gravity

    # ----------------------------------------------------------------- dynamics
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
        M = np.empty((self._nk,) * 2)
        if not native.crba(self._ints, self._reals, qk, M):
            raise ValueError('mass matrix: q must be finite')
        return M

    # The compiled methods (inverse_dynamics, mass_matrix, gravity_torque, bias_torque,
    # coriolis_vector, forward_dynamics, jacobian and the two derivatives) are the rows of
    # _COMPILED_BASE below, written out; here are their general paths (checks, every base).
    def _general_inverse_dynamics(self, q, v, dv) -> Array:
        q, T, _, qk = self._split(q)
        v = self._vector(v, self.nv, 'v')
        dv = self._vector(dv, self.nv, 'dv')
        tau = self._rnea(qk, self._lift(v), self._lift(dv), self._gravity_base(T))
        return self._project(tau) + self._armature_after * dv

    def _general_mass_matrix(self, q) -> Array:
        _, _, _, qk = self._split(q)
        M = self._mass_matrix_kernel(qk)
        if self._sel is None:
            return self._Pk.T @ M @ self._Pk + np.diag(self._armature_after)
        return M if self._same else M[np.ix_(self._sel, self._sel)]

    def _general_gravity_torque(self, q) -> Array:
        _, T, _, qk = self._split(q)
        reals = self._reals.copy()
        reals[-1, :3] = self._gravity_base(T)
        tau = np.empty(self._nk)
        if not native.gravity(self._ints, reals, qk, tau):
            raise ValueError('gravity torque: q must be finite')
        return self._project(tau)

    def _general_coriolis_vector(self, q, v) -> Array:
        q, T, _, qk = self._split(q)
        vk = self._lift(self._vector(v, self.nv, 'v'))
        return self._project(self._rnea(qk, vk, np.zeros(len(vk)), np.zeros(3)))

    def _coriolis_star_readable(self, q: ArrayLike) -> Array:
        """Return :meth:`coriolis_star` by polarization of the compiled h - G (its reference)."""
        if ndim(q) >= 2:
            return self._batch(self._coriolis_star_readable, q)
        _, _, _, qk = self._split(q)
        nv = self.nv
        E = np.eye(nv)
        zero, g0 = np.zeros(self._nk), np.zeros(3)

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

    def _general_forward_dynamics(self, q, v, tau) -> Array:
        tau = self._vector(tau, self.nv, 'tau')
        return solve_mass_matrix(self.mass_matrix(q), tau - self.bias_torque(q, v),
                                 list(self.velocity_names))

    def _general_inverse_dynamics_derivatives(self, q, v, dv) -> tuple:
        q, T, _, qk = self._split(q)
        vk = self._lift(self._vector(v, self.nv, 'v'))
        dvk = self._lift(self._vector(dv, self.nv, 'dv'))
        gb = self._gravity_base(T)
        reals = self._reals.copy()
        reals[-1, :3] = gb
        nk = len(vk)
        out = np.empty((3, nk, nk))
        if not native.rnea_derivatives(self._ints, reals, qk, vk,
                                       _chain_acceleration(vk, dvk), out):
            raise ValueError('inverse dynamics derivatives: q, v and dv must be finite')
        native.floating_corrections(vk, gb, out)        # the base's tangent columns
        Dq, Dv, Mk = out
        P = self._Pk
        return P.T @ Dq @ P, P.T @ Dv @ P, P.T @ Mk @ P + np.diag(self._armature_after)

    # ----------------------------------------------------------------- inertial parameters
    @property
    def body_names(self) -> tuple[str, ...]:
        """Return the moving bodies: the base link (what is welded to it merged), the tree's."""
        return (self.base_link,) + self.fixed.body_names

    def dynamic_parameters(self) -> Array:
        """Return (nb, 10): the base body's parameters, then the tree's (RobotModel's)."""
        return np.vstack([body_parameters(*self._root), self.fixed.dynamic_parameters()])

    def with_dynamic_parameters(self, parameters: ArrayLike) -> MovingBase:
        """Return a copy with other inertial parameters (nb x 10: the base's first)."""
        nb = len(self.body_names)
        P = real_array(parameters, 'dynamic parameters', ModelError)
        if P is None or P.size != nb * 10:
            raise ModelError(f'dynamic parameters must be {nb} x 10 numbers (one row per body '
                             f'of {list(self.body_names)}), got '
                             f"{'no array of numbers' if P is None else P.shape}")
        P = P.reshape(nb, 10)
        _body_parameters(self.base_link, P[0])
        fixed = self.fixed
        d = fixed._described_parameters(P[1:])
        root = body_inertia(P[0])
        d = dataclasses.replace(d, root_inertia=root, total_mass=root[0] + d.tree.mass.sum())
        return self._rebuilt(fixed._rebuilt_description(d))

    def regressor(self, q: ArrayLike, v: ArrayLike, dv: ArrayLike) -> Array:
        """
        Return the joint torque regressor Y (nv x 10 nb), linear in the inertial parameters.

        ``inverse_dynamics(q, v, dv) = Y @ dynamic_parameters().ravel() + armature * dv``;
        the base rows are the base wrench (Pinocchio's free flyer).

        The compiled regressor of the tree behind the base chain (its five massless links
        dropped), projected on the model's coordinates as the forces are: one compiled call
        (``kernels.floating_base.moving_regressor``), batches too.
        """
        if _on_device(q):
            return self.on_gpu().regressor(q, v, dv)
        if self._pk is not None and _plain(q, v, dv):
            out = _empty((self.nv, self._regressor_columns))
            if native.moving_regressor(self._ints, self._reals, self._origin, self._planar,
                                       self._pk, q, v, dv, QUATERNION_TOLERANCE, out):
                return out
        rows = _batch_rows(q, v, dv)
        if rows is not None and self._pk is not None:
            out = _empty((rows[0].shape[0], self.nv, self._regressor_columns))
            if native.moving_regressor_batch(self._ints, self._reals, self._origin, self._planar,
                                             self._pk, *rows, QUATERNION_TOLERANCE, out):
                return out
        batch = self._batch(self.regressor, q, v, dv)
        if batch is not None:
            return batch
        return self._regressor_readable(q, v, dv)

    def _regressor_readable(self, q, v, dv) -> Array:
        """:meth:`regressor` of one state by NumPy around the compiled tree's (the reference)."""
        q, T, _, qk = self._split(q)
        vk = self._lift(self._vector(v, self.nv, 'v'))
        dvk = self._lift(self._vector(dv, self.nv, 'dv'))
        reals = self._reals.copy()
        reals[-1, :3] = self._gravity_base(T)
        nk = len(vk)
        Y = np.empty((nk, 10 * nk))
        if not native.regressor(self._ints, reals, qk, vk, _chain_acceleration(vk, dvk), Y):
            raise ValueError('regressor: q, v and dv must be finite')
        Y = Y[:, 50:]
        return Y if self._same else (self._Pk.T @ Y if self._sel is None else Y[self._sel])

    @_batched('q')
    def _mass_matrix_derivative_readable(self, q: ArrayLike) -> Array:
        """Return :meth:`mass_matrix_derivative` projected by NumPy (the kernel's reference)."""
        _, _, _, qk = self._split(q)
        nk = len(qk)
        dMk = np.empty((nk, nk, nk))
        if not native.mass_matrix_derivative(self._ints, self._reals, qk, dMk):
            raise ValueError('mass matrix derivative: q must be finite')
        dMk[:, :, :6] = 0.0         # the base moves the tree rigidly: M does not change
        P = self._Pk
        return np.einsum('abc,ai,bj,ck->ijk', dMk, P, P, P, optimize=True)

    def kinetic_energy(self, q: ArrayLike, v: ArrayLike) -> float | Array:
        """Return T = v^T M(q) v / 2 (an (N,) array for a batch: M by the compiled batch)."""
        if _on_device(q):
            return self.on_gpu().kinetic_energy(q, v)
        if ndim(q) < 2 and ndim(v) < 2:
            v = self._vector(v, self.nv, 'v')
            return 0.5 * float(v @ self.mass_matrix(q) @ v)
        (q, v), _ = self._check.arrays(True, q=q, v=v)
        return 0.5 * np.einsum('ki,ki->k', v, (self.mass_matrix(q) @ v[:, :, None])[:, :, 0])

    def potential_energy(self, q: ArrayLike) -> float | Array:
        """Return V = -m g . c: the whole robot's mass at its centre (world frame; batches)."""
        if _on_device(q):
            return self.on_gpu().potential_energy(q)
        V = -self.total_mass * (self.center_of_mass(q) @ self.gravity)
        return float(V) if np.ndim(V) == 0 else V

    # ----------------------------------------------------------------- configuration space
    def _integrate(self, q: ArrayLike, v: ArrayLike, dt: float) -> Array:
        """Return q (+) v dt: one compiled call (kernels.floating_base.moving_integrate)."""
        if type(q) is _ND and q.dtype is _F64 and q.ndim == 1 and type(v) is _ND \
                and v.dtype is _F64 and v.ndim == 1:
            out = _empty(self._nq)
            if native.moving_integrate(self._planar, q, v, dt, QUATERNION_TOLERANCE, out):
                return out
        rows = _batch_rows(q, v)
        if rows is not None:        # a bad row: the per-row loop below names it
            out = _empty((rows[0].shape[0], self._nq))
            if native.moving_integrate_batch(self._planar, *rows, dt, QUATERNION_TOLERANCE, out):
                return out
        batch = self._batch(functools.partial(self._integrate, dt=dt), q, v, names=('q', 'v'))
        if batch is not None:
            return batch
        return self._integrate_readable(q, v, dt)

    @_batched('q', 'v')
    def _integrate_readable(self, q: ArrayLike, v: ArrayLike, dt: float) -> Array:
        """
        Return q moved by the constant velocity v for dt (Pinocchio's ``integrate``).

        The base moves along the exponential of its twist (body frame), exactly; the joints
        by v dt; the orientation comes out a unit quaternion (or (cos, sin)). The reference
        of the compiled path, which also serves batches and names bad input.
        """
        q = self._configuration(q)
        v = self._vector(v, self.nv, 'v') * float(dt)
        out = np.empty(self.nq)
        out[self.nq - self.n:] = q[self.nq - self.n:] + v[self._nb:]
        E = _exp6(P_BASE[self.base] @ v[:self._nb])       # the base's motion, base axes
        if self.base == 'floating':     # p + R p_rel; the quaternion times exp(w / 2)
            out[:3] = q[:3] + quaternion_to_matrix(q[3:7]) @ E[:3, 3]
            w = v[3:6]
            theta = math.sqrt(float(w @ w))
            s = 0.5 - theta * theta / 48.0 if theta < 1e-6 else math.sin(0.5 * theta) / theta
            x2, y2, z2, w2 = s * w[0], s * w[1], s * w[2], math.cos(0.5 * theta)
            x1, y1, z1, w1 = q[3:7].tolist()
            quat = np.array([w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                             w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                             w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
                             w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2])
            # q and -q are one rotation: keep the input's sign (Pinocchio multiplies them)
            sign = 1.0 if quat @ q[3:7] >= 0 else -1.0
            out[3:7] = quat * (sign / math.sqrt(float(quat @ quat)))
        else:
            c, s = q[2], q[3]
            out[0] = q[0] + c * E[0, 3] - s * E[1, 3]
            out[1] = q[1] + s * E[0, 3] + c * E[1, 3]
            angle = math.atan2(s, c) + v[2]
            out[2:4] = math.cos(angle), math.sin(angle)
        return out

    def difference(self, q0: ArrayLike, q1: ArrayLike) -> Array:
        """Return v (nv) with integrate(q0, v) = q1 (Pinocchio's ``difference``)."""
        if _on_device(q0):
            return self.on_gpu().difference(q0, q1)
        if type(q0) is _ND and q0.dtype is _F64 and q0.ndim == 1 and type(q1) is _ND \
                and q1.dtype is _F64 and q1.ndim == 1:
            out = _empty(self._nv)
            if native.moving_difference(self._planar, q0, q1, QUATERNION_TOLERANCE, out):
                return out
        rows = _batch_rows(q0, q1)
        if rows is not None:        # a bad row: the per-row loop below names it
            out = _empty((rows[0].shape[0], self._nv))
            if native.moving_difference_batch(self._planar, *rows, QUATERNION_TOLERANCE, out):
                return out
        batch = self._batch(self.difference, q0, q1, names=('q0', 'q1'))
        if batch is not None:
            return batch
        return self._difference_readable(q0, q1)

    @_batched('q0', 'q1')
    def _difference_readable(self, q0: ArrayLike, q1: ArrayLike) -> Array:
        """Return :meth:`difference` by the matrix logarithm (the reference; checks, batches)."""
        _, T0, u0, _ = self._split(q0)
        _, T1, u1, _ = self._split(q1)
        twist = _log6(np.linalg.solve(T0, T1))
        return np.concatenate([P_BASE[self.base].T @ twist, u1 - u0])

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

    def _random_base(self, rng: np.random.Generator, base_box: float) -> Array:
        """Return a random base pose: translation in the box, orientation uniform."""
        try:
            box = float(base_box)
        except (TypeError, ValueError):
            box = float('nan')
        if not (np.isfinite(box + box) and box >= 0.0):      # uniform(-box, box) finite
            raise ValueError(f'base_box must be a finite number >= 0 (m), got {base_box!r}')
        if self.base == 'floating':
            quat = rng.normal(size=4)         # uniform on the unit sphere: uniform on SO(3)
            return np.concatenate([rng.uniform(-box, box, 3), quat / np.linalg.norm(quat)])
        yaw = rng.uniform(-np.pi, np.pi)
        return np.array([*rng.uniform(-box, box, 2), math.cos(yaw), math.sin(yaw)])

    def simulate(self, q: ArrayLike, v: ArrayLike, tau: ArrayLike, dt: float, steps: int = 1,
                 damping: ArrayLike | None = None,
                 f_ext: Mapping[str, ArrayLike] | None = None) -> tuple[Array, Array]:
        """
        Integrate v' = forward_dynamics(q, v, tau - damping v, f_ext) with RK4 on the manifold.

        tau (nv) is held; ``damping`` is viscous damping per joint (n values; the base has
        none); q moves by :meth:`integrate` (the base along the exponential of its twist):
        Runge-Kutta-Munthe-Kaas, so fourth order on the manifold as RK4 is on a fixed base.
        Returns (q, v) after ``steps`` steps of ``dt`` s (dt > 0, steps an integer >= 0).
        ``f_ext`` as for :meth:`forward_dynamics`, held constant in world axes (the readable
        loop below over its compiled calls, a batch's stages each one batch call).
        """
        if _on_device(q):
            return self.on_gpu().simulate(q, v, tau, dt, steps, damping, f_ext=f_ext)
        dt, steps = _step_arguments(dt, steps)
        wrenches = f_ext is not None and _has_wrenches(f_ext)
        if not wrenches and type(q) is _ND and q.dtype is _F64 and q.ndim == 1 \
                and type(v) is _ND and v.dtype is _F64 and v.ndim == 1 and type(tau) is _ND \
                and tau.dtype is _F64 and tau.ndim == 1 and (damping is None or (
                    type(damping) is _ND and damping.dtype is _F64 and damping.ndim == 1
                    and damping.shape[0] == self._n_joints)):
            # the whole integration in one compiled call (kernels.floating_base)
            full = self._zero_v if damping is None else np.concatenate(
                [self._zero_v[:self._nb], damping])
            q_out, v_out = _empty(self._nq), _empty(self._nv)
            if native.moving_simulate(self._ints, self._reals, self._origin, self._planar,
                                      self._pk, self._armature_after, self._same, q, v, tau,
                                      full, dt, steps, QUATERNION_TOLERANCE, q_out, v_out):
                return q_out, v_out
        if damping is None:
            damping = np.zeros(self.nv)
        else:
            damping = np.concatenate([np.zeros(self._nb),
                                      self.fixed._vector(damping, 'damping')])
        rows = None if wrenches else _batch_rows(q, v, tau)
        if rows is not None:        # a bad row or a singular M: the per-row loop says which
            N = rows[0].shape[0]
            q_out, v_out = _empty((N, self._nq)), _empty((N, self._nv))
            if native.moving_simulate_batch(self._ints, self._reals, self._origin, self._planar,
                                            self._pk, self._armature_after, self._same, *rows,
                                            damping, dt, steps, QUATERNION_TOLERANCE, q_out,
                                            v_out):
                return q_out, v_out
        if wrenches and max(ndim(q), ndim(v), ndim(tau)) >= 2:     # the loop on the batch
            (q, v, tau), N = self._inputs(q=self._configurations(q), v=v, tau=tau)
            _batch_wrenches(f_ext, N, self._site)       # checked once, even for no step
            q, v = np.array(q, dtype=float), np.array(v, dtype=float)
        elif max(ndim(q), ndim(v), ndim(tau)) >= 2:
            return self._batch(lambda a, b, c: self.simulate(a, b, c, dt, steps,
                                                             damping[self._nb:]), q, v, tau,
                               names=('q', 'v', 'tau'))
        else:
            q = self._configuration(q)
            v = self._vector(v, self.nv, 'v')
            tau = self._vector(tau, self.nv, 'tau')
            if wrenches:        # checked once, even for no step
                _wrenches(f_ext, self._site)

        def f(x, w):
            return self.forward_dynamics(x, w, tau - damping * w, f_ext)

        for _ in range(steps):      # Runge-Kutta-Munthe-Kaas: RK4 in the chart q (+) xi
            a1 = f(q, v)
            v2 = v + 0.5 * dt * a1
            x2 = self._dexp_inverse(0.5 * dt * v, v2)
            a2 = f(self._integrate(q, v, 0.5 * dt), v2)
            v3 = v + 0.5 * dt * a2
            x3 = self._dexp_inverse(0.5 * dt * x2, v3)
            a3 = f(self._integrate(q, x2, 0.5 * dt), v3)
            v4 = v + dt * a3
            x4 = self._dexp_inverse(dt * x3, v4)
            a4 = f(self._integrate(q, x3, dt), v4)
            q = self._integrate(q, (v + 2.0 * x2 + 2.0 * x3 + x4) / 6.0, dt)
            v = v + dt / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
        return q, v

    def _dexp_inverse(self, xi: Array, w: Array) -> Array:
        """
        Return xi' of q(t) = q0 (+) xi(t) moving with velocity w (RKMK, order 4).

        The base twist in the body frame (q' = q w, q = q0 exp(xi)): dexp^-1_{-xi}(w) =
        w + [xi, w] / 2 + [xi, [xi, w]] / 12, the terms an order-4 method needs (the planar
        twists are a subalgebra); the joints: w itself. One state or a batch (N, nv) of both.
        """
        P = P_BASE[self.base]
        nb = self._nb
        x, wb = xi[..., :nb] @ P.T, w[..., :nb] @ P.T
        once = _twist_bracket(x, wb)
        out = np.array(w, dtype=float)
        out[..., :nb] = (wb + 0.5 * once + _twist_bracket(x, once) / 12.0) @ P
        return out

    def _base_brackets(self, v: Array) -> Array:
        """
        Return P^T ad_(P v_b) P (..., nb, nb) of the base twists in v (..., nv), compiled.

        How the base's tangent coordinates drift with its twist: linearize's continuous A has
        -ad_v in its base block (``kernels.floating_base.base_brackets``).
        """
        nb = self._nb
        vb = np.ascontiguousarray(v[..., :nb], dtype=float).reshape(-1, nb)
        out = np.empty((vb.shape[0], nb, nb))
        native.base_brackets(self._planar, vb, out)
        return out.reshape(v.shape[:-1] + (nb, nb))

    def _base_integrate_jacobians(self, w: Array) -> tuple[Array, Array]:
        """
        Return the base blocks (..., nb, nb) of d integrate(q, w)/dq and /dw, compiled.

        Ad(exp(-w)) and the right Jacobian J_r(w) of the base's w (..., nv): the derivatives
        are identities on the joints (``kernels.floating_base.base_integrate_jacobians``).
        """
        nb = self._nb
        wb = np.ascontiguousarray(w[..., :nb], dtype=float).reshape(-1, nb)
        Jq, Jw = np.empty((wb.shape[0], nb, nb)), np.empty((wb.shape[0], nb, nb))
        native.base_integrate_jacobians(self._planar, wb, Jq, Jw)
        shape = w.shape[:-1] + (nb, nb)
        return Jq.reshape(shape), Jw.reshape(shape)

    def _tangent_bracket_readable(self, v: Array) -> Array:
        """Return ad_v on the base block, nv x nv: the reference of :meth:`_base_brackets`."""
        P = P_BASE[self.base]
        nb = self._nb
        out = np.zeros((self.nv, self.nv))
        out[:nb, :nb] = P.T @ motion_cross(P @ v[:nb]) @ P
        return out

    def _integrate_jacobians_readable(self, w: Array) -> tuple[Array, Array]:
        """
        Return the derivatives of integrate(q, w) in q and in w (tangent coordinates), nv x nv.

        Ad(exp(-w)) and the right Jacobian J_r(w) = sum_k (-ad_w)^k / (k + 1)! on the base
        block, identities on the joints: the reference of :meth:`_base_integrate_jacobians`.
        """
        P = P_BASE[self.base]
        nb = self._nb
        xi = P @ w[:nb]
        T = _exp6(-xi)
        R, p = T[:3, :3], T[:3, 3]
        Ad = np.zeros((6, 6))
        Ad[:3, :3] = Ad[3:, 3:] = R
        Ad[:3, 3:] = skew(p) @ R
        ad = -motion_cross(xi)
        term, Jr = np.eye(6), np.eye(6)
        for k in range(1, 60):      # |ad| <= |xi|: the terms fall factorially
            term = term @ ad / (k + 1)
            Jr = Jr + term
            if np.abs(term).max() < 1e-18:
                break
        Jq, Jw = np.eye(self.nv), np.eye(self.nv)
        Jq[:nb, :nb] = P.T @ Ad @ P
        Jw[:nb, :nb] = P.T @ Jr @ P
        return Jq, Jw

    # ----------------------------------------------------------------- kinematics
    @_batched('q')
    def _link_pose_readable(self, q: ArrayLike, link: str) -> Array:
        """Return :meth:`link_pose` from the fixed model's (checks, batches)."""
        _, T, u, _ = self._split(q)
        return T @ self.fixed.link_pose(u, link)

    @_batched('q')
    def _link_poses_readable(self, q: ArrayLike) -> Array:
        """Return :meth:`link_poses` from the fixed model's (checks, batches)."""
        _, T, u, _ = self._split(q)
        return T @ self.fixed.link_poses(u)

    def _site_pose(self, q, link: str, point) -> Array:
        """Return the world pose of a link frame moved to a point on the link (link axes)."""
        T = self.link_pose(q, link)
        if point is not None:
            T[:3, 3] += T[:3, :3] @ self.fixed._point3(point)
        return T

    @_batched('q')
    def _jacobian(self, q, link, point, frame) -> Array:
        """Return :meth:`jacobian` on the general path (checks, batches, every base)."""
        frame = frame_name(frame)
        _, T, u, _ = self._split(q)
        J_joints = self.fixed.jacobian(u, link, point, 'local')
        T_bk = self.fixed.link_pose(u, link)
        if point is not None:
            T_bk[:3, 3] += T_bk[:3, :3] @ self.fixed._point3(point)
        R, p = T_bk[:3, :3], T_bk[:3, 3]
        base = np.zeros((6, 6))          # base twist -> the frame's twist, its own axes
        base[:3, :3] = base[3:, 3:] = R.T
        base[:3, 3:] = -R.T @ skew(p)
        J = np.hstack([base @ P_BASE[self.base], J_joints])
        if frame == 'local':
            return J
        T_wk = T @ T_bk
        R_w = T_wk[:3, :3]
        out = np.vstack([R_w @ J[:3], R_w @ J[3:]])
        if frame == 'world':
            out[:3] += skew(T_wk[:3, 3]) @ out[3:]
        return out

    def jacobians(self, q: ArrayLike, link: str,
                  point: ArrayLike | None = None) -> tuple[Array, Array]:
        """(J_T, J_R), each 3 x nv in world axes, of a link's origin or a point on it."""
        J = self.jacobian(q, link, point)
        return J[..., :3, :], J[..., 3:, :]

    @_batched('q')
    def _hessian_readable(self, q: ArrayLike, link: str, point: ArrayLike | None = None,
                          frame: str = 'local_world_aligned') -> Array:
        """Return :meth:`hessian` in NumPy (the kernel's reference; checks, batches, a point)."""
        frame = frame_name(frame)
        _, T, u, _ = self._split(q)
        nb, nv = self._nb, self.nv
        J = self.jacobian(q, link, point, 'local')
        H = np.zeros((6, nv, nv))        # H[:, s, k]
        H[:, nb:, nb:] = self.fixed.hessian(u, link, point, 'local').reshape(6, self.n, self.n)
        for k in range(nb, nv):
            H[:, :nb, k] = -motion_cross(J[:, k]) @ J[:, :nb]
        if frame == 'local':
            return H.reshape(6, nv * nv)
        T_wk = self._site_pose(q, link, point)
        R = T_wk[:3, :3]
        for k in range(nv):              # d/dq_k of X J_local with X turning with the link
            turn = motion_cross(J[:, k]) if frame == 'world' else _rotation_ad(J[3:, k])
            H[:, :, k] += turn @ J
        X = np.zeros((6, 6))
        X[:3, :3] = X[3:, 3:] = R
        if frame == 'world':
            X[:3, 3:] = skew(T_wk[:3, 3]) @ R
        return np.einsum('ij,jsk->isk', X, H).reshape(6, nv * nv)

    def hessians(self, q: ArrayLike, link: str,
                 point: ArrayLike | None = None) -> tuple[Array, Array]:
        """(H_T, H_R), each 3 x nv^2, of the world-aligned Jacobian (as :meth:`hessian`)."""
        H = self.hessian(q, link, point)
        return H[..., :3, :], H[..., 3:, :]

    @_batched('q', 'v')
    def _jacobian_derivative(self, q: ArrayLike, v: ArrayLike, link: str,
                             point: ArrayLike | None = None,
                             frame: str = 'local_world_aligned') -> Array:
        """Return :meth:`jacobian_derivative` from the Hessian (checks, batches, a point)."""
        v = self._vector(v, self.nv, 'v')
        return self.hessian(q, link, point, frame).reshape(6, self.nv, self.nv) @ v

    @_batched('q', 'v', 'dv')
    def _acceleration_readable(self, q: ArrayLike, v: ArrayLike, dv: ArrayLike, link: str,
                               point: ArrayLike | None = None,
                               frame: str = 'local_world_aligned') -> Array:
        """Return :meth:`acceleration` with the turn in NumPy (checks, batches, a point)."""
        frame = frame_name(frame)
        if frame == 'world':
            raise ValueError("acceleration: frame 'world' has no classical acceleration (its "
                             "linear part is not a point's velocity); use "
                             "'local_world_aligned' or 'local'")
        row, p = self.fixed._site(link), self.fixed._point3(point)
        _, T, u, qk = self._split(q)
        vk = self._lift(self._vector(v, self.nv, 'v'))
        dvk = _chain_acceleration(vk, self._lift(self._vector(dv, self.nv, 'dv')))
        a = np.empty(6)
        if not native.acceleration(self._ints, self._reals, self._sites, row, p,
                                   qk, vk, dvk, LOCAL_WORLD_ALIGNED, a):
            raise ValueError('acceleration: q, v and dv must be finite')
        R = T[:3, :3]
        if frame == 'local':            # the link's axes: R_base_link^T of the base axes
            R = self.fixed.link_pose(u, link)[:3, :3].T
            return np.concatenate([R @ a[:3], R @ a[3:]])
        return np.concatenate([R @ a[:3], R @ a[3:]])

    def jacobian_derivative_times_velocity(self, q: ArrayLike, v: ArrayLike, link: str,
                                           point: ArrayLike | None = None,
                                           frame: str = 'local_world_aligned') -> Array:
        """
        Return J'(q, v) v (6,) of :meth:`jacobian` in the same frame.

        J v' + J' v is then the time derivative of the velocity J v that frame gives.
        'local_world_aligned': the classical acceleration at v' = 0; 'local': its derivative
        in the link's moving axes; 'world': that of the spatial velocity at the world origin.
        """
        if _on_device(q):
            return self.on_gpu().jacobian_derivative_times_velocity(q, v, link, point, frame)
        frame = frame_name(frame)
        if point is None and max(ndim(q), ndim(v)) >= 2:     # the compiled batches
            if frame == 'local_world_aligned':
                return self.acceleration(q, v, np.zeros(self.nv), link)
            (q, v), _ = self._check.arrays(True, q=q, v=v)
            return np.einsum('kij,kj->ki', self.jacobian_derivative(q, v, link, None, frame), v)
        return self._jacobian_derivative_times_velocity(q, v, link, point, frame)

    @_batched('q', 'v')
    def _jacobian_derivative_times_velocity(self, q, v, link, point, frame) -> Array:
        """:meth:`jacobian_derivative_times_velocity` of one state (a checked frame name)."""
        if frame != 'local_world_aligned' and point is None:     # J' compiled, whole
            v = self._vector(v, self.nv, 'v')
            return self.jacobian_derivative(q, v, link, None, frame) @ v
        a = self.acceleration(q, v, np.zeros(self.nv), link, point)
        if frame == 'local_world_aligned':
            return a
        v = self._vector(v, self.nv, 'v')
        V = self.jacobian(q, link, point, 'local_world_aligned') @ v
        T = self._site_pose(q, link, point)
        x = T[:3, 3]
        if frame == 'world':      # d/dt (v_p + x x w) = a_p + v_p x w + x x w'
            return np.concatenate([a[:3] + np.cross(V[:3], V[3:]) + np.cross(x, a[3:]),
                                   a[3:]])
        R = T[:3, :3]             # 'local': d/dt (R^T u) = R^T u' - w_l x R^T u
        w_l = R.T @ V[3:]
        return np.concatenate([R.T @ a[:3] - np.cross(w_l, R.T @ V[:3]), R.T @ a[3:]])

    def jacobian_time_variation(self, q, v, link, point=None, frame='local_world_aligned'):
        """Return J'(q, v) v: deprecated name of :meth:`jacobian_derivative_times_velocity`."""
        warnings.warn('jacobian_time_variation (J\' v) is now named '
                      'jacobian_derivative_times_velocity; jacobian_derivative is J\'',
                      DeprecationWarning, stacklevel=2)
        return self.jacobian_derivative_times_velocity(q, v, link, point, frame)

    @_batched('q')
    def _center_of_mass_readable(self, q: ArrayLike) -> Array:
        """Return :meth:`center_of_mass` from the fixed model's (checks, batches)."""
        _, T, u, _ = self._split(q)
        return T[:3, :3] @ self.fixed.center_of_mass(u, include_root=True) + T[:3, 3]

    @_batched('q')
    def _center_of_mass_jacobian_readable(self, q: ArrayLike) -> Array:
        """Return :meth:`center_of_mass_jacobian` from the fixed model's (checks, batches)."""
        _, T, u, _ = self._split(q)
        R = T[:3, :3]
        c = self.fixed.center_of_mass(u, include_root=True)
        base = np.hstack([R, -R @ skew(c)])
        J_joints = R @ self.fixed.center_of_mass_jacobian(u, include_root=True)
        return np.hstack([base @ P_BASE[self.base], J_joints])

    @_batched('q')
    def _centroidal_momentum_matrix_readable(self, q: ArrayLike) -> Array:
        """Return :meth:`centroidal_momentum_matrix` in NumPy (checks, batches)."""
        _, T, u, qk = self._split(q)
        R = T[:3, :3]
        c = self.fixed.center_of_mass(u, include_root=True)
        rows = (self._mass_matrix_kernel(qk) @ self._Pk)[:6]
        X = np.zeros((6, 6))
        X[:3, :3] = X[3:, 3:] = R
        X[3:, :3] = -R @ skew(c)
        return X @ rows

    @_batched('q', 'v')
    def _coriolis_matrix_readable(self, q, v) -> Array:
        """Return :meth:`coriolis_matrix` body by body in NumPy (the compiled one's reference)."""
        v = self._vector(v, self.nv, 'v')
        bodies = []
        for link, mass, com, inertia in self._bodies():
            T = self.link_pose(q, link)
            R = T[:3, :3]
            J = self.jacobian(q, link, frame='world')
            dJ = self.jacobian_derivative(q, v, link, frame='world')
            bodies.append((mass, R @ com + T[:3, 3], R @ inertia @ R.T, J, dJ))
        return coriolis_matrix_spatial(bodies, v)

    def _bodies(self):
        """Yield (link, mass, centre of mass, central inertia) of every moving body, link frame."""
        mass, com, inertia = self._root
        yield self.root_link, mass, np.asarray(com), np.asarray(inertia)   # the base moves
        yield from super()._bodies()

    def operational_space_inertia(self, q: ArrayLike, link: str,
                                  point: ArrayLike | None = None,
                                  frame: str = 'local_world_aligned', part: str = 'full',
                                  damping: float = 0.0) -> Array:
        """Return Lambda = (J M^-1 J^T)^-1 of a link or point (arguments as on a fixed base)."""
        if _on_device(q):
            return self.on_gpu().operational_space_inertia(q, link, point, frame, part,
                                                           damping)
        rows, damping = _task_arguments(part, damping)
        if ndim(q) >= 2:
            return self._task_inertias(q, link, point, frame, part, damping)
        J, M = self.jacobian(q, link, point, frame)[rows], self.mass_matrix(q)
        out = np.empty((rows.stop - rows.start,) * 2)
        if native.task_inertia(M, J, damping, OPERATIONAL_RCOND, out):     # one compiled call
            return out
        return operational_space_inertia(      # the readable algorithm: its error says why
            J, M, list(self.velocity_names), damping,
            f"J M^-1 J^T of link '{link}' ({part} rows, frame '{frame}')")

    # ----------------------------------------------------------------- contacts
    def _contact_terms(self, q, v, contacts) -> tuple[Array, Array | None]:
        """
        Return (J_c, gamma) of the contacts (gamma None without v), each in its own axes.

        J_c v' + gamma is what the contacts keep at zero: the classical acceleration of a
        3-D contact's point, the spatial acceleration of a 6-D contact's frame (Pinocchio's
        constraints). Compiled (kernels.floating_base.contact_terms) on the tree behind the
        base chain, turned from base axes to the world or the link; then projected by P.
        """
        rows, points, dims, local, m = self._packed_contacts(contacts)
        if self._pk is not None and _plain(q) and (v is None or _plain(v)):
            J, gamma = np.empty((m, self.nv)), np.empty(m)
            if native.moving_contact_terms(self._ints, self._reals, self._sites, self._origin,
                                           self._planar, self._pk, q,
                                           self._zero_v if v is None else v,
                                           QUATERNION_TOLERANCE, rows, points, dims, local, J,
                                           gamma):      # one compiled call
                return J, (None if v is None else gamma)
        _, T, _, qk = self._split(q)
        nk = len(qk)
        vk = np.zeros(nk) if v is None else self._lift(self._vector(v, self.nv, 'v'))
        Jk, drift = np.empty((m, nk)), np.empty(m)
        if not native.contact_terms(self._ints, self._reals, self._sites,
                                    np.ascontiguousarray(T[:3, :3]), qk, vk,
                                    _chain_acceleration(vk, np.zeros(nk)), rows, points, dims,
                                    local, Jk, drift):
            raise ValueError('contacts: q and v must be finite')
        J = Jk if self._same else (Jk @ self._Pk if self._sel is None else Jk[:, self._sel])
        return J, (None if v is None else drift)

    def _constrained_compiled(self, q, v, tau, contacts):
        """Return (v', lambda) in one compiled call, or None (the general path says why)."""
        if not _plain(q, v, tau) or (self._pk is None and not self._same):
            return None
        if tau.shape[0] == self.n:
            full = np.zeros(self.nv)
            full[self._nb:] = tau
            tau = full
        rows, points, dims, local, m = self._packed_contacts(contacts)
        dv, lam = np.empty(self.nv), np.empty(m)
        if not m:
            return None
        if self._same:
            ok = native.floating_constrained_forward_dynamics(
                self._ints, self._reals, self._sites, self._origin, q, v, tau,
                QUATERNION_TOLERANCE, rows, points, dims, local, dv, lam)
        else:       # a planar base or mimic joints: lifted and projected in the call
            ok = native.moving_constrained_forward_dynamics(
                self._ints, self._reals, self._sites, self._origin, self._planar, self._pk,
                self._armature_after, q, v, tau, QUATERNION_TOLERANCE, rows, points, dims,
                local, dv, lam)
        return (dv, lam) if ok else None

    def _contact_term_rows(self, q, v, contacts):
        """Return (J_c, gamma) of a batch, (N, m, nv) and (N, m), in one compiled call, or None."""
        if self._pk is None:
            return None
        rows, points, dims, local, m = self._packed_contacts(contacts)
        N = q.shape[0]
        J, gamma = np.empty((N, m, self.nv)), np.empty((N, m))
        if not native.moving_contact_terms_batch(
                self._ints, self._reals, self._sites, self._origin, self._planar, self._pk, q,
                np.broadcast_to(self._zero_v, (N, self.nv)) if v is None else v,
                QUATERNION_TOLERANCE, rows, points, dims, local, J, gamma):
            return None         # a bad row: the per-row loop names it
        return J, gamma

    def _constrained_rows(self, q, v, tau, contacts):
        """Return ((v', lambda), ok) of a batch in one compiled call, or None (no kernel)."""
        if self._pk is None and not self._same:
            return None
        rows, points, dims, local, m = self._packed_contacts(contacts)
        if not m:
            return None
        N = q.shape[0]
        if tau.shape[1] == self.n:      # the joint forces: the base is not actuated
            tau = np.concatenate([np.zeros((N, self._nb)), tau], axis=1)
        dv, lam, ok = np.empty((N, self.nv)), np.empty((N, m)), np.zeros(N, dtype=bool)
        if self._same:
            done = native.floating_constrained_forward_dynamics_batch(
                self._ints, self._reals, self._sites, self._origin, q, v, tau,
                QUATERNION_TOLERANCE, rows, points, dims, local, dv, lam, ok)
        else:       # a planar base or mimic joints: lifted and projected in the call
            done = native.moving_constrained_forward_dynamics_batch(
                self._ints, self._reals, self._sites, self._origin, self._planar, self._pk,
                self._armature_after, q, v, tau, QUATERNION_TOLERANCE, rows, points, dims,
                local, dv, lam, ok)
        return ((dv, lam), ok) if done else None

    def _single(self, x, what: str, batch: bool = True) -> Array:
        """Check one state's q (normalised orientation) or a velocity-sized array."""
        return (self._configuration(x, batch) if what == 'q'
                else self._check.vector(x, what, batch=batch))


def _twist_bracket(x: Array, m: Array) -> Array:
    """Return [x, m] = ad_x m of twists (..., 6), linear rows first: motion_cross(x) @ m."""
    return np.concatenate([np.cross(x[..., 3:], m[..., :3]) + np.cross(x[..., :3], m[..., 3:]),
                           np.cross(x[..., 3:], m[..., 3:])], axis=-1)


# ------------------------------------------------------------------ the compiled methods
# One row per MovingBase method that runs a compiled entry point of kernels/native.py in one
# call (a floating base without mimic joints: ``_same``), as robot_model._COMPILED is for a
# fixed base. _compiled_base writes each row out as the method: the fast path (1-D float64
# arrays straight into native.<kernel>, which checks lengths, finiteness and the quaternion
# itself and returns False on bad input), CUDA arrays to the GPU, a batch in one call of the
# batch twin, then the per-row loop and the general path (every base, the checker's errors).
class _BaseRow(NamedTuple):
    params: str                  # the parameters after self, as written in the signature
    arrays: tuple                # the per-coordinate arguments, as the fast path takes them
    kernel: str                  # native.<kernel>(ints, reals, <args>, out); batch: _batch
    args: str                    # the kernel's arguments; {} stands for its state arrays
    states: str                  # its state arrays: 'q, v, dv' (zeros where not used)
    shape: str                   # the output's shape per state (a tuple)
    general: str                 # the general path (checks, batches of other bases)
    doc: str
    prelude: tuple = ()          # lines run first (argument checks)
    fast_if: str = ''            # what else the fast path needs
    gpu: str = ''                # the result for CUDA arrays (where the GPU serves it)
    batch: bool = True           # a batch twin native.<kernel>_batch exists
    parts: int = 0               # the output holds this many results (a tuple of them)
    returns: str = 'Array'
    moving: str = ''             # native.moving_<kernel> for a planar base or mimic joints


_TOL = 'QUATERNION_TOLERANCE'
_THREE = 'tuple[Array, Array, Array]'
_MOVING = 'self._planar, self._pk, self._armature_after'
_MOVING_ORIGIN = 'self._origin, ' + _MOVING
_MOVING_BASE = 'self._origin, self._planar, self._pk'      # the base's pose, no armature
_SHAPE_44, _SHAPE_3, _SHAPE_6 = (4, 4), (3,), (6,)
_ROOT_FLAG = ("_boolean(include_root, 'include_root')",)    # checked, as a fixed base's
_SITE = ('try:', '    k, code = self._site_rows[link], FRAMES[frame]',     # a link frame's row
         'except (KeyError, TypeError):', '    k = code = -1')
_COMPILED_BASE = {
    'inverse_dynamics': _BaseRow(
        'q: ArrayLike, v: ArrayLike, dv: ArrayLike, f_ext: Mapping[str, ArrayLike] | None = '
        'None', ('q', 'v', 'dv'), 'floating_rnea', f'self._origin, {{}}, ID, {_TOL}',
        'q, v, dv', 'self._shape_v', 'self._general_inverse_dynamics(q, v, dv)',
        moving=f'{_MOVING_ORIGIN}, {{}}, ID, {_TOL}',
        prelude=('if f_ext is not None and _has_wrenches(f_ext) and not _on_device(q):',
                 '    return self._less_wrenches(f_ext, q=q, v=v, dv=dv)'),
        gpu='self.on_gpu().inverse_dynamics(q, v, dv, f_ext=f_ext)', doc="""
        Return tau = M(q) v' + h(q, v) - sum J^T F_ext (nv): RNEA with the base moving.

        002, 004 app. B. ``f_ext`` maps link names to wrenches (fx, fy, fz, mx, my, mz) that
        the environment applies to the link: force at the link frame origin and moment, in
        world axes (as on a fixed base, with the world for the root frame); in a batch, a
        wrench is 6 numbers (every row's) or N x 6 (one per row).
        """),
    'mass_matrix': _BaseRow(
        'q: ArrayLike, method: str | None = None', ('q',), 'floating_crba', f'{{}}, {_TOL}',
        'q', 'self._shape_m', 'self._general_mass_matrix(q)', moving=f'{_MOVING}, {{}}, {_TOL}',
        prelude=(
            'if method is not None:',
            "    raise ValueError(f'mass_matrix: method {method!r} is for a fixed base; a "
            "moving base has the compiled default only (method=None)')"),
        gpu='self.on_gpu().mass_matrix(q)', doc="""
        Return M(q), nv x nv, symmetric positive definite for a physical robot.

        ``method``: None only (the compiled recursion); the fixed base's readable
        alternatives ('jacobian', 'explicit', 'crba') are for ``model.fixed``.
        """),
    'gravity_torque': _BaseRow(
        'q: ArrayLike', ('q',), 'floating_rnea', f'self._origin, {{}}, GRAVITY, {_TOL}',
        'q, self._zero_v, self._zero_v', 'self._shape_v', 'self._general_gravity_torque(q)',
        moving=f'{_MOVING_ORIGIN}, {{}}, GRAVITY, {_TOL}',
        gpu='self.on_gpu().gravity_torque(q)',
        doc='Return G(q) = tau at rest (nv): the generalized gravity forces.'),
    'bias_torque': _BaseRow(
        'q: ArrayLike, v: ArrayLike', ('q', 'v'), 'floating_rnea',
        f'self._origin, {{}}, ID, {_TOL}', 'q, v, self._zero_v', 'self._shape_v',
        'self.inverse_dynamics(q, v, np.zeros(self.nv))', gpu='self.on_gpu().bias_torque(q, v)',
        moving=f'{_MOVING_ORIGIN}, {{}}, ID, {_TOL}',
        doc="Return h(q, v) = C*(q)(v kron v) + G(q) (nv): tau with v' = 0."),
    'coriolis_vector': _BaseRow(
        'q: ArrayLike, v: ArrayLike', ('q', 'v'), 'floating_rnea',
        f'self._origin, {{}}, CORIOLIS, {_TOL}', 'q, v, self._zero_v', 'self._shape_v',
        'self._general_coriolis_vector(q, v)', gpu='self.on_gpu().coriolis_vector(q, v)',
        moving=f'{_MOVING_ORIGIN}, {{}}, CORIOLIS, {_TOL}',
        doc='Return C*(q)(v kron v) = h(q, v) - G(q) (nv).'),
    'forward_dynamics': _BaseRow(
        'q: ArrayLike, v: ArrayLike, tau: ArrayLike, f_ext: Mapping[str, ArrayLike] | None = '
        'None', ('q', 'v', 'tau'),
        'floating_forward_dynamics', f'self._origin, {{}}, {_TOL}', 'q, v, tau',
        'self._shape_v', 'self._general_forward_dynamics(q, v, tau)',
        prelude=('if f_ext is not None and _has_wrenches(f_ext) and not _on_device(q):',
                 '    tau = self._plus_wrenches(f_ext, q, tau)'),
        gpu='self.on_gpu().forward_dynamics(q, v, tau, f_ext=f_ext)',
        moving=f'{_MOVING_ORIGIN}, {{}}, {_TOL}',
        doc="""
        Return v' = M^-1 (tau + sum J^T F_ext - h(q, v)); SingularMassMatrixError if M singular.

        ``f_ext`` as for :meth:`inverse_dynamics` (Pinocchio: ``aba`` with ``fext``); a
        SingularMassMatrixError names the coordinates.
        """),
    'jacobian': _BaseRow(
        "q: ArrayLike, link: str, point: ArrayLike | None = None, "
        "frame: str = 'local_world_aligned'", ('q',), 'floating_jacobian',
        f'self._sites, self._origin, {{}}, {_TOL}, k, _ORIGIN3, code', 'q', 'self._6nv',
        'self._jacobian(q, link, point, frame)', prelude=_SITE,
        fast_if='code >= 0 and point is None', gpu='self.on_gpu().jacobian(q, link, point, frame)',
        moving=f'self._sites, self._origin, self._planar, self._pk, {{}}, {_TOL}, k, '
        '_ORIGIN3, code',
        doc="""
        Return the 6 x nv Jacobian of a link or a point on it (rows: linear, angular).

        Frames as on a fixed base (Pinocchio's), with the world in place of the root:
        'local_world_aligned' (world axes at the point), 'local' (link axes), 'world'
        (spatial velocity at the world origin); Pinocchio's upper-case spellings too.
        Compiled in one call for a floating base without mimic joints
        (``kernels.floating_base.floating_jacobian``).
        """),
    'jacobian_derivative': _BaseRow(
        "q: ArrayLike, v: ArrayLike, link: str, point: ArrayLike | None = None, "
        "frame: str = 'local_world_aligned'", ('q', 'v'), 'moving_jacobian_derivative',
        '', 'q, v', 'self._6nv', 'self._jacobian_derivative(q, v, link, point, frame)',
        prelude=_SITE, fast_if='code >= 0 and point is None',
        gpu='self.on_gpu().jacobian_derivative(q, v, link, point, frame)',
        moving=f'self._sites, self._origin, self._planar, self._pk, {{}}, {_TOL}, k, '
        '_ORIGIN3, code', doc="""
        Return J'(q, v), 6 x nv: the time derivative of :meth:`jacobian` (same frame).

        J'[:, s] = sum_k H[:, s nv + k] v_k with H the :meth:`hessian` (000 eq. 8), so that
        J' v is :meth:`jacobian_derivative_times_velocity`. One compiled call
        (``kernels.floating_base.moving_jacobian_derivative``) for a link frame; the
        Hessian's contraction for a point.
        """),
    'coriolis_matrix': _BaseRow(
        'q: ArrayLike, v: ArrayLike', ('q', 'v'), 'moving_coriolis_matrix', '', 'q, v',
        'self._shape_m', 'self._coriolis_matrix_readable(q, v)',
        moving=f'self._planar, self._pk, {{}}, {_TOL}',
        gpu='self.on_gpu().coriolis_matrix(q, v)', doc="""
        Return the nv x nv Coriolis matrix C: M' - 2C is skew and C v = h(q, v) - G(q).

        With quasi-velocities C is not the Christoffel form: it is Pinocchio's
        (``computeCoriolisMatrix``), sum over bodies of J^T (I J' + B(I, V) J) with world
        spatial Jacobians (:mod:`kron_dynamics.algorithms.coriolis_matrix`, the reference),
        in one compiled call (``kernels.floating_base.moving_coriolis_matrix``).
        """),
    'link_pose': _BaseRow(
        'q: ArrayLike, link: str', ('q',), 'moving_link_pose', '', 'q', '_SHAPE_44',
        'self._link_pose_readable(q, link)', prelude=(
            'try:', '    k = self._site_rows[link]', 'except (KeyError, TypeError):',
            '    k = -1'), fast_if='k >= 0', gpu='self.on_gpu().link_pose(q, link)',
        moving=f'self._sites, {_MOVING_BASE}, {{}}, {_TOL}, k',
        doc='Return the 4x4 pose of a link in the world.'),
    'link_poses': _BaseRow(
        'q: ArrayLike', ('q',), 'moving_link_poses', '', 'q', 'self._L44',
        'self._link_poses_readable(q)', gpu='self.on_gpu().link_poses(q)[0]',
        moving=f'self._sites, {_MOVING_BASE}, {{}}, {_TOL}',
        doc="Return the 4 x 4 poses of all links in the world, (L, 4, 4) in ``link_names`` "
            "order."),
    'center_of_mass': _BaseRow(
        'q: ArrayLike, include_root: bool = True', ('q',), 'moving_center_of_mass', '', 'q',
        '_SHAPE_3', 'self._center_of_mass_readable(q)', prelude=_ROOT_FLAG,
        gpu='self.on_gpu().center_of_mass(q)', moving=f'{_MOVING_BASE}, {{}}, {_TOL}', doc="""
        Return the centre of mass of the whole robot (base included) in the world (3,).

        The base moves, so its mass always counts (``include_root`` changes nothing here).
        """),
    'center_of_mass_jacobian': _BaseRow(
        'q: ArrayLike, include_root: bool = True', ('q',), 'moving_center_of_mass_jacobian',
        '', 'q', 'self._shape_3v', 'self._center_of_mass_jacobian_readable(q)',
        prelude=_ROOT_FLAG, moving=f'{_MOVING_BASE}, {{}}, {_TOL}',
        gpu='self.on_gpu().center_of_mass_jacobian(q)',
        doc='Return the 3 x nv Jacobian of :meth:`center_of_mass` (world axes).'),
    'centroidal_momentum_matrix': _BaseRow(
        'q: ArrayLike', ('q',), 'moving_centroidal_momentum_matrix', '', 'q', 'self._6nv',
        'self._centroidal_momentum_matrix_readable(q)',
        gpu='self.on_gpu().centroidal_momentum_matrix(q)',
        moving=f'{_MOVING_BASE}, {{}}, {_TOL}', doc="""
        Return the centroidal momentum matrix A_G (6 x nv), Pinocchio's ``ccrba``.

        A_G v = (linear momentum, angular momentum about the centre of mass), world axes.

        The base rows of M, computed at the base origin in base axes before the planar and
        mimic projections, are the whole robot's momentum (the base twist's conjugate);
        A_G moves them to the centre of mass and turns them to world axes.
        """),
    'coriolis_star': _BaseRow(
        'q: ArrayLike, method: str | None = None', ('q',), 'moving_coriolis_star', '', 'q',
        'self._shape_star', 'self._coriolis_star_readable(q)',
        moving=f'self._planar, self._pk, {{}}, {_TOL}', gpu='self.on_gpu().coriolis_star(q)',
        prelude=(
            'if method is not None:',
            "    raise ValueError(f'coriolis_star: method {method!r} is for a fixed base; a "
            "moving base has the default only (method=None)')"), doc="""
        Return C*(q), nv x nv^2, with C*(q)(v kron v) = h(q, v) - G(q) for every v.

        With quasi-velocities eq. (101) has no partial derivatives to take: C* is defined as
        the matrix of the quadratic form h - G, symmetric in its two velocity indices
        (C*[:, j nv + k] = C*[:, k nv + j]). For holonomic coordinates that is the
        Christoffel form of eq. (101) symmetrized (README, "Floating and planar bases").
        ``method``: None only. One compiled call
        (``kernels.floating_base.moving_coriolis_star``); the polarization of h - G is its
        reference.
        """),
    'mass_matrix_derivative': _BaseRow(
        'q: ArrayLike', ('q',), 'moving_mass_matrix_derivative', '', 'q', 'self._shape_dm',
        'self._mass_matrix_derivative_readable(q)', moving=f'self._planar, self._pk, {{}}, {_TOL}',
        gpu='self.on_gpu().mass_matrix_derivative(q)', doc="""
        Return dM/dq [i, j, k] = dM_ij/dq_k along integrate(q, e_k t): 0 for the base.

        One compiled call (``kernels.floating_base.moving_mass_matrix_derivative``): the
        tree's dM/dq behind the base chain, projected on the model's velocities.
        """),
    'acceleration': _BaseRow(
        "q: ArrayLike, v: ArrayLike, dv: ArrayLike, link: str, point: ArrayLike | None = "
        "None, frame: str = 'local_world_aligned'", ('q', 'v', 'dv'), 'moving_acceleration',
        '', 'q, v, dv', '_SHAPE_6', 'self._acceleration_readable(q, v, dv, link, point, frame)',
        prelude=_SITE, fast_if='code >= 0 and point is None',
        gpu='self.on_gpu().acceleration(q, v, dv, link, point, frame)',
        moving=f'self._sites, self._origin, self._planar, self._pk, {{}}, {_TOL}, k, '
        '_ORIGIN3, code', doc="""
        Return the classical acceleration of a link point (6: linear, angular).

        That is J v' + J' v in 'local_world_aligned': the second derivative of the point's
        world position, and the angular acceleration, world axes (Pinocchio's
        ``getFrameClassicalAcceleration``); 'local': the same vectors in the link's axes.
        'world' is refused (a spatial velocity has no classical acceleration). Compiled: the
        kernel's classical acceleration on the tree behind the base chain, in base axes,
        turned to the world (``kernels.floating_base.moving_acceleration``).
        """),
    'hessian': _BaseRow(
        "q: ArrayLike, link: str, point: ArrayLike | None = None, "
        "frame: str = 'local_world_aligned'", ('q',), 'moving_hessian', '', 'q',
        'self._shape_h', 'self._hessian_readable(q, link, point, frame)', prelude=_SITE,
        fast_if='code >= 0 and point is None',
        gpu='self.on_gpu().hessian(q, link, point, frame)',
        moving=f'self._sites, self._origin, self._planar, self._pk, {{}}, {_TOL}, k, '
        '_ORIGIN3, code', doc="""
        Return the 6 x nv^2 Hessian of :meth:`jacobian`: H[:, s*nv + k] = dJ[:, s]/dq_k.

        The derivative along the k-th velocity direction, q moving as integrate(q, e_k t)
        (the base's twist is no coordinate derivative; for the joints this is Khang's
        derivative of 000 eq. 5), so that J' v = H (v kron v) as on a fixed base. In 'local'
        axes J depends on the joints only: the base directions give 0, the base columns turn
        with the link (-ad(J_k) Ad^-1); the other frames turn with the link's rotation. One
        compiled call (``kernels.floating_base.moving_hessian``) for a link frame.
        """),
    'inverse_dynamics_derivatives': _BaseRow(
        'q: ArrayLike, v: ArrayLike, dv: ArrayLike, f_ext: Mapping[str, ArrayLike] | None = '
        'None', ('q', 'v', 'dv'), 'floating_rnea_derivatives', f'self._origin, {{}}, {_TOL}',
        'q, v, dv', 'self._shape_d', 'self._general_inverse_dynamics_derivatives(q, v, dv)',
        prelude=('if f_ext is not None and _has_wrenches(f_ext) and not _on_device(q):',
                 '    return self._less_wrench_derivatives(f_ext, q=q, v=v, dv=dv)'),
        parts=3, returns=_THREE,
        moving=f'{_MOVING_ORIGIN}, {{}}, {_TOL}',
        gpu='self.on_gpu().inverse_dynamics_derivatives(q, v, dv, f_ext=f_ext)', doc="""
        Return (dtau/dq, dtau/dv, M) in the tangent space (nv x nv each), Pinocchio's convention.

        d/dq_k is the derivative along integrate(q, e_k t) with v and dv held (the base's
        twist and its derivative in base axes). From the compiled recursion on the tree
        behind the base chain at zero: moving the base moves nothing relative to it but
        gravity, which turns the other way (the base-rotation columns are -M_xyz [g_b]x, the
        translation columns 0), and the chain's accelerations carry the velocity products of
        the base (:func:`_chain_acceleration`), whose derivative enters dtau/dv through M.
        ``f_ext`` as for :meth:`inverse_dynamics`, held constant in world axes. One
        compiled call (kernels.rnea_derivatives.floating_rnea_derivatives; a planar base or
        mimic joints: moving_rnea_derivatives, lifted and projected by P), batches too.
        """),
    'forward_dynamics_derivatives': _BaseRow(
        'q: ArrayLike, v: ArrayLike, tau: ArrayLike, f_ext: Mapping[str, ArrayLike] | None = '
        'None', ('q', 'v', 'tau'),
        'floating_forward_dynamics_derivatives', f'self._origin, {{}}, {_TOL}', 'q, v, tau',
        'self._shape_d', 'self._derivatives_at(q, v, tau)', parts=3, returns=_THREE,
        prelude=('if f_ext is not None and _has_wrenches(f_ext) and not _on_device(q):',
                 '    return self._derivatives_with_wrenches(self.forward_dynamics_derivatives,',
                 '                                           f_ext, q=q, v=v, tau=tau)'),
        moving=f'{_MOVING_ORIGIN}, {{}}, {_TOL}',
        gpu='self.on_gpu().forward_dynamics_derivatives(q, v, tau, f_ext=f_ext)', doc="""
        Return (dv'/dq, dv'/dv, M^-1) at v' = forward_dynamics(q, v, tau), tangent space.

        ``f_ext`` as for :meth:`forward_dynamics`, held constant in world axes: dv'/dq
        gains M^-1 sum_i F_i H_i (the Hessians of :meth:`hessian`).
        """),
}


def _compiled_base(name: str, row: _BaseRow):
    """Return the MovingBase method of a _COMPILED_BASE row (written out, see the table)."""
    fast_if = ' and '.join([*([] if row.moving else ['self._same']),
                           *([row.fast_if] if row.fast_if else []), *(
        f'type({a}) is _ND and {a}.dtype is _F64 and {a}.ndim == 1' for a in row.arrays)])
    parts = ', '.join(f'out[{k}]' for k in range(row.parts)) or 'out'
    batch_parts = ', '.join(f'out[:, {k}]' for k in range(row.parts)) or 'out'
    moving = row.kernel.replace('floating_', 'moving_')
    lines = [f'def {name}(self, {row.params}) -> {row.returns}:',
             *('    ' + p for p in row.prelude),
             f'    if {fast_if}:', f'        out = _empty({row.shape})']
    if row.kernel == moving:        # one kernel for every base (where pk exists)
        lines += [f'        if self._pk is not None and native.{moving}(self._ints, '
                  f'self._reals, {row.moving.format(row.states)}, out):',
                  f'            return {parts}']
    else:
        lines += ['        if self._same:',
                  f'            if native.{row.kernel}(self._ints, self._reals, '
                  f'{row.args.format(row.states)}, out):', f'                return {parts}']
    if row.moving and row.kernel != moving:
        lines += [f'        elif self._pk is not None and native.{moving}(self._ints, '
                  f'self._reals, {row.moving.format(row.states)}, out):',
                  f'            return {parts}']
    if row.gpu:
        lines += [f'    if _on_device({row.arrays[0]}):', f'        return {row.gpu}']
    if row.batch:       # a bad row or a singular M: the per-row loop below says which
        lines += [f'    rows = _batch_rows({row.states})',
                  f"    if rows is not None{' and ' + row.fast_if if row.fast_if else ''}:",
                  f'        out = _empty((rows[0].shape[0], *{row.shape}))']
        if row.kernel != moving:
            lines += ['        if self._same:',
                      f'            if native.{row.kernel}_batch(self._ints, self._reals, '
                      f"{row.args.format('*rows')}, out):",
                      f'                return {batch_parts}']
        if row.moving:
            lines += [f"        {'el' if row.kernel != moving else ''}if self._pk is not None "
                      f'and native.{moving}_batch('
                      f"self._ints, self._reals, {row.moving.format('*rows')}, out):",
                      f'            return {batch_parts}']
        others = [p for p in parameter_names(row.params) if p not in row.arrays]
        method = (f'functools.partial(self.{name}, {", ".join(f"{p}={p}" for p in others)})'
                  if others else f'self.{name}')      # each row's single call: compiled
        lines += [f'    batch = self._batch({method}, {", ".join(row.arrays)}, '
                  f'names={row.arrays!r})',
                  '    if batch is not None:', '        return batch']
    lines.append(f'    return {row.general}')
    return write_out(lines, globals(), f'_COMPILED_BASE[{name!r}]', f'MovingBase.{name}',
                     row.doc)


for _name, _row in _COMPILED_BASE.items():
    setattr(MovingBase, _name, _compiled_base(_name, _row))
