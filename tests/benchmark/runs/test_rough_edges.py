"""The rough edges a new user of the benchmark command met, each reproduced
as the user met it and checked against what the rule says: refused before
anything is built or started, with one line naming the flag as typed, the
rule and the fix; long waits that say what they wait for; figures that say
what they count, or why there is none."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest
import tensorflow as tf

from variable_mgr.benchmark import cli
from variable_mgr.benchmark import distributed
from variable_mgr.benchmark.cluster import liveness
from variable_mgr.benchmark.cluster import ps_task
from variable_mgr.benchmark.cluster import task_spec
from variable_mgr.benchmark.flags import command_line as cli_flags
from variable_mgr.benchmark.reports import output
from variable_mgr.benchmark.runs import compare
from variable_mgr.benchmark.training import run_config

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, os.pardir, 'distributed'))
import clusterlib  # pylint: disable=g-import-not-at-top,wrong-import-position

REPO = clusterlib.REPO
PREFIX = 'variable_mgr_benchmark: error: '
# A tiny run: trivial model, 2 towers of 4 images, 1 + 3 batches.
TINY = ['--model', 'trivial', '--num_gpus', '2', '--batch_size', '4',
        '--num_batches', '3', '--num_warmup_batches', '1']
# A cluster's tiny tasks, the batch counts left to their defaults.
CLUSTER_TINY = ['--model', 'trivial', '--data_name', 'small',
                '--num_gpus', str(clusterlib.TOWERS),
                '--batch_size', str(clusterlib.BATCH), '--display_every',
                '10']
CLUSTER_CHOICES = ('pass --variable_update=parameter_server, '
                   'distributed_replicated, collective_all_reduce or '
                   'distributed_all_reduce')


@pytest.fixture
def launch():
  """As tests/distributed's fixture: every launched cluster is killed and
  reaped when the test ends."""
  yield from clusterlib.launched_clusters()


@pytest.fixture(autouse=True)
def no_tf_config(monkeypatch):
  monkeypatch.delenv('TF_CONFIG', raising=False)


def _refused(capsys, argv, main=cli.main):
  """The one error line of `main(argv)`, which must exit 2 printing
  nothing on stdout (nothing ran, nothing started)."""
  status = main(argv)
  captured = capsys.readouterr()
  assert status == 2, captured
  assert captured.out == '', captured.out
  lines = captured.err.splitlines()
  assert len(lines) == 1, captured.err
  assert lines[0].startswith(PREFIX), lines
  return lines[0][len(PREFIX):]


# -- 1. A cluster launch of a strategy that runs on one machine -------------


@pytest.mark.parametrize('argv, message', [
    (['--variable_update', 'replicated'],
     '--variable_update=replicated runs on one machine only, not as '
     '--launch_local_cluster; ' + CLUSTER_CHOICES),
    (['--variable_update', 'independent'],
     '--variable_update=independent runs on one machine only, not as '
     '--launch_local_cluster; ' + CLUSTER_CHOICES),
    (['--variable_update=parameter_server', '--compare'],
     '--compare with --launch_local_cluster: the sweep runs every '
     'configuration in this process, not as a cluster; drop --compare or '
     '--launch_local_cluster'),
    (['--variable_update=distributed_replicated',
      '--cross_replica_sync=false'],
     '--cross_replica_sync=false with --variable_update=distributed_replicated'
     ': asynchronous updates exist only for parameter_server; drop the flag '
     'or pass --variable_update=parameter_server'),
])
@pytest.mark.parametrize('main', [cli.main, distributed.main])
def test_launch_refuses_what_its_tasks_would(argv, message, main, capsys):
  assert _refused(capsys, ['--launch_local_cluster'] + argv, main) == message


def test_launched_default_strategy_starts_no_task(launch):
  """--launch_local_cluster with a strategy of one machine (replicated,
  the default once): it used to start three tasks and wait 79 s for the
  PS."""
  cluster = launch(['--variable_update', 'replicated'],
                   module='variable_mgr.benchmark')
  assert cluster.finish(clusterlib.PROCESS_START_SECS) == 2, cluster.output
  assert cluster.tasks() == {}
  assert cluster.lines[-1] == (
      PREFIX + '--variable_update=replicated runs on one machine only, not as '
      '--launch_local_cluster; ' + CLUSTER_CHOICES)
  assert time.time() - cluster.started < clusterlib.PROCESS_START_SECS


def test_a_task_of_a_one_machine_strategy_is_refused(capsys):
  message = _refused(capsys, [
      '--job_name', 'ps', '--ps_hosts', '127.0.0.1:2222', '--worker_hosts',
      '127.0.0.1:2223', '--variable_update', 'replicated'], distributed.main)
  assert message == ('--variable_update=replicated runs on one machine only, '
                     'not as a cluster task (--job_name=ps); ' +
                     CLUSTER_CHOICES)


STAGED_REFUSED = (
    "staged_vars=True with variable_update='distributed_replicated': this "
    'option exists only for parameter_server; drop it or use '
    'parameter_server.')


@pytest.mark.parametrize('main', [cli.main, distributed.main])
def test_launch_refuses_what_the_manager_would(main, capsys):
  """A configuration the library refuses is refused by the launcher itself,
  before any task starts (it used to cost a task's failure and the
  launcher's wait for the others)."""
  assert _refused(capsys, [
      '--launch_local_cluster', '--variable_update', 'distributed_replicated',
      '--staged_vars'], main) == STAGED_REFUSED


def test_a_ps_task_refuses_what_its_workers_would(capsys):
  assert _refused(capsys, [
      '--variable_update', 'distributed_replicated', '--staged_vars',
      '--job_name', 'ps', '--ps_hosts', _closed_address(), '--worker_hosts',
      _closed_address()], distributed.main) == STAGED_REFUSED


def test_a_cluster_strategy_on_one_machine_is_refused(capsys):
  assert _refused(capsys, ['--variable_update', 'collective_all_reduce']) == (
      '--variable_update=collective_all_reduce needs a cluster: it runs '
      'across the workers of one; add --launch_local_cluster (a cluster of '
      'processes on this machine), or use replicated on one machine')


# -- 4. --device=gpu without a GPU --------------------------------------------


NO_GPU = ('--device=gpu: TensorFlow finds no GPU on this machine; pass '
          '--device=cpu (the towers are then virtual CPU devices), or install '
          'a GPU build of TensorFlow where there is a GPU')


@pytest.mark.skipif(bool(tf.config.experimental.list_physical_devices('GPU')),
                    reason='this machine has GPUs: --device=gpu would run')
@pytest.mark.parametrize('argv', [
    TINY + ['--device', 'gpu'],
    ['--device=gpu', '--compare', '--compare_towers', '2'],
    ['--device=gpu', '--launch_local_cluster', '--variable_update',
     'parameter_server'],
])
def test_gpu_towers_without_a_gpu(argv, capsys):
  assert _refused(capsys, argv) == NO_GPU


@pytest.mark.skipif(bool(tf.config.experimental.list_physical_devices('GPU')),
                    reason='this machine has GPUs: --device=gpu would run')
def test_a_cluster_worker_refuses_gpu_towers_without_a_gpu(monkeypatch,
                                                            capsys):
  """One worker task started by hand (no launcher to check first) refuses
  before its server starts or its graph is built."""
  from variable_mgr.benchmark.cluster import worker_task  # pylint: disable=g-import-not-at-top

  def built(*unused_args, **unused_kwargs):
    raise AssertionError('the worker started')
  monkeypatch.setattr(worker_task, 'run_worker', built)
  assert _refused(capsys, [
      '--device=gpu', '--job_name', 'worker', '--task_index', '0',
      '--ps_hosts', '127.0.0.1:1', '--worker_hosts', '127.0.0.1:2',
      '--variable_update', 'parameter_server'],
                  main=distributed.main) == NO_GPU


def test_more_gpu_towers_than_gpus():
  with pytest.raises(run_config.DeviceUnavailableError) as e:
    run_config.check_devices('gpu', 4, count=1)
  assert str(e.value) == (
      '--device=gpu --num_gpus=4: TensorFlow finds 1 GPU on this machine, '
      'one a tower; pass --num_gpus=1 or fewer, or --device=cpu')
  run_config.check_devices('gpu', 2, count=2)
  run_config.check_devices('cpu', 8, count=0)


# -- 5. Output paths, checked before the run ----------------------------------


def _paths(tmp_path):
  a_file = tmp_path / 'a_file'
  a_file.write_text('x')
  a_dir = tmp_path / 'a_dir'
  a_dir.mkdir()
  return str(a_file), str(a_dir), str(tmp_path / 'missing')


@pytest.mark.parametrize('flag, kind, extra, message', [
    ('--train_dir', 'file', [],
     '{path} is a file, and --train_dir names a directory; pass a directory '
     'path (created if missing)'),
    ('--summary_dir', 'file', [],
     '{path} is a file, and --summary_dir names a directory; pass a '
     'directory path (created if missing)'),
    ('--compare_dir', 'file', ['--compare'],
     '{path} is a file, and --compare_dir names a directory; pass a '
     'directory path (created if missing)'),
    ('--output', 'dir', [],
     '{path} is a directory, and --output names a file; pass a file path '
     'such as --output={path_value}/results.json'),
    ('--trace_file', 'dir', [],
     '{path} is a directory, and --trace_file names a file; pass a file path '
     'such as --trace_file={path_value}/trace.json'),
    ('--output', 'missing_parent', [],
     '{path}: the directory {parent} does not exist; create it first '
     '(mkdir -p {parent}) or choose a path in an existing directory'),
    ('--train_dir', 'missing_parent', [],
     '{path}: the directory {parent} does not exist; create it first '
     '(mkdir -p {parent}) or choose a path in an existing directory'),
    ('--trace_file', 'unwritable', [],
     '{path}: the directory {parent} is not writable (creating a file in it '
     'fails: {why}); choose a path in a writable directory'),
])
def test_output_paths_are_checked_before_the_run(flag, kind, extra, message,
                                                 tmp_path, capsys):
  a_file, a_dir, missing = _paths(tmp_path)
  path = {'file': a_file, 'dir': a_dir,
          'missing_parent': os.path.join(missing, 'out'),
          # Not writable even for root.
          'unwritable': '/proc/1/trace.json'}[kind]
  got = _refused(capsys, TINY + extra + ['%s=%s' % (flag, path)])
  expected = message.format(path='%s=%s' % (flag, path), path_value=path,
                            parent=os.path.dirname(path), why='\0')
  if '\0' in expected:
    # {why}: the error creating a file there (ENOENT in /proc, root too).
    head, tail = expected.split('\0')
    assert got.startswith(head) and got.endswith(tail), got
    assert len(got) > len(head) + len(tail), got
  else:
    assert got == expected
  # Nothing was written or created.
  assert sorted(os.listdir(str(tmp_path))) == ['a_dir', 'a_file']
  assert os.listdir(a_dir) == []


def test_a_missing_directory_is_created_not_its_parents(tmp_path, capsys):
  train_dir = tmp_path / 'train'
  assert cli.main(TINY + ['--train_dir', str(train_dir)]) == 0
  assert 'Saved %s' % (train_dir / 'model.ckpt-4') in capsys.readouterr().out


# -- 7. Numeric ranges and TF_CONFIG ------------------------------------------


@pytest.mark.parametrize('argv, message', [
    (['--num_batches=0'],
     '--num_batches=0: must be at least 1; pass --num_batches=1 or more'),
    (['--num_gpus', '0'],
     '--num_gpus=0: must be at least 1; pass --num_gpus=1 or more'),
    (['--num_gpus', '-1'],
     '--num_gpus=-1: must be at least 1; pass --num_gpus=1 or more'),
    (['--num_gpus', 'two'],
     '--num_gpus=two: not an integer; pass a whole number of at least 1, '
     'e.g. --num_gpus=1'),
    (['--op_timeout_secs', 'inf', '--launch_local_cluster'],
     '--op_timeout_secs=inf: must be a finite number; pass e.g. '
     '--op_timeout_secs=0.1'),
    (['--num_workers', '3'],
     '--num_workers=3: applies to cluster runs only (--launch_local_cluster, '
     '--job_name or TF_CONFIG); drop --num_workers or add '
     '--launch_local_cluster'),
])
def test_ranges_name_the_flag_as_typed(argv, message, capsys):
  assert _refused(capsys, argv) == message


TF_CONFIG = json.dumps({
    'cluster': {'ps': ['127.0.0.1:2222'], 'worker': ['127.0.0.1:2223']},
    'task': {'type': 'worker', 'index': 'zero'}})


def test_tf_config_index_that_is_not_an_integer(monkeypatch, capsys):
  monkeypatch.setenv('TF_CONFIG', TF_CONFIG)
  assert _refused(capsys, ['--variable_update', 'parameter_server'],
                  distributed.main) == (
                      'TF_CONFIG task {"type": "worker", "index": "zero"}: '
                      "task index 'zero' is not an integer; write it as a "
                      'whole number of 0..0, e.g. "index": 0.')


@pytest.mark.parametrize('argv, message', [
    (['--job_name', 'worker', '--task_index', '0', '--ps_hosts',
      '127.0.0.1:2222', '--worker_hosts', '127.0.0.1:2223'],
     'TF_CONFIG is set and --job_name, --task_index, --ps_hosts, '
     '--worker_hosts given too: a task is described by the flags or by '
     'TF_CONFIG, not both; unset TF_CONFIG or drop --job_name, --task_index, '
     '--ps_hosts, --worker_hosts'),
    (['--task_index=1'],
     'TF_CONFIG is set and --task_index given too: a task is described by '
     'the flags or by TF_CONFIG, not both; unset TF_CONFIG or drop '
     '--task_index'),
    (['--launch_local_cluster'],
     '--launch_local_cluster with TF_CONFIG set: the launcher picks every '
     'task\'s address itself; unset TF_CONFIG, or drop '
     '--launch_local_cluster to run the task TF_CONFIG describes'),
])
@pytest.mark.parametrize('main', [cli.main, distributed.main])
def test_tf_config_and_cluster_flags_are_refused(argv, message, main,
                                                 monkeypatch, capsys):
  monkeypatch.setenv('TF_CONFIG', TF_CONFIG)
  assert _refused(capsys, ['--variable_update', 'parameter_server'] + argv,
                  main) == message


# -- 8. Long waits say what they wait for -------------------------------------


def _closed_address():
  sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
  sock.bind(('127.0.0.1', 0))
  address = '127.0.0.1:%d' % sock.getsockname()[1]
  sock.close()
  return address


def test_waiting_for_a_ps_says_so_every_few_seconds(monkeypatch):
  monkeypatch.setattr(liveness, 'WAIT_REPORT_SECS', 0.5)
  ps = _closed_address()
  spec = task_spec.TaskSpec('worker', 0, [ps], ['127.0.0.1:1'])
  lines = []
  monitor = liveness.Monitor(spec, 1.8, log=lines.append)
  with pytest.raises(liveness.TaskFailedError):
    monitor.wait_for(monitor.others(('ps',)), monitor.started + 1.8)
  assert len(lines) >= 2, lines
  for line in lines:
    assert re.match(
        r'^worker:0: waiting for ps:0 at %s to come up \(\d+s so far; giving '
        r'up after --startup_timeout_secs=1.8\)$' % re.escape(ps), line), line


def test_a_worker_waiting_for_an_unreachable_ps_prints_it():
  """The whole command: a worker whose PS never comes up prints what it
  waits for while it waits (it used to print nothing for up to 300 s)."""
  startup = liveness.WAIT_REPORT_SECS + 1.5
  for _ in range(clusterlib.PORT_ATTEMPTS):
    ps, worker = _closed_address(), _closed_address()
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL='2')
    env.pop('TF_CONFIG', None)
    proc = subprocess.run(
        [sys.executable, '-m', 'variable_mgr.benchmark'] +
        CLUSTER_TINY + [
            '--variable_update', 'parameter_server', '--job_name', 'worker',
            '--ps_hosts', ps, '--worker_hosts', worker,
            '--startup_timeout_secs', str(startup)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        universal_newlines=True,
        timeout=clusterlib.PROCESS_START_SECS + 2 * startup)
    if clusterlib.PORT_TAKEN not in proc.stdout:
      break
  assert proc.returncode == 1, proc.stdout
  waits = [l for l in proc.stdout.splitlines()
           if l.startswith('worker:0: waiting for ps:0 at %s' % ps)]
  assert len(waits) >= 1, proc.stdout
  assert waits[0].endswith('giving up after --startup_timeout_secs=%g)'
                           % startup), waits


# -- 9. --compare of a strategy that needs a cluster --------------------------


def test_compare_of_collective_all_reduce_is_refused(tmp_path, capsys):
  out_dir = tmp_path / 'cmp'
  assert _refused(capsys, [
      '--compare', '--compare_strategies=collective_all_reduce',
      '--compare_dir', str(out_dir)]) == (
          '--compare_strategies=collective_all_reduce: collective_all_reduce '
          'runs across a cluster only, and --compare runs on one machine; '
          'drop it from --compare_strategies (run it with '
          '--launch_local_cluster --variable_update=collective_all_reduce)')
  assert not out_dir.exists()


def test_a_sweep_where_everything_is_refused(tmp_path, capsys):
  """Every configuration refused (staged variables outside
  parameter_server): the title still has the batch, and no empty chart."""
  out_dir = tmp_path / 'cmp'
  assert cli.main(['--compare', '--compare_strategies', 'replicated',
                   '--staged_vars', '--compare_towers', '2', '--model',
                   'trivial', '--compare_dir', str(out_dir)]) == 0
  out = capsys.readouterr().out
  table = (out_dir / compare.TABLE_FILE).read_text().splitlines()
  assert table[0] == '## trivial, batch 32 per tower, 10 timed batches'
  assert 'None' not in '\n'.join(table)
  assert not (out_dir / compare.CHART_FILE).exists()
  assert ('No configuration ran (every one was refused, or none had timed '
          'batches): no chart written') in out


# -- 10. Figures that say what they count -------------------------------------


def _traffic_line(capsys, towers, extra, tmp_path):
  path = str(tmp_path / 'out.json')
  assert cli.main(TINY[:2] + ['--num_gpus', str(towers)] + TINY[4:] + [
      '--variable_update', 'replicated', '--measure_traffic', '--output',
      path] + extra) == 0
  lines = [l for l in capsys.readouterr().out.splitlines()
           if l.startswith('busiest device: ')]
  assert len(lines) == 1, lines
  with open(path) as f:
    return lines[0], json.load(f)['traffic']


def test_traffic_prints_every_devices_bytes_as_it_records_them(tmp_path,
                                                              capsys):
  path = str(tmp_path / 'out.json')
  assert cli.main(TINY[:2] + ['--num_gpus', '2'] + TINY[4:] + [
      '--variable_update', 'replicated', '--measure_traffic', '--output',
      path]) == 0
  out = capsys.readouterr().out.splitlines()
  start = out.index('Traffic of one step (bytes sent / received per device, '
                    'counted from the sends between devices):')
  rows = []
  for line in out[start + 1:]:
    if not line.startswith('  '):
      break
    device, counts = line.strip().split('\t')
    sent, received = counts.split(' / ')
    rows.append((device, int(sent), int(received)))
  with open(path) as f:
    per_device = json.load(f)['traffic']['per_device']
  assert rows == [(d, per_device[d]['sent_bytes'],
                   per_device[d]['received_bytes'])
                  for d in sorted(per_device)]
  # Two towers of one process: both CPU devices send and receive.
  assert len(rows) == 2 and all(r[1] > 0 and r[2] > 0 for r in rows)


def test_one_tower_traffic_says_why_there_is_no_ratio(tmp_path, capsys):
  line, traffic = _traffic_line(capsys, 1, [], tmp_path)
  assert 'nan' not in line
  assert line == (
      'busiest device: %d bytes; ring lower bound 2(k-1)/k x %d = 0; no '
      'ratio: one tower has nothing to all-reduce' % (
          traffic['busiest_bytes'], traffic['gradient_bytes']))
  assert traffic['ratio_to_bound'] is None


def test_collective_traffic_is_not_given_as_a_ratio(tmp_path, capsys):
  line, traffic = _traffic_line(capsys, 2, ['--all_reduce_spec',
                                            'collective'], tmp_path)
  assert line == (
      'busiest device: %d bytes; ring lower bound 2(k-1)/k x %d = %d; no '
      'ratio: the all-reduce moves its data inside collective ops, which the '
      'meter does not count' % (traffic['busiest_bytes'],
                                traffic['gradient_bytes'],
                                traffic['gradient_bytes']))
  assert traffic['ratio_to_bound'] is None
  assert traffic['uncounted'] == 'collective ops'


def test_counted_traffic_keeps_its_ratio(tmp_path, capsys):
  line, traffic = _traffic_line(capsys, 2, [], tmp_path)
  ratio = traffic['busiest_bytes'] / traffic['ring_lower_bound_bytes']
  assert traffic['ratio_to_bound'] == ratio
  assert line.endswith('= %d (%.2fx)' % (traffic['ring_lower_bound_bytes'],
                                         ratio))


class _Host(object):
  num_gpus = 2
  num_workers = 3
  raw_devices = ['/job:worker/task:0/cpu:0', '/job:worker/task:0/cpu:1']


def test_a_cluster_header_gives_the_cluster_batch():
  lines = []
  config = run_config.BenchmarkConfig(model='trivial', batch_size=4,
                                      num_gpus=2).resolved()
  output.print_header(config, _Host(), lines.append)
  assert lines[3:6] == ['Batch size:  24 global',
                        '             8 per worker (3 workers)',
                        '             4 per device']
  one = []
  output.print_header(config, type('Local', (), {
      'num_gpus': 2, 'raw_devices': ['/cpu:0', '/cpu:1']})(), one.append)
  assert one[3:5] == ['Batch size:  8 global', '             4 per device']


def test_cluster_batches_default_as_help_says():
  helped = cli_flags.build_parser().format_help()
  assert 'timed batches (default: 100, as tf_cnn_benchmarks;' in re.sub(
      r'\s+', ' ', helped)
  for parse in (cli_flags.parse_args, cli_flags.parse_task_args):
    args = parse(['--variable_update', 'parameter_server',
                  '--launch_local_cluster'], environ={})
    assert (args.num_batches, args.num_warmup_batches) == (100, 10)


def test_launched_cluster_runs_the_default_batches(launch, tmp_path):
  """Every worker of a launched cluster runs the 100 batches --help gives,
  and prints the cluster's global batch."""
  path = str(tmp_path / 'cluster.json')
  cluster = launch(CLUSTER_TINY + [
      '--variable_update', 'parameter_server', '--num_workers', '2',
      '--startup_timeout_secs', '60', '--output', path],
                   module='variable_mgr.benchmark')
  assert cluster.finish() == 0, cluster.output
  with open(path) as f:
    summary = json.load(f)
  assert [len(w['losses']) for w in summary['workers']] == [100, 100]
  for k in range(2):
    assert '[worker:%d] Batch size:  %d global' % (
        k, 2 * clusterlib.TOWERS * clusterlib.BATCH) in cluster.lines
    assert '[worker:%d] Num batches: 100' % k in cluster.lines


def test_compare_states_the_machine_and_the_spread(tmp_path, capsys):
  out_dir = tmp_path / 'cmp'
  assert cli.main(['--compare', '--compare_strategies', 'independent',
                   '--compare_towers', '2', '--model', 'trivial',
                   '--batch_size', '4', '--num_batches', '3',
                   '--num_warmup_batches', '1', '--compare_dir',
                   str(out_dir)]) == 0
  capsys.readouterr()
  table = (out_dir / compare.TABLE_FILE).read_text().splitlines()
  assert table[2] == compare.machine_line(tf.__version__)
  assert re.match(r'^Machine: \d+ processors? \(.+\); the towers are virtual '
                  r'CPU devices \(--device=cpu\), as many as the tower count, '
                  r'sharing these processors; TensorFlow %s\.$'
                  % re.escape(tf.__version__), table[2]), table[2]
  assert table[-1] == compare.NOTES
  rows = json.loads((out_dir / compare.JSON_FILE).read_text())
  body = [l for l in table if l.startswith('| independent')]
  for row, line in zip(rows, body):
    low, high = row['step_range']
    assert 0 < low <= high
    assert line.split(' | ')[3] == '%.1f-%.1f' % (low, high)
  assert compare.step_range(8, [0.1, 0.2, 0.05]) == (40.0, 160.0)
  assert compare.step_range(8, []) is None


# -- 11. Where a run wrote, how it ended, what a dead task means -------------


def test_a_run_says_where_it_wrote(tmp_path, capsys):
  paths = dict(output=str(tmp_path / 'out.json'),
               trace_file=str(tmp_path / 'trace.json'),
               summary_dir=str(tmp_path / 'summaries'))
  assert cli.main(TINY + ['--%s=%s' % kv for kv in sorted(paths.items())]
                  ) == 0
  out = capsys.readouterr().out.splitlines()
  assert 'Wrote the results (JSON) to %s' % paths['output'] in out
  assert ('Wrote a Chrome trace of the last warm-up step to %s'
          % paths['trace_file']) in out
  assert ('Wrote TensorBoard summaries of the loss (4 steps) to %s'
          % paths['summary_dir']) in out
  for path in paths.values():
    assert os.path.exists(path)


def test_sigterm_is_reported_as_terminated():
  env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL='2',
             PYTHONUNBUFFERED='1')
  env.pop('TF_CONFIG', None)
  proc = subprocess.Popen(
      [sys.executable, '-m', 'variable_mgr.benchmark'] + TINY[:-4] + [
          '--num_batches', '100000', '--num_warmup_batches', '0'],
      cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
      stderr=subprocess.PIPE, universal_newlines=True)
  try:
    for line in proc.stdout:
      if line.startswith('Step\tImg/sec'):
        break
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
  finally:
    if proc.poll() is None:
      proc.kill()
      proc.wait()
  assert proc.returncode == 143, err
  assert err.splitlines()[-1] == (
      PREFIX + 'terminated (SIGTERM): the run stopped before its end; '
      'nothing was saved: no --train_dir (pass --train_dir=DIR to keep a '
      'checkpoint of the step an interrupted run reached)'), err


