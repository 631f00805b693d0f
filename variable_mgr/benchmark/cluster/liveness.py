"""Which tasks of a cluster are alive: probes of their addresses that only
a running server answers (a stopped process's port still accepts TCP
connections).

A task that never answered is still starting until `--startup_timeout_secs`
has passed; after that it is dead. A task that answered once and no longer
does is dead, unless it said it finished: at once when its host refuses the
connection (its process is gone), after `--op_timeout_secs` without an
answer for tasks that probe all along (PS tasks, asynchronous workers: see
`Monitor.dead`). A task that finds another dead raises `TaskFailedError`,
which names the dead task, and exits with status 1. A worker blocked in a
call on a peer probes while it waits (see `deadline`), so when a task's
process is gone every other task exits within seconds; when it is stopped
or cut off, within about `--op_timeout_secs` plus a probe interval.

A task that reaches none of two or more other tasks, not even a refusal,
says that its own link or network looks down, naming its own address,
instead of naming every other task dead (`own_link_down`).

Asynchronous workers never wait for each other, so nothing but probes tells
them that a peer died: a `Watcher` thread probes the peers every
PROBE_INTERVAL_SECS while the worker trains (a probe never holds up a
step), and the worker raises its verdict between steps.

While a task waits for others to come up it says so every
WAIT_REPORT_SECS: which tasks, at which address, for how long, and when it
gives up.

How a probe asks (`probe`): a TCP connection first, then grpcio's
connectivity API (`grpc.channel_ready_future`). The connection gives the
kernel's answer, which tells a refusal (no process listens: dead at once)
from no connection at all (a timeout, no route: maybe this task's own
link); grpcio's states do not (both are TRANSIENT_FAILURE, or CONNECTING
for a connect that times out). The channel then asks whether a server runs
there: it is READY once the server has answered the HTTP/2 handshake,
which a stopped (SIGSTOP) or hung process, whose listening socket the
kernel still completes, never does (its channel stays CONNECTING until
the timeout: checked with grpcio 1.62 and 1.85 against TensorFlow 1.15's
and 2.21's servers). Each probe opens a channel of its own (and closes it
a moment later): a channel that stays open keeps its connection READY
while the process behind it is stopped. A channel whose connection fails
outright (TRANSIENT_FAILURE: refused or reset, as when a process exits
under the probe) ends the wait at once, and the kernel is asked again.
"""

import socket
import threading
import time

import grpc

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


# How long a probe waits for the server's answer once connected: long
# enough for a task on a loaded machine or behind a slow, full link.
ANSWER_TIMEOUT_SECS = 3.0
# The probe's channel: its own connection (no subchannel shared with
# another channel to the same address), and straight to the address even
# when http_proxy is set.
CHANNEL_OPTIONS = (('grpc.use_local_subchannel_pool', 1),
                   ('grpc.enable_http_proxy', 0))
# How long after a probe its channel is closed (see `serving`).
CHANNEL_CLOSE_DELAY_SECS = 1.0


# What a probe of a task's address found (see `probe`).
ANSWERED = 'answered'
# Its host answered and no process listens: the task is gone.
REFUSED = 'refused'
# Connected, but no server answered: the process is stopped or hung.
SILENT = 'silent'
# No connection at all (a timeout, no route): its host or the network
# between, this task's own link included, is down.
UNREACHABLE = 'unreachable'


# Why `Monitor.dead` names a task that answered once.
GONE = 'its process is gone: its port refuses connections'
STOPPED_ANSWERING = 'stopped answering'


# What `connect` found when a connection was made.
CONNECTED = 'connected'


def connect(address, timeout=CONNECT_TIMEOUT_SECS):
  """The kernel's answer at 'host:port': CONNECTED, REFUSED (no process
  listens) or UNREACHABLE (no connection at all)."""
  host, port = task_spec.split_address(address)
  try:
    socket.create_connection((host, port), timeout=timeout).close()
  except ConnectionRefusedError:
    return REFUSED
  except (OSError, socket.timeout):
    return UNREACHABLE
  return CONNECTED


def probe(address, timeout=CONNECT_TIMEOUT_SECS,
          answer_timeout=ANSWER_TIMEOUT_SECS):
  """What answers at 'host:port': ANSWERED, REFUSED, SILENT or UNREACHABLE.

  A TCP connection is not enough: the kernel completes the handshake of a
  listening socket whose process is stopped (SIGSTOP) or hung, so once
  connected the probe also asks grpcio whether a server answers there
  (`serving`), which only a running process does. When grpcio's own
  connection failed outright (a process exiting under the probe), the
  kernel is asked again: a refusal now means the process is gone.
  """
  found = connect(address, timeout)
  if found != CONNECTED:
    return found
  answer = serving(address, answer_timeout)
  if answer is None and connect(address, timeout) == REFUSED:
    return REFUSED
  return ANSWERED if answer else SILENT


