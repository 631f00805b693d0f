"""Ctrl-C and SIGTERM on one machine save the step reached into
--train_dir and say where (a checkpoint that restores, whose step count
goes on); without --train_dir they say nothing was saved.
--save_model_steps saves on one machine as tf_cnn_benchmarks' does."""

import os
import re
import signal
import subprocess
import sys

import pytest

from variable_mgr.benchmark import cli
from variable_mgr.benchmark.runs import interrupted
from variable_mgr.benchmark.runs import local_run

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
TINY = ['--model', 'trivial', '--data_name', 'small', '--num_gpus', '2',
        '--batch_size', '4', '--device', 'cpu',
        '--variable_update', 'replicated']


def _interrupt(argv, sig):
  """Runs the command until its third timed step line, sends `sig`;
  returns (status, stdout, stderr)."""
  env = dict(os.environ, PYTHONPATH=REPO, PYTHONUNBUFFERED='1')
  proc = subprocess.Popen(
      [sys.executable, '-m', 'variable_mgr.benchmark'] + argv, env=env,
      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
      universal_newlines=True, cwd=REPO)
  out = []
  try:
    for line in proc.stdout:
      out.append(line)
      if re.match(r'^3\timages/sec', line):
        proc.send_signal(sig)
        break
    rest, err = proc.communicate(timeout=60)
  finally:
    if proc.poll() is None:
      proc.kill()
      proc.wait()
  return proc.returncode, ''.join(out) + rest, err


def _error_line(err):
  lines = [l for l in err.splitlines()
           if l.startswith('variable_mgr_benchmark')]
  assert len(lines) == 1, err
  return lines[0]


@pytest.mark.parametrize('sig, status, words', [
    (signal.SIGINT, 130, 'interrupted (SIGINT, Ctrl-C)'),
    (signal.SIGTERM, 143, 'terminated (SIGTERM)'),
])
def test_a_signal_saves_the_step_reached_and_it_restores(
    sig, status, words, tmp_path, capsys):
  train_dir = str(tmp_path / 'train')
  code, out, err = _interrupt(
      TINY + ['--num_batches=100000', '--num_warmup_batches=2',
              '--display_every=1', '--train_dir=' + train_dir], sig)
  assert code == status, (out, err)
  saved = re.findall(r'^Saved (\S+model\.ckpt-(\d+))$', out, re.M)
  assert len(saved) == 1, out
  path, step = saved[0][0], int(saved[0][1])
  # Two warm-up steps, three timed ones at least, the one in progress.
  assert step >= 5
  line = _error_line(err)
  assert line == (
      'variable_mgr_benchmark: error: %s: the run stopped before its end; '
      'saved a checkpoint of global step %d (the line above names it); a '
      'rerun with the same --train_dir resumes from it' % (words, step))
  assert path == os.path.join(train_dir, 'model.ckpt-%d' % step)
  # The checkpoint restores, and the step count goes on from it: counted
  # from global step 0 as tf_cnn_benchmarks does, 2 more batches.
  results = local_run.run_one(local_run.run_config.BenchmarkConfig(
      model='trivial', data_name='small', num_gpus=2, batch_size=4,
      device='cpu', variable_update='replicated', num_warmup_batches=0,
      num_batches=step + 2, train_dir=train_dir), log=lambda line: None)
  assert results['restored_from'] == path
  assert results['global_step'] == step + 2
  assert len(results['losses']) == 2


def test_a_signal_without_train_dir_says_nothing_was_saved():
  code, out, err = _interrupt(
      TINY + ['--num_batches=100000', '--num_warmup_batches=0',
              '--display_every=1'], signal.SIGINT)
  assert code == 130
  assert 'Saved' not in out
  assert _error_line(err) == (
      'variable_mgr_benchmark: error: interrupted (SIGINT, Ctrl-C): the run '
      'stopped before its end; nothing was saved: no --train_dir (pass '
      '--train_dir=DIR to keep a checkpoint of the step an interrupted run '
      'reached)')


def test_save_model_steps_counts_timed_steps_as_tf_cnn_benchmarks(
    tmp_path, capsys):
  """tf_cnn_benchmarks saves after local steps N, 2N, ... with its local
  step counted from 0 after the warm-up: with 2 warm-up steps, 5 timed and
  --save_model_steps=2, after timed steps 2 and 4 (global steps 4 and 6),
  then at the end (7)."""
  train_dir = str(tmp_path / 'train')
  assert cli.main(TINY + ['--num_batches=5', '--num_warmup_batches=2',
                          '--save_model_steps=2',
                          '--train_dir=' + train_dir]) == 0
  out = capsys.readouterr().out
  assert re.findall(r'^Saved \S+model\.ckpt-(\d+)$', out, re.M) == [
      '4', '6', '7']


