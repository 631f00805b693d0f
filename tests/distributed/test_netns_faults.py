"""Faults a network brings, on the namespace cluster, under every strategy.

1 PS + 2 workers, every task in a namespace of its own, links of 200mbit,
a checkpoint every 2 steps:

* a link taken down mid-run (its bridge port: the host's eth0 loses its
  carrier, nothing resets a connection) for a worker, for the PS and for
  the chief: every other task exits with status 1 within the cluster's own
  deadline, naming the task behind the link; a rerun with the same
  --train_dir resumes from the last checkpoint, and its variables are
  NumPy's from that checkpoint's;
* a task stopped (SIGSTOP) rather than killed: every task exits within the
  deadline, the launcher names the stopped task and so do the survivors
  (`test_survivors_name_a_stopped_task`: a stopped process's port still
  accepts connections, but it answers no probe); an asynchronous worker
  stopped holds no one up: the other goes on, and so does it once
  continued;
* a link slowed far below the others (500kbit against 200mbit): slower
  steps that still progress, no task declared dead, NumPy's variables.

These are long runs: `network_cluster`, run with pytest's
`--network-cluster`; they skip, saying why, without root or namespaces.
"""

import json
import os
import re
import signal
import time

import pytest
import tensorflow as _tf

import clusterlib
from variable_mgr.benchmark.cluster import liveness

tf = _tf.compat.v1

OP_TIMEOUT = 5
RATE = '200mbit'
SLOW_RATE = 500 * 10**3
SAVE_EVERY = 2
RESUMED_STEPS = 2

pytestmark = pytest.mark.network_cluster

STRATEGIES = clusterlib.NETWORK_STRATEGIES
IDS = [name for name, _ in STRATEGIES]


def _flags(strategy_flags, train_dir, num_batches, output=None):
  flags = clusterlib.BASE_FLAGS + strategy_flags + [
      '--num_ps', '1', '--num_workers', '2', '--num_batches',
      str(num_batches), '--op_timeout_secs', str(OP_TIMEOUT),
      '--network_rate', RATE, '--train_dir', train_dir]
  if output:
    flags += ['--output', output]
  return flags


def _errors(cluster, name):
  return [l for l in cluster.lines
          if l.startswith('[%s] variable_mgr_benchmark: error:' % name)]


def _fails_within_deadline(cluster, survivors):
  """The launcher's status (1) within the cluster's failure deadline; no
  process left; one error line a survivor. Returns those lines."""
  start = time.time()
  bound = cluster.deadlines.stop
  status = cluster.finish(bound)
  assert status == 1, cluster.output
  assert time.time() - start < bound, cluster.output
  clusterlib.assert_all_gone(cluster)
  assert cluster.lines[-1] == 'launcher: network removed', cluster.output
  lines = {}
  for name in survivors:
    errors = _errors(cluster, name)
    assert len(errors) == 1, cluster.output
    lines[name] = errors[0]
  return lines


@pytest.mark.parametrize('victim', ['worker:1', 'ps:0', 'worker:0'],
                         ids=['worker', 'ps', 'chief'])
