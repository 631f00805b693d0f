"""benchmarks/run_network_benchmarks.py's distributed_all_reduce cells
(issue 26): the plan and its `--subset`, a cell's hosts, towers and
flags, the link counters' busy time, and the section's figures from raw
runs (no cluster is started)."""

import importlib
import json
import os

import pytest

import scriptlib

# lenet's float32 variables (conv1, conv2, fc1, logits: weights, biases).
LENET = [3200, 128, 204800, 256, 6422528, 2048, 20480, 40]


@pytest.fixture(scope='module')
def main_module():
  return scriptlib.load('run_network_benchmarks')


@pytest.fixture(scope='module')
def plan(main_module):
  del main_module
  return importlib.import_module('benchmarks.network.plan')


def test_the_allreduce_subset_of_the_full_plan(plan):
  full = plan.full_cells()
  cells = plan.subset_plan(plan.FULL, 'allreduce')['cells']()
  # The full plan's cells, in its order.
  assert cells == [c for c in full if c in cells]
  assert len(set(cells)) == len(cells) == 24
  strategies = {'collective_all_reduce', plan.DAR,
                'collective_all_reduce' + plan.TWO_TOWERS,
                plan.DAR_TWO_STAGE + plan.TWO_TOWERS}
  assert {c.strategy for c in cells} == strategies
  # Every rate (and unshaped) x 2 and 4 workers x one and two towers, for
  # both strategies: 3 x 2 x 2 x 2 cells.
  for rate in (plan.MBIT, plan.GBIT, None):
    for workers in (2, 4):
      for strategy in strategies:
        num_ps = 0 if plan.has_controller(strategy) else 1
        assert plan.Cell(rate, 'lenet', workers, num_ps, strategy) in cells
  # Left out: every other strategy, resnet50_vars's collective cells.
  assert not [c for c in full if c not in cells and c.workload == 'lenet'
              and c.strategy in strategies]
  assert [c for c in full if c.workload == 'resnet50_vars' and
          c.strategy == 'collective_all_reduce']


def test_the_quick_subset(plan):
  quick = plan.subset_plan(plan.QUICK, 'allreduce')
  cells = quick['cells']()
  assert set(cells) <= set(plan.quick_cells())
  assert plan.Cell(plan.MBIT, 'lenet', 2, 0, plan.DAR) in cells
  assert plan.Cell(None, 'lenet', 2, 0, plan.DAR) in cells
  assert quick['steps'] == plan.QUICK['steps']
  assert quick['name'] == 'quick, subset allreduce'


def test_an_unknown_subset_is_refused(plan):
  with pytest.raises(plan.SubsetError) as e:
    plan.subset_plan(plan.FULL, 'allreduc')
  text = str(e.value)
  assert '--subset allreduc' in text and 'the subsets are allreduce' in text
  assert 'pass one of them' in text


@pytest.mark.parametrize('argv,words', [
    (['--plan', '--subset', 'rings'], ['--subset rings', 'allreduce']),
    (['--plan', '--rounds', '0'], ['--rounds 0', 'at least 1']),
    (['--plan', '--rounds'], ['--rounds ', 'e.g. --rounds 3']),
])
def test_bad_script_flags(main_module, capsys, argv, words):
  assert main_module.main(argv) == 2
  err = capsys.readouterr().err
  for word in words:
    assert word in err


def test_a_json_of_another_plan_is_refused(main_module, plan, capsys,
                                           tmp_path, monkeypatch):
  """--from_json writes only the plan its run measured: the balanced run's
  figures read as the buckets subset would be titled and counted as that
  subset's; its own subset gets past the check."""
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(netns, 'check_supported', lambda: None)
  cells = plan.subset_plan(plan.FULL, 'balanced')['cells']()
  path = str(tmp_path / 'balanced.json')
  command = 'python benchmarks/run_network_benchmarks.py --subset balanced'
  with open(path, 'w') as f:
    json.dump({'plan': [plan.key(c) for c in cells],
               'written': {'command': command}}, f)
  output = str(tmp_path / 'out.md')
  argv = ['--from_json', path, '--output', output, '--subset']
  assert main_module.main(argv + ['buckets']) == 2
  err = capsys.readouterr().err
  assert ('--from_json %s: its run measured 28 cells, not the 32 of this '
          'plan (buckets)' % path) in err
  assert command in err
  assert not os.path.exists(output)
  # Its own subset passes the check (and fails later on the figures this
  # stand-in lacks).
  with pytest.raises(KeyError):
    main_module.main(argv + ['balanced'])


