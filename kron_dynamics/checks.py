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
Argument checks and small types shared by the facade (robot_model.py, floating_model.py).

The one check of a model's per-coordinate arrays (ArrayChecker: nq for configurations, nv
for the rest), reference frame names (Pinocchio's three, in lower case or as Pinocchio spells
them), time steps, random generators, the contacts of the constrained dynamics.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
import functools
import inspect

import numpy as np

from .errors import ModelError
from .kernels import FRAMES, native

_PARTS = {'full': slice(0, 6), 'linear': slice(0, 3), 'angular': slice(3, 6)}

FRAME_NAMES = ('world', 'local', 'local_world_aligned')
_F64 = np.dtype(np.float64)
BASE_TYPES = ('floating', 'planar')
DEFAULT_BASE_BOX = 1.0      # random_configuration: base translation in [-1, 1] m per axis


def _task_arguments(part, damping) -> tuple[slice, float]:
    """Check operational_space_inertia's part and damping; return (its rows, damping)."""
    rows = _PARTS.get(part) if isinstance(part, str) else None
    if rows is None:
        raise ValueError(f'part must be one of {list(_PARTS)}, got {part!r}')
    try:
        value = float(damping)
    except (TypeError, ValueError):
        value = -1.0
    if not (np.isfinite(value * value) and value >= 0.0):     # damping^2 is added
        raise ValueError(f'damping must be a finite number >= 0 (its square finite), got '
                         f'{damping!r}')
    return rows, value


def _has_wrenches(f_ext) -> bool:
    """Return whether f_ext gives any wrench: False for None or {}; ValueError for no mapping."""
    if f_ext is None:
        return False
    if not isinstance(f_ext, Mapping):      # an array has no truth value: say what f_ext is
        raise ValueError('f_ext must map link names to 6-vectors (fx, fy, fz, mx, my, mz), '
                         f'got {type(f_ext).__name__}')
    return len(f_ext) > 0


def _wrenches(f_ext, check_link: Callable) -> list:
    """
    Check f_ext ({link: (fx, fy, fz, mx, my, mz)}); return [(link, wrench array)].

    ``check_link(link)`` raises (naming the links) for an unknown link; a wrench that is not
    6 finite numbers is a ValueError naming its link.
    """
    _has_wrenches(f_ext)
    out = []
    for link, wrench in f_ext.items():
        check_link(link)
        w = real_array(wrench, f"f_ext['{link}']")
        if w is None or w.shape != (6,) or not np.all(np.isfinite(w)):
            raise ValueError(f"f_ext['{link}'] must be 6 finite numbers")
        out.append((link, w))
    return out


def _batch_wrenches(f_ext, N: int, check_link: Callable) -> list:
    """
    Check f_ext for a batch of N states; return [(link, N x 6 wrenches)].

    A wrench is 6 numbers (the same for every row) or N x 6 (one per row); an unknown link
    raises as ``check_link`` does, a bad shape or a non-finite wrench is a ValueError naming
    the link (and the rows).
    """
    _has_wrenches(f_ext)
    out = []
    for link, wrench in f_ext.items():
        check_link(link)
        w = real_array(wrench, f"f_ext['{link}']")
        if w is None or w.shape not in ((6,), (N, 6)):
            got = 'no array of numbers' if w is None else f'shape {w.shape}'
            raise ValueError(f"f_ext['{link}'] must be 6 numbers (every row's) or {N} x 6 "
                             f'(one wrench per batch row), got {got}')
        finite = np.isfinite(w).all(axis=-1)
        if not np.all(finite):
            at = '' if w.ndim == 1 else f' at batch row(s) {np.flatnonzero(~finite).tolist()}'
            raise ValueError(f"f_ext['{link}'] is not finite{at}")
        out.append((link, np.broadcast_to(w, (N, 6))))
    return out


def _on_device(x) -> bool:
    """Return True for a CUDA array (numba device array, CuPy, PyTorch CUDA tensor)."""
    return not isinstance(x, np.ndarray) and (hasattr(x, '__cuda_array_interface__')
                                              or type(x).__module__.startswith('numba.cuda'))


