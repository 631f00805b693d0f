"""`LossScale.unscale` divides a gradient by the scale in the gradient's
own dtype: float16 through float32 (the scale's reciprocal is a float32),
dense and sparse, against NumPy; `tower_all_finite` tells a tower with an
inf or a nan from one without."""

import numpy as np
import pytest
import tensorflow as tf

from variable_mgr import mixed_precision

tf1 = tf.compat.v1

# Relative error of one float32 multiply rounded once to the dtype.
RTOL = {np.float16: 1e-3, np.float32: 1e-6, np.float64: 1e-6}


@pytest.mark.parametrize('dtype', [np.float16, np.float32, np.float64])
@pytest.mark.parametrize('sparse', [False, True], ids=['dense', 'sparse'])
def test_unscale_divides_by_the_scale_in_the_gradient_dtype(dtype, sparse):
  scale = 1000.0
  values = (np.random.RandomState(3).uniform(-60, 60, [3, 4]) *
            scale).astype(dtype)
  with tf.Graph().as_default():
    with tf1.device('/cpu:0'):
      loss_scale = mixed_precision.LossScale(scale, False, 2, '/cpu:0')
      grad = tf.constant(values)
      if sparse:
        grad = tf.IndexedSlices(grad, tf.constant([0, 2, 5]),
                                tf.constant([6, 4]))
      out = loss_scale.unscale(grad)
    got_values = out.values if sparse else out
    with tf1.Session() as sess:
      sess.run([tf1.global_variables_initializer(),
                tf1.local_variables_initializer()])
      got = sess.run(got_values)
      indices = sess.run(out.indices) if sparse else None
  assert got.dtype == dtype
  expected = values.astype(np.float64) / scale
  np.testing.assert_allclose(got.astype(np.float64), expected,
                             rtol=RTOL[dtype])
  if sparse:
    np.testing.assert_array_equal(indices, [0, 2, 5])


def test_no_gradient_stays_none():
  with tf.Graph().as_default():
    loss_scale = mixed_precision.LossScale(8.0, False, 2, '/cpu:0')
    assert loss_scale.unscale(None) is None


@pytest.mark.parametrize('grads,finite', [
    ([None, None], True),
    ([], True),
    ([None, np.array([1.0, 2.0])], True),
    ([np.array([1.0, np.inf]), None], False),
    ([np.array([1.0]), np.array([np.nan, 0.0])], False),
], ids=['none_only', 'empty', 'one_finite', 'an_inf', 'a_nan'])
def test_a_tower_is_finite_unless_a_gradient_value_is_not(grads, finite):
  """`tower_all_finite`: a tower without any gradient (all None) is
  finite, as a tower whose every value is; one inf or nan anywhere is
  not."""
  with tf.Graph().as_default():
    flag = mixed_precision.tower_all_finite(
        [None if g is None else tf.constant(g, tf.float32) for g in grads])
    with tf1.Session() as sess:
      assert sess.run(flag) == finite
