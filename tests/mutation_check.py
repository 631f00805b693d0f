"""Puts known bugs back into a copy of the library and expects tests to fail.

    python tests/mutation_check.py              # every mutation
    python tests/mutation_check.py --only NAME  # one (repeat for more)
    python tests/mutation_check.py --list       # the names

Each entry of MUTATIONS is a bug the library fixed (or one a regression
would bring in) and the tests that guard against it. For each, the check
copies the repository (the files git tracks or would track, as they are in
the working tree) to a temporary directory, replaces `old` by `new` in
`path` there, and runs the entry's tests in the copy with
`python -m pytest -q -x -p no:cacheprovider`. The mutation is caught when
pytest reports a failed test (exit status 1); anything else (every test
passing, an error before the tests ran, a node id that does not exist) is a
miss. Before any mutation the listed tests must pass on the unmutated copy,
or a failure would prove nothing.

An `old` text must occur exactly once in its file: when the code changes
under an entry, the check refuses it by name instead of silently testing
nothing. Fix the entry (or drop it with the code it guarded).

Exit status 0 when every mutation is caught, 1 otherwise. It takes some
minutes (one pytest run a mutation), so CI does not run it.

To add a mutation, append a dict with the five keys below to MUTATIONS.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A pytest run longer than this counts as a miss (a hang is no proof).
RUN_TIMEOUT_SECS = 900

SEED_BUGS = 'tests/test_seed_bugs.py::'
PLACEMENT = 'tests/test_placement_graphs.py::'
ORDERING = 'tests/test_ordering.py::'
ALLREDUCE_ALGORITHMS = 'tests/allreduce/test_allreduce_algorithms.py::'
ALLREDUCE_SPEC = 'tests/allreduce/test_allreduce_spec.py::'
ALLREDUCE_PACKING = 'tests/allreduce/test_allreduce_packing.py::'
ALLREDUCE_WORKERS = 'tests/allreduce/test_allreduce_workers.py::'
ALL_REDUCE_FLAGS = 'tests/benchmark/test_all_reduce_flags.py::'

# name: what the bug is; path: the library file; old: the exact text there;
# new: the text that brings the bug back; tests: pytest node ids, at least
# one of which must fail.
MUTATIONS = [
    # -- Byte balancing over PS tasks -------------------------------------------
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

    # -- The seed's bugs (tests/test_seed_bugs.py) ------------------------------
    dict(name='seed-local-getter-collections-unbound',
         path='variable_mgr/placement.py',
         old="    collections = kwargs.get('collections')\n",
         new="    collections = kwargs['collections']\n",
         tests=[SEED_BUGS + 'test_local_getter_without_collections_kwarg']),
    dict(name='seed-local-getter-remove-global',
         path='variable_mgr/placement.py',
         old='    collections = [c for c in collections if c != '
             'tf.GraphKeys.GLOBAL_VARIABLES]\n',
         new='    collections.remove(tf.GraphKeys.GLOBAL_VARIABLES)\n',
         tests=[SEED_BUGS + 'test_local_getter_with_collections_lacking_'
                'global']),
    dict(name='seed-local-getter-ps-var-drops-name',
         path='variable_mgr/placement.py',
         old='    if name.startswith(PS_SHADOW_VAR_PREFIX):\n'
             '      return getter(name, *args, **kwargs)\n',
         new='    if name.startswith(PS_SHADOW_VAR_PREFIX):\n'
             '      return getter(*args, **kwargs)\n',
         tests=[SEED_BUGS + 'test_local_getter_ps_var_keeps_name_and_global']),
    # Not a seed bug: a local getter written like tf.local_variable.
    dict(name='local-getter-not-trainable',
         path='variable_mgr/placement.py',
         old="    kwargs['collections'] = collections\n",
         new="    kwargs['collections'] = collections\n"
             "    kwargs['trainable'] = False\n",
         tests=[SEED_BUGS + 'test_local_getter_in_a_scope_keeps_trainable']),
    dict(name='seed-caching-device-unknown-shape',
         path='variable_mgr/placement.py',
         old='  if shape is None:\n    return 0\n'
             '  count = tf.TensorShape(shape).num_elements()\n'
             '  return 0 if count is None else count\n',
         new='  return tf.TensorShape(shape).num_elements()\n',
         tests=[SEED_BUGS + 'test_caching_device_unknown_shape_goes_to_small_'
                'device']),
    dict(name='seed-device-setter-ignores-var-handle-op',
         path='variable_mgr/placement.py',
         old='    if op.type not in compat.VARIABLE_OP_TYPES:\n',
         new="    if op.type not in ('Variable', 'VariableV2'):\n",
         tests=[SEED_BUGS + 'test_param_server_device_setter_spreads_resource_'
                'variables']),
    dict(name='seed-staging-get-list',
         path='variable_mgr/compat.py',
         old='  if isinstance(value, (list, tuple)):\n    (value,) = value\n',
         new='',
         tests=[SEED_BUGS + 'test_staging_get_is_a_tensor',
                SEED_BUGS + 'test_staged_ps_runs_with_resource_variables']),
    dict(name='seed-staged-model-variable-ref',
         path='variable_mgr/staging.py',
         old='    return compat.to_ref_or_handle(self.real_var)\n',
         new='    return self.real_var._ref()  # pylint: disable=protected-access\n',
         tests=[SEED_BUGS + 'test_staged_model_variable_of_a_resource_'
                'variable']),
    # The strategies get the towers' iterators, which the checks consumed.
    dict(name='seed-one-shot-zip-strategy',
         path='variable_mgr/base.py',
         old='    apply_devices, payload = self._preprocess(towers)\n',
         new='    apply_devices, payload = self._preprocess(device_grads)\n',
         tests=[SEED_BUGS + 'test_preprocess_accepts_one_shot_iterators']),
    dict(name='seed-one-shot-zip-state',
         path='variable_mgr/base.py',
         old='GradientState(apply_devices, towers, payload,',
         new='GradientState(apply_devices, device_grads, payload,',
         tests=[SEED_BUGS + 'test_preprocess_accepts_one_shot_iterators_'
                'parameter_server']),
    dict(name='seed-retain-tower-updates',
         path='variable_mgr/base.py',
         old='    return device_num == 0\n',
         new='    return device_num == 0 and not self.each_tower_has_variables()\n',
         tests=[SEED_BUGS + 'test_retain_tower_updates_tower_zero_with_tower_'
                'copies']),
    dict(name='seed-checkpoint-names-not-canonical',
         path='variable_mgr/base.py',
         old='      name = self._canonical_name(strip_port(var.op.name))\n',
         new='      name = strip_port(var.op.name)\n',
         tests=[SEED_BUGS + 'test_variables_to_save_have_canonical_names_local',
                SEED_BUGS + 'test_checkpoint_restores_across_strategies']),
    dict(name='seed-distributed-replicated-saves-locals',
         path='variable_mgr/strategies/distributed_replicated.py',
         old='    return tf.global_variables() + tf.local_variables()\n',
         new='    return tf.local_variables()\n',
         tests=[SEED_BUGS + 'test_variables_to_save_distributed_replicated_'
                'are_masters']),

    dict(name='distributed-ps-caches-everything-on-the-cpu',
         path='variable_mgr/strategies/parameter_server.py',
         old='      caching_devices = self.benchmark_cnn.raw_devices\n',
         new='      caching_devices = [self.benchmark_cnn.cpu_device]\n',
         tests=[PLACEMENT + 'test_distributed_ps_caches_large_variables_by_'
                'parameter_device']),

    # -- NCCL (tests/test_placement_graphs.py) ----------------------------------
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

    # -- Batch-norm statistics are not staged (tests/test_batch_norm.py) -------
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

    # -- Errors (tests/test_errors.py) ------------------------------------------
    dict(name='accumulation-dtype-integer-accepted',
         path='variable_mgr/validation.py',
         old='  if result is None or not result.is_floating:\n',
         new='  if result is None:\n',
         tests=['tests/test_errors.py::test_bad_accumulation_dtype']),
    dict(name='independent-takes-accumulation-dtype',
         path='variable_mgr/strategies/independent.py',
         old='      if value is not None:\n',
         new="      if value is not None and name == 'reduction':\n",
         tests=['tests/test_errors.py::test_independent_refuses_an_'
                'accumulation_dtype']),
    # -- The host interface (tests/test_errors.py) -----------------------------
    dict(name='interface-inherited-stub-counts',
         path='variable_mgr/interface.py',
         old='           if _is_documentation_only(getattr(benchmark_cnn, a))]\n',
         new='           if False]\n',
         tests=['tests/test_errors.py::test_distributed_replicated_host_'
                'inheriting_the_barrier_stub']),
    # -- Update ordering (tests/test_ordering.py) -------------------------------
    # The seed's race: updates ordered after nothing but their gradient.
    dict(name='ordering-none',
         path='variable_mgr/ordering.py',
         old='  if grad is None or not ops:\n    return grad\n',
         new='  if True:\n    return grad\n',
         tests=[ORDERING + 'test_an_update_waits_for_a_late_read_of_its_'
                'variable',
                ORDERING + 'test_every_update_follows_every_read_of_its_'
                'variable',
                ORDERING + 'test_distributed_updates_wait_for_their_own_'
                'reads_only']),
    # The step-wide barrier this library had: every update after every
    # gradient of every tower.
    dict(name='ordering-step-wide-barrier',
         path='variable_mgr/base.py',
         old='    apply_devices, payload = self._preprocess(towers)\n',
         new='    every = [g.op for t in towers for g, _ in t if g is not None]\n'
             '    waits = dict((k, w + every) for k, w in waits.items())\n'
             '    apply_devices, payload = self._preprocess(towers)\n',
         tests=[ORDERING + 'test_independent_towers_wait_for_nothing_of_each_'
                'other',
                ORDERING + 'test_the_last_layer_does_not_wait_for_the_first_'
                'layers_gradient',
                ORDERING + 'test_distributed_updates_wait_for_their_own_'
                'reads_only']),
    # TF 1.x cond and loop bodies walked through as if they were plain ops:
    # a control edge from an untaken branch kills the update.
    dict(name='ordering-into-control-flow',
         path='variable_mgr/ordering.py',
         old="_CONTROL_FLOW_ENTRIES = frozenset(['Switch', 'RefSwitch', "
             "'Enter', 'RefEnter'])\n",
         new='_CONTROL_FLOW_ENTRIES = frozenset()\n'
             "FORWARDING_OP_TYPES = FORWARDING_OP_TYPES | frozenset(['Switch', "
             "'RefSwitch', 'Enter', 'RefEnter', 'Merge', 'RefMerge', 'Exit', "
             "'RefExit', 'NextIteration', 'RefNextIteration'])\n",
         tests=[ORDERING + 'test_reads_inside_cond_and_while_loop']),
    # A ref variable's aliases not followed past the ops that pass its
    # buffer on (its own read Identity, a StopGradient): the readers behind
    # them are missed.
    dict(name='ordering-aliases-not-followed',
         path='variable_mgr/ordering.py',
         old='        frontier.extend(consumer.outputs)\n',
         new='        pass\n',
         tests=[ORDERING + 'test_an_update_waits_for_a_late_read_of_its_'
                'variable',
                ORDERING + 'test_every_update_follows_every_read_of_its_'
                'variable']),
    # A periodic checkpoint of distributed_replicated taken while another
    # worker already updates the masters for the next step.
    dict(name='cluster-save-without-barrier',
         path='variable_mgr/benchmark/cluster/worker_task.py',
         old='        if g.saved_op is not None:\n',
         new='        if False:\n',
         tests=['tests/distributed/test_cluster_more_faults.py::test_readme_'
                'cluster_command_saves_every_n_steps']),
    # Staged areas: a get of an unused variable that no update takes.
    dict(name='staging-orphan-gets-dropped',
         path='variable_mgr/staging.py',
         old='  if orphans and names:\n',
         new='  if False:\n',
         tests=['tests/test_staging.py::test_areas_hold_one_item_after_every_'
                'step']),
    # -- Towers' variables, probes, staged overlap, checkpoints, relaxed ----
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
    dict(name='probe-tcp-connect-only',
         path='variable_mgr/benchmark/cluster/liveness.py',
         old='  return ANSWERED if answer else SILENT\n',
         new='  return ANSWERED\n',
         tests=['tests/distributed/test_cluster_faults.py::'
                'test_stopped_worker_is_named_by_every_survivor']),
    dict(name='no-probes-during-a-blocked-call',
         path='variable_mgr/benchmark/cluster/deadline.py',
         old='      if gone and self._pending is pending:\n',
         new='      if False:\n',
         tests=['tests/distributed/test_cluster_faults.py::'
                'test_a_killed_worker_ends_the_cluster_within_seconds']),
    dict(name='staged-barrier-wait-on-the-worker',
         path='variable_mgr/benchmark/cluster/worker_graph.py',
         old='    with tf.colocate_with(v), tf.control_dependencies([op]):\n',
         new='    with tf.control_dependencies([op]):\n',
         tests=['tests/distributed/test_staged_overlap.py::'
                'test_push_waits_for_nothing_from_the_ps']),
    dict(name='relaxed-deferred-read-unordered',
         path='variable_mgr/accumulation.py',
         old='ORDER_DEFERRED_READS = True\n',
         new='ORDER_DEFERRED_READS = False\n',
         tests=['tests/test_relaxed_consistency.py::'
                'test_a_late_read_of_the_deferred_gradient_is_ordered']),
    dict(name='chief-restores-dangling-checkpoint-late',
         path='variable_mgr/benchmark/cluster/worker_task.py',
         old='    checkpoint.latest_checkpoint(config.train_dir)\n',
         new='    pass\n',
         tests=['tests/benchmark/test_rough_edges.py::'
                'test_a_chief_with_a_dangling_checkpoint_starts_nothing']),
    dict(name='restored-run-times-num-batches-more',
         path='variable_mgr/benchmark/local_run.py',
         old='      for step in range(-config.num_warmup_batches, num_batches):\n',
         new='      for step in range(-config.num_warmup_batches, '
         'config.num_batches):\n',
         tests=['tests/benchmark/test_upstream_semantics.py::'
                'test_a_restored_run_trains_to_num_batches']),
    dict(name='gradient-clip-dropped',
         path='variable_mgr/benchmark/harness.py',
         old='  if clip is None:\n    return grads\n',
         new='  return grads\n',
         tests=['tests/benchmark/test_upstream_semantics.py::'
                'test_gradient_clip_matches_numpy']),
    # -- All-reduce: ring, spec ranges, small-tensor packing, two stages ----
    dict(name='allreduce-ring-hop-short',
         path='variable_mgr/allreduce/algorithms.py',
         old='        for hop in range(1, k):\n',
         new='        for hop in range(1, k - 1):\n',
         tests=[ALLREDUCE_ALGORITHMS + 'test_two_by_two_picture',
                ALLREDUCE_ALGORITHMS + 'test_sum_on_every_tower[ring-3-'
                'float32]']),
    dict(name='allreduce-chunk-sizes-off-by-one',
         path='variable_mgr/allreduce/layout.py',
         old='  return [base + 1 if p < extra else base for p in range(parts)]\n',
         new='  return [base + 1 if p <= extra else base for p in range(parts)]\n',
         tests=[ALLREDUCE_ALGORITHMS + 'test_sum_on_every_tower[ring-3-'
                'float32]']),
    # Before tf_cnn_benchmarks' meaning: a range took tensors of fewer than
    # `limit` bytes.
    dict(name='allreduce-range-limit-exclusive',
         path='variable_mgr/allreduce/spec.py',
         old='      if spec_range.limit is None or size <= spec_range.limit:\n',
         new='      if spec_range.limit is None or size < spec_range.limit:\n',
         tests=[ALLREDUCE_SPEC + 'test_limit_counts_elements_and_includes_'
                'its_value[1k-1024]',
                ALLREDUCE_SPEC + 'test_32k_example_sums_at_the_limit']),
    dict(name='allreduce-range-limit-in-bytes',
         path='variable_mgr/allreduce/spec.py',
         old='    size = layout.num_elements(towers[0][i])\n',
         new='    size = layout.num_bytes(towers[0][i])\n',
         tests=[ALLREDUCE_SPEC + 'test_limit_is_elements_whatever_the_dtype',
                ALLREDUCE_SPEC + 'test_limit_counts_elements_and_includes_'
                'its_value[1k-1024]']),
    dict(name='allreduce-suffix-K-decimal',
         path='variable_mgr/allreduce/spec.py',
         old="_SUFFIXES = {'': 1, 'k': 1 << 10, 'K': 1 << 10,",
         new="_SUFFIXES = {'': 1, 'k': 1 << 10, 'K': 1000,",
         tests=[ALLREDUCE_SPEC + 'test_limit_counts_elements_and_includes_'
                'its_value[1K-1024]']),
    dict(name='allreduce-suffix-T-as-G',
         path='variable_mgr/allreduce/spec.py',
         old="             'T': 1 << 40}\n",
         new="             'T': 1 << 30}\n",
         tests=[ALLREDUCE_SPEC + 'test_limit_counts_elements_and_includes_'
                'its_value[1T-1099511627776]']),
    dict(name='allreduce-small-tensor-bound-exclusive',
         path='variable_mgr/allreduce/packing.py',
         old='             and 0 < layout.num_bytes(t) <= max_bytes)\n',
         new='             and 0 < layout.num_bytes(t) < max_bytes)\n',
         tests=[ALLREDUCE_PACKING + 'test_small_tensor_groups_are_upstreams_'
                'runs',
                ALL_REDUCE_FLAGS + 'test_small_gradient_limit_is_per_tensor_'
                'and_inclusive']),
    # Before tf_cnn_benchmarks' meaning: max_bytes bounded a whole group.
    dict(name='allreduce-small-bytes-bound-the-group',
         path='variable_mgr/allreduce/packing.py',
         old='    if run and (not small or t.dtype != tensors[run[-1]].dtype):\n',
         new='    if run and (not small or t.dtype != tensors[run[-1]].dtype or\n'
             '                sum(layout.num_bytes(tensors[j]) for j in run)\n'
             '                + layout.num_bytes(t) > max_bytes):\n',
         tests=[ALLREDUCE_PACKING + 'test_small_tensor_groups_keep_max_group',
                ALL_REDUCE_FLAGS + 'test_small_gradient_limit_is_per_tensor_'
                'and_inclusive']),
    dict(name='allreduce-small-run-spans-large-tensors',
         path='variable_mgr/allreduce/packing.py',
         old='    if run and (not small or t.dtype != tensors[run[-1]].dtype):\n',
         new='    if run and small and t.dtype != tensors[run[-1]].dtype:\n',
         tests=[ALLREDUCE_PACKING + 'test_small_tensor_groups_are_upstreams_'
                'runs']),
    dict(name='allreduce-small-last-run-dropped',
         path='variable_mgr/allreduce/packing.py',
         old='  close_run()\n  return groups\n',
         new='  return groups\n',
         tests=[ALLREDUCE_PACKING + 'test_small_tensor_groups_are_upstreams_'
                'runs']),
    # tf_cnn_benchmarks' extract_ranges admits max_group + 2 tensors.
    dict(name='allreduce-small-group-upstream-off-by-two',
         path='variable_mgr/allreduce/packing.py',
         old='    for start in range(0, len(run), max_group):\n'
             '      group = tuple(run[start:start + max_group])\n',
         new='    for start in range(0, len(run), max_group + 2):\n'
             '      group = tuple(run[start:start + max_group + 2])\n',
         tests=[ALLREDUCE_PACKING + 'test_small_tensor_groups_keep_max_group']),
    dict(name='allreduce-two-stage-outer-skipped',
         path='variable_mgr/allreduce/spec.py',
         old='  if len(workers) == 1:\n    return local\n',
         new='  if len(workers) >= 1:\n    return local\n',
         tests=[ALLREDUCE_WORKERS + 'test_spec_sums_across_two_workers['
                'pscpu/pscpu]']),
    dict(name='allreduce-two-stage-outer-drops-a-worker',
         path='variable_mgr/allreduce/spec.py',
         old='                        [[local[r][i] for i in indices] for r in '
             'reps],\n',
         new='                        [[local[reps[0]][i] for i in indices] for '
             'r in reps],\n',
         tests=[ALLREDUCE_WORKERS + 'test_spec_sums_across_two_workers['
                'xring/xring]']),
    dict(name='allreduce-two-stage-copies-back-the-local-sum',
         path='variable_mgr/allreduce/spec.py',
         old='            result[d][i] = tf.identity(value)\n',
         new='            result[d][i] = tf.identity(local[d][i])\n',
         tests=[ALLREDUCE_WORKERS + 'test_spec_sums_across_two_workers['
                'pscpu/pscpu]',
                ALLREDUCE_WORKERS + 'test_spec_sums_across_two_workers['
                'pscpu:7:xring/xring]']),
    # -- Core modules and benchmark helpers without an entry before -------------
    # A realistic refactor slip in each, on code that decides numbers or a
    # refusal.
    dict(name='loss-scale-halves-below-one',
         path='variable_mgr/mixed_precision.py',
         old='          bad, tf.maximum(scale * 0.5, 1.0),\n',
         new='          bad, scale * 0.5,\n',
         tests=['tests/test_mixed_precision.py::test_the_scale_does_not_fall_'
                'below_one']),
    dict(name='loss-scale-doubles-a-step-late',
         path='variable_mgr/mixed_precision.py',
         old='      grow = tf.logical_and(good, steps >= self.every_n)\n',
         new='      grow = tf.logical_and(good, steps > self.every_n)\n',
         tests=['tests/test_mixed_precision.py::test_the_dynamic_scale_follows_'
                'tf_cnn_benchmarks_schedule[resource]']),
    # Caught on TF 2 only: TF 1.15.5's optimiser leaves the ref state's
    # DeepCopy snapshot alone, so there the race does not exist.
    dict(name='step-state-ref-variables',
         path='variable_mgr/step_state.py',
         old='                       use_resource=True if RESOURCE_STATE else '
             'None)\n',
         new='                       use_resource=None)\n',
         tests=['tests/test_relaxed_consistency.py::test_every_read_of_the_'
                'step_state_runs_before_its_write[ref]']),
    dict(name='step-state-global-collection',
         path='variable_mgr/step_state.py',
         old='                       collections=[tf.GraphKeys.LOCAL_'
             'VARIABLES],\n',
         new='                       collections=[tf.GraphKeys.GLOBAL_'
             'VARIABLES],\n',
         tests=['tests/test_mixed_precision.py::test_saved_names_hold_no_'
                'internal_state',
                'tests/test_relaxed_consistency.py::test_every_read_of_the_'
                'step_state_runs_before_its_write[resource]']),
    dict(name='checkpoint-missing-data-shard-unnoticed',
         path='variable_mgr/checkpoint.py',
         old='    return [prefix + \'.data-00000-of-00001\']\n',
         new='    return []\n',
         tests=['tests/test_checkpoint.py::test_a_prefix_without_its_data_is_'
                'an_error']),
    dict(name='checkpoint-shape-checked-by-rank',
         path='variable_mgr/checkpoint.py',
         old='    if not shape.is_compatible_with(saved[name]):\n',
         new='    if shape.ndims != len(saved[name]):\n',
         tests=['tests/test_errors.py::test_checkpoint_variable_of_another_'
                'shape']),
    dict(name='gradient-state-waits-looked-up-by-tensor-name',
         path='variable_mgr/gradient_state.py',
         old='    return ordering.after(grad, self.waits.get(var.op.name, ()), '
             'self._index)\n',
         new='    return ordering.after(grad, self.waits.get(var.name, ()), '
             'self._index)\n',
         tests=[ORDERING + 'test_an_update_waits_for_a_late_read_of_its_'
                'variable[resource-replicated]',
                ORDERING + 'test_an_update_waits_for_a_late_read_of_its_'
                'variable[resource-ps_cpu]']),
    dict(name='training-options-loss-scale-below-one',
         path='variable_mgr/training_options.py',
         old='      not math.isfinite(scale) or scale < 1):\n',
         new='      not math.isfinite(scale) or scale <= 0):\n',
         tests=['tests/test_mixed_precision.py::test_bad_options_are_refused_'
                'before_any_graph']),
    dict(name='training-options-relaxed-with-two-passes',
         path='variable_mgr/training_options.py',
         old='  if options.relaxed and passes > 1:\n',
         new='  if options.relaxed and passes > 2:\n',
         tests=['tests/test_relaxed_consistency.py::test_relaxed_with_'
                'accumulation_is_refused']),
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
                'tests/benchmark/test_rough_edges.py::test_a_cluster_strategy_'
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
         old='    factor = 1.0 / size if self.use_mean else None\n',
         new='    factor = 1.0 / self.num_towers if self.use_mean else None\n',
         tests=['tests/distributed/test_collective_all_reduce.py::test_every_'
                'tower_of_every_worker_matches_numpy[2]']),
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
    dict(name='eval-counts-the-padding-as-examples',
         path='variable_mgr/benchmark/evaluation.py',
         old='      examples += int(out[\'count\'])\n',
         new='      examples += self.global_batch\n',
         tests=['tests/benchmark/test_eval.py::test_eval_of_a_known_checkpoint_'
                'is_numpys[False-strategy0]']),
    dict(name='eval-weighs-one-padded-image',
         path='variable_mgr/benchmark/evaluation.py',
         old='        weights = tf.cast(tf.range(self.global_batch) < count, '
             'tf.float32)\n',
         new='        weights = tf.cast(tf.range(self.global_batch) <= count, '
             'tf.float32)\n',
         tests=['tests/benchmark/test_eval.py::test_eval_of_a_known_checkpoint_'
                'is_numpys[False-strategy0]']),
    dict(name='imagenet-label-1001-accepted',
         path='variable_mgr/benchmark/imagenet_records.py',
         old='  in_range = tf.logical_and(label >= 0, label < num_classes)\n',
         new='  in_range = tf.logical_and(label >= 0, label <= num_classes)\n',
         tests=['tests/benchmark/test_imagenet_labels.py::test_a_label_outside_'
                'the_classes_names_its_record[validation-1001]']),
    dict(name='imagenet-whole-last-record-called-truncated',
         path='variable_mgr/benchmark/imagenet_records.py',
         old='      if end > size:\n',
         new='      if end >= size:\n',
         tests=['tests/benchmark/test_damaged_data.py::test_truncation_of_'
                'names_the_record']),
    dict(name='lr-piecewise-boundary-a-step-late',
         path='variable_mgr/benchmark/lr_schedule.py',
         old='    boundaries = [int(e * batches_per_epoch) - 1 for e in '
             'epochs]\n',
         new='    boundaries = [int(e * batches_per_epoch) for e in epochs]\n',
         tests=['tests/benchmark/test_optimizers.py::test_piecewise_schedule_'
                'changes_after_each_epoch']),
    dict(name='lr-decay-every-zero-steps-accepted',
         path='variable_mgr/benchmark/lr_schedule.py',
         old='    if decay_steps < 1:\n',
         new='    if decay_steps < 0:\n',
         tests=['tests/benchmark/test_tf_cnn_flags.py::test_schedule_steps_that_'
                'collapse_at_the_global_batch']),
    dict(name='adam-bias-correction-a-step-behind',
         path='variable_mgr/benchmark/optimizers.py',
         old='    t = tf.cast(self._step, tf.float32) + 1.0\n',
         new='    t = tf.cast(self._step, tf.float32)\n',
         tests=['tests/benchmark/test_optimizers.py::test_optimizer_matches_'
                'numpy[adam]']),
    dict(name='lr-decay-not-staircase',
         path='variable_mgr/benchmark/optimizers.py',
         old='            config.learning_rate_decay_factor, staircase=True)\n',
         new='            config.learning_rate_decay_factor, '
             'staircase=False)\n',
         tests=['tests/benchmark/test_optimizers.py::test_exponential_decay_is_'
                'staircase_and_bounded']),
    dict(name='batch-target-reached-exactly-runs',
         path='variable_mgr/benchmark/batch_target.py',
         old='  if left <= 0:\n',
         new='  if left < 0:\n',
         tests=['tests/benchmark/test_upstream_semantics.py::test_batches_left_'
                'are_tf_cnn_benchmarks_end_local_step']),
    dict(name='batch-target-async-steps-not-divided',
         path='variable_mgr/benchmark/batch_target.py',
         old='  steps = global_step // updates_a_step\n',
         new='  steps = global_step\n',
         tests=['tests/benchmark/test_upstream_semantics.py::test_batches_left_'
                'are_tf_cnn_benchmarks_end_local_step']),
    dict(name='flag-paths-unwritable-directory-accepted',
         path='variable_mgr/benchmark/flag_paths.py',
         old='    why = _cannot_create(path)\n',
         new='    why = None\n',
         tests=['tests/benchmark/test_flag_parsing.py::test_an_output_path_'
                'root_cannot_write_is_refused_before_the_run[--train_dir-'
                '/proc/1-extra5-the directory is not writable]']),
    dict(name='flag-paths-summary-dir-unchecked',
         path='variable_mgr/benchmark/flag_paths.py',
         old='  return [\'output\', \'trace_file\', \'train_dir\', '
             '\'summary_dir\']\n',
         new='  return [\'output\', \'trace_file\', \'train_dir\']\n',
         tests=['tests/benchmark/test_flag_parsing.py::test_an_output_path_'
                'root_cannot_write_is_refused_before_the_run[--summary_dir-'
                '/proc/foo-extra1-the directory /proc is not writable]']),
    dict(name='exit-status-refusal-exits-1',
         path='variable_mgr/benchmark/exit_status.py',
         old='    return fail(e, USAGE)\n',
         new='    return fail(e, FAILURE)\n',
         tests=['tests/benchmark/test_rough_edges.py::test_a_cluster_strategy_'
                'on_one_machine_is_refused',
                'tests/benchmark/test_rough_edges.py::test_launch_refuses_what_'
                'the_manager_would[main0]']),
    dict(name='exit-status-a-cause-repeated',
         path='variable_mgr/benchmark/exit_status.py',
         old='    if line and line not in causes:\n',
         new='    if line:\n',
         tests=['tests/benchmark/test_run_errors.py::test_cause_lines_of_both_'
                'generations']),
]


def _repository_files():
  """Paths (relative to REPO) that git tracks or would track."""
  out = subprocess.check_output(
      ['git', 'ls-files', '--cached', '--others', '--exclude-standard', '-z'],
      cwd=REPO)
  return [p for p in out.decode('utf-8').split('\0') if p]


def _copy_repository(files, destination):
  for path in files:
    source = os.path.join(REPO, path)
    if not os.path.isfile(source):
      continue  # Deleted in the working tree.
    target = os.path.join(destination, path)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.copy2(source, target)


def check_entries(mutations):
  """Problems of the entries themselves: a bad key, or an `old` text that
  does not occur exactly once in the working tree's file."""
  problems = []
  for m in mutations:
    keys = set(m)
    if keys != {'name', 'path', 'old', 'new', 'tests'}:
      problems.append('%s: keys %s, expected name, path, old, new, tests'
                      % (m.get('name'), sorted(keys)))
      continue
    if not m['tests']:
      problems.append('%s: no tests listed' % m['name'])
    path = os.path.join(REPO, m['path'])
    if not os.path.isfile(path):
      problems.append('%s: %s does not exist' % (m['name'], m['path']))
      continue
    with open(path) as f:
      count = f.read().count(m['old'])
    if count != 1:
      problems.append('%s: the old text occurs %d times in %s (must be '
                      'once); the code changed under this entry:\n%s'
                      % (m['name'], count, m['path'],
                         _indent(m['old'])))
  names = [m.get('name') for m in mutations]
  for name in sorted(set(n for n in names if names.count(n) > 1)):
    problems.append('%s: two entries have this name' % name)
  return problems


