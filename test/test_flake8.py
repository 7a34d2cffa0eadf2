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

"""ament_flake8 over the package, its tests, launch files and setup.py."""

from ament_flake8.main import main_with_errors
import pytest

from conftest import REPO

PATHS = [str(REPO / p) for p in ('kron_dynamics', 'test', 'launch', 'bench', 'setup.py')]


@pytest.mark.flake8
@pytest.mark.linter
@pytest.mark.slow
def test_flake8():
    rc, errors = main_with_errors(argv=PATHS)
    assert rc == 0, 'Found %d code style errors / warnings:\n' % len(errors) + '\n'.join(errors)
