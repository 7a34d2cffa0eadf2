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

"""computed_torque_controller and plant_simulator as real processes: law, limits, watchdog."""

import math
import time

import numpy as np
import pytest
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from conftest import URDF_DIR
from kron_dynamics import RobotModel
from ros_harness import NodeProcess, Probe, wait_for

RP_ARM = str(URDF_DIR / 'rp_arm.urdf')
JOINTS = ['theta1', 'd2']
KP, KD = np.array([50.0, 40.0]), np.array([10.0, 12.0])


@pytest.fixture(scope='module')
def model():
    return RobotModel.from_urdf_file(RP_ARM)


@pytest.fixture(scope='module')
def loop():
    node = NodeProcess('computed_torque_controller', [
        '-p', f'urdf_file:={RP_ARM}', '-p', 'kp:=[50.0, 40.0]', '-p', 'kd:=[10.0, 12.0]',
        '-p', 'state_timeout:=0.3', '-p', 'command_topic:=/test_effort/commands',
        '-p', 'max_reference_age:=0.0'])
    probe = Probe('controller_probe')
    commands = probe.collect(Float64MultiArray, '/test_effort/commands')
    states = probe.node.create_publisher(JointState, '/joint_states', 10)
    ref = probe.node.create_publisher(JointTrajectoryPoint,
                                      '/computed_torque_controller/reference', 10)
    traj = probe.node.create_publisher(JointTrajectory,
                                       '/computed_torque_controller/reference_trajectory', 10)
    assert wait_for(lambda: states.get_subscription_count() > 0 and
                    ref.get_subscription_count() > 0, 30), node.stop()
    yield node, probe, commands, states, ref, traj
    probe.close()
    print(node.stop())


def send_state(loop, q, qd, expect=True):
    _, _, commands, states, *_ = loop
    n0 = len(commands)
    states.publish(JointState(name=JOINTS, position=list(q), velocity=list(qd)))
    if expect:
        assert wait_for(lambda: len(commands) > n0, 5)
        return np.array(commands[-1].data)
    time.sleep(0.1)     # shorter than state_timeout: the watchdog stays quiet
    assert len(commands) == n0
    return None


def law(model, q, qd, q_d, qd_d, qdd_d):
    a = qdd_d + KD * (qd_d - qd) + KP * (q_d - q)
    return model.mass_matrix(q) @ a + model.coriolis_star(q) @ np.kron(qd, qd) + \
        model.gravity_torque(q)


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
    time.sleep(0.3)
    q, qd = np.array([0.48, 0.46]), np.array([0.1, 0.0])
    np.testing.assert_allclose(send_state(loop, q, qd), law(model, q, qd, q_d, qd_d, qdd_d),
                               rtol=1e-9)


def test_bad_references_are_refused_and_the_last_one_held(loop, model):
    _, _, _, _, ref, traj = loop
    q_d = np.array([0.1, 0.2])
    ref.publish(JointTrajectoryPoint(positions=list(q_d)))
    time.sleep(0.2)
    ref.publish(JointTrajectoryPoint(positions=[math.nan, 0.2]))
    ref.publish(JointTrajectoryPoint(positions=[0.1]))
    traj.publish(JointTrajectory(joint_names=['theta1', 'ghost'],
                                 points=[JointTrajectoryPoint(positions=[1.0, 1.0])]))
    time.sleep(0.3)
    q, qd = np.array([0.12, 0.18]), np.zeros(2)
    np.testing.assert_allclose(send_state(loop, q, qd), law(model, q, qd, q_d, 0, 0), rtol=1e-9)
    # a named trajectory in another order is accepted
    traj.publish(JointTrajectory(joint_names=['d2', 'theta1'],
                                 points=[JointTrajectoryPoint(positions=[0.3, -0.2])]))
    time.sleep(0.3)
    np.testing.assert_allclose(send_state(loop, q, qd),
                               law(model, q, qd, np.array([-0.2, 0.3]), 0, 0), rtol=1e-9)


