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
echo_node: the latency floor that bench/ros_latency.py compares dynamics_node against.

Subscribes to ``joint_states`` exactly as dynamics_node does (same message type, same queue
depth ``STATE_QUEUE``) and, on receipt, publishes the positions as a Float64MultiArray on
``~/echo`` (depth 10, like dynamics_node's outputs). It is spun by the same code as the
kron_dynamics nodes (``run_node``, hence ``make_executor``), so the difference between the
two is the work dynamics_node does per message, not the ROS plumbing.

    .venv/bin/python bench/echo_node.py --ros-args -r joint_states:=/bench/echo/joint_states
"""

import sys

from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from kron_dynamics.nodes.executor import run_node
from kron_dynamics.nodes.joint_states import STATE_QUEUE


class EchoNode(Node):
    """Publish the positions of every joint state on receipt, nothing else."""

    def __init__(self, **kwargs):
        super().__init__('echo_node', **kwargs)
        self._pub = self.create_publisher(Float64MultiArray, '~/echo', 10)
        self.create_subscription(JointState, 'joint_states', self._on_joint_state,
                                 STATE_QUEUE)
        self.get_logger().info('ready')   # bench/startup.py times this line

    def _on_joint_state(self, msg: JointState) -> None:
        self._pub.publish(Float64MultiArray(data=msg.position))


def main(args=None) -> int:
    """Run the echo node."""
    return run_node(EchoNode, args)


if __name__ == '__main__':
    sys.exit(main())
