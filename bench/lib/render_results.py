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
bench/results/dynamics.md and kinematics.md from their JSON: the benchmarks' result pages.

Imported by bench_dynamics.py and bench_kinematics.py (which measure, write the JSON, then
these pages) and by report.py (which re-renders every generated file, and test_docs.py
checks them); it imports none of them, nor kron_dynamics, so that measuring and rendering
form no import circle. Also the agreement tolerances and the paper's (003) operation counts
that both the dynamics checks and its page use.
"""

import math

AGREE_TOL = 1e-8         # relative to the largest entry of the reference
AGREE_TOL_LOOSE = 1e-6   # PyBullet (btScalar arithmetic, inertia diagonalised on load)
FD_TOL = 1e-6           # checks that use a finite-difference M' (h = 1e-6)
SCALING = {   # label -> (kron op, Pinocchio op)
    'RNEA (tau)': ('inverse_dynamics', 'rnea'),
    'M': ('mass_matrix', 'crba'),
    'C* / C': ('coriolis_star', 'computeCoriolisMatrix'),
}


# ---------------------------------------------------------------------------- 003's counts
def _poly(c3, c2, c1):
    return lambda n: c3 * n ** 3 + c2 * n ** 2 + c1 * n


# Wang & Ju (003), section 6, Table 1: multiplications and additions of the JSIM of an
# all-revolute n-DOF system, lower triangle and diagonal only. Fig. 3 plots "equivalent
# additions" = 1.1 x multiplications + additions for n = 1..50 (the figure itself is not in
# the text; these formulas are what it plots). For the generalized momentum method the
# printed step 5 (M = sum over the links) is the total.
PAPER_003 = {
    'jacobian': {
        'method': 'generalized momentum method [31] (M = sum J^T m J + J^T I J; our 000 eq. 95)',
        'multiplications': ('7n^3+12n^2+3n', _poly(7, 12, 3)),
        'additions': ('5n^3+10n^2+2n', _poly(5, 10, 2))},
    'explicit': {
        'method': 'the proposed explicit method (003 eqs. 30-37)',
        'multiplications': ('3.5n^3+16n^2+12.5n', _poly(3.5, 16, 12.5)),
        'additions': ('3.5n^3+10n^2+6.5n', _poly(3.5, 10, 6.5))},
    'pseudo_inertia': {
        'method': 'pseudo-inertia matrix method [28] (not implemented here)',
        'multiplications': ('21n^3+63n^2+66n', _poly(21, 63, 66)),
        'additions': ('18n^3+49.5n^2+43.5n', _poly(18, 49.5, 43.5))},
}
PAPER_003_SOURCE = ('Wang & Ju, "An explicit modelling method of joint-space inertia matrix '
                    'for tree-chain dynamic system" (seed 003), section 6, Table 1 and Fig. 3; '
                    'equivalent additions = 1.1 x multiplications + additions')


def equivalent_additions(key: str, n: int) -> float:
    """Return 003's equivalent additions (1.1 mult + add) of a JSIM method at n DOF."""
    claim = PAPER_003[key]
    return 1.1 * claim['multiplications'][1](n) + claim['additions'][1](n)


def fmt(x, digits: int = 2) -> str:
    """
    Format a number for a table cell (every generated table's one formatter).

    '–' when missing (None, NaN), a string as it is, yes/no for a bool, an int with thousands
    separators, a float with ``digits`` decimals below 1000 and as a whole number above.
    """
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return '–'
    if isinstance(x, str):
        return x
    if isinstance(x, bool):
        return 'yes' if x else 'no'
    if isinstance(x, int):
        return f'{x:,}'
    if abs(x) >= 1000:
        return f'{x:,.0f}'
    return f'{x:.{digits}f}'


def fmt_err(x) -> str:
    """Format a relative error."""
    return x if isinstance(x, str) else f'{x:.1e}'


def verdict(p) -> str:
    """Return PASS / FAIL / – for a boolean or None."""
    return '–' if p is None else ('PASS' if p else 'FAIL')


