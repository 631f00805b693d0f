#!/usr/bin/env python
"""Measures the library's overhead: each strategy against its plain twin.

    python benchmarks/run_overhead_benchmarks.py           # the full run
    python benchmarks/run_overhead_benchmarks.py --quick   # a check

The full run writes `benchmarks/OVERHEAD_RESULTS.md` whole; `--quick`
writes `benchmarks/OVERHEAD_RESULTS_quick.md` (lenet and resnet50_vars at 2
towers, both variable kinds, 4 rounds of 2 steps) and `--output` any other
file, so that a check never overwrites the figures of record.

Every strategy that has a plain-TensorFlow equivalent is measured against
that equivalent written by hand, with no manager (its *twin*):

- `independent`: each tower builds the model on its own copy of the
  variables (`v<d>/`, on `/cpu:d`) and applies its own gradients there;
- `parameter_server`: one set of variables (`v/`), placed on `/cpu:0` by
  `tf.train.replica_device_setter`, every other op on its tower's device;
  each variable's gradients averaged (`add_n` times 1/k) on the variable's
  device and applied once, on `/cpu:0`;
- `replicated`: a copy a tower as in `independent`; each gradient summed
  over towers with `add_n` on `/cpu:0` (the copy all-reduce with
  `local_parameter_device=cpu`), every tower applying the sums to its copy
  on its own device.

The library's side is the package's harness
(`variable_mgr.benchmark.harness.build_training_graph`); a twin builds the
same model (`variable_mgr.benchmark.models`), the same synthetic batch a
tower (`harness.synthetic_inputs`, on `/cpu:0`), plain SGD at the model's
learning rate, the same global-step increment after the updates and the
same fetched mean loss, on the same virtual CPU devices
(`ConfigProto(device_count={'CPU': k})`, soft placement off). What the
twins lack is the library: its validation, its scopes and device
functions, and its ordering of each update after the reads of its own
variable (`variable_mgr.ordering`).

A twin orders its updates the way one does by hand. With resource
variables it needs nothing: every read of a variable is an ancestor of its
gradient here. With ref variables a read aliases the variable's buffer and
the backward pass reads weights that no gradient of theirs waits for (the
input gradient of a layer), so an unordered update races it and the results
drift from the library's within a step; a twin's apply therefore waits for
every gradient of the towers that read the variables it updates (its own
tower; every tower for `parameter_server`).

Before any step is timed, each pair is checked to be the same computation:
the twin takes the library's initial values, both run two steps, and every
variable and the losses must agree within float32 tolerance.

Two workloads: `lenet` (the package's LeNet-sized CNN, 8 images a tower)
and `resnet50_vars` (ResNet-50's 161 variable shapes behind a trivial
forward pass, registered by `run_benchmarks.register_resnet50_vars`), at
2, 4 and 8 towers with resource variables (goal: at most 1.05x the twin),
and at 2 and 4 towers with ref variables
(`tf.compat.v1.disable_resource_variables()` in the measuring process;
goal: at most 1.10x).
"""

import collections
import functools
import gc
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _path in (HERE, ROOT):
  if _path not in sys.path:
    sys.path.insert(0, _path)

# pylint: disable=g-import-not-at-top,wrong-import-position
import run_benchmarks  # The workloads of RESULTS.md, beside this file.
from variable_mgr.benchmark import measure
from variable_mgr.benchmark import report
# pylint: enable=g-import-not-at-top,wrong-import-position

STRATEGIES = ('independent', 'parameter_server', 'replicated')
KINDS = ('resource', 'ref')
GOALS = {'resource': 1.05, 'ref': 1.10}
WORKLOADS = ('lenet', 'resnet50_vars')
BATCH_SIZE = run_benchmarks.BATCH_SIZE

# The op types a twin's `replica_device_setter` puts on the parameter
# device: the variables, ref and resource.
TWIN_PS_OPS = ('Variable', 'VariableV2', 'AutoReloadVariable', 'VarHandleOp')

