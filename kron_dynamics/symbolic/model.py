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
Closed-form equations of motion M(q) q'' + C*(q)(q' kron q') + G(q) = tau with sympy.

:class:`SymbolicModel` holds a fixed-base tree (from a URDF, a :class:`RobotModel` or a DH
table whose entries may be symbolic) and gives, as sympy matrices in the joint order of the
model: M(q) (000 eq. 95), C*(q), n x n^2 (000 eq. 101), G(q) = dV/dq, and J_T, J_R, H_T,
H_R of any link (000 eqs. 29, 37, 51, 60). ``q1 .. qn`` are the joint coordinates in
``joint_names`` order.

How it is computed. Every quantity is a polynomial in sin q_i, cos q_i (revolute), q_i
(prismatic) and the parameters, kept in a sympy polynomial ring and reduced modulo
sin^2 q_i + cos^2 q_i = 1 after each product. That reduction is the trigonometric
simplification: it is canonical, so an element that is identically zero (joints on
different branches) comes out exactly 0, and derivatives are exact. M is
sum m J_TG^T J_TG + J_R^T I_G J_R, with each body's CoM Jacobian taken in the (constant)
frame of its top movable ancestor and J_R in the body frame, C*[i, j*n + k] =
dM_ij/dq_k - 1/2 dM_kj/dq_i, G_k = dV/dq_k. For display each element is collected by
trigonometric monomials with factored coefficients, and small elements of models with exact
numbers are passed through ``sympy.trigsimp`` when that makes them shorter (cos(q1 + q2)
instead of c1 c2 - s1 s2; double angles are not introduced, the papers write s3 c3).

Numbers. URDF floats are rationalised: an entry below 1e-12 times the largest entry of its
vector, rotation or inertia tensor becomes 0 (so cos(pi/2) = 6e-17 is 0, and so is the
round-off a rotated inertia picks up), a float within 1e-12 (relative) of a decimal with at
most 10 significant digits becomes that exact rational (0.0833 -> 833/10000,
1.0000000000000002 -> 1), every other float stays a float (53 bits). Models whose numbers are
all rational are computed exactly.

Symbolic parameters. ``SymbolicModel.from_urdf_*(..., symbolic_parameters=True)`` names every
nonzero inertial and joint-origin number of body k (the body moved by q_k, fixed links merged
into it, body-frame coordinates) as a symbol: ``m{k}`` mass; ``xG{k}, yG{k}, zG{k}`` centre
of mass; ``I{k}x, I{k}y, I{k}z`` diagonal and ``I{k}xy, I{k}xz, I{k}yz`` off-diagonal
entries of the central inertia tensor; ``r{k}x, r{k}y, r{k}z`` the joint origin in the
parent body's frame; ``g`` the magnitude of gravity. Entries that are 0 in the URDF stay 0,
rotations and joint axes stay numeric. The numbers of the URDF are kept as the parameters'
values (``parameter_values``; the defaults of generated code).

DH tables. :meth:`SymbolicModel.from_dh` takes standard DH rows (dicts or
:class:`~kron_dynamics.model.dh.DHRow`), A_i = Rz(theta + q_i) Tz(d) Tx(a) Rx(alpha) (revolute) or
Rz(theta) Tz(d + q_i) Tx(a) Rx(alpha) (prismatic), with body i in DH frame i (``link{i}``),
DH frame 0 ``link0`` placed in the root ``base_link`` by ``base_xyz``/``base_rpy``, exactly
like :func:`kron_dynamics.model.dh.dh_to_urdf`. Any entry may be a number, a sympy expression or a
string that sympy parses (``"l3 - a3"``, ``"pi/2"``, ``"m3"``; names other than ``pi``,
``sin``, ``cos``, ``tan`` and ``sqrt`` are real symbols). The DH YAML file
(:func:`load_dh_yaml`) is::

    robot: stacker                   # name (default: the file name)
    base_xyz: [0, 0, 0]              # optional: DH frame 0 (link0) in base_link
    base_rpy: [-pi/2, 0, 0]          # optional, URDF roll-pitch-yaw
    gravity: [0, 0, -g]              # optional, in base_link (default [0, 0, -9.81])
    parameters: {m1: 200000, g: 9.81}   # optional values of the symbols
    rows:                            # one per joint, base to tip
      - joint: q1_travel             # default joint{i}
        type: prismatic              # revolute (default) or prismatic
        a: 0                         # a, alpha, d, theta: default 0; theta (revolute) or
        alpha: pi/2                  #   d (prismatic) is an offset added to q_i
        mass: m1                     # default 0
        com: [0, 0, 0]               # in DH frame i, default 0
        inertia: [I1x, I1y, I1z]     # central, DH frame i: 3 principal values or 3 x 3
                                     # (lower, upper, effort, velocity: accepted, unused)

:func:`stacker_symbolic` is the stacker of 000 (Table 1) with the papers' symbols.
Parameter names must not be ``q``, ``qd``, ``qdd``, ``q<k>``, ``qd<k>``, ``qdd<k>``, ``s<k>``,
``c<k>``, ``np``, ``math``, ``params``, ``kwargs``, Python keywords or start with ``_``.

Mimic joints. A URDF ``<mimic>`` (or a DH row's ``mimic``: a joint name, [joint, multiplier,
offset] or {joint, multiplier, offset}) makes a joint follow another, q = B u + d (004
section 5): the model is then a :class:`CoupledSymbolicModel` whose coordinates
``q1 .. qn`` are the independent joints; M, C*, G and the Jacobians are computed on the
whole tree and projected, M_u = B^T M B, C*_u = B^T C* (B kron B), G_u = B^T G, with each
mimic joint's coordinate replaced by multiplier * q_primary + offset (sin(q3 + 1/50) for an
offset, -sin(q3) for a multiplier of -1).

