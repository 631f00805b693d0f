"""Trainable variables whose gradient is None (behind stop_gradient, or read
by no op): every strategy skips them on every tower and in every all-reduce,
leaves them unchanged, and trains the others as NumPy does."""

import numpy as np
import pytest

import real_models
from real_models import FrozenModel

STEPS = 3
NUM_TOWERS = 3


@pytest.mark.parametrize('name', real_models.NAMES)
def test_frozen_and_unused_variables(name, variable_kind):
  model = FrozenModel()
  run = real_models.Run(name, NUM_TOWERS, model)
  try:
    for grads in run.applied:
      by_name = dict((v.op.name.split('/', 1)[1], g) for g, v in grads)
      for k in model.FROZEN:
        assert by_name[k] is None, k
      for k in model.TRAINABLE:
        assert by_name[k] is not None, k
    init = run.values(0)
    batches = real_models.make_batches(model, NUM_TOWERS, STEPS)
    history, _ = real_models.reference(model, init, batches, run.combine,
                                       stale=run.stale)
    for step_batches in batches:
      run.step(step_batches)
    for t in run.towers:
      got = run.values(t)
      for k in model.FROZEN:
        np.testing.assert_array_equal(got[k], init[k], err_msg=k)
      real_models.assert_close(got, history[-1][t], np.float32,
                               model.TRAINABLE, '%s tower %d' % (name, t))
  finally:
    run.close()
