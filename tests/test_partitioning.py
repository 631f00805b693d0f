"""Large variables split across PS tasks (`variable_partition_min_bytes`).

The model is seed_harness's two-layer network: w1 [5, 4] (80 bytes), b1
[4], w2 [4, 3] (48 bytes), b2 [3]. With a minimum of 32 bytes and 2 PS
tasks only w1 is split (two slices of 2 and 3 rows, 32 and 48 bytes); w2
would give a slice of 2 rows, 24 bytes, under the minimum, and stays whole.

Numerics run on a cluster of 2 PS tasks and 1 worker (2 towers) inside this
process; the containers of its servers are reset before each graph, so no
variable or staging area outlives its test. Every run starts from the same
checkpoint (written from NumPy values), so partitioned and whole runs start
equal (a partitioned variable's random initialiser draws a slice at a
time), and every run equals NumPy.
"""

import os

import numpy as np
import pytest
import tensorflow as _tf

import seed_harness
import variable_mgr
from variable_mgr import checkpoint
from variable_mgr import errors
from variable_mgr import placement
from variable_mgr import staging
from variable_mgr.benchmark.runs import in_process

tf = _tf.compat.v1

MIN_BYTES = 32
TOWERS = 2
BATCH = 6
STEPS = 3
NAMES = {'w1': 'layer1/w1', 'b1': 'layer1/b1', 'w2': 'layer2/w2',
         'b2': 'layer2/b2'}
DISTRIBUTED = [('parameter_server', False), ('parameter_server', True),
               ('distributed_replicated', False)]
DISTRIBUTED_IDS = ['parameter_server', 'staged', 'distributed_replicated']


# -- How many slices --------------------------------------------------------


@pytest.mark.parametrize('shape,dtype,min_bytes,max_slices,expected', [
    ([3136, 512], tf.float32, 1 << 20, 2, 2),   # lenet's fc layer, 6.4 MB
    ([3136, 512], tf.float32, 1 << 20, 8, 6),   # 522 rows = 1.07 MB >= 1 MB
    ([3136, 512], tf.float32, 4 << 20, 8, 1),   # 2 slices would be 3.2 MB
    ([10, 50], tf.float32, 1000, 3, 2),         # 3 slices: 3 rows, 600 B
    ([10, 50], tf.float64, 1000, 3, 3),         # 3 rows of 400 B
    ([10, 50], tf.float32, 2000, 4, 1),         # exactly the minimum: whole
    ([3, 1000], tf.float32, 10, 8, 3),          # no more than the rows
    ([1000], tf.float32, 1000, 2, 2),
    ([], tf.float32, 1, 4, 1),                  # a scalar
    ([None, 4], tf.float32, 1, 4, 1),           # unknown shape
    ([100, 100], tf.float32, 0, 4, 1),          # off
])
def test_partition_count(shape, dtype, min_bytes, max_slices, expected):
  assert placement.partition_count(shape, dtype, min_bytes,
                                   max_slices) == expected


# -- Refusals, before any graph is built ------------------------------------


def _cluster_host(num_ps=2):
  spec = {'ps': ['127.0.0.1:%d' % (2400 + i) for i in range(num_ps)],
          'worker': ['127.0.0.1:2399']}
  return variable_mgr.ClusterBenchmarkCnn(spec, 0, TOWERS)


@pytest.mark.parametrize('value,error,words', [
    (-1, errors.InvalidOptionError, ['variable_partition_min_bytes=-1',
                                     '0 (no partitioning) or more']),
    (1.5, errors.InvalidOptionError, ['variable_partition_min_bytes=1.5',
                                      'integer']),
    (True, errors.InvalidOptionError, ['variable_partition_min_bytes=True',
                                       'integer']),
])
def test_bad_values_are_refused(value, error, words):
  with tf.Graph().as_default() as graph:
    with pytest.raises(error) as raised:
      variable_mgr.create('parameter_server', _cluster_host(),
                          variable_partition_min_bytes=value)
    assert not graph.get_operations()
  for word in words:
    assert word in str(raised.value)


