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

# TensorFlow's error when a server's port is taken.
PORT_TAKEN = 'Could not start gRPC server'
# Clusters tried, each on new ports, before a taken port is an error.
START_ATTEMPTS = 3
LOOPBACK = '127.0.0.1'


def free_ports(count):
  """`count` distinct free TCP ports of 127.0.0.1."""
  sockets = []
  try:
    for _ in range(count):
      sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
      sock.bind((LOOPBACK, 0))
      sockets.append(sock)
    return [s.getsockname()[1] for s in sockets]
  finally:
    for sock in sockets:
      sock.close()


def start_servers(job_sizes, config_of):
  """Starts a server for every task of a cluster inside this process, on
  free ports of 127.0.0.1.

  A port is free when it is picked and bound by the server only later, so
  another process may take it in between (two suites, or a benchmark,
  running side by side); TensorFlow then refuses the server with "Could
  not start gRPC server", and the whole cluster is started again on new
  ports, up to START_ATTEMPTS times. Servers started before the refusal
  keep running on their ports (TensorFlow cannot stop an in-process
  server), unused.

  Args:
    job_sizes: `[(job name, tasks)]`, in the order the servers start.
    config_of: `config_of(job, task_index)`, the server's ConfigProto.

  Returns:
    `(cluster dict, {job: [servers]})`.

  Raises:
    tf.errors.UnknownError: a port taken START_ATTEMPTS times, or
      another failure to start a server.
  """
  for attempt in range(START_ATTEMPTS):
    ports = iter(free_ports(sum(n for _, n in job_sizes)))
    cluster = dict((job, ['127.0.0.1:%d' % next(ports) for _ in range(n)])
                   for job, n in job_sizes)
    try:
      servers = dict((job, [tf.train.Server(cluster, job_name=job,
                                            task_index=k,
                                            config=config_of(job, k))
                            for k in range(n)])
                     for job, n in job_sizes)
      return cluster, servers
    except tf.errors.UnknownError as e:
      if PORT_TAKEN not in str(e) or attempt == START_ATTEMPTS - 1:
        raise


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
    # Ports for the host's cluster spec until `start()` starts the servers
    # on ports of their own (no device name holds a port).
    ps_port, worker_port = free_ports(2)
    cluster = {'ps': ['127.0.0.1:%d' % ps_port],
               'worker': ['127.0.0.1:%d' % worker_port]}
    super(LocalClusterHost, self).__init__(cluster, 0, num_towers, device,
                                           local_parameter_device)
    self._servers = []

  def start(self):
    """Starts the PS and worker servers; returns the worker's target. The
    ports may differ from those the host was made with (`start_servers`);
    no device name holds a port, so a graph already built still runs."""
    if not self._servers:
      # No GPU device where nothing runs on one: TensorFlow then does not
      # initialise CUDA, whose failure on a machine without a driver it
      # logs as an error line.
      config = self.session_config()
      if all(tf.DeviceSpec.from_string(d).device_type.upper() == 'CPU'
             for d in self.raw_devices):
        config.device_count['GPU'] = 0
      ps_config = tf.ConfigProto(device_count={'CPU': 1, 'GPU': 0})
      cluster, servers = start_servers(
          [('ps', 1), ('worker', 1)],
          lambda job, _: ps_config if job == 'ps' else config)
      self.cluster = tf.train.ClusterSpec(cluster)
      self._servers = servers['ps'] + servers['worker']
    return self._servers[-1].target