def dynamics_markdown(report: dict) -> str:
    """Return bench/results/dynamics.md from dynamics.json (bench_dynamics)."""
    meta, results = report['meta'], report['models']
    lines = ['# Dynamics benchmark: kron_dynamics vs Pinocchio, PyBullet, MuJoCo', '',
             f"{meta['date']} · {meta['cpu']} ({meta['cpu_count']} cores) · "
             f"Python {meta['python']} · numpy {meta['numpy']} · numba {meta['numba']} · "
             f"kron_dynamics {meta['kron_dynamics']}" + (' · **quick run**' if meta['quick']
                                                         else ''), '',
             'Libraries: ' + ', '.join(f'{k} {v}' for k, v in meta['libraries'].items()), '',
             'Times are microseconds per call from Python (timeit, warm-up first); `min` is the '
             'fastest repeat, `median` the median repeat. Ratios are kron / Pinocchio of the '
             'minima (least disturbed by other load on the machine); the median ratio is '
             'shown next to it.', '']
    if meta.get('unavailable'):
        missing = '; '.join(f'{k}: {v}' for k, v in meta['unavailable'].items())
        lines += [f'Not available: {missing}', '']

    lines += ['## Agreement', '',
              'Largest relative error (max |a - b| / max |b|) over '
              f"{meta['checks']} random configurations inside the joint limits; reference: "
              f'kron_dynamics. Tolerance {AGREE_TOL:g} ({AGREE_TOL_LOOSE:g} for PyBullet).', '']
    libs = ['pinocchio', 'pybullet', 'mujoco']
    quantities = ['M', 'G', 'RNEA tau', 'Coriolis vector', 'Coriolis matrix: C qd']
    lines += ['| model | library | ' + ' | '.join(quantities) + ' | verdict |',
              '|---|---|' + '---|' * (len(quantities) + 1)]
    for name, r in results.items():
        for lib in libs:
            a = r['agreement'].get(lib)
            if a is None:
                if lib in r['errors']:
                    lines.append(f'| {name} | {lib} | failed: {r["errors"][lib]} |'
                                 + ' |' * len(quantities))
                continue
            tol = AGREE_TOL_LOOSE if lib == 'pybullet' else AGREE_TOL
            vals = [a.get(k) for k in quantities]
            ok = all(isinstance(v, float) and v <= tol for v in vals if v is not None)
            lines.append(f'| {name} | {lib} | ' + ' | '.join(
                '–' if v is None else fmt_err(v) for v in vals) + f' | {verdict(ok)} |')
    lines += ['', 'Other checks (largest relative error over the same configurations):', '',
              '| model | check | value |', '|---|---|---|']
    for name, r in results.items():
        for lib, a in r['agreement'].items():
            for k, v in a.items():
                if lib in libs and k in quantities:
                    continue
                lines.append(f'| {name} | {lib}: {k} | {fmt_err(v)} |')
    if report.get('agreement_notes'):
        lines += ['', *[f'- {note}' for note in report['agreement_notes']]]

    lines += ['', '## Single calls: kron_dynamics vs Pinocchio targets', '',
              '| model | n | kron method | min | median | Pinocchio | min | median | '
              'ratio (min) | ratio (median) | target | verdict |',
              '|---|---|---|---|---|---|---|---|---|---|---|---|']
    for name, r in results.items():
        for op, x in r.get('ratios', {}).items():
            ours = r['timing_us']['kron_dynamics'][op]
            theirs = r['timing_us']['pinocchio'][x['baseline']]
            lines.append(
                f"| {name} | {r['n']} | `{op}` | {fmt(ours['min_us'], 2)} | "
                f"{fmt(ours['median_us'], 2)} | `{x['baseline']}` | {fmt(theirs['min_us'], 2)} "
                f"| {fmt(theirs['median_us'], 2)} | {fmt(x['ratio_min'], 2)} | "
                f"{fmt(x['ratio_median'], 2)} | <= {x['target']:g} | {verdict(x['pass'])} |")
    lines += ['', '## All single-call timings [µs]', '',
              '| model | library | operation | min | median |', '|---|---|---|---|---|']
    for name, r in results.items():
        for lib, ops in r['timing_us'].items():
            for op, t in ops.items():
                if 'error' in t:
                    lines.append(f'| {name} | {lib} | {op} | {t["error"]} | |')
                else:
                    lines.append(f"| {name} | {lib} | {op} | {fmt(t['min_us'], 2)} | "
                                 f"{fmt(t['median_us'], 2)} |")

    sc = report['scaling']
    lines += ['', '## Scaling over the serial chains (min µs per call)', '',
              '| series | ' + ' | '.join(f'n = {n}' for n in sc['n'])
              + ' | tree (n = 12) | slope (all n) | slope (n >= 12) |',
              '|---|' + '---|' * (len(sc['n']) + 3)]
    for key, ts in sc['series'].items():
        sl = sc['slopes'][key]
        lines.append(f'| {key} | ' + ' | '.join(fmt(t, 2) for t in ts)
                     + f" | {fmt(sc['tree'].get(key), 2)} | {fmt(sl['all n'], 2)} | "
                     f"{fmt(sl['n >= 12'], 2)} |")
    lines += ['', '| criterion | value | unit | verdict |', '|---|---|---|---|']
    for key, c in sc['criteria'].items():
        lines.append(f"| {key} | {fmt(c['value'], 2)} | {c['unit']} | {verdict(c['pass'])} |")
    lines += ['', '![scaling](scaling.png)']

    lines += ['', '## Batch: N configurations per call vs a Python loop (µs per configuration)',
              '', '| model | n | method | N | kron batch (min) | kron loop (min) | '
              'Pinocchio loop (min) | speed-up vs Pinocchio | target | verdict |',
              '|---|---|---|---|---|---|---|---|---|---|']
    for name, r in results.items():
        b = r.get('batch')
        if not b:
            continue
        for op in ('inverse_dynamics', 'mass_matrix'):
            e = b.get(op, {})
            kb = e.get('kron batch', {})
            lines.append(
                f"| {name} | {r['n']} | `{op}` | {b['N']} | "
                f"{fmt(kb.get('min_us'), 3) if 'min_us' in kb else 'not available'} | "
                f"{fmt(e.get('kron loop', {}).get('min_us'), 3)} | "
                f"{fmt(e.get('pinocchio loop', {}).get('min_us'), 3)} | "
                f"{fmt(e.get('speed-up vs pinocchio loop (min)'), 2)} | >= 2 | "
                f"{verdict(e.get('pass (>= 2x)'))} |")
    errs = {f"{name} {op}": r['batch'][op]['kron batch']['error']
            for name, r in results.items() if r.get('batch')
            for op in ('inverse_dynamics', 'mass_matrix')
            if 'error' in r['batch'].get(op, {}).get('kron batch', {})}
    if errs:
        first = next(iter(errs.values()))
        lines += ['', f'kron batch not available for {len(errs)} cases, e.g.: {first}']

    mm = report['mass_matrix_algorithms']
    lines += ['', '## Mass-matrix algorithms vs the operation counts of 003', '',
              f"Claims: {mm['source']}.", '']
    for key, c in mm['claims'].items():
        lines.append(f"- `{key}`: {c['method']}: {c['multiplications']} multiplications, "
                     f"{c['additions']} additions")
    paper = report['meta'].get('paper_003_check', {})
    lines += ['', f"(formulas looked up in {paper.get('file')}: "
              f"{'all found' if paper.get('verified') else 'NOT all found'})", '',
              "Times: min µs per call of `mass_matrix(q, method)` (readable NumPy), and of "
              "the compiled kernels of the same three algorithms called directly (no facade; "
              "the default `mass_matrix(q)` is the compiled CRBA through the facade). "
              "'eq. add.' = 1.1 x multiplications + additions (003 Fig. 3).",
              '', '| model | n | readable: eq. 95 | 003 explicit | CRBA | '
              'compiled: eq. 95 | 003 explicit | CRBA | eq. add. eq. 95 | eq. add. explicit | '
              'compiled time explicit/eq. 95 | claim explicit/eq. 95 |',
              '|---|---|---|---|---|---|---|---|---|---|---|---|']
    for row in mm['rows']:
        cj, ce = row.get('compiled jacobian'), row.get('compiled explicit')
        t_ratio = ce / cj if ce and cj else None
        c_ratio = row['eqadd explicit'] / row['eqadd jacobian']
        lines.append(f"| {row['model']} | {row['n']} | {fmt(row['jacobian'], 1)} | "
                     f"{fmt(row['explicit'], 1)} | {fmt(row['crba'], 1)} | {fmt(cj, 2)} | "
                     f"{fmt(ce, 2)} | {fmt(row.get('compiled crba'), 2)} | "
                     f"{row['eqadd jacobian']:.0f} | {row['eqadd explicit']:.0f} | "
                     f"{fmt(t_ratio, 2)} | {c_ratio:.2f} |")
    lines += ['', 'Log-log slopes over the chains: ' + ', '.join(
        f'{k} {fmt(v, 2)}' for k, v in mm['slopes_chains'].items()), '']
    if report.get('mass_matrix_notes'):
        lines += [*[f'- {note}' for note in report['mass_matrix_notes']], '']
    return '\n'.join(lines) + '\n'


