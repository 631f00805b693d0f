"""The output paths a run writes, checked before anything runs.

`--output` and `--trace_file` name files; `--train_dir`, `--summary_dir`
and `--compare_dir` directories. A path must be of its kind when it
exists, and the directory that will hold the output must exist (the run
creates a missing directory flag's own directory, one level, never a
missing parent) and take a new file: that is tried by creating and
removing one, since permission bits say nothing for root (who may not
write in /proc or /sys either).
"""

import os
import tempfile

from variable_mgr.benchmark.flags.value_types import UsageError

FILE_FLAGS = ('output', 'trace_file')
DIRECTORY_FLAGS = ('train_dir', 'summary_dir', 'compare_dir')


def _cannot_create(directory):
  """Why a file cannot be created in `directory` ('Permission denied'), or
  None when one can (it is created and removed)."""
  try:
    handle, path = tempfile.mkstemp(dir=directory, prefix='.write-check-')
  except OSError as e:
    return e.strerror or str(e)
  os.close(handle)
  os.remove(path)
  return None


def _cannot_append(path):
  """Why the existing file `path` cannot be written, or None (opened for
  appending, nothing written)."""
  try:
    with open(path, 'a'):
      pass
  except OSError as e:
    return e.strerror or str(e)
  return None


def _missing_parent(given, parent):
  """The refusal of a path whose directory `parent` does not exist: the
  nearest existing ancestor says whether `mkdir -p` can make it."""
  ancestor = parent
  while not os.path.exists(ancestor):
    ancestor = os.path.dirname(ancestor)
  if not os.path.isdir(ancestor):
    return UsageError(
        '%s: %s is not a directory (%s), so no directory can be made under '
        'it; choose a path in an existing directory' % (
            given, ancestor, 'a device' if not os.path.isfile(ancestor)
            else 'a file'))
  return UsageError(
      '%s: the directory %s does not exist; create it first (mkdir -p %s) or '
      'choose a path in an existing directory' % (given, parent, parent))


def check_output_path(flag, path, kind):
  """Refuses an output path that cannot be written as `kind` ('file' or
  'directory'): a path of the other kind, one in which (or in whose
  directory) no file can be created, or one whose parent directory is
  missing.

  Raises:
    UsageError: naming the flag and the path as given, and why.
  """
  given = '--%s=%s' % (flag, path)
  if not path:
    raise UsageError('%s: an empty path; pass a path or drop the flag' % given)
  if kind == 'file' and os.path.isdir(path):
    raise UsageError(
        '%s is a directory, and --%s names a file; pass a file path such as '
        '--%s=%s' % (given, flag, flag, os.path.join(
            path, 'trace.json' if flag == 'trace_file' else 'results.json')))
  if kind == 'directory' and os.path.exists(path) and not os.path.isdir(path):
    raise UsageError(
        '%s is a file, and --%s names a directory; pass a directory path '
        '(created if missing)' % (given, flag))
  if kind == 'directory' and os.path.isdir(path):
    why = _cannot_create(path)
    if why:
      raise UsageError(
          '%s: the directory is not writable (creating a file in it fails: '
          '%s); choose another one or make it writable' % (given, why))
    return
  if kind == 'file' and os.path.exists(path):
    why = _cannot_append(path)
    if why:
      raise UsageError(
          '%s: the file is not writable (%s); choose another path or make '
          'it writable' % (given, why))
    return
  parent = os.path.dirname(os.path.abspath(path))
  if not os.path.isdir(parent):
    raise _missing_parent(given, parent)
  why = _cannot_create(parent)
  if why:
    raise UsageError(
        '%s: the directory %s is not writable (creating a file in it fails: '
        '%s); choose a path in a writable directory' % (given, parent, why))


def written_paths(args, cluster):
  """The output flags the run of `args` writes (a PS task none; a cluster
  task its results, and the chief its checkpoints)."""
  if args.compare:
    return ['compare_dir']
  if args.job_name == 'ps':
    return []
  if cluster:
    return ['output'] + (['train_dir'] if args.job_name is None or
                         args.task_index == 0 else [])
  return ['output', 'trace_file', 'train_dir', 'summary_dir']


def check(args, cluster):
  """Refuses the output paths of `args` that the run could not write."""
  for flag in written_paths(args, cluster):
    path = getattr(args, flag)
    if path is not None:
      check_output_path(flag, path,
                        'file' if flag in FILE_FLAGS else 'directory')
