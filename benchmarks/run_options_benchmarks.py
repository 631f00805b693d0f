#!/usr/bin/env python
"""Measures the training options (issue 17) against their plain runs.

    python benchmarks/run_options_benchmarks.py            # the full run
    python benchmarks/run_options_benchmarks.py --quick    # a check

The full run (about 5 minutes on 2 cores) writes the `training options`
section of `benchmarks/RESULTS.md` (run_benchmarks.py keeps it); `--quick`
(fewer rounds and steps, a minute or two) writes
`benchmarks/OPTIONS_RESULTS_quick.md`, and `--output` any other file, so
that a check never overwrites the figures of record.

Two measurements:

1. **Step time on CPU towers.** lenet, 4 towers (virtual CPU devices),
   batch 32 a tower, `replicated` and `parameter_server`. In one process a
   strategy, every candidate is built through the benchmark's harness
   (`variable_mgr.benchmark.training.harness.build_training_graph`), then the
   candidates take turns (`measure.interleaved_rounds`: every round runs
   each candidate STEPS times, in an order rotated by one each round), and
   each option's step time is divided by the plain run's of the same round;
   the tables give the median with the range of the rounds. Candidates:
   plain; `use_fp16` with a fixed loss scale (128); `use_fp16` with the
   dynamic scale; `backward_passes_per_step=4` (STEPS and the warm-up are
   multiples of 4, so a round holds whole cycles: the figure per
   micro-batch step is the round's mean, the figure per applied step 4
   times it, set beside the plain run at 4 times the batch, the one-step
   equivalent of an accumulated update); `variable_consistency=relaxed`
   (replicated only: the library refuses it elsewhere). **float16 on CPU
   measures correctness, not speed**: the CPU kernels of float16 convert
   to float32 and back (no float16 arithmetic units are used), so an fp16
   run is slower here than on a GPU with float16 units; what the fp16 rows
   show is that the runs train (their loss after the same steps as the
   plain run's, and the dynamic scale's value at the end).

2. **The exchange saved by accumulation on the namespace cluster.**
   parameter_server, 1 PS + 2 workers, lenet, one tower a worker, batch 8,
   every task in its own network namespace with its link shaped to
   200mbit both ways (`--launch_local_cluster --network_rate 200mbit`,
   `variable_mgr.benchmark.cluster.netns`). The PS host's `eth0` byte
   counters (`ip -s link`, in its namespace) are read when worker 0 starts
   its timed steps and when it reports their images/sec; the difference
   over the timed (micro-batch) steps is the bytes a step moves through the
   PS's link: received (the workers' gradients) and sent (the variables
   the workers' towers read). Plain and backward_passes_per_step=4 run in
   turn, each a fresh cluster on a fresh network, the order rotated each
   round; ratios pair the runs of a round. With N = 4 the gradients pushed
   a step fall by 4x (they are sent once a cycle); the variables are still
   read every micro-batch step (a tower reads the weights it computes
   with from the PS every step), so the bytes a step moves in all fall from
   2 x W x B to (1 + 1/4) x W x B (0.625x), and the step time on a shaped
   link with them.

Goals: `relaxed` and backward_passes_per_step=4 (a micro-batch step) at
most 1.10x of plain on CPU towers; on the cluster, the gradient bytes a
micro-batch step at most 0.30x of plain's (the 4x fall, with room for the
protocol's own bytes), its step time on the shaped link at most 0.75x of
plain's. fp16 has no speed goal (see above).
"""

import collections
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _path in (HERE, ROOT):
  if _path not in sys.path:
    sys.path.insert(0, _path)

# pylint: disable=g-import-not-at-top,wrong-import-position
from variable_mgr.benchmark.reports import markdown
from variable_mgr.benchmark.reports import measure
# pylint: enable=g-import-not-at-top,wrong-import-position

SECTION = ('training options', 'run_options_benchmarks.py')
MODEL = 'lenet'
TOWERS = 4
BATCH = 32
PASSES = 4
STRATEGIES = ('replicated', 'parameter_server')

