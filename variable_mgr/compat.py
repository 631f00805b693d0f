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
# signatures have are passed.


def nccl_all_sum(tensors):
  """NCCL all-reduce (sum) of one tensor per GPU; outputs on the same GPUs:
  one NcclAllReduce op per input device."""
  from tensorflow.python.ops import nccl_ops  # pylint: disable=g-import-not-at-top
  return nccl_ops.all_sum(tensors)


def collective_all_reduce(tensor, group_size, group_key, instance_key):
  """`collective_ops.all_reduce` with merge 'Add' and final 'Id' (a sum)."""
  from tensorflow.python.ops import collective_ops  # pylint: disable=g-import-not-at-top
  return collective_ops.all_reduce(
      tensor, group_size=group_size, group_key=group_key,
      instance_key=instance_key, merge_op='Add', final_op='Id')


def collective_broadcast_send(tensor, group_size, group_key, instance_key):
  """`collective_ops.broadcast_send`: `tensor` to every member of the group;
  returns `tensor`. The shape must be fully defined."""
  from tensorflow.python.ops import collective_ops  # pylint: disable=g-import-not-at-top
  return collective_ops.broadcast_send(
      tensor, tensor.shape, tensor.dtype, group_size, group_key, instance_key)


def collective_broadcast_recv(shape, dtype, group_size, group_key,
                              instance_key):
  """`collective_ops.broadcast_recv`: the tensor one member of the group
  sends."""
  from tensorflow.python.ops import collective_ops  # pylint: disable=g-import-not-at-top
  return collective_ops.broadcast_recv(shape, dtype, group_size, group_key,
                                       instance_key)


def to_ref_or_handle(var):
  """What `tf.colocate_with` and `as_ref` conversions expect of `var`."""
  if is_resource_variable(var):
    return var.handle
  return var._ref()  # pylint: disable=protected-access
