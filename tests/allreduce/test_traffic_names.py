"""The traffic meter names a partition node's tensor in the built graph:
only a fed tensor's `_Arg` node is renamed (`_arg_x_0_1` is `x:0`); any
other node keeps its own name, even one that looks like an argument's."""

import numpy as np
import tensorflow as tf

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
