"""The text of `RESULTS.md`: every table and verdict of `run_benchmarks.py`.

Everything here reads the figures of one run (`run_benchmarks.measure_all`)
and nothing else, except the goals of `results_plan` and the one outside
figure they name, `BUILD_BASELINE_SECONDS`, labelled as such wherever it
appears. What the figures mean in general (why `independent` is no floor
on virtual CPUs, what a graph build costs) is in README.md.
"""

import results_plan as rp  # The plan and goals of RESULTS.md, beside this file.

from variable_mgr.benchmark.reports import markdown
from variable_mgr.benchmark.reports import measure


def step_ms(run, label):
  return 1000.0 * measure.spread(run['step_seconds'][label]).median


def mib(n):
  return n / (1024.0 * 1024.0)


def ratio(run, label, reference):
  """The Spread of `label`'s per-round step time over `reference`'s."""
  return measure.ratio_spread(run['step_seconds'], label, reference)


def _sync_ratios(results):
  """[(Spread, label, workload, towers)] of every synchronous strategy
  against independent."""
  return [(ratio(run, label, 'independent'), label, workload, towers)
          for (workload, towers), run in results['steps'].items()
          for label in rp.SYNCHRONOUS]


def goals_rows(results, plan):
  """[(goal, measured, verdict)] for the goals of issue 3."""
  rows = []
  sync = _sync_ratios(results)
  worst = max(sync, key=lambda item: item[0].median)
  above = sum(1 for s, _, _, _ in sync if s.median > rp.SYNC_RATIO_GOAL)
  rows.append((
      'every synchronous strategy within %.2fx of independent\'s step time '
      '(%s)' % (rp.SYNC_RATIO_GOAL, '; '.join(
          '%s: k = %s' % (w, ', '.join(str(k) for k in ks))
          for w, ks in plan['towers'].items())),
      'worst: %s, %s, %d towers, %s; %d of %d medians above %.2fx' % (
          worst[1], worst[2], worst[3], markdown.spread_text(worst[0]), above,
          len(sync), rp.SYNC_RATIO_GOAL),
      markdown.goal_verdict(worst[0], rp.SYNC_RATIO_GOAL)))
  for workload, towers, goal in rp.MIRRORED_GOALS:
    run = results['steps'].get((workload, towers))
    name = ('replicated at most %.2fx MirroredStrategy\'s step time on %s, '
            '%d towers' % (goal, workload, towers))
    if run is None:
      rows.append((name, 'not measured (--quick)', '-'))
      continue
    s = ratio(run, 'replicated', rp.MIRRORED)
    rows.append((name, '%s (%.1f ms / %.1f ms)' % (
        markdown.spread_text(s), step_ms(run, 'replicated'),
        step_ms(run, rp.MIRRORED)), markdown.goal_verdict(s, goal)))
  limit = rp.BUILD_BASELINE_SECONDS / 2
  name = ('graph build of %s on %d towers under %.1f s, every strategy '
          '(half of %.1f s: %s)' % (rp.BUILD_WORKLOAD, rp.BUILD_TOWERS, limit,
                                  rp.BUILD_BASELINE_SECONDS,
                                  rp.BUILD_BASELINE_SOURCE))
  run = results['steps'].get((rp.BUILD_WORKLOAD, rp.BUILD_TOWERS))
  if run is None:
    rows.append((name, 'not measured (--quick)', '-'))
  else:
    seconds = run['build_seconds']
    slowest = max(rp.STRATEGIES, key=seconds.get)
    cal = run['calibration']
    rows.append((name, 'slowest: %s, %.2f s, one build (%d ops; one trivial '
                 'op cost %.0f us at the time, load %.1f)' % (
                     slowest, seconds[slowest], run['op_count'][slowest],
                     1e6 * cal['seconds'] / cal['op_count'], run['load']),
                 markdown.verdict(seconds[slowest] < limit)))
  growth = _memory_growth(results)
  largest = max(growth, key=growth.get)
  rows.append((
      'memory flat after warm-up: resident set grows by less than %.0f MiB '
      'over %d steps of %s, %d towers, every strategy' % (
          mib(rp.FLAT_MEMORY_BYTES), plan['memory_steps'], rp.MEMORY_WORKLOAD,
          rp.MEMORY_TOWERS),
      'largest growth: %s, %+.2f MiB, one process a strategy' % (
          largest, mib(growth[largest])),
      markdown.verdict(growth[largest] < rp.FLAT_MEMORY_BYTES)))
  return rows