# What a run measures: `cells`, one process each, (workload, towers, kind);
# per process, every strategy and its twin take turns for `rounds` rounds
# of `steps` steps each, after `warmup` untimed steps.
# Resource variables at every tower count; ref variables (the 1.10x goal)
# at 2 and 4, since a cell of resnet50_vars at 8 towers takes minutes to
# build for each variable kind on 2 cores.
FULL = dict(cells=[(w, k, kind) for kind in KINDS for w in WORKLOADS
                   for k in ((2, 4, 8) if kind == 'resource' else (2, 4))],
            rounds=9, steps=4, warmup=2)
QUICK = dict(cells=[(w, 2, kind) for kind in KINDS for w in WORKLOADS],
             rounds=4, steps=2, warmup=1)

# Steps of the equality check, and its float32 tolerance.
CHECK_STEPS = 2
CHECK_RTOL = 1e-5
CHECK_ATOL = 1e-6

# What a candidate is, once built: its graph, what a step fetches, what runs
# once before the steps, the session config, and its trainable variables
# by name (`v0/conv1/weights`, ...).
Built = collections.namedtuple(
    'Built', 'graph fetches setup session_config variables op_count '
             'ordering_ops')


def _tf():
  import tensorflow  # pylint: disable=g-import-not-at-top
  return tensorflow.compat.v1


def library_label(strategy):
  return strategy


def twin_label(strategy):
  return strategy + ' twin'


def _config(strategy, workload, towers, kind):
  from variable_mgr.benchmark import run_config  # pylint: disable=g-import-not-at-top
  return run_config.BenchmarkConfig(
      model=workload, variable_update=strategy, num_gpus=towers,
      batch_size=BATCH_SIZE[workload],
      use_resource_vars=(kind == 'resource')).resolved()


def _by_name(variables):
  return collections.OrderedDict((v.op.name, v) for v in variables)


def build_library(strategy, workload, towers, kind):
  """`strategy` of the package through the package's harness."""
  import variable_mgr  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark import harness  # pylint: disable=g-import-not-at-top
  host = variable_mgr.LocalBenchmarkCnn(towers)
  g = harness.build_training_graph(
      _config(strategy, workload, towers, kind), host)
  with g.graph.as_default():
    variables = _by_name(_tf().trainable_variables())
  setup = [op for op in (g.init_op, g.post_init_op) if op is not None]
  ops = g.graph.get_operations()
  # The identities `variable_mgr.ordering.after` makes a gradient go
  # through, so that its update waits for reads it does not depend on.
  ordering_ops = sum(1 for op in ops if op.type == 'Identity' and
                     op.name.rsplit('/', 1)[-1].startswith('after_readers'))
  return Built(g.graph, {'train': g.train_op, 'loss': g.loss}, setup,
               host.session_config(), variables, len(ops), ordering_ops)