Limits. Symbolic expressions grow fast with n. Every computation checks the elapsed time
between steps and predicts the cost of each polynomial product (no signals), and measures the
size of M, C* and G as the operation count of their expanded form; it raises
:class:`SymbolicTooLarge` (a :class:`~kron_dynamics.errors.ModelError`) naming the bound
``max_seconds`` (default 30 s) or ``max_operations`` (default 500,000) and how to raise it,
instead of running for hours. Code generation predicts its own time (about 0.25 ms per
operation on a 2-core machine) and refuses, naming ``max_seconds``, when it would exceed it.
"""

from dataclasses import dataclass, field
import keyword
import math
from pathlib import Path
import re
import time

import numpy as np
import sympy as sp
from sympy.polys.domains import QQ, RR
from sympy.polys.rings import PolyRing

from ..errors import ModelError
from ..model.coordinates import JointMap
from ..model.dh import mimic_spec
from ..model.mimic import resolve_mimics
from ..model.rotations import elementary_rows, rpy_rows
from .budget import Budget, checked_bounds, DEFAULT_MAX_OPERATIONS, DEFAULT_MAX_SECONDS
from .codegen import latex_document, python_module, text_equations

ZERO_TOL = 1e-12                 # |x| below this is 0
DECIMAL_TOL = 1e-12              # relative distance to a short decimal that makes it exact
CHOP_TOL = 1e-14                 # float-domain terms below this (relative) are round-off
TRIG_OPS = 60                    # elements up to this size get sympy.trigsimp for display
TRIG_SECONDS = 5.0               # at most this much trigsimp per model (display only)
RESERVED = {'q', 'qd', 'qdd', 'np', 'math', 'params', 'kwargs', 'tau', 'pi'}
RESERVED_PATTERN = re.compile(r'^(q|qd|qdd|s|c|tau)\d+$|^_')
FUNCTIONS = {'pi': sp.pi, 'sin': sp.sin, 'cos': sp.cos, 'tan': sp.tan, 'sqrt': sp.sqrt}


# --------------------------------------------------------------------------- numbers and text
def exact_number(x, scale: float = 1.0) -> sp.Expr:
    """
    Rationalise a float: near 0 -> 0, near a short decimal -> that rational, else Float.

    "Near 0" is below 1e-12 times ``scale`` (the size of the array the number comes from).
    """
    x = float(x)
    if not math.isfinite(x):
        raise ModelError(f'not a finite number: {x!r}')
    if abs(x) < ZERO_TOL * scale:
        return sp.Integer(0)
    short = f'{x:.10g}'
    if abs(float(short) - x) <= DECIMAL_TOL * abs(x):
        return sp.Rational(short)
    return sp.Float(x)


def exact_array(values) -> sp.Matrix:
    """Rationalise a numeric vector or matrix, zero threshold relative to its largest entry."""
    a = np.asarray(values, dtype=float)
    scale = float(np.max(np.abs(a))) if a.size else 0.0
    scale = scale if scale > 0 else 1.0
    flat = [exact_number(x, scale) for x in a.ravel()]
    return sp.Matrix(a.shape[0], a.shape[1] if a.ndim == 2 else 1, flat)


def _angle(x) -> sp.Expr:
    """Return an angle, exact when a float is a multiple of pi/12 (pi/2 -> pi/2)."""
    if isinstance(x, (int, float, np.floating, np.integer)) and not isinstance(x, bool):
        ratio = sp.Rational(round(float(x) / math.pi * 12), 12)
        if abs(float(ratio) * math.pi - float(x)) < 1e-12:
            return ratio * sp.pi
    return to_expr(x, 'angle')


def symbol(name: str) -> sp.Symbol:
    """Return the real sympy symbol the module uses for ``name`` (q1, m3, I3x, ...)."""
    return sp.Symbol(name, real=True)


def parse_expression(text: str, where: str = 'expression') -> sp.Expr:
    """
    Parse a number or a formula like ``"l3 - a3"`` or ``"pi/2"`` into a sympy expression.

    Names other than pi, sin, cos, tan and sqrt become real symbols; ``^`` is a power.
    """
    text = str(text).strip()
    if not text:
        raise ModelError(f'{where}: empty expression')
    if re.search(r'__|\.[A-Za-z_]|[^\w\s+\-*/().^]', text):
        raise ModelError(f'{where}: cannot parse {text!r} (numbers, names, + - * / ^ and '
                         'parentheses only)')
    names = {name: FUNCTIONS.get(name, None) for name in re.findall(r'[A-Za-z_]\w*', text)}
    local = {name: (obj if obj is not None else symbol(name)) for name, obj in names.items()}
    try:
        from sympy.parsing.sympy_parser import (convert_xor, parse_expr,
                                                standard_transformations)
        expr = parse_expr(text, local_dict=local,
                          transformations=standard_transformations + (convert_xor,))
    except Exception as exc:  # sympy raises SyntaxError, TypeError, TokenError, ...
        raise ModelError(f'{where}: cannot parse {text!r}: {exc}') from None
    if not isinstance(expr, sp.Expr) or expr.has(sp.I) or expr.has(sp.zoo, sp.nan, sp.oo):
        raise ModelError(f'{where}: {text!r} is not a real expression')
    return expr


def to_expr(value, where: str = 'value') -> sp.Expr:
    """Turn a number, string or sympy expression into a sympy expression (floats rationalised)."""
    if isinstance(value, sp.Basic):
        if not isinstance(value, sp.Expr):
            raise ModelError(f'{where}: {value!r} is not an expression')
        if value.has(sp.I) or value.has(sp.zoo, sp.nan, sp.oo, -sp.oo):
            raise ModelError(f'{where}: {value!r} is not a real expression')
        return value.xreplace({f: exact_number(f) for f in value.atoms(sp.Float)})
    if isinstance(value, bool):
        raise ModelError(f'{where}: expected a number or an expression, got {value!r}')
    if isinstance(value, (int, np.integer)):
        return sp.Integer(int(value))
    if isinstance(value, (float, np.floating)):
        try:
            return exact_number(value)
        except ModelError:
            raise ModelError(f'{where}: {value!r} is not finite') from None
    if isinstance(value, str):
        return to_expr(parse_expression(value, where), where)
    raise ModelError(f'{where}: expected a number or an expression, got {value!r}')


def _sequence(values):
    """Return values as a list, or None if it is not a sequence (a string is not one)."""
    if isinstance(values, np.ndarray):
        if values.ndim == 0:
            return None
        row_or_column = values.ndim == 1 or 1 in values.shape
        return values.ravel().tolist() if row_or_column else values.tolist()
    if isinstance(values, sp.MatrixBase):
        return list(values) if 1 in values.shape else values.tolist()
    if isinstance(values, (list, tuple)):
        return list(values)
    return None


def _vector(values, where: str) -> sp.Matrix:
    items = _sequence(values)
    if items is None:
        raise ModelError(f'{where}: expected a list of 3 entries, got {values!r}')
    if len(items) != 3:
        raise ModelError(f'{where}: expected 3 entries, got {len(items)}')
    return sp.Matrix([to_expr(v, f'{where}[{i}]') for i, v in enumerate(items)])


def _matrix3(values, where: str) -> sp.Matrix:
    rows = [list(r) for r in values]
    if len(rows) != 3 or any(len(r) != 3 for r in rows):
        raise ModelError(f'{where}: expected a 3 x 3 matrix')
    return sp.Matrix([[to_expr(v, f'{where}[{i}][{j}]') for j, v in enumerate(r)]
                      for i, r in enumerate(rows)])


def _inertia(values, where: str) -> sp.Matrix:
    """Return a 3 x 3 inertia from 3 principal values or a 3 x 3 (nested) list."""
    items = _sequence(values)
    if items is None:
        raise ModelError(f'{where}: inertia must be 3 values or a 3 x 3 matrix, '
                         f'got {values!r}')
    nested = [isinstance(v, (list, tuple, np.ndarray)) for v in items]
    if len(items) == 3 and not any(nested):
        return sp.diag(*_vector(items, where))
    if len(items) != 3 or not all(nested):
        raise ModelError(f'{where}: inertia must be 3 values or a 3 x 3 matrix, got {values!r}')
    I_ = _matrix3(items, where)
    if I_ != I_.T:
        raise ModelError(f'{where}: inertia tensor is not symmetric')
    return I_


def _rot_x(a):
    return sp.Matrix(elementary_rows('x', sp.cos(a), sp.sin(a)))


def _rot_z(a):
    return sp.Matrix(elementary_rows('z', sp.cos(a), sp.sin(a)))


def rpy_matrix(rpy) -> sp.Matrix:
    """Return Rz(yaw) Ry(pitch) Rx(roll) (URDF rpy) with exact entries where possible."""
    r, p, y = (_angle(a) for a in rpy)
    rows = rpy_rows(sp.cos(r), sp.sin(r), sp.cos(p), sp.sin(p), sp.cos(y), sp.sin(y))
    return sp.Matrix(rows).applyfunc(lambda e: to_expr(sp.expand(e)))


def _check_name(name: str, where: str):
    if (name in RESERVED or RESERVED_PATTERN.match(name) or keyword.iskeyword(name)
            or not name.isidentifier()):
        raise ModelError(f"{where}: the parameter name '{name}' is reserved (q, qd, qdd, "
                         "q<k>, qd<k>, qdd<k>, s<k>, c<k>, tau, np, math, params, kwargs, pi, "
                         "Python keywords and names starting with _ are taken); rename it")


def natural_key(name: str):
    """Sort key that puts m2 before m10."""
    return [int(t) if t.isdigit() else t for t in re.split(r'(\d+)', name)]


# --------------------------------------------------------------------------- the tree spec
@dataclass
class BodySpec:
    """
    One body: frame = parent frame * (R0, p0) * joint(q) * (Rpost, ppost).

    ``axis`` is the unit joint axis in the frame after (R0, p0); mass, com and the central
    inertia are in the body frame. All entries are sympy expressions.
    """

    joint: str
    parent: int
    revolute: bool
    axis: sp.Matrix
    R0: sp.Matrix
    p0: sp.Matrix
    Rpost: sp.Matrix
    ppost: sp.Matrix
    mass: sp.Expr
    com: sp.Matrix
    inertia: sp.Matrix
    joint_type: str = 'revolute'

    def substituted(self, values: dict) -> 'BodySpec':
        """Return the body with symbols replaced by values."""
        def f(x):
            return to_expr(x.xreplace(values))
        return BodySpec(self.joint, self.parent, self.revolute, self.axis.applyfunc(f),
                        self.R0.applyfunc(f), self.p0.applyfunc(f), self.Rpost.applyfunc(f),
                        self.ppost.applyfunc(f), f(self.mass), self.com.applyfunc(f),
                        self.inertia.applyfunc(f), self.joint_type)


# --------------------------------------------------------------------------- the algebra
class _Algebra:
    """
    Polynomial ring in sin q, cos q (revolute), q (prismatic), the parameters and placeholders.

    Placeholders stand for non-polynomial parameter expressions (sin(alpha2), 1/l3, ...).
    ``reduce`` rewrites sin^2 as 1 - cos^2 for every sin/cos pair.
    """

    def __init__(self, q_syms, revolute, exprs, budget):
        self.budget = budget
        n = len(q_syms)
        self.n = n
        self.table = {}                      # non-polynomial expression -> placeholder
        polys = [self._polynomialize(e) for e in exprs]
        floats = any(p.atoms(sp.Float) for p in polys)
        self.domain = RR if floats else QQ
        self.exact = not floats
        kin_syms, kin_exprs, pairs, self.q_gen = [], [], [], [None] * n
        for b in range(n):
            if revolute[b]:
                s, c = sp.Dummy(f's{b}'), sp.Dummy(f'c{b}')
                kin_syms += [s, c]
                kin_exprs += [sp.sin(q_syms[b]), sp.cos(q_syms[b])]
                pairs.append((len(kin_syms) - 2, len(kin_syms) - 1))
                self.q_gen[b] = (len(kin_syms) - 2, len(kin_syms) - 1)
            else:
                kin_syms.append(sp.Dummy(f'q{b}'))
                kin_exprs.append(q_syms[b])
                self.q_gen[b] = (len(kin_syms) - 1,)
        params = sorted(set().union(*[p.free_symbols for p in polys]) - set(self.table.values()),
                        key=lambda s: natural_key(s.name))
        # sin/cos placeholders of the same argument form pairs as well
        trig = {}
        for original, ph in list(self.table.items()):
            if isinstance(original, (sp.sin, sp.cos)):
                trig.setdefault(original.args[0], {})[type(original)] = ph
        for arg, d in trig.items():
            for f in (sp.sin, sp.cos):
                if f not in d:
                    d[f] = self.table[f(arg)] = sp.Dummy(f'p{len(self.table)}')
        holders = list(self.table.values())
        self.par_syms = params + holders
        gens = kin_syms + self.par_syms
        self.ring = PolyRing(gens, self.domain)
        self.gens = self.ring.gens
        self.n_kin = len(kin_syms)
        self.kin_exprs = kin_exprs
        self.q_syms = set(q_syms)
        index = {g: i for i, g in enumerate(gens)}
        for arg, d in trig.items():
            pairs.append((index[d[sp.sin]], index[d[sp.cos]]))
        self.pairs = pairs
        self.back = {ph: original for original, ph in self.table.items()}
        self.elements = [self.ring.from_expr(p) if p != 0 else self.ring.zero for p in polys]
        self.half = self.ring.from_expr(sp.Rational(1, 2))
        self.trig_seconds = 0.0

    # -- conversion
    def _polynomialize(self, expr):
        """Replace non-polynomial sub-expressions by placeholders; evaluate pure numbers."""
        if expr.is_Rational or expr.is_Symbol:
            return expr
        if expr.is_Float:
            return exact_number(expr)
        if expr.is_number:
            value = expr.evalf(30)
            if value.has(sp.I):
                raise ModelError(f'{expr} is not real')
            return to_expr(value) if not isinstance(value, sp.Float) else exact_number(value)
        if expr.is_Add or expr.is_Mul:
            return expr.func(*[self._polynomialize(a) for a in expr.args])
        if expr.is_Pow and expr.exp.is_Integer and expr.exp >= 0:
            return self._polynomialize(expr.base) ** expr.exp
        if expr not in self.table:
            self.table[expr] = sp.Dummy(f'p{len(self.table)}')
        return self.table[expr]

    def convert(self, expr):
        """Return a ring element for an expression in the model's parameters."""
        poly = self._polynomialize(to_expr(expr))
        unknown = poly.free_symbols - set(self.par_syms)
        if unknown:
            raise ModelError(f'{expr}: unknown symbol(s) {sorted(map(str, unknown))}')
        return self.ring.from_expr(poly) if poly != 0 else self.ring.zero

    # -- arithmetic
    def reduce(self, p):
        """Rewrite sin^2 as 1 - cos^2 (canonical form); chop float round-off."""
        pairs = self.pairs
        if not any(m[si] >= 2 for m in p for si, _ in pairs):
            return self._chop(p) if not self.exact else p
        out = {}
        stack = list(p.items())
        while stack:
            m, c = stack.pop()
            for si, ci in pairs:
                e = m[si]
                if e >= 2:
                    m1 = m[:si] + (e - 2,) + m[si + 1:]
                    m2 = m1[:ci] + (m1[ci] + 2,) + m1[ci + 1:]
                    stack.append((m1, c))
                    stack.append((m2, -c))
                    break
            else:
                v = out.get(m)
                out[m] = c if v is None else v + c
        p = self.ring.dtype({m: c for m, c in out.items() if c})
        return self._chop(p) if not self.exact else p

    def _chop(self, p):
        if not p:
            return p
        scale = max(abs(c) for c in p.values())
        if not any(abs(c) < CHOP_TOL * scale for c in p.values()):
            return p
        return self.ring.dtype({m: c for m, c in p.items() if abs(c) >= CHOP_TOL * scale})

    def mul(self, a, b, where='product'):
        if not a or not b:
            return self.ring.zero
        self.budget.charge(len(a) * len(b), where)
        return a * b

    def dot(self, u, v, where='product'):
        out = self.ring.zero
        for a, b in zip(u, v):
            if a and b:
                out += self.mul(a, b, where)
        return self.reduce(out)

    def matvec(self, A, v, where='product'):
        return [self.dot(row, v, where) for row in A]

    def matmul(self, A, B, where='product'):
        cols = [[B[i][j] for i in range(3)] for j in range(3)]
        return [[self.dot(row, col, where) for col in cols] for row in A]

    def transpose(self, A):
        return [[A[j][i] for j in range(3)] for i in range(3)]

    def diff(self, p, b):
        """Return d p / d q_b (chain rule through sin and cos), reduced."""
        if not p:
            return p
        g = self.q_gen[b]
        if len(g) == 1:
            return p.diff(self.gens[g[0]])
        s, c = self.gens[g[0]], self.gens[g[1]]
        return self.reduce(c * p.diff(s) - s * p.diff(c))

    @staticmethod
    def operations(p) -> int:
        """Operation count of the expanded polynomial (like sympy.count_ops)."""
        if not p:
            return 0
        ops = len(p) - 1
        for m, c in p.items():
            factors = sum(1 for e in m if e)
            ops += max(factors - 1, 0) + sum(1 for e in m if e > 1) + (abs(c) != 1 and factors > 0)
        return ops

    # -- back to sympy
    def to_sympy(self, p, trig_simplify=True) -> sp.Expr:
        """Return the display form: collected by trigonometric monomials, coefficients factored."""
        if not p:
            return sp.Integer(0)
        nk = self.n_kin
        groups = {}
        for m, c in p.items():
            groups.setdefault(m[:nk], []).append((m[nk:], c))
        to_sym = self.domain.to_sympy
        terms = []
        for kin, items in groups.items():
            coeff = sp.Add(*[to_sym(c) * sp.Mul(*[g ** e for g, e in zip(self.par_syms, par)
                                                  if e]) for par, c in items])
            if self.exact and coeff.free_symbols and len(items) <= 16:
                coeff = _keep_if_better(coeff, sp.factor(coeff))
            kin_expr = sp.Mul(*[x ** e for x, e in zip(self.kin_exprs, kin) if e])
            terms.append(coeff * kin_expr)
        expr = sp.Add(*terms)
        if self.back:
            expr = expr.xreplace(self.back)
        if self.exact and expr.free_symbols - self.q_syms:
            expr = _flat_mul(_keep_if_better(expr, sp.factor_terms(expr)))   # m3 l3 (...)
        if (trig_simplify and self.exact and self.trig_seconds < TRIG_SECONDS
                and self._angle_sum_candidate(p)):
            start = time.perf_counter()
            expr = _trig_simplify(expr)
            self.trig_seconds += time.perf_counter() - start
        return expr

    def _angle_sum_candidate(self, p) -> bool:
        """Whether p has c_a c_b and s_a s_b (or s_a c_b and c_a s_b) with equal coefficients."""
        qpairs = [g for g in self.q_gen if len(g) == 2]
        if len(qpairs) < 2:
            return False
        for m, c in p.items():
            for a, (sa, ca) in enumerate(qpairs):
                for sb, cb in qpairs[a + 1:]:
                    for x, y, u, v in ((ca, cb, sa, sb), (sa, cb, ca, sb)):
                        if m[x] and m[y]:
                            m2 = list(m)
                            m2[x] -= 1
                            m2[y] -= 1
                            m2[u] += 1
                            m2[v] += 1
                            partner = p.get(tuple(m2))
                            if partner is not None and (partner == c or partner == -c):
                                return True
        return False


