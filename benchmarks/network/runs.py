"""Running the plan: a cluster task (`--task`), a cell's cluster on a
fresh network with its link counters, and every round of a plan."""

import collections
import glob
import json
import os
import re
import shutil
import sys
import tempfile
import time

from .links import LinkSampler
from .links import busy_seconds
from .links import measure_goodput
from .links import port_bytes
from .links import queue_delay
from .plan import LABELS
from .plan import NO_PROBE
from .plan import NO_PROBE_FLAG
from .plan import NO_PROBE_SECS
from .plan import PARTITIONED
from .plan import PARTITION_MIN_BYTES
from .plan import PINNED_FLAG
from .plan import TWINS
from .plan import base
from .plan import batch
from .plan import data_name
from .plan import describe
from .plan import has_controller
from .plan import key
from .plan import kind
from .plan import pinned
from .plan import task_count
from .plan import towers
from .plan import traced
from .timing import cell_steps
from .timing import cell_warmup
from .timing import round_order
from .transfer import bounds
from .transfer import estimate_cell_secs
from .transfer import ps_loads
from .transfer import variable_bytes


# benchmarks/: the twins' script, and the benchmark's own that a cluster
# task runs (`--task`).
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPES_ENV = 'VARIABLE_MGR_RESNET50_SHAPES'
TWINS_SCRIPT = os.path.join(HERE, 'network_twins.py')
TASK_SCRIPT = os.path.join(HERE, 'run_network_benchmarks.py')


def task_main(argv):
  """One cluster task, with resnet50_vars registered (its shapes from the
  file SHAPES_ENV names). With NO_PROBE_FLAG first, an asynchronous worker
  never probes its peers between steps (a diagnostic: the probe is a TCP
  connection and an HTTP/2 answer across the peers' links, run in the step
  loop). With PINNED_FLAG first, worker k runs on processor k alone (of
  the machine's, in turn), before TensorFlow starts a thread."""
  if argv[:1] == [PINNED_FLAG]:
    argv = argv[1:]
    pin_worker(argv)
  if argv[:1] == [NO_PROBE_FLAG]:
    argv = argv[1:]
    if '--job_name=worker' in argv:
      from variable_mgr.benchmark.cluster import liveness  # pylint: disable=g-import-not-at-top
      liveness.PROBE_INTERVAL_SECS = NO_PROBE_SECS
  from variable_mgr.benchmark.flags import command_line  # pylint: disable=g-import-not-at-top
  if 'resnet50_vars' not in command_line.MODEL_NAMES:
    command_line.MODEL_NAMES = command_line.MODEL_NAMES + ('resnet50_vars',)
  if os.environ.get(SHAPES_ENV):
    import run_benchmarks  # pylint: disable=g-import-not-at-top
    with open(os.environ[SHAPES_ENV]) as f:
      run_benchmarks.register_resnet50_vars([tuple(s) for s in json.load(f)])
  from variable_mgr.benchmark import distributed  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.runs import exit_status  # pylint: disable=g-import-not-at-top
  exit_status.exit_task(distributed.main(argv))


def worker_processor(argv, processors):
  """The processor a worker task of `argv` (the task's flags) runs on
  among `processors` (sorted), or None for a PS task or a controller."""
  if '--job_name=worker' not in argv:
    return None
  index = [int(a.split('=', 1)[1]) for a in argv
           if a.startswith('--task_index=')]
  return processors[index[0] % len(processors)]


def pin_worker(argv):
  """Holds this process (a worker task) to its processor; every thread
  TensorFlow starts after inherits it."""
  cpu = worker_processor(argv, sorted(os.sched_getaffinity(0)))
  if cpu is not None:
    os.sched_setaffinity(0, {cpu})


def cell_flags(cell, steps, warmup, op_timeout):
  what = LABELS[base(cell.strategy)][0]
  if cell.strategy in TWINS:
    return [sys.executable, TWINS_SCRIPT, what], [
        '--model', cell.workload, '--batch_size', str(batch(cell.workload)),
        '--num_batches', str(steps), '--num_warmup_batches', str(warmup),
        '--startup_timeout_secs', '300']
  flags = list(what)
  if cell.strategy.endswith(PARTITIONED):
    flags += ['--variable_partition_min_bytes', str(PARTITION_MIN_BYTES)]
  flags += [
      '--model', cell.workload, '--data_name', data_name(cell.workload),
      '--num_gpus', str(towers(cell.strategy)),
      '--device', 'cpu',
      '--batch_size', str(batch(cell.workload)), '--num_batches', str(steps),
      '--num_warmup_batches', str(warmup), '--display_every',
      # Asynchronous workers print every step: their phase is measured.
      str(1 if kind(cell.strategy) == 'async_ps' else steps),
      '--op_timeout_secs', str(op_timeout), '--startup_timeout_secs', '300']
  command = [sys.executable, TASK_SCRIPT, '--task']
  if pinned(cell.strategy):
    command.append(PINNED_FLAG)
  if cell.strategy == NO_PROBE:
    command.append(NO_PROBE_FLAG)
  return command, flags


