"""One bool a step that every worker of a ps/worker cluster decides together.

A synchronous step of the strategies that share variables on PS tasks
(parameter_server, staged or not, and distributed_replicated) skips on
every worker or on none when a dynamic loss scale finds an inf or NaN: each
worker's finite flag travels through queues on PS task 0 before any of the
step's updates, and every worker ANDs what it receives with its own. The
queues carry the flags as the host's `add_sync_queues_and_barrier` carries
its tokens: one FIFOQueue a worker, shared by name across the workers'
graphs; each worker puts its flag into every other worker's queue and takes
one flag of each other worker out of its own. That take waits for every
other worker's flag, so it is also a barrier: nothing downstream of the
decision (every update of a gated step) runs before every worker put its
flag, and whatever a flag's put waits for.

With the step-end barrier of a synchronous harness (tf_cnn_benchmarks', the
benchmark's) a worker's queue holds the flags of one step at a time: a
worker takes its step-t flags before its step-end token, and no worker puts
a step-(t+1) flag before every step-end token of step t.
"""

from variable_mgr.compat import tf

# Where the queues and the shared loss-scale state live (the global step of
# tf_cnn_benchmarks' clusters lives there too).
PS_DEVICE = '/job:ps/replica:0/task:0/cpu:0'


def all_workers_true(flag, num_workers, task_index, name, device,
                     wait_for=()):
  """A bool scalar on `device`: `flag` (this worker's) and every other
  worker's flag of the same step are all true.

  Args:
    flag: bool scalar, this worker's.
    num_workers: the workers of the cluster (every one builds the same
      exchange under the same `name`).
    task_index: this worker.
    name: the queues' shared name prefix.
    device: where the decision is made (the worker's CPU).
    wait_for: ops this worker's puts run after (a control dependency): what
      every other worker may rely on having run when it learns the
      decision.
  """
  if num_workers == 1:
    return flag
  with tf.name_scope(name):
    with tf.device(PS_DEVICE):
      queues = [tf.FIFOQueue(num_workers, [tf.bool], shapes=[[]],
                             shared_name='%s_%d' % (name, k),
                             name='queue_%d' % k)
                for k in range(num_workers)]
      with tf.control_dependencies(list(wait_for)):
        puts = [queue.enqueue(flag) for k, queue in enumerate(queues)
                if k != task_index]
      # The take runs after this worker's own puts, so that a worker that
      # fetches only the decision still hands its flag to the others.
      with tf.control_dependencies(puts):
        others = queues[task_index].dequeue_many(num_workers - 1)
    with tf.device(device):
      return tf.logical_and(flag, tf.reduce_all(others), name='decision')
