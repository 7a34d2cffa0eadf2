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
The node graphs of the demos, shared by the launch files and ``kron-dynamics demo``.

Each demo runs the plant simulator, the reference generator, the computed-torque controller
and the dynamics node, with parameters from ``config/<machine>_demo.yaml`` and the bundled
URDF. The reference generator publishes ``/reference`` and, stamped, ``/reference_trajectory``;
the controller takes the stamped points on its private ``~/reference_trajectory`` (it times
them by their stamp, not by their arrival), the dynamics node ``/reference`` on its
``~/reference``.
"""

from dataclasses import dataclass
import os

import yaml

PACKAGE = 'kron_dynamics'
REFERENCE_TOPIC = '/reference'
STAMPED_REFERENCE_TOPIC = '/reference_trajectory'
COMMAND_TOPIC = '/effort_controller/commands'


@dataclass(frozen=True)
class NodeSpec:
    """One node of a graph: executable (console script), node name and remappings."""

    executable: str
    name: str
    remappings: tuple = ()


@dataclass(frozen=True)
class Graph:
    """A demo graph: its nodes, params file and URDF (absolute paths), per node if given."""

    machine: str
    nodes: tuple
    params_file: str
    urdf_file: str
    node_urdfs: tuple = ()      # (node name, URDF file) pairs that replace urdf_file

    def urdf_for(self, node: str) -> str:
        """Return the URDF file a node of the graph loads."""
        return dict(self.node_urdfs).get(node, self.urdf_file)


DEMO_NODES = (
    NodeSpec('plant_simulator', 'plant_simulator'),
    NodeSpec('reference_generator', 'reference_generator'),
    NodeSpec('computed_torque_controller', 'computed_torque_controller',
             (('~/reference_trajectory', STAMPED_REFERENCE_TOPIC),)),
    NodeSpec('dynamics_node', 'dynamics_node', (('~/reference', REFERENCE_TOPIC),)),
)
DEMO_URDFS = {'stacker': 'stacker.urdf', 'rover_arm': 'rover_arm.urdf'}


def demo_graph(machine: str, share_dir: str) -> Graph:
    """Return the demo graph of 'stacker' or 'rover_arm' with files under share_dir."""
    if machine not in DEMO_URDFS:
        raise ValueError(f'unknown demo {machine!r}; choose one of {sorted(DEMO_URDFS)}')
    return Graph(machine, DEMO_NODES,
                 os.path.join(share_dir, 'config', f'{machine}_demo.yaml'),
                 os.path.join(share_dir, 'urdf', DEMO_URDFS[machine]))


def node_parameters(graph: Graph, node: str) -> dict:
    """Return the parameters a node of the graph gets from its params file ('/**' and own)."""
    with open(graph.params_file) as f:
        sections = yaml.safe_load(f) or {}
    params = dict((sections.get('/**') or {}).get('ros__parameters') or {})
    params.update((sections.get(node) or {}).get('ros__parameters') or {})
    return params