@pytest.mark.parametrize('strategy,local', [
    ('parameter_server', True), ('independent', True), ('replicated', True),
    ('collective_all_reduce', False),
])
def test_strategies_without_ps_variables_refuse(strategy, local):
  host = (variable_mgr.LocalBenchmarkCnn(TOWERS) if local
          else _cluster_host())
  with tf.Graph().as_default() as graph:
    with pytest.raises(errors.IncompatibleOptionsError) as raised:
      variable_mgr.create(strategy, host, variable_partition_min_bytes=1024)
    assert not graph.get_operations()
  message = str(raised.value)
  assert 'variable_partition_min_bytes=1024' in message
  assert repr(strategy) in message
  assert 'drop the option' in message


def test_zero_is_accepted_everywhere():
  with tf.Graph().as_default():
    variable_mgr.create('replicated', variable_mgr.LocalBenchmarkCnn(TOWERS),
                        variable_partition_min_bytes=0)
    mgr = variable_mgr.create('parameter_server', _cluster_host(),
                              variable_partition_min_bytes=0)
    assert mgr.variable_partition_min_bytes == 0


# -- The graph: slices, placement -------------------------------------------


class _Towers(object):
  """The towers and update ops of seed_harness.model, in protocol order.

  Attributes: mgr, inputs (per tower), train_op, puts, saved, init,
  post_init, saver.
  """

  def __init__(self, strategy, host, min_bytes, staged, resource,
               learning_rate=seed_harness.LEARNING_RATE, momentum=None):
    self.graph = tf.Graph()
    with self.graph.as_default(), tf.variable_scope(
        tf.get_variable_scope(), use_resource=resource):
      options = {'variable_partition_min_bytes': min_bytes}
      if staged:
        options['staged_vars'] = True
      self.mgr = mgr = variable_mgr.create(strategy, host, **options)
      host.devices = mgr.get_devices()
      self.inputs = []
      device_grads = []
      for d in range(TOWERS):
        with mgr.create_outer_variable_scope(d), tf.name_scope(
            'tower_%d' % d), tf.device(host.devices[d]):
          x = tf.placeholder(tf.float32, [BATCH, seed_harness.IN])
          y = tf.placeholder(tf.float32, [BATCH, seed_harness.OUT])
          loss = seed_harness.model(x, y)
          params = mgr.trainable_variables_on_device(d)
          grads = tf.gradients(loss, params)
          refs = mgr.trainable_variables_on_device(d, writable=True)
          device_grads.append(zip(grads, refs))
          self.inputs.append((x, y))
      self.puts = (staging.all_put_ops(mgr) if mgr.supports_staged_vars()
                   else [])
      apply_devices, state = mgr.preprocess_device_grads(device_grads)
      if momentum is None:
        opt = tf.train.GradientDescentOptimizer(learning_rate)
      else:
        opt = tf.train.MomentumOptimizer(learning_rate, momentum)
      training_ops = []
      for i, dev in enumerate(apply_devices):
        with tf.device(dev):
          mgr.append_apply_gradients_ops(
              state, opt, mgr.get_gradients_to_apply(i, state), training_ops)
      self.train_op = tf.group(*training_ops)
      self.saved = mgr.get_variables_to_save()
      self.saver = tf.train.Saver(self.saved)
      self.init = tf.group(tf.global_variables_initializer(),
                           tf.local_variables_initializer())
      post_init = mgr.get_post_init_ops()
      self.post_init = tf.group(*post_init) if post_init else None
      # The values as saved: each variable whole.
      self.whole = dict((name, tf.concat(list(v), 0) if isinstance(
          v, placement.SliceList) else tf.convert_to_tensor(v))
                        for name, v in self.saved.items())

  def variable_ops(self):
    return [op for op in self.graph.get_operations()
            if op.type in ('VariableV2', 'VarHandleOp')]


def _task(device):
  return tf.DeviceSpec.from_string(device).task


def _bytes(op):
  return placement.byte_size_load_fn(op)


