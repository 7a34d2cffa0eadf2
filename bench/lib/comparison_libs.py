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
The comparison libraries of the benchmarks, installed on demand into the running venv.

Pinocchio (PyPI ``pin``), ``example-robot-data`` (the Franka Panda URDF), ``pybullet`` and
``mujoco``. A library is installed from PyPI only if its import fails, with a pip constraints
file that pins the numpy (and numba, llvmlite, scipy) versions installed now, so that
installing never changes numpy: numba needs the numpy it was installed with.

Each getter returns ``(module, None)`` or ``(None, reason)``; nothing raises.
``example-robot-data`` 6 is data only (the URDFs under the cmeel prefix's
``share/example-robot-data/robots``): its getter returns that directory.

    .venv/bin/python bench/lib/comparison_libs.py            # install what is missing, report
    .venv/bin/python bench/lib/comparison_libs.py --no-install
"""

import argparse
import importlib
import importlib.metadata
import os
from pathlib import Path
import subprocess
import sys
import tempfile
import types

from kron_dynamics.testing.pinocchio_pair import robots_dir

# key -> (PyPI name, import name)
LIBRARIES = {
    'pinocchio': ('pin', 'pinocchio'),
    'example_robot_data': ('example-robot-data', 'example_robot_data'),
    'pybullet': ('pybullet', 'pybullet'),
    'mujoco': ('mujoco', 'mujoco'),
}
# installed distributions whose versions an install must not change
PINNED = ('numpy', 'numba', 'llvmlite', 'scipy')
INSTALL_TIMEOUT_S = 1800

_cache: dict = {}


def installed_version(distribution: str):
    """Return the installed version of a distribution, or None."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def constraints_text() -> str:
    """Return pip constraints pinning numpy and friends to the versions installed now."""
    lines = []
    for dist in PINNED:
        version = installed_version(dist)
        if version is not None:
            lines.append(f'{dist}=={version}')
    return '\n'.join(lines) + '\n'


def pip_install(pypi_name: str, log=print):
    """pip-install one distribution under the numpy constraints; return None or a reason."""
    before = {d: installed_version(d) for d in PINNED}
    with tempfile.TemporaryDirectory() as tmp:
        constraints = Path(tmp) / 'constraints.txt'
        constraints.write_text(constraints_text())
        cmd = [sys.executable, '-m', 'pip', 'install', '--disable-pip-version-check',
               '--prefer-binary', '-c', str(constraints), pypi_name]
        log(f'installing {pypi_name}: {" ".join(cmd[2:])}  (constraints: '
            f'{constraints.read_text().split()})')
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True,
                                  timeout=INSTALL_TIMEOUT_S, env={**os.environ})
        except subprocess.TimeoutExpired:
            return f'pip install {pypi_name} timed out after {INSTALL_TIMEOUT_S} s'
    importlib.invalidate_caches()
    after = {d: installed_version(d) for d in PINNED}
    changed = {d: (before[d], after[d]) for d in PINNED if before[d] != after[d]}
    if changed:   # must not happen with the constraints; say so loudly if it does
        log(f'WARNING: installing {pypi_name} changed {changed}')
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-6:]
        return f'pip install {pypi_name} failed (exit {proc.returncode}): ' + ' | '.join(tail)
    return None


def add_cmeel_paths():
    """Put cmeel prefixes on sys.path (what cmeel.pth does at start-up, for this process)."""
    sitelib = Path('lib', f'python{sys.version_info[0]}.{sys.version_info[1]}', 'site-packages')
    for path in list(sys.path):
        candidate = Path(path or '.') / 'cmeel.prefix' / sitelib
        if candidate.is_dir() and str(candidate) not in sys.path:
            sys.path.append(str(candidate))
    importlib.invalidate_caches()


def _import(key: str):
    pypi_name, module_name = LIBRARIES[key]
    if key == 'example_robot_data':
        try:
            return importlib.import_module(module_name)   # versions < 6 have a module
        except ImportError:
            path = robots_dir()
            if path is None:
                raise ImportError('example-robot-data is not installed') from None
            return types.SimpleNamespace(__name__='example_robot_data', robots_dir=path)
    return importlib.import_module(module_name)


def load(key: str, install: bool = True, log=print):
    """Import a comparison library, installing it first if needed; return (module, reason)."""
    if key in _cache:
        return _cache[key]
    pypi_name, module_name = LIBRARIES[key]
    try:
        result = (_import(key), None)
    except Exception as exc:   # ImportError, or a broken binary extension
        first = f'import {module_name} failed: {type(exc).__name__}: {exc}'
        if not install:
            result = (None, first + ' (installing disabled)')
        else:
            reason = pip_install(pypi_name, log=log)
            if reason is not None:
                result = (None, reason)
            else:
                add_cmeel_paths()
                try:
                    result = (_import(key), None)
                except Exception as exc2:
                    result = (None, f'installed {pypi_name} but import {module_name} failed: '
                                    f'{type(exc2).__name__}: {exc2}')
    _cache[key] = result
    return result


def pinocchio(install: bool = True, log=print):
    """Return (pinocchio module, None) or (None, reason)."""
    return load('pinocchio', install, log)


def example_robot_data(install: bool = True, log=print):
    """Return (module with ``robots_dir`` (data only, version 6) or the module, None)."""
    return load('example_robot_data', install, log)


def pybullet(install: bool = True, log=print):
    """Return (pybullet module, None) or (None, reason)."""
    return load('pybullet', install, log)


def mujoco(install: bool = True, log=print):
    """Return (mujoco module, None) or (None, reason)."""
    return load('mujoco', install, log)


def load_all(install: bool = True, log=print) -> dict:
    """Return {key: (module or None, reason or None)} for every comparison library."""
    return {key: load(key, install, log) for key in LIBRARIES}


def versions() -> dict:
    """Return the installed versions of the comparison libraries and of numpy/numba."""
    names = [pypi for pypi, _ in LIBRARIES.values()] + list(PINNED)
    return {name: installed_version(name) for name in names}


def main(argv=None) -> int:
    """Install (if needed) and import every comparison library; print what loaded."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--no-install', action='store_true', help='only try to import')
    args = parser.parse_args(argv)
    numpy_before = installed_version('numpy')
    status = load_all(install=not args.no_install)
    for key, (module, reason) in status.items():
        pypi_name = LIBRARIES[key][0]
        if module is None:
            print(f'{key:>20}: not available: {reason}')
        else:
            print(f'{key:>20}: {pypi_name} {installed_version(pypi_name)}')
    numpy_after = installed_version('numpy')
    print(f'{"numpy":>20}: {numpy_after}' + ('' if numpy_after == numpy_before
                                             else f' (CHANGED from {numpy_before})'))
    return 0 if numpy_after == numpy_before else 1


if __name__ == '__main__':
    sys.exit(main())
