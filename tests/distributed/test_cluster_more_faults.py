"""Cluster paths the other cluster tests leave out: README's own cluster
command with --save_model_steps, the chief dying (under
collective_all_reduce), the launcher dying (under distributed_replicated),
the startup timeouts, and the launcher's refusal inside a task.

Every wait is bounded by the cluster's own deadlines (clusterlib.Deadlines);
a task started alone gets its port again when another process took it.
"""

import os
import re
import signal
import socket
import subprocess
import sys
import time

from concurrent import futures

import grpc
import pytest
import tensorflow as _tf

import clusterlib
from variable_mgr.benchmark.cluster import liveness
from variable_mgr.benchmark.runs import in_process

tf = _tf.compat.v1

OP_TIMEOUT = 5
STARTUP_TIMEOUT = 4
# README's cluster command, as it is printed there.
README_COMMAND = ['--num_ps', '1', '--num_workers', '2', '--variable_update',
                  'distributed_replicated', '--model', 'trivial',
                  '--num_gpus', '2']
LAUNCHER_FD_ENV = 'VARIABLE_MGR_LAUNCHER_FD'


def _checkpoints(train_dir):
  """{global step: variables} of every checkpoint in `train_dir`."""
  result = {}
  for name in os.listdir(train_dir):
    if name.startswith('model.ckpt-') and name.endswith('.index'):
      reader = tf.train.load_checkpoint(os.path.join(train_dir, name[:-6]))
      values = dict((n, reader.get_tensor(n))
                    for n in reader.get_variable_to_shape_map())
      step = int(values.pop('global_step'))
      assert name == 'model.ckpt-%d.index' % step, name
      result[step] = values
  return result


def test_readme_cluster_command_saves_every_n_steps(launch, tmp_path):
  """`python -m variable_mgr.benchmark --launch_local_cluster ...` as README
  gives it, with --save_model_steps 2 over 4 steps: the chief writes
  checkpoints at global steps 2 and 4 (besides the initial one), holding
  the NumPy reference's variables after 2 and 4 steps (under
  distributed_replicated only the checkpoint barrier keeps worker 1 from
  applying step 3 to the masters while the chief writes step 2's)."""
  train_dir = str(tmp_path / 'train')
  initial = clusterlib.initial_values(seed=3)
  clusterlib.write_checkpoint(train_dir, initial, 0)
  cluster = launch(README_COMMAND + clusterlib.BASE_FLAGS[4:] + [
      '--num_batches', '4', '--save_model_steps', '2', '--train_dir',
      train_dir, '--op_timeout_secs', '30'], module='variable_mgr.benchmark')
  assert cluster.finish() == 0, cluster.output
  clusterlib.assert_all_gone(cluster)
  assert 'cluster total images/sec' in cluster.output
  saved = [l for l in cluster.lines if l.startswith('[worker:0] Saved ')]
  assert [l.rsplit('-', 1)[1] for l in saved] == ['2', '4', '4'], saved
  assert not any(l.startswith('[worker:1] Saved') for l in cluster.lines)
  checkpoints = _checkpoints(train_dir)
  assert sorted(checkpoints) == [0, 2, 4]
  for step in (2, 4):
    clusterlib.assert_close(checkpoints[step],
                            clusterlib.reference(initial, 2, step))


@pytest.mark.long
def test_parameter_server_spread_saves_every_n_steps(launch, tmp_path):
  """parameter_server with --local_parameter_device gpu (the variables'
  cached copies spread over the tower devices) and --save_model_steps 2:
  the checkpoints of global steps 2 and 4 hold the NumPy reference's
  variables after 2 and 4 steps."""
  train_dir = str(tmp_path / 'train')
  initial = clusterlib.initial_values(seed=4)
  clusterlib.write_checkpoint(train_dir, initial, 0)
  cluster = launch(clusterlib.BASE_FLAGS + [
      '--variable_update', 'parameter_server', '--local_parameter_device',
      'gpu', '--num_ps', '1', '--num_workers', '2', '--num_batches', '4',
      '--save_model_steps', '2', '--train_dir', train_dir,
      '--op_timeout_secs', '30'])
  assert cluster.finish() == 0, cluster.output
  clusterlib.assert_all_gone(cluster)
  checkpoints = _checkpoints(train_dir)
  assert sorted(checkpoints) == [0, 2, 4]
  for step in (2, 4):
    clusterlib.assert_close(checkpoints[step],
                            clusterlib.reference(initial, 2, step))


