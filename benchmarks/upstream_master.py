"""tf_cnn_benchmarks master's harness, run with its own variable_mgr.py and
with this package in its place.

Master's files (tensorflow/benchmarks' `scripts/tf_cnn_benchmarks`, the last
version) are found beside the checkout: `$VARIABLE_MGR_UPSTREAM`, else the
first `shared/upstream/tf_cnn_benchmarks` in the checkout's parent
directories (`../shared` beside a CI clone). `prepare` copies them twice
into a work directory: `own/` as they are, `project/` without
`variable_mgr.py`, so that `import variable_mgr` finds this package (its
root is put on `PYTHONPATH` for that copy only). Nothing of master's is
changed; three helpers of our own sit in a third directory on the path:

- `run_master.py` runs master's `tf_cnn_benchmarks.py` unchanged, after
  setting `benchmark_cnn.LOSS_AND_ACCURACY_DIGITS_TO_SHOW` to 15 (master's
  tests do the same) so that two runs' losses compare to float32's digits;
- `run_master_tests.py` runs one of master's test files as its
  `__main__` does (`tf.disable_v2_behavior()`, then the tests) and writes
  each test's outcome as a JSON line; asked to, it replaces master's
  `_check_has_gpu` by a no-op (most of master's tests call it first and
  fail without a CUDA GPU; their sessions place softly, so towers named
  `/gpu:N` then run on the CPU);
- `portpicker.py`, a free-port picker standing in for the `portpicker`
  package that master's distributed test imports, used only where that
  package is not installed.

`run_mode` runs one `--variable_update` mode (local, or a cluster of local
task processes as master's distributed test does) and returns the losses
that worker 0 (or the controller) printed.
"""

import collections
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

UPSTREAM_ENV = 'VARIABLE_MGR_UPSTREAM'
UPSTREAM_PATH = os.path.join('shared', 'upstream', 'tf_cnn_benchmarks')
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KINDS = ('own', 'project')

# A fixed-seed run on the CPU, small enough for seconds a mode.
BASE_FLAGS = ('--model=trivial', '--device=cpu', '--num_gpus=2',
              '--data_format=NHWC', '--num_batches=3',
              '--num_warmup_batches=0', '--batch_size=4',
              '--tf_random_seed=1234', '--display_every=1',
              '--init_learning_rate=0.0001')

# name -> (extra flags, topology): 'local'; ('ps', ps tasks, workers);
# ('controller', workers); ('collective', workers).
Mode = collections.namedtuple('Mode', 'name flags topology')
LOCAL_MODES = (
    Mode('independent', ('--variable_update=independent',), 'local'),
    Mode('parameter_server_cpu', ('--variable_update=parameter_server',
                                  '--local_parameter_device=cpu'), 'local'),
    Mode('parameter_server_gpu', ('--variable_update=parameter_server',
                                  '--local_parameter_device=gpu'), 'local'),
    Mode('parameter_server_staged', ('--variable_update=parameter_server',
                                     '--staged_vars'), 'local'),
    Mode('replicated_copy', ('--variable_update=replicated',), 'local'),
    Mode('replicated_xring', ('--variable_update=replicated',
                              '--all_reduce_spec=xring'), 'local'),
    Mode('replicated_pscpu', ('--variable_update=replicated',
                              '--all_reduce_spec=pscpu'), 'local'),
    Mode('replicated_psgpu', ('--variable_update=replicated',
                              '--all_reduce_spec=psgpu#2'), 'local'),
    Mode('replicated_pscpu_xring', ('--variable_update=replicated',
                                    '--all_reduce_spec=pscpu:2k:xring'),
         'local'),
    Mode('replicated_hierarchical_copy', ('--variable_update=replicated',
                                          '--hierarchical_copy'), 'local'),
    Mode('replicated_repacking', ('--variable_update=replicated',
                                  '--gradient_repacking=2'), 'local'),
    Mode('replicated_relaxed', ('--variable_update=replicated',
                                '--variable_consistency=relaxed'), 'local'),
)
CLUSTER_MODES = (
    Mode('parameter_server_cluster', ('--variable_update=parameter_server',),
         ('ps', 1, 2)),
    Mode('parameter_server_staged_cluster',
         ('--variable_update=parameter_server', '--staged_vars'),
         ('ps', 1, 2)),
    Mode('distributed_replicated', ('--variable_update=distributed_replicated',),
         ('ps', 1, 2)),
    Mode('distributed_all_reduce', ('--variable_update=distributed_all_reduce',
                                    '--all_reduce_spec=pscpu/pscpu'),
         ('controller', 2)),
    Mode('collective_all_reduce', ('--variable_update=collective_all_reduce',
                                   '--all_reduce_spec=collective'),
         ('collective', 2)),
)
MODES = LOCAL_MODES + CLUSTER_MODES