PLAIN = 'plain'
BIG_BATCH = 'plain, batch x%d' % PASSES
# label -> BenchmarkConfig fields of the candidate.
CANDIDATES = collections.OrderedDict([
    (PLAIN, {}),
    ('fp16', {'use_fp16': True}),
    ('fp16 dynamic', {'use_fp16': True, 'fp16_enable_auto_loss_scale': True}),
    ('bpps%d' % PASSES, {'backward_passes_per_step': PASSES}),
    (BIG_BATCH, {'batch_size': PASSES * BATCH}),
    ('relaxed', {'variable_consistency': 'relaxed'}),
])
BPPS = 'bpps%d' % PASSES
# The library refuses relaxed consistency outside replicated.
ONLY = {'relaxed': ('replicated',)}
GOALS = (('relaxed', 1.10), (BPPS, 1.10))

CLUSTER = dict(workers=2, num_ps=1, batch=8, rate=200 * 10**6)
CLUSTER_GOALS = (('gradient bytes', 0.30), ('step time', 0.75))

FULL = dict(rounds=5, steps=8, warmup=4, cluster_rounds=2,
            cluster_steps=8, cluster_warmup=4)
QUICK = dict(rounds=2, steps=4, warmup=4, cluster_rounds=1,
             cluster_steps=4, cluster_warmup=4)


def candidates(strategy):
  """The labels measured for `strategy`."""
  return [c for c in CANDIDATES if strategy in ONLY.get(c, (strategy,))]


def applied_step_seconds(micro_seconds, passes=PASSES):
  """Seconds of one applied step of `passes` micro-batch steps."""
  return micro_seconds * passes


def per_step_bytes(before, after, steps):
  """{'rx': bytes, 'tx': bytes} a step between two counter readings."""
  return dict((k, (after[k] - before[k]) / float(steps)) for k in ('rx', 'tx'))


def expected_fraction(passes=PASSES):
  """A micro-batch step's bytes through the PS's link over a plain step's,
  when the variables are read every step and gradients sent every
  `passes`: (1 + 1/passes) / 2."""
  return (1.0 + 1.0 / passes) / 2.0


def check_plan(plan):
  """Refuses a plan whose steps do not hold whole accumulation cycles."""
  for key in ('steps', 'warmup', 'cluster_steps', 'cluster_warmup'):
    if plan[key] % PASSES:
      raise ValueError('%s=%d: must be a multiple of %d, so that the timed '
                       'steps hold whole accumulation cycles' % (
                           key, plan[key], PASSES))


# ---------------------------------------------------------------------------
# In the worker subprocesses: TensorFlow is imported only here.


def task_steps(strategy, rounds, steps, warmup):
  """One strategy: every candidate built, then in turn; step seconds a
  round, the loss after the last round, the dynamic scale at the end."""
  import tensorflow  # pylint: disable=g-import-not-at-top
  tf = tensorflow.compat.v1
  tf.disable_eager_execution()
  import variable_mgr  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.training import harness  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.training import run_config  # pylint: disable=g-import-not-at-top
  built, sessions = collections.OrderedDict(), {}
  for label in candidates(strategy):
    fields = dict(model=MODEL, variable_update=strategy, num_gpus=TOWERS,
                  batch_size=BATCH)
    fields.update(CANDIDATES[label])
    config = run_config.BenchmarkConfig(**fields).resolved()
    host = variable_mgr.LocalBenchmarkCnn(TOWERS)
    g = harness.build_training_graph(config, host)
    sess = tf.Session(graph=g.graph, config=host.session_config())
    sess.run(g.init_op)
    if g.post_init_op is not None:
      sess.run(g.post_init_op)
    built[label], sessions[label] = g, sess
  load = os.getloadavg()[0]
  times = measure.interleaved_rounds(collections.OrderedDict(
      (label, functools.partial(sessions[label].run, built[label].train_op))
      for label in built), rounds, steps, warmup)
  losses, scales = {}, {}
  for label, g in built.items():
    losses[label] = float(sessions[label].run(g.loss))
    scale = getattr(g.mgr, 'loss_scale', None)
    if scale is not None:
      scales[label] = float(sessions[label].run(scale))
    sessions[label].close()
  return {'step_seconds': times, 'loss': losses, 'loss_scale': scales,
          'load': [load, os.getloadavg()[0]],
          'tf_version': tensorflow.__version__}


