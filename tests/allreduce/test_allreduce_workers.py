"""Every --all_reduce_spec form run across two workers of two towers each.

`spec` groups devices into workers by `(job, replica, task)`, so the towers
are CPUs of two in-process gRPC servers, `/job:worker/task:{0,1}`, with three
virtual CPUs each: towers on CPU 1 and 2, CPU 0 left to `pscpu`. Tower d
sends `2**d * (i + 1) + 16 * j` as element j of tensor i, so every sum is an
exact integer in float32 and a sum that misses a tower, or a worker, misses
a distinct amount:

    sum over d of tensor i, element j = (2**4 - 1) * (i + 1) + 4 * 16 * j.

NCCL has no CPU kernel: its two-stage forms are checked by graph structure.
"""


import numpy as np
import pytest
import tensorflow as tf

from variable_mgr.allreduce import layout
from variable_mgr.allreduce import spec as spec_lib
from variable_mgr.benchmark.runs import in_process

tf1 = tf.compat.v1

NUM_WORKERS, TOWERS_PER_WORKER = 2, 2
DEVICES = ['/job:worker/replica:0/task:%d/device:CPU:%d' % (w, c)
           for w in range(NUM_WORKERS) for c in range(1, TOWERS_PER_WORKER + 1)]
# Element counts 0, 0, 1, 1, 7, 8, 15, 16, 41: around the range limits below.
SHAPES = [(0,), (2, 0), (), (1,), (7,), (8,), (3, 5), (4, 4), (41,)]

# Upstream's two-stage names (nccl/xring, nccl/rechd, nccl/pscpu, pscpu/pscpu)
# and more: every name as the inner stage under a ring, every name as the
# outer stage over pscpu, and each name on both sides, with counts.
NAMES = ['copy', 'xring', 'pscpu', 'psgpu', 'rechd', 'hcopy']
SINGLE = NAMES + ['xring#2', 'pscpu#2', 'psgpu#3']
TWO_STAGE = sorted(set(
    ['%s/xring' % n for n in NAMES] + ['%s/pscpu' % n for n in NAMES]
    + ['%s/%s' % (n, n) for n in NAMES]
    + ['pscpu/pscpu#2', 'xring#2/psgpu#2', 'rechd/xring#3', 'hcopy/copy']))
RANGES = ['pscpu:7:xring/xring', 'copy:1:pscpu/pscpu:16:xring#2',
          'pscpu/pscpu:8:rechd:1K:xring/copy', 'xring/rechd:15:hcopy/psgpu']
# Collective ops keep a group key's size in the servers for good, so each of
# these builds on a cluster of its own (the keys restart at 1 in each graph).
COLLECTIVE = ['collective', 'collective/xring', 'pscpu/collective',
              'collective/collective', 'copy:8:collective/rechd']



def _server_config():
  config = tf1.ConfigProto(device_count={'CPU': TOWERS_PER_WORKER + 1},
                           operation_timeout_in_ms=60000)
  config.experimental.collective_group_leader = (
      '/job:worker/replica:0/task:0')
  return config


def _start_cluster():
  """Starts the workers' servers (they live until the process exits) and
  returns worker 0's target."""
  _, servers = in_process.start_servers(
      [('worker', NUM_WORKERS)], lambda job, k: _server_config())
  return servers['worker'][0].target


@pytest.fixture(scope='module')
def target():
  return _start_cluster()


def _inputs():
  return [[((2.0 ** d) * (i + 1) + 16 * np.arange(int(np.prod(s)))).reshape(
      s).astype(np.float32) for i, s in enumerate(SHAPES)]
          for d in range(len(DEVICES))]


def _expected():
  k = len(DEVICES)
  return [(((2 ** k) - 1) * (i + 1) + 16 * k * np.arange(
      int(np.prod(s)))).reshape(s).astype(np.float32)
          for i, s in enumerate(SHAPES)]


def _run(reduce_fn, target):
  """`reduce_fn(inputs, DEVICES)` on the cluster: the output tensors and
  their values."""
  graph = tf.Graph()
  with graph.as_default():
    inputs = []
    for device, row in zip(DEVICES, _inputs()):
      with tf.device(device):
        inputs.append([tf.constant(a) for a in row])
    outputs = reduce_fn(inputs, DEVICES)
  with tf1.Session(target, graph=graph, config=_server_config()) as sess:
    return outputs, sess.run(outputs)


