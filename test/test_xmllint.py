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
XML files: well-formed, and the package manifests valid for ROS tooling.

ament_xmllint validates against the schema URL in package.xml, which needs the network;
here the manifests are checked with catkin_pkg (what colcon and rosdep parse them with) and
every XML file is parsed strictly.
"""

from catkin_pkg.package import parse_package
from lxml import etree
import pytest

from conftest import REPO

XML_FILES = sorted([REPO / 'package.xml', REPO / 'kron_dynamics_interfaces' / 'package.xml',
                    *REPO.glob('urdf/*.urdf')])


@pytest.mark.linter
@pytest.mark.xmllint
@pytest.mark.parametrize('path', XML_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_well_formed(path):
    etree.parse(str(path), etree.XMLParser(resolve_entities=False, no_network=True))


@pytest.mark.linter
@pytest.mark.xmllint
@pytest.mark.parametrize('directory', ['.', 'kron_dynamics_interfaces'])
def test_package_manifest(directory):
    package = parse_package(str(REPO / directory / 'package.xml'))
    package.validate()
    assert package.package_format == 3
    if directory == '.':
        depends = {d.name for d in package.exec_depends}
        assert {'rclpy', 'sensor_msgs', 'std_msgs', 'trajectory_msgs', 'python3-numpy',
                'python3-scipy', 'kron_dynamics_interfaces'} <= depends
        # the URDF reader is the package's own (model/urdf.py): urdf_parser_py is not used
        assert 'urdfdom_py' not in depends
        assert package.get_build_type() == 'ament_python'
