"""ImageNet as TFRecords of tf.train.Example, as TensorFlow's
`build_imagenet_data.py` writes them, read and preprocessed as
tf_cnn_benchmarks does.

A record holds `image/encoded` (JPEG), `image/class/label` (int64) and
`image/object/bbox/{ymin,xmin,ymax,xmax}` (floats in [0, 1], any number of
boxes). The label is fed as written into 1001 classes, as
tf_cnn_benchmarks feeds it: class 0 is the background, which the real
files (labels 1 to 1000) never use and tf_cnn_benchmarks' own test records
(labels 0 to 9) do. A record whose label is missing or outside 0 to 1000
stops the run with an error that names its file and its index in the file
(training and evaluation alike), instead of a loss that cannot be computed
or an image scored as a miss.

Training takes a crop sampled by `sample_distorted_bounding_box` around
the boxes (the whole image if none; at least 10% of a box, aspect 0.75 to
1.33, 5% to 100% of the area), a random left-right flip and a bilinear
resize to the model's size, and with `distortions` a random brightness,
saturation, hue and contrast too. Evaluation resizes keeping the aspect
ratio to 1.145 times the model's size at least, then takes the central
crop.

A damaged file (truncated by a copy that stopped, say) is found when it is
read: TensorFlow's error says `truncated record at <byte>` without the
file, so `describe_data_loss` walks the record headers of the files this
process has read (`FILES_READ`) and names the one that ends inside a
record.
"""

import glob
import os
import re
import struct

from variable_mgr import compat
from variable_mgr.benchmark.data import dataset_base
from variable_mgr.benchmark.data import tfrecord_headers
from variable_mgr.compat import tf

NUM_CLASSES = 1001
# tf_cnn_benchmarks' training crop and evaluation resize.
MIN_OBJECT_COVERED = 0.1
ASPECT_RATIO_RANGE = (0.75, 1.33)
AREA_RANGE = (0.05, 1.0)
MAX_ATTEMPTS = 100
EVAL_SCALE = 1.145
# A TFRecord: uint64 length, uint32 CRC of the length, the data, uint32 CRC
# of the data.
RECORD_HEADER_BYTES = 12
RECORD_FOOTER_BYTES = 4
# No file has this many records; the index of a record in its file.
MAX_RECORDS = 2 ** 62

# The TFRecord files the pipelines of this process read, for
# `describe_data_loss`: TensorFlow's error of a damaged file does not name
# it, and the handler that reports it knows no pipeline. Only the files of
# the data directory read last are kept (a process that reads another
# directory is past the first one).
FILES_READ = set()


class ImageNet(dataset_base.DataSet):
  """TFRecords of tf.train.Example, as build_imagenet_data.py writes."""

  name = 'imagenet'
  num_classes = NUM_CLASSES
  PATTERNS = {'train': 'train-*', 'validation': 'validation-*'}

  def __init__(self, data_dir):
    self.data_dir = dataset_base.check_dir(
        self.name, data_dir, 'train-* and validation-* TFRecord files')

  def files(self, subset):
    pattern = os.path.join(self.data_dir, self.PATTERNS[subset])
    found = sorted(glob.glob(pattern))
    if not found:
      raise dataset_base.DataDirError(
          '--data_dir=%s has no file matching %s: imagenet %s reads the '
          "TFRecords of TensorFlow's build_imagenet_data.py (train-00000-of-"
          '01024, validation-00000-of-00128, ...); give the directory that '
          'holds them' % (self.data_dir, self.PATTERNS[subset], subset))
    return found

  def check_subset(self, subset):
    """The files of `subset`; a file that does not start with a TFRecord
    header (12 bytes read a file) is refused here, before any graph."""
    for path in self.files(subset):
      foreign = tfrecord_headers.not_a_tfrecord_file(path)
      if foreign is not None:
        raise dataset_base.DataFileError(
            '--data_dir=%s: %s is not a TFRecord file: %s; imagenet reads '
            "TFRecords of tf.train.Example as TensorFlow's "
            'build_imagenet_data.py writes them: move the file out of '
            '--data_dir, or write it again from its source' % (
                self.data_dir, path, foreign))

  def num_examples(self, subset):
    return None

  def examples(self, subset, image_shape, train, distortions, seed,
               shard=None):
    files = self.files(subset)
    directory = os.path.dirname(files[0])
    if any(os.path.dirname(f) != directory for f in FILES_READ):
      FILES_READ.clear()
    FILES_READ.update(files)
    seeds = dataset_base.op_seeds(seed, 9)
    record_shard = None
    if shard is not None:
      if len(files) >= shard[1]:
        files = files[shard[0]::shard[1]]
      else:
        record_shard = shard
    data = tf.data.Dataset.from_tensor_slices(files)
    if train:
      data = data.shuffle(len(files), seed=seeds[0])
    # In parallel on 2.x only: TF 1.15's parallel form can crash the
    # process when the session closes (compat.interleave).
    data = compat.interleave(data, numbered_records,
                             cycle_length=min(len(files), 8), block_length=1)
    if record_shard is not None:
      data = data.shard(record_shard[1], record_shard[0])
    if train:
      data = data.shuffle(dataset_base.SHUFFLE_BUFFER, seed=seeds[1]).repeat()
    num_classes = self.num_classes
    data = data.map(
        lambda path, index, serialized: parse_example(
            serialized, num_classes, (path, index)),
        num_parallel_calls=dataset_base.AUTOTUNE)
    height, width = image_shape[:2]
    if not train:
      def evaluate(buffer, label, bbox):
        del bbox
        image = tf.cast(decode_jpeg(buffer), tf.float32)
        return dataset_base.to_shape(eval_crop(image, height, width),
                                     image_shape), label
      return data.map(evaluate, num_parallel_calls=dataset_base.AUTOTUNE)

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
      # Flipped before the resize, as tf_cnn_benchmarks does: the legacy
      # bilinear resize samples each row from its left, so mirroring after
      # it gives other values (up to 7.5 of 255 on a ramp).
      image = dataset_base.maybe_flip(image, flip)
      image = tf.image.resize_bilinear(
          tf.expand_dims(image, 0), [height, width], align_corners=False)[0]
      image.set_shape([height, width, 3])
      if distortions:
        image = distort_color(image, *colour)
      return dataset_base.to_shape(image, image_shape), label

    data = data.map(draw)  # Sequential: the draws follow the seed.
    return data.map(distort, num_parallel_calls=dataset_base.AUTOTUNE)


