"""One task of a ps/worker cluster on TensorFlow's gRPC runtime.

Every task runs a `tf.train.Server`. Which task this process is comes from
`--job_name/--task_index/--ps_hosts/--worker_hosts` or `TF_CONFIG` (see
`tf_config`).

* A **PS task** serves variables until every worker has said it finished:
  worker k puts a token into the queue `done_worker_k` on every PS task
  (tf_cnn_benchmarks' way of stopping parameter servers); the PS polls the
  sizes of its queues and exits 0 once all are full.
* A **worker** builds the training graph with the library's distributed
  strategies through `variable_mgr.ClusterBenchmarkCnn`. Worker 0, the
  chief, initialises the global variables (or restores the latest checkpoint
  of `--train_dir`) and then puts one token a worker into the `chief_ready`
  queue on PS 0; every other worker waits for its token, bounded by
  `--startup_timeout_secs`. Every worker then initialises its local
  variables and runs the manager's post-init ops (distributed_replicated
  copies the masters into its local copies) and its staging warm-up; with
  synchronous steps a barrier then keeps every worker's first update back
  until every worker has done so.
* **Synchronous steps** (`--cross_replica_sync`, the default): all workers'
  gradients are computed before anyone updates (a barrier), and no worker
  starts step t+1 before every worker finished step t (tf_cnn_benchmarks'
  step-end barrier). The global step lives on PS 0 and counts synchronous
  steps (the chief increments it). Each worker applies the mean of its own
  towers' gradients: across workers the updates add up, so with K workers
  of T towers one step is `w -= lr * sum_k mean_t g_kt(w)` for
  parameter_server and distributed_replicated alike; staged
  parameter_server applies the gradients taken at the previous step's
  weights (one-step-stale).
  collective_all_reduce instead applies the mean over every tower of every
  worker (`w -= lr * mean_kt g_kt(w)`) to every worker's own copies, which
  non-chief workers initialise themselves before the post-init broadcast
  from the chief; every server and session config names worker 0 as the
  collective group leader.
* **Asynchronous steps** (`--cross_replica_sync=false`, parameter_server
  only): every worker applies its own updates when they are ready; the global
  step counts every worker's updates.

Faults: every session call has a deadline (`--op_timeout_secs`, through
`ConfigProto.operation_timeout_in_ms` and `RunOptions.timeout_in_ms`). When a
call fails or times out, the task probes every other task's address with a
TCP connect; a task that answered once and does not answer now (and did not
say it finished) is named in the error, and the process exits with status 1.
PS tasks and asynchronous workers probe between polls as well. So when a
task dies, every other task exits non-zero within about
`--op_timeout_secs` plus a probe interval.

The chief saves a checkpoint every `--save_model_steps` steps (when not 0)
and at the end into `--train_dir`, with the global step; a rerun restores
the latest one.
"""

import collections
import os
import socket
import sys
import threading
import time

from variable_mgr import errors
from variable_mgr.benchmark import exit_status
from variable_mgr.benchmark import flags
from variable_mgr.benchmark import output
from variable_mgr.benchmark import run_config
from variable_mgr.benchmark import tf_config

# How often PS tasks and asynchronous workers probe their peers.
PROBE_INTERVAL_SECS = 1.0
# How long a session call may outlive its deadline before the watchdog ends
# the process.
WATCHDOG_MARGIN_SECS = 2.0
# How long a failed call keeps probing for the task that broke it.
DEATH_GRACE_SECS = 3.0
# Timeout of one TCP probe of a task's address.
CONNECT_TIMEOUT_SECS = 1.0
# The launcher passes the read end of a pipe: end of file means the
# launcher is gone, and the task exits instead of living on as an orphan.
LAUNCHER_FD_ENV = 'VARIABLE_MGR_LAUNCHER_FD'
PS_DEVICE = '/job:ps/replica:0/task:%d/cpu:0'
SYNC_STRATEGIES = ('parameter_server', 'distributed_replicated',
                   'collective_all_reduce')


