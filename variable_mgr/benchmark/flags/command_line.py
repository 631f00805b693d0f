"""The benchmark command's flags: `parse_args`, `parse_task_args`,
`UsageError`, and the names other modules read.

Flags follow tf_cnn_benchmarks' names and absl's forms: they are one table
(`table`) parsed by absl, in a fresh `absl.flags.FlagValues` per parse
(no global flag state: two parses, or two tests, share nothing). A boolean
is `--flag`, `--flag=true|false` or `--noflag`; `-flag` is `--flag`;
`--flagfile=FILE` reads flags from FILE; `--help` lists the benchmark's
flags, `--helpfull` tf_cnn_benchmarks' refused ones and the aliases too.
Renamed flags keep their old names as aliases (`--tf_random_seed` or
`--seed`, `--init_learning_rate` or `--learning_rate`). A flag of
tf_cnn_benchmarks that this benchmark lacks is refused by name, unless
given with the value this benchmark always runs with (`tf_cnn_refused`).
Unlike argparse, absl takes no abbreviation: `--tf_random` is unknown (and
the message names `--tf_random_seed`).

Parsing imports no TensorFlow, so a bad flag is refused at once. Every
refusal is a `UsageError` with a one-line message that names the flag as
typed, the rule and the fix. The flags that cannot run at all (unknown,
refused tf_cnn_benchmarks flags, bad values) are refused together, in one
message; then the cross-checks refuse the first combination that cannot
run: the launch mode (`mode_checks`), the optimizer and learning-rate
flags at the run's global batch (`rate_checks`), the all-reduce
flags (`allreduce_checks`), the data, eval and checkpoint flags
(`input_checks`), the output paths (`output_paths`).

Two commands read these flags, both with tf_cnn_benchmarks' 100 timed and
10 warm-up batches by default (10 and 2 a run with `--compare`), and its
other defaults: synthetic data of imagenet's shapes (`--data_name` is set
to imagenet when neither it nor `--data_dir` is given), `--model=trivial`,
`--variable_update=parameter_server`,
`--num_gpus=1`, `--device=gpu` (left None here: the runners take the CPU
where TensorFlow finds no GPU, see `run_config.default_device`), and
`--num_eval_batches` as `--num_batches`:

* `variable_mgr_benchmark` (`python -m variable_mgr.benchmark`):
  `parse_args`;
* one task of a cluster (`python -m variable_mgr.benchmark.distributed`,
  which `--launch_local_cluster` starts): `parse_task_args`.
"""

import argparse
import os
import sys
import textwrap

from absl import flags as absl_flags

from variable_mgr.benchmark.flags import allreduce_checks
from variable_mgr.benchmark.flags import input_checks
from variable_mgr.benchmark.flags import lr_schedule
from variable_mgr.benchmark.flags import mode_checks
from variable_mgr.benchmark.flags import output_paths
from variable_mgr.benchmark.flags import rate_checks
from variable_mgr.benchmark.flags import scan
from variable_mgr.benchmark.flags import table
from variable_mgr.benchmark.flags import tf_cnn_refused
from variable_mgr.benchmark.flags import value_types

PROG = 'variable_mgr_benchmark'
UsageError = value_types.UsageError
# The --model choices, read at each parse: a script that registers a model
# adds its name here first (benchmarks/run_network_benchmarks.py).
MODEL_NAMES = table.MODEL_NAMES
STRATEGY_NAMES = table.STRATEGY_NAMES
DATA_NAMES = table.DATA_NAMES
is_synthetic = table.is_synthetic
OPTIMIZERS = table.OPTIMIZERS
OPTION_TOKENS = value_types.OPTION_TOKENS
OPTION_FLAGS = value_types.OPTION_FLAGS
TF_CNN_FLAGS = tf_cnn_refused.TF_CNN_FLAGS
TF_CNN_FLAG_KINDS = tf_cnn_refused.TF_CNN_FLAG_KINDS
TF_CNN_SAME_VALUES = tf_cnn_refused.TF_CNN_SAME_VALUES
MODEL_BATCH_SIZES = rate_checks.MODEL_BATCH_SIZES
IMAGENET_NUM_TRAIN_IMAGES = lr_schedule.IMAGENET_NUM_TRAIN_IMAGES
EXAMPLES_PER_EPOCH = lr_schedule.EXAMPLES_PER_EPOCH
SCALED_RATE_MODELS = lr_schedule.SCALED_RATE_MODELS
parse_bool = value_types.parse_bool
option_set_tokens = value_types.option_set_tokens
parse_piecewise_schedule = lr_schedule.parse_piecewise_schedule
check_output_path = output_paths.check_output_path

