"""The cluster `--launch_local_cluster` starts for each strategy
(`cluster.launcher.main`, with a stand-in cluster that records what it is
asked for and finishes at once): --num_ps PS tasks and the workers, or
under distributed_all_reduce the workers and a controller, no PS."""

import io

import pytest

from variable_mgr.benchmark.cluster import launcher
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
