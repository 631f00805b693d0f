"""Runs one population's mutation test, end to end, and writes its report.

    python3 tests/mutants/run_population.py library --size 400 --seed 1
    python3 tests/mutants/run_population.py benchmark --size 400 --seed 1
    python3 tests/mutants/run_population.py library --resume
    python3 tests/mutants/run_population.py library --rerun-survivors
    python3 tests/mutants/run_population.py benchmark --workers 2

Copies the repository's HEAD (`git archive`) twice to a temporary
directory, one to mutate and one to compare with; writes the cosmic-ray
configuration there (config.toml below, with the population's modules);
`cosmic-ray init`; skips the operators the configuration excludes
(cr-filter-operators), lines marked `# pragma: no mutate` (cr-filter-pragma)
and message-only mutants (filter_messages.py); keeps a seeded sample
stratified by module (sample.py; --size 0 keeps every mutant); runs
`cosmic-ray exec`, whose test command (run_mutant_tests.py) runs, for each
mutant, the tests that the coverage map names for its lines; then writes
the report (report.py) into docs/tests.md.

The session (SQLite) and what the run was (commit, sample, seed, times) stay
in tests/mutants/sessions/ (not tracked). --resume runs the session's
pending mutants again in a fresh copy of the commit it measured (after an
interrupted run), adding the time. --workers N runs N mutants at once,
each shard of the pending ones in a copy of its own (shards.py).
--rerun-survivors runs the session's
survivors (but those listed in equivalent.txt) again at the new HEAD,
whose population's modules must be the ones measured (new tests only),
and the report names both commits.

library: every module of variable_mgr/ but variable_mgr/benchmark/;
benchmark: variable_mgr/benchmark/ (its cluster/ too).
"""

import argparse
import datetime
import fnmatch
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

import coverage_map
import report
import shards

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SESSIONS = os.path.join(HERE, 'sessions')
sys.path.insert(0, os.path.join(REPO, 'benchmarks'))

import upstream_master  # pylint: disable=g-import-not-at-top,wrong-import-position

POPULATIONS = {
    'library': ('variable_mgr', ['variable_mgr/benchmark/**/*.py']),
    'benchmark': ('variable_mgr/benchmark', []),
}

# Operators left out, as cr-filter-operators reads them (a regular
# expression matched at the start of the operator's name):
# - ExceptionReplacer, RemoveDecorator: not the kinds this run asks about;
# - VariableReplacer, VariableInserter: random (a mutant differs from run to
#   run, so no sample could be repeated);
# - a binary operator replaced by a bitwise or shift one, a unary one by ~ or
#   unary +, a comparison by `is`/`is not`: crashes on floats or duplicates
#   of another mutant (unary + of a removed unary -), or `is` between small
#   ints, which CPython makes equal by accident.
EXCLUDED_OPERATORS = [
    r'core/ExceptionReplacer',
    r'core/RemoveDecorator',
    r'core/VariableReplacer',
    r'core/VariableInserter',
    r'core/ReplaceBinaryOperator_.*_(BitOr|BitAnd|BitXor|LShift|RShift)$',
    r'core/ReplaceUnaryOperator_.*_(Invert|UAdd)$',
    r'core/ReplaceComparisonOperator_(Eq|NotEq|Lt|LtE|Gt|GtE)_(Is|IsNot)$',
]

CONFIG = """\
[cosmic-ray]
module-path = {module_path}
timeout = {outer_timeout}
excluded-modules = {excluded}
test-command = {test_command}

[cosmic-ray.distributor]
name = "local"

[cosmic-ray.filters.operators-filter]
exclude-operators = {operators}
"""


def _toml_string(text):
  return json.dumps(text)


def _toml_list(items):
  return '[' + ', '.join(_toml_string(i) for i in items) + ']'


def _run(command, cwd, **kwargs):
  print('+ ' + ' '.join(command))
  sys.stdout.flush()
  subprocess.check_call(command, cwd=cwd, **kwargs)


def _tool(name):
  found = shutil.which(name, path=os.path.dirname(sys.executable) +
                       os.pathsep + os.environ.get('PATH', ''))
  if not found:
    raise SystemExit('%s not found: pip install -r '
                     'tests/mutants/requirements.txt' % name)
  return found