def _keep_if_better(expr, factored):
    """
    Return factored if it pulls out a symbol or is shorter, else expr.

    (I3y - I3z)/2 is kept; (4*I + 9*l**2*m)/4 and 5000*(5052*c**2 + 545) are not.
    """
    if not factored.is_Mul:
        return expr
    if any(not (a.is_Number or a.is_Add) for a in factored.args):
        return factored
    return factored if sp.count_ops(factored) < sp.count_ops(expr) else expr


def _flat_mul(expr):
    """Merge products nested in products (factor_terms leaves 9*(l**2*m)/4), keep the rest."""
    if not expr.args:
        return expr
    args = [_flat_mul(a) for a in expr.args]
    if expr.is_Mul and any(a.is_Mul for a in args):
        flat = [f for a in args for f in (a.args if a.is_Mul else (a,))]
        return sp.Mul(*flat, evaluate=False)
    if args == list(expr.args):
        return expr
    return expr.func(*args, evaluate=False)


def _trig_simplify(expr):
    """Return sympy.trigsimp(expr) when it is shorter and keeps the papers' style."""
    trig = expr.atoms(sp.sin, sp.cos)
    if len(trig) < 2:
        return expr
    ops = sp.count_ops(expr)
    if ops > TRIG_OPS:
        return expr
    try:
        simpler = sp.trigsimp(expr)
    except Exception:  # trigsimp gives up on some forms; the polynomial form is correct
        return expr
    if sp.count_ops(simpler) >= ops:
        return expr
    for f in simpler.atoms(sp.Function):
        if not isinstance(f, (sp.sin, sp.cos)):
            return expr
        if any(abs(c) != 1 for c in f.args[0].as_coefficients_dict().values()):
            return expr      # a double angle: keep s3 c3 as the papers write it
    if any(p.exp.is_negative for p in simpler.atoms(sp.Pow)):
        return expr
    return simpler


