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
excitation_trajectory: a Fourier excitation within the limits, better conditioned than chance.

On example-robot-data's UR5 and the Panda with its mimic hand: every sample of the
trajectory within the URDF's position, velocity and effort limits and the acceleration
limit; rest to rest; q', q'' the derivatives of q (finite differences); the optimisation
lowers the condition number of the base regressor below its random start's; the YAML
round-trips exactly and names what is wrong in a bad file; the JointTrajectory message
holds the same samples; noise-free torques on it give back the base parameters.
"""

import re
import warnings

import numpy as np
import pytest

from kron_dynamics import ConfigurationError, ModelError, RobotModel
from kron_dynamics.identification import (excitation_trajectory, FourierTrajectory, identify)
from pinocchio_oracle import ONE_MODEL_CASES, robots_dir

pytestmark = pytest.mark.slow       # optimisations of a few seconds


def model(kind='fixed arm'):
    return RobotModel.from_urdf_file(robots_dir() / ONE_MODEL_CASES[kind][0])


@pytest.fixture(scope='module')
def ur5_excitation():
    robot = model()
    return robot, excitation_trajectory(robot, 10.0, harmonics=4, maxiter=15)


@pytest.mark.parametrize('kind', ['fixed arm', 'mimic gripper'])
def test_the_excitation_stays_within_every_limit_and_goes_rest_to_rest(kind):
    robot = model(kind)
    trajectory = excitation_trajectory(robot, 8.0, harmonics=4, base_frequency=0.25,
                                       maxiter=5, max_acceleration=(
                                           6.0 if kind == 'fixed arm' else [6.0]))  # 1 or [1]
    t, q, qd, qdd = trajectory.sample(400.0)
    lower, upper = robot.position_limits
    assert np.all(q >= lower) and np.all(q <= upper)
    assert np.all(np.abs(qd) <= robot.velocity_limits)
    assert np.all(np.abs(qdd) <= 6.0)
    assert np.all(np.abs(robot.inverse_dynamics(q, qd, qdd)) <= robot.effort_limits)
    for k in (0, -1):
        np.testing.assert_allclose(qd[k], 0.0, atol=1e-12)
        np.testing.assert_allclose(qdd[k], 0.0, atol=1e-12)
    np.testing.assert_allclose(q[-1], q[0], atol=1e-12)
    np.testing.assert_allclose(q[0], trajectory.q0, atol=1e-15)
    # at rest just inside [0, duration] too (at its ends the trajectory rests by definition)
    for s in (1e-9, 8.0 - 1e-9):
        _, qd_s, qdd_s = trajectory(s)
        np.testing.assert_allclose(qd_s, 0.0, atol=1e-7)
        np.testing.assert_allclose(qdd_s, 0.0, atol=1e-6)
    # the motion is not trivial: each joint uses a good part of one of its limits
    use = np.maximum.reduce([np.abs(qd).max(axis=0) / robot.velocity_limits,
                             np.abs(qdd).max(axis=0) / 6.0,
                             np.ptp(q, axis=0) / (upper - lower)])
    assert np.all(use > 0.5), use
    # derivatives: central differences of q and q'
    h = 1e-6
    for s in (0.3, 2.9, 7.1):
        qp, qdp, _ = trajectory(s + h)
        qm, qdm, _ = trajectory(s - h)
        _, qd_s, qdd_s = trajectory(s)
        np.testing.assert_allclose((qp - qm) / (2 * h), qd_s, atol=1e-6)
        np.testing.assert_allclose((qdp - qdm) / (2 * h), qdd_s, atol=1e-5)
    # outside [0, duration] it rests at q0
    for s in (-1.0, 9.0):
        q_s, qd_s, qdd_s = trajectory(s)
        np.testing.assert_array_equal(q_s, trajectory.q0)
        assert not qd_s.any() and not qdd_s.any()


def test_limits_a_urdf_leaves_open_get_the_documented_defaults():
    """
    A UR5 with velocity="0" and effort="0" (what many URDFs write for "not given"): 2 rad/s.

    URDF has no acceleration limit: it is 5 / s times the velocity limit, 10 rad/s^2 here.
    An effort limit of 0 is none (read as 0 N m, no motion would be found). A 2 s period
    makes the acceleration bind on some joints.
    """
    xml = (robots_dir() / ONE_MODEL_CASES['fixed arm'][0]).read_text()
    open_limits = RobotModel.from_urdf_string(
        re.sub(r'velocity="[^"]*"', 'velocity="0"', re.sub(r'effort="[^"]*"', 'effort="0"', xml)))
    trajectory = excitation_trajectory(open_limits, 2.0, harmonics=4, maxiter=5)
    t, q, qd, qdd = trajectory.sample(1000.0)
    assert np.abs(qd).max() <= 2.0 and np.abs(qdd).max() <= 10.0, (qd, qdd)
    use = np.maximum(np.abs(qd).max(axis=0) / 2.0, np.abs(qdd).max(axis=0) / 10.0)
    assert np.all(use > 0.9), use        # 0.95 (the margin's) on each joint


def test_joints_without_position_limits_move_within_plus_minus_pi():
    """The UR5's joints made continuous: +-pi rad less the 5 % margin; a 10 s period binds it."""
    xml = (robots_dir() / ONE_MODEL_CASES['fixed arm'][0]).read_text()
    continuous = RobotModel.from_urdf_string(xml.replace('type="revolute"', 'type="continuous"'))
    assert np.all(np.isinf(continuous.position_limits[1]))
    trajectory = excitation_trajectory(continuous, 10.0, harmonics=4, maxiter=5)
    _, q, _, _ = trajectory.sample(200.0)
    bound = np.pi * 0.9                 # the range 2 pi less 5 % of it at either end
    # (scaled on a grid 10 x finer than the optimisation's: between its points, 1e-5 more)
    assert np.all(np.abs(q) <= bound * (1 + 1e-4))
    assert np.ptp(q, axis=0).max() > 0.99 * 2 * bound     # the positions bind a joint


