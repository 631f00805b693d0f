"""The names the managers give variables, and their canonical form.

Tower d's copies live under the scope `v<d>/` (replicated, independent),
shared variables under `v/` (parameter-server modes); a checkpoint names a
variable without that scope (`canonical_name`), so that it restores under
any strategy.
"""

import re

# `v/` (shared variables) or `v<d>/` (tower d's copy).
_TOWER_SCOPE = re.compile(r'^v(\d*)/')


def strip_port(name):
  """'v0/w:0' -> 'v0/w'."""
  return name[:-2] if name.endswith(':0') else name


def tower_scope_of(name):
  """('v0', 0) for 'v0/w', ('v', None) for 'v/w', (None, None) otherwise."""
  match = _TOWER_SCOPE.match(name)
  if not match:
    return None, None
  index = match.group(1)
  return 'v' + index, (int(index) if index else None)


def canonical_name(name):
  """A variable's name without the manager's scope:
  'v0/conv/w:0' -> 'conv/w'."""
  name = strip_port(name)
  scope, _ = tower_scope_of(name)
  return name[len(scope) + 1:] if scope else name
