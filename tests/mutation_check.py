"""Puts known bugs back into a copy of the library and expects tests to fail.

    python tests/mutation_check.py              # every mutation
    python tests/mutation_check.py --only NAME  # one (repeat for more)
    python tests/mutation_check.py --list       # the names

Each entry of MUTATIONS is a bug the library fixed (or one a regression
would bring in) and the tests that guard against it. For each, the check
copies the repository (the files git tracks or would track, as they are in
the working tree) to a temporary directory, replaces `old` by `new` in
`path` there, and runs the entry's tests in the copy with
`python -m pytest -q -x -p no:cacheprovider --long`. The mutation is caught when
pytest reports a failed test (exit status 1); anything else (every test
passing, an error before the tests ran, a node id that does not exist) is a
miss. Before any mutation the listed tests must pass on the unmutated copy,
or a failure would prove nothing.

An `old` text must occur exactly once in its file: when the code changes
under an entry, the check refuses it by name instead of silently testing
nothing. Fix the entry (or drop it with the code it guarded).

Exit status 0 when every mutation is caught, 1 otherwise. It takes some
minutes (one pytest run a mutation), so CI does not run it.

The entries live in tests/mutations/, one module an area of the code
(placement, ordering, allreduce, benchmark_flags, ...), each exporting a
list MUTATIONS of dicts with five keys: name, what the bug is (unique over
every module); path, the library file; old, the exact text there; new, the
text that brings the bug back; tests, pytest node ids, at least one of which
must fail. To add a mutation, append a dict to its area's list.

A bug that only one TensorFlow generation can show (a race that TF 1.15
does not have, a test that skips on it) carries a sixth key, `caught_on`:
the TensorFlow major version (1 or 2) that catches it. Under the other one
the check skips that entry and says so; it is neither run nor missed.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

from mutations import MUTATIONS

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A pytest run longer than this counts as a miss (a hang is no proof).
RUN_TIMEOUT_SECS = 900
REQUIRED_KEYS = frozenset(['name', 'path', 'old', 'new', 'tests'])
OPTIONAL_KEYS = frozenset(['caught_on'])


def _repository_files():
  """Paths (relative to REPO) that git tracks or would track."""
  out = subprocess.check_output(
      ['git', 'ls-files', '--cached', '--others', '--exclude-standard', '-z'],
      cwd=REPO)
  return [p for p in out.decode('utf-8').split('\0') if p]


def _copy_repository(files, destination):
  for path in files:
    source = os.path.join(REPO, path)
    if not os.path.isfile(source):
      continue  # Deleted in the working tree.
    target = os.path.join(destination, path)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.copy2(source, target)


def check_entries(mutations):
  """Problems of the entries themselves: a bad key, or an `old` text that
  does not occur exactly once in the working tree's file."""
  problems = []
  for m in mutations:
    keys = set(m)
    if not REQUIRED_KEYS <= keys <= REQUIRED_KEYS | OPTIONAL_KEYS:
      problems.append('%s: keys %s, expected name, path, old, new, tests '
                      '(and maybe caught_on)' % (m.get('name'), sorted(keys)))
      continue
    if m.get('caught_on', 1) not in (1, 2):
      problems.append('%s: caught_on=%r, expected 1 or 2 (a TensorFlow major '
                      'version)' % (m['name'], m['caught_on']))
    if not m['tests']:
      problems.append('%s: no tests listed' % m['name'])
    path = os.path.join(REPO, m['path'])
    if not os.path.isfile(path):
      problems.append('%s: %s does not exist' % (m['name'], m['path']))
      continue
    with open(path) as f:
      count = f.read().count(m['old'])
    if count != 1:
      problems.append('%s: the old text occurs %d times in %s (must be '
                      'once); the code changed under this entry:\n%s'
                      % (m['name'], count, m['path'],
                         _indent(m['old'])))
  return problems


def duplicate_names(mutations):
  """Problems of names given to more than one entry (over every module, so
  that --only NAME means one entry)."""
  names = [m.get('name') for m in mutations]
  return ['%s: two entries have this name' % name
          for name in sorted(set(n for n in names if names.count(n) > 1))]


def _indent(text):
  return '\n'.join('    | ' + line for line in text.splitlines())


def _environment(copy):
  env = dict(os.environ)
  env['PYTHONPATH'] = copy + (os.pathsep + env['PYTHONPATH']
                              if env.get('PYTHONPATH') else '')
  env['PYTHONDONTWRITEBYTECODE'] = '1'
  env.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  env.pop('TF_CONFIG', None)
  return env


def _check_imports_copy(copy):
  """Refuses to go on if `import variable_mgr` in the copy would load the
  working tree's package (an editable install that wins over PYTHONPATH)."""
  found = subprocess.check_output(
      [sys.executable, '-c',
       'import variable_mgr, os; print(os.path.realpath(variable_mgr.__file__))'],
      cwd=copy, env=_environment(copy), universal_newlines=True).strip()
  if not found.startswith(os.path.realpath(copy) + os.sep):
    raise SystemExit('mutation check: in the copy, variable_mgr is imported '
                     'from %s, not from the copy; cannot test mutations.'
                     % found)


def _tensorflow_major(copy):
  """The major version of the TensorFlow the copy's tests import."""
  found = subprocess.check_output(
      [sys.executable, '-c', 'import tensorflow as tf; print(tf.__version__)'],
      cwd=copy, env=_environment(copy), universal_newlines=True,
      stderr=subprocess.DEVNULL)
  return int(found.strip().splitlines()[-1].split('.')[0])