DESCRIPTION = (
    'Data-parallel training benchmark for variable_mgr strategies, on '
    'synthetic data by default or on real data (--data_dir, '
    '--data_name=digits), with checkpoints (--train_dir) and evaluation '
    '(--eval). Towers are virtual CPU devices with --device=cpu. '
    'Flags follow tf_cnn_benchmarks; a boolean flag takes absl\'s forms: '
    '--flag, --flag=true|false, --noflag. --flagfile=FILE reads flags from '
    'FILE; --helpfull lists tf_cnn_benchmarks\' flags this benchmark refuses '
    'and the aliases too.')
HELP_FLAGS = (('help', 'h', 'show the benchmark\'s flags'),
              ('helpfull', None, 'show every flag, tf_cnn_benchmarks\' '
               'refused ones and the aliases too'))
HELP_NAMES = tuple(name for name, _, _ in HELP_FLAGS)


class TypedFlags(set):
  """The destinations of the flags a command line gives; `names` maps
  each to the flag as typed (an alias, a `--no` form, a single dash),
  `values` to its value as typed (the last one given)."""

  def __init__(self, dests=(), names=None, values=None):
    super(TypedFlags, self).__init__(dests)
    self.names = dict(names or {})
    self.values = dict(values or {})


def _destinations():
  """absl flag name (aliases and the help flags too) -> destination."""
  dests = dict((n, n) for n in HELP_NAMES)
  for d in table.definitions(MODEL_NAMES):
    dests[d.name] = d.dest
    dests.update((alias, d.dest) for alias in d.aliases)
  return dests


def flag_values(full=True):
  """A fresh absl FlagValues of the benchmark's flags; `full`: with
  tf_cnn_benchmarks' refused flags and the aliases (else --help's)."""
  values = absl_flags.FlagValues()
  table.define(values, MODEL_NAMES, aliases=full)
  if full:
    tf_cnn_refused.define(values, _destinations())
  for name, short, help_text in HELP_FLAGS:
    absl_flags.DEFINE_flag(
        absl_flags.Flag(value_types.ValueParser(value_types.parse_bool, 'bool'),
                        value_types.TextSerializer(), name, False, help_text,
                        short_name=short, boolean=True),
        values, module_name=PROG + ': help')
  return values


def format_help(full=False):
  """The text of --help (of --helpfull with `full`)."""
  return 'usage: %s [flags]\n\n%s\n%s\n' % (
      PROG, textwrap.fill(DESCRIPTION, 80), flag_values(full).get_help(
          include_special_flags=False))


def _refusals(values, occurrences, refused):
  """(position, message) of every flag occurrence that cannot run: one of
  tf_cnn_benchmarks' `refused` flags, or a value its type refuses."""
  problems = []
  for o in occurrences:
    if o.name in refused:
      message = tf_cnn_refused.refusal(o.name, o.given, o.text)
      if message:
        problems.append((o.position, message))
      continue
    try:
      values[o.name].parser.parse(o.text)
    except ValueError as e:
      problems.append((o.position, '%s=%s: %s' % (
          o.typed, o.text, str(e).replace('{flag}', o.typed))))
  return problems


def _one_line(problems):
  """One UsageError of every (position, message), in command-line order."""
  problems = [m for _, m in sorted(problems, key=lambda p: p[0])]
  if len(problems) == 1:
    return UsageError(problems[0])
  return UsageError('%d flags refused: %s' % (len(problems), ' '.join(
      '(%d) %s' % (i + 1, p) for i, p in enumerate(problems))))


def _read(argv):
  """(argv with its flagfiles read, its FlagValues, its Occurrences).

  Raises:
    UsageError: every flag that cannot run, in one message.
    SystemExit: after --help or --helpfull printed the help (status 0).
  """
  values = flag_values()
  try:
    args = values.read_flags_from_files(list(argv), force_gnu=False)
  except absl_flags.Error as e:
    raise UsageError('--flagfile: %s; pass a readable file of flags, one '
                     'a line' % str(e).strip().splitlines()[0])
  dests = _destinations()
  refused = set(tf_cnn_refused.unsupported(dests))
  dests.update((name, name) for name in refused)
  occurrences, problems = scan.scan(args, values, dests, refused)
  # absl reads false, f and 0 (any case) as a boolean's false.
  helps = [o.name for o in occurrences if o.name in HELP_NAMES and
           (o.text or '').lower() not in ('false', 'f', '0')]
  if helps:
    sys.stdout.write(format_help(full='helpfull' in helps))
    raise SystemExit(0)
  problems += _refusals(values, occurrences, refused)
  if problems:
    raise _one_line(problems)
  return args, values, occurrences


