"""The one place that knows TensorFlow 1.15 from TensorFlow 2.x.

Everything else in the package imports `tf` from here and reaches private
TensorFlow modules only through the helpers below. Nothing here changes global
TensorFlow state.
"""

import tensorflow as _tf
from tensorflow.python.framework import ops as _ops
from tensorflow.python.ops import data_flow_ops as _data_flow_ops

# The TF1 API under both generations: TF 1.15 has tf.compat.v1 as well.
tf = _tf.compat.v1

IndexedSlices = _tf.IndexedSlices

# The op types that create a variable (ref and resource).
VARIABLE_OP_TYPES = frozenset(
    ['Variable', 'VariableV2', 'AutoReloadVariable', 'VarHandleOp'])


def ps_ops():
  """The op types `replica_device_setter` puts on PS tasks, resource
  variables included whatever the release's default list says."""
  from tensorflow.python.training import device_setter  # pylint: disable=g-import-not-at-top
  return sorted(set(device_setter.STANDARD_PS_OPS) | VARIABLE_OP_TYPES)


def register_tensor_conversion_function(cls, fn):
  """Registers `fn` to convert `cls` objects to tensors (moved in TF 2)."""
  register = getattr(_tf, 'register_tensor_conversion_function', None)
  if register is None:  # pragma: no cover - TF 1.15 before the public alias.
    register = _ops.register_tensor_conversion_function
  register(cls, fn)


def staging_area(dtype, shape):
  """A single-tensor StagingArea (unmaintained upstream; kept working here)."""
  return _data_flow_ops.StagingArea([dtype], shapes=[shape])


def staging_get(area):
  """The one tensor of a single-tensor StagingArea.get().

  TF 1.15 returns the tensor itself; later releases return a one-item list.
  """
  value = area.get()
  if isinstance(value, (list, tuple)):
    (value,) = value
  return value


def is_variable(value):
  """True for a variable of either kind. `tf.compat.v1.Variable` is not the
  base class of TF 2's resource variables; the top-level `tf.Variable` is
  (on 1.15 both kinds derive from it too)."""
  return isinstance(value, _tf.Variable)


def is_resource_variable(var):
  """True for resource variables (TF 2's default), False for ref variables."""
  return getattr(var, 'op', None) is not None and var.op.type == 'VarHandleOp'


def snapshot(var):
  """A copy of `var`'s current value that later updates cannot change.

  A ref variable's read aliases the variable's buffer, so a value held past
  the variable's next in-place update (in a StagingArea, say) would change
  with it: DeepCopy makes a real copy that graph rewriting does not remove.
  A resource variable's read is already a snapshot.
  """
  if is_resource_variable(var):
    return var.read_value()
  return _tf.raw_ops.DeepCopy(x=tf.convert_to_tensor(var))


# NCCL and collective ops live under tensorflow.python.ops in TF 1.15 and
# 2.x alike; they are imported at first use. Only arguments that TF 1.15's
# signatures have are passed: all_reduce(t, group_size, group_key,
# instance_key, merge_op, final_op), broadcast_send(t, shape, dtype,
# group_size, group_key, instance_key), broadcast_recv(shape, dtype,
# group_size, group_key, instance_key).


def nccl_all_sum(tensors):
  """NCCL all-reduce (sum) of one tensor per GPU; outputs on the same GPUs:
  one NcclAllReduce op per input device."""
  from tensorflow.python.ops import nccl_ops  # pylint: disable=g-import-not-at-top
  return nccl_ops.all_sum(tensors)


# The name scope of each `sum_in_order`'s adds (made unique by a suffix).
SUM_SCOPE = 'sum_in_order'


def sum_in_order(tensors):
  """`tensors[0] + tensors[1] + ...` added in that order, a chain of binary
  adds (of one tensor, that tensor itself).

  Not `add_n`: TensorFlow's CPU AddN adds into the first input whose buffer
  no other op holds and, when that input is not the first, moves it to the
  front. Of three terms it adds (x2 + x1) + x0 when x0 and x1 are still held
  elsewhere and (x0 + x1) + x2 when they are not, which the order the ops
  happen to run in decides: two runs of one graph end a last bit apart. A
  chain of adds has one order. (Grappler's arithmetic optimizer may fold a
  chain of equal shapes on one device back into an AddN, on either
  generation: runs that must agree bit for bit turn it off.)
  """
  total = tensors[0]
  if len(tensors) > 1:
    with tf.name_scope(SUM_SCOPE):
      for tensor in tensors[1:]:
        total = tf.add(total, tensor)
  return total


def optimizer_locks(opt):
  """Whether `opt` (a tf.compat.v1.train.Optimizer) updates each variable
  under its lock (`use_locking=True`); None for an optimizer that does not
  say (not a tf.compat.v1.train.Optimizer)."""
  locks = getattr(opt, '_use_locking', None)
  return None if locks is None else bool(locks)


def lock_updates(opt):
  """Makes `opt` (a tf.compat.v1.train.Optimizer) update each variable under
  its lock from now on, as `use_locking=True` at its creation would have;
  False for an optimizer that has no such setting."""
  if optimizer_locks(opt) is None:
    return False
  opt._use_locking = True  # pylint: disable=protected-access
  return True


def major_version():
  """The major release of the installed TensorFlow: 1 or 2."""
  return int(_tf.__version__.split('.')[0])


