"""collective_all_reduce's two levels: a worker's towers summed on one device
of the worker, one collective a gradient across the workers, the result
handed to every tower of the worker.

With K workers of T towers, a flat ring over every tower makes each host
link carry the ring's bytes T times over (every tower of a worker is a
member of its own, and the ring's neighbours of most members are on other
hosts); summing the worker's towers first makes each worker one member of a
group of K, so a host link carries a ring over K members: 2 (K-1)/K of the
gradient's bytes each way, whatever T is.

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


def reduce_gradient(grads, devices, wide, num_workers, group_key,
                    instance_key, factor):
  """One variable's gradients of a worker's towers, reduced over the cluster.

  Args:
    grads: the gradient of each tower of this worker (tensors or
      IndexedSlices; none None), in tower order.
    devices: the towers' devices, in the same order.
    wide: the accumulation dtype float16 gradients are added in, or None.
    num_workers: members of the collective, one a worker; with one worker
      there is no collective.
    group_key, instance_key: the collective's keys (equal on every worker).
    factor: what the cluster's sum is multiplied by (1 / towers of the
      cluster for a mean), or None for the sum.

  Returns:
    One tensor a tower, on the tower's device, in the gradients' dtype: the
    first tower's is the reduction itself, the others identities of it.
  """
  dtype = grads[0].dtype.base_dtype
  with tf.device(devices[0]):
    parts = [aggregation.densify(g) for g in grads]
    if wide is not None and dtype == tf.float16:
      parts = [tf.cast(p, wide) for p in parts]
    total = tf.add_n(parts) if len(parts) > 1 else parts[0]
    # A group of one has nothing to add (and older TensorFlow releases
    # refuse one).
    if num_workers > 1:
      total = compat.collective_all_reduce(
          total, num_workers, group_key, instance_key, devices[0])
    if factor is not None:
      total = aggregation.scale(total, factor)
    if total.dtype != dtype:
      total = tf.cast(total, dtype)
  result = [total]
  for device in devices[1:]:
    with tf.device(device):
      result.append(tf.identity(total))
  return result


def count_on_first_device(values, devices):
  """The sum of float32 scalars `values` (one a tower) as a `[1]` tensor on
  `devices[0]`, the worker's member of its collectives."""
  with tf.device(devices[0]):
    parts = [tf.reshape(tf.cast(v, tf.float32), [1]) for v in values]
    return tf.add_n(parts) if len(parts) > 1 else parts[0]
