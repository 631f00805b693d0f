"""What `variable_mgr.compat` does differently on TensorFlow 1.15 and 2.x.

Each behaviour that depends on the installed release is run here on
whichever release is installed, with the decision forced both ways where it
can be (`compat.collectives_lack_half` monkeypatched), so that 2.x runs the
1.15 path too; every test checks numbers against NumPy.

- float16 through a collective: TensorFlow 1.15's collectives refuse half,
  so there a float16 all-reduce or broadcast travels as float32 and comes
  back as float16; 2.x carries half as it is.
- A collective input without a device: TensorFlow 1.15's collective_ops
  refuse it ("Device assignment required for collective ops"); on every
  release it gets an identity on its tower's device, and an input with a
  device is taken as it is.
"""


import numpy as np
import pytest
import tensorflow as tf

import variable_mgr
from variable_mgr import compat
from variable_mgr.allreduce import algorithms
from variable_mgr.allreduce import layout
from variable_mgr.benchmark.runs import in_process
from variable_mgr.strategies import collective_all_reduce

tf1 = tf.compat.v1

# What the installed release does, before any test forces it.
LACKS_HALF = compat.collectives_lack_half()
HALF = dict(rtol=2e-3, atol=4e-3)
SHAPES = [(), (1,), (7,), (3, 5)]
LEARNING_RATE = 0.5


def _lack_half(monkeypatch, value):
  monkeypatch.setattr(compat, 'collectives_lack_half', lambda: value)


def _config(num_cpus):
  # A collective that fails on one device must not leave the others waiting.
  return tf1.ConfigProto(device_count={'CPU': num_cpus},
                         operation_timeout_in_ms=60000)


def _same_device(a, b):
  return layout.device_key(a) == layout.device_key(b)


def _ops(graph, op_type):
  return [op for op in graph.get_operations() if op.type == op_type]


def _all_reduce(arrays, placed=True):
  """`algorithms.collective` of `arrays[d][i]` fed on `/cpu:d` (or, with
  `placed=False`, built outside any device scope); returns
  `(graph, inputs, outputs, values)`."""
  k = len(arrays)
  devices = ['/cpu:%d' % d for d in range(k)]
  graph = tf.Graph()
  with graph.as_default():
    feeds = {}
    inputs = []
    for d in range(k):
      with tf1.device(devices[d] if placed else None):
        row = [tf1.placeholder(a.dtype, a.shape) for a in arrays[d]]
      feeds.update(zip(row, arrays[d]))
      inputs.append(row)
    outputs = algorithms.collective(inputs, devices)
  with tf1.Session(graph=graph, config=_config(k)) as sess:
    values = sess.run(outputs, feed_dict=feeds)
  return graph, inputs, outputs, values


def _random(k, dtype, seed=0):
  rng = np.random.RandomState(seed)
  return [[rng.uniform(-1, 1, size=s).astype(dtype) for s in SHAPES]
          for _ in range(k)]


def _half(*values):
  return np.array(values, np.float16)


def _assert_sums(arrays, values, dtype, tolerance):
  for i in range(len(arrays[0])):
    expected = np.sum([row[i].astype(np.float64) for row in arrays], axis=0)
    for d, row in enumerate(values):
      assert row[i].dtype == dtype, (d, i, row[i].dtype)
      np.testing.assert_allclose(row[i], expected, err_msg='%d %d' % (d, i),
                                 **tolerance)


# -- float16 through collectives ----------------------------------------------


def test_the_probe_says_tensorflow_1_lacks_half():
  assert LACKS_HALF == (int(tf.__version__.split('.')[0]) == 1)


def test_float16_all_reduce_travels_as_float32_where_collectives_lack_half(
    monkeypatch):
  _lack_half(monkeypatch, True)
  # In float16, 2048 + 1 rounds back to 2048 (the spacing there is 2): the
  # sum 2050 comes out only if the towers' values are added in float32.
  arrays = [[_half(2048., 1.), _half(1., 1., 1.)],
            [_half(1., 2048.), _half(-1., -1., -1.)],
            [_half(1., 1.), _half(.5, .5, .5)]]
  graph, _, outputs, values = _all_reduce(arrays)
  reduces = _ops(graph, 'CollectiveReduce')
  assert len(reduces) == 3 * 2
  for op in reduces:
    assert op.get_attr('T') == tf.float32
    widen = op.inputs[0].op
    assert widen.type == 'Cast' and widen.inputs[0].dtype == tf.float16
    assert _same_device(widen.device, op.device)
    assert [c.type for c in op.outputs[0].consumers()] == ['Cast']
  for d, row in enumerate(outputs):
    assert [t.dtype for t in row] == [tf.float16, tf.float16]
    assert _same_device(row[0].device, '/cpu:%d' % d)
    np.testing.assert_array_equal(values[d][0], [2050., 2050.])
    np.testing.assert_array_equal(values[d][1], [0.5, 0.5, 0.5])


