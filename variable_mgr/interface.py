"""The BenchmarkCnn-like host interface, written down once.

A variable manager reads exactly these attributes off the object a harness
hands it (tf_cnn_benchmarks' `BenchmarkCnn` in the original), and nothing
else:

| attribute                     | used by                                    |
|-------------------------------|--------------------------------------------|
| `raw_devices`                 | every strategy: one device string a tower  |
| `devices`                     | set by the harness to `mgr.get_devices()`  |
| `cpu_device`                  | distributed strategies, staged PS          |
| `param_server_device`         | PS strategies: where gradients are applied |
| `local_parameter_device_flag` | `'cpu'` or `'gpu'`: where local PS lives   |
| `num_gpus`                    | the number of towers                       |
| `ps_hosts`                    | distributed: one entry a PS task           |
| `cluster`                     | distributed: a `tf.train.ClusterSpec`      |
| `add_sync_queues_and_barrier` | distributed_replicated: a worker barrier   |
| `num_workers`, `task_index`   | collective_all_reduce; a dynamic loss      |
|                               | scale on several workers of the PS ones    |
| `cross_replica_sync`          | parameter_server: a dynamic loss scale on  |
|                               | several workers (synchronous steps or not) |

`LocalBenchmarkCnn` implements it for the devices of one process, so the
library can be driven without tf_cnn_benchmarks; `ClusterBenchmarkCnn` for
one worker of a cluster (between-graph strategies), `ControllerBenchmarkCnn`
for the controller of a cluster, whose one graph holds every worker's towers
(distributed_all_reduce).
"""

from variable_mgr import errors

# Attributes every strategy reads (distributed ones read more, checked there).
LOCAL_ATTRIBUTES = ('raw_devices', 'cpu_device', 'param_server_device',
                    'local_parameter_device_flag', 'num_gpus')
DISTRIBUTED_ATTRIBUTES = LOCAL_ATTRIBUTES + ('ps_hosts', 'cluster')
PARAMETER_DEVICES = ('cpu', 'gpu')


def _documentation_only(method):
  """Marks a method of BenchmarkCnnLike that only documents the interface
  (it raises NotImplementedError): `check_interface` does not count it as
  provided."""
  method.documentation_only = True
  return method


class BenchmarkCnnLike(object):
  """Documentation of the host interface (Python 3.7 has no typing.Protocol).

  Any object with these attributes works; it need not derive from this class.

  Attributes:
    raw_devices: list of tower device strings, e.g. `['/gpu:0', '/gpu:1']` or
      `['/job:worker/task:0/cpu:1']`, one per tower, all different.
    devices: what `mgr.get_devices()` returned (strings or device
      functions); the harness sets it before building towers.
    cpu_device: the worker's CPU, e.g. `'/cpu:0'`.
    param_server_device: where a parameter-server strategy applies updates:
      a device string locally, a device function in a cluster.
    local_parameter_device_flag: `'cpu'` or `'gpu'`.
    num_gpus: the number of towers, `len(raw_devices)`.
    ps_hosts: list of parameter-server addresses (only its length is used).
    cluster: a `tf.train.ClusterSpec`, or None for a local job.
  """

  raw_devices = ()
  devices = ()
  cpu_device = '/cpu:0'
  param_server_device = '/cpu:0'
  local_parameter_device_flag = 'cpu'
  num_gpus = 0
  ps_hosts = ()
  cluster = None

  @_documentation_only
  def add_sync_queues_and_barrier(self, name_prefix, enqueue_after_list):
    """Returns an op that completes once every worker ran `enqueue_after_list`.

    Only `distributed_replicated` calls it. Here it only documents the
    method: a host must implement it (`ClusterBenchmarkCnn` does); one that
    inherits this stub counts as lacking it.
    """
    raise NotImplementedError

  def session_config(self):
    """A ConfigProto with a virtual CPU device a tower (CPU towers need
    them). Soft placement stays off so that a misplaced op is an error."""
    from variable_mgr.compat import tf  # pylint: disable=g-import-not-at-top
    return tf.ConfigProto(device_count={'CPU': max(1, self.num_gpus)},
                          allow_soft_placement=False)



