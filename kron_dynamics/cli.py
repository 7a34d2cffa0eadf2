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
The ``kron-dynamics`` command.

``info URDF``, ``demo MACHINE``, ``equations SOURCE``, ``excite URDF -o EXCITATION.yaml``,
``identify URDF BAG_OR_CSV -o FITTED.urdf``.
"""

import argparse
import signal
import sys

import numpy as np

from .errors import ConfigurationError, ModelError
from .resources import data_dir
from .robot_model import RobotModel


def _matrix(name: str, A: np.ndarray) -> str:
    rows = np.atleast_2d(A)
    body = '\n'.join('  [' + ' '.join(f'{v: .6g}' for v in row) + ']' for row in rows)
    return f'{name} =\n{body}'


def info(path: str) -> int:
    """Print joints, limits, masses, M(0) and G(0) of a URDF (a moving base: at neutral)."""
    loaded = RobotModel.from_urdf_file(path)
    model = getattr(loaded, 'fixed', loaded)      # a floating or planar base: its tree
    if model is not loaded:
        print(f"robot '{loaded.name}' on a {loaded.base} base (link '{loaded.base_link}'): "
              f'nq = {loaded.nq}, nv = {loaded.nv}; coordinates {list(loaded.velocity_names)}')
    print(f"robot '{model.name}': {model.n} joint(s), root link '{model.root_link}', "
          f'total mass {model.total_mass:.6g} kg, gravity {model.gravity.tolist()}')
    print(f"{'joint':<24}{'type':<12}{'lower':>12}{'upper':>12}{'effort':>12}{'velocity':>12}"
          f"{'moved mass':>14}")
    for name, moved in zip(model.joint_names, model.moved_mass()):
        j = model.joints[name]
        print(f'{name:<24}{j.type:<12}{j.lower:>12.6g}{j.upper:>12.6g}{j.effort:>12.6g}'
              f'{j.velocity:>12.6g}{moved:>14.6g}')
    for mimic in model.mimic_joints.values():
        print(f"mimic joint '{mimic.name}' = {mimic.multiplier:.6g} * '{mimic.primary}' + "
              f'{mimic.offset:.6g} (a constraint, not a coordinate)')
    q0 = np.zeros(model.n) if model is loaded else loaded.neutral()
    print(_matrix('M(0)', loaded.mass_matrix(q0)))
    print(_matrix('G(0)', loaded.gravity_torque(q0)))
    return 0


def demo_static(machine: str) -> int:
    """Print M, C* and G of a bundled machine at a sample state."""
    model = RobotModel.from_urdf_file(data_dir('urdf') / f'{machine}.urdf')
    q = np.linspace(0.3, 0.6, model.n)
    qd = np.linspace(0.05, 0.1, model.n)
    print(f'{machine}: joints {model.joint_names}')
    print(f'q = {q.tolist()}, qd = {qd.tolist()}')
    print(_matrix('M(q)', model.mass_matrix(q)))
    print(_matrix('C*(q)', model.coriolis_star(q)))
    print(_matrix('G(q)', model.gravity_torque(q)))
    print(_matrix('C*(q)(qd kron qd)', model.coriolis_star(q) @ np.kron(qd, qd)))
    return 0


def demo(machine: str, duration: float, plot_file: str) -> int:
    """Run the computed-torque demo graph and print the tracking statistics."""
    from .demo.run import load_machine, plot, report, run_demo
    share = data_dir('urdf').parent
    print(f'running the {machine} demo for {duration:g} s (plant simulator, reference '
          'generator, computed-torque controller, dynamics node)...', flush=True)
    model, note = load_machine(data_dir('urdf') / f'{recording_urdf(machine)}')
    if note:
        print(note, flush=True)
    recording = run_demo(machine, duration, str(share), model=model)
    failed = {name: code for name, code in recording.exit_codes.items() if code not in (0, None)}
    for name in failed:
        print(f'--- {name} exited with {failed[name]}:\n{recording.logs[name]}', file=sys.stderr)
    try:
        print(report(recording, model))
    except RuntimeError as exc:        # nothing to judge: say so, no traceback
        print(f'demo {machine}: {exc}', file=sys.stderr)
        return 1
    plot(recording, plot_file, f'kron_dynamics {machine} computed-torque demo')
    print(f'plot: {plot_file}')
    return 1 if failed else 0


def _locked(items) -> dict | None:
    """Return {joint: coordinate} of ``--locked JOINT=VALUE ...``; ValueError naming a bad one."""
    if not items:
        return None
    locked = {}
    for item in items:
        joint, _, value = item.partition('=')
        joint = joint.strip()
        try:
            coordinate = float(value)
        except ValueError:
            joint = ''
        if not joint:
            raise ValueError(f'--locked: {item!r} is not JOINT=VALUE (a coordinate in rad or m, '
                             'e.g. panda_finger_joint1=0.02)')
        if joint in locked:
            raise ValueError(f'--locked: joint {joint!r} given twice')
        locked[joint] = coordinate
    return locked


def _identification(args) -> int:
    """Run ``excite`` or ``identify``; bad data or arguments end in one line, exit code 2."""
    from .identification.command import excite_command, identify_command
    try:
        if args.command == 'excite':
            return excite_command(args.urdf, args.output, args.duration, args.harmonics,
                                  args.base_frequency, args.margin, args.max_acceleration,
                                  args.maxiter, args.joints, _locked(args.locked))
        return identify_command(args.urdf, args.data, args.output, args.params, args.method,
                                tuple(args.friction), args.cutoff, args.topic, args.validate,
                                args.prior_weight, args.joints, args.max_gap, args.effort,
                                _locked(args.locked))
    except (ValueError, OSError) as exc:
        text = str(exc)
        prefix = f'{args.command}: '      # a library message may name its function already
        print(f'kron-dynamics {args.command}: '
              f'{text[len(prefix):] if text.startswith(prefix) else text}', file=sys.stderr)
        return 2


def demo_identify(duration: float, plot_file: str) -> int:
    """Run the identification demo: tracking with a wrong URDF, the fit, tracking again."""
    import tempfile
    from .demo.identify import plot, report, run_identify_demo
    share = data_dir('urdf').parent
    workdir = tempfile.mkdtemp(prefix='kron_dynamics_identify_')
    print('identification demo: the plant simulator runs the true stacker (with friction), '
          f'the controller starts from a wrong URDF; files in {workdir}', flush=True)
    try:
        demo = run_identify_demo(str(share), workdir, duration,
                                 log=lambda text: print(text, flush=True))
        print(report(demo))
    except RuntimeError as exc:
        print(f'demo identify: {exc}', file=sys.stderr)
        return 1
    plot(demo, plot_file)
    print(f'plot: {plot_file}')
    return 0


def recording_urdf(machine: str) -> str:
    """Return the bundled URDF file name of a demo machine."""
    from .demo.graph import DEMO_URDFS
    return DEMO_URDFS[machine]


def _seconds(text: str) -> float:
    """Return a command line's duration: a finite number > 0 (argparse names the option)."""
    try:
        value = float(text)
    except ValueError:
        value = float('nan')
    if not 0.0 < value < float('inf'):
        raise argparse.ArgumentTypeError(f'must be a finite number of seconds > 0, got {text!r}')
    return value


