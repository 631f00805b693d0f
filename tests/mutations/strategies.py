"""The strategies and their shared code: aggregation, staging, towers'
variables, the registry, naming.

Entries of tests/mutation_check.py; see its docstring for the keys.
"""

from .nodes import SEED_BUGS, PLACEMENT

MUTATIONS = [
    dict(name='nccl-outputs-reversed',
         path='variable_mgr/aggregation.py',
         old='zip(devices, grad_and_vars, summed)',
         new='zip(devices, grad_and_vars, summed[::-1])',
         tests=[PLACEMENT + 'test_nccl_graph_one_all_reduce_per_tower_and_'
                'gradient']),
    dict(name='replicated-mean-not-scaled',
         path='variable_mgr/strategies/replicated.py',
         old='    factor = 1.0 / len(devices) if self.use_mean else None\n',
         new='    factor = None\n',
         tests=[PLACEMENT + 'test_nccl_graph_one_all_reduce_per_tower_and_'
                'gradient']),
    # The seed's getter: a statistic read through a staging area of its own.
    dict(name='staged-statistics',
         path='variable_mgr/staging.py',
         old='      return real_var  # Statistics are read directly (see module '
             'doc).\n',
         new='      with tf.device(self.devices[self.device_num]):\n'
             '        area = compat.staging_area(real_var.dtype.base_dtype,\n'
             '                                   real_var.shape)\n'
             '        put_op = area.put([compat.snapshot(real_var)])\n'
             '        get_op = compat.staging_get(area)\n'
             '      staging_ops[name] = (put_op, get_op)\n'
             '      return StagedModelVariable(real_var, get_op,\n'
             '                                 self.variable_mgr)\n',
         tests=['tests/test_batch_norm.py::test_statistics_are_not_staged']),
    dict(name='independent-takes-accumulation-dtype',
         path='variable_mgr/strategies/independent.py',
         old='      if value is not None:\n',
         new="      if value is not None and name == 'reduction':\n",
         tests=['tests/test_errors.py::test_independent_refuses_an_'
                'accumulation_dtype']),
    # Staged areas: a get of an unused variable that no update takes.
    dict(name='staging-orphan-gets-dropped',
         path='variable_mgr/staging.py',
         old='  if orphans and names:\n',
         new='  if False:\n',
         tests=['tests/test_staging.py::test_areas_hold_one_item_after_every_'
                'step']),
    dict(name='tower-variable-check-dropped',
         path='variable_mgr/base.py',
         old='    tower_variables.check_tower_variables(towers)\n',
         new='',
         tests=['tests/test_tower_variables.py::'
                'test_a_tf_variable_tower_is_refused_naming_it']),
    dict(name='staged-tower-variable-check-dropped',
         path='variable_mgr/staging.py',
         old='  tower_variables.check_variables(device_num, params)\n',
         new='',
         tests=['tests/test_tower_variables.py::'
                'test_a_tf_variable_staged_tower_is_refused_naming_it']),
    dict(name='tower-variables-empty-tower-not-scanned',
         path='variable_mgr/tower_variables.py',
         old='    if not tower:\n',
         new='    if tower is None:\n',
         tests=['tests/test_tower_variables.py::test_tf_variables_outside_'
                'every_scope_are_named[resource]']),
    dict(name='registry-cluster-refusals-swapped',
         path='variable_mgr/registry.py',
         old='  if cls is None and distributed:\n',
         new='  if cls is None and not distributed:\n',
         tests=['tests/test_distributed_all_reduce.py::test_a_local_host',
                'tests/benchmark/runs/test_rough_edges.py::test_a_cluster_strategy_'
                'on_one_machine_is_refused']),
    dict(name='registry-staged-vars-owned-by-replicated',
         path='variable_mgr/registry.py',
         old='    (\'staged_vars\', ((\'parameter_server\',), False)),\n',
         new='    (\'staged_vars\', ((\'parameter_server\', \'replicated\'), '
             'False)),\n',
         tests=['tests/test_errors.py::test_staged_vars_only_with_parameter_'
                'server[replicated]']),
    dict(name='naming-canonical-keeps-the-slash',
         path='variable_mgr/naming.py',
         old='  return name[len(scope) + 1:] if scope else name\n',
         new='  return name[len(scope):] if scope else name\n',
         tests=[SEED_BUGS + 'test_variables_to_save_have_canonical_names_'
                'local[resource-replicated]']),
    dict(name='naming-shared-scope-not-stripped',
         path='variable_mgr/naming.py',
         old='_TOWER_SCOPE = re.compile(r\'^v(\\d*)/\')\n',
         new='_TOWER_SCOPE = re.compile(r\'^v(\\d+)/\')\n',
         tests=[SEED_BUGS + 'test_variables_to_save_have_canonical_names_'
                'local[resource-parameter_server]']),
    dict(name='replicas-copy-into-tower-zero',
         path='variable_mgr/strategies/_replicas.py',
         old='    ops.append(var.assign(reads[source.name], '
             'read_value=False))\n',
         new='    ops.append(source.assign(var.read_value(), '
             'read_value=False))\n',
         tests=[SEED_BUGS + 'test_checkpoint_restores_across_strategies['
                'resource-parameter_server-replicated]']),
    dict(name='collective-mean-over-local-towers',
         path='variable_mgr/strategies/collective_all_reduce.py',
         old='    factor = 1.0 / self.cluster_towers if self.use_mean else None\n',
         new='    factor = 1.0 / self.num_towers if self.use_mean else None\n',
         tests=['tests/distributed/test_collective_all_reduce.py::test_every_'
                'tower_of_every_worker_matches_numpy[2]']),
    # collective_all_reduce, two towers a worker: the worker's sum keeps its
    # first tower's gradient only.
    dict(name='collective-worker-sum-drops-other-towers',
         path='variable_mgr/strategies/worker_hierarchy.py',
         old='      parts = [tf.cast(p, wide) for p in parts]\n'
             '    return compat.sum_in_order(parts)\n',
         new='      parts = [tf.cast(p, wide) for p in parts]\n'
             '    return parts[0]\n',
         tests=['tests/distributed/test_collective_hierarchy.py::test_two_'
                'towers_a_worker_step_as_the_flat_mean_or_sum[ref-sum-'
                'float32]']),
    # collective_all_reduce's buckets filled in the towers' order (first
    # layer first) instead of the backward pass's.
    dict(name='collective-buckets-in-the-towers-order',
         path='variable_mgr/strategies/gradient_buckets.py',
         old='  return [i for _, i in sorted((position[_op_of(t).name], i)\n'
             '                               for i, t in present)]\n',
         new='  return [i for i, _ in present]\n',
         tests=['tests/test_gradient_buckets.py::test_buckets_follow_the_'
                'backward_pass[plain]']),
    # A bucket's buffer cut back in the wrong order: each gradient gets
    # another's values (sizes permitting).
    dict(name='collective-bucket-cut-back-reversed',
         path='variable_mgr/strategies/gradient_buckets.py',
         old='  return [tf.reshape(p, s) for p, s in zip(parts, shapes)]\n',
         new='  return [tf.reshape(p, s) for p, s in zip(parts[::-1], shapes)]\n',
         tests=['tests/distributed/test_collective_hierarchy.py::test_every_'
                'bucket_size_steps_as_one_collective_a_gradient[ref]']),
    dict(name='collective-task-index-past-the-workers',
         path='variable_mgr/strategies/collective_all_reduce.py',
         old='    if not 0 <= host.task_index < workers:\n',
         new='    if not 0 <= host.task_index <= workers:\n',
         tests=['tests/distributed/test_collective_all_reduce.py::test_host_'
                'disagrees_with_cluster[task_index]']),
    dict(name='distributed-all-reduce-checks-the-inner-stage',
         path='variable_mgr/strategies/distributed_all_reduce.py',
         old='    result.append((spec_range.stages[-1], start))\n',
         new='    result.append((spec_range.stages[0], start))\n',
         tests=['tests/test_distributed_all_reduce.py::test_a_spec_whose_stage_'
                'across_workers_is_nccl[xring/nccl-6]']),
    dict(name='distributed-all-reduce-stage-position-drops-slashes',
         path='variable_mgr/strategies/distributed_all_reduce.py',
         old='    start = starts[2 * r] + sum(len(p) + 1 for p in '
             'parts[:-1])\n',
         new='    start = starts[2 * r] + sum(len(p) for p in parts[:-1])\n',
         tests=['tests/test_distributed_all_reduce.py::test_the_host_and_the_'
                'outer_stages']),
]
