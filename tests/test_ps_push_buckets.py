"""parameter_server's pushes in buckets: on a cluster a worker lays the
gradients of one PS task's variables flat into one buffer a bucket, filled
in the backward pass's order, and the task cuts it back. The steps stay
what NumPy computes, for buckets of several sizes, plain and staged, ref
and resource variables.

The model is tests/matrix_model.py's: the table's gradient is an
IndexedSlices (never in a bucket); w1 36 B, w2 24 B, b2 8 B. The backward
pass produces b2 and w2 first, then w1: buckets of 60 B hold b2 + w2 and
leave w1 alone (in the towers' order they would hold w1 + w2 and leave b2
alone); 16 B leave every gradient alone; 1 MiB hold all three.
"""

import numpy as np
import pytest
import tensorflow as tf

import graph_walk
import matrix_model
import test_cluster_option_matrix as matrix
import variable_mgr
from matrix_model import Case
from test_cluster_option_matrix import ps_cluster  # pylint: disable=unused-import
from variable_mgr import errors

tf1 = tf.compat.v1

STRATEGIES = {'parameter_server': dict(variable_update='parameter_server'),
              'staged': dict(variable_update='parameter_server',
                             staged_vars=True)}


def _canonical(device):
  return tf.DeviceSpec.from_string(device).to_string()


def _task(device):
  spec = tf.DeviceSpec.from_string(device)
  return '/job:%s/task:%d' % (spec.job, spec.task)


def _updates(run):
  """`{variable name: update op}` of a worker's graph (one a variable)."""
  found = {}
  for op in run.graph.get_operations():
    if 'ApplyGradientDescent' in op.type:
      name = op.name.split('/update_v/', 1)[1].rsplit('/', 1)[0]
      assert name not in found, op.name
      found[name] = op
  return found


def _buckets(run):
  """`[(sorted names of the variables whose updates take the bucket,
  the pack's device, the cut's device)]` of a worker's graph."""
  updates = _updates(run)
  found = []
  for op in run.graph.get_operations():
    if op.type != 'ConcatV2' or not op.name.startswith('gradient_buckets'):
      continue
    cut = [c for c in op.outputs[0].consumers() if c.type == 'SplitV']
    assert len(cut) == 1, op.name
    names = sorted(n for n, u in updates.items()
                   if op in graph_walk.ancestors(u))
    found.append((names, _canonical(op.device), _canonical(cut[0].device)))
  return found


@pytest.mark.parametrize('bucket_bytes', [0, 16, 60, 1 << 20])
@pytest.mark.parametrize('strategy', sorted(STRATEGIES))
def test_pushes_in_buckets_match_numpy(ps_cluster, strategy, bucket_bytes,
                                        variable_kind):
  del variable_kind
  spec, targets = ps_cluster
  tf1.Session.reset(targets[0])
  case = Case(3, bucket_bytes=bucket_bytes)
  workers = matrix.Workers(spec, targets, case, STRATEGIES[strategy])
  try:
    init = workers.runs[0].snapshot()[0][0]
    history = matrix.async_reference(
        init, case.batches(matrix.WORKERS * matrix.TOWERS),
        strategy == 'staged', 1, True, False)
    matrix._check(workers, case, history, None, parallel=False)  # pylint: disable=protected-access
  finally:
    workers.close()


