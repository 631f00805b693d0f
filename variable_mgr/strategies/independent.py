"""--variable_update=independent: towers that never exchange gradients."""

from variable_mgr import errors
from variable_mgr.strategies import _replicas


class VariableMgrIndependent(_replicas.TowerCopiesMgr):
  """Each tower has its own variables, under `v<d>/`, and applies its own
  gradients: a baseline with no data moved between devices.

  Towers start from tower 0's initial values (the post-init ops copy them),
  then diverge as each trains on its own data. Checkpoints hold tower 0.

  Raises:
    InvalidOptionError: a `reduction` or `accumulation_dtype` is given
      (nothing is reduced here).
  """

  def __init__(self, benchmark_cnn, reduction=None, accumulation_dtype=None):
    for name, value in (('reduction', reduction),
                        ('accumulation_dtype', accumulation_dtype)):
      if value is not None:
        raise errors.InvalidOptionError(
            '%s=%r with independent: independent towers never combine '
            'gradients; leave %s unset or pick parameter_server or '
            'replicated.' % (name, value, name))
    super(VariableMgrIndependent, self).__init__(benchmark_cnn)

  def _preprocess(self, tower_grads):
    return self.benchmark_cnn.raw_devices, tower_grads
