"""--eval, --eval_during_training_every_n_steps and their flag checks.

The accuracy of a checkpoint is checked against NumPy: the trivial model's
logits are `x W + b`, with W and b read from the checkpoint and x the eval
split's images as the input pipeline yields them (tests/benchmark/
test_datasets.py checks those against scikit-learn's digits).
"""

import json
import os
import time

import numpy as np
import pytest
import tensorflow as _tf

from variable_mgr.benchmark import cli
from variable_mgr.benchmark.data import datasets
from variable_mgr.benchmark.flags import command_line
from variable_mgr.benchmark.models import catalog
from variable_mgr.benchmark.runs import local_run
from variable_mgr.benchmark.training import evaluation
from variable_mgr.benchmark.training import run_config

tf = _tf.compat.v1

TRIVIAL = catalog.get_model('trivial')


def eval_images(limit=None):
  """The digits eval split as the pipeline yields it, flattened."""
  pipeline = datasets.InputPipeline(
      datasets.get_dataset('digits'), 'validation', 64, 1,
      TRIVIAL.image_shape, train=False, drop_remainder=False)
  images, labels = [], []
  with tf.Graph().as_default():
    batch = tf.data.make_one_shot_iterator(pipeline.dataset()).get_next()
    with tf.Session() as sess:
      while True:
        try:
          x, y = sess.run(batch)
        except tf.errors.OutOfRangeError:
          break
        images.append(x.reshape(len(x), -1))
        labels.append(y)
  images, labels = np.concatenate(images), np.concatenate(labels)
  return images[:limit], labels[:limit]


def numpy_accuracy(weights, biases, limit=None):
  """(top-1, top-5, count): a label is in the top k when fewer than k
  logits are larger than its own."""
  x, y = eval_images(limit)
  logits = x.astype(np.float64).dot(weights) + biases
  own = logits[np.arange(len(y)), y]
  above = (logits > own[:, None]).sum(axis=1)
  return np.mean(above < 1), np.mean(above < 5), len(y)


def write_checkpoint(train_dir, step=7, seed=0):
  """A trivial-model checkpoint of random W, b under canonical names;
  returns (W, b)."""
  rng = np.random.RandomState(seed)
  weights = rng.randn(784, 10).astype(np.float32) * 0.1
  biases = rng.randn(10).astype(np.float32)
  with tf.Graph().as_default():
    variables = {
        'logits/weights': tf.Variable(weights, name='w'),
        'logits/biases': tf.Variable(biases, name='b'),
        'global_step': tf.Variable(np.int64(step), name='step')}
    saver = tf.train.Saver(variables)
    with tf.Session() as sess:
      sess.run(tf.global_variables_initializer())
      saver.save(sess, os.path.join(str(train_dir), 'model.ckpt'),
                 global_step=step)
  return weights, biases


def eval_config(train_dir, **kwargs):
  values = dict(model='trivial', num_gpus=2, batch_size=16,
                data_name='digits', eval=True, train_dir=str(train_dir))
  values.update(kwargs)
  return run_config.BenchmarkConfig(**values)


@pytest.fixture(scope='module')
def known_checkpoint(tmp_path_factory):
  train_dir = tmp_path_factory.mktemp('known')
  weights, biases = write_checkpoint(train_dir)
  return train_dir, weights, biases


@pytest.mark.parametrize('strategy', [
    dict(variable_update='independent'),
    dict(variable_update='parameter_server'),
    dict(variable_update='parameter_server', staged_vars=True),
    dict(variable_update='replicated'),
    dict(variable_update='distributed_replicated'),
])
@pytest.mark.parametrize('resource', [True, False])
def test_eval_of_a_known_checkpoint_is_numpys(strategy, resource,
                                             known_checkpoint):
  """Every image of the split counts once: 300 images are 9 steps of 32 and
  one of 12."""
  train_dir, weights, biases = known_checkpoint
  lines = []
  results = local_run.run_one(
      eval_config(train_dir, use_resource_vars=resource, **strategy),
      log=lines.append)
  top_1, top_5, count = numpy_accuracy(weights, biases)
  assert results['eval_examples'] == count == 300
  assert results['eval_batches'] == 10
  assert results['global_step'] == 7
  assert results['checkpoint'].endswith('model.ckpt-7')
  np.testing.assert_allclose(results['top_1_accuracy'], top_1, atol=1e-9)
  np.testing.assert_allclose(results['top_5_accuracy'], top_5, atol=1e-9)
  assert 0.0 < top_1 < top_5 < 1.0  # The check can tell the two apart.
  assert lines[-1] == 'Accuracy @ 1 = %.4f Accuracy @ 5 = %.4f [300 examples]' % (
      top_1, top_5)
  assert 'Mode:        evaluation' in lines


