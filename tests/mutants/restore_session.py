"""Rebuilds a population's session from its report in docs/tests.md.

    python3 tests/mutants/restore_session.py library

Sessions stay in the untracked tests/mutants/sessions/, so a new clone
has none, and `run_population.py --rerun-survivors` needs one. The report
names what the run was (commit, size, seed, limit, minutes) and every
mutant that was not killed; the rest of the sample was killed. This
script makes the session again at that commit (cosmic-ray init and the
same filters and seeded sample as run_population.py), checks that every
mutant the report lists is in the sample (else the sample differs and it
stops), and records each sampled mutant's outcome as the report gives it:
killed, timed out, survived or uncovered, with "restored from the report"
in its output: the last list of the report names the mutants neither
killed nor equivalent, and a rerun's list the equivalent ones (which
stay survivors, as the report counts them). The reruns' own lines are not
restored; the outcomes they led to are.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from cosmic_ray.work_db import WorkDB
from cosmic_ray.work_db import use_db
from cosmic_ray.work_item import TestOutcome
from cosmic_ray.work_item import WorkerOutcome
from cosmic_ray.work_item import WorkResult

import report
import run_population

RESTORED = 'restored from the report in docs/tests.md'
_RUN = re.compile(
    r'run_population\.py \w+ --size (\d+) --seed (\d+) --timeout (\d+)'
    r'(?: --workers (\d+))?')
_AT = re.compile(r'at commit (\w+) \(started ([^)]*)\): \d+ of \d+ sampled '
                 r'mutants run in (\d+) minutes')
_SURVIVOR = re.compile(r'^- `([^`]+)`( \((timed out|uncovered)\))?$')
_EQUIVALENT = re.compile(r'^- `([^`]+)`: equivalent$', re.M)
_SURVIVORS_HEADING = 'Survivors at the commit measured'


def read_section(population, doc=report.DOC):
  """(meta, {survivor name: 'survived' | 'timeout' | 'uncovered'})."""
  with open(doc) as f:
    text = f.read()
  begin = '<!-- mutants:%s:begin -->' % population
  end = '<!-- mutants:%s:end -->' % population
  if begin not in text or end not in text:
    raise SystemExit('restore_session: no %s section in %s' % (population, doc))
  section = text[text.index(begin):text.index(end)]
  run, at = _RUN.search(section), _AT.search(section)
  if not (run and at):
    raise SystemExit('restore_session: the %s section names no run' %
                     population)
  commit = subprocess.check_output(['git', 'rev-parse', at.group(1)],
                                   cwd=report.REPO,
                                   universal_newlines=True).strip()
  meta = {'population': population, 'commit': commit,
          'size': int(run.group(1)), 'seed': int(run.group(2)),
          'timeout': int(run.group(3)), 'started': at.group(2),
          'seconds': 60.0 * int(at.group(3)), 'restored': True,
          'workers': int(run.group(4) or 1)}
  kinds = {None: 'survived', 'timed out': 'timeout', 'uncovered': 'uncovered'}
  survivors = {}
  # The last list holds the mutants not killed and not equivalent, as the
  # run and its reruns left them; a rerun's list marks the equivalent ones.
  final = section[section.index(_SURVIVORS_HEADING):]
  for line in final.splitlines():
    match = _SURVIVOR.match(line)
    if match:
      survivors[match.group(1)] = kinds[match.group(3)]
  for match in _EQUIVALENT.finditer(section):
    survivors.setdefault(match.group(1), 'survived')
  # A report without reruns names its equivalent mutants nowhere: they
  # survived (no test can kill them), and the report counts them apart.
  for name in report.load_equivalents():
    survivors.setdefault(name, 'survived')
  return meta, survivors


def _result(kind):
  if kind == 'killed':
    return WorkResult(WorkerOutcome.NORMAL, RESTORED, TestOutcome.KILLED)
  output = {'timeout': 'timeout', 'uncovered': RESTORED + ' (uncovered)',
            'survived': RESTORED}[kind]
  return WorkResult(WorkerOutcome.NORMAL, output, TestOutcome.SURVIVED)


def restore(population):
  meta, survivors = read_section(population)
  os.makedirs(run_population.SESSIONS, exist_ok=True)
  session = os.path.join(run_population.SESSIONS, population + '.sqlite')
  if os.path.exists(session):
    os.remove(session)
  work = tempfile.mkdtemp(prefix='variable_mgr_restore_')
  try:
    copy = os.path.join(work, 'copy')
    run_population.copy_commit(meta['commit'], copy)
    config = os.path.join(work, 'config.toml')
    run_population.write_config(config, population, copy, meta['timeout'])
    run_population.make_session(config, session, copy, meta['size'],
                                 meta['seed'])
  finally:
    shutil.rmtree(work, ignore_errors=True)
  with use_db(session, WorkDB.Mode.open) as db:
    results = dict(db.results)
    sampled = [item for item in db.work_items
               if item.job_id not in results]
    names = dict((report.mutant_name(item.mutations[0]), item)
                 for item in sampled)
    equivalents = report.load_equivalents()
    missing = sorted(n for n in set(survivors) - set(names)
                     if n not in equivalents)
    if missing or len(sampled) != meta['size']:
      raise SystemExit('restore_session: the sample made again differs from '
                       'the report (%d sampled, %d in the report; not in it: '
                       '%s)' % (len(sampled), meta['size'],
                                ', '.join(missing) or 'none'))
    for name, item in names.items():
      db.set_result(item.job_id, _result(survivors.get(name, 'killed')))
  with open(os.path.join(run_population.SESSIONS, population + '.json'),
            'w') as f:
    json.dump(meta, f, indent=1)
  print('restore_session: %s at %s, %d sampled, %d not killed'
        % (population, meta['commit'][:10], len(names), len(survivors)))


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('population', choices=sorted(run_population.POPULATIONS))
  restore(parser.parse_args(argv).population)
  return 0


if __name__ == '__main__':
  sys.exit(main())
