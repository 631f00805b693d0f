"""The benchmark's run: the training loop, evaluation, schedules, optimisers,
exit status.

Entries of tests/mutation_check.py; see its docstring for the keys.
"""

MUTATIONS = [
    dict(name='restored-run-times-num-batches-more',
         path='variable_mgr/benchmark/runs/local_run.py',
         old='      for step in range(-config.num_warmup_batches, num_batches):\n',
         new='      for step in range(-config.num_warmup_batches, '
         'config.num_batches):\n',
         tests=['tests/benchmark/training/test_upstream_semantics.py::'
                'test_a_restored_run_trains_to_num_batches']),
    dict(name='gradient-clip-dropped',
         path='variable_mgr/benchmark/training/harness.py',
         old='  if clip is None:\n    return grads\n',
         new='  return grads\n',
         tests=['tests/benchmark/training/test_upstream_semantics.py::'
                'test_gradient_clip_matches_numpy']),
    dict(name='eval-counts-the-padding-as-examples',
         path='variable_mgr/benchmark/training/evaluation.py',
         old='      examples += int(out[\'count\'])\n',
         new='      examples += self.global_batch\n',
         tests=['tests/benchmark/training/test_eval.py::test_eval_of_a_known_checkpoint_'
                'is_numpys[False-strategy0]']),
    dict(name='eval-weighs-one-padded-image',
         path='variable_mgr/benchmark/training/evaluation.py',
         old='        weights = tf.cast(tf.range(self.global_batch) < count, '
             'tf.float32)\n',
         new='        weights = tf.cast(tf.range(self.global_batch) <= count, '
             'tf.float32)\n',
         tests=['tests/benchmark/training/test_eval.py::test_eval_of_a_known_checkpoint_'
                'is_numpys[False-strategy0]']),
    dict(name='lr-piecewise-boundary-a-step-late',
         path='variable_mgr/benchmark/flags/lr_schedule.py',
         old='    boundaries = [int(e * batches_per_epoch) - 1 for e in '
             'epochs]\n',
         new='    boundaries = [int(e * batches_per_epoch) for e in epochs]\n',
         tests=['tests/benchmark/training/test_optimizers.py::test_piecewise_schedule_'
                'changes_after_each_epoch']),
    dict(name='lr-decay-every-zero-steps-accepted',
         path='variable_mgr/benchmark/flags/lr_schedule.py',
         old='    if decay_steps < 1:\n',
         new='    if decay_steps < 0:\n',
         tests=['tests/benchmark/flags/test_tf_cnn_flags.py::test_schedule_steps_that_'
                'collapse_at_the_global_batch']),
    dict(name='adam-bias-correction-a-step-behind',
         path='variable_mgr/benchmark/training/optimizers.py',
         old='    t = tf.cast(self._step, tf.float32) + 1.0\n',
         new='    t = tf.cast(self._step, tf.float32)\n',
         tests=['tests/benchmark/training/test_optimizers.py::test_optimizer_matches_'
                'numpy[adam]']),
    dict(name='lr-decay-not-staircase',
         path='variable_mgr/benchmark/training/optimizers.py',
         old='            config.learning_rate_decay_factor, staircase=True)\n',
         new='            config.learning_rate_decay_factor, '
             'staircase=False)\n',
         tests=['tests/benchmark/training/test_optimizers.py::test_exponential_decay_is_'
                'staircase_and_bounded']),
    dict(name='batch-target-reached-exactly-runs',
         path='variable_mgr/benchmark/training/batch_target.py',
         old='  if left <= 0:\n',
         new='  if left < 0:\n',
         tests=['tests/benchmark/training/test_upstream_semantics.py::test_batches_left_'
                'are_tf_cnn_benchmarks_end_local_step']),
    dict(name='batch-target-async-steps-not-divided',
         path='variable_mgr/benchmark/training/batch_target.py',
         old='  steps = global_step // updates_a_step\n',
         new='  steps = global_step\n',
         tests=['tests/benchmark/training/test_upstream_semantics.py::test_batches_left_'
                'are_tf_cnn_benchmarks_end_local_step']),
    dict(name='exit-status-refusal-exits-1',
         path='variable_mgr/benchmark/runs/exit_status.py',
         old='    return fail(e, USAGE)\n',
         new='    return fail(e, FAILURE)\n',
         tests=['tests/benchmark/runs/test_rough_edges.py::test_a_cluster_strategy_'
                'on_one_machine_is_refused',
                'tests/benchmark/runs/test_rough_edges.py::test_launch_refuses_what_'
                'the_manager_would[main0]']),
    dict(name='exit-status-a-cause-repeated',
         path='variable_mgr/benchmark/runs/exit_status.py',
         old='    if line and line not in causes:\n',
         new='    if line:\n',
         tests=['tests/benchmark/runs/test_run_errors.py::test_cause_lines_of_both_'
                'generations']),
]
