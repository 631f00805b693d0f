"""Training runs on real data, forward-only runs, the training accuracy,
the session, checkpoint and summary options, and the data flags' checks.

Numbers are checked against NumPy: the trivial model's logits are
`x W + b`, computed from the images and labels the towers read in the step
and the variables read just before it.
"""

import os
import pickle

import numpy as np
import pytest
import tensorflow as _tf

from variable_mgr.benchmark import cli
from variable_mgr.benchmark.data import datasets
from variable_mgr.benchmark.flags import command_line
from variable_mgr.benchmark.models import catalog
from variable_mgr.benchmark.runs import local_run
from variable_mgr.benchmark.training import harness
from variable_mgr.benchmark.training import run_config

tf = _tf.compat.v1

RTOL = 1e-5  # float32 logits of 784 inputs against float64 NumPy.


def config_of(**kwargs):
  values = dict(model='trivial', num_gpus=2, batch_size=8, num_batches=4,
                num_warmup_batches=0, weight_decay=0.0, learning_rate=0.05)
  values.update(kwargs)
  return run_config.BenchmarkConfig(**values)


class _Recorded(object):
  """Records what every InputPipeline's `tower(d)` returns."""

  def __init__(self, monkeypatch):
    self.towers = []
    self.pipelines = []
    original = datasets.InputPipeline.tower
    recorded = self

    def tower(pipeline, d):
      result = original(pipeline, d)
      recorded.towers.append(result)
      recorded.pipelines.append(pipeline)
      return result

    monkeypatch.setattr(datasets.InputPipeline, 'tower', tower)


def _model_variables(graph):
  with graph.as_default():
    return dict((v.op.name, v) for v in tf.global_variables() +
                tf.local_variables() if 'logits' in v.op.name)


def softmax_xent(logits, labels):
  shifted = logits - logits.max(axis=1, keepdims=True)
  log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
  return -log_p[np.arange(len(labels)), labels].mean()


def top_k(logits, labels, k):
  own = logits[np.arange(len(labels)), labels]
  return np.mean((logits > own[:, None]).sum(axis=1) < k)


def _steps(config, steps, monkeypatch, extra=None):
  """Runs `steps` steps of `config`'s graph; returns per step the towers'
  (images, labels), the tower-0 variables before the step and the
  fetches."""
  recorded = _Recorded(monkeypatch)
  config = config.resolved()
  host, session_config = local_run.make_host(config)
  g = harness.build_training_graph(config, host)
  variables = _model_variables(g.graph)
  weights = [v for n, v in variables.items() if n.endswith('weights')][0]
  biases = [v for n, v in variables.items() if n.endswith('biases')][0]
  fetches = {'train': g.train_op, 'loss': g.loss, 'towers': recorded.towers}
  if g.top_1 is not None:
    fetches.update(top_1=g.top_1, top_5=g.top_5)
  history = []
  with tf.Session(graph=g.graph, config=session_config) as sess:
    sess.run(g.init_op)
    sess.run(g.post_init_op or [])
    if g.staging_put_op is not None:
      sess.run(g.staging_put_op)
      fetches['staging'] = g.staging_put_op
    for _ in range(steps):
      before = sess.run([weights, biases])
      history.append((before, sess.run(fetches)))
    after = sess.run(dict((n, v) for n, v in variables.items()))
    step = int(sess.run(g.global_step))
  return history, after, step, recorded


