#!/usr/bin/env python
"""Measures every local strategy against `independent` and MirroredStrategy.

    python benchmarks/run_benchmarks.py                            # the full run
    python benchmarks/run_benchmarks.py --quick                    # a check
    python benchmarks/run_benchmarks.py --quick --output /tmp/q.md

The full run writes the whole of `benchmarks/RESULTS.md` but the all-reduce
section (`run_allreduce_benchmarks.py` writes that one and this script
keeps it); `--quick` writes `benchmarks/RESULTS_quick.md` (fewer rounds and
steps; lenet on 2 and 4 towers, resnet50_vars on 2; memory over 100 steps),
and `--output` any other file, so that a check never overwrites the figures
of record. Both take longer the busier the machine is: most of their time
is TensorFlow building and optimising graphs of tens of thousands of ops.
The log gives each worker's time; the report the total.

Two workloads, both built by the package's own harness
(`variable_mgr.benchmark.training.harness.build_training_graph`):

- `lenet`: the package's LeNet-sized CNN, 8 images a tower;
- `resnet50_vars`: ResNet-50's 161 trainable variable shapes (25.6M
  parameters) behind a trivial forward pass (each variable enters the loss
  as `x * reduce_sum(v) / v.size`, x a scalar of the batch), so that reading,
  aggregating and updating variables is nearly all of a step.

Towers are virtual CPU devices (`ConfigProto(device_count={'CPU': k})`,
soft placement off). MirroredStrategy runs the same model function in a
`tf.compat.v1` graph through `strategy.extended.call_for_each_replica` with
TensorFlow's own v1 SGD optimizer, on the same virtual devices.

How it measures is `variable_mgr.benchmark.reports.measure`: each (workload,
towers) pair in a process of its own, its candidates built there and timed
in interleaved rounds; every ratio is taken within a round and reported as
its median with the range of the rounds, and every verdict is the median's
against the goal, with the rounds that fall on the other side.
"""

import collections
import functools
import gc
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _path in (HERE, ROOT):
  if _path not in sys.path:
    sys.path.insert(0, _path)

# pylint: disable=g-import-not-at-top,wrong-import-position
from results_plan import BATCH_SIZE
from results_plan import CANDIDATES
from results_plan import FULL
from results_plan import MEMORY_TOWERS
from results_plan import MEMORY_WORKLOAD
from results_plan import MIRRORED
from results_plan import QUICK
from results_plan import STRATEGIES
from results_plan import WORKLOADS
from variable_mgr.benchmark.reports import markdown
from variable_mgr.benchmark.reports import measure
# pylint: enable=g-import-not-at-top,wrong-import-position


# ---------------------------------------------------------------------------
# In the worker subprocesses: TensorFlow is imported only here.


def _tf():
  import tensorflow  # pylint: disable=g-import-not-at-top
  return tensorflow


def resnet50_variable_shapes():
  """The shapes of `catalog.resnet50`'s trainable variables, in order."""
  from variable_mgr.benchmark.models import catalog  # pylint: disable=g-import-not-at-top
  return catalog.variable_shapes('resnet50')


def register_resnet50_vars(shapes=None):
  """Adds the `resnet50_vars` model to the harness's model table.

  Args:
    shapes: the variable shapes (default: `resnet50_variable_shapes()`,
      computed here).

  Its loss is the softmax cross-entropy of logits
  `(sum_i x * mean(v_i) + mean(image)) * class_weights`, x the batch mean:
  every variable gets a dense gradient of its full size (a broadcast of one
  scalar) and the forward pass costs one read of each variable, with as few
  ops a variable as TensorFlow's gradients allow, so that the graph is
  mostly what the strategy adds.
  """
  tf = _tf().compat.v1
  from variable_mgr.benchmark.models import catalog  # pylint: disable=g-import-not-at-top
  if 'resnet50_vars' in catalog.MODELS:
    return
  shapes = shapes or resnet50_variable_shapes()

  def build_fn(layers, images, num_classes):
    del layers  # no weight decay: the variables are not layer weights
    x = tf.reduce_mean(images)
    sums = []
    for i, shape in enumerate(shapes):
      v = tf.get_variable('var%03d' % i, shape, tf.float32,
                          initializer=tf.zeros_initializer())
      size = 1
      for dim in shape:
        size *= dim
      # reduce_sum's gradient is one broadcast; reduce_mean's adds a
      # full-size division.
      sums.append(tf.reduce_sum(v) * (1.0 / size))
    per_image = tf.reduce_mean(images, [1, 2, 3])
    class_weights = tf.range(1.0, num_classes + 1.0) / num_classes
    return (tf.expand_dims(per_image + x * tf.add_n(sums), 1) *
            tf.expand_dims(class_weights, 0))

  catalog.MODELS['resnet50_vars'] = catalog.Model(
      'resnet50_vars', (8, 8, 1), 10, 0.01, 0.0, BATCH_SIZE['resnet50_vars'],
      build_fn)


