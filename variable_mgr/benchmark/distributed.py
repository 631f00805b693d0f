"""`python -m variable_mgr.benchmark.distributed`: one cluster task, or the
launcher of a local cluster.

The benchmark command with the cluster flags (see `command_line.parse_task_args`:
100 timed and 10 warm-up batches by default, as for one machine).
`--launch_local_cluster` starts every task
of its cluster as this command; see `variable_mgr.benchmark.cluster`.
"""

import sys

from variable_mgr.benchmark import cli
from variable_mgr.benchmark.flags import command_line
from variable_mgr.benchmark.runs import exit_status


def main(argv=None):
  """Runs the task or the launcher; returns the exit status."""
  cli.set_tensorflow_environment()
  argv = list(sys.argv[1:] if argv is None else argv)
  try:
    args = command_line.parse_task_args(argv)
  except command_line.UsageError as e:
    return exit_status.fail(e, exit_status.USAGE)
  if args.launch_local_cluster:
    # Before the launcher starts a task that would refuse.
    status = exit_status.status_of(lambda: cli.check_launch(args))
    if status:
      return status
    from variable_mgr.benchmark.cluster import launcher  # pylint: disable=g-import-not-at-top
    return launcher.main(args, argv)
  from variable_mgr.benchmark.cluster import task  # pylint: disable=g-import-not-at-top
  return task.run(args)


if __name__ == '__main__':
  exit_status.exit_task(main())
