"""The benchmark command's flags: one parser, its value types, its defaults.

Flags follow tf_cnn_benchmarks' names where they overlap. Parsing imports
no TensorFlow, so a bad flag is refused at once. Every refusal is a
`UsageError` with a one-line message.

Two commands read these flags:

* `variable_mgr_benchmark` (`python -m variable_mgr.benchmark`):
  `parse_args`; 30 timed and 5 warm-up batches by default, 10 and 2 a run
  with `--compare`;
* one task of a cluster (`python -m variable_mgr.benchmark.distributed`,
  which `--launch_local_cluster` starts): `parse_task_args`; 50 timed and
  5 warm-up batches by default.
"""

import argparse

PROG = 'variable_mgr_benchmark'
# The library's and the models' names, written out so that parsing imports
# neither (tests check that they agree).
STRATEGY_NAMES = ('independent', 'parameter_server', 'replicated',
                  'distributed_replicated', 'collective_all_reduce')
MODEL_NAMES = ('trivial', 'lenet', 'resnet20', 'resnet50')


class UsageError(Exception):
  """A flag value the command refuses before building anything."""


class _Parser(argparse.ArgumentParser):
  """An ArgumentParser whose errors are one line, not usage + message."""

  def error(self, message):
    raise UsageError(message)


def parse_bool(text):
  value = str(text).lower()
  if value in ('1', 'true', 'yes', 'on'):
    return True
  if value in ('0', 'false', 'no', 'off'):
    return False
  raise argparse.ArgumentTypeError('expected true or false, got %r' % text)


def int_at_least(minimum):
  def parse(text):
    try:
      value = int(text)
    except ValueError:
      raise argparse.ArgumentTypeError('expected an integer, got %r' % text)
    if value < minimum:
      raise argparse.ArgumentTypeError('must be at least %d, got %d' %
                                       (minimum, value))
    return value
  return parse


def positive_float(text):
  try:
    value = float(text)
  except ValueError:
    raise argparse.ArgumentTypeError('expected a number, got %r' % text)
  if not value > 0:
    raise argparse.ArgumentTypeError('must be positive, got %r' % text)
  return value


_RATE_UNITS = (('gbit', 10**9), ('mbit', 10**6), ('kbit', 10**3), ('bit', 1))


def link_rate(text):
  """A link speed as `tc` writes it (200mbit, 1gbit, 500kbit): bits/s."""
  value = str(text).strip().lower()
  for unit, scale in _RATE_UNITS:
    if value.endswith(unit):
      try:
        number = float(value[:-len(unit)])
      except ValueError:
        break
      if number > 0 and number * scale >= 1000:
        return int(number * scale)
      break
  raise argparse.ArgumentTypeError(
      'expected a link speed of at least 1kbit such as 200mbit, 1gbit or '
      '500kbit, got %r' % text)


def _int_list(text):
  try:
    values = [int(t) for t in text.split(',') if t.strip()]
  except ValueError:
    raise argparse.ArgumentTypeError(
        'expected comma-separated integers such as 1,2,4, got %r' % text)
  if not values or min(values) < 1:
    raise argparse.ArgumentTypeError(
        'expected tower counts of at least 1, got %r' % text)
  return sorted(set(values))


def _strategy_list(text):
  names = [t.strip() for t in text.split(',') if t.strip()]
  unknown = [n for n in names if n not in STRATEGY_NAMES]
  if not names or unknown:
    raise argparse.ArgumentTypeError(
        'unknown strategy %r: choose from %s' %
        (','.join(unknown) or text, ', '.join(STRATEGY_NAMES)))
  return names


