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

"""Real rclpy test harness: nodes under test run as processes; a probe node talks to them."""

import os
import subprocess
import sys
import threading
import time

import rclpy
from rclpy.executors import SingleThreadedExecutor

from kron_dynamics.demo.processes import output, start_logged, stop

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# dynamics_node answers every joint state: for tests that publish states in a row and match
# each with its output or its refusal (the default, state_policy newest, may answer only the
# last of states that arrive together; test_node_overload tests that policy)
EVERY_STATE = ['-p', 'state_policy:=all']
# the controller's state_timeout while its watchdog is not under test: no delay of a loaded
# machine between a state and the test's look at its command lets the watchdog's zero come
# first; a test of the watchdog sets its short timeout at run time, where it needs it
LONG_TIMEOUT = 600.0


def isolated_env() -> dict:
    """Return the environment with a random ROS domain restricted to this machine."""
    env = dict(os.environ)
    env['ROS_DOMAIN_ID'] = os.environ['ROS_DOMAIN_ID']
    env['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    env['PYTHONUNBUFFERED'] = '1'
    return env


class NodeProcess:
    """A node module of kron_dynamics run as a process with ROS arguments (after prefix)."""

    def __init__(self, module: str, ros_args: list, prefix: tuple = ()):
        cmd = [*prefix, sys.executable, '-m', f'kron_dynamics.nodes.{module}', '--ros-args',
               *ros_args]
        self.proc = start_logged(cmd, cwd=REPO, env=isolated_env())

    def alive(self) -> bool:
        """Return True while the process runs."""
        return self.proc.poll() is None

    def output(self) -> str:
        """Return what the process has written so far."""
        return output(self.proc)

    def stop(self, timeout: float = 10.0) -> str:
        """Interrupt the process; return its output."""
        return stop(self.proc, timeout)

    def wait(self, timeout: float = 30.0):
        """
        Wait for the process to exit; return (returncode, output).

        Still running after timeout (a start-up refusal that never came): stopped, so that it
        does not go on publishing into later tests' domain, and the test fails with its output.
        """
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f'still running {timeout:g} s after its start (stopped now):\n'
                                 f'{self.stop()}') from None
        return self.proc.returncode, output(self.proc)


class Probe:
    """An rclpy node spinning in a background thread, with helpers to wait for messages."""

    def __init__(self, name: str = 'probe'):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self):
        while not self._stop.is_set():
            self.executor.spin_once(timeout_sec=0.02)

    def collect(self, msg_type, topic: str, depth: int = 100) -> 'Received':
        """Subscribe to a topic; return the list its messages are appended to."""
        received = Received()
        received.subscription = self.node.create_subscription(msg_type, topic,
                                                              received.append, depth)
        return received

    def call(self, srv_type, name: str, request, timeout: float = 30.0, attempt: float = 10.0):
        """
        Call a service and return the response; send the request again if it is not answered.

        Fast DDS drops a response when the server has not yet matched this client's response
        reader (``failed to send response (timeout): client will not receive response``,
        ros2/ros2#1253, ros2/rmw_fastrtps#704: the maintainers leave the retry to the caller).
        ``wait_for_service`` only tells that the request side is matched, so on a loaded
        machine the first request can be lost; each attempt waits ``attempt`` seconds, all of
        them ``timeout`` seconds in total.
        """
        client = self.node.create_client(srv_type, name)
        try:
            return self.request(client, request, timeout, attempt)
        finally:
            self.node.destroy_client(client)

    @staticmethod
    def request(client, request, timeout: float = 30.0, attempt: float = 10.0):
        """Send request on client until it is answered (see ``call``); return the response."""
        name = client.srv_name
        assert client.wait_for_service(timeout_sec=timeout), f'service {name} not available'
        deadline = time.monotonic() + timeout
        attempts = 0
        while True:
            attempts += 1
            future = client.call_async(request)
            answered = threading.Event()
            future.add_done_callback(lambda _, answered=answered: answered.set())
            wait = max(0.0, min(attempt, deadline - time.monotonic()))
            if future.done() or answered.wait(wait):
                return future.result()
            client.remove_pending_request(future)
            if time.monotonic() >= deadline:
                raise AssertionError(f'service {name} did not answer within {timeout} s '
                                     f'({attempts} requests sent)')

    def close(self):
        """Stop spinning and shut the context down."""
        self._stop.set()
        self._thread.join(5.0)
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


class Received(list):
    """The messages a Probe collected from a topic, and the subscription that collects them."""

    subscription = None

    def matched(self) -> bool:
        """
        Return whether the subscription has matched a publisher.

        A node's output published before this side has matched its publisher is lost (the
        topics are volatile): a fixture waits for it before the first exchange.
        """
        return self.subscription.get_publisher_count() > 0


def wait_for(condition, timeout: float = 20.0, period: float = 0.01) -> bool:
    """Poll condition() until it is true or the timeout passes; return its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(period)
    return bool(condition())


def has_loaded(pid: int, library: str) -> bool:
    """Return True once process pid has mapped the shared library (Linux: /proc/PID/maps)."""
    try:
        with open(f'/proc/{pid}/maps') as f:
            return library in f.read()
    except OSError:
        return False


def running(pid: int) -> bool:
    """Return True if process pid exists and is no zombie (Linux: /proc/PID/stat)."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rpartition(')')[2].split()[0] != 'Z'
    except (OSError, IndexError):
        return False


def stamped_state(names, q, qd=(), stamp_ns=None):
    """Return a JointState stamped stamp_ns (default: now, the system clock)."""
    from sensor_msgs.msg import JointState
    msg = JointState(name=list(names), position=[float(v) for v in q],
                     velocity=[float(v) for v in qd])
    stamp_ns = time.time_ns() if stamp_ns is None else stamp_ns
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
    return msg


def expect_one_more(out: list, publish, timeout: float = 10.0):
    """Call publish() and wait until the list out grows by one; return its new last item."""
    n0 = len(out)
    publish()
    assert wait_for(lambda: len(out) > n0, timeout), 'no output'
    return out[-1]


def odometry(position, quaternion, linear, angular, stamp_ns=None, child='base_link'):
    """Return an Odometry message (stamped now by default)."""
    from nav_msgs.msg import Odometry
    msg = Odometry()
    msg.header.frame_id, msg.child_frame_id = 'odom', child
    stamp_ns = time.time_ns() if stamp_ns is None else stamp_ns
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 1_000_000_000)
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    p.x, p.y, p.z = map(float, position)
    o.x, o.y, o.z, o.w = map(float, quaternion)
    t = msg.twist.twist
    t.linear.x, t.linear.y, t.linear.z = map(float, linear)
    t.angular.x, t.angular.y, t.angular.z = map(float, angular)
    return msg
