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
``kron-dynamics demo identify``: why identification matters, end to end, as ROS nodes.

The plant simulator runs the true machine (the bundled stacker of seed 000, with viscous
damping on every joint); the computed-torque controller starts from a URDF whose masses and
inertias are off by 20-40 % and knows no friction. 1. An excitation is optimised for the
wrong URDF (all a user has) and played by the reference generator while the joint states
(position, effort) are recorded. 2. The fit runs on that recording. 3. The controller
reloads the fitted URDF and the friction feed-forward of its params YAML, and the
excitation is played again. The tracking errors before and after are printed and plotted.
"""

from dataclasses import dataclass
import os
from pathlib import Path

import numpy as np
import yaml

from ..identification.excitation import excitation_trajectory, FourierTrajectory
from ..identification.export import urdf_with_parameters
from ..identification.identify import identify, Identification
from ..robot_model import RobotModel
from .graph import Graph, NodeSpec, STAMPED_REFERENCE_TOPIC
from .run import load_machine, Recording, run_graph, SETTLE_S

MACHINE = 'stacker'
# the controller's URDF: each body's mass and inertia scaled (20-40 % off)
WRONG_FACTORS = (1.3, 0.7, 1.35)
# the true machine's viscous damping [N s/m, N m s/rad, N m s/rad]
DAMPING = (5.0e4, 1.0e6, 1.0e6)
# [Hz] of the filter that gives q', q'' from the recorded positions: above the excitation's
# harmonics (0.4 Hz) and the loop's bandwidth (1.6 Hz), below the stamps' jitter
CUTOFF = 3.0
# [Hz] the plant simulator's integration rate; a gap between joint-state stamps longer than
# nodes.plant_simulator.MAX_STEPS_PER_TICK (100) steps is where the simulator, starved by a
# busy machine, dropped real time: the plant moved less than the stamps say, so the fit
# splits the recording there (not imported: that module needs rclpy)
INTEGRATION_RATE = 1000.0
MAX_GAP = 100 / INTEGRATION_RATE
NODES = (
    NodeSpec('plant_simulator', 'plant_simulator'),
    NodeSpec('reference_generator', 'reference_generator'),
    NodeSpec('computed_torque_controller', 'computed_torque_controller',
             (('~/reference_trajectory', STAMPED_REFERENCE_TOPIC),)),
)


@dataclass
class IdentifyDemo:
    """The two closed-loop runs, the fit between them and the files written."""

    true: RobotModel
    wrong: RobotModel
    excitation: FourierTrajectory
    before: Recording
    fit: Identification
    after: Recording
    files: dict


def _params(path: Path, model, excitation, excitation_file, controller: dict) -> None:
    """Write the params file of one run: true plant, excitation, the controller's settings."""
    sections = {
        '/**': {'ros__parameters': {'joints': list(model.joint_names)}},
        'plant_simulator': {'ros__parameters': {
            'initial_positions': excitation.q0.tolist(), 'damping': list(DAMPING),
            'integration_rate': INTEGRATION_RATE, 'publish_rate': 250.0, 'command_timeout': 0.5}},
        'reference_generator': {'ros__parameters': {
            'mode': 'excitation', 'excitation_file': str(excitation_file), 'loop': False,
            'rate': 250.0}},
        'computed_torque_controller': {'ros__parameters': {
            'kp': [100.0], 'kd': [20.0], 'state_timeout': 0.1, **controller}},
    }
    path.write_text(yaml.safe_dump(sections, sort_keys=False))


def played(recording: Recording, duration: float) -> bool:
    """
    Return True once a joint state is stamped ``duration`` s after the excitation's t = 0.

    The reference generator starts the excitation when it first hears the controller, on a
    busy machine seconds after the recorder does: a recording of a fixed length would cut the
    excitation short there.
    """
    start = recording.reference_stamp
    return (start is not None and bool(recording.state_stamps)
            and recording.state_stamps[-1][0] - start >= duration)


def fit_data(recording: Recording):
    """Return (t, q, tau) of the joint states from the closed loop on (stamps, efforts)."""
    start = recording.loop_closed()
    if start is None:
        raise RuntimeError('the loop never closed: no joint state with an applied effort')
    t = np.array([s for s, _ in recording.state_stamps[start:]])
    tau = np.array([e for _, e in recording.state_stamps[start:]])
    q = np.array([q for _, q, _ in recording.states[start:]])
    keep = np.concatenate([[True], np.diff(t) > 0])      # a repeated stamp: once
    return t[keep] - t[0], q[keep], tau[keep]


