"""A task dies mid-run: every other task exits non-zero within the bound,
naming it; no process is left. Asynchronous training runs and learns."""

import json
import os
import signal
import time

import pytest

import clusterlib
from variable_mgr.benchmark.cluster import liveness

OP_TIMEOUT = 5
# A deadline that the survivors of a killed task must not wait for.
LONG_OP_TIMEOUT = 60


def _kill_mid_run(launch, victim, num_ps=1, sig=signal.SIGKILL):
  cluster = launch(clusterlib.BASE_FLAGS + [
      '--variable_update', 'parameter_server', '--num_ps', str(num_ps),
      '--num_workers', '2', '--num_batches', '100000',
      '--op_timeout_secs', str(OP_TIMEOUT)])
  # Both workers are training.
  cluster.wait_for_line(r'^\[worker:1\] 2\t', step=2)
  cluster.wait_for_line(r'^\[worker:0\] 2\t', step=2)
  pids = cluster.tasks()
  os.kill(pids[victim], sig)
  killed_at = time.time()
  # The survivors' bound is the cluster's own: a call's deadline, its
  # watchdog and probe, then the launcher's margin (clusterlib.Deadlines).
  bound = cluster.deadlines.stop
  status = cluster.finish(bound)
  elapsed = time.time() - killed_at
  assert status == 1, cluster.output
  assert elapsed < bound, cluster.output
  clusterlib.assert_all_gone(cluster)
  if sig == signal.SIGKILL:
    # (A stopped task is not the first to fail: the survivors are, then
    # the launcher ends it.)
    summary = [l for l in cluster.lines if l.startswith('launcher: error:')]
    assert summary == [
        'launcher: error: %s failed first (killed by SIGKILL); %s' % (
            victim, '; '.join('%s: exit status 1' % name
                              for name in sorted(pids) if name != victim))
    ], cluster.output
  for name in pids:
    if name != victim:
      errors = [l for l in cluster.lines
                if l.startswith('[%s] variable_mgr_benchmark: error:' % name)]
      assert len(errors) == 1, cluster.output
      assert 'dead task: %s at 127.0.0.1:' % victim in errors[0], errors[0]


@pytest.mark.long
def test_stopped_worker_is_named_by_every_survivor(launch):
  """SIGSTOP, not a kill: the stopped worker's port still accepts TCP
  connections, but it answers no probe, so every survivor names it."""
  _kill_mid_run(launch, 'worker:1', sig=signal.SIGSTOP)


@pytest.mark.long
def test_killed_worker_is_named_by_every_survivor(launch):
  _kill_mid_run(launch, 'worker:1')


def test_a_killed_worker_ends_the_cluster_within_seconds(launch):
  """kill -9 of worker:1 while worker:0 waits for it at the step barrier on
  the PS: its port refuses connections at once, so worker:0 (probing
  during its blocked call) and the PS (serving on only until worker:0 has
  exited) exit within seconds, each naming worker:1's process gone, not
  after the --op_timeout_secs deadline (60s) as tasks that stopped
  answering."""
  cluster = launch(clusterlib.BASE_FLAGS + [
      '--variable_update', 'parameter_server', '--num_ps', '1',
      '--num_workers', '2', '--num_batches', '100000',
      '--op_timeout_secs', str(LONG_OP_TIMEOUT)])
  cluster.wait_for_line(r'^\[worker:1\] 2\t', step=2)
  cluster.wait_for_line(r'^\[worker:0\] 2\t', step=2)
  pids = cluster.tasks()
  os.kill(pids['worker:1'], signal.SIGKILL)
  killed_at = time.time()
  # A third of the deadline: probes every PROBE_INTERVAL_SECS, the
  # launcher's own exit, and a loaded machine fit well within it.
  bound = LONG_OP_TIMEOUT / 3.0
  assert cluster.finish(bound) == 1, cluster.output
  elapsed = time.time() - killed_at
  assert elapsed < bound, (elapsed, cluster.output)
  clusterlib.assert_all_gone(cluster)
  summary = [l for l in cluster.lines if l.startswith('launcher: error:')]
  assert summary == [
      'launcher: error: worker:1 failed first (killed by SIGKILL); ps:0: '
      'exit status 1; worker:0: exit status 1'], cluster.output
  address = cluster.address('worker:1')
  for name in ('ps:0', 'worker:0'):
    errors = [l for l in cluster.lines
              if l.startswith('[%s] variable_mgr_benchmark: error:' % name)]
    assert len(errors) == 1, cluster.output
    assert ('dead task: worker:1 at %s (%s); ' % (address, liveness.GONE)
            in errors[0]), errors[0]


