"""One run at a time in a `--train_dir`: a lock file naming its holder.

Two runs saving into one directory interleave their checkpoints: the
`checkpoint` index names one run's files, the other's are orphans, and
either may have written the last. So a run that trains into a
`--train_dir` takes `<train_dir>/variable_mgr.lock` before its first step
and keeps it to its end; a second run is refused, naming the holder.

The lock is an exclusive `flock` on the file, which the kernel drops when
the holding process ends however it ends, and the file's one line says who
holds it: `host <name> pid <pid> since <UTC time>`. A run that finds the
file but gets the flock took over a lock whose process is gone (it ended
without removing the file: killed, or the machine restarted) and says so
in a line. A file that names another host is refused even when the flock
is free: a flock is not seen across the hosts of a network file system, so
whether that process is gone cannot be told from here; the message says to
remove the file once that run is over.

Who takes it: a run on one machine (`local_run`); the launcher of
`--launch_local_cluster` for the whole cluster it starts (its tasks share
the directory as one run: only the chief writes into it); a cluster task
started by hand, when it is the one that writes (the chief worker, or the
controller of distributed_all_reduce). `--eval` only reads and takes none.
"""

import datetime
import errno
import fcntl
import os
import socket

from variable_mgr import errors
from variable_mgr.benchmark.flags import as_typed

LOCK_NAME = 'variable_mgr.lock'


class TrainDirBusyError(errors.VariableMgrError):
  """Another run holds the lock of the --train_dir."""


class TrainDirLock(object):
  """A held lock; `release()` (or leaving the `with` block) drops it."""

  def __init__(self, path, fd):
    self.path = path
    self._fd = fd

  def release(self):
    if self._fd is None:
      return
    try:
      os.unlink(self.path)
    except OSError:
      pass
    os.close(self._fd)
    self._fd = None

  def __enter__(self):
    return self

  def __exit__(self, *unused):
    self.release()


def holder_line(host=None, pid=None):
  """The line the lock file holds: this process's host and pid, and the
  time it took the lock."""
  return 'host %s pid %d since %s UTC' % (
      host or socket.gethostname(), os.getpid() if pid is None else pid,
      datetime.datetime.utcnow().strftime('%Y-%m-%d %H:%M:%S'))


def _holder_host(line):
  parts = line.split()
  if len(parts) >= 2 and parts[0] == 'host':
    return parts[1]
  return None


def acquire(train_dir, flag_text=None, log=print):
  """Takes the lock of `train_dir` (created if missing, one level, as the
  flags allow) for this process; returns a TrainDirLock.

  Args:
    train_dir: the directory.
    flag_text: the flag as typed, for the messages (default
      `--train_dir=<train_dir>`).
    log: called with the line saying a stale lock was taken over.

  Raises:
    TrainDirBusyError: another run holds it (the message names it).
  """
  flag_text = flag_text or '--train_dir=%s' % train_dir
  os.makedirs(train_dir, exist_ok=True)
  path = os.path.join(train_dir, LOCK_NAME)
  this_host = socket.gethostname()
  while True:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
      os.close(fd)
      if e.errno not in (errno.EAGAIN, errno.EACCES):
        raise
      raise TrainDirBusyError(
          '%s: another run is training into this directory (%s holds %s); '
          'wait for it to end, stop it, or pass another --train_dir' % (
              flag_text, _read(path) or 'a run starting now', path))
    # The file may have been removed by its holder between the open and
    # the flock: then this fd locks a file no one else can see. Again.
    try:
      same = os.fstat(fd).st_ino == os.stat(path).st_ino
    except OSError:
      same = False
    if not same:
      os.close(fd)
      continue
    break
  previous = os.read(fd, 4096).decode('utf-8', 'replace').strip()
  if previous:
    host = _holder_host(previous)
    if host is not None and host != this_host:
      fcntl.flock(fd, fcntl.LOCK_UN)
      os.close(fd)
      raise TrainDirBusyError(
          '%s: %s names a run on another host (%s), whose process cannot '
          'be checked from %s; if that run is over, remove %s, else wait for '
          'it or pass another --train_dir' % (
              flag_text, path, previous, this_host, path))
    log('%s: took over %s from a run that is gone (%s)' % (
        flag_text, path, previous))
  os.lseek(fd, 0, os.SEEK_SET)
  os.ftruncate(fd, 0)
  os.write(fd, (holder_line(this_host) + '\n').encode('utf-8'))
  os.fsync(fd)
  return TrainDirLock(path, fd)


def acquire_for_task(args, writes, launched, log=print):
  """The lock of a cluster task that writes into --train_dir (the chief,
  the controller), taken before its graph is built; None for a task that
  does not write, or one the launcher started (`launched`: the launcher
  holds the lock for every task of its cluster)."""
  if not (writes and args.train_dir) or launched:
    return None
  return acquire(args.train_dir, as_typed.given(args, 'train_dir'), log)


def _read(path):
  try:
    with open(path) as f:
      return f.read().strip()
  except (IOError, OSError):
    return ''
