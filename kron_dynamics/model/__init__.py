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
The model layer: robot descriptions (URDF, DH tables, the papers' machines) to a tree.

:func:`~.urdf.parse_urdf` validates URDF text into a :class:`~.urdf.RobotDescription`
whose :class:`~.tree.KinematicTree` every algorithm and kernel works on. Nothing here
computes dynamics.
"""

from .mimic import MimicJoint
from .tree import KinematicTree
from .urdf import JointInfo, parse_urdf, RobotDescription

__all__ = ['JointInfo', 'KinematicTree', 'MimicJoint', 'parse_urdf', 'RobotDescription']
