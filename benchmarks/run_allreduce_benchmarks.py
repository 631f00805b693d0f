#!/usr/bin/env python
"""Measures the all-reduce algorithms: traffic, graph cost and step time.

    python benchmarks/run_allreduce_benchmarks.py           # the full run
    python benchmarks/run_allreduce_benchmarks.py --quick   # a check

The full run writes `benchmarks/ALLREDUCE_RESULTS.md` and its goals into a
section of `benchmarks/RESULTS.md`; `--quick` writes
`benchmarks/ALLREDUCE_RESULTS_quick.md` (2 and 4 towers, fewer rounds) so
that a check never overwrites the figures of record.

Two tensor sets, one float32 tensor of each shape on every tower:

- `resnet50`: the shapes of ResNet-50's 161 trainable variables (25.6M
  parameters, 102 MB), as `run_benchmarks.resnet50_variable_shapes()`
  gives them;
- `lenet`: the shapes of the package's LeNet-sized CNN's 8 trainable
  variables (1.66M parameters), one FC layer of 3136x512 holding 97% of the
  bytes.

Towers are virtual CPU devices (`ConfigProto(device_count={'CPU': k})`, soft
placement off). Every candidate all-reduces the same tensors, one variable
a shape per tower on that tower's device; a step is one run of a `tf.group`
of the candidate's outputs (nothing is fetched to the client). Candidates:

- `independent`: each tower takes a `tf.identity` of its own tensors, no
  exchange; the reference of the step-time ratios;
- every algorithm of `variable_mgr.allreduce` through its
  `--all_reduce_spec` name (`copy` is the seed-style round-robin copy),
  alone and wrapped in `packing.with_repacking(fn, n)` for n = 1 and 4;
- TensorFlow's private reference builders from
  `tensorflow.python.distribute.v1.all_reduce` (ring with one subchunk,
  shuffle through CPU 0, recursive halving-doubling), one call per tensor,
  when they import. The halving-doubling builder splits in halves without
  padding, so a tensor whose size k does not divide is zero-padded to a
  multiple of k on each tower first and cut back after.

Figures per (set, k, candidate):

- traffic: the busiest device's sent or received bytes in one step, from the
  partition graphs (`traffic.measure` in a session with
  `traffic.meter_config`), over the ring lower bound 2(k-1)/k x N;
- ops: the ops the all-reduce function adds to the graph;
- graph ops: the ops of a whole graph of one step as the issue counts them
  (its 9,177 ops of the copy and 32,640 of TensorFlow's ring at 8 towers on
  `resnet50`): every tower's tensors made by `tf.random.normal` (6 ops
  each), then the all-reduce;
- build: the wall seconds of the all-reduce function call (median of
  rounds);
- graph build: the wall seconds to build that whole graph of one step into
  a fresh graph (median of rounds);
- step: the wall time of a step over `independent`'s, both in the same
  round (median over rounds of the per-round ratio).

Every session uses `traffic.meter_config` (Grappler and constant folding
off), so the graphs run as built. Variables hold ones; after the metered
step each candidate's outputs are checked to equal k (a wrong result fails
the run).

The machine is shared, so no figure is absolute: each (set, k) pair runs in
its own subprocess, its candidates take turns in rounds (the order rotates
each round), and ratios are computed within a round.
"""

import collections
import contextlib
import datetime
import gc
import json
import os
import platform
import statistics
import sys
import time

import run_benchmarks  # The issue-3 benchmarks, beside this file.

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

ALGORITHMS = ('copy', 'xring', 'xring#2', 'pscpu', 'psgpu', 'rechd', 'hcopy')
REPACKS = (1, 4)
TF_REFERENCES = ('tf ring', 'tf shuffle', 'tf rechd')
INDEPENDENT = 'independent'
BOUND_GOAL = 1.05
COST_GOAL = 1.5
GOAL_ALGORITHMS = ('xring', 'xring#2', 'rechd')
# The repacking goal asks for the bound's traffic at the copy's graph cost;
# psgpu (a reduce-scatter and all-gather through the towers) reaches the
# bound too.
REPACK_GOAL_ALGORITHMS = GOAL_ALGORITHMS + ('psgpu',)

