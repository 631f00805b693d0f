"""The `variable_mgr_benchmark` command (also `python -m variable_mgr.benchmark`).

Flags follow tf_cnn_benchmarks' names and defaults where they overlap. With
no flags it trains the trivial model on synthetic data on one tower with
`--variable_update=parameter_server`, on the GPU or, where TensorFlow finds
none, the CPU, and prints tf_cnn_benchmarks' progress lines and a final
`total images/sec`.

The command parses its flags (`flags.command_line`) and hands them to the runner of
what they ask for: a cluster on this machine (`cluster.launcher`), one task
of a cluster (`cluster.task`), the `--compare` sweep (`compare`) or one
local run (`local_run`). Runners are imported once the flags are good, so a
bad flag costs no TensorFlow import.

A bad flag or a configuration the library refuses ends the command with one
line on stderr and exit status 2 (1 for a failure while running, 130 for
Ctrl-C, 143 for SIGTERM): see `exit_status`. Every check that needs no
graph (flags, paths, the GPUs of --device=gpu) is made before one is built.
"""

import os
import sys

from variable_mgr import cuda_probe
from variable_mgr.benchmark.cluster import task_spec
from variable_mgr.benchmark.flags import command_line
from variable_mgr.benchmark.runs import exit_status


def set_tensorflow_environment():
  """What the command sets before TensorFlow is imported, unless the
  caller set it: TensorFlow's C++ info and warning lines (start-up,
  in-process servers closing) stay off stderr, and `tf.compat.v1.layers`
  (the larger models) take Keras 2, the `tf_keras` package, on TensorFlow
  2.16 and later (TensorFlow 1.15 ignores the variable)."""
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  os.environ.setdefault('TF_USE_LEGACY_KERAS', '1')


def main(argv=None):
  """Runs the command; returns the exit status."""
  set_tensorflow_environment()
  argv = list(sys.argv[1:] if argv is None else argv)
  try:
    args = command_line.parse_args(argv)
  except command_line.UsageError as e:
    return exit_status.fail(e, exit_status.USAGE)
  if args.launch_local_cluster:
    # Asked here, before the launcher starts a task that would refuse.
    status = exit_status.status_of(lambda: check_launch(args))
    if status:
      return status
    from variable_mgr.benchmark.cluster import launcher  # pylint: disable=g-import-not-at-top
    return launcher.main(args, argv)
  if task_spec.requested(args.job_name, args.ps_hosts, args.worker_hosts):
    from variable_mgr.benchmark.cluster import task  # pylint: disable=g-import-not-at-top
    exit_status.exit_task(task.run(args))

  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tf.get_logger().setLevel('ERROR')
  # TensorFlow's expected cuInit error line where there is no driver.
  cuda_probe.probe_devices()
  with exit_status.sigterm_raises():
    return exit_status.status_of(lambda: _run_locally(args))


def _check_devices(args):
  """Refuses --device=gpu without the GPUs it needs; returns 0."""
  from variable_mgr.benchmark.training import run_config  # pylint: disable=g-import-not-at-top
  towers = max(args.compare_towers) if args.compare else args.num_gpus
  run_config.check_devices(args.device, towers)
  return exit_status.OK


def check_launch(args):
  """Refuses what every task of the cluster would refuse (the GPUs of
  --device=gpu, a configuration the manager refuses); returns 0."""
  from variable_mgr.benchmark.training import run_config  # pylint: disable=g-import-not-at-top
  _check_devices(args)
  # Placeholder addresses: only the task counts matter to the manager.
  run_config.check_cluster_config(args, {
      'ps': ['127.0.0.1:%d' % (1 + i) for i in range(args.num_ps)],
      'worker': ['127.0.0.1:%d' % (1 + args.num_ps + i)
                 for i in range(args.num_workers)]})
  return exit_status.OK


def _run_locally(args):
  """The sweep or one run, in this process."""
  _check_devices(args)
  if args.compare:
    from variable_mgr.benchmark.runs import compare  # pylint: disable=g-import-not-at-top
    compare.run_compare(args)
    return exit_status.OK
  from variable_mgr.benchmark.runs import local_run  # pylint: disable=g-import-not-at-top
  return local_run.run(args)
