#!/usr/bin/env python
"""Measures the distributed strategies on shaped links against their bounds.

    python benchmarks/run_network_benchmarks.py            # the full run
    python benchmarks/run_network_benchmarks.py --quick    # a check
    python benchmarks/run_network_benchmarks.py --plan     # its cells, timed
    python benchmarks/run_network_benchmarks.py --stop_by 18:00
    python benchmarks/run_network_benchmarks.py --subset allreduce \
        --rounds 3                       # distributed_all_reduce and
                                         # collective_all_reduce alone
    python /tmp/clone/benchmarks/run_network_benchmarks.py \
        --results_dir benchmarks         # a clean clone measured, the
                                         # results written here

Every cell is a cluster of the benchmark's own runner on the namespace
network of `--launch_local_cluster --network_rate`
(`variable_mgr.benchmark.cluster.netns`): each task a network namespace of
its own, its link shaped to the rate both ways, one tower (one virtual CPU)
a worker unless a cell says two, batch 8 a tower; under
distributed_all_reduce the controller that runs the one graph is a host of
its own too. Beside them, on the same kind of network with
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

The full plan (63 cells, 2 rounds; `--plan` estimates 41 minutes, the
machine's load makes it 1-1.5x that: the 44 cells before issue 26's took
25 minutes on 2026-12-01, the 63 took 32 on the slower machine of
2026-12-06; the goal's cells come last in it, first in round 2) holds
every cell below but the two balanced families', which run only as their
subsets (`--subset balanced`, `--subset googlenet`, `--subset pinned`,
`--subset buckets`, `--subset c0`), each into a results file of its own:
with them a run would be 159 cells, hours on this machine:

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
- distributed_all_reduce (issue 26; no PS task, a controller host) beside
  collective_all_reduce (1 PS: the runner's global step and queues): with
  `--all_reduce_spec=xring` one tower a worker at 200mbit and 1gbit, 2 and
  4 workers (the other layouts hold it but at 1gbit, 4 workers, which is
  added); with 2 towers a worker `pscpu/xring` (pscpu within a worker,
  memory copies between its virtual CPUs; across workers the same xring
  as one tower a worker, so each host's link carries the ring's
  2(W-1)/W x B: a one-stage xring over every tower would carry
  2(2W-1)/(2W) x B) and collective_all_reduce with 2 towers a worker, at
  200mbit and 1gbit, 2 and 4 workers; and each of the four on unshaped
  links, 2 and 4 workers (c0). `--subset allreduce` runs these cells and
  the collective_all_reduce cells of lenet alone (24 cells; `--plan
  --subset allreduce` estimates 13 minutes for 2 rounds);
- the balanced family (issue 32, not in the full plan): resnet20 on cifar10
  (1.09 MB of variables, batch 16 a tower), 2 workers, 1 PS, whose compute
  and transfer are comparable: parameter_server, staged,
  distributed_replicated, collective_all_reduce and distributed_all_reduce
  (xring) with one tower a worker, and the two all-reduces with two
  (pscpu/xring), each at three rates where its bound is about 2x, 1x and
  0.5x of its c0 on these machines (the arithmetic: `network/plan.py`,
  `balanced_rates`), and collective_all_reduce and distributed_all_reduce
  with buckets of one gradient, 64 KiB and 1 MiB beside their default 256
  KiB, parameter_server and staged with pushes in buckets of 64 KiB, 256 KiB
  and 1 MiB beside their default of one gradient a push, at the middle rate
  (the bound about c0), and each on unshaped links; each cell's step against max(c0, bound), which
  a step that hides its transfer behind the backward pass reaches, and
  against c0 + bound, which one that hides none of it takes, and, for the
  kinds whose transfers start only once the loss is computed (the
  all-reduces, the staged PS's pushes), against the floor of a step a run,
  max(c0, f + bound): f is the forward pass, its share of the unshaped
  cell's traced step (the last warm-up step) times c0; the transfer can hide
  behind the backward pass only, and the next run's forward pass reads this
  step's updates. `--subset balanced` runs the seven strategies' 28 cells
  (their default buckets); `--subset buckets` the bucket sizes and their
  strategies' defaults at the rate where the bound is about c0, and
  unshaped (32 cells; `--plan --subset NAME` estimates the time; the bucket
  sizes ran at all three rates in the balanced subset until the
  2026-12-06 machine made its 76 cells too long for a run); `--subset c0`
  the unshaped cells of the seven
  strategies alone (their default buckets), which set the plan's c0
  (`BALANCED_C0_MS`) on the machine as it is, and gives the rates they
  put the bound at 2x, 1x and 0.5x of it;
- the second balanced family (issue 32, not in the full plan): googlenet on
  imagenet's synthetic images (28.0 MB of variables, batch 32 a worker, one
  tower), a convolutional model with real compute and tens of MB of
  variables: parameter_server, staged, distributed_replicated,
  collective_all_reduce and distributed_all_reduce (xring), each at the
  three rates where its bound is about 2x, 1x and 0.5x of its c0, and
  unshaped; `--subset googlenet` runs these 20 cells alone;
- the balanced family's cells with a processor a worker (issue 32, not in
  the full plan): collective_all_reduce, distributed_all_reduce (xring) and
  the staged parameter_server at resnet20's three rates of each and
  unshaped, every worker task held to a processor of its own (worker k on
  processor k; the PS task and the controller keep both), as on hosts of
  their own, where the shared cells let both workers' threads run on both
  processors; each with the benchmark's inter-op pools (a thread more
  than a task's processors: 2 a pinned worker) and with one thread a task
  (`--num_inter_threads 1`, TensorFlow's own size for a pinned worker),
  whose one thread runs the backward pass's ops and must also serve the
  peers' requests for buffers (`network/plan.py`, `PINNED`); `--subset
  pinned` runs these 24 cells;
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
  the MultiWorkerMirroredStrategy twin, distributed_all_reduce's xring and
  its pscpu/xring's stage across workers) 2 (W-1)/W x B / R, whatever the
  towers a worker.
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
  IP/TCP/gRPC framing included) over the timed steps (worker 0's, or the
  controller's, first timed step to the first closing line), scaled to a
  step; distributed_all_reduce's controller link carries the session's
  step calls to worker 0 (the master) and their replies, and the
  liveness probes; in ring cells the counters are also sampled every 5 ms
  through the steps: the time a step each worker link carries more than
  half the nominal rate out, in, and either way (a ring at full duplex
  sends and receives at once); the
  asynchronous workers' phase: how far apart, as a fraction of a step,
  their step ends fall (0 in phase, 0.5 alternating); and the queueing
  delay of a busy link: a TCP connect's time idle and behind a full
  stream.

Goals (issue 16), at 200mbit, 1 PS + 2 workers, lenet: staged
parameter_server at most 1.15x of W x B / R; synchronous parameter_server
and distributed_replicated within 1.05x of 2 x W x B / R;
collective_all_reduce and asynchronous parameter_server within 1.10x of
theirs; with 2 PS tasks and partitioning every PS-type strategy at most
0.55x of its 1-PS step. Issue 32's, on the balanced family: every
strategy's step at most 1.10x max(c0, its bound) (the ring for the
all-reduces, W x B_ps / R for the staged PS, 2 x W x B_ps / R for the
synchronous PS and distributed_replicated). The verdict is the median's,
with the rounds on the other side of the goal.

`--quick` (200mbit, lenet, 2 workers: 1 PS with both twins and the
diagnostic, distributed_all_reduce and 2-tower cells, 2 PS partitioned,
six unshaped cells; 2 rounds of 4 timed steps; 10-15 minutes) writes
`benchmarks/NETWORK_RESULTS_quick.md`; the full run writes
`benchmarks/NETWORK_RESULTS.md` and the `network goals` section of
`benchmarks/RESULTS.md` (run_benchmarks.py keeps it); `--output` writes
the whole file elsewhere and RESULTS.md not at all. `--subset NAME` runs
only the cells of that subset (`allreduce`, `balanced`, `googlenet`,
`buckets`, `pinned`, `c0`) and writes
`benchmarks/NETWORK_<NAME>_RESULTS.md` (`_quick` with `--quick`), naming
the commit measured and the subset, and leaves NETWORK_RESULTS.md and
RESULTS.md alone; `--rounds N` runs N rounds instead of the plan's 2.
"""

