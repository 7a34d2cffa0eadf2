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
A ROS 2 user's environment with the real tools, for test_ros_tools.py.

``../shared/ros2_cli/setup_ros_cli.sh`` builds it offline (PyPI only): a venv with the Kilted
wheels of requirements.txt, colcon, ``ros2`` (launch, run, topic, service, param, ...) and an
underlay with composition_interfaces. That takes minutes, so it is built once and kept under
``$XDG_CACHE_HOME/kron_dynamics/ros2_cli/<key>`` (default ``~/.cache``), the key a hash of
what goes into it (requirements.txt, the script, its tarballs, the Python); a change there
builds a new one. Each test session then copies this checkout's files (``git ls-files``:
tracked and untracked, not ignored) into a colcon workspace of its own in the cache (one per
checkout, so that CMake only rebuilds what changed) and runs a plain ``colcon build`` in it,
as a user would. The wheels' exported CMake targets name the wheel builder's include
directories; the CMake hook that works around it (``ros_wheels_fixups.cmake``) is given the
way a user gives colcon defaults, through ``COLCON_DEFAULTS_FILE``: the command stays
``colcon build``.
"""

import fcntl
import hashlib
import os
from pathlib import Path
import shlex
import shutil
import signal
import subprocess
import sys
import time

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / 'shared' / 'ros2_cli'
SKIP_REASON = (f'{SHARED} (the real ros2 CLI, ros2 launch and colcon, not on PyPI) is absent; '
               'test_launch_files.py checks the launch and params files statically')
SETUP_TIMEOUT_S = 1800
KEEP = ('HOME', 'USER', 'LOGNAME', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TMPDIR', 'TERM', 'SHELL',
        'XDG_CACHE_HOME', 'XDG_RUNTIME_DIR', 'ROS_DOMAIN_ID', 'ROS_AUTOMATIC_DISCOVERY_RANGE',
        'PIP_INDEX_URL', 'PIP_EXTRA_INDEX_URL', 'PIP_TRUSTED_HOST', 'http_proxy', 'https_proxy',
        'HTTP_PROXY', 'HTTPS_PROXY', 'no_proxy', 'NO_PROXY', 'CI')


def available() -> bool:
    """Return True if ../shared/ros2_cli is there."""
    return (SHARED / 'setup_ros_cli.sh').is_file()


def cache_root() -> Path:
    """Return the directory that keeps the environments between test sessions."""
    base = os.environ.get('XDG_CACHE_HOME') or str(Path.home() / '.cache')
    return Path(base) / 'kron_dynamics' / 'ros2_cli'


def python311() -> str:
    """Return the interpreter the environment is built with (as setup_ros_cli.sh picks it)."""
    found = shutil.which('python3.11')
    return os.path.realpath(found) if found else sys.executable


def environment_key() -> str:
    """Return a hash of everything that goes into the user environment."""
    digest = hashlib.sha256()
    for path in [REPO / 'requirements.txt', *sorted(SHARED.iterdir())]:
        digest.update(path.name.encode())
        digest.update(path.read_bytes() if path.stat().st_size < 1_000_000
                      else str(path.stat().st_size).encode())
    digest.update(python311().encode())
    return digest.hexdigest()[:16]


def base_environment() -> dict:
    """Return a clean environment: none of this venv's ROS or Python variables, system PATH."""
    env = {k: os.environ[k] for k in KEEP if k in os.environ}
    env['PATH'] = os.pathsep.join(p for p in os.environ.get('PATH', '/usr/bin:/bin').split(
        os.pathsep) if not (Path(p) / 'activate').is_file())
    return env


def sourced(scripts: list, env: dict) -> dict:
    """Return the environment after sourcing scripts in bash."""
    command = 'set +u; ' + ''.join(f'source {shlex.quote(str(s))}; ' for s in scripts)
    out = subprocess.run(['bash', '-c', command + 'env -0'], env=env, capture_output=True,
                         check=True).stdout.decode()
    return dict(item.split('=', 1) for item in out.split('\0') if '=' in item)


