"""A gather of a variable (an embedding lookup) is a read of it: the
variable's update waits for it (`variable_mgr.ordering`).

The model of `test_ordering`'s race, with the late read a gather: the last
layer's rows, permuted, are gathered only after an op that sleeps, while
that layer's own gradient is ready at once. On a resource variable the
gather is a `ResourceGather` of the handle, which takes the handle as the
updates do but reads; an update that does not wait for it lands first, and
the first layer then trains on the updated rows. Every strategy must match
NumPy, with ref and with resource variables.
"""

import time

import numpy as np
import pytest
import tensorflow as tf

import seed_harness
import test_ordering
from test_ordering import BATCH, DELAY_SECONDS, LEARNING_RATE, M, N
from test_ordering import spare_threads  # pylint: disable=unused-import
from variable_mgr import ordering

tf1 = tf.compat.v1

# The rows of the last layer the slow path reads, in this order.
ROWS = np.array([3, 0, 5, 1, 4, 2], np.int32)
STRATEGIES = ['independent', 'ps_cpu', 'ps_spread', 'replicated',
              'replicated_xring']


def _sleep():
  time.sleep(DELAY_SECONDS)
  return np.float32(0)


def late_gather_model():
  """loss = 0.5 mean|x w2 - y|^2 + 0.5 mean|tanh(x w1) sg(w2'[ROWS]) - y2|^2,
  where w2'[ROWS] is gathered from w2 only after the delay."""
  x = tf1.placeholder(tf.float32, [BATCH, N])
  y = tf1.placeholder(tf.float32, [BATCH, M])
  y2 = tf1.placeholder(tf.float32, [BATCH, M])
  init = tf1.random_normal_initializer(stddev=0.5)
  w1 = tf1.get_variable('layer1/w1', [N, N], tf.float32, init)
  w2 = tf1.get_variable('layer2/w2', [N, M], tf.float32, init)
  delay = tf1.py_func(_sleep, [], tf.float32, stateful=True)
  with tf1.control_dependencies([delay.op]):
    w2_late = tf.stop_gradient(tf.gather(w2, tf.constant(ROWS)))
  fast = tf.matmul(x, w2) - y
  slow = tf.matmul(tf.tanh(tf.matmul(x, w1)), w2_late) - y2
  loss = 0.5 * (tf.reduce_mean(tf.reduce_sum(tf.square(fast), 1)) +
                tf.reduce_mean(tf.reduce_sum(tf.square(slow), 1)))
  return loss, (x, y, y2)


def numpy_gradients(w, batch):
  x, y, y2 = batch
  gathered = w['w2'][ROWS]
  h = np.tanh(x.dot(w['w1']))
  d_slow = (h.dot(gathered) - y2) / BATCH
  d_h = d_slow.dot(gathered.T) * (1 - h * h)
  return {'w1': x.T.dot(d_h), 'w2': x.T.dot((x.dot(w['w2']) - y) / BATCH)}


def reference(init, batches, combine):
  """Per step, every tower's weights after it."""
  num_towers = len(batches[0])
  towers = [dict((k, v.astype(np.float64)) for k, v in init.items())
            for _ in range(num_towers)]
  result = []
  for step_batches in batches:
    grads = [numpy_gradients(w, b) for w, b in zip(towers, step_batches)]
    if combine == 'none':
      towers = [dict((k, w[k] - LEARNING_RATE * g[k]) for k in w)
                for w, g in zip(towers, grads)]
    else:
      scale = 1.0 / num_towers if combine == 'mean' else 1.0
      new = dict((k, towers[0][k] - LEARNING_RATE * scale *
                  sum(g[k] for g in grads)) for k in towers[0])
      towers = [dict(new) for _ in towers]
    result.append(towers)
  return result


@pytest.mark.parametrize('name', STRATEGIES)
def test_an_update_waits_for_a_late_gather_of_its_variable(name,
                                                           variable_kind):
  create_args, host_args, combine, _ = test_ordering.STRATEGIES[name]
  num_towers = 2
  run = seed_harness.Harness(create_args, host_args, num_towers,
                             late_gather_model, LEARNING_RATE, tf.float32)
  batches = test_ordering.make_batches(num_towers)
  test_ordering.check_steps_against(
      run, batches, lambda init: reference(init, batches, combine),
      num_towers)


def test_a_resource_gather_is_a_reader_and_an_update_is_not():
  """`find_readers` of a resource variable: its gathers and reads, not its
  updates (assign, scatter, apply) nor what looks at its shape."""
  with tf.Graph().as_default():
    var = tf1.get_variable('table', [4, 2], tf.float32, use_resource=True)
    gather = tf.gather(var, [1, 3])
    read = var.read_value()
    keep = tf.add_n([tf.reduce_sum(gather), tf.reduce_sum(read)])
    var.assign(tf.zeros([4, 2]))
    var.scatter_add(tf.IndexedSlices(tf.ones([1, 2]), tf.constant([0])))
    tf1.train.GradientDescentOptimizer(0.1).apply_gradients(
        [(tf.ones([4, 2]), var)])
    tf.shape(var)
    readers = ordering.find_readers([var])[var.op.name]
  assert keep.op not in readers
  assert sorted(op.type for op in readers) == ['ReadVariableOp',
                                               'ResourceGather']
