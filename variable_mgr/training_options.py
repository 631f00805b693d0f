"""Options that change what a step does, for every strategy alike.

`TrainingOptions` holds them; `check` refuses a bad value or a combination
that cannot work, before any graph is built, naming the value, the rule and
the fix. `variable_mgr.create` takes them as keyword arguments:

- `use_fp16`: towers compute in float16 on float32 variables (see
  `variable_mgr.mixed_precision`), with a loss scale.
- `loss_scale`: the fixed loss scale, or the first one with
  `auto_loss_scale`; None for `DEFAULT_LOSS_SCALE`.
- `auto_loss_scale`: a step whose gradients hold an inf or NaN on any tower
  is skipped on every copy of every variable and the scale halves (down to
  1); the good step after `inc_loss_scale_every_n` good steps in a row
  doubles it (tf_cnn_benchmarks' schedule, see `mixed_precision`).
- `backward_passes_per_step`: N micro-batches a tower add up before the
  strategy combines and applies once (see `variable_mgr.accumulation`).
- `variable_consistency`: 'strong', or 'relaxed' (replicated): step t applies
  the all-reduced gradients of step t-1.
"""

import collections
import math
import numbers

from variable_mgr import errors

DEFAULT_LOSS_SCALE = 128.0
CONSISTENCIES = ('strong', 'relaxed')

_FIELDS = collections.OrderedDict([
    ('use_fp16', False),
    ('loss_scale', None),
    ('auto_loss_scale', False),
    ('inc_loss_scale_every_n', 1000),
    ('backward_passes_per_step', 1),
    ('variable_consistency', 'strong'),
])
FIELD_NAMES = tuple(_FIELDS)


class TrainingOptions(collections.namedtuple('TrainingOptions',
                                             list(_FIELDS))):
  """See the module docstring; every field has its default."""

  __slots__ = ()

  def __new__(cls, **kwargs):
    values = dict(_FIELDS)
    values.update(kwargs)
    return super(TrainingOptions, cls).__new__(cls, **values)

  @property
  def relaxed(self):
    return self.variable_consistency == 'relaxed'

  @property
  def initial_loss_scale(self):
    return (DEFAULT_LOSS_SCALE if self.loss_scale is None
            else float(self.loss_scale))

  @property
  def active(self):
    """Whether any option changes the step (else the graph is the plain
    one, op for op)."""
    return (self.use_fp16 or self.backward_passes_per_step > 1 or
            self.relaxed)


def _is_int(value):
  return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_values(options):
  """Refuses a value outside its domain (InvalidOptionError) or an option
  that needs another one (IncompatibleOptionsError); returns `options`."""
  if not isinstance(options.use_fp16, bool):
    raise errors.InvalidOptionError(
        'use_fp16=%r: must be True or False.' % (options.use_fp16,))
  if not isinstance(options.auto_loss_scale, bool):
    raise errors.InvalidOptionError(
        'auto_loss_scale=%r: must be True or False.' %
        (options.auto_loss_scale,))
  scale = options.loss_scale
  if scale is not None and (
      isinstance(scale, bool) or not isinstance(scale, numbers.Real) or
      not math.isfinite(scale) or scale < 1):
    raise errors.InvalidOptionError(
        'loss_scale=%r: a loss scale is a finite number of at least 1 (a '
        'power of 2 such as 128 keeps the scaling exact); or None for %g.'
        % (scale, DEFAULT_LOSS_SCALE))
  n = options.inc_loss_scale_every_n
  if not _is_int(n) or n < 1:
    raise errors.InvalidOptionError(
        'inc_loss_scale_every_n=%r: the number of good steps before the '
        'loss scale doubles is an integer of at least 1.' % (n,))
  passes = options.backward_passes_per_step
  if not _is_int(passes) or passes < 1:
    raise errors.InvalidOptionError(
        'backward_passes_per_step=%r: the micro-batches a tower adds up '
        'before each update is an integer of at least 1 (1: no '
        'accumulation).' % (passes,))
  if options.variable_consistency not in CONSISTENCIES:
    raise errors.InvalidOptionError(
        'variable_consistency=%r: choose %s.' %
        (options.variable_consistency,
         ' or '.join(repr(c) for c in CONSISTENCIES)))
  if not options.use_fp16:
    for name, value, default in (
        ('loss_scale', scale, None),
        ('auto_loss_scale', options.auto_loss_scale, False),
        ('inc_loss_scale_every_n', n, 1000)):
      if value != default:
        raise errors.IncompatibleOptionsError(
            '%s=%r without use_fp16: loss scaling exists only for float16 '
            'towers; set use_fp16=True or drop %s.' % (name, value, name))
  if not options.auto_loss_scale and n != 1000:
    raise errors.IncompatibleOptionsError(
        'inc_loss_scale_every_n=%r without auto_loss_scale: a fixed loss '
        'scale never grows; set auto_loss_scale=True or drop it.' % (n,))
  if options.relaxed and passes > 1:
    raise errors.IncompatibleOptionsError(
        'variable_consistency=\'relaxed\' with backward_passes_per_step=%d: '
        'the two are not combined (accumulation already exchanges once '
        'every %d steps); use one of them.' % (passes, passes))
  return options


def worker_count(benchmark_cnn):
  """The number of workers of the host's cluster (1 without a cluster)."""
  cluster = getattr(benchmark_cnn, 'cluster', None)
  if cluster is None or 'worker' not in cluster.jobs:
    return 1
  return len(cluster.job_tasks('worker'))
