"""Scores a population's mutation run and writes it into docs/tests.md.

    python3 tests/mutants/report.py library      # or benchmark
    python3 tests/mutants/report.py library --survivors   # their diffs too

Reads tests/mutants/sessions/POPULATION.sqlite (cosmic-ray's session) and
.json (what run_population.py ran), and tests/mutants/equivalent.txt. The
score is killed / (sampled - equivalent), per module and overall, over the
mutants run (an interrupted run's pending ones left out, and counted); a
mutant whose tests ran out of time is not killed (a slow run proves
nothing) and is counted apart.
The section between the population's markers in docs/tests.md
(`<!-- mutants:POPULATION:begin -->` and `...:end -->`) is replaced by the
report; the rest of the file stays as it is.

equivalent.txt: one mutant a line, `PATH:LINE:COLUMN OPERATOR OCCURRENCE |
why no input can tell it from the code` (as the report's survivor list
names them); `#` starts a comment line.
"""

import argparse
import json
import os
import sys

from cosmic_ray.work_db import WorkDB
from cosmic_ray.work_db import use_db
from cosmic_ray.work_item import TestOutcome
from cosmic_ray.work_item import WorkerOutcome

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SESSIONS = os.path.join(HERE, 'sessions')
EQUIVALENT = os.path.join(HERE, 'equivalent.txt')
DOC = os.path.join(REPO, 'docs', 'tests.md')
GOALS = {'library': 0.95, 'benchmark': 0.90}
FULL_SIZE = 400


def mutant_name(mutation):
  return '%s:%d:%d %s %d' % (mutation.module_path, mutation.start_pos[0],
                             mutation.start_pos[1], mutation.operator_name,
                             mutation.occurrence)


def load_equivalents(path=EQUIVALENT):
  """{mutant name: reason}."""
  found = {}
  if not os.path.exists(path):
    return found
  with open(path) as f:
    for number, line in enumerate(f, 1):
      line = line.strip()
      if not line or line.startswith('#'):
        continue
      name, sep, reason = line.partition('|')
      if not sep or not reason.strip():
        raise SystemExit('%s:%d: expected "PATH:LINE:COLUMN OPERATOR '
                         'OCCURRENCE | reason"' % (path, number))
      found[' '.join(name.split())] = reason.strip()
  return found


def classify(result):
  """'killed', 'timeout', 'survived', 'uncovered', 'pending' or 'skipped'."""
  if result is None:
    return 'pending'
  if result.worker_outcome == WorkerOutcome.SKIPPED:
    return 'skipped'
  output = result.output or ''
  if output == 'timeout' or 'SURVIVED: TIMEOUT' in output:
    return 'timeout'  # run_mutant_tests.py's limit, or cosmic-ray's own.
  if result.test_outcome == TestOutcome.SURVIVED:
    return 'uncovered' if '(uncovered)' in output else 'survived'
  return 'killed'


def tally(session):
  """[(work item, result or None, class)] of the sampled mutants."""
  with use_db(session, WorkDB.Mode.open) as db:
    results = dict(db.results)
    rows = []
    for item in db.work_items:
      result = results.get(item.job_id)
      kind = classify(result)
      if kind != 'skipped':
        rows.append((item, result, kind))
  rows.sort(key=lambda r: mutant_name(r[0].mutations[0]))
  return rows


def _score(counts):
  denominator = counts['sampled'] - counts['pending'] - counts['equivalent']
  if not denominator:
    return 'n/a'
  return '%.0f%%' % (100.0 * counts['killed'] / denominator)


def _minutes(seconds):
  minutes = int(round(seconds / 60.0))
  return '%d minute%s' % (minutes, '' if minutes == 1 else 's')


