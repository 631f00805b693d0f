"""float16 variables and gradients on 4 towers whose gradient sum overflows
float16 (max 65504) while their mean fits: with accumulation_dtype='float32'
every strategy that combines gradients averages them without overflow and
stays within float16 tolerance of NumPy; without it the sum is inf."""

import numpy as np
import pytest
import tensorflow as tf

import real_models
from real_models import LinearModel

NUM_TOWERS = 4
STEPS = 3
LEARNING_RATE = 2.0 ** -12
# Each tower's column sums are 20000-30000: 4 of them add up past 65504.
LOW, HIGH = 5000, 7500

# Strategies that add gradients; replicated averages here (reduction='mean'),
# as its default sum would not fit float16 whatever the accumulation.
COMBINING = [name for name in real_models.NAMES if name != 'independent']


def make_batches(seed=0):
  rng = np.random.RandomState(seed)
  shape = (LinearModel.BATCH, LinearModel.IN)
  return [[(rng.uniform(LOW, HIGH, shape).astype(np.float16),)
           for _ in range(NUM_TOWERS)] for _ in range(STEPS)]


def _run(name, **options):
  if name != 'independent':
    options['reduction'] = 'mean'
  return real_models.Run(name, NUM_TOWERS, LinearModel(tf.float16),
                         learning_rate=LEARNING_RATE, **options)


def test_the_data_overflow_a_float16_sum():
  """The premise: NumPy's float16 sum is inf, the mean is finite."""
  grads = [LinearModel().gradients(None, batch)['linear/w']
           for batch in make_batches()[0]]
  with np.errstate(over='ignore'):
    total = np.sum(np.array(grads, np.float16), axis=0, dtype=np.float16)
  assert np.isinf(total).all()
  assert np.isfinite(np.mean(np.array(grads, np.float32), axis=0).astype(
      np.float16)).all()


def _check(run, name):
  model = LinearModel(tf.float16)
  init = run.values(0)
  batches = make_batches()
  history, _ = real_models.reference(model, init, batches, run.combine,
                                     stale=run.stale,
                                     learning_rate=LEARNING_RATE)
  for step_batches in batches:
    run.step(step_batches)
  for t in run.towers:
    got = run.values(t)
    assert got['linear/w'].dtype == np.float16
    real_models.assert_close(got, history[-1][t], np.float16,
                             model.TRAINABLE, '%s tower %d' % (name, t))


@pytest.mark.parametrize('name', COMBINING)
def test_float32_accumulation_matches_numpy(name, variable_kind):
  run = _run(name, accumulation_dtype='float32')
  try:
    _check(run, name)
  finally:
    run.close()


def test_independent_towers_never_add():
  run = _run('independent')
  try:
    _check(run, 'independent')
  finally:
    run.close()


@pytest.mark.parametrize('name', COMBINING)
def test_float16_sum_overflows_without_accumulation(name):
  run = _run(name)
  try:
    run.step(make_batches()[0])
    for t in run.towers:
      assert not np.isfinite(run.values(t)['linear/w']).any(), t
  finally:
    run.close()
