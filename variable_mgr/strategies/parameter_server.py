"""--variable_update=parameter_server: one shared set of variables under
`v/`, on a parameter device (local) or on the PS tasks of a cluster; the
towers' gradients are averaged (the seed's default; `reduction='sum'` adds
them) and applied once. `staged_vars` reads them through StagingAreas.

On a cluster, `variable_partition_min_bytes=N` splits every variable of
more than N bytes into slices along its first axis, at most one a PS task
and none under N bytes, each slice on a PS task of its own (the rest
balanced by bytes); the model reads the variable whole, each slice gets its
own gradient and update, and checkpoints hold the variable whole.

On a cluster, `bucket_bytes=N` (`configure_buckets`) pushes a worker's
gradients to each PS task in buckets of at most N bytes, filled in the
order the backward pass produces them (`gradient_buckets`): one buffer a
bucket crosses the network, laid flat on the worker and cut back on the
task, so that small gradients do not each pay a transfer's fixed cost. A
bucket waits for its own gradients only. The default, 0, pushes every
gradient on its own, as the seed does: on the balanced network cells
buckets made the pushes no faster (`gradient_buckets.DEFAULT_BUCKET_BYTES`
gives the figures)."""

from variable_mgr import aggregation
from variable_mgr import base
from variable_mgr import compat
from variable_mgr import errors
from variable_mgr import interface
from variable_mgr import placement
from variable_mgr import staging
from variable_mgr.compat import tf
from variable_mgr.strategies import gradient_buckets
from variable_mgr.strategies import shared_loss_scale

# Variables of fewer elements are cached on the worker CPU.
SMALL_VARIABLE_THRESHOLD = 64 * 1024


class _SharedVariablesMgr(base.VariableMgr):
  """What every parameter-server variant shares: one set of variables."""

  def each_tower_has_variables(self):
    return False

  def _scope(self, device_num, custom_getter=None):
    return tf.variable_scope('v', reuse=bool(device_num),
                             custom_getter=custom_getter)

  def _preprocess(self, tower_grads):
    return [self.benchmark_cnn.param_server_device], None


class _StagedMixin(object):
  """Staged reads for a parameter-server manager (see variable_mgr.staging).

  The update of a variable runs after the step's read of it for the puts
  (a reader: one-step-stale SGD) and after every tower's get of it (one
  item in and one out of every area a step).
  """

  _staging_cpu_device = None

  def _init_staging(self):
    # staging_vars_on_devices[device_num][var_name] == (put_op, get_op)
    self.staging_vars_on_devices = [dict() for _ in
                                    self.benchmark_cnn.raw_devices]
    self.staged_reads_on_devices = [dict() for _ in
                                    self.benchmark_cnn.raw_devices]
    self.staged_vars_on_cpu = {}

  def supports_staged_vars(self):
    return True

  def create_outer_variable_scope(self, device_num):
    getter = staging.StagedVariableGetter(
        device_num, self.benchmark_cnn.raw_devices, self._staging_cpu_device,
        self)
    return self._scope(device_num, getter)

  def trainable_variables_on_device(self, device_num, writable=False):
    self._check_tower_index(device_num)
    return staging.staged_trainable_variables(self, device_num, writable, 'v/')

  def _update_dependencies(self, variables):
    return staging.get_dependencies(self, variables)


class VariableMgrLocalFetchFromPS(_SharedVariablesMgr):
  """Variables on `param_server_device` (local_parameter_device 'cpu') or
  spread over the tower devices by size ('gpu'); gradients reduced on each
  variable's device."""

  def create_outer_variable_scope(self, device_num):
    return self._scope(device_num)

  def _gradients_to_apply(self, device_num, state):
    return aggregation.aggregate_gradients_using_copy_with_variable_colocation(
        state.tower_grads, self.use_mean, self.accumulation_dtype)

  def get_devices(self):
    raw_devices = self.benchmark_cnn.raw_devices
    if self.benchmark_cnn.local_parameter_device_flag == 'gpu':
      return [placement.ParamServerDeviceSetter(d, raw_devices)
              for d in raw_devices]
    return [placement.replica_device_setter(
        worker_device=d, ps_device=self.benchmark_cnn.param_server_device,
        ps_tasks=1, ps_ops=compat.ps_ops()) for d in raw_devices]


