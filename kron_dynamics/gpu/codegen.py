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
Newton-Euler (seed 002) written out for one robot: numba-cuda source, one thread per state.

:func:`rnea_source` unrolls the recursion of ``algorithms/rnea.py`` over the model's bodies
(its readable reference, and ``kernels/rnea.py`` the CPU kernel it is tested against): every
body's rotation, offset, axis, mass, centre of mass and inertia become literals, every
vector a few scalar locals (registers on the device), and products with the constants'
zeros are dropped while writing, so that a z-axis joint costs what its nonzero entries cost.
Mimic joints are lifted in the same code (q = B u + d with B's entries as literals) and the
torques projected back (B^T tau); the armature adds armature u''.

The kernel ``rnea(Q, QD, QDD, use_v, use_a, gscale, TAU, BAD)`` takes (N, n) arrays of the
model's coordinates (``joint_names`` order, rows: states); ``use_v``/``use_a`` = 0 treat
QD/QDD as zero (gravity, Coriolis and bias without reading them), ``gscale`` 0 or 1 scales
gravity. A row with a non-finite input gets NaN torques and BAD[row] = 1.
"""

import numpy as np


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

    def dot(self, a, b) -> str:
        return self.w.let(_add(*(_mul(a[k], b[k]) for k in range(3))))


def _literals(a) -> list:
    return [_num(x) for x in np.asarray(a, dtype=float).ravel()]


class _Robot:
    """What the generated code needs of a fixed-base model: tree, joint order, B, d, armature."""

    def __init__(self, model):
        self.name, self.tree = model.name, model.tree
        self.names = list(model.joint_names)
        self.n = len(self.names)
        tree_names = list(model.description.joint_names)
        joint_map = model._joint_map
        row = {j: k for k, j in enumerate(joint_map.full_names)}
        # B and d with rows in the tree's order
        rows = [row[j] for j in tree_names]
        self.B = np.array(joint_map.B[rows]).reshape(len(tree_names), self.n)
        self.d = np.array(joint_map.d[rows])
        self.armature = np.asarray(model.armature, dtype=float)

    def lift(self, w: _Writer, prefix: str, offset: bool) -> list:
        """Return the tree's coordinates (or rates) from the model's ``prefix{k}`` locals."""
        return [w.let(_add(*(_mul(_num(self.B[i, k]), f'{prefix}{k}') for k in range(self.n)),
                           _num(self.d[i]) if offset else '0.0'))
                for i in range(self.tree.n)]

    def project(self, w: _Writer, values: list) -> list:
        """Return B^T x of a tree-order vector x of expressions."""
        return [w.let(_add(*(_mul(_num(self.B[i, k]), values[i]) for i in range(self.tree.n))))
                for k in range(self.n)]

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
                out[(a, b)] = w.let(_add(*terms))
        return out


def _joint_frame(tree, i: int, qi: str, w: _Writer, V: _Vec):
    """Return (R, p) of body i in its parent at qi: literals folded into expressions."""
    R0 = np.asarray(tree.R0[i])
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


def _newton_euler(tree, w: _Writer, V: _Vec, q: list, qd: list, qdd: list, g: list,
                  frames: dict | None = None) -> list:
    """Write the recursion of algorithms/rnea.py; return tau in the tree's order."""
    frames = {} if frames is None else frames
    W, DW, A, F, M = {}, {}, {}, {}, {}
    zero = ['0.0'] * 3
    for i in range(tree.n):
        if i not in frames:
            frames[i] = _joint_frame(tree, i, q[i], w, V)
        R, p = frames[i]
        parent = int(tree.parent[i])
        wp, dwp, ap = (zero, zero, g) if parent < 0 else (W[parent], DW[parent], A[parent])
        ao = V.mtv(R, V.add(ap, V.cross(dwp, p), V.cross(wp, V.cross(wp, p))))
        win, dwin = V.mtv(R, wp), V.mtv(R, dwp)
        z = _literals(tree.axis[i])
        zqd, zqdd = V.scale(z, qd[i]), V.scale(z, qdd[i])
        if tree.revolute[i]:
            W[i] = V.add(win, zqd)
            DW[i] = V.add(dwin, zqdd, V.cross(win, zqd))
            A[i] = ao
        else:
            W[i], DW[i] = win, dwin
            A[i] = V.add(ao, zqdd, V.scale(V.cross(win, zqd), '2.0'))
        com = _literals(tree.com[i])
        inertia = np.asarray(tree.inertia[i])
        inertia = [[_num(inertia[a, b]) for b in range(3)] for a in range(3)]
        ac = V.add(A[i], V.cross(DW[i], com), V.cross(W[i], V.cross(W[i], com)))
        Fi = V.scale(ac, _num(tree.mass[i]))
        Mi = V.add(V.mv(inertia, DW[i]), V.cross(W[i], V.mv(inertia, W[i])), V.cross(com, Fi))
        # the inward pass adds the children's wrenches: named accumulators
        F[i] = [f'f{i}_{a}' for a in range(3)]
        M[i] = [f'm{i}_{a}' for a in range(3)]
        for a in range(3):
            w.set(F[i][a], Fi[a])
            w.set(M[i][a], Mi[a])
    tau = [None] * tree.n
    for i in range(tree.n - 1, -1, -1):
        R, p = frames[i]
        tau[i] = V.dot(_literals(tree.axis[i]), M[i] if tree.revolute[i] else F[i])
        parent = int(tree.parent[i])
        if parent >= 0:
            fp = V.mv(R, F[i])
            mp = V.add(V.mv(R, M[i]), V.cross(p, fp))
            for a in range(3):
                w.set(F[parent][a], _add(F[parent][a], fp[a]))
                w.set(M[parent][a], _add(M[parent][a], mp[a]))
    return tau


def _composite_rigid_body(tree, w: _Writer, V: _Vec, q: list, frames: dict) -> dict:
    """
    Write the CRBA of algorithms/crba.py in the root frame; return M[(i, j)], i >= j.

    Each body's spatial inertia about the root origin is kept as (m, h = m c, I_O) (10
    numbers, additive), F = I^c_j s_j as (I_O s_w + h x s_v, s_w x h + m s_v) and
    M_ij = s_i . F_j for i on the path from j to the root.
    """
    n = tree.n
    Rw, pw, S, comp = {}, {}, {}, {}
    for i in range(n):
        if i not in frames:
            frames[i] = _joint_frame(tree, i, q[i], w, V)
        R, p = frames[i]
        parent = int(tree.parent[i])
        if parent < 0:
            Rw[i], pw[i] = R, p
        else:
            Rp = Rw[parent]
            Rw[i] = [[w.let(_add(*(_mul(Rp[a][k], R[k][b]) for k in range(3))))
                      for b in range(3)] for a in range(3)]
            pw[i] = V.add(pw[parent], V.mv(Rp, p))
        a = V.mv(Rw[i], _literals(tree.axis[i]))
        S[i] = (a, V.cross(pw[i], a)) if tree.revolute[i] else (['0.0'] * 3, a)
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
        comp[i] = {'m': m, 'h': V.scale(c, m), 'I': IO}
    # composite inertias: children into parents (named accumulators)
    acc = {}
    for i in range(n):
        names = {'m': f'cm{i}', 'h': [f'ch{i}_{a}' for a in range(3)],
                 'I': {key: f'cI{i}_{key[0]}{key[1]}' for key in comp[i]['I']}}
        w.set(names['m'], comp[i]['m'])
        for a in range(3):
            w.set(names['h'][a], comp[i]['h'][a])
        for key, value in comp[i]['I'].items():
            w.set(names['I'][key], value)
        acc[i] = names
    for i in range(n - 1, -1, -1):
        parent = int(tree.parent[i])
        if parent >= 0:
            c, pn = acc[i], acc[parent]
            w.set(pn['m'], _add(pn['m'], c['m']))
            for a in range(3):
                w.set(pn['h'][a], _add(pn['h'][a], c['h'][a]))
            for key in c['I']:
                w.set(pn['I'][key], _add(pn['I'][key], c['I'][key]))
    M = {}
    for j in range(n):
        c = acc[j]
        inertia = [[c['I'][(max(a, b), min(a, b))] for b in range(3)] for a in range(3)]
        sw, sv = S[j]
        top = V.add(V.mv(inertia, sw), V.cross(c['h'], sv))
        bottom = V.add(V.cross(sw, c['h']), V.scale(sv, c['m']))
        i = j
        while i >= 0:
            M[(j, i)] = w.let(_add(V.dot(S[i][0], top), V.dot(S[i][1], bottom)))
            i = int(tree.parent[i])
    for j in range(n):
        for i in range(j):
            M.setdefault((j, i), '0.0')
    return M


def _header(robot: _Robot, name: str, arguments: str, loads: list, finite: str,
            outputs: list) -> list:
    return [f'def {name}({arguments}):',
            '    t = cuda.grid(1)',
            '    if t >= Q.shape[0]:',
            '        return',
            *loads,
            f'    if not ({finite}):',
            *[f'        {o} = nan' for o in outputs],
            '        BAD[t] = 1',
            '        return',
            '    BAD[t] = 0']


def _finite(names: list) -> str:
    return ' and '.join(f'isfinite({x})' for x in names) or 'True'


def _rnea_kernel(robot: _Robot) -> list:
    w = _Writer()
    V = _Vec(w)
    n = robot.n
    loads = []
    for k in range(n):
        loads += [f'    u{k} = Q[t, {k}]',
                  f'    ud{k} = QD[t, {k}] if use_v else 0.0',
                  f'    udd{k} = QDD[t, {k}] if use_a else 0.0']
    q = robot.lift(w, 'u', True)
    qd, qdd = robot.lift(w, 'ud', False), robot.lift(w, 'udd', False)
    g = [w.let(_mul(_num(-x), 'gscale')) for x in robot.tree.gravity]
    tau = robot.project(w, _newton_euler(robot.tree, w, V, q, qd, qdd, g))
    out = [f'    TAU[t, {k}] = ' + _add(tau[k], _mul(_num(robot.armature[k]), f'udd{k}'))
           for k in range(n)]
    inputs = [f'{p}{k}' for k in range(n) for p in ('u', 'ud', 'udd')]
    return _header(robot, 'rnea', 'Q, QD, QDD, use_v, use_a, gscale, TAU, BAD', loads,
                   _finite(inputs), [f'TAU[t, {k}]' for k in range(n)]) + w.lines + out


def _mass_matrix_kernel(robot: _Robot) -> list:
    w = _Writer()
    V = _Vec(w)
    n = robot.n
    loads = [f'    u{k} = Q[t, {k}]' for k in range(n)]
    q = robot.lift(w, 'u', True)
    Mu = robot.project_matrix(w, _composite_rigid_body(robot.tree, w, V, q, {}))
    out = []
    for a in range(n):
        for b in range(a + 1):
            out.append(f'    M[t, {a}, {b}] = {Mu[(a, b)]}')
            if a != b:
                out.append(f'    M[t, {b}, {a}] = {Mu[(a, b)]}')
    return _header(robot, 'mass_matrix', 'Q, M, BAD', loads, _finite([f'u{k}' for k in range(n)]),
                   [f'M[t, {a}, {b}]' for a in range(n) for b in range(n)]) + w.lines + out


def _forward_dynamics_kernel(robot: _Robot) -> list:
    """Write q'' = M^-1 (tau - h): M by CRBA, h by Newton-Euler, an unrolled Cholesky solve."""
    w = _Writer()
    V = _Vec(w)
    n = robot.n
    loads = []
    for k in range(n):
        loads += [f'    u{k} = Q[t, {k}]', f'    ud{k} = QD[t, {k}]', f'    f{k}_in = TAU[t, {k}]']
    q, qd = robot.lift(w, 'u', True), robot.lift(w, 'ud', False)
    frames = {}
    g = [_num(-x) for x in robot.tree.gravity]
    h = robot.project(w, _newton_euler(robot.tree, w, V, q, qd, ['0.0'] * robot.tree.n, g,
                                       frames))
    M = robot.project_matrix(w, _composite_rigid_body(robot.tree, w, V, q, frames))
    # Cholesky M = L L^T, then L y = tau - h, L^T x = y
    L = {}
    for j in range(n):
        diagonal = w.let(_add(M[(j, j)], *(_neg(_mul(L[(j, k)], L[(j, k)])) for k in range(j))))
        w.lines.append(f'    if not {diagonal} > 0.0:')
        w.lines += [f'        QDD[t, {k}] = nan' for k in range(n)]
        w.lines += ['        BAD[t] = 2', '        return']
        L[(j, j)] = w.let(f'sqrt({diagonal})')
        for i in range(j + 1, n):
            below = _add(M[(i, j)], *(_neg(_mul(L[(i, k)], L[(j, k)])) for k in range(j)))
            L[(i, j)] = w.let(f'{_p(below)} / {L[(j, j)]}')
    y = []
    for i in range(n):
        rest = _add(f'f{i}_in', _neg(h[i]), *(_neg(_mul(L[(i, k)], y[k])) for k in range(i)))
        y.append(w.let(f'{_p(rest)} / {L[(i, i)]}'))
    x = [None] * n
    for i in range(n - 1, -1, -1):
        rest = _add(y[i], *(_neg(_mul(L[(k, i)], x[k])) for k in range(i + 1, n)))
        x[i] = w.let(f'{_p(rest)} / {L[(i, i)]}')
    out = [f'    QDD[t, {k}] = {x[k]}' for k in range(n)]
    inputs = [name for k in range(n) for name in (f'u{k}', f'ud{k}', f'f{k}_in')]
    return _header(robot, 'forward_dynamics', 'Q, QD, TAU, QDD, BAD', loads, _finite(inputs),
                   [f'QDD[t, {k}]' for k in range(n)]) + w.lines + out


def source(model) -> str:
    """
    Return the numba-cuda source of a fixed-base model's kernels (one module per robot).

    ``rnea(Q, QD, QDD, use_v, use_a, gscale, TAU, BAD)``, ``mass_matrix(Q, M, BAD)`` and
    ``forward_dynamics(Q, QD, TAU, QDD, BAD)``; ``model``: a RobotModel with a fixed base
    (mimic joints included), whose tree, joint order, coupling and armature are written in.
    """
    robot = _Robot(model)
    lines = ['# Generated by kron_dynamics.gpu.codegen for one robot: do not edit.',
             f'# robot {robot.name!r}, joints {robot.names}',
             'from math import cos, isfinite, nan, sin, sqrt',
             '',
             'from numba import cuda']
    for kernel in (_rnea_kernel, _mass_matrix_kernel, _forward_dynamics_kernel):
        lines += ['', ''] + kernel(robot)
    return '\n'.join(lines) + '\n'