Built = collections.namedtuple(
    'Built', 'graph fetches setup session_config build_seconds op_count '
             'variable_count detail')


def build_ours(label, workload, towers):
  """One of the package's strategies through the package's harness."""
  import variable_mgr  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.training import harness  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.training import run_config  # pylint: disable=g-import-not-at-top
  host = variable_mgr.LocalBenchmarkCnn(towers)
  config = run_config.BenchmarkConfig(
      model=workload, num_gpus=towers, batch_size=BATCH_SIZE[workload],
      **STRATEGIES[label]).resolved()
  start = time.perf_counter()
  g = harness.build_training_graph(config, host)
  seconds = time.perf_counter() - start
  fetches = {'train': g.train_op, 'loss': g.loss}
  setup = [op for op in (g.init_op, g.post_init_op, g.staging_put_op)
           if op is not None]
  if g.staging_put_op is not None:
    # As the harness runs it: fill once, then get and put every step.
    fetches['staging'] = g.staging_put_op
  with g.graph.as_default():
    variable_count = len(_tf().compat.v1.global_variables())
  return Built(g.graph, fetches, setup, host.session_config(), seconds,
               len(g.graph.get_operations()), variable_count,
               type(g.mgr).__name__)


def build_mirrored(workload, towers):
  """The same model and SGD step under tf.distribute.MirroredStrategy."""
  tf2 = _tf()
  tf = tf2.compat.v1
  from variable_mgr.benchmark.training import harness  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.models import catalog  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.training import optimizers  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.training import run_config  # pylint: disable=g-import-not-at-top
  model = catalog.get_model(workload)
  config = run_config.BenchmarkConfig(
      model=workload, batch_size=BATCH_SIZE[workload]).resolved()
  devices = ['/cpu:%d' % i for i in range(towers)]
  graph = tf.Graph()
  start = time.perf_counter()
  with graph.as_default():
    tf.set_random_seed(config.seed)
    strategy = tf2.distribute.MirroredStrategy(devices=devices)
    with tf.device('/cpu:0'):
      global_step = tf.train.get_or_create_global_step()
    with strategy.scope():
      optimizer = optimizers.make_optimizer(
          config, global_step, config.batch_size * towers)

      def tower_fn():
        replica = tf.distribute.get_replica_context().replica_id_in_sync_group
        with tf.device('/cpu:0'):
          images, labels = harness.synthetic_inputs(
              model, config.batch_size, config.seed, replica)
        loss = model.build(images, labels, is_training=True,
                           weight_decay=config.weight_decay)
        return optimizer.minimize(loss), loss

      train_ops, losses = strategy.extended.call_for_each_replica(tower_fn)
      with tf.control_dependencies([strategy.group(train_ops)]):
        train_op = tf.group(global_step.assign_add(1))
      loss = strategy.reduce(tf2.distribute.ReduceOp.MEAN, losses, axis=None)
      init_op = tf.global_variables_initializer()
    variable_count = sum(len(getattr(v, 'values', [v]))
                         for v in tf.global_variables())
    graph.finalize()
  seconds = time.perf_counter() - start
  cross_device = strategy.extended._cross_device_ops  # pylint: disable=protected-access
  session_config = tf.ConfigProto(device_count={'CPU': towers},
                                  allow_soft_placement=False)
  return Built(graph, {'train': train_op, 'loss': loss}, [init_op],
               session_config, seconds, len(graph.get_operations()),
               variable_count,
               type(cross_device).__name__ if cross_device else 'default')


def build(label, workload, towers):
  if label == MIRRORED:
    return build_mirrored(workload, towers)
  return build_ours(label, workload, towers)


def open_session(built):
  tf = _tf().compat.v1
  sess = tf.Session(graph=built.graph, config=built.session_config)
  for op in built.setup:
    sess.run(op)
  return sess


