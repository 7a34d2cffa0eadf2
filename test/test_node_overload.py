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
dynamics_node under model swaps, overload and absurd inputs (issue 24, findings 1-7).

Each test runs the node as a process and talks to it through real rclpy. Nothing waits a
fixed time to conclude that nothing happened: a message that must get no output is followed
by a marker that must, on the same topic (in order), or by the log line that says why.
Overload is made by stopping the node (SIGSTOP) while states are sent, so that a backlog is
certain on any machine; counts are bounded relative to what was sent, never by durations.
"""

import os
import re
import signal
import time

from builtin_interfaces.msg import Duration
from geometry_msgs.msg import WrenchStamped
from kron_dynamics_interfaces.srv import GetDynamics, GetKinematics
from nav_msgs.msg import Odometry
import numpy as np
import pytest
from rcl_interfaces.msg import Parameter as ParameterMsg, ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.qos import DurabilityPolicy, QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from conftest import URDF_DIR
from kron_dynamics import RobotModel
from kron_dynamics.nodes.throttled_logger import THROTTLE_S
from ros_harness import NodeProcess, odometry, Probe, stamped_state, wait_for

pytestmark = [pytest.mark.ros, pytest.mark.slow]   # node processes, rclpy

STACKER = URDF_DIR / 'stacker.urdf'
RP_ARM = URDF_DIR / 'rp_arm.urdf'
LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
UNIT = [0.0, 0.0, 0.0, 1.0]


def solo12_floating_text() -> str:
    """Return example-robot-data's solo12 with a floating joint from a world link."""
    from pinocchio_oracle import robots_dir
    directory = robots_dir()
    assert directory is not None, 'example-robot-data (requirements.txt) is not installed'
    text = (directory / 'solo_description/robots/solo12.urdf').read_text()
    return re.sub(r'(<robot[^>]*>)', r'\1<link name="world"/><joint name="root_joint" '
                  r'type="floating"><parent link="world"/><child link="base_link"/></joint>',
                  text, count=1)


class Graph:
    """One dynamics_node process (its own topic names) and a probe with its endpoints."""

    def __init__(self, name: str, args=()):
        self.name = name
        self.node = NodeProcess('dynamics_node', [
            '-r', f'__node:={name}', '-r', f'/robot_description:=/{name}/robot_description',
            '-r', f'joint_states:=/{name}/joint_states', *args])
        self.probe = Probe(f'{name}_probe')
        node = self.probe.node
        self.stamped = self.probe.collect(JointState, f'/{name}/bias_torque_stamped', 100000)
        self.gravity_stamped = self.probe.collect(JointState, f'/{name}/gravity_torque_stamped',
                                                  100000)
        self.ff = self.probe.collect(Float64MultiArray, f'/{name}/feedforward_torque', 100000)
        self.states = node.create_publisher(JointState, f'/{name}/joint_states', 10000)
        self.description = node.create_publisher(String, f'/{name}/robot_description', LATCHED)
        self.wrench = node.create_publisher(WrenchStamped, f'/{name}/external_wrench', 10)
        self.odom = node.create_publisher(Odometry, f'/{name}/odometry', 10)
        self.trajectory = node.create_publisher(JointTrajectory, f'/{name}/reference_trajectory',
                                                10)
        self.reference = node.create_publisher(JointTrajectoryPoint, f'/{name}/reference', 10)
        assert wait_for(lambda: self.states.get_subscription_count() > 0
                        and self.wrench.get_subscription_count() > 0
                        and self.odom.get_subscription_count() > 0
                        and self.trajectory.get_subscription_count() > 0
                        and self.node.alive(), 60), self.node.stop()

    def log(self) -> str:
        """Return what the node has written so far."""
        return self.node.output()

    def answer(self, names, q, qd=(), timeout: float = 30.0) -> JointState:
        """Publish a state stamped now and return its stamped bias torque."""
        msg = stamped_state(names, q, qd)
        stamp = (msg.header.stamp.sec, msg.header.stamp.nanosec)
        self.states.publish(msg)
        assert wait_for(lambda: any(stamp_of(m) == stamp for m in self.stamped[-5:]),
                        timeout), self.log()
        return next(m for m in reversed(self.stamped) if stamp_of(m) == stamp)

    def set(self, name: str, value: ParameterValue):
        """Set one parameter through the node's service; return the SetParametersResult."""
        request = SetParameters.Request(parameters=[ParameterMsg(name=name, value=value)])
        return self.probe.call(SetParameters, f'/{self.name}/set_parameters',
                               request).results[0]

    def close(self) -> str:
        """Stop the probe and the node; return the node's output."""
        self.probe.close()
        return self.node.stop()