def test_results_file_names(main_module):
  assert main_module.results_name(None, False) == 'NETWORK_RESULTS.md'
  assert main_module.results_name(None, True) == 'NETWORK_RESULTS_quick.md'
  assert main_module.results_name('allreduce', False) == (
      'NETWORK_ALLREDUCE_RESULTS.md')
  assert main_module.results_name('allreduce', True) == (
      'NETWORK_ALLREDUCE_RESULTS_quick.md')


def test_hosts_towers_and_flags(plan):
  runs = importlib.import_module('benchmarks.network.runs')
  two = plan.DAR_TWO_STAGE + plan.TWO_TOWERS
  dar = plan.Cell(plan.MBIT, 'lenet', 4, 0, two)
  coll = plan.Cell(plan.MBIT, 'lenet', 4, 1,
                   'collective_all_reduce' + plan.TWO_TOWERS)
  # The controller is a host of its own; no PS task.
  assert plan.task_count(dar) == 5
  assert plan.task_count(dar._replace(strategy=plan.DAR, workers=2)) == 3
  assert plan.task_count(coll) == 5
  # A controller's results time the one graph over every tower.
  assert runs.images_a_step(dar) == 8 * 2 * 4
  assert runs.images_a_step(dar._replace(strategy=plan.DAR)) == 8 * 4
  assert runs.images_a_step(coll) == 8 * 2
  assert runs.images_a_step(coll._replace(
      strategy='collective_all_reduce')) == 8
  _, flags = runs.cell_flags(dar, 5, 1, 60.0)
  assert flags[flags.index('--all_reduce_spec') + 1] == 'pscpu/xring'
  assert flags[flags.index('--num_gpus') + 1] == '2'
  _, flags = runs.cell_flags(dar._replace(strategy=plan.DAR), 5, 1, 60.0)
  assert flags[flags.index('--all_reduce_spec') + 1] == 'xring'
  assert flags[flags.index('--num_gpus') + 1] == '1'
  assert plan.kind(two) == plan.kind(plan.DAR) == 'ring'


def test_busy_seconds(plan):
  links = importlib.import_module('benchmarks.network.links')
  # Host 0 sends 100 bytes in every 10 ms (10 kB/s) for 30 ms, then idles;
  # host 1 receives 50 bytes in each of the last two intervals.
  samples = [(0.00, {0: (0, 0), 1: (0, 0)}),
             (0.01, {0: (100, 0), 1: (0, 0)}),
             (0.02, {0: (200, 0), 1: (0, 0)}),
             (0.03, {0: (300, 0), 1: (0, 50)}),
             (0.04, {0: (300, 0), 1: (0, 100)}),
             (0.05, {0: (300, 0), 1: (0, 100)})]
  busy = links.busy_seconds(samples, 0.0, 0.05, 4000.0)
  assert busy[0] == pytest.approx((0.03, 0.0, 0.03))
  assert busy[1] == pytest.approx((0.0, 0.02, 0.02))
  # Only the window counts; a rate not above the threshold is not busy.
  assert links.busy_seconds(samples, 0.01, 0.05, 4000.0)[0] == (
      pytest.approx((0.02, 0.0, 0.02)))
  assert links.busy_seconds(samples, 0.0, 0.05, 10000.5)[0] == (0, 0, 0)


def _run(cell, r, step, goodput=192e6, sent=None, busy=None, steps=5):
  run = {'cell': list(cell), 'round': r, 'step_secs': [step],
         'goodput': goodput, 'timed_steps': steps, 'window': step * steps}
  if sent is not None:
    hosts = cell[3] + cell[2] + (1 if 'distributed' in cell[4] else 0)
    run['links'] = {str(h): [sent[h] * steps, sent[h] * steps]
                    for h in range(hosts)}
  if busy is not None:
    run['busy'] = {str(h): [busy * steps] * 3 for h in range(len(sent))}
  return run


