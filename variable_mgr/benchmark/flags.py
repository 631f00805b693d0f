"""The benchmark command's flags: one parser, its value types, its defaults.

Flags follow tf_cnn_benchmarks' names and absl's forms: the renamed ones
keep their old names as aliases (`--tf_random_seed` or `--seed`,
`--init_learning_rate` or `--learning_rate`); a boolean is `--flag`,
`--flag=true|false|1|0` or `--noflag`; `-flag` is `--flag`. A flag of
tf_cnn_benchmarks that this benchmark lacks (TF_CNN_FLAGS, its 137 flags)
is refused by name, unless given with the value this benchmark always runs
with (TF_CNN_SAME_VALUES). Errors name a flag as it was typed. Parsing
imports no TensorFlow, so a bad flag is refused at once. Every refusal is a
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
its flag, as typed), the optimizer and learning-rate flags against each
other and their steps at the run's global batch (`learning_rate_steps`,
which `optimizers` uses too), the strategy against the launch mode (one machine,
`--compare`, a cluster), flags that the chosen mode would ignore, a
`TF_CONFIG` given together with the cluster flags, and the output paths.

Output paths: `--output` and `--trace_file` name files, `--train_dir`,
`--summary_dir` and `--compare_dir` directories. A path must be of its
kind when it exists, writable, and its parent directory must exist: the
command creates a missing directory flag's own directory (one level), never
a missing parent.
"""

import argparse
import difflib
import json
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
OPTIMIZERS = ('sgd', 'momentum', 'rmsprop', 'adam')


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
  """absl's boolean values (true, false, t, f, 1, 0, any case), and yes,
  no, on, off."""
  value = str(text).lower()
  if value in ('1', 'true', 't', 'yes', 'on'):
    return True
  if value in ('0', 'false', 'f', 'no', 'off'):
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


def _lower(text):
  return str(text).lower()


def fraction(text):
  """A number in [0, 1): a decay or an Adam beta."""
  value = _finite(text)
  if not 0 <= value < 1:
    raise argparse.ArgumentTypeError(
        'must be at least 0 and below 1; pass e.g. {flag}=0.9')
  return value


def decay_factor(text):
  """0 (no decay) or a factor above 0 and below 1."""
  value = _finite(text)
  if not 0 <= value < 1:
    raise argparse.ArgumentTypeError(
        'a decay factor is above 0 and below 1 (0: no decay); pass e.g. '
        '{flag}=0.94')
  return value


def parse_piecewise_schedule(text):
  """tf_cnn_benchmarks' "lr0;epoch1;lr1;...;epochN;lrN": the rates
  [lr0, ..., lrN] (positive) and the epochs [epoch1, ..., epochN] (whole
  numbers, above 0, increasing).

  Raises:
    argparse.ArgumentTypeError: saying which piece is wrong and how.
  """
  fix = ('pass e.g. {flag}="0.3;10;0.2;25;0.1" (0.3 until epoch 10, 0.2 '
         'until 25, then 0.1)')
  pieces = [p.strip() for p in str(text).split(';')]
  if len(pieces) % 2 == 0:
    raise argparse.ArgumentTypeError(
        '%d pieces: a schedule is rates and epochs in turn, starting and '
        'ending with a rate (an odd number of pieces); %s' % (
            len(pieces), fix))
  rates, epochs = [], []
  for i, piece in enumerate(pieces):
    if i % 2 == 0:
      try:
        rate = float(piece)
      except ValueError:
        rate = None
      if rate is None or not math.isfinite(rate) or rate <= 0:
        raise argparse.ArgumentTypeError(
            'the rate %r is not a positive number; %s' % (piece, fix))
      rates.append(rate)
    else:
      try:
        epoch = int(piece)
      except ValueError:
        raise argparse.ArgumentTypeError(
            'the epoch %r is not a whole number (tf_cnn_benchmarks reads '
            'whole epochs); %s' % (piece, fix))
      if epoch < 1 or (epochs and epoch <= epochs[-1]):
        raise argparse.ArgumentTypeError(
            'the epoch %d %s: the epochs where the rate changes are above 0 '
            'and increasing; %s' % (
                epoch, 'is not above 0' if epoch < 1 else
                'does not follow %d' % epochs[-1], fix))
      epochs.append(epoch)
  return rates, epochs


