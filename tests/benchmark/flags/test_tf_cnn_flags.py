"""tf_cnn_benchmarks' command line: its flag names (the old ones kept as
aliases), absl's boolean forms, its flags this benchmark refuses by name,
and the optimizer and learning-rate flags with their refusals.

Parsing imports no TensorFlow; only the last test runs the command.
"""

import pytest

from variable_mgr.benchmark import cli
from variable_mgr.benchmark.flags import as_typed
from variable_mgr.benchmark.flags import command_line
from variable_mgr.benchmark.flags import rate_checks
from variable_mgr.benchmark.flags import table
from variable_mgr.benchmark.training import run_config


def _parse(argv):
  return command_line.parse_args(argv, environ={})


def _refused(argv):
  with pytest.raises(command_line.UsageError) as e:
    _parse(argv)
  message = str(e.value)
  assert '\n' not in message
  return message


def _parser_only(argv):
  """The parsed flags without the cross-checks (every form of every flag,
  whatever the combination), and how each was typed."""
  args = command_line.parse_flags(argv)
  return args, args.typed_names


# -- Renamed flags: tf_cnn_benchmarks' name and the old one ----------------


@pytest.mark.parametrize('name', ['--tf_random_seed', '--seed'])
def test_the_seed_under_both_names(name):
  args = _parse(['%s=7' % name])
  assert args.seed == 7
  assert _parse([name, '8']).seed == 8
  assert command_line.typed_flags(['%s=7' % name]) == {'seed'}
  assert command_line.typed_flags(['%s=7' % name]).names == {'seed': name}
  assert run_config.from_args(args).seed == 7
  assert _refused(['%s=x' % name]) == (
      '%s=x: not an integer; pass a whole number, e.g. %s=1234' % (name,
                                                                   name))


@pytest.mark.parametrize('name', ['--init_learning_rate', '--learning_rate'])
def test_the_initial_rate_under_both_names(name):
  args = _parse(['%s=0.25' % name])
  assert args.learning_rate == 0.25
  assert run_config.from_args(args).learning_rate == 0.25
  assert _refused([name, '-1']).startswith('%s=-1: must be positive' % name)
  # A cross-check names the flag as typed, with the value as typed.
  message = _refused([name, '.5', '--piecewise_learning_rate_schedule',
                      '0.1;1;0.01'])
  assert message == (
      '--piecewise_learning_rate_schedule=0.1;1;0.01 with %s=.5: the '
      'schedule gives every rate (its first is the initial one), and '
      'tf_cnn_benchmarks takes no other rate flag beside it; drop %s' %
      (name, name))


def test_defaults_name_tf_cnn_benchmarks_flags():
  args = _parse([])
  assert args.seed == 1234 and args.learning_rate is None
  assert as_typed.value(args, 'seed') == '--tf_random_seed=1234'
  help_text = ' '.join(command_line.build_parser().format_help().split())
  assert '--tf_random_seed' in help_text and '(also --seed)' in help_text
  assert '(also --learning_rate)' in help_text
  assert ("a boolean flag takes absl's forms: --flag, --flag=true|false, "
          '--noflag') in help_text
  # The cluster task's command reads the same flags.
  with pytest.raises(command_line.UsageError, match='^--xla_compile: a '
                     'tf_cnn_benchmarks flag'):
    command_line.parse_task_args(['--xla_compile'], environ={})
  assert command_line.parse_task_args(
      ['--tf_random_seed=3', '--nostaged_vars', '--job_name=worker',
       '--ps_hosts=a:1', '--worker_hosts=b:2',
       '--variable_update=parameter_server'], environ={}).seed == 3


# -- absl booleans ----------------------------------------------------------


def _boolean_flags():
  return sorted(d.dest for d in table.definitions() if d.boolean)


def test_the_boolean_flags():
  assert _boolean_flags() == sorted([
      'compact_gradient_transfer', 'compare', 'cross_replica_sync',
      'distortions', 'eval', 'forward_only', 'fp16_enable_auto_loss_scale',
      'hierarchical_copy', 'launch_local_cluster', 'measure_traffic',
      'print_training_accuracy',
      'staged_vars', 'use_fp16', 'use_nccl', 'use_resource_vars'])


