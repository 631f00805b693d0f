"""The text of `ALLREDUCE_RESULTS.md` and of the all-reduce goals section of
`RESULTS.md`, from the figures of one `run_allreduce_benchmarks.py` run.

Every number here comes from that run, except the goals of the script and
issue 6's op counts, which are labelled as figures from outside. Traffic and
op counts are counted, not timed: they have no spread. Build and step times
are timed in rounds: their ratios are per-round ratios, given with the
range of the rounds, and verdicts on them say how many rounds fell on the
other side of the goal.
"""

import allreduce_plan as ap  # The plan and goals of the run, beside this file.

from variable_mgr.benchmark.reports import markdown
from variable_mgr.benchmark.reports import measure

COST_MEASURES = (
    ('the issue\'s (whole graph)', 'graph_ops', 'graph_build_rounds'),
    ('the all-reduce alone', 'ops', 'build_rounds'),
)


def mb(n):
  return n / 1e6


def bound_ratio(run, label):
  return run['busiest'][label] / run['bound']


def median_seconds(run, key, label):
  return measure.spread(run[key][label]).median


def to_copy(run, key, label):
  """Spread of `label`'s per-round build seconds (`key`) over copy's."""
  return measure.ratio_spread(run[key], label, 'copy')


def step_ratio(run, label):
  return measure.ratio_spread(run['step_seconds'], label, ap.INDEPENDENT)


def _worst(runs, figure):
  """The largest `figure(run)` over the tables, with its set and k."""
  return max((figure(run), s, k) for (s, k), run in runs.items())


def _rounds_note(s, goal):
  """' (build: 1 of 3 rounds above 1.5x)', or ''."""
  rounds = markdown.other_side(s, goal, digits=1)
  return ' (build: %s)' % rounds if rounds else ''


def goal_rows(results):
  """(goal, candidate, figures, verdict) rows of the traffic goal."""
  rows = []
  for name in ap.GOAL_ALGORITHMS:
    value, set_name, k = _worst(results, lambda run: bound_ratio(run, name))
    rows.append(['within %.2fx of the bound, both sets' % ap.BOUND_GOAL, name,
                 'worst %.3fx (%s, k=%d); counted, not timed' % (
                     value, set_name, k),
                 markdown.verdict(value <= ap.BOUND_GOAL)])
  return rows


def cost_rows(results):
  """(measure, candidate, then figures and verdict per set) rows of the
  repacking goal: ops and build within COST_GOAL of the copy's and traffic
  within BOUND_GOAL of the bound, at every tower count of the set."""
  rows = []
  for what, ops_key, build_key in COST_MEASURES:
    for name in ap.REPACK_GOAL_ALGORITHMS:
      for n in ap.REPACKS:
        label = '%s+repack%d' % (name, n)
        row = [what, label]
        for set_name in ap.SETS:
          runs = dict((key, run) for key, run in results.items()
                      if key[0] == set_name)
          bound = _worst(runs, lambda run: bound_ratio(run, label))
          ops = _worst(runs, lambda run: run[ops_key][label] /
                       float(run[ops_key]['copy']))
          build = max(((to_copy(run, build_key, label), k)
                       for (_, k), run in runs.items()),
                      key=lambda item: item[0].median)
          row.append('bound %.2fx (k=%d), ops %.2fx (k=%d), build %s (k=%d)'
                     % (bound[0], bound[2], ops[0], ops[2],
                        markdown.spread_text(build[0]), build[1]))
          ok = (bound[0] <= ap.BOUND_GOAL and ops[0] <= ap.COST_GOAL and
                build[0].median <= ap.COST_GOAL)
          row.append(markdown.verdict(ok) + _rounds_note(build[0],
                                                       ap.COST_GOAL))
        rows.append(row)
  return rows