SETS = collections.OrderedDict([
    ('resnet50', "ResNet-50's 161 trainable variable shapes, 25.6M float32 "
                 'parameters'),
    ('lenet', "the package's LeNet-sized CNN's 8 trainable variable shapes, "
              '1.66M float32 parameters, one FC layer of 3136x512'),
])

# One worker per (set, towers): graph builds per candidate (the first into
# the session's graph, the others into fresh graphs; median; at least one
# fresh graph), rounds of
# timed steps (steps per candidate and round), and whether the outputs are
# checked. lenet builds in tens of milliseconds, where the machine's noise is
# of the same size: many builds there;
# resnet50 at 4 and 8 towers holds 400 and 800 MB of tensors and builds
# graphs of up to 30k ops: fewer rounds there.
Config = collections.namedtuple(
    'Config', 'set_name towers build_rounds rounds steps check')
FULL = (Config('lenet', 2, 25, 5, 3, True),
        Config('lenet', 4, 25, 5, 3, True),
        Config('lenet', 8, 25, 5, 3, True),
        Config('resnet50', 2, 3, 3, 1, True),
        Config('resnet50', 4, 3, 3, 1, False),
        Config('resnet50', 8, 3, 2, 1, False))
# Step times again with TensorFlow's BFC allocator on the CPU, for the
# copy of packs: buffers are reused instead of freshly mapped each step.
BFC_ENV = {'TF_CPU_ALLOCATOR_USE_BFC': 'true'}
ALLOCATOR_LABELS = (INDEPENDENT, 'copy', 'copy+repack1', 'copy+repack4',
                    'xring+repack1', 'xring+repack4')
ALLOCATOR_FULL = (Config('resnet50', 2, 1, 3, 1, True),
                  Config('resnet50', 8, 1, 2, 1, False))
QUICK = (Config('lenet', 2, 2, 2, 2, True),
         Config('lenet', 4, 2, 2, 2, True),
         Config('resnet50', 2, 1, 2, 1, True))


def candidates(include_tf):
  names = [INDEPENDENT]
  for name in ALGORITHMS:
    names.append(name)
    names.extend('%s+repack%d' % (name, n) for n in REPACKS)
  if include_tf:
    names.extend(TF_REFERENCES)
  return names


# ---------------------------------------------------------------------------
# In the worker subprocesses: TensorFlow is imported only here.


def _tf():
  import tensorflow  # pylint: disable=g-import-not-at-top
  return tensorflow


def tf_private():
  """TensorFlow's private all-reduce builders, or None."""
  try:
    from tensorflow.python.distribute.v1 import all_reduce  # pylint: disable=g-import-not-at-top
  except ImportError:
    return None
  return all_reduce


def model_variable_shapes(name):
  """The shapes of a package model's trainable variables, in order."""
  if name == 'resnet50':
    return run_benchmarks.resnet50_variable_shapes()
  tf = _tf().compat.v1
  from variable_mgr.benchmark import models  # pylint: disable=g-import-not-at-top
  model = models.get_model(name)
  with tf.Graph().as_default():
    images = tf.placeholder(tf.float32, [1] + list(model.image_shape))
    labels = tf.placeholder(tf.int32, [1])
    model.build(images, labels, is_training=True)
    return [v.shape.as_list() for v in tf.trainable_variables()]


