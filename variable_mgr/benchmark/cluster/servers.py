"""A task's gRPC server and the config of its sessions.

Every server and session config of the cluster names worker 0 as the
collective group leader, through which collective ops
(collective_all_reduce) find their group. Sessions see only this task and
the PS tasks, and carry the task's deadline (`--op_timeout_secs`).
"""


def _group_leader(config):
  from variable_mgr.strategies import collective_all_reduce  # pylint: disable=g-import-not-at-top
  return collective_all_reduce.set_collective_group_leader(config)


def session_config(tf, spec, options, num_cpus):
  """The ConfigProto of a session of task `spec` with `num_cpus` CPUs."""
  if spec.job_name == 'ps':
    filters = ['/job:ps/replica:0/task:%d' % spec.task_index]
  else:
    filters = ['/job:ps', '/job:worker/replica:0/task:%d' % spec.task_index]
  return _group_leader(tf.ConfigProto(
      device_count={'CPU': num_cpus}, device_filters=filters,
      operation_timeout_in_ms=int(options.op_timeout_secs * 1000),
      allow_soft_placement=False))


def start_server(tf, spec, num_cpus):
  """Starts the gRPC server of task `spec`; returns it."""
  return tf.train.Server(
      tf.train.ClusterSpec(spec.cluster_dict()), job_name=spec.job_name,
      task_index=spec.task_index,
      config=_group_leader(tf.ConfigProto(device_count={'CPU': num_cpus})),
      start=True)
