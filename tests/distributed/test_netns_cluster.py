"""Clusters of hosts on one machine: `--launch_local_cluster --network_rate`.

Every task runs in a network namespace of its own on a bridge, its link
shaped both ways (variable_mgr.benchmark.cluster.netns). The quick tests
(the links' measured speed, the refusals, the clean-up, one strategy
against NumPy, who can reach a task's port) run by default; the
`network_cluster` ones (every strategy against its loopback run) only with
pytest's `--network-cluster`. Without root or namespaces they skip, saying
why.
"""

import io
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import clusterlib
from variable_mgr.benchmark.cluster import launcher
from variable_mgr.benchmark.cluster import netns
from variable_mgr.benchmark.flags import command_line
from variable_mgr.benchmark.flags import value_types

STEPS = 3
RATE = '200mbit'


# -- Refusals: before anything starts -----------------------------------------


def test_not_linux_is_refused_naming_the_fix(monkeypatch):
  monkeypatch.setattr(netns.sys, 'platform', 'darwin')
  with pytest.raises(netns.NetworkUnavailableError) as e:
    netns.check_supported()
  assert str(e.value) == (
      '--network_rate runs every task in a Linux network namespace; this '
      'machine is \'darwin\': drop --network_rate to run the cluster over '
      '127.0.0.1.')


def test_missing_iproute2_is_refused_naming_the_fix(monkeypatch):
  monkeypatch.setattr(netns.sys, 'platform', 'linux')
  monkeypatch.setattr(netns.os, 'geteuid', lambda: 0)
  monkeypatch.setattr(netns.shutil, 'which',
                      lambda tool: None if tool == 'tc' else '/sbin/' + tool)
  with pytest.raises(netns.NetworkUnavailableError) as e:
    netns.check_supported()
  assert 'needs iproute2\'s tc, not found on PATH: install iproute2' in str(
      e.value)


def test_launcher_without_root_refuses_before_starting(monkeypatch, capsys):
  """Not root: status 2, one line naming uid, root and the fix; no
  namespace, no task, no output directory."""
  monkeypatch.setattr(netns.sys, 'platform', 'linux')
  monkeypatch.setattr(netns.os, 'geteuid', lambda: 1000)
  made = []
  monkeypatch.setattr(netns, 'run', lambda *a, **k: made.append(a))
  monkeypatch.setattr(launcher.tempfile, 'mkdtemp',
                      lambda **k: made.append(k))
  argv = ['--launch_local_cluster', '--network_rate', RATE, '--model',
          'trivial', '--variable_update', 'parameter_server']
  out = io.StringIO()
  status = launcher.main(command_line.parse_task_args(argv), argv, out)
  assert status == 2
  assert made == [] and out.getvalue() == ''
  assert capsys.readouterr().err == (
      'variable_mgr_benchmark: error: --network_rate needs root (network '
      'namespaces, veth pairs and tc qdiscs are privileged) and this process '
      'runs as uid 1000: run it as root with this Python (sudo "%s" -m ...: '
      'in a venv, sudo python runs another Python), or drop --network_rate to '
      'run the cluster over 127.0.0.1.\n' % sys.executable)


def test_tasks_get_neither_launch_flag():
  assert launcher.strip_launch_flag([
      '--launch_local_cluster', '--network_rate', '1gbit', '--model', 'x',
      '--network_rate=200mbit', '--num_ps', '1']) == [
          '--model', 'x', '--num_ps', '1']


@pytest.mark.parametrize('rate,text', [
    (200 * 10**6, '200mbit'), (10**9, '1gbit'), (1500 * 10**3, '1500kbit'),
    (2500 * 10**6, '2500mbit'), (999, '999bit'), (1001, '1001bit')])
def test_a_rate_is_written_in_tcs_units_without_rounding(rate, text):
  """The rate tc is given and the launcher prints: the largest of tc's
  decimal units that divides it, so that it is the rate asked for."""
  assert netns.rate_text(rate) == text
  if rate >= 1000:  # --network_rate's own reading gives the rate back.
    assert value_types.link_rate(text) == rate


# -- The network itself -------------------------------------------------------


