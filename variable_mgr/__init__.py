"""variable_mgr: where a data-parallel TF graph keeps its variables and how
its towers' gradients combine.

The seed's public names (tf_cnn_benchmarks' variable_mgr.py) are importable
from here with the seed's signatures, so a harness written against it runs
unchanged; `create()` builds a manager from a --variable_update name.

Importing this package changes no global TensorFlow state, and imports
TensorFlow only when one of the names below is first used (a command can
set TensorFlow's logging environment before that).
"""

import importlib

__version__ = '0.1.0'

# Public name -> the module that defines it.
_EXPORTS = {
    'aggregate_gradients_using_copy': 'aggregation',
    'aggregate_gradients_using_copy_with_device_selection': 'aggregation',
    'aggregate_gradients_using_copy_with_variable_colocation': 'aggregation',
    'sum_grad_and_var_all_reduce': 'aggregation',
    'sum_gradients_all_reduce': 'aggregation',
    'VariableMgr': 'base',
    'BenchmarkCnnLike': 'interface',
    'ClusterBenchmarkCnn': 'interface',
    'ControllerBenchmarkCnn': 'interface',
    'LocalBenchmarkCnn': 'interface',
    'GreedyLoadBalancingStrategy': 'placement',
    'OverrideCachingDevice': 'placement',
    'OverrideToLocalVariableIfNotPsVar': 'placement',
    'ParamServerDeviceSetter': 'placement',
    'PS_SHADOW_VAR_PREFIX': 'placement',
    'byte_size_load_fn': 'placement',
    'STRATEGY_NAMES': 'registry',
    'create': 'registry',
    'StagedModelVariable': 'staging',
    'StagedVariableGetter': 'staging',
    'VariableMgrCollectiveAllReduce': 'strategies.collective_all_reduce',
    'VariableMgrDistributedAllReduce': 'strategies.distributed_all_reduce',
    'VariableMgrDistributedReplicated': 'strategies.distributed_replicated',
    'VariableMgrIndependent': 'strategies.independent',
    'VariableMgrDistributedFetchFromPS': 'strategies.parameter_server',
    'VariableMgrDistributedFetchFromStagedPS': 'strategies.parameter_server',
    'VariableMgrLocalFetchFromPS': 'strategies.parameter_server',
    'VariableMgrLocalFetchFromStagedPS': 'strategies.parameter_server',
    'VariableMgrLocalReplicated': 'strategies.replicated',
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
  """Imports the module of a public name on first use (PEP 562)."""
  module = _EXPORTS.get(name)
  if module is None:
    raise AttributeError('module %r has no attribute %r' % (__name__, name))
  value = getattr(importlib.import_module('variable_mgr.' + module), name)
  globals()[name] = value
  return value


def __dir__():
  return sorted(set(globals()) | set(_EXPORTS))
