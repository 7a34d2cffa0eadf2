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

"""Running a node: executor, shutdown, start-up errors, compiled kernels loaded up front."""

import functools
import logging
import sys
import traceback
import weakref

import numpy as np
import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.logging import LoggingSeverity
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from ..errors import ConfigurationError, ModelError
from ..robot_model import RobotModel
from . import realtime
from .shutdown import Interrupted, native_exit_handler, PROCESS
from .parameters import ParameterTypes
from .throttled_logger import ThrottledLogger


class LibraryLog(logging.Handler):
    """
    The package's Python log records (logger ``kron_dynamics``) in a node's ROS log.

    The loader's warnings (a joint that moves a tiny inertia, a joint locked outside its
    limits, an inertia loaded with ``inertia_check='warn'``) went to stderr through
    Python's last-resort handler: no severity, no node name, not on /rosout, deaf to
    ``--log-level``. While a node of this package exists in the process, this handler on
    logger ``kron_dynamics`` sends each record to the ROS logger ``<node>.kron_dynamics`` of
    the newest such node, at the record's severity (the numbers are the same), where the
    node's log level decides; being a handler, it keeps the last-resort handler quiet.
    Python's logger filters records by level before any handler sees them, so while the
    logger has no level of its own (``NOTSET``: the process set none) the handler gives it
    that node's ROS level when it is lower than the one the logger inherits (``--log-level
    debug`` shows the loader's debug lines) and takes it back with the node; a level the
    process set is kept. It changes nothing else of the logger (propagation, other
    handlers: an application's own handlers still get the records) and it is tied to the
    nodes' life: added with the first node, removed when the last one is destroyed. A node
    that is gone without ``destroy_node`` (collected after its constructor failed) no
    longer counts.
    """

    def __init__(self):
        super().__init__(logging.NOTSET)
        # (weak reference to a node, its ROS logger, that logger's level), oldest first
        self._nodes = []
        self._level = None          # the level this handler gave the logger, if any

    def attach(self, node) -> None:
        """Send the library's records to ``node``'s logger ``<node>.kron_dynamics`` from now."""
        log = node.get_logger().get_child('kron_dynamics')
        entry = (weakref.ref(node, self._collected), log, int(log.get_effective_level()))
        self._update(lambda nodes: [*nodes, entry])

    def detach(self, node) -> None:
        """Stop sending records to ``node``'s logger; with no node left, remove the handler."""
        self._update(lambda nodes: [entry for entry in nodes if entry[0]() is not node])

    def _collected(self, _) -> None:
        """Forget a node collected without ``destroy_node`` (its constructor failed)."""
        self._update(lambda nodes: nodes)

    def _update(self, change) -> None:
        """
        Change the list of nodes (dropping collected ones); set the handler and level to match.

        Under logging's own lock, and the logger's list of handlers is replaced, not changed
        in place: this runs from the garbage collector too, possibly while that list is being
        walked for a record.
        """
        library = logging.getLogger('kron_dynamics')
        with logging._lock:     # what Logger.addHandler / removeHandler hold (3.11 to 3.13)
            self._nodes = [entry for entry in change(self._nodes) if entry[0]() is not None]
            others = [h for h in library.handlers if h is not self]
            library.handlers = [*others, self] if self._nodes else others
            if self._level is not None and library.level != self._level:
                self._level = None      # the process set a level since: it stays
            if self._level is None and library.level != logging.NOTSET:
                return
            inherited = library.parent.getEffectiveLevel()
            wanted = self._nodes[-1][2] if self._nodes else inherited
            if logging.NOTSET < wanted < inherited:
                self._level = wanted
                library.setLevel(wanted)
            elif self._level is not None:
                self._level = None
                library.setLevel(logging.NOTSET)

    def emit(self, record: logging.LogRecord) -> None:
        """Log one record on the newest live node's ROS logger at its severity."""
        nodes = [log for ref, log, _ in self._nodes if ref() is not None]
        if not nodes:       # collected, its callback not run yet: as if this were not here
            if not _other_handlers(logging.getLogger('kron_dynamics'), self) \
                    and logging.lastResort is not None \
                    and record.levelno >= logging.lastResort.level:
                logging.lastResort.handle(record)
            return
        try:
            level = min(max(record.levelno // 10 * 10, logging.DEBUG), logging.CRITICAL)
            nodes[-1].log(record.getMessage(), LoggingSeverity(level))
        except Exception:   # noqa: B902 (as every logging handler: never into the caller)
            self.handleError(record)


def _other_handlers(logger: logging.Logger, handler: logging.Handler) -> bool:
    """Return True if a record of ``logger`` meets a handler besides ``handler`` (callHandlers)."""
    while logger is not None:
        if any(h is not handler for h in logger.handlers):
            return True
        logger = logger.parent if logger.propagate else None
    return False


LIBRARY_LOG = LibraryLog()


class DeferringNode(Node):
    """
    rclpy's Node whose calls into rclpy are never cut half way by a start-up signal.

    A node's constructor loads its model (seconds on a cold cache) between the calls that
    create its publishers, subscriptions, services and parameters. A SIGINT or SIGTERM
    there ends the start-up at once (:mod:`.shutdown`), but one that lands inside such a
    call left the node's lists inconsistent, and rclpy's clean-up then failed with a
    traceback (``list.remove(x): x not in list`` in ``destroy_node``). These calls run with
    the signal deferred to their end (:meth:`.shutdown.ProcessShutdown.signals_deferred`).
    """

    def __init__(self, *args, **kwargs):
        """Create the rclpy node (its handle and parameter services) with signals deferred."""
        with PROCESS.signals_deferred():
            super().__init__(*args, **kwargs)
            LIBRARY_LOG.attach(self)

    def destroy_node(self):
        """Destroy the node; the library's records stop going to its log."""
        LIBRARY_LOG.detach(self)
        return super().destroy_node()


def _deferring(name: str):
    """Return Node's method ``name`` run with start-up signals deferred to its end."""
    method = getattr(Node, name)

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        with PROCESS.signals_deferred():
            return method(self, *args, **kwargs)
    return call


# every Node call that adds to or takes from the node's entities and parameters
for _name in ('create_publisher', 'create_subscription', 'create_service', 'create_client',
              'create_timer', 'create_guard_condition', 'add_waitable', 'remove_waitable',
              'destroy_publisher', 'destroy_subscription', 'destroy_service',
              'destroy_client', 'destroy_timer', 'declare_parameter', 'declare_parameters',
              'undeclare_parameter', 'set_parameters', 'add_on_set_parameters_callback',
              'add_post_set_parameters_callback', 'add_pre_set_parameters_callback'):
    if hasattr(Node, _name):
        setattr(DeferringNode, _name, _deferring(_name))


def warm_up(model: RobotModel) -> None:
    """Evaluate the model once so that compiled kernels are loaded before the first message."""
    fixed = getattr(model, 'fixed', model)      # a floating base: its tree's kernels
    z = np.zeros(fixed.n)
    fixed.inverse_dynamics(z, z, z)
    fixed.bias_torque(z, z)
    fixed.gravity_torque(z)
    fixed.mass_matrix(z)
    fixed.coriolis_star(z)
    if fixed is not model:
        q, v = model.neutral(), np.zeros(model.nv)
        model.bias_torque(q, v)
        model.jacobian(q, model.base_link)


def make_executor(context=None):
    """Return rclpy's EventsExecutor (several times less overhead per message) if available."""
    try:
        from rclpy.experimental import EventsExecutor
        return EventsExecutor(context=context)
    except ImportError:  # older rclpy
        return SingleThreadedExecutor(context=context)


def spin(executor, log) -> None:
    """
    Spin until shutdown is requested; a callback that raises is logged, and spinning goes on.

    Every callback handles the faults it knows (bad messages, refused publishing); this is
    the last guard, so that a defect met by one message cannot stop a torque loop.
    """
    guard = ThrottledLogger(log)
    while not PROCESS.requested.is_set() and rclpy.ok():
        try:
            executor.spin_once(timeout_sec=0.1)
        except (ExternalShutdownException, Interrupted):
            raise
        except Exception:   # noqa: B902 (any defect; logged with its traceback)
            guard.warning('callback', 'a callback failed (the node goes on):\n'
                          + traceback.format_exc(limit=8))


def shutdown_rclpy() -> None:
    """
    Shut rclpy's default context down, leaving SIGINT's and SIGTERM's handlers as they are.

    ``rclpy.try_shutdown`` uninstalls rclpy's signal handlers by default, also where none
    were installed (``SignalHandlerOptions.NO``, as here): for each of SIGINT and SIGTERM it
    puts back the action saved at install time (none: SIG_DFL) and then, finding that the
    one it replaced was not its own, that one again. A signal between the two calls meets
    the default action: a node stopping on a burst of SIGTERMs ended with status -15 (a
    loaded CI run). rclpy's deferred signal thread, which that call also ends, is ended by
    rclpy's own clean-up at exit.
    """
    rclpy.try_shutdown(uninstall_handlers=False)


def route_warnings(log) -> None:
    """
    Send Python warnings to the node's ROS logger, one line each, throttled; quiet NumPy.

    A node checks every output for finite values within bounds and says why one is
    withheld, so NumPy's floating-point RuntimeWarnings ('overflow encountered in matmul')
    would only repeat that on stderr, outside the ROS log: they are turned off. Any other
    warning (a deprecation, a library's notice) goes to the ROS logger as one line, at most
    once a second per kind.
    """
    import re
    import warnings
    np.seterr(all='ignore')
    throttled = ThrottledLogger(log)

    def show(message, category, filename, lineno, file=None, line=None):
        text = ' '.join(str(message).split())
        key = f"{category.__name__} {re.sub(r'[0-9.]+', '#', text)[:80]}"
        throttled.warning(key, f'{category.__name__}: {text} ({filename}:{lineno})')

    warnings.showwarning = show


def run_node(node_class, args=None) -> int:
    """
    Create and spin a node until SIGINT or SIGTERM; exit code 1 on a model/parameter error.

    Signals are handled by :mod:`.shutdown`: during start-up the first one ends it at once,
    while spinning they only set a flag that the spin loop checks between callbacks, and
    clean-up runs under a watchdog; exit code 0 in every case. The real-time settings are
    applied here, to this thread, which spins the executor.
    """
    PROCESS.install()
    code = 0
    node = executor = None
    try:
        try:
            with PROCESS.signals_deferred():        # rclpy's context in one piece
                rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
                executor = make_executor()
            node = node_class()
            ParameterTypes(node)       # run-time changes: readable type refusals, [] accepted
            log = node.get_logger()
            route_warnings(log)
            for line in realtime.configure_node(node):
                (log.warning if line.startswith('could not') else log.info)(line)
            with PROCESS.signals_deferred():
                executor.add_node(node)
            native_exit_handler(0)      # compiled now, so that clean-up need not wait for it
            PROCESS.bound_spin(node.get_name())     # a signal reaches clean-up in bounded time
            PROCESS.spinning = True
            spin(executor, log)
        except (ModelError, ConfigurationError) as exc:
            if not PROCESS.stopped_starting(exc, node_class.__name__):
                print(f'{node_class.__name__}: {exc}', file=sys.stderr, flush=True)
                code = 1
        except ExternalShutdownException:
            pass
        finally:
            PROCESS.start_cleanup(code)
            if executor is not None:
                PROCESS.cleanup_step('executor shutdown', executor.shutdown)
            if node is not None:
                PROCESS.cleanup_step('destroy_node', node.destroy_node)
            PROCESS.cleanup_step('rclpy shutdown', shutdown_rclpy)
            # the DDS participant, under the watchdog
            PROCESS.cleanup_step('context destroy', rclpy.get_default_context().destroy)
            PROCESS.finish_cleanup()
    except Interrupted:   # a signal during start-up, before spinning: a normal stop
        PROCESS.finish_cleanup()
    except Exception as exc:    # noqa: B902 (the step a start-up signal cut short failed)
        if not PROCESS.stopped_starting(exc, node_class.__name__):
            raise
        PROCESS.finish_cleanup()
    return code
