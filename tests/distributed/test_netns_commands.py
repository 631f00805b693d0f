"""The commands that make and remove a namespace network
(`cluster.netns.Network`), run as a stand-in records them: a switch
namespace with a bridge, each host a namespace of its own joined to the
bridge by a veth pair (eth0 inside the host), an address on 10.77.0.0/24,
and with a rate a tbf on both ends of the pair; removal deletes every
namespace it made, last made first. The network_cluster tests run them
for real (root)."""

from variable_mgr.benchmark.cluster import netns


def _recorded(monkeypatch):
  commands = []
  monkeypatch.setattr(netns, 'run', lambda argv, *args, **kwargs: (
      commands.append(' '.join(argv)) or ''))
  return commands


def _host_commands(switch, k, namespace, rate):
  port = 'h%d' % k
  made = [
      'ip netns add %s' % namespace,
      'ip -n %s link set lo up' % namespace,
      'ip -n %s link add %s type veth peer name eth0 netns %s' % (
          switch, port, namespace),
      'ip -n %s link set %s master br0' % (switch, port),
      'ip -n %s link set %s up' % (switch, port),
      'ip -n %s addr add 10.77.0.%d/24 dev eth0' % (namespace, k + 1),
      'ip -n %s link set eth0 up' % namespace]
  if rate:
    made += ['tc -n %s qdisc add dev eth0 root tbf rate %s burst 62500 '
             'latency 500ms' % (namespace, rate),
             'tc -n %s qdisc add dev %s root tbf rate %s burst 62500 '
             'latency 500ms' % (switch, port, rate)]
  return made


def test_a_shaped_network_of_two_hosts(monkeypatch):
  commands = _recorded(monkeypatch)
  network = netns.Network(2, 50 * 10**6)
  network.create()
  switch = network.switch
  hosts = [h.namespace for h in network.hosts]
  assert hosts == [switch[:-len('sw')] + str(k) for k in range(2)]
  want = ['ip netns list', 'ip netns add %s' % switch,
          'ip -n %s link set lo up' % switch,
          'ip -n %s link add br0 type bridge' % switch,
          'ip -n %s link set br0 up' % switch]
  for k, namespace in enumerate(hosts):
    want += _host_commands(switch, k, namespace, '50mbit')
  assert commands == want
  del commands[:]
  network.remove()
  assert commands == [
      c % n for n in hosts[::-1] + [switch]
      for c in ('ip netns pids %s', 'ip netns delete %s')]


def test_an_unshaped_network_has_no_tbf(monkeypatch):
  commands = _recorded(monkeypatch)
  network = netns.Network(1, None)
  network.create()
  assert not [c for c in commands if c.startswith('tc ')]
  assert commands[-len(_host_commands(network.switch, 0,
                                      network.hosts[0].namespace, None)):] == (
      _host_commands(network.switch, 0, network.hosts[0].namespace, None))


def test_removal_goes_past_namespaces_already_gone(monkeypatch):
  """remove() never raises: with every namespace already gone (each `ip`
  command fails, as `netns.run` reports a failure), it still tries each
  namespace's processes and deletion, last made first."""
  commands = _recorded(monkeypatch)
  network = netns.Network(2, None)
  network.create()
  hosts = [h.namespace for h in network.hosts]
  del commands[:]

  def gone(argv, check=True):
    commands.append(' '.join(argv))
    if check:
      raise netns.NetworkSetupError('`%s` failed (exit status 1): Cannot '
                                    'open network namespace' % argv[-1])
    return ''

  monkeypatch.setattr(netns, 'run', gone)
  network.remove()
  assert commands == [
      c % n for n in hosts[::-1] + [network.switch]
      for c in ('ip netns pids %s', 'ip netns delete %s')]
