"""Checkpoints that travel between strategies.

`VariableMgr.get_variables_to_save()` names every variable canonically (no
`v0/`, `v/` or `ps_var/` prefix), so a checkpoint written under one strategy
restores under another. `restore` checks the checkpoint against the model
first, so that restoring another model's checkpoint names the variable that
differs instead of failing deep inside the restore op.

A checkpoint that is asked for and cannot be restored is an error that names
its file: a `checkpoint` file pointing at files that are gone, an unreadable
`checkpoint` file, a corrupt or truncated index or data shard. Only a
directory without a `checkpoint` file (new or empty) means "start fresh":
`latest_checkpoint` and `restore` return None there.
"""

import os

from variable_mgr import errors
from variable_mgr.compat import tf


FRESH_START_FIX = ('or, to train from scratch, start with an empty or new '
                   'train directory (--train_dir)')


def _pointer_file(train_dir):
  return os.path.join(train_dir, 'checkpoint')


def _missing_data_files(prefix):
  """The data shards of the V2 checkpoint `prefix` that do not exist."""
  shards = tf.gfile.Glob(prefix + '.data-?????-of-?????')
  if not shards:
    return [prefix + '.data-00000-of-00001']
  count = int(shards[0].rsplit('-of-', 1)[1])
  expected = ['%s.data-%05d-of-%05d' % (prefix, i, count)
              for i in range(count)]
  return [name for name in expected if not tf.gfile.Exists(name)]


def check_files(prefix, pointer=None):
  """Raises CheckpointMissingError unless every file of the checkpoint
  `prefix` (its index and data shards, or a V1 file) exists.

  Args:
    prefix: a checkpoint prefix.
    pointer: the `checkpoint` file that named `prefix`, for the message.
  """
  if tf.gfile.Exists(prefix + '.index'):
    missing = _missing_data_files(prefix)
  elif tf.gfile.Exists(prefix) and not tf.gfile.IsDirectory(prefix):
    missing = []  # A V1 checkpoint: one file.
  else:
    missing = [prefix + '.index']
  if missing:
    where = ('%s points at checkpoint %s' % (pointer, prefix) if pointer
             else 'checkpoint %s' % prefix)
    raise errors.CheckpointMissingError(
        '%s, but %s does not exist (deleted or moved?): put the checkpoint\'s '
        'files back, %s.' % (where, missing[0], FRESH_START_FIX))


def latest_checkpoint(train_dir):
  """The prefix of the latest checkpoint of `train_dir`, checked to exist.

  Unlike `tf.train.latest_checkpoint`, which logs an error and returns None
  when the `checkpoint` file points at files that are gone (so that training
  would start from scratch and overwrite it), a dangling or unreadable
  `checkpoint` file is an error naming it.

  Args:
    train_dir: a directory; it need not exist.

  Returns:
    The prefix, or None if `train_dir` has no `checkpoint` file (a new or
    empty directory: start fresh).

  Raises:
    CheckpointMissingError: the `checkpoint` file names a checkpoint whose
      index or data files are missing.
    CheckpointCorruptError: the `checkpoint` file cannot be parsed or names
      no checkpoint.
  """
  pointer = _pointer_file(train_dir)
  if not tf.gfile.Exists(pointer):
    return None
  try:
    # Logs a warning and returns None for a file it cannot parse.
    state = tf.train.get_checkpoint_state(train_dir)
  except ValueError:  # Parsed, but without model_checkpoint_path.
    state = None
  if state is None or not state.model_checkpoint_path:
    raise errors.CheckpointCorruptError(
        '%s cannot be read as a checkpoint state (a text proto with '
        'model_checkpoint_path: "<prefix>"), or names no checkpoint: fix '
        'it, %s.' % (pointer, FRESH_START_FIX))
  prefix = state.model_checkpoint_path
  check_files(prefix, pointer)
  return prefix


