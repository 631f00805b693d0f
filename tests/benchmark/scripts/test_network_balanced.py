"""benchmarks/run_network_benchmarks.py's balanced family (issue 32): the
plan's cells and `--subset balanced`, resnet20's flags, and the section's
figures from raw runs against the closed forms (no cluster is started)."""

import importlib
import json
import os
import subprocess
import sys

import numpy as np

import pytest

import scriptlib

# Bytes of two float32 variables, 1.0 MB together: a stand-in for resnet20.
MODEL = [800000, 200000]


@pytest.fixture(scope='module')
def plan():
  scriptlib.load('run_network_benchmarks')  # Puts benchmarks/ and the root on the path.
  return importlib.import_module('benchmarks.network.plan')


@pytest.fixture(scope='module')
def timing():
  return importlib.import_module('benchmarks.network.timing')


def test_the_balanced_families_run_as_subsets_alone(plan):
  """The full plan holds no cell of a balanced family (each family runs as
  its own subset, into its own results file); every cell of the script is
  the full plan's and the families'."""
  full = plan.full_cells()
  every = plan.every_cell()
  assert not [c for c in full if c.workload in plan.FAMILIES]
  assert every[:len(full)] == full
  assert {c.workload for c in every[len(full):]} == set(plan.FAMILIES)
  assert len(set(every)) == len(every)


def test_the_balanced_subset_of_every_cell(plan):
  every = plan.every_cell()
  cells = plan.subset_plan(plan.FULL, 'balanced')['cells']()
  pinned = plan.subset_plan(plan.FULL, 'pinned')['cells']()
  buckets = plan.subset_plan(plan.FULL, 'buckets')['cells']()
  assert cells == [c for c in every if c.workload == 'resnet20' and
                   not plan.pinned(c.strategy) and
                   c.strategy not in plan.BUCKETED]
  # The bucket sizes run at the middle rate and unshaped alone (the
  # buckets subset, beside their defaults of the balanced subset).
  bucket_sizes = [c for c in buckets if c.strategy in plan.BUCKETED]
  assert len(bucket_sizes) == 12 * 2
  assert len(cells) + len(pinned) + len(bucket_sizes) + 5 * 4 == len(
      [c for c in every if c.workload in ('resnet20', 'googlenet')])
  assert len(set(cells)) == len(cells) == 7 * 4
  for strategy, rates in plan.BALANCED_RATES.items():
    # Three rates, slowest first, and the unshaped cell (the pinned
    # labels' and the bucket sizes' in their own subsets).
    assert list(rates) == sorted(rates) and len(set(rates)) == 3
    num_ps = 0 if plan.has_controller(strategy) else 1
    for rate in [r * 10**6 for r in rates] + [None]:
      assert (plan.Cell(rate, 'resnet20', 2, num_ps, strategy) in cells) != (
          plan.pinned(strategy) or strategy in plan.BUCKETED)
  # Every synchronous cluster strategy of the plan, with one and two
  # towers a worker for the all-reduces, and collective_all_reduce's
  # bucket sizes, and parameter_server's (plain and staged).
  assert set(plan.BALANCED_RATES) == (
      {s for s in plan.OWN if plan.kind(s) != 'async_ps'} |
      set(plan.TOWERED) | set(plan.BUCKETED) | set(plan.PINNED_LABELS))


def test_the_pinned_subset_runs_each_strategy_at_its_shared_rates(plan):
  """Each pinned label, with the benchmark's pools and with one thread a
  task, at its strategy's three rates and unshaped; the one-thread label
  passes --num_inter_threads 1 and only it does; the task entry's flag goes
  on every pinned cell's command and no other."""
  cells = plan.subset_plan(plan.FULL, 'pinned')['cells']()
  assert len(set(cells)) == len(cells) == 3 * 2 * 4
  for strategy in plan.PINNED_TRIALS:
    for label in (strategy + plan.PINNED,
                  strategy + plan.PINNED + plan.ONE_POOL):
      assert plan.unpinned(label) == strategy
      assert plan.BALANCED_RATES[label] == plan.BALANCED_RATES[strategy]
      assert plan.kind(label) == plan.kind(strategy)
      assert plan.has_controller(label) == plan.has_controller(strategy)
      num_ps = 0 if plan.has_controller(strategy) else 1
      for rate in [r * 10**6 for r in plan.BALANCED_RATES[strategy]] + [None]:
        assert plan.Cell(rate, 'resnet20', 2, num_ps, label) in cells
      flags = plan.LABELS[label][0]
      assert flags[:len(plan.STRATEGIES[strategy][0])] == (
          plan.STRATEGIES[strategy][0])
      assert ('--num_inter_threads' in flags) == label.endswith(
          plan.ONE_POOL)
      if label.endswith(plan.ONE_POOL):
        assert flags[-2:] == ['--num_inter_threads', '1']


