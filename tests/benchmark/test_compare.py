"""--compare: the sweep's table, chart and numbers."""

import io
import json
import os
import sys

import pytest

from variable_mgr.benchmark import cli
from variable_mgr.benchmark import compare


def test_efficiency_is_speedup_over_towers():
  results = {('a', 1): 100.0, ('a', 2): 150.0, ('a', 4): 200.0,
             ('b', 2): 80.0, ('c', 1): None, ('c', 2): 50.0}
  assert compare.efficiencies(results) == {
      ('a', 1): 1.0, ('a', 2): 0.75, ('a', 4): 0.5}


def test_progress_bar_draws_fraction():
  stream = io.StringIO()
  compare.progress_bar(1, 4, 'replicated x2', width=8, stream=stream)
  assert stream.getvalue() == '[##......] 1/4 replicated x2\n'


def test_markdown_table_rows():
  rows = [compare.Row('replicated', 2, 150.0, 0.75, 53.3, 1.5, None,
                      (120.0, 171.25)),
          compare.Row('replicated', 4, None, None, None, None, 'no | way'),
          compare.Row('independent', 1, 10.0, 1.0, 1.0, 1.0, None)]
  table = compare.markdown_table(rows, 'title', 'Machine: here.')
  lines = table.splitlines()
  assert lines[:3] == ['## title', '', 'Machine: here.']
  assert lines[4] == ('| strategy | towers | images/sec | one step '
                      '(images/sec) | scaling efficiency | step (ms) | '
                      'final loss |')
  assert lines[6] == ('| replicated | 2 | 150.0 | 120.0-171.2 | 0.75 | 53.3 '
                      '| 1.500 |')
  assert lines[7] == '| replicated | 4 | refused: no / way | | | | |'
  assert lines[8] == '| independent | 1 | 10.0 | - | 1.00 | 1.0 | 1.000 |'
  assert lines[-1] == compare.NOTES


def test_compare_writes_table_and_png(tmp_path, capsys):
  out_dir = str(tmp_path / 'cmp')
  status = cli.main(['--compare', '--compare_dir', out_dir,
                     '--compare_strategies', 'independent,replicated',
                     '--compare_towers', '2', '--model', 'trivial',
                     '--batch_size', '4', '--num_batches', '2',
                     '--num_warmup_batches', '1'])
  assert status == 0
  with open(os.path.join(out_dir, compare.TABLE_FILE)) as f:
    table = f.read().splitlines()
  body = [l for l in table if l.startswith('| ') and 'strategy' not in l]
  assert [l.split(' | ')[:2] for l in body] == [
      ['| independent', '1'], ['| independent', '2'],
      ['| replicated', '1'], ['| replicated', '2']]
  with open(os.path.join(out_dir, compare.JSON_FILE)) as f:
    rows = json.load(f)
  for row in rows:
    assert row['images_per_sec'] > 0
    assert row['efficiency'] > 0
  assert [r['efficiency'] for r in rows if r['towers'] == 1] == [1.0, 1.0]
  matplotlib_image = pytest.importorskip('matplotlib.image')
  png = os.path.join(out_dir, compare.CHART_FILE)
  with open(png, 'rb') as f:
    assert f.read(8) == b'\x89PNG\r\n\x1a\n'
  height, width, _ = matplotlib_image.imread(png).shape
  assert width > height > 100
  assert '[##############################] 4/4 done' in capsys.readouterr().out


def test_without_matplotlib_table_still_written(tmp_path, monkeypatch):
  monkeypatch.setitem(sys.modules, 'matplotlib', None)
  rows = [compare.Row('independent', 1, 10.0, 1.0, 1.0, 1.0, None)]
  assert not compare.write_chart(rows, str(tmp_path / 'x.png'), 't')
  assert not os.path.exists(str(tmp_path / 'x.png'))