def agreement_notes(results) -> list:
    """Explain the disagreements that were found (and the setup that avoids others)."""
    notes = [
        'Same URDF text for every library. PyBullet loads it with URDF_USE_INERTIA_FROM_FILE '
        '(otherwise Bullet recomputes inertias from collision shapes); MuJoCo gets '
        '`<mujoco><compiler discardvisual fusestatic balanceinertia="false" '
        'inertiafromgeom="false"/></mujoco>` and has joint damping, armature and '
        'frictionloss zeroed and constraints, springs and dampers disabled (otherwise '
        'mj_inverse subtracts passive and limit forces); gravity (0, 0, -9.81) everywhere. '
        'The Panda loses its `<dynamics>` (damping) elements in bench/lib/models.py for the same '
        'reason.',
        "Pinocchio's computeCoriolisMatrix and ours both satisfy M' - 2C skew but the "
        'matrices need not be equal (any C + S with S skew and S q\' = 0 also works); '
        'C q\' is compared instead, and the matrices only for information.',
    ]
    worst, pybullet_worst, c_diff = {}, 0.0, 0.0
    for name, r in results.items():
        for lib, a in r['agreement'].items():
            for k, v in a.items():
                if isinstance(v, float) and v > worst.get((lib, k), (0, ''))[0]:
                    worst[(lib, k)] = (v, name)
    for (lib, k), (v, name) in sorted(worst.items()):
        if lib.startswith('pybullet (no'):
            notes.append(f'Without URDF_USE_INERTIA_FROM_FILE PyBullet\'s M differs by up to '
                         f'{v:.1e} (relative, {name}): Bullet then recomputes each link\'s '
                         'inertia itself instead of using the URDF\'s.')
        elif lib.startswith('pybullet (base'):
            notes.append('PyBullet\'s calculateInverseDynamics mishandles a rotated inertial '
                         'frame of the fixed root link (URDF <inertial><origin rpy> of the '
                         'base; it has no effect on M, C, G): its G is then off by up to '
                         f'{v:.1e} (relative, {name}). Checked on chain_6: PyBullet\'s G equals '
                         'ours computed with gravity R g (R = that rotation) to 4e-14, i.e. '
                         'Bullet applies the world gravity vector in the base\'s inertial '
                         'frame (Bullet\'s base frame). The benchmark robots therefore keep '
                         'the root link\'s inertial rpy at 0 (the Panda has 0 already).')
        elif 'finite-difference' in k:
            if v > FD_TOL:
                notes.append(f'{lib}: {k}: {v:.1e} (worst on {name}) exceeds {FD_TOL:g}')
        elif (lib in ('pinocchio', 'mujoco') and v > AGREE_TOL and 'need not' not in k) \
                or (lib == 'pybullet' and v > AGREE_TOL_LOOSE):
            notes.append(f'DISAGREEMENT {lib} {k}: {v:.1e} (worst on {name})')
        elif lib == 'kron_dynamics (self)' and v > AGREE_TOL:
            notes.append(f'kron_dynamics identity off: {k}: {v:.1e} ({name})')
        elif lib == 'pybullet' and v > 1e-12:
            pybullet_worst = max(pybullet_worst, v)
        elif lib == 'pinocchio' and 'need not' in k:
            c_diff = max(c_diff, v)
    if pybullet_worst:
        notes.append(f'PyBullet agrees to {pybullet_worst:.0e} at worst, not to round-off. '
                     'Likely cause: Bullet keeps each link inertia as principal moments in a '
                     'principal frame (its URDF importer hands over a diagonal inertia and '
                     'an inertial frame), diagonalising the URDF tensor iteratively on load.')
    if c_diff:
        notes.append('Pinocchio\'s Coriolis matrix itself differs from ours by at most '
                     f'{c_diff:.1e} (relative) on these models, i.e. the two constructions '
                     'give the same C here, although only C q\' had to agree.')
    return notes


