"""What an interrupted run on one machine keeps, and says it keeps.

Once the steps have started (`Progress.start`), Ctrl-C (SIGINT,
KeyboardInterrupt) and SIGTERM (`exit_status.Terminated`) are held until
the session call in progress has returned: the step loop raises them
between two steps (`Progress.check`). They must not be raised where
Python's default handler would raise them, at any bytecode of
TensorFlow's session code: an exception between a lock's acquire and the
`with` that releases it (the graph's session-run lock, TF 1.15's
`_extend_graph`) leaves the lock held, and the save below would then wait
for it forever (seen once in five runs on TensorFlow 1.15).

Then the run saves a checkpoint of the global step reached into
`--train_dir` (a save of every variable, as at the end of a run, so it
restores and the step count goes on from it), and the exception carries a
note the one-line error ends with: where the checkpoint is, or that nothing
was saved and why. The time from the signal to the exit is thus bounded by
one step and one save. A second signal before the step has ended stops the
run at once without a save, and one during the save stops the save; the
note says so, and the `checkpoint` index still names the last complete
checkpoint (TensorFlow writes the index after the files).
"""

import contextlib
import signal

from variable_mgr.benchmark.runs import exit_status

INTERRUPTIONS = (KeyboardInterrupt, exit_status.Terminated)
_HELD = (signal.SIGINT, signal.SIGTERM)


def _interruption(signum):
  if signum == signal.SIGINT:
    return KeyboardInterrupt()
  return exit_status.Terminated()


class Progress(object):
  """Whether the run's steps have started (before, the variables may not be
  restored yet, and a save would put fresh values over the checkpoint), and
  the signal held since, if any."""

  def __init__(self):
    self.started = False
    self.held = None
    self._previous = {}

  def start(self):
    """The steps start: from here Ctrl-C and SIGTERM are held until
    `check` (in the main thread; elsewhere they stay as they were)."""
    self.started = True
    try:
      for signum in _HELD:
        self._previous[signum] = signal.signal(signum, self._hold)
    except ValueError:  # Not the main thread: no handler can be set.
      pass

  def _hold(self, signum, frame):
    del frame
    if self.held is not None:
      # Asked twice: stop now, inside the step, and save nothing (the
      # session's state may be cut mid-call).
      error = _interruption(signum)
      error.note = ('interrupted again before the step ended: stopped at '
                    'once, nothing was saved (the `checkpoint` index names '
                    'the last complete checkpoint)')
      raise error
    self.held = signum

  def check(self):
    """Raises the held signal's exception, between two session calls."""
    if self.held is not None:
      raise _interruption(self.held)

  def restore_handlers(self):
    for signum, previous in self._previous.items():
      signal.signal(signum, previous)
    self._previous = {}


@contextlib.contextmanager
def session(sess, progress, save, train_dir):
  """Enters `sess` (a tf.Session); on Ctrl-C or SIGTERM inside, once
  `progress.started`, calls `save(sess)` (saves into `train_dir` and
  returns the global step; None without --train_dir) and records what was
  saved on the exception before it goes on."""
  with sess:
    try:
      yield sess
    except INTERRUPTIONS as e:
      progress.restore_handlers()
      if getattr(e, 'note', None) is not None:
        pass  # Said already (a second signal).
      elif progress.started:
        _note_saved(e, sess, save)
      else:
        note_unsaved(e, train_dir)
      raise
    finally:
      progress.restore_handlers()


def _note_saved(error, sess, save):
  if save is None:
    error.note = ('nothing was saved: no --train_dir (pass --train_dir=DIR '
                  'to keep a checkpoint of the step an interrupted run '
                  'reached)')
    return
  try:
    step = save(sess)
  except INTERRUPTIONS:
    error.note = ('interrupted again while saving: the checkpoint of the '
                  'step reached was not written (the `checkpoint` index '
                  'names the last complete one)')
    return
  error.note = ('saved a checkpoint of global step %d (the line above names '
                'it); a rerun with the same --train_dir resumes from it'
                % step)


def note_unsaved(error, train_dir):
  """Records on `error`, unless a note is there, that nothing was saved:
  the run stopped before its session ran a step."""
  if getattr(error, 'note', None) is None:
    error.note = ('nothing was saved: it stopped before its first step' +
                  (' (the checkpoints already in --train_dir=%s are as they '
                   'were)' % train_dir if train_dir else
                   ' (and no --train_dir was given)'))