def build_parser():
  """The argument parser of both commands; batch counts default to None."""
  p = _Parser(prog=PROG, description=(
      'Data-parallel training benchmark for variable_mgr strategies on '
      'synthetic data. Towers are virtual CPU devices with --device=cpu.'))
  add = p.add_argument
  add('--model', default='lenet', choices=MODEL_NAMES,
      help='the model to train (default: %(default)s)')
  add('--variable_update', default='replicated', choices=STRATEGY_NAMES,
      help='how variables are kept and updated (default: %(default)s)')
  add('--num_gpus', type=int_at_least(0), default=4,
      help='number of towers (virtual CPU devices with --device=cpu) '
           '(default: %(default)s)')
  add('--device', default='cpu', choices=('cpu', 'gpu'),
      help='the towers\' device type (default: %(default)s)')
  add('--local_parameter_device', default='cpu', choices=('cpu', 'gpu'),
      help='where parameter_server keeps the variables (default: '
           '%(default)s)')
  add('--staged_vars', type=parse_bool, nargs='?', const=True, default=False,
      help='read variables through staging areas (parameter_server only)')
  add('--use_nccl', type=parse_bool, nargs='?', const=True, default=False,
      help='all-reduce with NCCL (replicated on GPUs only)')
  add('--all_reduce_spec', default=None,
      help='replicated: the all-reduce algorithm, e.g. xring, xring#2, '
           'pscpu:32k:xring, rechd, hcopy, nccl (default: the copy)')
  add('--gradient_repacking', type=int_at_least(0), default=0,
      help='replicated: all-reduce this many packs of the concatenated '
           'gradients (default: 0, off)')
  add('--agg_small_grads_max_bytes', type=int_at_least(0), default=0,
      help='replicated: concatenate gradients of at most this many bytes '
           'before the all-reduce (default: 0, off)')
  add('--agg_small_grads_max_group', type=int_at_least(1), default=10,
      help='replicated: at most this many gradients a group (default: '
           '%(default)s)')
  add('--variable_consistency', default='strong',
      choices=('strong', 'relaxed'),
      help='replicated: relaxed applies each step the all-reduced gradient '
           'of the step before, so the all-reduce overlaps the next step '
           '(default: %(default)s)')
  add('--compact_gradient_transfer', type=parse_bool, nargs='?', const=True,
      default=False,
      help='replicated: float32 gradients travel as float16')
  add('--measure_traffic', type=parse_bool, nargs='?', const=True, default=False,
      help='after the timed steps, run one more and print the bytes each '
           'device sent and received beside the ring lower bound')
  add('--use_fp16', type=parse_bool, nargs='?', const=True, default=False,
      help='towers compute in float16 on float32 variables, with a loss '
           'scale')
  add('--fp16_loss_scale', type=positive_float, default=None,
      help='--use_fp16: the fixed loss scale, or the first one with '
           '--fp16_enable_auto_loss_scale (default: 128)')
  add('--fp16_enable_auto_loss_scale', type=parse_bool, nargs='?',
      const=True, default=False,
      help='--use_fp16: halve the loss scale and skip the step when a '
           'gradient holds an inf or NaN on any tower; double it after '
           '--fp16_inc_loss_scale_every_n good steps')
  add('--fp16_inc_loss_scale_every_n', type=int_at_least(1), default=1000,
      help='--fp16_enable_auto_loss_scale: good steps before the loss '
           'scale doubles (default: %(default)s)')
  add('--backward_passes_per_step', type=int_at_least(1), default=1,
      help='add this many micro-batches\' gradients on each tower before '
           'they are combined and applied once (default: %(default)s)')
  add('--batch_size', type=int_at_least(1), default=None,
      help='batch size per tower (default: the model\'s, 32)')
  add('--num_batches', type=int_at_least(0), default=None,
      help='timed batches (default: 30; 10 a run with --compare)')
  add('--num_warmup_batches', type=int_at_least(0), default=None,
      help='untimed batches before timing (default: 5; 2 with --compare)')
  add('--display_every', type=int_at_least(1), default=10,
      help='print a progress line every this many steps (default: '
           '%(default)s)')
  add('--optimizer', default='sgd', choices=('sgd', 'momentum'),
      help='(default: %(default)s)')
  add('--learning_rate', type=positive_float, default=None,
      help='(default: the model\'s)')
  add('--momentum', type=positive_float, default=0.9,
      help='momentum of --optimizer=momentum (default: %(default)s)')
  add('--weight_decay', type=float, default=None,
      help='L2 factor on weights (default: the model\'s)')
  add('--seed', type=int, default=1234,
      help='graph-level random seed of initial values and synthetic data')
  add('--use_resource_vars', type=parse_bool, nargs='?', const=True, default=None,
      help='true: resource variables; false: ref variables (default: '
           'TensorFlow\'s, ref in 1.15, resource in 2.x)')
  add('--train_dir', default=None,
      help='restore the latest checkpoint here at start, save at the end')
  add('--summary_dir', default=None,
      help='write a TensorBoard scalar summary of the loss here')
  add('--trace_file', default=None,
      help='write a Chrome trace (chrome://tracing) of one step here')
  add('--output', default=None,
      help='write the results as JSON to this file')
  add('--compare', action='store_true',
      help='sweep strategies x tower counts; write a Markdown table and a '
           'PNG chart into --compare_dir')
  add('--compare_dir', default='benchmark_compare',
      help='output directory of --compare (default: %(default)s)')
  add('--compare_strategies', type=_strategy_list,
      default=['independent', 'parameter_server', 'replicated',
               'distributed_replicated'],
      help='comma-separated strategies for --compare (default: all)')
  add('--compare_towers', type=_int_list, default=[1, 2, 4],
      help='comma-separated tower counts for --compare (default: 1,2,4)')
  _add_cluster_flags(p)
  return p


