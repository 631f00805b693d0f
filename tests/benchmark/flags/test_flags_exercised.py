"""Flags of the benchmark command that change the numbers: --optimizer
momentum against NumPy's Nesterov momentum, --seed, --device.

Every run is `python -m variable_mgr.benchmark` with the trivial model
(logits = x W + b) on 2 towers of 4 images, as a user runs it; the runs
start together (module fixture) and each test reads its own. The NumPy
reference replays the command's fixed synthetic batches (those of the
cluster tests, whose helpers live in tests/distributed/clusterlib.py).
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, os.pardir, 'distributed'))
import clusterlib  # pylint: disable=g-import-not-at-top,wrong-import-position

REPO = clusterlib.REPO
TOWERS = 2
MOMENTUM = 0.8
LEARNING_RATE = 0.02
STEPS = 4
# Both runs of a seed are the same process: their losses are equal, bit for
# bit; another seed gives other initial values and other data.
COMMON = ['--model', 'trivial', '--data_name', 'small', '--num_gpus',
          str(TOWERS), '--batch_size',
          str(clusterlib.BATCH), '--num_warmup_batches', '0',
          '--weight_decay', '0', '--display_every', '1']
SLOTS = ('logits/weights/Momentum', 'logits/biases/Momentum')


def _momentum_flags(train_dir):
  return COMMON + ['--variable_update', 'parameter_server', '--optimizer',
                   'momentum', '--momentum', str(MOMENTUM), '--learning_rate',
                   str(LEARNING_RATE), '--seed', str(clusterlib.SEED),
                   '--num_batches', str(STEPS), '--train_dir', train_dir]


def _runs(tmp):
  """name -> (flags, output JSON path or None)."""
  train_dir = os.path.join(tmp, 'momentum')
  seed_run = COMMON + ['--variable_update', 'replicated', '--num_batches',
                       '2']
  return {
      'momentum': (_momentum_flags(train_dir), 'momentum.json'),
      'seed_1': (seed_run + ['--seed', '1'], 'seed_1.json'),
      'seed_1_cpu': (seed_run + ['--seed', '1', '--device', 'cpu'],
                     'seed_1_cpu.json'),
      'seed_2': (seed_run + ['--seed', '2'], 'seed_2.json'),
      'gpu': (seed_run + ['--device', 'gpu'], None),
  }


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
  """name -> {'status', 'stdout', 'stderr', 'results', 'train_dir'}."""
  tmp = str(tmp_path_factory.mktemp('flags'))
  train_dir = os.path.join(tmp, 'momentum')
  initial = clusterlib.initial_values(seed=2)
  values = dict(initial)
  for slot in SLOTS:  # The restore wants the optimizer's slots too.
    values[slot] = np.zeros_like(initial[slot[:-len('/Momentum')]])
  clusterlib.write_checkpoint(train_dir, values, 0)
  env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL='2')
  started = {}
  for name, (flags, output) in _runs(tmp).items():
    argv = list(flags)
    if output:
      argv += ['--output', os.path.join(tmp, output)]
    started[name] = subprocess.Popen(
        [sys.executable, '-m', 'variable_mgr.benchmark'] + argv, cwd=REPO,
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, universal_newlines=True)
  result = {}
  try:
    for name, process in started.items():
      stdout, stderr = process.communicate(timeout=300)
      output = _runs(tmp)[name][1]
      results = None
      if process.returncode == 0 and output:
        with open(os.path.join(tmp, output)) as f:
          results = json.load(f)
      result[name] = dict(status=process.returncode, stdout=stdout,
                          stderr=stderr, results=results)
  finally:
    for process in started.values():
      if process.poll() is None:
        process.kill()
        process.wait()
  result['momentum']['train_dir'] = train_dir
  result['momentum']['initial'] = initial
  return result


def _loss(values, batch):
  """Mean softmax cross-entropy of one tower's batch."""
  x, labels = batch
  logits = x.dot(values['logits/weights'].astype(np.float64)) + (
      values['logits/biases'].astype(np.float64))
  logits -= logits.max(axis=1, keepdims=True)
  log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
  return -log_p[np.arange(len(labels)), labels].mean()


