"""Which tower of each worker carries a tensor across workers in a
two-stage all-reduce: tensor i goes out from local tower i mod
towers_per_worker of every worker (upstream's choice), so the outer stage's
traffic is spread over the workers' towers instead of all leaving through
the first one.

Read off the built graph of `copy/copy` (the outer sum of tensor i is the
one whose terms are the representatives' inner sums) and compared with
that closed form; the sums themselves are checked against NumPy by
`test_distributed_all_reduce`.
"""

import collections

import pytest
import tensorflow as tf

from variable_mgr.allreduce import layout
from variable_mgr.allreduce import spec as spec_lib

import graph_walk

WORKERS = 2


def _devices(towers_per_worker):
  return ['/job:worker/replica:0/task:%d/device:CPU:%d' % (w, c)
          for w in range(WORKERS) for c in range(towers_per_worker)]


@pytest.mark.parametrize('towers_per_worker,num_tensors', [(2, 4), (3, 5)])
def test_tensor_i_crosses_from_local_tower_i_mod_towers(towers_per_worker,
                                                        num_tensors):
  devices = _devices(towers_per_worker)
  with tf.Graph().as_default() as graph:
    # Tensor i holds i + 1 elements: its sums can be told by their shape.
    inputs = [[tf.zeros([i + 1]) for i in range(num_tensors)]
              for _ in devices]
    spec_lib.build_all_reduce('copy/copy', inputs, devices)
    sums = graph_walk.sums(graph)
  crossing = collections.defaultdict(list)  # tensor -> inputs' devices
  for op, terms in sums:
    workers = set(layout.worker_of(x.device) for x in terms)
    if len(workers) == WORKERS:
      tensor = op.outputs[0].shape.as_list()[0] - 1
      crossing[tensor].extend(
          tf.DeviceSpec.from_string(x.device) for x in terms)
  assert sorted(crossing) == list(range(num_tensors))
  for i in range(num_tensors):
    got = sorted((spec.task, spec.device_index) for spec in crossing[i])
    assert got == [(w, i % towers_per_worker) for w in range(WORKERS)], (
        'tensor %d' % i)
