"""Small models with the parts of real ones, and a harness for any of them.

Each model builds one tower from `tf.get_variable` and `tf.nn` (no Keras)
and has a NumPy twin of its gradients, so that a few SGD steps under any
local strategy can be checked against NumPy:

- `BatchNormModel`: dense layer, hand-written batch norm whose moving
  statistics are non-trainable variables updated in UPDATE_OPS.
- `EmbeddingModel`: two tables read with `embedding_lookup` and `gather`
  (their gradients are IndexedSlices), then a dense layer.
- `FrozenModel`: a two-layer network with a variable behind `stop_gradient`
  and a variable no op reads (both have a None gradient).
- `LinearModel`: `sum(x W)`, whose gradient is the column sums of x: in
  float16, data decide whether a sum over towers overflows.

`Run` drives a manager in the order of tf_cnn_benchmarks' harness (see
README), keeping tower 0's UPDATE_OPS and the staging delta ops when
`retain_tower_updates(0)`.
"""

import collections

import numpy as np
import tensorflow as tf

import seed_harness

tf1 = tf.compat.v1

LEARNING_RATE = 0.1

# name -> (create() arguments, host arguments, default combination).
STRATEGIES = collections.OrderedDict([
    ('independent', (dict(variable_update='independent'), {}, 'none')),
    ('ps_cpu', (dict(variable_update='parameter_server'), {}, 'mean')),
    ('ps_spread', (dict(variable_update='parameter_server'),
                   dict(local_parameter_device='gpu'), 'mean')),
    ('staged_ps', (dict(variable_update='parameter_server', staged_vars=True),
                   {}, 'mean')),
    ('replicated', (dict(variable_update='replicated'), {}, 'sum')),
    ('replicated_xring', (dict(variable_update='replicated',
                               all_reduce_spec='xring'), {}, 'sum')),
])
NAMES = list(STRATEGIES)

TOLERANCE = {np.float16: dict(rtol=2e-3, atol=2e-3),
             np.float32: dict(rtol=1e-4, atol=1e-5),
             np.float64: dict(rtol=1e-10, atol=1e-12)}


def _normal(stddev=0.5):
  return tf1.random_normal_initializer(stddev=stddev)


def batch_norm(z, decay, epsilon, name='bn'):
  """Batch norm of `z` [batch, channels] over the batch, with moving
  statistics updated in UPDATE_OPS."""
  channels = z.shape[-1]
  dtype = z.dtype
  with tf1.variable_scope(name):
    gamma = tf1.get_variable('gamma', [channels], dtype,
                             tf1.random_uniform_initializer(0.5, 1.5))
    beta = tf1.get_variable('beta', [channels], dtype, _normal(0.1))
    moving_mean = tf1.get_variable('moving_mean', [channels], dtype,
                                   tf1.zeros_initializer(), trainable=False)
    moving_variance = tf1.get_variable('moving_variance', [channels], dtype,
                                       tf1.ones_initializer(), trainable=False)
  mean, variance = tf.nn.moments(z, [0])
  for moving, batch in ((moving_mean, mean), (moving_variance, variance)):
    delta = tf.multiply(tf.subtract(moving, batch), 1.0 - decay)
    tf1.add_to_collection(tf1.GraphKeys.UPDATE_OPS, moving.assign_sub(delta))
  return tf.nn.batch_normalization(z, mean, variance, beta, gamma, epsilon)


class BatchNormModel(object):
  """z = x W; batch norm of z over the batch; loss = 0.5 mean |bn(z) - y|^2.

  The moving statistics follow `moving -= (moving - batch) * (1 - DECAY)`,
  through the variable's own `assign_sub` (a staged variable stands in for
  the real one there), the update op added to UPDATE_OPS.
  """

  IN, CHANNELS, BATCH = 3, 4, 6
  DECAY = 0.7  # Far from 1: a missing or repeated update shows.
  EPSILON = 1e-3
  TRAINABLE = ('dense/w', 'bn/gamma', 'bn/beta')
  MOVING = ('bn/moving_mean', 'bn/moving_variance')

  def __init__(self, channels=CHANNELS, dtype=tf.float32):
    self.channels = channels
    self.dtype = dtype

  def build(self):
    x = tf1.placeholder(self.dtype, [self.BATCH, self.IN])
    y = tf1.placeholder(self.dtype, [self.BATCH, self.channels])
    w = tf1.get_variable('dense/w', [self.IN, self.channels], self.dtype,
                         _normal(1.0))
    out = batch_norm(tf.matmul(x, w), self.DECAY, self.EPSILON)
    loss = 0.5 * tf.reduce_mean(tf.reduce_sum(tf.square(out - y), axis=1))
    return loss, (x, y)

  def batch(self, rng):
    return (rng.randn(self.BATCH, self.IN),
            rng.randn(self.BATCH, self.channels))

  def batch_statistics(self, params, batch):
    x, _ = batch
    z = x.dot(params['dense/w'])
    return z.mean(0), z.var(0)

  def gradients(self, params, batch):
    x, y = batch
    w, gamma, beta = (params[k] for k in self.TRAINABLE)
    n = x.shape[0]
    z = x.dot(w)
    inv_std = 1.0 / np.sqrt(z.var(0) + self.EPSILON)
    z_hat = (z - z.mean(0)) * inv_std
    d_out = (gamma * z_hat + beta - y) / n
    d_hat = d_out * gamma
    d_z = inv_std / n * (n * d_hat - d_hat.sum(0) -
                         z_hat * (d_hat * z_hat).sum(0))
    return {'dense/w': x.T.dot(d_z), 'bn/gamma': (d_out * z_hat).sum(0),
            'bn/beta': d_out.sum(0)}


