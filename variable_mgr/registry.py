"""The --variable_update names and the factory that builds their managers."""

import collections

from variable_mgr import errors
from variable_mgr import placement
from variable_mgr import training_options
from variable_mgr.strategies import collective_all_reduce
from variable_mgr.strategies import distributed_all_reduce
from variable_mgr.strategies import distributed_replicated
from variable_mgr.strategies import independent
from variable_mgr.strategies import parameter_server
from variable_mgr.strategies import replicated

# name -> (local class, distributed class, staged local, staged distributed);
# None where the combination does not exist.
_Entry = collections.namedtuple(
    '_Entry', 'local distributed staged_local staged_distributed')

STRATEGIES = collections.OrderedDict([
    ('independent', _Entry(independent.VariableMgrIndependent,
                           None, None, None)),
    ('parameter_server', _Entry(
        parameter_server.VariableMgrLocalFetchFromPS,
        parameter_server.VariableMgrDistributedFetchFromPS,
        parameter_server.VariableMgrLocalFetchFromStagedPS,
        parameter_server.VariableMgrDistributedFetchFromStagedPS)),
    ('replicated', _Entry(replicated.VariableMgrLocalReplicated,
                          None, None, None)),
    ('distributed_replicated', _Entry(
        None, distributed_replicated.VariableMgrDistributedReplicated,
        None, None)),
    ('collective_all_reduce', _Entry(
        None, collective_all_reduce.VariableMgrCollectiveAllReduce,
        None, None)),
    ('distributed_all_reduce', _Entry(
        None, distributed_all_reduce.VariableMgrDistributedAllReduce,
        None, None)),
])

STRATEGY_NAMES = tuple(STRATEGIES)


# Options of some strategies only: name -> (strategies, default).
_ALL_REDUCE = ('replicated', 'distributed_all_reduce')
_STRATEGY_OPTIONS = collections.OrderedDict([
    ('staged_vars', (('parameter_server',), False)),
    ('use_nccl', (('replicated',), False)),
    ('all_reduce_spec', (_ALL_REDUCE, None)),
    ('gradient_repacking', (_ALL_REDUCE, 0)),
    ('agg_small_grads_max_bytes', (_ALL_REDUCE, 0)),
    ('agg_small_grads_max_group', (_ALL_REDUCE, 10)),
    ('float16_transfer', (_ALL_REDUCE, False)),
    ('bucket_bytes', (('collective_all_reduce', 'distributed_all_reduce',
                       'parameter_server'), None)),
])


def create(variable_update, benchmark_cnn, reduction=None,
           accumulation_dtype=None, use_fp16=False, loss_scale=None,
           auto_loss_scale=False, inc_loss_scale_every_n=1000,
           backward_passes_per_step=1, variable_consistency='strong',
           **options):
  """Builds the manager for `--variable_update=variable_update`.

  A host whose `cluster` is not None gets the distributed variant.

  Args:
    variable_update: one of `STRATEGY_NAMES`.
    benchmark_cnn: the host object (see `variable_mgr.interface`).
    reduction: 'mean' or 'sum' over towers; None for the strategy's default
      (replicated, distributed_all_reduce: 'sum'; parameter_server,
      distributed_replicated,
      collective_all_reduce: 'mean').
    accumulation_dtype: e.g. 'float32': add float16 gradients in this dtype
      (not for independent, which adds nothing).
    use_fp16, loss_scale, auto_loss_scale, inc_loss_scale_every_n,
      backward_passes_per_step, variable_consistency: the training options
      of every strategy (see `variable_mgr.training_options`).
    **options: strategy options, each valid for one strategy:
      staged_vars (parameter_server): read variables through StagingAreas.
      variable_partition_min_bytes (parameter_server and
      distributed_replicated on a cluster): split every variable of more
      than this many bytes into at most one slice a PS task, none smaller
      (see `placement.PartitioningGetter`); 0, the default, is off.
      use_nccl (replicated): all-reduce with NCCL, GPU towers only.
      all_reduce_spec, gradient_repacking, agg_small_grads_max_bytes,
      agg_small_grads_max_group, float16_transfer (replicated and
      distributed_all_reduce, which requires all_reduce_spec): see
      `VariableMgrLocalReplicated`.
      bucket_bytes (collective_all_reduce, distributed_all_reduce, and
      parameter_server on a cluster): the largest bucket of gradients one
      all-reduce (or push to a PS task) carries across the workers, in
      bytes (see `strategies.gradient_buckets`); None for the default.

  Returns:
    A `VariableMgr`.

  Raises:
    UnknownStrategyError: `variable_update` is not a registered name.
    InvalidOptionError: an option name that does not exist.
    IncompatibleOptionsError: an option the strategy does not support, or a
      local-only strategy with a cluster.
    MissingClusterError: distributed_replicated, collective_all_reduce or
      distributed_all_reduce without a cluster.
    and any error of the strategy's constructor.
  """
  entry = STRATEGIES.get(variable_update)
  if entry is None:
    raise errors.UnknownStrategyError(
        'variable_update=%r is not a strategy; choose one of: %s.' %
        (variable_update, ', '.join(STRATEGY_NAMES)))
  training = training_options.check_values(training_options.TrainingOptions(
      use_fp16=use_fp16, loss_scale=loss_scale,
      auto_loss_scale=auto_loss_scale,
      inc_loss_scale_every_n=inc_loss_scale_every_n,
      backward_passes_per_step=backward_passes_per_step,
      variable_consistency=variable_consistency))
  mgr = _construct(entry, variable_update, benchmark_cnn, reduction,
                   accumulation_dtype, options)
  if training.active:
    mgr.configure_training(training)
  return mgr


