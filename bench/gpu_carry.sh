#!/bin/bash
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

# Prepare .gpu/ (ignored by git through .git/info/exclude), what a lent GPU machine without
# a package index needs beside the working tree to run bench/gpu_check.sh:
#   .gpu/whl/   the numba-cuda wheel of the `gpu` extra, for that machine's Python (3.12);
#   .gpu/site/  example-robot-data's URDFs (no meshes: nothing here reads them) behind a
#               stub dist-info, so that robots_dir() finds them; pybullet_data's URDFs behind a
#               stub package of its getDataPath() (test_gpu's PyBullet robots); and a
#               sitecustomize.py that gives NumPy 2.5 back np.row_stack (numba-cuda 0.30.4
#               overloads it at import; 2.5 removed it).
# Done here, it costs no device time. Then carry it (the run tool's carry: [".gpu"]) and on
# the GPU machine, from the repository root:
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl
#   cp -r .gpu/site/. /tmp/site/ && export PYTHONPATH=/tmp/site:$PWD:$PWD/test
#   BENCH_REVISION=<the commit sent> bash bench/gpu_check.sh "$OUT"
#
#   bash bench/gpu_carry.sh            # PYTHON=.venv/bin/python by default
set -eu
cd "$(dirname "$0")/.."
py=${PYTHON:-.venv/bin/python}
rm -rf .gpu
mkdir -p .gpu/whl .gpu/site .git/info
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
"$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 -d .gpu/whl numba-cuda==0.30.4
robots=$("$py" -c 'from kron_dynamics.testing.pinocchio_pair import robots_dir; print(robots_dir())')
if [ "$robots" = None ]; then
    echo "gpu_carry: example-robot-data is not installed for $py" >&2
    exit 1
fi
copy_urdfs() {    # copy_urdfs FROM TO: every URDF under FROM, at its place under TO
    (cd "$1" && find . -name '*.urdf' -print) | while read -r f; do
        mkdir -p "$2/$(dirname "$f")"
        cp "$1/$f" "$2/$f"
    done
}
prefix=cmeel.prefix/share/example-robot-data/robots
copy_urdfs "$robots" ".gpu/site/$prefix"
dist=.gpu/site/example_robot_data-6.0.0.dist-info
mkdir -p "$dist"
printf 'Metadata-Version: 2.1\nName: example-robot-data\nVersion: 6.0.0\n' > "$dist/METADATA"
(cd .gpu/site && find cmeel.prefix -name '*.urdf' | sed 's/$/,,/') > "$dist/RECORD"
bullet=$("$py" -c 'import pybullet_data; print(pybullet_data.getDataPath())' 2>/dev/null) \
    || bullet=
if [ -n "$bullet" ]; then
    copy_urdfs "$bullet" .gpu/site/pybullet_data
    cat > .gpu/site/pybullet_data/__init__.py <<'PY'
"""pybullet_data's URDFs alone (bench/gpu_carry.sh): its getDataPath(), what test_gpu reads."""
import os


def getDataPath():
    return os.path.dirname(os.path.abspath(__file__))
PY
else
    echo "gpu_carry: pybullet_data is not installed for $py: test_gpu's PyBullet robots" \
         "will be skipped there" >&2
fi
cat > .gpu/site/sitecustomize.py <<'PY'
"""NumPy 2.5 removed np.row_stack, which numba-cuda 0.30.4 overloads at import."""
import numpy as np

if not hasattr(np, 'row_stack'):
    np.row_stack = np.vstack
PY
echo "gpu_carry: $(du -sh .gpu | cut -f1) in .gpu ($(ls .gpu/whl)," \
     "$(grep -c urdf "$dist/RECORD") URDFs of example-robot-data," \
     "$(find .gpu/site/pybullet_data -name '*.urdf' 2>/dev/null | wc -l) of pybullet_data)"
