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

"""Arrays out: std_msgs/Float64MultiArray messages and serialized publishing."""

import array
import math

import numpy as np
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, MultiArrayLayout

from .wire import float64_multiarray_bytes, layout_dims


def all_finite(*arrays) -> bool:
    """Return True if every value of every array is finite."""
    for a in arrays:
        # the sum is NaN or inf if an entry is (and, rarely, when finite entries overflow)
        if not math.isfinite(a.sum()) and not np.isfinite(a).all():
            return False
    return True


_LAYOUTS = {}


def _layout(shape, labels=None) -> MultiArrayLayout:
    """Return the (shared, never modified) layout of a 1-D or 2-D array shape."""
    layout = _LAYOUTS.get((shape, labels))
    if layout is None:
        dims = [MultiArrayDimension(label=label, size=size, stride=stride)
                for label, size, stride in layout_dims(shape, labels)]
        layout = _LAYOUTS[shape, labels] = MultiArrayLayout(dim=dims)
    return layout


def array_msg(values: np.ndarray, labels=None) -> Float64MultiArray:
    """
    Return a Float64MultiArray with a 1-D ('rows') or 2-D ('rows', 'cols') layout.

    ``labels`` (a tuple, one per dimension) replaces 'rows' and 'cols' (wire.layout_dims).
    """
    values = np.ascontiguousarray(values, dtype=float)
    msg = Float64MultiArray()
    msg.layout = _layout(values.shape, labels)
    msg.data = array.array('d', values.tobytes())
    return msg


class ArrayPublisher:
    """
    Publish arrays as Float64MultiArray (array_msg's layout) in serialized form.

    The bytes are written directly (wire.float64_multiarray_bytes: a prefix per shape, then
    the doubles), which costs a fraction of building a message and having rclpy convert
    and serialize it; subscribers receive the same message.
    """

    def __init__(self, publisher, log=None):
        self.publisher = publisher
        self.topic = publisher.topic_name   # read now: a destroyed publisher cannot say it
        self.log = log              # a ThrottledLogger: publishing failures are logged
        self.failures = 0

    def publish(self, values: np.ndarray, labels=None) -> bool:
        """
        Publish a 1-D or 2-D float array; False if the middleware refused it.

        ``labels``: as for :func:`array_msg`.

        DDS refuses a sample when a reliable reader has not taken the earlier ones for
        longer than the writer may block (a subscriber far slower than the stream): the
        sample is dropped and counted, and the node goes on.
        """
        try:
            self.publisher.publish(float64_multiarray_bytes(values, labels))
        except RuntimeError as exc:     # rclpy's RCLError: "cannot publish data"
            self.failures += 1
            if self.log is not None:
                self.log.warning(f'publish {self.topic}',
                                 f'could not publish on {self.topic} ({exc}); dropped')
            return False
        return True