# What the MissingClusterError of a cluster-only strategy says its host
# needs besides the ClusterSpec.
_CLUSTER_HOSTS = {
    'collective_all_reduce': '',
    'distributed_all_reduce': ': variable_mgr.ControllerBenchmarkCnn, the '
                              'towers of every worker in one graph',
}


def _construct(entry, variable_update, benchmark_cnn, reduction,
               accumulation_dtype, options):
  """The strategy's manager (see `create`)."""
  partition_min_bytes = placement.check_partitioning(
      options.pop('variable_partition_min_bytes', 0), variable_update,
      benchmark_cnn)
  for name, value in sorted(options.items()):
    if name not in _STRATEGY_OPTIONS:
      raise errors.InvalidOptionError(
          '%s=%r is not an option; the options are: reduction, '
          'accumulation_dtype, %s, %s.' %
          (name, value, ', '.join(training_options.FIELD_NAMES),
           ', '.join(_STRATEGY_OPTIONS)))
    owners, default = _STRATEGY_OPTIONS[name]
    if value != default and variable_update not in owners:
      raise errors.IncompatibleOptionsError(
          '%s=%r with variable_update=%r: this option exists only for %s; '
          'drop it or use %s.' % (name, value, variable_update,
                                  ' and '.join(owners), ' or '.join(owners)))
  # Options of other strategies hold their defaults here: drop them.
  options = dict((name, value) for name, value in options.items()
                 if variable_update in _STRATEGY_OPTIONS[name][0])
  staged_vars = options.pop('staged_vars', False)
  distributed = getattr(benchmark_cnn, 'cluster', None) is not None
  field = ('staged_' if staged_vars else '') + (
      'distributed' if distributed else 'local')
  cls = getattr(entry, field)
  if cls is None and distributed:
    raise errors.IncompatibleOptionsError(
        'variable_update=%r runs on one machine but the host has a cluster; '
        'use parameter_server or distributed_replicated across machines.' %
        variable_update)
  if cls is None:
    raise errors.MissingClusterError(
        'variable_update=%r needs a cluster (a host with a '
        'tf.train.ClusterSpec in .cluster%s); locally use '
        'replicated.' % (variable_update, _CLUSTER_HOSTS.get(
            variable_update, ' and PS hosts')))
  if variable_update == 'replicated':
    use_nccl = options.pop('use_nccl', False)
    return cls(benchmark_cnn, use_nccl, reduction=reduction,
               accumulation_dtype=accumulation_dtype, **options)
  bucket_bytes = options.pop('bucket_bytes', None)
  if bucket_bytes is not None and not hasattr(cls, 'configure_buckets'):
    raise errors.IncompatibleOptionsError(
        'bucket_bytes=%r with variable_update=%r on one machine: buckets '
        'size the pushes to the PS tasks of a cluster, and a local '
        'parameter server has none; drop it or give the host a cluster.' %
        (bucket_bytes, variable_update))
  if partition_min_bytes:
    options['variable_partition_min_bytes'] = partition_min_bytes
  mgr = cls(benchmark_cnn, reduction=reduction,
            accumulation_dtype=accumulation_dtype, **options)
  if bucket_bytes is not None:
    mgr.configure_buckets(bucket_bytes)
  return mgr
