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
Recorded joint states for identification: a rosbag2 directory or a CSV file.

A bag is read with ``rosbags`` (pure Python: no ROS install needed to fit): every
``sensor_msgs/JointState`` message of a topic, by joint name, with its header stamp (the
bag's receive time where the stamp is 0). A CSV file has a header row ``t`` and, per joint,
``<joint>.position``, ``<joint>.velocity`` (optional) and ``<joint>.effort``.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ModelError


@dataclass(frozen=True)
class Recording:
    """Sample times t (N,), and q, qd (None if not recorded) and tau (N, n) by joint_names."""

    joint_names: tuple
    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray | None
    tau: np.ndarray


def read_recording(path, joint_names, topic: str = '/joint_states') -> Recording:
    """Return the joint states of a rosbag2 directory or a CSV file, by joint name."""
    path = Path(path)
    if isinstance(joint_names, str) or not isinstance(joint_names, Iterable):
        raise ValueError(f'joint_names must be a list of joint names, got {joint_names!r}')
    joints = tuple(map(str, joint_names))
    if not path.exists():
        raise ValueError(f'{path}: no such file or directory')
    if path.is_dir():
        return _read_bag(path, joints, topic)
    return _read_csv(path, joints)


def write_bag(path, recording: Recording, topic: str = '/joint_states') -> None:
    """Write a recording as a rosbag2 directory of sensor_msgs/JointState (for tests, demos)."""
    write_joint_states(path, ((t, t, recording.joint_names, recording.q[k],
                               recording.qd[k] if recording.qd is not None else (),
                               recording.tau[k]) for k, t in enumerate(recording.t)), topic)


def write_joint_states(path, messages, topic: str = '/joint_states') -> None:
    """
    Write JointState messages as a rosbag2 directory (for tests: what a recording may hold).

    ``messages``: (received [s], stamp [s], names, position, velocity, effort) each, in the
    order received; a stamp of 0 is an unstamped message.
    """
    _rosbags()
    from rosbags.rosbag2 import Writer
    from rosbags.typesys import get_typestore, Stores
    store = get_typestore(Stores.ROS2_KILTED)
    JointState = store.types['sensor_msgs/msg/JointState']
    Header = store.types['std_msgs/msg/Header']
    Time = store.types['builtin_interfaces/msg/Time']
    with Writer(path, version=8) as writer:
        connection = writer.add_connection(topic, JointState.__msgtype__, typestore=store)
        for received, stamp, names, position, velocity, effort in messages:
            sec, nanosec = divmod(int(round(float(stamp) * 1e9)), 1_000_000_000)
            msg = JointState(
                header=Header(stamp=Time(sec=sec, nanosec=nanosec), frame_id=''),
                name=list(names), position=np.array(position, dtype=float),
                velocity=np.array(velocity, dtype=float), effort=np.array(effort, dtype=float))
            writer.write(connection, int(round(float(received) * 1e9)),
                         store.serialize_cdr(msg, JointState.__msgtype__))


def _rosbags():
    """Import rosbags, or say which extra installs it."""
    try:
        import rosbags.rosbag2
        import rosbags.typesys
    except ImportError:
        raise ModelError("reading a rosbag2 directory needs rosbags: pip install "
                         "'kron_dynamics[identification]' (or rosbags), or give a CSV "
                         'file') from None
    return rosbags


def _read_bag(path: Path, joints: tuple, topic: str) -> Recording:
    _rosbags()
    from rosbags.rosbag2 import Reader, ReaderError
    from rosbags.typesys import get_typestore, Stores
    store = get_typestore(Stores.ROS2_KILTED)
    if not (path / 'metadata.yaml').is_file():
        raise ValueError(f'{path}: not a rosbag2 directory (it has no metadata.yaml); give '
                         'a rosbag2 directory or a CSV file')
    try:
        return _bag_messages(Reader, store, path, joints, topic)
    except ReaderError as exc:        # a storage file missing or not a database, bad metadata
        raise ValueError(f'{path}: the bag cannot be read ({exc})') from None


def _bag_messages(Reader, store, path: Path, joints: tuple, topic: str) -> Recording:
    rows_t, rows_q, rows_v, rows_e = [], [], [], []
    with Reader(path) as reader:
        connections = [c for c in reader.connections if c.topic == topic]
        if not connections:
            topics = sorted({c.topic for c in reader.connections})
            raise ValueError(f'{path}: no topic {topic}; the bag has {topics}')
        bad = [c.msgtype for c in connections if c.msgtype != 'sensor_msgs/msg/JointState']
        if bad:
            raise ValueError(f'{path}: {topic} carries {bad[0]}, not sensor_msgs/msg/JointState')
        for connection, received, raw in reader.messages(connections=connections):
            msg = store.deserialize_cdr(raw, connection.msgtype)
            index = {name: k for k, name in enumerate(msg.name)}
            if any(j not in index for j in joints):
                continue                        # another publisher's subset of joints
            rows = [index[j] for j in joints]
            if len(msg.effort) != len(msg.name):
                raise ValueError(f'{path}: {topic} at {received * 1e-9:.6f} s has '
                                 f'{len(msg.effort)} efforts for {len(msg.name)} names '
                                 '(identification needs the measured joint torques)')
            if len(msg.position) != len(msg.name):
                raise ValueError(f'{path}: {topic} at {received * 1e-9:.6f} s has '
                                 f'{len(msg.position)} positions for {len(msg.name)} names')
            stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
            rows_t.append((stamp or received) * 1e-9)
            rows_q.append(np.asarray(msg.position)[rows])
            rows_v.append(np.asarray(msg.velocity)[rows] if len(msg.velocity) == len(msg.name)
                          else None)
            rows_e.append(np.asarray(msg.effort)[rows])
    if not rows_t:
        raise ValueError(f'{path}: no message on {topic} names all of {list(joints)}')
    qd = None if any(v is None for v in rows_v) else np.array(rows_v)
    return _finite(_sorted(Recording(joints, np.array(rows_t), np.array(rows_q), qd,
                                     np.array(rows_e))), f'{path}: {topic}')


def _read_csv(path: Path, joints: tuple) -> Recording:
    import csv
    with open(path, newline='') as f:
        reader = csv.reader(f)
        try:
            header = next(reader)
        except StopIteration:
            raise ValueError(f'{path}: empty CSV file') from None
        rows = [(reader.line_num, r) for r in reader if r]
    column = {name.strip(): k for k, name in enumerate(header)}
    needed = ['t'] + [f'{j}.position' for j in joints] + [f'{j}.effort' for j in joints]
    missing = [c for c in needed if c not in column]
    if missing:
        raise ValueError(f'{path}: CSV columns {missing} missing (header: t, then per joint '
                         '<joint>.position, <joint>.velocity (optional), <joint>.effort)')
    data = np.empty((len(rows), len(header)))
    for i, (line, r) in enumerate(rows):
        if len(r) != len(header):
            raise ValueError(f'{path}: data row {i + 1} (line {line}) has {len(r)} fields, '
                             f'the header {len(header)}')
        for k, text in enumerate(r):
            try:
                data[i, k] = float(text)
            except ValueError:
                raise ValueError(f'{path}: data row {i + 1} (line {line}), column '
                                 f"'{header[k].strip()}': {text!r} is not a number") from None
    if not len(data):
        raise ValueError(f'{path}: no data rows')
    bad = ~np.isfinite(data[:, [column[c] for c in needed]])
    if bad.any():
        i, k = map(int, np.argwhere(bad)[0])
        raise ValueError(f'{path}: data row {i + 1} (line {rows[i][0]}), column '
                         f'{needed[k]!r} is {float(data[i, column[needed[k]]])}: every t, '
                         'position and effort must be finite')

    def take(suffix):
        return data[:, [column[f'{j}.{suffix}'] for j in joints]]
    has_v = all(f'{j}.velocity' in column for j in joints)
    return _sorted(Recording(joints, data[:, column['t']], take('position'),
                             take('velocity') if has_v else None, take('effort')))


def _finite(r: Recording, where: str) -> Recording:
    """Return r; ValueError naming a value that is not finite (earliest position, then effort)."""
    for field, values in (('position', r.q), ('effort', r.tau)):
        bad = ~np.isfinite(values)
        if bad.any():
            k, j = map(int, np.argwhere(bad)[0])
            raise ValueError(f'{where}: the {field} of {r.joint_names[j]!r} at {r.t[k]:.9f} s '
                             f'is {float(values[k, j])}: every position and effort must be '
                             'finite')
    return r


def _sorted(r: Recording) -> Recording:
    order = np.argsort(r.t, kind='stable')
    return Recording(r.joint_names, r.t[order], r.q[order],
                     None if r.qd is None else r.qd[order], r.tau[order])
