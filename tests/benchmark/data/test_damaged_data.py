"""Damaged data files are named, with what is wrong, in one line.

CIFAR-10's pickles are read when the data set is checked, before any
graph: a truncated batch (before: `_pickle.UnpicklingError: pickle data was
truncated`, a traceback), one that is not a pickle, one without labels and
one with a label outside 0 to 9 are each refused by name. A truncated
ImageNet TFRecord file is found when it is read (before: `DataLossError
failed while running: Graph execution error:`): the line gives
TensorFlow's cause and the file, with the record it ends inside.
"""

import os
import pickle

import numpy as np
import pytest
import tensorflow as _tf

import imagenet_files  # pylint: disable=g-import-not-at-top
from variable_mgr.benchmark import cli
from variable_mgr.benchmark.data import array_datasets
from variable_mgr.benchmark.data import datasets
from variable_mgr.benchmark.data import imagenet_records

tf = _tf.compat.v1

CIFAR_FILES = ['data_batch_%d' % i for i in range(1, 6)] + ['test_batch']


def _write_cifar(directory, count=10, labels=None):
  rng = np.random.RandomState(0)
  for name in CIFAR_FILES:
    batch = {b'data': rng.randint(0, 256, (count, 3072)).astype(np.uint8),
             b'labels': list(rng.randint(0, 10, count)),
             b'batch_label': name.encode()}
    if labels is not None and name == 'data_batch_3':
      batch[b'labels'] = labels
    with open(os.path.join(directory, name), 'wb') as f:
      pickle.dump(batch, f)


def _damage(path, how):
  if how == 'truncated':
    with open(path, 'rb') as f:
      data = f.read()
    with open(path, 'wb') as f:
      f.write(data[:5000])
  elif how == 'not a pickle':
    with open(path, 'wb') as f:
      f.write(b'<html>404 Not Found</html>' * 10)
  elif how == 'no labels':
    with open(path, 'wb') as f:
      pickle.dump({b'data': np.zeros((2, 3072), np.uint8)}, f)
  elif how == 'short rows':
    with open(path, 'wb') as f:
      pickle.dump({b'data': np.zeros((2, 1024), np.uint8),
                   b'labels': [1, 2]}, f)


DAMAGE = {
    'truncated': r'\(5000 bytes\) is not a CIFAR-10 python batch: it ends '
                 r'before its pickle does \(truncated or empty\)',
    'not a pickle': r'is not a CIFAR-10 python batch: it does not unpickle '
                    r'\(UnpicklingError: ',
    'no labels': r"is not a CIFAR-10 python batch: its dict lacks 'labels'",
    'short rows': r'is not a CIFAR-10 python batch: its data has shape '
                  r'\(2, 1024\), not \(N, 3072\)',
}


@pytest.mark.parametrize('how', sorted(DAMAGE))
def test_a_damaged_cifar_batch_is_named_at_the_check(how, tmp_path):
  directory = str(tmp_path)
  _write_cifar(directory, count=10)
  path = os.path.join(directory, 'data_batch_3')
  _damage(path, how)
  data = datasets.get_dataset('cifar10', directory)
  data.check_subset('validation')  # test_batch is whole.
  with pytest.raises(datasets.DataFileError,
                     match=r'^%s .*%s.*download cifar-10-python.tar.gz again'
                     % (path, DAMAGE[how])):
    data.check_subset('train')


def test_a_cifar_label_outside_the_classes_is_named(tmp_path):
  directory = str(tmp_path)
  labels = [0, 1, 2, 10, 4, 5, -1, 7, 8, 9]
  _write_cifar(directory, labels=labels)
  with pytest.raises(datasets.DataFileError,
                     match=r'data_batch_3 .*: label 10 of image 3 is outside '
                     r'0 to 9 \(2 such labels\)'):
    array_datasets.read_cifar_batch(os.path.join(directory, 'data_batch_3'))


def test_the_command_names_a_truncated_cifar_batch_before_any_graph(
    tmp_path, capsys, monkeypatch):
  """The real size: 10,000 images; cut to 5,000 bytes."""
  directory = str(tmp_path)
  _write_cifar(directory, count=10000)
  path = os.path.join(directory, 'data_batch_3')
  _damage(path, 'truncated')
  graphs = []
  monkeypatch.setattr(tf, 'Graph', lambda: graphs.append(1))
  status = cli.main(['--model', 'trivial', '--data_name', 'cifar10',
                     '--data_dir', directory, '--num_batches', '1'])
  err = capsys.readouterr().err
  assert status == 2
  assert err == (
      'variable_mgr_benchmark: error: %s (5000 bytes) is not a CIFAR-10 '
      'python batch: it ends before its pickle does (truncated or empty); '
      'download cifar-10-python.tar.gz again and unpack it into --data_dir\n'
      % path)
  assert not graphs


def _truncated_imagenet(directory, subset):
  written = imagenet_files.write_upstream_layout(directory)
  name = '%s-00001-of-%05d' % (subset, 8 if subset == 'train' else 2)
  path = os.path.join(directory, name)
  size = os.path.getsize(path)
  with open(path, 'rb') as f:
    data = f.read()
  with open(path, 'wb') as f:
    f.write(data[:size - 100])
  return path, written[name], size - 100


