"""Real input pipelines for the benchmark, with tf.data, on the CPU.

Three data sets, as `--data_name` names them:

| name       | where                                       | classes | train / validation |
|------------|---------------------------------------------|---------|--------------------|
| `imagenet` | `train-*` / `validation-*` TFRecords in data_dir | 1000 | as many as the files hold |
| `cifar10`  | `data_batch_1..5` / `test_batch` (python pickles) in data_dir | 10 | 50,000 / 10,000 |
| `digits`   | scikit-learn's bundled `load_digits()`, no download | 10 | 1,497 / 300 |

ImageNet records are those TensorFlow's `build_imagenet_data.py` writes:
`image/encoded` (JPEG), `image/class/label` (int64, 1 to 1000: the pipeline
yields label - 1, so classes are 0 to 999; tf_cnn_benchmarks keeps 1001
logits with class 0 unused instead) and `image/object/bbox/{ymin,xmin,ymax,
xmax}` (floats in [0, 1], any number of boxes). Preprocessing follows
tf_cnn_benchmarks: for training, a crop sampled by
`sample_distorted_bounding_box` around the boxes (the whole image if none;
at least 10% of a box, aspect 0.75 to 1.33, 5% to 100% of the area), a
random left-right flip and a bilinear resize to the model's size, and with
`distortions` a random brightness, saturation, hue and contrast too; for
evaluation, a resize that keeps the aspect ratio to 1.145 times the model's
size at least, then the central crop. CIFAR-10 with `distortions` trains on
a random 32x32 crop of the image padded to 40x40, randomly flipped;
otherwise, and for evaluation, the image itself. Digits are never
distorted; the split is fixed: every sixth image (index 0, 6, 12, ...) is
validation, the rest train.

Every image then becomes the model's `(height, width, channels)`: resized
bilinearly when its size differs, turned grey (or grey repeated to three
channels) when its channels differ, scaled to [-1, 1]; labels are int32.

One pipeline feeds every tower (as tf_cnn_benchmarks' does): records are
read and shuffled in order, then decoded and transformed in parallel
(`num_parallel_calls=AUTOTUNE`, order kept), batched with a batch for
every tower, prefetched, and split between the towers. Every random choice
(the shuffle, crop boxes, flips, colour factors) is drawn in one sequential
stage before the parallel one, so with a `seed` the batches are the same on
every run; without one they differ. The same code runs on TensorFlow 1.15
and 2.x.

A worker of a cluster reads its own share (`shard=(index, count)`):
every count-th example from `index` on (cifar10, digits), or every
count-th file (imagenet; every count-th record when there are fewer files
than workers), so the workers' shares are disjoint.

Usage, in the harness's tower loop::

    pipeline = datasets.InputPipeline(
        datasets.get_dataset('cifar10', data_dir), 'train', batch_size=32,
        num_towers=4, image_shape=model.image_shape, seed=1234,
        device=host.cpu_device, distortions=True)
    for d in range(4):
      ...   # in tower d's scopes
      images, labels = pipeline.tower(d)
"""

import glob
import os
import pickle

import numpy as np
import tensorflow as _tf

from variable_mgr import errors

tf = _tf.compat.v1

AUTOTUNE = _tf.data.experimental.AUTOTUNE
SUBSETS = ('train', 'validation')
DATA_FORMATS = ('NHWC', 'NCHW')
SHUFFLE_BUFFER = 10000

# tf_cnn_benchmarks' training crop and evaluation resize.
MIN_OBJECT_COVERED = 0.1
ASPECT_RATIO_RANGE = (0.75, 1.33)
AREA_RANGE = (0.05, 1.0)
MAX_ATTEMPTS = 100
EVAL_SCALE = 1.145
CIFAR_PADDING = 4
DIGITS_EVAL_EVERY = 6


class DataError(errors.VariableMgrError):
  """Base class of the input pipelines' configuration errors."""


class UnknownDataNameError(DataError):
  """The data set name is not one of DATA_NAMES."""


