"""benchmarks/run_loop_trial.py: every mode's graph, run in one process with
one worker (its all-reduce the identity), ends with the variables of
NumPy's SGD on the same MLP after the same steps."""

import numpy as np
import pytest

import scriptlib

from variable_mgr.compat import tf

SPEC = dict(layers=3, width=8, batch=4, steps=4, steps_per_run=2, warmup=1,
            lr=0.5, head=0.5)


def _numpy_sgd(spec, steps):
  script = scriptlib.load('run_loop_trial')
  x, weights = script.initial_values(spec)
  x = x.astype(np.float64)
  weights = [w.astype(np.float64) for w in weights]
  for _ in range(steps):
    acts, pre = [x], []
    for i, w in enumerate(weights):
      pre.append(acts[-1] @ w)
      acts.append(np.maximum(pre[-1], 0) if i + 1 < len(weights)
                  else pre[-1])
    d_act = 2.0 * acts[-1] / acts[-1].size
    grads = [None] * len(weights)
    for i in reversed(range(len(weights))):
      d_pre = d_act * (pre[i] > 0) if i + 1 < len(weights) else d_act
      grads[i] = acts[i].T @ d_pre
      d_act = d_pre @ weights[i].T
    weights = [w - spec['lr'] * g for w, g in zip(weights, grads)]
  return weights


@pytest.mark.parametrize('mode', ['compute', 'step', 'split', 'loop',
                                  'loop_first', 'loop_split'])
def test_each_mode_is_numpys_sgd(mode):
  script = scriptlib.load('run_loop_trial')
  with tf.Graph().as_default():
    fetch, variables = script.build(SPEC, mode, lambda t, key: tf.identity(t))
    with tf.Session() as sess:
      sess.run(tf.global_variables_initializer())
      script.run_steps(sess, fetch, SPEC, mode)
      got = sess.run(variables)
  # Every mode runs warmup x steps_per_run + steps steps.
  want = _numpy_sgd(SPEC, SPEC['warmup'] * SPEC['steps_per_run'] +
                    SPEC['steps'])
  for g, w in zip(got, want):
    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
