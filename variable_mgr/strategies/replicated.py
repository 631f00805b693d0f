"""--variable_update=replicated: a copy of the variables on every tower,
gradients all-reduced so that every copy gets the same update."""

from variable_mgr import aggregation
from variable_mgr import base
from variable_mgr import errors
from variable_mgr.compat import tf
from variable_mgr.strategies import _replicas


def _device_type(device):
  return (tf.DeviceSpec.from_string(device).device_type or '').upper()


class VariableMgrLocalReplicated(base.VariableMgr):
  """Each tower keeps its variables under `v<d>/`; gradients are summed over
  towers (the seed's default; `reduction='mean'` divides by the tower count)
  with NCCL or by copying each gradient to one device (gradient i on device
  i mod n of the parameter devices) and back.

  The post-init ops copy tower 0's initial values to every tower, so the
  copies stay equal. Checkpoints hold tower 0.

  Args:
    benchmark_cnn: the host object.
    use_nccl: all-reduce with NCCL (GPU towers only).
    reduction: 'sum' (default) or 'mean'.

  Raises:
    NcclDeviceError: `use_nccl` with towers that are not GPUs.
  """

  default_reduction = 'sum'

  def __init__(self, benchmark_cnn, use_nccl, reduction=None):
    self._use_nccl = bool(use_nccl)
    super(VariableMgrLocalReplicated, self).__init__(benchmark_cnn, reduction)

  def _check_config(self):
    if self._use_nccl:
      not_gpu = [d for d in self.benchmark_cnn.raw_devices
                 if _device_type(d) != 'GPU']
      if not_gpu:
        raise errors.NcclDeviceError(
            'use_nccl=True with tower devices %s: NCCL runs only between '
            'GPUs; use GPU towers or set use_nccl=False for the copy '
            'all-reduce.' % ', '.join(not_gpu))

  def each_tower_has_variables(self):
    return True

  def create_outer_variable_scope(self, device_num):
    return tf.variable_scope('v%s' % device_num)

  def get_devices(self):
    return self.benchmark_cnn.raw_devices

  def _preprocess(self, tower_grads):
    devices = self.benchmark_cnn.raw_devices
    if self._use_nccl:
      reduced = aggregation.sum_gradients_all_reduce(tower_grads, devices)
      if self.use_mean:
        reduced = [[(None if g is None else _scale(g, 1.0 / len(devices), d),
                     v) for g, v in tower]
                   for tower, d in zip(reduced, devices)]
    else:
      agg = aggregation.aggregate_gradients_using_copy_with_device_selection(
          self.benchmark_cnn, tower_grads, self.use_mean)
      reduced = [[(g, v) for (_, v), (g, _) in zip(tower, agg)]
                 for tower in tower_grads]
    return devices, reduced

  def _gradients_to_apply(self, device_num, state):
    return _replicas.per_tower_gradients(state.payload, device_num)

  def get_post_init_ops(self):
    return _replicas.copy_from_tower_zero_ops(tf.global_variables())


def _scale(grad, factor, device):
  with tf.device(device):
    return grad * tf.cast(factor, grad.dtype)
