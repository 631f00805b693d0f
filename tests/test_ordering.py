"""Each update waits for its own variable's reads, and for nothing else.

Two sides of one rule (`variable_mgr.ordering`):
- the race: a model whose last layer is read late in the step (after an op
  that sleeps, for the first layer's gradient) while that layer's own
  gradient is ready at once. An update that does not wait for the late read
  always lands before it, with ref and with resource variables, and the
  first layer then trains on the wrong weights. Every strategy must match
  NumPy exactly. (Staged towers read staged copies, never the variable:
  there the race is between the put's snapshot and the update, which
  `test_every_update_follows_every_read_of_its_variable` checks in the
  graph and the conformance suite in the numbers.)
- no needless wait, read off the graph: no update depends on another
  tower's backward pass (independent) or on another variable's gradient,
  and every update of a variable is reachable from every op that reads it.
"""

import time

import numpy as np
import pytest
import tensorflow as tf

import graph_walk
import seed_harness
import variable_mgr
from variable_mgr import interface

tf1 = tf.compat.v1

N, M, BATCH = 6, 3, 4
# What makes the late read late: an op that sleeps this long (holding one
# inter-op thread; the session gets threads to spare), where the last
# layer's gradient takes microseconds.
DELAY_SECONDS = 0.03
INTER_OP_THREADS = 8
STEPS = 3
LEARNING_RATE = 0.1
TOLERANCE = dict(rtol=2e-5, atol=2e-6)  # float32

# name -> (create() arguments, host arguments, how towers combine, stale)
STRATEGIES = {
    'independent': (dict(variable_update='independent'), {}, 'none', False),
    'ps_cpu': (dict(variable_update='parameter_server'), {}, 'mean', False),
    'ps_spread': (dict(variable_update='parameter_server'),
                  dict(local_parameter_device='gpu'), 'mean', False),
    'staged_ps': (dict(variable_update='parameter_server', staged_vars=True),
                  {}, 'mean', True),
    'replicated': (dict(variable_update='replicated'), {}, 'sum', False),
    'replicated_spread': (dict(variable_update='replicated'),
                          dict(local_parameter_device='gpu'), 'sum', False),
    'replicated_xring': (dict(variable_update='replicated',
                              all_reduce_spec='xring'), {}, 'sum', False),
}


def _sleep():
  time.sleep(DELAY_SECONDS)
  return np.float32(0)


@pytest.fixture(autouse=True)
def spare_threads(monkeypatch):
  """Sessions with inter-op threads to spare, so that a sleeping op never
  holds back the ops that are ready."""
  original = interface.BenchmarkCnnLike.session_config

  def session_config(self):
    config = original(self)
    config.inter_op_parallelism_threads = INTER_OP_THREADS
    return config

  monkeypatch.setattr(interface.BenchmarkCnnLike, 'session_config',
                      session_config)


def late_read_model():
  """loss = 0.5 mean|x w2 - y|^2 + 0.5 mean|tanh(x w1) sg(w2') - y2|^2,
  where w2' is w2 read only after the delay chain."""
  x = tf1.placeholder(tf.float32, [BATCH, N])
  y = tf1.placeholder(tf.float32, [BATCH, M])
  y2 = tf1.placeholder(tf.float32, [BATCH, M])
  init = tf1.random_normal_initializer(stddev=0.5)
  w1 = tf1.get_variable('layer1/w1', [N, N], tf.float32, init)
  w2 = tf1.get_variable('layer2/w2', [N, M], tf.float32, init)
  delay = tf1.py_func(_sleep, [], tf.float32, stateful=True)
  with tf1.control_dependencies([delay.op]):
    w2_late = tf.stop_gradient(w2)
  fast = tf.matmul(x, w2) - y
  slow = tf.matmul(tf.tanh(tf.matmul(x, w1)), w2_late) - y2
  loss = 0.5 * (tf.reduce_mean(tf.reduce_sum(tf.square(fast), 1)) +
                tf.reduce_mean(tf.reduce_sum(tf.square(slow), 1)))
  return loss, (x, y, y2)


