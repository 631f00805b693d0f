"""--variable_update=collective_all_reduce across real worker processes.

With K workers of T towers, every step is w -= lr * mean_{k,d} g_kd(w): the
mean over all K*T towers (the strategy's default reduction), and every copy
of every worker starts from worker 0's tower 0 (the post-init broadcast).
"""

import json
import os

import numpy as np
import pytest
import tensorflow as _tf

import clusterlib
import graph_walk
import variable_mgr
import worker_processes
from variable_mgr import errors
from variable_mgr.benchmark import cli
from variable_mgr.benchmark.cluster import servers
from variable_mgr.benchmark.cluster import task_spec
from variable_mgr.benchmark.cluster import worker_task
from variable_mgr.benchmark.flags import command_line as cli_flags
from variable_mgr.benchmark.runs import in_process
from variable_mgr.benchmark.training import run_config
from variable_mgr.strategies import collective_all_reduce

tf = _tf.compat.v1
STEPS = 3
WORKERS = 2
WORKER_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             'collective_worker.py')
NAMES = ('logits/weights', 'logits/biases')


def mean_reference(values, num_workers, towers, steps):
  """w[t+1] = w[t] - lr * mean over every tower of every worker."""
  batches = clusterlib.tower_batches(num_workers * towers)
  current = dict((k, v.astype(np.float64)) for k, v in values.items())
  for _ in range(steps):
    grads = [clusterlib.gradients(current, b) for b in batches]
    current = dict((k, current[k] - clusterlib.LEARNING_RATE *
                    sum(g[k] for g in grads) / len(grads)) for k in current)
  return current


# -- Numerics -----------------------------------------------------------------


def _run_workers(tmp_path, towers):
  """Runs WORKERS collective_worker.py processes; returns their arrays."""
  return worker_processes.run_workers(
      tmp_path, WORKER_SCRIPT, WORKERS,
      lambda cluster, k, output: [cluster, str(k), str(towers), str(STEPS),
                                  output], seconds=90, cwd=clusterlib.REPO)


@pytest.mark.parametrize('towers', [1, 2])
def test_every_tower_of_every_worker_matches_numpy(tmp_path, towers):
  arrays = _run_workers(tmp_path, towers)
  initial = dict((n, arrays[0]['initial/v0/' + n]) for n in NAMES)
  # Worker 1 initialised other values: only the broadcast makes them agree.
  assert not np.allclose(arrays[1]['initial/v0/logits/weights'],
                         initial['logits/weights'])
  expected = mean_reference(initial, WORKERS, towers, STEPS)
  for k, worker in enumerate(arrays):
    assert sorted(worker) == sorted(
        '%s/v%d/%s' % (when, d, n) for when in ('initial', 'final')
        for d in range(towers) for n in NAMES), k
    for d in range(towers):
      actual = dict((n, worker['final/v%d/%s' % (d, n)]) for n in NAMES)
      clusterlib.assert_close(actual, expected)


def test_benchmark_cluster_restores_and_matches_numpy(launch, tmp_path):
  """The benchmark's runner (1 PS for its global step and queues, 2 workers
  of 2 towers): the chief restores a checkpoint, broadcasts it, and its
  final checkpoint holds the reference."""
  train_dir = tmp_path / 'train'
  initial = clusterlib.initial_values(seed=2)
  clusterlib.write_checkpoint(str(train_dir), initial, 0)
  output = str(tmp_path / 'summary.json')
  cluster = launch(clusterlib.BASE_FLAGS + [
      '--variable_update', 'collective_all_reduce', '--num_ps', '1',
      '--num_workers', str(WORKERS), '--train_dir', str(train_dir),
      '--num_batches', str(STEPS), '--op_timeout_secs', '30',
      '--output', output])
  assert cluster.finish() == 0, cluster.output
  clusterlib.assert_all_gone(cluster)
  with open(output) as f:
    summary = json.load(f)
  for worker in summary['workers']:
    assert worker['global_step'] == STEPS
  values, step = clusterlib.read_checkpoint(str(train_dir))
  assert step == STEPS
  clusterlib.assert_close(values, mean_reference(
      initial, WORKERS, clusterlib.TOWERS, STEPS))


