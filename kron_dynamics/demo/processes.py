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


def stop(proc: subprocess.Popen, timeout: float = 10.0) -> str:
    """Interrupt the process (SIGINT), kill it after timeout s; return its output."""
    interrupt(proc)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return output(proc)
