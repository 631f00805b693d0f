"""The `variable_mgr_benchmark` command (also `python -m variable_mgr.benchmark`).

Flags follow tf_cnn_benchmarks' names where they overlap. With no flags it
trains a LeNet-sized CNN on synthetic data over 4 virtual CPU towers with
`--variable_update=replicated`, and prints tf_cnn_benchmarks' progress lines
and a final `total images/sec`.

A bad flag or a configuration the library refuses ends the command with one
line on stderr and exit status 2 (1 for a failure while running).
"""

import os
import sys

from variable_mgr.benchmark import exit_status
from variable_mgr.benchmark import flags


def config_from_args(args, **overrides):
  """The BenchmarkConfig of the parsed flags."""
  from variable_mgr.benchmark import harness  # pylint: disable=g-import-not-at-top
  values = dict((name, getattr(args, name)) for name in harness._CONFIG_FIELDS)  # pylint: disable=protected-access
  values.update(overrides)
  return harness.BenchmarkConfig(**values)


def make_host(config):
  """The BenchmarkCnn-like host, session target and session config.

  distributed_replicated gets a one-machine cluster (one PS task, one
  worker task); every other strategy a local host.

  Raises:
    VariableMgrError: a bad tower count or device name.
  """
  import variable_mgr  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark import cluster  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  if config.variable_update == 'distributed_replicated':
    host = cluster.LocalClusterHost(config.num_gpus, config.device,
                                    config.local_parameter_device)
    return host, host.session_config()
  host = variable_mgr.LocalBenchmarkCnn(config.num_gpus, config.device,
                                        config.local_parameter_device)
  cpus = config.num_gpus if config.device == 'cpu' else 1
  return host, tf.compat.v1.ConfigProto(device_count={'CPU': cpus})


def run_one(config, log=print):
  """Runs one configuration; returns the results dict of run_benchmark."""
  from variable_mgr.benchmark import harness  # pylint: disable=g-import-not-at-top
  host, session_config = make_host(config)
  # Servers start once the graph is built: a refused configuration starts
  # none.
  target = getattr(host, 'start', '')
  return harness.run_benchmark(config, host, session_target=target,
                               session_config=session_config, log=log)


def main(argv=None):
  """Runs the command; returns the exit status."""
  # TensorFlow's C++ info and warning lines (start-up, in-process servers
  # closing) stay off stderr unless the caller sets TF_CPP_MIN_LOG_LEVEL.
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  argv = list(sys.argv[1:] if argv is None else argv)
  try:
    args = flags.parse_args(argv)
  except flags.UsageError as e:
    return exit_status.fail(e, exit_status.USAGE)
  from variable_mgr.benchmark import distributed  # pylint: disable=g-import-not-at-top
  if distributed.is_requested(args):
    return distributed.run_from_cli(args, argv)

  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tf.get_logger().setLevel('ERROR')
  return exit_status.status_of(lambda: _run_local(args))


def _run_local(args):
  from variable_mgr.benchmark import harness  # pylint: disable=g-import-not-at-top
  if args.compare:
    from variable_mgr.benchmark import compare  # pylint: disable=g-import-not-at-top
    compare.run_compare(args)
    return exit_status.OK
  results = run_one(config_from_args(args))
  if args.output:
    harness.write_json(args.output, results)
  return exit_status.OK
