"""The benchmark command: every strategy runs, checkpoints restore, bad flags
give one line on stderr."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as _tf

import variable_mgr
from variable_mgr.benchmark import cli
from variable_mgr.benchmark.flags import command_line as cli_flags
from variable_mgr.benchmark.models import catalog
from variable_mgr.benchmark.runs import local_run
from variable_mgr.benchmark.training import harness
from variable_mgr.benchmark.training import run_config

tf = _tf.compat.v1

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
# A tiny run: trivial model, 2 towers of 4 images, 1 + 3 batches.
TINY = ['--model', 'trivial', '--data_name', 'small', '--num_gpus', '2',
        '--batch_size', '4', '--num_batches', '3', '--num_warmup_batches', '1']


def run_main(argv, tmp_path, name='out.json'):
  output = str(tmp_path / name)
  assert cli.main(list(argv) + ['--output', output]) == 0
  with open(output) as f:
    text = f.read()
  # A text file: its last line ends as every other does.
  assert text.endswith('}\n') and not text.endswith('\n\n'), text[-20:]
  return json.loads(text)


def test_flag_names_match_the_library():
  assert cli_flags.STRATEGY_NAMES == variable_mgr.STRATEGY_NAMES
  assert cli_flags.MODEL_NAMES == (catalog.MODEL_NAMES +
                                   catalog.LAYERS_MODEL_NAMES)


@pytest.mark.parametrize('flags', [
    ['--variable_update', 'independent'],
    ['--variable_update', 'parameter_server'],
    ['--variable_update', 'parameter_server', '--local_parameter_device',
     'gpu'],
    ['--variable_update', 'parameter_server', '--staged_vars'],
    ['--variable_update', 'replicated'],
    ['--variable_update', 'replicated', '--use_resource_vars=false'],
    ['--variable_update', 'distributed_replicated'],
])
def test_every_strategy_runs(flags, tmp_path, capsys):
  results = run_main(TINY + flags, tmp_path)
  assert results['images_per_sec'] > 0
  assert math.isfinite(results['final_loss'])
  assert len(results['losses']) == 3
  assert results['global_step'] == 4
  out = capsys.readouterr().out
  assert 'Step\tImg/sec\tloss' in out
  assert '\n1\timages/sec: ' in out
  assert 'total images/sec: ' in out


@pytest.mark.parametrize('flags', [
    ['--variable_update', 'parameter_server', '--staged_vars'],
    ['--variable_update', 'replicated', '--use_resource_vars=false'],
])
def test_resnet20_batch_norm_runs(flags, tmp_path):
  results = run_main(['--model', 'resnet20', '--data_name', 'small',
                      '--num_gpus', '2',
                      '--batch_size', '2', '--num_batches', '1',
                      '--num_warmup_batches', '0'] + flags, tmp_path)
  assert math.isfinite(results['final_loss'])


def _losses(tmp_path, name, flags):
  return run_main(['--model', 'trivial', '--data_name', 'small',
                   '--num_gpus', '2', '--batch_size', '8', '--num_batches', '12', '--num_warmup_batches', '0',
                   '--learning_rate', '0.1'] + flags, tmp_path, name)['losses']


def test_loss_decreases_and_strategies_agree(tmp_path):
  """On fixed synthetic data the loss falls; the synchronous strategies
  take the same steps: parameter_server and distributed_replicated average
  the towers' gradients, replicated adds them (so it gets lr / 2)."""
  ps = _losses(tmp_path, 'ps.json', ['--variable_update',
                                     'parameter_server'])
  assert ps[-1] < 0.5 * ps[0]
  assert all(b < a for a, b in zip(ps, ps[1:]))
  replicated = _losses(tmp_path, 'rep.json', [
      '--variable_update', 'replicated', '--learning_rate', '0.05'])
  dist = _losses(tmp_path, 'dist.json', ['--variable_update',
                                         'distributed_replicated'])
  np.testing.assert_allclose(replicated, ps, rtol=1e-4)
  np.testing.assert_allclose(dist, ps, rtol=1e-4)


def _checkpoint_values(train_dir):
  reader = tf.train.load_checkpoint(train_dir)
  return dict((name, reader.get_tensor(name))
              for name in reader.get_variable_to_shape_map())


