"""A failed call of a cluster task is named by TensorFlow's own cause line
(`deadline.DeadlineCaller.explain`): the line after a restore error's
"Original error:", else the first line that says something (not TF 2's
"Graph execution error:" preamble, a "Detected at node" line or a
traceback's). Every other task answers here: the error is this task's."""

import time

import pytest
import tensorflow as _tf

from variable_mgr.benchmark.cluster import deadline
from variable_mgr.benchmark.cluster import liveness

tf = _tf.compat.v1


class _Spec(object):
  name = 'worker:0'


class _Monitor(object):
  """Every other task alive."""
  spec = _Spec()

  def others(self, jobs):
    del jobs
    return []

  def dead(self, tasks, finished=None):
    del tasks, finished
    return []


RESTORE = ('Restoring from checkpoint failed. This is most likely due to a '
           'Variable name or other graph key that is missing from the '
           'checkpoint.\n\nOriginal error:\n\nKey v/w not found in '
           'checkpoint\n\t [[node save/RestoreV2]]')
GRAPH_EXECUTION = ('Graph execution error:\n\nDetected at node '
                   '\'tower_0/loss\' defined at:\n  File "x.py", line 3\n'
                   'Traceback (most recent call last):\nIncompatible shapes: '
                   '[4,10] vs. [8,10]\n\t [[node tower_0/loss]]')


@pytest.mark.parametrize('message,cause', [
    (RESTORE, 'Key v/w not found in checkpoint'),
    (GRAPH_EXECUTION, 'Incompatible shapes: [4,10] vs. [8,10]'),
    ('Socket closed.', 'Socket closed'),
])
def test_a_failed_call_names_tensorflow_s_cause(monkeypatch, message, cause):
  monkeypatch.setattr(deadline, 'DEATH_GRACE_SECS', 0.0)
  call = deadline.DeadlineCaller(tf, None, _Monitor(), 30.0)
  error = tf.errors.NotFoundError(None, None, message)
  failure = call.explain(error, 'restoring the checkpoint', 30.0)
  assert str(failure) == ('task worker:0: NotFoundError while restoring the '
                          'checkpoint: %s' % cause)


def test_a_call_past_its_deadline_says_so(monkeypatch):
  monkeypatch.setattr(deadline, 'DEATH_GRACE_SECS', 0.0)
  call = deadline.DeadlineCaller(tf, None, _Monitor(), 30.0)
  error = tf.errors.DeadlineExceededError(None, None, 'Timed out waiting')
  failure = call.explain(error, 'running step 3', 30.0)
  assert str(failure) == (
      'task worker:0: DeadlineExceededError while running step 3: Timed out '
      'waiting, within the deadline of 30s, while every other task still '
      'answers; if steps are that slow, raise --op_timeout_secs.')


class _CountingMonitor(_Monitor):
  """Every other task alive; counts the rounds of probes."""

  def __init__(self):
    self.rounds = 0

  def gone(self, tasks, finished=None):
    del tasks, finished
    self.rounds += 1
    return []


class _SlowSession(object):
  def __init__(self, seconds):
    self.seconds = seconds

  def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
    del feed_dict, options, run_metadata
    time.sleep(self.seconds)
    return fetches


def test_a_worker_probes_its_peers_only_during_a_call_open_that_long():
  """A call shorter than PROBE_INTERVAL_SECS probes no peer (most calls:
  a probe round costs connections to every task); one open for twice
  that long does."""
  interval = liveness.PROBE_INTERVAL_SECS
  short, long_ = _CountingMonitor(), _CountingMonitor()
  deadline.DeadlineCaller(tf, _SlowSession(0.5 * interval), short, 30.0,
                          probe_peers=True)('x', 'a short call')
  assert short.rounds == 0
  deadline.DeadlineCaller(tf, _SlowSession(2.5 * interval), long_, 30.0,
                          probe_peers=True)('x', 'a long call')
  # Each round asks about the PS tasks, then about the workers.
  assert long_.rounds >= 2


def test_a_call_tensorflow_does_not_end_is_ended_2_s_past_its_deadline(
    monkeypatch):
  """docs/clusters.md: a call that outlives its deadline (a session that
  ignores RunOptions' timeout here) is ended by the watchdog 2 seconds
  after it, naming what the call did."""
  monkeypatch.setattr(deadline, 'DEATH_GRACE_SECS', 0.0)
  ended = []
  start = time.time()
  monkeypatch.setattr(deadline.DeadlineCaller, '_end', staticmethod(
      lambda error: ended.append((time.time() - start, str(error)))))
  deadline.DeadlineCaller(tf, _SlowSession(3.4), _Monitor(), 0.5)(
      'x', 'running step 7')
  # The first end (the real one exits the process; this one returns, and
  # the watchdog ends the call again each time it looks).
  assert ended
  seconds, message = ended[0]
  # The watchdog looks every 0.25 s.
  assert 0.5 + 2.0 <= seconds <= 0.5 + 2.0 + 0.6, seconds
  assert 'running step 7' in message


class _DiesLate(_Monitor):
  """worker:1's port refuses connections 0.5 s after the first probe (a
  connection breaks a moment before a killed task's port closes)."""

  def __init__(self):
    self.first = None

  def dead(self, tasks, finished=None):
    del tasks, finished
    self.first = self.first or time.time()
    return [('worker:1', '127.0.0.1:2', 'gone')] if (
        time.time() - self.first > 0.5) else []

  def failure(self, dead, context):
    return RuntimeError('%s: %s' % (context, dead[0][0]))


def test_a_failed_call_probes_a_while_for_the_task_that_broke_it():
  call = deadline.DeadlineCaller(tf, None, _DiesLate(), 30.0)
  error = tf.errors.UnavailableError(None, None, 'Socket closed')
  failure = call.explain(error, 'running step 3', 30.0)
  assert str(failure) == ('this task (worker:0) got UnavailableError while '
                          'running step 3: Socket closed: worker:1')