def _kill_mid_run(cluster, victim):
  """Waits for both workers' step 2, kills `victim`; returns the launcher's
  status, bounded by the cluster's failure deadline."""
  cluster.wait_for_line(r'^\[worker:1\] 2\t', step=2)
  cluster.wait_for_line(r'^\[worker:0\] 2\t', step=2)
  os.kill(cluster.tasks()[victim], signal.SIGKILL)
  return cluster.finish(cluster.deadlines.stop)


@pytest.mark.long
def test_dead_chief_under_collective_all_reduce(launch):
  """The chief dies mid-run: the other worker (blocked in a collective
  with it) and the PS exit with status 1, each naming worker:0."""
  cluster = launch(clusterlib.BASE_FLAGS + [
      '--variable_update', 'collective_all_reduce', '--num_ps', '1',
      '--num_workers', '2', '--num_batches', '100000', '--op_timeout_secs',
      str(OP_TIMEOUT)])
  assert _kill_mid_run(cluster, 'worker:0') == 1, cluster.output
  clusterlib.assert_all_gone(cluster)
  summary = [l for l in cluster.lines if l.startswith('launcher: error:')]
  assert summary == ['launcher: error: worker:0 failed first (killed by '
                     'SIGKILL); ps:0: exit status 1; worker:1: exit status 1'
                    ], cluster.output
  for name in ('ps:0', 'worker:1'):
    errors = [l for l in cluster.lines
              if l.startswith('[%s] variable_mgr_benchmark: error:' % name)]
    assert len(errors) == 1, cluster.output
    # The PS may find worker:1 gone as well, once it noticed and exited.
    assert re.search(r'dead tasks?: worker:0 at 127\.0\.0\.1:\d+ \(%s\)' %
                     re.escape(liveness.GONE), errors[0]), errors[0]


@pytest.mark.long
def test_tasks_exit_when_the_launcher_dies(launch):
  """The launcher is killed (SIGKILL: no cleanup of its own) while a
  distributed_replicated cluster trains: every task sees its pipe close
  and exits at once."""
  cluster = launch(clusterlib.BASE_FLAGS + [
      '--variable_update', 'distributed_replicated', '--num_ps', '1',
      '--num_workers', '2', '--num_batches', '100000', '--op_timeout_secs',
      str(OP_TIMEOUT)])
  cluster.wait_for_line(r'^\[worker:1\] 2\t', step=2)
  pids = cluster.tasks()
  assert sorted(pids) == ['ps:0', 'worker:0', 'worker:1']
  os.kill(cluster.process.pid, signal.SIGKILL)
  # No deadline is involved: end of file on the pipe ends a task.
  clusterlib.assert_all_gone(cluster, within=cluster.deadlines.call)


# -- Tasks started one by one --------------------------------------------------


def _answering_server():
  """A gRPC server of grpcio on 127.0.0.1 that answers a probe as a task's
  server would and does nothing else: it runs no TensorFlow. Returns
  (server, port)."""
  server = grpc.server(futures.ThreadPoolExecutor(max_workers=1),
                       options=[('grpc.so_reuseport', 0)])
  port = server.add_insecure_port('127.0.0.1:0')
  server.start()
  return server, port


def _closed_port():
  """A port of 127.0.0.1 that refuses connections: bound, never listening,
  so no other process can take it while the socket is open."""
  sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
  sock.bind(('127.0.0.1', 0))
  return sock


def _free_port():
  """A port of 127.0.0.1 free when picked (a test may replace this)."""
  return in_process.free_ports(1)[0]


class _Tasks(object):
  """Tasks of `python -m variable_mgr.benchmark` started by hand."""

  def __init__(self):
    self.processes = []

  def start(self, flags, env=None, pass_fds=()):
    environ = dict(os.environ, PYTHONPATH=clusterlib.REPO,
                   TF_CPP_MIN_LOG_LEVEL='2')
    environ.pop('TF_CONFIG', None)
    environ.update(env or {})
    process = subprocess.Popen(
        [sys.executable, '-m', 'variable_mgr.benchmark'] + list(flags),
        cwd=clusterlib.REPO, env=environ, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True, universal_newlines=True, pass_fds=pass_fds)
    self.processes.append(process)
    return process

  def stop(self):
    for process in self.processes:
      try:
        os.killpg(process.pid, signal.SIGKILL)
      except (ProcessLookupError, PermissionError):
        pass
      process.communicate()


@pytest.fixture
def tasks():
  started = _Tasks()
  try:
    yield started
  finally:
    started.stop()


def _cluster_flags(ps_hosts, worker_hosts, job, index):
  return clusterlib.BASE_FLAGS + [
      '--variable_update', 'parameter_server', '--num_batches', '2',
      '--op_timeout_secs', str(OP_TIMEOUT), '--startup_timeout_secs',
      str(STARTUP_TIMEOUT), '--job_name', job, '--task_index', str(index),
      '--ps_hosts', ','.join(ps_hosts), '--worker_hosts',
      ','.join(worker_hosts)]