def test_a_pinned_cell_pins_its_workers_alone(plan):
  runs = importlib.import_module('benchmarks.network.runs')
  cell = plan.Cell(165 * 10**6, 'resnet20', 2, 1,
                   'collective_all_reduce' + plan.PINNED)
  command, _ = runs.cell_flags(cell, 5, 2, 60)
  assert command[-1] == plan.PINNED_FLAG
  command, _ = runs.cell_flags(cell._replace(
      strategy='collective_all_reduce'), 5, 2, 60)
  assert plan.PINNED_FLAG not in command
  # Worker k on the k-th processor it may use, in turn; a PS task and a
  # controller on every one.
  worker = ['--model', 'resnet20', '--job_name=worker', '--task_index=%d']
  assert runs.worker_processor([a.replace('%d', '0') for a in worker],
                               [3, 5]) == 3
  assert runs.worker_processor([a.replace('%d', '1') for a in worker],
                               [3, 5]) == 5
  assert runs.worker_processor([a.replace('%d', '2') for a in worker],
                               [3, 5]) == 3
  assert runs.worker_processor(['--job_name=ps', '--task_index=0'],
                               [3, 5]) is None
  assert runs.worker_processor(['--job_name=controller'], [3, 5]) is None


# (strategy, c0 in seconds, bytes a worker's or the PS's link carries each
# way a step at 2 workers: the ring's 2(W-1)/W x B, W x B, 2 x W x B).
BOUNDS = [
    ('collective_all_reduce', 0.195, 1),
    ('distributed_all_reduce (xring)', 0.148, 1),
    ('staged parameter_server', 0.243, 2),
    ('parameter_server', 0.214, 4),
    ('distributed_replicated', 0.239, 4),
]


@pytest.mark.parametrize('strategy,c0,times', BOUNDS)
def test_each_rate_puts_the_bound_at_2x_1x_and_half_of_c0(
    plan, strategy, c0, times):
  """Each rate is the whole mbit nearest to the one at which B x (the
  strategy's multiple) at 0.96 of the rate takes 2, 1 and 0.5 times the
  strategy's c0."""
  assert plan.BALANCED_C0_MS[strategy] == int(round(c0 * 1000))
  for got, ratio in zip(plan.BALANCED_RATES[strategy], (2.0, 1.0, 0.5)):
    exact = 8.0 * 1089896 * times / (0.96 * ratio * c0) / 1e6
    assert abs(got - exact) <= 0.5, (strategy, got, exact)


@pytest.mark.parametrize('strategy, variable_update, sizes', [
    ('collective_all_reduce', 'collective_all_reduce', [0, 64, 1024]),
    ('distributed_all_reduce (xring)', 'distributed_all_reduce',
     [0, 64, 1024]),
    ('staged parameter_server', 'parameter_server', [64, 256, 1024]),
    ('parameter_server', 'parameter_server', [64, 256, 1024]),
])
def test_bucket_cells_pass_their_size(plan, strategy, variable_update, sizes):
  """Each bucket label runs its strategy's flags with its size, at the
  strategy's rates."""
  runs = importlib.import_module('benchmarks.network.runs')
  base_flags = plan.STRATEGIES[strategy][0]
  got = []
  for label in plan.BUCKETED:
    if plan.unbucketed(label) != strategy:
      continue
    cell = plan.Cell(165 * 10**6, 'resnet20', 2, 1, label)
    _, flags = runs.cell_flags(cell, 5, 2, 60.0)
    assert flags[flags.index('--variable_update') + 1] == variable_update
    assert flags[flags.index('--num_gpus') + 1] == '1'
    assert ('--staged_vars' in flags) == ('--staged_vars' in base_flags)
    got.append(int(flags[flags.index('--gradient_bucket_bytes') + 1]))
    assert plan.BALANCED_RATES[label] == plan.BALANCED_RATES[strategy]
    assert plan.kind(label) == plan.kind(strategy)
  assert sorted(got) == [k * 1024 for k in sizes]