class VariableMgrLocalFetchFromStagedPS(_StagedMixin,
                                        VariableMgrLocalFetchFromPS):
  """Local parameter server read through staging areas on each tower."""

  def __init__(self, benchmark_cnn, reduction=None, accumulation_dtype=None):
    super(VariableMgrLocalFetchFromStagedPS, self).__init__(
        benchmark_cnn, reduction, accumulation_dtype)
    self._init_staging()


class VariableMgrDistributedFetchFromPS(
    gradient_buckets.Bucketed, shared_loss_scale.SharedLossScaleMixin,
    _SharedVariablesMgr):
  """Variables on the PS tasks of `benchmark_cnn.cluster`, balanced by bytes;
  each worker caches large variables on its devices and small ones on its CPU.
  The loss scale (use_fp16) is shared on PS 0; a dynamic one skips a
  synchronous step on every worker or none (`host.cross_replica_sync`), an
  asynchronous worker's step on its own inf (see
  `strategies.shared_loss_scale`).

  Raises:
    MissingClusterError: the host has no cluster or no PS hosts.
  """

  required_attributes = interface.DISTRIBUTED_ATTRIBUTES
  # Pushes one gradient each unless `configure_buckets` says otherwise.
  bucket_bytes = 0
  _all_reduce_name = 'push'

  def __init__(self, benchmark_cnn, reduction=None, accumulation_dtype=None,
               variable_partition_min_bytes=0):
    super(VariableMgrDistributedFetchFromPS, self).__init__(
        benchmark_cnn, reduction, accumulation_dtype)
    min_bytes = placement.check_partitioning(
        variable_partition_min_bytes, 'parameter_server', benchmark_cnn)
    self.variable_partition_min_bytes = min_bytes
    # Shared by every tower (tower 0 creates, the others reuse); with 0 it
    # only records the variables a model partitions itself.
    self._partitioning = placement.PartitioningGetter(
        min_bytes, len(list(benchmark_cnn.ps_hosts)))

  def _check_config(self):
    check_cluster(self.benchmark_cnn, 'parameter_server')

  def create_outer_variable_scope(self, device_num):
    if self.benchmark_cnn.local_parameter_device_flag == 'gpu':
      caching_devices = self.benchmark_cnn.raw_devices
    else:
      caching_devices = [self.benchmark_cnn.cpu_device]
    getter = placement.OverrideCachingDevice(
        caching_devices, self.benchmark_cnn.cpu_device,
        SMALL_VARIABLE_THRESHOLD)
    return self._scope(device_num,
                       placement.chain_getters(self._partitioning, getter))

  @property
  def partitioned_variables(self):
    """`{full name: PartitionedVariable}` of the variables split so far."""
    return dict(self._partitioning.partitioned)

  def get_variables_to_save(self):
    """See `VariableMgr`; a partitioned variable is saved whole, under its
    own name (`placement.with_whole_partitioned`)."""
    return placement.with_whole_partitioned(
        super(VariableMgrDistributedFetchFromPS, self).get_variables_to_save(),
        self._savable_candidates(), self._partitioning.partitioned,
        self._canonical_name)

  def _gradients_to_apply(self, device_num, state):
    return self._pushed(aggregation.aggregate_gradients_using_copy(
        state.tower_grads, self.use_mean, self.accumulation_dtype))

  def _hand_over(self, grad, var):
    """The gradient a variable's update takes, when it is pushed alone."""
    del var
    return grad

  def _pushed(self, pairs):
    """`pairs` (the worker's reduced `(gradient, variable)` pairs) with the
    gradients of each bucket laid flat into one buffer on the worker and
    cut back on their variables' PS task. A bucket holds gradients of one
    task's variables, of one dtype, dense and of static shape, consecutive
    in the backward pass's order; any other gradient, and every one with
    `bucket_bytes=0`, goes through `_hand_over` alone."""
    result = list(pairs)
    grads = [g for g, _ in pairs]
    buckets = []
    if self.bucket_bytes:
      sizes = [None if g is None or isinstance(g, tf.IndexedSlices) else
               gradient_buckets.static_bytes(g) for g in grads]
      dtypes = [None if g is None else g.dtype.base_dtype for g in grads]
      order = self._backward_order(
          [i for i, size in enumerate(sizes) if size is not None])
      for device in sorted(set(pairs[i][1].device for i in order)):
        buckets += [(device, b.indices) for b in gradient_buckets.plan(
            sizes, dtypes, [i for i in order if pairs[i][1].device == device],
            self.bucket_bytes) if len(b.indices) > 1]
    for device, indices in buckets:
      with tf.name_scope('gradient_buckets'), tf.device(
          grads[indices[0]].device):
        buffer = gradient_buckets.pack([grads[i] for i in indices])
      with tf.name_scope('gradient_buckets'), tf.device(device):
        parts = gradient_buckets.unpack(buffer,
                                        [grads[i].shape for i in indices])
      for i, part in zip(indices, parts):
        result[i] = (part, pairs[i][1])
    packed = set(i for _, indices in buckets for i in indices)
    return [pair if i in packed else (self._hand_over(*pair), pair[1])
            for i, pair in enumerate(result)]

  def _append_apply(self, gradient_state, opt, grads, training_ops):
    grads = locked_updates(opt, grads, self.benchmark_cnn, 'parameter_server')
    super(VariableMgrDistributedFetchFromPS, self)._append_apply(
        gradient_state, opt, grads, training_ops)

  def get_devices(self):
    # Whole variables by bytes, least loaded first; the slices of a
    # partitioned variable each on a task of its own.
    ps_strategy = placement.SliceSpreadingStrategy(
        len(self.benchmark_cnn.ps_hosts), placement.byte_size_load_fn)
    return [placement.replica_device_setter(
        worker_device=d, cluster=self.benchmark_cnn.cluster,
        ps_strategy=ps_strategy, ps_ops=compat.ps_ops())
            for d in self.benchmark_cnn.raw_devices]


