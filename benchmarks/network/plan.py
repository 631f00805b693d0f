"""The network benchmark's plan: its strategies and the kind of bound
each meets, a cell, the full and quick plans and their subsets (the
script's docstring says why); the order of a round and the steps of a
cell are `timing`'s."""

import collections


BATCH = 8
# A workload's synthetic data and batch a tower, where not 'small' and
# BATCH: resnet20 as issue 32 measured it (cifar10, 16 a worker).
DATA_NAMES = {'resnet20': 'cifar10', 'googlenet': 'imagenet'}
BATCHES = {'resnet20': 16, 'googlenet': 32}


def data_name(workload):
  return DATA_NAMES.get(workload, 'small')


def batch(workload):
  """Images a tower of `workload` takes a step."""
  return BATCHES.get(workload, BATCH)


# In-graph replication: a controller task (a host of its own on the
# network) runs one graph over every worker's towers.
DAR = 'distributed_all_reduce (xring)'
# With 2 towers a worker, a two-stage spec: pscpu sums each tensor on the
# worker's CPU 0 (memory copies between its virtual CPUs, no network),
# then the same xring as the one-tower cells runs across one tower a
# worker, so that each host's link carries the ring's 2(W-1)/W x B and the
# 1- and 2-tower cells differ by the inner stage alone. A one-stage xring
# over all 2W towers would cross each host's link with 2(2W-1)/(2W) x B
# each way (1.5 x B at 2 workers).
TWO_STAGE_SPEC = 'pscpu/xring'
DAR_TWO_STAGE = 'distributed_all_reduce (%s)' % TWO_STAGE_SPEC

# label: (flags or the twin's name, kind of bound).
STRATEGIES = collections.OrderedDict([
    ('parameter_server', (['--variable_update', 'parameter_server'],
                          'sync_ps')),
    ('staged parameter_server', (['--variable_update', 'parameter_server',
                                  '--staged_vars'], 'staged_ps')),
    ('distributed_replicated', (['--variable_update',
                                 'distributed_replicated'], 'sync_ps')),
    ('asynchronous parameter_server', (['--variable_update',
                                        'parameter_server',
                                        '--cross_replica_sync=false'],
                                       'async_ps')),
    ('collective_all_reduce', (['--variable_update', 'collective_all_reduce'],
                               'ring')),
    (DAR, (['--variable_update', 'distributed_all_reduce',
            '--all_reduce_spec', 'xring'], 'ring')),
    ('MultiWorkerMirroredStrategy', ('mwms', 'ring')),
    ('ParameterServerStrategy (v1, graph)', ('pss', 'async_ps')),
])
# Diagnostic variants, run only where a goal's cause is measured.
NO_PROBE = 'asynchronous parameter_server, no peer probe'
NO_PROBE_FLAG = '--no_peer_probe'
NO_PROBE_SECS = 1e6
DIAGNOSTICS = collections.OrderedDict([
    (NO_PROBE, (STRATEGIES['asynchronous parameter_server'][0],
                'async_ps')),
])
# Two towers (virtual CPUs) a worker, batch BATCH each.
TWO_TOWERS = ', 2 towers a worker'
TOWERED = collections.OrderedDict([
    ('collective_all_reduce' + TWO_TOWERS, (
        STRATEGIES['collective_all_reduce'][0], 'ring')),
    (DAR_TWO_STAGE + TWO_TOWERS, (
        ['--variable_update', 'distributed_all_reduce', '--all_reduce_spec',
         TWO_STAGE_SPEC], 'ring')),
])
# Bucket sizes beside each strategy's default: the all-reduces' default is
# 256 KiB (gradient_buckets.DEFAULT_BUCKET_BYTES), measured here against one
# gradient a bucket, 64 KiB, and 1 MiB (the default before these cells
# measured it: about the whole of resnet20, so that one bucket waits for
# most of the backward pass); parameter_server pushes one gradient at a time
# unless asked, measured here against 64 KiB, 256 KiB and 1 MiB buckets.
BUCKETS = ', buckets of '
BUCKET_SIZES = collections.OrderedDict([
    ('one gradient', 0), ('64 KiB', 64 << 10), ('256 KiB', 256 << 10),
    ('1 MiB', 1 << 20)])
