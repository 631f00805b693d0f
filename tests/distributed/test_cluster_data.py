"""Real data through `--launch_local_cluster`: `--data_name=digits`.

Each worker reads its own share of the training split (worker k of W every
W-th image from k, shuffled with the run's seed), its towers a batch each
of its pipeline's step. The NumPy reference replays those batches: the
test builds every worker's pipeline as the harness does (same shard, seed
and shapes) and runs the trivial model's SGD on them,
w[t+1] = w[t] - lr * sum_k mean_d g_kd(w[t]) (the mean over every tower of
every worker under collective_all_reduce). The loss of each step line and
the chief's final checkpoint must match it; with `--print_training_accuracy`
so must the accuracy columns (each worker's own batch, before the step's
update). Asynchronous workers cannot be replayed: their loss falls, and
every checkpoint holds the global step it is named after.
"""

import json
import os
import re

import numpy as np
import pytest
import tensorflow as _tf

import clusterlib
from variable_mgr.benchmark.data import datasets
from variable_mgr.benchmark.flags import input_checks
from variable_mgr.benchmark.models import catalog

tf = _tf.compat.v1

STEPS = 4
WORKERS = 2
TOWERS = clusterlib.TOWERS
BATCH = clusterlib.BATCH
ACCURACY_IN_CLUSTERS = (
    'print_training_accuracy' not in input_checks.CLUSTER_UNSUPPORTED)


def worker_batches(worker, steps):
  """[step][tower] (images [B, 784] float64, labels [B]) of `worker`'s
  pipeline, as `harness.build_towers` makes it in a cluster worker."""
  model = catalog.get_model(clusterlib.MODEL)
  graph = tf.Graph()
  with graph.as_default():
    tf.set_random_seed(clusterlib.SEED)
    pipeline = datasets.InputPipeline(
        datasets.get_dataset('digits'), 'train', BATCH, TOWERS,
        model.image_shape, seed=clusterlib.SEED, device='/cpu:0',
        shard=(worker, WORKERS))
    towers = [pipeline.tower(d) for d in range(TOWERS)]
    with tf.Session(graph=graph) as sess:
      result = []
      for _ in range(steps):
        batches = sess.run(towers)
        result.append([(x.reshape(BATCH, -1).astype(np.float64), y)
                       for x, y in batches])
  return result


def _loss_and_accuracy(values, batches):
  """Mean softmax cross-entropy over the towers' batches, and the fraction
  of their images whose label is the top logit / among the top 5 (a tie at
  the k-th place counts as in, as tf.nn.in_top_k)."""
  w = values['logits/weights'].astype(np.float64)
  b = values['logits/biases'].astype(np.float64)
  losses, top_1, top_5 = [], 0, 0
  for x, labels in batches:
    logits = x.dot(w) + b
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    losses.append(-log_p[np.arange(len(labels)), labels].mean())
    own = logits[np.arange(len(labels)), labels][:, None]
    above = (logits > own).sum(axis=1)
    top_1 += int((above < 1).sum())
    top_5 += int((above < 5).sum())
  images = float(sum(len(l) for _, l in batches))
  return float(np.mean(losses)), top_1 / images, top_5 / images


def reference(initial, batches, mean=False, scale=None):
  """(final variables, [step][worker] (loss, top_1, top_5)) of synchronous
  SGD on `batches` ([worker][step][tower]): the step is the learning rate
  times the sum over the workers of their towers' mean gradient, divided
  by the workers with `mean`, times `scale` if given."""
  current = dict((k, v.astype(np.float64)) for k, v in initial.items())
  lines = []
  for t in range(STEPS):
    lines.append([_loss_and_accuracy(current, batches[k][t])
                  for k in range(WORKERS)])
    total = dict((k, np.zeros_like(v)) for k, v in current.items())
    for k in range(WORKERS):
      for batch in batches[k][t]:
        g = clusterlib.gradients(current, batch)
        for name in total:
          total[name] += g[name] / TOWERS
    step = clusterlib.LEARNING_RATE * (
        scale if scale is not None else 1.0 / (WORKERS if mean else 1))
    current = dict((k, current[k] - step * total[k]) for k in current)
  return current, lines


