"""Errors raised by `variable_mgr.allreduce`, one class per failure condition.

All derive from `variable_mgr.errors.VariableMgrError` (a `ValueError`), so
callers may catch the package-wide base class.
"""

from variable_mgr.errors import VariableMgrError


class AllReduceSpecError(VariableMgrError):
  """An --all_reduce_spec string does not follow the grammar.

  The message quotes the spec, the offending token and its 0-based character
  position, and says what was expected there.
  """

  def __init__(self, spec, position, token, reason):
    self.spec = spec
    self.position = position
    self.token = token
    self.reason = reason
    super(AllReduceSpecError, self).__init__(
        'invalid --all_reduce_spec %r: %r at position %d: %s'
        % (spec, token, position, reason))


class TowerTensorsError(VariableMgrError):
  """The `[tower][tensor]` input is malformed: no towers, a tower count that
  differs from the device count, towers of different lengths, or tensors at
  one index that differ in dtype or shape across towers."""


class StaticShapeError(VariableMgrError):
  """An algorithm that cuts tensors into chunks got a tensor whose shape is
  not fully defined at graph-construction time."""


class PackingOptionError(VariableMgrError):
  """A packing option (number of packs, small-gradient limits) is out of
  range."""


class AlgorithmOptionError(VariableMgrError):
  """An all-reduce algorithm got a parameter outside its domain (e.g.
  num_rings=0, an empty list of parameter devices, NCCL on non-GPUs)."""


class TrafficMeterError(VariableMgrError):
  """A traffic measurement cannot be made: a partition graph holds a send
  whose tensor size cannot be known, or the device count is below one."""
