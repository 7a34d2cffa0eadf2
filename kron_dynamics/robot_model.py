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
RobotModel: the facade users call; arrays in and out are in ``model.joint_names`` order.

Every method validates its inputs first (a ValueError naming the array, the row and the
joints at fault) and then calls a compiled kernel (:mod:`kron_dynamics.kernels`) or a
readable algorithm (:mod:`kron_dynamics.algorithms`). 1-D float64 arrays take a fast path
straight into the kernel, which checks lengths and finiteness itself; anything else (lists,
other dtypes, batches, bad values) takes the general path with the descriptive errors.

A description with mimic joints gives a :class:`CoupledRobotModel` (a RobotModel): its
coordinates are the independent joints u, every movable joint follows q = B u + d, and the
results are projected (004 section 5): the tree's own methods are untouched, so a model
without mimic joints runs exactly the code it ran before.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Mapping, Sequence
import dataclasses
import functools
import inspect
from pathlib import Path
import warnings
from types import MappingProxyType
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .algorithms.coriolis_matrix import spatial_inertia
from .algorithms.coriolis_star import coriolis_star as coriolis_star_hessian
from .algorithms.crba import crba
from .algorithms.forward_dynamics import solve_mass_matrix
from .algorithms.jsim_explicit import jsim_explicit
from .algorithms.kinematics import com_positions, forward_kinematics
from .algorithms.mass_matrix_jacobian import mass_matrix_jacobian
from .algorithms.operational_space import operational_space_inertia, RCOND as OPERATIONAL_RCOND
from .algorithms.regressor import body_inertia, body_parameters
from .checks import (_batch_wrenches, _body_parameters, _boolean, _contacts, _finite_scalar,
                     _frame_code, _generator, _has_wrenches, _on_device, _PARTS,
                     _step_arguments, _task_arguments, _wrenches, argument_names,
                     ArrayChecker, BASE_TYPES, CONTACT_FRAMES, DEFAULT_BASE_BOX, ndim,
                     real_array, real_number)
from .errors import ModelError, SingularJacobianError, SingularMassMatrixError
from .floating_model import MovingBase
from .kernels.layout import WORLD  # noqa: F401  (_COMPILED's acceleration uses it)
from .kernels import BIAS, CORIOLIS, FRAMES, GRAVITY, ID, native, pack, pack_sites  # noqa: F401
#                    (FRAMES: in the rows of _COMPILED and _COUPLED)
from .model.dh import DHRow, dh_to_urdf
from .model.coordinates import JointMap, P_BASE
from .model.inertia import warn_unusual
from .model.mimic import MimicJoint
from .model.reduce import lock_joints
from .model.tree import KinematicTree
from .model.rotations import rpy_to_matrix, skew
from .model.urdf import JointInfo, parse_urdf, RobotDescription
from .written_out import write_out

Array = NDArray[np.float64]

MASS_MATRIX_METHODS = {
    'jacobian': mass_matrix_jacobian,   # 000 eq. (95)
    'explicit': jsim_explicit,          # 003 eqs. (30)-(37)
    'crba': crba,                       # composite rigid bodies
}

_ND = np.ndarray
_F64 = np.dtype(np.float64)
_empty = np.empty
_NO_WRENCH = np.zeros((0, 6))
_NO_MIMICS: Mapping[str, MimicJoint] = MappingProxyType({})


_ORIGIN = np.zeros(3)
_ORIGIN.setflags(write=False)
_SHAPE_44 = (4, 4)


# Newton-Euler mode -> the GPU method (kron_dynamics.gpu)
_GPU_METHODS = {ID: 'inverse_dynamics', GRAVITY: 'gravity_torque', BIAS: 'bias_torque',
                CORIOLIS: 'coriolis_vector'}


def _is_vector(x) -> bool:
    """Return True for a 1-D float64 ndarray: what the compiled entry points take as is."""
    return type(x) is _ND and x.dtype is _F64 and x.ndim == 1


def _lock_unlisted(description: RobotDescription, joint_names) -> RobotDescription:
    """Lock at 0 the movable joints a joint_names list leaves out (RobotModel lock_others)."""
    if joint_names is None or isinstance(joint_names, str) \
            or not isinstance(joint_names, Iterable):
        return description        # RobotModel._joint_order reports the bad argument
    listed = {str(j) for j in joint_names}
    if not listed <= set(description.independent_joints):
        return description        # _joint_order names the fault against every movable joint
    others = {j: 0.0 for j in description.independent_joints if j not in listed}
    return lock_joints(description, others) if others else description


def _row_call(method, k: int, arrays, *args) -> tuple:
    """Return method's results (a tuple) at row k of the 2-D arrays; its error names the row."""
    try:
        x = method(*[a[k] if a.ndim == 2 else a for a in arrays], *args)
    except ValueError as exc:       # ModelError, SingularJacobianError, ...: the same type
        exc.args = (f'row {k}: {exc.args[0] if exc.args else exc}', *exc.args[1:])
        raise
    return x if isinstance(x, tuple) else (x,)


class ConstrainedDerivatives(NamedTuple):
    """The derivatives of constrained forward dynamics (v', lambda) in q, v and tau."""

    dv_dq: Array
    dv_dv: Array
    dv_dtau: Array
    dlambda_dq: Array
    dlambda_dv: Array
    dlambda_dtau: Array


def _split_derivatives(X, Y, nv: int) -> tuple:
    """Return the six derivatives of the KKT solve's X = (dv'/dq, ...), Y = -(dlambda/dq, ...)."""
    return (X[..., :nv], X[..., nv:2 * nv], X[..., 2 * nv:], -Y[..., :nv],
            -Y[..., nv:2 * nv], -Y[..., 2 * nv:])


# the shapes of a row of ConstrainedDerivatives, for an empty batch
_DERIVATIVE_SHAPES = (('nv', 'nv'),) * 3 + (('m', 'nv'),) * 3


