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
The dynamics written out for one robot: numba-cuda source, one thread per state.

:func:`source` unrolls, over the model's bodies, the recursions of ``algorithms/rnea.py``
(Newton-Euler, 002), ``algorithms/floating_base.py`` (a moving base, 004 app. B) and
``algorithms/crba.py`` (M in the root frame), the readable references; the CPU kernels are
what the tests compare with. Every body's rotation, offset, axis, mass, centre of mass and
inertia become literals, every vector a few scalar locals (registers on the device), and
products with exact zeros are dropped while writing, so that a z-axis joint costs what its
nonzero entries cost. Mimic joints are lifted in the same code (q = B u + d, B's entries as
literals) and results projected back (B^T tau, B^T M B); armature adds to the diagonal.

Kernels, rows = states, columns the model's coordinates (q: nq, with a floating base's
(x, y, z, qx, qy, qz, qw) or a planar one's (x, y, cos, sin) first; v, v', tau: nv):
``rnea(Q, QD, QDD, use_v, use_a, gscale, TAU, BAD)`` (use_v/use_a = 0 read QD/QDD as zeros,
gscale 0 or 1 scales gravity: inverse dynamics, gravity, bias, Coriolis vector),
``mass_matrix(Q, M, BAD)``, ``forward_dynamics(Q, QD, TAU, QDD, BAD)`` (CRBA, Newton-Euler
and a Cholesky solve, or above 12 coordinates M = L^T L along the tree),
``kinematics(Q, P, C, BAD)`` (every link's pose in the world, ``link_names`` order, and the
centre of mass). BAD[row]: 1 a non-finite input, 2 M not positive definite, 3 a base
orientation off unit length; the row's results are NaN. So that few values are live at once
on a large tree (registers, docs/performance.md), the recursions are written depth first,
inputs are read where first used and judged after the body, and results are stored as soon
as they are final (:func:`_kernel`).
"""

import re

import numpy as np

from ..model.coordinates import P_BASE

# |q| of a base quaternion (or (cos, sin)) within this of 1 is normalised, beyond it refused,
# as on the CPU (floating_model.QUATERNION_TOLERANCE)
QUATERNION_TOLERANCE = 1e-3


# a rotation entry below this is the rounding residue of a quarter turn (|cos(pi/2)| = 6e-17)
ROTATION_RESIDUE = 1e-15


def _num(x: float) -> str:
    """Return a float literal that reads back to the same double."""
    return repr(float(x))


class _Writer:
    """Straight-line code with constant folding of exact zeros and ones."""

    def __init__(self):
        self.lines = []
        self.count = 0

    def let(self, expr: str) -> str:
        if _is_literal(expr):
            return expr
        name = f't{self.count}'
        self.count += 1
        self.lines.append(f'    {name} = {expr}')
        return name

    def set(self, name: str, expr: str) -> None:
        self.lines.append(f'    {name} = {expr}')


def _is_literal(x: str) -> bool:
    try:
        float(x)
        return True
    except ValueError:
        return False


def _p(x: str) -> str:
    """Return x parenthesised if it is compound (names and literals have no spaces)."""
    return x if ' ' not in x else f'({x})'


def _mul(a: str, b: str) -> str:
    for x, y in ((a, b), (b, a)):
        if _is_literal(x):
            v = float(x)
            if v == 0.0:
                return '0.0'
            if v == 1.0:
                return y
            if v == -1.0:
                return f'(-{_p(y)})' if not _is_literal(y) else _num(-float(y))
    if _is_literal(a) and _is_literal(b):
        return _num(float(a) * float(b))
    return f'{_p(a)} * {_p(b)}'


def _add(*terms: str) -> str:
    constant = 0.0
    parts = []
    for t in terms:
        if _is_literal(t):
            constant += float(t)
        else:
            parts.append(t)
    if constant != 0.0 or not parts:
        parts.append(_num(constant))
    return ' + '.join(parts) if len(parts) > 1 else parts[0]


def _neg(a: str) -> str:
    return _mul('-1.0', a)


class _Vec:
    """Vector helpers over a writer: each result is bound to locals (3 names or literals)."""

    def __init__(self, w: _Writer):
        self.w = w

    def bind(self, exprs):
        return [self.w.let(e) for e in exprs]

    def add(self, *vs):
        return self.bind([_add(*(v[k] for v in vs)) for k in range(3)])

    def scale(self, v, s: str):
        return self.bind([_mul(s, v[k]) for k in range(3)])

    def cross(self, a, b):
        return self.bind([_add(_mul(a[1], b[2]), _neg(_mul(a[2], b[1]))),
                          _add(_mul(a[2], b[0]), _neg(_mul(a[0], b[2]))),
                          _add(_mul(a[0], b[1]), _neg(_mul(a[1], b[0])))])

    def mv(self, M, v):
        """M v for M a 3 x 3 list of expressions."""
        return self.bind([_add(*(_mul(M[r][k], v[k]) for k in range(3))) for r in range(3)])

    def mtv(self, M, v):
        """M^T v."""
        return self.bind([_add(*(_mul(M[k][c], v[k]) for k in range(3))) for c in range(3)])

    def mm(self, A, B):
        """Return A B of two 3 x 3 lists of expressions."""
        return [[self.w.let(_add(*(_mul(A[a][k], B[k][b]) for k in range(3))))
                 for b in range(3)] for a in range(3)]

    def dot(self, a, b) -> str:
        return self.w.let(_add(*(_mul(a[k], b[k]) for k in range(3))))


def _bound(w: _Writer, x: str) -> str:
    """Return a name or literal as it is (no copy to keep live), else a new local of x."""
    return x if _NAME.fullmatch(x) else w.let(x)


def _literals(a) -> list:
    return [_num(x) for x in np.asarray(a, dtype=float).ravel()]


class _Robot:
    """What the generated code needs of a fixed-base model: tree, joint order, B, d, armature."""

    def __init__(self, model):
        self.name, self.tree = model.name, model.tree
        self.names = list(model.joint_names)
        self.n = len(self.names)
        self.base = model.base
        joints = getattr(model, 'fixed', model)       # a moving base: the joints' model
        # base coordinates in q and v (0 on a fixed base), the base motion's frame, body
        self.nbq, self.nbv = model.nq - model.n, model.nv - model.n
        origin = np.asarray(getattr(model, 'origin', np.eye(4)))
        self.origin, self.origin_p = origin[:3, :3], origin[:3, 3]
        self.root_inertia = model.description.root_inertia
        tree_names = list(model.description.joint_names)
        joint_map = joints._joint_map
        row = {j: k for k, j in enumerate(joint_map.full_names)}
        # B and d with rows in the tree's order
        rows = [row[j] for j in tree_names]
        self.B = np.array(joint_map.B[rows]).reshape(len(tree_names), self.n)
        self.d = np.array(joint_map.d[rows])
        self.armature = np.asarray(joints.armature, dtype=float)
        self._layout = False

    def layout(self):
        """
        Return M's :class:`TreeLayout` (made once), None up to UNROLLED_SOLVE coordinates.

        What every kernel of the robot that solves with M along the tree reads (the same four
        tables, written once per module).
        """
        if self._layout is False:
            nv = self.nbv + self.n
            self._layout = (TreeLayout(self, _mass_matrix_row(self)[2])
                            if nv > UNROLLED_SOLVE else None)
        return self._layout

    def lift(self, w: _Writer, values: list, offset: bool) -> list:
        """
        Return the tree's coordinates (or rates) from the model's (names or literals).

        A joint that is a coordinate itself keeps its name (no copy to hold live): so its
        read can wait for its first use (:func:`_sink`).
        """
        lifted = [_add(*(_mul(_num(self.B[i, k]), values[k]) for k in range(self.n)),
                       _num(self.d[i]) if offset else '0.0') for i in range(self.tree.n)]
        return [_bound(w, x) for x in lifted]

    def project(self, w: _Writer, values: list) -> list:
        """Return B^T x of a tree-order vector x of expressions."""
        return [_bound(w, _add(*(_mul(_num(self.B[i, k]), values[i])
                                 for i in range(self.tree.n)))) for k in range(self.n)]

    def project_matrix(self, w: _Writer, M: dict) -> dict:
        """Return B^T M B + diag(armature) (the model's M) of a tree-order M[(i, j)]."""
        out = {}
        nonzero = [np.nonzero(self.B[:, k])[0] for k in range(self.n)]
        for a in range(self.n):
            for b in range(a + 1):
                terms = [_mul(_num(self.B[i, a] * self.B[j, b]), M[(max(i, j), min(i, j))])
                         for i in nonzero[a] for j in nonzero[b]]
                if a == b:
                    terms.append(_num(self.armature[a]))
                out[(a, b)] = _bound(w, _add(*terms))
        return out


def _rotation(R) -> np.ndarray:
    """
    Return a rotation's entries with the rounding residue of quarter turns made exact zeros.

    A URDF's rpy of pi/2 gives entries of 6.1e-17 (cos(pi/2) in floating point): kept, each
    would be a product in every state's arithmetic for a change of the results in their
    sixteenth digit; as a zero, the product is dropped.
    """
    R = np.array(R, dtype=float)
    R[np.abs(R) < ROTATION_RESIDUE] = 0.0
    return R


def _joint_frame(tree, i: int, qi: str, w: _Writer, V: _Vec):
    """Return (R, p) of body i in its parent at qi: literals folded into expressions."""
    R0 = _rotation(tree.R0[i])
    axis = np.asarray(tree.axis[i], dtype=float)
    if tree.revolute[i]:
        c, s = w.let(f'cos({qi})'), w.let(f'sin({qi})')
        K = R0 @ np.outer(axis, axis)                     # R0 (c I + s [a] + (1 - c) a a^T)
        S = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
        RS = R0 @ S
        R = [[w.let(_add(_num(K[a, b]), _mul(c, _num(R0[a, b] - K[a, b])),
                         _mul(s, _num(RS[a, b])))) for b in range(3)] for a in range(3)]
        return R, _literals(tree.p0[i])
    Ra = R0 @ axis
    return ([[_num(R0[a, b]) for b in range(3)] for a in range(3)],
            V.bind([_add(_num(tree.p0[i][a]), _mul(_num(Ra[a]), qi)) for a in range(3)]))


def _depth_first(tree, outward, inward) -> None:
    """
    Call outward(i) on the way down and inward(i) on the way up, children last first.

    A parent's inward step comes after all its subtrees', so sums into it run over its
    children in descending order, as a pass over the bodies from the last to the first.
    """
    children = [[] for _ in range(tree.n)]
    for i in range(tree.n):
        if tree.parent[i] >= 0:
            children[int(tree.parent[i])].append(i)
    stack = [(i, False) for i in range(tree.n) if tree.parent[i] < 0]   # popped last first
    while stack:
        i, done = stack.pop()
        if done:
            inward(i)
        else:
            outward(i)
            stack.append((i, True))
            stack.extend((c, False) for c in children[i])


def _visited_last(tree) -> tuple:
    """
    Return ({parent: its child :func:`_depth_first` visits last}, [whether i is a leaf]).

    Children are visited last first, so a body's last is its first child (parent -1: the
    first top body).
    """
    last, leaf = {}, [True] * tree.n
    for i in range(tree.n):
        parent = int(tree.parent[i])
        last.setdefault(parent, i)          # bodies in index order: the first child
        if parent >= 0:
            leaf[parent] = False
    return last, leaf


def _newton_euler(tree, w: _Writer, V: _Vec, q: list, qd: list, qdd: list, root: tuple,
                  frames: dict | None = None, parameters=None, root_wrench=None) -> tuple:
    """
    Write the recursion of algorithms/rnea.py depth first; return (tau, f0, m0).

    tau in the tree's order; ``root`` = (w, w', a - g) of the root frame (a fixed base: zeros
    and -g); (f0, m0) is what the top bodies pass to the root (force; moment about its
    origin, root frame), plus ``root_wrench()``'s (the root body's own) where given. Each
    body's outward step (its motion) is written, then its subtrees, last child first, then
    its inward step (tau, its wrench added to its parent's): only the bodies on the current
    path hold live values, so the registers a thread needs grow with the tree's depth, not
    with its size (written outward pass first, every body's wrench is live at once, which
    spills registers on a large tree). A body's own wrench is written as its motion is last
    needed: at once for a leaf, else as its last subtree begins (after that its six wrench
    values stay live instead of its nine of motion, and not at all during its first
    subtree); the root body's likewise as the last top body begins. Each wrench sum adds the
    children's in the order they finish, the body's own before its last child's.
    ``parameters``: body i -> its inertial parameters (m, m c, I about the origin) as
    expressions (:func:`_parameter_wrench`), instead of the tree's as literals.
    """
    frames = {} if frames is None else frames
    motion, F, M = {}, {}, {}
    tau = [None] * tree.n
    wrench0 = [['0.0'] * 3, ['0.0'] * 3]
    last, leaf = _visited_last(tree)
    pending = [root_wrench]                 # the root body's own wrench, not yet added

    def add(i: int, f, m) -> None:
        """Add the wrench (f, m) into body i's (i = -1: the root's) sum."""
        if i < 0:
            wrench0[:] = [V.add(wrench0[0], f), V.add(wrench0[1], m)]
            return
        if i not in F:                      # named accumulators
            F[i] = [f'f{i}_{a}' for a in range(3)]
            M[i] = [f'm{i}_{a}' for a in range(3)]
            for a in range(3):
                w.set(F[i][a], f[a])
                w.set(M[i][a], m[a])
            return
        for a in range(3):
            w.set(F[i][a], _add(F[i][a], f[a]))
            w.set(M[i][a], _add(M[i][a], m[a]))

    def own(i: int) -> None:
        """Add body i's own wrench (the root's: ``root_wrench``'s) into its sum."""
        if i < 0:
            if pending[0] is not None:
                add(-1, *pending[0]())
                pending[0] = None
            return
        Wi, DWi, Ai = motion[i]
        if parameters is not None:
            Fi, Mi = _parameter_wrench(V, parameters(i), Wi, DWi, Ai)
        else:
            com = _literals(tree.com[i])
            inertia = np.asarray(tree.inertia[i])
            inertia = [[_num(inertia[a, b]) for b in range(3)] for a in range(3)]
            ac = V.add(Ai, V.cross(DWi, com), V.cross(Wi, V.cross(Wi, com)))
            Fi = V.scale(ac, _num(tree.mass[i]))
            Mi = V.add(V.mv(inertia, DWi), V.cross(Wi, V.mv(inertia, Wi)), V.cross(com, Fi))
        add(i, Fi, Mi)

    def outward(i: int) -> None:
        parent = int(tree.parent[i])
        if last[parent] == i:               # the parent's motion is last needed here
            own(parent)
        if i not in frames:
            frames[i] = _joint_frame(tree, i, q[i], w, V)
        R, p = frames[i]
        wp, dwp, ap = root if parent < 0 else motion[parent]
        ao = V.mtv(R, V.add(ap, V.cross(dwp, p), V.cross(wp, V.cross(wp, p))))
        win, dwin = V.mtv(R, wp), V.mtv(R, dwp)
        z = _literals(tree.axis[i])
        zqd, zqdd = V.scale(z, qd[i]), V.scale(z, qdd[i])
        if tree.revolute[i]:
            Wi, DWi, Ai = V.add(win, zqd), V.add(dwin, zqdd, V.cross(win, zqd)), ao
        else:
            Wi, DWi = win, dwin
            Ai = V.add(ao, zqdd, V.scale(V.cross(win, zqd), '2.0'))
        motion[i] = (Wi, DWi, Ai)
        if leaf[i]:
            own(i)

    def inward(i: int) -> None:
        R, p = frames[i]
        tau[i] = V.dot(_literals(tree.axis[i]), M[i] if tree.revolute[i] else F[i])
        fp = V.mv(R, F[i])
        add(int(tree.parent[i]), fp, V.add(V.mv(R, M[i]), V.cross(p, fp)))

    _depth_first(tree, outward, inward)
    own(-1)                                 # a base without bodies: its own wrench alone
    return tau, wrench0[0], wrench0[1]


def _parameter_wrench(V: _Vec, parameters: tuple, w, dw, a) -> tuple:
    """
    Return (F, M about the origin) of a body of inertial parameters (m, h = m c, I_o).

    F = m a + dw x h + w x (w x h), M = I_o dw + w x I_o w + h x a: linear in the
    parameters (algorithms/regressor.body_regressor), body frame.
    """
    m, h, I_o = parameters
    F = V.add(V.scale(a, m), V.cross(dw, h), V.cross(w, V.cross(w, h)))
    return F, V.add(V.mv(I_o, dw), V.cross(w, V.mv(I_o, w)), V.cross(h, a))


def _body_wrench(w: _Writer, V: _Vec, mass: float, com, inertia, wb, dwb, ab):
    """Return (F, M) a rigid body needs (algorithms/rnea.rigid_body_wrench), body frame."""
    com = _literals(com)
    inertia = np.asarray(inertia)
    rows = [[_num(inertia[a, b]) for b in range(3)] for a in range(3)]
    ac = V.add(ab, V.cross(dwb, com), V.cross(wb, V.cross(wb, com)))
    F = V.scale(ac, _num(mass))
    return F, V.add(V.mv(rows, dwb), V.cross(wb, V.mv(rows, wb)), V.cross(com, F))


def _root_frame(tree, w: _Writer, V: _Vec, q: list, frames: dict, Rw: dict, pw: dict,
                i: int) -> None:
    """Write body i's (R, p) in the root frame into Rw, pw (its parent's are there)."""
    if i not in frames:
        frames[i] = _joint_frame(tree, i, q[i], w, V)
    R, p = frames[i]
    parent = int(tree.parent[i])
    if parent < 0:
        Rw[i], pw[i] = R, p
    else:
        Rw[i], pw[i] = V.mm(Rw[parent], R), V.add(pw[parent], V.mv(Rw[parent], p))


def _link_frame(V: _Vec, Rw: dict, pw: dict, frame: tuple) -> tuple:
    """Return (R, p) in the root frame of a link: (body, R, p in the body; body -1: root)."""
    body, Rl, pl = frame
    Rl = [[_num(x) for x in row] for row in np.asarray(Rl)]
    if body < 0:
        return Rl, _literals(pl)
    return V.mm(Rw[body], Rl), V.add(pw[body], V.mv(Rw[body], _literals(pl)))


def _composite_rigid_body(tree, w: _Writer, V: _Vec, q: list, frames: dict,
                          column=None) -> tuple:
    """
    Write the CRBA of algorithms/crba.py in the root frame; return (M, top).

    M[(i, j)], i >= j; ``column(j, F_j)``, if given, is called as soon as F_j = I^c_j s_j
    (angular, linear) is known; ``top``: the composite of the bodies on the root, (m, h, I_O)
    (what a moving base carries).

    Each body's spatial inertia about the root origin is kept as (m, h = m c, I_O) (10
    numbers, additive), F = I^c_j s_j as (I_O s_w + h x s_v, s_w x h + m s_v) and
    M_ij = s_i . F_j for i on the path from j to the root. Written depth first, as
    :func:`_newton_euler`: a body's frame and axis, its subtrees (last child first), then its
    column of M and its composite added to its parent's (a top body's to ``top``, in the
    order the top bodies are visited, as Newton-Euler sums what they pass to the root), so
    that only the bodies on the current path hold live values; a body's own inertia is
    written as its frame is last needed (a leaf's at once, else as its last subtree begins),
    so that no composite is live during a body's first subtree.
    """
    n = tree.n
    keys = [(a, b) for a in range(3) for b in range(a + 1)]
    whole = ['0.0', ['0.0'] * 3, {key: '0.0' for key in keys}]     # returned as top
    Rw, pw, S, acc, M = {}, {}, {}, {}, {}
    last, leaf = _visited_last(tree)        # as _newton_euler's: own composites written late

    def add(i: int, m: str, h: list, IO: dict) -> None:
        """Add the inertia (m, h, I_O) into body i's composite (named accumulators)."""
        if i not in acc:
            acc[i] = {'m': f'cm{i}', 'h': [f'ch{i}_{a_}' for a_ in range(3)],
                      'I': {key: f'cI{i}_{key[0]}{key[1]}' for key in keys}}
            w.set(acc[i]['m'], m)
            for a_ in range(3):
                w.set(acc[i]['h'][a_], h[a_])
            for key in keys:
                w.set(acc[i]['I'][key], IO[key])
            return
        pn = acc[i]
        w.set(pn['m'], _add(pn['m'], m))
        for a_ in range(3):
            w.set(pn['h'][a_], _add(pn['h'][a_], h[a_]))
        for key in keys:
            w.set(pn['I'][key], _add(pn['I'][key], IO[key]))

    def own(i: int) -> None:
        """Add body i's own inertia about the root origin into its composite."""
        m = _num(tree.mass[i])
        c = V.add(pw[i], V.mv(Rw[i], _literals(tree.com[i])))
        # I_O = R I_G R^T + m (|c|^2 1 - c c^T), six entries
        IG = np.asarray(tree.inertia[i])
        RI = [[w.let(_add(*(_mul(Rw[i][a_][k], _num(IG[k, b])) for k in range(3))))
               for b in range(3)] for a_ in range(3)]
        cc = V.dot(c, c)
        IO = {}
        for a_ in range(3):
            for b in range(a_ + 1):
                rot = _add(*(_mul(RI[a_][k], Rw[i][b][k]) for k in range(3)))
                shift = _mul(m, _add(cc if a_ == b else '0.0', _neg(_mul(c[a_], c[b]))))
                IO[(a_, b)] = w.let(_add(rot, shift))
        add(i, m, V.scale(c, m), IO)

    def outward(i: int) -> None:
        parent = int(tree.parent[i])
        if parent >= 0 and last[parent] == i:   # its frame is last needed here
            own(parent)
        _root_frame(tree, w, V, q, frames, Rw, pw, i)
        a = V.mv(Rw[i], _literals(tree.axis[i]))
        S[i] = (a, V.cross(pw[i], a)) if tree.revolute[i] else (['0.0'] * 3, a)
        if leaf[i]:
            own(i)

    def inward(j: int) -> None:
        c = acc[j]
        inertia = [[c['I'][(max(a, b), min(a, b))] for b in range(3)] for a in range(3)]
        sw, sv = S[j]
        top = V.add(V.mv(inertia, sw), V.cross(c['h'], sv))
        bottom = V.add(V.cross(sw, c['h']), V.scale(sv, c['m']))
        i = j
        while i >= 0:
            M[(j, i)] = w.let(_add(V.dot(S[i][0], top), V.dot(S[i][1], bottom)))
            i = int(tree.parent[i])
        if column is not None:
            column(j, (top, bottom))
        parent = int(tree.parent[j])
        if parent >= 0:
            add(parent, c['m'], c['h'], c['I'])
        else:       # final: summed now, so that it is not live to the end
            whole[:] = [w.let(_add(whole[0], c['m'])),
                        [w.let(_add(whole[1][a], c['h'][a])) for a in range(3)],
                        {key: w.let(_add(whole[2][key], c['I'][key])) for key in keys}]

    _depth_first(tree, outward, inward)
    for j in range(n):
        for i in range(j):
            M.setdefault((j, i), '0.0')
    return M, tuple(whole)


def _kernel(robot: _Robot, name: str, arguments: str, reads: tuple, body: list, out: list,
            outputs: list, positive_definite: bool = False, early: bool = True) -> list:
    """
    Return a kernel: the row, its loads, ``body`` and the ``out`` lines, then the checks.

    ``reads`` = (header loads, deferred loads) of :func:`_loads`. Each deferred input is read
    just before the first body line that uses it (inputs read at the start would all be
    live, in registers, through the whole kernel), counted if it is not finite and replaced
    by 0 (so that no non-finite value reaches a math function); inputs no body line reads
    are read (and counted) after the body. The checks come after the body, in the order
    BAD 1 (a non-finite input), 3 (a base orientation off unit length), 2 (M not positive
    definite: ``positive_definite``, counted by the body in ``notpd``); a refused row's
    ``outputs`` (entries, or (array, shape) for whole blocks) are NaN. ``early``: each
    ``out`` line (``X[t, ...] = expression``) is written as soon as what it reads is, so that
    no result stays live to the end (a refused row's are overwritten); else after the checks.
    """
    loads, deferred = reads
    checks = _checks(robot, outputs, positive_definite)
    head = head_lines(name, arguments) + (['    notpd = 0'] if positive_definite else []) + loads
    body = _sink(body, deferred)
    if early:
        return finish(head + _hoist(body, out) + checks + ['    BAD[t] = 0'])
    return finish(head + body + checks + ['    BAD[t] = 0'] + out)


def finish(lines: list) -> list:
    """Return a kernel's lines as numba compiles them fast: assigned once, in short blocks."""
    return blocks(single_assignment(lines))


# the counters the checks read (assigned as often as they count; one variable each is cheap)
_COUNTERS = ('nonfinite', 'notpd')
_ANY_ASSIGNMENT = re.compile(r' +(?:([A-Za-z_]\w*) \+?= |for ([A-Za-z_]\w*) in )')
_FOR = re.compile(r'( +)for [A-Za-z_]\w* in .*:')
_USE = re.compile(r'(?<![\w.])[A-Za-z_]\w*')


def single_assignment(lines: list) -> list:
    """
    Return a kernel's lines with each variable of its top level and loops' bodies assigned once.

    A second assignment (an accumulation, ``x = x + y`` or ``x += y``) gets a new name,
    ``x_v1``, ``x_v2``, ..., and the lines after it read that name. numba's SSA pass
    renames every variable assigned more than once by walking the whole kernel once per
    such variable (TALOS's M: 275 of them; its M derivative's loop body: 522); straight-line
    code in this form is left alone. A loop's body is renamed the same way, but for what it
    carries from one pass to the next (read before it is assigned) or shares with the rest of
    the kernel. Variables assigned in a branch or a deeper loop, loop variables and the
    counters the checks read keep their names.
    """
    out = list(lines)
    suites = [(0, len(out), '    ')]
    while suites:
        start, end, indent = suites.pop()
        _single_assignment_of_suite(out, start, end, indent)
        k = start
        while k < end:
            loop = _FOR.fullmatch(out[k])
            if loop is None or loop.group(1) != indent:
                k += 1
                continue
            body = k + 1
            while body < end and out[body].startswith(indent + ' '):
                body += 1
            if body > k + 1:
                suites.append((k + 1, body, re.match(' *', out[k + 1]).group(0)))
            k = body
    return out


def _single_assignment_of_suite(out: list, start: int, end: int, indent: str):
    """Rename in place the second assignments of out[start:end]'s statements at ``indent``."""
    level = re.compile(re.escape(indent) + r'([A-Za-z_]\w*) (\+?=) (.+)')
    taken = {name for line in out for name in _USE.findall(line)}
    kept = set(_COUNTERS) | {name for line in out[:start] + out[end:]
                             for name in _USE.findall(line)}
    assigned = set()
    for line in out[start:end]:
        match = level.fullmatch(line)
        if match is None:
            deeper = _ANY_ASSIGNMENT.match(line)        # a branch's, a loop's (or a loop's own)
            kept |= {deeper.group(1) or deeper.group(2)} if deeper else set()
            reads = _USE.findall(line)
        else:
            reads = _USE.findall(match.group(3)) + [match.group(1)] * (match.group(2) == '+=')
        kept |= set(reads) - assigned                   # read before it is assigned here
        if match:
            assigned.add(match.group(1))
    current, count = {}, {}

    def read(text: str) -> str:
        return _USE.sub(lambda m: current.get(m.group(0), m.group(0)), text)
    for k in range(start, end):
        match = level.fullmatch(out[k])
        if match is None or match.group(1) in kept:
            out[k] = read(out[k])
            continue
        name, operator, expression = match.groups()
        expression = read(expression)
        if operator == '+=':
            expression = f'{current.get(name, name)} + ({expression})'
        if name in count:
            count[name] += 1
            current[name] = f'{name}_v{count[name]}'
            assert current[name] not in taken, current[name]
        else:
            count[name] = 0
        out[k] = f'{indent}{current.get(name, name)} = {expression}'


# a kernel's straight-line code is cut into basic blocks of about this many statements
BLOCK_STATEMENTS = 200
BLOCK_BOUNDARY = 'nonfinite += 0 if t >= 0 else 0     # a block boundary: codegen.blocks'
_SIMPLE = re.compile(r'( +)(?!(?:if|for|else|elif|return|break|continue)\b)\S.*[^:]')


def blocks(lines: list) -> list:
    """
    Return a kernel's lines with a boundary between basic blocks every BLOCK_STATEMENTS.

    numba-cuda's lowering looks, for each variable used only in its own block, through
    that whole block for a second assignment (``_find_singly_assigned_variable``), so that a
    written-out kernel in one block compiles in time quadratic in its length (TIAGo's
    inverse dynamics: 2.5 minutes); many small blocks make its SSA and liveness passes
    quadratic instead (:data:`DEVICE_FUNCTIONS`). The boundary, a conditional expression
    adding 0 either way, goes between two simple statements of the same suite; NVVM folds it
    away (the PTX is the same).
    """
    out, count = [], 0
    for k, line in enumerate(lines):
        before = _SIMPLE.fullmatch(lines[k - 1]) if k else None
        here = _SIMPLE.fullmatch(line)
        if count >= BLOCK_STATEMENTS and before and here and \
                before.group(1) == here.group(1):
            out.append(here.group(1) + BLOCK_BOUNDARY)
            count = 0
        out.append(line)
        count += here is not None
    return out


def head_lines(name: str, arguments: str) -> list:
    """Return a row kernel's first lines: its thread's row t (none past Q's), no bad input."""
    return [f'def {name}({arguments}):',
            '    t = cuda.grid(1)',
            '    if t >= Q.shape[0]:',
            '        return',
            '    nonfinite = 0']


def _checks(robot: _Robot, outputs: list, positive_definite: bool) -> list:
    """Return the checks that end a kernel, in BAD order 1, 3, 2 (:func:`_kernel`)."""
    nan = []
    for o in outputs:
        if isinstance(o, tuple):        # loops over a block of the row
            array, shape = o
            indices = ', '.join(f'i{k}' for k in range(len(shape)))
            for k, size in enumerate(shape):
                nan.append('        ' + '    ' * k + f'for i{k} in range({size}):')
            nan.append('        ' + '    ' * len(shape) + f'{array}[t, {indices}] = nan')
        else:
            nan.append(f'        {o} = nan')
    checks = ['    if nonfinite > 0:', *nan, '        BAD[t] = 1', '        return']
    if robot.base != 'fixed':         # a unit quaternion or (cos, sin), as MovingBase checks
        checks += [f'    if not abs(bnorm - 1.0) <= {_num(QUATERNION_TOLERANCE)}:', *nan,
                   '        BAD[t] = 3', '        return']
    if positive_definite:
        checks += ['    if notpd > 0:', *nan, '        BAD[t] = 2', '        return']
    return checks


_NAME = re.compile(r'[A-Za-z_]\w*')


def _sink(body: list, deferred: list) -> list:
    """Return body with each deferred (name, lines) before the first line reading name."""
    names = {name for name, _ in deferred}
    first = {}
    for index, line in enumerate(body):
        for name in _NAME.findall(line):
            if name in names and name not in first:
                first[name] = index
    before, unread = {}, []
    for name, lines in deferred:
        (before.setdefault(first[name], []) if name in first else unread).extend(lines)
    out = []
    for index, line in enumerate(body):
        out += before.get(index, [])
        out.append(line)
    return out + unread


_ASSIGNED = re.compile(r'    ([A-Za-z_]\w*) \+?= ')


def _hoist(body: list, out: list) -> list:
    """Return body with each output line right after the last assignment of what it reads."""
    last = {}
    for index, line in enumerate(body):
        assigned = _ASSIGNED.match(line)
        if assigned:
            last[assigned.group(1)] = index
    after = {}
    for line in out:
        reads = _NAME.findall(re.split(r' \+?= ', line, maxsplit=1)[1])
        after.setdefault(max((last[x] for x in reads if x in last), default=-1), []).append(line)
    lines = after.get(-1, [])
    for index, line in enumerate(body):
        lines.append(line)
        lines += after.get(index, [])
    return lines


# The device functions of every generated module: kernels read their inputs through them
# (_read), tangent's kernels seed their directions with kronecker_delta (the loop's d-th
# direction). A conditional expression in a kernel's own code is basic blocks and
# a variable assigned in two of them, and numba's SSA and liveness passes walk every block
# once per such variable: TIAGo's (nv = 51) inverse dynamics, with three of them per input,
# took 3 minutes to compile, almost all of it there. A call is one statement; NVVM inlines
# these, so that the machine code is what the expressions gave (ptxas: the same registers).
DEVICE_FUNCTIONS = [
    '@cuda.jit(device=True)',
    'def not_finite(x):',
    '    return 0 if isfinite(x) else 1',
    '',
    '',
    '@cuda.jit(device=True)',
    'def finite_or_zero(x):',
    '    return x if isfinite(x) else 0.0',
    '',
    '',
    '@cuda.jit(device=True)',
    'def read_if(A, t, k, flag):',
    '    return A[t, k] if flag else 0.0',
    '',
    '',
    '@cuda.jit(device=True)',
    'def kronecker_delta(i, j):',
    '    return 1.0 if i == j else 0.0']


def _read(name: str, load: str, counted: bool = True) -> list:
    """
    Return the lines reading one input: counted if not finite, then replaced by 0.

    ``counted=False``: an input read a second time, already counted at its first read.
    Each name is assigned once (the raw value is ``{name}_raw``) and the tests are calls of
    :data:`DEVICE_FUNCTIONS`, so that the reads add no basic blocks (see there).
    """
    if not counted:
        return [f'    {name} = finite_or_zero({load})']
    return [f'    {name}_raw = {load}',
            f'    nonfinite += not_finite({name}_raw)',
            f'    {name} = finite_or_zero({name}_raw)']


def quaternion_rotation(x: str, y: str, z: str, w: str) -> list:
    """Return the rotation matrix of a unit quaternion (x, y, z, w) as expressions."""
    return [[f'1.0 - 2.0 * ({y} * {y} + {z} * {z})', f'2.0 * ({x} * {y} - {z} * {w})',
             f'2.0 * ({x} * {z} + {y} * {w})'],
            [f'2.0 * ({x} * {y} + {z} * {w})', f'1.0 - 2.0 * ({x} * {x} + {z} * {z})',
             f'2.0 * ({y} * {z} - {x} * {w})'],
            [f'2.0 * ({x} * {z} - {y} * {w})', f'2.0 * ({y} * {z} + {x} * {w})',
             f'1.0 - 2.0 * ({x} * {x} + {y} * {y})']]


def _loads(robot: _Robot, w: _Writer, V: _Vec, arrays: dict) -> tuple:
    """
    Write the loads of a row; return ((header loads, deferred loads), joints, base).

    ``arrays``: 'q' -> 'Q', and 'v', 'a' -> (array, flag or None): a flag of 0 reads zeros;
    an array may be a function of the column giving the expression to read instead (None:
    a literal zero, folded away).
    joints: the tree's (q, q', q'') lifted from u; base: None on a fixed base, else
    (rotation R of the base in the world as expressions, v_b, w_b, v_b', w_b') in base axes.
    """
    n, nbq, nbv = robot.n, robot.nbq, robot.nbv
    lines, deferred = [], []

    def rates(prefix: str, key: str, count: int, first: int, later: bool) -> list:
        """
        Read ``count`` columns from ``first`` of the array of ``key`` as prefix{k}.

        Return their names, or literal zeros where no array is given (folded away);
        ``later``: read where first used (the joints), else in the header (the base).
        """
        array, flag = arrays.get(key, (None, None))
        if array is None:
            return ['0.0'] * count
        names = []
        for k in range(count):
            load = array(first + k) if callable(array) else f'{array}[t, {first + k}]'
            if load is None:
                names.append('0.0')
                continue
            if flag:        # 0: zeros, the array not read (a load only where it is 1)
                load = (f'{load} if {flag} else 0.0' if callable(array) else
                        f'read_if({array}, t, {first + k}, {flag})')
            read = _read(f'{prefix}{k}', load)
            if later:
                deferred.append((f'{prefix}{k}', read))
            else:
                lines.extend(read)
            names.append(f'{prefix}{k}')
        return names
    for k in range(n):
        deferred.append((f'u{k}', _read(f'u{k}', f'Q[t, {nbq + k}]')))
    ud, udd = rates('ud', 'v', n, nbv, True), rates('udd', 'a', n, nbv, True)
    base = None
    if robot.base != 'fixed':
        base_rates = {'v': rates('bv', 'v', nbv, 0, False),
                      'a': rates('ba', 'a', nbv, 0, False)}
        orientation = range(3, 7) if robot.base == 'floating' else range(2, 4)
        position = range(3) if robot.base == 'floating' else range(2)
        for k in [*position, *orientation]:   # the origin: only the kinematics read it
            lines.extend(_read(f'b{k}', f'Q[t, {k}]'))
        # a unit quaternion or (cos, sin) within the tolerance, normalised (MovingBase);
        # off it, the row is refused after the body, which runs on the raw values
        names = [f'b{k}' for k in orientation]
        lines.append(f'    bnorm = sqrt({" + ".join(f"{x} * {x}" for x in names)})')
        lines += _unit_scale()
        for x in names:
            w.set(x, f'{x} / bscale')
        if robot.base == 'floating':
            Rq = quaternion_rotation(*names)
            twist = lambda r: (r[0:3], r[3:6])        # noqa: E731
        else:
            c, s_ = names
            Rq = [[c, f'(-{s_})', '0.0'], [s_, c, '0.0'], ['0.0', '0.0', '1.0']]
            twist = lambda r: ([r[0], r[1], '0.0'], ['0.0', '0.0', r[2]])     # noqa: E731
        RO = robot.origin
        R = [[_add(*(_mul(_num(RO[a, k]), Rq[k][b]) for k in range(3))) for b in range(3)]
             for a in range(3)]
        v, dv = twist(base_rates['v']), twist(base_rates['a'])
        xyz = [f'b{k}' for k in position] + ['0.0'] * (3 - len(position))
        # the base origin in the world: the root joint's origin moved by R_O (x, y, z)
        p = [_add(_num(robot.origin_p[a]), *(_mul(_num(RO[a, k]), xyz[k]) for k in range(3)))
             for a in range(3)]
        base = (R, v[0], v[1], dv[0], dv[1], p)
    q = robot.lift(w, [f'u{k}' for k in range(n)], True)
    qd, qdd = robot.lift(w, ud, False), robot.lift(w, udd, False)
    return (lines, deferred), (q, qd, qdd), base


def _gravity_root(robot: _Robot, w: _Writer, V: _Vec, base, scale: str) -> list:
    """Return -g in the root (base) frame, times ``scale``."""
    g = [_mul(_num(-x), scale) for x in robot.tree.gravity]
    if base is None:
        return V.bind(g)
    R = [[w.let(x) for x in row] for row in base[0]]
    return V.mtv(R, g)


def _outputs_vector(robot: _Robot, target: str, base_values: list, joints: list) -> list:
    """Write a row of generalized forces (or accelerations): base entries, then the joints."""
    return ([f'    {target}[t, {k}] = {x}' for k, x in enumerate(base_values)]
            + [f'    {target}[t, {robot.nbv + k}] = {x}' for k, x in enumerate(joints)])


def _planar(robot: _Robot, force, moment) -> list:
    """Return a moving base's generalized forces from its wrench (P_base^T)."""
    if robot.base == 'floating':
        return list(force) + list(moment)
    return [force[0], force[1], moment[2]]


def _rnea_row(robot: _Robot, w: _Writer, V: _Vec, joints, base, gscale: str,
              frames: dict | None = None, parameters=None) -> list:
    """
    Write Newton-Euler of one row; return the model's generalized forces (nv).

    ``parameters``: as :func:`_newton_euler`'s, the base body's at -1.
    """
    q, qd, qdd = joints
    minus_g = _gravity_root(robot, w, V, base, gscale)
    if base is None:
        root = (['0.0'] * 3, ['0.0'] * 3, minus_g)
    else:        # 004 app. B: a = v' + w x v, the base origin's classical acceleration
        _, vb, wb, dvb, dwb, _ = base
        root = (wb, dwb, V.add(dvb, V.cross(wb, vb), minus_g))
    if base is None:
        root_wrench = None
    elif parameters is not None:
        def root_wrench():
            return _parameter_wrench(V, parameters(-1), *root)
    else:
        def root_wrench():
            return _body_wrench(w, V, *robot.root_inertia, *root)
    tau, f0, m0 = _newton_euler(robot.tree, w, V, q, qd, qdd, root, frames, parameters,
                                root_wrench)
    joint_forces = robot.project(w, tau)
    if base is None:
        return joint_forces
    return _planar(robot, f0, m0) + joint_forces


def _mass_matrix_rows(robot: _Robot, w: _Writer, V: _Vec, joints, base, frames) -> dict:
    """Write M of the model (nv x nv, lower triangle as M[(a, b)], a >= b)."""
    nbv, n, tree = robot.nbv, robot.n, robot.tree
    P = P_BASE.get(robot.base)
    out, F = {}, {}
    # a moving base's rows of the joint columns: F_j = (angular, linear) of the tree joints
    # of model coordinate k, projected, P^T (lin, ang) B; written once its last F_j is known
    drives = [np.nonzero(robot.B[:, k])[0] for k in range(n)]
    waiting = {k: set(drives[k].tolist()) for k in range(n)}

    def column(j: int, Fj: tuple) -> None:
        F[j] = Fj
        for k in range(n):
            if j in waiting[k]:
                waiting[k].discard(j)
                if not waiting[k]:
                    rows = [_add(*(_mul(_num(robot.B[i, k]), (F[i][1] + F[i][0])[r])
                                   for i in drives[k])) for r in range(6)]
                    for a in range(nbv):
                        out[(nbv + k, a)] = w.let(_add(*(_mul(_num(P[r, a]), rows[r])
                                                         for r in range(6))))
    Mt, top = _composite_rigid_body(tree, w, V, joints[0], frames,
                                    None if base is None else column)
    Mj = robot.project_matrix(w, Mt)
    if base is None:
        return Mj
    out.update({(nbv + a, nbv + b): x for (a, b), x in Mj.items()})
    # the base rows: the whole composite (base body included) as a spatial inertia, linear
    # first as v = (v_b, w_b): [[m 1, [h]x^T], [[h]x, I_O]]
    mass, com, inertia = robot.root_inertia
    m = w.let(_add(top[0], _num(mass)))
    h = [w.let(_add(top[1][a], _num(mass * com[a]))) for a in range(3)]
    IO = np.asarray(inertia) + mass * (np.dot(com, com) * np.eye(3) - np.outer(com, com))
    Ib = {key: w.let(_add(x, _num(IO[key]))) for key, x in top[2].items()}
    hx = [['0.0', _neg(h[2]), h[1]], [h[2], '0.0', _neg(h[0])], [_neg(h[1]), h[0], '0.0']]
    full = [[None] * 6 for _ in range(6)]
    for a in range(3):
        for b in range(3):
            full[a][b] = m if a == b else '0.0'
            full[3 + a][b] = hx[a][b]                    # [h]x
            full[a][3 + b] = hx[b][a]                    # [h]x^T
            full[3 + a][3 + b] = Ib[(max(a, b), min(a, b))]
    base_block = [[_add(*(_mul(_num(P[r, a] * P[c, b]), full[r][c])
                          for r in range(6) for c in range(6))) for b in range(nbv)]
                  for a in range(nbv)]
    for a in range(nbv):
        for b in range(a + 1):
            out[(a, b)] = w.let(base_block[a][b])
    return out


def _rnea_kernel(robot: _Robot) -> list:
    w = _Writer()
    V = _Vec(w)
    arrays = {'v': ('QD', 'use_v'), 'a': ('QDD', 'use_a')}
    reads, joints, base = _loads(robot, w, V, arrays)
    tau = _rnea_row(robot, w, V, joints, base, 'gscale')
    nbv = robot.nbv
    out = _outputs_vector(robot, 'TAU', [w.let(x) for x in tau[:nbv]],
                          [_add(tau[nbv + k], _mul(_num(robot.armature[k]), f'udd{k}'))
                           for k in range(robot.n)])
    nv = nbv + robot.n
    return _kernel(robot, 'rnea', 'Q, QD, QDD, use_v, use_a, gscale, TAU, BAD', reads, w.lines,
                   out, [f'TAU[t, {k}]' for k in range(nv)])


def _mass_matrix_row(robot: _Robot, arrays: dict | None = None) -> tuple:
    """
    Return (reads, body lines, M[(a, b)] for a >= b, nv) of one row's mass matrix.

    ``arrays``: what else the row reads (:func:`_loads`), q' for the kinetic energy.
    """
    w = _Writer()
    V = _Vec(w)
    reads, joints, base = _loads(robot, w, V, arrays or {})
    M = _mass_matrix_rows(robot, w, V, joints, base, {})
    return reads, w.lines, M, robot.nbv + robot.n


def _mass_matrix_kernel(robot: _Robot) -> list:
    reads, body, M, nv = _mass_matrix_row(robot)
    out = []
    for a in range(nv):
        for b in range(a + 1):
            out.append(f'    M[t, {a}, {b}] = {M[(a, b)]}')
            if a != b:
                out.append(f'    M[t, {b}, {a}] = {M[(a, b)]}')
    return _kernel(robot, 'mass_matrix', 'Q, M, BAD', reads, body, out, [('M', (nv, nv))])


def _packed(row: str, column: str) -> str:
    """Return the index of (row, column), row >= column, in a packed lower triangle."""
    return f'{row} * ({row} + 1) // 2 + {column}'


def _looped_factor(nv: int | str) -> list:
    """
    Return the in-place Cholesky factorization of the packed M in ``chol`` (BAD 2 counted).

    ``nv``: the size, a number or a variable of the kernel (operational_space_inertia's m).
    """
    return [f'    for cj in range({nv}):',
            f'        cd = chol[{_packed("cj", "cj")}]',
            '        for ck in range(cj):',
            f'            cd -= chol[{_packed("cj", "ck")}] * chol[{_packed("cj", "ck")}]',
            '        notpd += 0 if cd > 0.0 else 1',
            '        cd = sqrt(cd if cd > 0.0 else 1.0)',
            f'        chol[{_packed("cj", "cj")}] = cd',
            f'        for ci in range(cj + 1, {nv}):',
            f'            cs = chol[{_packed("ci", "cj")}]',
            '            for ck in range(cj):',
            f'                cs -= chol[{_packed("ci", "ck")}] * chol[{_packed("cj", "ck")}]',
            f'            chol[{_packed("ci", "cj")}] = cs / cd']


def factored_mass_matrix(nv: int, nan: list) -> list:
    """
    Return the lines factoring the row's M[t] = L L^T into the packed ``chol``.

    A row whose M is not positive definite gets ``nan`` (lines writing NaN over its
    results) and BAD 2, and returns.
    """
    return ['    notpd = 0',
            f'    for cj in range({nv}):',
            f'        for ci in range(cj, {nv}):',
            f'            chol[{_packed("ci", "cj")}] = M[t, ci, cj]',
            *_looped_factor(nv),
            '    if notpd > 0:',
            *nan,
            '        BAD[t] = 2',
            '        return']


def _looped_substitution(nv: int | str) -> list:
    """Return rhs <- L^-T L^-1 rhs in loops, L factored in ``chol`` (``nv`` as above)."""
    last = nv - 1 if isinstance(nv, int) else f'{nv} - 1'
    return [f'    for ci in range({nv}):',
            '        cs = rhs[ci]',
            '        for ck in range(ci):',
            f'            cs -= chol[{_packed("ci", "ck")}] * rhs[ck]',
            f'        rhs[ci] = cs / chol[{_packed("ci", "ci")}]',
            f'    for ci in range({last}, -1, -1):',
            '        cs = rhs[ci]',
            f'        for ck in range(ci + 1, {nv}):',
            f'            cs -= chol[{_packed("ck", "ci")}] * rhs[ck]',
            f'        rhs[ci] = cs / chol[{_packed("ci", "ci")}]']


def elimination_tree(M: dict, nv: int) -> list:
    """
    Return parent[k] of M = L^T L factored leaves first: L's row k is k's ancestors' columns.

    ``M[(a, b)]`` (a >= b) as generated, '0.0' where M is zero whatever q. Row k of L, last
    column first, is zero but for the chain parent[k], parent[parent[k]], ... (-1 ends it):
    parent[k] is the last column of row k once rows above it are eliminated, which adds row
    k's other columns to its parent's (Featherstone, "Efficient factorization of the
    joint-space inertia matrix for branched kinematic trees", IJRR 24(6), 2005: no fill-in
    on a tree numbered parents first, where the chain is the coordinate's ancestors; a mimic
    joint's coupling of two branches fills in, and the chain holds it).
    """
    rows = [{b for b in range(k) if M[(k, b)] != '0.0'} for k in range(nv)]
    parent = [-1] * nv
    for k in range(nv - 1, -1, -1):
        if rows[k]:
            parent[k] = max(rows[k])
            rows[parent[k]] |= rows[k] - {parent[k]}
    return parent


def parents_first(robot: _Robot) -> list:
    """
    Return the model's coordinates (v's indices) in the tree's order: a base's, then joints.

    A joint's place is that of the first tree joint it drives (the loader numbers the tree
    parents first), so that M in this order factors leaves first without fill-in
    (:func:`elimination_tree`) whatever order the model gives its joints.
    """
    rows = [int(np.flatnonzero(robot.B[:, k]).min()) for k in range(robot.n)]
    joints = sorted(range(robot.n), key=rows.__getitem__)
    return [*range(robot.nbv), *(robot.nbv + k for k in joints)]


def _tree_tables(parent: list) -> tuple:
    """Return (depth, start): chain lengths, and where each row begins in ``chol``."""
    depth, start = [], []
    for k, p in enumerate(parent):
        depth.append(0 if p < 0 else depth[p] + 1)
        start.append(start[-1] + depth[-2] + 1 if k else 0)
    return depth, start


class TreeLayout:
    """
    M of one robot on its elimination tree's chains, as the looped L^T L solves keep it.

    ``order``: :func:`parents_first`; ``parent`` (:func:`elimination_tree` of M in that
    order), ``depth`` and ``start`` (:func:`_tree_tables`); ``size``:
    the entries stored. ``tables``: the module lines of the four tables; ``arrays``: a
    kernel's lines binding them in constant memory to ``perm``, ``lam``, ``dep``, ``beg``.
    """

    def __init__(self, robot: _Robot, M: dict):
        """Lay out ``M`` (:func:`_mass_matrix_rows`' lower triangle, model order)."""
        nv = robot.nbv + robot.n
        self.order = parents_first(robot)
        self.parent = elimination_tree(self._in_order(M), nv)
        self.depth, self.start = _tree_tables(self.parent)
        self.size = self.start[-1] + self.depth[-1] + 1 if nv else 0
        self.tables = [f'{name} = np.array({values}, dtype=np.int32)' for name, values in
                       (('TREE_ORDER', self.order), ('TREE_PARENT', self.parent),
                        ('TREE_DEPTH', self.depth), ('TREE_START', self.start))]
        self.arrays = [f'    {x} = cuda.const.array_like({y})' for x, y in
                       (('perm', 'TREE_ORDER'), ('lam', 'TREE_PARENT'), ('dep', 'TREE_DEPTH'),
                        ('beg', 'TREE_START'))]

    def _in_order(self, M: dict) -> dict:
        """Return M[(a, b)] (model order, a >= b) with its rows and columns in ``order``."""
        order = self.order
        return {(a, b): M[(max(order[a], order[b]), min(order[a], order[b]))]
                for a in range(len(order)) for b in range(a + 1)}

    def entries(self, M: dict):
        """
        Yield (index in ``chol``, M's expression) of every stored entry, row by row.

        ``M``: a kernel's own M[(a, b)] (model order, a >= b), of this layout's structure:
        its elimination tree this layout's, so that no entry of it lies off the chains.
        """
        own = self._in_order(M)
        if elimination_tree(own, len(self.order)) != self.parent:
            raise AssertionError("codegen: a kernel's M has entries off the tree layout's "
                                 'chains')
        for a in range(len(self.order)):
            b = a
            for e in range(self.depth[a], -1, -1):
                yield self.start[a] + e, own[(a, b)]
                b = self.parent[b]


def tree_tables(tree) -> list:
    """Return a module's lines defining a :class:`TreeLayout`'s tables (none for None)."""
    return ['', '', 'import numpy as np', *tree.tables] if tree is not None else []


def tree_factored_mass_matrix(nv: int, nan: list) -> list:
    """
    Return the lines factoring the row's M[t] = L^T L along the tree into ``chol``.

    M's entries on their chains copied (:class:`TreeLayout`'s ``arrays`` bound before), then
    :func:`_tree_factor`; a row whose M is not positive definite gets ``nan`` and BAD 2, and
    returns (as :func:`factored_mass_matrix`).
    """
    return ['    notpd = 0',
            f'    for ck in range({nv}):',
            '        sk = beg[ck]',
            '        dk = dep[ck]',
            '        rk = perm[ck]',
            '        chol[sk + dk] = M[t, rk, rk]',
            '        ci = ck',
            '        for ce in range(dk - 1, -1, -1):',
            '            ci = lam[ci]',
            '            chol[sk + ce] = M[t, rk, perm[ci]]',
            *_tree_factor(nv, descent=False),
            '    if notpd > 0:',
            *nan,
            '        BAD[t] = 2',
            '        return']


def _tree_descent(indent: str, at: str = 'rhs[{}]', sparse: bool = False) -> list:
    """
    Return row ck's step of L^T y = rhs (``sk``, ``dk`` and its diagonal ``cd`` known).

    ``at``: the vector's entry of a position (``{}``); ``sparse``: its ancestors' updates
    skipped where y_k is zero (a contact's row of J is zero off its body's ancestors).
    """
    inner = indent + '    ' if sparse else indent
    return [f'{indent}cs = {at.format("ck")} / cd',
            f'{indent}{at.format("ck")} = cs',
            *([f'{indent}if cs != 0.0:'] if sparse else []),
            f'{inner}ci = ck',
            f'{inner}for ce in range(dk - 1, -1, -1):',
            f'{inner}    ci = lam[ci]',
            f'{inner}    {at.format("ci")} -= chol[sk + ce] * cs']


def tree_descend(nv: int, indent: str, at: str = 'rhs[{}]', sparse: bool = False) -> list:
    """Return y <- L^-T y, descendants first, L factored by :func:`_tree_factor` (as above)."""
    return [f'{indent}for ck in range({nv - 1}, -1, -1):',
            f'{indent}    sk = beg[ck]',
            f'{indent}    dk = dep[ck]',
            f'{indent}    cd = chol[sk + dk]',
            *_tree_descent(indent + '    ', at, sparse)]


def solve_jacobian_columns(nv: int, tree, rows, width: int, row: str = 'r') -> list:
    """
    Return the lines Y[:, r] = L^-1 J[t, row]^T for r in range(rows) (Y: nv x width).

    ``tree`` None: M = L L^T (:func:`factored_mass_matrix`); else the robot's
    :class:`TreeLayout`: M = L^T L along it (:func:`tree_factored_mass_matrix`), Y = L^-T J^T
    in its order, descendants first, a row's updates skipped where its entry is zero (a
    contact's or a link's row of J is zero off its body's ancestors).
    """
    if tree is None:
        return [f'    for r in range({rows}):                  # Y[:, r] = L^-1 J[{row}]^T',
                f'        for ci in range({nv}):',
                f'            cs = J[t, {row}, ci]',
                '            for ck in range(ci):',
                f'                cs -= chol[{_packed("ci", "ck")}] * Y[ck * {width} + r]',
                f'            Y[ci * {width} + r] = cs / chol[{_packed("ci", "ci")}]']
    return [f'    for r in range({rows}):                  # Y[:, r] = L^-T J[{row}]^T',
            f'        for ci in range({nv}):',
            f'            Y[ci * {width} + r] = J[t, {row}, perm[ci]]',
            *tree_descend(nv, '        ', f'Y[{{}} * {width} + r]', sparse=True)]


def _tree_factor(nv: int, descent: bool) -> list:
    """
    Return M = L^T L in ``chol``, factored leaves first along the tables' chains.

    ``chol`` holds row k of M (parents-first order) on its chain, column j at start[k] +
    depth[j] (depth decreases by one along the chain, so a row's entries are contiguous, its
    diagonal last); ``lam``, ``dep`` and ``beg``: parent, depth and start
    (:class:`TreeLayout`). Featherstone, RBDA sec. 6.5: no fill-in beyond the chains; with
    ``descent`` each row is followed by its step of L^T y = rhs, as the CPU's ``ltl_steps``
    (the same operations in its order). A pivot that is not positive is counted (``notpd``,
    BAD 2) and 1 taken for it.
    """
    return [f'    for ck in range({nv - 1}, -1, -1):',
            '        sk = beg[ck]',
            '        dk = dep[ck]',
            '        cd = chol[sk + dk]',
            '        notpd += 0 if cd > 0.0 else 1',
            '        cd = sqrt(cd if cd > 0.0 else 1.0)',
            '        chol[sk + dk] = cd',
            '        for ce in range(dk):',
            '            chol[sk + ce] /= cd',
            '        ci = ck',
            '        for ce in range(dk - 1, -1, -1):',
            '            ci = lam[ci]',
            '            si = beg[ci]',
            '            lki = chol[sk + ce]',
            '            for cj in range(ce + 1):',
            '                chol[si + cj] -= lki * chol[sk + cj]',
            *(_tree_descent('        ') if descent else [])]


def _tree_substitution(nv: int, indent: str, descent: bool, store: list) -> list:
    """
    Return rhs <- L^-1 rhs (ancestors first), after L^-T rhs (descendants first) if ``descent``.

    L factored by :func:`_tree_factor`; ``store``: lines after each x_k = ``cx`` is final
    (at ``indent`` + 4). The operations of the CPU's ``tree_solve_into`` in their order.
    """
    ascent = [f'{indent}for ck in range({nv}):',
              f'{indent}    sk = beg[ck]',
              f'{indent}    dk = dep[ck]',
              f'{indent}    cs = rhs[ck]',
              f'{indent}    ci = ck',
              f'{indent}    for ce in range(dk - 1, -1, -1):',
              f'{indent}        ci = lam[ci]',
              f'{indent}        cs -= chol[sk + ce] * rhs[ci]',
              f'{indent}    cx = cs / chol[sk + dk]',
              f'{indent}    rhs[ck] = cx',
              *(f'{indent}    {line}' for line in store)]
    return (tree_descend(nv, indent) if descent else []) + ascent


def _bracket_lines(x: list, m: list, out: str) -> list:
    """Return lines binding out0..out5 to ad_x m of two twists (linear first), as _bracket."""
    vx, wx, mv, mw = x[:3], x[3:], m[:3], m[3:]

    def cross(a, b, i):
        j, k = (i + 1) % 3, (i + 2) % 3
        return f'{a[j]} * {b[k]} - {a[k]} * {b[j]}'
    return ([f'    {out}{i} = ({cross(wx, mv, i)}) + ({cross(vx, mw, i)})' for i in range(3)]
            + [f'    {out}{3 + i} = {cross(wx, mw, i)}' for i in range(3)])


def _stage_kernel(robot: _Robot) -> list:
    """
    Return ``rk_stage(W, A, XI, h, TAU, DAMP, VS, XN, F, BAD)``: one RKMK4 stage's updates.

    The CPU's ``kernels.floating_base._rkmk_stage`` before its integrate and forward dynamics:
    VS = W + h A, XN = dexp^-1(h XI, VS) (a moving base's block VS + [h XI, VS] / 2 +
    [h XI, [h XI, VS]] / 12, the joints VS itself; a fixed base's XN = VS), and the force
    F = TAU - DAMP VS. h = 0 gives the first stage's force (VS = W).
    """
    nv = robot.nbv + robot.n
    lines = ['def rk_stage(W, A, XI, h, TAU, DAMP, VS, XN, F, BAD):',
             '    t = cuda.grid(1)',
             '    if t >= W.shape[0]:',
             '        return',
             f'    for k in range({nv}):',
             '        vs = W[t, k] + h * A[t, k]',
             '        VS[t, k] = vs',
             '        XN[t, k] = vs',
             '        F[t, k] = TAU[t, k] - DAMP[k] * vs']
    if robot.base != 'fixed':
        six = ([0, 1, None, None, None, 2] if robot.base == 'planar' else list(range(6)))
        x = [f'h * XI[t, {k}]' if k is not None else '0.0' for k in six]
        m = [f'VS[t, {k}]' if k is not None else '0.0' for k in six]
        lines += _bracket_lines(x, m, 'a')
        lines += _bracket_lines(x, [f'a{i}' for i in range(6)], 'b')
        lines += [f'    XN[t, {k}] = VS[t, {k}] + 0.5 * a{i} + b{i} / 12.0'
                  for i, k in enumerate(six) if k is not None]
    return lines + ['    BAD[t] = 0']


def _finish_kernel(nv: int) -> list:
    """Return ``rk_finish(W, X2, X3, X4, A1, A2, A3, A4, dt, XI, WN, BAD)``: RKMK4's sums."""
    return ['def rk_finish(W, X2, X3, X4, A1, A2, A3, A4, dt, XI, WN, BAD):',
            '    t = cuda.grid(1)',
            '    if t >= W.shape[0]:',
            '        return',
            f'    for k in range({nv}):',
            '        XI[t, k] = (W[t, k] + 2.0 * X2[t, k] + 2.0 * X3[t, k] + X4[t, k]) / 6.0',
            '        WN[t, k] = W[t, k] + dt / 6.0 * (A1[t, k] + 2.0 * A2[t, k] + 2.0 * A3[t, k]'
            ' + A4[t, k])',
            '    BAD[t] = 0']


def _task_inertia_kernel(robot: _Robot) -> list:
    """
    Return ``task_inertia(M, J, row0, damping, rcond, OUT, BAD)``: (J M^-1 J^T + d^2 E)^-1.

    The CPU's ``kernels.forward_dynamics.task_inertia`` per row, m = OUT.shape[1] task rows of
    J from row0: M = L L^T (not positive definite: BAD 2), Y = L^-1 J^T, A = Y^T Y + d^2 E
    (above ``UNROLLED_SOLVE`` coordinates M = L^T L along the tree, :meth:`_Robot.layout`,
    and Y = L^-T J^T in its order, descendants first: the same A);
    refused (BAD 4, NaN) where A's smallest eigenvalue is at most rcond times its largest
    (cyclic Jacobi rotations until the off-diagonal is below 1e-17 of A's norm: eigenvalues
    to rounding of the largest, as LAPACK's); then A^-1 by Cholesky, column by column.
    """
    nv, tree = robot.nbv + robot.n, robot.layout()
    size = tree.size if tree is not None else nv * (nv + 1) // 2
    nan = ['        for ci in range(m):', '            for cj in range(m):',
           '                OUT[t, ci, cj] = nan']
    factor = (factored_mass_matrix(nv, nan) if tree is None
              else [*tree.arrays, *tree_factored_mass_matrix(nv, nan)])
    solve = [*factor, *solve_jacobian_columns(nv, tree, 'm', 6, 'row0 + r')]
    return ['def task_inertia(M, J, row0, damping, rcond, OUT, BAD):',
            '    t = cuda.grid(1)',
            '    if t >= M.shape[0]:',
            '        return',
            '    m = OUT.shape[1]',
            f'    chol = cuda.local.array({max(size, 21)}, real)',
            f'    rhs = cuda.local.array({max(nv, 6)}, real)',
            f'    Y = cuda.local.array({max(6 * nv, 1)}, real)',
            '    A = cuda.local.array(36, real)',
            '    E = cuda.local.array(36, real)',
            *solve,
            '    scale = 0.0',
            '    for r in range(m):                  # A = Y^T Y + d^2 E, and a copy E',
            '        for s in range(r + 1):',
            '            cs = damping * damping if s == r else 0.0',
            f'            for ci in range({nv}):',
            '                cs += Y[ci * 6 + r] * Y[ci * 6 + s]',
            '            A[r * 6 + s] = cs',
            '            A[s * 6 + r] = cs',
            '            E[r * 6 + s] = cs',
            '            E[s * 6 + r] = cs',
            '            scale += cs * cs if s == r else 2.0 * cs * cs',
            '    for sweep in range(60):             # cyclic Jacobi: E -> diag(eigenvalues)',
            '        off = 0.0',
            '        for r in range(m):',
            '            for s in range(r):',
            '                off += E[r * 6 + s] * E[r * 6 + s]',
            '        if not off > 1e-34 * scale:',
            '            break',
            '        for p in range(m):',
            '            for p2 in range(p + 1, m):',
            '                apq = E[p * 6 + p2]',
            '                if abs(apq) <= 1e-150 * (abs(E[p * 6 + p]) + abs(E[p2 * 6 + p2])):',
            '                    E[p * 6 + p2] = 0.0         # negligible (|theta| bounded)',
            '                    E[p2 * 6 + p] = 0.0',
            '                else:',
            '                    theta = (E[p2 * 6 + p2] - E[p * 6 + p]) / (2.0 * apq)',
            '                    at = abs(theta)             # tan of the angle, the smaller root',
            '                    tr = 1.0 / (at + sqrt(at * at + 1.0))',
            '                    tr = tr if theta >= 0.0 else -tr',
            '                    co = 1.0 / sqrt(tr * tr + 1.0)',
            '                    si = tr * co',
            '                    for k in range(m):          # E J, then J^T (E J)',
            '                        ekp, ekq = E[k * 6 + p], E[k * 6 + p2]',
            '                        E[k * 6 + p] = co * ekp - si * ekq',
            '                        E[k * 6 + p2] = si * ekp + co * ekq',
            '                    for k in range(m):',
            '                        epk, eqk = E[p * 6 + k], E[p2 * 6 + k]',
            '                        E[p * 6 + k] = co * epk - si * eqk',
            '                        E[p2 * 6 + k] = si * epk + co * eqk',
            '    low, high = E[0], E[0]',
            '    for r in range(1, m):',
            '        low = E[r * 6 + r] if E[r * 6 + r] < low else low',
            '        high = E[r * 6 + r] if E[r * 6 + r] > high else high',
            '    if not (high > 0.0 and low > rcond * high):',
            *nan,
            '        BAD[t] = 4',
            '        return',
            '    for cj in range(m):                 # A = La La^T, in chol',
            '        for ci in range(cj, m):',
            f'            chol[{_packed("ci", "cj")}] = A[ci * 6 + cj]',
            *_looped_factor('m'),
            '    if notpd > 0:',
            *nan,
            '        BAD[t] = 4',
            '        return',
            '    for cc in range(m):                 # A^-1, column by column',
            '        for ci in range(m):',
            '            rhs[ci] = 1.0 if ci == cc else 0.0',
            *('    ' + line for line in _looped_substitution('m')),
            '        for ci in range(m):',
            '            OUT[t, ci, cc] = rhs[ci]',
            '    BAD[t] = 0']


# the largest nv whose Cholesky solve is written out; above it, M is stored as it is computed
# into a per-thread (local memory) array, each row on its ancestors' columns, and factored
# L^T L in loops along the tree (_tree_factor). ptxas -v (sm_90): chains of 10 and 12 joints
# spill alike written out or in a dense looped Cholesky (their recursions do), a 12-DOF tree
# less written out; solo12 on a free flyer (nv = 18) spills 2.5 kB per thread written out and
# nothing looped (densely or along the tree), and TALOS's written-out solve takes minutes to
# compile (bench_gpu --registers)
UNROLLED_SOLVE = 12


def _forward_dynamics_kernel(robot: _Robot) -> list:
    """
    Write q'' = M^-1 (tau - h): M by CRBA, h by Newton-Euler, then a solve.

    Up to UNROLLED_SOLVE coordinates the Cholesky M = L L^T written out; above, M = L^T L
    factored leaves first in loops along its elimination tree (:func:`_tree_factor`).
    """
    w = _Writer()
    V = _Vec(w)
    nv = robot.nbv + robot.n
    reads, joints, base = _loads(robot, w, V, {'v': ('QD', None)})
    reads[1].extend((f'f{k}_in', _read(f'f{k}_in', f'TAU[t, {k}]')) for k in range(nv))
    frames = {}
    h = _rnea_row(robot, w, V, joints, base, '1.0', frames)
    if nv > UNROLLED_SOLVE:
        # A large tree's joint frames are computed again for M, from q read again after
        # tau - h is stored into QDD: the compiler cannot tell that QDD is not Q, so it
        # cannot share Newton-Euler's frames (every joint's, live from one pass through the
        # other, which it would otherwise make of the same expressions of the same reads)
        again = [f'uq{k}' for k in range(robot.n)]
        reads[1].extend((name, _read(name, f'Q[t, {robot.nbq + k}]', counted=False))
                        for k, name in enumerate(again))
        M = _mass_matrix_rows(robot, w, V, (robot.lift(w, again, True), *joints[1:]), base,
                              {})
        # M parents first, on its elimination tree's chains (TreeLayout), stored as it is
        # computed
        tree = robot.layout()
        stores = [f'    chol[{i}] = {x}' for i, x in tree.entries(M)]
        stores += [f'    QDD[t, {i}] = {_add(f"f{i}_in", _neg(h[i]))}' for i in range(nv)]
        body = ([f'    chol = cuda.local.array({tree.size}, real)',
                 f'    rhs = cuda.local.array({nv}, real)', *tree.arrays]
                + _hoist(w.lines, stores)
                + [f'    for ci in range({nv}):', '        rhs[ci] = QDD[t, perm[ci]]']
                + _tree_factor(nv, descent=True)
                + _tree_substitution(nv, '    ', False, ['QDD[t, perm[ck]] = cx']))
        return _kernel(
            robot, 'forward_dynamics', 'Q, QD, TAU, QDD, BAD', reads, body, [],
            [f'QDD[t, {k}]' for k in range(nv)], positive_definite=True)
    M = _mass_matrix_rows(robot, w, V, joints, base, frames)
    # Cholesky M = L L^T, then L y = tau - h, L^T x = y
    L = {}
    for j in range(nv):
        diagonal = w.let(_add(M[(j, j)], *(_neg(_mul(L[(j, k)], L[(j, k)])) for k in range(j))))
        w.lines.append(f'    notpd += 0 if {diagonal} > 0.0 else 1')     # the row: BAD 2
        L[(j, j)] = w.let(f'sqrt({diagonal} if {diagonal} > 0.0 else 1.0)')
        for i in range(j + 1, nv):
            below = _add(M[(i, j)], *(_neg(_mul(L[(i, k)], L[(j, k)])) for k in range(j)))
            L[(i, j)] = w.let(f'{_p(below)} / {L[(j, j)]}')
    y = []
    for i in range(nv):
        rest = _add(f'f{i}_in', _neg(h[i]), *(_neg(_mul(L[(i, k)], y[k])) for k in range(i)))
        y.append(w.let(f'{_p(rest)} / {L[(i, i)]}'))
    x = [None] * nv
    for i in range(nv - 1, -1, -1):
        rest = _add(y[i], *(_neg(_mul(L[(k, i)], x[k])) for k in range(i + 1, nv)))
        x[i] = w.let(f'{_p(rest)} / {L[(i, i)]}')
    out = [f'    QDD[t, {k}] = {x[k]}' for k in range(nv)]
    return _kernel(robot, 'forward_dynamics', 'Q, QD, TAU, QDD, BAD', reads, w.lines, out,
                   [f'QDD[t, {k}]' for k in range(nv)], positive_definite=True)


def center_of_mass_bodies(robot: _Robot) -> tuple:
    """Return (include_root, mass) of the GPU's centre of mass: the CPU's default bodies."""
    # a fixed base leaves the mass welded to the root out of the CoM (as its CPU default)
    include_root = robot.base != 'fixed'
    mass = float(np.sum(robot.tree.mass)) + (robot.root_inertia[0] if include_root else 0.0)
    return include_root, mass


def _kinematics_kernel(robot: _Robot, links: list, frames_of: dict, energy: bool = False
                       ) -> list:
    """
    Return ``kinematics(Q, P, C, BAD)``: every link's pose (world) and the CoM.

    With ``energy``, ``potential(Q, E, BAD)`` instead: no poses (``links`` empty), the
    potential energy -m g . c of the CoM c (000 eq. 94; 0 if nothing has mass).
    """
    reads, body, out, com = kinematics_row(robot, links, frames_of)
    _, mass = center_of_mass_bodies(robot)
    if energy:
        g = robot.tree.gravity
        weight = _add(*(_mul(_num(g[a]), com[a]) for a in range(3)))
        out = [f'    E[t] = {_mul(_num(-mass), weight) if mass != 0.0 else "0.0"}']
        return _kernel(robot, 'potential', 'Q, E, BAD', reads, body, out, ['E[t]'])
    out += [f'    C[t, {a}] = {com[a]}' for a in range(3)]
    return _kernel(robot, 'kinematics', 'Q, P, C, BAD', reads, body, out,
                   [('P', (len(links), 4, 4)), ('C', (3,))])


def kinematics_row(robot: _Robot, links: list, frames_of: dict, bodies: list | None = None
                   ) -> tuple:
    """
    Return (reads, body, pose stores, CoM) of the poses of ``links`` (world) and the CoM.

    ``bodies``: a list that gets (mass, centre of mass, rotation, inertia about the centre of
    mass in body axes) of each of the CoM's bodies, world frame (what the centroidal
    momentum sums).

    The CoM of :func:`center_of_mass_bodies`' bodies, world frame (a moving base's pose
    first). Body by body in the tree's order (the loader's: depth first, parents first): a
    body's frame in the root frame, then the poses of its links and its term of the CoM
    sum, so that only the frames on the path to the current body stay live (all of them
    did when the poses and the sum came after the last frame).
    """
    include_root, mass = center_of_mass_bodies(robot)
    w = _Writer()
    V = _Vec(w)
    reads, joints, base = _loads(robot, w, V, {})
    if base is not None:
        Rb = [[w.let(x) for x in row] for row in base[0]]
        pb = V.bind(base[5])
    tree = robot.tree
    out, Rw, pw, frames = [], {}, {}, {}

    def world(R, p):
        return (R, p) if base is None else (V.mm(Rb, R), V.add(pb, V.mv(Rb, p)))

    def poses(body: int) -> None:
        for index, link in enumerate(links):
            if frames_of[link][0] != body:
                continue
            R, p = world(*_link_frame(V, Rw, pw, frames_of[link]))
            for a in range(3):
                out.extend(f'    P[t, {index}, {a}, {b}] = {R[a][b]}' for b in range(3))
                out.append(f'    P[t, {index}, {a}, 3] = {p[a]}')
            out.extend(f'    P[t, {index}, 3, {b}] = {0.0 if b < 3 else 1.0}' for b in range(4))
    # centre of mass: sum m (p + R c) / total, root frame (the root's own mass as asked); the
    # terms are summed as they come, literals last, as _add would sum them in one expression
    sums, constant = [None] * 3, [0.0] * 3
    poses(-1)
    for i in range(tree.n):
        _root_frame(tree, w, V, joints[0], frames, Rw, pw, i)
        poses(i)
        term = V.add(pw[i], V.mv(Rw[i], _literals(tree.com[i])))
        if bodies is not None:
            bodies.append((float(tree.mass[i]), *world(Rw[i], term)[::-1], tree.inertia[i]))
        for a in range(3):
            x = _mul(_num(tree.mass[i]), term[a])
            if _is_literal(x):
                constant[a] += float(x)
            else:
                sums[a] = _p(x) if sums[a] is None else w.let(f'{sums[a]} + {_p(x)}')
    root = ([_num(robot.root_inertia[0] * robot.root_inertia[1][a]) for a in range(3)]
            if include_root else ['0.0'] * 3)
    moment = [_add(*([] if sums[a] is None else [sums[a]]), _num(constant[a] + float(root[a])))
              for a in range(3)]
    com = V.scale(V.bind(moment), _num(1.0 / mass) if mass > 0 else 'nan')
    identity = [[_num(float(a == b)) for b in range(3)] for a in range(3)]
    _, com = world(identity, com)
    if bodies is not None and include_root:
        m, c, inertia = robot.root_inertia
        bodies.append((float(m), *world(identity, _literals(c))[::-1], inertia))
    return reads, w.lines, out, com


# reference frames of a Jacobian, as the CPU kernels number them (kernels/layout.py)
WORLD, LOCAL, LOCAL_WORLD_ALIGNED = 0, 1, 2


_FLOAT = re.compile(r'(?<![\w.])(\d+\.\d*(?:e[-+]?\d+)?|\d+e[-+]?\d+)')


def single_precision(source: str) -> str:
    """
    Return generated source computing in float32: every float literal cast to float32.

    With float32 arrays and literals, numba keeps every operation in single precision (a
    float64 literal would promote it); math's cos, sin and sqrt of a float32 are float32.
    """
    body = _FLOAT.sub(r'f32(\1)', source).replace('float64 as real', 'float32 as real', 1)
    return body.replace('from numba import cuda', 'from numba import cuda\nfrom numpy import '
                        'float32 as f32', 1)


def jacobian_source(model, link: str) -> str:
    """
    Return the numba-cuda source of ``jacobian(Q, px, py, pz, frame, J, BAD)`` for one link.

    J (N, 6, nv), rows linear then angular, of the point (px, py, pz) (link axes) of the
    link: columns 000 eq. 29, 37 in the root frame (a x (p - p_j) and a for a revolute joint
    j on the link's path, (a, 0) for a prismatic one), projected with B; a moving base adds
    its columns (R_b (v_b + w_b x r), R_b w_b) and turns the rest into the world. ``frame``:
    LOCAL_WORLD_ALIGNED (world axes at the point), WORLD (Pinocchio's: the velocity of the
    point at the world origin, v + p x w) or LOCAL (the link's axes).
    """
    robot, reads, body, columns, _ = _jacobian_row(model, link)
    nv = robot.nbv + robot.n
    out = []
    for c in range(nv):
        for r in range(3):
            out += [f'    if frame == {WORLD}:',
                    f'        J[t, {r}, {c}] = {columns[c][WORLD][r]}',
                    f'        J[t, {3 + r}, {c}] = {columns[c][WORLD][3 + r]}',
                    f'    elif frame == {LOCAL}:',
                    f'        J[t, {r}, {c}] = {columns[c][LOCAL][r]}',
                    f'        J[t, {3 + r}, {c}] = {columns[c][LOCAL][3 + r]}',
                    '    else:',
                    f'        J[t, {r}, {c}] = {columns[c][LOCAL_WORLD_ALIGNED][r]}',
                    f'        J[t, {3 + r}, {c}] = {columns[c][LOCAL_WORLD_ALIGNED][3 + r]}']
    lines = ['# Generated by kron_dynamics.gpu.codegen for one robot and link: do not edit.',
             f'# robot {robot.name!r}, link {link!r}',
             'from math import cos, isfinite, nan, sin, sqrt',
             '',
             'from numba import cuda',
             '',
             '',
             *DEVICE_FUNCTIONS,
             '',
             '']
    lines += _kernel(robot, 'jacobian', 'Q, px, py, pz, frame, J, BAD', reads, body, out,
                     [('J', (6, nv))], early=False)
    return '\n'.join(lines) + '\n'


def _jacobian_row(model, link: str) -> tuple:
    """
    Return (robot, reads, body lines, columns, R) of a link's Jacobian (:func:`jacobian_source`).

    columns[c][frame]: the six expressions of column c in each frame (linear, then angular);
    R: the link's rotation in the world (3 x 3 expressions).
    """
    robot = _Robot(model)
    tree = robot.tree
    w = _Writer()
    V = _Vec(w)
    reads, joints, base = _loads(robot, w, V, {})
    q = joints[0]
    body = model.description.frames[link][0]
    path = []
    i = body
    while i >= 0:
        path.append(i)
        i = int(tree.parent[i])
    path.reverse()
    Rw, pw, frames = {}, {}, {}
    for i in path:          # forward kinematics along the link's path only
        _root_frame(tree, w, V, q, frames, Rw, pw, i)
    RL, pL = _link_frame(V, Rw, pw, model.description.frames[link])
    point = V.add(pL, V.mv(RL, ['px', 'py', 'pz']))          # root frame
    columns = {}                     # tree joint -> (linear, angular), root frame
    for i in path:
        a = V.mv(Rw[i], _literals(tree.axis[i]))
        if tree.revolute[i]:
            columns[i] = (V.cross(a, V.add(point, V.scale(pw[i], '-1.0'))), a)
        else:
            columns[i] = (a, ['0.0'] * 3)
    nbv, n = robot.nbv, robot.n
    J = {}                            # model column -> (linear, angular)
    for k in range(n):
        J[nbv + k] = tuple(V.bind([_add(*(_mul(_num(robot.B[i, k]), columns[i][part][r])
                                          for i in path)) for r in range(3)])
                           for part in (0, 1))
    if base is not None:
        Rb = [[w.let(x) for x in row] for row in base[0]]
        for k in range(n):
            J[nbv + k] = (V.mv(Rb, J[nbv + k][0]), V.mv(Rb, J[nbv + k][1]))
        # the base twist (v_b, w_b), base axes: the point moves with R_b (v_b + w_b x r)
        twist_columns = []
        for c in range(6):
            e = ['1.0' if c == r else '0.0' for r in range(6)]
            lin = V.add(e[:3], V.cross(e[3:], point))
            twist_columns.append((V.mv(Rb, lin), V.mv(Rb, e[3:])))
        P = P_BASE[robot.base]
        for b in range(nbv):
            J[b] = tuple(V.bind([_add(*(_mul(_num(P[c, b]), twist_columns[c][part][r])
                                        for c in range(6))) for r in range(3)])
                         for part in (0, 1))
        pworld = V.add(V.bind(base[5]), V.mv(Rb, point))
        Rworld = V.mm(Rb, RL)
    else:
        pworld, Rworld = point, RL
    columns = []
    for c in range(nbv + n):
        lin, ang = J[c]
        world = V.add(lin, V.cross(pworld, ang))           # v + p x w
        local = (V.mtv(Rworld, lin), V.mtv(Rworld, ang))
        columns.append({WORLD: world + ang, LOCAL: local[0] + local[1],
                        LOCAL_WORLD_ALIGNED: lin + ang})
    return robot, reads, w.lines, columns, Rworld


def source(model) -> str:
    """
    Return the numba-cuda source of a model's main kernels (one module per robot).

    ``rnea(Q, QD, QDD, use_v, use_a, gscale, TAU, BAD)``, ``mass_matrix(Q, M, BAD)``,
    ``forward_dynamics(Q, QD, TAU, QDD, BAD)``, ``kinematics``, ``kinetic``, ``integrate``,
    ``difference``, ``potential``, ``task_inertia``, ``rk_stage`` and ``rk_finish`` (the
    signatures: ``gpu.SIGNATURES``);
    ``model``: a RobotModel on any base (mimic joints included), whose tree, joint order,
    coupling and armature are written in.
    """
    robot = _Robot(model)
    lines = ['# Generated by kron_dynamics.gpu.codegen for one robot: do not edit.',
             f'# robot {robot.name!r}, joints {robot.names}',
             'from math import atan2, cos, isfinite, nan, sin, sqrt, tan',
             '',
             '',
             'from numba import cuda',
             'from numba import float64 as real',
             '',
             '',
             *DEVICE_FUNCTIONS]
    lines += tree_tables(robot.layout())   # M along the tree: the solves' tables
    for kernel in (_rnea_kernel, _mass_matrix_kernel, _forward_dynamics_kernel):
        lines += ['', ''] + kernel(robot)
    lines += ['', ''] + _kinematics_kernel(robot, list(model.link_names),
                                           model.description.frames)
    lines += ['', ''] + _kinetic_kernel(robot)
    lines += ['', ''] + _integrate_kernel(robot)
    lines += ['', ''] + _difference_kernel(robot)
    lines += ['', ''] + _kinematics_kernel(robot, [], model.description.frames, energy=True)
    lines += ['', ''] + _task_inertia_kernel(robot)
    lines += ['', ''] + _stage_kernel(robot)
    lines += ['', ''] + _finish_kernel(robot.nbv + robot.n)
    return '\n'.join(lines) + '\n'


def _unit_scale() -> list:
    """Return the line of the norm a base orientation is divided by (1 where refused)."""
    return [f'    bscale = bnorm if abs(bnorm - 1.0) <= {_num(QUATERNION_TOLERANCE)} else 1.0']


def _integrate_kernel(robot: _Robot) -> list:
    """
    Return ``integrate(Q, V, dt, OUT, BAD)``: q (+) v dt, Pinocchio's ``integrate``.

    The joints by v dt; a moving base along the exponential of its twist (body axes), the
    quaternion times exp(w dt / 2) with the input's sign kept, (cos, sin) turned: the
    formulas (and series below 1e-6 rad) of the CPU's ``kernels.floating_base.
    moving_integrate``; the orientation normalised first (off unit length by more than the
    tolerance: BAD 3).
    """
    nbq, nbv, n = robot.nbq, robot.nbv, robot.n
    lines = _step_head('integrate(Q, V, dt, OUT, BAD)', 'Q', [
        '    nonfinite = 0 if isfinite(dt) else 1',
        f'    for k in range({nbq + n}):',
        '        nonfinite += 0 if isfinite(Q[t, k]) else 1',
        f'    for k in range({nbv + n}):',
        '        nonfinite += 0 if isfinite(V[t, k]) else 1'], ('OUT', nbq + n),
        f'        OUT[t, {nbq} + k] = Q[t, {nbq} + k] + V[t, {nbv} + k] * dt', n)
    outputs = [('OUT', (nbq + n,))]
    if robot.base == 'fixed':
        return lines + _checks(robot, outputs, False) + ['    BAD[t] = 0']
    if robot.base == 'planar':
        lines += ['    vx, vy, w = V[t, 0] * dt, V[t, 1] * dt, V[t, 2] * dt',
                  '    theta = abs(w)']
    else:
        lines += ['    vx, vy, vz = V[t, 0] * dt, V[t, 1] * dt, V[t, 2] * dt',
                  '    wx, wy, wz = V[t, 3] * dt, V[t, 4] * dt, V[t, 5] * dt',
                  '    theta = sqrt(wx * wx + wy * wy + wz * wz)']
    lines += ['    if theta < 1e-6:        # the series of _exp6',
              '        b, c = 0.5 - theta * theta / 24.0, 1.0 / 6.0 - theta * theta / 120.0',
              '    else:',
              '        sh = sin(0.5 * theta) / theta      # b = (1 - cos t) / t^2',
              '        b = 2.0 * sh * sh',
              '        c = (theta - sin(theta)) / (theta * theta * theta)']
    if robot.base == 'planar':
        lines += ['    co, si = Q[t, 2], Q[t, 3]',
                  '    bnorm = sqrt(co * co + si * si)',
                  *_unit_scale(),
                  '    co, si = co / bscale, si / bscale',
                  '    px = vx - b * w * vy - c * w * w * vx      # (I + b W + c W^2) v',
                  '    py = vy + b * w * vx - c * w * w * vy',
                  '    OUT[t, 0] = Q[t, 0] + co * px - si * py',
                  '    OUT[t, 1] = Q[t, 1] + si * px + co * py',
                  '    OUT[t, 2] = co * cos(w) - si * sin(w)      # (cos, sin) of the angle + w',
                  '    OUT[t, 3] = si * cos(w) + co * sin(w)']
    else:
        R = quaternion_rotation('x1', 'y1', 'z1', 'w1')
        lines += ['    x1, y1, z1, w1 = Q[t, 3], Q[t, 4], Q[t, 5], Q[t, 6]',
                  '    bnorm = sqrt(x1 * x1 + y1 * y1 + z1 * z1 + w1 * w1)',
                  *_unit_scale(),
                  '    x1, y1, z1, w1 = x1 / bscale, y1 / bscale, z1 / bscale, w1 / bscale',
                  '    cx, cy, cz = wy * vz - wz * vy, wz * vx - wx * vz, wx * vy - wy * vx',
                  '    ccx, ccy, ccz = wy * cz - wz * cy, wz * cx - wx * cz, wx * cy - wy * cx',
                  '    p0, p1, p2 = vx + b * cx + c * ccx, vy + b * cy + c * ccy, '
                  'vz + b * cz + c * ccz',
                  *(f'    OUT[t, {r}] = Q[t, {r}] + ({R[r][0]}) * p0 + ({R[r][1]}) * p1 + '
                    f'({R[r][2]}) * p2' for r in range(3)),
                  '    s = (0.5 - theta * theta / 48.0 if theta < 1e-6 else '
                  'sin(0.5 * theta) / theta)',
                  '    x2, y2, z2, w2 = s * wx, s * wy, s * wz, cos(0.5 * theta)',
                  '    x = w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2',
                  '    y = w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2',
                  '    z = w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2',
                  '    w = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2',
                  '    norm = sqrt(x * x + y * y + z * z + w * w)',
                  '    norm = norm if norm > 0.0 else 1.0     # a zero quaternion: refused',
                  '    if x * x1 + y * y1 + z * z1 + w * w1 < 0.0:       # keep the input\'s sign',
                  '        norm = -norm',
                  '    OUT[t, 3], OUT[t, 4], OUT[t, 5], OUT[t, 6] = x / norm, y / norm, z / norm, '
                  'w / norm']
    return lines + _checks(robot, outputs, False) + ['    BAD[t] = 0']


def _difference_kernel(robot: _Robot) -> list:
    """
    Return ``difference(Q0, Q1, V, BAD)``: v with q0 (+) v = q1, Pinocchio's ``difference``.

    The joints u1 - u0; a moving base's twist the logarithm of T0^-1 T1 (rotation angle up
    to pi): the formulas (and series below 1e-6 rad) of the CPU's ``kernels.floating_base.
    moving_difference``; both orientations normalised (off unit length: BAD 3).
    """
    nbq, nbv, n = robot.nbq, robot.nbv, robot.n
    lines = _step_head('difference(Q0, Q1, V, BAD)', 'Q0', [
        '    nonfinite = 0',
        f'    for k in range({nbq + n}):',
        '        nonfinite += 0 if isfinite(Q0[t, k]) and isfinite(Q1[t, k]) else 1'],
        ('V', nbv + n), f'        V[t, {nbv} + k] = Q1[t, {nbq} + k] - Q0[t, {nbq} + k]', n)
    outputs = [('V', (nbv + n,))]
    if robot.base == 'fixed':
        return lines + _checks(robot, outputs, False) + ['    BAD[t] = 0']
    series = ['    if theta < 1e-6:',
              '        d = 1.0 / 12.0 + theta * theta / 720.0',
              '    else:',
              '        d = (1.0 - 0.5 * theta / tan(0.5 * theta)) / (theta * theta)']
    if robot.base == 'planar':
        lines += ['    n0 = sqrt(Q0[t, 2] * Q0[t, 2] + Q0[t, 3] * Q0[t, 3])',
                  '    n1 = sqrt(Q1[t, 2] * Q1[t, 2] + Q1[t, 3] * Q1[t, 3])',
                  *_both_units(),
                  '    c0, s0, c1, s1 = Q0[t, 2] / n0, Q0[t, 3] / n0, Q1[t, 2] / n1, '
                  'Q1[t, 3] / n1',
                  '    dx, dy = Q1[t, 0] - Q0[t, 0], Q1[t, 1] - Q0[t, 1]',
                  '    px, py = c0 * dx + s0 * dy, -s0 * dx + c0 * dy        # R0^T (p1 - p0)',
                  '    w = atan2(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1)',
                  '    theta = abs(w)',
                  *series,
                  '    V[t, 0] = px + 0.5 * w * py - d * w * w * px      # (I - W / 2 + d W^2) p',
                  '    V[t, 1] = py - 0.5 * w * px - d * w * w * py',
                  '    V[t, 2] = w']
        return lines + _checks(robot, outputs, False) + ['    BAD[t] = 0']
    R0 = quaternion_rotation('a0', 'a1', 'a2', 'a3')
    lines += ['    a0, a1, a2, a3 = Q0[t, 3], Q0[t, 4], Q0[t, 5], Q0[t, 6]',
              '    n0 = sqrt(a0 * a0 + a1 * a1 + a2 * a2 + a3 * a3)',
              '    n1 = sqrt(Q1[t, 3] * Q1[t, 3] + Q1[t, 4] * Q1[t, 4] + Q1[t, 5] * Q1[t, 5] + '
              'Q1[t, 6] * Q1[t, 6])',
              *_both_units(),
              '    a0, a1, a2, a3 = a0 / n0, a1 / n0, a2 / n0, a3 / n0',
              '    x1, y1, z1, w1 = -a0, -a1, -a2, a3                  # q0^-1',
              '    x2, y2, z2, w2 = Q1[t, 3] / n1, Q1[t, 4] / n1, Q1[t, 5] / n1, Q1[t, 6] / n1',
              '    x = w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2           # q0^-1 q1',
              '    y = w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2',
              '    z = w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2',
              '    w = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2',
              '    if w < 0.0:                         # the same rotation, angle up to pi',
              '        x, y, z, w = -x, -y, -z, -w',
              '    s = sqrt(x * x + y * y + z * z)',
              '    theta = 2.0 * atan2(s, w)',
              '    k = theta / s if s >= 1e-12 else (2.0 / w if w != 0.0 else 0.0)',
              '    r0, r1, r2 = k * x, k * y, k * z                # the rotation vector',
              '    e0, e1, e2 = Q1[t, 0] - Q0[t, 0], Q1[t, 1] - Q0[t, 1], Q1[t, 2] - Q0[t, 2]',
              *(f'    p{i} = ({R0[0][i]}) * e0 + ({R0[1][i]}) * e1 + ({R0[2][i]}) * e2'
                for i in range(3)),
              *series,
              '    c0, c1, c2 = r1 * p2 - r2 * p1, r2 * p0 - r0 * p2, r0 * p1 - r1 * p0',
              '    cc0, cc1, cc2 = r1 * c2 - r2 * c1, r2 * c0 - r0 * c2, r0 * c1 - r1 * c0',
              *(f'    V[t, {i}] = p{i} - 0.5 * c{i} + d * cc{i}' for i in range(3)),
              *(f'    V[t, {3 + i}] = r{i}' for i in range(3))]
    return lines + _checks(robot, outputs, False) + ['    BAD[t] = 0']


def _step_head(signature: str, rows: str, counts: list, out: tuple, joint: str,
               n: int) -> list:
    """
    Return the head of integrate and difference: ``counts`` the non-finite inputs.

    A row with one is refused before any math (BAD 1, ``out`` = (array, size) NaN); then
    the joints' entries, ``joint`` for each k < n.
    """
    array, size = out
    return [f'def {signature}:',
            '    t = cuda.grid(1)',
            f'    if t >= {rows}.shape[0]:',
            '        return',
            *counts,
            '    if nonfinite > 0:',
            f'        for i0 in range({size}):',
            f'            {array}[t, i0] = nan',
            '        BAD[t] = 1',
            '        return',
            f'    for k in range({n}):',
            joint]


def _both_units() -> list:
    """Return the lines that check two orientations' norms n0, n1 (bnorm) and guard them."""
    tolerance = _num(QUATERNION_TOLERANCE)
    return [f'    bnorm = n0 if abs(n1 - 1.0) <= {tolerance} else n1     # the one off unit',
            f'    n0 = n0 if abs(n0 - 1.0) <= {tolerance} else 1.0',
            f'    n1 = n1 if abs(n1 - 1.0) <= {tolerance} else 1.0']


def _kinetic_kernel(robot: _Robot) -> list:
    """
    Return ``kinetic(Q, QD, T, BAD)``: T = 1/2 v^T M v (000 eq. 93) on the generated CRBA.

    Each entry of M is weighed by its velocities as soon as it is written (its term added
    to the sum), so that neither M nor the sum's terms stay live; a non-finite v: BAD 1.
    """
    reads, body, M, nv = _mass_matrix_row(robot, {'v': ('QD', None)})
    v = [f'bv{k}' for k in range(robot.nbv)] + [f'ud{k}' for k in range(robot.n)]
    terms = ['    energy = 0.0']
    for a in range(nv):
        for b in range(a + 1):
            if M[(a, b)] != '0.0':
                weight = _mul(_num(0.5 if a == b else 1.0), f'{v[a]} * {v[b]}')
                terms.append(f'    energy += {_mul(M[(a, b)], weight)}')
    return _kernel(robot, 'kinetic', 'Q, QD, T, BAD', reads, _hoist(body, terms),
                   ['    T[t] = energy'], ['T[t]'])