class EmbeddingModel(object):
  """e = words[ids] + tags[tag_ids]; loss = 0.5 mean |e W - y|^2.

  `words` is read with `embedding_lookup`; `tags` with `tf.gather` if
  `gather`, else with `embedding_lookup` too.
  """

  WORDS, TAGS, DIM, OUT, BATCH = 7, 4, 3, 2, 5
  TRAINABLE = ('embedding/words', 'embedding/tags', 'dense/w')
  TABLES = ('embedding/words', 'embedding/tags')

  dtype = tf.float32

  def __init__(self, gather=True):
    self.gather = gather

  def build(self):
    ids = tf1.placeholder(tf.int32, [self.BATCH])
    tag_ids = tf1.placeholder(tf.int32, [self.BATCH])
    y = tf1.placeholder(self.dtype, [self.BATCH, self.OUT])
    words = tf1.get_variable('embedding/words', [self.WORDS, self.DIM],
                             self.dtype, _normal())
    tags = tf1.get_variable('embedding/tags', [self.TAGS, self.DIM],
                            self.dtype, _normal())
    w = tf1.get_variable('dense/w', [self.DIM, self.OUT], self.dtype,
                         _normal())
    read = tf.gather if self.gather else tf.nn.embedding_lookup
    e = tf.nn.embedding_lookup(words, ids) + read(tags, tag_ids)
    loss = 0.5 * tf.reduce_mean(
        tf.reduce_sum(tf.square(tf.matmul(e, w) - y), axis=1))
    return loss, (ids, tag_ids, y)

  def batch(self, rng):
    # Repeated ids within and across towers: rows get several updates.
    return (rng.randint(0, self.WORDS - 2, self.BATCH),
            rng.randint(0, self.TAGS, self.BATCH),
            rng.randn(self.BATCH, self.OUT))

  def gradients(self, params, batch):
    ids, tag_ids, y = batch
    words, tags, w = (params[k] for k in self.TRAINABLE)
    e = words[ids] + tags[tag_ids]
    d_pred = (e.dot(w) - y) / len(ids)
    d_e = d_pred.dot(w.T)
    d_words = np.zeros_like(words)
    np.add.at(d_words, ids, d_e)
    d_tags = np.zeros_like(tags)
    np.add.at(d_tags, tag_ids, d_e)
    return {'embedding/words': d_words, 'embedding/tags': d_tags,
            'dense/w': e.T.dot(d_pred)}


class FrozenModel(object):
  """h = tanh(x W1 + stop_gradient(b)); loss = 0.5 mean |h W2 - y|^2, and a
  variable `unused/w` that no op reads. b and unused/w are trainable but
  their gradients are None."""

  IN, HIDDEN, OUT, BATCH = 4, 3, 2, 5
  TRAINABLE = ('layer1/w', 'layer2/w')
  FROZEN = ('layer1/frozen_bias', 'unused/w')

  dtype = tf.float32

  def build(self):
    x = tf1.placeholder(self.dtype, [self.BATCH, self.IN])
    y = tf1.placeholder(self.dtype, [self.BATCH, self.OUT])
    w1 = tf1.get_variable('layer1/w', [self.IN, self.HIDDEN], self.dtype,
                          _normal())
    bias = tf1.get_variable('layer1/frozen_bias', [self.HIDDEN], self.dtype,
                            _normal())
    w2 = tf1.get_variable('layer2/w', [self.HIDDEN, self.OUT], self.dtype,
                          _normal())
    tf1.get_variable('unused/w', [2, 2], self.dtype, _normal())
    h = tf.tanh(tf.matmul(x, w1) + tf.stop_gradient(bias))
    loss = 0.5 * tf.reduce_mean(
        tf.reduce_sum(tf.square(tf.matmul(h, w2) - y), axis=1))
    return loss, (x, y)

  def batch(self, rng):
    return rng.randn(self.BATCH, self.IN), rng.randn(self.BATCH, self.OUT)

  def gradients(self, params, batch):
    x, y = batch
    w1, w2 = params['layer1/w'], params['layer2/w']
    h = np.tanh(x.dot(w1) + params['layer1/frozen_bias'])
    d_pred = (h.dot(w2) - y) / x.shape[0]
    d_h = d_pred.dot(w2.T) * (1 - h * h)
    return {'layer1/w': x.T.dot(d_h), 'layer2/w': h.T.dot(d_pred)}