class Locked:
    """An exclusive lock file held until release() (or the process ends)."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file = open(path, 'w')
        fcntl.flock(self.file, fcntl.LOCK_EX)

    def release(self) -> None:
        """Release the lock."""
        fcntl.flock(self.file, fcntl.LOCK_UN)
        self.file.close()


def user_environment(log) -> Path:
    """Build (or reuse) the cached user environment; return its directory."""
    key = environment_key()
    sa = cache_root() / key
    lock = Locked(cache_root() / f'{key}.lock')
    try:
        if not (sa / '.complete').is_file():
            log(f'building the ROS 2 user environment in {sa} (minutes; cached afterwards)')
            shutil.rmtree(sa, ignore_errors=True)
            sa.mkdir(parents=True)
            env = base_environment()
            env.update(SA=str(sa), REPO=str(REPO), PYTHON=python311())
            with open(sa / 'setup.log', 'w') as out:
                done = subprocess.run(['bash', str(SHARED / 'setup_ros_cli.sh')], cwd=REPO,
                                      env=env, stdout=out, stderr=subprocess.STDOUT,
                                      timeout=SETUP_TIMEOUT_S)
            if done.returncode:
                raise RuntimeError(f'setup_ros_cli.sh failed; log: {sa / "setup.log"}:\n'
                                   + (sa / 'setup.log').read_text()[-3000:])
            (sa / '.complete').write_text(key)
    finally:
        lock.release()
    return sa


def copy_checkout(dest: Path) -> None:
    """Copy the files git sees in this checkout (tracked and untracked, not ignored) to dest."""
    listed = subprocess.run(['git', '-C', str(REPO), 'ls-files', '-z', '-co',
                             '--exclude-standard'], capture_output=True, check=True).stdout
    shutil.rmtree(dest, ignore_errors=True)
    for name in sorted(set(listed.decode().split('\0')) - {''}):
        src, dst = REPO / name, dest / name
        if not os.path.lexists(src):
            continue                      # deleted in the working tree
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dst)
        else:
            shutil.copy2(src, dst)        # modification times kept: CMake rebuilds what changed


class Workspace:
    """A colcon workspace with this checkout in src/, built with a plain ``colcon build``."""

    def __init__(self, sa: Path, log):
        self.sa = sa
        checkout = hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
        self.root = sa / 'workspaces' / checkout
        self.lock = Locked(sa / 'workspaces' / f'{checkout}.lock')   # held for the session
        venv = sa / 'venv'
        defaults = sa / 'colcon_defaults.yaml'
        defaults.write_text(
            '# what the PyPI wheels need (see ../shared/ros2_cli/README.md), as a user\n'
            '# would keep it in ~/.colcon/defaults.yaml\n'
            'build:\n  cmake-args:\n'
            f'    - -DCMAKE_PROJECT_INCLUDE={SHARED / "ros_wheels_fixups.cmake"}\n'
            '    - -DBUILD_TESTING=OFF\n'
            f'    - -DPython3_EXECUTABLE={venv / "bin" / "python"}\n')
        env = base_environment()
        env.update(AMENT_PREFIX_PATH=str(venv), CMAKE_PREFIX_PATH=str(venv),
                   COLCON_DEFAULTS_FILE=str(defaults))
        self.build_env = sourced([venv / 'bin' / 'activate',
                                  sa / 'tools_ws' / 'install' / 'setup.bash'], env)
        self.log = log
        self.env = None

    def build(self) -> subprocess.CompletedProcess:
        """Copy the checkout into src/, run ``colcon list`` and ``colcon build``."""
        src = self.root / 'src' / 'kron_dynamics'
        copy_checkout(src)
        for stale in ('install', 'log'):     # nothing of an earlier build may stand in
            shutil.rmtree(self.root / stale, ignore_errors=True)
        env = dict(self.build_env, MAKEFLAGS='-j2')
        self.listed = subprocess.run(['colcon', 'list'], cwd=self.root, env=env,
                                     capture_output=True, text=True, timeout=120)
        self.log(f'colcon build in {self.root}')
        done = subprocess.run(['colcon', 'build'], cwd=self.root, env=env,
                              capture_output=True, text=True, timeout=1800)
        if done.returncode == 0:
            self.env = sourced([self.root / 'install' / 'setup.bash'], self.build_env)
            self.env.update(PYTHONUNBUFFERED='1',
                            NUMBA_CACHE_DIR=str(self.sa / 'numba_cache'),
                            ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST',
                            ROS_DOMAIN_ID=os.environ['ROS_DOMAIN_ID'])
        return done

    def share(self) -> Path:
        """Return the installed share/kron_dynamics directory."""
        return self.root / 'install' / 'kron_dynamics' / 'share' / 'kron_dynamics'

    def daemon_pids(self) -> list:
        """Return the pids of this environment's ros2 daemons on this session's domain."""
        python = str(self.sa / 'venv' / 'bin' / 'python')
        found = []
        for entry in Path('/proc').iterdir():
            if not entry.name.isdigit():
                continue
            try:
                argv = (entry / 'cmdline').read_bytes().decode().split('\0')
            except (OSError, ValueError):
                continue                  # gone, or not ours to read
            if (argv[0] != python or '--ros-domain-id' not in argv
                    or not any('ros2cli.daemon.daemonize' in a for a in argv)):
                continue
            k = argv.index('--ros-domain-id')
            if argv[k + 1:k + 2] == [self.env['ROS_DOMAIN_ID']]:
                found.append(int(entry.name))
        return found

    def stop_daemon(self, timeout: float = 30.0) -> str:
        """
        Stop this session's ros2 daemon, as ``ros2 daemon stop``; kill it where that hangs.

        A ros2 daemon is one long-lived DDS participant that sees every other come and go.
        Fast DDS can deadlock it when a peer leaves: the thread that removes the peer's
        writer holds the discovery lock and waits for the timer thread, which waits for that
        lock (eProsima/Fast-DDS#6502; seen here once, in a loaded CI replica). The daemon
        then answers with a frozen graph ('Node not found') and hangs in its own shutdown.
        Return what was done, for the log.
        """
        try:
            done = subprocess.run(['ros2', 'daemon', 'stop'], env=self.env,
                                  capture_output=True, text=True, timeout=timeout)
            deadline = time.monotonic() + 10      # the process ends after its socket closes
            while done.returncode == 0 and time.monotonic() < deadline:
                if not self.daemon_pids():
                    return 'ros2 daemon stop: ' + done.stdout.strip()
                time.sleep(0.1)
        except subprocess.TimeoutExpired:
            pass
        pids = self.daemon_pids()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return f'ros2 daemon stop did not stop it (in {timeout:g} s): killed pid(s) {pids}'

    def close(self) -> None:
        """Stop the ros2 daemon of this session, release the workspace."""
        if self.env is not None:
            self.log(self.stop_daemon())
        self.lock.release()