# --------------------------------------------------------------------------- the model
def _refuse_moving_base(model, where: str = '') -> None:
    """Raise ModelError for a floating or planar base: closed forms are of fixed-base trees."""
    if getattr(model, 'base', 'fixed') != 'fixed':
        raise ModelError(
            f"{where}robot '{model.name}' has a {getattr(model, 'base', 'moving')} base: the "
            'closed forms are of fixed-base trees (a base pose is no set of joint '
            'coordinates); remove the world link and its root joint for the equations of '
            'the tree on a fixed base (or pass model.fixed)')


class SymbolicModel:
    """
    A fixed-base tree whose equations of motion are computed in closed form with sympy.

    Build it with :meth:`from_urdf_file`, :meth:`from_urdf_string`, :meth:`from_model`,
    :meth:`from_dh`, :func:`load_dh_yaml` or :func:`stacker_symbolic`. All matrices are
    sympy matrices in ``joint_names`` order, with ``q1 .. qn`` (``self.q``) the joint
    coordinates and ``self.parameters`` the symbols of the model.
    """

    def __init__(self, name: str, bodies: list, user_order: list, frames: dict,
                 gravity, parameter_values: dict | None = None, source: str = '',
                 armature=None, max_seconds=DEFAULT_MAX_SECONDS,
                 max_operations=DEFAULT_MAX_OPERATIONS, trig_simplify: bool = True):
        n = len(bodies)
        if n == 0:
            raise ModelError(f'{source or name}: the model has no movable joints')
        if sorted(user_order) != list(range(n)):
            raise ModelError('user_order must be a permutation of the bodies')
        self.name = name
        self.source = source or name
        self.bodies = list(bodies)
        self._order = list(user_order)               # user index -> internal body
        self._user = [0] * n                         # internal body -> user index
        for u, b in enumerate(self._order):
            self._user[b] = u
        self.joint_names = [bodies[b].joint for b in self._order]
        self.joint_types = [bodies[b].joint_type for b in self._order]
        self.frames = dict(frames)
        self.gravity = _vector(gravity, 'gravity')
        armature = [0] * n if armature is None else armature
        self.armature = [to_expr(a, 'armature') for a in armature]
        if len(self.armature) != n:
            raise ModelError(f'armature must have {n} entries')
        self.max_seconds, self.max_operations = checked_bounds(max_seconds, max_operations)
        if not isinstance(trig_simplify, (bool, np.bool_)):
            raise ModelError(f'trig_simplify must be True or False, got {trig_simplify!r}')
        self.trig_simplify = bool(trig_simplify)
        self.q = tuple(symbol(f'q{u + 1}') for u in range(n))
        syms = set(self.gravity.free_symbols)
        for body in bodies:
            for part in (body.axis, body.R0, body.p0, body.Rpost, body.ppost, body.com,
                         body.inertia):
                syms |= part.free_symbols
            syms |= body.mass.free_symbols
        for _, R, p in self.frames.values():
            syms |= R.free_symbols | p.free_symbols
        for s in syms:
            _check_name(s.name, self.source)
        self.parameters = sorted(syms, key=lambda s: natural_key(s.name))
        names = {s.name for s in self.parameters}
        values = dict(parameter_values or {})
        unknown = sorted(set(values) - names)
        if unknown:
            raise ModelError(f'{self.source}: values given for unknown parameter(s) {unknown}; '
                             f'the model has {sorted(names, key=natural_key)}')
        self.parameter_values = {k: float(v) for k, v in values.items()}
        self._alg = None
        self._cache = {}
        self._active = None

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_model(cls, model, symbolic_parameters: bool = False, **options) -> 'SymbolicModel':
        """Build from a :class:`~kron_dynamics.RobotModel` (its joint order and armature)."""
        _refuse_moving_base(model)
        if not isinstance(symbolic_parameters, (bool, np.bool_)):
            raise ModelError(f'symbolic_parameters must be True or False, got '
                             f'{symbolic_parameters!r}')
        if 'armature' in options:
            raise ModelError('from_model takes the armature of the RobotModel: build it with '
                             'armature=... (or model.with_armature(...)) first')
        if model.mimic_joints:
            full = cls.from_model(model.unconstrained, symbolic_parameters, **options)
            B, d = model.coupling()
            return CoupledSymbolicModel(full, model.joint_names, B, d, model.armature,
                                        model.mimic_joints)
        tree = model.tree
        parsed = model.description
        n = tree.n
        order = [parsed.joint_names.index(j) for j in model.joint_names]
        user = [0] * n
        for u, b in enumerate(order):
            user[b] = u
        values = {}
        eye, zero = sp.eye(3), sp.zeros(3, 1)

        def named(value, name):
            if not symbolic_parameters or value == 0:
                return value
            values[name] = float(value)
            return symbol(name)

        bodies = []
        for b in range(n):
            k = user[b] + 1
            info = parsed.joints[parsed.joint_names[b]]
            mass = named(exact_number(tree.mass[b]), f'm{k}')
            c, p, I_ = exact_array(tree.com[b]), exact_array(tree.p0[b]), exact_array(
                tree.inertia[b])
            com = sp.Matrix([named(c[i], f'{a}G{k}') for i, a in enumerate('xyz')])
            p0 = sp.Matrix([named(p[i], f'r{k}{a}') for i, a in enumerate('xyz')])
            inertia = sp.zeros(3, 3)
            for i in range(3):
                for j in range(i, 3):
                    label = f'I{k}' + ('xyz'[i] if i == j else 'xyz'[i] + 'xyz'[j])
                    inertia[i, j] = inertia[j, i] = named(I_[i, j], label)
            bodies.append(BodySpec(parsed.joint_names[b], int(tree.parent[b]),
                                   bool(tree.revolute[b]), exact_array(tree.axis[b]),
                                   exact_array(tree.R0[b]), p0, eye, zero, mass, com, inertia,
                                   info.type))
        gravity = exact_array(tree.gravity)
        if symbolic_parameters:
            g = float(np.linalg.norm(tree.gravity))
            if g > 0:
                values['g'] = g
                gravity = exact_array(tree.gravity / g) * symbol('g')
        frames = {link: (int(body), exact_array(R), exact_array(p))
                  for link, (body, R, p) in parsed.frames.items()}
        armature = [exact_number(a) for a in model.armature]
        return cls(model.name, bodies, order, frames, gravity, values, source=model.name,
                   armature=armature, **options)

    @classmethod
    def from_urdf_string(cls, xml: str, joint_names=None, gravity=(0.0, 0.0, -9.81),
                         symbolic_parameters: bool = False, source: str = '<string>',
                         armature=None, **options) -> 'SymbolicModel':
        """
        Build from URDF text (see the module docstring for the parameter names).

        ``joint_names``, ``gravity`` and ``armature`` as for ``RobotModel.from_urdf_string``.
        """
        from ..robot_model import RobotModel
        model = RobotModel.from_urdf_string(xml, joint_names, gravity, armature, source=source)
        _refuse_moving_base(model, f'{source}: ')
        sm = cls.from_model(model, symbolic_parameters, **options)
        sm.source = source
        return sm

    @classmethod
    def from_urdf_file(cls, path, joint_names=None, gravity=(0.0, 0.0, -9.81),
                       symbolic_parameters: bool = False, armature=None,
                       **options) -> 'SymbolicModel':
        """Build from a URDF file (the arguments of :meth:`from_urdf_string`)."""
        try:
            xml = Path(path).read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise ModelError(f'cannot read URDF file {path}: {exc}') from None
        return cls.from_urdf_string(xml, joint_names, gravity, symbolic_parameters,
                                    source=str(path), armature=armature, **options)

    @classmethod
    def from_dh(cls, rows, name: str = 'dh_robot', base_xyz=(0, 0, 0), base_rpy=(0, 0, 0),
                gravity=(0, 0, -9.81), parameter_values: dict | None = None,
                **options) -> 'SymbolicModel':
        """
        Build from a standard DH table (dicts with the YAML keys, or DHRow objects).

        Body i is DH frame i (``link{i}``); ``link0`` is placed in ``base_link`` by
        ``base_xyz`` and ``base_rpy``; ``gravity`` is in ``base_link``.
        """
        if not rows:
            raise ModelError(f'{name}: DH table is empty')
        R_base = rpy_matrix(base_rpy)
        p_base = _vector(base_xyz, f'{name}: base_xyz')
        frames = {'base_link': (-1, sp.eye(3), sp.zeros(3, 1)), 'link0': (-1, R_base, p_base)}
        bodies = []
        keys = {'joint', 'type', 'a', 'alpha', 'd', 'theta', 'mass', 'com', 'inertia',
                'lower', 'upper', 'effort', 'velocity', 'mimic'}
        declared = {}
        for i, row in enumerate(rows, start=1):
            if not isinstance(row, dict):
                row = dict(row.__dict__)
            where = f"{name}: DH row {i}"
            unknown = sorted(set(row) - keys)
            if unknown:
                raise ModelError(f'{where}: unknown key(s) {unknown}; allowed: {sorted(keys)}')
            joint = str(row.get('joint', f'joint{i}'))
            where = f"{where} (joint '{joint}')"
            jtype = row.get('type', 'revolute')
            mimic = mimic_spec(row.get('mimic'), where)
            if mimic is not None:
                declared[joint] = mimic
            if jtype not in ('revolute', 'prismatic'):
                raise ModelError(f"{where}: type must be 'revolute' or 'prismatic', got "
                                 f'{jtype!r}')
            a = to_expr(row.get('a', 0), f'{where}: a')
            alpha = _angle(row.get('alpha', 0))
            d = to_expr(row.get('d', 0), f'{where}: d')
            theta = _angle(row.get('theta', 0))
            mass = to_expr(row.get('mass', 0), f'{where}: mass')
            if mass.is_number and mass < 0:
                raise ModelError(f'{where}: mass must be >= 0')
            com = _vector(row.get('com', (0, 0, 0)), f'{where}: com')
            inertia = _inertia(row.get('inertia', (0, 0, 0)), f'{where}: inertia')
            Rz = _rot_z(theta)
            R0 = R_base * Rz if i == 1 else Rz
            p0 = sp.Matrix([0, 0, d])
            if i == 1:
                p0 = p_base + R_base * p0
            bodies.append(BodySpec(
                joint, i - 2, jtype == 'revolute', sp.Matrix([0, 0, 1]),
                R0.applyfunc(sp.expand), p0.applyfunc(sp.expand), _rot_x(alpha),
                sp.Matrix([a, 0, 0]), mass, com, inertia, jtype))
            frames[f'link{i}'] = (i - 1, sp.eye(3), sp.zeros(3, 1))
        names = [b.joint for b in bodies]
        dup = sorted({j for j in names if names.count(j) > 1})
        if dup:
            raise ModelError(f'{name}: duplicate joint name(s) {dup}')
        model = cls(name, bodies, list(range(len(bodies))), frames, gravity, parameter_values,
                    source=options.pop('source', name), **options)
        if not declared:
            return model
        mimics = resolve_mimics(declared, names, (), name)
        independent = [j for j in names if j not in mimics]
        m = JointMap(names, independent, mimics)
        return CoupledSymbolicModel(model, independent, m.B, m.d, [0] * len(independent),
                                    mimics)

    def with_parameters(self, values: dict | None = None) -> 'SymbolicModel':
        """Return a copy with parameters replaced by numbers (default: all known values)."""
        values = self.parameter_values if values is None else values
        names = {s.name: s for s in self.parameters}
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise ModelError(f'unknown parameter(s) {unknown}')
        sub = {names[k]: to_expr(v, k) for k, v in values.items()}
        bodies = [b.substituted(sub) for b in self.bodies]
        frames = {k: (b, R.xreplace(sub), p.xreplace(sub)) for k, (b, R, p) in self.frames.items()}
        left = {k: v for k, v in self.parameter_values.items() if k not in values}
        return SymbolicModel(self.name, bodies, self._order, frames,
                             self.gravity.xreplace(sub), left, self.source,
                             [a.xreplace(sub) for a in self.armature], self.max_seconds,
                             self.max_operations, self.trig_simplify)

    # ------------------------------------------------------------------ properties
    @property
    def n(self) -> int:
        """Return the number of joint coordinates."""
        return len(self.bodies)

    @property
    def link_names(self) -> list:
        """Links (frames) that :meth:`jacobians` accepts."""
        return list(self.frames)

    def symbols(self, names: str):
        """Return the model's symbols for names like ``'m3 l3 q2'`` (a tuple, or one symbol)."""
        out = tuple(symbol(n) for n in names.replace(',', ' ').split())
        return out[0] if len(out) == 1 else out

    @property
    def qd(self):
        """Joint velocity symbols qd1 .. qdn."""
        return tuple(symbol(f'qd{u + 1}') for u in range(self.n))

    @property
    def qdd(self):
        """Joint acceleration symbols qdd1 .. qddn."""
        return tuple(symbol(f'qdd{u + 1}') for u in range(self.n))

    def _budget(self, what):
        if self._active is not None:      # inside equations(): one bound for everything
            return self._active
        return Budget(f"'{self.name}' ({what})", self.max_seconds, self.max_operations)

    # ------------------------------------------------------------------ ring and kinematics
    def _algebra(self, budget) -> _Algebra:
        if self._alg is not None:
            self._alg.budget = budget
            return self._alg
        exprs = list(self.gravity) + list(self.armature)
        for body in self.bodies:
            for part in (body.axis, body.R0, body.p0, body.Rpost, body.ppost, body.com,
                         body.inertia):
                exprs += list(part)
            exprs.append(body.mass)
        for _, R, p in self.frames.values():
            exprs += list(R) + list(p)
        q_internal = [self.q[self._user[b]] for b in range(self.n)]
        alg = _Algebra(q_internal, [b.revolute for b in self.bodies], exprs, budget)
        it = iter(alg.elements)

        def take(rows, cols=1):
            vals = [next(it) for _ in range(rows * cols)]
            return vals if cols == 1 else [vals[r * cols:(r + 1) * cols] for r in range(rows)]

        self._g = take(3)
        self._arm = take(self.n)
        self._rb = []
        for _ in self.bodies:
            self._rb.append(dict(axis=take(3), R0=take(3, 3), p0=take(3), Rpost=take(3, 3),
                                 ppost=take(3), com=take(3), inertia=take(3, 3),
                                 mass=take(1)[0]))
        self._rframes = {}
        for link, (body, _, _) in self.frames.items():
            self._rframes[link] = (body, take(3, 3), take(3))
        self._alg = alg
        return alg

    def _kinematics(self, budget):
        """Top-relative transforms, world axes and body-frame angular Jacobians (cached)."""
        alg = self._algebra(budget)
        if 'kin' in self._cache:
            return self._cache['kin']
        n = self.n
        R_rel, p_rel, top, axis_b, W = [None] * n, [None] * n, [0] * n, [None] * n, [None] * n
        R_loc, p_loc = [None] * n, [None] * n
        one, zero = alg.ring.one, alg.ring.zero
        for b, body in enumerate(self.bodies):
            budget.check(f'kinematics of body {b + 1}')
            rb = self._rb[b]
            ax = rb['axis']
            if body.revolute:
                s, c = (alg.gens[i] for i in alg.q_gen[b])
                K = [[zero, -ax[2], ax[1]], [ax[2], zero, -ax[0]], [-ax[1], ax[0], zero]]
                K2 = alg.matmul(K, K)
                J = [[(one if i == j else zero) + s * K[i][j] + (one - c) * K2[i][j]
                      for j in range(3)] for i in range(3)]
                J = [[alg.reduce(x) for x in row] for row in J]
                shift = [zero, zero, zero]
            else:
                J = [[one if i == j else zero for j in range(3)] for i in range(3)]
                qg = alg.gens[alg.q_gen[b][0]]
                shift = [x * qg for x in ax]
            # motion part: (J Rpost, J ppost + shift), then the constant prefix (R0, p0)
            Rm = alg.matmul(J, rb['Rpost'])
            pm = [a + b_ for a, b_ in zip(alg.matvec(J, rb['ppost']), shift)]
            R_loc[b] = alg.matmul(rb['R0'], Rm)
            p_loc[b] = [a + b_ for a, b_ in zip(rb['p0'], alg.matvec(rb['R0'], pm))]
            axis_b[b] = alg.matvec(alg.transpose(rb['Rpost']), ax)
            par = body.parent
            if par < 0:
                top[b] = b
                R_rel[b], p_rel[b] = Rm, pm
                W[b] = {}
            else:
                top[b] = top[par]
                R_rel[b] = alg.matmul(R_rel[par], R_loc[b], f'kinematics of body {b + 1}')
                p_rel[b] = [a + b_ for a, b_ in zip(p_rel[par], alg.matvec(R_rel[par],
                                                                           p_loc[b]))]
                Rt = alg.transpose(R_loc[b])
                W[b] = {k: alg.matvec(Rt, w) for k, w in W[par].items()}
            if body.revolute:
                W[b][b] = axis_b[b]
            ops = sum(alg.operations(x) for row in R_rel[b] for x in row)
            budget.size(ops, f'the rotation of body {b + 1}')
        path = []
        for b in range(n):
            par = self.bodies[b].parent
            path.append((path[par] if par >= 0 else []) + [b])
        kin = dict(R_rel=R_rel, p_rel=p_rel, top=top, axis_b=axis_b, W=W, path=path,
                   R_loc=R_loc, p_loc=p_loc)
        self._cache['kin'] = kin
        return kin

    def _world(self, b, budget):
        """World rotation and origin of body b (cached)."""
        key = ('world', b)
        if key not in self._cache:
            alg = self._algebra(budget)
            kin = self._kinematics(budget)
            t = kin['top'][b]
            R0, p0 = self._rb[t]['R0'], self._rb[t]['p0']
            R = alg.matmul(R0, kin['R_rel'][b])
            p = [a + c for a, c in zip(p0, alg.matvec(R0, kin['p_rel'][b]))]
            self._cache[key] = (R, p)
        return self._cache[key]

    # ------------------------------------------------------------------ dynamics (ring)
    def _mass_matrix_ring(self, budget):
        if 'M' in self._cache:
            return self._cache['M']
        alg = self._algebra(budget)
        kin = self._kinematics(budget)
        n = self.n
        M = [[alg.ring.zero] * n for _ in range(n)]
        for b in range(n):
            rb = self._rb[b]
            where = f'M, body {b + 1}'
            budget.check(where)
            m, I_ = rb['mass'], rb['inertia']
            path = kin['path'][b]
            if m:
                Rc = alg.matvec(kin['R_rel'][b], rb['com'], where)
                x = [a + c for a, c in zip(kin['p_rel'][b], Rc)]
                JT = {k: [alg.diff(xi, k) for xi in x] for k in path}
                for i in path:
                    for j in path:
                        if i <= j:
                            M[i][j] += alg.mul(m, alg.dot(JT[i], JT[j], where), where)
            if any(v for row in I_ for v in row):
                W = kin['W'][b]
                IW = {k: alg.matvec(I_, w, where) for k, w in W.items()}
                for i in W:
                    for j in W:
                        if i <= j:
                            M[i][j] += alg.dot(W[i], IW[j], where)
        total = 0
        for i in range(n):
            M[i][i] += self._arm[self._user[i]]
            for j in range(i, n):
                M[i][j] = alg.reduce(M[i][j])
                M[j][i] = M[i][j]
                total += alg.operations(M[i][j])
        budget.size(total, 'M')
        self._cache['M'] = M
        return M

    def _mass_matrix_derivative_ring(self, budget):
        """D[i][j][k] = dM_ij/dq_k (internal order)."""
        if 'dM' in self._cache:
            return self._cache['dM']
        alg = self._algebra(budget)
        M = self._mass_matrix_ring(budget)
        n = self.n
        D = [[[None] * n for _ in range(n)] for _ in range(n)]
        total = 0
        for i in range(n):
            for j in range(i, n):
                budget.check(f'dM[{i + 1}][{j + 1}]/dq')
                for k in range(n):
                    D[i][j][k] = D[j][i][k] = alg.diff(M[i][j], k)
                    total += alg.operations(D[i][j][k])
        budget.size(total, 'dM/dq')
        self._cache['dM'] = D
        return D

    def _gravity_ring(self, budget):
        if 'G' in self._cache:
            return self._cache['G']
        alg = self._algebra(budget)
        kin = self._kinematics(budget)
        V = alg.ring.zero
        for b in range(self.n):
            rb = self._rb[b]
            if not rb['mass']:
                continue
            budget.check(f'G, body {b + 1}')
            t = kin['top'][b]
            x = [a + c for a, c in zip(kin['p_rel'][b], alg.matvec(kin['R_rel'][b], rb['com']))]
            g_top = alg.matvec(alg.transpose(self._rb[t]['R0']), self._g)   # g in top frame
            V -= alg.mul(rb['mass'], alg.dot(g_top, x))
        V = alg.reduce(V)
        G = [alg.diff(V, k) for k in range(self.n)]
        budget.size(sum(alg.operations(x) for x in G), 'G')
        self._cache['G'] = G
        return G

    # ------------------------------------------------------------------ user-facing results
    def _present(self, p):
        return self._alg.to_sympy(p, self.trig_simplify)

    def _presented(self, key, budget, build):
        if ('show', key) not in self._cache:
            self._cache[('show', key)] = build()
        return self._cache[('show', key)]

    def mass_matrix(self) -> sp.Matrix:
        """M(q), n x n, simplified (000 eq. 95), in ``joint_names`` order."""
        budget = self._budget('mass matrix')

        def build():
            M = self._mass_matrix_ring(budget)
            out = sp.zeros(self.n, self.n)
            for u in range(self.n):
                for v in range(u, self.n):
                    budget.check(f'simplifying M[{u + 1}][{v + 1}]')
                    out[u, v] = out[v, u] = self._present(M[self._order[u]][self._order[v]])
            return out
        return self._presented('M', budget, build)

    def coriolis_star(self) -> sp.Matrix:
        """C*(q), n x n^2 (000 eq. 101): C*[i, j*n + k] = dM_ij/dq_k - 1/2 dM_kj/dq_i."""
        budget = self._budget('Coriolis matrix C*')

        def build():
            D = self._mass_matrix_derivative_ring(budget)
            alg, n, o = self._alg, self.n, self._order
            half = alg.half
            out = sp.zeros(n, n * n)
            total = 0
            for i in range(n):
                for j in range(n):
                    for k in range(n):
                        budget.check(f'C*[{i + 1}][{j * n + k + 1}]')
                        p = D[o[i]][o[j]][o[k]] - D[o[k]][o[j]][o[i]] * half
                        total += alg.operations(p)
                        out[i, j * n + k] = self._present(p)
            budget.size(total, 'C*')
            return out
        return self._presented('C*', budget, build)

    def christoffel_sum(self) -> dict:
        """Return {(i, j, k): C*_ijk + C*_ikj (j < k) or C*_ijj}, 0-based: q'_j q'_k factors."""
        budget = self._budget('Coriolis terms')

        def build():
            D = self._mass_matrix_derivative_ring(budget)
            alg, n, o = self._alg, self.n, self._order
            half = alg.half
            out = {}
            for i in range(n):
                for j in range(n):
                    for k in range(j, n):
                        budget.check(f'Coriolis term {i + 1}, ({j + 1}, {k + 1})')
                        a, b, c = o[i], o[j], o[k]
                        if j == k:
                            p = D[a][b][c] - D[c][b][a] * half
                        else:
                            p = D[a][b][c] + D[a][c][b] - D[b][c][a]
                        p = alg.reduce(p)
                        if p:
                            out[(i, j, k)] = self._present(p)
            return out
        return self._presented('Gamma', budget, build)

    def gravity_torque(self) -> sp.Matrix:
        """G(q) = dV/dq, n x 1, with V = -sum m g . r_G."""
        budget = self._budget('gravity torque')

        def build():
            G = self._gravity_ring(budget)
            return sp.Matrix([self._present(G[b]) for b in self._order])
        return self._presented('G', budget, build)

    def potential_energy(self) -> sp.Expr:
        """Return V(q) = -sum m_i g . r_Gi (zero at the root origin)."""
        budget = self._budget('potential energy')
        alg = self._algebra(budget)
        V = alg.ring.zero
        for b in range(self.n):
            R, p = self._world(b, budget)
            x = [a + c for a, c in zip(p, alg.matvec(R, self._rb[b]['com']))]
            V -= alg.mul(self._rb[b]['mass'], alg.dot(self._g, x))
        return self._present(alg.reduce(V))

    def equations(self) -> 'EquationsOfMotion':
        """Compute M, C* and G (within the bounds) and return them with the model's metadata."""
        start = time.perf_counter()
        budget = self._budget('equations of motion')
        self._active = budget
        try:
            M = self.mass_matrix()
            Cs = self.coriolis_star()
            G = self.gravity_torque()
            gamma = self.christoffel_sum()
            budget.check('the end')
        finally:
            self._active = None
        ops = sum(sp.count_ops(e) for A in (M, Cs, G) for e in A if e != 0)
        return EquationsOfMotion(
            name=self.name, source=self.source, joint_names=list(self.joint_names),
            joint_types=list(self.joint_types), q=self.q, parameters=list(self.parameters),
            parameter_values=dict(self.parameter_values), M=M, Cstar=Cs, G=G,
            coriolis_terms=gamma, seconds=time.perf_counter() - start, operations=int(ops),
            max_seconds=self.max_seconds)

    # ------------------------------------------------------------------ links
    def _frame(self, link):
        try:
            return self._rframes[link]
        except (KeyError, TypeError):          # TypeError: a list or array is no link name
            raise ModelError(f'unknown link {link!r}; links: {self.link_names}') from None

    def _link_point(self, link, point, budget):
        alg = self._algebra(budget)
        body, Rf, pf = self._frame(link)
        offset = pf
        if point is not None:
            pt = [alg.convert(v) for v in _vector(point, 'point')]
            offset = [a + c for a, c in zip(pf, alg.matvec(Rf, pt))]
        if body < 0:
            return body, offset
        R, p = self._world(body, budget)
        return body, [a + c for a, c in zip(p, alg.matvec(R, offset))]

    def _rotate_to(self, frame, A, budget):
        """Express root-frame column vectors A (list of 3-lists) in the axes of ``frame``."""
        if frame is None:
            return A
        alg = self._algebra(budget)
        body, Rf, _ = self._frame(frame)
        R = Rf if body < 0 else alg.matmul(self._world(body, budget)[0], Rf)
        Rt = alg.transpose(R)
        return [alg.matvec(Rt, col) for col in A]

    def _columns_to_matrix(self, cols):
        out = sp.zeros(3, len(cols))
        for c, col in enumerate(cols):
            for r in range(3):
                out[r, c] = self._present(col[r])
        return out

    def _jacobian_columns(self, link, point, budget):
        alg = self._algebra(budget)
        kin = self._kinematics(budget)
        body, x = self._link_point(link, point, budget)
        zero3 = [alg.ring.zero] * 3
        JT, JR = [zero3] * self.n, [zero3] * self.n
        if body >= 0:
            for k in kin['path'][body]:
                u = self._user[k]
                JT[u] = [alg.diff(xi, k) for xi in x]
                if self.bodies[k].revolute:
                    JR[u] = alg.matvec(self._world(k, budget)[0], kin['axis_b'][k])
        return JT, JR

    def link_pose(self, link: str):
        """Return (R, p): orientation and origin of a link frame in the root frame."""
        budget = self._budget(f'pose of {link}')
        alg = self._algebra(budget)
        body, Rf, pf = self._frame(link)
        if body < 0:
            R, p = Rf, pf
        else:
            Rb, pb = self._world(body, budget)
            R = alg.matmul(Rb, Rf)
            p = [a + c for a, c in zip(pb, alg.matvec(Rb, pf))]
        return (sp.Matrix([[self._present(x) for x in row] for row in R]),
                sp.Matrix([self._present(x) for x in p]))

    def jacobians(self, link: str, point=None, frame: str | None = None):
        """
        (J_T, J_R), each 3 x n, of a link origin or a point on it (link frame): 000 eqs. 29, 37.

        Columns are root-frame vectors, or expressed in the axes of the link ``frame`` (e.g.
        ``'link0'``, DH frame 0) when given.
        """
        budget = self._budget(f'Jacobians of {link}')
        JT, JR = self._jacobian_columns(link, point, budget)
        return (self._columns_to_matrix(self._rotate_to(frame, JT, budget)),
                self._columns_to_matrix(self._rotate_to(frame, JR, budget)))

    def hessians(self, link: str, point=None, frame: str | None = None):
        """(H_T, H_R), each 3 x n^2: H[:, s*n + k] = dJ[:, s]/dq_k (000 eqs. 51, 60)."""
        budget = self._budget(f'Hessians of {link}')
        alg = self._algebra(budget)
        JT, JR = self._jacobian_columns(link, point, budget)
        out = []
        for J in (JT, JR):
            cols = []
            for s in range(self.n):
                for k in range(self.n):
                    cols.append([alg.diff(x, self._order[k]) for x in J[s]])
            out.append(self._columns_to_matrix(self._rotate_to(frame, cols, budget)))
        return tuple(out)

    def __repr__(self):
        return (f'SymbolicModel({self.name!r}, n={self.n}, joints={self.joint_names}, '
                f'parameters={[s.name for s in self.parameters]})')


