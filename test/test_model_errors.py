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
Bad models raise ModelError naming the culprit; valid but unusual URDFs load.

Each bad URDF is one small edit of ``BASE``, a two-joint arm base -> a (revolute j1) -> b
(prismatic j2), so that the edit is the only thing wrong with it.
"""

import logging

import numpy as np
import pytest

from kron_dynamics import ModelError, RobotModel
from kron_dynamics.model.dh import DHRow

from conftest import URDF_DIR

RP_ARM = (URDF_DIR / 'rp_arm.urdf').read_text()

SOURCE = 'case.urdf'

BASE = """<?xml version="1.0"?>
<robot name="arm">
  <link name="base"/>
  <link name="a">
    <inertial>
      <origin xyz="0 0 0.25" rpy="0 0 0"/>
      <mass value="2.0"/>
      <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.02"/>
    </inertial>
  </link>
  <link name="b">
    <inertial>
      <origin xyz="0.1 0 0" rpy="0 0 0"/>
      <mass value="1.0"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/>
    </inertial>
  </link>
  <joint name="j1" type="revolute">
    <parent link="base"/>
    <child link="a"/>
    <origin xyz="0 0 0.1" rpy="0 0 0"/>
    <axis xyz="0 0 1"/>
    <limit lower="-2" upper="2" effort="50" velocity="3"/>
  </joint>
  <joint name="j2" type="prismatic">
    <parent link="a"/>
    <child link="b"/>
    <origin xyz="0 0 0.5" rpy="0 1.5707963 0"/>
    <axis xyz="1 0 0"/>
    <limit lower="0" upper="0.4" effort="200" velocity="0.5"/>
  </joint>
