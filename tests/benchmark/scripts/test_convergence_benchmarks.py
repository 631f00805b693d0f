"""benchmarks/run_convergence_benchmarks.py: its cells, commands and report
from the runs' figures (verdicts against the one-tower run, the table)."""

import json
import importlib

import pytest

import scriptlib


@pytest.fixture(scope='module')
def entry():
  return scriptlib.load('run_convergence_benchmarks')


@pytest.fixture(scope='module')
def script(entry):
  # The script put benchmarks/ and the root on the path.
  del entry
  return importlib.import_module('benchmarks.convergence')


def test_cells_split_one_global_batch(script):
  cells = script.plan_cells(script.FULL)
  assert cells[0] == script.REFERENCE
  assert len(cells) == len(set(cells))
  # 6 local strategies x 3 tower counts, 5 clusters, 4 more seeds.
  assert len(cells) == 6 * 3 + 5 + 4
  for cell in cells:
    assert cell.batch_per_tower * cell.replicas == script.GLOBAL_BATCH
  staged = script.Cell('staged parameter_server', 4, 0, script.SEED)
  assert staged.batch_per_tower == 16
  assert script.Cell('parameter_server', 1, 2, 1).batch_per_tower == 32
  # independent's checkpoint is tower 0's copy: its share of the batch.
  assert script.examples_seen(script.Cell('independent', 4, 0, 1), 400) == \
      400 * 16
  assert script.examples_seen(staged, 400) == 400 * 64
  quick = script.plan_cells(script.QUICK)
  assert [script.describe(c) for c in quick] == [
      'independent, 1 tower, seed 1234', 'replicated, 2 towers, seed 1234',
      'parameter_server, 2 workers x 1 tower, seed 1234']
  with pytest.raises(ValueError) as e:
    script.plan_cells(dict(script.QUICK, towers=(3,)))
  assert str(e.value) == (
      'replicated: 3 towers do not split a global batch of 64')


def test_commands(script):
  cell = script.Cell('asynchronous parameter_server', 1, 2, 7)
  train = script.train_args(cell, 400, '/d', '/o.json')
  assert '--batch_size=32' in train and '--tf_random_seed=7' in train
  assert train[-5:] == ['--variable_update=parameter_server',
                        '--cross_replica_sync=false', '--launch_local_cluster',
                        '--num_workers=2', '--num_ps=1']
  evaluate = script.eval_args(cell, '/d', '/e.json')
  assert evaluate[0] == '--eval' and '--train_dir=/d' in evaluate
  assert evaluate[-1] == '--variable_update=parameter_server'
  assert not any('cluster' in a or 'sync' in a for a in evaluate)
  collective = script.Cell('collective_all_reduce', 1, 2, 7)
  assert script.eval_strategy_flags(collective) == [
      '--variable_update=replicated']
  local = script.train_args(script.Cell('replicated, xring', 4, 0, 1), 10,
                            '/d', '/o')
  assert '--batch_size=16' in local and '--num_gpus=4' in local
  assert '--all_reduce_spec=xring' in local
  assert '--launch_local_cluster' not in local


def test_accuracy_from_json_or_the_printed_line(script):
  assert script.parse_accuracy(
      'x\nAccuracy @ 1 = 0.9100 Accuracy @ 5 = 0.9900 [300 examples]\n'
      'Accuracy @ 1 = 0.9733 Accuracy @ 5 = 1.0000 [300 examples]\n') == (
          0.9733, 1.0)
  assert script.parse_accuracy('no line') is None
  assert script.eval_figures(
      {'top_1_accuracy': 0.98, 'top_5_accuracy': 0.999, 'eval_examples': 300,
       'global_step': 400}, '') == {'top1': 0.98, 'top5': 0.999,
                                    'eval_examples': 300,
                                    'checkpoint_step': 400}
  assert script.eval_figures(
      None, 'Accuracy @ 1 = 0.5000 Accuracy @ 5 = 0.7000') == {
          'top1': 0.5, 'top5': 0.7}
  assert script.training_figures(
      script.Cell('parameter_server', 1, 2, 1),
      {'workers': [{'global_step': 400, 'final_loss': 0.1,
                    'losses': [2.5] + [1.0] * 98 + [0.1]},
                   {'global_step': 401}]}) == {
                       'global_step': 400, 'final_loss': 0.1,
                       'loss_curve': {'1': 2.5, '50': 1.0, '100': 0.1}}


