"""A cosmic-ray session filter: keeps a seeded random sample, stratified by
module, and skips the rest.

    python3 tests/mutants/sample.py SESSION.sqlite --size N --seed S

Of the mutants still pending (after the operator, pragma and message
filters), each module keeps a share of N proportional to its own count
(largest remainders; every module with a mutant keeps at least one, so a
sample smaller than the number of modules is refused), drawn with
random.Random(S) from the module's mutants in a fixed order (path, line,
column, operator, occurrence). The rest get cosmic-ray's SKIPPED outcome
with "not in the sample" as output. The same session, N and S give the
same sample.
"""

import argparse
import random
import sys

from cosmic_ray.work_db import WorkDB
from cosmic_ray.work_db import use_db
from cosmic_ray.work_item import WorkerOutcome
from cosmic_ray.work_item import WorkResult

NOT_SAMPLED = 'not in the sample'


def _key(item):
  m = item.mutations[0]
  return (str(m.module_path), tuple(m.start_pos), m.operator_name,
          m.occurrence)


def allocate(counts, size):
  """{module: how many to keep}: at least one a module, the rest
  proportional to `counts` by largest remainders."""
  if size < len(counts):
    raise ValueError('a sample of %d cannot hold one mutant of each of %d '
                     'modules; ask for --size %d or more'
                     % (size, len(counts), len(counts)))
  total = sum(counts.values())
  if size >= total:
    return dict(counts)
  shares = {m: 1 + (size - len(counts)) * (c - 1) / float(total -
                                                            len(counts))
            for m, c in counts.items()}
  keep = {m: min(counts[m], int(s)) for m, s in shares.items()}
  left = size - sum(keep.values())
  for m in sorted(shares, key=lambda m: (int(shares[m]) - shares[m], m)):
    if left <= 0:
      break
    if keep[m] < counts[m]:
      keep[m] += 1
      left -= 1
  return keep


def sample_session(db: WorkDB, size, seed):
  """Skips every pending mutant outside the sample; {module: kept}."""
  by_module = {}
  for item in sorted(db.pending_work_items, key=_key):
    by_module.setdefault(str(item.mutations[0].module_path), []).append(item)
  keep = allocate({m: len(items) for m, items in by_module.items()}, size)
  rng = random.Random(seed)
  for module in sorted(by_module):
    items = by_module[module]
    chosen = set(id(i) for i in rng.sample(items, keep[module]))
    for item in items:
      if id(item) not in chosen:
        db.set_result(item.job_id, WorkResult(
            output=NOT_SAMPLED, worker_outcome=WorkerOutcome.SKIPPED))
  return keep


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('session')
  parser.add_argument('--size', type=int, required=True)
  parser.add_argument('--seed', type=int, required=True)
  args = parser.parse_args(argv)
  with use_db(args.session, WorkDB.Mode.open) as db:
    keep = sample_session(db, args.size, args.seed)
  print('sample: %d mutants over %d modules (seed %d)'
        % (sum(keep.values()), len(keep), args.seed))
  return 0


if __name__ == '__main__':
  sys.exit(main())
