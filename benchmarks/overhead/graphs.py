"""The candidates' graphs: each strategy through the package's harness,
its twin in plain TensorFlow, and the check that a pair computes the same.

TensorFlow is imported by the functions, in the measuring process only.
"""

import collections
import gc

from .plan import BATCH_SIZE
from .plan import CHECK_ATOL
from .plan import CHECK_RTOL
from .plan import CHECK_STEPS
from .plan import KINDS
from .plan import STRATEGIES
from .plan import candidate_labels
from .plan import library_label
from .plan import twin_label

# The op types a twin's `replica_device_setter` puts on the parameter
# device: the variables, ref and resource.
TWIN_PS_OPS = ('Variable', 'VariableV2', 'AutoReloadVariable', 'VarHandleOp')

# What a candidate is, once built: its graph, what a step fetches, what runs
# once before the steps, the session config, and its trainable variables
# by name (`v0/conv1/weights`, ...).
Built = collections.namedtuple(
    'Built', 'graph fetches setup session_config variables op_count '
             'ordering_ops')


def _tf():
  import tensorflow  # pylint: disable=g-import-not-at-top
  return tensorflow.compat.v1


def _config(strategy, workload, towers, kind):
  from variable_mgr.benchmark.training import run_config  # pylint: disable=g-import-not-at-top
  return run_config.BenchmarkConfig(
      model=workload, variable_update=strategy, num_gpus=towers,
      batch_size=BATCH_SIZE[workload],
      use_resource_vars=(kind == 'resource')).resolved()


def _by_name(variables):
  return collections.OrderedDict((v.op.name, v) for v in variables)


def build_library(strategy, workload, towers, kind):
  """`strategy` of the package through the package's harness."""
  import variable_mgr  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.training import harness  # pylint: disable=g-import-not-at-top
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
  from variable_mgr.benchmark.training import harness  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.models import catalog  # pylint: disable=g-import-not-at-top
  if strategy not in STRATEGIES:
    raise ValueError('strategy=%r: a twin exists for %s.' %
                     (strategy, ', '.join(STRATEGIES)))
  config = _config(strategy, workload, towers, kind)
  model = catalog.get_model(workload)
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