def _add_cluster_flags(parser):
  group = parser.add_argument_group(
      'cluster', 'run one task of a ps/worker cluster (or read TF_CONFIG), '
      'or launch a whole cluster on this machine')
  add = group.add_argument
  add('--job_name', default=None, choices=('ps', 'worker'),
      help='this task\'s job; with --task_index, --ps_hosts, --worker_hosts. '
           'Without it, TF_CONFIG is read when set')
  add('--task_index', type=int_at_least(0), default=0,
      help='this task\'s index in its job (default: %(default)s)')
  add('--ps_hosts', default='',
      help='comma-separated host:port of the PS tasks')
  add('--worker_hosts', default='',
      help='comma-separated host:port of the workers; worker 0 is the chief')
  add('--cross_replica_sync', type=parse_bool, nargs='?', const=True,
      default=True,
      help='synchronous steps across workers (default); false: '
           'asynchronous parameter_server')
  add('--op_timeout_secs', type=positive_float, default=60.0,
      help='deadline of every session call; when a task dies the others '
           'exit within about this long (default: %(default)s)')
  add('--startup_timeout_secs', type=positive_float, default=300.0,
      help='how long a task waits for the others to come up and for the '
           'chief to initialise (default: %(default)s)')
  add('--save_model_steps', type=int_at_least(0), default=0,
      help='the chief also saves a checkpoint every this many steps (0: '
           'only at the end) (default: %(default)s)')
  add('--variable_partition_min_bytes', type=int_at_least(0), default=0,
      help='distributed PS strategies: split every variable of more than '
           'this many bytes into at most one slice a PS task, none under '
           'this size (default: 0, off)')
  add('--launch_local_cluster', action='store_true',
      help='start --num_ps PS tasks and --num_workers workers as processes '
           'on 127.0.0.1 and report the cluster\'s total images/sec')
  add('--num_ps', type=int_at_least(1), default=1,
      help='PS tasks of --launch_local_cluster (default: %(default)s)')
  add('--num_workers', type=int_at_least(1), default=2,
      help='workers of --launch_local_cluster (default: %(default)s)')
  add('--network_rate', type=link_rate, default=None,
      help='--launch_local_cluster: run every task in its own network '
           'namespace (its own address; Linux and root only), each link '
           'shaped to this speed both ways, e.g. 200mbit or 1gbit '
           '(default: loopback, unshaped)')


def _default_batches(args, timed, warmup):
  if args.num_batches is None:
    args.num_batches = timed
  if args.num_warmup_batches is None:
    args.num_warmup_batches = warmup
  return args


def parse_args(argv=None):
  """The flags of `variable_mgr_benchmark`, cross-checked.

  Raises:
    UsageError: a bad flag, with a one-line message.
  """
  args = build_parser().parse_args(argv)
  # --compare runs many configurations: shorter runs by default.
  if args.compare:
    _default_batches(args, 10, 2)
  else:
    _default_batches(args, 30, 5)
  if args.compare and (args.train_dir or args.trace_file or
                       args.summary_dir):
    raise UsageError('--compare runs many configurations: drop --train_dir, '
                     '--summary_dir and --trace_file, or run one '
                     'configuration without --compare')
  return args


def parse_task_args(argv=None):
  """The flags of one cluster task (or of its launcher).

  Raises:
    UsageError: a bad flag, with a one-line message.
  """
  return _default_batches(build_parser().parse_args(argv), 50, 5)
