"""One run at a time in a --train_dir: the lock names its holder, a second
run is refused before its graph is built, a lock whose process is gone is
taken over and said so."""

import os
import re
import socket
import subprocess
import sys

import pytest

from variable_mgr.benchmark import cli
from variable_mgr.benchmark.runs import train_dir_lock

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
TINY = ['--model', 'trivial', '--data_name', 'small', '--num_gpus', '1',
        '--batch_size', '2', '--num_batches', '1', '--num_warmup_batches', '0',
        '--device', 'cpu']

_HOLD = ('import sys, time\n'
         'from variable_mgr.benchmark.runs import train_dir_lock\n'
         'lock = train_dir_lock.acquire(sys.argv[1])\n'
         'print("held", flush=True)\n'
         'time.sleep(60)\n')


def _holder(train_dir):
  """A process holding the lock of `train_dir`, once it says it does."""
  env = dict(os.environ, PYTHONPATH=REPO)
  proc = subprocess.Popen([sys.executable, '-c', _HOLD, train_dir], env=env,
                          stdout=subprocess.PIPE, universal_newlines=True)
  assert proc.stdout.readline().strip() == 'held'
  return proc


def test_a_second_run_is_refused_naming_the_holder(tmp_path, capsys):
  train_dir = str(tmp_path / 'train')
  holder = _holder(train_dir)
  try:
    status = cli.main(TINY + ['--train_dir=' + train_dir])
  finally:
    holder.kill()
    holder.wait()
  err = capsys.readouterr().err.strip().splitlines()
  assert status == 2
  assert len(err) == 1, err
  assert ('--train_dir=%s: another run is training into this directory '
          '(host %s pid %d since' % (train_dir, socket.gethostname(),
                                     holder.pid)) in err[0]
  assert 'pass another --train_dir' in err[0]
  # Refused before anything ran: no checkpoint.
  assert not os.path.exists(os.path.join(train_dir, 'checkpoint'))


def test_a_lock_whose_process_is_gone_is_taken_over(tmp_path):
  train_dir = str(tmp_path / 'train')
  holder = _holder(train_dir)
  holder.kill()  # Gone without removing its file.
  holder.wait()
  path = os.path.join(train_dir, train_dir_lock.LOCK_NAME)
  assert os.path.exists(path)
  lines = []
  lock = train_dir_lock.acquire(train_dir, log=lines.append)
  try:
    assert len(lines) == 1
    assert lines[0].startswith('--train_dir=%s: took over %s from a run '
                               'that is gone (host %s pid %d since' % (
                                   train_dir, path, socket.gethostname(),
                                   holder.pid))
    with open(path) as f:
      assert f.read().startswith('host %s pid %d since' % (
          socket.gethostname(), os.getpid()))
  finally:
    lock.release()
  assert not os.path.exists(path)


@pytest.mark.parametrize('order', ['before', 'after'])
def test_a_lock_of_another_host_is_refused(tmp_path, order):
  """Any other host's name, whether it sorts before this host's or after."""
  this_host = socket.gethostname()
  host = '-' + this_host if order == 'before' else this_host + '.elsewhere'
  assert (host < this_host) == (order == 'before')
  train_dir = tmp_path / 'train'
  train_dir.mkdir()
  (train_dir / train_dir_lock.LOCK_NAME).write_text(
      'host %s pid 12 since 2026-01-01 00:00:00 UTC\n' % host)
  with pytest.raises(train_dir_lock.TrainDirBusyError,
                     match='names a run on another host .host %s pid 12.*if '
                     'that run is over, remove' % re.escape(host)):
    train_dir_lock.acquire(str(train_dir))


@pytest.mark.parametrize('line, refused', [
    ('host elsewhere.example', True),  # Cut after the host: still named.
    ('host', False),  # Cut before it: no host to check, taken over.
    ('pid 12', False)])
def test_a_lock_line_cut_short_is_read_as_far_as_it_goes(tmp_path, line,
                                                         refused):
  """A lock file whose line was cut short (a holder killed while writing
  it): a host it names is another host's; without one it is a stale
  lock, taken over."""
  train_dir = tmp_path / 'train'
  train_dir.mkdir()
  (train_dir / train_dir_lock.LOCK_NAME).write_text(line + '\n')
  lines = []
  if refused:
    with pytest.raises(train_dir_lock.TrainDirBusyError,
                       match='names a run on another host .%s.' % line):
      train_dir_lock.acquire(str(train_dir), log=lines.append)
    return
  train_dir_lock.acquire(str(train_dir), log=lines.append).release()
  assert len(lines) == 1 and lines[0].endswith(
      'from a run that is gone (%s)' % line)


def test_a_run_releases_its_lock_and_the_next_run_resumes(tmp_path, capsys):
  train_dir = str(tmp_path / 'train')
  assert cli.main(TINY + ['--train_dir=' + train_dir]) == 0
  assert not os.path.exists(os.path.join(train_dir, train_dir_lock.LOCK_NAME))
  assert cli.main(TINY + ['--train_dir=' + train_dir,
                          '--num_batches=2']) == 0
  out = capsys.readouterr().out
  assert 'took over' not in out
  assert 'Saved %s/model.ckpt-2' % train_dir in out


def test_a_held_lock_refuses_the_launcher_and_tasks_share_it(tmp_path):
  """The launcher is refused in one line; a task the launcher started does
  not take the lock its launcher holds; a chief started by hand does."""
  train_dir = str(tmp_path / 'train')
  holder = _holder(train_dir)
  try:
    env = dict(os.environ, PYTHONPATH=REPO)
    proc = subprocess.run(
        [sys.executable, '-m', 'variable_mgr.benchmark',
         '--launch_local_cluster', '--num_ps=1', '--num_workers=1',
         '--variable_update=parameter_server', '--model=trivial',
         '--train_dir=' + train_dir],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True, timeout=120)
  finally:
    holder.kill()
    holder.wait()
  assert proc.returncode == 2
  err = [l for l in proc.stderr.splitlines()
         if l.startswith('variable_mgr_benchmark')]
  assert len(err) == 1 and 'another run is training into this directory ' \
      '(host %s pid %d' % (socket.gethostname(), holder.pid) in err[0], err

  class Args(object):
    pass
  args = Args()
  args.train_dir = train_dir
  assert train_dir_lock.acquire_for_task(args, True, True) is None
  assert train_dir_lock.acquire_for_task(args, False, False) is None
  lock = train_dir_lock.acquire_for_task(args, True, False, log=print)
  assert lock is not None
  lock.release()
