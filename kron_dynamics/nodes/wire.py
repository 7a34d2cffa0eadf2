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
Serialized (CDR) messages on the nodes' hot path: JointState in, Float64MultiArray out.

rclpy turns every received message into Python objects and every published one back into
C: for a 7-joint JointState the conversion alone costs about 10 us, more than the dynamics
of the joint state. On the hot path the nodes therefore

- subscribe to ``joint_states`` with ``raw=True`` and read the serialized JointState with
  one compiled call (:class:`JointStateReader`): stamp, and positions and velocities of the
  model's joints, by name; and
- publish Float64MultiArray as bytes (:func:`float64_multiarray_bytes`): a prefix that
  depends only on the array's shape (the layout), then the doubles; and the stamped
  outputs, JointState with efforts, as bytes the same way (:func:`stamped_effort_bytes`).

Only the common case is read here: the XCDR1 little-endian encoding with no options (what
rmw_fastrtps sends from x86 and ARM machines), the same joint names in
the same order as the previous accepted message, finite values, consistent array lengths.
For anything else (another encoding, new names, a malformed, inconsistent or non-finite
message) the reader returns None, and the caller deserializes the message with rclpy and
checks it with the descriptive errors of ``JointStateIndex``. The result of the fast path is
tested to be identical to that of rclpy's deserializer (test/test_wire.py).
"""

import struct

import numba
import numpy as np
from numba import types as nt

CDR_LE = b'\x00\x01'      # encapsulation identifier: CDR (XCDR1), little endian
_HEADER = CDR_LE + b'\x00\x00'
OK = 0


def _align(offset: int, size: int) -> int:
    """Return offset (counted from the start of the payload) rounded up to size."""
    return offset + (-offset) % size


def float64_multiarray_prefix(dims) -> bytes:
    """
    Return the CDR bytes of a Float64MultiArray up to its first double.

    ``dims`` is a sequence of (label, size, stride); the prefix holds the layout, a data
    offset of 0 and the data length (the product of the sizes, or 0 without dims).
    """
    out = bytearray()

    def pad(size):
        out.extend(b'\x00' * (_align(len(out), size) - len(out)))

    out += struct.pack('<I', len(dims))
    for label, size, stride in dims:
        text = label.encode('utf-8') + b'\x00'
        out += struct.pack('<I', len(text)) + text
        pad(4)
        out += struct.pack('<II', size, stride)
    count = int(np.prod([d[1] for d in dims])) if dims else 0
    out += struct.pack('<II', 0, count)
    if count:
        pad(8)
    return _HEADER + bytes(out)


def layout_dims(shape, labels=None) -> list:
    """
    Return [(label, size, stride)] of a 1-D ('rows') or 2-D ('rows', 'cols') array shape.

    ``labels`` replaces the labels (one per dimension): the coordinate names of a floating
    base model's outputs.
    """
    if len(shape) == 1:
        return [(labels[0] if labels else 'rows', shape[0], shape[0])]
    rows, cols = shape
    first, second = labels if labels else ('rows', 'cols')
    return [(first, rows, rows * cols), (second, cols, cols)]


_PREFIXES = {}


def float64_multiarray_bytes(values: np.ndarray, labels=None) -> bytes:
    """Return the serialized Float64MultiArray of a 1-D ('rows') or 2-D array (array_msg)."""
    values = np.ascontiguousarray(values, dtype='<f8')
    key = (values.shape, labels)
    prefix = _PREFIXES.get(key)
    if prefix is None:
        prefix = _PREFIXES[key] = float64_multiarray_prefix(layout_dims(values.shape, labels))
    return prefix + values.tobytes()


def stamped_effort_prefix(names) -> tuple:
    """
    Return (before, after): a serialized JointState with ``names`` around its efforts.

    The stamped outputs are JointState messages (names, no positions or velocities, effort
    = the torque): everything but the stamp (bytes 4-12) and the efforts depends on the
    names only, so it is made once, by rclpy's serializer, with marker efforts that are then
    found in the bytes (the serializer may end the message with alignment padding).
    """
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState
    names = list(names)
    marker = np.arange(1.0, len(names) + 1.0) * np.pi
    data = serialize_message(JointState(name=names, effort=marker.tolist()))
    at = data.rfind(marker.astype('<f8').tobytes()) if names else len(data)
    if at < 12:
        raise RuntimeError('stamped_effort_prefix: efforts not found in the serialized message')
    return data[:at], bytes(len(data) - at - 8 * len(names))


def stamped_effort_bytes(parts: tuple, stamp_ns: int, values: np.ndarray) -> bytes:
    """Return the serialized JointState of stamped_effort_prefix with a stamp and efforts."""
    before, after = parts
    sec, nanosec = divmod(int(stamp_ns), 1_000_000_000)
    return (before[:4] + struct.pack('<iI', sec, nanosec) + before[12:]
            + np.ascontiguousarray(values, dtype='<f8').tobytes() + after)


# ------------------------------------------------------------------ compiled reader
@numba.njit(cache=True, nogil=True, inline='always')
def _u32(buf, at):
    return (np.int64(buf[at]) | (np.int64(buf[at + 1]) << 8) | (np.int64(buf[at + 2]) << 16)
            | (np.int64(buf[at + 3]) << 24))


@numba.njit(cache=True, nogil=True)
def _doubles(buf, at, rows, out):
    """Copy the doubles at byte offset ``at`` (message rows ``rows``) into out; all finite."""
    bits = out.view(np.uint64)
    for j in range(rows.size):
        base = at + 8 * rows[j]
        value = np.uint64(0)
        for b in range(8):
            value |= np.uint64(buf[base + b]) << np.uint64(8 * b)
        bits[j] = value
    for j in range(out.size):
        if not np.isfinite(out[j]):
            return False
    return True


@numba.njit(cache=True, nogil=True)
def read_joint_state(buf, blob, ends, rows, q, qd, stamp):
    """
    Read a serialized JointState whose names are those of ``blob``/``ends``; 0 if all is well.

    ``blob`` is the UTF-8 of the expected names, concatenated, ``ends`` their end offsets
    in it, ``rows`` the message row of each model joint. Fills q, qd (zeros for an empty
    velocity array) and stamp = (sec, nanosec). Any other outcome returns a code > 0 and
    the caller falls back to rclpy's deserializer.
    """
    size = buf.size
    if size < 20 or buf[0] != 0 or buf[1] != 1 or buf[2] != 0 or buf[3] != 0:
        return 1                                  # not CDR little endian without options
    p = 4                                         # alignment counts from the payload
    sec = _u32(buf, p)
    if sec >= 2 ** 31:
        sec -= 2 ** 32                            # int32
    stamp[0] = sec
    stamp[1] = _u32(buf, p + 4)
    length = _u32(buf, p + 8)                     # frame_id, with its terminating NUL
    off = p + 12 + length
    if off + 4 > size:
        return 2
    off += (-(off - p)) % 4
    if off + 4 > size:
        return 2
    count = _u32(buf, off)
    off += 4
    if count != ends.size:
        return 3                                  # other names
    start = 0
    for i in range(count):
        off += (-(off - p)) % 4
        if off + 4 > size:
            return 2
        length = _u32(buf, off)
        off += 4
        if length < 1 or off + length > size or buf[off + length - 1] != 0:
            return 2
        if length - 1 != ends[i] - start:
            return 3
        for k in range(length - 1):
            if buf[off + k] != blob[start + k]:
                return 3
        start = ends[i]
        off += length
    offsets = np.empty(3, np.int64)
    counts = np.empty(3, np.int64)
    for a in range(3):                            # position, velocity, effort
        off += (-(off - p)) % 4
        if off + 4 > size:
            return 2
        counts[a] = _u32(buf, off)
        off += 4
        if counts[a] > 0:
            off += (-(off - p)) % 8
        offsets[a] = off
        if counts[a] > (size - off) // 8:
            return 2
        off += 8 * counts[a]
    if counts[0] != count or (counts[1] != 0 and counts[1] != count):
        return 4                                  # inconsistent lengths: the slow path says
    if not _doubles(buf, offsets[0], rows, q):
        return 5                                  # non-finite: the slow path names the joints
    if counts[1] == 0:
        qd[:] = 0.0
    elif not _doubles(buf, offsets[1], rows, qd):
        return 5
    return OK


_U8 = nt.uint8[::1]
_I64 = nt.int64[::1]
_F64 = nt.float64[::1]
_SIGNATURE = (nt.Array(nt.uint8, 1, 'C', readonly=True), _U8, _I64, _I64, _F64, _F64, _I64)


class JointStateReader:
    """
    Read serialized JointStates whose joint names repeat those of a remembered message.

    ``remember(names, rows)`` is called with the names of a message that the slow path
    accepted and the message row of each model joint; ``read(data)`` then returns
    ``(stamp_ns, q, qd)`` for a message with the same names, or None for anything else.
    """

    _entry = None

    def __init__(self, n: int):
        self.n = n
        self._names = None
        self._blob = np.empty(0, np.uint8)
        self._ends = np.empty(0, np.int64)
        self._rows = np.empty(0, np.int64)
        self._stamp = np.zeros(2, np.int64)
        if JointStateReader._entry is None:
            JointStateReader._entry = read_joint_state.compile(_SIGNATURE)

    def remember(self, names, rows) -> None:
        """Expect messages with these names; rows[j] is the message row of model joint j."""
        names = list(names)
        if names == self._names:
            return
        encoded = [name.encode('utf-8') for name in names]
        self._blob = np.frombuffer(b''.join(encoded), np.uint8).copy()
        self._ends = np.cumsum([len(e) for e in encoded], dtype=np.int64)
        self._rows = np.ascontiguousarray(rows, dtype=np.int64)
        self._names = names

    def read(self, data: bytes):
        """Return (stamp_ns, q, qd) of a serialized JointState, or None (use the slow path)."""
        if self._names is None:
            return None
        q = np.empty(self.n)
        qd = np.empty(self.n)
        stamp = self._stamp
        if self._entry(np.frombuffer(data, np.uint8), self._blob, self._ends, self._rows, q,
                       qd, stamp) != OK:
            return None
        if stamp[1] >= 1_000_000_000:
            return None       # an invalid stamp: the slow path says what is wrong with it
        return int(stamp[0]) * 1_000_000_000 + int(stamp[1]), q, qd


# ------------------------------------------------------------------ trajectories
@numba.njit(cache=True, nogil=True)
def _read_sequence(buf, p, off, count_max):
    """Return (offset after, count, offset of the first double) of a float64[]; -1 if bad."""
    size = buf.size
    off += (-(off - p)) % 4
    if off + 4 > size:
        return -1, 0, 0
    count = _u32(buf, off)
    off += 4
    if count > 0:
        off += (-(off - p)) % 8
    if count > count_max or count > (size - off) // 8:
        return -1, 0, 0
    return off + 8 * count, count, off


@numba.njit(cache=True, nogil=True)
def _copy_doubles(buf, at, count, out):
    bits = out.view(np.uint64)
    for j in range(count):
        base = at + 8 * j
        value = np.uint64(0)
        for b in range(8):
            value |= np.uint64(buf[base + b]) << np.uint64(8 * b)
        bits[j] = value


@numba.njit(cache=True, nogil=True)
def read_joint_trajectory(buf):
    """
    Read a serialized trajectory_msgs/JointTrajectory (CDR little endian) in one pass.

    Returns (code, point, stamp, name_offsets, name_ends, positions, velocities,
    accelerations, times): code 0 if all is well, 1 for another encoding (the caller uses
    rclpy's deserializer), 2 for a truncated or malformed message, 3/4/5 if point ``point``
    has a positions/velocities/accelerations array whose length is not the number of names
    (velocities and accelerations may be empty: zeros). ``stamp`` is (sec, nanosec), names
    are byte ranges of ``buf`` (for codes 0 and 3-5), the arrays are (points, names), times
    are time_from_start in ns.
    """
    empty2 = np.zeros((0, 0))
    empty1 = np.zeros(0, np.int64)
    stamp = np.zeros(2, np.int64)
    size = buf.size
    if size < 24 or buf[0] != 0 or buf[1] != 1 or buf[2] != 0 or buf[3] != 0:
        return 1, 0, stamp, empty1, empty1, empty2, empty2, empty2, empty1
    p = 4
    sec = _u32(buf, p)
    if sec >= 2 ** 31:
        sec -= 2 ** 32
    stamp[0] = sec
    stamp[1] = _u32(buf, p + 4)
    length = _u32(buf, p + 8)
    off = p + 12 + length
    off += (-(off - p)) % 4
    if off + 4 > size:
        return 2, 0, stamp, empty1, empty1, empty2, empty2, empty2, empty1
    m = _u32(buf, off)
    off += 4
    if m > size // 5:
        return 2, 0, stamp, empty1, empty1, empty2, empty2, empty2, empty1
    starts = np.empty(m, np.int64)
    ends = np.empty(m, np.int64)
    for i in range(m):
        off += (-(off - p)) % 4
        if off + 4 > size:
            return 2, 0, stamp, empty1, empty1, empty2, empty2, empty2, empty1
        length = _u32(buf, off)
        off += 4
        if length < 1 or off + length > size or buf[off + length - 1] != 0:
            return 2, 0, stamp, empty1, empty1, empty2, empty2, empty2, empty1
        starts[i] = off
        ends[i] = off + length - 1
        off += length
    off += (-(off - p)) % 4
    if off + 4 > size:
        return 2, 0, stamp, empty1, empty1, empty2, empty2, empty2, empty1
    count = _u32(buf, off)
    off += 4
    if count > size // 24:          # every point takes at least 4 lengths and a Duration
        return 2, 0, stamp, empty1, empty1, empty2, empty2, empty2, empty1
    positions = np.zeros((count, m))
    velocities = np.zeros((count, m))
    accelerations = np.zeros((count, m))
    times = np.zeros(count, np.int64)
    for k in range(count):
        for a in range(4):          # positions, velocities, accelerations, effort
            off, c, at = _read_sequence(buf, p, off, size)
            if off < 0:
                return 2, k, stamp, empty1, empty1, empty2, empty2, empty2, empty1
            if a == 0:
                if c != m:
                    return 3, k, stamp, starts, ends, empty2, empty2, empty2, empty1
                _copy_doubles(buf, at, c, positions[k])
            elif a == 1 and c:
                if c != m:
                    return 4, k, stamp, starts, ends, empty2, empty2, empty2, empty1
                _copy_doubles(buf, at, c, velocities[k])
            elif a == 2 and c:
                if c != m:
                    return 5, k, stamp, starts, ends, empty2, empty2, empty2, empty1
                _copy_doubles(buf, at, c, accelerations[k])
        off += (-(off - p)) % 4
        if off + 8 > size:
            return 2, k, stamp, empty1, empty1, empty2, empty2, empty2, empty1
        dsec = _u32(buf, off)
        if dsec >= 2 ** 31:
            dsec -= 2 ** 32
        times[k] = dsec * 1_000_000_000 + _u32(buf, off + 4)
        off += 8
    return 0, 0, stamp, starts, ends, positions, velocities, accelerations, times


_TRAJECTORY_SIGNATURE = (nt.Array(nt.uint8, 1, 'C', readonly=True),)
_trajectory_entry = None


def read_trajectory(data: bytes):
    """
    Return the parsed serialized JointTrajectory, or None for another encoding.

    The result is (code, point, stamp_sec, stamp_nanosec, names, positions, velocities,
    accelerations, times) with the names decoded; see :func:`read_joint_trajectory`.
    """
    global _trajectory_entry
    if _trajectory_entry is None:
        _trajectory_entry = read_joint_trajectory.compile(_TRAJECTORY_SIGNATURE)
    buf = np.frombuffer(data, np.uint8)
    code, point, stamp, starts, ends, pos, vel, acc, times = _trajectory_entry(buf)
    if code == 1:
        return None
    names = [bytes(buf[s:e]).decode('utf-8', errors='replace') for s, e in zip(starts, ends)]
    return code, int(point), int(stamp[0]), int(stamp[1]), names, pos, vel, acc, times
