"""mixed_precision's getter: a trainable float16 variable is stored in
float32 and read as a float16 cast; a variable that get_variable does not
make trainable, and any other dtype, is made as asked. `trainable` is
taken as get_variable takes it: unset is trainable, any other value by its
truth (0 is not trainable). The initial value may be a callable
initializer or a value (whose own dtype would otherwise win)."""

import numpy as np
import pytest
import tensorflow as tf

from variable_mgr import mixed_precision

tf1 = tf.compat.v1

INIT = np.array([0.1, 1.0 / 3.0, 700.0], np.float64)
FORMS = ['callable', 'value']


def _make(dtype, form, **kwargs):
  """(stored variable, what the getter returned, its value, the trainable
  variables) of a variable made through the getter, its initial value INIT
  in `dtype` given in `form` (of FORMS)."""
  if form == 'callable':
    kwargs.update(initializer=tf1.constant_initializer(INIT), shape=[3])
  else:
    kwargs.update(initializer=INIT.astype(dtype))
  with tf.Graph().as_default():
    with tf1.variable_scope(
        'v', custom_getter=mixed_precision.float32_storage_getter):
      got = tf1.get_variable('w', dtype=dtype, **kwargs)
    stored = tf1.global_variables()
    assert len(stored) == 1
    with tf1.Session() as sess:
      sess.run(tf1.global_variables_initializer())
      value = sess.run(got)
    trainable = list(tf1.trainable_variables())
  return stored[0], got, value, trainable


@pytest.mark.parametrize('form', FORMS)
@pytest.mark.parametrize('kwargs', [{}, {'trainable': True},
                                    {'trainable': 1}])
def test_a_trainable_float16_variable_is_stored_in_float32(kwargs, form):
  stored, got, value, trainable = _make(np.float16, form, **kwargs)
  assert stored.dtype.base_dtype == tf.float32
  assert trainable == [stored]
  assert got.dtype == tf.float16
  # The initial value made in float32 (a float16 value widened exactly),
  # read through the cast.
  want = INIT.astype(np.float16 if form == 'value' else np.float32)
  np.testing.assert_array_equal(value, want.astype(np.float16))


@pytest.mark.parametrize('form', FORMS)
@pytest.mark.parametrize('trainable', [False, 0])
def test_a_float16_variable_that_is_not_trainable_stays_float16(trainable,
                                                                form):
  stored, got, value, trainable_vars = _make(np.float16, form,
                                             trainable=trainable)
  assert stored.dtype.base_dtype == tf.float16
  assert trainable_vars == []
  assert got.dtype.base_dtype == tf.float16
  np.testing.assert_array_equal(value, INIT.astype(np.float16))


@pytest.mark.parametrize('form', FORMS)
def test_other_dtypes_are_made_as_asked(form):
  stored, got, value, _ = _make(np.float32, form)
  assert stored.dtype.base_dtype == tf.float32
  assert got.dtype.base_dtype == tf.float32
  np.testing.assert_array_equal(value, INIT.astype(np.float32))
