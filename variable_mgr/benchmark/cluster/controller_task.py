"""The tasks of `--variable_update=distributed_all_reduce`: a controller
that builds and runs one graph over every worker, and workers that serve.

tf_cnn_benchmarks' single-session mode. The controller
(`--job_name=controller`) builds the training graph over the towers of
every worker (`variable_mgr.ControllerBenchmarkCnn`) and runs it in one
session on worker 0's server (`grpc://` + the first of `--worker_hosts`),
as a run on one machine does (`local_run.run_benchmark`): initialise or
restore from `--train_dir`, post-init, the steps, the checkpoints. The
workers (`--job_name=worker`) start their gRPC server and only serve. No
PS task: the variables are the towers' copies, the global step is on
worker 0's CPU, and the checkpoints are written by worker 0's server into
`--train_dir` (which must be the same directory for the controller and
worker 0: the same machine, or a shared file system).

Every task gets `--worker_hosts` and `--controller_host` (the controller's
host:port: it starts a server there so that the workers can tell it is
alive). Liveness: the controller probes the workers while it runs and a
worker whose port refuses connections ends it at once, named; a worker
probes the controller and the other workers and ends, naming the one that
is gone. When the run is over the controller puts a token into a queue on
every worker (`controller_done_worker_<k>`), and each worker exits 0.
"""

import collections
import os
import threading
import time

import variable_mgr
from variable_mgr.benchmark.cluster import launcher
from variable_mgr.benchmark.cluster import liveness
from variable_mgr.benchmark.cluster import servers
from variable_mgr.benchmark.cluster import task_spec
from variable_mgr.benchmark.reports import output
from variable_mgr.benchmark.runs import exit_status
from variable_mgr.benchmark.runs import local_run
from variable_mgr.benchmark.runs import train_dir_lock
from variable_mgr.benchmark.training import run_config
from variable_mgr.compat import tf
from variable_mgr.strategies import collective_all_reduce

STRATEGY = 'distributed_all_reduce'
CONTROLLER = 'controller'
JOB_NAMES = (CONTROLLER, 'worker')
WORKER_CPU = '/job:worker/replica:0/task:%d/cpu:0'


class ControllerSpec(collections.namedtuple(
    'ControllerSpec', 'job_name task_index worker_hosts controller_host')):
  """One task of a controller's cluster: the controller or worker k."""

  __slots__ = ()

  @property
  def name(self):
    if self.job_name == CONTROLLER:
      return CONTROLLER
    return task_spec.task_name('worker', self.task_index)

  @property
  def address(self):
    if self.job_name == CONTROLLER:
      return self.controller_host
    return self.worker_hosts[self.task_index]

  def workers(self):
    """[(name, address)] of every worker."""
    return [(task_spec.task_name('worker', k), address)
            for k, address in enumerate(self.worker_hosts)]

  def others(self):
    """[(name, address)] of every other task (the controller first)."""
    tasks = [(CONTROLLER, self.controller_host)] + self.workers()
    return [t for t in tasks if t[0] != self.name]


def resolve(args, environ=None):
  """The ControllerSpec of the parsed flags.

  Raises:
    MissingTaskError: no --job_name, a job other than controller and
      worker, no --controller_host, --ps_hosts given, or TF_CONFIG set.
    TaskIndexError: a worker index outside --worker_hosts, or a
      controller index other than 0.
    HostAddressError: an address without a valid port, or a duplicate.
  """
  environ = os.environ if environ is None else environ
  if environ.get('TF_CONFIG', '').strip() and not args.job_name:
    raise task_spec.MissingTaskError(
        'TF_CONFIG with --variable_update=%s: TF_CONFIG has no controller '
        'task; unset it and pass --job_name=controller or worker, '
        '--worker_hosts and --controller_host.' % STRATEGY)
  if args.job_name not in JOB_NAMES:
    raise task_spec.MissingTaskError(
        '--job_name=%s with --variable_update=%s: its tasks are one '
        'controller and the workers (no PS task); pass --job_name=controller '
        'or --job_name=worker.' % (args.job_name, STRATEGY))
  if args.ps_hosts:
    raise task_spec.MissingTaskError(
        '--ps_hosts=%s with --variable_update=%s: no variable lives on a PS '
        'task; drop --ps_hosts.' % (args.ps_hosts, STRATEGY))
  if not args.controller_host:
    raise task_spec.MissingTaskError(
        '--variable_update=%s without --controller_host: every task needs '
        'the controller\'s host:port (the workers watch it); pass e.g. '
        '--controller_host=10.0.0.1:2222.' % STRATEGY)
  workers = [h.strip() for h in (args.worker_hosts or '').split(',')
             if h.strip()]
  if not workers:
    raise task_spec.MissingTaskError(
        '--worker_hosts is empty: the controller drives the workers listed '
        'there; pass e.g. --worker_hosts=10.0.0.2:2222,10.0.0.3:2222.')
  hosts = workers + [args.controller_host]
  for address in hosts:
    task_spec.split_address(address)
  duplicates = sorted(set(h for h in hosts if hosts.count(h) > 1))
  if duplicates:
    raise task_spec.HostAddressError(
        '%s appears twice among --worker_hosts and --controller_host; every '
        'task needs an address of its own.' % duplicates[0])
  index = args.task_index or 0
  limit = len(workers) if args.job_name == 'worker' else 1
  if not 0 <= index < limit:
    raise task_spec.TaskIndexError(
        '--job_name=%s --task_index=%d: %s; fix the index.' % (
            args.job_name, index,
            'the controller is task 0 of its job' if limit == 1 else
            'the worker job has %d tasks (0..%d)' % (limit, limit - 1)))
  return ControllerSpec(args.job_name, index, workers, args.controller_host)


