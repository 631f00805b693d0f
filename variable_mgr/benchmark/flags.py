"""The benchmark command's flags: one parser, its value types, its defaults.

Flags follow tf_cnn_benchmarks' names where they overlap. Parsing imports
no TensorFlow, so a bad flag is refused at once. Every refusal is a
`UsageError` with a one-line message.

Two commands read these flags:

* `variable_mgr_benchmark` (`python -m variable_mgr.benchmark`):
  `parse_args`; 30 timed and 5 warm-up batches by default, 10 and 2 a run
  with `--compare`;
* one task of a cluster (`python -m variable_mgr.benchmark.distributed`,
  which `--launch_local_cluster` starts): `parse_task_args`; 30 timed and
  5 warm-up batches by default, as `--help` says.

Everything that can be checked without TensorFlow is checked here, before
anything is built or started: value ranges (a refused value is quoted with
its flag, as typed), the strategy against the launch mode (one machine,
`--compare`, a cluster), flags that the chosen mode would ignore, a
`TF_CONFIG` given together with the cluster flags, and the output paths.

Output paths: `--output` and `--trace_file` name files, `--train_dir`,
`--summary_dir` and `--compare_dir` directories. A path must be of its
kind when it exists, writable, and its parent directory must exist: the
command creates a missing directory flag's own directory (one level), never
a missing parent.
"""

import argparse
import math
import os
import re
import sys

from variable_mgr.benchmark import flag_checks

PROG = 'variable_mgr_benchmark'
# The library's and the models' names, written out so that parsing imports
# neither (tests check that they agree).
STRATEGY_NAMES = ('independent', 'parameter_server', 'replicated',
                  'distributed_replicated', 'collective_all_reduce')
MODEL_NAMES = ('trivial', 'lenet', 'resnet20', 'resnet50', 'alexnet', 'vgg16',
               'inception3', 'resnet101', 'resnet152')
DATA_NAMES = ('imagenet', 'cifar10', 'digits')


class UsageError(Exception):
  """A flag value the command refuses before building anything."""


class _Parser(argparse.ArgumentParser):
  """An ArgumentParser whose errors are one line, not usage + message."""

  def error(self, message):
    raise UsageError(message)


def _named(flag, parse):
  """`parse` whose refusal is a UsageError naming `flag` and the value as
  typed: '--num_gpus=0: must be at least 1; pass --num_gpus=1 or more'."""

  def parse_named(text):
    try:
      return parse(text)
    except argparse.ArgumentTypeError as e:
      raise UsageError('%s=%s: %s' % (flag, text,
                                      str(e).replace('{flag}', flag)))

  parse_named.__name__ = getattr(parse, '__name__', 'value')
  return parse_named


def parse_bool(text):
  value = str(text).lower()
  if value in ('1', 'true', 'yes', 'on'):
    return True
  if value in ('0', 'false', 'no', 'off'):
    return False
  raise argparse.ArgumentTypeError(
      'expected true or false; pass {flag}=true or {flag}=false')


def int_at_least(minimum):
  def parse(text):
    try:
      value = int(text)
    except ValueError:
      raise argparse.ArgumentTypeError(
          'not an integer; pass a whole number of at least %d, e.g. '
          '{flag}=%d' % (minimum, max(minimum, 1)))
    if value < minimum:
      raise argparse.ArgumentTypeError(
          'must be at least %d; pass {flag}=%d or more' % (minimum, minimum))
    return value
  return parse


def integer(text):
  try:
    return int(text)
  except ValueError:
    raise argparse.ArgumentTypeError(
        'not an integer; pass a whole number, e.g. {flag}=1234')


def _finite(text):
  try:
    value = float(text)
  except ValueError:
    raise argparse.ArgumentTypeError('not a number; pass e.g. {flag}=0.1')
  if not math.isfinite(value):
    raise argparse.ArgumentTypeError(
        'must be a finite number; pass e.g. {flag}=0.1')
  return value


def positive_float(text):
  value = _finite(text)
  if not value > 0:
    raise argparse.ArgumentTypeError(
        'must be positive; pass a number above 0, e.g. {flag}=0.1')
  return value


def non_negative_float(text):
  value = _finite(text)
  if value < 0:
    raise argparse.ArgumentTypeError(
        'must be 0 or more; pass e.g. {flag}=0 or {flag}=0.0001')
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
      'expected a link speed of at least 1kbit; pass e.g. {flag}=200mbit, '
      '1gbit or 500kbit')


