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
identify: the inertial parameters and friction of a robot from its motion and torques.

The data are made by a "true" model (example-robot-data's UR5, and the Panda with its mimic
hand) with viscous and Coulomb friction on a sum-of-sines motion; the fit starts from a
wrong URDF (every body's parameters scaled by 0.6-1.5). Noise-free data must give back the
true base parameters; with torque noise the physically consistent fit must stay physical
(every pseudo-inertia positive semidefinite, M(q) positive definite) and predict held-out
torques as well as least squares does.
"""

import dataclasses
import logging
import re

import numpy as np
import pytest

from kron_dynamics import ModelError, RobotModel
from kron_dynamics.identification import (base_parameters, body_parameters, friction_regressor,
                                          identify, pseudo_inertia, read_recording, Recording,
                                          write_bag)
from kron_dynamics.identification.identify import filtered, held_on_grid
from kron_dynamics.identification.recording import write_joint_states
from kron_dynamics.testing.motion import sum_of_sines
from pinocchio_oracle import ONE_MODEL_CASES, robots_dir

pytestmark = pytest.mark.slow       # convex fits of a few seconds

VISCOUS, COULOMB = 0.4, 0.8


def true_model(kind='fixed arm'):
    return RobotModel.from_urdf_file(robots_dir() / ONE_MODEL_CASES[kind][0])


def wrong_urdf(model, seed=0):
    """Return the model with every body's parameters scaled by a factor in [0.6, 1.5]."""
    rng = np.random.default_rng(seed)
    P = model.dynamic_parameters()
    return model.with_dynamic_parameters(P * rng.uniform(0.6, 1.5, (len(P), 1)))


def motion(model, seconds=20.0, rate=100.0, seed=1):
    """Return (t, q, qd, qdd): five sines per joint about mid-range, within its limits."""
    return sum_of_sines(model, seconds, rate, seed)


def torques(model, q, qd, qdd, noise=0.0, seed=2):
    """Return the true torques with viscous and Coulomb friction, plus Gaussian noise."""
    rng = np.random.default_rng(seed)
    tau = model.inverse_dynamics(q, qd, qdd) + VISCOUS * qd + COULOMB * np.sign(qd)
    return tau + noise * rng.standard_normal(tau.shape)


@pytest.mark.parametrize('kind', ['fixed arm', 'mimic gripper'])
def test_noise_free_least_squares_recovers_the_base_parameters(kind):
    true = true_model(kind)
    t, q, qd, qdd = motion(true)
    fit = identify(wrong_urdf(true), q, torques(true, q, qd, qdd), qd, qdd,
                   method='least_squares')
    expected = fit.base.to_base(true.dynamic_parameters())
    np.testing.assert_allclose(fit.base.to_base(fit.model.dynamic_parameters()), expected,
                               rtol=0, atol=1e-8 * np.abs(expected).max())
    np.testing.assert_allclose(fit.friction['viscous'], VISCOUS, atol=1e-8)
    np.testing.assert_allclose(fit.friction['coulomb'], COULOMB, atol=1e-8)
    assert np.all(fit.residual_rms < 1e-8)
    np.testing.assert_allclose(fit.predict(q[:50], qd[:50], qdd[:50]),
                               torques(true, q[:50], qd[:50], qdd[:50]), atol=1e-7)


def test_noise_free_consistent_fit_approaches_the_base_parameters_as_the_prior_vanishes():
    true = true_model()
    t, q, qd, qdd = motion(true)
    tau = torques(true, q, qd, qdd)
    expected = None
    errors = []
    for weight in (1e-6, 1e-11):
        fit = identify(wrong_urdf(true), q, tau, qd, qdd, prior_weight=weight)
        expected = fit.base.to_base(true.dynamic_parameters())
        errors.append(np.abs(fit.base.to_base(fit.model.dynamic_parameters())
                             - expected).max() / np.abs(expected).max())
        assert fit.physically_consistent().all()
    assert errors[1] < 1e-6 and errors[1] <= errors[0]


def test_with_noise_the_consistent_fit_is_physical_and_predicts_as_least_squares():
    true = true_model()
    wrong = wrong_urdf(true)
    t, q, qd, qdd = motion(true, seed=1)
    tau = torques(true, q, qd, qdd, noise=0.2)
    ls = identify(wrong, q, tau, qd, qdd, method='least_squares')
    pc = identify(wrong, q, tau, qd, qdd)
    # held out: another motion
    _, q2, qd2, qdd2 = motion(true, seed=5)
    tau2 = torques(true, q2, qd2, qdd2)

    def rms(predicted):
        return float(np.sqrt(np.mean((predicted - tau2) ** 2)))
    wrong_rms = rms(wrong.inverse_dynamics(q2, qd2, qdd2) + VISCOUS * qd2
                    + COULOMB * np.sign(qd2))
    assert rms(pc.predict(q2, qd2, qdd2)) <= 1.05 * rms(ls.predict(q2, qd2, qdd2))
    assert rms(pc.predict(q2, qd2, qdd2)) < 0.1 * wrong_rms
    assert pc.physically_consistent().all()
    for p in pc.model.dynamic_parameters():
        assert np.linalg.eigvalsh(pseudo_inertia(p))[0] > -1e-9
    rng = np.random.default_rng(3)
    for _ in range(1000):
        M = pc.model.mass_matrix(pc.model.random_configuration(rng))
        assert np.linalg.eigvalsh(M)[0] > 0.0
    assert 'mass' in pc.report() and len(pc.base_relative_std) == pc.base.count


def test_velocities_and_accelerations_from_positions_by_filtering():
    true = true_model()
    t, q, qd, qdd = motion(true, rate=500.0)
    tau = torques(true, q, qd, qdd)
    fit = identify(wrong_urdf(true), q, tau, t=t, method='least_squares', cutoff=5.0)
    expected = fit.base.to_base(true.dynamic_parameters())
    error = np.abs(fit.base.to_base(fit.model.dynamic_parameters()) - expected)
    assert error.max() < 1e-2 * np.abs(expected).max()


def _acceleration_error(t, q, tau, qdd_true, t_true, max_gap):
    """Return max |q'' filtered - q'' true| / max |q'' true| on the filtered grid."""
    grid, _, _, qdd, _ = filtered(t, q, tau, 5.0, max_gap)
    truth = np.stack([np.interp(grid, t_true, column) for column in qdd_true.T], axis=1)
    return np.abs(qdd - truth).max() / np.abs(qdd_true).max()


def test_a_gap_in_the_recording_splits_it_and_each_part_is_filtered_alone():
    """One second recorded nothing: a line across it does not follow the motion."""
    true = true_model()
    t, q, qd, qdd = motion(true, rate=500.0)
    tau = torques(true, q, qd, qdd)
    kept = (t < 8.0) | (t > 9.0)
    whole = _acceleration_error(t, q, tau, qdd, t, None)      # the filter's own error
    split = _acceleration_error(t[kept], q[kept], tau[kept], qdd, t, None)   # 0.5 / cutoff
    across = _acceleration_error(t[kept], q[kept], tau[kept], qdd, t, 2.0)
    assert split < 1.2 * whole and across > 10 * whole, (whole, split, across)
    fit = identify(wrong_urdf(true), q[kept], tau[kept], t=t[kept], method='least_squares',
                   cutoff=5.0)
    expected = fit.base.to_base(true.dynamic_parameters())
    error = np.abs(fit.base.to_base(fit.model.dynamic_parameters()) - expected)
    assert error.max() < 1e-2 * np.abs(expected).max()


def test_time_a_simulator_dropped_is_cut_out():
    """From 8 s on, the stamps run 0.3 s ahead of the motion: time lost, not samples."""
    true = true_model()
    t, q, qd, qdd = motion(true, rate=500.0)
    tau = torques(true, q, qd, qdd)
    stamps = t + 0.3 * (t >= 8.0)
    whole = _acceleration_error(t, q, tau, qdd, t, None)      # the filter's own error
    split = _acceleration_error(stamps, q, tau, qdd, stamps, 0.1)
    across = _acceleration_error(stamps, q, tau, qdd, stamps, 1.0)
    assert split < 1.2 * whole and across > 10 * whole, (whole, split, across)


def test_a_held_signal_takes_its_exact_mean_over_each_grid_cell():
    """x[k] held on (t[k-1], t[k]]: the mean over a cell, against a fine sampling of it."""
    rng = np.random.default_rng(4)
    t = np.cumsum(rng.choice([0.004, 0.004, 0.004, 0.013, 0.051], 300))
    x = rng.standard_normal((300, 2))
    dt = 0.004
    grid = t[0] + dt * np.arange(int((t[-1] - t[0]) / dt) + 1)
    fine = np.linspace(t[0], t[-1], 2_000_001)[1:]          # a step of ~0.7 us
    held = x[np.searchsorted(t, fine)]                      # the value held at each instant
    means = held_on_grid(t, x, grid, dt)
    for g, mean in zip(grid[::37], means[::37]):
        cell = (fine > max(g - dt / 2, t[0])) & (fine <= min(g + dt / 2, t[-1]))
        np.testing.assert_allclose(mean, held[cell].mean(axis=0), atol=2e-3)


def _loop_with_held_efforts(model, damping, reference, stall, seed=5):
    """
    Return (stamps, q, effort) of a computed-torque loop on a damped plant, efforts held.

    As the plant simulator does: each tick integrates the steps since the last one (1 kHz)
    under the command held since then, and reports the state with that command; a tick
    comes every 4 ms, a ``stall`` share of them after 10-60 ms (a busy machine).
    ``reference``: (q, q', q'') sampled at 1 kHz.
    """
    rng = np.random.default_rng(seed)
    dt = 1e-3
    q_d, qd_d, qdd_d = reference
    q, qd, tau = q_d[0].copy(), qd_d[0].copy(), np.zeros(model.n)
    step, stamps, states, efforts = 0, [], [], []
    while True:
        steps = 4 if rng.random() >= stall else int(rng.integers(10, 61))
        if step + steps >= len(q_d):
            break
        q, qd = model.simulate(q, qd, tau, dt, steps, damping=damping)
        step += steps
        stamps.append(step * dt)
        states.append(q)
        efforts.append(tau)
        tau = model.inverse_dynamics(q, qd, qdd_d[step] + 100.0 * (q_d[step] - q)
                                     + 20.0 * (qd_d[step] - qd))
    return np.array(stamps), np.array(states), np.array(efforts)


@pytest.mark.parametrize('stall', [0.0, 0.2])
def test_efforts_held_over_stretched_ticks_give_the_plants_damping(stall):
    """
    The identify demo's plant and loop: the stacker, damped, its efforts held per tick.

    Read as instant, a held effort lags the motion by half a tick, and the fit takes the lag
    for damping (the luff joint's by 6 % at 250 Hz, by 12-40 % where ticks stall).
    """
    from conftest import URDF_DIR
    from kron_dynamics.identification import excitation_trajectory
    true = RobotModel.from_urdf_file(URDF_DIR / 'stacker.urdf')
    damping = np.array([5e4, 1e6, 1e6])
    _, *reference = excitation_trajectory(true, 10.0, harmonics=4, maxiter=5).sample(1000.0)
    t, q, tau = _loop_with_held_efforts(true, damping, reference, stall)

    def viscous(effort):       # the demo's fit
        return identify(true, q, tau, t=t, friction=('viscous',), cutoff=3.0, max_gap=0.1,
                        effort=effort).friction['viscous']
    np.testing.assert_allclose(viscous('held'), damping, rtol=0.02)
    assert np.abs(viscous('instant') / damping - 1.0).max() > 0.04


def test_a_prior_far_from_the_data_is_solved_again_to_optimal():
    """
    The identify demo's case: the stacker's recording fitted from a URDF 1.5x too heavy.

    In units of the prior's objective the optimum is far below one and Clarabel stops at
    'optimal_inaccurate'; solved again in units of that optimum it reports 'optimal'.
    """
    from conftest import URDF_DIR
    from kron_dynamics.identification import excitation_trajectory
    true = RobotModel.from_urdf_file(URDF_DIR / 'stacker.urdf')
    damping = np.array([5e4, 1e6, 1e6])
    _, *reference = excitation_trajectory(true, 10.0, harmonics=4, maxiter=5).sample(1000.0)
    t, q, tau = _loop_with_held_efforts(true, damping, reference, 0.0)
    wrong = true.with_dynamic_parameters(1.5 * true.dynamic_parameters())
    fit = identify(wrong, q, tau, t=t, friction=('viscous',), cutoff=3.0, max_gap=0.1,
                   effort='held')
    assert fit.solver_status == 'clarabel: optimal'
    np.testing.assert_allclose(fit.friction['viscous'], damping, rtol=0.01)
    assert 'tolerances' not in fit.report()


def test_parts_too_short_to_filter_are_refused_by_name():
    true = true_model()
    t, q, qd, qdd = motion(true, seconds=2.2, rate=500.0)
    tau = torques(true, q, qd, qdd)
    kept = (t < 0.6) | ((t > 0.8) & (t < 1.4)) | (t > 1.6)
    with pytest.raises(ValueError, match=r'each of the 3 parts between gaps longer than '
                                         r'max_gap 0\.1 s'):
        identify(true, q[kept], tau[kept], t=t[kept], cutoff=5.0)
    with pytest.raises(ValueError, match='max_gap must be > 0'):
        identify(true, q, tau, t=t, cutoff=5.0, max_gap=0.0)
    with pytest.raises(ValueError, match=r"unknown effort 'average'.*\['instant', 'held'\]"):
        identify(true, q, tau, t=t, cutoff=5.0, effort='average')


def test_bad_data_is_refused_by_name():
    true = true_model()
    t, q, qd, qdd = motion(true, seconds=2.0)
    tau = torques(true, q, qd, qdd)
    still = np.zeros((200, true.n))
    with pytest.raises(ValueError, match='excite'):
        identify(true, still, true.gravity_torque(still), still, still,
                 method='least_squares')
    with pytest.raises(ValueError, match=r'tau must be \(N, 6\)'):
        identify(true, q, tau[:, :3], qd, qdd)
    with pytest.raises(ValueError, match='sample times t'):
        identify(true, q, tau)
    with pytest.raises(ValueError, match=r'^q has complex entries \(dtype complex128\)'):
        identify(true, q + 1e-20j, tau, qd, qdd)      # never cast to its real part
    with pytest.raises(ValueError, match=r'^qd must be \(N, 6\).* got no array of numbers$'):
        identify(true, q, tau, [list(qd[0]), list(qd[1, :5])], qdd)      # ragged rows
    with pytest.raises(ValueError, match='^t must be the increasing sample times'):
        identify(true, q, tau, t=[[0.0], []])
    with pytest.raises(ValueError, match='unknown method'):
        identify(true, q, tau, qd, qdd, method='magic')
    with pytest.raises(ValueError, match=r'^tau has shape \(199, 6\), q \(200, 6\): one torque '):
        identify(true, q, tau[:-1], qd, qdd)
    for given, kwargs in (('qd', dict(qd=qd)), ('qdd', dict(qdd=qdd))):   # never ignored
        with pytest.raises(ValueError, match=r'^identify: give both qd and qdd, or neither '
                                             rf'\(.*\); got {given} only$'):
            identify(true, q, tau, t=t, **kwargs)
    for name, bad in (('q', q), ('tau', tau), ('qdd', qdd)):
        bad = bad.copy()
        bad[3, 2] = np.nan
        with pytest.raises(ValueError, match=rf'^{name}\[3\] is not finite$'):
            identify(true, **{'q': q, 'tau': tau, 'qd': qd, 'qdd': qdd, name: bad})
    for stamps in (t[::-1], np.where(np.arange(len(t)) == 5, t[4], t)):   # back, repeated
        with pytest.raises(ValueError, match='^t must be the increasing sample times'):
            identify(true, q, tau, t=stamps)
    for cutoff in (50.0, 80.0, 0.0):     # 100 samples/s: Nyquist 50 Hz
        with pytest.raises(ValueError, match=rf'^cutoff {cutoff} Hz must be between 0 and the '
                                             r'Nyquist frequency 50 Hz$'):
            identify(true, q, tau, t=t, cutoff=cutoff)
    # fewer than twice as many equations as parameters to fit (48 = 36 + 2 x 6), and a joint
    # that barely moves (its friction columns 1e-12 of the others)
    with pytest.raises(ValueError, match=r'^identify: the data excite the 48 parameters to fit '
                                         r'\(36 base inertial, 12 friction\) too little '
                                         r'\(15 samples, condition number of the base '
                                         r'regressor \d'):
        identify(true, q[:150:10], tau[:150:10], qd[:150:10], qdd[:150:10],
                 method='least_squares')
    assert identify(true, q[:170:10], tau[:170:10], qd[:170:10], qdd[:170:10],
                    method='least_squares').base.count == 36        # 17 samples: 102 >= 96
    still = (q.copy(), qd.copy(), qdd.copy())
    still[0][:, 5] = q[0, 5] + 1e-12 * (q[:, 5] - q[:, 5].mean())
    still[1][:, 5] *= 1e-12
    still[2][:, 5] *= 1e-12
    with pytest.raises(ValueError, match=r'too little \(200 samples, condition number of the '
                                         r'base regressor \d\.\d+e\+1[3-9]\)'):
        identify(true, still[0], torques(true, *still), still[1], still[2],
                 method='least_squares')
    floating = RobotModel.from_urdf_file(robots_dir() / ONE_MODEL_CASES['floating quadruped'][0],
                                         root_joint='floating')
    with pytest.raises(ModelError, match='floating base'):
        identify(floating, q, tau, qd, qdd)


def test_body_parameters_inverts_pseudo_inertia_on_real_bodies():
    """Every body of a real arm: parameters -> J -> parameters, and J's Wensing form."""
    P = RobotModel.from_urdf_file(robots_dir() / ONE_MODEL_CASES['fixed arm'][0]
                                  ).dynamic_parameters()
    for p in P:
        J = pseudo_inertia(p)
        assert np.allclose(body_parameters(J), p, rtol=0.0, atol=1e-14 * np.abs(p).max())
        # Wensing et al. 2017: J = [[sigma, h], [h^T, m]], sigma = tr(I)/2 1 - I
        inertia = np.trace(J[:3, :3]) * np.eye(3) - J[:3, :3]
        assert np.allclose(0.5 * np.trace(inertia) * np.eye(3) - inertia, J[:3, :3])
        assert J[3, 3] == p[0] and np.array_equal(J[:3, 3], p[1:4])
        assert np.array_equal(body_parameters(J)[[4, 5, 6, 7, 8, 9]], inertia[
            [0, 0, 1, 0, 1, 2], [0, 1, 1, 2, 2, 2]])


def _with_negative_eigenvalue(p, depth):
    """Return body parameters p whose pseudo-inertia's smallest eigenvalue is -depth."""
    w, V = np.linalg.eigh(pseudo_inertia(p))
    J = pseudo_inertia(p) - (w[0] + depth) * np.outer(V[:, 0], V[:, 0])
    return body_parameters(J)


def test_the_report_flags_what_a_user_must_check():
    """Solver tolerances not met, a mass changed more than 2x, a body no rigid body can be."""
    true = true_model()
    t, q, qd, qdd = motion(true, seconds=2.0)
    fit = identify(true, q, torques(true, q, qd, qdd), qd, qdd, method='least_squares')
    P = true.dynamic_parameters()
    P[1] *= 3.0                                               # a mass 3x
    P[2] *= 1.9                                               # 1.9x: plausible
    P[3] *= 0.4                                               # 0.4x
    P[4] = _with_negative_eigenvalue(P[4], 1e-8 * max(1.0, np.abs(P[4]).max()))
    assert np.linalg.eigvalsh(pseudo_inertia(P[4]))[0] < -5e-9
    changed = dataclasses.replace(fit, model=true.with_dynamic_parameters(P),
                                  solver_status='clarabel: optimal_inaccurate')
    assert changed.physically_consistent().tolist() == [True] * 4 + [False] + [True] * (
        len(P) - 5)
    lines = changed.report().splitlines()
    assert lines[0].startswith('identification (least_squares): 36 base parameters; residual '
                               'RMS per joint ')
    assert lines[1] == ('the convex solver reports clarabel: optimal_inaccurate: its tolerances '
                        'were not all met (check the residual and the flags below)')
    bodies = {line.split(':')[0]: line for line in lines[2:2 + len(P)]}
    names = true.body_names
    assert list(bodies) == list(names)
    assert bodies[names[1]].endswith('  [mass changed more than 2x]')
    assert bodies[names[3]].endswith('  [mass changed more than 2x]')
    assert bodies[names[4]].endswith('  [not physically consistent]')
    for k in (0, 2, 5):
        assert bodies[names[k]].endswith(' m'), bodies[names[k]]       # no flag
    mass = P[2, 0]
    assert f'mass {mass / 1.9:.4g} -> {mass:.4g} kg' in bodies[names[2]]
    assert lines[2 + len(P)].startswith(f'viscous: {true.joint_names[0]} ')
    assert lines[3 + len(P)].startswith(f'coulomb: {true.joint_names[0]} ')
    assert 'tolerances' not in fit.report() and '  [' not in fit.report()     # no flag


def test_a_body_the_solver_left_slightly_outside_the_cone_is_brought_back():
    """A pseudo-inertia eigenvalue of -1e-9 (the solver's tolerance) is floored, nothing more."""
    from kron_dynamics.identification.identify import _nearest_consistent
    p = true_model().dynamic_parameters()[3]
    outside = _with_negative_eigenvalue(p, 1e-9 * np.abs(p).max())
    back = _nearest_consistent(outside)
    assert np.linalg.eigvalsh(pseudo_inertia(back))[0] > 0.0
    assert np.abs(back - outside).max() < 1e-8 * np.abs(p).max()
    assert np.abs(_nearest_consistent(p) - p).max() < 1e-12 * np.abs(p).max()


def test_the_standard_deviations_are_the_least_squares_ones():
    """sigma^2 (W^T W)^-1 with sigma^2 = |r|^2 / (N n - k), from the normal equations."""
    true = true_model()
    t, q, qd, qdd = motion(true, seconds=2.0)
    tau = torques(true, q, qd, qdd, noise=0.05)
    fit = identify(true, q, tau, qd, qdd, method='least_squares')
    N, n = q.shape
    Y = true.regressor(q, qd, qdd).reshape(N * n, -1)
    W = np.hstack([Y[:, fit.base.independent], friction_regressor(qd, qdd).reshape(N * n, -1)])
    x, *_ = np.linalg.lstsq(W, tau.reshape(-1), rcond=None)
    residual = tau.reshape(-1) - W @ x
    sigma2 = residual @ residual / (N * n - W.shape[1])
    std = np.sqrt(sigma2 * np.diag(np.linalg.inv(W.T @ W)))
    np.testing.assert_allclose(fit.base_values, x[:fit.base.count], rtol=1e-8,
                               atol=1e-10 * np.abs(x).max())
    np.testing.assert_allclose(fit.base_relative_std, (std / np.abs(x))[:fit.base.count],
                               rtol=1e-6)
    np.testing.assert_allclose(fit.residual_rms, np.sqrt(np.mean(
        residual.reshape(N, n) ** 2, axis=0)), rtol=1e-8)


@pytest.mark.parametrize('method', ['least_squares', 'physically_consistent'])
def test_a_negative_armature_is_never_in_the_model(method):
    """Data that want armature -0.05: least squares says so, the model takes 0 (a fit, >= 0)."""
    true = true_model()
    t, q, qd, qdd = motion(true, seconds=2.0)
    tau = torques(true, q, qd, qdd) - 0.05 * qdd
    fit = identify(true, q, tau, qd, qdd, friction=('viscous', 'coulomb', 'armature'),
                   method=method)
    fitted = fit.friction['armature']
    free = ~fit.base.armature_in_span
    assert free.sum() >= 3
    if method == 'least_squares':
        np.testing.assert_allclose(fitted[free], -0.05, rtol=1e-6)
    else:
        assert np.all(fitted >= -1e-9), fitted
    assert np.array_equal(fit.model.armature, np.maximum(fitted, 0.0))


def test_a_part_too_short_for_the_filters_padding_is_left_out():
    """14 samples between gaps keep 4 after the ends, but filtfilt pads 15: left out."""
    true = true_model()
    t, q, qd, qdd = motion(true, seconds=4.0)      # 100 samples/s
    tau = torques(true, q, qd, qdd)
    kept = (t < 2.0) | ((t > 2.995) & (t < 3.135))
    assert kept.sum() - (t < 2.0).sum() == 14
    grid, *_ = filtered(t[kept], q[kept], tau[kept], 40.0, 0.2)
    alone, *_ = filtered(t[t < 2.0], q[t < 2.0], tau[t < 2.0], 40.0, 0.2)
    assert np.array_equal(grid, alone)


def test_a_bag_written_by_rosbags_round_trips(tmp_path):
    """A rosbag2 directory of JointState, in another joint order, is read back by name."""
    true = true_model()
    t, q, qd, qdd = motion(true, seconds=10.0)
    tau = torques(true, q, qd, qdd)
    order = list(reversed(true.joint_names))
    rows = [true.joint_names.index(j) for j in order]
    write_bag(tmp_path / 'bag', Recording(tuple(order), t + 1.7e9, q[:, rows], qd[:, rows],
                                          tau[:, rows]))
    rec = read_recording(tmp_path / 'bag', true.joint_names)
    assert rec.joint_names == true.joint_names
    np.testing.assert_allclose(rec.t - 1.7e9, t, atol=1e-6)
    np.testing.assert_array_equal(rec.q, q)
    np.testing.assert_array_equal(rec.qd, qd)
    np.testing.assert_array_equal(rec.tau, tau)
    with pytest.raises(ValueError, match="no topic /other; the bag has \\['/joint_states'\\]"):
        read_recording(tmp_path / 'bag', true.joint_names, topic='/other')


def test_a_csv_recording_is_read_by_column_name(tmp_path):
    true = true_model()
    t, q, qd, qdd = motion(true, seconds=1.0)
    tau = torques(true, q, qd, qdd)
    header = ['t'] + [f'{j}.{kind}' for kind in ('effort', 'position') for j in true.joint_names]
    path = tmp_path / 'states.csv'
    body = np.hstack([t[:, None], tau, q])
    path.write_text(','.join(header) + '\n' + '\n'.join(
        ','.join(repr(float(v)) for v in row) for row in body) + '\n')
    rec = read_recording(path, true.joint_names)
    assert rec.qd is None
    np.testing.assert_array_equal(rec.q, q)
    np.testing.assert_array_equal(rec.tau, tau)
    # spaces after the commas (as a spreadsheet or a person writes them): the same columns
    path.write_text(', '.join(header) + '\n' + '\n'.join(
        ', '.join(repr(float(v)) for v in row) for row in body) + '\n')
    np.testing.assert_array_equal(read_recording(path, true.joint_names).q, q)
    path.write_text('t,x\n0,1\n')
    with pytest.raises(ValueError, match='CSV columns .*shoulder_pan_joint.position'):
        read_recording(path, true.joint_names)


def test_a_bag_is_read_by_stamp_skipping_other_publishers_joint_states(tmp_path):
    """
    Two publishers on one topic, a stamp of 0, stamps out of receive order, partial velocities.

    A gripper's own JointState (other names) is skipped; a stamp of 0 (a driver that does not
    stamp) takes the bag's receive time; the samples come out in stamp order; velocities are
    given only if every message has one per name.
    """
    arm, gripper = ('a', 'b'), ('finger',)
    messages = [(10.0, 5.00, arm, [0.0, 1.0], [0.1, 0.2], [1.0, 2.0]),
                (10.1, 0.0, gripper, [0.02], [], [0.0]),
                (10.2, 5.20, ('b', 'finger', 'a'), [3.0, 0.02, 2.0], [0.4, 0.0, 0.3],
                 [4.0, 0.0, 3.0]),
                (10.3, 5.10, arm, [4.0, 5.0], [0.5, 0.6], [5.0, 6.0]),     # late, stamped
                (10.4, 0.0, arm, [6.0, 7.0], [0.7, 0.8], [7.0, 8.0])]      # unstamped
    write_joint_states(tmp_path / 'bag', messages)
    rec = read_recording(tmp_path / 'bag', arm)
    np.testing.assert_allclose(rec.t, [5.0, 5.1, 5.2, 10.4], rtol=0, atol=1e-9)
    np.testing.assert_array_equal(rec.q, [[0.0, 1.0], [4.0, 5.0], [2.0, 3.0], [6.0, 7.0]])
    np.testing.assert_array_equal(rec.qd, [[0.1, 0.2], [0.5, 0.6], [0.3, 0.4], [0.7, 0.8]])
    np.testing.assert_array_equal(rec.tau, [[1.0, 2.0], [5.0, 6.0], [3.0, 4.0], [7.0, 8.0]])
    messages[3] = (10.3, 5.10, arm, [4.0, 5.0], [0.5], [5.0, 6.0])       # one velocity of two
    write_joint_states(tmp_path / 'partial', messages)
    assert read_recording(tmp_path / 'partial', arm).qd is None
    for k, (field, words) in enumerate((('effort', '1 efforts for 2 names'),
                                        ('position', '3 positions for 2 names'))):
        bad = list(messages[0])
        bad[5 if field == 'effort' else 3] = [1.0] if field == 'effort' else [0.0, 1.0, 2.0]
        write_joint_states(tmp_path / f'bad{k}', [bad])
        with pytest.raises(ValueError, match=f'/joint_states at 10.000000 s has {words}'):
            read_recording(tmp_path / f'bad{k}', arm)
    with pytest.raises(ValueError, match=re.escape(
            "bag: no message on /joint_states names all of ['a', 'zz']")):
        read_recording(tmp_path / 'bag', ('a', 'zz'))
    # another message type on the topic; a bag whose storage file is gone
    from rosbags.rosbag2 import Writer
    from rosbags.typesys import get_typestore, Stores
    store = get_typestore(Stores.ROS2_KILTED)
    String = store.types['std_msgs/msg/String']
    with Writer(tmp_path / 'strings', version=8) as writer:
        connection = writer.add_connection('/joint_states', String.__msgtype__, typestore=store)
        writer.write(connection, 1, store.serialize_cdr(String(data='x'), String.__msgtype__))
    with pytest.raises(ValueError, match='strings: /joint_states carries std_msgs/msg/String, '
                                         'not sensor_msgs/msg/JointState$'):
        read_recording(tmp_path / 'strings', arm)
    for storage in (tmp_path / 'bag').iterdir():
        if storage.name != 'metadata.yaml':
            storage.unlink()
    with pytest.raises(ValueError, match=r"bag: the bag cannot be read \(Some database files "
                                         r"are missing: \[.*bag\.db3'\]\)$"):
        read_recording(tmp_path / 'bag', arm)


def test_a_csv_recording_has_velocities_if_every_joint_has_them_and_rows_by_time(tmp_path):
    """Rows out of time order are sorted; an empty file or a header alone is named."""
    path = tmp_path / 'states.csv'
    path.write_text('t,a.position,a.velocity,a.effort,b.effort,b.position,b.velocity\n'
                    '0.2,1,10,100,200,2,20\n'
                    '0.1,3,30,300,400,4,40\n')
    rec = read_recording(path, ('a', 'b'))
    np.testing.assert_array_equal(rec.t, [0.1, 0.2])
    np.testing.assert_array_equal(rec.q, [[3, 4], [1, 2]])
    np.testing.assert_array_equal(rec.qd, [[30, 40], [10, 20]])
    np.testing.assert_array_equal(rec.tau, [[300, 400], [100, 200]])
    assert read_recording(path, ('b',)).qd.tolist() == [[40], [20]]
    path.write_text('t,a.position,a.velocity,a.effort,b.effort,b.position\n0.2,1,10,100,200,2\n')
    assert read_recording(path, ('a', 'b')).qd is None
    path.write_text('')
    with pytest.raises(ValueError, match='states.csv: empty CSV file$'):
        read_recording(path, ('a',))
    path.write_text('t,a.position,a.effort\n\n')
    with pytest.raises(ValueError, match='states.csv: no data rows$'):
        read_recording(path, ('a',))


@pytest.mark.parametrize('kind', ['fixed arm', 'mimic gripper'])
def test_the_exported_urdf_reloads_to_the_fitted_model(kind, tmp_path):
    """to_urdf: the fitted inertials (welded links merged) and friction; the rest kept."""
    import xml.etree.ElementTree as ET
    import yaml
    true = true_model(kind)
    t, q, qd, qdd = motion(true, seconds=10.0)
    wrong = wrong_urdf(true)
    fit = identify(wrong, q, torques(true, q, qd, qdd, noise=0.1), qd, qdd)
    text = fit.to_urdf(tmp_path / 'fitted.urdf')
    assert (tmp_path / 'fitted.urdf').read_text() == text
    back = RobotModel.from_urdf_file(tmp_path / 'fitted.urdf')
    assert back.joint_names == fit.model.joint_names and back.body_names == true.body_names
    P, P_fit = back.dynamic_parameters(), fit.model.dynamic_parameters()
    np.testing.assert_allclose(P, P_fit, rtol=0, atol=1e-9 * np.abs(P_fit).max())
    np.testing.assert_array_equal(back.position_limits, true.position_limits)
    np.testing.assert_array_equal(back.effort_limits, true.effort_limits)
    for j, viscous, coulomb in zip(back.joint_names, fit.friction['viscous'],
                                   fit.friction['coulomb']):
        assert (back.joints[j].damping, back.joints[j].friction) == (viscous, coulomb)
    q1 = true.random_configuration(7)
    np.testing.assert_allclose(back.mass_matrix(q1), fit.model.mass_matrix(q1), atol=1e-9)
    # the links: only inertials and dynamics changed, every link and joint still there
    old, new = ET.fromstring(true.description.document.lstrip()), ET.fromstring(text)
    assert [x.get('name') for x in old.iter('link')] == [x.get('name') for x in new.iter('link')]
    assert [x.get('name') for x in old.iter('joint')] == [
        x.get('name') for x in new.iter('joint')]
    for link, fitted in zip(old.iter('link'), new.iter('link')):
        tags, fitted_tags = [x.tag for x in link], [x.tag for x in fitted]
        if 'inertial' in fitted_tags:   # in its place (a small diff); welded links lose theirs
            assert tags == fitted_tags, link.get('name')
        else:
            assert [x for x in tags if x != 'inertial'] == fitted_tags, link.get('name')
    params = yaml.safe_load(fit.to_params(tmp_path / 'fitted.yaml'))
    assert list(params) == ['/**', 'computed_torque_controller']
    values = params['computed_torque_controller']['ros__parameters']
    shared = params['/**']['ros__parameters']       # the model, for every node
    assert list(shared) == ['joints', 'armature'] and 'armature' not in values
    values.update(shared)
    assert values['joints'] == list(true.joint_names)
    assert values['viscous'] == list(fit.friction['viscous'])
    assert values['coulomb'] == list(fit.friction['coulomb'])
    assert values['armature'] == [0.0] * true.n and values['torque_offset'] == [0.0] * true.n
    assert values['coulomb_smoothing'] == 0.0           # sign(q'), as fitted
    # a fit with tanh(q' / 0.05) for Coulomb friction: the controller is told the same
    smoothed = identify(wrong, q, torques(true, q, qd, qdd, noise=0.1), qd, qdd, smooth=0.05)
    values = yaml.safe_load(smoothed.to_params())['computed_torque_controller']
    assert values['ros__parameters']['coulomb_smoothing'] == 0.05


def test_a_sensors_torque_offset_and_a_urdfs_namespaces_are_exported():
    """An 'offset' fit goes to the controller's torque_offset; gz:plugin stays gz:plugin."""
    import yaml
    from kron_dynamics.identification.export import urdf_with_parameters
    true = true_model()
    t, q, qd, qdd = motion(true, seconds=2.0)
    offset = np.linspace(-0.3, 0.3, true.n)
    fit = identify(true, q, torques(true, q, qd, qdd) + offset, qd, qdd,
                   friction=('viscous', 'coulomb', 'offset'), method='least_squares')
    values = yaml.safe_load(fit.to_params())['computed_torque_controller']['ros__parameters']
    np.testing.assert_allclose(values['torque_offset'], offset, atol=1e-9)
    document = true.description.document
    start = document.index('<robot')
    end = document.index('>', start)
    document = (document[:start] + document[start:end] + ' xmlns:gz="http://gazebosim.org/schema">'
                '\n  <gazebo><gz:plugin name="sensors" filename="gz-sim-sensors-system"/></gazebo>'
                + document[end + 1:])
    model = RobotModel.from_urdf_string(document)
    text = urdf_with_parameters(model, model.dynamic_parameters())
    assert '<gz:plugin name="sensors" filename="gz-sim-sensors-system" />' in text
    assert 'xmlns:gz="http://gazebosim.org/schema"' in text and 'ns0' not in text


def test_negative_least_squares_friction_is_exported_as_zero_and_said(tmp_path, caplog):
    """A joint fitted with friction < 0 gave a URDF the loader and params the node refuse."""
    import yaml
    true = true_model()
    t, q, qd, qdd = motion(true, seconds=5.0)
    tau = torques(true, q, qd, qdd)
    tau[:, 1] -= (VISCOUS + 0.3) * qd[:, 1]         # joint 1: viscous -0.3 (not physical)
    tau[:, 2] -= (COULOMB + 0.2) * np.sign(qd[:, 2])       # joint 2: Coulomb -0.2
    fit = identify(true, q, tau, qd, qdd, method='least_squares')
    np.testing.assert_allclose(fit.friction['viscous'][1], -0.3, atol=1e-8)
    np.testing.assert_allclose(fit.friction['coulomb'][2], -0.2, atol=1e-8)
    joints = true.joint_names
    with caplog.at_level(logging.WARNING, logger='kron_dynamics'):
        text = fit.to_urdf(tmp_path / 'fitted.urdf')
        params = fit.to_params(tmp_path / 'fitted.yaml')
    said = f'viscous {joints[1]} -0.3, coulomb {joints[2]} -0.2'
    assert [r.getMessage() for r in caplog.records] == [
        f'{what}: negative fitted friction ({said}; not physical, a joint with little friction '
        'fitted by least squares) written as 0' for what in ('to_urdf', 'to_params')]
    assert said in text and said in params
    back = RobotModel.from_urdf_file(tmp_path / 'fitted.urdf')      # was: damping must be >= 0
    expected = {'viscous': np.maximum(fit.friction['viscous'], 0.0),
                'coulomb': np.maximum(fit.friction['coulomb'], 0.0)}
    assert back.joints[joints[1]].damping == 0.0 and back.joints[joints[2]].friction == 0.0
    np.testing.assert_allclose([back.joints[j].damping for j in joints], expected['viscous'],
                               rtol=1e-12)
    values = yaml.safe_load(params)['computed_torque_controller']['ros__parameters']
    np.testing.assert_allclose(values['viscous'], expected['viscous'], rtol=1e-12)
    np.testing.assert_allclose(values['coulomb'], expected['coulomb'], rtol=1e-12)
    assert fit.friction['viscous'][1] < 0          # the fit itself keeps what it fitted


def test_a_least_squares_urdf_says_which_links_are_not_physical(tmp_path):
    true = true_model()
    t, q, qd, qdd = motion(true, seconds=3.0)
    fit = identify(wrong_urdf(true), q, torques(true, q, qd, qdd, noise=2.0), qd, qdd,
                   method='least_squares')
    bad = [b for b, ok in zip(fit.model.body_names, fit.physically_consistent()) if not ok]
    assert bad, 'this noisy fit was meant to be unphysical'
    text = fit.to_urdf()
    assert f'{bad} are not physically consistent' in text
    with pytest.raises(ModelError, match='inertia_check'):
        RobotModel.from_urdf_string(text)
    back = RobotModel.from_urdf_string(text, inertia_check='warn')
    np.testing.assert_allclose(back.dynamic_parameters(), fit.model.dynamic_parameters(),
                               rtol=0, atol=1e-9 * np.abs(fit.model.dynamic_parameters()).max())


def scaled_urdf(path, seed=0) -> str:
    """Return a URDF file's text with every link's mass and inertia scaled by 0.6-1.5."""
    import xml.etree.ElementTree as ET
    root = ET.fromstring(path.read_text().lstrip())
    rng = np.random.default_rng(seed)
    for inertial in root.iter('inertial'):
        k = rng.uniform(0.6, 1.5)
        mass = inertial.find('mass')
        mass.set('value', repr(float(mass.get('value')) * k))
        inertia = inertial.find('inertia')
        for name, value in inertia.attrib.items():
            inertia.set(name, repr(float(value) * k))
    return ET.tostring(root, encoding='unicode')


def test_two_commands_from_a_urdf_and_a_bag_to_a_corrected_urdf(tmp_path, capsys):
    """kron-dynamics excite, then identify on a bag of the true robot's joint states."""
    from kron_dynamics.cli import main
    from kron_dynamics.identification import FourierTrajectory
    path = robots_dir() / ONE_MODEL_CASES['fixed arm'][0]
    true = RobotModel.from_urdf_file(path)
    wrong = tmp_path / 'wrong.urdf'
    wrong.write_text(scaled_urdf(path))
    assert main(['excite', str(wrong), '-o', str(tmp_path / 'exc.yaml'), '--duration', '10',
                 '--harmonics', '4', '--maxiter', '10']) == 0
    out = capsys.readouterr().out
    assert 'condition number of the base regressor' in out and 'shoulder_pan_joint' in out
    excitation = FourierTrajectory.load(tmp_path / 'exc.yaml')
    # the robot plays it twice, recorded at 200 Hz with 0.2 N m torque noise
    t = np.arange(0.0, 20.0, 0.005)
    q, qd, qdd = excitation(t % 10.0)
    tau = torques(true, q, qd, qdd, noise=0.2)
    write_bag(tmp_path / 'bag', Recording(true.joint_names, t + 100.0, q, qd, tau))
    assert main(['identify', str(wrong), str(tmp_path / 'bag'), '-o',
                 str(tmp_path / 'fitted.urdf')]) == 0
    out = capsys.readouterr().out
    assert 'identification (physically_consistent)' in out and 'wrote' in out
    line = next(x for x in out.splitlines() if x.startswith('held-out torque RMS'))
    before, after = (np.array([float(v) for v in part.split(',')]) for part in
                     line.split('as given ')[1].split('; fitted '))
    assert np.all(after < 0.5 * before) and np.all(after < 0.4), line
    fitted = RobotModel.from_urdf_file(tmp_path / 'fitted.urdf')
    _, q2, qd2, qdd2 = motion(true, seconds=5.0, seed=9)
    error = fitted.inverse_dynamics(q2, qd2, qdd2) - true.inverse_dynamics(q2, qd2, qdd2)
    wrong_error = (RobotModel.from_urdf_file(wrong).inverse_dynamics(q2, qd2, qdd2)
                   - true.inverse_dynamics(q2, qd2, qdd2))
    assert np.sqrt(np.mean(error ** 2)) < 0.1 * np.sqrt(np.mean(wrong_error ** 2))
    assert (tmp_path / 'fitted.yaml').exists()
    # bad input: one line, exit code 2
    assert main(['identify', str(wrong), str(tmp_path / 'absent'), '-o',
                 str(tmp_path / 'x.urdf')]) == 2
    assert 'no such file' in capsys.readouterr().err


def test_the_commands_fit_a_robot_whose_gripper_stayed_shut(tmp_path, capsys):
    """--locked: the Panda's fingers held at 0.03 m; its files say so, nodes' and API's alike."""
    from kron_dynamics.cli import main
    path = robots_dir() / ONE_MODEL_CASES['mimic gripper'][0]
    held = {'panda_finger_joint1': 0.03}
    true = RobotModel.from_urdf_file(path, locked=held)
    wrong = tmp_path / 'wrong.urdf'
    wrong.write_text(scaled_urdf(path))
    assert main(['excite', str(wrong), '-o', str(tmp_path / 'exc.yaml'), '--duration', '5',
                 '--harmonics', '2', '--maxiter', '2', '--locked',
                 'panda_finger_joint1=0.03']) == 0
    out = capsys.readouterr().out
    assert "'panda_joint7'] (locked: panda_finger_joint1=0.03, panda_finger_joint2=0.03)" in out
    # every joint recorded, as joint_state_broadcaster would: the fingers still at 0.03
    t, q, qd, qdd = motion(true, seconds=6.0)
    names = [*true.joint_names, *held, 'panda_finger_joint2']
    header = ['t'] + [f'{j}.{kind}' for kind in ('position', 'effort') for j in names]
    fingers = np.full((len(t), 2), 0.03)
    body = np.hstack([t[:, None], q, fingers, true.inverse_dynamics(q, qd, qdd), 0 * fingers])
    data = tmp_path / 'states.csv'
    data.write_text(','.join(header) + '\n' + '\n'.join(','.join(map(repr, row))
                                                        for row in body.tolist()) + '\n')
    assert main(['identify', str(wrong), str(data), '-o', str(tmp_path / 'fitted.urdf'),
                 '--friction', '--validate', '0', '--locked', 'panda_finger_joint1=0.03']) == 0
    out, err = capsys.readouterr()
    assert 'the armature and the locked joints for every node' in out and not err, err
    params = (tmp_path / 'fitted.yaml').read_text()
    assert 'locked_joints: [panda_finger_joint1]\n' in params
    assert 'locked_positions: [0.03]\n' in params
    assert "locked={'panda_finger_joint1': 0.03}" in (tmp_path / 'fitted.urdf').read_text()
    fitted = RobotModel.from_urdf_file(tmp_path / 'fitted.urdf', locked=held)
    _, q2, qd2, qdd2 = motion(true, seconds=2.0, seed=9)
    expected = true.inverse_dynamics(q2, qd2, qdd2)
    error = fitted.inverse_dynamics(q2, qd2, qdd2) - expected
    wrong_error = (RobotModel.from_urdf_file(wrong, locked=held).inverse_dynamics(q2, qd2, qdd2)
                   - expected)
    assert np.sqrt(np.mean(error ** 2)) < 0.1 * np.sqrt(np.mean(wrong_error ** 2))
    # a recording of the arm alone: the fingers' coordinates unknown, nothing to warn about
    arm = tmp_path / 'arm.csv'
    columns = [k for k, name in enumerate(header) if not name.startswith('panda_finger')]
    arm.write_text(','.join(header[k] for k in columns) + '\n' + '\n'.join(
        ','.join(map(repr, row)) for row in body[:, columns].tolist()) + '\n')
    assert main(['identify', str(wrong), str(arm), '-o', str(tmp_path / 'arm.urdf'),
                 '--friction', '--validate', '0', '--locked', 'panda_finger_joint1=0.03']) == 0
    assert not capsys.readouterr().err
    # --joints alone locks the fingers at 0, where they were not: said, naming both
    assert main(['identify', str(wrong), str(data), '-o', str(tmp_path / 'at_zero.urdf'),
                 '--friction', '--validate', '0', '--joints', *true.joint_names]) == 0
    err = capsys.readouterr().err
    for joint in names[-2:]:
        assert (f'warning: joint {joint} is locked at 0 for the fit but recorded between 0.03 '
                'and 0.03') in err, err
    for bad, words in ((['--locked', 'panda_finger_joint1'], "'panda_finger_joint1' is not "
                        'JOINT=VALUE'),
                       (['--locked', 'panda_finger_joint1=0.03', 'panda_finger_joint1=0'],
                        "joint 'panda_finger_joint1' given twice"),
                       (['--locked', '=0.03'], "'=0.03' is not JOINT=VALUE"),
                       (['--locked', 'panda_finger_joint2=0.03'],
                        "cannot lock ['panda_finger_joint2']: mimic joint(s) of "
                        "['panda_finger_joint1']; lock those")):
        assert main(['identify', str(wrong), str(data), '-o', str(tmp_path / 'x.urdf'),
                     *bad]) == 2
        err = capsys.readouterr().err
        assert words in err and err.count('\n') == 1, err


def test_the_command_reads_a_simulators_held_efforts_as_held(tmp_path, capsys):
    """kron-dynamics identify --effort held: the damping written to the URDF is the plant's."""
    import xml.etree.ElementTree as ET
    from conftest import URDF_DIR
    from kron_dynamics.cli import main
    from kron_dynamics.identification import excitation_trajectory
    urdf = URDF_DIR / 'stacker.urdf'
    true = RobotModel.from_urdf_file(urdf)
    damping = np.array([5e4, 1e6, 1e6])
    _, *reference = excitation_trajectory(true, 10.0, harmonics=4, maxiter=5).sample(1000.0)
    t, q, tau = _loop_with_held_efforts(true, damping, reference, 0.0)
    write_bag(tmp_path / 'bag', Recording(true.joint_names, t + 100.0, q, None, tau))

    def fitted_damping(*options):
        assert main(['identify', str(urdf), str(tmp_path / 'bag'), '-o',
                     str(tmp_path / 'fitted.urdf'), '--friction', 'viscous', '--cutoff', '3',
                     '--validate', '0', *options]) == 0
        joints = {j.get('name'): j for j in ET.parse(tmp_path / 'fitted.urdf').iter('joint')}
        return np.array([float(joints[name].find('dynamics').get('damping'))
                         for name in true.joint_names])
    np.testing.assert_allclose(fitted_damping('--effort', 'held'), damping, rtol=0.02)
    assert np.abs(fitted_damping() / damping - 1.0).max() > 0.04     # read as instant
    capsys.readouterr()


def test_without_the_extra_the_error_names_it(monkeypatch, tmp_path):
    """The optional cvxpy and rosbags: their absence is named with the extra that has them."""
    import sys
    true = true_model()
    t, q, qd, qdd = motion(true, seconds=5.0)
    tau = torques(true, q, qd, qdd)
    monkeypatch.setitem(sys.modules, 'cvxpy', None)
    with pytest.raises(ModelError, match=r"kron_dynamics\[identification\]"):
        identify(true, q, tau, qd, qdd)
    identify(true, q, tau, qd, qdd, method='least_squares')     # needs neither
    (tmp_path / 'bag').mkdir()
    monkeypatch.setitem(sys.modules, 'rosbags.rosbag2', None)
    with pytest.raises(ModelError, match=r"needs rosbags: pip install 'kron_dynamics"):
        read_recording(tmp_path / 'bag', true.joint_names)


def test_a_fitted_armature_replaces_the_priors_and_is_not_counted_twice():
    """With 'armature' a term, the model carries the fitted one and predict adds it once."""
    import yaml
    true = true_model().with_armature(np.full(6, 0.05))
    t, q, qd, qdd = motion(true)
    tau = torques(true, q, qd, qdd)         # inverse_dynamics includes the true armature
    prior = wrong_urdf(true).with_armature(np.full(6, 0.02))
    fit = identify(prior, q, tau, qd, qdd, friction=('viscous', 'coulomb', 'armature'),
                   method='least_squares')
    # a rotor inertia that the link parameters can mimic (the vertical first joint's adds to
    # its link's Izz) is held at the prior's value, the base parameter takes the difference;
    # the others are fitted. Which ones: by the rank of the full regressor, on the data
    Y = true.regressor(q, qd, qdd).reshape(-1, 10 * len(true.body_names))
    rank = np.linalg.matrix_rank(Y)
    confounded = []
    for j in range(true.n):
        column = np.zeros_like(qdd)
        column[:, j] = qdd[:, j]
        confounded.append(np.linalg.matrix_rank(np.c_[Y, column.ravel()]) == rank)
    assert confounded[0] and not all(confounded)
    expected = np.where(confounded, 0.02, 0.05)
    np.testing.assert_allclose(fit.friction['armature'], expected, atol=1e-8)
    np.testing.assert_allclose(fit.model.armature, expected, atol=1e-8)
    np.testing.assert_allclose(fit.predict(q[:40], qd[:40], qdd[:40]), tau[:40], atol=1e-7)
    values = yaml.safe_load(fit.to_params())['/**']['ros__parameters']
    np.testing.assert_allclose(values['armature'], expected, atol=1e-8)
    # the physically consistent fit too (armature >= 0)
    pc = identify(prior, q, tau, qd, qdd, friction=('viscous', 'coulomb', 'armature'),
                  prior_weight=1e-8)
    np.testing.assert_allclose(pc.friction['armature'], expected, atol=1e-4)
    # not a term: the prior's armature is taken as known, and kept
    known = identify(true, q, tau, qd, qdd, method='least_squares')
    np.testing.assert_array_equal(known.model.armature, true.armature)
    np.testing.assert_allclose(known.predict(q[:40], qd[:40], qdd[:40]), tau[:40], atol=1e-7)


def test_a_heavy_machine_keeps_what_the_data_cannot_see_near_its_urdf():
    """
    The stacker (410 t, torques of 1e7 N m) fitted from its own URDF stays at that URDF.

    Its masses enter the torques only through their sum (the travel joint) and its links'
    first moments: the split is the prior's to keep. Unscaled, the 1e7 N m residual left the
    divergence below the solver's tolerance and the masses went to 2.6x and 0.01x.
    """
    from conftest import URDF_DIR
    from kron_dynamics.identification import excitation_trajectory
    true = RobotModel.from_urdf_file(URDF_DIR / 'stacker.urdf')
    t, q, qd, qdd = excitation_trajectory(true, 10.0, harmonics=4, maxiter=5).sample(100.0)
    tau = true.inverse_dynamics(q, qd, qdd) + np.array([5e4, 1e6, 1e6]) * qd
    fit = identify(true, q, tau, qd, qdd, friction=('viscous',))
    P, P_fit = true.dynamic_parameters(), fit.model.dynamic_parameters()
    np.testing.assert_allclose(P_fit[:, 0], P[:, 0], rtol=0.15)        # every body's mass
    np.testing.assert_allclose(fit.friction['viscous'], [5e4, 1e6, 1e6], rtol=1e-2)
    assert np.all(fit.residual_rms < 1e-3 * np.sqrt(np.mean(tau ** 2, axis=0)))


def test_a_fit_with_locked_joints_exports_a_urdf_that_says_so():
    """The Panda arm with its fingers locked: the URDF names the locked joints and reloads."""
    path = robots_dir() / ONE_MODEL_CASES['mimic gripper'][0]
    arm = [f'panda_joint{i}' for i in range(1, 8)]
    model = RobotModel.from_urdf_file(path, joint_names=arm, lock_others=True)
    t, q, qd, qdd = motion(model, seconds=5.0)
    fit = identify(model, q, model.inverse_dynamics(q, qd, qdd), qd, qdd,
                   method='least_squares', friction=())
    text = fit.to_urdf()
    assert ('joints panda_finger_joint1=0, panda_finger_joint2=0 were locked for the fit'
            in text), text
    assert "load this file with them locked, locked={'panda_finger_joint1': 0.0}" in text
    P = fit.model.dynamic_parameters()
    for back in (RobotModel.from_urdf_string(text, joint_names=arm, lock_others=True),
                 RobotModel.from_urdf_string(text, locked={'panda_finger_joint1': 0.0})):
        np.testing.assert_allclose(back.dynamic_parameters(), P, rtol=0,
                                   atol=1e-9 * np.abs(P).max())


def test_a_recordings_bad_rows_are_named_by_file_row_and_column(tmp_path):
    """A value that is not finite, a row too short or too long, text: file, row, column."""
    true = true_model()
    t, q, qd, qdd = motion(true, seconds=1.0)
    tau = torques(true, q, qd, qdd)
    names = true.joint_names
    header = ['t'] + [f'{j}.{kind}' for kind in ('position', 'effort') for j in names]
    body = np.hstack([t[:, None], q, tau])
    path = tmp_path / 'states.csv'

    def read(rows):
        lines = [','.join(header), ''] + [','.join(map(str, row)) for row in rows]
        path.write_text('\n'.join(lines) + '\n')         # a blank line 2: line = data row + 2
        return read_recording(path, names)
    bad = body.copy()
    bad[4, 1 + len(names) + 2] = np.nan
    with pytest.raises(ValueError, match=re.escape(
            f"states.csv: data row 5 (line 7), column '{names[2]}.effort' is nan: every t, "
            'position and effort must be finite')):
        read(bad)
    bad = body.copy()
    bad[7, 0] = np.inf
    with pytest.raises(ValueError, match=r"data row 8 \(line 10\), column 't' is inf"):
        read(bad)
    rows = [list(body[0]), list(body[1][:3])]
    with pytest.raises(ValueError, match=r'data row 2 \(line 4\) has 3 fields, the header 13$'):
        read(rows)
    with pytest.raises(ValueError, match=r'data row 2 \(line 4\) has 14 fields, the header 13$'):
        read([list(body[0]), list(body[1]) + [0.5]])
    with pytest.raises(ValueError, match=re.escape(
            f"data row 1 (line 3), column '{names[0]}.position': 'abc' is not a number")):
        read([['0.0', 'abc'] + list(body[0][2:])])
    # a bag: the joint and the time of the first message with a value that is not finite
    q_bad = q.copy()
    q_bad[3, 1] = -np.inf
    write_bag(tmp_path / 'bag', Recording(names, t + 100.0, q_bad, qd, tau))
    with pytest.raises(ValueError, match=re.escape(
            f"bag: /joint_states: the position of '{names[1]}' at {100.0 + t[3]:.9f} s is "
            '-inf: every position and effort must be finite')):
        read_recording(tmp_path / 'bag', names)
    tau_bad = tau.copy()
    tau_bad[5, 0] = np.nan
    write_bag(tmp_path / 'effort', Recording(names, t + 100.0, q, qd, tau_bad))
    with pytest.raises(ValueError, match=re.escape(
            f"effort: /joint_states: the effort of '{names[0]}' at {100.0 + t[5]:.9f} s is "
            'nan: every position and effort must be finite')):
        read_recording(tmp_path / 'effort', names)
    (tmp_path / 'empty').mkdir()
    with pytest.raises(ValueError, match=r'empty: not a rosbag2 directory \(it has no '
                                         r'metadata\.yaml\); give a rosbag2 directory or a CSV'):
        read_recording(tmp_path / 'empty', names)
    (tmp_path / 'broken').mkdir()
    (tmp_path / 'broken' / 'metadata.yaml').write_text('rosbag2_bagfile_information: [\n')
    with pytest.raises(ValueError, match=r'broken: the bag cannot be read \(.*metadata\.yaml'):
        read_recording(tmp_path / 'broken', names)
    with pytest.raises(ValueError, match="joint_names must be a list of joint names, got 'ab'"):
        read_recording(tmp_path / 'bag', 'ab')


def test_bad_arguments_of_the_fit_are_refused_by_name():
    true = true_model()
    t, q, qd, qdd = motion(true, seconds=2.0)
    tau = torques(true, q, qd, qdd)
    for kwargs, message in [
            (dict(friction='viscous'), r"^friction must be a list of terms from \['viscous', "
                                       r".* got 'viscous'$"),
            (dict(friction=None), '^friction must be a list of terms'),
            (dict(friction=('viscous', 'coulomb', 'viscous')),
             r"^friction term\(s\) \['viscous'\] given more than once"),
            (dict(smooth=-0.1), r'^smooth must be >= 0 .* got -0\.1$'),
            (dict(smooth=np.inf), '^smooth must be >= 0 .* got inf$'),
            (dict(smooth='0.1'), "^smooth must be a number, got '0.1'$"),
            (dict(prior_weight='1e-6'), "^prior_weight must be a number, got '1e-6'$"),
            *[(dict(prior_weight=w), rf'^prior_weight must be > 0 .*, got {w}$')
              for w in (0.0, -1e-6, np.inf, np.nan)],
            (dict(method=np.array(['least_squares', 'x'])), '^unknown method'),
            (dict(effort=np.array(['held', 'instant'])), '^unknown effort')]:
        with pytest.raises(ValueError, match=message):
            identify(true, q, tau, qd, qdd, **kwargs)
    for kwargs, message in [(dict(cutoff='5'), "^cutoff must be a number, got '5'$"),
                            (dict(max_gap=[0.1]), r'^max_gap must be a number, got \[0\.1\]$')]:
        with pytest.raises(ValueError, match=message):
            identify(true, q, tau, t=t, **kwargs)
    with pytest.raises(ValueError, match=r'qd and qdd must be arrays of numbers of the same '
                                         r'shape, .* got shape \(\d+, 6\), shape \(\d+, 3\)$'):
        friction_regressor(qd, qdd[:, :3])
    with pytest.raises(ValueError, match=r"p must be a body's 10 parameters .* got shape \(2,\)"):
        pseudo_inertia([1.0, 0.0])
    with pytest.raises(ValueError, match=r"J must be a body's 4 x 4 pseudo-inertia, got shape "
                                         r"\(3, 3\)$"):
        body_parameters(np.eye(3))
    with pytest.raises(ValueError, match="J must be a body's 4 x 4 pseudo-inertia, got no array"):
        body_parameters('J')
    with pytest.raises(ValueError, match='^body_parameters: J must be finite, got NaN or inf$'):
        body_parameters(np.full((4, 4), np.nan))
    J = pseudo_inertia(true.dynamic_parameters()[1])
    J[0, 3] += 1e-6
    with pytest.raises(ValueError, match=r'^body_parameters: J must be symmetric \(a pseudo-'
                                         r'inertia is\); largest J - J\^T entry 1e-06$'):
        body_parameters(J)
    with pytest.raises(ValueError, match='^samples must be an integer >= 1, got 0$'):
        base_parameters(true, samples=0)
    with pytest.raises(ValueError, match="^rng must be None, a seed or a numpy.random.Generator, "
                                         "got 'x'$"):
        base_parameters(true, rng='x')


def _write_states(path, names, t, q, tau) -> None:
    """Write joint states as the commands read them: t, then positions and efforts by name."""
    header = ['t'] + [f'{j}.{kind}' for kind in ('position', 'effort') for j in names]
    body = np.hstack([t[:, None], q, tau])
    path.write_text(','.join(header) + '\n' + '\n'.join(','.join(map(repr, row))
                                                        for row in body.tolist()) + '\n')


def test_the_commands_apply_their_options(tmp_path, capsys):
    """Excite --margin and --joints, identify --prior-weight: each reaches the computation."""
    from kron_dynamics.cli import main
    from kron_dynamics.identification import excitation_trajectory, FourierTrajectory
    path = robots_dir() / ONE_MODEL_CASES['fixed arm'][0]
    true = RobotModel.from_urdf_file(path)
    arm = list(true.joint_names[:4])
    assert main(['excite', str(path), '-o', str(tmp_path / 'exc.yaml'), '--duration', '5',
                 '--harmonics', '2', '--maxiter', '2', '--margin', '0.2', '--joints', *arm]) == 0
    assert '(locked: wrist_2_joint=0, wrist_3_joint=0)' in capsys.readouterr().out
    written = FourierTrajectory.load(tmp_path / 'exc.yaml')
    expected = excitation_trajectory(RobotModel.from_urdf_file(
        path, joint_names=arm, lock_others=True), 5.0, 2, margin=0.2, maxiter=2)
    assert written.joint_names == tuple(arm)
    for name in ('q0', 'a', 'b'):
        np.testing.assert_array_equal(getattr(written, name), getattr(expected, name))
    # --prior-weight: a heavy one keeps the fit at the URDF given, a light one fits the data
    t, q, qd, qdd = motion(true, seconds=4.0)
    data = tmp_path / 'states.csv'
    _write_states(data, true.joint_names, t, q, torques(true, q, qd, qdd))
    wrong = tmp_path / 'wrong.urdf'
    wrong.write_text(scaled_urdf(path))
    prior = RobotModel.from_urdf_file(wrong).dynamic_parameters()
    moved = {}
    for weight in ('1e-6', '1e3'):
        fitted = tmp_path / f'fit_{weight}.urdf'
        assert main(['identify', str(wrong), str(data), '-o', str(fitted), '--validate', '0',
                     '--prior-weight', weight]) == 0
        moved[weight] = np.abs(RobotModel.from_urdf_file(fitted).dynamic_parameters()
                               - prior).max()
    assert moved['1e3'] < 0.1 * moved['1e-6'], moved


def test_each_locked_joint_recorded_elsewhere_is_named_with_its_own_range(tmp_path, capsys):
    """Two joints locked for the fit, recorded at other positions: one warning each."""
    from kron_dynamics.identification.command import _check_locked
    path = robots_dir() / ONE_MODEL_CASES['fixed arm'][0]
    model = RobotModel.from_urdf_file(path, locked={'wrist_2_joint': 0.0, 'wrist_3_joint': 0.1})
    names = [*model.joint_names, 'wrist_2_joint', 'wrist_3_joint']
    t = np.linspace(0.0, 1.0, 11)
    q = np.zeros((11, 6))
    q[:, 4], q[:, 5] = 0.5, np.linspace(-0.7, -0.6, 11)
    data = tmp_path / 'states.csv'
    _write_states(data, names, t, q, np.zeros((11, 6)))
    _check_locked(model, str(data), '/joint_states')
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2, err
    assert err[0].startswith('warning: joint wrist_2_joint is locked at 0 for the fit but '
                             'recorded between 0.5 and 0.5: ')
    assert err[1].startswith('warning: joint wrist_3_joint is locked at 0.1 for the fit but '
                             'recorded between -0.7 and -0.6: ')
    q[:, 4], q[:, 5] = 0.0, 0.1 + 1e-4                   # within the 1e-3 tolerance: nothing
    _write_states(data, names, t, q, np.zeros((11, 6)))
    _check_locked(model, str(data), '/joint_states')
    assert not capsys.readouterr().err


def test_the_command_names_bad_data_and_arguments_in_one_line(tmp_path, capsys):
    """Exit code 2 and one line: a row of the CSV, a repeated friction term, an unknown joint."""
    from kron_dynamics.cli import main
    path = robots_dir() / ONE_MODEL_CASES['fixed arm'][0]
    true = RobotModel.from_urdf_file(path)
    t, q, qd, qdd = motion(true, seconds=4.0)
    tau = torques(true, q, qd, qdd)
    header = ['t'] + [f'{j}.{kind}' for kind in ('position', 'effort') for j in true.joint_names]
    body = np.hstack([t[:, None], q, tau])
    body[10, 1] = np.nan
    data = tmp_path / 'states.csv'
    data.write_text(','.join(header) + '\n' + '\n'.join(','.join(map(str, row))
                                                        for row in body) + '\n')

    def identify_command(*options):
        code = main(['identify', str(path), str(data), '-o', str(tmp_path / 'fit.urdf'),
                     *options])
        err = capsys.readouterr().err
        assert code == 2 and err.count('\n') == 1 and 'Traceback' not in err, err
        return err
    err = identify_command()
    assert err.startswith(f'kron-dynamics identify: {data}: data row 11 (line 12), column '
                          f"'{true.joint_names[0]}.position' is nan"), err
    data.write_text(','.join(header) + '\n' + '\n'.join(','.join(map(str, row))
                                                        for row in body[20:30]) + '\n')
    err = identify_command()
    assert err.startswith('kron-dynamics identify: 0.09 s of data is too short'), err
    data.write_text(','.join(header) + '\n' + '\n'.join(','.join(map(str, row))
                                                        for row in body[20:]) + '\n')
    err = identify_command('--friction', 'viscous', 'viscous')
    assert "friction term(s) ['viscous'] given more than once" in err
    err = identify_command('--joints', 'ghost')
    assert (f"unknown or non-movable joint(s) ['ghost']; movable joints are "
            f'{list(true.joint_names)}') in err
    for share in ('1', '-0.1', 'nan'):
        err = identify_command('--validate', share)
        assert err == f'kron-dynamics identify: validate must be in [0, 1), got {float(share)}\n'
