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
(talos_reduced.urdf, fixed base and on a free flyer): N states already on the device, in
Fortran order (the transposed layout: consecutive threads read consecutive addresses), each
kernel timed with CUDA events over repeats after a warm-up, the best repeat reported, once
into an output the caller keeps (``out=``) and once allocating its result; the CPU
batch of the same methods on this machine's cores, timed the same way
(bench/lib/timing.per_call); agreement with the CPU (largest relative difference); the time
to generate and to compile each robot's kernels. Targets (H100, fp64): Panda inverse
dynamics >= 5 G states/s, M >= 1 G/s, forward dynamics >= 0.5 G/s; TALOS on a free flyer,
inverse dynamics >= 0.5 G/s. Then the Panda's derivatives of inverse and forward dynamics
(three nv x nv results per state, forward mode over the generated row; an eighth of the
states; no target: the issue's anchor is GRiD's 11 M/s for forward-dynamics gradients),
last so that a cut run has the targets' rows. With ``--all``, or where ``--robots`` names
them, the solves along a tree and in contact too: TALOS's forward dynamics' derivatives (a
32nd of the states), and constrained forward dynamics (an eighth) of the Panda holding its
hand still and of TALOS on its two soles (``REGISTER_CONTACTS``); ``--name gpu_solves``
writes them beside gpu.json instead of over it. Beside each rate, the memory-bound limit: the
device's bandwidth (a large device-to-device copy, bytes read plus bytes written) over the
bytes one state reads and writes. TALOS runs only the method of its target unless
``--all`` asks for every method and TALOS on a fixed base too (its written-out kernels take
minutes to compile: see ``--registers``). Writes bench/results/gpu.json.

