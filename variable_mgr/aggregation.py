"""Gradient aggregation: pure functions over `[tower][(grad, var)]`.

A gradient list per tower, in the same variable order on every tower:

    tower_grads = [[(g00, v0), (g01, v1)],     # tower 0
                   [(g10, v0), (g11, v1)]]     # tower 1

Functions named `aggregate_*` return one list `[(agg_grad, var)]` with the
first tower's variables; `sum_gradients_all_reduce` returns the same
`[tower][(grad, var)]` shape, each tower's gradients replaced by the sum:

    [[A, B], [C, D]] -> [[A+C, B+D], [A+C, B+D]]

`use_mean` divides the sum by the number of towers. A gradient of None (a
frozen or unused variable) stays None. `IndexedSlices` (from gather or
embedding_lookup) are summed sparsely by concatenation on copy paths; NCCL
needs dense tensors and densifies them, with a warning.

`accumulation_dtype` (e.g. tf.float32) adds float16 gradients in a wider type
and casts the result back, so that a sum that fits float16 does not overflow
on the way.
"""

import warnings

from variable_mgr import compat
from variable_mgr.compat import tf

IndexedSlices = compat.IndexedSlices


def _tower_lists(tower_grads):
  """Materialises `[tower][(grad, var)]` once: towers may be iterators."""
  return [list(grads) for grads in tower_grads]


def scale(tensor, factor):
  """`tensor * factor`, the factor made in `tensor`'s own dtype (a Python
  float cast from float32 would cost float64 its precision)."""
  return tensor * tf.constant(factor, dtype=tensor.dtype)


def _sum(grads, use_mean, accumulation_dtype=None):
  """Sum (or mean) of one variable's gradients over towers, on the current
  device. All None gives None; IndexedSlices stay sparse."""
  if any(g is None for g in grads):
    return None
  count = len(grads)
  if all(isinstance(g, IndexedSlices) for g in grads):
    values = tf.concat([g.values for g in grads], 0)
    if use_mean:  # of one tower, a product with 1.0: exact
      values = scale(values, 1.0 / count)
    return IndexedSlices(values, tf.concat([g.indices for g in grads], 0),
                         grads[0].dense_shape)
  grads = [tf.convert_to_tensor(g) for g in grads]
  dtype = grads[0].dtype
  if accumulation_dtype is not None and dtype != accumulation_dtype:
    grads = [tf.cast(g, accumulation_dtype) for g in grads]
  total = compat.sum_in_order(grads)
  if use_mean:
    total = scale(total, 1.0 / count)
  if total.dtype != dtype:
    total = tf.cast(total, dtype)
  return total


def aggregate_gradients_using_copy(tower_grads, use_mean,
                                   accumulation_dtype=None):
  """Sum (or mean) of each variable's gradients, on the current device.

  Args:
    tower_grads: `[tower][(grad, var)]`, any iterables.
    use_mean: divide the sum by the number of towers.
    accumulation_dtype: optional wider dtype to add in (see module doc).

  Returns:
    `[(agg_grad, var)]` with tower 0's variables.
  """
  towers = _tower_lists(tower_grads)
  return [(_sum([g for g, _ in gv], use_mean, accumulation_dtype), gv[0][1])
          for gv in zip(*towers)]


def aggregate_gradients_using_copy_with_device_selection(
    benchmark_cnn, tower_grads, use_mean, accumulation_dtype=None):
  """Like `aggregate_gradients_using_copy`, gradient i summed on device
  `i mod n` of the tower devices (local_parameter_device 'gpu') or on the
  parameter-server device ('cpu')."""
  if benchmark_cnn.local_parameter_device_flag == 'gpu':
    devices = benchmark_cnn.raw_devices
  else:
    devices = [benchmark_cnn.param_server_device]
  towers = _tower_lists(tower_grads)
  agg_grads = []
  for i, grad_and_vars in enumerate(zip(*towers)):
    with tf.device(devices[i % len(devices)]):
      agg_grads.append(
          (_sum([g for g, _ in grad_and_vars], use_mean, accumulation_dtype),
           grad_and_vars[0][1]))
  return agg_grads


def aggregate_gradients_using_copy_with_variable_colocation(
    tower_grads, use_mean, accumulation_dtype=None):
  """Like `aggregate_gradients_using_copy`, each sum on its variable's device.

  Raises:
    GradientListError: towers name different variables at the same index.
  """
  from variable_mgr import errors  # pylint: disable=g-import-not-at-top
  towers = _tower_lists(tower_grads)
  agg_grads = []
  for i, grad_and_vars in enumerate(zip(*towers)):
    var = grad_and_vars[0][1]
    for tower, (_, v) in enumerate(grad_and_vars):
      if v is not var:
        raise errors.GradientListError(
            'gradient %d of tower %d is for %s but tower 0 has %s there: '
            'shared-variable strategies need every tower to list the same '
            'variables in the same order.' % (i, tower, v.name, var.name))
    with tf.device(var.device):
      agg_grads.append(
          (_sum([g for g, _ in grad_and_vars], use_mean, accumulation_dtype),
           var))
  return agg_grads


_densify_warned = []


def densify(grad):
  """`grad` as a dense tensor; warns once per process on IndexedSlices,
  which all-reduce algorithms other than the copy must densify."""
  if isinstance(grad, IndexedSlices):
    if not _densify_warned:
      _densify_warned.append(True)
      warnings.warn(
          'this all-reduce needs dense tensors: IndexedSlices gradients are '
          'converted to dense ones, which costs the full size of the variable '
          'per step. Use the default copy all-reduce (no NCCL, no '
          'all_reduce_spec) for large embedding tables.', stacklevel=3)
    return tf.convert_to_tensor(grad)
  return grad


def sum_grad_and_var_all_reduce(grad_and_vars, devices):
  """NCCL all-sum of one variable's gradients, one per tower device.

  Args:
    grad_and_vars: `[(grad, var)]` over towers, for one variable.
    devices: one device a tower, in the same order.

  Returns:
    `[(summed_grad, var)]` over towers; each sum lives on its tower's device.
  """
  grad_and_vars = list(grad_and_vars)
  if any(g is None for g, _ in grad_and_vars):
    return [(None, v) for _, v in grad_and_vars]
  grads = [densify(g) for g, _ in grad_and_vars]
  summed = compat.nccl_all_sum(grads)
  result = []
  for d, (_, v), g in zip(devices, grad_and_vars, summed):
    with tf.device(d):
      result.append((g, v))
  return result


def sum_gradients_all_reduce(tower_grads, devices):
  """NCCL all-sum of every variable: `[tower][(grad, var)]` in and out."""
  towers = _tower_lists(tower_grads)
  per_var = [sum_grad_and_var_all_reduce(gv, devices) for gv in zip(*towers)]
  return [list(tower) for tower in zip(*per_var)]