def stamp_of(msg) -> tuple:
    """Return (sec, nanosec) of a stamped message."""
    return msg.header.stamp.sec, msg.header.stamp.nanosec


def double(value: float) -> ParameterValue:
    """Return a double ParameterValue."""
    return ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=value)


def string(value: str) -> ParameterValue:
    """Return a string ParameterValue."""
    return ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value)


@pytest.fixture
def graph(request):
    graphs = []

    def make(name, args=()):
        graphs.append(Graph(name, args))
        return graphs[-1]
    yield make
    for g in graphs:
        print(g.close())


# ------------------------------------------------------------------ finding 1: model swaps
def test_a_model_swap_drops_the_old_models_trajectory_and_wrench(graph):
    """
    Finding 1: after a swap, the old robot's queued feedforward and wrench were still used.

    The stacker (3 joints) from /robot_description, a 50,000-point trajectory queued and a
    wrench on link1; then rp_arm (2 joints, also with a link1) replaces it. A reference of
    rp_arm marks the swap on the feedforward topic: after its output no stacker output may
    come, and rp_arm's bias torque is its own, without the stacker's wrench.
    """
    g = graph('swap_fixed')
    stacker = RobotModel.from_urdf_file(STACKER)
    rp_arm = RobotModel.from_urdf_file(RP_ARM)
    g.description.publish(String(data=STACKER.read_text()))
    assert wait_for(lambda: "model 'stacker'" in g.log(), 60), g.log()
    q = np.array([0.3, 0.2, 0.1])
    wrench = WrenchStamped()
    wrench.header.frame_id = 'link1'
    wrench.wrench.force.x, wrench.wrench.force.y, wrench.wrench.force.z = 80.0, -60.0, -100.0
    # torque.z turns rp_arm's theta1 (about link1's z): a wrench kept across the swap would
    # change rp_arm's bias torque
    wrench.wrench.torque.x, wrench.wrench.torque.z = 30.0, 20.0
    for _ in range(60):        # until the wrench is applied (its subscription matched)
        g.wrench.publish(wrench)
        out = g.answer(stacker.joint_names, q)
        if not np.allclose(out.effort, stacker.bias_torque(q, np.zeros(3)), rtol=0, atol=1e-6):
            break
    else:
        raise AssertionError(f'the wrench was never applied:\n{g.log()}')
    points = 50_000
    trajectory = JointTrajectory(joint_names=list(stacker.joint_names))
    trajectory.points = [JointTrajectoryPoint(positions=[0.001 * k, 0.1, 0.2])
                         for k in range(points)]
    g.trajectory.publish(trajectory)
    assert wait_for(lambda: len(g.ff) > 0, 60), g.log()
    g.description.publish(String(data=RP_ARM.read_text()))
    assert wait_for(lambda: "model 'rp_arm'" in g.log(), 60), g.log()
    line = next(x for x in g.log().splitlines() if "model 'rp_arm'" in x)
    assert 'queued reference_trajectory points' in line and "wrench on 'link1'" in line, line
    marker = np.array([0.4, 0.05])
    for _ in range(60):
        g.reference.publish(JointTrajectoryPoint(positions=list(marker)))
        if wait_for(lambda: any(len(m.data) == 2 for m in g.ff), 1.0):
            break
    sizes = [len(m.data) for m in g.ff]
    first_new = sizes.index(2)
    assert 3 not in sizes[first_new:], 'a stacker feedforward after the swap'
    assert sizes.count(3) < points, 'the whole stacker trajectory came out'
    np.testing.assert_allclose(g.ff[first_new].data, rp_arm.gravity_torque(marker), atol=1e-9)
    out = g.answer(rp_arm.joint_names, marker)
    np.testing.assert_allclose(out.effort, rp_arm.bias_torque(marker, np.zeros(2)), rtol=1e-12,
                               atol=1e-9)
    # a trajectory of rp_arm restarts the chunks: its own points come out, none of the stacker's
    # (answers to markers resent above may still be on their way: told apart by value)
    n = len(g.ff)
    g.trajectory.publish(JointTrajectory(joint_names=list(rp_arm.joint_names), points=[
        JointTrajectoryPoint(positions=[0.1 * k, 0.05]) for k in range(3)]))
    marker_tau = rp_arm.gravity_torque(marker)

    def points_out():
        return [m.data for m in list(g.ff)[n:]
                if len(m.data) == 2 and not np.allclose(m.data, marker_tau, rtol=0, atol=1e-9)]
    assert wait_for(lambda: len(points_out()) >= 3
                    or any(len(m.data) == 3 for m in list(g.ff)[first_new:]), 60), g.log()
    assert 3 not in [len(m.data) for m in g.ff[first_new:]], 'a stacker feedforward after all'
    np.testing.assert_allclose(points_out(), [rp_arm.gravity_torque(np.array([0.1 * k, 0.05]))
                                              for k in range(3)], atol=1e-9)


