"""The balanced family (issue 32): on a model whose compute and transfer
are comparable, each cell's step against the larger of its compute (c0,
the same cluster's step on unshaped links) and its transfer bound, and
against their sum. A step at max(c0, bound) hides the transfer behind the
backward pass; a step at c0 + bound hides none of it."""

from variable_mgr.benchmark.reports import markdown

from .allreduce import host_mb
from .allreduce import mb_text
from .allreduce import ring_bytes
from .plan import BALANCED_C0_MS
from .plan import BALANCED_BYTES
from .plan import BALANCED_RATIOS
from .plan import BALANCED_WORKLOAD
from .plan import FAMILIES
from .plan import GOOGLENET
from .plan import GOOGLENET_BYTES
from .plan import GOOGLENET_C0_MS
from .plan import ONE_THREAD
from .plan import Cell
from .plan import TWO_TOWERS
from .plan import balanced_rates
from .plan import batch
from .plan import kind
from .plan import num_ps_of
from .plan import towers
from .table import median_of
from .table import ms_spread
from .table import x_spread
from .table import x_verdict

# Issue 32's goal: every strategy's step at most this much over
# max(c0, its bound).
GOAL = 1.10
# The bound a strategy's step is held to, by kind (transfer.bounds).
BOUND_OF_KIND = {'ring': 'ring', 'staged_ps': 'full_duplex',
                 'sync_ps': 'pull_then_push'}
BOUND_TEXT = {'ring': '2(W-1)/W x B / R', 'full_duplex': 'W x B_ps / R',
              'pull_then_push': '2 x W x B_ps / R'}


def bound_name(strategy):
  return BOUND_OF_KIND[kind(strategy)]


def worker_bytes(strategy, sizes, workers):
  """The bytes a worker's link carries each way a step: the ring's
  2(W-1)/W x B, or all of B (a PS worker pulls and pushes every
  variable)."""
  if kind(strategy) == 'ring':
    return ring_bytes(sizes, workers)
  return float(sum(sizes))


def cell_figures(t, cell, sizes):
  """Per round of `cell`: its step, c0, bound and the ratios; medians and
  spreads are taken by the caller."""
  name = bound_name(cell.strategy)
  c0 = t.unshaped(cell)
  # The forward pass's share of the unshaped step, by round (plan.traced).
  shares = {run['round']: run['forward_share']
            for run in t.runs(cell._replace(rate=None))
            if 'forward_share' in run}
  found = dict(steps=[], bounds=[], over_c0=[], over_max=[], over_sum=[],
               forward=[], over_floor=[])
  for run in t.runs(cell):
    if 'step_secs' not in run or not run.get('goodput'):
      continue
    step = t.step(run)
    bound = t.bounds(cell, run, sizes)[name]
    found['steps'].append(step)
    found['bounds'].append(bound)
    if run['round'] in c0:
      c = c0[run['round']]
      found['over_c0'].append(bound / c)
      found['over_max'].append(step / max(c, bound))
      found['over_sum'].append(step / (c + bound))
      if run['round'] in shares:
        f = shares[run['round']] * c
        found['forward'].append(f)
        found['over_floor'].append(step / max(c, f + bound))
  found['c0'] = list(c0.values())
  found['hosts'] = host_mb(t, cell)
  return found


def balanced_rows(t, sizes, workload=BALANCED_WORKLOAD):
  """One row a shaped cell of `workload`'s family in the results, by
  strategy then rate (slowest first)."""
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  model = sizes[workload]
  rows = []
  for strategy, rates in FAMILIES[workload].rates.items():
    for rate in rates:
      cell = Cell(rate * 10**6, workload, 2, num_ps_of(strategy, 1),
                  strategy)
      if not t.runs(cell):
        continue
      f = cell_figures(t, cell, model)
      of = worker_bytes(strategy, model, cell.workers) / 1e6
      rows.append([
          '%s, %d workers x %d' % (netns.rate_text(cell.rate), cell.workers,
                                   towers(strategy)),
          strategy.replace(TWO_TOWERS, ''), ms_spread(f['steps']),
          ms_spread(f['c0']),
          '%s %.0f ms' % (BOUND_TEXT[bound_name(strategy)],
                          1000 * median_of(f['bounds']))
          if f['bounds'] else 'not measured',
          x_spread(f['over_c0']), x_spread(f['over_max']),
          x_verdict(f['over_max'], GOAL), x_spread(f['over_sum']),
          floor_text(f), mb_text(f['hosts']['workers'], of)])
  return rows


def floor_text(f):
  """The forward pass f and step / max(c0, f + bound), where traced."""
  if not f['over_floor']:
    return 'no floor (pulls precede the forward pass)'
  return 'f %s: %s' % (ms_spread(f['forward']), x_spread(f['over_floor']))


