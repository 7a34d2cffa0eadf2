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
The layering of docs/architecture.md, checked: who may import whom, no cycles, cheap imports.

Every import statement in the package (module level or inside a function) is an edge; the
layers are the folders. A move that breaks the page fails here.
"""

import ast
from pathlib import Path
import subprocess
import sys

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / 'kron_dynamics'

# layer -> the layers it may import (itself included)
ALLOWED = {
    'base': {'base'},
    'model': {'base', 'model'},
    'algorithms': {'base', 'model', 'algorithms'},
    'kernels': {'base', 'model', 'kernels'},
    'facade': {'base', 'model', 'algorithms', 'kernels', 'facade', 'gpu'},
    'gpu': {'base', 'model', 'gpu'},
    'symbolic': {'base', 'model', 'facade', 'symbolic'},
    'identification': {'base', 'model', 'algorithms', 'facade', 'identification'},
    'testing': {'base', 'model', 'testing'},
    'nodes': {'base', 'model', 'facade', 'identification', 'nodes'},
    'demo': {'base', 'model', 'facade', 'identification', 'nodes', 'demo'},
    'cli': {'base', 'model', 'facade', 'symbolic', 'identification', 'demo', 'cli'},
    'package': {'base', 'facade', 'package'},
}
FOLDERS = {'model', 'algorithms', 'kernels', 'symbolic', 'identification', 'testing', 'nodes',
           'demo', 'gpu'}
FILES = {'errors': 'base', 'resources': 'base', 'robot_model': 'facade', 'checks': 'facade',
         'floating_model': 'facade', 'written_out': 'facade', 'cli': 'cli',
         '__init__': 'package'}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix('').parts
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def layer(module: str) -> str:
    parts = module.split('.')
    if len(parts) == 1:
        return 'package'
    return parts[1] if parts[1] in FOLDERS else FILES[parts[1]]


def imports(path: Path) -> set:
    """Return the kron_dynamics modules a file imports, anywhere in it."""
    module = module_name(path)
    package = module if path.name == '__init__.py' else module.rpartition('.')[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split('.')[0] == 'kron_dynamics'}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split('.')
                base = base[:len(base) - node.level + 1]
                target = '.'.join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ''
            if target.split('.')[0] != 'kron_dynamics':
                continue
            for alias in node.names:    # `from . import x` imports the module x
                sub = f'{target}.{alias.name}'
                found.add(sub if (PACKAGE.parent / sub.replace('.', '/')).with_suffix(
                    '.py').exists() or (PACKAGE.parent / sub.replace('.', '/')).is_dir()
                    else target)
    found.discard(module)
    return found


GRAPH = {module_name(p): imports(p) for p in sorted(PACKAGE.rglob('*.py'))}


@pytest.mark.parametrize('module', sorted(GRAPH))
def test_imports_follow_the_layers(module):
    allowed = ALLOWED[layer(module)] | {'package'}    # __version__ and the exceptions
    bad = sorted(t for t in GRAPH[module] if layer(t) not in allowed)
    assert not bad, (f'{module} ({layer(module)}) imports {bad}; docs/architecture.md allows '
                     f'{sorted(allowed)}')


def test_no_import_cycles():
    state = {}

    def visit(module, path):
        state[module] = 'open'
        for target in sorted(GRAPH.get(module, ())):
            if state.get(target) == 'open':
                cycle = path[path.index(target):] + [target]
                pytest.fail('import cycle: ' + ' -> '.join(cycle))
            if target not in state:
                visit(target, path + [target])
        state[module] = 'done'

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])


HEAVY = ('numba', 'scipy', 'sympy', 'rclpy', 'matplotlib')


def _python(code: str) -> str:
    """Return the standard output of ``python -c code`` run from the repository root."""
    return subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          check=True, cwd=PACKAGE.parent).stdout


@pytest.mark.slow   # child processes
@pytest.mark.parametrize('statement, allowed', [
    ('import kron_dynamics', ()),
    ('from kron_dynamics import RobotModel', ()),
    ('import kron_dynamics.symbolic', ('sympy',)),
    ('import kron_dynamics.nodes.entry', ()),    # signal handlers before the heavy imports
    ('import kron_dynamics.gpu', ()),            # numba.cuda only when kernels are made
])
def test_importing_is_cheap(statement, allowed):
    """Importing the package or the facade loads no compiler, ROS or plotting library."""
    code = f'{statement}; import sys; print(sorted(m for m in {HEAVY!r} if m in sys.modules))'
    out = _python(code)
    assert eval(out) == sorted(allowed), out


@pytest.mark.slow
def test_the_cpu_path_never_imports_numba_cuda():
    code = ('import numpy as np, sys; from kron_dynamics import RobotModel; '
            "m = RobotModel.from_urdf_file('urdf/stacker.urdf'); q = np.zeros(3); "
            'm.inverse_dynamics(q, q, q); m.gravity_torque(np.zeros((2, 3))); '
            'print("numba.cuda" in sys.modules)')
    out = _python(code).split()
    assert out == ['False'], out


@pytest.mark.slow
def test_the_facade_loads_kernels_on_first_use():
    code = ('import numpy as np, sys; from kron_dynamics import RobotModel; '
            "m = RobotModel.from_urdf_file('urdf/stacker.urdf'); a = 'numba' in sys.modules; "
            'm.mass_matrix(np.zeros(3)); print(a, "numba" in sys.modules)')
    out = _python(code).split()
    assert out == ['False', 'True']


@pytest.mark.slow   # a child process
def test_kernels_native_stays_the_entry_point_object_after_first_use():
    """Importing kernels/native.py on first use must not replace kernels.native by it."""
    code = ('import numpy as np; from kron_dynamics import RobotModel; '
            "m = RobotModel.from_urdf_file('urdf/stacker.urdf'); m.mass_matrix(np.zeros(3)); "
            'from kron_dynamics.kernels import native; print(type(native).__name__, '
            "callable(native.crba))")
    out = _python(code).split()
    assert out == ['_Native', 'True']


def test_the_page_names_which_kernel_mirrors_which_algorithm():
    """The table of docs/architecture.md against algorithms/ and kernels/, both ways."""
    page = (PACKAGE.parent / 'docs' / 'architecture.md').read_text(encoding='utf-8')
    section = page.split('## Readable and compiled, file by file', 1)[1].split('\n## ', 1)[0]
    readable, compiled = set(), set()
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) < 2 or not cells[0].startswith(('`', '–')):
            continue
        readable |= {name for name in cells[0].split('`')[1::2]}
        compiled |= {name for name in cells[1].split('`')[1::2]}
    for folder, named in (('algorithms', readable), ('kernels', compiled)):
        present = {p.name for p in (PACKAGE / folder).glob('*.py') if p.name != '__init__.py'}
        assert named == present, (f'{folder}/: the page names {sorted(named - present)} that '
                                  f'do not exist and leaves out {sorted(present - named)}')


BENCH = PACKAGE.parent / 'bench'


def _top_level_imports(path: Path) -> set:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split('.')[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split('.')[0])
    return names


@pytest.mark.parametrize('script', sorted(p.name for p in BENCH.glob('*.py')))
def test_no_bench_script_imports_another(script):
    """The page: the scripts only measure; what they share is in bench/lib/."""
    scripts = {p.stem for p in BENCH.glob('*.py')}
    imported = _top_level_imports(BENCH / script) & (scripts - {Path(script).stem})
    assert not imported, f'bench/{script} imports the script(s) {sorted(imported)}'


def test_bench_lib_imports_no_script():
    # provenance.regenerate_docs calls report.write_all: the one script a lib module runs
    scripts = {p.stem for p in BENCH.glob('*.py')} - {'report'}
    for path in sorted((BENCH / 'lib').glob('*.py')):
        imported = _top_level_imports(path) & scripts
        assert not imported, f'bench/lib/{path.name} imports the script(s) {sorted(imported)}'


def written_out(cls, name, doc, kernel, params=None, arrays=()):
    """Assert that cls.name is a table row's method: its name, doc, kernel call, signature."""
    import inspect

    from kron_dynamics.kernels.native import SIGNATURES
    method = getattr(cls, name)
    assert method.__qualname__ == f'{cls.__name__}.{name}', name
    assert method.__doc__ == inspect.cleandoc(doc), name
    assert kernel in SIGNATURES, name
    source = inspect.getsource(method)      # the written-out source, for tracebacks too
    assert f'native.{kernel}(' in source, source
    if params is not None:
        assert source.startswith(f'def {name}(self, {params})'), source
    assert list(inspect.signature(method).parameters)[1:len(arrays) + 1] == list(arrays), name


