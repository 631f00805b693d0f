"""benchmarks/results_report.py: RESULTS.md's verdicts carry the spread of
their rounds, and its one outside figure is labelled."""

import sys

import scriptlib

BENCHMARKS = scriptlib.BENCHMARKS


def _modules():
  if BENCHMARKS not in sys.path:
    sys.path.insert(0, BENCHMARKS)
  module = scriptlib.load('results_report')
  return module.rp, module


def _run(rb, replicated, mirrored, independent=0.010):
  candidates = rb.CANDIDATES
  step_seconds = dict((l, [independent] * len(replicated))
                      for l in candidates)
  step_seconds['replicated'] = replicated
  step_seconds[rb.MIRRORED] = mirrored
  return {'step_seconds': step_seconds,
          'profiles': dict((l, {'micros': {'AddN': 10}, 'nodes': {'AddN': 1}})
                           for l in candidates),
          'build_seconds': dict((l, 2.0) for l in candidates),
          'op_count': dict((l, 1000) for l in candidates),
          'variable_count': dict((l, 8) for l in candidates),
          'rss_added': dict((l, 1 << 20) for l in candidates),
          'peak_rss': 1 << 29, 'calibration': {'seconds': 0.2,
                                               'op_count': 1000},
          'load': 1.5, 'detail': dict((l, 'X') for l in candidates),
          'tf_version': '0.0'}


def test_verdicts_give_the_rounds(tmp_path):
  rb, rr = _modules()
  plan = dict(rb.QUICK, towers={'lenet': (4,), 'resnet50_vars': (8,)},
              rounds=4)
  results = {
      'steps': {
          # replicated / MirroredStrategy: 0.5, 0.7, 0.9, 1.0 a round.
          ('lenet', 4): _run(rb, [0.005, 0.007, 0.009, 0.010],
                             [0.010] * 4),
          # 0.55, 0.6, 0.6, 0.7: median 0.6.
          ('resnet50_vars', 8): _run(rb, [0.0055, 0.006, 0.006, 0.007],
                                     [0.010] * 4)},
      'memory': dict((l, {'rss_samples': [100 << 20, 100 << 20],
                          'peak_rss': 200 << 20}) for l in rb.CANDIDATES)}
  rows = dict((goal.split(' on ')[-1] if 'Mirrored' in goal else goal[:10],
               (measured, verdict))
              for goal, measured, verdict in rr.goals_rows(results, plan))
  measured, verdict = rows['lenet, 4 towers']
  assert measured.startswith('median 0.80x, rounds 0.50-1.00 ')
  assert verdict == 'met (2 of 4 rounds above 0.80x)'
  measured, verdict = rows['resnet50_vars, 8 towers']
  assert measured.startswith('median 0.60x, rounds 0.55-0.70 ')
  assert verdict == 'met (1 of 4 rounds above 0.65x)'
  text = rr.text(results, plan, 'SOURCE', 'COMMAND', 60.0)
  assert '- commit: SOURCE' in text
  assert ('half of 9.6 s: an outside figure, issue 3\'s build time of the '
          '2017-style replicated graph on 8 towers, not measured here') in text
