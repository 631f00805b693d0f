"""Models written with tf.compat.v1.layers train under every local strategy.

`tf.compat.v1.layers.conv2d / batch_normalization / dense` create their
variables through `tf.compat.v1.get_variable`, so a manager's variable scopes
and custom getters apply to them: natively on TensorFlow 1.15 (and 2.x up to
2.15, whose bundled Keras is Keras 2), and on TensorFlow 2.16 and later with
the `tf_keras` package installed and `TF_USE_LEGACY_KERAS=1` set before
TensorFlow is imported (tests/conftest.py sets it).

Each strategy trains a small conv / batch-norm / dense model for a few SGD
steps; the variables of every copy, and tower 0's moving statistics, are
checked against a single-device run of the same model: that run's gradients
of each tower's batch, combined as the strategy combines them (none, mean,
sum; one step stale with staged variables) and applied in NumPy.
distributed_replicated runs on a one-worker cluster inside the test process.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

import real_models

tf1 = tf.compat.v1


def _layers_usable():
  """Why tf.compat.v1.layers cannot build here, or None."""
  try:
    tf1.layers.Dense  # pylint: disable=pointless-statement
  except (AttributeError, ImportError) as e:
    return ('%s: tf.compat.v1.layers needs Keras 2 on TensorFlow %s; install '
            "tf_keras (pip install -e '.[layers]') and set "
            'TF_USE_LEGACY_KERAS=1 before importing TensorFlow (TF_USE_LEGACY_'
            'KERAS=%r here)' % (e, tf.__version__,
                                os.environ.get('TF_USE_LEGACY_KERAS')))
  return None


if _layers_usable():
  pytest.fail(_layers_usable(), pytrace=False)

# The layers warn that they are deprecated in favour of Keras layers, which
# ignore variable scopes and custom getters.
pytestmark = pytest.mark.filterwarnings('ignore:`tf.layers.')

STEPS = 3
MOMENTUM = 0.5  # Far from the default 0.99: a missing update shows.

# (id, real_models strategy name, more create() arguments)
STRATEGIES = [
    ('independent', 'independent', {}),
    ('parameter_server', 'ps_cpu', {}),
    ('parameter_server_spread', 'ps_spread', {}),
    ('parameter_server_staged', 'staged_ps', {}),
    ('replicated', 'replicated', {}),
    ('replicated_xring', 'replicated', dict(all_reduce_spec='xring')),
    ('replicated_pscpu_xring', 'replicated',
     dict(all_reduce_spec='pscpu:2k:xring')),
    ('replicated_repacked', 'replicated',
     dict(all_reduce_spec='rechd', gradient_repacking=2)),
]


class LayersModel(object):
  """conv2d -> batch_normalization -> relu -> max pool -> dense -> softmax
  cross-entropy, all from tf.compat.v1.layers, NHWC."""

  BATCH, SIZE, CHANNELS, FILTERS, CLASSES = 4, 6, 2, 3, 5
  dtype = tf.float32

  def __init__(self):
    self.reference = None

  def build(self):
    images = tf1.placeholder(
        self.dtype, [self.BATCH, self.SIZE, self.SIZE, self.CHANNELS])
    labels = tf1.placeholder(tf.int32, [self.BATCH])
    x = tf1.layers.conv2d(images, self.FILTERS, 3, padding='same',
                          use_bias=False, name='conv')
    x = tf1.layers.batch_normalization(x, momentum=MOMENTUM, training=True,
                                       name='bn')
    x = tf1.layers.max_pooling2d(tf.nn.relu(x), 2, 2)
    logits = tf1.layers.dense(tf1.layers.flatten(x), self.CLASSES,
                              name='logits')
    loss = tf1.losses.sparse_softmax_cross_entropy(labels, logits)
    return loss, (images, labels)

  def batch(self, rng):
    return (rng.randn(self.BATCH, self.SIZE, self.SIZE, self.CHANNELS),
            rng.randint(0, self.CLASSES, self.BATCH))

  # What real_models.reference needs: the trainable names and gradients.
  TRAINABLE = ('conv/kernel', 'bn/gamma', 'bn/beta', 'logits/kernel',
               'logits/bias')
  MOVING = ('bn/moving_mean', 'bn/moving_variance')

  def gradients(self, params, batch):
    return self.reference.gradients(params, batch)


class SingleDevice(object):
  """The model built once, on one device, without a manager: gradients of a
  batch and the moving statistics after one update, at given values."""

  def __init__(self, model):
    self.graph = tf.Graph()
    with self.graph.as_default():
      self.loss, self.inputs = model.build()
      variables = tf1.global_variables()
      self.variables = dict((v.op.name, v) for v in variables)
      trainable = [self.variables[k] for k in model.TRAINABLE]
      self.grads = dict(zip(model.TRAINABLE,
                            tf.gradients(self.loss, trainable)))
      self.updates = tf1.get_collection(tf1.GraphKeys.UPDATE_OPS)
      init = tf1.global_variables_initializer()
    self.sess = tf1.Session(graph=self.graph)
    self.sess.run(init)

  def _load(self, params):
    for name, value in params.items():
      self.variables[name].load(np.asarray(value, np.float32), self.sess)

  def _feeds(self, batch):
    return dict(zip(self.inputs, batch))

  def gradients(self, params, batch):
    self._load(params)
    grads = self.sess.run(self.grads, self._feeds(batch))
    return dict((k, np.asarray(g, np.float64)) for k, g in grads.items())

  def moving_after(self, params, moving, batch):
    """The moving statistics `moving` after one update from `batch` read at
    the trainable values `params`."""
    self._load(params)
    self._load(moving)
    self.sess.run(self.updates, self._feeds(batch))
    return self.sess.run(dict((k, self.variables[k]) for k in moving))

  def close(self):
    self.sess.close()


@pytest.fixture(scope='module')
def single_device():
  model = LayersModel()
  model.reference = SingleDevice(model)
  yield model
  model.reference.close()


@pytest.mark.parametrize('num_towers', [2])
@pytest.mark.parametrize('label,name,options', STRATEGIES,
                         ids=[s[0] for s in STRATEGIES])
def test_layers_model_matches_single_device(label, name, options, num_towers,
                                            variable_kind, single_device):
  del label
  model = single_device
  run = real_models.Run(name, num_towers, model, seed=3, **options)
  try:
    kinds = set(type(v).__name__ for v in run.model_variables
                if 'conv/kernel' in v.name)
    if variable_kind == 'ref':
      assert kinds == {'RefVariable'}, kinds
    else:
      assert kinds <= {'ResourceVariable'}, kinds
    init = run.values(0)
    batches = real_models.make_batches(model, num_towers, STEPS, seed=1)
    history, used = real_models.reference(
        model, dict((k, init[k]) for k in model.TRAINABLE), batches,
        run.combine, run.stale)
    moving = dict((k, init[k]) for k in model.MOVING)
    for step, step_batches in enumerate(batches):
      run.step(step_batches)
      # Batch-norm statistics: tower 0's batch, at the weights it read.
      moving = model.reference.moving_after(used[step][0], moving,
                                            step_batches[0])
    for tower in run.towers:
      got = run.values(tower)
      real_models.assert_close(got, history[-1][tower], np.float32,
                               model.TRAINABLE, 'tower %d' % tower)
    real_models.assert_close(run.values(0), moving, np.float32, model.MOVING,
                             'tower 0 statistics')
  finally:
    run.close()


def test_layers_model_distributed_replicated_matches_single_device(
    variable_kind, single_device):
  """distributed_replicated on a one-worker cluster inside this process:
  every local copy follows the mean of the towers' single-device
  gradients; tower 0's statistics follow its batches."""
  from variable_mgr.benchmark.runs import in_process  # pylint: disable=g-import-not-at-top
  import variable_mgr  # pylint: disable=g-import-not-at-top
  model = single_device
  num_towers = 2
  host = in_process.LocalClusterHost(num_towers)
  graph = tf.Graph()
  with graph.as_default():
    mgr = variable_mgr.create('distributed_replicated', host)
    host.devices = mgr.get_devices()
    inputs, device_grads, update_ops = [], [], []
    for d in range(num_towers):
      with mgr.create_outer_variable_scope(d), \
           tf.name_scope('tower_%i' % d), tf1.device(host.devices[d]):
        loss, tower_inputs = model.build()
        inputs.append(tower_inputs)
        grads = tf.gradients(loss, mgr.trainable_variables_on_device(d))
        device_grads.append(zip(
            grads, mgr.trainable_variables_on_device(d, writable=True)))
        if mgr.retain_tower_updates(d):
          update_ops.extend(tf1.get_collection(tf1.GraphKeys.UPDATE_OPS))
    apply_devices, state = mgr.preprocess_device_grads(device_grads)
    opt = tf1.train.GradientDescentOptimizer(real_models.LEARNING_RATE)
    training_ops = []
    for i, device in enumerate(apply_devices):
      with tf1.device(device):
        mgr.append_apply_gradients_ops(
            state, opt, mgr.get_gradients_to_apply(i, state), training_ops)
    train_op = tf.group(*(training_ops + update_ops))
    init = [tf1.global_variables_initializer(),
            tf1.local_variables_initializer()]
    post_init = mgr.get_post_init_ops()
    copies = [dict((v.op.name[len('v%d/' % d):], v)
                   for v in tf1.local_variables()
                   if v.op.name.startswith('v%d/' % d))
              for d in range(num_towers)]
  kind = type(copies[0]['conv/kernel']).__name__
  assert kind == {'ref': 'RefVariable',
                  'resource': 'ResourceVariable'}[variable_kind], kind
  with tf1.Session(host.start(), graph=graph,
                   config=host.session_config()) as sess:
    sess.run(init)
    sess.run(post_init)
    init_values = sess.run(copies[0])
    batches = real_models.make_batches(model, num_towers, STEPS, seed=2)
    history, used = real_models.reference(
        model, dict((k, init_values[k]) for k in model.TRAINABLE), batches,
        'mean')
    moving = dict((k, init_values[k]) for k in model.MOVING)
    for step, step_batches in enumerate(batches):
      feeds = {}
      for tower_inputs, batch in zip(inputs, step_batches):
        feeds.update(zip(tower_inputs, batch))
      sess.run(train_op, feeds)
      moving = model.reference.moving_after(used[step][0], moving,
                                            step_batches[0])
    for d in range(num_towers):
      real_models.assert_close(sess.run(copies[d]), history[-1][d],
                               np.float32, model.TRAINABLE, 'tower %d' % d)
    real_models.assert_close(sess.run(copies[0]), moving, np.float32,
                             model.MOVING, 'tower 0 statistics')