def test_killed_ps_is_named_by_every_survivor(launch):
  _kill_mid_run(launch, 'ps:0')


def _asynchronous_run(launch, tmp_path, num_workers, num_batches):
  """(the results, the cluster) of a finished asynchronous
  parameter_server run on one PS task."""
  output = str(tmp_path / 'async.json')
  cluster = launch(clusterlib.BASE_FLAGS + [
      '--variable_update', 'parameter_server', '--cross_replica_sync=false',
      '--num_ps', '1', '--num_workers', str(num_workers), '--num_batches',
      str(num_batches), '--op_timeout_secs', '30', '--output', output])
  assert cluster.finish() == 0, cluster.output
  clusterlib.assert_all_gone(cluster)
  assert ('launcher: Wrote the results (JSON) to %s' % output
          in cluster.output)
  with open(output) as f:
    return json.load(f), cluster


def test_asynchronous_parameter_server_learns(launch, tmp_path):
  summary, cluster = _asynchronous_run(launch, tmp_path, 2, 30)
  for worker in summary['workers']:
    losses = worker['losses']
    assert len(losses) == 30
    assert losses[-1] < 0.5 * losses[0], losses
  # Every worker's update counts: 2 workers x 30 steps.
  assert max(w['global_step'] for w in summary['workers']) == 60
  assert 'asynchronous' in cluster.output


def test_one_asynchronous_worker_runs_every_batch(launch, tmp_path):
  """A fresh asynchronous run counts --num_batches from global step 0: one
  worker, whose steps are the global step's only updates, takes them all
  (a first step counted as restored would drop one)."""
  summary, _ = _asynchronous_run(launch, tmp_path, 1, 3)
  (worker,) = summary['workers']
  assert (len(worker['losses']), worker['global_step']) == (3, 3)


def _signal_the_launcher(launch, strategy, num_workers, sig):
  """Sends `sig` to the launcher mid-run; returns the cluster and the
  launcher's exit status, once every task is gone."""
  cluster = launch(clusterlib.BASE_FLAGS + [
      '--variable_update', strategy, '--num_ps', '1',
      '--num_workers', str(num_workers), '--num_batches', '100000',
      '--op_timeout_secs', str(OP_TIMEOUT)])
  cluster.wait_for_line(r'^\[worker:0\] 2\t', step=2)
  os.kill(cluster.process.pid, sig)
  status = cluster.finish(cluster.deadlines.stop)
  clusterlib.assert_all_gone(cluster)
  return cluster, status


def test_ctrl_c_stops_every_task(launch):
  cluster, status = _signal_the_launcher(launch, 'distributed_replicated', 1,
                                         signal.SIGINT)
  assert status == 130, cluster.output
  assert ('launcher: interrupted (SIGINT, Ctrl-C): stopping every task'
          in cluster.output)


def test_sigterm_stops_every_task_and_says_terminated(launch):
  cluster, status = _signal_the_launcher(launch, 'parameter_server', 1,
                                         signal.SIGTERM)
  assert status == 143, cluster.output
  assert ('launcher: terminated (SIGTERM): stopping every task'
          in cluster.output)
  assert 'interrupted' not in cluster.output
