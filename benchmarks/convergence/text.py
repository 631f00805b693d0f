"""The convergence benchmark's report: pure functions of the runs'
figures (verdicts against the one-tower run, the tables, the files' text)."""

from variable_mgr.benchmark.reports import markdown

from .cells import ASYNCHRONOUS
from .cells import Cell
from .cells import FLOOR
from .cells import GLOBAL_BATCH
from .cells import GOAL_POINTS
from .cells import LEARNING_RATE
from .cells import LOSS_STEPS
from .cells import MODEL
from .cells import NUM_PS
from .cells import NUM_WORKERS
from .cells import REFERENCE
from .cells import SEED
from .cells import describe
from .cells import update_scale
from .cells import update_text


def points(accuracy):
  """An accuracy in [0, 1] as percentage points."""
  return 100.0 * accuracy


def verdict(top1, reference_top1):
  """(met, why) of one cell against the goal."""
  delta = points(top1 - reference_top1)
  # Accuracies are multiples of 1/300: compare with room for float rounding.
  within = delta >= -GOAL_POINTS - 1e-6
  above_floor = top1 > FLOOR
  if within and above_floor:
    why = ('%+.2f pp, more than %g above' % (delta, GOAL_POINTS)
           if delta > GOAL_POINTS + 1e-6 else '')
    return True, why
  reasons = []
  if not within:
    reasons.append('%.2f pp below the one-tower run' % -delta)
  if not above_floor:
    reasons.append('top-1 not above %d%%' % round(points(FLOOR)))
  return False, '; '.join(reasons)


def reference_run(runs):
  for run in runs:
    if Cell(**run['cell']) == REFERENCE:
      return run
  return None


def seed_runs(runs):
  """The reference's runs over its seeds, in seed order."""
  found = [r for r in runs if Cell(**r['cell'])._replace(seed=SEED) ==
           REFERENCE and 'top1' in r]
  return sorted(found, key=lambda r: r['cell']['seed'])


def seed_spread(runs):
  """(lowest, highest, mean) top-1 in points of the reference's seeds, and
  how many there were; None without two."""
  tops = [points(r['top1']) for r in seed_runs(runs)]
  if len(tops) < 2:
    return None
  return min(tops), max(tops), sum(tops) / len(tops), len(tops)


def _where(cell):
  if cell.cluster:
    return '%d workers x %d' % (cell.workers, cell.towers)
  return str(cell.towers)


def _seconds(run, key):
  value = run.get(key)
  return '' if value is None else '%.0f' % value


def _steps_text(run):
  cell = Cell(**run['cell'])
  text = str(run['steps'])
  if cell.cluster and cell.label in ASYNCHRONOUS:
    text = '%d a worker' % run['steps']
    if run.get('checkpoint_step') is not None or run.get('global_step'):
      step = run.get('checkpoint_step') or run.get('global_step')
      text += ' (%d updates saved)' % step
  return text


def _seconds_text(run):
  train, evaluate = run.get('train_seconds'), run.get('eval_seconds')
  if train is None:
    return ''
  return '%.0f' % train + ('' if evaluate is None else ' + %.0f' % evaluate)


def table_rows(runs):
  """The result table's rows: every run of the reference's seed."""
  reference = reference_run(runs)
  rows = []
  for run in runs:
    cell = Cell(**run['cell'])
    if cell.seed != SEED:
      continue
    first = ['%s%s' % (cell.label, ' (reference)' if cell == REFERENCE
                       else ''),
             _where(cell), str(cell.batch_per_tower), _steps_text(run),
             '{:,}'.format(run['examples']), update_text(cell)]
    if 'error' in run:
      rows.append(first + ['failed: %s' % run['error'].replace('|', '/'),
                           '', '', '', _seconds_text(run), '**not met**'])
      continue
    if cell == REFERENCE:
      delta, text = '', ''
    elif reference is None or 'top1' not in reference:
      delta, text = '', 'no reference'
    else:
      delta = '%+.2f' % points(run['top1'] - reference['top1'])
      ok, why = verdict(run['top1'], reference['top1'])
      text = markdown.verdict(ok) + (' (%s)' % why if why else '')
    loss = run.get('final_loss')
    rows.append(first + ['%.2f' % points(run['top1']),
                         '%.2f' % points(run['top5']), delta,
                         '' if loss is None else '%.4f' % loss,
                         _seconds_text(run), text])
  return rows