import calendar
import json
import os
import re
import signal
import sys
import time

# The models built on tf.compat.v1.layers (googlenet) need Keras 2, which
# TensorFlow 2.16 and later take from tf_keras only with this set before
# TensorFlow is imported (as the benchmark's command does); the tasks
# inherit it.
os.environ.setdefault('TF_USE_LEGACY_KERAS', '1')
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _path in (HERE, ROOT):
  if _path not in sys.path:
    sys.path.insert(0, _path)

# pylint: disable=g-import-not-at-top,wrong-import-position
from benchmarks.network.plan import FULL
from benchmarks.network.plan import QUICK
from benchmarks.network.plan import SubsetError
from benchmarks.network.plan import describe
from benchmarks.network.plan import key
from benchmarks.network.plan import subset_plan
from benchmarks.network.runs import measure_all
from benchmarks.network.runs import task_main
from benchmarks.network.runs import workload_shapes
from benchmarks.network.text import rounds_done
from benchmarks.network.text import section_lines
from benchmarks.network.transfer import estimate_cell_secs
from benchmarks.network.transfer import variable_bytes
from variable_mgr.benchmark.reports import markdown
from variable_mgr.benchmark.reports import measure
# pylint: enable=g-import-not-at-top,wrong-import-position

SECTION = ('network goals', 'run_network_benchmarks.py')