def reduce_fn(label):
  """`fn(tower_tensors, devices) -> [tower][tensor]` for a candidate."""
  tf = _tf()
  from variable_mgr.allreduce import packing  # pylint: disable=g-import-not-at-top
  from variable_mgr.allreduce import spec  # pylint: disable=g-import-not-at-top
  if label == INDEPENDENT:
    def independent(towers, devices):
      out = []
      for row, device in zip(towers, devices):
        with tf.device(device):
          out.append([tf.identity(t) for t in row])
      return out
    return independent
  if label in TF_REFERENCES:
    private = tf_private()

    def reference(towers, devices):
      k = len(devices)
      columns = []
      for i in range(len(towers[0])):
        xs = [row[i] for row in towers]
        if label == 'tf ring':
          columns.append(private.build_ring_all_reduce(
              xs, 1, 1, list(range(k)), tf.add))
        elif label == 'tf shuffle':
          columns.append(private.build_shuffle_all_reduce(
              xs, [devices[0]], tf.add_n))
        else:
          columns.append(_padded_rechd(private, xs, devices))
      return [[column[d] for column in columns] for d in range(k)]
    return reference
  name, _, repack = label.partition('+repack')
  fn = spec.all_reduce_fn(name)
  if repack:
    fn = packing.with_repacking(fn, int(repack))
  return fn


def _padded_rechd(private, xs, devices):
  """TensorFlow's recursive halving-doubling of one tensor. It splits in
  halves without padding, so a tensor whose size k does not divide is padded
  with zeros to a multiple of k first (on each tower) and cut back after."""
  tf = _tf()
  k = len(devices)
  shape = xs[0].shape
  n = shape.num_elements()
  if n % k == 0:
    return private.build_recursive_hd_all_reduce(xs, tf.add)
  padded = []
  for x, device in zip(xs, devices):
    with tf.device(device):
      padded.append(tf.pad(tf.reshape(x, [-1]), [[0, k - n % k]]))
  out = private.build_recursive_hd_all_reduce(padded, tf.add)
  result = []
  for y, device in zip(out, devices):
    with tf.device(device):
      result.append(tf.reshape(y[:n], shape))
  return result


def session_config(k):
  tf = _tf().compat.v1
  from variable_mgr.allreduce import traffic  # pylint: disable=g-import-not-at-top
  return traffic.meter_config(
      tf.ConfigProto(device_count={'CPU': k}, allow_soft_placement=False))


def _build(label, inputs, devices, graph):
  """Builds a candidate into `graph`: (outputs, seconds, ops added)."""
  fn = reduce_fn(label)
  before = len(graph.get_operations())
  with _timing():
    start = time.perf_counter()
    out = fn(inputs, devices)
    seconds = time.perf_counter() - start
  return out, seconds, len(graph.get_operations()) - before


@contextlib.contextmanager
def _timing():
  """No garbage collection inside a timed build (as `timeit` does); what
  the last one left is collected first. Nested, it does nothing."""
  if not gc.isenabled():
    yield
    return
  gc.collect()
  gc.disable()
  try:
    yield
  finally:
    gc.enable()


