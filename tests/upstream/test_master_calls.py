"""tf_cnn_benchmarks master's call forms (variable_mgr.upstream_calls and
upstream_host): the strategies built with master's BenchmarkCNN and
positional options, driven in master's order, against NumPy; the 2017 forms
on the same classes; every master option the project does not support
refused, naming the flag, the value and the fix."""

import numpy as np
import pytest
import tensorflow as tf

import variable_mgr
from variable_mgr import errors
from variable_mgr import upstream_host

import graph_walk
import master_host

tf1 = tf.compat.v1


def _expected_w(reduction, towers=2, steps=1):
  """SGD on the stand-in model from W0; tower 0's copy."""
  w = master_host.W0.copy()
  for _ in range(steps):
    grads = [master_host.tower_gradient(w, d) for d in range(towers)]
    total = sum(grads)
    g = {'sum': total, 'mean': total / towers, 'tower0': grads[0]}[reduction]
    w = w - master_host.RATE * g
  return w


# class name -> (build with master's form, reduction master uses).
def _independent(bench):
  return variable_mgr.VariableMgrIndependent(bench), 'tower0'


def _ps(bench):
  return variable_mgr.VariableMgrLocalFetchFromPS(bench), 'mean'


def _staged(bench):
  return variable_mgr.VariableMgrLocalFetchFromStagedPS(bench), None


def _replicated(bench):
  return master_host.replicated(bench), 'sum'


@pytest.mark.parametrize('build', [_independent, _ps, _replicated],
                         ids=['independent', 'parameter_server', 'replicated'])
def test_master_forms_train_as_numpy(build, variable_kind):
  with tf.Graph().as_default():
    bench = master_host.MasterBench(
        use_resource_vars=(variable_kind == 'resource'))
    mgr, reduction = build(bench)
    w, _, _ = master_host.one_step(bench, mgr, steps=2)
  np.testing.assert_allclose(w, _expected_w(reduction, steps=2), rtol=1e-6)


def test_master_independent_towers_keep_their_own_initial_values():
  """Master's independent copies nothing after init; the 2017 form's copies
  tower 0's values."""
  values = {}
  for form in ('master', 'seed'):
    with tf.Graph().as_default():
      tf1.set_random_seed(1)
      if form == 'master':
        host = master_host.MasterBench()
        mgr = variable_mgr.VariableMgrIndependent(host)
      else:
        host = variable_mgr.LocalBenchmarkCnn(2)
        mgr = variable_mgr.VariableMgrIndependent(host)
      host.devices = mgr.get_devices()
      tower_vars = []
      for d in range(2):
        with mgr.create_outer_variable_scope(d):
          tower_vars.append(tf1.get_variable('w', [3]))
      with tf1.Session(config=host.session_config()) as sess:
        sess.run(tf1.global_variables_initializer())
        sess.run(mgr.get_post_init_ops())
        values[form] = sess.run(tower_vars)
      if form == 'master':
        saved = mgr.savable_variables()
  assert not np.array_equal(values['master'][0], values['master'][1])
  assert sorted(saved) == ['v0/w', 'v1/w']
  np.testing.assert_array_equal(values['seed'][0], values['seed'][1])


def test_master_form_names_a_tower_by_its_absolute_number():
  """trainable_variables_on_device(rel, abs): the tower is abs when given
  (master's towers of every worker under distributed_all_reduce), else
  rel."""
  with tf.Graph().as_default():
    bench = master_host.MasterBench()
    mgr = master_host.replicated(bench)
    bench.devices = mgr.get_devices()
    for d in range(2):
      with tf1.name_scope('tower_%i' % d), mgr.create_outer_variable_scope(d):
        tf1.get_variable('w', [3])

    def names(*args):
      return [v.op.name for v in mgr.trainable_variables_on_device(*args)]
    assert names(0) == ['v0/w'] and names(1) == ['v1/w']
    assert names(0, 1) == ['v1/w'] and names(1, 0) == ['v0/w']


