"""variable_mgr: where a data-parallel TF graph keeps its variables and how
its towers' gradients combine.

The seed's public names (tf_cnn_benchmarks' variable_mgr.py) are importable
from here with the seed's signatures, so a harness written against it runs
unchanged; `create()` builds a manager from a --variable_update name.
Importing this package changes no global TensorFlow state.
"""

from variable_mgr.aggregation import aggregate_gradients_using_copy
from variable_mgr.aggregation import aggregate_gradients_using_copy_with_device_selection
from variable_mgr.aggregation import aggregate_gradients_using_copy_with_variable_colocation
from variable_mgr.aggregation import sum_grad_and_var_all_reduce
from variable_mgr.aggregation import sum_gradients_all_reduce
from variable_mgr.base import VariableMgr
from variable_mgr.interface import BenchmarkCnnLike
from variable_mgr.interface import ClusterBenchmarkCnn
from variable_mgr.interface import LocalBenchmarkCnn
from variable_mgr.placement import GreedyLoadBalancingStrategy
from variable_mgr.placement import OverrideCachingDevice
from variable_mgr.placement import OverrideToLocalVariableIfNotPsVar
from variable_mgr.placement import ParamServerDeviceSetter
from variable_mgr.placement import PS_SHADOW_VAR_PREFIX
from variable_mgr.placement import byte_size_load_fn
from variable_mgr.registry import STRATEGY_NAMES
from variable_mgr.registry import create
from variable_mgr.staging import StagedModelVariable
from variable_mgr.staging import StagedVariableGetter
from variable_mgr.strategies.distributed_replicated import VariableMgrDistributedReplicated
from variable_mgr.strategies.independent import VariableMgrIndependent
from variable_mgr.strategies.parameter_server import VariableMgrDistributedFetchFromPS
from variable_mgr.strategies.parameter_server import VariableMgrDistributedFetchFromStagedPS
from variable_mgr.strategies.parameter_server import VariableMgrLocalFetchFromPS
from variable_mgr.strategies.parameter_server import VariableMgrLocalFetchFromStagedPS
from variable_mgr.strategies.replicated import VariableMgrLocalReplicated

__version__ = '0.1.0'
