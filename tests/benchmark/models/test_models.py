"""The benchmark models: sizes, batch-norm updates against NumPy; the
models built on tf.compat.v1.layers: their published sizes and outputs;
each data set's table against tf_cnn_benchmarks' model_config."""

import functools
import math
import re

import numpy as np
import pytest
import tensorflow as _tf

from variable_mgr.benchmark.models import catalog
from variable_mgr.benchmark.models import blocks

tf = _tf.compat.v1

# name -> (trainable variables, parameters, UPDATE_OPS in training)
EXPECTED = {
    'trivial': (2, 7850, 0),
    'lenet': (8, 1663370, 0),
    'resnet20': (65, 272474, 42),
    'resnet50': (161, 25557032, 106),
}


def _build(name, is_training=True, batch=2):
  model = catalog.get_model(name)
  graph = tf.Graph()
  with graph.as_default():
    images = tf.zeros([batch] + list(model.image_shape))
    labels = tf.zeros([batch], tf.int32)
    loss = model.build(images, labels, is_training)
  return graph, loss


def test_lenet_pools_as_upstream_s_mpool_2_2():
  """upstream's lenet_model: conv 32 5x5, mpool(2, 2), conv 64 5x5,
  mpool(2, 2) (a 2x2 window, stride 2), affine 512: two max pools of a 2x2
  window and stride 2 that halve 28 to 14 to 7."""
  graph, _ = _build('lenet')
  pools = [op for op in graph.get_operations() if op.type == 'MaxPool']
  assert [list(op.get_attr('ksize')) for op in pools] == [[1, 2, 2, 1]] * 2
  assert [list(op.get_attr('strides')) for op in pools] == [[1, 2, 2, 1]] * 2
  assert [op.outputs[0].shape.as_list()[1:3] for op in pools] == [
      [14, 14], [7, 7]]


@pytest.mark.filterwarnings('ignore:`tf.layers.')
def test_googlenet_pools_as_upstream():
  """upstream's googlenet_model: mpool(3, 3, 2, 2, SAME) after conv1, after
  conv2, after inception 3b and after 4e; each inception module's branch an
  mpool(3, 3, 1, 1, SAME); apool(7, 7, 1, 1, VALID) at the end: 224 ->
  112 -> 56 -> 28 -> 14 -> 7 -> 1."""
  graph, _ = _build('googlenet', batch=1)
  pools = [op for op in graph.get_operations()
           if op.type in ('MaxPool', 'AvgPool')]
  got = [(op.type, list(op.get_attr('ksize')), list(op.get_attr('strides')),
          op.get_attr('padding').decode(), op.outputs[0].shape.as_list()[1])
         for op in pools]

  def pool(kind, size, stride, padding, out):
    return (kind, [1, size, size, 1], [1, stride, stride, 1], padding, out)

  branch = lambda out: pool('MaxPool', 3, 1, 'SAME', out)
  assert got == ([pool('MaxPool', 3, 2, 'SAME', 56),
                  pool('MaxPool', 3, 2, 'SAME', 28)] + [branch(28)] * 2 +
                 [pool('MaxPool', 3, 2, 'SAME', 14)] + [branch(14)] * 5 +
                 [pool('MaxPool', 3, 2, 'SAME', 7)] + [branch(7)] * 2 +
                 [pool('AvgPool', 7, 1, 'VALID', 1)])


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
                     'alexnet, vgg16, inception3, googlenet, resnet101, resnet152'):
    catalog.get_model('vgg19')


def test_loss_is_cross_entropy_plus_weight_decay():
  """trivial: loss == mean CE(x W + b) + wd * ||W||^2 / 2, by NumPy."""
  model = catalog.get_model('trivial')
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