def _memory_growth(results):
  return dict((l, results['memory'][l]['rss_samples'][-1] -
               results['memory'][l]['rss_samples'][0]) for l in rp.STRATEGIES)


def readings(results, plan):
  """Sentences that read this run's figures: the noise, the build, the
  memory."""
  out = []
  loads = [run['load'] for run in results['steps'].values()]
  pairs = [(l, 'independent') for l in rp.CANDIDATES if l != 'independent']
  pairs.append(('replicated', rp.MIRRORED))
  widest = max(((ratio(run, a, b), a, b, key)
                for key, run in results['steps'].items() for a, b in pairs),
               key=lambda item: item[0].high - item[0].low)
  s, a, b, (workload, towers) = widest
  load = ('was %.1f' % loads[0] if min(loads) == max(loads) else
          'ran from %.1f to %.1f' % (min(loads), max(loads)))
  out.append(
      '- **Noise.** The 1-minute load average at the start of the step-time '
      'processes %s on %d processors. The widest per-round range of a ratio '
      'was %s / %s on %s, %d towers: %.2f-%.2f (median %.2f) over %d rounds. '
      'A verdict lists how many rounds fell on the other side of its goal.'
      % (load, markdown.machine()[1], a, b, workload, towers, s.low, s.high,
         s.median, s.rounds))
  run = results['steps'].get((rp.BUILD_WORKLOAD, rp.BUILD_TOWERS))
  if run is not None:
    seconds, ops = run['build_seconds'], run['op_count']
    slowest = max(rp.STRATEGIES, key=seconds.get)
    cal = run['calibration']
    limit = rp.BUILD_BASELINE_SECONDS / 2
    out.append(
        '- **Graph build.** The slowest build (%s) cost %.0f us an op (%.2f s '
        'for %d ops); a trivial op cost %.0f us in the same process just '
        'before. Under %.1f s at that op count would need under %.0f us an '
        'op. replicated\'s graph has %+d ops against independent\'s.' % (
            slowest, 1e6 * seconds[slowest] / ops[slowest], seconds[slowest],
            ops[slowest], 1e6 * cal['seconds'] / cal['op_count'], limit,
            1e6 * limit / ops[slowest],
            ops['replicated'] - ops['independent']))
  growth = _memory_growth(results)
  largest = max(growth, key=growth.get)
  out.append(
      '- **Memory.** The largest growth after warm-up, %s, is %.0f bytes a '
      'step over %d steps; peak resident sets on `%s` range from %.0f to %.0f '
      'MiB.' % (largest, growth[largest] / float(plan['memory_steps']),
                plan['memory_steps'], rp.MEMORY_WORKLOAD,
                min(mib(m['peak_rss']) for m in results['memory'].values()),
                max(mib(m['peak_rss']) for m in results['memory'].values())))
  return out


def profile_lines(run, labels, top=8):
  """The op types that take the most summed op time in one traced step."""
  lines = []
  for label in labels:
    prof = run['profiles'][label]
    total = sum(prof['micros'].values())
    ranked = sorted(prof['micros'].items(), key=lambda kv: -kv[1])[:top]
    lines.append('- **%s** (summed op time %.1f ms over %d executed nodes; '
                 'wall step %.1f ms): %s' % (
                     label, total / 1000.0, sum(prof['nodes'].values()),
                     step_ms(run, label), ', '.join(
                         '%s %.1f ms (%d)' % (t, us / 1000.0,
                                              prof['nodes'][t])
                         for t, us in ranked)))
  return lines


