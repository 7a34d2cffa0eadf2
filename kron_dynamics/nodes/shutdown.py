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
SIGINT and SIGTERM of a node process: exit status 0 within a bounded time, whatever comes.

This module imports nothing heavy, so that the console scripts (``entry``) install the
handlers before NumPy, numba and rclpy are loaded. The rules:

- Before the node spins (imports, model loading, kernel compilation: seconds on a cold
  cache), the first signal raises :class:`Interrupted`, which the runner turns into exit 0
  at once; but never inside a call that changes rclpy's state (``rclpy.init``, a node's
  entities and parameters: ``executor.DeferringNode``), where it waits for the call's end,
  so that the clean-up finds rclpy consistent.
- While it spins, a signal only sets :attr:`ProcessShutdown.requested`; the spin loop
  checks it between callbacks, so no callback (or compiled code) is cut half way.
- Python runs that handler only when the main thread is back in the interpreter, so the
  time to reach clean-up is bounded at the C level too (:meth:`ProcessShutdown.bound_spin`):
  while the node spins, the signals go first to a handler in machine code, which starts a
  timer of ``SIGNAL_TO_CLEANUP_S`` and then hands the signal to Python's own handler. If
  clean-up has not begun when it expires (the main thread stuck in native code, or in one
  callback for that long), faulthandler prints where every thread is, and the process
  says so and leaves with ``_exit(0)`` before ``ros2 launch`` escalates to SIGKILL.
