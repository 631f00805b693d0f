"""tf_cnn_benchmarks' larger models, built from `tf.compat.v1.layers`
(`blocks.StandardLayers`, which needs Keras 2): AlexNet, VGG-16,
Inception-v3, GoogLeNet and the deeper ResNets (`catalog` names them and
says what each is). Each builder takes `(layers, images, num_classes)` and
returns the logits."""

import tensorflow as _tf

from variable_mgr.benchmark.models import blocks

tf = _tf.compat.v1


def _classifier(nets, x, num_classes):
  """AlexNet's and VGG-16's head: two 4096-wide layers (the second and the
  logits after a dropout of 0.5, as upstream's)."""
  x = nets.fc(x, 4096, 'fc6')
  x = nets.fc(x, 4096, 'fc7', dropout=0.5)
  return nets.fc(x, num_classes, 'logits', relu=False, dropout=0.5)


def alexnet(layers, images, num_classes):
  nets = blocks.StandardLayers(layers)
  x = nets.conv(images, 64, 11, 4, 'VALID', name='conv1')
  x = blocks.max_pool(x, 3, 2)
  x = nets.conv(x, 192, 5, name='conv2')
  x = blocks.max_pool(x, 3, 2)
  x = nets.conv(x, 384, 3, name='conv3')
  x = nets.conv(x, 384, 3, name='conv4')
  x = nets.conv(x, 256, 3, name='conv5')
  x = blocks.max_pool(x, 3, 2)
  return _classifier(nets, x, num_classes)


def vgg16(layers, images, num_classes):
  nets = blocks.StandardLayers(layers)
  x = images
  for stage, (filters, convs) in enumerate(
      zip((64, 128, 256, 512, 512), (2, 2, 3, 3, 3))):
    for i in range(convs):
      x = nets.conv(x, filters, 3, name='conv%d_%d' % (stage + 1, i + 1))
    x = blocks.max_pool(x, 2, 2)
  return _classifier(nets, x, num_classes)


def inception3(layers, images, num_classes):
  nets = blocks.StandardLayers(layers)

  def cbn(x, filters, kernel, stride=1, padding='SAME'):
    return nets.conv_bn(x, filters, kernel, stride, padding, scale=False,
                        epsilon=1e-3)

  def concat(branches):
    return tf.concat(branches, 3)

  x = cbn(images, 32, 3, 2, 'VALID')
  x = cbn(x, 32, 3, 1, 'VALID')
  x = cbn(x, 64, 3)
  x = blocks.max_pool(x, 3, 2)
  x = cbn(x, 80, 1, 1, 'VALID')
  x = cbn(x, 192, 3, 1, 'VALID')
  x = blocks.max_pool(x, 3, 2)
  for i, pool_filters in enumerate((32, 64, 64)):  # 35 x 35
    with tf.variable_scope('mixed_35x35_%d' % i):
      x = concat([
          cbn(x, 64, 1),
          cbn(cbn(x, 48, 1), 64, 5),
          cbn(cbn(cbn(x, 64, 1), 96, 3), 96, 3),
          cbn(blocks.avg_pool(x, 3, 1), pool_filters, 1)])
  with tf.variable_scope('reduce_17x17'):
    x = concat([
        cbn(x, 384, 3, 2, 'VALID'),
        cbn(cbn(cbn(x, 64, 1), 96, 3), 96, 3, 2, 'VALID'),
        blocks.max_pool(x, 3, 2)])
  for i, width in enumerate((128, 160, 160, 192)):  # 17 x 17
    with tf.variable_scope('mixed_17x17_%d' % i):
      b7 = cbn(cbn(cbn(x, width, 1), width, (1, 7)), 192, (7, 1))
      b7dbl = cbn(x, width, 1)
      for filters, kernel in ((width, (7, 1)), (width, (1, 7)),
                              (width, (7, 1)), (192, (1, 7))):
        b7dbl = cbn(b7dbl, filters, kernel)
      x = concat([cbn(x, 192, 1), b7, b7dbl,
                  cbn(blocks.avg_pool(x, 3, 1), 192, 1)])
  with tf.variable_scope('reduce_8x8'):
    b7x3 = cbn(cbn(cbn(x, 192, 1), 192, (1, 7)), 192, (7, 1))
    x = concat([
        cbn(cbn(x, 192, 1), 320, 3, 2, 'VALID'),
        cbn(b7x3, 192, 3, 2, 'VALID'),
        blocks.max_pool(x, 3, 2)])
  for i in range(2):  # 8 x 8
    with tf.variable_scope('mixed_8x8_%d' % i):
      b3 = cbn(x, 384, 1)
      b3dbl = cbn(cbn(x, 448, 1), 384, 3)
      x = concat([
          cbn(x, 320, 1),
          concat([cbn(b3, 384, (1, 3)), cbn(b3, 384, (3, 1))]),
          concat([cbn(b3dbl, 384, (1, 3)), cbn(b3dbl, 384, (3, 1))]),
          cbn(blocks.avg_pool(x, 3, 1), 192, 1)])
  x = tf.reduce_mean(x, [1, 2])
  return nets.fc(x, num_classes, 'logits', relu=False)


