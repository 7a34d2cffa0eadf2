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

"""The kron-dynamics command: info and the demo runner (short run, table and plot)."""

import os
import re
import signal
import subprocess
import sys

import pytest

from conftest import REPO, URDF_DIR
from ros_harness import has_loaded, isolated_env, running


def kron_dynamics(*args, timeout=300):
    return subprocess.run([sys.executable, '-m', 'kron_dynamics.cli', *args], cwd=REPO,
                          env=isolated_env(), capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow   # child processes
def test_info_prints_the_model():
    out = kron_dynamics('info', str(URDF_DIR / 'stacker.urdf'))
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for word in ('q1_travel', 'prismatic', 'q2_slew', 'revolute', 'q3_luff', 'total mass 410000',
                 'M(0)', 'G(0)', '2e+06', '5e+07'):
        assert word in text, text


@pytest.mark.slow
def test_info_of_a_floating_base_prints_its_coordinates(tmp_path):
    xml = (URDF_DIR / 'gripper_arm.urdf').read_text()
    floating = tmp_path / 'floating.urdf'
    floating.write_text(xml.replace('<link name="base_link"', (
        '<link name="world"/><joint name="free" type="floating"><parent link="world"/>'
        '<child link="base_link"/></joint><link name="base_link"'), 1))
    out = kron_dynamics('info', str(floating))
    assert out.returncode == 0, out.stderr
    for word in ('on a floating base', 'nq = 10, nv = 9', "'base_vx'", 'shoulder', 'M(0)',
                 "mimic joint 'flap_joint' = 0.02 * 'elbow' + 0.01 (a constraint, not a "
                 'coordinate)'):
        assert word in out.stdout, out.stdout


@pytest.mark.slow
def test_info_reports_a_bad_urdf_clearly(tmp_path):
    bad = tmp_path / 'bad.urdf'
    bad.write_text('<robot name="x"><link name="a"/><joint name="j" type="revolute">'
                   '<parent link="a"/><child link="b"/></joint></robot>')
    out = kron_dynamics('info', str(bad))
    assert out.returncode == 2 and 'bad.urdf' in out.stderr and 'Traceback' not in out.stderr


@pytest.mark.ros
@pytest.mark.slow
def test_demo_runs_the_graph_prints_errors_and_writes_a_plot(tmp_path):
    plot = tmp_path / 'demo.png'
    out = kron_dynamics('demo', 'stacker', '--duration', '3', '--plot', str(plot))
    assert out.returncode == 0, out.stdout + out.stderr
    for word in ('RMS error', 'max error', 'max |tau|', 'q1_travel', 'q3_luff'):
        assert word in out.stdout
    assert plot.is_file() and os.path.getsize(plot) > 10_000


@pytest.mark.slow   # child processes
@pytest.mark.ros
def test_the_rover_arm_demo_says_once_why_its_m_is_singular(tmp_path):
    """Issue 24, finding 6: the loader's warnings for the bundled rover arm came twice."""
    out = kron_dynamics('demo', 'rover_arm', '--duration', '1', '--plot',
                        str(tmp_path / 'rover.png'))
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count('M is singular at q = 0') == 1, out.stdout
    assert 'tiny inertia' not in out.stdout + out.stderr, out.stdout + out.stderr


def _tracked(model):
    """Return a stacker's Recording as the recorder fills it: 1.6 s at 250 Hz, tau_fb = 10."""
    import numpy as np

    from kron_dynamics.demo.run import Recording

    rec = Recording(list(model.joint_names), ('prismatic', 'revolute', 'revolute'), model)
    for k in range(400):
        t = 0.004 * k
        q_d, qd_d, qdd_d = np.full(3, np.sin(t)), np.full(3, np.cos(t)), np.full(3, -np.sin(t))
        rec.references.append((t, q_d, qd_d, qdd_d))
        rec.states.append((t + 0.001, q_d - 0.001, qd_d))
        tau_ff = model.inverse_dynamics(q_d, qd_d, qdd_d)
        rec.commands.append((t + 0.002, tau_ff + 10.0))
    return rec


def test_demo_plot_shows_the_error_with_units_and_the_torque_split(tmp_path):
    """Issue 15: the plot showed q over q_d (the lines covered each other), no units."""
    import numpy as np

    from kron_dynamics import RobotModel
    from kron_dynamics.demo.run import plot

    model = RobotModel.from_urdf_file(URDF_DIR / 'stacker.urdf')
    rec = _tracked(model)
    t, tau, tau_ff, tau_fb = rec.torque_split()
    np.testing.assert_allclose(tau_fb, 10.0, rtol=1e-9)     # the feedback is what was added
    labels = plot(rec, str(tmp_path / 'p.png'), 'test')
    assert 'q1_travel\ne = q_d - q [mm]' in labels and 'q2_slew\ne = q_d - q [mrad]' in labels
    assert 'torque [N]' in labels and 'torque [N m]' in labels
    assert {'command tau', 'feedforward: model at q_d',
            'feedback = tau - feedforward'} <= set(labels)
    assert os.path.getsize(tmp_path / 'p.png') > 10_000


def test_a_demo_whose_node_failed_prints_its_output_and_exits_1(tmp_path, capsys, monkeypatch):
    """The tracking is judged and plotted, and a node that exited with an error fails the demo."""
    import kron_dynamics.demo.run
    from kron_dynamics.cli import demo

    def run_demo(machine, duration, share_dir, model=None):    # the graph, as it ended
        rec = _tracked(model)
        rec.exit_codes = {'plant_simulator': 0, 'reference_generator': None,
                          'dynamics_node': 1}
        rec.logs = {name: f'{name}: its output' for name in rec.exit_codes}
        return rec
    monkeypatch.setattr(kron_dynamics.demo.run, 'run_demo', run_demo)
    assert demo('stacker', 1.0, str(tmp_path / 'p.png')) == 1
    out, err = capsys.readouterr()
    assert '--- dynamics_node exited with 1:\ndynamics_node: its output\n' in err, err
    assert err.count('exited with') == 1, err      # not the node at 0, nor the one still on
    assert 'RMS error' in out and os.path.getsize(tmp_path / 'p.png') > 10_000, out
    monkeypatch.setattr(kron_dynamics.demo.run, 'run_demo',
                        lambda *args, model=None: _tracked(model))
    assert demo('stacker', 1.0, str(tmp_path / 'p.png')) == 0
    assert 'exited with' not in capsys.readouterr().err


def test_a_demo_with_nothing_to_judge_says_so_in_one_line_and_exits_1(tmp_path, capsys,
                                                                      monkeypatch):
    """A graph that recorded nothing (a machine far too busy): no table, no plot, no traceback."""
    import kron_dynamics.demo.identify
    import kron_dynamics.demo.run
    from kron_dynamics.cli import demo, demo_identify
    from kron_dynamics.demo.run import Recording

    def run_demo(machine, duration, share_dir, model=None):     # all nodes ran, none was heard
        rec = Recording(list(model.joint_names), ('prismatic', 'revolute', 'revolute'), model)
        rec.exit_codes = dict.fromkeys(('plant_simulator', 'reference_generator'), 0)
        rec.logs = {}
        return rec
    monkeypatch.setattr(kron_dynamics.demo.run, 'run_demo', run_demo)
    assert demo('stacker', 1.0, str(tmp_path / 'p.png')) == 1
    out, err = capsys.readouterr()
    assert err == 'demo stacker: no tracking data recorded\n', err
    assert 'RMS' not in out and not (tmp_path / 'p.png').exists(), out

    def run_identify_demo(share_dir, workdir, duration, log):
        raise RuntimeError('the loop never closed: no joint state with an applied effort')
    monkeypatch.setattr(kron_dynamics.demo.identify, 'run_identify_demo', run_identify_demo)
    assert demo_identify(1.0, str(tmp_path / 'i.png')) == 1
    out, err = capsys.readouterr()
    assert err == ('demo identify: the loop never closed: no joint state with an applied '
                   'effort\n'), err
    assert not (tmp_path / 'i.png').exists(), out


def test_locked_joints_are_read_from_joint_value_pairs():
    """--locked JOINT=VALUE ...: spaces around the name are not part of it (a quoted item)."""
    from kron_dynamics.cli import _locked
    assert _locked(None) is None and _locked([]) is None
    assert _locked([' panda_finger_joint1 = 0.02', 'slide=-1e-3']) == {
        'panda_finger_joint1': 0.02, 'slide': -0.001}
    for bad, words in ((['slide'], "'slide' is not JOINT=VALUE"),
                       (['slide=x'], "'slide=x' is not JOINT=VALUE"),
                       ([' =1'], "' =1' is not JOINT=VALUE"),
                       (['slide=1', 'slide =2'], "joint 'slide' given twice")):
        with pytest.raises(ValueError, match=f'^--locked: {re.escape(words)}'):
            _locked(bad)


def test_the_demo_records_until_a_state_can_be_judged_against_a_reference():
    """CI: the recorder heard the plant and the controller, not yet the reference generator."""
    import numpy as np

    from kron_dynamics.demo.run import Recording

    rec = Recording(['a'])
    for k in range(500):                 # 2 s of states and commands at 250 Hz, no reference
        t = 0.004 * k
        rec.states.append((t, np.zeros(1), np.zeros(1)))
        rec.state_stamps.append((t, np.ones(1)))
        rec.commands.append((t, np.ones(1)))
    assert rec.judged() == 0             # the run goes on: statistics would have nothing
    with pytest.raises(RuntimeError, match='no tracking data'):
        rec.statistics()
    rec.references.append((1.5, np.zeros(1), np.zeros(1), np.zeros(1)))
    judged = rec.judged()
    assert judged == sum(1 for t, _, _ in rec.states if t >= 1.5)
    assert rec.statistics()['samples'] == judged


def _closing(n_states, closes_at, q_until):
    """Return a Recording at 250 Hz: effort applied from closes_at s on, q = 0.1 before q_until."""
    import numpy as np

    from kron_dynamics.demo.run import Recording

    rec = Recording(['a'])
    for k in range(n_states):
        t = 0.004 * k
        rec.states.append((t, np.full(1, 0.1 if t < q_until else 0.0), np.zeros(1)))
        rec.state_stamps.append((t, np.full(1, 0.0 if t < closes_at else 1.0)))
        rec.commands.append((t, np.ones(1)))
        rec.references.append((t, np.zeros(1), np.zeros(1), np.zeros(1)))
    return rec


def test_the_statistics_start_a_second_after_the_plant_applies_a_command():
    """The simulator holds the plant until it hears the controller: that part is not judged."""
    from kron_dynamics.demo.run import SETTLE_S
    rec = _closing(2000, closes_at=2.0, q_until=2.5)      # 8 s; the loop closes at 2 s
    assert rec.loop_closed() == 500 and rec.settle_start() == rec.states[500][0]
    stats = rec.statistics()
    start = rec.settle_start() + SETTLE_S
    assert stats['samples'] == sum(1 for t, _, _ in rec.states if t >= start)
    assert stats['rms_error'][0] == 0.0 and stats['max_error'][0] == 0.0   # q = 0.1 before
    assert rec.judged() == 1000          # of the last 1000 states only
    held = _closing(300, closes_at=10.0, q_until=0.0)   # never closed: from the first command
    assert held.loop_closed() is None and held.settle_start() == held.commands[0][0]
    late = _closing(600, closes_at=2.0, q_until=0.0)    # closed 0.4 s before the end
    with pytest.raises(RuntimeError, match=r'^no joint state recorded 1 s after the loop '
                                           r'closed \(600 states in all\)'):
        late.statistics()
    with pytest.raises(RuntimeError, match='^no stamped reference of a moving trajectory'):
        late.reference_start()


def test_the_identify_demo_fits_and_judges_from_the_closed_loop_on():
    """fit_data and statistics of ``kron-dynamics demo identify`` on a recording of 4 s."""
    import numpy as np

    from kron_dynamics.demo.identify import fit_data, statistics, tracking_error
    from kron_dynamics.identification.excitation import FourierTrajectory

    rec = _closing(1000, closes_at=1.0, q_until=0.0)   # the loop closes at state 250 (1 s)
    rec.states.insert(601, rec.states[600])            # a state published twice
    rec.state_stamps.insert(601, rec.state_stamps[600])
    t, q, tau = fit_data(rec)
    assert t[0] == 0.0 and len(t) == 750 and np.all(np.diff(t) > 0)
    np.testing.assert_allclose(t[-1], 0.004 * 749, rtol=1e-12)
    assert np.all(tau == 1.0) and q.shape == (750, 1)
    # the excitation rests at q0 = 0.05 for 2 s from the stamped reference's t = 0 (1.501 s);
    # the plant follows it exactly then and is far off (1.0) before and after
    rec.reference_stamp = 1.501
    for k, (t_k, _, qd) in enumerate(rec.states):
        rec.states[k] = (t_k, np.full(1, 0.05 if 1.501 <= t_k <= 3.501 else 1.0), qd)
    rest = FourierTrajectory(('a',), np.array([0.05]), np.zeros((1, 1)), np.zeros((1, 1)),
                             base_frequency=0.5, duration=2.0)
    stats = statistics(rec, rest)
    assert stats['samples'] == 501 and stats['max_error'][0] == 0.0
    rec.reference_stamp = 100.0
    with pytest.raises(RuntimeError, match='^no joint state recorded during the excitation'):
        statistics(rec, rest)
    held = _closing(100, closes_at=10.0, q_until=0.0)
    with pytest.raises(RuntimeError, match='^the loop never closed'):
        fit_data(held)
    with pytest.raises(RuntimeError, match='^no closed loop recorded'):
        tracking_error(held, rest)


def _errors(scale, n_states, loud_until=0):
    """Return e (n_states, 3): scale_i times 1, -0.5, -0.5, -0.5, ...; x10 to loud_until."""
    import numpy as np

    pattern = np.array([1.0, -0.5, -0.5, -0.5])[np.arange(n_states) % 4]
    e = np.outer(pattern, scale)
    e[:loud_until] *= 10.0
    return e


def test_the_demo_table_and_plot_give_rms_max_and_max_abs_torque_in_the_joints_units(tmp_path):
    """
    RMS = sqrt(mean e^2) and max |e| after the first second, max |tau| of every command.

    The errors alternate in sign and size (their RMS, mean |e| and mean e all differ) and are
    ten times larger in the first second; every command is negative.
    """
    import numpy as np

    from kron_dynamics import RobotModel
    from kron_dynamics.demo.run import plot, report

    model = RobotModel.from_urdf_file(URDF_DIR / 'stacker.urdf')
    rec = _tracked(model)
    E = _errors([0.002, 0.01, 0.02], len(rec.states), loud_until=250)
    rec.states = [(t, rec.references[k][1] - E[k], qd) for k, (t, _, qd) in enumerate(rec.states)]
    rec.commands = [(t, -np.abs(tau) - 1.0) for t, tau in rec.commands]
    stats = rec.statistics()
    judged = E[251:]                     # states from 1.005 s: 1 s after the first command
    assert stats['samples'] == len(judged) == 149
    np.testing.assert_allclose(stats['rms_error'], np.sqrt(np.mean(judged ** 2, axis=0)),
                               rtol=1e-9)
    np.testing.assert_allclose(stats['max_error'], [0.002, 0.01, 0.02], rtol=1e-9)
    max_tau = np.max([np.abs(tau) for _, tau in rec.commands], axis=0)
    np.testing.assert_allclose(stats['max_torque'], max_tau, rtol=1e-12)
    lines = report(rec, model).splitlines()
    units = {'q1_travel': ['m', 'N'], 'q2_slew': ['rad', 'N', 'm'],
             'q3_luff': ['rad', 'N', 'm']}
    for i, name in enumerate(model.joint_names):
        row = next(line for line in lines if line.startswith(name)).split()
        unit, *torque_unit = units[name]
        assert row == [name, model.joints[name].type, f"{stats['rms_error'][i]:.3g}", unit,
                       f"{stats['max_error'][i]:.3g}", unit, f'{max_tau[i]:.4g}',
                       *torque_unit], row
    labels = plot(rec, str(tmp_path / 'p.png'), 'test')
    rms = np.sqrt(np.mean(judged ** 2, axis=0)) * 1e3
    assert f'tracking error, RMS after 1 s: {rms[0]:.3g} mm' in labels, labels
    assert f'tracking error, RMS after 1 s: {rms[2]:.3g} mrad' in labels, labels


def test_the_loop_is_closed_by_one_joints_effort_and_settles_from_the_later_of_the_two():
    """A state with any joint's effort applied closes the loop; a command must be out too."""
    import numpy as np

    from kron_dynamics import RobotModel

    rec = _tracked(RobotModel.from_urdf_file(URDF_DIR / 'stacker.urdf'))
    rec.state_stamps = [(t, np.zeros(3)) for t, _, _ in rec.states]
    assert rec.loop_closed() is None and rec.settle_start() == rec.commands[0][0]
    rec.state_stamps[100] = (rec.states[100][0], np.array([0.0, -2.0, 0.0]))
    assert rec.loop_closed() == 100 and rec.settle_start() == rec.states[100][0]
    # the closing state heard before the first command (another topic): the command's time
    rec.state_stamps[0] = (rec.states[0][0], np.array([0.0, 0.0, 3.0]))
    assert rec.states[0][0] < rec.commands[0][0]
    assert rec.loop_closed() == 0 and rec.settle_start() == rec.commands[0][0]


def test_the_identify_demo_judges_rms_median_and_max_of_q_d_minus_q_in_the_joints_units():
    """statistics, tracking_error and report of ``kron-dynamics demo identify``."""
    import numpy as np

    from kron_dynamics import RobotModel
    from kron_dynamics.demo.identify import IdentifyDemo, report, statistics, tracking_error
    from kron_dynamics.demo.run import Recording
    from kron_dynamics.identification.excitation import FourierTrajectory

    model = RobotModel.from_urdf_file(URDF_DIR / 'stacker.urdf')
    q0 = np.array([0.5, 0.2, -0.1])
    rest = FourierTrajectory(tuple(model.joint_names), q0, np.zeros((3, 1)), np.zeros((3, 1)),
                             base_frequency=0.5, duration=2.0)

    def resting(scale):                  # 2 s at 250 Hz from the excitation's t = 0 (10 s)
        rec = Recording(list(model.joint_names))
        rec.reference_stamp = 10.0
        E = _errors(scale, 500)
        for k in range(500):
            rec.states.append((0.004 * k, q0 - E[k], np.zeros(3)))
            rec.state_stamps.append((10.0 + 0.004 * k, np.ones(3)))
        return rec, E

    before, E = resting([0.002, 0.01, 0.02])
    after, E_after = resting([0.0005, 0.0025, 0.005])
    t, e = tracking_error(before, rest)
    np.testing.assert_allclose(t, 0.004 * np.arange(500), atol=1e-12)
    np.testing.assert_allclose(e, E, atol=1e-15)         # q_d - q, not q - q_d
    stats = statistics(before, rest)
    assert stats['samples'] == 500
    np.testing.assert_allclose(stats['rms_error'], np.sqrt(np.mean(E ** 2, axis=0)),
                               rtol=1e-9)
    np.testing.assert_allclose(stats['median_error'], [0.001, 0.005, 0.01], rtol=1e-9)
    np.testing.assert_allclose(stats['max_error'], [0.002, 0.01, 0.02], rtol=1e-9)
    demo = IdentifyDemo(model, model, rest, before, None, after, {})
    lines = report(demo).splitlines()
    rms_after = np.sqrt(np.mean(E_after ** 2, axis=0))
    for i, name in enumerate(model.joint_names):
        unit = 'm' if i == 0 else 'rad'
        row = next(line for line in lines if line.startswith(name)).split()
        assert row == [name, f"{stats['rms_error'][i]:.3g}", unit, f'{rms_after[i]:.3g}', unit,
                       f"{stats['max_error'][i]:.3g}", unit,
                       f'{E_after[:, i].max():.3g}', unit], row
    assert lines[-1] == ("(e = q_d - q over the 2 s excitation from the loop's closing, 500 "
                         'and 500 joint states)')


def test_the_demo_graph_gives_each_node_its_parameters_urdf_and_remappings(tmp_path):
    """node_parameters: '/**' then the node's own, which win; node_urdfs replace urdf_file."""
    from kron_dynamics.demo.graph import DEMO_NODES, demo_graph, Graph, node_parameters
    from kron_dynamics.demo.run import node_command
    with pytest.raises(ValueError, match=r"^unknown demo 'crane'; choose one of "
                                         r"\['rover_arm', 'stacker'\]"):
        demo_graph('crane', str(REPO))
    params = tmp_path / 'params.yaml'
    params.write_text("/**:\n  ros__parameters: {joints: [a], armature: [0.1]}\n"
                      "computed_torque_controller:\n  ros__parameters: {armature: [0.5]}\n")
    graph = Graph('test', DEMO_NODES, str(params), 'true.urdf',
                  (('computed_torque_controller', 'fitted.urdf'),))
    assert node_parameters(graph, 'computed_torque_controller') == {'joints': ['a'],
                                                                    'armature': [0.5]}
    assert node_parameters(graph, 'dynamics_node') == {'joints': ['a'], 'armature': [0.1]}
    commands = {spec.name: node_command(spec, graph) for spec in DEMO_NODES}
    assert 'urdf_file:=fitted.urdf' in commands['computed_torque_controller']
    assert 'urdf_file:=true.urdf' in commands['plant_simulator']
    controller = commands['computed_torque_controller']
    remap = controller.index('~/reference_trajectory:=/reference_trajectory')
    assert controller[remap - 1] == '-r'
    assert '~/reference:=/reference' in commands['dynamics_node']


def test_the_demo_passes_on_every_loader_warning_but_the_singular_m(tmp_path, caplog):
    import logging

    from kron_dynamics.demo.run import load_machine
    urdf = tmp_path / 'rover_arm.urdf'
    urdf.write_text('\n' + (URDF_DIR / 'rover_arm.urdf').read_text())   # a blank line first
    with caplog.at_level(logging.WARNING, logger='kron_dynamics'):
        model, note = load_machine(urdf)
    assert note.startswith('rover_arm: M is singular at q = 0 (joints joint3, joint5 move')
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1 and 'blank text before the XML declaration' in messages[0]
    assert logging.getLogger('kron_dynamics').propagate


def test_the_demo_says_once_that_a_joint_moving_no_mass_makes_m_singular(tmp_path, caplog):
    """The loader's 'moves no mass' line goes into the one note, as a tiny inertia does."""
    import logging

    from kron_dynamics.demo.run import load_machine
    limit = '<limit lower="-1" upper="1" effort="1" velocity="1"/>'
    urdf = tmp_path / 'r.urdf'
    urdf.write_text(
        '<robot name="r"><link name="base"/><link name="a"/><link name="b"><inertial>'
        '<mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/>'
        '</inertial></link><joint name="j" type="revolute"><parent link="base"/>'
        f'<child link="a"/><axis xyz="0 0 1"/>{limit}</joint><joint name="k" '
        f'type="prismatic"><parent link="base"/><child link="b"/>{limit}</joint></robot>')
    with caplog.at_level(logging.WARNING, logger='kron_dynamics'):
        _, note = load_machine(urdf)
    assert note.startswith('r: M is singular at q = 0 (joints j move no inertia'), note
    assert not caplog.records, [r.getMessage() for r in caplog.records]


def test_the_identify_demo_records_until_the_excitation_was_played_whole():
    """played: a joint state stamped the excitation's duration after its t = 0."""
    import numpy as np

    from kron_dynamics.demo.identify import played
    from kron_dynamics.demo.run import Recording

    rec = Recording(['a'])
    rec.state_stamps = [(100.0 + 0.004 * k, np.ones(1)) for k in range(1000)]   # to 103.996
    assert not played(rec, 2.0)          # no stamped reference of a moving trajectory yet
    rec.reference_stamp = 102.0
    assert not played(rec, 2.0)          # 1.996 s of it
    rec.state_stamps.append((104.0, np.ones(1)))
    assert played(rec, 2.0) and not played(rec, 2.5)
    assert not played(Recording(['a'], reference_stamp=1.0), 0.0)     # no state at all


def test_the_identify_demo_fails_naming_a_node_that_exited_with_an_error(
        tmp_path, monkeypatch):
    """A node that ended with a status other than 0 fails the run with its log; one on is fine."""
    import kron_dynamics.demo.identify as identify
    from kron_dynamics.demo.run import Recording

    calls = []

    def run_graph(graph, duration, model, env, startup_timeout, until):
        calls.append(duration)
        rec = Recording(list(model.joint_names))
        rec.exit_codes = {'plant_simulator': 0, 'reference_generator': None,
                          'computed_torque_controller': 1}
        rec.logs = {name: f'{name}: its output' for name in rec.exit_codes}
        return rec
    monkeypatch.setattr(identify, 'run_graph', run_graph)
    with pytest.raises(RuntimeError) as raised:
        identify.run_identify_demo(str(REPO), str(tmp_path), duration=1.0, log=lambda _: None)
    assert str(raised.value) == ("before: nodes exited with {'computed_torque_controller': 1}:"
                                 '\ncomputed_torque_controller: its output')
    assert len(calls) == 1


@pytest.mark.slow   # a child process
def test_demo_static_prints_m_c_star_and_g_of_the_machine_at_a_sample_state():
    """``demo MACHINE --static``: the matrices of the closed form at one state, no nodes."""
    import numpy as np
    from kron_dynamics import RobotModel
    from kron_dynamics.resources import data_dir
    done = kron_dynamics('demo', 'rover_arm', '--static', timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    model = RobotModel.from_urdf_file(data_dir('urdf') / 'rover_arm.urdf')
    q, qd = np.linspace(0.3, 0.6, model.n), np.linspace(0.05, 0.1, model.n)
    printed, name = {}, None
    for line in done.stdout.splitlines():
        if line.endswith(' ='):
            name = line[:-2]
            printed[name] = []
        elif line.startswith('  [') and name is not None:
            printed[name].append([float(v) for v in line.strip(' []').split()])
    expected = {'M(q)': model.mass_matrix(q), 'C*(q)': model.coriolis_star(q),
                'G(q)': [model.gravity_torque(q)],
                'C*(q)(qd kron qd)': [model.coriolis_star(q) @ np.kron(qd, qd)]}
    assert list(printed) == list(expected), done.stdout
    for key, value in expected.items():     # six significant digits
        np.testing.assert_allclose(printed[key], value, rtol=1e-5,
                                   atol=1e-5 * np.abs(value).max(), err_msg=key)
    assert f'rover_arm: joints {model.joint_names}' in done.stdout, done.stdout
    assert f'q = {q.tolist()}, qd = {qd.tolist()}' in done.stdout, done.stdout


@pytest.mark.parametrize('duration', ['-1', '0', 'nan', 'inf', 'ten'])
def test_demo_refuses_a_duration_that_is_not_a_finite_positive_number(duration, capsys):
    """Refused by argparse before any node starts: -1 s used to run the demo, inf forever."""
    from kron_dynamics.cli import main
    for machine in ('stacker', 'identify'):
        with pytest.raises(SystemExit) as stop:
            main(['demo', machine, '--duration', duration])
        assert stop.value.code == 2
        assert ("argument --duration: must be a finite number of seconds > 0, got "
                f"'{duration}'") in capsys.readouterr().err


def test_a_graph_refuses_a_duration_before_it_starts():
    from kron_dynamics.demo.run import run_graph
    for duration in (-1.0, 0.0, float('nan'), float('inf')):
        with pytest.raises(ValueError, match='^duration must be a finite number of seconds > 0'):
            run_graph(None, duration, None)


def _children(pid: int) -> list:
    """Return the pids whose parent is pid (Linux /proc)."""
    found = []
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open(f'/proc/{entry}/stat') as f:
                    if int(f.read().rpartition(')')[2].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return found


def _describe(pid: int) -> str:
    """Say what a process is doing (Linux /proc): command, state, signals, wait, its output."""
    def read(name, size=None):
        try:
            with open(f'/proc/{pid}/{name}', errors='replace') as f:
                return f.read() if size is None else f.read()[-size:]
        except OSError as exc:
            return f'({exc.strerror})'
    fields = ('State', 'PPid', 'Threads', 'SigPnd', 'ShdPnd', 'SigBlk', 'SigIgn', 'SigCgt')
    status = [line.strip() for line in read('status').splitlines()
              if line.partition(':')[0] in fields]
    return (f"pid {pid}: {read('cmdline').replace(chr(0), ' ')[:300]}\n"
            f"  {'; '.join(status)}; wchan {read('wchan')}\n"
            f"  its output (stdout, the last 4000 characters):\n{read('fd/1', 4000)}")


@pytest.mark.ros
@pytest.mark.slow   # child processes
@pytest.mark.skipif(not sys.platform.startswith('linux'), reason='Linux only: the fix is '
                    "the kernel's parent-death signal (prctl PR_SET_PDEATHSIG) and the test "
                    "finds the demo's nodes in /proc")
@pytest.mark.parametrize('signum', [signal.SIGTERM, signal.SIGKILL])
def test_a_demo_stopped_or_killed_leaves_no_node_running(signum, tmp_path):
    """A kill stops the graph's nodes (clean-up), a kill -9 too (their parent-death signal)."""
    import time
    demo = subprocess.Popen(
        [sys.executable, '-m', 'kron_dynamics.cli', 'demo', 'stacker', '--duration', '1000',
         '--plot', str(tmp_path / 'demo.png')], cwd=REPO, env=isolated_env(),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    nodes = []
    try:
        deadline = time.monotonic() + 180
        while len(nodes) < 4 and time.monotonic() < deadline and demo.poll() is None:
            time.sleep(0.2)
            nodes = _children(demo.pid)
        assert len(nodes) == 4, f'the demo started {nodes} (exit {demo.poll()})'
        # up: each has loaded rcl (after its parent-death signal was armed, before spinning)
        while not all(has_loaded(pid, 'librcl.so') for pid in nodes) \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        assert all(has_loaded(pid, 'librcl.so') for pid in nodes), 'the nodes did not start'
        demo.send_signal(signum)
        demo.wait(timeout=120)
        # SIGTERM: SystemExit(143) through the graph's clean-up, not the default action
        assert demo.returncode == (128 + signum if signum == signal.SIGTERM else -signum)
        deadline = time.monotonic() + 120
        while any(running(pid) for pid in nodes) and time.monotonic() < deadline:
            time.sleep(0.2)
        alive = [pid for pid in nodes if running(pid)]
        assert not alive, 'nodes outlived the demo:\n' + '\n'.join(map(_describe, alive))
    finally:
        demo.kill()
        demo.wait()
        for pid in nodes:
            if running(pid):
                try:
                    os.kill(pid, signal.SIGKILL)     # what the assertion found: no orphan
                except ProcessLookupError:
                    pass
