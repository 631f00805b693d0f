"""One task of a cluster: which one it is, its loop, its exit status.

Which task this process is comes from `--job_name/--task_index/--ps_hosts/
--worker_hosts` or `TF_CONFIG` (see `task_spec`); a PS task runs
`ps_task.run_ps`, a worker `worker_task.run_worker`; under
distributed_all_reduce the controller and the workers that serve it run
`controller_task`. A task started by the launcher exits when the launcher
is gone (see `launcher.watch_launcher`).
"""

import os

from variable_mgr import cuda_probe
from variable_mgr.benchmark.cluster import controller_task
from variable_mgr.benchmark.cluster import launcher
from variable_mgr.benchmark.cluster import liveness
from variable_mgr.benchmark.cluster import ps_task
from variable_mgr.benchmark.cluster import task_spec
from variable_mgr.benchmark.cluster import worker_task
from variable_mgr.benchmark.reports import output
from variable_mgr.benchmark.runs import exit_status
from variable_mgr.benchmark.runs import train_dir_lock
from variable_mgr.benchmark.training import run_config


def run(args, environ=None):
  """Runs the task of the parsed flags (or TF_CONFIG).

  Returns:
    The exit status: 0, 1 (this or another task failed) or 2 (a bad
    cluster or configuration); the error is one line on stderr.
  """
  environ = os.environ if environ is None else environ
  launcher.watch_launcher(environ)
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tf.get_logger().setLevel('ERROR')
  # TensorFlow's expected cuInit error line where there is no driver.
  cuda_probe.probe_devices()
  return exit_status.status_of(lambda: run_task(args, environ),
                               failures=(liveness.TaskFailedError,))


def run_task(args, environ=None, log=print):
  """Runs the task the flags (or TF_CONFIG) describe; returns 0.

  Raises:
    ClusterConfigError / VariableMgrError: a bad cluster or configuration.
    TaskFailedError: another task died, or a call outlived its deadline.
  """
  if args.variable_update == controller_task.STRATEGY:
    # One controller and workers that serve, no PS task.
    return controller_task.run_task(args, environ, log)
  spec = task_spec.resolve(args.job_name, args.task_index, args.ps_hosts,
                           args.worker_hosts, environ)
  if spec is None:
    raise task_spec.MissingTaskError(
        'no cluster task: pass --job_name, --task_index, --ps_hosts and '
        '--worker_hosts, set TF_CONFIG, or use --launch_local_cluster.')
  liveness.set_train_dir(args.train_dir)
  # Every task refuses what the workers' manager would, before any server
  # starts: a PS does not serve a cluster whose workers refuse to run.
  run_config.check_cluster_config(args, spec.cluster_dict())
  if spec.job_name == 'ps':
    return ps_task.run_ps(spec, args, log)
  # Before the graph is built: a worker without its GPUs says so.
  run_config.check_devices(args.device, args.num_gpus)
  lock = train_dir_lock.acquire_for_task(
      args, spec.is_chief, bool(environ.get(launcher.LAUNCHER_FD_ENV)), log)
  try:
    results = worker_task.run_worker(spec, run_config.from_args(args), args,
                                     log)
  finally:
    if lock is not None:
      lock.release()
  if args.output:
    output.write_json(args.output, results)
  return 0