def task_measure(set_name, towers, shapes, labels, build_rounds, rounds,
                 steps, check):
  tf2 = _tf()
  tf = tf2.compat.v1
  from variable_mgr.allreduce import traffic  # pylint: disable=g-import-not-at-top
  k = towers
  devices = ['/cpu:%d' % d for d in range(k)]
  total_bytes = 4 * sum(_size(s) for s in shapes)
  result = dict(set=set_name, towers=k, tensors=len(shapes),
                total_bytes=total_bytes,
                bound=traffic.ring_lower_bound(k, total_bytes),
                ops={}, build_seconds={}, busiest={}, step_seconds={},
                per_device={})

  builds = collections.defaultdict(list)
  # Traffic and step time: one graph, the variables shared by every
  # candidate.
  with tf.Graph().as_default() as graph:
    reads = []
    for d, device in enumerate(devices):
      with tf.device(device):
        row = []
        for i, s in enumerate(shapes):
          v = tf.Variable(tf.ones(s), name='t%d_v%03d' % (d, i))
          row.append(v.read_value())
        reads.append(row)
    init = tf.global_variables_initializer()
    steps_by_label = {}
    checks = {}
    probe = [max(range(len(shapes)), key=lambda i: _size(shapes[i])),
             min(range(len(shapes)), key=lambda i: _size(shapes[i]))]
    for label in labels:
      with tf.name_scope(label.replace('#', '_').replace('+', '_')
                         .replace(' ', '_')):
        out, seconds, ops = _build(label, reads, devices, graph)
        builds[label].append(seconds)
        result['ops'][label] = ops
        steps_by_label[label] = tf.group(*[t for row in out for t in row])
        if not check:
          continue
        expected = 1.0 if label == INDEPENDENT else float(k)
        errs = []
        for d, device in enumerate(devices):
          with tf.device(device):
            for i in probe:
              errs.append(tf.reduce_max(tf.abs(out[d][i] - expected)))
        with tf.device(devices[0]):
          checks[label] = tf.reduce_max(tf.stack(errs))
  # More builds, each into a fresh graph of one step as the issue counts
  # it: every tower's tensors from `tf.random.normal` (6 ops each), then
  # the all-reduce.
  graph_builds = collections.defaultdict(list)
  result['graph_ops'] = {}
  for r in range(1, max(build_rounds, 2)):
    for label in labels[r % len(labels):] + labels[:r % len(labels)]:
      with tf.Graph().as_default() as scratch, _timing():
        start = time.perf_counter()
        inputs = []
        for device in devices:
          with tf.device(device):
            inputs.append([tf2.random.normal(s) for s in shapes])
        _, seconds, ops = _build(label, inputs, devices, scratch)
        graph_builds[label].append(time.perf_counter() - start)
        builds[label].append(seconds)
        assert ops == result['ops'][label], (label, ops)
        graph_ops = len(scratch.get_operations())
        assert result['graph_ops'].setdefault(label, graph_ops) == graph_ops
  result['build_seconds'] = dict(
      (label, statistics.median(values)) for label, values in builds.items())
  result['graph_build_seconds'] = dict(
      (label, statistics.median(values))
      for label, values in graph_builds.items())
  # The ops repacking itself adds: with_repacking around a function that
  # returns its input.
  from variable_mgr.allreduce import packing  # pylint: disable=g-import-not-at-top
  result['packing_ops'] = {}
  for n in REPACKS:
    with tf.Graph().as_default() as scratch:
      inputs = []
      for device in devices:
        with tf.device(device):
          inputs.append([tf.placeholder(tf.float32, s) for s in shapes])
      before = len(scratch.get_operations())
      packing.with_repacking(lambda t, d: t, n)(inputs, devices)
      result['packing_ops'][n] = len(scratch.get_operations()) - before

  with tf.Session(graph=graph, config=session_config(k)) as sess:
    sess.run(init)
    for label in labels:
      # The metered step is also the candidate's warm-up.
      metered = traffic.measure(sess, steps_by_label[label])
      result['busiest'][label] = traffic.busiest(metered)
      result['per_device'][label] = dict(
          (device.rpartition('/')[2], [t.sent_bytes, t.received_bytes])
          for device, t in sorted(metered.items()))
      if check:
        err = sess.run(checks[label])
        if err != 0.0:
          raise AssertionError('%s: outputs differ from the sum by %g'
                               % (label, err))
    times = collections.defaultdict(list)
    for r in range(rounds):
      order = labels[r % len(labels):] + labels[:r % len(labels)]
      for label in order:
        fetch = steps_by_label[label]
        start = time.perf_counter()
        for _ in range(steps):
          sess.run(fetch)
        times[label].append((time.perf_counter() - start) / steps)
    result['step_seconds'] = dict(times)
  return result


def _size(shape):
  n = 1
  for dim in shape:
    n *= dim
  return n


def task_shapes():
  return dict(shapes=dict((name, model_variable_shapes(name))
                          for name in SETS),
              tf_version=_tf().__version__,
              tf_private=tf_private() is not None)


TASKS = dict(measure=task_measure, shapes=task_shapes)


def worker_main(spec):
  sys.path.insert(0, ROOT)
  kwargs = json.loads(spec)
  task = TASKS[kwargs.pop('task')]
  result = task(**kwargs)
  sys.stdout.write('RESULT ' + json.dumps(result) + '\n')


# ---------------------------------------------------------------------------
# In the driver: no TensorFlow; one subprocess per (set, towers).


def run_worker(log, **spec):
  return run_benchmarks.run_worker(log, script=__file__,
                                   hidden=('shapes', 'labels'), **spec)


