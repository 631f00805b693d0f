"""Liveness decisions without a cluster: what a probe finds, when a peer
counts as dead, and when a task blames its own link rather than its peers.

Probes go to what the test opens on 127.0.0.1 (a gRPC server of grpcio,
the same in a process the test stops with SIGSTOP, a socket that accepts
and never answers, a closed port), or `liveness.probe` is replaced by the
results a test sets.
"""

import os
import signal
import socket
import subprocess
import sys
import threading
import time

from concurrent import futures

import grpc
import pytest

from variable_mgr.benchmark.cluster import deadline
from variable_mgr.benchmark.runs import exit_status

from variable_mgr.benchmark.cluster import liveness
from variable_mgr.benchmark.cluster import task_spec

ANSWERED = liveness.ANSWERED
REFUSED = liveness.REFUSED
SILENT = liveness.SILENT
UNREACHABLE = liveness.UNREACHABLE

SPEC = task_spec.TaskSpec('worker', 1, ['10.77.0.1:2222'],
                          ['10.77.0.2:2222', '10.77.0.3:2222'])


def _grpc_server():
  """A started gRPC server of grpcio on 127.0.0.1 (no service: a probe asks
  only whether a server answers); returns (server, address)."""
  server = grpc.server(futures.ThreadPoolExecutor(max_workers=1),
                       options=[('grpc.so_reuseport', 0)])
  port = server.add_insecure_port('127.0.0.1:0')
  server.start()
  return server, '127.0.0.1:%d' % port


@pytest.fixture
def listener():
  """`listener(answer)`: the address of a gRPC server on 127.0.0.1 when
  `answer`, else of a socket that accepts connections and never answers."""
  servers = []
  sockets = []

  def make(answer):
    if answer:
      server, address = _grpc_server()
      servers.append(server)
      return address
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    sock.listen(4)
    sockets.append(sock)
    return '127.0.0.1:%d' % sock.getsockname()[1]

  yield make
  for server in servers:
    server.stop(None)
  for sock in sockets:
    sock.close()


def _closed_port():
  sock = socket.socket()
  sock.bind(('127.0.0.1', 0))
  port = sock.getsockname()[1]
  sock.close()
  return '127.0.0.1:%d' % port


def test_probe_tells_answered_refused_and_silent(listener):
  assert liveness.probe(listener(True)) == ANSWERED
  assert liveness.probe(_closed_port()) == REFUSED
  start = time.time()
  assert liveness.probe(listener(False), answer_timeout=0.3) == SILENT
  assert 0.25 < time.time() - start < 3.0
  assert liveness.reachable(listener(True))
  assert not liveness.reachable(_closed_port())
  # The kernel's answer alone: a silent socket connects.
  assert liveness.connect(listener(False)) == liveness.CONNECTED
  assert liveness.connect(_closed_port()) == REFUSED


def test_probe_of_an_address_without_a_route_is_unreachable(monkeypatch):
  """No connection at all (a timeout, no route) is UNREACHABLE, not a
  refusal."""
  for error in (socket.timeout('timed out'),
                OSError(113, 'No route to host')):
    def connect(*args, **kwargs):
      raise error
    monkeypatch.setattr(liveness.socket, 'create_connection', connect)
    assert liveness.probe('10.77.0.9:2222') == UNREACHABLE


@pytest.mark.parametrize('found,down', [
    ({'ps:0': UNREACHABLE, 'worker:0': UNREACHABLE}, True),
    ({'ps:0': UNREACHABLE, 'ps:1': UNREACHABLE, 'worker:0': UNREACHABLE},
     True),
    # One peer: its death and this task's link cannot be told apart.
    ({'ps:0': UNREACHABLE}, False),
    # A refusal or a silent connection proves the path works.
    ({'ps:0': UNREACHABLE, 'worker:0': REFUSED}, False),
    ({'ps:0': UNREACHABLE, 'worker:0': SILENT}, False),
    ({'ps:0': UNREACHABLE, 'worker:0': ANSWERED}, False),
    ({'ps:0': REFUSED, 'worker:0': REFUSED}, False),
    ({}, False),
])
def test_own_link_down_decision(found, down):
  assert liveness.own_link_down(found) == down


def _fake_probes(monkeypatch, results):
  """`liveness.probe` returns results[address], and `liveness.connect`
  what it implies; returns the probed addresses, in order."""
  probed = []

  def probe(address, *args):
    del args
    probed.append(address)
    return results[address]

  def connect(address, *args):
    found = probe(address, *args)
    return liveness.CONNECTED if found in (ANSWERED, SILENT) else found

  monkeypatch.setattr(liveness, 'probe', probe)
  monkeypatch.setattr(liveness, 'connect', connect)
  return probed