def test_resnet20_decays_its_kernels_by_1e_4():
  """resnet20's default weight decay is He et al.'s for their CIFAR-10
  ResNets (2016, section 4.2: 0.0001): loss == mean CE + 1e-4 * the sum
  of its 22 kernels' squares / 2 (not the biases nor batch norm's), by
  NumPy."""
  model = catalog.get_model('resnet20')
  rng = np.random.RandomState(0)
  x = rng.uniform(-1, 1, [2, 32, 32, 3]).astype(np.float32)
  y = np.array([3, 7], np.int32)
  graph = tf.Graph()
  with graph.as_default():
    loss, logits = model.build(tf.constant(x), tf.constant(y),
                               return_logits=True)
    kernels = [v for v in tf.trainable_variables()
               if v.op.name.endswith('/weights')]
    with tf.Session() as sess:
      sess.run(tf.global_variables_initializer())
      loss_value, logits_value, kernel_values = sess.run(
          [loss, logits, kernels])
  assert len(kernel_values) == 22
  logits_value = logits_value.astype(np.float64)
  logits_value -= logits_value.max(axis=1, keepdims=True)
  log_probs = logits_value - np.log(
      np.exp(logits_value).sum(axis=1, keepdims=True))
  squares = sum(np.sum(w.astype(np.float64) ** 2) for w in kernel_values)
  np.testing.assert_allclose(
      loss_value, -log_probs[np.arange(2), y].mean() + 1e-4 * squares / 2,
      rtol=1e-5)


@pytest.mark.parametrize('use_resource', [False, True])
def test_batch_norm_moving_statistics(use_resource):
  """One update: moving_mean = 0.9 * 0 + 0.1 * batch mean, likewise var."""
  rng = np.random.RandomState(1)
  x = rng.normal(2.0, 3.0, [4, 5, 5, 3]).astype(np.float32)
  graph = tf.Graph()
  with graph.as_default(), tf.variable_scope('', use_resource=use_resource):
    layers = blocks.Layers(is_training=True)
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
      x.var(axis=(0, 1, 2)) + catalog.BN_EPSILON)
  np.testing.assert_allclose(y_value, expected, rtol=1e-3, atol=1e-4)


# --- models built on tf.compat.v1.layers ------------------------------------

def _alexnet_parameters(classes=1000):
  convs = [(11, 3, 64), (5, 64, 192), (3, 192, 384), (3, 384, 384),
           (3, 384, 256)]
  dense = [(256 * 6 * 6, 4096), (4096, 4096), (4096, classes)]
  return (sum(k * k * i * o + o for k, i, o in convs) +
          sum(i * o + o for i, o in dense))


def _googlenet_parameters(classes=1000):
  """tf_cnn_benchmarks' GoogleNet: a 7x7/2 convolution of 64, a 1x1 of 64,
  a 3x3 of 192, then inception modules (k 1x1; l 1x1 then m 3x3; n 1x1
  then p 5x5; a 3x3 max pool then q 1x1), each convolution with a bias,
  and a dense layer over the 1024 channels of the last module."""
  def conv(k, i, o):
    return k * k * i + 1, o  # weights and bias of one output channel

  total = 0
  for k, i, o in ((7, 3, 64), (1, 64, 64), (3, 64, 192)):
    per, out = conv(k, i, o)
    total += per * out
  channels = 192
  for k, l, m, n, p, q in ((64, 96, 128, 16, 32, 32),
                           (128, 128, 192, 32, 96, 64),
                           (192, 96, 208, 16, 48, 64),
                           (160, 112, 224, 24, 64, 64),
                           (128, 128, 256, 24, 64, 64),
                           (112, 144, 288, 32, 64, 64),
                           (256, 160, 320, 32, 128, 128),
                           (256, 160, 320, 32, 128, 128),
                           (384, 192, 384, 48, 128, 128)):
    total += ((channels + 1) * (k + l + n + q) + (9 * l + 1) * m +
              (25 * n + 1) * p)
    channels = k + m + p + q
  assert channels == 1024
  return total + (channels + 1) * classes