# -- The graph ----------------------------------------------------------------


def _collectives(task_index, towers=2, reduction=None, graph_only=False,
                 bucket_bytes=0):
  """{op type: [(device task, device index, group_size, group_key,
  instance_key)]} of the graph worker `task_index` builds, and the
  gradients each tower applies; the graph itself with `graph_only`."""
  cluster = {'ps': ['h:1'], 'worker': ['h:2', 'h:3']}
  host = variable_mgr.ClusterBenchmarkCnn(cluster, task_index, towers)
  graph = tf.Graph()
  with graph.as_default():
    mgr = variable_mgr.create('collective_all_reduce', host,
                              reduction=reduction, bucket_bytes=bucket_bytes)
    device_grads = []
    for d in range(towers):
      with mgr.create_outer_variable_scope(d), tf.device(host.devices[d]):
        w = tf.get_variable('w', [3, 2])
        b = tf.get_variable('b', [2])
        unused = tf.get_variable('unused', [4])
        loss = tf.reduce_sum(tf.matmul(tf.ones([1, 3]), w) + b)
        params = [w, b, unused]
        device_grads.append(zip(tf.gradients(loss, params), params))
    apply_devices, state = mgr.preprocess_device_grads(device_grads)
    assert apply_devices == host.raw_devices
    grads = [mgr.get_gradients_to_apply(d, state) for d in range(towers)]
    mgr.get_post_init_ops()
  if graph_only:
    return graph
  result = {}
  for op in graph.get_operations():
    if op.type.startswith('Collective'):
      device = tf.DeviceSpec.from_string(op.device)
      result.setdefault(op.type, []).append(
          (device.task, device.device_index, op.get_attr('group_size'),
           op.get_attr('group_key'), op.get_attr('instance_key')))
  for ops in result.values():
    ops.sort()
  return result, grads


@pytest.mark.parametrize('towers', [1, 3])
def test_keys_and_group_sizes_match_across_workers(towers):
  """Without buckets (bucket_bytes=0): one all-reduce a gradient a worker
  (w: 0, b: 1; unused has None), on
  the worker's first tower, in a group of the 2 workers: a worker's towers
  are summed before it, so what crosses the network does not grow with
  the towers. Nothing of a step is collective inside a worker."""
  chief, grads = _collectives(0, towers)
  other, _ = _collectives(1, towers)
  key = collective_all_reduce.GROUP_KEY
  grad_base = collective_all_reduce.GRADIENT_INSTANCE_KEY_BASE
  bcast_base = collective_all_reduce.BROADCAST_INSTANCE_KEY_BASE
  for task, ops in ((0, chief), (1, other)):
    assert ops['CollectiveReduce'] == [
        (task, 0, 2, key, grad_base + i) for i in (0, 1)]
  # Broadcast keys follow the sorted names: b, unused, w; tower 0 of the
  # chief sends, tower 0 of the other worker receives.
  assert chief['CollectiveBcastSend'] == [
      (0, 0, 2, key, bcast_base + j) for j in range(3)]
  assert 'CollectiveBcastRecv' not in chief
  assert 'CollectiveBcastSend' not in other
  assert other['CollectiveBcastRecv'] == [
      (1, 0, 2, key, bcast_base + j) for j in range(3)]
  for d in range(towers):
    assert [g is None for g, _ in grads[d]] == [False, False, True]
    for g, v in grads[d][:2]:
      # Each tower applies the result on its own device, to its own copy.
      assert v.op.name.startswith('v%d/' % d)
      assert tf.DeviceSpec.from_string(g.device).device_index == d


def test_worker_sums_its_towers_on_its_first_tower():
  """The input of a gradient's all-reduce is the sum of the worker's
  towers' gradients, made on the first tower's device."""
  graph = _collectives(1, 3, graph_only=True)
  for op in graph.get_operations():
    if op.type != 'CollectiveReduce':
      continue
    total = op.inputs[0].op
    (terms,) = [terms for sum_op, terms in graph_walk.sums(graph)
                if sum_op is total]
    assert tf.DeviceSpec.from_string(total.device).device_index == 0
    # The towers' gradients, added in tower order.
    assert [tf.DeviceSpec.from_string(t.device).device_index
            for t in terms] == [0, 1, 2]