def test_master_form_replicated_spec_and_upper_case_parameter_device():
  with tf.Graph().as_default():
    bench = master_host.MasterBench(local_parameter_device='CPU',
                                    all_reduce_spec='pscpu')
    mgr = master_host.replicated(bench)
    assert mgr.benchmark_cnn.local_parameter_device_flag == 'cpu'
    w, _, _ = master_host.one_step(bench, mgr)
  np.testing.assert_allclose(w, _expected_w('sum'), rtol=1e-6)


def test_savable_variables_keep_master_names_under_parameter_server():
  with tf.Graph().as_default():
    bench = master_host.MasterBench()
    mgr = variable_mgr.VariableMgrLocalFetchFromPS(bench)
    bench.devices = mgr.get_devices()
    for d in range(2):
      with mgr.create_outer_variable_scope(d):
        tf1.get_variable('w', [2])
    tf1.train.get_or_create_global_step()
    assert sorted(mgr.savable_variables()) == ['global_step', 'v/w']


def test_staged_master_form_keeps_a_staging_area_a_tower():
  with tf.Graph().as_default():
    bench = master_host.MasterBench()
    mgr, _ = _staged(bench)
    assert mgr.supports_staged_vars()
    bench.devices = mgr.get_devices()
    assert len(mgr.staging_vars_on_devices) == 2


def test_use_resource_vars_follows_master_flag():
  kinds = {}
  for flag in (False, True):
    with tf.Graph().as_default():
      bench = master_host.MasterBench(use_resource_vars=flag)
      mgr = master_host.replicated(bench)
      assert mgr.use_resource_vars is flag
      with mgr.create_outer_variable_scope(0):
        var = tf1.get_variable('w', [2])
      kinds[flag] = var.op.type
  assert kinds == {False: 'VariableV2', True: 'VarHandleOp'}


def test_reuse_variables_reuses_and_restores():
  with tf.Graph().as_default():
    bench = master_host.MasterBench()
    mgr = master_host.replicated(bench)
    with mgr.create_outer_variable_scope(0):
      first = tf1.get_variable('w', [2])
    with mgr.reuse_variables():
      assert getattr(mgr, '_reuse_vars') is True
      with mgr.create_outer_variable_scope(0):
        again = tf1.get_variable('w', [2])
    assert again is first
    assert getattr(mgr, '_reuse_vars') is False
    with pytest.raises(ValueError, match='already exists'):
      with mgr.create_outer_variable_scope(0):
        tf1.get_variable('w', [2])


def test_savable_variables_and_master_attributes():
  with tf.Graph().as_default():
    bench = master_host.MasterBench()
    mgr = master_host.replicated(bench)
    for d in range(2):
      with mgr.create_outer_variable_scope(d):
        tf1.get_variable('w', [2])
    # Master's names (its own checkpoints restore), the project's canonical
    # ones for the 2017 harness.
    assert sorted(mgr.get_variables_to_save()) == ['w']
    saved = mgr.savable_variables()
    assert sorted(saved) == ['v0/w']
    assert saved['v0/w'].op.name == 'v0/w'
    assert getattr(mgr, '_warmup_ops') == []
    assert mgr.grad_has_inf_nan is None
    assert getattr(mgr, '_strip_port')('v0/w:0') == 'v0/w'


def test_seed_forms_unchanged_on_the_same_classes():
  """The 2017 harness's positional use_nccl and (device_num, writable)."""
  with tf.Graph().as_default():
    host = variable_mgr.LocalBenchmarkCnn(2)
    mgr = variable_mgr.VariableMgrLocalReplicated(host, False)
    assert not hasattr(mgr, 'savable_variables')
    host.devices = mgr.get_devices()
    for d in range(2):
      with mgr.create_outer_variable_scope(d):
        tf1.get_variable('w', [2])
    assert [v.op.name for v in mgr.trainable_variables_on_device(1)] == [
        'v1/w']
    assert [v.op.name for v in mgr.trainable_variables_on_device(
        1, writable=True)] == ['v1/w']


@pytest.fixture
def master_control_flow():
  """tf.cond as master's harness has it: tf_cnn_benchmarks.py calls
  tf.disable_v2_behavior(), so TensorFlow 2 builds version 1 control flow
  (a functional cond cannot capture the ref variables master makes)."""
  was_v2 = tf1.control_flow_v2_enabled()
  tf1.disable_control_flow_v2()
  yield
  if was_v2:
    tf1.enable_control_flow_v2()


