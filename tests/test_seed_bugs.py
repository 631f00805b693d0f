"""The bugs of the seed that the library fixes, one test each, and the seed
behaviour around them that a rewrite could lose.

The seed is tf_cnn_benchmarks' variable_mgr.py of May 2017, the code this
library ports (it imports tf.contrib, so it does not load under TensorFlow
2). Every test whose docstring starts with "Seed:" fails on the seed's code
and says why; tests/mutation_check.py puts each of these bugs back into the
library and checks that its tests then fail. The tests under "Behaviour the
seed already had" pass on the seed too: they keep what a fix must not
break.

The hierarchical-copy bug (last GPU dropped for odd counts) belongs to the
all-reduce algorithms and is tested with them.
"""

import numpy as np
import pytest
import tensorflow as tf

import seed_harness
import test_conformance
import variable_mgr
from variable_mgr import compat

tf1 = tf.compat.v1
GLOBAL = tf1.GraphKeys.GLOBAL_VARIABLES
LOCAL = tf1.GraphKeys.LOCAL_VARIABLES
TRAINABLE = tf1.GraphKeys.TRAINABLE_VARIABLES

LOCAL_STRATEGIES = {
    'independent': dict(variable_update='independent'),
    'parameter_server': dict(variable_update='parameter_server'),
    'staged_parameter_server': dict(variable_update='parameter_server',
                                    staged_vars=True),
    'replicated': dict(variable_update='replicated'),
}
CANONICAL = {'layer1/w1', 'layer1/b1', 'layer2/w2', 'layer2/b2'}


@pytest.fixture
def ref_variables():
  """Ref variables (TF 1.15's default), whatever the default was."""
  resource_default = tf1.resource_variables_enabled()
  tf1.disable_resource_variables()
  yield
  if resource_default:
    tf1.enable_resource_variables()


@pytest.fixture
def resource_variables():
  resource_default = tf1.resource_variables_enabled()
  tf1.enable_resource_variables()
  yield
  if not resource_default:
    tf1.disable_resource_variables()


def _names(collection):
  return sorted(v.op.name for v in tf1.get_collection(collection))


# -- OverrideToLocalVariableIfNotPsVar ------------------------------------------


def test_local_getter_without_collections_kwarg(variable_kind):
  """Seed: `collections` is unbound when the kwarg is absent."""
  with tf.Graph().as_default():
    getter = variable_mgr.OverrideToLocalVariableIfNotPsVar()
    var = getter(tf1.get_variable, 'v0/w', shape=[2])
    assert var.op.name == 'v0/w'
    assert _names(LOCAL) == ['v0/w']
    assert _names(GLOBAL) == []


def test_local_getter_with_collections_lacking_global(variable_kind):
  """Seed: `.remove(GLOBAL_VARIABLES)` raises when the list lacks it; the
  caller's other collections are kept."""
  with tf.Graph().as_default():
    getter = variable_mgr.OverrideToLocalVariableIfNotPsVar()
    getter(tf1.get_variable, 'v0/w', shape=[2],
           collections=['my_collection', TRAINABLE])
    assert _names('my_collection') == ['v0/w']
    assert _names(TRAINABLE) == ['v0/w']
    assert _names(LOCAL) == ['v0/w']
    assert _names(GLOBAL) == []


def test_local_getter_ps_var_keeps_name_and_global(variable_kind):
  """Seed: the ps_var branch calls getter(*args) and drops `name`."""
  with tf.Graph().as_default():
    getter = variable_mgr.OverrideToLocalVariableIfNotPsVar()
    var = getter(tf1.get_variable, 'ps_var/v0/w', shape=[2])
    assert var.op.name == 'ps_var/v0/w'
    assert _names(GLOBAL) == ['ps_var/v0/w']
    assert _names(LOCAL) == []


# -- OverrideCachingDevice ------------------------------------------------------


