"""Benchmark models: their input shapes and the graphs of their losses.

Every variable goes through `tf.get_variable`, so the variable scope and
custom getter that a strategy puts around a tower apply to all of them (Keras
3 layers would ignore both). Images are NHWC float32; labels are int32 class
indices.

The first four (MODEL_NAMES) are built from `get_variable` and `tf.nn`:

| name       | image      | classes | trainable variables | parameters |
|------------|------------|---------|---------------------|------------|
| `trivial`  | 28x28x1    | 10      | 2                   | 7,850      |
| `lenet`    | 28x28x1    | 10      | 8                   | 1,663,370  |
| `resnet20` | 32x32x3    | 10      | 65                  | 272,474    |
| `resnet50` | 224x224x3  | 1000    | 161                 | 25,557,032 |

tf_cnn_benchmarks' larger models (LAYERS_MODEL_NAMES) are built from
`tf.compat.v1.layers` (conv2d, batch_normalization, dense, dropout), which
create their variables through `tf.compat.v1.get_variable` too. They need
Keras 2: bundled with TensorFlow 1.15 to 2.15; from 2.16 on, the `tf_keras`
package with `TF_USE_LEGACY_KERAS=1` set before TensorFlow is imported
(otherwise building one raises LayersUnavailableError, saying so):

| name         | image      | classes | trainable variables | parameters  |
|--------------|------------|---------|---------------------|-------------|
| `alexnet`    | 227x227x3  | 1000    | 16                  | 61,838,248  |
| `vgg16`      | 224x224x3  | 1000    | 32                  | 138,357,544 |
| `inception3` | 299x299x3  | 1000    | 190                 | 23,817,352  |
| `resnet101`  | 224x224x3  | 1000    | 314                 | 44,549,160  |
| `resnet152`  | 224x224x3  | 1000    | 467                 | 60,192,808  |

AlexNet and VGG-16 are tf_cnn_benchmarks' (convolutions with biases, ReLU,
VALID max pools, two 4096-unit layers with dropout 0.5 in training);
Inception-v3 is tf_cnn_benchmarks' and Keras' (no auxiliary head; batch norm
without scale after bias-free convolutions); the ResNets are v1.5 as
`resnet50` is. Weight decay applies to the convolution and dense kernels.

Batch norm is written out by hand: the moving statistics are non-trainable
variables updated with their own `assign_sub` method (a staged variable
stands in for the real one there) and the update ops go into the UPDATE_OPS
collection, from which the harness keeps the towers that
`mgr.retain_tower_updates(d)` names.
"""

import collections
import math
import os

import tensorflow as _tf

from variable_mgr import errors

tf = _tf.compat.v1

BN_DECAY = 0.9
BN_EPSILON = 1e-5

ModelSpec = collections.namedtuple(
    'ModelSpec', ['name', 'image_shape', 'num_classes', 'learning_rate',
                  'weight_decay', 'default_batch_size', 'build_fn'])


class Model(ModelSpec):
  """A benchmark model: its input shape and a function that builds the loss.

  Attributes:
    name: the `--model` name.
    image_shape: `(height, width, channels)` of one image.
    num_classes: the number of label classes.
    learning_rate: a learning rate that trains the model on synthetic data.
    weight_decay: the default L2 factor on weights (not on biases or BN).
    default_batch_size: the per-tower batch size used when none is given.
  """

  __slots__ = ()

  def build(self, images, labels, is_training=True, weight_decay=None,
            return_logits=False):
    """Builds the model in the current scope and returns its scalar loss.

    Args:
      images: float32 `[batch] + image_shape`.
      labels: int32 `[batch]`, values in `[0, num_classes)`.
      is_training: batch norm uses the batch statistics and adds the moving
        statistics' updates to UPDATE_OPS when true; uses the moving
        statistics otherwise.
      weight_decay: L2 factor on the weights; the model's default if None.
      return_logits: also return the logits (the same ops are built).

    Returns:
      The mean softmax cross-entropy plus `weight_decay * sum(l2_loss(w))`;
      with `return_logits`, `(loss, logits [batch, num_classes])`.
    """
    if weight_decay is None:
      weight_decay = self.weight_decay
    layers = _Layers(is_training)
    logits = self.build_fn(layers, images, self.num_classes)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits))
    if weight_decay:
      loss += weight_decay * tf.add_n([tf.nn.l2_loss(w)
                                       for w in layers.weights])
    if return_logits:
      return loss, logits
    return loss


