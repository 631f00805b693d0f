"""The benchmark's optimizers and learning rates against NumPy and closed
forms.

Optimizers: the trivial model (logits = x W + b) trained by the harness
under parameter_server on 2 towers of 4 synthetic images, its losses and
variables after 3 steps against tf.train's update rules replayed in NumPy
on the same batches (those of tests/distributed/clusterlib.py).

Learning rates: the rate tensor evaluated with the global step assigned,
against tf_cnn_benchmarks' formulas written out.
"""

import json
import math
import os
import sys

import numpy as np
import pytest
import tensorflow as _tf

from variable_mgr.benchmark import cli
from variable_mgr.benchmark.flags import command_line
from variable_mgr.benchmark.runs import local_run
from variable_mgr.benchmark.training import harness
from variable_mgr.benchmark.training import optimizers
from variable_mgr.benchmark.training import run_config

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, os.pardir, 'distributed'))
import clusterlib  # pylint: disable=g-import-not-at-top,wrong-import-position

tf = _tf.compat.v1

TOWERS = 2
STEPS = 3
RATE = 0.05
IMAGENET = 1281167


def _config(**fields):
  values = dict(model='trivial', variable_update='parameter_server',
                num_gpus=TOWERS, batch_size=clusterlib.BATCH,
                weight_decay=0.0, seed=clusterlib.SEED)
  values.update(fields)
  return run_config.BenchmarkConfig(**values).resolved()


def _train(config, steps=STEPS):
  """(initial variables, losses, variables after `steps` steps) of the
  harness's graph of `config`."""
  host, session_config = local_run.make_host(config)
  g = harness.build_training_graph(config, host)
  with g.graph.as_default():
    model_vars = dict((v.op.name.split('/', 1)[1], v)
                      for v in tf.global_variables()
                      if v.op.name.startswith('v') and 'logits' in v.op.name
                      and v.op.name.split('/')[-1] in ('weights', 'biases'))
  assert sorted(model_vars) == ['logits/biases', 'logits/weights']
  with tf.Session(graph=g.graph, config=session_config) as sess:
    sess.run(g.init_op)
    sess.run(g.post_init_op or [])
    initial = sess.run(model_vars)
    losses = [sess.run([g.loss, g.train_op])[0] for _ in range(steps)]
    final = sess.run(model_vars)
  return initial, losses, final


def _loss(w, batch):
  x, labels = batch
  logits = x.dot(w['logits/weights']) + w['logits/biases']
  logits = logits - logits.max(axis=1, keepdims=True)
  log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
  return -log_p[np.arange(len(labels)), labels].mean()


def _reference(initial, update, rates):
  """NumPy's losses and variables: `update(name, w, g, t, rate, slots)`
  returns the new w at step t (1-based) from the mean of the towers'
  gradients (parameter_server averages them)."""
  batches = clusterlib.tower_batches(TOWERS)
  w = dict((k, v.astype(np.float64)) for k, v in initial.items())
  slots = dict((k, {}) for k in w)
  losses = []
  for t, rate in enumerate(rates, 1):
    losses.append(np.mean([_loss(w, b) for b in batches]))
    grads = [clusterlib.gradients(w, b) for b in batches]
    for k in w:
      g = sum(gd[k] for gd in grads) / len(grads)
      w[k] = update(w[k], g, t, rate, slots[k])
  return losses, w


def _sgd(w, g, t, rate, slots):
  del t, slots
  return w - rate * g


def _momentum(momentum):
  def update(w, g, t, rate, slots):
    del t
    # tf.train's Nesterov momentum (tf_cnn_benchmarks' momentum).
    slots['acc'] = momentum * slots.get('acc', 0.0) + g
    return w - rate * (g + momentum * slots['acc'])
  return update


def _rmsprop(decay, momentum, epsilon):
  def update(w, g, t, rate, slots):
    del t
    # tf.train.RMSPropOptimizer starts its mean square at 1.
    slots['ms'] = decay * slots.get('ms', 1.0) + (1 - decay) * g * g
    slots['mom'] = momentum * slots.get('mom', 0.0) + (
        rate * g / np.sqrt(slots['ms'] + epsilon))
    return w - slots['mom']
  return update


def _adam(beta1, beta2, epsilon):
  def update(w, g, t, rate, slots):
    slots['m'] = beta1 * slots.get('m', 0.0) + (1 - beta1) * g
    slots['v'] = beta2 * slots.get('v', 0.0) + (1 - beta2) * g * g
    step_rate = rate * math.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
    return w - step_rate * slots['m'] / (np.sqrt(slots['v']) + epsilon)
  return update


