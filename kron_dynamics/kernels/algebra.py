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
Scalar 3-vector and 3x3 algebra on tuples for the kernels, and their jit decorators.

Per-body arithmetic works on tuples (a 3-vector is a 3-tuple, a rotation a row-major
9-tuple), not on small arrays, so that a kernel call allocates one work array and costs
little more than numba's argument unboxing.
"""

import math

import numba

# every kernel is compiled on first use and cached on disk (next to the sources, or in
# NUMBA_CACHE_DIR)
jit = numba.njit(cache=True, fastmath=False, nogil=True)
# batch kernels split the rows into chunks that run on numba's thread pool (prange)
pjit = numba.njit(cache=True, fastmath=False, nogil=True, parallel=True)
# steps that take arrays and run in a loop (a body's frame, a batch's row), and entry points
# that other kernels call, inlined into their callers: a call that is not inlined counts
# references to its array arguments up and down (atomic operations, contended between
# threads), which cost more than a body's step itself (docs/performance.md)
inline = numba.njit(cache=True, fastmath=False, nogil=True, inline='always')


@jit
def all_finite(x):
    """Return True if every entry of a vector is finite (the facade's input check)."""
    for i in range(x.shape[0]):
        if not math.isfinite(x[i]):
            return False
    return True


@jit
def chunks(N):
    """Return the number of row chunks for a batch (prange spreads them over the threads)."""
    # a constant: numba.get_num_threads() here would keep the kernels out of the disk cache
    return max(1, min(N, 64))


@jit
def add(a, b):
    """Return a + b."""
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@jit
def sub(a, b):
    """Return a - b."""
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@jit
def scl(a, s):
    """Return a s."""
    return (a[0] * s, a[1] * s, a[2] * s)


@jit
def dot(a, b):
    """Return a . b."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@jit
def cross(a, b):
    """Return a x b."""
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@jit
def get3(A, i, o):
    """Return A[i, o:o + 3] as a tuple."""
    return (A[i, o], A[i, o + 1], A[i, o + 2])


@jit
def set3(A, i, o, v):
    """Write A[i, o:o + 3] = v."""
    A[i, o] = v[0]
    A[i, o + 1] = v[1]
    A[i, o + 2] = v[2]


@jit
def acc3(A, i, o, v):
    """Add v to A[i, o:o + 3]."""
    A[i, o] += v[0]
    A[i, o + 1] += v[1]
    A[i, o + 2] += v[2]


@jit
def get9(A, i, o):
    """Return A[i, o:o + 9] (a row-major 3 x 3 matrix) as a tuple."""
    return (A[i, o], A[i, o + 1], A[i, o + 2], A[i, o + 3], A[i, o + 4], A[i, o + 5],
            A[i, o + 6], A[i, o + 7], A[i, o + 8])


@jit
def set9(A, i, o, R):
    """Write A[i, o:o + 9] = R."""
    for k in range(9):
        A[i, o + k] = R[k]


@jit
def mv(R, v):
    """R v for R a row-major 9-tuple."""
    return (R[0] * v[0] + R[1] * v[1] + R[2] * v[2],
            R[3] * v[0] + R[4] * v[1] + R[5] * v[2],
            R[6] * v[0] + R[7] * v[1] + R[8] * v[2])


@jit
def mtv(R, v):
    """R^T v for R a row-major 9-tuple."""
    return (R[0] * v[0] + R[3] * v[1] + R[6] * v[2],
            R[1] * v[0] + R[4] * v[1] + R[7] * v[2],
            R[2] * v[0] + R[5] * v[1] + R[8] * v[2])


@jit
def mm(A, B):
    """Return A B for row-major 9-tuples."""
    return (A[0] * B[0] + A[1] * B[3] + A[2] * B[6], A[0] * B[1] + A[1] * B[4] + A[2] * B[7],
            A[0] * B[2] + A[1] * B[5] + A[2] * B[8],
            A[3] * B[0] + A[4] * B[3] + A[5] * B[6], A[3] * B[1] + A[4] * B[4] + A[5] * B[7],
            A[3] * B[2] + A[4] * B[5] + A[5] * B[8],
            A[6] * B[0] + A[7] * B[3] + A[8] * B[6], A[6] * B[1] + A[7] * B[4] + A[8] * B[7],
            A[6] * B[2] + A[7] * B[5] + A[8] * B[8])


@jit
def mmt(A, B):
    """Return A B^T for row-major 9-tuples."""
    return (A[0] * B[0] + A[1] * B[1] + A[2] * B[2], A[0] * B[3] + A[1] * B[4] + A[2] * B[5],
            A[0] * B[6] + A[1] * B[7] + A[2] * B[8],
            A[3] * B[0] + A[4] * B[1] + A[5] * B[2], A[3] * B[3] + A[4] * B[4] + A[5] * B[5],
            A[3] * B[6] + A[4] * B[7] + A[5] * B[8],
            A[6] * B[0] + A[7] * B[1] + A[8] * B[2], A[6] * B[3] + A[7] * B[4] + A[8] * B[5],
            A[6] * B[6] + A[7] * B[7] + A[8] * B[8])
