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
Dynamics on a GPU: Newton-Euler generated per robot (numba-cuda), CUDA arrays in and out.

``model.on_gpu()`` (or :class:`GpuModel` (model)) writes the robot's kernels
(:mod:`kron_dynamics.gpu.codegen`), caches their source on disk under a name made of its
content's hash, compiles each kernel on its first call (kept on disk beside the source, so
that a later process loads it instead) and serves batches of (N, nq) and
(N, nv) arrays of the model's coordinates, on every base (fixed, mimic joints, floating,
planar): ``inverse_dynamics(Q, QD, QDD)``, ``gravity_torque(Q)``, ``bias_torque(Q, QD)``,
``coriolis_vector(Q, QD)``, ``mass_matrix(Q)``, ``forward_dynamics(Q, QD, TAU)``,
``link_poses(Q)`` (the centre of mass too; ``link_pose(Q, link)``), ``kinetic_energy(Q,
QD)``, ``potential_energy(Q)``, ``integrate(Q, V, dt)`` and ``difference(Q0, Q1)``; per
link (its kernels made on first use) ``jacobian``, ``hessian``, ``jacobian_derivative``,
``jacobian_derivative_times_velocity`` and ``acceleration``; and by forward mode over the
generated code (:mod:`kron_dynamics.gpu.tangent`) ``inverse_dynamics_derivatives``,
``forward_dynamics_derivatives``, ``mass_matrix_derivative``, ``gravity_derivative``,
``center_of_mass_jacobian``, ``centroidal_momentum_matrix``, ``coriolis_star``,
``christoffel``, ``coriolis_matrix`` and ``regressor``; ``operational_space_inertia`` from the
Jacobian and M kernels and a solve per row; ``simulate`` (RK4, a moving base's
Runge-Kutta-Munthe-Kaas) from the forward dynamics and integrate kernels;
``contact_jacobian``, ``constrained_forward_dynamics`` and ``contact_inverse_dynamics`` from
the links' kernels and a solve per row (:mod:`kron_dynamics.gpu.contacts`);
``constrained_forward_dynamics_derivatives`` (:mod:`kron_dynamics.gpu.constrained_derivatives`)
and ``linearize`` (:mod:`kron_dynamics.gpu.linearize`), free or in contact, from the
derivative kernels. The arrays may be
anything with ``__cuda_array_interface__`` (numba device arrays, CuPy, PyTorch CUDA tensors: taken
without a copy) or host NumPy arrays (copied to the device); the result is a numba device
array, which ``torch.as_tensor`` and ``cupy.asarray`` take without a copy, or the CUDA
array given as ``out`` (a loop that reuses its buffers allocates nothing per call).

Nothing here is imported until asked for; numba's CUDA target is the optional extra
``kron_dynamics[gpu]``. Without a GPU, numba's simulator (``NUMBA_ENABLE_CUDASIM=1``) runs
the same generated code on the CPU: that is how the tests check it.
"""

from collections.abc import Mapping
import contextlib
import hashlib
import importlib.util
import os
from pathlib import Path
import sys
import threading
import time

import numpy as np

from ..errors import ModelError, SingularJacobianError
from .codegen import (_Robot, center_of_mass_bodies, jacobian_source, LOCAL,
                      LOCAL_WORLD_ALIGNED, single_precision, source as kernel_source, WORLD)

# method -> (use q', use q'', gravity scale)
MODES = {'inverse_dynamics': (1, 1, 1.0), 'gravity_torque': (0, 0, 1.0),
         'bias_torque': (1, 0, 1.0), 'coriolis_vector': (1, 0, 0.0)}
_A2, _A3, _FLAGS = 'float64[:, :]', 'float64[:, :, :]', 'int8[:]'
SIGNATURES = {
    'rnea': f'void({_A2}, {_A2}, {_A2}, int64, int64, float64, {_A2}, {_FLAGS})',
    'mass_matrix': f'void({_A2}, {_A3}, {_FLAGS})',
    'forward_dynamics': f'void({_A2}, {_A2}, {_A2}, {_A2}, {_FLAGS})',
    'kinematics': f'void({_A2}, float64[:, :, :, :], {_A2}, {_FLAGS})',
    'kinetic': f'void({_A2}, {_A2}, float64[:], {_FLAGS})',
    'integrate': f'void({_A2}, {_A2}, float64, {_A2}, {_FLAGS})',
    'difference': f'void({_A2}, {_A2}, {_A2}, {_FLAGS})',
    'potential': f'void({_A2}, float64[:], {_FLAGS})',
    'task_inertia': f'void({_A3}, {_A3}, int64, float64, float64, {_A3}, {_FLAGS})',
    'rk_stage': f'void({_A2}, {_A2}, {_A2}, float64, {_A2}, float64[:], {_A2}, {_A2}, {_A2}, '
                f'{_FLAGS})',
    'rk_finish': f'void({", ".join([_A2] * 8)}, float64, {_A2}, {_A2}, {_FLAGS})',
}
# operational_space_inertia's refusal: the CPU's algorithms.operational_space.RCOND (a test
# checks they agree), J M^-1 J^T with a condition number above 1e8
TASK_RCOND = 1e-8
# a kernel's BAD codes: what the rows refused have, and the error raised
_REFUSALS = ((1, 'a non-finite input', ValueError),
             (2, 'a mass matrix that is not positive definite', ValueError),
             (3, 'a base orientation (quaternion or cos, sin) whose norm is not within 1e-3 of 1',
              ValueError),
             (4, f'a singular J M^-1 J^T (condition number above {1 / TASK_RCOND:.3g}: a '
                 'kinematic singularity, or fewer joints than task directions move the link; '
                 "use fewer task rows (part='linear' or 'angular') or pass damping > 0)",
              SingularJacobianError),
             (5, 'contacts whose constraints contradict each other (no acceleration keeps all '
                 'of them still; redundant contacts that the velocity moves cannot be held)',
              SingularJacobianError),
             (6, "a v' that moves the contacts (J_c v' + J_c' v is not zero: it cannot be "
                 'realised in contact)', ValueError),
             (7, 'a base acceleration that no contact force can give (a base wrench is left '
                 'that only an actuated base could apply)', ValueError),
             (8, 'redundant contact rows (J_c M^-1 J_c^T has a condition number above 1e10): '
                 'lambda is not unique, nor its derivatives; remove the redundant rows (a '
                 'point contact instead of a surface, or fewer points)', SingularJacobianError))
# a link's kernels (made on first use): (module of .codegen or .tangent, signature)
_POINT = 'float64, float64, float64, int64'
LINK_SIGNATURES = {
    'jacobian': ('jacobian', f'void({_A2}, {_POINT}, {_A3}, {_FLAGS})'),
    'hessian': ('hessian', f'void({_A2}, {_POINT}, {_A3}, {_FLAGS})'),
    'jacobian_derivative': ('rates', f'void({_A2}, {_A2}, {_POINT}, {_A3}, {_FLAGS})'),
    'jacobian_derivative_times_velocity': ('rates',
                                           f'void({_A2}, {_A2}, {_POINT}, {_A2}, {_FLAGS})'),
    'acceleration': ('rates', f'void({_A2}, {_A2}, {_A2}, {_POINT}, {_A2}, {_FLAGS})'),
}
DERIVATIVE_SIGNATURES = {
    'rnea_derivatives': f'void({_A2}, {_A2}, {_A2}, {_A3}, {_A3}, {_FLAGS})',
    'mass_matrix_derivative': f'void({_A2}, float64[:, :, :, :], {_FLAGS})',
    'minus_solve': f'void({_A3}, {_A3}, {_A3}, {_FLAGS})',
    'gravity_derivative': f'void({_A2}, {_A3}, {_FLAGS})',
    'coriolis_tensor': f'void({_A2}, float64, float64, float64, {_A3}, {_FLAGS})',
    'coriolis_matrix': f'void({_A2}, {_A2}, {_A3}, {_FLAGS})',
    'center_of_mass_jacobian': f'void({_A2}, {_A3}, {_FLAGS})',
    'regressor': f'void({_A2}, {_A2}, {_A2}, {_A3}, {_FLAGS})',
    'centroidal': f'void({_A2}, {_A3}, {_FLAGS})',
    'linearize': f'void({_A3}, {_A3}, {_A3}, {_A2}, {_A2}, float64, int64, {_A3}, {_A3}, '
                 f'{_FLAGS})',
}
CONTACT_SIGNATURES = {
    'contact_rows': f'void({_A3}, {_A2}, {_A2}, int64, int64, int64, {_A3}, {_A2}, {_FLAGS})',
    'contact_solve': f'void({_A3}, {_A2}, {_A2}, int64, {_A3}, {_A2}, float64, {_A2}, {_A2}, '
                     f'{_FLAGS})',
    'contact_inverse': f'void({_A2}, {_A3}, {_A2}, {_A2}, float64, {_A2}, {_A2}, {_FLAGS})',
}
_I1 = 'int64[:]'
CONSTRAINED_SIGNATURE = (f'void({_A2}, {_I1}, int64[:, :], {_I1}, {_I1}, {_A2}, {_I1}, {_I1}, '
                         f'{_I1}, float64[:], float64, {_A2}, {_A2}, float64[:, :, :, :], {_A2}, '
                         f'{", ".join([_A3] * 9)}, {_FLAGS})')
# a Jacobian's frame names, as the CPU methods take them (Pinocchio's spellings too)
FRAMES = {'world': WORLD, 'local': LOCAL, 'local_world_aligned': LOCAL_WORLD_ALIGNED,
          'WORLD': WORLD, 'LOCAL': LOCAL, 'LOCAL_WORLD_ALIGNED': LOCAL_WORLD_ALIGNED}


def _span(x):
    """Return the [first, last) device addresses an array's elements lie in, or None."""
    face = getattr(x, '__cuda_array_interface__', None)
    if face is None:                   # numba's simulator: the host array it wraps
        face = getattr(getattr(x, '_ary', None), '__array_interface__', None)
    if face is None:
        return None
    shape, size = face['shape'], np.dtype(face['typestr']).itemsize
    if 0 in shape:
        return None
    strides = face.get('strides') or tuple(
        int(np.prod(shape[k + 1:])) * size for k in range(len(shape)))
    first = face['data'][0] + sum(min(0, (n - 1) * t) for n, t in zip(shape, strides))
    last = face['data'][0] + sum(max(0, (n - 1) * t) for n, t in zip(shape, strides)) + size
    return first, last