HEADER = ['strategy', 'towers', 'batch a tower', 'steps',
          'examples trained on', 'a step applies', 'top-1 (%)', 'top-5 (%)',
          'vs one tower (pp)', 'last loss', 'seconds (train + eval)',
          'verdict']
ALIGN = 'lrrrrlrrrrrl'


def summary(runs):
  """(cells met, cells judged, [labels of the misses])."""
  reference = reference_run(runs)
  judged = met = 0
  misses = []
  for run in runs:
    cell = Cell(**run['cell'])
    if cell.seed != SEED or cell == REFERENCE:
      continue
    judged += 1
    ok = ('error' not in run and reference is not None and
          'top1' in reference and verdict(run['top1'], reference['top1'])[0])
    if ok:
      met += 1
    else:
      misses.append(describe(cell))
  return met, judged, misses


def method_lines(plan, tf_version):
  """The bullets that say what every run did."""
  return [
      '- TensorFlow %s; %s on `--data_name=digits` (1,497 training images, '
      '300 eval images), SGD at a fixed learning rate of %g, a global batch '
      'of %d images a step split over every tower of every worker, %d '
      'steps, seed %d; each run trains into a fresh `--train_dir`, then '
      '`--eval` restores its checkpoint and gives top-1 and top-5 over the '
      '300 eval images (one image is 0.33 pp)' % (
          tf_version, MODEL, LEARNING_RATE, GLOBAL_BATCH, plan['steps'],
          SEED),
      '- independent: the checkpoint is tower 0\'s copy, trained on its '
      'share of each batch only (the examples column); asynchronous '
      'parameter_server: each worker runs the steps on its half of the '
      'batch, the PS applies every worker\'s update',
      '- clusters: `--launch_local_cluster`, %d PS + %d workers of one '
      'tower each on 127.0.0.1' % (NUM_PS, NUM_WORKERS),
      '- "a step applies": what the variables move by, times the rate, '
      'as the strategies define it (README, "Strategies"): replicated adds '
      'its towers\' gradients and a synchronous cluster adds its workers\' '
      'means, so with one flag for the rate they take steps k times the '
      'mean\'s (k towers or workers), where the others take the mean\'s; '
      '"last loss" is the training loss of the last step (the mean over '
      'the towers; worker 0\'s on a cluster)',
      '- every run one at a time; seconds are each command\'s wall time '
      '(TensorFlow\'s import, graph build, steps, checkpoint) with the '
      'machine\'s 2 processors shared with other jobs: informative only']


def in_seed_range(run, spread):
  """Whether `run`'s top-1 lies within the one-tower seeds' range."""
  low, high = spread[0], spread[1]
  return low - 1e-6 <= points(run['top1']) <= high + 1e-6


def averaging_local(cell):
  """A one-machine cell whose steps should be the one-tower run's: it
  averages (or has one tower), reads current variables, shares them."""
  return (not cell.cluster and cell.label != 'independent' and
          not cell.label.startswith('staged') and update_scale(cell) == 1 and
          cell.seed == SEED)


def loss_agreement(runs):
  """(largest relative difference, its run's description, step) of the
  training losses of the `averaging_local` cells from the reference's at
  LOSS_STEPS, or None without curves."""
  reference = reference_run(runs)
  if reference is None or not reference.get('loss_curve'):
    return None
  worst = None
  for run in runs:
    cell = Cell(**run['cell'])
    if cell == REFERENCE or not averaging_local(cell):
      continue
    for step, loss in sorted((run.get('loss_curve') or {}).items()):
      ref = reference['loss_curve'].get(step)
      if ref:
        diff = abs(loss - ref) / ref
        if worst is None or diff > worst[0]:
          worst = (diff, describe(cell), int(step))
  return worst