def test_a_task_that_reaches_no_peer_says_its_own_link_looks_down(
    monkeypatch):
  """worker:1 whose call failed: ps:0 does not answer and neither does
  worker:0, both without a connection: the message names worker:1's own
  address and its link, not two dead peers."""
  liveness.set_train_dir(None)
  _fake_probes(monkeypatch, {'10.77.0.1:2222': UNREACHABLE,
                             '10.77.0.2:2222': UNREACHABLE})
  monitor = liveness.Monitor(SPEC, 10.0)
  monitor.seen.update(['ps:0', 'worker:0'])
  dead = monitor.dead(monitor.others(('ps',)))
  assert dead == [('ps:0', '10.77.0.1:2222', 'stopped answering')]
  error = monitor.failure(dead, 'this task (worker:1) got an error')
  assert str(error) == (
      'task worker:1 at 10.77.0.3:2222 reaches none of the other tasks '
      '(ps:0 at 10.77.0.1:2222, worker:0 at 10.77.0.2:2222: no connection): '
      'its own link or network looks down, not every other task at once; '
      'this task (worker:1) got an error. Check the link and address of '
      'this host (10.77.0.3:2222), then restart the cluster.')
  assert error.dead_tasks == []


@pytest.mark.parametrize('other', [REFUSED, SILENT, ANSWERED])
def test_a_peer_on_a_working_path_keeps_the_blame_on_the_dead_one(
    monkeypatch, other):
  liveness.set_train_dir(None)
  _fake_probes(monkeypatch, {'10.77.0.1:2222': UNREACHABLE,
                             '10.77.0.2:2222': other})
  monitor = liveness.Monitor(SPEC, 10.0)
  monitor.seen.update(['ps:0', 'worker:0'])
  dead = monitor.dead(monitor.others(('ps',)))
  error = monitor.failure(dead, 'this task (worker:1) got an error')
  assert str(error).startswith(
      'dead task: ps:0 at 10.77.0.1:2222 (stopped answering); this task '
      '(worker:1) got an error.'), str(error)
  assert error.dead_tasks == ['ps:0']


def test_a_task_with_one_peer_names_the_peer(monkeypatch):
  spec = task_spec.TaskSpec('worker', 0, ['10.77.0.1:2222'],
                            ['10.77.0.2:2222'])
  probed = _fake_probes(monkeypatch, {'10.77.0.1:2222': UNREACHABLE})
  monitor = liveness.Monitor(spec, 10.0)
  monitor.seen.add('ps:0')
  dead = monitor.dead(monitor.others())
  assert monitor.failure(dead, 'x').dead_tasks == ['ps:0']
  assert probed == ['10.77.0.1:2222']


def _clocked_monitor(monkeypatch, results):
  """A monitor of SPEC whose probes answer from `results` and whose clock
  is the returned one-element list (seconds, moved by the test)."""
  _fake_probes(monkeypatch, results)
  monitor = liveness.Monitor(SPEC, 10.0)
  now = [1000.0]
  monkeypatch.setattr(liveness.time, 'time', lambda: now[0])
  return monitor, now


def test_patience_spares_a_silent_peer_not_a_refused_one(monkeypatch):
  """A peer that answered and now does not: with patience P it is dead
  only after P seconds without an answer, unless its host refuses the
  connection (its process is gone); without patience, at once."""
  results = {'10.77.0.1:2222': ANSWERED, '10.77.0.2:2222': ANSWERED}
  monitor, now = _clocked_monitor(monkeypatch, results)
  tasks = monitor.others()
  assert monitor.dead(tasks, patience=5.0) == []
  results['10.77.0.1:2222'] = SILENT
  results['10.77.0.2:2222'] = UNREACHABLE
  now[0] += 4.0
  assert monitor.dead(tasks, patience=5.0) == []
  assert [d[0] for d in monitor.dead(tasks)] == ['ps:0', 'worker:0']
  now[0] += 1.5
  assert [d[0] for d in monitor.dead(tasks, patience=5.0)] == [
      'ps:0', 'worker:0']
  results['10.77.0.1:2222'] = ANSWERED
  results['10.77.0.2:2222'] = ANSWERED
  monitor.dead(tasks, patience=5.0)
  results['10.77.0.2:2222'] = REFUSED
  now[0] += 0.1
  assert monitor.dead(tasks, patience=5.0) == [
      ('worker:0', '10.77.0.2:2222',
       'its process is gone: its port refuses connections')]
  # A peer that said it finished is not dead.
  assert monitor.dead(tasks, lambda name: name == 'worker:0', 5.0) == []


