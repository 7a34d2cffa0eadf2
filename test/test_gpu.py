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
The generated GPU kernels (kron_dynamics.gpu) against the CPU kernels, on numba's simulator.

Without a GPU (CI), numba's CUDA simulator runs the generated device code on the CPU, thread
by thread: small batches, the same source a GPU compiles. KRON_DYNAMICS_GPU_TESTS=device
runs the same tests on a real GPU instead.
"""

import os
from pathlib import Path
import re
import subprocess
import sys

import numba
import numpy as np
import pytest

if os.environ.get('KRON_DYNAMICS_GPU_TESTS') != 'device':
    numba.config.ENABLE_CUDASIM = 1       # before numba.cuda is first imported
from numba import cuda  # noqa: E402

from kron_dynamics import Contact, ModelError, RobotModel, SingularJacobianError  # noqa: E402,E501
from kron_dynamics.gpu import codegen, GpuModel, MODES, tangent  # noqa: E402
import model_helpers  # noqa: E402
from pinocchio_oracle import (build_case, ONE_MODEL_CASES, ONE_MODEL_CONTACTS,  # noqa: E402
                              robots_dir)

RTOL = 1e-12
METHODS = {'inverse_dynamics': 3, 'gravity_torque': 1, 'bias_torque': 2, 'coriolis_vector': 2}


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv('KRON_DYNAMICS_CACHE', str(tmp_path / 'cache'))


def _states(model, rng, N=6):
    Q = np.stack([model.random_configuration(rng) for _ in range(N)])
    return Q, rng.uniform(-2, 2, (N, model.n)), rng.uniform(-2, 2, (N, model.n))


def _agree(model, gpu, rng):
    arrays = _states(model, rng)
    for method, count in {**METHODS, 'mass_matrix': 1}.items():
        ours = getattr(gpu, method)(*arrays[:count]).copy_to_host()
        cpu = getattr(model, method)(*arrays[:count])
        scale = max(1.0, float(np.max(np.abs(cpu))))
        error = float(np.max(np.abs(ours - cpu))) / scale
        assert error <= RTOL, f'{model.name}: {method} differs from the CPU by {error:.3g}'
    # forward dynamics: the residual M q'' + h - tau to RTOL of the torques (backward error),
    # and q'' itself within cond(M) times the rounding of the solve (forward error)
    Q, V, A = arrays
    tau = model.inverse_dynamics(Q, V, A)
    qdd = gpu.forward_dynamics(Q, V, tau).copy_to_host()
    M = model.mass_matrix(Q)
    residual = np.einsum('nij,nj->ni', M, qdd) + model.bias_torque(Q, V) - tau
    assert np.max(np.abs(residual)) <= RTOL * max(1.0, float(np.max(np.abs(tau))))
    cpu = model.forward_dynamics(Q, V, tau)
    for k in range(len(Q)):
        bound = 1e-14 * np.linalg.cond(M[k]) + RTOL
        error = np.max(np.abs(qdd[k] - cpu[k])) / max(1.0, float(np.max(np.abs(cpu[k]))))
        assert error <= bound, f'{model.name}: forward_dynamics row {k}: {error:.3g} > {bound:.3g}'


@pytest.mark.parametrize('seed', range(6))
def test_random_trees_equal_the_cpu_kernels(seed):
    """Prismatic, revolute, continuous and fixed joints, branches, tilted axes, armature."""
    model, rng = model_helpers.random_model(seed, armature=True)
    gpu = GpuModel(model)
    _agree(model, gpu, rng)
    _kinematics_agree(model, gpu, _states(model, rng)[0])


@pytest.mark.parametrize('seed', range(4))
def test_random_trees_with_mimic_joints_equal_the_cpu(seed):
    model, rng = model_helpers.random_model(100 + seed, min_joints=3, armature=True,
                                            mimic_fraction=0.4)
    gpu = GpuModel(model)
    _agree(model, gpu, rng)
    _kinematics_agree(model, gpu, _states(model, rng)[0])


@pytest.mark.parametrize('path', ['ur_description/urdf/ur5_robot.urdf',
                                  'panda_description/urdf/panda.urdf'])
def test_real_robots_equal_the_cpu(path):
    """The UR5, and the stock Panda whose hand has a mimic finger."""
    model = RobotModel.from_urdf_file(robots_dir() / path)
    gpu = GpuModel(model)
    _agree(model, gpu, np.random.default_rng(1))
    _kinematics_agree(model, gpu, _states(model, np.random.default_rng(6))[0],
                      [model.link_names[-1], model.link_names[len(model.link_names) // 2]])
    with pytest.raises(ValueError, match='frame must be one of'):
        gpu.jacobian(np.zeros((1, model.n)), model.link_names[-1], frame='base')
    with pytest.raises(ModelError, match="unknown link 'nowhere'; links are"):
        gpu.jacobian(np.zeros((1, model.n)), 'nowhere')
    with pytest.raises(ValueError, match='include_root=False here'):
        model.center_of_mass(cuda.to_device(np.zeros((2, model.n))), include_root=True)


def test_the_facade_serves_cuda_arrays_and_returns_a_device_array():
    model = RobotModel.from_urdf_file(robots_dir() / 'panda_description/urdf/panda.urdf')
    Q, V, A = _states(model, np.random.default_rng(2))
    dQ, dV, dA = (cuda.to_device(X) for X in (Q, V, A))
    for method, args, host in (
            ('inverse_dynamics', (dQ, dV, dA), (Q, V, A)), ('gravity_torque', (dQ,), (Q,)),
            ('bias_torque', (dQ, dV), (Q, V)), ('coriolis_vector', (dQ, dV), (Q, V)),
            ('mass_matrix', (dQ,), (Q,)),
            ('forward_dynamics', (dQ, dV, dA), (Q, V, A))):
        out = getattr(model, method)(*args)
        assert not isinstance(out, np.ndarray)       # stays on the device
        np.testing.assert_allclose(out.copy_to_host(), getattr(model, method)(*host),
                                   rtol=0, atol=1e-12 * 100)
    assert model.on_gpu() is model.on_gpu()          # generated once per model
    fixed = RobotModel.from_urdf_file(robots_dir() / 'ur_description/urdf/ur5_robot.urdf')
    Q, V, A = _states(fixed, np.random.default_rng(3))
    out = fixed.inverse_dynamics(cuda.to_device(Q), cuda.to_device(V), cuda.to_device(A))
    np.testing.assert_allclose(out.copy_to_host(), fixed.inverse_dynamics(Q, V, A), rtol=0,
                               atol=1e-12 * 100)


def _real_gpu(module: str):
    """Return an importable GPU array library on a real GPU, or skip saying why not."""
    if os.environ.get('KRON_DYNAMICS_GPU_TESTS') != 'device' or numba.config.ENABLE_CUDASIM:
        pytest.skip(f'{module} arrays need a real GPU (KRON_DYNAMICS_GPU_TESTS=device, as '
                    "bench/gpu_check.sh runs it): numba's simulator, which CI runs the GPU "
                    'tests on, takes NumPy and its own arrays only')
    return pytest.importorskip(module, reason=f'{module} is not installed here: this test '
                               'passes its arrays to the GPU kernels')


def test_pytorch_cuda_tensors_in_and_out_without_a_copy():
    """The README's example: torch CUDA tensors in, torques out that torch takes as they are."""
    torch = _real_gpu('torch')
    model = RobotModel.from_urdf_file(robots_dir() / 'panda_description/urdf/panda.urdf')
    Q, V, A = _states(model, np.random.default_rng(11), N=300)
    q, qd, qdd = (torch.as_tensor(X, device='cuda') for X in (Q, V, A))
    out = model.inverse_dynamics(q, qd, qdd)
    tau = torch.as_tensor(out, device='cuda')
    assert tau.data_ptr() == out.__cuda_array_interface__['data'][0]      # no copy
    expected = model.inverse_dynamics(Q, V, A)
    atol = RTOL * max(1.0, float(np.max(np.abs(expected))))
    np.testing.assert_allclose(tau.cpu().numpy(), expected, rtol=0, atol=atol)
    # the transposed layout of the README: x.T.contiguous().T, outputs in the same layout
    qT, qdT, qddT = (x.T.contiguous().T for x in (q, qd, qdd))
    out = model.on_gpu().inverse_dynamics(qT, qdT, qddT)
    assert out.flags['F_CONTIGUOUS'] and not out.flags['C_CONTIGUOUS']
    np.testing.assert_allclose(out.copy_to_host(), expected, rtol=0, atol=atol)
    M = torch.as_tensor(model.mass_matrix(q), device='cuda')
    np.testing.assert_allclose(M.cpu().numpy(), model.mass_matrix(Q), rtol=0, atol=RTOL * 10)
    # out=: a tensor the caller keeps, filled in place (NaN first: nothing left unwritten)
    buffer = torch.full_like(q, float('nan'))
    model.on_gpu().inverse_dynamics(q, qd, qdd, out=buffer)
    np.testing.assert_allclose(buffer.cpu().numpy(), expected, rtol=0, atol=atol)
    with pytest.raises(ValueError, match='out overlaps qdd in device memory'):
        model.on_gpu().inverse_dynamics(q, qd, qdd, out=qdd)
    with pytest.raises(ValueError, match='qd must be float64, got float32'):
        model.on_gpu().inverse_dynamics(q, qd.float(), qdd)


def test_cupy_arrays_in_and_out_without_a_copy():
    cupy = _real_gpu('cupy')
    model = RobotModel.from_urdf_file(robots_dir() / 'solo_description/robots/solo12.urdf',
                                      root_joint='floating')
    rng = np.random.default_rng(12)
    Q = np.stack([model.random_configuration(rng) for _ in range(200)])
    V, A = rng.uniform(-1, 1, (2, 200, model.nv))
    out = model.inverse_dynamics(cupy.asarray(Q), cupy.asarray(V), cupy.asarray(A))
    tau = cupy.asarray(out)
    assert tau.data.ptr == out.__cuda_array_interface__['data'][0]        # no copy
    expected = model.inverse_dynamics(Q, V, A)
    np.testing.assert_allclose(cupy.asnumpy(tau), expected, rtol=0,
                               atol=RTOL * max(1.0, float(np.max(np.abs(expected)))))


def test_quarter_turns_are_exact_zeros_in_the_generated_code():
    """The Panda's rpy of pi/2 leave no cos(pi/2) = 6.1e-17 factors to multiply by."""
    model = RobotModel.from_urdf_file(robots_dir() / 'panda_description/urdf/panda.urdf')
    assert any(0 < abs(x) < 1e-15 for R in model.tree.R0 for x in np.ravel(R))
    tiny = [x for x in re.findall(r'[-+]?\d+\.\d+e-\d+', codegen.source(model))
            if abs(float(x)) < 1e-15]
    assert not tiny, tiny[:5]


def test_the_source_is_cached_by_content():
    model = RobotModel.from_urdf_file(robots_dir() / 'ur_description/urdf/ur5_robot.urdf')
    first, again = GpuModel(model), GpuModel(model)
    assert not first.cached and again.cached and first.source_path == again.source_path
    assert first.generate_seconds >= 0 and first.compile_seconds == {}   # on first use
    Q = np.zeros((2, model.n))
    first.gravity_torque(Q)
    first.mass_matrix(Q)
    assert set(first.compile_seconds) == {'rnea', 'mass_matrix'}
    assert min(first.compile_seconds.values()) >= 0
    other = GpuModel(model.with_armature(np.full(model.n, 0.1)))
    assert other.source_path != first.source_path
    assert 'cuda.grid(1)' in first.source_path.read_text()


def test_large_kernels_read_through_device_functions_in_bounded_blocks(monkeypatch):
    """
    codegen.blocks and DEVICE_FUNCTIONS: numba-cuda compiles a large tree in near linear time.

    TIAGo's Newton-Euler compiled in 150-180 s before them, in about 20 s after. Each input is
    read by calls, not conditional expressions (basic blocks, which numba's SSA and liveness
    passes walk once per variable), and a kernel's straight-line code is cut into blocks of
    about BLOCK_STATEMENTS statements (numba-cuda's lowering scans a block once per variable); a
    boundary only between two simple statements of one suite.
    """
    model = RobotModel.from_urdf_file(robots_dir() / 'talos_data/robots/talos_reduced.urdf',
                                      root_joint='floating')
    source = codegen.source(model)
    kernel = source[source.index('\ndef rnea('):source.index('\ndef mass_matrix(')]
    conditional = [x for x in kernel.split('\n')
                   if ' if ' in x and codegen.BLOCK_BOUNDARY not in x
                   and not x.lstrip().startswith('if ')]
    assert len(conditional) <= 1, conditional       # the base orientation's scale alone
    assert kernel.count('read_if(QD, t, ') == kernel.count('read_if(QDD, t, ') == model.nv
    for text in (source, tangent.derivatives_source(model)):
        lines, run, longest = text.split('\n'), 0, 0
        for k, line in enumerate(lines):
            if codegen.BLOCK_BOUNDARY in line:
                before, after = lines[k - 1], lines[k + 1]
                indent = line[:len(line) - len(line.lstrip())]
                assert before.startswith(indent) and after.startswith(indent)
                assert not before[len(indent)].isspace() and not after[len(indent)].isspace()
                assert not before.rstrip().endswith(':') and not after.rstrip().endswith(':')
                run = 0
            elif line.startswith('def '):
                run = 0
            else:
                run += 1
                longest = max(longest, run)
        assert text.count(codegen.BLOCK_BOUNDARY) > 10 and longest <= 2 * codegen.BLOCK_STATEMENTS
    monkeypatch.setattr(codegen, 'BLOCK_STATEMENTS', 2)
    lines = ['def k(Q, BAD):', '    t = cuda.grid(1)', '    a = 1', '    if a:', '        b = 2',
             '        c = 3', '        d = 4', '    return', '    e = 5']
    out = codegen.blocks(lines)
    assert [x for x in out if codegen.BLOCK_BOUNDARY not in x] == lines
    assert [k for k, x in enumerate(out) if codegen.BLOCK_BOUNDARY in x] == [5]
    assert out[5] == '        ' + codegen.BLOCK_BOUNDARY


