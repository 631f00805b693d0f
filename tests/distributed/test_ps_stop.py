"""A PS task stops only once every worker has finished and exited: a
server that stops as soon as the last token is in can cut off the answer
to the worker's call that put it, and that worker then reports the PS dead
after a run that succeeded (seen as "Socket closed" under load). One that
found a worker dead serves on until the other workers have exited. The PS
runs as a task's entry runs it (`cluster.task.run_task`)."""

import socket
import threading
import time

import pytest
import tensorflow as _tf

from variable_mgr.benchmark.cluster import liveness
from variable_mgr.benchmark.cluster import task
from variable_mgr.benchmark.cluster import worker_graph
from variable_mgr.benchmark.flags import command_line as flags_lib
from variable_mgr.benchmark.runs import in_process

tf = _tf.compat.v1


def _taken(error):
  """Whether the PS failed with `error` (None: it did not fail) because its
  port was taken before it bound it (another process may take a port
  picked free)."""
  return error is not None and in_process.PORT_TAKEN in str(error)


def test_the_ps_serves_until_the_finished_worker_has_exited():
  for attempt in range(in_process.START_ATTEMPTS):
    ps_port, worker_port = in_process.free_ports(2)
    # The worker's process, alive: its port accepts connections.
    worker = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    worker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    worker.bind(('127.0.0.1', worker_port))
    worker.listen(8)
    args = flags_lib.parse_task_args(
        ['--job_name', 'ps', '--task_index', '0',
         '--ps_hosts', '127.0.0.1:%d' % ps_port,
         '--worker_hosts', '127.0.0.1:%d' % worker_port,
         '--variable_update', 'parameter_server', '--model', 'trivial',
         '--op_timeout_secs', '30'], environ={})
    returned, lines, raised = [], [], []

    def run(args=args, returned=returned, lines=lines, raised=raised):
      try:
        returned.append(task.run_task(args, {}, log=lines.append))
      except tf.errors.UnknownError as e:
        raised.append(e)

    thread = threading.Thread(target=run)
    thread.daemon = True
    thread.start()
    # Serving, before any session asks it for anything.
    end = time.time() + 30.0
    while thread.is_alive() and not any(' serving at ' in l
                                         for l in lines):
      assert time.time() < end, lines
      time.sleep(0.05)
    if (_taken(raised[0] if raised else None) and
        attempt < in_process.START_ATTEMPTS - 1):
      worker.close()
      continue  # Its port was taken: again, on new ports.
    break
  try:
    assert not raised and thread.is_alive(), (raised, lines)
    graph = tf.Graph()
    with graph.as_default():
      for kind in ('started', 'done'):
        queue, = worker_graph.worker_queues(0, 1, kind)
        token = queue.enqueue(0)
        # Filtered to the PS: the stand-in worker serves no gRPC.
        config = tf.ConfigProto(device_filters=['/job:ps/replica:0/task:0'])
        with tf.Session('grpc://127.0.0.1:%d' % ps_port,
                        config=config) as sess:
          sess.run(token)
    # Every token is in; the worker has not exited: the PS serves on.
    thread.join(8.0)  # Without the wait it stops within about 3 s.
    assert thread.is_alive(), lines
    assert returned == []
    worker.close()  # The worker exits.
    start = time.time()
    thread.join(15.0)
    assert not thread.is_alive(), lines
    assert returned == [0]
    assert time.time() - start < 5.0
    assert lines[-1] == 'ps:0: every worker finished; stopping'
  finally:
    worker.close()


def test_a_ps_that_found_a_worker_dead_waits_for_the_others_alone(
    monkeypatch):
  """Worker 0 answered once and then stayed silent past --op_timeout_secs
  (stopped, its port still open): the PS names it dead and serves on only
  until the other workers have exited (worker 1's port refuses: at once),
  not until the dead one has too."""
  monkeypatch.setattr(liveness, 'PROBE_INTERVAL_SECS', 0.1)
  for attempt in range(in_process.START_ATTEMPTS):
    ps_port, silent_port, gone_port = in_process.free_ports(3)
    silent = '127.0.0.1:%d' % silent_port
    answers = []

    def probe(address, *args, silent=silent, answers=answers):
      del args
      if address != silent:
        return liveness.REFUSED
      answers.append(address)
      return liveness.ANSWERED if len(answers) == 1 else liveness.SILENT

    monkeypatch.setattr(liveness, 'probe', probe)
    monkeypatch.setattr(liveness, 'connect', lambda address, *args, s=silent: (
        liveness.CONNECTED if address == s else liveness.REFUSED))
    args = flags_lib.parse_task_args(
        ['--job_name', 'ps', '--task_index', '0',
         '--ps_hosts', '127.0.0.1:%d' % ps_port,
         '--worker_hosts', '%s,127.0.0.1:%d' % (silent, gone_port),
         '--variable_update', 'parameter_server', '--model', 'trivial',
         '--op_timeout_secs', '1'], environ={})
    lines = []
    try:
      with pytest.raises(liveness.TaskFailedError) as info:
        task.run_task(args, {}, log=lines.append)
      break
    except tf.errors.UnknownError as e:
      if not _taken(e) or attempt == in_process.START_ATTEMPTS - 1:
        raise  # Else its port was taken: again, on new ports.
  assert info.value.dead_tasks == ['worker:0']
  assert lines[-1] == 'ps:0: every other worker has exited: stopping now'
  assert lines[-2].startswith('ps:0: stopping in 1.1s: dead task: worker:0 '
                              'at %s (stopped answering)' % silent), lines
