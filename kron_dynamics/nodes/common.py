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

"""Helpers shared by the nodes: model parameters, JointState parsing, array messages."""

import array
from dataclasses import dataclass, field
import math
import signal
import sys
import threading
import time

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor
import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.exceptions import ParameterUninitializedException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.serialization import deserialize_message
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, MultiArrayLayout

from ..errors import ModelError
from ..model import RobotModel
from . import realtime
from .wire import float64_multiarray_bytes, JointStateReader, layout_dims

MODEL_PARAMETERS = ('robot_description', 'urdf_file', 'joints', 'gravity')
THROTTLE_S = 1.0
STATE_QUEUE = 1000   # joint_states queue depth: 1 s at 1 kHz, nothing lost to a stall


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

    def warning(self, key: str, text: str) -> None:
        """Log a warning unless one with the same key was logged less than period ago."""
        now = time.monotonic()
        if now < self._next.get(key, 0.0):
            self._suppressed[key] = self._suppressed.get(key, 0) + 1
            return
        self._next[key] = now + self._period
        count = self._suppressed.pop(key, 0)
        self._logger.warning(text if not count else f'{text} ({count} similar suppressed)')


class InputError(ValueError):
    """A message or request that cannot be used; the text says why."""


def declare_model_parameters(node: Node) -> None:
    """Declare robot_description, urdf_file, joints and gravity on a node."""
    node.declare_parameter('robot_description', '', ParameterDescriptor(
        description='URDF text; if it and urdf_file are empty, /robot_description is used'))
    node.declare_parameter('urdf_file', '', ParameterDescriptor(description='URDF file path'))
    node.declare_parameter('joints', Parameter.Type.STRING_ARRAY, ParameterDescriptor(
        description='joint order of every output (default: the model order)'))
    node.declare_parameter('gravity', [0.0, 0.0, -9.81], ParameterDescriptor(
        description='gravity acceleration in the URDF root frame [m/s^2]'))


def parameter_value(node: Node, name: str, overrides: dict | None = None):
    """Return a parameter's value (None if uninitialised), or its pending override."""
    if overrides and name in overrides:
        return overrides[name]
    try:
        return node.get_parameter(name).value
    except ParameterUninitializedException:
        return None


def required_model(node: Node) -> RobotModel:
    """Return the model of a node that cannot wait for /robot_description; ModelError if unset."""
    model = model_from_parameters(node)
    if model is None:
        raise ModelError(f'{node.get_name()} needs robot_description or urdf_file')
    return model


def model_from_parameters(node: Node, overrides: dict | None = None,
                          urdf_text: str | None = None) -> RobotModel | None:
    """
    Build the model the node's parameters describe; None if it must wait for a topic.

    ``overrides`` are parameter values about to be set (to validate them before they are
    accepted); ``urdf_text`` is a description received on /robot_description.
    Raises ModelError with the reason.
    """
    description = parameter_value(node, 'robot_description', overrides) or ''
    path = parameter_value(node, 'urdf_file', overrides) or ''
    joints = parameter_value(node, 'joints', overrides)
    gravity = parameter_value(node, 'gravity', overrides)
    gravity = list(gravity) if gravity is not None else [0.0, 0.0, -9.81]
    if len(gravity) != 3 or not all(math.isfinite(g) for g in gravity):
        raise ModelError(f'parameter gravity must be 3 finite numbers, got {gravity}')
    joints = list(joints) if joints else None
    if description:
        return RobotModel.from_urdf_string(description, joints, gravity,
                                           source='parameter robot_description')
    if path:
        return RobotModel.from_urdf_file(path, joints, gravity)
    if urdf_text is not None:
        return RobotModel.from_urdf_string(urdf_text, joints, gravity,
                                           source='topic /robot_description')
    return None


