"""tf_cnn_benchmarks' flags that this benchmark lacks, refused by name.

A command line of tf_cnn_benchmarks runs here when it uses the flags this
benchmark has; each flag of TF_CNN_FLAGS that it lacks is refused by its own
name (as typed), unless given with the one value that says what this
benchmark always does (TF_CNN_SAME_VALUES), which is accepted and changes
nothing. The refused flags are defined in the parser too (booleans as
absl booleans), so absl reads their forms (`--noxla`, `-xla`, `--flag
value`) and `--helpfull` lists them.
"""

from absl import flags as absl_flags

from variable_mgr.benchmark.flags import value_types

TF_CNN_MODULE = 'tf_cnn_benchmarks flags this benchmark refuses'

# tf_cnn_benchmarks' flags (scripts/tf_cnn_benchmarks/benchmark_cnn.py of
# tensorflow/benchmarks, 137 flags): (name, kind, default). Kinds: bool,
# int, float, string, enum, list. A flag of this table that the parser
# lacks is refused by name (`refusal`), unless its value is one of
# TF_CNN_SAME_VALUES.
TF_CNN_FLAGS = (
    ('model', 'string', 'trivial'),
    ('eval', 'bool', False),
    ('eval_interval_secs', 'int', 0),
    ('eval_during_training_every_n_steps', 'int', None),
    ('eval_during_training_every_n_epochs', 'float', None),
    ('eval_during_training_at_specified_steps', 'list', ''),
    ('eval_during_training_at_specified_epochs', 'list', ''),
    ('forward_only', 'bool', False),
    ('freeze_when_forward_only', 'bool', False),
    ('print_training_accuracy', 'bool', False),
    ('batch_size', 'int', 0),
    ('eval_batch_size', 'int', 0),
    ('batch_group_size', 'int', 1),
    ('num_batches', 'int', None),
    ('num_eval_batches', 'int', None),
    ('num_epochs', 'float', None),
    ('num_eval_epochs', 'float', None),
    ('stop_at_top_1_accuracy', 'float', None),
    ('collect_eval_results_async', 'bool', False),
    ('num_warmup_batches', 'int', None),
    ('autotune_threshold', 'int', None),
    ('num_gpus', 'int', 1),
    ('gpu_indices', 'string', ''),
    ('display_every', 'int', 10),
    ('display_perf_ewma', 'float', None),
    ('data_dir', 'string', None),
    ('data_name', 'string', None),
    ('resize_method', 'string', 'bilinear'),
    ('distortions', 'bool', False),
    ('use_datasets', 'bool', True),
    ('input_preprocessor', 'string', 'default'),
    ('gpu_thread_mode', 'string', 'gpu_private'),
    ('per_gpu_thread_count', 'int', 0),
    ('hierarchical_copy', 'bool', False),
    ('network_topology', 'enum', 'dgx1'),
    ('gradient_repacking', 'int', 0),
    ('compact_gradient_transfer', 'bool', True),
    ('variable_consistency', 'enum', 'strong'),
    ('datasets_repeat_cached_sample', 'bool', False),
    ('local_parameter_device', 'enum', 'gpu'),
    ('device', 'enum', 'gpu'),
    ('data_format', 'enum', 'NCHW'),
    ('num_intra_threads', 'int', None),
    ('num_inter_threads', 'int', 0),
    ('use_numa_affinity', 'bool', False),
    ('trace_file', 'string', ''),
    ('use_chrome_trace_format', 'bool', True),
    ('tfprof_file', 'string', None),
    ('graph_file', 'string', None),
    ('partitioned_graph_file_prefix', 'string', None),
    ('optimizer', 'enum', 'sgd'),
    ('init_learning_rate', 'float', None),
    ('piecewise_learning_rate_schedule', 'string', None),
    ('num_epochs_per_decay', 'float', 0),
    ('learning_rate_decay_factor', 'float', 0),
    ('num_learning_rate_warmup_epochs', 'float', 0),
    ('minimum_learning_rate', 'float', 0),
    ('resnet_base_lr', 'float', None),
    ('momentum', 'float', 0.9),
    ('rmsprop_decay', 'float', 0.9),
    ('rmsprop_momentum', 'float', 0.9),
    ('rmsprop_epsilon', 'float', 1.0),
    ('adam_beta1', 'float', 0.9),
    ('adam_beta2', 'float', 0.999),
    ('adam_epsilon', 'float', 1e-8),
    ('gradient_clip', 'float', None),
    ('weight_decay', 'float', 0.00004),
    ('gpu_memory_frac_for_testing', 'float', 0),
    ('use_unified_memory', 'bool', None),
    ('timestamped_allocator', 'bool', False),
    ('gpu_kt_max_interval', 'int', 0),
    ('gpu_kt_max_bytes', 'int', 0),
    ('gpu_kt_max_pending', 'int', 0),
    ('use_tf_layers', 'bool', True),
    ('tf_random_seed', 'int', 1234),
    ('debugger', 'string', None),
    ('use_python32_barrier', 'bool', False),
    ('ml_perf', 'bool', False),
    ('datasets_use_prefetch', 'bool', True),
    ('datasets_prefetch_buffer_size', 'int', 1),
    ('datasets_num_private_threads', 'int', None),
    ('datasets_use_caching', 'bool', False),
    ('datasets_parallel_interleave_cycle_length', 'int', None),
    ('datasets_sloppy_parallel_interleave', 'bool', False),
    ('datasets_parallel_interleave_prefetch', 'int', None),
    ('multi_device_iterator_max_buffer_size', 'int', 1),
    ('winograd_nonfused', 'bool', True),
    ('batchnorm_persistent', 'bool', True),
    ('sync_on_finish', 'bool', False),
    ('staged_vars', 'bool', False),
    ('force_gpu_compatible', 'bool', False),
    ('allow_growth', 'bool', None),
    ('xla', 'bool', False),
    ('xla_compile', 'bool', False),
    ('fuse_decode_and_crop', 'bool', True),
    ('distort_color_in_yiq', 'bool', True),
    ('enable_optimizations', 'bool', True),
    ('rewriter_config', 'string', None),
    ('loss_type_to_report', 'enum', 'total_loss'),
    ('single_l2_loss_op', 'bool', False),
    ('use_resource_vars', 'bool', False),
    ('compute_lr_on_cpu', 'bool', False),
    ('sparse_to_dense_grads', 'bool', False),
    ('mkl', 'bool', False),
    ('kmp_blocktime', 'int', 0),
    ('kmp_affinity', 'string', 'granularity=fine,verbose,compact,1,0'),
    ('kmp_settings', 'int', 1),
    ('use_fp16', 'bool', False),
    ('fp16_loss_scale', 'float', None),
    ('fp16_vars', 'bool', False),
    ('fp16_enable_auto_loss_scale', 'bool', False),
    ('fp16_inc_loss_scale_every_n', 'int', 1000),
    ('variable_update', 'enum', 'parameter_server'),
    ('all_reduce_spec', 'string', None),
    ('agg_small_grads_max_bytes', 'int', 0),
    ('agg_small_grads_max_group', 'int', 10),
    ('allreduce_merge_scope', 'int', 1),
    ('job_name', 'enum', ''),
    ('ps_hosts', 'string', ''),
    ('worker_hosts', 'string', ''),
    ('controller_host', 'string', None),
    ('task_index', 'int', 0),
    ('server_protocol', 'string', 'grpc'),
    ('cross_replica_sync', 'bool', True),
    ('horovod_device', 'string', ''),
    ('summary_verbosity', 'int', 0),
    ('save_summaries_steps', 'int', 0),
    ('save_model_secs', 'int', 0),
    ('save_model_steps', 'int', None),
    ('max_ckpts_to_keep', 'int', 5),
    ('train_dir', 'string', None),
    ('eval_dir', 'string', '/tmp/tf_cnn_benchmarks/eval'),
    ('backbone_model_path', 'string', None),
    ('trt_mode', 'enum', ''),
    ('trt_max_workspace_size_bytes', 'int', 4 << 30),
    ('benchmark_log_dir', 'string', None),
    ('benchmark_test_id', 'string', None),
)
TF_CNN_FLAG_KINDS = dict((name, kind) for name, kind, _ in TF_CNN_FLAGS)