@pytest.mark.parametrize('strategy,staged', DISTRIBUTED, ids=DISTRIBUTED_IDS)
def test_large_variables_are_split_over_ps_tasks(strategy, staged,
                                                 variable_kind):
  towers = _Towers(strategy, _cluster_host(), MIN_BYTES, staged,
                   variable_kind == 'resource')
  prefix = 'ps_var/v0/' if strategy == 'distributed_replicated' else 'v/'
  on_ps = [op for op in towers.variable_ops()
           if op.name.startswith(prefix)]
  names = sorted(op.name[len(prefix):] for op in on_ps)
  assert names == ['layer1/b1', 'layer1/w1/part_0', 'layer1/w1/part_1',
                   'layer2/b2', 'layer2/w2']
  by_name = dict((op.name[len(prefix):], op) for op in on_ps)
  slices = [by_name['layer1/w1/part_%d' % i] for i in range(2)]
  # 5 rows: TensorFlow gives the first slice the extra row.
  assert [_bytes(op) for op in slices] == [48, 32]
  assert min(_bytes(op) for op in slices) >= MIN_BYTES
  assert sorted(_task(op.device) for op in slices) == [0, 1]
  # Byte-balanced: least loaded first, in creation order: w1's slices 48
  # and 32 on tasks 0 and 1, then b1 (16) on 1 (48, 48), w2 (48) on 0 (a
  # tie goes to the first), b2 (12) on 1.
  loads = [0, 0]
  for op in on_ps:
    loads[_task(op.device)] += _bytes(op)
  assert loads == [96, 60]
  assert [_task(by_name[n].device) for n in (
      'layer1/w1/part_0', 'layer1/w1/part_1', 'layer1/b1', 'layer2/w2',
      'layer2/b2')] == [0, 1, 1, 0, 1]
  if strategy == 'distributed_replicated':
    # The towers' local copies stay whole.
    locals_ = sorted(op.name for op in towers.variable_ops()
                     if op.name.startswith('v0/'))
    assert locals_ == ['v0/layer1/b1', 'v0/layer1/w1', 'v0/layer2/b2',
                       'v0/layer2/w2']
  # Saved whole, under the canonical names.
  assert sorted(towers.saved) == sorted(NAMES.values())
  assert towers.saved['layer1/w1'].shape.as_list() == [5, 4]


def test_slices_of_one_variable_go_to_different_tasks():
  """Even when the least loaded task would take both."""
  strategy = placement.SliceSpreadingStrategy(3)
  with tf.Graph().as_default():
    big = tf.Variable(tf.zeros([100]), name='big')
    parts = [tf.Variable(tf.zeros([10]), name='w/part_%d' % i)
             for i in range(4)]
    other = tf.Variable(tf.zeros([5]), name='x')
  assert strategy(big.op) == 0
  # Tasks 1 and 2 are empty; the third slice goes to task 0 although task 1
  # or 2 (40 bytes) is less loaded than task 0 (400 bytes) would be for it.
  assert [strategy(p.op) for p in parts[:3]] == [1, 2, 0]
  # Every task holds a slice: the least loaded again.
  assert strategy(parts[3].op) == 1
  assert strategy(other.op) == 2


# -- Numerics on a cluster of 2 PS tasks inside this process ----------------


@pytest.fixture(scope='module')
def cluster():
  """{'ps': [2 addresses], 'worker': [1]}, servers started in this process
  (they live until it exits)."""
  spec, servers = in_process.start_servers(
      [('ps', 2), ('worker', 1)],
      lambda job, _: tf.ConfigProto(
          device_count={'CPU': 1 if job == 'ps' else TOWERS}))
  return spec, servers['worker'][0].target


def _initial(seed=3):
  rng = np.random.RandomState(seed)
  shapes = {'w1': [seed_harness.IN, seed_harness.HIDDEN],
            'b1': [seed_harness.HIDDEN],
            'w2': [seed_harness.HIDDEN, seed_harness.OUT],
            'b2': [seed_harness.OUT]}
  return dict((k, (0.5 * rng.randn(*s)).astype(np.float32))
              for k, s in shapes.items())


def _write_checkpoint(path, values):
  """A checkpoint of whole variables under the canonical names."""
  with tf.Graph().as_default():
    variables = dict((NAMES[k], tf.Variable(v, name=k))
                     for k, v in values.items())
    saver = tf.train.Saver(variables)
    with tf.Session() as sess:
      sess.run(tf.global_variables_initializer())
      return saver.save(sess, path)