BUCKET_TRIALS = collections.OrderedDict([
    ('collective_all_reduce', ('one gradient', '64 KiB', '1 MiB')),
    (DAR, ('one gradient', '64 KiB', '1 MiB')),
    ('staged parameter_server', ('64 KiB', '256 KiB', '1 MiB')),
    ('parameter_server', ('64 KiB', '256 KiB', '1 MiB')),
])
BUCKETED = collections.OrderedDict(
    (strategy + BUCKETS + name, (
        STRATEGIES[strategy][0] +
        ['--gradient_bucket_bytes', str(BUCKET_SIZES[name])],
        STRATEGIES[strategy][1]))
    for strategy, names in BUCKET_TRIALS.items() for name in names)


def unbucketed(strategy):
  """The strategy a label of BUCKETED tries other buckets of."""
  return strategy.split(BUCKETS)[0]


# Hosts with a processor of their own: every worker task held to one
# processor of the machine (worker k to processor k, by the task entry's
# PINNED_FLAG; the PS task and the controller keep every processor), as a
# worker host of its own would run, where the shared cells let both
# workers' threads run on both processors. Each strategy with the
# benchmark's inter-op pool (one thread more than the task's processors: 2
# a pinned worker) and with ONE_THREAD inter-op thread a task
# (`--num_inter_threads 1`, the size TensorFlow itself gives a pinned
# worker's pool): the pool runs the graph's ops and also serves the peers'
# requests (a collective's RecvBuf), which wait behind the ops queued there
# while its threads are all busy with the backward pass. Of 2, 3, 4 and 6
# threads a pinned worker, collective_all_reduce's step at 165mbit was
# shortest with 2 and 3 (a trial of 2026-12-06 at a4ebfe3's library, two
# rounds: 78-80 ms against 104-108 ms with one, 82-83 ms with 4, 91-93 ms
# with 6).
PINNED = ', a processor a worker'
PINNED_FLAG = '--pinned_worker'
ONE_THREAD = 1
ONE_POOL = ', %d inter-op thread a task' % ONE_THREAD
PINNED_TRIALS = ('collective_all_reduce', DAR, 'staged parameter_server')
PINNED_LABELS = collections.OrderedDict()
for _strategy in PINNED_TRIALS:
  _flags, _kind = STRATEGIES[_strategy]
  PINNED_LABELS[_strategy + PINNED] = (_flags, _kind)
  PINNED_LABELS[_strategy + PINNED + ONE_POOL] = (
      _flags + ['--num_inter_threads', str(ONE_THREAD)], _kind)


def pinned(strategy):
  """Whether `strategy`'s workers each hold a processor of their own."""
  return PINNED in strategy


def unpinned(strategy):
  """The strategy a label of PINNED_LABELS runs."""
  return strategy.split(PINNED)[0]


# Every label: its flags and kind of bound.
LABELS = collections.OrderedDict(
    list(STRATEGIES.items()) + list(DIAGNOSTICS.items()) +
    list(TOWERED.items()) + list(BUCKETED.items()) +
    list(PINNED_LABELS.items()))
TWINS = collections.OrderedDict([
    ('MultiWorkerMirroredStrategy', 'collective_all_reduce'),
    ('ParameterServerStrategy (v1, graph)', 'asynchronous parameter_server'),
])
OWN = [s for s in STRATEGIES if s not in TWINS]
PS_STRATEGIES = [s for s in OWN if STRATEGIES[s][1] != 'ring']
PARTITION_MIN_BYTES = 1 << 20
PARTITIONED = ', partitioned'

Cell = collections.namedtuple('Cell', 'rate workload workers num_ps strategy')
MBIT, GBIT = 200 * 10**6, 10**9


def base(strategy):
  return strategy.replace(PARTITIONED, '')


def kind(strategy):
  return LABELS[base(strategy)][1]


def towers(strategy):
  """Towers (virtual CPUs, batch BATCH each) a worker of `strategy`."""
  return 2 if strategy.endswith(TWO_TOWERS) else 1


def has_controller(strategy):
  """Whether `strategy`'s cluster has a controller task (a host of its
  own, after the workers) that runs the one graph."""
  return base(strategy).startswith('distributed_all_reduce')


def num_ps_of(strategy, num_ps):
  """MultiWorkerMirroredStrategy and collective_all_reduce run no PS task
  of their own; collective_all_reduce still gets one (the benchmark's
  cluster keeps its global step and queues on PS 0); distributed_all_reduce
  has none (its global step is on worker 0's CPU, its controller is no PS
  task)."""
  if strategy == 'MultiWorkerMirroredStrategy' or has_controller(strategy):
    return 0
  return num_ps


def layout(rate, workload, workers, num_ps, strategies):
  return [Cell(rate, workload, workers, num_ps_of(s, num_ps), s)
          for s in strategies]


