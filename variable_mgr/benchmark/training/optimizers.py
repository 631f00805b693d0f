"""The benchmark's optimizer and learning rate, from a BenchmarkConfig, as
tf_cnn_benchmarks builds them (benchmark_cnn.get_learning_rate and
get_optimizer, the models' get_learning_rate).

Optimizers (`--optimizer`): sgd, momentum (`--momentum`; Nesterov's, as
tf_cnn_benchmarks'), rmsprop (`--rmsprop_decay`,
`--rmsprop_momentum`, `--rmsprop_epsilon`) and adam (`--adam_beta1`,
`--adam_beta2`, `--adam_epsilon`; its bias correction counts the global
step, so that one apply call a tower, as replicated and independent make,
advances it once a step: `StepAdamOptimizer`).

The learning rate, at global step s, with an epoch of E examples and a
global batch of B images (every tower of every worker), so B / E epochs a
step and E / B steps an epoch:

* `--piecewise_learning_rate_schedule "lr0;e1;lr1;...;en;lrn"`: lr0 until
  step int(e1 * E / B) - 1 included, then lr1, ...;
* `--init_learning_rate r` with `--num_epochs_per_decay n` and
  `--learning_rate_decay_factor f`: r * f ** floor(s / int(n * E / B)),
  never below `--minimum_learning_rate`; without them r;
* `--num_learning_rate_warmup_epochs w` (with one of the two above): the
  first rate times s / int(w * E / B) while s is below int(w * E / B);
* neither: the model's default. For resnet50, resnet101 and resnet152
  tf_cnn_benchmarks' ImageNet ResNet schedule: a base rate (0.128, or
  `--resnet_base_lr`; divided by the towers with replicated, which sums the
  towers' gradients) times B / 256, warmed up over 5 ImageNet epochs and
  multiplied by 0.1 at epochs 30, 60, 80 and 90 (epochs of ImageNet's
  1,281,167 images, whatever the data). For resnet20 on cifar10
  tf_cnn_benchmarks' CIFAR-10 ResNet schedule: 0.1, then 0.01, 0.001 and
  0.0002 after step int(50,000 / B) x 82, 123 and 300. Every other model:
  its fixed rate.

E is the training split of `--data_name` (`datasets.get_dataset(name,
data_dir).num_examples('train')`), or ImageNet's 1,281,167 images with
synthetic data or ImageNet files, as tf_cnn_benchmarks counts them.

A constant rate reaches the optimizer as a Python float (the graph holds no
schedule op); a schedule as a float32 tensor of the global step.
"""

from variable_mgr import errors
from variable_mgr.benchmark.flags import lr_schedule
from variable_mgr.compat import tf

# tf_cnn_benchmarks' ImageNet ResNet default (models/resnet_model.py).
RESNET_BASE_LR = 0.128
RESNET_BASE_BATCH = 256
RESNET_WARMUP_EPOCHS = 5
RESNET_DECAY_EPOCHS = (30, 60, 80, 90)
RESNET_DECAYS = (1, 0.1, 0.01, 0.001, 0.0001)


class LearningRateError(errors.VariableMgrError):
  """A learning-rate schedule that cannot run at this global batch."""


def uses_model_schedule(config):
  """True when the rate is the model's tf_cnn_benchmarks schedule: the
  ImageNet ResNet one scaled with the global batch (resnet50/101/152), or
  the CIFAR-10 ResNet one (resnet20 on cifar10), without a rate flag."""
  return (lr_schedule.has_default_schedule(config.model, config.data_name)
          and config.learning_rate is None and
          not config.piecewise_learning_rate_schedule)


def _cifar_schedule(config):
  return (config.model, config.data_name) == lr_schedule.CIFAR_RESNET_DEFAULT


def _cifar_boundaries(global_batch):
  """tf_cnn_benchmarks' boundaries: whole batches of an epoch, times the
  epochs."""
  batches_per_epoch = int(lr_schedule.EXAMPLES_PER_EPOCH['cifar10'] //
                          global_batch)
  return [batches_per_epoch * e for e in lr_schedule.CIFAR_RESNET_EPOCHS]