def build_twin(strategy, workload, towers, kind):
  """`strategy`'s twin: the same towers in plain TensorFlow, no manager."""
  tf = _tf()
  from variable_mgr.benchmark import harness  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark import models  # pylint: disable=g-import-not-at-top
  if strategy not in STRATEGIES:
    raise ValueError('strategy=%r: a twin exists for %s.' %
                     (strategy, ', '.join(STRATEGIES)))
  config = _config(strategy, workload, towers, kind)
  model = models.get_model(workload)
  devices = ['/cpu:%d' % d for d in range(towers)]
  param_device = '/cpu:0'
  shared = strategy == 'parameter_server'
  graph = tf.Graph()
  with graph.as_default(), tf.variable_scope(
      tf.get_variable_scope(), use_resource=(kind == 'resource')):
    tf.set_random_seed(config.seed)
    with tf.device(param_device):
      global_step = tf.train.get_or_create_global_step()
    optimizer = tf.train.GradientDescentOptimizer(config.learning_rate)
    tower_grads, losses = [], []
    for d, device in enumerate(devices):
      if shared:
        scope = tf.variable_scope('v', reuse=bool(d))
        placement = tf.train.replica_device_setter(
            worker_device=device, ps_device=param_device, ps_tasks=1,
            ps_ops=list(TWIN_PS_OPS))
        prefix = 'v/'
      else:
        scope = tf.variable_scope('v%d' % d)
        placement = device
        prefix = 'v%d/' % d
      with scope, tf.name_scope('tower_%i' % d), tf.device(placement):
        with tf.device(param_device):
          images, labels = harness.synthetic_inputs(
              model, config.batch_size, config.seed, d)
        loss = model.build(images, labels, is_training=True,
                           weight_decay=config.weight_decay)
        params = [v for v in tf.trainable_variables()
                  if v.op.name.startswith(prefix)]
        tower_grads.append(list(zip(tf.gradients(loss, params), params)))
        losses.append(loss)

    # With ref variables, an update must not run before the ops that read
    # its variable (they alias its buffer; see variable_mgr.ordering): by
    # hand, every apply waits for every gradient of the towers that read
    # what it updates. Resource variables need no such wait (every read is
    # an ancestor of the gradient here).
    ordered = kind == 'ref'

    def after(grads):
      deps = [g for g, _ in grads] if ordered else []
      return tf.control_dependencies(deps)

    training_ops = []
    if strategy == 'independent':
      for device, grads in zip(devices, tower_grads):
        with tf.device(device), after(grads):
          training_ops.append(optimizer.apply_gradients(grads))
    elif strategy == 'parameter_server':
      means = []
      for pairs in zip(*tower_grads):
        var = pairs[0][1]
        with tf.device(var.device):
          means.append((tf.add_n([g for g, _ in pairs]) *
                        tf.constant(1.0 / towers, dtype=var.dtype.base_dtype),
                        var))
      every = [pair for grads in tower_grads for pair in grads]
      with tf.device(param_device), after(every):
        training_ops.append(optimizer.apply_gradients(means))
    else:
      sums = []
      with tf.device(param_device):
        for pairs in zip(*tower_grads):
          sums.append(tf.add_n([g for g, _ in pairs]))
      for device, grads in zip(devices, tower_grads):
        with tf.device(device), after(grads):
          training_ops.append(optimizer.apply_gradients(
              [(s, v) for s, (_, v) in zip(sums, grads)]))

    with tf.device(param_device):
      with tf.control_dependencies(training_ops):
        train_op = tf.group(global_step.assign_add(1), name='train_op')
      average_loss = tf.add_n(losses) / float(len(losses))
      init_op = tf.global_variables_initializer()
      setup = [init_op]
      if not shared:
        # Every copy starts from tower 0's values.
        copies = []
        for pairs in zip(*tower_grads):
          source = pairs[0][1]
          value = source.read_value()
          copies.extend(var.assign(value, read_value=False)
                        for _, var in pairs[1:])
        setup.append(tf.group(*copies) if copies else tf.no_op())
    variables = _by_name(tf.trainable_variables())
    graph.finalize()
  session_config = tf.ConfigProto(device_count={'CPU': towers},
                                  allow_soft_placement=False)
  return Built(graph, {'train': train_op, 'loss': average_loss}, setup,
               session_config, variables, len(graph.get_operations()), 0)


def build(label, workload, towers, kind):
  """The candidate `label` (a strategy, or a strategy's twin)."""
  for strategy in STRATEGIES:
    if label == library_label(strategy):
      return build_library(strategy, workload, towers, kind)
    if label == twin_label(strategy):
      return build_twin(strategy, workload, towers, kind)
  raise ValueError('unknown candidate %r' % (label,))


def open_session(built):
  tf = _tf()
  sess = tf.Session(graph=built.graph, config=built.session_config)
  for op in built.setup:
    sess.run(op)
  return sess