@pytest.mark.parametrize('strategy', ['replicated', 'parameter_server'])
def test_checkpoint_restores(strategy, tmp_path):
  train_dir = str(tmp_path / 'train')
  flags = TINY + ['--variable_update', strategy, '--train_dir', train_dir]
  first = run_main(flags, tmp_path, 'first.json')
  assert first['restored_from'] is None
  saved = _checkpoint_values(train_dir)
  assert saved['global_step'] == 4
  assert len(saved) == 3  # global_step and the model's weights and biases.

  # Restore into a fresh graph; every tower's copy must equal the checkpoint.
  config = run_config.BenchmarkConfig(
      model='trivial', variable_update=strategy, num_gpus=2, batch_size=4,
      train_dir=train_dir).resolved()
  host, session_config = local_run.make_host(config)
  g = harness.build_training_graph(config, host)
  with tf.Session(graph=g.graph, config=session_config) as sess:
    sess.run(g.init_op)
    g.saver.restore(sess, tf.train.latest_checkpoint(train_dir))
    sess.run(g.post_init_op or [])
    with g.graph.as_default():
      model_vars = [v for v in tf.global_variables() + tf.local_variables()
                    if v.name.startswith('v')]
    values = sess.run(model_vars)
  assert len(model_vars) == (4 if strategy == 'replicated' else 2)
  for var, value in zip(model_vars, values):
    name = var.op.name.split('/', 1)[1]
    np.testing.assert_array_equal(value, saved[name])

  # Training goes on from the restored global step, to --num_batches
  # counted from global step 0 (tf_cnn_benchmarks' end_local_step): 6 - 4
  # timed batches after the warm-up one.
  second = run_main(flags + ['--num_batches', '6'], tmp_path, 'second.json')
  assert second['restored_from'].endswith('model.ckpt-4')
  assert len(second['losses']) == 2
  assert second['global_step'] == 7


def test_summary_and_trace(tmp_path):
  summary_dir = tmp_path / 'summaries'
  trace_file = tmp_path / 'trace.json'
  run_main(TINY + ['--summary_dir', str(summary_dir), '--trace_file',
                   str(trace_file)], tmp_path)
  with open(str(trace_file)) as f:
    trace = json.load(f)
  assert any(e.get('ph') == 'X' for e in trace['traceEvents'])
  events = [p for p in os.listdir(str(summary_dir)) if 'tfevents' in p]
  assert len(events) == 1
  steps = []
  for event in tf.train.summary_iterator(str(summary_dir / events[0])):
    for value in event.summary.value:
      assert value.tag == 'loss'
      steps.append(event.step)
  assert steps == [1, 2, 3, 4]


@pytest.mark.parametrize('argv, needle', [
    (['--model', 'vgg'], "'vgg'"),
    (['--num_gpus', '0'], '--num_gpus=0: must be at least 1; pass '
                          '--num_gpus=1 or more'),
    (['--num_gpus', '-1'], '--num_gpus=-1: must be at least 1'),
    (['--variable_update', 'replicated', '--device', 'cpu', '--num_gpus',
      '4', '--use_nccl'], 'NCCL'),
    (['--variable_update', 'replicated', '--staged_vars'], 'staged_vars'),
    (['--variable_update', 'independent', '--use_nccl'], 'use_nccl'),
    (['--variable_update', 'sync'], "'sync'"),
    (['--batch_size', '0'], 'at least 1'),
    (['--staged_vars=maybe'], '--staged_vars=maybe: expected true or false'),
    (['--learning_rate', '-1'], 'positive'),
    (['--compare_towers', '1,x'], '1,x'),
    (['--compare_strategies', 'replicated,ring'], 'ring'),
    (['--compare', '--train_dir', 'x'], '--compare'),
    (['--no_such_flag'], '--no_such_flag'),
])
def test_bad_flag_is_one_line(argv, needle, capsys):
  status = cli.main(argv)
  captured = capsys.readouterr()
  assert status != 0
  lines = captured.err.splitlines()
  assert len(lines) == 1, captured.err
  assert lines[0].startswith('variable_mgr_benchmark: error: ')
  assert needle in lines[0]
  assert 'Traceback' not in captured.err
  assert captured.out == ''