@dataclass
class JointStateIndex:
    """Map JointState messages to arrays in a fixed joint order, by name."""

    joint_names: list
    _names: list = field(default=None, init=False, repr=False)   # the last names seen
    _rows: np.ndarray = field(default=None, init=False, repr=False)
    _reader: JointStateReader = field(default=None, init=False, repr=False)  # from_serialized

    def __post_init__(self):
        self.n = len(self.joint_names)

    def extract(self, names, position, velocity, what: str = 'joint_states',
                strict: bool = False):
        """
        Return (q, qd) in our order; raise InputError naming the problem.

        Extra joints are ignored (an error if ``strict``). An empty velocity array means zero
        velocity; otherwise it must be as long as the names. Values must be finite.
        """
        names = list(names)
        if len(position) != len(names):
            raise InputError(f'{what}: {len(names)} names but {len(position)} positions')
        if len(velocity) not in (0, len(names)):
            raise InputError(f'{what}: {len(names)} names but {len(velocity)} velocities')
        if strict or names != self._names:   # a stream repeats its names: checked once
            rows = self._rows_of(names, what, strict)
            if not strict:
                self._names, self._rows = names, rows
        else:
            rows = self._rows
        q = np.asarray(position, dtype=float)[rows]
        qd = np.asarray(velocity, dtype=float)[rows] if len(velocity) else np.zeros(self.n)
        # the built-in sum of the message's own arrays is the cheapest test (NaN or inf if an
        # entry is, of our joints or of ignored ones); the per-joint check only runs then
        if not (math.isfinite(sum(position) + sum(velocity)) or (all_finite(q)
                                                                 and all_finite(qd))):
            for label, values in (('position', q), ('velocity', qd)):
                bad = [self.joint_names[i] for i in np.nonzero(~np.isfinite(values))[0]]
                if bad:
                    raise InputError(f'{what}: non-finite {label} of joint(s) {bad}')
        return q, qd

    def _rows_of(self, names: list, what: str, strict: bool) -> np.ndarray:
        """Return the message rows of our joints; raise InputError for bad names."""
        index = {}
        for i, name in enumerate(names):
            if name in index:
                raise InputError(f"{what}: duplicate joint name '{name}'")
            index[name] = i
        missing = [j for j in self.joint_names if j not in index]
        if missing:
            raise InputError(f'{what}: missing joint(s) {missing}')
        if strict:
            known = set(self.joint_names)
            unknown = [name for name in names if name not in known]
            if unknown:
                raise InputError(f'{what}: unknown joint(s) {unknown}')
        return np.array([index[j] for j in self.joint_names], dtype=np.intp)

    def from_joint_state(self, msg, what: str = 'joint_states', strict: bool = False):
        """Return (q, qd) of a sensor_msgs/JointState."""
        return self.extract(msg.name, msg.position, msg.velocity, what, strict)

    def from_serialized(self, data: bytes, what: str = 'joint_states'):
        """
        Return (stamp_ns, q, qd) of a serialized JointState (a ``raw=True`` subscription).

        A compiled reader (wire.JointStateReader) takes the common case; anything else is
        deserialized by rclpy and checked by extract (InputError naming the problem), and
        names it accepts are taught to the reader for the next message.
        """
        if self._reader is None:
            self._reader = JointStateReader(self.n)
        state = self._reader.read(data)
        if state is not None:
            return state
        try:
            msg = deserialize_message(data, JointState)
        except Exception as exc:   # rclpy raises several types for malformed data
            raise InputError(f'{what}: cannot deserialize ({exc})') from None
        q, qd = self.from_joint_state(msg, what)
        self._reader.remember(self._names, self._rows)
        return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec, q, qd


class StampGuard:
    """
    Refuse messages whose header stamp is older than the last accepted one (0 = unset).

    After ``restart_s`` without an accepted message the stream counts as restarted and any
    stamp is accepted again (a publisher restarted with a rewound clock recovers by itself).
    """

    def __init__(self, restart_s: float = 1.0):
        self.last = 0
        self.last_accept = -math.inf
        self.restart_s = restart_s

    def check(self, header, what: str = 'joint_states') -> int:
        """Return the stamp in ns; raise InputError if it goes backwards."""
        return self.check_ns(header.stamp.sec * 1_000_000_000 + header.stamp.nanosec, what)

    def check_ns(self, stamp: int, what: str = 'joint_states') -> int:
        """Return the stamp (ns); raise InputError if it goes backwards."""
        if stamp and stamp < self.last and time.monotonic() - self.last_accept < self.restart_s:
            raise InputError(f'{what}: stamp {stamp * 1e-9:.6f} s is older than the previous '
                             f'{self.last * 1e-9:.6f} s')
        return stamp

    def accept(self, stamp: int) -> None:
        """Remember the stamp of an accepted message."""
        self.last_accept = time.monotonic()
        if stamp:
            self.last = stamp

    def reset(self) -> None:
        """Forget the last stamp (new model)."""
        self.last = 0


def point_arrays(point, n: int, what: str = 'reference'):
    """
    Return (q, qd, qdd) of a JointTrajectoryPoint in our joint order.

    Positions are required; empty velocities or accelerations mean zeros.
    """
    arrays = []
    for label, values, required in (('positions', point.positions, True),
                                    ('velocities', point.velocities, False),
                                    ('accelerations', point.accelerations, False)):
        if len(values) == 0 and not required:
            arrays.append(np.zeros(n))
            continue
        if len(values) != n:
            raise InputError(f'{what}: {len(values)} {label}, expected {n}')
        v = np.asarray(values, dtype=float)
        if not np.all(np.isfinite(v)):
            raise InputError(f'{what}: non-finite {label}')
        arrays.append(v)
    return tuple(arrays)


