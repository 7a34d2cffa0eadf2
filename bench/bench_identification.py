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
Benchmark: the joint torque regressor against Pinocchio, and the time of a fit (issue 22).

``regressor`` against ``computeJointTorqueRegressor`` on the 7-DOF Panda arm (fingers
fixed): agreement first (relative 1e-9), then single calls timed alternately
(bench/lib/timing.alternate; ratio = min(kron) / min(Pinocchio), target 1.5) and a batch of
N states in one call against a Python loop of Pinocchio's calls. Then ``identify`` on 20 s
recorded at 1 kHz (140000 torque equations; a sum of sines, viscous and Coulomb friction,
0.2 N m noise), wall time of the whole call for both methods and with q', q'' filtered from
q (target: the default fit under 10 s). Writes bench/results/identification.json::

    .venv/bin/python bench/bench_identification.py            # full run (about a minute)
    .venv/bin/python bench/bench_identification.py --quick    # smoke test
"""

from pathlib import Path
import sys
import time

from lib.compare import relerr
from lib.models import example_pair, finish, pinocchio_bench, random_batch, random_state as state
from lib.timing import batch_against_loop, timed_pairs
import numpy as np

from kron_dynamics.identification import identify
from kron_dynamics.testing.motion import sum_of_sines
from kron_dynamics.testing.pinocchio_pair import PinocchioPair

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / 'bench' / 'results'
TARGET = 1.5
FIT_TARGET_S = 10.0
BATCH = 1000


def regressor_rows(pin, pair: PinocchioPair, rng, budget, repeat, log) -> dict:
    """Agreement, an alternately timed single call and a batch against Pinocchio's loop."""
    k, m, d = pair.m, pair.pm, pair.pd
    q, v, a = state(k, rng)
    pq, pv, pa = pair.q(q), pair.v(v), pair.v(a)
    ours = k.regressor(q, v, a)
    theirs = pin.computeJointTorqueRegressor(m, d, pq, pv, pa)
    # bodies: ours in body_names order, Pinocchio's per joint in its order (mapped by name)
    columns = np.concatenate([10 * (m.getJointId(j) - 1) + np.arange(10)
                              for j in k.joint_names])
    agreement = relerr(ours, theirs[pair.iv][:, columns])
    single = timed_pairs({'regressor': (
        'computeJointTorqueRegressor', lambda: k.regressor(q, v, a),
        lambda: pin.computeJointTorqueRegressor(m, d, pq, pv, pa))}, budget, repeat, log,
        TARGET)['regressor']
    (Q, V, A), (PQ, PV, PA) = random_batch(pair, rng, BATCH)
    batch = batch_against_loop(lambda: k.regressor(Q, V, A),
                               lambda: [pin.computeJointTorqueRegressor(m, d, *x)
                                        for x in zip(PQ, PV, PA)], BATCH, budget, repeat)
    log(f"  regressor batch of {BATCH}: {batch['kron_us_per_state']:.2f} us per state, "
        f"Pinocchio loop {batch['pin_loop_us_per_state']:.2f}")
    return {'agreement': agreement, 'single': single, 'batch': batch}


def recording(model, seconds, rate, rng):
    """Return (t, q, qd, qdd, tau): five sines per joint about mid-range, friction, noise."""
    t, q, qd, qdd = sum_of_sines(model, seconds, rate, rng)
    tau = (model.inverse_dynamics(q, qd, qdd) + 0.4 * qd + 0.8 * np.sign(qd)
           + 0.2 * rng.standard_normal(q.shape))
    return t, q, qd, qdd, tau


def fit_rows(model, seconds, rate, rng, log) -> dict:
    """Wall time of identify on one recording: each method, and with filtering."""
    t, q, qd, qdd, tau = recording(model, seconds, rate, rng)
    P = model.dynamic_parameters()
    prior = model.with_dynamic_parameters(P * rng.uniform(0.6, 1.5, (len(P), 1)))
    rows = {'seconds': seconds, 'rate_hz': rate, 'equations': int(q.size)}
    for name, kwargs in (('least_squares', {'method': 'least_squares', 'qd': qd, 'qdd': qdd}),
                         ('physically_consistent', {'qd': qd, 'qdd': qdd}),
                         ('physically_consistent_filtered', {'t': t})):
        start = time.perf_counter()
        fit = identify(prior, q, tau, **kwargs)
        elapsed = time.perf_counter() - start
        rows[name] = {'wall_s': elapsed, 'residual_rms_max': float(fit.residual_rms.max()),
                      'target_s': FIT_TARGET_S}
        log(f'  identify {name}: {elapsed:.2f} s (residual RMS up to '
            f'{fit.residual_rms.max():.3g} N m)')
    return rows


def main(argv=None) -> int:
    """Run the benchmark and write identification.json."""
    setup = pinocchio_bench(__doc__, argv, RESULTS)
    if setup is None:
        return 1
    args, budget, repeat, log, pin, robots_dir, start = setup
    seconds = 2.0 if args.quick else 20.0
    rng = np.random.default_rng(0)
    pair = example_pair(pin, robots_dir, 'panda_fixed')
    log('panda_arm regressor')
    regressor = regressor_rows(pin, pair, rng, budget, repeat, log)
    log(f'panda_arm identify, {seconds:g} s at 1 kHz')
    fit = fit_rows(pair.m, seconds, 1000.0, rng, log)
    return finish(setup, 'identification',
                  {'cases': {'panda_arm': {'regressor': regressor, 'identify': fit}}},
                  {'panda_arm': {'regressor': regressor['agreement']}})


if __name__ == '__main__':
    sys.exit(main())
