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

import graph_walk
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


class DataStatisticsModel(object):
  """Batch norm of the input itself, then a dense layer: loss = 0.5 mean
  |bn(x) W - y|^2. The moving statistics depend on the data only, so they
  must come out the same (bit for bit) whether the weights are staged, and
  equal NumPy's moving averages of tower 0's batches."""

  CHANNELS, OUT, BATCH = 3, 2, 5
  DECAY = 0.7
  EPSILON = 1e-3
  MOVING = ('bn/moving_mean', 'bn/moving_variance')
  TRAINABLE = ('bn/gamma', 'bn/beta', 'dense/w')

  dtype = tf.float32

  def build(self):
    x = tf.compat.v1.placeholder(self.dtype, [self.BATCH, self.CHANNELS])
    y = tf.compat.v1.placeholder(self.dtype, [self.BATCH, self.OUT])
    normal = real_models.batch_norm(x, self.DECAY, self.EPSILON)
    w = tf.compat.v1.get_variable('dense/w', [self.CHANNELS, self.OUT],
                                  self.dtype)
    loss = 0.5 * tf.reduce_mean(
        tf.reduce_sum(tf.square(tf.matmul(normal, w) - y), axis=1))
    return loss, (x, y)

  def batch(self, rng):
    return (3.0 * rng.randn(self.BATCH, self.CHANNELS) + 1.0,
            rng.randn(self.BATCH, self.OUT))


def _reads_variable(tensor, name):
  """Whether `tensor` is computed from a read of the variable op `name`."""
  stack, seen = [tensor.op], set()
  while stack:
    op = stack.pop()
    if op.name == name and op.type in ('VariableV2', 'VarHandleOp'):
      return True
    for parent in [t.op for t in op.inputs]:
      if parent not in seen:
        seen.add(parent)
        stack.append(parent)
  return False


def test_statistics_are_not_staged(variable_kind):
  """Staged PS stages the trainable variables only: no staging area holds
  a moving statistic, its update assigns to the real variable from a
  direct read, and the statistics after a few steps equal (exactly) those
  of the unstaged parameter server and NumPy's moving averages of tower
  0's batches. A staged statistic would be read one step stale (or stale
  or fresh from run to run, its put unordered with its update)."""
  model = DataStatisticsModel()
  batches = real_models.make_batches(model, NUM_TOWERS, STEPS, seed=3)
  runs = {}
  try:
    for name in ('staged_ps', 'ps_cpu'):
      runs[name] = real_models.Run(name, NUM_TOWERS, model)
    staged = runs['staged_ps']
    graph = staged.graph
    for d in range(NUM_TOWERS):
      assert sorted(staged.mgr.staging_vars_on_devices[d]) == sorted(
          'v/' + k for k in model.TRAINABLE)
    stages = [op for op in graph.get_operations() if op.type == 'Stage']
    assert len(stages) == NUM_TOWERS * len(model.TRAINABLE)
    for op in stages:
      for k in model.MOVING:
        assert not any(_reads_variable(t, 'v/' + k) for t in op.inputs), (
            k, op.name)
    for k in model.MOVING:
      updates = [op for op in graph.get_operations()
                 if op.type in ('AssignSub', 'AssignSubVariableOp') and
                 op.inputs[0].op.name == 'v/' + k]
      assert len(updates) == NUM_TOWERS, k  # One a tower; tower 0's kept.
      kept = [u for u in updates if u in set(
          getattr(o, 'op', o) for o in staged.update_ops)]
      assert len(kept) == 1, k
      assert not any(op.type == 'Unstage'
                     for op in graph_walk.ancestors(kept[0])), k

    for run in runs.values():
      for step_batches in batches:
        run.step(step_batches)
    got = dict((name, run.values(0)) for name, run in runs.items())
  finally:
    for run in runs.values():
      run.close()

  mean = np.zeros(model.CHANNELS)
  variance = np.ones(model.CHANNELS)
  for step_batches in batches:
    x = step_batches[0][0].astype(np.float32).astype(np.float64)
    mean = mean - (mean - x.mean(0)) * (1 - model.DECAY)
    variance = variance - (variance - x.var(0)) * (1 - model.DECAY)
  expected = {'bn/moving_mean': mean, 'bn/moving_variance': variance}
  for k in model.MOVING:
    np.testing.assert_array_equal(got['staged_ps'][k], got['ps_cpu'][k],
                                  err_msg=k)
  real_models.assert_close(got['staged_ps'], expected, np.float32,
                           model.MOVING, 'staged_ps')


