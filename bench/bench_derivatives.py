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
Benchmark: derivatives of the dynamics against Pinocchio in the same process (issue 23).

``inverse_dynamics_derivatives`` against ``computeRNEADerivatives`` and
``forward_dynamics_derivatives`` against ``computeABADerivatives`` (targets 1.5x), on the
7-DOF Panda arm (fingers fixed) and TALOS on a free flyer; each call and its counterpart timed
alternately (bench/lib/timing.alternate), ratio = min(kron) / min(Pinocchio). Batches of
N states in one call against a Python loop of Pinocchio's calls. Agreement first (relative
1e-9). Writes bench/results/derivatives.json::

    .venv/bin/python bench/bench_derivatives.py            # full run (about a minute)
    .venv/bin/python bench/bench_derivatives.py --quick    # smoke test
"""

from pathlib import Path
import sys

from lib.compare import relerr
from lib.models import example_pair, finish, pinocchio_bench, random_batch, random_state as state
from lib.timing import batch_against_loop, timed_pairs
import numpy as np

from kron_dynamics.testing.pinocchio_pair import PinocchioPair

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / 'bench' / 'results'
TARGET = 1.5
BATCH = 1000
CASES = {'panda_arm': ('panda_fixed', None), 'talos_floating': ('talos', 'floating')}


def rows(pin, pair: PinocchioPair, rng, budget, repeat, log) -> dict:
    """Agreement, alternately timed single calls and a batch, of both derivatives."""
    k, m, d = pair.m, pair.pm, pair.pd
    q, v, a = state(k, rng)
    tau = k.inverse_dynamics(q, v, a)
    pq, pv, pa, ptau = pair.q(q), pair.v(v), pair.v(a), pair.v(tau)
    ours_id = k.inverse_dynamics_derivatives(q, v, a)
    theirs_id = pin.computeRNEADerivatives(m, d, pq, pv, pa)
    ours_fd = k.forward_dynamics_derivatives(q, v, tau)
    theirs_fd = pin.computeABADerivatives(m, d, pq, pv, ptau)
    agree = {
        'inverse_dynamics_derivatives': max(relerr(x, pair.matrix(y)) for x, y in zip(
            ours_id[:2], theirs_id[:2])),
        'forward_dynamics_derivatives': max(relerr(x, pair.matrix(y)) for x, y in zip(
            ours_fd, theirs_fd)),
    }
    single = timed_pairs({
        'inverse_dynamics_derivatives': (
            'computeRNEADerivatives', lambda: k.inverse_dynamics_derivatives(q, v, a),
            lambda: pin.computeRNEADerivatives(m, d, pq, pv, pa)),
        'forward_dynamics_derivatives': (
            'computeABADerivatives', lambda: k.forward_dynamics_derivatives(q, v, tau),
            lambda: pin.computeABADerivatives(m, d, pq, pv, ptau)),
    }, budget, repeat, log, TARGET)
    (Q, V, A), (PQ, PV, PA) = random_batch(pair, rng, BATCH)
    T = k.inverse_dynamics(Q, V, A)
    PT = [pair.v(x) for x in T]
    batch = {}
    for op, ours, theirs in (
            ('inverse_dynamics_derivatives', lambda: k.inverse_dynamics_derivatives(Q, V, A),
             lambda: [pin.computeRNEADerivatives(m, d, *x) for x in zip(PQ, PV, PA)]),
            ('forward_dynamics_derivatives', lambda: k.forward_dynamics_derivatives(Q, V, T),
             lambda: [pin.computeABADerivatives(m, d, *x) for x in zip(PQ, PV, PT)])):
        batch[op] = batch_against_loop(ours, theirs, BATCH, budget, repeat)
        log(f"  {op} batch of {BATCH}: {batch[op]['kron_us_per_state']:.2f} us per state, "
            f"Pinocchio loop {batch[op]['pin_loop_us_per_state']:.2f}")
    return {'agreement': agree, 'single': single, 'batch': batch}


def main(argv=None) -> int:
    """Run the benchmark and write derivatives.json."""
    setup = pinocchio_bench(__doc__, argv, RESULTS)
    if setup is None:
        return 1
    args, budget, repeat, log, pin, robots_dir, start = setup
    rng = np.random.default_rng(0)
    results = {}
    for case, (robot, base) in CASES.items():
        log(case)
        results[case] = rows(pin, example_pair(pin, robots_dir, robot, base), rng, budget,
                             repeat, log)
    return finish(setup, 'derivatives', {'cases': results},
                  {case: entry['agreement'] for case, entry in results.items()})


if __name__ == '__main__':
    sys.exit(main())