def test_caching_device_unknown_shape_goes_to_small_device(variable_kind):
  """Seed: `None < threshold` is a TypeError on Python 3."""
  seen = []

  def recording_getter(*args, **kwargs):
    seen.append((args[0] if args else kwargs['name'],
                 kwargs['caching_device']))
    return tf1.get_variable(*args, **kwargs)

  with tf.Graph().as_default():
    caching = variable_mgr.OverrideCachingDevice(
        ['/cpu:1', '/cpu:2'], '/cpu:0', small_variable_size_threshold=10)
    unknown = tf1.placeholder_with_default(tf.zeros([7]), shape=[None])
    var = caching(recording_getter, 'u', initializer=unknown,
                  validate_shape=False, shape=None)
    assert not var.shape.is_fully_defined()
    caching(recording_getter, 'big1', shape=[20])
    caching(recording_getter, 'big2', shape=[30])
    caching(recording_getter, 'big3', shape=[5, 2])
    caching(recording_getter, 'small', shape=[9])
  # u: unknown -> small device, counted 0; big1 -> cpu:1 (20, 0);
  # big2 -> cpu:2 (20, 30); big3 (10) -> cpu:1 (30, 30); small -> cpu:0.
  assert seen == [('u', '/cpu:0'), ('big1', '/cpu:1'), ('big2', '/cpu:2'),
                  ('big3', '/cpu:1'), ('small', '/cpu:0')]
  assert caching.sizes == [30, 30]


# -- Device setters and resource variables ----------------------------------------


def test_param_server_device_setter_spreads_resource_variables(
    resource_variables):
  """Seed: only Variable/VariableV2 are placed; VarHandleOp went to the
  worker device."""
  with tf.Graph().as_default():
    setter = variable_mgr.ParamServerDeviceSetter(
        '/cpu:0', ['/cpu:1', '/cpu:2'])
    with tf1.device(setter):
      sizes = [10, 4, 3, 5, 1]
      variables = [tf1.get_variable('a%d' % i, [n])
                   for i, n in enumerate(sizes)]
      compute = tf.add_n([tf.reduce_sum(v) for v in variables])
  assert all(v.op.type == 'VarHandleOp' for v in variables)
  # Least loaded first, first on a tie: 10->1 (10,0); 4->2 (10,4);
  # 3->2 (10,7); 5->2 (10,12); 1->1 (11,12).
  assert [v.device for v in variables] == [
      '/cpu:1', '/cpu:2', '/cpu:2', '/cpu:2', '/cpu:1']
  assert setter.ps_sizes == [11, 12]
  assert compute.device == '/cpu:0'


# Bytes 120, 80, 40, 240. Least loaded task first, first on a tie:
# a->0 (120, 0); b->1 (120, 80); c->1 (120, 120); d->0 (360, 120). Each
# other way of counting gives another placement: by elements (30, 10, 10,
# 30) [0, 1, 1, 1]; by the bytes of a resource handle, a scalar (4, 8, 4,
# 8), [0, 1, 0, 0]; one a variable, or round-robin, [0, 1, 0, 1]; every
# load 0 (tf.contrib's count of a handle) [0, 0, 0, 0].
BALANCED = [('a', [30], tf.float32), ('b', [10], tf.float64),
            ('c', [10], tf.float32), ('d', [30], tf.float64)]
BALANCED_TASKS = [0, 1, 1, 0]


def test_replica_device_setter_balances_resource_variables_by_bytes(
    resource_variables):
  """Seed: tf.contrib's byte_size_load_fn (the seed's load function)
  counted a resource variable by its handle, a scalar, so resource variables
  were not balanced by their size."""
  cluster = tf1.train.ClusterSpec({'ps': ['h:1', 'h:2'], 'worker': ['h:3']})
  with tf.Graph().as_default():
    strategy = variable_mgr.GreedyLoadBalancingStrategy(2)
    setter = tf1.train.replica_device_setter(
        cluster=cluster, worker_device='/job:worker/task:0',
        ps_strategy=strategy)
    with tf1.device(setter):
      variables = [tf1.get_variable(n, s, d) for n, s, d in BALANCED]
  assert all(v.op.type == 'VarHandleOp' for v in variables)
  tasks = [tf.DeviceSpec.from_string(v.device).task for v in variables]
  jobs = set(tf.DeviceSpec.from_string(v.device).job for v in variables)
  assert jobs == {'ps'}
  assert tasks == BALANCED_TASKS


# -- Staging --------------------------------------------------------------------


def test_staging_get_is_a_tensor():
  """Seed: newer TF's StagingArea.get() returns a one-item list, which the
  seed fed on where a tensor is expected."""
  with tf.Graph().as_default():
    area = compat.staging_area(tf.float32, [2])
    value = compat.staging_get(area)
    assert isinstance(value, tf.Tensor)
    assert value.shape.as_list() == [2]


def test_staged_ps_runs_with_resource_variables(resource_variables):
  """Seed: the staged PS fails to build with StagingArea.get() lists."""
  test_conformance.check_run('staged_ps', 2)