``--registers`` needs no GPU, only numba-cuda and ptxas (the CUDA toolkit's, or the one of
the nvidia-cuda-nvcc wheel that ``kron_dynamics[gpu]`` brings): each generated kernel
compiled to PTX for the H100 (sm_90) and assembled by ``ptxas -v``, which reports the
registers per thread and the bytes spilled to local memory, the first sign of a kernel too
large to unroll; the kernels in contact too, for a contact set per robot
(``REGISTER_CONTACTS``: the Panda's hand held still, TALOS on its two soles). Writes
bench/results/gpu_registers.json::

    .venv/bin/python bench/bench_gpu.py               # N = 2^22 states
    .venv/bin/python bench/bench_gpu.py --quick       # N = 2^18
    .venv/bin/python bench/bench_gpu.py --all         # every method of every robot
    .venv/bin/python bench/bench_gpu.py --robots talos_floating --methods forward_dynamics
    .venv/bin/python bench/bench_gpu.py --name gpu_solves --robots talos_floating \
        talos_floating_derivatives panda_arm_contacts talos_floating_contacts \
        --methods forward_dynamics forward_dynamics_derivatives constrained_forward_dynamics
    .venv/bin/python bench/bench_gpu.py --variants    # launch shapes, the kernel cache
    .venv/bin/python bench/bench_gpu.py --registers   # no GPU needed
    .venv/bin/python bench/bench_gpu.py --registers --kernels rnea mass_matrix
"""

import argparse
import importlib.metadata
import json
import importlib.util
import os
from pathlib import Path
import re
import shutil
import subprocess
import sys
import tempfile
import time

from lib import provenance
from lib.comparison_libs import installed_version
from lib.compare import relerr
from lib.models import find_robots_dir, panda_urdf, PANDA, TALOS
from lib.timing import per_call
import numpy as np

from kron_dynamics import Contact, RobotModel

RESULTS = Path(__file__).resolve().parent / 'results'
TARGETS = {('panda_arm', 'inverse_dynamics'): 5e9, ('panda_arm', 'mass_matrix'): 1e9,
           ('panda_arm', 'forward_dynamics'): 5e8, ('talos_floating', 'inverse_dynamics'): 5e8}
CPU_N = 20000
METHODS = ('inverse_dynamics', 'mass_matrix', 'forward_dynamics')
DERIVATIVES = ('inverse_dynamics_derivatives', 'forward_dynamics_derivatives')
CONTACT_METHODS = ('constrained_forward_dynamics',)
VARIANT_THREADS = (64, 128, 256)
VARIANT_REGISTERS = (None, 64, 96)
# what each robot runs without --all: TALOS only the method of its target
DEFAULT_METHODS = {'panda_arm': METHODS, 'talos_floating': ('inverse_dynamics',)}
ROBOTS = ('panda_arm', 'talos_fixed', 'talos_floating')     # the models main() loads
# the rows of the plan: the robots, the Panda also in fp32 and its derivatives; with --all
# or when --robots names them, TALOS's solves along its tree (its forward dynamics' derivatives,
# TALOS on its soles) and the Panda's hand held still
PLAN_KEYS = (ROBOTS[0], 'panda_arm_fp32', *ROBOTS[1:], 'panda_arm_derivatives',
             'talos_floating_derivatives', 'panda_arm_contacts', 'talos_floating_contacts')
SM = (9, 0)           # the H100's compute capability, which the targets are set for
REGISTER_ROBOTS = ('panda_arm', 'talos_floating')     # the robots of the targets
# --registers: the contacts whose kernels (contacts.py's, the contact derivatives') are
# compiled too, and the contacts of the *_contacts rows' constrained forward dynamics: the
# Panda's hand held still (6-D), TALOS standing on its two soles (6-D each)
REGISTER_CONTACTS = {'panda_arm': (('panda_hand_tcp', 6),),
                     'talos_floating': (('left_sole_link', 6), ('right_sole_link', 6))}
PTXAS = {'registers': r'Used (\d+) registers', 'spill_stores': r'(\d+) bytes spill stores',
         'spill_loads': r'(\d+) bytes spill loads', 'stack': r'(\d+) bytes stack frame'}


def ptxas() -> str | None:
    """Return the ptxas of numba-cuda's nvidia-cuda-nvcc wheel, else the one on PATH."""
    try:
        spec = importlib.util.find_spec('nvidia.cuda_nvcc')
    except ModuleNotFoundError:        # no nvidia namespace package at all
        spec = None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        if (Path(folder) / 'bin' / 'ptxas').is_file():
            return str(Path(folder) / 'bin' / 'ptxas')
    return shutil.which('ptxas')


def kernel_signatures() -> dict:
    """Return the signature of every kernel --registers compiles, by the kernel's name."""
    from kron_dynamics.gpu import (CONSTRAINED_SIGNATURE, CONTACT_SIGNATURES,
                                   DERIVATIVE_SIGNATURES, SIGNATURES)
    return {**SIGNATURES, **DERIVATIVE_SIGNATURES, **CONTACT_SIGNATURES,
            'contact_derivatives': CONSTRAINED_SIGNATURE}


def contact_sources(model, contacts) -> tuple:
    """
    Return (m, the contact kernels' source, the contact derivatives' source) for ``contacts``.

    As GpuModel writes them: contacts.py's module for their m rows and
    ``contact_derivatives_source``'s.
    """
    from kron_dynamics.gpu.constrained_derivatives import contact_derivatives_source
    from kron_dynamics.gpu.contacts import contacts_source
    m = sum(c.dim for c in contacts)
    return m, contacts_source(model, m), contact_derivatives_source(model, contacts)


def kernel_registers(model, assembler: str, log, kernels=None, contacts=()) -> dict:
    """
    Return ptxas -v's registers, spill bytes and stack of each generated kernel (sm_90).

    With the seconds that compiling it took (NVVM to PTX, then ptxas): what a GpuModel's
    first call of the kernel waits for, less the driver's loading. ``kernels``: only these
    (names of kernel_signatures()), else every one; ``contacts`` (Contact objects): the
    contact set whose kernels are compiled, none if empty.
    """
    from kron_dynamics.gpu import ptx as kernel_ptx
    from kron_dynamics.gpu.codegen import source
    from kron_dynamics.gpu.tangent import derivatives_source
    text, derivatives = source(model), derivatives_source(model)
    namespace = {}
    exec(compile(text, f'<{model.name} kernels>', 'exec'), namespace)
    exec(compile(derivatives, f'<{model.name} derivatives>', 'exec'), namespace)
    out = {'lines': text.count('\n'), 'derivative_lines': derivatives.count('\n')}
    signatures = kernel_signatures()
    if contacts:
        m, rows, constrained = contact_sources(model, contacts)
        exec(compile(rows, f'<{model.name} contacts>', 'exec'), namespace)
        exec(compile(constrained, f'<{model.name} contact derivatives>', 'exec'), namespace)
        out['contacts'] = {'links': [c.link for c in contacts], 'dims': [c.dim for c in contacts],
                           'm': m, 'lines': rows.count('\n'),
                           'derivative_lines': constrained.count('\n')}
    signatures = {k: v for k, v in signatures.items() if k in namespace}
    with tempfile.TemporaryDirectory() as folder:
        for name, signature in signatures.items():
            if kernels and name not in kernels:
                continue
            begin = time.perf_counter()
            ptx = kernel_ptx(namespace[name], signature, SM)
            path = Path(folder) / f'{name}.ptx'
            path.write_text(ptx)
            report = subprocess.run([assembler, f'-arch=sm_{SM[0]}{SM[1]}', '-v', str(path),
                                     '-o', os.devnull], capture_output=True, text=True,
                                    check=True)
            found = {key: re.search(pattern, report.stdout + report.stderr)
                     for key, pattern in PTXAS.items()}
            out[name] = {key: int(m.group(1)) if m else None for key, m in found.items()}
            out[name]['compile_s'] = time.perf_counter() - begin
            log(f'  {name}: {out[name]}')
    return out


def registers(args, models: dict, log) -> int:
    """Write gpu_registers.json: what ptxas reports of every kernel of every robot."""
    assembler = ptxas()
    if assembler is None:
        print('bench_gpu --registers: no ptxas (install kron_dynamics[gpu] or the CUDA toolkit)')
        return 1
    version = subprocess.run([assembler, '--version'], capture_output=True, text=True).stdout
    results = {}
    for name in REGISTER_ROBOTS:
        model = models[name]
        log(f'{name} (nv = {model.nv})')
        contacts = [Contact(link, dim=dim) for link, dim in REGISTER_CONTACTS[name]]
        log(f'  contacts: {", ".join(f"{c.link} ({c.dim}-D)" for c in contacts)}')
        found = kernel_registers(model, assembler, log, args.kernels, contacts)
        results[name] = {'nv': model.nv, **found}
    provenance.write_result(args.out, 'gpu_registers', {
        'sm': f'{SM[0]}.{SM[1]}', 'ptxas': version.strip().splitlines()[-1],
        'numba_cuda': __import__('numba_cuda').__version__}, {'robots': results}, log)
    return 0


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


def bandwidth(cuda, repeat: int) -> float:
    """Return the device's bytes per second of a 2 GiB device-to-device copy (read + write)."""
    source = cuda.to_device(np.ones(1 << 28))
    target = cuda.device_array_like(source)
    return 2 * source.nbytes / device_time(cuda, lambda: target.copy_to_device(source), repeat)


def result_shape(model, method: str, N: int, m: int = 0) -> tuple:
    """Return the shapes of a method's results for N states (the derivatives: three)."""
    if method in DERIVATIVES:
        return ((N, model.nv, model.nv),) * 3
    if method in CONTACT_METHODS:           # (v', lambda) of m contact rows
        return ((N, model.nv), (N, m))
    return ((N, model.nv, model.nv) if method == 'mass_matrix' else (N, model.nv),)


def states(cuda, model, N: int, dtype=np.float64) -> dict:
    """Return {method: (device arguments, host arguments)} of N states, Fortran order."""
    rng = np.random.default_rng(0)
    Q = np.stack([model.random_configuration(rng) for _ in range(CPU_N)])
    Q = np.concatenate([Q] * (N // CPU_N + 1))[:N]
    V, A = rng.uniform(-1, 1, (2, N, model.nv))
    T = model.inverse_dynamics(Q[:CPU_N], V[:CPU_N], A[:CPU_N])
    T = np.concatenate([T] * (N // CPU_N + 1))[:N]
    dQ, dV, dA, dT = (cuda.to_device(np.asfortranarray(X, dtype=dtype)) for X in (Q, V, A, T))
    return {'inverse_dynamics': ((dQ, dV, dA), (Q, V, A)), 'mass_matrix': ((dQ,), (Q,)),
            'forward_dynamics': ((dQ, dV, dT), (Q, V, T)),
            'inverse_dynamics_derivatives': ((dQ, dV, dA), (Q, V, A)),
            'forward_dynamics_derivatives': ((dQ, dV, dT), (Q, V, T)),
            'constrained_forward_dynamics': ((dQ, dV, dT), (Q, V, T))}


def _rows(args, k: int) -> tuple:
    """Return a call's arguments with its state arrays cut to their first k rows."""
    return tuple(x[:k] if hasattr(x, 'shape') else x for x in args)


def _parts(x) -> tuple:
    """Return a method's results as a tuple (the derivatives return three)."""
    return x if isinstance(x, tuple) else (x,)


def variants(cuda, model, N: int, repeat: int, log) -> dict:
    """
    Return the Panda's rates by threads per block and register cap, into ``out=``.

    The register cap is numba-cuda's ``max_registers`` (fewer registers, more threads
    resident per multiprocessor, perhaps spills); each capped kernel is compiled anew from
    the same generated source. What a run on a GPU decides: which launch shape the kernels
    should take.
    """
    from kron_dynamics.gpu import deep_compile, GpuModel, SIGNATURES
    calls = states(cuda, model, N)
    names = {'inverse_dynamics': 'rnea', 'mass_matrix': 'mass_matrix',
             'forward_dynamics': 'forward_dynamics'}
    rows = []
    for registers in VARIANT_REGISTERS:
        gpu = GpuModel(model, disk_cache=False)
        for method, kernel in names.items():
            if registers is not None:     # GpuModel's compiled kernel, capped
                gpu._kernels[kernel] = deep_compile(lambda: cuda.jit(
                    SIGNATURES[kernel], max_registers=registers)(getattr(gpu._module, kernel)))
            device_args, host_args = calls[method]
            out = cuda.device_array(result_shape(model, method, N)[0], order='F')
            expected = getattr(model, method)(*(x[:1000] for x in host_args))
            for threads in VARIANT_THREADS:
                gpu.threads_per_block = threads
                getattr(gpu, method)(*device_args, out=out)
                agreement = relerr(out.copy_to_host()[:1000], expected, floor=0.0)
                seconds = device_time(cuda, lambda: getattr(gpu, method)(
                    *device_args, check=False, out=out), repeat)
                rows.append({'method': method, 'max_registers': registers,
                             'threads_per_block': threads, 'states_per_s': N / seconds,
                             'agreement': agreement})
                log(f'  {method}, max_registers {registers}, {threads} threads per block: '
                    f'{N / seconds:.3g}/s, agreement {agreement:.2g}')
            out = None
    return {'N': N, 'rows': rows}


CACHE_PROBE = """
import json, sys, time
from numba import cuda
from kron_dynamics import RobotModel
from kron_dynamics.gpu import GpuModel, SIGNATURES
model = RobotModel.from_urdf_string(open(sys.argv[1]).read())
gpu = GpuModel(model)
start = time.perf_counter()
gpu._kernels['rnea'] = cuda.jit(SIGNATURES['rnea'], cache=True)(gpu._module.rnea)
seconds = time.perf_counter() - start
q = cuda.to_device(model.random_configuration(__import__('numpy').random.default_rng(0))[None])
tau = gpu.gravity_torque(q).copy_to_host()[0]
print(json.dumps({'seconds': seconds, 'error': float(abs(tau - model.gravity_torque(
    q.copy_to_host()[0])).max())}))
"""


def cache_check(xml: str, log) -> dict:
    """
    Return numba-cuda's on-disk kernel cache (``cache=True``) tried in two processes.

    The first compiles the Panda's Newton-Euler kernel and stores it next to the generated
    source; the second should find it there: its seconds are what a cache would leave of
    a process's first call (TALOS: 112 s uncached).
    """
    with tempfile.TemporaryDirectory() as folder:
        urdf = Path(folder) / 'robot.urdf'
        urdf.write_text(xml)
        env = {**os.environ, 'KRON_DYNAMICS_CACHE': folder}
        runs = []
        for k in range(2):
            done = subprocess.run([sys.executable, '-c', CACHE_PROBE, str(urdf)], env=env,
                                  capture_output=True, text=True, timeout=300)
            lines = done.stdout.strip().splitlines()
            runs.append(json.loads(lines[-1]) if done.returncode == 0 and lines else
                        {'failed': (done.stderr or done.stdout)[-2000:]})
            log(f'  cache=True, process {k + 1}: {runs[-1]}')
    return {'processes': runs}


def robot_rows(cuda, name: str, model, N: int, repeat: int, log, methods=METHODS,
               dtype=np.float64, bytes_per_s=None, contacts=()) -> dict:
    """
    Agreement, then GPU and CPU states per second of each method.

    ``contacts`` (Contact objects): the contact set of CONTACT_METHODS, passed after the
    states to the GPU and the CPU alike.
    """
    from kron_dynamics.gpu import GpuModel
    gpu = GpuModel(model, dtype=dtype, disk_cache=False)   # compiled, not loaded from disk
    calls = states(cuda, model, N, dtype)
    m = sum(c.dim for c in contacts)
    rows = {}
    for method in methods:
        device_args, host_args = calls[method]
        if method in CONTACT_METHODS:
            device_args, host_args = (*device_args, contacts), (*host_args, contacts)
        begin = time.perf_counter()     # the first call compiles what it needs (contact and
        ours = _parts(getattr(gpu, method)(*_rows(device_args, 1000)))   # link kernels too)
        first_call = time.perf_counter() - begin
        cpu = _parts(getattr(model, method)(*_rows(host_args, 1000)))
        agreement = max(relerr(x.copy_to_host(), y, floor=0.0) for x, y in zip(ours, cpu))
        # into a buffer the caller keeps (out=): the kernel and its launch; then a call that
        # allocates its result, as one without out= does
        shapes = result_shape(model, method, N, m)
        out = tuple(cuda.device_array(shape, dtype=dtype, order='F') for shape in shapes)
        out = out if len(out) > 1 else out[0]
        seconds = device_time(cuda, lambda: getattr(gpu, method)(*device_args, check=False,
                                                                 out=out), repeat)
        out = None        # its memory back before the allocating calls
        allocating = device_time(cuda, lambda: getattr(gpu, method)(*device_args,
                                                                    check=False), repeat)
        cpu_seconds = per_call(lambda: getattr(model, method)(
            *_rows(host_args, CPU_N)), 1.0, 5)['min_us'] * 1e-6
        state_bytes = np.dtype(dtype).itemsize * (sum(x.shape[1] for x in host_args
                                                      if hasattr(x, 'shape'))
                                                  + sum(int(np.prod(shape[1:]))
                                                        for shape in shapes))
        rows[method] = {'N': N, 'gpu_states_per_s': N / max(seconds, 1e-12),
                        'gpu_allocating_states_per_s': N / max(allocating, 1e-12),
                        'bytes_per_state': state_bytes,
                        'memory_bound_states_per_s': None if bytes_per_s is None
                        else bytes_per_s / state_bytes,
                        'cpu_states_per_s': CPU_N / cpu_seconds,
                        'agreement': agreement, 'first_call_s': first_call,
                        'target_states_per_s': TARGETS.get((name, method))}
        log(f"  {method}: GPU {rows[method]['gpu_states_per_s']:.3g}/s (allocating "
            f"{rows[method]['gpu_allocating_states_per_s']:.3g}/s), CPU "
            f"{rows[method]['cpu_states_per_s']:.3g}/s, agreement {rows[method]['agreement']:.2g}")
    return {'n': model.n, 'dtype': np.dtype(dtype).name, 'generate_s': gpu.generate_seconds,
            'contacts': [f'{c.link} ({c.dim}-D)' for c in contacts],
            'compile_s': sum(gpu.compile_seconds.values()),
            'compile_s_per_kernel': dict(gpu.compile_seconds), 'methods': rows}


def plan_of(args) -> list:
    """Return the rows to measure: (key, robot, methods, dtype), by --all, --robots, --methods."""
    plan = {name: METHODS for name in ROBOTS} if args.all or args.robots else DEFAULT_METHODS
    # the Panda in fp64 and fp32 first: TALOS's kernels take the longest to compile
    plan = [('panda_arm', 'panda_arm', plan['panda_arm'], np.float64),
            ('panda_arm_fp32', 'panda_arm', METHODS, np.float32)] + [
        (name, name, methods, np.float64) for name, methods in plan.items()
        if name != 'panda_arm'] + [
        ('panda_arm_derivatives', 'panda_arm', DERIVATIVES, np.float64)]
    if args.all or args.robots:
        plan += [('talos_floating_derivatives', 'talos_floating', DERIVATIVES[1:], np.float64),
                 ('panda_arm_contacts', 'panda_arm', CONTACT_METHODS, np.float64),
                 ('talos_floating_contacts', 'talos_floating', CONTACT_METHODS, np.float64)]
    if args.robots:             # a part of the plan: these rows, every method unless named
        plan = [row for row in plan if row[0] in args.robots]
    if args.methods:
        plan = [(key, name, tuple(m for m in methods if m in args.methods), dtype)
                for key, name, methods, dtype in plan]
        plan = [row for row in plan if row[2]]
    return plan


def device_name(cuda) -> str:
    """Return the current CUDA device's name."""
    name = cuda.get_current_device().name
    return name.decode() if isinstance(name, bytes) else str(name)


def main(argv=None) -> int:
    """Run the benchmark where a GPU is present and write gpu.json."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--quick', action='store_true', help='fewer states (smoke test)')
    parser.add_argument('--out', default=str(RESULTS), help='output directory')
    parser.add_argument('--all', action='store_true',
                        help='every method of every robot (TALOS: minutes of compilation)')
    parser.add_argument('--variants', action='store_true',
                        help='the Panda by threads per block and register cap, and whether '
                             "numba-cuda's cache=True keeps a kernel for the next process "
                             '(gpu_variants.json)')
    parser.add_argument('--registers', action='store_true',
                        help="only ptxas -v's registers and spills of every kernel (no GPU)")
    parser.add_argument('--kernels', nargs='+', metavar='KERNEL',
                        help='with --registers: only these kernels (rnea, mass_matrix, '
                             'forward_dynamics, ...), else every one')
    parser.add_argument('--robots', nargs='+', choices=PLAN_KEYS, metavar='ROBOT',
                        help='only these rows of the plan (of every method unless --methods '
                             f"says which): {', '.join(PLAN_KEYS)}")
    parser.add_argument('--methods', nargs='+', choices=METHODS + DERIVATIVES + CONTACT_METHODS,
                        metavar='METHOD', help='only these methods: '
                        f"{', '.join(METHODS + DERIVATIVES + CONTACT_METHODS)}")
    parser.add_argument('--name', default='gpu',
                        help='the results file NAME.json in --out (default gpu: the table of '
                             'docs/performance.md; gpu_solves: the solves along the tree)')
    args = parser.parse_args(argv)
    plan = plan_of(args)
    if not plan:
        parser.error('--robots and --methods leave nothing to measure')
    if args.kernels:
        known = list(kernel_signatures())
        unknown = [k for k in args.kernels if k not in known]
        if unknown or not args.registers:
            parser.error(f'--kernels {", ".join(unknown)}: not a kernel (the kernels: '
                         f'{", ".join(known)})' if unknown else '--kernels needs --registers')
    start = time.time()

    def log(msg):
        print(f'[{time.time() - start:6.1f} s] {msg}', flush=True)

    robots = Path(find_robots_dir(log))
    panda_xml = panda_urdf(robots / PANDA)
    models = dict(zip(ROBOTS, (RobotModel.from_urdf_string(panda_xml),
                               RobotModel.from_urdf_file(robots / TALOS),
                               RobotModel.from_urdf_file(robots / TALOS, root_joint='floating'))))
    if args.registers:
        return registers(args, models, log)
    if os.environ.get('NUMBA_ENABLE_CUDASIM') == '1':
        print('bench_gpu: NUMBA_ENABLE_CUDASIM=1 is the simulator, not a GPU: nothing measured')
        return 0
    from numba import cuda
    if not cuda.is_available():
        print('bench_gpu: no CUDA GPU here (numba.cuda.is_available() is False): nothing '
              'measured, bench/results/gpu.json left as it is')
        return 0
    N = 1 << (18 if args.quick else 22)
    repeat = 3 if args.quick else 10
    if args.variants:
        log(f'panda_arm variants, N = {N}')
        body = variants(cuda, models['panda_arm'], N, repeat, log)
        body['cache'] = cache_check(panda_xml, log)
        provenance.write_result(args.out, 'gpu_variants', {
            'gpu': device_name(cuda), 'numba_cuda': installed_version('numba-cuda'),
            'wall_seconds': round(time.time() - start, 1)}, body, log)
        return 0
    bytes_per_s = bandwidth(cuda, repeat)
    log(f'device-to-device copy: {bytes_per_s / 1e12:.2f} TB/s (read + write)')
    meta = {'quick': args.quick, 'gpu': device_name(cuda),
            'cpu_threads': int(os.environ.get('NUMBA_NUM_THREADS', os.cpu_count())),
            'numba': __import__('numba').__version__, 'numpy': np.__version__,
            'numba_cuda': installed_version('numba-cuda'),
            'cuda_bindings': installed_version('cuda-bindings'),
            'device_copy_bytes_per_s': bytes_per_s, 'all': args.all, 'dtype': 'float64',
            'robots': args.robots, 'methods': args.methods}
    results = {}
    for key, name, methods, dtype in plan:
        model = models[name]
        # TALOS's M of 2^22 states would be 48 GB: a quarter of the states there
        n_states = N // 4 if model.nv >= 20 and 'mass_matrix' in methods else N
        if set(methods) <= set(DERIVATIVES):      # 3 x 49 results per state: 1.2 kB
            n_states = N // 8 if model.nv < 20 else N // 32     # TALOS: 35 kB
        contacts = ()
        if set(methods) <= set(CONTACT_METHODS):  # M, J_c (N, m, nv) kept between kernels
            n_states = N // 8
            contacts = tuple(Contact(link, dim=dim) for link, dim in REGISTER_CONTACTS[name])
        log(f'{key} (n = {model.n}, {np.dtype(dtype).name}), N = {n_states}: '
            f'{", ".join(methods)}')
        results[key] = robot_rows(cuda, key, model, n_states, repeat, log, methods, dtype,
                                  bytes_per_s, contacts)
        # written after each robot: a run stopped by a time limit keeps what it measured
        provenance.write_result(args.out, args.name, {
            **meta, 'complete': len(results) == len(plan),
            'wall_seconds': round(time.time() - start, 1)}, {'robots': results}, log)
    return 0


if __name__ == '__main__':
    sys.exit(main())
