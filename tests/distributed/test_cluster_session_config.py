"""--num_intra_threads and --num_inter_threads in a cluster: in the
ConfigProto of every task's server (whose thread pools run the steps' ops)
and of its sessions, PS tasks and workers alike."""

import os

import pytest
import tensorflow as _tf

from variable_mgr.benchmark.cluster import ps_task
from variable_mgr.benchmark.cluster import servers
from variable_mgr.benchmark.cluster import task_spec
from variable_mgr.benchmark.cluster import worker_task
from variable_mgr.benchmark.flags import command_line as flags_lib

tf = _tf.compat.v1


def _args(job, more):
  return flags_lib.parse_task_args(
      ['--job_name', job, '--task_index', '0', '--ps_hosts', '127.0.0.1:1',
       '--worker_hosts', '127.0.0.1:2', '--variable_update',
       'parameter_server', '--model', 'trivial', '--num_gpus', '2'] + more,
      environ={})


# One inter-op thread more than the processors this process may run on.
SPARE = len(os.sched_getaffinity(0)) + 1


@pytest.mark.parametrize('flags,intra,inter', [
    ([], 0, SPARE),
    (['--num_inter_threads', '0'], 0, SPARE),
    (['--num_intra_threads', '3', '--num_inter_threads', '2'], 3, 2),
    (['--num_inter_threads', '1'], 0, 1),
])
def test_thread_flags_reach_every_server_and_session_config(flags, intra,
                                                            inter):
  """--num_intra_threads/--num_inter_threads in the ConfigProto of a
  task's server (whose pools run the steps) and of its sessions, for a PS
  and a worker alike; unset, TensorFlow's intra-op choice (0) and one
  inter-op thread more than the task's processors."""
  for job in ('ps', 'worker'):
    args = _args(job, flags)
    spec = task_spec.from_flags(job, 0, args.ps_hosts, args.worker_hosts)
    for config in (servers.server_config(tf, args, 2),
                   servers.session_config(tf, spec, args, 2)):
      assert config.intra_op_parallelism_threads == intra
      assert config.inter_op_parallelism_threads == inter
      assert config.device_count['CPU'] == 2


@pytest.mark.parametrize('processors', [{0}, {0, 1, 2}])
def test_unset_inter_threads_are_the_processors_plus_one(monkeypatch,
                                                         processors):
  """A worker held to one processor gets a pool of 2 inter-op threads
  (TensorFlow's own: 1), one of three gets 4; a server started without
  flags too."""
  monkeypatch.setattr(os, 'sched_getaffinity', lambda pid: set(processors))
  expected = len(processors) + 1
  assert servers.inter_op_threads(_args('worker', [])) == expected
  assert servers.inter_op_threads(None) == expected
  assert servers.server_config(tf, None, 1).inter_op_parallelism_threads == (
      expected)


class _Started(Exception):
  pass


@pytest.mark.parametrize('job', ['ps', 'worker'])
def test_every_task_starts_its_server_with_the_thread_flags(monkeypatch,
                                                            job):
  """A PS task and a worker hand their flags to the server they start
  (which makes the config above): the server's config gets the flags."""
  configs = []

  def server(cluster, job_name, task_index, config, start):
    del cluster, job_name, task_index, start
    configs.append(config)
    raise _Started()

  monkeypatch.setattr(tf.train, 'Server', server)
  args = _args(job, ['--num_intra_threads', '3', '--num_inter_threads', '2'])
  spec = task_spec.from_flags(job, 0, args.ps_hosts, args.worker_hosts)
  with pytest.raises(_Started):
    if job == 'ps':
      ps_task.run_ps(spec, args, log=lambda line: None)
    else:
      from variable_mgr.benchmark.training import run_config  # pylint: disable=g-import-not-at-top
      worker_task.run_worker(spec, run_config.from_args(args), args,
                             log=lambda line: None)
  assert len(configs) == 1
  assert configs[0].intra_op_parallelism_threads == 3
  assert configs[0].inter_op_parallelism_threads == 2


@pytest.mark.parametrize('job,filters', [
    ('ps', ['/job:ps/replica:0/task:0']),
    ('worker', ['/job:ps', '/job:worker/replica:0/task:0'])])
def test_a_session_sees_its_task_and_the_ps_and_waits_op_timeout_secs(
    job, filters):
  """A call of a task's session ends after --op_timeout_secs, which
  ConfigProto takes in milliseconds."""
  args = _args(job, ['--op_timeout_secs', '2.5'])
  spec = task_spec.from_flags(job, 0, args.ps_hosts, args.worker_hosts)
  config = servers.session_config(tf, spec, args, 2)
  assert config.operation_timeout_in_ms == 2500
  assert list(config.device_filters) == filters
  assert not config.allow_soft_placement


def test_the_controller_s_session_sees_the_workers_and_waits_op_timeout_secs():
  """distributed_all_reduce's controller: its one session runs on the
  workers only, with --op_timeout_secs in milliseconds and worker 0 the
  collective group leader."""
  from variable_mgr.benchmark.cluster import controller_task  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.training import run_config  # pylint: disable=g-import-not-at-top
  args = flags_lib.parse_task_args(
      ['--job_name', 'controller', '--controller_host', '127.0.0.1:1',
       '--worker_hosts', '127.0.0.1:2,127.0.0.1:3', '--variable_update',
       'distributed_all_reduce', '--all_reduce_spec', 'xring', '--model',
       'trivial', '--op_timeout_secs', '2.5', '--num_intra_threads', '3'],
      environ={})
  config = controller_task.session_config(args, run_config.from_args(args))
  assert config.operation_timeout_in_ms == 2500
  assert list(config.device_filters) == ['/job:worker']
  assert not config.allow_soft_placement
  assert (config.experimental.collective_group_leader ==
          '/job:worker/replica:0/task:0')
  assert config.intra_op_parallelism_threads == 3