def numpy_gradients(w, batch):
  x, y, y2 = batch
  h = np.tanh(x.dot(w['w1']))
  d_slow = (h.dot(w['w2']) - y2) / BATCH
  d_h = d_slow.dot(w['w2'].T) * (1 - h * h)
  return {'w1': x.T.dot(d_h), 'w2': x.T.dot((x.dot(w['w2']) - y) / BATCH)}


def reference(init, batches, combine, stale):
  """Per step, tower 0's (or the shared) weights after it."""
  num_towers = len(batches[0])
  towers = [dict((k, v.astype(np.float64)) for k, v in init.items())
            for _ in range(num_towers)]
  previous = dict(towers[0])
  result = []
  for step_batches in batches:
    if combine == 'none':
      for w, batch in zip(towers, step_batches):
        g = numpy_gradients(w, batch)
        for k in w:
          w[k] = w[k] - LEARNING_RATE * g[k]
    else:
      at = previous if stale else towers[0]
      grads = [numpy_gradients(at, batch) for batch in step_batches]
      scale = 1.0 / num_towers if combine == 'mean' else 1.0
      previous = dict(towers[0])
      new = dict((k, towers[0][k] - LEARNING_RATE * scale *
                  sum(g[k] for g in grads)) for k in towers[0])
      towers = [dict(new) for _ in towers]
    result.append([dict(w) for w in towers])
  return result


def make_batches(num_towers, seed=3):
  rng = np.random.RandomState(seed)
  return [[(rng.randn(BATCH, N).astype(np.float32),
            rng.randn(BATCH, M).astype(np.float32),
            rng.randn(BATCH, M).astype(np.float32))
           for _ in range(num_towers)] for _ in range(STEPS)]


def _short(name):
  return name.split('/')[-1]


def tower_values(run, tower):
  """{'w1', 'w2'}: tower `tower`'s values of the late-read models."""
  variables = dict((_short(n), v) for n, v in
                   run.tower_variables(tower).items())
  return run.sess.run({'w1': variables['w1'], 'w2': variables['w2']})


def check_steps_against(run, batches, reference_fn, num_towers):
  """Runs `batches` one step each and checks every tower's w1 and w2 after
  each step against `reference_fn(initial values)[step][tower]`; closes
  the run."""
  try:
    expected = reference_fn(tower_values(run, 0))
    for step, step_batches in enumerate(batches):
      run.step(step_batches)
      towers = range(num_towers) if run.mgr.each_tower_has_variables() else [0]
      for t in towers:
        got = tower_values(run, t)
        for k in ('w1', 'w2'):
          np.testing.assert_allclose(
              got[k], expected[step][t][k], err_msg='%s tower %d step %d' %
              (k, t, step), **TOLERANCE)
  finally:
    run.close()


@pytest.mark.parametrize('name', sorted(STRATEGIES))
def test_an_update_waits_for_a_late_read_of_its_variable(name, variable_kind):
  create_args, host_args, combine, stale = STRATEGIES[name]
  num_towers = 2
  run = seed_harness.Harness(create_args, host_args, num_towers,
                             late_read_model, LEARNING_RATE, tf.float32)
  batches = make_batches(num_towers)
  check_steps_against(
      run, batches, lambda init: reference(init, batches, combine, stale),
      num_towers)


# -- The graph: what each update depends on ----------------------------------

_UPDATE_TYPES = ('ApplyGradientDescent', 'ResourceApplyGradientDescent')


def _updates_of(graph, var):
  """The ops that apply a gradient to `var`."""
  return [op for op in graph.get_operations()
          if op.type in _UPDATE_TYPES and op.inputs[0].op is var.op]


def _variable(run, tower, short):
  return dict((_short(n), v) for n, v in
              run.tower_variables(tower).items())[short]


def _grad_ops(run, tower, short):
  """The ops that compute tower `tower`'s gradient of `short`."""
  for g, v in run.tower_grads[tower]:
    if _short(v.op.name) == short:
      return [g.op]
  raise AssertionError('no gradient of %s' % short)