def _host_only(x, name: str, method: str = '') -> None:
    """Raise ValueError if x is a CUDA array given to a method that runs on the CPU."""
    if _on_device(x):
        where = f'{method}: ' if method else ''
        raise ValueError(f'{where}{name} is a CUDA array, and this method runs on the CPU: '
                         'pass a NumPy array (copy_to_host()); on_gpu() lists the methods '
                         'the GPU serves')


# arrays with nq entries (configuration_names); every other per-coordinate array has nv
CONFIGURATION_ARRAYS = frozenset({'q', 'q0', 'q1'})


def real_array(x, name: str, error: type = ValueError) -> np.ndarray | None:
    """
    Return x as a float64 array (not copied where it is one); None where it is no array of numbers.

    None for ragged rows, None, text: the caller's shape check then names the array. Complex
    numbers are an ``error`` naming the array: NumPy would cast them to their real part with
    no more than a warning (a complex step gives no derivative here; the ``*_derivatives``
    methods do).
    """
    try:
        a = np.asarray(x)
    except (TypeError, ValueError):
        return None
    if a.dtype.kind == 'c':
        raise error(f'{name} has complex entries (dtype {a.dtype}): kron_dynamics takes real '
                    'numbers, and casting would drop the imaginary part')
    try:
        return a.astype(float, copy=False)
    except (TypeError, ValueError):
        return None


def real_number(x, name: str) -> float:
    """Return x as a float: a real number (Python's or NumPy's, not a bool); ValueError."""
    if isinstance(x, np.ndarray) and x.ndim == 0:
        x = x[()]
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer,
                                                             np.floating)):
        raise ValueError(f'{name} must be a number, got {x!r}')
    return float(x)


def integer(x, name: str, minimum: int) -> int:
    """Return x as an int >= minimum (Python's or NumPy's integer, not a bool); ValueError."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)) or x < minimum:
        raise ValueError(f'{name} must be an integer >= {minimum}, got {x!r}')
    return int(x)


def ndim(x) -> int:
    """Return the number of axes of x; 1 where NumPy makes no array of it (ragged rows)."""
    try:
        return np.ndim(x)
    except (TypeError, ValueError):
        return 1


class ArrayChecker:
    """
    The one check of a model's per-coordinate arrays, for every model type.

    ``q`` (and ``q0``, ``q1``) has nq entries, named by the model's configuration_names;
    every other (``qd``, ``v``, ``qdd``, ``dv``, ``tau``) nv, named by its velocity_names. One
    state is (size,), a batch (N, size). Errors are ValueErrors that name the array, the row
    and the entries at fault, and give the valid shape.
    """

    __slots__ = ('nq', 'nv', '_names', '_sizes')

    def __init__(self, configuration_names: Sequence[str], velocity_names: Sequence[str]):
        """Take the names of the configuration (nq) and velocity (nv) entries."""
        self._names = (tuple(configuration_names), tuple(velocity_names))
        self.nq, self.nv = len(self._names[0]), len(self._names[1])
        self._sizes = (self.nv, self.nq)

    def space(self, name: str, size: int | None = None) -> tuple[int, tuple]:
        """Return (size, entry names) of an array; ``size`` for one of another size."""
        q_size, v_size = self.nq, self.nv
        if size is None or size == (q_size if name in CONFIGURATION_ARRAYS else v_size):
            return (q_size, self._names[0]) if name in CONFIGURATION_ARRAYS \
                else (v_size, self._names[1])
        return size, tuple('xyzw'[:size]) if size <= 4 else tuple(map(str, range(size)))

    def vector(self, x, name: str, size: int | None = None, batch: bool = False) -> np.ndarray:
        """
        Return one state's array as a new float64 array of shape (size,).

        ``batch``: the method also takes (N, size), and the error says so.
        """
        _host_only(x, name)
        a = real_array(x, name)
        if a is not None:
            a = a.copy()        # a new array: the caller may write to it
        size, names = self.space(name, size)
        if a is None or a.shape != (size,):
            self._refuse_shape(name, a, size, names, batch)
        if not np.isfinite(a).all():
            self._refuse_values(name, a, names)
        return a

    def arrays(self, batch: bool = True, **arrays) -> tuple[list, int | None]:
        """
        Check arrays given as one state or (where ``batch``) as N states; return (arrays, N).

        N is None when every array is one state; in a batch, one-state arrays are broadcast
        to N rows.
        """
        out = {}
        N = None
        for name, x in arrays.items():
            if type(x) is np.ndarray and x.dtype is _F64 and x.ndim == 1:
                # one finite state of the right size, as np.asarray gives it (no copy),
                # checked by one compiled call (a fifth of np.isfinite(x).all()'s time)
                if (x.shape[0] == self._sizes[name in CONFIGURATION_ARRAYS]
                        and native.all_finite(x)):
                    out[name] = x
                    continue
            _host_only(x, name)
            size, names = self.space(name)
            v = real_array(x, name)
            if v is not None and batch and v.ndim == 2 and v.shape[1] == size:
                if N is not None and v.shape[0] != N:
                    raise ValueError(f'{name} has {v.shape[0]} rows, the other inputs {N}')
                N = v.shape[0]
            elif v is None or v.shape != (size,):
                self._refuse_shape(name, v, size, names, batch)
            if not np.isfinite(v).all():
                self._refuse_values(name, v, names)
            out[name] = v
        if N is not None:
            for name, v in out.items():
                if v.ndim == 1:
                    out[name] = np.broadcast_to(v, (N, v.shape[0]))
        return list(out.values()), N

    @staticmethod
    def _refuse_shape(name, a, size, names, batch):
        entries = f' (entries: {", ".join(names)})' if names else ''
        if a is None:
            raise ValueError(f'{name} must be an array of {size} numbers'
                             + (f' (or N x {size})' if batch else '') + entries)
        shapes = f'({size},) or (N, {size})' if batch else f'({size},)'
        raise ValueError(f'{name} must have shape {shapes}, got {a.shape}{entries}')

    @staticmethod
    def _refuse_values(name, a, names):
        bad = ~np.isfinite(a)
        if a.ndim == 1:
            raise ValueError(f'{name} is not finite at {[names[i] for i in np.nonzero(bad)[0]]}')
        row = int(np.nonzero(bad.any(axis=1))[0][0])
        raise ValueError(f'{name}[{row}] is not finite at '
                         f'{[names[i] for i in np.nonzero(bad[row])[0]]}')


@functools.lru_cache(maxsize=None)
def _parameters(function) -> tuple:
    return tuple(inspect.signature(function).parameters)


def argument_names(method, count: int) -> tuple:
    """Return the names of a (bound) method's first ``count`` parameters, read once per method."""
    function = getattr(method, '__func__', None)
    names = _parameters(method) if function is None else _parameters(function)[1:]
    return names[:count]


