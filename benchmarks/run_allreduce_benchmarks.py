#!/usr/bin/env python
"""Measures the all-reduce algorithms: traffic, graph cost and step time.

    python benchmarks/run_allreduce_benchmarks.py                 # the full run
    python benchmarks/run_allreduce_benchmarks.py --quick         # a check
    python benchmarks/run_allreduce_benchmarks.py --quick --output /tmp/a.md

The full run writes the whole of `benchmarks/ALLREDUCE_RESULTS.md` and its
goals into their section of `benchmarks/RESULTS.md`; `--quick` writes
`benchmarks/ALLREDUCE_RESULTS_quick.md` (2 and 4 towers, fewer rounds) and
`--output` any other file, and neither touches RESULTS.md, so that a check
never overwrites the figures of record.

Two tensor sets, one float32 tensor of each shape on every tower:

- `resnet50`: the shapes of ResNet-50's 161 trainable variables (25.6M
  parameters, 102 MB), `catalog.variable_shapes('resnet50')`;
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
- graph ops: the ops of a whole graph of one step as issue 6 counts them
  (its figures, 9,177 ops for the copy and 32,640 for TensorFlow's ring at
  8 towers on `resnet50`, are from outside this script): every tower's
  tensors made by `tf.random.normal` (6 ops each), then the all-reduce;
- build: the wall seconds of the all-reduce function call, in rounds (the
  first into the session's graph, then into fresh graphs, the candidates'
  order rotating); the ratio to `copy` is taken within each round;
- graph build: the wall seconds to build that whole graph of one step into
  a fresh graph, in the same rounds;
- step: the wall time of a step over `independent`'s, both in the same
  round (`measure.interleaved_rounds`).

Every session uses `traffic.meter_config` (Grappler and constant folding
off), so the graphs run as built.

What is checked: tower d's copy of tensor i holds `(j + 7919 i) mod 65521
+ d` at element j, small integers whose sums are exact in float32. After
its metered step, every candidate's outputs, every tensor on every tower at
every tower count, are fetched (one tower a run) and compared with the sum
that NumPy computes from the same inputs (`independent`: with its own
inputs); any difference fails the run. A missing or doubled tower, a
misplaced tensor or a chunk moved by other than a multiple of 65,521
elements changes the values.

The machine is shared, so no figure is absolute: each (set, k) pair runs in
its own subprocess, its candidates take turns in rounds (the order rotates
each round), and ratios are computed within a round.
"""

import collections
import functools
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _path in (HERE, ROOT):
  if _path not in sys.path:
    sys.path.insert(0, _path)

# pylint: disable=g-import-not-at-top,wrong-import-position
from allreduce_plan import ALLOCATOR_FULL
from allreduce_plan import ALLOCATOR_LABELS
from allreduce_plan import BFC_ENV
from allreduce_plan import FULL
from allreduce_plan import INDEPENDENT
from allreduce_plan import MODULUS
from allreduce_plan import QUICK
from allreduce_plan import REPACKS
from allreduce_plan import SETS
from allreduce_plan import STRIDE
from allreduce_plan import TF_REFERENCES
from allreduce_plan import candidates
from variable_mgr.benchmark.reports import markdown
from variable_mgr.benchmark.reports import measure
# pylint: enable=g-import-not-at-top,wrong-import-position


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


def inputs(shape, index, tower):
  """Tower `tower`'s values of tensor `index` (see the module docstring)."""
  n = _size(shape)
  pattern = (np.arange(n, dtype=np.int64) + STRIDE * index) % MODULUS
  return (pattern + tower).astype(np.float32).reshape(shape)


def input_sums(shapes, k):
  """NumPy's sum over k towers of each tensor's inputs."""
  sums = []
  for i, shape in enumerate(shapes):
    total = inputs(shape, i, 0)
    for d in range(1, k):
      total = total + inputs(shape, i, d)
    sums.append(total)
  return sums


def check_outputs(sess, label, out, shapes, sums):
  """Fetches every output of `label`, one tower a run, and compares each
  tensor with `sums` (`input_sums`; independent: with its own input).

  Raises:
    AssertionError: naming the first tower and tensor that differ.
  """
  for d in range(len(out)):
    values = sess.run(out[d])
    for i, (value, shape) in enumerate(zip(values, shapes)):
      want = inputs(shape, i, d) if label == INDEPENDENT else sums[i]
      if value.shape != want.shape or not np.array_equal(value, want):
        raise AssertionError(
            '%s: tower %d, tensor %d %s: output differs from the sum of the '
            'inputs by up to %g' % (label, d, i, list(shape), float(
                np.max(np.abs(value - want))) if value.shape == want.shape
                                    else float('nan')))


def _build(label, tensors, devices, graph):
  """Builds a candidate into `graph`: (outputs, seconds, ops added)."""
  fn = reduce_fn(label)
  before = len(graph.get_operations())
  with measure.no_gc():
    start = time.perf_counter()
    out = fn(tensors, devices)
    seconds = time.perf_counter() - start
  return out, seconds, len(graph.get_operations()) - before


