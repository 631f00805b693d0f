"""The data sets held in memory as uint8 NHWC arrays: CIFAR-10's python
batches and scikit-learn's digits.

CIFAR-10 (`data_batch_1..5` / `test_batch`, the pickles of
cifar-10-python.tar.gz) is read and checked at its first use, before any
graph: a file that is truncated, is not a pickle of a CIFAR-10 batch, or
holds a label outside 0 to 9 is refused by name, with what is wrong. With
`distortions` training takes a random 32x32 crop of the image padded to
40x40, randomly flipped; otherwise, and for evaluation, the image itself.

Digits are never distorted; the split is fixed: every sixth image (index
0, 6, 12, ...) is validation, the rest train.
"""

import os
import pickle

import numpy as np

from variable_mgr.benchmark.data import dataset_base
from variable_mgr.compat import tf

CIFAR_PADDING = 4
CIFAR_IMAGE_BYTES = 32 * 32 * 3
DIGITS_EVAL_EVERY = 6


class InMemory(dataset_base.DataSet):
  """Images held as a uint8 NHWC array (cifar10, digits after scaling)."""

  distorts = False  # Has a training distortion (cifar10's crop and flip).

  def arrays(self, subset):
    """(uint8 NHWC images, int64 labels) of `subset`."""
    raise NotImplementedError

  def num_examples(self, subset):
    return len(self.arrays(subset)[1])

  def _draw(self, seeds):
    """A function drawing one image's random choices, seeded."""
    raise NotImplementedError

  def _distort(self, image, draws):
    raise NotImplementedError

  def examples(self, subset, image_shape, train, distortions, seed,
               shard=None):
    images, labels = self.arrays(subset)
    if shard is not None:
      images, labels = images[shard[0]::shard[1]], labels[shard[0]::shard[1]]
    data = tf.data.Dataset.from_tensor_slices(
        (images, labels.astype(np.int32)))
    seeds = dataset_base.op_seeds(seed, 4)
    if train:
      data = data.shuffle(min(dataset_base.SHUFFLE_BUFFER, len(labels)),
                          seed=seeds[0])
      data = data.repeat()
    distort = train and distortions and self.distorts
    if distort:
      draw = self._draw(seeds[1:])
      data = data.map(lambda image, label: (image, label, draw()))

    def transform(image, label, draws=None):
      image = tf.cast(image, tf.float32)
      if distort:
        image = self._distort(image, draws)
      return dataset_base.to_shape(image, image_shape), label

    return data.map(transform, num_parallel_calls=dataset_base.AUTOTUNE)


def read_cifar_batch(path, num_classes=10):
  """(uint8 NHWC images, int64 labels) of one CIFAR-10 python batch.

  Raises:
    DataFileError: the file is not a whole pickle of a dict with `data`
      (N x 3072 bytes) and N `labels` in [0, num_classes), saying which
      and what it holds instead.
  """
  size = os.path.getsize(path)

  def refuse(what):
    return dataset_base.DataFileError(
        '%s (%d bytes) is not a CIFAR-10 python batch: %s; download '
        'cifar-10-python.tar.gz again and unpack it into --data_dir' % (
            path, size, what))

  try:
    with open(path, 'rb') as f:
      batch = pickle.load(f, encoding='bytes')
  except (EOFError, pickle.UnpicklingError, ValueError, TypeError,
          AttributeError, ImportError, IndexError, KeyError,
          MemoryError) as e:
    # Python 3.7 raises EOFError at a cut, later ones UnpicklingError
    # 'pickle data was truncated'.
    if isinstance(e, EOFError) or 'truncated' in str(e):
      raise refuse('it ends before its pickle does (truncated or empty)')
    raise refuse('it does not unpickle (%s: %s)' % (type(e).__name__, e))
  if not isinstance(batch, dict):
    raise refuse('it holds a %s, not a dict' % type(batch).__name__)
  batch = dict((k.decode() if isinstance(k, bytes) else k, v)
               for k, v in batch.items())
  missing = [k for k in ('data', 'labels') if k not in batch]
  if missing:
    raise refuse('its dict lacks %s (keys: %s)' % (
        ' and '.join(repr(k) for k in missing),
        ', '.join(sorted(repr(k) for k in batch))))
  data = np.asarray(batch['data'])
  labels = np.asarray(batch['labels'])
  if data.ndim != 2 or data.shape[1] != CIFAR_IMAGE_BYTES:
    raise refuse('its data has shape %s, not (N, %d)' % (
        data.shape, CIFAR_IMAGE_BYTES))
  if labels.shape != (len(data),):
    raise refuse('it has %d images and labels of shape %s' % (
        len(data), labels.shape))
  bad = np.flatnonzero((labels < 0) | (labels >= num_classes))
  if len(bad):
    raise refuse('label %s of image %d is outside 0 to %d (%d such labels)'
                 % (labels[bad[0]], bad[0], num_classes - 1, len(bad)))
  images = data.astype(np.uint8).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
  return images, labels.astype(np.int64)