def test_the_buckets_subset(plan):
  """Every bucket label and its strategy, at the rate where the bound is
  about c0, and unshaped."""
  cells = plan.subset_plan(plan.FULL, 'buckets')['cells']()
  strategies = set(plan.BUCKETED) | set(plan.BUCKET_TRIALS)
  want = set()
  for strategy in strategies:
    num_ps = 0 if plan.has_controller(strategy) else 1
    for rate in (plan.BALANCED_RATES[strategy][1] * 10**6, None):
      want.add(plan.Cell(rate, 'resnet20', 2, num_ps, strategy))
  assert len(cells) == len(set(cells)) == len(want) == 32
  assert set(cells) == want


def test_resnet20_cells_run_cifar10_at_16_a_tower(plan, timing):
  runs = importlib.import_module('benchmarks.network.runs')
  cell = plan.Cell(50 * 10**6, 'resnet20', 2, 1,
                   'collective_all_reduce' + plan.TWO_TOWERS)
  _, flags = runs.cell_flags(cell, 5, 2, 60.0)
  assert flags[flags.index('--data_name') + 1] == 'cifar10'
  assert flags[flags.index('--batch_size') + 1] == '16'
  assert flags[flags.index('--num_gpus') + 1] == '2'
  assert runs.images_a_step(cell) == 32
  # lenet keeps the small data and batch 8.
  _, flags = runs.cell_flags(cell._replace(workload='lenet'), 5, 1, 60.0)
  assert flags[flags.index('--data_name') + 1] == 'small'
  assert flags[flags.index('--batch_size') + 1] == '8'
  assert timing.cell_steps(plan.FULL, cell) == 5
  assert timing.cell_warmup(plan.FULL, cell) == 2


def test_the_googlenet_family(plan, timing):
  """googlenet on imagenet's synthetic images, 32 a worker, one tower:
  each synchronous strategy at its three rates and unshaped; the rates put
  the bound over its 28 MB (1001 classes) at 2x, 1x and 0.5x of c0."""
  runs = importlib.import_module('benchmarks.network.runs')
  from variable_mgr.benchmark.models import catalog  # pylint: disable=g-import-not-at-top
  shapes = catalog.variable_shapes('googlenet', 'imagenet')
  assert plan.GOOGLENET_BYTES == 4 * sum(int(np.prod(s)) for s in shapes)
  family = plan.FAMILIES['googlenet']
  assert list(family.rates) == [
      s for s in plan.OWN if plan.kind(s) != 'async_ps']
  cells = plan.subset_plan(plan.FULL, 'googlenet')['cells']()
  assert len(cells) == len(set(cells)) == 5 * 4
  times = {'ring': 1, 'staged_ps': 2, 'sync_ps': 4}
  for strategy, rates in family.rates.items():
    c0 = family.c0_ms[strategy] / 1000.0
    # The rate (mbit) whose bound is the ratio of c0, to a whole mbit.
    exact = [8.0 * plan.GOOGLENET_BYTES * times[plan.kind(strategy)] /
             (0.96 * ratio * c0) / 1e6 for ratio in (2.0, 1.0, 0.5)]
    assert list(rates) == [int(round(e)) for e in exact], (strategy, exact)
    for rate in [r * 10**6 for r in rates] + [None]:
      assert plan.Cell(rate, 'googlenet', 2, plan.num_ps_of(strategy, 1),
                       strategy) in cells
  _, flags = runs.cell_flags(cells[0], 4, 2, 60.0)
  assert flags[flags.index('--data_name') + 1] == 'imagenet'
  assert flags[flags.index('--batch_size') + 1] == '32'
  assert flags[flags.index('--model') + 1] == 'googlenet'
  assert timing.cell_steps(plan.FULL, cells[0]) == 4
  assert timing.cell_warmup(plan.FULL, cells[0]) == 2


