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

The targets of the one-model issue, every call timed alternately with its Pinocchio
counterpart (bench/lib/timing.alternate), ratio = min(kron) / min(Pinocchio):

- the stock Panda with its hand (example-robot-data ``panda.urdf``, a mimic finger) against
  ``buildModelFromUrdf(path, mimic=True)``: M, RNEA, the LOCAL_WORLD_ALIGNED frame Jacobian
  of ``panda_hand`` (target 1.5x);
- TALOS (``talos_reduced``) on a free flyer: M, RNEA (1.3x), the frame Jacobian of
  ``left_sole_link`` (2x);
- constrained forward dynamics against ``constraintDynamics``: solo12 on four point feet,
  TALOS on two 6-D soles, the feet moving (2x);
- the fixed 7-DOF Panda (fingers fixed, lib.models.panda_urdf): M, G and the frame
  Jacobian of ``panda_link7`` (1.3x);
- without a target, the moving bases whose coordinates the kernels lift and project (the
  ``moving_*`` entry points): TIAGo on a planar base and the Panda with its hand on a free
  flyer (against ``mimic=True``, which has no ``aba``): M, RNEA, forward dynamics (TIAGo),
  the frame Jacobian.

Agreement with Pinocchio is checked first (relative 1e-9). Writes bench/results/one_model.json::

    .venv/bin/python bench/bench_one_model.py            # full run (about a minute)
    .venv/bin/python bench/bench_one_model.py --quick    # smoke test