# tf_cnn_benchmarks flags this benchmark does not have, with the one value
# that says what it always does: given with that value, the flag is
# accepted (and changes nothing); any other value is refused.
TF_CNN_SAME_VALUES = {
    'batch_group_size': 1,              # one batch a step
    'collect_eval_results_async': False,
    'datasets_repeat_cached_sample': False,
    'datasets_use_caching': False,
    'enable_optimizations': True,       # grappler is never turned off
    'eval_interval_secs': 0,            # --eval evaluates once
    'force_gpu_compatible': False,
    'fp16_vars': False,                 # --use_fp16 keeps float32 variables
    'freeze_when_forward_only': False,
    'gpu_memory_frac_for_testing': 0.0,
    'loss_type_to_report': 'total_loss',  # the loss printed has the L2 term
    'ml_perf': False,
    'mkl': False,
    'resize_method': 'bilinear',
    'server_protocol': 'grpc',
    'single_l2_loss_op': False,         # one L2 loss a weight
    'sparse_to_dense_grads': False,
    'sync_on_finish': False,
    'timestamped_allocator': False,
    'trt_mode': '',
    'use_chrome_trace_format': True,    # --trace_file writes a Chrome trace
    'use_numa_affinity': False,
    'use_python32_barrier': False,
    'use_unified_memory': False,
    'xla': False,
    'xla_compile': False,
}


