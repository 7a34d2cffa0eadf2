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
computed_torque_controller and plant_simulator as real processes: law, limits, watchdog.

Nothing here concludes from a short wait. Every joint state the controller accepts gives
exactly one command, in order, so a valid state sent after a bad one is a marker: when its
command arrives, any command for the bad state would already have arrived before it. A new
reference is waited for by sending states until the commands follow it; a refused reference
by its log line. The watchdog (state_timeout) is set long for these tests and short only in
the watchdog test.
"""

import math
import time

import numpy as np
import pytest
from rcl_interfaces.msg import Parameter as ParameterMsg, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from conftest import URDF_DIR
from kron_dynamics import RobotModel
from kron_dynamics.nodes.reference_generator import quintic
from kron_dynamics.nodes.throttled_logger import THROTTLE_S
from ros_harness import LONG_TIMEOUT, NodeProcess, Probe, stamped_state, wait_for

pytestmark = pytest.mark.ros

RP_ARM = str(URDF_DIR / 'rp_arm.urdf')
JOINTS = ['theta1', 'd2']
KP, KD = np.array([50.0, 40.0]), np.array([10.0, 12.0])
WAIT = 30.0              # generous: the machine may be busy


@pytest.fixture(scope='module')
def model():
    return RobotModel.from_urdf_file(RP_ARM)


@pytest.fixture(scope='module')
def loop():
    node = NodeProcess('computed_torque_controller', [
        '-p', f'urdf_file:={RP_ARM}', '-p', 'kp:=[50.0, 40.0]', '-p', 'kd:=[10.0, 12.0]',
        '-p', f'state_timeout:={LONG_TIMEOUT}', '-p', 'command_topic:=/test_effort/commands',
        '-p', 'max_reference_age:=0.0'])
    probe = Probe('controller_probe')
    commands = probe.collect(Float64MultiArray, '/test_effort/commands')
    states = probe.node.create_publisher(JointState, '/joint_states', 10)
    ref = probe.node.create_publisher(JointTrajectoryPoint,
                                      '/computed_torque_controller/reference', 10)
    traj = probe.node.create_publisher(JointTrajectory,
                                       '/computed_torque_controller/reference_trajectory', 10)
    assert wait_for(lambda: states.get_subscription_count() > 0 and
                    ref.get_subscription_count() > 0 and traj.get_subscription_count() > 0
                    and probe.node.count_publishers('/test_effort/commands') > 0,
                    60), node.stop()
    yield node, probe, commands, states, ref, traj
    probe.close()
    print(node.stop())


def first_nonzero(commands, start: int):
    """Return the index of the first command from start on that is not all zeros, or None."""
    return next((k for k in range(start, len(commands)) if any(commands[k].data)), None)


def send_state(loop, q, qd, stamp_ns: int = 0):
    """
    Publish a valid joint state and return its command: the first non-zero one after it.

    Commands come in order and only from states and from the watchdog, whose one command is
    all zeros; a computed torque here is never exactly zero (gravity acts on the arm).
    """
    _, _, commands, states, *_ = loop
    n0 = len(commands)
    states.publish(stamped_state(JOINTS, q, qd, stamp_ns))
    assert wait_for(lambda: first_nonzero(commands, n0) is not None, WAIT), \
        'no command for a valid state'
    return np.array(commands[first_nonzero(commands, n0)].data)


def rejected_states(node) -> list:
    """Return the controller's log lines that refuse a joint state."""
    return [line for line in node.output().splitlines() if 'rejected joint state: ' in line]


def send_bad_state(loop, msg, reason, marker_q, expected):
    """
    Publish a bad joint state, wait for the line refusing it, then a valid marker.

    The controller answers only the newest of the states that arrive together, so a bad
    state followed at once by the marker might never be looked at: its refusal is waited for
    first, a line that names this state's fault among those logged after it was sent (a
    loaded CI run logged a second refusal of the bad state before, a second or more after
    its first, just as this one was sent). The marker's command is then the one new command.
    """
    node, _, commands, states, *_ = loop
    time.sleep(THROTTLE_S * 1.1)    # one refusal is logged per THROTTLE_S: the gate is open
    n_lines, n0 = len(rejected_states(node)), len(commands)
    states.publish(msg)
    assert wait_for(lambda: any(reason in line for line in rejected_states(node)[n_lines:]),
                    WAIT), node.output()[-2000:]
    tau = send_state(loop, marker_q, [0.0, 0.0])
    np.testing.assert_allclose(tau, expected, rtol=1e-9, err_msg='a command for the bad state')
    assert len(commands) == n0 + 1, 'a command for the bad state'


