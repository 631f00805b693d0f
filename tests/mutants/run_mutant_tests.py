"""cosmic-ray's test command: runs the tests that execute the mutated lines.

    python3 tests/mutants/run_mutant_tests.py --pristine DIR [--timeout S]

Run from the copy of the repository that cosmic-ray mutates in place
(run_population.py makes it). The mutated file and lines are where the
copy's package differs from DIR, an unmutated copy of the same commit. The
tests are those that tests/mutants/coverage_map.json names for those lines,
run as `python -m pytest -x -q` (the first failure ends the run).

Exit status 0 (the mutant survived) when every test passes, when no test
runs the mutated lines (uncovered code is a gap, not an excuse) or when the
tests run longer than --timeout in all (a slow run proves nothing; report.py
counts these apart, as not killed); 1 (killed) when a test fails or errors
(a test that hangs fails at pytest.ini's limit a test, as in CI), or the
tests cannot be collected (the mutant broke an import: pytest says "ERROR
collecting", or "ImportError while loading conftest" when a conftest.py
imports the module, whatever its exit status). A map that names a test that no
longer exists (pytest's exit status 4 or 5 without a collection error)
counts as a survivor and says so: regenerate the map.
"""

import argparse
import ast
import difflib
import os
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import coverage_map  # pylint: disable=g-import-not-at-top,wrong-import-position

PACKAGE = 'variable_mgr'


def mutated_lines(pristine, copy='.'):
  """{file relative to the copy: sorted changed line numbers}, numbered as in
  the pristine file."""
  changed = {}
  for root, _, names in os.walk(os.path.join(copy, PACKAGE)):
    for name in names:
      if not name.endswith('.py'):
        continue
      path = os.path.join(root, name)
      relative = os.path.relpath(path, copy)
      with open(path) as f:
        now = f.read().splitlines()
      with open(os.path.join(pristine, relative)) as f:
        before = f.read().splitlines()
      if now == before:
        continue
      lines = set()
      matcher = difflib.SequenceMatcher(None, before, now, autojunk=False)
      for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag != 'equal':
          lines.update(range(i1 + 1, max(i2, i1 + 1) + 1))
      changed[relative] = sorted(lines)
  return changed


def statement_line(source, line):
  """The first line of the innermost statement of `source` that holds
  `line` (coverage records a statement under its first line only: a
  mutant on the third line of a table is run by the tests of its first),
  or `line` itself outside every statement."""
  firsts = [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.stmt) and
            node.lineno <= line <= getattr(node, 'end_lineno', node.lineno)]
  return max(firsts) if firsts else line


def tests_for(changed, files, sources=None):
  """The tests that run the changed lines: those of a test file named after
  a changed module first, then the others, each group the tests that run
  fewest lines of the package first (a unit test before a whole run: with
  -x, a likely killer ends the run sooner).

  `sources`: {file: its pristine text}, for a changed line the map does
  not name (a statement's continuation line): its statement's tests.
  """
  tests = set()
  for name, lines in changed.items():
    recorded = files.get(name, {})
    for line in lines:
      if line not in recorded and sources and name in sources:
        line = statement_line(sources[name], line)
      tests.update(recorded.get(line, ()))
  # A whole test file (an import-time line's, coverage_map.with_import_lines)
  # runs its tests once: not again by their ids.
  whole = set(t for t in tests if '::' not in t)
  tests = set(t for t in tests if t in whole or t.split('::')[0] not in whole)
  breadth = dict.fromkeys(tests, 0)
  for lines in files.values():
    for ids in lines.values():
      for test in ids & tests:
        breadth[test] += 1
  stems = set(os.path.splitext(os.path.basename(n))[0].strip('_')
              for n in changed)
  def near_first(test):
    test_file = os.path.basename(test.split('::')[0])
    return (not any(stem in test_file for stem in stems), breadth[test], test)
  return sorted(tests, key=near_first)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--pristine', required=True)
  parser.add_argument('--map', default=os.path.join(HERE,
                                                    'coverage_map.json'))
  parser.add_argument('--timeout', type=float, default=300)
  args = parser.parse_args(argv)
  changed = mutated_lines(args.pristine)
  if not changed:
    print('run_mutant_tests: no file differs from %s' % args.pristine)
    return 1
  where = ', '.join('%s:%s' % (n, ','.join(map(str, ls)))
                    for n, ls in sorted(changed.items()))
  sources = {}
  for name in changed:
    with open(os.path.join(args.pristine, name)) as f:
      sources[name] = f.read()
  tests = tests_for(changed, coverage_map.load_map(args.map), sources)
  if not tests:
    print('SURVIVED: no test runs %s (uncovered)' % where)
    return 0
  print('%s: %d tests' % (where, len(tests)))
  sys.stdout.flush()
  env = dict(os.environ)
  env['PYTHONPATH'] = os.path.abspath('.')
  env['PYTHONDONTWRITEBYTECODE'] = '1'
  env.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  env.pop('TF_CONFIG', None)
  command = [sys.executable, '-m', 'pytest', '-x', '-q', '-p',
             'no:cacheprovider'] + tests
  process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT,
                             universal_newlines=True, start_new_session=True)
  try:
    output, _ = process.communicate(timeout=args.timeout)
  except subprocess.TimeoutExpired:
    # The whole group: a cluster task the tests started goes too.
    os.killpg(process.pid, signal.SIGKILL)
    output, _ = process.communicate()
    print('\n'.join(output.rstrip().splitlines()[-30:]))
    print('SURVIVED: TIMEOUT after %.0f s' % args.timeout)
    return 0
  print('\n'.join(output.rstrip().splitlines()[-30:]))
  if process.returncode == 0:
    print('SURVIVED: %d tests pass' % len(tests))
    return 0
  broke_import = ('ERROR collecting' in output or
                  'ImportError while loading conftest' in output)
  if process.returncode in (4, 5) and not broke_import:
    print('SURVIVED: STALE MAP (pytest exit status %d): regenerate '
          'tests/mutants/coverage_map.json' % process.returncode)
    return 0
  print('KILLED: pytest exit status %d' % process.returncode)
  return 1


if __name__ == '__main__':
  sys.exit(main())
