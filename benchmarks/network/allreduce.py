"""distributed_all_reduce beside collective_all_reduce (issue 26): each
cell's step against the ring bound and against ring + c0, the bytes on
each host's link against the ring's 2(W-1)/W x B, the controller's link,
and the in-graph step over the collective one within each round."""

from variable_mgr.benchmark.reports import markdown

from .plan import Cell
from .plan import DAR
from .plan import DAR_TWO_STAGE
from .plan import TWO_TOWERS
from .plan import has_controller
from .plan import key
from .plan import towers
from .table import median_of
from .table import ms_spread
from .table import step_scale
from .table import x_spread
from .transfer import bound_with_c0

# (distributed_all_reduce, its collective_all_reduce neighbour) by towers.
PAIRS = ((DAR, 'collective_all_reduce'),
         (DAR_TWO_STAGE + TWO_TOWERS, 'collective_all_reduce' + TWO_TOWERS))


def ring_bytes(sizes, workers):
  """The bytes a ring all-reduce moves each way on each worker's link a
  step: 2(W-1)/W x B."""
  return 2.0 * (workers - 1) / workers * float(sum(sizes))


def host_mb(t, cell):
  """Per host of `cell`'s network, (sent, received) MB a step, from the
  link counters of each round: {'workers': [(sent, received) of the
  busiest worker each way, a round], 'controller': [...] or [],
  'ps': [...] or []}."""
  found = {'workers': [], 'controller': [], 'ps': []}
  for run in t.runs(cell):
    if 'links' not in run or 'step_secs' not in run:
      continue
    scale = step_scale(cell, run, t.step(run))
    links = run['links']
    workers = [links[str(cell.num_ps + k)] for k in range(cell.workers)
               if str(cell.num_ps + k) in links]
    if workers:
      found['workers'].append((max(w[0] for w in workers) * scale,
                               max(w[1] for w in workers) * scale))
    controller = str(cell.num_ps + cell.workers)
    if has_controller(cell.strategy) and controller in links:
      found['controller'].append(tuple(x * scale for x in links[controller]))
    if cell.num_ps and '0' in links:
      found['ps'].append(tuple(x * scale for x in links['0']))
  return found


def busy_ms(t, cell):
  """[(out, in, either, idle)] seconds a step, a round: the time a
  worker's link carried data out, in, and either way (links.busy_seconds,
  each the median over the workers) over the timed steps, and the rest of
  the step. out + in - either is the time both ways carry data at once."""
  found = []
  for run in t.runs(cell):
    if not run.get('busy') or 'step_secs' not in run:
      continue
    workers = [run['busy'][str(cell.num_ps + k)]
               for k in range(cell.workers)
               if str(cell.num_ps + k) in run['busy']]
    if workers:
      figures = [median_of([w[i] for w in workers]) / run['timed_steps']
                 for i in range(3)]
      found.append(tuple(figures) + (t.step(run) - figures[2],))
  return found


def mb_text(pairs, of=None, unit=1.0):
  """'6.71 / 6.70' (the medians over rounds, sent / received MB a step;
  in kB with `unit` 1000), with ' (1.01x / 1.01x)' of `of` MB when given."""
  if not pairs:
    return 'not counted'
  sent = median_of([p[0] for p in pairs])
  received = median_of([p[1] for p in pairs])
  text = '%.2f / %.2f' % (sent * unit, received * unit)
  if of:
    text += ' (%.2fx / %.2fx)' % (sent / of, received / of)
  return text


def cell_figures(t, cell, sizes):
  """The figures of one shaped cell: step, step over the ring bound and
  over ring + c0 (c0 the same cell's unshaped step of that round), its
  hosts' MB a step."""
  b = lambda run: t.bounds(cell, run, sizes)
  steps = t.steps(cell)
  c0 = t.unshaped(cell)
  over_ring = t.ratios(cell, lambda run, r: t.step(run) / b(run)['ring'])
  over_c0 = t.ratios(cell, lambda run, r: t.step(run) / bound_with_c0(
      'ring', b(run), c0[r]) if r in c0 else None)
  return dict(steps=list(steps.values()), c0=list(c0.values()),
              ring=median_of([b(run)['ring'] for run in t.runs(cell)
                              if run.get('goodput')]),
              over_ring=over_ring, over_c0=over_c0,
              hosts=host_mb(t, cell), busy=busy_ms(t, cell))


