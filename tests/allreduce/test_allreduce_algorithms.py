"""Every all-reduce algorithm against the NumPy sum, on virtual CPU towers."""

import functools

import numpy as np
import pytest
import tensorflow as tf

from variable_mgr import errors as core_errors
from variable_mgr.allreduce import algorithms
from variable_mgr.allreduce import errors
from variable_mgr.allreduce import traffic

import allreduce_testlib as testlib

ALGORITHMS = {
    'copy': algorithms.copy,
    'ring': algorithms.ring,
    'ring#2': functools.partial(algorithms.ring, num_rings=2),
    'shuffle_cpu': lambda t, d: algorithms.shuffle(t, d, ['/cpu:0']),
    'shuffle_cpu#2': lambda t, d: algorithms.shuffle(t, d, ['/cpu:0'], 2),
    'shuffle_towers': lambda t, d: algorithms.shuffle(t, d, d),
    'halving_doubling': algorithms.halving_doubling,
    'hierarchical_copy': algorithms.hierarchical_copy,
    'hierarchical_copy#3': functools.partial(algorithms.hierarchical_copy,
                                             num_groups=3),
    'collective': algorithms.collective,
}
TOWER_COUNTS = [1, 2, 3, 5, 8]

# Variants that only change a parameter run in float32 alone.
VARIANTS = ('ring#2', 'shuffle_cpu#2', 'hierarchical_copy#3')

# Full matrix for float32; float16 and float64 on two tower counts.
CASES = ([(name, k, np.float32) for name in ALGORITHMS for k in TOWER_COUNTS]
         + [(name, k, dtype) for name in ALGORITHMS if name not in VARIANTS
            for k in (2, 5) for dtype in (np.float16, np.float64)])


def test_three_rings():
  devices = testlib.cpu_devices(3)
  arrays = testlib.random_arrays(5, 3, np.float32)
  outputs, values = testlib.build_and_run(
      functools.partial(algorithms.ring, num_rings=3), arrays, devices)
  testlib.assert_sums(arrays, outputs, values, devices)


@pytest.mark.parametrize('name,k,dtype', CASES)
def test_sum_on_every_tower(name, k, dtype):
  devices = testlib.cpu_devices(k)
  arrays = testlib.random_arrays(k * 7 + len(name), k, dtype)
  outputs, values = testlib.build_and_run(ALGORITHMS[name], arrays, devices)
  testlib.assert_sums(arrays, outputs, values, devices)


def test_two_by_two_picture():
  devices = testlib.cpu_devices(2)
  a, b, c, d = [np.full([2], v, np.float32) for v in (1., 2., 10., 20.)]
  _, values = testlib.build_and_run(algorithms.ring, [[a, b], [c, d]],
                                    devices)
  np.testing.assert_array_equal(np.array(values),
                                [[a + c, b + d], [a + c, b + d]])


def test_hierarchical_copy_keeps_last_tower_of_odd_count():
  # Upstream's version left the last device out for odd counts: tower 4
  # would miss from the sum.
  devices = testlib.cpu_devices(5)
  arrays = [[np.full([3], 10.0 ** d, np.float64)] for d in range(5)]
  outputs, values = testlib.build_and_run(algorithms.hierarchical_copy,
                                          arrays, devices)
  for d in range(5):
    np.testing.assert_array_equal(values[d][0], np.full([3], 11111.0))
  testlib.assert_sums(arrays, outputs, values, devices)


def test_no_tensors():
  devices = testlib.cpu_devices(3)
  for fn in ALGORITHMS.values():
    with tf.Graph().as_default():
      assert fn([[], [], []], devices) == [[], [], []]


@pytest.mark.parametrize('name', ['ring', 'halving_doubling',
                                  'shuffle_towers'])