def _auto_scale_steps(steps, scale_gradient=1.0, **bench_args):
  """`steps` of master's replicated with an automatic loss scale from 8."""
  with tf.Graph().as_default():
    bench = master_host.MasterBench(enable_auto_loss_scale=True,
                                    **bench_args)
    mgr = master_host.replicated(bench)
    return master_host.one_step(bench, mgr, scale_gradient=scale_gradient,
                                loss_scale=8.0, steps=steps)


@pytest.mark.parametrize('scale_gradient,applied', [(1.0, True),
                                                    (np.inf, False)])
@pytest.mark.parametrize('resource', [False, True], ids=['ref', 'resource'])
def test_auto_loss_scale_skips_a_step_with_inf(scale_gradient, applied,
                                               resource, master_control_flow):
  del master_control_flow
  w, (scale, normal), flag = _auto_scale_steps(
      1, scale_gradient=scale_gradient, use_resource_vars=resource)
  assert bool(flag) is not applied
  if applied:
    np.testing.assert_allclose(w, _expected_w('sum'), rtol=1e-6)
    assert (scale, normal) == (8.0, 1)
  else:
    np.testing.assert_array_equal(w, master_host.W0)
    assert (scale, normal) == (4.0, 0)


@pytest.mark.parametrize('towers', [1, 3])
def test_auto_loss_scale_counts_each_step_once(towers, master_control_flow):
  """Master counts a finite step in every apply device's call; here once a
  step, whatever the apply devices' number. The scale doubles when a step
  finds inc_loss_scale_every_n (2) steps counted: after 3 finite steps
  from 8, normal steps 1, 2, then 0 with the scale at 16."""
  del master_control_flow
  w, (scale, normal), flag = _auto_scale_steps(3, num_gpus=towers)
  assert not flag
  np.testing.assert_allclose(w, _expected_w('sum', towers, steps=3),
                             rtol=1e-6)
  assert (scale, normal) == (16.0, 0)


@pytest.mark.parametrize('consistency', ['strong', 'relaxed'])
@pytest.mark.parametrize('repacking', [0, 2])
def test_master_form_hands_each_device_a_list_of_its_sums(consistency,
                                                          repacking):
  """Master's preprocess_device_grads returns each device's [(sum, var)], a
  list its tests index and fetch, pairing tf.Variables by position; relaxed,
  a fetch hands over the sums of the fetch before (zeros at first), as
  master's deferred puts do."""
  towers, count = 3, 4
  values = np.arange(towers * count, dtype=np.float32).reshape(towers, count)
  with tf.Graph().as_default():
    bench = master_host.MasterBench(num_gpus=towers,
                                    variable_consistency=consistency,
                                    gradient_repacking=repacking)
    mgr = master_host.replicated(bench)
    bench.devices = mgr.get_devices()
    tower_grads = []
    for d in range(towers):
      with tf1.device(bench.devices[d]):
        tower_grads.append([(tf.constant(values[d, j]),
                             tf1.Variable(values[d, j]))
                            for j in range(count)])
    _, grads = mgr.preprocess_device_grads(tower_grads)
    assert isinstance(grads, list) and len(grads) == towers
    harness = [mgr.get_gradients_to_apply(d, grads) for d in range(towers)]
    state = list(mgr.step_state_variables)
    # Relaxed defers the sums through state of its own; master's warm-up
    # ops set its starting values, and alone make it ready.
    assert bool(state) == (consistency == 'relaxed')
    with tf1.Session(config=bench.session_config()) as sess:
      sess.run(getattr(mgr, '_warmup_ops'))
      if state:
        assert not sess.run(tf1.report_uninitialized_variables(state)).size
      sess.run(tf1.global_variables_initializer())
      sess.run(tf1.local_variables_initializer())
      first = sess.run(grads)
      zeros = dict((g, 0.0) for tower in tower_grads for g, _ in tower)
      second = sess.run(grads, zeros)
  sums = values.sum(axis=0)
  if consistency == 'strong':
    expected = [sums, np.zeros(count)]  # The second fetch feeds zeros.
  else:
    expected = [np.zeros(count), sums]
    # The harness's gradients wait for nothing of the step's assigns.
    for tower in harness:
      for g, _ in tower:
        assert not g.op.control_inputs
  for fetched, want in zip((first, second), expected):
    for d in range(towers):
      np.testing.assert_array_equal([g for g, _ in fetched[d]], want)
      np.testing.assert_array_equal([v for _, v in fetched[d]], values[d])


