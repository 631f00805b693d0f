"""What a cluster refuses, refused before any task or server starts.

Each refused combination, given to the launcher (`--launch_local_cluster`)
and to one task (`--job_name ...`), ends the command with status 2 and one
line on stderr naming the flag as typed, the rule and the fix; nothing is
printed on stdout, no task is started and no gRPC server.
"""

import pytest

from variable_mgr.benchmark import distributed
from variable_mgr.benchmark.cluster import launcher
from variable_mgr.benchmark.cluster import servers

PREFIX = 'variable_mgr_benchmark: error: '
BASE = ['--model', 'trivial', '--num_gpus', '2', '--num_batches', '2']
TASK = ['--job_name', 'worker', '--task_index', '0', '--ps_hosts',
        '127.0.0.1:1', '--worker_hosts', '127.0.0.1:2,127.0.0.1:3']
PS = ['--variable_update', 'parameter_server']

# (id, flags, what the line must contain, in order).
REFUSED = [
    ('forward_only', PS + ['--forward_only'],
     ['--forward_only=true in a cluster run', 'one machine only',
      'drop --forward_only']),
    ('eval_during_training', PS + [
        '--data_name', 'digits', '--eval_during_training_every_n_steps', '5'],
     ['--eval_during_training_every_n_steps=5 in a cluster run',
      'drop --eval_during_training_every_n_steps']),
    ('one_machine_strategy', ['--variable_update', 'replicated'],
     ['--variable_update=replicated runs on one machine only',
      'pass --variable_update=parameter_server']),
    ('asynchronous_replicas', ['--variable_update', 'distributed_replicated',
                               '--cross_replica_sync=false'],
     ['--cross_replica_sync=false with --variable_update='
      'distributed_replicated', 'exist only for parameter_server',
      '--variable_update=parameter_server']),
    ('summary_dir', PS + ['--summary_dir', '/tmp/never_written'],
     ['--summary_dir=/tmp/never_written', 'a cluster run does not',
      'drop --summary_dir']),
    ('save_model_secs_without_train_dir', PS + ['--save_model_secs', '5'],
     ['--save_model_secs=5 without --train_dir', 'add --train_dir=DIR']),
]


@pytest.fixture
def nothing_starts(monkeypatch):
  started = []

  def forbidden(what):
    def start(*args, **kwargs):
      del args, kwargs
      started.append(what)
      raise AssertionError('%s started' % what)
    return start

  monkeypatch.setattr(servers, 'start_server', forbidden('a server'))
  monkeypatch.setattr(launcher.LocalCluster, 'start', forbidden('a task'))
  monkeypatch.setattr(launcher, 'main', forbidden('the launcher'))
  monkeypatch.delenv('TF_CONFIG', raising=False)
  yield started
  assert started == []


@pytest.mark.parametrize('mode', ['launcher', 'task'])
@pytest.mark.parametrize('flags,expected', [r[1:] for r in REFUSED],
                         ids=[r[0] for r in REFUSED])
def test_refused_before_anything_starts(nothing_starts, capsys, mode, flags,
                                        expected):
  del nothing_starts
  argv = BASE + flags + (['--launch_local_cluster'] if mode == 'launcher'
                         else TASK)
  status = distributed.main(argv)
  captured = capsys.readouterr()
  assert status == 2, captured
  assert captured.out == '', captured.out
  lines = captured.err.splitlines()
  assert len(lines) == 1, captured.err
  assert lines[0].startswith(PREFIX), lines
  position = 0
  for part in expected:
    found = lines[0].find(part, position)
    assert found >= 0, (part, lines[0])
    position = found + len(part)


def test_a_ps_task_refuses_what_its_workers_manager_would(nothing_starts,
                                                          capsys):
  """A configuration the workers' manager refuses (staged_vars under
  distributed_replicated) is refused by a PS task too, before its server
  starts: a PS does not serve a cluster whose workers will not run."""
  del nothing_starts
  argv = BASE + ['--variable_update', 'distributed_replicated',
                 '--staged_vars', '--job_name', 'ps', '--task_index', '0',
                 '--ps_hosts', '127.0.0.1:1', '--worker_hosts',
                 '127.0.0.1:2,127.0.0.1:3']
  status = distributed.main(argv)
  captured = capsys.readouterr()
  assert status == 2, captured
  assert captured.err == PREFIX + (
      "staged_vars=True with variable_update='distributed_replicated': this "
      'option exists only for parameter_server; drop it or use '
      'parameter_server.\n')


@pytest.mark.parametrize('job', ['ps', 'worker'])
def test_a_dangling_checkpoint_is_refused_by_every_task(nothing_starts,
                                                        capsys, tmp_path,
                                                        job):
  """A `checkpoint` file that points at missing files is refused by a PS
  task and a worker alike, naming it, before any server starts."""
  del nothing_starts
  (tmp_path / 'checkpoint').write_text(
      'model_checkpoint_path: "model.ckpt-5"\n'
      'all_model_checkpoint_paths: "model.ckpt-5"\n')
  argv = BASE + PS + ['--job_name', job, '--task_index', '1' if job ==
                      'worker' else '0', '--ps_hosts', '127.0.0.1:1',
                      '--worker_hosts', '127.0.0.1:2,127.0.0.1:3',
                      '--train_dir', str(tmp_path)]
  status = distributed.main(argv)
  captured = capsys.readouterr()
  assert status == 2, captured
  lines = captured.err.splitlines()
  assert len(lines) == 1 and lines[0].startswith(PREFIX), captured.err
  assert str(tmp_path / 'checkpoint') in lines[0], lines[0]
  assert 'model.ckpt-5' in lines[0], lines[0]