def test_bandwidth_optimal_algorithms_meet_ring_bound(name):
  k = 4
  devices = testlib.cpu_devices(k)
  num_bytes = 4 * 6 * k  # float32, divisible into k equal chunks
  graph = tf.Graph()
  with graph.as_default():
    inputs = []
    for d in range(k):
      with tf.device(devices[d]):
        inputs.append([tf.compat.v1.placeholder_with_default(
            np.ones([6 * k], np.float32), [6 * k])])
    outputs = ALGORITHMS[name](inputs, devices)
    with tf.device(devices[0]):
      step = tf.group(*[row[0] for row in outputs])
  with tf.compat.v1.Session(
      graph=graph,
      config=traffic.meter_config(testlib.session_config(k))) as sess:
    counts = traffic.measure(sess, step)
  bound = traffic.ring_lower_bound(k, num_bytes)
  assert len(counts) == k
  for device_traffic in counts.values():
    assert device_traffic.sent_bytes == bound
    assert device_traffic.received_bytes == bound


def test_bad_layout_is_refused():
  devices = testlib.cpu_devices(2)
  with tf.Graph().as_default():
    x = tf.zeros([3])
    y = tf.zeros([4])
    z = tf.zeros([3], tf.float64)
    with pytest.raises(errors.TowerTensorsError, match='3 towers'):
      algorithms.ring([[x], [x], [x]], devices)
    with pytest.raises(errors.TowerTensorsError, match='at least one'):
      algorithms.ring([], [])
    with pytest.raises(errors.TowerTensorsError, match='tower 1 has 2'):
      algorithms.copy([[x], [x, x]], devices)
    with pytest.raises(errors.TowerTensorsError, match='shape'):
      algorithms.copy([[x], [y]], devices)
    with pytest.raises(errors.TowerTensorsError, match='float64'):
      algorithms.copy([[x], [z]], devices)


def test_unknown_shape_is_refused_by_chunking_algorithms():
  devices = testlib.cpu_devices(2)
  with tf.Graph().as_default():
    x = tf.compat.v1.placeholder(tf.float32, [None])
    with pytest.raises(errors.StaticShapeError, match='not fully defined'):
      algorithms.ring([[x], [x]], devices)
    with pytest.raises(errors.StaticShapeError, match='not fully defined'):
      algorithms.halving_doubling([[x], [x]], devices)
    algorithms.copy([[x], [x]], devices)  # needs no static shape


@pytest.mark.parametrize('call,match', [
    (lambda t, d: algorithms.ring(t, d, num_rings=0), 'num_rings'),
    (lambda t, d: algorithms.shuffle(t, d, []), 'parameter device'),
    (lambda t, d: algorithms.shuffle(t, d, d, num_shards=0), 'num_shards'),
    (lambda t, d: algorithms.hierarchical_copy(t, d, num_groups=0),
     'num_groups'),
    (lambda t, d: algorithms.collective(t, d, group_key=0), 'group_key'),
    (lambda t, d: algorithms.collective(t, d, instance_key_start=0),
     'instance_key_start'),
    (lambda t, d: algorithms.collective(t, [d[0], d[0]]), 'distinct'),
])
def test_bad_option_is_refused(call, match):
  devices = testlib.cpu_devices(2)
  with tf.Graph().as_default():
    x = tf.zeros([3])
    with pytest.raises(errors.AlgorithmOptionError, match=match):
      call([[x], [x]], devices)


def test_collective_keys_are_allocated_in_build_order():
  devices = testlib.cpu_devices(2)
  with tf.Graph().as_default():
    x = tf.zeros([3])
    first = algorithms.collective([[x, x], [x, x]], devices)
    second = algorithms.collective([[x], [x]], devices)
    other_group = algorithms.collective([[x], [x]], devices[::-1])
    attrs = [(t.op.get_attr('group_key'), t.op.get_attr('instance_key'))
             for t in (first[0][0], first[0][1], second[1][0],
                       other_group[0][0])]
  assert attrs == [(1, 1), (1, 2), (1, 3), (2, 4)]


