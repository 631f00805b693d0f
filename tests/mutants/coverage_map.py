"""Writes the map from package lines to the tests that execute them.

    python3 tests/mutants/coverage_map.py                     # the whole suite
    python3 tests/mutants/coverage_map.py tests/test_x.py ... # these tests

Runs pytest under coverage.py over `variable_mgr/`, each test in its own
context (context_plugin.py), the processes the tests start included
(coverage's `patch = subprocess`: a CLI run, a cluster task, a worker
measure themselves under the test that started them; `patch = _exit`, so
that a process ending in os._exit, as the benchmark's tasks and launcher
do, still writes what it ran; `sigterm = true`, so that a task stopped by
SIGTERM does too, though one killed by SIGKILL cannot). The result,
tests/mutants/coverage_map.json, names for each package file and line the
tests that ran it (a line that runs when the module is imported, its
top-level statements and each def's signature, for every test that ran a
line of the module, whichever test imported it first);
run_mutant_tests.py runs those tests for a mutant of
that line.

Given test paths, it updates the map: the tests that ran replace what the
map said about them (a test of their files that no longer runs leaves the
map), every other test's lines stay. Without, it runs the
whole suite (the default one: no `long`, `gpu` or `network_cluster` tests)
and writes the map anew.

The map's JSON: "tests", every test id once; "sets", lists of indexes into
"tests"; "files", for each package file (relative to the repository) a
mapping of line number to an index into "sets" (lines run by the same tests
share one set); "sources", the sha1 of every package file measured. An
update refuses to run once the package differs from those (its line
numbers and the map's would not agree), and run_population.py refuses a
map measured on other code than its population's.
"""

import argparse
import ast
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
MAP_PATH = os.path.join(REPO, 'tests', 'mutants', 'coverage_map.json')
PACKAGE = 'variable_mgr'

RC_TEMPLATE = """\
[run]
source = {source}
parallel = true
patch =
    subprocess
    _exit
sigterm = true
context = ${{VM_MUTANT_TEST_ID-}}
data_file = {data_file}
"""


def package_sources(root=REPO):
  """{package file relative to `root`: sha1 of its bytes}."""
  found = {}
  for directory, _, names in os.walk(os.path.join(root, PACKAGE)):
    for name in names:
      if name.endswith('.py'):
        path = os.path.join(directory, name)
        with open(path, 'rb') as f:
          found[os.path.relpath(path, root)] = hashlib.sha1(
              f.read()).hexdigest()
  return found


def stale_files(path=MAP_PATH, root=REPO, names=None):
  """The package files (of `names`, default every one) that differ from
  what the map at `path` was measured on: changed, added or removed since
  (every file when the map records no sources). Their line numbers may
  have moved, so the map would send a mutant to the wrong tests."""
  with open(path) as f:
    measured = json.load(f).get('sources', {})
  now = package_sources(root)
  names = set(now) | set(measured) if names is None else set(names)
  return sorted(n for n in names if now.get(n) != measured.get(n))


def load_map(path=MAP_PATH):
  """{file: {line: set of test ids}} of the map at `path` ({} if none)."""
  if not os.path.exists(path):
    return {}
  with open(path) as f:
    data = json.load(f)
  tests, sets = data['tests'], data['sets']
  return {name: {int(line): set(tests[i] for i in sets[index])
                 for line, index in lines.items()}
          for name, lines in data['files'].items()}


def save_map(files, path=MAP_PATH, sources=None):
  """Writes the map; `sources` (package_sources of the code measured) lets
  stale_files tell when the code has moved on."""
  tests = sorted(set(t for lines in files.values()
                     for ids in lines.values() for t in ids))
  index = {t: i for i, t in enumerate(tests)}
  sets, set_index, out = [], {}, {}
  for name in sorted(files):
    out[name] = {}
    for line in sorted(files[name]):
      key = tuple(sorted(index[t] for t in files[name][line]))
      if key not in set_index:
        set_index[key] = len(sets)
        sets.append(list(key))
      out[name][str(line)] = set_index[key]
  with open(path, 'w') as f:
    json.dump({'tests': tests, 'sets': sets, 'files': out,
               'sources': sources or {}}, f,
              separators=(',', ':'), sort_keys=True)
    f.write('\n')


def test_id(context):
  """The pytest node id in a coverage context ('' when none): the
  parent's dynamic context, or a subprocess's static one (joined by '|'
  when both are set)."""
  for part in context.split('|'):
    if part.startswith('tests/'):
      return part
  return ''