def test_without_patience_a_silent_peer_is_dead_at_once(monkeypatch):
  """`dead` without a patience (a call already failed or timed out): a
  peer that answered a moment ago and is silent now is dead at once."""
  results = {'10.77.0.1:2222': ANSWERED, '10.77.0.2:2222': ANSWERED}
  monitor, now = _clocked_monitor(monkeypatch, results)
  tasks = monitor.others()
  assert monitor.dead(tasks) == []
  results['10.77.0.1:2222'] = SILENT
  now[0] += 0.01
  assert monitor.dead(tasks) == [
      ('ps:0', '10.77.0.1:2222', liveness.STOPPED_ANSWERING)]


def test_the_own_link_check_probes_again_only_a_stale_result(monkeypatch):
  """`unreached_others`: a dead task probed less than `fresh_secs` ago is
  judged by that probe, not probed again; one probed longer ago is."""
  results = {'10.77.0.1:2222': UNREACHABLE, '10.77.0.2:2222': UNREACHABLE}
  probed = _fake_probes(monkeypatch, results)
  monitor = liveness.Monitor(SPEC, 10.0)
  now = [1000.0]
  monkeypatch.setattr(liveness.time, 'time', lambda: now[0])
  monitor.seen.update(['ps:0', 'worker:0'])
  dead = monitor.dead(monitor.others())
  assert [d[0] for d in dead] == ['ps:0', 'worker:0']
  assert len(probed) == 2
  now[0] += 0.5
  assert monitor.unreached_others(dead, fresh_secs=1.0) == [
      ('ps:0', '10.77.0.1:2222'), ('worker:0', '10.77.0.2:2222')]
  assert len(probed) == 2  # Both fresh.
  # Both stale: ps:0, which answers now, is probed again (and proves the
  # link works, so worker:0 is not).
  results['10.77.0.1:2222'] = ANSWERED
  now[0] += 1.0
  assert monitor.unreached_others(dead, fresh_secs=1.0) is None
  assert probed[2:] == ['10.77.0.1:2222']


def test_watcher_probes_beside_the_steps_and_raises_between_them(
    monkeypatch, listener):
  """An asynchronous worker's Watcher: while the peer answers, `check()`
  passes and never waits for a probe; once the peer's port is closed, the
  next `check()` raises naming it."""
  monkeypatch.setattr(liveness, 'PROBE_INTERVAL_SECS', 0.05)
  peer, address = _grpc_server()
  spec = task_spec.TaskSpec('worker', 1, [listener(True)],
                            [address, '127.0.0.1:1'])
  monitor = liveness.Monitor(spec, 10.0)
  watcher = liveness.Watcher(monitor, monitor.others(('worker',)),
                             lambda name: False, 5.0, 'it never said it '
                             'finished').start()
  try:
    end = time.time() + 0.5
    while time.time() < end:
      start = time.time()
      watcher.check()
      assert time.time() - start < 0.01
      time.sleep(0.01)
    assert 'worker:0' in monitor.seen
    peer.stop(None)
    end = time.time() + 5.0
    with pytest.raises(liveness.TaskFailedError) as e:
      while time.time() < end:
        watcher.check()
        time.sleep(0.02)
    assert str(e.value).startswith(
        'dead task: worker:0 at %s (%s); it never said it finished.' % (
            address, liveness.GONE)), str(e.value)
  finally:
    watcher.stop()


def test_watcher_takes_a_peer_that_said_it_started_as_seen(monkeypatch):
  """A peer that told PS 0 it started, and whose port is closed before any
  probe caught it alive, is dead at the watcher's first round (not "still
  starting" until the startup timeout)."""
  monkeypatch.setattr(liveness, 'PROBE_INTERVAL_SECS', 0.05)
  address = _closed_port()
  spec = task_spec.TaskSpec('worker', 1, ['127.0.0.1:1'],
                            [address, '127.0.0.1:2'])
  for started, dead in ((lambda: [], False), (lambda: ['worker:0'], True)):
    monitor = liveness.Monitor(spec, 600.0)
    watcher = liveness.Watcher(monitor, monitor.others(('worker',)),
                               lambda name: False, 5.0, 'x', started).start()
    try:
      time.sleep(0.5)
      if dead:
        with pytest.raises(liveness.TaskFailedError) as e:
          watcher.check()
        assert e.value.dead_tasks == ['worker:0']
      else:
        watcher.check()
        assert 'worker:0' not in monitor.seen
    finally:
      watcher.stop()


