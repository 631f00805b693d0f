#!/usr/bin/env python
"""Measures every local strategy against `independent` and MirroredStrategy.

    python benchmarks/run_benchmarks.py           # the full run
    python benchmarks/run_benchmarks.py --quick   # a check

The full run writes `benchmarks/RESULTS.md`; `--quick` writes
`benchmarks/RESULTS_quick.md` (fewer rounds and steps; lenet on 2 and 4
towers, resnet50_vars on 2; memory over 100 steps) so that a check never
overwrites the figures of record. Both take longer the busier the machine
is: most of their time is TensorFlow building and optimising graphs of tens
of thousands of ops. The log gives each worker's time; RESULTS.md the total.

Two workloads, both built by the package's own harness
(`variable_mgr.benchmark.harness.build_training_graph`):

- `lenet`: the package's LeNet-sized CNN, 8 images a tower;
- `resnet50_vars`: ResNet-50's 161 trainable variable shapes (25.6M
  parameters) behind a trivial forward pass (each variable enters the loss
  as `x * reduce_sum(v) / v.size`, x a scalar of the batch), so that reading,
  aggregating and updating variables is nearly all of a step.

Towers are virtual CPU devices (`ConfigProto(device_count={'CPU': k})`,
soft placement off). MirroredStrategy runs the same model function in a
`tf.compat.v1` graph through `strategy.extended.call_for_each_replica` with
TensorFlow's own v1 SGD optimizer, on the same virtual devices.

The machine is shared, so no figure is an absolute: each measurement runs in
its own subprocess, every candidate of one (workload, towers) pair lives in
the same process, and the candidates take turns in rounds (the order rotates
each round). A ratio is computed within each round and the median over
rounds is reported.
"""

import argparse
import collections
import datetime
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# (label, harness options); the order of every table.
STRATEGIES = collections.OrderedDict([
    ('independent', dict(variable_update='independent')),
    ('parameter_server', dict(variable_update='parameter_server')),
    ('staged parameter_server', dict(variable_update='parameter_server',
                                     staged_vars=True)),
    ('replicated', dict(variable_update='replicated')),
])
MIRRORED = 'MirroredStrategy'
CANDIDATES = tuple(STRATEGIES) + (MIRRORED,)
SYNCHRONOUS = ('parameter_server', 'staged parameter_server', 'replicated')

WORKLOADS = collections.OrderedDict([
    ('lenet', 'LeNet-sized CNN (8 trainable variables, 1.66M parameters), '
              '8 images a tower'),
    ('resnet50_vars', "ResNet-50's 161 variable shapes (25.6M parameters) "
                      'behind a trivial forward pass (the loss reads each '
                      'variable once, through `x * reduce_sum(v) / v.size`, '
                      'x a scalar of the batch, so every variable gets a '
                      'dense full-size gradient), 4 inputs of 8x8 a tower'),
])
BATCH_SIZE = {'trivial': 32, 'lenet': 8, 'resnet50_vars': 4}

# Goals (issue 3).
SYNC_RATIO_GOAL = 1.10
MIRRORED_GOALS = (('lenet', 4, 0.8), ('resnet50_vars', 8, 0.65))
BUILD_BASELINE_SECONDS = 9.6  # the 2017-style replicated graph, 8 towers
BUILD_WORKLOAD, BUILD_TOWERS = 'resnet50_vars', 8
# The package's one-layer model: a step takes milliseconds, so 500 of them
# fit the time budget, and its staged reads would still add 31 KB a step if
# they leaked.
MEMORY_WORKLOAD, MEMORY_TOWERS = 'trivial', 4
# "Flat": the resident set after the timed steps exceeds the one after
# warm-up by less than this.
FLAT_MEMORY_BYTES = 2 * 1024 * 1024

# towers: {workload: tower counts}.
FULL = dict(towers={'lenet': (2, 4, 8), 'resnet50_vars': (2, 4, 8)},
            rounds=5, steps=6, warmup=3,
            calibration_ops=4000,
            memory_warmup=50, memory_steps=500, memory_sample_every=50)
QUICK = dict(towers={'lenet': (2, 4), 'resnet50_vars': (2,)},
             rounds=3, steps=3, warmup=2,
             calibration_ops=2000,
             memory_warmup=20, memory_steps=100, memory_sample_every=20)


