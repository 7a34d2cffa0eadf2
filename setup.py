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

from glob import glob

from setuptools import find_packages, setup

package_name = 'kron_dynamics'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    package_data={package_name: ['py.typed']},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        ('share/' + package_name + '/launch', glob('launch/*.launch.py')),
        ('share/' + package_name + '/config', glob('config/*.yaml')),
        ('share/' + package_name + '/urdf', glob('urdf/*.urdf')),
    ],
    install_requires=['setuptools', 'numpy>=1.24', 'scipy>=1.10', 'numba>=0.60,<0.69',
                      'sympy>=1.12', 'pyyaml>=6', 'matplotlib>=3.7'],
    # kron_dynamics.identification: the physically consistent fit (cvxpy with Clarabel or
    # SCS) and rosbag2 recordings (rosbags); the rest of the package runs without them
    extras_require={'identification': ['cvxpy>=1.5', 'clarabel>=0.9', 'scs>=3.2',
                                       'rosbags>=0.10'],
                    # numba's CUDA target for kron_dynamics.gpu: the numba-cuda release whose
                    # simulator ran test_gpu with the numba of requirements.txt (0.68.1), and
                    # which ran on an H100 with numba 0.68.0; it overloads np.row_stack, which
                    # NumPy 2.5 no longer has (its import fails there)
                    'gpu': ['numba-cuda[cu12]==0.30.4', 'numpy<2.5']},
    zip_safe=True,
    maintainer='kron_dynamics developers',
    maintainer_email='kron_dynamics@example.com',
    description='Kronecker-product rigid-body dynamics of URDF trees, with ROS 2 nodes.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'kron-dynamics = kron_dynamics.cli:main',
            # through nodes.entry: signal handlers before the node's heavy imports
            'dynamics_node = kron_dynamics.nodes.entry:dynamics_node',
            'computed_torque_controller = kron_dynamics.nodes.entry:computed_torque_controller',
            'plant_simulator = kron_dynamics.nodes.entry:plant_simulator',
            'reference_generator = kron_dynamics.nodes.entry:reference_generator',
        ],
    },
)
