"""Benchmark models: their input shapes and the graphs of their losses.

Every variable goes through `tf.get_variable`, so the variable scope and
custom getter that a strategy puts around a tower apply to all of them (Keras
3 layers would ignore both). Images are NHWC float32; labels are int32 class
indices.

Every model also runs in float16 (`--use_fp16`: the harness gives it
float16 images): its convolutions and dense layers compute in float16 on
float16 reads of its weights (float32 variables under a manager with
`use_fp16`), and the loss is float32. Batch norm keeps float32 as
tf_cnn_benchmarks' does: its scale and offset are float32 variables read
as float32, its moving mean and variance float32 variables updated from
float32 batch statistics as in a float32 run (same decay and epsilon), and
it normalises in float32; only its output is float16 (`blocks` says
how each kind of layer does it). So a float16 run saves the same variables,
under the same names and dtypes, as a float32 run.

A model's image and classes depend on the data set, as in tf_cnn_benchmarks'
`models/model_config.py`: `get_model(name, data_name)`. On `imagenet`
(the command's default, files or synthetic) every model takes upstream's
image into 1001 classes (class 0 the background); on `cifar10` only
upstream's CIFAR-10 models exist (trivial, resnet20, alexnet: 32x32x3 into
10); both tables carry upstream's base learning rates and batch sizes.
`digits`, `small` (the benchmark's own synthetic data) and None (the
library's API without a data set) take the benchmark's own table
(MODELS).

The benchmark's own table; the first four (MODEL_NAMES) are built from
`get_variable` and `tf.nn`:

| name       | image      | classes | trainable variables | parameters |
|------------|------------|---------|---------------------|------------|
| `trivial`  | 28x28x1    | 10      | 2                   | 7,850      |
| `lenet`    | 28x28x1    | 10      | 8                   | 1,663,370  |
| `resnet20` | 32x32x3    | 10      | 65                  | 272,474    |
| `resnet50` | 224x224x3  | 1000    | 161                 | 25,557,032 |

tf_cnn_benchmarks' larger models (LAYERS_MODEL_NAMES) are built from
`tf.compat.v1.layers` (`blocks.StandardLayers`, which needs Keras 2;
`layers_models`):

| name         | image      | classes | trainable variables | parameters  |
|--------------|------------|---------|---------------------|-------------|
| `alexnet`    | 227x227x3  | 1000    | 16                  | 61,838,248  |
| `vgg16`      | 224x224x3  | 1000    | 32                  | 138,357,544 |
| `inception3` | 299x299x3  | 1000    | 190                 | 23,817,352  |
| `googlenet`  | 224x224x3  | 1000    | 116                 | 6,998,552   |
| `resnet101`  | 224x224x3  | 1000    | 314                 | 44,549,160  |
| `resnet152`  | 224x224x3  | 1000    | 467                 | 60,192,808  |

Here `trivial` is one dense layer (logits = x W + b). On imagenet and
cifar10 it is tf_cnn_benchmarks' `TrivialModel` / `TrivialCifar10Model`:
the flattened image, a dense layer of 1 unit and one of 4096 (both ReLU),
then the logits: 4,263,877 parameters on imagenet (227x227x3, 1001
classes), 52,235 on cifar10 (32x32x3, 10 classes). Upstream's tables:

| data set   | model        | image      | classes |
|------------|--------------|------------|---------|
| `imagenet` | `trivial`    | 227x227x3  | 1001    |
| `imagenet` | `lenet`      | 28x28x3    | 1001    |
| `imagenet` | `alexnet`    | 227x227x3  | 1001    |
| `imagenet` | `vgg16`, `resnet50`, `resnet101`, `resnet152` | 224x224x3 | 1001 |
| `imagenet` | `inception3` | 299x299x3  | 1001    |
| `imagenet` | `googlenet`  | 224x224x3  | 1001    |
| `cifar10`  | `trivial`, `resnet20` | 32x32x3 | 10  |
| `cifar10`  | `alexnet`    | 32x32x3    | 10      |

cifar10's `alexnet` is upstream's `AlexnetCifar10Model` (TensorFlow's
CIFAR-10 tutorial net: two 5x5 convolutions of 64 with max pools and local
response normalization, dense layers of 384 and 192; 1,756,426
parameters). imagenet has no `resnet20` and cifar10 none of the others, as
upstream: asking for one is refused (UnknownModelError).

AlexNet and VGG-16 are tf_cnn_benchmarks' (convolutions with biases, ReLU,
VALID max pools, two 4096-unit layers with dropout 0.5 in training);
Inception-v3 is tf_cnn_benchmarks' and Keras' (no auxiliary head; batch norm
without scale after bias-free convolutions); GoogLeNet is tf_cnn_benchmarks'
Inception-v1 (no auxiliary heads, no batch norm: convolutions with biases
and ReLU, SAME max pools, a 7x7 average pool, 28 MB of variables); the ResNets are v1.5 as
`resnet50` is. Weight decay applies to the convolution and dense kernels.
"""

