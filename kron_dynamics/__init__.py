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
Rigid-body dynamics of URDF trees in the Kronecker-product form of Tuan et al. (2019).

``from kron_dynamics import RobotModel`` is the entry point. Importing the package is cheap:
the model, the kernels (numba) and the ROS nodes load when first used.
"""

from .errors import (ConfigurationError, ModelError, SingularJacobianError,
                     SingularMassMatrixError)

__all__ = ['ConfigurationError', 'Contact', 'ModelError', 'RobotModel', 'SingularJacobianError',
           'SingularMassMatrixError']
__version__ = '0.1.0'


def __getattr__(name: str):
    if name == 'RobotModel':
        from .robot_model import RobotModel
        return RobotModel
    if name == 'Contact':
        from .checks import Contact
        return Contact
    if name == 'FloatingBaseModel':
        import warnings
        warnings.warn('kron_dynamics.FloatingBaseModel is deprecated: every model is a '
                      "RobotModel (RobotModel.from_urdf_file(path, root_joint='floating'))",
                      DeprecationWarning, stacklevel=2)
        from .robot_model import FloatingBaseModel
        return FloatingBaseModel
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


def __dir__():
    return sorted(['__version__', *__all__])