def follow(loop, q, qd, expected, what='the new reference'):
    """Send the state until its command equals expected (a new reference has arrived)."""
    last = []

    def arrived():
        last[:] = [send_state(loop, q, qd)]
        return np.allclose(last[0], expected, rtol=1e-9, atol=1e-12)
    assert wait_for(arrived, WAIT, period=0.05), (what, last, expected)
    return last[0]


def law(model, q, qd, q_d, qd_d, qdd_d):
    a = qdd_d + KD * (qd_d - qd) + KP * (q_d - q)
    return model.mass_matrix(q) @ a + model.coriolis_star(q) @ np.kron(qd, qd) + \
        model.gravity_torque(q)


def refusals(node) -> int:
    return node.output().count('refused reference')


def set_state_timeout(probe, value):
    pv = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=value)
    req = SetParameters.Request(parameters=[ParameterMsg(name='state_timeout', value=pv)])
    result = probe.call(SetParameters, '/computed_torque_controller/set_parameters', req)
    assert result.results[0].successful, result.results[0].reason


def test_holds_the_first_position_then_follows_references(loop, model):
    q0 = np.array([0.3, 0.4])
    tau = send_state(loop, q0, [0.0, 0.0])
    np.testing.assert_allclose(tau, model.gravity_torque(q0), rtol=1e-9, atol=1e-9)
    tau = send_state(loop, q0 + [0.01, -0.02], [0.1, 0.0])
    np.testing.assert_allclose(tau, law(model, q0 + [0.01, -0.02], np.array([0.1, 0.0]), q0,
                                        0, 0), rtol=1e-9)
    _, _, _, _, ref, _ = loop
    q_d, qd_d, qdd_d = np.array([0.5, 0.45]), np.array([0.2, -0.1]), np.array([1.0, 0.5])
    ref.publish(JointTrajectoryPoint(positions=list(q_d), velocities=list(qd_d),
                                     accelerations=list(qdd_d)))
    q, qd = np.array([0.48, 0.46]), np.array([0.1, 0.0])
    follow(loop, q, qd, law(model, q, qd, q_d, qd_d, qdd_d))


def test_bad_references_are_refused_and_the_last_one_held(loop, model):
    node, _, _, _, ref, traj = loop
    q_d = np.array([0.1, 0.2])
    q, qd = np.array([0.12, 0.18]), np.zeros(2)
    held = law(model, q, qd, q_d, 0, 0)
    ref.publish(JointTrajectoryPoint(positions=list(q_d)))
    follow(loop, q, qd, held)
    bad = [(ref, JointTrajectoryPoint(positions=[math.nan, 0.2])),
           (ref, JointTrajectoryPoint(positions=[0.1])),
           (traj, JointTrajectory(joint_names=['theta1', 'ghost'],
                                  points=[JointTrajectoryPoint(positions=[1.0, 1.0])]))]
    for publisher, msg in bad:
        # one refusal is logged per THROTTLE_S: wait that long since the last log line
        time.sleep(THROTTLE_S * 1.1)
        n0 = refusals(node)
        publisher.publish(msg)
        assert wait_for(lambda: refusals(node) > n0, WAIT), node.output()[-2000:]
        np.testing.assert_allclose(send_state(loop, q, qd), held, rtol=1e-9)
    # a named trajectory in another order is accepted
    traj.publish(JointTrajectory(joint_names=['d2', 'theta1'],
                                 points=[JointTrajectoryPoint(positions=[0.3, -0.2])]))
    follow(loop, q, qd, law(model, q, qd, np.array([-0.2, 0.3]), 0, 0))


