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
from variable_mgr.benchmark import local_run

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
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
