"""A PS task that finds another PS gone waits two probe intervals for its
own workers' "finished" tokens before it fails (`ps_task.run_ps`): workers
tell every PS in one call, and a PS that saw all its tokens may stop while
another's are still on their way. Run on a clock of its own, with the
servers, the session and the probes stood in for, so that the grace is
measured exactly."""

import contextlib

from variable_mgr.benchmark.cluster import liveness
from variable_mgr.benchmark.cluster import ps_task
from variable_mgr.benchmark.cluster import task_spec
from variable_mgr.benchmark.flags import command_line as flags_lib
from variable_mgr.compat import tf

WORKERS = 2


class _Clock(object):

  def __init__(self):
    self.now = 1000.0

  def time(self):
    return self.now

  def sleep(self, seconds):
    self.now += seconds


def _run(monkeypatch, tokens_at):
  """run_ps of ps:0 of 2 PS tasks, ps:1 gone at once, its workers' tokens
  arriving `tokens_at` seconds after the start (None: never); returns (what
  run_ps returned or raised, seconds on the clock)."""
  clock = _Clock()
  start = clock.now
  args = flags_lib.parse_task_args(
      ['--job_name', 'ps', '--task_index', '0', '--ps_hosts',
       '127.0.0.1:1,127.0.0.1:2', '--worker_hosts', '127.0.0.1:3,127.0.0.1:4',
       '--variable_update', 'parameter_server', '--model', 'trivial'],
      environ={})
  spec = task_spec.from_flags('ps', 0, args.ps_hosts, args.worker_hosts)
  assert spec.num_workers == WORKERS

  class Monitor(liveness.Monitor):

    def dead(self, tasks, finished=None, patience=0.0):
      return [(task_spec.task_name(job, i), address, liveness.GONE)
              for job, i, address in tasks if job == 'ps']

  class Caller(object):

    def __init__(self, *unused):
      pass

    def __call__(self, sizes, what):
      arrived = tokens_at is not None and clock.now - start >= tokens_at
      full = 'started' in what or arrived
      return [1 if full else 0] * len(sizes)

  class Session(object):

    def __init__(self, *unused, **unused_too):
      pass

    def as_default(self):
      return contextlib.suppress()

  class Server(object):
    target = 'grpc://127.0.0.1:1'

  monkeypatch.setattr(ps_task, 'time', clock)
  monkeypatch.setattr(ps_task.servers, 'start_server',
                      lambda *unused: Server())
  monkeypatch.setattr(ps_task.deadline, 'DeadlineCaller', Caller)
  monkeypatch.setattr(ps_task.liveness, 'Monitor', Monitor)
  monkeypatch.setattr(tf, 'Session', Session)
  try:
    outcome = ps_task.run_ps(spec, args, log=lambda line: None)
  except liveness.TaskFailedError as e:
    outcome = e
  return outcome, clock.now - start


def test_tokens_in_the_grace_end_the_ps_as_finished(monkeypatch):
  outcome, seconds = _run(monkeypatch, tokens_at=1.5)
  assert outcome == 0
  assert 1.5 <= seconds < 1.5 + 0.2


def test_a_ps_gone_fails_this_one_after_two_probe_intervals(monkeypatch):
  outcome, seconds = _run(monkeypatch, tokens_at=None)
  assert isinstance(outcome, liveness.TaskFailedError), outcome
  assert 'ps:1' in str(outcome), outcome
  assert 'some workers had not finished' in str(outcome), outcome
  grace = 2 * liveness.PROBE_INTERVAL_SECS
  assert grace <= seconds < grace + 0.2


def test_tokens_after_the_grace_come_too_late(monkeypatch):
  outcome, _ = _run(monkeypatch, tokens_at=2.5)
  assert isinstance(outcome, liveness.TaskFailedError), outcome
