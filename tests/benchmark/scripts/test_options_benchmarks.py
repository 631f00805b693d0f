"""benchmarks/run_options_benchmarks.py: its figures from the raw
measurements (bytes a step, applied steps, ratios of a round, verdicts)."""

import pytest

import scriptlib


@pytest.fixture(scope='module')
def script():
  return scriptlib.load('run_options_benchmarks')


def test_bytes_a_step_and_the_expected_fraction(script):
  assert script.per_step_bytes({'rx': 100, 'tx': 1000},
                               {'rx': 900, 'tx': 5000}, 8) == {
                                   'rx': 100.0, 'tx': 500.0}
  assert script.expected_fraction(4) == 0.625
  assert script.expected_fraction(1) == 1.0
  assert script.applied_step_seconds(0.1, 4) == pytest.approx(0.4)


def test_candidates_and_plans(script):
  assert 'relaxed' in script.candidates('replicated')
  assert 'relaxed' not in script.candidates('parameter_server')
  script.check_plan(script.FULL)
  script.check_plan(script.QUICK)
  with pytest.raises(ValueError) as e:
    script.check_plan(dict(script.FULL, steps=6))
  assert str(e.value).startswith('steps=6: must be a multiple of 4')


def _cluster_run(rx, tx, step):
  return {'bytes': {'rx': rx, 'tx': tx}, 'step_secs': [step, step]}


def test_section_from_raw_figures(script):
  times = {'plain': [0.10, 0.20], 'fp16': [0.5, 1.2], 'bpps4': [0.11, 0.18],
           'plain, batch x4': [0.4, 0.6], 'relaxed': [0.12, 0.20]}
  cell = {'step_seconds': times, 'loss': dict((k, 2.0) for k in times),
          'loss_scale': {'fp16': 128.0}, 'tf_version': '2.x'}
  results = {'steps': {'replicated': cell}, 'cluster': [
      {1: _cluster_run(8e6, 8e6, 1.0), 4: _cluster_run(2e6, 8e6, 0.6)},
      {4: _cluster_run(2.4e6, 8e6, 0.7), 1: _cluster_run(8e6, 8e6, 1.0)},
      {1: {'error': 'worker:1 failed'}, 4: _cluster_run(1e6, 1e6, 0.1)}]}
  lines = script.section_lines(results, script.FULL, 'abc', 'cmd', 60.0)
  # Ratios pair the rounds: fp16 5.0x and 6.0x; relaxed 1.2x and 1.0x.
  assert ('| fp16 | 850.0 | median 5.50x, rounds 5.00-6.00 | 2.000 | loss '
          'scale at the end 128 |') in lines
  # An applied step: 4 micro-batch steps, against plain and the 4x batch.
  # 0.44 and 0.72 s: 4.4x and 3.6x plain's, 1.1x and 1.2x the 4x batch's.
  assert ('| bpps4, an applied step (4 micro-batches) | 580.0 | median '
          '4.00x, rounds 3.60-4.40 | | vs plain, batch x4: median 1.15x, '
          'rounds 1.10-1.20 |') in lines
  # The failed round is left out of the cluster's ratios.
  assert ('bpps4 over plain: gradient bytes median 0.28x, rounds 0.25-0.30; '
          'variable bytes median 1.00x, rounds 1.00-1.00; all bytes median '
          '0.64x, rounds 0.62-0.65 (expected 0.625x: the variables are read '
          'every micro-batch step); step time median 0.65x, rounds '
          '0.60-0.70.') in lines
  verdicts = lines[lines.index('### Verdicts') + 2:]
  assert verdicts == [
      '- replicated, relaxed vs plain: median 1.10x, rounds 1.00-1.20; goal '
      'at most 1.10x: met (1 of 2 rounds above 1.10x)',
      '- replicated, bpps4 (a micro-batch step) vs plain: median 1.00x, '
      'rounds 0.90-1.10; goal at most 1.10x: met',
      '- cluster, bpps4, gradient bytes a micro-batch step vs plain: median '
      '0.28x, rounds 0.25-0.30; goal at most 0.30x: met',
      '- cluster, bpps4, step time a micro-batch step vs plain: median '
      '0.65x, rounds 0.60-0.70; goal at most 0.75x: met']
  assert any(l.startswith('| 3 | plain | failed: worker:1 failed')
             for l in lines)
