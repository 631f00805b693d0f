"""`ClusterBenchmarkCnn.add_sync_queues_and_barrier` waits for every worker.

The barrier's queues live on the PS tasks in a cluster; here both workers'
barriers are built in one graph with their queue device set to the local
CPU (the queues are shared by name, as on a PS task), so one session runs
either worker's side. A worker's barrier alone does not complete (worker 1
has not put its token into worker 0's queue); both together do, with 2 and
with 3 workers, and again in the next round. On a cluster of several PS
tasks, successive barriers take turns over them (tf_cnn_benchmarks' order:
the first on task 1), so that no one task holds every barrier's queues.
"""

import threading

import pytest
import tensorflow as tf

import variable_mgr

tf1 = tf.compat.v1

# Long enough for a barrier that does not wait to complete, on a loaded
# machine; a waiting barrier never completes alone, whatever the limit.
ALONE_MS = 2000


def _cluster(workers):
  return {'ps': ['127.0.0.1:1'],
          'worker': ['127.0.0.1:%d' % (2 + i) for i in range(workers)]}


def _barriers(workers):
  barriers = []
  for task in range(workers):
    host = variable_mgr.ClusterBenchmarkCnn(_cluster(workers), task, 1)
    host.sync_queue_devices = ['/cpu:0']
    barriers.append(host.add_sync_queues_and_barrier('sync_', []))
  return barriers


def _run_together(sess, barriers):
  errors = []

  def run(op):
    try:
      sess.run(op, options=tf1.RunOptions(timeout_in_ms=20000))
    except tf.errors.OpError as e:  # pragma: no cover - the failure's text.
      errors.append(e)

  threads = [threading.Thread(target=run, args=(b,)) for b in barriers]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  assert not errors, errors


@pytest.mark.parametrize('workers', [2, 3])
def test_a_worker_waits_for_the_others(workers):
  with tf.Graph().as_default():
    barriers = _barriers(workers)
    config = tf1.ConfigProto(inter_op_parallelism_threads=2 * workers + 2)
    with tf1.Session(config=config) as sess:
      _run_together(sess, barriers)  # Every worker there: all complete.
      _run_together(sess, barriers)  # And the next round as well.
    with tf1.Session(config=config) as sess:
      with pytest.raises(tf.errors.DeadlineExceededError):
        sess.run(barriers[0],
                 options=tf1.RunOptions(timeout_in_ms=ALONE_MS))


def test_successive_barriers_take_turns_over_the_ps_tasks():
  cluster = {'ps': ['127.0.0.1:%d' % (1 + i) for i in range(3)],
             'worker': ['127.0.0.1:9', '127.0.0.1:10']}
  with tf.Graph().as_default() as graph:
    host = variable_mgr.ClusterBenchmarkCnn(cluster, 0, 1)
    for round_ in range(5):
      host.add_sync_queues_and_barrier('round%d_' % round_, [])
    queues = [op for op in graph.get_operations()
              if op.type in ('FIFOQueue', 'FIFOQueueV2')]
  tasks = {}
  for op in queues:
    name = op.get_attr('shared_name').decode()  # 'round<r>_<worker>'
    round_ = int(name[len('round'):name.index('_')])
    tasks.setdefault(round_, set()).add(
        tf.DeviceSpec.from_string(op.device).task)
  # Each round's queues (one a worker) on one task, the rounds on 1, 2, 0, 1, 2.
  assert tasks == {0: {1}, 1: {2}, 2: {0}, 3: {1}, 4: {2}}
