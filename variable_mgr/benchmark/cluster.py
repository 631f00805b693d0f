"""A one-machine cluster for the distributed strategies.

`distributed_replicated` keeps its master variables on parameter-server
tasks, so it needs a `tf.train.ClusterSpec`. `LocalClusterHost` starts one PS
task and one worker task as gRPC servers inside this process, on free local
ports, and implements the BenchmarkCnn-like interface for the worker's towers
(virtual CPU devices of the worker task).
"""

import socket

import tensorflow as _tf

from variable_mgr import interface

tf = _tf.compat.v1


def _free_port():
  sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
  try:
    sock.bind(('localhost', 0))
    return sock.getsockname()[1]
  finally:
    sock.close()


class LocalClusterHost(interface.BenchmarkCnnLike):
  """The host interface for the towers of worker 0 of a local cluster.

  The servers start in `start()`, so that a configuration the manager
  refuses costs no server. They live until the process exits (TensorFlow
  has no way to stop an in-process server).

  Args:
    num_towers: towers on the worker, at least 1.
    device: `'cpu'` or `'gpu'`: the towers' device type.
    local_parameter_device: `'cpu'` or `'gpu'`.

  Raises:
    TowerCountError, InvalidOptionError: as `LocalBenchmarkCnn`.
  """

  def __init__(self, num_towers, device='cpu', local_parameter_device='cpu'):
    # Validates the arguments exactly as the local host does.
    interface.LocalBenchmarkCnn(num_towers, device, local_parameter_device)
    self.task_index = 0
    self.num_workers = 1
    self.worker_prefix = '/job:worker/replica:0/task:0'
    self.ps_hosts = ['localhost:%d' % _free_port()]
    self.worker_hosts = ['localhost:%d' % _free_port()]
    self.cluster = tf.train.ClusterSpec({'ps': self.ps_hosts,
                                         'worker': self.worker_hosts})
    self.raw_devices = ['%s/%s:%d' % (self.worker_prefix, device, i)
                        for i in range(num_towers)]
    self.devices = list(self.raw_devices)
    self.cpu_device = self.worker_prefix + '/cpu:0'
    self.param_server_device = tf.train.replica_device_setter(
        worker_device=self.cpu_device, cluster=self.cluster)
    self.local_parameter_device_flag = local_parameter_device
    self.num_gpus = num_towers
    self._device = device
    self._sync_queue_counter = 0
    self._servers = []

  def session_config(self):
    """The worker's config: one virtual CPU device per CPU tower."""
    cpus = self.num_gpus if self._device == 'cpu' else 1
    return tf.ConfigProto(device_count={'CPU': cpus})

  def start(self):
    """Starts the PS and worker servers; returns the worker's target."""
    if not self._servers:
      self._servers.append(tf.train.Server(
          self.cluster, job_name='ps', task_index=0,
          config=tf.ConfigProto(device_count={'CPU': 1})))
      self._servers.append(tf.train.Server(
          self.cluster, job_name='worker', task_index=self.task_index,
          config=self.session_config()))
    return self._servers[-1].target

  def add_sync_queues_and_barrier(self, name_prefix, enqueue_after_list):
    """An op that completes once every worker ran `enqueue_after_list`.

    tf_cnn_benchmarks' barrier: one token queue per worker on a PS task;
    each worker puts a token in every other worker's queue, then takes one
    token per other worker from its own.
    """
    self._sync_queue_counter += 1
    with tf.device('/job:ps/task:%d/cpu:0' %
                   (self._sync_queue_counter % len(self.ps_hosts))):
      queues = [tf.FIFOQueue(self.num_workers, [tf.bool], shapes=[[]],
                             shared_name='%s%s' % (name_prefix, i))
                for i in range(self.num_workers)]
      queue_ops = []
      token = tf.constant(False)
      with tf.control_dependencies(enqueue_after_list):
        for i, queue in enumerate(queues):
          if i == self.task_index:
            queue_ops.append(tf.no_op())
          else:
            queue_ops.append(queue.enqueue(token))
      if self.num_workers > 1:
        queue_ops.append(
            queues[self.task_index].dequeue_many(len(queues) - 1))
      return tf.group(*queue_ops)
