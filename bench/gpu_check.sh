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

# The checks of kron_dynamics.gpu on a machine with a CUDA GPU, in one run:
#   1. bench/bench_gpu.py (states per second against the CPU batch; gpu.json), first, while
#      nothing else uses the GPU or the cores;
#   2. bench/bench_gpu.py --variants (launch shapes, numba-cuda's kernel cache;
#      gpu_variants.json);
#   3. test/test_gpu.py on the device (KRON_DYNAMICS_GPU_TESTS=device): every generated
#      kernel against the CPU kernels, PyTorch and CuPy arrays in and out; TIAGo last.
# Each step runs under its own time limit, so that a slow one leaves the others their turn;
# the logs and gpu.json go to OUTDIR (default bench/results/gpu_check).
#
#   bash bench/gpu_check.sh [OUTDIR]
#   BENCH_REVISION=$(git rev-parse --short HEAD)  # where the copy's .git is not the one sent
#   BENCH_ARGS=--quick PYTEST_ARGS='-n 8' BENCH_SECONDS=300 VARIANTS_SECONDS=200 \
#       TEST_SECONDS=240 TIAGO_SECONDS=400 bash bench/gpu_check.sh
set -u
out=${1:-bench/results/gpu_check}
mkdir -p "$out"
py=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
{
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1
    "$py" - <<'PY'
import importlib.metadata as m
import sys
print('python', sys.version.split()[0])
for name in ('numpy', 'numba', 'llvmlite', 'numba-cuda', 'cuda-bindings', 'cuda-core',
             'torch', 'cupy-cuda13x', 'cupy-cuda12x'):
    try:
        print(name, m.version(name))
    except m.PackageNotFoundError:
        pass
from numba import cuda
print('numba.cuda.is_available()', cuda.is_available())
PY
} 2>&1 | tee "$out/env.txt"
set -o pipefail
timeout "${BENCH_SECONDS:-300}" "$py" bench/bench_gpu.py --out "$out" ${BENCH_ARGS:-} 2>&1 \
    | tee "$out/bench_gpu.log"
bench=$?
timeout "${VARIANTS_SECONDS:-200}" "$py" bench/bench_gpu.py --variants --out "$out" \
    ${BENCH_ARGS:-} 2>&1 | tee "$out/bench_gpu_variants.log"
variants=$?
# TIAGo on its planar base (51 coordinates) compiles for minutes: after the others, so that
# their summary (which test failed, and why) is printed whatever its time limit leaves
KRON_DYNAMICS_GPU_TESTS=device timeout "${TEST_SECONDS:-240}" "$py" -m pytest -v -rfEs --tb=short \
    -p no:cacheprovider test/test_gpu.py -k 'not TIAGo' ${PYTEST_ARGS:-} 2>&1 \
    | tee "$out/test_gpu.log"
tests=$?
KRON_DYNAMICS_GPU_TESTS=device timeout "${TIAGO_SECONDS:-400}" "$py" -m pytest -v -rfEs \
    --tb=short -p no:cacheprovider test/test_gpu.py -k TIAGo 2>&1 | tee "$out/test_gpu_tiago.log"
tiago=$?
echo "gpu_check: bench_gpu rc=$bench, variants rc=$variants, test_gpu rc=$tests," \
     "TIAGo rc=$tiago (124: its time limit)"
exit $(( bench != 0 || variants != 0 || tests != 0 || tiago != 0 ))
