"""Session calls with a deadline, for the tasks of a cluster.

Every session call of a task has a deadline (`--op_timeout_secs`, through
`ConfigProto.operation_timeout_in_ms` and `RunOptions.timeout_in_ms`). When
a call fails or times out, the task probes every other task (see
`liveness`): the error names the dead task when there is one.

A worker's call can block on a peer that died: a synchronous step waits at
a barrier for every worker, a collective for every member, and such a call
returns only at its deadline. So while a worker's call is open longer than
PROBE_INTERVAL_SECS, its watchdog probes the other tasks every
PROBE_INTERVAL_SECS; a task that answered once and whose port now refuses
connections (its process is gone: `Monitor.gone`) ends this task at once,
naming it. A task that is silent (stopped, cut off, behind a full link) is
left to the call's deadline, as it may come back.
"""

import collections
import threading
import time

from variable_mgr.benchmark.cluster import liveness
from variable_mgr.benchmark.runs import exit_status

# How long a session call may outlive its deadline before the watchdog ends
# the process.
WATCHDOG_MARGIN_SECS = 2.0
# How long a failed call keeps probing for the task that broke it.
DEATH_GRACE_SECS = 3.0

# The open call: when the watchdog gives up on it, what it does, its
# deadline (seconds), when it started, and whether its peers are probed.
_Call = collections.namedtuple('_Call',
                               'give_up what timeout start probe_peers')


class DeadlineCaller(object):
  """`sess.run` with a deadline; a failure becomes a TaskFailedError that
  names the dead task when there is one.

  A watchdog thread backs the deadline up: a call that outlives it by
  WATCHDOG_MARGIN_SECS ends the process with the same error (a call to a PS
  killed mid-step does not always return at its RunOptions deadline).
  With `probe_peers` (workers) it also probes the other tasks during a long
  call, and ends the process as soon as one is gone.

  Args:
    tf: the TensorFlow module (tf.compat.v1).
    sess: the task's session.
    monitor: the task's `liveness.Monitor`.
    timeout_secs: a call's deadline (--op_timeout_secs).
    finished: `finished(name)` says whether a worker ended normally.
    probe_peers: probe the other tasks during a call open longer than
      PROBE_INTERVAL_SECS (a PS's calls run on its own server alone).
  """

  def __init__(self, tf, sess, monitor, timeout_secs, finished=None,
               probe_peers=False):
    self.tf = tf
    self.sess = sess
    self.monitor = monitor
    self.timeout_secs = timeout_secs
    self.finished = finished
    self.probe_peers = probe_peers
    self._pending = None  # The open _Call.
    watchdog = threading.Thread(target=self._watch, name='call-watchdog')
    watchdog.daemon = True
    watchdog.start()
    if probe_peers:
      # A thread of its own: a round of probes of peers without a route
      # takes CONNECT_TIMEOUT_SECS each, which must not delay the watchdog.
      prober = threading.Thread(target=self._probe, name='call-prober')
      prober.daemon = True
      prober.start()

  def __call__(self, fetches, what, timeout_secs=None, feed=None,
               probe_peers=True, run_metadata=None):
    """`sess.run(fetches)`; `what` says what the call does, for the errors.
    `probe_peers=False`: no probes during this call even with the
    caller's `probe_peers` (the call that tells the PS tasks this worker
    finished lets them exit before it returns). A `run_metadata` (a
    `tf.RunMetadata`) gets the call's full trace (`--trace_file`)."""
    timeout = self.timeout_secs if timeout_secs is None else timeout_secs
    options = self.tf.RunOptions(timeout_in_ms=int(timeout * 1000))
    if run_metadata is not None:
      options.trace_level = self.tf.RunOptions.FULL_TRACE
    now = time.time()
    self._pending = _Call(now + timeout + WATCHDOG_MARGIN_SECS, what,
                          timeout, now, self.probe_peers and probe_peers)
    try:
      return self.sess.run(fetches, feed_dict=feed, options=options,
                           run_metadata=run_metadata)
    except self.tf.errors.OpError as e:
      # The call returned: the watchdog is done with it, and the probes
      # that find who broke it (bounded by their own timeouts) may take
      # longer than its margin.
      self._pending = None
      raise self.explain(e, what, timeout)
    finally:
      self._pending = None

  def _watch(self):
    while True:
      time.sleep(0.25)
      pending = self._pending
      if pending is None or time.time() < pending.give_up:
        continue
      self._end(self.describe('the call did not return while %s' %
                              pending.what, True, pending.timeout))

  def _probe(self):
    """Every PROBE_INTERVAL_SECS of a call open that long, ends the task
    when another task is gone (`Monitor.gone`)."""
    while True:
      time.sleep(0.25)
      pending = self._pending
      if (pending is None or not pending.probe_peers or
          time.time() - pending.start < liveness.PROBE_INTERVAL_SECS):
        continue
      gone = (self.monitor.gone(self.monitor.others(('ps',))) +
              self.monitor.gone(self.monitor.others(('worker',)),
                                self.finished))
      # A call that failed meanwhile names the dead task itself.
      if gone and self._pending is pending:
        self._end(self.monitor.failure(gone, 'this task (%s) was %s' % (
            self.monitor.spec.name, pending.what)))
      time.sleep(liveness.PROBE_INTERVAL_SECS)

  @staticmethod
  def _end(error):
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
      return liveness.TaskFailedError(
          'task %s: %s, within the deadline of %gs, while every other task '
          'still answers; if steps are that slow, raise --op_timeout_secs.' %
          (self.monitor.spec.name, summary, timeout))
    return liveness.TaskFailedError('task %s: %s' % (self.monitor.spec.name,
                                                     summary))


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