def shaped_layouts(t):
  """[(rate, workers)] of the shaped lenet cells of distributed_all_reduce
  in the results' plan, slowest rate first."""
  found = set()
  for k in t.by_cell:
    rate, workload, workers, _, strategy = k.split('|')
    if rate != 'None' and workload == 'lenet' and has_controller(strategy):
      found.add((int(rate), int(workers)))
  return sorted(found, key=lambda x: (x[0], x[1]))


def allreduce_rows(t, sizes):
  """One row a shaped cell of distributed_all_reduce and one of its
  collective_all_reduce neighbour (the same rate, workers and towers)."""
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  lenet = sizes['lenet']
  rows = []
  for rate, workers in shaped_layouts(t):
    ring_mb = ring_bytes(lenet, workers) / 1e6
    for dar, collective in PAIRS:
      cells = (Cell(rate, 'lenet', workers, 0, dar),
               Cell(rate, 'lenet', workers, 1, collective))
      if key(cells[0]) not in t.by_cell:
        continue
      dar_steps, coll_steps = t.steps(cells[0]), t.steps(cells[1])
      within = [dar_steps[r] / coll_steps[r] for r in dar_steps
                if r in coll_steps]
      for cell in cells:
        f = cell_figures(t, cell, lenet)
        hosts = f['hosts']
        other = ''
        if hosts['controller']:
          other = 'controller %s' % mb_text(hosts['controller'], unit=1000)
        elif hosts['ps']:
          other = 'PS 0 %s' % mb_text(hosts['ps'], unit=1000)
        rows.append([
            '%s, %d workers x %d' % (netns.rate_text(rate), workers,
                                     towers(cell.strategy)),
            cell.strategy.replace(TWO_TOWERS, ''), ms_spread(f['steps']),
            '%.0f ms' % (1000 * f['ring']) if f['ring'] else '',
            x_spread(f['over_ring']), ms_spread(f['c0']),
            x_spread(f['over_c0']) if f['over_c0'] else '',
            mb_text(hosts['workers'], ring_mb), other,
            '%.0f / %.0f / %.0f (%.0f)' % tuple(
                1000 * median_of([b[i] for b in f['busy']])
                for i in range(4)) if f['busy'] else '',
            x_spread(within) if cell is cells[0] else ''])
  return rows


def allreduce_lines(t, sizes):
  """The section's table and how to read it."""
  lenet = float(sum(sizes['lenet']))
  lines = [
      'Each cell: W workers x towers a worker, lenet (B = %.2f MB), batch '
      '8 a tower. Step: median over the rounds (range); ring bound '
      '2(W-1)/W x B / R with R the round\'s measured goodput; c0 the same '
      'cluster\'s step on unshaped links in the same round; the link bytes '
      'are the bridge ports\' counters over the timed steps, MB a step, '
      'the busiest worker\'s sent and the busiest worker\'s received '
      '(median over the rounds), and their ratio to the ring\'s '
      '2(W-1)/W x B (%.2f MB at 2 workers, %.2f at 4); the controller\'s '
      'link (distributed_all_reduce) or PS 0\'s (collective_all_reduce: '
      'the benchmark\'s global step and queues), kB a step; busy: the '
      'time a step a worker\'s link carries more than half the nominal '
      'rate out, in, and either way (its counters sampled every 5 ms; a '
      'ring at full duplex sends and receives at once: either = out = in), '
      'idle the rest of the step (medians over workers and rounds); the '
      'last column: the '
      'in-graph step over the collective one, within each round.' % (
          lenet / 1e6, ring_bytes(sizes['lenet'], 2) / 1e6,
          ring_bytes(sizes['lenet'], 4) / 1e6), '']
  lines += markdown.table(
      ['cell', 'strategy', 'step', 'ring bound', 'step / ring',
       'c0 (unshaped)', 'step / (ring + c0)',
       'workers\' links: MB a step sent / received (of 2(W-1)/W x B)',
       'controller / PS 0 link', 'worker link busy, ms a step: out / in / either (idle)',
       'distributed / collective'],
      allreduce_rows(t, sizes), 'lllrlllllll')
  return lines