def run_tests(copy, tests):
  """(pytest exit status or None on timeout, output) of `tests` in `copy`."""
  # --long: an entry may name a test of the `long` marker.
  command = [sys.executable, '-m', 'pytest', '-q', '-x', '-p',
             'no:cacheprovider', '--long'] + list(tests)
  try:
    result = subprocess.run(
        command, cwd=copy, env=_environment(copy), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        universal_newlines=True, timeout=RUN_TIMEOUT_SECS)
  except subprocess.TimeoutExpired as e:
    return None, e.output or ''
  return result.returncode, result.stdout


def _failed_tests(output):
  """The node ids of pytest's FAILED and ERROR summary lines (not the
  captured log lines that begin with ERROR too)."""
  found = []
  for line in output.splitlines():
    words = line.split()
    if len(words) > 1 and words[0] in ('FAILED', 'ERROR') and (
        words[1].startswith('tests/')):
      found.append(words[1])
  return found


def _tail(output, lines=15):
  return _indent('\n'.join(output.rstrip().splitlines()[-lines:]))


def main(argv=None):
  parser = argparse.ArgumentParser(
      description='Put known bugs back into a copy of the library and '
      'expect their tests to fail.')
  parser.add_argument('--only', action='append', default=[], metavar='NAME',
                      help='run this mutation only (may repeat)')
  parser.add_argument('--list', action='store_true',
                      help='print the mutation names and exit')
  parser.add_argument('--verbose', action='store_true',
                      help='print the end of pytest\'s output for every '
                      'mutation, to see why its tests failed')
  parser.add_argument('--no-baseline', action='store_true',
                      help='skip the run of every listed test on the '
                      'unmutated copy')
  args = parser.parse_args(argv)

  if args.list:
    for m in MUTATIONS:
      print('%-45s %s%s' % (m['name'], m['path'],
                            ' (caught on TF %d only)' % m['caught_on']
                            if 'caught_on' in m else ''))
    return 0
  unknown = [n for n in args.only if n not in [m['name'] for m in MUTATIONS]]
  if unknown:
    print('mutation check: no mutation named %s; see --list.'
          % ', '.join(unknown))
    return 1
  chosen = [m for m in MUTATIONS if not args.only or m['name'] in args.only]
  problems = duplicate_names(MUTATIONS) + check_entries(chosen)
  if problems:
    print('mutation check: entries that cannot be applied:')
    for problem in problems:
      print('  ' + problem)
    return 1

  files = _repository_files()
  work = tempfile.mkdtemp(prefix='variable_mgr_mutation_')
  results = []
  skipped = []
  try:
    baseline = os.path.join(work, 'baseline')
    _copy_repository(files, baseline)
    _check_imports_copy(baseline)
    if any('caught_on' in m for m in chosen):
      major = _tensorflow_major(baseline)
      skipped = [m for m in chosen if m.get('caught_on', major) != major]
      for m in skipped:
        print('%-45s skipped: caught on TF %d only, this is TF %d'
              % (m['name'], m['caught_on'], major))
      chosen = [m for m in chosen if m not in skipped]
    if not args.no_baseline and chosen:
      tests = []
      for m in chosen:
        tests.extend(t for t in m['tests'] if t not in tests)
      start = time.time()
      status, output = run_tests(baseline, tests)
      if status != 0:
        print('mutation check: the listed tests do not pass on the unmutated '
              'copy (pytest exit status %s): a failure under a mutation would '
              'prove nothing.\n%s' % (status, _tail(output)))
        return 1
      print('baseline: %d tests pass unmutated (%.0fs)'
            % (len(tests), time.time() - start))
    for m in chosen:
      copy = os.path.join(work, m['name'])
      _copy_repository(files, copy)
      path = os.path.join(copy, m['path'])
      with open(path) as f:
        text = f.read()
      with open(path, 'w') as f:
        f.write(text.replace(m['old'], m['new'], 1))
      start = time.time()
      status, output = run_tests(copy, m['tests'])
      seconds = time.time() - start
      if status == 1:
        verdict = 'caught by %s' % ', '.join(_failed_tests(output)[:1] or
                                             ['a failed test'])
      elif status is None:
        verdict = 'MISSED: the tests ran longer than %ds' % RUN_TIMEOUT_SECS
      elif status == 0:
        verdict = 'MISSED: every listed test passed'
      else:
        verdict = ('MISSED: pytest exit status %d (the tests did not run):\n%s'
                   % (status, _tail(output)))
      results.append((m['name'], status == 1))
      print('%-45s %s (%.0fs)' % (m['name'], verdict, seconds))
      if args.verbose and status == 1:
        print(_tail(output))
      sys.stdout.flush()
      shutil.rmtree(copy, ignore_errors=True)
  finally:
    shutil.rmtree(work, ignore_errors=True)
  missed = [name for name, caught in results if not caught]
  print('%d of %d mutations caught%s%s' % (
      len(results) - len(missed), len(results),
      '; missed: ' + ', '.join(missed) if missed else '',
      '; %d skipped (caught on the other TensorFlow generation only)'
      % len(skipped) if skipped else ''))
  return 1 if missed else 0


if __name__ == '__main__':
  sys.exit(main())
