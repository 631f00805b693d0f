"""The runs of a result by cell, and the figures read off them: steps,
bounds, ratios and their spreads, link bytes a step, the asynchronous
workers' phase."""

import collections
import statistics

from variable_mgr.benchmark.reports import markdown

from .plan import Cell
from .plan import PARTITIONED
from .plan import PARTITION_MIN_BYTES
from .plan import key
from .plan import kind
from .transfer import bounds


def median_spread(values):
  """(median, low, high) of a non-empty list."""
  return statistics.median(values), min(values), max(values)


def phase_distance(ends_a, ends_b):
  """How far apart two asynchronous workers' steps are: for each step end
  of `ends_b` between two of `ends_a`, its offset from the earlier as a
  fraction f of that step of a; min(f, 1 - f), 0 in phase, 0.5 alternating.
  Returns their median, or None."""
  values = []
  for t in ends_b:
    for t0, t1 in zip(ends_a, ends_a[1:]):
      if t0 <= t < t1:
        f = (t - t0) / (t1 - t0)
        values.append(min(f, 1.0 - f))
        break
  return statistics.median(values) if values else None


class Table(object):
  """The runs of a result, by cell: per-round figures and medians."""

  def __init__(self, results):
    self.results = results
    self.sizes = {}
    self.by_cell = collections.OrderedDict()
    for k in results['plan']:
      self.by_cell[k] = []
    for run in results['runs']:
      self.by_cell.setdefault(key(Cell(*run['cell'])), []).append(run)

  def runs(self, cell):
    return self.by_cell.get(key(cell), [])

  @staticmethod
  def step(run):
    return (sum(run['step_secs']) / len(run['step_secs'])
            if 'step_secs' in run else None)

  def steps(self, cell):
    """{round: step seconds} of the cell's successful runs."""
    return collections.OrderedDict(
        (run['round'], self.step(run)) for run in self.runs(cell)
        if 'step_secs' in run)

  def bounds(self, cell, run, sizes):
    return bounds(sizes, cell.workers, cell.num_ps, run['goodput'],
                  PARTITION_MIN_BYTES if cell.strategy.endswith(PARTITIONED)
                  else 0)

  def unshaped(self, cell):
    """{round: step} of the same cell on unshaped links."""
    return self.steps(cell._replace(rate=None))

  def ratios(self, cell, fn):
    """[fn(run, round)] over the cell's successful runs (None dropped)."""
    values = []
    for run in self.runs(cell):
      if 'step_secs' in run:
        value = fn(run, run['round'])
        if value is not None:
          values.append(value)
    return values

  def errors(self, cell):
    return [run['error'] for run in self.runs(cell) if 'error' in run]


def ms(seconds):
  return '%.0f ms' % (1000 * seconds)


def ms_spread(values):
  if not values:
    return 'not measured'
  m, lo, hi = median_spread(values)
  if len(values) == 1:
    return '%.0f ms, one round' % (1000 * m)
  return '%.0f ms (%.0f-%.0f)' % (1000 * m, 1000 * lo, 1000 * hi)


def x_spread(values):
  if not values:
    return 'not measured'
  m, lo, hi = median_spread(values)
  if len(values) == 1:
    return '%.2fx, one round' % m
  return '%.2fx (%.2f-%.2f)' % (m, lo, hi)


def x_verdict(values, goal):
  if not values:
    return 'not measured'
  m = statistics.median(values)
  other = sum(1 for v in values if (v > goal) == (m <= goal))
  text = markdown.verdict(m <= goal)
  if other:
    text += ' (%d of %d rounds %s)' % (other, len(values),
                                       'above' if m <= goal else
                                       'at or below')
  return text


def step_scale(cell, run, step):
  """MB a step from a count of bytes over a run's timed steps: synchronous
  workers take the timed steps in lockstep (the count over their number);
  asynchronous ones do not (the count's rate over the window, times the
  mean step)."""
  if kind(cell.strategy) != 'async_ps' and run.get('timed_steps'):
    return 1.0 / run['timed_steps'] / 1e6
  return step / run['window'] / 1e6


def median_of(values):
  values = [v for v in values if v is not None]
  return statistics.median(values) if values else None


def median_bound(t, cell, name, sizes):
  return median_of([t.bounds(cell, run, sizes[cell.workload])[name]
                  for run in t.runs(cell) if run.get('goodput')])


def link_mb(t, cell, host):
  """(sent, received) MB a step of host `host` (0-based over PS tasks then
  workers) of `cell`'s last round with counters, or None."""
  runs = [r for r in t.runs(cell) if 'links' in r and 'step_secs' in r]
  if not runs or str(host) not in runs[-1]['links']:
    return None
  run = runs[-1]
  scale = step_scale(cell, run, t.step(run))
  sent, received = run['links'][str(host)]
  return sent * scale, received * scale


def cell_phase(t, cell):
  """The median over rounds of phase_distance of workers 0 and 1."""
  return median_of([phase_distance(run['step_ends'].get('0', []),
                                 run['step_ends'].get('1', []))
                  for run in t.runs(cell) if run.get('step_ends')])
