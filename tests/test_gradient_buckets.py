"""collective_all_reduce's buckets: the plan, and the graph a worker builds
(which gradients share a collective, in what order, and what each bucket's
collective waits for). The numbers are checked against NumPy with real
workers in tests/distributed/test_collective_hierarchy.py."""

import pytest
import tensorflow as tf

import graph_walk
import variable_mgr
from variable_mgr import errors
from variable_mgr.strategies import collective_all_reduce
from variable_mgr.strategies import gradient_buckets

tf1 = tf.compat.v1
Bucket = gradient_buckets.Bucket
F32, F16 = tf.float32, tf.float16
BASE = collective_all_reduce.GRADIENT_INSTANCE_KEY_BASE


def _plan(sizes, order, bucket_bytes, dtypes=None):
  dtypes = dtypes or [F32] * len(sizes)
  return gradient_buckets.plan(dict(enumerate(sizes)), dict(enumerate(dtypes)),
                               order, bucket_bytes)


def test_plan_fills_buckets_in_sending_order():
  # w0 48 B, b0 12, w1 24, b1 8, sent last layer first.
  sizes = [48, 12, 24, 8]
  assert _plan(sizes, [3, 2, 1, 0], 40) == [
      Bucket([3, 2], 2), Bucket([1], 1), Bucket([0], 0)]
  assert _plan(sizes, [3, 2, 1, 0], 1 << 20) == [Bucket([3, 2, 1, 0], 0)]
  # Exactly full: 8 + 24 = 32.
  assert _plan(sizes, [3, 2, 1, 0], 32)[0] == Bucket([3, 2], 2)
  assert _plan(sizes, [3, 2, 1, 0], 31)[0] == Bucket([3], 3)


def test_plan_without_buckets_is_one_gradient_a_collective():
  assert _plan([48, 12, 24, 8], [0, 1, 2, 3], 0) == [
      Bucket([i], i) for i in range(4)]


def test_plan_puts_large_unknown_and_other_dtype_gradients_apart():
  # 100 B alone between two small ones; no static size: alone.
  assert _plan([100, 8, 8], [1, 0, 2], 20) == [
      Bucket([1], 1), Bucket([0], 0), Bucket([2], 2)]
  assert _plan([8, None, 8, 8], [0, 1, 2, 3], 100) == [
      Bucket([0], 0), Bucket([1], 1), Bucket([2, 3], 2)]
  assert _plan([8, 8, 8], [0, 1, 2], 100, [F32, F16, F16]) == [
      Bucket([0], 0), Bucket([1, 2], 1)]


def test_a_zero_byte_gradient_takes_no_room_in_a_bucket():
  """A gradient of no elements adds 0 bytes: after it, 4 + 5 B do not fit
  8 B (a byte it gave back would let them)."""
  assert _plan([0, 4, 5], [0, 1, 2], 8) == [Bucket([0, 1], 0),
                                              Bucket([2], 2)]
  assert _plan([0, 4, 4], [0, 1, 2], 8) == [Bucket([0, 1, 2], 0)]


def _two_layers(bucket_bytes, **options):
  """Worker 1 of 2, two towers, a two-layer model (w0 [4, 3], b0 [3], w1
  [3, 2], b1 [2]): ({instance key: CollectiveReduce op}, the ops of the
  first layer's gradients of both towers)."""
  host = variable_mgr.ClusterBenchmarkCnn(
      {'ps': ['h:1'], 'worker': ['h:2', 'h:3']}, 1, 2)
  graph = tf.Graph()
  with graph.as_default():
    mgr = variable_mgr.create('collective_all_reduce', host,
                              bucket_bytes=bucket_bytes, **options)
    device_grads, first_layer = [], []
    for d in range(2):
      with mgr.create_outer_variable_scope(d), tf1.device(host.devices[d]):
        params = [tf1.get_variable(n, s) for n, s in (
            ('w0', [4, 3]), ('b0', [3]), ('w1', [3, 2]), ('b1', [2]))]
        w0, b0, w1, b1 = params
        h = tf.nn.relu(tf.matmul(tf.ones([5, 4]), w0) + b0)
        loss = mgr.scale_loss(tf.reduce_sum(tf.matmul(h, w1) + b1))
        grads = tf1.gradients(loss, params)
        first_layer.extend(g.op for g in grads[:2])
        device_grads.append(zip(grads, params))
    mgr.preprocess_device_grads(device_grads)
  reduces = dict((op.get_attr('instance_key'), op)
                 for op in graph.get_operations()
                 if op.type == 'CollectiveReduce')
  return reduces, first_layer