@pytest.mark.parametrize('dest', _boolean_flags())
def test_every_boolean_takes_every_absl_form(dest):
  for argv, value in (
      (['--' + dest], True), (['--no' + dest], False),
      (['--%s=true' % dest], True), (['--%s=True' % dest], True),
      (['--%s=1' % dest], True), (['--%s=false' % dest], False),
      (['--%s=False' % dest], False), (['--%s=0' % dest], False),
      (['--' + dest, '--no' + dest], False),
      (['--no' + dest, '--' + dest], True)):
    args, names = _parser_only(argv)
    assert getattr(args, dest) is value, argv
    typed = [a for a in argv if a.startswith('--')][-1].split('=')[0]
    assert names[dest] == typed, argv
  with pytest.raises(command_line.UsageError, match='^--no%s=1: the --no form of a '
                     'boolean takes no value; pass --no%s or --%s=1$' % (
                         dest, dest, dest)):
    _parser_only(['--no%s=1' % dest])
  with pytest.raises(command_line.UsageError, match='^--%s false: a boolean takes '
                     'its value after =; pass --%s=false' % (dest, dest)):
    _parser_only(['--' + dest, 'false'])
  with pytest.raises(command_line.UsageError, match='^--%s=maybe: expected true or '
                     'false; pass --%s=true or --%s=false$' % (dest, dest,
                                                                dest)):
    _parser_only(['--%s=maybe' % dest])


def test_no_forms_on_the_command_line():
  args = _parse(['--nostaged_vars', '--nodistortions', '--noeval',
                 '--nouse_resource_vars'])
  assert (args.staged_vars, args.distortions, args.eval,
          args.use_resource_vars) == (False, False, False, False)
  assert command_line.typed_flags(['--nostaged_vars']).names == {
      'staged_vars': '--nostaged_vars'}
  # A cross-check names the --no form as typed.
  message = _refused(['--nocross_replica_sync'])
  assert message.startswith('--nocross_replica_sync: applies to cluster '
                            'runs only')
  assert message.endswith('drop --nocross_replica_sync or add '
                          '--launch_local_cluster')
  config = run_config.from_args(_parse(['--use_resource_vars',
                                        '--nouse_resource_vars']))
  assert config.use_resource_vars is False


# -- tf_cnn_benchmarks' flags this benchmark does not have ------------------


def _ours():
  return set(n for d in table.definitions()
             for n in (d.name,) + d.aliases)


UNSUPPORTED = sorted(n for n, _, _ in command_line.TF_CNN_FLAGS if n not in _ours())


def test_the_tf_cnn_flag_table():
  names = [n for n, _, _ in command_line.TF_CNN_FLAGS]
  assert len(names) == len(set(names)) == 137
  kinds = dict((n, k) for n, k, _ in command_line.TF_CNN_FLAGS)
  assert set(kinds.values()) == {'bool', 'int', 'float', 'string', 'enum',
                                 'list'}
  # tf_cnn_benchmarks' booleans that this benchmark has are booleans here.
  ours = set(_boolean_flags())
  assert sorted(n for n in ours if n in kinds and kinds[n] != 'bool') == []
  assert sorted(n for n in kinds if kinds[n] == 'bool' and n in _ours() and
                n not in ours) == []
  # A value accepted in place of a flag is one of an unsupported flag.
  assert set(command_line.TF_CNN_SAME_VALUES) <= set(UNSUPPORTED)
  for name, value in command_line.TF_CNN_SAME_VALUES.items():
    assert (kinds[name] == 'bool') == isinstance(value, bool), name
  # The names the issue gives exist.
  for name in ('tf_random_seed', 'init_learning_rate', 'optimizer',
               'piecewise_learning_rate_schedule', 'num_epochs_per_decay',
               'learning_rate_decay_factor', 'num_learning_rate_warmup_epochs',
               'minimum_learning_rate', 'data_dir', 'data_name',
               'data_format', 'distortions', 'eval',
               'eval_during_training_every_n_steps', 'forward_only',
               'print_training_accuracy', 'num_intra_threads',
               'num_inter_threads', 'save_model_secs', 'max_ckpts_to_keep',
               'save_summaries_steps', 'summary_verbosity', 'rmsprop_decay',
               'rmsprop_momentum', 'rmsprop_epsilon', 'adam_beta1',
               'adam_beta2', 'adam_epsilon', 'resnet_base_lr'):
    assert name in _ours() and name in kinds, name