def test_digits_run_reads_the_pipeline_and_trains(monkeypatch):
  """Each step's towers read the next batches of one pipeline (the batches
  a pipeline with the same seed gives), the loss is NumPy's cross-entropy
  of those images and labels, and it falls."""
  config = config_of(data_name='digits', variable_update='replicated')
  history, _, step, recorded = _steps(config, 30, monkeypatch)
  assert step == 30
  assert len(recorded.pipelines) == 2 and recorded.pipelines[0].subset == (
      'train')
  reference = datasets.InputPipeline(
      datasets.get_dataset('digits'), 'train', 8, 2, (28, 28, 1), seed=1234)
  with tf.Graph().as_default():
    tf.set_random_seed(1234)  # The run's graph-level seed.
    towers = [reference.tower(d) for d in range(2)]
    with tf.Session() as sess:
      expected = [sess.run(towers) for _ in range(30)]
  losses = []
  for (before, out), batch in zip(history, expected):
    for (images, labels), (want_images, want_labels) in zip(out['towers'],
                                                            batch):
      np.testing.assert_array_equal(images, want_images)
      np.testing.assert_array_equal(labels, want_labels)
    images = np.concatenate([t[0] for t in out['towers']]).reshape(16, -1)
    labels = np.concatenate([t[1] for t in out['towers']])
    assert set(labels) <= set(range(10))
    logits = images.astype(np.float64).dot(before[0]) + before[1]
    # The mean of the towers' means: towers of equal size.
    np.testing.assert_allclose(out['loss'], softmax_xent(logits, labels),
                               rtol=RTOL)
    losses.append(out['loss'])
  assert np.mean(losses[-10:]) < 0.5 * np.mean(losses[:10])


def test_the_command_trains_on_digits(tmp_path, capsys):
  out = str(tmp_path / 'out.json')
  assert cli.main(['--model', 'lenet', '--data_name', 'digits', '--num_gpus',
                   '2', '--batch_size', '16', '--num_batches', '20',
                   '--num_warmup_batches', '0', '--display_every', '10',
                   '--output', out]) == 0
  text = capsys.readouterr().out
  assert 'Dataset:     digits (train split)' in text
  import json  # pylint: disable=g-import-not-at-top
  with open(out) as f:
    losses = json.load(f)['losses']
  assert np.mean(losses[-5:]) < 0.7 * np.mean(losses[:5])


def test_the_model_classes_follow_the_data_set(tmp_path):
  config = config_of(model='resnet50', data_name='digits')
  assert harness.model_of(config).num_classes == 10
  assert harness.model_of(config_of(model='resnet50')).num_classes == 1000
  # imagenet and cifar10: tf_cnn_benchmarks' model_config.
  (tmp_path / 'train-00000-of-00001').write_bytes(b'')
  imagenet = dict(data_name='imagenet', data_dir=str(tmp_path))
  for name, shape in (('trivial', (227, 227, 3)), ('resnet50', (224, 224, 3)),
                      ('lenet', (28, 28, 3))):
    model = harness.model_of(config_of(model=name, **imagenet))
    assert (model.image_shape, model.num_classes) == (shape, 1001)
  cifar = tmp_path / 'cifar'
  cifar.mkdir()
  for name in ['data_batch_%d' % i for i in range(1, 6)]:
    with open(str(cifar / name), 'wb') as f:
      pickle.dump({b'data': np.zeros((1, 3072), np.uint8), b'labels': [0]}, f)
  for name in ('trivial', 'resnet20', 'alexnet'):
    model = harness.model_of(config_of(model=name, data_name='cifar10',
                                       data_dir=str(cifar)))
    assert (model.image_shape, model.num_classes) == ((32, 32, 3), 10)
  with pytest.raises(catalog.UnknownModelError,
                     match='--model=vgg16 with --data_name=cifar10: '
                     'tf_cnn_benchmarks has no vgg16 for cifar10.*choose one '
                     'of trivial, resnet20, alexnet'):
    harness.model_of(config_of(model='vgg16', data_name='cifar10',
                               data_dir=str(cifar)))


def test_a_worker_reads_its_own_shard(monkeypatch):
  """build_towers gives the pipeline the worker's shard; the shards of two
  workers are disjoint and cover the split (NumPy: every second image)."""
  recorded = _Recorded(monkeypatch)
  config = config_of(data_name='digits', variable_update='replicated',
                     num_gpus=1).resolved()
  host, _ = local_run.make_host(config)
  with tf.Graph().as_default():
    mgr = harness.create_manager(config, host)
    harness.build_towers(config, host, mgr, harness.model_of(config),
                         shard=(1, 2))
  assert recorded.pipelines[0].shard == (1, 2)
  data = datasets.get_dataset('digits')
  _, labels = data.arrays('validation')
  seen = []
  for index in range(2):
    pipeline = datasets.InputPipeline(data, 'validation', 200, 1, (8, 8, 1),
                                      drop_remainder=False,
                                      shard=(index, 2))
    with tf.Graph().as_default():
      batch = tf.data.make_one_shot_iterator(pipeline.dataset()).get_next()
      with tf.Session() as sess:
        seen.append(sess.run(batch)[1])
  np.testing.assert_array_equal(seen[0], labels[0::2])
  np.testing.assert_array_equal(seen[1], labels[1::2])


