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
Closed-form equations of motion with sympy, and their printers (text, LaTeX, Python).

:mod:`.model` derives M(q), C*(q) and G(q) (:class:`SymbolicModel`), :mod:`.codegen` prints
them, :mod:`.sources` loads DH YAML files and the bundled machines, :mod:`.command` is
``kron-dynamics equations``, :mod:`.budget` bounds the time and size of both.
"""

from .budget import DEFAULT_MAX_OPERATIONS, DEFAULT_MAX_SECONDS, SymbolicTooLarge
from .codegen import load_module
from .model import EquationsOfMotion, SymbolicModel
from .sources import load_dh_yaml, load_source, stacker_symbolic

__all__ = ['DEFAULT_MAX_OPERATIONS', 'DEFAULT_MAX_SECONDS', 'EquationsOfMotion', 'load_dh_yaml',
           'load_module', 'load_source', 'stacker_symbolic', 'SymbolicModel',
           'SymbolicTooLarge']
