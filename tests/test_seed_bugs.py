"""One test per bug of the seed (REFERENCE.md section 2) that the library
fixes; each of these fails on the seed's code.

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


def test_local_getter_in_a_scope_keeps_trainable(variable_kind):
  with tf.Graph().as_default():
    with tf1.variable_scope(
        'v0', custom_getter=variable_mgr.OverrideToLocalVariableIfNotPsVar()):
      tf1.get_variable('w', [3])
      tf1.get_variable('s', [3], trainable=False)
    assert _names(LOCAL) == ['v0/s', 'v0/w']
    assert _names(TRAINABLE) == ['v0/w']
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


def test_replica_device_setter_balances_resource_variables_by_bytes(
    resource_variables):
  """tf.contrib's byte_size_load_fn counted a resource handle (a scalar) as
  0 bytes, so every resource variable landed on PS task 0."""
  cluster = tf1.train.ClusterSpec({'ps': ['h:1', 'h:2'], 'worker': ['h:3']})
  with tf.Graph().as_default():
    setter = tf1.train.replica_device_setter(
        cluster=cluster, worker_device='/job:worker/task:0',
        ps_strategy=variable_mgr.GreedyLoadBalancingStrategy(2))
    with tf1.device(setter):
      specs = [('a', [100], tf.float32), ('b', [60], tf.float64),
               ('c', [50], tf.float32), ('d', [70], tf.float32)]
      variables = [tf1.get_variable(n, s, d) for n, s, d in specs]
  # Bytes 400, 480, 200, 280: a->0 (400,0); b->1 (400,480); c->0 (600,480);
  # d->1 (600,760). By element count d would go to task 0 instead.
  tasks = [tf.DeviceSpec.from_string(v.device).task for v in variables]
  jobs = set(tf.DeviceSpec.from_string(v.device).job for v in variables)
  assert jobs == {'ps'}
  assert tasks == [0, 1, 0, 1]


# -- Staging --------------------------------------------------------------------


def test_staging_get_is_a_tensor():
  """Newer TF's StagingArea.get() returns a list; the seed fed it on."""
  with tf.Graph().as_default():
    area = compat.staging_area(tf.float32, [2])
    value = compat.staging_get(area)
    assert isinstance(value, tf.Tensor)
    assert value.shape.as_list() == [2]


def test_staged_ps_runs_with_resource_variables(resource_variables):
  """The seed's staged PS fails to build with StagingArea.get() lists."""
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


def test_staged_model_variable_read_assign_sub_convert(variable_kind):
  """Seed: StagedModelVariable._ref() calls the real variable's _ref(),
  which resource variables lack."""
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


@pytest.mark.parametrize('variable_update', ['parameter_server', 'replicated',
                                             'independent'])
def test_preprocess_accepts_one_shot_iterators(variable_update):
  """Seed (Python 3): zip(...) per tower is consumed by the first pass and
  later passes see nothing. Tower d's loss is sum(w * x_d)."""
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


@pytest.mark.parametrize('name', sorted(LOCAL_STRATEGIES))
def test_retain_tower_updates_tower_zero_only_local(name):
  """Seed: False for every tower of replicated (and independent)."""
  k = 3
  with tf.Graph().as_default():
    mgr = variable_mgr.create(
        benchmark_cnn=variable_mgr.LocalBenchmarkCnn(k),
        **LOCAL_STRATEGIES[name])
    assert [mgr.retain_tower_updates(d) for d in range(k)] == [
        True, False, False]


@pytest.mark.parametrize('options', [
    dict(variable_update='parameter_server'),
    dict(variable_update='parameter_server', staged_vars=True),
    dict(variable_update='distributed_replicated')])
def test_retain_tower_updates_tower_zero_only_distributed(options):
  with tf.Graph().as_default():
    host = variable_mgr.ClusterBenchmarkCnn(
        {'ps': ['h:1', 'h:2'], 'worker': ['h:3', 'h:4']}, 0, 2)
    mgr = variable_mgr.create(benchmark_cnn=host, **options)
    assert [mgr.retain_tower_updates(d) for d in range(2)] == [True, False]


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
    opt = tf1.train.GradientDescentOptimizer(0.1)
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


# -- The ref-variable race ------------------------------------------------------

RACE_STEPS = 16
RACE_BATCH = 16
RACE_SHAPES = dict(IN=512, HIDDEN=256, OUT=64)
# Small enough that plain SGD on these widths is stable in float32.
RACE_LEARNING_RATE = 0.002
# A racing update moves a step's result by several % of the step's update
# (measured: 0.7-20 %); float32 rounding stays below 0.01 %.
RACE_TOLERANCE = 1e-3


@pytest.mark.parametrize('num_towers', [1, 2])
@pytest.mark.parametrize('create_args', [
    dict(variable_update='parameter_server'),
    dict(variable_update='parameter_server', local_parameter_device='gpu'),
    dict(variable_update='replicated'),
], ids=['ps', 'ps_spread', 'replicated'])
def test_ref_variable_updates_wait_for_the_backward_pass(
    create_args, num_towers, ref_variables, monkeypatch):
  """With ref variables, nothing but the manager orders an update of w2
  after the backward pass's read of w2 (for w1's gradient). Wide layers
  make that read late enough that an unordered update beats it."""
  for key, value in RACE_SHAPES.items():
    monkeypatch.setattr(seed_harness, key, value)
  monkeypatch.setattr(seed_harness, 'LEARNING_RATE', RACE_LEARNING_RATE)
  run = seed_harness.Run(num_towers=num_towers, batch=RACE_BATCH,
                         **create_args)
  try:
    with run.graph.as_default():
      w2 = run.mgr.get_variables_to_save()['layer2/w2']
    assert not compat.is_resource_variable(w2)
    init = run.values(0)
    rng = np.random.RandomState(7)
    batches = [[(rng.randn(RACE_BATCH, 512).astype(np.float32),
                 rng.randn(RACE_BATCH, 64).astype(np.float32))
                for _ in range(num_towers)] for _ in range(RACE_STEPS)]
    combine = 'sum' if create_args['variable_update'] == 'replicated' else (
        'mean')
    expected = test_conformance.reference(init, batches, combine)
    previous = init
    for step, step_batches in enumerate(batches):
      run.step(step_batches)
      for t in range(num_towers if run.mgr.each_tower_has_variables() else 1):
        got = run.values(t)
        for k in seed_harness.VARIABLES:
          want = expected[step][t][k]
          update = np.abs(want - previous[k]).max()
          error = np.abs(got[k] - want).max()
          assert error <= RACE_TOLERANCE * update, (
              '%s tower %d step %d: off by %.2g of the step\'s update' %
              (k, t, step, error / update))
      previous = expected[step][0]
  finally:
    run.close()