def mass_matrix_notes(mm) -> list:
    """Say how the measured times compare with 003's counts."""
    s = mm['slopes_chains']
    chains = [row for row in mm['rows'] if row['kind'] == 'chain']
    big = max(chains, key=lambda row: row['n'], default={'n': 0})
    ratio = (big['compiled explicit'] / big['compiled jacobian']
             if big.get('compiled explicit') and big.get('compiled jacobian') else None)
    n_big = big['n'] or 1
    claim = equivalent_additions('explicit', n_big) / equivalent_additions('jacobian', n_big)
    return [
        "003's counts are cubic for both explicit methods (Table 1, all-revolute chains; the "
        "proposed method needs about 0.6 times the equivalent additions of the "
        'generalized momentum method at large n: 7.35 n^3 vs 12.7 n^3). The readable '
        'implementations are NumPy code whose time is dominated by Python overhead per '
        'vectorised step (the explicit JSIM loops over element pairs in Python, eq. 95 does '
        'O(n) vectorised products), so only the compiled kernels, written alike, compare the '
        'algorithms.',
        f'At n = {big["n"]} (the largest chain) the compiled time ratio explicit/eq. 95 is '
        f'{fmt(ratio, 2)}, where 003 claims {claim:.2f} in equivalent additions.',
        f"Measured log-log slopes over the chains: jacobian {fmt(s.get('jacobian'), 2)}, "
        f"explicit {fmt(s.get('explicit'), 2)}, crba {fmt(s.get('crba'), 2)}, compiled "
        f"{fmt(s.get('compiled'), 2)}; 003's claimed counts have slopes "
        f"{fmt(s.get('003 claim jacobian'), 2)} (jacobian) and "
        f"{fmt(s.get('003 claim explicit'), 2)} (explicit) over the same n (3 asymptotically).",
        '003 gives no count for CRBA; for a chain it does O(n^2) work (n composite inertias, '
        'each projected on the joints above it).',
    ]