def test_bad_states_give_no_command(loop, model):
    node, _, _, _, ref, _ = loop
    q_d, marker = np.array([0.1, 0.1]), np.array([0.15, 0.05])
    ref.publish(JointTrajectoryPoint(positions=list(q_d)))
    expected = law(model, marker, np.zeros(2), q_d, 0, 0)
    follow(loop, marker, [0.0, 0.0], expected)
    send_bad_state(loop, stamped_state(JOINTS, [math.nan, 0.1], [0.0, 0.0], 0),
                   "non-finite position of joint(s) ['theta1']", marker, expected)
    send_bad_state(loop, stamped_state(JOINTS, [0.1, 0.1], [math.inf, 0.0], 0),
                   "non-finite velocity of joint(s) ['theta1']", marker, expected)
    # finite, but the centripetal torque overflows (1e320 rad^2/s^2)
    send_bad_state(loop, stamped_state(JOINTS, [0.1, 0.5], [1e160, 0.0], 0),
                   'computed torque is not finite', marker, expected)
    assert node.alive()
    # said once, by the refusal: no NumPy RuntimeWarning about the overflow besides
    assert 'RuntimeWarning' not in node.output(), node.output()[-2000:]


def test_a_state_stamped_before_the_last_one_gives_no_command(loop, model):
    """
    A stamp older than the last accepted one is refused (the stream went backwards).

    Only within StampGuard.restart_s (1 s) of the last accepted state: after that the
    stream counts as restarted and the state is answered. A loaded machine may deliver the
    older state that late, so it is tried again, three times at most.
    """
    node, _, commands, states, ref, _ = loop
    q_d, marker = np.array([0.1, 0.1]), np.array([0.15, 0.05])
    ref.publish(JointTrajectoryPoint(positions=list(q_d)))
    expected = law(model, marker, np.zeros(2), q_d, 0, 0)
    follow(loop, marker, [0.0, 0.0], expected)
    for _ in range(3):
        time.sleep(THROTTLE_S * 1.1)    # one refusal is logged per THROTTLE_S: the gate is open
        n_lines = len(rejected_states(node))
        now = time.time_ns()
        send_state(loop, marker, [0.0, 0.0], now)
        n0 = len(commands)
        states.publish(stamped_state(JOINTS, [0.2, 0.2], [0.0, 0.0], now - 10_000_000_000))
        assert wait_for(lambda: len(rejected_states(node)) > n_lines or len(commands) > n0,
                        WAIT), node.output()[-2000:]
        if len(rejected_states(node)) > n_lines:
            break
    else:
        pytest.fail('a state stamped 10 s before the last one was answered, three times')
    assert 'is older than the previous' in rejected_states(node)[-1], rejected_states(node)[-1]
    np.testing.assert_allclose(send_state(loop, marker, [0.0, 0.0]), expected, rtol=1e-9)
    assert len(commands) == n0 + 1, 'a command for the state stamped before the last one'


def test_torques_are_clamped_to_effort_limits(loop, model):
    _, _, _, _, ref, _ = loop
    target = np.array([3.0, 0.9])
    q, qd = np.array([-3.0, 0.0]), np.array([-10.0, -10.0])
    # the feedback acceleration is scaled as a whole: tau = tau0 + s (tau_full - tau0)
    tau0 = model.inverse_dynamics(q, qd, np.zeros(2))
    v_max = np.array([model.joints[j].velocity for j in JOINTS])
    v = KD * (np.clip(KP / KD * (target - q), -v_max, v_max) - qd)
    full = model.inverse_dynamics(q, qd, v)
    scales = []

    def scaled_as_a_whole():     # true once the controller has the new reference
        tau = send_state(loop, q, qd)
        s = (tau - tau0) / (full - tau0)
        scales[:] = [tau, s]
        return bool(0 < s[0] < 1 and np.isclose(s[0], s[1], rtol=1e-9))
    ref.publish(JointTrajectoryPoint(positions=list(target)))
    assert wait_for(scaled_as_a_whole, WAIT, period=0.05), scales
    tau = scales[0]
    limits = model.effort_limits
    assert np.all(np.abs(tau) <= limits * (1 + 1e-12))
    assert np.any(np.isclose(np.abs(tau), limits, rtol=1e-9)), 'some joint at its limit'