@pytest.mark.parametrize('strategy', sorted(STRATEGIES))
def test_buckets_follow_the_backward_pass_from_worker_to_task(ps_cluster,
                                                              strategy):
  """Buckets of 60 B: b2 and w2 packed on the worker, cut on the PS task;
  their bucket waits for none of w1's gradient, so it crosses while the
  backward pass computes w1's. Buckets of 1 MiB, the control, pack all
  three, and then w2's update waits for w1's gradient."""
  spec, targets = ps_cluster
  worker = _canonical('/job:worker/replica:0/task:0/device:CPU:0')
  ps = _canonical('/job:ps/replica:0/task:0/device:CPU:0')
  for bucket_bytes, want in ((60, ['layer2/b2', 'layer2/w2']),
                             (1 << 20, ['layer1/w1', 'layer2/b2',
                                        'layer2/w2'])):
    tf1.Session.reset(targets[0])
    workers = matrix.Workers(spec, targets, Case(1, bucket_bytes=bucket_bytes),
                             STRATEGIES[strategy])
    try:
      run = workers.runs[0]
      assert _buckets(run) == [(want, worker, ps)]
      updates = _updates(run)
      # Tower 0's gradient of w1, as the backward pass produced it.
      w1_gradient, = [g.op for g, v in run.mgr._harness_tower  # pylint: disable=protected-access
                      if v.op.name.endswith('layer1/w1')]
      waits = w1_gradient in graph_walk.ancestors(updates['layer2/w2'])
      assert waits == (bucket_bytes > 60)
    finally:
      workers.close()


def test_buckets_hold_the_gradients_of_one_task_each():
  """Two PS tasks, every variable over 8 B in a slice on each: each
  bucket packs the dense gradients of the slices on one task, and is cut
  there; the steps still equal NumPy's."""
  spec, targets = matrix.start_cluster(2)
  case = Case(2, bucket_bytes=1 << 20, variable_partition_min_bytes=8)
  workers = matrix.Workers(spec, targets, case,
                           STRATEGIES['parameter_server'])
  try:
    run = workers.runs[0]
    tasks = dict((name, _task(u.device)) for name, u in _updates(run).items())
    got = sorted((names, _task(cut)) for names, _, cut in _buckets(run))
    want = []
    for task in ('/job:ps/task:0', '/job:ps/task:1'):
      names = sorted(n for n, t in tasks.items()
                     if t == task and not n.startswith(matrix_model.TABLE))
      assert len(names) >= 2, tasks
      want.append((names, task))
    assert got == sorted(want)
    init = _whole(run.snapshot()[0][0])
    batches = case.batches(matrix.WORKERS * matrix.TOWERS)
    history = matrix.async_reference(init, batches, False, 1, True, False)
    for step, step_batches in enumerate(batches):
      workers.step(step_batches, parallel=False)
      for k, worker in enumerate(workers.runs):
        matrix_model.assert_close(_whole(worker.snapshot()[0][0]),
                                  history[step], matrix_model.FLOAT32,
                                  'step %d worker %d' % (step, k))
  finally:
    workers.close()


def _whole(values):
  """`{name: value}` with a partitioned variable's slices (`name/part_k`)
  put back together along their first axis."""
  parts = {}
  for name, value in values.items():
    whole, _, k = name.rpartition('/part_')
    if not whole:
      whole, k = name, 0
    parts.setdefault(whole, []).append((int(k), value))
  return dict((name, np.concatenate([v for _, v in sorted(p)], 0))
              for name, p in parts.items())


def test_buckets_on_one_machine_are_refused():
  with pytest.raises(errors.IncompatibleOptionsError) as e:
    variable_mgr.create('parameter_server', variable_mgr.LocalBenchmarkCnn(2),
                        bucket_bytes=4096)
  assert str(e.value) == (
      "bucket_bytes=4096 with variable_update='parameter_server' on one "
      "machine: buckets size the pushes to the PS tasks of a cluster, and a "
      "local parameter server has none; drop it or give the host a "
      "cluster.")


@pytest.mark.parametrize('bad', [-1, 1.5, True, '64'])
def test_a_bad_bucket_size_is_refused(bad):
  host = variable_mgr.ClusterBenchmarkCnn(
      {'ps': ['h:1'], 'worker': ['h:2', 'h:3']}, 0, 1)
  with pytest.raises(errors.InvalidOptionError) as e:
    variable_mgr.create('parameter_server', host, bucket_bytes=bad)
  assert str(e.value) == (
      'bucket_bytes=%r: the largest bucket of gradients one push carries is '
      'a whole number of bytes, 0 or more; pass e.g. 262144, or 0 for one '
      'push a gradient.' % (bad,))