def test_a_swap_to_a_moving_base_starts_without_the_old_odometry(graph):
    """
    Finding 1: odometry received while a fixed model was active was kept, never checked.

    Now odometry is not kept on a fixed base; after the swap to solo12 on a floating base,
    a joint state waits for odometry of its own, which is then checked against base_link.
    """
    g = graph('swap_moving')
    g.description.publish(String(data=STACKER.read_text()))
    assert wait_for(lambda: "model 'stacker'" in g.log(), 60), g.log()
    g.odom.publish(odometry([0.0, 0.0, 0.3], UNIT, [0.0] * 3, [0.0] * 3, child='FL_FOOT'))
    assert wait_for(lambda: 'the active model has a fixed base' in g.log(), 30), g.log()
    text = solo12_floating_text()
    solo = RobotModel.from_urdf_string(text)
    g.description.publish(String(data=text))
    assert wait_for(lambda: "model 'solo'" in g.log(), 60), g.log()
    u = np.linspace(-0.5, 0.5, solo.n)
    g.states.publish(stamped_state(solo.joint_names, u))
    assert wait_for(lambda: 'no odometry yet' in g.log(), 30), g.log()
    g.odom.publish(odometry([0.0, 0.0, 0.3], UNIT, [0.0] * 3, [0.0] * 3, child='FL_FOOT'))
    assert wait_for(lambda: "child_frame_id 'FL_FOOT' is not the base link" in g.log(), 30)
    base = ([0.1, 0.2, 0.3], UNIT, [0.1, 0.0, 0.0], [0.0, 0.0, 0.2])
    for _ in range(60):
        g.odom.publish(odometry(*base))
        time.sleep(0.05)       # two topics, two queues: odometry first
        before = len(g.stamped)
        g.states.publish(stamped_state(solo.joint_names, u))
        if wait_for(lambda: len(g.stamped) > before, 1.0):
            break
    qb, vb = solo.base_state(*base)
    out = g.stamped[-1]
    assert tuple(out.name) == solo.velocity_names
    np.testing.assert_allclose(out.effort, solo.bias_torque(np.concatenate([qb, u]),
                                                            np.concatenate([vb, 0 * u])),
                               rtol=1e-10, atol=1e-9)
    # the same URDF again is a new model too: the odometry received for the one before is
    # dropped (said so), and a joint state waits for odometry of its own again
    g.description.publish(String(data=text))
    assert wait_for(lambda: g.log().count("model 'solo'") >= 2, 60), g.log()
    line = [x for x in g.log().splitlines() if "model 'solo'" in x][-1]
    assert 'dropped what belonged to the previous model: the odometry' in line, line
    time.sleep(THROTTLE_S * 1.1)    # one 'no odometry yet' is logged per THROTTLE_S
    said, before = g.log().count('no odometry yet'), len(g.stamped)
    g.states.publish(stamped_state(solo.joint_names, u))
    assert wait_for(lambda: g.log().count('no odometry yet') > said, 30), g.log()
    assert len(g.stamped) == before


# ------------------------------------------------------------------ finding 2: overload
def stalled_burst(g, model, count: int):
    """Stop the node, send count states, let it go on; return (sent messages, their q)."""
    q0 = np.array([0.2, 0.1, 0.3])
    g.answer(model.joint_names, q0)        # matched and warm
    sent, qs = [], []
    os.kill(g.node.proc.pid, signal.SIGSTOP)
    try:
        for k in range(count):
            q = q0 + 1e-3 * k
            msg = stamped_state(model.joint_names, q)
            g.states.publish(msg)
            sent.append(msg)
            qs.append(q)
    finally:
        os.kill(g.node.proc.pid, signal.SIGCONT)
    last = stamp_of(sent[-1])
    assert wait_for(lambda: any(stamp_of(m) == last for m in g.stamped[-5:]), 60), g.log()
    return sent, qs


