"""Byte balancing over PS tasks and the caching devices
(variable_mgr/placement.py, strategies/parameter_server.py).

Entries of tests/mutation_check.py; see its docstring for the keys.
"""

from .nodes import SEED_BUGS, PLACEMENT

MUTATIONS = [
    dict(name='balance-round-robin',
         path='variable_mgr/placement.py',
         old='    task = _least_loaded(self._loads)\n',
         new='    task = self._next = (getattr(self, \'_next\', -1) + 1) % len(\n'
             '        self._loads)\n',
         tests=[SEED_BUGS + 'test_replica_device_setter_balances_resource_'
                'variables_by_bytes',
                PLACEMENT + 'test_greedy_strategy_uses_its_load_function',
                PLACEMENT + 'test_distributed_ps_balances_variables_by_bytes']),
    dict(name='balance-load-one',
         path='variable_mgr/placement.py',
         old='  return variable_op_num_elements(op) * dtype.base_dtype.size\n',
         new='  return 1\n',
         tests=[SEED_BUGS + 'test_replica_device_setter_balances_resource_'
                'variables_by_bytes',
                PLACEMENT + 'test_byte_size_load_fn_counts_bytes',
                PLACEMENT + 'test_distributed_ps_balances_variables_by_bytes']),
    dict(name='balance-by-elements',
         path='variable_mgr/placement.py',
         old='  return variable_op_num_elements(op) * dtype.base_dtype.size\n',
         new='  return variable_op_num_elements(op)\n',
         tests=[SEED_BUGS + 'test_replica_device_setter_balances_resource_'
                'variables_by_bytes',
                PLACEMENT + 'test_distributed_ps_balances_variables_by_bytes']),
    # tf.contrib's byte_size_load_fn read the op's output: for a resource
    # variable, its handle (a scalar).
    dict(name='balance-resource-handle-bytes',
         path='variable_mgr/placement.py',
         old='  return variable_op_num_elements(op) * dtype.base_dtype.size\n',
         new='  return _num_elements(op.outputs[0].shape) * dtype.base_dtype.size\n',
         tests=[SEED_BUGS + 'test_replica_device_setter_balances_resource_'
                'variables_by_bytes',
                PLACEMENT + 'test_byte_size_load_fn_counts_bytes']),
    dict(name='balance-last-on-a-tie',
         path='variable_mgr/placement.py',
         old='  return min(range(len(loads)), key=lambda i: loads[i])\n',
         new='  return max(range(len(loads)), key=lambda i: (-loads[i], i))\n',
         tests=[SEED_BUGS + 'test_replica_device_setter_balances_resource_'
                'variables_by_bytes',
                PLACEMENT + 'test_greedy_strategy_uses_its_load_function']),
    dict(name='distributed-ps-caches-everything-on-the-cpu',
         path='variable_mgr/strategies/parameter_server.py',
         old='      caching_devices = self.benchmark_cnn.raw_devices\n',
         new='      caching_devices = [self.benchmark_cnn.cpu_device]\n',
         tests=[PLACEMENT + 'test_distributed_ps_caches_large_variables_by_'
                'parameter_device']),
]
