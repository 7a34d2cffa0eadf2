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

"""Time and size bounds of the symbolic derivation and of code generation."""

import numbers
import time

from ..errors import ModelError

DEFAULT_MAX_SECONDS = 30.0
DEFAULT_MAX_OPERATIONS = 500_000
SECONDS_PER_TERM_PRODUCT = 4e-6  # cost model of one term product (predictive time check)


def checked_bounds(max_seconds, max_operations) -> tuple:
    """Return (max_seconds, max_operations): None (no bound) or > 0; ModelError naming one."""
    if max_seconds is not None and (isinstance(max_seconds, bool)
                                    or not isinstance(max_seconds, numbers.Real)
                                    or not max_seconds > 0):
        raise ModelError(f'max_seconds must be a number of seconds > 0, or None for no bound '
                         f'(`kron-dynamics equations --max-seconds 0`), got {max_seconds!r}')
    if max_operations is not None and (isinstance(max_operations, bool)
                                       or not isinstance(max_operations, numbers.Integral)
                                       or not max_operations > 0):
        raise ModelError(f'max_operations must be an integer > 0, or None for no bound '
                         f'(`kron-dynamics equations --max-operations 0`), got '
                         f'{max_operations!r}')
    return (None if max_seconds is None else float(max_seconds),
            None if max_operations is None else int(max_operations))


class SymbolicTooLarge(ModelError):
    """The closed-form equations exceed the time or size bound; the message says which."""


class Budget:
    """Signal-free time and size bound: checked between steps and before each product."""

    def __init__(self, what: str, max_seconds, max_operations):
        self.what = what
        self.max_seconds = max_seconds
        self.max_operations = max_operations
        self.start = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def _time_error(self, where: str, detail: str):
        return SymbolicTooLarge(
            f'{self.what}: the closed-form equations of motion are too large for the time bound '
            f'max_seconds={self.max_seconds:g} ({detail}, at {where}). Raise it with '
            'SymbolicModel(..., max_seconds=S) or `kron-dynamics equations --max-seconds S`, '
            'or use the numeric RobotModel')

    def check(self, where: str):
        t = self.elapsed()
        if self.max_seconds is not None and t > self.max_seconds:
            raise self._time_error(where, f'{t:.1f} s spent')

    def charge(self, products: int, where: str):
        if self.max_seconds is None:
            return
        t = self.elapsed()
        predicted = products * SECONDS_PER_TERM_PRODUCT
        if t + predicted > self.max_seconds:
            raise self._time_error(where, f'{t:.1f} s spent, the next product alone needs '
                                          f'about {predicted:.0f} s')

    def size(self, ops: int, where: str):
        if self.max_operations is not None and ops > self.max_operations:
            raise SymbolicTooLarge(
                f'{self.what}: the closed-form equations of motion are too large for the size '
                f'bound max_operations={self.max_operations} ({where} alone has about {ops} '
                'operations when expanded). Raise it with SymbolicModel(..., '
                'max_operations=N) or `kron-dynamics equations --max-operations N`, or use '
                'the numeric RobotModel')
