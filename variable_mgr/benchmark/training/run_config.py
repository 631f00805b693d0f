"""What one benchmark run is: `BenchmarkConfig`, made from the parsed flags.

Every runner (one local run, the `--compare` sweep, a cluster worker)
takes a BenchmarkConfig; the harness builds its graph from one.
"""

import collections
import os
import sys

from variable_mgr import errors
from variable_mgr.benchmark.flags import command_line
from variable_mgr.benchmark.flags import lr_schedule
from variable_mgr.benchmark.models import catalog

# Field name -> default; the names are the command's flags, but for
# `device_fallback`. The defaults are the library's for a run on one
# machine, in Python: the command's flags default to tf_cnn_benchmarks'
# (trivial, parameter_server, 1 tower, gpu where there is one, float16
# gradient transfer with --use_fp16), and `from_args` passes them all.
CONFIG_FIELDS = collections.OrderedDict([
    ('model', 'lenet'),
    ('variable_update', 'replicated'),
    ('num_gpus', 4),
    ('device', 'cpu'),
    # --device was not given and TensorFlow finds no GPU: the towers run on
    # the CPU (the header says so).
    ('device_fallback', False),
    ('local_parameter_device', 'cpu'),
    ('staged_vars', False),
    ('use_nccl', False),
    ('all_reduce_spec', None),
    ('hierarchical_copy', False),
    ('gradient_repacking', 0),
    ('agg_small_grads_max_bytes', 0),
    ('agg_small_grads_max_group', 10),
    ('variable_consistency', 'strong'),
    ('compact_gradient_transfer', False),
    ('measure_traffic', False),
    ('use_fp16', False),
    ('fp16_loss_scale', None),
    ('fp16_enable_auto_loss_scale', False),
    ('fp16_inc_loss_scale_every_n', 1000),
    ('backward_passes_per_step', 1),
    ('batch_size', None),
    ('num_batches', 30),
    ('num_warmup_batches', 5),
    ('display_every', 10),
    ('optimizer', 'sgd'),
    ('learning_rate', None),
    ('momentum', 0.9),
    ('piecewise_learning_rate_schedule', None),
    ('num_epochs_per_decay', 0.0),
    ('learning_rate_decay_factor', 0.0),
    ('num_learning_rate_warmup_epochs', 0.0),
    ('minimum_learning_rate', 0.0),
    ('resnet_base_lr', None),
    ('rmsprop_decay', 0.9),
    ('rmsprop_momentum', 0.9),
    ('rmsprop_epsilon', 1.0),
    ('adam_beta1', 0.9),
    ('adam_beta2', 0.999),
    ('adam_epsilon', 1e-8),
    ('gradient_clip', None),
    ('weight_decay', None),
    ('seed', 1234),
    ('use_resource_vars', None),
    ('train_dir', None),
    ('summary_dir', None),
    ('trace_file', None),
    ('variable_partition_min_bytes', 0),
    ('gradient_bucket_bytes', None),
    ('data_name', None),
    ('data_dir', None),
    ('data_format', 'NHWC'),
    ('distortions', False),
    ('eval', False),
    ('num_eval_batches', None),
    ('eval_during_training_every_n_steps', None),
    ('forward_only', False),
    ('print_training_accuracy', False),
    ('num_intra_threads', None),
    ('num_inter_threads', 0),
    ('save_model_secs', 0),
    ('save_model_steps', 0),
    ('max_ckpts_to_keep', 5),
    ('save_summaries_steps', 0),
    ('summary_verbosity', 0),
])


# The models whose default rate is a schedule scaled with the global batch.
SCALED_RATE_MODELS = command_line.SCALED_RATE_MODELS


class DeviceUnavailableError(errors.VariableMgrError):
  """The towers' device type (--device) is not on this machine."""


class BenchmarkConfig(collections.namedtuple('BenchmarkConfig',
                                             list(CONFIG_FIELDS))):
  """Everything one benchmark run needs; field names follow the CLI flags.

  `batch_size` is per tower; `batch_size`, `learning_rate` (the
  initial rate, `--init_learning_rate`) and `weight_decay` default to the
  model's values when None; `learning_rate` stays None when the rate is a
  schedule (`--piecewise_learning_rate_schedule`, or the default of
  resnet50, resnet101 and resnet152, scaled with the global batch: see
  `optimizers`). `seed` is `--tf_random_seed`.
  `compact_gradient_transfer` acts with `use_fp16` under replicated only
  (as tf_cnn_benchmarks'); `hierarchical_copy` is replicated's
  `all_reduce_spec='hcopy'`; `gradient_clip` clips every gradient to
  [-c, c] before it is applied.
  `use_resource_vars`: True for resource variables, False for ref variables,
  None for TensorFlow's default (ref in TF 1.15, resource in TF 2).
  """

  __slots__ = ()

  def __new__(cls, **kwargs):
    unknown = set(kwargs) - set(CONFIG_FIELDS)
    if unknown:
      raise TypeError('unknown benchmark options: %s' %
                      ', '.join(sorted(unknown)))
    values = dict(CONFIG_FIELDS)
    values.update(kwargs)
    return super(BenchmarkConfig, cls).__new__(cls, **values)

  @property
  def synthetic(self):
    """True when the towers read synthetic data: `data_name` None (the
    benchmark's own shapes, as `small`), `small`, or imagenet or cifar10
    without `data_dir` (their shapes, as tf_cnn_benchmarks)."""
    return command_line.is_synthetic(self.data_name, self.data_dir)

  def resolved(self):
    """A copy with the model defaults filled in: those of the model's
    version for `data_name` (tf_cnn_benchmarks' on imagenet and cifar10).

    Raises:
      UnknownModelError: tf_cnn_benchmarks has no such model for the data
        set.
    """
    model = catalog.get_model(self.model, self.data_name)
    scheduled = self.piecewise_learning_rate_schedule or (
        lr_schedule.has_default_schedule(self.model, self.data_name))
    return self._replace(
        batch_size=self.batch_size or model.default_batch_size,
        learning_rate=(model.learning_rate if self.learning_rate is None and
                       not scheduled else self.learning_rate),
        weight_decay=(model.weight_decay if self.weight_decay is None
                      else self.weight_decay))


