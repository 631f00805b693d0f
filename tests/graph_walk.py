"""Walks of a graph's structure that tests assert on."""

import re

from variable_mgr import compat


def ancestors(ops):
  """Every op that `ops` (an op, or an iterable of ops) depends on through
  inputs and control inputs; an op of `ops` itself only where another of
  them depends on it."""
  stack = [ops] if hasattr(ops, 'control_inputs') else list(ops)
  seen = set()
  while stack:
    current = stack.pop()
    for parent in [t.op for t in current.inputs] + list(
        current.control_inputs):
      if parent not in seen:
        seen.add(parent)
        stack.append(parent)
  return seen


# Add on TensorFlow 1.15, AddV2 on 2.x.
ADD_TYPES = ('Add', 'AddV2')

_SUM_SCOPE = re.compile(r'^(.*?(?:^|/)%s(?:_\d+)?)/' % compat.SUM_SCOPE)


def _sum_scope(name):
  match = _SUM_SCOPE.match(name)
  return match.group(1) if match else None


def sums(graph):
  """The sums `compat.sum_in_order` made in `graph`, in the order they were
  made: `(op, terms)`, `op` the add whose output is the sum and `terms` the
  tensors it adds, in the order it adds them."""
  result = []
  for op in graph.get_operations():
    scope = _sum_scope(op.name)
    if scope is None or op.type not in ADD_TYPES:
      continue
    if any(_sum_scope(c.name) == scope for c in op.outputs[0].consumers()):
      continue  # a running total inside the chain
    terms = []
    current = op
    while current.type in ADD_TYPES and _sum_scope(current.name) == scope:
      terms.insert(0, current.inputs[1])
      first = current.inputs[0]
      current = first.op
    result.append((op, [first] + terms))
  return result
