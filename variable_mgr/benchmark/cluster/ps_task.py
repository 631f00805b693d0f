"""A PS task: serves the variables until every worker has finished.

Worker k puts a token into the queue `done_worker_k` on every PS task
(tf_cnn_benchmarks' way of stopping parameter servers); the PS polls the
sizes of its queues and, once all are full, returns when every
worker's process has exited (so that no worker's last call is cut off).
Between polls it probes the other tasks: a worker that died before it
finished, or another PS task that stopped first, ends this task with a
TaskFailedError.

A PS that found a worker dead serves on until every other worker has
exited (each finds the dead one itself: see `deadline`), for at most
--op_timeout_secs plus a probe interval: a worker blocked on this PS must
name the dead worker, not this PS gone.
"""

import time

from variable_mgr.benchmark.cluster import deadline
from variable_mgr.benchmark.cluster import liveness
from variable_mgr.benchmark.cluster import servers
from variable_mgr.benchmark.cluster import task_spec
from variable_mgr.benchmark.cluster import worker_graph
from variable_mgr.compat import tf


def stopping_line(name, linger, error):
  """What a PS prints when it found a dead worker and serves on, for at
  most `linger` seconds, before it raises `error`."""
  return '%s: stopping in %gs: %s' % (name, linger, error)


def serve_until_gone(workers, linger):
  """Returns once every task of `workers` ([(job, index, address)]) refuses
  connections (its process exited), or after `linger` seconds; returns
  whether they all did."""
  end = time.time() + linger
  while True:
    running = [t for t in workers
               if liveness.connect(t[2]) != liveness.REFUSED]
    if not running:
      return True
    if time.time() + liveness.PROBE_INTERVAL_SECS > end:
      time.sleep(max(0.0, end - time.time()))
      return False
    time.sleep(liveness.PROBE_INTERVAL_SECS)


def run_ps(spec, options, log=print):
  """Serves until every worker finished; returns 0.

  Raises:
    TaskFailedError: a worker or another PS task died first.
  """
  monitor = liveness.Monitor(spec, options.startup_timeout_secs)
  server = servers.start_server(tf, spec, 1, options)
  log('%s serving at %s' % (spec.name, spec.address))
  graph = tf.Graph()
  with graph.as_default():
    started_sizes, done_sizes = [
        [q.size() for q in worker_graph.worker_queues(
            spec.task_index, spec.num_workers, kind)]
        for kind in ('started', 'done')]
  config = servers.session_config(tf, spec, options, 1)
  # Never closed: the process ends when this returns or raises.
  sess = tf.Session(server.target, graph=graph, config=config)
  with sess.as_default(), graph.as_default():
    caller = deadline.DeadlineCaller(tf, sess, monitor,
                                     options.op_timeout_secs)

    def workers_that(sizes, what):
      values = caller(sizes, 'reading which workers %s' % what)
      return set(task_spec.task_name('worker', k)
                 for k, v in enumerate(values) if v)

    def finished_workers():
      return workers_that(done_sizes, 'finished')

    while True:
      # A worker that told this PS it started counts as seen even if no
      # probe caught it alive.
      for name in workers_that(started_sizes, 'started'):
        monitor.mark_seen(name)
      finished = finished_workers()
      if len(finished) == spec.num_workers:
        # A worker's token is the last op of its last call to this PS; the
        # call returns to the worker only after the op ran. A server that
        # stops as soon as it sees the token can cut that answer off, and
        # the worker then reports this PS dead ("Socket closed") after a
        # run that succeeded. Serve until every worker has exited, for at
        # most --op_timeout_secs (the longest such a call may wait).
        serve_until_gone(monitor.others(('worker',)), options.op_timeout_secs)
        log('%s: every worker finished; stopping' % spec.name)
        return 0
      # Probed all along: a task stopped or behind a full link for a moment
      # is not dead (a synchronous worker would wait for it that long).
      patience = options.op_timeout_secs
      dead_ps = monitor.dead(monitor.others(('ps',)), patience=patience)
      if dead_ps:
        # A PS stops once every worker finished, and workers tell every PS
        # in one call: give our own tokens a moment to arrive.
        grace_end = time.time() + 2 * liveness.PROBE_INTERVAL_SECS
        while time.time() < grace_end:
          if len(finished_workers()) == spec.num_workers:
            log('%s: every worker finished; stopping' % spec.name)
            return 0
          time.sleep(0.1)
        raise monitor.failure(dead_ps, 'some workers had not finished')
      workers = [t for t in monitor.others(('worker',))
                 if task_spec.task_name(t[0], t[1]) not in finished]
      dead = monitor.dead(workers, lambda name: name in finished_workers(),
                          patience)
      if dead:
        # Serve a while longer: workers blocked on this PS (a barrier) must
        # find the dead worker (at once when its process is gone, else when
        # their call times out), not this PS gone.
        error = monitor.failure(dead, 'it never said it finished')
        linger = options.op_timeout_secs + liveness.PROBE_INTERVAL_SECS
        log(stopping_line(spec.name, linger, error))
        named = set(d[0] for d in dead)
        others = [t for t in workers
                  if task_spec.task_name(t[0], t[1]) not in named]
        if serve_until_gone(others, linger) and others:
          log('%s: every other worker has exited: stopping now' % spec.name)
        raise error
      time.sleep(liveness.PROBE_INTERVAL_SECS)
