"""--variable_update=collective_all_reduce: between-graph all-reduce across
the workers of a cluster with TensorFlow's collective ops.

Every worker builds its own graph (between-graph replication) and keeps a
copy of the variables a tower, under `v<d>/` on the tower's device, as
global variables of its own graph: each worker initialises its own copies.
No variable lives on a PS task; the strategy reads no `ps_hosts`.

A step, in two levels (`worker_hierarchy`): gradient i of a worker's towers
is summed on the worker's first tower's device, that sum goes into one
collective all-reduce (`CollectiveReduce`, merge 'Add') in a group of
`num_workers` members, one a worker, and the result is handed to every tower
of the worker, which applies it to its own copy. So each host link carries
a ring over the workers, 2 (K-1)/K of the gradients' bytes each way, however
many towers a worker has; with one tower a worker the first level is empty
(the gradient goes into the collective as it is), and with one worker the
second is (no collective). Between the two levels the worker's sums travel
in buckets of at most `bucket_bytes` (`configure_buckets`), filled in the
order the backward pass produces the gradients, one collective a bucket
(`gradient_buckets`).
The default reduction is the mean over all the towers of all the
workers (`reduction='sum'` adds them up), so with K workers of T towers one
step is `w -= lr * (1 / (K T)) sum_k sum_t g_kt(w)`: the gradient of the
global batch's mean loss, as if one machine held every tower.

The post-init ops broadcast tower 0 of worker 0 (`v0/` of the chief, just
initialised or restored) to tower 0 of every worker (`CollectiveBcastSend`
on the chief's tower 0, `CollectiveBcastRecv` on the others'), and each
worker assigns the value sent or received to its other towers, so that
every copy starts equal and stays equal. Every worker must run its
post-init ops: a broadcast completes only when the whole group has joined.

Collective keys are constants of the graph's build order, so that workers
building the same model get matching keys without talking to each other:

* group key `GROUP_KEY` for the group of the workers (one member a worker,
  on its first tower's device): the only group, every collective of the
  strategy is in it;
* instance key `GRADIENT_INSTANCE_KEY_BASE + i` for the all-reduce of the
  bucket whose first (grad, var) pair in the towers' list is the i-th (with
  `bucket_bytes=0`, of the i-th pair alone; pairs whose gradient is None
  have none);
* instance key `BROADCAST_INSTANCE_KEY_BASE + j` for the broadcast of the
  j-th variable of tower 0, in the order of the names without `v0/`.

So every worker must build the same model with the same number of towers,
and a graph holds one such manager (its keys would collide with a second
one's). Gradients are summed in their own dtype unless `accumulation_dtype`
widens float16 ones (the worker's sum as well as the collective); sparse
gradients are made dense first, on the worker's first tower. On TensorFlow
releases whose collectives lack half (1.15), float16 gradients and variables
travel as float32 and come back as float16; a gradient with no device gets an
identity on its tower's device (see `compat.collective_all_reduce`).

The group's devices find each other through the collective group leader:
every server and session of the cluster needs
`config.experimental.collective_group_leader =
'/job:worker/replica:0/task:0'` (see `set_collective_group_leader`).
"""

from variable_mgr import base
from variable_mgr import compat
from variable_mgr import errors
from variable_mgr import interface
from variable_mgr.compat import tf
from variable_mgr.strategies import _replicas
from variable_mgr.strategies import gradient_buckets
from variable_mgr.strategies import worker_hierarchy

GROUP_KEY = 1
GRADIENT_INSTANCE_KEY_BASE = 1
BROADCAST_INSTANCE_KEY_BASE = 1000000
# The all-reduce of the inf/NaN check (dynamic loss scale), once a step.
FINITE_INSTANCE_KEY = 2000000
# The all-reduce that runs in every gated step (see `_gated_step_ops`).
STEP_SYNC_INSTANCE_KEY = 1999999
# The broadcast of the loss-scale state (chief's, initialised or restored).
LOSS_SCALE_INSTANCE_KEY_BASE = 2000001
GROUP_LEADER = '/job:worker/replica:0/task:0'


def set_collective_group_leader(config):
  """Names worker 0 as the collective group leader in a ConfigProto
  (of a server or a session); returns `config`."""
  config.experimental.collective_group_leader = GROUP_LEADER
  return config