class LocalBenchmarkCnn(BenchmarkCnnLike):
  """The host interface for towers on the devices of one process.

  Args:
    num_towers: how many towers (model copies) to build, at least 1.
    device: `'cpu'` or `'gpu'`: the device type of the towers. CPU towers
      need `ConfigProto(device_count={'CPU': num_towers})` in the session:
      pass `config=host.session_config()` (see examples/train_towers.py).
    local_parameter_device: `'cpu'` or `'gpu'`: where parameter-server
      strategies keep the variables: on `/cpu:0`, or spread over the tower
      devices (GPUs in practice; virtual CPUs in tests), updates applied on
      the first tower's device.

  Raises:
    TowerCountError: `num_towers` is not a positive integer.
    InvalidOptionError: `device` or `local_parameter_device` is not
      `'cpu'` or `'gpu'`.
  """

  def __init__(self, num_towers, device='cpu', local_parameter_device='cpu'):
    if (isinstance(num_towers, bool) or not isinstance(num_towers, int) or
        num_towers < 1):
      raise errors.TowerCountError(
          'num_towers=%r: a job needs at least one tower; pass a positive '
          'integer such as 1 or 4.' % (num_towers,))
    for name, value in (('device', device),
                        ('local_parameter_device', local_parameter_device)):
      if value not in PARAMETER_DEVICES:
        raise errors.InvalidOptionError(
            '%s=%r: must be one of %s.' % (name, value,
                                           ', '.join(PARAMETER_DEVICES)))
    self.raw_devices = ['/%s:%d' % (device, i) for i in range(num_towers)]
    self.devices = list(self.raw_devices)
    self.cpu_device = '/cpu:0'
    self.local_parameter_device_flag = local_parameter_device
    if local_parameter_device == 'cpu':
      self.param_server_device = self.cpu_device
    else:
      self.param_server_device = self.raw_devices[0]
    self.num_gpus = num_towers
    self.ps_hosts = []
    self.cluster = None


def _is_documentation_only(value):
  """Whether `value` is (a bound) BenchmarkCnnLike stub: a bound method
  forwards the marker of its function."""
  return getattr(value, 'documentation_only', False) is True


def check_interface(benchmark_cnn, attributes):
  """Raises InterfaceError unless `benchmark_cnn` has every attribute.

  A method of a cluster host inherited from BenchmarkCnnLike, which only
  documents it (it raises NotImplementedError), does not count: a host that
  relied on it would pass construction and fail in the middle of building
  the graph.
  """
  name = type(benchmark_cnn).__name__
  missing = [a for a in attributes if not hasattr(benchmark_cnn, a)]
  if missing:
    raise errors.InterfaceError(
        '%s lacks %s: a variable manager reads these attributes off its '
        'host object (see variable_mgr.interface.BenchmarkCnnLike); set them '
        'or build the host with variable_mgr.LocalBenchmarkCnn (or '
        'variable_mgr.ClusterBenchmarkCnn for a cluster).' %
        (name, ', '.join(missing)))
  flag = getattr(benchmark_cnn, 'local_parameter_device_flag', 'cpu')
  if ('local_parameter_device_flag' in attributes and
      flag not in PARAMETER_DEVICES):
    raise errors.InterfaceError(
        '%s has local_parameter_device_flag=%r: it must be one of %s (in '
        'lower case), where a local parameter server keeps the variables; '
        'set it so, or build the host with variable_mgr.LocalBenchmarkCnn.'
        % (name, flag, ', '.join(repr(d) for d in PARAMETER_DEVICES)))
  if getattr(benchmark_cnn, 'cluster', None) is None:
    # The documented-only methods are a cluster host's; the strategy refuses
    # a host without a cluster itself, with a message about the cluster.
    return
  stubs = [a for a in attributes
           if _is_documentation_only(getattr(benchmark_cnn, a))]
  if stubs:
    raise errors.InterfaceError(
        '%s inherits %s from BenchmarkCnnLike, where %s only documented '
        '(calling it raises NotImplementedError): a variable manager calls '
        'it while building the graph. Implement it in %s, or build the host '
        'with variable_mgr.ClusterBenchmarkCnn, which does.' %
        (name, ', '.join(stubs), 'it is' if len(stubs) == 1 else 'they are',
         name))