def check_twin(library, library_sess, twin, twin_sess, steps=CHECK_STEPS):
  """Checks that `twin` computes what `library` does.

  Loads the library's current variable values into the twin (variables of
  the same names), runs `steps` steps on both and compares the losses and
  every variable.

  Returns:
    The largest absolute difference seen, over losses and variables.

  Raises:
    AssertionError: different variable names or devices, or values that
      differ by more than the float32 tolerance (`CHECK_RTOL`,
      `CHECK_ATOL`).
  """
  import numpy as np  # pylint: disable=g-import-not-at-top
  if list(library.variables) != list(twin.variables):
    raise AssertionError('variables differ: library %s, twin %s' % (
        list(library.variables), list(twin.variables)))
  names = list(library.variables)
  for name in names:
    a, b = (_device(built.variables[name]) for built in (library, twin))
    if a != b:
      raise AssertionError('%s: on %s in the library, on %s in the twin' %
                           (name, a, b))
  start = library_sess.run([library.variables[n] for n in names])
  for name, value in zip(names, start):
    # What `Variable.load` does (deprecated): its initializer, value fed.
    init = twin.variables[name].initializer
    twin_sess.run(init, {init.inputs[1]: value})
  worst = 0.0
  for step in range(steps):
    a = library_sess.run(library.fetches)['loss']
    b = twin_sess.run(twin.fetches)['loss']
    _assert_close('loss of step %d' % step, a, b)
    worst = max(worst, float(np.max(np.abs(a - b))))
  end_library = library_sess.run([library.variables[n] for n in names])
  end_twin = twin_sess.run([twin.variables[n] for n in names])
  for name, a, b in zip(names, end_library, end_twin):
    _assert_close(name, a, b)
    worst = max(worst, float(np.max(np.abs(a - b))))
  return worst


def _device(variable):
  return _tf().DeviceSpec.from_string(variable.op.device).to_string().lower()


def _assert_close(what, a, b):
  import numpy as np  # pylint: disable=g-import-not-at-top
  if not np.allclose(a, b, rtol=CHECK_RTOL, atol=CHECK_ATOL):
    raise AssertionError(
        '%s: library and twin differ by up to %g (rtol %g, atol %g)' % (
            what, float(np.max(np.abs(np.asarray(a) - np.asarray(b)))),
            CHECK_RTOL, CHECK_ATOL))


def candidate_labels():
  """Every candidate of one measurement, each strategy beside its twin."""
  return [label for strategy in STRATEGIES
          for label in (library_label(strategy), twin_label(strategy))]


def prepare(workload, towers, kind):
  """Builds every candidate of (workload, towers, kind) and checks the pairs.

  Call it in a process whose variable kind is set (`set_kind`).

  Returns:
    `(built, sessions, info)`: `{label: Built}`, `{label: tf.Session}`
    (initialised, each library/twin pair having run `CHECK_STEPS` steps
    from the same values), and `info`: `{'build_seconds': {label: s},
    'op_count': {label: n}, 'ordering_ops': {label: n}, 'extra_ops':
    {strategy: {'library': {op type: n}, 'twin': {op type: n}}} (the ops
    one graph has beyond the other's, by type), 'check': {strategy:
    largest difference}}`.

  Raises:
    AssertionError: a twin does not compute what its strategy does.
  """
  import time  # pylint: disable=g-import-not-at-top
  built, sessions = collections.OrderedDict(), collections.OrderedDict()
  info = {'build_seconds': {}, 'op_count': {}, 'ordering_ops': {},
          'extra_ops': {}, 'check': {}}
  for label in candidate_labels():
    start = time.perf_counter()
    built[label] = build(label, workload, towers, kind)
    info['build_seconds'][label] = time.perf_counter() - start
    info['op_count'][label] = built[label].op_count
    info['ordering_ops'][label] = built[label].ordering_ops
    sessions[label] = open_session(built[label])
  for strategy in STRATEGIES:
    lib, twin = library_label(strategy), twin_label(strategy)
    types = [collections.Counter(op.type for op in
                                 built[label].graph.get_operations())
             for label in (lib, twin)]
    info['extra_ops'][strategy] = {'library': dict(types[0] - types[1]),
                                   'twin': dict(types[1] - types[0])}
    info['check'][strategy] = check_twin(built[lib], sessions[lib],
                                         built[twin], sessions[twin])
  # Six graphs of up to tens of thousands of ops: kept out of the garbage
  # collector's scans, which would otherwise land in some candidate's steps.
  gc.collect()
  gc.freeze()
  return built, sessions, info


