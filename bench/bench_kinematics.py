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
Benchmark: the kinematics (and the single-call dynamics) of kron_dynamics against Pinocchio.

Robots of example-robot-data, the same URDF text for both libraries: the 7-DOF Franka Panda
(fingers fixed, lib.models.panda_urdf) and the 32-DOF Talos humanoid (talos_reduced.urdf,
fixed base at the pelvis, its gripper ``<mimic>`` tags removed so that both libraries see 32
independent joints; geometry, damping, transmissions and gazebo tags dropped:
lib.models.stripped_urdf).

1. Agreement first: poses, 6 x n frame Jacobians in the three frames, their time
   variation, classical accelerations, kinematic Hessians, the centre of mass and its
   Jacobian, M, G and RNEA, at random configurations (relative to the largest entry).
2. Single calls from Python, each kron_dynamics call and its Pinocchio counterpart timed
   alternately (repeat by repeat, the order swapped every time) so that load on the shared
   machine hits both alike; ratio = min(kron) / min(Pinocchio), with the median of the
   per-repeat ratios next to it. Targets (issue 13): Jacobians, the frame Jacobian and
   link_pose at most 2x Pinocchio, Hessians at most 2x computeJointKinematicHessians.
3. Anatomy of the M, G and RNEA calls (target 1.2x on the Panda): the facade, the compiled
   entry point alone, the argument unboxing alone (an empty kernel with the same signature)
   and the output array, each timed alternately with the Pinocchio call.
4. Batches of N configurations in one call against Pinocchio's parallel API
   (rneaInParallel, abaInParallel with a ModelPool, all cores) where it has one, and against
   a Python loop of single calls where it has none (Jacobians): target >= 2x faster per
   configuration.

