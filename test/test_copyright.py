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
Copyright and license headers.

Uses ament_copyright where it is installed (a normal ROS 2 install); its PyPI wheel does not
exist, so the same rule is also checked here directly: every Python file starts with the
project's copyright line and the Apache-2.0 license notice.
"""

import importlib.util

import pytest

from conftest import REPO

HEADER = ('# Copyright 2026 kron_dynamics developers\n#\n'
          '# Licensed under the Apache License, Version 2.0 (the "License");\n')
FILES = sorted([*REPO.glob('kron_dynamics/**/*.py'), *REPO.glob('test/*.py'),
                *REPO.glob('launch/*.py'), REPO / 'setup.py'])


@pytest.mark.copyright
@pytest.mark.linter
def test_every_python_file_has_the_header():
    missing = [str(f.relative_to(REPO)) for f in FILES if not f.read_text().startswith(HEADER)]
    assert len(FILES) > 30 and not missing, f'files without the copyright header: {missing}'


@pytest.mark.copyright
@pytest.mark.linter
def test_ament_copyright():
    if importlib.util.find_spec('ament_copyright') is None:
        pytest.skip('ament_copyright is not installable here (no PyPI wheel, no system ROS); '
                    'test_every_python_file_has_the_header checks the Apache-2.0 header, '
                    'and this test runs ament_copyright where ROS is installed')
    from ament_copyright.main import main
    assert main(argv=[str(REPO / p) for p in ('kron_dynamics', 'test', 'launch')]) == 0