def test_num_eval_batches_counts_their_images(known_checkpoint):
  train_dir, weights, biases = known_checkpoint
  results = local_run.run_one(eval_config(train_dir, num_eval_batches=3),
                              log=lambda *_: None)
  top_1, top_5, count = numpy_accuracy(weights, biases, limit=96)
  assert results['eval_examples'] == count == 96
  np.testing.assert_allclose(results['top_1_accuracy'], top_1, atol=1e-9)
  np.testing.assert_allclose(results['top_5_accuracy'], top_5, atol=1e-9)


def test_eval_line_and_json_of_the_command(known_checkpoint, tmp_path,
                                           capsys):
  train_dir, weights, biases = known_checkpoint
  out = str(tmp_path / 'eval.json')
  assert cli.main(['--model', 'trivial', '--num_gpus', '1', '--data_name',
                   'digits', '--eval', '--train_dir', str(train_dir),
                   '--output', out]) == 0
  top_1, top_5, _ = numpy_accuracy(weights, biases)
  assert ('Accuracy @ 1 = %.4f Accuracy @ 5 = %.4f [300 examples]\n' % (
      top_1, top_5)) in capsys.readouterr().out
  with open(out) as f:
    saved = json.load(f)
  np.testing.assert_allclose(saved['top_1_accuracy'], top_1, atol=1e-9)
  np.testing.assert_allclose(saved['top_5_accuracy'], top_5, atol=1e-9)


def _checkpoint_values(train_dir):
  reader = tf.train.load_checkpoint(str(train_dir))
  return reader.get_tensor('logits/weights'), reader.get_tensor(
      'logits/biases')


def test_a_trained_checkpoint_evaluates_under_another_strategy(tmp_path):
  train_dir = tmp_path / 'train'
  common = dict(model='trivial', num_gpus=2, batch_size=16,
                data_name='digits', train_dir=str(train_dir),
                learning_rate=0.05)
  local_run.run_one(run_config.BenchmarkConfig(
      variable_update='replicated', num_batches=20, num_warmup_batches=0,
      **common), log=lambda *_: None)
  weights, biases = _checkpoint_values(train_dir)
  results = local_run.run_one(run_config.BenchmarkConfig(
      variable_update='parameter_server', eval=True, **common),
      log=lambda *_: None)
  top_1, top_5, _ = numpy_accuracy(weights, biases)
  assert results['global_step'] == 20
  np.testing.assert_allclose(results['top_1_accuracy'], top_1, atol=1e-9)
  np.testing.assert_allclose(results['top_5_accuracy'], top_5, atol=1e-9)
  assert top_1 > 0.5  # 20 steps of 32 digits train the linear model.


def test_eval_during_training_evaluates_the_training_variables(tmp_path):
  train_dir = tmp_path / 'train'
  lines = []
  start = time.time()
  results = local_run.run_one(run_config.BenchmarkConfig(
      model='trivial', variable_update='parameter_server', num_gpus=2,
      batch_size=16, data_name='digits', train_dir=str(train_dir),
      learning_rate=0.05, num_batches=6, num_warmup_batches=0,
      display_every=100, eval_during_training_every_n_steps=3),
      log=lines.append)
  wall = time.time() - start
  # The training loop's time, the evaluations left out: between the timed
  # steps' own time and the whole call's.
  images = 2 * 16 * len(results['step_seconds'])
  assert (images / wall <= results['images_per_sec'] <=
          images / sum(results['step_seconds']))
  evaluations = results['evaluations']
  assert [e['global_step'] for e in evaluations] == [3, 6]
  weights, biases = _checkpoint_values(train_dir)
  top_1, top_5, count = numpy_accuracy(weights, biases)
  assert evaluations[-1]['eval_examples'] == count
  np.testing.assert_allclose(evaluations[-1]['top_1_accuracy'], top_1,
                             atol=1e-9)
  np.testing.assert_allclose(evaluations[-1]['top_5_accuracy'], top_5,
                             atol=1e-9)
  assert ('Step 6: Accuracy @ 1 = %.4f Accuracy @ 5 = %.4f [300 examples]'
          % (top_1, top_5)) in lines
  # Only the run's own checkpoint is in train_dir.
  assert sorted(p for p in os.listdir(str(train_dir))
                if p.endswith('.index')) == ['model.ckpt-6.index']


def test_the_evaluation_graph_is_seeded_with_the_run_s_seed(tmp_path):
  """As tf_cnn_benchmarks', whose `_build_model` calls
  tf.set_random_seed(--tf_random_seed) for an evaluation graph too."""
  config = evaluation.eval_config(eval_config(tmp_path, num_gpus=1, seed=7))
  host, session_config = local_run.make_host(config)
  evaluator = evaluation.Evaluator(config, host,
                                   session_config=session_config)
  try:
    assert evaluator.graph.seed == 7
  finally:
    evaluator.close()


