"""Variables read through StagingAreas, so that copies overlap compute.

`StagedVariableGetter` (a custom getter) gives each tower, for each variable,
a StagingArea on the tower's device: the tower reads the area (`get`) while
the step also fills it (`put`) with the variable's current value for the next
step. The harness runs every `put` once before the first step.

Semantics: every put of a step is ordered before the step's updates, so a
step computes its gradients at the weights of the step before (one-step-stale
SGD): `w[t+1] = w[t] - lr * grad(w[t-1])`, with `w[-1] = w[0]`. A put stores a
snapshot, never an alias of a ref variable's buffer, so this holds for ref
and resource variables alike.

Non-trainable variables (batch-norm statistics) are read and updated
directly, not staged: a staged copy of a statistic would be put for the next
step in no fixed order with the statistic's update in this step, so the
moving averages would be sometimes stale and sometimes not. Read directly,
they are exact moving averages. `StagedModelVariable`, the seed's wrapper for
them (reads from a staging area, `assign_sub` through a second area whose put
goes into `VariableMgr.staging_delta_ops`), is kept for code that builds one
itself; this getter no longer does.

A partitioned variable (see `placement.PartitioningGetter`) is staged a
slice at a time: one area a slice, keyed by the slice's name as the
trainable variables list it, and the tower reads their concatenation.

In a cluster the variable's update waits for the put's snapshot (the pull
of the next step's value) on the PS, where the update runs, never on the
worker before its gradient is sent: the push of a step's gradients and the
pull of the next step's values then share the link, one each way (see
`VariableMgrDistributedFetchFromStagedPS._gradients_to_apply`).

Ordering (see `variable_mgr.ordering`): a put's snapshot reads the variable,
so the variable's update runs after it; the put itself stores the snapshot
and may run later. Every step takes exactly one item out of each staging
area it fills: each variable's update waits for its gets, and the gets of
variables without a gradient are taken by another update (see
`get_dependencies`), so an area whose read no op consumes does not grow.
"""

from variable_mgr import compat
from variable_mgr import placement
from variable_mgr import tower_variables
from variable_mgr.compat import tf


class StagedModelVariable(object):
  """A variable whose reads come from a StagingArea.

  Args:
    real_var: the underlying variable (ref or resource).
    var_stage_get: the tensor read from the staging area.
    variable_mgr: the manager collecting `staging_delta_ops`.
  """

  def __init__(self, real_var, var_stage_get, variable_mgr):
    self.real_var = real_var
    self.var_stage_get = var_stage_get
    self.variable_mgr = variable_mgr

  def _value(self):
    """The staged read of this variable."""
    return self.var_stage_get

  def _ref(self):
    """What colocation needs: the ref of a ref variable, or the handle of a
    resource variable (which has no `_ref`)."""
    return compat.to_ref_or_handle(self.real_var)

  def value(self):
    return self._value()

  def read_value(self):
    return self._value()

  @property
  def dtype(self):
    """The non-reference dtype."""
    return self.var_stage_get.dtype

  @property
  def shape(self):
    return self.var_stage_get.shape

  def get_shape(self):
    return self.shape

  @property
  def name(self):
    return self.real_var.name

  @property
  def op(self):
    return self.real_var.op

  @property
  def device(self):
    return self.real_var.device

  def assign_sub(self, delta, name=None, read_value=True):
    """Subtracts `delta` from the variable, through a staging area.

    Args:
      delta: a tensor of the variable's shape.
      name, read_value: accepted for Variable compatibility; unused (a
        StagingArea names its ops itself).

    Returns:
      The update op of the real variable.
    """
    del name, read_value
    with tf.colocate_with(None, ignore_existing=True):
      with tf.device(self.var_stage_get.device):
        area = compat.staging_area(self.var_stage_get.dtype,
                                   self.var_stage_get.shape)
        put = area.put([delta])
        self.variable_mgr.staging_delta_ops.append(put)
        # A get waiting on an empty area holds a thread: ordered after its
        # put, it never waits, so the step's puts cannot be starved.
        with tf.control_dependencies([put]):
          delta_get = compat.staging_get(area)
    return self.real_var.assign_sub(delta_get)

  @staticmethod
  def _TensorConversionFunction(self, dtype=None, name=None, as_ref=False):  # pylint: disable=bad-staticmethod-argument,invalid-name
    """Converts a StagedModelVariable to a tensor: its staged read."""
    del dtype, name
    return self._ref() if as_ref else self._value()