# --------------------------------------------------------------------------- results
@dataclass
class EquationsOfMotion:
    """M(q), C*(q), G(q) of a model as sympy matrices, with what the printers need."""

    name: str
    source: str
    joint_names: list
    joint_types: list
    q: tuple
    parameters: list
    parameter_values: dict
    M: sp.Matrix
    Cstar: sp.Matrix
    G: sp.Matrix
    coriolis_terms: dict      # (i, j, k), j <= k -> factor of q'_j q'_k in C*(q' kron q')
    seconds: float
    operations: int
    max_seconds: float | None = DEFAULT_MAX_SECONDS    # bound of code generation as well
    # mimic joint -> (primary, multiplier, offset): constraints, not coordinates
    mimic: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        """Return the number of joint coordinates."""
        return len(self.q)

    def tau(self) -> sp.Matrix:
        """Return tau = M qdd + C* (qd kron qd) + G with symbols qd1.., qdd1.."""
        qd = sp.Matrix([symbol(f'qd{u + 1}') for u in range(self.n)])
        qdd = sp.Matrix([symbol(f'qdd{u + 1}') for u in range(self.n)])
        kron = sp.Matrix([qd[j] * qd[k] for j in range(self.n) for k in range(self.n)])
        return self.M * qdd + self.Cstar * kron + self.G

    def to_text(self) -> str:
        """Return the equations as plain text (see :mod:`kron_dynamics.codegen`)."""
        return text_equations(self)

    def to_latex(self) -> str:
        """Return a compilable LaTeX document."""
        return latex_document(self)

    def to_python(self) -> str:
        """
        Return the source of a module of straight-line functions (CSE).

        Raises SymbolicTooLarge when the common-subexpression elimination is predicted to
        take longer than ``max_seconds``.
        """
        return python_module(self)