def _step_lines(cluster, worker):
  """[(step, loss, top_1 or None, top_5 or None)] of `worker`'s lines."""
  result = []
  for line in cluster.lines:
    match = re.match(r'^\[worker:%d\] (\d+)\timages/sec: [^\t]+\t([\d.]+)'
                     r'(?:\t([\d.]+)\t([\d.]+))?$' % worker, line)
    if match:
      step, loss, top_1, top_5 = match.groups()
      result.append((int(step), float(loss),
                     None if top_1 is None else float(top_1),
                     None if top_5 is None else float(top_5)))
  return result


def _launch(launch, tmp_path, strategy_flags, steps, more=(),
            controller=False):
  train_dir = str(tmp_path / 'train')
  output = str(tmp_path / 'out.json')
  initial = clusterlib.initial_values(seed=5)
  clusterlib.write_checkpoint(train_dir, initial, 0)
  cluster = launch(clusterlib.BASE_FLAGS + strategy_flags + [
      '--data_name', 'digits'] + ([] if controller else ['--num_ps', '1']) + [
      '--num_workers', str(WORKERS), '--num_batches', str(steps),
      '--train_dir', train_dir, '--op_timeout_secs', '30', '--output',
      output] + list(more))
  assert cluster.finish() == 0, cluster.output
  clusterlib.assert_all_gone(cluster)
  first = 'controller' if controller else 'worker:0'
  assert '[%s] Dataset:     digits (train split)' % first in cluster.lines, (
      cluster.output)
  with open(output) as f:
    return cluster, initial, train_dir, json.load(f).get('workers')


@pytest.mark.parametrize('name,strategy_flags', [
    ('parameter_server', ['--variable_update', 'parameter_server']),
    pytest.param('collective_all_reduce',
                 ['--variable_update', 'collective_all_reduce'],
                 marks=pytest.mark.long),
], ids=['parameter_server', 'collective_all_reduce'])
def test_each_worker_trains_on_its_own_share_as_numpy_does(
    launch, tmp_path, name, strategy_flags):
  accuracy = name == 'parameter_server' and ACCURACY_IN_CLUSTERS
  cluster, initial, train_dir, _ = _launch(
      launch, tmp_path, strategy_flags, STEPS,
      ['--print_training_accuracy'] if accuracy else [])
  batches = [worker_batches(k, STEPS) for k in range(WORKERS)]
  # The shares are disjoint: no image of worker 0's steps is worker 1's.
  seen = [set(x.tobytes() for step in batches[k] for tower in step
              for x in tower[0]) for k in range(WORKERS)]
  assert not seen[0] & seen[1]
  expected, lines = reference(initial, batches,
                              mean=name == 'collective_all_reduce')
  values, step = clusterlib.read_checkpoint(train_dir)
  assert step == STEPS
  clusterlib.assert_close(values, expected)
  for k in range(WORKERS):
    printed = _step_lines(cluster, k)
    assert [p[0] for p in printed] == list(range(1, STEPS + 1)), (
        cluster.output)
    for (_, loss, top_1, top_5), (want_loss, want_1, want_5) in zip(
        printed, [lines[t][k] for t in range(STEPS)]):
      assert abs(loss - want_loss) < 1.5e-3, (k, loss, want_loss)
      if accuracy:
        assert (top_1, top_5) == (round(want_1, 3), round(want_5, 3)), (
            k, top_1, top_5, want_1, want_5)
      else:
        assert top_1 is None and top_5 is None


