"""Every error the library raises: its class, a message that names the
offending value and the fix, and (for constructors and create()) no op added
to the graph before it is raised."""

import contextlib

import pytest
import tensorflow as tf

import variable_mgr
from variable_mgr import checkpoint
from variable_mgr import errors
from variable_mgr.strategies import parameter_server

tf1 = tf.compat.v1
CLUSTER = {'ps': ['h:1', 'h:2'], 'worker': ['h:3', 'h:4']}


@contextlib.contextmanager
def raises_before_graph(error_class, *fragments):
  """Expects `error_class` with every fragment in its message, and a graph
  with the same ops afterwards as before."""
  graph = tf.Graph()
  with graph.as_default():
    tf.constant(0.0, name='existing')
    before = len(graph.get_operations())
    with pytest.raises(error_class) as info:
      yield
  message = str(info.value)
  for fragment in fragments:
    assert fragment in message, (fragment, message)
  assert len(graph.get_operations()) == before, message
  assert isinstance(info.value, errors.VariableMgrError)
  assert isinstance(info.value, ValueError)


def _host(num_towers=2, **overrides):
  host = variable_mgr.LocalBenchmarkCnn(num_towers)
  for key, value in overrides.items():
    setattr(host, key, value)
  return host


class _Partial(object):
  """A host that lacks most of the interface."""
  raw_devices = ['/cpu:0']
  num_gpus = 1


# -- create() -------------------------------------------------------------------


def test_unknown_strategy_lists_valid_names():
  with raises_before_graph(errors.UnknownStrategyError, "'bogus'",
                           *variable_mgr.STRATEGY_NAMES):
    variable_mgr.create('bogus', _host())


def test_unknown_option_lists_valid_options():
  with raises_before_graph(errors.InvalidOptionError, "stagedvars=True",
                           'reduction', 'staged_vars', 'use_nccl',
                           'all_reduce_spec'):
    variable_mgr.create('parameter_server', _host(), stagedvars=True)


@pytest.mark.parametrize('option,value', [
    ('all_reduce_spec', 'xring'), ('gradient_repacking', 2),
    ('float16_transfer', True)])
def test_replicated_option_elsewhere(option, value):
  with raises_before_graph(errors.IncompatibleOptionsError,
                           '%s=%r' % (option, value),
                           "variable_update='parameter_server'",
                           'only for replicated', 'use replicated'):
    variable_mgr.create('parameter_server', _host(), **{option: value})


def test_default_valued_option_elsewhere_is_accepted():
  with tf.Graph().as_default():
    mgr = variable_mgr.create('parameter_server', _host(), use_nccl=False,
                              all_reduce_spec=None)
  assert isinstance(mgr, variable_mgr.VariableMgrLocalFetchFromPS)


@pytest.mark.parametrize('name', ['independent', 'replicated',
                                  'distributed_replicated'])
def test_staged_vars_only_with_parameter_server(name):
  with raises_before_graph(errors.IncompatibleOptionsError, 'staged_vars=True',
                           repr(name), 'use parameter_server'):
    variable_mgr.create(name, _host(), staged_vars=True)


@pytest.mark.parametrize('name', ['independent', 'parameter_server',
                                  'distributed_replicated'])
def test_use_nccl_only_with_replicated(name):
  with raises_before_graph(errors.IncompatibleOptionsError, 'use_nccl=True',
                           repr(name), 'use replicated'):
    variable_mgr.create(name, _host(), use_nccl=True)


@pytest.mark.parametrize('name', ['independent', 'replicated'])
def test_local_only_strategy_with_a_cluster(name):
  with raises_before_graph(errors.IncompatibleOptionsError, repr(name),
                           'use parameter_server or distributed_replicated'):
    variable_mgr.create(name, variable_mgr.ClusterBenchmarkCnn(CLUSTER, 0, 2))