@pytest.mark.parametrize('name,strategy_flags', STRATEGIES, ids=IDS)
def test_link_down_is_named_and_the_rerun_resumes(network_host, launch,
                                                  tmp_path, name,
                                                  strategy_flags, victim):
  del network_host
  train_dir = str(tmp_path / 'train')
  initial = clusterlib.initial_values(seed=7)
  clusterlib.write_checkpoint(train_dir, initial, 0)
  cluster = launch(_flags(strategy_flags, train_dir, 100000) + [
      '--save_model_steps', str(SAVE_EVERY)])
  # A checkpoint of step 2 is written before the fault.
  cluster.wait_for_line(r'^\[worker:0\] Saved .*model\.ckpt-\d+$', step=2)
  cluster.wait_for_line(r'^\[worker:1\] 3\t', step=3)
  cluster.wait_for_line(r'^\[worker:0\] 3\t', step=3)
  # Asynchronous workers know each other alive only from their probes
  # between steps: let one pass first.
  time.sleep(2 * liveness.PROBE_INTERVAL_SECS)
  address = cluster.address(victim)
  cluster.network().set_link(cluster.hosts()[victim], False)
  survivors = [n for n in cluster.tasks() if n != victim]
  for survivor, line in _fails_within_deadline(cluster, survivors).items():
    assert re.search(r'dead tasks?: .*%s at %s \(stopped answering\)' % (
        victim, re.escape(address)), line), (survivor, line)

  saved, step = clusterlib.read_checkpoint(train_dir)
  assert step >= SAVE_EVERY, step
  # Named after the global step it holds, asynchronous updates or not.
  path = tf.train.latest_checkpoint(train_dir)
  assert path.endswith('model.ckpt-%d' % step), (path, step)
  output = str(tmp_path / 'rerun.json')
  # --num_batches counts from global step 0 (tf_cnn_benchmarks'
  # end_local_step); asynchronous workers' global step counts both.
  asynchronous = name.startswith('asynchronous')
  target = (step // 2 if asynchronous else step) + RESUMED_STEPS
  rerun = launch(_flags(strategy_flags, train_dir, target, output))
  assert rerun.finish() == 0, rerun.output
  clusterlib.assert_all_gone(rerun)
  assert 'Restored %s' % path in rerun.output
  with open(output) as f:
    workers = json.load(f)['workers']
  values, final_step = clusterlib.read_checkpoint(train_dir)
  assert workers[0]['first_global_step'] == step, workers
  if asynchronous:
    # Every worker's updates count, in the run's own order; the chief may
    # save before the other worker's last update. A worker that reads the
    # global step after the chief's first updates has fewer steps left.
    assert len(workers[0]['losses']) == RESUMED_STEPS, workers
    assert max(w['global_step'] for w in workers) == (
        step + sum(len(w['losses']) for w in workers))
    return
  for worker in workers:
    assert worker['first_global_step'] == step, worker
  assert final_step == step + RESUMED_STEPS
  clusterlib.assert_close(values, clusterlib.strategy_reference(
      name, saved, 2, RESUMED_STEPS))


@pytest.mark.parametrize('victim', ['worker:1', 'ps:0'], ids=['worker', 'ps'])
@pytest.mark.parametrize('name,strategy_flags', STRATEGIES, ids=IDS)
def test_stopped_task_ends_the_cluster_within_the_deadline(
    network_host, launch, tmp_path, name, strategy_flags, victim):
  del network_host
  cluster = launch(_flags(strategy_flags, str(tmp_path / 'train'), 100000))
  cluster.wait_for_line(r'^\[worker:1\] 2\t', step=2)
  cluster.wait_for_line(r'^\[worker:0\] 2\t', step=2)
  pids = cluster.tasks()
  os.kill(pids[victim], signal.SIGSTOP)
  survivors = [n for n in pids if n != victim]
  if name.startswith('asynchronous') and victim.startswith('worker'):
    # No one waits for an asynchronous worker: worker:0 goes on training
    # (20 more steps within one call's deadline), and the stopped worker
    # goes on where it stopped once continued.
    steps = [int(l.split('\t')[0].split()[1]) for l in list(cluster.lines)
             if re.match(r'^\[worker:0\] \d+\t', l)]
    cluster.wait_for_line(r'^\[worker:0\] %d\t' % (steps[-1] + 20),
                          timeout=cluster.deadlines.call)
    stopped_at = len([l for l in list(cluster.lines)
                      if l.startswith('[worker:1] ')])
    os.kill(pids[victim], signal.SIGCONT)
    cluster.wait_for_line(r'^\[worker:1\] \d+\t', timeout=OP_TIMEOUT)
    assert any(re.match(r'^\[worker:1\] \d+\t', l)
               for l in cluster.lines[stopped_at:]), cluster.output
    os.kill(cluster.process.pid, signal.SIGINT)
    assert cluster.finish(cluster.deadlines.stop) == 130, cluster.output
    clusterlib.assert_all_gone(cluster)
    assert not any('variable_mgr_benchmark: error' in l
                   for l in cluster.lines), cluster.output
    return
  _fails_within_deadline(cluster, survivors)
  assert ('launcher: %s at %s is stopped (SIGSTOP): its port accepts '
          'connections but it runs nothing' % (
              victim, cluster.address(victim))) in cluster.lines
  summary = [l for l in cluster.lines if l.startswith('launcher: error:')]
  assert len(summary) == 1 and '%s: stopped (SIGSTOP), then ' % victim in (
      summary[0]), cluster.output


def test_survivors_name_a_stopped_task(network_host, launch, tmp_path):
  del network_host
  cluster = launch(_flags(['--variable_update', 'parameter_server'],
                          str(tmp_path / 'train'), 100000))
  cluster.wait_for_line(r'^\[worker:1\] 2\t', step=2)
  os.kill(cluster.tasks()['worker:1'], signal.SIGSTOP)
  for line in _fails_within_deadline(cluster, ['ps:0', 'worker:0']).values():
    assert 'worker:1 at %s' % cluster.address('worker:1') in line, line


@pytest.mark.parametrize('name,strategy_flags', STRATEGIES, ids=IDS)
def test_slow_link_still_progresses(network_host, launch, tmp_path, name,
                                    strategy_flags):
  """worker:1's link drops to 500kbit once the task runs (its steps take
  a few ms each at 200mbit: the drop comes before its first): no task is
  declared dead, every step is taken, the variables are NumPy's; worker:1's
  12 timed steps took at least what their bytes need on that link (each
  step sends at least the variables' bytes: a gradient of each, or the
  two halves of a 2-worker ring all-reduce), less one burst of the
  link's bucket."""
  del network_host
  steps = 12
  train_dir = str(tmp_path / 'train')
  output = str(tmp_path / 'slow.json')
  initial = clusterlib.initial_values(seed=8)
  clusterlib.write_checkpoint(train_dir, initial, 0)
  cluster = launch(_flags(strategy_flags, train_dir, steps, output))
  cluster.wait_for_line(r'^\[worker:1\] Cluster: ')
  cluster.network().set_rate(cluster.hosts()['worker:1'], SLOW_RATE)
  assert cluster.finish() == 0, cluster.output
  clusterlib.assert_all_gone(cluster)
  assert not any('variable_mgr_benchmark: error' in l or 'dead task' in l
                 for l in cluster.lines), cluster.output
  with open(output) as f:
    workers = json.load(f)['workers']
  variable_bytes = sum(v.nbytes for v in initial.values())
  burst = clusterlib.netns.MIN_BURST_BYTES
  least = (steps * variable_bytes - burst) * 8.0 / SLOW_RATE
  timed = (clusterlib.BATCH * clusterlib.TOWERS * steps /
           workers[1]['images_per_sec'])
  assert timed > least, (timed, least, cluster.output)
  values, step = clusterlib.read_checkpoint(train_dir)
  if name.startswith('asynchronous'):
    # The chief saves when it is done, the slow worker still training.
    assert max(w['global_step'] for w in workers) == 2 * steps
    for worker in workers:
      assert worker['losses'][-1] < worker['losses'][0], worker['losses']
    return
  assert step == steps
  clusterlib.assert_close(values, clusterlib.strategy_reference(
      name, initial, 2, steps))