def text(results, plan, source, command, elapsed):
  """The whole of RESULTS.md but its all-reduce section."""
  tf_version = next(iter(results['steps'].values()))['tf_version']
  out = markdown.header('Benchmark results', 'run_benchmarks.py', source,
                      command, elapsed, tf_version)
  w = out.append
  w('- towers are virtual CPU devices of one process; '
    '`local_parameter_device=cpu` (the harness default): parameter_server '
    'keeps the variables on `/cpu:0` and replicated sums every gradient '
    'there; optimizer SGD')
  w('')
  w('Workloads:')
  w('')
  for name, about in rp.WORKLOADS.items():
    w('- `%s`: %s.' % (name, about))
  w('')
  w('Method: for each (workload, towers) every candidate is built in one '
    'process, warmed up for %d steps, then the candidates take turns for %d '
    'rounds of %d steps each (order rotating). A ratio is taken within each '
    'round and given as the median over rounds with their range; a verdict '
    'is the median\'s, with the rounds on the other side of the goal. Step '
    'times (ms) are medians of the per-round means and move with the load '
    'of the machine; the ratios are the figures to compare.' % (
        plan['warmup'], plan['rounds'], plan['steps']))
  w('')
  w('## Goals')
  w('')
  out.extend(markdown.table(['goal', 'measured', 'verdict'],
                          [list(r) for r in goals_rows(results, plan)]))
  w('')
  w('Reading the goals, from this run\'s figures:')
  w('')
  out.extend(readings(results, plan))
  w('')
  out.extend(_step_tables(results, plan))
  out.extend(_mirrored_table(results))
  out.extend(_build_tables(results, plan))
  out.extend(_memory_table(results, plan))
  out.extend(_profiles(results, plan))
  return '\n'.join(out) + '\n'


def _step_tables(results, plan):
  out = ['## Step time relative to independent', '',
         'Per-round ratio of the strategy\'s step time to independent\'s: '
         'median, range of the rounds in brackets, then the median step time '
         'in ms. MirroredStrategy is `tf.distribute.MirroredStrategy` on the '
         'same devices.']
  for workload in rp.WORKLOADS:
    towers = plan['towers'][workload]
    rows = []
    for label in rp.CANDIDATES:
      cells = [label]
      for k in towers:
        run = results['steps'][(workload, k)]
        s = ratio(run, label, 'independent')
        cells.append('%.2fx (%.2f-%.2f; %.1f ms)' % (
            s.median, s.low, s.high, step_ms(run, label)))
      rows.append(cells)
    out += ['', '### %s' % workload, ''] + markdown.table(
        ['strategy'] + ['%d towers' % k for k in towers], rows,
        'l' + 'r' * len(towers))
  return out + ['']


def _mirrored_table(results):
  run0 = next(iter(results['steps'].values()))
  rows = []
  for (workload, towers), run in results['steps'].items():
    s = ratio(run, 'replicated', rp.MIRRORED)
    rows.append([workload, str(towers), '%.1f' % step_ms(run, 'replicated'),
                 '%.1f' % step_ms(run, rp.MIRRORED), '%.2f' % s.median,
                 '%.2f - %.2f' % (s.low, s.high)])
  return ['## replicated / MirroredStrategy', '',
          'MirroredStrategy picked `%s` for its cross-device reduction on '
          'these devices. Below 1.0 means replicated is faster.'
          % run0['detail'][rp.MIRRORED], ''] + markdown.table(
              ['workload', 'towers', 'replicated (ms)',
               'MirroredStrategy (ms)', 'replicated / MirroredStrategy',
               'per-round range'], rows, 'lrrrrr') + ['']


def _build_runs(results, plan):
  return [(k, results['steps'][(rp.BUILD_WORKLOAD, k)])
          for k in plan['towers'][rp.BUILD_WORKLOAD]]