class TaskFailedError(RuntimeError):
  """Another task of the cluster died, or a call outlived its deadline.

  Attributes:
    dead_tasks: names ('worker:1') of the tasks found dead; may be empty
      when a call timed out while every task still answered.
  """

  def __init__(self, message, dead_tasks=()):
    super(TaskFailedError, self).__init__(message)
    self.dead_tasks = list(dead_tasks)


class ClusterOptionsError(errors.VariableMgrError):
  """A cluster option that cannot be combined with the others."""


# -- Which run -------------------------------------------------------------

CLUSTER_FLAGS = ('job_name', 'task_index', 'ps_hosts', 'worker_hosts')


def is_requested(args, environ=None):
  """Whether the parsed flags (or TF_CONFIG) ask for a cluster run."""
  environ = os.environ if environ is None else environ
  return bool(getattr(args, 'launch_local_cluster', False) or
              getattr(args, 'job_name', None) or
              getattr(args, 'ps_hosts', '') or
              getattr(args, 'worker_hosts', '') or
              environ.get('TF_CONFIG', '').strip())


# -- Liveness -----------------------------------------------------------------


def reachable(address, timeout=CONNECT_TIMEOUT_SECS):
  """Whether something accepts TCP connections at 'host:port'."""
  host, port = tf_config.split_address(address)
  try:
    sock = socket.create_connection((host, port), timeout=timeout)
  except (OSError, socket.timeout):
    return False
  sock.close()
  return True


class Monitor(object):
  """Tells dead tasks from live ones by probing their addresses.

  A task that never answered is still starting until `startup_timeout`
  has passed since the monitor was made; after that it is dead. A task that
  answered once and no longer does is dead, unless `finished(name)` says it
  ended normally.
  """

  def __init__(self, spec, startup_timeout):
    self.spec = spec
    self.startup_timeout = startup_timeout
    self.started = time.time()
    self.seen = set()

  def others(self, jobs=('ps', 'worker')):
    return [(job, i, address) for job, i, address in self.spec.all_tasks()
            if job in jobs and (job, i) != (self.spec.job_name,
                                            self.spec.task_index)]

  def dead(self, tasks, finished=None):
    """[(name, address, why)] of the dead among `tasks`."""
    result = []
    for job, i, address in tasks:
      name = tf_config.task_name(job, i)
      if reachable(address):
        self.seen.add(name)
        continue
      if name in self.seen:
        if finished is not None and finished(name):
          continue
        result.append((name, address, 'stopped answering'))
      elif time.time() - self.started > self.startup_timeout:
        result.append((name, address, 'never came up within %gs' %
                       self.startup_timeout))
    return result

  def failure(self, dead, context):
    """A TaskFailedError that names the dead tasks."""
    described = ', '.join('%s at %s (%s)' % d for d in dead)
    return TaskFailedError(
        'dead task%s: %s; %s. Every task of a cluster is needed: restart the '
        'cluster (a rerun with the same --train_dir resumes from the last '
        'checkpoint).' % ('s' if len(dead) > 1 else '', described, context),
        [d[0] for d in dead])

  def wait_for(self, tasks, deadline):
    """Blocks until every task answers; raises TaskFailedError at
    `deadline` naming those that never did."""
    while True:
      missing = [t for t in tasks if not reachable(t[2])]
      for job, i, _ in tasks:
        if (job, i, _) not in missing:
          self.seen.add(tf_config.task_name(job, i))
      if not missing:
        return
      if time.time() > deadline:
        dead = [(tf_config.task_name(job, i), address,
                 'never came up within %gs' % self.startup_timeout)
                for job, i, address in missing]
        raise self.failure(dead, 'this task (%s) waited for it to start' %
                           self.spec.name)
      time.sleep(0.2)


def watch_launcher(environ=None):
  """Exits the process when the launcher that started it is gone."""
  environ = os.environ if environ is None else environ
  fd = environ.get(LAUNCHER_FD_ENV)
  if not fd:
    return

  def watch():
    try:
      while os.read(int(fd), 1):
        pass
    except OSError:
      pass
    sys.stderr.write('the launcher is gone: exiting\n')
    sys.stderr.flush()
    os._exit(exit_status.FAILURE)  # pylint: disable=protected-access

  thread = threading.Thread(target=watch, name='launcher-watch')
  thread.daemon = True
  thread.start()