def test_save_model_steps_needs_train_dir(capsys):
  assert cli.main(TINY + ['--save_model_steps=2']) == 2
  assert ('--save_model_steps=2 without --train_dir: it applies to the '
          'files --train_dir names; add --train_dir=DIR or drop '
          '--save_model_steps') in capsys.readouterr().err


def _session_with_a_step():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  graph = tf.Graph()
  with graph.as_default():
    x = tf.compat.v1.placeholder(tf.float32, [2])
    y = x * 3.0
  return tf.compat.v1.Session(graph=graph), x, y


@pytest.mark.parametrize('sig, exception', [
    (signal.SIGINT, KeyboardInterrupt),
    (signal.SIGTERM, interrupted.exit_status.Terminated),
])
def test_a_signal_during_a_step_is_held_until_check(sig, exception):
  """Raised at any bytecode of TensorFlow's session code, the exception
  can leave the graph's session-run lock held and the save that follows
  waiting for ever (TF 1.15); held, the session goes on answering and the
  exception comes at `check`, between two steps."""
  sess, x, y = _session_with_a_step()
  progress = interrupted.Progress()
  answers = []
  with interrupted.exit_status.sigterm_raises():
    previous = signal.getsignal(sig)
    with pytest.raises(exception):
      with interrupted.session(sess, progress, None, None):
        progress.start()
        os.kill(os.getpid(), sig)  # In the step: held, not raised here.
        answers.append(list(sess.run(y, {x: [1.0, 2.0]})))
        progress.check()
    assert signal.getsignal(sig) is previous
  assert answers == [[3.0, 6.0]]


def test_a_second_signal_stops_the_step_at_once_without_a_save():
  sess, _, _ = _session_with_a_step()
  progress = interrupted.Progress()
  saves = []
  first_held = []
  # Python's default_int_handler, or SIG_IGN where the suite was started in
  # the background of a shell without job control.
  previous = signal.getsignal(signal.SIGINT)
  with pytest.raises(KeyboardInterrupt) as raised:
    with interrupted.session(sess, progress, saves.append, '/unused'):
      progress.start()
      os.kill(os.getpid(), signal.SIGINT)
      first_held.append(progress.held)
      os.kill(os.getpid(), signal.SIGINT)
  assert first_held == [signal.SIGINT]
  assert saves == []
  assert raised.value.note.startswith(
      'interrupted again before the step ended: stopped at once, nothing '
      'was saved')
  assert signal.getsignal(signal.SIGINT) is previous


@pytest.mark.parametrize('train_dir', ['/some/train_dir', None])
def test_a_signal_before_the_first_step_says_nothing_was_saved(train_dir):
  """Interrupted before `progress.start`: no save is attempted, and the
  note says what --train_dir holds is as it was."""
  sess, _, _ = _session_with_a_step()
  progress = interrupted.Progress()
  saves = []
  with pytest.raises(KeyboardInterrupt) as raised:
    with interrupted.session(sess, progress, saves.append, train_dir):
      raise KeyboardInterrupt()
  assert saves == []
  assert raised.value.note == (
      'nothing was saved: it stopped before its first step' +
      (' (the checkpoints already in --train_dir=/some/train_dir are as '
       'they were)' if train_dir else ' (and no --train_dir was given)'))


def test_sigterm_raises_within_and_the_handler_before_comes_back():
  """Within `sigterm_raises` SIGTERM raises Terminated; after it, whatever
  handler was there before is SIGTERM's handler again (a run that ends
  leaves the process as it found it)."""
  before = signal.getsignal(signal.SIGTERM)
  seen = []

  def handler(signum, frame):
    del frame
    seen.append(signum)

  signal.signal(signal.SIGTERM, handler)
  try:
    with pytest.raises(interrupted.exit_status.Terminated):
      with interrupted.exit_status.sigterm_raises():
        os.kill(os.getpid(), signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is handler
    os.kill(os.getpid(), signal.SIGTERM)
    assert seen == [signal.SIGTERM]
  finally:
    signal.signal(signal.SIGTERM, before)
