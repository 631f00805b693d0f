"""Small slips across every area of the library and the benchmark: one to
three lines each (an index, a device, a rounding, a reduction, a reader
taken for a writer), planted one at a time without reading the tests
first, to find where no test looks. Seven of them passed the suite when
they were planted; the tests that catch them now are
tests/test_parameter_devices.py, test_gather_reads.py, test_staged_pulls.py,
allreduce/test_two_stage_representatives.py, benchmark/test_summary_steps.py
and benchmark/test_warmup_steps.py.

Entries of tests/mutation_check.py; see its docstring for the keys.
"""

MUTATIONS = [
    # independent: every tower applies tower 0's gradients to its own copy.
    dict(name='independent-every-tower-applies-tower-zero',
         path='variable_mgr/strategies/_replicas.py',
         old='    return list(state.payload[device_num])\n',
         new='    return list(state.payload[0])\n',
         tests=['tests/test_seed_bugs.py::test_preprocess_accepts_one_shot_iterators']),
    # parameter_server, local_parameter_device 'gpu': every variable placed
    # on the first tower's device instead of spread over the towers.
    dict(name='ps-gpu-variables-all-on-the-first-tower',
         path='variable_mgr/strategies/parameter_server.py',
         old='      return [placement.ParamServerDeviceSetter(d, raw_devices)\n',
         new='      return [placement.ParamServerDeviceSetter(d, raw_devices[:1])\n',
         tests=['tests/test_parameter_devices.py::test_local_ps_on_gpu_spreads_variables_over_the_towers']),
    # staged: every tower's staging areas made on tower 0's device.
    dict(name='staged-areas-on-tower-zero',
         path='variable_mgr/staging.py',
         old='    with tf.device(self.devices[self.device_num]):\n'
             '      area = compat.staging_area(',
         new='    with tf.device(self.devices[0]):\n'
             '      area = compat.staging_area(',
         tests=['tests/test_placement_graphs.py::test_distributed_ps_balances_variables_by_bytes']),
    # replicated with an all_reduce_spec: every tower's reduced gradient is
    # paired with tower 0's variable (tower 0 updated N times, others never).
    dict(name='replicated-spec-sums-paired-with-tower-zero',
         path='variable_mgr/strategies/replicated.py',
         old='        reduced[d][i] = (g, tower_grads[d][i][1])\n',
         new='        reduced[d][i] = (g, tower_grads[0][i][1])\n',
         tests=['tests/test_distributed_all_reduce.py::test_every_spec_steps_equal_numpy']),
    # distributed_replicated: the post-init copy of the masters skips tower 0.
    dict(name='distributed-replicated-post-init-skips-tower-zero',
         path='variable_mgr/strategies/distributed_replicated.py',
         old='      for d in range(self.num_towers):\n',
         new='      for d in range(1, self.num_towers):\n',
         tests=['tests/test_partitioning.py::test_partitioned_steps_equal_whole_steps_and_numpy']),
    # collective_all_reduce: the loss-scale broadcast's first instance key
    # is the finite check's.
    dict(name='collective-loss-scale-key-is-the-finite-key',
         path='variable_mgr/strategies/collective_all_reduce.py',
         old='LOSS_SCALE_INSTANCE_KEY_BASE = 2000001\n',
         new='LOSS_SCALE_INSTANCE_KEY_BASE = 2000000\n',
         tests=['tests/test_mixed_precision.py::test_collective_workers_skip_an_inf_of_another_worker']),
    # distributed_all_reduce: a one-stage pscpu sums on the host's parameter
    # device instead of CPU 0 of each worker (replicated's hook inherited).
    dict(name='distributed-all-reduce-pscpu-on-the-param-device',
         path='variable_mgr/strategies/distributed_all_reduce.py',
         old='  def _param_devices(self):\n'
             '    # A one-stage pscpu sums on every worker\'s CPU, not on worker 0\'s '
             'alone.\n    return None\n',
         new='  def _param_devices(self):\n'
             '    return [self.benchmark_cnn.param_server_device]\n',
         tests=['tests/test_parameter_devices.py::test_distributed_all_reduce_one_stage_pscpu_sums_on_every_worker']),
    # aggregation: sparse (IndexedSlices) gradients summed, not averaged,
    # under reduction='mean'.
    dict(name='aggregation-sparse-mean-not-scaled',
         path='variable_mgr/aggregation.py',
         old='      values = scale(values, 1.0 / count)\n',
         new='      values = tf.identity(values)\n',
         tests=['tests/test_aggregation.py::test_indexed_slices_sum_sparsely']),
    # allreduce halving-doubling: the last extra tower (k not a power of 2)
    # is not folded in.
    dict(name='allreduce-halving-doubling-drops-an-extra-tower',
         path='variable_mgr/allreduce/algorithms.py',
         old='      if d < extra:\n',
         new='      if d < extra - 1:\n',
         tests=['tests/allreduce/test_allreduce_algorithms.py::test_sum_on_every_tower']),
    # accumulation: float16 gradients accumulated in float16.
    dict(name='accumulation-float16-in-float16',
         path='variable_mgr/accumulation.py',
         old='          wide = tf.float32 if dtype == tf.float16 else dtype\n',
         new='          wide = dtype\n',
         tests=['tests/test_accumulation.py::test_float16_gradients_add_up_in_float32']),
    # mixed_precision: an inf on an accumulation micro-step (not counted)
    # halves the scale too.
    dict(name='loss-scale-halves-on-uncounted-steps',
         path='variable_mgr/mixed_precision.py',
         old='      bad = tf.logical_and(counted, tf.logical_not(finite))\n',
         new='      bad = tf.logical_not(finite)\n',
         tests=['tests/test_accumulation.py::test_with_use_fp16_an_inf_in_one_micro_batch_skips_its_cycle']),
    # ordering: every op whose type starts with 'Resource' (ResourceGather
    # included) taken as a writer, so a gather is not waited for.
    dict(name='ordering-resource-gather-taken-as-writer',
         path='variable_mgr/ordering.py',
         old="    'ResourceStridedSliceAssign',\n)\n",
         new="    'ResourceStridedSliceAssign', 'Resource',\n)\n",
         tests=['tests/test_gather_reads.py::test_an_update_waits_for_a_late_gather_of_its_variable',
                'tests/test_gather_reads.py::test_a_resource_gather_is_a_reader_and_an_update_is_not']),
    # checkpoint: an OutOfRangeError reading a damaged checkpoint escapes
    # unexplained.
    dict(name='checkpoint-out-of-range-not-explained',
         path='variable_mgr/checkpoint.py',
         old='  except (tf.errors.DataLossError, tf.errors.OutOfRangeError) as e:\n',
         new='  except tf.errors.DataLossError as e:\n',
         tests=['tests/test_checkpoint.py::test_a_corrupt_checkpoint_is_an_error_naming_it']),
    # evaluation: the manager's post-init ops not run after the restore.
    dict(name='eval-post-init-not-run',
         path='variable_mgr/benchmark/training/evaluation.py',
         old='    if self._post_init is not None:\n'
             '      sess.run(self._post_init)\n',
         new='',
         tests=['tests/benchmark/training/test_eval.py::test_eval_of_a_known_checkpoint_is_numpys']),
    # imagenet: the evaluation crop's offsets swapped (left, top).
    dict(name='imagenet-eval-crop-offsets-swapped',
         path='variable_mgr/benchmark/data/imagenet_records.py',
         old='tf.stack([top, left, 0])',
         new='tf.stack([left, top, 0])',
         tests=['tests/benchmark/data/test_datasets.py::test_imagenet_validation_is_the_central_crop']),
    # optimizers: --rmsprop_decay and --rmsprop_momentum swapped.
    dict(name='rmsprop-decay-and-momentum-swapped',
         path='variable_mgr/benchmark/training/optimizers.py',
         old='    return tf.train.RMSPropOptimizer(rate, config.rmsprop_decay,\n'
             '                                     momentum=config.rmsprop_momentum,\n',
         new='    return tf.train.RMSPropOptimizer(rate, config.rmsprop_momentum,\n'
             '                                     momentum=config.rmsprop_decay,\n',
         tests=['tests/benchmark/training/test_optimizers.py::test_optimizer_matches_numpy']),
    # local_run: summaries of a restored run numbered from 0, not from the
    # restored global step.
    dict(name='summaries-numbered-from-zero-after-restore',
         path='variable_mgr/benchmark/runs/local_run.py',
         old="          writer.add_summary(out['summary'], first_global_step + steps_run)\n",
         new="          writer.add_summary(out['summary'], steps_run)\n",
         tests=['tests/benchmark/training/test_summary_steps.py::test_a_restored_run_numbers_its_summaries_by_the_global_step']),
    # placement: a slice of exactly min_bytes refused (the count that
    # gives it is passed over for fewer slices).
    dict(name='placement-slice-of-exactly-min-bytes-refused',
         path='variable_mgr/placement.py',
         old='    if (dims[0] // count) * row_bytes >= min_bytes:\n',
         new='    if (dims[0] // count) * row_bytes > min_bytes:\n',
         tests=['tests/test_partition_slices.py::test_twelve_slices_match_numpy']),
    # placement: the tasks that hold a slice of a variable not recorded, so
    # its slices may share a PS task.
    dict(name='placement-slices-may-share-a-task',
         path='variable_mgr/placement.py',
         old='    used.add(task)\n',
         new='',
         tests=['tests/test_partitioning.py::test_slices_of_one_variable_go_to_different_tasks']),
    # step_state: the manager's state variables (accumulators, deferred
    # gradients, counters) made trainable.
    dict(name='step-state-trainable',
         path='variable_mgr/step_state.py',
         old='    return tf.Variable(initial, name=name, trainable=False,\n',
         new='    return tf.Variable(initial, name=name, trainable=True,\n',
         tests=['tests/test_mixed_precision.py::test_towers_compute_in_float16_on_float32_variables']),
    # optimizers: --minimum_learning_rate taken as a maximum.
    dict(name='lr-minimum-rate-as-a-maximum',
         path='variable_mgr/benchmark/training/optimizers.py',
         old='          rate = tf.maximum(rate, config.minimum_learning_rate)\n',
         new='          rate = tf.minimum(rate, config.minimum_learning_rate)\n',
         tests=['tests/benchmark/training/test_optimizers.py::test_exponential_decay_is_staircase_and_bounded']),
    # allreduce spec: a two-stage range's outer stage always on the first
    # device of each worker, not on device i mod local_count for tensor i.
    dict(name='allreduce-two-stage-outer-always-on-the-first-device',
         path='variable_mgr/allreduce/spec.py',
         old='    reps = tuple(group[i % len(group)] for group in groups)\n',
         new='    reps = tuple(group[0] for group in groups)\n',
         tests=['tests/allreduce/test_two_stage_representatives.py::test_tensor_i_crosses_from_local_tower_i_mod_towers']),
    # allreduce packing: repacking makes at most one pack a tensor, not
    # --gradient_repacking packs.
    dict(name='allreduce-repacking-at-most-one-pack-a-tensor',
         path='variable_mgr/allreduce/packing.py',
         old='    pieces = layout.split_sizes(total, min(num_packs, total))\n',
         new='    pieces = layout.split_sizes(total, min(num_packs, len(indices)))\n',
         tests=['tests/allreduce/test_allreduce_packing.py::test_repack_packs_per_dtype']),
    # flags: --max_ckpts_to_keep without --train_dir accepted (and ignored).
    dict(name='flags-max-ckpts-without-train-dir-accepted',
         path='variable_mgr/benchmark/flags/input_checks.py',
         old="    ('max_ckpts_to_keep', 'train_dir'),\n",
         new='',
         tests=['tests/benchmark/training/test_eval.py::test_modifier_without_its_flag_is_refused']),
    # cluster worker: a time-based save waits one step more when the step
    # starts exactly --save_model_secs after the last save.
    dict(name='cluster-save-secs-boundary-exclusive',
         path='variable_mgr/benchmark/cluster/worker_task.py',
         old='    if self.every_secs and self.clock() - self.last_save >= self.every_secs:\n',
         new='    if self.every_secs and self.clock() - self.last_save > self.every_secs:\n',
         tests=['tests/distributed/test_cluster_checkpoints.py::test_save_schedule_by_steps_and_by_time']),
    # staging (distributed): the copy of a variable to the worker CPU made
    # once a tower instead of once a worker.
    dict(name='staged-copy-to-the-worker-cpu-once-a-tower',
         path='variable_mgr/staging.py',
         old='      if name not in cache:\n',
         new='      if True:\n',
         tests=['tests/test_staged_pulls.py::test_one_snapshot_a_variable_fills_every_towers_area']),
    # batch_target: a restored asynchronous worker's steps rounded up.
    dict(name='batch-target-async-steps-rounded-up',
         path='variable_mgr/benchmark/training/batch_target.py',
         old='  steps = global_step // updates_a_step\n',
         new='  steps = -(-global_step // updates_a_step)\n',
         tests=['tests/benchmark/training/test_upstream_semantics.py::test_batches_left_are_tf_cnn_benchmarks_end_local_step']),
    # lr_schedule: the warmup's steps from a whole number of steps an epoch.
    dict(name='lr-warmup-steps-from-whole-epochs',
         path='variable_mgr/benchmark/flags/lr_schedule.py',
         old='    warmup_steps = int(batches_per_epoch *\n'
             '                       config.num_learning_rate_warmup_epochs)\n',
         new='    warmup_steps = int(int(batches_per_epoch) *\n'
             '                       config.num_learning_rate_warmup_epochs)\n',
         tests=['tests/benchmark/training/test_warmup_steps.py::test_warmup_steps_are_the_unrounded_epoch_times_its_epochs',
                'tests/benchmark/training/test_warmup_steps.py::test_two_epochs_of_digits_warm_up_for_93_steps']),
    # staging: a partitioned variable's staged slices concatenated in
    # reverse order.
    dict(name='staged-slices-concatenated-in-reverse',
         path='variable_mgr/staging.py',
         old='      return tf.concat(gets, axis)\n',
         new='      return tf.concat(gets[::-1], axis)\n',
         tests=['tests/test_partitioning.py::test_partitioned_steps_equal_whole_steps_and_numpy']),
    # distributed_replicated: the copy back of a master does not wait for
    # the barrier (every worker's update of it).
    dict(name='distributed-replicated-copy-back-before-the-barrier',
         path='variable_mgr/strategies/distributed_replicated.py',
         old='      with tf.control_dependencies([barrier]):\n',
         new='      with tf.control_dependencies([]):\n',
         tests=['tests/test_partitioning.py::test_partitioned_steps_equal_whole_steps_and_numpy']),
    # benchmark harness: every tower trains on the same synthetic batch.
    dict(name='synthetic-towers-share-one-batch',
         path='variable_mgr/benchmark/training/harness.py',
         old='                                            config.seed, first_input + d)\n',
         new='                                            config.seed, first_input)\n',
         tests=['tests/benchmark/training/test_optimizers.py::test_optimizer_matches_numpy']),
    # imagenet: the boxes read as (xmin, ymin, xmax, ymax).
    dict(name='imagenet-boxes-x-and-y-swapped',
         path='variable_mgr/benchmark/data/imagenet_records.py',
         old="                 for k in ('ymin', 'xmin', 'ymax', 'xmax')]\n",
         new="                 for k in ('xmin', 'ymin', 'xmax', 'ymax')]\n",
         tests=['tests/benchmark/data/test_datasets.py::test_imagenet_training_crops_cover_the_boxes']),
    # training_options: inc_loss_scale_every_n=0 accepted.
    dict(name='training-options-every-n-zero-accepted',
         path='variable_mgr/training_options.py',
         old='  if not _is_int(n) or n < 1:\n',
         new='  if not _is_int(n) or n < 0:\n',
         tests=['tests/test_mixed_precision.py::test_bad_options_are_refused_before_any_graph']),
    # training_options: inc_loss_scale_every_n with a fixed loss scale
    # accepted (and ignored).
    dict(name='training-options-every-n-without-auto-accepted',
         path='variable_mgr/training_options.py',
         old='  if not options.auto_loss_scale and n != 1000:\n',
         new='  if False and not options.auto_loss_scale and n != 1000:\n',
         tests=['tests/test_mixed_precision.py::test_bad_options_are_refused_before_any_graph']),
]
