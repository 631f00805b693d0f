"""Where the all-reduce algorithms do their sums: the routes their docstrings
promise, read off the graph, with the sums checked against NumPy.

The sums alone cannot tell these routes apart (every route adds the same
numbers), but the route is what balances the links: a ring that runs the
wrong way, or a shard summed on the wrong parameter device, loads one link
twice and leaves another idle.
"""

import functools

import numpy as np
import pytest
import tensorflow as tf

from variable_mgr.allreduce import algorithms
from variable_mgr.allreduce import layout

import allreduce_testlib as testlib
import graph_walk


def _device_index(device):
  return tf.DeviceSpec.from_string(layout.device_key(device)).device_index


def _hop_directions(graph, k):
  """(forward, backward) counts of the ring's additions: an addition on
  device d whose running sum comes from device d - 1 is a forward hop."""
  forward = backward = 0
  for op in graph.get_operations():
    if (op.type not in graph_walk.ADD_TYPES or
        not op.name.startswith('ring_all_reduce')):
      continue
    here = _device_index(op.device)
    came_from = _device_index(op.inputs[0].op.device)
    if (came_from + 1) % k == here:
      forward += 1
    elif (came_from - 1) % k == here:
      backward += 1
    else:
      raise AssertionError('%s adds a sum from device %d on device %d' %
                           (op.name, came_from, here))
  return forward, backward


@pytest.mark.parametrize('num_rings', [1, 2, 3, 4])
def test_rings_alternate_their_direction(num_rings):
  """Ring r runs forward when r is even and backward when it is odd, so
  that with several rings both directions of every link carry chunks."""
  k = 3
  devices = testlib.cpu_devices(k)
  # One tensor whose every chunk (num_rings slices x k chunks) has elements.
  arrays = [[np.random.RandomState(d).uniform(-1, 1, [num_rings * k * 2])
             .astype(np.float32)] for d in range(k)]
  outputs, values = testlib.build_and_run(
      functools.partial(algorithms.ring, num_rings=num_rings), arrays,
      devices)
  testlib.assert_sums(arrays, outputs, values, devices)
  hops_a_ring = k * (k - 1)   # k chunks, k - 1 hops each
  forward_rings = (num_rings + 1) // 2
  assert _hop_directions(outputs[0][0].graph, k) == (
      forward_rings * hops_a_ring, (num_rings - forward_rings) * hops_a_ring)


def test_shuffle_sums_piece_j_of_tensor_i_on_parameter_device_i_plus_j():
  """shuffle's docstring: piece j of tensor i is summed on
  `param_devices[(i + j) % len(param_devices)]`; with three parameter
  devices every device sums one piece of every tensor."""
  k, num_params = 2, 3
  devices = testlib.cpu_devices(k)
  param_devices = testlib.cpu_devices(num_params)
  arrays = testlib.random_arrays(3, k, np.float32, shapes=[(6,), (9,)])
  outputs, values = testlib.build_and_run(
      functools.partial(algorithms.shuffle, param_devices=param_devices),
      arrays, devices, num_cpus=num_params)
  testlib.assert_sums(arrays, outputs, values, devices)
  sums = [_device_index(op.device)
          for op, _ in graph_walk.sums(outputs[0][0].graph)
          if op.name.startswith('shuffle_all_reduce')]
  assert sums == [(i + j) % num_params for i in range(2)
                  for j in range(num_params)]
