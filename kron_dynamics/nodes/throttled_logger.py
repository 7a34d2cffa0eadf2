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

"""A logger gate for messages that can repeat at the rate of the input stream."""

import time

THROTTLE_S = 1.0
MAX_KEYS = 256


class ThrottledLogger:
    """
    Log at most once per ``period`` s per key, and cheaply when a message is suppressed.

    rclpy's ``throttle_duration_sec`` inspects the caller's stack frame on every call, even
    when it then suppresses the message (about 0.3 ms a call here): at 1 kHz that alone eats
    a third of the loop and made the controller fall behind its joint states. The gate here
    is a dictionary lookup and a clock read. A logged line says how many similar ones were
    suppressed since the previous one.
    """

    def __init__(self, logger, period: float = THROTTLE_S):
        self._logger = logger
        self._period = period
        self._next = {}
        self._suppressed = {}

    # One call of the rclpy logger per severity, each on a line of its own: rclpy keys a
    # logging call site by its location and refuses ("Logger severity cannot be changed
    # between calls") a site that logs at another severity than the first time.
    def warning(self, key: str, text: str) -> None:
        """Log a warning unless one with the same key was logged less than period ago."""
        text = self._gate(key, text)
        if text is not None:
            self._logger.warning(text)

    def error(self, key: str, text: str) -> None:
        """Log an error unless one with the same key was logged less than period ago."""
        text = self._gate(key, text)
        if text is not None:
            self._logger.error(text)

    def _gate(self, key: str, text: str) -> str | None:
        """Return the text to log now (with the suppressed count), or None to suppress it."""
        now = time.monotonic()
        if len(self._next) > MAX_KEYS:   # keys made from message texts: keep the dict small
            self._next = {k: t for k, t in self._next.items() if t > now}
            self._suppressed = {k: c for k, c in self._suppressed.items() if k in self._next}
        if now < self._next.get(key, 0.0):
            self._suppressed[key] = self._suppressed.get(key, 0) + 1
            return None
        self._next[key] = now + self._period
        count = self._suppressed.pop(key, 0)
        return text if not count else f'{text} ({count} similar suppressed)'
