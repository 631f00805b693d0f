"""Which tasks of a cluster are alive: probes of their addresses that only
a running server answers (a stopped process's port still accepts TCP
connections).

A task that never answered is still starting until `--startup_timeout_secs`
has passed; after that it is dead. A task that answered once and no longer
does is dead, unless it said it finished. A task that finds another dead
raises `TaskFailedError`, which names the dead task, and exits with status
1: so when a task dies, every other task exits non-zero within about
`--op_timeout_secs` plus a probe interval.

While a task waits for others to come up it says so every
WAIT_REPORT_SECS: which tasks, at which address, for how long, and when it
gives up.
"""

import socket
import time

from variable_mgr.benchmark.cluster import task_spec

# How often PS tasks and asynchronous workers probe their peers.
PROBE_INTERVAL_SECS = 1.0
# Timeout of one TCP probe of a task's address.
CONNECT_TIMEOUT_SECS = 1.0
# How often a task waiting for others to come up prints what it waits for.
WAIT_REPORT_SECS = 5.0

# This process's --train_dir (see `set_train_dir`): the advice of a dead
# task's error names it only when there is one.
_train_dir = None


def set_train_dir(train_dir):
  """Records this task's --train_dir (None: none given) for the advice of
  `Monitor.failure`."""
  global _train_dir
  _train_dir = train_dir


class TaskFailedError(RuntimeError):
  """Another task of the cluster died, or a call outlived its deadline.

  Attributes:
    dead_tasks: names ('worker:1') of the tasks found dead; may be empty
      when a call timed out while every task still answered.
  """

  def __init__(self, message, dead_tasks=()):
    super(TaskFailedError, self).__init__(message)
    self.dead_tasks = list(dead_tasks)


# A client's HTTP/2 connection preface and an empty SETTINGS frame: a gRPC
# server (TensorFlow's speaks HTTP/2 in the clear) answers with a SETTINGS
# frame of its own.
HTTP2_PREFACE = (b'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n' +
                 b'\x00\x00\x00\x04\x00\x00\x00\x00\x00')
# How long a probe waits for that answer once connected: long enough for a
# task on a loaded machine or behind a slow, full link.
ANSWER_TIMEOUT_SECS = 3.0


def reachable(address, timeout=CONNECT_TIMEOUT_SECS,
              answer_timeout=ANSWER_TIMEOUT_SECS):
  """Whether a running server answers at 'host:port'.

  A TCP connection is not enough: the kernel completes the handshake of a
  listening socket whose process is stopped (SIGSTOP) or hung, so the probe
  also sends HTTP/2's connection preface and waits for the server's first
  frame, which only a running process sends.
  """
  host, port = task_spec.split_address(address)
  try:
    sock = socket.create_connection((host, port), timeout=timeout)
  except (OSError, socket.timeout):
    return False
  try:
    sock.settimeout(answer_timeout)
    sock.sendall(HTTP2_PREFACE)
    return bool(sock.recv(9))
  except (OSError, socket.timeout):
    return False
  finally:
    sock.close()


class Monitor(object):
  """Tells dead tasks from live ones by probing their addresses.

  A task that never answered is still starting until `startup_timeout`
  has passed since the monitor was made; after that it is dead. A task that
  answered once and no longer does is dead, unless `finished(name)` says it
  ended normally.
  """

  def __init__(self, spec, startup_timeout, log=print):
    self.spec = spec
    self.startup_timeout = startup_timeout
    self.started = time.time()
    self.seen = set()
    self.log = log
    self._last_report = self.started

  def report_waiting(self, waiting, now=None):
    """Prints what this task waits for, at most every WAIT_REPORT_SECS.

    Args:
      waiting: [(name, address)] of the tasks not up yet.
    """
    now = time.time() if now is None else now
    if not waiting or now - self._last_report < WAIT_REPORT_SECS:
      return
    self._last_report = now
    self.log('%s: waiting for %s to come up (%.0fs so far; giving up after '
             '--startup_timeout_secs=%g)' % (
                 self.spec.name, ', '.join('%s at %s' % w for w in waiting),
                 now - self.started, self.startup_timeout))

  def others(self, jobs=('ps', 'worker')):
    return [(job, i, address) for job, i, address in self.spec.all_tasks()
            if job in jobs and (job, i) != (self.spec.job_name,
                                            self.spec.task_index)]

  def dead(self, tasks, finished=None):
    """[(name, address, why)] of the dead among `tasks`."""
    result = []
    waiting = []
    for job, i, address in tasks:
      name = task_spec.task_name(job, i)
      if reachable(address):
        self.seen.add(name)
        continue
      if name in self.seen:
        if finished is not None and finished(name):
          continue
        result.append((name, address, 'stopped answering'))
      elif time.time() - self.started > self.startup_timeout:
        result.append((name, address, 'never came up within %gs' %
                       self.startup_timeout))
      else:
        waiting.append((name, address))
    self.report_waiting(waiting)
    return result

  def failure(self, dead, context):
    """A TaskFailedError that names the dead tasks."""
    described = ', '.join('%s at %s (%s)' % d for d in dead)
    if _train_dir:
      advice = ('restart the cluster: a rerun with the same --train_dir=%s '
                'resumes from its last checkpoint' % _train_dir)
    else:
      advice = 'restart the cluster'
    return TaskFailedError(
        'dead task%s: %s; %s. Every task of a cluster is needed: %s.' % (
            's' if len(dead) > 1 else '', described, context.rstrip('.'),
            advice), [d[0] for d in dead])

  def wait_for(self, tasks, deadline):
    """Blocks until every task answers; raises TaskFailedError at
    `deadline` naming those that never did."""
    while True:
      missing = [t for t in tasks if not reachable(t[2])]
      for job, i, _ in tasks:
        if (job, i, _) not in missing:
          self.seen.add(task_spec.task_name(job, i))
      if not missing:
        return
      if time.time() > deadline:
        dead = [(task_spec.task_name(job, i), address,
                 'never came up within %gs' % self.startup_timeout)
                for job, i, address in missing]
        raise self.failure(dead, 'this task (%s) waited for it to start' %
                           self.spec.name)
      self.report_waiting([(task_spec.task_name(job, i), address)
                           for job, i, address in missing])
      time.sleep(0.2)
