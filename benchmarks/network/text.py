"""The results' text: the method, the tables of every cell and of
tf.distribute's twins, and the whole file or RESULTS.md's section."""

import collections
import statistics

from variable_mgr.benchmark.reports import markdown

from .allreduce import allreduce_lines
from .balanced import balanced_lines
from .balanced import c0_lines
from .balanced import googlenet_c0_lines
from .balanced import googlenet_lines
from .balanced import pinned_lines
from .goals import BOUND_NAMES
from .goals import cause_bullets
from .goals import cause_lines
from .goals import goal_lines
from .plan import BALANCED_WORKLOAD
from .plan import GOOGLENET
from .plan import Cell
from .plan import TWINS
from .plan import batch
from .plan import has_controller
from .plan import kind
from .plan import pinned
from .table import Table
from .table import link_mb
from .table import ms
from .table import ms_spread
from .table import x_spread
from .timing import UNSHAPED_STEPS
from .timing import UNSHAPED_WARMUP
from .timing import UNSHAPED_WORKLOAD_STEPS


def display_order(keys):
  """Cell keys for the tables: lenet first, shaped rates slowest first,
  unshaped after them, then workers and PS tasks; the plan's order within."""
  def order(item):
    i, k = item
    rate, workload, workers, num_ps = k.split('|')[:4]
    return (workload != 'lenet', rate == 'None',
            int(rate) if rate != 'None' else 0, int(workers),
            int(num_ps) == 2, i)
  return [k for _, k in sorted(enumerate(keys), key=order)]


def cell_rows(t, sizes):
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  rows = []
  for k in display_order(t.by_cell):
    cell = Cell(*[None if x == 'None' else x for x in k.split('|')])
    cell = cell._replace(rate=int(cell.rate) if cell.rate else None,
                         workers=int(cell.workers), num_ps=int(cell.num_ps))
    steps = t.steps(cell)
    per_round = ', '.join('%d: %s' % (r + 1, ms(s)) for r, s in steps.items())
    errors = t.errors(cell)
    if errors:
      per_round += (', ' if per_round else '') + 'failed: %s' % (
          errors[0].replace('|', '/')[:200])
    cols = []
    for bound in ('full_duplex', 'pull_then_push', 'ring'):
      relevant = {'sync_ps': ('full_duplex', 'pull_then_push'),
                  'staged_ps': ('full_duplex', 'pull_then_push'),
                  'async_ps': ('full_duplex',),
                  'ring': ('ring',)}[kind(cell.strategy)]
      if cell.rate is None or bound not in relevant:
        cols.append('')
        continue
      values = t.ratios(cell, lambda run, r, cell=cell, bound=bound: t.step(
          run) / t.bounds(cell, run, sizes[cell.workload])[bound])
      b = [t.bounds(cell, run, sizes[cell.workload])[bound]
           for run in t.runs(cell) if run.get('goodput')]
      cols.append('%s: %s' % (ms(statistics.median(b)), x_spread(values))
                  if b and values else (ms(statistics.median(b)) if b else ''))
    hosts = []
    named = [(0, 'PS 0'), (cell.num_ps, 'worker 0')]
    if has_controller(cell.strategy):
      named.append((cell.num_ps + cell.workers, 'controller'))
    for host, name in named:
      if host == cell.num_ps and name == 'PS 0':
        continue
      mb = link_mb(t, cell, host)
      if mb:
        hosts.append('%s %.1f / %.1f' % (name, mb[0], mb[1]))
    rows.append([netns.rate_text(cell.rate) if cell.rate else 'unshaped',
                 cell.workload, str(cell.workers), str(cell.num_ps),
                 cell.strategy, ms_spread(list(steps.values())),
                 per_round] + cols + ['; '.join(hosts)])
  return rows


def twin_rows(t, sizes):
  rows = []
  for k in display_order(t.by_cell):
    parts = k.split('|')
    if parts[4] not in TWINS or parts[0] == 'None':
      continue
    twin = Cell(int(parts[0]), parts[1], int(parts[2]), int(parts[3]),
                parts[4])
    own = twin._replace(strategy=TWINS[twin.strategy],
                        num_ps=max(1, twin.num_ps))
    a, b = t.steps(twin), t.steps(own)
    ratios = [a[r] / b[r] for r in a if r in b]
    bound = 'ring' if kind(twin.strategy) == 'ring' else 'full_duplex'
    twin_bound = t.ratios(twin, lambda run, r, c=twin, bound=bound: t.step(
        run) / t.bounds(c, run, sizes[c.workload])[bound])
    from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top

    def sent(cell):
      mb = link_mb(t, cell, cell.num_ps)
      return '%.2f' % mb[0] if mb else ''

    rows.append(['%s, %s, %d workers' % (netns.rate_text(twin.rate),
                                        twin.workload, twin.workers),
                 twin.strategy, ms_spread(list(a.values())),
                 '%s: %s' % (BOUND_NAMES[bound], x_spread(twin_bound)),
                 sent(twin), own.strategy, ms_spread(list(b.values())),
                 sent(own), x_spread(ratios)])
  return rows