class VariableMgrDistributedFetchFromStagedPS(
    _StagedMixin, VariableMgrDistributedFetchFromPS):
  """Distributed parameter server read through staging areas, each variable
  copied once a step from the PS to the worker CPU."""

  def __init__(self, benchmark_cnn, reduction=None, accumulation_dtype=None,
               variable_partition_min_bytes=0):
    super(VariableMgrDistributedFetchFromStagedPS, self).__init__(
        benchmark_cnn, reduction, accumulation_dtype,
        variable_partition_min_bytes)
    self._staging_cpu_device = benchmark_cnn.cpu_device
    self._init_staging()

  def create_outer_variable_scope(self, device_num):
    # The staging getter sees a partitioned variable whole and stages each
    # slice (see `staging.StagedVariableGetter`).
    getter = staging.StagedVariableGetter(
        device_num, self.benchmark_cnn.raw_devices, self._staging_cpu_device,
        self)
    return self._scope(device_num,
                       placement.chain_getters(getter, self._partitioning))

  def _hand_over(self, grad, var):
    """`grad` handed to `var`'s device (a bucket's are cut back there).

    A variable's update waits for the step's put of it (its snapshot, the
    pull of the next step's value: see `_StagedMixin`); that wait is made
    with the gradient (`ordering.after` colocates it with the gradient's
    producer). Handed to the PS first, the gradient travels as soon as it is
    computed and only the update waits; left on the worker, the push of a
    variable's gradient would wait for the pull of its value, and the two
    would take turns on the link instead of sharing it both ways.
    """
    return _on_variable_device(grad, var)