def _run_until_exit(tasks, make_flags):
  """Starts the task `make_flags(own_port)` gives and waits for its exit,
  within the cluster's deadlines; starts it again on another port when
  its own was taken. Returns (status, output, seconds)."""
  for _ in range(clusterlib.PORT_ATTEMPTS):
    flags = make_flags(_free_port())
    deadlines = clusterlib.Deadlines(flags)
    start = time.time()
    process = tasks.start(flags)
    output, _ = process.communicate(
        timeout=deadlines.until_step(0) + deadlines.stop)
    if clusterlib.PORT_TAKEN not in output:
      return process.returncode, output, time.time() - start
  raise AssertionError('every port was taken:\n' + output)


@pytest.mark.long
def test_worker_gives_up_on_a_ps_that_never_comes_up(tasks):
  """Nothing listens at the PS address: the worker exits with status 1
  after --startup_timeout_secs, naming the PS."""
  ps = _closed_port()
  try:
    ps_host = '127.0.0.1:%d' % ps.getsockname()[1]
    status, output, seconds = _run_until_exit(
        tasks, lambda port: _cluster_flags(
            [ps_host], ['127.0.0.1:%d' % port], 'worker', 0))
  finally:
    ps.close()
  assert status == 1, output
  errors = [l for l in output.splitlines()
            if l.startswith('variable_mgr_benchmark: error:')]
  assert len(errors) == 1, output
  assert ('dead task: ps:0 at %s (never came up within %gs)' %
          (ps_host, STARTUP_TIMEOUT)) in errors[0], errors[0]
  # It waited the whole startup timeout (the clock starts after the build).
  assert seconds >= STARTUP_TIMEOUT, output


@pytest.mark.long
def test_worker_gives_up_on_a_chief_that_never_initialises(tasks):
  """The chief's address answers but no chief runs there: worker 1,
  waiting for the variables, exits with status 1 once
  --startup_timeout_secs have passed, and says so."""
  chief, chief_port = _answering_server()
  try:
    chief_host = '127.0.0.1:%d' % chief_port
    for _ in range(clusterlib.PORT_ATTEMPTS):
      ps_port, worker_port = in_process.free_ports(2)
      ps_hosts = ['127.0.0.1:%d' % ps_port]
      worker_hosts = [chief_host, '127.0.0.1:%d' % worker_port]
      ps = tasks.start(_cluster_flags(ps_hosts, worker_hosts, 'ps', 0))
      status, output, _ = _run_until_exit(
          tasks, lambda port: _cluster_flags(
              ps_hosts, [chief_host, '127.0.0.1:%d' % port], 'worker', 1))
      if ps.poll() is not None:
        ps_output = ps.communicate()[0]
        if clusterlib.PORT_TAKEN in ps_output:
          continue  # The PS's port was taken: both again.
        raise AssertionError('the PS exited first:\n' + ps_output)
      break
  finally:
    chief.stop(None)
  assert status == 1, output
  assert 'Waiting for the chief to initialise the variables' in output
  errors = [l for l in output.splitlines()
            if l.startswith('variable_mgr_benchmark: error:')]
  assert len(errors) == 1, output
  assert ('the chief (worker:0) did not initialise the variables within '
          '--startup_timeout_secs=%g' % STARTUP_TIMEOUT) in errors[0], errors[0]


def test_a_task_exits_when_its_launcher_s_pipe_closes(tasks):
  """A task a launcher started holds the read end of the launcher's pipe:
  a PS that would wait a minute for its workers exits at once when the
  pipe's last write end closes (the launcher is gone), saying so."""
  for _ in range(clusterlib.PORT_ATTEMPTS):
    ps, worker = ['127.0.0.1:%d' % port for port in in_process.free_ports(2)]
    flags = _cluster_flags([ps], [worker], 'ps', 0)
    flags[flags.index('--startup_timeout_secs') + 1] = '60'
    read_fd, write_fd = os.pipe()
    try:
      process = tasks.start(flags, env={LAUNCHER_FD_ENV: str(read_fd)},
                            pass_fds=(read_fd,))
    finally:
      os.close(read_fd)
    try:
      end = time.time() + clusterlib.PROCESS_START_SECS
      while (liveness.connect(ps) != liveness.CONNECTED and
             process.poll() is None):
        assert time.time() < end, 'the PS never listened'
        time.sleep(0.2)
    finally:
      os.close(write_fd)
    output, _ = process.communicate(timeout=20)
    if clusterlib.PORT_TAKEN not in output:
      break  # Else its port was taken before it bound it: again.
  assert process.returncode == 1, output
  assert 'the launcher is gone: exiting' in output


