"""Helpers for tests that run real clusters on 127.0.0.1.

`Launch` runs `--launch_local_cluster` as a child process with a hard
timeout; `cleanup()` (from a fixture's finally) kills the launcher and every
task it started, whatever happened. The NumPy reference of the `trivial`
model (logits = x W + b, mean softmax cross-entropy) replays the cluster's
fixed synthetic batches.
"""

import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import tensorflow as _tf

from variable_mgr.benchmark import harness
from variable_mgr.benchmark import models

tf = _tf.compat.v1

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# The longest a launched cluster may take before the test fails.
HARD_TIMEOUT_SECS = 150
MODEL = 'trivial'
SEED = 1234
LEARNING_RATE = 0.05
BATCH = 4
TOWERS = 2
# Flags of every test cluster: a small model, fixed data, short deadlines.
BASE_FLAGS = ['--model', MODEL, '--num_gpus', str(TOWERS), '--batch_size',
              str(BATCH), '--learning_rate', str(LEARNING_RATE),
              '--weight_decay', '0', '--seed', str(SEED),
              '--num_warmup_batches', '0', '--display_every', '1']

_STARTED = re.compile(r'^launcher: started (\S+) at (\S+) \(pid (\d+)\)')


class Launch(object):
  """`python -m variable_mgr.benchmark.distributed --launch_local_cluster`."""

  def __init__(self, flags, env=None):
    environ = dict(os.environ)
    environ.pop('TF_CONFIG', None)
    environ.update(env or {})
    self.lines = []
    self.started = time.time()
    self.process = subprocess.Popen(
        [sys.executable, '-m', 'variable_mgr.benchmark.distributed',
         '--launch_local_cluster'] + list(flags),
        cwd=REPO, env=environ, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True, universal_newlines=True)
    self._reader = threading.Thread(target=self._read)
    self._reader.daemon = True
    self._reader.start()

  def _read(self):
    for line in self.process.stdout:
      self.lines.append(line.rstrip('\n'))

  @property
  def output(self):
    return '\n'.join(self.lines)

  def tasks(self):
    """{'worker:1': pid} of the started tasks."""
    result = {}
    for line in list(self.lines):
      match = _STARTED.match(line)
      if match:
        result[match.group(1)] = int(match.group(3))
    return result

  def wait_for_line(self, pattern, timeout):
    """Blocks until a line matches `pattern`; fails the test on timeout."""
    regex = re.compile(pattern)
    end = time.time() + timeout
    while time.time() < end:
      if any(regex.search(line) for line in list(self.lines)):
        return
      if self.process.poll() is not None:
        time.sleep(0.5)  # The last lines.
        if any(regex.search(line) for line in list(self.lines)):
          return
        raise AssertionError('the launcher exited (%s) before printing %r:\n'
                             '%s' % (self.process.returncode, pattern,
                                     self.output))
      time.sleep(0.1)
    raise AssertionError('no line matched %r within %gs:\n%s' %
                         (pattern, timeout, self.output))

  def finish(self, timeout=None):
    """Waits for the launcher; returns its exit status."""
    remaining = HARD_TIMEOUT_SECS - (time.time() - self.started)
    timeout = remaining if timeout is None else min(timeout, remaining)
    try:
      status = self.process.wait(max(1.0, timeout))
    except subprocess.TimeoutExpired:
      raise AssertionError('the cluster still ran after %gs:\n%s' %
                           (timeout, self.output))
    self._reader.join(5.0)
    return status

  def cleanup(self):
    """Kills the launcher and every task; reaps the launcher."""
    pids = list(self.tasks().values())
    for pid in [self.process.pid] + pids:
      try:
        os.killpg(pid, signal.SIGKILL)
      except (ProcessLookupError, PermissionError):
        pass
    self.process.wait()
    self._reader.join(5.0)
    self.process.stdout.close()


def alive(pid):
  """Whether a process `pid` exists (a zombie counts as gone: its parent,
  the launcher, reaps it)."""
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  try:
    with open('/proc/%d/stat' % pid) as f:
      return f.read().split(') ')[-1].split()[0] != 'Z'
  except (IOError, OSError):
    return True


def assert_all_gone(launch, within=10.0):
  end = time.time() + within
  pids = [launch.process.pid] + list(launch.tasks().values())
  while time.time() < end and any(alive(p) for p in pids):
    time.sleep(0.1)
  left = [p for p in pids if alive(p)]
  assert not left, 'processes left: %s\n%s' % (left, launch.output)


