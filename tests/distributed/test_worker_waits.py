"""A worker waiting for the chief's variables takes its token from the
`chief_ready` queue in waits of liveness.PROBE_INTERVAL_SECS, and probes
the PS tasks and the chief between two waits (checked with stand-ins of
the session and the monitor: the cluster tests wait on real tasks)."""

import time

import tensorflow as _tf

from variable_mgr.benchmark.cluster import liveness
from variable_mgr.benchmark.cluster import worker_task

tf = _tf.compat.v1


class _Session(object):
  """Times out `timeouts` times, then hands the token."""

  def __init__(self, timeouts):
    self.timeouts = timeouts
    self.waits_ms = []

  def run(self, fetch, options=None):
    del fetch
    self.waits_ms.append(options.timeout_in_ms)
    if len(self.waits_ms) <= self.timeouts:
      raise tf.errors.DeadlineExceededError(None, None, 'timed out')


class _Call(object):
  tf = tf

  def __init__(self, sess):
    self.sess = sess


class _Monitor(object):

  def __init__(self):
    self.started = time.time()
    self.probed = []

  def others(self, jobs):
    return [('ps', 0)] if jobs == ('ps',) else [('worker', 0), ('worker', 1)]

  def dead(self, tasks):
    self.probed.append(list(tasks))
    return []


class _Graph(object):
  ready_dequeue = 'ready_dequeue'


class _Options(object):
  startup_timeout_secs = 600.0


def test_the_wait_for_the_chief_is_a_probe_interval_at_a_time():
  sess = _Session(timeouts=2)
  monitor = _Monitor()
  lines = []
  worker_task._wait_for_chief(_Call(sess), _Graph(), monitor, _Options(),  # pylint: disable=protected-access
                              lines.append)
  want = int(round(liveness.PROBE_INTERVAL_SECS * 1000))
  assert want >= 100
  assert sess.waits_ms == [want] * 3
  # Between two waits: the PS tasks and the chief (worker 0) probed.
  assert monitor.probed == [[('ps', 0), ('worker', 0)]] * 2
  assert lines == ['Waiting for the chief to initialise the variables']
