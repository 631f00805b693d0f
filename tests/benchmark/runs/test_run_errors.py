"""A TensorFlow error ends a command with one line that gives TensorFlow's
own cause, on both generations.

Before, the line was the message's first line only, on TensorFlow 2
`InvalidArgumentError failed while running: Graph execution error:`. The
errors here are raised by the TensorFlow installed; the messages of the
other generation are checked as recorded from it.
"""

import os

import pytest
import tensorflow as _tf

from variable_mgr.benchmark.runs import exit_status

tf = _tf.compat.v1

PREFIX = 'variable_mgr_benchmark: error: '


def _error_of(build):
  """The OpError that running `build()`'s fetch raises."""
  with tf.Graph().as_default():
    fetch = build()
    with tf.Session() as sess:
      with pytest.raises(tf.errors.OpError) as e:
        sess.run(fetch)
  return e.value


def _line(error, capsys):
  def run():
    raise error
  assert exit_status.status_of(run) == exit_status.FAILURE
  err = capsys.readouterr().err
  assert err.count('\n') == 1, err
  return err[:-1]


def test_a_label_outside_the_logits(capsys):
  error = _error_of(lambda: tf.nn.sparse_softmax_cross_entropy_with_logits(
      labels=tf.constant([-1, 2]), logits=tf.zeros([2, 1000])))
  assert _line(error, capsys) == (
      PREFIX + 'InvalidArgumentError failed while running: Received a label '
      'value of -1 which is outside the valid range of [0, 1000).  Label '
      'values: -1 2')


def test_an_index_outside_a_gather(capsys):
  error = _error_of(lambda: tf.gather(tf.zeros([4]), tf.constant([1, 7])))
  assert _line(error, capsys) == (
      PREFIX + 'InvalidArgumentError failed while running: indices[1] = 7 '
      'is not in [0, 4)')


def test_an_assertion_inside_a_tf_data_function(capsys):
  def build():
    def check(x):
      with tf.control_dependencies([tf.debugging.Assert(x < 1, [
          tf.strings.join(['value ', tf.as_string(x), ' too big'])])]):
        return tf.identity(x)
    data = tf.data.Dataset.range(3).map(check)
    return tf.data.make_one_shot_iterator(data.skip(1)).get_next()
  assert _line(_error_of(build), capsys) == (
      PREFIX + 'InvalidArgumentError failed while running: assertion failed: '
      '[value 1 too big]')


def test_a_truncated_tfrecord_file(tmp_path, capsys):
  path = str(tmp_path / 'records')
  with tf.python_io.TFRecordWriter(path) as writer:
    for _ in range(3):
      writer.write(b'x' * 100)
  os.truncate(path, 200)  # Record 1 of 116 bytes starts at 116.
  error = _error_of(lambda: tf.data.make_one_shot_iterator(
      tf.data.TFRecordDataset(path).skip(1)).get_next())
  line = _line(error, capsys)
  # TF 2 adds "' failed with Read less bytes than requested". A file that
  # no ImageNet pipeline read is not named.
  assert line.startswith(PREFIX + 'DataLossError failed while running: '
                         'truncated record at 116')
  assert path not in line


# Messages as each generation writes them (e.message), for the generation
# that is not installed.
TF2_MESSAGE = (
    "Graph execution error:\n\nDetected at node 'SparseSoftmaxCrossEntropy"
    "WithLogits/SparseSoftmaxCrossEntropyWithLogits' defined at (most recent "
    'call last):\n    File "/tmp/run.py", line 15, in <module>\nNode: '
    "'SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits'"
    '\nReceived a label value of 5 which is outside the valid range of [0, '
    '3).  Label values: 5\n\t [[{{node SparseSoftmaxCrossEntropyWithLogits/'
    'SparseSoftmaxCrossEntropyWithLogits}}]]')
TF2_DATA_MESSAGE = (
    'Graph execution error:\n\nError in user-defined function passed to '
    'ParallelMapDatasetV2:5 transformation with iterator: Iterator::Root::'
    'Prefetch::ParallelMapV2: assertion failed: [value 1 too big]\n\t '
    '[[{{node Assert/Assert}}]]\n\t [[IteratorGetNext]]')
TF1_MESSAGE = (
    'Received a label value of 5 which is outside the valid range of [0, 3).'
    '  Label values: 5\n\t [[node SparseSoftmaxCrossEntropyWithLogits/'
    'SparseSoftmaxCrossEntropyWithLogits (defined at /tmp/venv37/lib/'
    'python3.7/site-packages/tensorflow_core/python/framework/ops.py:1748) ]]'
    "\n\nOriginal stack trace for 'SparseSoftmaxCrossEntropyWithLogits':\n"
    '  File "run.py", line 15, in <module>\n    x = tf.nn.sparse_softmax_'
    'cross_entropy_with_logits(labels=labels, logits=logits)\n')
TF1_DATA_MESSAGE = (
    '{{function_node __inference_Dataset_map_<lambda>_31}} assertion failed: '
    '[value 1 too big]\n\t [[{{node Assert}}]]\n\t [[IteratorGetNext]]')
TF1_ROOTS_MESSAGE = (
    '2 root error(s) found.\n  (0) Invalid argument: indices[1] = 7 is not '
    'in [0, 4)\n\t [[node GatherV2 (defined at run.py:3) ]]\n  (1) Invalid '
    'argument: indices[1] = 7 is not in [0, 4)\n\t [[node GatherV2 (defined '
    'at run.py:3) ]]\n\t [[GatherV2/_1]]\n0 successful operations.\n0 '
    'derived errors ignored.')
TF2_ROOTS_MESSAGE = (
    'Graph execution error:\n\n2 root error(s) found.\n  (0) '
    'INVALID_ARGUMENT: indices[1] = 7 is not in [0, 4)\n\t [[{{node '
    'GatherV2}}]]\n  (1) INVALID_ARGUMENT: Received a label value of 5 which '
    'is outside the valid range of [0, 3).  Label values: 5\n\t [[{{node '
    'xent}}]]\n0 successful operations.\n0 derived errors ignored.')

LABEL_CAUSE = ('Received a label value of 5 which is outside the valid range '
               'of [0, 3).  Label values: 5')


@pytest.mark.parametrize('message, causes', [
    (TF2_MESSAGE, [LABEL_CAUSE]),
    (TF1_MESSAGE, [LABEL_CAUSE]),
    (TF2_DATA_MESSAGE, ['assertion failed: [value 1 too big]']),
    (TF1_DATA_MESSAGE, ['assertion failed: [value 1 too big]']),
    (TF1_ROOTS_MESSAGE, ['indices[1] = 7 is not in [0, 4)']),
    (TF2_ROOTS_MESSAGE, ['indices[1] = 7 is not in [0, 4)', LABEL_CAUSE]),
])
def test_cause_lines_of_both_generations(message, causes):
  assert exit_status.cause_lines(message) == causes


def test_a_message_of_causes_alone_is_kept_whole():
  assert exit_status.cause_lines('Session was closed.') == [
      'Session was closed.']
