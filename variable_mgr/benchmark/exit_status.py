"""How the benchmark's commands end: exit statuses and the one-line error.

A bad flag or a configuration the library refuses ends a command with one
line on stderr and status 2; a failure while running (a TensorFlow error, a
dead cluster task) with status 1; Ctrl-C with 130.
"""

import os
import sys

from variable_mgr.benchmark import flags

OK = 0
FAILURE = 1
USAGE = 2
INTERRUPTED = 130


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
    return fail('interrupted', INTERRUPTED)


def exit_task(status):
  """Ends a cluster task's process now. TensorFlow cannot stop a gRPC
  server, and its teardown at interpreter exit may block; a task has
  nothing left to do."""
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(status)  # pylint: disable=protected-access
