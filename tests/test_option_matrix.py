"""Every training option x every local strategy x ref and resource variables,
on a model with dense and sparse (a `tf.gather` of a table) gradients,
against NumPy (tests/matrix_model.py).

The options: float16 towers with a dynamic loss scale (a small
`inc_loss_scale_every_n` and an inf planted so that the scale halves and
doubles within the run, asserted after every step against
`matrix_model.next_loss_scale`), accumulation of 2 backward passes with a
fixed scale, of 3 with a dynamic scale (whose good steps are cycles), and
relaxed consistency with a dynamic scale (whose first step counts for
nothing). Where a strategy refuses an option, the refusal is
asserted instead. Plain float32 accumulation at 1, 2 and 3 passes is
tests/test_accumulation.py's, on a dense model.
"""

import numpy as np
import pytest
import tensorflow as tf

import matrix_model
import options_harness
import variable_mgr
from matrix_model import Case
from matrix_model import dynamic_options
from matrix_model import FLOAT16
from matrix_model import FLOAT32
from options_harness import Run
from variable_mgr import errors

NUM_TOWERS = 2
STRATEGIES = ['independent', 'ps_cpu', 'ps_spread', 'staged_ps',
              'replicated', 'replicated_xring2', 'replicated_pscpu_rechd']
REPLICATED = [s for s in STRATEGIES if s.startswith('replicated')]


# Few graphs a strategy (each graph costs about a second, its steps almost
# nothing): the options compose, so each run covers several. Plain relaxed
# consistency in float32 is tests/test_relaxed_consistency.py's.
CASES = {
    'fp16_dynamic': Case(6, (1, 1), **dynamic_options(2)),
    'accumulate2_fp16_fixed': Case(4, backward_passes_per_step=2,
                                   use_fp16=True, loss_scale=8),
    # An inf in the first micro-batch of the second cycle; every cycle is a
    # good step or a bad one.
    'accumulate3_fp16_dynamic': Case(12, (3, 0), backward_passes_per_step=3,
                                     **dynamic_options(1)),
    # The inf of step 1 is handed over, and skipped, at step 2; step 0
    # hands nothing and does not count.
    'relaxed_fp16_dynamic': Case(6, (1, 1), variable_consistency='relaxed',
                                 **dynamic_options(2)),
}
RELAXED = [c for c in sorted(CASES) if c.startswith('relaxed')]
# Under ref and resource variables (the `variable_kind` fixture): the
# dynamic cases, which hold accumulation, float16 and relaxed too; the fixed
# scale under the generation's default (resource on TensorFlow 2, ref on
# 1.15).
BOTH_KINDS = ([(s, c) for c in sorted(CASES)
               if c not in RELAXED and c != 'accumulate2_fp16_fixed'
               for s in STRATEGIES] +
              [(s, c) for c in RELAXED for s in REPLICATED])
DEFAULT_KIND = [(s, 'accumulate2_fp16_fixed') for s in STRATEGIES]


def _reference(run, case, init, batches):
  return matrix_model.simulate(
      init, batches, run.combine, stale=run.stale,
      passes=case.create.get('backward_passes_per_step', 1),
      micro_mean=run.mgr.reduction == 'mean',
      relaxed=case.create.get('variable_consistency') == 'relaxed',
      float16=case.float16, dynamic=case.dynamic)


@pytest.mark.parametrize('strategy,case', BOTH_KINDS,
                         ids=['%s-%s' % m for m in BOTH_KINDS])
def test_option_matches_numpy(strategy, case, variable_kind):
  _check(strategy, CASES[case])


@pytest.mark.parametrize('strategy,case', DEFAULT_KIND,
                         ids=['%s-%s' % m for m in DEFAULT_KIND])
def test_option_with_default_variables_matches_numpy(strategy, case):
  _check(strategy, CASES[case])


def _check(strategy, case):
  dtype = tf.float16 if case.float16 else tf.float32
  run = Run(strategy, NUM_TOWERS, dtype=dtype,
            model=matrix_model.GatherModel(), **case.create)
  try:
    init = run.snapshot()[0][0]
    batches = case.batches(NUM_TOWERS)
    history, scales = _reference(run, case, init, batches)
    if case.dynamic:
      # The run sees the scale halve and double.
      changes = np.diff([case.dynamic[0]] + scales)
      assert (changes < 0).any() and (changes > 0).any(), scales
    tolerance = FLOAT16 if case.float16 else FLOAT32
    for step, step_batches in enumerate(batches):
      run.step(step_batches)
      copies, scale = run.snapshot()
      for t, got in zip(run.towers, copies):
        matrix_model.assert_close(got, history[step][t], tolerance,
                                  '%s step %d tower %d' % (strategy, step, t))
      if case.float16:
        want = scales[step] if case.dynamic else case.create['loss_scale']
        assert scale == want, (step, scale, scales)
    final = copies[0]
    np.testing.assert_array_equal(final[matrix_model.TABLE][-1],
                                  init[matrix_model.TABLE][-1])
    assert not np.allclose(final['layer1/w1'], init['layer1/w1'])
  finally:
    run.close()


@pytest.mark.parametrize('strategy', [s for s in STRATEGIES
                                      if s not in REPLICATED])
def test_relaxed_outside_replicated_is_refused(strategy):
  create_args, host_args, _ = options_harness.LOCAL_STRATEGIES[strategy]
  with tf.Graph().as_default() as graph:
    host = variable_mgr.LocalBenchmarkCnn(NUM_TOWERS, **host_args)
    with pytest.raises(errors.IncompatibleOptionsError,
                       match=r"variable_consistency='relaxed' with \w+: "
                             r'relaxed consistency defers the all-reduce of '
                             r'replicated'):
      variable_mgr.create(benchmark_cnn=host, variable_consistency='relaxed',
                          **create_args)
    assert not graph.get_operations()


def test_the_loss_scale_schedule():
  """The reference's schedule, from 4 with every_n=2: doubles on the good
  step after 2 in a row, halves on a bad one (not below 1)."""
  scale, good, seen = 4.0, 0, []
  for finite in [True] * 6 + [False] * 6:
    scale, good = matrix_model.next_loss_scale(scale, good, finite, 2)
    seen.append(scale)
  assert seen == [4, 4, 8, 8, 8, 16, 8, 4, 2, 1, 1, 1]
