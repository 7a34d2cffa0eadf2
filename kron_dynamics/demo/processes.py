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
Child processes whose output goes to a temporary file, not to a pipe.

A node started with ``stdout=PIPE`` blocks in its next log write once the pipe's 64 KB are
full and nobody reads them: at a throttled warning or two per second that is four or five
minutes into a run (it froze the first 10-minute soaks). A file never fills.
"""

import os
import signal
import subprocess
import tempfile

from ..nodes.shutdown import PARENT_ENV


def start_logged(cmd, **popen_kwargs) -> subprocess.Popen:
    """
    Start cmd with stdout and stderr into a temporary file (read it with :func:`output`).

    The child's environment names this process (``KRON_DYNAMICS_PARENT_PID``): a node
    started so asks the kernel for SIGTERM when this process dies (:mod:`..nodes.shutdown`),
    so that a demo killed outright (SIGKILL, the OOM killer) leaves no node running.
    """
    log = tempfile.TemporaryFile(mode='w+', encoding='utf-8', errors='replace')
    env = popen_kwargs.pop('env', None)
    env = dict(os.environ if env is None else env)
    env[PARENT_ENV] = str(os.getpid())
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True, env=env,
                            **popen_kwargs)
    proc.log_file = log
    return proc


def output(proc: subprocess.Popen) -> str:
    """Return everything the process has written so far."""
    log = proc.log_file
    log.flush()
    log.seek(0)
    text = log.read()
    log.seek(0, 2)
    return text


def interrupt(proc: subprocess.Popen) -> None:
    """Send SIGINT once (a second one could cut a node's clean shutdown short)."""
    if proc.poll() is None and not getattr(proc, 'interrupted', False):
        proc.send_signal(signal.SIGINT)
        proc.interrupted = True


def wait_at_most(proc: subprocess.Popen, timeout: float) -> bool:
    """
    Wait at most timeout s for the process to end; return whether it has ended.

    Never waits without a bound. ``Popen.poll`` takes a lock and only then enters its
    ``try``: an exception raised by a signal handler between the two (the demo's SIGTERM is
    a ``SystemExit``, SIGINT a ``KeyboardInterrupt``, both raised in its polling loop) leaves
    the lock held for ever. ``Popen.wait()`` then blocks for good and ``wait(timeout)`` times
    out however long ago the process ended; the ``waitpid`` system call still answers, so a
    timed-out wait asks it before saying the process runs.
    """
    try:
        proc.wait(timeout=timeout)
        return True
    except subprocess.TimeoutExpired:
        pass
    try:
        pid, status = os.waitpid(proc.pid, os.WNOHANG)
    except ChildProcessError:   # reaped by a poll() cut short between its waitpid and its
        return True             # record of the status: ended, returncode unknown (None)
    if pid == 0:
        return False
    proc.returncode = os.waitstatus_to_exitcode(status)
    return True


def end(proc: subprocess.Popen, timeout: float = 10.0, kill_timeout: float = 10.0) -> None:
    """
    Interrupt the process (SIGINT), kill it if it has not ended after timeout s.

    Returns within timeout + kill_timeout s whatever state ``proc`` was left in (see
    :func:`wait_at_most`); a process that SIGKILL has not ended by then (in uninterruptible
    sleep) keeps ``returncode`` None.
    """
    interrupt(proc)
    if not wait_at_most(proc, timeout):
        proc.kill()
        wait_at_most(proc, kill_timeout)


def stop(proc: subprocess.Popen, timeout: float = 10.0, kill_timeout: float = 10.0) -> str:
    """End the process as :func:`end` does; return its output."""
    end(proc, timeout, kill_timeout)
    return output(proc)