# -- The worker's graph -------------------------------------------------------


WorkerGraph = collections.namedtuple('WorkerGraph', [
    'graph', 'mgr', 'train_op', 'loss', 'global_step', 'global_init_op',
    'local_init_op', 'post_init_op', 'staging_put_op', 'start_op',
    'saver', 'ready_enqueue', 'ready_dequeue', 'started_op', 'done_op',
    'done_sizes'])


def worker_queues(tf, ps_index, num_workers, kind):
  """The queues on PS `ps_index` that worker k fills once: `kind` 'started'
  when its session is up, 'done' when it finished."""
  with tf.device(PS_DEVICE % ps_index):
    return [tf.FIFOQueue(1, [tf.int32], shapes=[[]],
                         shared_name='%s_worker_%d' % (kind, k),
                         name='%s_worker_%d_ps_%d' % (kind, k, ps_index))
            for k in range(num_workers)]


def _after(op, grads, tf):
  """`grads` with every gradient read only after `op`."""
  result = []
  with tf.control_dependencies([op]):
    for g, v in grads:
      if g is None:
        result.append((g, v))
      elif isinstance(g, tf.IndexedSlices):
        result.append((tf.IndexedSlices(tf.identity(g.values), g.indices,
                                        g.dense_shape), v))
      else:
        result.append((tf.identity(g), v))
  return result


def build_worker_graph(config, host, spec, sync):
  """The training graph of worker `spec.task_index`.

  Args:
    config: a resolved BenchmarkConfig.
    host: the worker's ClusterBenchmarkCnn.
    spec: the TaskSpec.
    sync: synchronous steps across workers.

  Returns:
    A finalized WorkerGraph.

  Raises:
    VariableMgrError: the manager refuses the configuration.
  """
  from variable_mgr.benchmark import harness  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark import models  # pylint: disable=g-import-not-at-top
  from variable_mgr.compat import tf  # pylint: disable=g-import-not-at-top

  model = models.get_model(config.model)
  num_workers = spec.num_workers
  barriers = sync and num_workers > 1
  graph = tf.Graph()
  with graph.as_default(), tf.variable_scope(
      tf.get_variable_scope(), use_resource=config.use_resource_vars):
    tf.set_random_seed(config.seed)
    mgr = harness.create_manager(config, host)
    with tf.device(PS_DEVICE % 0):
      global_step = tf.train.get_or_create_global_step()
    # Every tower of the cluster gets data of its own.
    device_grads, losses, update_ops, staging_puts = harness.build_towers(
        config, host, mgr, model, first_input=spec.task_index * host.num_gpus)

    apply_devices, state = mgr.preprocess_device_grads(device_grads)
    with tf.device(host.cpu_device):
      average_loss = tf.add_n(losses) / float(len(losses))
    gradients_ready = None
    if barriers and config.variable_update == 'parameter_server':
      # Shared variables: no worker may update them while another still
      # reads them for this step's gradients (or staged puts).
      gradients_ready = host.add_sync_queues_and_barrier(
          'gradients_ready_', [tf.group(*state.variable_reads), average_loss])
    optimizer = harness.make_optimizer(config)
    training_ops = []
    for i, device in enumerate(apply_devices):
      with tf.device(device):
        grads = mgr.get_gradients_to_apply(i, state)
        if gradients_ready is not None:
          grads = _after(gradients_ready, grads, tf)
        mgr.append_apply_gradients_ops(state, optimizer, grads, training_ops)

    step_ops = training_ops + update_ops
    if not sync or spec.is_chief:
      with tf.device(PS_DEVICE % 0), tf.control_dependencies(step_ops):
        step_ops = [global_step.assign_add(1).op]
    with tf.device(host.cpu_device):
      if barriers:
        train_op = host.add_sync_queues_and_barrier('step_end_', step_ops)
      else:
        train_op = tf.group(*step_ops, name='train_op')
      global_vars = tf.global_variables()
      global_init_op = tf.variables_initializer(global_vars)
      # Global variables on this worker's own task (collective_all_reduce's
      # copies) are this worker's to initialise; the chief's global init
      # covers its own.
      own = [v for v in global_vars
             if not spec.is_chief and _on_task(v, 'worker', spec.task_index)]
      local_init_op = tf.group(tf.local_variables_initializer(),
                               tf.variables_initializer(own))
      post_init = mgr.get_post_init_ops()
      post_init_op = tf.group(*post_init) if post_init else None
      staging_put_op = tf.group(*staging_puts) if staging_puts else None
      start_op = None
      if barriers:
        # No worker's first update may reach a master variable before every
        # worker copied the masters into its own variables (post-init) or
        # filled its staging areas.
        start_op = host.add_sync_queues_and_barrier(
            'training_start_', [op for op in (post_init_op, staging_put_op)
                                if op is not None] or [tf.no_op()])
      saver = None
      if spec.is_chief and config.train_dir:
        to_save = dict(mgr.get_variables_to_save())
        if not any(v is global_step for v in to_save.values()):
          to_save['global_step'] = global_step
        saver = tf.train.Saver(to_save, max_to_keep=3)
    with tf.device(PS_DEVICE % 0):
      ready = tf.FIFOQueue(num_workers, [tf.int32], shapes=[[]],
                           shared_name='chief_ready', name='chief_ready')
      ready_enqueue = ready_dequeue = None
      if spec.is_chief:
        if num_workers > 1:
          ready_enqueue = ready.enqueue_many(
              [tf.zeros([num_workers - 1], tf.int32)])
      else:
        ready_dequeue = ready.dequeue()
    signals = {}
    done_sizes = []
    for kind in ('started', 'done'):
      ops = []
      for p in range(len(spec.ps_hosts)):
        queues = worker_queues(tf, p, num_workers, kind)
        ops.append(queues[spec.task_index].enqueue(
            tf.constant(spec.task_index)))
        if p == 0 and kind == 'done':
          done_sizes = [q.size() for q in queues]
      signals[kind] = tf.group(*ops, name='worker_%s' % kind)
    graph.finalize()
  return WorkerGraph(graph, mgr, train_op, average_loss, global_step,
                     global_init_op, local_init_op, post_init_op,
                     staging_put_op, start_op, saver, ready_enqueue,
                     ready_dequeue, signals['started'], signals['done'],
                     done_sizes)