class ClusterBenchmarkCnn(BenchmarkCnnLike):
  """The host interface for one worker task of a `ps`/`worker` cluster.

  Args:
    cluster: a `tf.train.ClusterSpec`, or a dict `{'ps': [...], 'worker':
      [...]}` of 'host:port' strings.
    task_index: this worker's index in the `worker` job.
    num_towers: towers on this worker.
    device: `'cpu'` or `'gpu'`: the towers' device type.
    local_parameter_device: `'cpu'` or `'gpu'` (where cached copies live).
    cross_replica_sync: whether the workers run each step together (the
      harness's barriers: tf_cnn_benchmarks' `--cross_replica_sync`); a
      dynamic loss scale under parameter_server then skips a step on every
      worker or none (the harness must end each step with a barrier across
      the workers), else each worker its own.

  Raises:
    MissingClusterError: the cluster has no `ps` or no `worker` job.
    TowerCountError: `num_towers` is not a positive integer, or
      `task_index` is not a worker of the cluster.
    InvalidOptionError: a bad `device` or `local_parameter_device`.
  """

  def __init__(self, cluster, task_index, num_towers, device='cpu',
               local_parameter_device='cpu', cross_replica_sync=True):
    from variable_mgr import compat  # pylint: disable=g-import-not-at-top
    from variable_mgr import placement  # pylint: disable=g-import-not-at-top
    tf = compat.tf
    local = LocalBenchmarkCnn(num_towers, device, local_parameter_device)
    if not isinstance(cluster, tf.train.ClusterSpec):
      cluster = tf.train.ClusterSpec(cluster)
    jobs = set(cluster.jobs)
    if not {'ps', 'worker'} <= jobs:
      raise errors.MissingClusterError(
          'cluster jobs %s: a cluster needs a "ps" and a "worker" job, e.g. '
          '{"ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223"]}.' %
          sorted(jobs))
    num_workers = len(cluster.job_tasks('worker'))
    if not 0 <= task_index < num_workers:
      raise errors.TowerCountError(
          'task_index=%r: the cluster has %d workers (0..%d).' %
          (task_index, num_workers, num_workers - 1))
    self.cluster = cluster
    self.task_index = task_index
    self.num_workers = num_workers
    self.cross_replica_sync = cross_replica_sync
    self.ps_hosts = cluster.job_tasks('ps')
    self.num_gpus = num_towers
    self.local_parameter_device_flag = local_parameter_device
    worker_prefix = '/job:worker/replica:0/task:%d' % task_index
    self.cpu_device = worker_prefix + '/cpu:0'
    self.raw_devices = [worker_prefix + d for d in local.raw_devices]
    self.devices = list(self.raw_devices)
    self.param_server_device = tf.train.replica_device_setter(
        worker_device=self.cpu_device, cluster=cluster, ps_ops=compat.ps_ops(),
        ps_strategy=placement.GreedyLoadBalancingStrategy(len(self.ps_hosts)))
    self.sync_queue_devices = ['/job:ps/replica:0/task:%d/cpu:0' % i
                               for i in range(len(self.ps_hosts))]
    self._sync_queue_counter = 0

  def add_sync_queues_and_barrier(self, name_prefix, enqueue_after_list):
    """An op that completes once every worker ran `enqueue_after_list`.

    One FIFO queue a worker, shared by name across workers: each worker puts
    a token into every other worker's queue, then takes one token from each
    other worker out of its own.
    """
    from variable_mgr.compat import tf  # pylint: disable=g-import-not-at-top
    self._sync_queue_counter += 1
    device = self.sync_queue_devices[
        self._sync_queue_counter % len(self.sync_queue_devices)]
    with tf.device(device):
      queues = [tf.FIFOQueue(self.num_workers, [tf.bool], shapes=[[]],
                             shared_name='%s%s' % (name_prefix, i))
                for i in range(self.num_workers)]
      token = tf.zeros([], tf.bool)  # its value carries nothing
      ops = []
      with tf.control_dependencies(enqueue_after_list):
        for i, queue in enumerate(queues):
          if i != self.task_index:
            ops.append(queue.enqueue(token))
      if self.num_workers > 1:
        ops.append(queues[self.task_index].dequeue_many(self.num_workers - 1))
      else:
        with tf.control_dependencies(enqueue_after_list):
          ops.append(tf.no_op())
      return tf.group(*ops)


