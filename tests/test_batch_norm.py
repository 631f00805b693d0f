"""Batch-norm statistics in every local strategy.

The moving statistics are updated once a step, from tower 0's batch (the
tower whose UPDATE_OPS the harness keeps), and the saved statistics are the
updated ones. The trainable variables follow NumPy SGD meanwhile (one step
stale with staged variables, whose batch statistics are then those of the
stale weights tower 0 computed with).
"""

import numpy as np
import pytest
import tensorflow as tf

import real_models
from real_models import BatchNormModel

STEPS = 3
NUM_TOWERS = 2


def expected_moving(model, init, used, batches):
  """NumPy EMA of tower 0's batch statistics, one update a step, each taken
  at the weights tower 0 computed with."""
  mean = np.asarray(init['bn/moving_mean'], np.float64)
  variance = np.asarray(init['bn/moving_variance'], np.float64)
  for step_batches, at in zip(batches, used):
    batch_mean, batch_variance = model.batch_statistics(at[0],
                                                        step_batches[0])
    mean = mean - (mean - batch_mean) * (1 - model.DECAY)
    variance = variance - (variance - batch_variance) * (1 - model.DECAY)
  return {'bn/moving_mean': mean, 'bn/moving_variance': variance}


@pytest.mark.parametrize('name', real_models.NAMES)
def test_moving_statistics_are_tower_zero_ema(name, tmp_path, variable_kind):
  model = BatchNormModel()
  run = real_models.Run(name, NUM_TOWERS, model)
  try:
    init = run.values(0)
    batches = real_models.make_batches(model, NUM_TOWERS, STEPS)
    history, used = real_models.reference(model, init, batches, run.combine,
                                          stale=run.stale)
    for step_batches in batches:
      run.step(step_batches)
    got = run.values(0)
    for t in run.towers:
      real_models.assert_close(run.values(t), history[-1][t], np.float32,
                               model.TRAINABLE, '%s tower %d' % (name, t))
    moving = expected_moving(model, init, used, batches)
    # One update fewer or more is far off with a decay of 0.7.
    fewer = expected_moving(model, init, used[:-1], batches[:-1])
    more = expected_moving(model, init, used + used[-1:],
                           batches + batches[-1:])
    for other in (fewer, more):
      assert not np.allclose(other['bn/moving_mean'], moving['bn/moving_mean'])
    real_models.assert_close(got, moving, np.float32, model.MOVING, name)

    saved_names = dict((k, v.op.name) for k, v in run.saved.items())
    scope = 'v0/' if run.mgr.each_tower_has_variables() else 'v/'
    for k in model.MOVING:
      assert saved_names[k] == scope + k
    path = run.save(str(tmp_path / 'bn.ckpt'))
    reader = tf.train.load_checkpoint(path)
    for k in model.MOVING:
      np.testing.assert_array_equal(reader.get_tensor(k), got[k])
  finally:
    run.close()


def _ancestors(op):
  seen = set()
  stack = [op]
  while stack:
    current = stack.pop()
    for parent in [t.op for t in current.inputs] + current.control_inputs:
      if parent not in seen:
        seen.add(parent)
        stack.append(parent)
  return seen


def test_staged_statistic_put_and_update_are_ordered(variable_kind):
  """A staged statistic whose put and update were unordered would be read
  stale or fresh from run to run. The numbers above expect the next step to
  read the updated statistic (an EMA), which holds when statistics are not
  staged at all, as now."""
  model = BatchNormModel()
  run = real_models.Run('staged_ps', NUM_TOWERS, model)
  try:
    staged = run.mgr.staging_vars_on_devices[0]
    kept = set()
    for update in run.update_ops:
      op = getattr(update, 'op', update)
      kept |= _ancestors(op) | {op}
    for name in model.MOVING:
      if 'v/' + name not in staged:
        continue  # Read and updated directly: nothing to order.
      put, _ = staged['v/' + name]
      updates = [op for op in kept
                 if op.type in ('AssignSub', 'AssignSubVariableOp') and
                 op.inputs[0].op.name == 'v/' + name]
      assert updates, name
      for update in updates:
        assert put in _ancestors(update) or update in _ancestors(put), (
            '%s: %s and %s are unordered' % (name, put.name, update.name))
  finally:
    run.close()
