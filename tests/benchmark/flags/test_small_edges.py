"""Small things a new user meets: a mistyped choice gets a "did you mean",
--help does not say the benchmark runs on synthetic data only, the --eval
header leaves out the training-only lines."""

import pytest

from variable_mgr.benchmark import cli
from variable_mgr.benchmark.flags import command_line
from variable_mgr.benchmark.reports import output
from variable_mgr.benchmark.training import run_config


@pytest.mark.parametrize('typed, near', [
    ('--variable_update=replicatd', '--variable_update=replicated'),
    ('--model=resnt50', '--model=resnet50'),
    ('--optimizer=momentun', '--optimizer=momentum'),
])
def test_a_mistyped_choice_gets_did_you_mean(typed, near, capsys):
  assert cli.main([typed]) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1
  assert err[0].startswith('variable_mgr_benchmark: error: %s: invalid '
                           'choice ' % typed)
  assert 'did you mean %s? pass one of ' % near in err[0]


def test_a_choice_far_from_any_gets_none(capsys):
  assert cli.main(['--optimizer=xyz']) == 2
  err = capsys.readouterr().err
  assert 'did you mean' not in err
  assert "--optimizer=xyz: invalid choice 'xyz'; pass one of sgd" in err


def test_help_says_real_data_too(capsys):
  with pytest.raises(SystemExit):
    command_line.parse_args(['--help'])
  out = ' '.join(capsys.readouterr().out.split())
  assert 'strategies on synthetic data.' not in out
  assert ('on synthetic data by default or on real data (--data_dir, '
          '--data_name=digits), with checkpoints (--train_dir) and '
          'evaluation (--eval)') in out


class _Host(object):
  num_gpus = 2
  raw_devices = ['/cpu:0', '/cpu:1']


def _header(**kwargs):
  config = run_config.BenchmarkConfig(
      model='lenet', data_name='digits', num_gpus=2, device='cpu',
      variable_update='replicated', optimizer='adam', use_fp16=True,
      **kwargs).resolved()
  lines = []
  output.print_header(config, _Host(), lines.append)
  return lines


def test_the_eval_header_drops_the_training_only_lines():
  lines = _header(eval=True, train_dir='/tmp/ckpt')
  assert not [l for l in lines if l.startswith(('Optimizer:',
                                                'Training options'))]
  assert [l for l in lines if l.startswith('Variables:')] == [
      "Variables:   restored from --train_dir=/tmp/ckpt (any strategy's "
      'checkpoint; the evaluation runs forward passes only)']
  assert 'Mode:        evaluation' in lines
  # A training run keeps them.
  training = _header()
  assert [l for l in training if l.startswith('Optimizer:')]
  assert 'Variables:   replicated' in training
