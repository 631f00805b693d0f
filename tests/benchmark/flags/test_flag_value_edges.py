"""Values the flags compute or default to, against their closed forms:
a decay schedule needs both its period and its factor, a cluster
description without workers counts one, the cluster's call deadline
defaults to 60 s."""

from variable_mgr.benchmark.flags import command_line
from variable_mgr.benchmark.flags import lr_schedule
from variable_mgr.benchmark.flags import rate_checks
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


def test_the_call_deadline_defaults_to_60_seconds():
  args = command_line.parse_args(['--model', 'trivial'], environ={})
  assert args.op_timeout_secs == 60.0
