"""Buckets: which gradients travel together across the workers, and in
what order (collective_all_reduce, distributed_all_reduce, and the pushes
of parameter_server on a cluster).

The backward pass produces the last layer's gradients first. The
gradients are taken in that order and grouped into buckets of at most
`bucket_bytes` bytes each: consecutive gradients of one dtype, laid flat
end to end in one buffer (one `ConcatV2`), which one all-reduce carries
across the workers and one `Split` cuts back. collective_all_reduce packs
the worker's sums of its towers' gradients (`worker_hierarchy`) on the
worker's first tower, one collective a bucket; distributed_all_reduce
packs each tower's gradients on its own device, and its spec's algorithm
reduces the buffers as it would the gradients; parameter_server packs a
worker's gradients of one PS task's variables on the worker and cuts the
buffer back on that task. A bucket's all-reduce (or push) waits
for its own gradients only, so the first buckets cross the network while
the backward pass is still computing the earlier layers' gradients; a
bucket rather than a gradient an all-reduce keeps small tensors from each
paying an all-reduce's fixed cost.

Which gradient comes first is read off the graph: `tf.gradients` builds the
ops of the backward pass in the order they can run, the last layer's
first, so the op that produces a gradient was created earlier the earlier
the backward pass can produce it (`backward_order`). Every worker builds
the same model and so finds the same order and the same buckets: a
bucket's collective instance key is that of its first gradient in the
towers' list, so keys match across workers and no two buckets share one.
Every worker must be given the same `bucket_bytes`. The order is read off
the gradients the harness gave (`Bucketed.preprocess_device_grads`): the
training options add ops of their own after them (gates, unscaling),
built in the list's order.

A gradient larger than `bucket_bytes` is a bucket of its own, reduced as it
is (no copy in or out); so is one whose shape is not fully defined.
`bucket_bytes=0` makes every gradient a bucket of its own, in the towers'
order: one all-reduce a gradient, as before buckets.

Packing is exact: concatenating, reducing and cutting back adds each
element of one tower or worker to the same element of every other, as an
all-reduce of the gradient alone does. With two members each element's
sum is one addition, so the numbers equal those of an all-reduce a
gradient bit for bit; with more, a ring's chunks fall elsewhere in a
buffer than in a lone gradient, so the order in which the members' values
are added (and so the last bit of a float sum) can differ.
"""

import collections

from variable_mgr import errors
from variable_mgr.compat import tf

# The bucket size when the user sets none: 256 KiB, measured on the
# balanced network cells (benchmarks/NETWORK_BALANCED_RESULTS.md: resnet20,
# 1.09 MB of gradients, 2 workers, at rates where the ring's bound is 2x,
# 1x and 0.5x of the compute): the step 5-14% below 1 MiB's, whose first
# bucket held most of the model and left only late in the backward pass,
# and at or near the best of one gradient a bucket (which pays a
# collective's fixed cost 65 times a step) and 64 KiB. distributed_all_reduce
# takes the same: at the 1x rate (benchmarks/NETWORK_BUCKETS_RESULTS.md,
# commit 869a4db) its step was 118 ms with 256 KiB, 120 ms with 64 KiB, 131
# ms with one gradient a bucket and 136 ms with 1 MiB. parameter_server's
# pushes default to one gradient a push instead: in the run of 4035ea4
# buckets of 64 KiB to 1 MiB made them no faster (111 ms alone against
# 113-122 ms; staged 118 against 118-128 ms), in that of 869a4db faster
# (122-129 ms against 141; staged 126-142 against 146), on unshaped steps
# that varied as much between its cells (docs/network-benchmarks.md).
DEFAULT_BUCKET_BYTES = 256 << 10


def backward_order(tensors):
  """The indices of `tensors` (None entries left out) in the order the
  backward pass produces them: by the creation order of the op that
  produces each (`IndexedSlices` by their values' op)."""
  position = {}
  present = [(i, t) for i, t in enumerate(tensors) if t is not None]
  if not present:
    return []
  graph = _op_of(present[0][1]).graph
  for k, op in enumerate(graph.get_operations()):
    position[op.name] = k
  return [i for _, i in sorted((position[_op_of(t).name], i)
                               for i, t in present)]


def _op_of(tensor):
  values = getattr(tensor, 'values', None)
  if values is not None and not callable(values):
    return values.op
  return tensor.op


Bucket = collections.namedtuple('Bucket', 'indices key_index')


