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
Where symbolic models come from: DH YAML files, the stacker's symbolic table, bundled names.

:func:`load_source` resolves what ``kron-dynamics equations`` accepts.
"""

from pathlib import Path

from ..errors import ModelError
from .model import SymbolicModel


def load_dh_yaml(path_or_text, **options) -> SymbolicModel:
    """Load a DH table YAML file (schema in the module docstring), or YAML text."""
    import yaml
    text, source = path_or_text, '<yaml>'
    if isinstance(path_or_text, Path) or (isinstance(path_or_text, str)
                                          and '\n' not in path_or_text):
        source = str(path_or_text)
        try:
            text = Path(path_or_text).read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise ModelError(f'cannot read DH YAML file {path_or_text}: {exc}') from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ModelError(f'{source}: malformed YAML: {exc}') from None
    if not isinstance(data, dict) or not isinstance(data.get('rows'), list):
        raise ModelError(f"{source}: a DH YAML file is a mapping with a list 'rows' "
                         '(see kron_dynamics.symbolic)')
    keys = {'robot', 'base_xyz', 'base_rpy', 'gravity', 'parameters', 'rows'}
    unknown = sorted(set(data) - keys)
    if unknown:
        raise ModelError(f'{source}: unknown key(s) {unknown}; allowed: {sorted(keys)}')
    if not all(isinstance(r, dict) for r in data['rows']):
        raise ModelError(f'{source}: every entry of rows must be a mapping')
    values = data.get('parameters') or {}
    if not isinstance(values, dict):
        raise ModelError(f'{source}: parameters must be a mapping name: value')
    for k, v in list(values.items()):
        if isinstance(v, str):      # YAML 1.1 reads 2.05e6 (no dot before e+) as a string
            try:
                values[k] = v = float(v)
            except ValueError:
                pass
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ModelError(f"{source}: parameter '{k}' must be a number, got {v!r}")
    name = str(data.get('robot') or Path(source).stem)
    return SymbolicModel.from_dh(
        data['rows'], name, base_xyz=data.get('base_xyz', (0, 0, 0)),
        base_rpy=data.get('base_rpy', (0, 0, 0)), gravity=data.get('gravity', (0, 0, -9.81)),
        parameter_values={str(k): float(v) for k, v in values.items()}, source=source,
        **options)


def stacker_dh_table() -> list:
    """Return the stacker's DH rows (000 Table 1) with the papers' symbols, as dicts."""
    from ..model.machines import stacker_dh_rows
    numeric = stacker_dh_rows()
    symbolic = [
        dict(alpha='pi/2', mass='m1', inertia=['I1x', 'I1y', 'I1z']),
        dict(d='d2', alpha='pi/2', mass='m2', com=[0, 'yG2', 0], inertia=['I2x', 'I2y', 'I2z']),
        dict(a='a3', mass='m3', com=['l3 - a3', 0, 0], inertia=['I3x', 'I3y', 'I3z']),
    ]
    return [dict(joint=row.joint, type=row.type, **entries)
            for row, entries in zip(numeric, symbolic)]


def stacker_parameter_values() -> dict:
    """Return the values of the stacker's symbols (000 Tables 1-2) and g = 9.81."""
    from ..model.machines import STACKER as P
    values = {k: P[k] for k in ('m1', 'm2', 'm3', 'd2', 'yG2', 'a3', 'l3')}
    for body in (1, 2, 3):
        moments = P[f'I{body}'] if body > 1 else (P['I1'],) * 3
        values.update({f'I{body}{a}': float(v) for a, v in zip('xyz', moments)})
    values['g'] = 9.81
    return values


def stacker_symbolic(**options) -> SymbolicModel:
    """
    Return the stacker of 000 (Table 1) with symbolic parameters.

    Symbols m1, m2, m3, d2, yG2, a3, l3, I1x..I1z, I2x..I2z, I3x..I3z and g (values in
    ``parameter_values``). Root ``base_link`` is z up with gravity (0, 0, -g); DH frame 0 is
    ``link0`` (y0 down), the boom tip frame 3 is ``link3``.
    """
    return SymbolicModel.from_dh(stacker_dh_table(), 'stacker', base_rpy=('-pi/2', 0, 0),
                                 gravity=(0, 0, '-g'),
                                 parameter_values=stacker_parameter_values(), **options)


def load_source(source: str, symbolic_parameters: bool = False, **options) -> SymbolicModel:
    """
    Load what ``kron-dynamics equations`` accepts: a URDF file, a DH YAML file or a name.

    Names: ``stacker`` (the symbolic DH stacker) or a bundled URDF (``rover_arm``, ...).
    Without ``symbolic_parameters`` every symbol with a known value is replaced by it.
    """
    path = Path(source)
    if path.is_file():
        if path.suffix.lower() in ('.yaml', '.yml'):
            model = load_dh_yaml(path, **options)
        else:
            return SymbolicModel.from_urdf_file(path, symbolic_parameters=symbolic_parameters,
                                                **options)
    elif source == 'stacker':
        model = stacker_symbolic(**options)
    else:
        from ..resources import data_dir
        urdf = data_dir('urdf') / f'{source}.urdf'
        if not urdf.is_file():
            raise ModelError(f"'{source}' is neither a file nor a bundled machine (stacker or "
                             f"one of {sorted(p.stem for p in data_dir('urdf').glob('*.urdf'))})")
        return SymbolicModel.from_urdf_file(urdf, symbolic_parameters=symbolic_parameters,
                                            **options)
    return model if symbolic_parameters else model.with_parameters()