def test_dead_task_message_reads_well():
  spec = task_spec.TaskSpec('ps', 0, ['127.0.0.1:2222'], ['127.0.0.1:2223'])
  monitor = liveness.Monitor(spec, 10.0)
  dead = [('worker:0', '127.0.0.1:2223', 'stopped answering')]
  try:
    liveness.set_train_dir(None)
    error = monitor.failure(dead, 'it never said it finished')
    assert str(error) == (
        'dead task: worker:0 at 127.0.0.1:2223 (stopped answering); it never '
        'said it finished. Every task of a cluster is needed: restart the '
        'cluster.')
    assert ps_task.stopping_line('ps:0', 21, error) == (
        'ps:0: stopping in 21s: dead task: worker:0 at 127.0.0.1:2223 '
        '(stopped answering); it never said it finished. Every task of a '
        'cluster is needed: restart the cluster.')
    liveness.set_train_dir('/runs/a')
    assert str(monitor.failure(dead, 'it never said it finished.')) == (
        'dead task: worker:0 at 127.0.0.1:2223 (stopped answering); it never '
        'said it finished. Every task of a cluster is needed: restart the '
        'cluster: a rerun with the same --train_dir=/runs/a resumes from its '
        'last checkpoint.')
  finally:
    liveness.set_train_dir(None)