def test_collective_takes_the_keys_it_is_given():
  devices = testlib.cpu_devices(2)
  with tf.Graph().as_default():
    x = tf.zeros([3])
    outputs = algorithms.collective([[x, x], [x, x]], devices, group_key=7,
                                    instance_key_start=40)
    attrs = [[(t.op.get_attr('group_key'), t.op.get_attr('instance_key'))
              for t in tower] for tower in outputs]
  assert attrs == [[(7, 40), (7, 41)], [(7, 40), (7, 41)]]


@pytest.mark.parametrize('name', ['ring', 'ring#2', 'halving_doubling',
                                  'collective'])
@pytest.mark.parametrize('k', [2, 3])
def test_an_empty_tensor_is_handed_back_without_an_op(name, k):
  """An empty tensor has nothing to add: the algorithm returns each
  tower's own tensor and builds nothing for it (no transfer)."""
  devices = testlib.cpu_devices(k)
  with tf.Graph().as_default() as graph:
    inputs = []
    for device in devices:
      with tf.device(device):
        inputs.append([tf.zeros([2, 0]), tf.ones([3])])
    before = len(graph.get_operations())
    outputs = ALGORITHMS[name](inputs, devices)
    built = graph.get_operations()[before:]
  for d in range(k):
    assert outputs[d][0] is inputs[d][0]
  for op in built:
    assert not any(t is row[0] for t in op.inputs for row in inputs), op.name


def _gpu_inputs(k, shapes):
  devices = ['/gpu:%d' % d for d in range(k)]
  inputs = []
  for d in range(k):
    with tf.device(devices[d]):
      inputs.append([tf.zeros(shape) for shape in shapes])
  return inputs, devices


@pytest.mark.parametrize('k', [2, 3, 8])
def test_nccl_graph_structure(k):
  shapes = [(), (4, 3), (0,), (17,)]
  with tf.Graph().as_default() as graph:
    inputs, devices = _gpu_inputs(k, shapes)
    outputs = algorithms.nccl(inputs, devices)
    nccl_ops = [op for op in graph.get_operations()
                if op.type == 'NcclAllReduce']
  non_empty = len([s for s in shapes if np.prod(s) != 0])
  assert len(nccl_ops) == k * non_empty
  per_device = {}
  for op in nccl_ops:
    key = testlib.layout.device_key(op.device)
    per_device[key] = per_device.get(key, 0) + 1
  assert per_device == dict((testlib.layout.device_key(d), non_empty)
                            for d in devices)
  for d in range(k):
    for i, shape in enumerate(shapes):
      assert (testlib.layout.device_key(outputs[d][i].device)
              == testlib.layout.device_key(devices[d]))
      assert outputs[d][i].shape == shape


def test_nccl_refuses_cpu_devices():
  with tf.Graph().as_default():
    x = tf.zeros([3])
    with pytest.raises(core_errors.NcclDeviceError, match='not GPUs'):
      algorithms.nccl([[x], [x]], testlib.cpu_devices(2))


def _num_gpus():
  return len(tf.config.experimental.list_physical_devices('GPU'))


@pytest.mark.gpu
@pytest.mark.skipif(_num_gpus() < 2,
                    reason='NCCL all-reduce runs only on two or more GPUs; '
                    '%d visible' % _num_gpus())
def test_nccl_runs_on_gpus():
  k = _num_gpus()
  devices = ['/gpu:%d' % d for d in range(k)]
  arrays = testlib.random_arrays(3, k, np.float32,
                                 shapes=[(), (5,), (3, 4), (1000,)])
  graph = tf.Graph()
  with graph.as_default():
    inputs = []
    for d in range(k):
      with tf.device(devices[d]):
        inputs.append([tf.constant(a) for a in arrays[d]])
    outputs = algorithms.nccl(inputs, devices)
  with tf.compat.v1.Session(graph=graph) as sess:
    values = sess.run(outputs)
  testlib.assert_sums(arrays, outputs, values, devices)