def goodput_text(results):
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  by_rate = collections.OrderedDict()
  for r, rate, values in results['goodput']:
    by_rate.setdefault(rate, []).append('round %d: %s' % (
        r + 1, ', '.join('%.1f' % (g / 1e6) for g in values)))
  if not by_rate:
    return 'none measured (every cell on unshaped links)'
  return '; '.join('%s: %s Mbit/s' % (netns.rate_text(rate), ', '.join(v))
                   for rate, v in by_rate.items())


def rounds_done(results):
  return len(set(run['round'] for run in results['runs']))


def method_lines(results, plan):
  return [
      '- every task a network namespace on one bridge, its link shaped both '
      'ways with `tc tbf` (or unshaped); one tower (a virtual CPU) a worker '
      '(two where a cell says so), batch a tower: %s; '
      'distributed_all_reduce\'s controller a host of its own on the '
      'bridge; every host shares this machine\'s 2 processors%s, and other '
      'jobs (other test runs) used the same processors during the run' % (
          ', '.join('%s %d' % (w, batch(w)) for w in sorted(results['bytes'])),
          ' (but a worker of a cell "a processor a worker", held to one)'
          if any(pinned(k) for k in results['plan']) else ''),
      '- %d of %d rounds; each cell a fresh network and cluster a round, '
      'round 1 in the plan\'s order, round 2 reversed; timed steps after '
      'warm-up steps: %s; a cell\'s step is the mean over its workers of '
      'their timed steps, given as the median over the rounds (range); '
      'every ratio is taken within a round' % (
          rounds_done(results), results['rounds'], ', '.join(
              '%s %d (asynchronous %d) after %d' % (
                  w, n, plan.get('async_steps', plan['steps'])[w],
                  plan['warmup'][w])
              for w, n in sorted(plan['steps'].items())) +
          '; unshaped %d after %d (%s)' % (
              UNSHAPED_STEPS, UNSHAPED_WARMUP, ', '.join(
                  '%s %d after %d' % (w, n, k) for w, (n, k) in
                  sorted(UNSHAPED_WORKLOAD_STEPS.items())))),
      '- variables: %s' % ', '.join(
          '%s %.2f MB' % (w, b / 1e6) for w, b in
          sorted(results['bytes'].items())),
      '- measured single-stream TCP goodput, each way: %s; a round\'s bounds '
      'use the lower of its two figures' % goodput_text(results),
  ] + ['- cut: %s' % c for c in results['cut']]


def every_cell_lines(t, sizes):
  """The table of every cell, with how to read it."""
  lines = ['', '### Every cell', '',
           'Step: median over the rounds (range), then each round\'s; each '
           'bound is the median over the rounds of its value, then the step '
           'over it (median, range). The bytes are the link counters\' (a '
           'bound assumes B each way a worker: a model whose gradients '
           'travel smaller, or whose variables are read where they live, '
           'comes in under it).', '']
  lines += markdown.table(
      ['rate', 'model', 'W', 'PS', 'strategy', 'step', 'rounds',
       'W x B_ps / R', '2 x W x B_ps / R', '2(W-1)/W x B / R',
       'MB a step sent / received (last round)'],
      cell_rows(t, sizes), 'lllrlllllll')
  return lines


# A subset's title, its table's heading and the function of its lines.
SUBSET_SECTIONS = {
    'allreduce': ('distributed_all_reduce beside collective_all_reduce '
                  '(issue 26): steps on shaped links',
                  'Against the ring bound, beside collective_all_reduce',
                  allreduce_lines),
    'balanced': ('Compute and transfer comparable (issue 32): steps '
                 'against max(c0, bound)',
                 'resnet20, 2 workers, against max(c0, bound) and c0 + '
                 'bound', balanced_lines),
    'googlenet': ('Compute and transfer comparable, tens of MB (issue 32): '
                  'steps against max(c0, bound)',
                  'googlenet, 2 workers, against max(c0, bound) and c0 + '
                  'bound', googlenet_lines),
    'pinned': ('A processor a worker (issue 32): steps against '
               'max(c0, bound)',
               'resnet20, 2 workers, each on a processor of its own, with '
               'the benchmark\'s inter-op pools (a spare thread) and with one '
               'thread a task',
               pinned_lines),
    'c0': ('The balanced family on unshaped links (issue 32): the c0 its '
           'rates are set from',
           'resnet20, 2 workers, every strategy\'s c0', c0_lines),
    'googlenet_c0': ('The googlenet family on unshaped links (issue 32): '
                     'the c0 its rates are set from',
                     'googlenet, 2 workers, every strategy\'s c0',
                     googlenet_c0_lines),
    'buckets': ('Bucket sizes (issue 32): steps against max(c0, bound)',
                'resnet20, 2 workers, each bucket size beside its '
                'strategy\'s default, where the bound is about c0',
                balanced_lines),
}


