"""`variable_partition_min_bytes` at 2, 3 and 12 slices, on clusters of 3
and 12 PS tasks and 1 worker of 2 towers inside this process, against
NumPy, with the slices' placement.

tests/matrix_model.py's model with a table of 13 rows (12 bytes a row) and
a hidden width of 4; with a minimum of 12 bytes the table gets one slice a
PS task (3 or 12), w1 [3, 4] one a row (3), w2 [4, 2] two of 2 rows (one
row, 8 bytes, is under the minimum) and b2 (8 bytes) none.
tests/test_partitioning.py holds the 2-task case of the two-layer model and
the checkpoints.
"""

import numpy as np
import pytest
import tensorflow as tf

import matrix_model
import variable_mgr
from options_harness import Run
from variable_mgr.benchmark.runs import in_process

tf1 = tf.compat.v1

TOWERS = 2
ROWS = 13
MIN_BYTES = 12
STEPS = 3
STRATEGIES = {'parameter_server': dict(variable_update='parameter_server'),
              'staged': dict(variable_update='parameter_server',
                             staged_vars=True),
              'distributed_replicated': dict(
                  variable_update='distributed_replicated')}
NAMES = sorted(STRATEGIES)


def expected_slices(num_ps):
  return {matrix_model.TABLE: min(num_ps, ROWS), 'layer1/w1': 3,
          'layer2/w2': 2, 'layer2/b2': 1}


_CLUSTERS = {}


def _cluster(num_ps):
  """`(spec, worker target)` of `num_ps` PS tasks and one worker, started
  once in this process (servers live until it exits)."""
  if num_ps not in _CLUSTERS:
    spec, servers = in_process.start_servers(
        [('ps', num_ps), ('worker', 1)],
        lambda job, _: tf1.ConfigProto(
            device_count={'CPU': 1 if job == 'ps' else TOWERS}))
    _CLUSTERS[num_ps] = spec, servers['worker'][0].target
  return _CLUSTERS[num_ps]


def _task(device):
  spec = tf.DeviceSpec.from_string(device)
  return spec.job, spec.task


def _whole(copy):
  """`{name: value}` with each partitioned variable's slices joined."""
  parts = {}
  for name, value in copy.items():
    base, _, part = name.rpartition('/part_')
    if base and part.isdigit():
      parts.setdefault(base, {})[int(part)] = value
    else:
      parts[name] = {0: value}
  return dict((name, np.concatenate([p[i] for i in sorted(p)]))
              for name, p in parts.items())


def _check_placement(run, strategy, num_ps):
  prefix = 'ps_var/v0/' if strategy == 'distributed_replicated' else 'v/'
  slices = {}
  for v in run.graph.get_collection(tf1.GraphKeys.GLOBAL_VARIABLES):
    name = v.op.name
    if name.startswith(prefix):
      base = name[len(prefix):].split('/part_')[0]
      slices.setdefault(base, []).append(_task(v.device))
  want = expected_slices(num_ps)
  assert sorted(slices) == sorted(want)
  for name, tasks in slices.items():
    assert len(tasks) == want[name], (name, tasks)
    assert all(job == 'ps' for job, _ in tasks), (name, tasks)
    # One slice a PS task.
    assert len(set(tasks)) == len(tasks), (name, tasks)
  assert sorted(t for _, t in slices[matrix_model.TABLE]) == list(
      range(min(num_ps, ROWS)))
  if strategy == 'distributed_replicated':
    local = sorted(v.op.name for v in run.model_variables
                   if v.op.name.startswith('v0/'))
    assert local == ['v0/' + k for k in sorted(matrix_model.TRAINABLE)]


def _train(strategy, num_ps):
  spec, target = _cluster(num_ps)
  tf1.Session.reset(target)  # No variable or area of an earlier graph.
  host = variable_mgr.ClusterBenchmarkCnn(spec, 0, TOWERS)
  run = Run('ps_cpu', TOWERS, host=host,
            model=matrix_model.GatherModel(rows=ROWS, hidden=4),
            variable_partition_min_bytes=MIN_BYTES, **STRATEGIES[strategy])
  run.sess = tf1.Session(target, graph=run.graph)
  try:
    _check_placement(run, strategy, num_ps)
    run.sess.run(run.init_ops)
    run.sess.run(run.post_init_ops)
    if run.put_ops:
      run.sess.run(run.put_ops)
    init = _whole(run.snapshot()[0][0])
    batches = matrix_model.make_batches(TOWERS, STEPS, rows=ROWS)
    history, _ = matrix_model.simulate(init, batches, 'mean',
                                       stale=strategy == 'staged')
    for step, step_batches in enumerate(batches):
      run.step(step_batches)
      got = _whole(run.snapshot()[0][0])
      matrix_model.assert_close(got, history[step][0], matrix_model.FLOAT32,
                                '%s step %d' % (strategy, step))
    np.testing.assert_array_equal(got[matrix_model.TABLE][-1],
                                  init[matrix_model.TABLE][-1])
  finally:
    run.sess.close()


@pytest.mark.parametrize('strategy', NAMES)
def test_two_and_three_slices_match_numpy(strategy, variable_kind):
  _train(strategy, 3)


# Ref and resource variables are the 3-task case's; a graph of 12 slices
# takes 3 s to build on TensorFlow 1.15.
@pytest.mark.parametrize('strategy', NAMES)
def test_twelve_slices_match_numpy(strategy):
  _train(strategy, 12)


def test_expected_slice_counts_follow_the_rule():
  """The counts above, from the library's own rule."""
  from variable_mgr import placement  # pylint: disable=g-import-not-at-top
  model = matrix_model.GatherModel(rows=ROWS, hidden=4)
  for num_ps in (3, 12):
    got = dict((k, placement.partition_count(s, tf.float32, MIN_BYTES,
                                             num_ps))
               for k, s in model.shapes.items())
    assert got == expected_slices(num_ps)