def unsupported(ours):
  """The names of TF_CNN_FLAGS that are not in `ours` (the benchmark's flag
  names), in the table's order."""
  return [name for name, _, _ in TF_CNN_FLAGS if name not in ours]


def define(flag_values, ours):
  """Defines in `flag_values` every flag of TF_CNN_FLAGS not in `ours`:
  an absl boolean when tf_cnn_benchmarks' is one, else a text flag."""
  serializer = value_types.TextSerializer()
  for name in unsupported(ours):
    kind = TF_CNN_FLAG_KINDS[name]
    if name in TF_CNN_SAME_VALUES:
      help_text = 'refused, except as %s (what this benchmark does)' % (
          always(name))
    else:
      help_text = 'refused: not supported by this benchmark'
    absl_flags.DEFINE_flag(
        absl_flags.Flag(value_types.ValueParser(value_types.text, kind),
                        serializer, name, None, help_text,
                        boolean=kind == 'bool'),
        flag_values, module_name=TF_CNN_MODULE)


def always(name):
  """How this benchmark always runs, in flag `name`'s words: '--noxla',
  '--server_protocol=grpc'."""
  same = TF_CNN_SAME_VALUES[name]
  if TF_CNN_FLAG_KINDS[name] == 'bool':
    return '--%s' % name if same else '--no%s' % name
  return '--%s=%s' % (name, same if same != '' else "''")


def _value(kind, text):
  """`text` as a value of a flag of `kind`, or text itself when it does
  not parse as one."""
  try:
    if kind == 'bool':
      return value_types.parse_bool(text)
    if kind == 'int':
      return int(text)
    if kind == 'float':
      return float(text)
  except ValueError:
    return text
  return text


def refusal(name, given, text):
  """The message refusing tf_cnn_benchmarks' flag `name` given as `given`
  (as typed: '--noxla', '--server_protocol=grpc+verbs') with the value
  `text` (None: given without a value), or None when the value is what
  this benchmark does anyway."""
  kind = TF_CNN_FLAG_KINDS[name]
  if name in TF_CNN_SAME_VALUES:
    same = TF_CNN_SAME_VALUES[name]
    value = None if text is None else _value(kind, text)
    if value == same and type(value) is type(same):
      return None
    return ('%s: a tf_cnn_benchmarks flag this benchmark does not support (it '
            'always runs as %s); drop it' % (given, always(name)))
  return ('%s: a tf_cnn_benchmarks flag this benchmark does not support; drop '
          'it' % given)
