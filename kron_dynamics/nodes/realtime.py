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
Real-time settings of a node: SCHED_FIFO priority and CPU affinity, locked memory.

The settings of ros2_control's ``ros2_control_node`` (``thread_priority``, ``cpu_affinity``,
``lock_memory``), as read-only node parameters of every kron_dynamics node, applied as it
applies them:

- ``thread_priority`` (int, 0 = leave the scheduling as it is): the thread that spins the
  executor (the one that runs every callback: joint state in, torques out) runs under
  ``SCHED_FIFO`` at this priority (1-99). ros2_control does the same for its control-loop
  thread only; the middleware's threads (DDS receive, event and discovery threads, started
  when the node was created) keep normal scheduling, so a node here never competes at
  real-time priority with a controller_manager loop on the same core through threads it
  does not control. Threads the executor thread starts later (numba's worker pool on its
  first parallel call) inherit its policy. To give the DDS threads real-time priority as
  well, configure them in the middleware (Fast DDS: ``<thread_settings>`` in an XML profile).
- ``middleware_thread_priority`` (int, 0 = leave them as they are): SCHED_FIFO at this
  priority for every other thread of the process, the DDS threads that receive the messages
  among them; for a machine where no other real-time loop competes with them. Measured under
  load (bench/ros_latency.py, README "Real-time settings"), the receive thread's time slice
  is most of what remains of the latency tail once the executor thread is real-time.
- ``cpu_affinity`` (integer array, [] = any CPU): the CPUs the executor thread may run on
  (ros2_control: the thread that starts its control loop).
- ``lock_memory`` (bool): ``mlockall`` the current and future memory of the process, so it
  never waits for a page to be read back in.

Values that cannot be valid raise ConfigurationError (the node exits with the reason);
missing permissions (``CAP_SYS_NICE``, ``rtprio`` and ``memlock`` limits) are reported by
``apply`` so that the node can warn and run on with normal scheduling, as ros2_control does.
"""

import ctypes
import ctypes.util
import errno
import os
import threading

from rclpy.exceptions import ParameterUninitializedException
from rclpy.node import Node
from rclpy.parameter import Parameter

from ..errors import ConfigurationError
from .parameters import declare

PARAMETERS = ('thread_priority', 'cpu_affinity', 'lock_memory', 'middleware_thread_priority')
MCL_CURRENT, MCL_FUTURE = 1, 2
PERMISSION_HINT = ('needs root, CAP_SYS_NICE / CAP_IPC_LOCK, or rtprio and memlock limits '
                   '(e.g. "@realtime - rtprio 98" and "@realtime - memlock unlimited" in '
                   '/etc/security/limits.conf)')
WHY = 'applied once, when the node starts spinning'


def declare_parameters(node: Node) -> None:
    """Declare thread_priority, cpu_affinity and lock_memory (read-only) on a node."""
    declare(node, 'thread_priority', 0,
            'SCHED_FIFO priority 1-99 of the executor thread (the one that runs every '
            'callback; DDS threads keep normal scheduling); 0: normal scheduling', WHY)
    declare(node, 'cpu_affinity', (Parameter.Type.INTEGER_ARRAY, []),
            'CPUs the executor thread may run on; []: any', WHY)
    declare(node, 'lock_memory', False,
            'lock the current and future memory of the process into RAM (mlockall)', WHY)
    declare(node, 'middleware_thread_priority', 0,
            'SCHED_FIFO priority 1-99 of every other thread of the process (the DDS threads '
            'that receive messages); 0: normal scheduling, as ros2_control leaves them', WHY)


def _priority(value, name: str) -> int:
    """Return a checked priority parameter (0 or a SCHED_FIFO priority)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigurationError(f'parameter {name} must be an integer, got {value!r}')
    low = os.sched_get_priority_min(os.SCHED_FIFO)
    high = os.sched_get_priority_max(os.SCHED_FIFO)
    if value != 0 and not low <= value <= high:
        raise ConfigurationError(f'parameter {name} must be 0 (normal scheduling) '
                                 f'or a SCHED_FIFO priority {low}-{high}, got {value}')
    return value