class VariableMgrCollectiveAllReduce(gradient_buckets.Bucketed,
                                     _replicas.TowerCopiesMgr):
  """See the module docstring.

  The host needs `cluster` (a tf.train.ClusterSpec with a "worker" job),
  `task_index` (this worker) and `num_workers`, and tower devices on this
  worker's task (`/job:worker/replica:0/task:<task_index>/...`), as
  `variable_mgr.ClusterBenchmarkCnn` gives them.

  Raises:
    MissingClusterError: the host has no cluster, or one without a worker
      job.
    InterfaceError: a tower device that is not on this worker's task, or a
      `task_index`/`num_workers` the cluster disagrees with.
  """

  required_attributes = interface.LOCAL_ATTRIBUTES + (
      'cluster', 'task_index', 'num_workers')

  def _check_config(self):
    host = self.benchmark_cnn
    cluster = host.cluster
    jobs = sorted(cluster.jobs) if cluster is not None else None
    if cluster is None or 'worker' not in jobs:
      raise errors.MissingClusterError(
          'collective_all_reduce all-reduces across the workers of a '
          'cluster, but the host has cluster=%r: give it a '
          'tf.train.ClusterSpec with a "worker" job (variable_mgr.'
          'ClusterBenchmarkCnn), or on one machine use replicated (with '
          'all_reduce_spec=\'collective\' for collective ops).' % (jobs,))
    workers = len(cluster.job_tasks('worker'))
    if host.num_workers != workers:
      raise errors.InterfaceError(
          'num_workers=%r but the cluster\'s worker job has %d tasks: they '
          'must agree.' % (host.num_workers, workers))
    if not 0 <= host.task_index < workers:
      raise errors.InterfaceError(
          'task_index=%r: the cluster has %d workers (0..%d).' %
          (host.task_index, workers, workers - 1))
    for device in host.raw_devices:
      spec = tf.DeviceSpec.from_string(device)
      if spec.job != 'worker' or spec.task != host.task_index:
        raise errors.InterfaceError(
            'tower device %r is not on this worker\'s task: collective '
            'all-reduce needs devices that name it, such as '
            '\'/job:worker/replica:0/task:%d/cpu:0\'.' %
            (device, host.task_index))

  @property
  def group_size(self):
    """Members of every collective: one a worker (the worker's first
    tower's device), its towers summed there first (see
    `worker_hierarchy`)."""
    return self.benchmark_cnn.num_workers

  @property
  def cluster_towers(self):
    """Every tower of every worker: what a mean divides by."""
    return self.benchmark_cnn.num_workers * self.num_towers

  @property
  def is_source(self):
    """Whether this worker's tower 0 is the broadcast's source."""
    return self.benchmark_cnn.task_index == 0

  _all_reduce_name = 'collective'

  def _preprocess(self, tower_grads):
    devices = self.benchmark_cnn.raw_devices
    factor = 1.0 / self.cluster_towers if self.use_mean else None
    by_variable = list(zip(*tower_grads))
    sums, dtypes = {}, {}
    with tf.name_scope('collective_all_reduce'):
      for i, pairs in enumerate(by_variable):
        if pairs[0][0] is not None:
          dtypes[i] = pairs[0][0].dtype.base_dtype
          sums[i] = worker_hierarchy.worker_sum(
              [g for g, _ in pairs], devices[0], self.accumulation_dtype)
      reduced = {}
      for bucket in self._buckets(sums):
        reduce_fn = worker_hierarchy.across_workers(
            self.group_size, GROUP_KEY,
            GRADIENT_INSTANCE_KEY_BASE + bucket.key_index, devices[0],
            factor)
        with tf.device(devices[0]):
          values = gradient_buckets.reduce_bucket(
              [sums[i] for i in bucket.indices], reduce_fn)
        for i, value in zip(bucket.indices, values):
          reduced[i] = worker_hierarchy.hand_out(value, dtypes[i], devices)
    result = [[] for _ in devices]
    for i, pairs in enumerate(by_variable):
      for d, (_, v) in enumerate(pairs):
        result[d].append((reduced[i][d] if i in reduced else None, v))
    return devices, result

  def _buckets(self, sums):
    """The buckets of the worker's sums `{index: tensor}`, in sending
    order: the backward pass's with buckets, the towers' without."""
    if self.bucket_bytes:
      order = self._backward_order(sums)
    else:
      order = sorted(sums)
    sizes = dict((i, gradient_buckets.static_bytes(t))
                 for i, t in sums.items())
    carried = dict((i, t.dtype.base_dtype) for i, t in sums.items())
    return gradient_buckets.plan(sizes, carried, order, self.bucket_bytes)

  def _gated_step_ops(self, go):
    """One small all-reduce over the group on every step, also on steps
    whose gradient all-reduces are dead (accumulation micro-steps, skipped
    steps): without a collective that runs in every step, such steps were
    seen to abort the next all-reduce now and then ('Delete called on
    non-empty BufRendezvous', TensorFlow 2.21, loaded machine). One member a
    worker, as the gradients' all-reduces have."""
    if self.group_size == 1:
      return []
    device = self.benchmark_cnn.raw_devices[0]
    with tf.name_scope('collective_step_sync'), tf.device(device):
      value = tf.reshape(tf.cast(go, tf.float32), [1])
      return [compat.collective_all_reduce(
          value, self.group_size, GROUP_KEY, STEP_SYNC_INSTANCE_KEY,
          device).op]

  def _all_towers_finite(self, tower_flags, waits):
    """Each worker counts its non-finite towers on its first tower's
    device, and one collective all-reduce a step adds the workers' counts:
    every worker then takes the same decision."""
    if self.group_size == 1:
      return super(VariableMgrCollectiveAllReduce, self)._all_towers_finite(
          tower_flags, waits)
    devices = self.benchmark_cnn.raw_devices
    with tf.name_scope('collective_finite_check'):
      bad = worker_hierarchy.count_on_first_device(
          [tf.logical_not(flag) for flag in tower_flags], devices)
      total = compat.collective_all_reduce(
          bad, self.group_size, GROUP_KEY, FINITE_INSTANCE_KEY, devices[0])
      with tf.device(self.benchmark_cnn.cpu_device):
        return tf.equal(tf.reduce_sum(total), 0.0)

  def get_post_init_ops(self):
    """Broadcasts worker 0's tower 0 to tower 0 of every worker, which
    hands the value to the worker's other towers, and worker 0's
    loss-scale state (use_fp16) to every worker.

    With one worker there is no broadcast (TensorFlow refuses a group of
    one): tower 0 is copied to the other towers, if any.
    """
    if self.group_size == 1:
      return super(VariableMgrCollectiveAllReduce, self).get_post_init_ops()
    ops = self._broadcast_loss_scale()
    devices = self.benchmark_cnn.raw_devices
    by_name = dict((base.strip_port(v.op.name), v)
                   for v in tf.global_variables())
    names = sorted(base.canonical_name(n) for n in by_name
                   if base.tower_scope_of(n)[1] == 0)
    with tf.name_scope('collective_broadcast'):
      for j, name in enumerate(names):
        copies = []
        for d in range(len(devices)):
          var = by_name.get('v%d/%s' % (d, name))
          if var is None:
            raise errors.ProtocolError(
                'tower %d has no variable %s but tower 0 has: every tower '
                'must build the same model.' % (d, name))
          copies.append(var)
        shape = copies[0].shape
        if not shape.is_fully_defined():
          raise errors.GradientShapeError(
              'variable %s has shape %s: a broadcast needs a fully '
              'defined shape.' % (copies[0].op.name, shape))
        key = BROADCAST_INSTANCE_KEY_BASE + j
        with tf.device(devices[0]):
          if self.is_source:
            value = copies[0].read_value()
            ops.append(compat.collective_broadcast_send(
                value, self.group_size, GROUP_KEY, key, devices[0]).op)
          else:
            value = compat.collective_broadcast_recv(
                shape, copies[0].dtype.base_dtype, self.group_size,
                GROUP_KEY, key, devices[0])
            ops.append(copies[0].assign(value, read_value=False))
        # The worker's other towers take the value tower 0 sent or
        # received, not a read of tower 0's copy: no order between the
        # assigns is needed.
        for var, device in zip(copies[1:], devices[1:]):
          with tf.device(device):
            ops.append(var.assign(value, read_value=False))
    return ops

  def _broadcast_loss_scale(self):
    """Each worker keeps its own loss-scale variables (local variables,
    equal while every step's decision is global); after a restore on the
    chief, the chief's values go to every worker: the chief's tower 0
    sends, tower 0 of every other worker receives and assigns."""
    if self._loss_scale is None:
      return []
    ops = []
    device = self.benchmark_cnn.raw_devices[0]
    with tf.name_scope('collective_broadcast_loss_scale'):
      for j, (_, var) in enumerate(sorted(self._loss_scale.variables.items())):
        key = LOSS_SCALE_INSTANCE_KEY_BASE + j
        with tf.device(device):
          # As float32, which every release's collectives carry (the
          # step count is small).
          if self.is_source:
            ops.append(compat.collective_broadcast_send(
                tf.reshape(tf.cast(var.read_value(), tf.float32), [1]),
                self.group_size, GROUP_KEY, key, device).op)
            continue
          value = compat.collective_broadcast_recv(
              tf.TensorShape([1]), tf.float32, self.group_size, GROUP_KEY,
              key, device)
        with tf.device(var.device):
          ops.append(var.assign(
              tf.cast(tf.reshape(value, []), var.dtype.base_dtype),
              read_value=False))
    return ops
