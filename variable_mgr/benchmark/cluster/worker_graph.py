"""The training graph of one worker of a ps/worker cluster.

The harness builds the towers; this adds what a cluster needs around
them: the global step on PS 0, the barriers of synchronous steps, the
chief's `chief_ready` queue, and the `started`/`done` queues through which
every worker tells every PS task it came up and finished.
"""

import collections

from variable_mgr import compat
from variable_mgr import ordering
from variable_mgr.benchmark.models import catalog
from variable_mgr.benchmark.training import harness
from variable_mgr.benchmark.training import optimizers
from variable_mgr.compat import tf

PS_DEVICE = '/job:ps/replica:0/task:%d/cpu:0'


WorkerGraph = collections.namedtuple('WorkerGraph', [
    'graph', 'mgr', 'train_op', 'loss', 'global_step', 'global_init_op',
    'local_init_op', 'post_init_op', 'staging_put_op', 'start_op',
    'saver', 'saved_op', 'ready_enqueue', 'ready_dequeue', 'started_op',
    'done_op', 'done_sizes', 'restorer', 'snapshot_step', 'save_request',
    'save_step', 'top_1', 'top_5', 'started_sizes', 'run_start'])
WorkerGraph.__doc__ = (
    'A worker\'s graph. Besides the names of `build_worker_graph`: '
    '`saver` (the chief with --train_dir) saves `global_step` from the '
    'snapshot that `snapshot_step` takes and returns, `restorer` restores '
    'into the global step itself; `save_request` (the chief\'s feed) and '
    '`save_step` (every worker\'s fetch) carry the chief\'s time-based '
    'save decisions (`--save_model_secs` with synchronous barriers), else '
    'None; `top_1` and `top_5` the accuracy of the worker\'s batch '
    '(`--print_training_accuracy`), else None; `started_sizes` the sizes '
    'of the `started` queues on PS 0 (which workers came up); '
    '`run_start` the placeholder of the global step a synchronous run '
    'starts at, which its rate schedule and adam read (fed by the runner), '
    'else None.')


def worker_queues(ps_index, num_workers, kind):
  """The queues on PS `ps_index` that worker k fills once: `kind` 'started'
  when its session is up, 'done' when it finished."""
  with tf.device(PS_DEVICE % ps_index):
    return [tf.FIFOQueue(1, [tf.int32], shapes=[[]],
                         shared_name='%s_worker_%d' % (kind, k),
                         name='%s_worker_%d_ps_%d' % (kind, k, ps_index))
            for k in range(num_workers)]


