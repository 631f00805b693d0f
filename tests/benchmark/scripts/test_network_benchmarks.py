"""benchmarks/run_network_benchmarks.py: its bounds, placement model, plan,
round order and verdicts from raw figures (no cluster is started)."""

import importlib

import pytest

import scriptlib

# lenet's float32 variables (conv1, conv2, fc1, logits: weights, biases).
LENET = [3200, 128, 204800, 256, 6422528, 2048, 20480, 40]


@pytest.fixture(scope='module')
def script():
  scriptlib.load('run_network_benchmarks')  # Puts benchmarks/ and the root on the path.
  return importlib.import_module('benchmarks.network')


def test_bounds_in_closed_form(script):
  b = script.bounds(LENET, 2, 1, 200e6)
  total = sum(LENET)
  assert b['full_duplex'] == pytest.approx(2 * total * 8 / 200e6)
  assert b['pull_then_push'] == pytest.approx(4 * total * 8 / 200e6)
  assert b['ring'] == pytest.approx(total * 8 / 200e6)
  assert b['overlapped_sync'] == pytest.approx(3 * total * 8 / 200e6)
  assert b['worker_link'] == pytest.approx(2 * total * 8 / 200e6)
  # No PS task (MultiWorkerMirroredStrategy): B_ps is every byte.
  assert script.bounds(LENET, 4, 0, 1e9)['full_duplex'] == pytest.approx(
      4 * total * 8 / 1e9)


def test_placement_whole_and_partitioned(script):
  whole = script.ps_loads(LENET, 2)
  assert sum(whole) == pytest.approx(sum(LENET))
  # The 3136x512 layer cannot be split whole: one task holds it.
  assert whole == [6425984, 227496]
  split = script.ps_loads(LENET, 2, 1 << 20)
  assert sum(split) == pytest.approx(sum(LENET))
  # Two 3.21 MB slices, one a task; the small variables fill the other.
  assert split == [3237288, 3416192]
  assert script.busiest_ps_bytes(LENET, 2, 1 << 20) == max(split)
  # A variable under the threshold stays whole.
  assert script.ps_loads([100, 100], 2, 1000) == [100, 100]


def test_bounds_with_what_the_issue_leaves_out(script):
  b = dict(full_duplex=0.5, pull_then_push=1.0, ring=0.3,
           overlapped_sync=0.75, worker_link=0.5)
  assert script.bound_with_c0('ring', b, 0.05) == pytest.approx(0.35)
  assert script.bound_with_c0('async_ps', b, 0.1) == pytest.approx(0.6)
  assert script.bound_with_c0('async_ps', dict(b, full_duplex=2.0),
                              0.1) == pytest.approx(2.0)
  # Staged: the push follows the compute; the pull overlaps both.
  assert script.bound_with_c0('staged_ps', b, 0.1) == pytest.approx(0.6)
  assert script.bound_with_c0('staged_ps', dict(b, full_duplex=0.2),
                              0.1) == pytest.approx(0.35)
  assert script.bound_with_c0('sync_ps', b, 0.1) == pytest.approx(1.1)
  # 2 PS, 2 workers: the worker's own link is as loaded as the PS's.
  b2 = dict(b, full_duplex=0.26, pull_then_push=0.52)
  assert script.two_ps_floor('sync_ps', b2, None, 1.0) == pytest.approx(0.52)
  assert script.two_ps_floor('sync_ps', dict(b2, pull_then_push=0.4), None,
                             1.0) == pytest.approx(0.5)
  assert script.two_ps_floor('async_ps', b2, 0.1, 0.8) == pytest.approx(
      0.625)
  assert script.two_ps_floor('staged_ps', b2, 0.1, 0.5) == pytest.approx(
      0.72)


def test_round_order(script):
  cells = list('abcd')
  assert script.round_order(cells, 0, 2) == cells
  assert script.round_order(cells, 1, 2) == list('dcba')
  assert script.round_order(cells, 2, 4) == list('cdab')
  assert script.round_order(cells, 3, 4) == list('badc')
  assert script.round_order([], 1, 2) == []