def _build_tables(results, plan):
  build_runs = _build_runs(results, plan)
  out = ['## Graph build and op count', '',
         '`%s`: wall time of `harness.build_training_graph` (MirroredStrategy: '
         'the same model and SGD step under `call_for_each_replica`), one '
         'build a candidate, in the process of the step-time measurement with '
         'the earlier graphs frozen out of the garbage collector. To read the '
         'absolute figures, each process first timed %d trivial ops (`x = x '
         '+ 1.0`) and read the 1-minute load average:' % (
             rp.BUILD_WORKLOAD, plan['calibration_ops']), '']
  out += markdown.table(
      ['towers', 'one trivial op (us)', 'load average'],
      [[str(k), '%.0f' % (1e6 * run['calibration']['seconds'] /
                          run['calibration']['op_count']),
        '%.1f' % run['load']] for k, run in build_runs], 'rrr')
  rows = []
  for label in rp.CANDIDATES:
    rows.append([label] + ['%.2f s / %d / %.0f' % (
        run['build_seconds'][label], run['op_count'][label],
        1e6 * run['build_seconds'][label] / run['op_count'][label])
                           for _, run in build_runs] +
                [str(build_runs[-1][1]['variable_count'][label])])
  out += ['', 'Build seconds / ops / microseconds an op; variables count '
          'every copy:', ''] + markdown.table(
              ['strategy'] + ['%d towers' % k for k, _ in build_runs] +
              ['variables (%d towers)' % build_runs[-1][0]], rows,
              'l' + 'r' * (len(build_runs) + 1))
  return out + ['']


def _memory_table(results, plan):
  k, last = _build_runs(results, plan)[-1]
  rows = []
  for label in rp.CANDIDATES:
    m = results['memory'][label]
    s = m['rss_samples']
    rows.append([label, '%.0f' % mib(m['peak_rss']), '%.1f' % mib(s[0]),
                 '%.1f' % mib(s[-1]), '%+.2f' % mib(s[-1] - s[0]),
                 ' '.join('%+.2f' % mib(x - s[0]) for x in s[1:]),
                 '%.0f' % mib(last['rss_added'][label])])
  return ['## Memory', '',
          'Each candidate in a fresh process on `%s`, %d towers (%d images a '
          'tower): peak resident set (`ru_maxrss`, TensorFlow itself is most '
          'of it), VmRSS after %d warm-up steps and every %d steps after, and '
          'the growth over %d steps. Every graph is finalized before its '
          'first step. Last column: the resident set that building, '
          'initialising and warming up the candidate added to the step-time '
          'process of `%s`, %d towers.' % (
              rp.MEMORY_WORKLOAD, rp.MEMORY_TOWERS,
              rp.BATCH_SIZE[rp.MEMORY_WORKLOAD], plan['memory_warmup'],
              plan['memory_sample_every'], plan['memory_steps'],
              rp.BUILD_WORKLOAD, k), ''] + markdown.table(
                  ['strategy', 'peak (MiB)', 'after warm-up (MiB)',
                   'after %d steps (MiB)' % plan['memory_steps'],
                   'growth (MiB)',
                   'every %d steps, from warm-up (MiB)'
                   % plan['memory_sample_every'],
                   'added, %s x %d (MiB)' % (rp.BUILD_WORKLOAD, k)],
                  rows, 'lrrrrlr') + ['']


def _profiles(results, plan):
  out = ['## Where the time goes', '',
         'One traced step (`RunOptions.FULL_TRACE`) per candidate after the '
         'timed rounds: op types ranked by summed execution time over all '
         'devices (nodes executed in brackets). Summed op time exceeds wall '
         'time when ops overlap on the %d processors; it excludes the '
         'executor\'s scheduling between ops.' % markdown.machine()[1]]
  shown = [(w, k) for w, k, _ in rp.MIRRORED_GOALS]
  for workload, towers in sorted(results['steps'], key=lambda wt: (
      list(rp.WORKLOADS).index(wt[0]), wt[1])):
    if (towers != max(plan['towers'][workload]) and
        (workload, towers) not in shown):
      continue
    run = results['steps'][(workload, towers)]
    out += ['', '### %s, %d towers' % (workload, towers), '',
            'Graph ops: %s.' % ', '.join('%s %d' % (l, run['op_count'][l])
                                         for l in rp.CANDIDATES), '']
    out.extend(profile_lines(run, rp.CANDIDATES))
  return out + ['']
