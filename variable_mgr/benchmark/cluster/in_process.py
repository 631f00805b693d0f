"""A one-machine cluster inside this process, for the distributed strategies.

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


def free_port():
  sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
  try:
    sock.bind(('localhost', 0))
    return sock.getsockname()[1]
  finally:
    sock.close()


class LocalClusterHost(interface.ClusterBenchmarkCnn):
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
    cluster = {'ps': ['localhost:%d' % free_port()],
               'worker': ['localhost:%d' % free_port()]}
    super(LocalClusterHost, self).__init__(cluster, 0, num_towers, device,
                                           local_parameter_device)
    self._servers = []

  def start(self):
    """Starts the PS and worker servers; returns the worker's target."""
    if not self._servers:
      # No GPU device where nothing runs on one: TensorFlow then does not
      # initialise CUDA, whose failure on a machine without a driver it
      # logs as an error line.
      self._servers.append(tf.train.Server(
          self.cluster, job_name='ps', task_index=0,
          config=tf.ConfigProto(device_count={'CPU': 1, 'GPU': 0})))
      config = self.session_config()
      if all(tf.DeviceSpec.from_string(d).device_type.upper() == 'CPU'
             for d in self.raw_devices):
        config.device_count['GPU'] = 0
      self._servers.append(tf.train.Server(
          self.cluster, job_name='worker', task_index=self.task_index,
          config=config))
    return self._servers[-1].target