def test_verdict_counts_images(script):
  # 1 point is 3 of the 300 images: 3 fewer is met, 4 fewer is not.
  assert script.verdict(291 / 300.0, 294 / 300.0) == (True, '')
  assert script.verdict(290 / 300.0, 294 / 300.0) == (
      False, '1.33 pp below the one-tower run')
  assert script.verdict(0.90, 0.905) == (False, 'top-1 not above 90%')
  assert script.verdict(0.85, 0.95) == (
      False, '10.00 pp below the one-tower run; top-1 not above 90%')
  assert script.verdict(0.99, 0.97) == (True, '+2.00 pp, more than 1 above')


def _run(script, label, towers, workers, top1, seed=None, **extra):
  cell = script.Cell(label, towers, workers, seed or script.SEED)
  run = {'cell': cell._asdict(), 'steps': 400,
         'examples': script.examples_seen(cell, 400), 'train_seconds': 30.4,
         'eval_seconds': 8.6, 'train_command': 't', 'eval_command': 'e'}
  if top1 is None:
    run['error'] = 'training exited with 1: a | b'
  else:
    run.update(top1=top1, top5=1.0, final_loss=0.01, global_step=400)
  run.update(extra)
  return run


def test_table_summary_and_section(script):
  runs = [_run(script, 'independent', 1, 0, 0.98),
          _run(script, 'independent', 4, 0, 0.96),
          _run(script, 'replicated', 4, 0, 0.9733),
          _run(script, 'asynchronous parameter_server', 1, 2, 0.99,
               checkpoint_step=797),
          _run(script, 'collective_all_reduce', 1, 2, None),
          _run(script, 'independent', 1, 0, 0.9867, seed=1235),
          _run(script, 'independent', 1, 0, 0.9767, seed=1236)]
  rows = script.table_rows(runs)
  assert rows[0] == ['independent (reference)', '1', '64', '400', '25,600',
                     'the mean', '98.00', '100.00', '', '0.0100', '30 + 9',
                     '']
  assert rows[1] == ['independent', '4', '16', '400', '6,400',
                     "each copy its share's mean", '96.00', '100.00',
                     '-2.00', '0.0100', '30 + 9',
                     '**not met** (2.00 pp below the one-tower run)']
  assert rows[2][5:] == ['sum of the towers: 4 x the mean', '97.33',
                         '100.00', '-0.67', '0.0100', '30 + 9', 'met']
  assert rows[3][:4] == ['asynchronous parameter_server', '2 workers x 1',
                         '32', '400 a worker (797 updates saved)']
  assert rows[3][-1] == 'met'
  assert rows[4][5:7] == ['the mean', 'failed: training exited with 1: a / b']
  assert rows[4][-1] == '**not met**'
  assert all(len(r) == len(script.HEADER) == len(script.ALIGN) for r in rows)
  # The other seeds are not rows of the table.
  assert len(rows) == 5
  assert script.seed_spread(runs) == pytest.approx(
      (97.67, 98.67, (98.0 + 98.67 + 97.67) / 3, 3))
  met, judged, misses = script.summary(runs)
  assert (met, judged) == (2, 4)
  assert misses == ['independent, 4 towers, seed 1234',
                    'collective_all_reduce, 2 workers x 1 tower, seed 1234']
  lines = script.section_lines(runs, script.FULL, '`abc`', 'cmd', 60.0,
                               '2.x')
  assert lines[0] == '## Convergence on digits (issue 14)'
  assert any(l.startswith('One tower over 3 seeds (top-1 %, 1234: 98.00, '
                          '1235: 98.67, 1236: 97.67): 97.67 to 98.67')
             for l in lines)
  assert lines[-2:] == [
      '- every cell at most 1 pp below the one-tower top-1 (98.00%) and '
      'above 90%: 2 of 4 cells met (missed: independent, 4 towers, seed '
      '1234; collective_all_reduce, 2 workers x 1 tower, seed 1234): '
      '**not met**',
      "- independent, 4 towers, seed 1234: top-1 96.00% is outside the "
      "one-tower seeds' range (97.67 to 98.67)"]
  runs[0]['train_command'] = 'python -m x --train_dir=/tmp/w1/a'
  runs[0]['loss_curve'] = {'1': 2.5, '50': 0.25, '400': 0.0081}
  detail = script.detail_lines(runs, '/tmp/w1')
  assert detail[2] == ('| independent, 1 tower, seed 1234 | the mean | '
                       'top-1 98.00, top-5 100.00 | 2.500 | 0.250 | | | '
                       '0.008 | 400 |')
  assert detail[2 + len(runs) + 7] == (
      '| independent, 1 tower, seed 1234 | `python -m x '
      '--train_dir=$DIR/a`<br>`e` |')
  assert len(detail) == 2 + len(runs) + 7 + len(runs)
  whole = script.details_file(runs, script.FULL, '`abc`', 'cmd', 60.0,
                              '2.x', False)
  assert whole[0] == '# Convergence on digits'
  assert whole.count('### Verdict') == 1


