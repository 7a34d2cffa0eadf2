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
The urdfdom yardstick on a second real corpus: the URDFs PyBullet ships (``pybullet_data``).

What urdfdom (through Pinocchio) accepts loads here too, with the leniencies real files need
logged (blank lines before the XML declaration, a repeated identical ``<axis>``), unless the
dynamics it describes is wrong: six robots with inertias no rigid body can have on moving
links (loaded with ``inertia_check='warn'``) and one joint whose lower limit is above its
upper one (PyBullet's way to say "no limit", refused as in the corpus). Every robot with
joints agrees with Pinocchio to 1e-9 relative. The 1000 ``random_urdfs`` (single objects
without joints) are sampled, one in ten.
"""

import logging
import re

import pytest

from kron_dynamics import ModelError, RobotModel

import pinocchio_oracle

pin = pytest.importorskip('pinocchio', reason='Pinocchio (PyPI pin, requirements.txt) is the '
                                              'oracle of this test')
pybullet_data = pytest.importorskip('pybullet_data', reason='pybullet (requirements.txt) '
                                                            'ships the URDFs of this test')
from pathlib import Path  # noqa: E402  (after the skips: only the data path needs it)

DATA = Path(pybullet_data.getDataPath())
URDFS = sorted(str(p.relative_to(DATA)) for p in DATA.rglob('*.urdf')
               if not p.relative_to(DATA).parts[0] == 'random_urdfs' or
               int(p.stem) % 10 == 0)

NON_PHYSICAL = {
    'TwoJointRobot_w_fixedJoints.urdf': 'link_1',
    'TwoJointRobot_wo_fixedJoints.urdf': 'link_1',
    'mini_cheetah/mini_cheetah.urdf': 'thigh_fr',
    'xarm/xarm6_robot.urdf': 'link2',
    'xarm/xarm6_robot_white.urdf': 'link2',
    'xarm/xarm6_with_gripper.urdf': 'link2',
}
REFUSED = {}       # what urdfdom loads and we refuse (none since inverted limits load)
LENIENCIES = {
    # lower > upper on its prismatic joints, as some simulators write "no limit" (issue 21)
    'cube_no_rotation.urdf': r'<limit> lower > upper at joint\(s\) x_to_world \(1 > -1\), '
                             r'.*: read as unlimited',
    'differential/diff_ring.urdf': r'blank text before the XML declaration',
    'quadruped/spirit40newer.urdf': r"has two identical <axis> elements: the first is used",
}
EXPECTED_WARNINGS = (r'moves no mass or inertia: M is singular', r'moves a tiny inertia',
                     r"; used as written \(inertia_check='warn'\)", *LENIENCIES.values())


def test_the_corpus_is_there():
    assert len(URDFS) > 150 and set(NON_PHYSICAL) | set(REFUSED) | set(LENIENCIES) <= set(URDFS)


@pytest.mark.parametrize('urdf', URDFS)
def test_what_urdfdom_accepts_loads_and_agrees_with_pinocchio(urdf, caplog):
    path = DATA / urdf
    try:
        pin.buildModelFromUrdf(str(path))
    except (ValueError, RuntimeError):
        # urdfdom refuses it (xacro left in, a 4-number rpy, a spherical joint, ...): so do we
        with pytest.raises(ModelError):
            RobotModel.from_urdf_file(path, inertia_check='warn')
        return
    if urdf in REFUSED:
        with pytest.raises(ModelError, match=REFUSED[urdf]):
            RobotModel.from_urdf_file(path, inertia_check='warn')
        return
    options = {}
    if urdf in NON_PHYSICAL:
        with pytest.raises(ModelError, match=rf"link '{NON_PHYSICAL[urdf]}': .*"
                                             r"inertia_check='warn'"):
            RobotModel.from_urdf_file(path)
        options['inertia_check'] = 'warn'
    with caplog.at_level(logging.WARNING, logger='kron_dynamics'):
        model = RobotModel.from_urdf_file(path, **options)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert all(any(re.search(p, w) for p in EXPECTED_WARNINGS) for w in warnings), warnings
    if urdf in LENIENCIES:
        assert any(re.search(LENIENCIES[urdf], w) for w in warnings), warnings
    if model.n:
        pinocchio_oracle.assert_agrees(pin, model, path)
