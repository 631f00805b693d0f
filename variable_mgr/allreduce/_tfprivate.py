"""The only module of `variable_mgr.allreduce` that imports TensorFlow's
private modules.

`nccl_ops` and `collective_ops` live under `tensorflow.python.ops` in TF 1.15
and in TF 2.x alike. Each import is attempted lazily, at first use, so that
importing this package never fails and never touches TensorFlow state.
"""


def nccl_all_sum(tensors):
  """`nccl_ops.all_sum(tensors)`: one NcclAllReduce op per input device."""
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
