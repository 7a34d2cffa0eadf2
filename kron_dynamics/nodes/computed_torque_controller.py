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
computed_torque_controller: tau = M(q)(qdd_d + Kd e' + Kp e) + C*(q)(qd kron qd) + G(q) + f.

f is the friction feed-forward of the reference velocity qd_d: viscous qd_d + coulomb
sign(qd_d) + torque_offset (parameters, e.g. from an identification; zero by default).

Here e = q_d - q. Computed on fresh joint states and published as std_msgs/Float64MultiArray
(what ros2_control's forward command controller with ``interface_name: effort`` consumes).
The latest reference is advanced to the time of each state by its velocity and acceleration
(for at most ``max_reference_age``).

Fresh state only: the joint_states queue holds one message (after a stall the loop resumes
from the newest state, never from a backlog), and a state stamped more than
``state_timeout`` ago by the node's clock (its arrival, when the stamp is 0) is never used.
Without a usable state for ``state_timeout`` one zero-effort command is published and
commanding stops until fresh states arrive.

Safety behaviour (README, "Failure behaviour"): bad references are refused and the last valid
one is held (before any reference: hold the first measured position). A large position error
is closed at no more than ``max_approach_velocity`` (default: the URDF velocity limits), and
torques stay within the URDF effort limits (the feedback is scaled down as a whole).
"""

import sys

import numpy as np
from rcl_interfaces.msg import SetParametersResult
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..errors import ConfigurationError
from .executor import DeferringNode, run_node, warm_up
from .joint_states import (FRESH_STATE_QUEUE, InputError, JointStateIndex, point_arrays,
                           StampClock, StampGuard, trajectory_from_serialized)
from .messages import all_finite, ArrayPublisher
from .parameters import declare, declare_model_parameters, per_joint, required_model
from .throttled_logger import ThrottledLogger
from .wire import read_trajectory
from . import realtime

MODEL_FIXED = ("the controller's model is fixed while it commands torques (a new one "
               'would step the torque)')
DYNAMIC = ('kp', 'kd', 'state_timeout', 'max_approach_velocity', 'max_reference_age')


def feasible_scale(tau0: np.ndarray, dtau: np.ndarray, limits: np.ndarray) -> float:
    """Return the largest s in [0, 1] with |tau0 + s dtau| <= limits (0 if tau0 is outside)."""
    if np.any(np.abs(tau0) > limits):
        return 0.0
    with np.errstate(divide='ignore', invalid='ignore'):
        bound = np.where(dtau > 0, (limits - tau0) / dtau,
                         np.where(dtau < 0, (-limits - tau0) / dtau, np.inf))
    return float(np.clip(np.min(bound), 0.0, 1.0))


class ComputedTorqueController(DeferringNode):
    """Computed-torque (inverse-dynamics) control of a URDF robot."""

    def __init__(self, **kwargs):
        super().__init__('computed_torque_controller', **kwargs)
        realtime.declare_parameters(self)   # applied by run_node
        self._log = ThrottledLogger(self.get_logger())
        declare_model_parameters(self, read_only=MODEL_FIXED)
        for name, text in (
                ('viscous', 'viscous friction feed-forward [N m s/rad or N s/m] times the '
                 'reference velocity'),
                ('coulomb', 'Coulomb friction feed-forward [N m or N] times the sign of the '
                 'reference velocity'),
                ('torque_offset', 'constant torque added to every command [N m or N]')):
            declare(self, name, [0.0], text + ', one value or one per joint (identification: '
                    'Identification.to_params)', MODEL_FIXED)
        declare(self, 'coulomb_smoothing', 0.0,
                'Coulomb feed-forward uses tanh(v / this) instead of sign(v) when > 0 '
                '[rad/s or m/s]', MODEL_FIXED)
        declare(self, 'kp', [100.0], 'position gains [1/s^2], one value or one per joint')
        declare(self, 'kd', [20.0], 'velocity gains [1/s], one value or one per joint')
        declare(self, 'max_approach_velocity', (Parameter.Type.DOUBLE_ARRAY, []),
                'speed [rad/s or m/s] at which a large position error is closed, one value '
                'or one per joint; []: the URDF velocity limits')
        declare(self, 'command_topic', '/effort_controller/commands',
                'topic of the effort commands (std_msgs/Float64MultiArray)',
                'the publisher is created at start-up')
        declare(self, 'state_timeout', 0.1,
                'a joint state stamped more than this [s] ago by the node clock (by its '
                'arrival if the stamp is 0) is never used; without a newer one the '
                'controller sends zero effort once and stops')
        declare(self, 'max_reference_age', 0.02,
                'a reference is extrapolated by its velocity and acceleration for at most '
                'this long [s]; then it is held')
        model = self.model = required_model(self)
        self.limits = self.model.effort_limits
        self.viscous, self.coulomb, self.torque_offset = (
            per_joint(self.get_parameter(name).value, model.n, name)
            for name in ('viscous', 'coulomb', 'torque_offset'))
        self.coulomb_smoothing = float(self.get_parameter('coulomb_smoothing').value)
        if not (np.all(self.viscous >= 0) and np.all(self.coulomb >= 0)
                and self.coulomb_smoothing >= 0):
            raise ConfigurationError('parameters viscous, coulomb and coulomb_smoothing must '
                                     'be >= 0')
        self.has_friction = bool(np.any(self.viscous) or np.any(self.coulomb)
                                 or np.any(self.torque_offset))
        self.urdf_velocity = np.array([self.model.joints[j].velocity
                                       for j in self.model.joint_names])
        self._apply_settings({name: self.get_parameter(name).value for name in DYNAMIC})
        self.index = JointStateIndex(self.model.joint_names).prepare_serialized()
        warm_up(self.model)
        read_trajectory(b'')           # compile (or load) the trajectory reader up front
        self.reference = None          # (q_d, qd_d, qdd_d)
        self.reference_time = None     # its time [ns] on the node clock
        self.last_state_time = None    # time [ns] of the last state used (stamp or arrival)
        self.stale = False
        self.stamps = StampGuard()
        self.stamp_clock = StampClock(self.get_clock())
        self.counts = {'commands': 0, 'rejected_states': 0, 'rejected_references': 0,
                       'clamped': 0, 'stale_stops': 0}

        topic = self.get_parameter('command_topic').value
        self.pub = ArrayPublisher(self.create_publisher(Float64MultiArray, topic, 10),
                                  self._log)
        # the newest state only: after a stall the loop resumes from it, not from a backlog
        self.create_subscription(JointState, 'joint_states', self._on_joint_state,
                                 FRESH_STATE_QUEUE, raw=True)   # JointStateIndex.from_serialized
        self.create_subscription(JointTrajectoryPoint, '~/reference', self._on_reference, 10)
        self.create_subscription(JointTrajectory, '~/reference_trajectory',
                                 self._on_reference_trajectory, 10, raw=True)
        self._watchdog_timer = None
        self._start_watchdog()
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.get_logger().info(f'commanding {self.model.joint_names} on {topic}')

    # ---------------------------------------------------------------- parameters
    def _apply_settings(self, values: dict) -> None:
        """Validate, then apply, the parameters named in DYNAMIC (all of them or none)."""
        n = self.model.n
        kp = per_joint(values['kp'], n, 'kp') if 'kp' in values else self.kp
        kd = per_joint(values['kd'], n, 'kd') if 'kd' in values else self.kd
        if np.any(kp < 0) or np.any(kd <= 0):
            raise ConfigurationError('parameters kp must be >= 0 and kd > 0')
        v_max = values.get('max_approach_velocity')
        if v_max is None:
            v_max = self.v_max
        elif len(v_max):
            v_max = per_joint(v_max, n, 'max_approach_velocity')
            if np.any(v_max <= 0):
                raise ConfigurationError('parameter max_approach_velocity must be > 0')
        else:
            v_max = self.urdf_velocity
        timeout = float(values['state_timeout']) if 'state_timeout' in values else self.timeout
        if not 0 < timeout < np.inf:
            raise ConfigurationError('parameter state_timeout must be > 0')
        age = (float(values['max_reference_age']) if 'max_reference_age' in values
               else self.max_reference_age)
        if not 0 <= age < np.inf:
            raise ConfigurationError('parameter max_reference_age must be >= 0')
        self.kp, self.kd, self.kp_over_kd = kp, kd, kp / kd
        self.v_max, self.max_reference_age = v_max, age
        self.timeout, self.timeout_ns = timeout, int(timeout * 1e9)

    def _on_set_parameters(self, params) -> SetParametersResult:
        values = {p.name: p.value for p in params if p.name in DYNAMIC}
        if values:
            period = self._watchdog_period()
            try:
                self._apply_settings(values)
            except ConfigurationError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
            if self._watchdog_period() != period:
                self._start_watchdog()
        return SetParametersResult(successful=True)

    def _watchdog_period(self) -> float:
        return min(self.timeout / 4, 0.05)

    def _start_watchdog(self) -> None:
        if self._watchdog_timer is not None:
            self.destroy_timer(self._watchdog_timer)
        self._watchdog_timer = self.create_timer(self._watchdog_period(), self._watchdog)

    # ---------------------------------------------------------------- references
    def _set_reference(self, q, qd, qdd, time_ns: int) -> None:
        self.reference = (q, qd, qdd)
        self.reference_time = time_ns

    def _refuse_reference(self, reason: str) -> None:
        self.counts['rejected_references'] += 1
        self._log.warning('reference', f'refused reference, holding the last valid one: {reason}')

    def _on_reference(self, msg: JointTrajectoryPoint) -> None:
        """Take a reference point; it has no stamp, so its time is its arrival."""
        try:
            self._set_reference(*point_arrays(msg, self.model.n), self.stamp_clock.now_ns())
        except InputError as exc:
            self._refuse_reference(str(exc))

    def _on_reference_trajectory(self, data: bytes) -> None:
        """Take the first point, at header.stamp (0: arrival) + its time_from_start."""
        try:
            trajectory = trajectory_from_serialized(data, self.model.joint_names)
        except InputError as exc:
            self._refuse_reference(str(exc))
            return
        start = trajectory.stamp_ns or self.stamp_clock.now_ns()
        self._set_reference(trajectory.q[0], trajectory.qd[0], trajectory.qdd[0],
                            start + int(trajectory.times_ns[0]))

    # ---------------------------------------------------------------- control
    def control(self, q, qd, time_ns: int) -> np.ndarray:
        """Return the (clamped) computed torque for a state measured at time_ns."""
        if self.reference is None:  # hold where we are until a reference arrives
            self._set_reference(q.copy(), np.zeros_like(q), np.zeros_like(q), time_ns)
        q_d, qd_d, qdd_d = self.reference
        # second-order hold: advance the reference to the state's time (at most
        # max_reference_age; a reference newer than the state is not moved back)
        age = min(max((time_ns - self.reference_time) * 1e-9, 0.0), self.max_reference_age)
        q_d = q_d + qd_d * age + 0.5 * qdd_d * age * age
        qd_d = qd_d + qdd_d * age
        # PD feedback, v = Kd (qd_d - qd) + Kp e while |Kp e / Kd| <= v_max; beyond that the
        # position error asks for at most v_max of approach speed (no wind-up after a large
        # error: the joint comes back at bounded speed and settles without overshoot)
        approach = np.clip(self.kp_over_kd * (q_d - q), -self.v_max, self.v_max)
        v = self.kd * (qd_d + approach - qd)
        friction = self.friction(qd_d)
        tau = self.model.inverse_dynamics(q, qd, qdd_d + v) + friction
        if np.all(np.abs(tau) <= self.limits):
            return tau
        # Beyond the effort limits: scale the feedback acceleration v as a whole (largest
        # s in [0, 1]) so that the achieved acceleration stays qdd_d + s v, the same
        # decoupled error dynamics, only slower; clipping each joint alone would couple the
        # joints through M and can make the loop unstable after a large error.
        tau0 = self.model.inverse_dynamics(q, qd, qdd_d) + friction
        scale = feasible_scale(tau0, tau - tau0, self.limits)
        tau = np.clip(tau0 + scale * (tau - tau0), -self.limits, self.limits)
        self.counts['clamped'] += 1
        self._log.warning('limits', f'effort limits reached: feedback scaled by {scale:.3g}'
                          + ('' if scale > 0 else ' and feedforward clamped'))
        return tau

    def friction(self, qd_d):
        """Return the friction feed-forward at the reference velocity (0.0 if none is set)."""
        if not self.has_friction:
            return 0.0
        if self.coulomb_smoothing > 0:
            sign = np.tanh(qd_d / self.coulomb_smoothing)
        else:
            sign = np.sign(qd_d)
        return self.viscous * qd_d + self.coulomb * sign + self.torque_offset

    def _state_time(self, stamp: int, now: int) -> int:
        """Return the time of a state (its stamp; its arrival if 0); InputError if too old."""
        if not stamp:
            return now
        age = now - stamp
        if age > self.timeout_ns:
            raise InputError(f'joint_states: stamped {age * 1e-9:.3f} s ago, older than '
                             f'state_timeout {self.timeout:g} s: not used for a command')
        return stamp

    def _on_joint_state(self, data: bytes) -> None:
        try:
            stamp, q, qd = self.index.from_serialized(data)
            now = self.stamp_clock.now_ns()
            state_time = self._state_time(stamp, now)     # too old: the first question
            stamp = self.stamps.check_ns(stamp, now)
            tau = self.control(q, qd, state_time)
            if not all_finite(tau):
                raise InputError('computed torque is not finite')
        except (InputError, ValueError) as exc:
            self.counts['rejected_states'] += 1
            self._log.warning('state', f'rejected joint state: {exc}')
            return
        self.stamps.accept(stamp)
        self.last_state_time = state_time
        if self.stale:
            self.stale = False
            self.get_logger().info('joint states are fresh again: commanding resumed')
        self.pub.publish(tau)
        self.counts['commands'] += 1

    def _watchdog(self) -> None:
        if self.stale or self.last_state_time is None:
            return
        age = (self.stamp_clock.now_ns() - self.last_state_time) * 1e-9
        if age > self.timeout:
            self.stale = True
            self.counts['stale_stops'] += 1
            self.pub.publish(np.zeros(self.model.n))
            self.get_logger().error(
                f'the newest usable joint state is {age:.3f} s old (state_timeout '
                f'{self.timeout:g} s): published zero effort and stopped commanding until '
                'fresh states arrive')


def main(args=None) -> int:
    """Run the computed-torque controller."""
    return run_node(ComputedTorqueController, args)


if __name__ == '__main__':
    sys.exit(main())
