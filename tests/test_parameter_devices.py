"""Where the parameter-side work goes: the variables of a local
parameter_server with local_parameter_device 'gpu', and the sums of a
one-stage `pscpu` across the workers of distributed_all_reduce.

Both places are computed by hand from the documented rule (least loaded
tower device by elements, first on a tie; CPU 0 of each worker) and read off
the built graph; the parameter-server step is also checked against NumPy.
"""

import numpy as np
import tensorflow as tf

import graph_walk
import variable_mgr
from variable_mgr.allreduce import layout

tf1 = tf.compat.v1

# name, elements. Least loaded tower first, first on a tie: a->0 (30, 0),
# b->1 (30, 10), c->1 (30, 20), d->1 (30, 50). Every variable on tower 0's
# device would be [0, 0, 0, 0]; one a tower in turn [0, 1, 0, 1].
SIZES = [('a', 30), ('b', 10), ('c', 10), ('d', 30)]
EXPECTED_TOWER = {'v/a': 0, 'v/b': 1, 'v/c': 1, 'v/d': 1}
LEARNING_RATE = 0.5
TOLERANCE = dict(rtol=1e-6, atol=1e-6)  # float32


def _canonical(device):
  return tf.DeviceSpec.from_string(device).to_string()


def _build(mgr, host, num_towers, tower_inputs):
  """The harness protocol (see README); tower d's loss is
  sum_v sum(v * tower_inputs[d][v's name])."""
  host.devices = mgr.get_devices()
  device_grads = []
  for d in range(num_towers):
    with mgr.create_outer_variable_scope(d), tf.name_scope('tower_%d' % d):
      with tf1.device(host.devices[d]):
        variables = [tf1.get_variable(n, [size], tf.float32,
                                      initializer=tf1.zeros_initializer())
                     for n, size in SIZES]
        loss = tf.add_n([tf.reduce_sum(v * tf.constant(tower_inputs[d][n]))
                         for v, (n, _) in zip(variables, SIZES)])
        params = mgr.trainable_variables_on_device(d)
        grads = tf.gradients(loss, params)
        refs = mgr.trainable_variables_on_device(d, writable=True)
        device_grads.append(zip(grads, refs))
  apply_devices, state = mgr.preprocess_device_grads(device_grads)
  opt = tf1.train.GradientDescentOptimizer(LEARNING_RATE)
  training_ops = []
  for i, dev in enumerate(apply_devices):
    with tf1.device(dev):
      grads = mgr.get_gradients_to_apply(i, state)
      mgr.append_apply_gradients_ops(state, opt, grads, training_ops)
  return tf.group(*training_ops)


def test_local_ps_on_gpu_spreads_variables_over_the_towers(variable_kind):
  """local_parameter_device 'gpu': each variable on the least loaded tower
  device by elements; one step is the mean gradient's, as NumPy's."""
  num_towers = 2
  rng = np.random.RandomState(0)
  inputs = [dict((n, rng.randn(size).astype(np.float32))
                 for n, size in SIZES) for _ in range(num_towers)]
  with tf.Graph().as_default():
    host = variable_mgr.LocalBenchmarkCnn(num_towers,
                                          local_parameter_device='gpu')
    mgr = variable_mgr.create('parameter_server', host)
    train = _build(mgr, host, num_towers, inputs)
    variables = dict((v.op.name, v) for v in tf1.global_variables())
    placed = dict((name, _canonical(v.device))
                  for name, v in variables.items())
    config = tf1.ConfigProto(device_count={'CPU': num_towers})
    with tf1.Session(config=config) as sess:
      sess.run(tf1.global_variables_initializer())
      sess.run(train)
      got = sess.run(variables)
  assert placed == dict(
      (name, _canonical(host.raw_devices[t]))
      for name, t in EXPECTED_TOWER.items()), placed
  for name, size in SIZES:
    mean = np.mean([inputs[d][name] for d in range(num_towers)], axis=0)
    np.testing.assert_allclose(got['v/' + name], -LEARNING_RATE * mean,
                               **TOLERANCE)


def test_distributed_all_reduce_one_stage_pscpu_sums_on_every_worker():
  """A one-stage `pscpu` across workers sums on CPU 0 of each worker
  (piece j of gradient i on worker (i + j) mod 2), never on worker 0's CPU
  alone. One all-reduce a gradient (bucket_bytes=0): the default bucket
  would hold the four gradients in one buffer, one piece a worker."""
  workers, towers = 2, 2
  num_towers = workers * towers
  inputs = [dict((n, np.ones(size, np.float32)) for n, size in SIZES)
            for _ in range(num_towers)]
  with tf.Graph().as_default() as graph:
    host = variable_mgr.ControllerBenchmarkCnn(
        {'worker': ['127.0.0.1:1', '127.0.0.1:2']}, towers)
    mgr = variable_mgr.create('distributed_all_reduce', host,
                              all_reduce_spec='pscpu', bucket_bytes=0)
    _build(mgr, host, num_towers, inputs)
    sums = [op for op, _ in graph_walk.sums(graph)
            if 'shuffle_all_reduce' in op.name]
  expected = layout.worker_cpus(host.raw_devices)
  assert [tf.DeviceSpec.from_string(d).task for d in expected] == [0, 1]
  counts = dict((_canonical(d), 0) for d in expected)
  for op in sums:
    device = _canonical(op.device)
    assert device in counts, (op.name, op.device, expected)
    counts[device] += 1
  # Four gradients, each in two pieces: one a worker CPU.
  assert list(counts.values()) == [len(SIZES)] * workers, counts
