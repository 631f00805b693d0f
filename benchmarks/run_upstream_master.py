"""tf_cnn_benchmarks master's harness with its own variable_mgr.py and with
this package in its place (`benchmarks/upstream_master.py` says how).

    python benchmarks/run_upstream_master.py [--modes NAME,...] [--no-modes]
        [--tests FILE,...] [--select TEXT,...] [--no-tests] [--gpu-check]
        [--runs 2]
        [--extra FLAG,...] [--python PYTHON] [--workdir DIR]
    python benchmarks/run_upstream_master.py --write-results

`--write-results` runs what `benchmarks/UPSTREAM_MASTER_RESULTS.md` holds
(every mode twice a copy with master's default ref variables, once a copy
with --use_resource_vars, and master's test files with the selection below)
and writes that file whole, naming the commit it measured.

Modes: every `--variable_update` of master on the CPU (2 towers a worker;
clusters of local task processes), each run `--runs` times in both copies;
a table of worker 0's (the controller's) losses, whether the runs of a
copy repeat exactly, and whether the two copies agree. Tests: master's
CPU-runnable test files in both copies, each test's outcome side by side
and a count a file; master's `_check_has_gpu` is a no-op unless
`--gpu-check` (without a CUDA GPU it fails nearly every test it
guards). Exit status 1 when a mode fails or does not repeat with the
project, or a test passes with master's own and not with the project.
"""

import argparse
import contextlib
import datetime
import io
import os
import platform
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import upstream_master  # pylint: disable=g-import-not-at-top,wrong-import-position

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(REPO, 'benchmarks', 'UPSTREAM_MASTER_RESULTS.md')
# benchmark_cnn_test.py's tests that end in minutes on 2 cores (the rest of
# the file takes hours there).
RESULTS_SELECT = ('VariableUpdateTest,VariableMgrLocalReplicatedTest,'
                  'testDistributedReplicatedSavableVars,testParameterServer,'
                  'testReplicated,testIndependent,testSaveModelSteps')
# benchmark_cnn_distributed_test.py's test that ends in minutes: a cluster
# of 2 workers and 2 PS tasks under master's default variable_update. The
# file's other tests run 3 to 5 processes each for many more steps.
DISTRIBUTED_SELECT = 'DistributedVariableUpdateTest.testVarUpdateDefault'


def _fmt(losses):
  return ' '.join('%.9g' % x for x in losses) or '-'


def run_modes(workdir, modes, runs, python, extra):
  """Prints the modes' table; returns the names of modes that fail."""
  bad = []
  print('| mode | master own: losses | repeats | project: losses | repeats '
        '| same as own |')
  print('|---|---|---|---|---|---|')
  for mode in modes:
    cells = [mode.name]
    results = {}
    for kind in upstream_master.KINDS:
      kind_runs = [upstream_master.run_mode(workdir, kind, mode, python,
                                            extra=extra)
                   for _ in range(runs)]
      results[kind] = kind_runs
      ok = all(r.ok and r.losses for r in kind_runs)
      repeats = ok and all(r.losses == kind_runs[0].losses for r in kind_runs)
      cells.append(_fmt(kind_runs[0].losses) if ok else 'FAILED')
      cells.append('yes' if repeats else 'no')
      if kind == 'project' and not repeats:
        bad.append(mode.name)
        sys.stderr.write('%s (project) output:\n%s\n' %
                         (mode.name, kind_runs[0].output[-4000:]))
    own, mine = results['own'][0], results['project'][0]
    cells.append('yes' if own.ok and own.losses == mine.losses else 'no')
    print('| ' + ' | '.join(cells) + ' |')
    sys.stdout.flush()
  return bad


def _why(own, mine):
  """The cause a test's row shows: the project's where it does not pass,
  else master's own's where that does not."""
  if mine[0] not in ('pass', 'skip'):
    return mine[1]
  if own[0] not in ('pass', 'skip'):
    return 'own: ' + own[1]
  return ''


