"""preprocess_device_grads refuses a tower entry that is not a
(gradient, variable) pair, naming the entry as given, before any op."""

import pytest
import tensorflow as tf

import test_errors
from variable_mgr import errors

tf1 = tf.compat.v1


def _towers():
  """A replicated manager of 2 towers and their [(gradient, variable)]."""
  return test_errors._towers(shapes=((3,),))  # pylint: disable=protected-access


@pytest.mark.parametrize('how', ['swapped', 'bare', 'triple', 'array'])
def test_an_entry_that_is_not_a_pair_is_refused(how):
  with tf.Graph().as_default() as graph:
    mgr, towers = _towers()
    g, v = towers[1][0]
    towers[1][0] = {'swapped': (v, g), 'bare': g, 'triple': (g, v, v),
                    'array': ([1.0, 2.0, 3.0], v)}[how]
    given = repr(towers[1][0])
    before = len(graph.get_operations())
    with pytest.raises(errors.GradientListError) as info:
      mgr.preprocess_device_grads(towers)
    assert len(graph.get_operations()) == before
  message = str(info.value)
  shown = given if len(given) <= 120 else given[:117] + '...'
  assert message == (
      'entry 0 of tower 1 is %s: each entry must be a (gradient, variable) '
      'pair, the gradient a Tensor, IndexedSlices or None and the variable '
      'the tower\'s own; make them with list(zip(tf.gradients(loss, '
      'params), params)).' % shown)


def test_pairs_of_every_form_are_taken(variable_kind):
  """A pair as a list or a tuple; IndexedSlices on one tower and a tensor
  on the other (one variable's gradient in two forms)."""
  del variable_kind
  with tf.Graph().as_default():
    mgr, towers = _towers()
    g, v = towers[0][0]
    towers[0][0] = [tf.IndexedSlices(tf.ones([1]), tf.constant([0]),
                                     tf.constant([3])), v]
    apply_devices, _ = mgr.preprocess_device_grads(towers)
    assert len(apply_devices) == 2
    del g
