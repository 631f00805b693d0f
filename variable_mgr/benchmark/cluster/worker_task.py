"""A worker task: builds its graph, starts, trains, saves, says it finished.

Worker 0, the chief, initialises the global variables (or restores the
latest checkpoint of `--train_dir`) and then puts one token a worker into
the `chief_ready` queue on PS 0; every other worker waits for its token,
bounded by `--startup_timeout_secs`. Every worker then initialises its
local variables and runs the manager's post-init ops (distributed_replicated
copies the masters into its local copies) and its staging warm-up; with
synchronous steps a barrier then keeps every worker's first update back
until every worker has done so.

* **Synchronous steps** (`--cross_replica_sync`, the default): all
  workers' gradients are computed before anyone updates (a barrier), and no
  worker starts step t+1 before every worker finished step t
  (tf_cnn_benchmarks' step-end barrier). The global step lives on PS 0 and
  counts synchronous steps (the chief increments it). Each worker applies
  the mean of its own towers' gradients: across workers the updates add
  up, so with K workers of T towers one step is
  `w -= lr * sum_k mean_t g_kt(w)` for parameter_server and
  distributed_replicated alike; staged parameter_server applies the
  gradients taken at the previous step's weights (one-step-stale).
  collective_all_reduce instead applies the mean over every tower of every
  worker (`w -= lr * mean_kt g_kt(w)`) to every worker's own copies, which
  non-chief workers initialise themselves before the post-init broadcast
  from the chief.
* **Asynchronous steps** (`--cross_replica_sync=false`, parameter_server
  only): every worker applies its own updates when they are ready; the
  global step counts every worker's updates, and a thread probes the other
  workers while the worker trains (`liveness.Watcher`).

The chief saves a checkpoint every `--save_model_steps` steps and every
`--save_model_secs` seconds (when not 0) and at the end into `--train_dir`,
keeping the last `--max_ckpts_to_keep`; a rerun restores the latest one. A
checkpoint `model.ckpt-N` holds global step N (under asynchronous steps its
other variables may hold updates that came while it was written). With
synchronous steps every worker then waits at a barrier until the chief has
saved, so a periodic checkpoint holds exactly the variables of its step:
the chief's time-based decisions travel to the others within the step (see
`SaveSchedule`), and `--save_model_steps` and `--save_model_secs` must be the
same on every worker.
"""

import collections
import os
import time

import variable_mgr
from variable_mgr import checkpoint
from variable_mgr import errors
from variable_mgr.benchmark.cluster import deadline
from variable_mgr.benchmark.cluster import liveness
from variable_mgr.benchmark.cluster import servers
from variable_mgr.benchmark.cluster import task_spec
from variable_mgr.benchmark.cluster import trace
from variable_mgr.benchmark.cluster import worker_graph
from variable_mgr.benchmark.reports import output
from variable_mgr.benchmark.training import batch_target
from variable_mgr.compat import tf

SYNC_STRATEGIES = ('parameter_server', 'distributed_replicated',
                   'collective_all_reduce')