def _batches(steps):
  rng = np.random.RandomState(11)
  return [[(rng.randn(BATCH, seed_harness.IN).astype(np.float32),
            rng.randn(BATCH, seed_harness.OUT).astype(np.float32))
           for _ in range(TOWERS)] for _ in range(steps)]


def _reference(values, batches, staged):
  """Synchronous SGD on the mean of the towers' gradients (float64);
  staged: each step's gradients at the previous step's weights."""
  current = dict((k, v.astype(np.float64)) for k, v in values.items())
  previous = current
  for step in batches:
    read = previous if staged else current
    grads = [seed_harness.numpy_gradients(read, x.astype(np.float64),
                                          y.astype(np.float64))
             for x, y in step]
    previous = current
    current = dict((k, current[k] - seed_harness.LEARNING_RATE *
                    sum(g[k] for g in grads) / len(grads)) for k in current)
  return current


class _Run(object):
  """`_Towers` in a session on the in-process cluster, restored from
  `restore_from` if given (then post-init, then the staging warm-up)."""

  def __init__(self, cluster, strategy, staged, resource, min_bytes,
               restore_from, momentum=None):
    spec, target = cluster
    tf.Session.reset(target)  # No variable or area of an earlier graph.
    host = variable_mgr.ClusterBenchmarkCnn(spec, 0, TOWERS)
    self.towers = _Towers(strategy, host, min_bytes, staged, resource,
                          momentum=momentum)
    self.sess = tf.Session(target, graph=self.towers.graph)
    self.sess.run(self.towers.init)
    if restore_from:
      checkpoint.restore(self.sess, restore_from, self.towers.saved,
                         self.towers.saver)
    if self.towers.post_init is not None:
      self.sess.run(self.towers.post_init)
    if self.towers.puts:
      self.sess.run(self.towers.puts)

  def step(self, batches):
    feeds = {}
    for (x, y), (xv, yv) in zip(self.towers.inputs, batches):
      feeds[x] = xv
      feeds[y] = yv
    self.sess.run([self.towers.train_op] + self.towers.puts, feeds)

  def values(self):
    """{'w1': ...} as saved (whole)."""
    got = self.sess.run(self.towers.whole)
    return dict((k, got[NAMES[k]]) for k in NAMES)

  def save(self, path):
    return self.towers.saver.save(self.sess, path)

  def close(self):
    self.sess.close()


@pytest.mark.parametrize('strategy,staged', DISTRIBUTED, ids=DISTRIBUTED_IDS)
def test_partitioned_steps_equal_whole_steps_and_numpy(
    cluster, tmp_path, strategy, staged, variable_kind):
  initial = _initial()
  start = _write_checkpoint(str(tmp_path / 'start'), initial)
  batches = _batches(STEPS)
  results = {}
  for min_bytes in (MIN_BYTES, 0):
    run = _Run(cluster, strategy, staged, variable_kind == 'resource',
               min_bytes, start)
    try:
      slices = [op.name for op in run.towers.variable_ops()
                if '/part_' in op.name]
      assert bool(slices) == bool(min_bytes), slices
      np.testing.assert_array_equal(run.values()['w1'], initial['w1'])
      for step in batches:
        run.step(step)
      results[min_bytes] = run.values()
    finally:
      run.close()
  expected = _reference(initial, batches, staged)
  for k in NAMES:
    np.testing.assert_allclose(results[MIN_BYTES][k], results[0][k],
                               rtol=1e-6, atol=1e-7, err_msg=k)
    np.testing.assert_allclose(results[MIN_BYTES][k], expected[k],
                               rtol=1e-4, atol=1e-5, err_msg=k)
  # Training moved every variable: the comparison above is not of starts.
  assert not np.allclose(results[MIN_BYTES]['w1'], initial['w1'])


# -- Checkpoints: partitioned <-> whole, under every strategy ---------------

LOCAL_STRATEGIES = ['independent', 'parameter_server', 'replicated']