def packing_notes(info, results):
  """What repacking costs in ops, from the run's counts."""
  out = ['## What repacking costs', '']
  flat = dict((s, sum(1 for shape in info['shapes'][s] if len(shape) == 1))
              for s in ap.SETS)
  out.append(
      'Per tower, `with_repacking` reshapes each tensor that is not flat to '
      'a vector and back (2 ops; one-dimensional tensors need none: %s); it '
      'builds each pack with one concatenation and cuts it with one split, '
      'splits and joins the few tensors that straddle two packs, and shares '
      'its int32 constants (one per distinct shape or list of sizes). '
      '`copy` needs one op per tensor and tower. The ops that '
      '`with_repacking(fn, n)` adds around a function returning its input, '
      'against the whole `copy` all-reduce:' % '; '.join(
          '`%s` has %d of %d' % (s, flat[s], len(info['shapes'][s]))
          for s in ap.SETS))
  rows = []
  for (set_name, k), run in results.items():
    cells = k * run['tensors']
    for n, ops in sorted(run['packing_ops'].items(), key=lambda i: int(i[0])):
      rows.append([set_name, str(k), str(n), str(ops),
                   '%.2f' % (ops / float(cells)), str(run['ops']['copy']),
                   '%.2f' % (ops / float(run['ops']['copy']))])
  out += [''] + markdown.table(
      ['set', 'towers', 'n', 'packing ops', 'per tensor and tower',
       'copy ops', 'packing / copy'], rows, 'lrrrrrr') + ['']
  out.append(
      'A reduction of the packs that reaches the bound then adds, per pack '
      'and tower, at least a split, a sum and a concatenation (the ring a '
      'split into k chunks, k-1 `add` ops and a concatenation; halving-'
      'doubling log2 k splits, adds and concatenations; `psgpu` a split, one '
      '`add_n` and a concatenation). Against the copy\'s ops a tower, in '
      'this run:')
  out.append('')
  packed = ['%s+repack%d' % (a, n) for a in ap.REPACK_GOAL_ALGORITHMS
            for n in ap.REPACKS]
  for set_name in ap.SETS:
    runs = dict((key, run) for key, run in results.items()
                if key[0] == set_name)
    meeting = [label for label in packed if all(
        run['ops'][label] <= ap.COST_GOAL * run['ops']['copy']
        for run in runs.values())]
    out.append('- `%s` (%d tensors): the copy adds %s; packed candidates '
               'within %.1fx of the copy\'s own ops at every k: %s.' % (
                   set_name, next(iter(runs.values()))['tensors'], ', '.join(
                       '%.0f ops a tower at k=%d' % (
                           run['ops']['copy'] / float(k), k)
                       for (_, k), run in runs.items()), ap.COST_GOAL,
                   ', '.join(meeting) if meeting else 'none'))
  return out + ['']


def traffic_notes(results, labels):
  out = ['**Traffic of the candidates above %.2fx of the bound** (busiest and '
         'least busy device, bytes sent or received, whichever is larger):'
         % ap.BOUND_GOAL, '']
  rows = []
  for (set_name, k), run in results.items():
    for label in labels:
      if label == ap.INDEPENDENT or bound_ratio(run, label) <= ap.BOUND_GOAL:
        continue
      per = dict((d, max(v)) for d, v in run['per_device'][label].items())
      hi = max(per, key=lambda d: (per[d], d))
      lo = min(per, key=lambda d: (per[d], d))
      rows.append([set_name, str(k), label, '%.3f' % bound_ratio(run, label),
                   hi, '%.1f' % mb(per[hi]), lo, '%.1f' % mb(per[lo])])
  out += markdown.table(['set', 'towers', 'candidate', 'traffic/bound',
                       'busiest device', 'MB', 'least busy device', 'MB'],
                      rows, 'lrlrlrlr')
  out += [
      '', 'Why an algorithm exceeds the bound, by its construction:', '',
      '- `copy` sums each tensor on one device, which receives k-1 copies '
      'of it and sends k-1 sums (k/2 times the bound for that tensor alone); '
      '`hcopy` does the same within each group of towers and across the '
      'groups\' leaders. How far above the bound the busiest device is then '
      'depends on how evenly the bytes spread over the summing devices; '
      'repacking into n packs spreads the sums over n devices only.',
      '- `pscpu` and `tf shuffle` sum on the worker CPU, which is CPU:0, '
      'also tower 0: that device receives (k-1)N and sends (k-1)N, k/2 times '
      'the bound; on a real GPU host the CPU is not a tower.',
      '- `tf rechd`: TensorFlow\'s `_build_recursive_hd_gather` creates its '
      '`split` ops outside any device scope, so the placer puts them on the '
      'default device, CPU:0, which receives every other tower\'s chunk at '
      'every step of the halving.', '']
  return out