class ClusterOptionsError(errors.VariableMgrError):
  """A cluster option that cannot be combined with the others."""


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
  sync = options.cross_replica_sync
  _check_options(config, sync)
  if spec.is_chief and config.train_dir:
    # A dangling or unreadable `checkpoint` file is refused here, naming
    # it, before any server starts (not found after the cluster is up).
    checkpoint.latest_checkpoint(config.train_dir)
  # The global step the run restores, read from the checkpoint before any
  # task starts: asynchronous workers count --num_batches from it, not from
  # the global step when they start, which a worker that starts late finds
  # already moved by the others' steps.
  restored_step = batch_target.checkpoint_global_step(config.train_dir) or 0
  config = config.resolved()
  host = variable_mgr.ClusterBenchmarkCnn(
      spec.cluster_dict(), spec.task_index, config.num_gpus, config.device,
      config.local_parameter_device, cross_replica_sync=sync)
  output.print_header(config, host, log)
  log('Cluster:     %s of %d PS + %d workers, %s' % (
      spec.name, len(spec.ps_hosts), spec.num_workers,
      'synchronous' if sync else 'asynchronous'))
  start = time.time()
  g = worker_graph.build_worker_graph(config, host, spec, sync)
  build_seconds = time.time() - start
  for line in worker_graph.describe_partitions(g.mgr):
    log(line)

  monitor = liveness.Monitor(spec, options.startup_timeout_secs)
  num_cpus = config.num_gpus if config.device == 'cpu' else 1
  server = servers.start_server(tf, spec, num_cpus, options)
  monitor.wait_for(monitor.others(('ps',)),
                   monitor.started + options.startup_timeout_secs)
  sess = tf.Session(server.target, graph=g.graph,
                    config=servers.session_config(tf, spec, options, num_cpus))
  done_sizes = g.done_sizes

  def finished(name):
    k = int(name.split(':')[1])
    try:
      return bool(sess.run(done_sizes[k], options=tf.RunOptions(
          timeout_in_ms=int(liveness.CONNECT_TIMEOUT_SECS * 2000))))
    except (tf.errors.OpError, RuntimeError):
      # RuntimeError: the session was closed under the watcher's probe.
      return False

  def started():
    """Names of the workers that told PS 0 they came up."""
    try:
      sizes = sess.run(g.started_sizes, options=tf.RunOptions(
          timeout_in_ms=int(liveness.CONNECT_TIMEOUT_SECS * 2000)))
    except (tf.errors.OpError, RuntimeError):
      return []
    return [task_spec.task_name('worker', k) for k, v in enumerate(sizes)
            if v]

  call = deadline.DeadlineCaller(tf, sess, monitor, options.op_timeout_secs,
                                 finished, probe_peers=True)
  call(g.started_op, 'telling the PS tasks this worker started')
  restored_from = None
  # The graph is the default so that the Saver runs graph ops, not eager
  # ones. The session is closed only after success: closing it deregisters
  # its graphs on every task, which blocks while a dead PS does not answer.
  with sess.as_default(), g.graph.as_default():
    if spec.is_chief:
      call(g.global_init_op, 'initialising the variables')
      if g.saver is not None:
        restored_from = checkpoint.latest_checkpoint(config.train_dir)
        if restored_from:
          try:
            g.restorer.restore(sess, restored_from)
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
    accuracy = g.top_1 is not None
    if accuracy:
      # --print_training_accuracy: this worker's batch (its towers').
      fetches.update(top_1=g.top_1, top_5=g.top_5)
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
    started_all = False
    watcher = None
    if not sync:
      # Asynchronous workers never wait for each other: watch the peers.
      watcher = liveness.Watcher(
          monitor, monitor.others(('worker',)), finished,
          options.op_timeout_secs, 'it never said it finished',
          started).start()
    schedule = SaveSchedule(options.save_model_steps, config.save_model_secs)
    if config.num_warmup_batches:
      log('Running warm up')
    # As tf_cnn_benchmarks: --num_batches counts from global step 0.
    num_batches = batch_target.batches_left(
        config.num_batches, first_global_step if sync else restored_step,
        1 if sync else spec.num_workers, config.train_dir)
    trace_path = trace_step = None
    if config.trace_file:
      trace_path = trace.task_path(config.trace_file, spec.name)
      trace_step = trace.traced_step(config.num_warmup_batches)
    for step in range(-config.num_warmup_batches, num_batches):
      run_step = step + config.num_warmup_batches + 1
      if step == 0:
        if config.num_warmup_batches:
          log('Done warm up')
        log(output.step_header(accuracy))
        loop_start = time.time()
      if watcher is not None:
        watcher.check()
      step_fetches = fetches
      if g.save_step is not None:
        # The chief's decision for this step, as every worker reads it.
        step_fetches = dict(fetches, save_step=g.save_step)
      feed = {}
      if g.save_request is not None:
        feed[g.save_request] = schedule.request(run_step)
      if g.run_start is not None:
        # A synchronous run starts where the previous ones left the global
        # step: one increment each (the chief's, after every worker's part
        # of that step, so after this worker read the first value).
        feed[g.run_start] = first_global_step + run_step - 1
      run_metadata = tf.RunMetadata() if step == trace_step else None
      step_start = time.time()
      out = call(step_fetches, 'running step %d' % run_step,
                 feed=feed or None, run_metadata=run_metadata)
      elapsed = time.time() - step_start
      if run_metadata is not None:
        trace.write(trace_path, run_metadata)
        log('Wrote a Chrome trace of %s to %s' % (
            'the last warm-up step' if step < 0 else 'timed step 1',
            trace_path))
      if sync and not started_all:
        # A synchronous step passed every worker's barrier: all tasks are up,
        # and from now on one that does not answer is dead.
        monitor.seen.update(task_spec.task_name(job, i)
                            for job, i, _ in spec.all_tasks())
        started_all = True
      if schedule.due(run_step, out.get('save_step')):
        if g.saver is not None and config.train_dir:
          _save(call, g, sess, config.train_dir, log)
        schedule.saved()
        if g.saved_op is not None:
          # Every worker, the chief once it has saved: the checkpoint holds
          # this step's variables and nothing of the next.
          call(g.saved_op, 'waiting for the checkpoint of step %d' %
               run_step)
      if step < 0:
        continue
      output.record_step(step, elapsed, out['loss'], step_times, losses,
                         global_batch, config.display_every, log,
                         (float(out['top_1']), float(out['top_5']))
                         if accuracy else None)
    if step_times:
      total_seconds = time.time() - loop_start
    if watcher is not None:
      watcher.stop()
    global_step = int(call(g.global_step, 'reading the global step'))
    if g.saver is not None:
      _save(call, g, sess, config.train_dir, log)
    call(g.done_op, 'telling the PS tasks this worker finished',
         probe_peers=False)
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