def validate(priority, cpus, lock, middleware=0) -> tuple:
    """Return (priority, cpus or None, lock, middleware) checked; errors name the parameter."""
    priority = _priority(priority, 'thread_priority')
    middleware = _priority(middleware, 'middleware_thread_priority')
    cpus = [int(c) for c in (cpus or [])]
    if not cpus:
        cpus = None
    else:
        available = sorted(os.sched_getaffinity(0))
        unknown = [c for c in cpus if c not in available]
        if unknown:
            raise ConfigurationError(f'parameter cpu_affinity names CPU(s) {unknown} that this '
                                     f'process cannot use (available: {available})')
        cpus = sorted(set(cpus))
    if not isinstance(lock, bool):
        raise ConfigurationError(f'parameter lock_memory must be true or false, got {lock!r}')
    return priority, cpus, lock, middleware


def set_thread_priority(priority: int) -> None:
    """Put the calling thread under SCHED_FIFO at priority (threads it starts inherit it)."""
    os.sched_setscheduler(threading.get_native_id(), os.SCHED_FIFO, os.sched_param(priority))


def set_other_threads_priority(priority: int) -> int:
    """Put every thread of the process but the calling one under SCHED_FIFO; return the count."""
    me, count = threading.get_native_id(), 0
    for tid in os.listdir('/proc/self/task'):
        if int(tid) == me:
            continue
        try:
            os.sched_setscheduler(int(tid), os.SCHED_FIFO, os.sched_param(priority))
            count += 1
        except ProcessLookupError:   # the thread ended meanwhile
            pass
    return count


def set_cpu_affinity(cpus) -> None:
    """Restrict the calling thread to the given CPUs (threads it starts inherit it)."""
    os.sched_setaffinity(threading.get_native_id(), cpus)


def lock_memory() -> None:
    """Lock the process's current and future pages into RAM (mlockall); OSError if refused."""
    libc = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6', use_errno=True)
    if libc.mlockall(MCL_CURRENT | MCL_FUTURE) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def apply(priority: int = 0, cpus=None, lock: bool = False, middleware: int = 0) -> list:
    """
    Apply validated settings to the calling thread (memory: the process); return what was done.

    Call it from the thread that will spin the executor; one line per setting.

    A setting the process has no permission for is skipped and its line starts with
    ``'could not'`` (the caller warns); invalid values raise ConfigurationError before anything is
    changed.
    """
    priority, cpus, lock, middleware = validate(priority, cpus, lock, middleware)
    done = []
    steps = []
    if lock:
        steps.append(('lock memory (mlockall)', lock_memory, 'locked memory (mlockall)'))
    if cpus is not None:
        steps.append((f'set CPU affinity {cpus}', lambda: set_cpu_affinity(cpus),
                      f'CPU affinity {cpus} for the executor thread'))
    if priority:
        steps.append((f'set SCHED_FIFO priority {priority}',
                      lambda: set_thread_priority(priority),
                      f'SCHED_FIFO priority {priority} for the executor thread'))
    if middleware:
        steps.append((f'set SCHED_FIFO priority {middleware} for the other threads',
                      lambda: set_other_threads_priority(middleware),
                      f'SCHED_FIFO priority {middleware} for the other threads (DDS)'))
    for action, step, result in steps:
        try:
            step()
        except OSError as exc:
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
            hint = f'; {PERMISSION_HINT}' if exc.errno in (errno.EPERM, errno.ENOMEM) else ''
            done.append(f'could not {action} ({reason}){hint}; running without it')
            continue
        done.append(result)
    return done


def configure_node(node: Node) -> list:
    """Declare the parameters if the node has not, apply them; return apply()'s lines."""
    if not node.has_parameter('thread_priority'):
        declare_parameters(node)
    values = []
    for name in PARAMETERS:
        try:
            values.append(node.get_parameter(name).value)
        except ParameterUninitializedException:
            values.append(None)
    return apply(*values)
