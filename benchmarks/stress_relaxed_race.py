#!/usr/bin/env python
"""Runs the relaxed step after a skipped inf step many times (not in CI).

    python benchmarks/stress_relaxed_race.py --runs 300
    python benchmarks/stress_relaxed_race.py --runs 100 --ref-state

The case of tests/test_relaxed_consistency.py::
test_with_a_dynamic_loss_scale_the_step_after_an_inf_is_skipped: replicated
on 3 towers, float16 towers, a dynamic loss scale, relaxed consistency, an
inf in step 1. A run fails when a tower's variables after some step are off
NumPy's (`deferred_reference`, float16 tolerance) or the loss scales of the
5 steps are not 128, 128, 64, 64, 64. Each run is a new graph and session;
the count is printed for each variable kind of the model (resource and ref).

`--ref-state` builds the manager's step state as ref variables when the
model's are (`variable_mgr.step_state.RESOURCE_STATE` off), the race that
module's doc describes: grappler reads the state past its snapshot.

Measured on 2 shared cores (load about 10), 2026-12-01:

    python3 benchmarks/stress_relaxed_race.py --runs 300
        TF 2.21.0: resource 0/300, ref 0/300 failures
    python3 benchmarks/stress_relaxed_race.py --runs 100 --kinds ref --ref-state
        TF 2.21.0: ref 5/100 failures (4 at step 1, the finite check seeing
        the inf of the current step; 1 at step 3, w1 off by 0.033)
    /tmp/venv37/bin/python benchmarks/stress_relaxed_race.py --runs 100
        TF 1.15.5: resource 0/100, ref 0/100 failures

With ref state on TF 1.15.5 the same case did not fail either (0/40): its
optimiser moves no op above a DeepCopy.
"""

import argparse
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _path in (os.path.join(ROOT, 'tests'), ROOT):
  if _path not in sys.path:
    sys.path.insert(0, _path)
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

# pylint: disable=g-import-not-at-top,wrong-import-position
import numpy as np
import tensorflow as tf

import options_harness
import test_relaxed_consistency as case
from variable_mgr import step_state

tf1 = tf.compat.v1
SCALES = [128.0, 128.0, 64.0, 64.0, 64.0]


def one_run():
  """The first failure of one run as a string, or None."""
  run = options_harness.Run(
      'replicated', case.NUM_TOWERS, dtype=tf.float16, use_fp16=True,
      auto_loss_scale=True, variable_consistency='relaxed')
  try:
    init = run.values(0)
    batches = options_harness.make_batches(case.NUM_TOWERS, len(SCALES))
    batches[1] = options_harness.with_inf(batches[1], 2)
    history = case.deferred_reference(init, batches, run.combine,
                                      float16=True, skipped={1})
    scales = []
    failure = None
    for step, step_batches in enumerate(batches):
      run.step(step_batches)
      scales.append(float(run.loss_scale()))
      for t in run.towers:
        got = run.values(t)
        for k in options_harness.VARIABLES:
          with np.errstate(invalid='ignore'):
            close = np.allclose(got[k], history[step][k], **case.FLOAT16)
          if not close and failure is None:
            failure = 'step %d tower %d %s: off by %.3g' % (
                step, t, k, np.abs(got[k] - history[step][k]).max())
    if scales != SCALES and failure is None:
      failure = 'loss scales %s' % scales
    return failure
  finally:
    run.close()


def stress(kind, runs):
  """Runs `runs` times with `kind` ('resource' or 'ref') model variables;
  returns the failure count."""
  if kind == 'ref':
    tf1.disable_resource_variables()
  else:
    tf1.enable_resource_variables()
  failures = 0
  for i in range(runs):
    failure = one_run()
    if failure:
      failures += 1
      print('  %s run %d: %s' % (kind, i, failure), flush=True)
  return failures


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--runs', type=int, default=300,
                      help='runs for each variable kind (default 300)')
  parser.add_argument('--kinds', default='resource,ref',
                      help='comma-separated: resource, ref')
  parser.add_argument('--ref-state', action='store_true',
                      help='ref step state with ref model variables (the '
                           'race the library prevents)')
  args = parser.parse_args(argv)
  if args.runs < 1:
    parser.error('--runs=%d: at least 1 run.' % args.runs)
  kinds = args.kinds.split(',')
  for kind in kinds:
    if kind not in ('resource', 'ref'):
      parser.error('--kinds=%s: each kind is resource or ref.' % args.kinds)
  step_state.RESOURCE_STATE = not args.ref_state
  warnings.filterwarnings('ignore')
  print('TF %s, %s state' % (tf.__version__,
                             'ref' if args.ref_state else 'resource'))
  total = 0
  for kind in kinds:
    failures = stress(kind, args.runs)
    total += failures
    print('%s: %d/%d failures' % (kind, failures, args.runs), flush=True)
  return 1 if total else 0


if __name__ == '__main__':
  sys.exit(main())
