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
The dynamics node for any URDF.

    ros2 launch kron_dynamics dynamics.launch.py urdf_file:=/path/robot.urdf

With ``urdf_file`` empty the node uses ``/robot_description`` (from robot_state_publisher).
Parameters come from config/dynamics.yaml (or ``params_file:=...``).
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def generate_launch_description():
    """Launch dynamics_node with a params file and an optional URDF file."""
    default_params = os.path.join(get_package_share_directory('kron_dynamics'), 'config',
                                  'dynamics.yaml')
    return LaunchDescription([
        DeclareLaunchArgument('urdf_file', default_value='',
                              description='URDF file; empty: use /robot_description'),
        DeclareLaunchArgument('params_file', default_value=default_params,
                              description='YAML params file of dynamics_node'),
        Node(package='kron_dynamics', executable='dynamics_node', name='dynamics_node',
             output='screen',
             parameters=[LaunchConfiguration('params_file'),
                         {'urdf_file': LaunchConfiguration('urdf_file')}]),
    ])