def test_watchdog_stops_and_resumes(loop, model):
    node, probe, commands, *_ = loop
    q = np.array([0.2, 0.3])
    set_state_timeout(probe, 0.3)
    try:
        n0 = len(commands)
        send_state(loop, q, [0.0, 0.0])
        k = first_nonzero(commands, n0)     # its answer (a zero before it: stale already)
        # then no joint states: after state_timeout, one zero-effort command
        assert wait_for(lambda: len(commands) > k + 1, WAIT), 'no command after the timeout'
        assert list(commands[k + 1].data) == [0.0, 0.0]
        # fresh states resume commanding; the next command is the answer to this state, so
        # nothing else was published while the states were stale
        send_state(loop, q, [0.0, 0.0])
        assert first_nonzero(commands, k + 1) == k + 2, [c.data for c in commands[k:]]
        assert node.alive()
    finally:
        set_state_timeout(probe, LONG_TIMEOUT)


def test_friction_feed_forward_of_an_identification_is_added():
    """viscous, coulomb (smoothed) and torque_offset add f(qd_d) to the law, as set."""
    viscous, coulomb, offset, smooth = [0.4, 2.0], [0.8, 3.0], [0.05, -0.1], 0.05
    node = NodeProcess('computed_torque_controller', [
        '-r', '__node:=friction_controller', '-p', f'urdf_file:={RP_ARM}',
        '-p', 'kp:=[50.0, 40.0]', '-p', 'kd:=[10.0, 12.0]',
        '-p', f'state_timeout:={LONG_TIMEOUT}', '-p', 'max_reference_age:=0.0',
        '-p', 'command_topic:=/friction_test/commands',
        '-p', f'viscous:={viscous}', '-p', f'coulomb:={coulomb}',
        '-p', f'torque_offset:={offset}', '-p', f'coulomb_smoothing:={smooth}',
        '-r', 'joint_states:=/friction_test/joint_states'])
    probe = Probe('friction_probe')
    try:
        commands = probe.collect(Float64MultiArray, '/friction_test/commands')
        states = probe.node.create_publisher(JointState, '/friction_test/joint_states', 10)
        ref = probe.node.create_publisher(JointTrajectoryPoint,
                                          '/friction_controller/reference', 10)
        assert wait_for(lambda: states.get_subscription_count() > 0
                        and ref.get_subscription_count() > 0, 60), node.stop()
        model = RobotModel.from_urdf_file(RP_ARM)
        q_d, qd_d, qdd_d = np.array([0.5, 0.45]), np.array([0.2, -0.03]), np.array([1.0, 0.5])
        q, qd = np.array([0.48, 0.46]), np.array([0.1, 0.0])
        friction = (np.multiply(viscous, qd_d) + np.multiply(coulomb, np.tanh(qd_d / smooth))
                    + offset)
        expected = law(model, q, qd, q_d, qd_d, qdd_d) + friction
        last = []

        def arrived():
            ref.publish(JointTrajectoryPoint(positions=list(q_d), velocities=list(qd_d),
                                             accelerations=list(qdd_d)))
            n0 = len(commands)
            states.publish(JointState(name=JOINTS, position=list(q), velocity=list(qd)))
            if not wait_for(lambda: len(commands) > n0, WAIT):
                return False
            last[:] = [np.array(commands[-1].data)]
            return np.allclose(last[0], expected, rtol=1e-9, atol=1e-12)
        assert wait_for(arrived, WAIT, period=0.05), (last, expected)
    finally:
        probe.close()
        node.stop()
    code, out = NodeProcess('computed_torque_controller', [
        '-p', f'urdf_file:={RP_ARM}', '-p', 'coulomb:=[-1.0]']).wait(60)
    assert code == 1 and 'coulomb' in out and '>= 0' in out, out


