"""--compare: the sweep's table, chart and numbers."""

import io
import json
import os
import sys

import pytest

from variable_mgr.benchmark import cli
from variable_mgr.benchmark.flags import command_line
from variable_mgr.benchmark.runs import compare
from variable_mgr.benchmark.runs import local_run
from variable_mgr.benchmark.training import run_config
from variable_mgr.compat import major_version

# How far a float16 run's loss may be from float32's after these few steps.
# TensorFlow 1.15's CPU float16 matmul accumulates in float16 (Eigen): a
# 784-term dot product of values in [-1, 1] is 2.8e-3 off float64 there,
# 3.1e-4 on TensorFlow 2 (float32 accumulation), so its loss moves about 1%.
FLOAT16_LOSS_RTOL = 1e-2 if major_version() >= 2 else 3e-2


def test_efficiency_is_speedup_over_towers():
  results = {('a', 1): 100.0, ('a', 2): 150.0, ('a', 4): 200.0,
             ('b', 2): 80.0, ('c', 1): None, ('c', 2): 50.0}
  assert compare.efficiencies(results) == {
      ('a', 1): 1.0, ('a', 2): 0.75, ('a', 4): 0.5}


def test_progress_bar_draws_fraction():
  stream = io.StringIO()
  compare.progress_bar(1, 4, 'replicated x2', width=8, stream=stream)
  assert stream.getvalue() == '[##......] 1/4 replicated x2\n'
  # 8 x 1/3 = 2.67 marks, rounded to the nearest: 3.
  stream = io.StringIO()
  compare.progress_bar(1, 3, 'x', width=8, stream=stream)
  assert stream.getvalue() == '[###.....] 1/3 x\n'


class _Terminal(io.StringIO):

  def isatty(self):
    return True


def test_progress_bar_on_a_terminal_redraws_one_line():
  stream = _Terminal()
  compare.progress_bar(2, 3, 'x', width=6, stream=stream)
  compare.progress_bar(3, 3, 'x', width=6, stream=stream)
  assert stream.getvalue() == ('\r%-79s\r%-79s\n' % ('[####..] 2/3 x',
                                                     '[######] 3/3 x'))


def test_markdown_table_rows():
  rows = [compare.Row('replicated', 2, 150.0, 0.75, 53.3, 1.5, None,
                      (120.0, 171.25)),
          compare.Row('replicated', 4, None, None, None, None, 'no | way',
                      None, 'relaxed'),
          compare.Row('independent', 1, 10.0, 1.0, 1.0, 1.0, None, None,
                      'fp16+bpps4', 1.25)]
  table = compare.markdown_table(rows, 'title', 'Machine: here.')
  lines = table.splitlines()
  assert lines[:3] == ['## title', '', 'Machine: here.']
  assert lines[4] == ('| strategy | towers | images/sec | one step '
                      '(images/sec) | scaling efficiency | step (ms) | '
                      'final loss | options | step vs plain |')
  assert lines[6] == ('| replicated | 2 | 150.0 | 120.0-171.2 | 0.75 | 53.3 '
                      '| 1.500 | plain | - |')
  assert lines[7] == ('| replicated | 4 | refused (1) | | | | | '
                      'relaxed | |')
  assert lines[8] == ('| independent | 1 | 10.0 | - | 1.00 | 1.0 | 1.000 | '
                      'fp16+bpps4 | 1.25x |')
  # Each refusal once under the table, with the cells it refused.
  assert lines[-4:] == ['Refused:', '(1) no | way: replicated, relaxed at 4 '
                        'towers', '', compare.NOTES]


