"""distributed_all_reduce's buckets: the gradients go into the spec's
algorithm in buckets filled in the backward pass's order, and the steps
stay what NumPy computes, for buckets of several sizes, ref and resource
variables.

The model is seed_harness's two layers (w1 80 B, b1 16 B, w2 48 B, b2
12 B) over two in-process workers of two towers each. With buckets of 64
bytes the second layer's gradients (b2 + w2, 60 B) share one buffer and
the first layer's go alone (60 + 16 > 64, 16 + 80 > 64); in the towers'
order they would be w1, then b1 + w2 (64 B), then b2.
"""

import pytest
import tensorflow as tf

import graph_walk
import seed_harness
import test_distributed_all_reduce as dar
from variable_mgr import errors
from variable_mgr.strategies import gradient_buckets


def _run(spec, **options):
  return seed_harness.Harness(
      dict(variable_update='distributed_all_reduce', all_reduce_spec=spec,
           **options), dict(workers=dar.WORKERS), dar.WORKERS * dar.TOWERS,
      dar._tower(6), seed_harness.LEARNING_RATE, tf.float32)  # pylint: disable=protected-access


def _concats(run, tower):
  """The bucket buffers of `tower`: for each ConcatV2 op on its device
  under the `gradient_buckets` scope (the spec's algorithms have their
  own), in
  the graph's order, the names of the variables whose gradients it
  holds (those among its ancestors)."""
  canonical = lambda d: tf.DeviceSpec.from_string(d).to_string()
  device = canonical(run.mgr.benchmark_cnn.raw_devices[tower])
  found = []
  for op in run.graph.get_operations():
    if (op.type == 'ConcatV2' and op.name.startswith('gradient_buckets') and
        canonical(op.device) == device):
      above = graph_walk.ancestors(op)
      found.append(sorted(v.op.name.split('/')[-1]
                          for g, v in run.tower_grads[tower]
                          if g is not None and g.op in above))
  return found


@pytest.mark.parametrize('bucket_bytes', [0, 16, 64, 1 << 20, None])
@pytest.mark.parametrize('spec', ['xring', 'pscpu/pscpu', 'copy/xring'])
def test_steps_equal_numpy_with_buckets_of_any_size(spec, bucket_bytes,
                                                    variable_kind):
  del variable_kind
  run = _run(spec, bucket_bytes=bucket_bytes)
  try:
    dar._check_steps(run)  # pylint: disable=protected-access
  finally:
    run.close()


def test_buckets_follow_the_backward_pass_and_wait_for_their_own():
  """Buckets of 64 B: b2 and w2 (the last layer's) in one buffer a tower,
  the first layer's alone; the second layer's reduced gradients wait for
  none of the first layer's gradients, so they can cross the network while
  the backward pass computes those. upstream's repacking (one pack of
  every gradient, in the towers' order) makes them wait: the check's
  control."""
  run = _run('xring', bucket_bytes=64)
  try:
    for tower in range(dar.WORKERS * dar.TOWERS):
      assert _concats(run, tower) == [['b2', 'w2']]
    first_layer = set(g.op for g, v in run.tower_grads[0]
                      if v.op.name.split('/')[-1] in ('w1', 'b1'))
    second = [g.op for g, v in run.applied[0]
              if v.op.name.split('/')[-1] in ('w2', 'b2')]
    assert len(second) == 2
    assert not first_layer & graph_walk.ancestors(second)
  finally:
    run.close()
  packed = _run('xring', bucket_bytes=0, gradient_repacking=1)
  try:
    first_layer = set(g.op for g, v in packed.tower_grads[0]
                      if v.op.name.split('/')[-1] in ('w1', 'b1'))
    second = [g.op for g, v in packed.applied[0]
              if v.op.name.split('/')[-1] in ('w2', 'b2')]
    assert first_layer <= graph_walk.ancestors(second)
  finally:
    packed.close()


def test_the_default_is_one_bucket_of_256_kib_and_upstream_packing_none():
  run = _run('xring')
  try:
    assert run.mgr.bucket_bytes is None
    # 156 B: one bucket of 256 KiB.
    assert _concats(run, 0) == [['b1', 'b2', 'w1', 'w2']]
  finally:
    run.close()
  assert gradient_buckets.DEFAULT_BUCKET_BYTES == 256 * 1024
  for option in (dict(gradient_repacking=2),
                 dict(agg_small_grads_max_bytes=64)):
    run = _run('xring', **option)
    try:
      # Upstream's packing concatenates in its own way, not in buckets.
      assert ['b1', 'b2', 'w1', 'w2'] not in _concats(run, 0), option
      dar._check_steps(run)  # pylint: disable=protected-access
    finally:
      run.close()


@pytest.mark.parametrize('option', [dict(gradient_repacking=2),
                                    dict(agg_small_grads_max_bytes=64)])
def test_buckets_asked_for_with_upstream_packing_are_refused(option):
  name, value = list(option.items())[0]
  dar._refused(errors.IncompatibleOptionsError,  # pylint: disable=protected-access
               ['bucket_bytes=1024 with %s=%r' % (name, value),
                'use one of the two', 'bucket_bytes=0'],
               dar._controller(), all_reduce_spec='xring',  # pylint: disable=protected-access
               bucket_bytes=1024, **option)


@pytest.mark.parametrize('value', [-1, 1.5, '1M', True])
def test_a_bad_bucket_size_is_refused(value):
  dar._refused(errors.InvalidOptionError,  # pylint: disable=protected-access
               ['bucket_bytes=%r' % (value,), '0 or more',
                'for one all-reduce a gradient'],
               dar._controller(), all_reduce_spec='xring',  # pylint: disable=protected-access
               bucket_bytes=value)


def test_np_reference_is_not_met_without_the_reduction():
  """The NumPy check's own control with buckets: the mean's steps are not
  the sum's."""
  run = _run('xring', bucket_bytes=64)
  try:
    with pytest.raises(AssertionError, match='tower 0 step 0'):
      dar._check_steps(run, combine='mean')  # pylint: disable=protected-access
  finally:
    run.close()