TASKS = {'steps': task_steps}


# ---------------------------------------------------------------------------
# In the driver: no TensorFlow; a subprocess a strategy, a cluster a run.


def link_bytes(namespace, device='eth0'):
  """{'rx': bytes, 'tx': bytes} of `device` in `namespace` (`ip -s link`)."""
  out = subprocess.run(
      ['ip', '-n', namespace, '-s', '-j', 'link', 'show', 'dev', device],
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
      check=True).stdout
  stats = json.loads(out)[0]['stats64']
  return {'rx': stats['rx']['bytes'], 'tx': stats['tx']['bytes']}


_TIMED_START = re.compile(r'^\[worker:0\] Step\tImg/sec\tloss')
_TIMED_END = re.compile(r'^\[worker:0\] total images/sec:')


def run_cluster(passes, steps, warmup, log):
  """One cluster on a fresh network: the PS link's bytes over worker 0's
  timed steps, and every worker's step seconds (or an error)."""
  from variable_mgr.benchmark.cluster import launcher  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  workers, num_ps, batch = (CLUSTER['workers'], CLUSTER['num_ps'],
                            CLUSTER['batch'])
  op_timeout = 120.0
  flags = [
      '--variable_update', 'parameter_server', '--model', MODEL,
      '--data_name', 'small',
      '--num_gpus', '1', '--device', 'cpu', '--batch_size', str(batch),
      '--num_batches', str(steps), '--num_warmup_batches', str(warmup),
      '--display_every', str(steps), '--backward_passes_per_step',
      str(passes), '--op_timeout_secs', str(op_timeout),
      '--startup_timeout_secs', '300']
  output_dir = tempfile.mkdtemp(prefix='variable_mgr_options_')
  network = netns.Network(num_ps + workers, CLUSTER['rate'])
  ps_namespace = network.hosts[0].namespace
  readings, lines = [], []

  class _Out(object):
    """The cluster's lines; reads the PS link's counters at the marks."""

    def write(self, text):
      for line in text.splitlines():
        lines.append(line)
        if _TIMED_START.match(line) or _TIMED_END.match(line):
          readings.append(link_bytes(ps_namespace))

    def flush(self):
      pass

  cluster = None
  start = time.time()
  # The tasks import the package this script measures.
  os.environ['PYTHONPATH'] = os.pathsep.join(
      [ROOT] + [p for p in [os.environ.get('PYTHONPATH')] if p])
  try:
    network.create()
    cluster = launcher.LocalCluster(num_ps, workers, flags, output_dir,
                                    op_timeout, _Out(), network)
    cluster.start()
    failed = cluster.wait()
    if failed is not None:
      tail = [l for l in lines if 'rror' in l][-3:]
      return {'error': '%s failed (%s): %s' % (
          failed.name, launcher.describe_status(failed.status),
          ' / '.join(tail))}
    results = cluster.worker_results()
  finally:
    if cluster is not None:
      cluster.stop()
    network.remove()
    shutil.rmtree(output_dir, ignore_errors=True)
  if len(readings) != 2:
    return {'error': 'read the PS link %d times, not twice' % len(readings)}
  run = {'bytes': per_step_bytes(readings[0], readings[1], steps),
         'step_secs': [batch / r['images_per_sec'] for r in results]}
  log('  cluster, backward_passes_per_step=%d: %.0f ms a step, PS link '
      '%.2f MB in / %.2f MB out a step (%.0f s)' % (
          passes, 1000 * sum(run['step_secs']) / len(run['step_secs']),
          run['bytes']['rx'] / 1e6, run['bytes']['tx'] / 1e6,
          time.time() - start))
  return run


