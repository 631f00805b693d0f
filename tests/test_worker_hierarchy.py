"""collective_all_reduce's two levels in the graph a worker builds: the
towers' float16 gradients widened and summed on the first tower's device,
one collective there, the sum cast back there and handed to the other
towers (tests/distributed/test_collective_hierarchy.py steps the numbers
against NumPy with real workers)."""

import pytest
import tensorflow as tf

import variable_mgr
from variable_mgr import compat

import graph_walk

tf1 = tf.compat.v1
TOWERS = 3


def _spec(op):
  return tf.DeviceSpec.from_string(op.device)


def _build(dtype, **options):
  """Worker 1 of 2, three towers, one variable w [4, 3] of `dtype`:
  (the graph, the reduced gradient a tower)."""
  host = variable_mgr.ClusterBenchmarkCnn(
      {'ps': ['h:1'], 'worker': ['h:2', 'h:3']}, 1, TOWERS)
  graph = tf.Graph()
  with graph.as_default():
    mgr = variable_mgr.create('collective_all_reduce', host, **options)
    device_grads = []
    for d in range(TOWERS):
      with mgr.create_outer_variable_scope(d), tf1.device(host.devices[d]):
        w = tf1.get_variable('w', [4, 3], dtype)
        loss = tf.reduce_sum(tf.matmul(tf.ones([5, 4], dtype), w))
        device_grads.append(zip(tf1.gradients(loss, [w]), [w]))
    _, state = mgr.preprocess_device_grads(device_grads)
    reduced = [mgr.get_gradients_to_apply(d, state)[0][0]
               for d in range(TOWERS)]
  return graph, reduced


@pytest.mark.parametrize('dtype,wide', [
    (tf.float16, tf.float32), (tf.float16, None), (tf.float32, tf.float32),
    (tf.float64, tf.float32)])
def test_one_sum_on_the_first_tower_in_the_accumulation_dtype(dtype, wide):
  options = {'accumulation_dtype': wide} if wide is not None else {}
  graph, reduced = _build(dtype, **options)
  ops = graph.get_operations()
  collectives = [op for op in ops if op.type == 'CollectiveReduce']
  assert len(collectives) == 1
  collective = collectives[0]
  assert (_spec(collective).task, _spec(collective).device_index) == (1, 0)
  # Only float16 is widened: float32 and float64 cross in their own dtype.
  crossing = wide if (dtype == tf.float16 and wide is not None) else dtype
  # Where collectives lack half (TensorFlow 1.15), a float16 sum travels
  # as float32 and comes back as float16 (compat.collective_all_reduce).
  carried = (tf.float32 if crossing == tf.float16 and
             compat.collectives_lack_half() else crossing)
  assert collective.outputs[0].dtype == carried
  # The towers' gradients are added on the first tower's device.
  sums = [(op, terms) for op, terms in graph_walk.sums(graph)
          if 'collective_all_reduce' in op.name]
  assert len(sums) == 1 and len(sums[0][1]) == TOWERS
  # Every add of the chain on the first tower's device.
  (total, _), = sums
  for op in graph_walk.ancestors(total) | {total}:
    if op.type in graph_walk.ADD_TYPES and compat.SUM_SCOPE in op.name:
      assert _spec(op).device_index == 0
  assert total.outputs[0].dtype == crossing
  # Every tower gets the gradient in its variable's dtype; the cast back,
  # where there is one, is made once, on the first tower's device.
  for d, grad in enumerate(reduced):
    assert grad.dtype == dtype
    assert _spec(grad.op).device_index == d
  casts_back = [op for op in ops if op.type == 'Cast' and
                op.inputs[0].dtype == crossing and
                op.outputs[0].dtype == dtype and crossing != dtype]
  assert len(casts_back) == (1 if crossing != dtype else 0)
  for op in casts_back:
    assert _spec(op).device_index == 0