class LinearModel(object):
  """loss = sum(x W): the gradient of W is x's column sums, broadcast."""

  IN, OUT, BATCH = 3, 2, 4
  TRAINABLE = ('linear/w',)

  def __init__(self, dtype=tf.float16):
    self.dtype = dtype

  def build(self):
    x = tf1.placeholder(self.dtype, [self.BATCH, self.IN])
    w = tf1.get_variable('linear/w', [self.IN, self.OUT], self.dtype,
                         _normal(1.0))
    return tf.reduce_sum(tf.matmul(x, w)), (x,)

  def gradients(self, params, batch):
    (x,) = batch
    column_sums = x.astype(np.float64).sum(0)
    return {'linear/w': np.repeat(column_sums[:, None], self.OUT, axis=1)}


class Run(seed_harness.Harness):
  """One graph of `model` on `num_towers` towers under strategy `name`.

  Args:
    name: a key of `STRATEGIES`.
    num_towers: tower count.
    model: one of the models above.
    seed, global_step, restore_from: as `seed_harness.Harness` takes them.
    learning_rate: SGD learning rate, in the model's dtype.
    **options: more `variable_mgr.create` arguments (reduction, ...).

  Attributes: those of `seed_harness.Harness`, and `combine` (how the
  strategy combines the towers' gradients) and `stale` (staged variables).
  """

  def __init__(self, name, num_towers, model, seed=None, global_step=False,
               restore_from=None, learning_rate=LEARNING_RATE, **options):
    create_args, host_args, combine = STRATEGIES[name]
    self.name = name
    self.combine = options.get('reduction') or combine
    self.stale = create_args.get('staged_vars', False)
    seed_harness.Harness.__init__(
        self, dict(create_args, **options), host_args, num_towers,
        model.build, learning_rate, model.dtype, seed=seed,
        global_step=global_step, restore_from=restore_from)

  @property
  def towers(self):
    """The towers with a copy of their own (0 only for shared variables)."""
    if self.mgr.each_tower_has_variables():
      return list(range(self.num_towers))
    return [0]

  def values(self, tower=0):
    """`{canonical name: value}` of every variable of tower `tower`'s copy
    (the shared copy for parameter-server strategies)."""
    return self.sess.run(self.tower_variables(tower))

  def global_step_value(self):
    return self.sess.run(self.global_step)

  def save(self, path):
    return self.saver.save(self.sess, path)


def make_batches(model, num_towers, steps, seed=0):
  """`[step][tower]` batches of `model`."""
  rng = np.random.RandomState(seed)
  return [[model.batch(rng) for _ in range(num_towers)]
          for _ in range(steps)]


def reference(model, init, batches, combine, stale=False,
              learning_rate=LEARNING_RATE):
  """Plain SGD in NumPy (float64) on `model.TRAINABLE`.

  Args:
    model: gives `gradients(params, batch)`.
    init: `{name: value}`: every tower's starting point.
    batches: `[step][tower]`.
    combine: 'none' (each tower its own gradient), 'mean' or 'sum'.
    stale: gradients taken at the previous step's weights (staged reads).

  Returns:
    `(history, used)`: `history[step][tower]` the parameters after the step,
    `used[step][tower]` the parameters the step's gradients were taken at.
  """
  num_towers = len(batches[0])
  towers = [dict((k, np.asarray(v, np.float64)) for k, v in init.items())
            for _ in range(num_towers)]
  previous = towers[0]
  history, used = [], []
  for step_batches in batches:
    if combine == 'none':
      used.append(towers)
      new_towers = []
      for params, batch in zip(towers, step_batches):
        grads = model.gradients(params, batch)
        new = dict(params)
        for k, g in grads.items():
          new[k] = params[k] - learning_rate * g
        new_towers.append(new)
      towers = new_towers
    else:
      current = towers[0]
      at = previous if stale else current
      used.append([at] * num_towers)
      grads = [model.gradients(at, batch) for batch in step_batches]
      new = dict(current)
      for k in grads[0]:
        total = sum(g[k] for g in grads)
        if combine == 'mean':
          total = total / num_towers
        new[k] = current[k] - learning_rate * total
      previous = current
      towers = [new] * num_towers
    history.append(towers)
  return history, used


def assert_close(got, want, dtype, names, message=''):
  for k in names:
    np.testing.assert_allclose(got[k], want[k], err_msg='%s %s' % (message, k),
                               **TOLERANCE[dtype])
