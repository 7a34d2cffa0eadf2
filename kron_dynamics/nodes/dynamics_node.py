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
dynamics_node: joint states in; gravity, bias torque, mass matrix (and C*) out.

Also publishes the feedforward torque of references, serves M, the full dynamics and the
kinematics of a link, and takes an optional external wrench (F/T sensor) that enters the
bias and feedforward torques as -J^T F. Every accepted joint state yields all of its outputs
(bias torque first), or none.
Inputs and outputs are in the model's joint order: its independent joints. Mimic joints
(URDF ``<mimic>``) are holonomic constraints, not coordinates: their entries in
``joint_states`` (joint_state_broadcaster publishes them too) are ignored, not checked, and
the outputs are those of the constrained system (generalized forces of the independent
joints, M_u = B^T M B, ...).

A floating or planar base (parameter ``root_joint``, or the URDF's own root joint) is read
from nav_msgs/Odometry on ``~/odometry``: pose in the header frame (the world), twist in the
base frame (child_frame_id), as REP 105 defines them. Each joint state is paired with the
newest odometry message if their stamps (their arrival times when a stamp is 0) are at most
``odometry_timeout`` apart; otherwise it gets no output. Outputs then have nv entries (base
first, Pinocchio's order) and carry the coordinate names in their dimension labels.
"""

from collections import deque
import math
import re
import sys
import time

from geometry_msgs.msg import WrenchStamped
from kron_dynamics_interfaces.srv import (GetDynamics, GetKinematics, GetLinearization,
                                          GetMassMatrix)
from nav_msgs.msg import Odometry
import numpy as np
from rclpy.qos import DurabilityPolicy, QoSProfile
from rcl_interfaces.msg import SetParametersResult
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..checks import Contact
from ..errors import ConfigurationError, ModelError
from ..floating_model import QUATERNION_TOLERANCE
from ..model.rotations import matrix_to_quaternion
from .executor import DeferringNode, run_node, warm_up
from .joint_states import (InputError, JointStateIndex, point_arrays, stamp_ns, StampClock,
                           StampGuard, STATE_QUEUE, trajectory_from_serialized)
from .messages import array_msg, ArrayPublisher
from .parameters import (declare, declare_model_parameters, model_from_parameters,
                         MODEL_PARAMETERS, parameter_value, positive_limit)
from .throttled_logger import ThrottledLogger
from .wire import read_trajectory, stamped_effort_bytes, stamped_effort_prefix
from . import realtime

# request queue of each service: requests that arrive while the node is busy or stopped wait
# here (rclpy's default, 10, silently dropped the rest, and a client without a timeout hung)
SERVICE_QOS = QoSProfile(depth=1000)
# feedforward of trajectories: TRAJECTORY_CHUNK points per TRAJECTORY_PERIOD_S (20,000 a
# second, far beyond any control rate, and a pace a Python subscriber keeps up with), joint
# states and service calls go between the chunks
TRAJECTORY_CHUNK = 20
TRAJECTORY_PERIOD_S = 0.001


class DynamicsNode(DeferringNode):
    """Publish the dynamics of every accepted joint state; serve M and the full dynamics."""

    def __init__(self, **kwargs):
        super().__init__('dynamics_node', **kwargs)
        realtime.declare_parameters(self)   # applied by run_node
        declare_model_parameters(self)
        declare(self, 'publish_mass_matrix', True, 'publish ~/mass_matrix for every state')
        declare(self, 'publish_coriolis_star', False, 'publish ~/coriolis_star for every state')
        self._publish_mass_matrix = bool(self.get_parameter('publish_mass_matrix').value)
        self._publish_coriolis_star = bool(self.get_parameter('publish_coriolis_star').value)
        declare(self, 'external_wrench_timeout', 0.0,
                'seconds after its last message an external wrench stops being applied '
                '(0: applied until the next one replaces it)')
        self._wrench_timeout = _wrench_timeout(
            self.get_parameter('external_wrench_timeout').value)
        declare(self, 'odometry_timeout', 0.1,
                'a joint state gets outputs only if the newest ~/odometry is at most this far '
                'from it [s] (stamps; arrival times if a stamp is 0); floating and planar '
                'bases only')
        self._odometry_timeout = _seconds('odometry_timeout',
                                          self.get_parameter('odometry_timeout').value)
        declare(self, 'state_policy', 'newest',
                "when joint states arrive faster than they are answered: 'newest' answers the "
                'newest waiting state and drops the older ones (counted, logged), as a '
                "controller wants; 'all' answers every state, late by the backlog (states "
                f'beyond the queue of {STATE_QUEUE} are lost)')
        self._newest = _state_policy(self.get_parameter('state_policy').value)
        declare(self, 'publish_stamped', True,
                'also publish ~/bias_torque_stamped and ~/gravity_torque_stamped '
                '(sensor_msgs/JointState: effort = the torque, named, stamped with the input '
                "state's stamp, or its arrival time if that is 0)")
        self._publish_stamped = bool(self.get_parameter('publish_stamped').value)
        for name, default, what in LIMITS:
            declare(self, name, default, what)
        self._limits = {name: positive_limit(name, self.get_parameter(name).value)
                        for name, _, _ in LIMITS}
        self._odometry = None          # (time [ns], message) of the newest valid odometry
        self._wrench = None            # (link, F (6,), monotonic receive time), or None
        self._active = None            # (model, index), replaced as a whole
        self._labels = None
        self._stamp_prefix = None      # stamped_effort_prefix of the active model
        self._odometry_unused_said = False
        self._topic_urdf = None        # the last valid URDF received on /robot_description
        self._stamps = StampGuard()
        self._odometry_stamps = StampGuard()
        self._stamp_clock = StampClock(self.get_clock())
        self._trajectories = deque()   # [model, Trajectory, next point] waiting for output
        self._log = ThrottledLogger(self.get_logger())
        self._overload = Overload(self._log, self._newest)
        self.counts = {'accepted': 0, 'rejected': 0}
        read_trajectory(b'')           # compile (or load) the trajectory reader up front
        model = model_from_parameters(self, moving_base=True)   # errors: the caller exits
        # activated (its kernels warmed up) before any subscription exists: a publisher that
        # waits for this node to subscribe does not send into a node that is not ready
        self._trajectory_timer = None
        if model is not None:
            self._activate(model)
        else:
            self.get_logger().info('waiting for the URDF on /robot_description')
        # always subscribed: a parameter change to empty robot_description and urdf_file
        # switches to the topic's URDF
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.create_subscription(String, '/robot_description', self._on_description, latched)

        # the torques of every state: as deep as the joint_states queue, so that a backlog
        # answered at once (state_policy all) is kept for a subscriber that lags behind it
        # (a writer's KEEP_LAST history of 10 let a reliable subscriber under load miss
        # answers in the middle of one: overwritten before they were acknowledged)
        self._pub_gravity = ArrayPublisher(
            self.create_publisher(Float64MultiArray, '~/gravity_torque', STATE_QUEUE),
            self._log)
        self._pub_bias = ArrayPublisher(
            self.create_publisher(Float64MultiArray, '~/bias_torque', STATE_QUEUE), self._log)
        self._pub_mass = ArrayPublisher(
            self.create_publisher(Float64MultiArray, '~/mass_matrix', 10), self._log)
        self._pub_cstar = ArrayPublisher(
            self.create_publisher(Float64MultiArray, '~/coriolis_star', 10), self._log)
        self._pub_ff = ArrayPublisher(
            self.create_publisher(Float64MultiArray, '~/feedforward_torque', 10), self._log)
        # serialized: JointStateIndex.from_serialized, rclpy's deserializer only as fallback
        self._pub_bias_stamped = self.create_publisher(JointState, '~/bias_torque_stamped',
                                                       STATE_QUEUE)
        self._pub_gravity_stamped = self.create_publisher(JointState,
                                                          '~/gravity_torque_stamped',
                                                          STATE_QUEUE)
        self._state_sub = self.create_subscription(JointState, 'joint_states',
                                                   self._on_joint_state, STATE_QUEUE, raw=True)
        self.create_subscription(JointTrajectoryPoint, '~/reference', self._on_reference, 10)
        # serialized: read in one compiled pass (trajectory_from_serialized)
        self.create_subscription(JointTrajectory, '~/reference_trajectory',
                                 self._on_reference_trajectory, 10, raw=True)
        self._trajectory_timer = self.create_timer(TRAJECTORY_PERIOD_S,
                                                   self._next_trajectory_chunk)
        self._trajectory_timer.cancel()
        self.create_service(GetMassMatrix, '~/get_mass_matrix', self._get_mass_matrix,
                            qos_profile=SERVICE_QOS)
        self.create_service(GetDynamics, '~/get_dynamics', self._get_dynamics,
                            qos_profile=SERVICE_QOS)
        self.create_service(GetKinematics, '~/get_kinematics', self._get_kinematics,
                            qos_profile=SERVICE_QOS)
        self.create_service(GetLinearization, '~/get_linearization', self._get_linearization,
                            qos_profile=SERVICE_QOS)
        self.create_subscription(WrenchStamped, '~/external_wrench', self._on_external_wrench,
                                 10)
        self.create_subscription(Odometry, '~/odometry', self._on_odometry, 10)
        self.add_on_set_parameters_callback(self._on_set_parameters)

    # --------------------------------------------------------------- model
    def _activate(self, model) -> None:
        """
        Make a model the active one, and forget everything tied to the one before.

        The callbacks run one at a time (one executor thread), so nothing computed for the
        old model is published after this returns: its queued trajectory points, its
        external wrench, the odometry received for it (checked against its base, or not at
        all on a fixed base) and the stamps both guards last accepted are dropped here.
        """
        warm_up(model)
        index = JointStateIndex(model.joint_names, (*model.mimic_joints, *model.locked_joints))
        index.prepare_serialized()
        dropped = self._forget_model_state()
        # mimic and locked joints are not coordinates: their joint_states entries
        # (joint_state_broadcaster publishes every joint) are ignored, their positions follow
        # from the constraint or are the locked ones
        self._active = (model, index)
        self._labels = _labels(model)       # None for a fixed base: 'rows', 'cols'
        self._stamp_prefix = stamped_effort_prefix(model.velocity_names)
        locked = ', '.join(f'{j}={v:g}' for j, v in model.locked_joints.items())
        self.get_logger().info(f"model '{model.name}' with joints {model.joint_names}"
                               + (f' ({locked} locked)' if locked else '')
                               + (f'; dropped what belonged to the previous model: '
                                  f'{", ".join(dropped)}' if dropped else ''))
        if self._labels:
            self.get_logger().info(f'{model.base} base on link {model.base_link!r}: its state '
                                   f'from {self.resolve_topic_name("~/odometry")}; outputs '
                                   f'in the coordinates {model.velocity_names}')
        for mimic in model.mimic_joints.values():
            self.get_logger().info(
                f"mimic joint '{mimic.name}' = {mimic.multiplier:g} * '{mimic.primary}' + "
                f'{mimic.offset:g}: not an input (ignored in joint_states) nor an output')

    def _forget_model_state(self) -> list:
        """Drop the state tied to the active model; return what was dropped, in words."""
        dropped = []
        points = sum(len(t) - k for _, t, k in self._trajectories)
        if points:
            dropped.append(f'{points} queued reference_trajectory points')
        self._trajectories.clear()
        if self._trajectory_timer is not None:
            self._trajectory_timer.cancel()
        if self._wrench is not None:
            dropped.append(f"the external wrench on '{self._wrench[0]}'")
        self._wrench = None
        if self._odometry is not None:
            dropped.append('the odometry')
        self._odometry = None
        self._stamps.reset()
        self._odometry_stamps.reset()
        self._odometry_unused_said = False
        return dropped

    def _on_description(self, msg: String) -> None:
        if parameter_value(self, 'robot_description') or parameter_value(self, 'urdf_file'):
            self._topic_urdf = msg.data   # checked if the parameters ever switch to it
            self.get_logger().info('URDF received on /robot_description; not used while the '
                                   'parameter robot_description or urdf_file is set')
            return
        try:
            model = model_from_parameters(self, urdf_text=msg.data, moving_base=True)
        except (ModelError, ConfigurationError) as exc:
            joints = parameter_value(self, 'joints')
            hint = f' (parameter joints is {list(joints)})' if joints else ''
            self.get_logger().error(
                f'rejected /robot_description, keeping the old model: {exc}{hint}')
            return
        self._topic_urdf = msg.data
        self._activate(model)

    def _on_set_parameters(self, params) -> SetParametersResult:
        changes = {p.name: p.value for p in params}
        wrench_timeout = self._wrench_timeout
        odometry_timeout = self._odometry_timeout
        newest = self._newest
        limits = dict(self._limits)
        try:                  # checked before anything is applied
            if 'external_wrench_timeout' in changes:
                wrench_timeout = _wrench_timeout(changes['external_wrench_timeout'])
            if 'odometry_timeout' in changes:
                odometry_timeout = _seconds('odometry_timeout', changes['odometry_timeout'])
            if 'state_policy' in changes:
                newest = _state_policy(changes['state_policy'])
            for name in limits:
                if name in changes:
                    limits[name] = positive_limit(name, changes[name])
        except ConfigurationError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        if any(name in changes for name in MODEL_PARAMETERS):
            # validated against the URDF they would use (the topic's too) before acceptance
            try:
                model = model_from_parameters(self, overrides=changes,
                                              urdf_text=self._topic_urdf, moving_base=True)
            except (ModelError, ConfigurationError) as exc:
                return SetParametersResult(successful=False, reason=str(exc))
            if model is None and self._active is not None:
                return SetParametersResult(successful=False, reason=(
                    'robot_description and urdf_file empty, and no valid URDF has been '
                    'received on /robot_description: keeping the current model'))
            if model is not None:
                self._activate(model)
            # else: no model yet; the values apply to the first URDF from the topic
        if 'publish_mass_matrix' in changes:
            self._publish_mass_matrix = bool(changes['publish_mass_matrix'])
        if 'publish_coriolis_star' in changes:
            self._publish_coriolis_star = bool(changes['publish_coriolis_star'])
        if 'publish_stamped' in changes:
            self._publish_stamped = bool(changes['publish_stamped'])
        self._wrench_timeout = wrench_timeout
        self._odometry_timeout = odometry_timeout
        self._newest = self._overload.newest = newest
        self._limits = limits
        return SetParametersResult(successful=True)

    # --------------------------------------------------------------- topics
    def _reject(self, reason: str) -> None:
        self.counts['rejected'] += 1
        # throttled per kind of problem (the text without its numbers): a burst of one kind
        # does not hide the first report of another
        self._log.warning(re.sub(r'[\d.]+', '#', reason[:80]), f'rejected: {reason}')

    def _on_joint_state(self, data: bytes) -> None:
        """
        Answer a joint state; with the states waiting behind it, as state_policy says.

        The states already waiting in the subscription's queue are taken at once (a take
        that finds none costs under a microsecond): with 'newest' only the last of them is
        answered and the others are dropped, with 'all' each is answered in order; either
        way the backlog is counted and reported (Overload).
        """
        waiting = self._take_waiting()
        if not waiting:
            self._answer_state(data)
            return
        self._overload.backlog(len(waiting) + 1)
        if self._newest:
            self._answer_state(waiting[-1])
            return
        self._answer_state(data)
        for data in waiting:
            self._answer_state(data)

    def _take_waiting(self) -> list:
        """Return the serialized joint states waiting in the subscription's queue."""
        sub = self._state_sub
        waiting = []
        with sub.handle:
            while len(waiting) < STATE_QUEUE:
                taken = sub.handle.take_message(sub.msg_type, True)
                if taken is None:
                    break
                waiting.append(taken[0])
        return waiting

    def _answer_state(self, data: bytes) -> None:
        active = self._active
        if active is None:
            self._reject('no robot model yet')
            return
        model, index = active
        try:
            stamp, q, qd = index.from_serialized(data)
            now = self._stamp_clock.now_ns()
            if self._labels:
                q, qd = self._with_base(model, q, qd, stamp, now)
            stamp = self._stamps.check_ns(stamp, now)
            outputs = self._state_outputs(model, q, qd)
        except (InputError, ValueError) as exc:
            self._reject(str(exc))
            return
        self._stamps.accept(stamp)
        self.counts['accepted'] += 1
        for publisher, values, labels in outputs:
            publisher.publish(values, labels)
        if self._publish_stamped:
            prefix = self._stamp_prefix
            stamp = stamp or now
            self._pub_bias_stamped.publish(stamped_effort_bytes(prefix, stamp, outputs[0][1]))
            self._pub_gravity_stamped.publish(stamped_effort_bytes(prefix, stamp,
                                                                   outputs[1][1]))

    def _state_outputs(self, model, q, qd) -> list:
        """
        Return [(publisher, values)] of one joint state, bias torque first; all are finite.

        Everything is computed before anything is published, so that a state whose mass
        matrix (say) overflows gets no output at all instead of a bias torque without it
        (the compiled G and M cost a few microseconds more before the bias torque goes out).
        """
        bias = model.bias_torque(q, qd)
        if self._wrench is not None:
            bias = self._minus_wrench_torque(model, q, bias)
        labels = self._labels or {}
        outputs = [(self._pub_bias, bias, 'bias torque'),
                   (self._pub_gravity, model.gravity_torque(q), 'gravity torque')]
        if self._publish_mass_matrix:
            outputs.append((self._pub_mass, model.mass_matrix(q), 'mass matrix'))
        if self._publish_coriolis_star:
            outputs.append((self._pub_cstar, model.coriolis_star(q), 'C*'))
        bound = self._limits['max_output']
        for _, values, what in outputs:
            fault = _out_of_bounds(values, bound)
            if fault:
                raise InputError(f'joint_states: {what} {fault} at this state; no output for it')
        return [(publisher, values, labels.get(what)) for publisher, values, what in outputs]

    def _publish_feedforward(self, model, q, qd, qdd) -> None:
        self._fixed_base_only(model, 'reference')
        tau = model.inverse_dynamics(q, qd, qdd)
        if self._wrench is not None:
            tau = self._minus_wrench_torque(model, q, tau)
        fault = _out_of_bounds(tau, self._limits['max_output'])
        if fault:
            raise InputError(f'reference: feedforward torque {fault}; not published')
        self._pub_ff.publish(tau)

    def _fixed_base_only(self, model, what: str) -> None:
        if self._labels:
            raise InputError(f'{what}: the feedforward of a {model.base} base needs the base '
                             'motion too, which a joint trajectory has not; not published')

    def _on_reference(self, msg: JointTrajectoryPoint) -> None:
        if self._active is None:
            self._reject('no robot model yet')
            return
        model, _ = self._active
        try:
            self._publish_feedforward(model, *point_arrays(msg, model.n))
        except (InputError, ValueError) as exc:
            self._reject(str(exc))

    def _on_reference_trajectory(self, data: bytes) -> None:
        """Queue the feedforward of every point; it goes out in chunks between joint states."""
        if self._active is None:
            self._reject('no robot model yet')
            return
        model, _ = self._active
        try:
            self._fixed_base_only(model, 'reference_trajectory')
            trajectory = trajectory_from_serialized(data, model.joint_names)
        except (InputError, ValueError) as exc:
            self._reject(str(exc))
            return
        self._trajectories.append([model, trajectory, 0])
        if self._trajectory_timer.is_canceled():
            self._trajectory_timer.reset()

    def _next_trajectory_chunk(self) -> None:
        """Publish the feedforward of the next TRAJECTORY_CHUNK points of queued trajectories."""
        if not self._trajectories:
            self._trajectory_timer.cancel()
            return
        entry = self._trajectories[0]
        model, trajectory, start = entry
        end = min(start + TRAJECTORY_CHUNK, len(trajectory))
        for k in range(start, end):     # single calls: far cheaper than a batch this small
            tau = model.inverse_dynamics(trajectory.q[k], trajectory.qd[k], trajectory.qdd[k])
            if self._wrench is not None:
                tau = self._minus_wrench_torque(model, trajectory.q[k], tau)
            fault = _out_of_bounds(tau, self._limits['max_output'])
            if fault:
                self._reject(f'reference_trajectory point {k}: feedforward torque {fault}; '
                             'not published')
            else:
                self._pub_ff.publish(tau)
        entry[2] = end
        if end == len(trajectory):
            self._trajectories.popleft()

    # --------------------------------------------------------------- moving base
    def _on_odometry(self, msg: Odometry) -> None:
        """
        Keep the newest valid odometry (its time: the stamp, or the arrival if 0).

        Checked as joint states are (stamps neither going back nor ahead of the clock) and
        as a service's request.base is (base_fault); on a fixed base it is not used, and
        not kept: a later moving-base model starts without odometry.
        """
        active = self._active
        if active is None or not self._labels:
            if not self._odometry_unused_said:      # once per model: it may stream for ever
                self._odometry_unused_said = True
                self.get_logger().info('odometry: the active model has a fixed base (or there '
                                       'is none yet); ~/odometry is not used (said once per '
                                       'model)')
            return
        values = _odometry_values(msg)
        try:
            stamp = self._odometry_stamps.check_ns(stamp_ns(msg.header.stamp, 'odometry'),
                                                   self._stamp_clock.now_ns(), 'odometry')
        except InputError as exc:      # throttled per kind: going back, ahead, invalid
            self._log.error(f"odometry stamp {re.sub(r'[0-9.]+', '#', str(exc))[:60]}",
                            f'{exc}; message ignored')
            return
        fault = base_fault(values, msg.child_frame_id, active[0].base_link, self._limits)
        if fault:
            kind = fault.split(' ', 1)[0]
            self._log.error(f'odometry {kind}', f'odometry: {fault}; message ignored')
            return
        self._odometry_stamps.accept(stamp)
        self._odometry = (stamp, self._stamp_clock.now_ns(), values, msg.header.frame_id)

    def _with_base(self, model, q, qd, stamp: int, now: int):
        """Return (q, v) of a floating or planar model: the newest odometry and the joints."""
        odometry = self._odometry
        if odometry is None:
            raise InputError(f'joint_states: no odometry yet on '
                             f'{self.resolve_topic_name("~/odometry")} (the {model.base} '
                             'base state); no output for it')
        odom_stamp, odom_arrival, values, _ = odometry
        # both stamped: their stamps; otherwise the arrival times (one clock, the node's)
        gap = abs(stamp - odom_stamp if stamp and odom_stamp else now - odom_arrival) * 1e-9
        if gap > self._odometry_timeout:
            raise InputError(f'joint_states: the newest odometry is {gap:.3f} s from this '
                             f'state (odometry_timeout {self._odometry_timeout:g} s); no '
                             'output for it')
        qb, vb = model.base_state(*_base_parts(values))
        return np.concatenate([qb, q]), np.concatenate([vb, qd])

    def _request_base(self, model, request, q, qd):
        """
        Return (q, v): a service request's joints with its base state (request.base).

        request.base is checked as ~/odometry is (base_fault). On a fixed base it must be
        left as it is by default, and so must request.base_acceleration where there is one.
        """
        values = _odometry_values(request.base)
        if not self._labels:
            if (request.base.child_frame_id or request.base.header.frame_id
                    or not np.array_equal(values, _DEFAULT_BASE)):
                raise InputError(f"request.base: model '{model.name}' has a fixed base; leave "
                                 'base as it is by default')
            if len(getattr(request, 'base_acceleration', ())):
                raise InputError(f"request.base_acceleration: model '{model.name}' has a "
                                 f'fixed base; leave it empty (got '
                                 f'{len(request.base_acceleration)} numbers)')
            return q, qd
        fault = base_fault(values, request.base.child_frame_id, model.base_link, self._limits)
        if fault:
            raise InputError(f'request.base: {fault}')
        try:
            qb, vb = model.base_state(*_base_parts(values))
        except ValueError as exc:
            raise InputError(f'request.base: {exc}') from None
        return np.concatenate([qb, q]), np.concatenate([vb, qd])

    # --------------------------------------------------------------- external wrench
    def _on_external_wrench(self, msg: WrenchStamped) -> None:
        """Keep the latest valid wrench: its link must be a link of the model."""
        link = msg.header.frame_id
        f, t = msg.wrench.force, msg.wrench.torque
        F = np.array([f.x, f.y, f.z, t.x, t.y, t.z])
        active = self._active
        if not link:
            kind, error = 'empty', ('external_wrench: header.frame_id is empty; it must name '
                                    "the link the wrench acts on (the wrench is in that "
                                    "link's frame)")
        elif active is None:
            kind, error = 'model', 'external_wrench: no robot model yet'
        elif link not in active[0].link_names:
            kind, error = 'link', (f"external_wrench: frame '{link}' is not a link of model "
                                   f"'{active[0].name}'; links are "
                                   f'{list(active[0].link_names)}')
        elif not np.all(np.isfinite(F)):
            kind, error = 'value', (f"external_wrench: wrench on '{link}' is not finite: "
                                    f'{F.tolist()}')
        elif _norm(F[:3]) > self._limits['max_wrench_force']:
            kind, error = 'force', (f"external_wrench: force on '{link}' is "
                                    f'{_norm(F[:3]):.3g} N, beyond max_wrench_force '
                                    f"{self._limits['max_wrench_force']:g} N")
        elif _norm(F[3:]) > self._limits['max_wrench_torque']:
            kind, error = 'torque', (f"external_wrench: torque on '{link}' is "
                                     f'{_norm(F[3:]):.3g} N m, beyond '
                                     f"max_wrench_torque {self._limits['max_wrench_torque']:g} "
                                     'N m')
        else:
            self._wrench = (link, F, time.monotonic())
            return
        # throttled per kind of problem (a bounded set of keys), so one does not hide another
        self._log.error(f'external_wrench {kind}', f'{error}; message ignored')

    def _minus_wrench_torque(self, model, q, tau):
        """
        Return tau - J^T F for the current external wrench (none if it timed out).

        F (force, torque) is expressed in its link's frame and acts at the link origin, so
        J is the link's 'local' Jacobian (J_local^T F_local = J^T F in any common frame).
        """
        link, F, received = self._wrench
        if self._wrench_timeout > 0.0 and time.monotonic() - received > self._wrench_timeout:
            self._wrench = None
            self._log.warning('external_wrench_timeout',
                              f"external_wrench: none for {self._wrench_timeout} s; the wrench "
                              f"on '{link}' is no longer applied")
            return tau
        try:
            return tau - model.jacobian(q, link, None, 'local').T @ F
        except ModelError:     # the model changed and has no such link
            self._wrench = None
            self._log.error('external_wrench', f"external_wrench: link '{link}' is not in "
                                               f"model '{model.name}'; wrench dropped")
            return tau

    # --------------------------------------------------------------- services
    def _answer(self, request, response, compute, what: str):
        """
        Fill a service response from compute(model, index, request) -> {field: array}.

        success = false with the reason for a bad request or a non-finite result.
        """
        try:
            model, index = self._require_model()
            fields = compute(model, index, request)
            bound = self._limits['max_output']
            for values in fields.values():
                fault = _out_of_bounds(values, bound)
                if fault:
                    raise InputError(f'{what} {fault} at this state')
        except (InputError, ValueError) as exc:
            response.success, response.message = False, str(exc)
            return response
        response.success, response.message = True, ''
        if hasattr(response, 'joint_names'):        # GetLinearization names its own rows
            response.joint_names = list(model.velocity_names if self._labels else
                                        model.joint_names)
        for name, values in fields.items():
            if not name.startswith('_'):       # '_name': checked, not a response field
                setattr(response, name, array_msg(values))
        return response

    def _get_mass_matrix(self, request, response):
        def compute(model, index, request):
            q, qd = index.from_joint_state(request.state, 'request.state', strict=True)
            q, _ = self._request_base(model, request, q, qd)
            return {'mass_matrix': model.mass_matrix(q)}
        return self._answer(request, response, compute, 'mass matrix')

    def _get_dynamics(self, request, response):
        def compute(model, index, request):
            state = request.state
            q, qd = index.from_joint_state(state, 'request.state', strict=True)
            if len(request.acceleration):
                qdd, _ = index.extract(state.name, request.acceleration, [],
                                       'request.acceleration', label='acceleration')
            else:
                qdd = np.zeros(model.n)
            q, qd = self._request_base(model, request, q, qd)
            if self._labels:
                base = np.zeros(model.nv - model.n)
                if len(request.base_acceleration):
                    if len(request.base_acceleration) != len(base):
                        raise InputError(f'request.base_acceleration must be empty or '
                                         f'{len(base)} numbers '
                                         f'({model.velocity_names[:len(base)]}), got '
                                         f'{len(request.base_acceleration)}')
                    base = np.array(request.base_acceleration, dtype=float)
                qdd = np.concatenate([base, qdd])
            return {'mass_matrix': model.mass_matrix(q),
                    'coriolis_star': model.coriolis_star(q),
                    'gravity_torque': model.gravity_torque(q),
                    'coriolis_vector': model.coriolis_vector(q, qd),
                    'torque': model.inverse_dynamics(q, qd, qdd)}
        return self._answer(request, response, compute, 'dynamics')

    def _get_kinematics(self, request, response):
        def compute(model, index, request):
            state = request.state
            q, qd = index.from_joint_state(state, 'request.state', strict=True)
            if len(request.point) not in (0, 3):
                raise InputError(f'request.point must be empty or 3 numbers, got '
                                 f'{len(request.point)}')
            point = list(request.point) if len(request.point) else None
            frame = request.frame or 'local_world_aligned'
            q, qd = self._request_base(model, request, q, qd)
            try:
                T = model.link_pose(q, request.link)
                jacobian = model.jacobian(q, request.link, point, frame)
                velocity_term = model.jacobian_derivative_times_velocity(
                    q, qd, request.link, point, frame)
            except ModelError as exc:
                raise InputError(f'request.link: {exc}') from None
            except ValueError as exc:
                raise InputError(f'request: {exc}') from None
            x = T[:3, 3] if point is None else T[:3, 3] + T[:3, :3] @ np.asarray(point)
            response.pose.header.stamp = state.header.stamp
            response.pose.header.frame_id = (request.base.header.frame_id or 'world'
                                             if self._labels else model.root_link)
            position, orientation = response.pose.pose.position, response.pose.pose.orientation
            position.x, position.y, position.z = (float(v) for v in x)
            (orientation.x, orientation.y, orientation.z,
             orientation.w) = (float(v) for v in matrix_to_quaternion(T[:3, :3]))
            return {'jacobian': jacobian, 'jacobian_dot_qd': velocity_term, '_pose': T}
        return self._answer(request, response, compute, 'kinematics')

    def _get_linearization(self, request, response):
        def compute(model, index, request):
            state = request.state
            q, qd = index.from_joint_state(state, 'request.state', strict=True)
            if len(state.effort) != len(state.name):
                raise InputError(f'request.state: {len(state.name)} names but '
                                 f'{len(state.effort)} efforts (the torques to linearise '
                                 'about, one per joint)')
            tau, _ = index.extract(state.name, state.effort, [], 'request.state',
                                   label='effort')
            dt = float(request.dt)
            if not (math.isfinite(dt) and dt >= 0.0):
                raise InputError(f'request.dt must be 0 (continuous) or a time step > 0, '
                                 f'got {dt}')
            contacts = _request_contacts(request)
            q, qd = self._request_base(model, request, q, qd)
            tau = np.concatenate([np.zeros(model.nv - model.n), tau])
            A, B = model.linearize(q, qd, tau, dt if dt > 0.0 else None, contacts=contacts)
            response.state_names = ([f'position/{name}' for name in model.velocity_names]
                                    + [f'velocity/{name}' for name in model.velocity_names])
            response.input_names = list(model.joint_names)
            return {'a': A, 'b': B}
        return self._answer(request, response, compute, 'linearization')

    def _require_model(self):
        if self._active is None:
            raise InputError('no robot model yet')
        return self._active


def _request_contacts(request):
    """Return the Contact list of a GetLinearization request, or None; InputError names why."""
    links = list(request.contact_links)
    points, dims = list(request.contact_points), list(request.contact_dims)
    if not links:
        if points or dims:
            raise InputError('request.contact_points and request.contact_dims need '
                             'request.contact_links (one link per contact)')
        return None
    if len(points) not in (0, 3 * len(links)):
        raise InputError(f'request.contact_points must be empty or 3 numbers per contact link '
                         f'({3 * len(links)}), got {len(points)}')
    if len(dims) not in (0, len(links)):
        raise InputError(f'request.contact_dims must be empty or one per contact link '
                         f'({len(links)}), got {len(dims)}')
    contacts = []
    for k, link in enumerate(links):
        point = tuple(float(x) for x in points[3 * k:3 * k + 3]) or (0.0, 0.0, 0.0)
        if not all(math.isfinite(x) for x in point):
            raise InputError(f'request.contact_points: the point of contact {k} ({link!r}) is '
                             f'not finite: {list(point)}')
        dim = int(dims[k]) if dims else 3
        if dim not in (3, 6):
            raise InputError(f'request.contact_dims[{k}] ({link!r}) must be 3 (a point) or 6 '
                             f'(a surface), got {dim}')
        contacts.append(Contact(link, point, dim))
    return contacts


# magnitude limits of inputs and outputs: (parameter, default, description)
LIMITS = (
    ('max_wrench_force', 1e6, 'largest |force| of ~/external_wrench [N]; beyond: refused'),
    ('max_wrench_torque', 1e6, 'largest |torque| of ~/external_wrench [N m]; beyond: refused'),
    ('max_base_position', 1e4, 'largest |position| of ~/odometry and of a request.base [m] '
     '(10 km: a rover\'s odometry); beyond: refused'),
    ('max_base_linear_velocity', 1e3, 'largest |linear twist| of ~/odometry and of a '
     'request.base [m/s]; beyond: refused'),
    ('max_base_angular_velocity', 1e3, 'largest |angular twist| of ~/odometry and of a '
     'request.base [rad/s]; beyond: refused'),
    ('max_output', 1e12, 'largest |entry| of a published or served result (torques [N m or '
     'N], M, C*); a state or request whose result goes beyond (or is not finite) gets none'),
)
STATE_POLICIES = ('newest', 'all')
ODOMETRY_FIELDS = ('pose.position.x', 'pose.position.y', 'pose.position.z',
                   'pose.orientation.x', 'pose.orientation.y', 'pose.orientation.z',
                   'pose.orientation.w', 'twist.linear.x', 'twist.linear.y', 'twist.linear.z',
                   'twist.angular.x', 'twist.angular.y', 'twist.angular.z')


def _out_of_bounds(values: np.ndarray, bound: float) -> str:
    """Return '' if every value is finite and at most bound in magnitude, else the fault."""
    largest = float(np.max(np.abs(values))) if values.size else 0.0    # NaN if one is
    if largest <= bound:
        return ''
    if not math.isfinite(largest):
        return 'not finite'
    return f'beyond max_output {bound:g} (|value| up to {largest:.3g})'


def _norm(v: np.ndarray) -> float:
    """Return the Euclidean norm of finite values without overflow (1e200 stays 1e200)."""
    largest = float(np.max(np.abs(v))) if v.size else 0.0
    return largest * float(np.linalg.norm(v / largest)) if largest > 0.0 else 0.0


def _state_policy(value) -> bool:
    """Return True for state_policy 'newest', False for 'all'; ConfigurationError otherwise."""
    if value not in STATE_POLICIES:
        raise ConfigurationError(f'parameter state_policy must be one of '
                                 f'{list(STATE_POLICIES)}, got {value!r}')
    return value == 'newest'


def base_fault(values: np.ndarray, child_frame_id: str, base_link: str, limits: dict) -> str:
    """
    Return what is wrong with a base state (odometry or request.base), or '' if nothing.

    One check for the topic and the services: finite, the twist in the base frame
    (child_frame_id empty or the base link), a unit quaternion, and position and twist
    within the limits (LIMITS).
    """
    bad = [ODOMETRY_FIELDS[i] for i in np.nonzero(~np.isfinite(values))[0]]
    if bad:
        return f"not finite: {', '.join(bad)}"
    if child_frame_id not in ('', base_link):
        return (f"child_frame_id '{child_frame_id}' is not the base link '{base_link}' (the "
                'twist must be in the base frame)')
    norm = float(np.linalg.norm(values[3:7]))
    if abs(norm - 1.0) > QUATERNION_TOLERANCE:
        return f'orientation is not a unit quaternion (norm {norm:.6g})'
    for part, name, unit in ((values[:3], 'max_base_position', 'm'),
                             (values[7:10], 'max_base_linear_velocity', 'm/s'),
                             (values[10:13], 'max_base_angular_velocity', 'rad/s')):
        size = _norm(part)
        if size > limits[name]:
            what = {'max_base_position': 'position', 'max_base_linear_velocity':
                    'linear twist', 'max_base_angular_velocity': 'angular twist'}[name]
            return f'{what} {size:.3g} {unit} is beyond {name} {limits[name]:g} {unit}'
    return ''


class Overload:
    """
    Count joint states that waited for an answer, and say so, throttled.

    backlog(k): k states were waiting when one was answered; with 'newest' k - 1 of them are
    dropped. The first backlog is reported at once, later ones at most once a second, each
    report with the counts since the one before (a drop rate, as a share of what arrived).
    """

    PERIOD_S = 1.0

    def __init__(self, log, newest: bool):
        self.log = log
        self.newest = newest
        self.dropped = 0
        self.arrived = 0
        self.largest = 0
        self.since = time.monotonic()
        self.next_report = 0.0

    def backlog(self, waiting: int) -> None:
        """Count a backlog of ``waiting`` states (the one answered included); report."""
        self.arrived += waiting
        if self.newest:
            self.dropped += waiting - 1
        self.largest = max(self.largest, waiting)
        now = time.monotonic()
        if now < self.next_report:
            return
        span = now - self.since
        if self.newest:
            self.log.warning('overload', (
                f'joint_states arrive faster than they are answered: dropped {self.dropped} '
                f'of {self.arrived} states that waited ({100.0 * self.dropped / self.arrived:.0f}'
                f'%) in the last {span:.3g} s, up to {self.largest} at once; answering the '
                'newest (state_policy newest)'))
        else:
            self.log.warning('overload', (
                f'joint_states arrive faster than they are answered: {self.arrived} states '
                f'waited in the last {span:.3g} s, up to {self.largest} at once; answering '
                f'every one (state_policy all), so outputs are late, and states beyond the '
                f'queue of {STATE_QUEUE} are lost'))
        self.dropped = self.arrived = self.largest = 0
        self.since = now
        self.next_report = now + self.PERIOD_S


def _odometry_values(msg: Odometry) -> np.ndarray:
    """Return position (3), orientation (x, y, z, w), linear and angular twist of odometry."""
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    lin, ang = msg.twist.twist.linear, msg.twist.twist.angular
    return np.array([p.x, p.y, p.z, o.x, o.y, o.z, o.w, lin.x, lin.y, lin.z, ang.x, ang.y,
                     ang.z])


_DEFAULT_BASE = _odometry_values(Odometry())


def _base_parts(values: np.ndarray) -> tuple:
    """Split _odometry_values into RobotModel.base_state's four arguments."""
    return values[:3], values[3:7], values[7:10], values[10:13]


def _labels(model) -> dict | None:
    """Return the dimension labels of a moving base's outputs by kind (None: fixed base)."""
    if model.base == 'fixed':
        return None
    names = model.velocity_names
    rows = 'rows: ' + ' '.join(names)
    return {'bias torque': (rows,), 'gravity torque': (rows,),
            'mass matrix': (rows, 'cols: ' + ' '.join(names)),
            'C*': (rows, 'cols: kron(v, v) of ' + ' '.join(names))}


def _seconds(name: str, value) -> float:
    """Return a checked duration parameter: a finite number of seconds > 0."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = -1.0
    if not (0.0 < seconds < float('inf')):
        raise ConfigurationError(f'parameter {name} must be a finite number > 0 (s), got '
                                 f'{value!r}')
    return seconds


def _wrench_timeout(value) -> float:
    """Return the checked parameter external_wrench_timeout: seconds >= 0 (0 = never)."""
    try:
        timeout = float(value)
    except (TypeError, ValueError):
        timeout = -1.0
    if not (timeout >= 0.0 and timeout < float('inf')):
        raise ConfigurationError(f'parameter external_wrench_timeout must be a finite number '
                                 f'>= 0 (s; 0: never), got {value!r}')
    return timeout


def main(args=None) -> int:
    """Run the dynamics node."""
    return run_node(DynamicsNode, args)


if __name__ == '__main__':
    sys.exit(main())