def warm_up_runtime(towers):
  """Runs one op in a throw-away session, so that the runtime's one-time
  allocations (thread pools, allocators) are not charged to the first
  candidate's resident set."""
  tf = _tf().compat.v1
  with tf.Graph().as_default() as graph:
    value = tf.constant(1.0) + 1.0
  config = tf.ConfigProto(device_count={'CPU': towers},
                          allow_soft_placement=False)
  with tf.Session(graph=graph, config=config) as sess:
    sess.run(value)


def task_steps(workload, towers, rounds, steps, warmup, calibration_ops):
  """Every candidate on one (workload, towers), interleaved in rounds.

  Each candidate's graph build is timed with the objects of the graphs
  before it frozen out of the garbage collector's scans, so that it costs
  what it would in a fresh process; the resident set it adds (graph,
  session, variables, the buffers of its warm-up steps) is recorded too.
  The process first times `calibration_ops` trivial ops
  (`measure.op_build_seconds`): what one op costs on the machine at that
  moment.
  """
  load = os.getloadavg()[0]
  calibration = measure.op_build_seconds(calibration_ops)
  warm_up_runtime(towers)
  built, sessions, rss_added = {}, {}, {}
  for label in CANDIDATES:
    gc.collect()
    gc.freeze()
    before = measure.resident_bytes()
    built[label] = build(label, workload, towers)
    sessions[label] = open_session(built[label])
    measure.time_steps(_step(sessions[label], built[label]), warmup)
    rss_added[label] = measure.resident_bytes() - before
  per_round = measure.interleaved_rounds(
      collections.OrderedDict((l, _step(sessions[l], built[l]))
                              for l in CANDIDATES), rounds, steps)
  profiles = dict((l, measure.op_time_by_type(sessions[l], built[l].fetches))
                  for l in CANDIDATES)
  for sess in sessions.values():
    sess.close()
  return {'step_seconds': per_round, 'profiles': profiles,
          'build_seconds': {l: built[l].build_seconds for l in CANDIDATES},
          'op_count': {l: built[l].op_count for l in CANDIDATES},
          'variable_count': {l: built[l].variable_count for l in CANDIDATES},
          'rss_added': rss_added, 'peak_rss': measure.peak_resident_bytes(),
          'calibration': calibration, 'load': load,
          'detail': {l: built[l].detail for l in CANDIDATES},
          'tf_version': _tf().__version__}


def _step(sess, built):
  return functools.partial(sess.run, built.fetches)


