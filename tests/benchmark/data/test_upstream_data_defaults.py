"""tf_cnn_benchmarks' data defaults, as this benchmark follows them.

* no `--data_name` and no `--data_dir`: synthetic data of imagenet's shapes
  (upstream's `create_dataset(None, None)`), so `trivial` is upstream's
  227x227x3 model into 1001 classes, at its base rate 0.005;
* `--data_name=imagenet|cifar10` without `--data_dir`: synthetic data of
  that set's shapes, with that set's model (cifar10's resnet20: 128 images
  a tower at 0.1);
* `--num_batches` 100 and `--num_warmup_batches` 10 by default;
* `--data_name=small`, the benchmark's own shapes, for the models the tests
  check against NumPy.
"""

import numpy as np
import pytest
import tensorflow as _tf

from variable_mgr.benchmark import cli
from variable_mgr.benchmark.flags import command_line
from variable_mgr.benchmark.models import catalog
from variable_mgr.benchmark.reports import output
from variable_mgr.benchmark.training import harness
from variable_mgr.benchmark.training import optimizers
from variable_mgr.benchmark.training import run_config

tf = _tf.compat.v1

UPSTREAM_DEFAULTS = dict((n, d) for n, _, d in command_line.TF_CNN_FLAGS)


def _config(argv):
  args = command_line.parse_args(list(argv) + ['--device=cpu'], environ={})
  return run_config.from_args(args).resolved()


def _refused(argv):
  with pytest.raises(command_line.UsageError) as info:
    command_line.parse_args(argv, environ={})
  return str(info.value)


def _trainable_parameters(config):
  model = harness.model_of(config)
  with tf.Graph().as_default():
    images = tf.placeholder(tf.float32, [2] + list(model.image_shape))
    labels = tf.placeholder(tf.int32, [2])
    model.build(images, labels, is_training=True)
    return model, sum(int(np.prod(v.shape.as_list()))
                      for v in tf.trainable_variables())


def test_batches_default_to_tf_cnn_benchmarks_counts():
  args = command_line.parse_args([], environ={})
  # Upstream: num_batches None (and no num_epochs) means _DEFAULT_NUM_BATCHES,
  # 100.
  assert UPSTREAM_DEFAULTS['num_batches'] is None
  assert args.num_batches == 100
  # Upstream: num_warmup_batches None means max(10, min_autotune_warmup=5).
  assert UPSTREAM_DEFAULTS['num_warmup_batches'] is None
  assert args.num_warmup_batches == 10
  compare = command_line.parse_args(['--compare', '--device=cpu'], environ={})
  assert (compare.num_batches, compare.num_warmup_batches) == (10, 2)


def test_without_data_flags_the_data_is_synthetic_imagenet():
  config = _config([])
  assert (config.data_name, config.data_dir, config.synthetic) == (
      'imagenet', None, True)
  model, parameters = _trainable_parameters(config)
  assert (model.image_shape, model.num_classes) == ((227, 227, 3), 1001)
  # Upstream's TrivialModel: the flat image into 1 unit, into 4096, into
  # the 1001 logits, each with a bias.
  pixels = 227 * 227 * 3
  assert parameters == (pixels + 1) + (1 * 4096 + 4096) + (4096 * 1001 + 1001)
  # Its base rate and batch size (models/trivial_model.py: 32, 0.005).
  assert (config.learning_rate, config.batch_size) == (0.005, 32)
  assert output.dataset_line(config) == "synthetic (imagenet's shapes)"


def test_cifar10_without_data_dir_is_synthetic_cifar10():
  config = _config(['--data_name=cifar10', '--model=resnet20'])
  assert config.synthetic
  model = harness.model_of(config)
  assert (model.image_shape, model.num_classes) == ((32, 32, 3), 10)
  # Upstream's ResnetCifar10Model: 128 images a tower, its rate a schedule
  # (test_resnet20_on_cifar10_follows_upstreams_schedule).
  assert (config.learning_rate, config.batch_size) == (None, 128)
  assert output.dataset_line(config) == "synthetic (cifar10's shapes)"
  # The epoch of a schedule is CIFAR-10's 50,000 images there.
  args = command_line.parse_args(['--data_name=cifar10', '--model=resnet20',
                           '--device=cpu', '--num_epochs=1'], environ={})
  assert args.num_batches == int(np.ceil(50000 / 128.0))


