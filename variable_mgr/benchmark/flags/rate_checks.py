"""Cross-checks of the optimizer, learning-rate and epoch flags, at the
global batch the flags give (imports no TensorFlow).

The schedule's steps are `lr_schedule.learning_rate_steps`', the same
arithmetic that `optimizers` builds the graph from, so a schedule that
would collapse is refused here first, with the same message.
"""

import json
import math

from variable_mgr.benchmark.flags import lr_schedule
from variable_mgr.benchmark.flags.as_typed import flag_list
from variable_mgr.benchmark.flags.as_typed import given
from variable_mgr.benchmark.flags.as_typed import typed_name
from variable_mgr.benchmark.flags.value_types import UsageError

# Each model's default batch a tower, written out so that parsing imports
# no `models.catalog` (a test checks that they agree).
MODEL_BATCH_SIZES = {
    'trivial': 32, 'lenet': 32, 'resnet20': 32, 'resnet50': 32,
    'alexnet': 512, 'vgg16': 64, 'inception3': 32, 'googlenet': 32,
    'resnet101': 64, 'resnet152': 64}
# tf_cnn_benchmarks' batch sizes of a data set's version of a model, where
# they differ from MODEL_BATCH_SIZES (models.CIFAR10_MODELS).
DATA_SET_BATCH_SIZES = {('imagenet', 'resnet50'): 64,
                        ('imagenet', 'resnet101'): 32,
                        ('imagenet', 'resnet152'): 32,
                        ('cifar10', 'resnet20'): 128,
                        ('cifar10', 'alexnet'): 128}
# Flags read by one optimizer only.
OPTIMIZER_FLAGS = (('momentum', ('momentum',)),
                   ('rmsprop', ('rmsprop_decay', 'rmsprop_momentum',
                                'rmsprop_epsilon')),
                   ('adam', ('adam_beta1', 'adam_beta2', 'adam_epsilon')))


def examples_per_epoch(args):
  return lr_schedule.EXAMPLES_PER_EPOCH.get(
      args.data_name, lr_schedule.IMAGENET_NUM_TRAIN_IMAGES)


def global_batches(args, environ):
  """The global batches of the runs `args` ask for, when the flags say
  them (the cluster's workers from --num_workers, --worker_hosts or
  TF_CONFIG), smallest first."""
  per_tower = args.batch_size or DATA_SET_BATCH_SIZES.get(
      (args.data_name, args.model)) or MODEL_BATCH_SIZES.get(args.model, 32)
  towers = list(args.compare_towers) if args.compare else [args.num_gpus]
  workers = 1
  if args.launch_local_cluster:
    workers = args.num_workers
  elif args.job_name and args.worker_hosts:
    workers = len([h for h in args.worker_hosts.split(',') if h.strip()])
  elif environ.get('TF_CONFIG', '').strip():
    try:
      cluster = json.loads(environ['TF_CONFIG']).get('cluster', {})
      workers = len(cluster.get('worker', [])) + len(cluster.get('chief', []))
    except (ValueError, AttributeError, TypeError):
      workers = 1
  return sorted(set(per_tower * t * max(workers, 1) for t in towers))


def _check_optimizer(args, typed):
  for optimizer, dests in OPTIMIZER_FLAGS:
    typed_here = [d for d in dests if d in typed]
    if typed_here and args.optimizer != optimizer:
      raise UsageError(
          '%s with %s: --%s is read by --optimizer=%s only; pass '
          '--optimizer=%s or drop %s' % (
              given(args, typed_here[0]), given(args, 'optimizer'),
              typed_here[0], optimizer, optimizer,
              flag_list(typed_here, args)))


def _check_schedule(args):
  rate = args.learning_rate
  if args.piecewise_learning_rate_schedule:
    others = [d for d in ('learning_rate', 'num_epochs_per_decay',
                          'learning_rate_decay_factor',
                          'minimum_learning_rate', 'resnet_base_lr')
              if getattr(args, d)]
    if others:
      raise UsageError(
          '%s with %s: the schedule gives every rate (its first is the '
          'initial one), and tf_cnn_benchmarks takes no other rate flag '
          'beside it; drop %s' % (
              given(args, 'piecewise_learning_rate_schedule'),
              given(args, others[0]), flag_list(others, args)))
  if args.resnet_base_lr is not None:
    if args.model not in lr_schedule.SCALED_RATE_MODELS:
      raise UsageError(
          '%s with %s: the base rate is that of the default schedule of %s '
          'only; drop it, or pass --init_learning_rate for this model' % (
              given(args, 'resnet_base_lr'), given(args, 'model'),
              ', '.join(lr_schedule.SCALED_RATE_MODELS)))
    if rate is not None:
      raise UsageError(
          '%s with %s: the initial rate replaces the default schedule the '
          'base rate scales; drop one of them' % (
              given(args, 'resnet_base_lr'), given(args, 'learning_rate')))


