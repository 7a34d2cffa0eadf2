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
plant_simulator: integrates a URDF's forward dynamics from effort commands.

Fixed-step RK4 (default 1 kHz) kept in step with the wall clock from the node's start; the
latest command is held (zero-order hold), saturated at the URDF effort limits as a drive
would. When commands are older than ``command_timeout`` (and before the first one) the plant
is held at rest by its brakes (``on_command_timeout: brake``, default) or moves under zero
effort (``zero``). A step that fails (a state beyond what double precision can integrate) is
undone and the plant braked; the simulation never stops for good. Publishes joint_states at
``publish_rate``, stamped with the simulated instant of the state on the node clock (not
when the message is built, which a busy machine delays); its effort is the command held
over the steps that led to that state (a held effort: ``identify(..., effort='held')``,
``kron-dynamics identify --effort held``). Optional per-joint armature and
viscous damping (any damping >= 0 is integrated stably: see ``damped_steps``).
"""

import sys
import time

import numpy as np
from builtin_interfaces.msg import Time
from rcl_interfaces.msg import SetParametersResult
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from ..errors import ConfigurationError, ModelError, SingularMassMatrixError
from .executor import DeferringNode, run_node, warm_up
from .parameters import declare, declare_model_parameters, per_joint, required_model
from .throttled_logger import ThrottledLogger
from . import realtime

MAX_STEPS_PER_TICK = 100
# [ns] a longer read of the node clock against time.monotonic() was preempted; an offset
# that moved by more than CLOCK_STEP_NS is a clock set (PlantSimulator._clock_offset_ns)
CLOCK_READ_NS, CLOCK_STEP_NS = 50_000, 1_000_000
# An explicit RK4 step is stable on a decaying mode e^(-lambda t) only for dt lambda < 2.79;
# damping beyond dt * max(damping) = STIFF_DAMPING * (smallest eigenvalue of M) is integrated
# implicitly (damped_steps)
STIFF_DAMPING = 1.0
PLANT_FIXED = 'the simulated plant is built at start-up'
AT_START = 'used once, at start-up'
DYNAMIC = ('damping', 'command_timeout', 'on_command_timeout')


def damped_steps(model, q, qd, tau, dt: float, steps: int, damping):
    """
    Advance ``steps`` steps of length dt with tau held and viscous ``damping`` per joint.

    Fixed-step RK4 with the damping in the generalized force (``RobotModel.integrate``)
    while that is stable. Damping too stiff for an explicit step (dt * max damping >
    STIFF_DAMPING * the smallest eigenvalue of M at q, e.g. 1e6 N m s/rad on a 1 kg m^2
    link at 1 kHz, where RK4 diverges within a few steps) is integrated implicitly:
    (M + dt D) q'_k+1 = M q'_k + dt (tau - C*(q_k)(q'_k kron q'_k) - G(q_k)), then
    q_k+1 = q_k + dt q'_k+1 (semi-implicit Euler, the damping implicit): stable for any
    damping >= 0 and exact in the terminal velocity q' = D^-1 (tau - G) it imposes.
    """
    top = float(np.max(damping, initial=0.0))
    if top > 0.0:
        lowest = float(np.linalg.eigvalsh(model.mass_matrix(q))[0])
        if not dt * top <= STIFF_DAMPING * lowest:
            D = dt * np.diag(damping)
            for _ in range(steps):
                M = model.mass_matrix(q)
                qd = np.linalg.solve(M + D, M @ qd + dt * (tau - model.bias_torque(q, qd)))
                q = q + dt * qd
            return q, qd
    return model.simulate(q, qd, tau, dt, steps, damping=damping)


class PlantSimulator(DeferringNode):
    """Simulate a robot from its URDF under effort commands."""

    def __init__(self, **kwargs):
        super().__init__('plant_simulator', **kwargs)
        realtime.declare_parameters(self)   # applied by run_node
        self._log = ThrottledLogger(self.get_logger())
        declare_model_parameters(self, read_only=PLANT_FIXED)
        declare(self, 'damping', [0.0], 'viscous damping per joint [N m s/rad or N s/m]')
        declare(self, 'initial_positions', [0.0], 'q at start, one value or one per joint',
                AT_START)
        declare(self, 'initial_velocities', [0.0], 'qd at start, one value or one per joint',
                AT_START)
        declare(self, 'integration_rate', 1000.0, 'RK4 steps per second [Hz]', AT_START)
        declare(self, 'publish_rate', 250.0, 'joint_states per second [Hz]', AT_START)
        declare(self, 'command_topic', '/effort_controller/commands',
                'topic of the effort commands (std_msgs/Float64MultiArray)', AT_START)
        declare(self, 'command_timeout', 0.5,
                'commands older than this [s] count as absent (see on_command_timeout)')
        declare(self, 'on_command_timeout', 'brake',
                "'brake': hold the plant at rest while commands are absent (as a machine's "
                "holding brakes); 'zero': let it move under zero effort")
        model = self.model = required_model(self)
        n = model.n
        p = {name: self.get_parameter(name).value for name in (
            'initial_positions', 'initial_velocities', 'integration_rate', 'publish_rate',
            'command_topic')}
        self.limits = self.model.effort_limits
        self.q = per_joint(p['initial_positions'], n, 'initial_positions')
        self.qd = per_joint(p['initial_velocities'], n, 'initial_velocities')
        if not p['integration_rate'] > 0 or not p['publish_rate'] > 0:
            raise ConfigurationError('parameters integration_rate and publish_rate must be > 0')
        self.dt = 1.0 / float(p['integration_rate'])
        self._apply_settings({name: self.get_parameter(name).value for name in DYNAMIC})
        # refuse a plant whose M is singular: forward dynamics would be garbage
        try:
            self.model.forward_dynamics(self.q, np.zeros(n), np.zeros(n))
        except SingularMassMatrixError as exc:
            raise ModelError(f'{exc} (set the armature parameter)') from None
        warm_up(self.model)
        # compile the integrator before subscribing
        self.model.simulate(self.q, self.qd, np.zeros(n), self.dt, 1)
        self.tau = np.zeros(n)
        self.last_command = None
        self.sim_time = 0.0
        self.start = None              # wall time of the first tick: integration starts
        self._offset_ns = None         # node clock - time.monotonic() [ns]
        self.counts = {'steps': 0, 'commands': 0, 'rejected_commands': 0, 'saturated': 0,
                       'failed_steps': 0}
        self.pub = self.create_publisher(JointState, 'joint_states', 10)
        self.create_subscription(Float64MultiArray, p['command_topic'], self._on_command, 10)
        self.create_timer(1.0 / float(p['publish_rate']), self._tick)
        self.add_on_set_parameters_callback(self._on_set_parameters)

    def _apply_settings(self, values: dict) -> None:
        """Validate, then apply, damping, command_timeout and on_command_timeout."""
        damping = (per_joint(values['damping'], self.model.n, 'damping')
                   if 'damping' in values else self.damping)
        if np.any(damping < 0):
            raise ConfigurationError('parameter damping must be >= 0')
        timeout = (float(values['command_timeout']) if 'command_timeout' in values
                   else self.command_timeout)
        if not 0 < timeout < np.inf:
            raise ConfigurationError('parameter command_timeout must be > 0')
        mode = values.get('on_command_timeout', 'brake' if getattr(self, 'brake', True)
                          else 'zero')
        if mode not in ('brake', 'zero'):
            raise ConfigurationError("parameter on_command_timeout must be 'brake' or 'zero', "
                                     f'got {mode!r}')
        self.damping, self.command_timeout, self.brake = damping, timeout, mode == 'brake'

    def _on_set_parameters(self, params) -> SetParametersResult:
        values = {p.name: p.value for p in params if p.name in DYNAMIC}
        try:
            if values:
                self._apply_settings(values)
        except ConfigurationError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    def _on_command(self, msg: Float64MultiArray) -> None:
        tau = np.asarray(msg.data, dtype=float)
        if tau.shape != (self.model.n,) or not np.all(np.isfinite(tau)):
            self.counts['rejected_commands'] += 1
            self._log.warning('command', f'rejected command: need {self.model.n} finite values, '
                                         f'got {list(msg.data)}')
            return
        if np.any(np.abs(tau) > self.limits):   # the drives saturate
            self.counts['saturated'] += 1
            self._log.warning('saturated', f'command {list(msg.data)} beyond the effort limits '
                                           f'{list(self.limits)}: saturated')
            tau = np.clip(tau, -self.limits, self.limits)
        self.tau = tau
        self.last_command = time.monotonic()
        self.counts['commands'] += 1

    def step(self, tau, steps: int = 1) -> None:
        """
        Advance ``steps`` RK4 steps of length dt with tau held (compiled).

        A step that fails (singular M from an overflow, a non-finite state) is undone: the
        plant stays where it was, braked (zero velocity), and the error is logged.
        """
        try:
            q, qd = damped_steps(self.model, self.q, self.qd, tau, self.dt, steps,
                                 self.damping)
            if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
                raise ValueError('the state became non-finite')
        except (ModelError, ValueError) as exc:
            self.counts['failed_steps'] += 1
            self._log.warning('failed', f'integration failed ({self._cause(exc, tau)}): state '
                                        'held and braked')
            q, qd = self.q, np.zeros(self.model.n)
        self.q, self.qd = q, qd
        self.sim_time += steps * self.dt
        self.counts['steps'] += steps

    def _cause(self, exc: Exception, tau) -> str:
        """
        Return why a step failed, in words: the start state itself, or growth within the step.

        An overflow inside the RK4 stages (a huge acceleration times dt) ends as a singular
        or non-finite M at a stage's state: if the start state's dynamics are fine, that is
        what is said, not 'singular mass matrix'.
        """
        try:
            qdd = self.model.forward_dynamics(self.q, self.qd, tau)
        except (ModelError, ValueError):
            return str(exc)
        if not np.all(np.isfinite(qdd)):
            return str(exc)
        return (f'the state overflowed within the step: at its start max |velocity| '
                f'{np.max(np.abs(self.qd), initial=0.0):.3g} and max |acceleration| '
                f'{np.max(np.abs(qdd), initial=0.0):.3g} over dt {self.dt:g} s (torques '
                'too large for the time step?)')

    def _clock_offset_ns(self) -> int:
        """
        Return the node clock minus time.monotonic() [ns].

        The two advance together (NTP slews both); the offset changes only where the node
        clock is set. Read each tick where the reads are adjacent (a read longer than
        CLOCK_READ_NS was preempted and is ignored) and taken only when it moved by more than
        CLOCK_STEP_NS: constant otherwise, so that consecutive stamps never go backwards.
        """
        before = time.monotonic_ns()
        clock = self.get_clock().now().nanoseconds
        after = time.monotonic_ns()
        offset = clock - (before + after) // 2
        if self._offset_ns is None or (after - before <= CLOCK_READ_NS
                                       and abs(offset - self._offset_ns) > CLOCK_STEP_NS):
            self._offset_ns = offset
        return self._offset_ns

    def _tick(self) -> None:
        offset_ns = self._clock_offset_ns()
        now = time.monotonic()
        fresh = self.last_command is not None and now - self.last_command <= self.command_timeout
        tau = self.tau if fresh else np.zeros(self.model.n)
        if self.start is None:
            self.start = now
        start = self.start
        behind = int((now - start - self.sim_time) / self.dt)
        if not fresh and self.brake:   # brakes hold the plant at rest, time goes on
            if np.any(self.qd):
                self.get_logger().warning('no fresh effort commands: brakes engaged')
            self.qd = np.zeros(self.model.n)
            self.sim_time += max(behind, 0) * self.dt
            behind = 0
        if behind > MAX_STEPS_PER_TICK:   # cannot keep up: drop real time, not accuracy
            self._log.warning('behind', f'simulation {behind} steps behind real time')
            self.start = start + (behind - MAX_STEPS_PER_TICK) * self.dt
            behind = MAX_STEPS_PER_TICK
        if behind > 0:
            self.step(tau, behind)
        msg = JointState()
        # the time of the state: the simulated instant start + sim_time on the node clock
        # (not the clock when the message is built, which a busy machine delays)
        stamp_ns = offset_ns + round((self.start + self.sim_time) * 1e9)
        msg.header.stamp = Time(sec=stamp_ns // 1_000_000_000, nanosec=stamp_ns % 1_000_000_000)
        # the locked joints too, held still (robot_state_publisher needs them for the TF)
        locked = self.model.locked_joints
        msg.name = [*self.model.joint_names, *locked]
        msg.position = [*self.q.tolist(), *locked.values()]
        msg.velocity = [*self.qd.tolist(), *[0.0] * len(locked)]
        msg.effort = [*tau.tolist(), *[0.0] * len(locked)]
        self.pub.publish(msg)


def main(args=None) -> int:
    """Run the plant simulator."""
    return run_node(PlantSimulator, args)


if __name__ == '__main__':
    sys.exit(main())