def _run(cell, r, step, goodput=48e6, sent=None, steps=5):
  run = {'cell': list(cell), 'round': r, 'step_secs': [step],
         'goodput': goodput, 'timed_steps': steps, 'window': step * steps}
  if sent is not None:
    run['links'] = {str(h): [s * steps, s * steps]
                    for h, s in enumerate(sent)}
  return run


def test_balanced_rows_from_raw_runs(plan):
  table = importlib.import_module('benchmarks.network.table')
  balanced = importlib.import_module('benchmarks.network.balanced')
  total = float(sum(MODEL))  # 1.0 MB
  # Cells of the plan (rows come only for those), their rates as raw runs
  # would have them; the goodput below is what the test makes it.
  coll_mbit = plan.BALANCED_RATES['collective_all_reduce'][0]
  coll = plan.Cell(coll_mbit * 10**6, 'resnet20', 2, 1,
                   'collective_all_reduce')
  sync = plan.Cell(plan.BALANCED_RATES['parameter_server'][1] * 10**6,
                   'resnet20', 2, 1, 'parameter_server')
  runs = [
      # PS 0, then the workers: each worker carries B = 1.0 MB.
      _run(coll, 0, 0.26, sent=[2000.0, 1.02e6, 1.01e6]),
      _run(coll, 1, 0.24, sent=[2000.0, 1.02e6, 1.01e6]),
      dict(_run(coll._replace(rate=None), 0, 0.16), forward_share=0.25),
      dict(_run(coll._replace(rate=None), 1, 0.20), forward_share=0.5),
      _run(sync, 0, 0.30, goodput=192e6, sent=[4e6, 2e6, 2e6]),
      _run(sync._replace(rate=None), 0, 0.18)]
  results = {'plan': [plan.key(c) for c in (coll, sync)], 'runs': runs,
             'sizes': {'resnet20': MODEL}}
  rows = balanced.balanced_rows(table.Table(results), results['sizes'])
  assert [r[1] for r in rows] == ['parameter_server',
                                  'collective_all_reduce']
  ps_row, ring_row = rows
  ring = total * 8 / 48e6  # 2(W-1)/W x B / R at 2 workers: 167 ms
  assert ring_row[0] == '%dmbit, 2 workers x 1' % coll_mbit
  assert ring_row[2] == '250 ms (240-260)'
  assert ring_row[3] == '180 ms (160-200)'
  assert ring_row[4] == '2(W-1)/W x B / R %.0f ms' % (1000 * ring)
  # bound / c0, step / max(c0, bound), step / (c0 + bound): per round.
  over_c0 = sorted([ring / 0.16, ring / 0.20])
  assert ring_row[5] == '%.2fx (%.2f-%.2f)' % (
      sum(over_c0) / 2, over_c0[0], over_c0[1])
  over_max = sorted([0.26 / max(0.16, ring), 0.24 / max(0.20, ring)])
  assert ring_row[6] == '%.2fx (%.2f-%.2f)' % (
      sum(over_max) / 2, over_max[0], over_max[1])
  # 1.53x and 1.44x: above the goal in both rounds.
  assert ring_row[7] == '**not met**'
  over_sum = sorted([0.26 / (0.16 + ring), 0.24 / (0.20 + ring)])
  assert ring_row[8] == '%.2fx (%.2f-%.2f)' % (
      sum(over_sum) / 2, over_sum[0], over_sum[1])
  # The floor within a step, per round: f = share x c0 (40 and 100 ms),
  # step / max(c0, f + bound).
  over_floor = sorted([0.26 / max(0.16, 0.04 + ring),
                       0.24 / max(0.20, 0.10 + ring)])
  assert ring_row[9] == 'f 70 ms (40-100): %.2fx (%.2f-%.2f)' % (
      sum(over_floor) / 2, over_floor[0], over_floor[1])
  assert ring_row[10] == '1.02 / 1.02 (%.2fx / %.2fx)' % (
      1.02e6 / total, 1.02e6 / total)
  # The synchronous PS against 2 x W x B_ps / R (both variables on PS 0).
  pull_push = 2 * 2 * total * 8 / 192e6
  assert ps_row[4] == '2 x W x B_ps / R %.0f ms' % (1000 * pull_push)
  assert ps_row[6] == '%.2fx, one round' % (0.30 / max(0.18, pull_push))
  # Its pulls precede the forward pass: no floor within a step.
  assert ps_row[9] == 'no floor (pulls precede the forward pass)'
  assert ps_row[10] == '2.00 / 2.00 (%.2fx / %.2fx)' % (
      2e6 / total, 2e6 / total)


