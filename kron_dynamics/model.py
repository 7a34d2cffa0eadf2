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

"""RobotModel: the facade users call; arrays in and out are in ``model.joint_names`` order."""

from pathlib import Path

import numpy as np

from .algorithms.coriolis_star import christoffel, coriolis_matrix, coriolis_star
from .algorithms.crba import crba
from .algorithms.forward_dynamics import solve_mass_matrix
from .algorithms.jacobians import hessian_r, hessian_t, jacobian_r, jacobian_t
from .algorithms.jsim_explicit import jsim_explicit
from .algorithms.kinematics import com_positions, forward_kinematics, world_axes
from .algorithms.mass_matrix_jacobian import mass_matrix_jacobian
from .errors import ModelError, SingularMassMatrixError
from .kernels import crba_kernel, rk4_kernel, rnea_kernel, tree_args
from .urdf_loader import JointInfo, parse_urdf

MASS_MATRIX_METHODS = {
    'jacobian': mass_matrix_jacobian,   # 000 eq. (95)
    'explicit': jsim_explicit,          # 003 eqs. (30)-(37)
    'crba': crba,                       # composite rigid bodies
}


class RobotModel:
    """
    A fixed-base rigid-body tree with the dynamics of the Kronecker-product papers.

    Build it with :meth:`from_urdf_file`, :meth:`from_urdf_string` or
    :func:`kron_dynamics.dh.model_from_dh`. q, qd, qdd and tau are 1-D arrays of length
    ``n`` in ``joint_names`` order, SI units (rad, m, N m, N).
    """

    def __init__(self, parsed, joint_names=None, armature=None):
        self._parsed = parsed
        self.tree = parsed.tree
        self._args = tree_args(parsed.tree)
        self._no_wrench = np.zeros((0, 6))
        self.name: str = parsed.name
        self.root_link: str = parsed.root_link
        self.total_mass: float = parsed.total_mass
        internal = {name: i for i, name in enumerate(parsed.joint_names)}
        if joint_names is None:
            joint_names = list(parsed.joint_names)
        else:
            if isinstance(joint_names, str) or not hasattr(joint_names, '__iter__'):
                raise ModelError(f'joint_names must be a list of joint names, got {joint_names!r}')
            joint_names = [str(j) for j in joint_names]
            unknown = [j for j in joint_names if j not in internal]
            if unknown:
                raise ModelError(f"joint_names: unknown or non-movable joint(s) {unknown}; "
                                 f'movable joints are {parsed.joint_names}')
            dup = sorted({j for j in joint_names if joint_names.count(j) > 1})
            if dup:
                raise ModelError(f'joint_names: duplicate joint(s) {dup}')
            missing = [j for j in parsed.joint_names if j not in joint_names]
            if missing:
                raise ModelError(f'joint_names: missing movable joint(s) {missing}')
        self.joint_names: list[str] = joint_names
        self._perm = np.array([internal[j] for j in joint_names], dtype=int)
        self.joints: dict[str, JointInfo] = {j: parsed.joints[j] for j in joint_names}
        if armature is None:
            armature = np.zeros(self.n)
        try:
            self.armature = self._vector(armature, 'armature')
        except ValueError as exc:
            raise ModelError(str(exc)) from None
        if np.any(self.armature < 0):
            raise ModelError('armature must be >= 0')

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_urdf_string(cls, xml: str, joint_names=None, gravity=(0.0, 0.0, -9.81),
                         armature=None, source: str = '<string>') -> 'RobotModel':
        """Build a model from URDF text; gravity is a 3-vector in the root link frame."""
        return cls(parse_urdf(xml, source, gravity), joint_names, armature)

    @classmethod
    def from_urdf_file(cls, path, joint_names=None, gravity=(0.0, 0.0, -9.81),
                       armature=None) -> 'RobotModel':
        """Build a model from a URDF file."""
        try:
            xml = Path(path).read_text(encoding='utf-8')
        except (OSError, UnicodeDecodeError) as exc:
            raise ModelError(f'cannot read URDF file {path}: {exc}') from None
        return cls.from_urdf_string(xml, joint_names, gravity, armature, source=str(path))

    # ----------------------------------------------------------------- properties
    @property
    def n(self) -> int:
        """Return the number of joint coordinates."""
        return self.tree.n

    @property
    def gravity(self) -> np.ndarray:
        """Gravity acceleration in the root link frame."""
        return self.tree.gravity.copy()

    @property
    def link_names(self) -> list[str]:
        """All links, including those attached by fixed joints."""
        return list(self._parsed.frames)

    @property
    def effort_limits(self) -> np.ndarray:
        """URDF effort limits per joint (inf where none)."""
        return np.array([self.joints[j].effort for j in self.joint_names])

    def with_gravity(self, gravity) -> 'RobotModel':
        """Return a copy of the model with another gravity vector."""
        g = np.asarray(gravity, dtype=float)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ModelError(f'gravity must be 3 finite numbers, got {gravity!r}')
        parsed = self._parsed.__class__(**{**self._parsed.__dict__,
                                           'tree': self.tree.with_gravity(g)})
        return RobotModel(parsed, self.joint_names, self.armature)

    def with_armature(self, armature) -> 'RobotModel':
        """Return a copy with per-joint armature (rotor inertia added to M's diagonal)."""
        if isinstance(armature, dict):
            unknown = [j for j in armature if j not in self.joints]
            if unknown:
                raise ModelError(f'armature: unknown joint(s) {unknown}')
            armature = [float(armature.get(j, 0.0)) for j in self.joint_names]
        return RobotModel(self._parsed, self.joint_names, armature)

    # ----------------------------------------------------------------- conversions
    def _vector(self, x, name: str) -> np.ndarray:
        try:
            v = np.asarray(x, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f'{name} must be an array of {self.n} numbers') from None
        if v.shape != (self.n,):
            raise ValueError(f'{name} must have shape ({self.n},), got {v.shape}')
        bad = ~np.isfinite(v)
        if bad.any():
            names = [self.joint_names[i] for i in np.nonzero(bad)[0]]
            raise ValueError(f'{name} is not finite at joint(s) {names}')
        return v

    def _internal(self, x, name: str) -> np.ndarray:
        v = np.empty(self.n)
        v[self._perm] = self._vector(x, name)
        return v

    def _cols(self, A: np.ndarray) -> np.ndarray:
        return A[..., self._perm]

    def _square(self, A: np.ndarray) -> np.ndarray:
        return A[np.ix_(self._perm, self._perm)]

    def _cube(self, A: np.ndarray) -> np.ndarray:
        n = self.n
        p = self._perm
        if n == 0:      # no movable joint: reshape(-1, 0, 0, 0) is ambiguous
            return A
        return A.reshape(-1, n, n, n)[:, p][:, :, p][:, :, :, p].reshape(A.shape)

    def _frame(self, link: str):
        try:
            return self._parsed.frames[link]
        except KeyError:
            raise ModelError(f"unknown link '{link}'") from None

    # ----------------------------------------------------------------- kinematics
    def link_pose(self, q, link: str):
        """Return (R, p): orientation and origin of a link frame in the root frame."""
        body, Rb, pb = self._frame(link)
        if body < 0:
            return Rb.copy(), pb.copy()
        R, p = forward_kinematics(self.tree, self._internal(q, 'q'))
        return R[body] @ Rb, p[body] + R[body] @ pb

    def _point(self, q, link, point):
        body, Rb, pb = self._frame(link)
        qi = self._internal(q, 'q')
        R, p = forward_kinematics(self.tree, qi)
        axes = world_axes(self.tree, R)
        offset = pb if point is None else pb + Rb @ np.asarray(point, dtype=float).reshape(3)
        x = (R[body] @ offset + p[body]) if body >= 0 else offset
        return body, x, axes, p

    def jacobians(self, q, link: str, point=None):
        """
        (J_T, J_R), each 3 x n in the root frame, of a link's origin or a point on it.

        ``point`` is expressed in the link frame. 000 eqs. (29), (37), (45).
        """
        body, x, axes, p = self._point(q, link, point)
        return (self._cols(jacobian_t(self.tree, body, x, axes, p)),
                self._cols(jacobian_r(self.tree, body, axes)))

    def hessians(self, q, link: str, point=None):
        """(H_T, H_R), each 3 x n^2: H[:, s*n + k] = dJ[:, s]/dq_k (000 eqs. 5, 51, 60, 67)."""
        body, x, axes, p = self._point(q, link, point)
        JT = jacobian_t(self.tree, body, x, axes, p)
        n = self.n
        perm = self._perm
        HT = hessian_t(self.tree, body, JT, axes).reshape(3, n, n)[:, perm][:, :, perm]
        HR = hessian_r(self.tree, body, axes).reshape(3, n, n)[:, perm][:, :, perm]
        return HT.reshape(3, n * n), HR.reshape(3, n * n)

    # ----------------------------------------------------------------- dynamics
    def mass_matrix(self, q, method: str | None = None) -> np.ndarray:
        """
        Return M(q), n x n, armature included.

        ``method``: None (compiled CRBA, the fast default), 'jacobian' (000 eq. 95),
        'explicit' (003 eqs. 30-37) or 'crba' (readable reference implementations).
        """
        if method is None:
            M = crba_kernel(*self._args, self._internal(q, 'q'))
        else:
            try:
                algorithm = MASS_MATRIX_METHODS[method]
            except KeyError:
                raise ValueError(f"unknown mass-matrix method '{method}'; "
                                 f'choose one of {sorted(MASS_MATRIX_METHODS)}') from None
            M = algorithm(self.tree, self._internal(q, 'q'))
        return self._square(M) + np.diag(self.armature)

    def coriolis_star(self, q) -> np.ndarray:
        """C*(q), n x n^2 (000 eq. 101): C*[i, j*n + k] = dM_ij/dq_k - 1/2 dM_kj/dq_i."""
        return self._cube(coriolis_star(self.tree, self._internal(q, 'q')))

    def christoffel(self, q) -> np.ndarray:
        """Christoffel symbols of the first kind, n x n^2 (reshape(n, n, n) gives [i, j, k])."""
        return self._cube(christoffel(self.tree, self._internal(q, 'q')))

    def coriolis_matrix(self, q, qd) -> np.ndarray:
        """Return the n x n Coriolis matrix C: M' - 2C is skew, C q' = C*(q' kron q')."""
        C = coriolis_matrix(self.tree, self._internal(q, 'q'), self._internal(qd, 'qd'))
        return self._square(C)

    def coriolis_vector(self, q, qd) -> np.ndarray:
        """C*(q)(q' kron q'), by Newton-Euler with no gravity and no acceleration."""
        return self._rnea(q, qd, None, gravity=np.zeros(3))

    def gravity_torque(self, q) -> np.ndarray:
        """G(q) = dV/dq, by Newton-Euler at rest."""
        return self._rnea(q, None, None)

    def bias_torque(self, q, qd) -> np.ndarray:
        """Return C*(q)(q' kron q') + G(q), the torque that holds q'' = 0, by Newton-Euler."""
        return self._rnea(q, qd, None)

    def inverse_dynamics(self, q, qd, qdd, f_ext=None) -> np.ndarray:
        """
        Return tau = M q'' + C*(q' kron q') + G - sum J^T F_ext by Newton-Euler (002).

        ``f_ext`` maps link names to wrenches (fx, fy, fz, mx, my, mz) that the environment
        applies to the link: force at the link frame origin and moment, in root-frame
        coordinates (004 eq. 33).
        """
        tau = self._rnea(q, qd, qdd, f_ext=f_ext)
        return tau + self.armature * self._vector(qdd, 'qdd')

    def _rnea(self, q, qd, qdd, gravity=None, f_ext=None) -> np.ndarray:
        """Compiled Newton-Euler; None for qd or qdd means zeros."""
        qi = self._internal(q, 'q')
        z = np.zeros(self.n)
        qdi = z if qd is None else self._internal(qd, 'qd')
        qddi = z if qdd is None else self._internal(qdd, 'qdd')
        g = self.tree.gravity if gravity is None else gravity
        W = self._external_wrenches(qi, f_ext) if f_ext else self._no_wrench
        return self._cols(rnea_kernel(*self._args, g, qi, qdi, qddi, W))

    def _external_wrenches(self, qi, f_ext):
        if not f_ext:
            return None
        R, p = forward_kinematics(self.tree, qi)
        W = np.zeros((self.n, 6))
        for link, wrench in f_ext.items():
            body, Rb, pb = self._frame(link)
            w = np.asarray(wrench, dtype=float)
            if w.shape != (6,) or not np.all(np.isfinite(w)):
                raise ValueError(f"f_ext['{link}'] must be 6 finite numbers")
            if body < 0:
                continue  # acts on the fixed base
            force, moment = w[:3], w[3:]
            lever = R[body] @ pb     # body origin -> link origin, root-frame axes
            W[body, :3] += R[body].T @ force
            W[body, 3:] += R[body].T @ (moment + np.cross(lever, force))
        return W

    def forward_dynamics(self, q, qd, tau) -> np.ndarray:
        """Return q'' = M^-1 (tau - C*(q' kron q') - G); SingularMassMatrixError if M singular."""
        bias = self._rnea(q, qd, None)
        M = self.mass_matrix(q)
        return solve_mass_matrix(M, self._vector(tau, 'tau') - bias, self.joint_names)

    def kinetic_energy(self, q, qd) -> float:
        """T = 1/2 q'^T M(q) q' (000 eq. 93), armature included."""
        v = self._vector(qd, 'qd')
        return 0.5 * float(v @ self.mass_matrix(q) @ v)

    def potential_energy(self, q) -> float:
        """V = -sum m_i g . r_Gi, zero at the root origin; G(q) = dV/dq."""
        R, p = forward_kinematics(self.tree, self._internal(q, 'q'))
        coms = com_positions(self.tree, R, p)
        return -float(self.tree.mass @ (coms @ self.tree.gravity))

    def integrate(self, q, qd, tau, dt: float, steps: int = 1, damping=None):
        """
        Integrate the forward dynamics with fixed-step RK4 (compiled), tau held constant.

        ``damping`` adds viscous joint damping (per joint). Returns (q, qd) after
        ``steps`` steps of ``dt`` s; SingularMassMatrixError if M becomes singular.
        """
        damping = np.zeros(self.n) if damping is None else self._vector(damping, 'damping')
        arm = self.armature[np.argsort(self._perm)]
        damp = damping[np.argsort(self._perm)]
        tau_i = self._internal(tau, 'tau')
        ok, qn, qdn = rk4_kernel(*self._args, self.tree.gravity, arm, damp,
                                 self._internal(q, 'q'), self._internal(qd, 'qd'), tau_i,
                                 float(dt), int(steps))
        if not ok:
            self.forward_dynamics(q, qd, tau)   # raises the descriptive error
            raise SingularMassMatrixError('mass matrix became singular during integration',
                                          list(self.joint_names))
        return self._cols(qn), self._cols(qdn)

    def friction_torque(self, qd) -> np.ndarray:
        """Joint friction from URDF <dynamics>: damping * q' + friction * sign(q')."""
        v = self._vector(qd, 'qd')
        damping = np.array([self.joints[j].damping for j in self.joint_names])
        friction = np.array([self.joints[j].friction for j in self.joint_names])
        return damping * v + friction * np.sign(v)

    def __repr__(self):
        return f'RobotModel({self.name!r}, n={self.n}, joints={self.joint_names})'
