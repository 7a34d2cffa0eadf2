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
Shared fixtures (the oracle values of ../shared/reference, copied into fixtures/) and markers.

Markers (setup.cfg): ``ros`` for tests that start ROS node processes or rclpy contexts,
``slow`` for tests that take more than about 3 s or start any other child process. ``make
check`` runs ``-m "not ros and not slow"``. The markers cannot go stale: a test that starts a
process or an rclpy context without the marker fails, saying which marker it needs.
"""

import importlib.abc
import json
import os
from pathlib import Path
import random
import subprocess
import sys

import pytest

from kron_dynamics import RobotModel

# ROS packages: without rclpy, a test module that imports one of them is skipped, saying so
ROS_PACKAGES = ('rclpy', 'rcl_interfaces', 'rosidl_runtime_py', 'rosidl_parser', 'sensor_msgs',
                'std_msgs', 'trajectory_msgs', 'geometry_msgs', 'nav_msgs',
                'builtin_interfaces', 'kron_dynamics_interfaces', 'launch', 'launch_ros',
                'ament_index_python', 'ament_flake8', 'ament_pep257', 'ament_copyright',
                'ament_xmllint', 'rosgraph_msgs', 'lifecycle_msgs')


class _SkipWithoutRos(importlib.abc.MetaPathFinder):
    """Turn the import of a ROS package into a skip of the test module that needs it."""

    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] not in ROS_PACKAGES:
            return None
        frame, module = sys._getframe(1), 'a test module'
        while frame is not None:           # the test module whose import needs it
            if Path(frame.f_code.co_filename).name.startswith('test_'):
                module = Path(frame.f_code.co_filename).name
                break
            frame = frame.f_back
        raise pytest.skip.Exception(f'{module} needs ROS 2 ({name} is not installed)',
                                    allow_module_level=True)


try:
    import rclpy.context
except ImportError:          # `make check` runs without ROS: what needs it is skipped
    rclpy = None
    sys.meta_path.insert(0, _SkipWithoutRos())

# every rclpy test of this session uses one random, local-only ROS domain (before rclpy.init)
os.environ.setdefault('ROS_DOMAIN_ID', str(random.randint(1, 200)))
os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'

TEST_DIR = Path(__file__).resolve().parent
REPO = TEST_DIR.parent
URDF_DIR = REPO / 'urdf'
ORACLE = json.loads((TEST_DIR / 'fixtures' / 'seed_models.json').read_text())

# oracle model name -> the project's URDF file for it
ORACLE_URDFS = {
    'stacker': 'stacker.urdf',
    'rover_arm': 'rover_arm.urdf',
    'rover_arm_regularized': 'rover_arm_regularized.urdf',
    'rp_arm': 'rp_arm.urdf',
    'planar3r': 'planar3r.urdf',
}


def load_oracle_model(name: str) -> RobotModel:
    """Load the project's URDF of an oracle model with the oracle's joint order."""
    return RobotModel.from_urdf_file(URDF_DIR / ORACLE_URDFS[name],
                                     joint_names=ORACLE['models'][name]['joint_names'])


@pytest.fixture(scope='session')
def oracle():
    """Return the parsed seed_models.json."""
    return ORACLE


@pytest.fixture(scope='session')
def stacker() -> RobotModel:
    """Load the stacker of seed 000 from urdf/stacker.urdf."""
    return load_oracle_model('stacker')


@pytest.fixture(scope='session')
def rover_arm() -> RobotModel:
    """Load the rover rocker arm of seed 003 from urdf/rover_arm.urdf."""
    return load_oracle_model('rover_arm')


@pytest.fixture(scope='module')
def rclpy_context():
    """Yield an rclpy context for nodes made in this process; shut it down after the module."""
    context = rclpy.Context()
    rclpy.init(context=context)
    yield context
    rclpy.try_shutdown(context=context)


def node_in_process(node_class, context, name, parameters=(), remaps=()):
    """Return a node_class node named ``name`` in this process: ``-r`` remaps, ``-p`` values."""
    args = ['--ros-args', '-r', f'__node:={name}']
    for remap in remaps:
        args += ['-r', remap]
    for parameter in parameters:
        args += ['-p', parameter]
    return node_class(context=context, cli_args=args)


# ----------------------------------------------------------------- marker discipline
_running = []   # the test item whose setup, call or teardown is running


def pytest_sessionstart(session):
    """
    Build matplotlib's font cache before any test runs, if it is missing.

    On a machine where it was never built, the first ``import matplotlib.pyplot`` runs
    ``fc-list`` (a child process) inside whichever test plots first; the marker guard below
    would then fail a test that starts no process of its own.
    """
    try:
        import matplotlib.font_manager  # noqa: F401  (builds ~/.cache/matplotlib once)
    except ImportError:
        pass


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Remember which test runs, for the process and rclpy guards below."""
    _running.append(item)
    try:
        yield
    finally:
        _running.pop()


def _require_marker(what: str, markers: tuple) -> None:
    if not _running:
        return
    item = _running[-1]
    if not any(item.get_closest_marker(m) for m in markers):
        pytest.fail(f'{item.nodeid} {what} but is not marked {" or ".join(markers)} '
                    '(setup.cfg; `make check` must start no process and no ROS)',
                    pytrace=False)


_execute_child = subprocess.Popen._execute_child


def _guarded_execute_child(self, args, *rest, **kwargs):
    text = ' '.join(map(str, args)) if isinstance(args, (list, tuple)) else str(args)
    if '--ros-args' in text:      # how every node process here is started
        _require_marker('starts a ROS node process', ('ros',))
    else:
        _require_marker('starts a child process', ('ros', 'slow'))
    return _execute_child(self, args, *rest, **kwargs)


subprocess.Popen._execute_child = _guarded_execute_child
if rclpy is not None:
    _context_init = rclpy.context.Context.init

    def _guarded_context_init(self, *args, **kwargs):
        _require_marker('initializes an rclpy context', ('ros',))
        return _context_init(self, *args, **kwargs)

    rclpy.context.Context.init = _guarded_context_init
