#!/usr/bin/env python
"""Measures the distributed strategies on shaped links against their bounds.

    python benchmarks/run_network_benchmarks.py            # the full run
    python benchmarks/run_network_benchmarks.py --quick    # a check
    python benchmarks/run_network_benchmarks.py --plan     # its cells, timed
    python benchmarks/run_network_benchmarks.py --stop_by 18:00
    python /tmp/clone/benchmarks/run_network_benchmarks.py \
        --results_dir benchmarks         # a clean clone measured, the
                                         # results written here

Every cell is a cluster of the benchmark's own runner on the namespace
network of `--launch_local_cluster --network_rate`
(`variable_mgr.benchmark.cluster.netns`): each task a network namespace of
its own, its link shaped to the rate both ways, one tower (one virtual CPU)
a worker, batch 8 a tower. Beside them, on the same kind of network with
the same model, batch and learning rate, tf.distribute's twins
(`network_twins.py`, TensorFlow 2): MultiWorkerMirroredStrategy (ring
collectives, a custom loop in tf.function) against collective_all_reduce,
and `tf.compat.v1.distribute.experimental.ParameterServerStrategy` (graph
mode with a session; TF 2.21 refuses it only when executing eagerly; it is
asynchronous between workers) against the asynchronous parameter_server.
It needs Linux and root; every namespace it makes is removed after each
cell, on failure too.

Rounds: every cell runs once a round, each time on a fresh network and
cluster; round 1 in the plan's order, round 2 in the reverse order (more
rounds: rotated by a share of the plan every two), so that a change of the
machine's load reaches the cells alike. The machine is shared: other jobs
run on the same two processors during a run. A cell's step is reported per
round and as the median over the rounds with their range; every ratio (a
step over its bound, a 2-PS step over its 1-PS step, a twin over its
strategy) is taken within a round, the bounds with the goodput measured at
the start of that round. The results files are written after every round;
`--stop_by HH:MM` (UTC) starts no round, and no cell, that the previous
round's pace says would end after that time, and the results name what was
cut.

The full plan (44 cells, 2 rounds; `--plan` estimates 31 minutes, the
machine's load makes it 25-50: 25 minutes on 2026-12-01; the goal's cells
come last in it, first in round 2):

- lenet (6.65 MB of float32 variables) at 200mbit, 2 workers (the goals'
  layout): every strategy and both twins with 1 PS; the four PS strategies
  with 2 PS and `--variable_partition_min_bytes` 1 MiB ("partitioned"), and
  parameter_server with 2 PS and variables whole; and the asynchronous
  parameter_server with its workers' peer probe turned off
  (`--no_peer_probe` of this script's task entry: a diagnostic, no library
  change);
- lenet at 200mbit, 4 workers: the plain, staged and asynchronous PS,
  collective_all_reduce and MultiWorkerMirroredStrategy with 1 PS; the
  plain and staged PS partitioned over 2;
- lenet at 1gbit, 2 workers: every strategy and both twins with 1 PS, the
  plain and staged PS partitioned over 2; at 1gbit, 4 workers: the plain
  and staged PS, collective_all_reduce and MultiWorkerMirroredStrategy, 1 PS;
- lenet on unshaped links (the same veth pairs and bridge, no tbf), 2
  workers: staged and asynchronous parameter_server and
  collective_all_reduce with 1 PS, the plain, staged and asynchronous PS
  partitioned over 2: c0, the step without the bandwidth limit, the part of
  a step that the network bounds leave out (20 timed steps after 3: a
  hiccup of the machine would weigh on a few 40 ms steps);
- resnet50_vars (102.2 MB, 161 variables) at 1gbit, 2 workers, 3 timed
  steps after 1 warm-up step: the plain and staged PS, collective_all_reduce
  and MultiWorkerMirroredStrategy with 1 PS, parameter_server with 2 PS
  (variables whole: byte balancing already puts 51.1 MB on each).

Left out, with the arithmetic (B the variables' bytes, R about 0.96 x the
nominal rate; a cell costs its tasks' start, 8-30 s for lenet and 25-45 s
for resnet50_vars on this shared machine, plus its warm-up and timed steps
and the first pull; the quick run took 1.5x `--plan`'s estimate under the
machine's load, and the run has about 45 minutes):

- resnet50_vars at 200mbit: a synchronous PS step is 2 x W x B / R =
  2 x 2 x 102.2 MB x 8 / 192 Mbit/s = 17.0 s with 2 workers, 34 s with 4;
  at 5 step times a cell the 2-worker cells alone (1 and 2 PS) take about
  9 minutes a round, the 4-worker ones 18: 54 minutes for 2 rounds, more
  than the run's budget on their own.
- resnet50_vars with 4 workers at 1gbit: 2 x 4 x 102.2 x 8 / 960 Mbit/s =
  6.8 s a synchronous step, its cells about 5 minutes a round; its
  asynchronous PS and the staged PS over 2 PS (45 s a cell): time.
- distributed_replicated but at 1 and 2 PS with 2 workers: its bound is the
  plain PS's, and at 2 workers it measures 0.99-1.00x of it; the
  asynchronous PS at 1gbit, 4 workers: time.
- ParameterServerStrategy with 2 PS: its `replica_device_setter` places
  variables round-robin by count, so all four of lenet's weights (6.651 of
  6.653 MB) land on PS 0 and the biases on PS 1: a second PS would measure
  nothing new. With 4 workers and for resnet50_vars (33-47 s a cell): time.
- 2 PS with variables whole for every strategy: the 3136x512 layer holds
  96.5% of lenet's bytes, and the quick run of 2026-12-01 measured every PS
  strategy's whole 2-PS step at 0.92-1.00x of its 1-PS step;
  parameter_server alone stays, as the reference.
- 2 PS at 1gbit, 4 workers, and distributed_replicated and the
  asynchronous PS over 2 PS but at 200mbit, 2 workers: the goal's layout
  shows the partitioning of each, and at 1gbit lenet's transfer
  (B / R = 55 ms) is about the size of its compute (c0, about 45 ms).
- unshaped cells of the synchronous PS strategies: the floor of their
  2-PS ratio needs no c0.

Bounds, B the bytes of the variables, B_ps those of the busiest PS task
(variables placed whole, greedily by bytes in creation order, as the
strategies place them; partitioned, a variable above the threshold split
into equal slices on distinct tasks), W the workers, R the link's measured
single-stream TCP goodput in that round (not its nominal rate):

- issue 16's bounds: a PS link carries W x B_ps each way a step, so a step
  that overlaps the pull and the push takes at least W x B_ps / R (full
  duplex), a synchronous step that pulls then pushes 2 x W x B_ps / R;
  asynchronous parameter_server (and the ParameterServerStrategy twin)
  W x B_ps / R a worker's step; a ring all-reduce (collective_all_reduce,
  the MultiWorkerMirroredStrategy twin) 2 (W-1)/W x B / R.
- what those leave out: every worker's own link carries all of B each way
  a step: at least 2 x B / R for a step that pulls then pushes (synchronous
  or asynchronous), B / R for a staged one, whatever the PS count; a
  synchronous 1-PS step can come in under 2 x W x B / R, down to
  (W + 1) x B / R, because one worker's push can overlap another's pull on
  the PS's full-duplex link; and the part of a step that is not transfer,
  c0, measured as the same cell's step on unshaped links. The bounds with
  them: ring + c0 (no all-reduce starts before the backward pass ends);
  asynchronous max(W x B_ps / R, 2 x B / R + c0); staged
  max(W x B_ps / R, B / R) + c0 (the push follows the compute, the pull
  overlaps both); synchronous max(2 x W x B_ps / R, 2 x B / R) + c0.
- the floor of a 2-PS/1-PS ratio: the 2-PS cell's lower bound
  (synchronous max(2 x W x B_ps / R, 2 x B / R), asynchronous
  max(W x B_ps / R, 2 x B / R), staged max(W x B_ps / R, B / R) + c0 of
  the 2-PS cell) over the 1-PS step measured in the same round.
- bytes actually sent: each host's link counters (its bridge port's, all
  IP/TCP/gRPC framing included) over the timed steps (worker 0's first
  timed step to the first worker's closing line), scaled to a step; the
  asynchronous workers' phase: how far apart, as a fraction of a step,
  their step ends fall (0 in phase, 0.5 alternating); and the queueing
  delay of a busy link: a TCP connect's time idle and behind a full
  stream.

Goals (issue 16), at 200mbit, 1 PS + 2 workers, lenet: staged
parameter_server at most 1.15x of W x B / R; synchronous parameter_server
and distributed_replicated within 1.05x of 2 x W x B / R;
collective_all_reduce and asynchronous parameter_server within 1.10x of
theirs; with 2 PS tasks and partitioning every PS-type strategy at most
0.55x of its 1-PS step. The verdict is the median's, with the rounds on the
other side of the goal.

`--quick` (200mbit, lenet, 2 workers: 1 PS with both twins and the
diagnostic, 2 PS partitioned, five unshaped cells; 2 rounds of 4 timed
steps; 10-15 minutes) writes `benchmarks/NETWORK_RESULTS_quick.md`;
the full run writes `benchmarks/NETWORK_RESULTS.md` and the `network
goals` section of `benchmarks/RESULTS.md` (run_benchmarks.py keeps it);
`--output` writes the whole file elsewhere and RESULTS.md not at all.
"""