def test_links_are_shaped_both_ways_and_removed(network_host):
  """Two hosts at 40mbit: single-stream TCP goodput is 80-102% of the rate
  each way; one link slowed to 8mbit carries 80-102% of that, each way;
  afterwards no namespace of the run is left."""
  del network_host
  rate = 40 * 10**6
  with netns.Network(2, rate) as network:
    a, b = network.hosts
    for sender, receiver in ((a, b), (b, a)):
      measured = netns.goodput(sender, receiver, seconds=1.5)
      assert 0.8 * rate < measured < 1.02 * rate, measured
    network.set_rate(b, rate // 5)
    for sender, receiver in ((a, b), (b, a)):
      measured = netns.goodput(sender, receiver, seconds=1.5)
      assert 0.8 * rate / 5 < measured < 1.02 * rate / 5, measured
    names = [network.switch] + [h.namespace for h in network.hosts]
    assert set(names) <= set(netns.namespaces())
  assert not set(names) & set(netns.namespaces())


def test_a_link_of_1mbit_carries_full_size_packets(network_host):
  """At 1mbit 10 ms of the rate is 1250 bytes, less than an Ethernet
  frame: the bucket holds at least MIN_BURST_BYTES, so full-size TCP
  segments pass and the goodput is the rate's."""
  del network_host
  rate = 10**6
  with netns.Network(2, rate) as network:
    a, b = network.hosts
    measured = netns.goodput(a, b, seconds=2.0)
    assert 0.8 * rate < measured < 1.02 * rate, measured


def test_a_link_taken_down_loses_its_carrier_and_comes_back_up(
    network_host):
  """set_link(host, False) downs the host's bridge port, so the host's own
  eth0 loses its carrier (the others keep theirs); set_link(host, True)
  gives it back."""
  del network_host

  def carrier(host):
    shown = netns.run(['ip', '-n', host.namespace, 'link', 'show',
                       netns.HOST_DEVICE])
    return 'NO-CARRIER' not in shown and 'state UP' in shown

  with netns.Network(2, 10**8) as network:
    a, b = network.hosts
    assert netns.wait_until(lambda: carrier(a) and carrier(b), 10)
    network.set_link(b, False)
    assert netns.wait_until(lambda: not carrier(b), 10)
    assert carrier(a)
    network.set_link(b, True)
    assert netns.wait_until(lambda: carrier(b), 10)


def test_a_failed_setup_removes_what_it_made(network_host, monkeypatch):
  """The tc of the second host fails: NetworkSetupError names the command
  and its stderr, and the namespaces made so far are gone."""
  del network_host
  real = netns.run

  def failing(command, check=True):
    if command[:3] == ['tc', '-n', 'vmgr%d-1' % os.getpid()]:
      command = command[:-2] + ['latency', 'never']
    return real(command, check)

  monkeypatch.setattr(netns, 'run', failing)
  network = netns.Network(3, 10**8)
  with pytest.raises(netns.NetworkSetupError) as e:
    network.create()
  assert '`tc -n vmgr%d-1 qdisc add dev eth0 root tbf' % os.getpid() in str(
      e.value)
  assert 'failed (exit status' in str(e.value)
  assert not [n for n in netns.namespaces()
              if n.startswith('vmgr%d-' % os.getpid())]


def test_leftovers_of_a_dead_run_are_removed(network_host):
  """A run killed before its clean-up leaves namespaces named by its pid;
  the next run of the prefix deletes them, and not those of a live run."""
  del network_host
  gone = subprocess.Popen([sys.executable, '-c', 'pass'])
  gone.wait()
  dead = netns.Network(2, None, prefix='vmgrleft', owner=gone.pid)
  live = netns.Network(1, None, prefix='vmgrleft', owner=os.getppid())
  for network in (dead, live):
    for name in [network.switch] + [h.namespace for h in network.hosts]:
      netns.run(['ip', 'netns', 'add', name])
  try:
    with netns.Network(1, None, prefix='vmgrleft'):
      names = netns.namespaces()
      assert not [n for n in names if n.startswith('vmgrleft%d-' % gone.pid)]
      assert live.switch in names
  finally:
    netns.remove_runs('vmgrleft', pid=os.getppid())
    netns.remove_runs('vmgrleft', pid=gone.pid)


# -- Clusters on the network --------------------------------------------------


def _train(launch, tmp_path, name, flags_, initial, network=True):
  """Trains STEPS steps from a checkpoint of `initial` (written before any
  task starts); returns (cluster, summary, variables, global step)."""
  train_dir = str(tmp_path / name)
  output = str(tmp_path / ('%s.json' % name))
  clusterlib.write_checkpoint(train_dir, initial, 0)
  cluster = launch(clusterlib.BASE_FLAGS + [
      '--train_dir', train_dir, '--num_batches', str(STEPS),
      '--op_timeout_secs', '30', '--output', output] + flags_ +
                   (['--network_rate', RATE] if network else []))
  status = cluster.finish()
  assert status == 0, cluster.output
  clusterlib.assert_all_gone(cluster)
  with open(output) as f:
    summary = json.load(f)
  values, step = clusterlib.read_checkpoint(train_dir)
  return cluster, summary, values, step


@pytest.mark.long
def test_parameter_server_on_namespaces_matches_numpy(network_host, launch,
                                                      tmp_path):
  """2 PS + 2 workers, each task at an address of its own: the variables
  after 3 steps are NumPy's; the network is gone afterwards."""
  del network_host
  initial = clusterlib.initial_values(seed=5)
  # The chief restores this checkpoint: written before any task starts.
  train_dir = str(tmp_path / 'train')
  clusterlib.write_checkpoint(train_dir, initial, 0)
  output = str(tmp_path / 'out.json')
  cluster = launch(clusterlib.BASE_FLAGS + [
      '--variable_update', 'parameter_server', '--num_ps', '2',
      '--num_workers', '2', '--train_dir', train_dir, '--num_batches',
      str(STEPS), '--op_timeout_secs', '30', '--output', output,
      '--network_rate', RATE])
  assert cluster.finish() == 0, cluster.output
  clusterlib.assert_all_gone(cluster)
  assert 'launcher: network: 4 hosts 10.77.0.1-4/24 on bridge br0 of ' \
         'namespace vmgr%d-sw, every link shaped to %s both ways' % (
             cluster.process.pid, RATE) in cluster.output
  assert cluster.hosts() == {'ps:0': 0, 'ps:1': 1, 'worker:0': 2,
                             'worker:1': 3}
  assert cluster.address('worker:1') == '10.77.0.4:%d' % netns.PORT
  assert cluster.lines[-1] == 'launcher: network removed'
  values, step = clusterlib.read_checkpoint(train_dir)
  assert step == STEPS
  clusterlib.assert_close(values, clusterlib.reference(initial, 2, STEPS))
  assert not [n for n in netns.namespaces()
              if n.startswith('vmgr%d-' % cluster.process.pid)]


@pytest.mark.long
def test_who_reaches_a_task(network_host, launch):
  """While a cluster trains: a host on the cluster's bridge that runs no
  task opens a TCP connection to every task's port (gRPC has no
  authentication: it could run ops there); a namespace with no link has no
  route to any; the machine's own namespace has no address of the subnet
  (its traffic to 10.77.0.x goes to its default route, never to a task).
  Ctrl-C then removes every namespace, the outsiders' as well."""
  del network_host
  cluster = launch(clusterlib.BASE_FLAGS + [
      '--variable_update', 'parameter_server', '--num_ps', '1',
      '--num_workers', '2', '--num_batches', '100000', '--op_timeout_secs',
      '10', '--network_rate', RATE])
  cluster.wait_for_line(r'^\[worker:1\] 2\t', step=2)
  network = cluster.network()
  on_bridge = network.add_outsider()
  detached = network.add_outsider(attached=False)
  for name in ('ps:0', 'worker:0', 'worker:1'):
    address = cluster.address(name)
    assert netns.probe(on_bridge, address) == 'reachable', name
    assert netns.probe(detached, address) == (
        'unreachable: Network is unreachable'), name
  # A port nothing listens on, for contrast: refused, not reachable.
  assert netns.probe(on_bridge, '10.77.0.1:%d' % (netns.PORT + 1)) == (
      'unreachable: Connection refused')
  own = netns.run(['ip', '-4', '-o', 'addr', 'show'])
  assert netns.SUBNET not in own, own
  os.kill(cluster.process.pid, signal.SIGINT)
  assert cluster.finish(cluster.deadlines.stop) == 130, cluster.output
  clusterlib.assert_all_gone(cluster)
  # The launcher removed its own namespaces; the outsiders are the test's.
  left = [n for n in netns.namespaces()
          if n.startswith('vmgr%d-' % cluster.process.pid)]
  assert sorted(left) == sorted([on_bridge.namespace, detached.namespace])
  network.remove()


# -- Every strategy: the namespace cluster equals the loopback run -------------

STRATEGIES = clusterlib.NETWORK_STRATEGIES
CASES = [(name, flags_, 'resource') for name, flags_ in STRATEGIES] + [
    (name, flags_, 'ref') for name, flags_ in STRATEGIES
    if name in ('parameter_server', 'collective_all_reduce')]


@pytest.mark.network_cluster
@pytest.mark.parametrize('name,strategy_flags,kind', CASES,
                         ids=['%s-%s' % (c[0], c[2]) for c in CASES])
def test_every_strategy_matches_its_loopback_run(network_host, launch,
                                                 tmp_path, name,
                                                 strategy_flags, kind):
  """1 PS + 2 workers (1 for asynchronous parameter_server, whose order
  of updates is the run's own with more), 3 steps from one checkpoint, over
  loopback and over the namespaces: the same variables and losses, to
  float32 round-off, and NumPy's."""
  del network_host
  initial = clusterlib.initial_values(seed=6)
  # Asynchronous updates of 2 workers come in the order of the run: one
  # worker makes them NumPy's, w[t+1] = w[t] - lr * mean_d g_d(w[t]).
  workers = 1 if name.startswith('asynchronous') else 2
  flags_ = strategy_flags + [
      '--num_ps', '1', '--num_workers', str(workers),
      '--use_resource_vars=%s' % ('true' if kind == 'resource' else 'false')]
  runs = {}
  for network in (False, True):
    cluster, summary, values, step = _train(
        launch, tmp_path, 'net' if network else 'loopback', flags_, initial,
        network)
    runs[network] = (summary, values, step)
    assert ('launcher: network removed' in cluster.output) == network
  (loop_summary, loop_values, loop_step), (net_summary, net_values,
                                           net_step) = runs[False], runs[True]
  assert loop_step == net_step == STEPS
  clusterlib.assert_close(net_values, loop_values, rtol=1e-5, atol=1e-6)
  clusterlib.assert_close(loop_values, clusterlib.reference(
      initial, workers, STEPS, staged='staged' in name,
      mean=name == 'collective_all_reduce'))
  for loop_worker, net_worker in zip(loop_summary['workers'],
                                     net_summary['workers']):
    np.testing.assert_allclose(net_worker['losses'], loop_worker['losses'],
                               rtol=1e-5)