# name -> (trainable variables, parameters, UPDATE_OPS in training): the
# published sizes with 1,000 classes (VGG-16 138,357,544; Keras'
# InceptionV3 23,817,352 trainable; torchvision's ResNet-101 44,549,160 and
# ResNet-152 60,192,808), AlexNet as tf_cnn_benchmarks builds it.
LAYERS_EXPECTED = {
    'alexnet': (16, _alexnet_parameters(), 0),
    'vgg16': (32, 138357544, 0),
    'inception3': (190, 23817352, 188),
    'googlenet': (116, _googlenet_parameters(), 0),
    'resnet101': (314, 44549160, 208),
}


@functools.lru_cache(maxsize=None)  # Graphs are only read: build once.
def _build_logits(name, is_training=True, batch=2):
  model = catalog.get_model(name)
  graph = tf.Graph()
  with graph.as_default():
    images = tf.placeholder(tf.float32, [batch] + list(model.image_shape))
    layers = blocks.Layers(is_training)
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
  if name in STAGE_SIZES:
    assert _stage_sizes(graph) == STAGE_SIZES[name]


# The ResNets' image size in each stage past its first block: the first
# block of stages 2 to 4 halves it, as upstream's.
STAGE_SIZES = {'resnet101': {1: {56}, 2: {28}, 3: {14}, 4: {7}}}


def _stage_sizes(graph):
  """{stage: the heights of its convolutions' outputs, first block left
  out (it takes the previous stage's size in)}."""
  sizes = {}
  for op in graph.get_operations():
    where = re.search(r'stage(\d)_block(\d+)/', op.name)
    if op.type == 'Conv2D' and where and where.group(2) != '1':
      sizes.setdefault(int(where.group(1)), set()).add(
          op.outputs[0].shape.as_list()[1])
  return sizes


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
  resnet152 = catalog.get_model('resnet152')
  assert resnet152.build_fn.__code__ is (
      catalog.get_model('resnet101').build_fn.__code__)
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

  monkeypatch.setattr(blocks, 'tf', WithoutLayers())
  monkeypatch.setenv('TF_USE_LEGACY_KERAS', '0')
  with pytest.raises(catalog.LayersUnavailableError,
                     match=r'TF_USE_LEGACY_KERAS=0 .*tf_keras.*set '
                     r'TF_USE_LEGACY_KERAS=1 before TensorFlow is imported'):
    blocks.StandardLayers(blocks.Layers(True))


@pytest.mark.filterwarnings('ignore:`tf.layers.')
@pytest.mark.parametrize('strategy', ['parameter_server', 'replicated'])
def test_layers_default_names_are_the_same_in_every_tower(strategy):
  """conv_bn names its scopes conv_bn, conv_bn_1, ... (as inception3 does):
  parameter_server towers share one set, replicated towers each have a copy
  of it under the same names."""
  import variable_mgr  # pylint: disable=g-import-not-at-top

  def build_fn(layers, images, num_classes):
    nets = blocks.StandardLayers(layers)
    x = nets.conv_bn(nets.conv_bn(images, 4, 3), 4, (1, 3))
    return nets.fc(x, num_classes, 'logits', relu=False)

  model = catalog.Model('tiny_layers', (6, 6, 3), 5, 0.1, 1e-4, 2, build_fn)
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


def _np_conv_same(x, kernel, bias):
  """A stride-1 SAME convolution of NHWC `x` with HWIO `kernel`, plus
  `bias`, in float64."""
  kh, kw = kernel.shape[:2]
  top, left = (kh - 1) // 2, (kw - 1) // 2
  padded = np.pad(x, [(0, 0), (top, kh - 1 - top), (left, kw - 1 - left),
                      (0, 0)])
  height, width = x.shape[1:3]
  out = np.zeros(x.shape[:3] + kernel.shape[3:])
  for i in range(kh):
    for j in range(kw):
      out += np.einsum('nhwc,co->nhwo',
                       padded[:, i:i + height, j:j + width], kernel[i, j])
  return out + bias