def test_float16_all_reduce_carries_half_where_collectives_have_it(
    monkeypatch):
  """Forced to carry half: the graph has no cast, and the installed
  release either sums it (2.x) or refuses it at run time as the probe says
  (1.15)."""
  _lack_half(monkeypatch, False)
  arrays = _random(3, np.float16)
  if LACKS_HALF:
    with pytest.raises(tf.errors.InternalError, match='datatype'):
      _all_reduce(arrays)
    return
  graph, _, _, values = _all_reduce(arrays)
  assert not _ops(graph, 'Cast')
  reduces = _ops(graph, 'CollectiveReduce')
  assert len(reduces) == 3 * len(SHAPES)
  assert all(op.get_attr('T') == tf.float16 for op in reduces)
  _assert_sums(arrays, values, np.float16, HALF)


@pytest.mark.parametrize('lack', [True, None], ids=['widened', 'installed'])
def test_float16_broadcast_is_exact(monkeypatch, lack):
  if lack is not None:
    _lack_half(monkeypatch, lack)
  wide = LACKS_HALF if lack is None else lack
  value = np.array([[1.5, -2.0e-3, 65504.], [6.1e-5, 0., -3.25]], np.float16)
  graph = tf.Graph()
  with graph.as_default():
    with tf1.device('/cpu:0'):
      source = tf1.placeholder(tf.float16, value.shape)
    sent = compat.collective_broadcast_send(source, 2, 1, 1, '/cpu:0')
    received = compat.collective_broadcast_recv(value.shape, tf.float16, 2, 1,
                                                1, '/cpu:1')
  carried = tf.float32 if wide else tf.float16
  for op_type in ('CollectiveBcastSend', 'CollectiveBcastRecv'):
    (op,) = _ops(graph, op_type)
    assert op.get_attr('T') == carried
  assert _same_device(received.device, '/cpu:1')
  with tf1.Session(graph=graph, config=_config(2)) as sess:
    got_sent, got = sess.run([sent, received], feed_dict={source: value})
  assert got.dtype == got_sent.dtype == np.float16
  np.testing.assert_array_equal(got, value)
  np.testing.assert_array_equal(got_sent, value)


# -- Collective inputs without a device ---------------------------------------


@pytest.mark.parametrize('dtype', [np.float32, np.float16])
def test_input_without_a_device_gets_an_identity_on_its_tower(dtype):
  arrays = _random(2, dtype, seed=1)
  graph, inputs, _, values = _all_reduce(arrays, placed=False)
  assert all(not x.device for row in inputs for x in row)
  for op in _ops(graph, 'CollectiveReduce'):
    source = op.inputs[0].op
    assert source.type in ('Identity', 'Cast'), source.type
    assert source.device and _same_device(source.device, op.device)
  _assert_sums(arrays, values, dtype,
               HALF if dtype == np.float16 else dict(rtol=1e-6, atol=1e-6))


def test_input_with_a_device_is_taken_as_it_is():
  arrays = _random(2, np.float32, seed=2)
  graph, inputs, _, values = _all_reduce(arrays)
  assert not _ops(graph, 'Identity')
  for op in _ops(graph, 'CollectiveReduce'):
    assert op.inputs[0].op.type == 'Placeholder'
    assert _same_device(op.inputs[0].device, op.device)
  _assert_sums(arrays, values, np.float32, dict(rtol=1e-6, atol=1e-6))


# -- The collective_all_reduce strategy on two workers of one tower ----------


class _Host(object):
  """Worker `task_index` of a worker-only cluster, one CPU tower."""

  def __init__(self, cluster, task_index):
    self.cluster = cluster
    self.task_index = task_index
    self.num_workers = len(cluster.job_tasks('worker'))
    self.raw_devices = ['/job:worker/replica:0/task:%d/cpu:0' % task_index]
    self.devices = list(self.raw_devices)
    self.cpu_device = self.param_server_device = self.raw_devices[0]
    self.local_parameter_device_flag = 'cpu'
    self.num_gpus = 1


