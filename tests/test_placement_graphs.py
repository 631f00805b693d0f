"""Where the distributed strategies and NCCL put things, read off the built
graph (nothing runs, except the NCCL test on a machine with two GPUs).

The cluster is two PS tasks and two workers; this is worker 0 with two
towers. The model has four variables of known byte sizes, so the greedy
byte-size balancing over the PS tasks can be computed by hand.
"""

import re

import numpy as np
import pytest
import tensorflow as tf

import graph_walk
import seed_harness
import test_conformance
import variable_mgr

tf1 = tf.compat.v1


def visible_gpus():
  return tf.config.experimental.list_physical_devices('GPU')
CLUSTER = {'ps': ['h:2222', 'h:2223'], 'worker': ['h:2224', 'h:2225']}

# name, shape, dtype, bytes.
VARIABLES = [('a', [30], tf.float32, 120), ('b', [10], tf.float64, 80),
             ('c', [10], tf.float32, 40), ('d', [30], tf.float64, 240)]
# Least loaded task first, first on a tie: a->0 (120, 0); b->1 (120, 80);
# c->1 (120, 120); d->0 (360, 120). Other counts place them otherwise: by
# elements [0, 1, 1, 1], by a resource handle's bytes [0, 1, 0, 0], one a
# variable or round-robin [0, 1, 0, 1].
EXPECTED_TASKS = {'a': 0, 'b': 1, 'c': 1, 'd': 0}


def _model():
  variables = [tf1.get_variable(n, s, d) for n, s, d, _ in VARIABLES]
  return tf.add_n([tf.reduce_sum(tf.cast(v, tf.float32)) for v in variables])


def _build(mgr, host, num_towers, model=_model, train=True, record=None):
  """The harness protocol, in tf_cnn_benchmarks' order (see README). Each
  tower's `{variable op name: gradient}` is appended to `record`."""
  host.devices = mgr.get_devices()
  device_grads = []
  for d in range(num_towers):
    with mgr.create_outer_variable_scope(d), tf.name_scope('tower_%d' % d):
      with tf1.device(host.devices[d]):
        loss = model()
        params = mgr.trainable_variables_on_device(d)
        grads = tf.gradients(loss, params)
        refs = mgr.trainable_variables_on_device(d, writable=True)
        if record is not None:
          record.append(dict((v.op.name, g) for g, v in zip(grads, refs)))
        device_grads.append(zip(grads, refs))
  training_ops = []
  if train:
    apply_devices, state = mgr.preprocess_device_grads(device_grads)
    opt = tf1.train.GradientDescentOptimizer(0.5, use_locking=True)
    for i, dev in enumerate(apply_devices):
      with tf1.device(dev):
        grads = mgr.get_gradients_to_apply(i, state)
        mgr.append_apply_gradients_ops(state, opt, grads, training_ops)
  return training_ops


def _spec(device):
  return tf.DeviceSpec.from_string(device)


def _canonical(device):
  return _spec(device).to_string()


def _read_source(tensor):
  """The variable op a chain of reads starts from, or None."""
  op = tensor.op
  while op.type in ('Identity', 'ReadVariableOp') and op.inputs:
    op = op.inputs[0].op
  return op.name if op.type in ('VariableV2', 'VarHandleOp') else None


def _cluster_host():
  return variable_mgr.ClusterBenchmarkCnn(CLUSTER, task_index=0, num_towers=2)


def _by_short_name(variables):
  return dict((v.op.name.split('/')[-1], v) for v in variables)


@pytest.mark.parametrize('shape,dtype,expected', [
    ([3, 4], tf.float64, 96), ([5], tf.float16, 10), ([2, 3, 4], tf.int32, 96),
    ([], tf.float32, 4), ([0, 7], tf.float32, 0)])
def test_byte_size_load_fn_counts_bytes(shape, dtype, expected,
                                        variable_kind):
  """Elements times the dtype's size, read off the variable op itself (its
  shape and dtype attributes, not its output: a resource handle is a
  scalar)."""
  with tf.Graph().as_default():
    var = tf1.get_variable('w', shape, dtype,
                           initializer=tf1.zeros_initializer())
    assert var.op.type == ('VarHandleOp' if variable_kind == 'resource'
                           else 'VariableV2')
    assert variable_mgr.byte_size_load_fn(var.op) == expected


def test_byte_size_load_fn_unknown_shape_counts_zero(variable_kind):
  with tf.Graph().as_default():
    unknown = tf1.placeholder_with_default(tf.zeros([7]), shape=[None])
    var = tf1.get_variable('u', initializer=unknown, validate_shape=False)
    assert not var.shape.is_fully_defined()
    assert variable_mgr.byte_size_load_fn(var.op) == 0