class RobotModel:
    """
    A fixed-base rigid-body tree with the dynamics of the Kronecker-product papers.

    Build it with :meth:`from_urdf_file`, :meth:`from_urdf_string` or :meth:`from_dh`.
    q, qd, qdd and tau are 1-D arrays of length ``n`` in ``joint_names`` order, SI units
    (rad, m, N m, N). Every method also takes a batch: arrays of shape (N, n) (1-D ones are
    broadcast), and returns the results stacked along a new first axis of length N (also
    for N = 0). The model is immutable: ``with_gravity`` and ``with_armature`` return
    modified copies.

    Mimic joints (URDF ``<mimic>``) are holonomic constraints: the model's coordinates are
    the independent joints, ``mimic_joints`` says how the others follow, and every result
    is that of the constrained system (see :class:`CoupledRobotModel`).
    """

    mimic_joints: Mapping[str, MimicJoint] = _NO_MIMICS

    def __new__(cls, description: RobotDescription | None = None, *args, **kwargs):
        """
        Return a :class:`CoupledRobotModel` for a description with mimic joints.

        With ``lock_others``, the mimic joints that remain after locking decide: a Panda whose
        fingers are locked is a plain tree, on the plain compiled path.
        """
        if cls is RobotModel and isinstance(description, RobotDescription):
            names = args[0] if args else kwargs.get('joint_names')
            lock = args[2] if len(args) > 2 else kwargs.get('lock_others', False)
            if _boolean(lock, 'lock_others') and isinstance(names, (list, tuple)):
                description = _lock_unlisted(description, names)
                obj = super().__new__(CoupledRobotModel if description.mimic_joints else cls)
                obj._unlisted_locked = description      # __init__ does not lock again
                return obj
            if description.mimic_joints:
                cls = CoupledRobotModel
        return super().__new__(cls)

    def __init__(self, description: RobotDescription, joint_names: Sequence[str] | None = None,
                 armature: ArrayLike | None = None, lock_others: bool = False):
        """
        Build the model of a validated description (:func:`kron_dynamics.model.parse_urdf`).

        ``joint_names`` sets the order of q (it must name exactly the movable joints, or,
        with ``lock_others=True``, a subset: the others are locked at 0, as by
        :meth:`locked`); ``armature`` adds rotor inertia to M's diagonal, one value per joint
        or one number for every joint.
        """
        if not isinstance(description, RobotDescription):
            raise TypeError('RobotModel(description): use RobotModel.from_urdf_file, '
                            'from_urdf_string or from_dh, or pass the RobotDescription of '
                            f'kron_dynamics.model.parse_urdf, not {type(description).__name__}')
        if _boolean(lock_others, 'lock_others'):
            if isinstance(joint_names, Iterable) and not isinstance(joint_names, str):
                joint_names = list(joint_names)       # read twice: may be an iterator
            description = self.__dict__.pop('_unlisted_locked', None) or _lock_unlisted(
                description, joint_names)
        self._description = description
        self.tree = description.tree
        self.name: str = description.name
        self.root_link: str = description.root_link
        self.total_mass: float = description.total_mass
        self.joint_names: tuple[str, ...] = self._joint_order(joint_names)
        self._check = ArrayChecker(self.joint_names, self.joint_names)
        internal = {name: i for i, name in enumerate(description.joint_names)}
        self._perm = np.array([internal[j] for j in self.joint_names], dtype=int)
        self._perm.setflags(write=False)
        self.joints: Mapping[str, JointInfo] = MappingProxyType(
            {j: description.joints[j] for j in self.joint_names})
        self.armature: Array = self._armature(armature, self.n)
        root_mass, root_com, _ = description.root_inertia
        self._ints, self._reals = pack(self.tree, self._perm, self.armature, root_mass, root_com)
        self._sites = pack_sites(description.frames)      # one row per link (kinematics)
        self._site_rows = {link: k for k, link in enumerate(description.frames)}
        self._L44 = (len(self._site_rows), 4, 4)
        self._moving_mass = float(np.sum(self.tree.mass))      # potential_energy's m
        self._zeros = np.zeros(self.n)
        self._zeros.setflags(write=False)
        self._n = self.n
        # contacts: the kernels' arrays of a contact list (cached); B = I in kernel format
        self._contact_cache = {}
        table = self._joint_map.kernel_table
        self._contact_kernel = None if table is None else (
            self._ints, self._reals, self._sites, table, self._zeros)
        self._nn = (self.n, self.n)
        self._nnn = (self.n, self.n * self.n)
        self._6n, self._23n = (6, self.n), (2, 3, self.n)
        self._6nn, self._23nn = (6, self.n * self.n), (2, 3, self.n * self.n)
        self._3nn, self._nnn3 = (3, self.n, self.n), (self.n, self.n, self.n)
        self._nY = (self.n, 10 * self.tree.n)

    def _joint_order(self, joint_names) -> tuple[str, ...]:
        """Check a user joint order against the movable joints; ModelError naming the fault."""
        movable = self._description.independent_joints
        if joint_names is None:
            return tuple(movable)
        if isinstance(joint_names, str) or not isinstance(joint_names, Iterable):
            raise ModelError(f'joint_names must be a list of joint names, got {joint_names!r}')
        names = [str(j) for j in joint_names]
        mimics = [j for j in names if j in self._description.mimic_joints]
        if mimics:
            raise ModelError(f'joint_names: {mimics} are mimic joints, which follow other '
                             f'joints and are not coordinates; the independent joints are '
                             f'{list(movable)}')
        unknown = [j for j in names if j not in self._description.joints]
        locked = [j for j in unknown if j in self._description.locked_joints]
        if locked:
            raise ModelError(f'joint_names: {locked} are locked, not coordinates; the movable '
                             f'joints are {list(movable)}')
        if unknown:
            raise ModelError(f'joint_names: unknown or non-movable joint(s) {unknown}; '
                             f'movable joints are {list(movable)}')
        dup = sorted(j for j, count in collections.Counter(names).items() if count > 1)
        if dup:
            raise ModelError(f'joint_names: duplicate joint(s) {dup}')
        given = set(names)
        missing = [j for j in movable if j not in given]
        if missing:
            raise ModelError(f'joint_names: missing movable joint(s) {missing} (pass '
                             'lock_others=True to lock them at 0)')
        return tuple(names)

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_urdf_string(cls, xml: str, joint_names: Sequence[str] | None = None,
                         gravity: ArrayLike = (0.0, 0.0, -9.81),
                         armature: ArrayLike | None = None,
                         source: str = '<string>', lock_others: bool = False,
                         inertia_check: str = 'error', root_joint: str | None = None,
                         locked: Mapping[str, float] | None = None) -> RobotModel:
        """
        Build a model from URDF text; gravity is a 3-vector in the root link frame.

        ``locked={joint: coordinate}`` locks those joints at those coordinates (rad or m)
        before the model is built, as :meth:`locked` does after: ``joint_names`` and
        ``armature`` are then the other joints'. ``lock_others=True`` locks the movable
        joints that ``joint_names`` leaves out (and ``locked`` does not name) at 0.
        ``inertia_check='warn'`` loads links of moving bodies whose inertia no rigid body can
        have (negative principal moment, triangle inequality broken) as written, with one
        warning per link; the default 'error' refuses them (ModelError naming the link).
        ``root_joint``: 'fixed', 'floating' or 'planar' (a moving base: ``nq``, ``nv`` and
        the names include the base's coordinates, gravity is in the world frame); None: as
        the URDF says (a world link joined to the base by a floating or
        planar joint gives that base; otherwise fixed).
        """
        if not (root_joint is None or isinstance(root_joint, str)
                and root_joint in ('fixed', *BASE_TYPES)):
            raise ModelError(f"root_joint must be one of {['fixed', *BASE_TYPES]} or None (as "
                             f'the URDF says), got {root_joint!r}')
        description = parse_urdf(xml, source, gravity, inertia_check, warn=False)
        if locked is not None:
            try:
                description = lock_joints(description, locked)
            except ModelError as exc:
                raise ModelError(f'{source}: {exc}', argument='locked') from None
        if isinstance(joint_names, Iterable) and not isinstance(joint_names, str):
            joint_names = list(joint_names)       # read more than once
        fixed = cls(description, joint_names, armature, lock_others)
        values = fixed.locked_joints
        fixed._warn_unusual(source + (
            f" with {', '.join(f'{j}={v:g}' for j, v in values.items())} locked"
            if values else ''))
        declared = description.root_joint
        base = root_joint or (declared[0] if declared else 'fixed')
        if base == 'fixed':
            return fixed
        origin = declared[3:5] if declared else None
        return FloatingBaseModel(fixed, base, origin)

    @classmethod
    def from_urdf_file(cls, path: str | Path, joint_names: Sequence[str] | None = None,
                       gravity: ArrayLike = (0.0, 0.0, -9.81),
                       armature: ArrayLike | None = None,
                       lock_others: bool = False, inertia_check: str = 'error',
                       root_joint: str | None = None,
                       locked: Mapping[str, float] | None = None) -> RobotModel:
        """Build a model from a URDF file (arguments as :meth:`from_urdf_string`)."""
        try:
            xml = Path(path).read_text(encoding='utf-8')
        except (OSError, UnicodeDecodeError) as exc:
            raise ModelError(f'cannot read URDF file {path}: {exc}') from None
        return cls.from_urdf_string(xml, joint_names, gravity, armature, source=str(path),
                                    lock_others=lock_others, inertia_check=inertia_check,
                                    root_joint=root_joint, locked=locked)

    @classmethod
    def from_dh(cls, rows: Sequence[DHRow], name: str = 'dh_robot',
                base_xyz: ArrayLike = (0.0, 0.0, 0.0), base_rpy: ArrayLike = (0.0, 0.0, 0.0),
                gravity: ArrayLike = (0.0, 0.0, -9.81)) -> RobotModel:
        """
        Build a model of a standard DH table; q_i is the i-th DH variable (model.dh).

        Rows with ``mimic`` follow another joint and are no coordinates.
        """
        if isinstance(rows, (str, bytes)) or not isinstance(rows, Iterable):
            raise ModelError(f'from_dh: rows must be a list of DHRow, got {rows!r}')
        rows = list(rows)                     # read twice: may be an iterator
        xml = dh_to_urdf(rows, name, base_xyz, base_rpy)
        return cls.from_urdf_string(xml, [r.joint for r in rows if r.mimic is None], gravity,
                                    source=f'DH table {name}')

    # ----------------------------------------------------------------- properties
    @property
    def n(self) -> int:
        """Return the number of joint coordinates."""
        return self.tree.n

    @property
    def description(self) -> RobotDescription:
        """Return the validated URDF this model was built from."""
        return self._description

    @property
    def locked_joints(self) -> Mapping[str, float]:
        """Return {joint: coordinate} of the URDF's joints locked in this model (``locked``)."""
        return self._description.locked_joints

    @property
    def gravity(self) -> Array:
        """Gravity acceleration in the root link frame."""
        return self.tree.gravity.copy()

    @property
    def link_names(self) -> tuple[str, ...]:
        """All links, including those attached by fixed joints."""
        return tuple(self._description.frames)

    @property
    def effort_limits(self) -> Array:
        """URDF effort limits per joint (inf where none)."""
        return np.array([self.joints[j].effort for j in self.joint_names])

    @property
    def velocity_limits(self) -> Array:
        """URDF velocity limits per joint (inf where none)."""
        return np.array([self.joints[j].velocity for j in self.joint_names])

    @property
    def full_joint_names(self) -> tuple[str, ...]:
        """Every movable joint: ``joint_names``, then the mimic joints (tree order)."""
        return self.joint_names

    @property
    def unconstrained(self) -> RobotModel:
        """Return the tree without its mimic constraints (this model if it has none)."""
        return self

    def coupling(self) -> tuple[Array, Array]:
        """
        Return (B, d): the positions of ``full_joint_names`` are q = B u + d (004 section 5).

        u are the coordinates in ``joint_names`` order; without mimic joints B = I, d = 0.
        """
        return np.array(self._joint_map.B), np.array(self._joint_map.d)

    @functools.cached_property
    def _joint_map(self) -> JointMap:
        """Return q = B u + d (model/coordinates.py; the identity without mimic joints)."""
        return JointMap(self.full_joint_names, self.joint_names, self.mimic_joints)

    def full_configuration(self, q: ArrayLike) -> Array:
        """Return the position of every movable joint (``full_joint_names``) at q."""
        (q,), _ = self._inputs(q=q)
        return np.array(q)

    def full_velocity(self, qd: ArrayLike) -> Array:
        """Return the velocity of every movable joint (``full_joint_names``)."""
        (qd,), _ = self._inputs(qd=qd)
        return np.array(qd)

    def full_acceleration(self, qdd: ArrayLike) -> Array:
        """Return the acceleration of every movable joint (``full_joint_names``)."""
        (qdd,), _ = self._inputs(qdd=qdd)
        return np.array(qdd)

    def moved_mass(self) -> Array:
        """Return, per joint, the mass of the bodies it moves (its subtree)."""
        tree = self.tree
        return np.array([tree.mass[tree.subtree(i)].sum() for i in self._perm])

    def with_gravity(self, gravity: ArrayLike) -> RobotModel:
        """Return a copy of the model with another gravity vector."""
        g = real_array(gravity, 'gravity', ModelError)
        if g is None or g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ModelError(f'gravity must be 3 finite numbers, got {gravity!r}')
        d = self._description
        description = dataclasses.replace(d, tree=d.tree.with_gravity(g))
        return RobotModel(description, self.joint_names, self.armature)

    def with_armature(self, armature: ArrayLike | Mapping[str, float]) -> RobotModel:
        """
        Return a copy with armature (rotor inertia added to M's diagonal).

        ``armature``: one value per joint, one number for every joint, or {joint: value}.
        """
        if isinstance(armature, Mapping):
            unknown = [j for j in armature if j not in self.joints]
            if unknown:
                raise ModelError(f'armature: unknown joint(s) {unknown}; joints are '
                                 f'{list(self.joint_names)}', argument='armature')
            try:
                armature = [real_number(armature.get(j, 0.0), f'armature[{j!r}]')
                            for j in self.joint_names]
            except ValueError as exc:
                raise ModelError(str(exc), argument='armature') from None
        return RobotModel(self._description, self.joint_names, armature)

    def with_frame(self, name: str, link: str, xyz: ArrayLike = (0.0, 0.0, 0.0),
                   rpy: ArrayLike = (0.0, 0.0, 0.0)) -> RobotModel:
        """
        Return a copy with an operational frame: a tool centre point, a foot sole, a camera.

        The frame ``name`` is fixed to ``link`` at ``xyz`` (m) and ``rpy`` (rad) in the link
        frame, as a URDF ``<origin>``; it is usable wherever a link name is (poses,
        Jacobians in its own axes, contacts), as Pinocchio's ``addFrame``. ModelError for a
        name already taken or an unknown link.
        """
        return self._rebuilt_description(self._described_frame(name, link, xyz, rpy))

    def _described_frame(self, name, link, xyz, rpy) -> RobotDescription:
        """Return the description with one more frame (checked)."""
        d = self._description
        if not isinstance(name, str) or not name:
            raise ModelError(f'with_frame: the name must be a non-empty string, got {name!r}')
        if name in d.frames:
            raise ModelError(f"with_frame: '{name}' is already a link or frame of {self.name}")
        body, R_link, p_link = self._frame(link)
        values = []
        for what, x in (('xyz', xyz), ('rpy', rpy)):
            a = real_array(x, f'with_frame: {what}', ModelError)
            a = None if a is None or a.size != 3 else a.reshape(3).copy()
            if a is None or not np.all(np.isfinite(a)):
                raise ModelError(f'with_frame: {what} must be 3 finite numbers, got {x!r}')
            values.append(a)
        R = R_link @ rpy_to_matrix(values[1])
        R.setflags(write=False)
        p = p_link + R_link @ values[0]
        p.setflags(write=False)
        return dataclasses.replace(d, frames={**d.frames, name: (body, R, p)})

    def _rebuilt_description(self, description: RobotDescription) -> RobotModel:
        """Return a model of another description of the same tree: same joints, armature."""
        return RobotModel(description, self.joint_names, self.armature)

    # ----------------------------------------------------------------- inertial parameters
    # the regressor: algorithms/regressor.py (readable), kernels/regressor.py (compiled)
    @property
    def body_names(self) -> tuple[str, ...]:
        """Return the moving bodies (tree order, Pinocchio's): each movable joint's child link."""
        d = self._description
        return tuple(d.joints[j].child_link for j in d.joint_names)

    def dynamic_parameters(self) -> Array:
        """
        Return the inertial parameters, (nb, 10): one row per moving body (``body_names``).

        Welded links are merged into their body. As Pinocchio's
        ``Inertia.toDynamicParameters``: m, m c (3), and the inertia about the body frame
        origin (Ixx, Ixy, Iyy, Ixz, Iyz, Izz), all in the body frame.
        """
        t = self.tree
        return np.array([body_parameters(t.mass[i], t.com[i], t.inertia[i])
                         for i in range(t.n)]).reshape(t.n, 10)

    def with_dynamic_parameters(self, parameters: ArrayLike) -> RobotModel:
        """
        Return a copy with other inertial parameters (nb x 10, as ``dynamic_parameters``).

        Same joints, frames, limits, armature and gravity. ModelError naming the body for a
        value that is not finite, a negative mass, or a first moment without mass.
        """
        return self._rebuilt_description(self._described_parameters(parameters))

    def _described_parameters(self, parameters) -> RobotDescription:
        """Return the description with the tree's bodies given by dynamic parameters."""
        d = self._description
        t = d.tree
        P = real_array(parameters, 'dynamic parameters', ModelError)
        if P is None or P.size != t.n * 10:
            raise ModelError(f'dynamic parameters must be {t.n} x 10 numbers (one row per body '
                             f'of {list(self.body_names)}), got '
                             f"{'no array of numbers' if P is None else P.shape}")
        P = P.reshape(t.n, 10)
        names = self.body_names
        mass, com, inertia = np.empty(t.n), np.empty((t.n, 3)), np.empty((t.n, 3, 3))
        for i, p in enumerate(P):
            _body_parameters(names[i], p)
            mass[i], com[i], inertia[i] = body_inertia(p)
        tree = KinematicTree(t.parent, t.revolute, t.axis, t.R0, t.p0, mass, com, inertia,
                             t.gravity)
        return dataclasses.replace(d, tree=tree, total_mass=d.root_inertia[0] + mass.sum())

    def regressor(self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike) -> Array:
        """
        Return the joint torque regressor Y (n x 10 nb), linear in the inertial parameters.

        ``inverse_dynamics(q, qd, qdd) = Y @ dynamic_parameters().ravel() + armature * qdd``
        (armature is not a body parameter).

        Column block b is body ``body_names[b]``, in the order of ``dynamic_parameters``
        (Pinocchio's ``computeJointTorqueRegressor``). Batches give (N, n, 10 nb).
        """
        if _is_vector(q) and _is_vector(qd) and _is_vector(qdd):
            Y = np.empty(self._nY)
            if native.regressor(self._ints, self._reals, q, qd, qdd, Y):
                return Y
        if _on_device(q):
            return self.on_gpu().regressor(q, qd, qdd)
        (q, qd, qdd), N = self._inputs(q=q, qd=qd, qdd=qdd)
        return self._run(native.regressor, native.regressor_batch, N, self._nY, q, qd, qdd)

    # ----------------------------------------------------------------- configuration space
    # Pinocchio's model: a configuration space (nq) and a tangent space (nv). On a fixed base
    # both are the joint coordinates (the independent joints where there are mimic joints).
    base = 'fixed'

    @property
    def nq(self) -> int:
        """Return the size of a configuration q, as Pinocchio's model has it."""
        return self.n

    @property
    def nv(self) -> int:
        """Return the size of a velocity v, an acceleration and a generalized force."""
        return self.n

    @property
    def configuration_names(self) -> tuple[str, ...]:
        """Return the name of every entry of q (the base's, then ``joint_names``)."""
        return self.joint_names

    @property
    def velocity_names(self) -> tuple[str, ...]:
        """Return the name of every entry of v, v' and tau (the base's, then the joints)."""
        return self.joint_names

    @property
    def position_limits(self) -> tuple[Array, Array]:
        """Return (lower, upper), arrays of length nq: the URDF limits, +-inf where none."""
        return (np.array([self.joints[j].lower for j in self.joint_names]),
                np.array([self.joints[j].upper for j in self.joint_names]))

    def neutral(self) -> Array:
        """Return the neutral configuration (Pinocchio's ``neutral``): every joint at 0."""
        return np.zeros(self.nq)

    def random_configuration(self, rng=None, base_box: float = DEFAULT_BASE_BOX) -> Array:
        """
        Return a random configuration: each joint uniform within its limits (+-pi if none).

        ``rng``: None, a seed or a ``numpy.random.Generator``. A moving base also draws its
        translation uniformly in [-base_box, base_box] per axis (m) and its orientation
        uniformly (a floating base: uniform on SO(3); a planar one: its yaw).
        """
        rng = _generator(rng)
        lower, upper = self.position_limits
        lower, upper = lower[self.nq - self.n:], upper[self.nq - self.n:]
        lower = np.where(np.isfinite(lower), lower, -np.pi)
        upper = np.where(np.isfinite(upper), upper, np.pi)
        return np.concatenate([self._random_base(rng, base_box), rng.uniform(lower, upper)])

    def _random_base(self, rng: np.random.Generator, base_box: float) -> Array:
        """Return the base's entries of a random configuration (none on a fixed base)."""
        return np.zeros(0)

    def integrate(self, q: ArrayLike, v: ArrayLike, *args, **kwargs):
        """
        Return q moved by the constant velocity v for dt s (Pinocchio's ``integrate``).

        ``integrate(q, v, dt=1.0)``: on a fixed base q + v dt; a moving base moves along the
        exponential of its twist. The RK4 dynamics step is :meth:`simulate`; the old call
        ``integrate(q, qd, tau, dt, steps=1, damping=None)`` still works for one release, with
        a DeprecationWarning.
        """
        if len(args) >= 2 or {'tau', 'steps', 'damping'} & kwargs.keys():
            warnings.warn('integrate(q, qd, tau, dt, ...) is the RK4 dynamics step, now named '
                          'simulate(q, qd, tau, dt, steps=1, damping=None); '
                          'integrate(q, v, dt) is the configuration step q (+) v dt, as '
                          "Pinocchio's", DeprecationWarning, stacklevel=2)
            return self.simulate(q, v, *args, **kwargs)
        unknown = set(kwargs) - {'dt'}
        if unknown:
            raise TypeError(f'integrate(q, v, dt=1.0) got unexpected argument(s) '
                            f'{sorted(unknown)}')
        dt = _finite_scalar(args[0] if args else kwargs.get('dt', 1.0), 'dt')
        if _on_device(q):
            return self.on_gpu().integrate(q, v, dt)
        return self._integrate(q, v, dt)

    def _integrate(self, q, v, dt: float) -> Array:
        """Return q + v dt for checked q, v (single or batch)."""
        (q, v), N = self._inputs(q=q, v=v)
        return q + v * dt

    def difference(self, q0: ArrayLike, q1: ArrayLike) -> Array:
        """Return v (nv) with integrate(q0, v, 1) = q1 (Pinocchio's ``difference``)."""
        if _on_device(q0):
            return self.on_gpu().difference(q0, q1)
        (q0, q1), N = self._inputs(q0=q0, q1=q1)
        return q1 - q0

    def base_pose(self, q: ArrayLike) -> Array:
        """Return the 4 x 4 pose of the base link in the world (a moving base only)."""
        raise ModelError(f'base_pose: {self.name} has a fixed base (root link '
                         f"'{self.root_link}' held at the origin); build the model with "
                         "root_joint='floating' or 'planar' for a moving base")

    def base_state(self, position, orientation, linear, angular):
        """Return the base's entries of (q, v) from a pose and a twist (a moving base only)."""
        raise ModelError(f'base_state: {self.name} has a fixed base (root link '
                         f"'{self.root_link}'): it has no base state; build the model with "
                         "root_joint='floating' or 'planar' for a moving base")

    # ----------------------------------------------------------------- conversions
    def _vector(self, x, name: str) -> Array:
        """Check one per-joint array of shape (n,) (no batch); ValueError naming the fault."""
        return self._check.vector(x, name)

    def _armature(self, armature, n: int) -> Array:
        """Return the checked armature: None (none), one number for all, or one per joint."""
        try:
            if armature is None:
                armature = np.zeros(n)
            elif np.ndim(armature) == 0 and not isinstance(armature, (str, bytes)):
                armature = np.full(n, real_number(armature, 'armature'))
            armature = self._vector(armature, 'armature')
        except ValueError as exc:
            raise ModelError(str(exc), argument='armature') from None
        if np.any(armature < 0):
            raise ModelError('armature must be >= 0', argument='armature')
        armature.setflags(write=False)
        return armature

    def _inputs(self, batch: bool = True, **arrays):
        """Check joint arrays given as (n,) or as a batch (N, n) (checks.ArrayChecker)."""
        return self._check.arrays(batch, **arrays)

    def _internal(self, x, name: str) -> Array:
        v = np.empty(self.n)
        v[self._perm] = self._vector(x, name)
        return v

    def _cols(self, A: Array) -> Array:
        return A[..., self._perm]

    def _square(self, A: Array) -> Array:
        return A[np.ix_(self._perm, self._perm)]

    def _cube(self, A: Array) -> Array:
        n = self.n
        p = self._perm
        if n == 0:      # no movable joint: reshape(-1, 0, 0, 0) is ambiguous
            return A
        return A.reshape(-1, n, n, n)[:, p][:, :, p][:, :, :, p].reshape(A.shape)

    def _frame(self, link: str):
        try:
            return self._description.frames[link]
        except (KeyError, TypeError):
            raise ModelError(f'unknown link {link!r}; links are '
                             f'{list(self._description.frames)}') from None

    def _per_row(self, function: Callable, N: int, *rows):
        """
        Stack function(*row) over the rows of batch inputs (tuples are stacked per item).

        An empty batch gives results with a first axis of length 0 (the shapes of one
        evaluation at q = 0).
        """
        if N == 0:
            sample = function(*(np.zeros(self.n) for _ in rows))
            if isinstance(sample, tuple):
                return tuple(np.empty((0, *np.shape(item))) for item in sample)
            return np.empty((0, *np.shape(sample)))
        results = [function(*(r[k] for r in rows)) for k in range(N)]
        if isinstance(results[0], tuple):
            return tuple(np.stack(items) for items in zip(*results))
        return np.stack(results) if isinstance(results[0], np.ndarray) else np.array(results)

    def _generalized_wrenches(self, f_ext, q: Array, N) -> Array:
        """
        Return sum J^T F over f_ext at checked q: nv, or N x nv for a batch of N.

        Link Jacobians in root axes at the link origin, the axes and point f_ext is given in
        (compiled, a batch in one call per link); in a batch a wrench is 6 numbers (every
        row's) or N x 6.
        """
        if N is None:
            total = np.zeros(self.nv)
            for link, w in _wrenches(f_ext, self._site):
                total += self.jacobian(q, link).T @ w
            return total
        total = np.zeros((N, self.nv))
        for link, w in _batch_wrenches(f_ext, N, self._site):
            total += np.einsum('nrk,nr->nk', self.jacobian(q, link), w)
        return total

    def _plus_wrenches(self, f_ext, q, tau) -> Array:
        """Return tau + sum J^T F (one state or a batch): forward dynamics' joint forces."""
        (q, tau), N = self._inputs(q=q, tau=tau)
        return tau + self._generalized_wrenches(f_ext, q, N)

    def _less_wrenches(self, f_ext, **arrays) -> Array:
        """Return inverse dynamics less sum J^T F (one state or a batch), compiled calls."""
        (q, v, dv), N = self._inputs(**arrays)
        return self.inverse_dynamics(q, v, dv) - self._generalized_wrenches(f_ext, q, N)

    def _per_row_wrenches(self, method: Callable, f_ext, **arrays):
        """
        Return method(*row, row's wrenches) stacked over a batch (f_ext: 6 or N x 6 each).

        ``method`` returns a tuple and takes the wrenches after the arrays (default None).
        One state at a time (the compiled single call), an error naming its row; an empty
        batch checks f_ext and gives the method's empty results.
        """
        values, N = self._inputs(**arrays)
        wrenches = _batch_wrenches(f_ext, N, self._site)
        if N == 0:
            return method(*values)
        out = [_row_call(method, k, values, {link: w[k] for link, w in wrenches})
               for k in range(N)]
        return tuple(np.stack(items) for items in zip(*out))

    def _less_wrench_derivatives(self, f_ext, **arrays) -> tuple:
        """
        Return inverse_dynamics_derivatives(q, v, v') with sum F H taken off dtau/dq.

        One state or a batch, the compiled calls of both (:meth:`_wrench_derivative`).
        """
        values, N = self._inputs(**arrays)
        dq, dv, M = self.inverse_dynamics_derivatives(*values)
        return dq - self._wrench_derivative(values[0], f_ext, N), dv, M

    def _wrench_derivative(self, q: Array, f_ext, N=None) -> Array:
        """
        Return D = d/dq of sum J^T F over f_ext, held constant in root axes, at checked q.

        nv x nv (N x nv x nv for a batch of N): sum_i F_i H_i with the link Hessians H of
        000 section 3 ([row, s, k] = dJ_row,s/dq_k), compiled, a batch in one call per link.
        """
        n = self.nv
        if N is None:
            D = np.zeros((n, n))
            for link, w in _wrenches(f_ext, self._site):
                D += np.einsum('r,rsk->sk', w, self.hessian(q, link).reshape(6, n, n))
            return D
        D = np.zeros((N, n, n))
        for link, w in _batch_wrenches(f_ext, N, self._site):
            D += np.einsum('nr,nrsk->nsk', w, self.hessian(q, link).reshape(N, 6, n, n))
        return D

    def _derivatives_with_wrenches(self, derivatives: Callable, f_ext, **arrays):
        """
        Return derivatives(q, v, tau + sum J^T F), each d/dq plus its d/dtau times D.

        The wrenches enter forward dynamics as the generalized forces g(q) = sum J^T F, so
        a result x(q, v, tau + g(q)) has dx/dq + dx/dtau D, D = dg/dq
        (:meth:`_wrench_derivative`, the wrenches held in root axes). ``derivatives`` gives
        (dv'/dq, dv'/dv, M^-1) or :class:`ConstrainedDerivatives` (lambda's too); one state
        or a batch, in the compiled calls of both.
        """
        (q, v, tau), N = self._inputs(**arrays)
        out = derivatives(q, v, tau + self._generalized_wrenches(f_ext, q, N))
        D = self._wrench_derivative(q, f_ext, N)
        if isinstance(out, ConstrainedDerivatives):
            return out._replace(dv_dq=out.dv_dq + out.dv_dtau @ D,
                                dlambda_dq=out.dlambda_dq + out.dlambda_dtau @ D)
        da_dq, da_dv, Minv = out
        return da_dq + Minv @ D, da_dv, Minv

    def _generalized(self, tau):
        """Return tau as all nv generalized forces: joint forces (n, N x n) get a 0 base."""
        nb = self.nv - self.n
        forces = real_array(tau, 'tau')
        if nb and forces is not None and forces.ndim in (1, 2) and forces.shape[-1] == self.n:
            return np.concatenate([np.zeros(forces.shape[:-1] + (nb,)), forces], axis=-1)
        return tau

    def _run(self, single, batch, N, shape, *args):
        """Call a kernel on checked inputs into a new output array of shape ([N,] *shape)."""
        shape = (shape,) if isinstance(shape, int) else shape
        if N is None:
            out = np.empty(shape)
            ok = single(self._ints, self._reals, *args, out)
        else:
            out = np.empty((N, *shape))
            ok = batch(self._ints, self._reals, *args, out)
        if not ok:     # inputs were checked: only a kernel defect can get here
            raise RuntimeError('compiled kernel refused checked inputs')
        return out

    # ----------------------------------------------------------------- kinematics
    # 000 section 3, compiled: kernels/kinematics.py (poses), kernels/jacobians.py,
    # kernels/center_of_mass.py; the readable references are algorithms/jacobians.py,
    # relative_motion.py (000 eqs. 77-91), center_of_mass.py and operational_space.py.
    def _site(self, link: str) -> int:
        """Return a link's row in the packed link table; ModelError naming the links if unknown."""
        try:
            return self._site_rows[link]
        except (KeyError, TypeError):
            raise ModelError(f'unknown link {link!r}; links are '
                             f'{list(self._description.frames)}') from None

    @staticmethod
    def _point3(point) -> Array:
        """Check a point in link coordinates (3 finite numbers); None is the link origin."""
        if point is None:
            return _ORIGIN
        local = real_array(point, 'point')
        if local is None or local.size != 3:
            raise ValueError(f'point must be 3 numbers (link frame), got {point!r}')
        local = local.reshape(3).copy()        # never the caller's array
        if not np.all(np.isfinite(local)):
            raise ValueError(f'point must be finite, got {point!r}')
        return local

    def jacobians(self, q: ArrayLike, link: str,
                  point: ArrayLike | None = None) -> tuple[Array, Array]:
        """
        (J_T, J_R), each 3 x n in the root frame, of a link's origin or a point on it.

        ``point`` is expressed in the link frame. 000 eqs. (29), (37), (45).
        """
        try:    # fast path as in jacobian
            k = self._site_rows[link]
        except (KeyError, TypeError):
            k = -1
        if k >= 0 and point is None and type(q) is _ND and q.dtype is _F64 and q.ndim == 1:
            J = np.empty(self._23n)
            if native.jacobians(self._ints, self._reals, self._sites, k, q, J):
                return J[0], J[1]
        J = self.jacobian(q, link, point)
        return J[..., :3, :], J[..., 3:, :]

    def jacobian_derivative_times_velocity(self, q: ArrayLike, qd: ArrayLike, link: str,
                                           point: ArrayLike | None = None,
                                           frame: str = 'local_world_aligned') -> Array:
        """
        Return J'(q, q') q' (6,) of :meth:`jacobian` in the same frame.

        J q'' + J' q' is then the time derivative of the velocity J q' that frame gives; in
        'local_world_aligned' it is the classical acceleration at q'' = 0.
        """
        if _on_device(q):
            return self.on_gpu().jacobian_derivative_times_velocity(q, qd, link, point, frame)
        (q, qd), N = self._inputs(q=q, qd=qd)
        return np.einsum('...ij,...j->...i', self.jacobian_derivative(q, qd, link, point, frame),
                         qd)

    def hessians(self, q: ArrayLike, link: str,
                 point: ArrayLike | None = None) -> tuple[Array, Array]:
        """(H_T, H_R), each 3 x n^2: H[:, s*n + k] = dJ[:, s]/dq_k (000 eqs. 5, 51, 60, 67)."""
        try:    # fast path as in jacobian
            k = self._site_rows[link]
        except (KeyError, TypeError):
            k = -1
        if k >= 0 and point is None and type(q) is _ND and q.dtype is _F64 and q.ndim == 1:
            H = np.empty(self._23nn)
            if native.hessians(self._ints, self._reals, self._sites, k, _ORIGIN, q, H):
                return H[0], H[1]
        H = self.hessian(q, link, point)
        return H[..., :3, :], H[..., 3:, :]

    def _run_com(self, single, batch, N, shape, q, root):
        try:
            return self._run(single, batch, N, shape, q, root)
        except RuntimeError:      # q was checked: the only refusal left is a massless robot
            raise ValueError('center of mass: the bodies counted have no mass'
                             + ('' if root else ' (include_root=True adds the mass welded '
                                'to the root)')) from None

    _task_arguments = staticmethod(_task_arguments)       # the GPU's checks too
    _step_arguments = staticmethod(_step_arguments)
    _contact_list = staticmethod(_contacts)               # the GPU's contacts too

    def operational_space_inertia(self, q: ArrayLike, link: str,
                                  point: ArrayLike | None = None,
                                  frame: str = 'local_world_aligned', part: str = 'full',
                                  damping: float = 0.0) -> Array:
        """
        Return Lambda = (J M^-1 J^T)^-1, the operational-space inertia of a link or point.

        J is :meth:`jacobian` (same ``point`` and ``frame``), all six rows (``part='full'``,
        6 x 6) or only the 'linear' or 'angular' ones (3 x 3). SingularJacobianError when
        J M^-1 J^T is singular or nearly so (condition number above 1e8: a kinematic
        singularity, or fewer joints than task directions move the link);
        SingularMassMatrixError when M is. ``damping`` > 0 gives the damped inverse
        (J M^-1 J^T + damping^2 E)^-1, defined everywhere.
        """
        if _on_device(q):
            return self.on_gpu().operational_space_inertia(q, link, point, frame, part,
                                                           damping)
        rows, damping = _task_arguments(part, damping)
        self._site(link)
        self._point3(point)
        _frame_code(frame)
        (q,), N = self._inputs(q=q)
        size = rows.stop - rows.start
        if N == 0:
            return np.empty((0, size, size))
        if N is not None:
            return self._task_inertias(q, link, point, frame, part, damping)
        J, M = self.jacobian(q, link, point, frame)[rows], self.mass_matrix(q)
        out = np.empty((size, size))
        if native.task_inertia(M, J, damping, OPERATIONAL_RCOND, out):     # one compiled call
            return out
        return operational_space_inertia(      # the readable algorithm: its error says why
            J, M, list(self.joint_names), damping,
            f"J M^-1 J^T of link '{link}' ({part} rows, frame '{frame}')")

    def _task_inertias(self, q, link, point, frame, part, damping) -> Array:
        """
        :meth:`operational_space_inertia` of a batch of q (checked arguments).

        J and M by their compiled batches, then one compiled call (task_inertia_batch); a
        row it refuses is the single call's, whose error says why, naming the row.
        """
        rows = _PARTS[part]
        J = np.ascontiguousarray(self.jacobian(q, link, point, frame)[:, rows])
        M = np.ascontiguousarray(self.mass_matrix(q))
        size = rows.stop - rows.start
        out, ok = np.empty((J.shape[0], size, size)), np.zeros(J.shape[0], dtype=bool)
        if not native.task_inertia_batch(M, J, damping, OPERATIONAL_RCOND, out, ok):
            raise RuntimeError('compiled kernel refused checked inputs')
        q = np.asarray(q, dtype=float)
        for k in np.flatnonzero(~ok):
            out[k] = _row_call(lambda x: self.operational_space_inertia(
                x, link, point, frame, part, damping), k, (q,))[0]
        return out

    def _bodies(self):
        """Yield (link, mass, centre of mass, central inertia) of every moving body, link frame."""
        d = self._description
        for b, joint in enumerate(d.joint_names):
            yield d.joints[joint].child_link, d.tree.mass[b], d.tree.com[b], d.tree.inertia[b]

    def _centroidal_momentum_matrix_readable(self, q: ArrayLike) -> Array:
        """Return :meth:`centroidal_momentum_matrix` body by body (the kernel's reference)."""
        (q,), N = self._inputs(q=q)
        if N is not None:
            return self._per_row(self._centroidal_momentum_matrix_readable, N, q)
        A = np.zeros((6, self.nv))
        for link, mass, com, inertia in self._bodies():
            T = self.link_pose(q, link)
            R = T[:3, :3]
            A += spatial_inertia(mass, R @ com + T[:3, 3], R @ inertia @ R.T) @ self.jacobian(
                q, link, frame='world')
        X = np.eye(6)
        X[3:, :3] = -skew(self.center_of_mass(q))
        return X @ A

    def locked(self, values: Mapping[str, float]) -> RobotModel:
        """
        Return a model with the given joints locked at the given coordinates (rad or m).

        Pinocchio's ``buildReducedModel``: ``model.locked({'elbow': 0.5})`` has the other
        joints, in the same order, with the same gravity and armature; the locked bodies
        are welded to their parents (their inertia merged), and every link stays a frame.
        """
        description = lock_joints(self._description, values)
        keep = [i for i, j in enumerate(self.joint_names) if j not in values]
        model = RobotModel(description, [self.joint_names[i] for i in keep],
                           self.armature[keep])
        text = ', '.join(f'{j}={float(v):g}' for j, v in values.items())
        model._warn_unusual(f"'{self.name}' with {text} locked")
        return model

    def _warn_unusual(self, source: str) -> None:
        """Warn about joints that move no or a tiny inertia, armature included (logger)."""
        d = self._description
        warn_unusual(d.tree, d.joint_names, d.frames, source, d.mimic_joints,
                     dict(zip(self.joint_names, self.armature.tolist())))

    # ----------------------------------------------------------------- contacts
    def contact_jacobian(self, q: ArrayLike, contacts) -> Array:
        """Return J_c (k x nv): the contacts' Jacobian rows, in each contact's reference_frame."""
        if _on_device(q):
            return self.on_gpu().contact_jacobian(q, contacts)
        batch = self._contact_batch(self.contact_jacobian, (q,), contacts, ('m', 'nv'),
                                    compiled=self._contact_jacobian_rows)
        if batch is not None:
            return batch[0]
        return self._contact_terms(q, None, contacts)[0]

    def _contact_batch(self, method, arrays, contacts, *shapes, compiled=None):
        """
        Return the per-row results of a contact method for 2-D inputs (1-D ones broadcast).

        None when every input is one state. ``shapes`` name each result's shape per row
        ('m': the contact rows, 'n', 'nv'), for an empty batch. ``compiled(*arrays,
        contacts)``, given (N, ...) arrays, returns (results, ok) of one compiled call, or
        None; the rows it did not solve (ok False), or all of them without it, are the single
        call's, row by row (its error naming the row).
        """
        if all(ndim(a) < 2 for a in arrays):
            return None
        names = argument_names(method, len(arrays))
        self._check.arrays(True, **{name: a for name, a in zip(names, arrays)   # tau: n or nv
                                    if name != 'tau'})
        arrays = [real_array(a, name) for name, a in zip(names, arrays)]
        if 'tau' in names:
            tau = arrays[names.index('tau')]
            if tau is None or not 1 <= tau.ndim <= 2 or tau.shape[-1] not in (self.n, self.nv):
                sizes = sorted({self.n, self.nv})
                shapes = [f'({size},)' for size in sizes] + [f'(N, {size})' for size in sizes]
                raise ValueError(f"tau must have shape {', '.join(shapes[:-1])} or {shapes[-1]}"
                                 f" (the joints' or every velocity's), got "
                                 f"{'no array of numbers' if tau is None else tau.shape}")
        N = next(a.shape[0] for a in arrays if a.ndim == 2)
        for name, a in zip(names, arrays):
            if a.ndim == 2 and a.shape[0] != N:
                raise ValueError(f'{name} has {a.shape[0]} rows, the other inputs {N}')
        if N == 0:
            sizes = {'m': sum(c.dim for c in _contacts(contacts)), 'n': self.n, 'nv': self.nv}
            return tuple(np.empty((0, *(sizes[s] for s in shape))) for shape in shapes)
        done = None if compiled is None else compiled(
            *[a if a.ndim == 2 else np.repeat(a[None], N, axis=0) for a in arrays], contacts)
        if done is not None:
            results, ok = done
            for k in np.flatnonzero(~ok):
                for result, x in zip(results, _row_call(method, k, arrays, contacts)):
                    result[k] = x
            return results
        out = [_row_call(method, k, arrays, contacts) for k in range(N)]
        return tuple(np.stack(items) for items in zip(*out))

    def _contact_jacobian_rows(self, q, contacts):
        """Return ((J_c,), ok) of a batch of q in one compiled call, or None (no kernel)."""
        terms = self._contact_term_rows(q, None, contacts)
        return None if terms is None else ((terms[0],), np.ones(q.shape[0], dtype=bool))

    def _contact_term_rows(self, q, v, contacts):
        """Return (J_c, gamma) of a batch, (N, m, nv) and (N, m), in one compiled call, or None."""
        kernel = self._contact_kernel       # (tree, links, coupling, armature after B) or None
        if kernel is None:
            return None
        rows, points, dims, local, m = self._packed_contacts(contacts)
        N = q.shape[0]
        J, gamma = np.empty((N, m, self._n)), np.empty((N, m))
        if not native.fixed_contact_terms_batch(
                *kernel[:4], q, np.broadcast_to(self._zeros, (N, self._n)) if v is None else v,
                rows, points, dims, local, J, gamma):
            return None         # a bad row: the per-row loop names it
        return J, gamma

    def _contact_inverse_rows(self, q, v, dv, contacts, f_ext=None):
        """
        Return ((tau, lambda), ok) of a batch: compiled batches and NumPy, or None.

        The rows' contact terms and inverse dynamics (with ``f_ext``, checked: its wrenches)
        by their compiled batches, lambda of all rows by one stacked pseudo-inverse (the
        minimum-norm least squares of the single call, the same cut-off); a row whose checks
        fail is left to the single call (ok False), which raises the error that says why.
        """
        terms = self._contact_term_rows(q, v, contacts)
        if terms is None:
            return None
        J, gamma = terms
        total = self.inverse_dynamics(q, v, dv, f_ext)
        nb = self.nv - self.n
        Jdv = np.einsum('kij,kj->ki', J, dv)
        ok = np.linalg.norm(Jdv + gamma, axis=1) <= 1e-6 * (1.0 + np.linalg.norm(Jdv, axis=1))
        Jb = J[:, :, :nb]
        if nb:
            lam = np.einsum('kij,kj->ki', np.linalg.pinv(np.swapaxes(Jb, 1, 2), rcond=1e-10),
                            total[:, :nb])
        else:
            lam = np.zeros(gamma.shape)
        left = total[:, :nb] - np.einsum('kji,kj->ki', Jb, lam)
        ok &= np.linalg.norm(left, axis=1) <= 1e-8 * (1.0 + np.linalg.norm(total[:, :nb], axis=1))
        tau = (total - np.einsum('kji,kj->ki', J, lam))[:, nb:]
        return (tau, lam), ok

    def _contact_inverse_with_wrenches(self, q, v, dv, contacts, f_ext) -> tuple:
        """
        Return contact_inverse_dynamics of a batch with f_ext (6 or N x 6 numbers per link).

        :meth:`_contact_inverse_rows` with the wrenches in its inverse dynamics; the rows it
        does not solve, or all of them where it has no kernel, are the single call's with
        the row's wrenches (its error naming the row).
        """
        def single(q, v, dv, f_ext=None):
            return self.contact_inverse_dynamics(q, v, dv, contacts, f_ext)
        (q, v, dv), N = self._inputs(q=q, v=v, dv=dv)
        wrenches = _batch_wrenches(f_ext, N, self._site)
        done = N and self._contact_inverse_rows(
            *(np.ascontiguousarray(x) for x in (q, v, dv)), contacts, f_ext)
        if not done:
            return self._per_row_wrenches(single, f_ext, q=q, v=v, dv=dv)
        results, ok = done
        for k in np.flatnonzero(~ok):
            row = _row_call(single, k, (q, v, dv), {link: w[k] for link, w in wrenches})
            for result, x in zip(results, row):
                result[k] = x
        return results

    def _constrained_rows(self, q, v, tau, contacts):
        """Return ((v', lambda), ok) of a batch in one compiled call, or None (no kernel)."""
        kernel = self._contact_kernel       # (tree, links, coupling, armature after B) or None
        if kernel is None:
            return None
        rows, points, dims, local, m = self._packed_contacts(contacts)
        if not m:
            return None
        N = q.shape[0]
        dv, lam, ok = np.empty((N, self._n)), np.empty((N, m)), np.zeros(N, dtype=bool)
        if not native.fixed_constrained_forward_dynamics_batch(*kernel, q, v, tau, rows, points,
                                                               dims, local, dv, lam, ok):
            return None
        return (dv, lam), ok

    def _actuated(self, tau) -> Array:
        """Return the generalized forces of tau: joint forces only (n), or all of them (nv)."""
        tau = real_array(tau, 'tau')
        nb = self.nv - self.n
        if nb and tau is not None and tau.shape == (self.n,):
            tau = np.concatenate([np.zeros(nb), tau])
        return self._single(tau, 'tau')

    def constrained_forward_dynamics(self, q: ArrayLike, v: ArrayLike, tau: ArrayLike,
                                     contacts, f_ext: Mapping[str, ArrayLike] | None = None
                                     ) -> tuple[Array, Array]:
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
        ``f_ext`` as for :meth:`forward_dynamics`: other wrenches on the robot, which
        S^T tau + sum J^T F_ext then stands for.
        """
        if _on_device(q):
            return self.on_gpu().constrained_forward_dynamics(q, v, tau, contacts, f_ext=f_ext)
        if f_ext is not None and _has_wrenches(f_ext):
            tau = self._plus_wrenches(f_ext, q, self._generalized(tau))
        fast = self._constrained_compiled(q, v, tau, contacts)
        if fast is not None:
            return fast
        batch = self._contact_batch(self.constrained_forward_dynamics, (q, v, tau), contacts,
                                    ('nv',), ('m',), compiled=self._constrained_rows)
        if batch is not None:
            return batch
        q = self._single(q, 'q')
        v = self._single(v, 'v')
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
                                 contacts, f_ext: Mapping[str, ArrayLike] | None = None
                                 ) -> tuple[Array, Array]:
        """
        Return (tau, lambda): joint forces (n) and contact forces realising v' in contact.

        The base rows of M v' + h = S^T tau + J_c^T lambda fix lambda: of all the contact
        forces that give the base its acceleration, the one of minimum norm. ValueError if
        v' moves a contact (J_c v' + J_c' v != 0) or no contact force can give the base that
        acceleration (for instance, no contact and a base that does not fall freely).
        ``f_ext`` as for :meth:`inverse_dynamics`: other wrenches on the robot (M v' + h -
        sum J^T F_ext on the left); a batch with them in the compiled batches too.
        """
        if _on_device(q):
            return self.on_gpu().contact_inverse_dynamics(q, v, dv, contacts, f_ext=f_ext)
        if f_ext is not None and _has_wrenches(f_ext) and max(ndim(q), ndim(v), ndim(dv)) >= 2:
            return self._contact_inverse_with_wrenches(q, v, dv, contacts, f_ext)
        batch = self._contact_batch(self.contact_inverse_dynamics, (q, v, dv), contacts,
                                    ('n',), ('m',), compiled=self._contact_inverse_rows)
        if batch is not None:
            return batch
        q = self._single(q, 'q')
        v = self._single(v, 'v')
        dv = self._single(dv, 'dv')
        total = self.inverse_dynamics(q, v, dv, f_ext)
        nb = self.nv - self.n
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

    def constrained_forward_dynamics_derivatives(self, q: ArrayLike, v: ArrayLike,
                                                 tau: ArrayLike, contacts,
                                                 f_ext: Mapping[str, ArrayLike] | None = None
                                                 ) -> ConstrainedDerivatives:
        """
        Return the partial derivatives of :meth:`constrained_forward_dynamics` (v', lambda).

        A :class:`ConstrainedDerivatives` (a named tuple): ``dv_dq``, ``dv_dv``, ``dv_dtau``
        (nv x nv each) and ``dlambda_dq``, ``dlambda_dv``, ``dlambda_dtau`` (m x nv), m the
        contacts' rows. q is moved in the tangent space (integrate(q, dq)) as in
        :meth:`forward_dynamics_derivatives`; tau is the nv generalized forces (the joints'
        columns are the last n), lambda held in each contact's ``reference_frame`` axes; a
        batch of states gives each with a first axis N. From the KKT system of the
        constraints and the inverse dynamics' derivatives
        (:mod:`~kron_dynamics.algorithms.constrained_dynamics_derivatives` states it): the
        contact terms and the KKT solve compiled (kernels/constrained_dynamics_derivatives.py)
        over the compiled inverse-dynamics derivatives and J_c. Pinocchio:
        ``computeConstraintDynamicsDerivatives``. SingularJacobianError if the contacts'
        rows are redundant (J_c M^-1 J_c^T with cond > 1e10: lambda is not unique, nor its
        derivatives). ``f_ext`` as for :meth:`constrained_forward_dynamics`, each wrench
        held constant in root axes (the d/dq gain their d/dtau times d(sum J^T F)/dq).
        """
        if _on_device(q):
            return ConstrainedDerivatives(*self.on_gpu().constrained_forward_dynamics_derivatives(
                q, v, tau, contacts, f_ext=f_ext))
        if f_ext is not None and _has_wrenches(f_ext):
            return self._derivatives_with_wrenches(
                lambda q, v, tau: self.constrained_forward_dynamics_derivatives(q, v, tau,
                                                                                contacts),
                f_ext, q=q, v=v, tau=self._generalized(tau))
        batch = self._contact_batch(self.constrained_forward_dynamics_derivatives,
                                    (q, v, tau), contacts, *_DERIVATIVE_SHAPES,
                                    compiled=self._constrained_derivative_rows)
        if batch is not None:
            return ConstrainedDerivatives(*batch)
        contacts = _contacts(contacts)
        X, Y, refused = self._derivative_solve(q, v, tau, contacts)
        nv = self.nv
        if refused == 1:
            solve_mass_matrix(self.mass_matrix(q), np.zeros(nv),
                              list(self.velocity_names))  # raises, naming the joints
        if refused:
            J = self.contact_jacobian(q, contacts)
            still = [c.link for c, k in zip(contacts, np.cumsum([c.dim for c in contacts]))
                     if not np.any(J[k - c.dim:k])]
            if still:
                raise SingularJacobianError(
                    f'contacts {still}: no coordinate moves them (their rows of J_c are '
                    'zero: links welded to a fixed root), so their forces have no '
                    'derivatives; leave them out')
            raise SingularJacobianError(
                f'contacts {[c.link for c in contacts]}: their rows of J_c are redundant '
                '(J_c M^-1 J_c^T has a condition number above 1e10): lambda is not unique, '
                'so neither are its derivatives; remove the redundant rows (a point contact '
                'instead of a surface, or fewer points)')
        return ConstrainedDerivatives(*_split_derivatives(X, Y, nv))

    def _constrained_derivative_rows(self, q, v, tau, contacts):
        """
        Return (the six derivatives of N rows, ok) from compiled batches and one compiled call.

        :meth:`_derivative_solve` on (N, ...) arrays; a row it refuses (ok False) is the
        single call's, which says why.
        """
        X, Y, ok = self._derivative_solve(q, v, tau, _contacts(contacts))
        return _split_derivatives(X, Y, self.nv), ok

    def _derivative_solve(self, q, v, tau, contacts):
        """
        Return (X, Y, refused code or per-row ok) of one state or a batch (N, ...) of them.

        Constrained forward dynamics, the inverse-dynamics derivatives at its v' and the
        link poses of the unconstrained tree (compiled, or their compiled batches), then
        the contact terms and the KKT solve in one compiled call
        (kernels/constrained_dynamics_derivatives.py): X = (dv'/dq, dv'/dv, dv'/dtau) and
        Y = -(dlambda/dq, ...) side by side.
        """
        dv, lam = self.constrained_forward_dynamics(q, v, tau, contacts)   # checks all
        dtau_dq, dtau_dv, M = self.inverse_dynamics_derivatives(q, v, dv)    # M: armature too
        full, P, packed = self._contact_paths(contacts)
        q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
        qf, vf, af = self._unconstrained_state(full, P, q, v, dv)
        rows, nv, m = q.shape[:-1], self.nv, lam.shape[-1]
        X, Y = np.empty(rows + (nv, 3 * nv)), np.empty(rows + (m, 3 * nv))
        poses = np.ascontiguousarray(full.link_poses(qf))       # (a no-op: the kernel's)
        axes, paths, lengths, link_rows, points, dims, local, cpl = packed
        arguments = (axes, paths, lengths, nv - self.n, vf, af, poses, link_rows, points, dims,
                     local, lam, cpl, full is not self, dtau_dq, dtau_dv, M, X, Y)
        if not rows:
            return X, Y, native.constrained_derivatives(*arguments)
        ok = np.zeros(rows[0], dtype=bool)
        native.constrained_derivatives_batch(*arguments, ok)
        return X, Y, ok

    def _contact_paths(self, contacts):
        """
        Return (the model of the contact terms, P, the contacts packed), cached per list.

        The terms are computed on the tree without mimic constraints (``unconstrained``, the
        same base), whose velocities are P v, P = diag(I, B). Packed for
        ``kernels.constrained_dynamics_derivatives.contact_derivative_terms``: per velocity
        coordinate the link it moves, whether it turns and its axis there; per contact its
        path (the indices of its coordinates, the base's first, then the contact body's
        joints root first; padded) and the path's length, its link's row of ``link_poses``,
        its point, dim and whether its axes are the link's.
        """
        key = ('paths', tuple(contacts))
        cached = self._contact_cache.get(key)
        if cached is not None:
            return cached
        nb = self.nv - self.n
        B, _ = self.coupling()
        full = self if B.shape[0] == B.shape[1] and np.array_equal(B, np.eye(self.n)) else (
            self.unconstrained)
        P = np.zeros((full.nv, self.nv))
        P[:nb, :nb] = np.eye(nb)
        P[nb:, nb:] = B
        tree, names = self.description.tree, list(full.joint_names)
        paths = []
        for c in contacts:
            body, path = self.description.frames[c.link][0], []
            while body >= 0:
                path.append(nb + names.index(self.description.joint_names[body]))
                body = tree.parent[body]
            paths.append(list(range(nb)) + path[::-1])
        packed = np.zeros((len(paths), max(map(len, paths))), dtype=np.int64)
        for k, path in enumerate(paths):
            packed[k, :len(path)] = path
        links = list(full.link_names)
        # per velocity coordinate: the row of the link it moves, 1 if it turns, its axis there
        axes = np.zeros((full.nv, 5))
        for k in range(nb):     # the base twist in base axes, linear first
            e = P_BASE[self.base][:, k]
            turns = bool(e[3:].any())
            axes[k] = (links.index(self.description.root_link), float(turns),
                       *(e[3:] if turns else e[:3]))
        for b, name in enumerate(self.description.joint_names):
            axes[nb + names.index(name)] = (links.index(self.description.joints[name].child_link),
                                            float(tree.revolute[b]), *tree.axis[b])
        # P in kernels.coupled's coupling format: per row its one non-zero (column, value)
        column = np.abs(P).argmax(axis=1)
        cpl = np.zeros((full.nv, 3))
        cpl[:, 0] = np.where(P.any(axis=1), column, -1)
        cpl[:, 1] = P[np.arange(full.nv), column]
        cached = (full, P, (axes, packed, np.array([len(p) for p in paths], dtype=np.int64),
                            np.array([links.index(c.link) for c in contacts], dtype=np.int64),
                            np.array([c.point for c in contacts], dtype=float).reshape(-1, 3),
                            np.array([c.dim for c in contacts], dtype=np.int64),
                            np.array([c.reference_frame == 'local' for c in contacts],
                                     dtype=np.int64), cpl))
        if len(self._contact_cache) < 64:
            self._contact_cache[key] = cached
        return cached

    def _unconstrained_state(self, full, P, q, v, dv):
        """Return (q, v, v') of the unconstrained tree ``full`` (rows of a batch too)."""
        if full is self:
            return q, v, dv
        base = q[..., :self.nq - self.n]
        return (np.concatenate([base, self.full_configuration(q)], axis=-1), v @ P.T,
                dv @ P.T)

    def _contact_derivative_terms(self, q, v, dv, lam, contacts):
        """
        Return (J_c, da_c/dq, da_c/dv, d(J_c^T lambda)/dq) at one state, this model's coordinates.

        The contact terms alone (the tests compare them with the readable reference): one
        compiled call along the contacts' paths (:meth:`_contact_paths`) from the links'
        poses, then projected by P: J_c = J_full P.
        """
        full, P, packed = self._contact_paths(contacts)
        nb = self.nv - self.n
        qf, vf, af = self._unconstrained_state(full, P, q, v, dv)
        nf, m = full.nv, lam.shape[0]
        J, da_dq, da_dv, dQ = (np.zeros((m, nf)), np.zeros((m, nf)), np.zeros((m, nf)),
                               np.zeros((nf, nf)))
        axes, paths, lengths, rows, points, dims, local, _ = packed
        native.contact_derivative_terms(axes, paths, lengths, nb, vf, af,
                                        np.ascontiguousarray(full.link_poses(qf)), rows,
                                        points, dims, local, lam, J, da_dq, da_dv, dQ)
        if full is self:
            return J, da_dq, da_dv, dQ
        return J @ P, da_dq @ P, da_dv @ P, P.T @ dQ @ P

    def _constrained_compiled(self, q, v, tau, contacts):
        """Return (v', lambda) in one compiled call, or None (the general path says why)."""
        kernel = self._contact_kernel       # (tree, links, coupling, armature after B) or None
        if kernel is None or not (_is_vector(q) and _is_vector(v) and _is_vector(tau)):
            return None
        rows, points, dims, local, m = self._packed_contacts(contacts)
        if not m:
            return None
        dv, lam = np.empty(self._n), np.empty(m)
        if native.fixed_constrained_forward_dynamics(*kernel, q, v, tau, rows, points, dims,
                                                     local, dv, lam):
            return dv, lam
        return None

    def _packed_contacts(self, contacts):
        """Return (rows, points, dims, local, rows of J_c) of a contact list (cached)."""
        # keyed by the identity of the (immutable) Contact objects or link names, which the
        # cache keeps alive so that their ids are not reused
        key = tuple(map(id, contacts)) if isinstance(contacts, (list, tuple)) else None
        cached = self._contact_cache.get(key) if key is not None else None
        if cached is not None:
            return cached[1]
        given = tuple(contacts) if key is not None else None
        contacts = _contacts(contacts)
        packed = (np.array([self._site(c.link) for c in contacts], dtype=np.int64),
                  np.array([self._point3(c.point) for c in contacts],
                           dtype=float).reshape(-1, 3),
                  np.array([c.dim for c in contacts], dtype=np.int64),
                  np.array([CONTACT_FRAMES[c.reference_frame] for c in contacts],
                           dtype=np.int64),
                  sum(c.dim for c in contacts))
        if key is not None and len(self._contact_cache) < 64:
            self._contact_cache[key] = (given, packed)
        return packed

    def _single(self, x, what: str, batch: bool = True) -> Array:
        """Check one state's array (q, v, dv or tau: nv = nq entries here); return a copy."""
        return self._check.vector(x, what, batch=batch)

    def _contact_terms(self, q, v, contacts) -> tuple[Array, Array | None]:
        """
        Return (J_c, gamma) of the contacts (gamma None without v), each in its own axes.

        J_c v' + gamma is what the contacts keep at zero: the classical acceleration of a
        3-D contact's point, the spatial acceleration of a 6-D contact's frame (Pinocchio's
        constraints): one compiled call (kernels.floating_base.fixed_contact_terms) for one
        state, else the compiled Jacobian and classical acceleration of each point.
        """
        kernel = self._contact_kernel       # (tree, links, coupling, armature after B) or None
        if kernel is not None and _is_vector(q) and (v is None or _is_vector(v)):
            rows, points, dims, local, m = self._packed_contacts(contacts)
            J, gamma = np.empty((m, self._n)), np.empty(m)
            if native.fixed_contact_terms(*kernel[:4], q, self._zeros if v is None else v,
                                          rows, points, dims, local, J, gamma):
                return J, (None if v is None else gamma)
        contacts = _contacts(contacts)
        rows, drifts = [], []
        zero = np.zeros(self.nv)
        for c in contacts:
            J = self.jacobian(q, c.link, c.point)
            a = None if v is None else self.acceleration(q, v, zero, c.link, c.point)
            if a is not None and c.dim == 6:       # spatial: a - w x v_p
                V = J @ v
                a[:3] -= np.cross(V[3:], V[:3])
            if c.reference_frame == 'local':
                R = self.link_pose(q, c.link)[:3, :3].T
                J = np.vstack([R @ J[:3], R @ J[3:]])
                a = None if a is None else np.concatenate([R @ a[:3], R @ a[3:]])
            rows.append(J[:c.dim])
            if a is not None:
                drifts.append(a[:c.dim])
        J = np.vstack(rows) if rows else np.zeros((0, self.nv))
        if v is None:
            return J, None
        return J, (np.concatenate(drifts) if drifts else np.zeros(0))

    # ----------------------------------------------------------------- dynamics
    def _readable_mass_matrix(self, q, method) -> Array:
        """M by a readable algorithm of MASS_MATRIX_METHODS (mass_matrix's ``method``)."""
        try:
            algorithm = MASS_MATRIX_METHODS[method]
        except (KeyError, TypeError):
            raise ValueError(f'unknown mass-matrix method {method!r}; '
                             f'choose None or one of {sorted(MASS_MATRIX_METHODS)}') from None
        (q,), N = self._inputs(q=q)
        if N is not None:
            return self._per_row(lambda x: self.mass_matrix(x, method), N, q)
        M = algorithm(self.tree, self._internal(q, 'q'))
        return self._square(M) + np.diag(self.armature)

    def _readable_coriolis_star(self, q, method) -> Array:
        """C* by its readable form (coriolis_star's ``method='hessian'``)."""
        if method != 'hessian':
            raise ValueError(f"unknown C* method {method!r}; choose None or 'hessian'")
        (q,), N = self._inputs(q=q)
        if N is not None:
            return self._per_row(lambda x: self.coriolis_star(x, method), N, q)
        return self._cube(coriolis_star_hessian(self.tree, self._internal(q, 'q')))

    def christoffel(self, q: ArrayLike) -> Array:
        """Christoffel symbols of the first kind, n x n^2 (reshape(n, n, n) gives [i, j, k])."""
        if _on_device(q):
            return self.on_gpu().christoffel(q)
        C = self.coriolis_star(q)
        n = self.nv
        C3 = C.reshape(C.shape[:-2] + (n, n, n))
        return (0.5 * (C3 + np.swapaxes(C3, -1, -2))).reshape(C.shape)

    def on_gpu(self, threads_per_block: int = 128):
        """
        Return the model's GPU kernels (kron_dynamics.gpu.GpuModel), generated on first use.

        inverse_dynamics, gravity_torque, bias_torque, coriolis_vector, mass_matrix,
        forward_dynamics, link_poses, link_pose, center_of_mass, center_of_mass_jacobian,
        centroidal_momentum_matrix, jacobian, hessian, jacobian_derivative,
        jacobian_derivative_times_velocity, acceleration, coriolis_star, christoffel,
        coriolis_matrix, regressor, operational_space_inertia, simulate, contact_jacobian,
        constrained_forward_dynamics, contact_inverse_dynamics,
        constrained_forward_dynamics_derivatives, linearize, integrate, difference, the
        derivatives of inverse and forward dynamics, mass_matrix_derivative,
        gravity_derivative, kinetic_energy and potential_energy given CUDA arrays run there
        (with f_ext too, where the method takes it) and return device arrays; the other
        methods refuse CUDA arrays by name.
        """
        gpu = self.__dict__.get('_gpu')
        if gpu is None or gpu.threads_per_block != threads_per_block:
            from .gpu import GpuModel
            gpu = self.__dict__['_gpu'] = GpuModel(self, threads_per_block)
        return gpu

    def _gpu_center_of_mass(self, q, include_root: bool, method: str = 'center_of_mass'):
        """Return the CoM (or its Jacobian) of CUDA-array states: the default bodies."""
        if include_root != (self.base != 'fixed'):
            raise ValueError(f'{method} on the GPU counts the default bodies '
                             f'(include_root={self.base != "fixed"} here); call it on the CPU '
                             'for the other choice')
        return getattr(self.on_gpu(), method)(q)

    def _batch_wrench_rows(self, f_ext, N: int) -> list:
        """Return [(link, N x 6)] of checked f_ext for a batch of N ([] for no wrench): GPU."""
        return _batch_wrenches(f_ext, N, self._site) if _has_wrenches(f_ext) else []

    def _on_gpu_call(self, mode, f_ext, arrays):
        """Run a Newton-Euler method on the GPU for CUDA-array inputs (f_ext: ID only)."""
        if mode == ID:
            return self.on_gpu().inverse_dynamics(*arrays.values(), f_ext=f_ext)
        return getattr(self.on_gpu(), _GPU_METHODS[mode])(*arrays.values())

    def _rnea(self, mode, f_ext=None, **arrays) -> Array:
        """General path of the Newton-Euler methods: checks, batches and external wrenches."""
        if _on_device(arrays['q']):
            return self._on_gpu_call(mode, f_ext, arrays)
        values, N = self._inputs(**arrays)
        q = values[0]
        qd = values[1] if len(values) > 1 else q
        qdd = values[2] if len(values) > 2 else q
        wrenches = _has_wrenches(f_ext)
        if N is not None:
            if wrenches:        # only inverse_dynamics takes f_ext
                return self._less_wrenches(f_ext, **dict(zip(arrays, values)))
            return self._run(None, native.rnea_batch, N, self._n, q, qd, qdd, mode)
        W = self._external_wrenches(q, f_ext) if wrenches else _NO_WRENCH
        return self._run(native.rnea, None, N, self._n, q, qd, qdd, mode, W)

    def _external_wrenches(self, q, f_ext):
        """Return f_ext as body-frame wrenches on the bodies (n x 6, internal order) at q."""
        wrenches = _wrenches(f_ext, self._frame)
        W = np.zeros((self.n, 6))
        for link, w in wrenches:
            body, Rb, pb = self._frame(link)
            if body < 0:
                continue  # acts on the fixed base
            R = self.link_pose(q, link)[:3, :3] @ Rb.T       # the body's orientation
            f = w[:3]
            x = R @ pb      # body origin -> link origin, root-frame axes; then x cross f:
            lever = [x[1] * f[2] - x[2] * f[1], x[2] * f[0] - x[0] * f[2],
                     x[0] * f[1] - x[1] * f[0]]     # (np.cross took most of the call)
            W[body, :3] += R.T @ f
            W[body, 3:] += R.T @ (w[3:] + lever)
        return W

    def forward_dynamics(self, q: ArrayLike, qd: ArrayLike, tau: ArrayLike,
                         f_ext: Mapping[str, ArrayLike] | None = None) -> Array:
        """
        Return q'' = M^-1 (tau + sum J^T F_ext - C*(q' kron q') - G); SingularMassMatrixError.

        ``f_ext`` as for :meth:`inverse_dynamics` (Pinocchio: ``aba`` with ``fext``).
        """
        if f_ext is not None and _has_wrenches(f_ext) and not _on_device(q):
            tau = self._plus_wrenches(f_ext, q, tau)
        if _is_vector(q) and _is_vector(qd) and _is_vector(tau):
            qdd = np.empty(self._n)
            if native.forward_dynamics(self._ints, self._reals, q, qd, tau, self._zeros, qdd):
                return qdd
        if _on_device(q):
            return self.on_gpu().forward_dynamics(q, qd, tau, f_ext=f_ext)
        (q, qd, tau), N = self._inputs(q=q, qd=qd, tau=tau)
        if N is not None:
            qdd = np.empty((N, self._n))
            if native.forward_dynamics_batch(self._ints, self._reals, q, qd, tau, self._zeros,
                                             qdd):
                return qdd
            for k in range(N):      # find the row with a singular M and say so
                try:
                    self.forward_dynamics(q[k], qd[k], tau[k])
                except SingularMassMatrixError as exc:
                    raise SingularMassMatrixError(f'row {k}: {exc}', exc.joints) from None
            return np.stack([self.forward_dynamics(*x) for x in zip(q, qd, tau)])
        bias = self.bias_torque(q, qd)
        M = self.mass_matrix(q)
        return solve_mass_matrix(M, tau - bias, list(self.joint_names))

    # ----------------------------------------------------------------- derivatives
    # compiled: kernels/rnea_derivatives.py, kernels/coriolis_star.py (dM/dq); the readable
    # reference is algorithms/rnea_derivatives.py
    def inverse_dynamics_derivatives(self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike,
                                     f_ext: Mapping[str, ArrayLike] | None = None
                                     ) -> tuple[Array, Array, Array]:
        """
        Return (dtau/dq, dtau/dq', M), the partial derivatives of :meth:`inverse_dynamics`.

        Each n x n (N x n x n for a batch); [i, k] = dtau_i/dq_k. Compiled recursion (no
        n^3 tensor); dtau/dq' is C*(q)(I kron q' + q' kron I) of 000 eq. (101). ``f_ext`` as
        for :meth:`inverse_dynamics`, each wrench held constant in the axes the API takes it
        in (root axes, at the link origin): its term is -sum_i F_i H_i with the Hessians H
        of 000 section 3. Pinocchio: ``computeRNEADerivatives`` (its ``fext`` is joint-local,
        so with wrenches its dtau/dq differs by the turning of the wrench).
        """
        if f_ext is None and _is_vector(q) and _is_vector(qd) and _is_vector(qdd):
            out = np.empty(self._3nn)
            if native.rnea_derivatives(self._ints, self._reals, q, qd, qdd, out):
                return out[0], out[1], out[2]
        if _on_device(q):
            return self.on_gpu().inverse_dynamics_derivatives(q, qd, qdd, f_ext=f_ext)
        (q, qd, qdd), N = self._inputs(q=q, qd=qd, qdd=qdd)
        out = self._run(native.rnea_derivatives, native.rnea_derivatives_batch, N, self._3nn,
                        q, qd, qdd)
        if _has_wrenches(f_ext):
            out[..., 0, :, :] -= self._wrench_derivative(q, f_ext, N)
        return out[..., 0, :, :], out[..., 1, :, :], out[..., 2, :, :]

    def forward_dynamics_derivatives(self, q: ArrayLike, qd: ArrayLike, tau: ArrayLike,
                                     f_ext: Mapping[str, ArrayLike] | None = None
                                     ) -> tuple[Array, Array, Array]:
        """
        Return (dq''/dq, dq''/dq', M^-1), the partial derivatives of :meth:`forward_dynamics`.

        At q'' = forward_dynamics(q, q', tau): dq''/dx = -M^-1 dtau/dx with the derivatives of
        :meth:`inverse_dynamics_derivatives` (Carpentier and Mansard, 2018). Each n x n
        (N x n x n for a batch); SingularMassMatrixError if M is singular. Pinocchio:
        ``computeABADerivatives``. ``f_ext`` as for :meth:`forward_dynamics`, each wrench
        held constant in root axes: dq''/dq gains M^-1 sum_i F_i H_i (the link Hessians of
        000 section 3), the derivative of its generalized forces sum J^T F.
        """
        if f_ext is None and _is_vector(q) and _is_vector(qd) and _is_vector(tau):
            out = np.empty(self._3nn)
            if native.forward_dynamics_derivatives(self._ints, self._reals, q, qd, tau, out):
                return out[0], out[1], out[2]
        if _on_device(q):
            return self.on_gpu().forward_dynamics_derivatives(q, qd, tau, f_ext=f_ext)
        if f_ext is not None and _has_wrenches(f_ext):
            return self._derivatives_with_wrenches(self.forward_dynamics_derivatives, f_ext,
                                                   q=q, qd=qd, tau=tau)
        (q, qd, tau), N = self._inputs(q=q, qd=qd, tau=tau)
        if N is not None:
            out = np.empty((N, *self._3nn))
            if native.forward_dynamics_derivatives_batch(self._ints, self._reals, q, qd, tau,
                                                         out):
                return out[:, 0], out[:, 1], out[:, 2]
            return self._per_row(self.forward_dynamics_derivatives, N, q, qd, tau)
        return self._derivatives_at(q, qd, tau)

    def _derivatives_at(self, q, qd, tau) -> tuple[Array, Array, Array]:
        """forward_dynamics_derivatives from the facade's own methods (the errors that say why)."""
        dq, dv, M = self.inverse_dynamics_derivatives(q, qd, self.forward_dynamics(q, qd, tau))
        Minv = solve_mass_matrix(M, np.eye(self.nv), list(self.velocity_names))
        return -Minv @ dq, -Minv @ dv, Minv

    def linearize(self, q: ArrayLike, v: ArrayLike, tau: ArrayLike,
                  dt: float | None = None, contacts=None,
                  f_ext: Mapping[str, ArrayLike] | None = None) -> tuple[Array, Array]:
        """
        Return (A, B) of the dynamics linearised at (q, v, tau) for LQR and MPC.

        State x = (q, v) in the tangent space (2 nv: q perturbed as integrate(q, dq), as
        Pinocchio's derivatives), input u the n joint torques (a moving base is not actuated:
        B has n columns); ``tau`` as :meth:`forward_dynamics` takes it. Without ``dt`` the
        continuous x' = A x + B u: A = [[-ad_v, I], [da/dq, da/dv]], B = [[0], [M^-1 S^T]]
        (ad_v, the base twist's bracket, only on a moving base; S^T puts the joint torques
        in the generalized forces). With ``dt`` > 0 the discrete map of semi-implicit Euler,
        v+ = v + dt a(q, v, tau), q+ = integrate(q, v+, dt):
        A = [[Jq + dt^2 Jw da/dq, dt Jw (I + dt da/dv)], [dt da/dq, I + dt da/dv]],
        B = [[dt^2 Jw M^-1 S^T], [dt M^-1 S^T]], with Jq, Jw the derivatives of
        integrate(q, w) = q (+) w in q and w at w = dt v+ (identities for the joints: only
        a moving base's rows and its block are multiplied out). A batch of states gives
        (N, 2 nv, 2 nv) and (N, 2 nv, n), all from compiled batches.

        With ``contacts`` (as :meth:`constrained_forward_dynamics` takes them) the dynamics
        in contact: a = v' of :meth:`constrained_forward_dynamics` and M^-1 S^T its
        derivative in the joint torques, from
        :meth:`constrained_forward_dynamics_derivatives` (a batch: its compiled batch).

        ``f_ext`` as for :meth:`forward_dynamics`: wrenches held constant (in root axes) over
        the step, a part of the dynamics and not of the input u (with or without contacts).
        """
        if _on_device(q):
            return self.on_gpu().linearize(q, v, tau, dt, contacts, f_ext=f_ext)
        if dt is not None:
            dt = _step_arguments(dt, 1)[0]
        if max(ndim(q), ndim(v), ndim(tau)) >= 2:
            da_dq, da_dv, Minv = self._acceleration_derivatives(q, v, tau, contacts, f_ext)
            (q, v), _ = self._check.arrays(True, q=q, v=v)
            N = da_dq.shape[0]
            q, v = (np.broadcast_to(x, (N, x.shape[-1])) for x in (q, v))
        else:
            q, v = self._single(q, 'q'), self._single(v, 'v')
            da_dq, da_dv, Minv = self._acceleration_derivatives(q, v, tau, contacts, f_ext)
        nv, nb, n = self.nv, self.nv - self.n, self.n
        rows = da_dq.shape[:-2]             # () for one state, (N,) for a batch
        A, B = np.zeros(rows + (2 * nv, 2 * nv)), np.zeros(rows + (2 * nv, n))
        MinvS = Minv[..., nb:]
        diagonal = np.arange(nv)
        if dt is None:
            A[..., diagonal, nv + diagonal] = 1.0
            A[..., nv:, :nv], A[..., nv:, nv:] = da_dq, da_dv
            if nb:
                A[..., :nb, :nb] = -self._base_brackets(v)
            B[..., nv:, :] = MinvS
            return A, B
        # the joints' rows (Jq = Jw = I there), then a moving base's: Jw_b (rows) + Jq_b
        A[..., :nv, :nv] = dt * dt * da_dq
        A[..., nv:, :nv] = dt * da_dq
        A[..., nv:, nv:] = dt * da_dv
        A[..., nv + diagonal, nv + diagonal] += 1.0
        A[..., :nv, nv:] = dt * A[..., nv:, nv:]
        B[..., :nv, :], B[..., nv:, :] = dt * dt * MinvS, dt * MinvS
        if nb:
            a = (self.forward_dynamics(q, v, tau, f_ext) if contacts is None else
                 self.constrained_forward_dynamics(q, v, tau, contacts, f_ext)[0])
            v_next = v + dt * a
            Jq, Jw = self._base_integrate_jacobians(dt * v_next)
            A[..., :nb, :] = Jw @ A[..., :nb, :]
            A[..., :nb, :nb] += Jq
            B[..., :nb, :] = Jw @ B[..., :nb, :]
        A[..., diagonal[nb:], diagonal[nb:]] += 1.0
        return A, B

    def _acceleration_derivatives(self, q, v, tau, contacts, f_ext):
        """Return (dv'/dq, dv'/dv, dv'/dtau (nv generalized forces)), free or in contact."""
        if contacts is None:
            return self.forward_dynamics_derivatives(q, v, tau, f_ext)      # dv'/dtau = M^-1
        return self.constrained_forward_dynamics_derivatives(q, v, tau, contacts, f_ext)[:3]

    def mass_matrix_derivative(self, q: ArrayLike) -> Array:
        """
        Return dM/dq, n x n x n with [i, j, k] = dM_ij/dq_k (N x n x n x n for a batch).

        From the spatial derivatives of the composite-rigid-body terms (O(n^3)); C* of
        000 eq. (101) is C*[i, j n + k] = dM_ij/dq_k - 1/2 dM_kj/dq_i.
        """
        if _is_vector(q):
            out = np.empty(self._nnn3)
            if native.mass_matrix_derivative(self._ints, self._reals, q, out):
                return out
        if _on_device(q):
            return self.on_gpu().mass_matrix_derivative(q)
        (q,), N = self._inputs(q=q)
        return self._run(native.mass_matrix_derivative, native.mass_matrix_derivative_batch, N,
                         self._nnn3, q)

    def gravity_derivative(self, q: ArrayLike) -> Array:
        """Return dG/dq, n x n with [i, k] = dG_i/dq_k (N x n x n for a batch)."""
        if _on_device(q):
            return self.on_gpu().gravity_derivative(q)
        zero = np.zeros(self.nv)
        return self.inverse_dynamics_derivatives(q, zero, zero)[0]

    def kinetic_energy(self, q: ArrayLike, qd: ArrayLike) -> float | Array:
        """T = 1/2 q'^T M(q) q' (000 eq. 93), armature included (an (N,) array for a batch)."""
        if _on_device(q):
            return self.on_gpu().kinetic_energy(q, qd)
        (q, qd), N = self._inputs(q=q, qd=qd)
        M = self.mass_matrix(q)
        if N is not None:
            return 0.5 * np.einsum('ki,ki->k', qd, (M @ qd[:, :, None])[:, :, 0])
        return 0.5 * float(qd @ M @ qd)

    def potential_energy(self, q: ArrayLike) -> float | Array:
        """
        V = -sum m_i g . r_Gi, zero at the root origin; G(q) = dV/dq.

        That is -m g . c with m and c the mass and the compiled centre of mass of the moving
        bodies (:meth:`center_of_mass`); ``_potential_energy_readable`` sums over the bodies.
        """
        if _on_device(q):
            return self.on_gpu().potential_energy(q)
        mass = self._moving_mass
        if mass == 0.0:         # nothing moves that has mass: V is 0 (the centre is undefined)
            (q,), N = self._inputs(q=q)
            return 0.0 if N is None else np.zeros(N)
        V = -mass * (self.center_of_mass(q) @ self.tree.gravity)
        return float(V) if np.ndim(V) == 0 else V

    def _potential_energy_readable(self, q: ArrayLike) -> float:
        """Return :meth:`potential_energy` body by body (000's kinematics; its reference)."""
        R, p = forward_kinematics(self.tree, self._internal(self._inputs(q=q)[0][0], 'q'))
        coms = com_positions(self.tree, R, p)
        return -float(self.tree.mass @ (coms @ self.tree.gravity))

    def simulate(self, q: ArrayLike, qd: ArrayLike, tau: ArrayLike, dt: float,
                 steps: int = 1, damping: ArrayLike | None = None,
                 f_ext: Mapping[str, ArrayLike] | None = None) -> tuple[Array, Array]:
        """
        Integrate the forward dynamics with fixed-step RK4 (compiled), tau held constant.

        ``damping`` adds viscous joint damping (per joint). Returns (q, qd) after
        ``steps`` steps of ``dt`` s (dt > 0, steps an integer >= 0); SingularMassMatrixError
        if M becomes singular. ``f_ext`` as for :meth:`forward_dynamics`, held constant in
        root axes (RK4 over its compiled calls with the wrenches, a batch in each stage).
        """
        if _on_device(q):
            return self.on_gpu().simulate(q, qd, tau, dt, steps, damping, f_ext=f_ext)
        damping = self._zeros if damping is None else self._vector(damping, 'damping')
        (q, qd, tau), N = self._inputs(q=q, qd=qd, tau=tau)
        dt, steps = _step_arguments(dt, steps)
        if f_ext is not None and _has_wrenches(f_ext):
            return self._rk4(q, qd, tau, dt, steps, damping, f_ext, N)
        if N == 0:      # not evaluated at q = 0 as _per_row would: M(0) may be singular
            return np.empty((0, self._n)), np.empty((0, self._n))
        if N is not None:
            x = np.empty((N, 2, self._n))
            if native.rk4_batch(self._ints, self._reals, q, qd, tau, damping, dt, steps, x):
                return x[:, 0], x[:, 1]
            return self._simulate_rows(N, q, qd, tau, dt, steps, damping)
        x = np.empty((2, self._n))
        if not native.rk4(self._ints, self._reals, q, qd, tau, damping, dt, steps, x):
            self.forward_dynamics(q, qd, tau)   # raises the descriptive error
            raise SingularMassMatrixError('mass matrix became singular during integration',
                                          list(self.joint_names))
        return x[0], x[1]

    def _rk4(self, q, v, tau, dt, steps, damping, f_ext=None, N=None) -> tuple[Array, Array]:
        """
        Return (q, v) after ``steps`` classical RK4 steps of q'' = a(q, q') (checked inputs).

        a = forward_dynamics(q, q', tau - damping q', f_ext): the readable loop of
        :meth:`simulate` (the compiled kernels' steps), one state or a batch (each stage one
        batch call).
        """
        if f_ext is not None and N is None:      # checked once, even for no step or no row
            _wrenches(f_ext, self._site)
        elif f_ext is not None:
            _batch_wrenches(f_ext, N, self._site)

        def f(x, w):
            return self.forward_dynamics(x, w, tau - damping * w, f_ext)

        x = q
        for _ in range(steps):
            a1 = f(x, v)
            a2 = f(x + 0.5 * dt * v, v + 0.5 * dt * a1)
            v2 = v + 0.5 * dt * a1
            a3 = f(x + 0.5 * dt * v2, v + 0.5 * dt * a2)
            v3 = v + 0.5 * dt * a2
            a4 = f(x + dt * v3, v + dt * a3)
            v4 = v + dt * a3
            x = x + dt / 6.0 * (v + 2.0 * v2 + 2.0 * v3 + v4)
            v = v + dt / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
        return np.array(x, dtype=float), np.array(v, dtype=float)

    def _simulate_rows(self, N, q, qd, tau, dt, steps, damping) -> tuple[Array, Array]:
        """:meth:`simulate` row by row where the batch failed: the row whose M is singular."""
        rows = []
        for k in range(N):
            try:
                rows.append(self.simulate(q[k], qd[k], tau[k], dt, steps, damping))
            except SingularMassMatrixError as exc:
                raise SingularMassMatrixError(f'row {k}: {exc}', exc.joints) from None
        return np.stack([x for x, _ in rows]), np.stack([v for _, v in rows])

    def friction_torque(self, qd: ArrayLike) -> Array:
        """Joint friction from URDF <dynamics>: damping * q' + friction * sign(q')."""
        (v,), N = self._inputs(qd=qd)
        damping = np.array([self.joints[j].damping for j in self.joint_names])
        friction = np.array([self.joints[j].friction for j in self.joint_names])
        return damping * v + friction * np.sign(v)

    def __repr__(self) -> str:
        return f'RobotModel({self.name!r}, n={self.n}, joints={list(self.joint_names)})'


# ------------------------------------------------------------------ the compiled methods
# One row per method that runs a compiled kernel of kernels/native.py: its parameters, the
# arrays checked (checks.ArrayChecker through _inputs), the kernel (its batch twin is
# '<kernel>_batch'), the output shape and what differs. _compiled writes each row out as the
# method (exec), so a call costs what a hand-written one does: the fast path (1-D float64
# arrays straight into the kernel, which checks lengths and finiteness itself), then the
# general path (the checker's errors, batches, GPU arrays, the readable alternatives).
# A new quantity: its readable algorithm (algorithms/), its kernel (kernels/), one row here.
class _Row(NamedTuple):
    params: str                  # the parameters after self, as written in the signature
    arrays: tuple                # the per-coordinate arrays among them, in kernel order
    kernel: str                  # native.<kernel>(ints, reals, [sites, k, [p,]] arrays, ...)
    shape: str                   # the output's shape (an expression)
    doc: str
    site: str = ''               # 'links': every link; 'link': a link's pose row k;
    #                              'frame': k, a point p and a frame code
    post: str = ''               # kernel arguments after the arrays (', root')
    prelude: tuple = ()          # lines run first (argument checks, alternatives)
    mode: str = ''               # Newton-Euler (kernels.ID, ...): the general path is _rnea
    gpu: str = ''                # the result for CUDA arrays (where the GPU serves it)
    runner: str = '_run'         # what runs the kernel on checked arrays


_FRAME_PARAMS = "point: ArrayLike | None = None, frame: str = 'local_world_aligned'"
_ROOT = ("root = _boolean(include_root, 'include_root')",)
_COMPILED = {
    'link_pose': _Row(
        'q: ArrayLike, link: str', ('q',), 'link_pose', '_SHAPE_44', site='link',
        gpu='self.on_gpu().link_pose(q, link)', doc="""
        Return the pose of a link frame in the root frame as a 4 x 4 homogeneous transform.

        ``T[:3, :3]`` is the link's orientation R and ``T[:3, 3]`` its origin p, so that a
        point x (link frame) is at ``R @ x + p``. Only the link's ancestors are computed.
        """),
    'link_poses': _Row(
        'q: ArrayLike', ('q',), 'link_poses', 'self._L44', site='links',
        gpu='self.on_gpu().link_poses(q)[0]',
        doc="Return the 4 x 4 poses of all links, (L, 4, 4) in ``link_names`` order, in one "
            "pass."),
    'jacobian': _Row(
        f'q: ArrayLike, link: str, {_FRAME_PARAMS}', ('q',), 'jacobian', 'self._6n',
        site='frame', gpu='self.on_gpu().jacobian(q, link, point, frame)', doc="""
        Return the 6 x n Jacobian of a link (or a point on it): rows (linear, angular).

        ``point`` is in link coordinates (None: the link origin). ``frame`` is one of
        Pinocchio's three conventions (``pinocchio.getFrameJacobian``):
        'local_world_aligned' (default): the point's velocity and the angular velocity in
        root-frame axes, i.e. (J_T, J_R) of 000 eqs. 29, 37, 45; 'local': the same in the
        link's axes (000 eqs. 31, 42); 'world': the spatial velocity in the root frame (linear
        rows: velocity of the body point at the root origin, J_T + x~ J_R, the same for every
        point of the link).
        """),
    'jacobian_derivative': _Row(
        f'q: ArrayLike, qd: ArrayLike, link: str, {_FRAME_PARAMS}', ('q', 'qd'),
        'jacobian_derivative', 'self._6n', site='frame',
        gpu='self.on_gpu().jacobian_derivative(q, qd, link, point, frame)', doc="""
        Return J'(q, q') = dJ/dt, the time derivative of :meth:`jacobian` (same frame).

        J' = H (E_n kron q') (000 eq. 8) with H the :meth:`hessian` of the same frame, and
        J' q' = H (q' kron q'); computed without forming H. Pinocchio:
        ``getFrameJacobianTimeVariation`` (equal in all three frames).
        """),
    'acceleration': _Row(
        f'q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, link: str, {_FRAME_PARAMS}',
        ('q', 'qd', 'qdd'), 'acceleration', '6', site='frame',
        gpu='self.on_gpu().acceleration(q, qd, qdd, link, point, frame)', prelude=(
            'if isinstance(frame, str) and FRAMES.get(frame) == WORLD:',
            '    raise ValueError("acceleration: frame \'world\' has no classical acceleration '
            '(its linear part is not a point\'s velocity); use \'local_world_aligned\' or '
            '\'local\'")'), doc="""
        Return the classical acceleration of a link or point: 6 values, linear then angular.

        It is J q'' + H (q' kron q') (000 eqs. 52, 62, 66); with q'' = 0, the term
        H (q' kron q') alone (computed without forming H). 'local_world_aligned': root-frame
        axes; 'local': the link's axes (000 eq. 59, the starred Hessian; not
        d/dt of the local velocity, 000 eq. 55). 'world' is refused: a spatial velocity has
        no classical acceleration. Pinocchio: ``getFrameClassicalAcceleration``.
        """),
    'hessian': _Row(
        f'q: ArrayLike, link: str, {_FRAME_PARAMS}', ('q',), 'hessian', 'self._6nn',
        site='frame', gpu='self.on_gpu().hessian(q, link, point, frame)', doc="""
        Return the 6 x n^2 Hessian of :meth:`jacobian`: H[:, s*n + k] = dJ[:, s]/dq_k.

        Khang's derivative (000 eq. 5) of the Jacobian in the same frame: in
        'local_world_aligned' (H_T, H_R) of 000 eqs. 51, 60, 67; in 'local' dJ^(b)/dq
        (000 eqs. 53, 61; the starred form of eq. 58 is R^T times the first). Pinocchio:
        ``getJointKinematicHessian`` (a 6 x n x n tensor: ``H.reshape(6, n, n)``).
        """),
    'center_of_mass': _Row(
        'q: ArrayLike, include_root: bool = False', ('q',), 'center_of_mass', '3',
        post=', root', prelude=_ROOT, gpu='self._gpu_center_of_mass(q, root)',
        runner='_run_com', doc="""
        Return the centre of mass of the moving bodies (3,), root frame.

        Mass welded to the fixed root link (by fixed joints) is left out, as in Pinocchio's
        ``centerOfMass`` of a fixed-base model: it never moves. ``include_root=True`` counts
        it (the centre of mass of the whole robot). ValueError if the bodies counted have no
        mass.
        """),
    'center_of_mass_jacobian': _Row(
        'q: ArrayLike, include_root: bool = False', ('q',), 'center_of_mass_jacobian',
        '(3, self._n)', post=', root', prelude=_ROOT, runner='_run_com',
        gpu="self._gpu_center_of_mass(q, root, 'center_of_mass_jacobian')", doc="""
        Return the 3 x n Jacobian of :meth:`center_of_mass`: sum m_i J_TGi / m (000 eq. 45).

        ``include_root`` as for :meth:`center_of_mass` (the root's mass only scales it).
        Pinocchio: ``jacobianCenterOfMass``.
        """),
    'centroidal_momentum_matrix': _Row(
        'q: ArrayLike', ('q',), 'centroidal_momentum_matrix', 'self._6n',
        gpu='self.on_gpu().centroidal_momentum_matrix(q)', prelude=(
            'if self._moving_mass == 0.0:',
            "    raise ValueError('centroidal momentum matrix: the moving bodies have no mass "
            "(no centre of mass)')"), doc="""
        Return the centroidal momentum matrix A_G (6 x nv), Pinocchio's ``ccrba``.

        A_G v = (linear momentum, angular momentum about the centre of mass of the moving
        bodies, :meth:`center_of_mass`), root-frame axes: the sum over the bodies of their
        spatial inertia times their spatial Jacobian ('world'), moved to the centre of mass.
        Compiled from the CRBA's composite inertias: column j is Ic_j S_j, moved to the
        centre of mass.
        """),
    'mass_matrix': _Row(
        'q: ArrayLike, method: str | None = None', ('q',), 'crba', 'self._nn', prelude=(
            'if method is not None:', '    return self._readable_mass_matrix(q, method)'),
        gpu='self.on_gpu().mass_matrix(q)', doc="""
        Return M(q), n x n (or N x n x n for a batch), armature included.

        ``method``: None (compiled CRBA, the fast default), 'jacobian' (000 eq. 95),
        'explicit' (003 eqs. 30-37) or 'crba' (readable reference implementations).
        """),
    'coriolis_star': _Row(
        'q: ArrayLike, method: str | None = None', ('q',), 'coriolis_star', 'self._nnn',
        prelude=('if method is not None:',
                 '    return self._readable_coriolis_star(q, method)'),
        gpu='self.on_gpu().coriolis_star(q)', doc="""
        C*(q), n x n^2 (000 eq. 101): C*[i, j*n + k] = dM_ij/dq_k - 1/2 dM_kj/dq_i.

        ``method``: None (compiled, from the spatial derivatives of the CRBA terms) or
        'hessian' (the readable form: dM/dq from the Jacobians and Hessians of 000 eq. 95).
        """),
    'coriolis_matrix': _Row(
        'q: ArrayLike, qd: ArrayLike', ('q', 'qd'), 'coriolis_matrix', 'self._nn',
        gpu='self.on_gpu().coriolis_matrix(q, qd)',
        doc="Return the n x n Coriolis matrix C: M' - 2C is skew, C q' = C*(q' kron q')."),
    'coriolis_vector': _Row(
        'q: ArrayLike, qd: ArrayLike', ('q', 'qd'), 'rnea', 'self._n', mode='CORIOLIS',
        doc="C*(q)(q' kron q'), by Newton-Euler with no gravity and no acceleration."),
    'gravity_torque': _Row(
        'q: ArrayLike', ('q',), 'gravity', 'self._n', mode='GRAVITY',
        doc='G(q) = dV/dq, by Newton-Euler at rest.'),
    'bias_torque': _Row(
        'q: ArrayLike, qd: ArrayLike', ('q', 'qd'), 'rnea', 'self._n', mode='BIAS',
        doc="Return C*(q)(q' kron q') + G(q), the torque that holds q'' = 0, by Newton-Euler."),
    'inverse_dynamics': _Row(
        'q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, '
        'f_ext: Mapping[str, ArrayLike] | None = None', ('q', 'qd', 'qdd'), 'rnea', 'self._n',
        mode='ID', doc="""
        Return tau = M q'' + C*(q' kron q') + G - sum J^T F_ext by Newton-Euler (002).

        ``f_ext`` maps link names to wrenches (fx, fy, fz, mx, my, mz) that the environment
        applies to the link: force at the link frame origin and moment, in root-frame
        coordinates (004 eq. 33); in a batch, a wrench is 6 numbers (every row's) or N x 6
        (one per row). Armature torques are included.
        """),
}


def _compiled(name: str, row: _Row):
    """Return the RobotModel method of a _COMPILED row (written out, see the table)."""
    arrays = ', '.join(row.arrays)
    pre_fast = pre = ''
    post = row.post
    fast_if = ' and '.join(f'type({a}) is _ND and {a}.dtype is _F64 and {a}.ndim == 1'
                           for a in row.arrays)
    lines = [f'def {name}(self, {row.params}) -> Array:', *('    ' + p for p in row.prelude)]
    if row.site == 'links':
        pre_fast = pre = 'self._sites, '
    elif row.site == 'link':
        lines += ['    try:', '        k = self._site_rows[link]',
                  '    except (KeyError, TypeError):',
                  '        k = self._site(link)        # raises, naming the links']
        pre_fast = pre = 'self._sites, k, '
    elif row.site == 'frame':      # the fast path: a link, a frame name and no point
        lines += ['    try:', '        k, code = self._site_rows[link], FRAMES[frame]',
                  '    except (KeyError, TypeError):', '        k = code = -1']
        fast_if = f'code >= 0 and point is None and {fast_if}'
        pre_fast, pre, post = 'self._sites, k, _ORIGIN, ', 'self._sites, k, p, ', ', code' + post
    fast_arrays = arrays
    if row.kernel == 'rnea':       # (q, qd, qdd) with q for what the mode does not use
        fast_arrays = ', '.join((list(row.arrays) + ['q'] * 2)[:3])
        post = f', {row.mode}, _NO_WRENCH'
    if 'f_ext' in row.params:      # external wrenches: the general path (_rnea)
        fast_if = f'f_ext is None and {fast_if}'
    lines += [f'    if {fast_if}:', f'        out = _empty({row.shape})',
              f'        if native.{row.kernel}(self._ints, self._reals, {pre_fast}{fast_arrays}'
              f'{post}, out):', '            return out']
    if row.site == 'frame':
        lines.append('    k, p, code = self._site(link), self._point3(point), _frame_code(frame)')
    if row.gpu:
        lines += [f'    if _on_device({row.arrays[0]}):', f'        return {row.gpu}']
    keywords = ', '.join(f'{a}={a}' for a in row.arrays)
    if row.mode:        # checks, batches, GPU arrays and external wrenches: _rnea
        wrenches = ', f_ext' if 'f_ext' in row.params else ''
        lines.append(f'    return self._rnea({row.mode}{wrenches}, {keywords})')
    else:
        lines += [f'    ({arrays},), N = self._inputs({keywords})',
                  f'    return self.{row.runner}(native.{row.kernel}, native.{row.kernel}_batch, '
                  f'N, {row.shape}, {pre}{arrays}{post})']
    return write_out(lines, globals(), f'_COMPILED[{name!r}]', f'RobotModel.{name}', row.doc)


for _name, _row in _COMPILED.items():
    setattr(RobotModel, _name, _compiled(_name, _row))


class CoupledRobotModel(RobotModel):
    """
    A tree with mimic joints: the holonomic constraints q = B u + d of 004 section 5.

    The coordinates u are the independent joints (``joint_names``); every movable joint
    (``full_joint_names``) follows q = B u + d, q' = B u', q'' = B u'', B constant (URDF
    ``<mimic>``: q_m = multiplier q_p + offset, chains resolved). Every method takes u and
    returns the constrained system's quantities, computed on the tree at q and projected:
    M_u = B^T M(q) B, G_u = B^T G(q), tau_u = B^T tau, and, because (B kron B)(u' kron u')
    = (B u') kron (B u'), C*_u(u) = B^T C*(q) (B kron B), which is eq. (101) of 000 applied
    to M_u (test/test_mimic.py checks it by finite differences of M_u). Kinematics (poses,
    J_u = J B, H_u) include the mimic motion. Armature is per independent joint. ``tree`` is
    the whole tree (one body per movable joint, mimic ones included); ``unconstrained`` is
    the RobotModel of that tree, joints in ``full_joint_names`` order.
    """

    def __init__(self, description: RobotDescription, joint_names: Sequence[str] | None = None,
                 armature: ArrayLike | None = None, lock_others: bool = False):
        """Build the constrained model (see :class:`RobotModel`; q means u here)."""
        if not isinstance(description, RobotDescription) or not description.mimic_joints:
            raise TypeError('CoupledRobotModel needs a RobotDescription with mimic joints; '
                            'RobotModel(description) chooses the class itself')
        if _boolean(lock_others, 'lock_others'):
            if isinstance(joint_names, Iterable) and not isinstance(joint_names, str):
                joint_names = list(joint_names)       # read twice: may be an iterator
            description = self.__dict__.pop('_unlisted_locked', None) or _lock_unlisted(
                description, joint_names)
        self._description = description
        self.tree = description.tree
        self.name: str = description.name
        self.root_link: str = description.root_link
        self.total_mass: float = description.total_mass
        self.mimic_joints = description.mimic_joints
        self.joint_names: tuple[str, ...] = self._joint_order(joint_names)
        self._check = ArrayChecker(self.joint_names, self.joint_names)
        self.joints: Mapping[str, JointInfo] = MappingProxyType(
            {j: description.joints[j] for j in self.joint_names})
        mimics = tuple(j for j in description.joint_names if j in description.mimic_joints)
        self._full_names = self.joint_names + mimics
        # the unconstrained tree, its joints in full_joint_names order, no armature
        self._full = RobotModel(dataclasses.replace(description, mimic_joints={}),
                                self._full_names)
        self._site_rows = self._full._site_rows      # link names are those of the tree
        # q = B u + d and its projections, bound once (model/coordinates.py)
        m = self._joint_map = JointMap(self._full_names, self.joint_names,
                                       description.mimic_joints)
        self._lift, self._lift_rate = m.lift, m.rate
        self._vec, self._mat, self._cols, self._star, self._hess = (
            m.force, m.matrix, m.columns, m.star, m.hessian)
        # the compiled path (kernels/coupled.py): per joint of the full tree the coordinate it
        # follows, the multiplier and the offset (None for a general B: NumPy projections)
        full = self._full
        self._fints, self._freals, self._fsites = full._ints, full._reals, full._sites
        self._cpl = m.kernel_table
        self._n = len(self.joint_names)
        self._nn = (self._n, self._n)
        self.armature: Array = self._armature(armature, self._n)
        self._zeros = np.zeros(self._n)
        self._zeros.setflags(write=False)
        self._6n = (6, self._n)
        self._nnn3 = (self._n, self._n, self._n)
        self._contact_cache = {}
        self._contact_kernel = None if self._cpl is None else (
            self._fints, self._freals, self._fsites, self._cpl, self.armature)
        full = self._full.joints
        self._damping = np.array([full[j].damping for j in self._full_names])
        self._friction = np.array([full[j].friction for j in self._full_names])

    @property
    def n(self) -> int:
        """Return the number of coordinates (independent joints)."""
        return len(self.joint_names)

    @property
    def full_joint_names(self) -> tuple[str, ...]:
        """Every movable joint: ``joint_names``, then the mimic joints (tree order)."""
        return self._full_names

    @property
    def unconstrained(self) -> RobotModel:
        """Return the tree without the mimic constraints, joints in full_joint_names order."""
        return self._full

    def full_configuration(self, q: ArrayLike) -> Array:
        """Return the position of every movable joint (``full_joint_names``) at u."""
        (u,), _ = self._inputs(q=q)
        return self._lift(u)

    def full_velocity(self, qd: ArrayLike) -> Array:
        """Return the velocity of every movable joint (``full_joint_names``), B u'."""
        (ud,), _ = self._inputs(qd=qd)
        return self._lift_rate(ud)

    def full_acceleration(self, qdd: ArrayLike) -> Array:
        """Return the acceleration of every movable joint (``full_joint_names``), B u''."""
        (udd,), _ = self._inputs(qdd=qdd)
        return self._lift_rate(udd)

    # ----------------------------------------------------------------- kinematics
    # link_pose, jacobian, mass_matrix, inverse_dynamics, forward_dynamics and both
    # derivatives are rows of _COUPLED (below): one compiled call of kernels.coupled, then
    # these general paths (checks, batches, GPU arrays, the readable alternatives)
    def _general_link_pose(self, q, link) -> Array:
        self._frame(link)
        if _on_device(q):
            return self.on_gpu().link_pose(q, link)
        (u,), _ = self._inputs(q=q)
        return self._full.link_pose(self._lift(u), link)

    def _general_jacobian(self, q, link, point, frame) -> Array:
        self._frame(link)
        if _on_device(q):
            return self.on_gpu().jacobian(q, link, point, frame)
        (u,), _ = self._inputs(q=q)
        return self._cols(self._full.jacobian(self._lift(u), link, point, frame))

    def jacobians(self, q: ArrayLike, link: str,
                  point: ArrayLike | None = None) -> tuple[Array, Array]:
        """Return (J_T B, J_R B), each 3 x n, root axes: the rows of :meth:`jacobian` (004)."""
        J = self.jacobian(q, link, point)       # one compiled call of kernels.coupled
        return J[..., :3, :], J[..., 3:, :]

    def hessians(self, q: ArrayLike, link: str,
                 point: ArrayLike | None = None) -> tuple[Array, Array]:
        """Return (H_T, H_R) in u, each 3 x n^2: the rows of :meth:`hessian` (000 eq. 5)."""
        H = self.hessian(q, link, point)        # one compiled call of kernels.coupled
        return H[..., :3, :], H[..., 3:, :]

    def locked(self, values: Mapping[str, float]) -> RobotModel:
        """
        Lock independent joints at the given coordinates; their mimic joints follow.

        A mimic joint cannot be locked itself; otherwise as :meth:`RobotModel.locked`.
        """
        return super().locked(values)

    # ----------------------------------------------------------------- dynamics
    def _general_mass_matrix(self, q, method) -> Array:
        if method is None and _on_device(q):
            return self.on_gpu().mass_matrix(q)
        (u,), _ = self._inputs(q=q)
        return self._mat(self._full.mass_matrix(self._lift(u), method)) + np.diag(
            self.armature)

    def _general_inverse_dynamics(self, q, qd, qdd, f_ext) -> Array:
        if _on_device(q):
            return self._on_gpu_call(ID, f_ext, {'q': q, 'qd': qd, 'qdd': qdd})
        (u, ud, udd), _ = self._inputs(q=q, qd=qd, qdd=qdd)
        tau = self._full.inverse_dynamics(self._lift(u), self._lift_rate(ud),
                                          self._lift_rate(udd), f_ext)
        return self._vec(tau) + self.armature * udd

    def _general_forward_dynamics(self, q, qd, tau, f_ext) -> Array:
        if _on_device(q):
            return self.on_gpu().forward_dynamics(q, qd, tau, f_ext=f_ext)
        if f_ext is not None and _has_wrenches(f_ext):
            return self.forward_dynamics(q, qd, self._plus_wrenches(f_ext, q, tau))
        (u, ud, tau_u), N = self._inputs(q=q, qd=qd, tau=tau)
        if N is not None:
            out = np.empty((N, self._n))
            if self._cpl is not None and native.coupled_forward_dynamics_batch(
                    self._fints, self._freals, self._cpl, self.armature, u, ud, tau_u, out):
                return out
            return self._per_row(self.forward_dynamics, N, u, ud, tau_u)   # names the row
        return solve_mass_matrix(self.mass_matrix(u), tau_u - self.bias_torque(u, ud),
                                 list(self.joint_names))

    def _general_inverse_dynamics_derivatives(self, q, qd, qdd, f_ext) -> tuple:
        if _on_device(q):
            return self.on_gpu().inverse_dynamics_derivatives(q, qd, qdd, f_ext=f_ext)
        if _has_wrenches(f_ext):
            return self._less_wrench_derivatives(f_ext, q=q, qd=qd, qdd=qdd)
        (u, ud, udd), N = self._inputs(q=q, qd=qd, qdd=qdd)
        if N is not None:
            out = np.empty((N, 3, self._n, self._n))
            if self._cpl is not None and native.coupled_rnea_derivatives_batch(
                    self._fints, self._freals, self._cpl, self.armature, u, ud, udd, out):
                return out[:, 0], out[:, 1], out[:, 2]
            return self._per_row(self.inverse_dynamics_derivatives, N, u, ud, udd)
        dq, dv, M = self._full.inverse_dynamics_derivatives(
            self._lift(u), self._lift_rate(ud), self._lift_rate(udd))
        return self._mat(dq), self._mat(dv), self._mat(M) + np.diag(self.armature)

    def _general_forward_dynamics_derivatives(self, q, qd, tau, f_ext) -> tuple:
        if _on_device(q):
            return self.on_gpu().forward_dynamics_derivatives(q, qd, tau, f_ext=f_ext)
        if _has_wrenches(f_ext):
            return self._derivatives_with_wrenches(self.forward_dynamics_derivatives, f_ext,
                                                   q=q, qd=qd, tau=tau)
        (u, ud, tau_u), N = self._inputs(q=q, qd=qd, tau=tau)
        if N is not None:       # a singular M_u: the per-row loop raises the single call's error
            out = np.empty((N, 3, self._n, self._n))
            if self._cpl is not None and native.coupled_forward_dynamics_derivatives_batch(
                    self._fints, self._freals, self._cpl, self.armature, u, ud, tau_u, out):
                return out[:, 0], out[:, 1], out[:, 2]
            return self._per_row(self.forward_dynamics_derivatives, N, u, ud, tau_u)
        return self._derivatives_at(u, ud, tau_u)

    def regressor(self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike) -> Array:
        """Return Y_u = B^T Y(B u + d, B u', B u''), n x 10 nb (every body of the tree)."""
        if _on_device(q):
            return self.on_gpu().regressor(q, qd, qdd)
        (u, ud, udd), _ = self._inputs(q=q, qd=qd, qdd=qdd)
        Y = self._full.regressor(self._lift(u), self._lift_rate(ud), self._lift_rate(udd))
        return self._joint_map.Bt @ Y

    def mass_matrix_derivative(self, q: ArrayLike) -> Array:
        """Return dM_u/du [i, j, k] = sum B_ai B_bj B_ck dM_ab/dq_c (B constant)."""
        if self._cpl is not None and _is_vector(q):
            out = np.empty(self._nnn3)
            if native.coupled_mass_matrix_derivative(self._fints, self._freals, self._cpl, q,
                                                     out):
                return out
        if _on_device(q):
            return self.on_gpu().mass_matrix_derivative(q)
        (u,), N = self._inputs(q=q)
        if N is not None:
            out = np.empty((N, *self._nnn3))
            if self._cpl is not None and native.coupled_mass_matrix_derivative_batch(
                    self._fints, self._freals, self._cpl, u, out):
                return out
            return self._per_row(self._mass_matrix_derivative_readable, N, u)
        return self._mass_matrix_derivative_readable(u)

    def _mass_matrix_derivative_readable(self, u: Array) -> Array:
        """:meth:`mass_matrix_derivative` of one checked u by NumPy (the kernel's reference)."""
        dM = self._full.mass_matrix_derivative(self._lift(u))
        return np.einsum('abc,ai,bj,ck->ijk', dM, *(self._joint_map.B,) * 3, optimize=True)

    def simulate(self, q: ArrayLike, qd: ArrayLike, tau: ArrayLike, dt: float,
                 steps: int = 1, damping: ArrayLike | None = None,
                 f_ext: Mapping[str, ArrayLike] | None = None) -> tuple[Array, Array]:
        """Integrate u'' = forward_dynamics(u, u', tau - damping u', f_ext) with RK4."""
        if _on_device(q):
            return self.on_gpu().simulate(q, qd, tau, dt, steps, damping, f_ext=f_ext)
        damping = self._zeros if damping is None else self._vector(damping, 'damping')
        (u, ud, tau_u), N = self._inputs(q=q, qd=qd, tau=tau)
        dt, steps = _step_arguments(dt, steps)
        if f_ext is not None and _has_wrenches(f_ext):
            return self._rk4(u, ud, tau_u, dt, steps, damping, f_ext, N)
        if N == 0:
            return np.empty((0, self._n)), np.empty((0, self._n))
        if N is not None:
            out = np.empty((N, 2, self._n))
            if self._cpl is not None and native.coupled_rk4_batch(
                    self._fints, self._freals, self._cpl, self.armature, u, ud, tau_u, damping,
                    dt, steps, out):
                return out[:, 0], out[:, 1]
            return self._simulate_rows(N, u, ud, tau_u, dt, steps, damping)
        out = np.empty((2, self._n))
        if self._cpl is not None and native.coupled_rk4(
                self._fints, self._freals, self._cpl, self.armature, u, ud, tau_u, damping, dt,
                steps, out):
            return out[0], out[1]
        # the readable RK4 (a general coupling, or the descriptive error of a singular M_u)
        return self._rk4(u, ud, tau_u, dt, steps, damping)

    def friction_torque(self, qd: ArrayLike) -> Array:
        """B^T (damping q' + friction sign(q')) of every movable joint's <dynamics>, q' = B u'."""
        (ud,), _ = self._inputs(qd=qd)
        v = self._lift_rate(ud)
        return self._vec(self._damping * v + self._friction * np.sign(v))

    def moved_mass(self) -> Array:
        """Return, per independent joint, the mass of the bodies it moves (with its mimics)."""
        tree = self.tree
        index = {name: i for i, name in enumerate(self._description.joint_names)}
        full_rows = [index[j] for j in self._full_names]
        out = []
        for k in range(self.n):
            moved = np.zeros(tree.n, dtype=bool)
            for row in np.nonzero(self._joint_map.B[:, k])[0]:
                moved |= tree.subtree(full_rows[row])
            out.append(tree.mass[moved].sum())
        return np.array(out)


# The mimic layer, one row per method that is the whole tree's at q = B u + d: its arrays
# lifted ('q': a position, q = B u + d; 'v': a velocity or acceleration, B u'), the other
# arguments passed through, the result projected by the model's JointMap ('force': B^T tau,
# 'matrix': B^T M B, 'columns': J B, 'star': B^T C* (B kron B), 'hessian', None: as it is);
# with a Newton-Euler mode, the compiled coupled kernel serves a single
# state first. A new quantity on a mimic model is one row here.
_PROJECTED = {
    'link_poses': ('q', None, None,
                   "Return the 4 x 4 poses of all links at u, (L, 4, 4) in ``link_names`` "
                   "order."),
    'jacobian_derivative': ('qv', 'columns', None,
                            "Return J'(q, B u') B, the time derivative of :meth:`jacobian` "
                            "(B is constant)."),
    'acceleration': ('qvv', None, None,
                     "Return the classical acceleration of a link or point at (u, u', u''), 6 "
                     "values."),
    'hessian': ('q', 'hessian', None,
                "Return the 6 x n^2 Hessian of :meth:`jacobian` in u: d(J B)[:, s]/du_k."),
    'center_of_mass': ('q', None, None,
                       "Return the centre of mass (3,) at u (``include_root`` as for "
                       "RobotModel)."),
    'center_of_mass_jacobian': ('q', 'columns', None,
                                "Return the 3 x n Jacobian of :meth:`center_of_mass` in u."),
    'centroidal_momentum_matrix': ('q', 'columns', None,
                                   "Return A_G B (6 x n), the centroidal momentum matrix in u "
                                   "(Pinocchio's ``ccrba``)."),
    'coriolis_star': ('q', 'star', None,
                      "Return C*_u = B^T C*(q) (B kron B), n x n^2: eq. (101) of M_u (000; 004 "
                      "section 5)."),
    'coriolis_matrix': ('qv', 'matrix', None,
                        "Return C_u = B^T C(q, B u') B: M_u' - 2 C_u is skew, C_u u' = C*_u (u' "
                        "kron u')."),
    'potential_energy': ('q', None, None,
                         "Return V(q) at q = B u + d, zero at the root origin; G_u = dV/du."),
    'coriolis_vector': ('qv', 'force', CORIOLIS,
                        "Return C*_u (u' kron u') = B^T C*(q)(q' kron q'), q' = B u'."),
    'gravity_torque': ('q', 'force', GRAVITY, "Return G_u = B^T G(q) = dV/du."),
    'bias_torque': ('qv', 'force', BIAS,
                    "Return C*_u (u' kron u') + G_u, the generalized force that holds u'' = 0."),
}
_PROJECTIONS = {None: lambda self, x: x, 'force': lambda self, x: self._vec(x),
                'matrix': lambda self, x: self._mat(x), 'columns': lambda self, x: self._cols(x),
                'star': lambda self, x: self._star(x), 'hessian': lambda self, x: self._hess(x)}


def _gpu_method(self, name: str, arrays: tuple, others: tuple):
    """Return the GpuModel method of the same name on the (unlifted) CUDA arrays."""
    return getattr(self.on_gpu(), name)(*arrays)


def _gpu_default(method, name: str, run, *arrays):
    """Return run(*arrays) for CUDA arrays where ``method`` is None (the GPU's only one)."""
    if method is not None:
        raise ValueError(f'{name}: method {method!r} runs on the CPU; CUDA arrays take the '
                         'default (method=None)')
    return run(*arrays)


# the _PROJECTED methods that the GPU serves: (self, name, arrays, other arguments) -> result
_GPU_ROUTES = {
    'gravity_torque': _gpu_method, 'bias_torque': _gpu_method, 'coriolis_vector': _gpu_method,
    'potential_energy': _gpu_method,
    'coriolis_star': lambda self, name, arrays, others: _gpu_default(
        others[0], name, self.on_gpu().coriolis_star, arrays[0]),
    'coriolis_matrix': _gpu_method, 'centroidal_momentum_matrix': _gpu_method,
    'jacobian_derivative': lambda self, name, arrays, others: self.on_gpu().jacobian_derivative(
        *arrays, *others),
    'acceleration': lambda self, name, arrays, others: self.on_gpu().acceleration(
        *arrays, *others),
    'hessian': lambda self, name, arrays, others: self.on_gpu().hessian(arrays[0], *others),
    'link_poses': lambda self, name, arrays, others: self.on_gpu().link_poses(arrays[0])[0],
    'center_of_mass': lambda self, name, arrays, others: self._gpu_center_of_mass(
        arrays[0], bool(others[0])),
    'center_of_mass_jacobian': lambda self, name, arrays, others: self._gpu_center_of_mass(
        arrays[0], bool(others[0]), name),
}


def _lift_and_project(self, name: str, kinds: str, arrays: tuple, others: tuple):
    """Return the general path of a _PROJECTED method: check, lift, the tree's method, project."""
    route = _GPU_ROUTES.get(name)
    if route is not None and _on_device(arrays[0]):     # others refuse CUDA arrays (_inputs)
        return route(self, name, arrays, others)
    checked, _ = self._inputs(**dict(zip(('q', 'qd', 'qdd'), arrays)))
    values = [self._lift(x) if kind == 'q' else self._lift_rate(x)
              for kind, x in zip(kinds, checked)]
    result = getattr(self._full, name)(*values, *others)
    return _PROJECTIONS[_PROJECTED[name][1]](self, result)


def _projected(name: str, kinds: str, _projection, mode, doc: str):
    """
    Return the CoupledRobotModel method of a _PROJECTED row, with RobotModel's signature.

    The method is written out (exec) with the parameters of RobotModel's: a single state
    then costs what a hand-written method does (no *args packing or binding per call). Its
    general path, _lift_and_project, reads the row's projection itself.
    """
    signature = inspect.signature(getattr(RobotModel, name))
    parameters = list(signature.parameters.values())[1:]      # after self
    arrays = [p.name for p in parameters[:len(kinds)]]
    others = [p.name for p in parameters[len(kinds):]]
    listed = ', '.join(p.name if p.default is inspect.Parameter.empty
                       else f'{p.name}={p.default!r}' for p in parameters)
    lines = [f'def {name}(self, {listed}):']
    if mode is not None:
        q, qd, qdd = (arrays + arrays[-1:] * 3)[:3]      # (q, q, q) or (q, qd, qd)
        vectors = ' and '.join(f'type({a}) is _ND and {a}.dtype is _F64 and {a}.ndim == 1'
                               for a in arrays)
        lines += [f'    if self._cpl is not None and {vectors}:',
                  '        tau = _empty(self._n)',
                  '        if native.coupled_rnea(self._fints, self._freals, self._cpl, '
                  f'self.armature, {q}, {qd}, {qdd}, {mode}, tau):',
                  '            return tau']
    lines.append(f'    return _lift_and_project(self, {name!r}, {kinds!r}, '
                 f'({", ".join(arrays)},), ({"".join(o + ", " for o in others)}))')
    method = write_out(lines, globals(), f'_PROJECTED[{name!r}]', f'CoupledRobotModel.{name}',
                       doc)
    method.__signature__ = signature
    return method


for _name, _row in _PROJECTED.items():
    setattr(CoupledRobotModel, _name, _projected(_name, *_row))


# ------------------------------------------------------------------ the coupled kernels
# One row per CoupledRobotModel method that runs one compiled call of kernels/coupled.py
# (q = B u + d lifted, the whole tree's kernel, the projection): the arrays it takes as they
# are, the kernel's arguments ({} for the arrays), the output shape and the general path
# (the private method of the same name with _general_). Written out with RobotModel's
# signature, as _COMPILED and _PROJECTED are.
class _CoupledRow(NamedTuple):
    arrays: tuple                # the per-coordinate arguments, as the fast path takes them
    args: str                    # native.coupled_<name>(fints, freals, <args>, out)
    shape: str                   # the output's shape per state
    general: str                 # the general path's arguments (after self)
    doc: str
    kernel: str = ''             # default: coupled_<name>
    prelude: tuple = ()          # lines run first
    fast_if: str = ''            # what else the fast path needs
    parts: int = 0               # the output holds this many results (a tuple of them)


# the site row of a link and the kernels' code of a frame (-1 where either is not one)
_LINK_AND_FRAME = ('try:', '    k, code = self._site_rows[link], FRAMES[frame]',
                   'except (KeyError, TypeError):', '    k = code = -1')
_COUPLED = {
    'link_pose': _CoupledRow(
        ('q',), 'self._fsites, self._cpl, k, {}', '_SHAPE_44', 'q, link', prelude=(
            'k = self._site_rows.get(link, -1) if isinstance(link, str) else -1',),
        fast_if='k >= 0',
        doc='Return the 4 x 4 pose of a link frame in the root frame at u (mimic motion in).'),
    'jacobian': _CoupledRow(
        ('q',), 'self._fsites, self._cpl, k, _ORIGIN, {}, code', 'self._6n',
        'q, link, point, frame', prelude=_LINK_AND_FRAME,
        fast_if='code >= 0 and point is None',
        doc='Return J B, the 6 x n Jacobian in u of a link or point (frames as RobotModel).'),
    'link_poses': _CoupledRow(
        ('q',), 'self._fsites, self._cpl, {}', 'self._full._L44', 'q',
        doc=_PROJECTED['link_poses'][3]),
    'jacobian_derivative': _CoupledRow(
        ('q', 'qd'), 'self._fsites, self._cpl, k, _ORIGIN, {}, code', 'self._6n',
        'q, qd, link, point, frame', prelude=_LINK_AND_FRAME,
        fast_if='code >= 0 and point is None', doc=_PROJECTED['jacobian_derivative'][3]),
    'acceleration': _CoupledRow(
        ('q', 'qd', 'qdd'), 'self._fsites, self._cpl, k, _ORIGIN, {}, code', '6',
        'q, qd, qdd, link, point, frame', prelude=_LINK_AND_FRAME,
        fast_if='code >= 0 and code != WORLD and point is None',
        doc=_PROJECTED['acceleration'][3]),
    'center_of_mass': _CoupledRow(
        ('q',), 'self._cpl, {}, root', '3', 'q, include_root', prelude=_ROOT,
        doc=_PROJECTED['center_of_mass'][3]),
    'center_of_mass_jacobian': _CoupledRow(
        ('q',), 'self._cpl, {}, root', '(3, self._n)', 'q, include_root', prelude=_ROOT,
        doc=_PROJECTED['center_of_mass_jacobian'][3]),
    'coriolis_matrix': _CoupledRow(
        ('q', 'qd'), 'self._cpl, {}', 'self._nn', 'q, qd', doc=_PROJECTED['coriolis_matrix'][3]),
    'centroidal_momentum_matrix': _CoupledRow(
        ('q',), 'self._cpl, {}', 'self._6n', 'q',
        doc=_PROJECTED['centroidal_momentum_matrix'][3]),
    'hessian': _CoupledRow(
        ('q',), 'self._fsites, self._cpl, k, _ORIGIN, {}, code', '(6, self._n * self._n)',
        'q, link, point, frame', prelude=_LINK_AND_FRAME, fast_if='code >= 0 and point is None',
        doc=_PROJECTED['hessian'][3]),
    'coriolis_star': _CoupledRow(
        ('q',), 'self._cpl, {}', '(self._n, self._n * self._n)', 'q, method',
        fast_if='method is None', doc=_PROJECTED['coriolis_star'][3]),
    'mass_matrix': _CoupledRow(
        ('q',), 'self._cpl, self.armature, {}', 'self._nn', 'q, method', kernel='coupled_crba',
        fast_if='method is None',
        doc="Return M_u = B^T M(q) B (+ armature), n x n; ``method`` as for RobotModel."),
    'inverse_dynamics': _CoupledRow(
        ('q', 'qd', 'qdd'), 'self._cpl, self.armature, {}, ID', 'self._n', 'q, qd, qdd, f_ext',
        kernel='coupled_rnea', fast_if='f_ext is None', doc="""
        Return tau_u = B^T tau(q, B u', B u'', f_ext) + armature u'' (004 section 5).

        The generalized forces of the independent joints that produce u''; ``f_ext`` as
        for RobotModel.
        """),
    'forward_dynamics': _CoupledRow(       # a singular M_u or bad input: the general path
        ('q', 'qd', 'tau'), 'self._cpl, self.armature, {}', 'self._n', 'q, qd, tau, f_ext',
        fast_if='f_ext is None', doc="Return u'' = M_u^-1 (tau_u + (J B)^T F_ext - C*_u (u' kron "
        "u') - G_u); SingularMassMatrixError."),
    'inverse_dynamics_derivatives': _CoupledRow(
        ('q', 'qd', 'qdd'), 'self._cpl, self.armature, {}', '(3, self._n, self._n)',
        'q, qd, qdd, f_ext', kernel='coupled_rnea_derivatives', fast_if='f_ext is None',
        parts=3, doc="Return (B^T dtau/dq B, B^T dtau/dq' B, M_u): q = B u + d, q' = B u', "
        "q'' = B u''."),
    'forward_dynamics_derivatives': _CoupledRow(
        ('q', 'qd', 'tau'), 'self._cpl, self.armature, {}', '(3, self._n, self._n)',
        'q, qd, tau, f_ext', fast_if='f_ext is None', parts=3,
        doc="Return (du''/du, du''/du', M_u^-1) at u'' = forward_dynamics(u, u', tau)."),
}


def _coupled(name: str, row: _CoupledRow):
    """Return the CoupledRobotModel method of a _COUPLED row, with RobotModel's signature."""
    signature = inspect.signature(getattr(RobotModel, name))
    parameters = list(signature.parameters.values())[1:]      # after self
    listed = ', '.join(p.name if p.default is inspect.Parameter.empty
                       else f'{p.name}={p.default!r}' for p in parameters)
    fast_if = ' and '.join(['self._cpl is not None', *([row.fast_if] if row.fast_if else []),
                            *(f'type({a}) is _ND and {a}.dtype is _F64 and {a}.ndim == 1'
                              for a in row.arrays)])
    parts = ', '.join(f'out[{k}]' for k in range(row.parts)) or 'out'
    lines = [f'def {name}(self, {listed}):', *('    ' + p for p in row.prelude),
             f'    if {fast_if}:', f'        out = _empty({row.shape})',
             f'        if native.{row.kernel or "coupled_" + name}(self._fints, self._freals, '
             f'{row.args.format(", ".join(row.arrays))}, out):', f'            return {parts}',
             f'    return self._general_{name}({row.general})']
    method = write_out(lines, globals(), f'_COUPLED[{name!r}]', f'CoupledRobotModel.{name}',
                       row.doc)
    method.__signature__ = signature
    return method


for _name, _row in _COUPLED.items():
    if _name in _PROJECTED:      # its lift-and-project method is the general path
        setattr(CoupledRobotModel, f'_general_{_name}', getattr(CoupledRobotModel, _name))
    setattr(CoupledRobotModel, _name, _coupled(_name, _row))


class FloatingBaseModel(MovingBase, RobotModel):
    """
    A RobotModel on a floating or planar base (:class:`.floating_model.MovingBase`).

    Not a public class of its own: ``RobotModel.from_urdf_file(path, root_joint='floating')``
    builds one; ``kron_dynamics.FloatingBaseModel`` is a deprecated alias of RobotModel's
    constructor for a moving base.
    """