def main(argv=None) -> int:
    """Entry point of the ``kron-dynamics`` command."""
    parser = argparse.ArgumentParser(prog='kron-dynamics', description=__doc__)
    sub = parser.add_subparsers(dest='command', required=True)
    p_info = sub.add_parser('info', help='print a URDF model: joints, limits, masses, M(0), G(0)')
    p_info.add_argument('urdf')
    p_demo = sub.add_parser('demo', help='run a bundled machine demo')
    p_demo.add_argument('machine', choices=['stacker', 'rover_arm', 'identify'],
                        help="a machine's computed-torque demo, or 'identify': the stacker "
                             'from a wrong URDF, its excitation, the fit, tracking before and '
                             'after')
    p_demo.add_argument('--duration', type=_seconds, default=10.0,
                        help='seconds of real time to run (identify: of the excitation, '
                             'played twice; default 10)')
    p_demo.add_argument('--plot', default=None,
                        help='PNG file: tracking error and torque split per joint '
                             '(default <machine>_demo.png)')
    p_demo.add_argument('--static', action='store_true',
                        help='only print M, C* and G at a sample state, run no nodes')
    p_eq = sub.add_parser(
        'equations', help="print the closed-form equations of motion M q'' + C*(q)(q' kron q') "
                          '+ G(q) = tau (text, LaTeX or a generated Python module)')
    p_eq.add_argument('source', help='URDF file, DH table YAML file (.yaml/.yml, schema in '
                                     'kron_dynamics.symbolic) or a bundled machine name '
                                     '(stacker = its symbolic DH table, rover_arm, ...)')
    p_eq.add_argument('--symbolic-parameters', action='store_true',
                      help='keep masses, lengths and inertias as symbols (m3, l3, I3x, ...)')
    p_eq.add_argument('--format', choices=['text', 'latex', 'python'], default='text')
    p_eq.add_argument('--max-seconds', type=float, default=None,
                      help='time bound of the symbolic computation (default 30, 0 = none)')
    p_eq.add_argument('--max-operations', type=int, default=None,
                      help='size bound of M, C*, G expanded (default 500000, 0 = none)')
    p_eq.add_argument('--output', '-o', default=None, help='write to this file, not stdout')
    p_ex = sub.add_parser('excite', help='optimise an excitation trajectory for identification '
                                         '(a Fourier series within the joint limits) -> YAML')
    p_ex.add_argument('urdf')
    p_ex.add_argument('--output', '-o', required=True, help='the excitation YAML to write')
    p_ex.add_argument('--duration', type=float, default=20.0, help='seconds (default 20)')
    p_ex.add_argument('--harmonics', type=int, default=5, help='per joint (default 5)')
    p_ex.add_argument('--base-frequency', type=float, default=None,
                      help='Hz (default 1 / duration)')
    p_ex.add_argument('--margin', type=float, default=0.05,
                      help='share of every limit kept free (default 0.05)')
    p_ex.add_argument('--max-acceleration', type=float, default=None,
                      help='rad/s^2 or m/s^2 (default 5 / s times the velocity limit)')
    p_ex.add_argument('--maxiter', type=int, default=60, help='optimiser iterations')
    p_ex.add_argument('--joints', nargs='+', default=None,
                      help='the joints to move (default all; the others are locked at 0)')
    p_ex.add_argument('--locked', nargs='+', default=None, metavar='JOINT=VALUE',
                      help='joints held at these coordinates [rad or m], e.g. a gripper: '
                           'panda_finger_joint1=0.02')
    p_id = sub.add_parser('identify', help="fit a URDF's masses, inertias and friction to "
                                           'recorded joint states -> a corrected URDF')
    p_id.add_argument('urdf')
    p_id.add_argument('data', help='rosbag2 directory of sensor_msgs/JointState, or CSV '
                                   '(t, <joint>.position, <joint>.effort columns)')
    p_id.add_argument('--output', '-o', required=True, help='the fitted URDF to write')
    p_id.add_argument('--params', default=None,
                      help='params YAML for the nodes (default: the output with .yaml)')
    p_id.add_argument('--method', choices=['physically_consistent', 'least_squares'],
                      default='physically_consistent')
    p_id.add_argument('--friction', nargs='*', default=['viscous', 'coulomb'],
                      choices=['viscous', 'coulomb', 'offset', 'armature'])
    p_id.add_argument('--cutoff', type=float, default=10.0,
                      help="Hz of the zero-phase filter that gives q', q'' (default 10)")
    p_id.add_argument('--max-gap', type=float, default=None,
                      help='a gap [s] between joint states longer than this splits the '
                           'recording; each part is filtered alone (default 0.5 / cutoff)')
    p_id.add_argument('--effort', choices=['instant', 'held'], default='instant',
                      help="an effort sample is the effort at its stamp ('instant', a "
                           "measured torque) or held since the sample before ('held': the "
                           'command a simulator or drive applied until that state)')
    p_id.add_argument('--topic', default='/joint_states', help='of the bag')
    p_id.add_argument('--validate', type=float, default=0.2,
                      help='share of the recording held out for validation (default 0.2)')
    p_id.add_argument('--prior-weight', type=float, default=1e-6,
                      help='pull toward the URDF as given (physically consistent fit)')
    p_id.add_argument('--joints', nargs='+', default=None,
                      help='the recorded joints (default all; the others are locked at 0)')
    p_id.add_argument('--locked', nargs='+', default=None, metavar='JOINT=VALUE',
                      help='joints held at these coordinates [rad or m] in the recording, '
                           'e.g. a gripper: panda_finger_joint1=0.02 (the params file '
                           'says so to the nodes)')
    args = parser.parse_args(argv)
    try:
        if args.command == 'info':
            return info(args.urdf)
        if args.command in ('excite', 'identify'):
            return _identification(args)
        if args.command == 'equations':
            from .symbolic.command import equations_command
            return equations_command(args.source, args.symbolic_parameters, args.format,
                                     args.max_seconds, args.max_operations, args.output)
        # SIGTERM (kill, a CI or systemd stop): SystemExit, so that the graph's clean-up stops
        # its nodes; without it the process ended at once and left them running
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
        if args.machine == 'identify':
            return demo_identify(args.duration, args.plot or 'identify_demo.png')
        if args.static:
            return demo_static(args.machine)
        return demo(args.machine, args.duration, args.plot or f'{args.machine}_demo.png')
    except (ModelError, ConfigurationError) as exc:
        print(f'kron-dynamics: {exc}', file=sys.stderr)
        return 2
    except OSError as exc:        # an output file that cannot be written, ...
        print(f'kron-dynamics {args.command}: {exc}', file=sys.stderr)
        return 2


if __name__ == '__main__':
    sys.exit(main())
