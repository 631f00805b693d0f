"""The benchmark models: sizes, batch-norm updates against NumPy; the
models built on tf.compat.v1.layers: their published sizes and outputs."""

import functools

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
  with pytest.raises(KeyError, match='trivial, lenet, resnet20, resnet50, '
                     'alexnet, vgg16, inception3, resnet101, resnet152'):
    models.get_model('vgg19')


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


# --- models built on tf.compat.v1.layers ------------------------------------

def _alexnet_parameters(classes=1000):
  convs = [(11, 3, 64), (5, 64, 192), (3, 192, 384), (3, 384, 384),
           (3, 384, 256)]
  dense = [(256 * 6 * 6, 4096), (4096, 4096), (4096, classes)]
  return (sum(k * k * i * o + o for k, i, o in convs) +
          sum(i * o + o for i, o in dense))


# name -> (trainable variables, parameters, UPDATE_OPS in training): the
# published sizes with 1,000 classes (VGG-16 138,357,544; Keras'
# InceptionV3 23,817,352 trainable; torchvision's ResNet-101 44,549,160 and
# ResNet-152 60,192,808), AlexNet as tf_cnn_benchmarks builds it.
LAYERS_EXPECTED = {
    'alexnet': (16, _alexnet_parameters(), 0),
    'vgg16': (32, 138357544, 0),
    'inception3': (190, 23817352, 188),
    'resnet101': (314, 44549160, 208),
}


@functools.lru_cache(maxsize=None)  # Graphs are only read: build once.
def _build_logits(name, is_training=True, batch=2):
  model = models.get_model(name)
  graph = tf.Graph()
  with graph.as_default():
    images = tf.placeholder(tf.float32, [batch] + list(model.image_shape))
    layers = models._Layers(is_training)  # pylint: disable=protected-access
    logits = model.build_fn(layers, images, model.num_classes)
  return graph, logits, layers


def _sizes(variables):
  return sum(int(np.prod(v.shape.as_list())) for v in variables)


@pytest.mark.filterwarnings('ignore:`tf.layers.')
@pytest.mark.parametrize('name', sorted(LAYERS_EXPECTED))
def test_layers_model_sizes_and_logits(name):
  graph, logits, layers = _build_logits(name)
  with graph.as_default():
    trainable = tf.trainable_variables()
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
  assert (len(trainable), _sizes(trainable), len(updates)) == (
      LAYERS_EXPECTED[name])
  assert logits.shape.as_list() == [2, 1000]
  # Weight decay: every convolution and dense kernel, nothing else.
  kernels = [v for v in trainable if v.op.name.endswith('kernel')]
  assert set(w.op.name for w in layers.weights) == set(
      v.op.name for v in kernels)


@pytest.mark.filterwarnings('ignore:`tf.layers.')
def test_resnet152_is_resnet101_with_more_blocks():
  """resnet152 (not built here: 467 variables cost a graph ~15 s) is the
  builder of resnet101 with (3, 8, 36, 3) blocks instead of (3, 4, 23, 3):
  4 more identity blocks of stage 2 and 13 of stage 3."""
  graph, _, _ = _build_logits('resnet101')
  with graph.as_default():
    trainable = tf.trainable_variables()

  def block(stage):
    prefix = 'stage%d_block2/' % stage
    chosen = [v for v in trainable if v.op.name.startswith(prefix)]
    return len(chosen), _sizes(chosen)

  (v2, p2), (v3, p3) = block(2), block(3)
  assert (len(trainable) + 4 * v2 + 13 * v3,
          _sizes(trainable) + 4 * p2 + 13 * p3) == (467, 60192808)
  resnet152 = models.get_model('resnet152')
  assert resnet152.build_fn.__code__ is (
      models.get_model('resnet101').build_fn.__code__)
  stage_blocks = [c.cell_contents for c in resnet152.build_fn.__closure__]
  assert stage_blocks == [(3, 8, 36, 3)]


@pytest.mark.filterwarnings('ignore:`tf.layers.')
def test_layers_model_inference_adds_no_updates_and_no_dropout():
  graph, logits, _ = _build_logits('alexnet', is_training=False, batch=1)
  assert not graph.get_collection(tf.GraphKeys.UPDATE_OPS)
  # Initializers draw random numbers too; dropout's draw is its own.
  assert not [op for op in graph.get_operations()
              if 'dropout' in op.name and op.type == 'RandomUniform']
  assert logits.shape.as_list() == [1, 1000]


def test_layers_unavailable_is_a_named_error(monkeypatch):
  """Without Keras 2 (TensorFlow 2.16+ without tf_keras or
  TF_USE_LEGACY_KERAS=1), tf.compat.v1.layers raises AttributeError on
  use; a model built on it says what is missing and how to get it."""

  class WithoutLayers(object):

    def __getattr__(self, name):
      if name == 'layers':
        raise AttributeError('`layers` is not available with Keras 3.')
      return getattr(tf, name)

  monkeypatch.setattr(models, 'tf', WithoutLayers())
  monkeypatch.setenv('TF_USE_LEGACY_KERAS', '0')
  with pytest.raises(models.LayersUnavailableError,
                     match=r'TF_USE_LEGACY_KERAS=0 .*tf_keras.*set '
                     r'TF_USE_LEGACY_KERAS=1 before TensorFlow is imported'):
    models._StandardLayers(models._Layers(True))  # pylint: disable=protected-access


@pytest.mark.filterwarnings('ignore:`tf.layers.')
@pytest.mark.parametrize('strategy', ['parameter_server', 'replicated'])
def test_layers_default_names_are_the_same_in_every_tower(strategy):
  """conv_bn names its scopes conv_bn, conv_bn_1, ... (as inception3 does):
  parameter_server towers share one set, replicated towers each have a copy
  of it under the same names."""
  import variable_mgr  # pylint: disable=g-import-not-at-top

  def build_fn(layers, images, num_classes):
    nets = models._StandardLayers(layers)  # pylint: disable=protected-access
    x = nets.conv_bn(nets.conv_bn(images, 4, 3), 4, (1, 3))
    return nets.fc(x, num_classes, 'logits', relu=False)

  model = models.Model('tiny_layers', (6, 6, 3), 5, 0.1, 1e-4, 2, build_fn)
  host = variable_mgr.LocalBenchmarkCnn(2)
  graph = tf.Graph()
  with graph.as_default():
    mgr = variable_mgr.create(strategy, host)
    host.devices = mgr.get_devices()
    names = []
    for d in range(2):
      with mgr.create_outer_variable_scope(d), tf.name_scope('tower_%d' % d), \
           tf.device(host.devices[d]):
        model.build(tf.zeros([2, 6, 6, 3]), tf.zeros([2], tf.int32))
        names.append([v.op.name.split('/', 1)[1]
                      for v in mgr.trainable_variables_on_device(d)])
    copies = 1 if strategy == 'parameter_server' else 2
    assert len(tf.global_variables()) == 12 * copies
  assert names[0] == names[1] == [
      'conv_bn/conv/kernel', 'conv_bn/bn/gamma', 'conv_bn/bn/beta',
      'conv_bn_1/conv/kernel', 'conv_bn_1/bn/gamma', 'conv_bn_1/bn/beta',
      'logits/kernel', 'logits/bias']