def task_memory(label, workload, towers, warmup, steps, sample_every):
  """Resident set after warm-up and every `sample_every` steps after it."""
  built = build(label, workload, towers)
  if not built.graph.finalized:
    raise RuntimeError('%s: the graph is not finalized' % label)
  sess = open_session(built)
  step = _step(sess, built)
  measure.time_steps(step, warmup)
  samples = [measure.resident_bytes()]
  for _ in range(steps // sample_every):
    measure.time_steps(step, sample_every)
    samples.append(measure.resident_bytes())
  sess.close()
  return {'rss_samples': samples, 'sample_every': sample_every,
          'peak_rss': measure.peak_resident_bytes()}


def _with_workload(task):
  """`task`, with resnet50_vars registered first: from the `shapes` passed,
  or computed (and returned as the result's `shapes`)."""

  def run(shapes=None, **kwargs):
    needed = kwargs.get('workload') == 'resnet50_vars'
    if needed:
      if shapes is None:
        computed = resnet50_variable_shapes()
        register_resnet50_vars(computed)
        result = task(**kwargs)
        result['shapes'] = computed
        return result
      register_resnet50_vars(shapes)
    return task(**kwargs)

  return run


TASKS = {'steps': _with_workload(task_steps),
         'memory': _with_workload(task_memory)}


# ---------------------------------------------------------------------------
# In the driver: no TensorFlow; one subprocess per measurement.


# RESULTS.md holds sections that other scripts write: the all-reduce goals
# of `run_allreduce_benchmarks.py` and the library overhead of
# `run_overhead_benchmarks.py`. Each lies between two markers; rewriting the
# file keeps every section, and a script rewrites only its own.
ALLREDUCE_SECTION = ('all-reduce goals', 'run_allreduce_benchmarks.py')
_SECTION = re.compile(
    r'<!-- (?P<name>[^:>]+): written by (?P<script>[^;>]+); kept by '
    r'run_benchmarks\.py -->\n.*?<!-- end of (?P=name) -->', re.S)


def section_markers(name, script):
  """The (begin, end) marker lines of section `name`, written by `script`."""
  return ('<!-- %s: written by %s; kept by run_benchmarks.py -->' %
          (name, script), '<!-- end of %s -->' % name)


SECTION_BEGIN, SECTION_END = section_markers(*ALLREDUCE_SECTION)


def _split_sections(text):
  """`(text without its sections, [(name, section text)] in file order)`."""
  sections = [(m.group('name'), m.group(0)) for m in _SECTION.finditer(text)]
  rest = _SECTION.sub('', text)
  return re.sub(r'\n{3,}', '\n\n', rest), sections


def _read_sections(path):
  if not os.path.exists(path):
    return '', []
  with open(path) as f:
    return _split_sections(f.read())


def _write(path, rest, sections):
  text = rest.rstrip('\n') + '\n'
  for _, section in sections:
    text += '\n' + section + '\n'
  with open(path, 'w') as f:
    f.write(text)


def write_keeping_section(path, text):
  """Writes `text` to `path`, followed by every section `path` held."""
  _write(path, text, _read_sections(path)[1])


def write_section(path, lines, name=ALLREDUCE_SECTION[0],
                  script=ALLREDUCE_SECTION[1]):
  """Replaces (or appends) section `name` of `path` with `lines`, keeping
  the file's other sections."""
  rest, sections = _read_sections(path)
  begin, end = section_markers(name, script)
  section = '\n'.join([begin] + list(lines) + [end])
  names = [n for n, _ in sections]
  if name in names:
    sections[names.index(name)] = (name, section)
  else:
    sections.append((name, section))
  _write(path, rest, sections)


def run_worker(log, **spec):
  return measure.run_in_subprocess(__file__, log, hidden=('shapes',), **spec)


def measure_all(plan, log):
  """Every measurement of `plan`: {'steps': {(workload, towers): run},
  'memory': {label: run}}."""
  results = {'steps': collections.OrderedDict(), 'memory': {}}
  # ResNet-50's shapes: computed by the first worker that needs them.
  shapes = []

  def extra(workload):
    return {'shapes': shapes[0]} if shapes and workload == 'resnet50_vars' \
        else {}

  log('step times and graph builds (each candidate in turn, %d rounds of %d '
      'steps)' % (plan['rounds'], plan['steps']))
  for workload in WORKLOADS:
    for towers in plan['towers'][workload]:
      run = run_worker(
          log, task='steps', workload=workload, towers=towers,
          rounds=plan['rounds'], steps=plan['steps'], warmup=plan['warmup'],
          calibration_ops=plan['calibration_ops'], **extra(workload))
      if 'shapes' in run:
        shapes.append(run.pop('shapes'))
      results['steps'][(workload, towers)] = run
  log('memory over %d steps (%s, %d towers, a process each)' %
      (plan['memory_steps'], MEMORY_WORKLOAD, MEMORY_TOWERS))
  for label in CANDIDATES:
    results['memory'][label] = run_worker(
        log, task='memory', label=label, workload=MEMORY_WORKLOAD,
        towers=MEMORY_TOWERS, warmup=plan['memory_warmup'],
        steps=plan['memory_steps'],
        sample_every=plan['memory_sample_every'], **extra(MEMORY_WORKLOAD))
  return results


def main(argv=None):
  args, given = measure.script_args(
      __doc__.split('\n')[0], 'fewer steps, 2 and 4 towers (a check, < 2 min)',
      argv)
  if args.worker:
    measure.worker_main(TASKS, args.worker)
    return 0
  import results_report  # pylint: disable=g-import-not-at-top
  plan = QUICK if args.quick else FULL
  output = args.output or os.path.join(
      HERE, 'RESULTS_quick.md' if args.quick else 'RESULTS.md')
  source = markdown.source_state(ROOT)
  start = time.time()
  log = measure.make_log(start)
  results = measure_all(plan, log)
  text = results_report.text(results, plan, source, markdown.command_line(
      'run_benchmarks.py', given), time.time() - start)
  write_keeping_section(output, text)
  if args.json:
    import json  # pylint: disable=g-import-not-at-top
    with open(args.json, 'w') as f:
      json.dump({'plan': plan, 'results': {
          kind: {str(k): v for k, v in table.items()}
          for kind, table in results.items()}}, f, indent=1)
  log('wrote %s' % output)
  return 0


if __name__ == '__main__':
  sys.exit(main())
