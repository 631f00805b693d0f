"""replicated with a packing option and no all_reduce_spec packs on the
default copy all-reduce: the gradients it packs are concatenated (one
ConcatV2 a pack and tower, where plain replicated has none), and a step
matches NumPy (the towers' gradients summed, float32).

tests/allreduce/test_allreduce_packing.py checks the packs themselves.
"""

import numpy as np
import pytest

import seed_harness
from seed_harness import Run

TOWERS = 2
FLOAT32 = dict(rtol=1e-6, atol=1e-6)


def _concats_after_towers(run):
  built = set(run.built_by_towers)
  return [op for op in run.graph.get_operations()
          if op.type == 'ConcatV2' and op not in built]


def _step_against_numpy(run):
  rng = np.random.RandomState(3)
  batches = [(rng.randn(6, 5).astype(np.float32),
              rng.randn(6, 3).astype(np.float32)) for _ in range(TOWERS)]
  before = run.values(0)
  grads = [seed_harness.numpy_gradients(before, x, y) for x, y in batches]
  run.step(batches)
  for t in range(TOWERS):
    got = run.values(t)
    for k in seed_harness.VARIABLES:
      want = before[k] - seed_harness.LEARNING_RATE * sum(g[k] for g in grads)
      np.testing.assert_allclose(got[k], want, err_msg='%s tower %d' % (k, t),
                                 **FLOAT32)


@pytest.mark.parametrize('options', [
    dict(agg_small_grads_max_bytes=64, agg_small_grads_max_group=2),
    dict(gradient_repacking=2),
], ids=['small_grads', 'repacking'])
def test_a_packing_option_alone_packs_on_the_copy_all_reduce(options):
  packed = Run('replicated', TOWERS, **options)
  plain = Run('replicated', TOWERS)
  try:
    assert _concats_after_towers(plain) == []
    assert len(_concats_after_towers(packed)) >= TOWERS
    _step_against_numpy(packed)
  finally:
    packed.close()
    plain.close()