# The unshaped cells the bounds with c0 use (the synchronous PS's floor
# needs none).
UNSHAPED_1PS = ['staged parameter_server', 'asynchronous parameter_server',
                'collective_all_reduce']
UNSHAPED_2PS = ['parameter_server', 'staged parameter_server',
                'asynchronous parameter_server']
PSS = 'ParameterServerStrategy (v1, graph)'


def full_cells():
  """The full plan (run_network_benchmarks.py's docstring says what it
  leaves out and why): every cell but the balanced families', which run
  as subsets into results files of their own (every_cell). The goal's
  layout comes last: round 2 runs in the reverse order, so a run cut
  short by --stop_by loses the other cells' second round first."""
  sync_staged_ring = ['parameter_server', 'staged parameter_server',
                      'collective_all_reduce', 'MultiWorkerMirroredStrategy']
  cells = layout(GBIT, 'resnet50_vars', 2, 1, sync_staged_ring)
  cells += layout(GBIT, 'resnet50_vars', 2, 2, ['parameter_server'])
  cells += layout(GBIT, 'lenet', 4, 1, sync_staged_ring)
  cells += layout(GBIT, 'lenet', 2, 1, STRATEGIES)
  cells += layout(GBIT, 'lenet', 2, 2, [
      s + PARTITIONED for s in ('parameter_server',
                                'staged parameter_server')])
  cells += allreduce_cells()
  cells += layout(MBIT, 'lenet', 4, 1, [
      s for s in STRATEGIES if s not in ('distributed_replicated', PSS)])
  cells += layout(MBIT, 'lenet', 4, 2, [
      s + PARTITIONED for s in ('parameter_server',
                                'staged parameter_server')])
  cells += layout(None, 'lenet', 2, 1, UNSHAPED_1PS)
  cells += layout(None, 'lenet', 2, 2, [s + PARTITIONED
                                         for s in UNSHAPED_2PS])
  cells += layout(MBIT, 'lenet', 2, 1, list(STRATEGIES) + [NO_PROBE])
  cells += layout(MBIT, 'lenet', 2, 2, [s + PARTITIONED
                                         for s in PS_STRATEGIES])
  cells += layout(MBIT, 'lenet', 2, 2, ['parameter_server'])
  return cells


def allreduce_cells():
  """distributed_all_reduce beside collective_all_reduce where the other
  layouts of the full plan do not already hold them: at 1gbit, 4 workers
  with one tower a worker; with 2 towers a worker at 200mbit and 1gbit,
  2 and 4 workers; and their c0 on unshaped links, 2 and 4 workers."""
  cells = layout(GBIT, 'lenet', 4, 1, [DAR])
  for rate in (MBIT, GBIT):
    for workers in (2, 4):
      cells += layout(rate, 'lenet', workers, 1, TOWERED)
  cells += layout(None, 'lenet', 2, 1, [DAR] + list(TOWERED))
  cells += layout(None, 'lenet', 4, 1, ['collective_all_reduce', DAR] +
                  list(TOWERED))
  return cells


# The balanced families (issue 32): models whose compute and transfer are
# comparable. The first, resnet20 on cifar10 (BALANCED_BYTES of
# variables), 2 workers, 1 PS. Each strategy at three rates where its bound
# is about 2x, 1x and 0.5x of its c0 (`balanced_rates`): from the step each
# measured on unshaped links of these machines (BALANCED_C0_MS: the medians
# of `--subset c0`, NETWORK_C0_RESULTS.md at 188451e, to the ms; measure
# them again when the machine changes) and a single TCP stream's goodput of
# 0.96 x the rate. A bound's bytes a step: the ring's 2(W-1)/W x B is B at
# 2 workers, the staged PS's W x B twice that, the synchronous PS's (and
# distributed_replicated's) 2 x W x B four times; two towers a worker keep
# the ring's bytes and about double the compute.
BALANCED_WORKLOAD = 'resnet20'
BALANCED_BYTES = 1089896
BALANCED_GOODPUT = 0.96
BALANCED_RATIOS = (2.0, 1.0, 0.5)
BOUND_BYTES_TIMES = {'ring': 1, 'staged_ps': 2, 'sync_ps': 4}
BALANCED_C0_MS = collections.OrderedDict(
    [('parameter_server', 214), ('staged parameter_server', 243),
     ('distributed_replicated', 239), ('collective_all_reduce', 195),
     (DAR, 148), ('collective_all_reduce' + TWO_TOWERS, 346),
     (DAR_TWO_STAGE + TWO_TOWERS, 277)])
