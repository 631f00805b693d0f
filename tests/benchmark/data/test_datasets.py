"""The input pipelines read files a test wrote and yield their images.

Evaluation paths are checked image for image against NumPy (the JPEG
decoded by TensorFlow with the pipeline's own decoder, resized by a NumPy
bilinear resize); training paths by shape, range, labels, the set of crops
an image can become, and the same batches for the same seed.
"""

import os
import pickle

import numpy as np
import pytest
import tensorflow as _tf

import imagenet_files  # pylint: disable=g-import-not-at-top
from variable_mgr import compat
from variable_mgr.benchmark.data import datasets

tf = _tf.compat.v1

ATOL = 1e-4  # float32 arithmetic on [-1, 1] images.


def bilinear(image, height, width):
  """TensorFlow's resize_bilinear with align_corners=False and no half-pixel
  centres (both generations' tf.compat.v1 default), in NumPy."""
  image = np.asarray(image, np.float64)
  in_h, in_w = image.shape[:2]

  def axis(out, size):
    pos = np.arange(out) * (np.float32(size) / np.float32(out))
    low = np.floor(pos).astype(int)
    high = np.minimum(low + 1, size - 1)
    return low, high, pos - low

  y0, y1, ly = axis(height, in_h)
  x0, x1, lx = axis(width, in_w)
  ly, lx = ly[:, None, None], lx[None, :, None]
  top = image[y0][:, x0] * (1 - lx) + image[y0][:, x1] * lx
  bottom = image[y1][:, x0] * (1 - lx) + image[y1][:, x1] * lx
  return top * (1 - ly) + bottom * ly


def scaled(image):
  return np.asarray(image, np.float64) / 127.5 - 1.0


def run_batches(pipeline, steps=1):
  """`steps` batches of every tower: [step][tower] (images, labels)."""
  graph = tf.Graph()
  with graph.as_default():
    towers = [pipeline.tower(d) for d in range(pipeline.num_towers)]
    with tf.Session() as sess:
      return [sess.run(towers) for _ in range(steps)]


# --- digits ---------------------------------------------------------------

def _digits_reference():
  from sklearn import datasets as sk_datasets  # pylint: disable=g-import-not-at-top
  digits = sk_datasets.load_digits()
  return np.round(digits.images * 255.0 / 16.0), digits.target


def test_digits_split_is_fixed_and_covers_every_image():
  data = datasets.get_dataset('digits')
  assert data.num_examples('train') == 1497
  assert data.num_examples('validation') == 300
  images, labels = _digits_reference()
  val_images, val_labels = data.arrays('validation')
  train_images, train_labels = data.arrays('train')
  np.testing.assert_array_equal(val_labels, labels[::6])
  np.testing.assert_array_equal(val_images[..., 0], images[::6])
  keep = np.arange(len(labels)) % 6 != 0
  np.testing.assert_array_equal(train_labels, labels[keep])
  np.testing.assert_array_equal(train_images[..., 0], images[keep])


@pytest.mark.parametrize('data_format', ['NHWC', 'NCHW'])
@pytest.mark.parametrize('image_shape', [(8, 8, 1), (28, 28, 1), (12, 12, 3)])
def test_digits_validation_images_exact(image_shape, data_format):
  batch, towers = 5, 2
  pipeline = datasets.InputPipeline(
      datasets.get_dataset('digits'), 'validation', batch, towers,
      image_shape, data_format=data_format, device='/cpu:0',
      num_classes=10)
  (step,) = run_batches(pipeline)
  images, labels = _digits_reference()
  height, width, channels = image_shape
  for d, (got_images, got_labels) in enumerate(step):
    first = d * batch
    np.testing.assert_array_equal(got_labels,
                                  labels[::6][first:first + batch])
    assert got_labels.dtype == np.int32
    for i in range(batch):
      want = scaled(bilinear(images[::6][first + i][..., None],
                             height, width))
      want = np.repeat(want, channels, axis=2)
      got = got_images[i]
      if data_format == 'NCHW':
        assert got.shape == (channels, height, width)
        got = got.transpose(1, 2, 0)
      np.testing.assert_allclose(got, want, atol=ATOL)