def answered(g, sent, qs, model):
    """Return the indices of sent states with a stamped output; check each output's values."""
    index = {stamp_of(m): k for k, m in enumerate(sent)}
    out = [(index[stamp_of(m)], m) for m in g.stamped if stamp_of(m) in index]
    for k, m in out:
        np.testing.assert_allclose(m.effort, model.bias_torque(qs[k], np.zeros(3)),
                                   rtol=1e-12, atol=1e-9)
    return [k for k, _ in out]


def test_a_backlog_is_answered_by_its_newest_state_and_the_drops_are_logged(graph):
    """Finding 2, state_policy newest (the default): the newest state is answered, at once."""
    g = graph('overload_newest', ['-p', f'urdf_file:={STACKER}'])
    model = RobotModel.from_urdf_file(STACKER)
    sent, qs = stalled_burst(g, model, 400)
    ks = answered(g, sent, qs, model)
    assert ks[-1] == len(sent) - 1 and ks == sorted(set(ks))
    assert len(ks) < len(sent) // 2, f'{len(ks)} of {len(sent)} answered: no backlog dropped'
    assert wait_for(lambda: 'state_policy newest' in g.log(), 30), g.log()
    report = re.search(r'dropped (\d+) of (\d+) states that waited', g.log())
    assert report and 0 < int(report.group(1)) < int(report.group(2)), g.log()
    assert all(tuple(m.name) == model.joint_names for m in g.stamped)


def test_with_state_policy_all_every_state_of_a_backlog_is_answered_in_order(graph):
    """Finding 2, state_policy all: every state answered (late), the backlog reported."""
    g = graph('overload_all', ['-p', f'urdf_file:={STACKER}'])
    model = RobotModel.from_urdf_file(STACKER)
    assert g.set('state_policy', string('all')).successful
    sent, qs = stalled_burst(g, model, 400)
    assert answered(g, sent, qs, model) == list(range(len(sent)))
    gravity = {stamp_of(m) for m in g.gravity_stamped}
    assert all(stamp_of(m) in gravity for m in sent)
    assert wait_for(lambda: 'state_policy all' in g.log(), 30), g.log()
    refused = g.set('state_policy', string('oldest'))
    assert not refused.successful and "['newest', 'all']" in refused.reason


def test_a_10_khz_burst_is_answered_by_the_newest_state_with_its_stamp(graph):
    """
    Finding 2: a 10 kHz stream; the stamped output says which state each output answers.

    Every output carries the stamp of the state it answers and that state's values, in the
    order sent; the last state sent is answered. The age of each output in states (how many
    were sent after the one it answers, when it came) is measured; with 'newest', a backlog
    is cut, so the oldest answer is younger than the burst. If any state was dropped, the
    node said so with its drop rate.
    """
    g = graph('burst', ['-p', f'urdf_file:={STACKER}'])
    model = RobotModel.from_urdf_file(STACKER)
    g.answer(model.joint_names, np.zeros(3))
    arrivals = []
    g.probe.node.create_subscription(
        JointState, f'/{g.name}/bias_torque_stamped',
        lambda m: arrivals.append((stamp_of(m), sent_count[0])), 100000)
    time.sleep(1.0)   # not a conclusion: the new subscription matches (the count checks it)
    sent, qs, sent_count = [], [], [0]
    q0 = np.array([0.1, 0.2, 0.3])
    period = 1e-4
    start = time.perf_counter()
    for k in range(5000):
        while time.perf_counter() < start + k * period:
            pass
        q = q0 + 1e-4 * k
        msg = stamped_state(model.joint_names, q)
        g.states.publish(msg)
        sent.append(msg)
        qs.append(q)
        sent_count[0] = k + 1
    last = stamp_of(sent[-1])
    assert wait_for(lambda: any(s == last for s, _ in arrivals[-5:]), 60), g.log()
    ks = answered(g, sent, qs, model)
    assert ks == sorted(set(ks)) and ks[-1] == len(sent) - 1
    index = {stamp_of(m): k for k, m in enumerate(sent)}
    ages = [count - 1 - index[s] for s, count in arrivals if s in index]
    assert len(ages) == len(ks) and min(ages) >= -1
    if len(ks) < len(sent):
        assert wait_for(lambda: re.search(r'dropped \d+ of \d+ states', g.log()), 30), g.log()


