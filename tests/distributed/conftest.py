"""The `launch` fixture: start clusters, and never leave a process behind."""

import pytest

import clusterlib


@pytest.fixture
def launch():
  """`launch(flags, env=None, module=...)` starts a local cluster (through
  `module`'s --launch_local_cluster); every one is killed and reaped when
  the test ends, passed or not."""
  started = []

  def start(flags, env=None, module='variable_mgr.benchmark.distributed'):
    cluster = clusterlib.Launch(flags, env, module=module)
    started.append(cluster)
    return cluster

  try:
    yield start
  finally:
    for cluster in started:
      cluster.cleanup()