# Master's test files that can run on a CPU.
TEST_FILES = ('variable_mgr_util_test.py', 'allreduce_test.py',
              'benchmark_cnn_test.py', 'benchmark_cnn_distributed_test.py')

_RUN_MASTER = '''"""Runs master's tf_cnn_benchmarks.py, its losses to 15 digits."""
import os
import runpy
import sys
sys.path.insert(0, os.getcwd())
import benchmark_cnn
benchmark_cnn.LOSS_AND_ACCURACY_DIGITS_TO_SHOW = 15
sys.argv[0] = 'tf_cnn_benchmarks.py'
runpy.run_path('tf_cnn_benchmarks.py', run_name='__main__')
'''

_RUN_TESTS = '''"""Runs master's test file argv[1] as its __main__ does; one JSON line
a test (id, outcome, the failure's class and message) to argv[2]."""
import importlib
import json
import os
import sys
import unittest
sys.path.insert(0, os.getcwd())
from absl import flags
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
flags.FLAGS(sys.argv[:1], known_only=True)
module = importlib.import_module(sys.argv[1][:-len('.py')])
if os.environ.get('MASTER_TESTS_GPU_CHECK') == 'off' and hasattr(
    module, '_check_has_gpu'):
  # Master's tests refuse to start without a CUDA GPU; its sessions place
  # softly, so their /gpu:N towers run on the CPU without the check.
  module._check_has_gpu = lambda: None
out = open(sys.argv[2], 'a')


class Recorder(unittest.TextTestResult):
  def _put(self, test, outcome, err=None):
    error, message = (err[0].__name__, str(err[1])) if err else ('', '')
    out.write(json.dumps({'test': test.id(), 'outcome': outcome,
                          'error': error, 'message': message}) + '\\n')
    out.flush()
  def addSuccess(self, test):
    super().addSuccess(test); self._put(test, 'pass')
  def addFailure(self, test, err):
    super().addFailure(test, err); self._put(test, 'fail', err)
  def addError(self, test, err):
    super().addError(test, err); self._put(test, 'error', err)
  def addSkip(self, test, reason):
    super().addSkip(test, reason); self._put(test, 'skip', (Exception, Exception(reason), None))
  def addExpectedFailure(self, test, err):
    super().addExpectedFailure(test, err); self._put(test, 'pass')
  def addUnexpectedSuccess(self, test):
    super().addUnexpectedSuccess(test); self._put(test, 'fail')


suite = unittest.defaultTestLoader.loadTestsFromModule(module)
select = [s for s in os.environ.get('MASTER_TESTS_SELECT', '').split(',')
          if s]


def tests_of(suite):
  for item in suite:
    if isinstance(item, unittest.TestSuite):
      yield from tests_of(item)
    else:
      yield item


if select:
  suite = unittest.TestSuite([t for t in tests_of(suite)
                              if any(s in t.id() for s in select)])
unittest.TextTestRunner(verbosity=0, resultclass=Recorder).run(suite)
'''

_PORTPICKER = '''"""A stand-in for the portpicker package: a port free when asked."""
import socket


def pick_unused_port():
  with socket.socket() as sock:
    sock.bind(('localhost', 0))
    return sock.getsockname()[1]
'''


def find_upstream(start=ROOT):
  """Master's tf_cnn_benchmarks directory, or None (see the docstring)."""
  given = os.environ.get(UPSTREAM_ENV)
  if given:
    return given if os.path.isfile(os.path.join(given, 'benchmark_cnn.py')) \
        else None
  here = os.path.abspath(start)
  while True:
    candidate = os.path.join(here, UPSTREAM_PATH)
    if os.path.isfile(os.path.join(candidate, 'benchmark_cnn.py')):
      return candidate
    parent = os.path.dirname(here)
    if parent == here:
      return None
    here = parent


