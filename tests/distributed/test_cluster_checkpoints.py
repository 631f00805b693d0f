"""The chief's checkpoints in a cluster: --max_ckpts_to_keep and
--save_model_secs under synchronous barriers (asynchronous checkpoints
named after the global step they hold: test_cluster_data).

Loopback clusters of 1 PS + 2 workers of the trivial model (see
clusterlib); the NumPy reference replays the fixed synthetic batches.
"""

import os

import tensorflow as _tf

import clusterlib
from variable_mgr.benchmark.cluster import worker_task

tf = _tf.compat.v1


def _checkpoints(train_dir):
  """{step in the file name: (variables, global step in the file)} of
  every checkpoint in `train_dir`."""
  result = {}
  for name in os.listdir(train_dir):
    if name.startswith('model.ckpt-') and name.endswith('.index'):
      reader = tf.train.load_checkpoint(os.path.join(train_dir, name[:-6]))
      values = dict((n, reader.get_tensor(n))
                    for n in reader.get_variable_to_shape_map())
      step = int(values.pop('global_step'))
      result[int(name[len('model.ckpt-'):-len('.index')])] = (values, step)
  return result


def _flags(train_dir, num_batches, *more):
  return clusterlib.BASE_FLAGS + [
      '--num_ps', '1', '--num_workers', '2', '--variable_update',
      'parameter_server', '--train_dir', train_dir, '--num_batches',
      str(num_batches), '--display_every', '100', '--op_timeout_secs',
      '30'] + list(more)


def test_time_based_saves_agree_across_workers_and_keep_the_last_n(
    launch, tmp_path):
  """Synchronous parameter_server with --save_model_secs 1 over a few
  seconds of steps: the chief saves after the steps its clock picks, every
  worker waits for those checkpoints (else the run could not end, or a
  checkpoint would hold a later step's updates), and with
  --max_ckpts_to_keep 2 the last two of the saves are kept (besides the
  initial checkpoint, which another Saver wrote): each holds NumPy's
  variables after its step."""
  train_dir = str(tmp_path / 'train')
  initial = clusterlib.initial_values(seed=11)
  clusterlib.write_checkpoint(train_dir, initial, 0)
  steps = 500
  cluster = launch(_flags(train_dir, steps, '--save_model_secs', '1',
                          '--max_ckpts_to_keep', '2'))
  assert cluster.finish() == 0, cluster.output
  clusterlib.assert_all_gone(cluster)
  saved_lines = [l for l in cluster.lines if l.startswith('[worker:0] Saved')]
  names = [int(l.rsplit('-', 1)[1]) for l in saved_lines]
  # At least one time-based save before the final one (after the last
  # step; 500 steps of the trivial model take more than a second even on a
  # fast machine, each a few round trips), in step order; the final save
  # repeats the last step's when a time-based one came right before it.
  assert names[-1] == steps, cluster.output
  unique = sorted(set(names))
  assert len(unique) >= 2, cluster.output
  assert names in (unique, unique + [steps]), names
  names = unique
  assert not any(l.startswith('[worker:1] Saved') for l in cluster.lines)
  saved = _checkpoints(train_dir)
  assert sorted(saved) == [0] + names[-2:], (sorted(saved), names)
  state = tf.train.get_checkpoint_state(train_dir)
  assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
      'model.ckpt-%d' % n for n in names[-2:]]
  for name in names[-2:]:
    values, step = saved[name]
    assert step == name
    clusterlib.assert_close(values, clusterlib.reference(initial, 2, step))


class _Clock(object):

  def __init__(self):
    self.now = 100.0

  def __call__(self):
    return self.now


def test_save_schedule_by_steps_and_by_time():
  """The chief's decisions of `SaveSchedule`, against a clock the test
  sets: by steps every N-th step; by time the first step that starts S
  seconds after the last save, and the decision of a step as every worker
  reads it back decides for them."""
  clock = _Clock()
  schedule = worker_task.SaveSchedule(3, 0, clock)
  assert [s for s in range(1, 10) if schedule.due(s)] == [3, 6, 9]
  schedule = worker_task.SaveSchedule(0, 10, clock)
  assert schedule.request(1) == -1
  clock.now += 9.5
  assert schedule.request(2) == -1 and not schedule.due(2, -1)
  clock.now += 0.5
  # The chief asks to save after step 3; a worker reading it saves there.
  assert schedule.request(3) == 3
  assert schedule.due(3, 3)
  schedule.saved()
  clock.now += 5
  # The last decision stays until the next one: no save after step 4.
  assert schedule.request(4) == 3 and not schedule.due(4, 3)
  # A worker that reads a later step's decision does not save now.
  assert not schedule.due(4, 5)
  clock.now += 5
  assert schedule.request(5) == 5
  # Without a decision travelling (no barriers), the chief's clock alone.
  alone = worker_task.SaveSchedule(0, 10, clock)
  assert not alone.due(1)
  clock.now += 10
  assert alone.due(2)
  alone.saved()
  assert not alone.due(3)
  assert not worker_task.SaveSchedule(0, 0, clock).due(1, None)