def _close(actual, expected, atol=1e-6):
  np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=atol)


@pytest.mark.parametrize('fields,update', [
    (dict(optimizer='sgd'), _sgd),
    (dict(optimizer='momentum', momentum=0.8), _momentum(0.8)),
    (dict(optimizer='rmsprop'), _rmsprop(0.9, 0.9, 1.0)),
    (dict(optimizer='rmsprop', rmsprop_decay=0.5, rmsprop_momentum=0.3,
          rmsprop_epsilon=0.01), _rmsprop(0.5, 0.3, 0.01)),
    (dict(optimizer='adam'), _adam(0.9, 0.999, 1e-8)),
    (dict(optimizer='adam', adam_beta1=0.5, adam_beta2=0.75,
          adam_epsilon=0.1), _adam(0.5, 0.75, 0.1)),
], ids=['sgd', 'momentum', 'rmsprop', 'rmsprop_flags', 'adam', 'adam_flags'])
def test_optimizer_matches_numpy(fields, update):
  config = _config(learning_rate=RATE, **fields)
  initial, losses, final = _train(config)
  expected_losses, expected = _reference(initial, update, [RATE] * STEPS)
  _close(losses, expected_losses)
  # Adam moves every weight by about the rate a step, whatever its
  # gradient: where the gradient is near 0 (float32 noise against the
  # epsilon of 1e-8), the direction is noise too. 5e-4 is 1% of a step.
  atol = 5e-4 if fields.get('optimizer') == 'adam' and (
      'adam_epsilon' not in fields) else 1e-6
  for k in expected:
    _close(final[k], expected[k], atol)
  # Another rule from the same start ends elsewhere: the flags counted.
  if update is not _sgd:
    _, sgd = _reference(initial, _sgd, [RATE] * STEPS)
    assert not np.allclose(final['logits/weights'], sgd['logits/weights'],
                           rtol=1e-3, atol=1e-5)


def _train_towers(config):
  """(initial, final) variables of each tower's copy (replicated and
  independent keep one a tower: v0/..., v1/...)."""
  host, session_config = local_run.make_host(config)
  g = harness.build_training_graph(config, host)
  with g.graph.as_default():
    copies = [dict((k, v) for v in tf.global_variables()
                   for k in ('logits/weights', 'logits/biases')
                   if v.op.name == 'v%d/%s' % (d, k))
              for d in range(TOWERS)]
  assert all(len(c) == 2 for c in copies), copies
  with tf.Session(graph=g.graph, config=session_config) as sess:
    sess.run(g.init_op)
    sess.run(g.post_init_op or [])
    initial = sess.run(copies)
    for _ in range(STEPS):
      sess.run(g.train_op)
    return initial, sess.run(copies)


@pytest.mark.parametrize('strategy', ['replicated', 'independent'])
@pytest.mark.parametrize('fields,update', [
    (dict(optimizer='adam', adam_epsilon=0.1), _adam(0.9, 0.999, 0.1)),
    (dict(optimizer='rmsprop'), _rmsprop(0.9, 0.9, 1.0)),
], ids=['adam', 'rmsprop'])
def test_optimizer_on_every_tower_matches_numpy(strategy, fields, update):
  # One apply_gradients call a tower: Adam's bias correction still counts
  # one step a step (tf.train's own advanced once a call, by the tower
  # count a step). replicated: every copy applies the sum of the towers'
  # gradients; independent: each its own.
  config = _config(variable_update=strategy, learning_rate=RATE, **fields)
  initial, final = _train_towers(config)
  batches = clusterlib.tower_batches(TOWERS)
  for d in range(TOWERS):
    w = dict((k, v.astype(np.float64)) for k, v in initial[d].items())
    slots = dict((k, {}) for k in w)
    for t in range(1, STEPS + 1):
      grads = [clusterlib.gradients(w, b) for b in batches]
      for k in w:
        g = (sum(gd[k] for gd in grads) if strategy == 'replicated' else
             grads[d][k])
        w[k] = update(w[k], g, t, RATE, slots[k])
    for k in w:
      _close(final[d][k], w[k])


