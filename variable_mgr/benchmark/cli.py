"""The `variable_mgr_benchmark` command (also `python -m variable_mgr.benchmark`).

Flags follow tf_cnn_benchmarks' names where they overlap. With no flags it
trains a LeNet-sized CNN on synthetic data over 4 virtual CPU towers with
`--variable_update=replicated`, and prints tf_cnn_benchmarks' progress lines
and a final `total images/sec`.

A bad flag or a configuration the library refuses ends the command with one
line on stderr and exit status 2 (1 for a failure while running).
"""

import argparse
import os
import sys

PROG = 'variable_mgr_benchmark'
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
  """The argument parser; defaults are the embedded default run."""
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
  add('--compact_gradient_transfer', type=parse_bool, nargs='?', const=True,
      default=False,
      help='replicated: float32 gradients travel as float16')
  add('--measure_traffic', type=parse_bool, nargs='?', const=True, default=False,
      help='after the timed steps, run one more and print the bytes each '
           'device sent and received beside the ring lower bound')
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
  from variable_mgr.benchmark import distributed  # pylint: disable=g-import-not-at-top
  distributed.add_flags(p)
  return p


def parse_args(argv=None):
  """Parses and cross-checks the flags.

  Raises:
    UsageError: a bad flag, with a one-line message.
  """
  args = build_parser().parse_args(argv)
  # --compare runs many configurations: shorter runs by default.
  if args.num_batches is None:
    args.num_batches = 10 if args.compare else 30
  if args.num_warmup_batches is None:
    args.num_warmup_batches = 2 if args.compare else 5
  if args.compare and (args.train_dir or args.trace_file or
                       args.summary_dir):
    raise UsageError('--compare runs many configurations: drop --train_dir, '
                     '--summary_dir and --trace_file, or run one '
                     'configuration without --compare')
  return args


def config_from_args(args, **overrides):
  """The BenchmarkConfig of the parsed flags."""
  from variable_mgr.benchmark import harness  # pylint: disable=g-import-not-at-top
  values = dict((name, getattr(args, name)) for name in harness._CONFIG_FIELDS)  # pylint: disable=protected-access
  values.update(overrides)
  return harness.BenchmarkConfig(**values)


def make_host(config):
  """The BenchmarkCnn-like host, session target and session config.

  distributed_replicated gets a one-machine cluster (one PS task, one
  worker task); every other strategy a local host.

  Raises:
    VariableMgrError: a bad tower count or device name.
  """
  import variable_mgr  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark import cluster  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  if config.variable_update == 'distributed_replicated':
    host = cluster.LocalClusterHost(config.num_gpus, config.device,
                                    config.local_parameter_device)
    return host, host.session_config()
  host = variable_mgr.LocalBenchmarkCnn(config.num_gpus, config.device,
                                        config.local_parameter_device)
  cpus = config.num_gpus if config.device == 'cpu' else 1
  return host, tf.compat.v1.ConfigProto(device_count={'CPU': cpus})


def run_one(config, log=print):
  """Runs one configuration; returns the results dict of run_benchmark."""
  from variable_mgr.benchmark import harness  # pylint: disable=g-import-not-at-top
  host, session_config = make_host(config)
  # Servers start once the graph is built: a refused configuration starts
  # none.
  target = getattr(host, 'start', '')
  return harness.run_benchmark(config, host, session_target=target,
                               session_config=session_config, log=log)


def _fail(message, status):
  sys.stderr.write('%s: error: %s\n' % (PROG, message))
  return status


def main(argv=None):
  """Runs the command; returns the exit status."""
  # TensorFlow's C++ info and warning lines (start-up, in-process servers
  # closing) stay off stderr unless the caller sets TF_CPP_MIN_LOG_LEVEL.
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  try:
    args = parse_args(argv)
  except UsageError as e:
    return _fail(e, 2)
  from variable_mgr.benchmark import distributed  # pylint: disable=g-import-not-at-top
  if distributed.is_requested(args):
    return distributed.run_from_cli(
        args, sys.argv[1:] if argv is None else argv)

  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from variable_mgr import errors  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark import harness  # pylint: disable=g-import-not-at-top

  tf.get_logger().setLevel('ERROR')
  try:
    if args.compare:
      from variable_mgr.benchmark import compare  # pylint: disable=g-import-not-at-top
      compare.run_compare(args)
      return 0
    results = run_one(config_from_args(args))
  except errors.VariableMgrError as e:
    return _fail(e, 2)
  except tf.errors.OpError as e:
    return _fail('%s failed while running: %s' %
                 (type(e).__name__, str(e).strip().splitlines()[0]), 1)
  except KeyboardInterrupt:
    return _fail('interrupted', 130)
  if args.output:
    harness.write_json(args.output, results)
  return 0