# Present while an NVIDIA kernel driver is loaded (also in containers that
# are given GPUs); without it CUDA can find no GPU.
NVIDIA_DRIVER_FILE = '/proc/driver/nvidia/version'


def gpu_count():
  """The GPUs TensorFlow can use on this machine (no session is made).

  A CUDA build of TensorFlow on Linux without the NVIDIA driver has none,
  and asking it would make it try to initialise CUDA and log that failure
  as an error line ("failed call to cuInit") before the run starts; so the
  driver is looked for first. Other builds (CPU-only, ROCm) and other
  systems are asked directly.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if (sys.platform.startswith('linux') and tf.test.is_built_with_cuda() and
      not os.path.exists(NVIDIA_DRIVER_FILE)):
    return 0
  # tf.config.experimental.list_physical_devices: TF 1.15 and 2.x alike.
  return len(tf.config.experimental.list_physical_devices('GPU'))


def default_device(count=None):
  """tf_cnn_benchmarks' default `--device=gpu` as this machine can run it:
  `('gpu', False)` where TensorFlow finds a GPU, else `('cpu', True)` (the
  towers fall back to the CPU, which the header says).

  Args:
    count: the GPUs there are (default: `gpu_count()`).
  """
  count = gpu_count() if count is None else count
  return ('gpu', False) if count else ('cpu', True)


def device_of(args):
  """The towers' device type of the parsed flags: `--device`, or
  `default_device`'s without it."""
  return args.device or default_device()[0]


def check_devices(device, num_gpus, count=None):
  """Refuses `--device=gpu` towers that this machine cannot give, before
  any graph is built. An explicit `--device=gpu` needs a GPU; without
  `--device` (None: tf_cnn_benchmarks' gpu) a machine without GPUs runs
  on the CPU, and one with GPUs needs one a tower.

  Args:
    device: 'cpu', 'gpu', or None (not given).
    num_gpus: the towers a process needs (--num_gpus).
    count: the GPUs there are (default: `gpu_count()`, asked only for
      --device=gpu or None).

  Raises:
    DeviceUnavailableError: naming the flags, the GPUs found and the fix.
  """
  if device == 'cpu':
    return
  count = gpu_count() if count is None else count
  if device is None and count == 0:
    return  # The CPU fallback (`default_device`).
  if count == 0:
    raise DeviceUnavailableError(
        '--device=gpu: TensorFlow finds no GPU on this machine; pass '
        '--device=cpu (the towers are then virtual CPU devices), or install '
        'a GPU build of TensorFlow where there is a GPU')
  if num_gpus > count:
    raise DeviceUnavailableError(
        '--device=gpu%s --num_gpus=%d: TensorFlow finds %d GPU%s on this '
        'machine, one a tower; pass --num_gpus=%d or fewer, or --device=cpu'
        % (' (the default)' if device is None else '', num_gpus, count,
           '' if count == 1 else 's', count))


def check_cluster_config(args, cluster):
  """Refuses, before any task starts or any graph is built, a cluster
  configuration the manager would refuse in a worker: makes the manager of
  worker 0 of `cluster` in a throwaway graph (no op is built).

  Args:
    args: the parsed flags.
    cluster: {'ps': [...], 'worker': [...]} host:port lists.

  Raises:
    VariableMgrError: the manager refuses the configuration.
    TargetReachedError: the checkpoint of `--train_dir` (where this
      process sees it) leaves no batch to train (see `batch_target`).
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import variable_mgr  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.training import batch_target  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.training import harness  # pylint: disable=g-import-not-at-top
  config = from_args(args).resolved()
  with tf.Graph().as_default():
    if config.variable_update == 'distributed_all_reduce':
      # The controller's host: every worker's towers in one graph.
      host = variable_mgr.ControllerBenchmarkCnn(
          {'worker': cluster['worker']}, config.num_gpus, config.device,
          config.local_parameter_device)
    else:
      host = variable_mgr.ClusterBenchmarkCnn(
          cluster, 0, config.num_gpus, config.device,
          config.local_parameter_device,
          cross_replica_sync=args.cross_replica_sync)
    harness.create_manager(config, host)
  # Asynchronous workers each add their updates to the global step.
  batch_target.check_restored(config, 1 if args.cross_replica_sync else
                              len(cluster['worker']))


def from_args(args, **overrides):
  """The BenchmarkConfig of the parsed flags, with `overrides` applied;
  without `--device`, the device of `default_device`."""
  values = dict((name, getattr(args, name)) for name in CONFIG_FIELDS
                if name != 'device_fallback')
  if values['device'] is None and 'device' not in overrides:
    values['device'], values['device_fallback'] = default_device()
  values.update(overrides)
  return BenchmarkConfig(**values)
