"""The launcher's view of its task processes: `stopped` tells a process
stopped by a signal (SIGSTOP; the launcher then says which task is stopped
rather than waiting on it in silence) from a running one and from one
that is gone."""

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
