"""The layer helpers the benchmark models are built from.

`Layers` builds from `tf.get_variable` and `tf.nn` (convolutions, dense
layers, batch norm written out by hand) and records the weights subject
to weight decay. `StandardLayers` builds from `tf.compat.v1.layers`
(conv2d, batch_normalization, dense, dropout), which create their
variables through `tf.compat.v1.get_variable` too; it needs Keras 2:
bundled with TensorFlow 1.15 to 2.15; from 2.16 on, the `tf_keras`
package with `TF_USE_LEGACY_KERAS=1` set before TensorFlow is imported
(otherwise it raises LayersUnavailableError, saying so).

Batch norm of `Layers`: the moving statistics are non-trainable variables
updated with their own `assign_sub` method (a staged variable stands in
for the real one there) and the update ops go into the UPDATE_OPS
collection, from which the harness keeps the towers that
`mgr.retain_tower_updates(d)` names.

Float16 towers: both helpers ask for their weights in the dtype of the
input they are given, so a float16 input asks for float16 kernels and
biases (a manager with `use_fp16` stores them in float32 and reads them as
float16 casts). Batch norm keeps float32: its scale, offset and moving
statistics are float32 variables read as float32, the batch's statistics
are taken in float32 and the normalisation runs in float32, and only the
output is float16. `Layers.batch_norm` casts the input to float32 and the
output back; `tf.compat.v1.layers.batch_normalization` does the same by
itself (a float16 input gets float32 variables and a fused batch norm of
float16 data with float32 scale, offset and statistics), on TensorFlow
1.15 and with tf_keras alike. So the moving statistics of a float16 tower
are updated as a float32 tower's, and both save the same variables under
the same names and dtypes.
"""

import math
import os

import tensorflow as _tf

from variable_mgr import errors

tf = _tf.compat.v1

BN_DECAY = 0.9
BN_EPSILON = 1e-5


class Layers(object):
  """Layer helpers that record the weights subject to weight decay."""

  def __init__(self, is_training):
    self.is_training = is_training
    self.weights = []

  def _weight(self, shape, fan_in, dtype):
    w = tf.get_variable(
        'weights', shape, dtype,
        initializer=tf.truncated_normal_initializer(
            stddev=math.sqrt(2.0 / fan_in)))
    self.weights.append(w)
    return w

  def conv(self, x, filters, kernel, stride=1, name='conv', bias=False):
    """A SAME-padded convolution, with a bias when no batch norm follows."""
    in_channels = x.shape.as_list()[-1]
    with tf.variable_scope(name):
      w = self._weight([kernel, kernel, in_channels, filters],
                       kernel * kernel * in_channels, x.dtype)
      y = tf.nn.conv2d(x, w, [1, stride, stride, 1], 'SAME')
      if bias:
        b = tf.get_variable('biases', [filters], x.dtype,
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
      w = self._weight([size, units], size, x.dtype)
      b = tf.get_variable('biases', [units], x.dtype,
                          initializer=tf.zeros_initializer())
    return tf.nn.xw_plus_b(x, w, b)

  def batch_norm(self, x, name='bn', relu=True):
    """Batch norm over N, H, W with moving statistics; then an optional ReLU.

    Computed in float32 whatever the dtype of `x` (the module docstring
    says why); the result has the dtype of `x`.
    """
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
    dtype = x.dtype
    # The moving statistics are float32 variables: on a float32 copy of a
    # float16 input the float32 tower's ops run, so the batch's statistics
    # and the updates are not rounded to float16 (a float32 input is not
    # copied, tf.cast returns it).
    x = tf.cast(x, tf.float32)
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
    y = tf.cast(
        tf.nn.batch_normalization(x, mean, variance, beta, gamma, BN_EPSILON),
        dtype)
    return tf.nn.relu(y) if relu else y


class LayersUnavailableError(errors.VariableMgrError):
  """tf.compat.v1.layers cannot build here: TensorFlow 2.16 or later
  without Keras 2 (tf_keras and TF_USE_LEGACY_KERAS=1)."""


def v1_layers():
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
        "install tf_keras of TensorFlow's version (pip install -e "
        "'.[layers]' in the checkout) and set TF_USE_LEGACY_KERAS=1 before "
        'TensorFlow is imported' % (
            _tf.__version__, os.environ.get('TF_USE_LEGACY_KERAS', '(unset)'),
            e))


class StandardLayers(object):
  """tf.compat.v1.layers helpers that record the kernels subject to weight
  decay in `weights` (shared with the `Layers` the model was given)."""

  def __init__(self, layers):
    self.tf_layers = v1_layers()
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
    an int or (height, width). With a float16 `x` the convolution is
    float16 and the batch norm's variables and statistics float32."""
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


def max_pool(x, size, stride, padding='VALID'):
  return tf.nn.max_pool(x, [1, size, size, 1], [1, stride, stride, 1],
                        padding)


def avg_pool(x, size, stride, padding='SAME'):
  return tf.nn.avg_pool(x, [1, size, size, 1], [1, stride, stride, 1],
                        padding)