def test_bad_states_give_no_command(loop):
    node, *_ = loop
    send_state(loop, [0.1, 0.1], [0.0, 0.0])
    send_state(loop, [math.nan, 0.1], [0.0, 0.0], expect=False)
    send_state(loop, [0.1, 0.1], [math.inf, 0.0], expect=False)
    assert node.alive()


def test_torques_are_clamped_to_effort_limits(loop, model):
    _, _, _, _, ref, _ = loop
    ref.publish(JointTrajectoryPoint(positions=[3.0, 0.9]))
    time.sleep(0.3)
    q, qd = np.array([-3.0, 0.0]), np.array([-10.0, -10.0])
    tau = send_state(loop, q, qd)
    limits = model.effort_limits
    assert np.all(np.abs(tau) <= limits * (1 + 1e-12))
    assert np.any(np.isclose(np.abs(tau), limits, rtol=1e-9)), 'some joint at its limit'
    # the feedback acceleration was scaled as a whole: tau = tau0 + s (tau_full - tau0)
    tau0 = model.inverse_dynamics(q, qd, np.zeros(2))
    v_max = np.array([model.joints[j].velocity for j in JOINTS])
    v = KD * (np.clip(KP / KD * (np.array([3.0, 0.9]) - q), -v_max, v_max) - qd)
    full = model.inverse_dynamics(q, qd, v)
    s = (tau - tau0) / (full - tau0)
    assert 0 < s[0] < 1 and np.isclose(s[0], s[1], rtol=1e-9), s


def test_watchdog_stops_and_resumes(loop, model):
    node, _, commands, *_ = loop
    q = np.array([0.2, 0.3])
    send_state(loop, q, [0.0, 0.0])
    n0 = len(commands)
    time.sleep(1.0)     # > state_timeout 0.3 s without joint states
    assert len(commands) == n0 + 1, 'exactly one command after the timeout'
    assert list(commands[-1].data) == [0.0, 0.0]
    time.sleep(0.5)
    assert len(commands) == n0 + 1, 'no commands while stale'
    tau = send_state(loop, q, [0.0, 0.0])
    assert np.any(tau != 0.0)
    assert node.alive()


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


def test_simulator_integrates_and_publishes_joint_states(model):
    sim = NodeProcess('plant_simulator', [
        '-p', f'urdf_file:={RP_ARM}', '-p', 'initial_positions:=[0.0, 0.5]',
        '-p', 'publish_rate:=100.0', '-p', 'command_topic:=/sim_test/commands',
        '-r', 'joint_states:=/sim_test/joint_states'])
    probe = Probe('simulator_probe')
    try:
        states = probe.collect(JointState, '/sim_test/joint_states')
        cmd = probe.node.create_publisher(Float64MultiArray, '/sim_test/commands', 10)
        assert wait_for(lambda: len(states) > 5, 60), sim.stop()
        held = [tuple(s.position) for s in states]
        assert set(held) == {(0.0, 0.5)}, 'plant held still before the first command'
        # hold the arm with its gravity torque: it must stay (nearly) still
        tau = model.gravity_torque([0.0, 0.5])
        assert wait_for(lambda: cmd.get_subscription_count() > 0, 10)
        n0 = len(states)
        t_end = time.monotonic() + 1.0
        while time.monotonic() < t_end:
            cmd.publish(Float64MultiArray(data=list(tau)))
            time.sleep(0.02)
        assert len(states) > n0 + 50
        last = states[-1]
        assert list(last.name) == JOINTS
        np.testing.assert_allclose(last.position, [0.0, 0.5], atol=1e-6)
        cmd.publish(Float64MultiArray(data=[1.0]))   # wrong length: rejected, sim keeps going
        assert sim.alive()
    finally:
        probe.close()
        sim.stop()