def result_lines(runs):
  """The table, the seeds' spread and the verdict."""
  reference = reference_run(runs)
  lines = markdown.table(HEADER, table_rows(runs), ALIGN)
  lines.append('')
  spread = seed_spread(runs)
  if spread is not None:
    low, high, mean, count = spread
    seeds = ', '.join('%d: %.2f' % (r['cell']['seed'], points(r['top1']))
                      for r in seed_runs(runs))
    lines += ['One tower over %d seeds (top-1 %%, %s): %.2f to %.2f, mean '
              '%.2f, a spread of %.2f pp; the goal\'s 1 pp is measured '
              'from the seed-%d run.' % (count, seeds, low, high, mean,
                                         high - low, SEED), '']
  agreement = loss_agreement(runs)
  if agreement is not None:
    lines += ['The one-machine cells that average (parameter_server and '
              'distributed_replicated on every tower count, replicated on '
              'one) against the one-tower run\'s training loss at steps %s: '
              'at most %.1f%% apart (%s, step %d); replicated on more towers '
              'and the clusters are not compared (their steps differ by '
              'design).' % (', '.join(str(s) for s in LOSS_STEPS),
                            100.0 * agreement[0], agreement[1],
                            agreement[2]), '']
  met, judged, misses = summary(runs)
  lines += ['### Verdict', '']
  if reference is None or 'top1' not in reference:
    lines.append('- the one-tower reference failed: nothing is judged')
    return lines
  lines.append(
      '- every cell at most %g pp below the one-tower top-1 (%.2f%%) '
      'and above %d%%: %d of %d cells met%s: %s' % (
          GOAL_POINTS, points(reference['top1']), round(points(FLOOR)),
          met, judged, '' if not misses else ' (missed: %s)' %
          '; '.join(misses), markdown.verdict(not misses)))
  if spread is not None:
    for run in runs:
      cell = Cell(**run['cell'])
      if describe(cell) in misses and 'top1' in run:
        lines.append('- %s: top-1 %.2f%% is %s the one-tower seeds\' range '
                     '(%.2f to %.2f)' % (
                         describe(cell), points(run['top1']),
                         'within' if in_seed_range(run, spread) else
                         'outside', spread[0], spread[1]))
  return lines


def section_lines(runs, plan, source, command, elapsed, tf_version):
  """The `convergence` section of RESULTS.md."""
  return [
      '## Convergence on digits (issue 14)', '',
      'Written by `benchmarks/run_convergence_benchmarks.py` (its docstring '
      'defines every figure and the goal); every run\'s commands, '
      'training losses and global step are in '
      '`benchmarks/CONVERGENCE_RESULTS.md`.', '',
      '- commit: %s' % source,
      '- command: `%s` (%.1f minutes)' % (command, elapsed / 60.0),
  ] + method_lines(plan, tf_version) + [''] + result_lines(runs)


def detail_lines(runs, work_dir=None):
  """CONVERGENCE_RESULTS.md's tables of every run: figures and training
  losses, then the commands (`work_dir`, the run's temporary directory,
  shown as `$DIR`)."""
  rows, commands = [], []
  for run in runs:
    cell = Cell(**run['cell'])
    figures = run.get('error', '').replace('|', '/') or (
        'top-1 %.2f, top-5 %.2f' % (points(run['top1']), points(run['top5'])))
    curve = run.get('loss_curve') or {}
    rows.append([describe(cell), update_text(cell), figures] + [
        '%.3f' % curve[str(s)] if str(s) in curve else ''
        for s in LOSS_STEPS] + [
            '' if run.get('global_step') is None else str(run['global_step'])])
    text = '`%s`<br>`%s`' % (run['train_command'], run['eval_command'])
    if work_dir:
      text = text.replace(work_dir, '$DIR')
    commands.append([describe(cell), text])
  return markdown.table(
      ['run', 'a step applies', 'accuracy (%)'] +
      ['loss, step %d' % s for s in LOSS_STEPS] + ['global step'], rows,
      'lll' + 'r' * len(LOSS_STEPS) + 'r') + [
          '', '### Commands', '',
          '`$DIR` is the run\'s temporary directory.', ''] + markdown.table(
              ['run', 'train, then eval'], commands)


def details_file(runs, plan, source, command, elapsed, tf_version, quick,
                 work_dir=None):
  """The whole of CONVERGENCE_RESULTS.md (or its quick twin)."""
  return markdown.header(
      'Convergence on digits%s' % (' (a check)' if quick else ''),
      'run_convergence_benchmarks.py', source, command, elapsed,
      tf_version) + method_lines(plan, tf_version)[1:] + [''] + \
      result_lines(runs) + [
          '', '## Every run', '',
          'The training loss is the mean over the towers of the step\'s '
          'loss (worker 0\'s on a cluster); with one seed every run starts '
          'from the same variables and reads the same images a step, so the '
          'strategies that apply the mean should follow the one-tower '
          'run\'s losses, and those that add (replicated on k towers, a '
          'synchronous cluster) fall faster.', ''] + \
      detail_lines(runs, work_dir)