import calendar
import collections
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
  sys.path.insert(0, ROOT)
if HERE not in sys.path:
  sys.path.insert(0, HERE)

from variable_mgr.benchmark import measure  # pylint: disable=g-import-not-at-top,wrong-import-position
from variable_mgr.benchmark import report  # pylint: disable=g-import-not-at-top,wrong-import-position

SECTION = ('network goals', 'run_network_benchmarks.py')
SHAPES_ENV = 'VARIABLE_MGR_RESNET50_SHAPES'
BATCH = 8
GOODPUT_SECS = 2.0
TWINS_SCRIPT = os.path.join(HERE, 'network_twins.py')

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
  return dict(STRATEGIES, **DIAGNOSTICS)[base(strategy)][1]


def num_ps_of(strategy, num_ps):
  """MultiWorkerMirroredStrategy and collective_all_reduce run no PS task
  of their own; collective_all_reduce still gets one (the benchmark's
  cluster keeps its global step and queues on PS 0)."""
  return 0 if strategy == 'MultiWorkerMirroredStrategy' else num_ps


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
  """The full plan (the module's docstring says what it leaves out and
  why). The goal's layout comes last: round 2 runs in the reverse order,
  so a run cut short by --stop_by loses the other cells' second round
  first."""
  sync_staged_ring = ['parameter_server', 'staged parameter_server',
                      'collective_all_reduce', 'MultiWorkerMirroredStrategy']
  cells = layout(GBIT, 'resnet50_vars', 2, 1, sync_staged_ring)
  cells += layout(GBIT, 'resnet50_vars', 2, 2, ['parameter_server'])
  cells += layout(GBIT, 'lenet', 4, 1, sync_staged_ring)
  cells += layout(GBIT, 'lenet', 2, 1, STRATEGIES)
  cells += layout(GBIT, 'lenet', 2, 2, [
      s + PARTITIONED for s in ('parameter_server',
                                'staged parameter_server')])
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


def quick_cells():
  cells = layout(MBIT, 'lenet', 2, 1, STRATEGIES)
  cells += layout(MBIT, 'lenet', 2, 2, [s + PARTITIONED
                                         for s in PS_STRATEGIES])
  cells += layout(MBIT, 'lenet', 2, 1, [NO_PROBE])
  cells += layout(None, 'lenet', 2, 1, ['staged parameter_server',
                                        'asynchronous parameter_server',
                                        'collective_all_reduce'])
  cells += layout(None, 'lenet', 2, 2, ['parameter_server' + PARTITIONED,
                                        'staged parameter_server' +
                                        PARTITIONED])
  return cells


FULL = dict(name='full', cells=full_cells, rounds=2,
            steps={'lenet': 5, 'resnet50_vars': 3},
            async_steps={'lenet': 10, 'resnet50_vars': 3},
            warmup={'lenet': 1, 'resnet50_vars': 1})
QUICK = dict(name='quick', cells=quick_cells, rounds=2,
             steps={'lenet': 4}, async_steps={'lenet': 8},
             warmup={'lenet': 1})

GOAL_RATE, GOAL_WORKLOAD, GOAL_WORKERS = MBIT, 'lenet', 2
GOALS = (
    ('staged parameter_server', 'full_duplex', 1.15),
    ('parameter_server', 'pull_then_push', 1.05),
    ('distributed_replicated', 'pull_then_push', 1.05),
    ('collective_all_reduce', 'ring', 1.10),
    ('asynchronous parameter_server', 'full_duplex', 1.10),
)
TWO_PS_GOAL = 0.55
BOUND_NAMES = collections.OrderedDict([
    ('full_duplex', 'W x B_ps / R'), ('pull_then_push', '2 x W x B_ps / R'),
    ('ring', '2(W-1)/W x B / R'), ('overlapped_sync', '(W+1) x B_ps / R'),
    ('worker_link', 'worker link')])


# -- In a task: the benchmark's own task, resnet50_vars known to it ----------


def task_main(argv):
  """One cluster task, with resnet50_vars registered (its shapes from the
  file SHAPES_ENV names). With NO_PROBE_FLAG first, an asynchronous worker
  never probes its peers between steps (a diagnostic: the probe is a TCP
  connection and an HTTP/2 answer across the peers' links, run in the step
  loop)."""
  if argv[:1] == [NO_PROBE_FLAG]:
    argv = argv[1:]
    if '--job_name=worker' in argv:
      from variable_mgr.benchmark.cluster import liveness  # pylint: disable=g-import-not-at-top
      liveness.PROBE_INTERVAL_SECS = NO_PROBE_SECS
  from variable_mgr.benchmark import flags  # pylint: disable=g-import-not-at-top
  if 'resnet50_vars' not in flags.MODEL_NAMES:
    flags.MODEL_NAMES = flags.MODEL_NAMES + ('resnet50_vars',)
  if os.environ.get(SHAPES_ENV):
    import run_benchmarks  # pylint: disable=g-import-not-at-top
    with open(os.environ[SHAPES_ENV]) as f:
      run_benchmarks.register_resnet50_vars([tuple(s) for s in json.load(f)])
  from variable_mgr.benchmark import distributed  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark import exit_status  # pylint: disable=g-import-not-at-top
  exit_status.exit_task(distributed.main(argv))


# -- Bytes and bounds (pure) -------------------------------------------------


def variable_bytes(shapes):
  """Bytes of float32 variables of `shapes`, in creation order."""
  sizes = []
  for shape in shapes:
    n = 4
    for dim in shape:
      n *= dim
    sizes.append(n)
  return sizes


