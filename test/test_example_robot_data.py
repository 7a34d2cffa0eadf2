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
Every URDF of example-robot-data 6.0.0 (the robots Pinocchio is tested on), against Pinocchio.

The 69 files are 68 robots and ``ur3.urdf``, a fragment without a robot name that urdfdom and
Pinocchio refuse too. Every robot Pinocchio loads loads here, except ``alex_psyonic_hands``,
whose ``<mimic>`` tags name joints that do not exist (Pinocchio without mimic support ignores
the tags): refused, naming them. Six robots have inertias no rigid body can have on links of
moving bodies (triangle inequality broken by 0.2 % to 100 % of the largest moment, well
above the tolerance): refused with the link, the size and the way out, and loaded with
``inertia_check='warn'``. Everything else loads as is, printing no warning about elements
dynamics ignores.

For each robot, M, G, tau, the Coriolis vector and C*(q)(q' kron q') at random states
within the joint limits agree with Pinocchio to 1e-9 relative: with Pinocchio's mimic model
(mimic joints with nq = nv = 0) where it accepts the robot's mimic joints, else with the
B-projection of its unconstrained model (B written from the tags here). Continuous joints
are (cos, sin) in Pinocchio.
"""

import logging
import re

import pytest

from kron_dynamics import ModelError, RobotModel

import pinocchio_oracle

pin = pytest.importorskip('pinocchio', reason='Pinocchio (PyPI pin, requirements.txt) is the '
                                              'oracle of this test')
ROBOTS = pinocchio_oracle.robots_dir()
if ROBOTS is None:
    pytest.skip('example-robot-data (requirements.txt) is not installed',
                allow_module_level=True)
URDFS = sorted(str(p.relative_to(ROBOTS)) for p in ROBOTS.rglob('*.urdf'))

# file -> regex of the ModelError, for the two files refused whatever the options
REFUSED = {
    'ur_description/urdf/ur3.urdf': r'<robot> has no name attribute',
    'alex_description/urdf/alex_psyonic_hands.urdf': (
        r"<mimic> names joint\(s\) that do not exist: joint 'Left_index_q2' "
        r'<mimic joint="index_q1">, .* \(no joint named .index_q1., .middle_q1., '
        r'.pinky_q1., .ring_q1.\)'),
}
# file -> the first link named by the refusal without inertia_check='warn'
NON_PHYSICAL = {
    'allegro_hand_description/urdf/allegro_left_hand.urdf': 'link_11.0',
    'allegro_hand_description/urdf/allegro_right_hand.urdf': 'link_3.0',
    'hyq_description/robots/hyq_no_sensors.urdf': 'lf_foot',
    'pr2_description/urdf/pr2.urdf': 'sensor_mount_link',
    'romeo_description/urdf/romeo_laas_small.urdf': 'LShoulderYaw_link',
    'romeo_description/urdf/romeo_small.urdf': 'RShoulderYawLink',
}
# the warnings a robot may legitimately get from the loader (about its dynamics)
EXPECTED_WARNINGS = (r"moves no mass or inertia: M is singular",
                     r"moves a tiny inertia", r"joints move a tiny inertia",
                     r"; used as written \(inertia_check='warn'\)")
STATES = 2      # random states per robot


def test_every_file_is_accounted_for():
    assert len(URDFS) == 69, URDFS
    assert set(REFUSED) | set(NON_PHYSICAL) <= set(URDFS)


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name == 'kron_dynamics' and r.levelno >= logging.WARNING]


@pytest.mark.parametrize('urdf', URDFS)
def test_robot_loads_and_agrees_with_pinocchio(urdf, caplog, capfd):
    path = ROBOTS / urdf
    try:
        pin.buildModelFromUrdf(str(path))
        pinocchio_loads = True
    except (ValueError, RuntimeError):
        pinocchio_loads = False
    if urdf in REFUSED:
        with pytest.raises(ModelError, match=REFUSED[urdf]) as info:
            RobotModel.from_urdf_file(path, inertia_check='warn')
        assert str(info.value).startswith(str(path))
        assert pinocchio_loads == (urdf != 'ur_description/urdf/ur3.urdf')
        return
    assert pinocchio_loads
    options = {}
    if urdf in NON_PHYSICAL:
        with pytest.raises(ModelError) as info:
            RobotModel.from_urdf_file(path)
        message = str(info.value)
        assert f"link '{NON_PHYSICAL[urdf]}': " in message, message
        assert 'violate the triangle inequality (largest > sum of the other two by' in message
        assert "inertia_check='warn'" in message
        options['inertia_check'] = 'warn'
    capfd.readouterr()
    with caplog.at_level(logging.WARNING, logger='kron_dynamics'):
        model = RobotModel.from_urdf_file(path, **options)
    printed = capfd.readouterr()      # nothing on stdout or stderr: only logged warnings
    assert printed.out == '' and printed.err == '', printed
    unexpected = [w for w in _warnings(caplog)
                  if not any(re.search(p, w) for p in EXPECTED_WARNINGS)]
    assert not unexpected, unexpected
    if urdf in NON_PHYSICAL:
        assert any(f"link '{NON_PHYSICAL[urdf]}'" in w for w in _warnings(caplog))
    kind = pinocchio_oracle.assert_agrees(pin, model, path, STATES)
    if model.mimic_joints:
        # Pinocchio 4.1 wants each primary before its mimic in its tree order
        assert kind == ('projection' if 'romeo.urdf' in urdf or 'talos_full' in urdf
                        else 'mimic'), kind


def test_ignored_elements_are_one_debug_line_per_kind(caplog):
    path = ROBOTS / 'pr2_description/urdf/pr2.urdf'
    with caplog.at_level(logging.DEBUG, logger='kron_dynamics'):
        RobotModel.from_urdf_file(path, inertia_check='warn')
    ignored = [r.getMessage() for r in caplog.records if 'not used by dynamics' in
               r.getMessage()]
    kinds = [m.split('<')[1].split('>')[0] for m in ignored]
    assert len(kinds) == len(set(kinds)) and {'transmission', 'gazebo', 'link/visual',
                                              'link/collision', 'joint/calibration'} <= set(
        kinds), kinds
    assert all(r.levelno == logging.DEBUG for r in caplog.records
               if 'not used by dynamics' in r.getMessage())
