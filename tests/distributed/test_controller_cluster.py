"""--variable_update=distributed_all_reduce on a loopback cluster: two
workers that serve and a controller that runs the one graph.

Steps against NumPy (the sum over the 4 towers, the strategy's default),
an exact resume from the checkpoint, a dead worker and a dead controller
named by every survivor, and the flags' refusals.
"""

import os
import signal
import time

import numpy as np
import pytest

import clusterlib
from variable_mgr.benchmark import distributed
from variable_mgr.benchmark.cluster import controller_task
from variable_mgr.benchmark.cluster import task_spec
from variable_mgr.benchmark.flags import command_line as cli_flags

WORKERS = 2
OP_TIMEOUT = 20


def _flags(*more):
  return clusterlib.BASE_FLAGS + [
      '--variable_update', 'distributed_all_reduce', '--all_reduce_spec',
      'pscpu/xring', '--num_workers', str(WORKERS), '--device', 'cpu',
      '--op_timeout_secs', str(OP_TIMEOUT)] + list(more)


def _sum_reference(values, steps):
  """w[t+1] = w[t] - lr * sum over the 4 towers of g(w[t])."""
  batches = clusterlib.tower_batches(WORKERS * clusterlib.TOWERS)
  current = dict((k, v.astype(np.float64)) for k, v in values.items())
  for _ in range(steps):
    grads = [clusterlib.gradients(current, b) for b in batches]
    current = dict((k, current[k] - clusterlib.LEARNING_RATE *
                    sum(g[k] for g in grads)) for k in current)
  return current


def test_a_resumed_run_continues_exactly(launch, tmp_path):
  """A checkpoint of NumPy's variables after 3 steps: the cluster restores
  it on every tower of both workers and trains 2 steps; the checkpoint it
  writes holds NumPy's variables after 5 steps from the start, and its
  global step counts on from the checkpoint's."""
  train_dir = str(tmp_path / 'train')
  initial = clusterlib.initial_values(seed=3)
  after_3 = dict((k, v.astype(np.float32))
                 for k, v in _sum_reference(initial, 3).items())
  # At global step 0: --num_batches then counts the same steps whether it
  # counts from the restored step or from 0.
  clusterlib.write_checkpoint(train_dir, after_3, 0)
  cluster = launch(_flags('--train_dir', train_dir, '--num_batches', '2'))
  assert cluster.finish() == 0, cluster.output
  clusterlib.assert_all_gone(cluster)
  assert sorted(cluster.tasks()) == ['controller', 'worker:0', 'worker:1']
  assert any('cluster total images/sec' in l for l in cluster.lines)
  values, step = clusterlib.read_checkpoint(train_dir)
  assert step == 2
  clusterlib.assert_close(values, _sum_reference(initial, 5))


def test_without_device_a_machine_without_gpus_serves_every_tower(
    launch, tmp_path):
  """Without --device (tf_cnn_benchmarks' gpu), on a machine without GPUs
  each worker serves its 2 towers on CPUs of its own, as with --device=cpu:
  2 steps from a checkpoint give NumPy's variables."""
  from variable_mgr.benchmark.training import run_config  # pylint: disable=g-import-not-at-top
  if run_config.gpu_count():
    pytest.skip('this machine has GPUs: without --device the towers run '
                'on them')
  train_dir = str(tmp_path / 'train')
  initial = clusterlib.initial_values(seed=5)
  clusterlib.write_checkpoint(train_dir, initial, 0)
  flags = _flags('--train_dir', train_dir, '--num_batches', '2')
  at = flags.index('--device')
  del flags[at:at + 2]
  cluster = launch(flags)
  assert cluster.finish() == 0, cluster.output
  clusterlib.assert_all_gone(cluster)
  values, step = clusterlib.read_checkpoint(train_dir)
  assert step == 2
  clusterlib.assert_close(values, _sum_reference(initial, 2))


def _kill(launch, victim):
  """Kills `victim` mid-run; returns the finished cluster, after checking
  that it ended with status 1 within its bound, leaving no process."""
  cluster = launch(_flags('--num_batches', '100000'))
  cluster.wait_for_line(r'^\[controller\] 2\t', step=2)
  pids = cluster.tasks()
  os.kill(pids[victim], signal.SIGKILL)
  killed_at = time.time()
  bound = cluster.deadlines.stop
  assert cluster.finish(bound) == 1, cluster.output
  assert time.time() - killed_at < bound, cluster.output
  clusterlib.assert_all_gone(cluster)
  summary = [l for l in cluster.lines if l.startswith('launcher: error:')]
  assert summary and summary[0].startswith(
      'launcher: error: %s failed first (killed by SIGKILL)' % victim), (
          cluster.output)
  return cluster, pids


def _check_named(cluster, pids, victim):
  for name in pids:
    if name == victim:
      continue
    errors = [l for l in cluster.lines
              if l.startswith('[%s] variable_mgr_benchmark: error:' % name)]
    assert len(errors) == 1, cluster.output
    assert 'dead task: %s at 127.0.0.1:' % victim in errors[0], errors[0]


@pytest.mark.long
def test_a_dead_worker_is_named_by_every_survivor(launch):
  _check_named(*_kill(launch, 'worker:1'), victim='worker:1')


