"""What the strategies with a copy of the variables a tower share."""

from variable_mgr import base
from variable_mgr.compat import tf


def copy_from_tower_zero_ops(variables):
  """Assign ops that copy every `v0/x` to each `v<d>/x`, d > 0.

  Variables outside the tower scopes are left alone.
  """
  by_name = dict((base.strip_port(v.name), v) for v in variables)
  reads = {}  # One read of each source, shared by its copies.
  ops = []
  for var in variables:
    name = base.strip_port(var.name)
    scope, index = base.tower_scope_of(name)
    if scope is None or index in (None, 0):
      continue
    source = by_name.get('v0/' + base.canonical_name(name))
    if source is None:
      continue
    if source.name not in reads:
      reads[source.name] = source.read_value()
    ops.append(var.assign(reads[source.name], read_value=False))
  return ops


class TowerCopiesMgr(base.VariableMgr):
  """Variables under `v<d>/` on tower d, each tower applying its own list of
  `_preprocess`'s payload (`[tower][(grad, var)]`) on its own device; the
  post-init ops copy tower 0's values to the other towers."""

  gradients_by_device = True

  def each_tower_has_variables(self):
    return True

  def create_outer_variable_scope(self, device_num):
    return tf.variable_scope('v%s' % device_num)

  def get_devices(self):
    return self.benchmark_cnn.raw_devices

  def _gradients_to_apply(self, device_num, state):
    return list(state.payload[device_num])

  def get_post_init_ops(self):
    return copy_from_tower_zero_ops(tf.global_variables())
