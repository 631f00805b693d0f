"""The host objects' defaults and the interface check's edge cases."""

import re
from unittest import mock

import pytest

from variable_mgr import interface

CLUSTER = {'ps': ['127.0.0.1:2222'], 'worker': ['127.0.0.1:2223',
                                                 '127.0.0.1:2224']}


@pytest.mark.parametrize('num_towers', [1, 2, 5])
def test_session_config_has_one_cpu_device_a_tower(num_towers):
  """A virtual CPU device a tower, no more (one tower, one device), and
  soft placement off."""
  config = interface.LocalBenchmarkCnn(num_towers).session_config()
  assert dict(config.device_count) == {'CPU': num_towers}
  assert config.allow_soft_placement is False


def test_a_cluster_host_runs_the_workers_in_step_by_default():
  """tf_cnn_benchmarks' --cross_replica_sync defaults to True: the workers
  of a cluster host run each step together unless told otherwise."""
  host = interface.ClusterBenchmarkCnn(CLUSTER, 1, 2)
  assert host.cross_replica_sync is True
  assert interface.ClusterBenchmarkCnn(
      CLUSTER, 0, 1, cross_replica_sync=False).cross_replica_sync is False


def test_a_host_that_answers_every_attribute_passes_the_check():
  """A mock host (every attribute an object that compares with nothing)
  is checked without comparing its attributes: only a stub's marker, the
  value True itself, makes an attribute documentation only."""
  host = mock.Mock()
  host.local_parameter_device_flag = 'gpu'  # The one attribute with values.
  interface.check_interface(host, interface.DISTRIBUTED_ATTRIBUTES +
                            ('add_sync_queues_and_barrier',))
  stub = mock.Mock()
  stub.add_sync_queues_and_barrier.documentation_only = True
  with pytest.raises(Exception, match='inherits add_sync_queues_and_barrier'):
    interface.check_interface(stub, ('add_sync_queues_and_barrier',))


@pytest.mark.parametrize('flag', ['GPU', 'gpu:0', 'tpu', None])
def test_a_parameter_device_other_than_cpu_or_gpu_is_refused(flag):
  """A host of one's own whose local_parameter_device_flag is not 'cpu'
  or 'gpu' is refused by name (upper case included: a strategy compares
  the flag with 'gpu', and another spelling would take the CPU's path
  silently)."""
  host = interface.LocalBenchmarkCnn(2)
  host.local_parameter_device_flag = flag
  with pytest.raises(Exception, match=(
      r"LocalBenchmarkCnn has local_parameter_device_flag=%s: it must be "
      r"one of 'cpu', 'gpu' \(in lower case\)" % re.escape(repr(flag)))):
    interface.check_interface(host, interface.LOCAL_ATTRIBUTES)
  host.local_parameter_device_flag = 'gpu'
  interface.check_interface(host, interface.LOCAL_ATTRIBUTES)