def test_the_unshaped_cells_of_the_floor_kinds_trace_a_step(plan):
  """The all-reduces' and the staged PS's unshaped cells of a balanced
  family trace a step (their forward pass's share); no shaped cell, no
  synchronous PS, no twin and no lenet cell does."""
  got = set()
  for cell in plan.every_cell():
    if plan.traced(cell):
      assert cell.rate is None and cell.workload in plan.FAMILIES
      got.add(plan.kind(cell.strategy))
      assert cell.strategy not in plan.TWINS
  assert got == {'ring', 'staged_ps'}
  cell = plan.Cell(None, 'resnet20', 2, 1, 'collective_all_reduce')
  assert plan.traced(cell)
  assert not plan.traced(cell._replace(rate=165 * 10**6))
  assert not plan.traced(cell._replace(workload='lenet'))
  assert not plan.traced(cell._replace(strategy='parameter_server'))
  assert not plan.traced(cell._replace(
      strategy='MultiWorkerMirroredStrategy'))


def _trace(path, loss_end_ms, end_ms):
  with open(str(path), 'w') as f:
    json.dump({'traceEvents': [
        {'ph': 'X', 'ts': 1000.0, 'dur': 1000.0 * (loss_end_ms - 1),
         'name': 'x', 'args': {'name': 'v0/tower_0/xentropy',
                               'op': 'SparseSoftmaxCrossEntropyWithLogits'}},
        {'ph': 'X', 'ts': 1000.0 * loss_end_ms,
         'dur': 1000.0 * (end_ms - loss_end_ms), 'name': 'y',
         'args': {'name': 'v0/tower_0/gradients/y', 'op': 'Conv2D'}}]}, f)


def test_the_forward_share_of_the_traces(plan, tmp_path):
  """The loss's end over the step's end, the mean over the workers'
  traces; None where no trace holds a loss."""
  runs = importlib.import_module('benchmarks.network.runs')
  assert runs.forward_share(str(tmp_path)) is None
  # A trace's times count from its first op: 20 of 80 ms, 30 of 60 ms.
  _trace(tmp_path / 'trace.worker0.json', 21, 81)
  _trace(tmp_path / 'trace.worker1.json', 31, 61)
  with open(str(tmp_path / 'results.json'), 'w') as f:
    f.write('{}')
  with open(str(tmp_path / 'trace.worker2.json'), 'w') as f:
    json.dump({'traceEvents': []}, f)
  assert abs(runs.forward_share(str(tmp_path)) - (0.25 + 0.5) / 2) < 1e-12


def test_the_subset_s_section(plan):
  text = importlib.import_module('benchmarks.network.text')
  cell = plan.Cell(50 * 10**6, 'resnet20', 2, 1, 'collective_all_reduce')
  results = {'plan': [plan.key(cell)], 'runs': [_run(cell, 0, 0.25)],
             'sizes': {'resnet20': MODEL}, 'bytes': {'resnet20': 1e6},
             'rounds': 1, 'goodput': {}, 'cut': []}
  lines = text.subset_lines(results, plan.subset_plan(plan.FULL,
                                                       'balanced'),
                            'abc', 'cmd', 60.0)
  assert lines[0] == ('## Compute and transfer comparable (issue 32): '
                      'steps against max(c0, bound)')
  assert ('### resnet20, 2 workers, against max(c0, bound) and c0 + bound'
          in lines)
  assert any('batch a tower: resnet20 16' in l for l in lines)


