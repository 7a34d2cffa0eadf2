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

import sys
import time

import pytest

from kron_dynamics.demo.processes import output, start_logged, stop

pytestmark = pytest.mark.slow   # child processes


def test_a_megabyte_of_output_does_not_block_the_child():
    # with stdout=PIPE and nobody reading, the child would block after 64 KB and time out
    code = "import sys\nfor i in range(20000): print('x' * 50, i)\nprint('done')"
    proc = start_logged([sys.executable, '-c', code])
    assert proc.wait(timeout=30) == 0
    text = output(proc)
    assert text.count('\n') == 20001 and text.endswith('done\n')


def test_stop_interrupts_and_returns_the_output():
    code = ("import signal, sys, time\nprint('ready', flush=True)\n"
            "signal.signal(signal.SIGINT, lambda *a: (print('bye', flush=True), sys.exit(0)))\n"
            'time.sleep(60)')
    proc = start_logged([sys.executable, '-c', code])
    deadline = time.monotonic() + 60     # the handler is installed: wait, however busy
    while 'ready' not in output(proc) and time.monotonic() < deadline:
        time.sleep(0.05)
    text = stop(proc, timeout=10)
    assert proc.returncode == 0
    assert text == 'ready\nbye\n'
