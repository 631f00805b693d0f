"""Every local strategy, driven by a seed-era harness, against NumPy.

A few SGD steps of a two-layer network on k virtual CPU towers must give the
variables that NumPy computes from the same initial values and data, with
the strategy's documented reduction, for ref and resource variables.
"""

import numpy as np
import pytest
import tensorflow as tf

import seed_harness
from seed_harness import VARIABLES

STEPS = 3
TOLERANCE = {np.float32: dict(rtol=2e-5, atol=2e-6),
             np.float64: dict(rtol=1e-12, atol=1e-13)}

# Every local strategy, and distributed_all_reduce over in-process workers.
STRATEGIES = dict(seed_harness.LOCAL_STRATEGIES,
                  **seed_harness.CLUSTER_STRATEGIES)


def make_batches(num_towers, dtype, seed=0):
  rng = np.random.RandomState(seed)
  return [[(rng.randn(6, seed_harness.IN).astype(dtype),
            rng.randn(6, seed_harness.OUT).astype(dtype))
           for _ in range(num_towers)] for _ in range(STEPS)]


def reference(init, batches, combine, stale=False):
  """Per step, per tower, the variables NumPy expects.

  combine: 'none' (each tower its own gradient), 'mean' or 'sum'.
  stale: gradients taken at the previous step's weights (staged reads).
  """
  num_towers = len(batches[0])
  towers = [dict((k, v.copy()) for k, v in init.items())
            for _ in range(num_towers)]
  previous = dict((k, v.copy()) for k, v in init.items())
  history = []
  for step_batches in batches:
    if combine == 'none':
      for params, (x, y) in zip(towers, step_batches):
        grads = seed_harness.numpy_gradients(params, x, y)
        for k in VARIABLES:
          params[k] = params[k] - seed_harness.LEARNING_RATE * grads[k]
    else:
      current = towers[0]
      at = previous if stale else current
      grads = [seed_harness.numpy_gradients(at, x, y) for x, y in step_batches]
      new = {}
      for k in VARIABLES:
        total = sum(g[k] for g in grads)
        if combine == 'mean':
          total = total / num_towers
        new[k] = current[k] - seed_harness.LEARNING_RATE * total
      previous = current
      towers = [dict(new) for _ in range(num_towers)]
    history.append([dict(t) for t in towers])
  return history


def check_run(name, num_towers, dtype=np.float32, reduction=None):
  create_args, host_args, combine = STRATEGIES[name]
  if reduction is not None:
    combine = reduction
  run = seed_harness.Run(num_towers=num_towers, reduction=reduction,
                         dtype=tf.as_dtype(dtype), **dict(create_args,
                                                          **host_args))
  try:
    per_tower = run.mgr.each_tower_has_variables()
    towers = range(num_towers) if per_tower else [0]
    init = run.values(0)
    for t in towers:  # The post-init ops make every copy equal.
      for k in VARIABLES:
        np.testing.assert_array_equal(run.values(t)[k], init[k])
    batches = make_batches(num_towers, dtype)
    expected = reference(init, batches, combine,
                         stale=create_args.get('staged_vars', False))
    for step, step_batches in enumerate(batches):
      run.step(step_batches)
      for t in towers:
        got = run.values(t)
        for k in VARIABLES:
          np.testing.assert_allclose(
              got[k], expected[step][t][k], err_msg='%s tower %d step %d' %
              (k, t, step), **TOLERANCE[dtype])
  finally:
    run.close()


@pytest.mark.parametrize('num_towers', [1, 2, 3, 4])
@pytest.mark.parametrize('name', sorted(STRATEGIES))
def test_strategy_matches_numpy(name, num_towers, variable_kind):
  check_run(name, num_towers)


@pytest.mark.parametrize('name', ['ps_cpu', 'replicated', 'staged_ps'])
def test_float64(name, variable_kind):
  check_run(name, 2, dtype=np.float64)


@pytest.mark.parametrize('name,reduction', [
    ('replicated', 'mean'), ('ps_cpu', 'sum'), ('staged_ps', 'sum'),
    ('replicated_spread', 'mean'), ('replicated_xring2', 'mean'),
    ('distributed_all_reduce', 'mean')])
def test_reduction_option(name, reduction, variable_kind):
  check_run(name, 3, reduction=reduction)


def test_staged_reads_are_stale_not_synchronous():
  """The staged reference differs from plain SGD, so the staged test above
  tells the two semantics apart."""
  batches = make_batches(2, np.float64)
  rng = np.random.RandomState(1)
  init = dict((k, rng.randn(*s)) for k, s in zip(
      VARIABLES, [(seed_harness.IN, seed_harness.HIDDEN),
                  (seed_harness.HIDDEN,),
                  (seed_harness.HIDDEN, seed_harness.OUT),
                  (seed_harness.OUT,)]))
  stale = reference(init, batches, 'mean', stale=True)[-1][0]
  sync = reference(init, batches, 'mean')[-1][0]
  assert max(np.abs(stale[k] - sync[k]).max() for k in VARIABLES) > 1e-3