# -- Running a task -----------------------------------------------------------


class _Caller(object):
  """`sess.run` with a deadline; a failure becomes a TaskFailedError that
  names the dead task when there is one.

  A watchdog thread backs the deadline up: a call that outlives it by
  WATCHDOG_MARGIN_SECS ends the process with the same error (a call to a PS
  killed mid-step does not always return at its RunOptions deadline).
  """

  def __init__(self, tf, sess, monitor, timeout_secs, finished=None):
    self.tf = tf
    self.sess = sess
    self.monitor = monitor
    self.timeout_secs = timeout_secs
    self.finished = finished
    self._pending = None  # (give-up time, what, timeout) of the open call.
    watchdog = threading.Thread(target=self._watch, name='call-watchdog')
    watchdog.daemon = True
    watchdog.start()

  def __call__(self, fetches, what, timeout_secs=None):
    timeout = self.timeout_secs if timeout_secs is None else timeout_secs
    options = self.tf.RunOptions(timeout_in_ms=int(timeout * 1000))
    self._pending = (time.time() + timeout + WATCHDOG_MARGIN_SECS, what,
                     timeout)
    try:
      return self.sess.run(fetches, options=options)
    except self.tf.errors.OpError as e:
      raise self.explain(e, what, timeout)
    finally:
      self._pending = None

  def _watch(self):
    while True:
      time.sleep(0.25)
      pending = self._pending
      if pending is None or time.time() < pending[0]:
        continue
      _, what, timeout = pending
      error = self.describe('the call did not return while %s' % what,
                            True, timeout)
      exit_status.fail(error, exit_status.FAILURE)
      exit_status.exit_task(exit_status.FAILURE)

  def explain(self, error, what, timeout):
    summary = '%s while %s: %s' % (type(error).__name__, what,
                                   _first_line(error))
    return self.describe(
        summary, isinstance(error, self.tf.errors.DeadlineExceededError),
        timeout)

  def describe(self, summary, timed_out, timeout):
    # A connection can break a moment before a killed task's port closes:
    # probe again for a little while before blaming no one.
    give_up = time.time() + DEATH_GRACE_SECS
    while True:
      # The PS tasks first: without them no worker can have finished.
      dead = self.monitor.dead(self.monitor.others(('ps',)))
      if not dead:
        dead = self.monitor.dead(self.monitor.others(('worker',)),
                                 self.finished)
      if dead or time.time() > give_up:
        break
      time.sleep(0.2)
    if dead:
      return self.monitor.failure(dead, 'this task (%s) got %s' %
                                  (self.monitor.spec.name, summary))
    if timed_out:
      return TaskFailedError(
          'task %s: %s, within the deadline of %gs, while every other task '
          'still answers; if steps are that slow, raise --op_timeout_secs.' %
          (self.monitor.spec.name, summary, timeout))
    return TaskFailedError('task %s: %s' % (self.monitor.spec.name, summary))


