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
The library's log records (Python logger ``kron_dynamics``) in the nodes' ROS log.

The loader's warnings (here: the rover arm's joints that move no inertia) reached a node's
stderr bare, through Python's last-resort handler: no severity, no node name, absent from
/rosout (rqt_console, a bag of the log), printed whatever ``--log-level`` said.
"""

import weakref

from rcl_interfaces.msg import Log
from rcl_interfaces.srv import ListParameters
import pytest
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from conftest import URDF_DIR
import pinocchio_oracle
from ros_harness import NodeProcess, Probe, Received, wait_for

pytestmark = pytest.mark.ros

ROVER = f"urdf_file:={URDF_DIR / 'rover_arm.urdf'}"
TINY = "joint 'joint3' (link 'link3') moves a tiny inertia"


@pytest.mark.parametrize('module', ['dynamics_node', 'computed_torque_controller'])
def test_the_loaders_warnings_are_on_rosout_from_the_nodes_logger(module):
    name = f'logging_{module}'
    probe = Probe(f'rosout_probe_{module}')
    logs = Received()
    # /rosout keeps its last messages for late subscribers (transient local): the warning
    # comes at start-up, before this probe has discovered the node
    qos = QoSProfile(depth=1000, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     reliability=ReliabilityPolicy.RELIABLE)
    logs.subscription = probe.node.create_subscription(Log, '/rosout', logs.append, qos)
    node = NodeProcess(module, ['-r', f'__node:={name}', '-p', ROVER,
                                '-r', f'joint_states:=/{name}/nothing',
                                '-p', f'command_topic:=/{name}/commands'])
    try:
        def warned():      # this node's (a node of an earlier test may still be stopping)
            return [m for m in list(logs) if TINY in m.msg and m.name.startswith(name)]
        assert wait_for(warned, 60), (node.output(), [m.msg for m in list(logs)])
        message = warned()[0]
        assert message.level == Log.WARN and message.name == f'{name}.kron_dynamics', message
        line = next(x for x in node.output().splitlines() if TINY in x)
        assert line.startswith('[WARN] [') and f'[{name}.kron_dynamics]: ' in line, line
    finally:
        probe.close()
        node.stop()


def test_the_nodes_log_level_applies_to_the_loaders_warnings():
    """--log-level error: the warning is not printed, as none of the node's own are."""
    node = NodeProcess('dynamics_node', ['-r', '__node:=quiet_node', '-p', ROVER,
                                         '--log-level', 'quiet_node:=error'])
    probe = Probe('quiet_probe')
    try:
        # answered only once the node spins, after its constructor loaded the model (and
        # logged what it logs)
        probe.call(ListParameters, '/quiet_node/list_parameters', ListParameters.Request())
        assert node.alive(), node.output()
    finally:
        probe.close()
        out = node.stop()
    assert 'tiny inertia' not in out and 'Traceback' not in out, out
    # and at the default level, the same start prints it (the contrast of the test above)
    loud = NodeProcess('dynamics_node', ['-r', '__node:=loud_node', '-p', ROVER])
    try:
        assert wait_for(lambda: TINY in loud.output(), 60), loud.output()
    finally:
        loud.stop()


def test_a_node_made_in_process_gives_the_loaders_records_back_when_destroyed(capfd):
    """
    The handler lives as long as the package's nodes in the process, and changes nothing else.

    The first version stayed on logger ``kron_dynamics`` after an in-process node was gone
    (the launch and real-time tests make such nodes), so the demo's own handling of the
    loader's warnings (``load_machine``) printed them again.
    """
    import gc
    import logging
    import rclpy
    from kron_dynamics.demo.run import load_machine
    from kron_dynamics.errors import ModelError
    from kron_dynamics.nodes.dynamics_node import DynamicsNode
    library = logging.getLogger('kron_dynamics')

    def state():
        return list(library.handlers), library.level, library.propagate
    before = state()
    context = rclpy.Context()
    rclpy.init(context=context, args=['--ros-args', '-p', ROVER, '-r', '__node:=in_process'])
    try:
        node = DynamicsNode(context=context)
        other = DynamicsNode(context=context, cli_args=['--ros-args', '-r', '__node:=other'])
        assert len(library.handlers) == len(before[0]) + 1      # one, for both
        # the nodes' level (rcutils' default, info), below the warnings the logger inherits
        assert library.level == logging.INFO and library.propagate == before[2]
        other.destroy_node()
        capfd.readouterr()
        library.warning('a record while node %s lives', 'in_process')
        err = capfd.readouterr().err
        assert 'in_process.kron_dynamics' in err and 'other.kron_dynamics' not in err, err
        node.destroy_node()
        assert state() == before
        # a constructor that fails: the node is destroyed with its context
        with pytest.raises(ModelError):
            DynamicsNode(context=context, cli_args=['--ros-args', '-p', 'urdf_file:=/nonexistent',
                                                    '-r', '__node:=failed'])
    finally:
        rclpy.try_shutdown(context=context)
    gc.collect()
    assert state() == before
    _, note = load_machine(URDF_DIR / 'rover_arm.urdf')
    assert 'joints joint3, joint5' in note and not capfd.readouterr().err