def measure_all(plan, log, cluster=True):
  results = {'steps': collections.OrderedDict(), 'cluster': []}
  log('step times: each candidate in turn, %d rounds of %d steps' % (
      plan['rounds'], plan['steps']))
  for strategy in STRATEGIES:
    results['steps'][strategy] = measure.run_in_subprocess(
        __file__, log, task='steps', strategy=strategy,
        rounds=plan['rounds'], steps=plan['steps'], warmup=plan['warmup'])
  if not cluster:
    return results
  log('namespace cluster: plain and backward_passes_per_step=%d in turn, '
      '%d rounds' % (PASSES, plan['cluster_rounds']))
  for r in range(plan['cluster_rounds']):
    round_runs = {}
    for passes in measure.rotated([1, PASSES], r):
      round_runs[passes] = run_cluster(passes, plan['cluster_steps'],
                                       plan['cluster_warmup'], log)
    results['cluster'].append(round_runs)
  return results


# ---------------------------------------------------------------------------
# The report.


def _ms(seconds):
  return '%.1f' % (1000.0 * seconds)


def _median_ms(values):
  return _ms(measure.spread(values).median)


def step_table(strategy, cell):
  """The rows of one strategy: label, step (ms), vs plain, the loss."""
  times = cell['step_seconds']
  rows = []
  for label in times:
    ratio = ('' if label == PLAIN else
             markdown.spread_text(measure.ratio_spread(times, label, PLAIN)))
    note = ''
    if label in cell['loss_scale']:
      note = 'loss scale at the end %g' % cell['loss_scale'][label]
    if label == BPPS:
      note = 'a micro-batch step (batch %d a tower)' % BATCH
    rows.append([label, _median_ms(times[label]), ratio,
                 '%.3f' % cell['loss'][label], note])
  if BPPS in times:
    applied = dict(times)
    applied['applied'] = [applied_step_seconds(t) for t in times[BPPS]]
    rows.append([
        '%s, an applied step (%d micro-batches)' % (BPPS, PASSES),
        _median_ms(applied['applied']),
        markdown.spread_text(measure.ratio_spread(applied, 'applied', PLAIN)),
        '', 'vs %s: %s' % (BIG_BATCH, markdown.spread_text(
            measure.ratio_spread(applied, 'applied', BIG_BATCH)))])
  return rows


def cluster_spreads(results):
  """{what: Spread of bpps/plain over the rounds} of the cluster runs."""
  pairs = [r for r in results['cluster']
           if all('error' not in run for run in r.values())]
  if not pairs:
    return {}

  def step(run):
    return sum(run['step_secs']) / len(run['step_secs'])

  def ratio(fn):
    return measure.spread([fn(r[PASSES]) / fn(r[1]) for r in pairs])

  return collections.OrderedDict([
      ('gradient bytes', ratio(lambda run: run['bytes']['rx'])),
      ('variable bytes', ratio(lambda run: run['bytes']['tx'])),
      ('all bytes', ratio(lambda run: run['bytes']['rx'] +
                          run['bytes']['tx'])),
      ('step time', ratio(step)),
  ])


