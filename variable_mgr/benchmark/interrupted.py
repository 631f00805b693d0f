"""What an interrupted run on one machine keeps, and says it keeps.

Ctrl-C (SIGINT, KeyboardInterrupt) and SIGTERM (`exit_status.Terminated`)
reach the main thread between two session calls: the step in progress
ends first (a session call is not cut short), then the run saves a
checkpoint of the global step reached into `--train_dir` (a save of every
variable, as at the end of a run, so it restores and the step count goes
on from it), and the exception carries a note the one-line error ends with:
where the checkpoint is, or that nothing was saved and why. The time from
the signal to the exit is thus bounded by one step and one save. A second
Ctrl-C during that save stops it: the note then says so, and the
`checkpoint` index still names the last complete checkpoint (TensorFlow
writes the index after the files).
"""

import contextlib

from variable_mgr.benchmark import exit_status

INTERRUPTIONS = (KeyboardInterrupt, exit_status.Terminated)


class Progress(object):
  """Whether the run's steps have started: before, the variables may not be
  restored yet, and a save would put fresh values over the checkpoint."""

  def __init__(self):
    self.started = False


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
      if progress.started:
        _note_saved(e, sess, save)
      else:
        note_unsaved(e, train_dir)
      raise


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
