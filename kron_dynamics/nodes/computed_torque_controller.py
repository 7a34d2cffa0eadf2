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
computed_torque_controller: tau = M(q)(qdd_d + Kd e' + Kp e) + C*(q)(qd kron qd) + G(q).

Here e = q_d - q. Computed on every accepted joint state and published as
std_msgs/Float64MultiArray (what ros2_control's forward command controller with
``interface_name: effort`` consumes). The latest reference is advanced to the time of each
state by its velocity and acceleration (for at most ``max_reference_age``).

Safety behaviour (README, "Failure behaviour"): bad references are refused and the last valid
one is held (before any reference: hold the first measured position). A large position error
is closed at no more than ``max_approach_velocity`` (default: the URDF velocity limits), and
torques stay within the URDF effort limits (the feedback is scaled down as a whole). When
joint states are older than ``state_timeout`` one zero-effort command is published and
commanding stops until fresh states arrive.
"""

import sys
import time

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..errors import ConfigurationError
from .executor import run_node, warm_up
from .joint_states import (InputError, JointStateIndex, point_arrays, StampGuard, STATE_QUEUE,
                           trajectory_points)
from .messages import all_finite, ArrayPublisher
from .parameters import declare_model_parameters, parameter_value, per_joint, required_model
from .throttled_logger import ThrottledLogger
from . import realtime


def feasible_scale(tau0: np.ndarray, dtau: np.ndarray, limits: np.ndarray) -> float:
    """Return the largest s in [0, 1] with |tau0 + s dtau| <= limits (0 if tau0 is outside)."""
    if np.any(np.abs(tau0) > limits):
        return 0.0
    with np.errstate(divide='ignore', invalid='ignore'):
        bound = np.where(dtau > 0, (limits - tau0) / dtau,
                         np.where(dtau < 0, (-limits - tau0) / dtau, np.inf))
    return float(np.clip(np.min(bound), 0.0, 1.0))


class ComputedTorqueController(Node):
    """Computed-torque (inverse-dynamics) control of a URDF robot."""

    def __init__(self, **kwargs):
        super().__init__('computed_torque_controller', **kwargs)
        realtime.declare_parameters(self)   # applied by run_node
        self._log = ThrottledLogger(self.get_logger())
        declare_model_parameters(self)
        self.declare_parameter('kp', [100.0], ParameterDescriptor(
            description='position gains [1/s^2], one value or one per joint'))
        self.declare_parameter('kd', [20.0], ParameterDescriptor(
            description='velocity gains [1/s], one value or one per joint'))
        self.declare_parameter('armature', [0.0], ParameterDescriptor(
            description='rotor inertia added to the diagonal of M, per joint or one value'))
        self.declare_parameter('max_approach_velocity', Parameter.Type.DOUBLE_ARRAY,
                               ParameterDescriptor(
                                   description='speed at which a large position error is '
                                               'closed, per joint (default: URDF velocity '
                                               'limits)'))
        self.declare_parameter('command_topic', '/effort_controller/commands')
        self.declare_parameter('state_timeout', 0.1, ParameterDescriptor(
            description='joint states older than this [s] stop the controller'))
        self.declare_parameter('max_reference_age', 0.02, ParameterDescriptor(
            description='a reference is extrapolated by its velocity and acceleration for at '
                        'most this long [s]; then it is held'))
        model = required_model(self)
        n = model.n
        self.model = model.with_armature(per_joint(self.get_parameter('armature').value, n,
                                                   'armature'))
        self.kp = per_joint(self.get_parameter('kp').value, n, 'kp')
        self.kd = per_joint(self.get_parameter('kd').value, n, 'kd')
        if np.any(self.kp < 0) or np.any(self.kd <= 0):
            raise ConfigurationError('kp must be >= 0 and kd > 0')
        self.kp_over_kd = self.kp / self.kd
        v_max = parameter_value(self, 'max_approach_velocity')
        if v_max:
            self.v_max = per_joint(v_max, n, 'max_approach_velocity')
        else:
            self.v_max = np.array([self.model.joints[j].velocity for j in self.model.joint_names])
        self.timeout = float(self.get_parameter('state_timeout').value)
        self.max_reference_age = float(self.get_parameter('max_reference_age').value)
        if not self.timeout > 0:
            raise ConfigurationError('parameter state_timeout must be > 0')
        self.limits = self.model.effort_limits
        self.index = JointStateIndex(self.model.joint_names)
        warm_up(self.model)
        self.reference = None          # (q_d, qd_d, qdd_d)
        self.reference_time = None     # monotonic time it arrived
        self.last_state_time = None    # monotonic time of the last accepted state
        self.stale = False
        self.stamps = StampGuard()
        self.counts = {'commands': 0, 'rejected_states': 0, 'rejected_references': 0,
                       'clamped': 0, 'stale_stops': 0}

        topic = self.get_parameter('command_topic').value
        self.pub = ArrayPublisher(self.create_publisher(Float64MultiArray, topic, 10))
        self.create_subscription(JointState, 'joint_states', self._on_joint_state,
                                 STATE_QUEUE, raw=True)   # JointStateIndex.from_serialized
        self.create_subscription(JointTrajectoryPoint, '~/reference', self._on_reference, 10)
        self.create_subscription(JointTrajectory, '~/reference_trajectory',
                                 self._on_reference_trajectory, 10)
        self.create_timer(min(self.timeout / 4, 0.05), self._watchdog)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.get_logger().info(f'commanding {self.model.joint_names} on {topic}')

    def _on_set_parameters(self, params) -> SetParametersResult:
        n = self.model.n
        try:
            for p in params:
                if p.name in ('kp', 'kd'):
                    gains = {'kp': self.kp, 'kd': self.kd, p.name: per_joint(p.value, n, p.name)}
                    if np.any(gains['kp'] < 0) or np.any(gains['kd'] <= 0):
                        raise ConfigurationError('kp must be >= 0 and kd > 0')
                    self.kp, self.kd = gains['kp'], gains['kd']
                    self.kp_over_kd = self.kp / self.kd
                elif p.name == 'state_timeout':
                    if not float(p.value) > 0:
                        raise ConfigurationError('state_timeout must be > 0')
                    self.timeout = float(p.value)
                elif p.name in ('robot_description', 'urdf_file', 'joints', 'gravity',
                                'armature', 'command_topic'):
                    raise ConfigurationError(f'{p.name} cannot change while running; '
                                             'restart the node')
        except ConfigurationError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    # ---------------------------------------------------------------- references
    def _set_reference(self, q, qd, qdd) -> None:
        self.reference = (q, qd, qdd)
        self.reference_time = time.monotonic()

    def _refuse_reference(self, reason: str) -> None:
        self.counts['rejected_references'] += 1
        self._log.warning('reference', f'refused reference, holding the last valid one: {reason}')

    def _on_reference(self, msg: JointTrajectoryPoint) -> None:
        try:
            self._set_reference(*point_arrays(msg, self.model.n))
        except InputError as exc:
            self._refuse_reference(str(exc))

    def _on_reference_trajectory(self, msg: JointTrajectory) -> None:
        try:
            self._set_reference(*trajectory_points(msg, self.model.joint_names)[0])
        except InputError as exc:
            self._refuse_reference(str(exc))

    # ---------------------------------------------------------------- control
    def control(self, q, qd) -> np.ndarray:
        """Return the (clamped) computed torque for a measured state."""
        if self.reference is None:  # hold where we are until a reference arrives
            self._set_reference(q.copy(), np.zeros_like(q), np.zeros_like(q))
        q_d, qd_d, qdd_d = self.reference
        # second-order hold: advance the reference to now (at most one reference period old)
        age = min(time.monotonic() - self.reference_time, self.max_reference_age)
        q_d = q_d + qd_d * age + 0.5 * qdd_d * age * age
        qd_d = qd_d + qdd_d * age
        # PD feedback, v = Kd (qd_d - qd) + Kp e while |Kp e / Kd| <= v_max; beyond that the
        # position error asks for at most v_max of approach speed (no wind-up after a large
        # error: the joint comes back at bounded speed and settles without overshoot)
        approach = np.clip(self.kp_over_kd * (q_d - q), -self.v_max, self.v_max)
        v = self.kd * (qd_d + approach - qd)
        tau = self.model.inverse_dynamics(q, qd, qdd_d + v)
        if np.all(np.abs(tau) <= self.limits):
            return tau
        # Beyond the effort limits: scale the feedback acceleration v as a whole (largest
        # s in [0, 1]) so that the achieved acceleration stays qdd_d + s v, the same
        # decoupled error dynamics, only slower; clipping each joint alone would couple the
        # joints through M and can make the loop unstable after a large error.
        tau0 = self.model.inverse_dynamics(q, qd, qdd_d)
        scale = feasible_scale(tau0, tau - tau0, self.limits)
        tau = np.clip(tau0 + scale * (tau - tau0), -self.limits, self.limits)
        self.counts['clamped'] += 1
        self._log.warning('limits', f'effort limits reached: feedback scaled by {scale:.3g}'
                          + ('' if scale > 0 else ' and feedforward clamped'))
        return tau

    def _on_joint_state(self, data: bytes) -> None:
        try:
            stamp, q, qd = self.index.from_serialized(data)
            stamp = self.stamps.check_ns(stamp)
            tau = self.control(q, qd)
            if not all_finite(tau):
                raise InputError('computed torque is not finite')
        except (InputError, ValueError) as exc:
            self.counts['rejected_states'] += 1
            self._log.warning('state', f'rejected joint state: {exc}')
            return
        self.stamps.accept(stamp)
        self.last_state_time = time.monotonic()
        if self.stale:
            self.stale = False
            self.get_logger().info('joint states are fresh again: commanding resumed')
        self.pub.publish(tau)
        self.counts['commands'] += 1

    def _watchdog(self) -> None:
        if self.stale or self.last_state_time is None:
            return
        age = time.monotonic() - self.last_state_time
        if age > self.timeout:
            self.stale = True
            self.counts['stale_stops'] += 1
            self.pub.publish(np.zeros(self.model.n))
            self.get_logger().error(
                f'joint states are {age:.3f} s old (timeout {self.timeout} s): published zero '
                'effort and stopped commanding until fresh states arrive')


def main(args=None) -> int:
    """Run the computed-torque controller."""
    return run_node(ComputedTorqueController, args)


if __name__ == '__main__':
    sys.exit(main())
