"""The flags parsed by absl: a fresh FlagValues a parse, --flagfile and
--help, every refusal of a command line in one message, output paths
tried by writing, and a parse that imports no TensorFlow."""

import os
import subprocess
import sys

from absl import flags as absl_flags
import pytest

from variable_mgr.benchmark import cli
from variable_mgr.benchmark.flags import as_typed
from variable_mgr.benchmark.flags import command_line
from variable_mgr.benchmark.flags import table

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
TINY = ['--model=trivial', '--num_gpus=2', '--batch_size=4']


def _refused(argv, parse=command_line.parse_args):
  with pytest.raises(command_line.UsageError) as e:
    parse(argv, environ={})
  message = str(e.value)
  assert '\n' not in message
  return message


# -- Every refusal of a command line at once (issue #27 a) -------------------


def test_the_cpu_guide_command_learns_every_refusal_at_once():
  # tf_cnn_benchmarks' CPU performance guide, minus its data flags.
  argv = ['--device=cpu', '--mkl=True', '--kmp_blocktime=0',
          '--nodistortions', '--model=resnet50', '--data_format=NCHW',
          '--batch_size=32', '--num_inter_threads=1', '--num_intra_threads=4']
  assert _refused(argv) == (
      '3 flags refused: '
      '(1) --mkl=True: a tf_cnn_benchmarks flag this benchmark does not '
      'support (it always runs as --nomkl); drop it '
      '(2) --kmp_blocktime=0: a tf_cnn_benchmarks flag this benchmark does '
      'not support; drop it '
      '(3) --data_format=NCHW: the benchmark\'s models are written NHWC, and '
      'tf_cnn_benchmarks refuses NCHW with --device=cpu; pass '
      '--data_format=NHWC (or drop the flag)')
  # Dropping them, the same command parses.
  args = command_line.parse_args([a for a in argv if a.split('=')[0] not in (
      '--mkl', '--kmp_blocktime', '--data_format')], environ={})
  assert (args.model, args.num_intra_threads) == ('resnet50', 4)


def test_unknown_flags_and_bad_values_are_listed_in_order():
  message = _refused(['--optimiser=adam', '--num_gpus=0', '--xla',
                      'stray', '--nostaged_vars=1', '--batch_size'])
  assert message == (
      '6 flags refused: '
      '(1) --optimiser=adam: not a flag of this benchmark, nor of '
      'tf_cnn_benchmarks; did you mean --optimizer? (--help lists the flags) '
      '(2) --num_gpus=0: must be at least 1; pass --num_gpus=1 or more '
      '(3) --xla: a tf_cnn_benchmarks flag this benchmark does not support '
      '(it always runs as --noxla); drop it '
      "(4) 'stray': not a flag, and the command takes no arguments; drop it, "
      'or give a value after its flag (--flag=value) '
      '(5) --nostaged_vars=1: the --no form of a boolean takes no value; '
      'pass --nostaged_vars or --staged_vars=1 '
      '(6) --batch_size: needs a value; pass --batch_size=VALUE')


def test_a_flag_is_not_taken_for_the_value_of_another():
  # absl would read `--num_batches=2` as the path of --train_dir.
  assert _refused(['--train_dir', '--num_batches=2']) == (
      '--train_dir: needs a value; pass --train_dir=VALUE (absl would read '
      '--num_batches=2 as its value)')
  assert _refused(['--seed', '-nostaged_vars']).startswith(
      '--seed: needs a value; ')
  # A negative number, or a word with one dash that is no flag, is a value.
  assert command_line.parse_args(['--seed', '-3'], environ={}).seed == -3
  assert _refused(['--seed', '-x']).startswith('--seed=-x: not an integer')
  # A refused tf_cnn_benchmarks flag is refused by name, value or not.
  for argv in (['--batch_group_size'], ['--batch_group_size', '--noeval']):
    assert _refused(argv) == (
        '--batch_group_size: a tf_cnn_benchmarks flag this benchmark does '
        'not support (it always runs as --batch_group_size=1); drop it')


def test_one_refusal_is_its_own_message():
  assert _refused(['--use_fp16=maybe']) == (
      '--use_fp16=maybe: expected true or false; pass --use_fp16=true or '
      '--use_fp16=false')


def test_the_command_prints_them_on_one_line(capsys):
  assert cli.main(['--mkl=True', '--kmp_blocktime=0']) == 2
  err = capsys.readouterr().err.splitlines()
  assert len(err) == 1 and err[0].startswith(
      'variable_mgr_benchmark: error: 2 flags refused: (1) --mkl=True: ')


# -- Output paths: tried by writing (issue #27 b, c) --------------------------


