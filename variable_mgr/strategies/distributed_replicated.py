"""--variable_update=distributed_replicated: every tower of every worker
keeps local copies of the variables (LOCAL_VARIABLES, under `v<d>/`); the
masters live on the PS tasks under `ps_var/v0/...`.

A step: each worker averages its towers' gradients (the seed's default;
`reduction='sum'` adds them), applies the result to the masters, waits for
every worker to have done so (a barrier a variable), then copies the masters
back into its local copies. Across workers the updates add up.
"""

from variable_mgr import aggregation
from variable_mgr import base
from variable_mgr import interface
from variable_mgr import placement
from variable_mgr.compat import tf
from variable_mgr.strategies import parameter_server

PS_SHADOW_VAR_PREFIX = placement.PS_SHADOW_VAR_PREFIX
_MASTER_PREFIX = PS_SHADOW_VAR_PREFIX + '/v0/'


class VariableMgrDistributedReplicated(base.VariableMgr):
  """See the module docstring.

  Raises:
    MissingClusterError: the host has no cluster or no PS hosts.
  """

  required_attributes = interface.DISTRIBUTED_ATTRIBUTES + (
      'add_sync_queues_and_barrier',)

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

  def _gradients_to_apply(self, device_num, state):
    agg = aggregation.aggregate_gradients_using_copy_with_device_selection(
        self.benchmark_cnn, state.tower_grads, self.use_mean,
        self.accumulation_dtype)
    masters = state.payload  # master variable name -> gradient index
    result = []
    for i, (g, v) in enumerate(agg):
      name = PS_SHADOW_VAR_PREFIX + '/' + base.strip_port(v.op.name)
      master = tf.get_variable(name, dtype=v.dtype.base_dtype,
                               initializer=v.initial_value, trainable=True)
      masters[master.op.name] = i
      result.append((g, master))
    return result

  def _append_apply(self, gradient_state, opt, grads, training_ops):
    towers = gradient_state.tower_grads
    for g, master in grads:
      i = gradient_state.payload[master.op.name]
      apply_op = opt.apply_gradients([(g, master)])
      barrier = self.benchmark_cnn.add_sync_queues_and_barrier(
          'replicate_variable_%s' % i, [apply_op])
      with tf.control_dependencies([barrier]):
        with tf.device(self.benchmark_cnn.cpu_device):
          updated = master.read_value()
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
    ops = []
    for master in tf.global_variables():
      name = base.strip_port(master.name)
      if not name.startswith(_MASTER_PREFIX):
        continue
      suffix = name[len(_MASTER_PREFIX):]
      value = master.read_value()
      for d in range(self.num_towers):
        local = local_by_name.get('v%d/%s' % (d, suffix))
        if local is not None:
          ops.append(local.assign(value, read_value=False))
    return ops

  def _savable_candidates(self):
    # Masters first, so that they win over tower 0's local copies.
    return tf.global_variables() + tf.local_variables()

  def _canonical_name(self, name):
    if name.startswith(PS_SHADOW_VAR_PREFIX + '/'):
      name = name[len(PS_SHADOW_VAR_PREFIX) + 1:]
    return super(VariableMgrDistributedReplicated, self)._canonical_name(name)