def test_training_shuffles_repeats_and_follows_the_seed():
  data = datasets.get_dataset('digits')

  def labels(seed):
    pipeline = datasets.InputPipeline(data, 'train', 100, 1, (8, 8, 1),
                                      seed=seed)
    return np.concatenate([s[0][1] for s in run_batches(pipeline, 16)])

  first, again, other = labels(7), labels(7), labels(8)
  np.testing.assert_array_equal(first, again)
  assert (first != other).any()
  # 16 x 100 > 1,497: one epoch is a permutation of the training labels.
  train_labels = data.arrays('train')[1]
  assert sorted(first[:1497]) != list(first[:1497])
  np.testing.assert_array_equal(np.sort(first[:1497]), np.sort(train_labels))


# --- cifar10 --------------------------------------------------------------

def _write_cifar(directory, counts, seed=0):
  """Pickles in CIFAR-10's python format; returns {file: (NHWC, labels)}."""
  rng = np.random.RandomState(seed)
  written = {}
  for name, count in counts.items():
    images = rng.randint(0, 256, (count, 32, 32, 3)).astype(np.uint8)
    labels = rng.randint(0, 10, count)
    rows = images.transpose(0, 3, 1, 2).reshape(count, 3072)
    # Python 2's cPickle wrote str keys; read with encoding='bytes' they
    # are bytes, as here.
    with open(os.path.join(directory, name), 'wb') as f:
      pickle.dump({b'data': rows, b'labels': list(labels),
                   b'batch_label': name.encode()}, f)
    written[name] = (images, labels)
  return written


@pytest.fixture
def cifar_dir(tmp_path):
  counts = dict(('data_batch_%d' % i, 3) for i in range(1, 6))
  counts['test_batch'] = 4
  return str(tmp_path), _write_cifar(str(tmp_path), counts)


def test_cifar_validation_exact_in_colour_and_grey(cifar_dir):
  directory, written = cifar_dir
  images, labels = written['test_batch']
  data = datasets.get_dataset('cifar10', directory)
  assert data.num_examples('validation') == 4
  assert data.num_examples('train') == 15
  for channels in (3, 1):
    pipeline = datasets.InputPipeline(data, 'validation', 4, 1,
                                      (32, 32, channels))
    ((got_images, got_labels),) = run_batches(pipeline)[0]
    np.testing.assert_array_equal(got_labels, labels)
    want = images.astype(np.float64)
    if channels == 1:
      want = want.dot([0.2989, 0.5870, 0.1140])[..., None]
    np.testing.assert_allclose(got_images, scaled(want), atol=2e-3)


def test_cifar_train_reads_all_five_batches_in_some_order(cifar_dir):
  directory, written = cifar_dir
  pipeline = datasets.InputPipeline(
      datasets.get_dataset('cifar10', directory), 'train', 15, 1,
      (32, 32, 3), seed=3)
  ((got_images, got_labels),) = run_batches(pipeline)[0]
  originals = [scaled(im) for i in range(1, 6)
               for im in written['data_batch_%d' % i][0]]
  original_labels = [l for i in range(1, 6)
                     for l in written['data_batch_%d' % i][1]]
  matched = []
  for image, label in zip(got_images, got_labels):
    (index,) = [i for i, o in enumerate(originals)
                if np.allclose(o, image, atol=ATOL)]
    assert original_labels[index] == label
    matched.append(index)
  assert sorted(matched) == list(range(15))


def _cifar_crops(image):
  """Every image a 40x40 zero-padded 32x32 crop, flipped or not, can be."""
  padded = np.pad(image.astype(np.float64), [(4, 4), (4, 4), (0, 0)])
  for top in range(9):
    for left in range(9):
      crop = padded[top:top + 32, left:left + 32]
      yield crop
      yield crop[:, ::-1]


def test_cifar_distortions_crop_pad_and_flip(cifar_dir):
  directory, written = cifar_dir
  data = datasets.get_dataset('cifar10', directory)

  def batch(seed):
    pipeline = datasets.InputPipeline(data, 'train', 15, 1, (32, 32, 3),
                                      distortions=True, seed=seed)
    return run_batches(pipeline)[0][0]

  images, labels = batch(5)
  again, _ = batch(5)
  other, _ = batch(6)
  np.testing.assert_array_equal(images, again)
  assert not np.array_equal(images, other)
  assert images.shape == (15, 32, 32, 3)
  assert images.min() >= -1.0 and images.max() <= 1.0
  by_label = {}
  for i in range(1, 6):
    for image, label in zip(*written['data_batch_%d' % i]):
      by_label.setdefault(label, []).append(image)
  for image, label in zip(images, labels):
    # Padding is 0, i.e. -1 once scaled: compare in [0, 255].
    raw = (image.astype(np.float64) + 1.0) * 127.5
    assert any(np.allclose(raw, crop, atol=1e-2)
               for original in by_label[label]
               for crop in _cifar_crops(original)), label


