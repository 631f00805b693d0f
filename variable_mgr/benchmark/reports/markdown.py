"""How the benchmark scripts report: Markdown tables, verdicts, the header.

A results file is written whole by its script (`write`): the header says
where and how it was measured (`header`: the commit and whether the
working tree differed from it, the machine, the command, TensorFlow), then
tables (`table`) and verdicts that carry the spread of the rounds they
rest on (`spread_text`, `goal_verdict`, `verdict_line`). `--compare` draws
its table with `table` too. Nothing here imports TensorFlow.
"""

import datetime
import os
import platform
import subprocess

MET = 'met'
NOT_MET = '**not met**'


def verdict(ok):
  """'met' or '**not met**'."""
  return MET if ok else NOT_MET


def row(cells):
  """One Markdown table row; an empty cell stays one space wide."""
  return '|' + '|'.join(' %s ' % c if c != '' else ' '
                        for c in cells) + '|'


def table(header, rows, align=None):
  """A Markdown table: the lines of its header, its rule and its rows.

  Args:
    header: the column names.
    rows: lists of cells (strings), one a row.
    align: one 'l' or 'r' a column (default: every column left).
  """
  align = align or 'l' * len(header)
  if len(align) != len(header):
    raise ValueError('align %r has %d columns, the header %d'
                     % (align, len(align), len(header)))
  rule = '|' + ''.join('---:|' if a == 'r' else '---|' for a in align)
  return [row(header), rule] + [row(r) for r in rows]


def spread_text(s, unit='x', digits=2):
  """'median 0.63x, rounds 0.50-0.82' of a `measure.Spread`; one round:
  '0.63x, one round'."""
  if s.rounds == 1:
    return '%.*f%s, one round' % (digits, s.median, unit)
  return 'median %.*f%s, rounds %.*f-%.*f' % (digits, s.median, unit, digits,
                                              s.low, digits, s.high)


def other_side(s, goal, unit='x', digits=2):
  """The rounds of `s` on the other side of 'at most `goal`' from its
  median, e.g. '1 of 5 rounds above 0.65x'; '' when there are none."""
  above = s.count_above(goal)
  ok = s.median <= goal
  count = above if ok else s.rounds - above
  if not count:
    return ''
  return '%d of %d rounds %s %.*f%s' % (
      count, s.rounds, 'above' if ok else 'at or below', digits, goal, unit)


def goal_verdict(s, goal, unit='x', digits=2):
  """The verdict of 'at most `goal`' on the median of `s`, with the rounds
  on the other side of the goal, e.g. 'met (1 of 5 rounds above 0.65x)'."""
  text = verdict(s.median <= goal)
  rounds = other_side(s, goal, unit, digits)
  return text + (' (%s)' % rounds if rounds else '')


def verdict_line(what, s, goal, unit='x', digits=2):
  """'- what: median 1.03x, rounds 0.98-1.12; goal at most 1.05x: met
  (2 of 5 rounds above 1.05x)'."""
  return '- %s: %s; goal at most %.*f%s: %s' % (
      what, spread_text(s, unit, digits), digits, goal, unit,
      goal_verdict(s, goal, unit, digits))


def command_line(script, given):
  """How a report quotes the command that wrote it."""
  return 'python benchmarks/%s' % script + (
      ' ' + ' '.join(given) if given else '')


def _git(root, *args):
  return subprocess.run(
      ['git', '-C', root] + list(args), stdout=subprocess.PIPE,
      stderr=subprocess.DEVNULL, universal_newlines=True,
      check=True).stdout


def source_state(root, paths=('variable_mgr', 'benchmarks', 'setup.py')):
  """Which source a run measures: the commit of `root` and the `paths`
  that differ from it, e.g. '`1a2b3c4d5e6f` (2026-11-30), with uncommitted
  changes to: variable_mgr/base.py'. Call it when the run starts."""
  try:
    commit = _git(root, 'rev-parse', 'HEAD').strip()
    date = _git(root, 'log', '-1', '--format=%cd', '--date=short').strip()
    changed = _git(root, 'status', '--porcelain', '--', *paths)
  except (OSError, subprocess.CalledProcessError):
    return 'unknown (%s is not a git checkout)' % root
  text = '`%s` (%s)' % (commit[:12], date)
  files = sorted(set(line[3:] for line in changed.splitlines() if line))
  if files:
    shown = ', '.join(files[:8]) + (
        ', and %d more' % (len(files) - 8) if len(files) > 8 else '')
    text += ', with uncommitted changes to: %s' % shown
  else:
    text += ', no uncommitted changes to %s' % ', '.join(paths)
  return text


def processors():
  """The processors this process may run on (`nproc`); where the system
  cannot say which, all of them, or None if it cannot say that either."""
  try:
    return len(os.sched_getaffinity(0))
  except AttributeError:  # Not Linux.
    return os.cpu_count()


def machine():
  """(CPU model, processors this process may use (`nproc`), ', N GiB RAM'
  or '') of this machine."""
  cpu = platform.processor() or 'unknown CPU'
  try:
    with open('/proc/cpuinfo') as f:
      for line in f:
        if line.startswith('model name'):
          cpu = line.split(':', 1)[1].strip()
          break
  except OSError:
    pass
  memory = ''
  try:
    with open('/proc/meminfo') as f:
      total_kib = int(f.readline().split()[1])
      memory = ', %.1f GiB RAM' % (total_kib / 1024.0 / 1024.0)
  except (OSError, ValueError, IndexError):
    pass
  return cpu, processors() or 0, memory


def header(title, script, source, command, elapsed, tf_version):
  """The first lines of a results file.

  Args:
    title: the file's title.
    script: the script's file name under benchmarks/.
    source: `source_state()` at the start of the run.
    command: `command_line()` of the run.
    elapsed: the run's wall seconds.
    tf_version: the measuring processes' TensorFlow version.
  """
  cpu, nproc, memory = machine()
  load = os.getloadavg()
  return [
      '# %s' % title, '',
      'Written whole by `benchmarks/%s`: every figure, table and verdict '
      'below comes from the run described here, and the next run replaces '
      'all of it. How to read the figures: docs/results.md, "Reading the '
      'figures".'
      % script, '',
      '- commit: %s' % source,
      '- date: %s' % datetime.datetime.now(datetime.timezone.utc).strftime(
          '%Y-%m-%d %H:%M UTC'),
      '- command: `%s` (%.1f minutes)' % (command, elapsed / 60.0),
      '- TensorFlow %s, Python %s, %s' % (
          tf_version, platform.python_version(), platform.platform()),
      '- machine: %d processors, %s%s; load average at the end of the run '
      '%.1f, %.1f, %.1f (shared with other jobs while measuring)' % (
          (nproc, cpu, memory) + tuple(load)),
  ]


def write(path, lines):
  """Writes `lines` as the whole of the file at `path`."""
  with open(path, 'w') as f:
    f.write('\n'.join(lines).rstrip('\n') + '\n')
