"""--variable_update=distributed_all_reduce: one graph over every worker of
a cluster (in-graph replication), gradients all-reduced across all of them
as an --all_reduce_spec says.

tf_cnn_benchmarks' single-session mode: a controller builds one graph that
holds a tower on every device of every worker and runs it in one session
on worker 0's server; the workers only serve. Every tower keeps a copy of
the variables under `v<d>/`, d counting over the whole cluster (tower d of
worker k is tower `k * towers_per_worker + d`). It is `replicated`
stretched over the cluster: the same copies, the same post-init copy of
`v0/` to every other tower, the same checkpoints (tower 0, canonical
names), so a checkpoint of one restores under the other and back.

The spec is required and must reach across workers. Its stages group the
towers by worker (`(job, replica, task)` of their devices): in a two-stage
range `inner/outer` the inner stage reduces among each worker's towers and
the outer one across one tower a worker (`nccl/xring`, `pscpu/pscpu`); a
one-stage range (`xring`, `pscpu`) reduces over every tower of the
cluster, a one-stage `pscpu` through CPU 0 of each worker. NCCL runs
between the GPUs of one machine only, so it may be an inner stage and
nothing else. `collective` stages need worker 0 named as the collective
group leader in every worker's server config.

With two workers of one tower each::

    [[A, B],            [[A+C, B+D],
     [C, D]]     ->      [A+C, B+D]]

The default reduction is the sum over every tower of the cluster, as
upstream's and `replicated`'s; `reduction='mean'` divides by the tower
count of the cluster. A step is synchronous by construction: every update
of every worker is in the one step the controller runs.

The gradients go into the spec's algorithm in buckets of at most
`bucket_bytes` (`configure_buckets`; `gradient_buckets`), filled in the
order the backward pass produces them: each tower lays a bucket's
gradients end to end in one buffer on its own device, the algorithm
reduces the buffers as it would the gradients, and each tower cuts its
result back. A bucket waits for its own gradients only, so the first
cross the network while the backward pass goes on. upstream's packing
(`gradient_repacking`, `agg_small_grads_max_bytes`) packs in the towers'
order instead: either turns the default buckets off, and refuses buckets
asked for.
"""

from variable_mgr import aggregation
from variable_mgr import errors
from variable_mgr import interface
from variable_mgr.allreduce import errors as allreduce_errors
from variable_mgr.allreduce import spec as spec_lib
from variable_mgr.compat import tf
from variable_mgr.strategies import gradient_buckets
from variable_mgr.strategies import replicated

SPEC_EXAMPLES = "'xring', 'pscpu/pscpu' or 'nccl/xring' (GPU towers)"


def outer_stages(text):
  """`[(stage, position)]`: the stage of each range of the spec `text`
  that reduces across workers (a one-stage range's only stage, a
  two-stage range's second) and its 0-based position in `text`.

  Raises:
    AllReduceSpecError: `text` breaks the grammar.
  """
  ranges = spec_lib.parse_spec(text)
  fields = text.split(':')
  position = 0
  starts = []
  for field in fields:
    starts.append(position)
    position += len(field) + 1
  result = []
  for r, spec_range in enumerate(ranges):
    parts = fields[2 * r].split('/')
    start = starts[2 * r] + sum(len(p) + 1 for p in parts[:-1])
    result.append((spec_range.stages[-1], start))
  return result


