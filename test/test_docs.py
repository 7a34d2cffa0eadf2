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
The documents: generated tables match the committed results, examples run, references resolve.

Runs no benchmark: bench/report.py renders docs/performance.md, docs/reliability.md and the
README's headline block from the committed bench/results/*.json, and they must be exactly the
committed files (a hand edit, or a JSON committed without re-rendering, fails here: `make docs`
fixes it).
"""

import json
import os
from pathlib import Path
import re
import shutil
import sys

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / 'bench'))

import report  # noqa: E402  (bench/, not a package)

DOCS = sorted((REPO / 'docs').glob('*.md'))
PAGES = [REPO / 'README.md', *DOCS]
# a paper's id (000 ... 009) as a word; not a number's digits nor its thousands group (1,008)
PAPER_ID = re.compile(r'(?<![\d.\w])(?<!\d,)(00\d)(?![\d.\w])')


def test_generated_files_are_what_the_committed_results_give():
    stale = report.stale()
    assert not stale, (f'{stale} differ from what bench/report.py renders from '
                       'bench/results/*.json: run `make docs` (never edit a generated table '
                       'by hand; the text around the tables is edited in the Markdown)')


def test_a_changed_result_changes_the_rendered_tables(tmp_path):
    results = tmp_path / 'results'
    shutil.copytree(report.RESULTS, results)
    data = json.loads((results / 'soak.json').read_text())
    data['nonfinite_outputs'] = 7
    data['meta'] = {'git': 'abc1234', 'date': '2031-01-02T03:04:05+00:00',
                    'cpu': 'Test CPU', 'cpu_count': 64, 'machine': 'x86_64'}
    (results / 'soak.json').write_text(json.dumps(data))
    committed = (REPO / 'docs' / 'reliability.md').read_text(encoding='utf-8')
    rendered = report.render_all(results)['docs/reliability.md']
    assert rendered != committed
    soak = rendered[rendered.index('## Soak'):rendered.index('## Faults')]
    assert '| 7 |' in soak
    assert 'revision `abc1234` · 2031-01-02 · Test CPU (64 cores, x86_64)' in soak


def test_a_missing_result_is_named_instead_of_failing(tmp_path):
    results = tmp_path / 'results'
    shutil.copytree(report.RESULTS, results)
    (results / 'faults.json').unlink()
    rendered = report.render_all(results)['docs/reliability.md']
    assert 'bench/results/faults.json is missing' in rendered


def test_every_measured_table_names_its_source_revision_and_machine():
    for path in ('docs/performance.md', 'docs/reliability.md'):
        text = (REPO / path).read_text(encoding='utf-8')
        # every table is a generated block; the prose around the blocks is the page's own
        outside = report.BLOCK.sub('', text)
        assert report.BLOCK.search(text) and '|---|' not in outside, path
        for section in text.split('\n## ')[1:]:
            if '|---|' in section and '*Source: ' not in section:
                pytest.fail(f'{path}, section {section.splitlines()[0]!r}: a table without '
                            'its source line')
        for line in text.splitlines():
            if line.startswith('*Source: '):
                assert 'revision' in line and ('cores' in line or 'not recorded' in line), line


def test_a_block_the_renderer_does_not_know_is_named():
    text = ('prose\n<!-- BEGIN generated: no_such_table -->\nold\n'
            '<!-- END generated: no_such_table -->\n')
    with pytest.raises(ValueError, match="marks a block 'no_such_table'.*soak_table"):
        report.fill(text, report.Results())
    # the text around a block is kept as written
    page = ('my prose\n<!-- BEGIN generated: soak_table -->\nold\n'
            '<!-- END generated: soak_table -->\nmore')
    filled = report.fill(page, report.Results())
    assert filled.startswith('my prose\n') and filled.endswith('more') and 'old' not in filled


def test_readme_python_examples_run(monkeypatch):
    """Every ```python block of the README, in order, in one namespace, from the repo root."""
    text = (REPO / 'README.md').read_text(encoding='utf-8')
    blocks = re.findall(r'```python\n(.*?)```', text, re.S)
    assert len(blocks) >= 3
    monkeypatch.chdir(REPO)
    namespace = {}
    for block in blocks:
        exec(compile(block, 'README.md', 'exec'), namespace)


def _anchors(path: Path) -> set:
    """Return the link targets of a Markdown file: heading slugs and explicit ids."""
    text = path.read_text(encoding='utf-8')
    slugs = set()
    for heading in re.findall(r'^#+ (.+)$', text, re.M):
        slug = re.sub(r'[^\w\- ]', '', heading.strip().lower()).replace(' ', '-')
        slugs.add(slug)
    return slugs | set(re.findall(r'<a id="([^"]+)">', text))


def test_relative_links_and_anchors_resolve():
    for page in PAGES:
        text = page.read_text(encoding='utf-8')
        for target in re.findall(r'\]\(([^)\s]+)\)', text):
            if re.match(r'[a-z]+:', target):
                continue
            path, _, anchor = target.partition('#')
            resolved = (page.parent / path).resolve() if path else page
            assert resolved.exists(), f'{page.name}: link to {target}: no such file'
            if anchor and resolved.suffix == '.md':
                assert anchor in _anchors(resolved), f'{page.name}: link to {target}: no anchor'


def test_paper_ids_are_told_from_numbers():
    assert PAPER_ID.findall('[000] eq. 101, 002 and (004); 1,008 bytes, 2.003, 0005, x001') \
        == ['000', '002', '004']


def test_every_paper_id_resolves_to_a_citation():
    readme = (REPO / 'README.md').read_text(encoding='utf-8')
    references = readme[readme.index('\n## References'):]
    cited = set(re.findall(r'<a id="ref-(\d{3})"></a>\*\*\[(\d{3})\]\*\*', references))
    cited = {a for a, b in cited if a == b}
    sources = PAGES + sorted((REPO / 'kron_dynamics').rglob('*.py')) + sorted(
        (REPO / 'bench').glob('*.py'))
    used = {}
    for path in sources:
        for paper in PAPER_ID.findall(path.read_text(encoding='utf-8')):
            used.setdefault(paper, path.relative_to(REPO))
    assert {'000', '002', '003', '004'} <= set(used)
    missing = {paper: str(path) for paper, path in used.items() if paper not in cited}
    assert not missing, f'paper ids without a citation in the README References: {missing}'
    seeds = REPO.parent / 'shared' / 'seeds'
    if seeds.is_dir():   # the papers themselves, where the workspace has them
        for paper in cited:
            assert list(seeds.glob(f'{paper}_*.txt')), f'[{paper}] is not in {seeds}'


def test_bench_scripts_stamp_their_results_and_render_the_docs():
    for script in ('bench_dynamics.py', 'bench_symbolic.py', 'ros_latency.py', 'startup.py',
                   'soak.py', 'faults.py', 'bench_loading.py'):
        text = (REPO / 'bench' / script).read_text(encoding='utf-8')
        # write_result stamps the JSON and re-renders the docs (test_write_result_...)
        assert 'provenance.write_result(' in text or (
            'provenance.stamp()' in text and 'provenance.regenerate_docs(' in text), script
    makefile = (REPO / 'Makefile').read_text(encoding='utf-8')
    bench = makefile[makefile.index('\nbench:'):]
    bench = bench[:bench.index('\n\n')]
    for script in ('bench_dynamics.py', 'bench_symbolic.py', 'ros_latency.py', 'startup.py',
                   'soak.py', 'faults.py', 'bench_loading.py', 'report.py'):
        assert f'bench/{script}' in bench, f'make bench does not run {script}'


@pytest.mark.slow   # child processes (git)
def test_stamp_says_dirty_when_the_measured_sources_changed(tmp_path, monkeypatch):
    """The stamp read git in bench/, where none of its sources are: never '+dirty'."""
    import subprocess
    from lib import provenance
    for source in ('kron_dynamics', 'bench', 'config', 'urdf'):
        assert (provenance.REPO / source).is_dir(), f'{source} is not under {provenance.REPO}'
    (tmp_path / 'bench' / 'results').mkdir(parents=True)
    (tmp_path / 'kron_dynamics').mkdir()
    (tmp_path / 'kron_dynamics' / 'm.py').write_text('x = 1\n')
    (tmp_path / 'bench' / 'results' / 'r.json').write_text('{}\n')
    git = ['git', '-c', 'user.name=t', '-c', 'user.email=t@t', '-C', str(tmp_path)]
    for args in (['init', '-q'], ['add', '-A'], ['commit', '-qm', 'x']):
        subprocess.run(git + args, check=True, capture_output=True, timeout=60)
    monkeypatch.setattr(provenance, 'REPO', tmp_path)
    clean = provenance.git_revision()
    assert re.match(r'^[0-9a-f]{7,}$', clean), clean
    (tmp_path / 'bench' / 'results' / 'r.json').write_text('{"a": 1}\n')
    assert provenance.git_revision() == clean        # a result is not a measured source
    (tmp_path / 'kron_dynamics' / 'm.py').write_text('x = 2\n')
    assert provenance.git_revision() == clean + '+dirty'


@pytest.mark.slow   # a child process (git)
def test_write_result_stamps_the_json_and_renders_the_docs(tmp_path, monkeypatch):
    from lib import provenance
    rendered = []
    monkeypatch.setattr(provenance, 'regenerate_docs', lambda log=print: rendered.append(1))
    path = provenance.write_result(tmp_path / 'out', 'x', {'quick': True}, {'rows': [1, 2]},
                                   log=lambda msg: None)
    assert path == tmp_path / 'out' / 'x.json'
    data = json.loads(path.read_text())
    assert set(data) == {'meta', 'rows'} and data['rows'] == [1, 2]
    assert set(data['meta']) >= {'git', 'date', 'cpu', 'cpu_count', 'machine', 'quick'}
    assert rendered == [1]


@pytest.mark.slow   # a child process (git)
def test_stamp_names_revision_date_and_machine():
    from lib import provenance
    stamp = provenance.stamp()
    assert set(stamp) >= {'git', 'date', 'cpu', 'cpu_count', 'machine', 'python'}
    assert stamp['cpu_count'] == os.cpu_count()
    assert re.match(r'^([0-9a-f]{7,}(\+dirty)?|unknown)$', stamp['git']), stamp['git']
    assert re.match(r'^\d{4}-\d\d-\d\dT', stamp['date'])