def prepare(upstream, workdir):
  """Copies master's files into `workdir`/own and `workdir`/project (without
  variable_mgr.py) and writes the helpers into `workdir`/helpers."""
  for kind in KINDS:
    target = os.path.join(workdir, kind)
    if os.path.exists(target):
      shutil.rmtree(target)
    shutil.copytree(upstream, target,
                    ignore=shutil.ignore_patterns('__pycache__'))
  os.remove(os.path.join(workdir, 'project', 'variable_mgr.py'))
  helpers = os.path.join(workdir, 'helpers')
  os.makedirs(helpers, exist_ok=True)
  for name, text in (('run_master.py', _RUN_MASTER),
                     ('run_master_tests.py', _RUN_TESTS)):
    with open(os.path.join(helpers, name), 'w') as f:
      f.write(text)
  shims = os.path.join(workdir, 'shims')
  os.makedirs(shims, exist_ok=True)
  with open(os.path.join(shims, 'portpicker.py'), 'w') as f:
    f.write(_PORTPICKER)
  return workdir


def _has_module(python, name):
  return subprocess.call([python, '-c', 'import %s' % name],
                         stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL) == 0


def environment(workdir, kind, python):
  """The environment of a run in copy `kind`: the package on the path for
  `project` only, tf_keras's Keras 2 for `tf.compat.v1.layers`, no GPU,
  oneDNN's kernels on."""
  env = dict(os.environ)
  path = []
  if kind == 'project':
    path.append(ROOT)
  if not _has_module(python, 'portpicker'):
    path.append(os.path.join(workdir, 'shims'))
  env['PYTHONPATH'] = os.pathsep.join(path)
  env['TF_USE_LEGACY_KERAS'] = '1'
  env['TF_CPP_MIN_LOG_LEVEL'] = '2'
  env['CUDA_VISIBLE_DEVICES'] = ''
  # oneDNN's kernels, whatever the processor (a value the user set is
  # kept): master's tests build NCHW convolutions, whose gradients
  # TensorFlow 2.x computes on the CPU only with them ("Conv2DCustomBackprop
  # FilterOp only supports NHWC" otherwise), and it turns them on by itself
  # only on processors with AVX-512 or AVX-VNNI features. The modes' losses
  # then compare across such machines and others.
  env.setdefault(ONEDNN, '1')
  return env


# The switch of TensorFlow's oneDNN kernels (see `environment`).
ONEDNN = 'TF_ENABLE_ONEDNN_OPTS'

_LOSS_LINE = re.compile(r'^(\d+)\timages/sec: .*\t(\S+)$')


def parse_losses(text):
  """`[loss]` of master's progress lines, by step."""
  losses = []
  for line in text.splitlines():
    match = _LOSS_LINE.match(line.strip('\r'))
    if match:
      losses.append(float(match.group(2)))
  return losses


def _free_ports(n):
  socks = [socket.socket() for _ in range(n)]
  try:
    for sock in socks:
      sock.bind(('localhost', 0))
    return [sock.getsockname()[1] for sock in socks]
  finally:
    for sock in socks:
      sock.close()


RunResult = collections.namedtuple('RunResult', 'losses ok output')


def _start(python, workdir, kind, args, log):
  return subprocess.Popen(
      [python, os.path.join(workdir, 'helpers', 'run_master.py')] + args,
      cwd=os.path.join(workdir, kind), env=environment(workdir, kind, python),
      stdout=log, stderr=subprocess.STDOUT)


def _stop(processes):
  for process in processes:
    if process.poll() is None:
      process.kill()
    process.wait()


def _task_args(topology):
  """`[(job, index, extra flags)]` of a topology, and which one reports."""
  kind = topology[0] if isinstance(topology, tuple) else topology
  if kind == 'local':
    return [('', 0, [])], 0, []
  if kind == 'ps':
    _, num_ps, workers = topology
    ports = _free_ports(num_ps + workers)
    hosts = ['--ps_hosts=' + ','.join('localhost:%d' % p
                                      for p in ports[:num_ps]),
             '--worker_hosts=' + ','.join('localhost:%d' % p
                                          for p in ports[num_ps:])]
    tasks = [('ps', i, []) for i in range(num_ps)]
    tasks += [('worker', i, []) for i in range(workers)]
    return tasks, num_ps, hosts
  workers = topology[1]
  ports = _free_ports(workers + 1)
  hosts = ['--worker_hosts=' + ','.join('localhost:%d' % p
                                        for p in ports[:workers])]
  tasks = [('worker', i, []) for i in range(workers)]
  if kind == 'controller':
    hosts.append('--controller_host=localhost:%d' % ports[workers])
    tasks.append(('controller', 0, []))
    return tasks, workers, hosts
  return tasks, 0, hosts


