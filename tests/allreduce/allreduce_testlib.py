"""Helpers shared by the all-reduce tests: virtual CPU towers, random
`[tower][tensor]` inputs and NumPy references with a tolerance per dtype."""

import numpy as np
import tensorflow as tf

from variable_mgr.allreduce import layout

# Shapes of one tensor set: scalars, empty tensors, sizes below, at and above
# typical tower counts, and a non-multiple of every tested count.
SHAPES = [(), (0,), (1,), (7,), (3, 5), (2, 0, 3), (4, 4, 3), (41,)]

# Inputs are uniform in [-1, 1); the sum of k of them is off by at most a
# few half-ulps per addition.
_TOLERANCE = {
    np.float16: (2e-3, 4e-3),
    np.float32: (1e-6, 1e-6),
    np.float64: (1e-12, 1e-12),
}


def cpu_devices(k):
  return ['/cpu:%d' % d for d in range(k)]


def session_config(num_cpus):
  return tf.compat.v1.ConfigProto(device_count={'CPU': num_cpus})


def random_arrays(seed, k, dtype, shapes=SHAPES):
  rng = np.random.RandomState(seed)
  return [[rng.uniform(-1, 1, size=shape).astype(dtype) for shape in shapes]
          for _ in range(k)]


def build_and_run(reduce_fn, arrays, devices, num_cpus=None):
  """Feeds `arrays[d][i]` through placeholders on `devices[d]`, applies
  `reduce_fn(inputs, devices)` and runs it once on virtual CPUs.

  Returns:
    `(outputs, values)`: the output tensors and their computed values.
  """
  graph = tf.Graph()
  with graph.as_default():
    feeds = {}
    inputs = []
    for d, row in enumerate(arrays):
      with tf.device(devices[d]):
        tower = []
        for a in row:
          ph = tf.compat.v1.placeholder(a.dtype, a.shape)
          feeds[ph] = a
          tower.append(ph)
        inputs.append(tower)
    outputs = reduce_fn(inputs, devices)
  config = session_config(num_cpus or len(devices))
  with tf.compat.v1.Session(graph=graph, config=config) as sess:
    values = sess.run(outputs, feed_dict=feeds)
  return outputs, values


def assert_sums(arrays, outputs, values, devices):
  """Every tower's output equals the NumPy sum and sits on its device."""
  k = len(arrays)
  for i in range(len(arrays[0])):
    dtype = arrays[0][i].dtype
    expected = np.sum([row[i].astype(np.float64) for row in arrays], axis=0)
    rtol, atol = _TOLERANCE[dtype.type]
    for d in range(k):
      got = np.asarray(values[d][i])
      assert got.dtype == dtype, (d, i, got.dtype)
      assert got.shape == arrays[d][i].shape, (d, i, got.shape)
      np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol * k,
                                 err_msg='tower %d tensor %d' % (d, i))
      assert (layout.device_key(outputs[d][i].device)
              == layout.device_key(devices[d])), (d, i, outputs[d][i].device)