INITIAL = [np.array([1.5, -0.25, 3.0], np.float16),
           np.array([7.0, 7.0, 7.0], np.float16)]
GRADIENTS = [np.array([0.5, 1.0, -2.0], np.float16),
             np.array([0.25, -0.75, 1.0], np.float16)]


def _worker_graph(cluster, task_index):
  """Worker `task_index`'s graph: its one tower's float16 variable starts
  at INITIAL[task], its gradient GRADIENTS[task] built outside any device
  scope. Returns (graph, variable, init, post-init ops, training ops)."""
  host = _Host(cluster, task_index)
  graph = tf.Graph()
  with graph.as_default():
    mgr = variable_mgr.create('collective_all_reduce', host)
    grad = tf.constant(GRADIENTS[task_index])
    assert not grad.device
    with mgr.create_outer_variable_scope(0), tf1.device(host.devices[0]):
      w = tf1.get_variable('w', initializer=tf.constant(INITIAL[task_index]))
    apply_devices, state = mgr.preprocess_device_grads([[(grad, w)]])
    opt = tf1.train.GradientDescentOptimizer(
        tf.constant(LEARNING_RATE, tf.float16))
    training_ops = []
    with tf1.device(apply_devices[0]):
      mgr.append_apply_gradients_ops(
          state, opt, mgr.get_gradients_to_apply(0, state), training_ops)
    post_init = mgr.get_post_init_ops()
    init = tf1.global_variables_initializer()
  return graph, w, init, post_init, training_ops


@pytest.mark.parametrize('lack', [True, None], ids=['widened', 'installed'])
def test_strategy_float16_step_with_device_less_gradients(
    monkeypatch, variable_kind, lack):
  """Two workers of one tower, each a server of this process: worker 1
  starts from worker 0's values (the broadcast), and one step applies the
  mean of the workers' gradients, which the harness built outside any
  device scope."""
  import threading  # pylint: disable=g-import-not-at-top
  if lack is not None:
    _lack_half(monkeypatch, lack)
  wide = LACKS_HALF if lack is None else lack
  carried = tf.float32 if wide else tf.float16
  config = collective_all_reduce.set_collective_group_leader(_config(1))
  # The servers first: start_servers picks new ports when one is taken.
  cluster, servers = in_process.start_servers([('worker', 2)],
                                              lambda job, k: config)
  cluster = tf1.train.ClusterSpec(cluster)
  servers = servers['worker']
  built = [_worker_graph(cluster, k) for k in range(2)]
  for graph, _, _, _, _ in built:
    for op_type in ('CollectiveReduce', 'CollectiveBcastSend',
                    'CollectiveBcastRecv'):
      ops = _ops(graph, op_type)
      assert all(op.get_attr('T') == carried for op in ops), op_type
    assert len(_ops(graph, 'CollectiveReduce')) == 1
    for op in _ops(graph, 'CollectiveReduce'):
      assert op.inputs[0].device
  results = [None, None]

  def work(k):
    graph, w, init, post_init, training_ops = built[k]
    with tf1.Session(servers[k].target, graph=graph, config=config) as sess:
      sess.run(init)
      sess.run(post_init)
      started = sess.run(w)
      sess.run(training_ops)
      results[k] = (started, sess.run(w))

  threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
  for thread in threads:
    thread.start()
  for thread in threads:
    thread.join(120)
  assert all(r is not None for r in results), results
  mean = (GRADIENTS[0].astype(np.float64) + GRADIENTS[1]) / 2
  expected = INITIAL[0] - LEARNING_RATE * mean
  for started, final in results:
    np.testing.assert_array_equal(started, INITIAL[0])
    assert final.dtype == np.float16
    np.testing.assert_allclose(final, expected, **HALF)


class _NotAV1Optimizer(object):
  """An optimizer of another library: it has no `use_locking` setting."""


def test_lock_updates_makes_a_v1_optimizer_lock_and_says_so():
  opt = tf.compat.v1.train.GradientDescentOptimizer(0.1)
  assert compat.optimizer_locks(opt) is False
  assert compat.lock_updates(opt) is True
  assert compat.optimizer_locks(opt) is True
  other = _NotAV1Optimizer()
  assert compat.optimizer_locks(other) is None
  assert compat.lock_updates(other) is False
  assert compat.optimizer_locks(other) is None