def task_measure(set_name, towers, shapes, labels, build_rounds, rounds,
                 steps):
  tf2 = _tf()
  tf = tf2.compat.v1
  from variable_mgr.allreduce import packing  # pylint: disable=g-import-not-at-top
  from variable_mgr.allreduce import traffic  # pylint: disable=g-import-not-at-top
  k = towers
  devices = ['/cpu:%d' % d for d in range(k)]
  total_bytes = 4 * sum(_size(s) for s in shapes)
  result = dict(set=set_name, towers=k, tensors=len(shapes),
                total_bytes=total_bytes,
                bound=traffic.ring_lower_bound(k, total_bytes),
                ops={}, busiest={}, per_device={}, graph_ops={},
                checked=[])
  builds = collections.defaultdict(list)
  # Traffic and step time: one graph, the variables shared by every
  # candidate, each initialised from a placeholder fed its inputs.
  with tf.Graph().as_default() as graph:
    reads, initializers = [], []
    for d, device in enumerate(devices):
      with tf.device(device):
        row, inits, feeds = [], [], {}
        for i, s in enumerate(shapes):
          value = tf.placeholder(tf.float32, s, name='t%d_in%03d' % (d, i))
          v = tf.Variable(value, name='t%d_v%03d' % (d, i))
          inits.append(v.initializer)
          feeds[value] = (s, i, d)
          row.append(v.read_value())
        initializers.append((inits, feeds))
        reads.append(row)
    step_ops, outputs = {}, {}
    for label in labels:
      with tf.name_scope(label.replace('#', '_').replace('+', '_')
                         .replace(' ', '_')):
        out, seconds, ops = _build(label, reads, devices, graph)
      builds[label].append(seconds)
      result['ops'][label] = ops
      outputs[label] = out
      step_ops[label] = tf.group(*[t for row in out for t in row])
  # More builds, each into a fresh graph of one step as the issue counts
  # it: every tower's tensors from `tf.random.normal` (6 ops each), then
  # the all-reduce; the order rotates each round.
  graph_builds = collections.defaultdict(list)
  for r in range(1, max(build_rounds, 2)):
    for label in measure.rotated(labels, r):
      with tf.Graph().as_default() as scratch, measure.no_gc():
        start = time.perf_counter()
        tensors = []
        for device in devices:
          with tf.device(device):
            tensors.append([tf2.random.normal(s) for s in shapes])
        _, seconds, ops = _build(label, tensors, devices, scratch)
        graph_builds[label].append(time.perf_counter() - start)
        builds[label].append(seconds)
        assert ops == result['ops'][label], (label, ops)
        graph_ops = len(scratch.get_operations())
        assert result['graph_ops'].setdefault(label, graph_ops) == graph_ops
  result['build_rounds'] = dict(builds)
  result['graph_build_rounds'] = dict(graph_builds)
  # The ops repacking itself adds: with_repacking around a function that
  # returns its input.
  result['packing_ops'] = {}
  for n in REPACKS:
    with tf.Graph().as_default() as scratch:
      placeholders = []
      for device in devices:
        with tf.device(device):
          placeholders.append([tf.placeholder(tf.float32, s) for s in shapes])
      before = len(scratch.get_operations())
      packing.with_repacking(lambda t, d: t, n)(placeholders, devices)
      result['packing_ops'][n] = len(scratch.get_operations()) - before

  sums = input_sums(shapes, k)
  with tf.Session(graph=graph, config=session_config(k)) as sess:
    for ops, feeds in initializers:
      sess.run(ops, feed_dict=dict((ph, inputs(*spec))
                                   for ph, spec in feeds.items()))
    for label in labels:
      # The metered step is also the candidate's warm-up.
      metered = traffic.measure(sess, step_ops[label])
      result['busiest'][label] = traffic.busiest(metered)
      result['per_device'][label] = dict(
          (device.rpartition('/')[2], [t.sent_bytes, t.received_bytes])
          for device, t in sorted(metered.items()))
      check_outputs(sess, label, outputs[label], shapes, sums)
      result['checked'].append(label)
    result['step_seconds'] = dict(measure.interleaved_rounds(
        collections.OrderedDict((label, functools.partial(
            sess.run, step_ops[label])) for label in labels), rounds, steps))
  return result


def _size(shape):
  n = 1
  for dim in shape:
    n *= dim
  return n


def task_shapes():
  from variable_mgr.benchmark.models import catalog  # pylint: disable=g-import-not-at-top
  return dict(shapes=dict((name, catalog.variable_shapes(name))
                          for name in SETS),
              tf_version=_tf().__version__,
              tf_private=tf_private() is not None)


TASKS = dict(measure=task_measure, shapes=task_shapes)


# ---------------------------------------------------------------------------
# In the driver: no TensorFlow; one subprocess per (set, towers).


def run_worker(log, **spec):
  return measure.run_in_subprocess(__file__, log, hidden=('shapes', 'labels'),
                                   **spec)


def measure_all(plan, allocator_plan, log):
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


def main(argv=None):
  args, given = measure.script_args(
      __doc__.split('\n')[0],
      '2 and 4 towers, fewer rounds (a check, < 2 min)', argv)
  if args.worker:
    measure.worker_main(TASKS, args.worker)
    return 0
  import allreduce_report  # pylint: disable=g-import-not-at-top
  import run_benchmarks  # pylint: disable=g-import-not-at-top
  plan = QUICK if args.quick else FULL
  allocator_plan = () if args.quick else ALLOCATOR_FULL
  output = args.output or os.path.join(
      HERE, 'ALLREDUCE_RESULTS_quick.md' if args.quick
      else 'ALLREDUCE_RESULTS.md')
  command = markdown.command_line('run_allreduce_benchmarks.py', given)
  source = markdown.source_state(ROOT)
  start = time.time()
  log = measure.make_log(start)
  info, labels, results, allocator = measure_all(plan, allocator_plan, log)
  lines = allreduce_report.lines(info, labels, results, plan, source,
                                 command, time.time() - start, allocator)
  markdown.write(output, lines)
  if not args.quick and not args.output:
    results_md = os.path.join(HERE, 'RESULTS.md')
    run_benchmarks.write_section(results_md,
                                 allreduce_report.summary(lines, command))
    log('wrote the all-reduce goals into %s' % results_md)
  if args.json:
    import json  # pylint: disable=g-import-not-at-top
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
