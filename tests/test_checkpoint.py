"""checkpoint.restore: where there is nothing to restore, nothing is; where a
checkpoint is named but missing or corrupt, the error names its file."""

import os

import numpy as np
import pytest
import tensorflow as tf

from variable_mgr import checkpoint
from variable_mgr import errors

tf1 = tf.compat.v1


def _graph():
  graph = tf.Graph()
  with graph.as_default():
    var = tf1.get_variable('w', initializer=tf.constant([1.0, 2.0]))
    assign = var.assign([3.0, 4.0])
    init = tf1.global_variables_initializer()
  return graph, var, assign, init


def test_restore_from_a_missing_or_empty_directory_is_none(tmp_path):
  graph, var, _, init = _graph()
  with tf1.Session(graph=graph) as sess:
    sess.run(init)
    with graph.as_default():
      assert checkpoint.restore(sess, str(tmp_path / 'none'), {'w': var}) is None
      assert checkpoint.restore(sess, str(tmp_path), {'w': var}) is None
    np.testing.assert_array_equal(sess.run(var), [1.0, 2.0])


def test_restore_from_a_directory_or_a_prefix(tmp_path):
  graph, var, assign, init = _graph()
  with tf1.Session(graph=graph) as sess:
    sess.run(init)
    sess.run(assign)
    with graph.as_default():
      prefix = tf1.train.Saver({'w': var}).save(sess, str(tmp_path / 'model'))
  for path in (str(tmp_path), prefix):
    graph, var, _, init = _graph()
    with tf1.Session(graph=graph) as sess:
      sess.run(init)
      with graph.as_default():
        assert checkpoint.restore(sess, path, {'w': var}) == prefix
      np.testing.assert_array_equal(sess.run(var), [3.0, 4.0])


# A checkpoint that is there but cannot be restored is an error naming its
# file, never a fresh start that would overwrite it.
FRESH = 'start with an empty or new train directory (--train_dir)'


def _saved(tmp_path):
  """Writes w = [3, 4] to tmp_path/model-7; returns the prefix."""
  graph, var, assign, init = _graph()
  with tf1.Session(graph=graph) as sess:
    sess.run(init)
    sess.run(assign)
    with graph.as_default():
      return tf1.train.Saver({'w': var}).save(
          sess, str(tmp_path / 'model'), global_step=7)


def _restore(path):
  """Restores into a fresh graph; returns w, or raises."""
  graph, var, _, init = _graph()
  with tf1.Session(graph=graph) as sess:
    sess.run(init)
    with graph.as_default():
      checkpoint.restore(sess, path, {'w': var})
    return sess.run(var)


def _data_file(prefix):
  return prefix + '.data-00000-of-00001'


def test_latest_checkpoint_of_a_directory(tmp_path, variable_kind):
  del variable_kind
  assert checkpoint.latest_checkpoint(str(tmp_path / 'new')) is None
  assert checkpoint.latest_checkpoint(str(tmp_path)) is None
  prefix = _saved(tmp_path)
  assert checkpoint.latest_checkpoint(str(tmp_path)) == prefix
  np.testing.assert_array_equal(_restore(str(tmp_path)), [3.0, 4.0])


@pytest.mark.parametrize('deleted', ['all', 'index', 'data'])
def test_a_pointer_at_missing_files_is_an_error_naming_them(
    tmp_path, variable_kind, deleted):
  del variable_kind
  prefix = _saved(tmp_path)
  removed = {'all': [prefix + '.index', _data_file(prefix)],
             'index': [prefix + '.index'],
             'data': [_data_file(prefix)]}[deleted]
  for name in removed:
    os.remove(name)
  pointer = str(tmp_path / 'checkpoint')
  for call in (lambda: checkpoint.latest_checkpoint(str(tmp_path)),
               lambda: _restore(str(tmp_path))):
    with pytest.raises(errors.CheckpointMissingError) as info:
      call()
    message = str(info.value)
    assert message.startswith('%s points at checkpoint %s, but %s does not '
                              'exist' % (pointer, prefix, removed[0])), message
    assert FRESH in message
  # The checkpoint file is left as it was.
  assert tf1.train.get_checkpoint_state(
      str(tmp_path)).model_checkpoint_path == prefix


def test_a_prefix_without_its_data_is_an_error(tmp_path):
  prefix = _saved(tmp_path)
  os.remove(_data_file(prefix))
  with pytest.raises(errors.CheckpointMissingError) as info:
    _restore(prefix)
  assert str(info.value).startswith(
      'checkpoint %s, but %s does not exist' % (prefix, _data_file(prefix)))


def _corrupt(name, how):
  data = bytearray(open(name, 'rb').read())
  if how == 'truncate':
    data = data[:len(data) // 2]
  elif how == 'garbage':
    data = bytearray(b'x' * len(data))
  else:  # One flipped byte.
    data[len(data) // 2] ^= 0xff
  with open(name, 'wb') as f:
    f.write(bytes(data))


@pytest.mark.parametrize('part,how,reason', [
    ('index', 'garbage', 'not an sstable (bad magic number)'),
    ('index', 'truncate', 'not an sstable (bad magic number)'),
    ('data', 'flip', 'Checksum does not match'),
    ('data', 'truncate', 'OutOfRangeError'),
])
def test_a_corrupt_checkpoint_is_an_error_naming_it(tmp_path, variable_kind,
                                                     part, how, reason):
  del variable_kind
  prefix = _saved(tmp_path)
  _corrupt(prefix + '.index' if part == 'index' else _data_file(prefix), how)
  for path in (str(tmp_path), prefix):
    with pytest.raises(errors.CheckpointCorruptError) as info:
      _restore(path)
    message = str(info.value)
    assert message.startswith('checkpoint %s cannot be read (' % prefix), (
        message)
    assert reason in message
    assert FRESH in message
    assert '\n' not in message


@pytest.mark.parametrize('content', ['garbage {', 'all_model_checkpoint_paths: "x"\n'])
def test_an_unreadable_checkpoint_file_is_an_error_naming_it(
    tmp_path, content):
  pointer = tmp_path / 'checkpoint'
  pointer.write_text(content)
  with pytest.raises(errors.CheckpointCorruptError) as info:
    checkpoint.latest_checkpoint(str(tmp_path))
  message = str(info.value)
  assert message.startswith('%s cannot be read as a checkpoint state' %
                            pointer), message
  assert FRESH in message
