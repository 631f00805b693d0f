"""cosmic-ray operators for the kinds of bug its core set does not make.

Installed by tests/mutants/requirements.txt (a provider named `vm`, so the
operators are vm/RemoveCall, vm/SwapArguments and
vm/RemoveControlDependencies):

- RemoveCall: a call made as a statement (its result unused) is not made:
  `ops.append(x)` becomes `None`.
- SwapArguments: two neighbouring positional arguments of a call change
  places: `f(a, b, c)` becomes `f(b, a, c)`, then `f(a, c, b)`.
- RemoveControlDependencies: `control_dependencies(x)` (TensorFlow's) waits
  for nothing: `tf.control_dependencies([])`.
"""

import parso
from cosmic_ray.operators.operator import Example
from cosmic_ray.operators.operator import Operator


def _expression(code, prefix):
  node = parso.parse(code).children[0]
  node.get_first_leaf().prefix = prefix
  return node


def _is_call(node):
  return (node.type in ('atom_expr', 'power') and node.children[-1].type ==
          'trailer' and node.children[-1].children[0].value == '(')


class RemoveCall(Operator):
  """A call whose result is unused, not made."""

  def mutation_positions(self, node):
    if _is_call(node) and node.parent is not None and (
        node.parent.type == 'simple_stmt'):
      yield (node.start_pos, node.end_pos)

  def mutate(self, node, index):
    assert index == 0
    return _expression('None', node.get_first_leaf().prefix)

  @classmethod
  def examples(cls):
    return (Example('ops.append(x)\n', 'None\n'),
            Example('y = f(x)\n', 'y = f(x)\n'),)


def _positional(arglist):
  """Indexes (into arglist.children) of the positional arguments."""
  found = []
  for i, child in enumerate(arglist.children):
    if child.type == 'operator' and child.value == ',':
      continue
    if child.type == 'argument':  # a keyword, *args or **kwargs.
      break
    found.append(i)
  return found


def _swappable(arglist):
  """[(i, j)] of neighbouring positional arguments that differ (swapping
  `None, None` changes nothing)."""
  positional = _positional(arglist)
  return [(a, b) for a, b in zip(positional, positional[1:])
          if arglist.children[a].get_code(include_prefix=False) !=
          arglist.children[b].get_code(include_prefix=False)]


def _arglist(node):
  if node.type == 'trailer' and node.children[0].value == '(' and len(
      node.children) == 3 and node.children[1].type == 'arglist':
    return node.children[1]
  return None


class SwapArguments(Operator):
  """Two neighbouring positional arguments of a call, swapped."""

  def mutation_positions(self, node):
    arglist = _arglist(node)
    if arglist is None:
      return
    for a, b in _swappable(arglist):
      yield (arglist.children[a].start_pos, arglist.children[b].end_pos)

  def mutate(self, node, index):
    arglist = _arglist(node)
    a, b = _swappable(arglist)[index]
    first, second = arglist.children[a], arglist.children[b]
    first_prefix = first.get_first_leaf().prefix
    second_prefix = second.get_first_leaf().prefix
    first.get_first_leaf().prefix = second_prefix
    second.get_first_leaf().prefix = first_prefix
    arglist.children[a], arglist.children[b] = second, first
    return node

  @classmethod
  def examples(cls):
    return (Example('f(a, b, c)\n', 'f(b, a, c)\n'),
            Example('f(a, b, c)\n', 'f(a, c, b)\n', occurrence=1),
            Example('f(a, b=1)\n', 'f(a, b=1)\n'),
            Example('f(None, None, c)\n', 'f(None, c, None)\n'),)


class RemoveControlDependencies(Operator):
  """control_dependencies(...) on nothing."""

  def mutation_positions(self, node):
    if node.type != 'trailer' or node.children[0].value != '(':
      return
    before = node.get_previous_sibling()
    if before is None:
      return
    name = before.children[-1] if before.type == 'trailer' else before
    if getattr(name, 'value', None) == 'control_dependencies' and len(
        node.children) == 3:
      yield (node.children[1].start_pos, node.children[1].end_pos)

  def mutate(self, node, index):
    assert index == 0
    node.children[1] = _expression('[]', node.children[1].get_first_leaf()
                                   .prefix)
    return node

  @classmethod
  def examples(cls):
    return (Example('with tf.control_dependencies([a]):\n  pass\n',
                    'with tf.control_dependencies([]):\n  pass\n'),)


_OPERATORS = {
    'RemoveCall': RemoveCall,
    'SwapArguments': SwapArguments,
    'RemoveControlDependencies': RemoveControlDependencies,
}


class OperatorProvider(object):
  """The `vm` provider's operators."""

  def __iter__(self):
    return iter(_OPERATORS)

  def __getitem__(self, name):
    return _OPERATORS[name]
