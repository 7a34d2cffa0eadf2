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
What the ROS benchmarks share (ros_latency.py, startup.py): the model, a snapshot of the
sources the nodes run from, their environment, the joint-state trajectory and the options.
"""

import compileall
import hashlib
import math
import os
from pathlib import Path
import random
import shutil
import sys

import numpy as np

REPO = Path(__file__).resolve().parent.parent.parent
BENCH = REPO / 'bench'
DEV_URDF = REPO / 'urdf' / 'rover_arm.urdf'
BUILD = REPO / 'build' / 'ros_bench'
PANDA_FILE = BUILD / 'panda.urdf'   # written by default_urdf
PARAMS = REPO / 'config' / 'dynamics.yaml'
OUTPUT_TOPIC = {'dynamics': '/dynamics_node/bias_torque', 'echo': '/echo_node/echo'}


def default_urdf(log=print):
    """Return (URDF path, label): the 7-DOF Panda of bench/lib/models.py, else the rover."""
    try:
        from . import models as bench_models
        robots = bench_models.find_robots_dir(log=log)
        if robots is None:
            raise FileNotFoundError('example-robot-data not available')
        text = bench_models.panda_urdf(bench_models.panda_source(robots))
    except Exception as exc:   # bench_models or example-robot-data missing or broken
        log(f'WARNING: no Panda ({type(exc).__name__}: {exc}); using {DEV_URDF.name}')
        return DEV_URDF, f'rover_arm (Panda unavailable: {type(exc).__name__}: {exc})'
    PANDA_FILE.parent.mkdir(parents=True, exist_ok=True)
    PANDA_FILE.write_text(text, encoding='utf-8')
    return PANDA_FILE, 'panda (example-robot-data, 7 DOF, fingers fixed)'


def snapshot_sources(dest: Path) -> str:
    """
    Copy kron_dynamics/ to dest/kron_dynamics and byte-compile it; return its sha256 (12 hex).

    The nodes run from the copy (PYTHONPATH, see node_env), so the benchmark measures the
    sources as they were when it started even if they are being edited meanwhile.
    """
    target = dest / 'kron_dynamics'
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(REPO / 'kron_dynamics', target,
                    ignore=shutil.ignore_patterns('__pycache__'))
    # bytecode as an installed package has it (PYTHONDONTWRITEBYTECODE may be set)
    compileall.compile_dir(target, quiet=1)
    digest = hashlib.sha256()
    for path in sorted(target.rglob('*.py')):
        digest.update(str(path.relative_to(dest)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def node_command(key: str, urdf: Path, *ros_args: str) -> list:
    """Return the command line of dynamics_node (PARAMS, the URDF) or the echo node."""
    if key == 'dynamics':
        return [sys.executable, '-m', 'kron_dynamics.nodes.dynamics_node', '--ros-args',
                '--params-file', str(PARAMS), '-p', f'urdf_file:={urdf}', *ros_args]
    return [sys.executable, str(BENCH / 'echo_node.py'), '--ros-args', *ros_args]


def node_env(src) -> dict:
    """Return the environment of a node process: unbuffered, sources from src if given."""
    env = dict(os.environ, PYTHONUNBUFFERED='1')
    if src is not None:
        env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(src), env.get('PYTHONPATH')]))
    return env


def cpu_seconds(pid: int) -> float:
    """Return the user + system CPU time of a process in seconds."""
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


class Trajectory:
    """Joint states of message k: sums of sines at incommensurate frequencies (all distinct)."""

    def __init__(self, n: int, rate: float):
        j = np.arange(n)
        self.rate = rate
        self.amp = 0.4 + 0.05 * j
        self.omega = 2 * math.pi * (0.13 + 0.071 * math.sqrt(2) * (j + 1))
        self.phase = 0.7 * j
        self.offset = np.where(j % 2, -0.3, 0.2)

    def state(self, k: int):
        """Return (q, qd) of message k as lists."""
        arg = self.omega * (k / self.rate) + self.phase
        q = self.offset + self.amp * np.sin(arg)
        qd = self.amp * self.omega * np.cos(arg)
        return q.tolist(), qd.tolist()


def add_common_arguments(parser, result_file: str) -> None:
    """Add the options this script and startup.py share: --urdf, --in-tree, --out."""
    parser.add_argument('--urdf', help='URDF file (default: the 7-DOF Panda of '
                        'bench/lib/models.py)')
    parser.add_argument('--in-tree', action='store_true',
                        help='run the nodes from kron_dynamics/ itself, not from a copy')
    parser.add_argument('--out', default=str(BENCH / 'results' / result_file))


def prepare(args, copy_name: str):
    """Isolate ROS, pick the model, snapshot the sources; return (urdf, label, src, sha)."""
    os.environ.setdefault('ROS_DOMAIN_ID', str(random.randint(100, 200)))
    os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    os.environ.setdefault('AMENT_PREFIX_PATH', sys.prefix)
    if args.urdf:
        urdf, label = Path(args.urdf).resolve(), Path(args.urdf).stem
    else:
        urdf, label = default_urdf()
    print(f'model: {label} ({urdf})')
    src, sources = None, 'in tree'
    if not args.in_tree:
        src = BUILD / copy_name
        sources = snapshot_sources(src)
        print(f'nodes run from a copy of kron_dynamics/ in {src} (sha256 {sources})')
    return urdf, label, src, sources
