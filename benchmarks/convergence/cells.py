"""The convergence benchmark's cells: what is held fixed (model, data,
global batch, rate, seed), the strategies, a cell and its batch a tower,
the plans, and what a step applies (README, "Strategies")."""

import collections
import re

MODEL = 'lenet'
DATA_NAME = 'digits'
GLOBAL_BATCH = 64
LEARNING_RATE = 0.05
SEED = 1234
EVAL_IMAGES = 300
# The goal: within this many percentage points below the reference, and
# above the floor.
GOAL_POINTS = 1.0
FLOOR = 0.90
NUM_WORKERS = 2
NUM_PS = 1

# label -> the strategy's flags.
LOCAL_STRATEGIES = collections.OrderedDict([
    ('independent', ['--variable_update=independent']),
    ('parameter_server', ['--variable_update=parameter_server']),
    ('staged parameter_server', ['--variable_update=parameter_server',
                                 '--staged_vars']),
    ('replicated', ['--variable_update=replicated']),
    ('replicated, xring', ['--variable_update=replicated',
                           '--all_reduce_spec=xring']),
    ('distributed_replicated', ['--variable_update=distributed_replicated']),
])
CLUSTER_STRATEGIES = collections.OrderedDict([
    ('parameter_server', ['--variable_update=parameter_server']),
    ('staged parameter_server', ['--variable_update=parameter_server',
                                 '--staged_vars']),
    ('distributed_replicated', ['--variable_update=distributed_replicated']),
    ('asynchronous parameter_server', ['--variable_update=parameter_server',
                                       '--cross_replica_sync=false']),
    ('collective_all_reduce', ['--variable_update=collective_all_reduce']),
])
ASYNCHRONOUS = ('asynchronous parameter_server',)


class Cell(collections.namedtuple('Cell', 'label towers workers seed')):
  """One training run: a strategy's label, towers a worker, workers (0: a
  run on one machine, no cluster), the seed."""

  __slots__ = ()

  @property
  def cluster(self):
    return self.workers > 0

  @property
  def flags(self):
    table = CLUSTER_STRATEGIES if self.cluster else LOCAL_STRATEGIES
    return list(table[self.label])

  @property
  def replicas(self):
    """Towers over every worker."""
    return self.towers * max(self.workers, 1)

  @property
  def batch_per_tower(self):
    return GLOBAL_BATCH // self.replicas

  @property
  def key(self):
    """A name for the cell's files and its JSON."""
    where = 'cluster%d' % self.workers if self.cluster else 'local'
    return re.sub(r'[^a-z0-9]+', '_', '%s_%s_%dt_seed%d' % (
        where, self.label, self.towers, self.seed))


REFERENCE = Cell('independent', 1, 0, SEED)

FULL = dict(steps=400, towers=(1, 2, 4), local=tuple(LOCAL_STRATEGIES),
            cluster=tuple(CLUSTER_STRATEGIES), extra_seeds=4)
QUICK = dict(steps=400, towers=(2,), local=('replicated',),
             cluster=('parameter_server',), extra_seeds=0)


def plan_cells(plan):
  """The cells of `plan`, the reference first: every local strategy on
  every tower count, then the clusters, then the reference's other seeds."""
  cells = [REFERENCE]
  for label in plan['local']:
    for towers in plan['towers']:
      cell = Cell(label, towers, 0, SEED)
      if cell != REFERENCE:
        cells.append(cell)
  cells += [Cell(label, 1, NUM_WORKERS, SEED) for label in plan['cluster']]
  cells += [REFERENCE._replace(seed=SEED + i)
            for i in range(1, plan['extra_seeds'] + 1)]
  for cell in cells:
    if GLOBAL_BATCH % cell.replicas:
      raise ValueError('%s: %d towers do not split a global batch of %d' % (
          cell.label, cell.replicas, GLOBAL_BATCH))
  return cells


def update_scale(cell):
  """How many times the mean gradient of a step's images the variables
  move by, at the given rate (README, "Strategies"): replicated sums its
  towers' gradients; a synchronous cluster's workers each apply the mean of
  their own towers and the updates add up; the rest apply the mean."""
  if cell.label.startswith('replicated'):
    return cell.towers
  if cell.cluster and cell.label not in ASYNCHRONOUS + (
      'collective_all_reduce',):
    return cell.workers
  return 1


def update_text(cell):
  """The table's words for what a step applies."""
  if cell.label == 'independent':
    return "each copy its share's mean" if cell.towers > 1 else 'the mean'
  if cell.label in ASYNCHRONOUS:
    return "each worker its share's mean, on its own"
  scale = update_scale(cell)
  stale = ', one step stale' if cell.label.startswith('staged') else ''
  if scale == 1:
    return 'the mean' + stale
  what = 'sum of the towers' if cell.label.startswith('replicated') else (
      'sum of the workers\' means')
  return '%s: %d x the mean%s' % (what, scale, stale)


def examples_seen(cell, steps):
  """Training images behind the checkpointed variables: the global batch
  every step, but tower 0's share of it for independent (the checkpoint is
  tower 0's copy)."""
  if cell.label == 'independent':
    return steps * cell.batch_per_tower
  return steps * GLOBAL_BATCH


# Steps whose training loss the detail table gives (1-based).
LOSS_STEPS = (1, 50, 100, 200, 400)


def describe(cell):
  where = ('%d workers x %d tower' % (cell.workers, cell.towers)
           if cell.cluster else '%d tower%s' % (
               cell.towers, '' if cell.towers == 1 else 's'))
  return '%s, %s, seed %d' % (cell.label, where, cell.seed)
