"""ImageNet labels as tf_cnn_benchmarks feeds them: as written, into 1001
classes (class 0 the background).

Two layouts of records (tests/benchmark/data/imagenet_files.py): tf_cnn_benchmarks'
own test records (labels 0 to 9, 0 included) and build_imagenet_data.py's
(1 to 1000). Both train, resume and evaluate; the evaluation's accuracy is
NumPy's, from the checkpoint's variables and the pipeline's images. A label
outside 0 to 1000 (or none) stops training and evaluation alike with a line
that names its file and its index in the file.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as _tf

import imagenet_files  # pylint: disable=g-import-not-at-top
from variable_mgr.benchmark import cli
from variable_mgr.benchmark.data import datasets
from variable_mgr.benchmark.models import catalog
from variable_mgr.benchmark.runs import exit_status

tf = _tf.compat.v1

LAYOUTS = {'upstream': imagenet_files.write_upstream_layout,
           'converter': imagenet_files.write_converter_layout}


@pytest.fixture(scope='module', params=sorted(LAYOUTS))
def layout(request, tmp_path_factory):
  directory = str(tmp_path_factory.mktemp(request.param))
  return request.param, directory, LAYOUTS[request.param](directory)


def _all_labels(data, subset, train, batch):
  pipeline = datasets.InputPipeline(data, subset, batch, 1, (16, 16, 3),
                                    train=train, drop_remainder=train,
                                    seed=2)
  with tf.Graph().as_default():
    labels = tf.data.make_one_shot_iterator(pipeline.dataset()).get_next()[1]
    with tf.Session() as sess:
      return list(sess.run(labels))


def test_labels_are_fed_as_written(layout):
  name, directory, written = layout
  data = datasets.get_dataset('imagenet', directory)
  assert data.num_classes == 1001
  for subset in ('train', 'validation'):
    want = sorted(l for f, labels in written.items() if f.startswith(subset)
                  for l in labels)
    # Evaluation's order, and one shuffled training epoch.
    assert sorted(_all_labels(data, subset, False, 100)) == want
    if subset == 'train':
      assert sorted(_all_labels(data, subset, True, len(want))) == want
    if name == 'upstream':
      assert 0 in want  # The background class, which a -1 shift broke.
    else:
      assert 1000 in want and 1 in want


def _run(argv, capsys):
  status = cli.main(argv)
  captured = capsys.readouterr()
  return status, captured.out, captured.err


def _checkpoint(train_dir):
  reader = tf.train.load_checkpoint(train_dir)
  return dict((n, reader.get_tensor(n))
              for n in reader.get_variable_to_shape_map())


def _numpy_accuracy(values, directory):
  """(top-1, top-5, count) of the upstream trivial model (ReLU affine
  layers) on the validation images the pipeline yields."""
  model = catalog.get_model('trivial', 'imagenet')
  pipeline = datasets.InputPipeline(
      datasets.get_dataset('imagenet', directory), 'validation', 100, 1,
      model.image_shape, train=False, drop_remainder=False)
  with tf.Graph().as_default():
    batch = tf.data.make_one_shot_iterator(pipeline.dataset()).get_next()
    with tf.Session() as sess:
      images, labels = sess.run(batch)
  x = images.reshape(len(images), -1).astype(np.float64)
  for layer in ('affine0', 'affine1'):
    x = np.maximum(x.dot(values[layer + '/weights']) +
                   values[layer + '/biases'], 0)
  logits = x.dot(values['logits/weights']) + values['logits/biases']
  own = logits[np.arange(len(labels)), labels]
  above = (logits > own[:, None]).sum(axis=1)
  return np.mean(above < 1), np.mean(above < 5), len(labels)


def test_train_resume_and_evaluate(layout, tmp_path, capsys):
  """trivial on imagenet is upstream's (227x227x3 into 1001 classes): it
  trains 2 steps, resumes to step 4 and evaluates every validation
  image, as NumPy scores them."""
  _, directory, written = layout
  train_dir = str(tmp_path / 'train')
  common = ['--model', 'trivial', '--data_name', 'imagenet', '--data_dir',
            directory, '--num_gpus', '2', '--batch_size', '2',
            '--train_dir', train_dir]
  runs = []
  for steps in ('2', '4'):
    output = str(tmp_path / ('run%s.json' % steps))
    status, out, err = _run(common + ['--num_batches', steps,
                                      '--num_warmup_batches', '0',
                                      '--output', output], capsys)
    assert status == 0, err
    with open(output) as f:
      runs.append(json.load(f))
  assert runs[0]['global_step'] == 2
  # The second run restores step 2 and trains on from there.
  assert runs[1]['restored_from'].endswith('model.ckpt-2')
  assert runs[1]['global_step'] == 2 + len(runs[1]['losses']) > 2
  values = _checkpoint(train_dir)
  assert int(values['global_step']) == runs[1]['global_step']
  assert values['logits/weights'].shape == (4096, 1001)
  assert values['affine0/weights'].shape == (227 * 227 * 3, 1)
  status, out, err = _run(common + ['--eval'], capsys)
  assert status == 0, err
  top_1, top_5, count = _numpy_accuracy(values, directory)
  assert count == sum(len(l) for f, l in written.items()
                      if f.startswith('validation'))
  assert ('Accuracy @ 1 = %.4f Accuracy @ 5 = %.4f [%d examples]' % (
      top_1, top_5, count)) in out


def _bad_layout(directory, bad_label, subset):
  """The upstream layout, with record 2 of `subset`'s first file labelled
  `bad_label` (None: no label); returns that file's path."""
  imagenet_files.write_upstream_layout(directory)
  path = os.path.join(directory, '%s-00000-of-%05d' % (
      subset, 8 if subset == 'train' else 2))
  jpegs = imagenet_files.jpegs([(40, 50)] * 4)
  boxes = [(0.1, 0.1, 0.9, 0.9)] if subset == 'train' else []
  imagenet_files.write_records(path, [
      imagenet_files.example(j, l, boxes)
      for j, l in zip(jpegs, [3, 0, bad_label, 7])])
  return path


