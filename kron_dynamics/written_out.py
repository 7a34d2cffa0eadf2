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
The facade's compiled methods, written out from the rows of a method table.

``robot_model._COMPILED`` (a fixed or mimic model), ``robot_model._PROJECTED`` (the mimic
projections) and ``floating_model._COMPILED_BASE`` (a moving base) describe each compiled
method as data; the table's module turns a row into the lines of a method and
:func:`write_out` makes them a function, so a call costs what a hand-written method does.
"""

from __future__ import annotations

import __future__
import inspect
import linecache


def write_out(lines: list, module: dict, where: str, qualname: str, doc: str):
    """
    Return the function whose source is ``lines``, written out from a row of ``where``.

    ``module``: the globals of the table's module, which the function runs in as a
    hand-written method would. Its source is in linecache, so tracebacks and
    inspect.getsource show it.
    """
    source = '\n'.join(lines) + '\n'
    filename = f"<{module['__name__']}.{where}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    defined = {}
    exec(compile(source, filename, 'exec', __future__.annotations.compiler_flag,
                 dont_inherit=True),
         module, defined)       # noqa: S102  (source built from a table of the package)
    method, = defined.values()
    method.__doc__ = inspect.cleandoc(doc)
    method.__qualname__ = qualname
    method.__module__ = module['__name__']
    return method


def parameter_names(params: str) -> list:
    """Return the names in a parameter list as written in a signature ('q: ArrayLike, ...')."""
    code = compile(f'def f({params}): pass', '<parameters>', 'exec',
                   __future__.annotations.compiler_flag, dont_inherit=True)
    defined = {}
    exec(code, {}, defined)     # noqa: S102  (a parameter list of the package's tables)
    return list(inspect.signature(defined['f']).parameters)
