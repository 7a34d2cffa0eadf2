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
Load-time benchmark: every URDF of example-robot-data, against Pinocchio, and a 5000-link chain.

For each URDF file, ``RobotModel.from_urdf_file`` (reading the file, parsing, checking,
building the tree; ``inertia_check='warn'`` so that the robots with non-physical inertias
load too) and Pinocchio's ``buildModelFromUrdf`` (reading and parsing with urdfdom, building
its model) are timed alternately in the same process, ``--repeats`` times each, in CPU time of
the process (both run in this thread: CPU time leaves out the time other processes of a shared
machine take, wall-clock time does not; both are recorded); the best (minimum) of each is
kept, as timeit recommends, and the ratio ours / Pinocchio per robot.
Reported: the median ratio over the robots both load and the worst one, and the time to
load a generated 5000-link chain (``MAX_LINKS`` links, 4999 revolute joints; Pinocchio's
time for the same file alongside, in a child process: Pinocchio 4.1 overflows its stack on
it and dies with SIGSEGV).

Targets (issue 12): median ratio within 3, the 5000-link chain under 2 s.

    .venv/bin/python bench/bench_loading.py            # writes bench/results/loading.json
"""

import argparse
import logging
from pathlib import Path
import statistics
import subprocess
import sys
import tempfile
import time

from lib.comparison_libs import example_robot_data, pinocchio, versions
from lib import provenance

from kron_dynamics import ModelError, RobotModel
from kron_dynamics.model.urdf import MAX_LINKS
from kron_dynamics.testing.random_urdf import chain_urdf

RESULTS = Path(__file__).resolve().parent / 'results'


def _timed(function) -> float:
    """Return the CPU time of one call (this process; the call runs in this thread)."""
    start = time.process_time()
    function()
    return time.process_time() - start


def _wall(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def _ours(path):
    return RobotModel.from_urdf_file(path, inertia_check='warn')


def bench_robots(pin, robots_dir: Path, repeats: int, log=print) -> list:
    """Return one row per URDF: ours and Pinocchio's best load times (None if refused)."""
    rows = []
    for path in sorted(robots_dir.rglob('*.urdf')):
        name = str(path.relative_to(robots_dir))
        row = {'urdf': name, 'ours_s': None, 'pinocchio_s': None}
        try:
            pin.buildModelFromUrdf(str(path))
            pin_ok = True
        except Exception as exc:    # noqa: B902 (Pinocchio raises plain ValueError/RuntimeError)
            row['pinocchio_refused'] = str(exc).splitlines()[0][:200]
            pin_ok = False
        try:
            _ours(path)
            ours_ok = True
        except ModelError as exc:
            row['ours_refused'] = str(exc)[:300]
            ours_ok = False
        ours, theirs, ours_wall, theirs_wall = [], [], [], []
        for _ in range(repeats if (pin_ok or ours_ok) else 0):
            if ours_ok:
                ours.append(_timed(lambda: _ours(path)))
                ours_wall.append(_wall(lambda: _ours(path)))
            if pin_ok:
                theirs.append(_timed(lambda: pin.buildModelFromUrdf(str(path))))
                theirs_wall.append(_wall(lambda: pin.buildModelFromUrdf(str(path))))
        if ours:
            row['ours_s'] = min(ours)
        if theirs:
            row['pinocchio_s'] = min(theirs)
        if ours and theirs:
            row['ratio'] = row['ours_s'] / row['pinocchio_s']
            row['wall_ours_s'], row['wall_pinocchio_s'] = min(ours_wall), min(theirs_wall)
            row['wall_ratio'] = row['wall_ours_s'] / row['wall_pinocchio_s']
        log(f"{name:62s} ours {_ms(row['ours_s'])}  Pinocchio {_ms(row['pinocchio_s'])}  "
            f"ratio {row.get('ratio', float('nan')):5.2f}")
        rows.append(row)
    return rows


def _ms(seconds) -> str:
    return '   refused' if seconds is None else f'{seconds * 1e3:7.2f} ms'


