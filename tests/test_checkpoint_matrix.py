"""Checkpoints travel between every pair of local strategies.

A model with batch norm and a global step (made outside the manager's
scopes) trains two steps under each strategy and is saved; every strategy
restores each of these checkpoints (then runs its post-init ops) and holds
the saved values in every tower's copy. A checkpoint of another model is
refused, naming the first variable that differs and both shapes.
"""

import numpy as np
import pytest

import real_models
from real_models import BatchNormModel
from variable_mgr import checkpoint
from variable_mgr import errors

NUM_TOWERS = 2
STEPS = 2


@pytest.fixture(scope='module')
def checkpoints(tmp_path_factory):
  """`{source strategy: (checkpoint prefix, {name: saved value})}`, and
  under None a checkpoint of the model with 3 channels instead of 4."""
  directory = tmp_path_factory.mktemp('checkpoints')
  model = BatchNormModel()
  batches = real_models.make_batches(model, NUM_TOWERS, STEPS)
  result = {}
  for name in real_models.NAMES:
    run = real_models.Run(name, NUM_TOWERS, model, global_step=True)
    try:
      for step_batches in batches:
        run.step(step_batches)
      values = run.sess.run(run.saved)
      assert values['global_step'] == STEPS
      result[name] = (run.save(str(directory / name)), values)
    finally:
      run.close()
  run = real_models.Run('replicated', NUM_TOWERS, BatchNormModel(channels=3),
                        global_step=True)
  try:
    result[None] = (run.save(str(directory / 'other_model')), None)
  finally:
    run.close()
  return result


def _check_restored(run, values, message):
  assert run.global_step_value() == values['global_step'], message
  for t in run.towers:
    got = run.values(t)
    assert set(got) == set(values) - {'global_step'}, message
    for k in got:
      np.testing.assert_array_equal(got[k], values[k], err_msg='%s tower %d %s'
                                    % (message, t, k))


@pytest.mark.parametrize('target', real_models.NAMES)
def test_restore_every_checkpoint(target, checkpoints, variable_kind):
  """Checkpoints written with resource variables; restored with either."""
  sources = real_models.NAMES
  # Different random starts: no restore below is a no-op.
  for a in sources:
    for b in sources:
      if a != b:
        assert not np.array_equal(checkpoints[a][1]['dense/w'],
                                  checkpoints[b][1]['dense/w'])
  first = sources[0]
  run = real_models.Run(target, NUM_TOWERS, BatchNormModel(),
                        global_step=True, restore_from=checkpoints[first][0])
  try:
    assert sorted(run.saved) == sorted(checkpoints[first][1])
    _check_restored(run, checkpoints[first][1], '%s -> %s' % (first, target))
    for source in sources[1:]:
      path, values = checkpoints[source]
      assert checkpoint.restore(run.sess, path, run.saved,
                                run.saver) == path
      run.sess.run(run.post_init)
      _check_restored(run, values, '%s -> %s' % (source, target))

    other_path = checkpoints[None][0]
    with pytest.raises(errors.CheckpointMismatchError) as info:
      checkpoint.restore(run.sess, other_path, run.saved, run.saver)
    message = str(info.value)
    # 'bn/beta' is the first differing name in sorted order.
    assert other_path in message
    assert "'bn/beta' with shape (3,)" in message
    assert "model's has shape (4,)" in message
    # Refused before anything was restored.
    _check_restored(run, checkpoints[sources[-1]][1], 'after the refusal')
  finally:
    run.close()
