"""The goals' rows and their causes, read from a result's figures."""

import collections

from variable_mgr.benchmark.reports import markdown

from .plan import DAR
from .plan import MBIT
from .plan import Cell
from .plan import NO_PROBE
from .plan import OWN
from .plan import PARTITIONED
from .plan import PS_STRATEGIES
from .plan import TWINS
from .plan import kind
from .plan import num_ps_of
from .table import cell_phase
from .table import link_mb
from .table import median_bound
from .table import median_of
from .table import ms
from .table import ms_spread
from .table import phase_distance
from .table import step_scale
from .table import x_spread
from .table import x_verdict
from .transfer import bound_with_c0
from .transfer import two_ps_floor


# The goals of issue 16, at 200mbit, lenet, 2 workers: (strategy, bound,
# at most this multiple of it); with 2 PS, at most TWO_PS_GOAL of 1 PS.
GOAL_RATE, GOAL_WORKLOAD, GOAL_WORKERS = MBIT, 'lenet', 2
GOALS = (
    ('staged parameter_server', 'full_duplex', 1.15),
    ('parameter_server', 'pull_then_push', 1.05),
    ('distributed_replicated', 'pull_then_push', 1.05),
    ('collective_all_reduce', 'ring', 1.10),
    ('asynchronous parameter_server', 'full_duplex', 1.10),
)
TWO_PS_GOAL = 0.55
BOUND_NAMES = collections.OrderedDict([
    ('full_duplex', 'W x B_ps / R'), ('pull_then_push', '2 x W x B_ps / R'),
    ('ring', '2(W-1)/W x B / R'), ('overlapped_sync', '(W+1) x B_ps / R'),
    ('worker_link', 'worker link')])


def goal_cell(strategy, num_ps=1):
  return Cell(GOAL_RATE, GOAL_WORKLOAD, GOAL_WORKERS,
              num_ps_of(strategy, num_ps), strategy)


def goal_rows(t, sizes):
  """The goals' table rows: goal, measured, verdict, the bound with what
  the issue's leaves out (and the step over it)."""
  rows = []
  lenet = sizes[GOAL_WORKLOAD]
  for strategy, bound, goal in GOALS:
    cell = goal_cell(strategy)
    c0 = t.unshaped(cell)

    def issue(run, r, cell=cell, bound=bound):
      del r
      return t.step(run) / t.bounds(cell, run, lenet)[bound]

    def with_c0(run, r, cell=cell, c0=c0):
      if r not in c0:
        return None
      return t.step(run) / bound_with_c0(
          kind(cell.strategy), t.bounds(cell, run, lenet), c0[r])

    values = t.ratios(cell, issue)
    text = '%s at most %.2fx of %s' % (strategy, goal, BOUND_NAMES[bound])
    measured = x_spread(values) if values else '; '.join(
        t.errors(cell)) or 'not measured'
    rows.append([text, measured, x_verdict(values, goal),
                 x_spread(t.ratios(cell, with_c0)) if c0 else
                 'c0 not measured'])
  for strategy in PS_STRATEGIES:
    one, two = goal_cell(strategy), goal_cell(strategy + PARTITIONED, 2)
    ones, twos = t.steps(one), t.steps(two)
    c0_2 = t.unshaped(two)
    values = [twos[r] / ones[r] for r in twos if r in ones]
    floors = []
    for run in t.runs(two):
      r = run['round']
      if 'step_secs' in run and r in ones:
        floors.append(two_ps_floor(kind(strategy), t.bounds(two, run, lenet),
                                   c0_2.get(r), ones[r]))
    text = ('%s, 2 PS partitioned, at most %.2fx of its 1-PS step' %
            (strategy, TWO_PS_GOAL))
    rows.append([text, x_spread(values), x_verdict(values, TWO_PS_GOAL),
                 'floor %s' % x_spread(floors)])
  return rows