# ------------------------------------------------------------------ finding 3: absurd inputs
def test_absurd_wrenches_and_outputs_are_refused_by_name(graph):
    """Finding 3: a 1e308 N force blocked every output, 1e300 N m gave a bias of 4e301."""
    g = graph('absurd', ['-p', f'urdf_file:={STACKER}'])
    model = RobotModel.from_urdf_file(STACKER)
    q = np.array([0.3, 0.2, 0.1])
    plain = model.bias_torque(q, np.zeros(3))
    g.answer(model.joint_names, q)
    for field, value, reason in (('force', 1e308, 'beyond max_wrench_force 1e+06 N'),
                                 ('torque', 1e300, 'beyond max_wrench_torque 1e+06 N m')):
        wrench = WrenchStamped()
        wrench.header.frame_id = 'link3'
        getattr(wrench.wrench, field).x = value
        g.wrench.publish(wrench)
        assert wait_for(lambda: reason in g.log(), 30), g.log()
        np.testing.assert_allclose(g.answer(model.joint_names, q).effort, plain, rtol=1e-12,
                                   atol=1e-9)
    # an output beyond max_output is withheld, by name; the next state is answered
    assert g.set('max_output', double(1.0)).successful
    before = len(g.stamped)
    g.states.publish(stamped_state(model.joint_names, q))
    assert wait_for(lambda: 'bias torque beyond max_output 1' in g.log(), 30), g.log()
    # so are a reference's and a trajectory's feedforward (their log lines, nothing on the
    # topic) and a service's answer (success false, saying why)
    ff_before = len(g.ff)
    g.reference.publish(JointTrajectoryPoint(positions=list(q)))
    g.trajectory.publish(JointTrajectory(joint_names=list(model.joint_names), points=[
        JointTrajectoryPoint(positions=list(q), time_from_start=Duration(sec=k))
        for k in range(2)]))
    for reason in ('rejected: reference: feedforward torque beyond max_output 1',
                   'rejected: reference_trajectory point 0: feedforward torque beyond '
                   'max_output 1'):
        assert wait_for(lambda: reason in g.log(), 30), g.log()
    res = g.probe.call(GetDynamics, f'/{g.name}/get_dynamics',
                       GetDynamics.Request(state=stamped_state(model.joint_names, q)))
    assert not res.success and 'dynamics beyond max_output 1 ' in res.message, res.message
    assert g.set('max_output', double(1e12)).successful
    g.answer(model.joint_names, q)
    assert len(g.stamped) == before + 1
    g.reference.publish(JointTrajectoryPoint(positions=list(q)))     # the marker
    assert wait_for(lambda: len(g.ff) > ff_before, 30), g.log()
    np.testing.assert_allclose(g.ff[-1].data, model.gravity_torque(q), rtol=1e-12, atol=1e-9)
    assert len(g.ff) == ff_before + 1, 'a feedforward beyond max_output was published'
    refused = g.set('max_wrench_force', double(-1.0))
    assert not refused.successful and 'max_wrench_force must be a finite number > 0' \
        in refused.reason
    # overflow inside the dynamics: said once, by name, and no NumPy warning on stderr
    g.states.publish(stamped_state(model.joint_names, [1e300, 0.1, 0.2]))
    assert wait_for(lambda: 'not finite at this state' in g.log(), 30), g.log()
    res = g.probe.call(GetDynamics, f'/{g.name}/get_dynamics', GetDynamics.Request(
        state=stamped_state(model.joint_names, [1e300, 0.1, 0.2])))
    assert not res.success and 'dynamics not finite at this state' in res.message, res.message
    g.answer(model.joint_names, q)
    assert 'RuntimeWarning' not in g.log() and 'Traceback' not in g.log(), g.log()


