"""`--compare`: a sweep over strategies x tower counts x option sets, as a
table and a chart.

Writes into the output directory:
- `results.md`: images/sec, the range of one step's images/sec, scaling
  efficiency and step time per run, under the machine it ran on
  (processors, the towers' virtual CPU devices, TensorFlow); a refused
  row says `refused (n)`, and each reason is written once under the
  table, with the cells it refused;
- `results.png`: images/sec and scaling efficiency against the tower count,
  one line per strategy and option set: one colour a strategy, one marker
  and line style an option set, in both panels; the refused points are
  named under the legend, not drawn
  (`compare_chart`; needs matplotlib: `pip install matplotlib`);
- `results.json`: the same numbers (each refusal whole in its row).

The command says each file it wrote.

Scaling efficiency of a strategy at k towers is its images/sec divided by k
times its own images/sec at one tower (1.0 = linear scaling). On virtual CPU
devices all towers share the machine's cores, so expect it to fall with k:
the sweep then compares the strategies' overheads, not real devices.

Option sets (`--compare_options`, e.g. `plain,fp16,bpps4,relaxed`): each
set is `plain` (no training option), or `fp16` (`--use_fp16`, fixed loss
scale), `fp16_auto` (`--use_fp16 --fp16_enable_auto_loss_scale`),
`bpps<N>` (`--backward_passes_per_step=N`) and `relaxed`
(`--variable_consistency=relaxed`), several joined by `+`. Each run has
exactly the options of its set (`--fp16_loss_scale` and
`--fp16_inc_loss_scale_every_n` apply to the sets with fp16 and fp16_auto);
without the flag, one set: the training options of the other flags. A
combination the library refuses (relaxed outside replicated, relaxed with
bpps<N> for N > 1, fp16 with resnet20) is a 'refused' row, its reason
under the table.
Scaling efficiency compares a set with its own one-tower run; `step vs
plain` is a run's step time over the plain run of the same strategy and
tower count (when `plain` is one of the sets). With bpps<N> a step is one
micro-batch: the update is applied every N steps.

Each configuration runs once; the spread of its timed steps (the slowest
and the fastest step's images/sec) is what the table and the chart's error
bars show of the noise: run the sweep again to see the spread between runs.
"""

import collections
import json
import os
import sys

from variable_mgr import errors
from variable_mgr.benchmark.flags import command_line
from variable_mgr.benchmark.reports import compare_chart
from variable_mgr.benchmark.reports import markdown
from variable_mgr.benchmark.runs import local_run
from variable_mgr.benchmark.training import run_config

TABLE_FILE = 'results.md'
CHART_FILE = 'results.png'
JSON_FILE = 'results.json'
PLAIN = 'plain'

# The training options an option set sets, all of them in every set.
_PLAIN_OPTIONS = (('use_fp16', False), ('fp16_loss_scale', None),
                  ('fp16_enable_auto_loss_scale', False),
                  ('fp16_inc_loss_scale_every_n',
                   run_config.CONFIG_FIELDS['fp16_inc_loss_scale_every_n']),
                  ('backward_passes_per_step', 1),
                  ('variable_consistency', 'strong'))


def option_overrides(name, loss_scale=None, inc_every_n=None):
  """The BenchmarkConfig fields of option set `name` (checked by the
  flags), e.g. 'fp16+bpps4' -> use_fp16=True, backward_passes_per_step=4
  and every other training option off.

  Args:
    loss_scale: --fp16_loss_scale, for the sets with fp16 or fp16_auto.
    inc_every_n: --fp16_inc_loss_scale_every_n, for the sets with
      fp16_auto.
  """
  values = collections.OrderedDict(_PLAIN_OPTIONS)
  for token in command_line.option_set_tokens(name):
    if token.startswith('fp16'):
      values['use_fp16'] = True
      values['fp16_loss_scale'] = loss_scale
    if token == 'fp16_auto':
      values['fp16_enable_auto_loss_scale'] = True
      if inc_every_n is not None:
        values['fp16_inc_loss_scale_every_n'] = inc_every_n
    if token.startswith('bpps'):
      values['backward_passes_per_step'] = int(token[len('bpps'):])
    if token == 'relaxed':
      values['variable_consistency'] = 'relaxed'
  return values


def option_set_name(config):
  """The option set a config runs, e.g. 'fp16_auto+bpps4', 'plain'."""
  tokens = []
  if config.use_fp16:
    tokens.append('fp16_auto' if config.fp16_enable_auto_loss_scale
                  else 'fp16')
  if config.backward_passes_per_step > 1:
    tokens.append('bpps%d' % config.backward_passes_per_step)
  if config.variable_consistency == 'relaxed':
    tokens.append('relaxed')
  return '+'.join(tokens) or PLAIN