def _refusal_line(bad_label):
  return ': record 2 (counting from 0) has image/class/label %s, not one of ' \
      'the 1001 classes 0 to 1000' % (
          'missing' if bad_label is None else bad_label)


@pytest.mark.parametrize('bad_label', [1001, -1, None])
@pytest.mark.parametrize('subset', ['train', 'validation'])
def test_a_label_outside_the_classes_names_its_record(bad_label, subset,
                                                      tmp_path):
  directory = str(tmp_path)
  path = _bad_layout(directory, bad_label, subset)
  data = datasets.get_dataset('imagenet', directory)
  with pytest.raises(tf.errors.InvalidArgumentError) as e:
    _all_labels(data, subset, subset == 'train', 40)  # Every record.
  line = exit_status.op_error_line(e.value)
  assert (path + _refusal_line(bad_label)) in line
  assert '\n' not in line


@pytest.mark.parametrize('mode', ['train', 'eval'])
def test_the_command_refuses_the_record_in_one_line(mode, tmp_path, capsys):
  """Before: label 0 trained nothing (`Received a label value of -1`) and
  an evaluation scored 1001 as a miss; now a label outside 0 to 1000
  stops both, the record named."""
  directory = str(tmp_path / 'data')
  os.mkdir(directory)
  subset = 'train' if mode == 'train' else 'validation'
  path = _bad_layout(directory, 1001, subset)
  train_dir = str(tmp_path / 'train')
  common = ['--model', 'trivial', '--data_name', 'imagenet', '--data_dir',
            directory, '--num_gpus', '1', '--batch_size', '4',
            '--train_dir', train_dir]
  if mode == 'eval':
    status, _, err = _run(common + ['--num_batches', '1',
                                    '--num_warmup_batches', '0'], capsys)
    assert status == 0, err
    common.append('--eval')
  else:
    common += ['--num_batches', '8', '--num_warmup_batches', '0']
  status, _, err = _run(common, capsys)
  assert status == 1
  lines = err.strip().splitlines()
  assert len(lines) == 1, err
  assert lines[0].startswith(
      'variable_mgr_benchmark: error: InvalidArgumentError failed while '
      'running: assertion failed: [%s%s' % (path, _refusal_line(1001)))
