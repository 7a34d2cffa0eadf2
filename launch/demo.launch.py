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
Computed-torque demo: simulator, reference, controller and dynamics node of one machine.

    ros2 launch kron_dynamics demo.launch.py                      # the stacker
    ros2 launch kron_dynamics demo.launch.py machine:=rover_arm

The node list, the params file (config/<machine>_demo.yaml) and the URDF come from
kron_dynamics/demo/graph.py, the same graph ``kron-dynamics demo <machine>`` runs.
"""

from ament_index_python.packages import get_package_share_directory
from kron_dynamics.demo.graph import DEMO_URDFS, demo_graph, PACKAGE
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def demo_nodes(context):
    """Return the Node actions of the chosen machine's demo graph."""
    machine = LaunchConfiguration('machine').perform(context)
    graph = demo_graph(machine, get_package_share_directory(PACKAGE))
    return [Node(package=PACKAGE, executable=spec.executable, name=spec.name, output='screen',
                 parameters=[graph.params_file, {'urdf_file': graph.urdf_file}],
                 remappings=list(spec.remappings))
            for spec in graph.nodes]


def generate_launch_description():
    """Launch the demo graph of the machine named by the launch argument ``machine``."""
    return LaunchDescription([
        DeclareLaunchArgument('machine', default_value='stacker', choices=sorted(DEMO_URDFS),
                              description='which machine: its URDF and config/<machine>'
                                          '_demo.yaml'),
        OpaqueFunction(function=demo_nodes),
    ])
