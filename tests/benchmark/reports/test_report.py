"""The benchmark scripts' reports: tables, verdicts with their spread, the
header's commit line."""

import os
import subprocess

import pytest

from variable_mgr.benchmark.reports import markdown
from variable_mgr.benchmark.reports import measure


def test_table_lines():
  lines = markdown.table(['name', 'value'], [['a', '1.00'], ['b', '']], 'lr')
  assert lines == ['| name | value |', '|---|---:|', '| a | 1.00 |',
                   '| b | |']
  assert markdown.table(['x'], [])[1] == '|---|'
  with pytest.raises(ValueError, match='align'):
    markdown.table(['a', 'b'], [], 'l')


def test_spread_text():
  assert (markdown.spread_text(measure.spread([0.50, 0.63, 0.82])) ==
          'median 0.63x, rounds 0.50-0.82')
  assert markdown.spread_text(measure.spread([1.234])) == '1.23x, one round'
  assert (markdown.spread_text(measure.spread([10.0, 12.5]), ' ms', 1) ==
          'median 11.2 ms, rounds 10.0-12.5')


def test_goal_verdict_counts_the_rounds_on_the_other_side():
  assert markdown.goal_verdict(measure.spread([0.5, 0.6, 0.7]), 0.8) == 'met'
  assert (markdown.goal_verdict(measure.spread([0.5, 0.6, 0.9]), 0.65) ==
          'met (1 of 3 rounds above 0.65x)')
  assert (markdown.goal_verdict(measure.spread([0.6, 1.2, 1.3]), 1.1) ==
          '**not met** (1 of 3 rounds at or below 1.10x)')
  assert markdown.goal_verdict(measure.spread([1.2, 1.3]), 1.1) == '**not met**'


def test_verdict_line():
  line = markdown.verdict_line('replicated / twin, lenet, 4 towers',
                             measure.spread([0.98, 1.03, 1.12]), 1.05)
  assert line == ('- replicated / twin, lenet, 4 towers: median 1.03x, '
                  'rounds 0.98-1.12; goal at most 1.05x: met (1 of 3 rounds '
                  'above 1.05x)')


def test_command_line():
  assert markdown.command_line('run.py', []) == 'python benchmarks/run.py'
  assert (markdown.command_line('run.py', ['--quick']) ==
          'python benchmarks/run.py --quick')


def _git(root, *args):
  subprocess.run(['git', '-C', root, '-c', 'user.name=t', '-c',
                  'user.email=t@t'] + list(args), check=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_source_state_names_the_commit_and_changed_files(tmp_path):
  root = str(tmp_path)
  assert 'not a git checkout' in markdown.source_state(root)
  os.makedirs(os.path.join(root, 'variable_mgr'))
  path = os.path.join(root, 'variable_mgr', 'base.py')
  with open(path, 'w') as f:
    f.write('x = 1\n')
  with open(os.path.join(root, 'notes.txt'), 'w') as f:
    f.write('elsewhere\n')
  _git(root, 'init', '-q')
  _git(root, 'add', 'variable_mgr/base.py')
  _git(root, 'commit', '-q', '-m', 'one')
  commit = subprocess.run(['git', '-C', root, 'rev-parse', 'HEAD'],
                          stdout=subprocess.PIPE, universal_newlines=True,
                          check=True).stdout.strip()
  clean = markdown.source_state(root)
  assert clean.startswith('`%s` (' % commit[:12])
  assert 'no uncommitted changes' in clean
  with open(path, 'w') as f:
    f.write('x = 2\n')
  dirty = markdown.source_state(root)
  assert dirty.startswith('`%s` (' % commit[:12])
  assert dirty.endswith('with uncommitted changes to: variable_mgr/base.py')


def test_header_and_write(tmp_path):
  lines = markdown.header('Results', 'run.py', 'the source', 'the command',
                        90.0, '9.9.9')
  text = '\n'.join(lines)
  assert lines[0] == '# Results'
  assert '- commit: the source' in text
  assert '- command: `the command` (1.5 minutes)' in text
  assert 'TensorFlow 9.9.9' in text
  assert 'processors' in text
  path = str(tmp_path / 'out.md')
  markdown.write(path, lines + ['', ''])
  with open(path) as f:
    assert f.read() == text + '\n'
