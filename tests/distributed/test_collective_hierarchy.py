"""collective_all_reduce with two towers a worker: each worker sums its
towers first, one collective a gradient runs across the workers, and every
tower applies the result; the numbers are the flat mean (or sum) over every
tower of every worker, against NumPy.

Two worker processes of two towers (hierarchy_worker.py) train a model with
a sparse gradient (a gather), a None gradient (an unused variable) and a
dense one, with ref and resource variables, mean and sum, float32, float16
added in float32 and float16 added in float16. The graph's collectives are checked in
test_collective_all_reduce.py (one a gradient a worker, a group of workers).
"""

import os

import numpy as np
import pytest

import clusterlib
import hierarchy_worker
import worker_processes

WORKERS = 2
TOWERS = 2
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      'hierarchy_worker.py')
NAMES = ('emb', 'w', 'b', 'unused')
# Float16 values hold 11 significant bits; float32 ones are summed in
# another order than NumPy's.
TOLERANCE = {'float32': dict(rtol=1e-5, atol=1e-6),
             'float16': dict(rtol=4e-3, atol=4e-3),
             'half': dict(rtol=4e-3, atol=4e-3)}


def run_workers(tmp_path, case, towers=TOWERS):
  """Runs WORKERS hierarchy_worker.py processes; returns their arrays."""
  return worker_processes.run_workers(
      tmp_path, SCRIPT, WORKERS,
      lambda cluster, k, output: [cluster, str(k), str(towers), output, case],
      cwd=clusterlib.REPO)


def reference(initial, reduction, num_towers, steps):
  """NumPy's steps: the gradient of every tower of the cluster (global tower
  g reads `hierarchy_worker.batch(g, step)`), summed, divided by the tower
  count for a mean; `unused` never moves."""
  values = dict((k, v.astype(np.float64)) for k, v in initial.items())
  history = []
  for step in range(steps):
    d_emb = np.zeros_like(values['emb'])
    d_w = np.zeros_like(values['w'])
    d_b = np.zeros_like(values['b'])
    for g in range(num_towers):
      ids, y = hierarchy_worker.batch(g, step)
      x = values['emb'][ids]
      r = x.dot(values['w']) + values['b'] - y
      d_w += x.T.dot(r)
      d_b += r.sum(axis=0)
      np.add.at(d_emb, ids, r.dot(values['w'].T))
    if reduction == 'mean':
      d_emb, d_w, d_b = (d_emb / num_towers, d_w / num_towers,
                         d_b / num_towers)
    rate = hierarchy_worker.LEARNING_RATE
    values = dict(values, emb=values['emb'] - rate * d_emb,
                  w=values['w'] - rate * d_w, b=values['b'] - rate * d_b)
    history.append(values)
  return history


def tower_values(arrays, when, tower):
  return dict((n, arrays['%s/v%d/%s' % (when, tower, n)]) for n in NAMES)


# The mean of float32 is stepped by the bucket test below, with both kinds
# of variables.
# Two cases in the suite, every case with --long.
@pytest.mark.parametrize('case', [
    'ref-sum-float32', 'resource-mean-half',
    pytest.param('resource-sum-float16', marks=pytest.mark.long),
    pytest.param('ref-mean-float16', marks=pytest.mark.long)])
def test_two_towers_a_worker_step_as_the_flat_mean_or_sum(tmp_path, case):
  kind, reduction, dtype = case.split('-')
  arrays = run_workers(tmp_path, case)
  for worker in arrays:
    assert bool(worker['resource']) == (kind == 'resource')
  source = tower_values(arrays[0], 'before', 0)
  # Every copy of every worker starts from worker 0's tower 0, which the
  # other worker's own initial values are not.
  assert not np.allclose(tower_values(arrays[1], 'before', 0)['w'],
                         source['w'])
  for worker in arrays:
    for d in range(TOWERS):
      for name, value in tower_values(worker, 'initial', d).items():
        assert value.dtype == np.dtype(
            'float16' if dtype == 'half' else dtype)
        np.testing.assert_array_equal(value, source[name])
  expected = reference(source, reduction, WORKERS * TOWERS,
                       hierarchy_worker.STEPS)
  for step, values in enumerate(expected):
    first = tower_values(arrays[0], 'step%d' % step, 0)
    # The step moved the trained variables (a test of the comparison).
    assert not np.allclose(first['w'], source['w'])
    for k, worker in enumerate(arrays):
      for d in range(TOWERS):
        got = tower_values(worker, 'step%d' % step, d)
        for name in NAMES:
          np.testing.assert_allclose(
              got[name].astype(np.float64), values[name],
              err_msg='worker %d tower %d %s step %d' % (k, d, name, step),
              **TOLERANCE[dtype])
          # Every copy holds the same value: one reduction handed out.
          np.testing.assert_array_equal(got[name], first[name])


@pytest.mark.parametrize('kind', [
    'ref', pytest.param('resource', marks=pytest.mark.long)])
def test_every_bucket_size_steps_as_one_collective_a_gradient(tmp_path, kind):
  """bucket_bytes 0 (one collective a gradient), 32 (b and W in one buffer,
  emb alone) and 1 MiB (all three in one): every copy of every worker
  equals NumPy's step, and the three runs agree bit for bit (two workers:
  each element's sum over the workers is one addition, wherever the
  element lies in a buffer)."""
  runs = {}
  for size in (0, 32, 1 << 20):
    run_dir = tmp_path / str(size)
    run_dir.mkdir()
    runs[size] = run_workers(run_dir, '%s-mean-float32-%d' % (kind, size))
  source = tower_values(runs[0][0], 'before', 0)
  expected = reference(source, 'mean', WORKERS * TOWERS,
                       hierarchy_worker.STEPS)
  for size, arrays in runs.items():
    for name, value in tower_values(arrays[0], 'before', 0).items():
      np.testing.assert_array_equal(value, source[name])
    for step, values in enumerate(expected):
      for k, worker in enumerate(arrays):
        assert bool(worker['resource']) == (kind == 'resource')
        for d in range(TOWERS):
          got = tower_values(worker, 'step%d' % step, d)
          unbucketed = tower_values(runs[0][k], 'step%d' % step, d)
          for name in NAMES:
            what = 'bucket %d worker %d tower %d %s step %d' % (
                size, k, d, name, step)
            np.testing.assert_allclose(got[name], values[name],
                                       err_msg=what, **TOLERANCE['float32'])
            np.testing.assert_array_equal(got[name], unbucketed[name],
                                          err_msg=what)
