"""The aggregation functions against NumPy: random shapes (scalars too),
float16/32/64, 1-5 towers, sum and mean, None gradients, IndexedSlices and
float16 accumulation in float32."""

import hypothesis
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
import numpy as np
import pytest
import tensorflow as tf

import variable_mgr
from variable_mgr import aggregation

tf1 = tf.compat.v1

# Sums of at most 5 values of magnitude ~3: float16 keeps ~3 digits.
TOLERANCE = {np.float16: dict(rtol=1e-2, atol=1e-2),
             np.float32: dict(rtol=1e-5, atol=1e-6),
             np.float64: dict(rtol=1e-12, atol=1e-12)}
SETTINGS = hypothesis.settings(
    max_examples=20, deadline=None, derandomize=True, database=None,
    phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
    suppress_health_check=[hypothesis.HealthCheck.too_slow])


def _copy(host, towers, use_mean, **kwargs):
  del host
  return variable_mgr.aggregate_gradients_using_copy(towers, use_mean,
                                                     **kwargs)


def _device_selection(host, towers, use_mean, **kwargs):
  return variable_mgr.aggregate_gradients_using_copy_with_device_selection(
      host, towers, use_mean, **kwargs)


def _colocation(host, towers, use_mean, **kwargs):
  del host
  return variable_mgr.aggregate_gradients_using_copy_with_variable_colocation(
      towers, use_mean, **kwargs)


FUNCTIONS = {'copy': _copy, 'device_selection': _device_selection,
             'colocation': _colocation}


def _run(host, fetches):
  with tf1.Session(config=host.session_config()) as sess:
    return sess.run(fetches)


def _variables(shapes, dtype, num_towers):
  """One variable a gradient, spread over the tower devices."""
  variables = []
  for i, shape in enumerate(shapes):
    with tf1.device('/cpu:%d' % (i % num_towers)):
      variables.append(tf1.get_variable('v%d' % i, shape, dtype))
  return variables


@SETTINGS
@hypothesis.given(
    function=st.sampled_from(sorted(FUNCTIONS)),
    dtype=st.sampled_from([np.float16, np.float32, np.float64]),
    num_towers=st.integers(1, 5),
    shapes=st.lists(hnp.array_shapes(min_dims=0, max_dims=3, max_side=4),
                    min_size=1, max_size=3),
    none_mask=st.lists(st.booleans(), min_size=3, max_size=3),
    use_mean=st.booleans(),
    spread=st.booleans(),
    seed=st.integers(0, 2**16))
def test_dense_matches_numpy(function, dtype, num_towers, shapes, none_mask,
                             use_mean, spread, seed):
  rng = np.random.RandomState(seed)
  values = [[np.asarray(rng.randn(*shape), dtype) for shape in shapes]
            for _ in range(num_towers)]
  is_none = none_mask[:len(shapes)]
  with tf.Graph().as_default():
    host = variable_mgr.LocalBenchmarkCnn(
        num_towers, local_parameter_device='gpu' if spread else 'cpu')
    variables = _variables(shapes, dtype, num_towers)
    towers = []
    for d in range(num_towers):
      with tf1.device('/cpu:%d' % d):
        grads = [None if none else tf.constant(value)
                 for value, none in zip(values[d], is_none)]
      towers.append(zip(grads, variables))  # A one-shot iterator, as the
      # seed-era harness passes.
    result = FUNCTIONS[function](host, towers, use_mean)
    assert [v for _, v in result] == variables
    assert [g is None for g, _ in result] == is_none
    for (g, _), shape in zip(result, shapes):
      if g is not None:
        assert g.dtype == tf.as_dtype(dtype)
        assert g.shape.as_list() == list(shape)
    got = _run(host, [g for g, _ in result if g is not None])
  expected = []
  for i, none in enumerate(is_none):
    if not none:
      total = sum(values[d][i].astype(np.float64) for d in range(num_towers))
      expected.append(total / num_towers if use_mean else total)
  assert len(got) == len(expected)
  for g, e in zip(got, expected):
    assert g.dtype == dtype
    np.testing.assert_allclose(g.astype(np.float64), e, **TOLERANCE[dtype])


@SETTINGS
@hypothesis.given(
    function=st.sampled_from(sorted(FUNCTIONS)),
    dtype=st.sampled_from([np.float16, np.float32, np.float64]),
    num_towers=st.integers(1, 5),
    rows=st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=4),
                  min_size=5, max_size=5),
    use_mean=st.booleans(),
    seed=st.integers(0, 2**16))
def test_indexed_slices_sum_sparsely(function, dtype, num_towers, rows,
                                     use_mean, seed):
  """Gradients of a gather: summed as IndexedSlices (repeated rows too),
  whose dense form is the NumPy sum of the dense gradients."""
  rng = np.random.RandomState(seed)
  dense_shape = (6, 3)
  tower_rows = rows[:num_towers]
  tower_values = [rng.randn(len(r), 3).astype(dtype) for r in tower_rows]
  with tf.Graph().as_default():
    host = variable_mgr.LocalBenchmarkCnn(num_towers)
    (var,) = _variables([dense_shape], dtype, num_towers)
    towers = []
    for d in range(num_towers):
      with tf1.device('/cpu:%d' % d):
        grad = tf.IndexedSlices(tf.constant(tower_values[d]),
                                tf.constant(tower_rows[d], tf.int64),
                                tf.constant(dense_shape, tf.int64))
      towers.append([(grad, var)])
    ((agg, agg_var),) = FUNCTIONS[function](host, towers, use_mean)
    assert agg_var is var
    assert isinstance(agg, tf.IndexedSlices)
    assert agg.values.shape.as_list() == [sum(len(r) for r in tower_rows), 3]
    got = _run(host, tf.convert_to_tensor(agg))
  expected = np.zeros(dense_shape)
  for r, v in zip(tower_rows, tower_values):
    np.add.at(expected, r, v.astype(np.float64))
  if use_mean:
    expected /= num_towers
  assert got.dtype == dtype
  np.testing.assert_allclose(got.astype(np.float64), expected,
                             **TOLERANCE[dtype])


