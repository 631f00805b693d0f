"""Training options and their state: accumulation, loss scale, the step state,
checkpoints, the host interface.

Entries of tests/mutation_check.py; see its docstring for the keys.
"""

MUTATIONS = [
    dict(name='accumulation-dtype-integer-accepted',
         path='variable_mgr/validation.py',
         old='  if result is None or not result.is_floating:\n',
         new='  if result is None:\n',
         tests=['tests/test_errors.py::test_bad_accumulation_dtype']),
    dict(name='interface-inherited-stub-counts',
         path='variable_mgr/interface.py',
         old='           if _is_documentation_only(getattr(benchmark_cnn, a))]\n',
         new='           if False]\n',
         tests=['tests/test_errors.py::test_distributed_replicated_host_'
                'inheriting_the_barrier_stub']),
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
                'step_state_runs_before_its_write[ref]'],
         caught_on=2),
    dict(name='step-state-global-collection',
         path='variable_mgr/step_state.py',
         old='                else tf.GraphKeys.LOCAL_VARIABLES)\n',
         new='                else tf.GraphKeys.GLOBAL_VARIABLES)\n',
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
    # A dynamic loss scale on a synchronous PS cluster: each worker skips on
    # its own flag only, so a step with an inf on one worker is applied by
    # the others.
    dict(name='synchronous-ps-workers-skip-on-their-own-flag',
         path='variable_mgr/strategies/shared_loss_scale.py',
         old='    if workers == 1 or not self.synchronous:\n      return local',
         new='    if True:\n      return local',
         tests=['tests/test_cluster_loss_scale.py::test_synchronous_steps_'
                'skip_together[resource-parameter_server]']),
    # The exchange of finite flags no longer waits for this worker's reads
    # of the shared variables (another worker could update them first).
    dict(name='loss-scale-exchange-does-not-wait-for-reads',
         path='variable_mgr/strategies/shared_loss_scale.py',
         old='    if self.exchange_after_reads:',
         new='    if False:',
         tests=['tests/distributed/test_staged_overlap.py::test_a_dynamic_'
                'scale_exchange_replaces_gradients_ready[resource]']),
    # The shared scale a local variable of each worker: a checkpoint does
    # not carry it.
    dict(name='shared-loss-scale-local-on-each-worker',
         path='variable_mgr/strategies/shared_loss_scale.py',
         old='shared=True, read_device',
         new='shared=False, read_device',
         tests=['tests/test_cluster_loss_scale.py::test_a_checkpoint_'
                'restores_the_shared_scale']),
]