def _first_line(error, limit=300):
  """The informative line of a TensorFlow error (the restore error puts
  the real cause after an 'Original error:' line)."""
  lines = [t.strip() for t in str(error).strip().splitlines() if t.strip()]
  for i, line in enumerate(lines):
    if line.endswith('Original error:') and i + 1 < len(lines):
      return lines[i + 1][:limit]
  # TF 2's 'Graph execution error:' preamble and its traceback say nothing.
  useful = [t for t in lines if not t.endswith(':') and not t.startswith(
      ('Detected at node', 'File "', 'Traceback'))]
  return (useful or lines or [''])[0][:limit].rstrip('.')


def _on_task(var, job, task):
  """Whether `var` is placed on task `task` of job `job`."""
  from variable_mgr.compat import tf  # pylint: disable=g-import-not-at-top
  device = tf.DeviceSpec.from_string(var.device or '')
  return device.job == job and device.task == task


def _group_leader(config):
  """Collective ops (collective_all_reduce) find their group through worker
  0: every server and session config of the cluster names it."""
  from variable_mgr.strategies import collective_all_reduce  # pylint: disable=g-import-not-at-top
  return collective_all_reduce.set_collective_group_leader(config)


def _session_config(tf, spec, options, num_cpus):
  if spec.job_name == 'ps':
    filters = ['/job:ps/replica:0/task:%d' % spec.task_index]
  else:
    filters = ['/job:ps', '/job:worker/replica:0/task:%d' % spec.task_index]
  return _group_leader(tf.ConfigProto(
      device_count={'CPU': num_cpus}, device_filters=filters,
      operation_timeout_in_ms=int(options.op_timeout_secs * 1000),
      allow_soft_placement=False))


def _server(tf, spec, num_cpus):
  return tf.train.Server(
      tf.train.ClusterSpec(spec.cluster_dict()), job_name=spec.job_name,
      task_index=spec.task_index,
      config=_group_leader(tf.ConfigProto(device_count={'CPU': num_cpus})),
      start=True)