def test_every_amplitude_is_scaled_down_together_until_the_torques_are_within_effort():
    """The UR5's wrists limited to 0.5 N m: the same motion, all of it 0.8^k as large."""
    xml = (robots_dir() / ONE_MODEL_CASES['fixed arm'][0]).read_text()
    weak = RobotModel.from_urdf_string(xml.replace('effort="28.0"', 'effort="0.5"'))
    free = excitation_trajectory(model(), 10.0, harmonics=3, maxiter=0)
    held = excitation_trajectory(weak, 10.0, harmonics=3, maxiter=0)
    ratio = held.a[free.a != 0] / free.a[free.a != 0]
    k = np.log(ratio[0]) / np.log(0.8)
    assert 2 <= round(k) <= 16 and k == pytest.approx(round(k), abs=1e-9), k
    np.testing.assert_allclose(ratio, 0.8 ** round(k), rtol=1e-12)
    np.testing.assert_allclose(held.b, free.b * 0.8 ** round(k), rtol=1e-12, atol=1e-15)
    _, q, qd, qdd = held.sample(100.0)
    peak = np.abs(weak.inverse_dynamics(q, qd, qdd)).max(axis=0) / (0.95 * weak.effort_limits)
    assert np.all(peak <= 1.0 + 1e-3) and peak.max() > 0.8 ** 2, peak    # 0.8 x: it binds


def test_a_motion_that_excites_nothing_costs_a_finite_penalty():
    """All coefficients 0: a singular regressor; the optimiser gets 1e3, not inf or NaN."""
    from kron_dynamics.identification import base_parameters
    from kron_dynamics.identification.excitation import _limits, _Problem
    robot = model()
    for criterion in ('cond', 'logdet'):
        problem = _Problem(robot, _limits(robot, 0.05, None), 0.1, 3,
                           base_parameters(robot).independent, ('viscous', 'coulomb'), 0.01,
                           criterion, 100)
        with warnings.catch_warnings():
            warnings.simplefilter('error')             # no division by zero on the way
            assert problem.cost(np.zeros(2 * robot.n * 2)) == 1e3


