"""What one benchmark run is: `BenchmarkConfig`, made from the parsed flags.

Every runner (one local run, the `--compare` sweep, a cluster worker)
takes a BenchmarkConfig; the harness builds its graph from one.
"""

import collections

from variable_mgr.benchmark import models

# Field name -> default; the names are the command's flags.
CONFIG_FIELDS = collections.OrderedDict([
    ('model', 'lenet'),
    ('variable_update', 'replicated'),
    ('num_gpus', 4),
    ('device', 'cpu'),
    ('local_parameter_device', 'cpu'),
    ('staged_vars', False),
    ('use_nccl', False),
    ('all_reduce_spec', None),
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
    ('weight_decay', None),
    ('seed', 1234),
    ('use_resource_vars', None),
    ('train_dir', None),
    ('summary_dir', None),
    ('trace_file', None),
    ('variable_partition_min_bytes', 0),
])


class BenchmarkConfig(collections.namedtuple('BenchmarkConfig',
                                             list(CONFIG_FIELDS))):
  """Everything one benchmark run needs; field names follow the CLI flags.

  `batch_size` is per tower; `batch_size`, `learning_rate` and
  `weight_decay` default to the model's values when None.
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

  def resolved(self):
    """A copy with the model defaults filled in."""
    model = models.get_model(self.model)
    return self._replace(
        batch_size=self.batch_size or model.default_batch_size,
        learning_rate=(model.learning_rate if self.learning_rate is None
                       else self.learning_rate),
        weight_decay=(model.weight_decay if self.weight_decay is None
                      else self.weight_decay))


def from_args(args, **overrides):
  """The BenchmarkConfig of the parsed flags, with `overrides` applied."""
  values = dict((name, getattr(args, name)) for name in CONFIG_FIELDS)
  values.update(overrides)
  return BenchmarkConfig(**values)