def test_distributed_replicated_needs_a_cluster():
  with raises_before_graph(errors.MissingClusterError,
                           "'distributed_replicated'", 'ClusterSpec',
                           'locally use replicated'):
    variable_mgr.create('distributed_replicated', _host())


# -- The base constructor ---------------------------------------------------------


@pytest.mark.parametrize('name', ['parameter_server', 'replicated',
                                  'distributed_replicated'])
def test_bad_reduction(name):
  host = (variable_mgr.ClusterBenchmarkCnn(CLUSTER, 0, 2)
          if name == 'distributed_replicated' else _host())
  with raises_before_graph(errors.InvalidOptionError, "reduction='max'",
                           "'mean'", "'sum'", 'None'):
    variable_mgr.create(name, host, reduction='max')


def test_empty_raw_devices():
  with raises_before_graph(errors.TowerCountError, 'raw_devices is empty',
                           "['/cpu:0']"):
    variable_mgr.create('parameter_server', _host(raw_devices=[], num_gpus=0))


def test_num_gpus_disagrees_with_raw_devices():
  with raises_before_graph(errors.TowerCountError, 'num_gpus=3',
                           '2 entries', '/cpu:0, /cpu:1', 'must agree'):
    variable_mgr.create('replicated', _host(num_gpus=3))


def test_duplicate_tower_device():
  host = _host(raw_devices=['/cpu:0', '/device:CPU:0'])
  with raises_before_graph(errors.DuplicateDeviceError, 'towers 0 and 1',
                           "'/device:CPU:0'", "device_count={'CPU': n}"):
    variable_mgr.create('replicated', host)


def test_host_lacking_attributes():
  with raises_before_graph(errors.InterfaceError, '_Partial', 'cpu_device',
                           'param_server_device',
                           'local_parameter_device_flag', 'LocalBenchmarkCnn'):
    variable_mgr.create('parameter_server', _Partial())


def test_distributed_replicated_host_lacking_barrier():
  host = _NoBarrier(variable_mgr.ClusterBenchmarkCnn(CLUSTER, 0, 2))
  with raises_before_graph(errors.InterfaceError, '_NoBarrier lacks '
                           'add_sync_queues_and_barrier', 'LocalBenchmarkCnn'):
    variable_mgr.VariableMgrDistributedReplicated(host)


class _NoBarrier(object):
  """A copy of a host's attributes, without add_sync_queues_and_barrier."""

  def __init__(self, host):
    for name in ('raw_devices', 'devices', 'cpu_device',
                 'param_server_device', 'local_parameter_device_flag',
                 'num_gpus', 'ps_hosts', 'cluster'):
      setattr(self, name, getattr(host, name))


class _InheritedBarrier(_NoBarrier, variable_mgr.BenchmarkCnnLike):
  """Every attribute, but the barrier is BenchmarkCnnLike's stub, which
  raises NotImplementedError when the strategy calls it mid-build."""


class _OwnBarrier(_InheritedBarrier):
  """Implements the barrier (as a no-op: enough to build a graph)."""

  def add_sync_queues_and_barrier(self, name_prefix, enqueue_after_list):
    with tf1.control_dependencies(enqueue_after_list):
      return tf.no_op(name=name_prefix + 'barrier')


def test_distributed_replicated_host_inheriting_the_barrier_stub():
  host = _InheritedBarrier(variable_mgr.ClusterBenchmarkCnn(CLUSTER, 0, 2))
  assert hasattr(host, 'add_sync_queues_and_barrier')
  with raises_before_graph(
      errors.InterfaceError,
      '_InheritedBarrier inherits add_sync_queues_and_barrier from '
      'BenchmarkCnnLike', 'NotImplementedError',
      'Implement it in _InheritedBarrier', 'ClusterBenchmarkCnn'):
    variable_mgr.create('distributed_replicated', host)