# ---------------------------------------------------------------------------- main


def fixed(x, digits=2):
    """Format a number with fixed decimals ('–' for missing or not finite)."""
    return '–' if x is None or (isinstance(x, float) and not math.isfinite(x)) \
        else f'{x:.{digits}f}'


def kinematics_markdown(report: dict) -> str:
    """Return bench/results/kinematics.md from kinematics.json (bench_kinematics)."""
    meta = report['meta']
    lines = ['# Kinematics benchmark: kron_dynamics vs Pinocchio', '',
             f"{meta['date']}, {meta['cpu']} ({meta['cpu_count']} cores), Python "
             f"{meta['python']}, numba {meta['numba']}, pin {meta['libraries'].get('pin')}, "
             f"example-robot-data {meta['libraries'].get('example-robot-data')}, "
             f"kron_dynamics {meta['git']}, load average at the end "
             f"{', '.join(f'{x:.1f}' for x in meta['load_average'])}.", '',
             'Each kron_dynamics call and its Pinocchio counterpart were timed alternately '
             '(repeat by repeat, order swapped each time). Times in microseconds per call '
             'from Python; ratio = min kron / min Pinocchio (median of the per-repeat ratios '
             'in brackets).', '']
    for name, r in report['robots'].items():
        lines += [f"## {name} (n = {r['n']}, link {r['link']})", '',
                  '| quantity | worst relative difference |', '|---|---|']
        lines += [f'| {k} | {v:.1e} |' for k, v in r['agreement'].items()]
        lines += ['', '| kron_dynamics | µs | Pinocchio | µs | ratio | target | verdict |',
                  '|---|---|---|---|---|---|---|']
        for op, t in r['single'].items():
            target = t['target']
            verdict = '' if target is None else ('met' if t['ratio_min'] <= target
                                                 else '**not met**')
            lines.append(f"| `{op}` | {fixed(t['kron_min_us'])} | {t['pinocchio']} | "
                         f"{fixed(t['pin_min_us'])} | {fixed(t['ratio_min'])} "
                         f"({fixed(t['ratio_median'])}) | {fixed(target, 1) if target else ''} | "
                         f'{verdict} |')
        lines += ['', 'Anatomy of a dynamics call (each part timed alternately with the '
                  'Pinocchio call; ratio = part / whole Pinocchio call):', '',
                  '| method | facade | entry point | unboxing | output array | Pinocchio |',
                  '|---|---|---|---|---|---|']
        for op, steps in r['anatomy'].items():
            cells = [f"{fixed(steps[s]['kron_min_us'])} ({fixed(steps[s]['ratio_min'])})"
                     for s in ('facade', 'entry point', 'unboxing (empty kernel)',
                               'output array')]
            lines.append(f"| `{op}` | {' | '.join(cells)} | "
                         f"{fixed(steps['facade']['pin_min_us'])} |")
        b = r['batch']
        lines += ['', f"Batches of N = {b['N']} in one call (the same number of threads for "
                  'both; a Python loop of single calls where Pinocchio has no batch API):', '',
                  '| call | threads | kron µs/config | Pinocchio | µs/config | speedup |',
                  '|---|---|---|---|---|---|']
        for op, t in b.items():
            if isinstance(t, dict):
                name_, baseline = op.split(' (', 1)
                baseline = baseline.split(')')[0]
                lines.append(f"| `{name_}` | {t['threads']} | {fixed(t['kron_min_us'], 3)} | "
                             f"{baseline} | {fixed(t['pin_min_us'], 3)} | "
                             f"{fixed(t['speedup_min'])}x ({fixed(t['speedup_median'])}x) |")
        if 'parallel_api_error' in b:
            lines.append(f"\nPinocchio's parallel API failed: {b['parallel_api_error']}")
        lines.append('')
    return '\n'.join(lines) + '\n'
