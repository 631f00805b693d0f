"""Checkpoints that travel between strategies.

`VariableMgr.get_variables_to_save()` names every variable canonically (no
`v0/`, `v/` or `ps_var/` prefix), so a checkpoint written under one strategy
restores under another. `restore` checks the checkpoint against the model
first, so that restoring another model's checkpoint names the variable that
differs instead of failing deep inside the restore op.
"""

from variable_mgr import errors
from variable_mgr.compat import tf


def checkpoint_path(path):
  """The checkpoint prefix of `path`: a (V2) checkpoint prefix as is, or a
  directory's latest checkpoint; None if there is none."""
  if tf.gfile.Exists(path + '.index'):
    return path
  return tf.train.latest_checkpoint(path)  # None for a missing directory.


def check_compatible(path, variables_to_save):
  """Raises CheckpointMismatchError unless the checkpoint at `path` holds
  every variable of `variables_to_save` ({name: variable}) in its shape.

  The first mismatch, in name order, is reported.
  """
  saved = dict(tf.train.list_variables(path))
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
    The checkpoint prefix restored, or None if `path` has no checkpoint.

  Raises:
    CheckpointMismatchError: see `check_compatible`.
  """
  prefix = checkpoint_path(path)
  if prefix is None:
    return None
  check_compatible(prefix, variables_to_save)
  (saver or tf.train.Saver(variables_to_save)).restore(session, prefix)
  return prefix