def run_ps(spec, options, log=print):
  """Serves until every worker finished; returns 0.

  Raises:
    TaskFailedError: a worker or another PS task died first.
  """
  from variable_mgr.compat import tf  # pylint: disable=g-import-not-at-top
  monitor = Monitor(spec, options.startup_timeout_secs)
  server = _server(tf, spec, 1)
  log('%s serving at %s' % (spec.name, spec.address))
  graph = tf.Graph()
  with graph.as_default():
    started_sizes, done_sizes = [
        [q.size() for q in worker_queues(tf, spec.task_index,
                                         spec.num_workers, kind)]
        for kind in ('started', 'done')]
  config = _session_config(tf, spec, options, 1)
  # Never closed: the process ends when this returns or raises.
  sess = tf.Session(server.target, graph=graph, config=config)
  with sess.as_default(), graph.as_default():
    caller = _Caller(tf, sess, monitor, options.op_timeout_secs)

    def workers_that(sizes, what):
      values = caller(sizes, 'reading which workers %s' % what)
      return set(tf_config.task_name('worker', k)
                 for k, v in enumerate(values) if v)

    def finished_workers():
      return workers_that(done_sizes, 'finished')

    while True:
      # A worker that told this PS it started counts as seen even if no
      # probe caught it alive.
      monitor.seen.update(workers_that(started_sizes, 'started'))
      finished = finished_workers()
      if len(finished) == spec.num_workers:
        log('%s: every worker finished; stopping' % spec.name)
        return 0
      dead_ps = monitor.dead(monitor.others(('ps',)))
      if dead_ps:
        # A PS stops once every worker finished, and workers tell every PS
        # in one call: give our own tokens a moment to arrive.
        grace_end = time.time() + 2 * PROBE_INTERVAL_SECS
        while time.time() < grace_end:
          if len(finished_workers()) == spec.num_workers:
            log('%s: every worker finished; stopping' % spec.name)
            return 0
          time.sleep(0.1)
        raise monitor.failure(dead_ps, 'some workers had not finished')
      workers = [t for t in monitor.others(('worker',))
                 if tf_config.task_name(t[0], t[1]) not in finished]
      dead = monitor.dead(workers, lambda name: name in finished_workers())
      if dead:
        # Serve a while longer: workers blocked on this PS (a barrier) must
        # find the dead worker when their call times out, not this PS gone.
        error = monitor.failure(dead, 'it never said it finished')
        log('%s: %s; stopping in %gs' % (
            spec.name, error, options.op_timeout_secs + PROBE_INTERVAL_SECS))
        time.sleep(options.op_timeout_secs + PROBE_INTERVAL_SECS)
        raise error
      time.sleep(PROBE_INTERVAL_SECS)


def _check_options(config, sync):
  if config.variable_update not in SYNC_STRATEGIES:
    raise ClusterOptionsError(
        '--variable_update=%s runs on one machine; across a cluster use %s.'
        % (config.variable_update, ' or '.join(SYNC_STRATEGIES)))
  if not sync and config.variable_update != 'parameter_server':
    raise ClusterOptionsError(
        '--cross_replica_sync=false with --variable_update=%s: asynchronous '
        'updates exist only for parameter_server (%s synchronises every '
        'variable each step); drop the flag or use parameter_server.' %
        (config.variable_update, config.variable_update))


