"""`variable_mgr.placement`'s load of an op that is not a variable (the
size of its first output) and `table_device` on a gather of a value
computed from a ref variable (not the variable's read: no table, so no
device of the variable's), read off built graphs.

tests/test_placement_graphs.py and tests/test_sparse_gradients.py place
whole models.
"""

import tensorflow as tf

from variable_mgr import placement

tf1 = tf.compat.v1


def test_a_non_variable_op_counts_its_first_output():
  """SplitV of a [4, 2] tensor into 1 and 3 rows: its first output [1, 2]
  holds 2 elements (the second 6), 8 bytes in float32; a Const [3, 4], one
  output, 12 elements."""
  with tf.Graph().as_default():
    first, second = tf.split(tf.zeros([4, 2]), [1, 3], 0)
    assert first.op is second.op and first.op.type == 'SplitV'
    assert placement.variable_op_num_elements(first.op) == 2
    assert placement.byte_size_load_fn(first.op) == 8
    const = tf.constant(1.0, shape=[3, 4])
    assert placement.variable_op_num_elements(const.op) == 12


def test_variable_ops_count_their_declared_shape(variable_kind):
  del variable_kind  # Ref and resource variables alike.
  with tf.Graph().as_default():
    v = tf1.get_variable('v', [5, 3], tf.float64)
    assert placement.variable_op_num_elements(v.op) == 15
    assert placement.byte_size_load_fn(v.op) == 120


def test_table_device_of_a_gather_of_a_computed_value_is_none():
  """A gather of abs(v) (an op before 'Identity' in name order, whose
  input is the ref variable itself) has no table: None, however the abs is
  placed; a gather of the variable's read (its Identity) goes to the
  read's device, and one of the variable itself to the variable's."""
  with tf.Graph().as_default():
    with tf1.device('/cpu:0'):
      v = tf1.get_variable('v', [4, 2], use_resource=False)
    assert v.op.type == 'VariableV2'
    with tf1.device('/cpu:1'):
      computed = tf.abs(v.op.outputs[0])
      read = tf.identity(v.op.outputs[0])
    assert computed.op.type == 'Abs' and computed.op.device
    assert computed.op.inputs[0].op is v.op
    indices = tf.constant([0, 2])
    assert placement.table_device(tf.gather(computed, indices).op) is None
    assert placement.table_device(
        tf.gather(read, indices).op) == '/device:CPU:1'
    assert placement.table_device(
        tf.gather(v.op.outputs[0], indices).op) == '/device:CPU:0'