# ---------------------------------------------------------------------------
# In the worker subprocesses: TensorFlow is imported only here.


def _tf():
  import tensorflow  # pylint: disable=g-import-not-at-top
  return tensorflow


def resnet50_variable_shapes():
  """The shapes of `models.resnet50`'s trainable variables, in order.

  Built once in a scratch graph and thrown away.
  """
  tf = _tf().compat.v1
  from variable_mgr.benchmark import models  # pylint: disable=g-import-not-at-top
  model = models.get_model('resnet50')
  with tf.Graph().as_default():
    images = tf.placeholder(tf.float32, [1] + list(model.image_shape))
    labels = tf.placeholder(tf.int32, [1])
    model.build(images, labels, is_training=True)
    return [v.shape.as_list() for v in tf.trainable_variables()]


def register_resnet50_vars(shapes):
  """Adds the `resnet50_vars` model to the harness's model table.

  Args:
    shapes: the variable shapes (`resnet50_variable_shapes()`).

  Its loss is the softmax cross-entropy of logits
  `(sum_i x * mean(v_i) + mean(image)) * class_weights`, x the batch mean:
  every variable gets a dense gradient of its full size (a broadcast of one
  scalar) and the forward pass costs one read of each variable, with as few
  ops a variable as TensorFlow's gradients allow, so that the graph is
  mostly what the strategy adds.
  """
  tf = _tf().compat.v1
  from variable_mgr.benchmark import models  # pylint: disable=g-import-not-at-top
  if 'resnet50_vars' in models.MODELS:
    return

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

  models.MODELS['resnet50_vars'] = models.Model(
      'resnet50_vars', (8, 8, 1), 10, 0.01, 0.0, BATCH_SIZE['resnet50_vars'],
      build_fn)


Built = collections.namedtuple(
    'Built', 'graph fetches setup session_config build_seconds op_count '
             'variable_count detail')


def build_ours(label, workload, towers):
  """One of the package's strategies through the package's harness."""
  import variable_mgr  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark import harness  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark import run_config  # pylint: disable=g-import-not-at-top
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
  from variable_mgr.benchmark import harness  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark import models  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark import run_config  # pylint: disable=g-import-not-at-top
  model = models.get_model(workload)
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
      optimizer = harness.make_optimizer(config)

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


def time_steps(sess, fetches, steps):
  """Mean wall seconds of `steps` consecutive training steps."""
  start = time.perf_counter()
  for _ in range(steps):
    sess.run(fetches)
  return (time.perf_counter() - start) / steps


def op_time_by_type(sess, built):
  """{op type: summed execution microseconds} of one traced step."""
  tf = _tf().compat.v1
  options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
  metadata = tf.RunMetadata()
  sess.run(built.fetches, options=options, run_metadata=metadata)
  totals = collections.Counter()
  counts = collections.Counter()
  for device in metadata.step_stats.dev_stats:
    for node in device.node_stats:
      label = node.timeline_label
      op_type = (label.split(' = ', 1)[1].split('(', 1)[0]
                 if ' = ' in label else node.node_name)
      totals[op_type] += node.all_end_rel_micros
      counts[op_type] += 1
  return {'micros': dict(totals), 'nodes': dict(counts)}


def resident_bytes():
  """The current VmRSS of this process."""
  with open('/proc/self/status') as f:
    for line in f:
      if line.startswith('VmRSS:'):
        return int(line.split()[1]) * 1024
  raise RuntimeError('no VmRSS in /proc/self/status')