def _check_sums(outputs, values):
  """Every tower holds the closed-form sum (NumPy's, exactly) on its own
  device."""
  expected = _expected()
  numpy_sums = np.sum(np.array(_inputs(), dtype=object), axis=0)
  for i, (closed, summed) in enumerate(zip(expected, numpy_sums)):
    np.testing.assert_array_equal(closed, summed, err_msg='tensor %d' % i)
  for d, device in enumerate(DEVICES):
    for i, want in enumerate(expected):
      got = np.asarray(values[d][i])
      assert got.dtype == np.float32 and got.shape == want.shape, (d, i)
      np.testing.assert_array_equal(got, want,
                                    err_msg='tower %d tensor %d' % (d, i))
      assert (layout.device_key(outputs[d][i].device)
              == layout.device_key(device)), (d, i, outputs[d][i].device)


@pytest.mark.parametrize('text', SINGLE + TWO_STAGE + RANGES)
def test_spec_sums_across_two_workers(text, target):
  _check_sums(*_run(spec_lib.all_reduce_fn(text), target))


@pytest.mark.parametrize('text', COLLECTIVE)
def test_collective_spec_sums_across_two_workers(text):
  _check_sums(*_run(spec_lib.all_reduce_fn(text), _start_cluster()))


def test_a_sum_without_the_outer_stage_fails_the_check(target):
  """The check's own control: each worker's sum alone (what an outer stage
  that drops the other worker's part leaves) is refused."""

  def per_worker_only(tower_tensors, devices):
    half = TOWERS_PER_WORKER
    return (spec_lib.build_all_reduce('pscpu', tower_tensors[:half],
                                      devices[:half])
            + spec_lib.build_all_reduce('pscpu', tower_tensors[half:],
                                        devices[half:]))

  outputs, values = _run(per_worker_only, target)
  with pytest.raises(AssertionError, match='tower 0 tensor 2'):
    _check_sums(outputs, values)


@pytest.mark.parametrize('outer', ['xring', 'rechd', 'pscpu'])
def test_nccl_two_stages_graph(outer):
  """'nccl/<outer>' on two workers of two GPUs: one NCCL all-reduce a
  tensor on each worker, over that worker's GPUs only; the outer stage
  reads one NCCL output a worker; every output on its tower's GPU."""
  devices = ['/job:worker/replica:0/task:%d/device:GPU:%d' % (w, g)
             for w in range(NUM_WORKERS) for g in range(TOWERS_PER_WORKER)]
  shapes = [(6,), (2, 3), (5,)]
  with tf.Graph().as_default() as graph:
    inputs = []
    for device in devices:
      with tf.device(device):
        inputs.append([tf.zeros(s) for s in shapes])
    outputs = spec_lib.build_all_reduce('nccl/' + outer, inputs, devices)
    ops = graph.get_operations()
  nccl = [op for op in ops if op.type == 'NcclAllReduce']
  assert len(nccl) == len(devices) * len(shapes)
  by_group = {}
  for op in nccl:
    by_group.setdefault(op.get_attr('shared_name'), []).append(op)
  assert len(by_group) == NUM_WORKERS * len(shapes)
  for group in by_group.values():
    workers = set(layout.worker_of(op.device) for op in group)
    assert len(group) == TOWERS_PER_WORKER and len(workers) == 1
    for op in group:
      assert layout.worker_of(op.inputs[0].device) == list(workers)[0]
  # Per worker and tensor, the outer stage reads one NCCL output; the
  # others are control inputs of the copies back (every output of one NCCL
  # all-reduce must run).
  read = set(x.op.name for op in ops for x in op.inputs)
  controls = set(c.name for op in ops for c in op.control_inputs)
  for group in by_group.values():
    assert len([op for op in group if op.name in read]) == 1
    assert all(op.name in controls for op in group if op.name not in read)
  for d, row in enumerate(outputs):
    for t in row:
      assert layout.device_key(t.device) == layout.device_key(devices[d])