def test_greedy_strategy_uses_its_load_function():
  """The least loaded task by the given load, the first one on a tie."""
  loads = {'a': 5, 'b': 3, 'c': 3, 'd': 1, 'e': 0}

  class _Op(object):

    def __init__(self, name):
      self.name = name

  strategy = variable_mgr.GreedyLoadBalancingStrategy(
      3, load_fn=lambda op: loads[op.name])
  # a->0 (5,0,0); b->1 (5,3,0); c->2 (5,3,3); d->1 (5,4,3); e->2 (5,4,3).
  assert [strategy(_Op(n)) for n in 'abcde'] == [0, 1, 2, 1, 2]


@pytest.mark.parametrize('staged', [False, True])
def test_distributed_ps_balances_variables_by_bytes(staged, variable_kind):
  with tf.Graph().as_default() as graph:
    host = _cluster_host()
    mgr = variable_mgr.create('parameter_server', host, staged_vars=staged)
    assert isinstance(mgr, (
        variable_mgr.VariableMgrDistributedFetchFromStagedPS if staged else
        variable_mgr.VariableMgrDistributedFetchFromPS))
    training_ops = _build(mgr, host, 2)
    assert training_ops
    global_vars = tf1.global_variables()
    assert sorted(v.op.name for v in global_vars) == [
        'v/a', 'v/b', 'v/c', 'v/d']
    assert not tf1.local_variables()
    for name, var in _by_short_name(global_vars).items():
      spec = _spec(var.device)
      assert (spec.job, spec.task) == ('ps', EXPECTED_TASKS[name]), (
          name, var.device)
    # Every placed op is on this worker or on a PS (unplaced ones are
    # initializers colocated with their variable, and control-only NoOps).
    for op in graph.get_operations():
      spec = _spec(op.device)
      if not op.device:
        assert (op.type == 'NoOp' or
                op.colocation_groups() != [b'loc:@' + op.name.encode()]), (
                    op.name)
        continue
      assert (spec.job, spec.task) in (('worker', 0), ('ps', 0), ('ps', 1)), (
          op.name, op.device)
    if staged:
      stages = [op for op in graph.get_operations() if op.type == 'Stage']
      # One staging area a variable a tower (no non-trainable variables).
      assert len(stages) == len(VARIABLES) * 2
      assert sorted(_canonical(op.device) for op in stages) == sorted(
          _canonical(d) for d in host.raw_devices * len(VARIABLES))
      assert len(mgr.staged_vars_on_cpu) == len(VARIABLES)
      for cached in mgr.staged_vars_on_cpu.values():
        assert _canonical(cached.device) == _canonical(host.cpu_device)


def test_distributed_ps_caches_on_the_worker(variable_kind):
  """The towers read the PS variables through a cache on this worker's
  CPU (small variables, and every variable with local_parameter_device
  'cpu'), not once a tower."""
  with tf.Graph().as_default():
    host = _cluster_host()
    mgr = variable_mgr.create('parameter_server', host)
    _build(mgr, host, 2, train=False)
    variable_ops = set(v.op.name for v in tf1.global_variables())
    tower_reads = set()
    for op in tf1.get_default_graph().get_operations():
      if re.search(r'(^|/)tower_\d+/', op.name):
        for tensor in op.inputs:
          source = _read_source(tensor)
          if source in variable_ops:
            tower_reads.add((source, tensor.op.name, tensor.op.device))
  # Both towers read the one cached copy of each variable.
  assert sorted(source for source, _, _ in tower_reads) == [
      'v/a', 'v/b', 'v/c', 'v/d']
  assert set(_canonical(device) for _, _, device in tower_reads) == {
      _canonical(host.cpu_device)}


@pytest.mark.parametrize('flag', ['cpu', 'gpu'])
def test_distributed_ps_caches_large_variables_by_parameter_device(
    flag, variable_kind):
  """local_parameter_device 'gpu' spreads the cached copies of large
  variables (64K elements or more) over the tower devices, least loaded
  first; 'cpu' caches them on the worker's CPU. Small ones go to the CPU
  either way, up to 64K - 1 elements (`edge`: were it large, it would go to
  the least loaded tower, tower 1)."""
  def model():
    variables = [tf1.get_variable(n, s) for n, s in (
        ('big1', [256, 300]), ('big2', [256, 256]), ('edge', [65535]),
        ('small', [7]))]
    return tf.add_n([tf.reduce_sum(v) for v in variables])

  with tf.Graph().as_default() as graph:
    host = variable_mgr.ClusterBenchmarkCnn(
        CLUSTER, task_index=0, num_towers=2, local_parameter_device=flag)
    mgr = variable_mgr.create('parameter_server', host)
    _build(mgr, host, 2, model=model, train=False)
    cached = {}
    for var in tf1.global_variables():
      # The cached copy: an Identity on the worker of the variable's value.
      readers = [op for op in graph.get_operations()
                 if op.type == 'Identity' and
                 _spec(op.device).job == 'worker' and
                 _read_source(op.inputs[0]) == var.op.name]
      cached[var.op.name] = sorted(set(_canonical(op.device)
                                       for op in readers))
  cpu, tower1 = _canonical(host.raw_devices[0]), _canonical(
      host.raw_devices[1])
  assert _canonical(host.cpu_device) == cpu
  expected_big2 = tower1 if flag == 'gpu' else cpu
  assert cached == {'v/big1': [cpu], 'v/big2': [expected_big2],
                    'v/edge': [cpu], 'v/small': [cpu]}