Writes bench/results/kinematics.json (docs/performance.md#kinematics renders it)::

    .venv/bin/python bench/bench_kinematics.py            # full run (about 5 minutes)
    .venv/bin/python bench/bench_kinematics.py --quick    # smoke test
"""

from pathlib import Path
import sys

from lib.compare import relerr
from lib.models import finish, panda_source, panda_urdf, pinocchio_bench, stripped_urdf, TALOS
from lib.timing import alternate, timed_pairs
import numpy as np

from kron_dynamics import RobotModel
from kron_dynamics.testing.pinocchio_pair import PinocchioPair, symmetric_from_upper

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / 'bench' / 'results'
# (robot, end-effector link) of the benchmark
ROBOTS = {'panda': 'panda_link7', 'talos': 'arm_left_7_link'}
# kron op -> target ratio kron / Pinocchio (None: reported only)
TARGETS = {
    'jacobian (local_world_aligned)': 2.0, 'jacobian (local)': 2.0, 'jacobian (world)': 2.0,
    'jacobians (J_T, J_R)': 2.0,
    'link_pose': 2.0, 'hessian': 2.0, 'hessians (H_T, H_R)': 2.0,
}


class Pair(PinocchioPair):
    """The shared adapter on one URDF (ours ``m``, Pinocchio's ``pm``), with a link's frame."""

    def __init__(self, pin, name: str, xml: str, link: str):
        super().__init__(RobotModel.from_urdf_string(xml, source=name), pin.buildModelFromXML(xml))
        self.name, self.link, self.n = name, link, self.m.n
        if self.pm.nq != self.pm.nv or self.iv is None:
            raise RuntimeError(f'{name}: Pinocchio nq {self.pm.nq}, nv {self.pm.nv}, '
                               f'kron n {self.n}')
        self.fid = self.pm.getFrameId(link)
        self.jid = self.pm.frames[self.fid].parentJoint


def hessian_tensor(pin, pair, q, rf):
    """Pinocchio's kinematic Hessian T[:, s, k] = dJ_s/dq_k in kron order (see tests)."""
    pin.computeJointKinematicHessians(pair.pm, pair.pd, q)
    H = np.asarray(pin.getJointKinematicHessian(pair.pm, pair.pd, pair.jid, rf))
    T = H.reshape(-1).reshape(H.shape, order='F')
    return T[:, pair.iv][:, :, pair.iv]


def agreement(pin, pair: Pair, rng, checks: int) -> dict:
    """Return the worst relative difference of each quantity over random configurations."""
    m, d, k, link = pair.pm, pair.pd, pair.m, pair.link
    worst = {}

    def note(key, a, b):
        worst[key] = max(worst.get(key, 0.0), relerr(a, b, floor=0.0))
    rfs = {'world': pin.WORLD, 'local': pin.LOCAL, 'local_world_aligned': pin.LOCAL_WORLD_ALIGNED}
    for _ in range(checks):
        q, qd, qdd = rng.uniform(-1, 1, (3, pair.n))
        pq, pv, pa = pair.v(q), pair.v(qd), pair.v(qdd)
        pin.forwardKinematics(m, d, pq, pv, pa)
        pin.updateFramePlacements(m, d)
        pin.computeJointJacobians(m, d, pq)
        pin.computeJointJacobiansTimeVariation(m, d, pq, pv)
        note('link_pose', k.link_pose(q, link), d.oMf[pair.fid].homogeneous)
        poses = k.link_poses(q)
        note('link_poses', poses, np.stack([d.oMf[m.getFrameId(name)].homogeneous
                                            for name in k.link_names]))
        for name, rf in rfs.items():
            note(f'jacobian ({name})', k.jacobian(q, link, None, name),
                 pair.columns(pin.getFrameJacobian(m, d, pair.fid, rf)))
            note(f'jacobian_derivative ({name})', k.jacobian_derivative(q, qd, link, None, name),
                 pair.columns(pin.getFrameJacobianTimeVariation(m, d, pair.fid, rf)))
        note('acceleration', k.acceleration(q, qd, qdd, link),
             pin.getFrameClassicalAcceleration(m, d, pair.fid, pin.LOCAL_WORLD_ALIGNED).vector)
        joint_link = k.joints[m.names[pair.jid]].child_link
        note('hessian (joint frame)', k.hessian(q, joint_link).reshape(6, pair.n, pair.n),
             hessian_tensor(pin, pair, pq, pin.LOCAL_WORLD_ALIGNED))
        note('center_of_mass', k.center_of_mass(q), pin.centerOfMass(m, d, pq))
        note('center_of_mass_jacobian', k.center_of_mass_jacobian(q),
             pair.columns(pin.jacobianCenterOfMass(m, d, pq)))
        M = symmetric_from_upper(np.array(pin.crba(m, d, pq)))
        note('mass_matrix', k.mass_matrix(q), M[np.ix_(pair.iv, pair.iv)])
        note('gravity_torque', k.gravity_torque(q),
             pin.computeGeneralizedGravity(m, d, pq)[pair.iv])
        note('inverse_dynamics', k.inverse_dynamics(q, qd, qdd),
             pin.rnea(m, d, pq, pv, pa)[pair.iv])
    return worst


def single_calls(pin, pair: Pair, rng, budget, repeat, log) -> dict:
    """Alternate-timed pairs: kron method vs its Pinocchio counterpart."""
    m, d, k, link = pair.pm, pair.pd, pair.m, pair.link
    q, qd, qdd = rng.uniform(-1, 1, (3, pair.n))
    pq, pv, pa = pair.v(q), pair.v(qd), pair.v(qdd)
    fid, jid = pair.fid, pair.jid
    LWA, LOCAL = pin.LOCAL_WORLD_ALIGNED, pin.LOCAL
    joint_link = k.joints[m.names[jid]].child_link

    def pose():
        pin.forwardKinematics(m, d, pq)
        return pin.updateFramePlacement(m, d, fid)

    def hessian():
        pin.computeJointKinematicHessians(m, d, pq)
        return pin.getJointKinematicHessian(m, d, jid, LWA)

    def jdot():
        pin.computeJointJacobiansTimeVariation(m, d, pq, pv)
        return pin.getFrameJacobianTimeVariation(m, d, fid, LWA)

    def classical():
        pin.forwardKinematics(m, d, pq, pv, pa)
        return pin.getFrameClassicalAcceleration(m, d, fid, LWA)

    pairs = {
        'link_pose': ('forwardKinematics + updateFramePlacement',
                      lambda: k.link_pose(q, link), pose),
        'link_pose vs framesForwardKinematics': (
            'framesForwardKinematics (all frames)', lambda: k.link_pose(q, link),
            lambda: pin.framesForwardKinematics(m, d, pq)),
        'link_poses (all links)': ('framesForwardKinematics', lambda: k.link_poses(q),
                                   lambda: pin.framesForwardKinematics(m, d, pq)),
        'jacobian (local_world_aligned)': (
            'computeFrameJacobian (LOCAL_WORLD_ALIGNED)', lambda: k.jacobian(q, link),
            lambda: pin.computeFrameJacobian(m, d, pq, fid, LWA)),
        'jacobian (local)': (
            'computeFrameJacobian (LOCAL)', lambda: k.jacobian(q, link, None, 'local'),
            lambda: pin.computeFrameJacobian(m, d, pq, fid, LOCAL)),
        'jacobian (world)': (
            'computeFrameJacobian (WORLD)', lambda: k.jacobian(q, link, None, 'world'),
            lambda: pin.computeFrameJacobian(m, d, pq, fid, pin.WORLD)),
        'jacobians (J_T, J_R)': ('computeFrameJacobian (LOCAL_WORLD_ALIGNED)',
                                 lambda: k.jacobians(q, link),
                                 lambda: pin.computeFrameJacobian(m, d, pq, fid, LWA)),
        'hessian': ('computeJointKinematicHessians + getJointKinematicHessian',
                    lambda: k.hessian(q, joint_link), hessian),
        'hessians (H_T, H_R)': ('computeJointKinematicHessians + getJointKinematicHessian',
                                lambda: k.hessians(q, joint_link), hessian),
        'jacobian_derivative': ('computeJointJacobiansTimeVariation + '
                                'getFrameJacobianTimeVariation',
                                lambda: k.jacobian_derivative(q, qd, link), jdot),
        'acceleration': ('forwardKinematics(q, v, a) + getFrameClassicalAcceleration',
                         lambda: k.acceleration(q, qd, qdd, link), classical),
        'center_of_mass': ('centerOfMass', lambda: k.center_of_mass(q),
                           lambda: pin.centerOfMass(m, d, pq)),
        'center_of_mass_jacobian': ('jacobianCenterOfMass',
                                    lambda: k.center_of_mass_jacobian(q),
                                    lambda: pin.jacobianCenterOfMass(m, d, pq)),
    }
    out = timed_pairs(pairs, budget, repeat, log)
    for name, row in out.items():
        row['target'] = TARGETS.get(name)
    return out


def anatomy(pin, pair: Pair, rng, budget, repeat, log) -> dict:
    """
    Where a single M, G or RNEA call spends its time: each part timed against Pinocchio.

    The facade row is the call a user makes (target 1.2x on the Panda, README).

    facade (RobotModel method) = Python (checks, output array) + compiled entry point;
    entry point = argument unboxing (an empty kernel with the same signature) + kernel.
    """
    import numba
    from numba import types as nt
    from kron_dynamics.kernels import ID, native
    m, d, k = pair.pm, pair.pd, pair.m
    q, qd, qdd = rng.uniform(-1, 1, (3, pair.n))
    pq, pv, pa = pair.v(q), pair.v(qd), pair.v(qdd)
    ints, reals = k._ints, k._reals
    M, tau, W = np.empty((pair.n, pair.n)), np.empty(pair.n), np.zeros((0, 6))
    I2, R2, V = nt.int64[:, ::1], nt.float64[:, ::1], nt.float64[:]
    empty4 = numba.njit(lambda a, b, c, o: True).compile((I2, R2, V, R2))
    empty8 = numba.njit(lambda a, b, c, e, f, g, h, o: True).compile(
        (I2, R2, V, V, V, nt.int64, nt.float64[:, :], nt.float64[::1]))
    parts = {
        'mass_matrix': (lambda: pin.crba(m, d, pq), [
            ('facade', lambda: k.mass_matrix(q)),
            ('entry point', lambda: native.crba(ints, reals, q, M)),
            ('unboxing (empty kernel)', lambda: empty4(ints, reals, q, M)),
            ('output array', lambda: np.empty(k._nn))]),
        'gravity_torque': (lambda: pin.computeGeneralizedGravity(m, d, pq), [
            ('facade', lambda: k.gravity_torque(q)),
            ('entry point', lambda: native.gravity(ints, reals, q, tau)),
            ('unboxing (empty kernel)', lambda: empty4(ints, reals, q, M)),
            ('output array', lambda: np.empty(k._n))]),
        'inverse_dynamics': (lambda: pin.rnea(m, d, pq, pv, pa), [
            ('facade', lambda: k.inverse_dynamics(q, qd, qdd)),
            ('entry point', lambda: native.rnea(ints, reals, q, qd, qdd, ID, W, tau)),
            ('unboxing (empty kernel)', lambda: empty8(ints, reals, q, qd, qdd, ID, W, tau)),
            ('output array', lambda: np.empty(k._n))]),
    }
    out = {}
    for name, (baseline, steps) in parts.items():
        out[name] = {}
        for step, f in steps:
            r = alternate(f, baseline, budget, repeat)
            out[name][step] = r
            log(f'    {name:18s} {step:25s} {r["kron_min_us"]:6.3f} us  Pinocchio call '
                f'{r["pin_min_us"]:6.3f} us  ratio {r["ratio_min"]:.2f}')
    return out


def batches(pin, pair: Pair, rng, N: int, budget: float, repeat: int, log) -> dict:
    """
    Per-configuration time of one batch call against Pinocchio (parallel API or loop).

    With every core and with one thread (numba.set_num_threads, Pinocchio's num_threads):
    on a machine shared with other jobs, thread pools that wait for each other at the end
    of a batch are slowed far more than one thread is.
    """
    import numba
    m, k, link = pair.pm, pair.m, pair.link
    Q, Qd, Qdd = rng.uniform(-1, 1, (3, N, pair.n))
    PQ, PV, PA = (np.asfortranarray(X[:, np.argsort(pair.iv)].T) for X in (Q, Qd, Qdd))
    d = m.createData()
    fid, jid = pair.fid, pair.jid
    joint_link = k.joints[m.names[jid]].child_link
    loop_q = [np.ascontiguousarray(PQ[:, i]) for i in range(N)]
    safe = k.with_armature(np.full(pair.n, 0.1))   # M positive definite for ABA
    m_arm = pin.Model(m)
    m_arm.armature = np.full(pair.n, 0.1)
    tau = np.asfortranarray(np.empty((pair.n, N)))
    acc = np.asfortranarray(np.empty((pair.n, N)))
    out = {'N': N}
    all_threads = numba.config.NUMBA_NUM_THREADS
    for threads in sorted({all_threads, 1}, reverse=True):
        numba.set_num_threads(threads)
        cases = {
            'jacobian (loop of computeFrameJacobian)': (
                lambda: k.jacobian(Q, link),
                lambda: [pin.computeFrameJacobian(m, d, x, fid, pin.LOCAL_WORLD_ALIGNED)
                         for x in loop_q]),
            'link_pose (loop of forwardKinematics + updateFramePlacement)': (
                lambda: k.link_pose(Q, link),
                lambda: [(pin.forwardKinematics(m, d, x), pin.updateFramePlacement(m, d, fid))
                         for x in loop_q]),
            'hessian (loop of computeJointKinematicHessians + get)': (
                lambda: k.hessian(Q, joint_link),
                lambda: [(pin.computeJointKinematicHessians(m, d, x),
                          pin.getJointKinematicHessian(m, d, jid, pin.LOCAL_WORLD_ALIGNED))
                         for x in loop_q]),
        }
        try:
            pool, pool_arm = pin.ModelPool(m, threads), pin.ModelPool(m_arm, threads)
            pin.rneaInParallel(threads, pool, PQ, PV, PA, tau)
            np.testing.assert_allclose(tau.T[:, pair.iv], k.inverse_dynamics(Q, Qd, Qdd),
                                       atol=1e-8 * max(1.0, np.abs(tau).max()))
            pin.abaInParallel(threads, pool_arm, PQ, PV, PA, acc)
            np.testing.assert_allclose(acc.T[:, pair.iv], safe.forward_dynamics(Q, Qd, Qdd),
                                       atol=1e-6 * max(1.0, np.abs(acc).max()))
            cases['inverse_dynamics (rneaInParallel)'] = (
                lambda: k.inverse_dynamics(Q, Qd, Qdd),
                lambda: pin.rneaInParallel(threads, pool, PQ, PV, PA, tau))
            cases['forward_dynamics (abaInParallel)'] = (
                lambda: safe.forward_dynamics(Q, Qd, Qdd),
                lambda: pin.abaInParallel(threads, pool_arm, PQ, PV, PA, acc))
        except Exception as exc:       # a Pinocchio built without OpenMP has no parallel API
            out['parallel_api_error'] = f'{type(exc).__name__}: {exc}'
            log(f'    Pinocchio parallel API: {out["parallel_api_error"]}')
        for name, (f, g) in cases.items():
            r = alternate(f, g, budget, repeat)
            r = {key: (v / N if key.endswith('_us') else v) for key, v in r.items()}
            r['speedup_min'] = 1.0 / r['ratio_min']
            r['speedup_median'] = 1.0 / r['ratio_median']
            r['threads'] = threads
            out[f'{name} [{threads} thread{"s" if threads > 1 else ""}]'] = r
            log(f'    batch {threads} thread(s) {name:55s} {r["kron_min_us"]:7.3f} us/config  '
                f'Pinocchio {r["pin_min_us"]:7.3f}  speedup {r["speedup_min"]:.2f}x')
    numba.set_num_threads(all_threads)
    return out


def main(argv=None) -> int:
    """Run the benchmark and write kinematics.json."""
    setup = pinocchio_bench(__doc__, argv, RESULTS, lambda parser: parser.add_argument(
        '--robots', default=','.join(ROBOTS), help='subset of robots'))
    if setup is None:
        return 1
    args, budget, repeat, log, pin, robots_dir, _ = setup
    N = 1000 if args.quick else 10_000
    sources = {'panda': lambda: panda_urdf(panda_source(robots_dir)),
               'talos': lambda: stripped_urdf(robots_dir / TALOS)}
    rng = np.random.default_rng(0)
    results = {}
    for name in args.robots.split(','):
        pair = Pair(pin, name, sources[name](), ROBOTS[name])
        log(f'{name}: n = {pair.n}, link {pair.link}')
        results[name] = {'n': pair.n, 'link': pair.link,
                         'agreement': agreement(pin, pair, rng, 3 if args.quick else 10),
                         'single': single_calls(pin, pair, rng, budget, repeat, log),
                         'anatomy': anatomy(pin, pair, rng, budget, repeat, log),
                         'batch': batches(pin, pair, rng, N, 4 * budget, max(3, repeat // 3),
                                          log)}
    return finish(setup, 'kinematics', {'robots': results},
                  {name: r['agreement'] for name, r in results.items()})


if __name__ == '__main__':
    sys.exit(main())