def _int_list(text):
  try:
    values = [int(t) for t in text.split(',') if t.strip()]
  except ValueError:
    raise argparse.ArgumentTypeError(
        'expected comma-separated integers; pass e.g. {flag}=1,2,4')
  if not values or min(values) < 1:
    raise argparse.ArgumentTypeError(
        'expected tower counts of at least 1; pass e.g. {flag}=1,2,4')
  return sorted(set(values))


def _strategy_list(text):
  names = [t.strip() for t in text.split(',') if t.strip()]
  unknown = [n for n in names if n not in STRATEGY_NAMES]
  if not names or unknown:
    raise argparse.ArgumentTypeError(
        'unknown strategy %r: choose from %s' %
        (','.join(unknown) or text, ', '.join(STRATEGY_NAMES)))
  return names


# --compare_options: the tokens of an option set, joined by '+'.
OPTION_TOKENS = ('plain', 'fp16', 'fp16_auto', 'bpps<N>', 'relaxed')
# The flags an option set sets: not given beside --compare_options.
OPTION_FLAGS = ('use_fp16', 'fp16_enable_auto_loss_scale',
                'backward_passes_per_step', 'variable_consistency')


def option_set_tokens(name):
  """The tokens of one option set, e.g. 'fp16+bpps4' -> ['fp16', 'bpps4'].

  Raises:
    argparse.ArgumentTypeError: a token that is not one of OPTION_TOKENS
      (bpps<N>: N a whole number of at least 1), 'plain' beside another
      token, two tokens of one option, or an empty set.
  """
  fix = ('each option set is plain, fp16, fp16_auto, bpps<N> '
         '(backward_passes_per_step=N, N at least 1) or relaxed, several '
         'joined by +; pass e.g. {flag}=plain,fp16,bpps4,fp16+relaxed')
  tokens = name.split('+')
  kinds = []
  for token in tokens:
    match = re.match(r'^bpps(\d+)$', token)
    if match and int(match.group(1)) >= 1:
      kinds.append('bpps')
    elif match:
      raise argparse.ArgumentTypeError(
          '%r in the set %r: bpps<N> needs N at least 1; %s' % (
              token, name, fix))
    elif token in ('plain', 'fp16', 'fp16_auto', 'relaxed'):
      kinds.append('fp16' if token.startswith('fp16') else token)
    else:
      raise argparse.ArgumentTypeError('unknown option %r in the set %r: %s'
                                       % (token, name, fix))
  if 'plain' in kinds and len(kinds) > 1:
    raise argparse.ArgumentTypeError(
        'the set %r: plain means no option and stands alone; %s' % (name, fix))
  twice = sorted(set(k for k in kinds if kinds.count(k) > 1))
  if twice:
    raise argparse.ArgumentTypeError(
        'the set %r sets %s twice; keep one of them: %s' % (
            name, 'fp16' if twice[0] == 'fp16' else twice[0], fix))
  return tokens


def _option_set_list(text):
  names = [t.strip() for t in text.split(',')]
  if not any(names):
    raise argparse.ArgumentTypeError(
        'no option set; pass e.g. {flag}=plain,fp16,bpps4,relaxed')
  seen = []
  for name in names:
    option_set_tokens(name)
    if name in seen:
      raise argparse.ArgumentTypeError(
          'the set %r is given twice; give each option set once, e.g. '
          '{flag}=plain,fp16' % name)
    seen.append(name)
  return names


def _adder(container):
  """`container.add_argument` whose `type` refusals name the flag."""

  def add(flag, **kwargs):
    if 'type' in kwargs:
      kwargs['type'] = _named(flag, kwargs['type'])
    return container.add_argument(flag, **kwargs)

  return add