def test_controller_start_up_errors():
    code, out = NodeProcess('computed_torque_controller', ['-p', f'urdf_file:={RP_ARM}',
                                                           '-p', 'kp:=[1.0, 2.0, 3.0]']).wait(60)
    assert code == 1 and 'kp' in out and 'Traceback' not in out, out
    code, out = NodeProcess('computed_torque_controller', []).wait(60)
    assert code == 1 and 'urdf_file' in out, out


def test_simulator_refuses_a_singular_plant_naming_the_joints():
    code, out = NodeProcess('plant_simulator', [
        '-p', f"urdf_file:={URDF_DIR / 'rover_arm.urdf'}"]).wait(60)
    assert code == 1 and 'joint3' in out and 'joint5' in out and 'armature' in out, out


def test_simulator_and_controller_load_the_rover_arm_with_their_armature_unwarned():
    """Their URDF's 'tiny inertia: add armature' warning came with the armature set."""
    rover = f"urdf_file:={URDF_DIR / 'rover_arm.urdf'}"
    sim = NodeProcess('plant_simulator', [
        '-p', rover, '-p', 'armature:=[0.001]', '-p', 'publish_rate:=100.0',
        '-p', 'command_topic:=/armature_test/commands',
        '-r', 'joint_states:=/armature_test/joint_states'])
    controller = NodeProcess('computed_torque_controller', [
        '-p', rover, '-p', 'armature:=[0.001]', '-r', 'joint_states:=/armature_test/nothing',
        '-p', 'command_topic:=/armature_test/controller_commands'])
    probe = Probe('armature_probe')
    try:
        states = probe.collect(JointState, '/armature_test/joint_states')
        assert wait_for(lambda: len(states) > 2, 60), sim.stop()
        assert wait_for(lambda: 'commanding' in controller.output(), 60), controller.stop()
    finally:
        probe.close()
        outputs = sim.stop() + controller.stop()
    # (not 'no warning at all': a loaded machine may starve the simulator, which says so)
    assert 'tiny inertia' not in outputs and 'moves no mass' not in outputs, outputs
    # one armature for all, or one per joint; any other count or a negative one is named
    for values, words in (('[0.001, 0.001]', ('armature', 'shape (5,)')),
                          ('[-0.001]', ('armature', '>= 0'))):
        for module in ('plant_simulator', 'computed_torque_controller'):
            code, out = NodeProcess(module, ['-p', rover, '-p', f'armature:={values}']).wait(60)
            assert code == 1 and all(w in out for w in words) and 'Traceback' not in out, out