def test_the_optimisation_lowers_the_condition_number():
    robot = model()
    start = excitation_trajectory(robot, 10.0, harmonics=4, maxiter=0)
    optimised = excitation_trajectory(robot, 10.0, harmonics=4, maxiter=15)
    assert optimised.condition_number < 0.8 * start.condition_number
    # the reported number is the base regressor's with the friction columns, recomputed here
    from kron_dynamics.identification import base_parameters, friction_regressor
    t, q, qd, qdd = optimised.sample(100.0)
    W = np.concatenate([robot.regressor(q, qd, qdd)[:, :, base_parameters(robot).independent],
                        friction_regressor(qd, qdd, ('viscous', 'coulomb'), 0.01)], axis=-1)
    sv = np.linalg.svd(W.reshape(-1, W.shape[-1]), compute_uv=False)
    assert sv[0] / sv[-1] == pytest.approx(optimised.condition_number, rel=0.05)


def test_logdet_criterion_and_repeatability():
    """The log-determinant of the information matrix rises from the random start's."""
    robot = model()
    a = excitation_trajectory(robot, 10.0, harmonics=3, maxiter=3, criterion='logdet')
    b = excitation_trajectory(robot, 10.0, harmonics=3, maxiter=3, criterion='logdet')
    np.testing.assert_array_equal(a.a, b.a)
    assert np.isfinite(a.condition_number)
    start = excitation_trajectory(robot, 10.0, harmonics=3, maxiter=0, criterion='logdet')
    from kron_dynamics.identification import base_parameters, friction_regressor

    def logdet(trajectory):
        t, q, qd, qdd = trajectory.sample(100.0)
        W = np.concatenate([robot.regressor(q, qd, qdd)[:, :, base_parameters(robot).independent],
                            friction_regressor(qd, qdd, ('viscous', 'coulomb'), 0.01)], axis=-1)
        return np.linalg.slogdet(np.einsum('tji,tjk->ik', W, W) / len(t))[1]
    assert logdet(a) > logdet(start) + 1.0, (logdet(a), logdet(start))


def test_more_restarts_keep_the_best_optimum():
    """Three starts from the same seed: the first is one of them, and with rng 0 not the best."""
    robot = model()
    one = excitation_trajectory(robot, 10.0, harmonics=3, maxiter=2, restarts=1)
    three = excitation_trajectory(robot, 10.0, harmonics=3, maxiter=2, restarts=3)
    assert three.condition_number < one.condition_number


def test_yaml_round_trip_and_named_errors(tmp_path, ur5_excitation):
    _, trajectory = ur5_excitation
    path = tmp_path / 'excitation.yaml'
    trajectory.save(path)
    back = FourierTrajectory.load(path)
    assert back.joint_names == trajectory.joint_names
    for name in ('q0', 'a', 'b'):
        np.testing.assert_array_equal(getattr(back, name), getattr(trajectory, name))
    assert (back.base_frequency, back.duration, back.condition_number) == (
        trajectory.base_frequency, trajectory.duration, trajectory.condition_number)
    t = np.linspace(-1.0, 11.0, 97)
    for x, y in zip(back(t), trajectory(t)):
        np.testing.assert_array_equal(x, y)
    text = path.read_text()
    bad = tmp_path / 'bad.yaml'
    bad.write_text(text.replace('duration:', 'length:'))
    with pytest.raises(ConfigurationError, match=r"bad.yaml: missing \['duration'\]"):
        FourierTrajectory.load(bad)
    bad.write_text(text.replace('duration: 10.0', 'duration: 7.5'))
    with pytest.raises(ConfigurationError, match='whole number of periods'):
        FourierTrajectory.load(bad)
    bad.write_text('joints: [a]\n')
    with pytest.raises(ConfigurationError, match="no 'excitation' mapping"):
        FourierTrajectory.load(bad)
    with pytest.raises(ConfigurationError, match='cannot read'):
        FourierTrajectory.load(tmp_path / 'absent.yaml')


