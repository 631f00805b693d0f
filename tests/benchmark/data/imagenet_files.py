"""ImageNet TFRecords written by the tests, in the two layouts a run meets.

`write_upstream_layout` writes what tf_cnn_benchmarks' own test records
(`test_data/fake_tf_record_data`) hold: labels 0 to 9, 0 included; JPEG
images 30 to 299 pixels a side; one box on every train record, none on the
validation records; files train-0000k-of-0000N and validation-0000k-of-
0000M. `write_converter_layout` writes labels 1 to 1000, as TensorFlow's
build_imagenet_data.py does. Both return what they wrote, so that a test
compares the pipeline's labels with the labels as written.
"""

import os

import numpy as np
import tensorflow as _tf

tf = _tf.compat.v1


def jpegs(shapes, seed=0):
  """Smooth made-up RGB images of `shapes` (height, width), JPEG bytes."""
  rng = np.random.RandomState(seed)
  graph = tf.Graph()
  with graph.as_default():
    encoded = []
    for height, width in shapes:
      small = tf.constant(rng.uniform(0, 255, (1, 4, 4, 3)), tf.float32)
      image = tf.image.resize_bilinear(small, [height, width])[0]
      encoded.append(tf.image.encode_jpeg(
          tf.cast(tf.clip_by_value(image, 0, 255), tf.uint8), quality=90))
    with tf.Session() as sess:
      return sess.run(encoded)


def example(jpeg, label, boxes=()):
  """A serialized tf.train.Example as build_imagenet_data.py writes it;
  `label` None writes none."""
  feature = {
      'image/encoded': tf.train.Feature(
          bytes_list=tf.train.BytesList(value=[jpeg])),
      'image/format': tf.train.Feature(
          bytes_list=tf.train.BytesList(value=[b'JPEG'])),
  }
  if label is not None:
    feature['image/class/label'] = tf.train.Feature(
        int64_list=tf.train.Int64List(value=[label]))
  for i, key in enumerate(('ymin', 'xmin', 'ymax', 'xmax')):
    feature['image/object/bbox/' + key] = tf.train.Feature(
        float_list=tf.train.FloatList(value=[b[i] for b in boxes]))
  return tf.train.Example(
      features=tf.train.Features(feature=feature)).SerializeToString()


def write_records(path, examples):
  with tf.python_io.TFRecordWriter(path) as writer:
    for serialized in examples:
      writer.write(serialized)


def _write_layout(directory, labels, num_train, num_validation, seed):
  """Writes labels[subset] round-robin into the subset's files; returns
  {file name: [labels in order]}."""
  rng = np.random.RandomState(seed)
  written = {}
  for subset, count in (('train', num_train), ('validation', num_validation)):
    subset_labels = labels[subset]
    shapes = [tuple(rng.randint(30, 300, 2)) for _ in subset_labels]
    images = jpegs(shapes, seed)
    names = ['%s-%05d-of-%05d' % (subset, k, count) for k in range(count)]
    per_file = dict((n, []) for n in names)
    for i, (jpeg, label) in enumerate(zip(images, subset_labels)):
      boxes = []
      if subset == 'train':
        top, left = rng.uniform(0, 0.5, 2)
        boxes = [(top, left, top + 0.5, left + 0.5)]
      per_file[names[i % count]].append((example(jpeg, label, boxes), label))
    for name in names:
      write_records(os.path.join(directory, name),
                    [e for e, _ in per_file[name]])
      written[name] = [l for _, l in per_file[name]]
  return written


def write_upstream_layout(directory, seed=0):
  """tf_cnn_benchmarks' test records: 8 train files and 2 validation files,
  labels 0 to 9 (16 train images, 4 validation, label 0 in both)."""
  labels = {'train': [i % 10 for i in range(16)],
            'validation': [0, 9, 3, 5]}
  return _write_layout(directory, labels, 8, 2, seed)


def write_converter_layout(directory, seed=1):
  """build_imagenet_data.py's labels 1 to 1000 (1 and 1000 included): 2
  train files, 1 validation file."""
  labels = {'train': [1, 1000, 7, 42, 500, 3],
            'validation': [1000, 1, 250]}
  return _write_layout(directory, labels, 2, 1, seed)