def _other_value(name):
  """A value of tf_cnn flag `name` that this benchmark refuses."""
  kind = command_line.TF_CNN_FLAG_KINDS[name]
  same = command_line.TF_CNN_SAME_VALUES.get(name)
  return {'bool': 'false' if same is True else 'true', 'int': '3',
          'float': '0.5', 'list': '1,2'}.get(kind, 'other')


@pytest.mark.parametrize('name', UNSUPPORTED)
def test_every_unsupported_tf_cnn_flag_is_refused_by_name(name):
  value = _other_value(name)
  kind = command_line.TF_CNN_FLAG_KINDS[name]
  forms = [('--%s=%s' % (name, value), '--%s=%s' % (name, value))]
  if kind == 'bool':
    forms.append((['--' + name] if value == 'true' else ['--no' + name],
                  '--' + name if value == 'true' else '--no' + name))
  else:
    forms.append((['--' + name, value], '--%s=%s' % (name, value)))
  for argv, given in forms:
    argv = [argv] if isinstance(argv, str) else argv
    message = _refused(['--model', 'trivial'] + argv)
    assert message.startswith(
        '%s: a tf_cnn_benchmarks flag this benchmark does not support' %
        given), message
    assert message.endswith('; drop it')


def test_a_tf_cnn_flag_with_what_this_benchmark_does_is_accepted():
  args = _parse(['--noxla', '--xla_compile=false', '--use_chrome_trace_format',
                 '--server_protocol', 'grpc', '--batch_group_size=1',
                 '--loss_type_to_report=total_loss', '--nohierarchical_copy',
                 '--model', 'trivial'])
  assert args.model == 'trivial'
  assert _refused(['--xla']) == (
      '--xla: a tf_cnn_benchmarks flag this benchmark does not support (it '
      'always runs as --noxla); drop it')
  assert _refused(['--xla_compile=true']).startswith('--xla_compile=true: ')
  assert _refused(['--server_protocol', 'grpc+verbs']) == (
      '--server_protocol=grpc+verbs: a tf_cnn_benchmarks flag this benchmark '
      'does not support (it always runs as --server_protocol=grpc); drop it')
  assert _refused(['--nouse_chrome_trace_format']).startswith(
      '--nouse_chrome_trace_format: ')
  assert _refused(['--batch_group_size=2']).startswith('--batch_group_size=2')
  assert _refused(['--noxla=1']).startswith('--noxla=1: the --no form')


def test_a_tf_cnn_flag_is_not_taken_for_an_abbreviation_of_another():
  # argparse read a flag that begins one of ours as its abbreviation
  # (--num_epochs for --num_epochs_per_decay, before --num_epochs existed);
  # absl takes no abbreviation: every tf_cnn_benchmarks flag the parser
  # lacks is refused by its own name.
  missing = [name for name, kind, _ in command_line.TF_CNN_FLAGS
             if name not in _ours() and kind != 'bool']
  assert len(missing) > 40
  for name in missing:
    assert _refused(['--%s=7' % name]).startswith(
        '--%s=7: a tf_cnn_benchmarks flag' % name), name
  assert _refused(['--eval_batch_size', '8']).startswith(
      '--eval_batch_size=8: a tf_cnn_benchmarks flag')
  # An abbreviation of one of ours is unknown, and the message names ours.
  assert _refused(['--tf_random=5']) == (
      '--tf_random=5: not a flag of this benchmark, nor of tf_cnn_benchmarks; '
      'did you mean --tf_random_seed? (--help lists the flags)')