class DataDirError(DataError):
  """The data set needs a data directory that is missing or lacks files."""


class InputOptionError(DataError):
  """A pipeline option (subset, data format, batch, shape, classes) is
  outside its domain."""


class DataSet(object):
  """A data set: its files (checked at construction), its classes, and the
  tf.data pipeline of one subset's examples (unbatched)."""

  name = None
  num_classes = None

  def check_subset(self, subset):
    """Raises DataDirError if the files of `subset` are missing."""
    raise NotImplementedError

  def num_examples(self, subset):
    """How many examples `subset` holds, or None if unknown without reading
    the files (imagenet)."""
    raise NotImplementedError

  def examples(self, subset, image_shape, train, distortions, seed,
               shard=None):
    """`tf.data.Dataset` of (image float32 image_shape in [-1, 1], label
    int32), in order for evaluation, shuffled and repeated for training;
    with `shard=(index, count)` only every count-th example from `index`
    on (files of imagenet when there are enough)."""
    raise NotImplementedError


def _op_seeds(seed, count):
  """`count` distinct op seeds from one seed, or Nones."""
  if seed is None:
    return [None] * count
  return [seed * 101 + i for i in range(1, count + 1)]


def _to_shape(image, image_shape):
  """float32 HWC in [0, 255] -> image_shape, in [-1, 1]."""
  height, width, channels = image_shape
  static = image.shape.as_list()
  if static[:2] != [height, width]:
    image = tf.image.resize_bilinear(tf.expand_dims(image, 0),
                                     [height, width], align_corners=False)[0]
  if static[2] != channels:
    if channels == 1:
      image = tf.image.rgb_to_grayscale(image)
    else:
      image = tf.tile(image, [1, 1, channels])
  image.set_shape([height, width, channels])
  return image * (1.0 / 127.5) - 1.0


def _maybe_flip(image, flip):
  return tf.cond(flip, lambda: tf.reverse(image, [1]), lambda: image)


class _InMemory(DataSet):
  """Images held as a uint8 NHWC array (cifar10, digits after scaling)."""

  def _arrays(self, subset):
    raise NotImplementedError

  def num_examples(self, subset):
    return len(self._arrays(subset)[1])

  distorts = False  # Has a training distortion (cifar10's crop and flip).

  def _draw(self, seeds):
    """A function drawing one image's random choices, seeded."""
    raise NotImplementedError

  def _distort(self, image, draws):
    raise NotImplementedError

  def examples(self, subset, image_shape, train, distortions, seed,
               shard=None):
    images, labels = self._arrays(subset)
    if shard is not None:
      images, labels = images[shard[0]::shard[1]], labels[shard[0]::shard[1]]
    data = tf.data.Dataset.from_tensor_slices(
        (images, labels.astype(np.int32)))
    seeds = _op_seeds(seed, 4)
    if train:
      data = data.shuffle(min(SHUFFLE_BUFFER, len(labels)), seed=seeds[0])
      data = data.repeat()
    distort = train and distortions and self.distorts
    if distort:
      draw = self._draw(seeds[1:])
      data = data.map(lambda image, label: (image, label, draw()))

    def transform(image, label, draws=None):
      image = tf.cast(image, tf.float32)
      if distort:
        image = self._distort(image, draws)
      return _to_shape(image, image_shape), label

    return data.map(transform, num_parallel_calls=AUTOTUNE)