def run_worker(spec, config, options, log=print):
  """Trains as worker `spec.task_index`; returns the results dict.

  Raises:
    VariableMgrError: a configuration the manager refuses (before any
      server starts).
    TaskFailedError: another task died, or a call outlived its deadline.
  """
  import variable_mgr  # pylint: disable=g-import-not-at-top
  from variable_mgr.compat import tf  # pylint: disable=g-import-not-at-top

  sync = options.cross_replica_sync
  _check_options(config, sync)
  config = config.resolved()
  host = variable_mgr.ClusterBenchmarkCnn(
      spec.cluster_dict(), spec.task_index, config.num_gpus, config.device,
      config.local_parameter_device)
  output.print_header(config, host, log)
  log('Cluster:     %s of %d PS + %d workers, %s' % (
      spec.name, len(spec.ps_hosts), spec.num_workers,
      'synchronous' if sync else 'asynchronous'))
  start = time.time()
  g = build_worker_graph(config, host, spec, sync)
  build_seconds = time.time() - start

  monitor = Monitor(spec, options.startup_timeout_secs)
  num_cpus = config.num_gpus if config.device == 'cpu' else 1
  server = _server(tf, spec, num_cpus)
  monitor.wait_for(monitor.others(('ps',)),
                   monitor.started + options.startup_timeout_secs)
  sess = tf.Session(server.target, graph=g.graph,
                    config=_session_config(tf, spec, options, num_cpus))
  done_sizes = g.done_sizes

  def finished(name):
    k = int(name.split(':')[1])
    try:
      return bool(sess.run(done_sizes[k], options=tf.RunOptions(
          timeout_in_ms=int(CONNECT_TIMEOUT_SECS * 2000))))
    except tf.errors.OpError:
      return False

  call = _Caller(tf, sess, monitor, options.op_timeout_secs, finished)
  call(g.started_op, 'telling the PS tasks this worker started')
  restored_from = None
  # The graph is the default so that the Saver runs graph ops, not eager
  # ones. The session is closed only after success: closing it deregisters
  # its graphs on every task, which blocks while a dead PS does not answer.
  with sess.as_default(), g.graph.as_default():
    if spec.is_chief:
      call(g.global_init_op, 'initialising the variables')
      if g.saver is not None:
        restored_from = tf.train.latest_checkpoint(config.train_dir)
        if restored_from:
          try:
            g.saver.restore(sess, restored_from)
          except tf.errors.OpError as e:
            raise call.explain(e, 'restoring %s' % restored_from,
                               options.op_timeout_secs)
          log('Restored %s' % restored_from)
      if g.ready_enqueue is not None:
        call(g.ready_enqueue, 'telling the workers the variables are ready')
    else:
      _wait_for_chief(call, g, monitor, options, log)
    call(g.local_init_op, 'initialising the local variables')
    fetches = {'train': g.train_op, 'loss': g.loss}
    if g.staging_put_op is not None:
      fetches['staging'] = g.staging_put_op
    if g.start_op is not None:
      # The post-init ops and the staging warm-up, then a barrier.
      call(g.start_op, 'running the post-init ops and waiting for every '
           'worker')
    else:
      if g.post_init_op is not None:
        call(g.post_init_op, 'running the post-init ops')
      if g.staging_put_op is not None:
        call(g.staging_put_op, 'filling the staging areas')
    first_global_step = int(call(g.global_step, 'reading the global step'))
    log('Global step: %d at start' % first_global_step)

    step_times, losses = [], []
    total_seconds = 0.0
    global_batch = config.batch_size * host.num_gpus
    last_probe = time.time()
    started_all = False
    if config.num_warmup_batches:
      log('Running warm up')
    for step in range(-config.num_warmup_batches, config.num_batches):
      if step == 0:
        if config.num_warmup_batches:
          log('Done warm up')
        log('Step\tImg/sec\tloss')
        loop_start = time.time()
      if not sync and time.time() - last_probe > PROBE_INTERVAL_SECS:
        # Asynchronous workers never wait for each other: probe.
        dead = monitor.dead(monitor.others(('worker',)), finished)
        if dead:
          raise monitor.failure(dead, 'it never said it finished')
        last_probe = time.time()
      step_start = time.time()
      out = call(fetches, 'running step %d' % (
          step + config.num_warmup_batches + 1))
      elapsed = time.time() - step_start
      if sync and not started_all:
        # A synchronous step passed every worker's barrier: all tasks are up,
        # and from now on one that does not answer is dead.
        monitor.seen.update(tf_config.task_name(job, i)
                            for job, i, _ in spec.all_tasks())
        started_all = True
      if (g.saver is not None and config.train_dir and
          options.save_model_steps and
          (step + config.num_warmup_batches + 1) %
          options.save_model_steps == 0):
        _save(call, g, sess, config.train_dir, log)
      if step < 0:
        continue
      step_times.append(elapsed)
      losses.append(float(out['loss']))
      if step == 0 or (step + 1) % config.display_every == 0:
        log('%i\t%s\t%.3f' % (step + 1, output.perf_timing_str(
            global_batch, step_times), losses[-1]))
    if step_times:
      total_seconds = time.time() - loop_start
    global_step = int(call(g.global_step, 'reading the global step'))
    if g.saver is not None:
      _save(call, g, sess, config.train_dir, log)
    call(g.done_op, 'telling the PS tasks this worker finished')
  sess.close()

  images_per_sec = output.report_throughput(global_batch, step_times,
                                             total_seconds, log)
  return collections.OrderedDict([
      ('task', spec.name),
      ('images_per_sec', images_per_sec),
      ('final_loss', losses[-1] if losses else None),
      ('losses', losses),
      ('global_step', global_step),
      ('first_global_step', first_global_step),
      ('restored_from', restored_from),
      ('build_seconds', build_seconds),
      ('config', config._asdict()),
  ])