def run_mode(workdir, kind, mode, python=sys.executable, timeout=600,
             extra=()):
  """Runs `mode` in copy `kind`, with the flags `extra` added; a
  `RunResult` of the reporting task (worker 0, or the controller)."""
  tasks, reporter, hosts = _task_args(mode.topology)
  logs, processes = [], []
  try:
    for job, index, _ in tasks:
      args = list(BASE_FLAGS) + list(mode.flags) + list(extra) + hosts
      if job:
        args += ['--job_name=%s' % job, '--task_index=%d' % index]
      log = tempfile.TemporaryFile(mode='w+')
      logs.append(log)
      processes.append(_start(python, workdir, kind, args, log))
    # PS tasks, and the workers of a controller, serve until stopped.
    serving = ('ps', 'worker') if any(job == 'controller'
                                      for job, _, _ in tasks) else ('ps',)
    waited = [p for (job, _, _), p in zip(tasks, processes)
              if job not in serving]
    deadline = time.time() + timeout
    for process in waited:
      try:
        process.wait(max(1, deadline - time.time()))
      except subprocess.TimeoutExpired:
        break
    ok = all(p.returncode == 0 for p in waited)
  finally:
    _stop(processes)
  texts = []
  for log in logs:
    log.seek(0)
    texts.append(log.read())
    log.close()
  output = texts[reporter]
  if not ok:
    output = '\n'.join(texts)
  return RunResult(parse_losses(texts[reporter]), ok, output)


def failure_line(error, message):
  """A failed test's class and cause lines (TensorFlow's wrapping and the
  stack traces its message quotes left out, as the benchmark reports an
  error); '' for none."""
  if not error:
    return ''
  from variable_mgr.benchmark.runs import exit_status  # pylint: disable=g-import-not-at-top
  causes = exit_status.cause_lines(message) or message.strip().splitlines()[:1]
  return ': '.join([error] + ([' | '.join(causes)] if causes else []))


def run_test_file(workdir, kind, name, python=sys.executable, timeout=1800,
                  gpu_check=True, select=()):
  """`{test id: (outcome, why)}` of master's test file `name` in copy
  `kind`; a file that did not finish in `timeout` seconds keeps the tests
  that did, and gets `'<file>': ('timeout', ...)`. With `gpu_check`
  False, master's `_check_has_gpu` (which fails every test that calls it
  on a machine without a CUDA GPU) is replaced by a no-op in the run.
  `select`: only the tests whose id holds one of these strings."""
  fd, path = tempfile.mkstemp(suffix='.jsonl')
  os.close(fd)
  env = environment(workdir, kind, python)
  if not gpu_check:
    env['MASTER_TESTS_GPU_CHECK'] = 'off'
  env['MASTER_TESTS_SELECT'] = ','.join(select)
  try:
    with tempfile.TemporaryFile(mode='w+') as log:
      process = subprocess.Popen(
          [python, os.path.join(workdir, 'helpers', 'run_master_tests.py'),
           name, path], cwd=os.path.join(workdir, kind), env=env, stdout=log,
          stderr=subprocess.STDOUT)
      try:
        process.wait(timeout)
        status = None
      except subprocess.TimeoutExpired:
        _stop([process])
        status = ('timeout', 'not finished in %d s' % timeout)
      log.seek(0)
      tail = log.read()[-2000:]
    results = collections.OrderedDict()
    with open(path) as f:
      for line in f:
        item = json.loads(line)
        results[item['test']] = (item['outcome'], failure_line(
            item['error'], item['message']))
    if status is not None:
      results[name] = status
    elif process.returncode != 0 and not results:
      results[name] = ('error', tail.strip().splitlines()[-1] if tail.strip()
                       else 'exit status %d' % process.returncode)
    return results
  finally:
    os.remove(path)