def build_worker_graph(config, host, spec, sync):
  """The training graph of worker `spec.task_index`.

  Args:
    config: a resolved BenchmarkConfig.
    host: the worker's ClusterBenchmarkCnn.
    spec: the TaskSpec.
    sync: synchronous steps across workers.

  Returns:
    A finalized WorkerGraph.

  Raises:
    VariableMgrError: the manager refuses the configuration.
  """
  model = catalog.get_model(config.model)
  num_workers = spec.num_workers
  barriers = sync and num_workers > 1
  graph = tf.Graph()
  with graph.as_default(), tf.variable_scope(
      tf.get_variable_scope(), use_resource=config.use_resource_vars):
    tf.set_random_seed(config.seed)
    mgr = harness.create_manager(config, host)
    with tf.device(PS_DEVICE % 0):
      global_step = tf.train.get_or_create_global_step()
    # Every tower of the cluster gets data of its own (real data: the
    # worker's own share of the data set).
    towers = harness.build_towers(
        config, host, mgr, model, first_input=spec.task_index * host.num_gpus,
        shard=(spec.task_index, num_workers))
    device_grads, losses, update_ops, staging_puts = towers[:4]

    apply_devices, state = mgr.preprocess_device_grads(device_grads)
    with tf.device(host.cpu_device):
      average_loss = compat.sum_in_order(losses) / float(len(losses))
    gradients_ready = None
    if (barriers and config.variable_update == 'parameter_server' and
        not mgr.workers_meet_after_reads):
      # Shared variables: no worker may update them while another still
      # reads them for this step's gradients (or staged puts). A dynamic
      # loss scale's exchange of finite flags already waits for those reads
      # and every update for it: no second barrier then.
      gradients_ready = host.add_sync_queues_and_barrier(
          'gradients_ready_', [tf.group(*state.variable_reads), average_loss])
    step = global_step
    run_start = None
    if sync and optimizers.reads_step(config):
      # A synchronous step's rate schedule and adam read the step from a
      # placeholder the runner feeds (the global step its run starts at),
      # not from the variable on PS 0: under collective_all_reduce and
      # parameter_server nothing orders another worker's read there before
      # the chief's increment of the same step (which waits for the
      # workers' gradients or variable reads, not for their rates), and a
      # late read would give that worker the next step's rate. Fed, every
      # worker's number is exact, whatever the strategy.
      with tf.device(host.cpu_device):
        step = run_start = tf.placeholder(
            global_step.dtype.base_dtype, [], name='run_start')
    # Several workers update the variables on the PS tasks: under their
    # locks (see parameter_server.check_locking).
    optimizer = optimizers.make_optimizer(
        config, step, config.batch_size * host.num_gpus * num_workers,
        use_locking=num_workers > 1)
    training_ops = []
    for i, device in enumerate(apply_devices):
      with tf.device(device):
        grads = harness.clip_gradients(mgr.get_gradients_to_apply(i, state),
                                       config.gradient_clip)
        if gradients_ready is not None:
          grads = ordering.updates_after(gradients_ready, grads)
        mgr.append_apply_gradients_ops(state, optimizer, grads, training_ops)

    step_ops = training_ops + update_ops
    if not sync or spec.is_chief:
      with tf.device(PS_DEVICE % 0), tf.control_dependencies(step_ops):
        step_ops = [global_step.assign_add(1).op]
    save_request = save_step = save_step_var = None
    if barriers and config.save_model_secs:
      # --save_model_secs under synchronous barriers: the chief decides by
      # its clock, before a step, to save after it, and writes that step's
      # number here within the step, before its step-end barrier token;
      # every worker reads it after the barrier, so every worker agrees on
      # which steps are followed by a save and its checkpoint barrier. (A
      # worker that reads late may see a later step's number, never a
      # number it has passed: after a step it chose, the chief waits at the
      # checkpoint barrier before it can write the next.)
      with tf.device(PS_DEVICE % 0):
        save_step_var = tf.Variable(
            tf.constant(-1, tf.int64), trainable=False,
            collections=[tf.GraphKeys.LOCAL_VARIABLES], name='save_step')
        if spec.is_chief:
          save_request = tf.placeholder(tf.int64, [], name='save_request')
          step_ops = step_ops + [save_step_var.assign(save_request).op]
    with tf.device(host.cpu_device):
      if barriers:
        train_op = host.add_sync_queues_and_barrier('step_end_', step_ops)
      else:
        train_op = tf.group(*step_ops, name='train_op')
    if save_step_var is not None:
      with tf.device(PS_DEVICE % 0), tf.control_dependencies([train_op]):
        save_step = save_step_var.read_value()
    with tf.device(host.cpu_device):
      snapshot = snapshot_step = to_restore = None
      if spec.is_chief and config.train_dir:
        to_restore = dict(mgr.get_variables_to_save())
        if not any(v is global_step for v in to_restore.values()):
          to_restore['global_step'] = global_step
        snapshot = tf.Variable(
            tf.zeros([], global_step.dtype.base_dtype), trainable=False,
            collections=[tf.GraphKeys.LOCAL_VARIABLES],
            name='saved_global_step')
        with tf.control_dependencies([snapshot.assign(global_step,
                                                      read_value=False)]):
          snapshot_step = snapshot.read_value()
      global_vars = tf.global_variables()
      global_init_op = tf.variables_initializer(global_vars)
      # Global variables on this worker's own task (collective_all_reduce's
      # copies) are this worker's to initialise; the chief's global init
      # covers its own.
      own = [v for v in global_vars
             if not spec.is_chief and _on_task(v, 'worker', spec.task_index)]
      local_init_op = tf.group(tf.local_variables_initializer(),
                               tf.variables_initializer(own))
      post_init = mgr.get_post_init_ops()
      post_init_op = tf.group(*post_init) if post_init else None
      staging_put_op = tf.group(*staging_puts) if staging_puts else None
      start_op = None
      if barriers:
        # No worker's first update may reach a master variable before every
        # worker copied the masters into its own variables (post-init) or
        # filled its staging areas.
        start_op = host.add_sync_queues_and_barrier(
            'training_start_', [op for op in (post_init_op, staging_put_op)
                                if op is not None] or [tf.no_op()])
      saver = restorer = None
      if snapshot is not None:
        # The saved global step is the snapshot, taken by `snapshot_step`
        # in the call that also returns it for the checkpoint's name:
        # asynchronous workers move the global step itself while the chief
        # saves, and a name read in another call could be a step behind
        # the value in the file.
        saver = tf.train.Saver(dict(
            (name, snapshot if v is global_step else v)
            for name, v in to_restore.items()),
                               max_to_keep=config.max_ckpts_to_keep)
        restorer = tf.train.Saver(to_restore)
      saved_op = None
      if barriers:
        # After a periodic save: no worker's next update may reach a shared
        # variable while the chief still writes the checkpoint (under
        # distributed_replicated nothing else holds it back).
        saved_op = host.add_sync_queues_and_barrier('checkpoint_saved_',
                                                    [tf.no_op()])
    with tf.device(PS_DEVICE % 0):
      ready = tf.FIFOQueue(num_workers, [tf.int32], shapes=[[]],
                           shared_name='chief_ready', name='chief_ready')
      ready_enqueue = ready_dequeue = None
      if spec.is_chief:
        if num_workers > 1:
          ready_enqueue = ready.enqueue_many(
              [tf.zeros([num_workers - 1], tf.int32)])
      else:
        ready_dequeue = ready.dequeue()
    signals = {}
    done_sizes = started_sizes = []
    for kind in ('started', 'done'):
      ops = []
      for p in range(len(spec.ps_hosts)):
        queues = worker_queues(p, num_workers, kind)
        ops.append(queues[spec.task_index].enqueue(
            tf.constant(spec.task_index)))
        if p == 0 and kind == 'done':
          done_sizes = [q.size() for q in queues]
        if p == 0 and kind == 'started':
          started_sizes = [q.size() for q in queues]
      signals[kind] = tf.group(*ops, name='worker_%s' % kind)
    graph.finalize()
  return WorkerGraph(graph, mgr, train_op, average_loss, global_step,
                     global_init_op, local_init_op, post_init_op,
                     staging_put_op, start_op, saver, saved_op,
                     ready_enqueue,
                     ready_dequeue, signals['started'], signals['done'],
                     done_sizes, restorer, snapshot_step, save_request,
                     save_step, towers.top_1, towers.top_5, started_sizes,
                     run_start)


def _on_task(var, job, task):
  """Whether `var` is placed on task `task` of job `job`."""
  device = tf.DeviceSpec.from_string(var.device or '')
  return device.job == job and device.task == task


def describe_partitions(mgr):
  """Lines that say how each partitioned variable of `mgr` is split:
  'Partitioned: v/fc1/weights [3136, 512] in 2 slices: ps:0 3211264 B,
  ps:1 3211264 B'."""
  lines = []
  partitioned = getattr(mgr, 'partitioned_variables', None) or {}
  for name in sorted(partitioned):
    variable = partitioned[name]
    parts = []
    for part in variable:
      device = tf.DeviceSpec.from_string(part.device or '')
      size = part.shape.num_elements() * part.dtype.base_dtype.size
      parts.append('%s:%s %d B' % (device.job, device.task, size))
    lines.append('Partitioned: %s %s in %d slices: %s' % (
        name, variable.shape.as_list(), len(parts), ', '.join(parts)))
  return lines