# The bucket sizes and the pinned cells at their strategy's rates: a row
# beside its default or shared twin at the same link.
BALANCED_LABEL_C0_MS = collections.OrderedDict(BALANCED_C0_MS)
BALANCED_LABEL_C0_MS.update(
    (label, BALANCED_C0_MS[unbucketed(label)]) for label in BUCKETED)
BALANCED_LABEL_C0_MS.update(
    (label, BALANCED_C0_MS[unpinned(label)]) for label in PINNED_LABELS)


# The second balanced family: googlenet on imagenet's synthetic images
# (GOOGLENET_BYTES of variables with 1001 classes, 28.0 MB; batch 32 a
# worker, one tower), a convolutional model with real compute and tens of MB
# of variables, for the strategies with one tower a worker. Its c0
# (GOOGLENET_C0_MS): the medians of `--subset googlenet_c0`
# (NETWORK_GOOGLENET_C0_RESULTS.md at 52ceafa, to 10 ms; measure them again
# when the machine changes); batch 32 keeps the synchronous PS's 0.5x rate
# under 1 Gbit/s.
GOOGLENET = 'googlenet'
GOOGLENET_BYTES = 27998308
GOOGLENET_C0_MS = collections.OrderedDict(
    [('parameter_server', 7170), ('staged parameter_server', 7190),
     ('distributed_replicated', 7570), ('collective_all_reduce', 7820),
     (DAR, 7570)])

# A family: its workload, variables' bytes, c0 (ms) a strategy, and the
# three rates (mbit) a strategy.
Family = collections.namedtuple('Family', 'workload bytes c0_ms rates')


def balanced_rates(nbytes, strategy, c0_ms):
  """The rates in whole mbit at which `strategy`'s bound over `nbytes` of
  variables is BALANCED_RATIOS of its c0, slowest first."""
  bits = 8.0 * nbytes * BOUND_BYTES_TIMES[kind(strategy)]
  c0 = c0_ms / 1000.0
  return tuple(int(round(bits / (ratio * c0 * BALANCED_GOODPUT) / 1e6))
               for ratio in BALANCED_RATIOS)


def family(workload, nbytes, c0_ms):
  return Family(workload, nbytes, c0_ms, collections.OrderedDict(
      (strategy, balanced_rates(nbytes, strategy, c0))
      for strategy, c0 in c0_ms.items()))


FAMILIES = collections.OrderedDict((f.workload, f) for f in (
    family(BALANCED_WORKLOAD, BALANCED_BYTES, BALANCED_LABEL_C0_MS),
    family(GOOGLENET, GOOGLENET_BYTES, GOOGLENET_C0_MS)))
BALANCED_RATES = FAMILIES[BALANCED_WORKLOAD].rates


def balanced_cells():
  """The balanced families: every strategy of a family at its three
  rates (a bucket size at the middle one alone, where its bound is about
  c0), then each on unshaped links (its c0)."""
  cells = []
  for f in FAMILIES.values():
    for strategy, rates in f.rates.items():
      for rate in rates[1:2] if strategy in BUCKETED else rates:
        cells += layout(rate * 10**6, f.workload, 2, 1, [strategy])
    cells += layout(None, f.workload, 2, 1, list(f.rates))
  return cells


# The kinds whose transfers start only once the loss is computed (the
# all-reduces, the staged PS's pushes): their unshaped cells of a balanced
# family trace a step, to put the forward pass f beside c0 (balanced.py's
# within-a-step floor, max(c0, f + bound)). The synchronous PS pulls before
# its forward pass, so no such floor holds for it.
FLOOR_KINDS = ('ring', 'staged_ps')


def traced(cell):
  """Whether `cell`'s run traces a step for its forward pass's share."""
  return (cell.rate is None and cell.workload in FAMILIES and
          cell.strategy not in TWINS and kind(cell.strategy) in FLOOR_KINDS)


def quick_cells():
  cells = layout(MBIT, 'lenet', 2, 1, STRATEGIES)
  cells += layout(MBIT, 'lenet', 2, 1, TOWERED)
  cells += layout(MBIT, 'lenet', 2, 2, [s + PARTITIONED
                                         for s in PS_STRATEGIES])
  cells += layout(MBIT, 'lenet', 2, 1, [NO_PROBE])
  cells += layout(None, 'lenet', 2, 1, ['staged parameter_server',
                                        'asynchronous parameter_server',
                                        'collective_all_reduce', DAR])
  cells += layout(None, 'lenet', 2, 2, ['parameter_server' + PARTITIONED,
                                        'staged parameter_server' +
                                        PARTITIONED])
  return cells


