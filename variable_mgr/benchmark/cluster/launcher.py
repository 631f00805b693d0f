"""`--launch_local_cluster`: a whole ps/worker cluster on this machine.

Starts `--num_ps` PS tasks and `--num_workers` workers (under
distributed_all_reduce: the workers and a controller, see
`controller_task`), each a separate
Python process running `python -m variable_mgr.benchmark.distributed` with
the caller's flags and its own `--job_name/--task_index`, on free ports of
127.0.0.1. Every line a task prints is echoed with the task's name in front
(`[worker:1] ...`). When every task has exited 0, the workers' images/sec
are added up into the cluster's total.

No task outlives the launcher:
* each task runs in a process group of its own (a terminal's Ctrl-C reaches
  only the launcher, which then stops the tasks in order);
* when a task fails, the others get `--op_timeout_secs` plus a margin to
  notice and exit with their own error; whatever still runs after that is
  stopped;
* on exit (normal, error, Ctrl-C or SIGTERM) a `finally` sends SIGTERM to
  every task's group, then SIGKILL to the stragglers, and reaps them;
* each task holds the read end of a pipe whose write end only the launcher
  holds: if the launcher itself is killed (even by SIGKILL), the tasks see
  end of file and exit.

With `--network_rate RATE` every task runs in a network namespace of its
own with its own address (10.77.0.x, port 2222), on a bridge, its link
shaped to RATE bits/s both ways (see `netns`): a way to see on one machine
how a strategy behaves on a network of that speed. The namespaces are
removed on every exit the `finally` sees, and a later run removes those of
a launcher that was killed. It needs Linux and root: elsewhere the
launcher says so and starts nothing.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from variable_mgr.benchmark.cluster import netns
from variable_mgr.benchmark.cluster import task_spec
from variable_mgr.benchmark.reports import output
from variable_mgr.benchmark.runs import exit_status
from variable_mgr.benchmark.runs import in_process
from variable_mgr.benchmark.runs import train_dir_lock

LOOPBACK = in_process.LOOPBACK
# The launcher passes the read end of a pipe: end of file means the
# launcher is gone, and the task exits instead of living on as an orphan.
LAUNCHER_FD_ENV = 'VARIABLE_MGR_LAUNCHER_FD'
# Seconds a task gets between SIGTERM and SIGKILL.
TERMINATE_GRACE_SECS = 5.0
# Margin over --op_timeout_secs for the survivors of a failure to exit.
FAILURE_MARGIN_SECS = 10.0


class Task(object):
  """One started task: its process, name and exit status."""

  def __init__(self, name, process, address):
    self.name = name
    self.process = process
    self.address = address
    self.status = None
    self.exited_at = None
    self.reader = None
    self.was_stopped = False


def stopped(pid):
  """Whether process `pid` is stopped (SIGSTOP, SIGTSTP) rather than
  running or gone."""
  try:
    with open('/proc/%d/stat' % pid) as f:
      return f.read().rsplit(') ', 1)[-1].split()[0] in ('T', 't')
  except (IOError, OSError, IndexError):
    return False


def describe_status(status):
  if status is None:
    return 'still running'
  if status < 0:
    try:
      return 'killed by %s' % signal.Signals(-status).name
    except ValueError:
      return 'killed by signal %d' % -status
  return 'exit status %d' % status


class LocalCluster(object):
  """Starts, watches and stops the tasks of a one-machine cluster.

  Args:
    num_ps, num_workers: task counts, at least 1 each.
    task_argv: flags every task gets (the benchmark's flags).
    output_dir: where workers write their results JSON.
    op_timeout_secs: the tasks' --op_timeout_secs, to bound a failure.
    out: where prefixed lines go (a text stream).
    network: a created `netns.Network` of num_ps + num_workers hosts (PS
      tasks first) to run the tasks in; None: every task on 127.0.0.1.
    task_command: the command of a task before its flags (default: this
      Python's `-m variable_mgr.benchmark.distributed`).
    controller: distributed_all_reduce's cluster: `num_workers` workers
      that serve and a controller (started last, on one more address or
      network host) that runs the one graph and writes the results;
      `num_ps` must be 0.
  """

  def __init__(self, num_ps, num_workers, task_argv, output_dir,
               op_timeout_secs, out=None, network=None, task_command=None,
               controller=False):
    self.controller_host = None
    tasks = num_ps + num_workers + (1 if controller else 0)
    self.out = out or sys.stdout
    self.output_dir = output_dir
    self.op_timeout_secs = op_timeout_secs
    self.network = network
    if network is not None:
      if len(network.hosts) != tasks:
        raise ValueError('a network of %d hosts for %d tasks' % (
            len(network.hosts), tasks))
      addresses = ['%s:%d' % (h.address, netns.PORT) for h in network.hosts]
    else:
      addresses = ['%s:%d' % (LOOPBACK, p)
                   for p in in_process.free_ports(tasks)]
    self.ps_hosts = addresses[:num_ps]
    self.worker_hosts = addresses[num_ps:num_ps + num_workers]
    if controller:
      self.controller_host = addresses[-1]
    self.task_command = list(task_command or [
        sys.executable, '-m', 'variable_mgr.benchmark.distributed'])
    self.task_argv = list(task_argv)
    self.tasks = []
    self._lock = threading.Lock()
    self._pipe = None

  def say(self, line):
    with self._lock:
      self.out.write(line.rstrip('\n') + '\n')
      self.out.flush()

  def worker_output(self, index):
    """The results file of worker `index` (or of 'controller')."""
    return os.path.join(self.output_dir, (
        'worker_%d.json' % index if index != 'controller' else
        'controller.json'))

  def start(self):
    """Starts every task (PS tasks first)."""
    read_fd, write_fd = os.pipe()
    self._pipe = write_fd
    env = dict(os.environ)
    env.pop('TF_CONFIG', None)
    env[LAUNCHER_FD_ENV] = str(read_fd)
    env.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    env['PYTHONUNBUFFERED'] = '1'
    try:
      for name, address, argv, host in self.task_argvs():
        self._start_one(name, address, argv, env, read_fd, host)
    finally:
      os.close(read_fd)

  def task_argvs(self):
    """[(name, address, flags, network host or None)] of every task, in
    the order they start (PS tasks first, a controller last)."""
    if self.controller_host is not None:
      return self._controller_argvs()
    tasks = []
    for job, hosts in (('ps', self.ps_hosts), ('worker', self.worker_hosts)):
      for index, address in enumerate(hosts):
        argv = self.task_argv + [
            '--job_name=%s' % job, '--task_index=%d' % index,
            '--ps_hosts=%s' % ','.join(self.ps_hosts),
            '--worker_hosts=%s' % ','.join(self.worker_hosts)]
        if job == 'worker':
          argv.append('--output=%s' % self.worker_output(index))
        host = None
        if self.network is not None:
          host = self.network.hosts[
              index + (len(self.ps_hosts) if job == 'worker' else 0)]
        tasks.append((task_spec.task_name(job, index), address, argv, host))
    return tasks

  def _controller_argvs(self):
    hosts = self.network.hosts if self.network is not None else None
    common = ['--worker_hosts=%s' % ','.join(self.worker_hosts),
              '--controller_host=%s' % self.controller_host]
    tasks = [(task_spec.task_name('worker', k), address, self.task_argv + [
        '--job_name=worker', '--task_index=%d' % k] + common,
              hosts[k] if hosts else None)
             for k, address in enumerate(self.worker_hosts)]
    tasks.append(('controller', self.controller_host, self.task_argv + [
        '--job_name=controller'] + common + [
            '--output=%s' % self.worker_output('controller')],
                  hosts[-1] if hosts else None))
    return tasks

  def _start_one(self, name, address, argv, env, read_fd, host=None):
    command = self.task_command + argv
    if host is not None:
      # `ip netns exec` execs the command: the pid is the task's.
      command = host.command(command)
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, env=env, pass_fds=(read_fd,),
        start_new_session=True, universal_newlines=True)
    task = Task(name, process, address)
    self.tasks.append(task)
    where = ''
    if host is not None:
      where = ' in namespace %s, link %s of %s' % (
          host.namespace, host.port_name, self.network.switch)
    self.say('launcher: started %s at %s (pid %d)%s' % (name, address,
                                                         process.pid, where))
    task.reader = threading.Thread(target=self._echo, args=(task,),
                                   name='echo-%s' % name)
    task.reader.daemon = True
    task.reader.start()

  def _echo(self, task):
    for line in task.process.stdout:
      self.say('[%s] %s' % (task.name, line))

  def wait(self, poll_secs=0.1):
    """Waits for every task; returns the first failed Task or None.

    After the first failure the others get `op_timeout_secs` plus
    FAILURE_MARGIN_SECS to exit on their own; those still running then are
    stopped.
    """
    first_failure = None
    deadline = None
    while True:
      running = 0
      for task in self.tasks:
        if task.status is not None:
          continue
        status = task.process.poll()
        if status is None:
          running += 1
          continue
        task.status, task.exited_at = status, time.time()
        if status != 0 and first_failure is None:
          first_failure = task
          deadline = time.time() + self.op_timeout_secs + FAILURE_MARGIN_SECS
          self.say('launcher: %s failed first (%s); waiting up to %gs for '
                   'the other tasks to exit' % (
                       task.name, describe_status(status),
                       deadline - time.time()))
          self._say_stopped()
      if not running:
        return first_failure
      if deadline is not None and time.time() > deadline:
        for task in self.tasks:
          if task.process.poll() is None:
            self.say('launcher: %s still runs %gs after %s failed: '
                     'stopping it' % (task.name, deadline -
                                      first_failure.exited_at,
                                      first_failure.name))
        self.stop()
        deadline = None
      time.sleep(poll_secs)

  def _say_stopped(self):
    """Names the tasks that are stopped (SIGSTOP): alive to a TCP probe,
    yet answering no call."""
    for task in self.tasks:
      if task.process.poll() is None and stopped(task.process.pid):
        task.was_stopped = True
        self.say('launcher: %s at %s is stopped (SIGSTOP): its port accepts '
                 'connections but it runs nothing' % (task.name,
                                                      task.address))

  def stop(self):
    """SIGTERM to every live task's group, SIGKILL after a grace; reaps."""
    live = [t for t in self.tasks if t.process.poll() is None]
    for task in live:
      _signal_group(task.process, signal.SIGTERM)
      # A stopped task acts on SIGTERM only once continued.
      _signal_group(task.process, signal.SIGCONT)
    end = time.time() + TERMINATE_GRACE_SECS
    for task in live:
      try:
        task.process.wait(max(0.0, end - time.time()))
      except subprocess.TimeoutExpired:
        _signal_group(task.process, signal.SIGKILL)
    for task in self.tasks:
      # The group as well: nothing a task started may survive it.
      _signal_group(task.process, signal.SIGKILL)
      task.process.wait()
      if task.status is None:
        task.status = task.process.returncode
    for task in self.tasks:
      if task.reader is not None:
        task.reader.join(2.0)
      if task.process.stdout is not None:
        task.process.stdout.close()
    if self._pipe is not None:
      os.close(self._pipe)
      self._pipe = None

  def worker_results(self):
    """The workers' results (the controller's alone: one graph)."""
    results = []
    names = (['controller'] if self.controller_host is not None
             else range(len(self.worker_hosts)))
    for index in names:
      with open(self.worker_output(index)) as f:
        results.append(json.load(f))
    return results


def watch_launcher(environ=None):
  """Exits the process when the launcher that started it is gone."""
  environ = os.environ if environ is None else environ
  fd = environ.get(LAUNCHER_FD_ENV)
  if not fd:
    return

  def watch():
    try:
      while os.read(int(fd), 1):
        pass
    except OSError:
      pass
    sys.stderr.write('the launcher is gone: exiting\n')
    sys.stderr.flush()
    os._exit(exit_status.FAILURE)  # pylint: disable=protected-access

  thread = threading.Thread(target=watch, name='launcher-watch')
  thread.daemon = True
  thread.start()


def _signal_group(process, sig):
  try:
    os.killpg(process.pid, sig)
  except (ProcessLookupError, PermissionError):
    pass


class _Terminated(Exception):
  """SIGTERM reached the launcher."""


def _on_sigterm(signum, frame):
  del signum, frame
  raise _Terminated()


def strip_launch_flag(argv):
  """`argv` without --launch_local_cluster (so a task does not launch) and
  without --network_rate (the launcher's alone)."""
  result = []
  skip = False
  for a in argv:
    if skip:
      skip = False
      continue
    name = a.split('=')[0]
    if name == '--launch_local_cluster':
      continue
    if name == '--network_rate':
      skip = '=' not in a
      continue
    result.append(a)
  return result


def main(args, argv, out=None):
  """Runs the cluster; returns 0 when every task succeeded, 1 if one failed,
  2 for bad flags, 130 on Ctrl-C, 143 on SIGTERM."""
  out = out or sys.stdout
  if os.environ.get(LAUNCHER_FD_ENV):
    return exit_status.fail(
        '--launch_local_cluster inside a launched task: a task runs one '
        'cluster task only.', exit_status.USAGE)
  given = [f for f in task_spec.TASK_FLAGS + ('controller_host',)
           if any(a.split('=')[0] == '--' + f for a in argv)]
  if given:
    return exit_status.fail(
        '--launch_local_cluster picks every task\'s address itself: drop '
        '%s.' % ', '.join('--' + f for f in given), exit_status.USAGE)
  rate = getattr(args, 'network_rate', None)
  if rate is not None:
    try:
      netns.check_supported()
    except netns.NetworkUnavailableError as e:
      return exit_status.fail(e, exit_status.USAGE)
  try:
    # One lock for the cluster's tasks, which write as one run.
    lock = train_dir_lock.acquire_for_task(
        args, True, False, lambda line: out.write('launcher: %s\n' % line))
  except train_dir_lock.TrainDirBusyError as e:
    return exit_status.fail(e, exit_status.USAGE)
  previous = signal.signal(signal.SIGTERM, _on_sigterm)
  output_dir = tempfile.mkdtemp(prefix='variable_mgr_cluster_')
  network = None
  cluster = None
  status = 1
  try:
    controller = args.variable_update == 'distributed_all_reduce'
    if rate is not None:
      # distributed_all_reduce: the workers and a controller, no PS.
      network = netns.Network(args.num_workers + 1 if controller else
                              args.num_ps + args.num_workers, rate)
      network.create()
      out.write('launcher: network: %s\n' % network.describe())
    cluster = LocalCluster(0 if controller else args.num_ps,
                           args.num_workers, strip_launch_flag(argv),
                           output_dir, args.op_timeout_secs, out, network,
                           controller=controller)
    cluster.start()
    failed = cluster.wait()
    if failed is None:
      status = _report(cluster, args, out)
    else:
      out.write('launcher: error: %s failed first (%s); %s\n' % (
          failed.name, describe_status(failed.status), '; '.join(
              '%s: %s%s' % (t.name, 'stopped (SIGSTOP), then ' if
                            t.was_stopped else '', describe_status(t.status))
              for t in cluster.tasks if t is not failed)))
  except netns.NetworkSetupError as e:
    out.write('launcher: error: the network could not be made: %s\n' % e)
  except KeyboardInterrupt:
    out.write('launcher: interrupted (SIGINT, Ctrl-C): stopping every '
              'task\n')
    status = exit_status.INTERRUPTED
  except _Terminated:
    out.write('launcher: terminated (SIGTERM): stopping every task\n')
    status = exit_status.TERMINATED
  finally:
    if cluster is not None:
      cluster.stop()
    if network is not None:
      network.remove()
      out.write('launcher: network removed\n')
    signal.signal(signal.SIGTERM, previous)
    for name in os.listdir(output_dir):
      os.remove(os.path.join(output_dir, name))
    os.rmdir(output_dir)
    if lock is not None:
      lock.release()
    out.flush()
  return status


def _report(cluster, args, out):
  results = cluster.worker_results()
  rates = [r['images_per_sec'] for r in results]
  total = sum(rates) if all(r is not None for r in rates) else None
  summary = {
      'num_ps': len(cluster.ps_hosts),
      'num_workers': len(cluster.worker_hosts),
      'images_per_sec': total,
      'workers': results,
  }
  out.write('-' * 64 + '\n')
  if total is not None and getattr(cluster, 'controller_host', None):
    out.write('cluster total images/sec: %.2f (the controller\'s one graph '
              'over %d workers)\n' % (total, len(cluster.worker_hosts)))
  elif total is not None:
    out.write('cluster total images/sec: %.2f (%d workers: %s)\n' % (
        total, len(rates), ', '.join('%.2f' % r for r in rates)))
  else:
    out.write('cluster: no timed batches\n')
  out.write('-' * 64 + '\n')
  if args.output:
    output.write_json(args.output, summary,
                      lambda line: out.write('launcher: %s\n' % line))
  return 0