def test_option_set_overrides():
  assert dict(compare.option_overrides('fp16_auto+bpps4', 64.0, 50)) == {
      'use_fp16': True, 'fp16_loss_scale': 64.0,
      'fp16_enable_auto_loss_scale': True,
      'fp16_inc_loss_scale_every_n': 50, 'backward_passes_per_step': 4,
      'variable_consistency': 'strong'}
  plain = dict(compare.option_overrides('plain', 64.0, 50))
  assert plain == {
      'use_fp16': False, 'fp16_loss_scale': None,
      'fp16_enable_auto_loss_scale': False,
      'fp16_inc_loss_scale_every_n': 1000, 'backward_passes_per_step': 1,
      'variable_consistency': 'strong'}
  relaxed = dict(compare.option_overrides('fp16+relaxed', None, 50))
  assert (relaxed['use_fp16'], relaxed['fp16_enable_auto_loss_scale'],
          relaxed['fp16_inc_loss_scale_every_n'],
          relaxed['variable_consistency']) == (True, False, 1000, 'relaxed')
  for name in ('plain', 'fp16', 'fp16_auto+bpps4', 'bpps3+relaxed'):
    config = run_config.BenchmarkConfig(**compare.option_overrides(name))
    assert compare.option_set_name(config) == name


def test_vs_plain_is_step_over_the_plain_step():
  rows = [compare.Row('replicated', 2, 1.0, 1.0, 40.0, 1.0, None, None,
                      'plain'),
          compare.Row('replicated', 2, 1.0, 1.0, 50.0, 1.0, None, None,
                      'fp16'),
          compare.Row('replicated', 4, 1.0, 1.0, 30.0, 1.0, None, None,
                      'fp16'),
          compare.Row('replicated', 2, None, None, None, None, 'no', None,
                      'relaxed')]
  assert [r.vs_plain for r in compare.with_vs_plain(rows)] == [
      1.0, 1.25, None, None]


@pytest.mark.parametrize('value, message', [
    ('plain,fp61', "--compare_options=plain,fp61: unknown option 'fp61' in "
     "the set 'fp61': each option set is plain, fp16, fp16_auto, bpps<N> "
     '(backward_passes_per_step=N, N at least 1) or relaxed, several joined '
     'by +; pass e.g. --compare_options=plain,fp16,bpps4,fp16+relaxed'),
    ('bpps0', "--compare_options=bpps0: 'bpps0' in the set 'bpps0': "
     'bpps<N> needs N at least 1; each option set is'),
    ('plain+fp16', "--compare_options=plain+fp16: the set 'plain+fp16': "
     'plain means no option and stands alone;'),
    ('fp16+fp16_auto', "--compare_options=fp16+fp16_auto: the set "
     "'fp16+fp16_auto' sets fp16 twice; keep one of them"),
    ('bpps2+bpps4', "--compare_options=bpps2+bpps4: the set 'bpps2+bpps4' "
     'sets bpps twice'),
    ('fp16,fp16', "--compare_options=fp16,fp16: the set 'fp16' is given "
     'twice; give each option set once'),
])
def test_bad_option_sets_are_refused_as_typed(value, message):
  with pytest.raises(command_line.UsageError) as e:
    command_line.parse_args(['--compare', '--compare_options', value])
  assert str(e.value).startswith(message)


def test_option_flags_beside_option_sets_are_refused():
  with pytest.raises(command_line.UsageError) as e:
    command_line.parse_args(['--compare', '--compare_options', 'plain,bpps2',
                      '--backward_passes_per_step', '4'])
  assert str(e.value) == (
      '--backward_passes_per_step=4 with --compare_options=plain,bpps2: each '
      'option set of --compare_options says which training options its runs '
      'have; drop --backward_passes_per_step and name the options in the '
      'sets (e.g. --compare_options=plain,fp16,bpps4,relaxed)')
  with pytest.raises(command_line.UsageError) as e:
    command_line.parse_args(['--compare', '--compare_options', 'plain,bpps2',
                      '--fp16_loss_scale', '64'])
  assert str(e.value) == (
      '--fp16_loss_scale=64.0 with --compare_options=plain,bpps2: no option '
      'set has fp16, so no run would use it; add a set with fp16 to '
      '--compare_options or drop --fp16_loss_scale')
  with pytest.raises(command_line.UsageError) as e:
    command_line.parse_args(['--compare_options', 'fp16'])
  assert str(e.value).startswith('--compare_options=fp16 without --compare')
  assert command_line.parse_args(['--compare', '--compare_options', 'fp16_auto',
                           '--fp16_inc_loss_scale_every_n', '5']
                         ).compare_options == ['fp16_auto']


