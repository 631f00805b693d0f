"""collective_all_reduce's buckets at their byte bounds: after a gradient
with no static size, a bucket starts empty again and takes gradients up to
exactly `bucket_bytes`, not one byte more. The plan, and the values that
`reduce_bucket` gives for it, against NumPy (a reduce of 3x stands for
the collective of 3 workers with equal values).

tests/test_gradient_buckets.py holds the plan's other cases and the graph
of a worker.
"""

import numpy as np
import tensorflow as tf

from variable_mgr.strategies import gradient_buckets

tf1 = tf.compat.v1
Bucket = gradient_buckets.Bucket


def _plan(sizes, order, bucket_bytes):
  return gradient_buckets.plan(dict(enumerate(sizes)),
                               dict((i, tf.float32) for i in order),
                               order, bucket_bytes)


def test_a_bucket_after_an_unknown_size_fills_exactly():
  """16-byte buckets: the unknown-size gradient alone, then 8 + 8 bytes
  (exactly full) together, 8 + 12 apart; never 8 + 9 = 17."""
  assert _plan([None, 8, 8, 4], [0, 1, 2, 3], 16) == [
      Bucket([0], 0), Bucket([1, 2], 1), Bucket([3], 3)]
  assert _plan([None, 8, 9], [0, 1, 2], 16) == [
      Bucket([0], 0), Bucket([1], 1), Bucket([2], 2)]
  assert _plan([None, 8, 8, 8], [0, 1, 2, 3], 16) == [
      Bucket([0], 0), Bucket([1, 2], 1), Bucket([3], 3)]
  # From the start the same bound holds.
  assert _plan([8, 9], [0, 1], 16) == [Bucket([0], 0), Bucket([1], 1)]


def test_bucket_values_after_an_unknown_size_equal_numpy():
  """float32 gradients p (unknown shape), q [2] (8 B), r [3] (12 B), s [1]
  (4 B) with buckets of 23 bytes: p; q + r (20 B); s, since q + r + s is
  24 B, one byte over. Each bucket is one reduce (one collective), and
  every value is 3x its input."""
  values = [np.arange(5, dtype=np.float32),
            np.array([1.5, -2.0], np.float32),
            np.array([0.25, 4.0, -8.0], np.float32),
            np.array([10.0], np.float32)]
  graph = tf.Graph()
  with graph.as_default():
    unknown = tf1.placeholder(tf.float32, [None])
    tensors = [unknown] + [tf.constant(v) for v in values[1:]]
    sizes = dict((i, gradient_buckets.static_bytes(t))
                 for i, t in enumerate(tensors))
    assert sizes == {0: None, 1: 8, 2: 12, 3: 4}
    buckets = gradient_buckets.plan(
        sizes, dict((i, tf.float32) for i in sizes), [0, 1, 2, 3], 23)
    assert buckets == [Bucket([0], 0), Bucket([1, 2], 1), Bucket([3], 3)]
    reduced_inputs = []

    def reduce_fn(buffer):
      reduced_inputs.append(buffer)
      return buffer * 3.0

    results = {}
    for bucket in buckets:
      out = gradient_buckets.reduce_bucket(
          [tensors[i] for i in bucket.indices], reduce_fn)
      results.update(zip(bucket.indices, out))
    assert [t.shape.as_list() for t in reduced_inputs] == [[None], [5], [1]]
  with tf1.Session(graph=graph) as sess:
    got = sess.run([results[i] for i in range(4)], {unknown: values[0]})
  for i, (value, want) in enumerate(zip(got, values)):
    np.testing.assert_array_equal(value, want * 3.0, err_msg='gradient %d' % i)
    assert value.shape == want.shape