def every_cell():
  """Every cell a run of the script can measure: the full plan's, then the
  balanced families', which only their subsets run (all of them in one
  run would take hours)."""
  return full_cells() + balanced_cells()


FULL = dict(name='full', cells=full_cells, every=every_cell, rounds=2,
            steps={'lenet': 5, 'resnet50_vars': 3, 'resnet20': 5,
                   GOOGLENET: 4},
            async_steps={'lenet': 10, 'resnet50_vars': 3, 'resnet20': 5,
                         GOOGLENET: 4},
            warmup={'lenet': 1, 'resnet50_vars': 1, 'resnet20': 2,
                    GOOGLENET: 2})
QUICK = dict(name='quick', cells=quick_cells, rounds=2,
             steps={'lenet': 4}, async_steps={'lenet': 8},
             warmup={'lenet': 1})



class SubsetError(ValueError):
  """--subset names no subset of the plan."""


# name: (what it holds, whether a cell of the plan is in it).
SUBSETS = collections.OrderedDict([
    ('allreduce', (
        'distributed_all_reduce and collective_all_reduce, one and two '
        'towers a worker, lenet, shaped and unshaped',
        lambda cell: cell.workload == 'lenet' and base(cell.strategy) in (
            ['collective_all_reduce', DAR] + list(TOWERED)))),
    ('balanced', (
        'every synchronous cluster strategy on resnet20, whose compute and '
        'transfer are comparable, at three rates each and unshaped, with '
        'its default buckets',
        lambda cell: cell.workload == BALANCED_WORKLOAD and
        not pinned(cell.strategy) and cell.strategy not in BUCKETED)),
    ('pinned', (
        'the all-reduces and the staged PS of the balanced family with '
        'every worker on a processor of its own, with the benchmark\'s '
        'inter-op pools and with %d inter-op thread a task' % ONE_THREAD,
        lambda cell: cell.workload == BALANCED_WORKLOAD and
        pinned(cell.strategy))),
    ('googlenet', (
        'the synchronous cluster strategies with one tower a worker on '
        'googlenet, whose compute and 28 MB of variables are comparable, at '
        'three rates each and unshaped',
        lambda cell: cell.workload == GOOGLENET)),
    ('c0', (
        'the balanced family\'s strategies on resnet20 on unshaped links, '
        'with their default buckets and inter-op pools: the c0 its rates '
        'are set from (BALANCED_C0_MS)',
        lambda cell: cell.rate is None and
        cell.workload == BALANCED_WORKLOAD and cell.strategy in
        BALANCED_C0_MS)),
    ('googlenet_c0', (
        'the googlenet family\'s strategies on unshaped links: the c0 its '
        'rates are set from (GOOGLENET_C0_MS)',
        lambda cell: cell.rate is None and cell.workload == GOOGLENET)),
    ('buckets', (
        'the balanced cells of the strategies with buckets, each bucket '
        'size, at the rate where the bound is about c0 and unshaped',
        lambda cell: cell.workload == BALANCED_WORKLOAD and
        unbucketed(cell.strategy) in BUCKET_TRIALS and cell.rate in (
            None, BALANCED_RATES[cell.strategy][1] * 10**6))),
])


def subset_plan(plan, name):
  """`plan` with only the cells of subset `name` (SUBSETS) among every cell
  it can run (its `every`, else its cells), in that order; its rounds,
  steps and order rules unchanged.

  Raises:
    SubsetError: `name` is not a subset's name.
  """
  if name not in SUBSETS:
    raise SubsetError(
        '--subset %s: no such subset of the plan; the subsets are %s (%s); '
        'pass one of them, or no --subset for every cell.' % (
            name, ', '.join(SUBSETS), '; '.join(
                '%s: %s' % (n, d) for n, (d, _) in SUBSETS.items())))
  every = plan.get('every', plan['cells'])
  keep = SUBSETS[name][1]
  return dict(plan, name='%s, subset %s' % (plan['name'], name),
              subset=name, cells=lambda: [c for c in every() if keep(c)])


def task_count(cell):
  """Hosts of the cell's network: PS tasks, workers, the controller."""
  return cell.num_ps + cell.workers + (1 if has_controller(cell.strategy)
                                       else 0)


def describe(cell):
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  return '%s, %s, %d workers, %d PS, %s' % (
      netns.rate_text(cell.rate) if cell.rate else 'unshaped', cell.workload,
      cell.workers, cell.num_ps, cell.strategy)


def key(cell):
  return '|'.join(str(x) for x in cell)
