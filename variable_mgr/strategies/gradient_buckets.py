"""collective_all_reduce's buckets: which gradients travel together across
the workers, and in what order.

The backward pass produces the last layer's gradients first. The worker's
sums of its towers' gradients (`worker_hierarchy`) are taken in that order
and grouped into buckets of at most `bucket_bytes` bytes each: consecutive
gradients of one dtype, laid flat end to end in one buffer (one `ConcatV2`
on the worker's first tower), which one collective all-reduce carries
across the workers and one `Split` cuts back. A bucket's all-reduce waits
for its own gradients only, so the first buckets cross the network while
the backward pass is still computing the earlier layers' gradients; a
bucket rather than a gradient a collective keeps small tensors from each
paying a collective's fixed cost.

Which gradient comes first is read off the graph: `tf.gradients` builds the
ops of the backward pass in the order they can run, the last layer's
first, so the op that produces a gradient was created earlier the earlier
the backward pass can produce it (`backward_order`). Every worker builds
the same model and so finds the same order and the same buckets: a
bucket's collective instance key is that of its first gradient in the
towers' list, so keys match across workers and no two buckets share one.
Every worker must be given the same `bucket_bytes`.

A gradient larger than `bucket_bytes` is a bucket of its own, reduced as it
is (no copy in or out); so is one whose shape is not fully defined.
`bucket_bytes=0` makes every gradient a bucket of its own, in the towers'
order: one collective a gradient, as before buckets.

Packing is exact: concatenating, reducing and cutting back adds each
element of one worker to the same element of every other worker, as a
collective of the gradient alone does. With two workers each element's sum
is one addition, so the numbers equal those of a collective a gradient bit
for bit; with more workers the ring's chunks fall elsewhere in a buffer
than in a lone gradient, so the order in which the workers' values are
added (and so the last bit of a float sum) can differ.
"""

import collections

from variable_mgr.compat import tf

# The bucket size when the user sets none: 256 KiB, measured on the
# balanced network cells (benchmarks/NETWORK_BALANCED_RESULTS.md: resnet20,
# 1.09 MB of gradients, 2 workers, at rates where the ring's bound is 2x,
# 1x and 0.5x of the compute): the step 5-14% below 1 MiB's, whose first
# bucket held most of the model and left only late in the backward pass,
# and at or near the best of one gradient a bucket (which pays a
# collective's fixed cost 65 times a step) and 64 KiB.
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


def reduce_bucket(tensors, reduce_fn):
  """`reduce_fn(buffer)` of `tensors` (one dtype, fully defined shapes, on
  the current device) laid flat end to end, cut back into their shapes.
  One tensor is reduced as it is."""
  if len(tensors) == 1:
    return [reduce_fn(tensors[0])]
  shapes = [t.shape for t in tensors]
  sizes = [s.num_elements() for s in shapes]
  buffer = tf.concat([tf.reshape(t, [-1]) for t in tensors], 0)
  reduced = reduce_fn(buffer)
  parts = tf.split(reduced, sizes, 0)
  return [tf.reshape(p, s) for p, s in zip(parts, shapes)]
