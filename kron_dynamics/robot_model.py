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
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .algorithms.coriolis_star import coriolis_star as coriolis_star_hessian
from .algorithms.crba import crba
from .algorithms.forward_dynamics import solve_mass_matrix
from .algorithms.jacobians import hessian_r, hessian_t, jacobian_r, jacobian_t
from .algorithms.jsim_explicit import jsim_explicit
from .algorithms.kinematics import com_positions, forward_kinematics, world_axes
from .algorithms.mass_matrix_jacobian import mass_matrix_jacobian
from .errors import ModelError, SingularMassMatrixError
from .kernels import BIAS, CORIOLIS, GRAVITY, ID, native, pack
from .model.dh import DHRow, dh_to_urdf
from .model.urdf import JointInfo, parse_urdf, RobotDescription

Array = NDArray[np.float64]

MASS_MATRIX_METHODS = {
    'jacobian': mass_matrix_jacobian,   # 000 eq. (95)
    'explicit': jsim_explicit,          # 003 eqs. (30)-(37)
    'crba': crba,                       # composite rigid bodies
}

_ND = np.ndarray
_F64 = np.dtype(np.float64)
_NO_WRENCH = np.zeros((0, 6))


def _is_vector(x) -> bool:
    """Return True for a 1-D float64 ndarray: what the compiled entry points take as is."""
    return type(x) is _ND and x.dtype is _F64 and x.ndim == 1


