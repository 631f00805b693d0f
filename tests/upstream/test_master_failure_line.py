"""The cause a results row gives for a failed test of master's: the error's
class and TensorFlow's cause line, not the head of its message (which on
TensorFlow 2 is "Graph execution error:")."""

import os
import sys

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))), 'benchmarks'))

import upstream_master  # pylint: disable=g-import-not-at-top,wrong-import-position

tf1 = tf.compat.v1


def _run_error():
  """The InvalidArgumentError of a reshape that fails inside a run."""
  with tf.Graph().as_default():
    x = tf1.placeholder(tf.float32, [None])
    y = tf.reshape(x, [3])
    with tf1.Session() as sess:
      try:
        sess.run(y, {x: np.zeros(4, np.float32)})
      except tf.errors.InvalidArgumentError as e:
        return e
  raise AssertionError('the reshape did not fail')


def test_failure_line_names_tensorflows_cause():
  error = _run_error()
  line = upstream_master.failure_line(type(error).__name__, str(error))
  assert line == ('InvalidArgumentError: Input to reshape is a tensor with 4 '
                  'values, but the requested shape has 3'), line


def test_failure_line_of_an_assertion_and_of_no_error():
  assert upstream_master.failure_line(
      'AssertionError', '1 != 2') == 'AssertionError: 1 != 2'
  assert upstream_master.failure_line('Exception', '') == 'Exception'
  assert upstream_master.failure_line('', '') == ''