</robot>
"""

J1 = BASE[BASE.index('  <joint name="j1"'):BASE.index('  <joint name="j2"')]
J2 = BASE[BASE.index('  <joint name="j2"'):BASE.index('</robot>')]
A_INERTIA = '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.02"/>'
J1_LIMIT = '<limit lower="-2" upper="2" effort="50" velocity="3"/>'
J2_LIMIT = '<limit lower="0" upper="0.4" effort="200" velocity="0.5"/>'


def edit(old, new, text=BASE):
    """Return ``text`` with the single occurrence of ``old`` replaced by ``new``."""
    assert text.count(old) == 1, old
    return text.replace(old, new)


def add(xml_fragment):
    """Return BASE with extra elements before </robot>."""
    return edit('</robot>', xml_fragment + '</robot>')


def joint(name, parent, child, kind='fixed'):
    """Return a <joint> element from parent to child."""
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/>'
            f'<child link="{child}"/></joint>\n')


def in_joint(j, old, new, text=BASE):
    """Edit ``old`` -> ``new`` inside joint j1 or j2 only (of BASE, or of ``text``)."""
    block = {'j1': J1, 'j2': J2}[j]
    return edit(block, edit(old, new, block), text)


BAD_URDFS = {
    # id: (URDF text, regex the message must match)
    'malformed_xml': (BASE.replace('</robot>', ''), r'malformed XML'),
    'root_not_robot': ('<model name="arm"><link name="a"/></model>',
                       r'root element is <model>, expected <robot>'),
    'link_without_name': (edit('<link name="b">', '<link>'),
                          r'a <link> element has no name'),
    'joint_without_name': (edit('<joint name="j2" type', '<joint type'),
                           r'a <joint> element has no name'),
    'duplicate_link': (edit('<link name="b">', '<link name="a">'),
                       r"duplicate link name 'a'"),
    'duplicate_joint': (edit('<joint name="j2"', '<joint name="j1"'),
                        r"duplicate joint name 'j1'"),
    'missing_parent_element': (in_joint('j2', '<parent link="a"/>', ''),
                               r"joint 'j2': has no <parent> element"),
    'missing_child_element': (in_joint('j2', '<child link="b"/>', ''),
                              r"joint 'j2': has no <child> element"),
    'parent_without_link_attribute': (in_joint('j2', '<parent link="a"/>', '<parent/>'),
                                      r"joint 'j2': <parent> has no link attribute"),
    'parent_link_missing': (in_joint('j2', '<parent link="a"/>', '<parent link="ghost"/>'),
                            r"joint 'j2': parent link 'ghost' does not exist"),
    'child_link_missing': (in_joint('j2', '<child link="b"/>', '<child link="ghost"/>'),
                           r"joint 'j2': child link 'ghost' does not exist"),
    'parent_is_child': (in_joint('j2', '<parent link="a"/>', '<parent link="b"/>'),
                        r"joint 'j2': parent and child are the same link 'b'"),
    'cycle_every_link_has_parent': (add(joint('j3', 'b', 'base')),
                                    r'no root link: joints j1, j2, j3 form a cycle'),
    'cycle_detached_from_root': (add('<link name="c"/><link name="d"/>'
                                     + joint('jc', 'c', 'd') + joint('jd', 'd', 'c')),
                                 r"links c, d are not connected to the root link 'base': "
                                 r'joints jc, jd form a cycle'),
    'no_links': ('<robot name="empty"/>', r'the robot has no links'),
    'two_roots': (add('<link name="orphan"/>'), r'several root links \(base, orphan\)'),
    'link_with_two_parents': (add(joint('j3', 'base', 'b')),
                              r"joint 'j3': link 'b' is already the child of joint 'j2'"),
    'unknown_joint_type': (edit('type="prismatic"', 'type="hinge"'),
                           r"joint 'j2': unknown joint type 'hinge'"),
    'joint_without_type': (edit('<joint name="j2" type="prismatic">', '<joint name="j2">'),
                           r"joint 'j2': has no type attribute"),
    'floating': (edit('type="prismatic"', 'type="floating"'),
                 r"joint 'j2': a floating joint is supported only as the one joint of the "
                 r'root link'),
    'planar': (edit('type="prismatic"', 'type="planar"'),
               r"joint 'j2': a planar joint is supported only as the one joint of the root "
               r'link'),
    'mimic_of_missing_joint': (in_joint('j2', '<axis', '<mimic joint="j9"/><axis'),
                               r"<mimic> names joint\(s\) that do not exist: joint 'j2' "
                               r'<mimic joint="j9">'),
    'mimic_of_itself': (in_joint('j2', '<axis', '<mimic joint="j2"/><axis'),
                        r"joint 'j2': <mimic> tags form a cycle: j2 -> j2"),
    'mimic_cycle': (in_joint('j1', '<axis', '<mimic joint="j2"/><axis',
                             in_joint('j2', '<axis', '<mimic joint="j1"/><axis')),
                    r"joint 'j1': <mimic> tags form a cycle: j1 -> j2 -> j1"),
    'mimic_of_fixed_joint': (add('<link name="c"/>' + joint('jf', 'b', 'c')).replace(
        '<axis xyz="1 0 0"/>', '<mimic joint="jf"/><axis xyz="1 0 0"/>'),
        r"joint 'j2': <mimic joint=\"jf\"> names a fixed joint"),
    'mimic_without_joint': (in_joint('j2', '<axis', '<mimic multiplier="2"/><axis'),
                            r"joint 'j2': <mimic> has no joint attribute"),
    'mimic_nan_multiplier': (in_joint('j2', '<axis', '<mimic joint="j1" multiplier="nan"/><axis'),
                             r"joint 'j2': <mimic multiplier=\"nan\"> is not finite"),
    'mimic_inf_offset': (in_joint('j2', '<axis', '<mimic joint="j1" offset="-inf"/><axis'),
                         r"joint 'j2': <mimic offset=\"-inf\"> is not finite"),
    'mimic_text_multiplier': (in_joint('j2', '<axis', '<mimic joint="j1" multiplier="x"/><axis'),
                              r"joint 'j2': <mimic multiplier=\"x\"> is not numeric"),
    'axis_without_xyz': (edit('<axis xyz="0 0 1"/>', '<axis/>'),
                         r"joint 'j1': <axis> has no xyz attribute"),
    'zero_axis': (edit('<axis xyz="0 0 1"/>', '<axis xyz="0 0 0"/>'),
                  r"joint 'j1': <axis> is zero"),
    'negative_mass': (edit('<mass value="2.0"/>', '<mass value="-2.0"/>'),
                      r"link 'a': mass -2\.0 must be finite and >= 0"),
    'nan_mass': (edit('<mass value="2.0"/>', '<mass value="nan"/>'),
                 r"link 'a': <mass value=\"nan\"> is not finite"),
    'inf_in_origin': (in_joint('j1', 'xyz="0 0 0.1"', 'xyz="0 inf 0.1"'),
                      r"joint 'j1': <origin xyz=\"0 inf 0.1\"> is not finite"),
    'non_numeric_xyz': (in_joint('j1', 'xyz="0 0 0.1"', 'xyz="1 a 0"'),
                        r"joint 'j1': <origin xyz=\"1 a 0\"> is not numeric"),
    'non_numeric_mass': (edit('<mass value="2.0"/>', '<mass value="heavy"/>'),
                         r"link 'a': <mass value=\"heavy\"> is not numeric"),
    'non_numeric_limit': (edit('effort="50"', 'effort="lots"'),
                          r"joint 'j1': <limit effort=\"lots\"> is not numeric"),
    'wrong_count_xyz': (in_joint('j1', 'xyz="0 0 0.1"', 'xyz="1 2"'),
                        r"joint 'j1': <origin xyz=\"1 2\"> needs 3 number\(s\), got 2"),
    'inertia_not_psd': (edit(A_INERTIA, A_INERTIA.replace('ixx="0.1"', 'ixx="-1"')),
                        r"link 'a': inertia tensor is not positive semidefinite"),
    'inertia_triangle': (edit(A_INERTIA, '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" '
                                         'izz="3"/>'),
                         r"link 'a': principal moments .* violate the triangle inequality"),
    'revolute_without_limit': (edit(J1_LIMIT, ''),
                               r"joint 'j1': a revolute joint needs a <limit> element"),
    'prismatic_without_limit': (edit(J2_LIMIT, ''),
                                r"joint 'j2': a prismatic joint needs a <limit> element"),
    'limit_without_effort': (edit(J1_LIMIT, J1_LIMIT.replace(' effort="50"', '')),
                             r"joint 'j1': <limit> has no effort attribute"),
    'limit_without_velocity': (edit(J1_LIMIT, J1_LIMIT.replace(' velocity="3"', '')),
                               r"joint 'j1': <limit> has no velocity attribute"),
    'inertial_without_mass': (edit('<mass value="2.0"/>', ''),
                              r"link 'a': <inertial> has no <mass> element"),
    'inertia_without_izz': (edit(A_INERTIA, A_INERTIA.replace(' izz="0.02"', '')),
                            r"link 'a': <inertia> has no izz attribute"),
    'robot_without_name': (edit('<robot name="arm">', '<robot>'),
                           r'<robot> has no name attribute'),
    'two_axes': (in_joint('j1', '<axis', '<axis xyz="1 0 0"/><axis'),
                 r"joint 'j1' has more than one <axis> element"),
    'mass_without_value': (edit('<mass value="2.0"/>', '<mass/>'),
                           r"link 'a': <mass> has no value attribute"),
    'negative_effort': (edit('effort="50"', 'effort="-5"'),
                        r"joint 'j1': <limit> effort -5\.0 must be >= 0"),
    'negative_velocity': (edit('velocity="0.5"', 'velocity="-1"'),
                          r"joint 'j2': <limit> velocity -1\.0 must be >= 0"),
    'negative_damping': (in_joint('j1', '<axis', '<dynamics damping="-1"/><axis'),
                         r"joint 'j1': <dynamics> damping -1\.0 must be >= 0"),
}


@pytest.mark.parametrize('xml, pattern', list(BAD_URDFS.values()), ids=list(BAD_URDFS))
def test_bad_urdf_raises_model_error_naming_culprit(xml, pattern):
    with pytest.raises(ModelError, match=pattern) as info:
        RobotModel.from_urdf_string(xml, source=SOURCE)
    assert str(info.value).startswith(f'{SOURCE}: '), 'message must name the source'


@pytest.mark.parametrize('case', ['negative_mass', 'nan_mass'])
def test_bad_mass_is_an_error_even_with_inertia_check_warn(case):
    """inertia_check='warn' loads non-physical tensors; a mass below 0 or not finite never."""
    xml, pattern = BAD_URDFS[case]
    with pytest.raises(ModelError, match=pattern):
        RobotModel.from_urdf_string(xml, source=SOURCE, inertia_check='warn')


def mimic_chain(couplings) -> str:
    """Return BASE with joints m1, m2, ... after j2, each mimicking the one before (j2 first)."""
    joints, parent = [], 'b'
    for k, (a, b) in enumerate(couplings, start=1):
        follows = 'j2' if k == 1 else f'm{k - 1}'
        joints.append(f'<link name="l{k}"/><joint name="m{k}" type="revolute"><parent '
                      f'link="{parent}"/><child link="l{k}"/><axis xyz="0 0 1"/>{J1_LIMIT}'
                      f'<mimic joint="{follows}" multiplier="{a}" offset="{b}"/></joint>')
        parent = f'l{k}'
    return add(''.join(joints))


@pytest.mark.parametrize('couplings', [
    [(1e15, 0.0)] * 21,                     # multiplier 1e15 ** 21 overflows, 1e15 ** 20 not
    [(1e-15, 1e15)] + [(1e15, 0.0)] * 20,   # offset 1e15 * 1e15 ** 20, multiplier 1e285
], ids=['multiplier', 'offset'])
def test_a_chain_of_mimics_that_overflows_is_refused_by_its_first_joint_that_does(couplings):
    """Each <mimic> is within 1e15; composed along a chain of 21, the result is not finite."""
    RobotModel.from_urdf_string(mimic_chain(couplings[:-1]), source=SOURCE)
    with pytest.raises(ModelError, match=rf"^{SOURCE}: joint 'm21': the chain of <mimic> tags "
                       r'm21 -> m20 -> .* -> m1 -> j2 gives a non-finite multiplier or offset'):
        RobotModel.from_urdf_string(mimic_chain(couplings), source=SOURCE)


def test_a_chain_of_mimics_into_a_cycle_names_the_cycle_only():
    """j1 follows j2, which with m1 forms a cycle: the message names j1 and the cycle."""
    text = in_joint('j2', '<axis', '<mimic joint="m1"/><axis', mimic_chain([(1.0, 0.0)]))
    text = in_joint('j1', '<axis', '<mimic joint="j2"/><axis', text)
    with pytest.raises(ModelError, match=r"joint 'j1': <mimic> tags form a cycle: "
                                         r'j2 -> m1 -> j2$'):
        RobotModel.from_urdf_string(text, source=SOURCE)


B_INERTIA = '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/>'


@pytest.mark.parametrize('old, within, beyond, pattern', [
    ('izz="0.02"', 'izz="0.03000000005"', 'izz="0.0300000005"', 'violate the triangle inequality'),
    ('ixx="0.01"', 'ixx="-5e-11"', 'ixx="-5e-10"', 'not positive semidefinite'),
], ids=['triangle', 'psd'])
def test_inertia_tolerance_is_1e_9_of_the_models_largest_moment(old, within, beyond, pattern):
    """
    Link b's moments are (0.01, 0.02, 0.02), the model's largest moment 0.1 (link a).

    The tolerance is INERTIA_TOL (1e-9) times 0.1: a violation of half that loads, one of
    five times that is refused.
    """
    RobotModel.from_urdf_string(edit(B_INERTIA, B_INERTIA.replace(old, within)), source=SOURCE)
    with pytest.raises(ModelError, match=rf"^{SOURCE}: link 'b': .*{pattern}.*tolerance 1e-10"):
        RobotModel.from_urdf_string(edit(B_INERTIA, B_INERTIA.replace(old, beyond)),
                                    source=SOURCE)


def test_more_than_five_other_failing_links_are_counted():
    """The first failing link in full, five others by name, the rest as 'and N more'."""
    bad = '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="3"/>'
    parents = ['b'] + [f'c{k}' for k in range(6)]
    chain = ''.join(f'<link name="c{k}"><inertial><mass value="1"/>{bad}</inertial></link>'
                    f'<joint name="k{k}" type="revolute"><parent link="{parent}"/>'
                    f'<child link="c{k}"/><axis xyz="0 0 1"/>{J1_LIMIT}</joint>'
                    for k, parent in enumerate(parents))
    with pytest.raises(ModelError) as info:
        RobotModel.from_urdf_string(add(chain), source=SOURCE)
    message = str(info.value)
    assert message.startswith(f"{SOURCE}: link 'c0': principal moments"), message
    assert "; 6 more link(s) also fail: 'c1', 'c2', 'c3', 'c4', 'c5' and 1 more." in message, \
        message
    with pytest.raises(ModelError) as info:      # five others: all named, none counted
        RobotModel.from_urdf_string(add(chain.rsplit('<link name="c6">', 1)[0]), source=SOURCE)
    assert "; 5 more link(s) also fail: 'c1', 'c2', 'c3', 'c4', 'c5'. No rigid body" in \
        str(info.value), str(info.value)


def test_base_urdf_is_valid():
    model = RobotModel.from_urdf_string(BASE)
    assert model.joint_names == ('j1', 'j2')
    assert model.total_mass == pytest.approx(3.0)


@pytest.mark.parametrize('xml', [b'<robot name="arm"/>', None, 42, ['<robot/>']],
                         ids=['bytes', 'none', 'int', 'list'])
def test_non_text_input(xml):
    with pytest.raises(ModelError, match=rf'{SOURCE}: URDF must be text, got '
                                         rf'{type(xml).__name__}'):
        RobotModel.from_urdf_string(xml, source=SOURCE)


@pytest.mark.parametrize('gravity', [(0.0, -9.81), (0, 0, 0, -9.81), (0, 0, float('nan')),
                                     ('a', 'b', 'c'), None, {}],
                         ids=['two', 'four', 'nan', 'text', 'none', 'dict'])
def test_bad_gravity(gravity):
    with pytest.raises(ModelError, match=r'gravity must be 3 finite numbers'):
        RobotModel.from_urdf_string(BASE, gravity=gravity)
    model = RobotModel.from_urdf_string(BASE)       # a copy with another gravity: the same
    with pytest.raises(ModelError, match=r'^gravity must be 3 finite numbers, got '):
        model.with_gravity(gravity)


@pytest.mark.parametrize('joint_names, pattern', [
    (['j1', 'nope'], r"joint_names: unknown or non-movable joint\(s\) \['nope'\]"),
    (['j1'], r"joint_names: missing movable joint\(s\) \['j2'\]"),
    (['j1', 'j2', 'j1'], r"joint_names: duplicate joint\(s\) \['j1'\]"),
], ids=['unknown', 'missing', 'duplicate'])
def test_bad_joint_names(joint_names, pattern):
    with pytest.raises(ModelError, match=pattern):
        RobotModel.from_urdf_string(BASE, joint_names=joint_names)


def test_fixed_joint_in_joint_names():
    xml = add('<link name="tool"/>' + joint('tool_mount', 'b', 'tool'))
    with pytest.raises(ModelError, match=r"non-movable joint\(s\) \['tool_mount'\]"):
        RobotModel.from_urdf_string(xml, joint_names=['j1', 'j2', 'tool_mount'])


def test_unknown_link_in_jacobians():
    model = RobotModel.from_urdf_string(BASE)
    with pytest.raises(ModelError, match=r"unknown link 'nope'"):
        model.jacobians(np.zeros(2), 'nope')


def test_unreadable_file(tmp_path):
    path = tmp_path / 'no_such.urdf'
    with pytest.raises(ModelError, match=r'cannot read URDF file .*no_such\.urdf'):
        RobotModel.from_urdf_file(path)
    with pytest.raises(ModelError, match=rf'cannot read URDF file {tmp_path}'):
        RobotModel.from_urdf_file(tmp_path)     # a directory
    binary = tmp_path / 'binary.urdf'
    binary.write_bytes(b'\xff\xfe\x00<robot')
    with pytest.raises(ModelError, match=r'binary\.urdf'):
        RobotModel.from_urdf_file(binary)


def test_bad_file_content_names_the_file(tmp_path):
    path = tmp_path / 'arm.urdf'
    path.write_text(edit('<mass value="2.0"/>', '<mass value="-2.0"/>'))
    with pytest.raises(ModelError, match=rf"^{path}: link 'a': mass"):
        RobotModel.from_urdf_file(path)


# ----------------------------------------------------------------- DH tables
def dh_row(**kw):
    values = dict(joint='j1', a=0.5, mass=1.0, com=(-0.25, 0.0, 0.0),
                  inertia=np.diag([0.01, 0.02, 0.02]))
    values.update(kw)
    return DHRow(**values)


BAD_DH = {
    'inertia_not_symmetric': ([dh_row(inertia=[[0.1, 0.01, 0], [0, 0.1, 0], [0, 0, 0.1]])],
                              r"DH row 1 \(joint 'j1'\): inertia tensor is not symmetric"),
    'inertia_wrong_shape': ([dh_row(inertia=np.eye(2))],
                            r"DH row 1 \(joint 'j1'\): inertia must be a finite 3 x 3"),
    'negative_mass': ([dh_row(), dh_row(joint='j2', mass=-1.0)],
                      r"DH row 2 \(joint 'j2'\): mass must be >= 0"),
    'bad_type': ([dh_row(type='spherical')],
                 r"DH row 1 \(joint 'j1'\): type must be 'revolute' or 'prismatic', "
                 r"got 'spherical'"),
    'non_numeric_parameter': ([dh_row(a='long')],
                              r"DH row 1 \(joint 'j1'\): parameters must be finite numbers"),
    'non_numeric_limit': ([dh_row(lower='low')],
                          r"DH row 1 \(joint 'j1'\): parameters must be finite numbers"),
    'com_wrong_length': ([dh_row(com=(0.0, 0.0))],
                         r"DH row 1 \(joint 'j1'\): com must be 3 numbers"),
    'nan_parameter': ([dh_row(alpha=float('nan'))],
                      r"DH row 1 \(joint 'j1'\): parameters must be finite numbers"),
    'empty_table': ([], r'DH table is empty'),
}


@pytest.mark.parametrize('rows, pattern', list(BAD_DH.values()), ids=list(BAD_DH))
def test_bad_dh_table(rows, pattern):
    with pytest.raises(ModelError, match=pattern):
        RobotModel.from_dh(rows)


# ----------------------------------------------------------------- valid but unusual
def test_massless_leaf_link_loads_with_warning(caplog):
    xml = edit('<mass value="1.0"/>', '<mass value="0"/>')
    xml = edit('<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/>',
               '<inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/>', xml)
    with caplog.at_level(logging.WARNING, logger='kron_dynamics'):
        model = RobotModel.from_urdf_string(xml, source=SOURCE)
    assert model.joint_names == ('j1', 'j2')
    warnings = [r for r in caplog.records
                if r.name == 'kron_dynamics' and r.levelno == logging.WARNING]
    assert any("joint 'j2'" in r.getMessage() and SOURCE in r.getMessage()
               for r in warnings), [r.getMessage() for r in warnings]
    caplog.clear()      # armature (a rotor) on that joint makes M regular: nothing to say
    with caplog.at_level(logging.WARNING, logger='kron_dynamics'):
        model = RobotModel.from_urdf_string(xml, source=SOURCE, armature=[0.0, 0.05])
    assert not [r.getMessage() for r in caplog.records if r.name == 'kron_dynamics']
    assert np.linalg.eigvalsh(model.mass_matrix(np.array([0.3, 0.1]))).min() > 0


def test_a_joint_whose_only_mass_is_on_a_mimic_of_multiplier_0_is_warned_about(caplog):
    """
    j1 moves a massless link, and mimic m (another branch) only through its multiplier.

    With multiplier 0 m stands still whatever j1 does: M[j1, j1] = 0, one warning; with 1,
    j1 turns m's body: no warning.
    """
    inertia = '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>'
    limit = '<limit lower="-1" upper="1" effort="1" velocity="1"/>'

    def branches(multiplier):
        return (
            '<robot name="branches"><link name="base"/><link name="a"/>'
            f'<link name="c"><inertial><origin xyz="0.2 0 0"/><mass value="1"/>{inertia}'
            f'</inertial></link><link name="d"><inertial><mass value="1"/>{inertia}'
            '</inertial></link><joint name="j1" type="revolute"><parent link="base"/>'
            f'<child link="a"/><axis xyz="0 0 1"/>{limit}</joint>'
            '<joint name="m" type="revolute"><parent link="base"/><child link="c"/>'
            f'<origin xyz="0.5 0 0"/><axis xyz="0 0 1"/>{limit}'
            f'<mimic joint="j1" multiplier="{multiplier}" offset="0.3"/></joint>'
            '<joint name="j2" type="revolute"><parent link="base"/><child link="d"/>'
            f'<axis xyz="0 1 0"/>{limit}</joint></robot>')
    for multiplier, expected in ((0.0, ["branches.urdf: joint 'j1' moves no mass or inertia: "
                                        'M is singular']), (1.0, [])):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger='kron_dynamics'):
            model = RobotModel.from_urdf_string(branches(multiplier), source='branches.urdf')
        assert [r.getMessage() for r in caplog.records] == expected, multiplier
        assert (model.mass_matrix([0.1, 0.2])[0, 0] > 0) == bool(multiplier)


def test_root_link_inertia_loads_and_does_not_affect_mass_matrix():
    heavy_root = edit('<link name="base"/>',
                      '<link name="base"><inertial><origin xyz="1 2 3" rpy="0 0 0"/>'
                      '<mass value="100"/><inertia ixx="5" ixy="0" ixz="0" iyy="5" iyz="0" '
                      'izz="5"/></inertial></link>')
    plain = RobotModel.from_urdf_string(BASE)
    model = RobotModel.from_urdf_string(heavy_root)
    assert model.root_link == 'base'
    q = np.array([0.3, 0.1])
    np.testing.assert_allclose(model.mass_matrix(q), plain.mass_matrix(q), rtol=0, atol=1e-14)
    np.testing.assert_allclose(model.gravity_torque(q), plain.gravity_torque(q), atol=1e-12)


def test_continuous_joint_without_limit_loads():
    xml = edit(J1_LIMIT, '').replace('type="revolute"', 'type="continuous"')
    model = RobotModel.from_urdf_string(xml)
    info = model.joints['j1']
    assert info.type == 'continuous'
    assert (info.lower, info.upper, info.effort) == (-np.inf, np.inf, np.inf)


def test_link_without_inertial_loads():
    xml = edit(BASE[BASE.index('    <inertial>'):BASE.index('  <link name="b">')],
               '  </link>\n')
    model = RobotModel.from_urdf_string(xml)
    assert model.n == 2
    assert model.total_mass == pytest.approx(1.0)
    M = model.mass_matrix(np.zeros(2))
    assert np.all(np.linalg.eigvalsh(M) > 0)


@pytest.mark.parametrize('xml_edit,message', [
    (('<limit ', '<limit lower="0" upper="1" effort="1" velocity="1"/><limit '), '<limit>'),
    (('<mass ', '<mass value="2"/><mass '), '<mass>'),
])
def test_repeated_single_elements_are_refused(xml_edit, message):
    xml = RP_ARM.replace(*xml_edit, 1)
    with pytest.raises(ModelError, match=f'more than one {message}'):
        RobotModel.from_urdf_string(xml)


@pytest.mark.parametrize('kwargs,message,argument', [
    ({'joint_names': 5}, 'joint_names must be a list', None),
    ({'joint_names': 'theta1'}, 'joint_names must be a list', None),
    ({'armature': [1.0]}, 'armature must have shape', 'armature'),
    ({'armature': ['a', 'b']}, 'armature', 'armature'),
    ({'armature': [-1.0, 0.0]}, 'armature must be >= 0', 'armature'),
    ({'locked': {'ghost': 0.0}}, r"^x\.urdf: cannot lock \['ghost'\]: not movable", 'locked'),
    ({'locked': {'theta1': 'a'}}, r"^x\.urdf: cannot lock joint 'theta1' at 'a'", 'locked'),
    ({'locked': ['theta1']}, r'^x\.urdf: locked joints must be a mapping', 'locked'),
])
def test_bad_model_arguments(kwargs, message, argument):
    """A ModelError names the argument at fault (ModelError.argument), None for the others."""
    with pytest.raises(ModelError, match=message) as info:
        RobotModel.from_urdf_string(RP_ARM, source='x.urdf', **kwargs)
    assert info.value.argument == argument


def test_with_armature_refuses_a_mapping_of_non_numbers_by_joint():
    """{joint: value}: a string, None or a bool is a ModelError naming the joint."""
    model = RobotModel.from_urdf_string(RP_ARM)
    for value in ('a', None, True):
        with pytest.raises(ModelError, match=rf"^armature\['theta1'\] must be a number, got "
                                             rf'{value!r}$') as info:
            model.with_armature({'theta1': value})
        assert info.value.argument == 'armature'
    with pytest.raises(ModelError, match=r"^armature: unknown joint\(s\) \['x'\]") as info:
        model.with_armature({'x': 1.0})
    assert info.value.argument == 'armature'
    assert model.with_armature({'d2': 0.5}).armature.tolist() == [0.0, 0.5]
    with pytest.raises(ModelError, match='^bad$') as info:     # not the loader's argument
        raise ModelError('bad')
    assert info.value.argument is None and info.value.args == ('bad',)


def test_an_inverted_limit_is_read_as_unlimited_with_one_warning(caplog):
    """
    Issue 21: lower > upper, which urdfdom and Pinocchio load (some simulators mean no limit).

    The dynamics do not depend on it: the same M and tau as with the limit as written.
    """
    inverted = edit(J1_LIMIT, J1_LIMIT.replace('lower="-2"', 'lower="3"'))
    with caplog.at_level(logging.WARNING, logger='kron_dynamics'):
        model = RobotModel.from_urdf_string(inverted, source='inverted.urdf')
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and lines[0].startswith(
        'inverted.urdf: <limit> lower > upper at joint(s) j1 (3 > 2): read as unlimited'), lines
    lower, upper = model.position_limits
    assert lower[0] == -np.inf and upper[0] == np.inf and lower[1] == 0.0
    plain = RobotModel.from_urdf_string(BASE)
    q = np.array([0.3, 0.2])
    np.testing.assert_array_equal(model.mass_matrix(q), plain.mass_matrix(q))


def test_undeclared_namespace_prefixes_are_declared_with_one_warning(caplog):
    """
    Issue 21: Drake's URDFs use ``drake:`` elements and attributes without declaring it.

    urdfdom and Pinocchio read such files; here one warning names the prefix, and the
    dynamics are those of the document without the Drake markup (Pinocchio too).
    """
    import pinocchio as pin
    drake = edit('<robot name="arm">', '<robot name="arm"><drake:collision_filter_group '
                 'name="g"><drake:member link="a"/></drake:collision_filter_group>')
    drake = edit('<joint name="j1" type="revolute">', '<joint name="j1" type="revolute" '
                 'drake:ignored="1"><drake:rotor_inertia value="0.5"/>', drake)
    assert drake.count('drake:') == 5
    with caplog.at_level(logging.WARNING, logger='kron_dynamics'):
        model = RobotModel.from_urdf_string(drake, source='drake.urdf')
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and lines[0].startswith(
        "drake.urdf: XML namespace prefix(es) ['drake'] used but never declared"), lines
    plain = RobotModel.from_urdf_string(BASE)
    q, qd = np.array([0.3, 0.2]), np.array([0.5, -0.1])
    np.testing.assert_array_equal(model.inverse_dynamics(q, qd, qd),
                                  plain.inverse_dynamics(q, qd, qd))
    pm = pin.buildModelFromXML(drake)
    np.testing.assert_allclose(model.inverse_dynamics(q, qd, qd),
                               pin.rnea(pm, pm.createData(), q, qd, qd), rtol=1e-12)
    # a prefix used in a truly malformed document is still refused as malformed
    with pytest.raises(ModelError, match='malformed XML'):
        RobotModel.from_urdf_string(drake.replace('</robot>', ''), source='drake.urdf')


def test_constructor_arguments_are_refused_by_name():
    """A complex gravity, arrays for root_joint or inertia_check, lock_others not a bool, DH."""
    path = URDF_DIR / 'gripper_arm.urdf'
    with pytest.raises(ModelError, match=r'^gravity must be 3 finite numbers, got array'):
        RobotModel.from_urdf_file(path, gravity=np.array([0.0, 0.0, -9.81j]))   # not its real
    with pytest.raises(ModelError, match=r"^root_joint must be one of \['fixed', 'floating', "
                                         r"'planar'\] or None"):
        RobotModel.from_urdf_file(path, root_joint=np.array(['floating', 'planar']))
    with pytest.raises(ModelError, match=r"^inertia_check must be one of \('error', 'warn'\)"):
        RobotModel.from_urdf_file(path, inertia_check=np.array(['error', 'warn']))
    for value in ('yes', None, 2, np.array([True, False])):
        with pytest.raises(ValueError, match='^lock_others must be True or False, got '):
            RobotModel.from_urdf_file(path, joint_names=['shoulder'], lock_others=value)
    rows = [DHRow('j1', a=0.5, mass=1.0), DHRow('j2', a=0.3, mass=1.0)]
    assert RobotModel.from_dh(iter(rows)).joint_names == ('j1', 'j2')    # read once
    with pytest.raises(ModelError, match=r'^DH row 2: expected a DHRow .*, got dict '):
        RobotModel.from_dh([rows[0], {'joint': 'j2'}])
    with pytest.raises(ModelError, match='^from_dh: rows must be a list of DHRow, got 5$'):
        RobotModel.from_dh(5)
    floating = RobotModel.from_urdf_file(path, root_joint='floating')
    with pytest.raises(ValueError, match=r'^base_box must be a finite number >= 0 \(m\), got '
                                         r'1e\+308$'):
        floating.random_configuration(base_box=1e308)     # uniform(-box, box) would overflow
    with pytest.raises(ValueError, match=r'^base_box must be a finite number >= 0 \(m\), got '
                                         r'-0\.5$'):
        floating.random_configuration(base_box=-0.5)