class _Layers(object):
  """Layer helpers that record the weights subject to weight decay."""

  def __init__(self, is_training):
    self.is_training = is_training
    self.weights = []

  def _weight(self, shape, fan_in):
    w = tf.get_variable(
        'weights', shape, tf.float32,
        initializer=tf.truncated_normal_initializer(
            stddev=math.sqrt(2.0 / fan_in)))
    self.weights.append(w)
    return w

  def conv(self, x, filters, kernel, stride=1, name='conv', bias=False):
    """A SAME-padded convolution, with a bias when no batch norm follows."""
    in_channels = x.shape.as_list()[-1]
    with tf.variable_scope(name):
      w = self._weight([kernel, kernel, in_channels, filters],
                       kernel * kernel * in_channels)
      y = tf.nn.conv2d(x, w, [1, stride, stride, 1], 'SAME')
      if bias:
        b = tf.get_variable('biases', [filters], tf.float32,
                            initializer=tf.zeros_initializer())
        y = tf.nn.bias_add(y, b)
    return y

  def fc(self, x, units, name='fc'):
    """A fully connected layer over the flattened input."""
    size = 1
    for dim in x.shape.as_list()[1:]:
      size *= dim
    x = tf.reshape(x, [-1, size])
    with tf.variable_scope(name):
      w = self._weight([size, units], size)
      b = tf.get_variable('biases', [units], tf.float32,
                          initializer=tf.zeros_initializer())
    return tf.nn.xw_plus_b(x, w, b)

  def batch_norm(self, x, name='bn', relu=True):
    """Batch norm over N, H, W with moving statistics; then an optional ReLU."""
    channels = x.shape.as_list()[-1]
    with tf.variable_scope(name):
      gamma = tf.get_variable('gamma', [channels], tf.float32,
                              initializer=tf.ones_initializer())
      beta = tf.get_variable('beta', [channels], tf.float32,
                             initializer=tf.zeros_initializer())
      moving_mean = tf.get_variable('moving_mean', [channels], tf.float32,
                                    initializer=tf.zeros_initializer(),
                                    trainable=False)
      moving_variance = tf.get_variable('moving_variance', [channels],
                                        tf.float32,
                                        initializer=tf.ones_initializer(),
                                        trainable=False)
    if self.is_training:
      mean, variance = tf.nn.moments(x, [0, 1, 2])
      # moving -= (moving - batch) * (1 - decay), through the variable's own
      # assign_sub: under staged variables that stages the delta.
      for moving, batch in ((moving_mean, mean), (moving_variance, variance)):
        delta = tf.multiply(tf.subtract(moving, batch), 1.0 - BN_DECAY)
        tf.add_to_collection(tf.GraphKeys.UPDATE_OPS,
                             moving.assign_sub(delta))
    else:
      mean, variance = moving_mean, moving_variance
    y = tf.nn.batch_normalization(x, mean, variance, beta, gamma, BN_EPSILON)
    return tf.nn.relu(y) if relu else y


def _trivial(layers, images, num_classes):
  return layers.fc(images, num_classes, 'logits')


def _lenet(layers, images, num_classes):
  x = tf.nn.relu(layers.conv(images, 32, 5, name='conv1', bias=True))
  x = tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], 'SAME')
  x = tf.nn.relu(layers.conv(x, 64, 5, name='conv2', bias=True))
  x = tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], 'SAME')
  x = tf.nn.relu(layers.fc(x, 512, 'fc1'))
  return layers.fc(x, num_classes, 'logits')


def _projection(layers, x, filters, stride):
  """The shortcut: identity, or a 1x1 convolution + BN when shapes differ."""
  if stride == 1 and x.shape.as_list()[-1] == filters:
    return x
  y = layers.conv(x, filters, 1, stride, name='shortcut_conv')
  return layers.batch_norm(y, 'shortcut_bn', relu=False)


def _basic_block(layers, x, filters, stride):
  shortcut = _projection(layers, x, filters, stride)
  y = layers.batch_norm(layers.conv(x, filters, 3, stride, 'conv1'), 'bn1')
  y = layers.batch_norm(layers.conv(y, filters, 3, 1, 'conv2'), 'bn2',
                        relu=False)
  return tf.nn.relu(y + shortcut)


