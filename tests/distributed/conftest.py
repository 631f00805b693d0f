"""The `launch` fixture: start clusters, and never leave a process behind."""

import pytest

import clusterlib


@pytest.fixture
def launch():
  """`launch(flags)` starts a local cluster; every one is killed and reaped
  when the test ends, passed or not."""
  started = []

  def start(flags, env=None):
    cluster = clusterlib.Launch(flags, env)
    started.append(cluster)
    return cluster

  try:
    yield start
  finally:
    for cluster in started:
      cluster.cleanup()
