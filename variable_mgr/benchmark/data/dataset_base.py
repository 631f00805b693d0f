"""What every data set of the benchmark shares: its errors, its interface
and the last steps of every image.

A `DataSet` checks its files at construction (`check_subset` for one
split) and gives the tf.data pipeline of one split's examples, unbatched;
`datasets.InputPipeline` batches them for the towers. Every image ends as
the model's `(height, width, channels)` through `to_shape`: resized
bilinearly when its size differs, turned grey (or grey repeated to three
channels) when its channels differ, scaled to [-1, 1].
"""

import os

from variable_mgr import errors
from variable_mgr.compat import tf

AUTOTUNE = tf.data.experimental.AUTOTUNE
SHUFFLE_BUFFER = 10000


class DataError(errors.VariableMgrError):
  """Base class of the input pipelines' configuration errors."""


class UnknownDataNameError(DataError):
  """The data set name is not one of DATA_NAMES."""


class DataDirError(DataError):
  """The data set needs a data directory that is missing or lacks files."""


class DataFileError(DataError):
  """A file of the data set is there but cannot be read as one: truncated,
  of another format, or holding a label outside the data set's classes."""


class InputOptionError(DataError):
  """A pipeline option (subset, data format, batch, shape, classes) is
  outside its domain."""


class DataSet(object):
  """A data set: its files (checked at construction), its classes, and the
  tf.data pipeline of one subset's examples (unbatched)."""

  name = None
  num_classes = None

  def check_subset(self, subset):
    """Raises DataDirError if the files of `subset` are missing, or
    DataFileError if one is damaged where that is cheap to tell."""
    raise NotImplementedError

  def num_examples(self, subset):
    """How many examples `subset` holds, or None if unknown without reading
    the files (imagenet)."""
    raise NotImplementedError

  def examples(self, subset, image_shape, train, distortions, seed,
               shard=None):
    """`tf.data.Dataset` of (image float32 image_shape in [-1, 1], label
    int32 in [0, num_classes)), in order for evaluation, shuffled and
    repeated for training; with `shard=(index, count)` only every count-th
    example from `index` on (files of imagenet when there are enough)."""
    raise NotImplementedError


def op_seeds(seed, count):
  """`count` distinct op seeds from one seed, or Nones."""
  if seed is None:
    return [None] * count
  return [seed * 101 + i for i in range(1, count + 1)]


def to_shape(image, image_shape):
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


def maybe_flip(image, flip):
  """`image` reversed left to right where the boolean tensor `flip` is
  true."""
  return tf.cond(flip, lambda: tf.reverse(image, [1]), lambda: image)


def check_dir(name, data_dir, holds):
  """`data_dir`, refused with DataDirError when missing or not a
  directory; `holds` says what data set `name` reads from it."""
  if not data_dir:
    raise DataDirError(
        '--data_name=%s needs --data_dir: the directory that holds %s'
        % (name, holds))
  if not os.path.isdir(data_dir):
    raise DataDirError(
        '--data_dir=%s is not a directory: %s reads %s from one'
        % (data_dir, name, holds))
  return data_dir