# --- imagenet -------------------------------------------------------------

def _sample_jpegs():
  """scikit-learn's two sample photographs, as JPEG bytes."""
  from sklearn import datasets as sk_datasets  # pylint: disable=g-import-not-at-top
  folder = os.path.join(os.path.dirname(sk_datasets.__file__), 'images')
  jpegs = []
  for name in ('china.jpg', 'flower.jpg'):
    with open(os.path.join(folder, name), 'rb') as f:
      jpegs.append(f.read())
  return jpegs


def _made_jpegs(shapes, seed=0):
  """Smooth made-up images of `shapes`, JPEG-encoded by TensorFlow."""
  rng = np.random.RandomState(seed)
  graph = tf.Graph()
  with graph.as_default():
    images = []
    for height, width in shapes:
      small = rng.uniform(0, 255, (4, 4, 3))
      images.append(np.clip(bilinear(small, height, width), 0, 255)
                    .astype(np.uint8))
    encoded = [tf.image.encode_jpeg(im, quality=95) for im in images]
    with tf.Session() as sess:
      return sess.run(encoded)


def _example(jpeg, label, boxes=()):
  feature = {
      'image/encoded': tf.train.Feature(
          bytes_list=tf.train.BytesList(value=[jpeg])),
      'image/class/label': tf.train.Feature(
          int64_list=tf.train.Int64List(value=[label])),
      'image/format': tf.train.Feature(
          bytes_list=tf.train.BytesList(value=[b'JPEG'])),
  }
  for i, key in enumerate(('ymin', 'xmin', 'ymax', 'xmax')):
    feature['image/object/bbox/' + key] = tf.train.Feature(
        float_list=tf.train.FloatList(value=[b[i] for b in boxes]))
  return tf.train.Example(
      features=tf.train.Features(feature=feature)).SerializeToString()



def _decode(jpegs):
  graph = tf.Graph()
  with graph.as_default():
    decoded = [datasets.decode_jpeg(j) for j in jpegs]
    with tf.Session() as sess:
      return sess.run(decoded)


@pytest.fixture(scope='module')
def imagenet_dir(tmp_path_factory):
  directory = str(tmp_path_factory.mktemp('imagenet'))
  jpegs = _sample_jpegs() + _made_jpegs([(40, 60), (64, 48), (50, 50),
                                         (30, 90)])
  labels = [1, 1000, 7, 42, 500, 3]  # 1 to 1000, as the converter writes.
  boxes = [[(0.1, 0.2, 0.6, 0.7)], [], [(0.0, 0.0, 0.5, 0.5),
                                        (0.5, 0.5, 1.0, 1.0)], [], [], []]
  examples = [_example(j, l, b) for j, l, b in zip(jpegs, labels, boxes)]
  write = imagenet_files.write_records
  write(os.path.join(directory, 'train-00000-of-00002'), examples[:3])
  write(os.path.join(directory, 'train-00001-of-00002'), examples[3:])
  write(os.path.join(directory, 'validation-00000-of-00001'), examples)
  return directory, jpegs, labels


def test_imagenet_validation_is_the_central_crop(imagenet_dir):
  directory, jpegs, labels = imagenet_dir
  height, width = 24, 32
  pipeline = datasets.InputPipeline(
      datasets.get_dataset('imagenet', directory), 'validation', 3, 2,
      (height, width, 3), num_classes=1001)
  (step,) = run_batches(pipeline)
  got_images = np.concatenate([images for images, _ in step])
  got_labels = np.concatenate([labels for _, labels in step])
  # As written: tf_cnn_benchmarks feeds them into 1001 logits.
  np.testing.assert_array_equal(got_labels, labels)
  for got, decoded in zip(got_images, _decode(jpegs)):
    in_h, in_w = decoded.shape[:2]
    ratio = max(np.float32(height) / np.float32(in_h),
                np.float32(width) / np.float32(in_w))
    resize_h = int(np.float32(in_h) * np.float32(ratio) * np.float32(1.145))
    resize_w = int(np.float32(in_w) * np.float32(ratio) * np.float32(1.145))
    resized = bilinear(decoded, resize_h, resize_w)
    top, left = (resize_h - height) // 2, (resize_w - width) // 2
    want = scaled(resized[top:top + height, left:left + width])
    np.testing.assert_allclose(got, want, atol=ATOL)


