"""Helpers for tests that run real clusters on 127.0.0.1.

`Launch` runs `--launch_local_cluster` as a child process; `cleanup()`
(from a fixture's finally) kills the launcher and every task it started,
whatever happened. The NumPy reference of the `trivial` model (logits =
x W + b, mean softmax cross-entropy) replays the cluster's fixed synthetic
batches.

How long a test waits comes from the cluster's own deadlines (see
`Deadlines`): every session call of a task has `--op_timeout_secs` (and a
watchdog a little past it), every wait for another task
`--startup_timeout_secs`, and the launcher stops every task a fixed margin
after the first failure. The one allowance that no deadline covers is the
start of a Python process that imports TensorFlow and builds its graph.

The launcher picks free ports by binding and closing them; another process
may take one before the task binds it. A task that cannot bind its port
fails with "Could not start gRPC server": `Launch` then starts the whole
cluster again, on new ports, up to PORT_ATTEMPTS times.

With `--network_rate` every task runs in a network namespace of its own
(see `variable_mgr.benchmark.cluster.netns`); `Launch.network()` is a
handle on the launcher's namespaces (to take a link down or slow it), and
`cleanup()` deletes every namespace of the launcher's pid, the launcher
killed or not.
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

from variable_mgr.benchmark.cluster import netns
from variable_mgr.benchmark.cluster.deadline import DEATH_GRACE_SECS
from variable_mgr.benchmark.cluster.deadline import WATCHDOG_MARGIN_SECS
from variable_mgr.benchmark.cluster.launcher import FAILURE_MARGIN_SECS
from variable_mgr.benchmark.cluster.launcher import TERMINATE_GRACE_SECS
from variable_mgr.benchmark.models import catalog
from variable_mgr.benchmark.training import harness

tf = _tf.compat.v1

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# What no deadline of the cluster bounds: starting a Python process that
# imports TensorFlow and builds the graph, on a loaded machine.
PROCESS_START_SECS = 60.0
# Session calls of a worker besides its steps: start signal, init, restore,
# ready queue, local init, post-init, start barrier, global step (twice),
# save, done signal.
SETUP_CALLS = 12
# A cluster whose port was taken is started again this many times in all.
PORT_ATTEMPTS = 3
PORT_TAKEN = 'Could not start gRPC server'
MODEL = 'trivial'
SEED = 1234
LEARNING_RATE = 0.05
BATCH = 4
TOWERS = 2
# Flags of every test cluster: a small model, fixed data, short deadlines.
BASE_FLAGS = ['--model', MODEL, '--num_gpus', str(TOWERS), '--batch_size',
              str(BATCH), '--learning_rate', str(LEARNING_RATE),
              '--weight_decay', '0', '--seed', str(SEED),
              '--num_warmup_batches', '0', '--display_every', '1',
              '--startup_timeout_secs', '60', '--data_name', 'small']

# Every distributed strategy of the namespace cluster tests: (id, flags).
NETWORK_STRATEGIES = [
    ('parameter_server', ['--variable_update', 'parameter_server']),
    ('staged_parameter_server', ['--variable_update', 'parameter_server',
                                 '--staged_vars']),
    ('distributed_replicated', ['--variable_update',
                                'distributed_replicated']),
    ('collective_all_reduce', ['--variable_update', 'collective_all_reduce']),
    ('asynchronous_parameter_server', ['--variable_update',
                                       'parameter_server',
                                       '--cross_replica_sync=false']),
]


def strategy_reference(name, values, num_workers, steps):
  """NumPy's variables after `steps` synchronous steps of the strategy
  `name` of NETWORK_STRATEGIES (not the asynchronous one)."""
  assert not name.startswith('asynchronous'), name
  return reference(values, num_workers, steps, staged='staged' in name,
                   mean=name == 'collective_all_reduce')


_STARTED = re.compile(r'^launcher: started (\S+) at (\S+) \(pid (\d+)\)')
_IN_NAMESPACE = re.compile(r'^launcher: started (\S+) at \S+ \(pid \d+\) in '
                           r'namespace (\S+), link (\S+) of (\S+)$')


def _flag(flags, name, default):
  """The value of `--name` (as `--name v` or `--name=v`) in `flags`."""
  value = default
  for i, flag in enumerate(flags):
    if flag == '--' + name and i + 1 < len(flags):
      value = flags[i + 1]
    elif flag.startswith('--%s=' % name):
      value = flag.split('=', 1)[1]
  return type(default)(value)


class Deadlines(object):
  """What the cluster's own deadlines promise, from its flags.

  A call of a task returns or fails within `op_timeout_secs`, its watchdog
  ends the task WATCHDOG_MARGIN_SECS later, and a failed call probes for
  the dead task DEATH_GRACE_SECS more; a wait for another task ends after
  `startup_timeout_secs`. After the first task fails, the launcher gives
  the others `op_timeout_secs` + FAILURE_MARGIN_SECS, then stops them
  (SIGTERM, SIGKILL TERMINATE_GRACE_SECS later).
  """

  def __init__(self, flags):
    self.op_timeout = _flag(flags, 'op_timeout_secs', 60.0)
    self.startup_timeout = _flag(flags, 'startup_timeout_secs', 300.0)
    self.steps = (_flag(flags, 'num_batches', 50) +
                  _flag(flags, 'num_warmup_batches', 5))

  @property
  def call(self):
    """The longest one session call may take, failing included."""
    return self.op_timeout + WATCHDOG_MARGIN_SECS + DEATH_GRACE_SECS

  @property
  def stop(self):
    """From the first task's failure to the launcher's exit."""
    return (self.op_timeout + FAILURE_MARGIN_SECS + TERMINATE_GRACE_SECS +
            2 * self.call)

  def until_step(self, step):
    """From the launch to step `step` done on every worker."""
    return (PROCESS_START_SECS + self.startup_timeout +
            (SETUP_CALLS + step) * self.call)

  @property
  def run(self):
    """From the launch to the launcher's exit, success or failure."""
    return self.until_step(self.steps) + self.stop


