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
The comparison libraries of the benchmarks: imported, never installed here.

Pinocchio (PyPI ``pin``), ``example-robot-data`` and PyBullet come with requirements.txt
(they are the tests' oracles too); MuJoCo with bench/requirements.txt, which ``make bench``
installs. Each getter returns ``(module, None)`` or ``(None, reason)``; nothing raises.
``example-robot-data`` 6 is data only: its getter returns a namespace whose ``robots_dir`` is
the robots directory under the cmeel prefix.
"""

import importlib
import importlib.metadata
import types

from kron_dynamics.testing.pinocchio_pair import robots_dir

# key -> (PyPI name, import name, the requirements file that installs it)
LIBRARIES = {
    'pinocchio': ('pin', 'pinocchio', 'requirements.txt'),
    'example_robot_data': ('example-robot-data', 'example_robot_data', 'requirements.txt'),
    'pybullet': ('pybullet', 'pybullet', 'requirements.txt'),
    'mujoco': ('mujoco', 'mujoco', 'bench/requirements.txt'),
}
# versions recorded with every result beside the libraries'
RECORDED = ('numpy', 'numba', 'llvmlite', 'scipy')


def installed_version(distribution: str):
    """Return the installed version of a distribution, or None."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def load(key: str, log=print):
    """Import a comparison library; return (module, None) or (None, why it is missing)."""
    pypi_name, module_name, requirements = LIBRARIES[key]
    try:
        if key != 'example_robot_data':
            return importlib.import_module(module_name), None
        if robots_dir() is None:    # version 6: no module, its robots under cmeel's prefix
            raise ImportError('no share/example-robot-data/robots under the cmeel prefix')
        return types.SimpleNamespace(__name__=module_name, robots_dir=robots_dir()), None
    except Exception as exc:   # ImportError, or a broken binary extension
        reason = (f'import {module_name} failed ({type(exc).__name__}: {exc}): '
                  f'.venv/bin/pip install -r {requirements}')
        log(f'{key}: {reason}')
        return None, reason


def pinocchio(log=print):
    """Return (pinocchio module, None) or (None, reason)."""
    return load('pinocchio', log)


def example_robot_data(log=print):
    """Return (a namespace with ``robots_dir``, None) or (None, reason)."""
    return load('example_robot_data', log)


def versions() -> dict:
    """Return the installed versions of the comparison libraries and of numpy/numba."""
    names = [pypi for pypi, _, _ in LIBRARIES.values()] + list(RECORDED)
    return {name: installed_version(name) for name in names}