@pytest.mark.parametrize('argv, typed', [
    (['--network_rate', '200mbit'], '--network_rate=200mbit'),
    (['--network_rate=1gbit', '--variable_update=parameter_server',
      '--job_name=worker', '--ps_hosts=127.0.0.1:1',
      '--worker_hosts=127.0.0.1:2'], '--network_rate=1gbit'),
])
def test_a_network_rate_without_the_launcher_is_refused(argv, typed, capsys):
  assert _refused(capsys, argv) == (
      '%s without --launch_local_cluster: the namespace network is made by '
      'the launcher of a cluster on this machine; add --launch_local_cluster '
      'or drop --network_rate' % typed)


def test_a_worker_waiting_for_the_chief_says_so_every_few_seconds(
    monkeypatch):
  """worker:1 waits for the chief's token (the chief answers but has not
  initialised): it says so every WAIT_REPORT_SECS, then gives up at
  --startup_timeout_secs naming the chief."""
  from variable_mgr.benchmark.cluster import worker_task  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(liveness, 'WAIT_REPORT_SECS', 0.3)
  compat = tf.compat.v1

  class Session(object):

    def run(self, fetches, options=None):
      del fetches, options
      time.sleep(0.05)
      raise compat.errors.DeadlineExceededError(None, None, 'no token yet')

  class Call(object):
    sess = Session()
    tf = compat

  spec = task_spec.TaskSpec('worker', 1, ['127.0.0.1:1'],
                            ['127.0.0.1:2', '127.0.0.1:3'])
  monitor = liveness.Monitor(spec, 1.2, log=lambda line: None)
  monkeypatch.setattr(monitor, 'dead', lambda tasks: [])
  options = type('Options', (), {'startup_timeout_secs': 1.2})()
  graph = type('Graph', (), {'ready_dequeue': None})()
  lines = []
  with pytest.raises(liveness.TaskFailedError,
                     match=r'the chief \(worker:0\) did not initialise'):
    worker_task._wait_for_chief(Call(), graph, monitor, options, lines.append)  # pylint: disable=protected-access
  waits = lines[1:]
  assert lines[0] == 'Waiting for the chief to initialise the variables'
  assert len(waits) >= 2, lines
  for line in waits:
    assert re.match(
        r'^worker:1: waiting for the chief \(worker:0\) to initialise the '
        r'variables \(\d+s so far; giving up after '
        r'--startup_timeout_secs=1.2\)$', line), line