@pytest.mark.parametrize('options', [{}, dict(use_fp16=True, loss_scale=128)],
                         ids=['plain', 'fp16'])
def test_buckets_follow_the_backward_pass(options):
  """bucket_bytes=40: the second layer's b1 and w1 (32 B) in one buffer,
  then b0 and w0 alone (12 + 48 > 40), one collective a bucket a worker.
  In the towers' order the buckets would be w0, b0 + w1, b1: with a fixed
  loss scale the unscaled gradients are built in that order, and the
  buckets still follow the backward pass."""
  reduces, first_layer = _two_layers(40, **options)
  assert sorted(reduces) == [BASE, BASE + 1, BASE + 2]
  packed = reduces[BASE + 2]
  assert packed.inputs[0].op.type == 'ConcatV2'
  assert packed.inputs[0].shape.as_list() == [8]
  assert reduces[BASE + 1].inputs[0].shape.as_list() == [3]
  assert reduces[BASE].inputs[0].shape.as_list() == [4, 3]
  for op in reduces.values():
    assert op.get_attr('group_size') == 2
    assert tf.DeviceSpec.from_string(op.device).task == 1
    assert tf.DeviceSpec.from_string(op.device).device_index == 0
  # The second layer's bucket waits for none of the first layer's
  # gradients: it can cross the network while they are computed.
  assert not set(first_layer) & graph_walk.ancestors(packed)
  assert set(first_layer) & graph_walk.ancestors(reduces[BASE])


def test_one_bucket_waits_for_every_gradient():
  reduces, first_layer = _two_layers(1 << 20)
  assert list(reduces) == [BASE]
  assert reduces[BASE].inputs[0].shape.as_list() == [12 + 3 + 6 + 2]
  assert set(first_layer) <= graph_walk.ancestors(reduces[BASE])


def test_default_bucket_size():
  reduces, _ = _two_layers(None)
  assert list(reduces) == [BASE]  # 92 B: one bucket of 256 KiB.
  assert (collective_all_reduce.VariableMgrCollectiveAllReduce.bucket_bytes ==
          gradient_buckets.DEFAULT_BUCKET_BYTES == 256 * 1024)


class _Host(object):
  """A worker-only cluster host."""

  def __init__(self):
    self.cluster = tf1.train.ClusterSpec({'worker': ['h:1', 'h:2']})
    self.task_index = 1
    self.num_workers = 2
    self.raw_devices = ['/job:worker/replica:0/task:1/cpu:0']
    self.devices = list(self.raw_devices)
    self.cpu_device = self.param_server_device = self.raw_devices[0]
    self.local_parameter_device_flag = 'cpu'
    self.num_gpus = 1


@pytest.mark.parametrize('value', [-1, 1.5, '1M', True])
def test_bad_bucket_size(value):
  graph = tf.Graph()
  with graph.as_default():
    with pytest.raises(errors.InvalidOptionError) as info:
      variable_mgr.create('collective_all_reduce', _Host(),
                          bucket_bytes=value)
  assert not graph.get_operations()
  message = str(info.value)
  assert 'bucket_bytes=%r' % (value,) in message
  assert '0 or more' in message and 'for one collective a gradient' in message


def test_bucket_size_of_another_strategy():
  with pytest.raises(errors.IncompatibleOptionsError) as info:
    variable_mgr.create('replicated', variable_mgr.LocalBenchmarkCnn(2),
                        bucket_bytes=1024)
  assert "bucket_bytes=1024 with variable_update='replicated'" in str(
      info.value)
  assert 'collective_all_reduce' in str(info.value)


def test_every_collective_of_a_gated_step_is_in_the_gradients_group():
  """With a dynamic loss scale every step is gated: beside the buckets'
  all-reduces, the finite check's and the step sync's (which runs in the
  group every step, so that a dead step leaves the group's next all-reduce
  nothing to abort) are collectives of the same group, each with an
  instance key of its own."""
  reduces, _ = _two_layers(1 << 20, use_fp16=True, auto_loss_scale=True)
  assert set(op.get_attr('group_key') for op in reduces.values()) == {
      collective_all_reduce.GROUP_KEY}
  sync, = [op for op in reduces.values() if 'collective_step_sync' in op.name]
  assert sync.get_attr('instance_key') == (
      collective_all_reduce.STEP_SYNC_INSTANCE_KEY)
  assert collective_all_reduce.FINITE_INSTANCE_KEY in reduces
  assert len(reduces) == 3  # One bucket, the finite check, the sync.
