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
Short versions of bench/soak.py and bench/faults.py (the long runs: docs/reliability.md).

Soak: 5000 joint states at up to 1 kHz with 10 % bad messages into dynamics_node and
computed_torque_controller. Faults: the joint-state publisher pauses, the simulator and the
controller are killed and restarted, and the graph recovers by itself. Both wait on events
with generous timeouts (outputs counted up to a marker input, recovery as a stretch of normal
tracking), so a busy machine makes them slower, not red.
"""

import sys

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / 'bench'))

import faults  # noqa: E402
import soak  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.slow]


def test_short_soak():
    # flow control: the nodes' queues never overflow on a busy machine (a node that falls
    # more than its queue behind drops the oldest states, by design), so every count holds
    result = soak.run_soak(duration=5.0, rate=1000.0, bad_fraction=0.1, warmup_fraction=0.4,
                           max_backlog=300)
    assert result.alive == {'dynamics_node': True, 'computed_torque_controller': True}
    assert result.bad > 300 and result.valid > 4000
    assert result.bias_outputs == result.valid, 'each valid input exactly one bias torque'
    # the controller acts on the newest state only: at most one command per valid input
    assert soak.MIN_COMMAND_SHARE * result.valid <= result.commands <= result.valid, result
    assert result.nonfinite_outputs == 0
    assert all(g < 5.0 for g in result.rss_growth_after_warmup_mb.values()), result


def test_faults_recover_without_manual_action():
    results = faults.run_faults(outage=1.0, settle=4.0, max_wait=120.0, hold=2.0)
    assert [r.fault for r in results] == ['pause_states', 'kill_simulator', 'kill_controller']
    for r in results:
        assert r.ok(), r
    # the watchdog faults: exactly one zero command after the last answer to a joint state
    assert [r.zeros_after_last_answer for r in results[:2]] == [1, 1], results