def _momentum_reference(initial, steps, momentum):
  """(losses, weights, accumulators) of `steps` steps of tf.train's
  Nesterov momentum (tf_cnn_benchmarks'): acc = momentum * acc + g;
  w -= lr * (g + momentum * acc), g the mean of the towers' gradients
  (parameter_server); momentum 0 is plain SGD."""
  batches = clusterlib.tower_batches(TOWERS)
  w = dict((k, v.astype(np.float64)) for k, v in initial.items())
  acc = dict((k, np.zeros_like(v)) for k, v in w.items())
  losses = []
  for _ in range(steps):
    losses.append(np.mean([_loss(w, b) for b in batches]))
    grads = [clusterlib.gradients(w, b) for b in batches]
    for k in w:
      g = sum(gd[k] for gd in grads) / len(grads)
      acc[k] = momentum * acc[k] + g
      w[k] = w[k] - LEARNING_RATE * (g + momentum * acc[k])
  return losses, w, acc


def _ok(run):
  assert run['status'] == 0, run['stderr']
  return run['results']


def test_momentum_matches_numpy(runs):
  run = runs['momentum']
  results = _ok(run)
  assert 'Optimizer:   momentum' in run['stdout']
  assert results['restored_from'].endswith('model.ckpt-0')
  losses, weights, accumulators = _momentum_reference(
      run['initial'], STEPS, MOMENTUM)
  np.testing.assert_allclose(results['losses'], losses, rtol=1e-4, atol=1e-6)
  saved, step = clusterlib.read_checkpoint(run['train_dir'])
  assert step == STEPS
  assert sorted(saved) == sorted(list(weights) + list(SLOTS))
  for k in weights:
    np.testing.assert_allclose(saved[k], weights[k], rtol=1e-4, atol=1e-6,
                               err_msg=k)
    np.testing.assert_allclose(saved[k + '/Momentum'], accumulators[k],
                               rtol=1e-4, atol=1e-6, err_msg=k)
  # Plain SGD from the same start ends elsewhere: the momentum counted.
  _, sgd, _ = _momentum_reference(run['initial'], STEPS, 0.0)
  assert not np.allclose(saved['logits/weights'], sgd['logits/weights'],
                         rtol=1e-2, atol=1e-4)


def test_same_seed_same_run_other_seed_other_start(runs):
  first, again, other = (_ok(runs[n]) for n in ('seed_1', 'seed_1_cpu',
                                                'seed_2'))
  assert first['losses'] == again['losses']
  assert first['config']['seed'] == 1 and other['config']['seed'] == 2
  assert abs(first['losses'][0] - other['losses'][0]) > 1e-3, (
      first['losses'], other['losses'])


def test_device_flag_picks_the_tower_devices(runs):
  assert "Devices:     ['/cpu:0', '/cpu:1']" in runs['seed_1_cpu']['stdout']
  assert runs['seed_1_cpu']['results']['config']['device'] == 'cpu'
  if tf.config.experimental.list_physical_devices('GPU'):
    pytest.skip('this machine has GPUs: --device gpu would run')
  gpu = runs['gpu']
  # The towers are GPUs; without one the run is refused before its graph is
  # built (nothing printed on stdout) with one line, status 2.
  assert gpu['stdout'] == ''
  assert gpu['status'] == 2, gpu['stderr']
  # (TensorFlow's own C++ start-up lines may come before.)
  lines = [l for l in gpu['stderr'].splitlines()
           if l.startswith('variable_mgr_benchmark:')]
  assert len(lines) == 1, gpu['stderr']
  assert lines[0].startswith('variable_mgr_benchmark: error: '), lines
  assert gpu['stderr'].rstrip().endswith(lines[0].rstrip()), gpu['stderr']
  assert 'Traceback' not in gpu['stderr']