def _seed_run(name, variable_kind):
  del variable_kind  # The fixture has set the variable kind.
  create_args, host_args, _, _ = STRATEGIES[name]
  return seed_harness.Harness(
      create_args, host_args, 2,
      lambda: _seed_tower(), seed_harness.LEARNING_RATE, tf.float32)


def _seed_tower():
  x = tf1.placeholder(tf.float32, [6, seed_harness.IN])
  y = tf1.placeholder(tf.float32, [6, seed_harness.OUT])
  return seed_harness.model(x, y), (x, y)


def test_independent_towers_wait_for_nothing_of_each_other(variable_kind):
  run = _seed_run('independent', variable_kind)
  try:
    tower_0 = set()
    for g, _ in run.tower_grads[0]:
      tower_0 |= graph_walk.ancestors(g.op) | {g.op}
    tower_0 = set(op for op in tower_0 if op.name.startswith('v0/'))
    assert any('gradients' in op.name for op in tower_0)
    for short in seed_harness.VARIABLES:
      (update,) = _updates_of(run.graph, _variable(run, 1, short))
      shared = graph_walk.ancestors(update) & tower_0
      assert not shared, '%s of tower 1 waits for %s' % (
          short, sorted(op.name for op in shared)[:5])
  finally:
    run.close()


@pytest.mark.parametrize('name', ['ps_cpu', 'ps_spread', 'staged_ps',
                                  'replicated', 'replicated_xring'])
def test_the_last_layer_does_not_wait_for_the_first_layers_gradient(
    name, variable_kind):
  run = _seed_run(name, variable_kind)
  try:
    first = set(op for t in range(2) for op in _grad_ops(run, t, 'w1'))
    towers = range(2) if run.mgr.each_tower_has_variables() else [0]
    for t in towers:
      updates = _updates_of(run.graph, _variable(run, t, 'w2'))
      assert updates
      for update in updates:
        assert not graph_walk.ancestors(update) & first, (name, t)
  finally:
    run.close()


def _readers(var):
  """Ops reading `var`'s value, found independently of the library: the
  consumers of its reads through Identity/StopGradient (ref), or its
  ReadVariableOps (resource)."""
  graph = var.op.graph
  result = []
  if var.op.type == 'VarHandleOp':
    for op in graph.get_operations():
      if op.type == 'ReadVariableOp' and op.inputs[0].op is var.op:
        result.append(op)
    return result
  frontier = [var.op.outputs[0]]
  while frontier:
    tensor = frontier.pop()
    for consumer in tensor.consumers():
      if consumer.type in ('Identity', 'StopGradient'):
        frontier.extend(consumer.outputs)
      elif consumer.type not in ('Assign', 'IsVariableInitialized') + (
          _UPDATE_TYPES):
        result.append(consumer)
  return result


@pytest.mark.parametrize('name', sorted(STRATEGIES))
def test_every_update_follows_every_read_of_its_variable(name, variable_kind):
  """Reads by the towers' ops, all built before preprocess_device_grads
  (the post-init copies and the saver, built later, read too)."""
  create_args, host_args, _, _ = STRATEGIES[name]
  run = seed_harness.Harness(create_args, host_args, 2, late_read_model,
                             LEARNING_RATE, tf.float32)
  try:
    towers = range(2) if run.mgr.each_tower_has_variables() else [0]
    checked = 0
    for t in towers:
      for short in ('w1', 'w2'):
        var = _variable(run, t, short)
        towers_ops = run.built_by_towers
        readers = [op for op in _readers(var) if op in towers_ops and (
            not op.outputs or any(c in towers_ops for out in op.outputs
                                  for c in out.consumers()))]
        assert readers
        for update in _updates_of(run.graph, var):
          missing = set(readers) - graph_walk.ancestors(update)
          assert not missing, (short, t, sorted(op.name for op in missing))
          checked += 1
    assert checked >= 2
  finally:
    run.close()


# -- Reads inside tf.cond and tf.while_loop ------------------------------------