@pytest.mark.parametrize('flag, path, extra, rule', [
    ('--train_dir', '/proc/foo', [], 'the directory /proc is not writable'),
    ('--summary_dir', '/proc/foo', [], 'the directory /proc is not writable'),
    ('--output', '/proc/foo.json', [], 'the directory /proc is not writable'),
    ('--trace_file', '/proc/foo.json', [],
     'the directory /proc is not writable'),
    ('--compare_dir', '/proc/foo', ['--compare'],
     'the directory /proc is not writable'),
    # An existing directory that takes no file, whatever its bits say.
    ('--train_dir', '/proc/1', [], 'the directory is not writable'),
])
def test_an_output_path_root_cannot_write_is_refused_before_the_run(
    flag, path, extra, rule, capsys):
  # Root's permission bits allow /proc; creating a file there fails.
  argv = TINY + extra + ['--num_batches=2', '%s=%s' % (flag, path)]
  message = _refused(argv)
  assert message.startswith('%s=%s: %s (creating a file in it fails: ' % (
      flag, path, rule)), message
  assert 'choose' in message
  # The command stops there: no step runs, nothing is written.
  assert cli.main(argv) == 2
  captured = capsys.readouterr()
  assert captured.out == '' and len(captured.err.splitlines()) == 1


def test_an_unknown_flag_takes_its_value_with_it_and_no_flag_after_it():
  unknown = ('--frobnicate: not a flag of this benchmark, nor of '
             'tf_cnn_benchmarks; --help lists the flags')
  # Its value is its own (most likely), not an argument of the command.
  assert _refused(['--frobnicate', '3']) == unknown
  # A flag after it is read as a flag, and its own refusal said too.
  message = _refused(['--frobnicate', '--num_gpus=0'])
  assert message.startswith('2 flags refused: (1) %s (2) --num_gpus=0: '
                            % unknown), message


@pytest.mark.parametrize('flag', ['--output', '--trace_file'])
def test_an_existing_file_root_cannot_write_is_refused_as_a_file(flag):
  # /proc/version takes no write, even root's; its directory takes no file
  # either, which is not what the refusal must name.
  message = _refused(TINY + ['%s=/proc/version' % flag])
  assert message.startswith(
      '%s=/proc/version: the file is not writable (' % flag), message
  assert message.endswith('); choose another path or make it writable')


@pytest.mark.parametrize('flag', ['--train_dir', '--summary_dir', '--output',
                                  '--trace_file'])
def test_a_path_under_a_device_is_not_a_directory_to_make(flag):
  message = _refused(['%s=/dev/null/x' % flag])
  assert message == (
      '%s=/dev/null/x: /dev/null is not a directory (a device), so no '
      'directory can be made under it; choose a path in an existing '
      'directory' % flag)
  assert 'mkdir' not in message


def test_a_path_under_a_file_is_not_a_directory_to_make(tmp_path):
  a_file = tmp_path / 'a_file'
  a_file.write_text('x')
  path = str(a_file / 'sub' / 'train')
  assert _refused(['--train_dir=' + path]) == (
      '--train_dir=%s: %s is not a directory (a file), so no directory can '
      'be made under it; choose a path in an existing directory' % (
          path, a_file))


def _open_descriptors():
  return sorted(os.listdir('/proc/self/fd'))


def test_writable_paths_are_left_as_they_were(tmp_path):
  out = tmp_path / 'out.json'
  out.write_text('old')
  before = _open_descriptors()
  args = command_line.parse_args(['--train_dir=%s' % (tmp_path / 'train'),
                           '--output=%s' % out], environ={})
  assert args.train_dir == str(tmp_path / 'train')
  assert sorted(os.listdir(str(tmp_path))) == ['out.json']
  assert out.read_text() == 'old'
  # The files tried were closed, as well as removed.
  assert _open_descriptors() == before


# -- absl: fresh flag values, --flagfile, --help ----------------------------


def test_without_argv_the_command_line_is_read(monkeypatch):
  monkeypatch.setattr(sys, 'argv', ['variable_mgr_benchmark', '--num_gpus=3',
                                    '--nostaged_vars'])
  args = command_line.parse_args(environ={})
  assert (args.num_gpus, args.staged_vars) == (3, False)
  assert sorted(args.typed_names) == ['num_gpus', 'staged_vars']


def test_every_parse_has_fresh_flag_values():
  assert command_line.parse_args(['--num_gpus=2', '--nostaged_vars'],
                          environ={}).num_gpus == 2
  args = command_line.parse_args([], environ={})
  assert (args.num_gpus, args.staged_vars, args.typed_names) == (1, False, {})
  # absl's global flags hold none of the benchmark's.
  assert 'num_gpus' not in absl_flags.FLAGS
  assert 'tf_random_seed' not in absl_flags.FLAGS


def test_a_flagfile_is_read_as_absl_reads_it(tmp_path):
  good = tmp_path / 'good.flags'
  good.write_text('--model=trivial\n# a comment\n--nostaged_vars\n'
                  '--seed=7\n')
  args = command_line.parse_args(['--flagfile=%s' % good, '--num_gpus=2'],
                          environ={})
  assert (args.model, args.staged_vars, args.seed, args.num_gpus) == (
      'trivial', False, 7, 2)
  assert args.typed_names['seed'] == '--seed'
  bad = tmp_path / 'bad.flags'
  bad.write_text('--xla\n--num_gpus=0\n')
  assert _refused(['--flagfile=%s' % bad]).startswith(
      '2 flags refused: (1) --xla: a tf_cnn_benchmarks flag')
  assert _refused(['--flagfile=%s' % (tmp_path / 'missing')]).startswith(
      '--flagfile: ')