# -- Checkpoints and the NumPy reference ----------------------------------


def write_checkpoint(train_dir, values, global_step):
  """A checkpoint the cluster's chief restores: {'logits/weights': ...}."""
  graph = tf.Graph()
  with graph.as_default():
    variables = dict((name, tf.Variable(value, name=name.replace('/', '_')))
                     for name, value in values.items())
    variables['global_step'] = tf.Variable(
        np.int64(global_step), name='global_step')
    saver = tf.train.Saver(variables)
    with tf.Session(graph=graph) as sess:
      sess.run(tf.global_variables_initializer())
      os.makedirs(train_dir, exist_ok=True)
      saver.save(sess, os.path.join(train_dir, 'model.ckpt'),
                 global_step=global_step)


def read_checkpoint(train_dir):
  """({'logits/weights': ...}, global_step) of the latest checkpoint."""
  path = tf.train.latest_checkpoint(train_dir)
  assert path, 'no checkpoint in %s' % train_dir
  reader = tf.train.load_checkpoint(path)
  values = dict((name, reader.get_tensor(name))
                for name in reader.get_variable_to_shape_map())
  return values, int(values.pop('global_step'))


def initial_values(seed=0):
  rng = np.random.RandomState(seed)
  model = models.get_model(MODEL)
  size = int(np.prod(model.image_shape))
  return {'logits/weights': (0.05 * rng.randn(size, model.num_classes)
                             ).astype(np.float32),
          'logits/biases': (0.1 * rng.randn(model.num_classes)
                            ).astype(np.float32)}


def tower_batches(num_towers):
  """The fixed (images [B, 784], labels [B]) of global towers 0..n-1, as
  `distributed.build_worker_graph` makes them (tower = task * towers + d)."""
  model = models.get_model(MODEL)
  graph = tf.Graph()
  with graph.as_default():
    tensors = [harness.synthetic_inputs(model, BATCH, SEED, t)
               for t in range(num_towers)]
    with tf.Session(graph=graph) as sess:
      batches = sess.run(tensors)
  return [(x.reshape(BATCH, -1).astype(np.float64), y) for x, y in batches]


def gradients(values, batch):
  """Gradients of the mean softmax cross-entropy of one tower's batch."""
  x, labels = batch
  w = values['logits/weights'].astype(np.float64)
  b = values['logits/biases'].astype(np.float64)
  logits = x.dot(w) + b
  logits -= logits.max(axis=1, keepdims=True)
  p = np.exp(logits)
  p /= p.sum(axis=1, keepdims=True)
  p[np.arange(len(labels)), labels] -= 1.0
  d_logits = p / len(labels)
  return {'logits/weights': x.T.dot(d_logits),
          'logits/biases': d_logits.sum(axis=0)}


def worker_update(values, batches, num_workers, towers):
  """sum over workers of (mean over the worker's towers) of the gradients:
  each worker applies the mean of its own towers; the updates add up."""
  total = dict((k, np.zeros_like(v, dtype=np.float64))
               for k, v in values.items())
  for k in range(num_workers):
    for d in range(towers):
      g = gradients(values, batches[k * towers + d])
      for name in total:
        total[name] += g[name] / towers
  return total


def reference(values, num_workers, steps, staged=False):
  """The variables after `steps` synchronous SGD steps.

  Plain: w[t+1] = w[t] - lr * sum_k mean_d g_kd(w[t]).
  Staged (one-step-stale reads): w[t+1] = w[t] - lr * sum_k mean_d
  g_kd(w[t-1]), with w[-1] = w[0].
  """
  batches = tower_batches(num_workers * TOWERS)
  current = dict((k, v.astype(np.float64)) for k, v in values.items())
  previous = current
  for _ in range(steps):
    read = previous if staged else current
    update = worker_update(read, batches, num_workers, TOWERS)
    previous = current
    current = dict((k, current[k] - LEARNING_RATE * update[k])
                   for k in current)
  return current


def assert_close(actual, expected, rtol=1e-4, atol=1e-5):
  assert sorted(actual) == sorted(expected)
  for name in expected:
    np.testing.assert_allclose(actual[name], expected[name], rtol=rtol,
                               atol=atol, err_msg=name)