_SERVING = '''
import sys, time
from concurrent import futures
import grpc
server = grpc.server(futures.ThreadPoolExecutor(max_workers=1),
                     options=[('grpc.so_reuseport', 0)])
print(server.add_insecure_port('127.0.0.1:0'), flush=True)
server.start()
time.sleep(600)
'''


def _wait_until_stopped(pid, timeout=10.0):
  """kill(SIGSTOP) returns before every thread of the process has stopped
  (on a busy machine a thread may answer one more request): wait until the
  kernel reports every thread of it stopped ('T' in its stat)."""
  end = time.time() + timeout
  tasks = '/proc/%d/task' % pid
  while time.time() < end:
    states = []
    for task in os.listdir(tasks):
      try:
        with open(os.path.join(tasks, task, 'stat')) as f:
          states.append(f.read().rsplit(')', 1)[1].split()[0])
      except FileNotFoundError:  # A thread that just ended.
        pass
    if states and all(state == 'T' for state in states):
      return
    time.sleep(0.01)
  raise AssertionError('process %d did not stop within %.0f s' %
                       (pid, timeout))


def test_probe_tells_a_stopped_server_from_a_running_one():
  """A process serving gRPC answers; stopped (SIGSTOP) its port still
  accepts TCP connections but it is SILENT; continued it answers again;
  killed its port refuses."""
  process = subprocess.Popen([sys.executable, '-c', _SERVING],
                             stdout=subprocess.PIPE, universal_newlines=True)
  try:
    address = '127.0.0.1:%d' % int(process.stdout.readline())
    assert liveness.probe(address) == ANSWERED
    os.kill(process.pid, signal.SIGSTOP)
    _wait_until_stopped(process.pid)
    socket.create_connection(('127.0.0.1', int(address.split(':')[1])),
                             timeout=1.0).close()
    start = time.time()
    assert liveness.probe(address, answer_timeout=1.0) == SILENT
    assert 0.9 < time.time() - start < 3.0
    os.kill(process.pid, signal.SIGCONT)
    assert liveness.probe(address) == ANSWERED
    process.kill()
    process.wait()
    assert liveness.probe(address) == REFUSED
  finally:
    if process.poll() is None:
      os.kill(process.pid, signal.SIGCONT)
    process.kill()
    process.wait()
    process.stdout.close()


def test_gone_names_only_a_refused_peer_that_answered_once(monkeypatch):
  """`Monitor.gone`: a peer seen once whose port refuses is gone (dead at
  once, named as such) unless it said it finished; one never seen, a
  silent one and an unreachable one are left to the caller's deadline."""
  spec = task_spec.TaskSpec('worker', 0, ['10.77.0.1:2222'],
                            ['10.77.0.2:2222', '10.77.0.3:2222',
                             '10.77.0.4:2222', '10.77.0.5:2222'])
  _fake_probes(monkeypatch, {'10.77.0.1:2222': SILENT,
                             '10.77.0.3:2222': REFUSED,
                             '10.77.0.4:2222': REFUSED,
                             '10.77.0.5:2222': UNREACHABLE})
  monitor = liveness.Monitor(spec, 10.0)
  monitor.seen.update(['ps:0', 'worker:1', 'worker:3'])  # Not worker:2.
  assert monitor.gone(monitor.others()) == [
      ('worker:1', '10.77.0.3:2222', liveness.GONE)]
  assert monitor.gone(monitor.others(), lambda name: name == 'worker:1') == []


class _FakeTf(object):
  """The part of TensorFlow a DeadlineCaller uses."""

  class errors(object):  # pylint: disable=invalid-name
    class OpError(Exception):
      pass

    class DeadlineExceededError(OpError):
      pass

  @staticmethod
  def RunOptions(timeout_in_ms):  # pylint: disable=invalid-name
    return timeout_in_ms


class _BlockedSession(object):
  """`run` blocks until `release` is set or its timeout has passed."""

  def __init__(self):
    self.release = threading.Event()

  def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
    del fetches, feed_dict, run_metadata
    if not self.release.wait(options / 1000.0):
      raise _FakeTf.errors.DeadlineExceededError('Timed out')
    return 'released'