def test_help_and_helpfull(capsys):
  with pytest.raises(SystemExit) as e:
    command_line.parse_args(['--help', '--no_such_flag'], environ={})
  assert e.value.code == 0
  out = ' '.join(capsys.readouterr().out.split())
  assert out.startswith('usage: variable_mgr_benchmark [flags]')
  assert '--[no]staged_vars: read variables through staging areas' in out
  assert '--tf_random_seed: graph-level random seed' in out
  assert '--[no]xla' not in out
  with pytest.raises(SystemExit):
    command_line.parse_args(['--helpfull'], environ={})
  out = ' '.join(capsys.readouterr().out.split())
  assert '--[no]xla: refused, except as --noxla' in out
  assert '--kmp_blocktime: refused: not supported by this benchmark' in out
  assert '--seed: Alias for --tf_random_seed.' in out


@pytest.mark.parametrize('argv', [['--nohelp'], ['--help=false'],
                                  ['--help=0'], ['--helpfull=F'],
                                  ['--nohelpfull', '--nohelp']])
def test_help_set_false_prints_nothing_and_parses_the_rest(argv, capsys):
  args = command_line.parse_args(argv + ['--model=lenet'], environ={})
  assert args.model == 'lenet'
  assert capsys.readouterr().out == ''


def test_the_table_names_its_aliases_as_flag_text_does():
  assert as_typed.CANONICAL_NAMES == dict(
      (d.dest, d.name) for d in table.definitions() if d.dest != d.name)
  assert sorted(a for d in table.definitions() for a in d.aliases) == [
      'learning_rate', 'seed']


def test_the_task_command_reports_every_refusal_too():
  assert _refused(['--mkl', '--xla'], command_line.parse_task_args).startswith(
      '2 flags refused: (1) --mkl: ')


# -- Imports: parsing without TensorFlow, one way to the graph ---------------


def _python(code):
  env = dict(os.environ, PYTHONPATH=REPO)
  run = subprocess.run([sys.executable, '-c', code], cwd=REPO, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=120)
  assert run.returncode == 0, run.stderr
  return run.stdout


def test_parsing_imports_no_tensorflow():
  out = _python(
      'import sys\n'
      'from variable_mgr.benchmark.flags import command_line\n'
      'command_line.parse_args(["--num_gpus=2", "--init_learning_rate=0.1", '
      '"--num_epochs_per_decay=1", "--learning_rate_decay_factor=0.5"], '
      'environ={})\n'
      'try:\n'
      '  command_line.parse_args(["--mkl=true"], environ={})\n'
      'except command_line.UsageError:\n'
      '  pass\n'
      'print(sorted(m for m in sys.modules if m.split(".")[0] in '
      '("tensorflow", "tensorflow_core", "numpy")))\n')
  assert out.strip() == '[]'


def test_the_optimizers_read_the_schedule_without_the_flags():
  out = _python(
      'import sys\n'
      'from variable_mgr.benchmark.training import optimizers\n'
      'print("variable_mgr.benchmark.flags.command_line" in sys.modules, '
      '"variable_mgr.benchmark.flags.lr_schedule" in sys.modules)\n')
  assert out.split()[-2:] == ['False', 'True']


# -- Values: --network_rate in tc's units -------------------------------------


@pytest.mark.parametrize('text,bits', [
    ('200mbit', 200 * 10**6), ('1gbit', 10**9), ('500kbit', 500 * 10**3),
    ('1.5Mbit', 1500 * 10**3), ('8000bit', 8000)])
def test_a_link_rate_is_bits_per_second_in_tcs_decimal_units(text, bits):
  # tc(8): 'mbit' is megabits per second, 10^6 bits; 'mibit' would be 2^20.
  from variable_mgr.benchmark.flags import value_types  # pylint: disable=g-import-not-at-top
  assert value_types.link_rate(text) == bits


@pytest.mark.parametrize('text', ['999bit', '0mbit', '-1gbit', '200mb',
                                  'fast'])
def test_a_link_rate_below_1kbit_or_without_a_unit_is_refused(text):
  assert _refused(['--network_rate', text, '--launch_local_cluster']) == (
      '--network_rate=%s: expected a link speed of at least 1kbit; pass e.g. '
      '--network_rate=200mbit, 1gbit or 500kbit' % text)


@pytest.mark.parametrize('dest, typed, expected', [
    ('forward_only', '--noforward_only', '--noforward_only'),
    ('forward_only', '--forward_only', '--forward_only=false'),
    ('forward_only', '-forward_only', '-forward_only=false'),
    ('staged_vars', '--nostaged_vars', '--nostaged_vars'),
    ('staged_vars', '--staged_vars', '--staged_vars=false')])
def test_a_false_boolean_is_named_bare_only_in_its_no_form(dest, typed,
                                                          expected):
  """`--noflag` says false by itself; any other name of a false boolean
  (one that sorts before `no` + the flag, as forward_only does, or after
  it) carries `=false`."""

  class Args(object):
    typed_names = {dest: typed}
  setattr(Args, dest, False)
  assert as_typed.value(Args, dest) == expected
