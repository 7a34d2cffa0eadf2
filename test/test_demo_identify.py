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
kron-dynamics demo identify: wrong URDF, excitation, fit, the tracking error falls.

The nodes run as processes (plant simulator on the true stacker with damping, reference
generator playing the excitation file, computed-torque controller on the wrong and then the
fitted URDF). The comparison uses the median |e| per joint, which a stall of the shared
machine for a fraction of a second (it happens under load) does not move; the RMS and max
are what the demo prints.
"""

import numpy as np
import pytest

from conftest import REPO
from kron_dynamics import RobotModel
from kron_dynamics.demo.identify import (DAMPING, INTEGRATION_RATE, MAX_GAP, plot, report,
                                         run_identify_demo, statistics, tracking_error,
                                         WRONG_FACTORS)

pytestmark = [pytest.mark.ros, pytest.mark.slow]


def test_the_fit_makes_the_tracking_error_fall(tmp_path):
    demo = run_identify_demo(str(REPO), str(tmp_path), duration=10.0, log=lambda text: None)
    # the fit found the plant's friction and a physical model
    np.testing.assert_allclose(demo.fit.friction['viscous'], DAMPING, rtol=0.2)
    assert demo.fit.physically_consistent().all()
    base = demo.fit.base
    truth = base.to_base(demo.true.dynamic_parameters())
    wrong = base.to_base(demo.wrong.dynamic_parameters())
    fitted = base.to_base(demo.fit.model.dynamic_parameters())
    assert np.linalg.norm(fitted - truth) < 0.1 * np.linalg.norm(wrong - truth)
    assert not np.allclose(WRONG_FACTORS, 1.0)
    # the files: the fitted URDF reloads to the fitted model, the controller's params exist
    reloaded = RobotModel.from_urdf_file(demo.files['fitted_urdf'])
    P = demo.fit.model.dynamic_parameters()
    np.testing.assert_allclose(reloaded.dynamic_parameters(), P, rtol=0,
                               atol=1e-9 * np.abs(P).max())
    # both runs recorded the excitation whole, however late it started
    for recording in (demo.before, demo.after):
        t, _ = tracking_error(recording, demo.excitation)
        assert t[-1] >= demo.excitation.duration, (t[-1], demo.excitation.duration)
    # tracking: every joint's typical error falls by more than half
    before = statistics(demo.before, demo.excitation)
    after = statistics(demo.after, demo.excitation)
    assert np.all(after['median_error'] < 0.5 * before['median_error']), (before, after)
    text = report(demo)
    assert 'RMS error before' in text and 'q3_luff' in text
    plot(demo, str(tmp_path / 'identify.png'))
    assert (tmp_path / 'identify.png').stat().st_size > 10_000


def test_the_fit_splits_the_recording_where_the_simulator_drops_real_time():
    """The demo's max_gap is the longest tick the plant simulator integrates in full."""
    from kron_dynamics.nodes.plant_simulator import MAX_STEPS_PER_TICK
    assert MAX_GAP == MAX_STEPS_PER_TICK / INTEGRATION_RATE