@pytest.mark.parametrize('distortions', [False, True])
def test_imagenet_training_crops_in_range_and_follows_the_seed(
    imagenet_dir, distortions):
  directory, _, labels = imagenet_dir
  data = datasets.get_dataset('imagenet', directory)

  def batches(seed):
    pipeline = datasets.InputPipeline(data, 'train', 6, 1, (20, 20, 3),
                                      distortions=distortions, seed=seed,
                                      data_format='NCHW')
    return run_batches(pipeline, 2)

  first, again, other = batches(11), batches(11), batches(12)
  for step, step_again, step_other in zip(first, again, other):
    (images, got_labels), = step
    np.testing.assert_array_equal(images, step_again[0][0])
    np.testing.assert_array_equal(got_labels, step_again[0][1])
    assert images.shape == (6, 3, 20, 20)
    assert images.min() >= -1.0 and images.max() <= 1.0
    # One epoch a step: every record once.
    assert sorted(got_labels) == sorted(labels)
  assert not np.array_equal(first[0][0][0], other[0][0][0])


def _shuffle_seeds(pipeline):
  """The op seed (seed2) of every shuffle stage of `pipeline`'s graph."""
  graph = tf.Graph()
  with graph.as_default():
    pipeline.tower(0)
    # Inputs: the dataset, the buffer size, seed, seed2 (both generations;
    # seed2 is computed from the op seed on 2.x).
    seed2s = [op.inputs[3] for op in graph.get_operations()
              if op.type.startswith('Shuffle')]
    with tf.Session() as sess:
      return [int(s) for s in sess.run(seed2s)]


def test_imagenet_s_two_shuffles_draw_from_seeds_of_their_own(imagenet_dir):
  """The files' order and the records' order are shuffled with distinct
  op seeds of the run's seed (the same seed would draw both permutations
  from one random stream)."""
  directory, _, _ = imagenet_dir
  pipeline = datasets.InputPipeline(
      datasets.get_dataset('imagenet', directory), 'train', 6, 1,
      (20, 20, 3), seed=11)
  seeds = _shuffle_seeds(pipeline)
  assert len(seeds) == 2, seeds
  assert len(set(seeds)) == 2, seeds


def test_imagenet_training_crop_is_a_region_of_the_image(imagenet_dir):
  """Without distortions, a training image is a resized crop of the
  original, flipped or not: its mean colour stays within the original's
  range of colours, and one grey image stays grey."""
  directory = imagenet_dir[0]
  grey_dir = os.path.join(directory, 'grey')
  os.mkdir(grey_dir)
  graph = tf.Graph()
  with graph.as_default():
    grey = np.full((30, 40, 3), 100, np.uint8)
    with tf.Session() as sess:
      jpeg = sess.run(tf.image.encode_jpeg(grey, quality=100))
  imagenet_files.write_records(os.path.join(grey_dir, 'train-00000-of-00001'),
      [_example(jpeg, 5, [(0.2, 0.2, 0.4, 0.4)])] * 4)
  pipeline = datasets.InputPipeline(datasets.get_dataset('imagenet', grey_dir),
                                    'train', 4, 1, (16, 16, 3), seed=1)
  ((images, labels),) = run_batches(pipeline)[0]
  np.testing.assert_array_equal(labels, [5, 5, 5, 5])
  np.testing.assert_allclose(images, scaled(np.full(images.shape, 100.0)),
                             atol=2.0 / 127.5)


# --- refusals -------------------------------------------------------------

def test_unknown_data_name_lists_the_names():
  with pytest.raises(datasets.UnknownDataNameError,
                     match=r"'mnist'.*imagenet, cifar10, digits"):
    datasets.get_dataset('mnist')