def interleave(data, map_func, cycle_length, block_length):
  """`data.interleave(map_func, cycle_length, block_length)`, the inner
  datasets read in parallel (AUTOTUNE) where that is sound; the elements
  come in the same order either way.

  TF 1.15's parallel interleave (ParallelInterleaveDatasetV2) frees a
  finished inner iterator on its worker thread after its owner stopped
  waiting for it: when the session closes with the pipeline still running,
  that iterator unhooks itself from the autotuning model the owner has
  already freed, and the process dies of a segmentation fault (about one
  pipeline in 75; benchmarks/stress_input_teardown.py). On 1.15 the inner
  datasets are read one after the other.
  """
  parallel = PARALLEL_INTERLEAVE
  if parallel is None:
    parallel = major_version() >= 2
  if not parallel:
    return data.interleave(map_func, cycle_length=cycle_length,
                           block_length=block_length)
  return data.interleave(map_func, cycle_length=cycle_length,
                         block_length=block_length,
                         num_parallel_calls=tf.data.experimental.AUTOTUNE)


# `interleave` reads in parallel when True, one after the other when False,
# and by release when None (parallel on 2.x only). The stress script sets it
# to show the crash of 1.15's parallel form.
PARALLEL_INTERLEAVE = None


def collectives_lack_half():
  """Whether this TensorFlow's collective ops refuse float16 at run time.

  Where this was read (tensorflow/core/common_runtime/
  base_collective_executor.cc): TensorFlow 1.15 builds a CollectiveReduce
  of float16 and fails its first run on CPU with "CollectiveImplementation
  does not support datatype 19" (DT_HALF, printed as a number), the
  default case of BaseCollectiveExecutor::CreateCollective; the file's
  older form (CreateReducer, CreateBroadcaster) accepts DT_FLOAT,
  DT_DOUBLE, DT_INT32 and DT_INT64 only, for reductions and broadcasts
  alike. The 2.x sources list DT_HALF in CreateCollective for every
  collective and in MakeCollectiveAdapter (2.21's, and an earlier 2.x's
  that predates 2.12). The releases supported here are 1.15 and 2.12-2.21,
  so the major version decides.
  """
  return major_version() < 2


def _collective_dtype(dtype):
  """The dtype a collective of `dtype` values carries: float16 is widened to
  float32 where collectives lack half (exact for a broadcast; a sum in
  float32 rounded once to float16 is at least as close as one in float16)."""
  if dtype.base_dtype == _tf.float16 and collectives_lack_half():
    return _tf.float32
  return dtype.base_dtype


def _collective_input(tensor, device):
  """`tensor` as a collective op takes it on `device`: widened (see
  `_collective_dtype`), and on `device` if it has no device of its own.

  TF 1.15's collective_ops.all_reduce and broadcast_send refuse a tensor
  whose `.device` is empty ("Device assignment required for collective
  ops"), whatever the device scope: the input of a gradient built without an
  explicit device (device functions that leave it open, soft scopes) gets an
  identity on `device`. A tensor with a device is passed as it is.
  """
  with tf.device(device):
    wide = _collective_dtype(tensor.dtype)
    if wide != tensor.dtype.base_dtype:
      tensor = tf.cast(tensor, wide)
    if not tensor.device:
      tensor = tf.identity(tensor)
  return tensor


def collective_all_reduce(tensor, group_size, group_key, instance_key,
                          device):
  """`collective_ops.all_reduce` with merge 'Add' and final 'Id' (a sum) of
  `tensor` on `device`; the result has `tensor`'s dtype (float16 travels as
  float32 where collectives lack half)."""
  from tensorflow.python.ops import collective_ops  # pylint: disable=g-import-not-at-top
  dtype = tensor.dtype.base_dtype
  with tf.device(device):
    value = collective_ops.all_reduce(
        _collective_input(tensor, device), group_size=group_size,
        group_key=group_key, instance_key=instance_key, merge_op='Add',
        final_op='Id')
    if value.dtype != dtype:
      value = tf.cast(value, dtype)
  return value


def collective_broadcast_send(tensor, group_size, group_key, instance_key,
                              device):
  """`collective_ops.broadcast_send`: `tensor` to every member of the group,
  from `device`; returns `tensor`'s value (in its dtype). The shape must be
  fully defined."""
  from tensorflow.python.ops import collective_ops  # pylint: disable=g-import-not-at-top
  dtype = tensor.dtype.base_dtype
  with tf.device(device):
    sent = _collective_input(tensor, device)
    value = collective_ops.broadcast_send(
        sent, sent.shape, sent.dtype, group_size, group_key, instance_key)
    if value.dtype != dtype:
      value = tf.cast(value, dtype)
  return value


def collective_broadcast_recv(shape, dtype, group_size, group_key,
                              instance_key, device):
  """`collective_ops.broadcast_recv` on `device`: the `dtype` tensor one
  member of the group sends (float16 travels as float32 where collectives
  lack half, as `collective_broadcast_send` sends it)."""
  from tensorflow.python.ops import collective_ops  # pylint: disable=g-import-not-at-top
  dtype = _tf.as_dtype(dtype).base_dtype
  wide = _collective_dtype(dtype)
  with tf.device(device):
    value = collective_ops.broadcast_recv(shape, wide, group_size, group_key,
                                          instance_key)
    if wide != dtype:
      value = tf.cast(value, dtype)
  return value


def to_ref_or_handle(var):
  """What `tf.colocate_with` and `as_ref` conversions expect of `var`."""
  if is_resource_variable(var):
    return var.handle
  return var._ref()  # pylint: disable=protected-access