@pytest.mark.parametrize('argv, global_batch, examples', [
    (['--data_name=digits', '--num_gpus=2', '--batch_size=32',
      '--num_epochs=2'], 64, 1497),
    (['--num_gpus=1', '--batch_size=100', '--num_epochs=0.5'], 100,
     command_line.IMAGENET_NUM_TRAIN_IMAGES),
    (['--data_name=digits', '--num_gpus=1', '--batch_size=32',
      '--num_epochs=1', '--launch_local_cluster', '--num_workers=2',
      '--variable_update=parameter_server'], 64, 1497),
])
def test_num_epochs_is_timed_batches_as_tf_cnn_counts_them(
    argv, global_batch, examples):
  parse = (command_line.parse_task_args if '--launch_local_cluster' in argv
           else command_line.parse_args)
  args = parse(argv, environ={})
  epochs = float([a for a in argv if a.startswith('--num_epochs=')][0]
                 .split('=')[1])
  # tf_cnn_benchmarks: (epochs x examples + batch - 1) // batch.
  assert args.num_batches == int(epochs * examples + global_batch - 1) // (
      global_batch)
  assert args.num_batches * global_batch >= epochs * examples
  assert (args.num_batches - 1) * global_batch < epochs * examples


def test_num_epochs_refusals():
  assert _refused(['--num_epochs=2', '--num_batches=3']) == (
      '--num_epochs=2 with --num_batches=3: at most one of them says how '
      'long to train (as in tf_cnn_benchmarks); drop one')
  assert _refused(['--num_epochs=1', '--compare']).startswith(
      '--num_epochs=1 with --compare: ')
  assert _refused(['--num_epochs=0']).startswith('--num_epochs=0: must be')


def test_absl_single_dash_and_device_names():
  args = _parse(['-model=trivial', '-num_gpus', '2', '-nostaged_vars',
                 '--device=CPU', '--local_parameter_device=CPU'])
  assert (args.model, args.num_gpus, args.staged_vars, args.device,
          args.local_parameter_device) == ('trivial', 2, False, 'cpu', 'cpu')
  assert args.typed_names['model'] == '-model'
  assert args.typed_names['staged_vars'] == '-nostaged_vars'
  assert _refused(['-xla']) == (
      '-xla: a tf_cnn_benchmarks flag this benchmark does not support (it '
      'always runs as --noxla); drop it')
  # Named as typed, the fix too.
  assert _refused(['-num_gpus=0']) == (
      '-num_gpus=0: must be at least 1; pass -num_gpus=1 or more')
  assert _refused(['-optimiser=adam']).startswith(
      '-optimiser=adam: not a flag of this benchmark')
  assert _refused(['--device=tpu']) == (
      "--device=tpu: invalid choice 'tpu'; pass one of cpu, gpu (e.g. "
      "--device=cpu)")
  # absl: a flag that is not a boolean takes the next token as its value.
  assert _refused(['--tf_random_seed', '-x']) == (
      '--tf_random_seed=-x: not an integer; pass a whole number, e.g. '
      '--tf_random_seed=1234')
  assert _parse(['--tf_random_seed', '-3']).seed == -3


def test_unknown_flags_are_refused_clearly():
  assert _refused(['--no_such_flag=1']) == (
      '--no_such_flag=1: not a flag of this benchmark, nor of '
      'tf_cnn_benchmarks; --help lists the flags')
  assert _refused(['--optimiser=adam']) == (
      '--optimiser=adam: not a flag of this benchmark, nor of '
      'tf_cnn_benchmarks; did you mean --optimizer? (--help lists the flags)')


# -- Optimizers ---------------------------------------------------------------


@pytest.mark.parametrize('optimizer', ['sgd', 'momentum', 'rmsprop', 'adam'])
def test_optimizer_choices(optimizer):
  assert _parse(['--optimizer', optimizer]).optimizer == optimizer


