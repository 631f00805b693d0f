"""ImageNet's training preprocessing and `to_shape`, value for value.

Training: a made-up JPEG whose red channel rises left to right and whose
green channel rises top to bottom tells, from each output, the crop window
it came from and whether it was flipped; the output must then equal NumPy's
bilinear resize of that window of the decoded JPEG (mirrored first when
flipped, as tf_cnn_benchmarks does), scaled to [-1, 1]. About half the outputs are mirrored. The colour
distortions are read back from images where they have a closed form: a
single colour (brightness, saturation, hue) and a grey image set against
the undistorted output of the same seed (contrast, brightness).
"""

import colorsys
import os

import numpy as np
import pytest
import tensorflow as _tf

import imagenet_files  # pylint: disable=g-import-not-at-top
from variable_mgr.benchmark.data import dataset_base
from variable_mgr.benchmark.data import datasets

tf = _tf.compat.v1

HEIGHT, WIDTH = 40, 56  # The JPEG.
SHAPE = (12, 16, 3)  # The model's image.
BOX = (0.25, 0.2, 0.75, 0.6)  # ymin, xmin, ymax, xmax.
COUNT = 32


def _axis(out, size):
  """Legacy bilinear sampling (align_corners=False, no half-pixel centres,
  the tf.compat.v1 default of both generations): rows read and weights."""
  pos = np.arange(out) * (np.float32(size) / np.float32(out))
  low = np.floor(pos).astype(int)
  return low, np.minimum(low + 1, size - 1), pos - low


def bilinear(image, height, width):
  image = np.asarray(image, np.float64)
  y0, y1, ly = _axis(height, image.shape[0])
  x0, x1, lx = _axis(width, image.shape[1])
  ly, lx = ly[:, None, None], lx[None, :, None]
  top = image[y0][:, x0] * (1 - lx) + image[y0][:, x1] * lx
  bottom = image[y1][:, x0] * (1 - lx) + image[y1][:, x1] * lx
  return top * (1 - ly) + bottom * ly


def _run(fetches):
  with tf.Session() as sess:
    return sess.run(fetches)


def _jpeg(image):
  with tf.Graph().as_default():
    encoded = tf.image.encode_jpeg(tf.constant(image, tf.uint8), quality=100,
                                   chroma_downsampling=False)
    decoded = datasets.decode_jpeg(encoded)
    return _run([encoded, decoded])


def _train_images(tmp_path, image, distortions, seed, boxes=(BOX,)):
  """COUNT training images of one record holding `image`; the decoded
  JPEG."""
  jpeg, decoded = _jpeg(image)
  directory = str(tmp_path / ('d%d-%d' % (distortions, seed)))
  os.mkdir(directory)
  imagenet_files.write_records(os.path.join(directory, 'train-00000-of-00001'),
                               [imagenet_files.example(jpeg, 7, boxes)])
  pipeline = datasets.InputPipeline(
      datasets.get_dataset('imagenet', directory), 'train', COUNT, 1, SHAPE,
      distortions=distortions, seed=seed)
  with tf.Graph().as_default():
    images, labels = _run(pipeline.tower(0))
  np.testing.assert_array_equal(labels, [7] * COUNT)
  assert images.shape == (COUNT,) + SHAPE and images.dtype == np.float32
  assert images.min() >= -1.0 and images.max() <= 1.0
  return (images.astype(np.float64) + 1.0) * 127.5, decoded.astype(np.float64)


def _ramps():
  y, x = np.mgrid[:HEIGHT, :WIDTH]
  return np.stack([30 + 200 * x / (WIDTH - 1.0), 30 + 200 * y / (HEIGHT - 1.0),
                   np.full(x.shape, 90.0)], -1).round()


def _windows(profile, out, mirrored):
  """The 3 (error, start, size, flipped) whose resized `profile` best
  matches `out`."""
  found = []
  size = len(profile)
  for width in range(1, size + 1):
    low, high, frac = _axis(len(out), width)
    starts = np.arange(size - width + 1)[:, None]
    for flipped in (False, True) if mirrored else (False,):
      # The window mirrored before its resize: its k-th column is the
      # window's (width - 1 - k)-th.
      lo, hi = (width - 1 - low, width - 1 - high) if flipped else (low, high)
      resized = profile[starts + lo] * (1 - frac) + profile[starts + hi] * frac
      errors = np.abs(resized - out).max(axis=1)
      found += [(e, s, width, flipped) for s, e in enumerate(errors)]
  return sorted(found)[:3]


