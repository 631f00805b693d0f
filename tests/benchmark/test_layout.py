"""The benchmark's rooms import one way (docs/layout.md): a module imports
only modules of its own room or of rooms below it, and never another
room's underscore names."""

import ast
import os

import pytest

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'variable_mgr', 'benchmark')

# Lower rooms first; rooms of one rank do not import each other.
RANKS = {'flags': 0, 'data': 1, 'models': 1, 'training': 2, 'reports': 3,
         'runs': 4, 'cluster': 5, 'entry': 6}
ENTRY_POINTS = ('__init__', '__main__', 'cli', 'distributed')


def room_of(module):
  """'variable_mgr.benchmark.training.harness' -> 'training'."""
  parts = module.split('.')[2:]
  if not parts or parts[0] in ENTRY_POINTS:
    return 'entry'
  return parts[0]


def modules():
  found = {}
  for root, _, files in os.walk(PACKAGE):
    for name in files:
      if name.endswith('.py'):
        path = os.path.join(root, name)
        rel = os.path.relpath(path, os.path.dirname(os.path.dirname(PACKAGE)))
        module = rel[:-3].replace(os.sep, '.')
        if module.endswith('.__init__'):
          module = module[:-len('.__init__')]
        found[module] = path
  return found


def imports_of(path):
  """(module imported, names taken from it) for each benchmark import."""
  with open(path) as f:
    tree = ast.parse(f.read())
  for node in ast.walk(tree):
    if isinstance(node, ast.ImportFrom) and node.module and (
        node.module.startswith('variable_mgr.benchmark')):
      for alias in node.names:
        full = node.module + '.' + alias.name
        yield (full if full in MODULES else node.module), alias.name
    elif isinstance(node, ast.Import):
      for alias in node.names:
        if alias.name.startswith('variable_mgr.benchmark'):
          yield alias.name, None


MODULES = modules()


def test_every_module_has_a_room():
  rooms = {room_of(m) for m in MODULES}
  assert rooms == set(RANKS), rooms - set(RANKS)


def violations(module, path):
  """The imports of `module` (its file at `path`) that break the rule."""
  room = room_of(module)
  found = []
  for imported, name in imports_of(path):
    other = room_of(imported)
    if imported not in MODULES and imported != 'variable_mgr.benchmark':
      found.append('%s imports %s, no module of the benchmark' % (
          module, imported))
    elif other != room and not RANKS[other] < RANKS[room]:
      found.append('%s (%s) imports %s (%s): a room imports only rooms '
                   'below it' % (module, room, imported, other))
    elif other != room and (name or '').startswith('_'):
      found.append('%s takes %s from %s' % (module, name, imported))
  return found


@pytest.mark.parametrize('module', sorted(MODULES))
def test_imports_run_down(module):
  assert violations(module, MODULES[module]) == []


def test_a_wrong_way_import_is_found(tmp_path):
  path = tmp_path / 'table.py'
  path.write_text('from variable_mgr.benchmark.training import harness\n'
                  'from variable_mgr.benchmark.flags.scan import _private\n')
  assert len(violations('variable_mgr.benchmark.flags.table', str(path))) == 1
  assert len(violations('variable_mgr.benchmark.reports.output',
                        str(path))) == 1