def test_optimizer_defaults_are_tf_cnn_benchmarks():
  args = _parse([])
  assert (args.optimizer, args.momentum, args.rmsprop_decay,
          args.rmsprop_momentum, args.rmsprop_epsilon, args.adam_beta1,
          args.adam_beta2, args.adam_epsilon) == (
              'sgd', 0.9, 0.9, 0.9, 1.0, 0.9, 0.999, 1e-8)
  defaults = dict((n, d) for n, _, d in command_line.TF_CNN_FLAGS)
  for name in ('momentum', 'rmsprop_decay', 'rmsprop_momentum',
               'rmsprop_epsilon', 'adam_beta1', 'adam_beta2', 'adam_epsilon',
               'num_epochs_per_decay', 'learning_rate_decay_factor',
               'num_learning_rate_warmup_epochs', 'minimum_learning_rate',
               'resnet_base_lr', 'piecewise_learning_rate_schedule',
               'optimizer'):
    assert getattr(args, name) == defaults[name], name
    assert run_config.CONFIG_FIELDS[name] == defaults[name], name
  config = run_config.from_args(_parse(
      ['--optimizer=adam', '--adam_beta1=0.5', '--adam_beta2=0.75',
       '--adam_epsilon=0.01']))
  assert (config.adam_beta1, config.adam_beta2, config.adam_epsilon) == (
      0.5, 0.75, 0.01)
  config = run_config.from_args(_parse(
      ['--optimizer=rmsprop', '--rmsprop_decay=0.5', '--rmsprop_momentum=0',
       '--rmsprop_epsilon=0.1']))
  assert (config.rmsprop_decay, config.rmsprop_momentum,
          config.rmsprop_epsilon) == (0.5, 0.0, 0.1)


@pytest.mark.parametrize('argv,optimizer', [
    (['--momentum=0.5'], 'sgd'),
    (['--optimizer=adam', '--momentum', '0.5'], 'adam'),
    (['--rmsprop_decay=0.5'], 'sgd'),
    (['--optimizer=momentum', '--rmsprop_momentum=0.5'], 'momentum'),
    (['--rmsprop_epsilon=0.5', '--optimizer=adam'], 'adam'),
    (['--optimizer=rmsprop', '--adam_beta1=0.5'], 'rmsprop'),
    (['--adam_beta2=0.5'], 'sgd'),
    (['--adam_epsilon=0.5'], 'sgd'),
])
def test_an_optimizer_flag_with_another_optimizer_is_refused(argv, optimizer):
  flag = [a for a in argv if 'optimizer' not in a][0].split('=')[0]
  needs = 'momentum' if flag == '--momentum' else flag[2:].split('_')[0]
  message = _refused(argv)
  expected = (' with --optimizer=%s: %s is read by --optimizer=%s only; '
              'pass --optimizer=%s or drop %s' % (optimizer, flag, needs,
                                                   needs, flag))
  assert expected in message, message
  assert message.startswith(flag + '=')


@pytest.mark.parametrize('flag,value,rule', [
    ('--rmsprop_decay', '1', 'must be at least 0 and below 1'),
    ('--rmsprop_decay', '-0.1', 'must be at least 0 and below 1'),
    ('--adam_beta1', '1.5', 'must be at least 0 and below 1'),
    ('--adam_beta2', '1', 'must be at least 0 and below 1'),
    ('--rmsprop_momentum', '-1', 'must be 0 or more'),
    ('--rmsprop_epsilon', '0', 'must be positive'),
    ('--adam_epsilon', '-1e-8', 'must be positive'),
    ('--adam_epsilon', 'nan', 'must be a finite number'),
    ('--optimizer', 'adagrad', 'invalid choice'),
])
def test_optimizer_values_are_refused_as_typed(flag, value, rule):
  message = _refused(['%s=%s' % (flag, value)])
  assert rule in message and value in message and flag in message


# -- Learning rates -----------------------------------------------------------