def copy_commit(commit, destination):
  os.makedirs(destination)
  archive = subprocess.Popen(['git', 'archive', commit], cwd=REPO,
                             stdout=subprocess.PIPE)
  subprocess.check_call(['tar', '-x', '-C', destination],
                        stdin=archive.stdout)
  if archive.wait() != 0:
    raise SystemExit('git archive %s failed' % commit)


def write_config(path, population, pristine, timeout):
  module_path, excluded = POPULATIONS[population]
  command = '%s tests/mutants/run_mutant_tests.py --pristine %s --timeout %d' % (
      sys.executable, pristine, timeout)
  with open(path, 'w') as f:
    f.write(CONFIG.format(
        module_path=_toml_string(module_path),
        outer_timeout=timeout + 120,
        excluded=_toml_list(excluded),
        test_command=_toml_string(command),
        operators=_toml_list(EXCLUDED_OPERATORS)))


def check_map(population, copy):
  """Refuses a run whose coverage map (the copy's) was measured on other
  code than the copy's population: its line numbers would send mutants to
  the wrong tests (coverage_map.stale_files)."""
  module_path, excluded = POPULATIONS[population]
  names = [n for n in coverage_map.package_sources(copy)
           if n.startswith(module_path + '/') and
           not any(fnmatch.fnmatch(n, e) or
                   fnmatch.fnmatch(n, e.replace('**/', ''))
                   for e in excluded)]
  stale = coverage_map.stale_files(
      os.path.join(copy, 'tests', 'mutants', 'coverage_map.json'), copy,
      names)
  if stale:
    raise SystemExit(
        'run_population: the coverage map was measured on other code than '
        'the %s\'s files at this commit (%s%s): regenerate it '
        '(tests/mutants/coverage_map.py), commit it and run again'
        % (population, ', '.join(stale[:5]),
           ', ...' if len(stale) > 5 else ''))


def make_session(config, session, copy, size, seed):
  """cosmic-ray's session of the copy's mutants, filtered and sampled."""
  _run([_tool('cosmic-ray'), 'init', config, session], cwd=copy)
  _run([_tool('cr-filter-operators'), session, config], cwd=copy)
  _run([_tool('cr-filter-pragma'), session], cwd=copy)
  _run([sys.executable, os.path.join(HERE, 'filter_messages.py'), session],
       cwd=copy)
  if size:
    _run([sys.executable, os.path.join(HERE, 'sample.py'), session,
          '--size', str(size), '--seed', str(seed)], cwd=copy)


