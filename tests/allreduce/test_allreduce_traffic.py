"""The traffic meter against a hand count."""

import numpy as np
import pytest
import tensorflow as tf

from variable_mgr.allreduce import errors
from variable_mgr.allreduce import traffic

import allreduce_testlib as testlib


def _run(graph, fetches, feeds=None):
  config = traffic.meter_config(testlib.session_config(3))
  with tf.compat.v1.Session(graph=graph, config=config) as sess:
    return traffic.measure(sess, fetches, feeds)


def test_hand_worked_graph():
  # a: float32[3] on CPU 0 (12 bytes), read on CPUs 1 and 2.
  # b: float64[3] on CPU 1 (24 bytes), read on CPU 2.
  # CPU 0 sends a twice; CPU 1 receives a and sends b; CPU 2 receives both.
  graph = tf.Graph()
  with graph.as_default():
    with tf.device('/cpu:0'):
      a = tf.compat.v1.placeholder(tf.float32, [3])
    with tf.device('/cpu:1'):
      b = tf.cast(a * 2.0, tf.float64)
    with tf.device('/cpu:2'):
      c = tf.cast(b, tf.float32) + a
      step = tf.group(c)
  counts = _run(graph, step, {a: np.ones([3], np.float32)})
  by_index = dict((name.split(':')[-1], value)
                  for name, value in counts.items())
  assert by_index == {
      '0': traffic.DeviceTraffic(sent_bytes=24, received_bytes=0, sends=2,
                                 receives=0),
      '1': traffic.DeviceTraffic(sent_bytes=24, received_bytes=12, sends=1,
                                 receives=1),
      '2': traffic.DeviceTraffic(sent_bytes=0, received_bytes=36, sends=0,
                                 receives=2),
  }
  assert traffic.busiest(counts) == 36


def test_unknown_shape_is_refused():
  graph = tf.Graph()
  with graph.as_default():
    with tf.device('/cpu:0'):
      a = tf.compat.v1.placeholder(tf.float32, [None])
    with tf.device('/cpu:1'):
      step = tf.group(a * 2.0)
  with pytest.raises(errors.TrafficMeterError, match='shape is unknown'):
    _run(graph, step, {a: np.ones([3], np.float32)})


def test_ring_lower_bound():
  assert traffic.ring_lower_bound(1, 100) == 0
  assert traffic.ring_lower_bound(4, 100) == 150
  assert traffic.ring_lower_bound(8, 800) == 1400
  with pytest.raises(errors.TrafficMeterError, match='at least 1'):
    traffic.ring_lower_bound(0, 100)


def test_meter_config_keeps_given_settings():
  config = traffic.meter_config(testlib.session_config(5))
  assert config.device_count['CPU'] == 5
  assert config.graph_options.rewrite_options.disable_meta_optimizer