def numbered_records(path):
  """`tf.data.Dataset` of (path, index in the file, serialized record) of
  the TFRecord file `path`."""
  return tf.data.Dataset.zip((
      tf.data.Dataset.from_tensors(path).repeat(),
      tf.data.Dataset.range(MAX_RECORDS),
      tf.data.TFRecordDataset(path)))


def parse_example(serialized, num_classes=NUM_CLASSES, where=None):
  """An ImageNet Example -> (JPEG bytes, int32 label as written, boxes
  [1, n, 4] as (ymin, xmin, ymax, xmax)).

  A label missing or outside [0, num_classes) fails the step with an
  InvalidArgumentError whose message names the record: `where` is its
  (file, index in the file) as string and int64 tensors.
  """
  box = tf.io.VarLenFeature(tf.float32)
  features = tf.io.parse_single_example(serialized, {
      'image/encoded': tf.io.FixedLenFeature([], tf.string, ''),
      'image/class/label': tf.io.VarLenFeature(tf.int64),
      'image/object/bbox/ymin': box, 'image/object/bbox/xmin': box,
      'image/object/bbox/ymax': box, 'image/object/bbox/xmax': box,
  })
  written = features['image/class/label'].values
  has_label = tf.size(written) > 0
  label = tf.concat([written, tf.constant([-1], tf.int64)], 0)[0]
  in_range = tf.logical_and(label >= 0, label < num_classes)
  path, index = where if where is not None else (
      tf.constant('(a record)'), tf.constant(-1, tf.int64))
  label_text = tf.cond(has_label, lambda: tf.as_string(label),
                       lambda: tf.constant('missing'))
  check = tf.debugging.Assert(in_range, [tf.strings.join([
      path, ': record ', tf.as_string(index), ' (counting from 0) has '
      'image/class/label ', label_text, ', not one of the ',
      str(num_classes), ' classes 0 to ', str(num_classes - 1), ' (0 the '
      "background; build_imagenet_data.py writes 1 to 1000): correct the "
      'record or write the file again without it'])], summarize=1)
  with tf.control_dependencies([check]):
    label = tf.cast(label, tf.int32)
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


def truncation_of(path):
  """Where the TFRecord file `path` ends inside a record: a sentence
  naming the record, or None when every record is whole (its checksums
  are not read)."""
  size = os.path.getsize(path)
  position = index = 0
  with open(path, 'rb') as f:
    while position < size:
      f.seek(position)
      header = f.read(RECORD_HEADER_BYTES)
      if len(header) < RECORD_HEADER_BYTES:
        return ('record %d (counting from 0) starts at byte %d and the file '
                'ends %d bytes later, inside its 12-byte header' % (
                    index, position, len(header)))
      if not tfrecord_headers.header_is_whole(header):
        return None  # Not a record boundary: damaged, not cut short.
      (length,) = struct.unpack('<Q', header[:8])
      end = position + RECORD_HEADER_BYTES + length + RECORD_FOOTER_BYTES
      if end > size:
        return ('record %d (counting from 0) at byte %d holds %d bytes and '
                'ends at byte %d, after the file\'s end (%d bytes)' % (
                    index, position, length, end, size))
      position, index = end, index + 1
  return None


def describe_data_loss(message):
  """A sentence naming the TFRecord file of FILES_READ behind
  TensorFlow's DataLossError `message` (`truncated record at 6032`,
  `corrupted record at 12`), or None when no file can be told."""
  found = re.search(r'record at (\d+)', message)
  offset = int(found.group(1)) if found else None
  damaged = []
  for path in sorted(FILES_READ):
    if not os.path.isfile(path) or (
        offset is not None and os.path.getsize(path) <= offset):
      continue
    foreign = tfrecord_headers.not_a_tfrecord_file(path)
    if foreign is not None:
      damaged.append('%s is not a TFRecord file: %s' % (path, foreign))
      continue
    truncation = truncation_of(path)
    if truncation is not None:
      damaged.append('%s is truncated: %s' % (path, truncation))
  if not damaged:
    return None
  return '; '.join(damaged) + (
      '; write the file again (or copy it again) from its source')
