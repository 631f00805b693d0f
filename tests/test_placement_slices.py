"""`variable_mgr.placement`'s helpers for partitioned variables, on the
slices TensorFlow's own partitioner makes (`fixed_size_partitioner`), read
off a built graph: `partitioned_groups` orders a variable's slices by their
offset whatever order they come in, `SliceList` names the whole variable,
and `with_whole_partitioned` replaces the slices of every group whose
saved name exists, also after a group that is not saved.

tests/test_partitioning.py and tests/test_partition_slices.py run them in
clusters and through checkpoints.
"""

import tensorflow as tf

from variable_mgr import placement

tf1 = tf.compat.v1


def _variables():
  """`(a, b, w)`: `a` [4, 2] in 2 slices, `b` [6, 3] in 3, `w` [5]
  whole; float32, in a new default graph (the caller's `with`)."""
  a = tf1.get_variable('a', [4, 2],
                       partitioner=tf1.fixed_size_partitioner(2))
  b = tf1.get_variable('b', [6, 3],
                       partitioner=tf1.fixed_size_partitioner(3))
  w = tf1.get_variable('w', [5])
  return a, b, w


def test_slice_info_gives_the_full_name_offset_and_axis():
  with tf.Graph().as_default():
    a, b, w = _variables()
    assert placement.slice_info(w) is None
    assert [placement.slice_info(s) for s in b] == [
        ('b', [0, 0], 0), ('b', [2, 0], 0), ('b', [4, 0], 0)]
    assert placement.slice_info(list(a)[1]) == ('a', [2, 0], 0)


def test_groups_sort_each_variable_slices_by_offset():
  """Slices given out of order come back by offset (rows 0, 2, 4 of b),
  the groups in the order of their first slice, whole variables left
  out."""
  with tf.Graph().as_default():
    a, b, w = _variables()
    a0, a1 = list(a)
    b0, b1, b2 = list(b)
    groups = placement.partitioned_groups([b2, a1, w, b0, a0, b1])
    assert list(groups) == ['b', 'a']
    assert [v.op.name for v in groups['b']] == [
        'b/part_0', 'b/part_1', 'b/part_2']
    assert [v.op.name for v in groups['a']] == ['a/part_0', 'a/part_1']
    assert groups['b'][0] is b0 and groups['b'][2] is b2
    assert placement.partitioned_groups([w]) == {}


def test_slice_list_is_named_and_shaped_as_the_whole_variable():
  with tf.Graph().as_default():
    _, b, _ = _variables()
    slices = placement.SliceList(list(b))
    assert slices.name == 'b'
    assert slices.shape.as_list() == [6, 3]
    assert slices.dtype.base_dtype == tf.float32


def _saved_name(name):
  """Everything under its own name except `a` and its slices."""
  return None if name == 'a' or name.startswith('a/') else name


def _to_save(candidates):
  return dict((_saved_name(v.op.name), v) for v in candidates
              if _saved_name(v.op.name) is not None)


def test_whole_partitioned_goes_on_after_a_group_not_saved():
  """Group a (first) has no saved name and is skipped; group b after it
  still replaces its slices by the PartitionedVariable, or, when no getter
  returned b whole, by a SliceList of its slices in order."""
  with tf.Graph().as_default():
    a, b, w = _variables()
    candidates = list(a) + list(b) + [w]
    result = placement.with_whole_partitioned(
        _to_save(candidates), candidates, {'b': b}, _saved_name)
    assert sorted(result) == ['b', 'w']
    assert result['b'] is b and result['w'] is w

    result = placement.with_whole_partitioned(
        _to_save(candidates), candidates, {}, _saved_name)
    assert sorted(result) == ['b', 'w']
    assert isinstance(result['b'], placement.SliceList)
    assert list(result['b']) == list(b)
    assert result['b'].name == 'b'