class VariableMgrDistributedAllReduce(gradient_buckets.Bucketed,
                                      replicated.VariableMgrLocalReplicated):
  """See the module docstring.

  The host is a controller's (`variable_mgr.ControllerBenchmarkCnn`): its
  `cluster` has a "worker" job and every tower device names a task of it,
  `/job:worker/replica:0/task:k/...`.

  Args:
    benchmark_cnn: the host object.
    all_reduce_spec: an --all_reduce_spec string (required).
    reduction: 'sum' (default) or 'mean'.
    gradient_repacking, agg_small_grads_max_bytes,
      agg_small_grads_max_group, float16_transfer, accumulation_dtype: as
      `VariableMgrLocalReplicated`.

  Raises:
    MissingClusterError: the host has no cluster, or one without a
      "worker" job.
    InterfaceError: a tower device that names no task of the worker job
      (a host of one machine's devices, such as '/cpu:0').
    MissingAllReduceSpecError: no all_reduce_spec.
    AllReduceSpecError: a spec that breaks the grammar, or whose
      across-workers stage cannot reach across machines (nccl).
    NcclDeviceError, IncompatibleOptionsError, PackingOptionError: as
      `VariableMgrLocalReplicated`.
  """

  default_reduction = 'sum'
  # The relaxed (deferred) all-reduce of `replicated` is not offered here.
  supports_relaxed_consistency = False
  # None: the default, or 0 with upstream's packing (`configure_buckets`).
  bucket_bytes = None
  required_attributes = interface.LOCAL_ATTRIBUTES + ('cluster',)

  def __init__(self, benchmark_cnn, all_reduce_spec=None, reduction=None,
               gradient_repacking=0, agg_small_grads_max_bytes=0,
               agg_small_grads_max_group=10, float16_transfer=False,
               accumulation_dtype=None):
    super(VariableMgrDistributedAllReduce, self).__init__(
        benchmark_cnn, False, reduction=reduction,
        all_reduce_spec=all_reduce_spec,
        gradient_repacking=gradient_repacking,
        agg_small_grads_max_bytes=agg_small_grads_max_bytes,
        agg_small_grads_max_group=agg_small_grads_max_group,
        float16_transfer=float16_transfer,
        accumulation_dtype=accumulation_dtype)

  def _check_config(self):
    self._check_host()
    spec = self._spec
    if spec is None or (isinstance(spec, str) and not spec.strip()):
      raise errors.MissingAllReduceSpecError(
          'all_reduce_spec=%r with distributed_all_reduce: the towers of '
          'every worker are reduced only as a spec says (there is no '
          'default algorithm across workers); pass one, e.g. %s '
          '(--all_reduce_spec=xring).' % (spec, SPEC_EXAMPLES))
    if isinstance(spec, str):
      for stage, position in outer_stages(spec):
        if stage.name == 'nccl':
          raise allreduce_errors.AllReduceSpecError(
              spec, position, 'nccl',
              'distributed_all_reduce reduces across workers with the only '
              'stage of a range, or the stage after "/", and NCCL reduces '
              'between the GPUs of one machine only; make nccl the stage '
              'within each worker of a two-stage range, e.g. "nccl/xring"')
    super(VariableMgrDistributedAllReduce, self)._check_config()

  def _check_host(self):
    host = self.benchmark_cnn
    cluster = host.cluster
    jobs = sorted(cluster.jobs) if cluster is not None else None
    if cluster is None or 'worker' not in jobs:
      raise errors.MissingClusterError(
          'distributed_all_reduce builds one graph over the workers of a '
          'cluster, but the host has cluster=%r: build it with '
          'variable_mgr.ControllerBenchmarkCnn({"worker": [...]}, '
          'towers_per_worker), or on one machine use replicated with the '
          'same all_reduce_spec.' % (jobs,))
    workers = len(cluster.job_tasks('worker'))
    for device in host.raw_devices:
      spec = tf.DeviceSpec.from_string(device)
      if spec.job != 'worker' or spec.task is None or not (
          0 <= spec.task < workers):
        raise errors.InterfaceError(
            'tower device %r names no task of the cluster\'s worker job '
            '(%d tasks): distributed_all_reduce places every tower on a '
            'worker, e.g. \'/job:worker/replica:0/task:0/cpu:0\'; build the '
            'host with variable_mgr.ControllerBenchmarkCnn, or on one '
            'machine use replicated.' % (device, workers))

  def configure_buckets(self, bucket_bytes):
    """See `gradient_buckets.Bucketed.configure_buckets`.

    Raises:
      InvalidOptionError: not an int of at least 0.
      IncompatibleOptionsError: buckets with gradient_repacking or
        agg_small_grads_max_bytes, which pack the gradients their own way.
    """
    super(VariableMgrDistributedAllReduce, self).configure_buckets(
        bucket_bytes)
    repacks, small_bytes = self._packing[:2]
    if bucket_bytes and (repacks or small_bytes):
      raise errors.IncompatibleOptionsError(
          'bucket_bytes=%r with %s: upstream\'s packing concatenates the '
          'gradients in the towers\' order; use one of the two (bucket_bytes'
          '=0 for upstream\'s).' % (bucket_bytes, (
              'gradient_repacking=%r' % repacks if repacks else
              'agg_small_grads_max_bytes=%r' % small_bytes)))

  def _bucket_size(self):
    if self.bucket_bytes is not None:
      return self.bucket_bytes
    repacks, small_bytes = self._packing[:2]
    return 0 if repacks or small_bytes else (
        gradient_buckets.DEFAULT_BUCKET_BYTES)

  def _all_reduce(self, tower_grads, devices):
    """The spec's algorithm over the towers' buckets (see the module
    docstring); without buckets, over each gradient."""
    bucket_bytes = self._bucket_size()
    if not bucket_bytes:
      return super(VariableMgrDistributedAllReduce, self)._all_reduce(
          tower_grads, devices)
    present = [i for i, (g, _) in enumerate(tower_grads[0]) if g is not None]
    if not present:
      return tower_grads
    tensors = [dict((i, aggregation.densify(tower[i][0])) for i in present)
               for tower in tower_grads]
    first = tensors[0]
    buckets = gradient_buckets.plan(
        dict((i, gradient_buckets.static_bytes(t)) for i, t in first.items()),
        dict((i, t.dtype.base_dtype) for i, t in first.items()),
        self._backward_order(present), bucket_bytes)
    buffers = []
    with tf.name_scope('gradient_buckets'):
      for tower, device in zip(tensors, devices):
        with tf.device(device):
          buffers.append([gradient_buckets.pack([tower[i] for i in b.indices])
                          for b in buckets])
    sums = self._reduce_fn(buffers, devices)
    reduced = [[(None, v) for _, v in tower] for tower in tower_grads]
    with tf.name_scope('gradient_buckets'):
      for d, device in enumerate(devices):
        with tf.device(device):
          for bucket, buffer in zip(buckets, sums[d]):
            values = gradient_buckets.unpack(
                buffer, [first[i].shape for i in bucket.indices])
            for i, value in zip(bucket.indices, values):
              reduced[d][i] = (value, tower_grads[d][i][1])
    return reduced

  def _param_devices(self):
    # A one-stage pscpu sums on every worker's CPU, not on worker 0's alone.
    return None

  def _all_towers_finite(self, tower_flags, waits):
    """Every tower of every worker is in this graph: the local check sees
    them all, and every worker applies the step or skips it together."""
    return super(VariableMgrDistributedAllReduce, self)._all_towers_finite(
        tower_flags, waits)