@pytest.mark.network_cluster
def test_a_dead_controller_is_named_by_every_worker(launch):
  """(A long run: with --network-cluster only.)"""
  _check_named(*_kill(launch, 'controller'), victim='controller')


# -- Refusals of the command line ---------------------------------------------


def _refused(capsys, argv):
  assert distributed.main(argv) == 2
  return capsys.readouterr().err.strip()


TASK = ['--variable_update=distributed_all_reduce', '--all_reduce_spec=xring',
        '--worker_hosts=127.0.0.1:2223,127.0.0.1:2224']


@pytest.mark.parametrize('argv,fragments', [
    (['--launch_local_cluster', '--variable_update=distributed_all_reduce'],
     ['all_reduce_spec=None', "'pscpu/pscpu'"]),
    (['--launch_local_cluster', '--variable_update=distributed_all_reduce',
      '--all_reduce_spec=nccl'], ["'nccl' at position 0", '"nccl/xring"']),
    (['--launch_local_cluster', '--num_ps=2'] + TASK[:2],
     ['--num_ps=2 with --variable_update=distributed_all_reduce',
      'drop --num_ps']),
    (['--job_name=worker'] + TASK,
     ['needs --controller_host', '--controller_host=10.0.0.1:2222']),
    (['--job_name=ps', '--controller_host=127.0.0.1:2222'] + TASK,
     ['--job_name=ps with', 'pass --job_name=controller or worker']),
    (['--job_name=controller', '--controller_host=127.0.0.1:2222',
      '--ps_hosts=127.0.0.1:2230'] + TASK,
     ['--ps_hosts=127.0.0.1:2230 with', 'drop --ps_hosts']),
    (['--job_name=controller', '--controller_host=127.0.0.1:2223'] + TASK,
     ['127.0.0.1:2223 appears twice']),
    (['--job_name=worker', '--controller_host=10.0.0.1'] + TASK,
     ["host '10.0.0.1': every cluster address must be host:port",
      "'10.0.0.1:2222'"]),
    (['--job_name=controller', '--controller_host=127.0.0.1:2222'] +
     TASK[:2] + ['--worker_hosts=127.0.0.1:2223,127.0.0.1:70000'],
     ["host '127.0.0.1:70000'", 'a port in 1..65535']),
    (['--job_name=controller', '--variable_update=collective_all_reduce',
      '--worker_hosts=127.0.0.1:2223', '--ps_hosts=127.0.0.1:2224'],
     ['--job_name=controller with --variable_update=collective_all_reduce',
      'pass that, or --job_name=ps or worker']),
    (['--job_name=worker', '--task_index=0', '--controller_host=127.0.0.1:1',
      '--variable_update=parameter_server', '--ps_hosts=127.0.0.1:2224',
      '--worker_hosts=127.0.0.1:2223'],
     ['--controller_host=127.0.0.1:1 with', 'drop --controller_host']),
    (['--job_name=worker', '--controller_host=127.0.0.1:2222',
      '--variable_update=distributed_all_reduce', '--all_reduce_spec=xring'],
     ['--worker_hosts is empty', '--worker_hosts=10.0.0.2:2222']),
    (['--job_name=worker', '--task_index=2',
      '--controller_host=127.0.0.1:2222'] + TASK,
     ['--job_name=worker --task_index=2', 'the worker job has 2 tasks (0..1)']),
    (['--job_name=controller', '--task_index=1',
      '--controller_host=127.0.0.1:2222'] + TASK,
     ['the controller is task 0 of its job']),
    (['--launch_local_cluster', '--variable_update=horovod'],
     ['--variable_update=horovod', 'Horovod is not part of this benchmark',
      '--variable_update=collective_all_reduce']),
])
def test_refused(capsys, argv, fragments):
  message = _refused(capsys, argv)
  for fragment in fragments:
    assert fragment in message, (fragment, message)


@pytest.mark.parametrize('job, hosts', [
    ('worker', ['--controller_host=10.0.0.1',
                '--worker_hosts=127.0.0.1:2223,127.0.0.1:2224']),
    ('controller', ['--controller_host=127.0.0.1:2222',
                    '--worker_hosts=127.0.0.1:2223,127.0.0.1:70000'])])
def test_a_bad_address_is_refused_before_the_task_serves(job, hosts):
  """The task's spec refuses it (the tasks would fail only when they
  reach the address, after their servers started)."""
  args = cli_flags.parse_task_args(TASK[:2] + hosts + ['--job_name=' + job],
                                   environ={})
  with pytest.raises(task_spec.HostAddressError,
                     match='every cluster address must be host:port'):
    controller_task.resolve(args, environ={})


def test_a_run_on_one_machine_is_refused():
  with pytest.raises(cli_flags.UsageError, match='needs a cluster'):
    cli_flags.parse_args(['--variable_update=distributed_all_reduce',
                          '--all_reduce_spec=xring'])


def test_tf_config_is_refused():
  with pytest.raises(cli_flags.UsageError,
                     match='TF_CONFIG has no controller task'):
    cli_flags.parse_task_args(TASK[:2], environ={'TF_CONFIG': (
        '{"cluster": {"worker": ["127.0.0.1:2223"]}, '
        '"task": {"type": "worker", "index": 0}}')})