@pytest.mark.parametrize('function', sorted(FUNCTIONS))
@pytest.mark.parametrize('use_mean,expected', [(True, 30000.0),
                                               (False, 60000.0)])
def test_float16_accumulates_in_float32(function, use_mean, expected):
  """4 towers of 30000 in float16: the sum (120000) overflows float16
  (max 65504); adding in float32 gives the mean exactly, and a sum of
  2 towers that fits float16."""
  num_towers = 4 if use_mean else 2
  with tf.Graph().as_default():
    host = variable_mgr.LocalBenchmarkCnn(num_towers)
    (var,) = _variables([[2]], np.float16, num_towers)
    towers = [[(tf.fill([2], tf.constant(30000.0, tf.float16)), var)]
              for _ in range(num_towers)]
    ((wide, _),) = FUNCTIONS[function](host, towers, use_mean,
                                       accumulation_dtype=tf.float32)
    ((narrow, _),) = FUNCTIONS[function](host, towers, use_mean)
    assert wide.dtype == tf.float16
    got_wide, got_narrow = _run(host, [wide, narrow])
  np.testing.assert_array_equal(got_wide, [expected, expected])
  if use_mean:  # Without accumulation the float16 sum overflows.
    assert np.isinf(got_narrow).all()


@pytest.mark.parametrize('sparse', [False, True])
@pytest.mark.parametrize('num_towers', [3, 5])
def test_float64_mean_scales_in_float64(num_towers, sparse):
  values = [float(2 ** d) for d in range(num_towers)]
  with tf.Graph().as_default():
    host = variable_mgr.LocalBenchmarkCnn(num_towers)
    (var,) = _variables([[1]], np.float64, num_towers)
    towers = []
    for value in values:
      grad = tf.constant([value], tf.float64)
      if sparse:
        grad = tf.IndexedSlices(grad, tf.constant([0], tf.int64),
                                tf.constant([1], tf.int64))
      towers.append([(grad, var)])
    ((agg, _),) = variable_mgr.aggregate_gradients_using_copy(
        towers, use_mean=True)
    got = _run(host, tf.convert_to_tensor(agg))
  np.testing.assert_allclose(got, [sum(values) / num_towers], rtol=1e-15)


def test_mixed_dense_and_indexed_slices_are_densified():
  with tf.Graph().as_default():
    host = variable_mgr.LocalBenchmarkCnn(2)
    (var,) = _variables([[3, 2]], np.float32, 2)
    sparse = tf.IndexedSlices(tf.ones([1, 2]), tf.constant([1], tf.int64),
                              tf.constant([3, 2], tf.int64))
    dense = tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2))
    ((agg, _),) = variable_mgr.aggregate_gradients_using_copy(
        [[(sparse, var)], [(dense, var)]], use_mean=False)
    got = _run(host, agg)
  np.testing.assert_array_equal(got, [[0, 1], [3, 4], [4, 5]])


def test_device_selection_places_gradient_i_on_device_i_mod_n():
  with tf.Graph().as_default():
    host = variable_mgr.LocalBenchmarkCnn(3, local_parameter_device='gpu')
    variables = _variables([[2]] * 5, np.float32, 3)
    towers = [[(tf.ones([2]) * (d + 1), v) for v in variables]
              for d in range(3)]
    result = variable_mgr.aggregate_gradients_using_copy_with_device_selection(
        host, towers, use_mean=False)
    assert [g.device for g, _ in result] == [
        '/device:CPU:%d' % (i % 3) for i in range(5)]
    got = _run(host, [g for g, _ in result])
  for g in got:
    np.testing.assert_array_equal(g, [6.0, 6.0])


def test_colocation_places_each_sum_on_its_variable():
  with tf.Graph().as_default():
    host = variable_mgr.LocalBenchmarkCnn(3)
    variables = _variables([[2]] * 3, np.float32, 3)
    towers = [[(tf.ones([2]), v) for v in variables] for _ in range(3)]
    result = (
        variable_mgr.aggregate_gradients_using_copy_with_variable_colocation(
            towers, use_mean=True))
    assert [g.device for g, _ in result] == [v.device for v in variables]
    assert len(set(v.device for v in variables)) == 3


def test_all_reduce_keeps_none_gradients():
  """No NCCL op for a None gradient; the [tower][(grad, var)] shape stays."""
  with tf.Graph().as_default() as graph:
    (v0, v1) = _variables([[2], [2]], np.float32, 2)
    towers = [[(None, v0), (None, v1)], [(None, v0), (None, v1)]]
    result = aggregation.sum_gradients_all_reduce(
        (iter(t) for t in towers), ['/gpu:0', '/gpu:1'])
    assert result == [[(None, v0), (None, v1)], [(None, v0), (None, v1)]]
    assert not [op for op in graph.get_operations()
                if op.type == 'NcclAllReduce']