@pytest.mark.parametrize('strategy', [
    dict(variable_update='replicated'),
    dict(variable_update='parameter_server', staged_vars=True),
    dict(variable_update='independent'),
])
def test_forward_only_changes_no_variable(strategy, variable_kind,
                                          monkeypatch):
  config = config_of(forward_only=True, data_name='digits', **strategy)
  history, after, step, _ = _steps(config, 3, monkeypatch)
  assert step == 0
  first = history[0][0]
  for name, value in after.items():
    np.testing.assert_array_equal(
        value, first[0] if name.endswith('weights') else first[1], name)
  # Its step lines have the batch's accuracy: NumPy's.
  _check_step_accuracy(history)


def _check_step_accuracy(history):
  """Each step's top-1 and top-5 are NumPy's, of the trivial model's
  logits (x W + b) on the step's batch before its update."""
  for before, out in history:
    images = np.concatenate([t[0] for t in out['towers']]).reshape(16, -1)
    labels = np.concatenate([t[1] for t in out['towers']])
    logits = images.astype(np.float64).dot(before[0]) + before[1]
    assert out['top_1'] == pytest.approx(top_k(logits, labels, 1), abs=1e-7)
    assert out['top_5'] == pytest.approx(top_k(logits, labels, 5), abs=1e-7)


def test_forward_only_builds_no_gradient():
  config = config_of(forward_only=True).resolved()
  host, _ = local_run.make_host(config)
  g = harness.build_training_graph(config, host)
  assert not [op for op in g.graph.get_operations()
              if 'gradients' in op.name or 'Apply' in op.type]
  assert g.gradient_bytes == 0


def test_print_training_accuracy_is_numpys(monkeypatch):
  config = config_of(data_name='digits', variable_update='parameter_server',
                     print_training_accuracy=True)
  history, _, _, _ = _steps(config, 6, monkeypatch)
  _check_step_accuracy(history)
  values = set((out['top_1'], out['top_5']) for _, out in history)
  assert len(values) > 1


def test_print_training_accuracy_columns(capsys):
  assert cli.main(['--model', 'trivial', '--num_gpus', '1', '--batch_size',
                   '4', '--num_batches', '2', '--num_warmup_batches', '0',
                   '--display_every', '1', '--print_training_accuracy']) == 0
  lines = capsys.readouterr().out.splitlines()
  header = lines.index('Step\tImg/sec\tloss\ttop_1_accuracy\ttop_5_accuracy')
  for line in lines[header + 1:header + 3]:
    columns = line.split('\t')
    assert len(columns) == 5
    assert all(len(c.split('.')[1]) == 3 for c in columns[2:])
    assert 0.0 <= float(columns[3]) <= float(columns[4]) <= 1.0


def test_threads_reach_the_session_config(monkeypatch):
  seen = []
  monkeypatch.setattr(local_run, 'run_benchmark',
                      lambda config, host, session_target, session_config,
                      log: seen.append(session_config))
  local_run.run_one(config_of(num_intra_threads=3, num_inter_threads=2))
  local_run.run_one(config_of(variable_update='distributed_replicated',
                              num_intra_threads=1, num_inter_threads=5))
  local_run.run_one(config_of())
  assert [(c.intra_op_parallelism_threads, c.inter_op_parallelism_threads)
          for c in seen] == [(3, 2), (1, 5), (0, 0)]
  assert seen[0].device_count['CPU'] == 2


def test_threads_flags_reach_a_run(monkeypatch):
  seen = []
  original = tf.Session.__init__

  def init(self, target='', graph=None, config=None):
    seen.append(config)
    original(self, target, graph, config)

  monkeypatch.setattr(tf.Session, '__init__', init)
  assert cli.main(['--model', 'trivial', '--num_gpus', '1', '--batch_size',
                   '2', '--num_batches', '1', '--num_warmup_batches', '0',
                   '--num_intra_threads', '2', '--num_inter_threads',
                   '3']) == 0
  assert [(c.intra_op_parallelism_threads, c.inter_op_parallelism_threads)
          for c in seen] == [(2, 3)]