def run_cell(cell, steps, warmup, op_timeout, shapes_file, log):
  """One cluster on a fresh network: the workers' step seconds and the
  links' bytes over the timed steps, or an error."""
  from variable_mgr.benchmark.cluster import launcher  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  command, flags = cell_flags(cell, steps, warmup, op_timeout)
  output_dir = tempfile.mkdtemp(prefix='variable_mgr_network_')
  if traced(cell):
    # The last warm-up step is traced (kept out of the timed steps).
    flags += ['--trace_file', os.path.join(output_dir, 'trace.json')]
  lines = []
  marks = {}
  ends = collections.defaultdict(list)
  network = netns.Network(task_count(cell), cell.rate)
  controller = has_controller(cell.strategy)
  # The task that times the steps: worker 0, or the controller that runs
  # the one graph.
  timer = '[controller] ' if controller else '[worker:0] '

  class _Out(object):
    """The cluster's lines; the link counters at the timing task's first
    timed step and at the first closing line."""

    def write(self, text):
      lines.append(text)
      match = _STEP_LINE.match(text)
      if match:
        ends[match.group(1)].append(time.time())
      if 'start' not in marks and text.startswith(timer) and (
          'Step\tImg/sec' in text or 'Done warm up' in text):
        marks['start'] = (time.time(), port_bytes(network))
      elif ('end' not in marks and 'start' in marks and
            text.startswith(('[worker:', '[controller] ')) and
            'total images/sec' in text):
        marks['end'] = (time.time(), port_bytes(network))

    def flush(self):
      pass

  cluster = None
  # Ring cells: the links' counters sampled through the steps (a small
  # process of the switch namespace), to split a step into the time the
  # links carry data and the time they idle.
  sampler = None
  if kind(cell.strategy) == 'ring' and cell.rate:
    sampler = LinkSampler(network, os.path.join(output_dir, 'links.txt'))
  busy = None
  start = time.time()
  try:
    network.create()
    if sampler is not None:
      sampler.start()
    if shapes_file:
      os.environ[SHAPES_ENV] = shapes_file
    cluster = launcher.LocalCluster(
        cell.num_ps, cell.workers, flags, output_dir, op_timeout, _Out(),
        network, task_command=command, controller=controller)
    cluster.start()
    failed = cluster.wait()
    if failed is not None:
      tail = [l.rstrip() for l in ''.join(lines).splitlines()
              if 'rror' in l][-3:]
      log('%s: %s failed' % (describe(cell), failed.name))
      return {'error': '%s failed (%s): %s' % (
          failed.name, launcher.describe_status(failed.status),
          ' | '.join(tail)[-400:])}
    results = cluster.worker_results()
    share = forward_share(output_dir) if traced(cell) else None
    if sampler is not None and 'start' in marks and 'end' in marks:
      sampler.stop()
      # Busy: above half the nominal rate (a tbf link's goodput is 0.96 of
      # it); the intervals of a few ms count whole.
      busy = busy_seconds(sampler.samples(), marks['start'][0],
                          marks['end'][0], cell.rate / 8.0 / 2)
  finally:
    if sampler is not None:
      sampler.stop()
    if cluster is not None:
      cluster.stop()
    network.remove()
    os.environ.pop(SHAPES_ENV, None)
    shutil.rmtree(output_dir, ignore_errors=True)
  step_secs = [images_a_step(cell) / r['images_per_sec'] for r in results]
  run = {'step_secs': step_secs, 'wall': time.time() - start}
  if 'start' in marks and 'end' in marks:
    (t0, a), (t1, b) = marks['start'], marks['end']
    run['window'] = t1 - t0
    run['links'] = {str(i): [b[i][0] - a[i][0], b[i][1] - a[i][1]]
                    for i in a if i in b}
  if busy:
    run['busy'] = {str(i): list(v) for i, v in busy.items()}
  if kind(cell.strategy) == 'async_ps':
    run['step_ends'] = dict(ends)
  if share is not None:
    run['forward_share'] = share
  log('%s: %.0f ms a step (%.0f s)' % (
      describe(cell), 1000 * sum(step_secs) / len(step_secs), run['wall']))
  return run