def plan(sizes, dtypes, order, bucket_bytes):
  """The buckets of gradients `order` (indices, in the order to send them).

  Args:
    sizes: bytes of gradient i as it crosses the network, or None for a
      shape that is not fully defined.
    dtypes: the dtype gradient i crosses in.
    order: the indices to place, first to send first.
    bucket_bytes: the largest bucket, in bytes; 0 for one gradient a
      bucket.

  Returns:
    `[Bucket(indices, key_index)]` in sending order: consecutive indices of
    `order` of one dtype whose sizes add up to at most `bucket_bytes` (one
    index alone when it alone is larger or has no static size);
    `key_index` is the smallest index of the bucket, whose instance key the
    bucket's collective takes.
  """
  buckets = []
  current, current_bytes = [], 0
  for i in order:
    fits = (bucket_bytes and sizes[i] is not None and current and
            dtypes[i] == dtypes[current[0]] and
            current_bytes + sizes[i] <= bucket_bytes)
    if current and not fits:
      buckets.append(current)
      current, current_bytes = [], 0
    current.append(i)
    current_bytes += sizes[i] or 0
    if not bucket_bytes or sizes[i] is None:
      buckets.append(current)
      current, current_bytes = [], 0
  if current:
    buckets.append(current)
  return [Bucket(b, min(b)) for b in buckets]


def static_bytes(tensor):
  """Bytes of `tensor`'s value, or None if its shape is not fully
  defined."""
  shape = tensor.shape
  if not shape.is_fully_defined():
    return None
  return shape.num_elements() * tensor.dtype.base_dtype.size


def pack(tensors):
  """`tensors` (one dtype, fully defined shapes) laid flat end to end in
  one buffer, on the current device; one tensor is its own buffer."""
  if len(tensors) == 1:
    return tensors[0]
  return tf.concat([tf.reshape(t, [-1]) for t in tensors], 0)


def unpack(buffer, shapes):
  """`pack`'s buffer cut back into tensors of `shapes`, on the current
  device."""
  if len(shapes) == 1:
    return [buffer]
  parts = tf.split(buffer, [s.num_elements() for s in shapes], 0)
  return [tf.reshape(p, s) for p, s in zip(parts, shapes)]


def reduce_bucket(tensors, reduce_fn):
  """`reduce_fn(buffer)` of `tensors` (one dtype, fully defined shapes, on
  the current device) laid flat end to end, cut back into their shapes.
  One tensor is reduced as it is."""
  return unpack(reduce_fn(pack(tensors)), [t.shape for t in tensors])


class Bucketed(object):
  """What a strategy that sends its gradients in buckets shares: the
  bucket size (`configure_buckets`) and the backward pass's order, read
  off the harness's own gradients. A mixin before the strategy's base
  class; `_all_reduce_name` names what carries a bucket (an all-reduce,
  a push to a PS task), in the refusal of a bad size."""

  # Bytes a bucket holds at most; `configure_buckets` sets it.
  bucket_bytes = DEFAULT_BUCKET_BYTES
  _all_reduce_name = 'all-reduce'
  # The harness's (grad, var) pairs of tower 0.
  _harness_tower = ()

  def configure_buckets(self, bucket_bytes):
    """Sets the largest bucket of gradients one all-reduce carries across
    the workers, in bytes: 0 sends every gradient in an all-reduce of its
    own. Every worker must set the same. `variable_mgr.create(...,
    bucket_bytes=N)` calls it; call it before `preprocess_device_grads`.

    Raises:
      InvalidOptionError: not an int of at least 0.
    """
    if (isinstance(bucket_bytes, bool) or
        not isinstance(bucket_bytes, int) or bucket_bytes < 0):
      raise errors.InvalidOptionError(
          'bucket_bytes=%r: the largest bucket of gradients one %s '
          'carries is a whole number of bytes, 0 or more; pass e.g. %d, '
          'or 0 for one %s a gradient.' %
          (bucket_bytes, self._all_reduce_name, DEFAULT_BUCKET_BYTES,
           self._all_reduce_name))
    self.bucket_bytes = bucket_bytes

  def preprocess_device_grads(self, device_grads):
    towers = [list(grads) for grads in device_grads]
    self._harness_tower = towers[0] if towers else []
    return super(Bucketed, self).preprocess_device_grads(towers)

  def _backward_order(self, present):
    """The indices `present` (of the towers' lists) in the order the
    backward pass produces their gradients."""
    # Validated by now: pairs.
    return [i for i in backward_order([g for g, _ in self._harness_tower])
            if i in present]