def option_configs(args):
  """[(option set name, {config overrides})] of the parsed flags: one a set
  of --compare_options, or the flags' own options without it."""
  if not args.compare_options:
    return [(option_set_name(run_config.from_args(args)), {})]
  return [(name, option_overrides(name, args.fp16_loss_scale,
                                  args.fp16_inc_loss_scale_every_n))
          for name in args.compare_options]

Row = collections.namedtuple(
    'Row', 'strategy towers images_per_sec efficiency step_ms final_loss '
           'error step_range options vs_plain')
# step_range: (slowest, fastest) images/sec of one timed step, or None;
# options: the option set's name; vs_plain: step_ms over the plain run's
# of the same strategy and towers, or None.
Row.__new__.__defaults__ = (None, PLAIN, None)


def progress_bar(done, total, label, width=30, stream=None):
  """Draws `[#####.....] done/total label` on one line of `stream`."""
  stream = stream or sys.stdout
  filled = int(round(width * done / float(total))) if total else width
  line = '[%s%s] %d/%d %s' % ('#' * filled, '.' * (width - filled), done,
                              total, label)
  if stream.isatty():
    stream.write('\r%-79s' % line)
    if done == total:
      stream.write('\n')
  else:
    stream.write(line + '\n')
  stream.flush()


def efficiencies(results):
  """{(strategy, k): images/sec(k) / (k * images/sec(1))} where both exist.

  Args:
    results: {(strategy, towers): images_per_sec or None}.
  """
  out = {}
  for (strategy, towers), ips in results.items():
    base = results.get((strategy, 1))
    if ips and base:
      out[(strategy, towers)] = ips / (towers * base)
  return out


def _fmt(value, pattern):
  return '-' if value is None else pattern % value


def step_range(images_per_step, step_seconds):
  """(slowest, fastest) images/sec of one step, or None without steps."""
  if not step_seconds:
    return None
  return (images_per_step / max(step_seconds),
          images_per_step / min(step_seconds))


def machine_line(tf_version, machine=None):
  """What the sweep ran on: processors, the towers, TensorFlow."""
  cpu, processors, memory = machine or markdown.machine()
  return ('Machine: %d processor%s (%s%s); the towers are virtual CPU '
          'devices (--device=cpu), as many as the tower count, sharing '
          'these processors; TensorFlow %s.' % (
              processors, '' if processors == 1 else 's', cpu, memory,
              tf_version))


NOTES = ('images/sec: the timed batches\' images over their wall time. '
         'One step: the slowest and the fastest timed step\'s images/sec, '
         'the spread within the run; each configuration ran once (run the '
         'sweep again for the spread between runs). Options: the option set '
         'of the run (bpps<N>: a step is one micro-batch, the update applied '
         'every N); step vs plain: its step time over the plain run\'s of '
         'the same strategy and towers.')


def markdown_table(rows, title, machine=None):
  """The rows as a Markdown table, under a `## title` heading and, when
  given, the `machine` line, followed by NOTES."""
  cells = []
  reasons = []  # Each refusal's reason once, numbered in order.
  for r in rows:
    if r.error:
      if r.error not in reasons:
        reasons.append(r.error)
      cells.append([r.strategy, str(r.towers),
                    'refused (%d)' % (reasons.index(r.error) + 1), '', '',
                    '', '', r.options, ''])
      continue
    spread = ('-' if r.step_range is None else
              '%.1f-%.1f' % tuple(r.step_range))
    cells.append([r.strategy, str(r.towers), _fmt(r.images_per_sec, '%.1f'),
                  spread, _fmt(r.efficiency, '%.2f'), _fmt(r.step_ms, '%.1f'),
                  _fmt(r.final_loss, '%.3f'), r.options,
                  _fmt(r.vs_plain, '%.2fx')])
  lines = ['## %s' % title, '']
  if machine:
    lines += [machine, '']
  lines += markdown.table(
      ['strategy', 'towers', 'images/sec', 'one step (images/sec)',
       'scaling efficiency', 'step (ms)', 'final loss', 'options',
       'step vs plain'], cells, 'lrrrrrrlr')
  if reasons:
    lines += ['', 'Refused:']
    for i, reason in enumerate(reasons):
      lines.append('(%d) %s: %s' % (i + 1, reason, '; '.join(
          '%s, %s at %s' % (strategy, options, towers)
          for strategy, options, towers in _refused_cells(rows, reason))))
  lines += ['', NOTES]
  return '\n'.join(lines) + '\n'


