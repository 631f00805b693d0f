#!/usr/bin/env python
"""Measures the distributed strategies on shaped links against their bounds.

    python benchmarks/run_network_benchmarks.py            # the full run
    python benchmarks/run_network_benchmarks.py --quick    # a check
    python benchmarks/run_network_benchmarks.py --quick --output /tmp/n.md

Every cell is a cluster of the benchmark's own runner on the namespace
network of `--launch_local_cluster --network_rate`
(`variable_mgr.benchmark.cluster.netns`): each task a network namespace of
its own, its link shaped to the rate both ways, one tower (one virtual CPU)
a worker, batch 8 a tower. It needs Linux and root.

The full run (200mbit and 1gbit; 2 and 4 workers; 1 and 2 PS tasks; lenet
and resnet50_vars; every strategy; hours, resnet50_vars's 102 MB of
variables take seconds a step on these links) writes the `network goals`
section of `benchmarks/RESULTS.md` (run_benchmarks.py keeps it); `--quick`
(200mbit, lenet, 2 workers, 1 PS and 2 PS for the PS strategies, few
steps; a few minutes) writes `benchmarks/NETWORK_RESULTS_quick.md`.

Bounds, B the bytes of the variables (of the busiest PS task when there
are several: variables are placed whole, greedily by bytes in creation
order, as the strategies place them), W the workers, R the link's measured
single-stream TCP goodput (not its nominal rate):

- a PS link carries W x B each way a step: a step that overlaps the pull
  and the push takes at least W x B / R (full duplex), a synchronous step
  that pulls then pushes 2 x W x B / R;
- asynchronous parameter_server: W x B / R a worker's step (the PS link is
  shared, both directions at once);
- a ring all-reduce (collective_all_reduce): 2 (W-1)/W x B / R.

With several PS tasks the PS strategies run with variables whole and split
(`--variable_partition_min_bytes` 1 MiB: lenet's 6.4 MB fully connected
layer in one slice a PS task); R is a single stream's goodput, so a step
whose streams share a link better can come in a little under its bound.

Each cell's step is the mean over the workers of their timed steps (the
runner's images/sec: batch / step). Goals (issue 16), at 200mbit, 1 PS +
2 workers, lenet: staged parameter_server at most 1.15x of W x B / R;
synchronous parameter_server and distributed_replicated within 1.05x of
2 x W x B / R; collective_all_reduce and asynchronous parameter_server
within 1.10x of theirs; with 2 PS tasks every PS-type strategy at most
0.55x of its 1-PS step.

tf.distribute is not measured beside it: MultiWorkerMirroredStrategy and
ParameterServerStrategy would need their own task program of the same
model on the same hosts (TF 2's ParameterServerStrategy runs only eagerly,
through its ClusterCoordinator; its graph-mode v1 form and
MultiWorkerMirroredStrategy's are not written yet).
"""

import collections
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
  sys.path.insert(0, ROOT)
if HERE not in sys.path:
  sys.path.insert(0, HERE)

from variable_mgr.benchmark import measure  # pylint: disable=g-import-not-at-top,wrong-import-position
from variable_mgr.benchmark import report  # pylint: disable=g-import-not-at-top,wrong-import-position

SECTION = ('network goals', 'run_network_benchmarks.py')
SHAPES_ENV = 'VARIABLE_MGR_RESNET50_SHAPES'
BATCH = 8
GOODPUT_SECS = 2.0

# (label, flags, kind of bound).
STRATEGIES = collections.OrderedDict([
    ('parameter_server', (['--variable_update', 'parameter_server'],
                          'sync_ps')),
    ('staged parameter_server', (['--variable_update', 'parameter_server',
                                  '--staged_vars'], 'staged_ps')),
    ('distributed_replicated', (['--variable_update',
                                 'distributed_replicated'], 'sync_ps')),
    ('asynchronous parameter_server', (['--variable_update',
                                        'parameter_server',
                                        '--cross_replica_sync=false'],
                                       'async_ps')),
    ('collective_all_reduce', (['--variable_update', 'collective_all_reduce'],
                               'ring')),
])
PS_STRATEGIES = [s for s, (_, kind) in STRATEGIES.items() if kind != 'ring']
# With several PS tasks the PS strategies run twice: variables whole, and
# split by --variable_partition_min_bytes (issue 16's item 2).
PARTITION_MIN_BYTES = 1 << 20
PARTITIONED = ', partitioned'

FULL = dict(rates=(200 * 10**6, 10**9), workloads=('lenet', 'resnet50_vars'),
            layouts=((2, 1), (2, 2), (4, 1), (4, 2)),
            steps={'lenet': 10, 'resnet50_vars': 3},
            warmup={'lenet': 2, 'resnet50_vars': 1})