def _indent(text):
  return '\n'.join('    | ' + line for line in text.splitlines())


def _environment(copy):
  env = dict(os.environ)
  env['PYTHONPATH'] = copy + (os.pathsep + env['PYTHONPATH']
                              if env.get('PYTHONPATH') else '')
  env['PYTHONDONTWRITEBYTECODE'] = '1'
  env.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  env.pop('TF_CONFIG', None)
  return env


def _check_imports_copy(copy):
  """Refuses to go on if `import variable_mgr` in the copy would load the
  working tree's package (an editable install that wins over PYTHONPATH)."""
  found = subprocess.check_output(
      [sys.executable, '-c',
       'import variable_mgr, os; print(os.path.realpath(variable_mgr.__file__))'],
      cwd=copy, env=_environment(copy), universal_newlines=True).strip()
  if not found.startswith(os.path.realpath(copy) + os.sep):
    raise SystemExit('mutation check: in the copy, variable_mgr is imported '
                     'from %s, not from the copy; cannot test mutations.'
                     % found)


def run_tests(copy, tests):
  """(pytest exit status or None on timeout, output) of `tests` in `copy`."""
  command = [sys.executable, '-m', 'pytest', '-q', '-x', '-p',
             'no:cacheprovider'] + list(tests)
  try:
    result = subprocess.run(
        command, cwd=copy, env=_environment(copy), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        universal_newlines=True, timeout=RUN_TIMEOUT_SECS)
  except subprocess.TimeoutExpired as e:
    return None, e.output or ''
  return result.returncode, result.stdout