def check_cluster(benchmark_cnn, variable_update):
  """Raises MissingClusterError unless the host describes a cluster with at
  least one PS task."""
  if benchmark_cnn.cluster is None or not list(benchmark_cnn.ps_hosts):
    raise errors.MissingClusterError(
        '%s across machines needs a cluster: the host has cluster=%r and '
        'ps_hosts=%r; give it a tf.train.ClusterSpec with a "ps" job, or use '
        'a local strategy.' % (variable_update, benchmark_cnn.cluster,
                               list(benchmark_cnn.ps_hosts)))


def check_locking(opt, benchmark_cnn, variable_update):
  """Raises UnlockedUpdateError when several workers would update the same
  variables with an optimizer that does not lock them.

  Every worker applies its own update to the shared variables on the PS
  tasks, synchronous or not, so two workers' updates of one variable can
  run at once. Without `use_locking` an update is a read-modify-write of
  the variable's buffer in place, and two of them at once lose parts of
  each other: measured on TensorFlow 1.15 with ref variables, two
  unlocked GradientDescent updates of a 4M-element variable, run together
  20 times, left 4 elements wrong (0 with use_locking). TensorFlow 2's
  resource variables take a shared lock for an unlocked update, which does
  not exclude another unlocked update. The lock orders only
  updates of the same variable; reads and other variables' updates do not
  wait for it. An optimizer that does not say whether it locks (not a
  tf.compat.v1.train.Optimizer) is taken as it is.
  """
  num_workers = benchmark_cnn.cluster.num_tasks('worker')
  if num_workers > 1 and compat.optimizer_locks(opt) is False:
    raise errors.UnlockedUpdateError(
        '%s with %d workers: the optimizer %s has use_locking=False, so two '
        'workers\' updates of one variable on the PS can run at once and '
        'lose parts of each other; create it with use_locking=True (e.g. '
        'tf.compat.v1.train.GradientDescentOptimizer(rate, '
        'use_locking=True)).' % (variable_update, num_workers,
                                 type(opt).__name__))


def locked_updates(opt, grads, benchmark_cnn, variable_update):
  """`grads` (`(gradient, variable)` pairs of shared variables) in a form
  whose updates exclude each other when several workers make them.

  `check_locking` refuses an optimizer without `use_locking`. That is not
  enough for a sparse gradient of a resource variable: TensorFlow applies
  it with ResourceScatterAdd (GradientDescent, Adam), which has no
  `use_locking` and takes the variable's lock shared, so two workers'
  updates of one row lose parts of each other even with the lock asked for
  (`benchmarks/stress_shared_updates.py`: thousands of 4M rows wrong in 20
  rounds on both generations). With several workers such a gradient is
  made a dense tensor on the variable's device: it still travels as
  IndexedSlices, and the update is the dense kernel, which honours
  `use_locking`, at the cost of the whole variable's size on the PS task.
  A ref variable's sparse update (ScatterSub) honours `use_locking` and
  stays sparse; so does every update of one worker alone.
  """
  check_locking(opt, benchmark_cnn, variable_update)
  if benchmark_cnn.cluster.num_tasks('worker') < 2:
    return grads
  result = []
  for g, v in grads:
    if isinstance(g, tf.IndexedSlices) and compat.is_resource_variable(v):
      with tf.colocate_with(v):
        g = tf.convert_to_tensor(g)
    result.append((g, v))
  return result


def _on_variable_device(grad, var):
  """`grad` through an identity colocated with `var` (None stays None)."""
  if grad is None:
    return None
  with tf.colocate_with(var):
    if isinstance(grad, tf.IndexedSlices):
      return tf.IndexedSlices(tf.identity(grad.values), grad.indices,
                              grad.dense_shape)
    return tf.identity(grad)
