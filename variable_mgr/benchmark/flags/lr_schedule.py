"""The arithmetic of the learning-rate schedule flags, as tf_cnn_benchmarks
does it: pure Python, no TensorFlow.

The flag checks (`rate_checks`, at parse time) and `training.optimizers` (when
the graph is built) both call `learning_rate_steps`, so a schedule that
collapses at the run's global batch is refused with the same message,
before anything is built.
"""

import math

from variable_mgr.benchmark.flags import as_typed

IMAGENET_NUM_TRAIN_IMAGES = 1281167
# The training examples of an epoch, a data set (--data_name, its files or
# synthetic data of its shapes, as tf_cnn_benchmarks counts them; None and
# `small`: the benchmark's own synthetic data, which counts ImageNet's
# epoch).
EXAMPLES_PER_EPOCH = {None: IMAGENET_NUM_TRAIN_IMAGES,
                      'small': IMAGENET_NUM_TRAIN_IMAGES,
                      'imagenet': IMAGENET_NUM_TRAIN_IMAGES,
                      'cifar10': 50000, 'digits': 1497}
# The models whose default learning rate is tf_cnn_benchmarks' ImageNet
# ResNet schedule, scaled with the global batch (see optimizers).
SCALED_RATE_MODELS = ('resnet50', 'resnet101', 'resnet152')
# (model, data set) whose default learning rate is tf_cnn_benchmarks'
# CIFAR-10 ResNet schedule (ResnetCifar10Model.get_learning_rate): its
# rates, and the epochs from which the next one applies.
CIFAR_RESNET_DEFAULT = ('resnet20', 'cifar10')
CIFAR_RESNET_RATES = (0.1, 0.01, 0.001, 0.0002)
CIFAR_RESNET_EPOCHS = (82, 123, 300)


def has_default_schedule(model, data_name):
  """True when `model` on `data_name` trains at a schedule of its own when
  no rate flag is given: the ImageNet ResNet schedule (SCALED_RATE_MODELS)
  or the CIFAR-10 ResNet one."""
  return (model in SCALED_RATE_MODELS or
          (model, data_name) == CIFAR_RESNET_DEFAULT)

SCHEDULE_FIX = ('pass e.g. {flag}="0.3;10;0.2;25;0.1" (0.3 until epoch 10, 0.2 '
                'until 25, then 0.1)')


class ScheduleError(ValueError):
  """A schedule that is malformed, or whose steps collapse at a global
  batch."""


def parse_piecewise_schedule(text, flag='--piecewise_learning_rate_schedule'):
  """tf_cnn_benchmarks' "lr0;epoch1;lr1;...;epochN;lrN": the rates
  [lr0, ..., lrN] (positive) and the epochs [epoch1, ..., epochN] (whole
  numbers, above 0, increasing).

  Raises:
    ScheduleError: saying which piece is wrong and how, the fix naming
      `flag`.
  """
  fix = SCHEDULE_FIX.replace('{flag}', flag)
  pieces = [p.strip() for p in str(text).split(';')]
  if len(pieces) % 2 == 0:
    raise ScheduleError(
        '%d pieces: a schedule is rates and epochs in turn, starting and '
        'ending with a rate (an odd number of pieces); %s' % (
            len(pieces), fix))
  rates, epochs = [], []
  for i, piece in enumerate(pieces):
    if i % 2 == 0:
      try:
        rate = float(piece)
      except ValueError:
        rate = None
      if rate is None or not math.isfinite(rate) or rate <= 0:
        raise ScheduleError('the rate %r is not a positive number; %s' % (
            piece, fix))
      rates.append(rate)
    else:
      try:
        epoch = int(piece)
      except ValueError:
        raise ScheduleError(
            'the epoch %r is not a whole number (tf_cnn_benchmarks reads '
            'whole epochs); %s' % (piece, fix))
      if epoch < 1 or (epochs and epoch <= epochs[-1]):
        raise ScheduleError(
            'the epoch %d %s: the epochs where the rate changes are above 0 '
            'and increasing; %s' % (
                epoch, 'is not above 0' if epoch < 1 else
                'does not follow %d' % epochs[-1], fix))
      epochs.append(epoch)
  return rates, epochs


def learning_rate_steps(config, global_batch, examples_per_epoch):
  """The steps of the learning-rate schedule `config` asks for, as
  tf_cnn_benchmarks computes them (an epoch is examples_per_epoch /
  global_batch steps, not rounded).

  Args:
    config: the parsed flags or a BenchmarkConfig.
    global_batch: images a step over every tower of every worker.
    examples_per_epoch: the training examples of an epoch.

  Returns:
    {'boundaries': the last step of each piece of
    --piecewise_learning_rate_schedule, 'decay_steps': steps between two
    decays, 'warmup_steps': steps of the warmup}; a key is None when its
    flag is off.

  Raises:
    ScheduleError: a schedule whose steps collapse at this global batch (a
      decay every 0 steps, a warmup of 0 steps, two rate changes at one
      step), naming the flag as typed, the batch and the fix.
  """
  batches_per_epoch = float(examples_per_epoch) / global_batch
  where = ('at a global batch of %d an epoch of %d examples is %.4g steps' %
           (global_batch, examples_per_epoch, batches_per_epoch))
  steps = dict(boundaries=None, decay_steps=None, warmup_steps=None)
  schedule = config.piecewise_learning_rate_schedule
  if schedule:
    _, epochs = parse_piecewise_schedule(schedule)
    boundaries = [int(e * batches_per_epoch) - 1 for e in epochs]
    for e, b, previous in zip(epochs, boundaries, [-1] + boundaries):
      if b <= previous:
        raise ScheduleError(
            '%s: %s, so the rate would change at epoch %d on a step where it '
            'changed already (or before the first); use fewer, later epochs '
            'or a smaller batch' % (
                as_typed.given(config, 'piecewise_learning_rate_schedule'),
                where, e))
    steps['boundaries'] = boundaries
  if config.num_epochs_per_decay > 0 and config.learning_rate_decay_factor > 0:
    decay_steps = int(batches_per_epoch * config.num_epochs_per_decay)
    if decay_steps < 1:
      raise ScheduleError(
          '%s: %s, so the rate would decay every 0 steps; pass '
          '--num_epochs_per_decay=%.3g or more, or a smaller batch' % (
              as_typed.given(config, 'num_epochs_per_decay'), where,
              1.0 / batches_per_epoch))
    steps['decay_steps'] = decay_steps
  if config.num_learning_rate_warmup_epochs > 0:
    warmup_steps = int(batches_per_epoch *
                       config.num_learning_rate_warmup_epochs)
    if warmup_steps < 1:
      raise ScheduleError(
          '%s: %s, so the warmup would last 0 steps; pass '
          '--num_learning_rate_warmup_epochs=%.3g or more, or drop it' % (
              as_typed.given(config, 'num_learning_rate_warmup_epochs'),
              where, 1.0 / batches_per_epoch))
    steps['warmup_steps'] = warmup_steps
  return steps