def balanced_lines(t, sizes, workload=BALANCED_WORKLOAD):
  """The section's table of `workload`'s family and how to read it."""
  model = sizes[workload]
  lines = [
      'Each cell: 2 workers x towers a worker, 1 PS task (none under '
      'distributed_all_reduce, whose controller is a host of its own), '
      '%s (B = %.2f MB), batch %d a tower. Step: median over the rounds '
      '(range); c0: the same cluster\'s step on unshaped links in the same '
      'round, its compute and what the veths add; the bound: the '
      'strategy\'s transfer bound at the round\'s measured goodput R (ring '
      'for the all-reduces, W x B_ps / R for the staged PS, 2 x W x B_ps / '
      'R for the synchronous PS and distributed_replicated); bound / c0: '
      'how balanced the cell is; step / max(c0, bound): 1.00x hides the '
      'transfer behind the compute, the goal is at most %.2fx; step / '
      '(c0 + bound): 1.00x hides none of it; the floor within a step: f, '
      'the forward pass (its share of a traced unshaped step, the last '
      'warm-up step, times c0), and step / max(c0, f + bound), where no '
      'transfer can start before the loss (the all-reduces, the staged '
      'PS\'s pushes) and the next step\'s forward pass waits for this '
      'step\'s updates: 1.00x is the floor of a step a run; the workers\' '
      'links: MB a step '
      'sent / received by the busiest worker, and their ratio to what a '
      'worker must carry (the ring\'s 2(W-1)/W x B = %.2f MB, or all of B '
      'pulled and pushed). Every ratio is taken within a round.' % (
          workload, sum(model) / 1e6, batch(workload),
          GOAL, ring_bytes(model, 2) / 1e6), '']
  lines += markdown.table(
      ['cell', 'strategy', 'step', 'c0 (unshaped)', 'bound',
       'bound / c0', 'step / max(c0, bound)', 'goal (%.2fx)' % GOAL,
       'step / (c0 + bound)', 'within a step: f; step / max(c0, f + bound)',
       'workers\' links: MB a step sent / received (of what a worker '
       'carries)'],
      balanced_rows(t, sizes, workload), 'lllllllllll')
  return lines


def pinned_lines(t, sizes):
  """The section of the balanced family's cells with a processor a
  worker: how they differ from the shared cells, then their table."""
  return [
      'In these cells every worker task runs on a processor of its own '
      '(worker k on processor k, set before TensorFlow starts a thread; the '
      'PS task and distributed_all_reduce\'s controller on both), as on '
      'hosts of their own. A task\'s inter-op pool runs the graph\'s ops '
      'and serves the peers\' requests for tensors and buffers: the '
      'benchmark gives it one thread more than the task\'s processors (2 a '
      'pinned worker), the cells "%d inter-op thread a task" '
      '(`--num_inter_threads %d`) the one thread TensorFlow itself gives a '
      'pinned worker. The rates are the shared cells\' '
      '(NETWORK_BALANCED_RESULTS.md), so a row sits beside its shared twin '
      'at the same link; c0 is measured again here, pinned.' % (
          ONE_THREAD, ONE_THREAD),
      ''] + balanced_lines(t, sizes)


def googlenet_lines(t, sizes):
  """The section of the googlenet family."""
  return balanced_lines(t, sizes, GOOGLENET)


# A family's table of c0 (the plan's), by its name in `network/plan.py`,
# and its variables' bytes.
C0_TABLES = {
    BALANCED_WORKLOAD: ('BALANCED_C0_MS', BALANCED_C0_MS, BALANCED_BYTES),
    GOOGLENET: ('GOOGLENET_C0_MS', GOOGLENET_C0_MS, GOOGLENET_BYTES)}


def c0_lines(t, sizes, workload=BALANCED_WORKLOAD):
  """The section of a balanced family's unshaped cells (`--subset c0`,
  `--subset googlenet_c0`): each strategy's c0, the plan's table beside it,
  and the rates the measured c0 gives."""
  del sizes
  name, table, nbytes = C0_TABLES[workload]
  rows = []
  for strategy, planned in table.items():
    cell = Cell(None, workload, 2, num_ps_of(strategy, 1), strategy)
    steps = list(t.steps(cell).values())
    if not steps:
      continue
    c0 = median_of(steps)
    rows.append([strategy, ms_spread(steps), '%d ms' % planned,
                 ', '.join('%d' % r for r in balanced_rates(
                     nbytes, strategy, 1000 * c0))])
  ratios = ', '.join('%gx' % r for r in BALANCED_RATIOS)
  return [
      'c0: a strategy\'s step on unshaped links, %s, 2 workers, batch %d '
      'a tower, median over the rounds (range). The plan\'s c0 '
      '(`network/plan.py`, %s) sets the rates of the family\'s cells: at '
      'each rate the strategy\'s bound is %s of it (`balanced_rates`); the '
      'last column gives the rates of the c0 measured here.' % (
          workload, batch(workload), name, ratios), ''] + (
              markdown.table(
                  ['strategy', 'c0', 'the plan\'s c0',
                   'rates (mbit) for a bound of %s of this c0' % ratios],
                  rows, 'llrl'))


def googlenet_c0_lines(t, sizes):
  """The section of `--subset googlenet_c0`."""
  return c0_lines(t, sizes, GOOGLENET)