def _bottleneck(nets, x, filters, stride):
  # ResNet v1.5, as catalog's resnet50: the stride on the 3x3 convolution.
  if stride == 1 and x.shape.as_list()[-1] == 4 * filters:
    shortcut = x
  else:
    shortcut = nets.conv_bn(x, 4 * filters, 1, stride, name='shortcut',
                            relu=False)
  y = nets.conv_bn(x, filters, 1, name='conv1')
  y = nets.conv_bn(y, filters, 3, stride, name='conv2')
  y = nets.conv_bn(y, 4 * filters, 1, name='conv3', relu=False)
  return tf.nn.relu(y + shortcut)


def resnet(stage_blocks):
  def build(layers, images, num_classes):
    nets = blocks.StandardLayers(layers)
    x = nets.conv_bn(images, 64, 7, 2, name='conv1')
    x = blocks.max_pool(x, 3, 2, 'SAME')
    for stage, (filters, num_blocks) in enumerate(
        zip((64, 128, 256, 512), stage_blocks)):
      for block in range(num_blocks):
        stride = 2 if stage > 0 and block == 0 else 1
        with tf.variable_scope('stage%d_block%d' % (stage + 1, block + 1)):
          x = _bottleneck(nets, x, filters, stride)
    x = tf.reduce_mean(x, [1, 2])
    return nets.fc(x, num_classes, 'logits', relu=False)
  return build


def googlenet(layers, images, num_classes):
  # tf_cnn_benchmarks' GoogleNet (Inception-v1 without its auxiliary heads
  # or batch norm): convolutions with biases and ReLU, SAME max pools.
  nets = blocks.StandardLayers(layers)

  def inception(x, name, k, l, m, n, p, q):
    with tf.variable_scope(name):
      return tf.concat([
          nets.conv(x, k, 1, name='1x1'),
          nets.conv(nets.conv(x, l, 1, name='3x3_reduce'), m, 3, name='3x3'),
          nets.conv(nets.conv(x, n, 1, name='5x5_reduce'), p, 5, name='5x5'),
          nets.conv(blocks.max_pool(x, 3, 1, 'SAME'), q, 1, name='pool_proj'),
      ], 3)

  x = nets.conv(images, 64, 7, 2, name='conv1')
  x = blocks.max_pool(x, 3, 2, 'SAME')
  x = nets.conv(x, 64, 1, name='conv2_reduce')
  x = nets.conv(x, 192, 3, name='conv2')
  x = blocks.max_pool(x, 3, 2, 'SAME')
  for name, filters in (('3a', (64, 96, 128, 16, 32, 32)),
                        ('3b', (128, 128, 192, 32, 96, 64)), ('pool', None),
                        ('4a', (192, 96, 208, 16, 48, 64)),
                        ('4b', (160, 112, 224, 24, 64, 64)),
                        ('4c', (128, 128, 256, 24, 64, 64)),
                        ('4d', (112, 144, 288, 32, 64, 64)),
                        ('4e', (256, 160, 320, 32, 128, 128)), ('pool', None),
                        ('5a', (256, 160, 320, 32, 128, 128)),
                        ('5b', (384, 192, 384, 48, 128, 128))):
    if filters is None:
      x = blocks.max_pool(x, 3, 2, 'SAME')
    else:
      x = inception(x, 'inception_' + name, *filters)
  x = blocks.avg_pool(x, 7, 1, 'VALID')
  return nets.fc(x, num_classes, 'logits', relu=False)