def test_distributed_replicated_locals_and_masters(variable_kind):
  with tf.Graph().as_default() as graph:
    host = _cluster_host()
    mgr = variable_mgr.create('distributed_replicated', host)
    training_ops = _build(mgr, host, 2)
    post_init = mgr.get_post_init_ops()
    to_save = mgr.get_variables_to_save()
    local_vars = tf1.local_variables()
    global_vars = tf1.global_variables()
    trainable = tf1.trainable_variables()
  assert sorted(v.op.name for v in local_vars) == sorted(
      'v%d/%s' % (d, n) for d in range(2) for n in 'abcd')
  assert sorted(v.op.name for v in global_vars) == [
      'ps_var/v0/a', 'ps_var/v0/b', 'ps_var/v0/c', 'ps_var/v0/d']
  # The tower copies stay trainable (the towers differentiate them).
  assert set(v.op.name for v in local_vars) <= set(
      v.op.name for v in trainable)
  for var in local_vars:
    d = int(var.op.name.split('/')[0][1:])
    assert _canonical(var.device) == _canonical(host.raw_devices[d]), (
        var.op.name, var.device)
  for name, master in _by_short_name(global_vars).items():
    spec = _spec(master.device)
    assert (spec.job, spec.task) == ('ps', EXPECTED_TASKS[name]), (
        name, master.device)
  # Each master's update is followed by a copy into both towers' copies.
  assert len(training_ops) == len(VARIABLES) * 2
  assert len(post_init) == len(VARIABLES) * 2
  assert sorted((k, v.op.name) for k, v in to_save.items()) == [
      (n, 'ps_var/v0/' + n) for n in 'abcd']


def test_distributed_replicated_saves_past_its_step_state(variable_kind):
  """With accumulation the manager keeps step state in local variables
  (accumulators, a counter), which are never saved; a local variable the
  model makes after them (here `late`, once the step is built) still is,
  beside the masters."""
  with tf.Graph().as_default():
    host = _cluster_host()
    mgr = variable_mgr.create('distributed_replicated', host,
                              backward_passes_per_step=2)
    _build(mgr, host, 2)
    state = mgr.step_state_variables
    with tf1.device(host.raw_devices[0]):
      late = tf1.get_variable('late', [3], collections=[
          tf1.GraphKeys.LOCAL_VARIABLES])
    candidates = tf1.global_variables() + tf1.local_variables()
    to_save = mgr.get_variables_to_save()
  assert state and candidates.index(state[-1]) < candidates.index(late)
  assert not set(id(v) for v in state) & set(id(v) for v in to_save.values())
  assert sorted((k, v.op.name) for k, v in to_save.items()) == sorted(
      [(n, 'ps_var/v0/' + n) for n in 'abcd'] + [('late', 'late')])


def _producer_chain(tensor):
  """The ops from `tensor` back to the NcclAllReduce it comes from, through
  the first input of each Identity, Cast and Mul (a scale by a constant)."""
  chain = [tensor.op]
  while chain[-1].type != 'NcclAllReduce':
    op = chain[-1]
    if op.type not in ('Identity', 'Cast', 'Mul'):
      raise AssertionError('%s (%s) is between the all-reduce and the update'
                           % (op.name, op.type))
    inputs = [t for t in op.inputs if t.op.type != 'Const']
    assert len(inputs) == 1, (op.name, [t.name for t in op.inputs])
    chain.append(inputs[0].op)
  return chain


def _through_identities(tensor):
  while tensor.op.type == 'Identity':
    tensor = tensor.op.inputs[0]
  return tensor


