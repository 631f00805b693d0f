"""Benchmark models built from `get_variable` and `tf.nn` only.

Every variable goes through `tf.get_variable`, so the variable scope and
custom getter that a strategy puts around a tower apply to all of them (Keras
layers would ignore both). Images are NHWC float32; labels are int32 class
indices.

| name       | image      | classes | trainable variables | parameters |
|------------|------------|---------|---------------------|------------|
| `trivial`  | 28x28x1    | 10      | 2                   | 7,850      |
| `lenet`    | 28x28x1    | 10      | 8                   | 1,663,370  |
| `resnet20` | 32x32x3    | 10      | 65                  | 272,474    |
| `resnet50` | 224x224x3  | 1000    | 161                 | 25,557,032 |

Batch norm is written out by hand: the moving statistics are non-trainable
variables updated with their own `assign_sub` method (a staged variable
stands in for the real one there) and the update ops go into the UPDATE_OPS
collection, from which the harness keeps the towers that
`mgr.retain_tower_updates(d)` names.
"""

import collections
import math

import tensorflow as _tf

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

  def build(self, images, labels, is_training=True, weight_decay=None):
    """Builds the model in the current scope and returns its scalar loss.

    Args:
      images: float32 `[batch] + image_shape`.
      labels: int32 `[batch]`, values in `[0, num_classes)`.
      is_training: batch norm uses the batch statistics and adds the moving
        statistics' updates to UPDATE_OPS when true; uses the moving
        statistics otherwise.
      weight_decay: L2 factor on the weights; the model's default if None.

    Returns:
      The mean softmax cross-entropy plus `weight_decay * sum(l2_loss(w))`.
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


MODELS = collections.OrderedDict((m.name, m) for m in (
    Model('trivial', (28, 28, 1), 10, 0.05, 0.0, 32, _trivial),
    Model('lenet', (28, 28, 1), 10, 0.01, 0.0, 32, _lenet),
    Model('resnet20', (32, 32, 3), 10, 0.05, 1e-4, 32, _resnet20),
    Model('resnet50', (224, 224, 3), 1000, 0.05, 1e-4, 32, _resnet50),
))
MODEL_NAMES = tuple(MODELS)


def get_model(name):
  """Returns the Model called `name`.

  Raises:
    KeyError: `name` is not in MODEL_NAMES; the message lists them.
  """
  try:
    return MODELS[name]
  except KeyError:
    raise KeyError('unknown model %r: choose one of %s' %
                   (name, ', '.join(MODEL_NAMES)))


def variable_shapes(name):
  """The shapes of model `name`'s trainable variables, in order, from one
  build into a scratch graph that is then thrown away."""
  model = get_model(name)
  with tf.Graph().as_default():
    images = tf.placeholder(tf.float32, [1] + list(model.image_shape))
    labels = tf.placeholder(tf.int32, [1])
    model.build(images, labels, is_training=True)
    return [v.shape.as_list() for v in tf.trainable_variables()]
