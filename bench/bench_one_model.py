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
Benchmark: one RobotModel for every robot, each kind against Pinocchio in the same process.

Every call is timed alternately with its Pinocchio counterpart (bench/lib/timing.alternate);
ratio = min(kron) / min(Pinocchio). Agreement with Pinocchio (relative 1e-9, at five random
states) comes first. The cases, their targets and what each runs: docs/performance.md, "One
model for every robot". Writes bench/results/one_model.json::

    .venv/bin/python bench/bench_one_model.py            # full run (about two minutes)
    .venv/bin/python bench/bench_one_model.py --quick    # smoke test
"""

from pathlib import Path
import sys

from lib.compare import relerr
from lib.models import example_pair, finish, pinocchio_bench, random_state as state
from lib.timing import timed_pairs
import numpy as np

from kron_dynamics import Contact
from kron_dynamics.testing.pinocchio_pair import PinocchioPair, PROXIMAL, symmetric_from_upper

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / 'bench' / 'results'
CHECKS = 5          # random states of the agreement check


def dynamics_calls(pin, pair: PinocchioPair, q, v, dv, link) -> dict:
    """Return op -> (Pinocchio baseline, ours, theirs, their result as ours) at one state."""
    k, m, d = pair.m, pair.pm, pair.pd
    pq, pv, pa = pair.q(q), pair.v(v), pair.v(dv)
    fid = m.getFrameId(link) if link else None
    lwa = pin.LOCAL_WORLD_ALIGNED
    return {     # forward dynamics takes dv as the torques (P a permutation)
        'mass_matrix': ('crba', lambda: k.mass_matrix(q), lambda: pin.crba(m, d, pq),
                        lambda x: pair.matrix(symmetric_from_upper(x))),
        'inverse_dynamics': ('rnea', lambda: k.inverse_dynamics(q, v, dv),
                             lambda: pin.rnea(m, d, pq, pv, pa), pair.force),
        'gravity_torque': ('computeGeneralizedGravity', lambda: k.gravity_torque(q),
                           lambda: pin.computeGeneralizedGravity(m, d, pq), pair.force),
        'bias_torque': ('nonLinearEffects', lambda: k.bias_torque(q, v),
                        lambda: pin.nonLinearEffects(m, d, pq, pv), pair.force),
        'forward_dynamics': ('aba', lambda: k.forward_dynamics(q, v, dv),
                             lambda: pin.aba(m, d, pq, pv, pa), pair.tangent),
        'jacobian': ('computeFrameJacobian (LOCAL_WORLD_ALIGNED)', lambda: k.jacobian(q, link),
                     lambda: pin.computeFrameJacobian(m, d, pq, fid, lwa), pair.columns),
    }


def dynamics_rows(pin, pair: PinocchioPair, rng, link, ops, budget, repeat, log) -> dict:
    """Agreement at CHECKS random states, then the alternately timed calls named in ops."""
    agree = dict.fromkeys(ops, 0.0)
    for _ in range(CHECKS):
        calls = dynamics_calls(pin, pair, *state(pair.m, rng), link)
        for op in ops:
            _, ours, theirs, convert = calls[op]
            agree[op] = max(agree[op], relerr(ours(), convert(theirs())))
    single = timed_pairs({op: calls[op] for op in ops}, budget, repeat, log)
    return {'nv': pair.m.nv, 'agreement': agree, 'single': single}


def contact_rows(pin, pair: PinocchioPair, contacts, rng, budget, repeat, log) -> dict:
    """
    Constrained forward dynamics and its derivatives, the feet moving, against Pinocchio.

    The derivatives against constraintDynamics followed by computeConstraintDynamicsDerivatives
    (which reads what constraintDynamics leaves in its data): what one call of ours computes.
    """
    k, m, d = pair.m, pair.pm, pair.pd
    kinds, datas = pair.constraint_models(contacts)
    settings = pin.ProximalSettings(*PROXIMAL)
    agree = {'constrained_forward_dynamics': 0.0, 'contact forces': 0.0,
             'constrained_forward_dynamics_derivatives': 0.0}
    P = pair.P
    for _ in range(CHECKS):
        q, v, _ = state(k, rng)
        tau = rng.uniform(-1, 1, k.n)
        full = np.concatenate([np.zeros(k.nv - k.n), tau])
        pq, pv, pfull = pair.q(q), pair.v(v), pair.v(full)
        dv, lam = k.constrained_forward_dynamics(q, v, tau, contacts)
        pdv = pin.constraintDynamics(m, d, pq, pv, pfull, kinds, datas, settings)
        for key, err in (('constrained_forward_dynamics', relerr(dv, pair.tangent(pdv))),
                         ('contact forces', relerr(lam, d.lambda_c))):
            agree[key] = max(agree[key], err)
        pin.computeConstraintDynamicsDerivatives(m, d, kinds, datas)
        theirs = (P.T @ d.ddq_dq @ P, P.T @ d.ddq_dv @ P, P.T @ d.ddq_dtau @ P,
                  d.dlambda_dq @ P, d.dlambda_dv @ P, d.dlambda_dtau @ P)
        ours = k.constrained_forward_dynamics_derivatives(q, v, tau, contacts)
        agree['constrained_forward_dynamics_derivatives'] = max(
            agree['constrained_forward_dynamics_derivatives'],
            *(relerr(x, y) for x, y in zip(ours, theirs)))

    def derivatives():
        pin.constraintDynamics(m, d, pq, pv, pfull, kinds, datas, settings)
        pin.computeConstraintDynamicsDerivatives(m, d, kinds, datas)

    single = timed_pairs({
        'constrained_forward_dynamics': (
            'constraintDynamics', lambda: k.constrained_forward_dynamics(q, v, tau, contacts),
            lambda: pin.constraintDynamics(m, d, pq, pv, pfull, kinds, datas, settings)),
        'constrained_forward_dynamics_derivatives': (
            'constraintDynamics + computeConstraintDynamicsDerivatives',
            lambda: k.constrained_forward_dynamics_derivatives(q, v, tau, contacts),
            derivatives)},
        budget, repeat, log)
    return {'nv': k.nv, 'agreement': agree, 'single': single,
            'contacts': [[c.link, c.dim] for c in contacts]}


FEET = [Contact(f) for f in ('FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT')]
SOLES = [Contact('left_sole_link', dim=6), Contact('right_sole_link', dim=6)]
ALL = ('mass_matrix', 'inverse_dynamics', 'gravity_torque', 'bias_torque', 'forward_dynamics',
       'jacobian')
MRJ = ('mass_matrix', 'inverse_dynamics', 'jacobian')
# case -> (robot, base, mimic, link or contacts, ops, target ratio: one or per op)
CASES = {
    'panda_hand': ('panda', None, True, 'panda_hand', MRJ, 1.5),
    'talos_floating': ('talos', 'floating', False, 'left_sole_link', ALL,
                       {'mass_matrix': 1.3, 'inverse_dynamics': 1.3, 'jacobian': 2.0}),
    'solo12_floating': ('solo12', 'floating', False, 'FL_FOOT', ALL, None),
    'solo12_contacts': ('solo12', 'floating', False, FEET, (), 2.0),
    'talos_contacts': ('talos', 'floating', False, SOLES, (), 2.0),
    'panda_fixed': ('panda_fixed', None, False, 'panda_link7',
                    ('mass_matrix', 'gravity_torque', 'jacobian'), 1.3),
    'tiago_planar': ('tiago', 'planar', False, 'arm_7_link', ALL, None),
    'panda_hand_floating': ('panda', 'floating', True, 'panda_hand', MRJ, None),  # no aba
}


def main(argv=None) -> int:
    """Run the benchmark and write one_model.json."""
    setup = pinocchio_bench(__doc__, argv, RESULTS)
    if setup is None:
        return 1
    args, budget, repeat, log, pin, robots_dir, start = setup
    rng = np.random.default_rng(0)
    results, pairs = {}, {}
    for case, (robot, base, mimic, where, ops, target) in CASES.items():
        log(case)
        key = (robot, base, mimic)
        if key not in pairs:
            pairs[key] = example_pair(pin, robots_dir, robot, base, mimic)
        pair = pairs[key]
        if ops:
            results[case] = dynamics_rows(pin, pair, rng, where, ops, budget, repeat, log)
        else:
            results[case] = contact_rows(pin, pair, where, rng, budget, repeat, log)
        for op, row in results[case]['single'].items():
            row['target'] = target.get(op) if isinstance(target, dict) else target
    return finish(setup, 'one_model', {'cases': results},
                  {case: entry['agreement'] for case, entry in results.items()})


if __name__ == '__main__':
    sys.exit(main())