@pytest.mark.parametrize('name', ['imagenet', 'cifar10'])
def test_data_dir_missing_or_not_a_directory(name, tmp_path):
  with pytest.raises(datasets.DataDirError,
                     match='--data_name=%s needs --data_dir' % name):
    datasets.get_dataset(name)
  missing = str(tmp_path / 'nowhere')
  with pytest.raises(datasets.DataDirError,
                     match='--data_dir=%s is not a directory' % missing):
    datasets.get_dataset(name, missing)


def test_missing_files_are_named(tmp_path):
  _write_cifar(str(tmp_path), {'data_batch_1': 1, 'data_batch_3': 1})
  data = datasets.get_dataset('cifar10', str(tmp_path))
  with pytest.raises(datasets.DataDirError,
                     match='lacks data_batch_2, data_batch_4, data_batch_5'):
    datasets.InputPipeline(data, 'train', 1, 1, (32, 32, 3))
  with pytest.raises(datasets.DataDirError, match='lacks test_batch'):
    datasets.InputPipeline(data, 'validation', 1, 1, (32, 32, 3))
  imagenet = datasets.get_dataset('imagenet', str(tmp_path))
  with pytest.raises(datasets.DataDirError,
                     match='no file matching validation-\\*'):
    datasets.InputPipeline(imagenet, 'validation', 1, 1, (32, 32, 3))


@pytest.mark.parametrize('kwargs,match', [
    (dict(subset='test'), r"subset='test': choose one of train, validation"),
    (dict(data_format='nchw'), r"--data_format='nchw'.*NHWC or NCHW"),
    (dict(batch_size=0), r'--batch_size=0: must be a whole number'),
    (dict(num_towers=0), r'--num_gpus \(towers\)=0'),
    (dict(image_shape=(8, 8, 2)), r'image_shape=\(8, 8, 2\).*1 or 3'),
    (dict(num_classes=5), r'digits has 10 classes and the model 5'),
    (dict(drop_remainder=False, num_towers=2),
     r'drop_remainder=False with 2 towers'),
])
def test_bad_options_are_refused_before_any_graph(kwargs, match):
  args = dict(subset='train', batch_size=4, num_towers=1,
              image_shape=(8, 8, 1))
  args.update(kwargs)
  graph = tf.Graph()
  with graph.as_default():
    with pytest.raises(datasets.InputOptionError, match=match):
      datasets.InputPipeline(datasets.get_dataset('digits'), **args)
    assert not graph.get_operations()


def test_towers_of_a_manager_read_their_share_of_one_pipeline():
  """In the harness's tower scopes (replicated, 2 towers), tower d trains on
  images d*batch .. (d+1)*batch-1 of the step, on the CPU."""
  import variable_mgr  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.models import catalog  # pylint: disable=g-import-not-at-top
  model = catalog.get_model('trivial')
  batch, towers = 4, 2
  host = variable_mgr.LocalBenchmarkCnn(towers)
  graph = tf.Graph()
  with graph.as_default():
    mgr = variable_mgr.create('replicated', host)
    host.devices = mgr.get_devices()
    pipeline = datasets.InputPipeline(
        datasets.get_dataset('digits'), 'validation', batch, towers,
        model.image_shape, device=host.cpu_device,
        num_classes=model.num_classes)
    losses, tower_images = [], []
    for d in range(towers):
      with mgr.create_outer_variable_scope(d), \
           tf.name_scope('tower_%i' % d), tf.device(host.devices[d]):
        images, labels = pipeline.tower(d)
        cpu = tf.DeviceSpec.from_string(host.cpu_device).to_string()
        assert images.device == labels.device == cpu
        assert images.shape.as_list() == [batch, 28, 28, 1]
        losses.append(model.build(images, labels))
        tower_images.append(images)
    init = tf.global_variables_initializer()
    with tf.Session(config=host.session_config()) as sess:
      sess.run(init)
      got = sess.run(tower_images + losses)
  digits = _digits_reference()[0][::6]
  for d in range(towers):
    for i in range(batch):
      want = scaled(bilinear(digits[d * batch + i][..., None], 28, 28))
      np.testing.assert_allclose(got[d][i], want, atol=ATOL)
  assert all(np.isfinite(loss) for loss in got[towers:])