def _refused_cells(rows, reason):
  """[(strategy, option set, 'k, m towers')] of the rows refused for
  `reason`, in the rows' order."""
  cells = collections.OrderedDict()
  for r in rows:
    if r.error == reason:
      cells.setdefault((r.strategy, r.options), []).append(r.towers)
  return [(s, o, '%s tower%s' % (', '.join(str(t) for t in towers),
                                 '' if towers == [1] else 's'))
          for (s, o), towers in cells.items()]


# The chart's file writer, here as before the chart had a module of its own.
write_chart = compare_chart.write_chart


def with_vs_plain(rows):
  """`rows` with vs_plain set: a row's step_ms over the step_ms of the plain
  row of the same strategy and towers (None without both)."""
  plain = dict(((r.strategy, r.towers), r.step_ms) for r in rows
               if r.options == PLAIN and r.step_ms)
  return [r._replace(vs_plain=(
      r.step_ms / plain[(r.strategy, r.towers)]
      if r.step_ms and (r.strategy, r.towers) in plain else None))
          for r in rows]


def run_compare(args, log=print):
  """Runs the sweep of the parsed flags and writes the files.

  Every configuration the library refuses (e.g. --staged_vars with
  replicated) becomes a 'refused' row instead of stopping the sweep.

  Returns:
    The list of Rows.
  """
  towers = sorted(set([1] + list(args.compare_towers)))
  option_sets = option_configs(args)
  runs = [(s, k, o) for s in args.compare_strategies for k in towers
          for o in option_sets]
  speeds, outcomes = {}, {}
  for i, (strategy, k, (options, overrides)) in enumerate(runs):
    progress_bar(i, len(runs), '%s x%d%s' % (
        strategy, k, '' if len(option_sets) == 1 else ' ' + options))
    config = run_config.from_args(args, variable_update=strategy, num_gpus=k,
                                  **overrides)
    try:
      result = local_run.run_one(config, log=lambda *_: None)
    except errors.VariableMgrError as e:
      outcomes[(strategy, k, options)] = str(e)
      continue
    # Efficiency: against the same strategy and option set at one tower.
    speeds[((strategy, options), k)] = result['images_per_sec']
    outcomes[(strategy, k, options)] = result
  progress_bar(len(runs), len(runs), 'done')

  eff = efficiencies(speeds)
  rows = []
  for strategy, k, (options, _) in runs:
    outcome = outcomes[(strategy, k, options)]
    if not isinstance(outcome, dict):
      rows.append(Row(strategy, k, None, None, None, None, outcome, None,
                      options))
      continue
    ips = outcome['images_per_sec']
    step_ms = None
    if ips:
      step_ms = 1000.0 * outcome['config']['batch_size'] * k / ips
    rows.append(Row(strategy, k, ips, eff.get(((strategy, options), k)),
                    step_ms, outcome['final_loss'], None, step_range(
                        outcome['config']['batch_size'] * k,
                        outcome['step_seconds']), options))
  rows = with_vs_plain(rows)

  # The batch of the flags, the model's default filled in: known even when
  # every configuration was refused.
  batch = run_config.from_args(args).resolved().batch_size
  title = '%s, batch %d per tower, %d timed batches' % (
      args.model, batch, args.num_batches)
  if args.compare_options:
    title += ', option sets %s' % ', '.join(args.compare_options)
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  machine = machine_line(tf.__version__)
  # The directory itself, not its parents (the flags checked the parent).
  os.makedirs(args.compare_dir, exist_ok=True)
  table = markdown_table(rows, title, machine)
  with open(os.path.join(args.compare_dir, TABLE_FILE), 'w') as f:
    f.write(table)
  with open(os.path.join(args.compare_dir, JSON_FILE), 'w') as f:
    json.dump([r._asdict() for r in rows], f, indent=2)
    f.write('\n')
  log(table)
  log('Wrote %s' % os.path.join(args.compare_dir, TABLE_FILE))
  log('Wrote %s (the rows as JSON)' % os.path.join(args.compare_dir,
                                                   JSON_FILE))
  chart = os.path.join(args.compare_dir, CHART_FILE)
  if not any(r.images_per_sec for r in rows):
    log('No configuration ran (every one was refused, or none had timed '
        'batches): no chart written')
  elif write_chart(rows, chart, title, machine):
    log('Wrote %s' % chart)
  else:
    log('matplotlib is not installed: no chart written '
        "(pip install matplotlib, or pip install -e '.[plot]' in the "
        'checkout)')
  return rows