def test_a_nodes_debug_log_level_shows_the_loaders_debug_lines():
    """
    ``--log-level <node>:=debug``: the URDF elements the loader ignores are in the node's log.

    Python's logger drops records below its level (warning) before any handler sees them:
    the handler alone passed on warnings and errors only, whatever the node's level.
    """
    urdf = pinocchio_oracle.robots_dir() / 'ur_description/urdf/ur5_robot.urdf'
    line = 'ignored 6 <transmission> element(s): not used by dynamics'
    node = NodeProcess('dynamics_node', ['-r', '__node:=debug_node', '-p', f'urdf_file:={urdf}',
                                         '-r', 'joint_states:=/debug_node/nothing',
                                         '--log-level', 'debug_node:=debug'])
    try:
        assert wait_for(lambda: line in node.output(), 60), node.output()
    finally:
        out = node.stop()
    found = next(x for x in out.splitlines() if line in x)
    assert found.startswith('[DEBUG] [') and '[debug_node.kron_dynamics]: ' in found, found
    assert 'Traceback' not in out, out
    # at the default level (info), as before
    plain = NodeProcess('dynamics_node', ['-r', '__node:=plain_node', '-p', f'urdf_file:={urdf}',
                                          '-r', 'joint_states:=/plain_node/nothing'])
    probe = Probe('plain_probe')
    try:
        probe.call(ListParameters, '/plain_node/list_parameters', ListParameters.Request())
        assert plain.alive(), plain.output()
    finally:
        probe.close()
        out = plain.stop()
    assert 'not used by dynamics' not in out and 'Traceback' not in out, out


def test_a_level_the_process_set_is_kept_and_a_lowered_one_given_back(capfd):
    """The node's level applies only where the process left the logger's level unset."""
    import logging
    import rclpy
    from rclpy.logging import LoggingSeverity, set_logger_level
    from kron_dynamics.nodes.dynamics_node import DynamicsNode
    library = logging.getLogger('kron_dynamics')
    urdf = pinocchio_oracle.robots_dir() / 'ur_description/urdf/ur5_robot.urdf'
    assert library.level == logging.NOTSET
    context = rclpy.Context()
    rclpy.init(context=context, args=['--ros-args', '-p', f'urdf_file:={urdf}'])
    try:
        set_logger_level('debug_in_process.kron_dynamics', LoggingSeverity.DEBUG)
        capfd.readouterr()
        node = DynamicsNode(context=context,
                            cli_args=['--ros-args', '-r', '__node:=debug_in_process'])
        assert library.level == logging.DEBUG
        err = capfd.readouterr().err
        assert '[debug_in_process.kron_dynamics]: ' in err and '<transmission>' in err, err
        # a node made later at the default level: its level applies (the records go there)
        later = DynamicsNode(context=context, cli_args=['--ros-args', '-r', '__node:=later'])
        assert library.level == logging.INFO
        later.destroy_node()
        assert library.level == logging.DEBUG
        node.destroy_node()
        assert library.level == logging.NOTSET
        # the process's own level is kept: no debug line, and the level stays after the node
        library.setLevel(logging.WARNING)
        try:
            node = DynamicsNode(context=context,
                                cli_args=['--ros-args', '-r', '__node:=debug_in_process'])
            assert library.level == logging.WARNING
            node.destroy_node()
            assert library.level == logging.WARNING
        finally:
            library.setLevel(logging.NOTSET)
        assert '<transmission>' not in capfd.readouterr().err
        # a level the process sets while a node lives is kept after the node, too
        node = DynamicsNode(context=context,
                            cli_args=['--ros-args', '-r', '__node:=debug_in_process'])
        library.setLevel(logging.ERROR)
        try:
            node.destroy_node()
            assert library.level == logging.ERROR
        finally:
            library.setLevel(logging.NOTSET)
    finally:
        set_logger_level('debug_in_process.kron_dynamics', LoggingSeverity.UNSET)
        rclpy.try_shutdown(context=context)