def test_no_checkpoint_is_refused_naming_the_directory(tmp_path):
  empty = tmp_path / 'empty'
  empty.mkdir()
  with pytest.raises(evaluation.NoCheckpointError, match=str(empty)):
    local_run.run_one(eval_config(empty), log=lambda *_: None)
  with pytest.raises(command_line.UsageError) as e:
    command_line.parse_args(['--eval', '--train_dir', str(empty), '--data_name',
                      'digits'], environ={})
  assert str(e.value).startswith('--eval --train_dir=%s: the directory holds '
                                 'no checkpoint' % empty)


def _refusal(argv, task=False):
  parse = command_line.parse_task_args if task else command_line.parse_args
  with pytest.raises(command_line.UsageError) as e:
    parse(argv, environ={})
  message = str(e.value)
  assert '\n' not in message
  return message


def test_eval_flag_checks(known_checkpoint):
  train_dir = str(known_checkpoint[0])
  digits = ['--data_name', 'digits']
  assert _refusal(['--eval'] + digits).startswith(
      '--eval without --train_dir: evaluation restores the latest checkpoint')
  assert _refusal(['--eval', '--compare'] + digits).startswith(
      '--eval with --compare:')
  assert _refusal(['--eval', '--train_dir', train_dir]).startswith(
      '--eval on synthetic data (--data_name=imagenet without --data_dir): '
      'evaluation needs real data')
  assert _refusal(['--eval_during_training_every_n_steps', '5']).startswith(
      '--eval_during_training_every_n_steps=5 on synthetic data '
      '(--data_name=imagenet without --data_dir):')
  assert _refusal(['--eval', '--train_dir', train_dir,
                   '--eval_during_training_every_n_steps', '5'] +
                  digits).startswith(
                      '--eval with --eval_during_training_every_n_steps=5:')
  assert _refusal(['--num_eval_batches', '3'] + digits).startswith(
      '--num_eval_batches=3 without --eval:')
  command_line.parse_args(['--num_eval_batches', '3', '--eval',
                    '--train_dir', train_dir] + digits, environ={})
  command_line.parse_args(['--num_eval_batches', '3',
                    '--eval_during_training_every_n_steps', '5'] + digits,
                   environ={})


def test_forward_only_flag_checks(known_checkpoint, tmp_path):
  train_dir = str(known_checkpoint[0])
  assert _refusal(['--forward_only', '--train_dir', str(tmp_path)]).startswith(
      '--forward_only with --train_dir=%s:' % tmp_path)
  assert _refusal(['--forward_only', '--eval', '--train_dir', train_dir,
                   '--data_name', 'digits']).startswith(
                       '--forward_only with --train_dir=')
  assert _refusal(['--forward_only', '--backward_passes_per_step',
                   '2']).startswith(
                       '--forward_only with --backward_passes_per_step=2:')
  assert _refusal(['--forward_only', '--data_name', 'digits',
                   '--eval_during_training_every_n_steps', '4']).startswith(
                       '--forward_only with '
                       '--eval_during_training_every_n_steps=4:')
  command_line.parse_args(['--forward_only', '--print_training_accuracy'],
                   environ={})


@pytest.mark.parametrize('argv, start', [
    (['--save_summaries_steps', '5'],
     '--save_summaries_steps=5 without --summary_dir:'),
    (['--summary_verbosity', '2'],
     '--summary_verbosity=2 without --summary_dir:'),
    (['--save_model_secs', '60'], '--save_model_secs=60 without --train_dir:'),
    (['--max_ckpts_to_keep', '2'], '--max_ckpts_to_keep=2 without '
                                   '--train_dir:'),
])
def test_modifier_without_its_flag_is_refused(argv, start):
  assert _refusal(argv).startswith(start)


@pytest.mark.parametrize('flag', [
    ['--eval'], ['--eval_during_training_every_n_steps', '10'],
    ['--forward_only']])
def test_cluster_refuses_what_runs_on_one_machine(flag, tmp_path):
  message = _refusal(['--variable_update', 'parameter_server', '--data_name',
                      'digits', '--train_dir', str(tmp_path),
                      '--launch_local_cluster'] + flag)
  assert 'in a cluster run' in message
  assert 'on one machine with --eval' in message


@pytest.mark.parametrize('flag', [
    ['--eval_during_training_every_n_steps', '10'], ['--forward_only'],
    ['--print_training_accuracy']])
def test_compare_refuses_what_it_would_not_print(flag):
  message = _refusal(['--compare', '--data_name', 'digits'] + flag)
  assert message.startswith('--%s=' % flag[0][2:])
  assert 'with --compare: the sweep times training steps' in message


@pytest.mark.parametrize('flag', [
    ['--gradient_clip', '1'], ['--save_model_secs', '5'],
    ['--max_ckpts_to_keep', '2'], ['--measure_traffic']])
def test_eval_refuses_training_flags(flag, known_checkpoint):
  message = _refusal(['--eval', '--train_dir', str(known_checkpoint[0]),
                      '--data_name', 'digits'] + flag)
  assert message.startswith('--eval with --%s' % flag[0][2:])
  assert 'runs no training step' in message
