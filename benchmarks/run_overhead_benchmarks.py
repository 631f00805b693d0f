#!/usr/bin/env python
"""Measures the library's overhead: each strategy against its plain twin.

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
2, 4 and 8 towers, with resource variables (goal: at most 1.05x the twin)
and ref variables (`tf.compat.v1.disable_resource_variables()` in the
measuring process; goal: at most 1.10x).
"""

import collections
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if HERE not in sys.path:
  sys.path.insert(0, HERE)

import run_benchmarks  # pylint: disable=g-import-not-at-top,wrong-import-position

STRATEGIES = ('independent', 'parameter_server', 'replicated')
KINDS = ('resource', 'ref')
GOALS = {'resource': 1.05, 'ref': 1.10}
WORKLOADS = ('lenet', 'resnet50_vars')
BATCH_SIZE = run_benchmarks.BATCH_SIZE

# The op types a twin's `replica_device_setter` puts on the parameter
# device: the variables, ref and resource.
TWIN_PS_OPS = ('Variable', 'VariableV2', 'AutoReloadVariable', 'VarHandleOp')

# Steps of the equality check, and its float32 tolerance.
CHECK_STEPS = 2
CHECK_RTOL = 1e-5
CHECK_ATOL = 1e-6

# What a candidate is, once built: its graph, what a step fetches, what runs
# once before the steps, the session config, and its trainable variables
# by name (`v0/conv1/weights`, ...).
Built = collections.namedtuple(
    'Built', 'graph fetches setup session_config variables op_count')


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
  return collections.OrderedDict(
      (v.op.name, v) for v in variables)


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
  return Built(g.graph, {'train': g.train_op, 'loss': g.loss}, setup,
               host.session_config(), variables,
               len(g.graph.get_operations()))


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
               session_config, variables, len(graph.get_operations()))


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