QUICK = dict(rates=(200 * 10**6,), workloads=('lenet',),
             layouts=((2, 1), (2, 2)), steps={'lenet': 5}, warmup={'lenet': 1})

GOAL_RATE, GOAL_WORKLOAD, GOAL_LAYOUT = 200 * 10**6, 'lenet', (2, 1)
GOALS = (
    ('staged parameter_server', 'full_duplex', 1.15),
    ('parameter_server', 'pull_then_push', 1.05),
    ('distributed_replicated', 'pull_then_push', 1.05),
    ('collective_all_reduce', 'ring', 1.10),
    ('asynchronous parameter_server', 'full_duplex', 1.10),
)
TWO_PS_GOAL = 0.55


# -- In a task: the benchmark's own task, resnet50_vars known to it ----------


def task_main(argv):
  """One cluster task, with resnet50_vars registered (its shapes from the
  file SHAPES_ENV names)."""
  from variable_mgr.benchmark import flags  # pylint: disable=g-import-not-at-top
  if 'resnet50_vars' not in flags.MODEL_NAMES:
    flags.MODEL_NAMES = flags.MODEL_NAMES + ('resnet50_vars',)
  if os.environ.get(SHAPES_ENV):
    import run_benchmarks  # pylint: disable=g-import-not-at-top
    with open(os.environ[SHAPES_ENV]) as f:
      run_benchmarks.register_resnet50_vars([tuple(s) for s in json.load(f)])
  from variable_mgr.benchmark import distributed  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark import exit_status  # pylint: disable=g-import-not-at-top
  exit_status.exit_task(distributed.main(argv))


# -- Bytes and bounds ---------------------------------------------------------


def variable_bytes(shapes):
  """Bytes of float32 variables of `shapes`, in creation order."""
  sizes = []
  for shape in shapes:
    n = 4
    for dim in shape:
      n *= dim
    sizes.append(n)
  return sizes