def serving(address, timeout=ANSWER_TIMEOUT_SECS):
  """Whether a gRPC server answers at 'host:port' within `timeout` seconds.

  Returns:
    True once grpcio's channel to it is READY (`channel_ready_future`);
    None as soon as the channel's connection failed (TRANSIENT_FAILURE:
    refused or reset, not a server that is slow or stopped: those keep it
    CONNECTING); False when neither happened within `timeout`.
  """
  channel = grpc.insecure_channel(address, options=list(CHANNEL_OPTIONS))
  settled = threading.Event()
  failed = []

  def watch(state):
    if state == grpc.ChannelConnectivity.TRANSIENT_FAILURE:
      failed.append(state)
      settled.set()

  channel.subscribe(watch, try_to_connect=True)
  ready = grpc.channel_ready_future(channel)
  ready.add_done_callback(lambda unused_future: settled.set())
  try:
    settled.wait(timeout)
    if ready.done() and not ready.cancelled():
      return True
    return None if failed else False
  finally:
    ready.cancel()
    channel.unsubscribe(watch)
    # grpcio's thread that polls the channel's state stops within its
    # 0.2s poll once nothing is subscribed; a channel closed under it
    # makes it raise ("Channel closed!", seen with grpcio 1.62).
    closer = threading.Timer(CHANNEL_CLOSE_DELAY_SECS, channel.close)
    closer.daemon = True
    closer.start()


def reachable(address, timeout=CONNECT_TIMEOUT_SECS,
              answer_timeout=ANSWER_TIMEOUT_SECS):
  """Whether a running server answers at 'host:port' (see `probe`)."""
  return probe(address, timeout, answer_timeout) == ANSWERED


def own_link_down(found):
  """Whether a task's own link or network looks down, from what its probes
  of every other task it still needs found ({name: probe result}).

  When none of two or more other tasks can be reached at all (no refusal,
  no connection), the one thing they share is this task's own link: its
  peers are not all dead at once. With one other task the two cannot be
  told apart; a refusal or a silent connection proves the path works.
  """
  return len(found) >= 2 and all(f == UNREACHABLE for f in found.values())


class Monitor(object):
  """Tells dead tasks from live ones by probing their addresses.

  A task that never answered is still starting until `startup_timeout`
  has passed since the monitor was made; after that it is dead. A task that
  answered once (or is known to have come up: `mark_seen`) and no longer
  does is dead, unless `finished(name)` says it ended normally: at once, or
  after the `patience` of `dead` unless its host refuses the connection.
  `failure` names the dead, or this task's own link when it reaches no
  other task at all.
  """

  def __init__(self, spec, startup_timeout, log=print):
    self.spec = spec
    self.startup_timeout = startup_timeout
    self.started = time.time()
    self.seen = set()
    self.log = log
    self._last_report = self.started
    # name -> (time, probe result) of the latest probe of each task, and
    # name -> time it last answered.
    self.found = {}
    self.answered = {}

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

  def probe(self, name, address):
    """Probes task `name` at `address`; records and returns the result."""
    found = probe(address)
    now = time.time()
    self.found[name] = (now, found)
    if found == ANSWERED:
      self.seen.add(name)
      self.answered[name] = now
    return found

  def mark_seen(self, name, when=None):
    """Task `name` is known to have come up (at `when`, default now) though
    no probe of this task caught it: from now on it is dead when it does
    not answer, after the patience of `dead` counted from `when`."""
    if name not in self.seen:
      self.seen.add(name)
      self.answered.setdefault(name, time.time() if when is None else when)

  def dead(self, tasks, finished=None, patience=0.0):
    """[(name, address, why)] of the dead among `tasks`; `why` of a task
    that answered once is GONE when its port refuses connections, else
    STOPPED_ANSWERING.

    Args:
      tasks: [(job, index, address)].
      finished: `finished(name)` says whether a task that no longer
        answers ended normally.
      patience: seconds a task that answered once may go without
        answering, while its address is not refused, before it counts as
        dead. 0 (a call already failed or timed out): dead at once.
        Tasks that probe their peers all along (PS tasks, asynchronous
        workers) pass --op_timeout_secs, the time a synchronous worker
        waits for a peer: a peer stopped or behind a slow, full link for a
        moment is not dead, one whose process is gone (refused) is.
    """
    result = []
    waiting = []
    for job, i, address in tasks:
      name = task_spec.task_name(job, i)
      found = self.probe(name, address)
      if found == ANSWERED:
        continue
      if name in self.seen:
        if (patience and found != REFUSED and
            time.time() - self.answered.get(name, 0.0) < patience):
          continue
        if finished is not None and finished(name):
          continue
        result.append((name, address,
                       GONE if found == REFUSED else STOPPED_ANSWERING))
      elif time.time() - self.started > self.startup_timeout:
        result.append((name, address, 'never came up within %gs' %
                       self.startup_timeout))
      else:
        waiting.append((name, address))
    self.report_waiting(waiting)
    return result

  def gone(self, tasks, finished=None):
    """[(name, address, GONE)] of the tasks among `tasks` ([(job, index,
    address)]) that answered once and whose port now refuses connections:
    their process is gone, so they are dead at once, unless
    `finished(name)` says they ended normally. Silent or unreachable tasks
    are left to the caller's deadline."""
    result = []
    for job, i, address in tasks:
      name = task_spec.task_name(job, i)
      # The kernel's refusal is the whole answer: no need to wait for a
      # server's.
      if name not in self.seen or connect(address) != REFUSED:
        continue
      self.found[name] = (time.time(), REFUSED)
      if finished is not None and finished(name):
        continue
      result.append((name, address, GONE))
    return result

  def failure(self, dead, context):
    """A TaskFailedError that names the dead tasks, or, when this task
    reaches none of the other tasks (see `own_link_down`), says that its own
    link or network looks down and names this task's address.

    Args:
      dead: [(name, address, why)] from `dead`.
      context: what this task was doing.
    """
    if _train_dir:
      advice = ('restart the cluster: a rerun with the same --train_dir=%s '
                'resumes from its last checkpoint' % _train_dir)
    else:
      advice = 'restart the cluster'
    others = self.unreached_others(dead)
    if others is not None:
      return TaskFailedError(
          'task %s at %s reaches none of the other tasks (%s: no '
          'connection): its own link or network looks down, not every '
          'other task at once; %s. Check the link and address of this host '
          '(%s), then %s.' % (
              self.spec.name, self.spec.address,
              ', '.join('%s at %s' % o for o in others),
              context.rstrip('.'), self.spec.address, advice))
    described = ', '.join('%s at %s (%s)' % d for d in dead)
    return TaskFailedError(
        'dead task%s: %s; %s. Every task of a cluster is needed: %s.' % (
            's' if len(dead) > 1 else '', described, context.rstrip('.'),
            advice), [d[0] for d in dead])

  def unreached_others(self, dead, fresh_secs=None):
    """[(name, address)] of every other task when this one reaches none of
    them (`own_link_down`), else None. Probes those that `dead` did not
    name, and those probed longer ago than `fresh_secs` (default
    PROBE_INTERVAL_SECS), until one is reached.

    A task that finished normally needs no exception: its host refuses
    the connection, which proves the path works.
    """
    fresh_secs = PROBE_INTERVAL_SECS if fresh_secs is None else fresh_secs
    named = set(d[0] for d in dead)
    needed = [(task_spec.task_name(job, i), address)
              for job, i, address in self.others()]
    if len(needed) < 2:
      return None
    found = {}
    for name, address in needed:
      when, result = self.found.get(name, (0.0, None))
      if name not in named or time.time() - when > fresh_secs:
        result = self.probe(name, address)
      found[name] = result
      if result != UNREACHABLE:
        return None  # Without probing the rest.
    return needed if own_link_down(found) else None

  def wait_for(self, tasks, deadline):
    """Blocks until every task answers; raises TaskFailedError at
    `deadline` naming those that never did."""
    while True:
      missing = [t for t in tasks
                 if self.probe(task_spec.task_name(t[0], t[1]), t[2]) !=
                 ANSWERED]
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