def ps_loads(sizes, num_ps, partition_min_bytes=0):
  """Bytes on each PS task when each variable goes to the least loaded one,
  in creation order (GreedyLoadBalancingStrategy); with
  `partition_min_bytes`, a variable above it is first split into at most
  num_ps slices of at least that size (taken as equal here), each on a
  task of its own (SliceSpreadingStrategy)."""
  loads = [0.0] * num_ps
  for size in sizes:
    parts = 1
    if partition_min_bytes and size > partition_min_bytes:
      parts = max(1, min(num_ps, size // partition_min_bytes))
    free = list(range(num_ps))
    for _ in range(parts):
      task = min(free, key=lambda t: (loads[t], t))
      free.remove(task)
      loads[task] += size / float(parts)
  return loads


def busiest_ps_bytes(sizes, num_ps, partition_min_bytes=0):
  return max(ps_loads(sizes, num_ps, partition_min_bytes))


def bounds(sizes, workers, num_ps, goodput, partition_min_bytes=0):
  """{kind: seconds} of one cell (see the module's docstring); with no PS
  task (MultiWorkerMirroredStrategy) B_ps is all of B."""
  total = float(sum(sizes))
  ps = busiest_ps_bytes(sizes, num_ps, partition_min_bytes) if num_ps \
      else total
  bits = 8.0 / goodput
  return {
      'full_duplex': workers * ps * bits,
      'pull_then_push': 2.0 * workers * ps * bits,
      'ring': 2.0 * (workers - 1) / workers * total * bits,
      'overlapped_sync': (workers + 1) * ps * bits,
      'worker_link': 2.0 * total * bits,
  }


def bound_with_c0(strategy_kind, b, c0):
  """The bound with what issue 16's leaves out (the module's docstring):
  `b` a cell's bounds, `c0` its step on unshaped links."""
  if strategy_kind == 'ring':
    return b['ring'] + c0
  if strategy_kind == 'async_ps':
    return max(b['full_duplex'], b['worker_link'] + c0)
  if strategy_kind == 'staged_ps':
    return max(b['full_duplex'], b['worker_link'] / 2.0) + c0
  return max(b['pull_then_push'], b['worker_link']) + c0


def two_ps_floor(strategy_kind, b2, c0_2, step_1):
  """The lowest 2-PS/1-PS ratio a 2-PS cell of bounds `b2` (its unshaped
  step `c0_2`, or None) can reach against a measured 1-PS step `step_1`:
  the 2-PS step's lower bound over it, not counting c0 where it may
  overlap the transfers."""
  c0 = c0_2 or 0.0
  if strategy_kind == 'staged_ps':
    low = max(b2['full_duplex'], b2['worker_link'] / 2.0) + c0
  elif strategy_kind == 'async_ps':
    # c0 left out: the 2-PS steps measured come in under 2 x B / R + c0
    # (c0 holds some transfer too, at the veth's speed).
    low = max(b2['full_duplex'], b2['worker_link'])
  else:
    low = max(b2['pull_then_push'], b2['worker_link'])
  return low / step_1


def round_order(cells, r, rounds):
  """The order of round `r` (0-based) of `rounds`: odd rounds reversed,
  every pair of rounds rotated by len / (number of pairs) more."""
  order = list(cells)
  if r % 2:
    order.reverse()
  shift = (r // 2) * len(order) // max(1, (rounds + 1) // 2)
  return measure.rotated(order, shift) if order else order


# Steps of about 40 ms: a hiccup of the shared machine would weigh on few.
UNSHAPED_STEPS, UNSHAPED_WARMUP = 20, 3


def cell_steps(plan, cell):
  """Timed steps of `cell`: asynchronous cells get `async_steps` (their
  workers drift in and out of phase: more steps average over it), unshaped
  ones UNSHAPED_STEPS."""
  if cell.rate is None:
    return UNSHAPED_STEPS
  if kind(cell.strategy) == 'async_ps':
    return plan.get('async_steps', plan['steps'])[cell.workload]
  return plan['steps'][cell.workload]


def cell_warmup(plan, cell):
  """Warm-up steps of `cell` (unshaped cells: UNSHAPED_WARMUP)."""
  return UNSHAPED_WARMUP if cell.rate is None else plan['warmup'][
      cell.workload]


def task_count(cell):
  return cell.num_ps + cell.workers


def estimate_cell_secs(cell, plan, sizes, goodput=None):
  """A rough wall time of one cell: the tasks' start (TensorFlow's import,
  the graph, the session: about 4 s plus 2.5 s a task on two processors)
  and its steps at 1.2x its bound (0.1 s a step on unshaped links)."""
  steps = cell_steps(plan, cell) + cell_warmup(plan, cell) + 1
  if cell.rate is None:
    step = 0.1
  else:
    b = bounds(sizes, cell.workers, cell.num_ps,
               goodput or 0.94 * cell.rate,
               PARTITION_MIN_BYTES if cell.strategy.endswith(PARTITIONED)
               else 0)
    step = 1.2 * {'sync_ps': b['pull_then_push'],
                  'staged_ps': b['full_duplex'],
                  'async_ps': b['full_duplex'],
                  'ring': b['ring']}[kind(cell.strategy)]
  start = 4.0 + 2.5 * task_count(cell)
  if cell.workload == 'resnet50_vars':
    start += 25.0  # its 161 variables' graphs and the first full pull
  return start + steps * step


def median_spread(values):
  """(median, low, high) of a non-empty list."""
  return statistics.median(values), min(values), max(values)


# -- Measuring ----------------------------------------------------------------


def measure_goodput(rate):
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  with netns.Network(2, rate) as network:
    a, b = network.hosts
    return [netns.goodput(a, b, GOODPUT_SECS), netns.goodput(b, a,
                                                             GOODPUT_SECS)]


_LISTENER = r'''
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(128)
sys.stdout.write('ready\n'); sys.stdout.flush()
time.sleep(float(sys.argv[3]))
'''

_CONNECTS = r'''
import socket, statistics, sys, time
times = []
for _ in range(int(sys.argv[3])):
  start = time.time()
  socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10).close()
  times.append(time.time() - start)
  time.sleep(0.1)
print(statistics.median(times))
'''


def queue_delay(rate, seconds=4.0, connects=8):
  """(idle, loaded) median seconds of a TCP connect from host a to host
  b of a 2-host network of `rate`: idle, and while a single stream fills
  the a -> b direction (the SYN waits in a's tbf queue behind the stream's
  data: the queueing delay a small message of a busy link meets)."""
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  import subprocess  # pylint: disable=g-import-not-at-top
  with netns.Network(2, rate) as network:
    a, b = network.hosts
    listener = subprocess.Popen(
        b.command([sys.executable, '-c', _LISTENER, b.address, '5202',
                   str(3 * seconds + 20)]),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        universal_newlines=True)
    try:
      listener.stdout.readline()
      connect = a.command([sys.executable, '-c', _CONNECTS, b.address,
                           '5202', str(connects)])
      idle = float(netns.run(connect).strip())
      receiver = subprocess.Popen(
          b.command([sys.executable, '-c', netns._RECEIVER % {  # pylint: disable=protected-access
              'timeout': seconds + 20}, b.address, '5201']),
          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
          universal_newlines=True)
      receiver.stdout.readline()
      sender = subprocess.Popen(
          a.command([sys.executable, '-c', netns._SENDER % {  # pylint: disable=protected-access
              'timeout': seconds + 20}, b.address, '5201',
                     str(seconds + 2.0)]),
          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
      time.sleep(1.5)
      loaded = float(netns.run(connect).strip())
      sender.wait(seconds + 30)
      receiver.communicate(timeout=seconds + 30)
    finally:
      for p in (listener,):
        if p.poll() is None:
          p.kill()
          p.communicate()
  return idle, loaded


def port_bytes(network):
  """{host index: (bytes the host sent, bytes it received)} from the
  bridge ports' counters (one `ip -s -j link` in the switch namespace)."""
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  out = netns.run(['ip', '-n', network.switch, '-s', '-j', 'link', 'show'],
                  check=False)
  ports = {h.port_name: h.index for h in network.hosts}
  counters = {}
  try:
    for link in json.loads(out or '[]'):
      if link.get('ifname') in ports:
        stats = link['stats64']
        # The bridge port receives what the host sends.
        counters[ports[link['ifname']]] = (stats['rx']['bytes'],
                                           stats['tx']['bytes'])
  except (ValueError, KeyError):
    return {}
  return counters


def cell_flags(cell, steps, warmup, op_timeout):
  what = dict(STRATEGIES, **DIAGNOSTICS)[base(cell.strategy)][0]
  if cell.strategy in TWINS:
    return [sys.executable, TWINS_SCRIPT, what], [
        '--model', cell.workload, '--batch_size', str(BATCH),
        '--num_batches', str(steps), '--num_warmup_batches', str(warmup),
        '--startup_timeout_secs', '300']
  flags = list(what)
  if cell.strategy.endswith(PARTITIONED):
    flags += ['--variable_partition_min_bytes', str(PARTITION_MIN_BYTES)]
  flags += [
      '--model', cell.workload, '--num_gpus', '1', '--device', 'cpu',
      '--batch_size', str(BATCH), '--num_batches', str(steps),
      '--num_warmup_batches', str(warmup), '--display_every',
      # Asynchronous workers print every step: their phase is measured.
      str(1 if kind(cell.strategy) == 'async_ps' else steps),
      '--op_timeout_secs', str(op_timeout), '--startup_timeout_secs', '300']
  command = [sys.executable, os.path.abspath(__file__), '--task']
  if cell.strategy == NO_PROBE:
    command.append(NO_PROBE_FLAG)
  return command, flags


def run_cell(cell, steps, warmup, op_timeout, shapes_file, log):
  """One cluster on a fresh network: the workers' step seconds and the
  links' bytes over the timed steps, or an error."""
  from variable_mgr.benchmark.cluster import launcher  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  command, flags = cell_flags(cell, steps, warmup, op_timeout)
  output_dir = tempfile.mkdtemp(prefix='variable_mgr_network_')
  lines = []
  marks = {}
  ends = collections.defaultdict(list)
  network = netns.Network(task_count(cell), cell.rate)

  class _Out(object):
    """The cluster's lines; the link counters at worker 0's first timed
    step and at the first worker's closing line."""

    def write(self, text):
      lines.append(text)
      match = _STEP_LINE.match(text)
      if match:
        ends[match.group(1)].append(time.time())
      if 'start' not in marks and text.startswith('[worker:0] ') and (
          'Step\tImg/sec' in text or 'Done warm up' in text):
        marks['start'] = (time.time(), port_bytes(network))
      elif ('end' not in marks and 'start' in marks and
            text.startswith('[worker:') and 'total images/sec' in text):
        marks['end'] = (time.time(), port_bytes(network))

    def flush(self):
      pass

  cluster = None
  start = time.time()
  try:
    network.create()
    if shapes_file:
      os.environ[SHAPES_ENV] = shapes_file
    cluster = launcher.LocalCluster(
        cell.num_ps, cell.workers, flags, output_dir, op_timeout, _Out(),
        network, task_command=command)
    cluster.start()
    failed = cluster.wait()
    if failed is not None:
      tail = [l.rstrip() for l in ''.join(lines).splitlines()
              if 'rror' in l][-3:]
      log('%s: %s failed' % (describe(cell), failed.name))
      return {'error': '%s failed (%s): %s' % (
          failed.name, launcher.describe_status(failed.status),
          ' | '.join(tail)[-400:])}
    results = cluster.worker_results()
  finally:
    if cluster is not None:
      cluster.stop()
    network.remove()
    os.environ.pop(SHAPES_ENV, None)
    shutil.rmtree(output_dir, ignore_errors=True)
  step_secs = [BATCH / r['images_per_sec'] for r in results]
  run = {'step_secs': step_secs, 'wall': time.time() - start}
  if 'start' in marks and 'end' in marks:
    (t0, a), (t1, b) = marks['start'], marks['end']
    run['window'] = t1 - t0
    run['links'] = {str(i): [b[i][0] - a[i][0], b[i][1] - a[i][1]]
                    for i in a if i in b}
  if kind(cell.strategy) == 'async_ps':
    run['step_ends'] = dict(ends)
  log('%s: %.0f ms a step (%.0f s)' % (
      describe(cell), 1000 * sum(step_secs) / len(step_secs), run['wall']))
  return run


# A timed step's progress line, as the launcher echoes it.
_STEP_LINE = re.compile(r'^\[worker:(\d+)\] \d+\t')


def phase_distance(ends_a, ends_b):
  """How far apart two asynchronous workers' steps are: for each step end
  of `ends_b` between two of `ends_a`, its offset from the earlier as a
  fraction f of that step of a; min(f, 1 - f), 0 in phase, 0.5 alternating.
  Returns their median, or None."""
  values = []
  for t in ends_b:
    for t0, t1 in zip(ends_a, ends_a[1:]):
      if t0 <= t < t1:
        f = (t - t0) / (t1 - t0)
        values.append(min(f, 1.0 - f))
        break
  return statistics.median(values) if values else None


def describe(cell):
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  return '%s, %s, %d workers, %d PS, %s' % (
      netns.rate_text(cell.rate) if cell.rate else 'unshaped', cell.workload,
      cell.workers, cell.num_ps, cell.strategy)


def key(cell):
  return '|'.join(str(x) for x in cell)


def workload_shapes(workloads):
  from variable_mgr.benchmark import models  # pylint: disable=g-import-not-at-top
  import run_benchmarks  # pylint: disable=g-import-not-at-top
  shapes = {}
  for workload in workloads:
    if workload == 'resnet50_vars':
      shapes[workload] = run_benchmarks.resnet50_variable_shapes()
    else:
      shapes[workload] = models.variable_shapes(workload)
  return shapes


def measure_all(plan, log, stop_by=None, on_round=None):
  """Every round of `plan`: results['runs'] lists one entry a cell and
  round. `stop_by` (epoch seconds): no round or cell is started that would
  end after it, by the last round's pace (or the estimate)."""
  cells = plan['cells']()
  workloads = sorted(set(c.workload for c in cells))
  shapes = workload_shapes(workloads)
  sizes = {w: variable_bytes(s) for w, s in shapes.items()}
  shapes_file = None
  if 'resnet50_vars' in shapes:
    handle, shapes_file = tempfile.mkstemp(suffix='.json')
    with os.fdopen(handle, 'w') as f:
      json.dump(shapes['resnet50_vars'], f)
  rates = sorted(set(c.rate for c in cells if c.rate))
  results = {'goodput': [], 'runs': [], 'queue_delay': [], 'bytes': {w: sum(s) for w, s in
                                                  sizes.items()},
             'ps_loads': {}, 'rounds': plan['rounds'], 'cut': [],
             'sizes': sizes,
             'plan': [key(c) for c in cells]}
  for w in sizes:
    for num_ps in (2,):
      results['ps_loads']['%s|%d|whole' % (w, num_ps)] = ps_loads(
          sizes[w], num_ps)
      results['ps_loads']['%s|%d|partitioned' % (w, num_ps)] = ps_loads(
          sizes[w], num_ps, PARTITION_MIN_BYTES)
  pace = {key(c): estimate_cell_secs(c, plan, sizes[c.workload])
          for c in cells}
  try:
    for r in range(plan['rounds']):
      order = round_order(cells, r, plan['rounds'])
      goodput = {}
      for rate in rates:
        goodput[rate] = measure_goodput(rate)
        results['goodput'].append([r, rate, goodput[rate]])
        log('round %d, %d bit/s: goodput %s Mbit/s' % (
            r + 1, rate, ', '.join('%.1f' % (g / 1e6)
                                   for g in goodput[rate])))
        if r == 0:
          idle, loaded = queue_delay(rate)
          results['queue_delay'].append([rate, idle, loaded])
          log('%d bit/s: a TCP connect takes %.1f ms idle, %.1f ms behind '
              'a full stream' % (rate, 1000 * idle, 1000 * loaded))
      for cell in order:
        if stop_by and time.time() + pace[key(cell)] > stop_by:
          results['cut'].append('round %d: %s not run (it would have ended '
                                'after --stop_by %s UTC)' % (
                                    r + 1, describe(cell), time.strftime(
                                        '%H:%M', time.gmtime(stop_by))))
          log(results['cut'][-1])
          continue
        g = min(goodput[cell.rate]) if cell.rate else None
        op_timeout = 60.0
        if g:
          b = bounds(sizes[cell.workload], cell.workers, cell.num_ps, g)
          op_timeout = max(60.0, 10 * b['pull_then_push'])
        steps = cell_steps(plan, cell)
        run = run_cell(cell, steps, cell_warmup(plan, cell), op_timeout,
                       shapes_file if cell.workload == 'resnet50_vars'
                       else None, log)
        pace[key(cell)] = run.get('wall', pace[key(cell)])
        run.update(cell=list(cell), round=r, goodput=g,
                   timed_steps=steps)
        results['runs'].append(run)
      if on_round:
        on_round(results)
  finally:
    if shapes_file:
      os.remove(shapes_file)
  return results


# -- The report ---------------------------------------------------------------


class Table(object):
  """The runs of a result, by cell: per-round figures and medians."""

  def __init__(self, results):
    self.results = results
    self.sizes = {}
    self.by_cell = collections.OrderedDict()
    for k in results['plan']:
      self.by_cell[k] = []
    for run in results['runs']:
      self.by_cell.setdefault(key(Cell(*run['cell'])), []).append(run)

  def runs(self, cell):
    return self.by_cell.get(key(cell), [])

  @staticmethod
  def step(run):
    return (sum(run['step_secs']) / len(run['step_secs'])
            if 'step_secs' in run else None)

  def steps(self, cell):
    """{round: step seconds} of the cell's successful runs."""
    return collections.OrderedDict(
        (run['round'], self.step(run)) for run in self.runs(cell)
        if 'step_secs' in run)

  def bounds(self, cell, run, sizes):
    return bounds(sizes, cell.workers, cell.num_ps, run['goodput'],
                  PARTITION_MIN_BYTES if cell.strategy.endswith(PARTITIONED)
                  else 0)

  def unshaped(self, cell):
    """{round: step} of the same cell on unshaped links."""
    return self.steps(cell._replace(rate=None))

  def ratios(self, cell, fn):
    """[fn(run, round)] over the cell's successful runs (None dropped)."""
    values = []
    for run in self.runs(cell):
      if 'step_secs' in run:
        value = fn(run, run['round'])
        if value is not None:
          values.append(value)
    return values

  def errors(self, cell):
    return [run['error'] for run in self.runs(cell) if 'error' in run]


def ms(seconds):
  return '%.0f ms' % (1000 * seconds)


def ms_spread(values):
  if not values:
    return 'not measured'
  m, lo, hi = median_spread(values)
  if len(values) == 1:
    return '%.0f ms, one round' % (1000 * m)
  return '%.0f ms (%.0f-%.0f)' % (1000 * m, 1000 * lo, 1000 * hi)


def x_spread(values):
  if not values:
    return 'not measured'
  m, lo, hi = median_spread(values)
  if len(values) == 1:
    return '%.2fx, one round' % m
  return '%.2fx (%.2f-%.2f)' % (m, lo, hi)


def x_verdict(values, goal):
  if not values:
    return 'not measured'
  m = statistics.median(values)
  other = sum(1 for v in values if (v > goal) == (m <= goal))
  text = report.verdict(m <= goal)
  if other:
    text += ' (%d of %d rounds %s)' % (other, len(values),
                                       'above' if m <= goal else
                                       'at or below')
  return text


def goal_cell(strategy, num_ps=1):
  return Cell(GOAL_RATE, GOAL_WORKLOAD, GOAL_WORKERS,
              num_ps_of(strategy, num_ps), strategy)


def goal_rows(t, sizes):
  """The goals' table rows: goal, measured, verdict, the bound with what
  the issue's leaves out (and the step over it)."""
  rows = []
  lenet = sizes[GOAL_WORKLOAD]
  for strategy, bound, goal in GOALS:
    cell = goal_cell(strategy)
    c0 = t.unshaped(cell)

    def issue(run, r, cell=cell, bound=bound):
      del r
      return t.step(run) / t.bounds(cell, run, lenet)[bound]

    def with_c0(run, r, cell=cell, c0=c0):
      if r not in c0:
        return None
      return t.step(run) / bound_with_c0(
          kind(cell.strategy), t.bounds(cell, run, lenet), c0[r])

    values = t.ratios(cell, issue)
    text = '%s at most %.2fx of %s' % (strategy, goal, BOUND_NAMES[bound])
    measured = x_spread(values) if values else '; '.join(
        t.errors(cell)) or 'not measured'
    rows.append([text, measured, x_verdict(values, goal),
                 x_spread(t.ratios(cell, with_c0)) if c0 else
                 'c0 not measured'])
  for strategy in PS_STRATEGIES:
    one, two = goal_cell(strategy), goal_cell(strategy + PARTITIONED, 2)
    ones, twos = t.steps(one), t.steps(two)
    c0_2 = t.unshaped(two)
    values = [twos[r] / ones[r] for r in twos if r in ones]
    floors = []
    for run in t.runs(two):
      r = run['round']
      if 'step_secs' in run and r in ones:
        floors.append(two_ps_floor(kind(strategy), t.bounds(two, run, lenet),
                                   c0_2.get(r), ones[r]))
    text = ('%s, 2 PS partitioned, at most %.2fx of its 1-PS step' %
            (strategy, TWO_PS_GOAL))
    rows.append([text, x_spread(values), x_verdict(values, TWO_PS_GOAL),
                 'floor %s' % x_spread(floors)])
  return rows


def step_scale(cell, run, step):
  """MB a step from a count of bytes over a run's timed steps: synchronous
  workers take the timed steps in lockstep (the count over their number);
  asynchronous ones do not (the count's rate over the window, times the
  mean step)."""
  if kind(cell.strategy) != 'async_ps' and run.get('timed_steps'):
    return 1.0 / run['timed_steps'] / 1e6
  return step / run['window'] / 1e6


def link_rows(t, sizes, cells):
  """Bytes a step on each host's link for `cells` (their last round)."""
  rows = []
  for cell in cells:
    runs = [r for r in t.runs(cell) if 'links' in r and 'step_secs' in r]
    if not runs:
      continue
    run = runs[-1]
    step = t.step(run)
    total = float(sum(sizes[cell.workload]))
    names = (['PS %d' % i for i in range(cell.num_ps)] +
             ['worker %d' % i for i in range(cell.workers)])
    per = []
    for i, name in enumerate(names):
      sent, received = run['links'].get(str(i), (0, 0))
      scale = step_scale(cell, run, step)
      per.append('%s %.2f / %.2f' % (name, sent * scale, received * scale))
    rows.append([cell.strategy, '%d' % cell.num_ps, ms(step),
                 '; '.join(per), '%.2f' % (cell.workers * total / 1e6),
                 '%.2f' % (total / 1e6)])
  return rows


def display_order(keys):
  """Cell keys for the tables: lenet first, shaped rates slowest first,
  unshaped after them, then workers and PS tasks; the plan's order within."""
  def order(item):
    i, k = item
    rate, workload, workers, num_ps = k.split('|')[:4]
    return (workload != 'lenet', rate == 'None',
            int(rate) if rate != 'None' else 0, int(workers),
            int(num_ps) == 2, i)
  return [k for _, k in sorted(enumerate(keys), key=order)]


def cell_rows(t, sizes):
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  rows = []
  for k in display_order(t.by_cell):
    cell = Cell(*[None if x == 'None' else x for x in k.split('|')])
    cell = cell._replace(rate=int(cell.rate) if cell.rate else None,
                         workers=int(cell.workers), num_ps=int(cell.num_ps))
    steps = t.steps(cell)
    per_round = ', '.join('%d: %s' % (r + 1, ms(s)) for r, s in steps.items())
    errors = t.errors(cell)
    if errors:
      per_round += (', ' if per_round else '') + 'failed: %s' % (
          errors[0].replace('|', '/')[:200])
    cols = []
    for bound in ('full_duplex', 'pull_then_push', 'ring'):
      relevant = {'sync_ps': ('full_duplex', 'pull_then_push'),
                  'staged_ps': ('full_duplex', 'pull_then_push'),
                  'async_ps': ('full_duplex',),
                  'ring': ('ring',)}[kind(cell.strategy)]
      if cell.rate is None or bound not in relevant:
        cols.append('')
        continue
      values = t.ratios(cell, lambda run, r, cell=cell, bound=bound: t.step(
          run) / t.bounds(cell, run, sizes[cell.workload])[bound])
      b = [t.bounds(cell, run, sizes[cell.workload])[bound]
           for run in t.runs(cell) if run.get('goodput')]
      cols.append('%s: %s' % (ms(statistics.median(b)), x_spread(values))
                  if b and values else (ms(statistics.median(b)) if b else ''))
    hosts = []
    for host, name in ((0, 'PS 0'), (cell.num_ps, 'worker 0')):
      if host == cell.num_ps and name == 'PS 0':
        continue
      mb = _link_mb(t, cell, host)
      if mb:
        hosts.append('%s %.1f / %.1f' % (name, mb[0], mb[1]))
    rows.append([netns.rate_text(cell.rate) if cell.rate else 'unshaped',
                 cell.workload, str(cell.workers), str(cell.num_ps),
                 cell.strategy, ms_spread(list(steps.values())),
                 per_round] + cols + ['; '.join(hosts)])
  return rows


def twin_rows(t, sizes):
  rows = []
  for k in display_order(t.by_cell):
    parts = k.split('|')
    if parts[4] not in TWINS or parts[0] == 'None':
      continue
    twin = Cell(int(parts[0]), parts[1], int(parts[2]), int(parts[3]),
                parts[4])
    own = twin._replace(strategy=TWINS[twin.strategy],
                        num_ps=max(1, twin.num_ps))
    a, b = t.steps(twin), t.steps(own)
    ratios = [a[r] / b[r] for r in a if r in b]
    bound = 'ring' if kind(twin.strategy) == 'ring' else 'full_duplex'
    twin_bound = t.ratios(twin, lambda run, r, c=twin, bound=bound: t.step(
        run) / t.bounds(c, run, sizes[c.workload])[bound])
    from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top

    def sent(cell):
      mb = _link_mb(t, cell, cell.num_ps)
      return '%.2f' % mb[0] if mb else ''

    rows.append(['%s, %s, %d workers' % (netns.rate_text(twin.rate),
                                        twin.workload, twin.workers),
                 twin.strategy, ms_spread(list(a.values())),
                 '%s: %s' % (BOUND_NAMES[bound], x_spread(twin_bound)),
                 sent(twin), own.strategy, ms_spread(list(b.values())),
                 sent(own), x_spread(ratios)])
  return rows


def goodput_text(results):
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  by_rate = collections.OrderedDict()
  for r, rate, values in results['goodput']:
    by_rate.setdefault(rate, []).append('round %d: %s' % (
        r + 1, ', '.join('%.1f' % (g / 1e6) for g in values)))
  return '; '.join('%s: %s Mbit/s' % (netns.rate_text(rate), ', '.join(v))
                   for rate, v in by_rate.items())


def rounds_done(results):
  return len(set(run['round'] for run in results['runs']))


def method_lines(results, plan):
  return [
      '- every task a network namespace on one bridge, its link shaped both '
      'ways with `tc tbf` (or unshaped); one tower (a virtual CPU) a worker, '
      'batch %d; every host shares this machine\'s 2 processors, and other '
      'jobs (other test runs) used the same processors during the run' %
      BATCH,
      '- %d of %d rounds; each cell a fresh network and cluster a round, '
      'round 1 in the plan\'s order, round 2 reversed; timed steps after '
      'warm-up steps: %s; a cell\'s step is the mean over its workers of '
      'their timed steps, given as the median over the rounds (range); '
      'every ratio is taken within a round' % (
          rounds_done(results), results['rounds'], ', '.join(
              '%s %d (asynchronous %d) after %d' % (
                  w, n, plan.get('async_steps', plan['steps'])[w],
                  plan['warmup'][w])
              for w, n in sorted(plan['steps'].items())) +
          '; unshaped %d after %d' % (UNSHAPED_STEPS, UNSHAPED_WARMUP)),
      '- variables: %s' % ', '.join(
          '%s %.2f MB' % (w, b / 1e6) for w, b in
          sorted(results['bytes'].items())),
      '- measured single-stream TCP goodput, each way: %s; a round\'s bounds '
      'use the lower of its two figures' % goodput_text(results),
  ] + ['- cut: %s' % c for c in results['cut']]


def goal_lines(t, sizes):
  lines = ['| goal | measured (median, rounds) | verdict | with what the '
           'issue\'s bound leaves out |', '|---|---|---|---|']
  lines += [report.row(r) for r in goal_rows(t, sizes)]
  return lines


def section_lines(results, plan, source, command, elapsed, full_file=None):
  """The lines of the results (the whole file's body, or with `full_file`
  the RESULTS.md section that points to it)."""
  t = Table(results)
  sizes = results['sizes']
  lines = ['## Network goals (issue 16): steps on shaped links', '',
           'Written by `benchmarks/run_network_benchmarks.py` (its docstring '
           'defines every bound, goal and what the plan leaves out, with the '
           'arithmetic).', '',
           '- commit measured: %s' % source,
           '- command: `%s` (%.1f minutes)' % (command, elapsed / 60.0)]
  lines += method_lines(results, plan)
  lines += ['', '### Goals (200mbit, lenet, 1 PS + 2 workers)', '']
  lines += goal_lines(t, sizes)
  lines += ['', 'The last column: the step over the bound with its unshaped '
            'step c0 and the worker\'s own link (docstring); for the 2-PS '
            'goals, the floor of the ratio that the measured 1-PS step '
            'allows. The causes: below.']
  lines += ['', '### What the steps are made of: the goals\' causes', '']
  if full_file:
    lines += cause_bullets(t, sizes)
    lines += ['', 'Every cell, c0, the link bytes, the asynchronous workers\' '
              'phase and tf.distribute\'s twins: `benchmarks/%s`.' % full_file]
    return lines
  lines += cause_lines(t, sizes)
  lines += ['', '### tf.distribute beside it', '',
            'MultiWorkerMirroredStrategy: ring collectives, a custom loop in '
            '`tf.function`, the benchmark\'s model built under the '
            'strategy\'s scope, SGD on the all-reduced mean. '
            'ParameterServerStrategy: '
            '`tf.compat.v1.distribute.experimental.ParameterServerStrategy` '
            'in graph mode with a session (it refuses eager execution only; '
            'asynchronous between workers, so beside the asynchronous '
            'parameter_server). Same hosts, links, model, batch and learning '
            'rate (`benchmarks/network_twins.py`).', '']
  lines += report.table(
      ['cell', 'tf.distribute', 'step', 'over its bound',
       'worker 0 sent, MB a step', 'beside', 'step',
       'worker 0 sent, MB a step', 'tf.distribute / ours'],
      twin_rows(t, sizes), 'llllrllrl')
  lines += ['', '### Every cell', '',
            'Step: median over the rounds (range), then each round\'s; each '
            'bound is the median over the rounds of its value, then the step '
            'over it (median, range). The bytes are the link counters\' (a '
            'bound assumes B each way a worker: a model whose gradients '
            'travel smaller, or whose variables are read where they live, '
            'comes in under it).', '']
  lines += report.table(
      ['rate', 'model', 'W', 'PS', 'strategy', 'step', 'rounds',
       'W x B_ps / R', '2 x W x B_ps / R', '2(W-1)/W x B / R',
       'MB a step sent / received (last round)'],
      cell_rows(t, sizes), 'lllrlllllll')
  return lines


def _median(values):
  values = [v for v in values if v is not None]
  return statistics.median(values) if values else None


def _bound(t, cell, name, sizes):
  return _median([t.bounds(cell, run, sizes[cell.workload])[name]
                  for run in t.runs(cell) if run.get('goodput')])


def _link_mb(t, cell, host):
  """(sent, received) MB a step of host `host` (0-based over PS tasks then
  workers) of `cell`'s last round with counters, or None."""
  runs = [r for r in t.runs(cell) if 'links' in r and 'step_secs' in r]
  if not runs or str(host) not in runs[-1]['links']:
    return None
  run = runs[-1]
  scale = step_scale(cell, run, t.step(run))
  sent, received = run['links'][str(host)]
  return sent * scale, received * scale


def _ms(value):
  return 'not measured' if value is None else ms(value)


def cell_phase(t, cell):
  """The median over rounds of phase_distance of workers 0 and 1."""
  return _median([phase_distance(run['step_ends'].get('0', []),
                                 run['step_ends'].get('1', []))
                  for run in t.runs(cell) if run.get('step_ends')])


def cause_bullets(t, sizes):
  """One bullet a goal not met (or close), its cause from the figures."""
  lenet = sizes[GOAL_WORKLOAD]
  total_mb = sum(lenet) / 1e6
  med = lambda cell: _median(list(t.steps(cell).values()))
  c0 = lambda cell: _median(list(t.unshaped(cell).values()))
  bullets = []

  ring = goal_cell('collective_all_reduce')
  step, bound, c = med(ring), _bound(t, ring, 'ring', sizes), c0(ring)
  sent = _link_mb(t, ring, ring.num_ps)
  if step and bound:
    text = ('- **collective_all_reduce** (%s against the ring bound %s, '
            '%.2fx): its links carry what a ring must, %s a step each way '
            'for worker 0 (2(W-1)/W x B = %.2f MB); ' % (
                ms(step), ms(bound), step / bound,
                '%.2f / %.2f MB' % sent if sent else 'not counted',
                total_mb))
    if c:
      text += ('what the bound leaves out is the step\'s non-network part: '
               'the forward pass cannot start before the previous step\'s '
               'all-reduce and update end, nor a gradient\'s all-reduce '
               'before the backward pass computes it; the same cluster on '
               'unshaped links takes c0 = %s a step; ring + c0 = %s, and '
               'the step is %.2fx of that.' % (
                   ms(c), ms(bound + c), step / (bound + c)))
    bullets.append(text)

  asy = goal_cell('asynchronous parameter_server')
  step, c = med(asy), c0(asy)
  fd, wl = _bound(t, asy, 'full_duplex', sizes), _bound(
      t, asy, 'worker_link', sizes)
  no_probe = med(goal_cell(NO_PROBE))
  twin = med(goal_cell('ParameterServerStrategy (v1, graph)'))
  if step and fd:
    text = ('- **asynchronous parameter_server** (%s against W x B / R = %s, '
            '%.2fx): with 2 workers W x B / R equals a worker\'s own pull '
            'then push, 2 x B / R = %s, so the bound holds only if one '
            'worker pulls exactly while the other pushes and neither computes;'
            ' ' % (ms(step), ms(fd), step / fd, ms(wl)))
    if c:
      text += ('with the compute (c0 = %s unshaped) the bound is 2 x B / R + '
               'c0 = %s (%.2fx). ' % (ms(c), ms(wl + c), step / (wl + c)))
    text += ('When both workers pull at once each gets half the PS link, '
             'up to 2 x W x B / R + c0 = %s a step in phase; nothing orders '
             'asynchronous workers. ' % ms(2 * fd + (c or 0.0)))
    phase = cell_phase(t, asy)
    if phase is not None:
      text += ('Measured: worker 1\'s steps end %.2f of a step from worker '
               '0\'s (median; 0 in phase, 0.5 alternating). ' % phase)
    if no_probe:
      text += ('Without the workers\' peer probe (a diagnostic) the step is '
               '%s (%.2fx of W x B / R). ' % (ms(no_probe), no_probe / fd))
      phase = cell_phase(t, goal_cell(NO_PROBE))
      if phase is not None:
        text = text[:-3] + ', phase %.2f). ' % phase
    if twin:
      text += ('tf.distribute\'s ParameterServerStrategy, asynchronous on '
               'the same links, takes %s (%.2fx' % (ms(twin), twin / fd))
      phase = cell_phase(t, goal_cell('ParameterServerStrategy (v1, graph)'))
      text += ', phase %.2f).' % phase if phase is not None else ').'
    pairs = []
    for strategy in ('asynchronous parameter_server', NO_PROBE,
                     'ParameterServerStrategy (v1, graph)'):
      for run in t.runs(goal_cell(strategy)):
        if run.get('step_ends') and 'step_secs' in run:
          phase = phase_distance(run['step_ends'].get('0', []),
                                 run['step_ends'].get('1', []))
          if phase is not None:
            pairs.append((phase, t.step(run)))
    if len(pairs) > 2:
      pairs.sort()
      text += (' Every asynchronous run of this layout (the three cells, '
               'every round), phase: step, by phase: %s.' % ', '.join(
                   '%.2f: %s' % (p, ms(v)) for p, v in pairs))
    bullets.append(text)

  for strategy in PS_STRATEGIES:
    one, two = goal_cell(strategy), goal_cell(strategy + PARTITIONED, 2)
    s1, s2 = med(one), med(two)
    if not s1 or not s2:
      continue
    ratio = _median([b / a for r, a in t.steps(one).items()
                     for q, b in t.steps(two).items() if q == r])
    k = kind(strategy)
    ps0, ps1 = _link_mb(t, two, 0), _link_mb(t, two, 1)
    text = ('- **%s, 2 PS partitioned** (%s against %s at 1 PS, %.2fx): ' % (
        strategy, ms(s2), ms(s1), ratio or s2 / s1))
    if ps0 and ps1:
      text += ('the bytes split as placed, PS 0 %.2f / %.2f MB a step (sent '
               '/ received), PS 1 %.2f / %.2f (W x B_ps of the placement: '
               '%s MB); ' % (ps0 + ps1 + (' / '.join(
                   '%.2f' % (2 * l / 1e6) for l in t.results['ps_loads'][
                       '%s|2|partitioned' % GOAL_WORKLOAD]),)))
    wl = _bound(t, two, 'worker_link', sizes)
    if k == 'sync_ps':
      over = _bound(t, one, 'overlapped_sync', sizes)
      ptp1 = _bound(t, one, 'pull_then_push', sizes)
      ptp2 = _bound(t, two, 'pull_then_push', sizes)
      text += ('the 1-PS step comes in at %.2fx of 2 x W x B / R (%s; its own '
               'floor is (W+1) x B / R = %s, one worker\'s push overlapping '
               'the other\'s pull on the PS link), while the 2-PS step cannot '
               'go below max(2 x W x B_ps / R, 2 x B / R) = max(%s, %s): each '
               'worker\'s own link still carries all of B, pull then push. '
               'The ratio\'s floor is therefore %.2fx.' % (
                   s1 / ptp1, ms(ptp1), ms(over), ms(ptp2), ms(wl),
                   max(ptp2, wl) / s1))
    elif k == 'staged_ps':
      fd1, fd2 = _bound(t, one, 'full_duplex', sizes), _bound(
          t, two, 'full_duplex', sizes)
      c1, c2 = c0(one), c0(two)
      if c1 and c2:
        text += ('a staged step is its transfer (W x B_ps / R: %s at 1 PS, %s '
                 'at 2) plus a part that does not shrink with the PS count '
                 '(measured: %s and %s over those bounds; c0 unshaped %s and '
                 '%s): (%s + %s) / (%s + %s) = %.2fx is the ratio those '
                 'leave; %.2fx would need that part under (%.2f x %s - %s) '
                 '/ %.2f = %s.' % (
                     ms(fd1), ms(fd2), ms(s1 - fd1), ms(s2 - fd2), ms(c1),
                     ms(c2), ms(fd2), ms(c2), ms(fd1), ms(c1),
                     (fd2 + c2) / (fd1 + c1), TWO_PS_GOAL, TWO_PS_GOAL,
                     ms(fd1), ms(fd2), 1 - TWO_PS_GOAL,
                     ms((TWO_PS_GOAL * fd1 - fd2) / (1 - TWO_PS_GOAL))))
    elif k == 'async_ps':
      text += ('each worker\'s own link carries B each way, pull then push: '
               '2 x B / R = %s at any PS count, so 2 PS cannot halve an '
               'asynchronous 2-worker step: the floor is 2 x B / R over the '
               '1-PS step, %.2fx (%.2fx with the 2-PS cell\'s c0); the '
               'faster the 1-PS step (the closer its workers alternate), '
               'the higher.' % (ms(wl), wl / s1, (wl + (c0(two) or 0.0)) / s1))
    bullets.append(text)
  delays = t.results.get('queue_delay') or []
  if delays:
    from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
    bullets.append(
        '- queueing behind bulk data: a TCP connect (one small message '
        'each way) takes %s (idle / behind a full single stream); a '
        'barrier\'s token or a probe waits about that long on a busy '
        'link.' % '; '.join(
            '%.1f / %.1f ms at %s' % (1000 * i, 1000 * l, netns.rate_text(r))
            for r, i, l in delays))
  return bullets


def cause_lines(t, sizes):
  """The measurements behind the goals not met (the goal layout's cells,
  their unshaped steps and their links' bytes)."""
  lenet = sizes[GOAL_WORKLOAD]
  total = float(sum(lenet))
  lines = cause_bullets(t, sizes) + ['']
  one_ps = [goal_cell(s) for s in OWN + [NO_PROBE]] + [
      goal_cell(s) for s in TWINS]
  two_ps = [goal_cell(s + PARTITIONED, 2) for s in PS_STRATEGIES]
  lines += ['Each cell\'s step on unshaped links (c0: the same cluster, veth '
            'pairs with no tbf), beside its step at 200mbit:', '']
  rows = []
  for cell in one_ps + two_ps:
    c0 = t.unshaped(cell)
    if not c0:
      continue
    rows.append([cell.strategy, str(cell.num_ps), ms_spread(list(c0.values())),
                 ms_spread(list(t.steps(cell).values()))])
  lines += report.table(['strategy', 'PS', 'c0 (unshaped)', 'at 200mbit'],
                        rows, 'lrrr')
  lines += ['', 'MB a step through each host\'s link at 200mbit, 2 workers '
            '(sent / received; the last round; the link counters include '
            'TCP/IP and gRPC framing):', '']
  lines += report.table(['strategy', 'PS', 'step', 'per host: sent / '
                         'received', 'W x B', 'B'],
                        link_rows(t, sizes, one_ps + two_ps), 'lrrlrr')
  loads = t.results['ps_loads'].get('%s|2|partitioned' % GOAL_WORKLOAD)
  if loads:
    lines += ['', 'Partitioned over 2 PS, the placement model puts %s MB on '
              'the PS tasks (of %.2f MB): the 3136x512 layer in two slices, '
              'every other variable whole on the less loaded task; PS 0 also '
              'holds the global step and the barriers\' queues (bytes: '
              'nothing to speak of; their round trips: in c0).' % (
                  ' / '.join('%.3f' % (l / 1e6) for l in loads), total / 1e6)]
  return lines


def main(argv=None):
  argv = list(sys.argv[1:] if argv is None else argv)
  if argv[:1] == ['--task']:
    task_main(argv[1:])
    return 0
  as_given = list(argv)
  stop_by = None
  if '--stop_by' in argv:
    i = argv.index('--stop_by')
    hour, minute = [int(x) for x in argv[i + 1].split(':')]
    now = time.gmtime()
    stop_by = calendar.timegm((now.tm_year, now.tm_mon, now.tm_mday, hour,
                               minute, 0))
    del argv[i:i + 2]
  from_json = None
  if '--from_json' in argv:
    # Writes the results of an earlier run's --json again (the report
    # only; the header names this process's machine and load).
    i = argv.index('--from_json')
    from_json = argv[i + 1]
    del argv[i:i + 2]
  results_dir = HERE
  if '--results_dir' in argv:
    # Where the results files go (default: this script's directory), e.g.
    # a working tree's benchmarks/ when a clean clone is measured.
    i = argv.index('--results_dir')
    results_dir = os.path.abspath(argv[i + 1])
    del argv[i:i + 2]
  show_plan = '--plan' in argv
  if show_plan:
    argv.remove('--plan')
  args, given = measure.script_args(
      __doc__.split('\n')[0], '200mbit, lenet, 2 workers, 1 and 2 PS, both '
      'twins, 2 rounds of few steps (a check, 10-15 minutes)', argv)
  plan = QUICK if args.quick else FULL
  if show_plan:
    return print_plan(plan)
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  try:
    netns.check_supported()
  except netns.NetworkUnavailableError as e:
    sys.stderr.write('run_network_benchmarks.py runs its clusters as '
                     '--launch_local_cluster --network_rate does: %s\n' % e)
    return 2
  source = report.source_state(ROOT)
  start = time.time()
  log = measure.make_log(start)
  del given  # The command as typed, this script's own flags too.
  command = report.command_line('run_network_benchmarks.py', [
      a for a in as_given if a != '--from_json' and a != from_json])
  if args.quick:
    output = args.output or os.path.join(results_dir,
                                         'NETWORK_RESULTS_quick.md')
  else:
    output = args.output or os.path.join(results_dir, 'NETWORK_RESULTS.md')
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  def write(results, final=True):
    title = 'Network benchmark' + (' (a check)' if args.quick else '')
    if not from_json:
      elapsed = time.time() - start
      results['written'] = dict(
          source=source, command=command, elapsed=elapsed,
          header=report.header(title, 'run_network_benchmarks.py', source,
                               command, elapsed, tf.__version__))
    run = results['written']

    def lines_of(full_file=None):
      lines = section_lines(results, plan, run['source'], run['command'],
                            run['elapsed'], full_file=full_file)
      if from_json:
        after = lines.index('- command: `%s` (%.1f minutes)' % (
            run['command'], run['elapsed'] / 60.0)) + 1
        lines.insert(after, '- tables written again from the run\'s figures '
                     '(its --json) by the script of %s' % source)
      return lines

    report.write(output, run['header'] + [''] + lines_of()[2:])
    if final and not args.quick and not args.output:
      import run_benchmarks  # pylint: disable=g-import-not-at-top
      run_benchmarks.write_section(
          os.path.join(results_dir, 'RESULTS.md'),
          lines_of(full_file=os.path.basename(output)), *SECTION)
    if args.json:
      with open(args.json, 'w') as f:
        json.dump(results, f, indent=1, default=str)
    log('wrote %s (%d rounds)' % (output, rounds_done(results)))

  if from_json:
    # The tables of an earlier run again, from its --json, under the
    # header that run wrote (its commit, date, command, machine and load).
    with open(from_json) as f:
      results = json.load(f)
    if 'written' not in results:
      if not os.path.exists(output):
        sys.stderr.write('--from_json %s: the JSON has no header of its run, '
                         'and %s (the file that run wrote, to take it from) '
                         'does not exist: pass --output FILE of that run.\n'
                         % (from_json, output))
        return 2
      results['written'] = header_of(output)
  else:
    results = measure_all(plan, log, stop_by,
                          on_round=lambda r: write(r, final=False))
  write(results)
  return 0


def header_of(path):
  """{'source', 'command', 'elapsed', 'header'} of the results file
  `path` as a run wrote it (for --from_json of a run's JSON without them)."""
  with open(path) as f:
    lines = f.read().splitlines()
  end = next(i for i, l in enumerate(lines)
             if l.startswith('Written by `benchmarks/run_network_'))
  header = lines[:end]
  while header and not header[-1]:
    header.pop()
  found = {}
  for line in header:
    if line.startswith('- commit: '):
      found['source'] = line[len('- commit: '):]
    match = re.match(r'- command: `(.*)` \(([\d.]+) minutes\)$', line)
    if match:
      found['command'] = match.group(1)
      found['elapsed'] = 60.0 * float(match.group(2))
  found['header'] = header
  return found


def print_plan(plan):
  cells = plan['cells']()
  sizes = {w: variable_bytes(s) for w, s in workload_shapes(
      sorted(set(c.workload for c in cells))).items()}
  total = 0.0
  for cell in cells:
    secs = estimate_cell_secs(cell, plan, sizes[cell.workload])
    total += secs
    print('%6.0f s  %s' % (secs, describe(cell)))
  print('%d cells, %d rounds: about %.0f minutes' % (
      len(cells), plan['rounds'], plan['rounds'] * total / 60.0))
  return 0


if __name__ == '__main__':
  sys.exit(main())