def test_publish_stamped_and_external_wrench_timeout_apply_when_set_at_run_time(graph):
    """
    A setting the node accepts is one it applies: publish_stamped and external_wrench_timeout.

    With publish_stamped false a state gets its plain bias torque and no stamped one (had it
    one, it would come before the next state's, on the same topic). A wrench sent once under
    external_wrench_timeout 0.3 s (set at run time; 0, never, by default) is applied, then
    dropped, saying so.
    """
    g = graph('runtime_settings', ['-p', f'urdf_file:={STACKER}'])
    model = RobotModel.from_urdf_file(STACKER)
    q = np.array([0.0, 0.4, 0.3])
    plain = g.probe.collect(Float64MultiArray, f'/{g.name}/bias_torque', 100000)
    for _ in range(60):        # until the plain output's subscription has matched
        g.answer(model.joint_names, q)
        if wait_for(lambda: len(plain) > 0, 1.0):
            break
    off = ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=False)
    assert g.set('publish_stamped', off).successful
    n = len(plain)
    quiet = stamped_state(model.joint_names, q + 0.1)
    g.states.publish(quiet)
    quiet_tau = model.bias_torque(q + 0.1, np.zeros(3))
    # (the plain answers of the states above may still be on their way: told apart by value)
    assert wait_for(lambda: any(np.allclose(m.data, quiet_tau, rtol=1e-12, atol=1e-9)
                                for m in list(plain)[n:]), 30), g.log()
    on = ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=True)
    assert g.set('publish_stamped', on).successful
    g.answer(model.joint_names, q)
    assert stamp_of(quiet) not in [stamp_of(m) for m in g.stamped], 'stamped while off'
    # the wrench: applied while it keeps coming, dropped 0.3 s after the last one
    assert g.set('external_wrench_timeout', double(0.3)).successful
    wrench = WrenchStamped()
    wrench.header.frame_id = 'link3'
    wrench.wrench.force.z = -5e4
    F = np.array([0.0, 0.0, -5e4, 0.0, 0.0, 0.0])
    free = model.bias_torque(q, np.zeros(3))
    loaded = free - model.jacobian(q, 'link3', frame='local').T @ F

    def seen(expected, resend_wrench):
        def check():
            if resend_wrench:
                g.wrench.publish(wrench)
            return np.allclose(g.answer(model.joint_names, q).effort, expected, rtol=1e-9)
        return wait_for(check, 30, period=0.05)
    assert seen(loaded, True), g.log()
    assert seen(free, False), g.log()
    assert wait_for(lambda: "the wrench on 'link3' is no longer applied" in g.log(), 30), g.log()