def allocator_notes(results, allocator):
  """Step times of packing with the default and the BFC CPU allocator."""
  if not allocator:
    return []
  sizes = sorted(set(run['total_bytes'] for run in allocator.values()))
  out = ['## Step time of packing on CPU towers', '',
         'Packing copies every gradient into a pack and back out each step. '
         'The default CPU allocator hands buffers above glibc\'s mmap '
         'threshold (at most 32 MB) back to the system when they are freed, '
         'so each step faults its large buffers in afresh (here one pack is '
         '%s; four are a quarter of that). The same candidates again in a run '
         'with %s, whose pools keep the buffers (step time over '
         '`independent` of the same run, median with the range of the '
         'rounds; step ms in brackets):' % (
             ' or '.join('%.0f MB' % mb(b) for b in sizes),
             ', '.join('`%s=%s`' % kv for kv in sorted(ap.BFC_ENV.items()))),
         '']
  rows = []
  for key, run in allocator.items():
    default = results.get(key)
    for label in ap.ALLOCATOR_LABELS:
      if label == ap.INDEPENDENT:
        continue
      cells = [key[0], str(key[1]), label]
      for r in (default, run):
        if r is None:
          cells.append('-')
        else:
          s = step_ratio(r, label)
          cells.append('%s (%.1f)' % (markdown.spread_text(s, ''), 1000 *
                                      measure.spread(
                                          r['step_seconds'][label]).median))
      rows.append(cells)
  out += markdown.table(['set', 'towers', 'candidate', 'default allocator',
                       'BFC allocator'], rows, 'lrlrr')
  return out + ['']


def _s(n):
  return '' if n == 1 else 's'


