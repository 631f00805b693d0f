"""Towers create their trainable variables through the manager's scope.

A manager shares, places and copies a tower's variables through the
variable scope that `create_outer_variable_scope(d)` returns: its name
(`v/`, `v<d>/`), its reuse flag (towers 1.. of a parameter server reuse
tower 0's variables) and its custom getter (caching devices, staging areas,
local copies). Only `tf.get_variable`, and the layers built on it, go
through a variable scope. A `tf.Variable` made inside that scope takes the
name scope's name instead (`v/tower_0/w`), is shared by no tower and placed
by no getter, so the towers differ in ways that surface far from the cause
(a gradient that is None on one tower only). `check_tower_variables` names
such a variable, and the fix, before the update graph is built.

A variable created by `tf.get_variable` is held by its graph's variable
store; a lookup with `reuse=True` under the root scope finds it there and
adds nothing to the graph.
"""

from variable_mgr import errors
from variable_mgr.compat import tf


def created_by_get_variable(var):
  """Whether `var` is the variable `tf.get_variable` keeps under its name.

  Args:
    var: a variable (ref or resource), or a part of a partitioned one.
  """
  op = getattr(var, 'op', None)
  if op is None:
    return False
  root = tf.VariableScope(reuse=True, name='')
  with op.graph.as_default(), tf.variable_scope(
      root, auxiliary_name_scope=False):
    try:
      found = tf.get_variable(op.name, dtype=var.dtype.base_dtype)
    except ValueError:  # Not in the store, or of another dtype there.
      return False
  return found is var


def _raise_for(var, tower, listed=True):
  name = var.op.name
  what = ('tower %d\'s trainable variable %s' % (tower, name) if listed else
          'tower %d lists no variables, and the trainable variable %s' %
          (tower, name))
  raise errors.TowerVariableError(
      '%s was not created with tf.get_variable (a tf.Variable, say): a '
      'variable manager shares, places and copies variables through the '
      'variable scope of create_outer_variable_scope(%d), which tf.Variable '
      'bypasses. Create it with tf.get_variable(%r, ...) (or layers built on '
      'it) inside that scope.' % (what, tower, name.rsplit('/', 1)[-1]))


def check_variables(tower, variables, checked=None):
  """Raises TowerVariableError for the first of tower `tower`'s `variables`
  that tf.get_variable did not create.

  Args:
    tower: the tower's index, for the message.
    variables: the variables the tower lists.
    checked: a set of `id()`s of variables known good, updated; None for
      none.
  """
  checked = set() if checked is None else checked
  for var in variables:
    if id(var) in checked:
      continue
    if not created_by_get_variable(var):
      _raise_for(var, tower)
    checked.add(id(var))


def check_tower_variables(tower_grads, graph=None):
  """Raises TowerVariableError for a tower variable that tf.get_variable
  did not create.

  Args:
    tower_grads: `[tower][(grad, var)]`, lists.
    graph: where to look for stray variables when a tower lists none; the
      default graph if None.

  Raises:
    TowerVariableError: a variable of `tower_grads` is not one that
      `tf.get_variable` created; or a tower lists no variable while the
      graph has a trainable variable that `tf.get_variable` did not create
      (a model of tf.Variables outside every manager scope).
  """
  checked = set()
  for t, tower in enumerate(tower_grads):
    check_variables(t, [var for _, var in tower], checked)
  for t, tower in enumerate(tower_grads):
    if not tower:
      graph = graph or tf.get_default_graph()
      for var in graph.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES):
        if not created_by_get_variable(var):
          _raise_for(var, t, listed=False)
      return
