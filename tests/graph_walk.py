"""Walks of a graph's structure that tests assert on."""


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
