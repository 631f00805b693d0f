"""--gradient_bucket_bytes: collective_all_reduce's bucket size reaches the
manager the benchmark builds, and is refused with another strategy."""

import pytest
import tensorflow as tf

import variable_mgr
from variable_mgr.benchmark.flags import command_line
from variable_mgr.benchmark.training import harness
from variable_mgr.benchmark.training import run_config
from variable_mgr.strategies import gradient_buckets

CLUSTER = ['--model=trivial', '--num_gpus=2', '--batch_size=4',
           '--launch_local_cluster', '--variable_update=collective_all_reduce']


@pytest.mark.parametrize('given, expected', [
    ([], gradient_buckets.DEFAULT_BUCKET_BYTES),
    (['--gradient_bucket_bytes=0'], 0),
    (['--gradient_bucket_bytes', '4096'], 4096),
])
def test_the_flag_sizes_the_managers_buckets(given, expected):
  args = command_line.parse_args(CLUSTER + given, environ={})
  config = run_config.from_args(args).resolved()
  host = variable_mgr.ClusterBenchmarkCnn(
      {'ps': ['h:1'], 'worker': ['h:2', 'h:3']}, 1, 2)
  with tf.Graph().as_default():
    mgr = harness.create_manager(config, host)
  assert mgr.bucket_bytes == expected


def test_the_flag_with_another_strategy_is_refused_as_typed():
  with pytest.raises(command_line.UsageError) as e:
    command_line.parse_args(['--variable_update=replicated', '--num_gpus=2',
                      '--gradient_bucket_bytes=010'], environ={})
  assert str(e.value).startswith(
      '--gradient_bucket_bytes=010 with --variable_update=replicated: it '
      'sizes the buckets of collective_all_reduce only; drop it or pass '
      '--variable_update=collective_all_reduce')
