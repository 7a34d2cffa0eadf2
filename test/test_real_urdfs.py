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
The loader on real-world URDFs beyond example-robot-data (issue 21), against Pinocchio.

test/real_urdfs/ holds the 204 permissively licensed files of a public dataset of 322
robot descriptions (ROS-Industrial arms, OEM robots, Drake, Robotics Toolbox models, grippers,
mobile bases, humanoids; scripts/collect_urdf_corpus.py, manifest.yaml with every file's
checksum and licence). Every file that Pinocchio (urdfdom) loads loads here, warning only
where the loader reinterprets something or where M is singular, refusing a non-physical
inertia only with the way out (inertia_check='warn'), and gives Pinocchio's link poses and
M, G, tau, Coriolis terms; a file Pinocchio refuses is refused with a message that names the
file and the element at fault.
"""

import hashlib
import logging
import re

import numpy as np
import pinocchio as pin     # a declared test dependency (requirements.txt): no skip
import pytest
import yaml

from conftest import TEST_DIR
from kron_dynamics import ModelError, RobotModel
import pinocchio_oracle

CORPUS = TEST_DIR / 'real_urdfs'
MANIFEST = yaml.safe_load((CORPUS / 'manifest.yaml').read_text())
KEPT = [e['path'] for e in MANIFEST['files'] if e['redistributed']]
# what the loader may say about a file that loads: a reinterpretation, or a singular M
ALLOWED_WARNINGS = (r'moves no mass or inertia: M is singular', r'moves a tiny inertia',
                    r'joints move a tiny inertia', r"used as written \(inertia_check='warn'\)",
                    r'XML namespace prefix\(es\) .* used but never declared',
                    r'<limit> lower > upper at joint')
# how a refusal names what is at fault: an element, or a named joint or link
NAMES_ELEMENT = re.compile(r"<\w+>|(joint|link) '[^']+'|the robot has no links")


def test_the_manifest_lists_every_file_with_its_checksum_and_licence():
    files = MANIFEST['files']
    assert len(files) >= 300 and len(KEPT) >= 200
    on_disk = sorted(p.relative_to(CORPUS / 'files').as_posix()
                     for p in (CORPUS / 'files').rglob('*') if p.suffix.lower() == '.urdf')
    assert on_disk == sorted(KEPT)
    for entry in files:
        if entry['redistributed']:
            data = (CORPUS / 'files' / entry['path']).read_bytes()
            assert hashlib.sha256(data).hexdigest() == entry['sha256'], entry['path']
            assert entry['licence'] in ('Apache-2.0', 'BSD', 'MIT'), entry
            assert (CORPUS / 'files' / entry['licence_file']).is_file(), entry
        else:
            assert entry['licence'] == 'unknown', entry


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name == 'kron_dynamics' and r.levelno >= logging.WARNING]


def _poses_agree(model, path):
    """Every link's pose at a random configuration equals Pinocchio's frame placement."""
    pmodel = pin.buildModelFromUrdf(str(path))
    pair = pinocchio_oracle.PinPair(model, pmodel)
    u = model.random_configuration(np.random.default_rng(1))
    data = pmodel.createData()
    pin.framesForwardKinematics(pmodel, data, pair.q(u))
    for link in model.link_names:
        if not pmodel.existFrame(link, pin.BODY):
            continue
        expected = data.oMf[pmodel.getFrameId(link, pin.BODY)].homogeneous
        np.testing.assert_allclose(model.link_pose(u, link), expected, rtol=0,
                                   atol=1e-9 * max(1.0, np.abs(expected[:3, 3]).max()),
                                   err_msg=f'{path}: pose of {link}')


@pytest.mark.slow        # 204 robots: loading both ways and comparing takes a minute or two
@pytest.mark.parametrize('name', KEPT)
def test_real_urdf_loads_as_pinocchio_does_and_agrees(name, caplog):
    path = CORPUS / 'files' / name
    try:
        pin.buildModelFromUrdf(str(path))
    except (ValueError, RuntimeError):
        try:
            RobotModel.from_urdf_file(path, inertia_check='warn')
        except ModelError as exc:
            message = str(exc)
            assert message.startswith(str(path)) and NAMES_ELEMENT.search(message), message
        return
    options = {}
    try:
        RobotModel.from_urdf_file(path)
    except ModelError as exc:
        assert "inertia_check='warn'" in str(exc) and "link '" in str(exc), str(exc)
        options['inertia_check'] = 'warn'
    with caplog.at_level(logging.WARNING, logger='kron_dynamics'):
        model = RobotModel.from_urdf_file(path, **options)
    unexpected = [w for w in _warnings(caplog)
                  if not any(re.search(p, w) for p in ALLOWED_WARNINGS)]
    assert not unexpected, unexpected
    if model.nv == model.n:
        _poses_agree(model, path)
    if model.total_mass > 0:
        pinocchio_oracle.assert_agrees(pin, model, path, states=1)