@pytest.mark.parametrize('towers', [1, 2])
def test_sum_reduction_has_no_scaling(towers):
  """The mean scales each all-reduce's output once a worker, by 1 / (2
  workers x towers); sum does not."""
  def scale_ops(reduction):
    cluster = {'ps': ['h:1'], 'worker': ['h:2', 'h:3']}
    host = variable_mgr.ClusterBenchmarkCnn(cluster, 1, towers)
    graph = tf.Graph()
    with graph.as_default():
      mgr = variable_mgr.create('collective_all_reduce', host,
                                reduction=reduction, bucket_bytes=0)
      assert mgr.reduction == (reduction or 'mean')
      device_grads = []
      for d in range(towers):
        with mgr.create_outer_variable_scope(d), tf.device(host.devices[d]):
          w = tf.get_variable('w', [3])
          device_grads.append([(tf.ones([3]), w)])
      mgr.preprocess_device_grads(device_grads)
    return [op for op in graph.get_operations()
            if op.type == 'Mul' and 'collective_all_reduce' in op.name]
  mean_ops = scale_ops(None)
  assert len(mean_ops) == 1
  assert mean_ops[0].inputs[0].op.type == 'CollectiveReduce'
  factor = tf.make_ndarray(mean_ops[0].inputs[1].op.get_attr('value'))
  assert factor == np.float32(1.0 / (2 * towers))
  assert not scale_ops('sum')


def test_one_worker_of_one_tower_needs_no_collective():
  """A group of one: the gradient is applied as is and the post-init ops
  are empty (TensorFlow refuses a collective group of one)."""
  # The server first: start_servers picks a new port when one is taken.
  cluster, servers = in_process.start_servers([('worker', 1)],
                                              lambda job, k: None)
  cluster = tf.train.ClusterSpec(cluster)
  server, = servers['worker']
  host = _Host(cluster=cluster, task_index=0, num_workers=1,
               raw_devices=['/job:worker/replica:0/task:0/cpu:0'])
  host.devices = list(host.raw_devices)
  host.cpu_device = host.param_server_device = host.raw_devices[0]
  graph = tf.Graph()
  with graph.as_default():
    mgr = variable_mgr.create('collective_all_reduce', host)
    assert mgr.group_size == 1
    with mgr.create_outer_variable_scope(0), tf.device(host.devices[0]):
      w = tf.get_variable('w', initializer=tf.constant([1.0, 2.0]))
      loss = tf.reduce_sum(w * w)
      device_grads = [zip(tf.gradients(loss, [w]), [w])]
    apply_devices, state = mgr.preprocess_device_grads(device_grads)
    training_ops = []
    with tf.device(apply_devices[0]):
      mgr.append_apply_gradients_ops(
          state, tf.train.GradientDescentOptimizer(0.25),
          mgr.get_gradients_to_apply(0, state), training_ops)
    assert mgr.get_post_init_ops() == []
    init = tf.global_variables_initializer()
  assert not [op for op in graph.get_operations()
              if op.type.startswith('Collective')]
  with tf.Session(server.target, graph=graph) as session:
    session.run(init)
    session.run(training_ops)
    # w - 0.25 * 2w
    np.testing.assert_allclose(session.run(w), [0.5, 1.0])


def test_variables_to_save_are_tower_zero_under_canonical_names():
  host = variable_mgr.ClusterBenchmarkCnn(
      {'ps': ['h:1'], 'worker': ['h:2', 'h:3']}, 1, 2)
  with tf.Graph().as_default():
    mgr = variable_mgr.create('collective_all_reduce', host)
    for d in range(2):
      with mgr.create_outer_variable_scope(d), tf.device(host.devices[d]):
        tf.get_variable('conv/w', [2])
    saved = mgr.get_variables_to_save()
  assert sorted(saved) == ['conv/w']
  assert saved['conv/w'].op.name == 'v0/conv/w'


def test_runner_names_the_group_leader_everywhere():
  spec = task_spec.resolve(
      'worker', 1, '127.0.0.1:1', '127.0.0.1:2,127.0.0.1:3', {})
  options = cli_flags.build_parser().parse_args([])
  config = servers.session_config(tf, spec, options, 2)
  assert config.experimental.collective_group_leader == (
      '/job:worker/replica:0/task:0')
  assert not config.allow_soft_placement


