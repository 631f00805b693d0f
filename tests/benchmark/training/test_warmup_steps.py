"""The learning-rate warmup lasts int(w x E / B) steps, as
tf_cnn_benchmarks counts them: the steps of an epoch (E / B) are not
rounded before they are multiplied by the warmup's epochs.

digits has E = 1497 training images; at a global batch of B = 32 an epoch
is 46.78125 steps, so a warmup of 2 epochs lasts int(93.5625) = 93 steps
(46 x 2 = 92 rounding first) and one of 1.5 epochs int(70.17) = 70 (not
69). The rate is checked at the steps around the warmup's end.
"""

import pytest
import tensorflow as _tf

from variable_mgr.benchmark.flags import lr_schedule
from variable_mgr.benchmark.training import optimizers
from variable_mgr.benchmark.training import run_config

tf = _tf.compat.v1

DIGITS_TRAIN = 1497
BATCH = 32
RATE = 0.3


def _config(warmup_epochs):
  return run_config.BenchmarkConfig(
      model='lenet', data_name='digits', learning_rate=RATE,
      num_learning_rate_warmup_epochs=warmup_epochs).resolved()


def _rates(config, steps):
  """The rate tensor of `config` at a global batch of BATCH, at `steps`."""
  with tf.Graph().as_default():
    global_step = tf.train.get_or_create_global_step()
    rate = optimizers.learning_rate_tensor(config, global_step, BATCH)
    with tf.Session() as sess:
      values = []
      for step in steps:
        sess.run(global_step.assign(step))
        values.append(float(sess.run(rate)))
  return values


@pytest.mark.parametrize('warmup_epochs', [2, 1.5, 0.5])
def test_warmup_steps_are_the_unrounded_epoch_times_its_epochs(
    warmup_epochs):
  expected = int(float(DIGITS_TRAIN) / BATCH * warmup_epochs)
  config = _config(warmup_epochs)
  steps = lr_schedule.learning_rate_steps(config, BATCH, DIGITS_TRAIN)
  assert steps['warmup_steps'] == expected
  around = [expected - 2, expected - 1, expected, expected + 1]
  assert _rates(config, around) == pytest.approx(
      [RATE * s / expected for s in around[:2]] + [RATE, RATE], rel=1e-6)


def test_two_epochs_of_digits_warm_up_for_93_steps():
  # The closed form of the docstring, written out.
  assert lr_schedule.learning_rate_steps(
      _config(2), BATCH, DIGITS_TRAIN)['warmup_steps'] == 93
