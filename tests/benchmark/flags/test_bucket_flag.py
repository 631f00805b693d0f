"""--gradient_bucket_bytes: the bucket size of collective_all_reduce,
distributed_all_reduce and parameter_server's pushes reaches the manager
the benchmark builds; it is refused with another strategy, on one machine,
and beside upstream's packing."""

import pytest
import tensorflow as tf

import variable_mgr
from variable_mgr.benchmark.flags import command_line
from variable_mgr.benchmark.training import harness
from variable_mgr.benchmark.training import run_config
from variable_mgr.strategies import gradient_buckets

CLUSTER = ['--model=trivial', '--num_gpus=2', '--batch_size=4',
           '--launch_local_cluster', '--variable_update=collective_all_reduce']
CONTROLLER = ['--model=trivial', '--num_gpus=2', '--batch_size=4',
              '--launch_local_cluster',
              '--variable_update=distributed_all_reduce',
              '--all_reduce_spec=pscpu/xring']


def built_manager(argv, host):
  args = command_line.parse_args(argv, environ={})
  config = run_config.from_args(args).resolved()
  with tf.Graph().as_default():
    return harness.create_manager(config, host)


@pytest.mark.parametrize('given, expected', [
    ([], gradient_buckets.DEFAULT_BUCKET_BYTES),
    (['--gradient_bucket_bytes=0'], 0),
    (['--gradient_bucket_bytes', '4096'], 4096),
])
def test_the_flag_sizes_the_managers_buckets(given, expected):
  host = variable_mgr.ClusterBenchmarkCnn(
      {'ps': ['h:1'], 'worker': ['h:2', 'h:3']}, 1, 2)
  assert built_manager(CLUSTER + given, host).bucket_bytes == expected


@pytest.mark.parametrize('given, expected', [
    ([], gradient_buckets.DEFAULT_BUCKET_BYTES),
    (['--gradient_bucket_bytes=0'], 0),
    (['--gradient_bucket_bytes', '4096'], 4096),
    (['--gradient_repacking=2'], 0),
    (['--gradient_repacking=2', '--gradient_bucket_bytes=0'], 0),
    (['--agg_small_grads_max_bytes=64'], 0),
])
def test_the_flag_sizes_the_controllers_buckets(given, expected):
  host = variable_mgr.ControllerBenchmarkCnn({'worker': ['h:2', 'h:3']}, 2)
  # The size the controller's all-reduce packs its gradients by.
  assert built_manager(CONTROLLER + given, host)._bucket_size() == expected


def test_the_flag_with_another_strategy_is_refused_as_typed():
  with pytest.raises(command_line.UsageError) as e:
    command_line.parse_args(['--variable_update=replicated', '--num_gpus=2',
                      '--gradient_bucket_bytes=010'], environ={})
  assert str(e.value).startswith(
      '--gradient_bucket_bytes=010 with --variable_update=replicated: it '
      'sizes the buckets of collective_all_reduce, distributed_all_reduce and '
      "parameter_server's pushes only; drop it or pass one of those as "
      '--variable_update')


def test_the_flag_on_one_machine_is_refused_as_typed():
  with pytest.raises(command_line.UsageError) as e:
    command_line.parse_args(['--variable_update=parameter_server',
                             '--num_gpus=2', '--gradient_bucket_bytes=064'],
                            environ={})
  assert str(e.value).startswith(
      '--gradient_bucket_bytes=064 with --variable_update=parameter_server on '
      'one machine: it sizes the pushes to the PS tasks of a cluster, and a '
      'local parameter server has none; drop it or add --launch_local_cluster')


@pytest.mark.parametrize('given, expected', [
    ([], 0),
    (['--gradient_bucket_bytes', '4096'], 4096),
    (['--staged_vars', '--gradient_bucket_bytes=64'], 64),
])
def test_the_flag_sizes_the_pushes_of_a_ps_worker(given, expected):
  host = variable_mgr.ClusterBenchmarkCnn(
      {'ps': ['h:1'], 'worker': ['h:2', 'h:3']}, 1, 2)
  argv = ['--model=trivial', '--num_gpus=2', '--batch_size=4',
          '--launch_local_cluster', '--variable_update=parameter_server']
  assert built_manager(argv + given, host).bucket_bytes == expected


@pytest.mark.parametrize('packing', ['--gradient_repacking=02',
                                     '--agg_small_grads_max_bytes=064'])
def test_buckets_beside_upstreams_packing_are_refused_as_typed(packing):
  with pytest.raises(command_line.UsageError) as e:
    command_line.parse_args(CONTROLLER + ['--gradient_bucket_bytes=4096',
                                          packing], environ={})
  assert str(e.value).startswith(
      "--gradient_bucket_bytes=4096 with %s: upstream's packing "
      "concatenates the gradients in the towers' order, the buckets in the "
      "backward pass's; drop one of the two (--gradient_bucket_bytes=0 "
      "keeps upstream's packing)" % packing)
