"""The text of OVERHEAD_RESULTS.md and of its section of RESULTS.md, from
the figures of one run (`run_overhead_benchmarks.measure_cells`)."""

from variable_mgr.benchmark.reports import markdown
from variable_mgr.benchmark.reports import measure

from .plan import BATCH_SIZE
from .plan import CHECK_ATOL
from .plan import CHECK_RTOL
from .plan import CHECK_STEPS
from .plan import GOALS
from .plan import KINDS
from .plan import STRATEGIES
from .plan import WORKLOADS
from .plan import library_label
from .plan import twin_label


def ms(seconds):
  return '%.1f' % (1000.0 * seconds)


def overhead(cell, strategy):
  """The Spread of the library's per-round step time over its twin's."""
  return measure.ratio_spread(cell['step_seconds'], library_label(strategy),
                              twin_label(strategy))


def step_ms(cell, label):
  return ms(measure.spread(cell['step_seconds'][label]).median)


def goal_lines(results):
  """One verdict line a variable kind (its worst cell and strategy), then
  one a (workload, towers, kind, strategy)."""
  lines = []
  for kind in KINDS:
    cells = [(key, cell) for key, cell in results.items() if key[2] == kind]
    if not cells:
      continue
    worst = max(((overhead(cell, s), key, s) for key, cell in cells
                 for s in STRATEGIES), key=lambda t: t[0].median)
    spread, (workload, towers, _), strategy = worst
    over = sum(1 for key, cell in cells for s in STRATEGIES
               if overhead(cell, s).median > GOALS[kind])
    lines.append(
        '- **%s variables, every strategy at most %.2fx its twin** (%d '
        'cells x %d strategies): %s; worst: %s, %s, %d towers, %s' % (
            kind, GOALS[kind], len(cells), len(STRATEGIES),
            markdown.verdict(over == 0) + (
                ' (%d of %d above)' % (over, len(cells) * len(STRATEGIES))
                if over else ''),
            strategy, workload, towers, markdown.spread_text(spread)))
  lines.append('')
  for (workload, towers, kind), cell in results.items():
    for strategy in STRATEGIES:
      lines.append(markdown.verdict_line(
          '%s, %s, %d towers, %s variables' % (strategy, workload, towers,
                                               kind),
          overhead(cell, strategy), GOALS[kind]))
  return lines


def overhead_table(results, kind):
  rows = []
  for (workload, towers, cell_kind), cell in results.items():
    if cell_kind != kind:
      continue
    for strategy in STRATEGIES:
      s = overhead(cell, strategy)
      rows.append([workload, str(towers), strategy,
                   step_ms(cell, library_label(strategy)),
                   step_ms(cell, twin_label(strategy)),
                   '%.3f' % s.median, '%.3f - %.3f' % (s.low, s.high),
                   markdown.goal_verdict(s, GOALS[kind])])
  return markdown.table(
      ['workload', 'towers', 'strategy', 'library (ms)', 'twin (ms)',
       'library / twin', 'rounds', 'at most %.2fx' % GOALS[kind]],
      rows, 'lrlrrrrl')


def graph_table(results):
  rows = []
  for (workload, towers, kind), cell in results.items():
    for strategy in STRATEGIES:
      lib, twin = library_label(strategy), twin_label(strategy)
      extra = cell['extra_ops'][strategy]
      rows.append([workload, str(towers), kind, strategy,
                   str(cell['op_count'][lib]), str(cell['op_count'][twin]),
                   _op_types(extra['library']), _op_types(extra['twin']),
                   str(cell['ordering_ops'][lib]),
                   '%.1e' % cell['check'][strategy]
                   if cell['check'][strategy] else '0 (equal)'])
  return markdown.table(
      ['workload', 'towers', 'variables', 'strategy', 'library ops',
       'twin ops', 'only in the library', 'only in the twin',
       '`after_readers`', 'largest difference after %d steps'
       % CHECK_STEPS], rows, 'lrllrrllrr')


