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

"""Shared fixtures: the oracle values of ../shared/reference (copied into fixtures/)."""

import json
from pathlib import Path

import pytest

from kron_dynamics import RobotModel
from ros_harness import pick_domain

pick_domain()   # every rclpy test of this session uses one random, local-only ROS domain

TEST_DIR = Path(__file__).resolve().parent
REPO = TEST_DIR.parent
URDF_DIR = REPO / 'urdf'
ORACLE = json.loads((TEST_DIR / 'fixtures' / 'seed_models.json').read_text())

# oracle model name -> the project's URDF file for it
ORACLE_URDFS = {
    'stacker': 'stacker.urdf',
    'rover_arm': 'rover_arm.urdf',
    'rover_arm_regularized': 'rover_arm_regularized.urdf',
    'rp_arm': 'rp_arm.urdf',
    'planar3r': 'planar3r.urdf',
}


def load_oracle_model(name: str) -> RobotModel:
    """Load the project's URDF of an oracle model with the oracle's joint order."""
    return RobotModel.from_urdf_file(URDF_DIR / ORACLE_URDFS[name],
                                     joint_names=ORACLE['models'][name]['joint_names'])


@pytest.fixture(scope='session')
def oracle():
    """Return the parsed seed_models.json."""
    return ORACLE


@pytest.fixture(scope='session')
def stacker() -> RobotModel:
    """Load the stacker of seed 000 from urdf/stacker.urdf."""
    return load_oracle_model('stacker')


@pytest.fixture(scope='session')
def rover_arm() -> RobotModel:
    """Load the rover rocker arm of seed 003 from urdf/rover_arm.urdf."""
    return load_oracle_model('rover_arm')
