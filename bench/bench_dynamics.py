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
Benchmark: kron_dynamics against Pinocchio, PyBullet and MuJoCo on the same URDFs.

The robots (bench/lib/models.py): the 7-DOF Franka Panda of example-robot-data, serial
chains with n = 2, 6, 12, 24, 48 joints and a 12-DOF branching tree. The libraries come with
requirements.txt, MuJoCo with bench/requirements.txt (bench/lib/comparison_libs.py).

1. Agreement: M, G, inverse dynamics (RNEA), the Coriolis vector C(q, q')q' and the
   Coriolis matrix (via C q', since Coriolis matrices with M' - 2C skew are not unique) at
   random configurations, relative to the largest entry (kron_dynamics' own identities are
   the test suite's).
2. Single calls from Python: min and median time per call (timeit, warm-up first: numba
   compiles on the first call), ratios kron/Pinocchio against the targets of the
   "Performance" issue (<= 2x for tau, M, G, Coriolis vector; <= 4x for C* vs
   computeCoriolisMatrix).
3. Scaling over the chains and the tree: tau, M and C* vs n, log-log slopes.
4. Batch: N = 10,000 configurations through one kron_dynamics call (q of shape (N, n)) vs
   Pinocchio in a Python loop (target: ours >= 2x faster).
5. The three mass-matrix algorithms (000 eq. 95, 003 explicit JSIM, CRBA), compiled in the
   same numba style, next to the operation counts that 003 claims (Table 1, Fig. 3).

Writes bench/results/dynamics.json (stamped with revision and machine: bench/lib/provenance.py)
and scaling.png, then re-renders docs/ (bench/report.py)::

    .venv/bin/python bench/bench_dynamics.py                 # full run (about 5 minutes)
    .venv/bin/python bench/bench_dynamics.py --quick         # smoke test (about 20 s)
    .venv/bin/python bench/bench_dynamics.py --report-only   # summaries, plot, tables
"""

import argparse
import json
import math
import os
from pathlib import Path
import platform
import sys
import time
import traceback

from lib import comparison_libs, provenance
from lib.compare import AGREE_TOL, relerr as _relerr
from lib.compiled_jsim import entry_points as jsim_entry_points
from lib.models import build_models, find_robots_dir
from lib.timing import per_call, safe_time
import numpy as np

from kron_dynamics import RobotModel
from kron_dynamics.kernels import native
from kron_dynamics.testing.pinocchio_pair import PinocchioPair, symmetric_from_upper

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / 'bench' / 'results'
SEEDS = REPO.parent / 'shared' / 'seeds'      # the seeds beside the checkout
GRAVITY = (0.0, 0.0, -9.81)
SLOPE_TOL = 0.15         # M "no faster than O(n^2)": slope <= 2 + SLOPE_TOL (timer noise)

# kron method -> (Pinocchio baseline, target ratio kron/Pinocchio)
TARGETS = {
    'inverse_dynamics': ('rnea', 2.0),
    'mass_matrix': ('crba', 2.0),
    'gravity_torque': ('computeGeneralizedGravity', 2.0),
    'coriolis_vector': ('nonLinearEffects - G', 2.0),
    'coriolis_star': ('computeCoriolisMatrix', 4.0),
}
JSIM = ('jacobian', 'explicit', 'crba')     # 000 eq. 95, 003's explicit form, CRBA
SCALING = {   # label -> (kron op, Pinocchio op)
    'RNEA (tau)': ('inverse_dynamics', 'rnea'),
    'M': ('mass_matrix', 'crba'),
    'C* / C': ('coriolis_star', 'computeCoriolisMatrix'),
}


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


def check_paper_counts() -> dict:
    """Look the Table 1 formulas up in the seed text of 003; return what was found."""
    files = sorted(SEEDS.glob('003_*')) if SEEDS.is_dir() else []
    if not files:
        return {'file': None, 'verified': False, 'note': f'no 003 seed under {SEEDS}'}
    text = files[0].read_text(encoding='utf-8', errors='replace').replace(' ', '')
    found = {f'{key} {kind}': claim[kind][0] in text
             for key, claim in PAPER_003.items() for kind in ('multiplications', 'additions')}
    return {'file': str(files[0]), 'verified': all(found.values()), 'found': found,
            'equivalent_additions_defined': '1.1*multiplications+additions' in text}


def relerr(a, b) -> float:
    """Return lib.compare.relerr purely relative (absolute where b is all zeros)."""
    return _relerr(a, b, floor=0.0)


# ---------------------------------------------------------------------------- libraries
class Kron:
    """kron_dynamics on one benchmark model (reference order: model.joint_names)."""

    name = 'kron_dynamics'

    def __init__(self, bm):
        self.model = RobotModel.from_urdf_string(bm.urdf, gravity=GRAVITY, source=str(bm.path))
        self.joint_names = list(self.model.joint_names)
        self.n = self.model.n

    def M(self, q):
        return self.model.mass_matrix(q)

    def G(self, q):
        return self.model.gravity_torque(q)

    def rnea(self, q, qd, qdd):
        return self.model.inverse_dynamics(q, qd, qdd)

    def cvec(self, q, qd):
        return self.model.coriolis_vector(q, qd)

    def timers(self, q, qd, qdd) -> dict:
        m = self.model
        ops = {
            'inverse_dynamics': lambda: m.inverse_dynamics(q, qd, qdd),
            'mass_matrix': lambda: m.mass_matrix(q),
            'gravity_torque': lambda: m.gravity_torque(q),
            'coriolis_vector': lambda: m.coriolis_vector(q, qd),
            'coriolis_star': lambda: m.coriolis_star(q),
            'coriolis_matrix': lambda: m.coriolis_matrix(q, qd),
        }
        out = np.empty((m.n, m.n))
        ints, reals = m._ints, m._reals
        jsim = jsim_entry_points()
        ops['compiled jacobian'] = lambda: jsim['mass_matrix_jacobian'](ints, reals, q, out)
        ops['compiled explicit'] = lambda: jsim['jsim_explicit'](ints, reals, q, out)
        ops['compiled crba'] = lambda: native.crba(ints, reals, q, out)
        return ops


class Mapped:
    """PyBullet or MuJoCo, whose joint order differs: index[j] = its position of kron joint j."""

    def setup_index(self, names, kron_names):
        missing = [j for j in kron_names if j not in names]
        if missing or len(names) != len(kron_names):
            raise RuntimeError(f'{self.name}: joints {names} do not match {kron_names}')
        self.index = np.array([names.index(j) for j in kron_names])

    def to_lib(self, x):
        y = np.empty(len(self.index))
        y[self.index] = x
        return y

    def vec(self, y):
        return np.asarray(y, dtype=float)[self.index]

    def mat(self, A):
        return np.asarray(A, dtype=float)[np.ix_(self.index, self.index)]


class Pinocchio:
    """Pinocchio on the same URDF text (buildModelFromXML), through the shared adapter."""

    name = 'pinocchio'

    def __init__(self, pin, bm, kron_model):
        self.pin = pin
        self.model = pin.buildModelFromXML(bm.urdf)
        self.model.gravity.linear = np.array(GRAVITY)
        self.pair = PinocchioPair(kron_model, self.model)
        self.data = self.pair.pd

    def M(self, q):
        return self.pair.matrix(symmetric_from_upper(self.pin.crba(self.model, self.data,
                                                                   self.pair.q(q))))

    def G(self, q):
        return self.pair.force(self.pin.computeGeneralizedGravity(self.model, self.data,
                                                                  self.pair.q(q)))

    def rnea(self, q, qd, qdd):
        p = self.pair
        return p.force(self.pin.rnea(self.model, self.data, p.q(q), p.v(qd), p.v(qdd)))

    def cvec(self, q, qd):
        p = self.pair
        nle = np.array(self.pin.nonLinearEffects(self.model, self.data, p.q(q), p.v(qd)))
        return p.force(nle - self.pin.computeGeneralizedGravity(self.model, self.data, p.q(q)))

    def C(self, q, qd):
        p = self.pair
        return p.matrix(self.pin.computeCoriolisMatrix(self.model, self.data, p.q(q), p.v(qd)))

    def timers(self, q, qd, qdd) -> dict:
        pin, m, d = self.pin, self.model, self.data
        q, qd, qdd = self.pair.q(q), self.pair.v(qd), self.pair.v(qdd)
        return {
            'rnea': lambda: pin.rnea(m, d, q, qd, qdd),
            'crba': lambda: pin.crba(m, d, q),
            'computeGeneralizedGravity': lambda: pin.computeGeneralizedGravity(m, d, q),
            'nonLinearEffects - G': lambda: (np.array(pin.nonLinearEffects(m, d, q, qd))
                                             - pin.computeGeneralizedGravity(m, d, q)),
            'computeCoriolisMatrix': lambda: pin.computeCoriolisMatrix(m, d, q, qd),
        }


class PyBullet(Mapped):
    """PyBullet (DIRECT, fixed base) on the same URDF file."""

    name = 'pybullet'

    def __init__(self, p, bm, kron_names):
        self.p = p
        self.cid = p.connect(p.DIRECT)
        p.setGravity(*GRAVITY, physicsClientId=self.cid)
        # without the flag, Bullet recomputes the inertias from the collision shapes
        self.body = p.loadURDF(str(bm.path), useFixedBase=True,
                               flags=p.URDF_USE_INERTIA_FROM_FILE, physicsClientId=self.cid)
        names = []
        for j in range(p.getNumJoints(self.body, physicsClientId=self.cid)):
            info = p.getJointInfo(self.body, j, physicsClientId=self.cid)
            if info[2] != p.JOINT_FIXED:
                names.append(info[1].decode())
        self.setup_index(names, kron_names)

    def close(self):
        self.p.disconnect(physicsClientId=self.cid)

    def _id(self, q, qd, qdd):
        return self.p.calculateInverseDynamics(
            self.body, self.to_lib(q).tolist(), self.to_lib(qd).tolist(),
            self.to_lib(qdd).tolist(), physicsClientId=self.cid)

    def M(self, q):
        return self.mat(self.p.calculateMassMatrix(self.body, self.to_lib(q).tolist(),
                                                   physicsClientId=self.cid))

    def G(self, q):
        z = np.zeros(len(q))
        return self.vec(self._id(q, z, z))

    def rnea(self, q, qd, qdd):
        return self.vec(self._id(q, qd, qdd))

    def cvec(self, q, qd):
        z = np.zeros(len(q))
        return self.vec(self._id(q, qd, z)) - self.vec(self._id(q, z, z))

    def timers(self, q, qd, qdd) -> dict:
        p, body, cid = self.p, self.body, self.cid
        q, qd, qdd = (self.to_lib(x).tolist() for x in (q, qd, qdd))
        return {
            'calculateInverseDynamics': lambda: p.calculateInverseDynamics(
                body, q, qd, qdd, physicsClientId=cid),
            'calculateMassMatrix': lambda: p.calculateMassMatrix(body, q, physicsClientId=cid),
        }


MUJOCO_COMPILER = ('  <mujoco>\n    <compiler discardvisual="true" fusestatic="true" '
                   'balanceinertia="false" inertiafromgeom="false"/>\n  </mujoco>\n')


class MuJoCo(Mapped):
    """MuJoCo on the same URDF text plus a <mujoco><compiler .../></mujoco> element."""

    name = 'mujoco'

    def __init__(self, mujoco, bm, kron_names):
        self.mj = mujoco
        xml = bm.urdf.replace('</robot>', MUJOCO_COMPILER + '</robot>')
        m = self.m = mujoco.MjModel.from_xml_string(xml)
        # URDF <dynamics> would become damping/frictionloss; none of it belongs in M, C, G
        m.dof_damping[:] = 0.0
        m.dof_armature[:] = 0.0
        m.dof_frictionloss[:] = 0.0
        flags = mujoco.mjtDisableBit
        m.opt.disableflags |= int(flags.mjDSBL_CONSTRAINT | flags.mjDSBL_SPRING
                                  | flags.mjDSBL_DAMPER)
        m.opt.gravity[:] = GRAVITY
        self.d = mujoco.MjData(m)
        names = [None] * m.nv
        for j in range(m.njnt):
            if m.jnt_dofadr[j] >= 0:
                if m.jnt_qposadr[j] != m.jnt_dofadr[j]:
                    raise RuntimeError('mujoco: qpos and dof addresses differ')
                names[m.jnt_dofadr[j]] = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j)
        self.setup_index(names, kron_names)
        self.make_m = getattr(mujoco, 'mj_makeM', mujoco.mj_crb)
        self.out_M = np.zeros((m.nv, m.nv))
        self.out_v = np.zeros(m.nv)
        try:    # MuJoCo >= 3.3 / 4: mj_fullM(m, d, dst); before: mj_fullM(m, dst, d.qM)
            mujoco.mj_fullM(m, self.d, self.out_M)
            self.full_m = lambda: mujoco.mj_fullM(m, self.d, self.out_M)
        except TypeError:
            self.full_m = lambda: mujoco.mj_fullM(m, self.out_M, self.d.qM)

    def _set(self, q, qd=None, qdd=None):
        z = np.zeros(len(q))
        self.d.qpos[:] = self.to_lib(q)
        self.d.qvel[:] = self.to_lib(z if qd is None else qd)
        self.d.qacc[:] = self.to_lib(z if qdd is None else qdd)

    def _full_m(self):
        mj, m, d = self.mj, self.m, self.d
        mj.mj_kinematics(m, d)
        mj.mj_comPos(m, d)
        self.make_m(m, d)
        self.full_m()
        return self.out_M

    def _rne(self, flg_acc):
        mj, m, d = self.mj, self.m, self.d
        mj.mj_kinematics(m, d)
        mj.mj_comPos(m, d)
        mj.mj_comVel(m, d)
        mj.mj_rne(m, d, flg_acc, self.out_v)
        return self.out_v

    def M(self, q):
        self._set(q)
        return self.mat(self._full_m())

    def G(self, q):
        self._set(q)
        return self.vec(self._rne(0))

    def rnea(self, q, qd, qdd):
        self._set(q, qd, qdd)
        self.mj.mj_inverse(self.m, self.d)
        return self.vec(self.d.qfrc_inverse)

    def cvec(self, q, qd):
        self._set(q, qd)
        bias = self.vec(self._rne(0))
        return bias - self.G(q)

    def timers(self, q, qd, qdd) -> dict:
        mj, m, d = self.mj, self.m, self.d
        self._set(q, qd, qdd)
        return {
            'mj_inverse': lambda: mj.mj_inverse(m, d),
            'mj_fullM (kinematics, comPos, makeM, fullM)': self._full_m,
        }


# ---------------------------------------------------------------------------- agreement
def samples(kron: Kron, count: int, seed: int = 7):
    """Return `count` random (q, qd, qdd) inside the joint limits (at most +-1.5)."""
    rng = np.random.default_rng(seed)
    lo = np.array([max(kron.model.joints[j].lower, -1.5) for j in kron.joint_names])
    hi = np.array([min(kron.model.joints[j].upper, 1.5) for j in kron.joint_names])
    return [(rng.uniform(lo, hi), rng.uniform(-1, 1, kron.n), rng.uniform(-1, 1, kron.n))
            for _ in range(count)]


def agreement(lib, kron: Kron, configs) -> dict:
    """Return {quantity: max relative error over configs} of a library against kron."""
    checks = {
        'M': lambda q, qd, qdd: (lib.M(q), kron.M(q)),
        'G': lambda q, qd, qdd: (lib.G(q), kron.G(q)),
        'RNEA tau': lambda q, qd, qdd: (lib.rnea(q, qd, qdd), kron.rnea(q, qd, qdd)),
        'Coriolis vector': lambda q, qd, qdd: (lib.cvec(q, qd), kron.cvec(q, qd)),
    }
    if hasattr(lib, 'C'):
        checks['Coriolis matrix: C qd'] = lambda q, qd, qdd: (lib.C(q, qd) @ qd, kron.cvec(q, qd))
    out = {}
    for key, check in checks.items():
        try:
            out[key] = max(relerr(*check(q, qd, qdd)) for q, qd, qdd in configs)
        except Exception as exc:
            out[key] = f'{type(exc).__name__}: {exc}'
    return out


# ---------------------------------------------------------------------------- batch
def bench_batch(kron: Kron, pin_lib, N: int, budget: float, repeat: int, log) -> dict:
    """Per-configuration time of N configurations: kron batch call vs Python loops."""
    rng = np.random.default_rng(11)
    n = kron.n
    Q, QD, QDD = (rng.uniform(-1, 1, (N, n)) for _ in range(3))
    m = kron.model
    out = {'N': N}
    batch_ops = {'inverse_dynamics': lambda a, b, c: m.inverse_dynamics(a, b, c),
                 'mass_matrix': lambda a, b, c: m.mass_matrix(a)}
    single_rows = {'inverse_dynamics': lambda k: kron.rnea(Q[k], QD[k], QDD[k]),
                   'mass_matrix': lambda k: kron.M(Q[k])}
    for op, call in batch_ops.items():
        entry = {}
        try:   # a small batch first: compiles, and checks against single calls
            small = call(Q[:4], QD[:4], QDD[:4])
            err = max(relerr(small[k], single_rows[op](k)) for k in range(4))
            if np.asarray(small).shape[0] != 4 or err > AGREE_TOL:
                raise ValueError(f'batch result differs from single calls (rel. err. {err:.2g}, '
                                 f'shape {np.asarray(small).shape})')
            t = per_call(lambda: call(Q, QD, QDD), budget, repeat)
            entry['kron batch'] = {k: v / N for k, v in t.items() if k.endswith('_us')}
        except Exception as exc:
            log(f'    batch {op}: not available ({type(exc).__name__}: {exc})')
            entry['kron batch'] = {'error': f'not available: {type(exc).__name__}: {exc}'}

        def kron_loop(op=op):
            for k in range(N):
                single_rows[op](k)
        t = safe_time(kron_loop, budget, repeat, log)
        entry['kron loop'] = {k: v / N for k, v in t.items() if k.endswith('_us')} or t
        if pin_lib is not None:
            pin, pm, pd = pin_lib.pin, pin_lib.model, pin_lib.data
            Qp, QDp, QDDp = (X[:, np.argsort(pin_lib.pair.iv)] for X in (Q, QD, QDD))
            res = np.empty((N, n)) if op == 'inverse_dynamics' else np.empty((N, n, n))

            def pin_loop(op=op):
                if op == 'inverse_dynamics':
                    for k in range(N):
                        res[k] = pin.rnea(pm, pd, Qp[k], QDp[k], QDDp[k])
                else:
                    for k in range(N):
                        res[k] = pin.crba(pm, pd, Qp[k])
            t = safe_time(pin_loop, budget, repeat, log)
            entry['pinocchio loop'] = {k: v / N for k, v in t.items() if k.endswith('_us')} or t
        kb, pl = entry['kron batch'], entry.get('pinocchio loop', {})
        if 'min_us' in kb and 'min_us' in pl:
            entry['speed-up vs pinocchio loop (min)'] = pl['min_us'] / kb['min_us']
            entry['pass (>= 2x)'] = entry['speed-up vs pinocchio loop (min)'] >= 2.0
        out[op] = entry
    return out


# ---------------------------------------------------------------------------- one model
def bench_model(bm, libs: dict, settings: dict, log) -> dict:
    """Agreement and single-call timings of every library on one model."""
    budget, repeat = settings['budget'], settings['repeat']
    result = {'n': bm.n, 'kind': bm.kind, 'note': bm.note, 'urdf': str(bm.path),
              'agreement': {}, 'timing_us': {}, 'errors': {}}
    kron = Kron(bm)
    configs = samples(kron, settings['checks'])
    log(f'  {bm.name} (n = {bm.n}): agreement')
    adapters = {}
    builders = {
        'pinocchio': lambda mod: Pinocchio(mod, bm, kron.model),
        'pybullet': lambda mod: PyBullet(mod, bm, kron.joint_names),
        'mujoco': lambda mod: MuJoCo(mod, bm, kron.joint_names),
    }
    for key, build in builders.items():
        module = libs.get(key)
        if module is None:
            continue
        try:
            adapters[key] = build(module)
            result['agreement'][key] = agreement(adapters[key], kron, configs)
        except Exception as exc:
            result['errors'][key] = f'{type(exc).__name__}: {exc}'
            log(f'    {key}: {result["errors"][key]}')
    log(f'  {bm.name}: timing')
    q, qd, qdd = configs[0]
    timers = {'kron_dynamics': kron.timers(q, qd, qdd)}
    for key, lib in adapters.items():
        timers[key] = lib.timers(q, qd, qdd)
    for lib, ops in timers.items():
        result['timing_us'][lib] = {op: safe_time(f, budget, repeat, log)
                                    for op, f in ops.items()}
    ratios = {}
    for op, (base, target) in TARGETS.items():
        ours = result['timing_us']['kron_dynamics'].get(op, {})
        theirs = result['timing_us'].get('pinocchio', {}).get(base, {})
        if 'min_us' in ours and 'min_us' in theirs:
            r_min = ours['min_us'] / theirs['min_us']
            ratios[op] = {'baseline': base, 'target': target, 'ratio_min': r_min,
                          'ratio_median': ours['median_us'] / theirs['median_us'],
                          'pass': r_min <= target}
    result['ratios'] = ratios
    if settings['batch_n']:
        log(f'  {bm.name}: batch N = {settings["batch_n"]}')
        result['batch'] = bench_batch(kron, adapters.get('pinocchio'), settings['batch_n'],
                                      settings['batch_budget'], settings['batch_repeat'], log)
    if 'pybullet' in adapters:
        adapters['pybullet'].close()
    return result


# ---------------------------------------------------------------------------- summaries
def slope(ns, ts) -> float:
    """Return the log-log least-squares slope of ts vs ns (nan with fewer than 2 points)."""
    pts = [(n, t) for n, t in zip(ns, ts) if t is not None and t > 0]
    if len(pts) < 2:
        return math.nan
    x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(x, y, 1)[0])


def timing(results, model, lib, op, stat='min_us'):
    """Return one timing from the results (None if missing or failed)."""
    return results.get(model, {}).get('timing_us', {}).get(lib, {}).get(op, {}).get(stat)


def scaling_summary(results) -> dict:
    """Return times vs n over the chains (and the tree), log-log slopes and the criteria."""
    chains = sorted((r['n'], name) for name, r in results.items() if r['kind'] == 'chain')
    ns = [n for n, _ in chains]
    out = {'n': ns, 'series': {}, 'slopes': {}, 'tree': {}}
    series = {f'{label} {lib}': (lib, op) for label, (ok, op_p) in SCALING.items()
              for lib, op in (('kron_dynamics', ok), ('pinocchio', op_p))}
    series['C matrix kron_dynamics'] = ('kron_dynamics', 'coriolis_matrix')
    for key, (lib, op) in series.items():
        ts = [timing(results, name, lib, op) for _, name in chains]
        out['series'][key] = ts
        large = [(n, t) for n, t in zip(ns, ts) if n >= 12]
        out['slopes'][key] = {'all n': slope(ns, ts),
                              'n >= 12': slope([n for n, _ in large], [t for _, t in large])}
        tree = [name for name, r in results.items() if r['kind'] == 'tree']
        if tree:
            out['tree'][key] = timing(results, tree[0], lib, op)
    biggest = max((name for _, name in chains), key=lambda s: results[s]['n'], default=None)
    criteria = {}
    if biggest is not None:
        ours = timing(results, biggest, 'kron_dynamics', 'inverse_dynamics')
        theirs = timing(results, biggest, 'pinocchio', 'rnea')
        if ours and theirs:
            criteria[f'RNEA at n = {results[biggest]["n"]} no slower than Pinocchio'] = {
                'value': ours / theirs, 'unit': 'ratio kron/pinocchio (min)',
                'pass': ours <= theirs}
    s = out['slopes'].get('M kron_dynamics', {}).get('n >= 12', math.nan)
    criteria['M grows no faster than O(n^2) (chains, n >= 12)'] = {
        'value': s, 'unit': f'log-log slope (tolerance {SLOPE_TOL})',
        'pass': bool(s <= 2 + SLOPE_TOL) if not math.isnan(s) else None}
    s = out['slopes'].get('C* / C kron_dynamics', {}).get('n >= 12', math.nan)
    criteria['growth of C* (chains, n >= 12)'] = {
        'value': s, 'pass': None,
        'unit': 'log-log slope (C* has n^3 entries: tends to >= 3 as n grows)'}
    out['criteria'] = criteria
    return out


def mass_matrix_summary(results) -> dict:
    """Return the compiled M algorithms' times on every model with 003's operation counts."""
    rows = []
    order = sorted(results, key=lambda k: (results[k]['kind'] != 'chain', results[k]['n']))
    for name in order:
        r = results[name]
        row = {'model': name, 'n': r['n'], 'kind': r['kind']}
        for method in JSIM:
            row[f'compiled {method}'] = timing(results, name, 'kron_dynamics',
                                               f'compiled {method}')
        for key in PAPER_003:
            row[f'eqadd {key}'] = equivalent_additions(key, r['n'])
        rows.append(row)
    chains = [row for row in rows if row['kind'] == 'chain']
    slopes = {m: slope([row['n'] for row in chains], [row[m] for row in chains])
              for m in (f'compiled {k}' for k in JSIM)}
    ns = [row['n'] for row in chains]
    slopes.update({f'003 claim {key}': slope(ns, [row[f'eqadd {key}'] for row in chains])
                   for key in PAPER_003})
    claims = {key: {'method': c['method'], 'multiplications': c['multiplications'][0],
                    'additions': c['additions'][0]} for key, c in PAPER_003.items()}
    return {'rows': rows, 'slopes_chains': slopes, 'claims': claims,
            'source': PAPER_003_SOURCE}


# ---------------------------------------------------------------------------- output
def plot(report: dict, path: Path) -> None:
    """Write the log-log plot of time vs n (chains) for RNEA, M, C* of ours and Pinocchio."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    sc = report['scaling']
    ns = np.array(sc['n'], dtype=float)
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.5))
    for ax, (label, _) in zip(axes, SCALING.items()):
        for lib, style in (('kron_dynamics', 'o-'), ('pinocchio', 's--')):
            ts = sc['series'].get(f'{label} {lib}', [])
            pts = [(n, t) for n, t in zip(ns, ts) if t]
            if pts:
                s = sc['slopes'][f'{label} {lib}']['n >= 12']
                ax.loglog(*zip(*pts), style, label=f'{lib} (slope n>=12: {s:.2f})')
            tree = sc['tree'].get(f'{label} {lib}')
            if tree:
                ax.loglog([12], [tree], style[0], mfc='none', ms=10, color='gray')
        anchor = [(n, t) for n, t in zip(ns, sc['series'].get(f'{label} kron_dynamics', []))
                  if t and n >= 12]
        for k, ls in ((1, ':'), (2, '-.'), (3, '--')):
            if anchor:   # reference slopes through our first point with n >= 12
                n0, t0 = anchor[0]
                big = ns[ns >= n0]
                ax.loglog(big, t0 * (big / n0) ** k, ls, color='gray', lw=1,
                          label=f'O(n^{k})')
        ax.set_xticks(ns)
        ax.set_xticklabels([f'{n:g}' for n in ns])
        ax.minorticks_off()
        ax.set_title(label + (' (ours: C*, Pinocchio: computeCoriolisMatrix)'
                              if label.startswith('C') else ''), fontsize=9)
        ax.set_xlabel('n (serial chain; open gray marker: 12-DOF tree)')
        ax.set_ylabel('µs per call (min)')
        ax.grid(True, which='both', alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"kron_dynamics vs Pinocchio {report['meta']['libraries'].get('pin', '')}, "
                 f"{report['meta']['date']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------------------- notes
def main(argv=None) -> int:
    """Run the benchmark and write dynamics.json and scaling.png."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--quick', action='store_true', help='few repetitions (smoke test)')
    parser.add_argument('--out', default=str(RESULTS), help='output directory')
    parser.add_argument('--models', default='', help='comma-separated subset of model names')
    parser.add_argument('--report-only', action='store_true',
                        help='measure nothing: rewrite scaling.png and the summaries in '
                             'OUT/dynamics.json (and so docs/) from it')
    args = parser.parse_args(argv)
    if args.report_only:
        data = json.loads((Path(args.out) / 'dynamics.json').read_text())
        write_reports({'meta': data['meta'], 'models': data['models']}, Path(args.out))
        provenance.regenerate_docs()
        return 0
    quick = args.quick
    settings = {'budget': 0.02 if quick else 0.4, 'repeat': 3 if quick else 9,
                'checks': 2 if quick else 5,
                'batch_n': 1000 if quick else 10_000,
                'batch_budget': 0.05 if quick else 1.0, 'batch_repeat': 2 if quick else 5}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.time()

    def log(msg):
        print(f'[{time.time() - start:6.1f} s] {msg}', flush=True)

    libs, unavailable = {}, {}
    for key in ('pinocchio', 'pybullet', 'mujoco'):
        libs[key], reason = comparison_libs.load(key, log=log)
        if reason:
            unavailable[key] = reason
    robots = find_robots_dir(log)
    if robots is None:
        unavailable['example-robot-data'] = 'not installed: no Panda'
    versions = comparison_libs.versions()
    models = build_models(robots, log=log)    # build/bench_models/*.urdf
    if args.models:
        models = [m for m in models if m.name in args.models.split(',')]
    results = {}
    for bm in models:
        try:
            results[bm.name] = bench_model(bm, libs, settings, log)
        except Exception:
            log(f'{bm.name}: FAILED\n{traceback.format_exc()}')
            results[bm.name] = {'n': bm.n, 'kind': bm.kind, 'note': bm.note,
                                'agreement': {}, 'timing_us': {},
                                'errors': {'benchmark': traceback.format_exc()}}
    import numba
    stamp = provenance.stamp()    # git, date, cpu, cpu_count, machine, python
    meta = {
        **stamp, 'quick': quick, 'settings': settings, 'checks': settings['checks'],
        'platform': platform.platform(),
        'numpy': np.__version__, 'numba': numba.__version__,
        'numba_threads': numba.config.NUMBA_NUM_THREADS,
        'kron_dynamics': stamp['git'], 'load_average': list(os.getloadavg()),
        'libraries': {k: v for k, v in versions.items()
                      if k in ('pin', 'example-robot-data', 'pybullet', 'mujoco')},
        'unavailable': unavailable, 'paper_003_check': check_paper_counts(),
        'wall_seconds': None,
    }
    meta['wall_seconds'] = round(time.time() - start, 1)
    write_reports({'meta': meta, 'models': results}, out, log)
    provenance.regenerate_docs(log)
    return 0


def write_reports(report: dict, out: Path, log=print) -> None:
    """Add the summaries to a report (meta + models) and write its JSON and plot."""
    results = report['models']
    report['scaling'] = scaling_summary(results)
    report['mass_matrix_algorithms'] = mass_matrix_summary(results)
    (out / 'dynamics.json').write_text(json.dumps(report, indent=2, default=str) + '\n')
    try:
        plot(report, out / 'scaling.png')
    except Exception as exc:
        log(f'plot failed: {type(exc).__name__}: {exc}')
    log(f'wrote {out / "dynamics.json"} and {out / "scaling.png"}')


if __name__ == '__main__':
    sys.exit(main())