# ------------------------------------------------------------------ findings 3-5: moving base
def test_odometry_is_checked_as_joint_states_and_requests_are(graph, tmp_path):
    """
    Findings 3, 4, 5, 6: odometry order, future stamps, absurd values; services the same.

    Odometry stamped t then t - 0.3 s: the second is refused and the states go on with the
    first; a stamp 100 s ahead is refused; a twist of 1e200 m/s and a position of 1e300 m
    are refused by name, as are non-finite fields (one line naming them). get_kinematics
    refuses a request.base whose twist is not in the base frame, as the topic does.
    """
    text = solo12_floating_text()
    urdf = tmp_path / 'solo12_floating.urdf'
    urdf.write_text(text)
    g = graph('odometry_checks', ['-p', f'urdf_file:={urdf}'])
    solo = RobotModel.from_urdf_string(text)
    u = np.linspace(-0.4, 0.4, solo.n)
    good = ([0.1, 0.2, 0.3], UNIT, [0.1, 0.0, 0.0], [0.0, 0.0, 0.2])
    base_q, base_v = solo.base_state(*good)
    expected = solo.bias_torque(np.concatenate([base_q, u]), np.concatenate([base_v, 0 * u]))

    def answer_after(t):
        """Answer a state stamped just after the good odometry stamped t (resent if needed)."""
        for attempt in range(60):
            g.odom.publish(odometry(*good, stamp_ns=t))
            time.sleep(0.05)       # two topics, two queues: the odometry first, mostly
            before = len(g.stamped)
            stamp = t + 1_000_000 + 1000 * attempt
            g.states.publish(stamped_state(solo.joint_names, u, stamp_ns=stamp))
            if wait_for(lambda: len(g.stamped) > before, 1.0):
                out = g.stamped[-1]
                assert stamp_of(out) == divmod(stamp, 1_000_000_000)
                np.testing.assert_allclose(out.effort, expected, rtol=1e-10, atol=1e-9)
                return
        raise AssertionError(g.log())

    # odometry_timeout set at run time applies: a state 0.5 s after the odometry is served
    # under 1 s (the default 0.1 s refuses it), and refused, saying so, under 0.2 s. The
    # stamps are in the past (a stamp ahead of the node's clock is refused) and the first
    # of the test's (each stream's stamps must go forward)
    assert g.set('odometry_timeout', double(1.0)).successful
    t0 = time.time_ns() - 600_000_000
    for attempt in range(60):
        g.odom.publish(odometry(*good, stamp_ns=t0))
        time.sleep(0.05)           # two topics, two queues: the odometry first, mostly
        before = len(g.stamped)
        g.states.publish(stamped_state(solo.joint_names, u,
                                       stamp_ns=t0 + 500_000_000 + 1000 * attempt))
        if wait_for(lambda: len(g.stamped) > before, 1.0):
            break
    else:
        raise AssertionError(g.log())
    np.testing.assert_allclose(g.stamped[-1].effort, expected, rtol=1e-10, atol=1e-9)
    assert g.set('odometry_timeout', double(0.2)).successful
    t1 = time.time_ns() - 600_000_000
    g.odom.publish(odometry(*good, stamp_ns=t1))
    g.states.publish(stamped_state(solo.joint_names, u, stamp_ns=t1 + 500_000_000))
    assert wait_for(lambda: '(odometry_timeout 0.2 s)' in g.log(), 30), g.log()
    assert g.set('odometry_timeout', double(0.1)).successful
    answer_after(time.time_ns())
    nan, inf = float('nan'), float('inf')
    cases = (
        (lambda t: odometry([5.0, 0, 0], UNIT, [0] * 3, [0] * 3, stamp_ns=t - 300_000_000),
         'odometry: stamp', 'is older than the previous'),
        (lambda t: odometry([5.0, 0, 0], UNIT, [0] * 3, [0] * 3, stamp_ns=t + 100 * 10**9),
         'odometry: stamp', "ahead of this node's clock"),
        (lambda t: odometry([5.0, 0, 0], UNIT, [1e200, 0, 0], [0] * 3, stamp_ns=t + 2000),
         'linear twist 1e+200 m/s is beyond max_base_linear_velocity 1000 m/s', ''),
        (lambda t: odometry([1e300, 0, 0], UNIT, [0] * 3, [0] * 3, stamp_ns=t + 2000),
         'position 1e+300 m is beyond max_base_position 10000 m', ''),
        (lambda t: odometry([nan, 0, 0], UNIT, [0] * 3, [0, inf, 0], stamp_ns=t + 2000),
         'odometry: not finite: pose.position.x, twist.angular.y; message ignored', ''),
    )
    for bad, reason, detail in cases:
        t = time.time_ns()
        g.odom.publish(odometry(*good, stamp_ns=t))
        g.odom.publish(bad(t))
        assert wait_for(lambda: any(reason in x and detail in x for x in g.log().splitlines()),
                        30), g.log()
        answer_after(t)          # the states go on with the good odometry's base
    assert 'array(' not in g.log()
    request = GetKinematics.Request(link='FL_FOOT')
    request.state = stamped_state(solo.joint_names, u)
    request.base = odometry(*good, child='FL_FOOT')
    res = g.probe.call(GetKinematics, f'/{g.name}/get_kinematics', request)
    assert not res.success and "child_frame_id 'FL_FOOT' is not the base link" in res.message
    request.base = odometry([1e300, 0, 0], UNIT, [0] * 3, [0] * 3)
    res = g.probe.call(GetKinematics, f'/{g.name}/get_kinematics', request)
    assert not res.success and 'beyond max_base_position' in res.message
    request.base = odometry(*good)
    assert g.probe.call(GetKinematics, f'/{g.name}/get_kinematics', request).success


def test_a_fixed_base_refuses_base_fields_in_requests(graph):
    """Finding 5: on a fixed base a base_acceleration of length 5 was ignored."""
    g = graph('fixed_requests', ['-p', f'urdf_file:={STACKER}'])
    model = RobotModel.from_urdf_file(STACKER)
    request = GetDynamics.Request(state=stamped_state(model.joint_names, [0.1, 0.2, 0.3]),
                                  base_acceleration=[0.0] * 5)
    res = g.probe.call(GetDynamics, f'/{g.name}/get_dynamics', request)
    assert not res.success and 'request.base_acceleration' in res.message \
        and 'fixed base' in res.message
    request = GetDynamics.Request(state=stamped_state(model.joint_names, [0.1, 0.2, 0.3]),
                                  base=odometry([1.0, 0, 0], UNIT, [0] * 3, [0] * 3))
    res = g.probe.call(GetDynamics, f'/{g.name}/get_dynamics', request)
    assert not res.success and 'request.base' in res.message and 'fixed base' in res.message
    request = GetDynamics.Request(state=stamped_state(model.joint_names, [0.1, 0.2, 0.3]))
    assert g.probe.call(GetDynamics, f'/{g.name}/get_dynamics', request).success


