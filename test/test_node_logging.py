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

from rcl_interfaces.msg import Log
from rcl_interfaces.srv import ListParameters
import pytest
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from conftest import URDF_DIR
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