def _raise_interrupt(signum, frame):
  del signum, frame
  raise KeyboardInterrupt()


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
  subset = None
  if '--subset' in argv:
    # Only the cells of a named subset of the plan (SUBSETS), in their own
    # results file; NETWORK_RESULTS.md and RESULTS.md are left alone.
    i = argv.index('--subset')
    subset = argv[i + 1] if i + 1 < len(argv) else ''
    del argv[i:i + 2]
  rounds = None
  if '--rounds' in argv:
    # More (or fewer) rounds than the plan's, e.g. for a subset that the
    # time allows to repeat.
    i = argv.index('--rounds')
    rounds = argv[i + 1] if i + 1 < len(argv) else ''
    del argv[i:i + 2]
    if not rounds.isdigit() or int(rounds) < 1:
      sys.stderr.write('run_network_benchmarks.py: --rounds %s: the number '
                       'of rounds is a whole number of at least 1; pass e.g. '
                       '--rounds 3.\n' % rounds)
      return 2
  show_plan = '--plan' in argv
  if show_plan:
    argv.remove('--plan')
  args, given = measure.script_args(
      __doc__.split('\n')[0], '200mbit, lenet, 2 workers, 1 and 2 PS, both '
      'twins, 2 rounds of few steps (a check, 10-15 minutes)', argv)
  plan = QUICK if args.quick else FULL
  if subset is not None:
    try:
      plan = subset_plan(plan, subset)
    except SubsetError as e:
      sys.stderr.write('run_network_benchmarks.py: %s\n' % e)
      return 2
  if rounds:
    plan = dict(plan, rounds=int(rounds))
  if show_plan:
    return print_plan(plan)
  from variable_mgr.benchmark.cluster import netns  # pylint: disable=g-import-not-at-top
  try:
    netns.check_supported()
  except netns.NetworkUnavailableError as e:
    sys.stderr.write('run_network_benchmarks.py runs its clusters as '
                     '--launch_local_cluster --network_rate does: %s\n' % e)
    return 2
  # SIGTERM unwinds as Ctrl-C does: each cell's `finally` removes its
  # network namespaces and stops its tasks on the way out (the default
  # action would leave them behind).
  signal.signal(signal.SIGTERM, _raise_interrupt)
  source = markdown.source_state(ROOT)
  start = time.time()
  log = measure.make_log(start)
  del given  # The command as typed, this script's own flags too.
  command = markdown.command_line('run_network_benchmarks.py', [
      a for a in as_given if a != '--from_json' and a != from_json])
  output = args.output or os.path.join(results_dir, results_name(
      subset, args.quick))
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  def write(results, final=True):
    title = 'Network benchmark' + (' (a check)' if args.quick else '') + (
        ', subset %s' % subset if subset else '')
    if not from_json:
      elapsed = time.time() - start
      results['written'] = dict(
          source=source, command=command, elapsed=elapsed,
          header=markdown.header(title, 'run_network_benchmarks.py', source,
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

    markdown.write(output, run['header'] + [''] + lines_of()[2:])
    if final and not args.quick and not args.output and not subset:
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
    planned = [key(c) for c in plan['cells']()]
    if results.get('plan') != planned:
      # Another plan's figures would be titled, counted and read as this
      # one's.
      sys.stderr.write(
          '--from_json %s: its run measured %d cells, not the %d of this '
          'plan (%s): pass the --subset and --quick of that run, as its '
          'command gave them (%s).\n' % (
              from_json, len(results.get('plan', [])), len(planned),
              plan.get('subset') or plan['name'],
              results.get('written', {}).get('command', 'not recorded')))
      return 2
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


def results_name(subset, quick):
  """The results file's name: NETWORK_RESULTS.md, or a subset's own
  (NETWORK_ALLREDUCE_RESULTS.md), `_quick` before `.md` for --quick."""
  name = 'NETWORK_%sRESULTS' % ('%s_' % subset.upper() if subset else '')
  return name + ('_quick.md' if quick else '.md')


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