class Cifar10(InMemory):
  """CIFAR-10's python batches: dicts with `data` (N x 3072 uint8, the red,
  green and blue planes of a 32x32 image) and `labels`."""

  name = 'cifar10'
  num_classes = 10
  distorts = True
  FILES = {'train': ['data_batch_%d' % i for i in range(1, 6)],
           'validation': ['test_batch']}

  def __init__(self, data_dir):
    self.data_dir = dataset_base.check_dir(self.name, data_dir,
                                           'data_batch_1..5 and test_batch')
    self._cache = {}

  def _check_present(self, subset):
    missing = [f for f in self.FILES[subset]
               if not os.path.isfile(os.path.join(self.data_dir, f))]
    if missing:
      raise dataset_base.DataDirError(
          '--data_dir=%s lacks %s: cifar10 %s reads %s, the python version '
          "of CIFAR-10 (cifar-10-python.tar.gz, unpacked); give the "
          'directory that holds them' % (
              self.data_dir, ', '.join(missing), subset,
              ', '.join(self.FILES[subset])))

  def check_subset(self, subset):
    """Checks that the subset's files are there, then reads them: a
    damaged one is refused here, before any graph."""
    self._check_present(subset)
    self.arrays(subset)

  def arrays(self, subset):
    if subset not in self._cache:
      self._check_present(subset)
      read = [read_cifar_batch(os.path.join(self.data_dir, name),
                               self.num_classes)
              for name in self.FILES[subset]]
      self._cache[subset] = (np.concatenate([r[0] for r in read]),
                             np.concatenate([r[1] for r in read]))
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
    return dataset_base.maybe_flip(crop, flip)


class Digits(InMemory):
  """scikit-learn's 8x8 digits (values 0 to 16, scaled to 0 to 255)."""

  name = 'digits'
  num_classes = 10

  def __init__(self, data_dir=None):
    del data_dir  # Bundled with scikit-learn.
    self._split = None

  def check_subset(self, subset):
    self.arrays(subset)

  def arrays(self, subset):
    if self._split is None:
      try:
        from sklearn import datasets as sk_datasets  # pylint: disable=g-import-not-at-top
      except ImportError as e:
        raise dataset_base.DataDirError(
            'digits needs scikit-learn (%s): pip install scikit-learn, or '
            "pip install -e '.[data]' in the checkout" % e)
      digits = sk_datasets.load_digits()
      images = np.round(digits.images * (255.0 / 16.0)).astype(np.uint8)
      images = images[..., None]
      labels = digits.target.astype(np.int64)
      is_eval = np.arange(len(labels)) % DIGITS_EVAL_EVERY == 0
      self._split = {'train': (images[~is_eval], labels[~is_eval]),
                     'validation': (images[is_eval], labels[is_eval])}
    return self._split[subset]