def test_every_subset_has_its_section(plan):
  text = importlib.import_module('benchmarks.network.text')
  assert set(text.SUBSET_SECTIONS) == set(plan.SUBSETS)


def test_the_pinned_subset_s_section_says_what_differs(plan):
  """The pinned file's method line and section name the processor a
  worker and the one-thread cells; a shared run's say neither."""
  text = importlib.import_module('benchmarks.network.text')
  label = 'collective_all_reduce' + plan.PINNED + plan.ONE_POOL
  cell = plan.Cell(plan.BALANCED_RATES[label][1] * 10**6, 'resnet20', 2, 1,
                   label)
  results = {'plan': [plan.key(cell)], 'runs': [_run(cell, 0, 0.09)],
             'sizes': {'resnet20': MODEL}, 'bytes': {'resnet20': 1e6},
             'rounds': 1, 'goodput': {}, 'cut': []}
  lines = text.subset_lines(results, plan.subset_plan(plan.FULL, 'pinned'),
                            'abc', 'cmd', 60.0)
  assert lines[0] == ('## A processor a worker (issue 32): steps against '
                      'max(c0, bound)')
  assert '- subset: pinned, 1 of the script\'s cells' in lines
  method = [l for l in lines if l.startswith('- every task a network')]
  assert method and 'a worker of a cell "a processor a worker", held to ' \
      'one' in method[0]
  assert any(l.startswith('In these cells every worker task runs on a '
                          'processor of its own') and
             '"1 inter-op thread a task"' in l and
             '`--num_inter_threads 1`' in l for l in lines)
  row = [l for l in lines if l.startswith('| %dmbit, 2 workers x 1 |' % (
      plan.BALANCED_RATES[label][1]))]
  assert row and '| %s |' % label in row[0]
  shared = dict(results, plan=[plan.key(cell._replace(
      strategy='collective_all_reduce'))], runs=[])
  method = [l for l in text.method_lines(shared, plan.FULL)
            if l.startswith('- every task a network')]
  assert 'held to one' not in method[0]


@pytest.mark.skipif(not hasattr(os, 'sched_setaffinity'),
                    reason='processor affinity is Linux only')
@pytest.mark.parametrize('argv,index', [
    (['--job_name=worker', '--task_index=1'], 1),
    (['--job_name=ps', '--task_index=0'], None)])
def test_pin_worker_holds_the_process_to_its_processor(argv, index):
  """pin_worker in a process of its own: a worker ends on the processor
  its index names among those the process could use; a PS task keeps them
  all."""
  code = (
      'import json, os, sys\n'
      'from benchmarks.network import runs\n'
      'before = sorted(os.sched_getaffinity(0))\n'
      'runs.pin_worker(sys.argv[1:])\n'
      'print(json.dumps([before, sorted(os.sched_getaffinity(0))]))\n')
  out = subprocess.run(
      [sys.executable, '-c', code] + argv, check=True, cwd=scriptlib.ROOT,
      stdout=subprocess.PIPE, universal_newlines=True,
      env=dict(os.environ, PYTHONPATH=os.pathsep.join(
          [scriptlib.ROOT, scriptlib.BENCHMARKS]))).stdout
  before, after = json.loads(out)
  assert after == (before if index is None else
                   [before[index % len(before)]])


def test_the_c0_subset_is_each_strategy_unshaped_once(plan):
  """`--subset c0`: the seven strategies of the c0 table on unshaped links,
  resnet20, 2 workers; no bucket or pinned label (those take their
  strategy's c0)."""
  cells = plan.subset_plan(plan.FULL, 'c0')['cells']()
  assert [c.strategy for c in cells] == list(plan.BALANCED_C0_MS)
  assert len(cells) == 7
  for cell in cells:
    assert cell.rate is None and cell.workload == 'resnet20'
    assert cell.workers == 2
    assert cell.num_ps == (0 if plan.has_controller(cell.strategy) else 1)


