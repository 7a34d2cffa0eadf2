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
A pytest plugin (``-p without_ros``) that makes every ROS 2 package unimportable.

For test_check_without_ros.py: the packages that the ROS 2 wheels of requirements.txt
install (the distributions named ``ros-*`` and the message packages built beside them)
raise ModuleNotFoundError and their pytest plugins are not loaded, as on a machine where ROS
was never installed.
"""

import importlib.abc
from importlib.metadata import distributions
import re
import sys


def ros_modules() -> set:
    """Return the top-level modules of the installed ROS 2 distributions."""
    names = set()
    for dist in distributions():
        name = dist.metadata['Name'] or ''
        if not (name.lower().startswith('ros-') or name.endswith('_interfaces')
                or name.startswith('ament')):
            continue
        for path in dist.files or ():
            top = path.parts[0]
            top = top[:-3] if top.endswith('.py') else top
            if top != 'setup' and re.fullmatch(r'[A-Za-z_]\w*', top):
                names.add(top)
    return names


class _NoRos(importlib.abc.MetaPathFinder):
    def __init__(self, names):
        self.names = names

    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in self.names:
            raise ModuleNotFoundError(f'No module named {name!r} (without_ros)', name=name)
        return None


BLOCKED = ros_modules()
sys.meta_path.insert(0, _NoRos(BLOCKED))


def pytest_addhooks(pluginmanager):
    """Keep pytest from loading the ROS packages' own plugins (ament's linter markers)."""
    from importlib.metadata import entry_points
    for ep in entry_points(group='pytest11'):
        if ep.value.split('.')[0].split(':')[0] in BLOCKED:
            pluginmanager.set_blocked(ep.name)