def test_small_is_the_benchmarks_own_table():
  config = _config(['--data_name=small', '--model=trivial'])
  assert config.synthetic
  model, parameters = _trainable_parameters(config)
  assert (model.image_shape, model.num_classes) == ((28, 28, 1), 10)
  assert parameters == 28 * 28 * 10 + 10
  own = catalog.MODELS['trivial']
  assert (config.learning_rate, config.batch_size) == (
      own.learning_rate, own.default_batch_size)
  assert output.dataset_line(config) == "synthetic (small's shapes)"
  # The library's API without a data set is the same table.
  api = run_config.BenchmarkConfig(model='trivial').resolved()
  assert api.synthetic and harness.model_of(api) == harness.model_of(config)


def test_a_model_upstream_lacks_for_imagenet_names_the_way_out(capsys):
  assert cli.main(['--model=resnet20', '--device=cpu', '--num_batches=1']) == 2
  err = capsys.readouterr().err
  assert ('--model=resnet20 with --data_name=imagenet: tf_cnn_benchmarks has '
          'no resnet20 for imagenet') in err
  assert '--data_name=small takes every model' in err


@pytest.mark.parametrize('argv,message', [
    (['--eval', '--train_dir=/nonexistent-dir'], None),
    (['--data_name=cifar10', '--distortions'],
     '--distortions without --data_dir: synthetic images are not distorted'),
    (['--data_name=small', '--data_dir=/tmp'],
     '--data_dir=/tmp with --data_name=small: small is synthetic data and '
     'reads no directory; drop --data_dir'),
    (['--data_name=digits', '--data_dir=/tmp'],
     '--data_dir=/tmp with --data_name=digits: digits is bundled with '
     'scikit-learn and reads no directory; drop --data_dir'),
    (['--eval_during_training_every_n_steps=5', '--data_name=cifar10'],
     '--eval_during_training_every_n_steps=5 on synthetic data '
     '(--data_name=cifar10 without --data_dir): evaluation needs real data'),
])
def test_synthetic_data_refusals(argv, message, tmp_path):
  if message is None:
    # --eval on synthetic data: a train_dir with a checkpoint file, so that
    # the synthetic-data rule is the one that refuses.
    (tmp_path / 'checkpoint').write_text(u'model_checkpoint_path: "x"\n')
    argv = ['--eval', '--train_dir=%s' % tmp_path]
    message = ('--eval on synthetic data (--data_name=imagenet without '
               '--data_dir): evaluation needs real data')
  assert _refused(argv).startswith(message)


@pytest.mark.parametrize('global_batch', [128, 96])
def test_resnet20_on_cifar10_follows_upstreams_schedule(global_batch):
  """ResnetCifar10Model.get_learning_rate: 0.1 up to step int(50000 / B) x
  82 included, then 0.01 up to x 123, 0.001 up to x 300, then 0.0002
  (tf.train.piecewise_constant's boundaries)."""
  config = _config(['--data_name=cifar10', '--model=resnet20'])
  per_epoch = 50000 // global_batch
  expected = {0: 0.1, per_epoch * 82: 0.1, per_epoch * 82 + 1: 0.01,
              per_epoch * 123: 0.01, per_epoch * 123 + 1: 0.001,
              per_epoch * 300: 0.001, per_epoch * 300 + 1: 0.0002}
  with tf.Graph().as_default():
    step = tf.placeholder(tf.int64, [])
    rate = optimizers.learning_rate(config, step, global_batch)
    with tf.Session() as sess:
      for s, value in sorted(expected.items()):
        assert sess.run(rate, {step: s}) == pytest.approx(value, rel=1e-6), s
  assert optimizers.describe_learning_rate(config, global_batch) == (
      "learning rate resnet20's cifar10 default: 0.1, 0.01 from epoch 82 "
      '(step %d), 0.001 from epoch 123 (step %d), 0.0002 from epoch 300 '
      '(step %d)' % (per_epoch * 82 + 1, per_epoch * 123 + 1,
                     per_epoch * 300 + 1))
  # An initial rate replaces the schedule, as upstream.
  fixed = _config(['--data_name=cifar10', '--model=resnet20',
                   '--init_learning_rate=0.05'])
  assert optimizers.learning_rate(fixed, None, global_batch) == 0.05