def trajectory_points(msg, joint_names: list, what: str = 'reference_trajectory'):
    """Yield (q, qd, qdd) in our joint order for every point of a JointTrajectory."""
    index = JointStateIndex(joint_names)
    names = list(msg.joint_names)
    if not msg.points:
        raise InputError(f'{what}: no points')
    result = []
    for k, point in enumerate(msg.points):
        where = f'{what} point {k}'
        q, _ = index.extract(names, point.positions, [], where)
        qd = (index.extract(names, point.velocities, [], where)[0] if len(point.velocities)
              else np.zeros(index.n))
        qdd = (index.extract(names, point.accelerations, [], where)[0]
               if len(point.accelerations) else np.zeros(index.n))
        result.append((q, qd, qdd))
    return result


_LAYOUTS = {}


def _layout(shape) -> MultiArrayLayout:
    """Return the (shared, never modified) layout of a 1-D or 2-D array shape."""
    layout = _LAYOUTS.get(shape)
    if layout is None:
        dims = [MultiArrayDimension(label=label, size=size, stride=stride)
                for label, size, stride in layout_dims(shape)]
        layout = _LAYOUTS[shape] = MultiArrayLayout(dim=dims)
    return layout


def array_msg(values: np.ndarray) -> Float64MultiArray:
    """Return a Float64MultiArray with a 1-D ('rows') or 2-D ('rows', 'cols') layout."""
    values = np.ascontiguousarray(values, dtype=float)
    msg = Float64MultiArray()
    msg.layout = _layout(values.shape)
    msg.data = array.array('d', values.tobytes())
    return msg


class ArrayPublisher:
    """
    Publish arrays as Float64MultiArray (array_msg's layout) in serialized form.

    The bytes are written directly (wire.float64_multiarray_bytes: a prefix per shape, then
    the doubles), which costs a fraction of building a message and having rclpy convert
    and serialize it; subscribers receive the same message.
    """

    def __init__(self, publisher):
        self.publisher = publisher

    def publish(self, values: np.ndarray) -> None:
        """Publish a 1-D or 2-D float array."""
        self.publisher.publish(float64_multiarray_bytes(values))


def warm_up(model: RobotModel) -> None:
    """Evaluate the model once so that compiled kernels are loaded before the first message."""
    z = np.zeros(model.n)
    model.inverse_dynamics(z, z, z)
    model.bias_torque(z, z)
    model.gravity_torque(z)
    model.mass_matrix(z)
    model.coriolis_star(z)


def all_finite(*arrays) -> bool:
    """Return True if every value of every array is finite."""
    for a in arrays:
        # the sum is NaN or inf if an entry is (and, rarely, when finite entries overflow)
        if not math.isfinite(a.sum()) and not np.isfinite(a).all():
            return False
    return True


def per_joint(values, n: int, name: str) -> np.ndarray:
    """Return a per-joint parameter as an n-vector (a single value is broadcast)."""
    v = np.asarray(list(values), dtype=float)
    if v.size == 1:
        v = np.full(n, float(v[0]))
    if v.shape != (n,) or not np.all(np.isfinite(v)):
        raise ModelError(f'parameter {name} must be 1 or {n} finite numbers, got {list(values)}')
    return v


def make_executor(context=None):
    """Return rclpy's EventsExecutor (several times less overhead per message) if available."""
    try:
        from rclpy.experimental import EventsExecutor
        return EventsExecutor(context=context)
    except ImportError:  # older rclpy
        return SingleThreadedExecutor(context=context)


def run_node(node_class, args=None) -> int:
    """
    Create and spin a node until SIGINT or SIGTERM; exit code 1 on a model/parameter error.

    The signals only set a flag that the spin loop checks, so they never interrupt a
    callback (or compiled code) half way.
    """
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    node = None
    executor = make_executor()
    try:
        node = node_class()
        for line in realtime.configure_node(node):
            log = node.get_logger()
            (log.warning if line.startswith('could not') else log.info)(line)
        executor.add_node(node)
        while not stop.is_set() and rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
    except ModelError as exc:
        print(f'{node_class.__name__}: {exc}', file=sys.stderr)
        return 1
    except ExternalShutdownException:
        pass
    finally:
        executor.shutdown()
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0