class RobotModel:
    """
    A fixed-base rigid-body tree with the dynamics of the Kronecker-product papers.

    Build it with :meth:`from_urdf_file`, :meth:`from_urdf_string` or :meth:`from_dh`.
    q, qd, qdd and tau are 1-D arrays of length ``n`` in ``joint_names`` order, SI units
    (rad, m, N m, N). Every method also takes a batch: arrays of shape (N, n) (1-D ones are
    broadcast), and returns the results stacked along a new first axis of length N (also
    for N = 0). The model is immutable: ``with_gravity`` and ``with_armature`` return
    modified copies.
    """

    def __init__(self, description: RobotDescription, joint_names: Sequence[str] | None = None,
                 armature: ArrayLike | None = None):
        """
        Build the model of a validated description (:func:`kron_dynamics.model.parse_urdf`).

        ``joint_names`` sets the order of q (it must name exactly the movable joints);
        ``armature`` adds rotor inertia to M's diagonal, one value per joint.
        """
        if not isinstance(description, RobotDescription):
            raise TypeError('RobotModel(description): use RobotModel.from_urdf_file, '
                            'from_urdf_string or from_dh, or pass the RobotDescription of '
                            f'kron_dynamics.model.parse_urdf, not {type(description).__name__}')
        self._description = description
        self.tree = description.tree
        self.name: str = description.name
        self.root_link: str = description.root_link
        self.total_mass: float = description.total_mass
        self.joint_names: tuple[str, ...] = self._joint_order(joint_names)
        internal = {name: i for i, name in enumerate(description.joint_names)}
        self._perm = np.array([internal[j] for j in self.joint_names], dtype=int)
        self._perm.setflags(write=False)
        self.joints: Mapping[str, JointInfo] = MappingProxyType(
            {j: description.joints[j] for j in self.joint_names})
        try:
            armature = self._vector(np.zeros(self.n) if armature is None else armature,
                                    'armature')
        except ValueError as exc:
            raise ModelError(str(exc)) from None
        if np.any(armature < 0):
            raise ModelError('armature must be >= 0')
        armature.setflags(write=False)
        self.armature: Array = armature
        self._ints, self._reals = pack(self.tree, self._perm, self.armature)
        self._zeros = np.zeros(self.n)
        self._zeros.setflags(write=False)
        self._n = self.n
        self._nn = (self.n, self.n)
        self._nnn = (self.n, self.n * self.n)

    def _joint_order(self, joint_names) -> tuple[str, ...]:
        """Check a user joint order against the movable joints; ModelError naming the fault."""
        movable = self._description.joint_names
        if joint_names is None:
            return tuple(movable)
        if isinstance(joint_names, str) or not isinstance(joint_names, Iterable):
            raise ModelError(f'joint_names must be a list of joint names, got {joint_names!r}')
        names = [str(j) for j in joint_names]
        unknown = [j for j in names if j not in self._description.joints]
        if unknown:
            raise ModelError(f'joint_names: unknown or non-movable joint(s) {unknown}; '
                             f'movable joints are {list(movable)}')
        dup = sorted({j for j in names if names.count(j) > 1})
        if dup:
            raise ModelError(f'joint_names: duplicate joint(s) {dup}')
        missing = [j for j in movable if j not in names]
        if missing:
            raise ModelError(f'joint_names: missing movable joint(s) {missing}')
        return tuple(names)

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_urdf_string(cls, xml: str, joint_names: Sequence[str] | None = None,
                         gravity: ArrayLike = (0.0, 0.0, -9.81),
                         armature: ArrayLike | None = None,
                         source: str = '<string>') -> RobotModel:
        """Build a model from URDF text; gravity is a 3-vector in the root link frame."""
        return cls(parse_urdf(xml, source, gravity), joint_names, armature)

    @classmethod
    def from_urdf_file(cls, path: str | Path, joint_names: Sequence[str] | None = None,
                       gravity: ArrayLike = (0.0, 0.0, -9.81),
                       armature: ArrayLike | None = None) -> RobotModel:
        """Build a model from a URDF file."""
        try:
            xml = Path(path).read_text(encoding='utf-8')
        except (OSError, UnicodeDecodeError) as exc:
            raise ModelError(f'cannot read URDF file {path}: {exc}') from None
        return cls.from_urdf_string(xml, joint_names, gravity, armature, source=str(path))

    @classmethod
    def from_dh(cls, rows: Sequence[DHRow], name: str = 'dh_robot',
                base_xyz: ArrayLike = (0.0, 0.0, 0.0), base_rpy: ArrayLike = (0.0, 0.0, 0.0),
                gravity: ArrayLike = (0.0, 0.0, -9.81)) -> RobotModel:
        """Build a model of a standard DH table; q_i is the i-th DH variable (model.dh)."""
        xml = dh_to_urdf(list(rows), name, base_xyz, base_rpy)
        return cls.from_urdf_string(xml, [r.joint for r in rows], gravity,
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

    def moved_mass(self) -> Array:
        """Return, per joint, the mass of the bodies it moves (its subtree)."""
        tree = self.tree
        return np.array([tree.mass[tree.subtree(i)].sum() for i in self._perm])

    def with_gravity(self, gravity: ArrayLike) -> RobotModel:
        """Return a copy of the model with another gravity vector."""
        try:
            g = np.asarray(gravity, dtype=float)
        except (TypeError, ValueError):
            g = None
        if g is None or g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ModelError(f'gravity must be 3 finite numbers, got {gravity!r}')
        d = self._description
        description = RobotDescription(d.name, d.tree.with_gravity(g), d.joint_names, d.joints,
                                       d.frames, d.root_link, d.total_mass)
        return RobotModel(description, self.joint_names, self.armature)

    def with_armature(self, armature: ArrayLike | Mapping[str, float]) -> RobotModel:
        """Return a copy with per-joint armature (rotor inertia added to M's diagonal)."""
        if isinstance(armature, Mapping):
            unknown = [j for j in armature if j not in self.joints]
            if unknown:
                raise ModelError(f'armature: unknown joint(s) {unknown}; joints are '
                                 f'{list(self.joint_names)}')
            armature = [float(armature.get(j, 0.0)) for j in self.joint_names]
        return RobotModel(self._description, self.joint_names, armature)

    # ----------------------------------------------------------------- conversions
    def _vector(self, x, name: str) -> Array:
        """Check one per-joint array of shape (n,) (no batch); ValueError naming the fault."""
        (v,), _ = self._inputs(batch=False, **{name: x})
        return np.array(v)

    def _inputs(self, batch: bool = True, **arrays):
        """
        Check joint arrays given as (n,) or as a batch (N, n); return (arrays, N).

        N is None when every array is 1-D. In a batch, 1-D arrays are broadcast to (N, n).
        Raises ValueError naming the array, the row and the joints at fault.
        """
        n = self.n
        out = {}
        N = None
        shapes = f'({n},) or (N, {n})' if batch else f'({n},)'
        for name, x in arrays.items():
            try:
                v = np.asarray(x, dtype=float)
            except (TypeError, ValueError):
                raise ValueError(f'{name} must be an array of {n} numbers'
                                 + (f' (or N x {n})' if batch else '')) from None
            if batch and v.ndim == 2 and v.shape[1] == n:
                if N is not None and v.shape[0] != N:
                    raise ValueError(f'{name} has {v.shape[0]} rows, the other inputs {N}')
                N = v.shape[0]
            elif v.shape != (n,):
                raise ValueError(f'{name} must have shape {shapes}, got {v.shape}')
            bad = ~np.isfinite(v)
            if bad.any():
                if v.ndim == 1:
                    names = [self.joint_names[i] for i in np.nonzero(bad)[0]]
                    raise ValueError(f'{name} is not finite at joint(s) {names}')
                row = int(np.nonzero(bad.any(axis=1))[0][0])
                names = [self.joint_names[i] for i in np.nonzero(bad[row])[0]]
                raise ValueError(f'{name}[{row}] is not finite at joint(s) {names}')
            out[name] = v
        if N is not None:
            for name, v in out.items():
                if v.ndim == 1:
                    out[name] = np.broadcast_to(v, (N, n))
        return list(out.values()), N

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
    def link_pose(self, q: ArrayLike, link: str) -> tuple[Array, Array]:
        """Return (R, p): orientation and origin of a link frame in the root frame."""
        body, Rb, pb = self._frame(link)
        (q,), N = self._inputs(q=q)
        if N is not None:
            return self._per_row(lambda x: self.link_pose(x, link), N, q)
        if body < 0:
            return np.array(Rb), np.array(pb)
        R, p = forward_kinematics(self.tree, self._internal(q, 'q'))
        return R[body] @ Rb, p[body] + R[body] @ pb

    def _point(self, q, link, point):
        body, Rb, pb = self._frame(link)
        if point is None:
            offset = pb
        else:
            try:
                local = np.asarray(point, dtype=float).reshape(3)
            except (TypeError, ValueError):
                raise ValueError(f'point must be 3 numbers (link frame), got {point!r}') from None
            if not np.all(np.isfinite(local)):
                raise ValueError(f'point must be finite, got {point!r}')
            offset = pb + Rb @ local
        R, p = forward_kinematics(self.tree, self._internal(q, 'q'))
        axes = world_axes(self.tree, R)
        x = (R[body] @ offset + p[body]) if body >= 0 else offset
        return body, x, axes, p

    def jacobians(self, q: ArrayLike, link: str,
                  point: ArrayLike | None = None) -> tuple[Array, Array]:
        """
        (J_T, J_R), each 3 x n in the root frame, of a link's origin or a point on it.

        ``point`` is expressed in the link frame. 000 eqs. (29), (37), (45).
        """
        self._frame(link)
        (q,), N = self._inputs(q=q)
        if N is not None:
            return self._per_row(lambda x: self.jacobians(x, link, point), N, q)
        body, x, axes, p = self._point(q, link, point)
        return (self._cols(jacobian_t(self.tree, body, x, axes, p)),
                self._cols(jacobian_r(self.tree, body, axes)))

    def hessians(self, q: ArrayLike, link: str,
                 point: ArrayLike | None = None) -> tuple[Array, Array]:
        """(H_T, H_R), each 3 x n^2: H[:, s*n + k] = dJ[:, s]/dq_k (000 eqs. 5, 51, 60, 67)."""
        self._frame(link)
        (q,), N = self._inputs(q=q)
        if N is not None:
            return self._per_row(lambda x: self.hessians(x, link, point), N, q)
        body, x, axes, p = self._point(q, link, point)
        JT = jacobian_t(self.tree, body, x, axes, p)
        n = self.n
        perm = self._perm
        HT = hessian_t(self.tree, body, JT, axes).reshape(3, n, n)[:, perm][:, :, perm]
        HR = hessian_r(self.tree, body, axes).reshape(3, n, n)[:, perm][:, :, perm]
        return HT.reshape(3, n * n), HR.reshape(3, n * n)

    # ----------------------------------------------------------------- dynamics
    def mass_matrix(self, q: ArrayLike, method: str | None = None) -> Array:
        """
        Return M(q), n x n (or N x n x n for a batch), armature included.

        ``method``: None (compiled CRBA, the fast default), 'jacobian' (000 eq. 95),
        'explicit' (003 eqs. 30-37) or 'crba' (readable reference implementations).
        """
        if method is None:
            if _is_vector(q):
                M = np.empty(self._nn)
                if native.crba(self._ints, self._reals, q, M):
                    return M
            (q,), N = self._inputs(q=q)
            return self._run(native.crba, native.crba_batch, N, self._nn, q)
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

    def coriolis_star(self, q: ArrayLike, method: str | None = None) -> Array:
        """
        C*(q), n x n^2 (000 eq. 101): C*[i, j*n + k] = dM_ij/dq_k - 1/2 dM_kj/dq_i.

        ``method``: None (compiled, from the spatial derivatives of the CRBA terms) or
        'hessian' (the readable form: dM/dq from the Jacobians and Hessians of 000 eq. 95).
        """
        if method is None:
            if _is_vector(q):
                C = np.empty(self._nnn)
                if native.coriolis_star(self._ints, self._reals, q, C):
                    return C
            (q,), N = self._inputs(q=q)
            return self._run(native.coriolis_star, native.coriolis_star_batch, N,
                             self._nnn, q)
        if method != 'hessian':
            raise ValueError(f"unknown C* method {method!r}; choose None or 'hessian'")
        (q,), N = self._inputs(q=q)
        if N is not None:
            return self._per_row(lambda x: self.coriolis_star(x, method), N, q)
        return self._cube(coriolis_star_hessian(self.tree, self._internal(q, 'q')))

    def christoffel(self, q: ArrayLike) -> Array:
        """Christoffel symbols of the first kind, n x n^2 (reshape(n, n, n) gives [i, j, k])."""
        C = self.coriolis_star(q)
        n = self.n
        C3 = C.reshape(C.shape[:-2] + (n, n, n))
        return (0.5 * (C3 + np.swapaxes(C3, -1, -2))).reshape(C.shape)

    def coriolis_matrix(self, q: ArrayLike, qd: ArrayLike) -> Array:
        """Return the n x n Coriolis matrix C: M' - 2C is skew, C q' = C*(q' kron q')."""
        if _is_vector(q) and _is_vector(qd):
            C = np.empty(self._nn)
            if native.coriolis_matrix(self._ints, self._reals, q, qd, C):
                return C
        (q, qd), N = self._inputs(q=q, qd=qd)
        return self._run(native.coriolis_matrix, native.coriolis_matrix_batch, N, self._nn,
                         q, qd)

    def coriolis_vector(self, q: ArrayLike, qd: ArrayLike) -> Array:
        """C*(q)(q' kron q'), by Newton-Euler with no gravity and no acceleration."""
        if _is_vector(q) and _is_vector(qd):
            tau = np.empty(self._n)
            if native.rnea(self._ints, self._reals, q, qd, q, CORIOLIS, _NO_WRENCH, tau):
                return tau
        return self._rnea(CORIOLIS, q=q, qd=qd)

    def gravity_torque(self, q: ArrayLike) -> Array:
        """G(q) = dV/dq, by Newton-Euler at rest."""
        if _is_vector(q):
            tau = np.empty(self._n)
            if native.gravity(self._ints, self._reals, q, tau):
                return tau
        return self._rnea(GRAVITY, q=q)

    def bias_torque(self, q: ArrayLike, qd: ArrayLike) -> Array:
        """Return C*(q)(q' kron q') + G(q), the torque that holds q'' = 0, by Newton-Euler."""
        if _is_vector(q) and _is_vector(qd):
            tau = np.empty(self._n)
            if native.rnea(self._ints, self._reals, q, qd, q, BIAS, _NO_WRENCH, tau):
                return tau
        return self._rnea(BIAS, q=q, qd=qd)

    def inverse_dynamics(self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike,
                         f_ext: Mapping[str, ArrayLike] | None = None) -> Array:
        """
        Return tau = M q'' + C*(q' kron q') + G - sum J^T F_ext by Newton-Euler (002).

        ``f_ext`` maps link names to wrenches (fx, fy, fz, mx, my, mz) that the environment
        applies to the link: force at the link frame origin and moment, in root-frame
        coordinates (004 eq. 33). Armature torques are included.
        """
        if f_ext is None and _is_vector(q) and _is_vector(qd) and _is_vector(qdd):
            tau = np.empty(self._n)
            if native.rnea(self._ints, self._reals, q, qd, qdd, ID, _NO_WRENCH, tau):
                return tau
        return self._rnea(ID, f_ext, q=q, qd=qd, qdd=qdd)

    def _rnea(self, mode, f_ext=None, **arrays) -> Array:
        """General path of the Newton-Euler methods: checks, batches and external wrenches."""
        values, N = self._inputs(**arrays)
        q = values[0]
        qd = values[1] if len(values) > 1 else q
        qdd = values[2] if len(values) > 2 else q
        if N is not None:
            if f_ext:
                raise ValueError('f_ext is not supported for a batch: call per configuration')
            return self._run(None, native.rnea_batch, N, self._n, q, qd, qdd, mode)
        W = self._external_wrenches(self._internal(q, 'q'), f_ext) if f_ext else _NO_WRENCH
        return self._run(native.rnea, None, N, self._n, q, qd, qdd, mode, W)

    def _external_wrenches(self, qi, f_ext):
        if not isinstance(f_ext, Mapping):
            raise ValueError('f_ext must map link names to 6-vectors (fx, fy, fz, mx, my, mz)')
        R, p = forward_kinematics(self.tree, qi)
        W = np.zeros((self.n, 6))
        for link, wrench in f_ext.items():
            body, Rb, pb = self._frame(link)
            try:
                w = np.asarray(wrench, dtype=float)
            except (TypeError, ValueError):
                w = None
            if w is None or w.shape != (6,) or not np.all(np.isfinite(w)):
                raise ValueError(f"f_ext['{link}'] must be 6 finite numbers")
            if body < 0:
                continue  # acts on the fixed base
            force, moment = w[:3], w[3:]
            lever = R[body] @ pb     # body origin -> link origin, root-frame axes
            W[body, :3] += R[body].T @ force
            W[body, 3:] += R[body].T @ (moment + np.cross(lever, force))
        return W

    def forward_dynamics(self, q: ArrayLike, qd: ArrayLike, tau: ArrayLike) -> Array:
        """Return q'' = M^-1 (tau - C*(q' kron q') - G); SingularMassMatrixError if M singular."""
        if _is_vector(q) and _is_vector(qd) and _is_vector(tau):
            qdd = np.empty(self._n)
            if native.forward_dynamics(self._ints, self._reals, q, qd, tau, self._zeros, qdd):
                return qdd
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

    def kinetic_energy(self, q: ArrayLike, qd: ArrayLike) -> float | Array:
        """T = 1/2 q'^T M(q) q' (000 eq. 93), armature included (an (N,) array for a batch)."""
        (q, qd), N = self._inputs(q=q, qd=qd)
        M = self.mass_matrix(q)
        if N is not None:
            return 0.5 * np.einsum('ki,kij,kj->k', qd, M, qd)
        return 0.5 * float(qd @ M @ qd)

    def potential_energy(self, q: ArrayLike) -> float | Array:
        """V = -sum m_i g . r_Gi, zero at the root origin; G(q) = dV/dq."""
        (q,), N = self._inputs(q=q)
        if N is not None:
            return self._per_row(self.potential_energy, N, q)
        R, p = forward_kinematics(self.tree, self._internal(q, 'q'))
        coms = com_positions(self.tree, R, p)
        return -float(self.tree.mass @ (coms @ self.tree.gravity))

    def integrate(self, q: ArrayLike, qd: ArrayLike, tau: ArrayLike, dt: float,
                  steps: int = 1, damping: ArrayLike | None = None) -> tuple[Array, Array]:
        """
        Integrate the forward dynamics with fixed-step RK4 (compiled), tau held constant.

        ``damping`` adds viscous joint damping (per joint). Returns (q, qd) after
        ``steps`` steps of ``dt`` s; SingularMassMatrixError if M becomes singular.
        """
        damping = self._zeros if damping is None else self._vector(damping, 'damping')
        (q, qd, tau), N = self._inputs(q=q, qd=qd, tau=tau)
        try:
            dt, steps = float(dt), int(steps)
        except (TypeError, ValueError):
            raise ValueError(f'dt must be a number and steps an integer, got dt={dt!r}, '
                             f'steps={steps!r}') from None
        if not np.isfinite(dt) or steps < 0:
            raise ValueError(f'dt must be finite and steps >= 0, got dt={dt}, steps={steps}')
        if N == 0:      # not evaluated at q = 0 as _per_row would: M(0) may be singular
            return np.empty((0, self._n)), np.empty((0, self._n))
        if N is not None:
            return self._per_row(
                lambda a, b, c: self.integrate(a, b, c, dt, steps, damping), N, q, qd, tau)
        x = np.empty((2, self._n))
        if not native.rk4(self._ints, self._reals, q, qd, tau, damping, dt, steps, x):
            self.forward_dynamics(q, qd, tau)   # raises the descriptive error
            raise SingularMassMatrixError('mass matrix became singular during integration',
                                          list(self.joint_names))
        return x[0], x[1]

    def friction_torque(self, qd: ArrayLike) -> Array:
        """Joint friction from URDF <dynamics>: damping * q' + friction * sign(q')."""
        (v,), N = self._inputs(qd=qd)
        damping = np.array([self.joints[j].damping for j in self.joint_names])
        friction = np.array([self.joints[j].friction for j in self.joint_names])
        return damping * v + friction * np.sign(v)

    def __repr__(self) -> str:
        return f'RobotModel({self.name!r}, n={self.n}, joints={list(self.joint_names)})'