def test_joint_trajectory_message_holds_the_samples(ur5_excitation):
    robot, trajectory = ur5_excitation
    msg = trajectory.joint_trajectory(rate=20.0)
    assert list(msg.joint_names) == list(robot.joint_names)
    t, q, qd, qdd = trajectory.sample(20.0)
    assert len(msg.points) == len(t) == 201
    for k in (0, 57, 200):
        point = msg.points[k]
        stamp = point.time_from_start.sec + 1e-9 * point.time_from_start.nanosec
        assert stamp == pytest.approx(t[k], abs=1e-9)
        np.testing.assert_array_equal(point.positions, q[k])
        np.testing.assert_array_equal(point.velocities, qd[k])
        np.testing.assert_array_equal(point.accelerations, qdd[k])


def test_noise_free_torques_on_the_excitation_give_the_base_parameters(ur5_excitation):
    robot, trajectory = ur5_excitation
    t, q, qd, qdd = trajectory.sample(100.0)
    tau = robot.inverse_dynamics(q, qd, qdd) + 0.3 * qd + 0.5 * np.tanh(qd / 0.01)
    P = robot.dynamic_parameters()
    wrong = robot.with_dynamic_parameters(P * np.linspace(0.6, 1.5, len(P))[:, None])
    fit = identify(wrong, q, tau, qd, qdd, method='least_squares', smooth=0.01)
    expected = fit.base.to_base(P)
    np.testing.assert_allclose(fit.base.to_base(fit.model.dynamic_parameters()), expected,
                               rtol=0, atol=1e-8 * np.abs(expected).max())


def test_bad_arguments_are_named():
    robot = model()
    with pytest.raises(ValueError, match='harmonics must be an integer >= 2'):
        excitation_trajectory(robot, 10.0, harmonics=1)
    with pytest.raises(ValueError, match='whole number'):
        excitation_trajectory(robot, 10.0, base_frequency=0.15)
    with pytest.raises(ValueError, match='unknown criterion'):
        excitation_trajectory(robot, 10.0, criterion='trace')
    with pytest.raises(ValueError, match='max_acceleration must be > 0'):
        excitation_trajectory(robot, 10.0, max_acceleration=0.0)
    floating = RobotModel.from_urdf_file(robots_dir() / ONE_MODEL_CASES['floating quadruped'][0],
                                         root_joint='floating')
    with pytest.raises(ModelError, match='floating base'):
        excitation_trajectory(floating, 10.0)


def test_bad_arguments_of_the_optimisation_are_named():
    robot = model()
    for kwargs, message in [
            (dict(maxiter=-1), '^maxiter must be an integer >= 0, got -1$'),
            (dict(maxiter=2.5), '^maxiter must be an integer >= 0, got 2.5$'),
            (dict(restarts=0), '^restarts must be an integer >= 1, got 0$'),
            (dict(restarts=True), '^restarts must be an integer >= 1, got True$'),
            (dict(samples=0), '^samples must be an integer >= 1, got 0$'),
            (dict(rng='seed'), "^rng must be None, a seed or a numpy.random.Generator, got "
                               "'seed'$"),
            (dict(base_frequency=1e308), 'whole number'),
            (dict(base_frequency='0.1'), "^base_frequency must be a number, got '0.1'$"),
            (dict(smooth=-1.0), r'^smooth must be >= 0 .* got -1\.0$'),
            (dict(margin='0.1'), "^margin must be a number, got '0.1'$"),
            (dict(max_acceleration=[1.0, 2.0]), r'^max_acceleration must be one number or 6 '
                                                r"\(one per joint of \['shoulder_pan_joint'"),
            (dict(max_acceleration='fast'), '^max_acceleration must be one number or 6'),
            (dict(criterion=np.array(['cond', 'logdet'])), '^unknown criterion'),
            (dict(friction=('coulomb', 'coulomb')), r"^friction term\(s\) \['coulomb'\] given "
                                                    'more than once')]:
        with pytest.raises(ValueError, match=message):
            excitation_trajectory(robot, 10.0, **kwargs)
    with pytest.raises(ValueError, match="^duration must be a number, got '10'$"):
        excitation_trajectory(robot, '10')
    for duration in (-1.0, 0.0, np.nan, np.inf):
        with pytest.raises(ValueError, match=f'^duration must be > 0 s, got {duration}$'):
            excitation_trajectory(robot, duration)
    for margin in (0.5, -0.1, np.nan):
        with pytest.raises(ValueError, match=rf'^margin must be in \[0, 0\.5\), got {margin}$'):
            excitation_trajectory(robot, 10.0, margin=margin)