class Cifar10(_InMemory):
  """CIFAR-10's python batches: dicts with `data` (N x 3072 uint8, the red,
  green and blue planes of a 32x32 image) and `labels`."""

  name = 'cifar10'
  num_classes = 10
  distorts = True
  FILES = {'train': ['data_batch_%d' % i for i in range(1, 6)],
           'validation': ['test_batch']}

  def __init__(self, data_dir):
    self.data_dir = _check_dir(self.name, data_dir,
                               'data_batch_1..5 and test_batch')
    self._cache = {}

  def check_subset(self, subset):
    missing = [f for f in self.FILES[subset]
               if not os.path.isfile(os.path.join(self.data_dir, f))]
    if missing:
      raise DataDirError(
          '--data_dir=%s lacks %s: cifar10 %s reads %s, the python version '
          "of CIFAR-10 (cifar-10-python.tar.gz, unpacked); give the "
          'directory that holds them' % (
              self.data_dir, ', '.join(missing), subset,
              ', '.join(self.FILES[subset])))

  def _arrays(self, subset):
    if subset not in self._cache:
      self.check_subset(subset)
      images, labels = [], []
      for name in self.FILES[subset]:
        with open(os.path.join(self.data_dir, name), 'rb') as f:
          batch = pickle.load(f, encoding='bytes')
        batch = dict((k.decode() if isinstance(k, bytes) else k, v)
                     for k, v in batch.items())
        data = np.asarray(batch['data'], np.uint8)
        images.append(data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
        labels.append(np.asarray(batch['labels'], np.int64))
      self._cache[subset] = (np.concatenate(images), np.concatenate(labels))
    return self._cache[subset]

  def _draw(self, seeds):
    span = 2 * CIFAR_PADDING + 1

    def draw():
      offsets = tf.random.uniform([2], 0, span, tf.int32, seed=seeds[0])
      flip = tf.random.uniform([], seed=seeds[1]) < 0.5
      return offsets, flip
    return draw

  def _distort(self, image, draws):
    offsets, flip = draws
    padded = tf.pad(image, [[CIFAR_PADDING, CIFAR_PADDING],
                            [CIFAR_PADDING, CIFAR_PADDING], [0, 0]])
    crop = tf.slice(padded, tf.concat([offsets, [0]], 0), [32, 32, 3])
    return _maybe_flip(crop, flip)


class Digits(_InMemory):
  """scikit-learn's 8x8 digits (values 0 to 16, scaled to 0 to 255)."""

  name = 'digits'
  num_classes = 10

  def __init__(self, data_dir=None):
    del data_dir  # Bundled with scikit-learn.
    self._split = None

  def check_subset(self, subset):
    self._arrays(subset)

  def _arrays(self, subset):
    if self._split is None:
      try:
        from sklearn import datasets as sk_datasets  # pylint: disable=g-import-not-at-top
      except ImportError as e:
        raise DataDirError(
            'digits needs scikit-learn (%s): pip install scikit-learn, or '
            "install this package with its 'tests' extra" % e)
      digits = sk_datasets.load_digits()
      images = np.round(digits.images * (255.0 / 16.0)).astype(np.uint8)
      images = images[..., None]
      labels = digits.target.astype(np.int64)
      is_eval = np.arange(len(labels)) % DIGITS_EVAL_EVERY == 0
      self._split = {'train': (images[~is_eval], labels[~is_eval]),
                     'validation': (images[is_eval], labels[is_eval])}
    return self._split[subset]


class ImageNet(DataSet):
  """TFRecords of tf.train.Example, as build_imagenet_data.py writes."""

  name = 'imagenet'
  num_classes = 1000
  PATTERNS = {'train': 'train-*', 'validation': 'validation-*'}

  def __init__(self, data_dir):
    self.data_dir = _check_dir(self.name, data_dir,
                               'train-* and validation-* TFRecord files')

  def files(self, subset):
    pattern = os.path.join(self.data_dir, self.PATTERNS[subset])
    found = sorted(glob.glob(pattern))
    if not found:
      raise DataDirError(
          '--data_dir=%s has no file matching %s: imagenet %s reads the '
          "TFRecords of TensorFlow's build_imagenet_data.py (train-00000-of-"
          '01024, validation-00000-of-00128, ...); give the directory that '
          'holds them' % (self.data_dir, self.PATTERNS[subset], subset))
    return found

  def check_subset(self, subset):
    self.files(subset)

  def num_examples(self, subset):
    return None

  def examples(self, subset, image_shape, train, distortions, seed,
               shard=None):
    files = self.files(subset)
    seeds = _op_seeds(seed, 9)
    record_shard = None
    if shard is not None:
      if len(files) >= shard[1]:
        files = files[shard[0]::shard[1]]
      else:
        record_shard = shard
    data = tf.data.Dataset.from_tensor_slices(files)
    if train:
      data = data.shuffle(len(files), seed=seeds[0])
    data = data.interleave(tf.data.TFRecordDataset,
                           cycle_length=min(len(files), 8), block_length=1,
                           num_parallel_calls=AUTOTUNE)
    if record_shard is not None:
      data = data.shard(record_shard[1], record_shard[0])
    if train:
      data = data.shuffle(SHUFFLE_BUFFER, seed=seeds[1]).repeat()
    data = data.map(parse_example, num_parallel_calls=AUTOTUNE)
    height, width = image_shape[:2]
    if not train:
      def evaluate(buffer, label, bbox):
        del bbox
        image = tf.cast(decode_jpeg(buffer), tf.float32)
        return _to_shape(eval_crop(image, height, width), image_shape), label
      return data.map(evaluate, num_parallel_calls=AUTOTUNE)

    def draw(buffer, label, bbox):
      begin, size, _ = tf.image.sample_distorted_bounding_box(
          tf.image.extract_jpeg_shape(buffer), bounding_boxes=bbox,
          min_object_covered=MIN_OBJECT_COVERED,
          aspect_ratio_range=ASPECT_RATIO_RANGE, area_range=AREA_RANGE,
          max_attempts=MAX_ATTEMPTS, use_image_if_no_bounding_boxes=True,
          seed=seeds[2])
      flip = tf.random.uniform([], seed=seeds[3]) < 0.5
      colour = ()
      if distortions:
        colour = (tf.random.uniform([], -32. / 255., 32. / 255., seed=seeds[4]),
                  tf.random.uniform([], 0.5, 1.5, seed=seeds[5]),
                  tf.random.uniform([], -0.2, 0.2, seed=seeds[6]),
                  tf.random.uniform([], 0.5, 1.5, seed=seeds[7]),
                  tf.random.uniform([], 0, 2, tf.int32, seed=seeds[8]))
      return buffer, label, (begin, size, flip, colour)

    def distort(buffer, label, draws):
      begin, size, flip, colour = draws
      image = tf.slice(decode_jpeg(buffer), begin, size)
      image = tf.image.resize_bilinear(
          tf.expand_dims(image, 0), [height, width], align_corners=False)[0]
      image = _maybe_flip(image, flip)
      image.set_shape([height, width, 3])
      if distortions:
        image = distort_color(image, *colour)
      return _to_shape(image, image_shape), label

    data = data.map(draw)  # Sequential: the draws follow the seed.
    return data.map(distort, num_parallel_calls=AUTOTUNE)


def parse_example(serialized):
  """An ImageNet Example -> (JPEG bytes, label in [0, 1000), boxes
  [1, n, 4] as (ymin, xmin, ymax, xmax))."""
  box = tf.io.VarLenFeature(tf.float32)
  features = tf.io.parse_single_example(serialized, {
      'image/encoded': tf.io.FixedLenFeature([], tf.string, ''),
      'image/class/label': tf.io.FixedLenFeature([1], tf.int64, -1),
      'image/object/bbox/ymin': box, 'image/object/bbox/xmin': box,
      'image/object/bbox/ymax': box, 'image/object/bbox/xmax': box,
  })
  label = tf.cast(features['image/class/label'][0], tf.int32) - 1
  coordinates = [features['image/object/bbox/' + k].values
                 for k in ('ymin', 'xmin', 'ymax', 'xmax')]
  bbox = tf.expand_dims(tf.stack(coordinates, axis=1), 0)
  return features['image/encoded'], label, bbox


def decode_jpeg(buffer):
  """uint8 HWC RGB, decoded as tf_cnn_benchmarks decodes."""
  return tf.image.decode_jpeg(buffer, channels=3, fancy_upscaling=False,
                              dct_method='INTEGER_FAST')


def eval_crop(image, height, width):
  """tf_cnn_benchmarks' evaluation image: resize float HWC keeping the
  aspect ratio so that both sides are at least EVAL_SCALE times
  (height, width), then take the central height x width."""
  shape = tf.shape(image)
  image_height = tf.cast(shape[0], tf.float32)
  image_width = tf.cast(shape[1], tf.float32)
  ratio = tf.maximum(height / image_height, width / image_width)
  resize_height = tf.cast(image_height * ratio * EVAL_SCALE, tf.int32)
  resize_width = tf.cast(image_width * ratio * EVAL_SCALE, tf.int32)
  resized = tf.image.resize_bilinear(
      tf.expand_dims(image, 0), tf.stack([resize_height, resize_width]),
      align_corners=False)[0]
  top = (resize_height - height) // 2
  left = (resize_width - width) // 2
  crop = tf.slice(resized, tf.stack([top, left, 0]), [height, width, 3])
  crop.set_shape([height, width, 3])
  return crop


def distort_color(image, brightness, saturation, hue, contrast, order):
  """tf_cnn_benchmarks' colour distortion of float HWC in [0, 255], with
  the factors drawn beforehand; `order` 0 or 1 picks one of its two
  orders."""
  image = image / 255.0

  def brightness_first():
    x = tf.image.adjust_brightness(image, brightness)
    x = tf.image.adjust_saturation(x, saturation)
    x = tf.image.adjust_hue(x, hue)
    return tf.image.adjust_contrast(x, contrast)

  def brightness_after_saturation():
    x = tf.image.adjust_brightness(image, brightness)
    x = tf.image.adjust_contrast(x, contrast)
    x = tf.image.adjust_saturation(x, saturation)
    return tf.image.adjust_hue(x, hue)

  image = tf.cond(tf.equal(order, 0), brightness_first,
                  brightness_after_saturation)
  return tf.clip_by_value(image, 0.0, 1.0) * 255.0


DATA_SETS = {'imagenet': ImageNet, 'cifar10': Cifar10, 'digits': Digits}
DATA_NAMES = ('imagenet', 'cifar10', 'digits')


def _check_dir(name, data_dir, holds):
  if not data_dir:
    raise DataDirError(
        '--data_name=%s needs --data_dir: the directory that holds %s'
        % (name, holds))
  if not os.path.isdir(data_dir):
    raise DataDirError(
        '--data_dir=%s is not a directory: %s reads %s from one'
        % (data_dir, name, holds))
  return data_dir


def get_dataset(name, data_dir=None):
  """The data set `name`, its directory checked (no graph is built).

  Raises:
    UnknownDataNameError: `name` is not in DATA_NAMES.
    DataDirError: the data set needs `data_dir` and it is missing or not a
      directory.
  """
  if name not in DATA_SETS:
    raise UnknownDataNameError(
        '--data_name=%r is not a data set of this benchmark: choose one of '
        '%s, or leave it out for synthetic data' % (name, ', '.join(
            DATA_NAMES)))
  return DATA_SETS[name](data_dir)


class InputPipeline(object):
  """One input pipeline for every tower; `tower(d)` gives tower d's batch.

  Args:
    data: a DataSet (from `get_dataset`).
    subset: 'train' or 'validation'.
    batch_size: images per tower and step.
    num_towers: towers fed; each step reads batch_size x num_towers images.
    image_shape: the model's `(height, width, channels)`, channels 1 or 3.
    data_format: 'NHWC' or 'NCHW': the layout of the images returned.
    train: shuffle, repeat and distort (imagenet always crops and flips);
      None means `subset == 'train'`.
    distortions: more distortions in training: colour for imagenet, crop and
      flip for cifar10 (none for digits).
    seed: with a seed every run gives the same batches.
    device: where the pipeline's ops go (the CPU), or None for the scope's.
    num_classes: the model's class count; refused if the data set has more.
    drop_remainder: drop a last step with fewer than batch_size x
      num_towers images (without training's repeat); the batch dimension
      is then known.
    shard: `(index, count)`: read only this share of the subset (a worker
      `index` of `count`; the shares are disjoint), or None for all.

  Raises:
    InputOptionError: a bad subset, data format, batch size, tower count,
      image shape or class count.
    DataDirError: the subset's files are missing.
  """

  def __init__(self, data, subset, batch_size, num_towers, image_shape,
               data_format='NHWC', train=None, distortions=False, seed=None,
               device=None, num_classes=None, drop_remainder=True,
               shard=None):
    if subset not in SUBSETS:
      raise InputOptionError('subset=%r: choose one of %s' %
                             (subset, ', '.join(SUBSETS)))
    if data_format not in DATA_FORMATS:
      raise InputOptionError(
          '--data_format=%r: images are laid out as NHWC or NCHW (case '
          'matters); choose one' % (data_format,))
    for what, value in (('--batch_size', batch_size),
                        ('--num_gpus (towers)', num_towers)):
      if not isinstance(value, int) or value < 1:
        raise InputOptionError('%s=%r: must be a whole number at least 1'
                               % (what, value))
    image_shape = tuple(image_shape)
    if (len(image_shape) != 3 or image_shape[2] not in (1, 3) or
        min(image_shape) < 1):
      raise InputOptionError(
          'image_shape=%r: must be (height, width, channels) with 1 or 3 '
          'channels' % (image_shape,))
    if num_classes is not None and num_classes < data.num_classes:
      raise InputOptionError(
          '%s has %d classes and the model %d: its labels would fall outside '
          'the logits; choose a model with at least %d classes'
          % (data.name, data.num_classes, num_classes, data.num_classes))
    if not drop_remainder and num_towers > 1:
      raise InputOptionError(
          'drop_remainder=False with %d towers: a last, smaller batch cannot '
          'be split evenly between towers; keep the remainder with one tower '
          'only' % num_towers)
    if shard is not None and not (
        len(shard) == 2 and 0 <= shard[0] < shard[1]):
      raise InputOptionError(
          'shard=%r: must be (index, count) with 0 <= index < count'
          % (shard,))
    data.check_subset(subset)
    self.shard = None if shard is None else tuple(shard)
    self.data = data
    self.subset = subset
    self.batch_size = batch_size
    self.num_towers = num_towers
    self.image_shape = image_shape
    self.data_format = data_format
    self.train = subset == 'train' if train is None else train
    self.distortions = distortions
    self.seed = seed
    self.device = device
    self.drop_remainder = drop_remainder
    self._towers = None

  def dataset(self):
    """`tf.data.Dataset` of (images, labels): one step's batch for every
    tower, images in `data_format`, prefetched."""
    data = self.data.examples(self.subset, self.image_shape, self.train,
                              self.distortions, self.seed, self.shard)
    data = data.batch(self.batch_size * self.num_towers,
                      drop_remainder=self.drop_remainder)
    if self.data_format == 'NCHW':
      data = data.map(lambda images, labels: (
          tf.transpose(images, [0, 3, 1, 2]), labels))
    return data.prefetch(AUTOTUNE)

  def tower(self, d):
    """`(images, labels)` of tower `d`: `[batch_size] + image_shape` in
    `data_format`, float32 in [-1, 1]; int32 labels. The first call builds
    the pipeline and its iterator in the current graph."""
    if self._towers is None:
      with tf.device(self.device), tf.name_scope('input_pipeline'):
        images, labels = tf.data.make_one_shot_iterator(
            self.dataset()).get_next()
        self._towers = list(zip(tf.split(images, self.num_towers),
                                tf.split(labels, self.num_towers)))
    return self._towers[d]