@pytest.mark.parametrize('make_host', [
    lambda: _OwnBarrier(variable_mgr.ClusterBenchmarkCnn(CLUSTER, 0, 2)),
    lambda: variable_mgr.ClusterBenchmarkCnn(CLUSTER, 0, 2),
], ids=['overridden', 'cluster_host'])
def test_distributed_replicated_host_with_a_barrier_builds(make_host):
  """A barrier of the host's own (a method or an instance attribute)
  counts as provided, and is what the strategy calls."""
  host = make_host()
  calls = []
  barrier = host.add_sync_queues_and_barrier
  host.add_sync_queues_and_barrier = (
      lambda *args: calls.append(args[0]) or barrier(*args))
  with tf.Graph().as_default():
    mgr = variable_mgr.create('distributed_replicated', host)
    host.devices = mgr.get_devices()
    towers = []
    for d in range(2):
      with mgr.create_outer_variable_scope(d), tf1.device(host.devices[d]):
        w = tf1.get_variable('w', [3])
      towers.append([(tf.ones([3]), w)])
    apply_devices, state = mgr.preprocess_device_grads(towers)
    training_ops = []
    with tf1.device(apply_devices[0]):
      grads = mgr.get_gradients_to_apply(0, state)
      mgr.append_apply_gradients_ops(
          state, tf1.train.GradientDescentOptimizer(0.1, use_locking=True),
          grads, training_ops)
  assert calls and all(c.startswith('replicate_variable') for c in calls)
  assert training_ops


# -- Strategy constructors ----------------------------------------------------------


def test_independent_refuses_a_reduction():
  with raises_before_graph(errors.InvalidOptionError, "reduction='sum'",
                           'independent', 'leave reduction unset'):
    variable_mgr.create('independent', _host(), reduction='sum')


def test_nccl_on_cpu_towers():
  with raises_before_graph(errors.NcclDeviceError, 'use_nccl',
                           '/cpu:0, /cpu:1', 'use GPU towers',
                           'the default copy all-reduce'):
    variable_mgr.create('replicated', _host(), use_nccl=True)


def test_nccl_in_spec_on_cpu_towers():
  with raises_before_graph(errors.NcclDeviceError, 'all_reduce_spec',
                           '/cpu:0, /cpu:1', "such as 'xring'"):
    variable_mgr.create('replicated', _host(), all_reduce_spec='nccl')


def test_use_nccl_with_all_reduce_spec():
  with raises_before_graph(errors.IncompatibleOptionsError, 'use_nccl=True',
                           "all_reduce_spec='xring'", 'choose one'):
    variable_mgr.VariableMgrLocalReplicated(
        _host(), True, all_reduce_spec='xring')


def test_repacking_with_small_gradient_aggregation():
  with raises_before_graph(errors.IncompatibleOptionsError,
                           'gradient_repacking=2',
                           'agg_small_grads_max_bytes=1024', 'use one'):
    variable_mgr.create('replicated', _host(), gradient_repacking=2,
                        agg_small_grads_max_bytes=1024)


def test_nccl_seed_signature_on_cpu_towers():
  with raises_before_graph(errors.NcclDeviceError, '/cpu:1'):
    variable_mgr.VariableMgrLocalReplicated(_host(), True)


@pytest.mark.parametrize('cls', [
    variable_mgr.VariableMgrDistributedFetchFromPS,
    variable_mgr.VariableMgrDistributedFetchFromStagedPS,
    variable_mgr.VariableMgrDistributedReplicated])
def test_distributed_class_without_cluster(cls):
  with raises_before_graph(errors.MissingClusterError, 'cluster=None',
                           'ps_hosts=[]', 'tf.train.ClusterSpec',
                           'use a local strategy'):
    cls(_host())


def test_check_cluster_names_the_strategy():
  with pytest.raises(errors.MissingClusterError) as info:
    parameter_server.check_cluster(_host(), 'parameter_server')
  assert str(info.value).startswith('parameter_server across machines')


# -- Host constructors ------------------------------------------------------------


@pytest.mark.parametrize('num_towers', [0, -1, True, 1.5, '2'])
def test_local_host_bad_tower_count(num_towers):
  with raises_before_graph(errors.TowerCountError,
                           'num_towers=%r' % (num_towers,),
                           'positive integer'):
    variable_mgr.LocalBenchmarkCnn(num_towers)