def test_plans(script):
  full = script.full_cells()
  assert len(set(full)) == len(full)
  # The goals' cells and their unshaped twins are in both plans.
  for cells in (full, script.quick_cells()):
    for strategy, _, _ in script.GOALS:
      assert script.goal_cell(strategy) in cells
    for strategy in script.PS_STRATEGIES:
      assert script.goal_cell(strategy + script.PARTITIONED, 2) in cells
    assert script.goal_cell('MultiWorkerMirroredStrategy') in cells
    assert script.goal_cell('staged parameter_server')._replace(
        rate=None) in cells
  # What the docstring says the full plan leaves out.
  assert not [c for c in full if c.workload == 'resnet50_vars' and
              (c.rate != script.GBIT or c.workers != 2)]
  assert not [c for c in full if c.strategy.startswith('ParameterServerS')
              and c.num_ps != 1]
  assert [c.num_ps for c in full
          if c.strategy == 'MultiWorkerMirroredStrategy'] == [0] * 5
  # The rates: 200mbit and 1gbit (the balanced families' own rates are
  # in their subsets alone: test_network_balanced.py).
  assert {c.rate for c in full} == {script.MBIT, script.GBIT, None}
  assert {(c.workers, c.num_ps) for c in full if c.workload == 'lenet'
          and c.rate} == {(2, 0), (2, 1), (2, 2), (4, 0), (4, 1), (4, 2)}


def _run(script, cell, r, step, goodput=192e6):
  return {'cell': list(cell), 'round': r, 'step_secs': [step, step],
          'goodput': goodput}


def test_goal_rows_from_raw_runs(script):
  one = script.goal_cell('parameter_server')
  two = script.goal_cell('parameter_server' + script.PARTITIONED, 2)
  ring = script.goal_cell('collective_all_reduce')
  runs = [_run(script, one, 0, 1.0), _run(script, one, 1, 1.1),
          _run(script, two, 0, 0.5), _run(script, two, 1, 0.66),
          _run(script, ring, 0, 0.3), _run(script, ring, 1, 0.3),
          _run(script, ring._replace(rate=None), 0, 0.05, None),
          {'cell': list(script.goal_cell('distributed_replicated')),
           'round': 0, 'error': 'worker:1 failed (exit status 1): boom'}]
  results = {'plan': [], 'runs': runs, 'sizes': {'lenet': LENET}}
  t = script.Table(results)
  assert t.steps(two) == {0: 0.5, 1: 0.66}
  rows = {r[0].split(' at most')[0].split(',')[0] if '2 PS' not in r[0]
          else r[0].split(',')[0] + ' 2 PS': r for r in script.goal_rows(
              t, results['sizes'])}
  total = sum(LENET)
  bound = 4 * total * 8 / 192e6
  assert rows['parameter_server'][1] == '%.2fx (%.2f-%.2f)' % (
      (1.0 / bound + 1.1 / bound) / 2, 1.0 / bound, 1.1 / bound)
  # 2-PS over 1-PS within each round: 0.5 and 0.6; median 0.55: met.
  assert rows['parameter_server 2 PS'][1] == '0.55x (0.50-0.60)'
  assert rows['parameter_server 2 PS'][2] == 'met (1 of 2 rounds above)'
  ring_bound = total * 8 / 192e6
  assert rows['collective_all_reduce'][3] == '%.2fx, one round' % (
      0.3 / (ring_bound + 0.05))
  assert rows['distributed_replicated'][1].startswith('worker:1 failed')
  assert rows['distributed_replicated'][2] == 'not measured'


def test_verdicts(script):
  assert script.x_verdict([1.0, 1.2, 1.3], 1.1) == (
      '**not met** (1 of 3 rounds at or below)')
  assert script.x_verdict([1.0, 1.05], 1.1) == 'met'
  assert script.x_verdict([], 1.1) == 'not measured'
  assert script.x_spread([0.5]) == '0.50x, one round'
  assert script.ms_spread([0.1, 0.3, 0.2]) == '200 ms (100-300)'


def test_phase_distance(script):
  # b's steps end halfway through a's: alternating.
  assert script.phase_distance([0, 1, 2, 3], [0.5, 1.5, 2.5]) == 0.5
  # b's steps end just after a's: in phase.
  assert script.phase_distance([0, 1, 2, 3], [1.1, 2.05]) == pytest.approx(
      0.075)
  assert script.phase_distance([0, 1, 2], [0.9]) == pytest.approx(0.1)
  assert script.phase_distance([0, 1], [5]) is None
