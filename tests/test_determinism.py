"""Two runs of a strategy with the same graph-level seed and the same data
give bit-identical variables on CPU: every sum adds its terms in a fixed
order (add_n, the ring), whatever order the executor runs the ops in."""

import numpy as np
import pytest
import tensorflow as tf

import real_models

tf1 = tf.compat.v1

# replicated_xring densifies the embedding gradient, and says so.
pytestmark = pytest.mark.filterwarnings(
    'ignore:this all-reduce needs dense tensors')

# Three: a sum of two terms is the same in either order, of three it is not.
NUM_TOWERS = 3
STEPS = 3
SEED = 1234


class MixedModel(object):
  """Embedding lookup and dense features -> dense -> batch norm (if
  `batch_norm`) -> tanh -> dense, a bias behind stop_gradient and an unused
  variable: every part of the other tests in one model."""

  WORDS, DIM, IN, HIDDEN, OUT, BATCH = 50, 8, 16, 32, 4, 16
  dtype = tf.float32

  def __init__(self, batch_norm=True):
    self.batch_norm = batch_norm

  def build(self):
    ids = tf1.placeholder(tf.int32, [self.BATCH])
    x = tf1.placeholder(self.dtype, [self.BATCH, self.IN])
    y = tf1.placeholder(self.dtype, [self.BATCH, self.OUT])
    init = tf1.random_normal_initializer(stddev=0.3)
    table = tf1.get_variable('embedding/words', [self.WORDS, self.DIM],
                             self.dtype, init)
    w1 = tf1.get_variable('layer1/w', [self.DIM + self.IN, self.HIDDEN],
                          self.dtype, init)
    bias = tf1.get_variable('layer1/frozen_bias', [self.HIDDEN], self.dtype,
                            init)
    w2 = tf1.get_variable('layer2/w', [self.HIDDEN, self.OUT], self.dtype,
                          init)
    tf1.get_variable('unused/w', [3], self.dtype, init)
    features = tf.concat([tf.nn.embedding_lookup(table, ids), x], 1)
    h = tf.matmul(features, w1) + tf.stop_gradient(bias)
    if self.batch_norm:
      h = real_models.batch_norm(h, 0.9, 1e-3)
    pred = tf.matmul(tf.tanh(h), w2)
    loss = 0.5 * tf.reduce_mean(tf.reduce_sum(tf.square(pred - y), axis=1))
    return loss, (ids, x, y)

  def batch(self, rng):
    return (rng.randint(0, self.WORDS, self.BATCH),
            rng.randn(self.BATCH, self.IN), rng.randn(self.BATCH, self.OUT))


def _train(name, model):
  run = real_models.Run(name, NUM_TOWERS, model, seed=SEED, global_step=True)
  try:
    for step_batches in real_models.make_batches(model, NUM_TOWERS, STEPS):
      run.step(step_batches)
    return [run.values(t) for t in run.towers]
  finally:
    run.close()


def _assert_identical(first, second):
  for t, (a, b) in enumerate(zip(first, second)):
    assert sorted(a) == sorted(b)
    for k in a:
      np.testing.assert_array_equal(a[k], b[k], err_msg='tower %d %s' % (t, k))


@pytest.mark.parametrize('name', real_models.NAMES)
def test_two_runs_are_bit_identical(name, variable_kind):
  model = MixedModel()
  _assert_identical(_train(name, model), _train(name, model))


def test_staged_ps_without_batch_norm_is_bit_identical(variable_kind):
  model = MixedModel(batch_norm=False)
  _assert_identical(_train('staged_ps', model), _train('staged_ps', model))
