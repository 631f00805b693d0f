"""The `launch` fixture: start clusters, and never leave a process behind.

Namespace clusters (`--network_rate`): the `network_host` fixture skips a
test, saying why, where this machine cannot make network namespaces (not
Linux, not root, no iproute2, or `ip netns add` refused). The long runs
carry the `network_cluster` marker and are deselected unless pytest gets
`--network-cluster`.
"""

import pytest

import clusterlib
from variable_mgr.benchmark.cluster import netns

_NETWORK = []  # None when namespaces work here, else why not.


def pytest_collection_modifyitems(config, items):
  if config.getoption('--network-cluster', default=False):
    return
  long_runs = [i for i in items if 'network_cluster' in i.keywords]
  if long_runs:
    config.hook.pytest_deselected(items=long_runs)
    items[:] = [i for i in items if 'network_cluster' not in i.keywords]


def _why_no_namespaces():
  if not _NETWORK:
    try:
      netns.check_supported()
      with netns.Network(1, None, prefix='vmgrprobe'):
        pass
      _NETWORK.append(None)
    except (netns.NetworkUnavailableError, netns.NetworkSetupError) as e:
      _NETWORK.append(str(e))
  return _NETWORK[0]


@pytest.fixture
def network_host():
  """Skips the test where namespaces cannot be made; checks afterwards
  that the test left no namespace of the package's prefix behind (one
  whose run has ended; other runs may be making theirs meanwhile)."""
  why = _why_no_namespaces()
  if why:
    pytest.skip('no network namespaces here: %s' % why)
  before = set(clusterlib.own_namespaces())
  yield
  left = [n for n in set(clusterlib.own_namespaces()) - before
          if netns.owner(n) is not None and not clusterlib.alive(
              netns.owner(n))]
  assert not left, 'namespaces left behind: %s' % sorted(left)


@pytest.fixture
def launch():
  """`launch(flags, env=None, module=...)` starts a local cluster (through
  `module`'s --launch_local_cluster); every one is killed and reaped when
  the test ends, passed or not, and its namespaces deleted."""
  yield from clusterlib.launched_clusters()