@pytest.mark.filterwarnings('ignore:`tf.layers.')
@pytest.mark.parametrize('relu', [True, False, None])
def test_standard_conv_and_fc_are_their_affine_maps_then_a_relu_if_asked(
    relu):
  """AlexNet's and VGG's layers: a SAME convolution with a bias, and a
  dense layer over the flattened input, each followed by a ReLU exactly
  when `relu` (a logits layer has none; None: not given, the hidden
  layers' ReLU), against NumPy."""
  given = {} if relu is None else {'relu': relu}
  relu = relu is not False
  rng = np.random.RandomState(0)
  images = rng.uniform(-1, 1, (2, 5, 5, 3)).astype(np.float32)
  graph = tf.Graph()
  with graph.as_default():
    nets = blocks.StandardLayers(blocks.Layers(True))
    conv = nets.conv(tf.constant(images), 4, 3, name='conv', **given)
    fc = nets.fc(conv, 6, name='fc', **given)
    variables = dict((v.op.name, v) for v in tf.global_variables())
    with tf.Session() as sess:
      # Biases start at zero: give them values that a ReLU would cut.
      for name in ('conv/bias', 'fc/bias'):
        variables[name].initializer.run()
        variables[name].load(rng.uniform(-1, 1, variables[name].shape))
      sess.run([v.initializer for n, v in variables.items()
                if not n.endswith('bias')])
      got_conv, got_fc, values = sess.run([conv, fc, variables])
  act = (lambda y: np.maximum(y, 0)) if relu else (lambda y: y)
  want_conv = act(_np_conv_same(images.astype(np.float64),
                                values['conv/kernel'], values['conv/bias']))
  np.testing.assert_allclose(got_conv, want_conv, rtol=1e-5, atol=1e-5)
  want_fc = act(got_conv.reshape(2, -1).astype(np.float64).dot(
      values['fc/kernel']) + values['fc/bias'])
  np.testing.assert_allclose(got_fc, want_fc, rtol=1e-5, atol=1e-5)
  assert (want_conv < 0).any() != relu and (want_fc < 0).any() != relu


# --- each data set's models, as tf_cnn_benchmarks' model_config ----------

# (data set, model) -> (image, classes): upstream's image_size (a square of
# 3 channels, CNNModel's depth) and nclass (1001 for imagenet, whose class
# 0 is the background; 10 for cifar10).
UPSTREAM_SHAPES = {
    ('imagenet', 'trivial'): ((227, 227, 3), 1001),  # 224 + 3
    ('imagenet', 'lenet'): ((28, 28, 3), 1001),
    ('imagenet', 'resnet50'): ((224, 224, 3), 1001),
    ('imagenet', 'alexnet'): ((227, 227, 3), 1001),  # 224 + 3
    ('imagenet', 'vgg16'): ((224, 224, 3), 1001),
    ('imagenet', 'inception3'): ((299, 299, 3), 1001),
    ('imagenet', 'googlenet'): ((224, 224, 3), 1001),
    ('imagenet', 'resnet101'): ((224, 224, 3), 1001),
    ('imagenet', 'resnet152'): ((224, 224, 3), 1001),
    ('cifar10', 'trivial'): ((32, 32, 3), 10),
    ('cifar10', 'resnet20'): ((32, 32, 3), 10),
    ('cifar10', 'alexnet'): ((32, 32, 3), 10),
}


# tf_cnn_benchmarks' (default batch size, base learning rate) where the
# benchmark's own table differs: models/trivial_model.py, lenet_model.py,
# resnet_model.py (ResnetModel's batch sizes; ResnetCifar10Model: 128 at
# 0.1), alexnet_model.py (AlexnetCifar10Model: 128 at 0.1).
UPSTREAM_BATCH_AND_RATE = {
    ('imagenet', 'trivial'): (32, 0.005),
    ('imagenet', 'lenet'): (32, 0.005),
    ('imagenet', 'resnet50'): (64, catalog.MODELS['resnet50'].learning_rate),
    ('imagenet', 'resnet101'): (32, catalog.MODELS['resnet101'].learning_rate),
    ('imagenet', 'resnet152'): (32, catalog.MODELS['resnet152'].learning_rate),
    ('cifar10', 'trivial'): (32, 0.005),
    ('cifar10', 'resnet20'): (128, 0.1),
    ('cifar10', 'alexnet'): (128, 0.1),
}


