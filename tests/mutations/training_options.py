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
]