def _bottleneck_block(layers, x, filters, stride):
  # ResNet v1.5: the stride sits on the 3x3 convolution.
  shortcut = _projection(layers, x, 4 * filters, stride)
  y = layers.batch_norm(layers.conv(x, filters, 1, 1, 'conv1'), 'bn1')
  y = layers.batch_norm(layers.conv(y, filters, 3, stride, 'conv2'), 'bn2')
  y = layers.batch_norm(layers.conv(y, 4 * filters, 1, 1, 'conv3'), 'bn3',
                        relu=False)
  return tf.nn.relu(y + shortcut)


def _resnet_stages(layers, x, block_fn, stage_filters, stage_blocks):
  for stage, (filters, blocks) in enumerate(zip(stage_filters, stage_blocks)):
    for block in range(blocks):
      stride = 2 if stage > 0 and block == 0 else 1
      with tf.variable_scope('stage%d_block%d' % (stage + 1, block + 1)):
        x = block_fn(layers, x, filters, stride)
  return x


def _resnet20(layers, images, num_classes):
  x = layers.batch_norm(layers.conv(images, 16, 3, name='conv1'), 'bn1')
  x = _resnet_stages(layers, x, _basic_block, (16, 32, 64), (3, 3, 3))
  x = tf.reduce_mean(x, [1, 2])
  return layers.fc(x, num_classes, 'logits')


def _resnet50(layers, images, num_classes):
  x = layers.batch_norm(layers.conv(images, 64, 7, 2, name='conv1'), 'bn1')
  x = tf.nn.max_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], 'SAME')
  x = _resnet_stages(layers, x, _bottleneck_block, (64, 128, 256, 512),
                     (3, 4, 6, 3))
  x = tf.reduce_mean(x, [1, 2])
  return layers.fc(x, num_classes, 'logits')


class LayersUnavailableError(errors.VariableMgrError):
  """tf.compat.v1.layers cannot build here: TensorFlow 2.16 or later
  without Keras 2 (tf_keras and TF_USE_LEGACY_KERAS=1)."""


def _v1_layers():
  """tf.compat.v1.layers, or LayersUnavailableError saying how to get it."""
  try:
    layers = tf.layers
    layers.Conv2D  # pylint: disable=pointless-statement
    return layers
  except (AttributeError, ImportError) as e:
    raise LayersUnavailableError(
        'tf.compat.v1.layers is not available on TensorFlow %s with '
        'TF_USE_LEGACY_KERAS=%s (%s): the models built on it need Keras 2, '
        'which TensorFlow 2.16 and later only have from the tf_keras package; '
        "install tf_keras of TensorFlow's version (pip install "
        "'variable_mgr[layers]') and set TF_USE_LEGACY_KERAS=1 before "
        'TensorFlow is imported' % (
            _tf.__version__, os.environ.get('TF_USE_LEGACY_KERAS', '(unset)'),
            e))


class _StandardLayers(object):
  """tf.compat.v1.layers helpers that record the kernels subject to weight
  decay in `weights` (shared with the `_Layers` the model was given)."""

  def __init__(self, layers):
    self.tf_layers = _v1_layers()
    self.is_training = layers.is_training
    self.weights = layers.weights

  def _apply(self, layer, x):
    y = layer(x)
    self.weights.append(layer.kernel)
    return y

  def conv(self, x, filters, kernel, stride=1, padding='SAME', name=None,
           relu=True):
    """A convolution with a bias, then a ReLU (AlexNet, VGG)."""
    layer = self.tf_layers.Conv2D(
        filters, kernel, stride, padding.lower(), use_bias=True,
        activation=tf.nn.relu if relu else None,
        kernel_initializer=tf.variance_scaling_initializer(2.0), name=name)
    return self._apply(layer, x)

  def conv_bn(self, x, filters, kernel, stride=1, padding='SAME', name=None,
              relu=True, scale=True, epsilon=BN_EPSILON):
    """A bias-free convolution, batch norm, then an optional ReLU; `kernel`
    an int or (height, width)."""
    with tf.variable_scope(None, default_name=name or 'conv_bn'):
      layer = self.tf_layers.Conv2D(
          filters, kernel, stride, padding.lower(), use_bias=False,
          kernel_initializer=tf.variance_scaling_initializer(2.0),
          name='conv')
      y = self._apply(layer, x)
      y = self.tf_layers.batch_normalization(
          y, momentum=BN_DECAY, epsilon=epsilon, scale=scale,
          training=self.is_training, name='bn')
    return tf.nn.relu(y) if relu else y

  def fc(self, x, units, name=None, relu=True, dropout=None):
    """A dense layer over the flattened input; dropout in training first."""
    x = self.tf_layers.flatten(x)
    if dropout:
      x = self.tf_layers.dropout(x, dropout, training=self.is_training)
    layer = self.tf_layers.Dense(
        units, activation=tf.nn.relu if relu else None,
        kernel_initializer=tf.variance_scaling_initializer(1.0), name=name)
    return self._apply(layer, x)