def test_compare_sweeps_option_sets(tmp_path, capsys):
  """Each row's run is the run of its option set: its losses equal a direct
  run of the same configuration; refusals say why; table = JSON."""
  out_dir = str(tmp_path / 'cmp')
  base = ['--model', 'trivial', '--batch_size', '4', '--num_batches', '3',
          '--num_warmup_batches', '1']
  assert cli.main(['--compare', '--compare_dir', out_dir,
                   '--compare_strategies', 'independent,replicated',
                   '--compare_towers', '2', '--compare_options',
                   'plain,fp16_auto,bpps2,relaxed', '--fp16_loss_scale',
                   '32'] + base) == 0
  capsys.readouterr()
  with open(os.path.join(out_dir, compare.JSON_FILE)) as f:
    rows = json.load(f)
  assert [(r['strategy'], r['towers'], r['options']) for r in rows] == [
      (s, k, o) for s in ('independent', 'replicated') for k in (1, 2)
      for o in ('plain', 'fp16_auto', 'bpps2', 'relaxed')]
  refused = [r for r in rows if r['error']]
  assert [(r['strategy'], r['options']) for r in refused] == [
      ('independent', 'relaxed')] * 2
  assert "variable_consistency='relaxed'" in refused[0]['error']
  with open(os.path.join(out_dir, compare.TABLE_FILE)) as f:
    body = [l for l in f.read().splitlines()
            if l.startswith('| ') and 'strategy' not in l]
  assert len(body) == len(rows)
  for row, line in zip(rows, body):
    cells = line.strip('| ').split(' | ')
    assert cells[:2] == [row['strategy'], str(row['towers'])]
    assert cells[-2 if not row['error'] else -1] == row['options']
    if row['error']:
      continue
    assert cells[-1] == '%.2fx' % row['vs_plain']
    assert cells[2] == '%.1f' % row['images_per_sec']
    assert cells[6] == '%.3f' % row['final_loss']
  plain = dict(((r['strategy'], r['towers']), r['step_ms']) for r in rows
               if r['options'] == 'plain')
  for row in rows:
    if not row['error']:
      assert row['vs_plain'] == pytest.approx(
          row['step_ms'] / plain[(row['strategy'], row['towers'])])
  args = command_line.parse_args(base)
  for name, tolerance in (('fp16_auto', 1e-2), ('bpps2', 1e-5),
                          ('relaxed', 1e-5), ('plain', 1e-5)):
    config = run_config.from_args(
        args, variable_update='replicated', num_gpus=2,
        **compare.option_overrides(name, 32.0))
    direct = local_run.run_one(config, log=lambda *_: None)
    swept = [r for r in rows if (r['strategy'], r['towers'], r['options'])
             == ('replicated', 2, name)][0]
    assert direct['config']['use_fp16'] == name.startswith('fp16')
    assert swept['final_loss'] == pytest.approx(direct['final_loss'],
                                                rel=tolerance)
  # The option sets change the runs: bpps2 applies every other step, so its
  # last loss differs from plain's; fp16 is within float16 of plain.
  by = dict(((r['strategy'], r['towers'], r['options']), r) for r in rows)
  assert by[('replicated', 2, 'bpps2')]['final_loss'] != pytest.approx(
      by[('replicated', 2, 'plain')]['final_loss'], rel=1e-3)
  assert by[('replicated', 2, 'fp16_auto')]['final_loss'] == pytest.approx(
      by[('replicated', 2, 'plain')]['final_loss'], rel=FLOAT16_LOSS_RTOL)


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
  out = capsys.readouterr().out
  assert '[##############################] 4/4 done' in out
  # Every file written is said.
  for name in (compare.TABLE_FILE, compare.JSON_FILE, compare.CHART_FILE):
    assert ('Wrote %s' % os.path.join(out_dir, name)) in out, name


def test_without_matplotlib_table_still_written(tmp_path, monkeypatch):
  monkeypatch.setitem(sys.modules, 'matplotlib', None)
  rows = [compare.Row('independent', 1, 10.0, 1.0, 1.0, 1.0, None)]
  assert not compare.write_chart(rows, str(tmp_path / 'x.png'), 't')
  assert not os.path.exists(str(tmp_path / 'x.png'))