@pytest.mark.parametrize('data_name', ['imagenet', 'cifar10'])
def test_each_data_set_has_upstreams_models_and_shapes(data_name):
  for name in catalog.MODELS:
    key = (data_name, name)
    if key not in UPSTREAM_SHAPES:
      with pytest.raises(catalog.UnknownModelError,
                         match=r'--model=%s with --data_name=%s: '
                         'tf_cnn_benchmarks has no %s for %s' % (
                             name, data_name, name, data_name)):
        catalog.get_model(name, data_name)
      continue
    model = catalog.get_model(name, data_name)
    assert (model.image_shape, model.num_classes) == UPSTREAM_SHAPES[key]
    # Batch size and base rate are upstream's where they differ from the
    # benchmark's own; the weight decay stays the model's.
    own = catalog.get_model(name)
    assert (model.default_batch_size, model.learning_rate) == (
        UPSTREAM_BATCH_AND_RATE.get(
            key, (own.default_batch_size, own.learning_rate))), key
    assert model.weight_decay == own.weight_decay


def test_synthetic_and_digits_take_the_benchmarks_own_table():
  for name, model in catalog.MODELS.items():
    assert catalog.get_model(name) is model
    assert catalog.get_model(name, 'digits') is model


def _upstream_trivial_parameters(image_shape, classes):
  inputs = int(np.prod(image_shape))
  return (inputs + 1) + (1 * 4096 + 4096) + (4096 * classes + classes)


@pytest.mark.parametrize('data_name, parameters', [
    ('imagenet', 4263877), ('cifar10', 52235)])
def test_upstream_trivial_layers(data_name, parameters):
  """trivial_model: flatten, affine(1), affine(4096), then the logits."""
  model = catalog.get_model('trivial', data_name)
  assert _upstream_trivial_parameters(model.image_shape,
                                      model.num_classes) == parameters
  graph = tf.Graph()
  with graph.as_default():
    images = tf.placeholder(tf.float32, [2] + list(model.image_shape))
    loss, logits = model.build(images, tf.zeros([2], tf.int32),
                               return_logits=True)
    shapes = [(v.op.name, v.shape.as_list()) for v in tf.trainable_variables()]
  inputs = int(np.prod(model.image_shape))
  assert shapes == [
      ('affine0/weights', [inputs, 1]), ('affine0/biases', [1]),
      ('affine1/weights', [1, 4096]), ('affine1/biases', [4096]),
      ('logits/weights', [4096, model.num_classes]),
      ('logits/biases', [model.num_classes])]
  assert sum(int(np.prod(s)) for _, s in shapes) == parameters
  assert logits.shape.as_list() == [2, model.num_classes]
  assert loss.shape.as_list() == []


def test_upstream_trivial_is_relu_affine_layers_by_numpy():
  """The cifar10 trivial's logits against NumPy, from its variables."""
  model = catalog.get_model('trivial', 'cifar10')
  x = np.random.RandomState(3).uniform(-1, 1, [4, 32, 32, 3]).astype(
      np.float32)
  graph = tf.Graph()
  with graph.as_default():
    _, logits = model.build(tf.constant(x), tf.zeros([4], tf.int32),
                            return_logits=True)
    variables = tf.trainable_variables()
    with tf.Session() as sess:
      sess.run(tf.global_variables_initializer())
      got, values = sess.run([logits, variables])
  w0, b0, w1, b1, w2, b2 = [v.astype(np.float64) for v in values]
  h = np.maximum(x.reshape(4, -1).dot(w0) + b0, 0)
  h = np.maximum(h.dot(w1) + b1, 0)
  np.testing.assert_allclose(got, h.dot(w2) + b2, rtol=1e-4, atol=1e-5)