def test_collective_master_form_sums():
  """Master's collective_all_reduce sums over every tower of every worker."""
  with tf.Graph().as_default():
    bench = _collective_bench()
    mgr = variable_mgr.VariableMgrCollectiveAllReduce(
        bench, 'collective', 2, 2, 1, 1)
    assert mgr.reduction == 'sum'
    # One member a worker: each worker sums its 2 towers first, so the sum
    # spans the 4 towers of the 2 workers.
    assert mgr.group_size == 2
    assert mgr.benchmark_cnn.param_server_device == bench.cpu_device


def _collective_bench(**params):
  bench = master_host.MasterBench(**params)
  bench.cluster_manager = master_host.ClusterManager(
      {'worker': ['h:1', 'h:2']})
  bench.job_name = 'worker'
  bench.num_workers = 2
  bench.task_index = 1
  prefix = '/job:worker/replica:0/task:1'
  bench.cpu_device = prefix + '/cpu:0'
  bench.raw_devices = [prefix + '/cpu:%d' % i for i in range(2)]
  del bench.param_server_device  # Master sets none in this mode.
  return bench


def test_replicated_flags_pass_through_master_distributed_all_reduce():
  """--xla_compile and --hierarchical_copy are master's replicated's: its
  distributed_all_reduce reads neither, so a controller given them builds
  its manager (replicated refuses the first, and the second beside a
  spec)."""
  bench = master_host.MasterBench(xla_compile=True, hierarchical_copy=True,
                                  gradient_repacking=4, use_fp16=True,
                                  all_reduce_spec='xring')
  bench.cluster_manager = master_host.ClusterManager(
      {'controller': ['h:0'], 'worker': ['h:1', 'h:2']})
  bench.job_name = 'controller'
  bench.num_workers = 2
  with tf.Graph().as_default():
    mgr = variable_mgr.VariableMgrDistributedAllReduce(
        bench, 'xring', 'controller', 2, 0, 10, 1)
  assert type(mgr).__name__ == 'VariableMgrDistributedAllReduce'
  # The controller's towers are every worker's (master's raw_devices are
  # this process's); master asks get_devices() for a worker's own towers
  # while it builds them.
  assert mgr.benchmark_cnn.raw_devices == [
      '/job:worker/replica:0/task:%d/cpu:%d' % (k, i)
      for k in range(2) for i in range(2)]
  assert mgr.get_devices() == bench.raw_devices == ['/cpu:0', '/cpu:1']


def test_is_master_host():
  assert upstream_host.is_master_host(master_host.MasterBench())
  assert not upstream_host.is_master_host(variable_mgr.LocalBenchmarkCnn(1))