def _default_sigint():
  """In the launcher's process, before it runs: SIGINT as a terminal gives
  it. A shell's background job (nohup ... &) starts with SIGINT ignored, and
  Python keeps an inherited SIG_IGN, so the tests' Ctrl-C would not reach
  the launcher of a suite run that way."""
  signal.signal(signal.SIGINT, signal.SIG_DFL)


class Launch(object):
  """`python -m <module> --launch_local_cluster` + flags (`module`:
  variable_mgr.benchmark.distributed, or variable_mgr.benchmark as README
  gives it)."""

  def __init__(self, flags, env=None,
               module='variable_mgr.benchmark.distributed'):
    environ = dict(os.environ)
    environ.pop('TF_CONFIG', None)
    environ.update(env or {})
    self.flags = list(flags)
    self.deadlines = Deadlines(self.flags)
    self._command = [sys.executable, '-m', module, '--launch_local_cluster'
                    ] + self.flags
    self.namespaced = any(f.split('=')[0] == '--network_rate'
                          for f in self.flags)
    self._environ = environ
    self.attempts = 0
    self._previous = []  # (process, task pids) of attempts given up.
    self._start()

  def _start(self):
    self.attempts += 1
    self.lines = []
    self.started = time.time()
    self.deadline = self.started + self.deadlines.run
    self.process = subprocess.Popen(
        self._command, cwd=REPO, env=self._environ, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True, universal_newlines=True,
        preexec_fn=_default_sigint)
    self._reader = threading.Thread(target=self._read,
                                    args=(self.process, self.lines))
    self._reader.daemon = True
    self._reader.start()

  @staticmethod
  def _read(process, lines):
    for line in process.stdout:
      lines.append(line.rstrip('\n'))

  def _retried_port(self):
    """If the launcher failed because a task's port was taken, starts the
    cluster again and returns True."""
    if self.process.poll() in (None, 0):
      return False
    self._reader.join(5.0)
    if (not any(PORT_TAKEN in line for line in self.lines) or
        self.attempts >= PORT_ATTEMPTS):
      return False
    self._previous.append((self.process, list(self.tasks().values())))
    self.process.stdout.close()
    self._start()
    return True

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

  def hosts(self):
    """{'worker:1': host index} of the tasks started in namespaces."""
    result = {}
    for line in list(self.lines):
      match = _IN_NAMESPACE.match(line)
      if match:
        result[match.group(1)] = int(match.group(2).rsplit('-', 1)[1])
    return result

  def network(self):
    """A `netns.Network` handle on the launcher's namespaces (made by the
    launcher; `set_link`, `set_rate`, `add_outsider` act on them)."""
    hosts = self.hosts()
    assert hosts, 'no task started in a namespace:\n' + self.output
    return netns.Network(len(hosts), None, owner=self.process.pid)

  def address(self, name):
    """'10.77.0.2:2222' (or '127.0.0.1:port') of task `name`."""
    for line in list(self.lines):
      match = _STARTED.match(line)
      if match and match.group(1) == name:
        return match.group(2)
    raise AssertionError('no task %s:\n%s' % (name, self.output))

  def wait_for_line(self, pattern, timeout=None, step=None):
    """Blocks until a line matches `pattern`; fails the test on timeout.

    Args:
      pattern: a regular expression.
      timeout: seconds from now; None for the cluster's own deadline of
        step `step` (see `Deadlines.until_step`), counted from the launch.
      step: the step the line comes with (0: before the first step).
    """
    regex = re.compile(pattern)
    if timeout is None:
      end = self.started + self.deadlines.until_step(step or 0)
    else:
      end = time.time() + timeout
    while time.time() < end:
      if any(regex.search(line) for line in list(self.lines)):
        return
      if self.process.poll() is not None:
        self._reader.join(5.0)  # The last lines.
        if any(regex.search(line) for line in list(self.lines)):
          return
        if self._retried_port():
          if timeout is None:
            end = self.started + self.deadlines.until_step(step or 0)
          continue
        raise AssertionError('the launcher exited (%s) before printing %r:\n'
                             '%s' % (self.process.returncode, pattern,
                                     self.output))
      time.sleep(0.1)
    raise AssertionError('no line matched %r within %.0fs:\n%s' %
                         (pattern, end - self.started, self.output))

  def finish(self, timeout=None):
    """Waits for the launcher; returns its exit status.

    Args:
      timeout: seconds from now; None: until the cluster's own deadline
        (`Deadlines.run` from the launch).
    """
    while True:
      remaining = self.deadline - time.time()
      wait = remaining if timeout is None else min(timeout, remaining)
      try:
        status = self.process.wait(max(1.0, wait))
      except subprocess.TimeoutExpired:
        raise AssertionError('the cluster still ran after %.0fs:\n%s' %
                             (time.time() - self.started, self.output))
      self._reader.join(5.0)
      if not self._retried_port():
        return status

  def cleanup(self):
    """Kills the launcher and every task of every attempt; reaps them."""
    attempts = self._previous + [(self.process, list(self.tasks().values()))]
    for process, pids in attempts:
      for pid in [process.pid] + pids:
        try:
          os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
          pass
      process.wait()
      if self.namespaced:
        netns.remove_runs(pid=process.pid)
    self._reader.join(5.0)
    self.process.stdout.close()


