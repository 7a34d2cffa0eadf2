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
Compiled (numba) kernels: the fast paths of :class:`~kron_dynamics.RobotModel`.

One module per algorithm, mirroring :mod:`kron_dynamics.algorithms` (the readable reference
they are tested against): :mod:`.kinematics` (the one forward pass every kernel starts
from), :mod:`.rnea`, :mod:`.crba`, :mod:`.coriolis_star`, :mod:`.forward_dynamics`,
:mod:`.jacobians` (Jacobians, their time derivative, Hessians, accelerations of a link or
point), :mod:`.center_of_mass`;
:mod:`.algebra` has the tuple arithmetic (and ``all_finite``, the facade's input check),
:mod:`.layout` the packed model.

A kernel writes into an output array the caller allocates (returning a new array from
compiled code costs more than the dynamics of a 7-DOF arm) and returns False when an input
is wrong (or M is singular, for forward dynamics); the facade then takes its general path,
which raises the descriptive error. Batch kernels run their rows on numba's thread pool
(``NUMBA_NUM_THREADS``, default one thread per core).

Nothing here imports numba until a kernel is first used: :data:`native` compiles (or loads
from the disk cache) the entry point of a kernel for fixed argument types on first access,
which also skips numba's type dispatch on every call.
"""

from .layout import (BIAS, CORIOLIS, GRAVITY, ID, LOCAL, LOCAL_WORLD_ALIGNED, pack, pack_sites,
                     WORLD)

# the reference frames of the kinematics kernels by name (Pinocchio's ReferenceFrame)
FRAMES = {'world': WORLD, 'local': LOCAL, 'local_world_aligned': LOCAL_WORLD_ALIGNED,
          # Pinocchio's spellings (pinocchio.ReferenceFrame)
          'WORLD': WORLD, 'LOCAL': LOCAL, 'LOCAL_WORLD_ALIGNED': LOCAL_WORLD_ALIGNED}


class _Native:
    """
    Entry points of the kernels for the argument types of :mod:`.native`, made on first use.

    ``native.rnea(...)`` calls the compiled code without numba's per-call type dispatch;
    the caller must pass exactly those types: int64 / float64 arrays of the stated
    dimensions (the entry point does not check dtype or ndim).
    """

    def __getattr__(self, name):
        from .native import entry_point
        # importing the submodule .native set this package's attribute ``native`` to it:
        # put this object back, or a later ``from kron_dynamics.kernels import native``
        # would get the module
        globals()['native'] = self
        entry = entry_point(name)
        setattr(self, name, entry)
        return entry


native = _Native()

__all__ = ['BIAS', 'CORIOLIS', 'FRAMES', 'GRAVITY', 'ID', 'native', 'pack', 'pack_sites']