def examples_per_epoch(config):
  """The training examples of an epoch of `config`'s data (ImageNet's
  1,281,167 for ImageNet and synthetic `small` data, CIFAR-10's 50,000, its
  files or synthetic, as tf_cnn_benchmarks)."""
  if config.synthetic:
    return lr_schedule.EXAMPLES_PER_EPOCH.get(
        config.data_name, lr_schedule.IMAGENET_NUM_TRAIN_IMAGES)
  # Imported here: the constant-rate path needs no input pipeline.
  from variable_mgr.benchmark.data import datasets  # pylint: disable=g-import-not-at-top
  count = datasets.get_dataset(config.data_name,
                               config.data_dir).num_examples('train')
  return lr_schedule.IMAGENET_NUM_TRAIN_IMAGES if count is None else count


def _base_rate(config, global_batch):
  """The scaled base rate of the ResNet default schedule."""
  base = RESNET_BASE_LR if config.resnet_base_lr is None else (
      config.resnet_base_lr)
  if global_batch is None:
    return base
  if config.variable_update == 'replicated':
    base /= config.num_gpus
  return base * global_batch / float(RESNET_BASE_BATCH)


def _steps(config, global_batch):
  try:
    return lr_schedule.learning_rate_steps(config, global_batch,
                                           examples_per_epoch(config))
  except lr_schedule.ScheduleError as e:
    raise LearningRateError(str(e))


def _needs_batch(config):
  return bool(config.piecewise_learning_rate_schedule or
              (config.num_epochs_per_decay > 0 and
               config.learning_rate_decay_factor > 0) or
              config.num_learning_rate_warmup_epochs > 0)


def _scheduled(config):
  """True when the rate, with a global batch, is a schedule of the step."""
  return _needs_batch(config) or uses_model_schedule(config)


def reads_step(config):
  """True when a step's update reads the global step: a rate schedule
  (with a global batch, as a cluster worker builds it) or adam's bias
  correction (StepAdamOptimizer)."""
  return _scheduled(config) or config.optimizer == 'adam'


def learning_rate(config, global_step, global_batch):
  """The learning rate of `config` at `global_step`: a Python float when it
  is constant, else a float32 tensor (see the module's docstring).

  Args:
    config: a resolved BenchmarkConfig.
    global_step: the int64 step variable (or tensor) the schedule reads;
      None only for a constant rate.
    global_batch: images a step over every tower of every worker; None: no
      scaling (the base rate of the ResNet default, unscheduled).

  Raises:
    LearningRateError: a schedule without a global batch or global step,
      or whose steps collapse at this global batch.
  """
  if global_batch is None:
    if _needs_batch(config):
      raise LearningRateError(
          'a learning-rate schedule counts epochs of the global batch: pass '
          'global_batch to make_optimizer')
    if uses_model_schedule(config):
      return (lr_schedule.CIFAR_RESNET_RATES[0] if _cifar_schedule(config)
              else _base_rate(config, None))
    return config.learning_rate
  if not _scheduled(config):
    return config.learning_rate
  if global_step is None:
    raise LearningRateError(
        'a learning-rate schedule reads the global step: pass global_step '
        'to make_optimizer')
  with tf.name_scope('learning_rate'):
    if uses_model_schedule(config) and _cifar_schedule(config):
      return tf.cast(tf.train.piecewise_constant(
          global_step, _cifar_boundaries(global_batch),
          list(lr_schedule.CIFAR_RESNET_RATES)), tf.float32)
    if uses_model_schedule(config):
      return _resnet_schedule(config, global_step, global_batch)
    steps = _steps(config, global_batch)
    if config.piecewise_learning_rate_schedule:
      rates, _ = lr_schedule.parse_piecewise_schedule(
          config.piecewise_learning_rate_schedule)
      rate = tf.train.piecewise_constant(global_step, steps['boundaries'],
                                         rates, name='piecewise_learning_rate')
      initial = rates[0]
    else:
      initial = rate = config.learning_rate
      if steps['decay_steps']:
        rate = tf.train.exponential_decay(
            config.learning_rate, global_step, steps['decay_steps'],
            config.learning_rate_decay_factor, staircase=True)
        if config.minimum_learning_rate:
          rate = tf.maximum(rate, config.minimum_learning_rate)
    if steps['warmup_steps']:
      warmup_steps = steps['warmup_steps']
      warmup = initial * tf.cast(global_step, tf.float32) / float(
          warmup_steps)
      after = tf.cast(rate, tf.float32)
      rate = tf.cond(global_step < warmup_steps, lambda: warmup,
                     lambda: after)
    return tf.cast(rate, tf.float32)