def _frame_code(frame) -> int:
    """Return the kernels' code of a reference frame name; ValueError listing the names."""
    try:
        return FRAMES[frame]
    except (KeyError, TypeError):
        raise ValueError(f'frame must be one of {list(FRAME_NAMES)} (or Pinocchio\'s '
                         f"'WORLD', 'LOCAL', 'LOCAL_WORLD_ALIGNED'), got {frame!r}") from None


def frame_name(frame) -> str:
    """Return a reference frame's name in lower case; ValueError listing the names."""
    _frame_code(frame)
    return frame.lower()


def _generator(rng) -> np.random.Generator:
    """Return a NumPy Generator from None, a seed or a Generator; ValueError otherwise."""
    if isinstance(rng, np.random.Generator):
        return rng
    try:
        return np.random.default_rng(rng)
    except (TypeError, ValueError):
        raise ValueError(f'rng must be None, a seed or a numpy.random.Generator, got '
                         f'{rng!r}') from None


def _step_arguments(dt, steps) -> tuple[float, int]:
    """Check a time step dt > 0 (finite) and an integer steps >= 0; ValueError naming them."""
    try:
        dt = float(dt)
    except (TypeError, ValueError):
        raise ValueError(f'dt must be a number of seconds, got {dt!r}') from None
    if not (np.isfinite(dt) and dt > 0.0):
        raise ValueError(f'dt must be finite and > 0, got {dt}')
    if isinstance(steps, (bool, np.bool_)) or not isinstance(steps, (int, np.integer)) \
            and not (isinstance(steps, (float, np.floating)) and float(steps).is_integer()):
        raise ValueError(f'steps must be an integer >= 0, got {steps!r}')
    if not 0 <= steps < 2 ** 63:       # a kernel's int64 counts them
        raise ValueError(f'steps must be an integer >= 0 (below 2**63), got {steps!r}')
    return dt, int(steps)