def test_a_chief_with_a_dangling_checkpoint_starts_nothing(tmp_path):
  """The chief refuses a `checkpoint` file that points at missing files,
  naming it, before its server starts or it waits for anyone."""
  train_dir = tmp_path / 'train'
  train_dir.mkdir()
  (train_dir / 'checkpoint').write_text(
      'model_checkpoint_path: "model.ckpt-5"\n'
      'all_model_checkpoint_paths: "model.ckpt-5"\n')
  ps, worker = _closed_address(), _closed_address()
  env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL='2')
  env.pop('TF_CONFIG', None)
  proc = subprocess.run(
      [sys.executable, '-m', 'variable_mgr.benchmark'] + CLUSTER_TINY + [
          '--variable_update', 'parameter_server', '--job_name', 'worker',
          '--task_index', '0', '--ps_hosts', ps, '--worker_hosts', worker,
          '--train_dir', str(train_dir)],
      cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
      universal_newlines=True, timeout=clusterlib.PROCESS_START_SECS + 60)
  assert proc.returncode == 2, proc.stdout
  errors = [l for l in proc.stdout.splitlines() if l.startswith(PREFIX)]
  assert len(errors) == 1, proc.stdout
  assert str(train_dir / 'checkpoint') in errors[0], errors[0]
  assert 'model.ckpt-5' in errors[0], errors[0]
  assert 'waiting for' not in proc.stdout, proc.stdout