def _staged_model_variable(num_towers=1):
  """A staged PS manager and a StagedModelVariable of a statistic, staged
  as the seed's getter staged it."""
  bench = variable_mgr.LocalBenchmarkCnn(num_towers)
  mgr = variable_mgr.create('parameter_server', bench, staged_vars=True)
  bench.devices = mgr.get_devices()
  real = tf1.get_variable('bn/moving_mean',
                          initializer=tf.constant([1.0, 2.0, 3.0]),
                          trainable=False)
  with tf1.device(bench.devices[0]):
    area = compat.staging_area(tf.float32, [3])
    put = area.put([compat.snapshot(real)])
    moving = variable_mgr.StagedModelVariable(
        real, compat.staging_get(area), mgr)
  return bench, mgr, moving, [put]


def test_staged_model_variable_of_a_resource_variable(resource_variables):
  """Seed: StagedModelVariable._ref() calls the real variable's _ref(),
  which resource variables lack: colocating with the wrapper fails."""
  _check_staged_model_variable('resource')


def _check_staged_model_variable(variable_kind):
  """Reads, colocation, conversion and assign_sub of a StagedModelVariable."""
  with tf.Graph().as_default() as graph:
    bench, mgr, moving, puts = _staged_model_variable()
    real = moving.real_var
    assert compat.is_resource_variable(real) == (variable_kind == 'resource')
    staged_read = tf.convert_to_tensor(moving)
    doubled = tf.multiply(moving, 2.0)  # Converted through the registry.
    with tf1.colocate_with(moving):
      colocated = tf.identity(tf.constant(0.0))
    assert colocated.op.colocation_groups() == [
        b'loc:@' + real.op.name.encode()]
    delta = tf1.placeholder(tf.float32, [3])
    update = moving.assign_sub(delta)
    init = tf1.global_variables_initializer()
    graph.finalize()
  with tf1.Session(graph=graph, config=bench.session_config()) as sess:
    sess.run(init)
    sess.run(puts)
    np.testing.assert_array_equal(sess.run(staged_read), [1.0, 2.0, 3.0])
    sess.run(puts)
    np.testing.assert_array_equal(sess.run(doubled), [2.0, 4.0, 6.0])
    # The harness runs the delta puts with the update, in one step.
    sess.run([update] + mgr.staging_delta_ops, {delta: [0.5, 1.0, -1.0]})
    np.testing.assert_array_equal(sess.run(real), [0.5, 1.0, 4.0])


# -- One-shot iterators -------------------------------------------------------------


@pytest.mark.parametrize('variable_update', ['replicated', 'independent'])
def test_preprocess_accepts_one_shot_iterators(variable_update):
  """Seed: on Python 3 the harness's zip(...) per tower is an iterator that
  the first pass over the towers consumes, and later passes see nothing
  (replicated reduces, then pairs the result with the towers' lists;
  independent hands each apply device a pass of its own)."""
  _check_one_shot_iterators(variable_update)


def _check_one_shot_iterators(variable_update):
  """Lists, zips and generators give the same gradients to apply. Tower
  d's loss is sum(w * x_d)."""
  k = 3
  xs = [np.arange(4, dtype=np.float32) + 10 * d for d in range(k)]
  with tf.Graph().as_default() as graph:
    bench = variable_mgr.LocalBenchmarkCnn(k)
    mgr = variable_mgr.create(variable_update, bench)
    bench.devices = mgr.get_devices()
    pairs = []
    for d in range(k):
      with mgr.create_outer_variable_scope(d), tf.name_scope('tower_%d' % d):
        with tf1.device(bench.devices[d]):
          w = tf1.get_variable('w', [4])
          loss = tf.reduce_sum(w * xs[d])
          params = mgr.trainable_variables_on_device(d)
          pairs.append((tf.gradients(loss, params), params))
    kinds = {
        'list': [list(zip(g, p)) for g, p in pairs],
        'zip': [zip(g, p) for g, p in pairs],
        'generator': [((gi, pi) for gi, pi in zip(g, p)) for g, p in pairs],
    }
    fetches = {}
    for kind, device_grads in kinds.items():
      apply_devices, state = mgr.preprocess_device_grads(device_grads)
      fetches[kind] = [[g for g, _ in mgr.get_gradients_to_apply(i, state)]
                       for i in range(len(apply_devices))]
    graph.finalize()
  with tf1.Session(graph=graph, config=bench.session_config()) as sess:
    values = sess.run(fetches)
  combined = {'parameter_server': [sum(xs) / k],
              'replicated': [sum(xs)] * k,
              'independent': xs}[variable_update]
  for kind in kinds:
    assert len(values[kind]) == len(combined)
    for got, expected in zip(values[kind], combined):
      assert len(got) == 1
      np.testing.assert_allclose(got[0], expected, rtol=1e-6)