def forward_share(output_dir):
  """The forward pass's share of a traced step (up to the loss, over the
  step), the mean over the traces in `output_dir` (a worker's each, or the
  controller's one), or None if none holds a loss."""
  from benchmarks import trace_timeline  # pylint: disable=g-import-not-at-top
  shares = []
  for path in sorted(glob.glob(os.path.join(output_dir, 'trace*.json'))):
    found = trace_timeline.events(path)
    if not found:
      continue
    s = trace_timeline.summary(found)
    if s['loss_end'] is not None and s['end'] > 0:
      shares.append(s['loss_end'] / s['end'])
  return sum(shares) / len(shares) if shares else None


def images_a_step(cell):
  """The images of one step of a task's results: a worker's towers', or
  (a controller's one graph) every worker's."""
  images = batch(cell.workload) * towers(cell.strategy)
  return images * cell.workers if has_controller(cell.strategy) else images


# A timed step's progress line, as the launcher echoes it.
_STEP_LINE = re.compile(r'^\[worker:(\d+)\] \d+\t')


def workload_shapes(workloads):
  from variable_mgr.benchmark.models import catalog  # pylint: disable=g-import-not-at-top
  import run_benchmarks  # pylint: disable=g-import-not-at-top
  shapes = {}
  for workload in workloads:
    if workload == 'resnet50_vars':
      shapes[workload] = run_benchmarks.resnet50_variable_shapes()
    else:
      shapes[workload] = catalog.variable_shapes(workload)
  return shapes


def measure_all(plan, log, stop_by=None, on_round=None):
  """Every round of `plan`: results['runs'] lists one entry a cell and
  round. `stop_by` (epoch seconds): no round or cell is started that would
  end after it, by the last round's pace (or the estimate)."""
  cells = plan['cells']()
  workloads = sorted(set(c.workload for c in cells))
  shapes = workload_shapes(workloads)
  sizes = {w: variable_bytes(s) for w, s in shapes.items()}
  shapes_file = None
  if 'resnet50_vars' in shapes:
    handle, shapes_file = tempfile.mkstemp(suffix='.json')
    with os.fdopen(handle, 'w') as f:
      json.dump(shapes['resnet50_vars'], f)
  rates = sorted(set(c.rate for c in cells if c.rate))
  results = {'goodput': [], 'runs': [], 'queue_delay': [],
             'bytes': {w: sum(s) for w, s in sizes.items()},
             'ps_loads': {}, 'rounds': plan['rounds'], 'cut': [],
             'sizes': sizes,
             'plan': [key(c) for c in cells]}
  for w in sizes:
    for num_ps in (2,):
      results['ps_loads']['%s|%d|whole' % (w, num_ps)] = ps_loads(
          sizes[w], num_ps)
      results['ps_loads']['%s|%d|partitioned' % (w, num_ps)] = ps_loads(
          sizes[w], num_ps, PARTITION_MIN_BYTES)
  pace = {key(c): estimate_cell_secs(c, plan, sizes[c.workload])
          for c in cells}
  try:
    for r in range(plan['rounds']):
      order = round_order(cells, r, plan['rounds'])
      goodput = {}
      for rate in rates:
        goodput[rate] = measure_goodput(rate)
        results['goodput'].append([r, rate, goodput[rate]])
        log('round %d, %d bit/s: goodput %s Mbit/s' % (
            r + 1, rate, ', '.join('%.1f' % (g / 1e6)
                                   for g in goodput[rate])))
        if r == 0:
          idle, loaded = queue_delay(rate)
          results['queue_delay'].append([rate, idle, loaded])
          log('%d bit/s: a TCP connect takes %.1f ms idle, %.1f ms behind '
              'a full stream' % (rate, 1000 * idle, 1000 * loaded))
      for cell in order:
        if stop_by and time.time() + pace[key(cell)] > stop_by:
          results['cut'].append('round %d: %s not run (it would have ended '
                                'after --stop_by %s UTC)' % (
                                    r + 1, describe(cell), time.strftime(
                                        '%H:%M', time.gmtime(stop_by))))
          log(results['cut'][-1])
          continue
        g = min(goodput[cell.rate]) if cell.rate else None
        op_timeout = 60.0
        if g:
          b = bounds(sizes[cell.workload], cell.workers, cell.num_ps, g)
          op_timeout = max(60.0, 10 * b['pull_then_push'])
        steps = cell_steps(plan, cell)
        run = run_cell(cell, steps, cell_warmup(plan, cell), op_timeout,
                       shapes_file if cell.workload == 'resnet50_vars'
                       else None, log)
        pace[key(cell)] = run.get('wall', pace[key(cell)])
        run.update(cell=list(cell), round=r, goodput=g,
                   timed_steps=steps)
        results['runs'].append(run)
      if on_round:
        on_round(results)
  finally:
    if shapes_file:
      os.remove(shapes_file)
  return results
