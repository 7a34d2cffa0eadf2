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
Where a benchmark result comes from: the stamp every bench script writes into its JSON.

``stamp()`` returns the git revision of the sources that ran (``+dirty`` when the package,
the bench scripts, config/ or urdf/ had uncommitted changes), the date, the machine (CPU
model, cores, architecture, Python) and its 1-minute load average when the run ended (other
work on a shared machine moves the timings). bench/report.py prints it under every table it
renders, so a number in docs/ always says which code on which machine produced it. Where
the sources ran from a copy whose ``.git`` is not the sender's (a lent GPU machine), the
sender names the revision it sent in ``$BENCH_REVISION``, which then stands instead of git's.
``regenerate_docs()`` is what every bench script calls after writing its JSON.
"""

import datetime
import json
import os
from pathlib import Path
import platform
import subprocess

REPO = Path(__file__).resolve().parents[2]      # bench/lib/provenance.py -> the checkout
# sources whose uncommitted changes make a measurement "+dirty" (results themselves excluded)
SOURCES = ['kron_dynamics', 'bench', ':(exclude)bench/results', 'config', 'urdf']


def git_revision() -> str:
    """Return the short commit of the work tree, '+dirty' if the measured sources changed."""
    if os.environ.get('BENCH_REVISION'):     # given by the sender of a copy (bench/gpu_check.sh)
        return os.environ['BENCH_REVISION']
    try:
        rev = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=REPO, text=True,
                             capture_output=True, timeout=10).stdout.strip()
        dirty = subprocess.run(['git', 'status', '--porcelain', '--', *SOURCES], cwd=REPO,
                               text=True, capture_output=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return 'unknown'
    return (rev or 'unknown') + ('+dirty' if rev and dirty else '')


def cpu_model() -> str:
    """Return the CPU model name (/proc/cpuinfo), or what platform knows."""
    try:
        for line in Path('/proc/cpuinfo').read_text().splitlines():
            if line.startswith('model name'):
                return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or 'unknown'


def stamp() -> dict:
    """Return the provenance fields of a result: revision, date, machine."""
    return {'git': git_revision(),
            'date': datetime.datetime.now().astimezone().isoformat(timespec='seconds'),
            'cpu': cpu_model(), 'cpu_count': os.cpu_count(), 'machine': platform.machine(),
            'python': platform.python_version(), 'loadavg': os.getloadavg()[0]}


def write_result(out_dir, stem: str, meta: dict, body: dict, log=print) -> Path:
    """
    Write ``out_dir/stem.json``: {'meta': the stamp and meta, **body}; re-render the docs.

    ``meta`` adds the script's own settings (and a load average, the libraries timed).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f'{stem}.json'
    path.write_text(json.dumps({'meta': {**stamp(), **meta}, **body}, indent=2) + '\n')
    log(f'wrote {path}')
    regenerate_docs(log)
    return path


def regenerate_docs(log=print) -> None:
    """Re-render docs/ (and the README's generated block) from bench/results/*.json."""
    import report     # bench/report.py (bench/ is on sys.path: the scripts run from there)
    changed = report.write_all()
    log('regenerated ' + (', '.join(changed) if changed else 'nothing (docs were up to date)'))