def peak_resident_bytes():
  # ru_maxrss is in KiB on Linux.
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def task_steps(workload, towers, rounds, steps, warmup, calibration_ops):
  """Every candidate on one (workload, towers), interleaved in rounds.

  Each candidate's graph build is timed with the objects of the graphs
  before it frozen out of the garbage collector's scans, so that it costs
  what it would in a fresh process; the resident set it adds (graph,
  session, variables, the buffers of its warm-up steps) is recorded too.
  The process first times `calibration_ops` trivial ops (see
  `task_calibrate`): what one op costs on the machine at that moment.
  """
  load = os.getloadavg()[0]
  calibration = task_calibrate(calibration_ops)
  warm_up_runtime(towers)
  order = list(CANDIDATES)
  built, sessions, rss_added = {}, {}, {}
  for label in order:
    gc.collect()
    gc.freeze()
    before = resident_bytes()
    built[label] = build(label, workload, towers)
    sessions[label] = open_session(built[label])
    time_steps(sessions[label], built[label].fetches, warmup)
    rss_added[label] = resident_bytes() - before
  per_round = {label: [] for label in order}
  for r in range(rounds):
    shift = r % len(order)
    for label in order[shift:] + order[:shift]:
      per_round[label].append(
          time_steps(sessions[label], built[label].fetches, steps))
  profiles = {label: op_time_by_type(sessions[label], built[label])
              for label in order}
  for sess in sessions.values():
    sess.close()
  return {'step_seconds': per_round, 'profiles': profiles,
          'build_seconds': {l: built[l].build_seconds for l in order},
          'op_count': {l: built[l].op_count for l in order},
          'variable_count': {l: built[l].variable_count for l in order},
          'rss_added': rss_added, 'peak_rss': peak_resident_bytes(),
          'calibration': calibration, 'load': load,
          'detail': {l: built[l].detail for l in order}}