def test_cifar10_alexnet_is_the_tutorial_net():
  """AlexnetCifar10Model: conv 5x5x64, pool, LRN, conv 5x5x64, LRN, pool
  (32 -> 16 -> 8), dense 384 and 192, then the logits."""
  model = catalog.get_model('alexnet', 'cifar10')
  graph = tf.Graph()
  with graph.as_default():
    _, logits = model.build(tf.zeros([2, 32, 32, 3]), tf.zeros([2], tf.int32),
                            return_logits=True)
    shapes = [v.shape.as_list() for v in tf.trainable_variables()]
    lrn = [op for op in graph.get_operations() if op.type == 'LRN']
  assert shapes == [[5, 5, 3, 64], [64], [5, 5, 64, 64], [64],
                    [8 * 8 * 64, 384], [384], [384, 192], [192], [192, 10],
                    [10]]
  assert sum(int(np.prod(s)) for s in shapes) == 1756426
  assert len(lrn) == 2
  assert logits.shape.as_list() == [2, 10]


def test_cifar10_alexnet_normalises_as_upstream():
  """AlexnetCifar10Model's two LRNs: cnn.lrn(depth_radius=4, bias=1.0,
  alpha=0.001 / 9.0, beta=0.75) in upstream's models/alexnet_model.py."""
  model = catalog.get_model('alexnet', 'cifar10')
  graph = tf.Graph()
  with graph.as_default():
    model.build(tf.zeros([2, 32, 32, 3]), tf.zeros([2], tf.int32))
    lrn = [op for op in graph.get_operations() if op.type == 'LRN']
  assert [(op.get_attr('depth_radius'), op.get_attr('bias'),
           op.get_attr('alpha'), op.get_attr('beta')) for op in lrn] == [
               (4, 1.0, np.float32(0.001 / 9.0), 0.75)] * 2


# The variance of a normal cut at two deviations, in units of its own
# variance: 1 - 4 phi(2) / (Phi(2) - Phi(-2)), where Phi(2) - Phi(-2) is
# erf(2 / sqrt(2)).
_CUT_AT_TWO = 1.0 - 4 * np.exp(-2.0) / np.sqrt(2 * np.pi) / math.erf(
    math.sqrt(2.0))


def _kernel_variances(build):
  """{kernel name: its initial elements' variance x its fan-in}."""
  graph = tf.Graph()
  with graph.as_default():
    tf.set_random_seed(1)
    build(tf.zeros([1, 8, 8, 256]))
    kernels = [v for v in tf.global_variables()
               if v.op.name.endswith(('kernel', 'weights'))]
    with tf.Session() as sess:
      sess.run(tf.global_variables_initializer())
      values = sess.run(kernels)
  return dict((v.op.name, np.var(x.astype(np.float64)) *
               np.prod(x.shape[:-1]))
              for v, x in zip(kernels, values))


def test_kernels_start_at_the_variance_of_their_initialiser():
  """Convolutions start He-scaled, dense layers of tf.compat.v1.layers at
  1 / fan-in (variance_scaling, which widens its cut normal to that
  variance); Layers draws from a normal of deviation sqrt(2 / fan-in) cut
  at two deviations, so at 2 x 0.774 / fan-in. (tf_cnn_benchmarks starts
  its convolutions at 1 / fan-in: docs/tf-cnn-benchmarks.md.)"""

  def standard(x):
    nets = blocks.StandardLayers(blocks.Layers(True))
    y = nets.conv(x, 256, 3, name='conv')
    y = nets.conv_bn(y, 256, 3, name='conv_bn')
    nets.fc(y, 16, name='fc')

  def layers(x):
    nets = blocks.Layers(True)
    nets.fc(nets.conv(x, 256, 3, name='conv'), 16, name='fc')

  got = _kernel_variances(standard)
  assert sorted(got) == ['conv/kernel', 'conv_bn/conv/kernel', 'fc/kernel']
  np.testing.assert_allclose(
      [got['conv/kernel'], got['conv_bn/conv/kernel'], got['fc/kernel']],
      [2.0, 2.0, 1.0], rtol=0.03)
  got = _kernel_variances(layers)
  assert sorted(got) == ['conv/weights', 'fc/weights']
  np.testing.assert_allclose([got['conv/weights'], got['fc/weights']],
                             [2.0 * _CUT_AT_TWO] * 2, rtol=0.03)
