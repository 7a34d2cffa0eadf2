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

"""Where the package's data files are: ``urdf/``, ``config/``, ``launch/`` (source, installed)."""

from pathlib import Path

PACKAGE = 'kron_dynamics'
SOURCE_ROOT = Path(__file__).resolve().parent.parent


def data_dir(kind: str) -> Path:
    """Directory of the package's ``urdf``/``config``/``launch`` files (source or installed)."""
    source = SOURCE_ROOT / kind
    if source.is_dir():
        return source
    try:
        from ament_index_python.packages import get_package_share_directory
        return Path(get_package_share_directory(PACKAGE)) / kind
    except Exception:  # not installed with ament: fall back to the source tree path
        return source