def measure(plan, allocator_plan, log):
  results = collections.OrderedDict()
  info = run_worker(log, task='shapes')
  labels = candidates(info['tf_private'])
  for config in plan:
    results[(config.set_name, config.towers)] = run_worker(
        log, task='measure', shapes=info['shapes'][config.set_name],
        labels=labels, **config._asdict())
  allocator = collections.OrderedDict()
  for config in allocator_plan:
    allocator[(config.set_name, config.towers)] = run_worker(
        log, task='measure', shapes=info['shapes'][config.set_name],
        labels=list(ALLOCATOR_LABELS), extra_env=BFC_ENV,
        **config._asdict())
  return info, labels, results, allocator


# ---------------------------------------------------------------------------
# The report.


def step_ratio(run, label):
  return statistics.median([a / b for a, b in zip(run['step_seconds'][label],
                                       run['step_seconds'][INDEPENDENT])])


def bound_ratio(run, label):
  return run['busiest'][label] / run['bound']


def mb(n):
  return n / 1e6


def _worst(results, ratio):
  """The largest `ratio(run)` over the tables, with its set and k."""
  return max((ratio(run), s, k) for (s, k), run in results.items())


def _ratio_to_copy(key, label):
  return lambda run: run[key][label] / run[key]['copy']


COST_MEASURES = (
    ('the issue\'s (whole graph)', 'graph_ops', 'graph_build_seconds'),
    ('the all-reduce alone', 'ops', 'build_seconds'),
)


def goal_rows(results):
  """(goal, candidate, figures, verdict) rows of the traffic goal."""
  rows = []
  for name in GOAL_ALGORITHMS:
    ratio, set_name, k = _worst(results, lambda run: bound_ratio(run, name))
    rows.append(('within %.2fx of the bound, both sets' % BOUND_GOAL, name,
                 'worst %.3fx (%s, k=%d)' % (ratio, set_name, k),
                 run_benchmarks.met(ratio <= BOUND_GOAL)))
  return rows


def cost_rows(results):
  """(measure, candidate, then figures and verdict per set) rows of the
  repacking goal: ops and build within COST_GOAL of the copy's and traffic
  within BOUND_GOAL of the bound, at every tower count of the set."""
  rows = []
  for measure, ops_key, build_key in COST_MEASURES:
    for name in REPACK_GOAL_ALGORITHMS:
      for n in REPACKS:
        label = '%s+repack%d' % (name, n)
        row = [measure, label]
        for set_name in SETS:
          runs = dict((key, run) for key, run in results.items()
                      if key[0] == set_name)
          worst = (
              ('bound', _worst(runs, lambda run: bound_ratio(run, label)),
               BOUND_GOAL),
              ('ops', _worst(runs, _ratio_to_copy(ops_key, label)),
               COST_GOAL),
              ('build', _worst(runs, _ratio_to_copy(build_key, label)),
               COST_GOAL))
          row.append(', '.join('%s %.2fx (k=%d)' % (what, value, k)
                               for what, (value, _, k), _ in worst))
          row.append(run_benchmarks.met(all(value <= goal
                             for _, (value, _, _), goal in worst)))
        rows.append(row)
  return rows