- A start-up signal whose :class:`Interrupted` lands in a function that a native library
  calls back (LLVM's object cache, while numba compiles a kernel) is swallowed there
  ("Exception ignored"): it is raised again a moment later where the process runs its own
  Python, and an error of the step it cut short (numba's "no compiled object yet") ends the
  start-up as a normal stop too, with one line on stderr; no traceback, exit status 0.
- Repeated signals (``ros2 launch`` without a terminal sends SIGINT twice, to the process
  group and its own; the kernel sends the parent-death signal once for each thread of the
  parent that ends) change nothing: the first one sets SIGINT and SIGTERM to be ignored
  from then on. Python may still run the handler again inside itself before that, so it
  takes no lock (:class:`SignalFlag`). A signal of the burst that the kernel handed to
  Python's C handler just before SIG_IGN replaced the Python one is reported by CPython as
  an unraisable ``OSError: Signal 15 ignored due to race condition`` when it finds the
  handler ignored: that is the ignoring asked for, so it is not printed.
- Clean-up (executor, node, DDS participant) runs under a watchdog: if it takes longer than
  ``CLEANUP_TIMEOUT_S`` the process leaves with ``os._exit(0)`` after saying so. A clean-up
  stuck in native code that holds the interpreter (no Python thread can run then) is ended
  by machine code: after twice that time faulthandler's own thread prints where it is stuck,
  and a SIGALRM handler compiled by numba (``numba.cfunc``, it needs no interpreter) calls
  ``_exit`` with the same exit status half a second later. Where that handler cannot be
  built, faulthandler ends the process itself (status 1).
- Each clean-up step that fails is reported on stderr and the next one still runs. rclpy is
  shut down without its uninstall of signal handlers (``executor.shutdown_rclpy``), which
  gives SIGINT and SIGTERM their default action for a moment even where it installed none.
- After clean-up further signals are ignored, so that the interpreter's own finalization
  (which restores the default handlers otherwise) cannot be killed by a late second signal.
"""

import contextlib
import ctypes
import faulthandler
import functools
import os
import platform
import re
import signal
import sys
import threading
import traceback

CLEANUP_TIMEOUT_S = 3.0     # below ros2 launch's 5 s before it escalates to SIGTERM
SIGNAL_TO_CLEANUP_S = 7     # whole seconds; launch sends SIGKILL 10 s after SIGINT
SIGNALS = (signal.SIGINT, signal.SIGTERM)
RERAISE_S = 0.01            # a start-up signal swallowed by a native callback: raised again
PARENT_ENV = 'KRON_DYNAMICS_PARENT_PID'     # set by demo.processes.start_logged
PR_SET_PDEATHSIG = 1                        # linux/prctl.h


def die_with_parent() -> None:
    """
    Ask the kernel for SIGTERM when the process that started this one dies (Linux).

    Only for a direct child of the process named by ``KRON_DYNAMICS_PARENT_PID`` (the demo
    runner, the tests): killed outright, it would otherwise leave its nodes running,
    reparented to init. Armed after the SIGTERM handler; a parent already gone by then (dead
    or a zombie) is a SIGTERM at once. A node under ``ros2 run`` or ``ros2 launch`` (not
    that process's child) gets no parent-death signal.
    """
    parent = os.environ.get(PARENT_ENV, '')
    if not parent.isdigit() or not sys.platform.startswith('linux'):
        return
    if os.getppid() == int(parent):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM),
                                                    0, 0, 0)
        except (OSError, AttributeError):
            return
    if not _alive(int(parent)):           # gone before the signal was armed
        os.kill(os.getpid(), signal.SIGTERM)


def _alive(pid: int) -> bool:
    """Return True if process pid exists and is no zombie (Linux /proc)."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rpartition(')')[2].split()[0] != 'Z'
    except (OSError, IndexError):
        return False


class Interrupted(BaseException):
    """A signal arrived before the node was spinning: stop starting up (exit status 0)."""


class SignalFlag:
    """
    A flag that a signal handler sets and the spin loop reads: no lock, unlike threading.Event.

    Python runs a signal's handler in the main thread between two bytecodes, also between
    two of the handler's own when the signal comes again (a burst: the parent-death signal
    once for each thread of the parent, ``ros2 launch``'s two SIGINTs). A handler that takes
    a lock (``Event.set``) then waits for the lock its outer run holds, for ever: a demo's
    node, killed with its parent, stayed asleep in that wait. One attribute store under the
    GIL needs no lock.
    """

    __slots__ = ('_set',)

    def __init__(self):
        self._set = False

    def set(self) -> None:
        """Set the flag (safe in a signal handler, nested or not)."""
        self._set = True

    def is_set(self) -> bool:
        """Return True once the flag was set."""
        return self._set


class ProcessShutdown:
    """The shutdown state of this process (one instance, :data:`PROCESS`)."""

    def __init__(self):
        self.requested = SignalFlag()
        self.spinning = False
        self.installed = False
        self.exit_code = 0
        self._watchdog = None
        self._deferring = 0       # depth of nested signals_deferred blocks
        self._deferred = None
        self._python_actions = None     # Python's SIGINT/SIGTERM actions while bound_spin
        self.signal_name = None         # the first signal's name (SIGINT, SIGTERM)
        self._finished = False
        self._unraisablehook = None     # Python's, for every other unraisable exception

    def install(self) -> None:
        """Install the handlers for SIGINT and SIGTERM (main thread; idempotent)."""
        if self.installed:
            return
        for signum in SIGNALS:
            signal.signal(signum, self._on_signal)
        self._unraisablehook = sys.unraisablehook
        sys.unraisablehook = self._on_unraisable
        self.installed = True

    def _on_signal(self, signum, frame) -> None:
        if self.requested.is_set():     # a burst's signal that came before the next line
            return
        self.requested.set()
        ignore_signals()    # no more handler calls nested in this one (RecursionError)
        if not self.spinning:
            self.signal_name = signal.Signals(signum).name
            self._interrupt(signum)

    def _interrupt(self, signum) -> None:
        """Raise :class:`Interrupted` for ``signum``, or at the end of a deferring block."""
        if self._deferring:     # in native code's callback or an rclpy call: raise later
            self._deferred = signum
            return
        raise Interrupted(signal.Signals(signum).name)

    def _on_unraisable(self, unraisable) -> None:
        """
        Raise a start-up signal again that a native library's callback swallowed.

        Python runs a signal's handler wherever the main thread is, also inside a function
        that a native library calls back (LLVM's object cache while numba compiles a kernel,
        through ctypes), where the :class:`Interrupted` it raises is only reported as
        "Exception ignored" and the library goes on: a start-up that went on compiling,
        with a traceback on stderr, or failed on the half-done step. Here it is raised again
        (SIGALRM, :data:`RERAISE_S` later) where the main thread runs Python of its own,
        and nothing is printed. After a start-up signal, a finalizer that fails on what the
        signal left half done (llvmlite's ``ObjectRef.__del__``) is one line on stderr;
        every other unraisable exception goes to Python's hook.
        """
        if isinstance(unraisable.exc_value, Interrupted):
            self._reraise_later()
            return
        if _ignored_on_purpose(unraisable.exc_value):
            return
        if self.signal_name is not None:    # a finalizer of a half-done step: one line
            text = _one_line(unraisable.exc_value)
            print(f'start-up stopped by {self.signal_name}: ignored {text} (in '
                  f'{getattr(unraisable.object, "__qualname__", unraisable.object)!s:.100})',
                  file=sys.stderr, flush=True)
            return
        (self._unraisablehook or sys.__unraisablehook__)(unraisable)

    def _reraise_later(self) -> None:
        if self.spinning or self._finished \
                or threading.current_thread() is not threading.main_thread():
            return      # spinning: the flag ends the spin loop; other threads: the same
        signal.signal(signal.SIGALRM, self._on_reraise)
        signal.setitimer(signal.ITIMER_REAL, RERAISE_S)

    def _on_reraise(self, signum, frame) -> None:
        if not (self.spinning or self._finished):
            self._interrupt(signal.Signals[self.signal_name])   # set by the first signal

    @contextlib.contextmanager
    def signals_deferred(self):
        """
        Run a block in which a start-up signal does not raise; it raises after the block.

        For code that native libraries call back into (LLVM compiling through ctypes
        callbacks): an exception raised there is only printed as "Exception ignored" with a
        traceback, and the library goes on. And for calls that change rclpy's state (a
        node's entities, the context): an exception raised half way leaves it inconsistent,
        and its clean-up then fails. Python runs signal handlers in the main thread wherever
        it is, so blocking the signal in this thread would not keep it out. Blocks nest: the
        signal raises when the outermost one ends.
        """
        self._deferring += 1
        try:
            yield
        finally:
            self._deferring -= 1
        if self._deferring:
            return
        signum, self._deferred = self._deferred, None
        if signum is not None and not self.spinning:
            raise Interrupted(signal.Signals(signum).name)

    def bound_spin(self, name: str, delay: int = SIGNAL_TO_CLEANUP_S) -> bool:
        """
        Make SIGINT and SIGTERM also end the process ``delay`` s later unless clean-up began.

        Installed just before the node spins, over Python's handlers (:meth:`install`): a
        handler compiled by numba runs first, in the signal's context, arms a timer of
        ``delay`` s unless one is running (a later signal keeps the first one's deadline, to
        the microsecond) and then calls Python's own C handler, so that the flag is set as
        before. SIGALRM then prints where each thread is (faulthandler) and a line that
        names the process (``name``) and says why, and calls ``_exit(0)``.
        :meth:`start_cleanup` puts Python's handlers back and replaces the timer by the
        clean-up's watchdog. Return False, changing nothing, where numba, glibc's
        ``sigaction`` layout (Linux on x86_64 or aarch64) or Python's handlers are missing.
        """
        if self._python_actions is not None:
            return True
        with self.signals_deferred():       # LLVM calls back into Python while compiling
            # kept before a deferred signal raises at the block's end: clean-up undoes it
            self._python_actions = _bind_signals(self._on_signal, name, int(delay))
        return self._python_actions is not None

    def _unbind_spin(self) -> None:
        """Undo :meth:`bound_spin`: Python's handlers back (a signal came: ignored), no timer."""
        actions, self._python_actions = self._python_actions, None
        if actions is None:
            return
        if not self.requested.is_set():     # after a signal: SIGINT and SIGTERM stay ignored
            for signum, action in actions.items():
                _libc().sigaction(signum, ctypes.byref(action), None)
            if self.requested.is_set():     # one came while they were put back
                ignore_signals()
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        faulthandler.unregister(signal.SIGALRM)     # puts the compiled on_alarm back ...
        signal.signal(signal.SIGALRM, signal.SIG_DFL)   # ... which is not needed any more

    def start_cleanup(self, exit_code: int, timeout: float = CLEANUP_TIMEOUT_S) -> None:
        """Start the clean-up watchdog (see the module docstring); signals only set the flag."""
        self.spinning = True     # from here on a signal never raises
        self.exit_code = exit_code
        if self._watchdog is not None:
            return
        self._unbind_spin()
        # armed first: building the handler (when not built at start-up) is not clean-up time
        native = arm_native_exit(exit_code, 2 * timeout + NATIVE_EXIT_DELAY_S)
        faulthandler.dump_traceback_later(2 * timeout, exit=not native)
        self._watchdog = threading.Timer(timeout, self._force_exit, args=(timeout,))
        self._watchdog.daemon = True
        self._watchdog.start()

    def finish_cleanup(self) -> None:
        """Stop the watchdog; ignore further signals for the rest of the process's life."""
        self._finished = True
        self._unbind_spin()
        signal.setitimer(signal.ITIMER_REAL, 0.0)       # a pending _reraise_later too
        if self._watchdog is not None:
            self._watchdog.cancel()
            faulthandler.cancel_dump_traceback_later()
            signal.setitimer(signal.ITIMER_REAL, 0.0)
        ignore_signals()

    def stopped_starting(self, exc: BaseException, who: str) -> bool:
        """
        Return True, and say so on stderr, if ``exc`` ended a start-up that a signal stopped.

        The step that a start-up signal interrupted can fail after it with an error of its
        own (numba's ``RuntimeError: no compiled object yet`` when the signal landed in
        LLVM's callback, see :meth:`_on_unraisable`): the process was asked to stop, so that
        is a normal stop (exit status 0), with one line instead of a traceback.
        """
        if self.signal_name is None or isinstance(exc, Interrupted):
            return False
        print(f'{who}: start-up stopped by {self.signal_name}; the step it interrupted '
              f'failed with {_one_line(exc)} (ignored)', file=sys.stderr, flush=True)
        return True

    def cleanup_step(self, what: str, step, *args) -> None:
        """Run one clean-up step; if it raises, say so on stderr and go on (exit status kept)."""
        try:
            step(*args)
        except Exception:   # noqa: B902 (any failure of the middleware's teardown)
            print(f'clean-up: {what} failed (the process exits anyway):\n'
                  + traceback.format_exc(limit=6), file=sys.stderr, flush=True)

    def _force_exit(self, timeout: float) -> None:
        print(f'clean-up did not finish within {timeout:g} s (middleware shutdown); '
              'exiting without it', file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(self.exit_code)


def ignore_signals() -> None:
    """
    Have the kernel discard SIGINT and SIGTERM from now on (main thread).

    After the first one, a process that stops needs no other: a burst of them (the
    parent-death signal comes once for each thread of the parent that ends) would otherwise
    run Python's handler nested in itself, as deep as the burst is long.
    """
    for signum in SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


_RACE = re.compile(r'Signal (\d+) ignored due to race condition')     # CPython's words


def _ignored_on_purpose(exc: BaseException) -> bool:
    """
    Return True if ``exc`` reports a SIGINT or SIGTERM that came as :func:`ignore_signals` ran.

    CPython's C handler marks a signal for the Python handler; when the main thread then
    finds that handler replaced by SIG_IGN, it writes this OSError as unraisable instead.
    """
    match = _RACE.fullmatch(str(exc)) if type(exc) is OSError else None
    return match is not None and int(match.group(1)) in SIGNALS \
        and signal.getsignal(int(match.group(1))) == signal.SIG_IGN


def _one_line(exc: BaseException) -> str:
    """Return ``Type: message`` of an exception on one line, at most 300 characters."""
    return ' '.join(f'{type(exc).__name__}: {exc}'.split())[:300]


NATIVE_EXIT_DELAY_S = 0.5     # after faulthandler's traceback, so that it is printed whole
_NATIVE_HANDLERS = {}         # exit status -> compiled handler (kept alive: the kernel calls it)


_PROTOTYPES = {     # the C library's functions used here: argument types, result type
    'signal': ([ctypes.c_int, ctypes.c_void_p], ctypes.c_void_p),
    'sigaction': ([ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p], ctypes.c_int),
    # the timer's struct itimerval, and the bytes compared, at addresses of pointer size
    'getitimer': ([ctypes.c_int, ctypes.c_size_t], ctypes.c_int),
    'setitimer': ([ctypes.c_int, ctypes.c_size_t, ctypes.c_size_t], ctypes.c_int),
    'memcmp': ([ctypes.c_size_t, ctypes.c_size_t, ctypes.c_size_t], ctypes.c_int),
    # write's buffer is passed as an integer of pointer size (an address numba can inline)
    'write': ([ctypes.c_int, ctypes.c_size_t, ctypes.c_size_t], ctypes.c_ssize_t),
    '_exit': ([ctypes.c_int], None),
}


@functools.lru_cache(maxsize=None)
def _libc():
    """Return the C library of this process (loaded once), its prototypes declared."""
    libc = ctypes.CDLL(None)
    for name, (argtypes, restype) in _PROTOTYPES.items():
        function = getattr(libc, name)
        function.argtypes, function.restype = argtypes, restype
    return libc


def native_exit_handler(exit_code: int):
    """
    Return a signal handler in machine code that calls ``_exit(exit_code)``, or None.

    It is compiled by numba (about 0.3 s the first time in a process) and runs without the
    interpreter, so it ends a process whose main thread is stuck in native code holding the
    GIL, where neither a Python thread nor a Python signal handler can run. SIGINT and
    SIGTERM raise only after it compiled (:meth:`ProcessShutdown.signals_deferred`): LLVM
    calls back into Python (a ctypes callback) then, where the exception would only be
    printed as "Exception ignored" with a traceback.
    """
    if exit_code not in _NATIVE_HANDLERS:
        with PROCESS.signals_deferred():
            _NATIVE_HANDLERS[exit_code] = _compile_native_exit(exit_code)
    return _NATIVE_HANDLERS[exit_code]


def _compile_native_exit(exit_code: int):
    """Return the compiled handler of :func:`native_exit_handler`, or None without numba."""
    try:
        import numba
        exit_now = _libc()._exit
        code = int(exit_code)

        @numba.cfunc(numba.types.void(numba.types.int32))
        def handler(signum):
            exit_now(code)
        return handler
    except Exception:   # noqa: B902 (no numba or no libc: faulthandler ends it instead)
        return None


def arm_native_exit(exit_code: int, delay: float) -> bool:
    """Make SIGALRM call ``_exit(exit_code)`` in machine code after ``delay`` s; False if not."""
    handler = native_exit_handler(exit_code)
    if handler is None:
        return False
    _libc().signal(signal.SIGALRM, handler.address)
    signal.setitimer(signal.ITIMER_REAL, delay)
    return True


class _SigAction(ctypes.Structure):
    """glibc's ``struct sigaction`` on Linux (x86_64, aarch64: the generic layout)."""

    _fields_ = [('handler', ctypes.c_void_p),
                ('mask', ctypes.c_ulong * (1024 // (8 * ctypes.sizeof(ctypes.c_ulong)))),
                ('flags', ctypes.c_int),
                ('restorer', ctypes.c_void_p)]


def _installed_action(signum: int):
    """Return the action the kernel holds for ``signum`` (a :class:`_SigAction`), or None."""
    action = _SigAction()
    if _libc().sigaction(signum, None, ctypes.byref(action)) != 0:
        return None
    return action


_SPIN_HANDLERS = []     # the compiled handlers of bound_spin (kept alive: the kernel calls them)


def _bind_signals(python_callable, name: str, delay: int):
    """
    Install :meth:`ProcessShutdown.bound_spin`'s handlers; return the replaced actions or None.

    The actions replaced are Python's C handler for SIGINT and SIGTERM (``signal.signal``
    installed them with ``python_callable``); the new ones are copies with only the handler's
    address changed, so that their flags (no ``SA_RESTART``: a blocking call returns with
    EINTR and Python runs its handler) and mask stay Python's.
    """
    if sys.platform != 'linux' or platform.machine() not in ('x86_64', 'aarch64'):
        return None
    if any(signal.getsignal(signum) != python_callable for signum in SIGNALS):
        return None
    actions = {signum: _installed_action(signum) for signum in SIGNALS}
    if None in actions.values():
        return None
    python_handler = actions[signal.SIGINT].handler
    if python_handler in (None, 1) or actions[signal.SIGTERM].handler != python_handler:
        return None
    compiled = _compile_spin_handlers(python_handler, name, delay)
    if compiled is None:
        return None
    on_signal, on_alarm, _ = compiled
    _SPIN_HANDLERS[:] = compiled
    signal.setitimer(signal.ITIMER_REAL, 0.0)
    _libc().signal(signal.SIGALRM, on_alarm.address)
    try:        # where each thread is, then on_alarm (its line, _exit)
        faulthandler.register(signal.SIGALRM, all_threads=True, chain=True)
    except (OSError, ValueError, RuntimeError, AttributeError):     # stderr without a fd
        pass
    for signum in SIGNALS:
        bound = _SigAction.from_buffer_copy(actions[signum])
        bound.handler = on_signal.address
        _libc().sigaction(signum, ctypes.byref(bound), None)
    return actions


def _compile_spin_handlers(python_handler: int, name: str, delay: int):
    """
    Return ``bound_spin``'s compiled handlers (signal, alarm) and their buffers, or None.

    The signal's handler arms ITIMER_REAL only where it is not running, read with
    ``getitimer`` into a buffer of its own: ``alarm``, which says what was left in whole
    seconds rounded to the nearest, put the deadline back up to half a second later at each
    signal, so that signals more often than that put it off for ever.
    """
    try:
        import numba
        libc = _libc()
        getitimer, setitimer, memcmp = libc.getitimer, libc.setitimer, libc.memcmp
        write, exit_now = libc.write, libc._exit
        timer = (ctypes.c_long * 4)()       # struct itimerval: it_interval, it_value
        armed = (ctypes.c_long * 4)(0, 0, delay, 0)     # it_value: delay s, once
        zero = (ctypes.c_long * 2)()
        timer_at, armed_at, zero_at = map(ctypes.addressof, (timer, armed, zero))
        value_at, value_size = timer_at + ctypes.sizeof(zero), ctypes.sizeof(zero)
        real = int(signal.ITIMER_REAL)
        chained = ctypes.CFUNCTYPE(None, ctypes.c_int)(python_handler)
        message = ctypes.create_string_buffer(
            f'{name}: SIGINT/SIGTERM not handled within '
            f'{delay} s: the main thread is stuck where the traceback above says; exiting '
            'without clean-up (status 0)\n'.encode())
        address, length = ctypes.addressof(message), len(message.value)

        @numba.cfunc(numba.types.void(numba.types.int32))
        def on_signal(signum):
            getitimer(real, timer_at)
            if memcmp(value_at, zero_at, value_size) == 0:   # none running: the first signal
                setitimer(real, armed_at, 0)
            chained(signum)

        @numba.cfunc(numba.types.void(numba.types.int32))
        def on_alarm(signum):
            write(2, address, length)
            exit_now(0)
        return on_signal, on_alarm, (message, timer, armed, zero)
    except Exception:   # noqa: B902 (no numba: the Python handler alone, as before)
        return None


PROCESS = ProcessShutdown()