def test_a_controllers_towers_read_their_own_workers_shares(
    launch, tmp_path):
  """distributed_all_reduce on digits: the controller's one graph holds
  every worker's towers, and worker k's towers read worker k's share of
  the data set (a pipeline on worker k, as a worker's own towers under the
  other strategies); the steps are the sum over the 4 towers' gradients
  (the strategy's default), each printed loss the mean of the 4 towers'."""
  cluster, initial, train_dir, _ = _launch(
      launch, tmp_path, ['--variable_update', 'distributed_all_reduce',
                         '--all_reduce_spec', 'pscpu/xring', '--device',
                         'cpu'], STEPS, controller=True)
  batches = [worker_batches(k, STEPS) for k in range(WORKERS)]
  expected, lines = reference(initial, batches, scale=TOWERS)
  values, step = clusterlib.read_checkpoint(train_dir)
  assert step == STEPS
  clusterlib.assert_close(values, expected)
  printed = [(int(m.group(1)), float(m.group(2))) for m in (
      re.match(r'^\[controller\] (\d+)\timages/sec: [^\t]+\t([\d.]+)$', l)
      for l in cluster.lines) if m]
  assert [p[0] for p in printed] == list(range(1, STEPS + 1)), cluster.output
  for (_, loss), per_worker in zip(printed, lines):
    want = np.mean([worker_line[0] for worker_line in per_worker])
    assert abs(loss - want) < 1.5e-3, (loss, want)


def test_asynchronous_workers_learn_and_name_checkpoints_after_their_step(
    launch, tmp_path):
  """Asynchronous parameter_server on digits, the chief saving after each
  of its steps while worker:1 goes on updating:

  * every model.ckpt-N holds global step N (the name and the saved step
    come from one snapshot of the global step; a name read in a call of
    its own lags the saved step when worker:1 updates in between);
  * every worker's last ten losses (on batches of its own share) are well
    below NumPy's loss of the initial variables on its first batch: the
    workers' updates reach each other (a worker that starts late begins
    where the other has got to).
  """
  steps = 80
  cluster, initial, train_dir, workers = _launch(
      launch, tmp_path, ['--variable_update', 'parameter_server',
                         '--cross_replica_sync=false', '--display_every',
                         '20', '--learning_rate', '0.02',
                         '--save_model_steps', '1',
                         '--max_ckpts_to_keep', '1000'], steps)
  assert 'asynchronous' in cluster.output
  saved = {}
  for name in os.listdir(train_dir):
    if name.startswith('model.ckpt-') and name.endswith('.index'):
      reader = tf.train.load_checkpoint(os.path.join(train_dir, name[:-6]))
      saved[int(name[len('model.ckpt-'):-len('.index')])] = int(
          reader.get_tensor('global_step'))
  # The initial checkpoint (0) and one a step of the chief's, the last two
  # (its last step and the end) maybe one.
  assert steps <= len(saved) - 1 <= steps + 1, sorted(saved)
  mismatched = dict((n, s) for n, s in saved.items() if n != s)
  assert not mismatched, mismatched
  assert steps <= max(saved) <= WORKERS * steps, sorted(saved)
  for k, worker in enumerate(workers):
    losses = worker['losses']
    assert len(losses) == steps
    first = _loss_and_accuracy(initial, worker_batches(k, 1)[0])[0]
    assert np.mean(losses[-10:]) < 0.5 * first, (first, losses)
  assert max(w['global_step'] for w in workers) == WORKERS * steps


def test_a_controllers_pipelines_run_on_their_workers():
  """The controller's graph on digits: one pipeline a worker, on that
  worker's CPU, feeding that worker's towers only, each of its own share;
  no tower's images come from another machine."""
  import controller_cluster  # pylint: disable=g-import-not-at-top
  graph = controller_cluster.benchmark_towers('--data_name=digits')
  reads = [op for op in graph.get_operations()
           if op.type == 'IteratorGetNext']
  assert sorted(tf.DeviceSpec.from_string(op.device).task
                for op in reads) == list(range(WORKERS))
  for read in reads:
    splits = [c for out in read.outputs for c in out.consumers()]
    fed = set(part for split in splits for out in split.outputs
              for user in out.consumers() for part in user.name.split('/')
              if part.startswith('tower_'))
    task = tf.DeviceSpec.from_string(read.device).task
    assert fed == set('tower_%d' % (task * TOWERS + d)
                      for d in range(TOWERS)), (read.name, fed)