import collections

import tensorflow as _tf

from variable_mgr import compat
from variable_mgr import errors
from variable_mgr.benchmark.models import blocks
from variable_mgr.benchmark.models import layers_models

tf = _tf.compat.v1

# The names other modules have read from here.
BN_DECAY = blocks.BN_DECAY
BN_EPSILON = blocks.BN_EPSILON
LayersUnavailableError = blocks.LayersUnavailableError

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
      images: `[batch] + image_shape`, float32; float16 for a float16
        tower, whose layers then ask for float16 weights (batch norm stays
        float32: see the module docstring).
      labels: int32 `[batch]`, values in `[0, num_classes)`.
      is_training: batch norm uses the batch statistics and adds the moving
        statistics' updates to UPDATE_OPS when true; uses the moving
        statistics otherwise.
      weight_decay: L2 factor on the weights; the model's default if None.
      return_logits: also return the logits (the same ops are built).

    Returns:
      The mean softmax cross-entropy plus `weight_decay * sum(l2_loss(w))`,
      float32 (of float32 casts of float16 logits and weights);
      with `return_logits`, `(loss, logits [batch, num_classes])`, the
      logits in the dtype of `images`.
    """
    if weight_decay is None:
      weight_decay = self.weight_decay
    layers = blocks.Layers(is_training)
    logits = self.build_fn(layers, images, self.num_classes)
    # As tf_cnn_benchmarks: a float16 tower's loss in float32, where the
    # softmax and the sum of millions of squares keep their precision (a
    # float16 sum past 2048 drops every square below 1).
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=tf.cast(logits, tf.float32)))
    if weight_decay:
      loss += weight_decay * compat.sum_in_order(
          [tf.nn.l2_loss(tf.cast(w, tf.float32)) for w in layers.weights])
    if return_logits:
      return loss, logits
    return loss


def _trivial(layers, images, num_classes):
  return layers.fc(images, num_classes, 'logits')


def _upstream_trivial(layers, images, num_classes):
  # tf_cnn_benchmarks' trivial_model: the flattened image, affine(1),
  # affine(4096) (ReLU both), then its final affine layer, the logits.
  x = tf.nn.relu(layers.fc(images, 1, 'affine0'))
  x = tf.nn.relu(layers.fc(x, 4096, 'affine1'))
  return layers.fc(x, num_classes, 'logits')


def _alexnet_cifar10(layers, images, num_classes):
  # tf_cnn_benchmarks' AlexnetCifar10Model.
  def lrn(x):
    return tf.nn.local_response_normalization(
        x, depth_radius=4, bias=1.0, alpha=0.001 / 9.0, beta=0.75)

  x = tf.nn.relu(layers.conv(images, 64, 5, name='conv1', bias=True))
  x = lrn(blocks.max_pool(x, 3, 2, 'SAME'))
  x = lrn(tf.nn.relu(layers.conv(x, 64, 5, name='conv2', bias=True)))
  x = blocks.max_pool(x, 3, 2, 'SAME')
  x = tf.nn.relu(layers.fc(x, 384, 'fc3'))
  x = tf.nn.relu(layers.fc(x, 192, 'fc4'))
  return layers.fc(x, num_classes, 'logits')


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
  for stage, (filters, num_blocks) in enumerate(zip(stage_filters,
                                                   stage_blocks)):
    for block in range(num_blocks):
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
    # tf_cnn_benchmarks' base rates and default batch sizes per model.
    Model('alexnet', (227, 227, 3), 1000, 0.005, 4e-5, 512,
          layers_models.alexnet),
    Model('vgg16', (224, 224, 3), 1000, 0.005, 4e-5, 64, layers_models.vgg16),
    Model('inception3', (299, 299, 3), 1000, 0.005, 4e-5, 32,
          layers_models.inception3),
    Model('googlenet', (224, 224, 3), 1000, 0.005, 4e-5, 32,
          layers_models.googlenet),
    Model('resnet101', (224, 224, 3), 1000, 0.05, 1e-4, 64,
          layers_models.resnet((3, 4, 23, 3))),
    Model('resnet152', (224, 224, 3), 1000, 0.05, 1e-4, 64,
          layers_models.resnet((3, 8, 36, 3))),
))
# The models built from get_variable and tf.nn, which need no Keras.
MODEL_NAMES = ('trivial', 'lenet', 'resnet20', 'resnet50')
# The models built from tf.compat.v1.layers (Keras 2).
LAYERS_MODEL_NAMES = ('alexnet', 'vgg16', 'inception3', 'googlenet',
                      'resnet101', 'resnet152')




class UnknownModelError(errors.VariableMgrError):
  """The model has no version for the data set (tf_cnn_benchmarks'
  model_config has none)."""


def _upstream(name, image_shape, num_classes, build_fn=None,
              learning_rate=None, batch_size=None):
  """Model `name` of MODELS as tf_cnn_benchmarks configures it for a data
  set: its image, classes, and, where they differ, its base learning rate
  and default batch size."""
  model = MODELS[name]
  return model._replace(
      image_shape=image_shape, num_classes=num_classes,
      build_fn=build_fn or model.build_fn,
      learning_rate=model.learning_rate if learning_rate is None else (
          learning_rate),
      default_batch_size=batch_size or model.default_batch_size)


# tf_cnn_benchmarks' model_config tables for the models of this benchmark,
# with its base learning rates (the ResNets' default is a schedule: see
# optimizers) and batch sizes.
IMAGENET_MODELS = collections.OrderedDict((m.name, m) for m in (
    _upstream('trivial', (227, 227, 3), 1001, _upstream_trivial,
              learning_rate=0.005),
    _upstream('lenet', (28, 28, 3), 1001, learning_rate=0.005),
    _upstream('resnet50', (224, 224, 3), 1001, batch_size=64),
    _upstream('alexnet', (227, 227, 3), 1001),
    _upstream('vgg16', (224, 224, 3), 1001),
    _upstream('inception3', (299, 299, 3), 1001),
    _upstream('googlenet', (224, 224, 3), 1001),
    _upstream('resnet101', (224, 224, 3), 1001, batch_size=32),
    _upstream('resnet152', (224, 224, 3), 1001, batch_size=32),
))
CIFAR10_MODELS = collections.OrderedDict((m.name, m) for m in (
    _upstream('trivial', (32, 32, 3), 10, _upstream_trivial,
              learning_rate=0.005),
    _upstream('resnet20', (32, 32, 3), 10, learning_rate=0.1,
              batch_size=128),
    _upstream('alexnet', (32, 32, 3), 10, _alexnet_cifar10,
              learning_rate=0.1, batch_size=128),
))
# The data sets with a table of their own; the others (digits, small,
# None) take MODELS.
DATA_SET_MODELS = {'imagenet': IMAGENET_MODELS, 'cifar10': CIFAR10_MODELS}


def get_model(name, data_name=None):
  """Returns the Model called `name` for the data set `data_name`: its
  image and classes are tf_cnn_benchmarks' for imagenet and cifar10, the
  benchmark's own (MODELS) for digits and synthetic data (None).

  Raises:
    KeyError: `name` is not in MODEL_NAMES or LAYERS_MODEL_NAMES; the
      message lists them.
    UnknownModelError: tf_cnn_benchmarks has no `name` for `data_name`;
      the message lists the models it has.
  """
  if name not in MODELS:
    raise KeyError('unknown model %r: choose one of %s' %
                   (name, ', '.join(MODELS)))
  table = DATA_SET_MODELS.get(data_name, MODELS)
  if name not in table:
    raise UnknownModelError(
        '--model=%s with --data_name=%s: tf_cnn_benchmarks has no %s for %s '
        '(models/model_config.py); choose one of %s, or another data set%s'
        % (name, data_name, name, data_name, ', '.join(table),
           ' (imagenet is the default, as there; --data_name=small takes '
           'every model in the benchmark\'s own shapes)'
           if data_name == 'imagenet' else ''))
  return table[name]


def variable_shapes(name, data_name=None):
  """The shapes of model `name`'s trainable variables (for `data_name`),
  in order, from one build into a scratch graph that is then thrown
  away."""
  model = get_model(name, data_name)
  with tf.Graph().as_default():
    images = tf.placeholder(tf.float32, [1] + list(model.image_shape))
    labels = tf.placeholder(tf.int32, [1])
    model.build(images, labels, is_training=True)
    return [v.shape.as_list() for v in tf.trainable_variables()]
