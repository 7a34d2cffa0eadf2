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

"""The nodes' throttled logger on rclpy's real logger (no context needed)."""

import types

import rclpy.logging

from kron_dynamics.nodes.throttled_logger import ThrottledLogger


def test_warnings_and_errors_mix_on_one_logger(capfd):
    """
    A warning then an error raised: rclpy refused a call site that changed severity.

    Every line reaches rclpy's logger at its severity (period 0: nothing is throttled).
    """
    log = ThrottledLogger(rclpy.logging.get_logger('throttled_logger_test'), period=0.0)
    for k in range(3):
        log.warning(f'w{k}', 'a warning')
        log.error(f'e{k}', 'an error')
        log.warning(f'w{k}', 'the same warning again')
    err = capfd.readouterr().err
    assert err.count('[WARN]') == 6 and err.count('[ERROR]') == 3, err
    assert err.count('a warning') == 3 and err.count('an error') == 3, err
    assert err.count('the same warning again') == 3, err


def test_a_key_is_logged_once_per_period_with_the_suppressed_count():
    lines = []

    class Recorder:
        def warning(self, text):
            lines.append(('warning', text))

        def error(self, text):
            lines.append(('error', text))
    log = ThrottledLogger(Recorder(), period=3600.0)
    for _ in range(5):
        log.warning('same', 'repeated')
    log.error('other', 'different')
    assert lines == [('warning', 'repeated'), ('error', 'different')]
    log._next['same'] = 0.0          # the period is over
    log.warning('same', 'repeated')
    assert lines[-1] == ('warning', 'repeated (4 similar suppressed)')
    log._next['same'] = 0.0          # another period over, nothing suppressed in it
    log.warning('same', 'repeated')
    assert lines[-1] == ('warning', 'repeated')


class _Clock:
    """A monotonic clock the test sets."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_the_keys_kept_stay_few_and_a_running_period_keeps_its_count(monkeypatch):
    """
    Keys made from message texts are pruned past MAX_KEYS: the expired ones go.

    A key whose period still runs keeps its time and its suppressed count through the
    pruning; 10,000 distinct keys, each expired when the next comes, keep the dict small.
    """
    from kron_dynamics.nodes import throttled_logger
    clock = _Clock()
    monkeypatch.setattr(throttled_logger, 'time', types.SimpleNamespace(monotonic=clock))
    lines = []

    class Recorder:
        def warning(self, text):
            lines.append(text)
    log = ThrottledLogger(Recorder(), period=1.0)
    for k in range(10_000):           # each key's period over when the next one comes
        clock.now = 2.0 * k
        log.warning(f'key {k}', f'text {k}')
        assert len(log._next) <= throttled_logger.MAX_KEYS + 1, k
    assert len(lines) == 10_000
    log = ThrottledLogger(Recorder(), period=1.0)
    clock.now = 0.0
    for k in range(300):             # no pruning yet: all these periods run to 1.0
        log.warning(f'old {k}', f'text {k}')
    log.warning('old 0', 'text 0')
    assert len(log._next) == 300 and log._suppressed == {'old 0': 1}
    clock.now = 0.5
    log.warning('live', 'still throttled')           # its period runs to 1.5
    clock.now = 0.6
    log.warning('live', 'still throttled')           # suppressed
    clock.now = 1.2                                  # the old keys' periods are over
    log.warning('new', 'another text')
    assert sorted(log._next) == ['live', 'new'] and log._suppressed == {'live': 1}
    clock.now = 1.5
    log.warning('live', 'still throttled')
    assert lines[-1] == 'still throttled (1 similar suppressed)'
