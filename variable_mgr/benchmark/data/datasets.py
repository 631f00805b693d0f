"""Real input pipelines for the benchmark, with tf.data, on the CPU.

Three data sets, as `--data_name` names them:

| name       | where                                       | classes | train / validation |
|------------|---------------------------------------------|---------|--------------------|
| `imagenet` | `train-*` / `validation-*` TFRecords in data_dir | 1001 | as many as the files hold |
| `cifar10`  | `data_batch_1..5` / `test_batch` (python pickles) in data_dir | 10 | 50,000 / 10,000 |
| `digits`   | scikit-learn's bundled `load_digits()`, no download | 10 | 1,497 / 300 |

Each lives in a module of its own: `imagenet_records` (the TFRecords of
TensorFlow's `build_imagenet_data.py`, labels fed as written into 1001
classes, class 0 the background, and tf_cnn_benchmarks' preprocessing),
`array_datasets` (CIFAR-10's pickles, checked when read; scikit-learn's
digits); `dataset_base` holds what they share. This module names them
(`get_dataset`) and batches their examples for the towers
(`InputPipeline`).

Every image becomes the model's `(height, width, channels)`: resized
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

from variable_mgr.benchmark.data import array_datasets
from variable_mgr.benchmark.data import dataset_base
from variable_mgr.benchmark.data import imagenet_records
from variable_mgr.compat import tf

SUBSETS = ('train', 'validation')
DATA_FORMATS = ('NHWC', 'NCHW')

# The errors and data sets, under the names this module has always had.
DataError = dataset_base.DataError
UnknownDataNameError = dataset_base.UnknownDataNameError
DataDirError = dataset_base.DataDirError
DataFileError = dataset_base.DataFileError
InputOptionError = dataset_base.InputOptionError
DataSet = dataset_base.DataSet
ImageNet = imagenet_records.ImageNet
Cifar10 = array_datasets.Cifar10
Digits = array_datasets.Digits
decode_jpeg = imagenet_records.decode_jpeg

DATA_SETS = {'imagenet': ImageNet, 'cifar10': Cifar10, 'digits': Digits}
DATA_NAMES = ('imagenet', 'cifar10', 'digits')


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
    return data.prefetch(dataset_base.AUTOTUNE)

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
