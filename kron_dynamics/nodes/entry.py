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
Entry points of the node processes (console scripts, ``python -m kron_dynamics.nodes NAME``).

The signal handlers of :mod:`.shutdown` are installed before the node's module (NumPy,
numba, rclpy: about two seconds) is imported, so that a Ctrl-C at any moment of start-up
ends the process at once with exit status 0.
"""

import importlib
import sys

from .shutdown import die_with_parent, Interrupted, PROCESS

NODES = {
    'dynamics_node': 'DynamicsNode',
    'computed_torque_controller': 'ComputedTorqueController',
    'plant_simulator': 'PlantSimulator',
    'reference_generator': 'ReferenceGenerator',
}


def interrupted(exc: BaseException) -> bool:
    """
    Return True if a start-up signal (:class:`Interrupted`) is in exc's chain of causes.

    A signal that lands while an extension module initialises (rclpy's C library) comes out
    as that module's ``ImportError: initialization failed``, caused by the Interrupted that
    the handler raised: a Ctrl-C all the same.
    """
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, Interrupted):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def run(name: str, args=None) -> int:
    """Run the node ``name`` (a key of NODES) with ROS arguments ``args``; return the status."""
    PROCESS.install()
    try:
        die_with_parent()           # a demo runner's child: end with it
        module = importlib.import_module(f'{__package__}.{name}')
        from .executor import run_node
    except BaseException as exc:        # Interrupted, or an import it broke
        if not (interrupted(exc) or PROCESS.stopped_starting(exc, name)):
            raise
        PROCESS.finish_cleanup()
        return 0
    return run_node(getattr(module, NODES[name]), args)


def main(argv=None) -> int:
    """``python -m kron_dynamics.nodes NAME [--ros-args ...]``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] not in NODES:
        print(f'usage: python -m kron_dynamics.nodes {{{",".join(NODES)}}} [--ros-args ...]',
              file=sys.stderr)
        return 2
    return run(argv[0], [sys.argv[0], *argv[1:]])


def dynamics_node() -> int:
    """Console script dynamics_node."""
    return run('dynamics_node')


def computed_torque_controller() -> int:
    """Console script computed_torque_controller."""
    return run('computed_torque_controller')


def plant_simulator() -> int:
    """Console script plant_simulator."""
    return run('plant_simulator')


def reference_generator() -> int:
    """Console script reference_generator."""
    return run('reference_generator')
