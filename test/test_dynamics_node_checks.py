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
dynamics_node's checks of its inputs, outputs and parameters, each on its own (no node).

The node tests send absurd wrenches, odometry and requests through a live graph and see
them refused; these pin each bound and message of the functions that decide: outputs
beyond max_output or not finite, a base state's faults in the order they are reported, the
duration parameters, state_policy, a linearisation request's contacts, and the overload
report's counts and throttling.
"""

import math

from kron_dynamics_interfaces.srv import GetLinearization
import numpy as np
import pytest

from kron_dynamics.errors import ConfigurationError
from kron_dynamics.nodes.dynamics_node import (_DEFAULT_BASE, _norm, _out_of_bounds,
                                               _request_contacts, _seconds, _state_policy,
                                               _wrench_timeout, base_fault, LIMITS, Overload)
from kron_dynamics.nodes.joint_states import InputError

LIMITS_BY_NAME = {name: default for name, default, _ in LIMITS}


def test_outputs_beyond_the_bound_or_not_finite_are_named():
    """At the bound: taken; beyond: its size; NaN or inf anywhere: not finite."""
    assert _out_of_bounds(np.array([1.0, -2.0]), 2.0) == ''
    assert _out_of_bounds(np.array([]), 2.0) == ''
    assert _out_of_bounds(np.array([1.0, -2.5]), 2.0) == ('beyond max_output 2 (|value| up to '
                                                          '2.5)')
    for values in ([math.nan, 1.0], [1.0, math.inf], [-math.inf]):
        assert _out_of_bounds(np.array(values), 1e300) == 'not finite'
    assert _norm(np.array([3e200, 4e200])) == pytest.approx(5e200, rel=1e-15)   # no overflow
    assert _norm(np.array([3.0, -4.0])) == 5.0
    assert _norm(np.array([])) == _norm(np.zeros(3)) == 0.0


def test_a_base_states_faults_are_named_in_order():
    """Not finite, another frame, not a unit quaternion, each limit with its unit."""
    assert _DEFAULT_BASE.tolist() == [0.0] * 6 + [1.0] + [0.0] * 6   # at rest, identity
    assert base_fault(_DEFAULT_BASE, '', 'base', LIMITS_BY_NAME) == ''
    assert base_fault(_DEFAULT_BASE, 'base', 'base', LIMITS_BY_NAME) == ''

    def fault(changes, child='', limits=LIMITS_BY_NAME):
        values = _DEFAULT_BASE.copy()
        for i, v in changes.items():
            values[i] = v
        return base_fault(values, child, 'base', limits)
    assert fault({0: math.nan, 12: -math.inf}) == 'not finite: pose.position.x, twist.angular.z'
    assert fault({}, 'odom') == ("child_frame_id 'odom' is not the base link 'base' (the twist "
                                 'must be in the base frame)')
    assert fault({3: 2.0}) == 'orientation is not a unit quaternion (norm 2.23607)'
    assert fault({3: 1e-7}) == ''                                       # within tolerance
    assert fault({0: 6e3, 1: 8e3}) == ''                                # |p| = 1e4: at it
    assert fault({0: 6e3, 1: 8.1e3}) == ('position 1.01e+04 m is beyond max_base_position '
                                         '10000 m')
    assert fault({7: 2e3}) == ('linear twist 2e+03 m/s is beyond max_base_linear_velocity '
                               '1000 m/s')
    assert fault({12: -2e3}) == ('angular twist 2e+03 rad/s is beyond '
                                 'max_base_angular_velocity 1000 rad/s')
    smaller = dict(LIMITS_BY_NAME, max_base_angular_velocity=1.0)       # limits as given
    assert fault({12: -2.0}, limits=smaller).startswith('angular twist 2 rad/s is beyond')
    assert fault({0: math.nan}, 'odom').startswith('not finite')        # first fault first


def test_duration_and_policy_parameters():
    """odometry_timeout > 0; external_wrench_timeout >= 0 (0: never); 'newest' or 'all'."""
    assert _seconds('odometry_timeout', 0.1) == 0.1
    for value in (0.0, -1.0, math.inf, math.nan, 'x'):
        with pytest.raises(ConfigurationError, match=r'^parameter odometry_timeout must be a '
                                                     rf'finite number > 0 \(s\), got {value!r}$'):
            _seconds('odometry_timeout', value)
    assert _wrench_timeout(0.0) == 0.0 and _wrench_timeout(0.5) == 0.5
    for value in (-0.1, math.inf, math.nan, 'x'):
        with pytest.raises(ConfigurationError, match=r'^parameter external_wrench_timeout must '
                                                     r'be a finite number >= 0 \(s; 0: never\), '
                                                     rf'got {value!r}$'):
            _wrench_timeout(value)
    assert _state_policy('newest') is True and _state_policy('all') is False
    with pytest.raises(ConfigurationError, match=r"^parameter state_policy must be one of "
                                                 r"\['newest', 'all'\], got 'oldest'$"):
        _state_policy('oldest')


def test_a_linearization_requests_contacts():
    """Links with optional points (3 each) and dims (3 or 6 each); each fault named."""
    def contacts(**fields):
        return _request_contacts(GetLinearization.Request(**fields))
    assert contacts() is None
    two = contacts(contact_links=['a', 'b'])
    assert [(c.link, c.point, c.dim) for c in two] == [('a', (0.0,) * 3, 3), ('b', (0.0,) * 3, 3)]
    given = contacts(contact_links=['a', 'b'], contact_points=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
                     contact_dims=[6, 3])
    assert [(c.link, c.point, c.dim) for c in given] == [('a', (1.0, 2.0, 3.0), 6),
                                                         ('b', (4.0, 5.0, 6.0), 3)]
    for fields, message in (
            (dict(contact_points=[0.0] * 3), 'request.contact_points and request.contact_dims '
                                             'need request.contact_links'),
            (dict(contact_dims=[3]), 'request.contact_points and request.contact_dims need'),
            (dict(contact_links=['a', 'b'], contact_points=[1.0, 2.0, 3.0]),
             r'request.contact_points must be empty or 3 numbers per contact link \(6\), got 3'),
            (dict(contact_links=['a', 'b'], contact_dims=[3]),
             r'request.contact_dims must be empty or one per contact link \(2\), got 1'),
            (dict(contact_links=['a', 'b'], contact_points=[1.0, 2.0, 3.0, 4.0, 5.0, math.nan]),
             r"request.contact_points: the point of contact 1 \('b'\) is not finite: "
             r'\[4.0, 5.0, nan\]'),
            (dict(contact_links=['a', 'b'], contact_dims=[6, 4]),
             r"request.contact_dims\[1\] \('b'\) must be 3 \(a point\) or 6 \(a surface\), "
             'got 4')):
        with pytest.raises(InputError, match=f'^{message}'):
            contacts(**fields)


class Log:
    """Collect what ThrottledLogger.warning is given."""

    def __init__(self):
        self.lines = []

    def warning(self, key, text):
        self.lines.append((key, text))


@pytest.mark.parametrize('newest', [True, False])
def test_an_overload_is_counted_and_reported_at_most_once_a_period(newest):
    """The first backlog at once; then the counts since the last report, once a period."""
    log = Log()
    overload = Overload(log, newest)
    overload.backlog(3)
    overload.backlog(5)                    # within the period: counted, not reported
    overload.backlog(1)
    assert len(log.lines) == 1 and log.lines[0][0] == 'overload'
    overload.next_report = 0.0             # the period has passed
    overload.backlog(3)
    assert len(log.lines) == 2
    first, second = (text for _, text in log.lines)
    if newest:
        assert first.startswith('joint_states arrive faster than they are answered: dropped 2 '
                                'of 3 states that waited (67%) in the last ')
        assert first.endswith('up to 3 at once; answering the newest (state_policy newest)')
        assert 'dropped 6 of 9 states that waited (67%)' in second       # 4 + 0 + 2 of 5 + 1 + 3
        assert 'up to 5 at once' in second
    else:
        assert first.startswith('joint_states arrive faster than they are answered: 3 states '
                                'waited in the last ')
        assert 'up to 3 at once; answering every one (state_policy all)' in first
        assert '9 states waited' in second and 'up to 5 at once' in second
    assert overload.dropped == overload.arrived == overload.largest == 0


def test_the_controllers_feasible_scale_is_the_largest_that_keeps_the_limits():
    """Largest s in [0, 1] with |tau0 + s dtau| <= limits, against a fine search; 0 outside."""
    from kron_dynamics.nodes.computed_torque_controller import feasible_scale
    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(1, 5))
        limits = rng.uniform(1.0, 10.0, n)
        tau0 = rng.uniform(-1.0, 1.0, n) * limits
        dtau = rng.normal(0.0, 15.0, n) * rng.integers(0, 2, n)    # some joints unchanged
        s = feasible_scale(tau0, dtau, limits)
        assert 0.0 <= s <= 1.0
        assert np.all(np.abs(tau0 + s * dtau) <= limits * (1 + 1e-12))
        if s < 1.0:             # any larger s leaves the limits
            assert np.any(np.abs(tau0 + (s + 1e-9) * dtau) > limits)
    limits = np.array([2.0, 2.0])
    assert feasible_scale(np.array([0.0, 0.0]), np.array([1.0, -1.0]), limits) == 1.0
    assert feasible_scale(np.array([1.0, 0.0]), np.array([4.0, 0.0]), limits) == 0.25
    assert feasible_scale(np.array([0.0, -1.0]), np.array([0.0, -4.0]), limits) == 0.25
    assert feasible_scale(np.array([2.5, 0.0]), np.array([-1.0, 0.0]), limits) == 0.0