@pytest.fixture(scope='module')
def partitioned_checkpoint(cluster, tmp_path_factory):
  """(prefix, values): parameter_server with w1 split, trained 2 steps."""
  directory = tmp_path_factory.mktemp('partitioned')
  start = _write_checkpoint(str(directory / 'start'), _initial(seed=5))
  run = _Run(cluster, 'parameter_server', False, True, MIN_BYTES, start)
  try:
    for step in _batches(2):
      run.step(step)
    return run.save(str(directory / 'trained')), run.values()
  finally:
    run.close()


def _assert_values(got, expected, message):
  for k in NAMES:
    np.testing.assert_array_equal(got[k], expected[k],
                                  err_msg='%s %s' % (message, k))


def test_partitioned_checkpoint_holds_whole_tensors(partitioned_checkpoint):
  path, values = partitioned_checkpoint
  saved = dict(tf.train.list_variables(path))
  assert saved == {'layer1/w1': [5, 4], 'layer1/b1': [4],
                   'layer2/w2': [4, 3], 'layer2/b2': [3]}
  reader = tf.train.load_checkpoint(path)
  np.testing.assert_array_equal(reader.get_tensor('layer1/w1'), values['w1'])


@pytest.mark.parametrize('strategy', LOCAL_STRATEGIES)
def test_partitioned_checkpoint_restores_in_local_strategies(
    partitioned_checkpoint, strategy, variable_kind):
  path, values = partitioned_checkpoint
  run = seed_harness.Run(strategy, TOWERS, restore_from=path)
  try:
    for tower in range(TOWERS if run.mgr.each_tower_has_variables() else 1):
      _assert_values(run.values(tower), values, '%s tower %d' % (
          strategy, tower))
  finally:
    run.close()


@pytest.mark.parametrize('strategy,staged', DISTRIBUTED, ids=DISTRIBUTED_IDS)
@pytest.mark.parametrize('min_bytes', [0, MIN_BYTES], ids=['whole', 'split'])
def test_checkpoints_restore_partitioned_and_whole(
    cluster, tmp_path, partitioned_checkpoint, strategy, staged, min_bytes,
    variable_kind):
  """The partitioned checkpoint restores whole or split under every
  distributed strategy; what that run saves restores split and back."""
  path, values = partitioned_checkpoint
  resource = variable_kind == 'resource'
  run = _Run(cluster, strategy, staged, resource, min_bytes, path)
  try:
    _assert_values(run.values(), values, 'restored')
    saved = run.save(str(tmp_path / 'again'))
  finally:
    run.close()
  other = MIN_BYTES - min_bytes
  run = _Run(cluster, strategy, staged, resource, other, saved)
  try:
    _assert_values(run.values(), values, 'restored again')
  finally:
    run.close()


def test_whole_checkpoint_of_a_local_strategy_restores_split(
    cluster, tmp_path):
  run = seed_harness.Run('replicated', TOWERS)
  try:
    run.step(_batches(1)[0])
    path = run.saver.save(run.sess, str(tmp_path / 'replicated'))
    values = run.values()
  finally:
    run.close()
  for strategy, staged in DISTRIBUTED:
    split = _Run(cluster, strategy, staged, True, MIN_BYTES, path)
    try:
      _assert_values(split.values(), values, strategy)
    finally:
      split.close()
  assert os.path.exists(path + '.index')


def test_momentum_slots_of_partitioned_variables_are_saved_whole(
    cluster, tmp_path):
  """The optimizer's slots of a split variable are slices too (no getter
  returns them whole): saved as one tensor under the canonical name, and
  restored into a whole run."""
  run = _Run(cluster, 'parameter_server', False, True, MIN_BYTES, None,
             momentum=0.9)
  try:
    assert 'layer1/w1/Momentum' in run.towers.saved
    for step in _batches(2):
      run.step(step)
    slot = run.sess.run(run.towers.whole['layer1/w1/Momentum'])
    path = run.save(str(tmp_path / 'momentum'))
  finally:
    run.close()
  assert dict(tf.train.list_variables(path))['layer1/w1/Momentum'] == [5, 4]
  assert np.abs(slot).sum() > 0
  whole = _Run(cluster, 'parameter_server', False, True, 0, path,
               momentum=0.9)
  try:
    got = whole.sess.run(whole.towers.whole['layer1/w1/Momentum'])
  finally:
    whole.close()
  np.testing.assert_array_equal(got, slot)
