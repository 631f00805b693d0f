"""How the benchmark's commands end: exit statuses and the one-line error.

A bad flag or a configuration the library refuses ends a command with one
line on stderr and status 2; a failure while running (a TensorFlow error, a
dead cluster task) with status 1; Ctrl-C with 130 ('interrupted'); SIGTERM
with 143 ('terminated', 128 + the signal's number, as a shell reports a
process that SIGTERM killed).

A TensorFlow error's line gives its class and TensorFlow's own cause: the
message lines of the op that failed (`Received a label value of -1 which is
outside the valid range of [0, 1000)`), without what TensorFlow wraps
them in (TensorFlow 2's `Graph execution error:`, `Detected at node`, the
Python frames and `[[{{node ...}}]]`; TensorFlow 1.15's `[[node ... (defined
at ...)]]`; the `Original stack trace` of both). A DataLossError of a
damaged TFRecord file also names the file (TensorFlow's message does not).
"""

import contextlib
import os
import re
import signal
import sys

from variable_mgr.benchmark.flags import command_line

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
  sys.stderr.write('%s: error: %s\n' % (command_line.PROG, message))
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
    return fail(op_error_line(e, tf.errors.DataLossError), FAILURE)
  except KeyboardInterrupt as e:
    return fail('interrupted (SIGINT, Ctrl-C): the run stopped before its '
                'end' + _note(e), INTERRUPTED)
  except Terminated as e:
    return fail('terminated (SIGTERM): the run stopped before its end' +
                _note(e), TERMINATED)


def _note(error):
  """'; ' and what an interrupted run saved, when the run said
  (`interrupted`); '' else (a cluster task: its chief's saves are its
  own)."""
  note = getattr(error, 'note', None)
  return '; ' + note if note else ''


# Lines of an OpError's message that are TensorFlow's wrapping, not the
# cause: TF 2's header, its "Detected at node" block (indented frames), the
# node lines of both generations and the stack traces they append.
_WRAPPING = re.compile(
    r'^(Graph execution error:|Detected at node|Node:|\s*File "|\s*\[\[|'
    r'Original stack trace for|\d+ root error\(s\) found|'
    r'\d+ successful operations?\.|\d+ derived errors? ignored\.)')
# TF 2 prefixes each root error's cause with its status code, TF 1.15 with
# its words: "  (0) INVALID_ARGUMENT: ...", "  (0) Invalid argument: ...".
_ROOT_PREFIX = re.compile(r'^\s*\(\d+\)\s+[A-Za-z_ ]+:\s*')
# Before the cause of an error inside a tf.data function, TF 2 names the
# stage, TF 1.15 the function.
_DATASET_PREFIX = re.compile(
    r'^(Error in user-defined function passed to \S+ transformation with '
    r'iterator: \S+: |\{\{function_node [^}]*\}\}\s*)+')


def cause_lines(message):
  """The lines of an OpError message that say what went wrong, in order,
  each once, without TensorFlow's wrapping (see the module docstring)."""
  causes = []
  in_trace = False
  for line in message.splitlines():
    if line.startswith('Original stack trace for'):
      in_trace = True
    if in_trace or not line.strip() or _WRAPPING.match(line):
      continue
    if line.startswith((' ', '\t')) and not _ROOT_PREFIX.match(line):
      continue  # A frame's source line or a continuation of the trace.
    line = _DATASET_PREFIX.sub('', _ROOT_PREFIX.sub('', line)).strip()
    if line and line not in causes:
      causes.append(line)
  return causes


def op_error_line(error, data_loss_class=None):
  """The one line of a TensorFlow error: its class, its cause lines and,
  for a DataLossError (`data_loss_class`), the damaged file when one of
  the TFRecord files this process read is."""
  message = getattr(error, 'message', None) or str(error)
  causes = cause_lines(message) or [str(error).strip().splitlines()[0]]
  line = '%s failed while running: %s' % (type(error).__name__,
                                          ' | '.join(causes))
  if data_loss_class is not None and isinstance(error, data_loss_class):
    from variable_mgr.benchmark.data import imagenet_records  # pylint: disable=g-import-not-at-top
    damaged = imagenet_records.describe_data_loss(message)
    if damaged:
      line += ': ' + damaged
  return line


def exit_task(status):
  """Ends a cluster task's process now. TensorFlow cannot stop a gRPC
  server, and its teardown at interpreter exit may block; a task has
  nothing left to do."""
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(status)  # pylint: disable=protected-access
