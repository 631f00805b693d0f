"""Synchronous training on real clusters equals a NumPy reference.

Every worker has 2 towers of 4 images; global tower k*2+d has a fixed
batch of its own. Each worker applies the mean of its towers' gradients and
the workers' updates add up, for parameter_server and distributed_replicated
alike: w[t+1] = w[t] - lr * sum_k mean_d g_kd(w[t]). Staged parameter_server
reads one step late: w[t+1] = w[t] - lr * sum_k mean_d g_kd(w[t-1]).
The test writes the initial checkpoint; the chief restores it.
"""

import json
import re
import time

import pytest

import clusterlib

STEPS = 3


def _run(launch, tmp_path, train_dir, flags, name):
  output = str(tmp_path / ('%s.json' % name))
  cluster = launch(clusterlib.BASE_FLAGS + [
      '--train_dir', str(train_dir), '--num_batches', str(STEPS),
      '--op_timeout_secs', '30', '--output', output] + flags)
  status = cluster.finish()
  assert status == 0, cluster.output
  clusterlib.assert_all_gone(cluster)
  with open(output) as f:
    return json.load(f), cluster


@pytest.mark.parametrize('flags,num_ps,staged', [
    (['--variable_update', 'parameter_server', '--staged_vars'], 1, True),
    (['--variable_update', 'distributed_replicated'], 1, False),
], ids=['staged_parameter_server', 'distributed_replicated'])
def test_synchronous_steps_match_numpy(launch, tmp_path, flags, num_ps,
                                       staged):
  train_dir = tmp_path / 'train'
  initial = clusterlib.initial_values()
  clusterlib.write_checkpoint(str(train_dir), initial, 0)
  flags = flags + ['--num_ps', str(num_ps), '--num_workers', '2']
  summary, cluster = _run(launch, tmp_path, train_dir, flags, 'first')
  assert summary['num_workers'] == 2
  assert summary['images_per_sec'] > 0
  assert 'cluster total images/sec' in cluster.output
  values, step = clusterlib.read_checkpoint(str(train_dir))
  assert step == STEPS
  clusterlib.assert_close(values, clusterlib.reference(
      initial, 2, STEPS, staged=staged))
  for worker in summary['workers']:
    assert worker['first_global_step'] == 0
    assert worker['global_step'] == STEPS


def test_parameter_server_on_two_ps_matches_numpy_and_resumes(launch,
                                                             tmp_path):
  """Variables spread over 2 PS tasks by size; then a second run restores
  the variables and the global step and goes on exactly where the first
  stopped (staging areas start over, so the plain parameter server is the
  one whose continuation is exact)."""
  train_dir = tmp_path / 'train'
  initial = clusterlib.initial_values(seed=1)
  clusterlib.write_checkpoint(str(train_dir), initial, 0)
  flags = ['--variable_update', 'parameter_server', '--num_ps', '2',
           '--num_workers', '2']
  _run(launch, tmp_path, train_dir, flags, 'first')
  after_first, step = clusterlib.read_checkpoint(str(train_dir))
  assert step == STEPS
  clusterlib.assert_close(after_first, clusterlib.reference(initial, 2, STEPS))
  # --num_batches counts from global step 0, as tf_cnn_benchmarks counts it.
  summary, cluster = _run(launch, tmp_path, train_dir,
                          flags + ['--num_batches', str(2 * STEPS)], 'second')
  assert 'Restored %s' % (train_dir / ('model.ckpt-%d' % STEPS)) in (
      cluster.output)
  for worker in summary['workers']:
    assert worker['first_global_step'] == STEPS
    assert worker['global_step'] == 2 * STEPS
  values, step = clusterlib.read_checkpoint(str(train_dir))
  assert step == 2 * STEPS
  clusterlib.assert_close(values, clusterlib.reference(after_first, 2, STEPS))
  clusterlib.assert_close(values, clusterlib.reference(initial, 2, 2 * STEPS))


def test_a_workers_images_per_sec_is_its_loops(launch, tmp_path):
  """total images/sec is the timed batches' images over the loop's time,
  which holds every timed step: at most what the last step line says (its
  mean, the images over the steps' own time) and at least the images over
  the whole cluster's time. A thousand steps of a few ms each keep the
  loop well past one second, so that a time taken as a quotient of two
  clock readings (1.0) would be seen."""
  output = str(tmp_path / 'loop.json')
  steps = 1000
  start = time.time()
  cluster = launch(clusterlib.BASE_FLAGS + [
      '--variable_update', 'parameter_server', '--num_ps', '1',
      '--num_workers', '1', '--num_batches', str(steps),
      '--op_timeout_secs', '30', '--output', output])
  assert cluster.finish() == 0, cluster.output
  wall = time.time() - start
  with open(output) as f:
    (worker,) = json.load(f)['workers']
  images = clusterlib.BATCH * clusterlib.TOWERS * steps
  (line,) = [l for l in cluster.lines
             if l.startswith('[worker:0] %d\timages/sec: ' % steps)]
  steps_mean = float(re.search(r'images/sec: ([0-9.]+) ', line).group(1))
  assert images / wall <= worker['images_per_sec'] <= steps_mean + 0.05
