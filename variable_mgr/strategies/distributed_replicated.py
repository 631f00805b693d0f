"""--variable_update=distributed_replicated: every tower of every worker
keeps local copies of the variables (LOCAL_VARIABLES, under `v<d>/`); the
masters live on the PS tasks under `ps_var/v0/...`.

A step: each worker averages its towers' gradients (the seed's default;
`reduction='sum'` adds them), applies the result to the masters, waits for
every worker to have done so (a barrier a variable), then copies the masters
back into its local copies. Across workers the updates add up.

`variable_partition_min_bytes=N` splits every master of more than N bytes
into slices on different PS tasks (see parameter_server); the local copies
stay whole, a master's barrier waits for every slice's update, and the copy
back reads the slices together.
"""

import collections

from variable_mgr import aggregation
from variable_mgr import base
from variable_mgr import compat
from variable_mgr import interface
from variable_mgr import placement
from variable_mgr.compat import tf
from variable_mgr.strategies import parameter_server
from variable_mgr.strategies import shared_loss_scale

PS_SHADOW_VAR_PREFIX = placement.PS_SHADOW_VAR_PREFIX
_MASTER_PREFIX = PS_SHADOW_VAR_PREFIX + '/v0/'


class VariableMgrDistributedReplicated(
    shared_loss_scale.SharedLossScaleMixin, base.VariableMgr):
  """See the module docstring. The loss scale (use_fp16) is shared on PS 0;
  a dynamic one skips a step on every worker or none (see
  `strategies.shared_loss_scale`).

  Args:
    benchmark_cnn, reduction, accumulation_dtype: see `VariableMgr`.
    variable_partition_min_bytes: split every master of more than this many
      bytes into slices along its first axis, at most one a PS task, none
      smaller than this, each on a PS task of its own (0: off). The towers'
      local copies stay whole; a step applies each slice's part of the
      gradient to its slice and copies the slices back together.

  Raises:
    MissingClusterError: the host has no cluster or no PS hosts.
    InvalidOptionError: a negative or non-integer
      `variable_partition_min_bytes`.
  """

  required_attributes = interface.DISTRIBUTED_ATTRIBUTES + (
      'add_sync_queues_and_barrier',)
  # Every step ends at the barriers of the copy-back.
  always_synchronous = True
  # Other workers update only the masters, which this worker reads only
  # after the step's barriers (the copy-back).
  exchange_after_reads = False

  def __init__(self, benchmark_cnn, reduction=None, accumulation_dtype=None,
               variable_partition_min_bytes=0):
    super(VariableMgrDistributedReplicated, self).__init__(
        benchmark_cnn, reduction, accumulation_dtype)
    min_bytes = placement.check_partitioning(
        variable_partition_min_bytes, 'distributed_replicated', benchmark_cnn)
    self.variable_partition_min_bytes = min_bytes
    self._partitioning = placement.PartitioningGetter(
        min_bytes, len(list(benchmark_cnn.ps_hosts)))
    self._master_device = None
    if min_bytes:
      # The slices of a master each on a PS task of its own; whole masters
      # by bytes, as the host's parameter device places them.
      self._master_device = placement.replica_device_setter(
          worker_device=benchmark_cnn.cpu_device,
          cluster=benchmark_cnn.cluster, ps_ops=compat.ps_ops(),
          ps_strategy=placement.SliceSpreadingStrategy(
              len(list(benchmark_cnn.ps_hosts))))

  def _check_config(self):
    parameter_server.check_cluster(self.benchmark_cnn,
                                   'distributed_replicated')

  def each_tower_has_variables(self):
    return True

  def create_outer_variable_scope(self, device_num):
    return tf.variable_scope(
        'v%s' % device_num,
        custom_getter=placement.OverrideToLocalVariableIfNotPsVar())

  def get_devices(self):
    return self.benchmark_cnn.raw_devices

  def _preprocess(self, tower_grads):
    return [self.benchmark_cnn.param_server_device], {}

  def _master(self, v):
    """The master of tower variable `v`, made on the PS (partitioned if it
    is large enough)."""
    name = PS_SHADOW_VAR_PREFIX + '/' + base.strip_port(v.op.name)
    with tf.variable_scope(tf.get_variable_scope(),
                           custom_getter=self._partitioning):
      if self._master_device is None:
        return tf.get_variable(name, dtype=v.dtype.base_dtype,
                               initializer=v.initial_value, trainable=True)
      with tf.device(self._master_device):
        return tf.get_variable(name, dtype=v.dtype.base_dtype,
                               initializer=v.initial_value, trainable=True)

  def _gradients_to_apply(self, device_num, state):
    agg = aggregation.aggregate_gradients_using_copy_with_device_selection(
        self.benchmark_cnn, state.tower_grads, self.use_mean,
        self.accumulation_dtype)
    masters = state.payload  # master (slice) variable name -> gradient index
    result = []
    for i, (g, v) in enumerate(agg):
      master = self._master(v)
      if not placement.is_partitioned(master):
        masters[master.op.name] = i
        result.append((g, master))
        continue
      slices = list(master)
      axis = placement.slice_info(slices[0])[2]
      if g is not None:
        # A slice's part of the gradient, cut where the variable is; a
        # sparse gradient is made dense first (its rows span the slices).
        g = tf.split(tf.convert_to_tensor(g),
                     [s.shape.as_list()[axis] for s in slices], axis)
      for k, part in enumerate(slices):
        masters[part.op.name] = i
        result.append((None if g is None else g[k], part))
    return result

  def _append_apply(self, gradient_state, opt, grads, training_ops):
    # Every worker updates the masters on the PS tasks (see locked_updates).
    grads = parameter_server.locked_updates(opt, grads, self.benchmark_cnn,
                                            'distributed_replicated')
    towers = gradient_state.tower_grads
    # Slices of one master, in order, under its gradient index.
    by_index = collections.OrderedDict()
    for g, master in grads:
      by_index.setdefault(gradient_state.payload[master.op.name], []).append(
          (g, master))
    for i, pairs in by_index.items():
      apply_ops = [opt.apply_gradients([pair]) for pair in pairs]
      barrier = self.benchmark_cnn.add_sync_queues_and_barrier(
          'replicate_variable_%s' % i, apply_ops)
      with tf.control_dependencies([barrier]):
        with tf.device(self.benchmark_cnn.cpu_device):
          updated = _read_whole([master for _, master in pairs])
          for tower in towers:
            local = tower[i][1]
            # The copy back overwrites the tower's local copy: after the
            # tower's reads of it (see variable_mgr.ordering).
            value = gradient_state.after_reads(updated, local)
            training_ops.append(local.assign(value, read_value=False))

  def get_post_init_ops(self):
    """Copies each master into every tower's local copy."""
    local_by_name = dict((base.strip_port(v.name), v)
                         for v in tf.local_variables())
    masters = [v for v in tf.global_variables()
               if base.strip_port(v.name).startswith(_MASTER_PREFIX)]
    groups = placement.partitioned_groups(masters)
    wholes = [(base.strip_port(v.name), [v]) for v in masters
              if placement.slice_info(v) is None]
    ops = []
    for name, parts in wholes + list(groups.items()):
      suffix = name[len(_MASTER_PREFIX):]
      value = _read_whole(parts)
      for d in range(self.num_towers):
        local = local_by_name.get('v%d/%s' % (d, suffix))
        if local is not None:
          ops.append(local.assign(value, read_value=False))
    return ops

  @property
  def partitioned_variables(self):
    """`{full name: PartitionedVariable}` of the variables split so far."""
    return dict(self._partitioning.partitioned)

  def get_variables_to_save(self):
    """See `VariableMgr`; a partitioned master is saved whole, under its
    canonical name (`placement.with_whole_partitioned`)."""
    return placement.with_whole_partitioned(
        super(VariableMgrDistributedReplicated, self).get_variables_to_save(),
        self._savable_candidates(), self._partitioning.partitioned,
        self._canonical_name)

  def _savable_candidates(self):
    # Masters first, so that they win over tower 0's local copies.
    return tf.global_variables() + tf.local_variables()

  def _canonical_name(self, name):
    if name.startswith(PS_SHADOW_VAR_PREFIX + '/'):
      name = name[len(PS_SHADOW_VAR_PREFIX) + 1:]
    return super(VariableMgrDistributedReplicated, self)._canonical_name(name)


def _read_whole(parts):
  """The value of a master: its one variable, or its slices concatenated
  along their axis."""
  if len(parts) == 1 and placement.slice_info(parts[0]) is None:
    return parts[0].read_value()
  axis = placement.slice_info(parts[0])[2]
  return tf.concat([p.read_value() for p in parts], axis)
