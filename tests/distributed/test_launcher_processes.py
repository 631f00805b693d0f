"""The launcher's view of its task processes: `stopped` tells a process
stopped by a signal (SIGSTOP; the launcher then says which task is stopped
rather than waiting on it in silence) from a running one and from one
that is gone; `LocalCluster.stop` leaves each task the status it ended
with."""

import io
import os
import signal
import subprocess
import sys
import time

from variable_mgr.benchmark.cluster import launcher


def _wait_for_state(pid, want, timeout=10.0):
  """Waits until `launcher.stopped(pid)` is `want` (a signal is delivered
  a moment after kill returns); returns the last answer."""
  end = time.time() + timeout
  while True:
    got = launcher.stopped(pid)
    if got == want or time.time() > end:
      return got
    time.sleep(0.01)


def test_stopped_tells_a_stopped_process_from_a_running_one():
  process = subprocess.Popen([sys.executable, '-c',
                              'import time; time.sleep(60)'])
  try:
    assert not launcher.stopped(process.pid)
    os.kill(process.pid, signal.SIGSTOP)
    assert _wait_for_state(process.pid, True) is True
    os.kill(process.pid, signal.SIGCONT)
    assert _wait_for_state(process.pid, False) is False
  finally:
    process.kill()
    process.wait()
  # Gone: neither stopped nor an error.
  assert launcher.stopped(process.pid) is False


_TASK = '''
import sys, time
if '--task_index=0' in sys.argv:
  sys.exit(3)
time.sleep(60)
'''


def test_stop_gives_every_task_the_status_it_ended_with(tmp_path):
  """`LocalCluster.stop`: worker 0 had exited with status 3 on its own,
  worker 1 still ran and ends by the SIGTERM stop sends; each task's
  status then says so (the launcher's error line reads them)."""
  cluster = launcher.LocalCluster(
      0, 2, [], str(tmp_path), 5.0, out=io.StringIO(),
      task_command=[sys.executable, '-c', _TASK])
  try:
    cluster.start()
    first = cluster.tasks[0].process
    end = time.time() + 30.0
    while first.poll() is None and time.time() < end:
      time.sleep(0.01)
    assert first.returncode == 3
    assert [t.status for t in cluster.tasks] == [None, None]
  finally:
    cluster.stop()
  assert [t.status for t in cluster.tasks] == [3, -signal.SIGTERM]
  assert [launcher.describe_status(t.status) for t in cluster.tasks] == [
      'exit status 3', 'killed by SIGTERM']
