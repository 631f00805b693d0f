"""The benchmark's flags: the table, parsing, the checks and their refusals.

Entries of tests/mutation_check.py; see its docstring for the keys.
"""

EVAL = 'tests/benchmark/training/test_eval.py::'
FLAG_PARSING = 'tests/benchmark/flags/test_flag_parsing.py::'
ROUGH_EDGES = 'tests/benchmark/runs/test_rough_edges.py::'
TF_CNN = 'tests/benchmark/flags/test_tf_cnn_flags.py::'
UPSTREAM = 'tests/benchmark/training/test_upstream_semantics.py::'

MUTATIONS = [
    dict(name='flag-paths-unwritable-directory-accepted',
         path='variable_mgr/benchmark/flags/output_paths.py',
         old='    why = _cannot_create(path)\n',
         new='    why = None\n',
         tests=['tests/benchmark/flags/test_flag_parsing.py::test_an_output_path_'
                'root_cannot_write_is_refused_before_the_run[--train_dir-'
                '/proc/1-extra5-the directory is not writable]']),
    dict(name='flag-paths-summary-dir-unchecked',
         path='variable_mgr/benchmark/flags/output_paths.py',
         old='  return [\'output\', \'trace_file\', \'train_dir\', '
             '\'summary_dir\']\n',
         new='  return [\'output\', \'trace_file\', \'train_dir\']\n',
         tests=['tests/benchmark/flags/test_flag_parsing.py::test_an_output_path_'
                'root_cannot_write_is_refused_before_the_run[--summary_dir-'
                '/proc/foo-extra1-the directory /proc is not writable]']),
    # -- Cross-checks of the data, eval and checkpoint flags (flag_checks) ---
    # --eval checks the directory, not the checkpoint in it: an empty
    # --train_dir passes the flags and fails later, in the graph.
    dict(name='flag-eval-dir-without-a-checkpoint-accepted',
         path='variable_mgr/benchmark/flags/input_checks.py',
         old="    if not os.path.isfile(os.path.join(args.train_dir, "
             "'checkpoint')):\n",
         new='    if not os.path.isdir(args.train_dir):\n',
         tests=[EVAL + 'test_no_checkpoint_is_refused_naming_the_directory']),
    dict(name='flag-save-model-secs-modifies-summary-dir',
         path='variable_mgr/benchmark/flags/input_checks.py',
         old="    ('save_model_secs', 'train_dir'),\n",
         new="    ('save_model_secs', 'summary_dir'),\n",
         tests=[EVAL + 'test_modifier_without_its_flag_is_refused[argv2---'
                'save_model_secs=60 without --train_dir:]']),
    # -- Launch modes (flag_mode_checks) ---------------------------------------
    # A cluster flag on one machine refused only when true, as the
    # local-only flags are: --nocross_replica_sync passes, ignored.
    dict(name='flag-false-cluster-flag-on-one-machine-accepted',
         path='variable_mgr/benchmark/flags/mode_checks.py',
         old='    ignored = [f for f in CLUSTER_ONLY_FLAGS if f in typed]\n',
         new='    ignored = [f for f in CLUSTER_ONLY_FLAGS if f in typed and '
             'getattr(args, f)]\n',
         tests=[TF_CNN + 'test_no_forms_on_the_command_line']),
    # TF_CONFIG beside a single task flag (--task_index) taken.
    dict(name='flag-tf-config-beside-one-task-flag-accepted',
         path='variable_mgr/benchmark/flags/mode_checks.py',
         old='  if tf_config and task_flags:\n',
         new='  if tf_config and len(task_flags) > 1:\n',
         tests=[ROUGH_EDGES + 'test_tf_config_and_cluster_flags_are_refused']),
    # -- Rates and epochs (flag_rate_checks) -----------------------------------
    # --num_epochs rounded down: the last, partial epoch is not trained.
    dict(name='flag-num-epochs-rounded-down',
         path='variable_mgr/benchmark/flags/rate_checks.py',
         old='  args.num_batches = int(math.ceil(args.num_epochs * '
             'examples_per_epoch(args)\n',
         new='  args.num_batches = int((args.num_epochs * '
             'examples_per_epoch(args)\n',
         tests=[TF_CNN + 'test_num_epochs_is_timed_batches_as_tf_cnn_counts_'
                'them']),
    # The global batch of one worker: a cluster trains --num_epochs times
    # its worker count.
    dict(name='flag-epochs-global-batch-of-one-worker',
         path='variable_mgr/benchmark/flags/rate_checks.py',
         old='  return sorted(set(per_tower * t * max(workers, 1) for t in '
             'towers))\n',
         new='  return sorted(set(per_tower * t for t in towers))\n',
         tests=[TF_CNN + 'test_num_epochs_is_timed_batches_as_tf_cnn_counts_'
                'them']),
    # -- replicated's all-reduce flags (flag_allreduce_checks) -----------------
    dict(name='flag-hierarchical-copy-on-one-tower-accepted',
         path='variable_mgr/benchmark/flags/allreduce_checks.py',
         old='  if args.num_gpus < 2:\n',
         new='  if args.num_gpus < 1:\n',
         tests=[UPSTREAM + 'test_all_reduce_flag_refusals']),
    # --nocompact_gradient_transfer, always accepted, refused as a typed
    # --compact_gradient_transfer would be.
    dict(name='flag-nocompact-transfer-refused',
         path='variable_mgr/benchmark/flags/allreduce_checks.py',
         old="  if 'compact_gradient_transfer' not in typed or (\n"
             '      not args.compact_gradient_transfer):\n',
         new="  if 'compact_gradient_transfer' not in typed:\n",
         tests=[UPSTREAM + 'test_all_reduce_flags_that_are_accepted']),
    # -- Reading the command line (flag_scan, flag_text, flags) ----------------
    # Any token with a dash taken for a flag: `--seed -3` loses its value.
    dict(name='flag-scan-negative-number-taken-for-a-flag',
         path='variable_mgr/benchmark/flags/scan.py',
         old="  return token.startswith('-') and (\n"
             "      name in flag_values or name[2:] in flag_values and "
             "name[:2] == 'no')\n",
         new="  return token.startswith('-')\n",
         tests=[FLAG_PARSING + 'test_a_flag_is_not_taken_for_the_value_of_'
                'another']),
    # The --no prefix cut one letter too far: --nostaged_vars reads as
    # --taged_vars, unknown.
    dict(name='flag-scan-no-prefix-off-by-one',
         path='variable_mgr/benchmark/flags/scan.py',
         old="    negated = name[2:] if name.startswith('no') and len(name) > 2 "
             "else None\n",
         new="    negated = name[3:] if name.startswith('no') and len(name) > 2 "
             "else None\n",
         tests=[TF_CNN + 'test_no_forms_on_the_command_line']),
    # A --no form named with its value: '--nocross_replica_sync=false'.
    dict(name='flag-text-no-form-given-a-value',
         path='variable_mgr/benchmark/flags/as_typed.py',
         old="  if parsed is False and name.lstrip('-') == 'no' + dest:\n",
         new="  if parsed is False and name.lstrip('-') == dest:\n",
         tests=[TF_CNN + 'test_no_forms_on_the_command_line']),
    # Every refusal listed, but the value refusals after the scan's.
    dict(name='flags-refusals-out-of-command-line-order',
         path='variable_mgr/benchmark/flags/command_line.py',
         old='  problems = [m for _, m in sorted(problems, key=lambda p: '
             'p[0])]\n',
         new='  problems = [m for _, m in problems]\n',
         tests=[FLAG_PARSING + 'test_unknown_flags_and_bad_values_are_listed_'
                'in_order']),
    # --num_eval_batches defaults to --num_batches for --eval only, not for
    # --eval_during_training_every_n_steps.
    dict(name='flags-eval-batches-default-for-eval-only',
         path='variable_mgr/benchmark/flags/command_line.py',
         old='      args.eval or args.eval_during_training_every_n_steps):\n',
         new='      args.eval):\n',
         tests=[UPSTREAM + 'test_num_eval_batches_defaults_to_num_batches']),
    # -- Values and defaults (flag_types, flag_table, tf_cnn_flags) ------------
    dict(name='flag-types-fraction-takes-one',
         path='variable_mgr/benchmark/flags/value_types.py',
         old='  if not 0 <= number < 1:\n'
             "    raise ValueError('must be at least 0 and below 1;",
         new='  if not 0 <= number <= 1:\n'
             "    raise ValueError('must be at least 0 and below 1;",
         tests=[TF_CNN + 'test_optimizer_values_are_refused_as_typed']),
    # fp16 and fp16_auto counted as two options: 'fp16+fp16_auto' taken.
    dict(name='flag-types-fp16-and-fp16-auto-in-one-set',
         path='variable_mgr/benchmark/flags/value_types.py',
         old="      kinds.append('fp16' if token.startswith('fp16') else token)\n",
         new='      kinds.append(token)\n',
         tests=['tests/benchmark/runs/test_compare.py::test_bad_option_sets_are_'
                'refused_as_typed']),
    # A megabit of 2^20 bits: tc's units are decimal. The test of
    # link_rate's units in test_flag_parsing.py was written for this entry.
    dict(name='flag-types-megabit-binary',
         path='variable_mgr/benchmark/flags/value_types.py',
         old="RATE_UNITS = (('gbit', 10**9), ('mbit', 10**6), ",
         new="RATE_UNITS = (('gbit', 10**9), ('mbit', 2**20), ",
         tests=[FLAG_PARSING + 'test_a_link_rate_is_bits_per_second_in_tcs_'
                'decimal_units']),
    dict(name='flag-table-adam-beta2-default',
         path='variable_mgr/benchmark/flags/table.py',
         old="    flag('adam_beta2', t.fraction, 0.999, '--optimizer=adam: "
             "beta2'),\n",
         new="    flag('adam_beta2', t.fraction, 0.99, '--optimizer=adam: "
             "beta2'),\n",
         tests=[TF_CNN + 'test_optimizer_defaults_are_tf_cnn_benchmarks']),
    # The command's default strategy replicated, as it once was;
    # tf_cnn_benchmarks' is parameter_server.
    dict(name='flag-table-default-strategy-replicated',
         path='variable_mgr/benchmark/flags/table.py',
         old="      choice('variable_update', STRATEGY_NAMES, "
             "'parameter_server',\n",
         new="      choice('variable_update', STRATEGY_NAMES, 'replicated',\n",
         tests=[UPSTREAM + 'test_defaults_are_tf_cnn_benchmarks']),
    # The refusal of --xla says the benchmark always runs as --xla.
    dict(name='tf-cnn-always-names-the-other-form',
         path='variable_mgr/benchmark/flags/tf_cnn_refused.py',
         old="    return '--%s' % name if same else '--no%s' % name\n",
         new="    return '--no%s' % name if same else '--%s' % name\n",
         tests=[TF_CNN + 'test_a_tf_cnn_flag_with_what_this_benchmark_does_is_'
                'accepted']),
    # An int flag's value read as a float: --batch_group_size=1 is 1.0, not
    # the int 1 this benchmark takes, and refused.
    dict(name='tf-cnn-int-read-as-float',
         path='variable_mgr/benchmark/flags/tf_cnn_refused.py',
         old="    if kind == 'int':\n      return int(text)\n",
         new="    if kind == 'int':\n      return float(text)\n",
         tests=[TF_CNN + 'test_a_tf_cnn_flag_with_what_this_benchmark_does_is_'
                'accepted']),
    # -- The run's config and the commands (run_config, cli, distributed) -----
    # The model's constant rate given to resnet50, whose default is
    # tf_cnn_benchmarks' schedule scaled with the global batch.
    dict(name='run-config-resnet-schedule-replaced-by-a-rate',
         path='variable_mgr/benchmark/training/run_config.py',
         old='        learning_rate=(model.learning_rate if self.learning_rate '
             'is None and\n'
             '                       not scheduled else self.learning_rate),\n',
         new='        learning_rate=(model.learning_rate if self.learning_rate '
             'is None\n'
             '                       else self.learning_rate),\n',
         tests=['tests/benchmark/training/test_optimizers.py::test_resnet_default_is_'
                'tf_cnn_benchmarks_scaled_schedule']),
    # `or` where None is meant: --weight_decay=0 becomes the model's
    # default. tests/benchmark/training/test_run_config.py was written for this
    # entry.
    dict(name='run-config-zero-weight-decay-replaced',
         path='variable_mgr/benchmark/training/run_config.py',
         old='        weight_decay=(model.weight_decay if self.weight_decay is '
             'None\n'
             '                      else self.weight_decay))\n',
         new='        weight_decay=self.weight_decay or model.weight_decay)\n',
         tests=['tests/benchmark/training/test_run_config.py::test_resolved_keeps_a_'
                'weight_decay_of_zero']),
    # Keras 2 no longer selected before TensorFlow is imported: the
    # tf.compat.v1.layers models fail under Keras 3. Caught on TF 2.16 and
    # later only: before, Keras 2 is TensorFlow's own and the test skips.
    dict(name='cli-keras-2-not-selected',
         path='variable_mgr/benchmark/cli.py',
         old="  os.environ.setdefault('TF_USE_LEGACY_KERAS', '1')\n",
         new='',
         tests=['tests/benchmark/runs/test_cli.py::test_layer_models_run_without_'
                'the_keras_variable_set'],
         caught_on=2),
    # The task command reading the one-machine command's flags: without
    # --job_name it is no cluster task. The test was written for this entry.
    dict(name='distributed-task-flags-read-as-one-machines',
         path='variable_mgr/benchmark/distributed.py',
         old='    args = command_line.parse_task_args(argv)\n',
         new='    args = command_line.parse_args(argv)\n',
         tests=['tests/distributed/test_tf_config.py::test_a_task_command_'
                'without_a_task_is_a_cluster_task']),
]