PIN_CHAIN = """
import sys, time
import pinocchio
start = time.perf_counter()
pinocchio.buildModelFromUrdf(sys.argv[1])
print(time.perf_counter() - start)
"""   # wall-clock, like ours for the chain (the 2 s target is a wall-clock one)


def _pinocchio_chain(path: Path) -> dict:
    """Time Pinocchio on the chain in a child process: it overflows its stack on 5000 links."""
    proc = subprocess.run([sys.executable, '-c', PIN_CHAIN, str(path)], capture_output=True,
                          text=True, timeout=600)
    if proc.returncode != 0:
        how = (f'killed by signal {-proc.returncode}' if proc.returncode < 0
               else f'exit {proc.returncode}')
        return {'pinocchio_s': None, 'pinocchio_failed': how}
    return {'pinocchio_s': float(proc.stdout.split()[-1])}


def bench_chain(repeats: int, log=print) -> dict:
    """Time loading a MAX_LINKS-link chain (ours, and Pinocchio's from the same file)."""
    xml = chain_urdf(MAX_LINKS)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / 'chain.urdf'
        path.write_text(xml)
        ours = [_wall(lambda: _ours(path)) for _ in range(repeats)]
        theirs = _pinocchio_chain(path)
    result = {'links': MAX_LINKS, 'joints': MAX_LINKS - 1, 'ours_s': statistics.median(ours),
              'ours_max_s': max(ours), **theirs}
    pin_text = (f"{theirs['pinocchio_s']:.3f} s" if theirs['pinocchio_s'] is not None
                else theirs['pinocchio_failed'])
    log(f"{MAX_LINKS}-link chain: ours {result['ours_s']:.3f} s (median of {repeats}, max "
        f"{max(ours):.3f} s); Pinocchio {pin_text}")
    return result


def main(argv=None) -> int:
    """Run the benchmark and write bench/results/loading.json."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--repeats', type=int, default=15, help='timings per robot and library')
    parser.add_argument('--chain-repeats', type=int, default=3)
    parser.add_argument('--output', type=Path, default=RESULTS / 'loading.json')
    args = parser.parse_args(argv)
    # the loader's warnings (tiny inertias, inertia_check='warn') are formatted and dropped
    logger = logging.getLogger('kron_dynamics')
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    pin, reason = pinocchio()
    erd, reason2 = example_robot_data()
    if pin is None or erd is None:
        print(f'cannot run: {reason or reason2}', file=sys.stderr)
        return 1
    rows = bench_robots(pin, Path(erd.robots_dir), args.repeats)
    ratios = [r['ratio'] for r in rows if 'ratio' in r]
    worst = max((r for r in rows if 'ratio' in r), key=lambda r: r['ratio'])
    chain = bench_chain(args.chain_repeats)
    summary = {
        'robots_timed': len(ratios),
        'median_ratio': statistics.median(ratios),
        'median_wall_ratio': statistics.median(r['wall_ratio'] for r in rows if 'ratio' in r),
        'worst_ratio': worst['ratio'], 'worst_robot': worst['urdf'],
        'median_ours_s': statistics.median(r['ours_s'] for r in rows if 'ratio' in r),
        'median_pinocchio_s': statistics.median(r['pinocchio_s'] for r in rows
                                                if 'ratio' in r),
        'chain_5000_s': chain['ours_s'],
        'targets': {'median_ratio': 3.0, 'chain_5000_s': 2.0},
    }
    summary['met'] = (summary['median_ratio'] <= 3.0 and chain['ours_s'] < 2.0)
    print(f"median ratio {summary['median_ratio']:.2f} over {len(ratios)} robots (worst "
          f"{worst['ratio']:.2f}, {worst['urdf']}); chain {chain['ours_s']:.3f} s; "
          f"targets met: {summary['met']}")
    provenance.write_result(args.output.parent, args.output.stem, {}, {
        'summary': summary, 'robots': rows, 'chain': chain, 'repeats': args.repeats,
        'versions': versions()})
    return 0


if __name__ == '__main__':
    sys.exit(main())