# ------------------------------------------------------------------ findings 6, 7: parameters
def test_parameter_types_are_said_in_words_and_empty_lists_are_taken(graph):
    """
    Findings 6 and 7: wrong types in words, an empty list taken.

    rclpy refused 'abc' for a double with its type codes ('3', '4'), and an empty list,
    which ``ros2 param set name []`` sends as an empty bool array.
    """
    g = graph('parameter_types', ['-p', f'urdf_file:={STACKER}', '-p',
                                  'joints:=[q3_luff, q2_slew, q1_travel]'])
    res = g.set('odometry_timeout', string('abc'))
    assert not res.successful
    assert res.reason == ("parameter odometry_timeout must be a number with a decimal point, "
                          "got 'abc' (a string)"), res.reason
    # an integer for a double is the number meant
    assert g.set('odometry_timeout', ParameterValue(type=ParameterType.PARAMETER_INTEGER,
                                                    integer_value=2)).successful
    # [] as the CLI sends it: back to the model's own joint order
    empty = ParameterValue(type=ParameterType.PARAMETER_BOOL_ARRAY, bool_array_value=[])
    assert g.set('joints', empty).successful
    got = g.probe.call(GetParameters, f'/{g.name}/get_parameters',
                       GetParameters.Request(names=['joints', 'odometry_timeout'])).values
    assert got[0].type == ParameterType.PARAMETER_STRING_ARRAY and not got[0].string_array_value
    assert got[1].type == ParameterType.PARAMETER_DOUBLE and got[1].double_value == 2.0
    model = RobotModel.from_urdf_file(STACKER)
    assert tuple(g.answer(model.joint_names, [0.1, 0.2, 0.3]).name) == model.joint_names


def test_the_demo_says_once_why_the_rover_arms_m_is_singular(capsys, caplog):
    """Finding 6: the demo printed the loader's two warnings for its own machine twice."""
    from kron_dynamics.demo.run import load_machine
    model, note = load_machine(URDF_DIR / 'rover_arm.urdf')
    assert model.n == 5
    assert note.count('\n') == 0 and 'joints joint3, joint5' in note and 'armature' in note
    assert not caplog.records and not capsys.readouterr().err
    _, note = load_machine(STACKER)
    assert note == ''


def test_the_simulator_says_an_overflow_is_one(tmp_path):
    """
    Finding 6: an overflow inside the simulator's step was reported as a singular M.

    The RP arm with effort limits of 1e308 (so that the command is not saturated) and a
    command of 1e300: the RK4 stages overflow. The log says so, with the start state's
    acceleration, and the plant is held (its joint states stay finite).
    """
    text = RP_ARM.read_text()
    text = re.sub(r'effort="[^"]*"', 'effort="1e308"', text)
    urdf = tmp_path / 'rp_arm_unlimited.urdf'
    urdf.write_text(text)
    node = NodeProcess('plant_simulator', ['-r', '__node:=overflow_sim', '-p',
                                           f'urdf_file:={urdf}', '-p',
                                           'command_topic:=/overflow_sim/commands',
                                           '-r', 'joint_states:=/overflow_sim/joint_states'])
    probe = Probe('overflow_sim_probe')
    try:
        states = probe.collect(JointState, '/overflow_sim/joint_states', 10000)
        commands = probe.node.create_publisher(Float64MultiArray, '/overflow_sim/commands', 10)
        assert wait_for(lambda: commands.get_subscription_count() > 0 and states, 60), \
            node.output()
        for _ in range(60):
            commands.publish(Float64MultiArray(data=[1e300, -1e300]))
            if wait_for(lambda: 'integration failed' in node.output(), 1.0):
                break
        line = next(x for x in node.output().splitlines() if 'integration failed' in x)
        assert 'the state overflowed within the step' in line and 'singular' not in line, line
        count = len(states)
        assert wait_for(lambda: len(states) > count + 5, 30)
        assert all(np.all(np.isfinite(m.position)) and np.all(np.isfinite(m.velocity))
                   for m in states)
    finally:
        probe.close()
        print(node.stop())