def _check_decay(args):
  rate = args.learning_rate
  decay = args.num_epochs_per_decay > 0 or args.learning_rate_decay_factor > 0
  if decay:
    present, missing = (('num_epochs_per_decay', 'learning_rate_decay_factor')
                      if args.num_epochs_per_decay > 0 else
                      ('learning_rate_decay_factor', 'num_epochs_per_decay'))
    if not getattr(args, missing) > 0:
      raise UsageError(
          '%s without --%s: the rate decays by --learning_rate_decay_factor '
          'every --num_epochs_per_decay epochs, and needs both; add --%s '
          '(e.g. %s) or drop %s' % (
              given(args, present), missing, missing,
              '--num_epochs_per_decay=2' if missing == 'num_epochs_per_decay'
              else '--learning_rate_decay_factor=0.94',
              typed_name(args, present)))
    if rate is None:
      raise UsageError(
          '%s and %s without --init_learning_rate: the decay starts from the '
          'initial rate; add --init_learning_rate (e.g. '
          '--init_learning_rate=0.1)' % (
              given(args, 'num_epochs_per_decay'),
              given(args, 'learning_rate_decay_factor')))
  if args.minimum_learning_rate > 0:
    if not decay:
      raise UsageError(
          '%s without a decay: the minimum bounds the decay of '
          '--num_epochs_per_decay and --learning_rate_decay_factor; add them '
          '(and --init_learning_rate) or drop %s' % (
              given(args, 'minimum_learning_rate'),
              typed_name(args, 'minimum_learning_rate')))
    if args.minimum_learning_rate > rate:
      raise UsageError(
          '%s is above %s: the rate would never decay; pass a minimum below '
          'the initial rate' % (given(args, 'minimum_learning_rate'),
                                given(args, 'learning_rate')))
  if args.num_learning_rate_warmup_epochs > 0 and rate is None and (
      not args.piecewise_learning_rate_schedule):
    raise UsageError(
        '%s without --init_learning_rate or '
        '--piecewise_learning_rate_schedule: the warmup rises to the initial '
        'rate of one of them (the model\'s default rate has no warmup flag); '
        'add one, or drop %s' % (
            given(args, 'num_learning_rate_warmup_epochs'),
            typed_name(args, 'num_learning_rate_warmup_epochs')))


def check_learning_rate(args, typed, batches):
  """Refuses optimizer and learning-rate flags that do not go together,
  and a schedule whose steps collapse at a global batch of the run
  (`batches`: `global_batches`' list)."""
  _check_optimizer(args, typed)
  _check_schedule(args)
  _check_decay(args)
  for global_batch in batches:
    try:
      lr_schedule.learning_rate_steps(args, global_batch,
                                      examples_per_epoch(args))
    except lr_schedule.ScheduleError as e:
      raise UsageError(str(e))


def batches_of_epochs(args, typed, batches):
  """--num_epochs as tf_cnn_benchmarks reads it: sets --num_batches to
  ceil(epochs x examples of the training split / global batch), the global
  batch over every tower of every worker (`batches`: `global_batches`'
  list, one batch where --num_epochs is allowed).

  Raises:
    UsageError: --num_epochs with --num_batches, --compare or --eval.
  """
  if args.num_epochs is None:
    return
  epochs = given(args, 'num_epochs')
  if 'num_batches' in typed:
    raise UsageError(
        '%s with %s: at most one of them says how long to train (as in '
        'tf_cnn_benchmarks); drop one' % (epochs, given(args, 'num_batches')))
  if args.compare:
    raise UsageError(
        '%s with --compare: the sweep\'s tower counts make different global '
        'batches, so an epoch is a different number of batches in each run; '
        'pass --num_batches instead' % epochs)
  if args.eval:
    raise UsageError(
        '%s with --eval: evaluation reads the whole eval split (or '
        '--num_eval_batches); drop %s' % (epochs,
                                          typed_name(args, 'num_epochs')))
  global_batch = batches[0]
  args.num_batches = int(math.ceil(args.num_epochs * examples_per_epoch(args)
                                   / float(global_batch)))