def _window_of(got, decoded):
  """(top, height, left, width, flipped) of the window of `decoded` whose
  resize (of the window mirrored when flipped) is `got`, or None."""
  rows = _windows(decoded[..., 1].mean(axis=1), got[..., 1].mean(axis=1),
                  False)
  columns = _windows(decoded[..., 0].mean(axis=0), got[..., 0].mean(axis=0),
                     True)
  for _, top, height, _ in rows:
    for _, left, width, flipped in columns:
      window = decoded[top:top + height, left:left + width]
      want = bilinear(window[:, ::-1] if flipped else window, *SHAPE[:2])
      if np.allclose(got, want, atol=1e-2):
        return top, height, left, width, flipped
  return None


@pytest.mark.parametrize('seed', [3, 8])
def test_training_image_is_a_resized_window_mirrored_about_half_the_time(
    tmp_path, seed):
  images, decoded = _train_images(tmp_path, _ramps(), False, seed)
  windows = [_window_of(got, decoded) for got in images]
  assert None not in windows, windows
  flips = sum(w[-1] for w in windows)
  # About half mirrored: the resize of the mirrored window, as
  # tf_cnn_benchmarks flips before it resizes (not the mirror of the
  # resized window: the legacy bilinear resize is not symmetric).
  assert COUNT // 4 <= flips <= COUNT - COUNT // 4, windows
  box_top, box_left = BOX[0] * HEIGHT, BOX[1] * WIDTH
  box_bottom, box_right = BOX[2] * HEIGHT, BOX[3] * WIDTH
  box_area = (box_bottom - box_top) * (box_right - box_left)
  areas, aspects, coverages = [], [], []
  for top, height, left, width, _ in windows:
    covered = (max(0, min(top + height, box_bottom) - max(top, box_top)) *
               max(0, min(left + width, box_right) - max(left, box_left)))
    areas.append(height * width / float(HEIGHT * WIDTH))
    aspects.append(width / float(height))
    coverages.append(covered / box_area)
    # sample_distorted_bounding_box's documented ranges, to a pixel.
    assert 0.75 <= (width + 1.0) / height and (width - 1.0) / height <= 1.33
    assert covered >= 0.1 * box_area - (height + width), (top, left)
  assert 0.05 <= min(areas) < 0.15 and max(areas) <= 1.0, areas
  assert min(aspects) < 0.85 and max(aspects) > 1.2, aspects
  assert min(coverages) < 0.3, coverages
  assert len(set(windows)) > COUNT // 2  # A new draw each image.


def test_without_boxes_the_window_is_anywhere_in_the_image(tmp_path):
  images, decoded = _train_images(tmp_path, _ramps(), False, 5, boxes=())
  windows = [_window_of(got, decoded) for got in images]
  assert None not in windows, windows
  assert min(w[0] for w in windows) < HEIGHT * 0.2
  assert max(w[0] + w[1] for w in windows) > HEIGHT * 0.8
  assert COUNT // 4 <= sum(w[-1] for w in windows) <= COUNT - COUNT // 4


def test_distorted_single_colour_keeps_its_brightness_saturation_hue_ranges(
    tmp_path):
  colour = np.array([150.0, 120.0, 100.0])
  image = np.tile(colour, (HEIGHT, WIDTH, 1))
  images, decoded = _train_images(tmp_path, image, True, 6)
  source = decoded[0, 0] / 255.0
  np.testing.assert_array_equal(decoded, np.tile(decoded[0, 0], (HEIGHT,
                                                                  WIDTH, 1)))
  assert np.abs(decoded[0, 0] - colour).max() <= 2
  draws = []
  for got in images:
    out = got.reshape(-1, 3).mean(axis=0) / 255.0
    assert np.abs(got / 255.0 - out).max() < 1e-4  # Still one colour.
    # Brightness adds to every channel; saturation and hue keep the value
    # (the largest channel); contrast leaves a single colour as it is.
    brightness = out.max() - source.max()
    hue_in, saturation_in, _ = colorsys.rgb_to_hsv(*(source + brightness))
    hue_out, saturation_out, _ = colorsys.rgb_to_hsv(*out)
    hue = (hue_out - hue_in + 0.5) % 1.0 - 0.5
    draws.append((brightness * 255.0, saturation_out / saturation_in, hue))
  brightness, saturation, hue = np.array(draws).T
  tolerance = 1e-3
  assert np.abs(brightness).max() <= 32 + tolerance, brightness
  assert brightness.min() < -16 and brightness.max() > 16, brightness
  assert 0.5 - tolerance <= saturation.min() < 0.75, saturation
  assert 1.25 < saturation.max() <= 1.5 + tolerance, saturation
  assert np.abs(hue).max() <= 0.2 + tolerance, hue
  assert hue.min() < -0.1 and hue.max() > 0.1, hue


