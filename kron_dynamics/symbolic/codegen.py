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
Printers of closed-form equations of motion: plain text, a LaTeX document, a Python module.

All take an :class:`~kron_dynamics.symbolic.EquationsOfMotion`. Text and LaTeX write
sin q_k, cos q_k as s_k, c_k (the papers' S_k, C_k) and list the elements 1-based, as the
papers do. The Python module has straight-line functions ``mass_matrix(q)``,
``coriolis_star(q)``, ``gravity_torque(q)`` and ``inverse_dynamics(q, qd, qdd)`` (common
subexpressions eliminated with ``sympy.cse``) that need only ``math`` and ``numpy``.
"""

import importlib.util
from pathlib import Path
import re
import tempfile

import sympy as sp
from sympy.printing.latex import LatexPrinter
from sympy.printing.precedence import precedence
from sympy.printing.pycode import PythonCodePrinter
from sympy.printing.str import StrPrinter

from .. import __version__
from .budget import SymbolicTooLarge

GREEK = {'alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta', 'iota',
         'kappa', 'lambda', 'mu', 'nu', 'xi', 'rho', 'sigma', 'tau', 'upsilon', 'phi', 'chi',
         'psi', 'omega'}
LATEX_LINE = 90          # characters of LaTeX per line of a long element
CSE_SECONDS_PER_OPERATION = 2.5e-4   # measured cost of sympy.cse + printing (2-core machine)


def _decimal(r: sp.Rational):
    """Return a finite decimal string for p/q when q = 2^a 5^b > 10, else None."""
    q = int(r.q)
    if q <= 10:
        return None
    while q % 2 == 0:
        q //= 2
    while q % 5 == 0:
        q //= 5
    if q != 1:
        return None
    text = repr(float(r))
    return text if sp.Rational(text) == r and len(text) <= 14 else None


def _decimalize(expr):
    """Write rationals p/q with q > 10 and a short finite decimal as decimals (0.00192)."""
    sub = {}
    for r in expr.atoms(sp.Rational):
        if r.q != 1 and _decimal(abs(r)):
            sub[r] = sp.Float(_decimal(abs(r)), 17) * sp.sign(r)
    return expr.xreplace(sub) if sub else expr


class _TextPrinter(StrPrinter):
    """sympy's str printer, with finite decimals (0.00192) instead of 6/3125."""

    def _print_Rational(self, expr):
        return _decimal(expr) or super()._print_Rational(expr)

    def _print_Float(self, expr):
        return repr(float(expr))


class _LatexPrinter(LatexPrinter):
    """sympy's LaTeX printer with finite decimals."""

    def _print_Rational(self, expr):
        text = _decimal(expr)
        return text if text else super()._print_Rational(expr)

    def _print_Float(self, expr):
        text = f'{float(expr):.10g}'
        if 'e' in text:
            mantissa, exponent = text.split('e')
            text = rf'{mantissa} \cdot 10^{{{int(exponent)}}}'
        return text


class _CodePrinter(PythonCodePrinter):
    """Python code: full-precision float literals, small integer powers as products."""

    def _print_Float(self, expr):
        return repr(float(expr))

    def _print_Rational(self, expr):
        return str(expr.p) if expr.q == 1 else repr(float(expr))

    def _print_Integer(self, expr):
        return str(expr.p)

    def _print_Pow(self, expr, rational=False):
        base, exp = expr.base, expr.exp
        if exp.is_Integer and 2 <= int(exp) <= 4:
            b = self.parenthesize(base, precedence(expr))
            return '(' + '*'.join([b] * int(exp)) + ')'
        return super()._print_Pow(expr, rational)


def _abbreviations(eom, style='text'):
    """Map sin(q_k), cos(q_k) to symbols s_k, c_k; return (mapping, names for latex)."""
    sub, names = {}, {}
    for u, q in enumerate(eom.q):
        s, c = sp.Symbol(f's{u + 1}'), sp.Symbol(f'c{u + 1}')
        sub[sp.sin(q)] = s
        sub[sp.cos(q)] = c
        names[s] = f's_{{{u + 1}}}'
        names[c] = f'c_{{{u + 1}}}'
    return sub, names


def latex_name(name: str) -> str:
    """Return the LaTeX of a parameter name: m3 -> m_{3}, I3x -> I_{3x}, yG2 -> y_{G2}."""
    m = re.match(r'^([A-Za-z]+)(\d+)([A-Za-z]*)$', name)
    if not m:
        return sp.latex(sp.Symbol(name))
    prefix, digits, rest = m.groups()
    if prefix in GREEK:
        return rf'\{prefix}_{{{digits}{rest}}}'
    if len(prefix) == 2 and prefix[1] == 'G':
        return rf'{prefix[0]}_{{G{digits}{rest}}}'
    if len(prefix) > 1:
        return rf'\mathrm{{{prefix}}}_{{{digits}{rest}}}'
    return f'{prefix}_{{{digits}{rest}}}'


def _used_abbreviations(exprs, sub):
    used = set()
    for e in exprs:
        used |= e.atoms(sp.Symbol)
    return [(k, v) for k, v in sub.items() if v in used]


def _param_lines(eom):
    if not eom.parameters:
        return ['parameters: none (all numbers are the model\'s)']
    out = ['parameters:']
    for s in eom.parameters:
        value = eom.parameter_values.get(s.name)
        out.append(f'  {s.name}' + (f' = {value!r}' if value is not None else ' (no value)'))
    return out


def text_equations(eom) -> str:
    """Return M, C* and G as plain text, element by element (1-based, zeros of C* omitted)."""
    n = eom.n
    sub, _ = _abbreviations(eom)
    printer = _TextPrinter({'order': None})
    M, C, G = (A.xreplace(sub).applyfunc(_decimalize) for A in (eom.M, eom.Cstar, eom.G))
    lines = [f"Equations of motion of '{eom.name}' ({eom.source}), kron_dynamics {__version__}",
             "  M(q) q'' + C*(q) (q' kron q') + G(q) = tau    (000 eqs. 95, 101)",
             "  indices 1-based as in the papers; C*[i][(j,k)] is column (j-1)*n + k of C*, "
             "the factor of q'_j q'_k",
             'joints: ' + ', '.join(f'q{u + 1} = {name} ({kind})' for u, (name, kind) in
                                    enumerate(zip(eom.joint_names, eom.joint_types)))]
    lines += [f'mimic joint (not a coordinate): {name} = {multiplier!r} * {primary} + '
              f'{offset!r}' for name, (primary, multiplier, offset) in eom.mimic.items()]
    used = _used_abbreviations(list(M) + list(C) + list(G), sub)
    if used:
        lines.append('abbreviations: ' + ', '.join(f'{v} = {k}' for k, v in used))
    lines += _param_lines(eom)
    lines.append('')
    lines.append('M (symmetric: M[j][i] = M[i][j]):')
    for i in range(n):
        for j in range(i, n):
            lines.append(f'  M[{i + 1}][{j + 1}] = {printer.doprint(M[i, j])}')
    lines.append('')
    lines.append('C* (n x n^2; entries not listed are 0):')
    zero = True
    for i in range(n):
        for j in range(n):
            for k in range(n):
                e = C[i, j * n + k]
                if e != 0:
                    zero = False
                    lines.append(f'  C*[{i + 1}][({j + 1},{k + 1})] = {printer.doprint(e)}')
    if zero:
        lines.append('  C* = 0')
    lines.append('')
    lines.append('G:')
    for i in range(n):
        lines.append(f'  G[{i + 1}] = {printer.doprint(G[i])}')
    lines.append('')
    lines.append(f'computed in {eom.seconds:.2f} s; {eom.operations} operations in M, C*, G')
    return '\n'.join(lines) + '\n'


# --------------------------------------------------------------------------- LaTeX
def _tex_escape(text: str) -> str:
    out = str(text)
    for a, b in (('\\', r'\textbackslash{}'), ('_', r'\_'), ('&', r'\&'), ('%', r'\%'),
                 ('#', r'\#'), ('$', r'\$'), ('{', r'\{'), ('}', r'\}'), ('~', r'\~{}'),
                 ('^', r'\^{}')):
        out = out.replace(a, b)
    return out


def _latex_names(eom, extra):
    names = dict(extra)
    for u, q in enumerate(eom.q):
        names[q] = f'q_{{{u + 1}}}'
    for s in eom.parameters:
        names[s] = latex_name(s.name)
    return names


def _latex_terms(expr, printer):
    """Return LaTeX lines of an element, split between terms when it is long."""
    whole = printer.doprint(expr)
    if len(whole) <= LATEX_LINE or not expr.is_Add:
        return [whole]
    lines, current = [], ''
    for t in expr.as_ordered_terms():
        if t.could_extract_minus_sign():
            piece = '- ' + printer.doprint(-t)
        else:
            piece = ('+ ' if current or lines else '') + printer.doprint(t)
        if current and len(current) + len(piece) > LATEX_LINE:
            lines.append(current)
            current = piece
        else:
            current = (current + ' ' + piece).strip()
    lines.append(current)
    return lines


def _align(rows):
    """Return an align* environment for (left, expr-lines) rows."""
    out = [r'\begin{align*}']
    body = []
    for left, lines in rows:
        entry = f'{left} &= {lines[0]}'
        for more in lines[1:]:
            entry += ' \\\\\n  &\\quad ' + more
        body.append('  ' + entry)
    out.append(' \\\\\n'.join(body))
    out.append(r'\end{align*}')
    return out


def _bmatrix(name, A, printer):
    rows = [' & '.join(printer.doprint(A[i, j]) for j in range(A.cols)) for i in range(A.rows)]
    return [r'\[', rf'{name} = \begin{{bmatrix}}', ' \\\\\n'.join(rows), r'\end{bmatrix}',
            r'\]']


def latex_document(eom) -> str:
    """Return a compilable LaTeX document (article, amsmath) with M, C*, G and the equation."""
    n = eom.n
    sub, abbrev = _abbreviations(eom)
    printer = _LatexPrinter({'symbol_names': _latex_names(eom, abbrev), 'order': None,
                             'mul_symbol': None})
    M, C, G = (A.xreplace(sub).applyfunc(_decimalize) for A in (eom.M, eom.Cstar, eom.G))
    out = [r'\documentclass[10pt]{article}', r'\usepackage{amsmath}',
           r'\setcounter{MaxMatrixCols}{64}', r'\allowdisplaybreaks', r'\begin{document}',
           rf'\section*{{Equations of motion of \texttt{{{_tex_escape(eom.name)}}}}}',
           rf'Generated by \texttt{{kron\_dynamics}} {__version__} from '
           rf'\texttt{{{_tex_escape(eom.source)}}}. Indices are 1-based as in the papers.',
           r'\[',
           r'\mathbf{M}(\mathbf{q})\,\ddot{\mathbf{q}} + \mathbf{C}^*(\mathbf{q})\,'
           r'(\dot{\mathbf{q}} \otimes \dot{\mathbf{q}}) + \mathbf{G}(\mathbf{q}) = '
           r'\boldsymbol{\tau}',
           r'\]',
           r'Joint coordinates: ' + ', '.join(
               rf'$q_{{{u + 1}}}$ = \texttt{{{_tex_escape(name)}}} ({kind})'
               for u, (name, kind) in enumerate(zip(eom.joint_names, eom.joint_types))) + '.']
    if eom.mimic:
        out.append('Mimic joints (constraints, not coordinates): ' + ', '.join(
            rf'\texttt{{{_tex_escape(name)}}} = {multiplier!r} $\times$ '
            rf'\texttt{{{_tex_escape(primary)}}} + {offset!r}'
            for name, (primary, multiplier, offset) in eom.mimic.items()) + '.')
    used = _used_abbreviations(list(M) + list(C) + list(G), sub)
    if used:
        out.append('Abbreviations: ' + ', '.join(
            rf'${abbrev[v]} = \{type(k).__name__} q_{{{str(v)[1:]}}}$' for k, v in used) + '.')
    if eom.parameters:
        number = _LatexPrinter()._print_Float
        values = [f'${latex_name(s.name)}' + (
            f' = {number(sp.Float(eom.parameter_values[s.name]))}'
            if s.name in eom.parameter_values else '') + '$' for s in eom.parameters]
        out.append('Parameters: ' + ', '.join(values) + '.')
    out.append('')
    out.append(r'\subsection*{Mass matrix (000 eq.\ 95), symmetric}')
    short = all(len(printer.doprint(e)) <= 48 for e in M)
    if short and n <= 6:
        out += _bmatrix(r'\mathbf{M}', M, printer)
    else:
        out += _align([(f'M_{{{i + 1},{j + 1}}}', _latex_terms(M[i, j], printer))
                       for i in range(n) for j in range(i, n)])
    out.append('')
    out.append(r'\subsection*{Velocity-free Coriolis matrix $\mathbf{C}^*$ (000 eq.\ 101), '
               r'$n \times n^2$}')
    short = all(len(printer.doprint(e)) <= 30 for e in C)
    if short and n <= 3:
        out += _bmatrix(r'\mathbf{C}^*', C, printer)
    else:
        out.append(r'$C^*_{i,(j,k)}$ is column $(j-1)n + k$, the factor of '
                   r'$\dot q_j \dot q_k$; entries not listed are 0.')
        rows = [(f'C^*_{{{i + 1},({j + 1},{k + 1})}}', _latex_terms(C[i, j * n + k], printer))
                for i in range(n) for j in range(n) for k in range(n) if C[i, j * n + k] != 0]
        out += _align(rows) if rows else [r'\[ \mathbf{C}^* = 0 \]']
    out.append('')
    out.append(r'\subsection*{Gravity torque $\mathbf{G} = \partial V / \partial \mathbf{q}$}')
    out += _align([(f'G_{{{i + 1}}}', _latex_terms(G[i], printer)) for i in range(n)])
    out.append(r'\end{document}')
    return '\n'.join(out) + '\n'


# --------------------------------------------------------------------------- Python
def _array(items, sep=',\n                     '):
    """Return the line(s) ``return np.array([...], dtype=float)``."""
    return '    return np.array([' + sep.join(items) + '], dtype=float)'


def _floatify(expr):
    """Replace non-integer rationals by floats (generated code computes in floats anyway)."""
    sub = {r: sp.Float(r, 17) for r in expr.atoms(sp.Rational) if r.q != 1}
    return expr.xreplace(sub) if sub else expr


def _cse_block(exprs, printer, indent='    '):
    """Return (lines, reduced expressions) of a CSE over exprs."""
    if not exprs:
        return [], []
    replacements, reduced = sp.cse(exprs, symbols=sp.numbered_symbols('_t'), order='none')
    lines = [f'{indent}{printer.doprint(s)} = {printer.doprint(e)}' for s, e in replacements]
    return lines, reduced


def _prologue(eom, sub, exprs, with_params, vectors=('q',)):
    """Unpack q (and qd, qdd), parameters and the sin/cos the expressions use."""
    n = eom.n
    lines = []
    for v in vectors:
        names = ', '.join(f'{v}{u + 1}' for u in range(n))
        lines.append(f"    {names}{',' if n == 1 else ''} = _vector({v}, '{v}')")
    if with_params and eom.parameters:
        names = ', '.join(s.name for s in eom.parameters)
        lines.append(f"    {names}{',' if len(eom.parameters) == 1 else ''} = "
                     '_parameters(params, kwargs)')
    used = set()
    for e in exprs:
        used |= e.free_symbols
    for k, v in sub.items():
        if v in used:
            f = 'sin' if isinstance(k, sp.sin) else 'cos'
            lines.append(f'    {v} = math.{f}({k.args[0]})')
    return lines


def python_module(eom) -> str:
    """Return the source of a module evaluating M, C*, G and tau for this robot."""
    predicted = eom.operations * CSE_SECONDS_PER_OPERATION
    if eom.max_seconds is not None and predicted > eom.max_seconds:
        raise SymbolicTooLarge(
            f"'{eom.name}': generating Python code for {eom.operations} operations would take "
            f'about {predicted:.0f} s, over the time bound max_seconds={eom.max_seconds:g}. '
            'Raise it with SymbolicModel(..., max_seconds=S) or `kron-dynamics equations '
            '--max-seconds S`, or use the numeric RobotModel')
    n = eom.n
    printer = _CodePrinter({'fully_qualified_modules': True, 'standard': 'python3'})
    sub, _ = _abbreviations(eom)
    M, C, G = (A.xreplace(sub).applyfunc(_floatify) for A in (eom.M, eom.Cstar, eom.G))
    has_params = bool(eom.parameters)
    sig = ', params=None, **kwargs' if has_params else ''
    head = [
        f"# Generated by kron_dynamics {__version__} from {eom.source}: the closed-form "
        f"equations of motion of '{eom.name}'",
        "#     M(q) q'' + C*(q) (q' kron q') + G(q) = tau",
        '# Joint order (q[0] .. q[n-1]): ' + ', '.join(
            f'q{u + 1} = {name}' for u, name in enumerate(eom.joint_names)),
        *[f'# Mimic joint (not a coordinate): {name} = {multiplier!r} * {primary} + {offset!r}'
          for name, (primary, multiplier, offset) in eom.mimic.items()],
        '# Straight-line code, common subexpressions eliminated (sympy.cse). Do not edit: '
        'regenerate with `kron-dynamics equations ... --format python`.',
        f'"""Closed-form equations of motion of {eom.name!r} (generated by kron_dynamics)."""',
        '',
        'import math',
        '',
        'import numpy as np',
        '',
        f'ROBOT = {eom.name!r}',
        f'JOINT_NAMES = {list(eom.joint_names)!r}',
        f'N = {n}',
        '# parameter name -> default value (None: must be given)',
        'PARAMETERS = {' + ', '.join(f'{s.name!r}: {eom.parameter_values.get(s.name)!r}'
                                     for s in eom.parameters) + '}',
        '',
        '',
        '_F64 = np.dtype(np.float64)',
        '',
        '',
        'def _vector(x, name):',
        '    if type(x) is np.ndarray and x.dtype == _F64 and x.shape == (N,):',
        '        v = x.tolist()',
        '    else:',
        '        try:',
        '            if isinstance(x, (str, bytes)):   # not its characters or bytes',
        '                raise TypeError',
        "            v = [float(e) for e in (x.tolist() if hasattr(x, 'tolist') else x)]",
        '        except (TypeError, ValueError):',
        "            raise ValueError(f'{name} must be {N} real numbers, got {x!r}') from None",
        '        if len(v) != N:',
        "            raise ValueError(f'{name} must have {N} entries, got {len(v)}')",
        '    # a finite sum (the common case) proves every entry finite',
        '    if not math.isfinite(sum(v)) and not all(math.isfinite(e) for e in v):',
        "        raise ValueError(f'{name} is not finite: {v}')",
        '    return v',
        '',
    ]
    if has_params:
        head += [
            '',
            'def _parameters(params, kwargs):',
            '    """Return the values in PARAMETERS order (defaults, params, kwargs)."""',
            '    p = dict(PARAMETERS)',
            '    for extra in (params or {}, kwargs):',
            '        unknown = sorted(set(extra) - set(PARAMETERS))',
            '        if unknown:',
            "            raise TypeError(f'unknown parameter(s) {unknown}; known: "
            "{sorted(PARAMETERS)}')",
            '        p.update(extra)',
            '    missing = sorted(k for k, v in p.items() if v is None)',
            '    if missing:',
            "        raise TypeError(f'missing parameter value(s) {missing}')",
            '    values = []',
            '    for k in PARAMETERS:',
            '        try:',
            '            values.append(float(p[k]))',
            '        except (TypeError, ValueError):',
            '            values.append(math.nan)',
            '    bad = [k for k, v in zip(PARAMETERS, values) if not math.isfinite(v)]',
            '    if bad:',
            "        raise ValueError(f'parameter(s) {bad} must be finite numbers, got '",
            "                         f'{[p[k] for k in bad]}')",
            '    return tuple(values)',
            '',
        ]

    def pr(e):
        return printer.doprint(e)

    out = list(head)
    # mass_matrix
    upper = [(i, j) for i in range(n) for j in range(i, n)]
    lines, red = _cse_block([M[i, j] for i, j in upper], printer)
    cells = dict(zip(upper, red))
    rows = ['[' + ', '.join(pr(cells[(min(i, j), max(i, j))]) for j in range(n)) + ']'
            for i in range(n)]
    out += ['', f'def mass_matrix(q{sig}):', f'    """Return M(q), {n} x {n}."""']
    out += _prologue(eom, sub, [M[i, j] for i, j in upper], has_params)
    out += lines + [_array(rows), '']
    # coriolis_star
    lines, red = _cse_block(list(C), printer)
    rows = ['[' + ', '.join(pr(red[i * n * n + c]) for c in range(n * n)) + ']' for i in range(n)]
    out += ['', f'def coriolis_star(q{sig}):',
            f'    """Return C*(q), {n} x {n * n}: C*[i, j*n + k] multiplies qd[j]*qd[k]."""']
    out += _prologue(eom, sub, list(C), has_params)
    out += lines + [_array(rows), '']
    # gravity_torque
    lines, red = _cse_block(list(G), printer)
    out += ['', f'def gravity_torque(q{sig}):', '    """Return G(q)."""']
    out += _prologue(eom, sub, list(G), has_params)
    out += lines + [_array([pr(e) for e in red], ', '), '']
    # inverse_dynamics
    gamma = {key: _floatify(e.xreplace(sub)) for key, e in eom.coriolis_terms.items()}
    m_keys = [(i, j) for i, j in upper if M[i, j] != 0]
    g_keys = [i for i in range(n) if G[i] != 0]
    c_keys = sorted(gamma)
    exprs = ([M[i, j] for i, j in m_keys] + [gamma[k] for k in c_keys] + [G[i] for i in g_keys])
    lines, red = _cse_block(exprs, printer)
    names = ([f'_M{i + 1}_{j + 1}' for i, j in m_keys]
             + [f'_C{i + 1}_{j + 1}_{k + 1}' for i, j, k in c_keys]
             + [f'_G{i + 1}' for i in g_keys])
    assigned = [f'    {name} = {pr(e)}' for name, e in zip(names, red)]
    tau = []
    for i in range(n):
        terms = []
        for j in range(n):
            a, b = min(i, j), max(i, j)
            if (a, b) in m_keys:
                terms.append(f'_M{a + 1}_{b + 1}*qdd{j + 1}')
        for (r, j, k) in c_keys:
            if r == i:
                terms.append(f'_C{i + 1}_{j + 1}_{k + 1}*qd{j + 1}*qd{k + 1}')
        if i in g_keys:
            terms.append(f'_G{i + 1}')
        tau.append(' + '.join(terms) if terms else '0.0')
    out += ['', f'def inverse_dynamics(q, qd, qdd{sig}):',
            '    """Return tau = M(q) qdd + C*(q) (qd kron qd) + G(q)."""']
    out += _prologue(eom, sub, exprs, has_params, vectors=('q', 'qd', 'qdd'))
    out += lines + assigned
    out += [_array(tau), '']
    return '\n'.join(out)


def load_module(source: str, name: str = 'kron_generated'):
    """Write generated source to a temporary file and import it (returns the module)."""
    directory = Path(tempfile.mkdtemp(prefix='kron_dynamics_'))
    path = directory / f'{name}.py'
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