def test_learning_rate_flags_parse():
  args = _parse(['--init_learning_rate=0.4', '--num_epochs_per_decay=2',
                 '--learning_rate_decay_factor=0.5',
                 '--minimum_learning_rate=0.01',
                 '--num_learning_rate_warmup_epochs=1'])
  config = run_config.from_args(args)
  assert (config.learning_rate, config.num_epochs_per_decay,
          config.learning_rate_decay_factor, config.minimum_learning_rate,
          config.num_learning_rate_warmup_epochs) == (0.4, 2, 0.5, 0.01, 1)
  args = _parse(['--piecewise_learning_rate_schedule', '0.3;10;0.2;25;0.1',
                 '--num_learning_rate_warmup_epochs=0.5'])
  assert args.piecewise_learning_rate_schedule == '0.3;10;0.2;25;0.1'
  assert command_line.parse_piecewise_schedule(
      args.piecewise_learning_rate_schedule) == ([0.3, 0.2, 0.1], [10, 25])
  args = _parse(['--model=resnet50', '--resnet_base_lr=0.256'])
  assert run_config.from_args(args).resnet_base_lr == 0.256


@pytest.mark.parametrize('schedule,rule', [
    ('0.1;10', '2 pieces: a schedule is rates and epochs in turn'),
    ('0.1;10;0.01;20', '4 pieces'),
    ('', "the rate '' is not a positive number"),
    ('x;10;0.1', "the rate 'x' is not a positive number"),
    ('0.1;10;0', "the rate '0' is not a positive number"),
    ('0.1;10;-0.1', "the rate '-0.1' is not a positive number"),
    ('0.1;10;inf', "the rate 'inf' is not a positive number"),
    ('0.1;1.5;0.01', "the epoch '1.5' is not a whole number"),
    ('0.1;ten;0.01', "the epoch 'ten' is not a whole number"),
    ('0.1;0;0.01', 'the epoch 0 is not above 0'),
    ('0.1;10;0.01;10;0.001', 'the epoch 10 does not follow 10'),
    ('0.1;10;0.01;5;0.001', 'the epoch 5 does not follow 10'),
])
def test_a_malformed_schedule_is_refused(schedule, rule):
  message = _refused(['--piecewise_learning_rate_schedule', schedule])
  assert message.startswith('--piecewise_learning_rate_schedule=%s: %s' % (
      schedule, rule)), message
  assert message.endswith('(0.3 until epoch 10, 0.2 until 25, then 0.1)')


@pytest.mark.parametrize('argv,message', [
    (['--piecewise_learning_rate_schedule=0.1;1;0.01',
      '--num_epochs_per_decay=2'],
     '--piecewise_learning_rate_schedule=0.1;1;0.01 with '
     '--num_epochs_per_decay=2: the schedule gives every rate'),
    (['--piecewise_learning_rate_schedule=0.1;1;0.01',
      '--minimum_learning_rate=0.001'],
     '--piecewise_learning_rate_schedule=0.1;1;0.01 with '
     '--minimum_learning_rate=0.001: '),
    (['--piecewise_learning_rate_schedule=0.1;1;0.01', '--model=resnet50',
      '--resnet_base_lr=0.1'],
     '--piecewise_learning_rate_schedule=0.1;1;0.01 with '
     '--resnet_base_lr=0.1: '),
    (['--learning_rate_decay_factor=0.5', '--init_learning_rate=0.1'],
     '--learning_rate_decay_factor=0.5 without --num_epochs_per_decay: the '
     'rate decays by --learning_rate_decay_factor every '
     '--num_epochs_per_decay epochs, and needs both; add '
     '--num_epochs_per_decay (e.g. --num_epochs_per_decay=2) or drop '
     '--learning_rate_decay_factor'),
    (['--num_epochs_per_decay=2', '--init_learning_rate=0.1'],
     '--num_epochs_per_decay=2 without --learning_rate_decay_factor: '),
    (['--num_epochs_per_decay=2', '--learning_rate_decay_factor=0.5'],
     '--num_epochs_per_decay=2 and --learning_rate_decay_factor=0.5 without '
     '--init_learning_rate: the decay starts from the initial rate; add '
     '--init_learning_rate (e.g. --init_learning_rate=0.1)'),
    (['--learning_rate_decay_factor=1'],
     '--learning_rate_decay_factor=1: a decay factor is above 0 and below 1 '
     '(0: no decay); pass e.g. --learning_rate_decay_factor=0.94'),
    (['--num_epochs_per_decay=-1'], '--num_epochs_per_decay=-1: must be 0 or '
     'more'),
    (['--init_learning_rate=0.1', '--minimum_learning_rate=0.01'],
     '--minimum_learning_rate=0.01 without a decay: the minimum bounds the '
     'decay of --num_epochs_per_decay and --learning_rate_decay_factor; add '
     'them (and --init_learning_rate) or drop --minimum_learning_rate'),
    (['--learning_rate=0.1', '--minimum_learning_rate=1',
      '--num_epochs_per_decay=1', '--learning_rate_decay_factor=0.5'],
     '--minimum_learning_rate=1 is above --learning_rate=0.1: the rate would '
     'never decay; pass a minimum below the initial rate'),
    (['--num_learning_rate_warmup_epochs=1'],
     '--num_learning_rate_warmup_epochs=1 without --init_learning_rate or '
     '--piecewise_learning_rate_schedule: the warmup rises to the initial '
     'rate of one of them'),
    (['--num_learning_rate_warmup_epochs=-1'],
     '--num_learning_rate_warmup_epochs=-1: must be 0 or more'),
    (['--model=lenet', '--resnet_base_lr=0.1'],
     '--resnet_base_lr=0.1 with --model=lenet: the base rate is that of the '
     'default schedule of resnet50, resnet101, resnet152 only'),
    (['--model=resnet101', '--resnet_base_lr=0.1', '--init_learning_rate=1'],
     '--resnet_base_lr=0.1 with --init_learning_rate=1: the initial rate '
     'replaces the default schedule the base rate scales; drop one of them'),
])
def test_learning_rate_combinations_are_refused(argv, message):
  assert _refused(argv).startswith(message)