def _failed_tests(output):
  return [line.split(' ', 2)[1] for line in output.splitlines()
          if line.startswith(('FAILED ', 'ERROR ')) and ' ' in line]


def _tail(output, lines=15):
  return _indent('\n'.join(output.rstrip().splitlines()[-lines:]))


def main(argv=None):
  parser = argparse.ArgumentParser(
      description='Put known bugs back into a copy of the library and '
      'expect their tests to fail.')
  parser.add_argument('--only', action='append', default=[], metavar='NAME',
                      help='run this mutation only (may repeat)')
  parser.add_argument('--list', action='store_true',
                      help='print the mutation names and exit')
  parser.add_argument('--verbose', action='store_true',
                      help='print the end of pytest\'s output for every '
                      'mutation, to see why its tests failed')
  parser.add_argument('--no-baseline', action='store_true',
                      help='skip the run of every listed test on the '
                      'unmutated copy')
  args = parser.parse_args(argv)

  if args.list:
    for m in MUTATIONS:
      print('%-45s %s' % (m['name'], m['path']))
    return 0
  unknown = [n for n in args.only if n not in [m['name'] for m in MUTATIONS]]
  if unknown:
    print('mutation check: no mutation named %s; see --list.'
          % ', '.join(unknown))
    return 1
  chosen = [m for m in MUTATIONS if not args.only or m['name'] in args.only]
  problems = check_entries(chosen)
  if problems:
    print('mutation check: entries that cannot be applied:')
    for problem in problems:
      print('  ' + problem)
    return 1

  files = _repository_files()
  work = tempfile.mkdtemp(prefix='variable_mgr_mutation_')
  results = []
  try:
    baseline = os.path.join(work, 'baseline')
    _copy_repository(files, baseline)
    _check_imports_copy(baseline)
    if not args.no_baseline:
      tests = []
      for m in chosen:
        tests.extend(t for t in m['tests'] if t not in tests)
      start = time.time()
      status, output = run_tests(baseline, tests)
      if status != 0:
        print('mutation check: the listed tests do not pass on the unmutated '
              'copy (pytest exit status %s): a failure under a mutation would '
              'prove nothing.\n%s' % (status, _tail(output)))
        return 1
      print('baseline: %d tests pass unmutated (%.0fs)'
            % (len(tests), time.time() - start))
    for m in chosen:
      copy = os.path.join(work, m['name'])
      _copy_repository(files, copy)
      path = os.path.join(copy, m['path'])
      with open(path) as f:
        text = f.read()
      with open(path, 'w') as f:
        f.write(text.replace(m['old'], m['new'], 1))
      start = time.time()
      status, output = run_tests(copy, m['tests'])
      seconds = time.time() - start
      if status == 1:
        verdict = 'caught by %s' % ', '.join(_failed_tests(output)[:1] or
                                             ['a failed test'])
      elif status is None:
        verdict = 'MISSED: the tests ran longer than %ds' % RUN_TIMEOUT_SECS
      elif status == 0:
        verdict = 'MISSED: every listed test passed'
      else:
        verdict = ('MISSED: pytest exit status %d (the tests did not run):\n%s'
                   % (status, _tail(output)))
      results.append((m['name'], status == 1))
      print('%-45s %s (%.0fs)' % (m['name'], verdict, seconds))
      if args.verbose and status == 1:
        print(_tail(output))
      sys.stdout.flush()
      shutil.rmtree(copy, ignore_errors=True)
  finally:
    shutil.rmtree(work, ignore_errors=True)
  missed = [name for name, caught in results if not caught]
  print('%d of %d mutations caught%s' % (
      len(results) - len(missed), len(results),
      '; missed: ' + ', '.join(missed) if missed else ''))
  return 1 if missed else 0


if __name__ == '__main__':
  sys.exit(main())