def _real(x) -> np.ndarray | None:
    """Return host numbers x as a float64 array; None for complex, ragged or text (not cast)."""
    try:
        a = np.asarray(x)
        return None if a.dtype.kind == 'c' else a.astype(float)
    except (TypeError, ValueError):
        return None


def _overlap(x, y) -> bool:
    """Return True if two arrays' address ranges overlap (a bound: interleaved views too)."""
    a, b = _span(x), _span(y)
    return a is not None and b is not None and a[0] < b[1] and b[0] < a[1]


def cache_directory() -> Path:
    """Return where generated kernels are kept: $KRON_DYNAMICS_CACHE or ~/.cache/kron_dynamics."""
    root = os.environ.get('KRON_DYNAMICS_CACHE') or os.path.join(
        os.environ.get('XDG_CACHE_HOME') or os.path.expanduser('~/.cache'), 'kron_dynamics')
    return Path(root) / 'gpu'


def _cuda():
    try:
        from numba import cuda
    except ImportError:      # pragma: no cover - numba is a dependency; its CUDA target may not be
        raise ModelError("the GPU path needs numba's CUDA target: pip install "
                         "'kron_dynamics[gpu]'") from None
    if not cuda.is_available():
        raise ModelError('no CUDA device is available (numba.cuda.is_available() is False); '
                         'set NUMBA_ENABLE_CUDASIM=1 to run the generated kernels on the CPU '
                         "simulator, or use the model's CPU methods")
    return cuda


COMPILE_STACK = 1 << 28          # bytes of stack of the thread that compiles a kernel
COMPILE_RECURSION = 200_000      # and its recursion limit
_COMPILING = threading.Lock()


def deep_compile(build):
    """
    Return ``build()`` (a kernel's compilation) run in a thread of a deep stack and recursion.

    numba-cuda's control-flow analysis (``_dfs_rec`` of its copy of numba's
    ``controlflow.py``) recurses once per block of a kernel, and a large tree's generated
    kernel had thousands (each checked input's ``x if ... else ...`` made some; fewer since
    they are calls, :data:`codegen.DEVICE_FUNCTIONS`): TALOS's regressor raised
    RecursionError at Python's default limit of 1000 (numba issue 5611;
    numba's own copy was made iterative by its PR 10482, numba-cuda 0.30's is not). The limit
    and the stack size are the process's: both are restored after, under a lock.
    """
    result = {}

    def run():
        try:
            result['value'] = build()
        except BaseException as exc:          # raised again in the caller's thread
            result['error'] = exc
    with _COMPILING:
        limit = sys.getrecursionlimit()
        size = threading.stack_size(COMPILE_STACK)
        sys.setrecursionlimit(max(limit, COMPILE_RECURSION))
        try:
            thread = threading.Thread(target=run, name='kron_dynamics-gpu-compile')
            thread.start()
            thread.join()
        finally:
            threading.stack_size(size)
            sys.setrecursionlimit(limit)
    if 'error' in result:
        raise result['error']
    return result['value']


@contextlib.contextmanager
def compute_capability(cc: tuple):
    """
    Within the block, compile the device functions a kernel calls for ``cc`` where no GPU is.

    ``compile_ptx(kernel, signature, cc=cc)`` needs no GPU, but numba compiles each device
    function the kernel calls (:data:`codegen.DEVICE_FUNCTIONS`) for the current GPU's
    compute capability (``numba.cuda.dispatcher.get_current_device``), which fails where
    there is none: within the block that is ``cc``. Where a GPU is present nothing changes.
    """
    from numba import cuda
    import numba.cuda.dispatcher as dispatcher
    if cuda.is_available():
        yield
        return

    class Device:
        compute_capability = tuple(cc)
    current = dispatcher.get_current_device
    dispatcher.get_current_device = Device
    try:
        yield
    finally:
        dispatcher.get_current_device = current


def ptx(kernel, signature: str, cc: tuple) -> str:
    """Return the PTX of a generated kernel for compute capability ``cc``, no GPU needed."""
    from numba import cuda
    with compute_capability(cc):
        text, _ = deep_compile(lambda: cuda.compile_ptx(kernel, signature, cc=cc))
    return text