def section_lines(results, plan, source, command, elapsed):
  lines = [
      '## Training options (issue 17)', '',
      'Written by `benchmarks/run_options_benchmarks.py` (its docstring '
      'defines every figure and goal).', '',
      '- commit: %s' % source,
      '- command: `%s` (%.1f minutes)' % (command, elapsed / 60.0),
      '- TensorFlow %s; step times: %s, %d towers (virtual CPU devices on '
      'this machine\'s processors), batch %d a tower, every candidate in '
      'turn, %d rounds of %d steps after %d warm-up steps; ratios within a '
      'round, median and range of the rounds' % (
          next(iter(results['steps'].values()))['tf_version'], MODEL,
          TOWERS, BATCH, plan['rounds'], plan['steps'], plan['warmup']),
      '- **float16 on CPU measures correctness, not speed**: the CPU '
      'kernels of float16 convert to float32 and back; the fp16 rows show '
      'that the runs train (loss after the same steps as plain), not what '
      'float16 gains on a GPU', '']
  verdicts = []
  for strategy, cell in results['steps'].items():
    lines += ['### %s, %d towers' % (strategy, TOWERS), '']
    lines += markdown.table(
        ['candidate', 'step (ms, median)', 'vs plain', 'loss at the end',
         'note'], step_table(strategy, cell), 'lrlrl')
    lines.append('')
    for label, goal in GOALS:
      if label in cell['step_seconds']:
        verdicts.append(markdown.verdict_line(
            '%s, %s vs plain' % (strategy, label if label != BPPS else
                                 BPPS + ' (a micro-batch step)'),
            measure.ratio_spread(cell['step_seconds'], label, PLAIN), goal))
  lines += ['### Exchange saved by accumulation (namespace cluster)', '',
            'parameter_server, %d PS + %d workers, %s, one tower a worker, '
            'batch %d, every link %d Mbit/s both ways; bytes through the '
            'PS\'s link over the timed steps of worker 0, a micro-batch step '
            '(%d timed steps after %d warm-up steps; %d round%s, plain and '
            '%s in turn, each a fresh cluster).' % (
                CLUSTER['num_ps'], CLUSTER['workers'], MODEL,
                CLUSTER['batch'], CLUSTER['rate'] // 10**6,
                plan['cluster_steps'], plan['cluster_warmup'],
                plan['cluster_rounds'],
                '' if plan['cluster_rounds'] == 1 else 's', BPPS), '']
  rows = []
  for r, runs in enumerate(results['cluster']):
    for passes in (1, PASSES):
      run = runs[passes]
      name = PLAIN if passes == 1 else BPPS
      if 'error' in run:
        rows.append([str(r + 1), name, 'failed: %s' % run['error'].replace(
            '|', '/'), '', ''])
        continue
      rows.append([str(r + 1), name,
                   '%.2f' % (run['bytes']['rx'] / 1e6),
                   '%.2f' % (run['bytes']['tx'] / 1e6),
                   _ms(sum(run['step_secs']) / len(run['step_secs']))])
  lines += markdown.table(
      ['round', 'run', 'into the PS (gradients), MB a step',
       'out of the PS (variables), MB a step', 'step (ms)'], rows, 'llrrr')
  lines.append('')
  spreads = cluster_spreads(results)
  if spreads:
    lines.append('%s over plain: gradient bytes %s; variable bytes %s; all '
                 'bytes %s (expected %.3fx: the variables are read every '
                 'micro-batch step); step time %s.' % (
                     BPPS, markdown.spread_text(spreads['gradient bytes']),
                     markdown.spread_text(spreads['variable bytes']),
                     markdown.spread_text(spreads['all bytes']),
                     expected_fraction(),
                     markdown.spread_text(spreads['step time'])))
    lines.append('')
    for what, goal in CLUSTER_GOALS:
      verdicts.append(markdown.verdict_line(
          'cluster, %s, %s a micro-batch step vs plain' % (BPPS, what),
          spreads[what], goal))
  else:
    verdicts.append('- cluster: not measured (every round failed)')
  lines += ['### Verdicts', ''] + verdicts
  return lines


def main(argv=None):
  args, given = measure.script_args(
      __doc__.split('\n')[0], '2 rounds of 4 steps, one cluster round (a '
      'check); writes OPTIONS_RESULTS_quick.md only', argv)
  if args.worker:
    measure.worker_main(TASKS, args.worker)
    return 0
  plan = QUICK if args.quick else FULL
  check_plan(plan)
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  try:
    netns.check_supported()
  except netns.NetworkUnavailableError as e:
    sys.stderr.write('run_options_benchmarks.py runs its clusters as '
                     '--launch_local_cluster --network_rate does: %s\n' % e)
    return 2
  source = markdown.source_state(ROOT)
  command = markdown.command_line('run_options_benchmarks.py', given)
  start = time.time()
  log = measure.make_log(start)
  results = measure_all(plan, log)
  lines = section_lines(results, plan, source, command, time.time() - start)
  if args.output or args.quick:
    output = args.output or os.path.join(HERE, 'OPTIONS_RESULTS_quick.md')
    title = 'Training options benchmark' + (' (a check)' if args.quick
                                             else '')
    markdown.write(output, ['# ' + title, ''] + lines)
  else:
    import run_benchmarks  # pylint: disable=g-import-not-at-top
    output = os.path.join(HERE, 'RESULTS.md')
    run_benchmarks.write_section(output, lines, *SECTION)
  if args.json:
    with open(args.json, 'w') as f:
      json.dump(results, f, indent=1, default=str)
  log('wrote %s' % output)
  return 0


if __name__ == '__main__':
  sys.exit(main())