def _boolean(x, name: str) -> bool:
    """Return x as a bool: True or False (NumPy's too), or 1 or 0; ValueError naming it."""
    if isinstance(x, (bool, np.bool_)) or isinstance(x, (int, np.integer)) and x in (0, 1):
        return bool(x)
    raise ValueError(f'{name} must be True or False, got {x!r}')


def _body_parameters(name: str, p) -> None:
    """Raise ModelError unless a body's 10 dynamic parameters are finite with a mass >= 0."""
    if not np.all(np.isfinite(p)):
        raise ModelError(f"dynamic parameters of body '{name}' are not finite: "
                         f'{np.asarray(p).tolist()}')
    if p[0] < 0.0 or (p[0] == 0.0 and np.any(p[1:4])):
        raise ModelError(f"dynamic parameters of body '{name}': mass {p[0]:g} must be >= 0 "
                         '(and > 0 with a first moment m c)')


def _finite_scalar(x, what: str) -> float:
    """Return x as a finite float; ValueError naming it otherwise."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        x = float('nan')
    if not np.isfinite(x):
        raise ValueError(f'{what} must be a finite number')
    return x


CONTACT_FRAMES = {'local_world_aligned': 0, 'local': 1}


@dataclass(frozen=True)
class Contact:
    """
    A contact of a link with the world: a point (dim 3) or a surface (dim 6), as Pinocchio's.

    ``point`` is in link coordinates. A 3-D contact keeps the point still: its classical
    acceleration is zero (Pinocchio's CONTACT_3D). A 6-D contact keeps the frame at the point
    still: its spatial acceleration is zero (CONTACT_6D; when the frame moves, J_c v != 0,
    that is not the classical acceleration of the point). ``reference_frame`` chooses the
    axes of lambda and of the contact Jacobian's rows, not the constraint:
    'local_world_aligned' (default: world axes at the point) or 'local' (the link's axes);
    Pinocchio's spellings 'LOCAL_WORLD_ALIGNED' and 'LOCAL' are accepted. lambda is what the
    world applies to the robot: a force (3), then for dim 6 a moment about the point (3).
    """

    link: str
    point: tuple = (0.0, 0.0, 0.0)
    dim: int = 3
    reference_frame: str = 'local_world_aligned'

    def __post_init__(self):
        """Check dim and reference_frame; store the frame in lower case."""
        frame = self.reference_frame
        key = frame.lower() if isinstance(frame, str) else frame
        if key not in CONTACT_FRAMES:
            raise ValueError(f'Contact({self.link!r}): reference_frame must be one of '
                             f"{list(CONTACT_FRAMES)} (or Pinocchio's 'LOCAL_WORLD_ALIGNED', "
                             f"'LOCAL'), got {frame!r}")
        object.__setattr__(self, 'reference_frame', key)
        if self.point is not None:      # None: the link origin, as for jacobian
            point = real_array(self.point, f'Contact({self.link!r}): point')
            if point is None or point.shape != (3,) or not np.isfinite(point).all():
                raise ValueError(f'Contact({self.link!r}): point must be 3 finite numbers (link '
                                 f'frame), got {self.point!r}')
            object.__setattr__(self, 'point', tuple(point.tolist()))   # immutable, as the contact
        if self.dim not in (3, 6):
            raise ValueError(f'Contact({self.link!r}): dim must be 3 (a point) or 6 (a '
                             f'surface), got {self.dim!r}')


def _contacts(contacts) -> list[Contact]:
    """Normalise a contact list: Contact, a link name (point contact at its origin)."""
    if isinstance(contacts, (str, Contact)) or not isinstance(contacts, Sequence):
        raise ValueError('contacts must be a list of Contact(link, point, dim) or link names, '
                         f'got {contacts!r}')
    out = []
    for c in contacts:
        c = Contact(c) if isinstance(c, str) else c
        if not isinstance(c, Contact):
            raise ValueError(f'a contact must be Contact(link, point, dim=3 or 6) or a link '
                             f'name, got {c!r}')
        out.append(c)
    return out
