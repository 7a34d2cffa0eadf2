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
Launch files and params files, checked statically (without the `launch` package).

Every executable they start is a console script, every package path and params file they
name exists and is installed by setup.py, and every parameter in the params files is one the
node really declares (rclpy would silently ignore a misspelt one). test_ros_tools.py runs them
with the real ``ros2 launch`` where ../shared/ros2_cli exists; these checks stay for machines
without it.
"""

import ast
import importlib
import re

import pytest
import rclpy
import yaml

from conftest import REPO
from kron_dynamics.demo.graph import (COMMAND_TOPIC, DEMO_NODES, DEMO_URDFS, demo_graph,
                                      REFERENCE_TOPIC, STAMPED_REFERENCE_TOPIC)

LAUNCH_FILES = sorted(REPO.glob('launch/*.launch.py'))
SETUP = (REPO / 'setup.py').read_text()
CONSOLE_SCRIPTS = dict(re.findall(r"'([\w-]+) = (kron_dynamics[\w.]+:\w+)'", SETUP))
NODE_CLASSES = {
    'dynamics_node': 'kron_dynamics.nodes.dynamics_node:DynamicsNode',
    'computed_torque_controller':
        'kron_dynamics.nodes.computed_torque_controller:ComputedTorqueController',
    'plant_simulator': 'kron_dynamics.nodes.plant_simulator:PlantSimulator',
    'reference_generator': 'kron_dynamics.nodes.reference_generator:ReferenceGenerator',
}


def literal_keywords(path, name):
    """Return the string literals passed as keyword ``name`` anywhere in a file."""
    tree = ast.parse(path.read_text())
    return [kw.value.value for node in ast.walk(tree) if isinstance(node, ast.Call)
            for kw in node.keywords if kw.arg == name and isinstance(kw.value, ast.Constant)]


def test_launch_files_exist_and_define_generate_launch_description():
    names = {p.name for p in LAUNCH_FILES}
    assert names == {'demo.launch.py', 'dynamics.launch.py'}
    for path in LAUNCH_FILES:
        tree = ast.parse(path.read_text())
        assert any(isinstance(n, ast.FunctionDef) and n.name == 'generate_launch_description'
                   for n in tree.body), path


def test_demo_launch_file_builds_the_demo_graph_of_its_machine_argument():
    source = (REPO / 'launch' / 'demo.launch.py').read_text()
    assert 'demo_graph(machine,' in source and "LaunchConfiguration('machine')" in source
    assert literal_keywords(REPO / 'launch' / 'demo.launch.py', 'default_value') == ['stacker']
    assert 'choices=sorted(DEMO_URDFS)' in source


@pytest.mark.parametrize('machine', sorted(DEMO_URDFS))
def test_demo_graph_names_existing_executables_and_files(machine):
    graph = demo_graph(machine, str(REPO))
    for spec in graph.nodes:
        assert spec.executable in CONSOLE_SCRIPTS, spec
        module, _, func = CONSOLE_SCRIPTS[spec.executable].partition(':')
        assert callable(getattr(importlib.import_module(module), func))
        assert spec.executable in NODE_CLASSES
    with open(graph.params_file) as f:
        params = yaml.safe_load(f)
    assert {s.name for s in graph.nodes} <= set(params), 'a node has no params section'
    assert (REPO / 'urdf' / DEMO_URDFS[machine]).is_file()


def test_dynamics_launch_file():
    path = REPO / 'launch' / 'dynamics.launch.py'
    assert literal_keywords(path, 'executable') == ['dynamics_node']
    assert literal_keywords(path, 'package') == ['kron_dynamics']
    assert "'dynamics.yaml'" in path.read_text() and (REPO / 'config' / 'dynamics.yaml').is_file()


def test_setup_installs_launch_config_and_urdf():
    for folder in ('launch', 'config', 'urdf'):
        assert f"('share/' + package_name + '/{folder}', glob('{folder}/*" in SETUP


@pytest.mark.ros
@pytest.mark.parametrize('params_file', sorted(REPO.glob('config/*.yaml')),
                         ids=lambda p: p.name)
def test_params_files_only_set_declared_parameters(params_file):
    with open(params_file) as f:
        sections = yaml.safe_load(f)
    shared = sections.pop('/**', {}).get('ros__parameters', {})
    machine = params_file.stem.replace('_demo', '')
    urdf = REPO / 'urdf' / DEMO_URDFS.get(machine, 'stacker.urdf')
    declared_somewhere = set()
    for node_name, section in sections.items():
        module, _, cls = NODE_CLASSES[node_name].partition(':')
        node_class = getattr(importlib.import_module(module), cls)
        context = rclpy.Context()
        rclpy.init(context=context, args=['--ros-args', '--params-file', str(params_file),
                                          '-p', f'urdf_file:={urdf}'])
        try:
            node = node_class(context=context)
            own = section.get('ros__parameters', {})
            undeclared = [p for p in own if not node.has_parameter(p)]
            assert not undeclared, f'{params_file.name}: {node_name} ignores {undeclared}'
            declared_somewhere |= {p for p in shared if node.has_parameter(p)}
            node.destroy_node()
        finally:
            rclpy.try_shutdown(context=context)
    missing = set(shared) - declared_somewhere
    assert not missing, f'no node declares {missing}'


# topics a demo node listens to that no node of the graph publishes: optional user inputs
OPTIONAL_INPUTS = {'/computed_torque_controller/reference',
                   '/dynamics_node/reference_trajectory',
                   '/dynamics_node/external_wrench',    # an F/T sensor, when there is one
                   '/dynamics_node/odometry',           # read for a floating base only
                   # dynamics_node always listens there (clearing robot_description and
                   # urdf_file at run time switches it to the topic); the demos give urdf_file
                   '/robot_description'}


@pytest.mark.ros
@pytest.mark.parametrize('machine', sorted(DEMO_URDFS))
def test_demo_graph_is_wired_as_designed(machine):
    """Build every node of the graph as the launch file does; check who feeds whom."""
    graph = demo_graph(machine, str(REPO))
    publishers, subscribers = {}, {}
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        for spec in graph.nodes:
            module, _, cls = NODE_CLASSES[spec.executable].partition(':')
            args = ['--ros-args', '-r', f'__node:={spec.name}', '--params-file',
                    graph.params_file, '-p', f'urdf_file:={graph.urdf_file}']
            for src, dst in spec.remappings:
                args += ['-r', f'{src}:={dst}']
            node = getattr(importlib.import_module(module), cls)(context=context, cli_args=args)
            try:
                assert node.get_name() == spec.name
                for pub in node.publishers:
                    publishers.setdefault(pub.topic_name, set()).add(spec.name)
                for sub in node.subscriptions:
                    subscribers.setdefault(sub.topic_name, set()).add(spec.name)
            finally:
                node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)
    # the loop of the design: simulator -> states -> controller -> commands -> simulator,
    # the reference generator feeding the controller (stamped points, which it times by their
    # stamp) and the dynamics node
    assert publishers['/joint_states'] == {'plant_simulator'}
    assert {'computed_torque_controller', 'dynamics_node'} <= subscribers['/joint_states']
    assert publishers[STAMPED_REFERENCE_TOPIC] == {'reference_generator'}
    assert 'computed_torque_controller' in subscribers[STAMPED_REFERENCE_TOPIC]
    assert publishers[REFERENCE_TOPIC] == {'reference_generator'}
    assert 'dynamics_node' in subscribers[REFERENCE_TOPIC]
    assert publishers[COMMAND_TOPIC] == {'computed_torque_controller'}
    assert 'plant_simulator' in subscribers[COMMAND_TOPIC]
    unfed = set(subscribers) - set(publishers) - OPTIONAL_INPUTS
    assert not unfed, f'topics no node of the graph publishes: {unfed}'


def test_console_scripts_run_every_node_through_the_entry_module():
    from kron_dynamics.nodes.entry import NODES
    assert {name: cls.rpartition(':')[2] for name, cls in NODE_CLASSES.items()} == NODES
    for name in NODES:
        assert CONSOLE_SCRIPTS[name] == f'kron_dynamics.nodes.entry:{name}'


def test_demo_nodes_are_the_four_of_the_design():
    assert [s.executable for s in DEMO_NODES] == [
        'plant_simulator', 'reference_generator', 'computed_torque_controller', 'dynamics_node']