def _ended_tasks(monkeypatch, session):
  """Replaces the process exit of the deadline watchdog: records the
  error line, releases `session`; returns the recorded lines."""
  lines = []
  monkeypatch.setattr(deadline.exit_status, 'fail',
                      lambda message, status: lines.append(str(message)))

  def exit_task(status):
    assert status == exit_status.FAILURE
    session.release.set()
    # The process would end here: the (daemon) watchdog thread stops.
    threading.Event().wait()

  monkeypatch.setattr(deadline.exit_status, 'exit_task', exit_task)
  return lines


@pytest.mark.parametrize('peer', [REFUSED, SILENT])
def test_a_call_blocked_on_a_gone_peer_ends_at_once(monkeypatch, peer):
  """A worker's call blocked (a barrier) while a peer that answered once
  now refuses connections: the watchdog ends the task within a few probe
  intervals, naming the peer gone, long before the call's deadline; a
  silent peer is left to the deadline."""
  liveness.set_train_dir(None)
  _fake_probes(monkeypatch, {'10.77.0.1:2222': ANSWERED,
                             '10.77.0.2:2222': ANSWERED,
                             '10.77.0.3:2222': peer})
  spec = task_spec.TaskSpec('worker', 0, ['10.77.0.1:2222'],
                            ['10.77.0.2:2222', '10.77.0.3:2222'])
  monitor = liveness.Monitor(spec, 10.0)
  monitor.seen.update(['ps:0', 'worker:1'])
  session = _BlockedSession()
  lines = _ended_tasks(monkeypatch, session)
  call = deadline.DeadlineCaller(_FakeTf, session, monitor, 4.0,
                                 lambda name: False, probe_peers=True)
  start = time.time()
  if peer == REFUSED:
    assert call('step', 'running step 3') == 'released'
    assert time.time() - start < 2 * liveness.PROBE_INTERVAL_SECS + 1.0
    assert lines == [
        'dead task: worker:1 at 10.77.0.3:2222 (its process is gone: its port '
        'refuses connections); this task (worker:0) was running step 3. '
        'Every task of a cluster is needed: restart the cluster.']
  else:
    with pytest.raises(liveness.TaskFailedError) as e:
      call('step', 'running step 3')
    assert time.time() - start >= 4.0
    assert lines == []
    assert str(e.value).startswith(
        'dead task: worker:1 at 10.77.0.3:2222 (stopped answering); this '
        'task (worker:0) got DeadlineExceededError while running step 3'
    ), str(e.value)


def test_a_call_that_says_finished_or_a_ps_call_probes_no_peer(monkeypatch):
  """No probes during a call made with probe_peers=False (the call that
  tells the PS tasks this worker finished), nor from a caller made
  without probe_peers (a PS's)."""
  probed = _fake_probes(monkeypatch, {'10.77.0.1:2222': REFUSED,
                                      '10.77.0.2:2222': REFUSED,
                                      '10.77.0.3:2222': REFUSED})
  spec = task_spec.TaskSpec('worker', 0, ['10.77.0.1:2222'],
                            ['10.77.0.2:2222', '10.77.0.3:2222'])
  monitor = liveness.Monitor(spec, 10.0)
  monitor.seen.update(['ps:0', 'worker:1'])
  for caller_probes, call_probes in ((True, False), (False, True)):
    session = _BlockedSession()
    lines = _ended_tasks(monkeypatch, session)
    call = deadline.DeadlineCaller(_FakeTf, session, monitor, 60.0,
                                   lambda name: False, caller_probes)
    timer = threading.Timer(3 * liveness.PROBE_INTERVAL_SECS,
                            session.release.set)
    timer.start()
    assert call('done', 'telling the PS tasks this worker finished',
                probe_peers=call_probes) == 'released'
    assert lines == [] and probed == []


def test_a_ps_serves_on_until_the_other_workers_exit():
  """`ps_task.serve_until_gone`: while one of the workers still listens it
  serves the whole linger; once every one refuses, it returns at once."""
  from variable_mgr.benchmark.cluster import ps_task  # pylint: disable=g-import-not-at-top
  server, address = _grpc_server()
  workers = [('worker', 0, address), ('worker', 1, _closed_port())]
  try:
    start = time.time()
    assert not ps_task.serve_until_gone(workers, 1.5)
    assert 1.4 < time.time() - start < 3.0
  finally:
    server.stop(None)
  start = time.time()
  assert ps_task.serve_until_gone(workers, 60.0)
  assert time.time() - start < 2.0
  assert ps_task.serve_until_gone([], 60.0)