def test_what_a_step_applies(script):
  def text(label, towers, workers=0):
    return script.update_text(script.Cell(label, towers, workers, 1))
  assert text('replicated', 1) == 'the mean'
  assert text('replicated, xring', 2) == 'sum of the towers: 2 x the mean'
  assert text('parameter_server', 4) == 'the mean'
  assert text('staged parameter_server', 4) == 'the mean, one step stale'
  assert text('distributed_replicated', 4) == 'the mean'
  assert text('distributed_replicated', 1, 2) == (
      "sum of the workers' means: 2 x the mean")
  assert text('staged parameter_server', 1, 2) == (
      "sum of the workers' means: 2 x the mean, one step stale")
  assert text('collective_all_reduce', 1, 2) == 'the mean'
  assert text('asynchronous parameter_server', 1, 2) == (
      "each worker its share's mean, on its own")
  assert text('independent', 1) == 'the mean'


def test_report_again_from_the_json(script, entry, tmp_path):
  runs = [_run(script, 'independent', 1, 0, 0.98),
          _run(script, 'replicated', 2, 0, 0.97)]
  meta = {'source': '`abc`', 'command': 'python benchmarks/x.py --json j',
          'elapsed': 120.0, 'tf_version': '2.x', 'quick': True,
          'work_dir': '/tmp/w'}
  saved = tmp_path / 'run.json'
  saved.write_text(json.dumps({'plan': script.QUICK, 'runs': runs,
                               'meta': meta}))
  out = tmp_path / 'q.md'
  assert entry.main(['--report', str(saved), '--output', str(out)]) == 0
  text = out.read_text()
  assert text.startswith('# Convergence on digits (a check)\n')
  assert ('- command: `python benchmarks/x.py --json j` (2.0 minutes)\n'
          "- this report was written again from that run's JSON, with no "
          'training, by `python benchmarks/run_convergence_benchmarks.py '
          '--report %s --output %s`\n' % (saved, out)) in text
  assert '| replicated | 2 | 32 | 400 | 25,600 | sum of the towers: 2 x ' \
      'the mean | 97.00 |' in text


def test_no_reference_judges_nothing(script):
  runs = [_run(script, 'independent', 1, 0, None),
          _run(script, 'replicated', 2, 0, 0.97)]
  assert script.table_rows(runs)[1][-1] == 'no reference'
  assert script.summary(runs) == (0, 1, ['replicated, 2 towers, seed 1234'])
  lines = script.section_lines(runs, script.QUICK, 's', 'c', 1.0, '2.x')
  assert lines[-1] == '- the one-tower reference failed: nothing is judged'


def test_loss_agreement_of_the_averaging_cells(script):
  curve = {'1': 2.5, '100': 0.2, '400': 0.01}
  runs = [_run(script, 'independent', 1, 0, 0.98, loss_curve=curve),
          _run(script, 'parameter_server', 4, 0, 0.98,
               loss_curve={'1': 2.5, '100': 0.21, '400': 0.0101}),
          _run(script, 'replicated', 1, 0, 0.98,
               loss_curve={'1': 2.5, '100': 0.2, '400': 0.0103}),
          # Not compared: they add, or read stale or own copies.
          _run(script, 'replicated', 4, 0, 0.98, loss_curve={'100': 0.1}),
          _run(script, 'staged parameter_server', 2, 0, 0.98,
               loss_curve={'100': 0.5}),
          _run(script, 'independent', 2, 0, 0.98, loss_curve={'100': 0.5}),
          _run(script, 'collective_all_reduce', 1, 2, 0.98,
               loss_curve={'100': 0.5})]
  diff, where, step = script.loss_agreement(runs)
  assert diff == pytest.approx(0.05)
  assert (where, step) == ('parameter_server, 4 towers, seed 1234', 100)
  assert script.loss_agreement(runs[1:]) is None
  lines = script.result_lines(runs)
  assert any('at most 5.0% apart (parameter_server, 4 towers, seed 1234, '
             'step 100)' in l for l in lines)