def _resnet_schedule(config, global_step, global_batch):
  """tf_cnn_benchmarks' ResnetModel.get_learning_rate."""
  scaled = _base_rate(config, global_batch)
  batches_per_epoch = (lr_schedule.IMAGENET_NUM_TRAIN_IMAGES /
                       float(global_batch))
  boundaries = [int(batches_per_epoch * e) for e in RESNET_DECAY_EPOCHS]
  rate = tf.train.piecewise_constant(
      global_step, boundaries, [scaled * d for d in RESNET_DECAYS])
  warmup_steps = int(batches_per_epoch * RESNET_WARMUP_EPOCHS)
  warmup = scaled * tf.cast(global_step, tf.float32) / float(warmup_steps)
  return tf.cond(global_step < warmup_steps, lambda: warmup,
                 lambda: tf.cast(rate, tf.float32))


def learning_rate_tensor(config, global_step, global_batch):
  """`learning_rate` as a float32 tensor (a constant one for a constant
  rate), e.g. for a summary."""
  rate = learning_rate(config, global_step, global_batch)
  return tf.convert_to_tensor(rate, tf.float32) if isinstance(
      rate, float) else rate


def make_optimizer(config, global_step=None, global_batch=None,
                   use_locking=False):
  """The optimizer `config` asks for, at its learning rate.

  Args:
    config: a resolved BenchmarkConfig.
    global_step: the step variable a learning-rate schedule reads.
    global_batch: images a step over every tower of every worker.
    use_locking: update each variable under its lock: needed where several
      workers update the same variables (see
      `variable_mgr.strategies.parameter_server.check_locking`).

  Raises:
    LearningRateError: see `learning_rate`.
  """
  rate = learning_rate(config, global_step, global_batch)
  if config.optimizer == 'momentum':
    # tf_cnn_benchmarks' momentum is Nesterov's.
    return tf.train.MomentumOptimizer(rate, config.momentum,
                                      use_locking=use_locking,
                                      use_nesterov=True)
  if config.optimizer == 'rmsprop':
    return tf.train.RMSPropOptimizer(rate, config.rmsprop_decay,
                                     momentum=config.rmsprop_momentum,
                                     epsilon=config.rmsprop_epsilon,
                                     use_locking=use_locking)
  if config.optimizer == 'adam':
    if global_step is None:
      return tf.train.AdamOptimizer(rate, config.adam_beta1,
                                    config.adam_beta2, config.adam_epsilon,
                                    use_locking=use_locking)
    return StepAdamOptimizer(global_step, rate, config.adam_beta1,
                             config.adam_beta2, config.adam_epsilon,
                             use_locking=use_locking)
  return tf.train.GradientDescentOptimizer(rate, use_locking=use_locking)


class StepAdamOptimizer(tf.train.AdamOptimizer):
  """tf.train's Adam whose bias correction counts the global step.

  tf.train.AdamOptimizer keeps beta1^t and beta2^t in two variables that
  each `apply_gradients` call multiplies by beta1 and beta2. The harness
  calls it once per apply device, so with several (replicated and
  independent: one a tower) t would advance by the tower count a step.
  Here beta^t is beta ** (global_step + 1), read before the step's
  increment: one step a step, on every device, whatever the number of
  calls (the same values as tf.train's with one call a step).
  """

  def __init__(self, global_step, learning_rate, beta1, beta2, epsilon,
               use_locking=False):
    super(StepAdamOptimizer, self).__init__(learning_rate, beta1, beta2,
                                            epsilon, use_locking=use_locking)
    self._step = global_step

  def _create_slots(self, var_list):
    for v in var_list:
      self._zeros_slot(v, 'm', self._name)
      self._zeros_slot(v, 'v', self._name)

  def _get_beta_accumulators(self):
    t = tf.cast(self._step, tf.float32) + 1.0
    return (tf.pow(tf.cast(self._beta1, tf.float32), t),
            tf.pow(tf.cast(self._beta2, tf.float32), t))

  def _finish(self, update_ops, name_scope):
    return tf.group(*update_ops, name=name_scope)


