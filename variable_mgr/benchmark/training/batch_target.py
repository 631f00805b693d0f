"""How many timed batches a run trains when it restores a checkpoint.

tf_cnn_benchmarks counts `--num_batches` (or the batches of `--num_epochs`)
from global step 0: a run that restores a checkpoint at global step s
times `num_batches - s // num_workers` batches (its `end_local_step`),
after the usual warm-up batches, so 25 steps done and `--num_batches=40`
time 15 more. Its global step counts every worker's update; here a
synchronous cluster's global step counts synchronous steps (once for all
workers, see `cluster.worker_task`), so the steps a worker took are the
global step itself, and under asynchronous steps the global step over the
workers, as there.

A checkpoint already at or past the target is refused before any graph
is built (`check_restored`): tf_cnn_benchmarks would still run (and save)
the warm-up steps, past the target, then time none and print `total
images/sec: 0.00`.
"""

from variable_mgr import errors


class TargetReachedError(errors.VariableMgrError):
  """The checkpoint of --train_dir is at or past the run's last batch."""


def checkpoint_global_step(train_dir):
  """The global step held by the latest checkpoint of `train_dir`, or None
  (no checkpoint; or one without a global step, which the restore refuses
  later, naming it).

  Raises:
    CheckpointMissingError, CheckpointCorruptError: as
      `checkpoint.latest_checkpoint`.
  """
  from variable_mgr import checkpoint  # pylint: disable=g-import-not-at-top
  from variable_mgr.compat import tf  # pylint: disable=g-import-not-at-top
  prefix = checkpoint.latest_checkpoint(train_dir) if train_dir else None
  if prefix is None:
    return None
  try:
    if 'global_step' not in dict(tf.train.list_variables(prefix)):
      return None
    return int(tf.train.load_variable(prefix, 'global_step'))
  except tf.errors.OpError:
    return None  # The restore reports the damaged checkpoint.


def batches_left(num_batches, global_step, updates_a_step=1,
                 train_dir=None, num_warmup_batches=None):
  """The timed batches of a run whose variables are at `global_step`:
  tf_cnn_benchmarks' `num_batches - global_step // updates_a_step`.

  Args:
    num_batches: the run's `--num_batches` (or those of `--num_epochs`).
    global_step: the global step restored (0 for a fresh start).
    updates_a_step: how much the global step grows a step of this worker
      (the workers, under asynchronous steps; else 1).
    train_dir: the checkpoint's directory, for the message.
    num_warmup_batches: the run's warm-up steps, for the message (None: not
      said).

  Raises:
    TargetReachedError: no batch is left.
  """
  steps = global_step // updates_a_step
  left = num_batches - steps
  if left <= 0:
    raise TargetReachedError(
        '--num_batches=%d --train_dir=%s: its checkpoint is at global step '
        '%d%s, and a restored run counts --num_batches (or --num_epochs) '
        'from global step 0, as tf_cnn_benchmarks does, so no batch is left '
        'to train; pass --num_batches=N above %d to time N - %d more '
        'batches%s, or a new --train_dir to start afresh' % (
            num_batches, train_dir, global_step,
            '' if updates_a_step == 1 else ' (%d steps a worker)' % steps,
            steps, steps, _warmup_words(num_warmup_batches, updates_a_step,
                                        global_step, 'N')))
  return left


def _warmup_words(num_warmup_batches, updates_a_step, global_step, target):
  """What the warm-up steps add to a restored run, in words: they run
  before the timed batches and train too, so the global step ends past
  --num_batches by them (tf_cnn_benchmarks counts alike)."""
  if not num_warmup_batches:
    return ''
  words = (' after %d warm-up steps (--num_warmup_batches), which train too'
           % num_warmup_batches)
  if updates_a_step == 1:
    words += ': the run ends at global step %s + %d' % (target,
                                                        num_warmup_batches)
  return words


def resume_line(num_batches, global_step, left, num_warmup_batches):
  """The line of a run on one machine that restored `global_step` and times
  `left` of `num_batches`: the steps it takes and its last global step."""
  line = ('Global step %d restored: %d of --num_batches=%d batches left '
          '(counted from global step 0, as tf_cnn_benchmarks counts them)'
          % (global_step, left, num_batches))
  if num_warmup_batches:
    line += ('; with the %d warm-up steps before them, which train too, '
             'this run takes %d steps, to global step %d' % (
                 num_warmup_batches, num_warmup_batches + left,
                 global_step + num_warmup_batches + left))
  else:
    line += '; this run ends at global step %d' % (global_step + left)
  return line


def check_restored(config, updates_a_step=1):
  """Refuses, before any graph is built, a run of `config` whose
  `--train_dir` checkpoint leaves no batch to train; returns the batches
  left (`config.num_batches` without a checkpoint).

  Raises:
    TargetReachedError: see `batches_left`.
  """
  global_step = checkpoint_global_step(config.train_dir)
  if global_step is None:
    return config.num_batches
  return batches_left(config.num_batches, global_step, updates_a_step,
                      config.train_dir, config.num_warmup_batches)