def _fake_clock(monkeypatch, seconds_a_call):
  now = [0.0]

  def clock():
    now[0] += seconds_a_call
    return now[0]

  monkeypatch.setattr(local_run, '_clock', clock)


def _restores(train_dir, prefix):
  """The checkpoint `prefix` restores into a fresh training graph; returns
  its global step."""
  config = config_of(train_dir=str(train_dir)).resolved()
  host, session_config = local_run.make_host(config)
  g = harness.build_training_graph(config, host)
  with tf.Session(graph=g.graph, config=session_config) as sess:
    sess.run(g.init_op)
    g.saver.restore(sess, prefix)
    return int(sess.run(g.global_step))


def test_save_model_secs_saves_and_max_ckpts_to_keep_keeps(tmp_path,
                                                           monkeypatch):
  """A clock that moves 1 s a call: every step is at least 1 s after the
  last save, so --save_model_secs=1 saves after every step; the final save
  is not repeated; --max_ckpts_to_keep=3 keeps the last three, each of
  which restores."""
  _fake_clock(monkeypatch, 1.0)
  train_dir = tmp_path / 'train'
  lines = []
  local_run.run_one(config_of(train_dir=str(train_dir), num_batches=5,
                              save_model_secs=1, max_ckpts_to_keep=3),
                    log=lines.append)
  saved = [l for l in lines if l.startswith('Saved ')]
  assert saved == ['Saved %s' % (train_dir / ('model.ckpt-%d' % s))
                   for s in range(1, 6)]
  state = tf.train.get_checkpoint_state(str(train_dir))
  kept = list(state.all_model_checkpoint_paths)
  assert [os.path.basename(p) for p in kept] == [
      'model.ckpt-3', 'model.ckpt-4', 'model.ckpt-5']
  assert sorted(p for p in os.listdir(str(train_dir))
                if p.endswith('.index')) == [
                    'model.ckpt-%d.index' % s for s in (3, 4, 5)]
  for path, step in zip(kept, (3, 4, 5)):
    assert _restores(train_dir, path) == step


def test_save_model_secs_waits_its_seconds(tmp_path, monkeypatch):
  _fake_clock(monkeypatch, 1.0)  # The start and each step: 1 s.
  train_dir = tmp_path / 'train'
  lines = []
  local_run.run_one(config_of(train_dir=str(train_dir), num_batches=6,
                              save_model_secs=3), log=lines.append)
  assert [l.rsplit('-', 1)[1] for l in lines if l.startswith('Saved ')] == [
      '3', '6']


def _summary_tags(summary_dir):
  events = [p for p in os.listdir(str(summary_dir)) if 'tfevents' in p]
  assert len(events) == 1
  tags = {}
  for event in tf.train.summary_iterator(str(summary_dir / events[0])):
    for value in event.summary.value:
      tags.setdefault(value.tag, []).append(event.step)
  return tags


@pytest.mark.parametrize('verbosity, expected', [
    (0, {'loss'}),
    (1, {'loss', 'learning_rate'}),
    (2, {'loss', 'learning_rate', 'gradient_norm/logits/weights',
         'gradient_norm/logits/biases', 'gradient_norm/global'}),
    (3, {'loss', 'learning_rate', 'gradient_norm/logits/weights',
         'gradient_norm/logits/biases', 'gradient_norm/global',
         'variables/logits/weights', 'variables/logits/biases'}),
])
def test_summary_levels_and_steps(verbosity, expected, tmp_path):
  summary_dir = tmp_path / 'summaries'
  local_run.run_one(config_of(summary_dir=str(summary_dir), num_batches=6,
                              summary_verbosity=verbosity,
                              save_summaries_steps=2), log=lambda *_: None)
  tags = _summary_tags(summary_dir)
  assert set(tags) == expected
  assert all(steps == [2, 4, 6] for steps in tags.values())


