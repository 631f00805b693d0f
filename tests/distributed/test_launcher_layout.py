"""The cluster `--launch_local_cluster` starts for each strategy
(`cluster.launcher.main`, with a stand-in cluster that records what it is
asked for and finishes at once): --num_ps PS tasks and the workers, or
under distributed_all_reduce the workers and a controller, no PS."""

import io

import pytest

from variable_mgr.benchmark.cluster import launcher
from variable_mgr.benchmark.cluster import netns
from variable_mgr.benchmark.flags import command_line


class _Cluster(object):
  made = []

  def __init__(self, num_ps, num_workers, argv, output_dir, op_timeout,
               out, network, controller=False):
    del argv, output_dir, op_timeout, out, network
    _Cluster.made.append((num_ps, num_workers, controller))
    self.ps_hosts = ['127.0.0.1:1'] * num_ps
    self.worker_hosts = ['127.0.0.1:2'] * num_workers
    self.controller_host = '127.0.0.1:3' if controller else None
    self.tasks = []

  def start(self):
    pass

  def wait(self):
    return None  # Every task succeeded.

  def stop(self):
    pass

  def worker_results(self):
    return [{'images_per_sec': 10.0} for _ in self.worker_hosts]


@pytest.mark.parametrize('update,extra,want', [
    ('parameter_server', [], (2, 3, False)),
    ('distributed_replicated', [], (2, 3, False)),
    ('collective_all_reduce', [], (2, 3, False)),
    ('distributed_all_reduce', ['--all_reduce_spec=xring'], (0, 3, True)),
])
def test_the_tasks_of_each_strategy(monkeypatch, update, extra, want):
  monkeypatch.setattr(launcher, 'LocalCluster', _Cluster)
  _Cluster.made = []
  ps = [] if update == 'distributed_all_reduce' else ['--num_ps=2']
  argv = ['--launch_local_cluster', '--model=trivial', '--num_workers=3',
          '--variable_update=%s' % update] + ps + extra
  args = command_line.parse_args(argv, environ={})
  out = io.StringIO()
  assert launcher.main(args, argv, out) == 0, out.getvalue()
  assert _Cluster.made == [want]


class _Host(object):
  def __init__(self, index):
    self.address = '10.9.0.%d' % (index + 1)


class _Network(object):
  def __init__(self, count):
    self.hosts = [_Host(k) for k in range(count)]


@pytest.mark.parametrize('num_ps, num_workers, controller', [
    (2, 3, False), (1, 1, False), (0, 3, True)])
def test_on_a_network_each_task_runs_in_the_host_of_its_address(
    tmp_path, num_ps, num_workers, controller):
  """With --network_rate every task is a host of its own: a task starts
  in the namespace of the address the others reach it at (PS tasks, then
  workers, a controller last), one task a host."""
  network = _Network(num_ps + num_workers + (1 if controller else 0))
  cluster = launcher.LocalCluster(num_ps, num_workers, [], str(tmp_path), 5,
                                  network=network, controller=controller)
  tasks = cluster.task_argvs()
  assert len(tasks) == len(network.hosts)
  for name, address, _, host in tasks:
    assert address == '%s:%d' % (host.address, netns.PORT), name
  assert len(set(id(host) for _, _, _, host in tasks)) == len(tasks)
  names = [name for name, _, _, _ in tasks]
  assert names[-1] == ('controller' if controller else
                       'worker:%d' % (num_workers - 1))