def describe_optimizer(config):
  """'sgd', 'momentum (momentum 0.9)', 'rmsprop (decay 0.9, momentum 0.9,
  epsilon 1)', 'adam (beta1 0.9, beta2 0.999, epsilon 1e-08)'."""
  if config.optimizer == 'momentum':
    return 'momentum (momentum %g)' % config.momentum
  if config.optimizer == 'rmsprop':
    return 'rmsprop (decay %g, momentum %g, epsilon %g)' % (
        config.rmsprop_decay, config.rmsprop_momentum, config.rmsprop_epsilon)
  if config.optimizer == 'adam':
    return 'adam (beta1 %g, beta2 %g, epsilon %g)' % (
        config.adam_beta1, config.adam_beta2, config.adam_epsilon)
  return config.optimizer


def describe_learning_rate(config, global_batch):
  """The learning rate in one line, e.g. 'learning rate 0.1, x0.5 every 2
  epochs (312 steps), at least 0.001, warmup 1 epoch (156 steps)'."""
  if global_batch is None or not (_needs_batch(config) or
                                  uses_model_schedule(config)):
    return 'learning rate %g' % learning_rate(config, None, global_batch)
  if uses_model_schedule(config) and _cifar_schedule(config):
    rates = lr_schedule.CIFAR_RESNET_RATES
    return 'learning rate %s\'s cifar10 default: %g, %s' % (
        config.model, rates[0], ', '.join(
            '%g from epoch %d (step %d)' % (r, e, b + 1) for r, e, b in zip(
                rates[1:], lr_schedule.CIFAR_RESNET_EPOCHS,
                _cifar_boundaries(global_batch))))
  if uses_model_schedule(config):
    base = RESNET_BASE_LR if config.resnet_base_lr is None else (
        config.resnet_base_lr)
    batches_per_epoch = (lr_schedule.IMAGENET_NUM_TRAIN_IMAGES /
                       float(global_batch))
    return ('learning rate %s\'s default: %g (%g%s x %d / %d), warmup %d '
            'epochs (%d steps), x0.1 at epochs %s' % (
                config.model, _base_rate(config, global_batch), base,
                ' / %d towers' % config.num_gpus
                if config.variable_update == 'replicated' else '',
                global_batch, RESNET_BASE_BATCH, RESNET_WARMUP_EPOCHS,
                int(batches_per_epoch * RESNET_WARMUP_EPOCHS),
                ', '.join(str(e) for e in RESNET_DECAY_EPOCHS)))
  steps = _steps(config, global_batch)
  if config.piecewise_learning_rate_schedule:
    rates, epochs = lr_schedule.parse_piecewise_schedule(
        config.piecewise_learning_rate_schedule)
    parts = ['learning rate %g' % rates[0]] + [
        '%g from epoch %d (step %d)' % (r, e, b + 1)
        for r, e, b in zip(rates[1:], epochs, steps['boundaries'])]
  else:
    parts = ['learning rate %g' % config.learning_rate]
    if steps['decay_steps']:
      parts.append('x%g every %g epochs (%d steps)' % (
          config.learning_rate_decay_factor, config.num_epochs_per_decay,
          steps['decay_steps']))
      if config.minimum_learning_rate:
        parts.append('at least %g' % config.minimum_learning_rate)
  if steps['warmup_steps']:
    parts.append('warmup %g epochs (%d steps)' % (
        config.num_learning_rate_warmup_epochs, steps['warmup_steps']))
  return ', '.join(parts)


def describe(config, global_batch):
  """The header's optimizer line: optimizer; learning rate."""
  return '%s; %s' % (describe_optimizer(config),
                     describe_learning_rate(config, global_batch))