@pytest.mark.parametrize('argument', ['device', 'local_parameter_device'])
def test_local_host_bad_device_type(argument):
  with raises_before_graph(errors.InvalidOptionError, "%s='tpu'" % argument,
                           'cpu, gpu'):
    variable_mgr.LocalBenchmarkCnn(2, **{argument: 'tpu'})


def test_cluster_host_without_ps_job():
  with raises_before_graph(errors.MissingClusterError, "['worker']",
                           '"ps"', '{"ps": ["127.0.0.1:2222"]'):
    variable_mgr.ClusterBenchmarkCnn({'worker': ['h:3']}, 0, 1)


@pytest.mark.parametrize('task_index', [2, -1])
def test_cluster_host_task_index_out_of_range(task_index):
  with raises_before_graph(errors.TowerCountError,
                           'task_index=%d' % task_index, '2 workers', '(0..1)'):
    variable_mgr.ClusterBenchmarkCnn(CLUSTER, task_index, 1)


def test_cluster_host_bad_tower_count():
  with raises_before_graph(errors.TowerCountError, 'num_towers=0'):
    variable_mgr.ClusterBenchmarkCnn(CLUSTER, 0, 0)


# -- Protocol calls ------------------------------------------------------------------


def _towers(name='replicated', num_towers=2, shapes=((3,), (2,))):
  """A manager and each tower's `[(grad, var)]`; grads are constants of the
  variables' shapes."""
  host = _host(num_towers)
  mgr = variable_mgr.create(name, host)
  host.devices = mgr.get_devices()
  towers = []
  for d in range(num_towers):
    with mgr.create_outer_variable_scope(d), tf1.device(host.devices[d]):
      variables = [tf1.get_variable('w%d' % i, shape)
                   for i, shape in enumerate(shapes)]
    towers.append([(tf.ones(v.shape), v) for v in variables])
  return mgr, towers


def test_trainable_variables_on_device_out_of_range():
  with tf.Graph().as_default():
    mgr, _ = _towers()
    with pytest.raises(errors.ProtocolError) as info:
      mgr.trainable_variables_on_device(2)
  assert 'device_num=2' in str(info.value)
  assert '2 towers (0..1)' in str(info.value)


@pytest.mark.parametrize('device_num', [-1, 3, 7])
def test_tower_index_below_zero_or_past_the_end(device_num):
  """Past the last tower by more than one, or below zero, is refused as
  the first index past the end is; 0 and 1 of 2 towers are taken."""
  with tf.Graph().as_default():
    mgr, _ = _towers()
    assert len(mgr.trainable_variables_on_device(1)) == len(
        mgr.trainable_variables_on_device(0)) > 0
    with pytest.raises(errors.ProtocolError) as info:
      mgr.trainable_variables_on_device(device_num)
  assert 'device_num=%d' % device_num in str(info.value)


def test_get_gradients_to_apply_out_of_range():
  with tf.Graph().as_default():
    mgr, towers = _towers('parameter_server')
    apply_devices, state = mgr.preprocess_device_grads(towers)
    assert len(apply_devices) == 1
    with pytest.raises(errors.ProtocolError) as info:
      mgr.get_gradients_to_apply(1, state)
  assert 'device_num=1' in str(info.value)
  assert 'returned 1 apply devices' in str(info.value)
  assert 'pass an index below' in str(info.value)


def test_wrong_number_of_towers():
  with tf.Graph().as_default():
    mgr, towers = _towers()
    with pytest.raises(errors.GradientListError) as info:
      mgr.preprocess_device_grads(towers[:1])
  assert 'gradients of 1 towers for 2 tower devices' in str(info.value)
  assert 'one [(grad, var)] list a tower' in str(info.value)