def build_parser():
  """The argument parser of both commands; batch counts default to None."""
  p = _Parser(prog=PROG, description=(
      'Data-parallel training benchmark for variable_mgr strategies on '
      'synthetic data. Towers are virtual CPU devices with --device=cpu.'))
  add = _adder(p)
  add('--model', default='lenet', choices=MODEL_NAMES,
      help='the model to train (default: %(default)s)')
  add('--variable_update', default='replicated', choices=STRATEGY_NAMES,
      help='how variables are kept and updated (default: %(default)s)')
  add('--num_gpus', type=int_at_least(1), default=4,
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
  add('--num_batches', type=int_at_least(1), default=None,
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
  add('--weight_decay', type=non_negative_float, default=None,
      help='L2 factor on weights (default: the model\'s)')
  add('--seed', type=integer, default=1234,
      help='graph-level random seed of initial values and synthetic data')
  add('--use_resource_vars', type=parse_bool, nargs='?', const=True, default=None,
      help='true: resource variables; false: ref variables (default: '
           'TensorFlow\'s, ref in 1.15, resource in 2.x)')
  add('--train_dir', default=None,
      help='restore the latest checkpoint here at start, save at the end '
           '(a directory; created if missing, its parent must exist)')
  add('--summary_dir', default=None,
      help='write a TensorBoard scalar summary of the loss here (a '
           'directory; created if missing, its parent must exist)')
  add('--trace_file', default=None,
      help='write a Chrome trace (chrome://tracing) of one step to this '
           'file (its directory must exist)')
  add('--output', default=None,
      help='write the results as JSON to this file (its directory must '
           'exist)')
  add('--compare', action='store_true',
      help='sweep strategies x tower counts; write a Markdown table and a '
           'PNG chart into --compare_dir')
  add('--compare_dir', default='benchmark_compare',
      help='output directory of --compare (created if missing, its parent '
           'must exist) (default: %(default)s)')
  add('--compare_strategies', type=_strategy_list,
      default=['independent', 'parameter_server', 'replicated',
               'distributed_replicated'],
      help='comma-separated strategies for --compare (default: every '
           'strategy that runs on one machine)')
  add('--compare_towers', type=_int_list, default=[1, 2, 4],
      help='comma-separated tower counts for --compare (default: 1,2,4)')
  add('--compare_options', type=_option_set_list, default=None,
      help='comma-separated option sets for --compare, each plain, fp16, '
           'fp16_auto, bpps<N> (--backward_passes_per_step=N) or relaxed, '
           'several joined by +, e.g. plain,fp16,bpps4,relaxed (default: '
           'the training options of the other flags)')
  _add_data_flags(p)
  _add_cluster_flags(p)
  return p


def _add_data_flags(parser):
  """Input, evaluation, session and checkpoint flags, under
  tf_cnn_benchmarks' names."""
  add = _adder(parser)
  add('--data_name', default=None, choices=DATA_NAMES,
      help='real data to train on: imagenet or cifar10 (files in '
           '--data_dir) or digits (scikit-learn\'s bundled 8x8 digits, no '
           'download) (default: synthetic data)')
  add('--data_dir', default=None,
      help='the directory of --data_name\'s files')
  add('--data_format', default='NHWC', choices=('NHWC', 'NCHW'),
      help='the images\' layout (default: %(default)s)')
  add('--distortions', type=parse_bool, nargs='?', const=True,
      default=False,
      help='distort the training images (crops, flips, colour) as '
           'tf_cnn_benchmarks does')
  add('--eval', type=parse_bool, nargs='?', const=True, default=False,
      help='evaluate the latest checkpoint of --train_dir on the eval split '
           'instead of training; prints top-1 and top-5 accuracy')
  add('--num_eval_batches', type=int_at_least(1), default=None,
      help='--eval: batches to evaluate (default: the whole eval split)')
  add('--eval_during_training_every_n_steps', type=int_at_least(1),
      default=None,
      help='evaluate the training variables every this many steps')
  add('--forward_only', type=parse_bool, nargs='?', const=True,
      default=False,
      help='run the forward pass only: no gradients, no updates')
  add('--print_training_accuracy', type=parse_bool, nargs='?', const=True,
      default=False,
      help='add the batch\'s top-1 and top-5 accuracy to the step lines')
  add('--num_intra_threads', type=int_at_least(0), default=None,
      help='threads of one op (default: TensorFlow\'s)')
  add('--num_inter_threads', type=int_at_least(0), default=0,
      help='ops run at once (0: TensorFlow\'s choice) (default: '
           '%(default)s)')
  add('--save_model_secs', type=int_at_least(0), default=0,
      help='also save a checkpoint into --train_dir every this many '
           'seconds (0: off) (default: %(default)s)')
  add('--max_ckpts_to_keep', type=int_at_least(1), default=5,
      help='checkpoints kept in --train_dir (default: %(default)s)')
  add('--save_summaries_steps', type=int_at_least(0), default=0,
      help='write summaries into --summary_dir every this many steps (0: '
           'every step) (default: %(default)s)')
  add('--summary_verbosity', type=int_at_least(0), default=0,
      help='0: the loss only; 1: and the learning rate; 2: and every '
           'gradient\'s norm; 3: and histograms of the variables '
           '(default: %(default)s)')


def _add_cluster_flags(parser):
  group = parser.add_argument_group(
      'cluster', 'run one task of a ps/worker cluster (or read TF_CONFIG), '
      'or launch a whole cluster on this machine')
  add = _adder(group)
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


# Strategies that run across a cluster, and the one that runs nowhere else.
CLUSTER_STRATEGIES = ('parameter_server', 'distributed_replicated',
                      'collective_all_reduce')
CLUSTER_ONLY_STRATEGIES = ('collective_all_reduce',)
# The flags that say which task of a cluster this process is.
TASK_FLAGS = ('job_name', 'task_index', 'ps_hosts', 'worker_hosts')
# Flags a cluster run reads and a run on one machine would ignore.
CLUSTER_ONLY_FLAGS = ('cross_replica_sync', 'op_timeout_secs',
                      'startup_timeout_secs', 'save_model_steps', 'num_ps',
                      'num_workers')
# Flags a run on one machine reads and a cluster run would ignore.
LOCAL_ONLY_FLAGS = ('trace_file', 'summary_dir', 'measure_traffic')
COMPARE_FLAGS = ('compare_dir', 'compare_strategies', 'compare_towers',
                 'compare_options')
# Output paths: (flag, kind).
FILE_FLAGS = ('output', 'trace_file')
DIRECTORY_FLAGS = ('train_dir', 'summary_dir', 'compare_dir')


def _default_batches(args, timed, warmup):
  if args.num_batches is None:
    args.num_batches = timed
  if args.num_warmup_batches is None:
    args.num_warmup_batches = warmup
  return args


def typed_flags(argv, parser=None):
  """The destinations of the flags `argv` gives (abbreviations resolved as
  argparse resolves them), e.g. {'num_gpus', 'model'}."""
  parser = parser or build_parser()
  options = {}
  for action in parser._actions:  # pylint: disable=protected-access
    for option in action.option_strings:
      options[option] = action.dest
  typed = set()
  for token in argv:
    if token == '--':
      break
    if not token.startswith('--'):
      continue
    name = token.split('=', 1)[0]
    if name in options:
      typed.add(options[name])
      continue
    matches = set(options[o] for o in options if o.startswith(name))
    if len(matches) == 1:
      typed.add(matches.pop())
  return typed


def _flag_list(dests):
  return ', '.join('--' + d for d in dests)


def _value(args, dest):
  value = getattr(args, dest)
  if isinstance(value, (list, tuple)):
    value = ','.join(str(v) for v in value)
  elif isinstance(value, bool):
    value = str(value).lower()
  return '--%s=%s' % (dest, value)


def check_output_path(flag, path, kind):
  """Refuses an output path that cannot be written as `kind` ('file' or
  'directory'): a path of the other kind, one that is not writable, or one
  whose parent directory is missing (a missing directory of a directory
  flag is created by the run, a missing parent never).

  Raises:
    UsageError: naming the flag and the path as given.
  """
  given = '--%s=%s' % (flag, path)
  if not path:
    raise UsageError('%s: an empty path; pass a path or drop the flag' % given)
  if kind == 'file':
    if os.path.isdir(path):
      raise UsageError(
          '%s is a directory, and --%s names a file; pass a file path such '
          'as --%s=%s' % (given, flag, flag, os.path.join(
              path, 'trace.json' if flag == 'trace_file' else
              'results.json')))
    if os.path.exists(path) and not os.access(path, os.W_OK):
      raise UsageError('%s: the file is not writable; choose another path '
                       'or make it writable' % given)
  else:
    if os.path.exists(path) and not os.path.isdir(path):
      raise UsageError(
          '%s is a file, and --%s names a directory; pass a directory path '
          '(created if missing)' % (given, flag))
    if os.path.isdir(path) and not os.access(path, os.W_OK | os.X_OK):
      raise UsageError('%s: the directory is not writable; choose another '
                       'one or make it writable' % given)
  if os.path.exists(path):
    return
  parent = os.path.dirname(os.path.abspath(path))
  if not os.path.isdir(parent):
    raise UsageError(
        '%s: the directory %s %s; create it first (mkdir -p %s) or choose a '
        'path in an existing directory' % (
            given, parent, 'is not a directory' if os.path.exists(parent)
            else 'does not exist', parent))
  if not os.access(parent, os.W_OK | os.X_OK):
    raise UsageError('%s: the directory %s is not writable; choose a path '
                     'in a writable directory' % (given, parent))


def _check(args, typed, environ, command):
  """The cross-checks of the flags; `command` is 'benchmark' (parse_args)
  or 'task' (parse_task_args: a task or a launcher)."""
  tf_config = bool(environ.get('TF_CONFIG', '').strip())
  task_flags = [f for f in TASK_FLAGS if f in typed]
  launch = args.launch_local_cluster
  if tf_config and task_flags:
    raise UsageError(
        'TF_CONFIG is set and %s given too: a task is described by the '
        'flags or by TF_CONFIG, not both; unset TF_CONFIG or drop %s' %
        (_flag_list(task_flags), _flag_list(task_flags)))
  if tf_config and launch:
    raise UsageError(
        '--launch_local_cluster with TF_CONFIG set: the launcher picks every '
        'task\'s address itself; unset TF_CONFIG, or drop '
        '--launch_local_cluster to run the task TF_CONFIG describes')
  if 'task_index' in typed and not args.job_name and not launch:
    raise UsageError(
        '%s without --job_name: say which job the task is in, e.g. '
        '--job_name=worker %s --ps_hosts=... --worker_hosts=...' %
        (_value(args, 'task_index'), _value(args, 'task_index')))
  task = bool(task_flags) or tf_config
  cluster = launch or task or command == 'task'
  if cluster:
    mode = ('--launch_local_cluster' if launch else
            'a cluster task (TF_CONFIG)' if tf_config else
            'a cluster task (%s)' % (_value(args, 'job_name') if args.job_name
                                     else _flag_list(task_flags or
                                                     ['job_name'])))
  else:
    mode = None

  if args.compare:
    if cluster:
      given = ('--launch_local_cluster' if launch else 'TF_CONFIG set'
               if tf_config else _flag_list(task_flags))
      raise UsageError(
          '--compare with %s: the sweep runs every configuration in this '
          'process, not as a cluster; %s' % (
              given, 'unset TF_CONFIG or drop --compare' if given ==
              'TF_CONFIG set' else 'drop --compare or ' + given))
    ignored = [f for f in ('train_dir', 'summary_dir', 'trace_file',
                           'output') if getattr(args, f)]
    if ignored:
      raise UsageError(
          '--compare runs many configurations and writes its results into '
          '--compare_dir: drop %s, or run one configuration without '
          '--compare' % _flag_list(ignored))
    cluster_only = [s for s in args.compare_strategies
                    if s in CLUSTER_ONLY_STRATEGIES]
    if cluster_only:
      raise UsageError(
          '%s: %s runs across a cluster only, and --compare runs on one '
          'machine; drop it from --compare_strategies (run it with '
          '--launch_local_cluster --variable_update=%s)' % (
              _value(args, 'compare_strategies'), ', '.join(cluster_only),
              cluster_only[0]))
    both = [f for f in OPTION_FLAGS if f in typed]
    if args.compare_options and both:
      raise UsageError(
          '%s with %s: each option set of --compare_options says which '
          'training options its runs have; drop %s and name the options in '
          'the sets (e.g. --compare_options=plain,fp16,bpps4,relaxed)' % (
              _value(args, both[0]), _value(args, 'compare_options'),
              _flag_list(both)))
    for flag, token in (('fp16_loss_scale', 'fp16'),
                        ('fp16_inc_loss_scale_every_n', 'fp16_auto')):
      if args.compare_options and flag in typed and not any(
          t.startswith(token) and (token == 'fp16' or t == token)
          for n in args.compare_options for t in option_set_tokens(n)):
        raise UsageError(
            '%s with %s: no option set has %s, so no run would use it; add '
            'a set with %s to --compare_options or drop --%s' % (
                _value(args, flag), _value(args, 'compare_options'), token,
                token, flag))
  else:
    compare_flags = [f for f in COMPARE_FLAGS if f in typed]
    if compare_flags:
      raise UsageError('%s without --compare: %s applies to --compare only; '
                       'add --compare or drop %s' % (
                           _value(args, compare_flags[0]),
                           '--' + compare_flags[0], _flag_list(compare_flags)))

  typed_update = 'variable_update' in typed
  if cluster and args.variable_update not in CLUSTER_STRATEGIES:
    choices = '--variable_update=%s' % ', '.join(CLUSTER_STRATEGIES[:-1]) + (
        ' or %s' % CLUSTER_STRATEGIES[-1])
    if typed_update:
      raise UsageError(
          '%s runs on one machine only, not as %s; pass %s' % (
              _value(args, 'variable_update'), mode, choices))
    raise UsageError(
        '%s runs --variable_update=%s by default, which runs on one machine '
        'only; pass %s' % (mode, args.variable_update, choices))
  if not cluster and args.variable_update in CLUSTER_ONLY_STRATEGIES:
    raise UsageError(
        '%s needs a cluster: it runs across the workers of one; add '
        '--launch_local_cluster (a cluster of processes on this machine), or '
        'use replicated on one machine' % _value(args, 'variable_update'))
  if cluster and not args.cross_replica_sync and (
      args.variable_update != 'parameter_server'):
    raise UsageError(
        '--cross_replica_sync=false with %s: asynchronous updates exist only '
        'for parameter_server; drop the flag or pass '
        '--variable_update=parameter_server' %
        _value(args, 'variable_update'))
  if cluster:
    ignored = [f for f in LOCAL_ONLY_FLAGS if f in typed and getattr(args, f)]
    if ignored:
      raise UsageError(
          '%s: a cluster run does not write or measure this (only a run on '
          'one machine does); drop %s' % (
              _value(args, ignored[0]), _flag_list(ignored)))
  else:
    ignored = [f for f in CLUSTER_ONLY_FLAGS if f in typed]
    if ignored:
      raise UsageError(
          '%s: applies to cluster runs only (--launch_local_cluster, '
          '--job_name or TF_CONFIG); drop %s or add --launch_local_cluster' %
          (_value(args, ignored[0]), _flag_list(ignored)))

  flag_checks.check(args, typed, cluster)

  # The paths this run writes, checked before anything is built.
  if args.compare:
    written = ['compare_dir']
  elif args.job_name == 'ps':
    written = []
  elif cluster:
    written = ['output'] + (['train_dir'] if args.job_name is None or
                            args.task_index == 0 else [])
  else:
    written = ['output', 'trace_file', 'train_dir', 'summary_dir']
  for flag in written:
    path = getattr(args, flag)
    if path is not None:
      check_output_path(flag, path,
                        'file' if flag in FILE_FLAGS else 'directory')


def _parse(argv, environ, command, timed):
  argv = list(sys.argv[1:] if argv is None else argv)
  environ = os.environ if environ is None else environ
  parser = build_parser()
  args = parser.parse_args(argv)
  # --compare runs many configurations: shorter runs by default.
  if args.compare:
    _default_batches(args, 10, 2)
  else:
    _default_batches(args, timed, 5)
  _check(args, typed_flags(argv, parser), environ, command)
  if args.network_rate is not None and not args.launch_local_cluster:
    raise UsageError(
        '%s without --launch_local_cluster: the namespace network is made '
        'by the launcher of a cluster on this machine; add '
        '--launch_local_cluster or drop --network_rate' %
        _as_typed(argv, 'network_rate'))
  return args


def _as_typed(argv, dest):
  """`--dest=value` as argv gave it (the last time, as argparse reads
  it)."""
  flag = '--' + dest
  text = flag
  for i, a in enumerate(argv):
    if a == flag and i + 1 < len(argv):
      text = '%s=%s' % (flag, argv[i + 1])
    elif a.startswith(flag + '='):
      text = a
  return text


def parse_args(argv=None, environ=None):
  """The flags of `variable_mgr_benchmark`, cross-checked.

  Args:
    argv: the arguments (default: sys.argv[1:]).
    environ: the environment, for TF_CONFIG (default: os.environ).

  Raises:
    UsageError: a bad flag, with a one-line message.
  """
  return _parse(argv, environ, 'benchmark', 30)


def parse_task_args(argv=None, environ=None):
  """The flags of one cluster task (or of its launcher), cross-checked.

  Raises:
    UsageError: a bad flag, with a one-line message.
  """
  return _parse(argv, environ, 'task', 30)