# -- Batch-norm statistics: tower 0 everywhere ------------------------------------


def _retained(options, distributed):
  """retain_tower_updates(d) of every tower (3 local, 2 on a worker)."""
  with tf.Graph().as_default():
    if distributed:
      host = variable_mgr.ClusterBenchmarkCnn(
          {'ps': ['h:1', 'h:2'], 'worker': ['h:3', 'h:4']}, 0, 2)
    else:
      host = variable_mgr.LocalBenchmarkCnn(3)
    mgr = variable_mgr.create(benchmark_cnn=host, **options)
    return [mgr.retain_tower_updates(d) for d in range(host.num_gpus)]


@pytest.mark.parametrize('options,distributed', [
    (LOCAL_STRATEGIES['independent'], False),
    (LOCAL_STRATEGIES['replicated'], False),
    (dict(variable_update='distributed_replicated'), True),
], ids=['independent', 'replicated', 'distributed_replicated'])
def test_retain_tower_updates_tower_zero_with_tower_copies(options,
                                                           distributed):
  """Seed: False for every tower of the strategies with a copy of the
  variables a tower, so a harness kept no tower's statistics (or, as the
  seed's harness ended up doing, the last tower's) while checkpoints and
  evaluation read tower 0's copy."""
  expected = [True, False] + ([] if distributed else [False])
  assert _retained(options, distributed) == expected


# -- Checkpoints under canonical names ------------------------------------------


def _forward_graph(options, num_towers=2, host=None):
  """Steps 1-2 and 6 of the protocol (forward only) with the harness model,
  plus a Saver over get_variables_to_save()."""
  graph = tf.Graph()
  with graph.as_default():
    bench = host or variable_mgr.LocalBenchmarkCnn(num_towers)
    mgr = variable_mgr.create(benchmark_cnn=bench, **options)
    bench.devices = mgr.get_devices()
    for d in range(num_towers):
      with mgr.create_outer_variable_scope(d), tf.name_scope('tower_%d' % d):
        with tf1.device(bench.devices[d]):
          x = tf1.placeholder(tf.float32, [2, seed_harness.IN])
          y = tf1.placeholder(tf.float32, [2, seed_harness.OUT])
          seed_harness.model(x, y)
  return graph, bench, mgr


@pytest.mark.parametrize('name', sorted(LOCAL_STRATEGIES))
def test_variables_to_save_have_canonical_names_local(name, variable_kind):
  """Seed: get_variables_to_save() returned tf.global_variables(), every
  tower's copy under its own scope, and no names to save them under."""
  graph, _, mgr = _forward_graph(LOCAL_STRATEGIES[name], num_towers=3)
  with graph.as_default():
    to_save = mgr.get_variables_to_save()
  assert set(to_save) == CANONICAL
  scope = 'v0/' if mgr.each_tower_has_variables() else 'v/'
  for canonical, var in to_save.items():
    assert var.op.name == scope + canonical


def test_variables_to_save_distributed_replicated_are_masters():
  """Seed: distributed_replicated saved LOCAL variables (tower copies)."""
  host = variable_mgr.ClusterBenchmarkCnn(
      {'ps': ['h:1', 'h:2'], 'worker': ['h:3', 'h:4']}, 0, 2)
  graph = tf.Graph()
  with graph.as_default():
    host.devices = None
    mgr = variable_mgr.create('distributed_replicated', host)
    host.devices = mgr.get_devices()
    device_grads = []
    for d in range(2):
      with mgr.create_outer_variable_scope(d), tf.name_scope('tower_%d' % d):
        with tf1.device(host.devices[d]):
          x = tf1.placeholder(tf.float32, [2, seed_harness.IN])
          y = tf1.placeholder(tf.float32, [2, seed_harness.OUT])
          loss = seed_harness.model(x, y)
          params = mgr.trainable_variables_on_device(d)
          device_grads.append(zip(tf.gradients(loss, params), params))
    apply_devices, state = mgr.preprocess_device_grads(device_grads)
    opt = tf1.train.GradientDescentOptimizer(0.1, use_locking=True)
    training_ops = []
    for i, dev in enumerate(apply_devices):
      with tf1.device(dev):
        grads = mgr.get_gradients_to_apply(i, state)
        mgr.append_apply_gradients_ops(state, opt, grads, training_ops)
    to_save = mgr.get_variables_to_save()
  assert set(to_save) == CANONICAL
  for canonical, var in to_save.items():
    assert var.op.name == 'ps_var/v0/' + canonical