def busiest_ps_bytes(sizes, num_ps, partition_min_bytes=0):
  """Bytes on the busiest PS task when each variable goes to the least
  loaded one, in creation order (GreedyLoadBalancingStrategy); with
  `partition_min_bytes`, a variable above it is first split into at most
  num_ps slices of at least that size (taken as equal here), each on a
  task of its own (SliceSpreadingStrategy)."""
  loads = [0] * num_ps
  for size in sizes:
    parts = 1
    if partition_min_bytes and size > partition_min_bytes:
      parts = max(1, min(num_ps, size // partition_min_bytes))
    free = list(range(num_ps))
    for _ in range(parts):
      task = min(free, key=lambda t: (loads[t], t))
      free.remove(task)
      loads[task] += size / float(parts)
  return max(loads)


def bounds(sizes, workers, num_ps, goodput, partition_min_bytes=0):
  """{kind: seconds} of one cell (see the module's docstring)."""
  total = sum(sizes)
  ps = busiest_ps_bytes(sizes, num_ps, partition_min_bytes)
  return {
      'full_duplex': workers * ps * 8.0 / goodput,
      'pull_then_push': 2.0 * workers * ps * 8.0 / goodput,
      'ring': 2.0 * (workers - 1) / workers * total * 8.0 / goodput,
  }


# -- Measuring ----------------------------------------------------------------


def measure_goodput(rate):
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  with netns.Network(2, rate) as network:
    a, b = network.hosts
    return [netns.goodput(a, b, GOODPUT_SECS), netns.goodput(b, a,
                                                             GOODPUT_SECS)]


def run_cell(rate, workload, workers, num_ps, strategy, steps, warmup,
             op_timeout, shapes_file, log):
  """One cluster on a fresh network; the workers' results, or an error."""
  from variable_mgr.benchmark.cluster import launcher  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  flags = list(STRATEGIES[strategy.replace(PARTITIONED, '')][0])
  if strategy.endswith(PARTITIONED):
    flags += ['--variable_partition_min_bytes', str(PARTITION_MIN_BYTES)]
  flags += [
      '--model', workload, '--num_gpus', '1', '--device', 'cpu',
      '--batch_size', str(BATCH), '--num_batches', str(steps),
      '--num_warmup_batches', str(warmup), '--display_every', str(steps),
      '--op_timeout_secs', str(op_timeout), '--startup_timeout_secs', '300']
  output_dir = tempfile.mkdtemp(prefix='variable_mgr_network_')
  lines = []

  class _Out(object):
    def write(self, text):
      lines.append(text)

    def flush(self):
      pass

  network = netns.Network(num_ps + workers, rate)
  cluster = None
  start = time.time()
  try:
    network.create()
    env_shapes = {SHAPES_ENV: shapes_file} if shapes_file else {}
    os.environ.update(env_shapes)
    cluster = launcher.LocalCluster(
        num_ps, workers, flags, output_dir, op_timeout, _Out(), network,
        task_command=[sys.executable, os.path.abspath(__file__), '--task'])
    cluster.start()
    failed = cluster.wait()
    if failed is not None:
      tail = [l.rstrip() for l in ''.join(lines).splitlines()
              if 'error' in l][-3:]
      return {'error': '%s failed (%s): %s' % (
          failed.name, launcher.describe_status(failed.status),
          ' | '.join(tail))}
    results = cluster.worker_results()
  finally:
    if cluster is not None:
      cluster.stop()
    network.remove()
    os.environ.pop(SHAPES_ENV, None)
    shutil.rmtree(output_dir, ignore_errors=True)
  step_secs = [BATCH / r['images_per_sec'] for r in results]
  log('%s, %s, %d workers, %d PS, %s: %.0f ms a step (%.0f s)' % (
      netns.rate_text(rate), workload, workers, num_ps, strategy,
      1000 * sum(step_secs) / len(step_secs), time.time() - start))
  return {'step_secs': step_secs}


def measure_all(plan, log):
  from variable_mgr.benchmark import models  # pylint: disable=g-import-not-at-top
  import run_benchmarks  # pylint: disable=g-import-not-at-top
  shapes = {}
  shapes_file = None
  for workload in plan['workloads']:
    if workload == 'resnet50_vars':
      shapes[workload] = run_benchmarks.resnet50_variable_shapes()
      handle, shapes_file = tempfile.mkstemp(suffix='.json')
      with os.fdopen(handle, 'w') as f:
        json.dump(shapes[workload], f)
    else:
      shapes[workload] = models.variable_shapes(workload)
  results = {'goodput': {}, 'cells': [], 'bytes': {}}
  try:
    for rate in plan['rates']:
      results['goodput'][rate] = measure_goodput(rate)
      goodput = min(results['goodput'][rate])
      log('%d bit/s: goodput %s Mbit/s' % (rate, ', '.join(
          '%.1f' % (g / 1e6) for g in results['goodput'][rate])))
      for workload in plan['workloads']:
        sizes = variable_bytes(shapes[workload])
        results['bytes'][workload] = sum(sizes)
        for workers, num_ps in plan['layouts']:
          cells = list(STRATEGIES)
          if num_ps > 1:
            # collective_all_reduce keeps no variable on a PS.
            cells = PS_STRATEGIES + [s + PARTITIONED for s in PS_STRATEGIES]
          for strategy in cells:
            cell_bounds = bounds(
                sizes, workers, num_ps, goodput,
                PARTITION_MIN_BYTES if strategy.endswith(PARTITIONED) else 0)
            op_timeout = max(60.0, 10 * cell_bounds['pull_then_push'])
            run = run_cell(rate, workload, workers, num_ps, strategy,
                           plan['steps'][workload], plan['warmup'][workload],
                           op_timeout, shapes_file if workload ==
                           'resnet50_vars' else None, log)
            run.update(rate=rate, workload=workload, workers=workers,
                       num_ps=num_ps, strategy=strategy, bounds=cell_bounds,
                       goodput=goodput)
            results['cells'].append(run)
  finally:
    if shapes_file:
      os.remove(shapes_file)
  return results


# -- The report ---------------------------------------------------------------


def _kind(strategy):
  return STRATEGIES[strategy.replace(PARTITIONED, '')][1]


def _step(cell):
  return (sum(cell['step_secs']) / len(cell['step_secs'])
          if 'step_secs' in cell else None)


def _cell(results, rate, workload, layout, strategy):
  for cell in results['cells']:
    if (cell['rate'], cell['workload'], (cell['workers'], cell['num_ps']),
        cell['strategy']) == (rate, workload, layout, strategy):
      return cell
  return None


def goal_rows(results):
  rows = []
  for strategy, bound, goal in GOALS:
    cell = _cell(results, GOAL_RATE, GOAL_WORKLOAD, GOAL_LAYOUT, strategy)
    name = {'full_duplex': 'W x B / R', 'pull_then_push': '2 x W x B / R',
            'ring': '2(W-1)/W x B / R'}[bound]
    text = '%s at most %.2fx of %s' % (strategy, goal, name)
    if cell is None or _step(cell) is None:
      rows.append((text, 'not measured' if cell is None else cell['error'],
                   'not measured'))
      continue
    ratio = _step(cell) / cell['bounds'][bound]
    rows.append((text, '%.2fx (%.0f ms / %.0f ms)' % (
        ratio, 1000 * _step(cell), 1000 * cell['bounds'][bound]),
                 '**met**' if ratio <= goal else '**not met**'))
  for strategy in PS_STRATEGIES:
    one = _cell(results, GOAL_RATE, GOAL_WORKLOAD, (2, 1), strategy)
    two = _cell(results, GOAL_RATE, GOAL_WORKLOAD, (2, 2),
                strategy + PARTITIONED)
    text = ('%s, 2 PS, variables split above %d bytes, at most %.2fx of its '
            '1-PS step' % (strategy, PARTITION_MIN_BYTES, TWO_PS_GOAL))
    if not one or not two or _step(one) is None or _step(two) is None:
      rows.append((text, 'not measured', 'not measured'))
      continue
    ratio = _step(two) / _step(one)
    rows.append((text, '%.2fx (%.0f ms / %.0f ms)' % (
        ratio, 1000 * _step(two), 1000 * _step(one)),
                 '**met**' if ratio <= TWO_PS_GOAL else '**not met**'))
  return rows


def section_lines(results, plan, source, command, elapsed):
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  lines = [
      '## Steps on shaped links (namespace cluster)', '',
      'Written by `benchmarks/run_network_benchmarks.py` (its docstring '
      'defines every bound and goal).', '',
      '- commit: %s' % source,
      '- command: `%s` (%.1f minutes)' % (command, elapsed / 60.0),
      '- every task a network namespace on one bridge, its link shaped both '
      'ways with `tc tbf`; one tower (a virtual CPU) a worker, batch %d; '
      'all hosts share this machine\'s processors' % BATCH,
      '- variables: %s' % ', '.join(
          '%s %.2f MB' % (w, b / 1e6) for w, b in results['bytes'].items()),
      '- measured single-stream TCP goodput (each way): %s' % '; '.join(
          '%s: %s Mbit/s' % (netns.rate_text(r), ', '.join(
              '%.1f' % (g / 1e6) for g in gs))
          for r, gs in results['goodput'].items()),
      '- bounds use the lower of the two goodputs (a single stream\'s: a '
      'step can come in a little under its bound); B is the busiest PS '
      'task\'s bytes for the PS bounds, all bytes for the ring; '
      '"partitioned": variables above %d bytes split over the PS tasks' %
      PARTITION_MIN_BYTES, '']
  lines += ['### Goals (%s, %s, %d workers)' % (
      netns.rate_text(GOAL_RATE), GOAL_WORKLOAD, GOAL_LAYOUT[0]), '',
            '| goal | measured | verdict |', '|---|---|---|']
  lines += ['| %s | %s | %s |' % row for row in goal_rows(results)]
  lines += ['', '### Every cell', '',
            'Step: mean over the workers of their timed steps. Each ratio is '
            'the step over that bound.', '',
            '| rate | model | W | PS | strategy | step | W x B / R | '
            '2 x W x B / R | 2(W-1)/W x B / R |',
            '|---|---|---:|---:|---|---:|---:|---:|---:|']
  for cell in results['cells']:
    step = _step(cell)
    cols = []
    for bound in ('full_duplex', 'pull_then_push', 'ring'):
      value = cell['bounds'][bound]
      relevant = (bound == 'ring') == (_kind(cell['strategy']) == 'ring')
      if not relevant or (bound == 'pull_then_push' and
                          _kind(cell['strategy']) == 'async_ps'):
        cols.append('')
      elif step is None:
        cols.append('%.0f ms' % (1000 * value))
      else:
        cols.append('%.0f ms (%.2fx)' % (1000 * value, step / value))
    lines.append('| %s | %s | %d | %d | %s | %s | %s |' % (
        netns.rate_text(cell['rate']), cell['workload'], cell['workers'],
        cell['num_ps'], cell['strategy'],
        '%.0f ms' % (1000 * step) if step is not None else
        'failed: %s' % cell['error'].replace('|', '/'), ' | '.join(cols)))
  lines += ['', 'tf.distribute beside it: not measured (see the script\'s '
            'docstring).']
  del plan
  return lines


def main(argv=None):
  argv = list(sys.argv[1:] if argv is None else argv)
  if argv[:1] == ['--task']:
    task_main(argv[1:])
    return 0
  args, given = measure.script_args(
      __doc__.split('\n')[0], '200mbit, lenet, 2 workers, 1 and 2 PS, few '
      'steps (a check, a few minutes)', argv)
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  try:
    netns.check_supported()
  except netns.NetworkUnavailableError as e:
    sys.stderr.write('run_network_benchmarks.py runs its clusters as '
                     '--launch_local_cluster --network_rate does: %s\n' % e)
    return 2
  plan = QUICK if args.quick else FULL
  source = report.source_state(ROOT)
  start = time.time()
  log = measure.make_log(start)
  results = measure_all(plan, log)
  lines = section_lines(results, plan, source, report.command_line(
      'run_network_benchmarks.py', given), time.time() - start)
  if args.output or args.quick:
    output = args.output or os.path.join(HERE, 'NETWORK_RESULTS_quick.md')
    with open(output, 'w') as f:
      f.write('# Network benchmark (a check)\n\n' + '\n'.join(lines) + '\n')
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