# --------------------------------------------------------------------------- mimic joints
class CoupledSymbolicModel:
    """
    A :class:`SymbolicModel` of a tree with mimic joints: q = B u + d (004 section 5).

    The coordinates ``q1 .. qn`` are the independent joints (``joint_names``); every result
    is that of the whole tree, projected with the constant B and with each mimic joint's
    coordinate replaced by multiplier * q_primary + offset: M_u = B^T M B (+ armature),
    C*_u = B^T C* (B kron B) (eq. 101 of M_u), G_u = B^T G, J_u = J B.
    """

    def __init__(self, full: SymbolicModel, joint_names, B, d, armature, mimic_joints):
        """Wrap the tree ``full`` (its joints in B's row order) with q = B u + d."""
        self.full = full
        self.joint_names = list(joint_names)
        n = len(self.joint_names)
        self._B = sp.Matrix([[exact_number(x) for x in row] for row in np.asarray(B)])
        self._Bt = self._B.T
        d = [exact_number(x) for x in np.asarray(d)]
        types = dict(zip(full.joint_names, full.joint_types))
        self.joint_types = [types[j] for j in self.joint_names]
        self.q = tuple(symbol(f'q{u + 1}') for u in range(n))
        u = sp.Matrix(self.q)
        self._sub = {qf: sp.expand((self._B[i, :] * u)[0] + d[i])
                     for i, qf in enumerate(full.q)}
        self.armature = [to_expr(a, 'armature') for a in armature]
        self.mimic = {m.name: (m.primary, m.multiplier, m.offset)
                      for m in mimic_joints.values()}
        self._mimic_joints = mimic_joints
        self._cache = {}

    name = property(lambda self: self.full.name)

    @property
    def source(self) -> str:
        """Where the model came from (the tree's source)."""
        return self.full.source

    @source.setter
    def source(self, value: str):
        self.full.source = value

    parameters = property(lambda self: self.full.parameters)
    parameter_values = property(lambda self: self.full.parameter_values)
    link_names = property(lambda self: self.full.link_names)

    @property
    def n(self) -> int:
        """Return the number of coordinates (independent joints)."""
        return len(self.joint_names)

    @property
    def qd(self):
        """Velocity symbols qd1 .. qdn."""
        return tuple(symbol(f'qd{u + 1}') for u in range(self.n))

    @property
    def qdd(self):
        """Acceleration symbols qdd1 .. qddn."""
        return tuple(symbol(f'qdd{u + 1}') for u in range(self.n))

    def symbols(self, names: str):
        """Return the model's symbols for names like ``'m3 q2'``."""
        return self.full.symbols(names)

    def with_parameters(self, values: dict | None = None) -> 'CoupledSymbolicModel':
        """Return a copy with parameters replaced by numbers (default: all known values)."""
        full = self.full.with_parameters(values)
        out = CoupledSymbolicModel.__new__(CoupledSymbolicModel)
        out.__dict__.update(self.__dict__)
        out.full, out._cache = full, {}
        return out

    def _in_u(self, A: sp.Matrix) -> sp.Matrix:
        """Substitute q = B u + d; keep the expanded form of an element where it is shorter."""
        def shorter(e):
            expanded = sp.expand(e)
            return expanded if sp.count_ops(expanded) < sp.count_ops(e) else e
        return A.xreplace(self._sub).applyfunc(shorter)

    def _memo(self, key, build):
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def mass_matrix(self) -> sp.Matrix:
        """M_u = B^T M(q) B + armature, n x n (000 eq. 95 projected)."""
        def build():
            M = self._in_u(self._Bt * self.full.mass_matrix() * self._B)
            for i, a in enumerate(self.armature):
                M[i, i] += a
            return M
        return self._memo('M', build)

    def coriolis_star(self) -> sp.Matrix:
        """C*_u = B^T C*(q) (B kron B), n x n^2: eq. (101) of M_u."""
        return self._memo('C*', lambda: self._in_u(
            self._Bt * self.full.coriolis_star() * sp.kronecker_product(self._B, self._B)))

    def christoffel_sum(self) -> dict:
        """Return {(i, j, k): C*_ijk + C*_ikj (j < k) or C*_ijj}, 0-based (nonzero only)."""
        def build():
            C, n, out = self.coriolis_star(), self.n, {}
            for i in range(n):
                for j in range(n):
                    for k in range(j, n):
                        e = C[i, j * n + k] + (C[i, k * n + j] if j != k else 0)
                        if e != 0:
                            out[(i, j, k)] = e
            return out
        return self._memo('Gamma', build)

    def gravity_torque(self) -> sp.Matrix:
        """G_u = B^T G(q), n x 1."""
        return self._memo('G', lambda: self._in_u(self._Bt * self.full.gravity_torque()))

    def potential_energy(self) -> sp.Expr:
        """Return V at q = B u + d."""
        return self.full.potential_energy().xreplace(self._sub)

    def link_pose(self, link: str):
        """Return (R, p) of a link frame in the root frame, in u."""
        R, p = self.full.link_pose(link)
        return self._in_u(R), self._in_u(p)

    def jacobians(self, link: str, point=None, frame: str | None = None):
        """(J_T B, J_R B), each 3 x n, in u (000 eqs. 29, 37; 004 section 5)."""
        JT, JR = self.full.jacobians(link, point, frame)
        return self._in_u(JT * self._B), self._in_u(JR * self._B)

    def hessians(self, link: str, point=None, frame: str | None = None):
        """(H_T, H_R) in u, each 3 x n^2: H[:, s*n + k] = d(J B)[:, s]/du_k."""
        nf, n = self._B.shape
        out = []
        for H in self.full.hessians(link, point, frame):
            Hu = sp.zeros(3, n * n)
            for r in range(3):
                Hr = sp.Matrix(nf, nf, list(H[r, :]))
                Hu[r, :] = (self._Bt * Hr * self._B).reshape(1, n * n)
            out.append(self._in_u(Hu))
        return tuple(out)

    def equations(self) -> EquationsOfMotion:
        """Compute M_u, C*_u and G_u (the tree's bounds apply) with the model's metadata."""
        start = time.perf_counter()
        M, Cs, G = self.mass_matrix(), self.coriolis_star(), self.gravity_torque()
        gamma = self.christoffel_sum()
        ops = sum(sp.count_ops(e) for A in (M, Cs, G) for e in A if e != 0)
        return EquationsOfMotion(
            name=self.name, source=self.source, joint_names=list(self.joint_names),
            joint_types=list(self.joint_types), q=self.q, parameters=list(self.parameters),
            parameter_values=dict(self.parameter_values), M=M, Cstar=Cs, G=G,
            coriolis_terms=gamma, seconds=time.perf_counter() - start, operations=int(ops),
            max_seconds=self.full.max_seconds, mimic=dict(self.mimic))

    def __repr__(self):
        return (f'CoupledSymbolicModel({self.name!r}, n={self.n}, joints={self.joint_names}, '
                f'mimic={sorted(self.mimic)})')
