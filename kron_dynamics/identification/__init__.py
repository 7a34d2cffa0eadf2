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
Identification of a robot's inertial parameters from its motion and torques.

:func:`base_parameters`: which combinations of the standard parameters
(``RobotModel.dynamic_parameters``) the joint torques determine, by pivoted QR of the
regressor on random states (Gautier). :func:`identify`: the parameters and joint friction
that fit measured torques, by least squares or by one physically consistent convex fit.
:func:`excitation_trajectory`: a Fourier excitation within the joint limits that conditions
the fit well.
"""

from .base_parameters import base_parameters, BaseParameters
from .excitation import excitation_trajectory, FourierTrajectory
from .identify import (body_parameters, friction_regressor, identify, Identification,
                       pseudo_inertia)
from .recording import read_recording, Recording, write_bag

__all__ = ['base_parameters', 'BaseParameters', 'excitation_trajectory', 'FourierTrajectory',
           'body_parameters', 'friction_regressor', 'identify', 'Identification', 'pseudo_inertia',
           'read_recording', 'Recording', 'write_bag']
