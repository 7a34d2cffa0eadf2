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
Benchmark: the dynamics of floating-base robots against Pinocchio's JointModelFreeFlyer.

example-robot-data's solo12 (12 joints, nv = 18) and TALOS (talos_reduced, 32 joints,
nv = 38), the same URDF file for both libraries. Agreement first (M, RNEA, G, the bias,
forward dynamics, constrained forward dynamics with the feet in contact, relative to the
largest entry), then single calls from Python, each kron_dynamics call and its Pinocchio
counterpart timed alternately (bench/lib/timing.alternate); ratio = min(kron) / min(Pinocchio).
The floating model runs the compiled fixed-base kernels on the tree behind a chain of six
massless joints (README, Floating and planar bases); the rest of a call is Python.

Writes bench/results/floating.json::

    .venv/bin/python bench/bench_floating.py            # full run (about a minute)
    .venv/bin/python bench/bench_floating.py --quick    # smoke test
"""

from pathlib import Path
import sys

from lib.compare import relerr
from lib.models import finish, pinocchio_bench
from lib.timing import alternate
import numpy as np

from kron_dynamics import Contact, RobotModel
from kron_dynamics.testing.pinocchio_pair import PinocchioPair, PROXIMAL, symmetric_from_upper

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / 'bench' / 'results'
# robot -> (file under example-robot-data's robots/, contacts of the constrained dynamics)
ROBOTS = {
    'solo12': ('solo_description/robots/solo12.urdf',
               [Contact(f) for f in ('FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT')]),
    'talos': ('talos_data/robots/talos_reduced.urdf',
              [Contact('left_sole_link', dim=6), Contact('right_sole_link', dim=6)]),
}


def state(pair: PinocchioPair, rng):
    k = pair.m
    quat = rng.normal(size=4)
    q = np.concatenate([rng.normal(size=3), quat / np.linalg.norm(quat),
                        rng.uniform(-0.5, 0.5, k.n)])
    return q, rng.uniform(-1, 1, k.nv), rng.uniform(-1, 1, k.nv), rng.uniform(-1, 1, k.n)


def run(pin, pair: PinocchioPair, contacts, rng, budget, repeat, log) -> dict:
    """Agreement at random states, then the alternately timed calls."""
    k, m, d = pair.m, pair.pm, pair.pd
    kinds, datas = pair.constraint_models(contacts)
    settings = pin.ProximalSettings(*PROXIMAL)
    agree = {}

    def note(key, ours, theirs):
        agree[key] = max(agree.get(key, 0.0), relerr(ours, theirs))

    for _ in range(5):
        q, v, dv, tau = state(pair, rng)
        pq, pv, pa = pair.q(q), pair.v(v), pair.v(dv)
        M = pin.crba(m, d, pq)
        note('mass_matrix', k.mass_matrix(q), pair.matrix(symmetric_from_upper(M)))
        note('inverse_dynamics', k.inverse_dynamics(q, v, dv),
             pair.force(pin.rnea(m, d, pq, pv, pa)))
        note('gravity_torque', k.gravity_torque(q),
             pair.force(pin.computeGeneralizedGravity(m, d, pq)))
        note('bias_torque', k.bias_torque(q, v), pair.force(pin.nonLinearEffects(m, d, pq, pv)))
        full = np.concatenate([np.zeros(6), tau])
        note('forward_dynamics', k.forward_dynamics(q, v, full),
             pair.tangent(pin.aba(m, d, pq, pv, pair.v(full))))
        J = k.contact_jacobian(q, contacts)
        v = v - np.linalg.pinv(J) @ (J @ v)
        pv = pair.v(v)
        dvc, lam = k.constrained_forward_dynamics(q, v, tau, contacts)
        note('constrained_forward_dynamics', dvc, pair.tangent(pin.constraintDynamics(
            m, d, pq, pv, pair.v(full), kinds, datas, settings)))
        note('contact forces', lam, d.lambda_c)
    q, v, dv, tau = state(pair, rng)
    pq, pv, pa = pair.q(q), pair.v(v), pair.v(dv)
    full = np.concatenate([np.zeros(6), tau])
    pfull = pair.v(full)
    calls = {
        'mass_matrix': ('crba', lambda: k.mass_matrix(q), lambda: pin.crba(m, d, pq)),
        'inverse_dynamics': ('rnea', lambda: k.inverse_dynamics(q, v, dv),
                             lambda: pin.rnea(m, d, pq, pv, pa)),
        'gravity_torque': ('computeGeneralizedGravity', lambda: k.gravity_torque(q),
                           lambda: pin.computeGeneralizedGravity(m, d, pq)),
        'bias_torque': ('nonLinearEffects', lambda: k.bias_torque(q, v),
                        lambda: pin.nonLinearEffects(m, d, pq, pv)),
        'forward_dynamics': ('aba', lambda: k.forward_dynamics(q, v, full),
                             lambda: pin.aba(m, d, pq, pv, pfull)),
        'constrained_forward_dynamics': (
            'constraintDynamics', lambda: k.constrained_forward_dynamics(q, v, tau, contacts),
            lambda: pin.constraintDynamics(m, d, pq, pv, pfull, kinds, datas, settings)),
    }
    single = {}
    for op, (baseline, ours, theirs) in calls.items():
        single[op] = {'pinocchio': baseline, **alternate(ours, theirs, budget, repeat)}
        log(f"  {op}: {single[op]['kron_min_us']:.1f} us, {baseline} "
            f"{single[op]['pin_min_us']:.1f} us, ratio {single[op]['ratio_min']:.2f}")
    return {'n': k.n, 'nv': k.nv, 'contacts': [[c.link, c.dim] for c in contacts],
            'agreement': agree, 'single': single}


def main(argv=None) -> int:
    """Run the benchmark and write floating.json."""
    setup = pinocchio_bench(__doc__, argv, RESULTS)
    if setup is None:
        return 1
    args, budget, repeat, log, pin, robots_dir, start = setup
    rng = np.random.default_rng(0)
    results = {}
    for name, (relative, contacts) in ROBOTS.items():
        path = Path(robots_dir) / relative
        pair = PinocchioPair(RobotModel.from_urdf_file(path, root_joint='floating'),
                             pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()))
        log(f'{name}: nv = {pair.m.nv}')
        results[name] = run(pin, pair, contacts, rng, budget, repeat, log)
    return finish(setup, 'floating', {'robots': results},
                  {name: entry['agreement'] for name, entry in results.items()})


if __name__ == '__main__':
    sys.exit(main())