def test_straight_line_variables_are_assigned_once():
    """codegen.single_assignment: accumulations renamed; loops', branches' and counters' kept."""
    lines = ['def k(Q, X, BAD):', '    t = cuda.grid(1)', '    nonfinite = 0', '    a = Q[t, 0]',
             '    a = a * a', '    a += 2.0', '    nonfinite += not_finite(a)', '    s = 0.0',
             '    for i in range(3):', '        s = s + a', '        X[t, i] = a',
             '    if nonfinite > 0:', '        X[t, 0] = a', '        return', '    b = a + s',
             '    a = b', '    X[t, 1] = a + b']
    assert codegen.single_assignment(lines) == [
        'def k(Q, X, BAD):', '    t = cuda.grid(1)', '    nonfinite = 0', '    a = Q[t, 0]',
        '    a_v1 = a * a', '    a_v2 = a_v1 + (2.0)', '    nonfinite += not_finite(a_v2)',
        '    s = 0.0', '    for i in range(3):', '        s = s + a_v2', '        X[t, i] = a_v2',
        '    if nonfinite > 0:', '        X[t, 0] = a_v2', '        return', '    b = a_v2 + s',
        '    a_v3 = b', '    X[t, 1] = a_v3 + b']
    loop = ['    i = 1', '    for i in range(2):', '        X[t, i] = i', '    i = i + 1']
    assert codegen.single_assignment(loop) == loop      # a loop's variable keeps its name
    # a loop's body too, but for what it carries from one pass to the next or reads after
    body = ['def k(Q, X, BAD):', '    t = cuda.grid(1)', '    c = 0.0', '    z = 0.0',
            '    for i in range(3):', '        u = Q[t, 0] * i', '        u = u + 1.0',
            '        c = c + u', '        w = c', '        w += u', '        z = w',
            '        z = z * 2.0', '        X[t, i] = w', '    X[t, 0] = c + z']
    assert codegen.single_assignment(body) == [
        *body[:6], '        u_v1 = u + 1.0', '        c = c + u_v1', '        w = c',
        '        w_v1 = w + (u_v1)', '        z = w_v1', '        z = z * 2.0',
        '        X[t, i] = w_v1', '    X[t, 0] = c + z']

    class Grid:                         # cuda.grid(1) of the row run
        row = 0

        def grid(self, _):
            return self.row
    Q, grid = np.array([[3.0], [np.inf]]), Grid()
    for source in (lines, codegen.single_assignment(lines)):     # run, the same results
        namespace = {'cuda': grid, 'not_finite': lambda x: 0 if np.isfinite(x) else 1}
        exec('\n'.join(source), namespace)
        X = np.zeros((2, 3))
        for grid.row in range(2):
            namespace['k'](Q, X, None)
        np.testing.assert_array_equal(X, [[11.0, 88.0, 11.0], [np.inf, np.inf, np.inf]])
    for source in (body, codegen.single_assignment(body)):
        namespace = {'cuda': grid}
        exec('\n'.join(source), namespace)
        X = np.zeros((2, 3))
        grid.row = 0
        namespace['k'](Q, X, None)
        np.testing.assert_array_equal(X[0], [50.0, 9.0, 19.0])


def test_bad_inputs_are_named_and_non_finite_rows_reported():
    model = RobotModel.from_urdf_file(robots_dir() / 'ur_description/urdf/ur5_robot.urdf')
    gpu = GpuModel(model)
    Q, V, A = _states(model, np.random.default_rng(4))
    with pytest.raises(ValueError, match=r'q must have shape \(N, 6\).*got \(6,\)'):
        gpu.gravity_torque(Q[0])
    with pytest.raises(ValueError, match='q must be float64, got float32'):
        gpu.gravity_torque(Q.astype(np.float32))
    with pytest.raises(ValueError, match='qd has 5 rows, q 6'):
        gpu.bias_torque(Q, V[:5])
    with pytest.raises(ValueError, match='must be a CUDA array'):
        gpu.gravity_torque('abc')
    with pytest.raises(ValueError, match='^q must be an array of float64 numbers, one state per '
                                         'row; its rows differ in length$'):
        gpu.gravity_torque([list(Q[0]), list(Q[1, :5])])        # not NumPy's words
    with pytest.raises(ValueError, match='^q must be float64, got complex128$'):
        gpu.gravity_torque(Q + 0j)                               # never its real part
    for dt in (np.nan, 'abc', 1j):
        with pytest.raises(ValueError, match='^dt must be a finite number, got '):
            gpu.integrate(Q, V, dt)                              # the CPU's check
    for damping in (np.full(6, 0.1j), [[0.1] * 6, [0.1]]):
        with pytest.raises(ValueError, match=r'^simulate: damping must be 6 finite numbers'):
            gpu.simulate(Q, V, A, 0.01, damping=damping)
    for threads in (0, 2048, 2.5, True):
        with pytest.raises(ValueError, match='^threads_per_block must be an integer from 1 to '
                                             f"1024 .*, got {threads!r}$"):
            GpuModel(model, threads)
    for dtype in (np.int32, np.float16, np.complex128):
        with pytest.raises(ValueError, match='^dtype must be float64 or float32, got '
                                             f'{np.dtype(dtype)}$'):
            GpuModel(model, dtype=dtype)
    # 6 rows in blocks of 4: the last block part full; then unchecked calls of 2 rows and of 6
    # (their flags, kept between calls, grow with the rows)
    in_fours = GpuModel(model, 4)
    np.testing.assert_allclose(in_fours.inverse_dynamics(Q, V, A).copy_to_host(),
                               model.inverse_dynamics(Q, V, A), rtol=0, atol=1e-10)
    for rows in (2, 6):
        np.testing.assert_allclose(gpu.gravity_torque(Q[:rows], check=False).copy_to_host(),
                                   model.gravity_torque(Q[:rows]), rtol=0, atol=1e-10)
    many = np.repeat(Q, 2, axis=0)
    many[:, 3] = np.nan
    with pytest.raises(ValueError, match=r'^gravity_torque: rows \[0, 1, 2, 3, 4, 5, 6, 7, 8, '
                                         r'9\] and 2 more have a non-finite input \(their '
                                         r'results are NaN\)$'):
        gpu.gravity_torque(many)
    bad = Q.copy()
    bad[2, 1] = np.nan
    bad[4, 0] = np.inf
    with pytest.raises(ValueError, match=r'inverse_dynamics: rows \[2, 4\] have a non-finite'):
        gpu.inverse_dynamics(bad, V, A)
    tau = gpu.inverse_dynamics(bad, V, A, check=False).copy_to_host()
    assert np.isnan(tau[[2, 4]]).all() and np.isfinite(np.delete(tau, [2, 4], 0)).all()
    assert gpu.inverse_dynamics(np.empty((0, 6)), np.empty((0, 6)),
                                np.empty((0, 6))).shape == (0, 6)
    assert set(MODES) == set(METHODS)
    with pytest.raises(ValueError, match=r'mass_matrix: rows \[2, 4\] have a non-finite'):
        gpu.mass_matrix(bad)


def _massless():
    """Return a model whose one joint moves no mass: M is singular."""
    return RobotModel.from_urdf_string(
        '<robot name="r"><link name="base"/><link name="a"/>'
        '<joint name="j" type="revolute"><parent link="base"/><child link="a"/>'
        '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
        '</robot>', inertia_check='warn')


@pytest.mark.parametrize('method', ['forward_dynamics', 'forward_dynamics_derivatives'])
def test_a_singular_mass_matrix_is_reported_by_row(method):
    """A joint that moves no mass: M is singular, the rows are named (and NaN)."""
    gpu = GpuModel(_massless())
    Q = np.zeros((3, 1))
    with pytest.raises(ValueError, match=rf'{method}: rows \[0, 1, 2\] have a mass matrix '
                                         'that is not positive definite'):
        getattr(gpu, method)(Q, Q, Q)
    result = getattr(gpu, method)(Q, Q, Q, check=False)
    for x in result if isinstance(result, tuple) else (result,):
        assert np.isnan(x.copy_to_host()).all()


# moving bases: (example-robot-data file, root joint); the Panda on a free flyer has its mimic
# finger too
MOVING = {'solo12 floating': ('solo_description/robots/solo12.urdf', 'floating'),
          'TIAGo planar': ('tiago_description/robots/tiago.urdf', 'planar'),
          'Panda floating, mimic hand': ('panda_description/urdf/panda.urdf', 'floating')}


@pytest.mark.parametrize('case', [pytest.param(c, marks=pytest.mark.slow) if 'TIAGo' in c
                                  else c for c in sorted(MOVING)])   # TIAGo: 5 s simulated
def test_moving_bases_equal_the_cpu(case):
    """Take q (N, nq) with the base pose, v, v', tau (N, nv) with the base twist, as the CPU."""
    path, root = MOVING[case]
    model = RobotModel.from_urdf_file(robots_dir() / path, root_joint=root)
    gpu = GpuModel(model)
    rng = np.random.default_rng(5)
    Q = np.stack([model.random_configuration(rng) for _ in range(5)])
    V, A = rng.uniform(-2, 2, (2, 5, model.nv))
    _rnea_agrees(case, model, gpu, Q, V, A)
    tau = model.inverse_dynamics(Q, V, A)
    dv = gpu.forward_dynamics(Q, V, tau).copy_to_host()
    residual = (np.einsum('nij,nj->ni', model.mass_matrix(Q), dv) + model.bias_torque(Q, V)
                - tau)
    assert np.max(np.abs(residual)) <= RTOL * max(1.0, float(np.max(np.abs(tau))))
    # through the facade, CUDA arrays in, a device array out
    out = model.inverse_dynamics(cuda.to_device(Q), cuda.to_device(V), cuda.to_device(A))
    np.testing.assert_allclose(out.copy_to_host(), model.inverse_dynamics(Q, V, A), rtol=0,
                               atol=RTOL * max(1.0, float(np.max(np.abs(tau)))))
    _kinematics_agree(model, gpu, Q)


def _rnea_agrees(case, model, gpu, Q, V, A):
    """tau, G, h, C q' and M of any base (v, v' of nv columns) equal the CPU's to RTOL."""
    for method, args in (('inverse_dynamics', (Q, V, A)), ('gravity_torque', (Q,)),
                         ('bias_torque', (Q, V)), ('coriolis_vector', (Q, V)),
                         ('mass_matrix', (Q,))):
        ours = getattr(gpu, method)(*args).copy_to_host()
        cpu = getattr(model, method)(*args)
        error = float(np.max(np.abs(ours - cpu))) / max(1.0, float(np.max(np.abs(cpu))))
        assert error <= RTOL, f'{case}: {method} differs from the CPU by {error:.3g}'