def test_distorted_grey_image_is_the_undistorted_one_in_contrast_range(
    tmp_path):
  """On grey, saturation and hue do nothing: the distorted image is
  contrast * (u - mean(u)) + mean(u) + brightness of the undistorted u of
  the same seed (the same windows and flips), clipped to [0, 255]."""
  y, x = np.mgrid[:HEIGHT, :WIDTH]
  grey = 60 + 65 * (x / (WIDTH - 1.0) + y / (HEIGHT - 1.0))
  image = np.repeat(grey[..., None], 3, -1).round()
  plain, _ = _train_images(tmp_path, image, False, 9)
  distorted, _ = _train_images(tmp_path, image, True, 9)
  draws = []
  for u, d in zip(plain, distorted):
    inside = (d > 0.01) & (d < 254.99)
    contrast, offset = np.polyfit(u[inside], d[inside], 1)
    mean = u.mean()
    want = np.clip(contrast * (u - mean) + mean + offset - (1 - contrast) *
                   mean, 0, 255)
    np.testing.assert_allclose(d, want, atol=0.05)
    draws.append((contrast, offset - (1 - contrast) * mean))
  contrast, brightness = np.array(draws).T
  assert 0.5 - 1e-3 <= contrast.min() < 0.7, contrast
  assert 1.3 < contrast.max() <= 1.5 + 1e-3, contrast
  assert np.abs(brightness).max() <= 32 + 0.05, brightness
  assert brightness.min() < -16 and brightness.max() > 16, brightness


# --- to_shape ---------------------------------------------------------------

def _to_shape(image, shape, static=True):
  with tf.Graph().as_default():
    image = np.asarray(image, np.float32)
    tensor = tf.constant(image) if static else tf.placeholder_with_default(
        image, [None, None, image.shape[2]])
    out = dataset_base.to_shape(tensor, shape)
    assert out.shape.as_list() == list(shape)
    return _run(out)


@pytest.mark.parametrize('static', [True, False])
@pytest.mark.parametrize('size', [(10, 14), (3, 5), (7, 7), (5, 7)])
def test_to_shape_resizes_as_numpy_bilinear(size, static):
  image = np.random.RandomState(1).uniform(0, 255, (5, 7, 3))
  got = _to_shape(image, size + (3,), static)
  np.testing.assert_allclose(got, bilinear(image, *size) / 127.5 - 1.0,
                             atol=1e-5)
  if size == (5, 7):
    np.testing.assert_allclose(got, image / 127.5 - 1.0, atol=1e-6)


def test_to_shape_keeps_a_constant_and_maps_0_255_to_minus_1_1():
  for value, want in ((0.0, -1.0), (127.5, 0.0), (255.0, 1.0), (51.0, -0.6)):
    got = _to_shape(np.full((4, 6, 3), value), (9, 5, 3))
    np.testing.assert_allclose(got, np.full((9, 5, 3), want), atol=1e-6)


def test_to_shape_converts_channels_after_resizing():
  rng = np.random.RandomState(2)
  colour = rng.uniform(0, 255, (4, 6, 3))
  grey = np.dot(bilinear(colour, 8, 3), [0.2989, 0.587, 0.114])
  np.testing.assert_allclose(_to_shape(colour, (8, 3, 1))[..., 0],
                             grey / 127.5 - 1.0, atol=1e-3)
  single = rng.uniform(0, 255, (4, 6, 1))
  got = _to_shape(single, (3, 9, 3))
  want = bilinear(single, 3, 9) / 127.5 - 1.0
  np.testing.assert_allclose(got, np.repeat(want, 3, -1), atol=1e-5)