def test_zero_means_off_as_in_tf_cnn_benchmarks():
  args = _parse(['--num_epochs_per_decay=0', '--learning_rate_decay_factor=0',
                 '--minimum_learning_rate=0',
                 '--num_learning_rate_warmup_epochs=0'])
  assert args.learning_rate is None


@pytest.mark.parametrize('argv,message', [
    # 1,281,167 / (32 x 4) = 10009.1 steps an epoch (synthetic: ImageNet's).
    (['--num_gpus=4', '--init_learning_rate=0.1',
      '--num_epochs_per_decay=0.00005', '--learning_rate_decay_factor=0.5'],
     '--num_epochs_per_decay=0.00005: at a global batch of 128 an epoch of '
     '1281167 examples is 1.001e+04 steps, so the rate would decay every 0 '
     'steps; pass --num_epochs_per_decay=9.99e-05 or more, or a smaller '
     'batch'),
    (['--num_gpus=4', '--init_learning_rate=0.1',
      '--num_learning_rate_warmup_epochs=1e-5'],
     '--num_learning_rate_warmup_epochs=1e-5: at a global batch of 128 an '
     'epoch of 1281167 examples is 1.001e+04 steps, so the warmup would '
     'last 0 steps'),
    # digits: 1,497 training images, 0.73 steps an epoch at 2048.
    (['--data_name=digits', '--batch_size=512', '--num_gpus=4',
      '--piecewise_learning_rate_schedule=0.1;1;0.01'],
     '--piecewise_learning_rate_schedule=0.1;1;0.01: at a global batch of '
     '2048 an epoch of 1497 examples is 0.731 steps, so the rate would '
     'change at epoch 1 on a step where it changed already (or before the '
     'first)'),
    (['--data_name=digits', '--batch_size=100', '--num_gpus=1',
      '--piecewise_learning_rate_schedule=0.1;1;0.01;2;0.001;3;1e-4'],
     None),
    # The cluster's global batch: 4 workers.
    (['--init_learning_rate=0.1', '--num_learning_rate_warmup_epochs=0.0001',
      '--launch_local_cluster', '--num_workers=4',
      '--variable_update=parameter_server', '--num_gpus=2'],
     '--num_learning_rate_warmup_epochs=0.0001: at a global batch of 256 an '
     'epoch of 1281167 examples is 5005 steps, so the warmup would last 0 '
     'steps'),
    # --compare: the largest tower count.
    (['--compare', '--compare_towers=1,8', '--init_learning_rate=0.1',
      '--num_learning_rate_warmup_epochs=0.0001'],
     '--num_learning_rate_warmup_epochs=0.0001: at a global batch of 256 '),
])
def test_schedule_steps_that_collapse_at_the_global_batch(argv, message):
  if message is None:
    _parse(argv)
  else:
    assert _refused(argv).startswith(message)