@pytest.fixture(params=['v1', 'v2'])
def control_flow(request):
  """TF 1.x control flow (Switch/Merge, Enter/Exit: 1.15's only kind) and
  control flow v2 (If/While ops), restoring the default afterwards."""
  was_v2 = tf1.control_flow_v2_enabled()
  if request.param == 'v1':
    tf1.disable_control_flow_v2()
  else:
    tf1.enable_control_flow_v2()
  yield request.param
  if was_v2:
    tf1.enable_control_flow_v2()
  else:
    tf1.disable_control_flow_v2()


LOOP_STEPS = 3


def control_flow_model(loop_steps=LOOP_STEPS):
  """pred' = cond(p, x w, 2 x w) + sum over `loop_steps` iterations of x w:
  w is read only inside a cond's branches and a loop's body."""
  x = tf1.placeholder(tf.float32, [BATCH, N])
  y = tf1.placeholder(tf.float32, [BATCH, M])
  p = tf1.placeholder(tf.bool, [])
  w = tf1.get_variable('layer/w', [N, M], tf.float32,
                       tf1.random_normal_initializer(stddev=0.5))
  branch = tf.cond(p, lambda: tf.matmul(x, w), lambda: tf.matmul(x, 2.0 * w))
  _, looped = tf.while_loop(
      lambda i, acc: i < loop_steps,
      lambda i, acc: (i + 1, acc + tf.matmul(x, w)),
      [tf.constant(0), tf.zeros([BATCH, M])])
  error = branch + looped - y
  return 0.5 * tf.reduce_mean(tf.reduce_sum(tf.square(error), 1)), (x, y, p)


@pytest.mark.parametrize('name', ['independent', 'ps_cpu', 'replicated'])
def test_reads_inside_cond_and_while_loop(name, variable_kind, control_flow):
  """The update waits for the construct's end (an op of an untaken branch
  would never run), so it runs, after the reads, whichever branch runs."""
  del control_flow  # The fixture has chosen the kind.
  create_args, host_args, combine, _ = STRATEGIES[name]
  num_towers = 2
  if variable_kind == 'resource' and name == 'ps_cpu':
    pytest.skip('TensorFlow cannot place this graph, ordered or not: the '
                'gradients of a cond\'s or a loop\'s read of a resource '
                'variable on the parameter device colocate the tower\'s '
                'constants with that read (see README, parameter_server)')
  loop_steps = LOOP_STEPS
  run = seed_harness.Harness(
      create_args, host_args, num_towers,
      lambda: control_flow_model(loop_steps), LEARNING_RATE, tf.float32)
  try:
    rng = np.random.RandomState(5)
    towers = range(num_towers) if run.mgr.each_tower_has_variables() else [0]
    weights = [run.sess.run(_variable(run, 0, 'w')).astype(np.float64)
               for _ in towers]
    for step, taken in enumerate([True, False, True]):
      batches = [(rng.randn(BATCH, N).astype(np.float32),
                  rng.randn(BATCH, M).astype(np.float32), taken)
                 for _ in range(num_towers)]
      factor = (1.0 if taken else 2.0) + loop_steps

      def gradient(w, batch):
        x, y, _ = batch
        return factor * x.T.dot((factor * x.dot(w) - y) / BATCH)

      if combine == 'none':
        weights = [w - LEARNING_RATE * gradient(w, b)
                   for w, b in zip(weights, batches)]
      else:
        total = sum(gradient(weights[0], b) for b in batches)
        if combine == 'mean':
          total = total / num_towers
        weights = [weights[0] - LEARNING_RATE * total for _ in towers]
      run.step(batches)
      for t in towers:
        # The weights grow to about 100 here (the loop multiplies the
        # model): float32's rounding of those sums is absolute, so the
        # tolerance scales with the largest weight. A race (an update
        # before a read) is off by a learning rate times a gradient, far
        # above it.
        scale = max(1.0, float(np.abs(weights[t]).max()))
        np.testing.assert_allclose(
            run.sess.run(_variable(run, t, 'w')), weights[t],
            err_msg='tower %d step %d' % (t, step),
            rtol=TOLERANCE['rtol'], atol=TOLERANCE['atol'] * scale)
  finally:
    run.close()


