"""A task whose own link is down says so, on the namespace cluster.

1 PS + 2 workers, each task in a namespace of its own on links of
200mbit; one task's link is taken down mid-run (its bridge port). That task
reaches none of its two peers, not even a refusal: its error says its own
link or network looks down and names its own address, instead of naming
both peers dead; every other task still names it, the task behind the
link. Synchronous and asynchronous parameter_server, the link of a worker,
of the PS and of the chief.

Long runs: `network_cluster`, run with pytest's `--network-cluster`; they
skip, saying why, without root or namespaces.
"""

import re

import pytest

import clusterlib

OP_TIMEOUT = 5
RATE = '200mbit'

pytestmark = pytest.mark.network_cluster

STRATEGIES = [
    ('parameter_server', ['--variable_update', 'parameter_server']),
    ('asynchronous_parameter_server', ['--variable_update',
                                       'parameter_server',
                                       '--cross_replica_sync=false']),
]


def _error(cluster, name):
  lines = [l for l in cluster.lines
           if l.startswith('[%s] variable_mgr_benchmark: error:' % name)]
  assert len(lines) == 1, cluster.output
  return lines[0]


@pytest.mark.parametrize('victim', ['worker:1', 'ps:0', 'worker:0'],
                         ids=['worker', 'ps', 'chief'])
@pytest.mark.parametrize('name,strategy_flags', STRATEGIES,
                         ids=[n for n, _ in STRATEGIES])
def test_a_task_whose_link_is_down_blames_its_own_link(
    network_host, launch, name, strategy_flags, victim):
  del network_host, name
  cluster = launch(clusterlib.BASE_FLAGS + strategy_flags + [
      '--num_ps', '1', '--num_workers', '2', '--num_batches', '100000',
      '--op_timeout_secs', str(OP_TIMEOUT), '--network_rate', RATE])
  cluster.wait_for_line(r'^\[worker:1\] 3\t', step=3)
  cluster.wait_for_line(r'^\[worker:0\] 3\t', step=3)
  addresses = dict((n, cluster.address(n)) for n in cluster.tasks())
  cluster.network().set_link(cluster.hosts()[victim], False)
  bound = cluster.deadlines.stop
  assert cluster.finish(bound) == 1, cluster.output
  clusterlib.assert_all_gone(cluster)
  assert cluster.lines[-1] == 'launcher: network removed', cluster.output
  peers = sorted(n for n in addresses if n != victim)
  own = _error(cluster, victim)
  assert re.search(
      r'error: task %s at %s reaches none of the other tasks \(%s: no '
      r'connection\): its own link or network looks down' % (
          victim, re.escape(addresses[victim]), ', '.join(
              '%s at %s' % (p, re.escape(addresses[p])) for p in peers)),
      own), (own, cluster.output)
  assert 'dead task' not in own, (own, cluster.output)
  for peer in peers:
    line = _error(cluster, peer)
    assert re.search(r'dead tasks?: .*%s at %s \(stopped answering\)' % (
        victim, re.escape(addresses[victim])), line), (peer, line,
                                                      cluster.output)
    assert 'own link' not in line, (peer, line, cluster.output)