def set_kind(kind):
  """Makes `kind` the process's default variable kind (ref: TF 1.15's)."""
  tf = _tf()
  if kind == 'ref':
    tf.disable_resource_variables()
  elif kind == 'resource':
    tf.enable_resource_variables()
  else:
    raise ValueError('kind=%r: one of %s' % (kind, ', '.join(KINDS)))


# ---------------------------------------------------------------------------
# In the worker subprocesses: TensorFlow is imported only here.


def task_overhead(workload, towers, kind, rounds, steps, warmup, shapes=None):
  """One cell: every strategy against its twin on (workload, towers, kind).

  Each strategy and its twin take turns (`measure.interleaved_rounds`,
  the pair's order alternating each round), one pair after the other; a
  ratio pairs the library's and the twin's steps of the same round.
  """
  import tensorflow  # pylint: disable=g-import-not-at-top
  tensorflow.compat.v1.disable_eager_execution()
  set_kind(kind)
  computed = None
  if workload == 'resnet50_vars':
    if shapes is None:
      shapes = computed = run_benchmarks.resnet50_variable_shapes()
    run_benchmarks.register_resnet50_vars(shapes)
  load = os.getloadavg()[0]
  built, sessions, info = prepare(workload, towers, kind)
  times = collections.OrderedDict()
  for strategy in STRATEGIES:
    pair = collections.OrderedDict(
        (label, functools.partial(sessions[label].run, built[label].fetches))
        for label in (library_label(strategy), twin_label(strategy)))
    times.update(measure.interleaved_rounds(pair, rounds, steps, warmup))
  for sess in sessions.values():
    sess.close()
  result = dict(info, step_seconds=times, load=[load, os.getloadavg()[0]],
                peak_rss=measure.peak_resident_bytes(),
                tf_version=tensorflow.__version__)
  if computed is not None:
    result['shapes'] = computed
  return result


TASKS = {'overhead': task_overhead}


# ---------------------------------------------------------------------------
# In the driver: no TensorFlow; one subprocess per cell.


def measure_cells(plan, log):
  """{(workload, towers, kind): the cell's result} for every cell of `plan`."""
  results = collections.OrderedDict()
  shapes = []  # ResNet-50's: computed by the first cell that needs them.
  log('%d cells, each strategy and its twin in turn for %d rounds of %d '
      'steps' % (len(plan['cells']), plan['rounds'], plan['steps']))
  for workload, towers, kind in plan['cells']:
    extra = ({'shapes': shapes[0]}
             if shapes and workload == 'resnet50_vars' else {})
    cell = measure.run_in_subprocess(
        __file__, log, hidden=('shapes',), task='overhead',
        workload=workload, towers=towers, kind=kind, rounds=plan['rounds'],
        steps=plan['steps'], warmup=plan['warmup'], **extra)
    if 'shapes' in cell:
      shapes.append(cell.pop('shapes'))
    results[(workload, towers, kind)] = cell
  return results


def ms(seconds):
  return '%.1f' % (1000.0 * seconds)


def overhead(cell, strategy):
  """The Spread of the library's per-round step time over its twin's."""
  return measure.ratio_spread(cell['step_seconds'], library_label(strategy),
                              twin_label(strategy))


def step_ms(cell, label):
  return ms(measure.spread(cell['step_seconds'][label]).median)