def lines(info, labels, results, plan, source, command, elapsed,
          allocator=None):
  """Every line of ALLREDUCE_RESULTS.md."""
  out = markdown.header('All-reduce benchmarks', 'run_allreduce_benchmarks.py',
                      source, command, elapsed, info['tf_version'])
  w = out.append
  w('- towers: virtual CPU devices; sessions with Grappler and constant '
    'folding off (`traffic.meter_config`), soft placement off; one '
    'subprocess per table')
  w('- rounds per table: builds (the first into the session\'s graph, the '
    'others into fresh graphs of the whole step, order rotating), rounds of '
    'timed steps (candidates in rotating order, after one metered warm-up '
    'step each):')
  for c in plan:
    w('  - `%s`, %d towers: %d build%s, %d round%s of %d step%s' % (
        c.set_name, c.towers, c.build_rounds, _s(c.build_rounds), c.rounds,
        _s(c.rounds), c.steps, _s(c.steps)))
  checked = all(run['checked'] == list(labels) for run in results.values())
  w('- outputs: %s' % (
      'every candidate\'s, every tensor on every tower, in every table, '
      'equal to the sum NumPy computes from the same inputs (see the '
      'script\'s docstring)' if checked else 'NOT all checked'))
  w('- TensorFlow private builders (`tensorflow.python.distribute.v1.'
    'all_reduce`): %s' % ('measured' if info['tf_private']
                          else 'not importable, not measured'))
  w('')
  w('Tensor sets (one float32 tensor of each shape a tower):')
  w('')
  for set_name, text in ap.SETS.items():
    run = next(r for (s, _), r in results.items() if s == set_name)
    w('- `%s`: %s; %d tensors, N = %.1f MB a tower' % (
        set_name, text, run['tensors'], mb(run['total_bytes'])))
  w('')
  w('Columns: **traffic/bound** = the busiest device\'s sent or received '
    'bytes in one step (partition graphs) over 2(k-1)/k x N; **ops** = ops '
    'the all-reduce adds to the graph; **graph ops** = the ops of a whole '
    'graph of one step as issue 6 counts them (each tower\'s tensors from '
    '`tf.random.normal`, 6 ops each, then the all-reduce); **build** = '
    'seconds to build the all-reduce; **graph build** = seconds to build '
    'the whole graph of one step (both medians of the rounds); **x copy** = '
    'over the `copy` row of the same table (for builds, the median of the '
    'per-round ratios); **step/indep.** = per-round step time over '
    '`independent` (each tower an identity of its own tensors, no '
    'exchange), median and range. `+repackN` = '
    '`packing.with_repacking(fn, N)`; `tf ...` = TensorFlow\'s private '
    'builders, one call per tensor.')
  w('')
  w('## Goals')
  w('')
  out.extend(markdown.table(['goal', 'candidate', 'figures', 'verdict'],
                          goal_rows(results)))
  w('')
  w('Repacked: ops and build <= %.1fx the copy\'s and traffic <= %.2fx the '
    'bound, at every tower count of a set (worst figure of each, and its '
    'k; build: the median of the per-round ratios with their range). Issue '
    '6 counts ops over a whole graph of one step: its figures (9,177 and '
    '32,640 ops, from outside this run) correspond to `pscpu` and `tf ring` '
    'at 8 towers on `resnet50` here; the all-reduce alone counts only what '
    'the all-reduce adds.' % (ap.COST_GOAL, ap.BOUND_GOAL))
  w('')
  header = ['measure', 'candidate']
  for set_name in ap.SETS:
    header += ['`%s`' % set_name, 'verdict']
  out.extend(markdown.table(header, cost_rows(results)))
  w('')
  out.extend(packing_notes(info, results))
  out.extend(traffic_notes(results, labels))
  out.extend(allocator_notes(results, allocator or {}))
  for (set_name, k), run in results.items():
    out.extend(_table(set_name, k, run, labels))
  return out


def _table(set_name, k, run, labels):
  out = ['## `%s`, %d towers' % (set_name, k), '',
         'Bound 2(k-1)/k x N = %.1f MB; `independent` step %.1f ms.' % (
             mb(run['bound']), 1000 * measure.spread(
                 run['step_seconds'][ap.INDEPENDENT]).median), '']
  rows = []
  for label in labels:
    cells = [label, '-' if label == ap.INDEPENDENT
             else '%.3f' % bound_ratio(run, label),
             '%.1f' % mb(run['busiest'][label])]
    for key in ('ops', 'graph_ops'):
      cells += ['%d' % run[key][label],
                '%.2f' % (run[key][label] / float(run[key]['copy']))]
    for key in ('build_rounds', 'graph_build_rounds'):
      cells += ['%.3f' % median_seconds(run, key, label),
                '%.2f' % to_copy(run, key, label).median]
    cells.append('%.1f' % (1000 * median_seconds(run, 'step_seconds', label)))
    s = step_ratio(run, label)
    cells.append('1.00' if label == ap.INDEPENDENT
                 else '%.2f (%.2f-%.2f)' % (s.median, s.low, s.high))
    rows.append(cells)
  return out + markdown.table(
      ['candidate', 'traffic/bound', 'busiest MB', 'ops', 'x copy',
       'graph ops', 'x copy', 'build s', 'x copy', 'graph build s', 'x copy',
       'step ms', 'step/indep.'], rows, 'l' + 'r' * 12) + ['']


def summary(text_lines, command):
  """The all-reduce goals for RESULTS.md: the Goals part of `text_lines`."""
  start = text_lines.index('## Goals')
  end = next(i for i in range(start + 1, len(text_lines))
             if text_lines[i].startswith('## '))
  return (['## All-reduce goals (issue 6)', '',
           'From `%s`; measurement, columns and every table in '
           '[ALLREDUCE_RESULTS.md](ALLREDUCE_RESULTS.md).' % command]
          + text_lines[start + 1:end])
