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

"""Computed-torque demo of the stacker: simulator, reference, controller, dynamics node."""

from ament_index_python.packages import get_package_share_directory
from kron_dynamics.demo.graph import demo_graph, PACKAGE
from launch import LaunchDescription
from launch_ros.actions import Node


def generate_launch_description():
    """Launch the stacker demo graph with config/stacker_demo.yaml."""
    graph = demo_graph('stacker', get_package_share_directory(PACKAGE))
    return LaunchDescription([
        Node(package=PACKAGE, executable=spec.executable, name=spec.name, output='screen',
             parameters=[graph.params_file, {'urdf_file': graph.urdf_file}],
             remappings=list(spec.remappings))
        for spec in graph.nodes
    ])