def _save(call, g, sess, train_dir, log):
  os.makedirs(train_dir, exist_ok=True)
  step = int(call(g.global_step, 'reading the global step'))
  path = g.saver.save(sess, os.path.join(train_dir, 'model.ckpt'),
                      global_step=step)
  log('Saved %s' % path)


def _wait_for_chief(call, g, monitor, options, log):
  """Takes this worker's token from `chief_ready`, probing the chief and the
  PS tasks between short waits."""
  log('Waiting for the chief to initialise the variables')
  deadline = monitor.started + options.startup_timeout_secs
  tasks = monitor.others(('ps',)) + [
      t for t in monitor.others(('worker',)) if t[1] == 0]
  while True:
    try:
      call.sess.run(g.ready_dequeue, options=call.tf.RunOptions(
          timeout_in_ms=int(PROBE_INTERVAL_SECS * 1000)))
      return
    except call.tf.errors.DeadlineExceededError:
      pass
    except call.tf.errors.OpError as e:
      raise call.explain(e, 'waiting for the chief', PROBE_INTERVAL_SECS)
    dead = monitor.dead(tasks)
    if dead:
      raise monitor.failure(dead, 'the variables were never initialised')
    if time.time() > deadline:
      raise TaskFailedError(
          'task %s: the chief (worker:0) did not initialise the variables '
          'within --startup_timeout_secs=%g; raise it, or look at the '
          'chief\'s log.' % (monitor.spec.name,
                             options.startup_timeout_secs))


def run_task(args, environ=None, log=print):
  """Runs the task the flags (or TF_CONFIG) describe; returns the status.

  Raises:
    ClusterConfigError / VariableMgrError: a bad cluster or configuration.
    TaskFailedError: another task died, or a call outlived its deadline.
  """
  spec = tf_config.resolve(args.job_name, args.task_index, args.ps_hosts,
                           args.worker_hosts, environ)
  if spec is None:
    raise tf_config.MissingTaskError(
        'no cluster task: pass --job_name, --task_index, --ps_hosts and '
        '--worker_hosts, set TF_CONFIG, or use --launch_local_cluster.')
  if spec.job_name == 'ps':
    return run_ps(spec, args, log)
  results = run_worker(spec, run_config.from_args(args), args, log)
  if args.output:
    output.write_json(args.output, results)
  return 0


def run(args, argv, environ=None):
  """The cluster side of the benchmark command: launch, or run one task.

  Returns:
    The exit status: 0, 1 (a task failed) or 2 (a bad flag or cluster).
  """
  environ = os.environ if environ is None else environ
  if args.launch_local_cluster:
    from variable_mgr.benchmark import launcher  # pylint: disable=g-import-not-at-top
    return launcher.main(args, argv)
  watch_launcher(environ)
  import tensorflow as _tf  # pylint: disable=g-import-not-at-top
  _tf.get_logger().setLevel('ERROR')
  return exit_status.status_of(lambda: run_task(args, environ),
                               failures=(TaskFailedError,))


def run_from_cli(args, argv):
  """`variable_mgr_benchmark` with cluster flags: the launcher returns its
  status; a task ends the process with its status (see `exit_task`)."""
  status = run(args, list(argv))
  if args.launch_local_cluster:
    return status
  exit_status.exit_task(status)


def main(argv=None):
  """`python -m variable_mgr.benchmark.distributed`: the benchmark command
  with the cluster flags, run as a cluster task or launcher."""
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  argv = list(sys.argv[1:] if argv is None else argv)
  try:
    args = flags.parse_task_args(argv)
  except flags.UsageError as e:
    return exit_status.fail(e, exit_status.USAGE)
  return run(args, argv)


if __name__ == '__main__':
  exit_status.exit_task(main())