class Watcher(object):
  """Probes `tasks` every PROBE_INTERVAL_SECS in a thread of its own, with
  `Monitor.dead(tasks, finished, patience)`; `check()`, called between
  steps, raises the failure once one is dead.

  Why a thread and not probes between steps: a probe of a peer that does
  not answer takes up to CONNECT_TIMEOUT_SECS + ANSWER_TIMEOUT_SECS, and
  every probe a round trip on the worker's own link; in the step loop each
  would hold up this worker's training (and count in its images/sec) for
  a peer it does not wait for. Between steps is still when the verdict is
  acted on: a peer's death does not hold up this worker's step (it fails
  by itself, naming the PS, if the PS is what died), and the PS serves on
  after it found a worker dead until the other workers have exited (for
  at most --op_timeout_secs, longer than any step can take), so this
  worker names the dead peer, not the PS that stopped because of it.

  `started()`, when given, names the peers that said they came up (their
  `started` token on PS 0): they count as seen from then on, so a peer that
  dies before a probe first caught it alive is found dead, not taken to
  be still starting until --startup_timeout_secs.
  """

  def __init__(self, monitor, tasks, finished, patience, context,
               started=None):
    self.monitor = monitor
    self.tasks = tasks
    self.finished = finished
    self.started = started
    self.patience = patience
    self.context = context
    self.error = None
    self._stop = threading.Event()
    self._thread = threading.Thread(target=self._watch, name='peer-watcher')
    self._thread.daemon = True

  def start(self):
    if self.tasks:
      self._thread.start()
    return self

  def _watch(self):
    names = set(task_spec.task_name(job, i) for job, i, _ in self.tasks)
    while not self._stop.wait(PROBE_INTERVAL_SECS):
      if self.started is not None and not names <= self.monitor.seen:
        # A peer that said it came up (its `started` token) was alive even
        # if no probe caught it yet: one that dies before the first probe
        # is dead, not "still starting" until --startup_timeout_secs.
        for name in set(self.started()) & names:
          self.monitor.mark_seen(name)
      dead = self.monitor.dead(self.tasks, self.finished, self.patience)
      if dead and not self._stop.is_set():
        self.error = self.monitor.failure(dead, self.context)
        return

  def check(self):
    """Raises the TaskFailedError of a dead task, if one was found."""
    if self.error is not None:
      raise self.error

  def stop(self):
    self._stop.set()