def link_rows(t, sizes, cells):
  """Bytes a step on each host's link for `cells` (their last round)."""
  rows = []
  for cell in cells:
    runs = [r for r in t.runs(cell) if 'links' in r and 'step_secs' in r]
    if not runs:
      continue
    run = runs[-1]
    step = t.step(run)
    total = float(sum(sizes[cell.workload]))
    names = (['PS %d' % i for i in range(cell.num_ps)] +
             ['worker %d' % i for i in range(cell.workers)])
    per = []
    for i, name in enumerate(names):
      sent, received = run['links'].get(str(i), (0, 0))
      scale = step_scale(cell, run, step)
      per.append('%s %.2f / %.2f' % (name, sent * scale, received * scale))
    rows.append([cell.strategy, '%d' % cell.num_ps, ms(step),
                 '; '.join(per), '%.2f' % (cell.workers * total / 1e6),
                 '%.2f' % (total / 1e6)])
  return rows


def goal_lines(t, sizes):
  lines = ['| goal | measured (median, rounds) | verdict | with what the '
           'issue\'s bound leaves out |', '|---|---|---|---|']
  lines += [markdown.row(r) for r in goal_rows(t, sizes)]
  return lines


def cause_bullets(t, sizes):
  """One bullet a goal not met (or close), its cause from the figures."""
  lenet = sizes[GOAL_WORKLOAD]
  total_mb = sum(lenet) / 1e6
  med = lambda cell: median_of(list(t.steps(cell).values()))
  c0 = lambda cell: median_of(list(t.unshaped(cell).values()))
  bullets = []

  ring = goal_cell('collective_all_reduce')
  step, bound, c = med(ring), median_bound(t, ring, 'ring', sizes), c0(ring)
  sent = link_mb(t, ring, ring.num_ps)
  if step and bound:
    text = ('- **collective_all_reduce** (%s against the ring bound %s, '
            '%.2fx): its links carry what a ring must, %s a step each way '
            'for worker 0 (2(W-1)/W x B = %.2f MB); ' % (
                ms(step), ms(bound), step / bound,
                '%.2f / %.2f MB' % sent if sent else 'not counted',
                total_mb))
    if c:
      text += ('what the bound leaves out is the step\'s non-network part: '
               'the forward pass cannot start before the previous step\'s '
               'all-reduce and update end, nor a gradient\'s all-reduce '
               'before the backward pass computes it; the same cluster on '
               'unshaped links takes c0 = %s a step; ring + c0 = %s, and '
               'the step is %.2fx of that.' % (
                   ms(c), ms(bound + c), step / (bound + c)))
    bullets.append(text)

  dar = goal_cell(DAR)
  step, bound, c = med(dar), median_bound(t, dar, 'ring', sizes), c0(dar)
  sent = link_mb(t, dar, 0)
  controller = link_mb(t, dar, dar.workers)
  if step and bound:
    text = ('- **%s** (one graph run by a controller host: %s against the '
            'ring bound %s, %.2fx' % (DAR, ms(step), ms(bound), step / bound))
    if c:
      text += '; ring + its c0 of %s: %.2fx' % (ms(c), step / (bound + c))
    text += ('): worker 0\'s link carries %s a step each way' % (
        '%.2f / %.2f MB' % sent if sent else 'not counted'))
    if controller:
      text += ', the controller\'s %.1f / %.1f kB' % (
          1000 * controller[0], 1000 * controller[1])
    bullets.append(text + '; beside collective_all_reduce with one and two '
                   'towers a worker: the all-reduce table of the results '
                   'file.')

  asy = goal_cell('asynchronous parameter_server')
  step, c = med(asy), c0(asy)
  fd, wl = median_bound(t, asy, 'full_duplex', sizes), median_bound(
      t, asy, 'worker_link', sizes)
  no_probe = med(goal_cell(NO_PROBE))
  twin = med(goal_cell('ParameterServerStrategy (v1, graph)'))
  if step and fd:
    text = ('- **asynchronous parameter_server** (%s against W x B / R = %s, '
            '%.2fx): with 2 workers W x B / R equals a worker\'s own pull '
            'then push, 2 x B / R = %s, so the bound holds only if one '
            'worker pulls exactly while the other pushes and neither computes;'
            ' ' % (ms(step), ms(fd), step / fd, ms(wl)))
    if c:
      text += ('with the compute (c0 = %s unshaped) the bound is 2 x B / R + '
               'c0 = %s (%.2fx). ' % (ms(c), ms(wl + c), step / (wl + c)))
    text += ('When both workers pull at once each gets half the PS link, '
             'up to 2 x W x B / R + c0 = %s a step in phase; nothing orders '
             'asynchronous workers. ' % ms(2 * fd + (c or 0.0)))
    phase = cell_phase(t, asy)
    if phase is not None:
      text += ('Measured: worker 1\'s steps end %.2f of a step from worker '
               '0\'s (median; 0 in phase, 0.5 alternating). ' % phase)
    if no_probe:
      text += ('Without the workers\' peer probe (a diagnostic) the step is '
               '%s (%.2fx of W x B / R). ' % (ms(no_probe), no_probe / fd))
      phase = cell_phase(t, goal_cell(NO_PROBE))
      if phase is not None:
        text = text[:-3] + ', phase %.2f). ' % phase
    if twin:
      text += ('tf.distribute\'s ParameterServerStrategy, asynchronous on '
               'the same links, takes %s (%.2fx' % (ms(twin), twin / fd))
      phase = cell_phase(t, goal_cell('ParameterServerStrategy (v1, graph)'))
      text += ', phase %.2f).' % phase if phase is not None else ').'
    pairs = []
    for strategy in ('asynchronous parameter_server', NO_PROBE,
                     'ParameterServerStrategy (v1, graph)'):
      for run in t.runs(goal_cell(strategy)):
        if run.get('step_ends') and 'step_secs' in run:
          phase = phase_distance(run['step_ends'].get('0', []),
                                 run['step_ends'].get('1', []))
          if phase is not None:
            pairs.append((phase, t.step(run)))
    if len(pairs) > 2:
      pairs.sort()
      text += (' Every asynchronous run of this layout (the three cells, '
               'every round), phase: step, by phase: %s.' % ', '.join(
                   '%.2f: %s' % (p, ms(v)) for p, v in pairs))
    bullets.append(text)

  for strategy in PS_STRATEGIES:
    one, two = goal_cell(strategy), goal_cell(strategy + PARTITIONED, 2)
    s1, s2 = med(one), med(two)
    if not s1 or not s2:
      continue
    ratio = median_of([b / a for r, a in t.steps(one).items()
                     for q, b in t.steps(two).items() if q == r])
    k = kind(strategy)
    ps0, ps1 = link_mb(t, two, 0), link_mb(t, two, 1)
    text = ('- **%s, 2 PS partitioned** (%s against %s at 1 PS, %.2fx): ' % (
        strategy, ms(s2), ms(s1), ratio or s2 / s1))
    if ps0 and ps1:
      text += ('the bytes split as placed, PS 0 %.2f / %.2f MB a step (sent '
               '/ received), PS 1 %.2f / %.2f (W x B_ps of the placement: '
               '%s MB); ' % (ps0 + ps1 + (' / '.join(
                   '%.2f' % (2 * l / 1e6) for l in t.results['ps_loads'][
                       '%s|2|partitioned' % GOAL_WORKLOAD]),)))
    wl = median_bound(t, two, 'worker_link', sizes)
    if k == 'sync_ps':
      over = median_bound(t, one, 'overlapped_sync', sizes)
      ptp1 = median_bound(t, one, 'pull_then_push', sizes)
      ptp2 = median_bound(t, two, 'pull_then_push', sizes)
      text += ('the 1-PS step comes in at %.2fx of 2 x W x B / R (%s; its own '
               'floor is (W+1) x B / R = %s, one worker\'s push overlapping '
               'the other\'s pull on the PS link), while the 2-PS step cannot '
               'go below max(2 x W x B_ps / R, 2 x B / R) = max(%s, %s): each '
               'worker\'s own link still carries all of B, pull then push. '
               'The ratio\'s floor is therefore %.2fx.' % (
                   s1 / ptp1, ms(ptp1), ms(over), ms(ptp2), ms(wl),
                   max(ptp2, wl) / s1))
    elif k == 'staged_ps':
      fd1, fd2 = median_bound(t, one, 'full_duplex', sizes), median_bound(
          t, two, 'full_duplex', sizes)
      c1, c2 = c0(one), c0(two)
      if c1 and c2:
        text += ('a staged step is its transfer (W x B_ps / R: %s at 1 PS, %s '
                 'at 2) plus a part that does not shrink with the PS count '
                 '(measured: %s and %s over those bounds; c0 unshaped %s and '
                 '%s): (%s + %s) / (%s + %s) = %.2fx is the ratio those '
                 'leave; %.2fx would need that part under (%.2f x %s - %s) '
                 '/ %.2f = %s.' % (
                     ms(fd1), ms(fd2), ms(s1 - fd1), ms(s2 - fd2), ms(c1),
                     ms(c2), ms(fd2), ms(c2), ms(fd1), ms(c1),
                     (fd2 + c2) / (fd1 + c1), TWO_PS_GOAL, TWO_PS_GOAL,
                     ms(fd1), ms(fd2), 1 - TWO_PS_GOAL,
                     ms((TWO_PS_GOAL * fd1 - fd2) / (1 - TWO_PS_GOAL))))
    elif k == 'async_ps':
      text += ('each worker\'s own link carries B each way, pull then push: '
               '2 x B / R = %s at any PS count, so 2 PS cannot halve an '
               'asynchronous 2-worker step: the floor is 2 x B / R over the '
               '1-PS step, %.2fx (%.2fx with the 2-PS cell\'s c0); the '
               'faster the 1-PS step (the closer its workers alternate), '
               'the higher.' % (ms(wl), wl / s1, (wl + (c0(two) or 0.0)) / s1))
    bullets.append(text)
  delays = t.results.get('queue_delay') or []
  if delays:
    from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
    bullets.append(
        '- queueing behind bulk data: a TCP connect (one small message '
        'each way) takes %s (idle / behind a full single stream); a '
        'barrier\'s token or a probe waits about that long on a busy '
        'link.' % '; '.join(
            '%.1f / %.1f ms at %s' % (1000 * i, 1000 * l, netns.rate_text(r))
            for r, i, l in delays))
  return bullets


