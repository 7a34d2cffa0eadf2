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

"""``kron-dynamics equations SOURCE``: print or write the closed-form equations of motion."""

from pathlib import Path
import sys

from .budget import DEFAULT_MAX_OPERATIONS, DEFAULT_MAX_SECONDS
from .sources import load_source


def equations_command(source: str, symbolic_parameters: bool = False, fmt: str = 'text',
                      max_seconds: float | None = None, max_operations: int | None = None,
                      output: str | None = None) -> int:
    """Run ``kron-dynamics equations``: print (or write) the equations in one format."""
    seconds = DEFAULT_MAX_SECONDS if max_seconds is None else (max_seconds or None)
    operations = DEFAULT_MAX_OPERATIONS if max_operations is None else (max_operations or None)
    model = load_source(source, symbolic_parameters, max_seconds=seconds,
                        max_operations=operations)
    eom = model.equations()
    text = {'text': eom.to_text, 'latex': eom.to_latex, 'python': eom.to_python}[fmt]()
    if output:
        Path(output).write_text(text)
        print(f'wrote {output}', file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
