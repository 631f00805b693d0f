"""collective_all_reduce's two levels: a worker's towers summed on one device
of the worker, one collective a gradient across the workers, the result
handed to every tower of the worker.

With K workers of T towers, a flat ring over every tower (every tower a
member of its own) makes each host link carry more than a ring over the
workers: 2 (KT-1)/(KT) of the gradient's bytes each way instead of
2 (K-1)/K, 1.50x of it with two workers of two towers (measured,
benchmarks/NETWORK_ALLREDUCE_RESULTS.md); summing the worker's towers first
makes each worker one member of a group of K, so a host link carries the
ring over K members whatever T is.

The worker's sum is made on its first tower's device (`devices[0]`), which
is also the worker's member of the collective: that tower's gradient is
already there (one copy fewer than on any other device), the sum stays on an
accelerator when the towers are GPUs (the CPU would make every tower's
gradient cross to host memory and the result cross back), and on CPU towers
it is the CPU. Everything before the collective (densifying sparse
gradients, widening float16 ones to the accumulation dtype) is made there
too, on the gradients as they arrive: narrow float16 and sparse values
travel between the worker's devices, not their widened or dense forms.

No collective runs inside a worker, and no control dependency is added:
every tower's reduced gradient is a data descendant of the one collective.
"""

from variable_mgr import aggregation
from variable_mgr import compat
from variable_mgr.compat import tf


def worker_sum(grads, device, wide):
  """One variable's gradients of a worker's towers (tensors or
  IndexedSlices, none None, in tower order) summed on `device`, densified,
  float16 ones added in `wide` when it is given: the tensor that crosses
  the network, in the dtype it crosses in."""
  dtype = grads[0].dtype.base_dtype
  with tf.device(device):
    parts = [aggregation.densify(g) for g in grads]
    if wide is not None and dtype == tf.float16:
      parts = [tf.cast(p, wide) for p in parts]
    return compat.sum_in_order(parts)


def across_workers(num_workers, group_key, instance_key, device, factor):
  """A function of a tensor on `device`: its collective all-reduce over
  `num_workers` members (none with one worker: a group of one has nothing
  to add, and older TensorFlow releases refuse one), times `factor` unless
  it is None."""
  def reduce_fn(value):
    with tf.device(device):
      if num_workers > 1:
        value = compat.collective_all_reduce(
            value, num_workers, group_key, instance_key, device)
      if factor is not None:
        value = aggregation.scale(value, factor)
    return value
  return reduce_fn


def hand_out(value, dtype, devices):
  """`value` (on `devices[0]`) cast back to `dtype`, one tensor a tower:
  the first tower's is the value itself, the others identities of it on
  their own devices."""
  with tf.device(devices[0]):
    if value.dtype != dtype:
      value = tf.cast(value, dtype)
  result = [value]
  for device in devices[1:]:
    with tf.device(device):
      result.append(tf.identity(value))
  return result


def count_on_first_device(values, devices):
  """The sum of float32 scalars `values` (one a tower) as a `[1]` tensor on
  `devices[0]`, the worker's member of its collectives."""
  with tf.device(devices[0]):
    parts = [tf.reshape(tf.cast(v, tf.float32), [1]) for v in values]
    return compat.sum_in_order(parts)