def run_identify_demo(share_dir: str, workdir: str, duration: float = 10.0, env=None,
                      log=print, startup_timeout: float = 180.0) -> IdentifyDemo:
    """Run the three steps; files go to ``workdir``; ``duration``: of the excitation [s]."""
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    true_urdf = os.path.join(share_dir, 'urdf', f'{MACHINE}.urdf')
    true, _ = load_machine(true_urdf)
    P = true.dynamic_parameters()
    wrong_urdf = work / f'{MACHINE}_wrong.urdf'
    urdf_with_parameters(true, P * np.array(WRONG_FACTORS)[:, None],
                         note=' masses and inertias off by 20-40 %: the demo\'s wrong URDF ',
                         path=wrong_urdf)
    wrong = RobotModel.from_urdf_file(wrong_urdf)
    log(f'1. excitation: optimising {duration:g} s for the wrong URDF ({wrong_urdf.name}: '
        f'bodies scaled by {list(WRONG_FACTORS)})...')
    excitation = excitation_trajectory(wrong, duration, harmonics=4, maxiter=20)
    excitation_file = work / 'excitation.yaml'
    excitation.save(excitation_file)
    log(f'   condition number {excitation.condition_number:.4g}; played with the controller '
        'on the wrong URDF, joint states recorded')
    files = {'wrong_urdf': str(wrong_urdf), 'excitation': str(excitation_file)}

    def closed_loop(name, controller_urdf, controller_model, controller_params):
        params = work / f'{name}.yaml'
        _params(params, true, excitation, excitation_file, controller_params)
        graph = Graph(MACHINE, NODES, str(params), true_urdf,
                      (('computed_torque_controller', str(controller_urdf)),))
        recording = run_graph(graph, duration + SETTLE_S + 0.5, controller_model, env,
                              startup_timeout,
                              until=lambda rec: played(rec, excitation.duration))
        failed = {n: c for n, c in recording.exit_codes.items() if c not in (0, None)}
        if failed:
            raise RuntimeError(f'{name}: nodes exited with {failed}:\n' + '\n'.join(
                recording.logs[n] for n in failed))
        return recording

    before = closed_loop('before', wrong_urdf, wrong, {})
    t, q, tau = fit_data(before)
    log(f'2. fit: {len(t)} joint states over {t[-1]:.3g} s (position and effort)')
    # the simulator's effort is the command held over the steps up to the state's stamp
    fit = identify(wrong, q, tau, t=t, friction=('viscous',), cutoff=CUTOFF, max_gap=MAX_GAP,
                   effort='held')
    fitted_urdf = work / f'{MACHINE}_fitted.urdf'
    fitted_params = work / f'{MACHINE}_fitted.yaml'
    fit.to_urdf(fitted_urdf)
    fit.to_params(fitted_params)
    log(fit.report())
    sections = yaml.safe_load(fitted_params.read_text())
    controller = {**sections['/**']['ros__parameters'],
                  **sections['computed_torque_controller']['ros__parameters']}
    controller.pop('joints')
    log(f'3. the controller reloads {fitted_urdf.name} and {fitted_params.name}; the '
        'excitation again')
    after = closed_loop('after', fitted_urdf, RobotModel.from_urdf_file(fitted_urdf),
                        controller)
    files.update(fitted_urdf=str(fitted_urdf), fitted_params=str(fitted_params))
    return IdentifyDemo(true, wrong, excitation, before, fit, after, files)


def tracking_error(recording: Recording, excitation: FourierTrajectory):
    """
    Return (t, e) per joint state from the loop's closing: e = q_d(t) - q, t [s] on the excitation.

    q_d is the excitation itself at the state's stamp, not the latest reference received
    before the state (which lags it by up to a period and a hop: at 2 m/s, millimetres of
    error that no model causes). The excitation's clock starts at the header stamp of the
    stamped references (Recording.reference_start).
    """
    start = recording.loop_closed()
    if start is None:
        raise RuntimeError('no closed loop recorded')
    zero = recording.reference_start()
    t = np.array([stamp for stamp, _ in recording.state_stamps[start:]]) - zero
    q = np.array([q for _, q, _ in recording.states[start:]])
    q_d, _, _ = excitation(t)
    return t, q_d - q


def statistics(recording: Recording, excitation: FourierTrajectory) -> dict:
    """Per joint: RMS, max and median |e| over the excitation, loop closing included."""
    t, e = tracking_error(recording, excitation)
    during = (t >= 0.0) & (t <= excitation.duration)
    if not during.any():
        raise RuntimeError('no joint state recorded during the excitation')
    e = np.abs(e[during])
    return {'rms_error': np.sqrt(np.mean(e ** 2, axis=0)), 'max_error': e.max(axis=0),
            'median_error': np.median(e, axis=0), 'samples': int(during.sum())}


def report(demo: IdentifyDemo) -> str:
    """Return the tracking errors per joint before and after the fit."""
    a = statistics(demo.before, demo.excitation)
    b = statistics(demo.after, demo.excitation)
    lines = [f"{'joint':<14}{'RMS error before':>20}{'after':>14}{'max before':>16}"
             f"{'after':>14}"]
    for i, name in enumerate(demo.before.joint_names):
        unit = 'm' if demo.true.joints[name].type == 'prismatic' else 'rad'
        lines.append(f"{name:<14}{a['rms_error'][i]:>16.3g} {unit:<3}{b['rms_error'][i]:>10.3g} "
                     f"{unit:<3}{a['max_error'][i]:>12.3g} {unit:<3}{b['max_error'][i]:>10.3g} "
                     f'{unit}')
    lines.append(f"(e = q_d - q over the {demo.excitation.duration:g} s excitation from the "
                 f"loop's closing, {a['samples']} and {b['samples']} joint states)")
    return '\n'.join(lines)


def plot(demo: IdentifyDemo, path: str) -> None:
    """Plot per joint the tracking error of both runs against the excitation's time."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    from .run import units
    n = len(demo.before.joint_names)
    fig, axes = plt.subplots(n, 1, figsize=(10, 2.4 * n), sharex=True, squeeze=False)
    for label, recording, style in (('wrong URDF', demo.before, 'C3'),
                                    ('fitted URDF and friction', demo.after, 'C2')):
        t, e = tracking_error(recording, demo.excitation)
        for i, name in enumerate(recording.joint_names):
            unit, scale, _ = units(demo.true.joints[name].type)
            ax = axes[i, 0]
            ax.plot(t, e[:, i] * scale, style, lw=1, label=label)
            ax.axhline(0.0, color='k', lw=0.5)
            ax.set_ylabel(f'{name}\ne = q_d - q [{unit}]')
    axes[0, 0].legend(loc='upper right', fontsize=8)
    axes[-1, 0].set_xlabel('t on the excitation [s]')
    fig.suptitle('kron_dynamics identification demo: tracking the excitation, before and '
                 'after the fit')
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
