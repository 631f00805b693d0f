"""Errors raised by variable_mgr, one class per failure condition.

Every error names the offending value, the rule it breaks and how to fix
it. Configuration errors are raised before any graph is built, tower errors
before the update graph is, checkpoint errors when a checkpoint is looked up
or read. All derive from
`VariableMgrError`, itself a `ValueError`, so callers may catch either.
"""


class VariableMgrError(ValueError):
  """Base class of every configuration or input error of this package."""


class UnknownStrategyError(VariableMgrError):
  """The --variable_update name is not a registered strategy."""


class InvalidOptionError(VariableMgrError):
  """An option has a value outside its domain (e.g. reduction='max')."""


class IncompatibleOptionsError(VariableMgrError):
  """Two options cannot be combined (e.g. staged_vars with replicated)."""


class TowerCountError(VariableMgrError):
  """There are no towers, or the tower count disagrees with the devices."""


class DuplicateDeviceError(VariableMgrError):
  """The same device appears twice among the tower devices."""


class NcclDeviceError(VariableMgrError):
  """NCCL all-reduce was requested for towers that are not GPUs."""


class MissingClusterError(VariableMgrError):
  """A distributed strategy was requested without a cluster."""


class MissingAllReduceSpecError(VariableMgrError):
  """A strategy that reduces only through an --all_reduce_spec
  (distributed_all_reduce) got none."""


class InterfaceError(VariableMgrError):
  """The BenchmarkCnn-like object lacks an attribute or has a bad value."""


class GradientListError(VariableMgrError):
  """Tower gradient lists differ in length or in variable order."""


class TowerVariableError(VariableMgrError):
  """A tower's trainable variable was not created through the manager's
  variable scope (tf.Variable instead of tf.get_variable)."""


class GradientShapeError(VariableMgrError):
  """A gradient's shape does not match the shape of its variable."""


class ProtocolError(VariableMgrError):
  """A method of the harness protocol was called out of order or with a
  device index outside the range the manager returned."""


class CheckpointMismatchError(VariableMgrError):
  """A checkpoint lacks a variable of the model, or holds it in another
  shape."""


class CheckpointMissingError(VariableMgrError):
  """A `checkpoint` file points at a checkpoint whose files are missing."""


class CheckpointCorruptError(VariableMgrError):
  """A `checkpoint` file or a checkpoint's files cannot be read."""


class UnlockedUpdateError(VariableMgrError):
  """Several workers update the same variables with an optimizer that does
  not lock them (`use_locking=False`): concurrent updates lose parts of
  each other."""