def subset_lines(results, plan, source, command, elapsed):
  """The lines of a run of a subset of the plan (`plan['subset']`)."""
  t = Table(results)
  sizes = results['sizes']
  title, heading, section = SUBSET_SECTIONS[plan['subset']]
  lines = ['## %s' % title, '',
           'Written by `benchmarks/run_network_benchmarks.py --subset %s` '
           '(its docstring defines the bounds and the plan).' %
           plan['subset'], '',
           '- commit measured: %s' % source,
           '- command: `%s` (%.1f minutes)' % (command, elapsed / 60.0),
           '- subset: %s, %d of the %s cells' % (
               plan['subset'], len(results['plan']),
               'quick plan\'s' if plan['name'].startswith('quick') else
               'script\'s')]
  lines += method_lines(results, plan)
  lines += ['', '### %s' % heading, '']
  lines += section(t, sizes)
  lines += every_cell_lines(t, sizes)
  return lines


def section_lines(results, plan, source, command, elapsed, full_file=None):
  """The lines of the results (the whole file's body, or with `full_file`
  the RESULTS.md section that points to it)."""
  if plan.get('subset'):
    return subset_lines(results, plan, source, command, elapsed)
  t = Table(results)
  sizes = results['sizes']
  lines = ['## Network goals (issue 16): steps on shaped links', '',
           'Written by `benchmarks/run_network_benchmarks.py` (its docstring '
           'defines every bound, goal and what the plan leaves out, with the '
           'arithmetic).', '',
           '- commit measured: %s' % source,
           '- command: `%s` (%.1f minutes)' % (command, elapsed / 60.0)]
  lines += method_lines(results, plan)
  lines += ['', '### Goals (200mbit, lenet, 1 PS + 2 workers)', '']
  lines += goal_lines(t, sizes)
  lines += ['', 'The last column: the step over the bound with its unshaped '
            'step c0 and the worker\'s own link (docstring); for the 2-PS '
            'goals, the floor of the ratio that the measured 1-PS step '
            'allows. The causes: below.']
  lines += ['', '### What the steps are made of: the goals\' causes', '']
  if full_file:
    lines += cause_bullets(t, sizes)
    lines += ['', 'Every cell, c0, the link bytes, the asynchronous workers\' '
              'phase and tf.distribute\'s twins: `benchmarks/%s`.' % full_file]
    return lines
  lines += cause_lines(t, sizes)
  lines += ['', '### tf.distribute beside it', '',
            'MultiWorkerMirroredStrategy: ring collectives, a custom loop in '
            '`tf.function`, the benchmark\'s model built under the '
            'strategy\'s scope, SGD on the all-reduced mean. '
            'ParameterServerStrategy: '
            '`tf.compat.v1.distribute.experimental.ParameterServerStrategy` '
            'in graph mode with a session (it refuses eager execution only; '
            'asynchronous between workers, so beside the asynchronous '
            'parameter_server). Same hosts, links, model, batch and learning '
            'rate (`benchmarks/network_twins.py`).', '']
  lines += markdown.table(
      ['cell', 'tf.distribute', 'step', 'over its bound',
       'worker 0 sent, MB a step', 'beside', 'step',
       'worker 0 sent, MB a step', 'tf.distribute / ours'],
      twin_rows(t, sizes), 'llllrllrl')
  lines += ['', '### distributed_all_reduce beside collective_all_reduce',
            '']
  lines += allreduce_lines(t, sizes)
  if BALANCED_WORKLOAD in sizes:  # Not in a run of an older plan.
    lines += ['', '### Compute and transfer comparable: %s' %
              SUBSET_SECTIONS['balanced'][1], '']
    lines += balanced_lines(t, sizes)
  if GOOGLENET in sizes:
    lines += ['', '### Compute and transfer comparable: %s' %
              SUBSET_SECTIONS['googlenet'][1], '']
    lines += googlenet_lines(t, sizes)
  lines += every_cell_lines(t, sizes)
  return lines
