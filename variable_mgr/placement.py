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
- `PartitioningGetter`, `partition_count`, `SliceSpreadingStrategy`: large
  variables split into slices along their first axis (TensorFlow's
  partitioned variables), the slices of one variable on different PS tasks
  (`variable_partition_min_bytes`); `slice_info` and `partitioned_groups`
  tell slices apart from whole variables.

Ref variables (`VariableV2`) and resource variables (`VarHandleOp`) are both
recognised; sizes come from the variable's declared shape, and a variable of
unknown shape counts as size 0 rather than breaking placement.
"""

import collections

from variable_mgr import compat
from variable_mgr import errors
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


# -- Partitioned variables (variable_partition_min_bytes) ---------------------

# The strategies whose variables live on PS tasks and may be partitioned.
PARTITIONING_STRATEGIES = ('parameter_server', 'distributed_replicated')


def check_partitioning(min_bytes, variable_update, benchmark_cnn):
  """`min_bytes` (variable_partition_min_bytes), checked; 0 is off.

  Raises:
    InvalidOptionError: not an integer, or negative.
    IncompatibleOptionsError: a value above 0 with a strategy whose
      variables do not live on PS tasks, or without a cluster with PS tasks.
  """
  if isinstance(min_bytes, bool) or not isinstance(min_bytes, int):
    raise errors.InvalidOptionError(
        'variable_partition_min_bytes=%r: must be an integer number of bytes '
        '(0: no partitioning), e.g. 1048576.' % (min_bytes,))
  if min_bytes < 0:
    raise errors.InvalidOptionError(
        'variable_partition_min_bytes=%r: must be 0 (no partitioning) or '
        'more: every variable of more than this many bytes is split into '
        'slices of at least this size.' % (min_bytes,))
  if not min_bytes:
    return 0
  if variable_update not in PARTITIONING_STRATEGIES:
    raise errors.IncompatibleOptionsError(
        'variable_partition_min_bytes=%r with variable_update=%r: only the '
        'strategies whose variables live on PS tasks (%s) split them; drop '
        'the option or use one of those.' % (
            min_bytes, variable_update, ', '.join(PARTITIONING_STRATEGIES)))
  cluster = getattr(benchmark_cnn, 'cluster', None)
  if cluster is None or not list(getattr(benchmark_cnn, 'ps_hosts', ())):
    raise errors.IncompatibleOptionsError(
        'variable_partition_min_bytes=%r with variable_update=%r on one '
        'machine: slices go to different PS tasks, and the host has no '
        'cluster with PS tasks (cluster=%r); drop the option, or run on a '
        'cluster (a host with a tf.train.ClusterSpec with a "ps" job).' % (
            min_bytes, variable_update, cluster))
  return min_bytes


def partition_count(shape, dtype, min_bytes, max_slices):
  """How many slices along axis 0 a variable of `shape` and `dtype` gets.

  The most slices, at most `max_slices` and at most the first dimension,
  such that the smallest slice (TensorFlow gives the first slices the extra
  rows: the smallest has `dim0 // k` rows) holds at least `min_bytes`; 1
  for a variable of `min_bytes` or fewer, of unknown shape, a scalar, or
  `min_bytes` 0.
  """
  shape = tf.TensorShape(shape)
  if not min_bytes or not shape.is_fully_defined() or not shape.ndims:
    return 1
  dims = shape.as_list()
  row_bytes = tf.as_dtype(dtype).base_dtype.size
  for d in dims[1:]:
    row_bytes *= d
  if dims[0] * row_bytes <= min_bytes:
    return 1
  for count in range(min(max_slices, dims[0]), 1, -1):
    if (dims[0] // count) * row_bytes >= min_bytes:
      return count
  return 1


class PartitioningGetter(object):
  """Custom getter that partitions variables of more than `min_bytes`.

  Each such variable becomes a `PartitionedVariable` of `partition_count`
  slices along axis 0 (named `<name>/part_<i>`), which the model reads as a
  whole (TensorFlow concatenates the slices) and whose gradients come a
  slice each. A variable the caller partitions itself is left as it is.

  Args:
    min_bytes: the size above which variables are split; 0: none (the
      getter then only records what the caller partitions itself).
    max_slices: the most slices a variable gets (the PS task count).

  Attributes:
    partitioned: `{full variable name: PartitionedVariable}` of the
      partitioned variables it returned.
  """

  def __init__(self, min_bytes, max_slices):
    self.min_bytes = min_bytes
    self.max_slices = max_slices
    self.partitioned = collections.OrderedDict()

  def _partitioner(self, shape, dtype):
    partitions = [1] * tf.TensorShape(shape).ndims
    partitions[0] = partition_count(shape, dtype, self.min_bytes,
                                    self.max_slices)
    return partitions

  def __call__(self, getter, name, *args, **kwargs):
    if kwargs.get('partitioner') is None:
      shape = kwargs.get('shape')
      initializer = kwargs.get('initializer')
      if shape is None and isinstance(initializer, tf.Tensor):
        shape = initializer.shape
      dtype = kwargs.get('dtype') or tf.float32
      if isinstance(initializer, tf.Tensor):
        dtype = initializer.dtype
      if shape is not None and partition_count(
          shape, dtype, self.min_bytes, self.max_slices) > 1:
        kwargs['partitioner'] = self._partitioner
    result = getter(name, *args, **kwargs)
    if is_partitioned(result):
      self.partitioned[result.name] = result
    return result


def chain_getters(outer, inner):
  """One custom getter: `outer` called first, with `inner` (around the true
  getter) as the getter it calls."""
  # TensorFlow passes the true getter as the keyword argument `getter`.
  def chained(getter, *args, **kwargs):
    return outer(lambda *a, **k: inner(getter, *a, **k), *args, **kwargs)
  return chained


def with_whole_partitioned(to_save, candidates, partitioned, saved_name):
  """`to_save` ({saved name: variable}) with the slices of each partitioned
  variable replaced by the variable: one entry under the saved name of its
  full name, so that its checkpoint holds one tensor of the full shape, as
  an unpartitioned variable's does (a Saver writes a PartitionedVariable's
  slices into one tensor), and restores into either.

  Args:
    to_save: the dict to change, made from `candidates` slice by slice.
    candidates: the variables `to_save` was made from.
    partitioned: `{full name: PartitionedVariable}`.
    saved_name: full or slice variable name -> saved name, or None.
  """
  for full_name, slices in partitioned_groups(candidates).items():
    for var in slices:
      name = saved_name(var.op.name)
      if name is not None and to_save.get(name) is var:
        del to_save[name]
    name = saved_name(full_name)
    if name is None:
      continue
    if full_name in partitioned:
      to_save[name] = partitioned[full_name]
    else:
      to_save[name] = SliceList(slices)
  return to_save


class SliceList(list):
  """The slices of a partitioned variable that no getter returned whole
  (the optimizer's slots of one: `v/w/part_0/Momentum`, ...), in order:
  a Saver writes a list of slices as one tensor of the full shape, as it
  does a PartitionedVariable. `shape`, `dtype` and `name` are the whole
  variable's, for code that checks a checkpoint against them."""

  @property
  def shape(self):
    return tf.TensorShape(self[0]._save_slice_info.full_shape)  # pylint: disable=protected-access

  @property
  def dtype(self):
    return self[0].dtype

  @property
  def name(self):
    return slice_info(self[0])[0]


def is_partitioned(value):
  """Whether `value` is a PartitionedVariable (what `get_variable` returns
  with a partitioner; TensorFlow 2 has no public name for the class)."""
  return type(value).__name__ == 'PartitionedVariable'


def slice_info(var):
  """`(full name, offset, axis)` of a slice of a partitioned variable, or
  None for a whole variable. (TensorFlow keeps this in the slice's
  `_save_slice_info`, what a Saver writes the slice with; it has the same
  name and fields in 1.15 and 2.x.)"""
  info = getattr(var, '_save_slice_info', None)
  if info is None:
    return None
  axis = 0
  for i, (full, part) in enumerate(zip(info.full_shape, info.var_shape)):
    if full != part:
      axis = i
      break
  return info.full_name, list(info.var_offset), axis


def partitioned_groups(variables):
  """`{full name: [slices by offset]}` of the slices among `variables`, in
  the order their first slice comes."""
  groups = collections.OrderedDict()
  for var in variables:
    info = slice_info(var)
    if info is not None:
      groups.setdefault(info[0], []).append(var)
  for name, slices in groups.items():
    slices.sort(key=lambda v: slice_info(v)[1])
  return groups


def _slice_group(op):
  """The variable name a slice's variable op belongs to (`a/b` for
  `a/b/part_3`), or None for a whole variable."""
  head, sep, tail = op.name.rpartition('/part_')
  return head if sep and tail.isdigit() else None


class SliceSpreadingStrategy(GreedyLoadBalancingStrategy):
  """`GreedyLoadBalancingStrategy`, with the slices of one partitioned
  variable on different PS tasks: each slice goes to the least loaded task
  that holds no slice of its variable yet (any task once every task holds
  one). Whole variables are placed as the greedy strategy places them.
  """

  def __init__(self, num_tasks, load_fn=byte_size_load_fn):
    super(SliceSpreadingStrategy, self).__init__(num_tasks, load_fn)
    self._tasks_of_group = {}

  def __call__(self, op):
    group = _slice_group(op)
    if group is None:
      return super(SliceSpreadingStrategy, self).__call__(op)
    used = self._tasks_of_group.setdefault(group, set())
    free = [i for i in range(len(self._loads)) if i not in used]
    candidates = free or list(range(len(self._loads)))
    task = min(candidates, key=lambda i: (self._loads[i], i))
    self._loads[task] += self._load_fn(op)
    used.add(task)
    return task