@pytest.mark.parametrize('num_towers', [2, 3])
@pytest.mark.parametrize('reduction', [None, 'mean'])
def test_nccl_graph_one_all_reduce_per_tower_and_gradient(num_towers,
                                                          reduction):
  """Tower d's update of each variable reads the output on tower d's GPU of
  the all-reduce of that variable's gradients, which takes every tower's
  gradient of it; 'mean' scales the sum by 1/towers there, the default
  (sum) does not scale it."""
  grads = []
  with tf.Graph().as_default() as graph:
    host = variable_mgr.LocalBenchmarkCnn(num_towers, device='gpu')
    mgr = variable_mgr.create('replicated', host, use_nccl=True,
                              reduction=reduction)
    training_ops = _build(mgr, host, num_towers, record=grads)
  nccl = [op for op in graph.get_operations() if op.type == 'NcclAllReduce']
  assert len(nccl) == num_towers * len(VARIABLES)
  per_device = {}
  groups = {}
  for op in nccl:
    spec = _spec(op.device)
    assert spec.device_type == 'GPU', op.device
    per_device.setdefault(spec.device_index, []).append(op)
    groups.setdefault(op.get_attr('shared_name'), []).append(op)
    assert op.get_attr('num_devices') == num_towers
    assert op.get_attr('reduction') == b'sum'
  assert sorted(per_device) == list(range(num_towers))
  assert all(len(ops) == len(VARIABLES) for ops in per_device.values())
  assert len(groups) == len(VARIABLES)

  assert len(training_ops) == num_towers
  applies = [op for op in graph.get_operations()
             if op.type in ('ApplyGradientDescent',
                            'ResourceApplyGradientDescent')]
  assert len(applies) == num_towers * len(VARIABLES)
  for d, train_op in enumerate(training_ops):
    assert _spec(train_op.device).device_index == d
    tower_applies = [op for op in graph_walk.ancestors([train_op]) if op in applies]
    assert sorted(_through_identities(op.inputs[0]).op.name
                  for op in tower_applies) == sorted(
                      'v%d/%s' % (d, v[0]) for v in VARIABLES)
    for apply_op in tower_applies:
      name = _through_identities(apply_op.inputs[0]).op.name
      chain = _producer_chain(apply_op.inputs[2])
      all_reduce = chain[-1]
      # Its own GPU's output, of the all-reduce of this variable.
      assert _spec(all_reduce.device).device_index == d, (
          name, all_reduce.name, all_reduce.device)
      assert _through_identities(all_reduce.inputs[0]) is grads[d][name], (
          name, all_reduce.name)
      group = groups[all_reduce.get_attr('shared_name')]
      canonical = name.split('/', 1)[1]
      assert sorted(
          (_spec(op.device).device_index,
           _through_identities(op.inputs[0]).name) for op in group) == [
               (e, grads[e]['v%d/%s' % (e, canonical)].name)
               for e in range(num_towers)]
      scales = [op for op in chain if op.type == 'Mul']
      if reduction == 'mean':
        assert len(scales) == 1, [op.name for op in chain]
        (factor,) = [tf1.make_ndarray(t.op.get_attr('value'))
                     for t in scales[0].inputs if t.op.type == 'Const']
        np.testing.assert_allclose(factor, 1.0 / num_towers, rtol=1e-7)
      else:
        assert not scales, [op.name for op in chain]


@pytest.mark.gpu
@pytest.mark.skipif(len(visible_gpus()) < 2,
                    reason='NCCL runs only between two or more real GPUs; '
                    'this machine has %d' % len(visible_gpus()))
@pytest.mark.parametrize('reduction', [None, 'mean'])
def test_nccl_replicated_runs_against_numpy(reduction):
  num_towers = min(len(visible_gpus()), 4)
  batches = test_conformance.make_batches(num_towers, np.float32)
  graph = tf.Graph()
  with graph.as_default():
    host = variable_mgr.LocalBenchmarkCnn(num_towers, device='gpu')
    mgr = variable_mgr.create('replicated', host, use_nccl=True,
                              reduction=reduction)
    inputs = []

    def model():
      x = tf1.placeholder(tf.float32, [6, seed_harness.IN])
      y = tf1.placeholder(tf.float32, [6, seed_harness.OUT])
      inputs.append((x, y))
      return seed_harness.model(x, y)

    train_op = tf.group(*_build(mgr, host, num_towers, model=model))
    init = tf1.global_variables_initializer()
    post_init = mgr.get_post_init_ops()
    towers = [dict((v.op.name.split('/')[-1], v)
                   for v in tf1.global_variables()
                   if v.op.name.startswith('v%d/' % d))
              for d in range(num_towers)]
  config = tf1.ConfigProto(allow_soft_placement=False)
  with tf1.Session(graph=graph, config=config) as sess:
    sess.run(init)
    sess.run(post_init)
    start = sess.run(towers[0])
    expected = test_conformance.reference(start, batches, reduction or 'sum')
    for step, step_batches in enumerate(batches):
      feeds = {}
      for (x, y), (bx, by) in zip(inputs, step_batches):
        feeds[x] = bx
        feeds[y] = by
      sess.run(train_op, feeds)
      for d in range(num_towers):
        got = sess.run(towers[d])
        for k in seed_harness.VARIABLES:
          np.testing.assert_allclose(got[k], expected[step][d][k],
                                     rtol=2e-5, atol=2e-6)