def test_imagenet_training_crops_cover_the_boxes(tmp_path):
  """A black 100x100 image white in rows 0-19, columns 0-4, boxed there: a
  training crop covers at least 10% of the box, so most crops show white
  (not every one: a sliver of the box at a mirrored crop's right edge can
  fall between the samples of the legacy bilinear resize, which samples
  each row from its left, as in tf_cnn_benchmarks; the windows themselves:
  test_train_preprocessing.py). Without the box, crops anywhere in the
  image often show none."""
  image = np.zeros((100, 100, 3), np.uint8)
  image[:20, :5] = 255
  graph = tf.Graph()
  with graph.as_default():
    with tf.Session() as sess:
      jpeg = sess.run(tf.image.encode_jpeg(image, quality=100))
  maxima = {}
  for boxes in ([(0.0, 0.0, 0.2, 0.05)], []):
    directory = tmp_path / ('boxed' if boxes else 'unboxed')
    directory.mkdir()
    imagenet_files.write_records(str(directory / 'train-00000-of-00001'),
        [_example(jpeg, 1, boxes)] * 32)
    pipeline = datasets.InputPipeline(
        datasets.get_dataset('imagenet', str(directory)), 'train', 32, 1,
        (16, 16, 3), seed=4)
    ((images, _),) = run_batches(pipeline)[0]
    maxima[bool(boxes)] = images.reshape(32, -1).max(axis=1)
  assert (maxima[True] > -0.5).sum() >= 20, maxima[True]
  assert (maxima[False] < -0.9).sum() >= 8, maxima[False]


def _labels_of(pipeline):
  graph = tf.Graph()
  with graph.as_default():
    batch = tf.data.make_one_shot_iterator(pipeline.dataset()).get_next()
    with tf.Session() as sess:
      return list(sess.run(batch)[1])


def test_imagenet_shards_split_files_or_else_records(imagenet_dir):
  """A worker's share: every second file when there are two (train), every
  second record of the one validation file."""
  directory, _, labels = imagenet_dir
  data = datasets.get_dataset('imagenet', directory)
  shares = {}
  for subset in ('train', 'validation'):
    for index in range(2):
      shares[subset, index] = _labels_of(datasets.InputPipeline(
          data, subset, 6, 1, (16, 16, 3), train=False,
          drop_remainder=False, shard=(index, 2)))
  assert shares['train', 0] == labels[:3]
  assert shares['train', 1] == labels[3:]
  assert shares['validation', 0] == labels[0::2]
  assert shares['validation', 1] == labels[1::2]


def test_imagenet_files_are_read_in_order_and_in_parallel_on_2x_only(
    imagenet_dir):
  """The records come file by file in turn (interleaved); TF 1.15's parallel
  interleave crashes the process now and then when a session closes
  (benchmarks/stress_input_teardown.py), so on 1.15 the files are read one
  after the other, in the same order."""
  directory, _, labels = imagenet_dir
  pipeline = datasets.InputPipeline(
      datasets.get_dataset('imagenet', directory), 'train', 6, 1, (16, 16, 3),
      train=False, drop_remainder=False)
  # train-00000 holds records 0 to 2, train-00001 records 3 to 5.
  assert _labels_of(pipeline) == [labels[i] for i in (0, 3, 1, 4, 2, 5)]
  graph = tf.Graph()
  with graph.as_default():
    pipeline.dataset()
  parallel = [op.type for op in graph.get_operations()
              if op.type.startswith('ParallelInterleaveDataset')]
  if compat.major_version() >= 2:
    assert parallel, 'no parallel interleave on TensorFlow 2'
  else:
    assert not parallel, parallel


def test_digits_shards_are_every_nth_image():
  data = datasets.get_dataset('digits')
  _, labels = data.arrays('train')
  for index in range(3):
    assert _labels_of(datasets.InputPipeline(
        data, 'train', 2000, 1, (8, 8, 1), train=False, drop_remainder=False,
        shard=(index, 3))) == list(labels[index::3])


@pytest.mark.parametrize('shard', [(2, 2), (-1, 2), (0, 0), (1,)])
def test_bad_shards_are_refused(shard):
  with pytest.raises(datasets.InputOptionError, match='shard='):
    datasets.InputPipeline(datasets.get_dataset('digits'), 'train', 2, 1,
                           (8, 8, 1), shard=shard)
