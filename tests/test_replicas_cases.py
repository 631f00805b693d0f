"""`_replicas.copy_from_tower_zero_ops`, the post-init copy of tower 0's
values to the other towers of the strategies with a copy a tower: a tower
variable with no `v0/` source, or outside the tower scopes, is left alone,
and the variables after it are still copied. Run on one CPU, against the
initial values.
"""

import numpy as np
import tensorflow as tf

from variable_mgr.strategies import _replicas

tf1 = tf.compat.v1


def _variable(name, value):
  return tf1.get_variable(name, initializer=tf.constant(value))


def test_copies_past_a_variable_without_source(variable_kind):
  """v1/x (no v0/x) and a variable outside the towers keep their values;
  v1/y and v2/y, after them in the list, take v0/y's."""
  del variable_kind  # Ref and resource variables alike.
  graph = tf.Graph()
  with graph.as_default():
    only_one = _variable('v1/x', [5.0, 6.0])
    outside = _variable('global_x', [7.0, 8.0])
    source = _variable('v0/y', [1.0, 2.0])
    copies = [_variable('v%d/y' % d, [0.0, 0.0]) for d in (1, 2)]
    ops = _replicas.copy_from_tower_zero_ops(
        [only_one, outside, source] + copies)
    assert len(ops) == 2
    init = tf1.global_variables_initializer()
  with tf1.Session(graph=graph) as sess:
    sess.run(init)
    sess.run(ops)
    got = sess.run([only_one, outside, source] + copies)
  np.testing.assert_array_equal(got[0], [5.0, 6.0])
  np.testing.assert_array_equal(got[1], [7.0, 8.0])
  for value in got[2:]:
    np.testing.assert_array_equal(value, [1.0, 2.0])