def task_memory(label, workload, towers, warmup, steps, sample_every):
  """Resident set after warm-up and every `sample_every` steps after it."""
  built = build(label, workload, towers)
  if not built.graph.finalized:
    raise RuntimeError('%s: the graph is not finalized' % label)
  sess = open_session(built)
  time_steps(sess, built.fetches, warmup)
  samples = [resident_bytes()]
  for _ in range(steps // sample_every):
    time_steps(sess, built.fetches, sample_every)
    samples.append(resident_bytes())
  sess.close()
  return {'rss_samples': samples, 'sample_every': sample_every,
          'peak_rss': peak_resident_bytes()}




def task_calibrate(ops):
  """Seconds to build `ops` trivial ops (x = x + 1.0): TensorFlow's cost of
  adding an op to a graph on this machine at this moment."""
  tf = _tf().compat.v1
  with tf.Graph().as_default() as graph:
    x = tf.constant(1.0)
    start = time.perf_counter()
    while len(graph.get_operations()) < ops:
      x = x + 1.0
    seconds = time.perf_counter() - start
    return {'seconds': seconds, 'op_count': len(graph.get_operations())}


TASKS = {'steps': task_steps, 'memory': task_memory}


def worker_main(spec):
  sys.path.insert(0, ROOT)
  kwargs = json.loads(spec)
  task = TASKS[kwargs.pop('task')]
  shapes = kwargs.pop('shapes', None)
  computed = shapes is None and kwargs.get('workload') == 'resnet50_vars'
  if computed:
    shapes = resnet50_variable_shapes()
  if shapes is not None:
    register_resnet50_vars(shapes)
  result = task(**kwargs)
  if computed:
    result['shapes'] = shapes
  sys.stdout.write('RESULT ' + json.dumps(result) + '\n')


# ---------------------------------------------------------------------------
# In the driver: no TensorFlow; one subprocess per measurement.


# RESULTS.md holds one section that another script writes: the all-reduce
# goals of `run_allreduce_benchmarks.py`. Rewriting the file keeps it.
SECTION_BEGIN = ('<!-- all-reduce goals: written by '
                 'run_allreduce_benchmarks.py; kept by run_benchmarks.py -->')
SECTION_END = '<!-- end of all-reduce goals -->'


def _split_section(text):
  """`(text without the section, the section or '')`."""
  start = text.find(SECTION_BEGIN)
  end = text.find(SECTION_END)
  if start < 0 or end < start:
    return text, ''
  end += len(SECTION_END)
  section = text[start:end]
  return text[:start].rstrip('\n') + '\n' + text[end:].lstrip('\n'), section


def write_keeping_section(path, text):
  """Writes `text` to `path`, followed by the all-reduce section that
  `path` held, if any."""
  section = ''
  if os.path.exists(path):
    with open(path) as f:
      _, section = _split_section(f.read())
  with open(path, 'w') as f:
    f.write(text.rstrip('\n') + '\n')
    if section:
      f.write('\n' + section + '\n')


def write_section(path, lines):
  """Replaces (or appends) the all-reduce section of `path` with `lines`."""
  rest = ''
  if os.path.exists(path):
    with open(path) as f:
      rest, _ = _split_section(f.read())
  with open(path, 'w') as f:
    f.write(rest.rstrip('\n') + '\n\n' + SECTION_BEGIN + '\n'
            + '\n'.join(lines) + '\n' + SECTION_END + '\n')


def run_worker(log, script=__file__, hidden=('shapes',), extra_env=None,
               **spec):
  """Runs `script --worker <spec as JSON>` in a fresh process (so that each
  measurement gets a TensorFlow of its own), with `extra_env` added to its
  environment, and returns the JSON its last `RESULT ` line holds. Keys in
  `hidden` are left out of log lines."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2',
             PYTHONPATH=os.pathsep.join(
                 [ROOT] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
  env.update(extra_env or {})
  start = time.time()
  proc = subprocess.run(
      [sys.executable, os.path.abspath(script), '--worker',
       json.dumps(spec)], env=env, stdout=subprocess.PIPE,
      stderr=subprocess.PIPE, universal_newlines=True)
  lines = [l for l in proc.stdout.splitlines() if l.startswith('RESULT ')]
  shown = [(key, value) for key, value in spec.items() if key not in hidden]
  if proc.returncode != 0 or not lines:
    sys.stderr.write(proc.stderr[-4000:])
    raise RuntimeError('worker %s failed with status %d' %
                       (dict(shown), proc.returncode))
  shown += sorted((extra_env or {}).items())
  log('  %s (%.0f s)' % (' '.join('%s=%s' % kv for kv in shown),
                         time.time() - start))
  return json.loads(lines[-1][len('RESULT '):])


def median(values):
  return statistics.median(values)


def measure(plan, log):
  results = {'steps': {}, 'memory': {}}
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


# ---------------------------------------------------------------------------
# The report.


def ratios_to(run, label, reference):
  """Per-round ratio of `label`'s step time to `reference`'s."""
  return [a / b for a, b in zip(run['step_seconds'][label],
                                run['step_seconds'][reference])]


def step_ms(run, label):
  return 1000.0 * median(run['step_seconds'][label])


def mib(n):
  return n / (1024.0 * 1024.0)


def met(ok):
  return 'met' if ok else '**not met**'


def machine_lines():
  cpu = platform.processor() or 'unknown CPU'
  try:
    with open('/proc/cpuinfo') as f:
      for line in f:
        if line.startswith('model name'):
          cpu = line.split(':', 1)[1].strip()
          break
  except OSError:
    pass
  memory = ''
  try:
    with open('/proc/meminfo') as f:
      total_kib = int(f.readline().split()[1])
      memory = ', %.1f GiB RAM' % (total_kib / 1024.0 / 1024.0)
  except (OSError, ValueError, IndexError):
    pass
  nproc = subprocess.run(['nproc'], stdout=subprocess.PIPE,
                         universal_newlines=True).stdout.strip()
  return cpu, nproc, memory


def goals_rows(results, plan):
  """[(goal, measured, verdict)] for the goals of issue 3."""
  rows = []
  worst = (0.0, None, None, None)
  for (workload, towers), run in results['steps'].items():
    for label in SYNCHRONOUS:
      r = median(ratios_to(run, label, 'independent'))
      if r > worst[0]:
        worst = (r, label, workload, towers)
  rows.append((
      'every synchronous strategy within %.2fx of independent\'s step time '
      '(%s)' % (SYNC_RATIO_GOAL, '; '.join(
          '%s: k = %s' % (w, ', '.join(str(k) for k in ks))
          for w, ks in plan['towers'].items())),
      'worst: %.2fx (%s, %s, %d towers)' % worst,
      met(worst[0] <= SYNC_RATIO_GOAL)))
  for workload, towers, goal in MIRRORED_GOALS:
    run = results['steps'].get((workload, towers))
    name = 'replicated at most %.2fx MirroredStrategy\'s step time on %s, ' \
           '%d towers' % (goal, workload, towers)
    if run is None:
      rows.append((name, 'not measured (--quick)', '-'))
      continue
    r = median(ratios_to(run, 'replicated', MIRRORED))
    rows.append((name, '%.2fx (%.1f ms / %.1f ms)' % (
        r, step_ms(run, 'replicated'), step_ms(run, MIRRORED)),
                 met(r <= goal)))
  limit = BUILD_BASELINE_SECONDS / 2
  name = ('graph build of %s on %d towers under %.1f s (half of %.1f s), '
          'every strategy' % (BUILD_WORKLOAD, BUILD_TOWERS, limit,
                              BUILD_BASELINE_SECONDS))
  run = results['steps'].get((BUILD_WORKLOAD, BUILD_TOWERS))
  if run is None:
    rows.append((name, 'not measured (--quick)', '-'))
  else:
    seconds = run['build_seconds']
    slowest = max(STRATEGIES, key=seconds.get)
    cal = run['calibration']
    rows.append((name, 'slowest: %s, %.2f s (%d ops; one trivial op cost '
                 '%.0f us at the time, load %.1f)' % (
                     slowest, seconds[slowest], run['op_count'][slowest],
                     1e6 * cal['seconds'] / cal['op_count'], run['load']),
                 met(seconds[slowest] < limit)))
  growth = {l: results['memory'][l]['rss_samples'][-1] -
               results['memory'][l]['rss_samples'][0] for l in STRATEGIES}
  largest = max(growth, key=growth.get)
  rows.append((
      'memory flat after warm-up: resident set grows by less than %.0f MiB '
      'over %d steps of %s, %d towers, every strategy' % (
          mib(FLAT_MEMORY_BYTES), plan['memory_steps'], MEMORY_WORKLOAD,
          MEMORY_TOWERS),
      'largest growth: %s, %+.2f MiB' % (largest, mib(growth[largest])),
      met(growth[largest] < FLAT_MEMORY_BYTES)))
  return rows


def profile_table(run, labels, top=8):
  """The op types that take the most summed op time in one traced step."""
  lines = []
  for label in labels:
    prof = run['profiles'][label]
    total = sum(prof['micros'].values())
    ranked = sorted(prof['micros'].items(), key=lambda kv: -kv[1])[:top]
    lines.append('- **%s** (summed op time %.1f ms over %d executed nodes; '
                 'wall step %.1f ms): %s' % (
                     label, total / 1000.0, sum(prof['nodes'].values()),
                     step_ms(run, label), ', '.join(
                         '%s %.1f ms (%d)' % (t, us / 1000.0,
                                              prof['nodes'][t])
                         for t, us in ranked)))
  return lines


def report(results, plan, command, elapsed):
  import tensorflow  # pylint: disable=g-import-not-at-top
  cpu, nproc, memory = machine_lines()
  out = []
  w = out.append
  w('# Benchmark results')
  w('')
  w('Written by `benchmarks/run_benchmarks.py`; every figure below is '
    'measured by that run.')
  w('')
  w('- date: %s' % datetime.datetime.now(datetime.timezone.utc).strftime(
      '%Y-%m-%d %H:%M UTC'))
  w('- TensorFlow %s, Python %s, %s' % (
      tensorflow.__version__, platform.python_version(), platform.platform()))
  w('- machine: nproc = %s, %s%s; shared with other jobs while measuring' %
    (nproc, cpu, memory))
  w('- command: `%s` (%.1f minutes)' % (command, elapsed / 60.0))
  w('- towers are virtual CPU devices of one process; '
    '`local_parameter_device=cpu` (the harness default): parameter_server '
    'keeps the variables on `/cpu:0` and replicated sums every gradient '
    'there; optimizer SGD')
  w('')
  w('Workloads:')
  w('')
  for name, text in WORKLOADS.items():
    w('- `%s`: %s.' % (name, text))
  w('')
  w('Method: for each (workload, towers) every candidate is built in one '
    'process, warmed up for %d steps, then the candidates take turns for %d '
    'rounds of %d steps each (order rotating). A ratio is taken within each '
    'round; tables give the median over rounds. Step times (ms) are medians '
    'of the per-round means and move with the load of the machine; the '
    'ratios are the figures to compare.' % (plan['warmup'], plan['rounds'],
                                            plan['steps']))
  w('')
  w('## Goals')
  w('')
  w('| goal | measured | verdict |')
  w('|---|---|---|')
  for goal, measured, verdict in goals_rows(results, plan):
    w('| %s | %s | %s |' % (goal, measured, verdict))
  w('')

  w('## Step time relative to independent')
  w('')
  w('Median per-round ratio of the strategy\'s step time to independent\'s '
    '(median step time in ms in brackets). MirroredStrategy is '
    '`tf.distribute.MirroredStrategy` on the same devices.')
  for workload in WORKLOADS:
    w('')
    w('### %s' % workload)
    w('')
    towers = plan['towers'][workload]
    w('| strategy | ' + ' | '.join('%d towers' % k for k in towers) + ' |')
    w('|---|' + '---:|' * len(towers))
    for label in CANDIDATES:
      cells = []
      for k in towers:
        run = results['steps'][(workload, k)]
        cells.append('%.2fx (%.1f ms)' % (
            median(ratios_to(run, label, 'independent')),
            step_ms(run, label)))
      w('| %s | %s |' % (label, ' | '.join(cells)))
  w('')

  w('## replicated / MirroredStrategy')
  w('')
  run0 = next(iter(results['steps'].values()))
  w('MirroredStrategy picked `%s` for its cross-device reduction on these '
    'devices (its default for CPU devices). Below 1.0 means replicated is '
    'faster.' % run0['detail'][MIRRORED])
  w('')
  w('| workload | towers | replicated (ms) | MirroredStrategy (ms) | '
    'replicated / MirroredStrategy | per-round range |')
  w('|---|---:|---:|---:|---:|---:|')
  for (workload, towers), run in results['steps'].items():
    rs = ratios_to(run, 'replicated', MIRRORED)
    w('| %s | %d | %.1f | %.1f | %.2f | %.2f - %.2f |' % (
        workload, towers, step_ms(run, 'replicated'), step_ms(run, MIRRORED),
        median(rs), min(rs), max(rs)))
  w('')

  w('## Graph build and op count')
  w('')
  build_runs = [(k, results['steps'][(BUILD_WORKLOAD, k)])
                for k in plan['towers'][BUILD_WORKLOAD]]
  w('`%s`: wall time of `harness.build_training_graph` (MirroredStrategy: '
    'the same model and SGD step under `call_for_each_replica`), one build '
    'a candidate, in the process of the step-time measurement with the '
    'earlier graphs frozen out of the garbage collector. Building a '
    'TensorFlow graph from Python costs about the same for every op, so '
    'build time follows the op count and the speed of the machine at that '
    'moment. To read the absolute figures, each process first timed %d '
    'trivial ops (`x = x + 1.0`) and read the 1-minute load average:' % (
        BUILD_WORKLOAD, plan['calibration_ops']))
  w('')
  w('| towers | one trivial op (us) | load average |')
  w('|---:|---:|---:|')
  for k, run in build_runs:
    cal = run['calibration']
    w('| %d | %.0f | %.1f |' % (k, 1e6 * cal['seconds'] / cal['op_count'],
                                run['load']))
  w('')
  w('Build seconds / ops / microseconds an op; variables count every copy:')
  w('')
  w('| strategy | ' + ' | '.join('%d towers' % k for k, _ in build_runs) +
    ' | variables (%d towers) |' % build_runs[-1][0])
  w('|---|' + '---:|' * (len(build_runs) + 1))
  for label in CANDIDATES:
    cells = ['%.2f s / %d / %.0f' % (
        run['build_seconds'][label], run['op_count'][label],
        1e6 * run['build_seconds'][label] / run['op_count'][label])
             for _, run in build_runs]
    w('| %s | %s | %d |' % (label, ' | '.join(cells),
                            build_runs[-1][1]['variable_count'][label]))
  w('')

  w('## Memory')
  w('')
  w('Each candidate in a fresh process on `%s`, %d towers (%d images a '
    'tower): peak resident set (`ru_maxrss`, TensorFlow itself is most of '
    'it), VmRSS after %d warm-up steps and every %d steps after, and the '
    'growth over %d steps. Every graph is finalized before its first step. '
    'Last column: the resident set that building, initialising and warming '
    'up the candidate added to the step-time process of `%s`, %d towers.' % (
        MEMORY_WORKLOAD, MEMORY_TOWERS, BATCH_SIZE[MEMORY_WORKLOAD],
        plan['memory_warmup'], plan['memory_sample_every'],
        plan['memory_steps'], BUILD_WORKLOAD, build_runs[-1][0]))
  w('')
  w('| strategy | peak (MiB) | after warm-up (MiB) | after %d steps (MiB) | '
    'growth (MiB) | every %d steps, from warm-up (MiB) | added, %s x %d '
    '(MiB) |' % (plan['memory_steps'], plan['memory_sample_every'],
                 BUILD_WORKLOAD, build_runs[-1][0]))
  w('|---|---:|---:|---:|---:|---|---:|')
  for label in CANDIDATES:
    m = results['memory'][label]
    s = m['rss_samples']
    w('| %s | %.0f | %.1f | %.1f | %+.2f | %s | %.0f |' % (
        label, mib(m['peak_rss']), mib(s[0]), mib(s[-1]), mib(s[-1] - s[0]),
        ' '.join('%+.2f' % mib(x - s[0]) for x in s[1:]),
        mib(build_runs[-1][1]['rss_added'][label])))
  w('')

  w('## Where the time goes')
  w('')
  w('One traced step (`RunOptions.FULL_TRACE`) per candidate after the timed '
    'rounds: op types ranked by summed execution time over all devices '
    '(nodes executed in brackets). Summed op time exceeds wall time when '
    'ops overlap on the %s cores; it excludes the executor\'s scheduling '
    'between ops.' % nproc)
  for workload, towers in sorted(results['steps'], key=lambda wt: (
      list(WORKLOADS).index(wt[0]), wt[1])):
    if towers != max(plan['towers'][workload]) and (workload, towers) not in [
        (w_, k_) for w_, k_, _ in MIRRORED_GOALS]:
      continue
    run = results['steps'][(workload, towers)]
    w('')
    w('### %s, %d towers' % (workload, towers))
    w('')
    w('Graph ops: %s.' % ', '.join('%s %d' % (l, run['op_count'][l])
                                  for l in CANDIDATES))
    w('')
    out.extend(profile_table(run, CANDIDATES))
  w('')
  return '\n'.join(out)


def parse_args(description, quick_help, argv):
  """The flags both benchmark scripts take: `(args, given)`, `given` the
  arguments as passed."""
  parser = argparse.ArgumentParser(description=description)
  parser.add_argument('--quick', action='store_true', help=quick_help)
  parser.add_argument('--output', help='the Markdown file to write')
  parser.add_argument('--json', help='also write the raw figures here')
  parser.add_argument('--worker', help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  return args, (argv if argv is not None else sys.argv[1:])


def command_line(script, given):
  """How the report quotes the run's command."""
  return 'python benchmarks/%s' % script + (
      ' ' + ' '.join(given) if given else '')


def make_log(start):
  """`log(line)`: the line on stdout after the seconds since `start`."""

  def log(line):
    sys.stdout.write('[%5.0f s] %s\n' % (time.time() - start, line))
    sys.stdout.flush()

  return log


def main(argv=None):
  args, given = parse_args(__doc__.split('\n')[0],
                           'fewer steps, 2 and 4 towers (a check, < 2 min)',
                           argv)
  if args.worker:
    worker_main(args.worker)
    return 0
  plan = QUICK if args.quick else FULL
  output = args.output or os.path.join(
      HERE, 'RESULTS_quick.md' if args.quick else 'RESULTS.md')
  command = command_line('run_benchmarks.py', given)
  start = time.time()
  log = make_log(start)
  results = measure(plan, log)
  elapsed = time.time() - start
  text = report(results, plan, command, elapsed)
  write_keeping_section(output, text)
  if args.json:
    with open(args.json, 'w') as f:
      json.dump({'plan': plan, 'results': {
          kind: {str(k): v for k, v in table.items()}
          for kind, table in results.items()}}, f, indent=1)
  log('wrote %s' % output)
  return 0


if __name__ == '__main__':
  sys.exit(main())