def goal_lines(results):
  """One verdict line a variable kind (its worst cell and strategy), then
  one a (workload, towers, kind, strategy)."""
  lines = []
  for kind in KINDS:
    cells = [(key, cell) for key, cell in results.items() if key[2] == kind]
    if not cells:
      continue
    worst = max(((overhead(cell, s), key, s) for key, cell in cells
                 for s in STRATEGIES), key=lambda t: t[0].median)
    spread, (workload, towers, _), strategy = worst
    over = sum(1 for key, cell in cells for s in STRATEGIES
               if overhead(cell, s).median > GOALS[kind])
    lines.append(
        '- **%s variables, every strategy at most %.2fx its twin** (%d '
        'cells x %d strategies): %s; worst: %s, %s, %d towers, %s' % (
            kind, GOALS[kind], len(cells), len(STRATEGIES),
            report.verdict(over == 0) + (
                ' (%d of %d above)' % (over, len(cells) * len(STRATEGIES))
                if over else ''),
            strategy, workload, towers, report.spread_text(spread)))
  lines.append('')
  for (workload, towers, kind), cell in results.items():
    for strategy in STRATEGIES:
      lines.append(report.verdict_line(
          '%s, %s, %d towers, %s variables' % (strategy, workload, towers,
                                               kind),
          overhead(cell, strategy), GOALS[kind]))
  return lines


def overhead_table(results, kind):
  rows = []
  for (workload, towers, cell_kind), cell in results.items():
    if cell_kind != kind:
      continue
    for strategy in STRATEGIES:
      s = overhead(cell, strategy)
      rows.append([workload, str(towers), strategy,
                   step_ms(cell, library_label(strategy)),
                   step_ms(cell, twin_label(strategy)),
                   '%.3f' % s.median, '%.3f - %.3f' % (s.low, s.high),
                   report.goal_verdict(s, GOALS[kind])])
  return report.table(
      ['workload', 'towers', 'strategy', 'library (ms)', 'twin (ms)',
       'library / twin', 'rounds', 'at most %.2fx' % GOALS[kind]],
      rows, 'lrlrrrrl')


def graph_table(results):
  rows = []
  for (workload, towers, kind), cell in results.items():
    for strategy in STRATEGIES:
      lib, twin = library_label(strategy), twin_label(strategy)
      extra = cell['extra_ops'][strategy]
      rows.append([workload, str(towers), kind, strategy,
                   str(cell['op_count'][lib]), str(cell['op_count'][twin]),
                   _op_types(extra['library']), _op_types(extra['twin']),
                   str(cell['ordering_ops'][lib]),
                   '%.1e' % cell['check'][strategy]
                   if cell['check'][strategy] else '0 (equal)'])
  return report.table(
      ['workload', 'towers', 'variables', 'strategy', 'library ops',
       'twin ops', 'only in the library', 'only in the twin',
       '`after_readers`', 'largest difference after %d steps'
       % CHECK_STEPS], rows, 'lrllrrllrr')


def _op_types(counts):
  """'Identity 6, NoOp 2' of {op type: count}; '-' when empty."""
  return ', '.join('%s %d' % kv for kv in sorted(counts.items())) or '-'


