"""benchmarks/run_allreduce_benchmarks.py: the check of every candidate's
outputs passes the library's all-reduces and fails wrong ones."""

import numpy as np
import pytest
import tensorflow as _tf

import scriptlib

tf = _tf.compat.v1

SHAPES = [[3, 5], [7], [2, 2, 2]]
TOWERS = 3


def _script():
  return scriptlib.load('run_allreduce_benchmarks')


def _check(ar, label, fn):
  """Builds `fn` over the script's inputs on TOWERS virtual CPUs, runs the
  script's check of `label`."""
  devices = ['/cpu:%d' % d for d in range(TOWERS)]
  with tf.Graph().as_default():
    towers = []
    for d, device in enumerate(devices):
      with tf.device(device):
        towers.append([tf.constant(ar.inputs(s, i, d))
                       for i, s in enumerate(SHAPES)])
    out = fn(towers, devices)
    config = tf.ConfigProto(device_count={'CPU': TOWERS},
                            allow_soft_placement=False)
    with tf.Session(config=config) as sess:
      ar.check_outputs(sess, label, out, SHAPES,
                       ar.input_sums(SHAPES, TOWERS))


def test_inputs_differ_per_element_tensor_and_tower():
  ar = _script()
  a = ar.inputs([7], 1, 0)
  assert a.dtype == np.float32
  assert len(set(a.tolist())) == 7
  assert not np.array_equal(ar.inputs([7], 2, 0), a)
  np.testing.assert_array_equal(ar.inputs([7], 1, 2), a + 2)
  np.testing.assert_array_equal(ar.input_sums([[7]], 3)[0],
                                3 * ar.inputs([7], 0, 0) + 3)


@pytest.mark.parametrize('label', ['independent', 'copy', 'xring',
                                   'xring+repack4', 'rechd', 'pscpu'])
def test_library_candidates_pass(label):
  ar = _script()
  _check(ar, label, ar.reduce_fn(label))


def _sum_of(rows, devices):
  out = []
  for device in devices:
    with tf.device(device):
      out.append([tf.add_n(list(column)) for column in zip(*rows)])
  return out


def test_a_missing_tower_fails():
  ar = _script()
  with pytest.raises(AssertionError, match='copy: tower 0, tensor 0'):
    _check(ar, 'copy', lambda towers, devices: _sum_of(towers[1:], devices))


def test_a_tower_counted_twice_for_another_fails():
  ar = _script()
  # Equal to the sum if every input were the same; not here.
  with pytest.raises(AssertionError, match='tensor 0'):
    _check(ar, 'copy', lambda towers, devices: _sum_of(
        [towers[0], towers[0]] + towers[2:], devices))


def test_moved_elements_fail():
  ar = _script()

  def reversed_second_tensor(towers, devices):
    out = _sum_of(towers, devices)
    for d, device in enumerate(devices):
      with tf.device(device):
        out[d][1] = tf.reverse(out[d][1], [0])
    return out

  with pytest.raises(AssertionError, match='tower 0, tensor 1 \\[7\\]'):
    _check(ar, 'copy', reversed_second_tensor)