def test_the_c0_section_gives_the_rates_of_the_measured_c0(plan):
  """Each strategy's c0 (median over the rounds, range) beside the plan's,
  and the rates at which its bound over resnet20's bytes at 0.96 of the
  rate is 2x, 1x and 0.5x of that c0, to a whole mbit."""
  text = importlib.import_module('benchmarks.network.text')
  subset = plan.subset_plan(plan.FULL, 'c0')
  cells = subset['cells']()
  ring, ps = cells[3], cells[0]
  assert (ring.strategy, ps.strategy) == ('collective_all_reduce',
                                          'parameter_server')
  runs = [_run(ring, 0, 0.150), _run(ring, 1, 0.170), _run(ring, 2, 0.160),
          _run(ps, 0, 0.300)]
  results = {'plan': [plan.key(c) for c in cells], 'runs': runs,
             'sizes': {'resnet20': MODEL}, 'bytes': {'resnet20': 1e6},
             'rounds': 3, 'goodput': {}, 'cut': []}
  lines = text.subset_lines(results, subset, 'abc', 'cmd', 60.0)
  rows = [l for l in lines if l.startswith('| collective_all_reduce |') or
          l.startswith('| parameter_server |')]
  assert len(rows) == 2, lines

  def mbit(times, c0, ratio):
    return int(round(8.0 * 1089896 * times / (ratio * c0 * 0.96) / 1e6))

  assert rows[0] == '| parameter_server | 300 ms, one round | %d ms | %s |' % (
      plan.BALANCED_C0_MS['parameter_server'],
      ', '.join(str(mbit(4, 0.300, r)) for r in (2.0, 1.0, 0.5)))
  assert rows[1] == (
      '| collective_all_reduce | 160 ms (150-170) | %d ms | %s |' % (
          plan.BALANCED_C0_MS['collective_all_reduce'],
          ', '.join(str(mbit(1, 0.160, r)) for r in (2.0, 1.0, 0.5))))


def test_the_googlenet_c0_subset_and_section(plan, timing):
  """`--subset googlenet_c0`: googlenet's five strategies unshaped, 6 timed
  steps after 2 (its steps take seconds); the section puts each measured
  c0 beside GOOGLENET_C0_MS and gives the rates at which the bound over
  googlenet's bytes is 2x, 1x and 0.5x of it."""
  text = importlib.import_module('benchmarks.network.text')
  subset = plan.subset_plan(plan.FULL, 'googlenet_c0')
  cells = subset['cells']()
  assert [c.strategy for c in cells] == list(plan.GOOGLENET_C0_MS)
  for cell in cells:
    assert cell.rate is None and cell.workload == 'googlenet'
    assert (timing.cell_steps(subset, cell),
            timing.cell_warmup(subset, cell)) == (6, 2)
  # resnet20's unshaped cells keep their 20 steps after 3.
  resnet = plan.subset_plan(plan.FULL, 'c0')['cells']()[0]
  assert (timing.cell_steps(subset, resnet),
          timing.cell_warmup(subset, resnet)) == (20, 3)
  staged = cells[1]
  assert staged.strategy == 'staged parameter_server'
  results = {'plan': [plan.key(c) for c in cells],
             'runs': [_run(staged, 0, 5.0), _run(staged, 1, 6.0)],
             'sizes': {'googlenet': MODEL}, 'bytes': {'googlenet': 28e6},
             'rounds': 2, 'goodput': {}, 'cut': []}
  lines = text.subset_lines(results, subset, 'abc', 'cmd', 60.0)
  assert any('GOOGLENET_C0_MS' in l for l in lines), lines
  rows = [l for l in lines if l.startswith('| staged parameter_server |')]
  mbit = [int(round(8.0 * 27998308 * 2 / (r * 5.5 * 0.96) / 1e6))
          for r in (2.0, 1.0, 0.5)]
  assert rows == ['| staged parameter_server | 5500 ms (5000-6000) | %d ms '
                  '| %s |' % (plan.GOOGLENET_C0_MS['staged parameter_server'],
                              ', '.join(str(m) for m in mbit))]