def test_a_node_collected_without_destroy_node_no_longer_takes_the_records(capfd, caplog):
    """Its handler goes with it: a record goes where it went before, not to the ROS log."""
    import gc
    import logging
    import rclpy
    from kron_dynamics.nodes.dynamics_node import DynamicsNode
    library = logging.getLogger('kron_dynamics')
    before = list(library.handlers)
    context = rclpy.Context()
    rclpy.init(context=context, args=['--ros-args', '-p', ROVER, '-r', '__node:=dropped'])
    try:
        node = DynamicsNode(context=context)
        assert len(library.handlers) == len(before) + 1
        del node
        gc.collect()
        assert library.handlers == before
        capfd.readouterr()
        caplog.clear()
        library.warning('a record after the node was collected')
        assert [r.getMessage() for r in caplog.records] == [
            'a record after the node was collected']
        assert 'dropped.kron_dynamics' not in capfd.readouterr().err
    finally:
        rclpy.try_shutdown(context=context)


def test_a_record_met_while_the_collected_nodes_callback_is_pending_is_not_lost(capsys):
    """Between a node's collection and its weak reference's callback (another thread)."""
    import logging
    from kron_dynamics.nodes.executor import LibraryLog

    class Gone:
        pass
    handler, gone = LibraryLog(), Gone()
    handler._nodes = [(weakref.ref(gone), None, 0)]
    del gone
    library = logging.getLogger('kron_dynamics')
    record = library.makeRecord('kron_dynamics', logging.WARNING, __file__, 1,
                                'a record nobody else takes', (), None)
    below = library.makeRecord('kron_dynamics', logging.INFO, __file__, 1,
                               'below the last resort handler\'s level', (), None)
    propagate, library.propagate = library.propagate, False     # no handler but this one
    try:
        handler.handle(record)
        handler.handle(below)       # not printed, as Python itself would not print it
    finally:
        library.propagate = propagate
    assert capsys.readouterr().err == 'a record nobody else takes\n'
    library.propagate = True
    handler.handle(record)      # the root's handlers (pytest's) take it: nothing more here
    library.propagate = propagate
    assert not capsys.readouterr().err


def test_python_warnings_go_to_the_nodes_log_and_numpy_floating_point_ones_are_quiet(
        rclpy_context, capfd):
    """
    A node checks its outputs for finite values and says why one is withheld (executor).

    NumPy's floating-point RuntimeWarnings would only repeat that on stderr, outside the ROS
    log: they are off. Any other warning goes to the node's ROS logger, one line that names
    where it was raised.
    """
    import warnings
    import numpy as np
    import rclpy
    from kron_dynamics.nodes.executor import route_warnings
    node = rclpy.create_node('warned', context=rclpy_context)
    errors = np.geterr()
    try:
        with warnings.catch_warnings():     # puts warnings.showwarning back after
            warnings.simplefilter('always')
            route_warnings(node.get_logger())
            np.float64(1e308) * np.float64(10.0)
            np.array([1.0, -1.0]) / np.array([0.0, 0.0])
            warnings.warn('a library notice\nover two lines', UserWarning)
    finally:
        np.seterr(**errors)
        node.destroy_node()
    err = capfd.readouterr().err
    assert 'overflow' not in err and 'divide' not in err, err
    lines = [line for line in err.splitlines() if 'UserWarning: ' in line]
    assert len(lines) == 1, err
    assert '[warned]' in lines[0] and 'a library notice over two lines (' in lines[0], err
    assert 'test_node_logging.py:' in lines[0], err


def test_a_publish_the_middleware_refuses_is_dropped_counted_and_logged_once_a_period():
    """
    A real publisher whose context is shut down: rclpy refuses every sample.

    (InvalidHandle, a RuntimeError as rcl's 'cannot publish data' is.) The node's
    ArrayPublisher returns False, counts each, and logs the first (throttled); its log line
    named the topic by asking the destroyed publisher, which raised again.
    """
    import numpy as np
    import rclpy
    from std_msgs.msg import Float64MultiArray

    from kron_dynamics.nodes.messages import ArrayPublisher
    from kron_dynamics.nodes.throttled_logger import ThrottledLogger
    lines = []

    class Recorder:
        def warning(self, text):
            lines.append(text)
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('publish_failures', context=context)
    publisher = node.create_publisher(Float64MultiArray, '~/torques', 10)
    logged, silent = ArrayPublisher(publisher, ThrottledLogger(Recorder())), ArrayPublisher(
        publisher)
    assert logged.publish(np.ones(3)) and logged.failures == 0
    rclpy.shutdown(context=context)
    assert [logged.publish(np.ones(3)) for _ in range(5)] == [False] * 5
    assert not silent.publish(np.ones((2, 2))) and (logged.failures, silent.failures) == (5, 1)
    assert len(lines) == 1 and lines[0].startswith(
        'could not publish on /publish_failures/torques (') and lines[0].endswith('); dropped')