def _max_pool(x, size, stride, padding='VALID'):
  return tf.nn.max_pool(x, [1, size, size, 1], [1, stride, stride, 1],
                        padding)


def _avg_pool(x, size, stride, padding='SAME'):
  return tf.nn.avg_pool(x, [1, size, size, 1], [1, stride, stride, 1],
                        padding)


def _alexnet(layers, images, num_classes):
  nets = _StandardLayers(layers)
  x = nets.conv(images, 64, 11, 4, 'VALID', name='conv1')
  x = _max_pool(x, 3, 2)
  x = nets.conv(x, 192, 5, name='conv2')
  x = _max_pool(x, 3, 2)
  x = nets.conv(x, 384, 3, name='conv3')
  x = nets.conv(x, 384, 3, name='conv4')
  x = nets.conv(x, 256, 3, name='conv5')
  x = _max_pool(x, 3, 2)
  x = nets.fc(x, 4096, 'fc6')
  x = nets.fc(x, 4096, 'fc7', dropout=0.5)
  return nets.fc(x, num_classes, 'logits', relu=False, dropout=0.5)


def _vgg16(layers, images, num_classes):
  nets = _StandardLayers(layers)
  x = images
  for stage, (filters, convs) in enumerate(
      zip((64, 128, 256, 512, 512), (2, 2, 3, 3, 3))):
    for i in range(convs):
      x = nets.conv(x, filters, 3, name='conv%d_%d' % (stage + 1, i + 1))
    x = _max_pool(x, 2, 2)
  x = nets.fc(x, 4096, 'fc6')
  x = nets.fc(x, 4096, 'fc7', dropout=0.5)
  return nets.fc(x, num_classes, 'logits', relu=False, dropout=0.5)


def _inception3(layers, images, num_classes):
  nets = _StandardLayers(layers)

  def cbn(x, filters, kernel, stride=1, padding='SAME'):
    return nets.conv_bn(x, filters, kernel, stride, padding, scale=False,
                        epsilon=1e-3)

  def concat(branches):
    return tf.concat(branches, 3)

  x = cbn(images, 32, 3, 2, 'VALID')
  x = cbn(x, 32, 3, 1, 'VALID')
  x = cbn(x, 64, 3)
  x = _max_pool(x, 3, 2)
  x = cbn(x, 80, 1, 1, 'VALID')
  x = cbn(x, 192, 3, 1, 'VALID')
  x = _max_pool(x, 3, 2)
  for i, pool_filters in enumerate((32, 64, 64)):  # 35 x 35
    with tf.variable_scope('mixed_35x35_%d' % i):
      x = concat([
          cbn(x, 64, 1),
          cbn(cbn(x, 48, 1), 64, 5),
          cbn(cbn(cbn(x, 64, 1), 96, 3), 96, 3),
          cbn(_avg_pool(x, 3, 1), pool_filters, 1)])
  with tf.variable_scope('reduce_17x17'):
    x = concat([
        cbn(x, 384, 3, 2, 'VALID'),
        cbn(cbn(cbn(x, 64, 1), 96, 3), 96, 3, 2, 'VALID'),
        _max_pool(x, 3, 2)])
  for i, width in enumerate((128, 160, 160, 192)):  # 17 x 17
    with tf.variable_scope('mixed_17x17_%d' % i):
      b7 = cbn(cbn(cbn(x, width, 1), width, (1, 7)), 192, (7, 1))
      b7dbl = cbn(x, width, 1)
      for filters, kernel in ((width, (7, 1)), (width, (1, 7)),
                              (width, (7, 1)), (192, (1, 7))):
        b7dbl = cbn(b7dbl, filters, kernel)
      x = concat([cbn(x, 192, 1), b7, b7dbl,
                  cbn(_avg_pool(x, 3, 1), 192, 1)])
  with tf.variable_scope('reduce_8x8'):
    b7x3 = cbn(cbn(cbn(x, 192, 1), 192, (1, 7)), 192, (7, 1))
    x = concat([
        cbn(cbn(x, 192, 1), 320, 3, 2, 'VALID'),
        cbn(b7x3, 192, 3, 2, 'VALID'),
        _max_pool(x, 3, 2)])
  for i in range(2):  # 8 x 8
    with tf.variable_scope('mixed_8x8_%d' % i):
      b3 = cbn(x, 384, 1)
      b3dbl = cbn(cbn(x, 448, 1), 384, 3)
      x = concat([
          cbn(x, 320, 1),
          concat([cbn(b3, 384, (1, 3)), cbn(b3, 384, (3, 1))]),
          concat([cbn(b3dbl, 384, (1, 3)), cbn(b3dbl, 384, (3, 1))]),
          cbn(_avg_pool(x, 3, 1), 192, 1)])
  x = tf.reduce_mean(x, [1, 2])
  return nets.fc(x, num_classes, 'logits', relu=False)