def build_section(population, meta, rows, equivalents):
  by_module = {}
  survivors = []
  for item, _, kind in rows:
    mutation = item.mutations[0]
    module = str(mutation.module_path)
    counts = by_module.setdefault(module, dict.fromkeys(
        ['sampled', 'killed', 'timeout', 'survived', 'uncovered',
         'equivalent', 'pending'], 0))
    counts['sampled'] += 1
    name = mutant_name(mutation)
    if kind in ('survived', 'uncovered', 'timeout') and name in equivalents:
      counts['equivalent'] += 1
    else:
      counts[kind] += 1
      if kind in ('survived', 'uncovered', 'timeout'):
        survivors.append((name, kind))
  total = dict.fromkeys(next(iter(by_module.values())) if by_module else
                        ['sampled', 'killed', 'timeout', 'survived',
                         'uncovered', 'equivalent', 'pending'], 0)
  for counts in by_module.values():
    for key, value in counts.items():
      total[key] += value
  ran = total['sampled'] - total['pending']
  pilot = 0 < meta['size'] < FULL_SIZE
  lines = []
  title = {'library': 'The library', 'benchmark': 'The benchmark'}[population]
  lines.append('### %s%s' % (title, ' (a pilot)' if pilot else ''))
  lines.append('')
  if pilot:
    lines.append('A pilot of %d mutants, not the run of at least %d that '
                 'the goal is measured on.' % (meta['size'], FULL_SIZE))
    lines.append('')
  lines.append('Written by `python3 tests/mutants/report.py %s` from the '
               'run of' % population)
  lines.append('')
  lines.append('```bash')
  workers = meta.get('workers', 1)
  lines.append('nice -n 10 python3 tests/mutants/run_population.py %s '
               '--size %d --seed %d --timeout %d%s'
               % (population, meta['size'], meta['seed'], meta['timeout'],
                  ' --workers %d' % workers if workers > 1 else ''))
  lines.append('```')
  lines.append('')
  lines.append('at commit %s (started %s): %d of %d sampled mutants run in '
               '%s, %.0f s a mutant, on 2 shared cores%s; '
               'stratified by module, seed %d. Goal: %d%%.'
               % (meta['commit'][:10], meta.get('started', '?'), ran,
                  total['sampled'], _minutes(meta['seconds']),
                  meta['seconds'] / max(ran, 1),
                  ' (%d mutants at once)' % workers if workers > 1 else '',
                  meta['seed'],
                  100 * GOALS[population]))
  outcome = dict((mutant_name(item.mutations[0]), kind)
                 for item, _, kind in rows)
  if meta.get('restored'):
    lines.append('')
    lines.append('The session was made again from this section, as that run '
                 'wrote it (`restore_session.py`), before the reruns below; '
                 'a rerun stopped before its end went on in the next one.')
  for rerun in meta.get('reruns', ()):
    lines.append('')
    lines.append('The %d survivors run again with the tests of commit %s '
                 '(the package unchanged; %s): `run_population.py '
                 '%s --rerun-survivors --timeout %d`. Now:'
                 % (rerun['survivors'], rerun['commit'][:10],
                    _minutes(rerun.get('seconds', 0)), population,
                    rerun.get('timeout', meta['timeout'])))
    lines.append('')
    for name in rerun.get('names', ()):
      now = outcome.get(name, '?')
      if now in ('survived', 'uncovered', 'timeout') and name in equivalents:
        now = 'equivalent'
      lines.append('- `%s`: %s' % (name, now))
  lines.append('')
  lines.append('| module | sampled | killed | timed out | survived | '
               'uncovered | equivalent | score |')
  lines.append('|---|---:|---:|---:|---:|---:|---:|---:|')
  for module in sorted(by_module):
    c = by_module[module]
    lines.append('| `%s` | %d | %d | %d | %d | %d | %d | %s |' % (
        module, c['sampled'], c['killed'], c['timeout'], c['survived'],
        c['uncovered'], c['equivalent'], _score(c)))
  lines.append('| all | %d | %d | %d | %d | %d | %d | %s |' % (
      total['sampled'], total['killed'], total['timeout'], total['survived'],
      total['uncovered'], total['equivalent'], _score(total)))
  lines.append('')
  lines.append('Score: killed / (sampled - equivalent). "Timed out": the '
               'tests ran longer than the limit, not killed. "Uncovered": no '
               'test runs the line (a survivor). '
               '%s' % ('%d not run yet. ' % total['pending']
                       if total['pending'] else ''))
  if survivors:
    lines.append('')
    lines.append('Survivors at the commit measured (each to be killed by a '
                 'test or listed in `tests/mutants/equivalent.txt` with a '
                 'reason):')
    lines.append('')
    for name, kind in survivors:
      lines.append('- `%s`%s' % (name, {'uncovered': ' (uncovered)',
                                        'timeout': ' (timed out)'}.get(kind,
                                                                      '')))
  return '\n'.join(lines) + '\n'


def write_section(population, section, doc=DOC):
  begin = '<!-- mutants:%s:begin -->' % population
  end = '<!-- mutants:%s:end -->' % population
  with open(doc) as f:
    text = f.read()
  if begin not in text or end not in text:
    raise SystemExit('%s has no %s ... %s markers' % (doc, begin, end))
  head, rest = text.split(begin, 1)
  _, tail = rest.split(end, 1)
  with open(doc, 'w') as f:
    f.write(head + begin + '\n' + section + end + tail)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('population', choices=sorted(GOALS))
  parser.add_argument('--survivors', action='store_true',
                      help='print each survivor\'s diff and test output')
  parser.add_argument('--no-write', action='store_true',
                      help='print the section, leave docs/tests.md')
  args = parser.parse_args(argv)
  session = os.path.join(SESSIONS, args.population + '.sqlite')
  with open(os.path.join(SESSIONS, args.population + '.json')) as f:
    meta = json.load(f)
  equivalents = load_equivalents()
  rows = tally(session)
  section = build_section(args.population, meta, rows, equivalents)
  print(section)
  if args.survivors:
    for item, result, kind in rows:
      name = mutant_name(item.mutations[0])
      if kind in ('survived', 'uncovered', 'timeout') and (
          name not in equivalents):
        print('=== %s (%s)\n%s\n%s' % (name, kind, result.diff,
                                       (result.output or '')[-1500:]))
  if not args.no_write:
    write_section(args.population, section)
  return 0


if __name__ == '__main__':
  sys.exit(main())