def test_a_controller_whose_workers_never_come_says_so_every_5_s(tasks):
  """distributed_all_reduce's controller waits for its workers' ports: one
  line every WAIT_REPORT_SECS (not one a probe), then, at
  --startup_timeout_secs, an error naming every worker not up."""
  one, two = ['127.0.0.1:%d' % port for port in in_process.free_ports(2)]
  timeout = liveness.WAIT_REPORT_SECS + 2
  status, output, _ = _run_until_exit(
      tasks, lambda port: clusterlib.BASE_FLAGS + [
          '--variable_update', 'distributed_all_reduce', '--all_reduce_spec',
          'xring', '--job_name', 'controller', '--controller_host',
          '127.0.0.1:%d' % port, '--worker_hosts', '%s,%s' % (one, two),
          '--startup_timeout_secs', str(timeout)])
  assert status == 1, output
  waiting = [l for l in output.splitlines()
             if l == 'controller: waiting for worker:0, worker:1']
  assert len(waiting) == 1, output
  assert ('task controller: worker:0 at %s, worker:1 at %s did not come up '
          'within --startup_timeout_secs=%g' % (one, two, timeout)) in output


def test_a_task_whose_port_was_taken_starts_again_on_another(tasks,
                                                          monkeypatch):
  """The port a test picked is taken before its task binds it (here by a
  socket the test holds): the task says so, and `_run_until_exit` starts
  it again on a port picked anew, whose run is the one returned."""
  taken = _closed_port()
  try:
    ports = [taken.getsockname()[1]]
    monkeypatch.setattr(
        sys.modules[__name__], '_free_port',
        lambda: ports.pop(0) if ports else in_process.free_ports(1)[0])
    started = []

    def flags(port):
      started.append(port)
      return clusterlib.BASE_FLAGS + [
          '--variable_update', 'distributed_all_reduce', '--all_reduce_spec',
          'xring', '--job_name', 'controller', '--controller_host',
          '127.0.0.1:%d' % port, '--worker_hosts', ','.join(
              '127.0.0.1:%d' % p for p in in_process.free_ports(2)),
          '--startup_timeout_secs', '1']

    status, output, _ = _run_until_exit(tasks, flags)
  finally:
    taken.close()
  assert len(started) == 2 and started[0] != started[1], started
  assert tasks.processes[0].returncode == 1  # It could not serve.
  assert clusterlib.PORT_TAKEN not in output, output
  assert status == 1 and 'did not come up within' in output, output


def test_launcher_refuses_to_run_inside_a_task(tasks):
  process = tasks.start(README_COMMAND + ['--launch_local_cluster'],
                        env={LAUNCHER_FD_ENV: '3'})
  output, _ = process.communicate(timeout=clusterlib.PROCESS_START_SECS)
  assert process.returncode == 2, output
  errors = [l for l in output.splitlines()
            if l.startswith('variable_mgr_benchmark: error:')]
  assert errors == ['variable_mgr_benchmark: error: --launch_local_cluster '
                    'inside a launched task: a task runs one cluster task '
                    'only.'], output
  assert 'launcher: started' not in output


# -- The helpers themselves ----------------------------------------------------


def test_a_taken_port_starts_the_cluster_again(tmp_path, monkeypatch):
  """clusterlib.Launch starts a launcher that failed on a taken port again
  (here a stand-in launcher fails so once, then succeeds)."""
  fake = tmp_path / 'fake_launcher.py'
  count = tmp_path / 'attempts'
  fake.write_text(
      'import os, sys\n'
      'path = %r\n'
      'n = int(open(path).read()) if os.path.exists(path) else 0\n'
      'open(path, "w").write(str(n + 1))\n'
      'if n == 0:\n'
      '  print("[ps:0] variable_mgr_benchmark: error: UnknownError failed '
      'while running: %s")\n'
      '  sys.exit(1)\n'
      'print("cluster total images/sec: 1.00")\n' % (
          str(count), clusterlib.PORT_TAKEN))
  monkeypatch.setenv('PYTHONPATH', str(tmp_path))
  cluster = clusterlib.Launch(['--num_batches', '1'], module='fake_launcher')
  try:
    assert cluster.finish() == 0, cluster.output
    assert cluster.attempts == 2
    assert count.read_text() == '2'
    assert cluster.lines == ['cluster total images/sec: 1.00']
  finally:
    cluster.cleanup()
