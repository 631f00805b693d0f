"""Every sum the library makes of three or more tensors adds them in tower
order, whichever of their buffers another op still holds.

TensorFlow's CPU AddN adds into the first input whose buffer it may reuse
and moves that input to the front: with towers' values 1, 1e8 and -1e8 in
float32, the first two held by their variables and the third a fresh
buffer, `add_n` adds (-1e8 + 1e8) + 1 = 1, where the towers' order gives
(1 + 1e8) - 1e8 = 0 (1e8 + 1 rounds to 1e8). The graphs run as built
(grappler off: its arithmetic optimizer may fold a chain of adds back into
an AddN, `compat.sum_in_order`).
"""

import functools

import numpy as np
import pytest
import tensorflow as tf

from variable_mgr import aggregation
from variable_mgr import compat
from variable_mgr.allreduce import algorithms
from variable_mgr.strategies import worker_hierarchy

tf1 = tf.compat.v1

# Tower d's value; the first two are variables' (held), the third is fresh.
VALUES = (1.0, 1e8, -1e8)
SHAPE = [5]


def _in_order(values):
  """The towers' values added left to right in float32 (NumPy)."""
  return functools.reduce(np.add, [np.float32(v) for v in values])


def _towers(num_towers):
  """Tower d's tensor on `/cpu:d`: a variable's read for towers 0 and 1
  (and any past 2, valued 0), the negation of a fed value for tower 2; and
  the feeds."""
  values = list(VALUES) + [0.0] * (num_towers - len(VALUES))
  tensors, feeds = [], {}
  for d, value in enumerate(values):
    with tf1.device('/cpu:%d' % d):
      if d == 2:
        fed = tf1.placeholder(tf.float32, SHAPE)
        feeds[fed] = np.full(SHAPE, -value, np.float32)
        tensors.append(tf.negative(fed))
      else:
        var = tf1.get_variable('v%d' % d, initializer=tf1.constant(
            np.full(SHAPE, value, np.float32)))
        tensors.append(tf.identity(var))
  return values, tensors, feeds


def _run(num_towers, reduce_fn):
  """The values `reduce_fn(tensors)` computes, a list of arrays."""
  graph = tf.Graph()
  with graph.as_default():
    values, tensors, feeds = _towers(num_towers)
    outputs = reduce_fn(tensors)
    init = tf1.global_variables_initializer()
  config = tf1.ConfigProto(device_count={'CPU': num_towers})
  config.graph_options.rewrite_options.disable_meta_optimizer = True
  with tf1.Session(graph=graph, config=config) as sess:
    sess.run(init)
    return values, sess.run(outputs, feeds)


def _devices(k):
  return ['/cpu:%d' % d for d in range(k)]


def _copy_aggregation(tensors):
  with tf1.device('/cpu:0'):
    pairs = aggregation.aggregate_gradients_using_copy(
        [[(t, None)] for t in tensors], use_mean=False)
  return [g for g, _ in pairs]


def _one_tower_row(reduce_fn, k):
  """An all-reduce of one tensor a tower, its outputs flattened."""
  def run(tensors):
    return [row[0] for row in reduce_fn([[t] for t in tensors], _devices(k))]
  return run


SUMS = {
    'aggregation': (3, _copy_aggregation),
    'copy': (3, _one_tower_row(algorithms.copy, 3)),
    'shuffle': (3, _one_tower_row(functools.partial(
        algorithms.shuffle, param_devices=['/cpu:0'], num_shards=1), 3)),
    # Groups of towers 0-2 and 3-5: the first group's sum has three terms.
    'hierarchical_copy': (6, _one_tower_row(functools.partial(
        algorithms.hierarchical_copy, num_groups=2), 6)),
    'worker_sum': (3, lambda tensors: [
        worker_hierarchy.worker_sum(tensors, '/cpu:0', None)]),
}


def test_add_n_adds_in_another_order():
  """The hazard itself, on this TensorFlow: add_n of the towers gives 1."""
  _, (total,) = _run(3, lambda tensors: [tf.add_n(tensors)])
  np.testing.assert_array_equal(total, np.full(SHAPE, 1.0, np.float32))


@pytest.mark.parametrize('name', sorted(SUMS))
def test_sum_adds_in_tower_order(name, variable_kind):
  num_towers, reduce_fn = SUMS[name]
  values, outputs = _run(num_towers, reduce_fn)
  expected = np.full(SHAPE, _in_order(values), np.float32)
  assert expected[0] == 0.0
  for out in outputs:
    np.testing.assert_array_equal(out, expected)


def test_sum_in_order_of_one_tensor_is_that_tensor():
  with tf.Graph().as_default():
    x = tf1.placeholder(tf.float32, SHAPE)
    assert compat.sum_in_order([x]) is x


def test_sum_in_order_names_its_adds():
  with tf.Graph().as_default() as graph:
    xs = [tf1.placeholder(tf.float32, SHAPE) for _ in range(4)]
    total = compat.sum_in_order(xs)
  adds = [op for op in graph.get_operations() if op.type != 'Placeholder']
  assert len(adds) == 3
  assert all(op.name.startswith(compat.SUM_SCOPE + '/') for op in adds)
  assert total.op is adds[-1]