def checkpoint_path(path):
  """The checkpoint prefix of `path`: a (V2) checkpoint prefix as is, or a
  directory's latest checkpoint (see `latest_checkpoint`); None if there is
  none.

  Raises:
    CheckpointMissingError, CheckpointCorruptError: see `latest_checkpoint`
      and `check_files`.
  """
  if tf.gfile.Exists(path + '.index'):
    check_files(path)
    return path
  return latest_checkpoint(path)  # None for a missing directory.


def _reason(error):
  """TensorFlow's own reason in the message of `error` ("not an sstable (bad
  magic number)"): the line after "Node: ..." in TensorFlow 2's graph
  execution errors, the first line in TensorFlow 1.15's."""
  lines = [line.strip() for line in str(error.message).splitlines()]
  lines = [line for line in lines if line]
  for i, line in enumerate(lines[:-1]):
    if line.startswith('Node: '):
      return lines[i + 1]
  for line in lines:
    if line != 'Graph execution error:':
      return line
  return type(error).__name__


def _unreadable(prefix, error):
  """The CheckpointCorruptError of a TensorFlow error reading `prefix`."""
  return errors.CheckpointCorruptError(
      'checkpoint %s cannot be read (%s: %s): its files (%s.index, '
      '%s.data-*) are corrupt or truncated; restore them from a copy, '
      'restore an older checkpoint, %s.' % (
          prefix, type(error).__name__, _reason(error), prefix, prefix,
          FRESH_START_FIX))


def check_compatible(path, variables_to_save):
  """Raises CheckpointMismatchError unless the checkpoint at `path` holds
  every variable of `variables_to_save` ({name: variable}) in its shape.

  The first mismatch, in name order, is reported.

  Raises:
    CheckpointMismatchError: as above.
    CheckpointCorruptError: the checkpoint's index cannot be read.
  """
  try:
    saved = dict(tf.train.list_variables(path))
  except tf.errors.OpError as e:
    raise _unreadable(path, e)
  for name in sorted(variables_to_save):
    shape = variables_to_save[name].shape
    if name not in saved:
      raise errors.CheckpointMismatchError(
          'checkpoint %s has no variable %r (shape %s) that the model has: '
          'it was written by another model or optimizer; restore a '
          'checkpoint of this model or start from a fresh train_dir.' %
          (path, name, shape))
    if not shape.is_compatible_with(saved[name]):
      raise errors.CheckpointMismatchError(
          'checkpoint %s holds %r with shape %s but the model\'s has shape '
          '%s: it was written by another model; restore a checkpoint of '
          'this model or start from a fresh train_dir.' %
          (path, name, tuple(saved[name]), shape))


def restore(session, path, variables_to_save, saver=None):
  """Checks, then restores `variables_to_save` from the checkpoint at `path`
  (a prefix or a directory). Run the manager's post-init ops afterwards so
  that every replica gets the restored values.

  Args:
    session: the session to restore in.
    path: a checkpoint prefix or a directory.
    variables_to_save: `{name: variable}`, from `get_variables_to_save()`.
    saver: a Saver over `variables_to_save`, made before the graph was
      finalized; None to make one here.

  Returns:
    The checkpoint prefix restored, or None if `path` has no checkpoint (a
    new or empty directory).

  Raises:
    CheckpointMissingError: the directory's `checkpoint` file names files
      that do not exist.
    CheckpointCorruptError: the `checkpoint` file or the checkpoint cannot
      be read.
    CheckpointMismatchError: see `check_compatible`.
  """
  prefix = checkpoint_path(path)
  if prefix is None:
    return None
  check_compatible(prefix, variables_to_save)
  saver = saver or tf.train.Saver(variables_to_save)
  try:
    saver.restore(session, prefix)
  except (tf.errors.DataLossError, tf.errors.OutOfRangeError) as e:
    # A corrupt or truncated data shard (the index was read above).
    raise _unreadable(prefix, e)
  return prefix