REFUSALS = [
    (lambda: master_host.replicated(master_host.MasterBench(
        allreduce_merge_scope=4)),
     errors.IncompatibleOptionsError,
     ['--allreduce_merge_scope=4', 'drop the flag']),
    (lambda: master_host.replicated(master_host.MasterBench(
        xla_compile=True)),
     errors.IncompatibleOptionsError,
     ['--xla_compile=True', 'compiles replicated', 'parameter_server']),
    (lambda: master_host.replicated(master_host.MasterBench(
        hierarchical_copy=True, all_reduce_spec='xring')),
     errors.IncompatibleOptionsError,
     ['--hierarchical_copy=True', 'all_reduce_spec=xring', 'choose one']),
    (lambda: master_host.replicated(master_host.MasterBench(
        hierarchical_copy=True, network_topology='gcp_v100')),
     errors.IncompatibleOptionsError,
     ['--network_topology=gcp_v100', 'hcopy has one layout',
      'drop --network_topology']),
    (lambda: master_host.replicated(master_host.MasterBench(
        gpu_indices='1,0', all_reduce_spec='xring')),
     errors.IncompatibleOptionsError, ['--gpu_indices=1,0', 'drop']),
    (lambda: variable_mgr.VariableMgrCollectiveAllReduce(
        _collective_bench(), 'xring', 2, 2, 1, 1),
     errors.IncompatibleOptionsError,
     ['--all_reduce_spec=xring', '--all_reduce_spec=collective']),
    (lambda: variable_mgr.VariableMgrCollectiveAllReduce(
        _collective_bench(gpu_indices='1,0'), 'collective', 2, 2, 1, 1),
     errors.IncompatibleOptionsError, ['--gpu_indices=1,0', 'drop']),
    (lambda: variable_mgr.VariableMgrCollectiveAllReduce(
        _collective_bench(), 'collective', 3, 2, 1, 1),
     errors.InterfaceError, ['num_workers=3', 'num_workers=2']),
    (lambda: variable_mgr.VariableMgrDistributedAllReduce(
        master_host.MasterBench(), 'xring', 'localhost', 1, 0, 10, 1),
     errors.IncompatibleOptionsError,
     ['--variable_update=distributed_all_reduce', '--job_name',
      '--variable_update=replicated']),
    (lambda: variable_mgr.VariableMgrIndependent(
        master_host.MasterBench(), 'xring'),
     errors.ProtocolError, ['VariableMgrIndependent', "'xring'", 'none']),
    (lambda: variable_mgr.VariableMgrLocalReplicated(
        master_host.MasterBench(), 'xring', 0, 10, 1, use_nccl=True),
     errors.ProtocolError, ['use_nccl=True', 'LocalBenchmarkCnn']),
    (lambda: variable_mgr.VariableMgrLocalReplicated(
        master_host.MasterBench(), 'xring'),
     errors.ProtocolError, ['agg_small_grads_max_bytes',
                            'allreduce_merge_scope']),
]


@pytest.mark.parametrize('build,error,fragments', REFUSALS,
                         ids=[f[-1][0] for _, _, f in REFUSALS])
def test_refusals_name_value_and_fix(build, error, fragments):
  graph = tf.Graph()
  with graph.as_default():
    with pytest.raises(error) as info:
      build()
    assert not graph.get_operations()
  # The fragments in the order the message gives them: the value, the
  # rule, then the fix.
  message, at = str(info.value), 0
  for fragment in fragments:
    assert fragment in message[at:], (fragment, message)
    at = message.index(fragment, at) + len(fragment)


@pytest.mark.parametrize('staged', [False, True], ids=['plain', 'staged'])
@pytest.mark.parametrize('sync, workers, barrier', [
    (True, 2, True), (False, 2, False), (True, 1, False)])
def test_master_ps_cluster_updates_wait_for_every_workers_reads(
    staged, sync, workers, barrier):
  """Master's harness has no barrier between the workers' reads of the
  shared variables and their updates: under master's calls each update
  waits for one barrier a step (after this worker's reads, its staged puts
  among them) on a synchronous cluster of several workers, and for none
  where no other worker reads the same step."""
  with tf.Graph().as_default():
    bench = master_host.PsBench(cross_replica_sync=sync, workers=workers)
    mgr, apply_devices, state = master_host.ps_towers(bench, staged)
    training_ops = []
    for i, device in enumerate(apply_devices):
      with tf1.device(device):
        opt = tf1.train.GradientDescentOptimizer(master_host.RATE)
        mgr.append_apply_gradients_ops(
            state, opt, mgr.get_gradients_to_apply(i, state), training_ops)
    ops = tf1.get_default_graph().get_operations()
    updates = [op for op in ops if op.type in (
        'ApplyGradientDescent', 'ResourceApplyGradientDescent')]
    puts = [op for op in ops if op.type == 'Stage']
  assert updates and bool(puts) == staged
  if not barrier:
    assert bench.barriers == []
    return
  assert len(bench.barriers) == 1
  ready, _ = bench.barriers[0]
  before_ready = graph_walk.ancestors(ready)
  assert state.variable_reads
  assert all(read in before_ready for read in state.variable_reads)
  for put in puts:  # The value a staged put hands the next step.
    assert graph_walk.ancestors(put) & set(state.variable_reads)
  for update in updates:
    assert ready in graph_walk.ancestors(update)