def notes(results, labels):
  """What the goals' figures rest on, and why a goal is missed, in the
  run's own figures."""
  out = []
  w = out.append
  w('## What repacking costs, and why a cost goal can be missed')
  w('')
  w('Per tower, `with_repacking` reshapes each tensor that is not flat to a '
    'vector and back (2 ops; ResNet-50\'s 107 one-dimensional tensors of '
    '161 need none); it builds each pack with one concatenation and cuts '
    'it with one split, splits and joins the few tensors that straddle two '
    'packs, and shares its int32 constants (one per distinct shape or list '
    'of sizes). `copy` needs one op per tensor and tower (an `add_n` on the '
    'summing tower, an `identity` on each other). Measured, the ops that '
    '`with_repacking(fn, n)` adds around a function returning its input, '
    'against the whole `copy` all-reduce:')
  w('')
  w('| set | towers | n | packing ops | per tensor and tower | copy ops | '
    'packing / copy |')
  w('|---|---:|---:|---:|---:|---:|---:|')
  for (set_name, k), run in results.items():
    cells = k * run['tensors']
    for n, ops in sorted(run['packing_ops'].items(), key=lambda i: int(i[0])):
      w('| %s | %d | %s | %d | %.2f | %d | %.2f |' % (
          set_name, k, n, ops, ops / cells, run['ops']['copy'],
          ops / run['ops']['copy']))
  w('')
  w('A reduction of the packs that reaches the bound then adds, per pack '
    'and tower, at least a split, a sum and a concatenation: the ring a '
    'split into k chunks, k-1 `add` ops and a concatenation; halving-'
    'doubling log2 k splits, adds and concatenations; `psgpu` a split, one '
    '`add_n` and a concatenation. With few tensors (`lenet`: 8, of which 4 are not flat) '
    'the copy costs 8 ops a tower, and the packing and the reduction of '
    'even one pack cost more than 1.5x that: on the all-reduce\'s own ops '
    'no packed algorithm can meet the cost goal there. The issue\'s measure '
    'counts the whole graph of the step, where each tensor costs 6 ops '
    'before any reduction.')
  w('')
  w('**Traffic of the candidates above %.2fx of the bound** (busiest and '
    'least busy device, bytes sent or received, whichever is larger):'
    % BOUND_GOAL)
  w('')
  w('| set | towers | candidate | traffic/bound | busiest device | MB | '
    'least busy device | MB |')
  w('|---|---:|---|---:|---|---:|---|---:|')
  for (set_name, k), run in results.items():
    for label in labels:
      if label == INDEPENDENT or bound_ratio(run, label) <= BOUND_GOAL:
        continue
      per = dict((d, max(v)) for d, v in run['per_device'][label].items())
      hi = max(per, key=lambda d: (per[d], d))
      lo = min(per, key=lambda d: (per[d], d))
      w('| %s | %d | %s | %.3f | %s | %.1f | %s | %.1f |' % (
          set_name, k, label, bound_ratio(run, label), hi, mb(per[hi]), lo,
          mb(per[lo])))
  w('')
  w('- `copy` sums each tensor on one device, which receives k-1 copies of '
    'it and sends k-1 sums (k/2 times the bound for that tensor alone); '
    '`hcopy` does the same within each group of towers and across the '
    'groups\' leaders. When one tensor holds most of the bytes (`lenet`) '
    'the device that sums it is far above the bound; with 161 tensors of '
    'unequal sizes placed round-robin (`resnet50`) the load is closer to '
    'even but not equal. Repacking into n packs spreads the sums over n '
    'devices only, so with n < k some towers still do more than their '
    'share.')
  w('- `pscpu` and `tf shuffle` sum on the worker CPU, which is CPU:0, also '
    'tower 0: that device receives (k-1)N and sends (k-1)N, k/2 times the '
    'bound; on a real GPU host the CPU is not a tower.')
  w('- `tf rechd`: TensorFlow\'s `_build_recursive_hd_gather` creates its '
    '`split` ops outside any device scope, so the placer puts them on the '
    'default device, CPU:0, which receives every other tower\'s chunk at '
    'every step of the halving.')
  w('')
  return out


