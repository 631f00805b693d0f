"""Values the flags compute or default to, against their closed forms:
a decay schedule needs both its period and its factor, a cluster
description without workers counts one, the cluster's deadlines default
to 60 s a call and 300 s to start, and --help shows every default as it
would be typed."""

from variable_mgr.benchmark.flags import command_line
from variable_mgr.benchmark.flags import lr_schedule
from variable_mgr.benchmark.flags import rate_checks
from variable_mgr.benchmark.flags import table
from variable_mgr.benchmark.training import run_config

DIGITS_TRAIN = 1000


def _steps(**fields):
  config = run_config.BenchmarkConfig(model='trivial', **fields)
  return lr_schedule.learning_rate_steps(config, 100, DIGITS_TRAIN)


def test_a_decay_needs_its_period_and_its_factor():
  # 10 steps an epoch: a decay every 2.5 epochs is every 25 steps.
  assert _steps(num_epochs_per_decay=2.5,
                learning_rate_decay_factor=0.5)['decay_steps'] == 25
  assert _steps(num_epochs_per_decay=2.5,
                learning_rate_decay_factor=0)['decay_steps'] is None
  assert _steps(num_epochs_per_decay=0,
                learning_rate_decay_factor=0.5)['decay_steps'] is None


def test_a_cluster_without_workers_counts_one():
  args = command_line.parse_args(['--model', 'trivial', '--batch_size', '8',
                                  '--num_gpus', '2'], environ={})
  environ = {'TF_CONFIG': '{"cluster": {"ps": ["127.0.0.1:1"]}}'}
  assert rate_checks.global_batches(args, environ) == [16]
  two = {'TF_CONFIG': '{"cluster": {"worker": ["a:1", "b:1"], '
                      '"chief": ["c:1"]}}'}
  assert rate_checks.global_batches(args, two) == [48]


def test_the_cluster_deadlines_default_to_a_minute_and_five():
  args = command_line.parse_args(['--model', 'trivial'], environ={})
  assert (args.op_timeout_secs, args.startup_timeout_secs) == (60.0, 300.0)


def _typed(value):
  """A default as a user types it: true/false, comma-separated lists."""
  if value is None:
    return None
  if value is True or value is False:
    return repr('true' if value else 'false')
  if isinstance(value, (list, tuple)):
    return repr(','.join(str(v) for v in value))
  return repr(str(value))


def test_help_shows_every_default_as_it_is_typed():
  values = command_line.flag_values()
  kinds = set()
  for d in table.definitions():
    assert values[d.name].default_as_str == _typed(d.default), d.name
    kinds.add(type(d.default))
  # Booleans, numbers, text and lists are all among them.
  assert {bool, int, float, str} <= kinds, kinds
  help_text = command_line.format_help(full=True)
  assert "(default: 'true')" in help_text
  assert "(default: '300.0')" in help_text
