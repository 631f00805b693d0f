"""`variable_mgr.ordering.find_readers` and `updates_after` on small graphs
made by hand, read off the graph: which ops count as reads of a ref
variable (an update of it is not one, nor an op that takes it as a ref, and
every consumer of a read is, also after an op that takes the read twice),
the end of a nested TF 1.x cond, and each kind of gradient passed through
`updates_after`.

tests/test_ordering.py runs whole strategies against NumPy with reads
that come late.
"""

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.ops import gen_control_flow_ops

from variable_mgr import ordering

tf1 = tf.compat.v1


def _ref(name, shape=(2,)):
  return tf1.get_variable(name, list(shape), use_resource=False,
                          initializer=tf1.ones_initializer())


def _names(readers):
  return sorted(op.name for op in readers)


def test_updates_of_a_ref_variable_are_not_its_readers():
  """Assign, ScatterAdd and ApplyGradientDescent take `v` as a ref input:
  updates, not reads; a Sum of its read and an Assign of its read to `w`
  (its value input, not a ref) are reads. Every op is consumed."""
  with tf.Graph().as_default() as graph:
    v, w = _ref('v'), _ref('w')
    tf.identity(tf1.assign(v, [2.0, 3.0], name='assign_v'))
    tf.identity(tf1.scatter_add(v, [0], [1.0], name='scatter_v'))
    tf.group(tf1.train.GradientDescentOptimizer(0.1).apply_gradients(
        [(tf.ones([2]), v)]))
    tf.identity(tf.reduce_sum(v.value(), name='sum_v'))
    tf.identity(tf1.assign(w, v.value(), name='assign_w'))
    assert [op.type for op in graph.get_operations()
            if op.type == 'ApplyGradientDescent'] == ['ApplyGradientDescent']
    readers = ordering.find_readers([v, w])
  assert _names(readers['v']) == ['assign_w', 'sum_v']


def test_a_ref_list_input_is_not_a_read():
  """RefSelect takes `a` and `v` in one list of ref inputs, after its
  index: neither is read by it (the ref argument spans both positions)."""
  with tf.Graph().as_default():
    a, v = _ref('a'), _ref('v')
    selected = gen_control_flow_ops.ref_select(
        tf.constant(1), [a._ref(), v._ref()])  # pylint: disable=protected-access
    tf.identity(selected)
    assert [t.dtype.name for t in selected.op.inputs] == [
        'int32', 'float32_ref', 'float32_ref']
    readers = ordering.find_readers([v, a])
  assert readers == {'v': [], 'a': []}


def test_every_consumer_of_a_read_after_one_that_takes_it_twice():
  """`read * read` takes the read twice; the Sum and the Neg built after it
  are reads too."""
  with tf.Graph().as_default():
    v = _ref('v')
    read = v.value()
    tf.identity(tf.multiply(read, read, name='square'))
    tf.identity(tf.reduce_sum(read, name='sum'))
    tf.identity(tf.negative(read, name='neg'))
    assert [op.name for op in read.consumers()].count('square') == 2
    readers = ordering.find_readers([v])
  assert _names(readers['v']) == ['neg', 'square', 'sum']


@pytest.fixture
def control_flow_v1():
  was_v2 = tf1.control_flow_v2_enabled()
  tf1.disable_control_flow_v2()
  yield
  if was_v2:
    tf1.enable_control_flow_v2()


def test_a_read_in_a_nested_cond_waits_for_the_outer_merge(control_flow_v1):
  """A read of `v` inside a cond inside a cond (TF 1.x Switch/Merge): its
  reader is the outer cond's Merge, the op that runs whichever branch
  runs; not the inner Merge, which an untaken outer branch never runs."""
  del control_flow_v1
  with tf.Graph().as_default():
    v = _ref('v')
    p = tf1.placeholder(tf.bool, [])
    q = tf1.placeholder(tf.bool, [])

    def inner():
      return tf.cond(q, lambda: tf.reduce_sum(v.value()) * 2.0,
                     lambda: tf.reduce_sum(v.value()) * 3.0)

    out = tf.cond(p, inner, lambda: tf.constant(5.0))
    tf.identity(out)
    readers = ordering.find_readers([v])
    merges = readers['v']
  assert merges and all(op.type == 'Merge' for op in merges)
  assert set(merges) == {out.op}, _names(merges)


def test_updates_after_waits_for_the_op_for_every_kind_of_gradient():
  """A dense and a sparse gradient come back as identities that wait for
  `op`, with their values unchanged; None stays None; the order stays."""
  graph = tf.Graph()
  with graph.as_default():
    u, v, w = _ref('u'), _ref('v', (3, 2)), _ref('w')
    barrier = tf.no_op(name='barrier')
    sparse = tf.IndexedSlices(tf.constant([[1.0, 2.0]]), tf.constant([2]),
                              tf.constant([3, 2]))
    dense = tf.constant([4.0, -5.0])
    result = ordering.updates_after(barrier, [(None, u), (sparse, v),
                                              (dense, w)])
    assert [var for _, var in result] == [u, v, w]
    assert result[0][0] is None
    got_sparse, got_dense = result[1][0], result[2][0]
    assert isinstance(got_sparse, tf.IndexedSlices)
    assert got_sparse.indices is sparse.indices
    for tensor in (got_sparse.values, got_dense):
      assert tensor.op.type == 'Identity'
      assert barrier in tensor.op.control_inputs
  with tf1.Session(graph=graph) as sess:
    values, dense_value = sess.run([got_sparse.values, got_dense])
  np.testing.assert_array_equal(values, [[1.0, 2.0]])
  np.testing.assert_array_equal(dense_value, [4.0, -5.0])