class SaveSchedule(object):
  """After which steps of a run (1-based, warm-up included) the chief saves
  and, with synchronous barriers, every worker waits for the checkpoint.

  `--save_model_steps` N: after every N-th step, on every worker alike.
  `--save_model_secs` S: after the first step that starts S seconds or
  more after the last save (or the start). The chief's clock decides: with
  synchronous barriers it feeds `request(step)` into the step and every
  worker gets the decision back (`save_step`, see `worker_graph`); without
  barriers (asynchronous steps, one worker) no other worker waits for a
  save, and the chief's own clock is enough.

  Args:
    every_steps, every_secs: the flags (0: off).
    clock: returns seconds (default time.time).
  """

  def __init__(self, every_steps, every_secs, clock=time.time):
    self.every_steps = every_steps
    self.every_secs = every_secs
    self.clock = clock
    self.last_save = clock()
    self.requested = -1

  def request(self, step):
    """The chief's decision before `step`: `step` if the time has come to
    save after it, else the last step it chose (-1: none yet)."""
    if self.every_secs and self.clock() - self.last_save >= self.every_secs:
      self.requested = step
    return self.requested

  def due(self, step, save_step=None):
    """Whether a save follows `step`; `save_step`: the chief's decision as
    the step returned it (None: no decision travels, the chief decides
    alone)."""
    if self.every_steps and step % self.every_steps == 0:
      return True
    if not self.every_secs:
      return False
    if save_step is not None:
      return int(save_step) == step
    return self.request(step) == step

  def saved(self):
    """The chief saved: the next time-based save counts from now."""
    self.last_save = self.clock()


def _save(call, g, sess, train_dir, log):
  """Saves a checkpoint named after the global step it holds: the
  snapshot of the global step is taken and returned by one call, and the
  Saver writes that snapshot (under asynchronous steps the other workers
  move the global step itself meanwhile)."""
  os.makedirs(train_dir, exist_ok=True)
  step = int(call(g.snapshot_step, 'reading the global step'))
  path = g.saver.save(sess, os.path.join(train_dir, 'model.ckpt'),
                      global_step=step)
  log('Saved %s' % path)


def _wait_for_chief(call, g, monitor, options, log):
  """Takes this worker's token from `chief_ready`, probing the chief and the
  PS tasks between short waits."""
  log('Waiting for the chief to initialise the variables')
  give_up = monitor.started + options.startup_timeout_secs
  began = last_report = time.time()
  tasks = monitor.others(('ps',)) + [
      t for t in monitor.others(('worker',)) if t[1] == 0]
  while True:
    try:
      call.sess.run(g.ready_dequeue, options=call.tf.RunOptions(
          timeout_in_ms=int(liveness.PROBE_INTERVAL_SECS * 1000)))
      return
    except call.tf.errors.DeadlineExceededError:
      pass
    except call.tf.errors.OpError as e:
      raise call.explain(e, 'waiting for the chief',
                         liveness.PROBE_INTERVAL_SECS)
    dead = monitor.dead(tasks)
    if dead:
      raise monitor.failure(dead, 'the variables were never initialised')
    now = time.time()
    if now - last_report >= liveness.WAIT_REPORT_SECS:
      last_report = now
      log('%s: waiting for the chief (worker:0) to initialise the variables '
          '(%.0fs so far; giving up after --startup_timeout_secs=%g)' % (
              monitor.spec.name, now - began, options.startup_timeout_secs))
    if time.time() > give_up:
      raise liveness.TaskFailedError(
          'task %s: the chief (worker:0) did not initialise the variables '
          'within --startup_timeout_secs=%g; raise it, or look at the '
          'chief\'s log.' % (monitor.spec.name,
                             options.startup_timeout_secs))
