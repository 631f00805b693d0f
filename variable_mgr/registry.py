"""The --variable_update names and the factory that builds their managers."""

import collections

from variable_mgr import errors
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
])

STRATEGY_NAMES = tuple(STRATEGIES)


def create(variable_update, benchmark_cnn, staged_vars=False, use_nccl=False,
           reduction=None):
  """Builds the manager for `--variable_update=variable_update`.

  A host whose `cluster` is not None gets the distributed variant.

  Args:
    variable_update: one of `STRATEGY_NAMES`.
    benchmark_cnn: the host object (see `variable_mgr.interface`).
    staged_vars: read variables through StagingAreas (parameter_server only).
    use_nccl: all-reduce with NCCL (replicated on GPUs only).
    reduction: 'mean' or 'sum' over towers; None for the strategy's default
      (replicated: 'sum'; parameter_server, distributed_replicated: 'mean').

  Returns:
    A `VariableMgr`.

  Raises:
    UnknownStrategyError: `variable_update` is not a registered name.
    IncompatibleOptionsError: an option the strategy does not support, or a
      local-only strategy with a cluster.
    MissingClusterError: distributed_replicated without a cluster.
    and any error of the strategy's constructor.
  """
  entry = STRATEGIES.get(variable_update)
  if entry is None:
    raise errors.UnknownStrategyError(
        'variable_update=%r is not a strategy; choose one of: %s.' %
        (variable_update, ', '.join(STRATEGY_NAMES)))
  if staged_vars and variable_update != 'parameter_server':
    raise errors.IncompatibleOptionsError(
        'staged_vars=True with variable_update=%r: staged variables exist '
        'only for parameter_server; drop staged_vars or use '
        'parameter_server.' % variable_update)
  if use_nccl and variable_update != 'replicated':
    raise errors.IncompatibleOptionsError(
        'use_nccl=True with variable_update=%r: NCCL all-reduce is used only '
        'by replicated; drop use_nccl or use replicated.' % variable_update)
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
        'tf.train.ClusterSpec in .cluster and PS hosts); locally use '
        'replicated.' % variable_update)
  if variable_update == 'replicated':
    return cls(benchmark_cnn, use_nccl, reduction=reduction)
  return cls(benchmark_cnn, reduction=reduction)
