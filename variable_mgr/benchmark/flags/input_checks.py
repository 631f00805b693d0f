"""Cross-checks of the input, evaluation, session and checkpoint flags.

Called by `command_line` after the launch-mode and learning-rate checks; imports
no TensorFlow.

Decisions where tf_cnn_benchmarks differs or is silent:

* No `--data_name` and no `--data_dir`: synthetic data of imagenet's
  shapes (`args.data_name` is set to imagenet), as tf_cnn_benchmarks;
  `--data_name=imagenet|cifar10` without `--data_dir` is synthetic data of
  that set's shapes, as there. `small` (synthetic data of the benchmark's
  own small shapes) is this benchmark's.
* `--data_dir` without `--data_name`: the name is guessed from the path as
  tf_cnn_benchmarks guesses it (the first of imagenet, cifar10 that the
  path contains; `args.data_name` is set to it); a path that names neither
  is refused. `digits` and `small` read no directory, so `--data_dir`
  beside them is refused rather than ignored.
* `--data_format=NCHW`: refused by its type (`table`). The models
  are written NHWC, and tf_cnn_benchmarks itself refuses NCHW with
  `--device=cpu`.
* `--eval` and `--eval_during_training_every_n_steps` need real data:
  synthetic labels are random, so their accuracy would say nothing.
* A flag that only modifies another (`--distortions`, `--num_eval_batches`,
  `--save_summaries_steps`, `--summary_verbosity`, `--save_model_secs`,
  `--max_ckpts_to_keep`) is refused, when typed, without the flag it
  modifies, rather than ignored.
* Cluster runs: evaluation (`--eval`, `--eval_during_training_every_n_
  steps`) and `--forward_only` run on one machine only
  (CLUSTER_UNSUPPORTED); evaluate a cluster's checkpoint with `--eval` on
  one machine afterwards.
* `--eval` refuses the training flags it would not use (EVAL_IGNORED),
  but takes `--print_training_accuracy` as tf_cnn_benchmarks does: an
  evaluation prints its accuracy anyway, so the flag changes nothing.
* `--num_eval_batches` defaults to `--num_batches`, as in
  tf_cnn_benchmarks (filled in by `command_line` after these checks); the
  validation split is read once at most.
* `--compare` (a sweep of training runs that prints only its table):
  refuses `--eval`, `--eval_during_training_every_n_steps`,
  `--forward_only` and `--print_training_accuracy` (COMPARE_UNSUPPORTED).
"""

import os

from variable_mgr.benchmark.flags.as_typed import flag_list
from variable_mgr.benchmark.flags.as_typed import value
from variable_mgr.benchmark.flags.table import DEFAULT_DATA_NAME
from variable_mgr.benchmark.flags.table import FILE_DATA_NAMES
from variable_mgr.benchmark.flags.table import is_synthetic
from variable_mgr.benchmark.flags.value_types import UsageError

# (data set, what a --data_dir path must contain for the guess), in
# tf_cnn_benchmarks' order.
GUESSED_NAMES = ('imagenet', 'cifar10')
# Data sets without training distortions.
UNDISTORTED = ('digits',)
# Flags a cluster run refuses (they run on one machine only).
CLUSTER_UNSUPPORTED = ('eval', 'eval_during_training_every_n_steps',
                       'forward_only')
# Training flags --eval refuses rather than ignores.
EVAL_IGNORED = ('save_model_secs', 'save_model_steps', 'max_ckpts_to_keep',
                'summary_dir', 'trace_file', 'measure_traffic',
                'gradient_clip')
# Flags the --compare sweep refuses (it prints no step line; --eval is
# refused with a message of its own).
COMPARE_UNSUPPORTED = ('eval_during_training_every_n_steps', 'forward_only',
                       'print_training_accuracy')


def fill_data_name(args):
  """Sets `args.data_name` when the command line names none: the data set
  `--data_dir` implies, or imagenet (synthetic) without `--data_dir`, as
  tf_cnn_benchmarks. Called before the other checks, which read it (a
  model's batch size depends on the data set).

  Raises:
    UsageError: a `--data_dir` that names no data set.
  """
  if args.data_dir is not None and not args.data_name:
    guessed = [n for n in GUESSED_NAMES if n in args.data_dir]
    if not guessed:
      raise UsageError(
          '--data_dir=%s without --data_name: the data set cannot be told '
          'from the path (it names neither %s); add --data_name=imagenet or '
          '--data_name=cifar10' % (args.data_dir, ' nor '.join(
              GUESSED_NAMES)))
    args.data_name = guessed[0]
  if args.data_name is None and args.data_dir is None:
    args.data_name = DEFAULT_DATA_NAME


def check(args, typed, cluster):
  """Refuses a combination of the data, eval and checkpoint flags that
  cannot run (after `fill_data_name`).

  Args:
    args: the parsed flags.
    typed: the destinations of the flags the command line gives.
    cluster: the run is a cluster (a task or --launch_local_cluster).

  Raises:
    UsageError: naming the flags as typed, the rule and the fix.
  """
  error = UsageError
  _check_data(args, typed, error)
  if cluster:
    refused = [f for f in CLUSTER_UNSUPPORTED
               if f in typed and getattr(args, f)]
    if refused:
      raise error(
          '%s in a cluster run: evaluation and forward-only runs are for '
          'one machine only; drop %s, and evaluate '
          'the cluster\'s checkpoint afterwards on one machine with --eval '
          '--train_dir=DIR --data_name=...' % (
              value(args, refused[0]), flag_list(refused, args)))
  if args.compare:
    refused = [f for f in COMPARE_UNSUPPORTED
               if f in typed and getattr(args, f)]
    if refused:
      raise error(
          '%s with --compare: the sweep times training steps and prints '
          'only its table; drop %s (or run one configuration without '
          '--compare)' % (value(args, refused[0]),
                          flag_list(refused, args)))
  _check_eval(args, typed, error)
  _check_forward_only(args, typed, error)
  _check_modifiers(args, typed, error)


