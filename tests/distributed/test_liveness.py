"""Liveness decisions without a cluster: what a probe finds, when a peer
counts as dead, and when a task blames its own link rather than its peers.

Probes go to sockets the test opens on 127.0.0.1 (a server that answers as
gRPC does, one that never answers, a closed port), or `liveness.probe` is
replaced by the results a test sets.
"""

import socket
import threading
import time

import pytest

from variable_mgr.benchmark.cluster import liveness
from variable_mgr.benchmark.cluster import task_spec

ANSWERED = liveness.ANSWERED
REFUSED = liveness.REFUSED
SILENT = liveness.SILENT
UNREACHABLE = liveness.UNREACHABLE

SPEC = task_spec.TaskSpec('worker', 1, ['10.77.0.1:2222'],
                          ['10.77.0.2:2222', '10.77.0.3:2222'])


@pytest.fixture
def listener():
  """`listener(answer)`: the address of a socket on 127.0.0.1 that accepts
  and, when `answer`, sends a 9-byte frame as a gRPC server does."""
  sockets = []

  def make(answer):
    server = socket.socket()
    server.bind(('127.0.0.1', 0))
    server.listen(4)
    sockets.append(server)

    def serve():
      while True:
        try:
          conn, _ = server.accept()
        except OSError:
          return
        sockets.append(conn)
        if answer:
          conn.recv(64)
          conn.sendall(b'\x00' * 9)

    thread = threading.Thread(target=serve)
    thread.daemon = True
    thread.start()
    return '127.0.0.1:%d' % server.getsockname()[1]

  yield make
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
  """`liveness.probe` returns results[address]; returns the probed
  addresses, in order."""
  probed = []

  def probe(address, *args):
    del args
    probed.append(address)
    return results[address]

  monkeypatch.setattr(liveness, 'probe', probe)
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


def test_patience_spares_a_silent_peer_not_a_refused_one(monkeypatch):
  """A peer that answered and now does not: with patience P it is dead
  only after P seconds without an answer, unless its host refuses the
  connection (its process is gone); without patience, at once."""
  results = {'10.77.0.1:2222': ANSWERED, '10.77.0.2:2222': ANSWERED}
  _fake_probes(monkeypatch, results)
  monitor = liveness.Monitor(SPEC, 10.0)
  now = [1000.0]
  monkeypatch.setattr(liveness.time, 'time', lambda: now[0])
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
      ('worker:0', '10.77.0.2:2222', 'stopped answering')]
  # A peer that said it finished is not dead.
  assert monitor.dead(tasks, lambda name: name == 'worker:0', 5.0) == []


def test_watcher_probes_beside_the_steps_and_raises_between_them(
    monkeypatch, listener):
  """An asynchronous worker's Watcher: while the peer answers, `check()`
  passes and never waits for a probe; once the peer's port is closed, the
  next `check()` raises naming it."""
  monkeypatch.setattr(liveness, 'PROBE_INTERVAL_SECS', 0.05)
  peer = socket.socket()
  peer.bind(('127.0.0.1', 0))
  peer.listen(4)
  address = '127.0.0.1:%d' % peer.getsockname()[1]
  stop = threading.Event()

  def answer():
    while not stop.is_set():
      try:
        conn, _ = peer.accept()
      except OSError:
        return
      conn.recv(64)
      conn.sendall(b'\x00' * 9)
      conn.close()

  thread = threading.Thread(target=answer)
  thread.daemon = True
  thread.start()
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
    stop.set()
    peer.close()
    end = time.time() + 5.0
    with pytest.raises(liveness.TaskFailedError) as e:
      while time.time() < end:
        watcher.check()
        time.sleep(0.02)
    assert str(e.value).startswith(
        'dead task: worker:0 at %s (stopped answering); it never said it '
        'finished.' % address), str(e.value)
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