# -- Distributed strategies: the same, read off a worker's graph -------------

CLUSTER = {'ps': ['127.0.0.1:1', '127.0.0.1:2'],
           'worker': ['127.0.0.1:3', '127.0.0.1:4']}
DISTRIBUTED = {
    'parameter_server': dict(variable_update='parameter_server'),
    'staged parameter_server': dict(variable_update='parameter_server',
                                    staged_vars=True),
    'distributed_replicated': dict(variable_update='distributed_replicated'),
    # One collective a gradient: in a bucket (the strategy's default) an
    # update waits by data for every gradient of its bucket, which travel
    # in one buffer (docs/strategies.md; tests/test_gradient_buckets.py
    # checks what a bucket waits for). The reads are checked with buckets
    # too.
    'collective_all_reduce': dict(variable_update='collective_all_reduce',
                                  bucket_bytes=0),
    'collective_all_reduce buckets': dict(
        variable_update='collective_all_reduce'),
}
_WRITE_TYPES = _UPDATE_TYPES + ('Assign', 'AssignVariableOp')


def _worker_graph(create_args):
  """Worker 1's training graph (two towers), built without any server.

  Returns (graph, tower_grads, writes): writes maps each written variable's
  op name to the ops that update or overwrite it in the step.
  """
  graph = tf.Graph()
  with graph.as_default():
    host = variable_mgr.ClusterBenchmarkCnn(CLUSTER, 1, 2)
    mgr = variable_mgr.create(benchmark_cnn=host, **create_args)
    host.devices = mgr.get_devices()
    tower_grads = []
    for d in range(2):
      with mgr.create_outer_variable_scope(d), tf.name_scope('tower_%d' % d):
        with tf1.device(host.devices[d]):
          loss, _ = _seed_tower()
          grads = tf.gradients(loss, mgr.trainable_variables_on_device(d))
          refs = mgr.trainable_variables_on_device(d, writable=True)
          tower_grads.append(list(zip(grads, refs)))
    before = set(graph.get_operations())
    apply_devices, state = mgr.preprocess_device_grads(tower_grads)
    training_ops = []
    opt = tf1.train.GradientDescentOptimizer(0.1, use_locking=True)
    for i, device in enumerate(apply_devices):
      with tf1.device(device):
        mgr.append_apply_gradients_ops(
            state, opt, mgr.get_gradients_to_apply(i, state), training_ops)
    step = set(op for t in training_ops
               for op in graph_walk.ancestors(getattr(t, 'op', t)) | {
                   getattr(t, 'op', t)})
    writes = {}
    for op in step - before:
      if op.type in _WRITE_TYPES:
        writes.setdefault(op.inputs[0].op.name, []).append(op)
  return graph, tower_grads, writes


@pytest.mark.parametrize('name', sorted(DISTRIBUTED))
def test_distributed_updates_wait_for_their_own_reads_only(name,
                                                           variable_kind):
  del variable_kind  # The fixture has set the variable kind.
  graph, tower_grads, writes = _worker_graph(DISTRIBUTED[name])
  first = set(g.op for tower in tower_grads for g, v in tower
              if _short(v.op.name) == 'w1')
  checked = 0
  for var_name, ops in writes.items():
    for op in ops:
      ancestors = graph_walk.ancestors(op)
      if _short(var_name) in ('w2', 'b2') and 'buckets' not in name:
        assert not ancestors & first, (name, op.name)
      var = [v for v in graph.get_collection(tf1.GraphKeys.GLOBAL_VARIABLES) +
             graph.get_collection(tf1.GraphKeys.LOCAL_VARIABLES)
             if v.op.name == var_name][0]
      towers_reads = [r for r in _readers(var) if r.name.startswith(
          ('v0/tower_0/', 'v1/tower_1/', 'v/tower_')) and (
              not r.outputs or any(t.consumers() for t in r.outputs))]
      missing = set(towers_reads) - ancestors
      assert not missing, (name, op.name, sorted(r.name for r in missing))
      checked += 1
  assert checked >= 4