def test_the_tables_agree_with_models_and_datasets():
  from variable_mgr.benchmark.data import datasets  # pylint: disable=g-import-not-at-top
  from variable_mgr.benchmark.models import catalog  # pylint: disable=g-import-not-at-top
  assert command_line.MODEL_BATCH_SIZES == dict(
      (m.name, m.default_batch_size) for m in catalog.MODELS.values()
      if m.name in command_line.MODEL_NAMES)
  for (data_name, name), batch in rate_checks.DATA_SET_BATCH_SIZES.items():
    assert catalog.get_model(name, data_name).default_batch_size == batch
  for data_name, models_of_set in catalog.DATA_SET_MODELS.items():
    for name, model in models_of_set.items():
      assert model.default_batch_size == rate_checks.DATA_SET_BATCH_SIZES.get(
          (data_name, name), command_line.MODEL_BATCH_SIZES[name]), (data_name, name)
  assert command_line.EXAMPLES_PER_EPOCH['digits'] == datasets.get_dataset(
      'digits').num_examples('train')
  assert set(command_line.EXAMPLES_PER_EPOCH) == set(command_line.DATA_NAMES) | {None}


# -- A tf_cnn_benchmarks command line -----------------------------------------


def test_a_tf_cnn_benchmarks_command_line_runs(capsys):
  argv = ['--model=trivial', '--batch_size=4', '--num_gpus=2',
          '--variable_update=replicated', '--optimizer=momentum',
          '--nodistortions', '--tf_random_seed=1', '--init_learning_rate=0.1',
          '--num_batches=2', '--num_warmup_batches=0', '--noxla',
          '--momentum=0.9', '--device=cpu', '--data_format=NHWC',
          '--display_every=1']
  assert cli.main(argv) == 0
  out = capsys.readouterr().out.splitlines()
  assert 'Optimizer:   momentum (momentum 0.9); learning rate 0.1' in out, out
  steps = [l for l in out if l.startswith(('1\t', '2\t'))]
  assert len(steps) == 2, out
  assert any(l.startswith('total images/sec: ') for l in out)


def test_the_header_says_the_schedule(capsys):
  # digits: 1,497 / (4 x 2) = 187.1 steps an epoch.
  argv = ['--model=trivial', '--batch_size=4', '--num_gpus=2',
          '--data_name=digits', '--optimizer=adam',
          '--piecewise_learning_rate_schedule=0.01;1;0.001',
          '--num_learning_rate_warmup_epochs=0.5', '--num_batches=1',
          '--num_warmup_batches=0']
  assert cli.main(argv) == 0
  out = capsys.readouterr().out.splitlines()
  assert ('Optimizer:   adam (beta1 0.9, beta2 0.999, epsilon 1e-08); '
          'learning rate 0.01, 0.001 from epoch 1 (step 187), warmup 0.5 '
          'epochs (93 steps)') in out, out


def test_a_refused_flag_ends_the_command_with_status_2(capsys):
  assert cli.main(['--model=trivial', '--xla_compile']) == 2
  err = capsys.readouterr().err
  assert err.strip() == (
      'variable_mgr_benchmark: error: --xla_compile: a tf_cnn_benchmarks '
      'flag this benchmark does not support (it always runs as '
      '--noxla_compile); drop it')


def test_parse_bool_is_absl():
  for text in ('true', 'True', 'TRUE', 't', '1'):
    assert command_line.parse_bool(text) is True
  for text in ('false', 'False', 'f', '0'):
    assert command_line.parse_bool(text) is False
  with pytest.raises(ValueError):
    command_line.parse_bool('2')