def test_a_robot_too_weak_to_hold_itself_up_is_named_with_its_joints():
    """Every joint's effort limit 0.01 N m: gravity at mid-range exceeds two UR5 joints."""
    xml = (robots_dir() / ONE_MODEL_CASES['fixed arm'][0]).read_text()
    weak = RobotModel.from_urdf_string(re.sub(r'effort="[^"]*"', 'effort="0.01"', xml))
    with pytest.raises(ValueError, match=re.escape(
            'excitation_trajectory: no motion within the effort limits was found (gravity '
            "alone exceeds them at mid-range on ['shoulder_lift_joint', 'elbow_joint'])")):
        excitation_trajectory(weak, 10.0, harmonics=2, maxiter=0)


def test_a_trajectory_refuses_what_it_cannot_play_by_name(ur5_excitation):
    _, e = ur5_excitation
    fields = (e.joint_names, e.q0, e.a, e.b, e.base_frequency)
    with pytest.raises(ConfigurationError, match=r'^excitation: duration inf s must be a whole '
                                                 'number of periods'):
        FourierTrajectory(*fields, np.inf)
    with pytest.raises(ConfigurationError, match="^excitation: duration must be a number, got "
                                                 "'10'$"):
        FourierTrajectory(*fields, '10')
    with pytest.raises(ConfigurationError, match='^excitation: q0 is no array of numbers$'):
        FourierTrajectory(e.joint_names, 'abc', e.a, e.b, e.base_frequency, e.duration)
    with pytest.raises(ConfigurationError, match=(
            r"^excitation: q0 must hold 6 numbers \(one per joint of \['shoulder_pan_joint', "
            r'.*\]\) and a, b 6 rows of as many harmonics; got q0 \(6,\), a \(6, 4\), b '
            r'\(6, 3\)$')):
        FourierTrajectory(e.joint_names, e.q0, e.a, e.b[:, :3], e.base_frequency, e.duration)
    with pytest.raises(ConfigurationError, match=r'^excitation: a has complex entries'):
        FourierTrajectory(e.joint_names, e.q0, e.a + 0j, e.b, e.base_frequency, e.duration)
    q0 = e.q0.copy()
    copy = FourierTrajectory(e.joint_names, q0, e.a, e.b, e.base_frequency, e.duration)
    q0[:] = 1.0                                   # the caller's array, not the trajectory's
    np.testing.assert_array_equal(copy.q0, e.q0)
    for rate in (np.inf, 1e308, 0.0, -5.0):
        with pytest.raises(ValueError, match=r'^excitation: rate must be finite and > 0 \[Hz\]'):
            e.sample(rate)
    with pytest.raises(ValueError, match="^rate must be a number, got '50'$"):
        e.sample('50')
    with pytest.raises(ValueError, match="^excitation: t must be a number or an array of "
                                         "numbers"):
        e('abc')
    for t in (np.nan, [0.0, np.inf], -np.inf):
        with pytest.raises(ValueError, match='^excitation: t must be finite$'):
            e(t)
