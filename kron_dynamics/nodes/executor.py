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

"""Running a node: executor, signals, start-up errors, compiled kernels loaded up front."""

import signal
import sys
import threading

import numpy as np
import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions

from ..errors import ConfigurationError, ModelError
from ..robot_model import RobotModel
from . import realtime


def warm_up(model: RobotModel) -> None:
    """Evaluate the model once so that compiled kernels are loaded before the first message."""
    z = np.zeros(model.n)
    model.inverse_dynamics(z, z, z)
    model.bias_torque(z, z)
    model.gravity_torque(z)
    model.mass_matrix(z)
    model.coriolis_star(z)


def make_executor(context=None):
    """Return rclpy's EventsExecutor (several times less overhead per message) if available."""
    try:
        from rclpy.experimental import EventsExecutor
        return EventsExecutor(context=context)
    except ImportError:  # older rclpy
        return SingleThreadedExecutor(context=context)


def run_node(node_class, args=None) -> int:
    """
    Create and spin a node until SIGINT or SIGTERM; exit code 1 on a model/parameter error.

    The signals only set a flag that the spin loop checks, so they never interrupt a
    callback (or compiled code) half way.
    """
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    node = None
    executor = make_executor()
    try:
        node = node_class()
        for line in realtime.configure_node(node):
            log = node.get_logger()
            (log.warning if line.startswith('could not') else log.info)(line)
        executor.add_node(node)
        while not stop.is_set() and rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
    except (ModelError, ConfigurationError) as exc:
        print(f'{node_class.__name__}: {exc}', file=sys.stderr)
        return 1
    except ExternalShutdownException:
        pass
    finally:
        executor.shutdown()
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0
