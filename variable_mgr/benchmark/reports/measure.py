"""How the benchmark scripts measure: fresh processes, interleaved rounds.

The machine a benchmark runs on is shared, so no single timing is an
absolute. The scripts under `benchmarks/` therefore measure alike:

- each measurement runs in a process of its own (`run_in_subprocess`): a
  script is its own worker, `script --worker <JSON>`, and hands back one
  `RESULT <JSON>` line (`worker_main`), so that every measurement gets a
  TensorFlow of its own;
- in that process every candidate is built first, then the candidates take
  turns (`interleaved_rounds`): round r runs each candidate `steps` times,
  in an order rotated by r, so that a change of the machine's load reaches
  every candidate alike;
- two candidates are compared within each round (`ratios`), and a
  comparison is reported as its median with the range of the rounds
  (`spread`); `variable_mgr.benchmark.reports.markdown` writes those as tables and
  verdicts.

Only `op_time_by_type` and `op_build_seconds` import TensorFlow (when
called), so a script's driver process can use the rest without it.

A measurement of a script reads, for example:

    sessions = {'replicated': ..., 'MirroredStrategy': ...}  # built
    times = interleaved_rounds(
        dict((name, functools.partial(s.run, fetches[name]))
             for name, s in sessions.items()), rounds=5, steps=6)
    ratio = spread(ratios(times, 'replicated', 'MirroredStrategy'))
"""

import argparse
import collections
import contextlib
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import time

# The directory that holds the `variable_mgr` package: a worker process
# imports the same package as the script that started it.
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))
RESULT_PREFIX = 'RESULT '


# -- The scripts' processes ----------------------------------------------------