def _check_data(args, typed, error):
  if args.data_name in FILE_DATA_NAMES:
    if args.data_dir is not None and not os.path.isdir(args.data_dir):
      raise error(
          '--data_dir=%s: %s; pass the directory that holds --data_name=%s\'s '
          'files' % (args.data_dir, 'not a directory' if os.path.exists(
              args.data_dir) else 'no such directory', args.data_name))
  elif args.data_dir is not None:
    raise error(
        '--data_dir=%s with --data_name=%s: %s reads no directory; drop '
        '--data_dir' % (args.data_dir, args.data_name, (
            'digits is bundled with scikit-learn and'
            if args.data_name == 'digits' else 'small is synthetic data and')))
  if 'distortions' in typed and args.distortions:
    if is_synthetic(args.data_name, args.data_dir):
      raise error(
          '--distortions without --data_dir: synthetic images are not '
          'distorted; add --data_dir (the files of --data_name=imagenet or '
          'cifar10) or drop --distortions')
    if args.data_name in UNDISTORTED:
      raise error(
          '--distortions with --data_name=%s: %s has no training '
          'distortions; drop --distortions (cifar10 and imagenet have them)'
          % (args.data_name, args.data_name))


def _check_eval(args, typed, error):
  if args.eval:
    if args.compare:
      raise error(
          '--eval with --compare: --compare sweeps training runs and --eval '
          'evaluates one checkpoint; drop --compare (run --eval '
          '--train_dir=DIR on its own)')
    if not args.train_dir:
      raise error(
          '--eval without --train_dir: evaluation restores the latest '
          'checkpoint of --train_dir; add --train_dir=DIR, the directory a '
          'training run saved into')
    if not os.path.isfile(os.path.join(args.train_dir, 'checkpoint')):
      raise error(
          '--eval --train_dir=%s: the directory holds no checkpoint (no '
          '`checkpoint` file); train into it first (the same command '
          'without --eval), or pass the --train_dir a training run saved '
          'into' % args.train_dir)
    if args.eval_during_training_every_n_steps:
      raise error(
          '--eval with %s: --eval evaluates a checkpoint without training; '
          'drop one of them' % value(args,
                                     'eval_during_training_every_n_steps'))
    ignored = [f for f in EVAL_IGNORED if f in typed and getattr(args, f)]
    if ignored:
      raise error(
          '--eval with %s: an evaluation runs no training step, so it '
          'would not use it; drop %s' % (
              value(args, ignored[0]), flag_list(ignored, args)))
  for dest in ('eval', 'eval_during_training_every_n_steps'):
    if getattr(args, dest) and is_synthetic(args.data_name, args.data_dir):
      raise error(
          '%s on synthetic data (--data_name=%s without --data_dir): '
          'evaluation needs real data (synthetic labels are random, so '
          'accuracy says nothing); add --data_name=digits (no download), or '
          'cifar10 or imagenet with --data_dir' % (
              '--eval' if dest == 'eval' else value(args, dest),
              args.data_name))
  if args.num_eval_batches is not None and not (
      args.eval or args.eval_during_training_every_n_steps):
    raise error(
        '%s without --eval: it limits the evaluation\'s steps; add --eval '
        '(or --eval_during_training_every_n_steps) or drop the flag'
        % value(args, 'num_eval_batches'))


def _check_forward_only(args, typed, error):
  del typed
  if not args.forward_only:
    return
  clashes = []
  # --eval reads its checkpoints from --train_dir, so --train_dir names
  # that clash too.
  if args.train_dir:
    clashes.append(value(args, 'train_dir'))
  if args.backward_passes_per_step > 1:
    clashes.append(value(args, 'backward_passes_per_step'))
  if args.eval_during_training_every_n_steps:
    clashes.append(value(args, 'eval_during_training_every_n_steps'))
  if args.gradient_clip is not None:
    clashes.append(value(args, 'gradient_clip'))
  if clashes:
    raise error(
        '--forward_only with %s: a forward-only run times the forward pass '
        'alone (no gradients, no updates, no checkpoint; its step lines '
        'have the batch\'s accuracy already); drop %s or --forward_only'
        % (clashes[0], clashes[0].split('=')[0]))


# flag -> (the flag it modifies, the fix).
_MODIFIERS = (
    ('save_summaries_steps', 'summary_dir'),
    ('summary_verbosity', 'summary_dir'),
    ('save_model_secs', 'train_dir'),
    ('save_model_steps', 'train_dir'),
    ('max_ckpts_to_keep', 'train_dir'),
)


def _check_modifiers(args, typed, error):
  for dest, needs in _MODIFIERS:
    if dest in typed and not getattr(args, needs):
      raise error(
          '%s without --%s: it applies to the files --%s names; add '
          '--%s=DIR or drop --%s' % (value(args, dest), needs, needs, needs,
                                     dest))
