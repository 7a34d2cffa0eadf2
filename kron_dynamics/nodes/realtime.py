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
Real-time settings of a node process: SCHED_FIFO priority, CPU affinity, locked memory.

The settings of ros2_control's controller_manager (``thread_priority``, ``cpu_affinity``,
``lock_memory``), as node parameters of every kron_dynamics node:

- ``thread_priority`` (int, 0 = leave the scheduling as it is): run every thread of the
  process under ``SCHED_FIFO`` at this priority (1-99), so that a joint state is handled as
  soon as it arrives instead of waiting behind other processes' time slices. On a loaded
  machine this is what bounds the latency tail (bench/ros_latency.py).
- ``cpu_affinity`` (integer array, unset = any CPU): the CPUs the process may run on.
- ``lock_memory`` (bool): ``mlockall`` the current and future memory, so the process never
  waits for a page to be read back in.

They are applied to every thread of the process, because rclpy's and the DDS middleware's
threads (which receive the messages) already exist when a node reads its parameters;
threads started later inherit them from the thread that starts them. Values that cannot be
valid raise ConfigurationError (the node exits with the reason); missing permissions
(``CAP_SYS_NICE``, ``rtprio`` and ``memlock`` limits) are reported by ``apply`` so that the
node can warn and run on with normal scheduling, as ros2_control does.
"""

import ctypes
import ctypes.util
import errno
import os

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import ParameterUninitializedException
from rclpy.node import Node
from rclpy.parameter import Parameter

from ..errors import ConfigurationError

PARAMETERS = ('thread_priority', 'cpu_affinity', 'lock_memory')
MCL_CURRENT, MCL_FUTURE = 1, 2
PERMISSION_HINT = ('needs root, CAP_SYS_NICE / CAP_IPC_LOCK, or rtprio and memlock limits '
                   '(e.g. "@realtime - rtprio 98" and "@realtime - memlock unlimited" in '
                   '/etc/security/limits.conf)')


def declare_parameters(node: Node) -> None:
    """Declare thread_priority, cpu_affinity and lock_memory (read-only) on a node."""
    node.declare_parameter('thread_priority', 0, ParameterDescriptor(
        description='SCHED_FIFO priority 1-99 of every thread; 0: normal scheduling',
        read_only=True))
    node.declare_parameter('cpu_affinity', Parameter.Type.INTEGER_ARRAY, ParameterDescriptor(
        description='CPUs the process may run on; unset: any', read_only=True))
    node.declare_parameter('lock_memory', False, ParameterDescriptor(
        description='lock current and future memory into RAM (mlockall)', read_only=True))


def thread_ids() -> list:
    """Return the ids of the threads of this process."""
    return sorted(int(tid) for tid in os.listdir('/proc/self/task'))


def validate(priority, cpus, lock) -> tuple:
    """Return (priority, cpus or None, lock) checked; ConfigurationError naming the parameter."""
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise ConfigurationError(f'parameter thread_priority must be an integer, got {priority!r}')
    low = os.sched_get_priority_min(os.SCHED_FIFO)
    high = os.sched_get_priority_max(os.SCHED_FIFO)
    if priority != 0 and not low <= priority <= high:
        raise ConfigurationError(f'parameter thread_priority must be 0 (normal scheduling) '
                                 f'or a SCHED_FIFO priority {low}-{high}, got {priority}')
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
    return priority, cpus, lock


def set_thread_priority(priority: int) -> int:
    """Put every thread of the process under SCHED_FIFO at priority; return the count."""
    param = os.sched_param(priority)
    count = 0
    for tid in thread_ids():
        try:
            os.sched_setscheduler(tid, os.SCHED_FIFO, param)
            count += 1
        except ProcessLookupError:   # the thread ended meanwhile
            pass
    return count


def set_cpu_affinity(cpus) -> int:
    """Restrict every thread of the process to the given CPUs; return the count."""
    count = 0
    for tid in thread_ids():
        try:
            os.sched_setaffinity(tid, cpus)
            count += 1
        except ProcessLookupError:
            pass
    return count


def lock_memory() -> None:
    """Lock the process's current and future pages into RAM (mlockall); OSError if refused."""
    libc = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6', use_errno=True)
    if libc.mlockall(MCL_CURRENT | MCL_FUTURE) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def apply(priority: int = 0, cpus=None, lock: bool = False) -> list:
    """
    Apply validated settings to the whole process; return what was done, one line each.

    A setting the process has no permission for is skipped and its line starts with
    ``'could not'`` (the caller warns); invalid values raise ConfigurationError before anything is
    changed.
    """
    priority, cpus, lock = validate(priority, cpus, lock)
    done = []
    steps = []
    if lock:
        steps.append(('lock memory (mlockall)', lock_memory, 'locked memory (mlockall)'))
    if cpus is not None:
        steps.append((f'set CPU affinity {cpus}', lambda: set_cpu_affinity(cpus),
                      f'CPU affinity {cpus}'))
    if priority:
        steps.append((f'set SCHED_FIFO priority {priority}',
                      lambda: set_thread_priority(priority),
                      f'SCHED_FIFO priority {priority}'))
    for action, step, result in steps:
        try:
            count = step()
        except OSError as exc:
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
            hint = f'; {PERMISSION_HINT}' if exc.errno in (errno.EPERM, errno.ENOMEM) else ''
            done.append(f'could not {action} ({reason}){hint}; running without it')
            continue
        done.append(result + (f' on {count} threads' if count is not None else ''))
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
