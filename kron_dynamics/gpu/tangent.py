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
The derivatives of the generated Newton-Euler row, by forward mode over its lines.

:func:`derivatives_source` writes ``rnea_derivatives(Q, QD, QDD, DQ, DV, BAD)``: the row of
:mod:`kron_dynamics.gpu.codegen` (the recursion of ``algorithms/rnea.py``, 002), every line
``x = e`` preceded by the line of its tangent ``g_x = de`` (:func:`tangent_lines`, the chain
rule of each operation: sums, products, quotients, cos, sin, sqrt), the whole run once per
direction of the model's tangent space, nv of q then nv of q': DQ[t, i, k] = dtau_i/dq_k,
DV[t, i, k] = dtau_i/dq'_k, exact to rounding (no step size), what the CPU's recursion
(Carpentier and Mansard, 2018) computes. Mimic joints differentiate through their lift
(q = B u + d is a line like any other). On a moving base, the configuration's directions are
the CPU's and Pinocchio's, along integrate(q, e_k t): the base turned about its own axes (a
quaternion moves by q (0, e/2), (cos, sin) by (-sin, cos)) and moved along them, which the
forces in base axes do not depend on (their columns are zero, as on the CPU), and a Jacobian
in world axes does. The same transform gives ``gravity_derivative(Q, DG, BAD)``,
``mass_matrix_derivative(Q, DM, BAD)`` (the CRBA) and, per link,
``hessian(Q, px, py, pz, frame, H, BAD)`` (the link's Jacobian, nv directions) and
:func:`rates_source`'s J', J' q' and the classical acceleration (one direction, along q').
"""

import ast
import re

from .codegen import (_add, _checks, _jacobian_row, _loads, _looped_substitution, _mass_matrix_row,
                      _mul, _neg, _num, _p, _read, _Robot, _rnea_row, _sink, _tree_substitution,
                      _Vec, _Writer, DEVICE_FUNCTIONS, factored_mass_matrix, finish, head_lines,
                      kinematics_row, LOCAL, LOCAL_WORLD_ALIGNED, quaternion_rotation,
                      tree_factored_mass_matrix, tree_tables, WORLD)
from .linearize import linearize_kernel

# an assignment of the generated code: indent, target, operator, expression
_LINE = re.compile(r'(\s*)([A-Za-z_]\w*) (\+?=) (.+)')
_TRIG = re.compile(r'(cos|sin)\(([A-Za-z_]\w*)\)')


def _div(a: str, b: str) -> str:
    return '0.0' if a == '0.0' else f'{_p(a)} / {_p(b)}'


class _Tangents:
    """The tangent of each name assigned so far: a name, or none (a zero tangent)."""

    def __init__(self, seeds: dict):
        self.seeds = seeds            # an input's name -> its seed's name
        self.active = {}              # name -> the name of its tangent

    def of(self, node) -> str:
        """Return the tangent of an expression (its chain rule), '0.0' if it has none."""
        text = ast.unparse
        if isinstance(node, ast.Constant):
            return '0.0'
        if isinstance(node, ast.Name):
            return self.active.get(node.id, '0.0')
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            d = self.of(node.operand)
            return _neg(d) if isinstance(node.op, ast.USub) else d
        if isinstance(node, ast.BinOp):
            a, b = node.left, node.right
            da, db = self.of(a), self.of(b)
            if isinstance(node.op, ast.Add):
                return _add(da, db)
            if isinstance(node.op, ast.Sub):
                return _add(da, _neg(db))
            if isinstance(node.op, ast.Mult):
                return _add(_mul(da, text(b)), _mul(text(a), db))
            if isinstance(node.op, ast.Div):          # (da - (a / b) db) / b
                return _div(_add(da, _neg(_mul(text(node), db))), text(b))
        if isinstance(node, ast.IfExp):
            da, db = self.of(node.body), self.of(node.orelse)
            return da if da == db else f'({da} if {text(node.test)} else {db})'
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                len(node.args) == 1:
            x = node.args[0]
            dx = self.of(x)
            if dx == '0.0':
                return '0.0'
            name = node.func.id
            if name == 'sin':
                return _mul(f'cos({text(x)})', dx)
            if name == 'cos':
                return _neg(_mul(f'sin({text(x)})', dx))
            if name == 'sqrt':
                return _div(dx, f'2.0 * {text(node)}')
        if isinstance(node, ast.Subscript):          # a load: its seed is given by name
            return '0.0'
        raise ValueError(f'no tangent rule for {ast.unparse(node)!r}')

    def assign(self, indent: str, name: str, tangent: str) -> list:
        """Return the line setting name's tangent (none for a zero one)."""
        if tangent == '0.0':
            self.active.pop(name, None)
            return []
        self.active[name] = f'g_{name}'
        return [f'{indent}g_{name} = {tangent}']


def tangent_lines(lines: list, seeds: dict) -> tuple:
    """
    Return (lines with their tangents, the tangents) of straight-line generated code.

    Each assignment is preceded by its tangent's (which reads the values before it, so
    that ``x = x + y`` and ``b = b / s`` are differentiated as written). ``seeds``: an
    input's name -> the name of its tangent, set where it is read (``x = X[t, k]`` and its
    finiteness check keep the seed). A pair ``c = cos(x)``, ``s = sin(x)`` (a joint's
    angle) gives its tangents after both, from each other. Lines ``g_x = ...`` are given
    tangents (a moving base's), counters (``nonfinite``) have none.
    """
    T = _Tangents(seeds)
    out = []
    k = 0
    while k < len(lines):
        line = lines[k]
        k += 1
        match = _LINE.fullmatch(line)
        if match is None:
            raise ValueError(f'no tangent rule for the line {line!r}')
        indent, name, op, expr = match.groups()
        if name.startswith('g_'):
            T.active[name[2:]] = name
            out.append(line)
            continue
        if name == 'nonfinite':
            out.append(line)
            continue
        if op != '=':
            raise ValueError(f'no tangent rule for the line {line!r}')
        if name in seeds:                             # an input, as it is read
            T.active[name] = seeds[name]
            out.append(line)
            continue
        trig = _TRIG.fullmatch(expr)
        pair = _LINE.fullmatch(lines[k]) if trig and k < len(lines) else None
        other = _TRIG.fullmatch(pair.group(4)) if pair else None
        if other and other.group(1) == 'sin' and trig.group(1) == 'cos' and \
                other.group(2) == trig.group(2) and pair.group(2) != trig.group(2):
            c, s, dx = name, pair.group(2), T.active.get(trig.group(2), '0.0')
            out += [line, lines[k]]
            out += T.assign(indent, c, _neg(_mul(s, dx)))
            out += T.assign(indent, s, _mul(c, dx))
            k += 1
            continue
        out += T.assign(indent, name, T.of(ast.parse(expr, mode='eval').body))
        out.append(line)
    return out, T


def _base_seeds(robot: _Robot, seed) -> list:
    """Return the tangent lines of a moving base's orientation along its turn directions."""
    if robot.base == 'floating':          # q (0, e / 2): (x, y, z, w) = b3..b6, e = seeds 3..5
        x, y, z, w_ = 'b3', 'b4', 'b5', 'b6'
        e = [seed(3), seed(4), seed(5)]
        return [f'    g_b3 = 0.5 * ({w_} * {e[0]} + {y} * {e[2]} - {z} * {e[1]})',
                f'    g_b4 = 0.5 * ({w_} * {e[1]} + {z} * {e[0]} - {x} * {e[2]})',
                f'    g_b5 = 0.5 * ({w_} * {e[2]} + {x} * {e[1]} - {y} * {e[0]})',
                f'    g_b6 = -0.5 * ({x} * {e[0]} + {y} * {e[1]} + {z} * {e[2]})']
    return [f'    g_b2 = -(b3 * {seed(2)})', f'    g_b3 = b2 * {seed(2)}']   # (cos, sin)


def _seed(direction: int) -> str:
    return f's{direction}'


def _forward_mode(robot: _Robot, name: str, arguments: str, reads: tuple, body: list,
                  results: list, directions: int, wrt: str, stores, outputs: list,
                  along: list | None = None, before: tuple = (), outer: str = '',
                  more: tuple = ()) -> list:
    """
    Return a kernel running ``body`` with its tangents once per direction (:func:`_kernel`).

    ``wrt`` 'q': direction d seeds q along d; 'qv': q along d (d < nv), then q' along
    d - nv; 'v': q' along d. ``results``: the expressions whose tangents ``stores(names)``
    writes (lines of the loop, names r0, r1, ... bound to them); ``outputs``: the blocks a
    refused row fills with NaN. ``along``: one direction instead, its seeds these
    expressions (the tangent along them); ``before``: lines before the loop (what ``along``
    and ``stores`` read); ``outer``: a loop around the loop of directions (``for ...:``);
    ``more``: (variable, expression) pairs, the tangents of further loaded variables along
    direction d (expressions of d and the inputs).
    """
    nbv, n = robot.nbv, robot.n
    nv = nbv + n
    loads, deferred = reads
    first = {'q': None, 'qv': nv, 'v': 0}[wrt]       # the direction of q'_0, if q' has them
    seeds = {**({f'u{k}': _seed(nbv + k) for k in range(n)} if wrt != 'v' else {}),
             **({f'ud{k}': _seed(first + nbv + k) for k in range(n)} if first is not None
                else {}),
             **({f'bv{k}': _seed(first + k) for k in range(nbv)} if first is not None
                else {}),
             **{name: f'sa{i}' for i, (name, _) in enumerate(more)}}
    if robot.base != 'fixed' and wrt != 'v':    # after the orientation is read, before its norm
        at = next(k for k, line in enumerate(loads) if line.startswith('    bnorm = '))
        loads = loads[:at] + _base_seeds(robot, _seed) + loads[at:]
    lines, T = tangent_lines(loads + _sink(body, deferred), seeds)
    tangents = [T.of(ast.parse(x, mode='eval').body) for x in results]
    seed_values = (along if along is not None else
                   [f'kronecker_delta(d, {j})' for j in range(directions)])
    loop = [f'    for d in range({directions}):',
            *(f'        {_seed(j)} = {x}' for j, x in enumerate(seed_values)),
            *(f'        sa{i} = {x}' for i, (_, x) in enumerate(more)),
            *('    ' + line for line in lines),
            *(f'        r{i} = {x}' for i, x in enumerate(tangents)),
            *stores([f'r{i}' for i in range(len(tangents))])] if directions else []
    if outer and loop:
        loop = [f'    {outer}'] + ['    ' + line for line in loop]
    return finish(head_lines(name, arguments) + ['    bnorm = 1.0', *before] + loop
                  + _checks(robot, outputs, False) + ['    BAD[t] = 0'])


def _rnea_derivatives_kernel(robot: _Robot) -> list:
    """Return ``rnea_derivatives(Q, QD, QDD, DQ, DV, BAD)``: dtau/dq, dtau/dq'."""
    w = _Writer()
    V = _Vec(w)
    reads, joints, base = _loads(robot, w, V, {'v': ('QD', None), 'a': ('QDD', None)})
    tau = _rnea_row(robot, w, V, joints, base, '1.0')
    nv = robot.nbv + robot.n

    def stores(r: list) -> list:
        return [f'        if d < {nv}:',
                *(f'            DQ[t, {i}, d] = {x}' for i, x in enumerate(r)),
                '        else:',
                *(f'            DV[t, {i}, d - {nv}] = {x}' for i, x in enumerate(r))]
    return _forward_mode(robot, 'rnea_derivatives', 'Q, QD, QDD, DQ, DV, BAD', reads,
                         w.lines, tau, 2 * nv, 'qv', stores,
                         [('DQ', (nv, nv)), ('DV', (nv, nv))])


def _gravity_derivative_kernel(robot: _Robot) -> list:
    """Return ``gravity_derivative(Q, DG, BAD)``: dG/dq, the Newton-Euler row at rest."""
    w = _Writer()
    V = _Vec(w)
    reads, joints, base = _loads(robot, w, V, {})
    tau = _rnea_row(robot, w, V, joints, base, '1.0')
    nv = robot.nbv + robot.n

    def stores(r: list) -> list:
        return [f'        DG[t, {i}, d] = {x}' for i, x in enumerate(r)]
    return _forward_mode(robot, 'gravity_derivative', 'Q, DG, BAD', reads, w.lines, tau, nv,
                         'q', stores, [('DG', (nv, nv))])


def _mass_matrix_derivative_kernel(robot: _Robot) -> list:
    """Return ``mass_matrix_derivative(Q, DM, BAD)``: DM[t, i, j, k] = dM_ij/dq_k."""
    reads, body, M, nv = _mass_matrix_row(robot)
    keys = [(a, b) for a in range(nv) for b in range(a + 1)]

    def stores(r: list) -> list:
        return [line for (a, b), x in zip(keys, r)
                for line in ([f'        DM[t, {a}, {b}, d] = {x}']
                             + ([f'        DM[t, {b}, {a}, d] = {x}'] if a != b else []))]
    return _forward_mode(robot, 'mass_matrix_derivative', 'Q, DM, BAD', reads, body,
                         [M[key] for key in keys], nv, 'q', stores, [('DM', (nv, nv, nv))])


def _coriolis_tensor_kernel(robot: _Robot) -> list:
    """
    Return ``coriolis_tensor(Q, alpha, beta, gamma, X, BAD)``, X (N, nv, nv^2).

    A fixed base (mimic joints in u): X[i, j nv + k] = alpha dM_ij/dq_k + beta dM_ik/dq_j +
    gamma dM_jk/dq_i, from forward mode over the CRBA (nv passes): C* (000 eq. 101) is
    (1, 0, -1/2), the Christoffel symbols (1/2, 1/2, -1/2). A moving base has no partial
    derivatives to take (quasi-velocities): X is the symmetric matrix of the quadratic form
    h - G, as on the CPU, whatever the coefficients: 1/2 d(h - G)/dv_j at v = e_k, forward
    mode over the Newton-Euler row without gravity (nv^2 passes, k in the outer loop).
    """
    nv = robot.nbv + robot.n
    outputs = [('X', (nv, nv * nv))]
    arguments = 'Q, alpha, beta, gamma, X, BAD'
    if robot.base == 'fixed':
        return _over_mass_matrix_derivative(
            robot, 'coriolis_tensor', arguments, ('X', (nv, nv * nv)),
            lambda p, q, x: [f'        X[t, {p}, {q * nv} + d] += alpha * {x}',
                             f'        X[t, {p}, d * {nv} + {q}] += beta * {x}',
                             f'        X[t, d, {p * nv + q}] += gamma * {x}'])
    w = _Writer()
    V = _Vec(w)
    unit = {'v': (lambda k: f'(1.0 if kk == {k} else 0.0)', None)}     # v = e_kk
    reads, joints, base = _loads(robot, w, V, unit)
    h = _rnea_row(robot, w, V, joints, base, '0.0')

    def symmetric(r: list) -> list:
        return [f'        X[t, {i}, d * {nv} + kk] = 0.5 * {x}' for i, x in enumerate(r)]
    return _forward_mode(robot, 'coriolis_tensor', arguments, reads, w.lines, h, nv, 'v',
                         symmetric, outputs, outer=f'for kk in range({nv}):')


def _coriolis_matrix_kernel(robot: _Robot) -> list:
    """
    Return ``coriolis_matrix(Q, QD, C, BAD)``: a fixed base's C = sum_k Gamma[:, :, k] q'_k.

    The Christoffel symbols of :func:`_coriolis_tensor_kernel` contracted with q' as dM/dq
    comes, direction by direction (M' - 2C skew, C q' = C*(q' kron q')). A moving base's:
    :func:`_moving_coriolis_matrix_kernel`.
    """
    if robot.base != 'fixed':
        return _moving_coriolis_matrix_kernel(robot)
    nv = robot.nbv + robot.n
    v, load_v = _rates(nv, 'vel', 'QD')
    return _over_mass_matrix_derivative(
        robot, 'coriolis_matrix', 'Q, QD, C, BAD', ('C', (nv, nv)),
        lambda p, q, x: [f'        C[t, {p}, {q}] += 0.5 * {x} * QD[t, d]',
                         f'        C[t, {p}, d] += 0.5 * {x} * {v[q]}',
                         f'        C[t, d, {p}] -= 0.5 * {x} * {v[q]}'], load_v)


def _moving_coriolis_matrix_kernel(robot: _Robot) -> list:
    """
    Return ``coriolis_matrix(Q, QD, C, BAD)`` of a moving base: Pinocchio's form, by columns.

    The CPU's sum over the bodies, J^T (I J' + B(I, V) J) (``algorithms.coriolis_matrix``),
    applied to u is a Newton-Euler pass whose velocity products are V x (S u) and whose
    forces I a + B(I, V) U; it differs from the symmetric (Christoffel) half of the
    Newton-Euler row's dh/dv only through the base's own term (v_b x u_b, one joint of six or
    three freedoms; a 1-DOF joint's S v x S u is zero), which every body sees as the same
    spatial acceleration of the base:

        C u = 1/2 dh/dv u + 1/2 M[:, base] (v_b x u_b),

    one forward-mode pass per column u = e_d: q' along e_d, the base's acceleration along
    v_b x e_d (the twists' bracket ad(v_b), base axes), of the row without gravity.
    """
    nbv, nv = robot.nbv, robot.nbv + robot.n
    w = _Writer()
    V = _Vec(w)
    base_only = {'v': ('QD', None), 'a': (lambda k: '0.0' if k < nbv else None, None)}
    reads, joints, base = _loads(robot, w, V, base_only)
    h = _rnea_row(robot, w, V, joints, base, '0.0')
    v = [f'QD[t, {k}]' for k in range(nbv)]
    if robot.base == 'floating':      # ad(v_b) = [[w x, v x], [0, w x]] (linear first)
        def cross(a, j):              # column j of a x, as {row: expression}
            return {(j + 1) % 3: a[(j + 2) % 3], (j + 2) % 3: f'(-{a[(j + 1) % 3]})'}
        columns = [cross(v[3:], j) for j in range(3)]
        columns += [{**cross(v[:3], j), **{3 + i: x for i, x in cross(v[3:], j).items()}}
                    for j in range(3)]
    else:                             # (x, y, turn): the angular row is zero
        columns = [{1: v[2]}, {0: f'(-{v[2]})'}, {0: v[1], 1: f'(-{v[0]})'}]

    def entry(k: int) -> str:         # (ad(v_b) e_d)_k
        terms = [f'{col[k]} if d == {j} else ' for j, col in enumerate(columns) if k in col]
        return '(' + ''.join(terms) + '0.0)' if terms else '0.0'

    def stores(r: list) -> list:
        return [f'        C[t, {i}, d] = 0.5 * {x}' for i, x in enumerate(r)]
    return _forward_mode(robot, 'coriolis_matrix', 'Q, QD, C, BAD', reads, w.lines, h, nv,
                         'v', stores, [('C', (nv, nv))],
                         more=tuple((f'ba{k}', entry(k)) for k in range(nbv)))


def _over_mass_matrix_derivative(robot: _Robot, name: str, arguments: str, block: tuple,
                                 terms, before: list = ()) -> list:
    """
    Return a kernel summing ``terms(p, q, x)`` over dM_pq/dq_d = x into ``block``, zeroed.

    Forward mode over the generated CRBA (nv directions d); ``block`` = (array, (rows,
    columns)) of each state; ``before``: lines before the zeroing (loads the terms read).
    """
    reads, body, M, nv = _mass_matrix_row(robot)
    keys = [(a, b) for a in range(nv) for b in range(a + 1)]
    array, (rows, columns) = block

    def stores(r: list) -> list:
        return [line for (a, b), x in zip(keys, r) for p, q in sorted({(a, b), (b, a)})
                for line in terms(p, q, x)]
    zero = [f'    for i0 in range({rows}):', f'        for i1 in range({columns}):',
            f'            {array}[t, i0, i1] = 0.0']
    return _forward_mode(robot, name, arguments, reads, body, [M[key] for key in keys], nv,
                         'q', stores, [block], before=[*before, *zero])


def _center_of_mass_jacobian_kernel(robot: _Robot, frames_of: dict) -> list:
    """
    Return ``center_of_mass_jacobian(Q, JC, BAD)``: dc/dq (N, 3, nv), world axes.

    Forward mode over the generated centre of mass (codegen's ``kinematics_row``, the GPU's
    default bodies), nv passes; a moving base's directions along integrate(q, e_k t), so
    that c' = JC v as on the CPU.
    """
    reads, body, _, com = kinematics_row(robot, [], frames_of)
    if robot.base != 'fixed':
        body = _translation_seeds(robot, body)
    nv = robot.nbv + robot.n

    def stores(r: list) -> list:
        return [f'        JC[t, {a}, d] = {x}' for a, x in enumerate(r)]
    return _forward_mode(robot, 'center_of_mass_jacobian', 'Q, JC, BAD', reads, body, com, nv,
                         'q', stores, [('JC', (3, nv))])


def _centroidal_kernel(robot: _Robot, frames_of: dict) -> list:
    """
    Return ``centroidal(Q, A, BAD)``: the centroidal momentum matrix A_G (N, 6, nv).

    Column d is the momentum of the CoM's bodies along direction d (a moving base's along
    integrate(q, e_d t)), about the centre of mass c, world axes: (sum m_i c_i', sum R_i I_i
    w_i + m_i (c_i - c) x c_i') with c_i', R_i' the tangents of each body's centre of mass
    and rotation (forward mode over codegen's ``kinematics_row``) and w_i = vee(R_i^T R_i')
    its angular velocity in body axes (Pinocchio's ``ccrba``, as on the CPU).
    """
    bodies = []
    reads, body, _, com = kinematics_row(robot, [], frames_of, bodies)
    if robot.base != 'fixed':
        body = _translation_seeds(robot, body)
    nv = robot.nbv + robot.n
    results = [x for _, c, R, _ in bodies for x in (*c, *R[0], *R[1], *R[2])]

    def stores(r: list) -> list:
        lines, linear, angular = [], [[], [], []], [[], [], []]
        for b, (m, c, R, inertia) in enumerate(bodies):
            dc, dR = r[12 * b:12 * b + 3], [r[12 * b + 3 + 3 * k:12 * b + 6 + 3 * k]
                                            for k in range(3)]
            turn = [_add(*(_mul(R[k][i], dR[k][j]) for k in range(3)))      # (R^T R')_ij
                    for i, j in ((2, 1), (0, 2), (1, 0))]
            lines += [f'        o{b}_{a} = {x}' for a, x in enumerate(turn)]
            spin = [_add(*(_mul(_num(inertia[a][k]), f'o{b}_{k}') for k in range(3)))
                    for a in range(3)]
            lines += [f'        n{b}_{a} = {x}' for a, x in enumerate(spin)]
            lever = [_add(c[a], _neg(com[a])) for a in range(3)]
            lines += [f'        e{b}_{a} = {x}' for a, x in enumerate(lever)]
            for a in range(3):
                i, j = (a + 1) % 3, (a + 2) % 3
                linear[a].append(_mul(_num(m), dc[a]))
                angular[a] += [_add(*(_mul(R[a][k], f'n{b}_{k}') for k in range(3))),
                               _mul(_num(m), f'(e{b}_{i} * {dc[j]} - e{b}_{j} * {dc[i]})')]
        return lines + [f'        A[t, {a}, d] = {_add(*linear[a])}' for a in range(3)] + [
            f'        A[t, {3 + a}, d] = {_add(*angular[a])}' for a in range(3)]
    return _forward_mode(robot, 'centroidal', 'Q, A, BAD', reads, body, results, nv, 'q',
                         stores, [('A', (6, nv))])


# the inertia entries of a body's parameters (Pinocchio's order: Ixx, Ixy, Iyy, Ixz, Iyz, Izz)
_INERTIA_ENTRIES = ((0, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 2))


def _regressor_kernel(robot: _Robot) -> list:
    """
    Return ``regressor(Q, QD, QDD, Y, BAD)``: Y (N, nv, 10 nb) with tau = Y pi + armature q''.

    The derivative of the Newton-Euler row with respect to the bodies' inertial parameters
    pi (m, m c, I about the origin; a moving base's body first, then the tree's in its
    order, as the CPU's ``dynamic_parameters``): tau is linear in them, so the row written
    over parameters as variables (codegen's ``_parameter_wrench``) and run once per
    parameter, that one 1 and the others 0, gives its column exactly (10 nb passes).
    """
    first = 0 if robot.base == 'fixed' else 1       # the block of tree body 0
    count = 10 * (robot.tree.n + first)

    def parameters(i: int) -> tuple:
        names = [f'p{i + first}_{k}' for k in range(10)]
        inertia = [[''] * 3 for _ in range(3)]
        for k, (a, b) in enumerate(_INERTIA_ENTRIES):
            inertia[a][b] = inertia[b][a] = names[4 + k]
        return names[0], names[1:4], inertia
    w = _Writer()
    V = _Vec(w)
    arrays = {'v': ('QD', None), 'a': ('QDD', None)}
    (loads, deferred), joints, base = _loads(robot, w, V, arrays)
    tau = _rnea_row(robot, w, V, joints, base, '1.0', parameters=parameters)
    nv = robot.nbv + robot.n
    loop = [f'    for d in range({count}):',
            *(f'        p{j // 10}_{j % 10} = kronecker_delta(d, {j})' for j in range(count)),
            *('    ' + line for line in loads + _sink(w.lines, deferred)),
            *(f'        Y[t, {i}, d] = {x}' for i, x in enumerate(tau))] if count else []
    return finish(head_lines('regressor', 'Q, QD, QDD, Y, BAD') + ['    bnorm = 1.0'] + loop
                  + _checks(robot, [('Y', (nv, count))], False) + ['    BAD[t] = 0'])


def derivatives_source(model) -> str:
    """
    Return the numba-cuda source of the derivative kernels of one robot.

    ``rnea_derivatives(Q, QD, QDD, DQ, DV, BAD)``, ``gravity_derivative(Q, DG, BAD)``,
    ``mass_matrix_derivative(Q, DM, BAD)``, ``coriolis_tensor(Q, alpha, beta, gamma, X,
    BAD)``, ``center_of_mass_jacobian(Q, JC, BAD)``, ``regressor(Q, QD, QDD, Y, BAD)``,
    ``centroidal(Q, A, BAD)``, ``coriolis_matrix(Q, QD, C, BAD)``, ``minus_solve(DQ, DV,
    M, BAD)`` and ``linearize(DQ, DV, MINV, V, QDD, dt, discrete, A, B, BAD)``
    (:mod:`.linearize`).
    """
    robot = _Robot(model)
    lines = ['# Generated by kron_dynamics.gpu.tangent for one robot: do not edit.',
             f'# robot {robot.name!r}, joints {robot.names}',
             'from math import cos, isfinite, nan, sin, sqrt',
             '',
             'from numba import cuda',
             'from numba import float64 as real',
             '',
             '',
             *DEVICE_FUNCTIONS,
             *tree_tables(robot.layout())]     # M along the tree: minus_solve's tables
    kernels = [_rnea_derivatives_kernel(robot), _gravity_derivative_kernel(robot),
               _mass_matrix_derivative_kernel(robot), _coriolis_tensor_kernel(robot),
               _center_of_mass_jacobian_kernel(robot, model.description.frames),
               _regressor_kernel(robot), _centroidal_kernel(robot, model.description.frames)]
    nv = robot.nbv + robot.n
    for kernel in [*kernels, _coriolis_matrix_kernel(robot), _minus_solve(robot),
                   linearize_kernel(nv, robot.n, robot.base)]:
        lines += ['', ''] + kernel
    return '\n'.join(lines) + '\n'


def _translation_seeds(robot: _Robot, body: list) -> list:
    """
    Return body with a moving base's position tangents after its orientation is normalised.

    Along integrate(q, e_k t) the base moves along its own axes: the position in the root
    joint's frame by Rq e_k (Rq of the normalised quaternion, or (cos, sin)).
    """
    if robot.base == 'floating':
        Rq = quaternion_rotation('b3', 'b4', 'b5', 'b6')
        last = 'b6'
    else:
        Rq = [['b2', '(-b3)'], ['b3', 'b2']]
        last = 'b3'
    seeds = []
    for a, row in enumerate(Rq):
        terms = [f'{_p(x)} * {_seed(k)}' for k, x in enumerate(row)]
        seeds.append(f'    g_b{a} = ' + ' + '.join(terms))
    at = body.index(f'    {last} = {last} / bscale') + 1
    return body[:at] + seeds + body[at:]


def _link_rows(model, link: str) -> tuple:
    """Return (robot, reads, body, columns, R) of a link's Jacobian, q's directions seeded."""
    robot, reads, body, columns, R = _jacobian_row(model, link)
    if robot.base != 'fixed':
        body = _translation_seeds(robot, body)
    return robot, reads, body, columns, R


_FRAMES = (WORLD, LOCAL, LOCAL_WORLD_ALIGNED)


def _by_frame(block) -> list:
    """Return the stores of a link kernel's loop, ``block(f)``'s for the frame asked."""
    return [f'        if frame == {WORLD}:', *block(0),
            f'        elif frame == {LOCAL}:', *block(1),
            '        else:', *block(2)]


def _module(robot: _Robot, link: str, kernels: list) -> str:
    """Return the source of a link's module of generated kernels."""
    lines = ['# Generated by kron_dynamics.gpu.tangent for one robot and link: do not edit.',
             f'# robot {robot.name!r}, link {link!r}',
             'from math import cos, isfinite, nan, sin, sqrt',
             '',
             'from numba import cuda',
             '',
             '',
             *DEVICE_FUNCTIONS]
    for kernel in kernels:
        lines += ['', ''] + kernel
    return '\n'.join(lines) + '\n'


def hessian_source(model, link: str) -> str:
    """
    Return the numba-cuda source of ``hessian(Q, px, py, pz, frame, H, BAD)`` for one link.

    H (N, 6, nv^2), H[t, :, s nv + k] = dJ[:, s]/dq_k, the derivative of the generated
    Jacobian (codegen's ``jacobian``, the same frames and point) along integrate(q, e_k t):
    forward mode, nv passes per state.
    """
    robot, reads, body, columns, _ = _link_rows(model, link)
    nv = robot.nbv + robot.n
    results = [x for c in range(nv) for f in _FRAMES for x in columns[c][f]]

    def stores(r: list) -> list:
        return _by_frame(lambda f: [f'            H[t, {i}, {c * nv} + d] = '
                                    f'{r[(c * 3 + f) * 6 + i]}'
                                    for c in range(nv) for i in range(6)])
    kernel = _forward_mode(robot, 'hessian', 'Q, px, py, pz, frame, H, BAD', reads, body,
                           results, nv, 'q', stores, [('H', (6, nv * nv))])
    return _module(robot, link, [kernel])


def _rates(count: int, name: str, array: str) -> tuple:
    """Return (names, load lines) of a row of ``array`` read before the loop, checked."""
    names = [f'{name}{k}' for k in range(count)]
    return names, [x for k in range(count) for x in _read(names[k], f'{array}[t, {k}]')]


def rates_source(model, link: str) -> str:
    """
    Return the numba-cuda source of a link's time derivatives, one forward pass along q'.

    ``jacobian_derivative(Q, QD, px, py, pz, frame, JD, BAD)``: J'(q, q') (N, 6, nv) =
    H (E kron q') (000 eq. 8), the tangent of the link's Jacobian (codegen's) along q' (on a
    moving base along integrate(q, v t), the CPU's); ``jacobian_derivative_times_velocity(Q,
    QD, px, py, pz, frame, JV, BAD)``: J' q' (N, 6); ``acceleration(Q, QD, QDD, px, py, pz,
    frame, A, BAD)``: J q'' + J' q' in world axes (000 eqs. 52, 62, 66), turned into the
    link's axes for LOCAL (000 eq. 59, the starred Hessian). One pass per state, not nv.
    """
    robot, reads, body, columns, R = _link_rows(model, link)
    nv = robot.nbv + robot.n
    v, load_v = _rates(nv, 'vel', 'QD')
    results = [x for c in range(nv) for f in _FRAMES for x in columns[c][f]]

    def derivative(r: list) -> list:
        return _by_frame(lambda f: [f'            JD[t, {i}, {c}] = {r[(c * 3 + f) * 6 + i]}'
                                    for c in range(nv) for i in range(6)])

    def times_velocity(r: list) -> list:
        return _by_frame(lambda f: [
            f'            JV[t, {i}] = '
            + _add(*(_mul(r[(c * 3 + f) * 6 + i], v[c]) for c in range(nv)))
            for i in range(6)])
    kernels = [_forward_mode(robot, 'jacobian_derivative',
                             'Q, QD, px, py, pz, frame, JD, BAD', reads, body, results, 1,
                             'q', derivative, [('JD', (6, nv))], v, load_v),
               _forward_mode(robot, 'jacobian_derivative_times_velocity',
                             'Q, QD, px, py, pz, frame, JV, BAD', reads, body, results, 1,
                             'q', times_velocity, [('JV', (6,))], v, load_v)]
    a, load_a = _rates(nv, 'acc', 'QDD')
    aligned = [x for c in range(nv) for x in columns[c][LOCAL_WORLD_ALIGNED]]

    def acceleration(r: list) -> list:
        world = [_add(*(_mul(columns[c][LOCAL_WORLD_ALIGNED][i], a[c]) for c in range(nv)),
                      *(_mul(r[c * 6 + i], v[c]) for c in range(nv))) for i in range(6)]
        lines = [f'        w{i} = {x}' for i, x in enumerate(world)]
        local = [_add(*(_mul(R[k][i], f'w{3 * part + k}') for k in range(3)))
                 for part in (0, 1) for i in range(3)]      # R^T (linear, angular)
        return lines + [f'        if frame == {LOCAL}:',
                        *(f'            A[t, {i}] = {x}' for i, x in enumerate(local)),
                        '        else:',
                        *(f'            A[t, {i}] = w{i}' for i in range(6))]
    kernels.append(_forward_mode(robot, 'acceleration',
                                 'Q, QD, QDD, px, py, pz, frame, A, BAD', reads, body,
                                 aligned, 1, 'q', acceleration, [('A', (6,))], v,
                                 load_v + load_a))
    return _module(robot, link, kernels)


def _minus_solve(robot: _Robot) -> list:
    """
    Return ``minus_solve(DQ, DV, M, BAD)``: DQ, DV <- -M^-1 DQ, -M^-1 DV and M <- M^-1.

    What turns (dtau/dq, dtau/dq', M) at q'' = forward_dynamics(q, q', tau) into the forward
    dynamics' derivatives (dq''/dx = -M^-1 dtau/dx; Carpentier and Mansard, 2018), per row:
    a factorization in a per-thread array (M not positive definite: BAD 2, NaN), then a
    solve per column. Up to ``codegen.UNROLLED_SOLVE`` coordinates a dense Cholesky; above,
    as the forward dynamics kernel, M = L^T L along the tree (:class:`~.codegen.TreeLayout`,
    parents first: M's entries on their chains copied into ``chol``, factored leaves first,
    each column solved descendants first and ancestors first, rows read and written through
    ``perm``).
    """
    nv = robot.nbv + robot.n
    nan = [f'        for ci in range({nv}):', f'            for ck in range({nv}):',
           '                DQ[t, ci, ck] = nan', '                DV[t, ci, ck] = nan',
           '                M[t, ci, ck] = nan']
    head = ['def minus_solve(DQ, DV, M, BAD):',
            '    t = cuda.grid(1)',
            '    if t >= M.shape[0]:',
            '        return']
    tree = robot.layout()
    if tree is None:
        size = nv * (nv + 1) // 2
        return [*head,
                f'    chol = cuda.local.array({max(size, 1)}, real)',
                f'    rhs = cuda.local.array({max(nv, 1)}, real)',
                *factored_mass_matrix(nv, nan),
                *_columns(nv, 'ci', ['        ' + line for line in _looped_substitution(nv)])]
    return [*head,
            f'    chol = cuda.local.array({tree.size}, real)',
            f'    rhs = cuda.local.array({nv}, real)',
            *tree.arrays,
            *tree_factored_mass_matrix(nv, nan),
            *_columns(nv, 'perm[ci]', _tree_substitution(nv, '            ', True, []))]


def _columns(nv: int, row: str, substitution: list) -> list:
    """
    Return minus_solve's loop over the columns of -DQ, -DV and 1, each solved in ``rhs``.

    ``row``: the row of DQ, DV and M that position ``ci`` of ``rhs`` holds; ``substitution``:
    the lines solving ``rhs`` in place (indented for the column loop).
    """
    return ['    for which in range(3):             # DQ, DV, then the columns of 1 into M',
            f'        for cc in range({nv}):',
            f'            for ci in range({nv}):',
            '                if which == 0:',
            f'                    rhs[ci] = -DQ[t, {row}, cc]',
            '                elif which == 1:',
            f'                    rhs[ci] = -DV[t, {row}, cc]',
            '                else:',
            f'                    rhs[ci] = 1.0 if {row} == cc else 0.0',
            *substitution,
            f'            for ci in range({nv}):',
            '                if which == 0:',
            f'                    DQ[t, {row}, cc] = rhs[ci]',
            '                elif which == 1:',
            f'                    DV[t, {row}, cc] = rhs[ci]',
            '                else:',
            f'                    M[t, {row}, cc] = rhs[ci]',
            '    BAD[t] = 0']
