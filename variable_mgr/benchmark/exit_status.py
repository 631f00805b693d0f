"""How the benchmark's commands end: exit statuses and the one-line error.

A bad flag or a configuration the library refuses ends a command with one
line on stderr and status 2; a failure while running (a TensorFlow error, a
dead cluster task) with status 1; Ctrl-C with 130 ('interrupted'); SIGTERM
with 143 ('terminated', 128 + the signal's number, as a shell reports a
process that SIGTERM killed).
"""

import contextlib
import os
import signal
import sys

from variable_mgr.benchmark import flags

OK = 0
FAILURE = 1
USAGE = 2
INTERRUPTED = 130
TERMINATED = 128 + signal.SIGTERM


class Terminated(BaseException):
  """SIGTERM reached the process (raised by `sigterm_raises`' handler).

  A BaseException, as KeyboardInterrupt is: no `except Exception` of the
  run swallows it.
  """


def _raise_terminated(signum, frame):
  del signum, frame
  raise Terminated()


@contextlib.contextmanager
def sigterm_raises():
  """Within: SIGTERM raises `Terminated` in the main thread (which
  `status_of` reports as 'terminated', status 143) instead of ending the
  process without a word. Elsewhere than in the main thread it does
  nothing."""
  try:
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
  except ValueError:  # Not the main thread.
    yield
    return
  try:
    yield
  finally:
    signal.signal(signal.SIGTERM, previous)


def fail(message, status):
  """Writes `variable_mgr_benchmark: error: <message>` to stderr; returns
  `status`."""
  sys.stdout.flush()
  sys.stderr.write('%s: error: %s\n' % (flags.PROG, message))
  sys.stderr.flush()
  return status


def status_of(run, failures=()):
  """Calls `run()` and returns its status; an error it raises becomes one
  line on stderr and the error's status.

  Args:
    run: a function of no arguments that returns an exit status.
    failures: further exception classes that mean FAILURE; their message
      is the line.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from variable_mgr import errors  # pylint: disable=g-import-not-at-top
  try:
    return run()
  except errors.VariableMgrError as e:
    return fail(e, USAGE)
  except tuple(failures) as e:  # pylint: disable=catching-non-exception
    return fail(e, FAILURE)
  except tf.errors.OpError as e:
    return fail('%s failed while running: %s' %
                (type(e).__name__, str(e).strip().splitlines()[0]), FAILURE)
  except KeyboardInterrupt:
    return fail('interrupted (SIGINT, Ctrl-C): the run stopped before its end',
                INTERRUPTED)
  except Terminated:
    return fail('terminated (SIGTERM): the run stopped before its end',
                TERMINATED)


def exit_task(status):
  """Ends a cluster task's process now. TensorFlow cannot stop a gRPC
  server, and its teardown at interpreter exit may block; a task has
  nothing left to do."""
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(status)  # pylint: disable=protected-access