class ControllerBenchmarkCnn(BenchmarkCnnLike):
  """The host interface of a cluster's controller: one graph over the towers
  of every worker (in-graph replication, `distributed_all_reduce`).

  Tower `k * towers_per_worker + d` is tower d of worker k, on
  `/job:worker/replica:0/task:k/<device>:d`; the controller runs no tower
  itself (tf_cnn_benchmarks' `--job_name=controller`).

  Args:
    cluster: a `tf.train.ClusterSpec`, or a dict `{'worker': [...]}` of
      'host:port' strings (a "ps" job may be there; nothing reads it).
    towers_per_worker: towers on each worker, at least 1.
    device: `'cpu'` or `'gpu'`: the towers' device type.
    local_parameter_device: `'cpu'` or `'gpu'`.

  Attributes:
    worker_count: the workers of the cluster (not `num_workers`, which
      names the workers of a between-graph worker's host).
    towers_per_worker: as given; `num_gpus` is `worker_count *
      towers_per_worker`, the towers of the whole graph.
    cpu_device, param_server_device: worker 0's CPU.

  Raises:
    MissingClusterError: the cluster has no "worker" job.
    TowerCountError, InvalidOptionError: as `LocalBenchmarkCnn`.
  """

  def __init__(self, cluster, towers_per_worker, device='cpu',
               local_parameter_device='cpu'):
    from variable_mgr import compat  # pylint: disable=g-import-not-at-top
    tf = compat.tf
    local = LocalBenchmarkCnn(towers_per_worker, device,
                              local_parameter_device)
    if not isinstance(cluster, tf.train.ClusterSpec):
      cluster = tf.train.ClusterSpec(cluster)
    if 'worker' not in cluster.jobs:
      raise errors.MissingClusterError(
          'cluster jobs %s: a controller drives the "worker" job of a '
          'cluster, e.g. {"worker": ["10.0.0.2:2222", "10.0.0.3:2222"]}.' %
          sorted(cluster.jobs))
    self.cluster = cluster
    self.worker_count = len(cluster.job_tasks('worker'))
    self.towers_per_worker = towers_per_worker
    self.ps_hosts = (cluster.job_tasks('ps') if 'ps' in cluster.jobs
                     else [])
    self.local_parameter_device_flag = local_parameter_device
    prefixes = ['/job:worker/replica:0/task:%d' % k
                for k in range(self.worker_count)]
    self.raw_devices = [prefix + d for prefix in prefixes
                        for d in local.raw_devices]
    self.devices = list(self.raw_devices)
    self.num_gpus = len(self.raw_devices)
    self.cpu_device = prefixes[0] + '/cpu:0'
    self.param_server_device = self.cpu_device

  def worker_devices(self, task_index):
    """The tower devices of worker `task_index`."""
    start = task_index * self.towers_per_worker
    return self.raw_devices[start:start + self.towers_per_worker]