@pytest.mark.parametrize('source,target', [
    ('replicated', 'parameter_server'),
    ('parameter_server', 'replicated'),
    ('independent', 'staged_parameter_server')])
def test_checkpoint_restores_across_strategies(source, target, tmp_path,
                                               variable_kind):
  """Seed: replicated saved every tower's copy under v<d>/, so nothing of it
  loaded under parameter_server's v/ names."""
  path = str(tmp_path / 'model.ckpt')
  graph, bench, mgr = _forward_graph(LOCAL_STRATEGIES[source])
  with graph.as_default():
    saver = tf1.train.Saver(mgr.get_variables_to_save())
    init = [tf1.global_variables_initializer(),
            tf1.local_variables_initializer()]
    post_init = mgr.get_post_init_ops()
    saved_vars = mgr.get_variables_to_save()
  with tf1.Session(graph=graph, config=bench.session_config()) as sess:
    sess.run(init)
    sess.run(post_init)
    saved = sess.run(saved_vars)
    saver.save(sess, path)

  graph, bench, mgr = _forward_graph(LOCAL_STRATEGIES[target])
  with graph.as_default():
    restore_vars = mgr.get_variables_to_save()
    saver = tf1.train.Saver(restore_vars)
    init = [tf1.global_variables_initializer(),
            tf1.local_variables_initializer()]
    post_init = mgr.get_post_init_ops()
    towers = range(2) if mgr.each_tower_has_variables() else [None]
    per_tower = {}
    for d in towers:
      scope = 'v/' if d is None else 'v%d/' % d
      per_tower[d] = dict(
          (v.op.name[len(scope):], v) for v in tf1.global_variables()
          if v.op.name.startswith(scope))
  with tf1.Session(graph=graph, config=bench.session_config()) as sess:
    sess.run(init)
    fresh = sess.run(restore_vars)
    # Different random initial values: the restore below is not a no-op.
    assert any(not np.array_equal(fresh[k], saved[k]) for k in CANONICAL)
    saver.restore(sess, path)
    sess.run(post_init)
    for d in towers:
      got = sess.run(per_tower[d])
      assert set(got) == CANONICAL
      for k in CANONICAL:
        np.testing.assert_array_equal(got[k], saved[k], err_msg='%s %s' %
                                      (d, k))


# -- Behaviour the seed already had ----------------------------------------------
#
# These pass on the seed as well (under TensorFlow 1.15, which it was written
# for). A fix of the bugs above must not lose them.


def test_local_getter_in_a_scope_keeps_trainable(variable_kind):
  """The seed kept a tower's copies trainable while moving them to
  LOCAL_VARIABLES (the towers differentiate them); a getter that made them
  local variables the way tf.local_variable does (trainable=False) would
  not."""
  with tf.Graph().as_default():
    with tf1.variable_scope(
        'v0', custom_getter=variable_mgr.OverrideToLocalVariableIfNotPsVar()):
      tf1.get_variable('w', [3])
      tf1.get_variable('s', [3], trainable=False)
    assert _names(LOCAL) == ['v0/s', 'v0/w']
    assert _names(TRAINABLE) == ['v0/w']
    assert _names(GLOBAL) == []


def test_staged_model_variable_of_a_ref_variable(ref_variables):
  """What the seed's wrapper did for ref variables, it still does."""
  _check_staged_model_variable('ref')


def test_preprocess_accepts_one_shot_iterators_parameter_server():
  """The seed's parameter server passed over the towers' iterators once
  (one apply device), so it took zip(...) per tower; it still does now
  that the gradients are checked (a pass of their own) first."""
  _check_one_shot_iterators('parameter_server')


@pytest.mark.parametrize('options,distributed', [
    (LOCAL_STRATEGIES['parameter_server'], False),
    (LOCAL_STRATEGIES['staged_parameter_server'], False),
    (dict(variable_update='parameter_server'), True),
    (dict(variable_update='parameter_server', staged_vars=True), True),
], ids=['parameter_server', 'staged_parameter_server',
        'distributed_parameter_server', 'distributed_staged_parameter_server'])
def test_retain_tower_updates_tower_zero_with_shared_variables(options,
                                                               distributed):
  """The seed kept tower 0's statistics with shared variables."""
  expected = [True, False] + ([] if distributed else [False])
  assert _retained(options, distributed) == expected


# The ref-variable race: tests/test_ordering.py (a late read that an unordered
# update always beats, in every strategy, for both variable kinds).