def _cached_module(source: str, prefix: str):
    """
    Return (path, found in the cache, module) of generated source, cached by its hash.

    The file is written whole and renamed, so that a concurrent reader never sees half.
    """
    key = hashlib.sha256(source.encode()).hexdigest()[:20]
    directory = cache_directory()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f'{prefix}_{key}.py'
    cached = path.is_file() and path.read_text(encoding='utf-8') == source
    if not cached:
        partial = directory / f'.{prefix}_{key}.{os.getpid()}.tmp'
        partial.write_text(source, encoding='utf-8')
        os.replace(partial, path)
    spec = importlib.util.spec_from_file_location(f'kron_dynamics_gpu_{prefix}_{key}', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return path, cached, module


class GpuModel:
    """
    The GPU kernels of one model (see the module docstring).

    ``source_path``: the generated file; ``cached``: whether it was already on disk;
    ``generate_seconds``: what writing it took; ``compile_seconds``: {kernel: seconds} of the
    kernels of SIGNATURES and DERIVATIVE_SIGNATURES compiled so far (a link's kernels, written
    and compiled on their first use, are not in it). Each kernel is compiled on the first call
    that needs it: a large tree's forward dynamics takes minutes to compile
    (docs/performance.md, GPU), which a user of its inverse dynamics alone should not wait for.
    ``disk_cache``: keep each compiled kernel on disk beside its generated source (numba-cuda's
    ``cache=True``), so that a later process loads it in about a second instead of compiling
    it again (``compile_seconds`` is then that loading); where numba cannot cache there, the
    kernel is compiled without.
    """

    def __init__(self, model, threads_per_block: int = 128, dtype=np.float64,
                 disk_cache: bool = True):
        """Generate (or find in the cache) and compile the kernels of ``model``."""
        cuda = _cuda()
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.float64, np.float32):
            raise ValueError(f'dtype must be float64 or float32, got {self.dtype}')
        if not isinstance(disk_cache, (bool, np.bool_)):
            raise ValueError(f'disk_cache must be True or False, got {disk_cache!r}')
        self.disk_cache = bool(disk_cache)
        self.model, self.n, self.nq, self.nv = model, model.n, model.nq, model.nv
        self._robot = _Robot(model)
        if isinstance(threads_per_block, (bool, np.bool_)) \
                or not isinstance(threads_per_block, (int, np.integer)) \
                or not 1 <= threads_per_block <= 1024:
            raise ValueError(f'threads_per_block must be an integer from 1 to 1024 (CUDA\'s '
                             f'limit per block), got {threads_per_block!r}')
        self.threads_per_block = int(threads_per_block)
        start = time.perf_counter()
        source = self._precision(kernel_source(model))
        self.generate_seconds = time.perf_counter() - start
        start = time.perf_counter()
        self.source_path, self.cached, self._module = _cached_module(source, 'kernels')
        self.compile_seconds = {}
        self._kernels = {}
        self._link_kernels = {}     # (kernel, link) -> its kernel, made on first use
        self._link_modules = {}     # (module, link) -> the module, generated on first use
        self._derivatives = None    # the module of .tangent's kernels, made on first use
        self._wrenches = None       # the module of .wrenches' kernels, made on first use
        self._spare_flags = None    # the flags of calls with check=False
        self._contact_modules = {}  # m -> the module of .contacts' kernels for m contact rows
        self._constrained_kernels = {}  # contacts -> (derivative kernel, its constants)
        self._zero_rows = None      # rows of zeros kept between calls (a v' = 0), read only
        self._spare = None          # a (1, 1) array standing for an argument a kernel skips
        self._cuda = cuda

    def _kernel(self, name: str):
        """
        Return the kernel ``name``, compiled on first use.

        A kernel of SIGNATURES is the model's module's; one of DERIVATIVE_SIGNATURES is in the
        module of :mod:`.tangent`'s kernels, generated (or found in the cache) on first use.
        """
        kernel = self._kernels.get(name)
        if kernel is None:
            start = time.perf_counter()
            if name in SIGNATURES:
                module, signature = self._module, SIGNATURES[name]
            else:
                if self._derivatives is None:
                    from .tangent import derivatives_source
                    _, _, self._derivatives = _cached_module(
                        self._precision(derivatives_source(self.model)), 'derivatives')
                module, signature = self._derivatives, DERIVATIVE_SIGNATURES[name]
            kernel = self._compile(signature, getattr(module, name))
            self.compile_seconds[name] = time.perf_counter() - start
            self._kernels[name] = kernel
        return kernel

    def _compile(self, signature: str, function):
        """Return ``function`` compiled for the GPU at ``signature`` in the model's precision."""
        signature = self._precision(signature)
        if self.disk_cache:
            try:
                return deep_compile(lambda: self._cuda.jit(signature, cache=True)(function))
            except RuntimeError as error:   # numba: 'cannot cache function ...' (no locator)
                if 'cannot cache' not in str(error):
                    raise
        return deep_compile(lambda: self._cuda.jit(signature)(function))

    def _precision(self, text: str) -> str:
        """Return generated source or a signature in the model's precision."""
        if self.dtype == np.float64:
            return text
        return (text.replace('float64', 'float32') if text.startswith('void(')
                else single_precision(text))

    # ----------------------------------------------------------------- arrays
    def _on_device(self, x):
        """Return a CUDA array as a numba device array (no copy), else None."""
        if type(x).__module__.startswith('numba.cuda'):      # a numba device array
            return x
        if hasattr(x, '__cuda_array_interface__'):            # CuPy, PyTorch, ...
            return self._cuda.as_cuda_array(x)
        return None

    def _device(self, x, name: str, joints: bool = False):
        """
        Return x as a device array (no copy if it is one), checked: (N, nq or nv) float64.

        ``joints``: (N, n), the joints' columns alone, is taken too (a moving base's tau).
        """
        array = self._on_device(x)
        if array is not None:
            pass
        elif isinstance(x, (np.ndarray, list, tuple)):
            try:
                host = np.asarray(x)
            except (TypeError, ValueError):       # ragged rows: NumPy makes no array of it
                raise ValueError(f'{name} must be an array of {self.dtype} numbers, one state '
                                 'per row; its rows differ in length') from None
            if host.dtype != self.dtype:
                raise ValueError(f'{name} must be {self.dtype}, got {host.dtype}')
            array = self._cuda.to_device(np.ascontiguousarray(host))
        else:
            raise ValueError(f'{name} must be a CUDA array (__cuda_array_interface__) or a '
                             f'NumPy array, got {type(x).__name__}')
        if array.dtype != self.dtype:
            raise ValueError(f'{name} must be {self.dtype}, got {array.dtype}')
        width, names = ((self.nq, self.model.configuration_names) if name in ('q', 'q0', 'q1')
                        else (self.nv, self.model.velocity_names))
        if joints and len(array.shape) == 2 and array.shape[1] == self.n:
            return array
        if len(array.shape) != 2 or array.shape[1] != width:
            also = (f' or (N, {self.n}) (the joints alone: {list(names[width - self.n:])})'
                    if joints and self.n != width else '')
            raise ValueError(f'{name} must have shape (N, {width}) (one state per row: '
                             f'{list(names)}){also}, got {tuple(array.shape)}')
        return array

    @staticmethod
    def _order(Q) -> str:
        """Return 'F' for a Fortran-ordered (transposed layout) q, so outputs match it."""
        try:
            flags = Q.flags
            return 'F' if flags['F_CONTIGUOUS'] and not flags['C_CONTIGUOUS'] else 'C'
        except (AttributeError, KeyError, TypeError):
            return 'C'

    def _rows(self, named: dict):
        """Return the checked device arrays and their common row count."""
        arrays = {name: self._device(x, name) for name, x in named.items()}
        N = next(iter(arrays.values())).shape[0]
        for name, X in arrays.items():
            if X.shape[0] != N:
                raise ValueError(f'{name} has {X.shape[0]} rows, q {N}')
        return arrays, N

    def _outputs(self, shapes: tuple, arrays: dict, stream, out, method: str) -> tuple:
        """
        Return the device arrays the results go to: new ones in q's layout, or ``out``.

        ``out`` (one array, or a tuple where a method has several results): CUDA arrays of the
        results' shapes in the model's precision, any layout, apart from every input.
        """
        if out is None:
            order = self._order(next(iter(arrays.values())))      # q's (q0's)
            return tuple(self._cuda.device_array(shape, dtype=self.dtype, stream=stream,
                                                 order=order) for shape in shapes)
        given = out if isinstance(out, tuple) else (out,)
        if len(given) != len(shapes):
            raise ValueError(f'{method}: out must be {len(shapes)} CUDA arrays (a tuple), '
                             f'got {len(given)}')
        outputs = []
        for k, (x, shape) in enumerate(zip(given, shapes)):
            name = 'out' if len(shapes) == 1 else f'out[{k}]'
            array = self._on_device(x)
            if array is None:
                raise ValueError(f'{method}: {name} must be a CUDA array (the results stay on '
                                 f'the device), got {type(x).__name__}')
            if array.dtype != self.dtype:
                raise ValueError(f'{method}: {name} must be {self.dtype}, got {array.dtype}')
            if tuple(array.shape) != tuple(shape):
                raise ValueError(f'{method}: {name} must have shape {tuple(shape)}, got '
                                 f'{tuple(array.shape)}')
            for other, y in [*arrays.items(), *zip(('an earlier out',) * k, outputs)]:
                if _overlap(array, y):
                    raise ValueError(f'{method}: {name} overlaps {other} in device memory: '
                                     'the kernels read their inputs while they write')
            outputs.append(array)
        return tuple(outputs)

    def _launch(self, kernel, method: str, N: int, outputs: tuple, stream, check: bool,
                *args):
        """Run a kernel over N rows into ``outputs``; with ``check``, name refused rows."""
        if N:
            bad = (self._cuda.device_array(N, dtype=np.int8, stream=stream) if check
                   else self._unread_flags(N))
            blocks = (N + self.threads_per_block - 1) // self.threads_per_block
            kernel[blocks, self.threads_per_block, stream](*args, *outputs, bad)
            if check:
                self._report(method, bad, stream)
        return outputs[0] if len(outputs) == 1 else outputs

    def _unread_flags(self, N: int):
        """Return N flags of a buffer kept between calls: with check=False nobody reads them."""
        if self._spare_flags is None or self._spare_flags.shape[0] < N:
            self._spare_flags = self._cuda.device_array(N, dtype=np.int8)
        return self._spare_flags[:N]

    def _report(self, method: str, bad, stream) -> None:
        """Raise the error naming the rows a kernel refused (BAD codes 1-4), the first code's."""
        flags = bad.copy_to_host(stream=stream)
        if stream:
            stream.synchronize()
        for code, what, error in _REFUSALS:
            rows = np.nonzero(flags == code)[0]
            if rows.size:
                more = f' and {rows.size - 10} more' if rows.size > 10 else ''
                raise error(f'{method}: rows {rows[:10].tolist()}{more} have {what} '
                            '(their results are NaN)')

    def _run(self, method: str, stream, check: bool, out, q, qd=None, qdd=None):
        use_v, use_a, gscale = MODES[method]
        named = {'q': q, **({'qd': qd} if use_v else {}), **({'qdd': qdd} if use_a else {})}
        arrays, N = self._rows(named)
        Q = arrays['q']
        tau = self._outputs(((N, self.nv),), arrays, stream, out, method)
        return self._launch(self._kernel('rnea'), method, N, tau, stream, check, Q,
                            arrays.get('qd', Q), arrays.get('qdd', Q), use_v, use_a, gscale)

    def _run_kernel(self, kernel: str, method: str, named: dict, shape: tuple, stream,
                    check: bool, out, *extra):
        """Run ``kernel`` on the rows of ``named``, then ``extra``, into (N, *shape)."""
        arrays, N = self._rows(named)
        result = self._outputs(((N, *shape),), arrays, stream, out, method)
        return self._launch(self._kernel(kernel), method, N, result, stream, check,
                            *arrays.values(), *extra)

    # ----------------------------------------------------------------- external wrenches
    def _wrench_rows(self, f_ext, N: int, method: str, stream) -> list:
        """
        Return [(link, W (N, 6) device array)] of f_ext; [] for None or no wrench.

        Host wrenches (6 numbers, every row's, or N x 6) get the CPU batch's checks and
        messages (link, shape, the rows that are not finite) and are copied over; a CUDA
        array must be (N, 6) in the model's precision (its non-finite rows are reported
        after the call, as the states' are).
        """
        if f_ext is None:
            return []
        device = {}
        if isinstance(f_ext, Mapping):
            device = {link: self._on_device(w) for link, w in f_ext.items()}
            device = {link: array for link, array in device.items() if array is not None}
            host = {link: w for link, w in f_ext.items() if link not in device}
        else:
            host = f_ext            # refused by the CPU's check, which names what it is
        rows = [(link, self._cuda.to_device(np.ascontiguousarray(W, dtype=self.dtype),
                                            stream=stream))
                for link, W in self.model._batch_wrench_rows(host, N)]
        for link, array in device.items():
            self.model._site(link)      # ModelError naming the links if it is none of them
            if array.dtype != self.dtype or tuple(array.shape) != (N, 6):
                raise ValueError(f'{method}: f_ext[{link!r}] on the device must be a ({N}, 6) '
                                 f'{self.dtype} array (one wrench per row), got '
                                 f'{tuple(array.shape)} {array.dtype}')
            rows.append((link, array))
        return rows

    def _add_wrenches(self, method: str, base, acc, Q, rows: list, sign: float, N: int,
                      stream, check: bool, jacobians: dict | None = None):
        """
        Write base + sign sum J^T W into acc per row (acc may be base): J of each link.

        ``jacobians``: {link: (N, 6, nv) device array} kept between calls (simulate's
        stages), filled on first use; None: new ones.
        """
        kernel = self._wrench_kernel('add_wrench')
        for link, W in rows:
            J = self._per_link('jacobian', {'q': Q}, link, None, 'local_world_aligned', stream,
                               check, None if jacobians is None else jacobians.get(link),
                               (6, self.nv), method)
            if jacobians is not None:
                jacobians[link] = J
            self._launch(kernel, method, N, (acc,), stream, check, J, W, float(sign), base)
            base = acc

    def _add_wrench_derivatives(self, method: str, D, Q, rows: list, sign: float, N: int,
                                stream, check: bool) -> None:
        """Add sign sum_i F_i H_i to D (N, nv, nv) per row: H of each link's Hessian kernel."""
        if not rows:
            return
        kernel = self._wrench_kernel('add_wrench_derivative')
        for link, W in rows:
            H = self._per_link('hessian', {'q': Q}, link, None, 'local_world_aligned', stream,
                               check, None, (6, self.nv * self.nv), method)
            self._launch(kernel, method, N, (D,), stream, check, H, W, float(sign))

    def _wrench_kernel(self, name: str):
        """Return a kernel of :mod:`.wrenches` (one generated module), compiled on first use."""
        kernel = self._kernels.get(name)
        if kernel is None:
            from . import wrenches
            if self._wrenches is None:
                _, _, self._wrenches = _cached_module(
                    self._precision(wrenches.wrench_source(self.nv)), 'wrenches')
            signature = (wrenches.SIGNATURE if name == 'add_wrench'
                         else wrenches.DERIVATIVE_SIGNATURE)
            kernel = self._kernels[name] = self._compile(signature,
                                                         getattr(self._wrenches, name))
        return kernel

    def _plus_wrenches(self, method: str, Q, tau, rows: list, N: int, stream, check: bool):
        """Return tau + sum J^T F per row at Q, a new array (tau itself without rows)."""
        if not rows:
            return tau
        forces = self._cuda.device_array((N, self.nv), dtype=self.dtype, stream=stream,
                                         order=self._order(Q))
        self._add_wrenches(method, tau, forces, Q, rows, 1.0, N, stream, check)
        return forces

    # ----------------------------------------------------------------- methods
    def inverse_dynamics(self, q, qd, qdd, stream=0, check: bool = True, out=None,
                         f_ext=None):
        """
        Return tau = M q'' + C*(q' kron q') + G - sum J^T F_ext per row, a device array (N, n).

        ``f_ext`` as on the CPU ({link: wrench}, world axes at the link origin): 6 numbers
        (every row's) or (N, 6), NumPy or a CUDA array; J^T F by :mod:`.wrenches`' kernel
        on the link's Jacobian kernel.
        """
        if f_ext is None:
            return self._run('inverse_dynamics', stream, check, out, q, qd, qdd)
        arrays, N = self._rows({'q': q, 'qd': qd, 'qdd': qdd})
        rows = self._wrench_rows(f_ext, N, 'inverse_dynamics', stream)
        tau = self._run('inverse_dynamics', stream, check, out, *arrays.values())
        self._add_wrenches('inverse_dynamics', tau, tau, arrays['q'], rows, -1.0, N, stream,
                           check)
        return tau

    def gravity_torque(self, q, stream=0, check: bool = True, out=None):
        """Return G(q) per row, a device array (N, n)."""
        return self._run('gravity_torque', stream, check, out, q)

    def bias_torque(self, q, qd, stream=0, check: bool = True, out=None):
        """Return C*(q)(q' kron q') + G(q) per row, a device array (N, n)."""
        return self._run('bias_torque', stream, check, out, q, qd)

    def coriolis_vector(self, q, qd, stream=0, check: bool = True, out=None):
        """Return C*(q)(q' kron q') per row, a device array (N, n)."""
        return self._run('coriolis_vector', stream, check, out, q, qd)

    def mass_matrix(self, q, stream=0, check: bool = True, out=None):
        """Return M(q) per row (armature included), a device array (N, n, n)."""
        return self._run_kernel('mass_matrix', 'mass_matrix', {'q': q}, (self.nv, self.nv),
                                stream, check, out)

    def forward_dynamics(self, q, qd, tau, stream=0, check: bool = True, out=None,
                         f_ext=None):
        """
        Return q'' = M^-1 (tau + sum J^T F_ext - C*(q' kron q') - G) per row, (N, n).

        ``f_ext`` as for :meth:`inverse_dynamics` (its forces added to a copy of tau).
        """
        if f_ext is not None:
            arrays, N = self._rows({'q': q, 'qd': qd, 'tau': tau})
            rows = self._wrench_rows(f_ext, N, 'forward_dynamics', stream)
            q, qd, tau = arrays['q'], arrays['qd'], self._plus_wrenches(
                'forward_dynamics', arrays['q'], arrays['tau'], rows, N, stream, check)
        return self._run_kernel('forward_dynamics', 'forward_dynamics',
                                {'q': q, 'qd': qd, 'tau': tau}, (self.nv,), stream, check, out)

    def link_poses(self, q, stream=0, check: bool = True, out=None):
        """Return (poses (N, L, 4, 4) in ``link_names`` order, centre of mass (N, 3)), world."""
        arrays, N = self._rows({'q': q})
        outputs = self._outputs(((N, len(self.model.link_names), 4, 4), (N, 3)), arrays,
                                stream, out, 'link_poses')
        return self._launch(self._kernel('kinematics'), 'link_poses', N, outputs, stream,
                            check, arrays['q'])

    def center_of_mass(self, q, stream=0, check: bool = True):
        """Return the centre of mass per row (N, 3): the model's default bodies, world frame."""
        return self.link_poses(q, stream, check)[1]

    def center_of_mass_jacobian(self, q, stream=0, check: bool = True, out=None):
        """
        Return the Jacobian of :meth:`center_of_mass` per row, (N, 3, nv), world axes.

        Forward mode over the generated centre of mass (nv passes); a moving base's columns
        along integrate(q, e_k t), so that c' = J_c v as on the CPU.
        """
        if center_of_mass_bodies(self._robot)[1] == 0.0:
            raise ValueError('center_of_mass_jacobian: the bodies counted have no mass')
        return self._run_kernel('center_of_mass_jacobian', 'center_of_mass_jacobian',
                                {'q': q}, (3, self.nv), stream, check, out)

    def regressor(self, q, qd, qdd, stream=0, check: bool = True, out=None):
        """
        Return the joint torque regressor Y per row, (N, nv, 10 nb), the CPU's columns.

        tau = Y pi + armature q'' with pi the bodies' inertial parameters (the CPU's
        ``dynamic_parameters().ravel()``): the generated Newton-Euler row over parameters as
        variables, once per parameter (:func:`.tangent._regressor_kernel`).
        """
        bodies = self.model.tree.n + (self.model.base != 'fixed')
        return self._run_kernel('regressor', 'regressor', {'q': q, 'qd': qd, 'qdd': qdd},
                                (self.nv, 10 * bodies), stream, check, out)

    def centroidal_momentum_matrix(self, q, stream=0, check: bool = True, out=None):
        """
        Return A_G per row (N, 6, nv): (linear, angular momentum about the CoM) = A_G v.

        The bodies of :meth:`center_of_mass`, world axes (Pinocchio's ``ccrba``, as on the
        CPU): forward mode over the generated kinematics (:mod:`.tangent`), nv passes.
        """
        if center_of_mass_bodies(self._robot)[1] == 0.0:
            raise ValueError('centroidal momentum matrix: the moving bodies have no mass '
                             '(no centre of mass)')
        return self._run_kernel('centroidal', 'centroidal_momentum_matrix', {'q': q},
                                (6, self.nv), stream, check, out)

    def link_pose(self, q, link: str, stream=0, check: bool = True):
        """Return a link's pose per row (N, 4, 4), world: a view of :meth:`link_poses`'."""
        names = list(self.model.link_names)
        if not isinstance(link, str) or link not in names:
            raise ModelError(f'unknown link {link!r}; links are {names}')
        return self.link_poses(q, stream, check)[0][:, names.index(link)]

    def integrate(self, q, v, dt: float = 1.0, stream=0, check: bool = True, out=None):
        """Return q (+) v dt per row (N, nq), Pinocchio's ``integrate`` as on the CPU."""
        step = _real(dt)
        if step is None or step.shape != () or not np.isfinite(step):
            raise ValueError(f'dt must be a finite number, got {dt!r}')     # the CPU's words
        return self._run_kernel('integrate', 'integrate', {'q': q, 'v': v}, (self.nq,),
                                stream, check, out, float(step))

    def simulate(self, q, qd, tau, dt: float, steps: int = 1, damping=None, stream=0,
                 check: bool = True, f_ext=None):
        """
        Return (q, q') per row after ``steps`` RK4 steps of dt under tau held, as on the CPU.

        Runge-Kutta-Munthe-Kaas (a fixed base's: classical RK4): per stage the forward
        dynamics under tau - damping q' (``damping``: per joint, the base has none), the
        configuration moved by :meth:`integrate`, a moving base's twist by dexp^-1 to the
        fourth order (``rk_stage``), then the weighted sums (``rk_finish``): the CPU's
        ``kernels.floating_base.moving_simulate`` and ``forward_dynamics.rk4``. Rows the
        forward dynamics refuses are named under ``simulate`` (after the step they occur in).
        ``f_ext`` as for :meth:`inverse_dynamics`, held in world axes: each stage's forces
        gain sum J^T F at the stage's configuration (:meth:`forward_dynamics`' kernel).
        """
        dt, steps = self.model._step_arguments(dt, steps)
        first = self._robot.nbv                         # the joints' first velocity
        joints = self.nv - first
        host = np.zeros(joints) if damping is None else _real(damping)
        if host is None or host.shape != (joints,) or not np.all(np.isfinite(host)):
            raise ValueError(f'simulate: damping must be {joints} finite numbers (one per '
                             f'joint: {list(self.model.velocity_names[first:])}), got '
                             f'{damping!r}')
        arrays, N = self._rows({'q': q, 'qd': qd, 'tau': tau})
        method, cuda = 'simulate', self._cuda
        wrenches, jacobians = self._wrench_rows(f_ext, N, method, stream), {}
        full = np.zeros(self.nv, dtype=self.dtype)
        full[first:] = host
        damp = cuda.to_device(full, stream=stream)

        def new(width, like=arrays['q']):
            return cuda.device_array((N, width), dtype=self.dtype, stream=stream,
                                     order=self._order(like))
        X, W, tau_ = arrays['q'], arrays['qd'], arrays['tau']
        if steps == 0 or N == 0:        # copies of the inputs, as on the CPU
            Xc, Wc = new(self.nq), new(self.nv, W)
            if N:
                Xc.copy_to_device(X, stream=stream)
                Wc.copy_to_device(W, stream=stream)
            return Xc, Wc
        Xs, Ws = (new(self.nq), new(self.nq)), (new(self.nv), new(self.nv))
        QA, XI, VS, F = new(self.nq), new(self.nv), new(self.nv), new(self.nv)
        A = [new(self.nv) for _ in range(4)]
        XS = [W] + [new(self.nv) for _ in range(3)]     # the stages' twists (the first: w)
        stage, finish = self._kernel('rk_stage'), self._kernel('rk_finish')
        forward, move = self._kernel('forward_dynamics'), self._kernel('integrate')
        for step in range(steps):
            self._launch(stage, method, N, (VS, XI, F), stream, False, W, W, W, 0.0, tau_,
                         damp)                          # F = tau - damping w
            self._add_wrenches(method, F, F, X, wrenches, 1.0, N, stream, check, jacobians)
            self._launch(forward, method, N, (A[0],), stream, check, X, W, F)
            for k, h in ((1, 0.5 * dt), (2, 0.5 * dt), (3, dt)):
                self._launch(stage, method, N, (VS, XS[k], F), stream, False, W, A[k - 1],
                             XS[k - 1], h, tau_, damp)
                self._launch(move, method, N, (QA,), stream, check, X, XS[k - 1], h)
                self._add_wrenches(method, F, F, QA, wrenches, 1.0, N, stream, check,
                                   jacobians)
                self._launch(forward, method, N, (A[k],), stream, check, QA, VS, F)
            Xn, Wn = Xs[step % 2], Ws[step % 2]         # never an input, never X or W
            self._launch(finish, method, N, (XI, Wn), stream, False, W, *XS[1:], *A, dt)
            self._launch(move, method, N, (Xn,), stream, check, X, XI, dt)
            X, W = Xn, Wn
            XS[0] = W
        return X, W

    def difference(self, q0, q1, stream=0, check: bool = True, out=None):
        """Return v with integrate(q0, v) = q1 per row (N, nv), Pinocchio's ``difference``."""
        return self._run_kernel('difference', 'difference', {'q0': q0, 'q1': q1}, (self.nv,),
                                stream, check, out)

    def kinetic_energy(self, q, qd, stream=0, check: bool = True, out=None):
        """Return T = 1/2 q'^T M(q) q' per row (armature included), a device array (N,)."""
        return self._run_kernel('kinetic', 'kinetic_energy', {'q': q, 'qd': qd}, (), stream,
                                check, out)

    def potential_energy(self, q, stream=0, check: bool = True, out=None):
        """Return V = -m g . c per row (the bodies of :meth:`center_of_mass`), (N,)."""
        return self._run_kernel('potential', 'potential_energy', {'q': q}, (), stream, check,
                                out)

    def inverse_dynamics_derivatives(self, q, qd, qdd, stream=0, check: bool = True,
                                     out=None, f_ext=None):
        """
        Return (dtau/dq, dtau/dq', M) per row, device arrays (N, nv, nv) each: [t, i, k].

        Forward mode over the generated Newton-Euler row (:mod:`kron_dynamics.gpu.tangent`),
        2 nv passes per state, exact to rounding; q's directions on a moving base as the
        CPU's (along integrate(q, e_k t)). The kernel is generated and compiled on first use
        (``compile_seconds['rnea_derivatives']``); M is :meth:`mass_matrix`'s. ``out``: a
        tuple of three CUDA arrays. ``f_ext`` as for :meth:`inverse_dynamics`, each wrench
        held in world axes: dtau/dq gains -sum_i F_i H_i (each link's :meth:`hessian`).
        """
        method = 'inverse_dynamics_derivatives'
        arrays, N = self._rows({'q': q, 'qd': qd, 'qdd': qdd})
        rows = self._wrench_rows(f_ext, N, method, stream)
        outputs = self._derivatives_at(arrays, N, arrays['qdd'], stream, check, out, method)
        self._add_wrench_derivatives(method, outputs[0], arrays['q'], rows, -1.0, N, stream,
                                     check)
        return outputs

    def forward_dynamics_derivatives(self, q, qd, tau, stream=0, check: bool = True,
                                     out=None, f_ext=None):
        """
        Return (dq''/dq, dq''/dq', M^-1) per row at q'' = forward_dynamics: (N, nv, nv) each.

        dq''/dx = -M^-1 dtau/dx with :meth:`inverse_dynamics_derivatives` at that q''
        (Carpentier and Mansard, 2018), then a Cholesky solve per row: three kernels and a
        scratch q''. Rows whose M is not positive definite are named (and NaN). ``f_ext``
        as for :meth:`forward_dynamics`, each wrench held in world axes: dq''/dq gains
        M^-1 sum_i F_i H_i.
        """
        method = 'forward_dynamics_derivatives'
        arrays, N = self._rows({'q': q, 'qd': qd, 'tau': tau})
        rows = self._wrench_rows(f_ext, N, method, stream)
        return self._free_derivatives(method, *arrays.values(), rows, N, stream, check,
                                      out)[1]

    def _free_derivatives(self, method: str, Q, V, tau, rows: list, N: int, stream,
                          check: bool, out) -> tuple:
        """
        Return (q'', (dq''/dq, dq''/dq', M^-1)) at (Q, V, tau) and the wrench rows.

        q'' of the forward dynamics under tau + sum J^T F, the inverse dynamics' derivatives
        there less sum F H in dtau/dq (the wrenches' generalized forces move with q), then
        -M^-1 of them per row (``minus_solve``).
        """
        forces = self._plus_wrenches(method, Q, tau, rows, N, stream, check)
        qdd = self._cuda.device_array((N, self.nv), dtype=self.dtype, stream=stream)
        self._launch(self._kernel('forward_dynamics'), method, N, (qdd,), stream, check, Q, V,
                     forces)
        outputs = self._derivatives_at({'q': Q, 'qd': V}, N, qdd, stream, check, out, method)
        self._add_wrench_derivatives(method, outputs[0], Q, rows, -1.0, N, stream, check)
        self._launch(self._kernel('minus_solve'), method, N, outputs, stream, check)
        return qdd, outputs

    def linearize(self, q, v, tau, dt=None, contacts=None, stream=0, check: bool = True,
                  out=None, f_ext=None):
        """
        Return (A (N, 2 nv, 2 nv), B (N, 2 nv, n)) of the dynamics linearised per row.

        The CPU's :meth:`~kron_dynamics.RobotModel.linearize` (x = (q, v) in the tangent
        space, u the joint torques; without ``dt`` the continuous x' = A x + B u, with it the
        discrete map of semi-implicit Euler): :meth:`forward_dynamics_derivatives`' kernels,
        then one kernel assembling A and B per row (:mod:`.linearize`: a moving base's -ad_v,
        or the derivatives of integrate(q, dt v+)). ``out``: a tuple of two CUDA arrays.
        With ``contacts`` the dynamics in contact: v' and its derivatives of
        :meth:`constrained_forward_dynamics_derivatives` (tau (N, nv) or the joints' (N, n)).
        ``f_ext`` as for :meth:`forward_dynamics`: wrenches held in world axes over the
        step, a part of the dynamics and not of the input (free or in contact), as on the
        CPU.
        """
        step = 0.0 if dt is None else self.model._step_arguments(dt, 1)[0]
        method, nv = 'linearize', self.nv
        if contacts is not None:
            qdd, derivatives = self._constrained_derivatives(method, q, v, tau, contacts,
                                                             stream, check, None, f_ext)
            derivatives = derivatives[:3]
            arrays, N = self._rows({'q': q, 'v': v})
        else:
            arrays, N = self._rows({'q': q, 'v': v, 'tau': tau})
            rows = self._wrench_rows(f_ext, N, method, stream)
        outputs = self._outputs(((N, 2 * nv, 2 * nv), (N, 2 * nv, self.n)), arrays, stream,
                                out, method)
        if contacts is None:
            qdd, derivatives = self._free_derivatives(method, *arrays.values(), rows, N,
                                                      stream, check, None)
        return self._launch(self._kernel('linearize'), method, N, outputs, stream, check,
                            *derivatives, arrays['v'], qdd, step, int(dt is not None))

    def mass_matrix_derivative(self, q, stream=0, check: bool = True, out=None):
        """
        Return dM/dq per row, a device array (N, nv, nv, nv): [t, i, j, k] = dM_ij/dq_k.

        Forward mode over the generated CRBA (nv passes per state); a moving base's
        directions along integrate(q, e_k t), which M in base axes does not depend on (zero).
        """
        return self._run_kernel('mass_matrix_derivative', 'mass_matrix_derivative', {'q': q},
                                (self.nv,) * 3, stream, check, out)

    def gravity_derivative(self, q, stream=0, check: bool = True, out=None):
        """
        Return dG/dq per row, a device array (N, nv, nv): dtau/dq at q' = q'' = 0.

        Forward mode over the generated Newton-Euler row without velocities and
        accelerations (nv passes per state), q's directions as
        :meth:`inverse_dynamics_derivatives`'.
        """
        return self._run_kernel('gravity_derivative', 'gravity_derivative', {'q': q},
                                (self.nv, self.nv), stream, check, out)

    def coriolis_star(self, q, stream=0, check: bool = True, out=None):
        """
        Return C*(q) per row, a device array (N, nv, nv^2), the CPU's for each base.

        A fixed base (mimic joints in u): C*[i, j nv + k] = dM_ij/dq_k - 1/2 dM_kj/dq_i (000
        eq. 101), forward mode over the generated CRBA; a moving base: the symmetric matrix
        of the quadratic form h - G (quasi-velocities), forward mode over Newton-Euler.
        """
        return self._coriolis_tensor('coriolis_star', q, (1.0, 0.0, -0.5), stream, check, out)

    def christoffel(self, q, stream=0, check: bool = True, out=None):
        """Return the Christoffel symbols of the first kind per row, (N, nv, nv^2)."""
        return self._coriolis_tensor('christoffel', q, (0.5, 0.5, -0.5), stream, check, out)

    def _coriolis_tensor(self, method: str, q, coefficients: tuple, stream, check: bool,
                         out):
        return self._run_kernel('coriolis_tensor', method, {'q': q}, (self.nv, self.nv ** 2),
                                stream, check, out, *coefficients)

    def coriolis_matrix(self, q, qd, stream=0, check: bool = True, out=None):
        """
        Return the Coriolis matrix C(q, q') per row (N, nv, nv), the CPU's on every base.

        M' - 2C is skew and C q' the bias without gravity. A fixed base's: sum_k Gamma[:, :,
        k] q'_k (C q' = C*(q' kron q')); a moving base's, Pinocchio's form: 1/2 dh/dv plus
        1/2 M[:, base] ad(v_b) in the base's columns (``tangent._moving_coriolis_matrix_kernel``).
        """
        return self._run_kernel('coriolis_matrix', 'coriolis_matrix', {'q': q, 'qd': qd},
                                (self.nv, self.nv), stream, check, out)

    def operational_space_inertia(self, q, link: str, point=None,
                                  frame: str = 'local_world_aligned', part: str = 'full',
                                  damping: float = 0.0, stream=0, check: bool = True,
                                  out=None):
        """
        Return Lambda = (J M^-1 J^T + damping^2 E)^-1 per row, (N, 6, 6) or (N, 3, 3).

        J of :meth:`jacobian` (its rows by ``part``: 'full', 'linear', 'angular'), M of
        :meth:`mass_matrix`, then one kernel per row as the CPU's: rows whose J M^-1 J^T has a
        condition number above 1e8 are named (SingularJacobianError) and NaN.
        """
        rows, damping = self.model._task_arguments(part, damping)      # the CPU's checks
        arrays, N = self._rows({'q': q})
        first, size = rows.start, rows.stop - rows.start
        method = 'operational_space_inertia'
        result = self._outputs(((N, size, size),), arrays, stream, out, method)
        J = self._per_link('jacobian', arrays, link, point, frame, stream, check, None,
                           (6, self.nv), method)
        M = self._run_kernel('mass_matrix', method, arrays, (self.nv, self.nv), stream, check,
                             None)
        return self._launch(self._kernel('task_inertia'), method, N, result, stream, check,
                            M, J, first, damping, TASK_RCOND)

    def _derivatives_at(self, arrays: dict, N: int, qdd, stream, check: bool, out,
                        method: str) -> tuple:
        """Write (dtau/dq, dtau/dq', M) at (q, q', qdd) into new arrays or ``out``."""
        shape = (N, self.nv, self.nv)
        outputs = self._outputs((shape,) * 3, arrays, stream, out, method)
        self._launch(self._kernel('rnea_derivatives'), method, N, outputs[:2],
                     stream, check, arrays['q'], arrays['qd'], qdd)
        self._launch(self._kernel('mass_matrix'), method, N, outputs[2:], stream, check,
                     arrays['q'])
        return outputs

    def hessian(self, q, link: str, point=None, frame: str = 'local_world_aligned', stream=0,
                check: bool = True, out=None):
        """
        Return the 6 x nv^2 Hessian of :meth:`jacobian` per row, (N, 6, nv^2).

        H[t, :, s nv + k] = dJ[:, s]/dq_k along integrate(q, e_k t), as on the CPU: forward
        mode over the link's Jacobian kernel (:mod:`kron_dynamics.gpu.tangent`), generated
        and compiled on first use.
        """
        return self._per_link('hessian', {'q': q}, link, point, frame, stream, check, out,
                              (6, self.nv * self.nv))

    def _per_link(self, name: str, named: dict, link: str, point, frame: str, stream,
                  check: bool, out, shape: tuple, method: str = ''):
        """
        Run a link's kernel ``name`` of LINK_SIGNATURES (made on first use): (N, *shape).

        ``method``: the name refused rows are reported under (the kernel's by default).
        """
        try:
            code = FRAMES[frame]
        except (KeyError, TypeError):
            raise ValueError(f'frame must be one of {list(FRAMES)[:3]} (or Pinocchio\'s '
                             f"upper-case names), got {frame!r}") from None
        frames = self.model.description.frames
        if not isinstance(link, str) or link not in frames:
            raise ModelError(f'unknown link {link!r}; links are {list(frames)}')
        local = np.zeros(3) if point is None else np.asarray(point, dtype=float).reshape(-1)
        if local.shape != (3,) or not np.all(np.isfinite(local)):
            raise ValueError(f'point must be 3 finite numbers (link frame), got {point!r}')
        if name == 'acceleration' and code == WORLD:
            raise ValueError("acceleration: frame 'world' has no classical acceleration (its "
                             "linear part is not a point's velocity); use "
                             "'local_world_aligned' or 'local'")
        kernel = self._link_kernels.get((name, link))
        if kernel is None:
            kind, signature = LINK_SIGNATURES[name]
            module = self._link_modules.get((kind, link))
            if module is None:
                from . import tangent
                write = {'jacobian': jacobian_source, 'hessian': tangent.hessian_source,
                         'rates': tangent.rates_source}[kind]
                _, _, module = _cached_module(self._precision(write(self.model, link)), kind)
                self._link_modules[(kind, link)] = module
            kernel = self._link_kernels[(name, link)] = self._compile(
                signature, getattr(module, name))
        arrays, N = self._rows(named)
        result = self._outputs(((N, *shape),), arrays, stream, out, method or name)
        return self._launch(kernel, method or name, N, result, stream, check,
                            *arrays.values(), *map(float, local), code)

    def jacobian(self, q, link: str, point=None, frame: str = 'local_world_aligned', stream=0,
                 check: bool = True, out=None):
        """
        Return the 6 x nv Jacobian of a link (or a point on it) per row, (N, 6, nv).

        Frames as on the CPU (``'local_world_aligned'``, ``'world'``, ``'local'``, or
        Pinocchio's spellings). The link's kernel is generated and compiled on first use.
        """
        return self._per_link('jacobian', {'q': q}, link, point, frame, stream, check, out,
                              (6, self.nv))

    def jacobian_derivative(self, q, qd, link: str, point=None,
                            frame: str = 'local_world_aligned', stream=0, check: bool = True,
                            out=None):
        """
        Return J'(q, q'), the time derivative of :meth:`jacobian` per row, (N, 6, nv).

        J'[:, s] = sum_k H[:, s nv + k] q'_k (000 eq. 8), as on the CPU: one forward pass
        along q' over the link's Jacobian kernel (:func:`.tangent.rates_source`).
        """
        return self._per_link('jacobian_derivative', {'q': q, 'qd': qd}, link, point, frame,
                              stream, check, out, (6, self.nv))

    def jacobian_derivative_times_velocity(self, q, qd, link: str, point=None,
                                           frame: str = 'local_world_aligned', stream=0,
                                           check: bool = True, out=None):
        """Return J'(q, q') q' per row (N, 6), :meth:`jacobian_derivative`'s frames."""
        return self._per_link('jacobian_derivative_times_velocity', {'q': q, 'qd': qd}, link,
                              point, frame, stream, check, out, (6,))

    def acceleration(self, q, qd, qdd, link: str, point=None,
                     frame: str = 'local_world_aligned', stream=0, check: bool = True,
                     out=None):
        """
        Return the classical acceleration of a link or point per row (N, 6), linear first.

        J q'' + J' q' in world axes ('local_world_aligned'), or turned into the link's axes
        ('local', 000 eq. 59); 'world' is refused, as on the CPU.
        """
        return self._per_link('acceleration', {'q': q, 'qd': qd, 'qdd': qdd}, link, point,
                              frame, stream, check, out, (6,))

    # ----------------------------------------------------------------- contacts
    def _contact_kernel(self, name: str, m: int):
        """Return the kernel ``name`` of CONTACT_SIGNATURES for m contact rows (made once)."""
        kernel = self._kernels.get((name, m))
        if kernel is None:
            module = self._contact_modules.get(m)
            if module is None:
                from .contacts import contacts_source
                _, _, module = _cached_module(self._precision(contacts_source(self.model, m)),
                                              'contacts')
                self._contact_modules[m] = module
            kernel = self._kernels[(name, m)] = self._compile(CONTACT_SIGNATURES[name],
                                                              getattr(module, name))
        return kernel

    def _contact_terms(self, method: str, arrays: dict, N: int, contacts: list, stream,
                       check: bool, out=None):
        """
        Return (J_c (N, m, nv), gamma (N, m) or None without 'v' in ``arrays``).

        Each contact's rows from its link's Jacobian kernel in its ``reference_frame`` and
        (with v) its classical acceleration kernel at v' = 0 (``contact_rows``), as the CPU's
        ``_contact_terms``; J_c into ``out`` if given.
        """
        m, nv, cuda = sum(c.dim for c in contacts), self.nv, self._cuda
        Q, V = arrays['q'], arrays.get('v')
        (JC,) = self._outputs(((N, m, nv),), arrays, stream, out, method)
        if self._spare is None:
            self._spare = cuda.device_array((1, 1), dtype=self.dtype)
        spare = GC = self._spare
        zero = None
        if V is not None:
            GC = cuda.device_array((N, m), dtype=self.dtype, stream=stream, order=self._order(Q))
            zero = self._zeros(N)
        rows, row0 = self._contact_kernel('contact_rows', m), 0
        for c in contacts:
            J6 = self._per_link('jacobian', {'q': Q}, c.link, c.point, c.reference_frame,
                                stream, check, None, (6, nv), method)
            A6 = spare if V is None else self._per_link(
                'acceleration', {'q': Q, 'v': V, 'dv': zero}, c.link, c.point,
                c.reference_frame, stream, check, None, (6,), method)
            self._launch(rows, method, N, (JC, GC), stream, False, J6, A6,
                         spare if V is None else V, row0, c.dim, int(V is not None))
            row0 += c.dim
        return JC, (None if V is None else GC)

    def _zeros(self, N: int):
        """
        Return N rows of nv zeros, of a buffer kept between calls and never written after.

        Copied from the host once, synchronously, so that a call on any stream reads zeros.
        """
        if self._zero_rows is None or self._zero_rows.shape[0] < N:
            self._zero_rows = self._cuda.to_device(np.zeros((N, self.nv), dtype=self.dtype))
        return self._zero_rows[:N]

    def contact_jacobian(self, q, contacts, stream=0, check: bool = True, out=None):
        """
        Return J_c per row (N, m, nv): the contacts' Jacobian rows, as the CPU's.

        ``contacts``: the CPU's (:class:`~kron_dynamics.Contact` objects or link names); each
        contact's rows (linear for dim 3, linear then angular for dim 6) in its
        ``reference_frame``'s axes, from its link's generated Jacobian kernel.
        """
        contacts = self.model._contact_list(contacts)
        arrays, N = self._rows({'q': q})
        return self._contact_terms('contact_jacobian', arrays, N, contacts, stream, check,
                                   out)[0]

    def constrained_forward_dynamics(self, q, v, tau, contacts, stream=0, check: bool = True,
                                     out=None, f_ext=None):
        """
        Return (v' (N, nv), lambda (N, m)): M v' + h = S^T tau + J_c^T lambda, J_c v' + gamma = 0.

        The CPU's :meth:`~kron_dynamics.RobotModel.constrained_forward_dynamics` per row:
        ``tau`` (N, nv), or (N, n) the joints' alone (a moving base is not actuated); J_c
        and gamma by :meth:`contact_jacobian`'s kernels, M and h by the generated ones, then
        ``contact_solve`` (:mod:`.contacts`): redundant contacts get the minimum-norm lambda;
        rows whose contacts contradict each other are named (SingularJacobianError) and NaN.
        ``out``: a tuple of two CUDA arrays. ``f_ext`` as for :meth:`forward_dynamics`:
        other wrenches on the robot, their sum J^T F taken off h.
        """
        method, rows = 'constrained_forward_dynamics', []
        if f_ext is not None:
            arrays, N = self._rows({'q': q, 'v': v})
            q, v, rows = arrays['q'], arrays['v'], self._wrench_rows(f_ext, N, method, stream)
        return self._constrained(method, q, v, tau, contacts, stream, check, out, rows)

    def _double_only(self, method: str) -> None:
        """Refuse a contact solve in float32: its tolerances are the CPU's, for float64."""
        if self.dtype != np.float64:
            raise ValueError(f'{method} runs in float64 only (its tolerances, the CPU\'s '
                             '1e-8 residuals and 1e-10 cut-offs, are below float32\'s '
                             'rounding): use model.on_gpu()')

    def _constrained(self, method: str, q, v, tau, contacts, stream, check: bool, out,
                     rows: list = ()):
        """
        Return :meth:`constrained_forward_dynamics`, refused rows named under ``method``.

        ``rows``: the wrenches of :meth:`_wrench_rows`, their sum J^T F taken off h.
        """
        self._double_only(method)
        contacts = self.model._contact_list(contacts)
        arrays, N = self._rows({'q': q, 'v': v})
        forces = self._device(tau, 'tau', joints=True)
        if forces.shape[0] != N:
            raise ValueError(f'tau has {forces.shape[0]} rows, q {N}')
        m, nv = sum(c.dim for c in contacts), self.nv
        outputs = self._outputs(((N, nv), (N, m)), {**arrays, 'tau': forces}, stream, out,
                                method)
        J, G = self._contact_terms(method, arrays, N, contacts, stream, check)
        M = self._run_kernel('mass_matrix', method, {'q': arrays['q']}, (nv, nv), stream,
                             check, None)
        H = self._cuda.device_array((N, nv), dtype=self.dtype, stream=stream)
        self._launch(self._kernel('rnea'), method, N, (H,), stream, check, arrays['q'],
                     arrays['v'], arrays['q'], 1, 0, 1.0)
        self._add_wrenches(method, H, H, arrays['q'], rows, -1.0, N, stream, check)
        from .contacts import CONTACT_RCOND
        return self._launch(self._contact_kernel('contact_solve', m), method, N, outputs,
                            stream, check, M, H, forces, nv - forces.shape[1], J, G,
                            CONTACT_RCOND)

    def contact_inverse_dynamics(self, q, v, dv, contacts, stream=0, check: bool = True,
                                 out=None, f_ext=None):
        """
        Return (tau (N, n), lambda (N, m)): the joint forces and contact forces realising v'.

        The CPU's :meth:`~kron_dynamics.RobotModel.contact_inverse_dynamics` per row: the
        generated inverse dynamics at v', J_c and gamma, then ``contact_inverse``
        (:mod:`.contacts`): the minimum-norm lambda giving the base its acceleration; rows
        whose v' moves a contact, or whose base acceleration no contact force gives, are
        named (ValueError) and NaN. ``out``: a tuple of two CUDA arrays. ``f_ext`` as for
        :meth:`inverse_dynamics`: other wrenches on the robot (M v' + h - sum J^T F_ext).
        """
        method = 'contact_inverse_dynamics'
        self._double_only(method)
        contacts = self.model._contact_list(contacts)
        arrays, N = self._rows({'q': q, 'v': v, 'dv': dv})
        rows = self._wrench_rows(f_ext, N, method, stream)
        m, nv = sum(c.dim for c in contacts), self.nv
        outputs = self._outputs(((N, self.n), (N, m)), arrays, stream, out, method)
        J, G = self._contact_terms(method, arrays, N, contacts, stream, check)
        total = self._cuda.device_array((N, nv), dtype=self.dtype, stream=stream)
        self._launch(self._kernel('rnea'), method, N, (total,), stream, check, arrays['q'],
                     arrays['v'], arrays['dv'], 1, 1, 1.0)
        self._add_wrenches(method, total, total, arrays['q'], rows, -1.0, N, stream, check)
        from .contacts import CONTACT_RCOND
        return self._launch(self._contact_kernel('contact_inverse', m), method, N, outputs,
                            stream, check, total, J, G, arrays['dv'], CONTACT_RCOND)

    def _constrained_kernel(self, contacts: list):
        """Return (the derivative kernel for these contacts' m rows, its constant arrays)."""
        cached = self._constrained_kernels.get(tuple(contacts))
        if cached is not None:
            return cached
        full, _, packed = self.model._contact_paths(contacts)
        axes, paths, lengths, link_rows, points, dims, local, cpl = packed
        names, theirs = list(self.model.link_names), list(full.link_names)
        rows_of = np.array([names.index(theirs[int(a)]) for a in axes[:, 0]], dtype=np.int64)
        rows = np.array([names.index(theirs[r]) for r in link_rows], dtype=np.int64)
        m, nf = int(dims.sum()), axes.shape[0]
        key = ('contact_derivatives', m, nf)
        kernel = self._kernels.get(key)
        if kernel is None:
            from .constrained_derivatives import contact_derivatives_source
            source = contact_derivatives_source(self.model, contacts)
            _, _, module = _cached_module(self._precision(source), 'constrained')
            kernel = self._kernels[key] = self._compile(CONSTRAINED_SIGNATURE,
                                                        module.contact_derivatives)
        constants = tuple(self._cuda.to_device(np.ascontiguousarray(x)) for x in (
            axes.astype(self.dtype), rows_of, paths, lengths, rows,
            points.astype(self.dtype).reshape(-1, 3), dims, local, cpl[:, 0].astype(np.int64),
            cpl[:, 1].astype(self.dtype)))
        self._constrained_kernels[tuple(contacts)] = kernel, constants
        return kernel, constants

    def constrained_forward_dynamics_derivatives(self, q, v, tau, contacts, stream=0,
                                                 check: bool = True, out=None, f_ext=None):
        """
        Return the six derivatives of :meth:`constrained_forward_dynamics` per row.

        (dv'/dq, dv'/dv, dv'/dtau) (N, nv, nv) and (dlambda/dq, dlambda/dv, dlambda/dtau)
        (N, m, nv), the CPU's :meth:`~kron_dynamics.RobotModel.
        constrained_forward_dynamics_derivatives`: (v', lambda), the inverse dynamics'
        derivatives at v' and the link poses from the generated kernels, then one kernel
        per row (:mod:`.constrained_derivatives`: the contact terms along each contact's
        path, the KKT solve). Rows with redundant contact rows are named
        (SingularJacobianError) and NaN. ``out``: a tuple of six CUDA arrays. ``f_ext`` as
        for :meth:`constrained_forward_dynamics`, each wrench held in world axes: the
        inverse dynamics' dtau/dq less sum_i F_i H_i enters the solve (so d/dq gains d/dtau
        sum F H, the CPU's rule).
        """
        return self._constrained_derivatives(
            'constrained_forward_dynamics_derivatives', q, v, tau, contacts, stream, check,
            out, f_ext)[1]

    def _constrained_derivatives(self, method: str, q, v, tau, contacts, stream, check: bool,
                                 out, f_ext=None) -> tuple:
        """Return (v', the six derivatives) of :meth:`constrained_forward_dynamics`."""
        contacts, nv = self.model._contact_list(contacts), self.nv
        arrays, N = self._rows({'q': q, 'v': v})
        rows = self._wrench_rows(f_ext, N, method, stream)
        m = sum(c.dim for c in contacts)
        forces = self._device(tau, 'tau', joints=True)
        if forces.shape[0] != N:
            raise ValueError(f'tau has {forces.shape[0]} rows, q {N}')
        outputs = self._outputs(((N, nv, nv),) * 3 + ((N, m, nv),) * 3,
                                {**arrays, 'tau': forces}, stream, out, method)
        dv, lam = self._constrained(method, arrays['q'], arrays['v'], forces, contacts, stream,
                                    check, None, rows)
        derivatives = self._derivatives_at({'q': arrays['q'], 'qd': arrays['v']}, N, dv,
                                           stream, check, None, method)
        self._add_wrench_derivatives(method, derivatives[0], arrays['q'], rows, -1.0, N,
                                     stream, check)
        poses = self.link_poses(arrays['q'], stream, check)[0]
        kernel, constants = self._constrained_kernel(contacts)
        from .constrained_derivatives import DELASSUS_RCOND
        return dv, self._launch(kernel, method, N, outputs, stream, check, *constants,
                                DELASSUS_RCOND, arrays['v'], dv, poses, lam, *derivatives)