"""

from pathlib import Path
import sys

from lib.compare import relerr
from lib.models import (finish, panda_urdf, PANDA, pinocchio_bench, random_state as state,
                        SOLO, TALOS, TIAGO)
from lib.timing import alternate
import numpy as np

from kron_dynamics import Contact, RobotModel
from kron_dynamics.testing.pinocchio_pair import PinocchioPair, PROXIMAL, symmetric_from_upper

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / 'bench' / 'results'


def dynamics_rows(pin, pair: PinocchioPair, rng, link, ops, budget, repeat, log) -> dict:
    """Agreement, then the alternately timed calls named in ops."""
    k, m, d = pair.m, pair.pm, pair.pd
    fid = m.getFrameId(link)
    q, v, dv = state(k, rng)
    pq, pv, pa = pair.q(q), pair.v(v), pair.v(dv)
    agree = {
        'mass_matrix': relerr(k.mass_matrix(q),
                              pair.matrix(symmetric_from_upper(pin.crba(m, d, pq)))),
        'inverse_dynamics': relerr(k.inverse_dynamics(q, v, dv),
                                   pair.force(pin.rnea(m, d, pq, pv, pa))),
        'gravity_torque': relerr(k.gravity_torque(q),
                                 pair.force(pin.computeGeneralizedGravity(m, d, pq))),
        'jacobian': relerr(k.jacobian(q, link), pair.columns(pin.computeFrameJacobian(
            m, d, pq, fid, pin.LOCAL_WORLD_ALIGNED))),
    }
    if 'forward_dynamics' in ops:
        agree['forward_dynamics'] = relerr(k.forward_dynamics(q, v, dv), pair.tangent(
            pin.aba(m, d, pq, pv, pa)))     # dv as the torques (P a permutation)
    calls = {
        'forward_dynamics': ('aba', lambda: k.forward_dynamics(q, v, dv),
                             lambda: pin.aba(m, d, pq, pv, pa)),
        'mass_matrix': ('crba', lambda: k.mass_matrix(q), lambda: pin.crba(m, d, pq)),
        'inverse_dynamics': ('rnea', lambda: k.inverse_dynamics(q, v, dv),
                             lambda: pin.rnea(m, d, pq, pv, pa)),
        'gravity_torque': ('computeGeneralizedGravity', lambda: k.gravity_torque(q),
                           lambda: pin.computeGeneralizedGravity(m, d, pq)),
        'jacobian': ('computeFrameJacobian (LOCAL_WORLD_ALIGNED)', lambda: k.jacobian(q, link),
                     lambda: pin.computeFrameJacobian(m, d, pq, fid, pin.LOCAL_WORLD_ALIGNED)),
    }
    single = {}
    for op in ops:
        baseline, ours, theirs = calls[op]
        single[op] = {'pinocchio': baseline, **alternate(ours, theirs, budget, repeat)}
        log(f"  {op}: {single[op]['kron_min_us']:.2f} us, {baseline} "
            f"{single[op]['pin_min_us']:.2f} us, ratio {single[op]['ratio_min']:.2f}")
    return {'agreement': {op: agree[op] for op in ops}, 'single': single}


def contact_rows(pin, pair: PinocchioPair, contacts, rng, budget, repeat, log) -> dict:
    """Constrained forward dynamics with the feet moving, against constraintDynamics."""
    k, m, d = pair.m, pair.pm, pair.pd
    kinds, datas = pair.constraint_models(contacts)
    settings = pin.ProximalSettings(*PROXIMAL)
    q, v, _ = state(k, rng)
    tau = rng.uniform(-1, 1, k.n)
    full = np.concatenate([np.zeros(k.nv - k.n), tau])
    pq, pv, pfull = pair.q(q), pair.v(v), pair.v(full)
    dv, lam = k.constrained_forward_dynamics(q, v, tau, contacts)
    pdv = pin.constraintDynamics(m, d, pq, pv, pfull, kinds, datas, settings)
    agree = {'constrained_forward_dynamics': relerr(dv, pair.tangent(pdv)),
             'contact forces': relerr(lam, d.lambda_c)}
    entry = {'pinocchio': 'constraintDynamics', **alternate(
        lambda: k.constrained_forward_dynamics(q, v, tau, contacts),
        lambda: pin.constraintDynamics(m, d, pq, pv, pfull, kinds, datas, settings),
        budget, repeat)}
    log(f"  constrained_forward_dynamics: {entry['kron_min_us']:.1f} us, constraintDynamics "
        f"{entry['pin_min_us']:.1f} us, ratio {entry['ratio_min']:.2f}")
    return {'agreement': agree, 'single': {'constrained_forward_dynamics': entry},
            'contacts': [[c.link, c.dim] for c in contacts]}


# case -> (description, target ratio)
CASES = {
    'panda_hand': ('stock Panda with its hand (mimic finger) against the mimic model', 1.5),
    'talos_floating': ('TALOS on a free flyer (nv = 38)', None),
    'solo12_contacts': ('solo12 on four point feet, feet moving', 2.0),
    'talos_contacts': ('TALOS on two 6-D soles, feet moving', 2.0),
    'panda_fixed': ('fixed 7-DOF Panda (fingers fixed)', 1.3),
    'tiago_planar': ('TIAGo on a planar base (nv = 51)', None),
    'panda_hand_floating': ('Panda with its hand on a free flyer', None),
}
TALOS_TARGETS = {'mass_matrix': 1.3, 'inverse_dynamics': 1.3, 'jacobian': 2.0}


def main(argv=None) -> int:
    """Run the benchmark and write one_model.json."""
    setup = pinocchio_bench(__doc__, argv, RESULTS)
    if setup is None:
        return 1
    args, budget, repeat, log, pin, robots_dir, start = setup
    robots = Path(robots_dir)
    rng = np.random.default_rng(0)
    results = {}
    log('panda_hand')
    pair = PinocchioPair(RobotModel.from_urdf_file(robots / PANDA),
                         pin.buildModelFromUrdf(str(robots / PANDA), mimic=True))
    results['panda_hand'] = dynamics_rows(pin, pair, rng, 'panda_hand',
                                          ('mass_matrix', 'inverse_dynamics', 'jacobian'),
                                          budget, repeat, log)
    log('talos_floating')
    talos = PinocchioPair(RobotModel.from_urdf_file(robots / TALOS, root_joint='floating'),
                          pin.buildModelFromUrdf(str(robots / TALOS), pin.JointModelFreeFlyer()))
    results['talos_floating'] = dynamics_rows(pin, talos, rng, 'left_sole_link',
                                              ('mass_matrix', 'inverse_dynamics', 'jacobian'),
                                              budget, repeat, log)
    log('solo12_contacts')
    solo = PinocchioPair(RobotModel.from_urdf_file(robots / SOLO, root_joint='floating'),
                         pin.buildModelFromUrdf(str(robots / SOLO), pin.JointModelFreeFlyer()))
    results['solo12_contacts'] = contact_rows(
        pin, solo, [Contact(f) for f in ('FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT')], rng,
        budget, repeat, log)
    log('talos_contacts')
    results['talos_contacts'] = contact_rows(
        pin, talos, [Contact('left_sole_link', dim=6), Contact('right_sole_link', dim=6)],
        rng, budget, repeat, log)
    log('panda_fixed')
    xml = panda_urdf(robots / PANDA)
    fixed = PinocchioPair(RobotModel.from_urdf_string(xml), pin.buildModelFromXML(xml))
    results['panda_fixed'] = dynamics_rows(pin, fixed, rng, 'panda_link7',
                                           ('mass_matrix', 'gravity_torque', 'jacobian'),
                                           budget, repeat, log)
    log('tiago_planar')
    pair = PinocchioPair(RobotModel.from_urdf_file(robots / TIAGO, root_joint='planar'),
                         pin.buildModelFromUrdf(str(robots / TIAGO), pin.JointModelPlanar()))
    results['tiago_planar'] = dynamics_rows(
        pin, pair, rng, 'arm_7_link',
        ('mass_matrix', 'inverse_dynamics', 'forward_dynamics', 'jacobian'), budget, repeat,
        log)
    log('panda_hand_floating')
    pair = PinocchioPair(RobotModel.from_urdf_file(robots / PANDA, root_joint='floating'),
                         pin.buildModelFromUrdf(str(robots / PANDA), pin.JointModelFreeFlyer(),
                                                mimic=True))
    results['panda_hand_floating'] = dynamics_rows(      # the mimic model has no aba
        pin, pair, rng, 'panda_hand', ('mass_matrix', 'inverse_dynamics', 'jacobian'), budget,
        repeat, log)
    for case, entry in results.items():
        target = CASES[case][1]
        for op, row in entry['single'].items():
            row['target'] = TALOS_TARGETS[op] if case == 'talos_floating' else target
    return finish(setup, 'one_model', {'cases': results},
                  {case: entry['agreement'] for case, entry in results.items()})


if __name__ == '__main__':
    sys.exit(main())