def test_summary_learning_rate_and_gradient_norm_values(tmp_path,
                                                        monkeypatch):
  """Level 2's learning rate is the run's, the global norm is the norm of
  the per-variable norms."""
  summary_dir = tmp_path / 'summaries'
  local_run.run_one(config_of(summary_dir=str(summary_dir), num_batches=2,
                              summary_verbosity=2), log=lambda *_: None)
  events = [p for p in os.listdir(str(summary_dir)) if 'tfevents' in p]
  values = {}
  for event in tf.train.summary_iterator(str(summary_dir / events[0])):
    for value in event.summary.value:
      values[(value.tag, event.step)] = value.simple_value
  assert values[('learning_rate', 1)] == pytest.approx(0.05)
  for step in (1, 2):
    parts = [values[('gradient_norm/logits/%s' % n, step)]
             for n in ('weights', 'biases')]
    assert values[('gradient_norm/global', step)] == pytest.approx(
        np.sqrt(np.sum(np.square(parts))), rel=1e-5)
    assert min(parts) > 0


def _refusal(argv):
  with pytest.raises(command_line.UsageError) as e:
    command_line.parse_args(argv, environ={})
  message = str(e.value)
  assert '\n' not in message
  return message


def test_data_flag_checks(tmp_path):
  assert _refusal(['--data_format', 'NCHW']).startswith(
      '--data_format=NCHW: the benchmark\'s models are written NHWC')
  assert _refusal(['--data_dir', str(tmp_path)]).startswith(
      '--data_dir=%s without --data_name: the data set cannot be told from '
      'the path' % tmp_path)
  # Without --data_dir, imagenet and cifar10 are synthetic data of their
  # shapes (tf_cnn_benchmarks): tests/benchmark/data/test_upstream_data_defaults.py.
  assert _refusal(['--data_name', 'imagenet', '--data_dir',
                   str(tmp_path / 'missing')]).startswith(
                       '--data_dir=%s: no such directory' % (
                           tmp_path / 'missing'))
  assert _refusal(['--data_name', 'digits', '--data_dir',
                   str(tmp_path)]).startswith(
                       '--data_dir=%s with --data_name=digits: digits is '
                       'bundled' % tmp_path)
  assert _refusal(['--distortions']).startswith(
      '--distortions without --data_dir: synthetic images are not '
      'distorted')
  assert _refusal(['--distortions', '--data_name', 'digits']).startswith(
      '--distortions with --data_name=digits: digits has no training '
      'distortions')


def test_data_dir_names_the_data_set_as_tf_cnn_benchmarks_guesses(tmp_path):
  cifar = tmp_path / 'cifar10_python'
  cifar.mkdir()
  args = command_line.parse_args(['--data_dir', str(cifar)], environ={})
  assert args.data_name == 'cifar10'
  imagenet = tmp_path / 'imagenet'
  imagenet.mkdir()
  args = command_line.parse_args(['--data_dir', str(imagenet), '--distortions'],
                          environ={})
  assert args.data_name == 'imagenet'


def test_nchw_is_refused_by_the_harness_too():
  with pytest.raises(harness.DataFormatError, match='--data_format=NCHW'):
    harness.build_training_graph(config_of(data_format='NCHW').resolved(),
                                 local_run.make_host(config_of())[0])


@pytest.mark.parametrize('eval_flags, missing', [
    ({}, 'data_batch_1'),
    (dict(eval_during_training_every_n_steps=2), 'test_batch'),
])
def test_missing_files_are_refused_before_any_graph(eval_flags, missing,
                                                    tmp_path, monkeypatch):
  """cifar10's train batches, and its test batch when an evaluation reads
  it: refused by name before a graph exists."""
  for name in ['data_batch_%d' % i for i in range(1, 6)] + ['test_batch']:
    if name != missing:
      with open(str(tmp_path / name), 'wb') as f:
        pickle.dump({b'data': np.zeros((1, 3072), np.uint8),
                     b'labels': [0]}, f)
  graphs = []
  monkeypatch.setattr(tf, 'Graph', lambda: graphs.append(1))
  config = config_of(data_name='cifar10', data_dir=str(tmp_path),
                     **eval_flags).resolved()
  with pytest.raises(datasets.DataDirError, match='lacks %s' % missing):
    harness.build_training_graph(config, local_run.make_host(config)[0])
  assert not graphs
