"""`ordering.find_readers` read off small graphs whose readers are known.

A metadata op on the variable (the Shape of a ref variable's value, the
VariableShape of a resource handle) reads no value: it is no reader, and
the readers made after it on the same tensor still are (the walk skips it
and goes on). A variable given twice is one entry, and
the variables after it are still looked at.
"""

import numpy as np
import tensorflow as tf

from variable_mgr import ordering

tf1 = tf.compat.v1


def _late_gather(variable):
  """(the gather op, its result used) of a gather of `variable` made after a
  metadata op on the tensor the gather reads; the shape's value is used
  too."""
  # Raw ops: tf.shape of a static shape folds to a constant.
  if variable.op.outputs[0].dtype == tf.resource:
    shape = tf.raw_ops.VariableShape(input=variable.handle)
  else:
    shape = tf.raw_ops.Shape(input=variable.value())
  rows = tf.gather(variable, [1, 0])
  gather = rows.op
  while gather.type == 'Identity':  # TF 1.15 follows a ResourceGather by one.
    gather = gather.inputs[0].op
  return gather, rows * tf.cast(shape[0], rows.dtype)


def test_a_reader_made_after_a_metadata_op_is_found(variable_kind):
  with tf.Graph().as_default():
    v = tf1.get_variable('v', initializer=np.arange(4, dtype=np.float32)
                         .reshape(2, 2))
    gather, doubled = _late_gather(v)
    readers = ordering.find_readers([v])[v.op.name]
    assert gather.type in ('Gather', 'GatherV2', 'ResourceGather')
    assert gather in readers
    assert not [op for op in readers if op.type in ordering.METADATA_OP_TYPES]
    with tf1.Session() as sess:
      sess.run(tf1.global_variables_initializer())
      np.testing.assert_array_equal(sess.run(doubled),
                                    [[4.0, 6.0], [0.0, 2.0]])


def test_a_variable_given_twice_leaves_the_next_one_looked_at(variable_kind):
  with tf.Graph().as_default():
    v = tf1.get_variable('v', initializer=np.ones(2, np.float32))
    w = tf1.get_variable('w', initializer=np.ones(2, np.float32))
    w_gather, _ = _late_gather(w)
    readers = ordering.find_readers([v, v, w])
    assert sorted(readers) == sorted([v.op.name, w.op.name])
    assert w_gather in readers[w.op.name]