def run_task(args, environ=None, log=print):
  """Runs the controller or a worker of the flags; returns 0.

  Raises:
    ClusterConfigError / VariableMgrError: a bad cluster or configuration
      (before any server starts).
    TaskFailedError: another task died.
  """
  spec = resolve(args, environ)
  liveness.set_train_dir(args.train_dir)
  run_config.check_cluster_config(args, {'worker': spec.worker_hosts})
  if spec.job_name == 'worker':
    run_config.check_devices(args.device, args.num_gpus)
    return serve(spec, args, log)
  launched = (os.environ if environ is None else environ).get(
      launcher.LAUNCHER_FD_ENV)
  lock = train_dir_lock.acquire_for_task(args, True, bool(launched), log)
  try:
    results = drive(spec, run_config.from_args(args), args, log)
  finally:
    if lock is not None:
      lock.release()
  if args.output:
    output.write_json(args.output, results)
  return 0


def done_queue(k):
  """The queue on worker k's CPU that the controller fills once, when the
  run is over."""
  with tf.device(WORKER_CPU % k):
    return tf.FIFOQueue(1, [tf.int32], shapes=[[]],
                        shared_name='controller_done_worker_%d' % k,
                        name='controller_done_worker_%d' % k)


def _gone(tasks, seen):
  """[(name, address)] of `tasks` seen alive before whose port now
  refuses connections; adds the ones that answer to `seen`."""
  dead = []
  for name, address in tasks:
    found = liveness.connect(address)
    if found == liveness.CONNECTED:
      seen.add(name)
    elif found == liveness.REFUSED and name in seen:
      dead.append((name, address))
  return dead


def failure(spec, dead, what):
  """The TaskFailedError of `dead` ([(name, address)]) found gone. A dead
  worker is named first: the controller ends when a worker is gone, so
  a worker that finds both gone names the cause, then the controller."""
  workers = [d for d in dead if d[0] != CONTROLLER]
  first = workers or dead
  also = [d for d in dead if d not in first]
  return liveness.TaskFailedError(
      'task %s: dead task: %s (%s)%s while %s; rerun the cluster (with the '
      'same --train_dir to resume from its last checkpoint).' % (
          spec.name, ', '.join('%s at %s' % d for d in first), liveness.GONE,
          ''.join('; also gone: %s at %s' % d for d in also), what))


def serve(spec, args, log=print):
  """A worker: serves until the controller says the run is over; returns
  0. Probes the controller and the other workers meanwhile.

  Raises:
    TaskFailedError: the controller or another worker is gone, or the
      controller never came up within --startup_timeout_secs.
  """
  num_cpus = args.num_gpus if run_config.device_of(args) == 'cpu' else 1
  server = tf.train.Server(
      tf.train.ClusterSpec({'worker': spec.worker_hosts}), job_name='worker',
      task_index=spec.task_index,
      config=servers.server_config(tf, args, num_cpus), start=True)
  log('%s serving at %s for the controller at %s' % (
      spec.name, spec.address, spec.controller_host))
  graph = tf.Graph()
  with graph.as_default():
    size = done_queue(spec.task_index).size()
  sess = tf.Session(server.target, graph=graph, config=tf.ConfigProto(
      device_filters=['/job:worker/replica:0/task:%d' % spec.task_index]))
  started = time.time()
  seen = set()
  while True:
    if sess.run(size):
      log('%s: the controller finished; stopping' % spec.name)
      return 0
    dead = _gone(spec.others(), seen)
    if dead:
      # The controller fills every worker's queue in one call: a worker
      # that saw its token may exit before ours arrived.
      time.sleep(2 * liveness.PROBE_INTERVAL_SECS)
      if sess.run(size):
        log('%s: the controller finished; stopping' % spec.name)
        return 0
      if any(name == CONTROLLER for name, _ in dead):
        # The controller ends when a worker is gone, and it waited for
        # every worker before it started: a worker whose port refuses now
        # is gone too, also one this worker's probes never caught running.
        others = spec.others()
        dead = _gone(others, set(name for name, _ in others)) or dead
      raise failure(spec, dead, 'serving the controller\'s graph')
    if (CONTROLLER not in seen and
        time.time() - started > args.startup_timeout_secs):
      raise liveness.TaskFailedError(
          'task %s: the controller at %s did not come up within '
          '--startup_timeout_secs=%g; start it (--job_name=controller) or '
          'raise the timeout.' % (spec.name, spec.controller_host,
                                  args.startup_timeout_secs))
    time.sleep(liveness.PROBE_INTERVAL_SECS)