def test_truncation_of_names_the_record(tmp_path):
  path, labels, size = _truncated_imagenet(str(tmp_path), 'train')
  assert len(labels) == 2
  found = imagenet_records.truncation_of(path)
  assert found.startswith('record 1 (counting from 0) at byte ')
  assert found.endswith("after the file's end (%d bytes)" % size)
  whole = os.path.join(str(tmp_path), 'train-00000-of-00008')
  assert imagenet_records.truncation_of(whole) is None


@pytest.mark.parametrize('mode', ['train', 'eval'])
def test_the_command_names_a_truncated_tfrecord_file(mode, tmp_path, capsys):
  directory = str(tmp_path / 'data')
  os.mkdir(directory)
  path, _, size = _truncated_imagenet(
      directory, 'train' if mode == 'train' else 'validation')
  train_dir = str(tmp_path / 'train')
  common = ['--model', 'trivial', '--data_name', 'imagenet', '--data_dir',
            directory, '--num_gpus', '1', '--batch_size', '4',
            '--num_warmup_batches', '0', '--train_dir', train_dir]
  if mode == 'eval':
    # Train on whole files first: the validation file is the damaged one.
    assert cli.main(common + ['--num_batches', '1']) == 0
    capsys.readouterr()
    common.append('--eval')
  else:
    common += ['--num_batches', '8']
  status = cli.main(common)
  lines = capsys.readouterr().err.strip().splitlines()
  assert status == 1
  assert len(lines) == 1, lines
  line = lines[0]
  assert line.startswith('variable_mgr_benchmark: error: DataLossError failed '
                         'while running: truncated record at ')
  assert ('%s is truncated: record 1 (counting from 0) at byte ' % path) in line
  assert ("after the file's end (%d bytes); write the file again" % size
          in line)


def _random_bytes(path, size=3000, seed=5):
  with open(path, 'wb') as f:
    f.write(np.random.RandomState(seed).bytes(size))


def test_a_file_of_random_bytes_is_not_a_tfrecord_file(tmp_path, capsys):
  """Random bytes named train-*: refused before any graph as not a
  TFRecord file (not as truncated), naming the file."""
  directory = str(tmp_path / 'data')
  os.mkdir(directory)
  for i in range(2):
    _random_bytes(os.path.join(directory, 'train-0000%d-of-00002' % i),
                  seed=i)
  status = cli.main(['--model', 'trivial', '--data_name', 'imagenet',
                     '--data_dir', directory, '--num_gpus', '1',
                     '--batch_size', '4', '--num_batches', '1'])
  captured = capsys.readouterr()
  assert status == 2
  assert captured.out == ''
  path = os.path.join(directory, 'train-00000-of-00002')
  assert captured.err == (
      'variable_mgr_benchmark: error: --data_dir=%s: %s is not a TFRecord '
      'file: its first 12 bytes are not a TFRecord header (the checksum of '
      'the record length they would give does not match); imagenet reads '
      "TFRecords of tf.train.Example as TensorFlow's build_imagenet_data.py "
      'writes them: move the file out of --data_dir, or write it again from '
      'its source\n' % (directory, path))


def test_a_data_loss_in_a_file_that_is_not_a_tfrecord_names_it(tmp_path):
  """Read while running (a file the check did not see), TensorFlow's
  `truncated record at 0` is named as a file that is not a TFRecord."""
  written = imagenet_files.write_upstream_layout(str(tmp_path))
  foreign = str(tmp_path / 'train-00003-of-00008')
  assert os.path.basename(foreign) in written
  _random_bytes(foreign)
  imagenet_records.FILES_READ.clear()
  imagenet_records.FILES_READ.update(
      os.path.join(str(tmp_path), name) for name in written)
  try:
    line = imagenet_records.describe_data_loss('truncated record at 0')
  finally:
    imagenet_records.FILES_READ.clear()
  assert line == (
      '%s is not a TFRecord file: its first 12 bytes are not a TFRecord '
      'header (the checksum of the record length they would give does not '
      'match); write the file again (or copy it again) from its source'
      % foreign)
  assert 'truncated' not in line


@pytest.mark.parametrize('label,written', [(1001, '1001'), (-3, '-3'),
                                           (None, 'missing')])
def test_a_record_parsed_alone_is_named_as_such(label, written):
  """parse_example without `where` (a record not read from a file): the
  message says "(a record)" and no index in a file (-1)."""
  jpeg = imagenet_files.jpegs([(8, 8)])[0]
  with tf.Graph().as_default():
    _, parsed, _ = imagenet_records.parse_example(
        tf.constant(imagenet_files.example(jpeg, label)))
    with tf.Session() as sess:
      with pytest.raises(tf.errors.InvalidArgumentError) as info:
        sess.run(parsed)
  assert ('(a record): record -1 (counting from 0) has image/class/label '
          '%s, not one of the 1001 classes 0 to 1000' % written
          in info.value.message)
