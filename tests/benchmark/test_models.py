"""The benchmark models: sizes, batch-norm updates against NumPy."""

import numpy as np
import pytest
import tensorflow as _tf

from variable_mgr.benchmark import models

tf = _tf.compat.v1

# name -> (trainable variables, parameters, UPDATE_OPS in training)
EXPECTED = {
    'trivial': (2, 7850, 0),
    'lenet': (8, 1663370, 0),
    'resnet20': (65, 272474, 42),
    'resnet50': (161, 25557032, 106),
}


def _build(name, is_training=True, batch=2):
  model = models.get_model(name)
  graph = tf.Graph()
  with graph.as_default():
    images = tf.zeros([batch] + list(model.image_shape))
    labels = tf.zeros([batch], tf.int32)
    loss = model.build(images, labels, is_training)
  return graph, loss


@pytest.mark.parametrize('name', sorted(EXPECTED))
def test_model_sizes(name):
  graph, loss = _build(name)
  with graph.as_default():
    trainable = tf.trainable_variables()
    params = sum(int(np.prod(v.shape.as_list())) for v in trainable)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
  assert (len(trainable), params, len(updates)) == EXPECTED[name]
  assert loss.shape.as_list() == []


def test_inference_adds_no_updates():
  graph, _ = _build('resnet20', is_training=False)
  assert not graph.get_collection(tf.GraphKeys.UPDATE_OPS)


def test_unknown_model_lists_names():
  with pytest.raises(KeyError, match='trivial, lenet, resnet20, resnet50'):
    models.get_model('vgg16')


def test_loss_is_cross_entropy_plus_weight_decay():
  """trivial: loss == mean CE(x W + b) + wd * ||W||^2 / 2, by NumPy."""
  model = models.get_model('trivial')
  rng = np.random.RandomState(0)
  x = rng.uniform(-1, 1, [3, 28, 28, 1]).astype(np.float32)
  y = np.array([1, 4, 9], np.int32)
  graph = tf.Graph()
  with graph.as_default():
    loss = model.build(tf.constant(x), tf.constant(y), weight_decay=0.01)
    (w, b) = tf.trainable_variables()
    with tf.Session() as sess:
      sess.run(tf.global_variables_initializer())
      loss_value, w_value, b_value = sess.run([loss, w, b])
  logits = x.reshape(3, -1).dot(w_value) + b_value
  logits -= logits.max(axis=1, keepdims=True)
  log_probs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
  expected = -log_probs[np.arange(3), y].mean() + 0.01 * 0.5 * np.sum(
      w_value ** 2)
  np.testing.assert_allclose(loss_value, expected, rtol=1e-5)


@pytest.mark.parametrize('use_resource', [False, True])
def test_batch_norm_moving_statistics(use_resource):
  """One update: moving_mean = 0.9 * 0 + 0.1 * batch mean, likewise var."""
  rng = np.random.RandomState(1)
  x = rng.normal(2.0, 3.0, [4, 5, 5, 3]).astype(np.float32)
  graph = tf.Graph()
  with graph.as_default(), tf.variable_scope('', use_resource=use_resource):
    layers = models._Layers(is_training=True)  # pylint: disable=protected-access
    y = layers.batch_norm(tf.constant(x), relu=False)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    mean_var, variance_var = [v for v in tf.global_variables()
                              if 'moving' in v.name]
    with tf.Session() as sess:
      sess.run(tf.global_variables_initializer())
      y_value = sess.run(y)
      sess.run(updates)
      mean, variance = sess.run([mean_var, variance_var])
  np.testing.assert_allclose(mean, 0.1 * x.mean(axis=(0, 1, 2)), rtol=1e-4)
  np.testing.assert_allclose(variance,
                             0.9 + 0.1 * x.var(axis=(0, 1, 2)), rtol=1e-4)
  # gamma = 1, beta = 0: the output is the batch-normalised input.
  expected = (x - x.mean(axis=(0, 1, 2))) / np.sqrt(
      x.var(axis=(0, 1, 2)) + models.BN_EPSILON)
  np.testing.assert_allclose(y_value, expected, rtol=1e-3, atol=1e-4)
