"""The benchmark's synthetic batch (`harness.synthetic_inputs`): images in
[-1, 1), labels floor(u x classes) of a stateless uniform u, so every class
comes up about equally often; one fixed batch a tower and seed."""

import numpy as np
import tensorflow as _tf

from variable_mgr.benchmark.models import catalog
from variable_mgr.benchmark.training import harness

tf = _tf.compat.v1


def _batch(model, size, seed, tower):
  with tf.Graph().as_default():
    images, labels = harness.synthetic_inputs(model, size, seed, tower)
    u = tf.random.stateless_uniform([size], [seed, 2 * tower + 1])
    with tf.Session() as sess:
      return sess.run([images, labels, u])


def test_labels_are_the_uniform_draw_spread_over_the_classes():
  model = catalog.get_model('trivial')
  classes = model.num_classes
  images, labels, u = _batch(model, 4096, 7, 1)
  np.testing.assert_array_equal(labels, np.minimum(
      np.floor(u * classes).astype(np.int32), classes - 1))
  counts = np.bincount(labels, minlength=classes)
  assert len(counts) == classes
  # 4096 draws: each class within 25% of an equal share.
  assert (np.abs(counts - 4096.0 / classes) < 0.25 * 4096.0 / classes).all()
  assert images.min() >= -1.0 and images.max() < 1.0
  assert images.shape == (4096,) + tuple(model.image_shape)


def test_each_tower_has_its_own_fixed_batch():
  model = catalog.get_model('trivial')
  a = _batch(model, 64, 7, 0)
  again = _batch(model, 64, 7, 0)
  other = _batch(model, 64, 7, 1)
  np.testing.assert_array_equal(a[0], again[0])
  np.testing.assert_array_equal(a[1], again[1])
  assert not np.array_equal(a[0], other[0])
  assert not np.array_equal(a[1], other[1])


def test_each_tower_makes_its_batch_on_its_own_machine():
  """A controller's towers live on every worker: tower d's synthetic batch
  is made on its own worker's CPU, so no image crosses the network (made
  on worker 0's, worker 1's batches took 1.18x the ring's bytes over its
  link with resnet20 on cifar10). A worker's and a local host's towers
  take their host's CPU."""
  import controller_cluster  # pylint: disable=g-import-not-at-top
  import variable_mgr  # pylint: disable=g-import-not-at-top
  controller = variable_mgr.ControllerBenchmarkCnn(
      {'worker': ['h:1', 'h:2']}, 2)
  assert [harness.input_device(controller, d) for d in range(4)] == [
      '/job:worker/replica:0/task:%d/cpu:0' % k for k in (0, 0, 1, 1)]
  worker = variable_mgr.ClusterBenchmarkCnn(
      {'ps': ['h:0'], 'worker': ['h:1', 'h:2']}, 1, 2)
  assert [tf.DeviceSpec.from_string(harness.input_device(worker, d)).task
          for d in range(2)] == [1, 1]
  local = variable_mgr.LocalBenchmarkCnn(2)
  assert [harness.input_device(local, d) for d in range(2)] == [
      local.cpu_device] * 2
  graph = controller_cluster.benchmark_towers()
  made = {}
  for op in graph.get_operations():
    if op.type.startswith('StatelessRandomUniform'):
      scope, = [p for p in op.name.split('/') if p.startswith('tower_')]
      tower = int(scope[len('tower_'):])
      made.setdefault(tower, set()).add(
          tf.DeviceSpec.from_string(op.device).task)
  assert made == {0: {0}, 1: {0}, 2: {1}, 3: {1}}