def piecewise_schedule(text):
  parse_piecewise_schedule(text)
  return text


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
  """`container.add_argument` whose `type` refusals name the flag as typed.

  `aliases`: other names of the flag (same destination; each refusal names
  the one typed). `boolean=True`: an absl-style boolean, `--flag`,
  `--flag=true|false|1|0` (the `--noflag` form is rewritten by
  `_rewrite_argv` into `--flag=false`).
  """

  def add(flag, aliases=(), boolean=False, **kwargs):
    if boolean:
      kwargs.update(type=parse_bool, nargs='?', const=True)
      kwargs.setdefault('metavar', 'true|false')
    kwargs.setdefault('dest', flag[2:])
    if aliases and kwargs.get('help') not in (None, argparse.SUPPRESS):
      kwargs['help'] += ' (also %s)' % ', '.join(aliases)
    first = None
    for name in (flag,) + tuple(aliases):
      options = dict(kwargs)
      if 'type' in options:
        options['type'] = _named(name, options['type'])
      if first is not None:
        options['help'] = argparse.SUPPRESS
      action = container.add_argument(name, **options)
      action.boolean = boolean
      first = first or action
    return first

  return add


def build_parser():
  """The argument parser of both commands; batch counts default to None."""
  p = _Parser(prog=PROG, description=(
      'Data-parallel training benchmark for variable_mgr strategies on '
      'synthetic data. Towers are virtual CPU devices with --device=cpu. '
      'Flags follow tf_cnn_benchmarks; a boolean flag takes absl\'s forms: '
      '--flag, --flag=true|false, --noflag.'))
  add = _adder(p)
  add('--model', default='lenet', choices=MODEL_NAMES,
      help='the model to train (default: %(default)s)')
  add('--variable_update', default='replicated', choices=STRATEGY_NAMES,
      help='how variables are kept and updated (default: %(default)s)')
  add('--num_gpus', type=int_at_least(1), default=4,
      help='number of towers (virtual CPU devices with --device=cpu) '
           '(default: %(default)s)')
  # tf_cnn_benchmarks takes CPU and GPU too.
  add('--device', default='cpu', choices=('cpu', 'gpu'), type=_lower,
      help='the towers\' device type (default: %(default)s)')
  add('--local_parameter_device', default='cpu', choices=('cpu', 'gpu'),
      type=_lower,
      help='where parameter_server keeps the variables (default: '
           '%(default)s)')
  add('--staged_vars', boolean=True, default=False,
      help='read variables through staging areas (parameter_server only)')
  add('--use_nccl', boolean=True, default=False,
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
  add('--compact_gradient_transfer', boolean=True, default=False,
      help='replicated: float32 gradients travel as float16')
  add('--measure_traffic', boolean=True, default=False,
      help='after the timed steps, run one more and print the bytes each '
           'device sent and received beside the ring lower bound')
  add('--use_fp16', boolean=True, default=False,
      help='towers compute in float16 on float32 variables, with a loss '
           'scale')
  add('--fp16_loss_scale', type=positive_float, default=None,
      help='--use_fp16: the fixed loss scale, or the first one with '
           '--fp16_enable_auto_loss_scale (default: 128)')
  add('--fp16_enable_auto_loss_scale', boolean=True, default=False,
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
  add('--num_epochs', type=positive_float, default=None,
      help='train this many epochs of the training split instead of '
           '--num_batches: ceil(epochs x examples / global batch) timed '
           'batches, as tf_cnn_benchmarks counts them')
  add('--num_warmup_batches', type=int_at_least(0), default=None,
      help='untimed batches before timing (default: 5; 2 with --compare)')
  add('--display_every', type=int_at_least(1), default=10,
      help='print a progress line every this many steps (default: '
           '%(default)s)')
  _add_optimizer_flags(p)
  add('--weight_decay', type=non_negative_float, default=None,
      help='L2 factor on weights (default: the model\'s)')
  add('--tf_random_seed', aliases=('--seed',), type=integer, default=1234,
      dest='seed',
      help='graph-level random seed of initial values and synthetic data '
           '(default: %(default)s)')
  add('--use_resource_vars', boolean=True, default=None,
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
  add('--compare', boolean=True, default=False,
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


def _add_optimizer_flags(parser):
  """The optimizer and its learning rate, as tf_cnn_benchmarks names them."""
  add = _adder(parser)
  add('--optimizer', default='sgd', choices=OPTIMIZERS,
      help='sgd, momentum, rmsprop or adam (default: %(default)s)')
  add('--init_learning_rate', aliases=('--learning_rate',),
      type=positive_float, default=None, dest='learning_rate',
      help='the initial learning rate (default: the model\'s; for resnet50, '
           'resnet101 and resnet152 tf_cnn_benchmarks\' schedule, scaled '
           'with the global batch)')
  add('--piecewise_learning_rate_schedule', type=piecewise_schedule,
      default=None,
      help='"lr0;epoch1;lr1;...;epochN;lrN": lr0 until epoch1 (whole epochs '
           'from 0, increasing), then lr1, ...')
  add('--num_epochs_per_decay', type=non_negative_float, default=0.0,
      help='with --learning_rate_decay_factor: multiply the rate by the '
           'factor every this many epochs (staircase) (default: 0, off)')
  add('--learning_rate_decay_factor', type=decay_factor, default=0.0,
      help='the factor of --num_epochs_per_decay, above 0 and below 1 '
           '(default: 0, off)')
  add('--num_learning_rate_warmup_epochs', type=non_negative_float,
      default=0.0,
      help='raise the rate linearly from 0 to the initial one over this '
           'many epochs (default: 0, off)')
  add('--minimum_learning_rate', type=non_negative_float, default=0.0,
      help='the decay never takes the rate below this (default: 0)')
  add('--resnet_base_lr', type=positive_float, default=None,
      help='resnet50, resnet101, resnet152: the base rate of the default '
           'schedule at a global batch of 256 (default: 0.128)')
  add('--momentum', type=positive_float, default=0.9,
      help='--optimizer=momentum: the momentum (default: %(default)s)')
  add('--rmsprop_decay', type=fraction, default=0.9,
      help='--optimizer=rmsprop: the decay of the mean square (default: '
           '%(default)s)')
  add('--rmsprop_momentum', type=non_negative_float, default=0.9,
      help='--optimizer=rmsprop: the momentum (default: %(default)s)')
  add('--rmsprop_epsilon', type=positive_float, default=1.0,
      help='--optimizer=rmsprop: the epsilon (default: %(default)s)')
  add('--adam_beta1', type=fraction, default=0.9,
      help='--optimizer=adam: beta1 (default: %(default)s)')
  add('--adam_beta2', type=fraction, default=0.999,
      help='--optimizer=adam: beta2 (default: %(default)s)')
  add('--adam_epsilon', type=positive_float, default=1e-8,
      help='--optimizer=adam: the epsilon (default: %(default)s)')


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
  add('--distortions', boolean=True, default=False,
      help='distort the training images (crops, flips, colour) as '
           'tf_cnn_benchmarks does')
  add('--eval', boolean=True, default=False,
      help='evaluate the latest checkpoint of --train_dir on the eval split '
           'instead of training; prints top-1 and top-5 accuracy')
  add('--num_eval_batches', type=int_at_least(1), default=None,
      help='--eval: batches to evaluate (default: the whole eval split)')
  add('--eval_during_training_every_n_steps', type=int_at_least(1),
      default=None,
      help='evaluate the training variables every this many steps')
  add('--forward_only', boolean=True, default=False,
      help='run the forward pass only: no gradients, no updates')
  add('--print_training_accuracy', boolean=True, default=False,
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
  add('--cross_replica_sync', boolean=True, default=True,
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
  add('--launch_local_cluster', boolean=True, default=False,
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


# tf_cnn_benchmarks' flags (scripts/tf_cnn_benchmarks/benchmark_cnn.py of
# tensorflow/benchmarks, 137 flags): (name, kind, default). Kinds: bool,
# int, float, string, enum, list. A flag of this table that the parser
# lacks is refused by name (`_rewrite_argv`), unless its value is one of
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
    'hierarchical_copy': False,
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

# Each model's default batch a tower and each data set's training
# examples, written out so that parsing imports neither `models` nor
# `datasets` (tests check that they agree). Synthetic data counts
# ImageNet's epoch, as tf_cnn_benchmarks does.
MODEL_BATCH_SIZES = {
    'trivial': 32, 'lenet': 32, 'resnet20': 32, 'resnet50': 32,
    'alexnet': 512, 'vgg16': 64, 'inception3': 32, 'resnet101': 64,
    'resnet152': 64}
IMAGENET_NUM_TRAIN_IMAGES = 1281167
EXAMPLES_PER_EPOCH = {None: IMAGENET_NUM_TRAIN_IMAGES,
                      'imagenet': IMAGENET_NUM_TRAIN_IMAGES,
                      'cifar10': 50000, 'digits': 1497}
# The models whose default learning rate is tf_cnn_benchmarks' ImageNet
# ResNet schedule, scaled with the global batch (see optimizers).
SCALED_RATE_MODELS = ('resnet50', 'resnet101', 'resnet152')
# Flags read by one optimizer only.
OPTIMIZER_FLAGS = (('momentum', ('momentum',)),
                   ('rmsprop', ('rmsprop_decay', 'rmsprop_momentum',
                                'rmsprop_epsilon')),
                   ('adam', ('adam_beta1', 'adam_beta2', 'adam_epsilon')))
# Destinations whose flag has another name in tf_cnn_benchmarks.
CANONICAL_NAMES = {'learning_rate': 'init_learning_rate',
                   'seed': 'tf_random_seed'}


def _tf_cnn_value(kind, text):
  """The value `text` of a tf_cnn_benchmarks flag of `kind`, or text
  itself when it does not parse as one."""
  try:
    if kind == 'bool':
      return parse_bool(text)
    if kind == 'int':
      return int(text)
    if kind == 'float':
      return float(text)
  except (ValueError, argparse.ArgumentTypeError):
    return text
  return text


def _refuse_tf_cnn(flag, kind, given, value):
  """Raises the UsageError of an unsupported tf_cnn_benchmarks flag `flag`
  given as `given` (the text typed) with `value`."""
  if flag in TF_CNN_SAME_VALUES:
    same = TF_CNN_SAME_VALUES[flag]
    if kind == 'bool':
      always = '--%s' % flag if same else '--no%s' % flag
    else:
      always = '--%s=%s' % (flag, same if same != '' else "''")
    raise UsageError(
        '%s: a tf_cnn_benchmarks flag this benchmark does not support (it '
        'always runs as %s); drop it' % (given, always))
  raise UsageError('%s: a tf_cnn_benchmarks flag this benchmark does not '
                   'support; drop it' % given)


def _rewrite_argv(argv, parser):
  """`argv` as argparse reads it, and the name each flag was typed as.

  absl's `--noflag` becomes `--flag=false` for a boolean flag, `--flag`
  `--flag=true`, absl's `-flag` `--flag`. A
  tf_cnn_benchmarks flag this benchmark lacks is refused by name (or
  dropped when given with the value in TF_CNN_SAME_VALUES); any other
  unknown flag is refused, with the nearest name.

  Returns:
    (argv, names, values): names maps a destination to the flag typed for
    it, e.g. {'seed': '--tf_random_seed', 'staged_vars': '--nostaged_vars'},
    values to its value as typed (the last one given), e.g. {'seed': '07'}.

  Raises:
    UsageError: an unsupported or unknown flag, or `--noflag=value`.
  """
  options = {}
  for action in parser._actions:  # pylint: disable=protected-access
    for option in action.option_strings:
      options[option] = action
  result, names, values = [], {}, {}
  i = 0
  while i < len(argv):
    token = argv[i]
    i += 1
    if token == '--':
      result.extend(argv[i - 1:])
      break
    single = bool(re.match(r'^-[A-Za-z][A-Za-z0-9_]+(=|$)', token))
    if single:
      token = '-' + token  # absl's -flag is --flag.
    if not token.startswith('--'):
      result.append(token)
      continue
    name, eq, value = token.partition('=')
    typed = name[1:] if single else name
    try:
      if name in options:
        action = options[name]
        names[action.dest] = typed
        if eq:
          values[action.dest] = value
        elif getattr(action, 'boolean', False):
          # absl: a boolean's value follows '=', never as the next word.
          if i < len(argv) and _is_value(argv[i], action):
            raise UsageError(
                '%s %s: a boolean takes its value after =; pass %s=%s (or %s, '
                '--no%s)' % (name, argv[i], name, argv[i], name, name[2:]))
          values.pop(action.dest, None)
          token = name + '=true'
        elif action.nargs is None and i < len(argv) and (
            _is_value(argv[i], action)):
          values[action.dest] = argv[i]
        else:
          values.pop(action.dest, None)
        result.append(token)
        continue
      negated = (options.get('--' + name[4:]) if name.startswith('--no')
                 else None)
      if negated is not None and getattr(negated, 'boolean', False):
        if eq:
          raise UsageError(
              '%s: the --no form of a boolean takes no value; pass %s or '
              '--%s=%s' % (token, name, name[4:], value))
        names[negated.dest] = typed
        values.pop(negated.dest, None)
        result.append('--%s=false' % name[4:])
        continue
      flag = name[2:]
      if flag not in TF_CNN_FLAG_KINDS and flag.startswith('no') and (
          TF_CNN_FLAG_KINDS.get(flag[2:]) == 'bool'):
        if eq:
          raise UsageError(
              '%s: the --no form of a boolean takes no value; and --%s is a '
              'tf_cnn_benchmarks flag this benchmark does not support; drop '
              'it' % (token, flag[2:]))
        flag = flag[2:]
        kind = 'bool'
        given, parsed = name, False
      elif flag in TF_CNN_FLAG_KINDS:
        kind = TF_CNN_FLAG_KINDS[flag]
        if eq:
          given, parsed = token, _tf_cnn_value(kind, value)
        elif kind == 'bool':
          given, parsed = name, True
        elif i < len(argv) and not argv[i].startswith('--'):
          given, parsed = '%s=%s' % (name, argv[i]), _tf_cnn_value(kind,
                                                                   argv[i])
          i += 1
        else:
          given, parsed = name, None
      else:
        prefixed = set(a.dest for o, a in options.items() if o.startswith(name))
        if len(prefixed) == 1:
          dest = list(prefixed)[0]
          names[dest] = typed
          if eq:
            values[dest] = value
        if prefixed or len(name) < 3:
          result.append(token)  # an abbreviation (argparse resolves it)
          continue
        near = difflib.get_close_matches(name, list(options), 1, 0.75)
        raise UsageError(
            '%s: not a flag of this benchmark, nor of tf_cnn_benchmarks; %s' % (
                token, 'did you mean %s? (--help lists the flags)' % near[0]
                if near else '--help lists the flags'))
      same = TF_CNN_SAME_VALUES.get(flag, _NO_VALUE)
      if parsed is not None and parsed == same and type(parsed) is type(same):
        continue  # What this benchmark does anyway.
      _refuse_tf_cnn(flag, kind, given, parsed)
    except UsageError as e:
      if not single:
        raise
      # Named as typed: -flag.
      raise UsageError(str(e).replace(name, name[1:], 1))
  return result, names, values


def _is_value(token, action):
  """Whether argparse takes `token` as the value of `action` (a token
  after its flag)."""
  if action.nargs == '?':  # A boolean: a value only if one of its words.
    try:
      parse_bool(token)
      return True
    except argparse.ArgumentTypeError:
      return False
  return not token.startswith('-') or bool(re.match(r'^-\d+$|^-\d*\.\d+$',
                                                   token))


_NO_VALUE = object()


class TypedFlags(set):
  """The destinations of the flags a command line gives; `names` maps
  each to the flag as typed (an alias, a `--no` form, an abbreviation)."""

  def __init__(self, dests=(), names=None, values=None):
    super(TypedFlags, self).__init__(dests)
    self.names = dict(names or {})
    self.values = dict(values or {})


def _typed_name(args, dest):
  names = getattr(args, 'typed_names', None) or {}
  return names.get(dest, '--' + CANONICAL_NAMES.get(dest, dest))


def _global_batches(args, environ):
  """The global batches of the runs `args` ask for, when the flags say
  them (the cluster's workers from --num_workers, --worker_hosts or
  TF_CONFIG)."""
  per_tower = args.batch_size or MODEL_BATCH_SIZES.get(args.model, 32)
  towers = list(args.compare_towers) if args.compare else [args.num_gpus]
  workers = 1
  if args.launch_local_cluster:
    workers = args.num_workers
  elif args.job_name and args.worker_hosts:
    workers = len([h for h in args.worker_hosts.split(',') if h.strip()])
  elif environ.get('TF_CONFIG', '').strip():
    try:
      cluster = json.loads(environ['TF_CONFIG']).get('cluster', {})
      workers = len(cluster.get('worker', [])) + len(cluster.get('chief', []))
    except (ValueError, AttributeError, TypeError):
      workers = 1
  return sorted(set(per_tower * t * max(workers, 1) for t in towers))


def learning_rate_steps(config, global_batch, examples_per_epoch):
  """The steps of the learning-rate schedule `config` asks for, as
  tf_cnn_benchmarks computes them (an epoch is examples_per_epoch /
  global_batch steps, not rounded).

  Args:
    config: the parsed flags or a BenchmarkConfig.
    global_batch: images a step over every tower of every worker.
    examples_per_epoch: the training examples of an epoch.

  Returns:
    {'boundaries': the last step of each piece of
    --piecewise_learning_rate_schedule, 'decay_steps': steps between two
    decays, 'warmup_steps': steps of the warmup}; a key is None when its
    flag is off.

  Raises:
    UsageError: a schedule whose steps collapse at this global batch (a
      decay every 0 steps, a warmup of 0 steps, two rate changes at one
      step), naming the flag as typed, the batch and the fix.
  """
  batches_per_epoch = float(examples_per_epoch) / global_batch
  where = ('at a global batch of %d an epoch of %d examples is %.4g steps' %
           (global_batch, examples_per_epoch, batches_per_epoch))
  steps = dict(boundaries=None, decay_steps=None, warmup_steps=None)
  schedule = config.piecewise_learning_rate_schedule
  if schedule:
    _, epochs = parse_piecewise_schedule(schedule)
    boundaries = [int(e * batches_per_epoch) - 1 for e in epochs]
    for e, b, previous in zip(epochs, boundaries, [-1] + boundaries):
      if b <= previous:
        raise UsageError(
            '%s: %s, so the rate would change at epoch %d on a step where it '
            'changed already (or before the first); use fewer, later epochs '
            'or a smaller batch' % (_given(config,
                                           'piecewise_learning_rate_schedule'),
                                    where, e))
    steps['boundaries'] = boundaries
  if config.num_epochs_per_decay > 0 and config.learning_rate_decay_factor > 0:
    decay_steps = int(batches_per_epoch * config.num_epochs_per_decay)
    if decay_steps < 1:
      raise UsageError(
          '%s: %s, so the rate would decay every 0 steps; pass '
          '--num_epochs_per_decay=%.3g or more, or a smaller batch' % (
              _given(config, 'num_epochs_per_decay'), where,
              1.0 / batches_per_epoch))
    steps['decay_steps'] = decay_steps
  if config.num_learning_rate_warmup_epochs > 0:
    warmup_steps = int(batches_per_epoch *
                       config.num_learning_rate_warmup_epochs)
    if warmup_steps < 1:
      raise UsageError(
          '%s: %s, so the warmup would last 0 steps; pass '
          '--num_learning_rate_warmup_epochs=%.3g or more, or drop it' % (
              _given(config, 'num_learning_rate_warmup_epochs'), where,
              1.0 / batches_per_epoch))
    steps['warmup_steps'] = warmup_steps
  return steps


def _check_learning_rate(args, typed, environ):
  """The optimizer and learning-rate flags against each other, and their
  steps at the global batch the flags give."""
  for optimizer, dests in OPTIMIZER_FLAGS:
    given = [d for d in dests if d in typed]
    if given and args.optimizer != optimizer:
      raise UsageError(
          '%s with %s: --%s is read by --optimizer=%s only; pass '
          '--optimizer=%s or drop %s' % (
              _given(args, given[0]), _given(args, 'optimizer'), given[0],
              optimizer, optimizer, ', '.join(_typed_name(args, d)
                                              for d in given)))
  rate = args.learning_rate
  schedule = args.piecewise_learning_rate_schedule
  decay = args.num_epochs_per_decay > 0 or args.learning_rate_decay_factor > 0
  if schedule:
    others = [d for d in ('learning_rate', 'num_epochs_per_decay',
                          'learning_rate_decay_factor',
                          'minimum_learning_rate', 'resnet_base_lr')
              if getattr(args, d)]
    if others:
      raise UsageError(
          '%s with %s: the schedule gives every rate (its first is the '
          'initial one), and tf_cnn_benchmarks takes no other rate flag '
          'beside it; drop %s' % (
              _given(args, 'piecewise_learning_rate_schedule'),
              _given(args, others[0]),
              ', '.join(_typed_name(args, d) for d in others)))
  if args.resnet_base_lr is not None:
    if args.model not in SCALED_RATE_MODELS:
      raise UsageError(
          '%s with %s: the base rate is that of the default schedule of %s '
          'only; drop it, or pass --init_learning_rate for this model' % (
              _given(args, 'resnet_base_lr'), _given(args, 'model'),
              ', '.join(SCALED_RATE_MODELS)))
    if rate is not None:
      raise UsageError(
          '%s with %s: the initial rate replaces the default schedule the '
          'base rate scales; drop one of them' % (
              _given(args, 'resnet_base_lr'), _given(args, 'learning_rate')))
  if decay:
    given, missing = (('num_epochs_per_decay', 'learning_rate_decay_factor')
                      if args.num_epochs_per_decay > 0 else
                      ('learning_rate_decay_factor', 'num_epochs_per_decay'))
    if not getattr(args, missing) > 0:
      raise UsageError(
          '%s without --%s: the rate decays by --learning_rate_decay_factor '
          'every --num_epochs_per_decay epochs, and needs both; add --%s '
          '(e.g. %s) or drop %s' % (
              _given(args, given), missing, missing,
              '--num_epochs_per_decay=2' if missing == 'num_epochs_per_decay'
              else '--learning_rate_decay_factor=0.94',
              _typed_name(args, given)))
    if rate is None:
      raise UsageError(
          '%s and %s without --init_learning_rate: the decay starts from the '
          'initial rate; add --init_learning_rate (e.g. '
          '--init_learning_rate=0.1)' % (
              _given(args, 'num_epochs_per_decay'),
              _given(args, 'learning_rate_decay_factor')))
  if args.minimum_learning_rate > 0:
    if not decay:
      raise UsageError(
          '%s without a decay: the minimum bounds the decay of '
          '--num_epochs_per_decay and --learning_rate_decay_factor; add them '
          '(and --init_learning_rate) or drop %s' % (
              _given(args, 'minimum_learning_rate'),
              _typed_name(args, 'minimum_learning_rate')))
    if args.minimum_learning_rate > rate:
      raise UsageError(
          '%s is above %s: the rate would never decay; pass a minimum below '
          'the initial rate' % (_given(args, 'minimum_learning_rate'),
                                _given(args, 'learning_rate')))
  if args.num_learning_rate_warmup_epochs > 0 and rate is None and (
      not schedule):
    raise UsageError(
        '%s without --init_learning_rate or '
        '--piecewise_learning_rate_schedule: the warmup rises to the initial '
        'rate of one of them (the model\'s default rate has no warmup flag); '
        'add one, or drop %s' % (
            _given(args, 'num_learning_rate_warmup_epochs'),
            _typed_name(args, 'num_learning_rate_warmup_epochs')))
  examples = EXAMPLES_PER_EPOCH.get(args.data_name, IMAGENET_NUM_TRAIN_IMAGES)
  for global_batch in _global_batches(args, environ):
    learning_rate_steps(args, global_batch, examples)


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
  """The destinations of the flags `argv` gives (aliases, `--noflag` forms
  and abbreviations resolved as the parser resolves them), e.g.
  {'num_gpus', 'model'}: a TypedFlags, whose `names` say how each was
  typed.

  Raises:
    UsageError: an unsupported or unknown flag (see `_rewrite_argv`).
  """
  parser = parser or build_parser()
  _, names, values = _rewrite_argv(list(argv), parser)
  return TypedFlags(names, names, values)


def _flag_list(dests, args=None):
  """The flags of `dests`, named as typed when `args` says how."""
  return ', '.join(_typed_name(args, d) for d in dests)


def _value(args, dest):
  """`--flag=value` with the flag named as typed (`--seed=5`,
  `--nostaged_vars`)."""
  name = _typed_name(args, dest)
  value = getattr(args, dest)
  if value is False and name.startswith('--no') and name[4:] == dest:
    return name
  if isinstance(value, (list, tuple)):
    value = ','.join(str(v) for v in value)
  elif isinstance(value, bool):
    value = str(value).lower()
  return '%s=%s' % (name, value)


def _given(args, dest):
  """`--flag=value` as typed (`--minimum_learning_rate=1`), or as `_value`
  writes it when the value was not typed."""
  typed = getattr(args, 'typed_values', None) or {}
  if dest in typed and dest in (getattr(args, 'typed_names', None) or {}):
    return '%s=%s' % (_typed_name(args, dest), typed[dest])
  return _value(args, dest)


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
        (_flag_list(task_flags, args), _flag_list(task_flags, args)))
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
               if tf_config else _flag_list(task_flags, args))
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
          '--compare' % _flag_list(ignored, args))
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
              _flag_list(both, args)))
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
                           '--' + compare_flags[0],
                           _flag_list(compare_flags, args)))

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
              _value(args, ignored[0]), _flag_list(ignored, args)))
  else:
    ignored = [f for f in CLUSTER_ONLY_FLAGS if f in typed]
    if ignored:
      raise UsageError(
          '%s: applies to cluster runs only (--launch_local_cluster, '
          '--job_name or TF_CONFIG); drop %s or add --launch_local_cluster' %
          (_value(args, ignored[0]), _flag_list(ignored, args)))

  _check_learning_rate(args, typed, environ)
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