def test_simulator_integrates_and_publishes_joint_states(model):
    sim = NodeProcess('plant_simulator', [
        '-p', f'urdf_file:={RP_ARM}', '-p', 'initial_positions:=[0.0, 0.5]',
        '-p', 'publish_rate:=100.0', '-p', 'command_topic:=/sim_test/commands',
        '-p', 'command_timeout:=600.0', '-r', 'joint_states:=/sim_test/joint_states'])
    probe = Probe('simulator_probe')
    try:
        states = probe.collect(JointState, '/sim_test/joint_states')
        cmd = probe.node.create_publisher(Float64MultiArray, '/sim_test/commands', 10)
        assert wait_for(lambda: len(states) > 5, 60), sim.stop()
        held = [tuple(s.position) for s in states]
        assert set(held) == {(0.0, 0.5)}, 'plant held still before the first command'
        # hold the arm with its gravity torque: it must stay (nearly) still while the
        # simulator publishes 50 more states
        tau = model.gravity_torque([0.0, 0.5])
        assert wait_for(lambda: cmd.get_subscription_count() > 0, WAIT)
        cmd.publish(Float64MultiArray(data=list(tau)))
        n0 = len(states)
        assert wait_for(lambda: len(states) > n0 + 50, WAIT)
        last = states[-1]
        assert list(last.name) == JOINTS
        np.testing.assert_allclose(last.position, [0.0, 0.5], atol=1e-6)
        # the command is applied: more than gravity on the prismatic joint pushes it out
        push = tau + [0.0, 5.0]
        assert model.forward_dynamics([0.0, 0.5], [0.0, 0.0], push)[1] > 0
        cmd.publish(Float64MultiArray(data=list(push)))
        assert wait_for(lambda: states[-1].position[1] > 0.5 + 1e-3, WAIT), states[-1]
        cmd.publish(Float64MultiArray(data=[1.0]))   # wrong length: rejected, sim keeps going
        n1 = len(states)
        # the rejection is waited for as an event: on a loaded machine the command may arrive
        # after the next 5 states (a loaded clean-clone run saw it so)
        assert wait_for(lambda: 'rejected command' in sim.output(), WAIT), sim.output()
        assert wait_for(lambda: len(states) > n1 + 5, WAIT) and sim.alive()
        # a command that is not finite is rejected too; the push stays applied
        time.sleep(THROTTLE_S * 1.1)    # one rejection is logged per THROTTLE_S: the gate is open
        said = sim.output().count('rejected command')
        cmd.publish(Float64MultiArray(data=[math.nan, 0.0]))
        assert wait_for(lambda: sim.output().count('rejected command') > said, WAIT), \
            sim.output()
        n2 = len(states)
        assert wait_for(lambda: len(states) > n2 + 5, WAIT) and sim.alive()
        assert all(list(s.effort) == list(push) for s in list(states)[n2:]), states[-1]
        assert all(math.isfinite(v) for s in list(states) for v in (*s.position, *s.velocity))
        # each state is stamped with its simulated instant (integration_rate 1 kHz: whole
        # milliseconds apart, whenever the message was built), never going backwards
        stamps = np.array([s.header.stamp.sec * 10 ** 9 + s.header.stamp.nanosec
                           for s in list(states)], dtype=np.int64)
        steps = np.diff(stamps) / 1e6
        assert np.all(steps >= 0) and np.all(np.abs(steps - np.round(steps)) < 1e-3), steps
    finally:
        probe.close()
        sim.stop()


def test_reference_generator_holds_t0_until_the_first_command_then_plays_its_path():
    """
    wait_for_commands (default): the t = 0 point until the first effort command, then the path.

    Counted, not timed: 20 points before any command are all the first waypoint at rest at
    t = 0; after one command on command_topic the points move along the quintic path, each
    at its time. A segment duration that is not > 0 is refused at start-up, by name.
    """
    waypoints = ['-p', 'waypoints:=[0.0, 0.5, 1.0, 0.8]']
    node = NodeProcess('reference_generator', [
        '-r', '__node:=waiting_generator', '-r', 'reference:=/waiting_test/reference',
        '-r', 'reference_trajectory:=/waiting_test/reference_trajectory',
        '-p', 'joints:=[theta1, d2]', '-p', 'mode:=quintic', *waypoints,
        '-p', 'segment_durations:=[2.0]', '-p', 'rate:=50.0',
        '-p', 'command_topic:=/waiting_test/commands'])
    probe = Probe('waiting_probe')
    try:
        points = probe.collect(JointTrajectoryPoint, '/waiting_test/reference')
        cmd = probe.node.create_publisher(Float64MultiArray, '/waiting_test/commands', 10)
        assert wait_for(lambda: len(points) >= 20 and cmd.get_subscription_count() > 0, 60), \
            node.output()
        before = list(points)
        for point in before:
            assert (point.time_from_start.sec, point.time_from_start.nanosec) == (0, 0), point
            assert list(point.positions) == [0.0, 0.5] and not any(point.velocities), point
        cmd.publish(Float64MultiArray(data=[0.0, 0.0]))

        def moving():
            return [p for p in list(points)[len(before):] if any(p.velocities)]
        assert wait_for(lambda: len(moving()) >= 5, WAIT), node.output()
        assert wait_for(lambda: 'first effort command seen: reference clock started'
                        in node.output(), WAIT), node.output()
        for point in moving():
            t = point.time_from_start.sec + 1e-9 * point.time_from_start.nanosec
            q, qd, qdd = quintic(min(t, 2.0), np.array([0.0, 0.5]), np.array([1.0, 0.8]), 2.0)
            np.testing.assert_allclose(point.positions, q, atol=1e-8)
            np.testing.assert_allclose(point.velocities, qd, atol=1e-8)
    finally:
        probe.close()
        node.stop()
    code, out = NodeProcess('reference_generator', [
        '-p', 'joints:=[theta1, d2]', '-p', 'mode:=quintic', *waypoints,
        '-p', 'segment_durations:=[0.0]']).wait(60)
    assert code == 1 and 'segment_durations must be > 0' in out and 'Traceback' not in out, out