def test_a_schedule_reaches_the_optimizer():
  # Synthetic data: an epoch is ImageNet's 1,281,167 images, 160,145.875
  # steps of 8 images. A warmup of 2.5 / 160145.875 epochs lasts int(2.5) =
  # 2 steps: rates 0, r/2, then r x 0.5 ** floor(t / 1) (a decay every
  # 1.5 / 160145.875 epochs: int(1.5) = 1 step).
  per_epoch = IMAGENET / 8.0
  config = _config(optimizer='momentum', momentum=0.5, learning_rate=0.4,
                   num_learning_rate_warmup_epochs=2.5 / per_epoch,
                   num_epochs_per_decay=1.5 / per_epoch,
                   learning_rate_decay_factor=0.5)
  expected_rates = [0.0, 0.2, 0.4 * 0.5 ** 2, 0.4 * 0.5 ** 3]
  _close(_rates(config, 8, range(4)), expected_rates)
  initial, losses, final = _train(config, steps=4)
  expected_losses, expected = _reference(initial, _momentum(0.5),
                                         expected_rates)
  _close(losses, expected_losses)
  for k in expected:
    _close(final[k], expected[k])


# -- Learning rates against closed forms --------------------------------------


def _rates(config, global_batch, steps):
  """The rate tensor of `config` evaluated at each of `steps`."""
  graph = tf.Graph()
  with graph.as_default():
    global_step = tf.train.get_or_create_global_step()
    rate = optimizers.learning_rate_tensor(config, global_step, global_batch)
    assert rate.dtype == tf.float32
    with tf.Session() as sess:
      sess.run(tf.global_variables_initializer())
      values = []
      for step in steps:
        sess.run(global_step.assign(step))
        values.append(float(sess.run(rate)))
  return values


STEPS_TO_READ = [0, 1, 2, 9, 10, 11, 23, 24, 46, 47, 93, 94, 1000]


def test_a_constant_rate_is_a_float_and_no_op():
  config = _config(learning_rate=0.3)
  graph = tf.Graph()
  with graph.as_default():
    step = tf.train.get_or_create_global_step()
    before = len(graph.get_operations())
    assert optimizers.learning_rate(config, step, 8) == 0.3
    assert isinstance(optimizers.make_optimizer(config, step, 8),
                      tf.train.GradientDescentOptimizer)
    assert len(graph.get_operations()) == before
  # The model's fixed rate (trivial, lenet, resnet20: no scaling).
  for model, rate in (('trivial', 0.05), ('lenet', 0.01), ('resnet20', 0.05)):
    assert optimizers.learning_rate(_config(model=model), None, 1024) == rate
  assert _rates(config, 8, [0, 5]) == pytest.approx([0.3, 0.3])


