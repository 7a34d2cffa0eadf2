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

"""``kron-dynamics excite URDF -o excitation.yaml`` and ``identify URDF DATA -o fitted.urdf``."""

from pathlib import Path
import sys

import numpy as np

from ..robot_model import RobotModel
from .excitation import excitation_trajectory
from .identify import filtered, identify
from .recording import read_recording


def _locked_text(model) -> str:
    """Return ' (locked: j=v, ...)' of a model's locked joints, '' if none."""
    locked = ', '.join(f'{j}={v:g}' for j, v in model.locked_joints.items())
    return f' (locked: {locked})' if locked else ''


def _check_locked(model, data: str, topic: str, tolerance: float = 1e-3) -> None:
    """
    Warn about each locked joint the recording has away from where it is locked.

    The fit welds a locked joint's links at its locked coordinate: a gripper recorded open
    but locked shut (``--joints`` locks the others at 0) gives wrong inertias. A recording
    without the locked joints' columns says nothing, and nothing is said.
    """
    locked = model.locked_joints
    if not locked:
        return
    try:
        recorded = read_recording(data, tuple(locked), topic)
    except ValueError:
        return
    for k, (joint, value) in enumerate(locked.items()):
        q = recorded.q[:, k]
        if np.abs(q - value).max() > tolerance:
            print(f'warning: joint {joint} is locked at {value:g} for the fit but recorded '
                  f'between {q.min():.4g} and {q.max():.4g}: its links are welded where it is '
                  'locked; lock it where it was (--locked JOINT=VALUE) or fit it (--joints)',
                  file=sys.stderr, flush=True)


def excite_command(urdf: str, output: str, duration: float = 20.0, harmonics: int = 5,
                   base_frequency: float | None = None, margin: float = 0.05,
                   max_acceleration: float | None = None, maxiter: int = 60,
                   joints: list | None = None, locked: dict | None = None) -> int:
    """Optimise an excitation trajectory for a URDF and write it as YAML."""
    model = RobotModel.from_urdf_file(urdf, joint_names=joints, lock_others=bool(joints),
                                      locked=locked)
    print(f"optimising a {duration:g} s excitation ({harmonics} harmonics) for "
          f"'{model.name}', joints {list(model.joint_names)}{_locked_text(model)}...",
          flush=True)
    trajectory = excitation_trajectory(model, duration, harmonics, base_frequency,
                                       margin=margin, max_acceleration=max_acceleration,
                                       maxiter=maxiter)
    trajectory.save(output)
    t, q, qd, qdd = trajectory.sample(100.0)
    tau = np.abs(model.inverse_dynamics(q, qd, qdd)).max(axis=0)
    print(f'condition number of the base regressor: {trajectory.condition_number:.4g}')
    print(f"{'joint':<24}{'q min':>10}{'q max':>10}{'|v| max':>10}{'|a| max':>10}"
          f"{'|tau| max':>11}{'effort':>10}")
    for k, name in enumerate(model.joint_names):
        print(f'{name:<24}{q[:, k].min():>10.4g}{q[:, k].max():>10.4g}'
              f'{np.abs(qd[:, k]).max():>10.4g}{np.abs(qdd[:, k]).max():>10.4g}'
              f'{tau[k]:>11.4g}{model.effort_limits[k]:>10.4g}')
    print(f'wrote {output} (play it with reference_generator, mode: excitation)')
    return 0


def identify_command(urdf: str, data: str, output: str, params: str | None = None,
                     method: str = 'physically_consistent',
                     friction=('viscous', 'coulomb'), cutoff: float = 10.0,
                     topic: str = '/joint_states', validate: float = 0.2,
                     prior_weight: float = 1e-6, joints: list | None = None,
                     max_gap: float | None = None, effort: str = 'instant',
                     locked: dict | None = None) -> int:
    """
    Fit a URDF's inertial parameters and friction to a recording; write the corrected URDF.

    The last ``validate`` share of the recording is held out: the report ends with the
    torque RMS per joint there, of the URDF as given and of the fit. A gap longer than
    ``max_gap`` [s] splits the recording; ``effort``: 'instant' or 'held', what an effort
    sample is (both in ``identification.identify.filtered``).
    """
    model = RobotModel.from_urdf_file(urdf, joint_names=joints, lock_others=bool(joints),
                                      locked=locked)
    recording = read_recording(data, model.joint_names, topic)
    if not 0.0 <= validate < 1.0:
        raise ValueError(f'validate must be in [0, 1), got {validate}')
    _check_locked(model, data, topic)
    t, q, qd, qdd, tau = filtered(recording.t - recording.t[0], recording.q, recording.tau,
                                  cutoff, max_gap, effort)
    split = int(round(len(t) * (1.0 - validate)))
    print(f'{len(recording.t)} joint states over {t[-1] - t[0]:.4g} s from {data}; fitting '
          f'{split}, holding out {len(t) - split} (on a uniform grid, q\', q\'\' and tau by a '
          f'{cutoff:g} Hz zero-phase filter)', flush=True)
    fit = identify(model, q[:split], tau[:split], qd[:split], qdd[:split], friction=friction,
                   method=method, prior_weight=prior_weight)
    print(fit.report())
    if split < len(t):
        held = slice(split, None)
        measured = tau[held]
        before = model.inverse_dynamics(q[held], qd[held], qdd[held])
        after = fit.predict(q[held], qd[held], qdd[held])

        def rms(x):
            return np.sqrt(np.mean((x - measured) ** 2, axis=0))
        print('held-out torque RMS per joint: the URDF as given '
              + ', '.join(f'{x:.4g}' for x in rms(before)) + '; fitted '
              + ', '.join(f'{x:.4g}' for x in rms(after)))
    fit.to_urdf(output)
    print(f'wrote {output}')
    params = params or str(Path(output).with_suffix('.yaml'))
    fit.to_params(params)
    print(f'wrote {params} (what URDF cannot hold: the armature'
          f"{' and the locked joints' if model.locked_joints else ''} for every node, the "
          'friction feed-forward and torque offsets for computed_torque_controller)')
    return 0