def _typed(occurrences):
  """The TypedFlags of `occurrences` (the last one of a flag counts)."""
  names, texts = {}, {}
  for o in occurrences:
    if o.name in HELP_NAMES:
      continue
    names[o.dest] = o.typed
    if o.has_value:
      texts[o.dest] = o.text
    else:
      texts.pop(o.dest, None)
  return TypedFlags(names, names, texts)


def parse_flags(argv):
  """The values of the flags of `argv`, without the cross-checks.

  Returns:
    an argparse.Namespace: one attribute a destination (`seed`,
    `learning_rate`, `model`, ...), and `typed_names`, `typed_values` (see
    TypedFlags).

  Raises:
    UsageError: every flag that cannot run, in one message.
    SystemExit: after --help or --helpfull printed the help (status 0).
  """
  args, values, occurrences = _read(argv)
  try:
    values([PROG] + args)
  except (absl_flags.Error, ValueError) as e:  # Refused by _read already.
    raise UsageError(str(e).splitlines()[0])
  namespace = argparse.Namespace()
  for d in table.definitions(MODEL_NAMES):
    value = values[d.name].value
    setattr(namespace, d.dest, list(value) if isinstance(value, list) else
            value)
  typed = _typed(occurrences)
  namespace.typed_names = typed.names
  namespace.typed_values = typed.values
  return namespace


def typed_flags(argv):
  """The destinations of the flags `argv` gives, e.g. {'num_gpus',
  'model'}: a TypedFlags, whose `names` say how each was typed.

  Raises:
    UsageError: every flag that cannot run, in one message.
  """
  return _typed(_read(argv)[2])


class Parser(object):
  """Both commands' flags without the cross-checks, for tests and tools
  that read them as an argparse parser: `parse_args(argv)` is
  `parse_flags`, `format_help()` --help's text."""

  def parse_args(self, argv):
    return parse_flags(argv)

  def format_help(self):
    return format_help()


def build_parser():
  """A Parser (each parse has fresh absl flag values)."""
  return Parser()


def _parse(argv, environ, command):
  argv = list(sys.argv[1:] if argv is None else argv)
  environ = os.environ if environ is None else environ
  args = parse_flags(argv)
  # tf_cnn_benchmarks' counts; --compare runs many configurations: shorter
  # runs by default.
  timed, warmup = (10, 2) if args.compare else (100, 10)
  if args.num_batches is None:
    args.num_batches = timed
  if args.num_warmup_batches is None:
    args.num_warmup_batches = warmup
  typed = TypedFlags(args.typed_names, args.typed_names, args.typed_values)
  input_checks.fill_data_name(args)
  cluster = mode_checks.check(args, typed, environ, command)
  # The run's global batches, once: the schedule's check and --num_epochs
  # both read them.
  batches = rate_checks.global_batches(args, environ)
  rate_checks.check_learning_rate(args, typed, batches)
  allreduce_checks.check(args, typed)
  input_checks.check(args, typed, cluster)
  output_paths.check(args, cluster)
  rate_checks.batches_of_epochs(args, typed, batches)
  mode_checks.check_network_rate(args)
  if args.num_eval_batches is None and args.num_epochs is None and (
      args.eval or args.eval_during_training_every_n_steps):
    # tf_cnn_benchmarks: --num_eval_batches defaults to --num_batches.
    args.num_eval_batches = args.num_batches
  return args


def parse_args(argv=None, environ=None):
  """The flags of `variable_mgr_benchmark`, cross-checked.

  Args:
    argv: the arguments (default: sys.argv[1:]).
    environ: the environment, for TF_CONFIG (default: os.environ).

  Raises:
    UsageError: a bad flag, with a one-line message.
  """
  return _parse(argv, environ, 'benchmark')


def parse_task_args(argv=None, environ=None):
  """The flags of one cluster task (or of its launcher), cross-checked.

  Raises:
    UsageError: a bad flag, with a one-line message.
  """
  return _parse(argv, environ, 'task')
