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
nodes/entry.py in this process: the command line's usage and the start-up signal's chain.

What a node process does with a signal at start-up is in test_shutdown.py (processes);
these pin the two pure parts it relies on: ``python -m kron_dynamics.nodes`` refuses a name
that is not a node, and :func:`entry.interrupted` finds the signal however the error that
it broke was raised (``raise ... from``, or raised while handling it), and ends on a cycle.
"""

import pytest

from kron_dynamics.nodes import entry
from kron_dynamics.nodes.shutdown import Interrupted


@pytest.mark.parametrize('argv', [[], ['dynamics'], ['--ros-args'], ['DynamicsNode']])
def test_a_name_that_is_no_node_gets_the_usage_and_status_2(argv, capsys):
    """The usage names every node; nothing is started."""
    assert entry.main(argv) == 2
    err = capsys.readouterr().err
    assert err == ('usage: python -m kron_dynamics.nodes {dynamics_node,'
                   'computed_torque_controller,plant_simulator,reference_generator} '
                   '[--ros-args ...]\n')


def broken_import(how: str) -> BaseException:
    """Return the ImportError of an extension module that a start-up signal interrupted."""
    try:
        try:
            raise Interrupted('SIGINT')
        except Interrupted as exc:
            if how == 'from':
                raise ImportError('initialization failed') from exc
            raise ImportError('initialization failed')     # implicit: __context__ only
    except ImportError as exc:
        return exc


@pytest.mark.parametrize('how', ['from', 'context'])
def test_an_error_that_a_start_up_signal_broke_is_that_signal(how):
    """The Interrupted is found as the error's cause and as its context, two deep too."""
    exc = broken_import(how)
    assert (exc.__cause__ if how == 'from' else exc.__context__).__class__ is Interrupted
    assert entry.interrupted(exc)
    assert entry.interrupted(Interrupted('SIGTERM'))
    outer = RuntimeError('the module that imported it')
    outer.__cause__ = exc
    assert entry.interrupted(outer)


def test_an_error_without_a_start_up_signal_is_no_interruption_and_a_cycle_ends():
    """A chain without Interrupted is a real failure; a cyclic chain is walked once."""
    first, second = ImportError('a'), RuntimeError('b')
    first.__context__, second.__context__ = second, first
    assert not entry.interrupted(first)
    assert not entry.interrupted(ImportError('initialization failed'))
    assert not entry.interrupted(KeyboardInterrupt())