def _subprocess(args):
  env = dict(os.environ, PYTHONPATH=REPO)
  return subprocess.run([sys.executable, '-m', 'variable_mgr.benchmark'] +
                        args, cwd=REPO, env=env, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, universal_newlines=True,
                        timeout=120)


def test_module_entry_point():
  good = _subprocess(TINY + ['--display_every', '1'])
  assert good.returncode == 0, good.stderr
  assert 'total images/sec: ' in good.stdout
  assert [l.split('\t')[0] for l in good.stdout.splitlines()
          if '\timages/sec: ' in l] == ['1', '2', '3']
  if _tf.__version__.startswith('2.'):
    # CPU towers: the session has no GPU device, so TensorFlow 2 does not
    # initialise CUDA and logs no "failed call to cuInit" error on a machine
    # without a driver (tensorflow-gpu 1.15 probes CUDA whatever the session
    # asks: docs/troubleshooting.md).
    assert 'cuInit' not in good.stderr, good.stderr
  bad = _subprocess(['--num_gpus', '0'])
  assert bad.returncode == 2
  assert 'Traceback' not in bad.stderr
  assert bad.stderr.splitlines()[-1].startswith(
      'variable_mgr_benchmark: error: --num_gpus=0: must be at least 1')


@pytest.mark.skipif(
    not _tf.__version__.startswith('2.') or
    int(_tf.__version__.split('.')[1]) < 16,
    reason='Keras 2 is bundled before TensorFlow 2.16: nothing to select')
def test_layer_models_run_without_the_keras_variable_set():
  """The command selects Keras 2 (tf_keras) itself on TensorFlow 2.16+:
  with TF_USE_LEGACY_KERAS unset by the caller, a model built from
  tf.compat.v1.layers still trains (Keras 3 would refuse conv2d)."""
  env = dict(os.environ, PYTHONPATH=REPO)
  env.pop('TF_USE_LEGACY_KERAS', None)
  run = subprocess.run(
      [sys.executable, '-m', 'variable_mgr.benchmark', '--model', 'alexnet',
       '--num_gpus', '1', '--batch_size', '1', '--num_batches', '1',
       '--num_warmup_batches', '0'], cwd=REPO, env=env,
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
      timeout=300)
  assert run.returncode == 0, run.stderr[-2000:]
  assert 'total images/sec: ' in run.stdout


@pytest.mark.parametrize('driver', [False, True])
def test_gpu_count_asks_tensorflow_only_where_a_driver_is(
    driver, tmp_path, monkeypatch):
  """A CUDA build on Linux without the NVIDIA driver has no GPU: counted
  without asking TensorFlow, whose CUDA probe would log an error line."""
  from variable_mgr.benchmark.training import run_config  # pylint: disable=g-import-not-at-top
  driver_file = tmp_path / 'version'
  if driver:
    driver_file.write_text('NVRM version: test\n')
  asked = []
  monkeypatch.setattr(run_config, 'NVIDIA_DRIVER_FILE', str(driver_file))
  monkeypatch.setattr(run_config.sys, 'platform', 'linux')
  monkeypatch.setattr(_tf.test, 'is_built_with_cuda', lambda: True)
  monkeypatch.setattr(_tf.config.experimental, 'list_physical_devices',
                      lambda kind: asked.append(kind) or ['gpu0', 'gpu1'])
  assert run_config.gpu_count() == (2 if driver else 0)
  assert asked == (['GPU'] if driver else [])


def test_the_in_process_cluster_of_cpu_towers_has_no_gpu_device(monkeypatch):
  """distributed_replicated's one-machine cluster: its servers get no GPU
  device, so TensorFlow 2 logs no CUDA error where there is no driver."""
  from variable_mgr.benchmark.runs import in_process  # pylint: disable=g-import-not-at-top
  configs = []

  class Server(object):
    target = 'grpc://fake'

    def __init__(self, cluster, job_name, task_index, config):
      del cluster, task_index
      configs.append((job_name, dict(config.device_count)))

  monkeypatch.setattr(in_process.tf.train, 'Server', Server)
  in_process.LocalClusterHost(2, 'cpu').start()
  assert configs == [('ps', {'CPU': 1, 'GPU': 0}),
                     ('worker', {'CPU': 2, 'GPU': 0})]
