"""A task's gRPC server and the config of its sessions.

Every server and session config of the cluster names worker 0 as the
collective group leader, through which collective ops
(collective_all_reduce) find their group. Sessions see only this task and
the PS tasks, and carry the task's deadline (`--op_timeout_secs`).

`--num_intra_threads` and `--num_inter_threads` go into both: a server's
config sizes the thread pools its devices run the steps' ops on (a task's
graph runs there, not in the client session), and the session's config
carries them for the master. Unset (None or 0), the intra-op pool is
TensorFlow's choice and the inter-op pool gets one thread more than the
processors the task may run on (`inter_op_threads`).
"""

from variable_mgr.benchmark.reports import markdown


def _group_leader(config):
  from variable_mgr.strategies import collective_all_reduce  # pylint: disable=g-import-not-at-top
  return collective_all_reduce.set_collective_group_leader(config)


def inter_op_threads(options):
  """The inter-op threads of a task's server and sessions: `options`'
  --num_inter_threads where set, else one more than the processors this
  process may run on.

  TensorFlow's own default is one a processor, and that pool runs the
  backward pass's ops and also serves the peers' requests for this task's
  tensors (`RecvTensor`, `RecvBuf`): with every thread busy in the backward
  pass, a gradient that is ready waits for the pass to end before it
  leaves. The spare thread lets it go at once; on a worker of one processor
  it took collective_all_reduce's step from compute + transfer to within
  1.04-1.14x of the floor of a step a run (docs/networks.md, "What a traced
  step shows").
  """
  inter = getattr(options, 'num_inter_threads', None)
  if inter:
    return inter
  return (markdown.processors() or 1) + 1


def _threads(config, options):
  """`config` with the --num_intra_threads of `options` (the parsed flags;
  it may be missing) and `inter_op_threads`."""
  intra = getattr(options, 'num_intra_threads', None)
  if intra:
    config.intra_op_parallelism_threads = intra
  config.inter_op_parallelism_threads = inter_op_threads(options)
  return config


def session_config(tf, spec, options, num_cpus):
  """The ConfigProto of a session of task `spec` with `num_cpus` CPUs."""
  if spec.job_name == 'ps':
    filters = ['/job:ps/replica:0/task:%d' % spec.task_index]
  else:
    filters = ['/job:ps', '/job:worker/replica:0/task:%d' % spec.task_index]
  return _group_leader(_threads(tf.ConfigProto(
      device_count={'CPU': num_cpus}, device_filters=filters,
      operation_timeout_in_ms=int(options.op_timeout_secs * 1000),
      allow_soft_placement=False), options))


def server_config(tf, options, num_cpus):
  """The ConfigProto of a task's server with `num_cpus` CPUs."""
  return _group_leader(_threads(tf.ConfigProto(
      device_count={'CPU': num_cpus}), options))


def start_server(tf, spec, num_cpus, options=None):
  """Starts the gRPC server of task `spec` (with the thread counts of
  `options`, the parsed flags); returns it."""
  return tf.train.Server(
      tf.train.ClusterSpec(spec.cluster_dict()), job_name=spec.job_name,
      task_index=spec.task_index,
      config=server_config(tf, options, num_cpus), start=True)