def test_every_compiled_method_is_its_row_written_out():
    """robot_model._COMPILED: each row is RobotModel's method, its kernel a native entry point."""
    from kron_dynamics import RobotModel
    from kron_dynamics.kernels.native import SIGNATURES
    from kron_dynamics.robot_model import _COMPILED

    assert len(_COMPILED) >= 16
    for name, row in _COMPILED.items():
        written_out(RobotModel, name, row.doc, row.kernel, row.params, row.arrays)
        if not row.mode:     # the general path runs the batch twin (Newton-Euler: _rnea)
            assert f'{row.kernel}_batch' in SIGNATURES, name


def test_every_compiled_moving_base_method_is_its_row_written_out():
    """floating_model._COMPILED_BASE: each row is MovingBase's method, its kernels exist."""
    import inspect

    from kron_dynamics.floating_model import _COMPILED_BASE, MovingBase
    from kron_dynamics.kernels.native import SIGNATURES

    assert len(_COMPILED_BASE) >= 9
    for name, row in _COMPILED_BASE.items():
        written_out(MovingBase, name, row.doc, row.kernel, row.params, row.arrays)
        assert (f'{row.kernel}_batch' in SIGNATURES) == row.batch, name
        moving = row.kernel.replace('floating_', 'moving_')   # a planar base, mimic joints
        if row.moving:
            assert moving in SIGNATURES, name
            assert (f'{moving}_batch' in SIGNATURES) == row.batch, name
    # every other compiled entry point of a moving base is one a row or a helper calls
    source = inspect.getsource(MovingBase)
    for name in ('floating_rnea', 'floating_crba', 'floating_forward_dynamics',
                 'floating_jacobian', 'floating_rnea_derivatives', 'moving_rnea', 'moving_crba',
                 'moving_forward_dynamics', 'moving_jacobian'):
        assert f'native.{name}(' not in source, f'MovingBase calls {name} by hand'


def test_every_coupled_method_is_its_row_written_out():
    """robot_model._COUPLED: each row is CoupledRobotModel's method with RobotModel's signature."""
    import inspect

    from kron_dynamics.robot_model import _COUPLED, CoupledRobotModel, RobotModel

    assert len(_COUPLED) >= 7
    for name, row in _COUPLED.items():
        written_out(CoupledRobotModel, name, row.doc, row.kernel or f'coupled_{name}',
                    arrays=row.arrays)
        assert inspect.signature(getattr(CoupledRobotModel, name)) == \
            inspect.signature(getattr(RobotModel, name)), name
        assert callable(getattr(CoupledRobotModel, f'_general_{name}')), name
    source = inspect.getsource(CoupledRobotModel)      # no compiled call by hand is left
    for kernel in ('coupled_crba', 'coupled_rnea(', 'coupled_forward_dynamics(',
                   'coupled_jacobian', 'coupled_link_pose'):
        assert f'native.{kernel}' not in source, f'CoupledRobotModel calls {kernel} by hand'
