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

"""Real-time settings (thread_priority, cpu_affinity, lock_memory) of the node processes."""

import contextlib
import errno
import importlib
import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import rclpy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from conftest import URDF_DIR
from kron_dynamics import ConfigurationError, RobotModel
from kron_dynamics.nodes import realtime
from ros_harness import EVERY_STATE, NodeProcess, Probe, wait_for

STACKER = str(URDF_DIR / 'stacker.urdf')
JOINTS = ['q1_travel', 'q2_slew', 'q3_luff']
NO_RT_CAPS = ('setpriv', '--inh-caps=-sys_nice,-ipc_lock',
              '--bounding-set=-sys_nice,-ipc_lock')


def fifo_permitted() -> bool:
    """Return True if this machine lets a child process switch to SCHED_FIFO."""
    return subprocess.run(['chrt', '-f', '1', 'true'], capture_output=True).returncode == 0


needs_fifo = pytest.mark.skipif(
    shutil.which('chrt') is None or not fifo_permitted(),
    reason='SCHED_FIFO is not permitted here; the refusal path is test_no_permission_*')


def threads_of(pid: int) -> dict:
    """Return {tid: (policy, priority, affinity)} of every thread of a process."""
    result = {}
    for tid in os.listdir(f'/proc/{pid}/task'):
        tid = int(tid)
        try:
            result[tid] = (os.sched_getscheduler(tid), os.sched_getparam(tid).sched_priority,
                           sorted(os.sched_getaffinity(tid)))
        except ProcessLookupError:
            pass
    return result


@pytest.mark.parametrize('values,message', [
    ((150, None, False), 'thread_priority'),
    ((-3, None, False), 'thread_priority'),
    ((True, None, False), 'thread_priority'),
    (('50', None, False), 'thread_priority'),
    ((0, [0, 4096], False), 'cpu_affinity names CPU(s) [4096]'),
    ((0, None, 'yes'), 'lock_memory'),
    ((0, None, False, 150), 'middleware_thread_priority must be 0'),
])
def test_invalid_values_raise_configuration_error_naming_the_parameter(values, message):
    with pytest.raises(ConfigurationError) as info:
        realtime.apply(*values)
    assert message in str(info.value)


def test_defaults_change_nothing():
    before = threads_of(os.getpid())
    assert realtime.apply(0, None, False) == []
    assert realtime.apply(0, [], False) == []
    after = threads_of(os.getpid())
    common = set(before) & set(after)
    assert common and all(after[t] == before[t] for t in common)


def test_cpu_affinity_is_taken_as_a_set_of_cpus():
    """Repeated and unordered CPUs name the same set: said once, in order."""
    available = sorted(os.sched_getaffinity(0))
    cpus = [available[-1], available[0], available[-1]]
    assert realtime.validate(0, cpus, False)[1] == sorted(set(cpus))


@pytest.mark.parametrize('code, hint', [(errno.EPERM, True), (errno.ENOMEM, True),
                                        (errno.EINVAL, False)])
def test_a_refused_setting_is_skipped_with_the_permission_hint_where_it_helps(
        monkeypatch, code, hint):
    """A memlock limit too small makes mlockall fail with ENOMEM: the hint names that limit."""
    def refused():
        raise OSError(code, os.strerror(code))
    monkeypatch.setattr(realtime, 'lock_memory', refused)
    lines = realtime.apply(0, None, True)
    assert lines == [f'could not lock memory (mlockall) ({os.strerror(code)})'
                     + (f'; {realtime.PERMISSION_HINT}' if hint else '')
                     + '; running without it']


LOCKED = textwrap.dedent('''
    import sys
    from kron_dynamics.nodes import realtime


    def locked_kb():
        with open('/proc/self/status') as f:
            return next(int(line.split()[1]) for line in f if line.startswith('VmLck:'))


    try:
        realtime.lock_memory()
    except OSError as exc:
        print('refused', exc)
        sys.exit(0)
    before = locked_kb()
    block = bytearray(64 * 1024 * 1024)     # allocated after mlockall
    print('grew', locked_kb() - before)
''')