class WorkerWatch(object):
  """While the controller runs, probes the workers every
  PROBE_INTERVAL_SECS; a worker whose port refuses connections ends the
  controller at once with a line naming it (the controller's session call
  could otherwise wait for it until its deadline)."""

  def __init__(self, spec):
    self.spec = spec
    self.seen = set(name for name, _ in spec.workers())
    self._stop = threading.Event()
    self._thread = threading.Thread(target=self._watch, name='worker-watch')
    self._thread.daemon = True

  def start(self):
    self._thread.start()
    return self

  def stop(self):
    self._stop.set()

  def _watch(self):
    while not self._stop.wait(liveness.PROBE_INTERVAL_SECS):
      dead = _gone(self.spec.workers(), self.seen)
      if dead and not self._stop.is_set():
        exit_status.fail(failure(self.spec, dead, 'running the graph'),
                         exit_status.FAILURE)
        exit_status.exit_task(exit_status.FAILURE)


def _wait_for_workers(spec, timeout_secs, log):
  """Returns once every worker's port accepts connections.

  Raises:
    TaskFailedError: some did not within `timeout_secs`.
  """
  end = time.time() + timeout_secs
  last_report = time.time()
  while True:
    waiting = [(n, a) for n, a in spec.workers()
               if liveness.connect(a) != liveness.CONNECTED]
    if not waiting:
      return
    now = time.time()
    if now > end:
      raise liveness.TaskFailedError(
          'task controller: %s did not come up within '
          '--startup_timeout_secs=%g; start them or raise the timeout.' % (
              ', '.join('%s at %s' % w for w in waiting), timeout_secs))
    if now - last_report >= liveness.WAIT_REPORT_SECS:
      last_report = now
      log('controller: waiting for %s' % ', '.join(n for n, _ in waiting))
    time.sleep(liveness.PROBE_INTERVAL_SECS)


def session_config(args, config):
  """The controller's session config: the workers only, a deadline on
  every op, worker 0 the collective group leader, the thread counts."""
  proto = tf.ConfigProto(
      device_filters=['/job:worker'], allow_soft_placement=False,
      operation_timeout_in_ms=int(args.op_timeout_secs * 1000))
  collective_all_reduce.set_collective_group_leader(proto)
  return local_run.with_threads(proto, config)


def drive(spec, config, args, log=print):
  """The controller: trains on the workers; returns the results dict (as
  a run on one machine returns it, with `task` and `worker_hosts`).

  Raises:
    TaskFailedError: a worker is gone (or never came up).
  """
  tf.train.Server(tf.train.ClusterSpec({CONTROLLER: [spec.controller_host]}),
                  job_name=CONTROLLER, task_index=0,
                  config=tf.ConfigProto(device_count={'CPU': 1}), start=True)
  host = variable_mgr.ControllerBenchmarkCnn(
      {'worker': spec.worker_hosts}, config.num_gpus, config.device,
      config.local_parameter_device)
  _wait_for_workers(spec, args.startup_timeout_secs, log)
  log('Cluster:     controller of %d workers (one graph, one session on '
      'worker:0 at %s)' % (len(spec.worker_hosts), spec.worker_hosts[0]))
  target = 'grpc://' + spec.worker_hosts[0]
  watch = WorkerWatch(spec).start()
  try:
    results = local_run.run_benchmark(config, host, session_target=target,
                                      session_config=session_config(
                                          args, config), log=log)
  except tf.errors.OpError:
    dead = _gone(spec.workers(), set(n for n, _ in spec.workers()))
    if dead:
      raise failure(spec, dead, 'running the graph')
    raise
  finally:
    watch.stop()
  graph = tf.Graph()
  with graph.as_default():
    done = tf.group(*[done_queue(k).enqueue(tf.constant(k))
                      for k in range(len(spec.worker_hosts))])
  with tf.Session(target, graph=graph,
                  config=session_config(args, config)) as sess:
    sess.run(done, options=tf.RunOptions(
        timeout_in_ms=int(args.op_timeout_secs * 1000)))
  results = collections.OrderedDict(results)
  results['task'] = CONTROLLER
  results['worker_hosts'] = list(spec.worker_hosts)
  return results