def cause_lines(t, sizes):
  """The measurements behind the goals not met (the goal layout's cells,
  their unshaped steps and their links' bytes)."""
  lenet = sizes[GOAL_WORKLOAD]
  total = float(sum(lenet))
  lines = cause_bullets(t, sizes) + ['']
  one_ps = [goal_cell(s) for s in OWN + [NO_PROBE]] + [
      goal_cell(s) for s in TWINS]
  two_ps = [goal_cell(s + PARTITIONED, 2) for s in PS_STRATEGIES]
  lines += ['Each cell\'s step on unshaped links (c0: the same cluster, veth '
            'pairs with no tbf), beside its step at 200mbit:', '']
  rows = []
  for cell in one_ps + two_ps:
    c0 = t.unshaped(cell)
    if not c0:
      continue
    rows.append([cell.strategy, str(cell.num_ps), ms_spread(list(c0.values())),
                 ms_spread(list(t.steps(cell).values()))])
  lines += markdown.table(['strategy', 'PS', 'c0 (unshaped)', 'at 200mbit'],
                        rows, 'lrrr')
  lines += ['', 'MB a step through each host\'s link at 200mbit, 2 workers '
            '(sent / received; the last round; the link counters include '
            'TCP/IP and gRPC framing):', '']
  lines += markdown.table(['strategy', 'PS', 'step', 'per host: sent / '
                         'received', 'W x B', 'B'],
                        link_rows(t, sizes, one_ps + two_ps), 'lrrlrr')
  loads = t.results['ps_loads'].get('%s|2|partitioned' % GOAL_WORKLOAD)
  if loads:
    lines += ['', 'Partitioned over 2 PS, the placement model puts %s MB on '
              'the PS tasks (of %.2f MB): the 3136x512 layer in two slices, '
              'every other variable whole on the less loaded task; PS 0 also '
              'holds the global step and the barriers\' queues (bytes: '
              'nothing to speak of; their round trips: in c0).' % (
                  ' / '.join('%.3f' % (l / 1e6) for l in loads), total / 1e6)]
  return lines