def test_allreduce_rows_from_raw_runs(plan):
  table = importlib.import_module('benchmarks.network.table')
  allreduce = importlib.import_module('benchmarks.network.allreduce')
  dar = plan.Cell(plan.MBIT, 'lenet', 2, 0, plan.DAR)
  coll = plan.Cell(plan.MBIT, 'lenet', 2, 1, 'collective_all_reduce')
  total = float(sum(LENET))
  # dar's hosts: worker 0, worker 1, the controller; coll's: PS 0, workers.
  runs = [_run(dar, 0, 0.40, sent=[6.7e6, 6.6e6, 1000.0], busy=0.3),
          _run(dar, 1, 0.36, sent=[6.7e6, 6.6e6, 1000.0], busy=0.3),
          _run(coll, 0, 0.32, sent=[3000.0, 6.65e6, 6.65e6]),
          _run(coll, 1, 0.30, sent=[3000.0, 6.65e6, 6.65e6]),
          _run(dar._replace(rate=None), 0, 0.05, None),
          _run(dar._replace(rate=None), 1, 0.03, None)]
  results = {'plan': [plan.key(c) for c in (dar, coll)], 'runs': runs,
             'sizes': {'lenet': LENET}}
  rows = allreduce.allreduce_rows(table.Table(results), results['sizes'])
  assert [r[1] for r in rows] == [plan.DAR, 'collective_all_reduce']
  ring = total * 8 / 192e6
  first, second = rows
  assert first[0] == '200mbit, 2 workers x 1'
  assert first[2] == '380 ms (360-400)'
  assert first[3] == '%.0f ms' % (1000 * ring)
  assert first[4] == '%.2fx (%.2f-%.2f)' % (
      (0.40 + 0.36) / 2 / ring, 0.36 / ring, 0.40 / ring)
  assert first[6] == '%.2fx (%.2f-%.2f)' % (
      (0.40 / (ring + 0.05) + 0.36 / (ring + 0.03)) / 2,
      0.36 / (ring + 0.03), 0.40 / (ring + 0.05))
  # The busiest worker's bytes, against 2(W-1)/W x B = B at 2 workers.
  assert first[7] == '6.70 / 6.70 (%.2fx / %.2fx)' % (
      6.7e6 / total, 6.7e6 / total)
  assert first[8] == 'controller 1.00 / 1.00'
  assert first[9] == '300 / 300 / 300 (%.0f)' % (1000 * (0.38 - 0.3))
  # Within each round: 0.40 / 0.32 and 0.36 / 0.30.
  assert first[10] == '%.2fx (1.20-1.25)' % ((1.25 + 1.2) / 2)
  assert second[5] == 'not measured' and second[10] == ''
  assert second[8] == 'PS 0 3.00 / 3.00'
  assert allreduce.ring_bytes(LENET, 4) == pytest.approx(1.5 * total)


def test_the_goal_layouts_bullet_of_distributed_all_reduce(plan):
  table = importlib.import_module('benchmarks.network.table')
  goals = importlib.import_module('benchmarks.network.goals')
  dar = goals.goal_cell(plan.DAR)
  assert dar == plan.Cell(plan.MBIT, 'lenet', 2, 0, plan.DAR)
  runs = [_run(dar, 0, 0.40, sent=[6.7e6, 6.6e6, 1000.0]),
          _run(dar._replace(rate=None), 0, 0.05)]
  results = {'plan': [plan.key(dar)], 'runs': runs,
             'sizes': {'lenet': LENET}}
  bullets = [b for b in goals.cause_bullets(table.Table(results),
                                            results['sizes'])
             if plan.DAR in b]
  ring = sum(LENET) * 8 / 192e6
  assert bullets == [
      '- **%s** (one graph run by a controller host: 400 ms against the '
      'ring bound %.0f ms, %.2fx; ring + its c0 of 50 ms: %.2fx): worker '
      '0\'s link carries 6.70 / 6.70 MB a step each way, the controller\'s '
      '1.0 / 1.0 kB; beside collective_all_reduce with one and two towers a '
      'worker: the all-reduce table of the results file.' % (
          plan.DAR, 1000 * ring, 0.4 / ring, 0.4 / (ring + 0.05))]