def allocator_notes(results, allocator):
  """Step times of packing with the default and the BFC CPU allocator."""
  if not allocator:
    return []
  out = []
  w = out.append
  w('## Step time of packing on CPU towers')
  w('')
  w('Packing copies every gradient into a pack and back out each step. On '
    'CPU towers those copies cost more than their bytes suggest: the '
    'default CPU allocator hands buffers above glibc\'s mmap threshold (at '
    'most 32 MB) back to the system when they are freed, so each step '
    'faults its large buffers in afresh (one pack of `resnet50` is 102 MB; '
    'four are 26 MB each). The same candidates again in a run with %s, '
    'whose pools keep the buffers (step time over `independent` of the '
    'same run; step ms in brackets):' % ', '.join(
        '`%s=%s`' % kv for kv in sorted(BFC_ENV.items())))
  w('')
  w('| set | towers | candidate | default allocator | BFC allocator |')
  w('|---|---:|---|---:|---:|')
  for key, run in allocator.items():
    default = results.get(key)
    for label in ALLOCATOR_LABELS:
      if label == INDEPENDENT:
        continue
      cells = []
      for r in (default, run):
        if r is None:
          cells.append('-')
        else:
          cells.append('%.2f (%.1f)' % (
              step_ratio(r, label), 1000 * statistics.median(r['step_seconds'][label])))
      w('| %s | %d | %s | %s |' % (key[0], key[1], label, ' | '.join(cells)))
  w('')
  return out


def _s(n):
  return '' if n == 1 else 's'