def _batches_of_epochs(args, typed, environ):
  """--num_epochs as tf_cnn_benchmarks reads it: sets --num_batches to
  ceil(epochs x examples of the training split / global batch), the global
  batch over every tower of every worker.

  Raises:
    UsageError: --num_epochs with --num_batches, --compare or --eval.
  """
  if args.num_epochs is None:
    return
  given = _given(args, 'num_epochs')
  if 'num_batches' in typed:
    raise UsageError(
        '%s with %s: at most one of them says how long to train (as in '
        'tf_cnn_benchmarks); drop one' % (given, _given(args, 'num_batches')))
  if args.compare:
    raise UsageError(
        '%s with --compare: the sweep\'s tower counts make different global '
        'batches, so an epoch is a different number of batches in each run; '
        'pass --num_batches instead' % given)
  if args.eval:
    raise UsageError(
        '%s with --eval: evaluation reads the whole eval split (or '
        '--num_eval_batches); drop %s' % (given,
                                          _typed_name(args, 'num_epochs')))
  examples = EXAMPLES_PER_EPOCH.get(args.data_name, IMAGENET_NUM_TRAIN_IMAGES)
  global_batch = _global_batches(args, environ)[0]
  args.num_batches = int(math.ceil(args.num_epochs * examples /
                                   float(global_batch)))


def _parse(argv, environ, command, timed):
  argv = list(sys.argv[1:] if argv is None else argv)
  environ = os.environ if environ is None else environ
  parser = build_parser()
  rewritten, names, values = _rewrite_argv(argv, parser)
  args = parser.parse_args(rewritten)
  args.typed_names = names
  args.typed_values = values
  # --compare runs many configurations: shorter runs by default.
  if args.compare:
    _default_batches(args, 10, 2)
  else:
    _default_batches(args, timed, 5)
  _check(args, TypedFlags(names, names, values), environ, command)
  _batches_of_epochs(args, TypedFlags(names, names, values), environ)
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
