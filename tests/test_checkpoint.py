"""checkpoint.restore: where there is nothing to restore, nothing is."""

import numpy as np
import tensorflow as tf

from variable_mgr import checkpoint

tf1 = tf.compat.v1


def _graph():
  graph = tf.Graph()
  with graph.as_default():
    var = tf1.get_variable('w', initializer=tf.constant([1.0, 2.0]))
    assign = var.assign([3.0, 4.0])
    init = tf1.global_variables_initializer()
  return graph, var, assign, init


def test_restore_from_a_missing_or_empty_directory_is_none(tmp_path):
  graph, var, _, init = _graph()
  with tf1.Session(graph=graph) as sess:
    sess.run(init)
    with graph.as_default():
      assert checkpoint.restore(sess, str(tmp_path / 'none'), {'w': var}) is None
      assert checkpoint.restore(sess, str(tmp_path), {'w': var}) is None
    np.testing.assert_array_equal(sess.run(var), [1.0, 2.0])


def test_restore_from_a_directory_or_a_prefix(tmp_path):
  graph, var, assign, init = _graph()
  with tf1.Session(graph=graph) as sess:
    sess.run(init)
    sess.run(assign)
    with graph.as_default():
      prefix = tf1.train.Saver({'w': var}).save(sess, str(tmp_path / 'model'))
  for path in (str(tmp_path), prefix):
    graph, var, _, init = _graph()
    with tf1.Session(graph=graph) as sess:
      sess.run(init)
      with graph.as_default():
        assert checkpoint.restore(sess, path, {'w': var}) == prefix
      np.testing.assert_array_equal(sess.run(var), [3.0, 4.0])