@pytest.mark.slow   # a child process
def test_lock_memory_locks_the_pages_allocated_later_too():
    """With MCL_CURRENT | MCL_FUTURE, 64 MB allocated after mlockall are locked as well."""
    out = subprocess.run([sys.executable, '-c', LOCKED], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    if out.stdout.startswith('refused'):
        pytest.skip(f'mlockall is not permitted here: {out.stdout.strip()}')
    grew = int(out.stdout.split()[1])
    assert grew >= 64 * 1024, out.stdout


CHILD = textwrap.dedent('''
    import json, os, sys, threading
    from kron_dynamics.nodes import realtime
    stop = threading.Event()
    early = [threading.Thread(target=stop.wait) for _ in range(3)]
    for t in early:
        t.start()
    before = {t: os.sched_getscheduler(t) for t in (e.native_id for e in early)}
    lines = realtime.apply(7, [0], False)
    late = threading.Thread(target=stop.wait)   # started afterwards: inherits
    late.start()
    tids = [int(t) for t in os.listdir('/proc/self/task')]
    state = {t: [os.sched_getscheduler(t), os.sched_getparam(t).sched_priority,
                 sorted(os.sched_getaffinity(t))] for t in tids}
    stop.set()
    print(json.dumps({'lines': lines, 'state': state, 'late': late.native_id,
                      'main': threading.get_native_id(), 'early': [e.native_id for e in early],
                      'cpus': sorted(os.sched_getaffinity(early[0].native_id))}))
''')


@pytest.mark.slow   # a child process (importing rclpy)
@needs_fifo
def test_apply_sets_the_calling_thread_and_threads_it_starts_later_only():
    """As ros2_control: the control (executor) thread, not the threads that already exist."""
    out = subprocess.run([sys.executable, '-c', CHILD], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result['lines'] == ['CPU affinity [0] for the executor thread',
                               'SCHED_FIFO priority 7 for the executor thread']
    state = result['state']
    for tid in (result['main'], result['late']):
        assert state[str(tid)] == [os.SCHED_FIFO, 7, [0]], tid
    for tid in result['early']:     # threads that existed before (like the DDS threads)
        assert state[str(tid)][:2] == [os.SCHED_OTHER, 0], tid
        assert state[str(tid)][2] == sorted(os.sched_getaffinity(0)), tid


@contextlib.contextmanager
def dynamics_node(args: list, prefix: tuple = ()):
    """Run dynamics_node on the stacker; yield (node, answer) where answer(q, qd) -> bias."""
    node = NodeProcess('dynamics_node', [
        *EVERY_STATE, '-p', f'urdf_file:={STACKER}', *args], prefix=prefix)
    probe = Probe('realtime_probe')
    try:
        out = probe.collect(Float64MultiArray, '/dynamics_node/bias_torque')
        pub = probe.node.create_publisher(JointState, '/joint_states', 10)
        assert wait_for(lambda: pub.get_subscription_count() > 0 and node.alive(), 30), \
            node.stop()

        def answer(q, qd):
            count = len(out)

            def answered():
                pub.publish(JointState(name=JOINTS, position=list(q), velocity=list(qd)))
                return len(out) > count
            assert wait_for(answered, 30, period=0.2), node.output()
            return np.array(out[-1].data)
        yield node, answer
    finally:
        probe.close()
        node.stop()


@pytest.mark.ros
@needs_fifo
def test_dynamics_node_runs_its_executor_thread_at_its_priority_and_still_answers():
    """The thread that spins (the main thread) is SCHED_FIFO; the DDS threads are not."""
    args = ['-p', 'thread_priority:=10', '-p', 'cpu_affinity:=[0]']
    with dynamics_node(args) as (node, answer):
        assert wait_for(lambda: 'SCHED_FIFO priority 10' in node.output(), 30), node.output()
        threads = threads_of(node.proc.pid)
        assert threads[node.proc.pid] == (os.SCHED_FIFO, 10, [0]), threads
        others = [v for tid, v in threads.items() if tid != node.proc.pid]
        assert len(others) > 5   # rclpy and DDS threads
        assert any(v[0] == os.SCHED_OTHER for v in others), threads
        q, qd = np.array([1.0, 0.3, 0.2]), np.array([0.1, -0.2, 0.3])
        model = RobotModel.from_urdf_file(STACKER)
        np.testing.assert_allclose(answer(q, qd), model.bias_torque(q, qd), rtol=1e-12)


@pytest.mark.ros
@needs_fifo
def test_middleware_thread_priority_puts_the_dds_threads_under_sched_fifo_too():
    """The opt-in for the measured latency tail: every other thread at its own priority."""
    args = ['-p', 'thread_priority:=10', '-p', 'middleware_thread_priority:=5']
    with dynamics_node(args) as (node, answer):
        assert wait_for(lambda: 'for the other threads (DDS)' in node.output(), 10), \
            node.output()
        threads = threads_of(node.proc.pid)
        assert threads[node.proc.pid][:2] == (os.SCHED_FIFO, 10), threads
        others = [v[:2] for tid, v in threads.items() if tid != node.proc.pid]
        # those that existed at start-up at 5; any the executor thread started since, at 10
        assert sum(v == (os.SCHED_FIFO, 5) for v in others) > 5, threads
        assert all(v in ((os.SCHED_FIFO, 5), (os.SCHED_FIFO, 10)) for v in others), threads
        q = np.array([0.0, 0.0, 0.2])
        model = RobotModel.from_urdf_file(STACKER)
        # the bias torque at rest is G(q); compared with the library's bias torque (what the
        # topic carries): G's own pass rounds its zero entries differently
        np.testing.assert_allclose(answer(q, 0 * q), model.bias_torque(q, 0 * q), rtol=1e-12)


@pytest.mark.ros
@pytest.mark.skipif(shutil.which('setpriv') is None or os.geteuid() != 0,
                    reason='needs root and setpriv to drop CAP_SYS_NICE and CAP_IPC_LOCK')
def test_no_permission_is_a_warning_and_the_node_runs_with_normal_scheduling():
    args = ['-p', 'thread_priority:=10', '-p', 'lock_memory:=true']
    with dynamics_node(args, prefix=NO_RT_CAPS) as (node, answer):
        assert wait_for(lambda: 'could not set SCHED_FIFO priority 10' in node.output(), 30)
        log = node.output()
        assert 'could not lock memory (mlockall)' in log and 'rtprio' in log, log
        assert all(v[0] != os.SCHED_FIFO for v in threads_of(node.proc.pid).values())
        q = np.array([0.0, 0.0, 0.2])
        model = RobotModel.from_urdf_file(STACKER)
        # the bias torque at rest is G(q); compared with the library's bias torque (what the
        # topic carries): G's own pass rounds its zero entries differently
        np.testing.assert_allclose(answer(q, 0 * q), model.bias_torque(q, 0 * q), rtol=1e-12)


@pytest.mark.ros
@pytest.mark.parametrize('args,message', [
    (['-p', 'thread_priority:=150'], 'thread_priority must be 0'),
    (['-p', 'cpu_affinity:=[4096]'], 'cpu_affinity names CPU(s) [4096]'),
])
def test_bad_realtime_parameters_exit_non_zero_with_a_clear_error(args, message):
    code, out = NodeProcess('dynamics_node', [
        *EVERY_STATE, '-p', f'urdf_file:={STACKER}', *args]).wait(60)
    assert code == 1 and message in out, out
    assert 'Traceback' not in out


@pytest.mark.ros
@pytest.mark.parametrize('module', ['dynamics_node', 'computed_torque_controller',
                                    'plant_simulator', 'reference_generator'])
def test_every_node_declares_the_realtime_parameters_read_only(module):
    names = {'dynamics_node': 'DynamicsNode',
             'computed_torque_controller': 'ComputedTorqueController',
             'plant_simulator': 'PlantSimulator', 'reference_generator': 'ReferenceGenerator'}
    node_class = getattr(importlib.import_module(f'kron_dynamics.nodes.{module}'),
                         names[module])
    context = rclpy.Context()
    rclpy.init(context=context, args=['--ros-args', '-p', f'urdf_file:={STACKER}',
                                      '-p', 'joints:=[q1_travel, q2_slew, q3_luff]'])
    try:
        node = node_class(context=context)
        for name in realtime.PARAMETERS:
            assert node.has_parameter(name)
            assert node.describe_parameter(name).read_only
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)
