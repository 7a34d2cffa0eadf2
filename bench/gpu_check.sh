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
#   1. bench/bench_gpu.py (states per second against the CPU batch; gpu.json), then
#      bench/bench_gpu.py --variants (launch shapes, numba-cuda's kernel cache;
#      gpu_variants.json), then EXTRA_BENCH, more bench_gpu.py arguments (TALOS's forward
#      dynamics, say) into OUTDIR/extra: the timed steps, one after the other, so that no
#      two time the GPU at once;
#   2. beside them, at the lowest CPU priority (nice 19): test/test_gpu.py on the device
#      (KRON_DYNAMICS_GPU_TESTS=device): every generated kernel against the CPU kernels,
#      PyTorch and CuPy arrays in and out; TIAGo (its planar base, 51 velocities) in a
#      process of its own, TIAGO_ARGS more pytest arguments for it: it compiles for minutes
#      (its derivative test's 19 kernels 633 s on one core of the 2-core CI machine, split in
#      five tests that TIAGO_ARGS='-n 6' spreads over pytest-xdist's workers). These
#      compile on the CPU for most of their time; their kernels on the GPU are small, and
#      each GPU rate is the best of ten timed calls. The CPU batch's rates, though, are
#      timed beside them: on the H200 run of 2026-11-28 (a load of 16 on 16 cores) they
#      came out up to ten times low, so take the CPU column from a run without the tests
#      (TESTS=0).
# Each step runs under its own time limit, so that a slow one leaves the others their turn;
# a test still running after FAULT_SECONDS (default 240) has its stacks dumped into its log
# (pytest's faulthandler_timeout), so that a slow test and a stuck one can be told apart;
# the logs and the JSON go to OUTDIR (default bench/results/gpu_check; at most 8 files).
#
#   bash bench/gpu_check.sh [OUTDIR]
#   BENCH_REVISION=$(git rev-parse --short HEAD)  # where the copy's .git is not the one sent
#   BENCH_ARGS=--quick PYTEST_ARGS='-n 8' TIAGO_ARGS='-n 6' BENCH_SECONDS=300 \
#       VARIANTS_SECONDS=200 TEST_SECONDS=240 TIAGO_SECONDS=400 EXTRA_SECONDS=400 \
#       FAULT_SECONDS=240 \
#       EXTRA_BENCH='--robots talos_floating --methods forward_dynamics' \
#       bash bench/gpu_check.sh
set -u
out=${1:-bench/results/gpu_check}
mkdir -p "$out"
py=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
{
    date -u
    nproc
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
} 2>&1 | tee "$out/bench_gpu.log"
set -o pipefail
# the compile-bound steps, niced, each in the background (TESTS=0: none)
tests_pid=
tiago_pid=
if [ "${TESTS:-1}" != 0 ]; then
    KRON_DYNAMICS_GPU_TESTS=device timeout "${TEST_SECONDS:-240}" nice -n 19 "$py" -m pytest \
        -v -rfEs --tb=short -p no:cacheprovider -o faulthandler_timeout="${FAULT_SECONDS:-240}" \
        test/test_gpu.py -k 'not TIAGo' \
        ${PYTEST_ARGS:-} > "$out/test_gpu.log" 2>&1 &
    tests_pid=$!
    KRON_DYNAMICS_GPU_TESTS=device timeout "${TIAGO_SECONDS:-400}" nice -n 19 "$py" -m pytest \
        -v -rfEs --tb=short -p no:cacheprovider -o faulthandler_timeout="${FAULT_SECONDS:-240}" \
        test/test_gpu.py -k TIAGo ${TIAGO_ARGS:-} \
        > "$out/test_gpu_tiago.log" 2>&1 &
    tiago_pid=$!
fi
# the timed steps
timeout "${BENCH_SECONDS:-300}" "$py" bench/bench_gpu.py --out "$out" ${BENCH_ARGS:-} 2>&1 \
    | tee -a "$out/bench_gpu.log"
bench=$?
timeout "${VARIANTS_SECONDS:-200}" "$py" bench/bench_gpu.py --variants --out "$out" \
    ${BENCH_ARGS:-} 2>&1 | tee "$out/bench_gpu_variants.log"
variants=$?
extra=0
if [ -n "${EXTRA_BENCH:-}" ]; then
    timeout "${EXTRA_SECONDS:-400}" "$py" bench/bench_gpu.py --out "$out/extra" $EXTRA_BENCH \
        > "$out/bench_gpu_extra.log" 2>&1
    extra=$?
fi
tests=0
tiago=0
if [ -n "$tests_pid" ]; then
    wait "$tests_pid"; tests=$?
    wait "$tiago_pid"; tiago=$?
    tail -n 40 "$out/test_gpu.log"
fi
tail -n 5 "$out/test_gpu_tiago.log" "$out/bench_gpu_extra.log" 2>/dev/null
echo "gpu_check: bench_gpu rc=$bench, variants rc=$variants, test_gpu rc=$tests," \
     "TIAGo rc=$tiago, extra rc=$extra (124: its time limit)"
exit $(( bench != 0 || variants != 0 || tests != 0 || tiago != 0 || extra != 0 ))
