"""--variable_update=replicated: a copy of the variables on every tower,
gradients all-reduced so that every copy gets the same update."""

from variable_mgr import aggregation
from variable_mgr import errors
from variable_mgr.allreduce import packing
from variable_mgr.allreduce import spec as spec_lib
from variable_mgr.compat import tf
from variable_mgr.strategies import _replicas


def _device_type(device):
  return (tf.DeviceSpec.from_string(device).device_type or '').upper()


class VariableMgrLocalReplicated(_replicas.TowerCopiesMgr):
  """Each tower keeps its variables under `v<d>/`; gradients are summed over
  towers (the seed's default; `reduction='mean'` divides by the tower count)
  and every tower applies the result to its copy.

  The all-reduce is, by default, the seed's copy: gradient i is summed on
  device i mod n of the parameter devices (the tower devices with
  local_parameter_device 'gpu', else the parameter-server device) and read
  back by every tower. `use_nccl` uses NCCL instead; `all_reduce_spec`
  chooses among the algorithms of `variable_mgr.allreduce` (see its grammar:
  'xring', 'pscpu:32k:xring', 'nccl', ...), optionally with packing.

  The post-init ops copy tower 0's initial values to every tower, so the
  copies stay equal. Checkpoints hold tower 0.

  Args:
    benchmark_cnn: the host object.
    use_nccl: all-reduce with NCCL (GPU towers only).
    reduction: 'sum' (default) or 'mean'.
    all_reduce_spec: an --all_reduce_spec string, or None.
    gradient_repacking: if > 0, all-reduce this many packs of the
      concatenated gradients instead of each gradient.
    agg_small_grads_max_bytes, agg_small_grads_max_group: if max_bytes > 0,
      gradients of at most that many bytes are concatenated into groups of
      at most max_group before the all-reduce.
    float16_transfer: float32 gradients travel as float16 (sums lose
      precision; see `variable_mgr.allreduce.packing.with_float16_transfer`).
    accumulation_dtype: see `VariableMgr`; with NCCL or a spec, float16
      gradients are cast to it on their tower before the all-reduce.

  Raises:
    NcclDeviceError: NCCL (flag or spec) with towers that are not GPUs.
    IncompatibleOptionsError: `use_nccl` with `all_reduce_spec`, or
      repacking with small-gradient aggregation.
    AllReduceSpecError: a spec that breaks the grammar.
    PackingOptionError: a packing count or size out of range.
  """

  default_reduction = 'sum'
  supports_relaxed_consistency = True

  def __init__(self, benchmark_cnn, use_nccl, reduction=None,
               all_reduce_spec=None, gradient_repacking=0,
               agg_small_grads_max_bytes=0, agg_small_grads_max_group=10,
               float16_transfer=False, accumulation_dtype=None):
    self._use_nccl = bool(use_nccl)
    self._spec = all_reduce_spec
    self._packing = (gradient_repacking, agg_small_grads_max_bytes,
                     agg_small_grads_max_group, bool(float16_transfer))
    self._reduce_fn = None
    super(VariableMgrLocalReplicated, self).__init__(
        benchmark_cnn, reduction, accumulation_dtype)

  def _check_config(self):
    repacks, small_bytes, small_group, float16 = self._packing
    if self._use_nccl and self._spec is not None:
      raise errors.IncompatibleOptionsError(
          'use_nccl=True with all_reduce_spec=%r: choose one; '
          'all_reduce_spec=\'nccl\' is the same as use_nccl.' % self._spec)
    if repacks and small_bytes:
      raise errors.IncompatibleOptionsError(
          'gradient_repacking=%r with agg_small_grads_max_bytes=%r: '
          'repacking already concatenates every gradient; use one of the '
          'two.' % (repacks, small_bytes))
    spec = self._spec
    if spec is None and (repacks or small_bytes or float16):
      spec = 'copy'  # Packing options apply to an all-reduce algorithm.
    nccl = self._use_nccl
    if spec is not None:
      nccl = nccl or any(stage.name == 'nccl'
                         for r in spec_lib.parse_spec(spec)
                         for stage in r.stages)
    if nccl:
      not_gpu = [d for d in self.benchmark_cnn.raw_devices
                 if _device_type(d) != 'GPU']
      if not_gpu:
        raise errors.NcclDeviceError(
            'NCCL all-reduce (use_nccl or all_reduce_spec) with tower '
            'devices %s: NCCL runs only between GPUs; use GPU towers, or '
            'the default copy all-reduce, or an all_reduce_spec without '
            'nccl such as \'xring\'.' % ', '.join(not_gpu))
    if spec is not None:
      fn = spec_lib.all_reduce_fn(spec, param_devices=self._param_devices())
      if float16:
        fn = packing.with_float16_transfer(fn)
      if small_bytes:
        fn = packing.with_small_tensor_aggregation(fn, small_bytes,
                                                   small_group)
      if repacks:
        fn = packing.with_repacking(fn, repacks)
      self._reduce_fn = fn

  def _param_devices(self):
    """Hook: where a one-stage `pscpu` range sums (the parameter-server
    device here); None: CPU 0 of each worker of the towers."""
    return [self.benchmark_cnn.param_server_device]

  def _preprocess(self, tower_grads):
    devices = self.benchmark_cnn.raw_devices
    if self._reduce_fn is None and not self._use_nccl:
      agg = aggregation.aggregate_gradients_using_copy_with_device_selection(
          self.benchmark_cnn, tower_grads, self.use_mean,
          self.accumulation_dtype)
      return devices, [[(g, v) for (_, v), (g, _) in zip(tower, agg)]
                       for tower in tower_grads]
    wide = self.accumulation_dtype
    widened = [[(_cast(g, wide, d, widen=True), v) for g, v in tower]
               for tower, d in zip(tower_grads, devices)]
    if self._reduce_fn is not None:
      reduced = self._all_reduce(widened, devices)
    else:
      reduced = aggregation.sum_gradients_all_reduce(widened, devices)
    factor = 1.0 / len(devices) if self.use_mean else None
    return devices, [
        [(_finish(g, factor, v.dtype.base_dtype, d), v) for g, v in tower]
        for tower, d in zip(reduced, devices)]

  def _all_reduce(self, tower_grads, devices):
    """`self._reduce_fn` over the gradients that are not None."""
    indices = [i for i, (g, _) in enumerate(tower_grads[0]) if g is not None]
    tensors = [[aggregation.densify(tower[i][0]) for i in indices]
               for tower in tower_grads]
    sums = self._reduce_fn(tensors, devices) if indices else tensors
    reduced = [[(None, v) for _, v in tower] for tower in tower_grads]
    for d, row in enumerate(sums):
      for i, g in zip(indices, row):
        reduced[d][i] = (g, tower_grads[d][i][1])
    return reduced


def _cast(grad, dtype, device, widen=False):
  """`grad` in `dtype` on `device`; with `widen`, only float16 widens."""
  if grad is None or dtype is None or grad.dtype == dtype:
    return grad
  if widen and grad.dtype != tf.float16:
    return grad
  with tf.device(device):
    return tf.cast(aggregation.densify(grad), dtype)


def _finish(grad, factor, dtype, device):
  """A reduced gradient scaled by `factor` (None: not) in `dtype`."""
  if grad is None:
    return None
  if factor is not None:
    with tf.device(device):
      grad = aggregation.scale(grad, factor)
  return _cast(grad, dtype, device)
