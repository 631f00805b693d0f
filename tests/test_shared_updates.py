"""Updates that several workers make to the same variables lock them.

In a cluster, parameter_server (staged or not) and distributed_replicated
have every worker apply its own update to the variables on the PS tasks,
so two workers' updates of one variable can run at once. An optimizer
without `use_locking` updates in place without excluding another update,
and the two lose parts of each other (`benchmarks/stress_shared_updates.py`
shows it). The strategies refuse such an optimizer when the cluster has
more than one worker; the benchmark's cluster workers create theirs with
the lock. Updates of one worker alone, and local strategies, take any.

A sparse gradient of a resource variable is applied by ResourceScatterAdd,
which takes the lock shared whatever the optimizer asks: with several
workers the strategies make it dense on the PS first (`locked_updates`).
The numbers of both forms against NumPy: tests/test_cluster_option_matrix.py
(its model gathers an embedding table).
"""

import pytest
import tensorflow as tf

import variable_mgr
from variable_mgr import errors
from variable_mgr.benchmark.flags import command_line
from variable_mgr.benchmark.training import optimizers
from variable_mgr.benchmark.training import run_config

tf1 = tf.compat.v1

SHARED = [('parameter_server', {}),
          ('parameter_server', {'staged_vars': True}),
          ('distributed_replicated', {})]


def _cluster(num_workers):
  return {'ps': ['127.0.0.1:1'],
          'worker': ['127.0.0.1:%d' % (2 + k) for k in range(num_workers)]}


def _build(name, options, num_workers, opt, task_index=0, sparse=False):
  """Builds one worker's towers and update ops; returns the update ops.
  `sparse`: the loss gathers rows of a table (an IndexedSlices gradient)."""
  host = variable_mgr.ClusterBenchmarkCnn(_cluster(num_workers), task_index,
                                          2)
  mgr = variable_mgr.create(name, host, **options)
  host.devices = mgr.get_devices()
  device_grads = []
  for d in range(2):
    with mgr.create_outer_variable_scope(d), tf1.name_scope('tower_%d' % d), \
        tf1.device(host.devices[d]):
      w = tf1.get_variable('w', [4, 3] if sparse else [3],
                           initializer=tf1.ones_initializer())
      if sparse:
        w = tf.gather(w, [0, 2, 2])
      loss = tf.reduce_sum(w * w)
      params = mgr.trainable_variables_on_device(d)
      refs = mgr.trainable_variables_on_device(d, writable=True)
      device_grads.append(list(zip(tf.gradients(loss, params), refs)))
  apply_devices, state = mgr.preprocess_device_grads(device_grads)
  training_ops = []
  for i, device in enumerate(apply_devices):
    with tf1.device(device):
      grads = mgr.get_gradients_to_apply(i, state)
      mgr.append_apply_gradients_ops(state, opt, grads, training_ops)
  return training_ops


DENSE_UPDATES = ('ApplyGradientDescent', 'ResourceApplyGradientDescent')
SPARSE_UPDATES = ('ScatterSub', 'ResourceScatterAdd')


def _apply_ops(graph, types=DENSE_UPDATES):
  return [op for op in graph.get_operations() if op.type in types]


@pytest.mark.parametrize('name,options', SHARED)
def test_two_workers_refuse_an_optimizer_that_does_not_lock(
    name, options, variable_kind):
  del variable_kind  # Both kinds are refused alike.
  with tf.Graph().as_default() as graph:
    with pytest.raises(errors.UnlockedUpdateError) as info:
      _build(name, options, 2, tf1.train.GradientDescentOptimizer(0.1))
    # Refused before the strategy made any update op.
    assert not _apply_ops(graph)
  assert str(info.value) == (
      '%s with 2 workers: the optimizer GradientDescentOptimizer has '
      'use_locking=False, so two workers\' updates of one variable on the PS '
      'can run at once and lose parts of each other; create it with '
      'use_locking=True (e.g. tf.compat.v1.train.GradientDescentOptimizer('
      'rate, use_locking=True)).' % name)


@pytest.mark.parametrize('name,options', SHARED)
def test_a_locking_optimizer_updates_under_the_lock(name, options,
                                                    variable_kind):
  del variable_kind
  with tf.Graph().as_default() as graph:
    _build(name, options, 2,
           tf1.train.GradientDescentOptimizer(0.1, use_locking=True))
    applies = _apply_ops(graph)
  assert applies
  assert all(op.get_attr('use_locking') for op in applies)


@pytest.mark.parametrize('name,options', SHARED)
def test_one_worker_takes_any_optimizer(name, options):
  """No other worker updates its variables: nothing to exclude."""
  with tf.Graph().as_default() as graph:
    _build(name, options, 1, tf1.train.GradientDescentOptimizer(0.1))
    applies = _apply_ops(graph)
  assert applies
  assert not any(op.get_attr('use_locking') for op in applies)


@pytest.mark.parametrize('name', ['sgd', 'momentum', 'rmsprop', 'adam'])
@pytest.mark.parametrize('locking', [False, True])
def test_the_benchmark_optimizers_lock_when_asked(name, locking):
  config = run_config.from_args(command_line.parse_args(['--optimizer', name]))
  with tf.Graph().as_default():
    step = tf1.train.get_or_create_global_step()
    opt = optimizers.make_optimizer(config, step, 64, use_locking=locking)
  assert opt._use_locking is locking  # pylint: disable=protected-access


def _ps_updates(graph):
  """`{op type: [op]}` of the gradient updates of variables on the PS."""
  found = {}
  for op in _apply_ops(graph, DENSE_UPDATES + SPARSE_UPDATES):
    if '/job:ps' in op.device:
      found.setdefault(op.type, []).append(op)
  return found


@pytest.mark.parametrize('name,options', SHARED)
def test_two_workers_apply_a_resource_variable_s_sparse_gradient_dense(
    name, options, variable_kind):
  """The sparse update of a resource variable takes its lock shared (see
  `locked_updates`): with two workers the update is the dense one, under
  the lock, made dense on the PS (the gradient travels sparse). A ref
  variable's sparse update honours the lock and stays sparse."""
  with tf.Graph().as_default() as graph:
    _build(name, options, 2,
           tf1.train.GradientDescentOptimizer(0.1, use_locking=True),
           sparse=True)
    updates = _ps_updates(graph)
  if variable_kind == 'resource':
    assert list(updates) == ['ResourceApplyGradientDescent']
    dense = updates['ResourceApplyGradientDescent']
    for op in dense:
      grad = op.inputs[2].op  # The dense gradient, made on the PS.
      assert '/job:ps' in grad.device, grad
      assert grad.type == 'UnsortedSegmentSum', grad
  else:
    assert list(updates) == ['ScatterSub']
  assert all(op.get_attr('use_locking')
             for ops in updates.values() for op in ops)


@pytest.mark.parametrize('name,options', SHARED)
def test_one_worker_keeps_the_sparse_update(name, options, variable_kind):
  """No other worker updates the variable: its update stays sparse."""
  with tf.Graph().as_default() as graph:
    _build(name, options, 1, tf1.train.GradientDescentOptimizer(0.1),
           sparse=True)
    updates = _ps_updates(graph)
  assert list(updates) == [
      'ResourceScatterAdd' if variable_kind == 'resource' else 'ScatterSub']
