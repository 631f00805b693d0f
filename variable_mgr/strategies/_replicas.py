"""Copying tower 0's variables to the other towers' copies."""

from variable_mgr import base
from variable_mgr.compat import tf


def copy_from_tower_zero_ops(variables):
  """Assign ops that copy every `v0/x` to each `v<d>/x`, d > 0.

  Variables outside the tower scopes are left alone.
  """
  by_name = dict((base.strip_port(v.name), v) for v in variables)
  ops = []
  for var in variables:
    name = base.strip_port(var.name)
    scope, index = base.tower_scope_of(name)
    if scope is None or index in (None, 0):
      continue
    source = by_name.get('v0/' + base.canonical_name(name))
    if source is not None:
      ops.append(var.assign(source.read_value()))
  return ops


def per_tower_gradients(tower_grads, tower):
  """Tower `tower`'s `[(grad, var)]` out of `[tower][(grad, var)]`."""
  return list(tower_grads[tower])