def own_namespaces():
  """The namespaces of this package's prefix (from any run)."""
  return [n for n in netns.namespaces() if n.startswith(netns.PREFIX)]


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
  model = catalog.get_model(MODEL)
  size = int(np.prod(model.image_shape))
  return {'logits/weights': (0.05 * rng.randn(size, model.num_classes)
                             ).astype(np.float32),
          'logits/biases': (0.1 * rng.randn(model.num_classes)
                            ).astype(np.float32)}


def tower_batches(num_towers):
  """The fixed (images [B, 784], labels [B]) of global towers 0..n-1, as
  `cluster.worker_graph.build_worker_graph` makes them (tower = task *
  towers + d)."""
  model = catalog.get_model(MODEL)
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


def reference(values, num_workers, steps, staged=False, mean=False):
  """The variables after `steps` synchronous SGD steps.

  Plain: w[t+1] = w[t] - lr * sum_k mean_d g_kd(w[t]).
  Staged (one-step-stale reads): w[t+1] = w[t] - lr * sum_k mean_d
  g_kd(w[t-1]), with w[-1] = w[0].
  `mean` (collective_all_reduce): the mean over the workers, not the sum.
  """
  batches = tower_batches(num_workers * TOWERS)
  current = dict((k, v.astype(np.float64)) for k, v in values.items())
  previous = current
  for _ in range(steps):
    read = previous if staged else current
    update = worker_update(read, batches, num_workers, TOWERS)
    scale = LEARNING_RATE / num_workers if mean else LEARNING_RATE
    previous = current
    current = dict((k, current[k] - scale * update[k])
                   for k in current)
  return current


def assert_close(actual, expected, rtol=1e-4, atol=1e-5):
  assert sorted(actual) == sorted(expected)
  for name in expected:
    np.testing.assert_allclose(actual[name], expected[name], rtol=rtol,
                               atol=atol, err_msg=name)


def launched_clusters():
  """The body of the `launch` fixtures: yields `start(flags, env=None,
  module=...)`, which starts a local cluster (through `module`'s
  --launch_local_cluster); every one is killed and reaped when the test
  ends, passed or not, and its namespaces deleted."""
  started = []

  def start(flags, env=None, module='variable_mgr.benchmark.distributed'):
    cluster = Launch(flags, env, module=module)
    started.append(cluster)
    return cluster

  try:
    yield start
  finally:
    for cluster in started:
      cluster.cleanup()