def run_tests(workdir, files, python, gpu_check, select):
  """Prints each test's outcomes and a count a file; returns the tests that
  pass with master's own and not with the project."""
  bad = []
  summary = []
  for name in files:
    outcomes = dict((kind, upstream_master.run_test_file(
        workdir, kind, name, python, gpu_check=gpu_check, select=select))
                    for kind in upstream_master.KINDS)
    print('\n%s\n' % name)
    print('| test | master own | project | why (the project\'s, else master '
          'own\'s, where it does not pass) |')
    print('|---|---|---|---|')
    tests = list(outcomes['own']) + [t for t in outcomes['project']
                                     if t not in outcomes['own']]
    counts = dict((kind, {}) for kind in upstream_master.KINDS)
    for test in tests:
      own = outcomes['own'].get(test, ('missing', ''))
      mine = outcomes['project'].get(test, ('missing', ''))
      for kind, result in (('own', own), ('project', mine)):
        counts[kind][result[0]] = counts[kind].get(result[0], 0) + 1
      why = _why(own, mine)
      print('| %s | %s | %s | %s |' % (test, own[0], mine[0],
                                       why.replace('|', '/')[:200]))
      if own[0] == 'pass' and mine[0] != 'pass':
        bad.append(test)
    summary.append((name, counts))
    sys.stdout.flush()
  print('\n| file | master own | project |')
  print('|---|---|---|')
  for name, counts in summary:
    print('| %s | %s | %s |' % (name, *[
        ', '.join('%s %d' % kv for kv in sorted(counts[k].items()))
        for k in upstream_master.KINDS]))
  return bad


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--modes', default='',
                      help='comma-separated mode names (default: all)')
  parser.add_argument('--no-modes', action='store_true')
  parser.add_argument('--tests', default=','.join(upstream_master.TEST_FILES))
  parser.add_argument('--no-tests', action='store_true')
  parser.add_argument('--runs', type=int, default=2)
  parser.add_argument('--gpu-check', action='store_true',
                      help='keep master\'s _check_has_gpu (by default it is '
                      'a no-op, so that the tests run on the CPU)')
  parser.add_argument('--python', default=sys.executable)
  parser.add_argument('--workdir', default=None)
  parser.add_argument('--select', default='',
                      help='run only the tests whose id holds one of these '
                      'comma-separated strings, e.g. VariableUpdateTest')
  parser.add_argument('--extra', default='',
                      help='flags added to every mode, comma-separated, e.g. '
                      '--extra=--use_resource_vars')
  parser.add_argument('--write-results', action='store_true',
                      help='run what %s holds and write it whole' %
                      os.path.relpath(RESULTS, REPO))
  args = parser.parse_args(argv)
  if args.write_results:
    return write_results(args)
  extra = [f for f in args.extra.split(',') if f]
  upstream = upstream_master.find_upstream()
  if upstream is None:
    sys.exit('master\'s tf_cnn_benchmarks not found: set %s, or put it at '
             '../shared/upstream/tf_cnn_benchmarks beside the checkout.' %
             upstream_master.UPSTREAM_ENV)
  workdir = args.workdir or tempfile.mkdtemp(prefix='upstream_master_')
  upstream_master.prepare(upstream, workdir)
  print('master: %s; copies in %s; %s; %s=%s' % (
      upstream, workdir, args.python, upstream_master.ONEDNN,
      os.environ.get(upstream_master.ONEDNN, '1')))
  bad = []
  if not args.no_modes:
    names = [n for n in args.modes.split(',') if n]
    unknown = set(names) - set(m.name for m in upstream_master.MODES)
    if unknown:
      sys.exit('--modes: unknown %s; the modes are %s.' % (
          ', '.join(sorted(unknown)),
          ', '.join(m.name for m in upstream_master.MODES)))
    modes = [m for m in upstream_master.MODES if not names or m.name in names]
    print('modes: %s %s' % (' '.join(upstream_master.BASE_FLAGS),
                            ' '.join(extra)))
    bad += run_modes(workdir, modes, args.runs, args.python, extra)
  if not args.no_tests:
    print('\nmaster\'s tests, _check_has_gpu %s' % (
        'kept' if args.gpu_check else 'a no-op (towers on the CPU)'))
    bad += run_tests(workdir, [f for f in args.tests.split(',') if f],
                     args.python, args.gpu_check,
                     [x for x in args.select.split(',') if x])
  if bad:
    print('\nwith the project, failing or not repeating: ' + ', '.join(bad))
  return 1 if bad else 0


class _Tee(io.TextIOBase):
  """Writes to the terminal and keeps a copy."""

  def __init__(self, stream):
    super(_Tee, self).__init__()
    self.stream = stream
    self.kept = io.StringIO()

  def write(self, text):
    self.stream.write(text)
    self.kept.write(text)
    return len(text)

  def flush(self):
    self.stream.flush()


def write_results(args):
  """Runs the five parts of the results file and writes it whole."""
  sys.path.insert(0, REPO)
  from variable_mgr.benchmark.reports import markdown  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  source = markdown.source_state(REPO)
  started = datetime.datetime.now()
  workdir = args.workdir or tempfile.mkdtemp(prefix='upstream_master_')
  parts = [
      ('Modes, master\'s default (ref variables), two runs a copy',
       ['--no-tests', '--runs', '2']),
      ('Modes, --use_resource_vars, one run a copy',
       ['--no-tests', '--runs', '1', '--extra=--use_resource_vars']),
      ('Master\'s test files of variable_mgr_util and allreduce',
       ['--no-modes', '--tests',
        'variable_mgr_util_test.py,allreduce_test.py']),
      ('benchmark_cnn_test.py, the tests that end in minutes',
       ['--no-modes', '--tests', 'benchmark_cnn_test.py',
        '--select', RESULTS_SELECT]),
      ('benchmark_cnn_distributed_test.py, the test that ends in minutes',
       ['--no-modes', '--tests', 'benchmark_cnn_distributed_test.py',
        '--select', DISTRIBUTED_SELECT]),
  ]
  sections, status = [], 0
  for title, part in parts:
    tee = _Tee(sys.stdout)
    with contextlib.redirect_stdout(tee):
      status |= main(part + ['--workdir', workdir, '--python', args.python])
    sections.append('## %s\n\n%s' % (title, tee.kept.getvalue()))
  minutes = (datetime.datetime.now() - started).total_seconds() / 60
  text = '\n'.join([
      '# tf_cnn_benchmarks master\'s harness: its own variable_mgr.py and '
      'this package',
      '',
      'Written whole by `python benchmarks/run_upstream_master.py '
      '--write-results`; the next run replaces all of it. What it means: '
      '[tf_cnn_benchmarks](../docs/tf-cnn-benchmarks.md#masters-harness-with-'
      'this-package).',
      '',
      '- commit: %s' % source,
      '- TensorFlow %s, Python %s, %d cores; %s, %.0f minutes' % (
          tf.__version__, platform.python_version(), os.cpu_count(),
          started.strftime('%Y-%m-%d'), minutes),
      '- exit status %d (1: a mode failed or did not repeat with the '
      'project, or a test passed with master\'s own and not with the '
      'project)' % status,
      '',
  ] + sections)
  with open(RESULTS, 'w') as f:
    f.write(text)
  print('wrote %s' % RESULTS)
  return status


if __name__ == '__main__':
  sys.exit(main())
