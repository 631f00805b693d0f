"""A PS task stops only once every worker has finished and exited: a
server that stops as soon as the last token is in can cut off the answer
to the worker's call that put it, and that worker then reports the PS dead
after a run that succeeded (seen as "Socket closed" under load). The PS
runs as a task's entry runs it (`cluster.task.run_task`)."""

import socket
import threading
import time

import tensorflow as _tf

from variable_mgr.benchmark.cluster import task
from variable_mgr.benchmark.cluster import worker_graph
from variable_mgr.benchmark.flags import command_line as flags_lib
from variable_mgr.benchmark.runs import in_process

tf = _tf.compat.v1


def test_the_ps_serves_until_the_finished_worker_has_exited():
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
  returned = []
  lines = []
  thread = threading.Thread(target=lambda: returned.append(
      task.run_task(args, {}, log=lines.append)))
  thread.daemon = True
  thread.start()
  try:
    # Serving, before any session asks it for anything.
    end = time.time() + 30.0
    while not any(' serving at ' in l for l in lines):
      assert thread.is_alive() and time.time() < end, lines
      time.sleep(0.05)
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
