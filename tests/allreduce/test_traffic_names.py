"""The traffic meter names a partition node's tensor in the built graph:
only a fed tensor's `_Arg` node is renamed (`_arg_x_0_1` is `x:0`); any
other node keeps its own name, even one that looks like an argument's.
Without the graph, a constant's send is sized by its value and another
node's by its `_output_shapes`; a send by its data input, not a control
input."""

import numpy as np
import pytest
import tensorflow as tf

from variable_mgr.allreduce import errors
from variable_mgr.allreduce import traffic

import allreduce_testlib as testlib


def test_a_node_named_like_an_argument_is_sized_by_its_own_shape():
  # "dense_layer_1_0" ends like an argument's name ("_arg_" + "x_1" + "_0")
  # but is an op of the graph: float32[2, 5], 40 bytes, sent once.
  graph = tf.Graph()
  with graph.as_default():
    with tf.device('/cpu:0'):
      fed = tf.compat.v1.placeholder(tf.float32, [2, 5], name='fed')
      layer = tf.multiply(fed, 3.0, name='dense_layer_1_0')
    with tf.device('/cpu:1'):
      step = tf.group(layer + 1.0)
  config = traffic.meter_config(testlib.session_config(2))
  with tf.compat.v1.Session(graph=graph, config=config) as sess:
    counts = traffic.measure(sess, step, {fed: np.ones([2, 5], np.float32)})
  by_index = dict((name.split(':')[-1], value)
                  for name, value in counts.items())
  assert by_index == {
      '0': traffic.DeviceTraffic(sent_bytes=40, received_bytes=0, sends=1,
                                 receives=0),
      '1': traffic.DeviceTraffic(sent_bytes=0, received_bytes=40, sends=0,
                                 receives=1),
  }


def _partition(source_op, value_shape=None, output_shape=None):
  """A partition graph of one source node (of op `source_op`, a float32
  value of `value_shape` and/or an `_output_shapes` entry of
  `output_shape`) sent from /cpu:0 to /cpu:1."""
  partition = tf.compat.v1.GraphDef()
  source = partition.node.add(name='source', op=source_op)
  if value_shape is not None:
    source.attr['value'].tensor.CopyFrom(tf.make_tensor_proto(
        np.zeros(value_shape, np.float32)))
  if output_shape is not None:
    source.attr['_output_shapes'].list.shape.add().CopyFrom(
        tf.TensorShape(output_shape).as_proto())
  send = partition.node.add(name='send', op='_HostSend', input=['source'])
  send.attr['T'].type = tf.float32.as_datatype_enum
  send.attr['send_device'].s = b'/cpu:0'
  send.attr['recv_device'].s = b'/cpu:1'
  return partition


def test_a_constant_without_the_graph_is_sized_by_its_value():
  # Const and HostConst (a constant kept in host memory): 3 x 4 floats.
  for op in traffic.CONST_OPS:
    counts = traffic.count_traffic([_partition(op, value_shape=[3, 4])])
    assert counts['/cpu:0'] == traffic.DeviceTraffic(48, 0, 1, 0), op
    assert counts['/cpu:1'] == traffic.DeviceTraffic(0, 48, 0, 1), op


def test_another_node_without_the_graph_is_sized_by_its_output_shapes():
  # A value attribute says nothing of another op's output.
  counts = traffic.count_traffic([_partition(
      'Identity', value_shape=[3, 4], output_shape=[5])])
  assert counts['/cpu:0'].sent_bytes == 20
  with pytest.raises(errors.TrafficMeterError,
                     match=r"send 'send' transfers 'source', whose shape is "
                           r'unknown \(None\)'):
    traffic.count_traffic([_partition('Identity', value_shape=[3, 4])])


def test_a_send_is_sized_by_its_data_input_not_by_a_control_input():
  # A NodeDef lists control inputs ("^name") after the data inputs; a send
  # that waits for a larger node still transfers only its data input.
  partition = _partition('Const', value_shape=[3, 4])
  other = partition.node.add(name='other', op='Const')
  other.attr['value'].tensor.CopyFrom(tf.make_tensor_proto(
      np.zeros([100], np.float32)))
  send = [n for n in partition.node if n.name == 'send'][0]
  send.input.append('^other')
  counts = traffic.count_traffic([partition])
  assert counts['/cpu:0'] == traffic.DeviceTraffic(48, 0, 1, 0)