# -- Errors -------------------------------------------------------------------


class _Host(object):
  """A worker-only cluster host with overridable attributes."""

  def __init__(self, **overrides):
    self.cluster = tf.train.ClusterSpec({'worker': ['h:1', 'h:2']})
    self.task_index = 1
    self.num_workers = 2
    self.raw_devices = ['/job:worker/replica:0/task:1/cpu:0']
    self.devices = list(self.raw_devices)
    self.cpu_device = self.raw_devices[0]
    self.param_server_device = self.cpu_device
    self.local_parameter_device_flag = 'cpu'
    self.num_gpus = 1
    for key, value in overrides.items():
      setattr(self, key, value)


def _raises(error_class, fragments, fn):
  graph = tf.Graph()
  with graph.as_default():
    with pytest.raises(error_class) as info:
      fn()
  assert not graph.get_operations()
  for fragment in fragments:
    assert fragment in str(info.value), (fragment, str(info.value))


def test_worker_only_cluster_is_enough():
  with tf.Graph().as_default():
    mgr = variable_mgr.create('collective_all_reduce', _Host())
  assert isinstance(mgr, variable_mgr.VariableMgrCollectiveAllReduce)
  assert mgr.group_size == 2


def test_no_cluster():
  _raises(errors.MissingClusterError,
          ["'collective_all_reduce'", 'ClusterSpec', 'locally use replicated'],
          lambda: variable_mgr.create('collective_all_reduce',
                                      variable_mgr.LocalBenchmarkCnn(2)))
  _raises(errors.MissingClusterError, ['cluster=None', 'replicated'],
          lambda: collective_all_reduce.VariableMgrCollectiveAllReduce(
              _Host(cluster=None)))


def test_no_worker_job():
  _raises(errors.MissingClusterError, ["['ps']", '"worker" job'],
          lambda: variable_mgr.create('collective_all_reduce', _Host(
              cluster=tf.train.ClusterSpec({'ps': ['h:1']}))))


@pytest.mark.parametrize('overrides,fragments', [
    ({'raw_devices': ['/cpu:0']}, ["'/cpu:0'", 'task:1']),
    ({'raw_devices': ['/job:worker/replica:0/task:0/cpu:0']},
     ['task:0/cpu:0', "this worker's task"]),
    ({'num_workers': 3}, ['num_workers=3', '2 tasks']),
    ({'task_index': 2}, ['task_index=2', '0..1']),
], ids=['unqualified_device', 'other_task', 'num_workers', 'task_index'])
def test_host_disagrees_with_cluster(overrides, fragments):
  _raises(errors.InterfaceError, fragments,
          lambda: variable_mgr.create('collective_all_reduce',
                                      _Host(**overrides)))


def test_host_lacks_worker_attributes():
  host = _Host()
  del host.task_index
  _raises(errors.InterfaceError, ['task_index'],
          lambda: variable_mgr.create('collective_all_reduce', host))


@pytest.mark.parametrize('option,value', [
    ('staged_vars', True), ('use_nccl', True), ('all_reduce_spec', 'xring')])
def test_options_of_other_strategies(option, value):
  _raises(errors.IncompatibleOptionsError, ['%s=%r' % (option, value)],
          lambda: variable_mgr.create('collective_all_reduce', _Host(),
                                      **{option: value}))


def test_runner_refuses_asynchronous_steps():
  config = run_config.BenchmarkConfig(variable_update='collective_all_reduce')
  with pytest.raises(worker_task.ClusterOptionsError) as info:
    worker_task._check_options(config, False)  # pylint: disable=protected-access
  assert 'collective_all_reduce' in str(info.value)
  assert 'collective_all_reduce synchronises every variable' in str(info.value)
  worker_task._check_options(config, True)  # pylint: disable=protected-access


def test_cli_without_a_cluster_exits_2(capsys):
  status = cli.main(['--variable_update', 'collective_all_reduce',
                     '--model', 'trivial', '--num_batches', '1'])
  assert status == 2
  assert 'needs a cluster' in capsys.readouterr().err
