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

"""Child processes log to a file: a chatty node never blocks on a full pipe."""

import os
import signal
import sys
import threading
import time

import pytest

from kron_dynamics.demo.processes import output, start_logged, stop, wait_at_most

pytestmark = pytest.mark.slow   # child processes


def test_a_megabyte_of_output_does_not_block_the_child():
    # with stdout=PIPE and nobody reading, the child would block after 64 KB and time out
    code = "import sys\nfor i in range(20000): print('x' * 50, i)\nprint('done')"
    proc = start_logged([sys.executable, '-c', code])
    assert proc.wait(timeout=30) == 0
    text = output(proc)
    assert text.count('\n') == 20001 and text.endswith('done\n')


def test_stop_interrupts_and_returns_the_output():
    code = ("import signal, sys, time\n"
            "signal.signal(signal.SIGINT, lambda *a: (print('bye', flush=True), sys.exit(0)))\n"
            "print('ready', flush=True)\ntime.sleep(60)")
    proc = start_logged([sys.executable, '-c', code])
    deadline = time.monotonic() + 60     # the handler is installed: wait, however busy
    while 'ready' not in output(proc) and time.monotonic() < deadline:
        time.sleep(0.05)
    text = stop(proc, timeout=10)
    assert proc.returncode == 0
    assert text == 'ready\nbye\n'


def wait_for_ready(proc):
    deadline = time.monotonic() + 60     # its SIGINT disposition is set: wait, however busy
    while 'ready' not in output(proc) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert 'ready' in output(proc), output(proc)


@pytest.mark.parametrize('on_sigint, returncode', [
    ('signal.SIG_DFL', -signal.SIGINT),   # ends on the interrupt
    ('signal.SIG_IGN', -signal.SIGKILL),  # has to be killed
])
def test_stop_returns_when_an_exception_left_popens_lock_held(on_sigint, returncode):
    # SIGTERM (SystemExit) or SIGINT raised inside Popen.poll between its lock's acquire and
    # its try leaves the lock held (CPython's subprocess); stop() then waited for ever in
    # Popen.wait() after the kill. Hold the lock as the race leaves it.
    code = (f'import signal, time\nsignal.signal(signal.SIGINT, {on_sigint})\n'
            "print('ready', flush=True)\ntime.sleep(120)")
    proc = start_logged([sys.executable, '-c', code])
    wait_for_ready(proc)
    assert proc._waitpid_lock.acquire(False)
    stopper = threading.Thread(target=stop, args=(proc,), kwargs={'timeout': 1.0}, daemon=True)
    stopper.start()
    stopper.join(timeout=120)
    assert not stopper.is_alive(), 'stop() is still waiting for the process'
    assert proc.returncode == returncode
    with pytest.raises(ChildProcessError):   # reaped: no zombie left
        os.waitpid(proc.pid, os.WNOHANG)


def test_wait_at_most_says_whether_the_process_ended():
    code = "import signal, time\nprint('ready', flush=True)\ntime.sleep(120)"
    proc = start_logged([sys.executable, '-c', code])
    wait_for_ready(proc)
    assert proc._waitpid_lock.acquire(False)   # as a cut-short poll() leaves it
    assert not wait_at_most(proc, 0.1)
    assert proc.returncode is None
    proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 60
    while not wait_at_most(proc, 0.1) and time.monotonic() < deadline:
        pass
    assert proc.returncode == -signal.SIGTERM
