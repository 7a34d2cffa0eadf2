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
Benchmark: generated straight-line closed forms vs the compiled kernels vs the readable code.

For the stacker (000), the rover arm (003) and, to see how the closed forms scale, a 6-DOF
arm with the UR5's published DH table and inertias: time per call of M, C*, G and tau with

- ``generated``: the module ``kron-dynamics equations URDF --format python`` writes
  (sympy closed forms, common subexpressions eliminated, plain Python + math),
- ``RobotModel``: the facade (numba CRBA / Newton-Euler / dM/dq kernels), including argument
  checks and joint-order permutation,
- ``kernel``: the numba kernels' native entry points called directly (no facade),
- ``readable``: the algorithms of ``kron_dynamics/algorithms`` (CRBA, eq. 95, 003's explicit
  JSIM, C* of eq. 101, recursive Newton-Euler).

Run ``.venv/bin/python bench/bench_symbolic.py``; it prints a Markdown table, writes
``bench/results/symbolic.json`` (stamped with the revision and the machine:
bench/lib/provenance.py) and re-renders docs/ (bench/report.py).
"""

import argparse
import math
from pathlib import Path
import sys
import time

import numpy as np
from lib import provenance
from lib.timing import per_call
import sympy

from kron_dynamics import RobotModel
from kron_dynamics.algorithms.coriolis_star import coriolis_star
from kron_dynamics.algorithms.crba import crba
from kron_dynamics.algorithms.jsim_explicit import jsim_explicit
from kron_dynamics.algorithms.mass_matrix_jacobian import mass_matrix_jacobian
from kron_dynamics.algorithms.rnea import rnea
from kron_dynamics.symbolic.codegen import load_module
from kron_dynamics.model.dh import DHRow
from kron_dynamics.kernels import GRAVITY, ID, native
from kron_dynamics.symbolic import SymbolicModel

ROOT = Path(__file__).resolve().parent.parent
MACHINES = ['stacker', 'rover_arm', 'ur5_like']
QUANTITIES = ['M', 'C*', 'G', 'tau']


def median_us(f) -> float:
    """Return the median time of one call of f in microseconds (5 runs of about 40 ms)."""
    return per_call(f, 0.2, 5)['median_us']


def ur5_like() -> RobotModel:
    """Return a 6-DOF arm with the published UR5 DH table and link inertias (for scaling)."""
    half = math.pi / 2
    rows = [DHRow('j1', d=0.089159, alpha=half, mass=3.7, com=(0, -0.02561, 0.00193),
                  inertia=(0.010267, 0.010267, 0.00666)),
            DHRow('j2', a=-0.425, mass=8.393, com=(0.2125, 0, 0.11336),
                  inertia=(0.22689, 0.22689, 0.0151074)),
            DHRow('j3', a=-0.39225, mass=2.275, com=(0.15, 0, 0.0265),
                  inertia=(0.049443, 0.049443, 0.004095)),
            DHRow('j4', d=0.10915, alpha=half, mass=1.219, com=(0, -0.0018, 0.01634),
                  inertia=(0.002, 0.002, 0.002)),
            DHRow('j5', d=0.09465, alpha=-half, mass=1.219, com=(0, 0.0018, 0.01634),
                  inertia=(0.002, 0.002, 0.002)),
            DHRow('j6', d=0.0823, mass=0.1879, com=(0, 0, -0.001159),
                  inertia=(0.000132, 0.000132, 0.000192))]
    return RobotModel.from_dh(rows, 'ur5_like')


def load(name: str) -> RobotModel:
    """Return the numeric model of a machine name."""
    if name == 'ur5_like':
        return ur5_like()
    return RobotModel.from_urdf_file(ROOT / 'urdf' / f'{name}.urdf')


def bench_machine(name: str) -> dict:
    """Time every variant for one machine; return the results and generation cost."""
    model = load(name)
    start = time.perf_counter()
    eom = SymbolicModel.from_model(model, max_seconds=300).equations()
    derive = time.perf_counter() - start
    start = time.perf_counter()
    source = eom.to_python()
    generate = time.perf_counter() - start
    gen = load_module(source, f'bench_{name}')
    rng = np.random.default_rng(0)
    n = model.n
    q, qd, qdd = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    tree, ints, reals, none = model.tree, model._ints, model._reals, np.zeros((0, 6))
    zeros = np.zeros(n)
    out_v, out_m, out_c = np.empty(n), np.empty((n, n)), np.empty((n, n * n))
    assert list(model._perm) == list(range(n))    # kernels and facade use the same order
    check = [(gen.mass_matrix(q), model.mass_matrix(q)),
             (gen.coriolis_star(q), model.coriolis_star(q)),
             (gen.gravity_torque(q), model.gravity_torque(q)),
             (gen.inverse_dynamics(q, qd, qdd), model.inverse_dynamics(q, qd, qdd))]
    for a, b in check:
        assert np.allclose(a, b, rtol=1e-9, atol=1e-9 * np.max(np.abs(b))), name
    variants = {
        'generated': {
            'M': lambda: gen.mass_matrix(q), 'C*': lambda: gen.coriolis_star(q),
            'G': lambda: gen.gravity_torque(q), 'tau': lambda: gen.inverse_dynamics(q, qd, qdd)},
        'RobotModel': {
            'M': lambda: model.mass_matrix(q), 'C*': lambda: model.coriolis_star(q),
            'G': lambda: model.gravity_torque(q),
            'tau': lambda: model.inverse_dynamics(q, qd, qdd)},
        'kernel': {
            'M': lambda: native.crba(ints, reals, q, out_m),
            'C*': lambda: native.coriolis_star(ints, reals, q, out_c),
            'G': lambda: native.rnea(ints, reals, q, q, q, GRAVITY, none, out_v),
            'tau': lambda: native.rnea(ints, reals, q, qd, qdd, ID, none, out_v)},
        'readable': {
            'M': lambda: crba(tree, q), 'M (eq. 95)': lambda: mass_matrix_jacobian(tree, q),
            'M (003 explicit)': lambda: jsim_explicit(tree, q),
            'C*': lambda: coriolis_star(tree, q), 'G': lambda: rnea(tree, q, zeros, zeros),
            'tau': lambda: rnea(tree, q, qd, qdd)},
    }
    times = {v: {k: median_us(f) for k, f in fs.items()} for v, fs in variants.items()}
    return {'n': n, 'derive_seconds': derive, 'codegen_seconds': generate,
            'operations': eom.operations, 'source_lines': source.count('\n'),
            'microseconds_per_call': times}


def main(argv=None) -> int:
    """Run the benchmark and write bench/results/symbolic.json (docs/performance.md)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--out', default=str(ROOT / 'bench' / 'results' / 'symbolic.json'))
    args = parser.parse_args(argv)
    results = {name: bench_machine(name) for name in MACHINES}
    for name, r in results.items():
        print(f"{name}: closed forms derived in {r['derive_seconds']:.2f} s, Python generated "
              f"in {r['codegen_seconds']:.2f} s ({r['operations']} operations, "
              f"{r['source_lines']} lines)")
    out = Path(args.out)
    provenance.write_result(out.parent, out.stem, {
        'numpy': np.__version__, 'sympy': sympy.__version__,
        'unit': 'microseconds per call, median of 5 repeats'}, {'results': results})
    return 0


if __name__ == '__main__':
    sys.exit(main())
