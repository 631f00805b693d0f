"""Where variables live: custom getters and device functions.

- `OverrideCachingDevice`: spreads the cached copies of large variables over
  devices, least loaded first; small ones are cached on one device.
- `OverrideToLocalVariableIfNotPsVar`: puts a tower's variables in
  LOCAL_VARIABLES (distributed_replicated keeps the masters on the PS).
- `ParamServerDeviceSetter`: places each variable on the least loaded of
  several devices by element count (local PS with --local_parameter_device=gpu).
- `GreedyLoadBalancingStrategy` and `byte_size_load_fn`: the same by bytes over
  PS tasks, for `tf.train.replica_device_setter` (tf.contrib's are gone).
- `table_device`, `GatherWithTable` and `replica_device_setter`: a gather of
  a variable goes to the variable's device, as `tf.nn.embedding_lookup`
  puts it; `ParamServerDeviceSetter` does so itself.

Ref variables (`VariableV2`) and resource variables (`VarHandleOp`) are both
recognised; sizes come from the variable's declared shape, and a variable of
unknown shape counts as size 0 rather than breaking placement.
"""

from variable_mgr import compat
from variable_mgr.compat import tf

PS_SHADOW_VAR_PREFIX = 'ps_var'

# What `tf.gather` of a variable builds: ResourceGather of a resource
# variable's handle, GatherV2 (Gather before it) of a ref variable's value.
GATHER_OP_TYPES = frozenset(['Gather', 'GatherV2', 'ResourceGather'])


def _least_loaded(loads):
  """Index of the smallest load; the first one on a tie."""
  return min(range(len(loads)), key=lambda i: loads[i])


def _num_elements(shape):
  """Element count of a (possibly partly unknown) shape; unknown counts 0."""
  if shape is None:
    return 0
  count = tf.TensorShape(shape).num_elements()
  return 0 if count is None else count


def variable_op_num_elements(op):
  """Element count of the variable an op creates (ref or resource)."""
  try:
    return _num_elements(op.get_attr('shape'))
  except ValueError:  # Not a variable op: use its first output.
    return _num_elements(op.outputs[0].shape) if op.outputs else 0


class OverrideCachingDevice(object):
  """Custom getter that sets `caching_device` by size, least loaded first.

  Variables of fewer than `small_variable_size_threshold` elements (or of
  unknown shape) are cached on `device_for_small_variables`.
  """

  def __init__(self, devices, device_for_small_variables,
               small_variable_size_threshold):
    self.devices = list(devices)
    self.sizes = [0] * len(self.devices)
    self.device_for_small_variables = device_for_small_variables
    self.small_variable_size_threshold = small_variable_size_threshold

  def __call__(self, getter, *args, **kwargs):
    size = _num_elements(kwargs.get('shape'))
    if size < self.small_variable_size_threshold:
      device_name = self.device_for_small_variables
    else:
      index = _least_loaded(self.sizes)
      device_name = self.devices[index]
      self.sizes[index] += size
    kwargs['caching_device'] = device_name
    return getter(*args, **kwargs)


class OverrideToLocalVariableIfNotPsVar(object):
  """Custom getter that moves a variable from GLOBAL to LOCAL_VARIABLES.

  Variables whose name starts with `PS_SHADOW_VAR_PREFIX` (the masters kept on
  the parameter servers) are left as they are. Other collections the caller
  asked for (TRAINABLE_VARIABLES, say) are kept.
  """

  def __call__(self, getter, name, *args, **kwargs):
    if name.startswith(PS_SHADOW_VAR_PREFIX):
      return getter(name, *args, **kwargs)
    collections = kwargs.get('collections')
    collections = list(collections or [tf.GraphKeys.GLOBAL_VARIABLES])
    collections = [c for c in collections if c != tf.GraphKeys.GLOBAL_VARIABLES]
    if tf.GraphKeys.LOCAL_VARIABLES not in collections:
      collections.append(tf.GraphKeys.LOCAL_VARIABLES)
    kwargs['collections'] = collections
    return getter(name, *args, **kwargs)


class ParamServerDeviceSetter(object):
  """Device function: each variable on the least loaded of `ps_devices`.

  Ops with a device already set keep it; other non-variable ops go to
  `worker_device`. Load is counted in elements.
  """

  def __init__(self, worker_device, ps_devices):
    self.ps_devices = list(ps_devices)
    self.worker_device = worker_device
    self.ps_sizes = [0] * len(self.ps_devices)

  def __call__(self, op):
    if op.device:
      return op.device
    if op.type not in compat.VARIABLE_OP_TYPES:
      return table_device(op) or self.worker_device
    index = _least_loaded(self.ps_sizes)
    self.ps_sizes[index] += variable_op_num_elements(op)
    return self.ps_devices[index]


def byte_size_load_fn(op):
  """Load of a variable op in bytes: its element count times its dtype size."""
  try:
    dtype = tf.as_dtype(op.get_attr('dtype'))
  except ValueError:
    dtype = op.outputs[0].dtype
  return variable_op_num_elements(op) * dtype.base_dtype.size


class GreedyLoadBalancingStrategy(object):
  """A `ps_strategy` for `replica_device_setter`: least loaded PS task first.

  Args:
    num_tasks: number of parameter-server tasks.
    load_fn: op -> load (default: `byte_size_load_fn`).
  """

  def __init__(self, num_tasks, load_fn=byte_size_load_fn):
    self._load_fn = load_fn
    self._loads = [0] * num_tasks

  def __call__(self, op):
    task = _least_loaded(self._loads)
    self._loads[task] += self._load_fn(op)
    return task


def table_device(op):
  """Where the gather `op` of a variable belongs, or None for other ops.

  None unless `op` is a gather (`GATHER_OP_TYPES`) whose params are a
  variable: a resource variable's handle or a ref variable (their device),
  or a ref variable's value (the Identity it reads through: the device of
  that value, the variable's own or its caching device).

  Why: `tf.nn.embedding_lookup` builds its gather under
  `colocate_with(table)`, so the gather and the gradient ops colocated with
  it sit on the table's device. A plain `tf.gather` built under a tower's
  device function gets the tower device instead; the placer moves a
  ResourceGather to its resource and TensorFlow 2's `tf.gradients`
  colocates the gradient with the gather, whose ops then carry the tower
  device: the session refuses the graph ("Cannot colocate nodes ...
  Gather_grad"), with ref and resource variables alike. TensorFlow 1.15's
  `tf.gradients` colocates nothing: there the graph runs wherever the gather
  is.
  """
  if op.type not in GATHER_OP_TYPES or not op.inputs:
    return None
  source = op.inputs[0].op
  if (source.type == 'Identity' and source.inputs and
      source.inputs[0].op.type in compat.VARIABLE_OP_TYPES):
    return source.device or None
  if source.type in compat.VARIABLE_OP_TYPES:
    return source.device or None
  return None


class GatherWithTable(object):
  """Device function: `device_function`, but a gather of a variable that no
  scope placed goes to the variable's device (see `table_device`)."""

  def __init__(self, device_function):
    self.device_function = device_function

  def __call__(self, op):
    if not op.device:
      device = table_device(op)
      if device:
        return device
    return self.device_function(op)


def replica_device_setter(**kwargs):
  """`tf.train.replica_device_setter(**kwargs)` wrapped in `GatherWithTable`:
  gathers of a parameter-server variable run on its PS device, as
  `embedding_lookup`'s do."""
  return GatherWithTable(tf.train.replica_device_setter(**kwargs))
