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
The robots of the dynamics benchmark, as URDF text that every library loads unchanged.

- ``panda``: the 7-DOF Franka Emika Panda of ``example-robot-data``, with the two finger
  joints made fixed (the same 7 coordinates in every library: MuJoCo drops ``<mimic>``,
  PyBullet ignores it; kron_dynamics takes it as a constraint), and no visual or collision
  geometry (no meshes to resolve; PyBullet and MuJoCo cannot derive inertias from shapes);
- ``chain_<n>`` for n = 2, 6, 12, 24, 48 and ``tree_12``: random trees of
  ``kron_dynamics.testing.random_urdf`` (the test suite's), a serial chain of n revolute
  joints and one fixed joint, and a 12-DOF branching tree with prismatic joints and two fixed
  joints: tilted axes (not all unit length: every library normalises them), joint origins with
  xyz and rpy, full inertia tensors with inertial rpy and centre-of-mass offsets. No joint is
  continuous: Pinocchio would take two coordinates (cos, sin) for it.

Every link has a positive mass (MuJoCo refuses massless moving bodies), every joint has limits
wide enough for the sampled configurations, there is no ``<dynamics>`` (damping) element, and
the base link's inertial frame is its own (random_urdf gives it no ``<origin>``): PyBullet's
inverse dynamics takes gravity in the base's inertial frame. ``build_models`` writes the URDFs
to ``build/bench_models/`` and checks that kron_dynamics loads each of them.
"""

import argparse
from collections.abc import Callable
from dataclasses import dataclass
import os
from pathlib import Path
import time
from typing import NamedTuple
import xml.etree.ElementTree as ET

from . import comparison_libs, provenance
from .comparison_libs import example_robot_data, pinocchio
import numpy as np

from kron_dynamics import RobotModel
from kron_dynamics.testing.random_urdf import random_urdf

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / 'build' / 'bench_models'
CHAIN_SIZES = (2, 6, 12, 24, 48)
PANDA_FINGERS = ('panda_finger_joint1', 'panda_finger_joint2')


@dataclass
class BenchModel:
    """One benchmark robot: its URDF text, the file it was written to, its kind and size."""

    name: str
    kind: str            # 'panda', 'chain' or 'tree'
    n: int
    urdf: str
    path: Path
    note: str = ''


def chain_urdf(n: int) -> str:
    """Return URDF text of a random serial chain: n revolute joints and 1 fixed joint."""
    return random_urdf(np.random.default_rng(1000 + n), n, n_fixed=1, prismatic_fraction=0.0,
                       massless_fraction=0.0, branching=0.0, name=f'chain_{n}', damping=False,
                       continuous_fraction=0.0)


def tree_urdf() -> str:
    """Return URDF text of a random 12-DOF branching tree (prismatic joints, 2 fixed)."""
    return random_urdf(np.random.default_rng(2000), 12, n_fixed=2, prismatic_fraction=0.2,
                       massless_fraction=0.0, branching=0.5, name='tree_12', damping=False,
                       continuous_fraction=0.0)


# example-robot-data files of the Pinocchio benchmarks (relative to its robots directory)
PANDA = 'panda_description/urdf/panda.urdf'
TALOS = 'talos_data/robots/talos_reduced.urdf'
SOLO = 'solo_description/robots/solo12.urdf'
TIAGO = 'tiago_description/robots/tiago.urdf'


FILES = {'panda': PANDA, 'talos': TALOS, 'solo12': SOLO, 'tiago': TIAGO}


def random_state(model, rng):
    """Return (q, v, dv): q by random_configuration (base within 0.5 m), v, dv in [-1, 1]."""
    q = model.random_configuration(rng, base_box=0.5)
    return q, rng.uniform(-1, 1, model.nv), rng.uniform(-1, 1, model.nv)


def random_batch(pair, rng, N: int):
    """Return (Q, V, A) of N random states and the same states as Pinocchio's lists."""
    Q, V, A = (np.stack(x) for x in zip(*(random_state(pair.m, rng) for _ in range(N))))
    return (Q, V, A), ([pair.q(x) for x in Q], [pair.v(x) for x in V], [pair.v(x) for x in A])


def example_pair(pin, robots: Path, robot: str, base=None, mimic: bool = False):
    """
    Return ours and Pinocchio's model (a PinocchioPair) of a robot of example-robot-data.

    ``robot``: a key of FILES, or 'panda_fixed' (the Panda with its fingers fixed,
    :func:`panda_urdf`); ``base``: None, 'floating' or 'planar'; ``mimic``: Pinocchio's
    mimic model (ours reads the mimic tags always).
    """
    from kron_dynamics.testing.pinocchio_pair import PinocchioPair
    if robot == 'panda_fixed':
        xml = panda_urdf(Path(robots) / PANDA)
        return PinocchioPair(RobotModel.from_urdf_string(xml), pin.buildModelFromXML(xml))
    path = Path(robots) / FILES[robot]
    joint = {'floating': pin.JointModelFreeFlyer, 'planar': pin.JointModelPlanar}.get(base)
    extra = {'mimic': True} if mimic else {}
    theirs = (pin.buildModelFromUrdf(str(path), joint(), **extra) if joint else
              pin.buildModelFromUrdf(str(path), **extra))
    return PinocchioPair(RobotModel.from_urdf_file(path, root_joint=base), theirs)


def panda_source(robots_dir) -> Path:
    """Return the path of example-robot-data's panda.urdf (under share/example-robot-data)."""
    candidates = [Path(robots_dir) / 'panda_description' / 'urdf' / 'panda.urdf',
                  *sorted(Path(robots_dir).glob('**/panda.urdf'))]
    for path in candidates:
        if path.is_file():
            return path
    raise FileNotFoundError(f'no panda.urdf under {robots_dir}')


def stripped_urdf(source: Path, fixed=()) -> str:
    """
    Return a URDF's text as every library reads it alike: no geometry, mimic, damping.

    <visual>, <collision>, <mimic>, <dynamics> (MuJoCo would add damping as a passive force;
    none of it enters M, C, G) and the non-standard <safety_controller>, <transmission> and
    <gazebo> go; the joints named in ``fixed`` become fixed joints.
    """
    root = ET.fromstring(Path(source).read_text(encoding='utf-8'))
    for element in list(root):
        if element.tag in ('transmission', 'gazebo'):
            root.remove(element)
    for element in root.iter():
        for child in list(element):
            if child.tag in ('visual', 'collision', 'mimic', 'dynamics', 'safety_controller'):
                element.remove(child)
    for joint in root.findall('joint'):
        if joint.get('name') in fixed:
            joint.set('type', 'fixed')
            for child in list(joint):
                if child.tag in ('axis', 'limit'):
                    joint.remove(child)
    ET.indent(root)
    return '<?xml version="1.0"?>\n' + ET.tostring(root, encoding='unicode') + '\n'


def panda_urdf(source: Path) -> str:
    """Return the Panda's URDF text (:func:`stripped_urdf`) with its finger joints fixed."""
    return stripped_urdf(source, PANDA_FINGERS)


class BenchRun(NamedTuple):
    """What a Pinocchio benchmark's main starts with (:func:`pinocchio_bench`)."""

    args: argparse.Namespace
    budget: float
    repeat: int
    log: Callable
    pin: object
    robots_dir: Path
    start: float


def pinocchio_bench(doc: str, argv, results_dir: Path, add_arguments=None):
    """
    Parse --quick and --out (and what ``add_arguments(parser)`` adds); find Pinocchio.

    Returns a :class:`BenchRun` (timing budget and repeats: few with --quick; a log that
    stamps the seconds since the start), or None when Pinocchio or example-robot-data is
    missing (the log says which).
    """
    parser = argparse.ArgumentParser(description=doc.split('\n\n')[0])
    parser.add_argument('--quick', action='store_true', help='few repetitions (smoke test)')
    parser.add_argument('--out', default=str(results_dir), help='output directory')
    if add_arguments is not None:
        add_arguments(parser)
    args = parser.parse_args(argv)
    budget, repeat = (0.05, 3) if args.quick else (0.3, 15)
    start = time.time()

    def log(msg):
        print(f'[{time.time() - start:6.1f} s] {msg}', flush=True)

    pin, robots_dir = pinocchio_and_robots(log)
    if pin is None:
        return None
    return BenchRun(args, budget, repeat, log, pin, Path(robots_dir), start)


# the agreement with Pinocchio a benchmark requires before it reports a time
AGREE_TOL = 1e-9


def finish(run: BenchRun, stem: str, body: dict, agreements: dict) -> int:
    """
    Return 1 (saying which) if a case disagrees with Pinocchio beyond AGREE_TOL, else 0.

    ``agreements``: case -> {quantity: relative difference}. Agreeing, the results are
    written to ``stem``.json with the run's settings, the load and the library versions.
    """
    for case, agreement in agreements.items():
        bad = {k: v for k, v in agreement.items() if not v <= AGREE_TOL}
        if bad:
            run.log(f'  {case}: DISAGREEMENT beyond {AGREE_TOL}: {bad}')
            return 1
    import numba
    versions = comparison_libs.versions()
    provenance.write_result(run.args.out, stem, {
        'quick': run.args.quick, 'budget_s': run.budget, 'repeat': run.repeat,
        'numpy': np.__version__, 'numba': numba.__version__,
        'numba_threads': numba.config.NUMBA_NUM_THREADS, 'load_average': list(os.getloadavg()),
        'libraries': {k: v for k, v in versions.items() if k in ('pin', 'example-robot-data')},
        'wall_seconds': round(time.time() - run.start, 1)}, body, run.log)
    return 0


def pinocchio_and_robots(log=print):
    """Return (pin, robots directory) of the Pinocchio benchmarks, or Nones, saying why."""
    pin, _ = pinocchio(log=log)
    robots = find_robots_dir(log)
    return (pin, robots) if pin is not None and robots is not None else (None, None)


def find_robots_dir(log=print):
    """Return example-robot-data's robots directory, or None (saying so)."""
    erd, _ = example_robot_data(log=log)
    return None if erd is None else Path(erd.robots_dir)


def build_models(robots_dir=None, out_dir: Path = BUILD, chain_sizes=CHAIN_SIZES,
                 log=print) -> list[BenchModel]:
    """Write the benchmark URDFs to out_dir and return them (the Panda only if it is found)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    models = []

    def add(name, kind, xml, note=''):
        path = out_dir / f'{name}.urdf'
        path.write_text(xml, encoding='utf-8')
        n = RobotModel.from_urdf_string(xml, source=str(path)).n   # kron_dynamics loads it
        models.append(BenchModel(name, kind, n, xml, path, note))

    if robots_dir is not None:
        try:
            source = panda_source(robots_dir)
            add('panda', 'panda', panda_urdf(source),
                f'example-robot-data {source.relative_to(Path(robots_dir).parent)}: fingers '
                'fixed, no mimic, no geometry, no damping')
        except (OSError, ValueError) as exc:
            log(f'panda: not available: {exc}')
    for n in chain_sizes:
        add(f'chain_{n}', 'chain', chain_urdf(n), f'{n} revolute joints, 1 fixed')
    add('tree_12', 'tree', tree_urdf(), 'random branching tree, prismatic joints, 2 fixed')
    return models
