"""Cluster flags and TF_CONFIG: each mistake gives one error that names the
value, the rule and the fix."""

import json

import pytest

from variable_mgr import errors
from variable_mgr.benchmark import distributed
from variable_mgr.benchmark.cluster import launcher
from variable_mgr.benchmark.cluster import task_spec
from variable_mgr.benchmark.cluster import worker_task
from variable_mgr.benchmark.flags import command_line as cli_flags
from variable_mgr.benchmark.runs import in_process

PS = ['127.0.0.1:2222']
WORKERS = ['127.0.0.1:2223', '127.0.0.1:2224']


def _env(config):
  return {'TF_CONFIG': config if isinstance(config, str)
          else json.dumps(config)}


def test_flags_give_the_task():
  spec = task_spec.resolve('worker', 1, ','.join(PS), ','.join(WORKERS), {})
  assert spec == task_spec.TaskSpec('worker', 1, PS, WORKERS)
  assert spec.name == 'worker:1' and not spec.is_chief
  assert spec.address == WORKERS[1]


def test_tf_config_chief_is_worker_zero():
  spec = task_spec.resolve(environ=_env({
      'cluster': {'chief': WORKERS[:1], 'worker': WORKERS[1:], 'ps': PS},
      'task': {'type': 'worker', 'index': 0}}))
  assert spec == task_spec.TaskSpec('worker', 1, PS, WORKERS)
  chief = task_spec.resolve(environ=_env({
      'cluster': {'chief': WORKERS[:1], 'worker': WORKERS[1:], 'ps': PS},
      'task': {'type': 'chief', 'index': 0}}))
  assert chief.is_chief


def test_tf_config_and_flags_together_are_refused():
  with pytest.raises(task_spec.MissingTaskError) as e:
    task_spec.resolve('ps', 0, PS, WORKERS, _env('not json'))
  assert str(e.value) == (
      'TF_CONFIG is set and --job_name, --ps_hosts, --worker_hosts given '
      'too: a task is described by the flags or by TF_CONFIG, not both; '
      'unset TF_CONFIG or drop --job_name, --ps_hosts, --worker_hosts.')


def test_no_cluster_is_a_local_run():
  assert task_spec.resolve(environ={}) is None


def test_malformed_json():
  with pytest.raises(task_spec.MalformedTfConfigError) as e:
    task_spec.resolve(environ=_env('{"cluster": {"ps": ['))
  message = str(e.value)
  assert 'TF_CONFIG=\'{"cluster": {"ps": [\'' in message
  assert 'is not valid JSON' in message and 'set it to an object' in message
  assert isinstance(e.value, errors.VariableMgrError)


def test_missing_task():
  with pytest.raises(task_spec.MissingTaskError) as e:
    task_spec.resolve(environ=_env({'cluster': {'ps': PS,
                                                'worker': WORKERS}}))
  assert 'has no "task"' in str(e.value)
  assert '"task": {"type": "worker", "index": 0}' in str(e.value)


def test_task_type_not_in_cluster():
  with pytest.raises(task_spec.MissingTaskError) as e:
    task_spec.resolve(environ=_env({'cluster': {'ps': PS,
                                                'worker': WORKERS},
                                    'task': {'type': 'chief', 'index': 0}}))
  assert "task type 'chief'" in str(e.value)


def test_index_out_of_range():
  with pytest.raises(task_spec.TaskIndexError) as e:
    task_spec.resolve(environ=_env({'cluster': {'ps': PS,
                                                'worker': WORKERS},
                                    'task': {'type': 'worker', 'index': 2}}))
  assert 'task index 2 is out of range' in str(e.value)
  assert 'the index must be 0..1' in str(e.value)


def test_flag_index_out_of_range():
  with pytest.raises(task_spec.TaskIndexError) as e:
    task_spec.resolve('ps', 1, PS, WORKERS, {})
  assert '--task_index=1' in str(e.value)
  assert 'the ps job has 1 task(s)' in str(e.value)


def test_host_without_port():
  with pytest.raises(task_spec.HostAddressError) as e:
    task_spec.resolve('worker', 0, '127.0.0.1', WORKERS, {})
  assert "host '127.0.0.1'" in str(e.value)
  assert "'127.0.0.1:2222'" in str(e.value)