def test_towers_of_different_length():
  with tf.Graph().as_default():
    mgr, towers = _towers()
    with pytest.raises(errors.GradientListError) as info:
      mgr.preprocess_device_grads([towers[0], towers[1][:1]])
  assert 'tower 1 has 1 (grad, var) pairs but tower 0 has 2' in str(
      info.value)
  assert 'same variables' in str(info.value)


def test_towers_in_different_order():
  with tf.Graph().as_default():
    mgr, towers = _towers()
    with pytest.raises(errors.GradientListError) as info:
      mgr.preprocess_device_grads([towers[0], towers[1][::-1]])
  message = str(info.value)
  assert 'pair 0 of tower 1 is for v1/w1 but tower 0 has v0/w0' in message
  assert 'same order' in message


def test_none_gradient_on_one_tower_only():
  with tf.Graph().as_default():
    mgr, towers = _towers()
    towers[1][0] = (None, towers[1][0][1])
    with pytest.raises(errors.GradientListError) as info:
      mgr.preprocess_device_grads(towers)
  assert 'gradient of v1/w0 is None on tower 1 but not on tower 0' in str(
      info.value)
  assert 'same model' in str(info.value)


def test_gradient_of_the_wrong_shape():
  with tf.Graph().as_default():
    mgr, towers = _towers()
    towers[1][0] = (tf.ones([4]), towers[1][0][1])
    with pytest.raises(errors.GradientShapeError) as info:
      mgr.preprocess_device_grads(towers)
  message = str(info.value)
  assert 'v1/w0 has shape (4,)' in message
  assert 'variable has shape (3,)' in message
  assert 'pair each gradient with its own variable' in message


def test_protocol_errors_add_no_update_ops():
  """A refused gradient list leaves no gate or aggregation behind."""
  with tf.Graph().as_default() as graph:
    mgr, towers = _towers()
    towers[1][0] = (tf.ones([4]), towers[1][0][1])
    before = len(graph.get_operations())
    with pytest.raises(errors.GradientShapeError):
      mgr.preprocess_device_grads(towers)
    assert len(graph.get_operations()) == before


def test_colocation_aggregation_with_different_variables():
  with tf.Graph().as_default():
    _, towers = _towers('replicated')  # A variable of its own a tower.
    with pytest.raises(errors.GradientListError) as info:
      variable_mgr.aggregate_gradients_using_copy_with_variable_colocation(
          towers, use_mean=True)
  message = str(info.value)
  assert 'gradient 0 of tower 1 is for v1/w0:0 but tower 0 has v0/w0:0' in (
      message)
  assert 'same variables in the same order' in message


# -- Checkpoints ------------------------------------------------------------------


def _save(path, shapes):
  with tf.Graph().as_default() as graph:
    variables = dict((name, tf1.get_variable(name, shape))
                     for name, shape in shapes.items())
    saver = tf1.train.Saver(variables)
    with tf1.Session(graph=graph) as sess:
      sess.run(tf1.global_variables_initializer())
      saver.save(sess, path)


def test_checkpoint_missing_a_variable(tmp_path):
  path = str(tmp_path / 'model.ckpt')
  _save(path, {'layer1/w1': [3, 2]})
  with tf.Graph().as_default():
    wanted = {'layer1/w1': tf1.get_variable('a', [3, 2]),
              'layer2/w2': tf1.get_variable('b', [2])}
    with pytest.raises(errors.CheckpointMismatchError) as info:
      checkpoint.check_compatible(path, wanted)
  message = str(info.value)
  assert path in message
  assert "no variable 'layer2/w2' (shape (2,))" in message
  assert 'restore a checkpoint of this model' in message


def test_checkpoint_variable_of_another_shape(tmp_path):
  path = str(tmp_path / 'model.ckpt')
  _save(path, {'layer1/w1': [3, 2]})
  with tf.Graph().as_default():
    wanted = {'layer1/w1': tf1.get_variable('a', [4, 2])}
    with pytest.raises(errors.CheckpointMismatchError) as info:
      checkpoint.restore(None, path, wanted)
  message = str(info.value)
  assert "'layer1/w1' with shape (3, 2)" in message
  assert "model's has shape (4, 2)" in message
  assert 'fresh train_dir' in message


