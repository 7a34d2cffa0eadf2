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

"""Exceptions raised by kron_dynamics; each message names the file, element, joint or field."""


class ModelError(ValueError):
    """
    A robot model (URDF, DH table or argument) is invalid; the message names the culprit.

    ``argument``: the loader's argument whose value is at fault ('armature', 'locked'),
    where it is one the caller chose rather than the URDF; None otherwise. A caller that
    maps its own settings onto those arguments (a node's parameters) names its setting
    from it, not from the message's words.
    """

    def __init__(self, *args, argument: str | None = None):
        super().__init__(*args)
        self.argument = argument


class SingularMassMatrixError(ModelError):
    """The joint-space inertia matrix is singular, so forward dynamics is undefined."""

    def __init__(self, message: str, joints: list[str] | None = None):
        super().__init__(message)
        self.joints = list(joints or [])


class ConfigurationError(ValueError):
    """A node parameter (or another setting outside the model) is invalid; names it."""


class SingularJacobianError(ValueError):
    """A task-space matrix (J M^-1 J^T) is singular: a kinematic singularity of the link."""

    def __init__(self, message: str, condition: float = float('inf')):
        super().__init__(message)
        self.condition = float(condition)
