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
Timing for the benchmarks: one call alone (per_call), two calls alternately (alternate).

The machine is shared and noisy, so a ratio against another library is only meaningful when
both are timed in the same run, alternately, and the minimum over repeats is reported beside
the median.
"""

import os
import timeit

import numpy as np


def calls_per_run(f, budget: float, repeat: int) -> int:
    """Return how many calls of f make one of ``repeat`` runs last about budget / repeat."""
    number = 1
    while True:
        t = timeit.timeit(f, number=number)
        if t >= budget / repeat or number >= 1 << 20:
            return number
        number *= 2 if t > 0.2 * budget / repeat else 8


def per_call(f, budget: float, repeat: int) -> dict:
    """Time f(): min and median microseconds per call over `repeat` runs of `number` calls."""
    f()   # warm-up (numba compiles on the first call)
    number = calls_per_run(f, budget, repeat)
    times = np.array(timeit.repeat(f, number=number, repeat=repeat)) / number * 1e6
    return {'min_us': float(times.min()), 'median_us': float(np.median(times)),
            'number': number, 'repeat': repeat}


def safe_time(f, budget, repeat, log) -> dict:
    """per_call, or {'error': ...} if f raises."""
    try:
        return per_call(f, budget, repeat)
    except Exception as exc:
        log(f'      timing failed: {type(exc).__name__}: {exc}')
        return {'error': f'{type(exc).__name__}: {exc}'}


def alternate(f, g, budget: float, repeat: int) -> dict:
    """
    Time f (ours) and g (the other library's) alternately; microseconds per call.

    Each repeat times both, the order swapped every time, so that a slow spell of the
    machine hits both; ``ratio_min`` is f's minimum over g's.
    """
    f()
    g()
    numbers = [calls_per_run(h, budget, repeat) for h in (f, g)]
    tf, tg = [], []
    for r in range(repeat):
        order = ((f, numbers[0], tf), (g, numbers[1], tg))
        for h, number, out in (order if r % 2 == 0 else order[::-1]):
            out.append(timeit.timeit(h, number=number) / number * 1e6)
    tf, tg = np.array(tf), np.array(tg)
    return {'kron_min_us': float(tf.min()), 'kron_median_us': float(np.median(tf)),
            'pin_min_us': float(tg.min()), 'pin_median_us': float(np.median(tg)),
            'ratio_min': float(tf.min() / tg.min()),
            'ratio_median': float(np.median(tf / tg)), 'repeat': repeat,
            'numbers': numbers}


def batch_against_loop(ours, theirs, N: int, budget: float, repeat: int) -> dict:
    """Time one batch call of ours on N states against the other library's loop over them."""
    timing = alternate(ours, theirs, budget * 3, max(3, repeat // 3))
    return {'N': N, 'kron_us_per_state': timing['kron_min_us'] / N,
            'pin_loop_us_per_state': timing['pin_min_us'] / N,
            'speedup': timing['pin_min_us'] / timing['kron_min_us'],
            'threads': int(os.environ.get('NUMBA_NUM_THREADS', os.cpu_count()))}


def timed_pairs(calls: dict, budget: float, repeat: int, log, target=None) -> dict:
    """
    Time every call against its counterpart alternately: op -> its :func:`alternate` row.

    ``calls``: op -> (the other library's name for it, ours, theirs[, ...]); each row also
    names the counterpart and the target ratio (None: reported only).
    """
    rows = {}
    for op, (baseline, ours, theirs, *_) in calls.items():
        row = rows[op] = {'pinocchio': baseline, 'target': target,
                          **alternate(ours, theirs, budget, repeat)}
        log(f"  {op}: {row['kron_min_us']:.2f} us, {baseline} {row['pin_min_us']:.2f} us, "
            f"ratio {row['ratio_min']:.2f} (median {row['ratio_median']:.2f})")
    return rows
