"""Two runs of a strategy with the same graph-level seed and the same data
give bit-identical variables on CPU: every sum adds its terms in a fixed
order (a chain of adds in tower order, the ring), whatever order the
executor runs the ops in (`tests/test_sum_in_order.py`: TensorFlow's add_n
does not keep its inputs' order).

That is a claim about the graph the library builds, so the runs are made
where nothing else can change a sum's order or a kernel's rounding, in a
child interpreter (the intra-op pool is made once a process, by its first
session, and oneDNN is chosen when TensorFlow loads):
- the graph runs as built: grappler's arithmetic optimizer sorts the
  inputs of an add_n by name, which would hide a sum whose order the
  library got wrong (its terms reversed at random, runs still agreed), and
  may fold a chain of adds into an add_n;
- one intra-op thread a kernel and no oneDNN kernels (TF 2.x), whose
  results are bit-exact only for a fixed split of their work; with them on,
  the suite saw two seeded runs differ in the last bit of a few elements,
  about once in a few hundred runs on a loaded machine.
Several inter-op threads keep the ops themselves running in varying orders.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import real_models

tf1 = tf.compat.v1

INTER_OP_THREADS = 4
CHILD_TIMEOUT = 600

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


def _first_difference(first, second):
  """None if the runs' variables are bit-identical, else what differs."""
  for t, (a, b) in enumerate(zip(first, second)):
    if sorted(a) != sorted(b):
      return 'tower %d variables %s != %s' % (t, sorted(a), sorted(b))
    for k in sorted(a):
      try:
        np.testing.assert_array_equal(a[k], b[k],
                                      err_msg='tower %d %s' % (t, k))
      except AssertionError as e:
        return str(e)
  return None


# (case name, strategy, model with batch norm)
CASES = [(name, name, True) for name in real_models.NAMES]
CASES.append(('staged_ps_without_batch_norm', 'staged_ps', False))


def _child_main(out_path):
  """Trains every case twice for both variable kinds, the graphs as built
  and one thread a kernel; writes {kind: {case: None or the first difference}}."""
  from variable_mgr import interface  # pylint: disable=g-import-not-at-top
  original = interface.BenchmarkCnnLike.session_config

  def session_config(self):
    config = original(self)
    config.intra_op_parallelism_threads = 1
    config.inter_op_parallelism_threads = INTER_OP_THREADS
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    return config

  interface.BenchmarkCnnLike.session_config = session_config
  tf1.disable_eager_execution()
  outcomes = {}
  for kind in ('ref', 'resource'):
    if kind == 'ref':
      tf1.disable_resource_variables()
    else:
      tf1.enable_resource_variables()
    outcomes[kind] = {}
    for case, name, batch_norm in CASES:
      model = MixedModel(batch_norm=batch_norm)
      outcomes[kind][case] = _first_difference(_train(name, model),
                                               _train(name, model))
  with open(out_path, 'w') as f:
    json.dump(outcomes, f)


@pytest.fixture(scope='module')
def outcomes(tmp_path_factory):
  out = str(tmp_path_factory.mktemp('determinism') / 'outcomes.json')
  env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS='0')
  proc = subprocess.run([sys.executable, os.path.abspath(__file__), out],
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                        env=env, timeout=CHILD_TIMEOUT, check=False)
  assert proc.returncode == 0, proc.stdout.decode(errors='replace')[-4000:]
  with open(out) as f:
    return json.load(f)


@pytest.mark.parametrize('case', [c[0] for c in CASES])
def test_two_runs_are_bit_identical(case, variable_kind, outcomes):
  difference = outcomes[variable_kind][case]
  assert difference is None, difference


def test_a_last_bit_apart_is_a_difference():
  first = [{'w': np.float32([1.0, 2.0])}]
  second = [{'w': np.float32([1.0, np.nextafter(np.float32(2), np.float32(3))])}]
  assert _first_difference(first, first) is None
  assert 'tower 0 w' in _first_difference(first, second)


if __name__ == '__main__':
  _child_main(sys.argv[1])