def results_text(results, plan, source, command, elapsed):
  """The lines of OVERHEAD_RESULTS.md."""
  tf_version = next(iter(results.values()))['tf_version']
  out = report.header('Library overhead', 'run_overhead_benchmarks.py',
                      source, command, elapsed, tf_version)
  w = out.append
  w('- towers are virtual CPU devices of one process '
    '(`ConfigProto(device_count={\'CPU\': k})`, soft placement off); '
    '`local_parameter_device=cpu` (the harness default); plain SGD; '
    '%s' % ', '.join('%s %d images a tower' % (wl, BATCH_SIZE[wl])
                     for wl in WORKLOADS))
  w('')
  w('Each strategy of the package, built by its harness, against its '
    '*twin*: the same towers written by hand in plain TensorFlow with no '
    'manager (see the docstring of `benchmarks/run_overhead_benchmarks.py` '
    'for what each twin builds and how it orders its updates). Before any '
    'step is timed, each twin takes its strategy\'s initial values and both '
    'run %d steps: every variable and loss must agree within float32 '
    'tolerance (rtol %g, atol %g), or the run stops.' % (
        CHECK_STEPS, CHECK_RTOL, CHECK_ATOL))
  w('')
  w('Method: one process a (workload, towers, variable kind); every '
    'candidate is built first, then each strategy and its twin take turns '
    'for %d rounds of %d steps (the pair\'s order alternating; untimed '
    'warm-up steps of each before them: %d), one pair after the other. '
    'Step time only: building, initialising and the check are not timed. '
    'A ratio pairs the library\'s and the twin\'s steps of one round; a '
    'verdict is on the median over rounds, with the rounds\' range (and '
    'how many rounds fall on the other side of the goal). Step times (ms) '
    'are medians of the per-round means and move with the load of the '
    'machine.' % (
        plan['rounds'], plan['steps'], plan['warmup']))
  w('')
  w('## Goals')
  w('')
  out.extend(goal_lines(results))
  for kind in KINDS:
    if not any(key[2] == kind for key in results):
      continue
    w('')
    w('## %s variables: library / twin' % kind.capitalize())
    w('')
    out.extend(overhead_table(results, kind))
  w('')
  w('## Graphs and the equality check')
  w('')
  w('Ops of each graph, and the ops one has beyond the other, by type '
    '(initialisation included); `after_readers`: how many of the library\'s '
    'are the identities a gradient goes through so that its update waits '
    'for reads of its variable that are not already its ancestors '
    '(`variable_mgr.ordering`), where a twin with ref variables puts control '
    'edges on its apply ops instead; last, the largest absolute difference '
    'between the library and its twin over the losses and variables of the '
    'check.')
  w('')
  out.extend(graph_table(results))
  w('')
  w('## The measuring processes')
  w('')
  out.extend(report.table(
      ['workload', 'towers', 'variables', 'load average (start, end)',
       'peak resident set (MiB)'],
      [[wl, str(k), kind, '%.1f, %.1f' % tuple(cell['load']),
        '%.0f' % (cell['peak_rss'] / 1048576.0)]
       for (wl, k, kind), cell in results.items()], 'lrlrr'))
  return out


def section_lines(results, command):
  """The section of RESULTS.md: the goals, and where the figures are."""
  lines = ['## Library overhead (issue 11)', '',
           'Written by `%s`; the tables, the method and the machine are in '
           '`benchmarks/OVERHEAD_RESULTS.md`. Each strategy\'s step time '
           'over its plain-TensorFlow twin\'s, median over rounds:' % command,
           '']
  return lines + [l for l in goal_lines(results) if l.startswith('- **')]


def main(argv=None):
  args, given = measure.script_args(
      __doc__.split('\n')[0],
      'lenet and resnet50_vars at 2 towers, 4 rounds of 2 steps (a check); '
      'writes OVERHEAD_RESULTS_quick.md only', argv)
  if args.worker:
    measure.worker_main(TASKS, args.worker)
    return 0
  plan = QUICK if args.quick else FULL
  output = args.output or os.path.join(
      HERE, 'OVERHEAD_RESULTS_quick.md' if args.quick
      else 'OVERHEAD_RESULTS.md')
  command = report.command_line('run_overhead_benchmarks.py', given)
  source = report.source_state(ROOT)
  start = time.time()
  log = measure.make_log(start)
  results = measure_cells(plan, log)
  elapsed = time.time() - start
  if args.json:
    with open(args.json, 'w') as f:
      json.dump({'plan': plan, 'results': [
          dict(workload=key[0], towers=key[1], kind=key[2], **cell)
          for key, cell in results.items()]}, f, indent=1)
  report.write(output, results_text(results, plan, source, command,
                                    elapsed))
  log('wrote %s' % output)
  if not args.quick and args.output is None:
    results_md = os.path.join(HERE, 'RESULTS.md')
    run_benchmarks.write_section(results_md, section_lines(results, command),
                                 'library overhead',
                                 'run_overhead_benchmarks.py')
    log('wrote its section of %s' % results_md)
  return 0


if __name__ == '__main__':
  sys.exit(main())