def rerun_survivors(session, meta):
  """Forgets the survivors' results, so that exec runs them again, at HEAD."""
  head = subprocess.check_output(['git', 'rev-parse', 'HEAD'], cwd=REPO,
                                 universal_newlines=True).strip()
  module_path, excluded = POPULATIONS[meta['population']]
  # The population's own files: the library's run stays valid when only
  # the benchmark changed, and the benchmark's when only the library did.
  changed = subprocess.call(
      ['git', 'diff', '--quiet', meta['commit'], head, '--', module_path] +
      [':(exclude,glob)' + pattern for pattern in excluded], cwd=REPO)
  if changed:
    raise SystemExit('run_population: the package changed since %s, where '
                     'the mutants were made; start a new run'
                     % meta['commit'][:10])
  survived = ("test_outcome = 'SURVIVED' OR output = 'timeout'")
  # Mutants listed as equivalent stay as they are: no test can kill them.
  equivalents = report.load_equivalents()
  connection = sqlite3.connect(session)
  with connection:
    rows = connection.execute(
        'SELECT job_id, module_path, start_pos_row, start_pos_col, '
        'operator_name, occurrence FROM mutation_specs WHERE job_id IN '
        '(SELECT job_id FROM work_results WHERE %s)' % survived).fetchall()
    named = dict((row[0], '%s:%d:%d %s %d' % row[1:]) for row in rows)
    again = dict((job, name) for job, name in named.items()
                 if name not in equivalents)
    names = sorted(again.values())
    connection.executemany('DELETE FROM work_results WHERE job_id = ?',
                           [(job,) for job in again])
    count = len(again)
  connection.close()
  print('run_population: %d survivors to run again at %s'
        % (count, head[:10]))
  meta.setdefault('reruns', []).append(
      {'commit': head, 'survivors': count, 'names': names})
  meta['commit_tests'] = head


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('population', choices=sorted(POPULATIONS))
  parser.add_argument('--size', type=int, default=400,
                      help='mutants in the sample (0: all of them)')
  parser.add_argument('--seed', type=int, default=1)
  parser.add_argument('--timeout', type=int, default=None,
                      help='seconds a mutant\'s tests may take (a mutant '
                      'whose tests take longer is not killed, and the report '
                      'counts it apart; default 600, or the session\'s own '
                      'with --resume or --rerun-survivors)')
  parser.add_argument('--resume', action='store_true',
                      help='run the pending mutants of the last session')
  parser.add_argument('--rerun-survivors', action='store_true',
                      help='run the last session\'s survivors again with '
                      'the tests of HEAD (the package unchanged)')
  parser.add_argument('--workers', type=int, default=1,
                      help='mutants run at once, each in its own copy '
                      '(default 1)')
  parser.add_argument('--no-report', action='store_true')
  args = parser.parse_args(argv)
  if args.workers < 1:
    parser.error('--workers %d: at least 1 process runs the mutants'
                 % args.workers)
  # A run stopped by SIGTERM still records the time it ran (the finally
  # blocks below); its pending mutants wait for --resume.
  signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

  os.makedirs(SESSIONS, exist_ok=True)
  session = os.path.join(SESSIONS, args.population + '.sqlite')
  meta_path = os.path.join(SESSIONS, args.population + '.json')
  if args.resume or args.rerun_survivors:
    with open(meta_path) as f:
      meta = json.load(f)
    merged = shards.merge_leftovers(session)
    if merged:
      print('run_population: %d results of a killed run\'s shards merged'
            % merged)
  else:
    commit = subprocess.check_output(['git', 'rev-parse', 'HEAD'], cwd=REPO,
                                     universal_newlines=True).strip()
    dirty = subprocess.check_output(
        ['git', 'status', '--porcelain', '--untracked-files=no'], cwd=REPO,
        universal_newlines=True).strip()
    if dirty:
      print('run_population: the working tree has uncommitted changes; the '
            'run measures HEAD (%s) as committed' % commit[:10])
    meta = {'population': args.population, 'commit': commit,
            'size': args.size, 'seed': args.seed,
            'timeout': args.timeout or 600,
            'seconds': 0.0}
    if os.path.exists(session):
      os.remove(session)
  # The limit of this run; the session's own (meta's) stays the first run's.
  timeout = args.timeout or meta['timeout']
  if args.rerun_survivors:
    rerun_survivors(session, meta)
    meta['reruns'][-1]['timeout'] = timeout

  work = tempfile.mkdtemp(prefix='variable_mgr_mutants_')
  try:
    copy = os.path.join(work, 'copy')
    pristine = os.path.join(work, 'pristine')
    tests_commit = meta.get('commit_tests', meta['commit'])
    copies = [copy] + [copy + str(i) for i in range(1, args.workers)]
    for each in copies + [pristine]:
      copy_commit(tests_commit, each)
    check_map(args.population, copy)
    config = os.path.join(work, 'config.toml')
    write_config(config, args.population, pristine, timeout)
    if not (args.resume or args.rerun_survivors):
      make_session(config, session, copy, args.size, args.seed)
      meta['started'] = datetime.datetime.utcnow().strftime(
          '%Y-%m-%d %H:%M UTC')
    with open(meta_path, 'w') as f:
      json.dump(meta, f, indent=1)
    # The copies are not beside ../shared: the tests that read master's
    # tf_cnn_benchmarks (tests/upstream, the flag tables' tests) find it
    # through the environment, as they find it beside the checkout, else
    # they skip and a mutant only they kill survives.
    upstream = upstream_master.find_upstream(REPO)
    if upstream:
      os.environ.setdefault(upstream_master.UPSTREAM_ENV, upstream)
    start = time.time()
    meta['workers'] = max(args.workers, meta.get('workers', 1))
    try:
      if args.workers == 1:
        _run([_tool('cosmic-ray'), 'exec', config, session], cwd=copy)
      else:
        shards.run([_tool('cosmic-ray'), 'exec'], config, session, copies)
    finally:
      if args.rerun_survivors:
        meta['reruns'][-1]['seconds'] = time.time() - start
      else:
        meta['seconds'] += time.time() - start
      with open(meta_path, 'w') as f:
        json.dump(meta, f, indent=1)
  finally:
    shutil.rmtree(work, ignore_errors=True)
  if not args.no_report:
    _run([sys.executable, os.path.join(HERE, 'report.py'), args.population],
         cwd=REPO)
  return 0


if __name__ == '__main__':
  sys.exit(main())