def _layers_bottleneck(nets, x, filters, stride):
  # ResNet v1.5, as _bottleneck_block: the stride on the 3x3 convolution.
  if stride == 1 and x.shape.as_list()[-1] == 4 * filters:
    shortcut = x
  else:
    shortcut = nets.conv_bn(x, 4 * filters, 1, stride, name='shortcut',
                            relu=False)
  y = nets.conv_bn(x, filters, 1, name='conv1')
  y = nets.conv_bn(y, filters, 3, stride, name='conv2')
  y = nets.conv_bn(y, 4 * filters, 1, name='conv3', relu=False)
  return tf.nn.relu(y + shortcut)


def _layers_resnet(stage_blocks):
  def build(layers, images, num_classes):
    nets = _StandardLayers(layers)
    x = nets.conv_bn(images, 64, 7, 2, name='conv1')
    x = _max_pool(x, 3, 2, 'SAME')
    for stage, (filters, blocks) in enumerate(
        zip((64, 128, 256, 512), stage_blocks)):
      for block in range(blocks):
        stride = 2 if stage > 0 and block == 0 else 1
        with tf.variable_scope('stage%d_block%d' % (stage + 1, block + 1)):
          x = _layers_bottleneck(nets, x, filters, stride)
    x = tf.reduce_mean(x, [1, 2])
    return nets.fc(x, num_classes, 'logits', relu=False)
  return build


MODELS = collections.OrderedDict((m.name, m) for m in (
    Model('trivial', (28, 28, 1), 10, 0.05, 0.0, 32, _trivial),
    Model('lenet', (28, 28, 1), 10, 0.01, 0.0, 32, _lenet),
    Model('resnet20', (32, 32, 3), 10, 0.05, 1e-4, 32, _resnet20),
    Model('resnet50', (224, 224, 3), 1000, 0.05, 1e-4, 32, _resnet50),
    # tf_cnn_benchmarks' base rates and default batch sizes per model.
    Model('alexnet', (227, 227, 3), 1000, 0.005, 4e-5, 512, _alexnet),
    Model('vgg16', (224, 224, 3), 1000, 0.005, 4e-5, 64, _vgg16),
    Model('inception3', (299, 299, 3), 1000, 0.005, 4e-5, 32, _inception3),
    Model('resnet101', (224, 224, 3), 1000, 0.05, 1e-4, 64,
          _layers_resnet((3, 4, 23, 3))),
    Model('resnet152', (224, 224, 3), 1000, 0.05, 1e-4, 64,
          _layers_resnet((3, 8, 36, 3))),
))
# The models built from get_variable and tf.nn, which need no Keras.
MODEL_NAMES = ('trivial', 'lenet', 'resnet20', 'resnet50')
# The models built from tf.compat.v1.layers (Keras 2).
LAYERS_MODEL_NAMES = ('alexnet', 'vgg16', 'inception3', 'resnet101',
                      'resnet152')


def get_model(name):
  """Returns the Model called `name`.

  Raises:
    KeyError: `name` is not in MODEL_NAMES or LAYERS_MODEL_NAMES; the
      message lists them.
  """
  try:
    return MODELS[name]
  except KeyError:
    raise KeyError('unknown model %r: choose one of %s' %
                   (name, ', '.join(MODELS)))


def variable_shapes(name):
  """The shapes of model `name`'s trainable variables, in order, from one
  build into a scratch graph that is then thrown away."""
  model = get_model(name)
  with tf.Graph().as_default():
    images = tf.placeholder(tf.float32, [1] + list(model.image_shape))
    labels = tf.placeholder(tf.int32, [1])
    model.build(images, labels, is_training=True)
    return [v.shape.as_list() for v in tf.trainable_variables()]