def script_args(description, quick_help, argv=None):
  """The flags every benchmark script takes: `(args, given)`, `given` the
  arguments as passed (for the report's command line).

  `--quick` (a check, its help `quick_help`), `--output` (the Markdown file
  to write), `--json` (the raw figures), and the hidden `--worker` of
  `run_in_subprocess`.
  """
  parser = argparse.ArgumentParser(description=description)
  parser.add_argument('--quick', action='store_true', help=quick_help)
  parser.add_argument('--output', help='the Markdown file to write')
  parser.add_argument('--json', help='also write the raw figures here')
  parser.add_argument('--worker', help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  return args, list(argv if argv is not None else sys.argv[1:])


def make_log(start):
  """`log(line)`: the line on stdout after the seconds since `start`."""

  def log(line):
    sys.stdout.write('[%5.0f s] %s\n' % (time.time() - start, line))
    sys.stdout.flush()

  return log


def run_in_subprocess(script, log, hidden=(), extra_env=None, **spec):
  """Runs `script --worker <spec as JSON>` in a fresh Python process and
  returns the JSON of its last `RESULT ` line.

  Args:
    script: the path of the script (its `worker_main` reads the spec).
    log: called with one line when the worker is done.
    hidden: keys of `spec` left out of that line (large values).
    extra_env: variables added to the worker's environment.
    **spec: JSON-serialisable arguments of the worker.

  Raises:
    RuntimeError: the worker failed or printed no result; its stderr's
      tail is written to stderr first.
  """
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONPATH=os.pathsep.join(
      [PACKAGE_ROOT] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
  env.update(extra_env or {})
  start = time.time()
  proc = subprocess.run(
      [sys.executable, os.path.abspath(script), '--worker', json.dumps(spec)],
      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
      universal_newlines=True)
  lines = [l for l in proc.stdout.splitlines() if l.startswith(RESULT_PREFIX)]
  shown = [(key, value) for key, value in spec.items() if key not in hidden]
  if proc.returncode != 0 or not lines:
    sys.stderr.write(proc.stderr[-4000:])
    raise RuntimeError('worker %s failed with status %d' %
                       (dict(shown), proc.returncode))
  shown += sorted((extra_env or {}).items())
  log('  %s (%.0f s)' % (' '.join('%s=%s' % kv for kv in shown),
                         time.time() - start))
  return json.loads(lines[-1][len(RESULT_PREFIX):])


def worker_main(tasks, spec):
  """The worker side of `run_in_subprocess`: runs
  `tasks[spec['task']](**rest of spec)` and prints its result.

  Args:
    tasks: {name: function returning something JSON-serialisable}.
    spec: the JSON text passed to `--worker`.
  """
  kwargs = json.loads(spec)
  result = tasks[kwargs.pop('task')](**kwargs)
  sys.stdout.write(RESULT_PREFIX + json.dumps(result) + '\n')
  sys.stdout.flush()


# -- Interleaved rounds -------------------------------------------------------


def rotated(names, shift):
  """`names` rotated left by `shift` (modulo their number)."""
  names = list(names)
  if not names:
    return names
  shift %= len(names)
  return names[shift:] + names[:shift]


def time_steps(step, steps):
  """Mean wall seconds of `steps` consecutive calls of `step()`."""
  start = time.perf_counter()
  for _ in range(steps):
    step()
  return (time.perf_counter() - start) / steps


def interleaved_rounds(steps_by_name, rounds, steps, warmup=0):
  """Times candidates in turn: every round runs each one `steps` times, the
  order rotated by one each round.

  Args:
    steps_by_name: {name: step}, an ordered mapping; `step()` runs one
      step of the candidate (e.g. `functools.partial(sess.run, fetches)`).
    rounds: how many rounds, at least 1.
    steps: steps a candidate and round, at least 1.
    warmup: untimed steps of each candidate before the first round.

  Returns:
    An OrderedDict {name: [mean seconds a step, one a round]}.
  """
  if rounds < 1 or steps < 1:
    raise ValueError('rounds=%r, steps=%r: both must be at least 1'
                     % (rounds, steps))
  names = list(steps_by_name)
  for name in names:
    for _ in range(warmup):
      steps_by_name[name]()
  times = collections.OrderedDict((name, []) for name in names)
  for r in range(rounds):
    for name in rotated(names, r):
      times[name].append(time_steps(steps_by_name[name], steps))
  return times


# -- Ratios and their spread --------------------------------------------------


class Spread(collections.namedtuple('Spread', 'median low high values')):
  """The median of per-round figures, their range, and the figures."""

  __slots__ = ()

  @property
  def rounds(self):
    return len(self.values)

  def count_above(self, limit):
    return sum(1 for v in self.values if v > limit)


def spread(values):
  """The Spread of a non-empty list of per-round figures."""
  values = [float(v) for v in values]
  if not values:
    raise ValueError('no figures: a spread needs at least one round')
  return Spread(statistics.median(values), min(values), max(values), values)


def ratios(times, name, reference):
  """Per-round ratios `times[name][r] / times[reference][r]`.

  Args:
    times: {name: [a figure a round]}, as `interleaved_rounds` returns;
      both lists of the same length (the same rounds).
  """
  mine, theirs = times[name], times[reference]
  if len(mine) != len(theirs):
    raise ValueError('%s has %d rounds and %s %d: a ratio pairs figures of '
                     'the same round' % (name, len(mine), reference,
                                         len(theirs)))
  return [a / b for a, b in zip(mine, theirs)]


def ratio_spread(times, name, reference):
  """`spread(ratios(times, name, reference))`."""
  return spread(ratios(times, name, reference))


# -- What a measurement costs the machine -------------------------------------


@contextlib.contextmanager
def no_gc():
  """No garbage collection inside a timed build (as `timeit` does); what
  the previous one left is collected first. Nested, it does nothing."""
  if not gc.isenabled():
    yield
    return
  gc.collect()
  gc.disable()
  try:
    yield
  finally:
    gc.enable()


def resident_bytes():
  """The current resident set (VmRSS) of this process, in bytes."""
  with open('/proc/self/status') as f:
    for line in f:
      if line.startswith('VmRSS:'):
        return int(line.split()[1]) * 1024
  raise RuntimeError('no VmRSS in /proc/self/status')


def peak_resident_bytes():
  """The peak resident set of this process, in bytes."""
  # ru_maxrss is in KiB on Linux.
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def op_build_seconds(ops):
  """Seconds to build `ops` trivial ops (`x = x + 1.0`): TensorFlow's cost
  of adding an op to a graph on this machine at this moment.

  Returns:
    {'seconds': s, 'op_count': the ops built}.
  """
  import tensorflow as _tf  # pylint: disable=g-import-not-at-top
  tf = _tf.compat.v1
  with tf.Graph().as_default() as graph:
    x = tf.constant(1.0)
    start = time.perf_counter()
    while len(graph.get_operations()) < ops:
      x = x + 1.0
    seconds = time.perf_counter() - start
    return {'seconds': seconds, 'op_count': len(graph.get_operations())}


def op_time_by_type(sess, fetches):
  """Runs one traced step of `fetches`; returns {'micros': {op type:
  summed execution microseconds}, 'nodes': {op type: nodes executed}}."""
  import tensorflow as _tf  # pylint: disable=g-import-not-at-top
  tf = _tf.compat.v1
  options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
  metadata = tf.RunMetadata()
  sess.run(fetches, options=options, run_metadata=metadata)
  totals = collections.Counter()
  counts = collections.Counter()
  for device in metadata.step_stats.dev_stats:
    for node in device.node_stats:
      label = node.timeline_label
      op_type = (label.split(' = ', 1)[1].split('(', 1)[0]
                 if ' = ' in label else node.node_name)
      totals[op_type] += node.all_end_rel_micros
      counts[op_type] += 1
  return {'micros': dict(totals), 'nodes': dict(counts)}