def _op_types(counts):
  """'Identity 6, NoOp 2' of {op type: count}; '-' when empty."""
  return ', '.join('%s %d' % kv for kv in sorted(counts.items())) or '-'


def results_text(results, plan, source, command, elapsed):
  """The lines of OVERHEAD_RESULTS.md."""
  tf_version = next(iter(results.values()))['tf_version']
  out = markdown.header('Library overhead', 'run_overhead_benchmarks.py',
                      source, command, elapsed, tf_version)
  w = out.append
  w('- towers are virtual CPU devices of one process '
    '(`ConfigProto(device_count={\'CPU\': k})`, soft placement off); '
    '`local_parameter_device=cpu` (the harness default); plain SGD; '
    '%s' % ', '.join('%s %d images a tower' % (wl, BATCH_SIZE[wl])
                     for wl in WORKLOADS))
  w('')
  w('Each strategy of the package, built by its harness, against its '
    '*twin*: the same towers written by hand in plain TensorFlow with no '
    'manager (see the docstring of `benchmarks/run_overhead_benchmarks.py` '
    'for what each twin builds and how it orders its updates). Before any '
    'step is timed, each twin takes its strategy\'s initial values and both '
    'run %d steps: every variable and loss must agree within float32 '
    'tolerance (rtol %g, atol %g), or the run stops.' % (
        CHECK_STEPS, CHECK_RTOL, CHECK_ATOL))
  w('')
  w('Method: one process a (workload, towers, variable kind); every '
    'candidate is built first, then each strategy and its twin take turns '
    'for %d rounds of %d steps (the pair\'s order alternating; untimed '
    'warm-up steps of each before them: %d), one pair after the other. '
    'Step time only: building, initialising and the check are not timed. '
    'A ratio pairs the library\'s and the twin\'s steps of one round; a '
    'verdict is on the median over rounds, with the rounds\' range (and '
    'how many rounds fall on the other side of the goal). Step times (ms) '
    'are medians of the per-round means and move with the load of the '
    'machine.' % (
        plan['rounds'], plan['steps'], plan['warmup']))
  w('')
  w('## Goals')
  w('')
  out.extend(goal_lines(results))
  for kind in KINDS:
    if not any(key[2] == kind for key in results):
      continue
    w('')
    w('## %s variables: library / twin' % kind.capitalize())
    w('')
    out.extend(overhead_table(results, kind))
  w('')
  w('## Graphs and the equality check')
  w('')
  w('Ops of each graph, and the ops one has beyond the other, by type '
    '(initialisation included); `after_readers`: how many of the library\'s '
    'are the identities a gradient goes through so that its update waits '
    'for reads of its variable that are not already its ancestors '
    '(`variable_mgr.ordering`), where a twin with ref variables puts control '
    'edges on its apply ops instead; last, the largest absolute difference '
    'between the library and its twin over the losses and variables of the '
    'check.')
  w('')
  out.extend(graph_table(results))
  w('')
  w('## The measuring processes')
  w('')
  out.extend(markdown.table(
      ['workload', 'towers', 'variables', 'load average (start, end)',
       'peak resident set (MiB)'],
      [[wl, str(k), kind, '%.1f, %.1f' % tuple(cell['load']),
        '%.0f' % (cell['peak_rss'] / 1048576.0)]
       for (wl, k, kind), cell in results.items()], 'lrlrr'))
  return out


def section_lines(results, command):
  """The section of RESULTS.md: the goals, and where the figures are."""
  lines = ['## Library overhead (issue 11)', '',
           'Written by `%s`; the tables, the method and the machine are in '
           '`benchmarks/OVERHEAD_RESULTS.md`. Each strategy\'s step time '
           'over its plain-TensorFlow twin\'s, median over rounds:' % command,
           '']
  return lines + [l for l in goal_lines(results) if l.startswith('- **')]