def measure(test_args, work):
  """{file: {line: set of test ids}} of running pytest on `test_args`."""
  import coverage  # pylint: disable=g-import-not-at-top
  data_file = os.path.join(work, '.coverage')
  rc = os.path.join(work, 'coveragerc')
  with open(rc, 'w') as f:
    f.write(RC_TEMPLATE.format(source=os.path.join(REPO, PACKAGE),
                               data_file=data_file))
  env = dict(os.environ)
  env['PYTHONPATH'] = os.pathsep.join(
      [REPO, os.path.dirname(os.path.abspath(__file__))] +
      ([env['PYTHONPATH']] if env.get('PYTHONPATH') else []))
  env.pop('VM_MUTANT_TEST_ID', None)
  env.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  command = [sys.executable, '-m', 'coverage', 'run', '--rcfile=' + rc,
             '-m', 'pytest', '-q', '-p', 'context_plugin', '-p',
             'no:cacheprovider'] + list(test_args)
  status = subprocess.call(command, cwd=REPO, env=env)
  if status not in (0, 1):
    raise SystemExit('coverage map: pytest exit status %d; no map written'
                     % status)
  if status == 1:
    print('coverage map: some tests failed; their lines count all the same')
  subprocess.check_call([sys.executable, '-m', 'coverage', 'combine',
                         '--rcfile=' + rc, '-q'], cwd=REPO, env=env)
  data = coverage.CoverageData(basename=data_file)
  data.read()
  files = {}
  for measured in data.measured_files():
    name = os.path.relpath(measured, REPO)
    if name.startswith('..'):
      continue
    lines = files.setdefault(name, {})
    at_import = []
    for line, contexts in data.contexts_by_lineno(measured).items():
      ids = set(filter(None, (test_id(c) for c in contexts)))
      if ids:
        lines.setdefault(line, set()).update(ids)
      if '' in contexts or len(ids) < len(contexts):
        at_import.append(line)
    # A line run outside any test (a module's top level, run when pytest
    # collected the tests) counts for every test that ran the module.
    everyone = set(t for ids in lines.values() for t in ids)
    for line in at_import:
      lines.setdefault(line, set()).update(everyone)
  return files


def import_time_lines(path):
  """The lines of a module that run when it is imported: its top-level
  statements, class bodies, and each def's decorators, signature and
  defaults (not the body)."""
  with open(path) as f:
    tree = ast.parse(f.read())
  lines = set()

  def visit(statements):
    for node in statements:
      if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        lines.update(range(first, node.body[0].lineno))
      elif isinstance(node, ast.ClassDef):
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        lines.update(range(first, node.body[0].lineno))
        visit(node.body)
      else:
        lines.update(range(node.lineno, node.end_lineno + 1))

  visit(tree.body)
  return lines


def with_import_lines(files):
  """Gives each module's import-time lines every test that ran the module,
  and the whole test files those tests are in.

  A module first imported inside a test (a strategy that the registry
  imports when it is asked for) records its top-level lines for that test
  alone; every other test that runs the module runs them too, and a mutant
  of a module constant must be checked by all of them. And a test that
  only reads a module's constant (a table of flags compared with
  upstream's) runs none of its lines, so coverage names it nowhere: the
  files of the tests that ran the module are where such tests live, and a
  mutant of an import-time line runs them whole (a file's path in the
  map's set)."""
  for name, lines in files.items():
    path = os.path.join(REPO, name)
    if not os.path.exists(path):
      continue
    everyone = set(t for ids in lines.values() for t in ids if '::' in t)
    test_files = set(t.split('::')[0] for t in everyone)
    for line in import_time_lines(path):
      if line in lines:
        lines[line] = everyone | test_files
  return files


def under(test_id, paths):
  """Whether test `test_id`'s file is one of `paths` or in one of them."""
  name = test_id.split('::')[0]
  return any(name == p or name.startswith(p + os.sep) for p in paths)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('tests', nargs='*',
                      help='test paths or node ids (default: the suite)')
  parser.add_argument('--out', default=MAP_PATH)
  args = parser.parse_args(argv)
  start = time.time()
  sources = package_sources()
  if args.tests and os.path.exists(args.out):
    stale = stale_files(args.out)
    if stale:
      raise SystemExit(
          'coverage map: the package differs from the code the map was '
          'measured on (%s%s); an update would mix line numbers of both: '
          'regenerate the whole map (no test paths)' % (
              ', '.join(stale[:5]), ', ...' if len(stale) > 5 else ''))
  work = tempfile.mkdtemp(prefix='variable_mgr_coverage_map_')
  try:
    new = measure(args.tests or ['tests'], work)
  finally:
    shutil.rmtree(work, ignore_errors=True)
  ran = set(t for lines in new.values() for ids in lines.values()
            for t in ids)
  files = load_map(args.out) if args.tests else {}
  # The tests of the files and folders measured whole that did not run are
  # gone (renamed or removed): a mutant's run would name them and pytest
  # would refuse it. A node id given replaces that test alone.
  whole = [os.path.normpath(a) for a in args.tests if '::' not in a]
  for lines in files.values():
    for ids in lines.values():
      ids -= ran
      ids -= set(t for t in ids if under(t, whole))
  for name, lines in new.items():
    old = files.setdefault(name, {})
    for line, ids in lines.items():
      old.setdefault(line, set()).update(ids)
  files = with_import_lines(
      {name: {line: ids for line, ids in lines.items() if ids}
       for name, lines in files.items()})
  if package_sources() != sources:
    raise SystemExit('coverage map: the package changed while the tests '
                     'ran; no map written')
  save_map(files, args.out, sources)
  print('coverage map: %d tests over %d files in %.0f s, written to %s'
        % (len(set(t for lines in files.values() for ids in lines.values()
                   for t in ids)), len(files), time.time() - start,
           os.path.relpath(args.out, REPO)))
  return 0


if __name__ == '__main__':
  sys.exit(main())