def test_exponential_decay_is_staircase_and_bounded():
  # digits: 1,497 images, 1497 / 32 = 46.78 steps an epoch; a decay every
  # 0.5 epochs is int(23.39) = 23 steps.
  config = _config(model='lenet', data_name='digits', learning_rate=0.4,
                   num_epochs_per_decay=0.5, learning_rate_decay_factor=0.5,
                   minimum_learning_rate=0.06)
  expected = [max(0.4 * 0.5 ** (s // 23), 0.06) for s in STEPS_TO_READ]
  assert _rates(config, 32, STEPS_TO_READ) == pytest.approx(expected,
                                                            rel=1e-6)
  assert expected[-1] == 0.06 and expected[6] == 0.2
  no_minimum = config._replace(minimum_learning_rate=0.0)
  assert _rates(no_minimum, 32, [1000]) == pytest.approx(
      [0.4 * 0.5 ** (1000 // 23)], rel=1e-5)


def test_piecewise_schedule_changes_after_each_epoch():
  # 46.78 steps an epoch: the rate changes after steps int(46.78) - 1 = 45
  # and int(93.56) - 1 = 92.
  config = _config(model='lenet', data_name='digits',
                   piecewise_learning_rate_schedule='0.3;1;0.2;2;0.1')
  steps = [0, 45, 46, 92, 93, 1000]
  assert _rates(config, 32, steps) == pytest.approx(
      [0.3, 0.3, 0.2, 0.2, 0.1, 0.1], rel=1e-6)


def test_warmup_rises_linearly_to_the_initial_rate():
  # Warmup 0.5 epochs: int(23.39) = 23 steps, rate0 x step / 23.
  config = _config(model='lenet', data_name='digits',
                   piecewise_learning_rate_schedule='0.3;1;0.2',
                   num_learning_rate_warmup_epochs=0.5)
  steps = [0, 1, 11, 22, 23, 45, 46]
  expected = [0.3 * s / 23.0 for s in steps[:4]] + [0.3, 0.3, 0.2]
  assert _rates(config, 32, steps) == pytest.approx(expected, rel=1e-6)
  decayed = _config(model='lenet', data_name='digits', learning_rate=0.4,
                    num_epochs_per_decay=1, learning_rate_decay_factor=0.5,
                    num_learning_rate_warmup_epochs=0.5)
  # The warmup rises to the initial rate, then the decay's rate (46 steps).
  assert _rates(decayed, 32, [0, 10, 23, 45, 46]) == pytest.approx(
      [0.0, 0.4 * 10 / 23.0, 0.4, 0.4, 0.2], rel=1e-6)


def test_resnet_default_is_tf_cnn_benchmarks_scaled_schedule():
  # 0.128 x global batch / 256; warmup over 5 ImageNet epochs, then x0.1 at
  # epochs 30, 60, 80, 90 (steps int(epochs x 1281167 / batch)).
  for model in ('resnet50', 'resnet101', 'resnet152'):
    config = _config(model=model, variable_update='parameter_server')
    assert config.learning_rate is None
    batch = 512
    per_epoch = IMAGENET / float(batch)
    scaled = 0.128 * batch / 256
    warmup = int(5 * per_epoch)
    bounds = [int(e * per_epoch) for e in (30, 60, 80, 90)]
    steps = [0, 1, warmup // 2, warmup - 1, warmup, bounds[0], bounds[0] + 1,
             bounds[1] + 1, bounds[2] + 1, bounds[3] + 1]
    expected = [scaled * s / warmup for s in steps[:4]] + [
        scaled, scaled, scaled * 0.1, scaled * 0.01, scaled * 0.001,
        scaled * 0.0001]
    assert _rates(config, batch, steps) == pytest.approx(expected, rel=1e-5)
  # replicated sums the towers' gradients: tf_cnn_benchmarks divides the
  # base by the towers; --resnet_base_lr replaces 0.128.
  replicated = _config(model='resnet50', variable_update='replicated',
                       num_gpus=4, resnet_base_lr=0.256)
  per_epoch = IMAGENET / 128.0
  assert _rates(replicated, 128, [int(5 * per_epoch)]) == pytest.approx(
      [0.256 / 4 * 128 / 256], rel=1e-6)
  # No global batch: no scaling, the base rate.
  assert optimizers.learning_rate(replicated, None, None) == 0.256
  assert optimizers.learning_rate(_config(model='resnet50'), None,
                                  None) == 0.128


def test_an_initial_rate_replaces_the_resnet_default():
  config = _config(model='resnet50', learning_rate=0.01)
  assert optimizers.learning_rate(config, None, 512) == 0.01


def test_a_schedule_needs_the_global_batch_and_step():
  config = _config(learning_rate=0.1, num_learning_rate_warmup_epochs=1)
  with pytest.raises(optimizers.LearningRateError, match='global_batch'):
    optimizers.make_optimizer(config, None, None)
  with pytest.raises(optimizers.LearningRateError, match='global_step'):
    optimizers.make_optimizer(config, None, 8)


def test_steps_that_collapse_are_refused_before_ops():
  # A config built in Python, not by the flags: refused by the optimizer.
  config = _config(learning_rate=0.1, num_learning_rate_warmup_epochs=1e-9)
  graph = tf.Graph()
  with graph.as_default():
    step = tf.train.get_or_create_global_step()
    before = len(graph.get_operations())
    with pytest.raises(optimizers.LearningRateError,
                       match='^--num_learning_rate_warmup_epochs=1e-09: at a '
                       'global batch of 8 an epoch of 1281167 examples is '
                       '1.601e\\+05 steps, so the warmup would last 0 steps'):
      optimizers.make_optimizer(config, step, 8)
    assert len(graph.get_operations()) == before


def test_examples_per_epoch_is_the_train_split():
  assert optimizers.examples_per_epoch(_config()) == IMAGENET
  assert optimizers.examples_per_epoch(_config(data_name='digits')) == 1497
  assert command_line.EXAMPLES_PER_EPOCH['digits'] == 1497


def test_descriptions():
  assert optimizers.describe(_config(), 8) == 'sgd; learning rate 0.05'
  assert optimizers.describe(_config(optimizer='momentum',
                                     learning_rate=0.1), 8) == (
      'momentum (momentum 0.9); learning rate 0.1')
  assert optimizers.describe_optimizer(_config(optimizer='rmsprop')) == (
      'rmsprop (decay 0.9, momentum 0.9, epsilon 1)')
  assert optimizers.describe_optimizer(_config(optimizer='adam')) == (
      'adam (beta1 0.9, beta2 0.999, epsilon 1e-08)')
  assert optimizers.describe_learning_rate(_config(
      model='lenet', data_name='digits', learning_rate=0.4,
      num_epochs_per_decay=0.5, learning_rate_decay_factor=0.5,
      minimum_learning_rate=0.06, num_learning_rate_warmup_epochs=1), 32) == (
          'learning rate 0.4, x0.5 every 0.5 epochs (23 steps), at least '
          '0.06, warmup 1 epochs (46 steps)')
  assert optimizers.describe_learning_rate(_config(
      model='lenet', data_name='digits',
      piecewise_learning_rate_schedule='0.3;1;0.2;2;0.1'), 32) == (
          'learning rate 0.3, 0.2 from epoch 1 (step 46), 0.1 from epoch 2 '
          '(step 93)')
  assert optimizers.describe_learning_rate(_config(
      model='resnet50', variable_update='replicated', num_gpus=2), 64) == (
          "learning rate resnet50's default: 0.016 (0.128 / 2 towers x 64 / "
          "256), warmup 5 epochs (100091 steps), x0.1 at epochs 30, 60, 80, "
          "90")


def test_resnet50_default_does_not_diverge_on_one_tower():
  # The seed's fixed rate of 0.05 took the loss from 4.2 to 25 in two steps
  # at a batch of 32; tf_cnn_benchmarks' default starts its warmup at 0.
  config = run_config.BenchmarkConfig(
      model='resnet50', variable_update='replicated', num_gpus=1,
      batch_size=2).resolved()
  host, session_config = local_run.make_host(config)
  g = harness.build_training_graph(config, host)
  with tf.Session(graph=g.graph, config=session_config) as sess:
    sess.run(g.init_op)
    losses = [sess.run([g.loss, g.train_op])[0] for _ in range(3)]
  assert all(np.isfinite(losses)), losses
  assert max(losses) < losses[0] + 0.5, losses


def test_a_tf_cnn_command_line_trains_as_numpy_says(tmp_path, capsys):
  """tf_cnn_benchmarks' flags end to end: replicated (every tower applies
  the sum of the towers' gradients), momentum, --tf_random_seed=1 (the
  synthetic batches), --init_learning_rate, from a checkpoint of known
  values."""
  from variable_mgr.benchmark.models import catalog  # pylint: disable=g-import-not-at-top
  train_dir = str(tmp_path / 'train')
  initial = clusterlib.initial_values(seed=3)
  values = dict(initial)
  for k in initial:
    values[k + '/Momentum'] = np.zeros_like(initial[k])
  clusterlib.write_checkpoint(train_dir, values, 0)
  out = str(tmp_path / 'out.json')
  assert cli.main([
      '--model=trivial', '--data_name=small', '--batch_size=4',
      '--num_gpus=2', '--variable_update=replicated', '--optimizer=momentum',
      '--nodistortions', '--tf_random_seed=1', '--init_learning_rate=0.1',
      '--num_batches=2', '--num_warmup_batches=0', '--weight_decay=0',
      '--train_dir', train_dir, '--output', out]) == 0
  capsys.readouterr()
  with open(out) as f:
    losses = json.load(f)['losses']
  model = catalog.get_model('trivial')
  graph = tf.Graph()
  with graph.as_default():
    tensors = [harness.synthetic_inputs(model, 4, 1, d) for d in range(2)]
    with tf.Session(graph=graph) as sess:
      batches = [(x.reshape(4, -1).astype(np.float64), y)
                 for x, y in sess.run(tensors)]
  w = dict((k, v.astype(np.float64)) for k, v in initial.items())
  acc = dict((k, 0.0) for k in w)
  expected = []
  for _ in range(2):
    expected.append(np.mean([_loss(w, b) for b in batches]))
    grads = [clusterlib.gradients(w, b) for b in batches]
    for k in w:
      g = sum(gd[k] for gd in grads)
      # Nesterov momentum, as tf_cnn_benchmarks' --optimizer=momentum.
      acc[k] = 0.9 * acc[k] + g
      w[k] = w[k] - 0.1 * (g + 0.9 * acc[k])
  _close(losses, expected)
  saved, step = clusterlib.read_checkpoint(train_dir)
  assert step == 2
  for k in w:
    _close(saved[k], w[k])