def test_tf_config_host_without_port():
  with pytest.raises(task_spec.HostAddressError):
    task_spec.resolve(environ=_env({'cluster': {'ps': ['ps0'],
                                                'worker': WORKERS},
                                    'task': {'type': 'ps', 'index': 0}}))


def test_hosts_without_job_name():
  with pytest.raises(task_spec.MissingTaskError) as e:
    task_spec.resolve(None, 0, PS, WORKERS, {})
  assert 'without --job_name' in str(e.value)


def test_bad_flag_in_a_task_exits_2(capsys):
  status = distributed.main(['--variable_update', 'parameter_server',
                             '--job_name', 'worker', '--task_index', '3',
                             '--ps_hosts', PS[0], '--worker_hosts',
                             ','.join(WORKERS)])
  assert status == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1 and 'out of range' in err[0]


def test_async_distributed_replicated_is_refused():
  with pytest.raises(worker_task.ClusterOptionsError) as e:
    worker_task._check_options(
        type('Config', (), {'variable_update': 'distributed_replicated'}),
        sync=False)
  assert 'asynchronous updates exist only for parameter_server' in str(
      e.value)


def test_launcher_refuses_task_flags(capsys):
  args = cli_flags.build_parser().parse_args(
      ['--launch_local_cluster', '--job_name', 'ps'])
  assert launcher.main(args, ['--launch_local_cluster', '--job_name',
                              'ps']) == 2
  assert '--launch_local_cluster picks every task' in capsys.readouterr().err


def test_free_ports_are_distinct_loopback_ports():
  ports = in_process.free_ports(5)
  assert len(set(ports)) == 5


def test_a_port_is_1_to_65535():
  assert task_spec.split_address('127.0.0.1:65535') == ('127.0.0.1', 65535)
  assert task_spec.split_address('localhost:1') == ('localhost', 1)
  for address in ('127.0.0.1:65536', '127.0.0.1:0', '127.0.0.1:'):
    with pytest.raises(task_spec.HostAddressError) as e:
      task_spec.split_address(address)
    assert 'host %r' % address in str(e.value)
    assert 'a port in 1..65535' in str(e.value)


def test_a_task_command_without_a_task_is_a_cluster_task(capsys):
  """`python -m variable_mgr.benchmark.distributed` reads the flags of a
  cluster task even without --job_name: a strategy of one machine is
  refused as such, not run."""
  assert distributed.main(['--variable_update', 'replicated']) == 2
  assert capsys.readouterr().err.strip().endswith(
      '--variable_update=replicated runs on one machine only, not as a '
      'cluster task (--job_name); pass --variable_update=parameter_server, '
      'distributed_replicated, collective_all_reduce or '
      'distributed_all_reduce')


def test_launched_tasks_get_an_address_each_and_the_same_host_lists():
  cluster = launcher.LocalCluster(2, 3, ['--model=trivial'], '/tmp/out', 5.0)
  argvs = cluster.task_argvs()
  addresses = [address for _, address, _, _ in argvs]
  assert [name for name, _, _, _ in argvs] == [
      'ps:0', 'ps:1', 'worker:0', 'worker:1', 'worker:2']
  assert len(set(addresses)) == 5
  assert addresses == cluster.ps_hosts + cluster.worker_hosts
  for name, address, argv, _ in argvs:
    job, index = name.split(':')
    spec = task_spec.from_flags(
        job, int(index),
        [a for a in argv if a.startswith('--ps_hosts=')][0].split('=')[1],
        [a for a in argv if a.startswith('--worker_hosts=')][0].split('=')[1])
    assert spec.address == address
    assert argv[0] == '--model=trivial'


def test_a_tasks_status_reads_as_its_exit_or_its_signal():
  assert launcher.describe_status(None) == 'still running'
  assert launcher.describe_status(0) == 'exit status 0'
  assert launcher.describe_status(1) == 'exit status 1'
  assert launcher.describe_status(-9) == 'killed by SIGKILL'
  assert launcher.describe_status(-15) == 'killed by SIGTERM'
