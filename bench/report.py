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
Render the measured tables of docs/ (and the README's headline block) from bench/results.

Every table of docs/performance.md and docs/reliability.md, and the README's headline block,
sits between ``<!-- BEGIN generated: NAME -->`` and ``<!-- END generated: NAME -->`` and
comes from ``bench/results/*.json`` through the function NAME of ``TABLES``, with the
revision, date and machine the JSON records (``bench/lib/provenance.py`` writes them) under it.
The text around the blocks is written in the Markdown files themselves, not here. The bench
scripts call this at the end of a run, so the tables cannot go stale; ``test/test_docs.py``
checks that the committed files are exactly what this renders from the committed JSON, so a
hand edit of a table fails.

    .venv/bin/python bench/report.py            # rewrite the generated files (make docs)
    .venv/bin/python bench/report.py --check    # exit 1 if any differs from the JSON

To add a table: write ``def xxx_table(r: Results) -> str`` (Markdown, ending with
``source(...)`` for its stamp), add it to ``TABLES`` and put its two markers in a page of
``PAGES``. A table whose JSON is missing (or lacks what the table needs, e.g. after a
partial run) says so in the page instead of failing.
"""

import argparse
import json
import math
from pathlib import Path
import re
import sys

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESULTS = BENCH / 'results'
if str(BENCH) not in sys.path:     # bench/lib when imported from elsewhere (test_docs)
    sys.path.insert(0, str(BENCH))
from lib.compare import AGREE_TOL, AGREE_TOL_LOOSE  # noqa: E402


class Missing(Exception):
    """A results file that a table needs is not there."""


class Results:
    """The JSON files of bench/results, loaded on first use, and where links point from."""

    def __init__(self, directory: Path = RESULTS, link_prefix: str = '../'):
        self.directory = directory
        self.link_prefix = link_prefix    # from the page being rendered to the repo root
        self._cache = {}

    def __getitem__(self, stem: str):
        if stem not in self._cache:
            path = self.directory / f'{stem}.json'
            self._cache[stem] = json.loads(path.read_text()) if path.is_file() else None
        if self._cache[stem] is None:
            raise Missing(f'bench/results/{stem}.json')
        return self._cache[stem]

    def link(self, path: str) -> str:
        """Return a Markdown link target to a repository path from the current page."""
        return self.link_prefix + path


# ------------------------------------------------------------------------------ formatting
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


def err(x) -> str:
    """Format a relative error (a string, e.g. a failure, as it is)."""
    return x if isinstance(x, str) else f'{x:.1e}'


def sig(x, digits: int = 3) -> str:
    """Format a number with a few significant digits (small and large alike)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return '–'
    if x == 0:
        return '0'
    if abs(x) >= 10 ** digits:
        return f'{x:,.0f}'
    return f'{x:.{digits}g}'


def met(flag) -> str:
    """Return 'met' / '**not met**' / '–' for a verdict."""
    return '–' if flag is None else ('met' if flag else '**not met**')


def table(header: list, rows: list) -> str:
    """Return a Markdown table."""
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    lines += ['| ' + ' | '.join(str(c) for c in row) + ' |' for row in rows]
    return '\n'.join(lines)


def provenance(data: dict) -> str:
    """Return 'revision ... · date · machine' of a results file (what it says it is)."""
    meta = data.get('meta', {}) if isinstance(data, dict) else {}
    git = meta.get('git') or meta.get('kron_dynamics')
    if git:
        rev = f'revision `{git}`'
    else:
        rev = 'revision not recorded'
        if meta.get('committed_in'):
            rev += f' (results committed in `{meta["committed_in"]}`)'
    date = str(meta.get('date') or '')[:10] or 'date not recorded'
    machine = meta.get('cpu') or 'CPU model not recorded'
    details = [f"{meta['cpu_count']} cores" if meta.get('cpu_count') else '',
               meta.get('machine') or '',
               f"load average {meta['loadavg']:.1f}" if meta.get('loadavg') is not None
               else '']
    details = ', '.join(d for d in details if d)
    quick = ' · **quick run** (few repeats)' if meta.get('quick') else ''
    return f'{rev} · {date} · {machine}' + (f' ({details})' if details else '') + quick


def source(r: Results, *stems: str) -> str:
    """Return the stamp line of a table: its files with their revision, date and machine."""
    parts = [f"[`{stem}.json`]({r.link(f'bench/results/{stem}.json')}): {provenance(r[stem])}"
             for stem in stems]
    return '*Source: ' + '; '.join(parts) + '.*'


# ------------------------------------------------------------------------------ dynamics
PANDA = 'panda'
KRON_VS_PINOCCHIO = {   # kron method -> what it is compared with
    'inverse_dynamics': 'inverse dynamics τ',
    'mass_matrix': 'mass matrix M',
    'gravity_torque': 'gravity torque G',
    'coriolis_vector': "Coriolis vector C*(q)(q' ⊗ q')",
    'coriolis_star': 'C* (n × n²) vs Coriolis matrix (n × n)',
}


def _timing(model: dict, lib: str, op: str, stat: str = 'min_us'):
    return model.get('timing_us', {}).get(lib, {}).get(op, {}).get(stat)


def target_cells(model: dict, op: str, medians: bool = False) -> list:
    """Return the cells of one call against its Pinocchio baseline, ratios, target, verdict."""
    x = model['ratios'][op]
    stats = ('min_us', 'median_us') if medians else ('min_us',)
    ours = [fmt(_timing(model, 'kron_dynamics', op, s)) for s in stats]
    theirs = [fmt(_timing(model, 'pinocchio', x['baseline'], s)) for s in stats]
    return [f'`{op}`', *ours, f"`{x['baseline']}`", *theirs,
            fmt(x['ratio_min']), fmt(x['ratio_median']), f"≤ {x['target']:g}", met(x['pass'])]


def single_call_table(r: Results) -> str:
    """One call from Python on the Franka Panda: kron_dynamics vs Pinocchio."""
    d = r['dynamics']
    panda = d['models'][PANDA]
    rows = [[what, *target_cells(panda, op)] for op, what in KRON_VS_PINOCCHIO.items()
            if panda['ratios'].get(op)]
    pin = d['meta']['libraries'].get('pin', '?')
    return '\n\n'.join([
        table(['quantity', 'kron_dynamics', 'µs', f'Pinocchio {pin}', 'µs', 'ratio (min)',
               'ratio (median)', 'target', 'verdict'], rows),
        f"Franka Panda (7 DOF, example-robot-data), µs per call from Python, minimum of "
        f"{d['meta']['settings']['repeat']} repeats (median ratio beside it).",
        source(r, 'dynamics')])


OTHER_LIBRARIES = {   # row -> {library: operation}
    'inverse dynamics τ': {'kron_dynamics': 'inverse_dynamics', 'pinocchio': 'rnea',
                           'pybullet': 'calculateInverseDynamics', 'mujoco': 'mj_inverse'},
    'mass matrix M': {'kron_dynamics': 'mass_matrix', 'pinocchio': 'crba',
                      'pybullet': 'calculateMassMatrix',
                      'mujoco': 'mj_fullM (kinematics, comPos, makeM, fullM)'},
}


def other_libraries_table(r: Results) -> str:
    """The Panda's inverse dynamics and M in all four libraries."""
    d = r['dynamics']
    panda = d['models'][PANDA]
    libs = ['kron_dynamics', 'pinocchio', 'pybullet', 'mujoco']
    versions = d['meta']['libraries']
    names = {'kron_dynamics': 'kron_dynamics', 'pinocchio': f"Pinocchio {versions.get('pin')}",
             'pybullet': f"PyBullet {versions.get('pybullet')}",
             'mujoco': f"MuJoCo {versions.get('mujoco')}"}
    rows = [[what] + [fmt(_timing(panda, lib, ops[lib])) for lib in libs]
            for what, ops in OTHER_LIBRARIES.items()]
    calls = '; '.join(f'{what}: ' + ', '.join(f'`{ops[lib]}`' for lib in libs[1:])
                      for what, ops in OTHER_LIBRARIES.items())
    return '\n\n'.join([
        table(['Franka Panda, µs per call (min)'] + [names[lib] for lib in libs], rows),
        f'Calls: {calls}. Pinocchio\'s `crba` fills the upper triangle only.',
        source(r, 'dynamics')])


def scaling_table(r: Results) -> str:
    """Time per call against n over the serial chains (and the 12-DOF tree), with slopes."""
    d = r['dynamics']
    sc = d['scaling']
    header = ['series (min µs per call)'] + [f'n = {n}' for n in sc['n']] + [
        'tree, n = 12', 'log-log slope, n ≥ 12']
    rows = [[key] + [fmt(t) for t in ts] + [fmt(sc['tree'].get(key)),
                                            fmt(sc['slopes'][key]['n >= 12'])]
            for key, ts in sc['series'].items()]
    crit = [[key, fmt(c['value']), c['unit'], met(c['pass'])]
            for key, c in sc['criteria'].items()]
    return '\n\n'.join([
        table(header, rows),
        table(['criterion', 'value', 'unit', 'verdict'], crit),
        f"![time per call against n, log-log]({r.link('bench/results/scaling.png')})",
        source(r, 'dynamics')])


def batch_table(r: Results) -> str:
    """N configurations in one call against Python loops."""
    d = r['dynamics']
    rows = []
    for name, model in d['models'].items():
        b = model.get('batch')
        if not b:
            continue
        for op in ('inverse_dynamics', 'mass_matrix'):
            e = b.get(op, {})
            rows.append([name, model['n'], f'`{op}`', fmt(b['N']),
                         fmt(e.get('kron batch', {}).get('min_us'), 3),
                         fmt(e.get('kron loop', {}).get('min_us'), 3),
                         fmt(e.get('pinocchio loop', {}).get('min_us'), 3),
                         fmt(e.get('speed-up vs pinocchio loop (min)')), '≥ 2',
                         met(e.get('pass (>= 2x)'))])
    return '\n\n'.join([
        table(['model', 'n', 'method', 'N', 'kron_dynamics batch', 'kron_dynamics loop',
               'Pinocchio loop', 'speed-up vs Pinocchio', 'target', 'verdict'], rows),
        f"µs per configuration (min). Batches ran on numba's thread pool with "
        f"{d['meta']['numba_threads']} threads.",
        source(r, 'dynamics')])


def mass_matrix_table(r: Results) -> str:
    """The three M algorithms compiled alike, against 003's operation counts."""
    d = r['dynamics']
    mm = d['mass_matrix_algorithms']
    rows = []
    for row in mm['rows']:
        cj, ce, cc = row.get('compiled jacobian'), row.get('compiled explicit'), \
            row.get('compiled crba')
        rows.append([row['model'], row['n'], fmt(cj), fmt(ce), fmt(cc),
                     fmt(ce / cj if ce and cj else None),
                     fmt(row['eqadd explicit'] / row['eqadd jacobian'])])
    s = mm['slopes_chains']
    slopes = ', '.join(f'{label} {fmt(s.get(key))}' for label, key in (
        ('000 eq. 95', 'compiled jacobian'), ('003 explicit', 'compiled explicit'),
        ('CRBA', 'compiled crba'), ("003's count for eq. 95", '003 claim jacobian'),
        ("003's count for its explicit form", '003 claim explicit')))
    paper = d['meta'].get('paper_003_check', {})
    claims = '\n'.join(f"- {c['method']}: {c['multiplications']} multiplications, "
                       f"{c['additions']} additions" for c in mm['claims'].values())
    return '\n\n'.join([
        table(['model', 'n', '000 eq. 95 [µs]', '003 explicit [µs]', 'CRBA [µs]',
               'time explicit / eq. 95', "003's claim (equivalent additions)"], rows),
        f'Compiled kernels called directly (min µs per call). Log-log slopes over the chains: '
        f'{slopes}.',
        f"003's counts ({mm['source']}; the formulas "
        f"{'all found' if paper.get('verified') else '**not all found**'} in the seed text):",
        claims, source(r, 'dynamics')])


def kinematics_agreement_table(r: Results) -> str:
    """Worst relative difference from Pinocchio of every kinematic quantity, per robot."""
    d = r['kinematics']
    robots = [k for k in KINEMATICS_ROBOTS if k in d['robots']]
    quantities = list(d['robots'][robots[0]]['agreement'])
    rows = [[f'`{k}`'] + [err(d['robots'][robot]['agreement'].get(k)) for robot in robots]
            for k in quantities]
    return table(['quantity'] + [KINEMATICS_ROBOTS[robot] for robot in robots], rows) \
        + '\n\n' + source(r, 'kinematics')


# ------------------------------------------------------------------------------ start-up
def startup_table(r: Results) -> str:
    """Process start to the first ~/bias_torque, warm and cold compile cache."""
    d = r['startup']
    rows = []
    for name, case in d['cases'].items():
        s = case['summary']
        f = s['first_output_s']
        target = case.get('target_s')
        rows.append([name, s['runs'], s['failed'], fmt(f['min']), fmt(f['median']),
                     fmt(f['max']), fmt(s['cpu_s']['median']),
                     '–' if target is None else f'≤ {target:g}',
                     met(case.get('met')) if 'met' in case else '–'])
    return '\n\n'.join([
        table(['case', 'runs', 'failed', 'min [s]', 'median [s]', 'max [s]',
               'CPU median [s]', 'target (median) [s]', 'verdict'], rows),
        f"{d['config']['measured']}; {d['config']['model']}, joint states at "
        f"{fmt(d['config']['rate_hz'], 0)} Hz, parameters of `{d['config']['params_file']}`.",
        source(r, 'startup')])


# ------------------------------------------------------------------------------ loading
LOADING_ROBOTS = ('panda_description/urdf/panda.urdf', 'ur_description/urdf/ur5_robot.urdf',
                  'talos_data/robots/talos_full_v2.urdf',
                  'tiago_description/robots/tiago_dual.urdf')


def loading_table(r: Results) -> str:
    """Load time of every example-robot-data URDF against Pinocchio, and a 5000-link chain."""
    d = r['loading']
    s, chain = d['summary'], d['chain']
    by_name = {row['urdf']: row for row in d['robots']}
    rows = [['median over the robots', '', '', fmt(s['median_ratio']),
             fmt(s['median_wall_ratio']), f"≤ {s['targets']['median_ratio']:g}",
             met(s['median_ratio'] <= s['targets']['median_ratio'])],
            [f"worst: `{s['worst_robot'].split('/')[-1]}`", '', '', fmt(s['worst_ratio']), '',
             '–', '–']]
    for name in LOADING_ROBOTS:
        row = by_name.get(name)
        if row and 'ratio' in row:
            rows.append([f"`{name.split('/')[-1]}`", fmt(row['ours_s'] * 1e3),
                         fmt(row['pinocchio_s'] * 1e3), fmt(row['ratio']),
                         fmt(row['wall_ratio']), '–', '–'])
    pin_chain = (f"{fmt(chain['pinocchio_s'])} s" if chain.get('pinocchio_s') is not None
                 else f"fails ({chain.get('pinocchio_failed', 'not run')})")
    chain_target = s['targets']['chain_5000_s']
    return '\n\n'.join([
        table(['robots', 'ours [ms]', 'Pinocchio [ms]', 'ratio (CPU)', 'ratio (wall)',
               'target', 'verdict'], rows),
        f"{s['robots_timed']} robots both load; best of {d['repeats']} per robot and library. "
        f"A {chain['links']}-link chain loads in {fmt(chain['ours_s'])} s (target ≤ "
        f"{chain_target:g} s: {met(chain['ours_s'] < chain_target)}); Pinocchio on it: "
        f"{pin_chain}.",
        source(r, 'loading')])


# ------------------------------------------------------------------------------ ROS latency
LATENCY_RUNS = ['ros_latency', 'ros_latency_normal_scheduling', 'ros_latency_loaded',
                'ros_latency_loaded_middleware_priority', 'ros_latency_loaded_normal_scheduling']


def ros_latency_table(r: Results) -> str:
    """dynamics_node against an echo node, quiet and loaded, SCHED_FIFO and normal."""
    rows = []
    for stem in LATENCY_RUNS:
        d = r[stem]
        c, dyn, echo = d['config'], d['nodes']['dynamics'], d['nodes']['echo']
        prio = c['thread_priority']
        middleware = c.get('middleware_thread_priority') or 0
        checks = d['checks']
        ratio = checks['median dynamics / median echo']
        p99 = checks['p99 dynamics [ms]']
        lost = checks['dynamics inputs dropped / twice / unmatched outputs']
        rows.append([
            f'`{stem}`', fmt(c['duration_s_per_node'], 0),
            (f'SCHED_FIFO {prio} (executor)' + (f', {middleware} (DDS)' if middleware else '')
             if prio else 'normal'),
            fmt(c.get('background_load_processes') or 0),
            f"{fmt(dyn['latency_ms']['median'], 3)} / {fmt(dyn['latency_ms']['p99'], 3)}",
            f"{fmt(echo['latency_ms']['median'], 3)} / {fmt(echo['latency_ms']['p99'], 3)}",
            f"{fmt(ratio['value'])} ({met(ratio['met'])})",
            f"{fmt(p99['value'], 3)} ({met(p99['met'])})",
            f"{fmt(dyn['inputs_measured'])}: {lost['value']}",
            f"{fmt(dyn['cpu_us_per_message'], 0)} / {fmt(echo['cpu_us_per_message'], 0)}"])
    first = r[LATENCY_RUNS[0]]
    targets = {k: v['limit'] for k, v in first['checks'].items()}
    header = ['run', 's per node', 'scheduling', 'busy processes',
              'dynamics median / p99 [ms]', 'echo median / p99 [ms]',
              f"median ratio ({targets['median dynamics / median echo']})",
              f"p99 [ms] ({targets['p99 dynamics [ms]']})",
              'inputs: dropped / twice / unmatched', 'CPU µs per message (dynamics / echo)']
    return '\n\n'.join([
        table(header, rows),
        f"{first['config']['model']}; {fmt(first['config']['rate_hz'], 0)} Hz joint states; "
        f"latency: {first['config']['latency']}.",
        source(r, *LATENCY_RUNS)])


# ------------------------------------------------------------------------------ symbolic
def symbolic_table(r: Results) -> str:
    """Generated closed forms vs the facade, the kernels and the readable code."""
    d = r['symbolic']
    variants = ['generated', 'RobotModel', 'kernel', 'readable']
    rows = []
    for name, m in d['results'].items():
        t = m['microseconds_per_call']
        for k, quantity in enumerate(['M', 'C*', 'G', 'tau']):
            rows.append([f"{name} (n = {m['n']})" if k == 0 else '', quantity]
                        + [sig(t.get(v, {}).get(quantity)) for v in variants])
    return '\n\n'.join([
        table(['machine', 'quantity', 'generated', 'RobotModel', 'kernel', 'readable'], rows),
        f"Times: {d['meta'].get('unit', 'microseconds per call')}.",
        source(r, 'symbolic')])


def symbolic_cost_table(r: Results) -> str:
    """What deriving and generating the closed forms cost."""
    d = r['symbolic']
    rows = [[name, m['n'], fmt(m['operations']), fmt(m['source_lines']),
             sig(m['derive_seconds']), sig(m['codegen_seconds']),
             ', '.join(f'{k} {sig(v)}' for k, v in m['microseconds_per_call']['readable'].items()
                       if k.startswith('M ('))]
            for name, m in d['results'].items()]
    return '\n\n'.join([
        table(['machine', 'n', 'operations (M, C*, G)', 'generated lines', 'derive [s]',
               'generate Python [s]', 'readable M, other algorithms [µs]'], rows),
        source(r, 'symbolic')])


# ------------------------------------------------------------------------------ reliability
def soak_table(r: Results) -> str:
    """The long soak: every valid input one output, no bad one any, memory flat."""
    d = r['soak']
    nodes = list(d['alive'])
    rows = [[fmt(d['duration_s'], 0), fmt(d['rate_hz'], 0), fmt(d['sent']), fmt(d['valid']),
             fmt(d['bad']), fmt(d['bias_outputs']), fmt(d['commands']),
             fmt(d['nonfinite_outputs']),
             f"{fmt(d['latency_median_ms'])} / {fmt(d['latency_p99_ms'])} / "
             f"{fmt(d['latency_max_ms'], 1)}",
             '; '.join(f"{k}: {fmt(d['rss_mb'][k], 1)} "
                       f"(+{fmt(d['rss_growth_after_warmup_mb'][k])})" for k in nodes),
             '; '.join(f"{k}: {fmt(d['longest_gap_s'][k])}" for k in nodes),
             'all alive' if all(d['alive'].values()) else '**not all alive**',
             met(d.get('ok'))]]
    return '\n\n'.join([
        table(['s', 'Hz', 'inputs sent', 'valid', 'bad', 'bias torques', 'commands',
               'NaN/inf outputs', 'latency median / p99 / max [ms]',
               'RSS after warm-up [MB] (growth)', 'longest output gap [s]', 'processes',
               'verdict'], rows),
        source(r, 'soak')])


FAULT_NAMES = {
    'pause_states': 'simulator paused (SIGSTOP), no joint states',
    'kill_simulator': 'simulator killed (SIGKILL), restarted',
    'kill_controller': 'controller killed (SIGKILL), restarted',
}


def faults_table(r: Results) -> str:
    """The three faults on the stacker demo graph and how it recovered."""
    d = r['faults']
    rows = [[FAULT_NAMES.get(f['fault'], f['fault']), fmt(f['zero_commands_during_outage']),
             fmt(f['nonzero_commands_during_outage']), fmt(f['resumed_after_s']),
             fmt(f['recovered_after_s']), fmt(f['observed_s'], 0), met(f['ok'])]
            for f in d['faults']]
    outage = d.get('config', {}).get('outage_s')
    return '\n\n'.join([
        table(['fault' + (f' ({fmt(outage, 1)} s)' if outage else ''),
               'zero-effort commands in the outage', 'other commands in the outage',
               'commands resumed after [s]', 'tracking back within bound after [s]',
               'watched [s]', 'verdict'], rows),
        f"![the stacker demo under the three faults]({r.link('bench/results/faults.png')})",
        source(r, 'faults')])


AGREEMENT = ['M', 'G', 'RNEA tau', 'Coriolis vector', 'Coriolis matrix: C qd']


def agreement_table(r: Results) -> str:
    """Every model of the dynamics benchmark against Pinocchio, PyBullet and MuJoCo."""
    d = r['dynamics']
    rows = []
    for name, m in d['models'].items():
        for lib in ('pinocchio', 'pybullet', 'mujoco'):
            a = m['agreement'].get(lib)
            if a is None:
                if lib in m.get('errors', {}):
                    rows.append([name, lib, f"failed: {m['errors'][lib]}"]
                                + [''] * len(AGREEMENT))
                continue
            tol = AGREE_TOL_LOOSE if lib == 'pybullet' else AGREE_TOL
            values = [a.get(k) for k in AGREEMENT]
            ok = all(isinstance(v, float) and v <= tol for v in values if v is not None)
            rows.append([name, lib] + ['–' if v is None else err(v) for v in values]
                        + [met(ok)])
    return '\n\n'.join([
        table(['model', 'library', *AGREEMENT, f'≤ {AGREE_TOL:g} ({AGREE_TOL_LOOSE:g} for '
               'PyBullet)'], rows),
        f"max |a − b| / max |b| against kron_dynamics, worst over {d['meta']['checks']} random "
        'configurations of each model.', source(r, 'dynamics')])


# ------------------------------------------------------------------------------ kinematics
KINEMATICS_ROBOTS = {'panda': 'Panda (n = 7)', 'talos': 'Talos (n = 32)'}


def timing_cells(e: dict) -> list:
    """Return the cells of one alternately timed pair: ours, Pinocchio's, ratio (median)."""
    return [fmt(e.get('kron_min_us')), fmt(e.get('pin_min_us')),
            f"{fmt(e.get('ratio_min'))} ({fmt(e.get('ratio_median'))})"]


def pair_row(title: str, op: str, e: dict) -> list:
    """Return a row of one alternately timed pair with its target (≤) and verdict."""
    target, ratio = e.get('target'), e.get('ratio_min')
    return [title, f'`{op}`', f"`{e.get('pinocchio', '')}`", *timing_cells(e),
            f'≤ {target:g}' if target else '–',
            met(None if target is None or ratio is None else ratio <= target)]


PAIR_HEADER = ['robot', 'kron_dynamics', 'Pinocchio', 'µs', 'Pinocchio µs', 'ratio min (median)',
               'target', 'verdict']


def worst_line(agreements) -> str:
    """Return the sentence with the worst relative difference over some agreement checks."""
    worst = max(v for agreement in agreements for v in agreement.values())
    return f'Worst relative difference from Pinocchio over the agreement checks: {sig(worst, 2)}.'


def kinematics_table(r: Results) -> str:
    """Single kinematics (and dynamics) calls against Pinocchio, alternately timed."""
    d = r['kinematics']
    robots = [k for k in KINEMATICS_ROBOTS if k in d['robots']]
    first = d['robots'][robots[0]]['single']
    rows = []
    for op, entry in first.items():
        row = [f'`{op}`', entry.get('pinocchio', '')]
        verdicts = []
        for robot in robots:
            e = d['robots'][robot]['single'].get(op, {})
            row += timing_cells(e)
            if entry.get('target') and e.get('ratio_min') is not None:
                verdicts.append(e['ratio_min'] <= entry['target'])
        target = entry.get('target')
        row += [f'≤ {target:g}' if target else '',
                met(all(verdicts) if verdicts else None)]
        rows.append(row)
    header = ['kron_dynamics', 'Pinocchio']
    for robot in robots:
        name = KINEMATICS_ROBOTS[robot]
        header += [f'{name} µs', 'Pinocchio µs', 'ratio min (median)']
    return table(header + ['target', 'verdict'], rows) + '\n\n' + source(r, 'kinematics')


BATCH_TARGET_SPEEDUP = 2.0     # issue 13: a batch at least 2x faster per configuration


def kinematics_batch_table(r: Results) -> str:
    """Batches of N configurations in one call, per configuration, against Pinocchio."""
    d = r['kinematics']
    rows = []
    for robot, name in KINEMATICS_ROBOTS.items():
        if robot not in d['robots']:
            continue
        batch = d['robots'][robot]['batch']
        for op, e in batch.items():
            if op == 'N':
                continue
            target = BATCH_TARGET_SPEEDUP
            rows.append([name, f'`{op}`', fmt(e.get('kron_min_us'), 3),
                         fmt(e.get('pin_min_us'), 3), fmt(e.get('speedup_min')),
                         f'≥ {target:g}', met(None if e.get('speedup_min') is None
                                              else e['speedup_min'] >= target)])
    header = ['robot', f"operation (N = {d['robots']['panda']['batch']['N']:,})",
              'µs per configuration', 'Pinocchio µs', 'speed-up', 'target', 'verdict']
    return table(header, rows) + '\n\n' + source(r, 'kinematics')


ONE_MODEL_CASES = {
    'panda_hand': 'stock Panda with its hand (mimic finger), against `mimic=True`',
    'talos_floating': 'TALOS on a free flyer (nv = 38)',
    'solo12_floating': 'solo12 on a free flyer (nv = 18)',
    'solo12_contacts': 'solo12 on four point feet, feet moving',
    'talos_contacts': 'TALOS on two 6-D soles, feet moving',
    'panda_fixed': 'fixed 7-DOF Panda (fingers fixed)',
    'tiago_planar': 'TIAGo on a planar base (nv = 51)',
    'panda_hand_floating': 'Panda with its hand on a free flyer, against `mimic=True`',
}


def one_model_table(r: Results) -> str:
    """The one-model targets: every kind of robot against Pinocchio, alternately timed."""
    cases = r['one_model']['cases']
    rows = [pair_row(title, op, e) for case, title in ONE_MODEL_CASES.items() if case in cases
            for op, e in cases[case]['single'].items()]
    return '\n\n'.join([table(PAIR_HEADER, rows),
                        worst_line(entry['agreement'] for entry in cases.values()),
                        source(r, 'one_model')])


DERIVATIVE_CASES = {
    'panda_arm': 'Panda arm (7 DOF, fingers fixed)',
    'talos_floating': 'TALOS on a free flyer (nv = 38)',
}


def derivatives_table(r: Results) -> str:
    """Derivatives of the dynamics against Pinocchio: single calls and batches."""
    cases = r['derivatives']['cases']
    titled = [(title, cases[case]) for case, title in DERIVATIVE_CASES.items() if case in cases]
    rows = [pair_row(title, op, e) for title, entry in titled
            for op, e in entry['single'].items()]
    batch_rows = [[title, f'`{op}`', f"{b['N']:,}", fmt(b['kron_us_per_state']),
                   fmt(b['pin_loop_us_per_state']), f"{fmt(b['speedup'])}x", str(b['threads'])]
                  for title, entry in titled for op, b in entry['batch'].items()]
    return '\n\n'.join([
        table(PAIR_HEADER, rows),
        table(['robot', 'batch', 'N', 'µs per state', 'Pinocchio loop µs per state',
               'speed-up', 'threads'], batch_rows),
        worst_line(entry['agreement'] for entry in cases.values()), source(r, 'derivatives')])


def identification_table(r: Results) -> str:
    """The regressor against Pinocchio (single call, batch) and the wall time of a fit."""
    case = r['identification']['cases']['panda_arm']
    e, b = case['regressor']['single'], case['regressor']['batch']
    regressor = table(PAIR_HEADER, [pair_row('Panda arm (7 DOF, fingers fixed)', 'regressor', e)])
    batch = table(['batch', 'N', 'µs per state', 'Pinocchio loop µs per state', 'speed-up',
                   'threads'],
                  [['`regressor`', f"{b['N']:,}", fmt(b['kron_us_per_state']),
                    fmt(b['pin_loop_us_per_state']), f"{fmt(b['speedup'])}x",
                    str(b['threads'])]])
    fit = case['identify']
    names = {'least_squares': "`method='least_squares'`, q', q'' given",
             'physically_consistent': "default (physically consistent), q', q'' given",
             'physically_consistent_filtered': "default, q', q'' filtered from q"}
    fits = table(['identify', 'wall s', 'residual RMS max [N m]', 'target', 'verdict'],
                 [[names[k], fmt(fit[k]['wall_s']), fmt(fit[k]['residual_rms_max'], 3),
                   f"< {fit[k]['target_s']:g} s", met(fit[k]['wall_s'] < fit[k]['target_s'])]
                  for k in names if k in fit])
    return (regressor + '\n\n' + batch + '\n\n' + fits
            + f"\n\n{fit['seconds']:g} s at {fit['rate_hz']:g} Hz: {fit['equations']:,} torque "
            f"equations. Agreement with Pinocchio: {sig(case['regressor']['agreement'], 2)}."
            '\n\n' + source(r, 'identification'))


GPU_ROBOTS = {'panda_arm': 'Panda arm (7 DOF, fingers fixed)', 'talos_fixed': 'TALOS (fixed)',
              'talos_floating': 'TALOS on a free flyer (nv = 38)'}


def gpu_registers_table(r: Results) -> str:
    """Registers per thread and bytes spilled of every generated kernel (ptxas -v, sm_90)."""
    d = r['gpu_registers']
    kernels = ('rnea', 'mass_matrix', 'forward_dynamics', 'kinematics', 'rnea_derivatives',
               'mass_matrix_derivative', 'minus_solve')
    rows = [[GPU_ROBOTS.get(robot, robot), fmt(e['lines'])]
            + [f"{k['registers']} / {fmt(k['spill_stores'])} / {fmt(k['compile_s'], 0)}"
               if k else '–' for k in (e.get(x) for x in kernels)]
            for robot, e in d['robots'].items()]
    meta = d['meta']
    parts = [table(['robot', 'generated lines']
                   + [f'`{x}`: registers / bytes spilled / compile [s]' for x in kernels], rows)]
    # the kernels in contact (a run before they were compiled has no 'contacts')
    contact_kernels = ('task_inertia', 'contact_rows', 'contact_solve', 'contact_inverse',
                       'contact_derivatives')
    rows = [[GPU_ROBOTS.get(robot, robot),
             ', '.join(f'{link} ({dim}-D)' for link, dim in zip(c['links'], c['dims']))
             + f" (m = {c['m']})", f"{fmt(c['lines'])} / {fmt(c['derivative_lines'])}"]
            + [f"{k['registers']} / {fmt(k['spill_stores'])} / {fmt(k['stack'])} / "
               f"{fmt(k['compile_s'], 0)}" if k else '–'
               for k in (e.get(x) for x in contact_kernels)]
            for robot, e in d['robots'].items() if (c := e.get('contacts'))]
    if rows:
        parts.append(table(
            ['robot', 'contacts', 'generated lines (contacts / their derivatives)']
            + [f'`{x}`: registers / bytes spilled / stack / compile [s]'
               for x in contact_kernels], rows))
    return '\n\n'.join([
        *parts,
        f"ptxas -v for sm_{meta['sm'].replace('.', '')} ({meta['ptxas']}), PTX from numba-cuda "
        f"{meta['numba_cuda']}; no GPU needed.", source(r, 'gpu_registers')])


def gpu_variants_table(r: Results) -> str:
    """The Panda's GPU rates by threads per block and register cap; the kernel cache tried."""
    try:
        d = r['gpu_variants']
    except Missing:
        return ('*Not measured yet: `bench/bench_gpu.py --variants` writes '
                '`bench/results/gpu_variants.json` where a GPU is.*')
    methods = list(dict.fromkeys(row['method'] for row in d['rows']))
    shapes = list(dict.fromkeys((row['max_registers'], row['threads_per_block'])
                                for row in d['rows']))
    rate = {(row['method'], row['max_registers'], row['threads_per_block']):
            row['states_per_s'] for row in d['rows']}
    rows = [[str(registers or '–'), str(threads)]
            + [f"{rate[(m, registers, threads)] / 1e9:.2f} G" if (m, registers, threads) in rate
               else '–' for m in methods] for registers, threads in shapes]
    cache = d.get('cache', {}).get('processes', [])
    said = '; '.join(f"process {k + 1}: " + (f"{p['seconds']:.3g} s" if 'seconds' in p
                                             else 'failed')
                     for k, p in enumerate(cache))
    return '\n\n'.join([
        table(['max_registers', 'threads per block'] + [f'`{m}` into `out=`' for m in methods],
              rows),
        f"N = {d['N']:,}; GPU: {d['meta'].get('gpu')}, numba-cuda "
        f"{d['meta'].get('numba_cuda')}. numba-cuda's `cache=True` on the Newton-Euler "
        f"kernel, its compile time in two processes: {said or 'not tried'}.",
        source(r, 'gpu_variants')])


GPU_NAMES = {**GPU_ROBOTS, 'panda_arm_fp32': 'Panda arm, float32',
             'panda_arm_derivatives': 'Panda arm, derivatives',
             'talos_floating_derivatives': 'TALOS on a free flyer, derivatives',
             'panda_arm_contacts': 'Panda arm, its hand held still',
             'talos_floating_contacts': 'TALOS on a free flyer, on its two soles'}
GPU_HEADER = ['robot', 'method', 'N', 'GPU states/s into `out=`', 'GPU states/s allocating',
              'memory-bound limit', 'CPU states/s', 'GPU / CPU', 'target', 'verdict',
              'agreement']


def gpu_rate(x: float) -> str:
    """Return states per second as G or M."""
    return f'{x / 1e9:.2f} G' if x >= 1e9 else f'{x / 1e6:.1f} M'


def gpu_rows(d: dict) -> list:
    """Return the rows of bench_gpu.py's results: each robot's methods, GPU against CPU."""
    rows = []
    for robot, e in d['robots'].items():
        for method, m in e['methods'].items():
            target = m.get('target_states_per_s')
            bound = m.get('memory_bound_states_per_s')
            into, allocating = m.get('gpu_states_per_s'), m['gpu_allocating_states_per_s']
            best = max(into or 0.0, allocating)
            rows.append([GPU_NAMES.get(robot, robot), f'`{method}`', f"{m['N']:,}",
                         '–' if into is None else gpu_rate(into), gpu_rate(allocating),
                         '–' if bound is None else gpu_rate(bound),
                         gpu_rate(m['cpu_states_per_s']),
                         f"{fmt(best / m['cpu_states_per_s'], 0)}x",
                         '–' if target is None else f'≥ {gpu_rate(target)}',
                         met(None if target is None else best >= target),
                         sig(m['agreement'], 2)])
    return rows


def gpu_machine(meta: dict, float32_rows: bool = True) -> str:
    """Return the line naming the GPU, the CPU batch's threads and the libraries of a run."""
    return (f"GPU: {meta.get('gpu')}, {meta.get('dtype')}"
            + (' (float32 where the row says so)' if float32_rows else '') + '; CPU '
            f"batch on {meta.get('cpu_threads')} threads of the same machine; numba "
            f"{meta.get('numba')}, numba-cuda {meta.get('numba_cuda')}, NumPy "
            f"{meta.get('numpy')}. Memory-bound limit: the bandwidth of a device-to-device "
            f"copy ({(meta.get('device_copy_bytes_per_s') or 0) / 1e12:.2f} TB/s, bytes read "
            'plus written) over the bytes one state reads and writes. Agreement: the largest '
            'relative difference from the CPU batch'
            + (' (float32: from the fp64 CPU)' if float32_rows else '') + '. Into `out=`: '
            'results written to arrays the caller keeps; allocating: each call allocates its '
            'result, as a call without `out=` does')


def gpu_table(r: Results) -> str:
    """The generated GPU kernels in states per second, against the CPU batch, same machine."""
    try:
        d = r['gpu']
    except Missing:
        return ('*Not measured yet: no GPU has been lent to a session since the GPU path '
                'landed. `bench/bench_gpu.py` writes `bench/results/gpu.json` where one is '
                '(without one it says so and writes nothing); the correctness of the '
                "generated code is tested on every run of `make test`, on numba's CUDA "
                'simulator.*')
    compile_rows = [[GPU_NAMES.get(k, k), e['n'], fmt(e['generate_s']), fmt(e['compile_s'])]
                    for k, e in d['robots'].items()]
    meta = d['meta']
    return '\n\n'.join([
        table(GPU_HEADER, gpu_rows(d)),
        table(['robot', 'n', 'generate [s]', 'compile [s]'], compile_rows),
        gpu_machine(meta)
        + ('' if meta.get('out_argument', True) else
           ' (this run predates `out=`: the allocating call alone, which then allocated its '
           'row flags too)') + '.'
        + ('' if meta.get('complete', True) else ' A partial run: its time limit stopped it '
           'after the rows above.'),
        source(r, 'gpu')])


def gpu_solves_table(r: Results) -> str:
    """The solves along a tree and in contact on the GPU (bench_gpu.py --name gpu_solves)."""
    d = r['gpu_solves']
    first_rows = [[GPU_NAMES.get(k, k), f'`{method}`', ', '.join(e.get('contacts') or []) or '–',
                   fmt(m['first_call_s'])]
                  for k, e in d['robots'].items() for method, m in e['methods'].items()]
    meta = d['meta']
    return '\n\n'.join([
        table(GPU_HEADER, gpu_rows(d)),
        table(['robot', 'method', 'contacts', 'first call (compiles what it needs) [s]'],
              first_rows),
        gpu_machine(meta, float32_rows=False) + '; in contact, it counts q, v, τ, v\' and λ, '
        'not M, h and J_c, which the path keeps in device memory between its kernels.'
        + ('' if meta.get('complete', True) else ' A partial run: its time limit stopped it '
           'after the rows above.'),
        source(r, 'gpu_solves')])


def call_anatomy_table(r: Results) -> str:
    """Where a Panda dynamics call goes: facade, compiled entry point, unboxing, output."""
    d = r['kinematics']['robots']['panda']['anatomy']
    rows = []
    for op, parts in d.items():
        for part, e in parts.items():
            rows.append([f'`{op}`', part, fmt(e.get('kron_min_us')),
                         fmt(e.get('pin_min_us')), fmt(e.get('ratio_min'))])
    limits = []
    for op, parts in d.items():
        facade, entry = parts.get('facade', {}), parts.get('entry point', {})
        pin_us = facade.get('pin_min_us')
        if None in (facade.get('kron_min_us'), entry.get('kron_min_us'), pin_us):
            continue
        unbox = parts.get('unboxing (empty kernel)', {}).get('kron_min_us')
        arithmetic = ('' if unbox is None else
                      f" (the kernel's own arithmetic, the entry point less the unboxing of "
                      f"an empty kernel, {fmt(entry['kron_min_us'] - unbox)} µs: "
                      f"{fmt((entry['kron_min_us'] - unbox) / pin_us)}x Pinocchio's whole "
                      f"call, its Python binding included)")
        limits.append(f"`{op}` {fmt(facade['ratio_min'])}x: the compiled entry point alone "
                      f"is {fmt(entry['ratio_min'])}x Pinocchio's whole call{arithmetic}, the "
                      f"facade around it (input checks, dispatch, the output array) adds "
                      f"{fmt(facade['kron_min_us'] - entry['kron_min_us'])} µs")
    big = r['kinematics']['robots'].get('talos', {}).get('anatomy', {})
    at_scale = ', '.join(f"`{op}` {fmt(big[op]['facade']['ratio_min'])}x" for op in d
                         if big.get(op, {}).get('facade', {}).get('ratio_min') is not None)
    text = ('What limits the Panda ratios of M, G and RNEA (target 1.2x): '
            + '; '.join(limits) + '.' + (f' At 32 joints (Talos), where the arithmetic '
                                         f'outweighs the fixed per-call cost: {at_scale}.'
                                         if at_scale else '')) if limits else ''
    return table(['method', 'part timed', 'µs', 'Pinocchio whole call µs', 'ratio'],
                 rows) + '\n\n' + source(r, 'kinematics') + ('\n\n' + text if text else '')


def readme_block(r: Results) -> str:
    """The few headline figures the README shows, each linked to its full table."""
    d = r['dynamics']
    panda = d['models'][PANDA]
    rnea = panda['ratios']['inverse_dynamics']
    batch = panda['batch']['inverse_dynamics']['kron batch']['min_us']
    lat = r['ros_latency']
    warm = r['startup']['cases']['warm']['summary']['first_output_s']['median']
    perf = r.link('docs/performance.md')
    c = lat['config']
    load = c.get('background_load_processes') or 0
    rows = [
        [f"inverse dynamics, Franka Panda ({panda['n']} DOF), one call from Python",
         f"{fmt(_timing(panda, 'kron_dynamics', 'inverse_dynamics'))} µs (Pinocchio "
         f"`{rnea['baseline']}`: {fmt(_timing(panda, 'pinocchio', rnea['baseline']))} µs)",
         f'[single calls]({perf}#single-calls)'],
        [f"the same, a batch of {fmt(panda['batch']['N'])} configurations in one call",
         f'{fmt(batch, 3)} µs per configuration', f'[batches]({perf}#batches)'],
        [f"`dynamics_node`: joint state in to bias torque out, {fmt(c['rate_hz'], 0)} Hz, "
         f"median / p99 ({'SCHED_FIFO' if c['thread_priority'] else 'normal scheduling'}, "
         + (f'{load} busy processes)' if load else 'no other load)'),
         f"{fmt(lat['nodes']['dynamics']['latency_ms']['median'], 3)} / "
         f"{fmt(lat['nodes']['dynamics']['latency_ms']['p99'], 3)} ms",
         f'[ROS latency]({perf}#ros-latency)'],
        ['`dynamics_node` start-up to first output, compiled kernels cached, median',
         f'{fmt(warm)} s', f'[start-up]({perf}#start-up)'],
    ]
    kin = r['kinematics']['robots']['panda']['single']
    facade = {op: e['facade'] for op, e in r['kinematics']['robots']['panda']['anatomy'].items()}
    for op, what in (('link_pose', 'link pose (4 x 4)'),
                     ('jacobian (local_world_aligned)', '6 x n frame Jacobian'),
                     ('hessians (H_T, H_R)', 'Hessians (H_T, H_R)')):
        e = kin[op]
        rows.append([f'{what}, Panda, one call from Python',
                     f"{fmt(e['kron_min_us'])} µs (Pinocchio: {fmt(e['pin_min_us'])} µs, "
                     f"{fmt(e['ratio_min'])}x)", f'[kinematics]({perf}#kinematics)'])
    ops = ('mass_matrix', 'gravity_torque', 'inverse_dynamics')
    rows.append(['M / G / RNEA, Panda, ratio to Pinocchio in the same run (target 1.2x: '
                 f"{'met' if all(facade[op]['ratio_min'] <= 1.2 for op in ops) else 'not met'})",
                 ' / '.join(f"{fmt(facade[op]['ratio_min'])}x" for op in ops),
                 f'[what limits it]({perf}#kinematics)'])
    fl = r['one_model']['cases']['talos_floating']['single']
    rows.append(['floating base, TALOS (nv = 38): M / inverse dynamics, one call from Python',
                 f"{fmt(fl['mass_matrix']['kron_min_us'])} / "
                 f"{fmt(fl['inverse_dynamics']['kron_min_us'])} µs (Pinocchio: "
                 f"{fmt(fl['mass_matrix']['pin_min_us'])} / "
                 f"{fmt(fl['inverse_dynamics']['pin_min_us'])} µs)",
                 f'[one model]({perf}#one-model-for-every-robot)'])
    one = r['one_model']['cases']
    hand, contacts = one['panda_hand']['single'], one['solo12_contacts']['single']
    rows.append(['stock Panda with its mimic hand: M / RNEA / frame Jacobian, ratio to '
                 "Pinocchio's mimic model (target 1.5x)",
                 ' / '.join(f"{fmt(hand[op]['ratio_min'])}x" for op in
                            ('mass_matrix', 'inverse_dynamics', 'jacobian')),
                 f'[one model]({perf}#one-model-for-every-robot)'])
    c = contacts['constrained_forward_dynamics']
    rows.append(['constrained forward dynamics, solo12 on four feet (moving), one call',
                 f"{fmt(c['kron_min_us'], 1)} µs (Pinocchio `constraintDynamics`: "
                 f"{fmt(c['pin_min_us'], 1)} µs, {fmt(c['ratio_min'])}x)",
                 f'[one model]({perf}#one-model-for-every-robot)'])
    der = r['derivatives']['cases']
    arm, talos = der['panda_arm']['single'], der['talos_floating']['single']
    rows.append(['derivatives of inverse / forward dynamics, ratio to Pinocchio\'s '
                 '`computeRNEADerivatives` / `computeABADerivatives` (target 1.5x): Panda arm; '
                 'TALOS on a free flyer',
                 ' / '.join(f"{fmt(arm[op]['ratio_min'])}x" for op in arm) + '; '
                 + ' / '.join(f"{fmt(talos[op]['ratio_min'])}x" for op in talos),
                 f'[derivatives]({perf}#derivatives)'])
    s = r['loading']['summary']
    rows.append([f"loading a URDF, {s['robots_timed']} robots of example-robot-data, median "
                 f"ratio to Pinocchio's `buildModelFromUrdf`",
                 f"{fmt(s['median_ratio'])}x (5000-link chain: {fmt(s['chain_5000_s'])} s)",
                 f'[loading]({perf}#loading-a-urdf)'])
    stems = ('dynamics', 'kinematics', 'one_model', 'derivatives', 'loading',
             'ros_latency', 'startup')
    return '\n\n'.join([
        table(['what', 'measured', 'details'], rows),
        '*Sources: ' + '; '.join(f'`{stem}.json` {provenance(r[stem])}'
                                 for stem in stems) + '.*'])


# ------------------------------------------------------------------------------ pages
# the pages whose marked blocks are rendered here; their text around the blocks is edited by
# hand in the Markdown files
PAGES = ('docs/performance.md', 'docs/reliability.md', 'README.md')
TABLES = {make.__name__: make for make in (
    single_call_table, other_libraries_table, scaling_table, batch_table, mass_matrix_table,
    kinematics_agreement_table, kinematics_table, kinematics_batch_table, call_anatomy_table,
    one_model_table, derivatives_table, identification_table, gpu_table, gpu_variants_table,
    gpu_registers_table, gpu_solves_table,
    startup_table, loading_table, ros_latency_table, symbolic_table, symbolic_cost_table,
    soak_table, faults_table, agreement_table, readme_block)}
BLOCK = re.compile(r'(<!-- BEGIN generated: (\w+) -->\n)(.*?)(<!-- END generated: \2 -->)',
                   re.DOTALL)


def render_table(name: str, r: Results) -> str:
    """Return one marked block's content, or a line that says what is missing."""
    try:
        make = TABLES[name]
    except KeyError:
        raise ValueError(f'a page marks a block {name!r}, which bench/report.py does not '
                         f'render; the blocks are {sorted(TABLES)}') from None
    try:
        return make(r)
    except Missing as exc:
        return f'*{name}: {exc} is missing: run `make bench`.*'
    except KeyError as exc:     # e.g. a partial run (bench_dynamics --models)
        return f'*{name}: the results have no {exc}: run `make bench`.*'


def fill(text: str, r: Results) -> str:
    """Return a page with every marked block re-rendered from the results."""
    return BLOCK.sub(lambda m: m.group(1) + render_table(m.group(2), r) + '\n' + m.group(4),
                     text)


def render_all(results_dir: Path = RESULTS) -> dict:
    """Return {repository path: text} of every generated file, rendered from results_dir."""
    return {path: fill((REPO / path).read_text(encoding='utf-8'),
                       Results(results_dir, '../' * path.count('/')))
            for path in PAGES}


def stale(results_dir: Path = RESULTS) -> list:
    """Return the generated files whose committed text differs from what the JSON gives."""
    rendered = render_all(results_dir)
    return [path for path, text in rendered.items()
            if not (REPO / path).is_file()
            or (REPO / path).read_text(encoding='utf-8') != text]


def write_all(results_dir: Path = RESULTS) -> list:
    """Write every generated file that changed; return their paths."""
    changed = []
    for path, text in render_all(results_dir).items():
        target = REPO / path
        if not target.is_file() or target.read_text(encoding='utf-8') != text:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding='utf-8')
            changed.append(path)
    return changed


def main(argv=None) -> int:
    """Rewrite the generated files, or (--check) say which differ from the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--check', action='store_true',
                        help='change nothing; exit 1 if a generated file is not up to date')
    args = parser.parse_args(argv)
    if args.check:
        paths = stale()
        for path in paths:
            print(f'{path} differs from what bench/report.py renders from bench/results')
        return 1 if paths else 0
    changed = write_all()
    print('wrote ' + (', '.join(changed) if changed else 'nothing (up to date)'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
