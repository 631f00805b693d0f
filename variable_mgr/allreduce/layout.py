"""The `[tower][tensor]` layout shared by every all-reduce in this package.

`tower_tensors[d][i]` is tensor `i` of tower `d`; `devices[d]` is tower `d`'s
device string. At each index `i` the towers hold tensors of one dtype and one
shape. This module validates that layout and cuts tensors into flat chunks.
"""

import contextlib
import threading

import tensorflow as tf

from variable_mgr.allreduce import errors


def check_towers(tower_tensors, devices):
  """Validates and materialises a `[tower][tensor]` input.

  Args:
    tower_tensors: an iterable (towers) of iterables (tensors).
    devices: an iterable of device strings, one per tower.

  Returns:
    `(towers, devices)` as a list of lists and a list.

  Raises:
    TowerTensorsError: there are no devices, a tower count other than
      `len(devices)`, towers of different lengths, or tensors at one index
      that differ in dtype or in shape.
  """
  towers = [list(row) for row in tower_tensors]
  devices = list(devices)
  if not devices:
    raise errors.TowerTensorsError(
        'all-reduce needs at least one device; got an empty device list')
  if len(towers) != len(devices):
    raise errors.TowerTensorsError(
        'all-reduce got %d towers of tensors for %d devices %r; pass one '
        'list of tensors per device' % (len(towers), len(devices), devices))
  count = len(towers[0])
  for d, row in enumerate(towers):
    if len(row) != count:
      raise errors.TowerTensorsError(
          'tower %d has %d tensors but tower 0 has %d; every tower must '
          'hold the same list of tensors' % (d, len(row), count))
  for i, first in enumerate(towers[0]):
    for d in range(1, len(towers)):
      other = towers[d][i]
      if other.dtype != first.dtype:
        raise errors.TowerTensorsError(
            'tensor %d is %s on tower 0 but %s on tower %d; dtypes must '
            'agree across towers' % (i, first.dtype.name, other.dtype.name, d))
      if not other.shape.is_compatible_with(first.shape):
        raise errors.TowerTensorsError(
            'tensor %d has shape %s on tower 0 but %s on tower %d; shapes '
            'must agree across towers' % (i, first.shape, other.shape, d))
  return towers, devices


def num_elements(tensor):
  """The static element count of `tensor`.

  Raises:
    StaticShapeError: the shape is not fully defined.
  """
  n = tensor.shape.num_elements()
  if n is None:
    raise errors.StaticShapeError(
        'tensor %r has shape %s, which is not fully defined; chunking '
        'all-reduce algorithms and packing need static shapes (use the '
        '"copy" or "pscpu" algorithm, or set the shape)'
        % (tensor.name, tensor.shape))
  return n


def num_bytes(tensor):
  """The static size of `tensor` in bytes (see `num_elements`)."""
  return num_elements(tensor) * tensor.dtype.size


def split_sizes(total, parts):
  """`parts` integers, as equal as possible, that sum to `total`.

  The first `total % parts` sizes are one larger than the rest.
  """
  base, extra = divmod(total, parts)
  return [base + 1 if p < extra else base for p in range(parts)]


class Constants(object):
  """The int32 constants of one all-reduce call, one op per device and value.

  Reshapes, splits and concatenations take their shapes, sizes and axes as
  tensors; sharing them within a call saves an op at each use.
  """

  def __init__(self):
    self._cache = {}

  def get(self, device, value):
    """An int32 constant of `value` (an int or a list of ints) on `device`."""
    key = (device, tuple(value) if isinstance(value, (list, tuple)) else value)
    constant = self._cache.get(key)
    if constant is None:
      with tf.device(device):
        constant = tf.constant(value, dtype=tf.int32)
      self._cache[key] = constant
    return constant


_SHARED = threading.local()


@contextlib.contextmanager
def sharing_constants():
  """Within the block, `call_constants()` gives one `Constants`: that of an
  enclosing block, or a new one. A wrapper of an all-reduce builds its
  packing, the all-reduce and its unpacking inside one such block."""
  stack = _SHARED.__dict__.setdefault('stack', [])
  stack.append(stack[-1] if stack else Constants())
  try:
    yield stack[-1]
  finally:
    stack.pop()


def call_constants():
  """The `Constants` of the enclosing `sharing_constants` block, or new
  ones outside any."""
  stack = getattr(_SHARED, 'stack', None)
  return stack[-1] if stack else Constants()


def flatten(tensor, device, constants):
  """`tensor` as a flat vector on `device` (no op when it is one already)."""
  if tensor.shape.ndims == 1:
    return tensor
  with tf.device(device):
    return tf.reshape(tensor, constants.get(device, [-1]))


def restore_shape(flat, shape, device, constants):
  """The inverse of `flatten`: `flat` reshaped to `shape` on `device`."""
  shape = tf.TensorShape(shape)
  if shape.ndims == 1 and flat.shape.ndims == 1:
    return flat
  with tf.device(device):
    return tf.reshape(flat, constants.get(device, shape.as_list()))


def split(flat, sizes, device, constants):
  """Cuts a flat vector into pieces of the given sizes on `device`; one size
  gives the vector itself."""
  if len(sizes) == 1:
    return [flat]
  with tf.device(device):
    return tf.split(flat, constants.get(device, list(sizes)), num=len(sizes),
                    axis=constants.get(device, 0))


def concat(pieces, device, constants):
  """Joins flat pieces into one vector on `device`; one piece is itself."""
  if len(pieces) == 1:
    return pieces[0]
  with tf.device(device):
    return tf.concat(pieces, constants.get(device, 0))


def flat_split(tensor, sizes, device, constants):
  """Flattens `tensor` and cuts it into pieces of the given sizes on
  `device`. One size gives one flat tensor."""
  return split(flatten(tensor, device, constants), sizes, device, constants)


def flat_join(pieces, shape, device, constants):
  """Concatenates flat `pieces` and reshapes the result to `shape` on
  `device`; the inverse of `flat_split`."""
  return restore_shape(concat(pieces, device, constants), shape, device,
                       constants)


def device_key(device):
  """The canonical form of a device string, for comparing placements."""
  return tf.compat.v1.DeviceSpec.from_string(device).to_string()


def worker_of(device):
  """The `(job, replica, task)` that `device` belongs to."""
  spec = tf.compat.v1.DeviceSpec.from_string(device)
  return spec.job, spec.replica, spec.task


def worker_cpus(devices):
  """CPU 0 of each distinct worker among `devices`, in order of appearance."""
  cpus = []
  seen = set()
  for device in devices:
    worker = worker_of(device)
    if worker in seen:
      continue
    seen.add(worker)
    spec = tf.compat.v1.DeviceSpec(
        job=worker[0], replica=worker[1], task=worker[2],
        device_type='CPU', device_index=0)
    cpus.append(spec.to_string())
  return cpus
