"""The checks of a manager's configuration and of the towers' gradients.

Each refuses a bad value before any graph is built, with a message that
names the value, the rule and the fix (an `errors` class a condition).
"""

from variable_mgr import compat
from variable_mgr import errors
from variable_mgr.compat import tf


def device_key(device):
  """Canonical form of a device string, to find duplicates."""
  return tf.DeviceSpec.from_string(device).to_string().lower()


def floating_dtype(dtype):
  """`dtype` as a floating tf.DType (None stays None)."""
  if dtype is None:
    return None
  try:
    result = tf.as_dtype(dtype)
  except TypeError:
    result = None
  if result is None or not result.is_floating:
    raise errors.InvalidOptionError(
        'accumulation_dtype=%r: must be a floating dtype such as tf.float32 '
        'or \'float32\', or None to add gradients in their own dtype.' %
        (dtype,))
  return result


def check_towers(raw_devices, num_gpus):
  """Refuses no towers, a tower count that is not `raw_devices`' length,
  and two towers on one device."""
  if not raw_devices:
    raise errors.TowerCountError(
        'raw_devices is empty: a job needs at least one tower device, '
        'e.g. [\'/cpu:0\'] or [\'/gpu:0\', \'/gpu:1\'].')
  if num_gpus != len(raw_devices):
    raise errors.TowerCountError(
        'num_gpus=%r but raw_devices has %d entries (%s): they must agree, '
        'one device a tower.' % (num_gpus, len(raw_devices),
                                 ', '.join(raw_devices)))
  seen = {}
  for i, device in enumerate(raw_devices):
    key = device_key(device)
    if key in seen:
      raise errors.DuplicateDeviceError(
          'towers %d and %d are both on %r: every tower needs a device of '
          'its own (for several towers on one CPU, give the session '
          'ConfigProto(device_count={\'CPU\': n}) and use /cpu:0../cpu:n-1).'
          % (seen[key], i, device))
    seen[key] = i


def check_tower_index(device_num, num_towers):
  """Refuses a tower index outside 0..num_towers-1."""
  if not 0 <= device_num < num_towers:
    raise errors.ProtocolError(
        'device_num=%r: this manager has %d towers (0..%d).' %
        (device_num, num_towers, num_towers - 1))


def check_pairs(towers):
  """Refuses a tower entry that is not a `(gradient, variable)` pair: not a
  pair, a gradient that is not a Tensor, IndexedSlices or None, or a
  variable that is not one (a pair given as (variable, gradient))."""
  for t, tower in enumerate(towers):
    for i, pair in enumerate(tower):
      ok = isinstance(pair, (tuple, list)) and len(pair) == 2
      if ok:
        g, v = pair
        ok = ((g is None or isinstance(g, (tf.Tensor, tf.IndexedSlices))) and
              compat.is_variable(v))
      if not ok:
        text = repr(pair)
        raise errors.GradientListError(
            'entry %d of tower %d is %s: each entry must be a (gradient, '
            'variable) pair, the gradient a Tensor, IndexedSlices or None '
            'and the variable the tower\'s own; make them with '
            'list(zip(tf.gradients(loss, params), params)).' %
            (i, t, text if len(text) <= 120 else text[:117] + '...'))


def check_gradients(towers, num_towers, same_variable):
  """Refuses towers' `[(grad, var)]` lists that do not match: their count,
  length, variable order (`same_variable(tower_var, first_var)`), which
  gradients are None, and each gradient's shape."""
  if len(towers) != num_towers:
    raise errors.GradientListError(
        'got gradients of %d towers for %d tower devices: pass one '
        '[(grad, var)] list a tower, in device order.' %
        (len(towers), num_towers))
  first = towers[0]
  for t, tower in enumerate(towers):
    if len(tower) != len(first):
      raise errors.GradientListError(
          'tower %d has %d (grad, var) pairs but tower 0 has %d: every '
          'tower must list the same variables.' % (t, len(tower), len(first)))
    for i, ((g, v), (g0, v0)) in enumerate(zip(tower, first)):
      if not same_variable(v, v0):
        raise errors.GradientListError(
            'pair %d of tower %d is for %s but tower 0 has %s there: list '
            'the variables in the same order on every tower.' %
            (i, t, v.op.name, v0.op.name))
      if (g is None) != (g0 is None):
        raise errors.GradientListError(
            'the gradient of %s is None on tower %d but not on tower %d: '
            'towers must build the same model.' %
            (v.op.name, t if g is None else 0, 0 if g is None else t))
      if g is not None:
        check_shape(g, v)


def check_shape(grad, var):
  """Refuses a gradient whose shape is not its variable's."""
  if isinstance(grad, tf.IndexedSlices):
    shape = grad.values.shape[1:]
    expected = var.shape[1:]
  else:
    shape, expected = grad.shape, var.shape
  if not shape.is_compatible_with(expected):
    raise errors.GradientShapeError(
        'the gradient of %s has shape %s but the variable has shape %s: '
        'pair each gradient with its own variable.' %
        (var.op.name, shape, var.shape))