def report(info, labels, results, plan, command, elapsed, allocator=None):
  out = []
  w = out.append
  cpu, nproc, _ = run_benchmarks.machine_lines()
  load = os.getloadavg()
  w('# All-reduce benchmarks')
  w('')
  w('Written by `%s` on %s (%.0f s).' % (
      command, datetime.date.today().isoformat(), elapsed))
  w('')
  w('- TensorFlow %s, Python %s, %s' % (
      info['tf_version'], platform.python_version(), cpu))
  w('- nproc: %s; load average at the end of the run: %.2f, %.2f, %.2f '
    '(the machine is shared)' % ((nproc,) + tuple(load)))
  w('- towers: virtual CPU devices; sessions with Grappler and constant '
    'folding off (`traffic.meter_config`), soft placement off; one '
    'subprocess per table')
  w('- rounds per table: graph builds (median; the first into the session\'s '
    'graph, the others into fresh graphs of the whole step), rounds of timed '
    'steps (candidates in rotating order, after one metered warm-up step '
    'each), whether the outputs were checked to equal the sum:')
  for c in plan:
    w('  - `%s`, %d towers: %d build%s, %d round%s of %d step%s, %s' % (
        c.set_name, c.towers, c.build_rounds, _s(c.build_rounds), c.rounds,
        _s(c.rounds), c.steps, _s(c.steps),
        'outputs checked' if c.check else 'outputs not checked'))
  w('- TensorFlow private builders (`tensorflow.python.distribute.v1.'
    'all_reduce`): %s' % ('measured' if info['tf_private']
                          else 'not importable, not measured'))
  w('')
  w('Tensor sets (one float32 tensor of each shape a tower):')
  w('')
  for set_name, text in SETS.items():
    run = next(r for (s, _), r in results.items() if s == set_name)
    w('- `%s`: %s; %d tensors, N = %.1f MB a tower' % (
        set_name, text, run['tensors'], mb(run['total_bytes'])))
  w('')
  w('Columns: **traffic/bound** = the busiest device\'s sent or received '
    'bytes in one step (partition graphs) over 2(k-1)/k x N; **ops** = ops '
    'the all-reduce adds to the graph; **graph ops** = the ops of a whole '
    'graph of one step as the issue counts them (each tower\'s tensors from '
    '`tf.random.normal`, 6 ops each, then the all-reduce); **build** = '
    'seconds to build the all-reduce; **graph build** = seconds to build the '
    'whole graph of one step; **x copy** = over the `copy` row of the same '
    'table; **step/indep.** = '
    'median per-round step time over `independent` (each tower an identity '
    'of its own tensors, no exchange). `+repackN` = '
    '`packing.with_repacking(fn, N)`; `tf ...` = TensorFlow\'s private '
    'builders, one call per tensor.')
  w('')
  w('## Goals')
  w('')
  w('| goal | candidate | figures | verdict |')
  w('|---|---|---|---|')
  for row in goal_rows(results):
    w('| %s |' % ' | '.join(row))
  w('')
  w('Repacked: ops and build <= %.1fx the copy\'s and traffic <= %.2fx the '
    'bound, at every tower count of a set (worst figure of each, and its '
    'k). The issue\'s measure counts a whole graph of one step (its 9,177 '
    'and 32,640 ops are this measure: see `pscpu` and `tf ring` at 8 towers '
    'on `resnet50`); the all-reduce alone counts only what the all-reduce '
    'adds.' % (COST_GOAL, BOUND_GOAL))
  w('')
  header = ['measure', 'candidate']
  for set_name in SETS:
    header += ['`%s`' % set_name, 'verdict']
  w('| %s |' % ' | '.join(header))
  w('|%s' % ('---|' * len(header)))
  for row in cost_rows(results):
    w('| %s |' % ' | '.join(row))
  w('')
  out.extend(notes(results, labels))
  out.extend(allocator_notes(results, allocator or {}))
  for (set_name, k), run in results.items():
    w('## `%s`, %d towers' % (set_name, k))
    w('')
    w('Bound 2(k-1)/k x N = %.1f MB; `independent` step %.1f ms.' % (
        mb(run['bound']), 1000 * statistics.median(run['step_seconds'][INDEPENDENT])))
    w('')
    w('| candidate | traffic/bound | busiest MB | ops | x copy | graph ops '
      '| x copy | build s | x copy | graph build s | x copy | step ms '
      '| step/indep. |')
    w('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
    for label in labels:
      cells = [label]
      if label == INDEPENDENT:
        cells.append('-')
      else:
        cells.append('%.3f' % bound_ratio(run, label))
      cells.append('%.1f' % mb(run['busiest'][label]))
      for key, form in (('ops', '%d'), ('graph_ops', '%d'),
                        ('build_seconds', '%.3f'),
                        ('graph_build_seconds', '%.3f')):
        cells.append(form % run[key][label])
        cells.append('%.2f' % (run[key][label] / run[key]['copy']))
      cells.append('%.1f' % (1000 * statistics.median(run['step_seconds'][label])))
      cells.append('1.00' if label == INDEPENDENT
                   else '%.2f' % step_ratio(run, label))
      w('| %s |' % ' | '.join(cells))
    w('')
  return out


def summary(lines, command):
  """The all-reduce goals for RESULTS.md: the Goals table of `lines`."""
  start = lines.index('## Goals')
  end = next(i for i in range(start + 1, len(lines))
             if lines[i].startswith('## '))
  return (['## All-reduce goals (issue 6)', '',
           'From `%s`; measurement, columns and every table in '
           '[ALLREDUCE_RESULTS.md](ALLREDUCE_RESULTS.md).' % command]
          + lines[start + 1:end])


def main(argv=None):
  args, given = run_benchmarks.parse_args(
      __doc__.split('\n')[0],
      '2 and 4 towers, fewer rounds (a check, < 2 min)', argv)
  if args.worker:
    worker_main(args.worker)
    return 0
  plan = QUICK if args.quick else FULL
  allocator_plan = () if args.quick else ALLOCATOR_FULL
  output = args.output or os.path.join(
      HERE, 'ALLREDUCE_RESULTS_quick.md' if args.quick
      else 'ALLREDUCE_RESULTS.md')
  command = run_benchmarks.command_line('run_allreduce_benchmarks.py', given)
  start = time.time()
  log = run_benchmarks.make_log(start)
  info, labels, results, allocator = measure(plan, allocator_plan, log)
  elapsed = time.time() - start
  lines = report(info, labels, results, plan, command, elapsed, allocator)
  with open(output, 'w') as f:
    f.write('\n'.join(lines) + '\n')
  if not args.quick and not args.output:
    results_md = os.path.join(HERE, 'RESULTS.md')
    run_benchmarks.write_section(results_md, summary(lines, command))
    log('wrote the all-reduce goals into %s' % results_md)
  if args.json:
    with open(args.json, 'w') as f:
      json.dump({'plan': plan, 'info': info, 'results': dict(
          ('%s/%d' % key, run) for key, run in results.items()),
                 'allocator': dict(('%s/%d' % key, run)
                                   for key, run in allocator.items())}, f,
                indent=1)
  log('wrote %s' % output)
  return 0


if __name__ == '__main__':
  sys.exit(main())