# -- accumulation_dtype ---------------------------------------------------------


@pytest.mark.parametrize('name', ['parameter_server', 'replicated'])
@pytest.mark.parametrize('dtype,typed', [
    ('int32', "'int32'"), ('bogus', "'bogus'"), (tf.int64, 'tf.int64')])
def test_bad_accumulation_dtype(name, dtype, typed):
  with raises_before_graph(errors.InvalidOptionError,
                           'accumulation_dtype=%s' % typed,
                           'must be a floating dtype', "'float32'",
                           'or None'):
    variable_mgr.create(name, _host(), accumulation_dtype=dtype)


def test_independent_refuses_an_accumulation_dtype():
  with raises_before_graph(errors.InvalidOptionError,
                           "accumulation_dtype='float32' with independent",
                           'never combine gradients',
                           'leave accumulation_dtype unset'):
    variable_mgr.create('independent', _host(), accumulation_dtype='float32')


# -- collective_all_reduce's post-init broadcast ------------------------------


def _collective_towers(variables_by_tower):
  """A collective_all_reduce manager of worker 0 of 2, tower d holding the
  variables `variables_by_tower[d]` ({name: get_variable kwargs})."""
  host = variable_mgr.ClusterBenchmarkCnn(
      {'ps': ['h:1'], 'worker': ['h:2', 'h:3']}, 0, len(variables_by_tower))
  mgr = variable_mgr.create('collective_all_reduce', host)
  host.devices = mgr.get_devices()
  for d, variables in enumerate(variables_by_tower):
    with mgr.create_outer_variable_scope(d), tf1.device(host.devices[d]):
      for name, kwargs in sorted(variables.items()):
        tf1.get_variable(name, **kwargs)
  return mgr


def test_collective_post_init_tower_lacking_a_variable():
  with tf.Graph().as_default():
    mgr = _collective_towers([{'w': dict(shape=[2]), 'x': dict(shape=[3])},
                              {'w': dict(shape=[2])}])
    with pytest.raises(errors.ProtocolError) as info:
      mgr.get_post_init_ops()
  message = str(info.value)
  assert 'tower 1 has no variable x but tower 0 has' in message
  assert 'every tower must build the same model' in message


def test_collective_post_init_variable_of_unknown_shape():
  with tf.Graph().as_default():
    unknown = tf1.placeholder_with_default(tf.zeros([4]), shape=[None])
    kwargs = dict(initializer=unknown, validate_shape=False)
    mgr = _collective_towers([{'u': kwargs}, {'u': kwargs}])
    # (None,) on TensorFlow 2; 1.15 drops even the rank (<unknown>).
    shape = tf1.global_variables()[0].shape
    assert not shape.is_fully_defined()
    with pytest.raises(errors.GradientShapeError) as info:
      mgr.get_post_init_ops()
  message = str(info.value)
  assert 'variable v0/u has shape %s:' % (shape,) in message
  assert 'a broadcast needs a fully defined shape' in message


# -- All-reduce specs -------------------------------------------------------------


def test_all_reduce_of_a_spec_without_ranges():
  from variable_mgr.allreduce import errors as allreduce_errors  # pylint: disable=g-import-not-at-top
  from variable_mgr.allreduce import spec as spec_lib  # pylint: disable=g-import-not-at-top
  with tf.Graph().as_default() as graph:
    tensors = [[tf1.placeholder(tf.float32, [2])] for _ in range(2)]
    before = len(graph.get_operations())
    with pytest.raises(allreduce_errors.AllReduceSpecError) as info:
      spec_lib.build_all_reduce([], tensors, ['/cpu:0', '/cpu:1'])
    assert len(graph.get_operations()) == before
  assert "'' at position 0: the spec has no ranges" in str(info.value)