def test_reference_generator_plays_an_excitation_file_by_joint_name(tmp_path):
    """
    Mode excitation: the points are the file's q, q', q'' at their time, in joints order.

    The stamped form (reference_trajectory) carries the same points by joint name, each stamped
    with the one instant the generator's clock started, after the node was launched.
    """
    from kron_dynamics.identification import FourierTrajectory
    excitation = FourierTrajectory(('d2', 'theta1'), [0.3, -0.2],
                                   [[0.1, -0.05, -0.05], [0.4, -0.3, -0.1]],
                                   [[0.2, -0.04, -0.04], [0.3, 0.15, -0.2]], 0.5, 4.0)
    path = tmp_path / 'excitation.yaml'
    excitation.save(path)
    launched = time.time()
    node = NodeProcess('reference_generator', [
        '-r', '__node:=excitation_generator', '-r', 'reference:=/excitation_test/reference',
        '-r', 'reference_trajectory:=/excitation_test/reference_trajectory',
        '-p', 'joints:=[theta1, d2]', '-p', 'mode:=excitation',
        '-p', f'excitation_file:={path}', '-p', 'loop:=true', '-p', 'rate:=50.0',
        '-p', 'wait_for_commands:=false'])
    probe = Probe('excitation_probe')
    try:
        points = probe.collect(JointTrajectoryPoint, '/excitation_test/reference')
        stamped = probe.collect(JointTrajectory, '/excitation_test/reference_trajectory')
        # past one duration (the loop has wrapped) and more than 100 moving points in: waited
        # for as events (a loaded machine delivers fewer of the 50 per second at first)

        def enough():
            seen = list(points)
            return (len(seen) > 0 and seen[-1].time_from_start.sec >= 5
                    and sum(1 for p in seen if any(p.velocities)) > 100 and len(stamped) > 100)
        assert wait_for(enough, 120), (len(points), len(stamped), node.output())
        checked = time.time()
        starts = set()
        for msg in list(stamped):
            assert list(msg.joint_names) == ['theta1', 'd2'] and len(msg.points) == 1, msg
            starts.add(msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec)
        assert len(starts) == 1, sorted(starts)     # wait_for_commands false: one clock start
        start = starts.pop() * 1e-9
        assert launched <= start <= checked, (launched, start, checked)
        moving = 0
        w = 2 * np.pi * 0.5 * np.arange(1, 4)
        for point in list(points) + [msg.points[0] for msg in list(stamped)]:
            t = point.time_from_start.sec + 1e-9 * point.time_from_start.nanosec
            assert start + t <= checked
            q, qd, qdd = excitation(t % 4.0)
            # time_from_start is truncated to the nanosecond: 2e-9 s times each quantity's
            # largest rate of change (its series' bound)
            for got, want, power in ((point.positions, q, 0), (point.velocities, qd, 1),
                                     (point.accelerations, qdd, 2)):
                rate = np.sum((np.abs(excitation.a) + np.abs(excitation.b)) * w ** power)
                np.testing.assert_allclose(got, want[[1, 0]], rtol=0, atol=2e-9 * rate)
            moving += bool(np.any(qd))
        assert moving > 100
    finally:
        probe.close()
        node.stop()
    code, out = NodeProcess('reference_generator', [
        '-p', 'joints:=[theta1, elbow]', '-p', 'mode:=excitation',
        '-p', f'excitation_file:={path}']).wait(60)
    assert code == 1 and "has ['elbow'] that it lacks" in out and "lacks ['d2']" in out, out
    assert 'Traceback' not in out, out