compat.register_tensor_conversion_function(
    StagedModelVariable, StagedModelVariable._TensorConversionFunction)  # pylint: disable=protected-access


class StagedVariableGetter(object):
  """Custom getter that reads each variable through a per-tower StagingArea.

  Args:
    device_num: the tower this getter builds.
    devices: the tower devices (strings).
    cpu_device: if set, the variable is first copied once to this device and
      staged from there (distributed: one copy from the PS per worker).
    variable_mgr: the manager; owns `staging_vars_on_devices` (one dict a
      tower: variable name -> (put_op, get_op)), `staged_reads_on_devices`
      (one dict a tower: variable name -> what the tower's model got) and
      `staged_vars_on_cpu`.
  """

  def __init__(self, device_num, devices, cpu_device, variable_mgr):
    self.device_num = device_num
    self.devices = devices
    self.cpu_device = cpu_device
    self.variable_mgr = variable_mgr

  def __call__(self, getter, name, *args, **kwargs):
    # What a tower got for a name, it gets again (a wrapper stays a wrapper).
    given = self.variable_mgr.staged_reads_on_devices[self.device_num]
    if name not in given:
      given[name] = self._stage(getter, name, *args, **kwargs)
    return given[name]

  def _stage(self, getter, name, *args, **kwargs):
    real_var = getter(name, *args, **kwargs)
    trainable = kwargs.get('trainable')
    if trainable is not None and not trainable:  # None: get_variable's True.
      return real_var  # Statistics are read directly (see module doc).
    if not placement.is_partitioned(real_var):
      return self._stage_variable(name, real_var)
    # A partitioned variable: each slice is staged as a variable of its own
    # (one area a slice, keyed by the slice's name as the trainable
    # variables list it), and the tower reads their concatenation.
    slices = list(real_var)
    gets = [self._stage_variable(v.op.name, v) for v in slices]
    axis = placement.slice_info(slices[0])[2]
    with tf.device(self.devices[self.device_num]):
      return tf.concat(gets, axis)

  def _stage_variable(self, name, real_var):
    """The get op of a new area for `real_var`; records its put and get."""
    staging_ops = self.variable_mgr.staging_vars_on_devices[self.device_num]
    if self.cpu_device:
      cache = self.variable_mgr.staged_vars_on_cpu
      if name not in cache:
        with tf.device(self.cpu_device):
          cache[name] = compat.snapshot(real_var)
      var_to_stage = cache[name]
    else:
      with tf.device(self.devices[self.device_num]):
        var_to_stage = compat.snapshot(real_var)
    with tf.device(self.devices[self.device_num]):
      area = compat.staging_area(real_var.dtype.base_dtype, real_var.shape)
      put_op = area.put([var_to_stage])
      get_op = compat.staging_get(area)
    staging_ops[name] = (put_op, get_op)
    # Updated through apply_gradients on the real variable; the tower reads.
    return get_op


def staged_trainable_variables(variable_mgr, device_num, writable, prefix):
  """Tower `device_num`'s trainable variables under `prefix`: the real
  variables if `writable`, else their staged reads on that tower."""
  params = [v for v in tf.trainable_variables() if v.name.startswith(prefix)]
  # A tf.Variable of the tower has no staging area: name it, and the fix,
  # rather than fail on the lookup below.
  tower_variables.check_variables(device_num, params)
  if writable:
    return params
  staged = variable_mgr.staging_vars_on_devices[device_num]
  return [staged[v.op.name][1] for v in params]


def all_put_ops(variable_mgr):
  """Every tower's put ops: the harness warms up with these."""
  return [put for tower in variable_mgr.staging_vars_on_devices
          for put, _ in tower.values()]


def get_dependencies(variable_mgr, variables):
  """`{variable op name: [get ops]}`: what the updates of `variables` (the
  ones with a gradient) must follow so that every area gives up one item a
  step.

  A tower's get of `v` is waited for by `v`'s update: a model whose
  gradient does not need the value read (a loss linear in `v`) would
  otherwise leave it in the area. Gets of variables without a gradient (an
  unused layer) have no update of their own; the update of the first
  variable takes them, since any update runs every step. Gets have no
  inputs and run at the start of a step, so neither waits on the backward
  pass.
  """
  names = [v.op.name for v in variables]
  result = dict((name, []) for name in names)
  orphans = []
  for tower in variable_mgr.staging_vars_on_devices:
    for name, (_, get) in tower.items():
      (result[name] if name in result else orphans).append(get.op)
  if orphans and names:
    result[names[0]].extend(orphans)
  return result
