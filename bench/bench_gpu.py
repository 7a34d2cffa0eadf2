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
Benchmark: the generated GPU kernels (kron_dynamics.gpu) in states per second, fp64.

Runs where a CUDA GPU is present (not numba's simulator); elsewhere it says so, writes
nothing and exits 0. For the 7-DOF Panda arm (fingers fixed, bench/lib/models.py) and TALOS
(talos_reduced.urdf, fixed base): N states already on the device, in Fortran order (the
transposed layout: consecutive threads read consecutive addresses), each kernel timed with
CUDA events over repeats after a warm-up, the best repeat reported; the CPU batch of the same
methods on this machine's cores, timed the same way (bench/lib/timing.per_call); agreement
with the CPU (largest relative difference); the time to generate and to compile each
robot's kernels. Targets (H100, fp64): Panda inverse dynamics >= 5 G states/s, M >= 1 G/s,
forward dynamics >= 0.5 G/s. Writes bench/results/gpu.json::

    .venv/bin/python bench/bench_gpu.py            # N = 2^22 states
    .venv/bin/python bench/bench_gpu.py --quick    # N = 2^18
"""

import argparse
import os
from pathlib import Path
import sys
import time

from lib import provenance
from lib.compare import relerr
from lib.models import find_robots_dir, panda_urdf, PANDA, TALOS
from lib.timing import per_call
import numpy as np

from kron_dynamics import RobotModel

RESULTS = Path(__file__).resolve().parent / 'results'
TARGETS = {('panda_arm', 'inverse_dynamics'): 5e9, ('panda_arm', 'mass_matrix'): 1e9,
           ('panda_arm', 'forward_dynamics'): 5e8}
CPU_N = 20000


def device_time(cuda, f, repeat: int) -> float:
    """Return the best of ``repeat`` runs of f() in seconds, by CUDA events."""
    f()
    cuda.synchronize()
    best = np.inf
    for _ in range(repeat):
        start, stop = cuda.event(), cuda.event()
        start.record()
        f()
        stop.record()
        stop.synchronize()
        best = min(best, start.elapsed_time(stop) * 1e-3)
    return best


def robot_rows(cuda, name: str, model, N: int, repeat: int, log, dtype=np.float64) -> dict:
    """Agreement, then GPU and CPU states per second of each method."""
    from kron_dynamics.gpu import GpuModel
    gpu = GpuModel(model, dtype=dtype)
    rng = np.random.default_rng(0)
    lower, upper = model.position_limits
    Q = rng.uniform(np.where(np.isfinite(lower), lower, -np.pi),
                    np.where(np.isfinite(upper), upper, np.pi), (N, model.n))
    V, A = rng.uniform(-1, 1, (2, N, model.n))
    T = model.inverse_dynamics(Q[:CPU_N], V[:CPU_N], A[:CPU_N])
    T = np.concatenate([T] * (N // CPU_N + 1))[:N]
    dQ, dV, dA, dT = (cuda.to_device(np.asfortranarray(X, dtype=dtype)) for X in (Q, V, A, T))
    calls = {'inverse_dynamics': ((dQ, dV, dA), (Q, V, A)), 'mass_matrix': ((dQ,), (Q,)),
             'forward_dynamics': ((dQ, dV, dT), (Q, V, T))}
    rows = {}
    for method, (device_args, host_args) in calls.items():
        ours = getattr(gpu, method)(*(x[:1000] for x in device_args)).copy_to_host()
        cpu = getattr(model, method)(*(x[:1000] for x in host_args))
        seconds = device_time(cuda, lambda: getattr(gpu, method)(*device_args, check=False),
                              repeat)
        cpu_seconds = per_call(lambda: getattr(model, method)(
            *(x[:CPU_N] for x in host_args)), 1.0, 5)['min_us'] * 1e-6
        rows[method] = {'N': N, 'gpu_states_per_s': N / max(seconds, 1e-12),
                        'cpu_states_per_s': CPU_N / cpu_seconds,
                        'agreement': relerr(ours, cpu, floor=0.0),
                        'target_states_per_s': TARGETS.get((name, method))}
        log(f"  {method}: GPU {rows[method]['gpu_states_per_s']:.3g}/s, CPU "
            f"{rows[method]['cpu_states_per_s']:.3g}/s, agreement {rows[method]['agreement']:.2g}")
    return {'n': model.n, 'dtype': np.dtype(dtype).name, 'generate_s': gpu.generate_seconds,
            'compile_s': gpu.compile_seconds, 'methods': rows}


def main(argv=None) -> int:
    """Run the benchmark where a GPU is present and write gpu.json."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--quick', action='store_true', help='fewer states (smoke test)')
    parser.add_argument('--out', default=str(RESULTS), help='output directory')
    args = parser.parse_args(argv)
    if os.environ.get('NUMBA_ENABLE_CUDASIM') == '1':
        print('bench_gpu: NUMBA_ENABLE_CUDASIM=1 is the simulator, not a GPU: nothing measured')
        return 0
    from numba import cuda
    if not cuda.is_available():
        print('bench_gpu: no CUDA GPU here (numba.cuda.is_available() is False): nothing '
              'measured, bench/results/gpu.json left as it is')
        return 0
    start = time.time()

    def log(msg):
        print(f'[{time.time() - start:6.1f} s] {msg}', flush=True)

    N = 1 << (18 if args.quick else 22)
    robots = Path(find_robots_dir(log))
    models = {'panda_arm': RobotModel.from_urdf_string(panda_urdf(robots / PANDA)),
              'talos_fixed': RobotModel.from_urdf_file(robots / TALOS)}
    results = {}
    for name, model in models.items():
        log(f'{name} (n = {model.n}), N = {N}')
        results[name] = robot_rows(cuda, name, model, N, 3 if args.quick else 10, log)
    log(f'panda_arm in float32, N = {N}')
    results['panda_arm_fp32'] = robot_rows(cuda, 'panda_arm_fp32', models['panda_arm'], N,
                                           3 if args.quick else 10, log, np.float32)
    device = cuda.get_current_device()
    provenance.write_result(args.out, 'gpu', {
        'quick': args.quick, 'gpu': device.name.decode() if isinstance(device.name, bytes)
        else str(device.name), 'cpu_threads': int(os.environ.get('NUMBA_NUM_THREADS',
                                                                 os.cpu_count())),
        'numba': __import__('numba').__version__, 'dtype': 'float64',
        'wall_seconds': round(time.time() - start, 1)}, {'robots': results}, log)
    return 0


if __name__ == '__main__':
    sys.exit(main())