def _kinematics_agree(model, gpu, Q, links=()):
    """Poses, centre of mass and Jacobians (three frames, a point), directly and by the facade."""
    P, C = gpu.link_poses(Q)
    np.testing.assert_allclose(P.copy_to_host(), model.link_poses(Q), rtol=0, atol=1e-12)
    np.testing.assert_allclose(C.copy_to_host(), model.center_of_mass(Q), rtol=0, atol=1e-12)
    dQ = cuda.to_device(Q)
    np.testing.assert_allclose(model.link_poses(dQ).copy_to_host(), model.link_poses(Q),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(model.center_of_mass(dQ).copy_to_host(),
                               model.center_of_mass(Q), rtol=0, atol=1e-12)
    for link in links or model.link_names[-1:]:
        for frame in ('local_world_aligned', 'WORLD', 'local'):
            for point in (None, (0.1, -0.2, 0.05)):
                expected = model.jacobian(Q, link, point, frame)
                np.testing.assert_allclose(gpu.jacobian(Q, link, point, frame).copy_to_host(),
                                           expected, rtol=0, atol=1e-12,
                                           err_msg=f'{link} {frame} {point}')
        np.testing.assert_allclose(model.jacobian(dQ, link).copy_to_host(),
                                   model.jacobian(Q, link), rtol=0, atol=1e-12)


def test_a_base_orientation_off_the_unit_sphere_is_reported_by_row():
    model = RobotModel.from_urdf_file(robots_dir() / 'solo_description/robots/solo12.urdf',
                                      root_joint='floating')
    gpu = GpuModel(model)
    Q = np.stack([model.neutral()] * 4)
    Q[1, 3:7] *= 1.0005          # within 1e-3 of unit: normalised, as on the CPU
    Q[3, 3:7] *= 1.1
    with pytest.raises(ValueError, match=r'gravity_torque: rows \[3\] have a base orientation'):
        gpu.gravity_torque(Q)
    G = gpu.gravity_torque(Q[:3]).copy_to_host()
    np.testing.assert_allclose(G, model.gravity_torque(Q[:3]), rtol=0, atol=1e-9)
    with pytest.raises(ValueError, match=r"q must have shape \(N, 19\) \(one state per row: "
                                         r"\['base_x'"):
        gpu.gravity_torque(Q[:, :12])


def test_a_refused_row_is_nan_in_every_output_and_named_for_its_first_reason():
    """Inputs are read where first used and checked after the body: the verdicts of before."""
    model = RobotModel.from_urdf_file(robots_dir() / 'solo_description/robots/solo12.urdf',
                                      root_joint='floating')
    gpu = GpuModel(model)
    rng = np.random.default_rng(9)
    Q = np.stack([model.random_configuration(rng) for _ in range(5)])
    V, A = rng.uniform(-1, 1, (2, 5, model.nv))
    V[1, 8] = np.nan                    # a joint rate
    Q[2, 3:7] *= 1.1                    # off the unit sphere and a non-finite acceleration:
    A[2, 10] = np.inf                   # the non-finite input is named
    Q[3, 3:7] *= 1.1                    # off the unit sphere only
    V[4, 2] = -np.inf                   # a base rate
    with pytest.raises(ValueError, match=r'inverse_dynamics: rows \[1, 2, 4\] have a non-finite'):
        gpu.inverse_dynamics(Q, V, A)
    tau = gpu.inverse_dynamics(Q, V, A, check=False).copy_to_host()
    assert np.isnan(tau[1:]).all()
    np.testing.assert_allclose(tau[0], model.inverse_dynamics(Q[0], V[0], A[0]), rtol=0,
                               atol=RTOL * max(1.0, float(np.max(np.abs(tau[0])))))
    good = [0, 1, 4]                    # q alone: rows 2 and 3 are off the unit sphere
    for method in ('mass_matrix', 'link_poses', 'jacobian'):
        args = (Q, model.link_names[-1]) if method == 'jacobian' else (Q,)
        with pytest.raises(ValueError, match=rf'{method}: rows \[2, 3\] have a base orientation'):
            getattr(gpu, method)(*args)
        ours = getattr(gpu, method)(*args, check=False)
        ours = ours[0] if method == 'link_poses' else ours
        ours = ours.copy_to_host()
        assert np.isnan(ours[2:4]).all(), method
        np.testing.assert_allclose(ours[good], getattr(model, method)(
            Q[good], *args[1:]), rtol=0, atol=1e-11, err_msg=method)
    Qf = np.stack([Q[0]] * 3)
    tau = model.inverse_dynamics(Qf, V[[0] * 3], A[[0] * 3])
    tau[1, 5] = np.nan                  # the torque read last, after M and its Cholesky
    with pytest.raises(ValueError, match=r'forward_dynamics: rows \[1\] have a non-finite'):
        gpu.forward_dynamics(Qf, V[[0] * 3], tau)
    dv = gpu.forward_dynamics(Qf, V[[0] * 3], tau, check=False).copy_to_host()
    assert np.isnan(dv[1]).all() and np.isfinite(dv[[0, 2]]).all()
    np.testing.assert_allclose(dv[0], A[0], rtol=0, atol=1e-9)
    # a row both non-finite and with a singular M is named for its non-finite input
    massless = GpuModel(_massless())
    Qm = np.zeros((3, 1))
    Qm[1, 0] = np.nan
    with pytest.raises(ValueError, match=r'forward_dynamics: rows \[1\] have a non-finite'):
        massless.forward_dynamics(Qm, np.zeros((3, 1)), np.zeros((3, 1)))


def _leaves_first_solve(M, b):
    """
    Return M^-1 b by M = L^T L factored leaves first over every entry, the readable reference.

    Dense (no pattern assumed): an entry the tree keeps zero subtracts exact zeros, so the
    tree's solve, in this order, gives the same bits.
    """
    L, x = np.tril(M), b.copy()
    for k in range(len(M) - 1, -1, -1):
        L[k, k] = np.sqrt(L[k, k])
        L[k, :k] /= L[k, k]
        for i in range(k - 1, -1, -1):
            L[i, :i + 1] -= L[k, i] * L[k, :i + 1]
        x[k] /= L[k, k]
        x[:k] -= L[k, :k] * x[k]
    for i in range(len(M)):
        s = x[i]
        for j in range(i - 1, -1, -1):
            s -= L[i, j] * x[j]
        x[i] = s / L[i, i]
    return x


def _tree_solve_agrees(model, gpu, Q, V, tau, same_bits: bool = True):
    """
    Check q'' against the reference on the GPU's own M and tau - h, parents first.

    The same bits on the simulator (Python's arithmetic) where ``same_bits``, else within
    cond(M) times the solve's rounding; 1e-13 on a GPU (fused multiply-adds). Returns q''.
    """
    qdd = gpu.forward_dynamics(Q, V, tau).copy_to_host()
    M, h = gpu.mass_matrix(Q).copy_to_host(), gpu.bias_torque(Q, V).copy_to_host()
    order = codegen.parents_first(codegen._Robot(model))
    expected = np.empty_like(qdd)
    for k in range(len(Q)):
        expected[k, order] = _leaves_first_solve(M[k][np.ix_(order, order)],
                                                 (tau[k] - h[k])[order])
    if not numba.config.ENABLE_CUDASIM:
        np.testing.assert_allclose(qdd, expected, rtol=1e-13, atol=1e-13)
    elif same_bits:
        np.testing.assert_array_equal(qdd, expected)
    else:
        for k in range(len(Q)):
            bound = (1e-14 * np.linalg.cond(M[k]) + RTOL) * max(1.0, np.abs(tau[k]).max())
            assert np.max(np.abs(qdd[k] - expected[k])) <= bound, f'row {k}'
    return qdd


def _forward_dynamics_text(gpu):
    """Return the forward dynamics kernel's text (others have local arrays)."""
    return next(x for x in gpu.source_path.read_text().split('\ndef ')
                if x.startswith('forward_dynamics('))


def _ancestor_counts(model) -> list:
    """Return each tree joint's number of movable ancestors (the loader's tree, parents first)."""
    parent = codegen._Robot(model).tree.parent
    ancestors = [0] * len(parent)
    for i, p in enumerate(parent):
        ancestors[i] = 0 if p < 0 else ancestors[p] + 1
    return ancestors


def test_a_large_tree_is_solved_along_its_ancestors(monkeypatch):
    """
    Above UNROLLED_SOLVE, M = L^T L is factored leaves first, each row on its ancestors only.

    solo12 on a free flyer: each coordinate's row holds its ancestors' columns, the base's
    six a chain, so 117 of the 171 entries of a dense triangle; q'' is the reference's on
    the kernels' own M and tau - h, and the written-out dense solve's within cond(M) times
    its rounding.
    """
    model = RobotModel.from_urdf_file(robots_dir() / 'solo_description/robots/solo12.urdf',
                                      root_joint='floating')
    assert model.nv > codegen.UNROLLED_SOLVE
    entries = sum(range(1, 7)) + sum(6 + a + 1 for a in _ancestor_counts(model))
    assert entries == 117
    rng = np.random.default_rng(12)
    Q = np.stack([model.random_configuration(rng) for _ in range(4)])
    V, A = rng.uniform(-2, 2, (2, 4, model.nv))
    tau = model.inverse_dynamics(Q, V, A)
    looped = GpuModel(model)
    assert f'cuda.local.array({entries}, real)' in _forward_dynamics_text(looped)
    ours = _tree_solve_agrees(model, looped, Q, V, tau)
    # a kernel's M is stored on the layout's chains only if it has no entry off them
    robot = codegen._Robot(model)
    generated = dict(codegen._mass_matrix_row(robot)[2])
    assert len(list(robot.layout().entries(generated))) == entries
    generated[(model.nv - 1, model.nv - 4)] = 'x'  # two legs' joints coupled
    with pytest.raises(AssertionError, match="M has entries off the tree layout's chains"):
        list(robot.layout().entries(generated))
    monkeypatch.setattr(codegen, 'UNROLLED_SOLVE', 10 ** 6)
    written = GpuModel(model)
    assert 'cuda.local.array' not in _forward_dynamics_text(written)
    theirs = written.forward_dynamics(Q, V, tau).copy_to_host()
    for k, M in enumerate(model.mass_matrix(Q)):
        bound = 1e-14 * np.linalg.cond(M) + RTOL
        assert np.max(np.abs(ours[k] - theirs[k])) <= bound * max(1.0, np.abs(theirs[k]).max())
    np.testing.assert_allclose(ours, A, rtol=0, atol=1e-9)
    # a pivot that is not positive is counted in the loop as written out
    monkeypatch.setattr(codegen, 'UNROLLED_SOLVE', 0)
    massless = GpuModel(_massless())
    Qm = np.zeros((2, 1))
    with pytest.raises(ValueError, match=r'forward_dynamics: rows \[0, 1\] have a mass matrix'):
        massless.forward_dynamics(Qm, Qm, Qm)
    assert np.isnan(massless.forward_dynamics(Qm, Qm, Qm, check=False).copy_to_host()).all()


@pytest.mark.parametrize('seed, mimic', [(0, 0.0), (3, 0.0), (100, 0.4), (124, 0.4)])
def test_the_tree_solve_of_shuffled_and_mimic_trees(seed, mimic, monkeypatch):
    """
    Joints in a shuffled order are solved parents first; a mimic joint's coupling fills in.

    Every tree through the looped solves (UNROLLED_SOLVE = 0: forward dynamics, its
    derivatives' minus_solve, the contacts' solve and the task inertia, the last three against
    the CPU, each with Y = L^-T J^T on the tree's order). Without mimic joints no entry
    beyond each row's ancestors is stored, and q'' is the reference's to the bit. Seed 124's
    mimic joint couples two branches: entries beyond M's nonzeros are stored (the fill-in),
    and q'' is the dense reference's (an entry the chains missed would be off by far more);
    a mimic tree's tau - h inside the kernel rounds apart from the bias kernel's in its
    last bits, so that comparison is within the solve's rounding, not to the bit.
    """
    monkeypatch.setattr(codegen, 'UNROLLED_SOLVE', 0)
    model, rng = model_helpers.random_model(seed, min_joints=3, armature=True,
                                            mimic_fraction=mimic)
    gpu = GpuModel(model)
    stored = int(re.search(r'chol = cuda.local.array\((\d+), real\)',
                           _forward_dynamics_text(gpu)).group(1))
    Q, V, A = _states(model, rng)
    if not mimic:
        assert stored == sum(a + 1 for a in _ancestor_counts(model))
        assert codegen.parents_first(codegen._Robot(model)) == list(np.argsort(model._perm))
    elif seed == 124:
        order = codegen.parents_first(codegen._Robot(model))
        M = model.mass_matrix(Q[0])[np.ix_(order, order)]
        assert stored > np.count_nonzero(np.tril(M))
    tau = model.inverse_dynamics(Q, V, A)
    _tree_solve_agrees(model, gpu, Q, V, tau, not mimic)
    _agree(model, gpu, rng)
    # the forward dynamics' derivatives solve along the same chains (minus_solve)
    minus_solve = tangent.derivatives_source(model).split('\ndef minus_solve(')[1]
    assert f'chol = cuda.local.array({stored}, real)' in minus_solve
    cond = np.array([np.linalg.cond(M) for M in model.mass_matrix(Q)])
    _same_rows(model, zip(("dq''/dq", "dq''/dq'", 'M^-1'),
                          gpu.forward_dynamics_derivatives(Q, V, tau),
                          model.forward_dynamics_derivatives(Q, V, tau)), 1e-14 * cond + RTOL)
    # the contacts' solve and the task inertia at a point of the link whose Jacobian has the
    # highest rank (3 without mimic joints; 2 in seeds 100 and 124, whose contact every row
    # refuses, on the GPU as on the CPU)
    from kron_dynamics.gpu.contacts import contacts_source
    assert f'chol = cuda.local.array({stored}, real)' in contacts_source(model, 3)
    link = max(model.link_names, key=lambda x: np.linalg.matrix_rank(
        model.contact_jacobian(Q[0], [Contact(x)])))
    refused = _contacts_agree(model, [Contact(link, (0.02, -0.01, 0.03))], Q, V, tau)
    assert len(refused) < len(Q) if not mimic else len(refused) == len(Q)
    for part, damping in (('linear', 0.3), ('full', 0.3)):
        cpu = model.operational_space_inertia(Q, link, (0.02, -0.01, 0.03), part=part,
                                              damping=damping)
        cond = np.array([np.linalg.cond(x) for x in cpu])
        _same_rows(model, [(f'Lambda {part}', gpu.operational_space_inertia(
            Q, link, (0.02, -0.01, 0.03), part=part, damping=damping), cpu)],
            1e-14 * cond + RTOL)


@pytest.mark.slow    # seconds on the simulator: in make test, not make check
@pytest.mark.parametrize('seed, root', [(3015, None), (3013, 'floating'), (3011, 'planar')])
def test_large_random_mimic_trees_on_every_base_equal_the_cpu(seed, root):
    """
    13 to 20 coordinates, as generated by default: above UNROLLED_SOLVE, along the tree.

    Random trees of 13 to 18 movable joints (prismatic, revolute, continuous; fixed ones,
    branches, tilted axes, full inertia tensors, inertial rpy), a third mimic joints,
    shuffled, with armature, on a fixed, floating and planar base: the dynamics, forward
    dynamics and its derivatives, the kinematics and a contact's solve against the CPU, at
    the thresholds the generator uses for such a robot (no monkeypatch: the tree's solves
    and the kernels cut into blocks as a real humanoid's are).
    """
    model, rng = model_helpers.random_model(seed, min_joints=13, max_joints=19, armature=True,
                                            root_joint=root, mimic_fraction=0.3)
    assert len(model.mimic_joints) >= 2
    _large_tree_agrees(f'seed {seed}', model, rng)


@pytest.mark.slow    # seconds on the simulator: in make test, not make check
@pytest.mark.parametrize('path, root, mimic, link', [
    ('baxter_description/urdf/baxter.urdf', 'fixed', 2, 'l_gripper_r_finger_tip'),
    ('tiago_pro_description/robots/tiago_pro.urdf', 'planar', 10,
     'gripper_right_fingertip_left_link'),
    ('talos_data/robots/talos_full_v2.urdf', 'floating', 12, 'leg_left_6_link')])
def test_real_robots_with_mimic_hands_equal_the_cpu(path, root, mimic, link):
    """
    Real trees whose grippers are linkages of mimic joints, above UNROLLED_SOLVE.

    Baxter (17 joints, two mimic fingers), TIAGo Pro on a planar base (26 velocities, ten
    mimic joints in its grippers) and TALOS with its hands on a free flyer (38 velocities,
    twelve): the coupled model's dynamics, forward dynamics and its derivatives along the
    tree, the kinematics and a point contact on a fingertip or a foot, as in
    test_large_random_mimic_trees_on_every_base_equal_the_cpu.
    """
    model = RobotModel.from_urdf_file(robots_dir() / path, root_joint=root)
    assert len(model.mimic_joints) == mimic
    _large_tree_agrees(model.name, model, np.random.default_rng(5), link)


@pytest.mark.slow    # seconds on the simulator: in make test, not make check
@pytest.mark.parametrize('path, mimic, link', [
    ('xarm/xarm6_with_gripper.urdf', 5, 'right_finger'),
    ('quadruped/minitaur.urdf', 0, 'lower_leg_front_leftL_link')])
def test_pybullet_robots_on_a_free_flyer_equal_the_cpu(path, mimic, link):
    """
    A second real corpus (pybullet_data): the xArm's gripper, five mimic joints; a Minitaur.

    On a free flyer, 13 and 22 velocities: above UNROLLED_SOLVE, along the tree. The xArm's
    link2 has an inertia no rigid body has (test_pybullet_data): loaded with
    inertia_check='warn', as there.
    """
    pybullet_data = pytest.importorskip('pybullet_data', reason='pybullet (requirements.txt) '
                                                                'ships the URDFs of this test')
    model = RobotModel.from_urdf_file(Path(pybullet_data.getDataPath()) / path,
                                      root_joint='floating', inertia_check='warn')
    assert len(model.mimic_joints) == mimic
    _large_tree_agrees(model.name, model, np.random.default_rng(5), link)


def _large_tree_agrees(case, model, rng, link=None):
    """Tree solve and blocks generated; dynamics, kinematics, a contact (``link`` or random)."""
    gpu = GpuModel(model)
    assert model.nv > codegen.UNROLLED_SOLVE
    assert 'chol = cuda.local.array(' in _forward_dynamics_text(gpu)
    assert codegen.BLOCK_BOUNDARY in gpu.source_path.read_text()
    Q = np.stack([model.random_configuration(rng) for _ in range(3)])
    V, A = rng.uniform(-2, 2, (2, 3, model.nv))
    _rnea_agrees(case, model, gpu, Q, V, A)
    tau = model.inverse_dynamics(Q, V, A)
    cond = np.array([np.linalg.cond(M) for M in model.mass_matrix(Q)])
    _same_rows(model, [('forward_dynamics', gpu.forward_dynamics(Q, V, tau),
                        model.forward_dynamics(Q, V, tau))], 1e-14 * cond + RTOL)
    _kinematics_agree(model, gpu, Q)
    _same_rows(model, zip(("dq''/dq", "dq''/dq'", 'M^-1'),
                          gpu.forward_dynamics_derivatives(Q, V, tau),
                          model.forward_dynamics_derivatives(Q, V, tau)), 1e-14 * cond + RTOL)
    link = link or model.link_names[int(rng.integers(len(model.link_names)))]
    assert not _contacts_agree(model, [Contact(link, (0.02, -0.01, 0.03))], Q, V,
                               rng.uniform(-2, 2, (3, model.n)))     # no row refused


@pytest.mark.parametrize('path', ['ur_description/urdf/ur5_robot.urdf',
                                  'panda_description/urdf/panda.urdf'])
def test_single_precision_is_documented_accuracy(path):
    """
    float32 kernels against fp64 on the CPU.

    tau, M, poses, Jacobians, dtau/dq, dtau/dq', dM/dq, J', accelerations and the regressor
    to 2e-6; q'' and the forward dynamics' derivatives to 1e-6 cond(M).
    """
    model = RobotModel.from_urdf_file(robots_dir() / path)
    gpu = GpuModel(model, dtype=np.float32)
    Q, V, A = _states(model, np.random.default_rng(7), N=8)
    tau = model.inverse_dynamics(Q, V, A)
    single = [x.astype(np.float32) for x in (Q, V, A, tau)]
    derivatives = zip(('dtau/dq', "dtau/dq'", 'M'), gpu.inverse_dynamics_derivatives(*single[:3]),
                      model.inverse_dynamics_derivatives(Q, V, A))
    for method, ours, cpu in (
            ('inverse_dynamics', gpu.inverse_dynamics(*single[:3]), tau),
            ('mass_matrix', gpu.mass_matrix(single[0]), model.mass_matrix(Q)),
            ('link_poses', gpu.link_poses(single[0])[0], model.link_poses(Q)),
            ('jacobian', gpu.jacobian(single[0], model.link_names[-2]),
             model.jacobian(Q, model.link_names[-2])), *derivatives,
            ('dM/dq', gpu.mass_matrix_derivative(single[0]), model.mass_matrix_derivative(Q)),
            ("J'", gpu.jacobian_derivative(single[0], single[1], model.link_names[-2]),
             model.jacobian_derivative(Q, V, model.link_names[-2])),
            ('acceleration', gpu.acceleration(*single[:3], model.link_names[-2]),
             model.acceleration(Q, V, A, model.link_names[-2])),
            ('regressor', gpu.regressor(*single[:3]), model.regressor(Q, V, A))):
        ours = ours.copy_to_host()
        assert ours.dtype == np.float32, method
        error = float(np.max(np.abs(ours - cpu))) / max(1.0, float(np.max(np.abs(cpu))))
        assert error <= 2e-6, f'{method}: {error:.3g}'
    qdd = gpu.forward_dynamics(single[0], single[1], single[3]).copy_to_host()
    M = model.mass_matrix(Q)
    for k in range(len(Q)):
        error = np.max(np.abs(qdd[k] - A[k])) / max(1.0, float(np.max(np.abs(A[k]))))
        assert error <= 1e-6 * np.linalg.cond(M[k]), f'row {k}: {error:.3g}'
    cond = np.array([np.linalg.cond(x) for x in M])
    _same_rows(model, zip(("dq''/dq", "dq''/dq'", 'M^-1'), gpu.forward_dynamics_derivatives(
        single[0], single[1], single[3]), model.forward_dynamics_derivatives(Q, V, tau)),
        1e-6 * cond)
    with pytest.raises(ValueError, match='q must be float32, got float64'):
        gpu.gravity_torque(Q)


@pytest.mark.parametrize('path, root', [('panda_description/urdf/panda.urdf', 'fixed'),
                                        ('solo_description/robots/solo12.urdf', 'floating')])
def test_results_go_to_the_cuda_arrays_given_as_out(path, root):
    """
    out=: every method writes into the caller's arrays, of any layout, and returns them.

    The arrays are filled with NaN first: a GPU's fresh memory holds whatever was there, so
    an entry a kernel left unwritten (a structural zero of M or of a Jacobian: the Panda's
    fingers, solo12's four legs) would show.
    """
    model = RobotModel.from_urdf_file(robots_dir() / path, root_joint=root)
    gpu = GpuModel(model)
    rng = np.random.default_rng(13)
    Q = np.stack([model.random_configuration(rng) for _ in range(4)])
    V, A = rng.uniform(-2, 2, (2, 4, model.nv))
    N, n = V.shape
    dQ, dV, dA = (cuda.to_device(X) for X in (Q, V, A))
    tau_cpu = model.inverse_dynamics(Q, V, A)

    def poisoned(shape, order='C'):
        return cuda.to_device(np.full(shape, np.nan, order=order))
    for order in ('C', 'F'):
        for method, args, shape, expected in (
                ('inverse_dynamics', (dQ, dV, dA), (N, n), tau_cpu),
                ('gravity_torque', (dQ,), (N, n), model.gravity_torque(Q)),
                ('bias_torque', (dQ, dV), (N, n), model.bias_torque(Q, V)),
                ('coriolis_vector', (dQ, dV), (N, n), model.coriolis_vector(Q, V)),
                ('mass_matrix', (dQ,), (N, n, n), model.mass_matrix(Q)),
                ('forward_dynamics', (dQ, dV, cuda.to_device(tau_cpu)), (N, n), A)):
            for check in (True, False):
                out = poisoned(shape, order)
                result = getattr(gpu, method)(*args, out=out, check=check)
                np.testing.assert_allclose(out.copy_to_host(), expected, rtol=0,
                                           atol=1e-10, err_msg=f'{method} {order} {check}')
                np.testing.assert_array_equal(result.copy_to_host(), out.copy_to_host())
    poses, com = poisoned((N, len(model.link_names), 4, 4)), poisoned((N, 3))
    gpu.link_poses(dQ, out=(poses, com))
    np.testing.assert_allclose(poses.copy_to_host(), model.link_poses(Q), rtol=0, atol=1e-12)
    np.testing.assert_allclose(com.copy_to_host(), model.center_of_mass(Q), rtol=0, atol=1e-12)
    for link in (model.link_names[-1], model.link_names[len(model.link_names) // 2]):
        for frame in ('world', 'local', 'local_world_aligned'):
            J = poisoned((N, 6, n))
            gpu.jacobian(dQ, link, (0.1, -0.2, 0.05), frame, out=J)
            np.testing.assert_allclose(J.copy_to_host(),
                                       model.jacobian(Q, link, (0.1, -0.2, 0.05), frame),
                                       rtol=0, atol=1e-12, err_msg=f'{link} {frame}')


def test_a_bad_out_is_named():
    model = RobotModel.from_urdf_file(robots_dir() / 'ur_description/urdf/ur5_robot.urdf')
    gpu = GpuModel(model)
    Q, V, A = _states(model, np.random.default_rng(14))
    dQ, dV, dA = (cuda.to_device(X) for X in (Q, V, A))
    N, n = Q.shape
    for out, message in (
            (np.zeros((N, n)), r'inverse_dynamics: out must be a CUDA array \(the results '
                               r'stay on the device\), got ndarray'),
            (cuda.device_array((N, n + 1)), r'out must have shape \(6, 6\), got \(6, 7\)'),
            (cuda.device_array((N, n), dtype=np.float32), 'out must be float64, got float32'),
            (dV, 'out overlaps qd in device memory'),
            (cuda.to_device(np.hstack([Q, Q]))[:, ::2], None)):
        if message is None:     # a view apart from the inputs is fine
            gpu.inverse_dynamics(dQ, dV, dA, out=out)
            np.testing.assert_allclose(out.copy_to_host(), model.inverse_dynamics(Q, V, A),
                                       rtol=0, atol=1e-10)
            continue
        with pytest.raises(ValueError, match=message):
            gpu.inverse_dynamics(dQ, dV, dA, out=out)
    # q in the first rows of an array (C-contiguous: its interface gives no strides), out in
    # the next ones but for one row in common
    stacked = cuda.to_device(np.vstack([Q, Q]))
    with pytest.raises(ValueError, match='out overlaps q in device memory'):
        gpu.inverse_dynamics(stacked[:N], dV, dA, out=stacked[N - 1:2 * N - 1])
    # an empty out has no element in common with anything
    assert gpu.inverse_dynamics(dQ[:0], dV[:0], dA[:0], out=dV[:0]).shape == (0, n)
    both = cuda.device_array((N, 4))
    with pytest.raises(ValueError, match='link_poses: out must be 2 CUDA arrays'):
        gpu.link_poses(dQ, out=both)
    poses = cuda.device_array((N, len(model.link_names), 4, 4))
    with pytest.raises(ValueError, match=r'link_poses: out\[1\] overlaps an earlier out'):
        gpu.link_poses(dQ, out=(poses, poses[:, 0, :3, 0]))
    with pytest.raises(ValueError, match=r'out\[1\] must have shape \(6, 3\)'):
        gpu.link_poses(dQ, out=(poses, both))


def test_the_transposed_layout_gives_outputs_in_the_same_layout():
    """Fortran-ordered (N, n) inputs: consecutive threads read consecutive addresses."""
    model = RobotModel.from_urdf_file(robots_dir() / 'ur_description/urdf/ur5_robot.urdf')
    gpu = GpuModel(model)
    Q, V, A = (np.asfortranarray(X) for X in _states(model, np.random.default_rng(8)))
    tau = gpu.inverse_dynamics(cuda.to_device(Q), cuda.to_device(V), cuda.to_device(A))
    M = gpu.mass_matrix(cuda.to_device(Q))
    for out in (tau, M):
        assert out.flags['F_CONTIGUOUS'] and not out.flags['C_CONTIGUOUS']
    np.testing.assert_allclose(tau.copy_to_host(), model.inverse_dynamics(Q, V, A), rtol=0,
                               atol=1e-10)
    np.testing.assert_allclose(M.copy_to_host(), model.mass_matrix(Q), rtol=0, atol=1e-12)
    assert gpu.gravity_torque(np.ascontiguousarray(Q)).flags['C_CONTIGUOUS']


@pytest.mark.parametrize('base', ['floating', 'planar'])
def test_a_root_joint_origin_moves_the_base_frame_as_on_the_cpu(base):
    """A world link joined by a tilted, offset floating or planar joint: gravity and poses."""
    from kron_dynamics.testing.random_urdf import random_urdf
    xml = model_helpers.with_world_joint(random_urdf(np.random.default_rng(14), 3, n_fixed=1),
                                         base, '0.1 0.2 0.3', '0.1 0.2 0.3')
    model = RobotModel.from_urdf_string(xml)
    assert model.base == base and not model._at_origin
    gpu = GpuModel(model)
    rng = np.random.default_rng(9)
    Q = np.stack([model.random_configuration(rng) for _ in range(4)])
    V, A = rng.uniform(-1, 1, (2, 4, model.nv))
    for method, args in (('inverse_dynamics', (Q, V, A)), ('gravity_torque', (Q,)),
                         ('mass_matrix', (Q,))):
        np.testing.assert_allclose(getattr(gpu, method)(*args).copy_to_host(),
                                   getattr(model, method)(*args), rtol=0, atol=1e-11)
    _kinematics_agree(model, gpu, Q)


# _derivatives_agree's checks in parts, each compiling only its own kernels, so that a large
# model's can be spread over pytest-xdist's workers where NVVM compiles them for a real GPU:
# the 19 kernels of TIAGo's (planar base, 51 velocities) took 633 s for sm_90 on one core of
# this machine (dM/dq's alone 195 s); a lent machine under load compiled 1.75-2 times as slowly.
DERIVATIVE_PARTS = ('solves', 'dMdq', 'coriolis', 'rest', 'links')


def _derivatives_agree(model, rng, parts=DERIVATIVE_PARTS, N=4):
    """
    Check the derivatives of CUDA arrays (the facade's route) against the CPU's, by row.

    Inverse dynamics, dM/dq, dG/dq, the energies and the last link's Hessian to RTOL;
    forward dynamics (-M^-1 dtau/dx at q'', M^-1) within 1e-14 cond(M) + RTOL per row, as
    forward_dynamics itself (_agree). ``parts`` (of DERIVATIVE_PARTS) chooses which; every
    part draws the same states from ``rng``.
    """
    assert parts and set(parts) <= set(DERIVATIVE_PARTS), parts
    Q = np.stack([model.random_configuration(rng) for _ in range(N)])
    V, A = rng.uniform(-2, 2, (2, N, model.nv))
    dQ, dV, dA = cuda.to_device(Q), cuda.to_device(V), cuda.to_device(A)
    rtol = np.full(N, RTOL)
    if 'solves' in parts:
        tau = model.inverse_dynamics(Q, V, A)
        cond = np.array([np.linalg.cond(M) for M in model.mass_matrix(Q)])
        for method, args, names, bound in (
                ('inverse_dynamics_derivatives', (Q, V, A), ('dtau/dq', "dtau/dq'", 'M'),
                 rtol),
                ('forward_dynamics_derivatives', (Q, V, tau), ("dq''/dq", "dq''/dq'", 'M^-1'),
                 1e-14 * cond + RTOL)):
            ours = getattr(model, method)(*(cuda.to_device(X) for X in args))
            cpu = getattr(model, method)(*args)
            assert len(ours) == 3
            _same_rows(model, zip(names, ours, cpu), bound)
    # dM/dq (forward mode over the CRBA); C*, the Christoffel symbols and C; dG/dq, the
    # energies and the rest: to RTOL of each row's largest
    if 'dMdq' in parts:
        _same_rows(model, [('dM/dq', model.mass_matrix_derivative(dQ),
                            model.mass_matrix_derivative(Q))], rtol)
    if 'coriolis' in parts:
        _same_rows(model, [('C*', model.coriolis_star(dQ), model.coriolis_star(Q)),
                           ('Christoffel', model.christoffel(dQ), model.christoffel(Q)),
                           ('C', model.coriolis_matrix(dQ, dV), model.coriolis_matrix(Q, V))],
                   rtol)
    if 'rest' in parts:
        _same_rows(model, [('dG/dq', model.gravity_derivative(dQ),
                            model.gravity_derivative(Q)),
                           ('kinetic energy', model.kinetic_energy(dQ, dV),
                            model.kinetic_energy(Q, V)),
                           ('potential energy', model.potential_energy(dQ),
                            model.potential_energy(Q)),
                           ('regressor', model.regressor(dQ, dV, dA), model.regressor(Q, V, A)),
                           ('integrate', model.integrate(dQ, dV, 0.3),
                            model.integrate(Q, V, 0.3)),
                           ('A_G', model.centroidal_momentum_matrix(dQ),
                            model.centroidal_momentum_matrix(Q)),
                           ('J_c', model.center_of_mass_jacobian(dQ),
                            model.center_of_mass_jacobian(Q)),
                           ('a link pose', model.link_pose(dQ, model.link_names[-1]),
                            model.link_pose(Q, model.link_names[-1]))],
                   rtol)
    if 'links' not in parts:
        return
    # a link's Hessian (forward mode over its Jacobian kernel, nv directions) and its rates
    # (one direction, along q'), every frame, with a point; the classical acceleration
    link = model.link_names[-1]
    for frame in ('local_world_aligned', 'world', 'local'):
        for point in (None, (0.1, -0.2, 0.05)):
            _same_rows(model, [(f'hessian {frame} {point}',
                                model.hessian(dQ, link, point=point, frame=frame),
                                model.hessian(Q, link, point=point, frame=frame)),
                               (f"J' {frame} {point}",
                                model.jacobian_derivative(dQ, dV, link, point, frame),
                                model.jacobian_derivative(Q, V, link, point, frame)),
                               (f"J' q' {frame} {point}",
                                model.jacobian_derivative_times_velocity(dQ, dV, link, point,
                                                                         frame),
                                model.jacobian_derivative_times_velocity(Q, V, link, point,
                                                                         frame))]
                       + ([] if frame == 'world' else
                          [(f'acceleration {frame} {point}',
                            model.acceleration(dQ, dV, dA, link, point, frame),
                            model.acceleration(Q, V, A, link, point, frame))]),
                       rtol)


def _same_rows(model, results, bound):
    """Assert device results equal the CPU's row by row, relative to each row's largest."""
    for name, x, y in results:
        assert not isinstance(x, np.ndarray)         # stays on the device
        x = x.copy_to_host()
        assert x.shape == y.shape
        for k in range(len(y)):
            scale = max(1.0, float(np.max(np.abs(y[k]), initial=0.0)))
            error = float(np.max(np.abs(x[k] - y[k]), initial=0.0)) / scale
            assert error <= bound[k], (f'{model.name}: {name} row {k} differs from the CPU '
                                       f'by {error:.3g} > {bound[k]:.3g}')


@pytest.mark.parametrize('seed', range(3))
def test_derivatives_of_random_trees_equal_the_cpu(seed):
    """Forward mode over the generated row against the CPU recursion (Carpentier-Mansard)."""
    model, rng = model_helpers.random_model(200 + seed, min_joints=5, armature=True,
                                            mimic_fraction=0.4 if seed else 0.0)
    Q = np.stack([model.random_configuration(rng) for _ in range(2)])
    assert np.max(np.abs(model.mass_matrix_derivative(Q))) > 1e-3      # something to check
    _derivatives_agree(model, rng)


@pytest.mark.parametrize('part', DERIVATIVE_PARTS)
@pytest.mark.parametrize('path, root', [('ur_description/urdf/ur5_robot.urdf', 'fixed'),
                                        ('panda_description/urdf/panda.urdf', 'fixed'),
                                        ('panda_description/urdf/panda.urdf', 'floating'),
                                        ('solo_description/robots/solo12.urdf', 'floating'),
                                        ('tiago_description/robots/tiago.urdf', 'planar')])
def test_derivatives_of_real_robots_equal_the_cpu(path, root, part):
    """Fixed, mimic (the Panda's finger), floating and planar bases: q's tangent directions."""
    model = RobotModel.from_urdf_file(robots_dir() / path, root_joint=root)
    _derivatives_agree(model, np.random.default_rng(4), (part,))


@pytest.mark.parametrize('part', DERIVATIVE_PARTS)
@pytest.mark.parametrize('base', ['floating', 'planar'])
def test_derivatives_under_a_tilted_root_joint(base, part):
    """Gravity turns with the base in every direction: the base columns are not zero."""
    from kron_dynamics.testing.random_urdf import random_urdf
    xml = model_helpers.with_world_joint(random_urdf(np.random.default_rng(15), 3),
                                         base, '0.1 0.2 0.3', '0.4 -0.3 0.2')
    model = RobotModel.from_urdf_string(xml)
    rng = np.random.default_rng(2)
    q = model.random_configuration(rng)
    dq = model.inverse_dynamics_derivatives(q, np.zeros(model.nv), np.zeros(model.nv))[0]
    turn = range(3, 6) if base == 'floating' else range(2, 3)
    assert np.all(np.max(np.abs(dq[:, list(turn)]), axis=0) > 1e-3)
    _derivatives_agree(model, rng, (part,))


def test_inverse_dynamics_derivatives_report_rows_and_take_out():
    """A non-finite row is named and NaN; out= takes three arrays and nothing is allocated."""
    model = RobotModel.from_urdf_file(robots_dir() / 'ur_description/urdf/ur5_robot.urdf')
    gpu = GpuModel(model)
    rng = np.random.default_rng(3)
    Q, V, A = _states(model, rng, N=3)
    V[1, 2] = np.inf
    with pytest.raises(ValueError, match=r'inverse_dynamics_derivatives: rows \[1\] have a '
                                         'non-finite input'):
        gpu.inverse_dynamics_derivatives(Q, V, A)
    with pytest.raises(ValueError, match=r'kinetic_energy: rows \[1\] have a non-finite'):
        gpu.kinetic_energy(Q, V)
    link = model.link_names[-1]
    with pytest.raises(ValueError, match=r'jacobian_derivative: rows \[1\] have a non-fin'):
        gpu.jacobian_derivative(Q, V, link)
    V[1, 2], A[2, 0] = 0.0, np.nan
    with pytest.raises(ValueError, match=r'acceleration: rows \[2\] have a non-finite'):
        gpu.acceleration(Q, V, A, link, frame='local')
    A[2, 0], V[1, 2] = 0.0, np.inf
    out = tuple(cuda.to_device(np.full((3, 6, 6), np.nan)) for _ in range(3))
    result = gpu.inverse_dynamics_derivatives(Q, V, A, check=False, out=out)
    assert all(x is y for x, y in zip(result, out))
    assert np.isnan(out[0].copy_to_host()[1]).all() and np.isnan(out[1].copy_to_host()[1]).all()
    good = [0, 2]
    for x, y in zip(out, model.inverse_dynamics_derivatives(Q[good], V[good], A[good])):
        np.testing.assert_allclose(x.copy_to_host()[good], y, rtol=0,
                                   atol=RTOL * max(1.0, float(np.max(np.abs(y)))))
    assert 'rnea_derivatives' in gpu.compile_seconds
    with pytest.raises(ValueError, match='out must be 3 CUDA arrays'):
        gpu.inverse_dynamics_derivatives(Q, V, A, out=out[:2])


def _wrenched_batch(kind, N):
    """
    Return (model, rng, Q, V, A, f_ext, on_device) of a one-model case with two wrenches.

    f_ext (host): one link's (N, 6), another's 6 numbers for every row; on_device: the
    same wrenches as a CUDA array (N, 6) and a host (N, 6); rng for more.
    """
    model, _ = build_case(kind)
    links = ONE_MODEL_CASES[kind][2]
    other = links[-1] if len(links) > 1 else 'torso_lift_link'
    rng = np.random.default_rng(31)
    Q = np.stack([model.random_configuration(rng) for _ in range(N)])
    V, A = rng.uniform(-2, 2, (2, N, model.nv))
    f_ext = {links[0]: rng.uniform(-5, 5, (N, 6)), other: rng.uniform(-5, 5, 6)}
    on_device = {links[0]: cuda.to_device(f_ext[links[0]]),
                 other: np.broadcast_to(f_ext[other], (N, 6)).copy()}
    return model, rng, Q, V, A, f_ext, on_device


@pytest.mark.parametrize('kind', sorted(ONE_MODEL_CASES))
def test_external_wrenches_on_the_gpu_equal_the_cpu_batch(kind):
    """
    f_ext with CUDA arrays: inverse and forward dynamics and simulate as the CPU batch.

    Wrenches from the host (6 numbers or N x 6, the CPU's checks and messages) or CUDA
    arrays (N, 6), whose non-finite rows are reported after the call; fixed, mimic,
    floating and planar models.
    """
    N = 4
    model, rng, Q, V, A, f_ext, on_device = _wrenched_batch(kind, N)
    link = next(iter(f_ext))
    dQ, dV, dA = (cuda.to_device(X) for X in (Q, V, A))
    cpu = model.inverse_dynamics(Q, V, A, f_ext=f_ext)
    ours = model.inverse_dynamics(dQ, dV, dA, f_ext=f_ext)
    assert not isinstance(ours, np.ndarray)
    scale = max(1.0, float(np.max(np.abs(cpu))))
    assert np.max(np.abs(ours.copy_to_host() - cpu)) <= RTOL * scale
    assert np.max(np.abs(cpu - model.inverse_dynamics(Q, V, A))) > 1e-3, 'the wrenches act'
    qdd = model.forward_dynamics(dQ, dV, cuda.to_device(cpu), f_ext=on_device).copy_to_host()
    M = model.mass_matrix(Q)
    residual = model.inverse_dynamics(Q, V, qdd, f_ext=f_ext) - cpu
    assert np.max(np.abs(residual)) <= RTOL * scale, 'M q\'\' + h - sum J^T F = tau'
    for k in range(N):
        bound = 1e-14 * np.linalg.cond(M[k]) + RTOL
        assert np.max(np.abs(qdd[k] - A[k])) / max(1.0, np.max(np.abs(A[k]))) <= bound, k
    plain = model.inverse_dynamics(dQ, dV, dA, f_ext={}).copy_to_host()
    assert np.max(np.abs(plain - model.inverse_dynamics(Q, V, A))) <= RTOL * scale
    bad = f_ext[link].copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match=r'^inverse_dynamics: rows \[1\] have a non-finite '
                                         r'input \(their results are NaN\)'):
        model.inverse_dynamics(dQ, dV, dA, f_ext={link: cuda.to_device(bad)})
    nan_row = model.on_gpu().inverse_dynamics(dQ, dV, dA, check=False,
                                              f_ext={link: cuda.to_device(bad)})
    assert np.isnan(nan_row.copy_to_host()[1]).all()
    assert not np.isnan(nan_row.copy_to_host()[[0, 2, 3]]).any()
    with pytest.raises(ValueError, match=r"f_ext\['%s'\] is not finite at batch row\(s\) "
                                         r'\[1\]' % link):
        model.forward_dynamics(dQ, dV, dA, f_ext={link: bad})
    with pytest.raises(ValueError, match=r"^inverse_dynamics: f_ext\['%s'\] on the device must "
                                         r'be a \(4, 6\) float64 array' % link):
        model.inverse_dynamics(dQ, dV, dA, f_ext={link: cuda.to_device(bad[:3])})
    with pytest.raises(ModelError, match="unknown link 'no_such_link'"):
        model.forward_dynamics(dQ, dV, dA, f_ext={'no_such_link': cuda.to_device(bad)})
    with pytest.raises(ValueError, match=r'^f_ext must map link names to 6-vectors'):
        model.inverse_dynamics(dQ, dV, dA, f_ext=np.zeros(6))
    tau = rng.uniform(-1, 1, (N, model.nv))
    tau[:, :model.nv - model.n] = 0.0
    X, W = model.simulate(dQ, dV, cuda.to_device(tau), 1e-3, 3, f_ext=on_device)
    cq, cv = model.simulate(Q, V, tau, 1e-3, 3, f_ext=f_ext)
    for got, want in ((X, cq), (W, cv)):
        assert np.max(np.abs(got.copy_to_host() - want)) <= RTOL * max(1.0, np.abs(want).max())
    assert np.abs(cv - model.simulate(Q, V, tau, 1e-3, 3)[1]).max() > 1e-4, 'the wrenches act'
    with pytest.raises(ValueError, match=r'^simulate: rows \[1\] have a non-finite input'):
        model.simulate(dQ, dV, cuda.to_device(tau), 1e-3, 1,
                       f_ext={link: cuda.to_device(bad)})
    if kind == 'fixed arm':         # single precision: the wrench's terms to 2e-6 as well
        single = GpuModel(model, dtype=np.float32)
        got = single.inverse_dynamics(*(X.astype(np.float32) for X in (Q, V, A)),
                                      f_ext=f_ext).copy_to_host()
        assert got.dtype == np.float32 and np.max(np.abs(got - cpu)) <= 2e-6 * scale


@pytest.mark.slow    # seconds on the simulator: in make test, not make check
@pytest.mark.parametrize('kind', sorted(ONE_MODEL_CASES))
def test_external_wrenches_in_the_derivatives_and_contacts_on_the_gpu_equal_the_cpu(kind):
    """
    f_ext with CUDA arrays in the derivatives, linearize and the contact methods.

    The wrenches' sum J^T F enters as in inverse and forward dynamics, and its derivative
    -sum F H (each link's Hessian kernel) enters dtau/dq before the solves: the CPU batch's
    results, free and in contact (ONE_MODEL_CONTACTS), on every base; a device wrench's
    non-finite row is named under the method, a host one's by the CPU's check.
    """
    N = 3
    model, rng, Q, V, A, f_ext, on_device = _wrenched_batch(kind, N)
    contacts = ONE_MODEL_CONTACTS[kind]
    T = rng.uniform(-2, 2, (N, model.n))
    full = np.concatenate([np.zeros((N, model.nv - model.n)), T], axis=1)
    dQ, dV, dA, dT, dF = (cuda.to_device(X) for X in (Q, V, A, T, full))
    M, J = model.mass_matrix(Q), model.contact_jacobian(Q, contacts)
    solved = [1e-14 * np.linalg.cond(M[k]) + RTOL for k in range(N)]
    in_contact = [1e-14 * np.linalg.cond(M[k]) * max(1.0, np.linalg.cond(
        J[k] @ np.linalg.solve(M[k], J[k].T))) + RTOL for k in range(N)]

    def agree(name, got, cpu, bound):
        _same_rows(model, [(f'{name}[{i}]', x, y) for i, (x, y) in enumerate(zip(got, cpu))],
                   bound)
    cpu = model.inverse_dynamics_derivatives(Q, V, A, f_ext=f_ext)
    assert np.abs(cpu[0] - model.inverse_dynamics_derivatives(Q, V, A)[0]).max() > 1e-3
    agree('inverse_dynamics_derivatives',
          model.inverse_dynamics_derivatives(dQ, dV, dA, f_ext=on_device), cpu, [RTOL] * N)
    agree('forward_dynamics_derivatives',
          model.forward_dynamics_derivatives(dQ, dV, dF, f_ext=on_device),
          model.forward_dynamics_derivatives(Q, V, full, f_ext=f_ext), solved)
    for dt in (None, 0.01):
        agree(f'linearize dt={dt}', model.linearize(dQ, dV, dF, dt, f_ext=on_device),
              model.linearize(Q, V, full, dt, f_ext=f_ext), solved)
    cpu = model.constrained_forward_dynamics(Q, V, T, contacts, f_ext=f_ext)
    assert np.abs(cpu[0] - model.constrained_forward_dynamics(Q, V, T, contacts)[0]).max() > 1e-3
    agree('constrained_forward_dynamics',
          model.constrained_forward_dynamics(dQ, dV, dT, contacts, f_ext=on_device), cpu,
          in_contact)
    agree('contact_inverse_dynamics',
          model.contact_inverse_dynamics(dQ, dV, cuda.to_device(cpu[0]), contacts,
                                         f_ext=on_device),
          model.contact_inverse_dynamics(Q, V, cpu[0], contacts, f_ext=f_ext), in_contact)
    agree('constrained_forward_dynamics_derivatives',
          model.constrained_forward_dynamics_derivatives(dQ, dV, dT, contacts, f_ext=on_device),
          model.constrained_forward_dynamics_derivatives(Q, V, T, contacts, f_ext=f_ext),
          in_contact)
    agree('linearize in contact', model.linearize(dQ, dV, dT, 0.01, contacts, f_ext=on_device),
          model.linearize(Q, V, T, 0.01, contacts, f_ext=f_ext), in_contact)
    link = next(iter(f_ext))
    bad = f_ext[link].copy()
    bad[1, 2] = np.inf
    for method, arrays in ((model.inverse_dynamics_derivatives, (dQ, dV, dA)),
                           (model.forward_dynamics_derivatives, (dQ, dV, dF)),
                           (model.linearize, (dQ, dV, dF))):
        with pytest.raises(ValueError, match=rf'^{method.__name__}: rows \[1\] have a '
                                             'non-finite input'):
            method(*arrays, f_ext={link: cuda.to_device(bad)})
    for method, arrays in ((model.constrained_forward_dynamics, (dQ, dV, dT)),
                           (model.contact_inverse_dynamics, (dQ, dV, dA)),
                           (model.constrained_forward_dynamics_derivatives, (dQ, dV, dT))):
        with pytest.raises(ValueError, match=rf'^{method.__name__}: rows \[1\] have a '
                                             'non-finite input'):
            method(*arrays, contacts, f_ext={link: cuda.to_device(bad)})
        with pytest.raises(ValueError, match=r"f_ext\['%s'\] is not finite at batch row\(s\) "
                                             r'\[1\]' % link):
            method(*arrays, contacts, f_ext={link: bad})


def test_a_model_without_movable_joints():
    """Nothing to compute on a fixed base; a floating one is the base body alone."""
    xml = ('<robot name="block"><link name="b"><inertial><mass value="2"/>'
           '<inertia ixx="1" iyy="2" izz="3" ixy="0" ixz="0" iyz="0"/></inertial></link>'
           '</robot>')
    fixed = RobotModel.from_urdf_string(xml)
    assert GpuModel(fixed).gravity_torque(np.zeros((3, 0))).shape == (3, 0)
    for x in GpuModel(fixed).forward_dynamics_derivatives(*np.zeros((3, 3, 0))):
        assert x.copy_to_host().shape == (3, 0, 0)
    assert (GpuModel(fixed).kinetic_energy(*np.zeros((2, 3, 0))).copy_to_host() == 0).all()
    assert (GpuModel(fixed).potential_energy(np.zeros((3, 0))).copy_to_host() == 0).all()
    for method in ('center_of_mass_jacobian', 'centroidal_momentum_matrix'):
        with pytest.raises(ValueError, match='have no mass'):      # nothing moves
            getattr(GpuModel(fixed), method)(np.zeros((3, 0)))
    body = RobotModel.from_urdf_string(xml, root_joint='floating')
    gpu = GpuModel(body)
    Q = np.stack([body.random_configuration(np.random.default_rng(k)) for k in range(3)])
    V, A = np.random.default_rng(10).uniform(-1, 1, (2, 3, 6))
    np.testing.assert_allclose(gpu.inverse_dynamics(Q, V, A).copy_to_host(),
                               body.inverse_dynamics(Q, V, A), rtol=0, atol=1e-12)
    np.testing.assert_allclose(gpu.mass_matrix(Q).copy_to_host(), body.mass_matrix(Q),
                               rtol=0, atol=1e-12)
    _derivatives_agree(body, np.random.default_rng(11))


@pytest.mark.parametrize('path, root, link', [
    ('ur_description/urdf/ur5_robot.urdf', 'fixed', 'wrist_3_link'),
    ('panda_description/urdf/panda.urdf', 'fixed', 'panda_hand'),          # a mimic finger
    ('solo_description/robots/solo12.urdf', 'floating', 'FL_FOOT'),
    ('tiago_description/robots/tiago.urdf', 'planar', 'arm_7_link'),
    (None, 'fixed', None)])
def test_operational_space_inertia_equals_the_cpu_and_names_singular_rows(path, root, link):
    """
    Lambda = (J M^-1 J^T + d^2 E)^-1 per row as the CPU's, every part, damped or not, a point.

    Within 1e-14 cond(Lambda) + RTOL of each row (an inverse: its rounding grows with the
    condition number); a row the CPU refuses as singular (cond > 1e8) is named, and NaN.
    """
    from kron_dynamics.algorithms.operational_space import RCOND
    from kron_dynamics.gpu import TASK_RCOND
    assert TASK_RCOND == RCOND
    if path is None:                    # a random tree with mimic joints, its deepest link
        model, rng = model_helpers.random_model(208, min_joints=6, armature=True,
                                                mimic_fraction=0.3)
        link = model.link_names[-1]
    else:
        model = RobotModel.from_urdf_file(robots_dir() / path, root_joint=root)
        rng = np.random.default_rng(8)
    Q = np.stack([model.random_configuration(rng) for _ in range(4)])
    dQ = cuda.to_device(Q)
    compared = 0
    for part in ('full', 'linear', 'angular'):
        for damping, point in ((0.0, None), (0.3, (0.05, -0.1, 0.2))):
            try:
                cpu = model.operational_space_inertia(Q, link, point, part=part,
                                                      damping=damping)
            except SingularJacobianError:       # then the GPU names the rows too
                with pytest.raises(SingularJacobianError, match='operational_space_inertia: '
                                   r'rows \[.*\] have a singular J M\^-1 J\^T'):
                    model.operational_space_inertia(dQ, link, point, part=part,
                                                    damping=damping)
                continue
            cond = np.array([np.linalg.cond(x) for x in cpu])
            _same_rows(model, [(f'Lambda {part} {damping}',
                                model.operational_space_inertia(dQ, link, point, part=part,
                                                                damping=damping), cpu)],
                       1e-14 * cond + RTOL)
            compared += 1
    assert compared >= 4            # the damped ones and an undamped one at least
    with pytest.raises(ValueError, match=r"part must be one of \['full', 'linear', 'angular'\]"):
        model.on_gpu().operational_space_inertia(Q, link, part='upper')
    with pytest.raises(ValueError, match='damping must be a finite number >= 0'):
        model.operational_space_inertia(dQ, link, damping=-1.0)
    Q[2, -1] = np.nan                   # named under the method called, not its kernels'
    with pytest.raises(ValueError, match=r'operational_space_inertia: rows \[2\] have a '
                                         'non-finite input'):
        model.operational_space_inertia(cuda.to_device(Q), link, damping=0.3)


@pytest.mark.parametrize('path, root', [('ur_description/urdf/ur5_robot.urdf', 'fixed'),
                                        ('panda_description/urdf/panda.urdf', 'fixed'),
                                        ('panda_description/urdf/panda.urdf', 'floating'),
                                        ('solo_description/robots/solo12.urdf', 'floating'),
                                        ('tiago_description/robots/tiago.urdf', 'planar'),
                                        (None, 'fixed')])
def test_simulate_equals_the_cpu_on_every_base(path, root):
    """
    RK4 (a moving base's Munthe-Kaas) on CUDA arrays as on the CPU, damped, 0 to 3 steps.

    Within 1e-13 cond(M) + RTOL of each row (forward dynamics' rounding, four stages a step);
    the inputs are left as they were; a refused row is named under simulate.
    """
    if path is None:                    # a random tree with mimic joints (the coupled model)
        model, rng = model_helpers.random_model(201, min_joints=5, armature=True,
                                                mimic_fraction=0.4)
    else:
        model = RobotModel.from_urdf_file(robots_dir() / path, root_joint=root)
        rng = np.random.default_rng(9)
    N = 3
    Q = np.stack([model.random_configuration(rng) for _ in range(N)])
    V, T = rng.uniform(-1, 1, (2, N, model.nv))
    joints = len(model.velocity_names) - {'fixed': 0, 'planar': 3, 'floating': 6}[model.base]
    damping = rng.uniform(0.0, 0.02, joints)
    cond = np.array([np.linalg.cond(M) for M in model.mass_matrix(Q)])
    dQ, dV, dT = (cuda.to_device(X) for X in (Q, V, T))
    for steps in (0, 1, 3):
        q, v = model.simulate(Q, V, T, 2e-3, steps, damping)
        gq, gv = model.simulate(dQ, dV, dT, 2e-3, steps, damping)
        assert gq is not dQ and gv is not dV
        _same_rows(model, [(f'q after {steps} steps', gq, q), (f"q' after {steps} steps", gv, v)],
                   1e-13 * cond + RTOL)
    np.testing.assert_array_equal(dQ.copy_to_host(), Q)            # inputs kept
    np.testing.assert_array_equal(dV.copy_to_host(), V)
    T[1, 0] = np.inf
    with pytest.raises(ValueError, match=r'simulate: rows \[1\] have a non-finite input'):
        model.simulate(dQ, dV, cuda.to_device(T), 2e-3, 2)
    with pytest.raises(ValueError, match=f'simulate: damping must be {joints} finite numbers'):
        model.simulate(dQ, dV, dT, 2e-3, 1, np.zeros(joints + 1))
    with pytest.raises(ValueError, match='dt must be finite and > 0'):
        model.simulate(dQ, dV, dT, 0.0)


@pytest.mark.parametrize('root', ['floating', 'planar'])
def test_simulate_a_fast_spinning_body_as_the_cpu(root):
    """A lone body turning at 5 rad/s, 50 ms steps: dexp^-1's terms of every order count."""
    xml = ('<robot name="block"><link name="b"><inertial><mass value="2"/>'
           '<inertia ixx="1" iyy="2" izz="3" ixy="0.1" ixz="0" iyz="0.2"/></inertial>'
           '</link></robot>')
    body = RobotModel.from_urdf_string(xml, root_joint=root)
    rng = np.random.default_rng(13)
    Q = np.stack([body.random_configuration(rng) for _ in range(3)])
    V = rng.uniform(-5, 5, (3, body.nv))
    T = rng.uniform(-1, 1, (3, body.nv))
    q, v = body.simulate(Q, V, T, 0.05, 3)
    gq, gv = body.simulate(*(cuda.to_device(X) for X in (Q, V, T)), 0.05, 3)
    _same_rows(body, [('q', gq, q), ("q'", gv, v)], np.full(3, RTOL))


def test_operational_space_inertia_refuses_the_rows_the_cpu_refuses():
    """
    The UR5's elbow straightened among good rows: cond(J M^-1 J^T) across 1e8, by eigenvalues.

    At elbow angles e the smallest eigenvalue is about 2.3e-3 e^2 of the largest: e = 0 is
    singular, 1e-3 rad is refused with a positive smallest eigenvalue (a refusal by the
    diagonal, or by the sign alone, would take it), 1e-2 rad is kept (cond 4e6).
    """
    from kron_dynamics.algorithms.operational_space import RCOND
    model = RobotModel.from_urdf_file(robots_dir() / 'ur_description/urdf/ur5_robot.urdf')
    rng = np.random.default_rng(5)
    Q = np.stack([model.random_configuration(rng) for _ in range(5)])
    for k, elbow in ((1, 0.0), (2, 1e-3), (3, 1e-2)):
        Q[k] = [0.3, -1.0, elbow, -0.5, 0.7, 0.2]
    link, point = 'wrist_3_link', (0.1, 0.2, 0.3)
    refused, smallest = [], []
    for k, q in enumerate(Q):
        J, M = model.jacobian(q, link, point), model.mass_matrix(q)
        ev = np.linalg.eigvalsh(J @ np.linalg.solve(M, J.T))
        smallest.append(ev[0] / ev[-1])
        try:
            model.operational_space_inertia(q, link, point)
        except SingularJacobianError:
            refused.append(k)
    assert refused == [1, 2] and 0.0 < smallest[2] <= RCOND < smallest[3] < 1e-6, smallest
    with pytest.raises(SingularJacobianError, match=r'operational_space_inertia: rows \[1, 2\] '
                                                    r'have a singular J M\^-1 J\^T'):
        model.operational_space_inertia(cuda.to_device(Q), link, point)
    got = model.on_gpu().operational_space_inertia(Q, link, point, check=False).copy_to_host()
    assert np.isnan(got[refused]).all()
    for k in (0, 3, 4):
        cpu = model.operational_space_inertia(Q[k], link, point)
        bound = (1e-14 * np.linalg.cond(cpu) + RTOL) * max(1.0, np.abs(cpu).max())
        assert np.abs(got[k] - cpu).max() <= bound, k


@pytest.mark.parametrize('path, root', [('ur_description/urdf/ur5_robot.urdf', 'fixed'),
                                        ('panda_description/urdf/panda.urdf', 'fixed'),
                                        ('solo_description/robots/solo12.urdf', 'floating')])
def test_a_method_without_a_gpu_path_refuses_cuda_arrays_by_name(path, root):
    """No silent copy to the host: the CPU-only methods say what to do."""
    model = RobotModel.from_urdf_file(robots_dir() / path, root_joint=root)
    Q = np.stack([model.neutral()] * 2)
    V = np.zeros((2, model.nv))
    dQ, dV = cuda.to_device(Q), cuda.to_device(V)
    link = model.link_names[-1]
    with pytest.raises(ValueError, match='is a CUDA array, and this method runs on the CPU'):
        model.full_configuration(dQ)
    if root == 'fixed':
        with pytest.raises(ValueError, match="is a CUDA array|method 'hessian' runs on the CPU"):
            model.coriolis_star(dQ, method='hessian')
    with pytest.raises(ValueError, match="acceleration: frame 'world' has no classical"):
        model.acceleration(dQ, dV, dV, link, frame='world')


@pytest.mark.parametrize('path, root', [('solo_description/robots/solo12.urdf', 'floating'),
                                        ('tiago_description/robots/tiago.urdf', 'planar')])
def test_integrate_on_both_sides_of_the_series_threshold(path, root):
    """Integrate q (+) v dt and difference as the CPU does: turns of 0, below 1e-6 rad, more."""
    model = RobotModel.from_urdf_file(robots_dir() / path, root_joint=root)
    rng = np.random.default_rng(21)
    turn = slice(3, 6) if root == 'floating' else slice(2, 3)
    Q = np.stack([model.random_configuration(rng) for _ in range(5)])
    V = rng.uniform(-2, 2, (5, model.nv))
    for k, size in enumerate((0.0, 1e-9, 5e-7, 2e-6, 1.0)):
        V[k, turn] *= size
    _same_rows(model, [('integrate', model.integrate(cuda.to_device(Q), cuda.to_device(V), 0.5),
                        model.integrate(Q, V, 0.5))], np.full(5, RTOL))
    # difference, its inverse: back to V dt, across the same threshold (and a larger turn)
    Q1 = model.integrate(Q, V, 0.5)
    V[4, turn] *= 1.4 if root == 'floating' else 2.9
    Q1[4] = model.integrate(Q[4], V[4], 0.5)
    _same_rows(model, [('difference', model.difference(cuda.to_device(Q), cuda.to_device(Q1)),
                        model.difference(Q, Q1))], np.full(5, RTOL))
    Q[2, -1], V[3, turn.start] = np.nan, np.inf
    with pytest.raises(ValueError, match=r'integrate: rows \[2, 3\] have a non-finite input'):
        model.on_gpu().integrate(Q, V)
    with pytest.raises(ValueError, match=r'difference: rows \[2\] have a non-finite input'):
        model.on_gpu().difference(Q, Q1)
    Q1[1, turn.start + 1] += 0.1        # a quaternion or (cos, sin) off unit length
    Q1[0, slice(3, 7) if root == 'floating' else slice(2, 4)] = 0.0            # or zero
    with pytest.raises(ValueError, match=r'difference: rows \[0, 1\] have a base orient'):
        model.on_gpu().difference(Q[:2], Q1[:2])
    with pytest.raises(ValueError, match=r'integrate: rows \[0\] have a base orientation'):
        model.on_gpu().integrate(Q1[:1], V[:1])


def _contacts_agree(model, contacts, Q, V, T):
    """
    Assert the contact methods on CUDA arrays equal the CPU's, row by row.

    J_c to RTOL; (v', lambda) within 1e-14 cond(M) cond(A) (A = J_c M^-1 J_c^T) of the CPU's
    and M v' + h = S^T tau + J_c^T lambda, J_c v' + gamma = 0 to RTOL (the residuals); tau
    given as the joints' (N, n) and as all nv forces alike; (tau, lambda) of
    contact_inverse_dynamics at the CPU's v'. Rows the CPU refuses are refused (NaN).
    """
    N, nb = len(Q), model.nv - model.n
    dQ, dV = cuda.to_device(Q), cuda.to_device(V)
    J = model.contact_jacobian(Q, contacts)
    _same_rows(model, [('contact_jacobian', model.contact_jacobian(dQ, contacts), J)],
               np.full(N, RTOL))
    gpu = model.on_gpu()
    full = np.concatenate([np.zeros((N, nb)), T], axis=1)
    both = [gpu.constrained_forward_dynamics(Q, V, tau, contacts, check=False)
            for tau in (T, full)]
    dv, lam = (x.copy_to_host() for x in both[0])
    np.testing.assert_array_equal(dv, both[1][0].copy_to_host())
    refused = []
    for k in range(N):
        try:
            cpu_dv, cpu_lam = model.constrained_forward_dynamics(Q[k], V[k], T[k], contacts)
        except SingularJacobianError:
            refused.append(k)
            assert np.isnan(dv[k]).all() and np.isnan(lam[k]).all(), k
            continue
        M = model.mass_matrix(Q[k])
        A = J[k] @ np.linalg.solve(M, J[k].T)
        bound = 1e-14 * np.linalg.cond(M) * max(1.0, np.linalg.cond(A)) + RTOL
        for name, x, y in (('dv', dv[k], cpu_dv), ('lambda', lam[k], cpu_lam)):
            error = np.max(np.abs(x - y), initial=0.0) / max(1.0, np.max(np.abs(y), initial=0))
            assert error <= bound, f'{model.name} row {k}: {name} {error:.3g} > {bound:.3g}'
        # the residuals, relative to the sizes of the terms summed
        h = model.bias_torque(Q[k], V[k])
        residual = M @ dv[k] + h - full[k] - J[k].T @ lam[k]
        size = np.abs(M) @ np.abs(dv[k]) + np.abs(h) + np.abs(J[k].T) @ np.abs(lam[k])
        assert np.max(np.abs(residual)) <= RTOL * max(1.0, np.max(size))
        _, gamma = model._contact_terms(Q[k], V[k], contacts)
        size = np.abs(J[k]) @ np.abs(dv[k]) + np.abs(gamma)
        assert np.max(np.abs(J[k] @ dv[k] + gamma), initial=0.0) <= RTOL * max(
            1.0, np.max(size, initial=0.0))
    if refused:
        with pytest.raises(SingularJacobianError, match=fr'constrained_forward_dynamics: rows '
                                                        fr'{re.escape(str(refused))} have'):
            model.constrained_forward_dynamics(dQ, dV, cuda.to_device(T), contacts)
    kept = [k for k in range(N) if k not in refused]
    DV = np.stack([model.constrained_forward_dynamics(Q[k], V[k], T[k], contacts)[0]
                   for k in kept]) if kept else np.zeros((0, model.nv))
    tau, lam = model.contact_inverse_dynamics(cuda.to_device(Q[kept]), cuda.to_device(V[kept]),
                                              cuda.to_device(DV), contacts)
    cpu = model.contact_inverse_dynamics(Q[kept], V[kept], DV, contacts)
    scale = np.full(len(kept), 1e-14 * max(1.0, np.linalg.cond(J[kept[0]]) if kept else 1))
    _same_rows(model, [('contact_inverse_dynamics tau', tau, cpu[0]),
                       ('contact_inverse_dynamics lambda', lam, cpu[1])], scale + RTOL)
    return refused


@pytest.mark.slow    # seconds on the simulator: in make test, not make check
@pytest.mark.parametrize('path, root, contacts', [
    ('solo_description/robots/solo12.urdf', 'floating',
     [Contact(f'{leg}_FOOT') for leg in ('FL', 'FR', 'HL', 'HR')]),
    ('solo_description/robots/solo12.urdf', 'floating',
     [Contact('FL_FOOT', (0.01, -0.02, 0.005), 6, 'local'), Contact('HR_FOOT', dim=6),
      Contact('FR_FOOT', (0.0, 0.01, 0.0), 3, 'local')]),
    ('ur_description/urdf/ur5_robot.urdf', 'fixed', [Contact('ee_link', (0.05, 0.0, 0.0))]),
    ('panda_description/urdf/panda.urdf', 'fixed',
     [Contact('panda_hand_tcp', dim=6, reference_frame='local')]),
    ('panda_description/urdf/panda.urdf', 'floating', ['panda_leftfinger', 'panda_link0']),
    ('tiago_description/robots/tiago.urdf', 'planar',
     [Contact('arm_tool_link', (0.0, 0.0, 0.03), 3, 'local')]),
])
def test_contacts_equal_the_cpu(path, root, contacts):
    """contact_jacobian, constrained_forward_dynamics and contact_inverse_dynamics on CUDA."""
    model = RobotModel.from_urdf_file(robots_dir() / path, root_joint=root)
    rng = np.random.default_rng(31)
    Q = np.stack([model.random_configuration(rng) for _ in range(4)])
    V, T = rng.uniform(-1, 1, (4, model.nv)), rng.uniform(-2, 2, (4, model.n))
    assert _contacts_agree(model, contacts, Q, V, T) == []


@pytest.mark.slow    # seconds on the simulator: in make test, not make check
@pytest.mark.parametrize('seed', range(3))
@pytest.mark.parametrize('looped', [False, True])
def test_contacts_of_random_trees_equal_the_cpu(seed, looped, monkeypatch):
    """
    Mimic joints, prismatic joints, tilted axes; rows the CPU refuses are refused alike.

    ``looped``: solved along the tree (UNROLLED_SOLVE = 0), as above 12 coordinates; seed 0's
    joints are shuffled, seed 2 has mimic joints.
    """
    if looped:
        monkeypatch.setattr(codegen, 'UNROLLED_SOLVE', 0)
    model, rng = model_helpers.random_model(300 + seed, min_joints=4, armature=True,
                                            mimic_fraction=0.3 if seed else 0.0)
    Q = np.stack([model.random_configuration(rng) for _ in range(4)])
    V, T = rng.uniform(-1, 1, (4, model.nv)), rng.uniform(-2, 2, (4, model.n))
    contacts = [Contact(model.link_names[-1], (0.02, -0.01, 0.03))]
    _contacts_agree(model, contacts, Q, V, T)


@pytest.mark.slow    # seconds on the simulator: in make test, not make check
def test_redundant_contacts_get_the_minimum_norm_forces_and_contradicting_ones_are_named():
    """
    A point and a surface contact at one foot: the CPU's minimum-norm lambda at v = 0.

    Moving, the point's classical acceleration and the frame's spatial one differ (by w x
    v_p): no acceleration keeps both still, and those rows are refused, as on the CPU.
    """
    model = RobotModel.from_urdf_file(robots_dir() / 'solo_description/robots/solo12.urdf',
                                      root_joint='floating')
    rng = np.random.default_rng(32)
    contacts = [Contact('FL_FOOT'), Contact('FL_FOOT', dim=6, reference_frame='local'),
                Contact('HR_FOOT'), 'FR_FOOT']
    Q = np.stack([model.random_configuration(rng) for _ in range(4)])
    V, T = np.zeros((4, model.nv)), rng.uniform(-2, 2, (4, model.n))
    V[2:] = rng.uniform(-1, 1, (2, model.nv))       # moves the doubled foot: contradictions
    J = model.contact_jacobian(Q[0], contacts)
    assert np.linalg.matrix_rank(J) < len(J)         # redundant rows, lambda not unique
    assert _contacts_agree(model, contacts, Q, V, T) == [2, 3]
    _, lam = model.constrained_forward_dynamics(Q[0], V[0], T[0], contacts)
    assert np.max(np.abs(lam)) > 1.0                 # something to compare


@pytest.mark.slow    # seconds on the simulator: in make test, not make check
def test_contact_inverse_dynamics_names_the_rows_it_cannot_realise():
    """Refused rows: a v' moving a contact; no contact force for the base's acceleration."""
    model = RobotModel.from_urdf_file(robots_dir() / 'solo_description/robots/solo12.urdf',
                                      root_joint='floating')
    rng = np.random.default_rng(33)
    Q = np.stack([model.random_configuration(rng) for _ in range(3)])
    V = rng.uniform(-1, 1, (3, model.nv))
    feet = ['FL_FOOT', 'HR_FOOT']
    DV = np.stack([model.constrained_forward_dynamics(q, v, np.zeros(model.n), feet)[0]
                   for q, v in zip(Q, V)])
    DV[1] += 0.5                                     # moves the feet
    with pytest.raises(ValueError, match=r"contact_inverse_dynamics: rows \[1\] have a v' "
                                         'that moves the contacts'):
        model.contact_inverse_dynamics(cuda.to_device(Q), cuda.to_device(V),
                                       cuda.to_device(DV), feet)
    for k in (0, 2):                                  # the others: the CPU's
        tau, lam = model.on_gpu().contact_inverse_dynamics(Q[k:k + 1], V[k:k + 1],
                                                           DV[k:k + 1], feet)
        cpu = model.contact_inverse_dynamics(Q[k], V[k], DV[k], feet)
        np.testing.assert_allclose(tau.copy_to_host()[0], cpu[0], rtol=0, atol=1e-10)
        np.testing.assert_allclose(lam.copy_to_host()[0], cpu[1], rtol=0, atol=1e-10)
    # no contact: only free fall (the base's inverse dynamics zero) can be realised
    fall = model.forward_dynamics(Q, V, np.zeros((3, model.nv)))
    fall[0, 2] += 1.0                                 # not free fall
    with pytest.raises(ValueError, match=r'rows \[0\] have a base acceleration that no contact '
                                         'force can give'):
        model.contact_inverse_dynamics(cuda.to_device(Q), cuda.to_device(V),
                                       cuda.to_device(fall), [])
    tau, lam = model.on_gpu().contact_inverse_dynamics(Q, V, fall, [], check=False)
    assert np.isnan(tau.copy_to_host()[0]).all() and lam.shape == (3, 0)
    np.testing.assert_allclose(tau.copy_to_host()[1:], model.contact_inverse_dynamics(
        Q[1:], V[1:], fall[1:], [])[0], rtol=0, atol=1e-10)
    with pytest.raises(ValueError, match='cannot give the base this acceleration'):
        model.contact_inverse_dynamics(Q[0], V[0], fall[0], [])    # as the CPU refuses


@pytest.mark.slow    # seconds on the simulator: in make test, not make check
def test_contact_methods_check_their_inputs_and_write_into_out():
    """Non-finite rows named; tau's widths; out= buffers; an empty contact list."""
    model = RobotModel.from_urdf_file(robots_dir() / 'solo_description/robots/solo12.urdf',
                                      root_joint='floating')
    gpu = model.on_gpu()
    rng = np.random.default_rng(34)
    Q = np.stack([model.random_configuration(rng) for _ in range(3)])
    V, T = rng.uniform(-1, 1, (3, model.nv)), rng.uniform(-2, 2, (3, model.n))
    feet = ['FL_FOOT', 'FR_FOOT']
    bad = T.copy()
    bad[1, 4] = np.nan
    with pytest.raises(ValueError, match=r'constrained_forward_dynamics: rows \[1\] have a '
                                         'non-finite input'):
        gpu.constrained_forward_dynamics(Q, V, bad, feet)
    badq = Q.copy()
    badq[2, 0] = np.inf
    with pytest.raises(ValueError, match=r'contact_jacobian: rows \[2\] have a non-finite'):
        gpu.contact_jacobian(badq, feet)
    with pytest.raises(ValueError, match=r'tau must have shape \(N, 18\) .* or \(N, 12\)'):
        gpu.constrained_forward_dynamics(Q, V, T[:, :5], feet)
    with pytest.raises(ValueError, match=r'tau must have shape \(N, 18\) .* or \(N, 12\) '
                                         r'.*, got \(12,\)$'):
        gpu.constrained_forward_dynamics(Q, V, T[0], feet)          # one row, not a batch
    with pytest.raises(ValueError, match='tau has 2 rows, q 3'):
        gpu.constrained_forward_dynamics(Q, V, T[:2], feet)
    with pytest.raises(ValueError, match='contacts must be a list'):
        gpu.contact_jacobian(Q, 'FL_FOOT')
    with pytest.raises(ModelError, match="unknown link 'toe'"):
        gpu.contact_jacobian(Q, ['toe'])
    out = (cuda.device_array((3, model.nv)), cuda.device_array((3, 6)))
    got = gpu.constrained_forward_dynamics(Q, V, T, feet, out=out)
    assert got[0] is out[0] and got[1] is out[1]
    cpu = model.constrained_forward_dynamics(Q, V, T, feet)
    np.testing.assert_allclose(out[1].copy_to_host(), cpu[1], rtol=0, atol=1e-9)
    # the buffers kept between calls (the rows of v' = 0 behind gamma, the spare argument):
    # calls of more rows, then fewer, then more again
    for rows in (5, 2, 6):
        Qr = np.stack([model.random_configuration(rng) for _ in range(rows)])
        Vr, Tr = rng.uniform(-1, 1, (rows, model.nv)), rng.uniform(-2, 2, (rows, model.n))
        np.testing.assert_allclose(gpu.constrained_forward_dynamics(Qr, Vr, Tr, feet)[1]
                                   .copy_to_host(), model.constrained_forward_dynamics(
                                       Qr, Vr, Tr, feet)[1], rtol=0, atol=1e-9)
    J = cuda.device_array((3, 6, model.nv))
    assert gpu.contact_jacobian(Q, feet, out=J) is J
    dv, lam = gpu.constrained_forward_dynamics(Q, V, T, [])      # no contact: the free body
    assert lam.shape == (3, 0)
    np.testing.assert_allclose(dv.copy_to_host(), model.forward_dynamics(
        Q, V, np.concatenate([np.zeros((3, 6)), T], axis=1)), rtol=0, atol=1e-9)
    assert gpu.contact_jacobian(Q, []).shape == (3, 0, model.nv)
    empty = gpu.constrained_forward_dynamics(Q[:0], V[:0], T[:0], feet)
    assert empty[0].shape == (0, model.nv) and empty[1].shape == (0, 6)
    # float32: J_c to its rounding; the solves, whose tolerances are float64's, refused
    single = GpuModel(model, dtype=np.float32)
    Q32, V32, T32 = (X.astype(np.float32) for X in (Q, V, T))
    J32 = single.contact_jacobian(Q32, feet).copy_to_host()
    assert J32.dtype == np.float32
    assert np.abs(J32 - model.contact_jacobian(Q, feet)).max() <= 2e-6
    for call in (lambda: single.constrained_forward_dynamics(Q32, V32, T32, feet),
                 lambda: single.contact_inverse_dynamics(Q32, V32, V32, feet),
                 lambda: single.constrained_forward_dynamics_derivatives(Q32, V32, T32, feet),
                 lambda: single.linearize(Q32, V32, T32, contacts=feet)):
        with pytest.raises(ValueError, match='runs in float64 only'):
            call()


@pytest.mark.slow    # seconds on the simulator: in make test, not make check
@pytest.mark.parametrize('path, root', [('solo_description/robots/solo12.urdf', 'floating'),
                                        ('tiago_description/robots/tiago.urdf', 'planar'),
                                        ('ur_description/urdf/ur5_robot.urdf', 'fixed'),
                                        ('panda_description/urdf/panda.urdf', 'floating')])
def test_linearize_equals_the_cpu(path, root):
    """(A, B) continuous and of semi-implicit Euler (small and large base turns) per row."""
    model = RobotModel.from_urdf_file(robots_dir() / path, root_joint=root)
    rng = np.random.default_rng(41)
    Q = np.stack([model.random_configuration(rng) for _ in range(3)])
    V, T = rng.uniform(-2, 2, (3, model.nv)), rng.uniform(-5, 5, (3, model.nv))
    bound = np.array([1e-14 * np.linalg.cond(M) + RTOL for M in model.mass_matrix(Q)])
    dQ, dV, dT = (cuda.to_device(X) for X in (Q, V, T))
    for dt in (None, 0.01, 0.5):
        A, B = model.linearize(dQ, dV, dT, dt)
        cpu = model.linearize(Q, V, T, dt)
        _same_rows(model, [(f'linearize A (dt {dt})', A, cpu[0]),
                           (f'linearize B (dt {dt})', B, cpu[1])], bound)
    assert np.abs(cpu[0][:, :model.nv, :model.nv] - np.eye(model.nv)).max() > 1e-3


@pytest.mark.slow    # seconds on the simulator: in make test, not make check
def test_linearize_of_a_random_mimic_tree_names_refused_rows_and_writes_into_out():
    """Mimic joints; a non-finite row named; out=; a bad dt."""
    model, rng = model_helpers.random_model(400, min_joints=4, armature=True,
                                            mimic_fraction=0.4)
    Q = np.stack([model.random_configuration(rng) for _ in range(3)])
    V, T = rng.uniform(-2, 2, (3, model.nv)), rng.uniform(-5, 5, (3, model.nv))
    out = (cuda.device_array((3, 2 * model.nv, 2 * model.nv)),
           cuda.device_array((3, 2 * model.nv, model.n)))
    got = model.on_gpu().linearize(Q, V, T, 0.02, out=out)
    assert got[0] is out[0] and got[1] is out[1]
    bound = np.array([1e-14 * np.linalg.cond(M) + RTOL for M in model.mass_matrix(Q)])
    cpu = model.linearize(Q, V, T, 0.02)
    _same_rows(model, [('linearize A', out[0], cpu[0]), ('linearize B', out[1], cpu[1])],
               bound)
    kept, T[1, 0] = T[1, 0], np.nan
    with pytest.raises(ValueError, match=r'linearize: rows \[1\] have a non-finite input'):
        model.linearize(cuda.to_device(Q), cuda.to_device(V), cuda.to_device(T))
    with pytest.raises(ValueError, match='dt must be finite and > 0'):
        model.on_gpu().linearize(Q, V, T, -0.1)
    T[1, 0] = kept                      # float32: within 1e-6 cond(M), as forward dynamics
    A, _ = GpuModel(model, dtype=np.float32).linearize(*(X.astype(np.float32)
                                                         for X in (Q, V, T)), 0.02)
    _same_rows(model, [('linearize A, float32', A, cpu[0])], 1e-6 * bound / 1e-14)


def _constrained_derivatives_agree(model, contacts, Q, V, T, dt=0.05):
    """Assert the six derivatives and linearize in contact equal the CPU's, row by row."""
    names = ('dv_dq', 'dv_dv', 'dv_dtau', 'dlambda_dq', 'dlambda_dv', 'dlambda_dtau')
    got = model.constrained_forward_dynamics_derivatives(cuda.to_device(Q), cuda.to_device(V),
                                                         cuda.to_device(T), contacts)
    cpu = model.constrained_forward_dynamics_derivatives(Q, V, T, contacts)
    assert type(got).__name__ == 'ConstrainedDerivatives'
    bound = []
    for k in range(len(Q)):
        M = model.mass_matrix(Q[k])
        J = model.contact_jacobian(Q[k], contacts)
        A = J @ np.linalg.solve(M, J.T)
        bound.append(1e-14 * np.linalg.cond(M) * max(1.0, np.linalg.cond(A)) + RTOL)
    _same_rows(model, [(name, x, y) for name, x, y in zip(names, got, cpu)], bound)
    assert np.abs(cpu.dlambda_dq).max() > 1e-3 and np.abs(cpu.dv_dq).max() > 1e-3
    A, B = model.linearize(cuda.to_device(Q), cuda.to_device(V), cuda.to_device(T), dt,
                           contacts)
    cpu = model.linearize(Q, V, T, dt, contacts)
    _same_rows(model, [('linearize A in contact', A, cpu[0]),
                       ('linearize B in contact', B, cpu[1])], bound)


@pytest.mark.slow    # seconds on the simulator: in make test, not make check
@pytest.mark.parametrize('path, root, contacts', [
    ('solo_description/robots/solo12.urdf', 'floating',
     [Contact(f'{leg}_FOOT') for leg in ('FL', 'HR', 'FR')]),
    ('solo_description/robots/solo12.urdf', 'floating',
     [Contact('FL_FOOT', (0.01, -0.02, 0.005), 6, 'local'),
      Contact('HR_FOOT', (0.0, 0.01, 0.0), 3, 'local')]),
    ('ur_description/urdf/ur5_robot.urdf', 'fixed', [Contact('ee_link', (0.05, 0.0, 0.0))]),
    ('panda_description/urdf/panda.urdf', 'floating',
     [Contact('panda_leftfinger', dim=6), 'panda_link0']),
    ('tiago_description/robots/tiago.urdf', 'planar',
     [Contact('arm_tool_link', (0.0, 0.0, 0.03), 3, 'local')]),
])
def test_constrained_dynamics_derivatives_equal_the_cpu(path, root, contacts):
    """The contact terms along each path and the KKT solve; linearize in contact."""
    model = RobotModel.from_urdf_file(robots_dir() / path, root_joint=root)
    rng = np.random.default_rng(51)
    Q = np.stack([model.random_configuration(rng) for _ in range(3)])
    V, T = rng.uniform(-1, 1, (3, model.nv)), rng.uniform(-2, 2, (3, model.n))
    _constrained_derivatives_agree(model, contacts, Q, V, T)


@pytest.mark.slow    # seconds on the simulator: in make test, not make check
@pytest.mark.parametrize('seed', [501, 504])
@pytest.mark.parametrize('looped', [False, True])
def test_constrained_dynamics_derivatives_of_mimic_trees_equal_the_cpu(seed, looped,
                                                                       monkeypatch):
    """
    Mimic joints: the terms on the unconstrained tree, projected by P.

    ``looped``: the KKT solve along the tree (UNROLLED_SOLVE = 0), as above 12 coordinates,
    its rows in the tree's order (both seeds' joints are shuffled).
    """
    if looped:
        monkeypatch.setattr(codegen, 'UNROLLED_SOLVE', 0)
    model, rng = model_helpers.random_model(seed, min_joints=5, armature=True,
                                            mimic_fraction=0.4)
    assert model.nv < model.unconstrained.nv       # something to project
    order = codegen.parents_first(codegen._Robot(model))
    assert order != sorted(order)                   # joints out of the tree's order
    Q = np.stack([model.random_configuration(rng) for _ in range(3)])
    V, T = rng.uniform(-1, 1, (3, model.nv)), rng.uniform(-2, 2, (3, model.n))
    # a point that three coordinates move (J_c of full rank: lambda unique)
    contacts = next([Contact(link, (0.02, -0.01, 0.03), 3, 'local')]
                    for link in reversed(model.link_names)
                    if min(np.linalg.matrix_rank(x) for x in model.contact_jacobian(
                        Q, [Contact(link, (0.02, -0.01, 0.03))])) == 3)
    _constrained_derivatives_agree(model, contacts, Q, V, T)


@pytest.mark.slow    # seconds on the simulator: in make test, not make check
def test_constrained_dynamics_derivatives_name_redundant_contacts():
    """A doubled foot: lambda is not unique, nor its derivatives; those rows are named."""
    model = RobotModel.from_urdf_file(robots_dir() / 'solo_description/robots/solo12.urdf',
                                      root_joint='floating')
    rng = np.random.default_rng(52)
    Q = np.stack([model.random_configuration(rng) for _ in range(2)])
    V, T = np.zeros((2, model.nv)), rng.uniform(-2, 2, (2, model.n))
    doubled = [Contact('FL_FOOT'), Contact('FL_FOOT', reference_frame='local'), 'HR_FOOT']
    with pytest.raises(SingularJacobianError, match='redundant'):
        model.constrained_forward_dynamics_derivatives(Q[0], V[0], T[0], doubled)
    with pytest.raises(SingularJacobianError,
                       match=r'constrained_forward_dynamics_derivatives: rows \[0, 1\] have '
                             'redundant contact rows'):
        model.constrained_forward_dynamics_derivatives(cuda.to_device(Q), cuda.to_device(V),
                                                       cuda.to_device(T), doubled)
    with pytest.raises(SingularJacobianError, match=r'linearize: rows \[0, 1\] have redundant'):
        model.linearize(cuda.to_device(Q), cuda.to_device(V), cuda.to_device(T),
                        contacts=doubled)
    got = model.on_gpu().constrained_forward_dynamics_derivatives(Q, V, T, doubled,
                                                                  check=False)
    assert all(np.isnan(x.copy_to_host()).all() for x in got)


def test_compiled_kernels_are_kept_on_disk_unless_asked_not_to(monkeypatch, tmp_path):
    """
    disk_cache (default True): numba-cuda's cache=True beside the generated source.

    Where numba cannot cache (it raises 'cannot cache function ...'), the kernel is compiled
    without; another error is the caller's. On a GPU the index is written to disk (the
    simulator compiles nothing, so keeps nothing).
    """
    model = model_helpers.random_model(3, min_joints=3)[0]
    with pytest.raises(ValueError, match='disk_cache must be True or False'):
        GpuModel(model, disk_cache='yes')

    class Recorder:                     # numba.cuda, with each jit's keywords noted
        def __init__(self, cuda, refuse=None):
            self.cuda, self.refuse, self.calls = cuda, refuse, []

        def jit(self, *args, **kwargs):
            self.calls.append(kwargs)
            if self.refuse is not None and kwargs.get('cache'):
                raise RuntimeError(self.refuse)
            return self.cuda.jit(*args, **kwargs)

        def __getattr__(self, name):
            return getattr(self.cuda, name)
    Q = np.stack([model.random_configuration(np.random.default_rng(3)) for _ in range(2)])
    for options, refuse, calls in (({}, None, [{'cache': True}]),
                                   ({'disk_cache': False}, None, [{}]),
                                   ({}, 'cannot cache function rnea: no locator available',
                                    [{'cache': True}, {}])):
        monkeypatch.setenv('KRON_DYNAMICS_CACHE', str(tmp_path / str(len(calls)) / str(refuse)))
        gpu = GpuModel(model, **options)
        gpu._cuda = recorder = Recorder(gpu._cuda, refuse)
        np.testing.assert_allclose(gpu.gravity_torque(Q).copy_to_host(),
                                   model.gravity_torque(Q), rtol=0, atol=1e-12)
        assert recorder.calls == calls
    for error in ('out of memory', 'the cache index is not readable'):  # not 'cannot cache'
        gpu = GpuModel(model)
        gpu._cuda = Recorder(gpu._cuda, error)
        with pytest.raises(RuntimeError, match=error):
            gpu._kernel('rnea')
    if not numba.config.ENABLE_CUDASIM:        # a GPU: the index is on disk, or not
        for disk_cache in (True, False):
            folder = tmp_path / f'device_{disk_cache}'
            monkeypatch.setenv('KRON_DYNAMICS_CACHE', str(folder))
            GpuModel(model, disk_cache=disk_cache).gravity_torque(Q)
            assert bool(list(folder.rglob('*.nbi'))) == disk_cache


def test_kernels_compile_in_a_thread_of_a_deep_stack_and_recursion(monkeypatch):
    """
    deep_compile: numba-cuda's control-flow analysis recurses once per block of a kernel.

    A large tree's kernel has thousands (TALOS's regressor raised RecursionError at Python's
    limit of 1000): the build runs where 20,000 nested calls fit, its result or its error
    comes back to the caller, and the process's recursion limit is as it was.
    """
    from kron_dynamics.gpu import deep_compile

    def nested(depth):
        return 0 if depth == 0 else 1 + nested(depth - 1)
    limit = sys.getrecursionlimit()
    with pytest.raises(RecursionError):
        nested(20000)
    assert deep_compile(lambda: nested(20000)) == 20000
    with pytest.raises(ValueError, match='refused'):
        deep_compile(lambda: (_ for _ in ()).throw(ValueError('refused')))
    assert sys.getrecursionlimit() == limit
    # the kernels GpuModel compiles go through it, once each
    import kron_dynamics.gpu as gpu_module
    built = []
    monkeypatch.setattr(gpu_module, 'deep_compile', lambda build: built.append(1) or build())
    gpu = GpuModel(model_helpers.random_model(3, min_joints=3)[0])
    assert gpu._kernel('rnea') is gpu._kernel('rnea') and built == [1]
    gpu.jacobian(np.zeros((1, gpu.nq)), gpu.model.link_names[-1])
    assert built == [1, 1]


_PTX = """
import sys
from numba import config
from kron_dynamics import RobotModel
from kron_dynamics.gpu import (codegen, CONSTRAINED_SIGNATURE, CONTACT_SIGNATURES,
                               DERIVATIVE_SIGNATURES, LINK_SIGNATURES, ptx, SIGNATURES, tangent)
from kron_dynamics.gpu.constrained_derivatives import constrained_derivatives_source
from kron_dynamics.gpu.contacts import contacts_source
from kron_dynamics.gpu.wrenches import (DERIVATIVE_SIGNATURE, SIGNATURE as WRENCH_SIGNATURE,
                                        wrench_source)
assert not config.ENABLE_CUDASIM
model = RobotModel.from_urdf_file(sys.argv[1], root_joint=sys.argv[2])
link, every = model.link_names[-1], sys.argv[3] == 'all'
main, derivatives = codegen.source(model), tangent.derivatives_source(model)
links = {'jacobian': codegen.jacobian_source, 'hessian': tangent.hessian_source,
         'rates': tangent.rates_source}
small = ('integrate', 'difference', 'task_inertia', 'rk_stage', 'rk_finish', 'linearize')
kernels = [(main, name, signature) for name, signature in SIGNATURES.items()]
kernels += [(derivatives, name, signature) for name, signature in DERIVATIVE_SIGNATURES.items()]
kernels = [x for x in kernels if every or x[1] in small]
kernels.append((wrench_source(model.nv), 'add_wrench', WRENCH_SIGNATURE))
kernels.append((wrench_source(model.nv), 'add_wrench_derivative', DERIVATIVE_SIGNATURE))
if every:
    kernels += [(links[kind](model, link), name, signature)
                for name, (kind, signature) in LINK_SIGNATURES.items()]
    codegen.UNROLLED_SOLVE = 0      # forward dynamics solved along the tree, as above 12
    kernels.append((codegen.source(model), 'forward_dynamics', SIGNATURES['forward_dynamics']))
for m in (0, 12) if sys.argv[3] != 'base' else ():
    kernels += [(contacts_source(model, m), name, signature)
                for name, signature in CONTACT_SIGNATURES.items()]
    kernels.append((constrained_derivatives_source(model.nv, model.nv - model.n, model.nv, m,
                                                   codegen._Robot(model).layout()),
                    'contact_derivatives', CONSTRAINED_SIGNATURE))
for source, name, signature in kernels:
    namespace = {}
    exec(compile(source, name, 'exec'), namespace)
    assert '.entry' in ptx(namespace[name], signature, (9, 0)), name
    print('compiled', name, flush=True)
print('all', len(kernels), 'compiled')
"""


@pytest.mark.slow
@pytest.mark.parametrize('path, root, which', [
    ('ur_description/urdf/ur5_robot.urdf', 'fixed', 'all'),
    ('solo_description/robots/solo12.urdf', 'floating', 'small'),
    ('tiago_description/robots/tiago.urdf', 'planar', 'base')])
def test_the_generated_kernels_compile_for_a_gpu(path, root, which):
    """
    The simulator runs Python and does not check signatures; a GPU runs what numba compiles.

    In a child process without the simulator, numba-cuda's NVVM compiles the generated
    kernels to PTX for sm_90 (no GPU needed; the kernels use no min or max builtins, which
    would ask for one, and the device functions they call, codegen.DEVICE_FUNCTIONS, are
    compiled for sm_90 too) with the signatures GpuModel gives them: every kernel of the UR5 (a
    fixed base), its forward dynamics also with the solve of large trees (the tables in
    constant memory), and the external wrenches' two kernels on every base; on a floating base the
    small kernels whose moving-base branches differ and the contact kernels (solo12's main
    and derivative kernels compile in 8 minutes here, so they are left to a GPU run); on a
    planar base the small kernels. Where NVVM is not
    installed, the test says so.
    """
    env = {**os.environ, 'NUMBA_ENABLE_CUDASIM': '0'}
    done = subprocess.run([sys.executable, '-c', _PTX, str(robots_dir() / path), root, which],
                          env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode and re.search('libnvvm|NVVM', done.stderr, re.IGNORECASE) and \
            'compiled' not in done.stdout:
        pytest.skip(f"numba-cuda's NVVM is not installed here: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r'^all \d+ compiled$', done.stdout, re.MULTILINE), done.stdout
