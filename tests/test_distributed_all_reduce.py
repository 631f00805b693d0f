"""--variable_update=distributed_all_reduce: one graph over two in-process
workers of two towers each, against NumPy and a single-device run.

The towers are the virtual CPUs of worker servers on 127.0.0.1
(`controller_cluster`); the spec's stages group them by worker, so a
two-stage spec reduces within each worker, then across the two. Every
form is checked by its steps: SGD on the two-layer model of
`seed_harness` must give the variables NumPy computes with the sum over
all four towers (the strategy's default), on every tower.
"""

import numpy as np
import pytest
import tensorflow as tf

import controller_cluster
import seed_harness
import variable_mgr
from seed_harness import VARIABLES
from test_conformance import TOLERANCE
from test_conformance import make_batches
from test_conformance import reference
from variable_mgr import errors
from variable_mgr.allreduce import errors as allreduce_errors
from variable_mgr.strategies import distributed_all_reduce

tf1 = tf.compat.v1

WORKERS, TOWERS = 2, 2
STEPS = 2
# Every algorithm without NCCL (no CPU kernel) alone and as either stage
# of a two-stage spec; limits count elements: the biases (4 and 3
# elements) take the first range.
SINGLE = ['copy', 'xring#2', 'pscpu#2', 'psgpu', 'rechd', 'hcopy']
TWO_STAGE = ['copy/xring', 'xring/rechd', 'rechd/pscpu', 'pscpu/psgpu#2',
             'psgpu/hcopy', 'hcopy/copy', 'pscpu:4:xring/pscpu']
# A collective stage needs a cluster of its own (see controller_cluster).
COLLECTIVE = ['collective', 'pscpu/collective']


def _run(spec, reduction=None, restore_from=None, fresh=False, batch=6):
  host_args = dict(workers=WORKERS)
  if fresh:
    # Harness builds the host through seed_harness.make_host.
    host_args['fresh'] = True
  return seed_harness.Harness(
      dict(variable_update='distributed_all_reduce', all_reduce_spec=spec,
           reduction=reduction), host_args, WORKERS * TOWERS,
      _tower(batch), seed_harness.LEARNING_RATE, tf.float32,
      restore_from=restore_from)


def _tower(batch):
  def build_tower():
    x = tf1.placeholder(tf.float32, [batch, seed_harness.IN])
    y = tf1.placeholder(tf.float32, [batch, seed_harness.OUT])
    return seed_harness.model(x, y), (x, y)
  return build_tower


def _values(run, tower):
  return _all_values(run, [tower])[0]


def _all_values(run, towers):
  """`[{'w1': ..., ...}]` of each of `towers`, read in one call."""
  fetches = []
  for tower in towers:
    by_short = dict((name.split('/')[-1], v)
                    for name, v in run.tower_variables(tower).items())
    fetches.append([by_short[k] for k in VARIABLES])
  return [dict(zip(VARIABLES, row)) for row in run.sess.run(fetches)]


def _check_steps(run, combine='sum', steps=STEPS):
  towers = WORKERS * TOWERS
  values = _all_values(run, range(towers))
  init = values[0]
  for t in range(towers):
    for k in VARIABLES:
      np.testing.assert_array_equal(values[t][k], init[k])
  batches = make_batches(towers, np.float32)[:steps]
  expected = reference(init, batches, combine)
  for step, step_batches in enumerate(batches):
    run.step(step_batches)
    values = _all_values(run, range(towers))
    for t in range(towers):
      for k in VARIABLES:
        np.testing.assert_allclose(
            values[t][k], expected[step][t][k],
            err_msg='%s tower %d step %d' % (k, t, step),
            **TOLERANCE[np.float32])


@pytest.mark.parametrize('spec', SINGLE + TWO_STAGE)
def test_every_spec_steps_equal_numpy(spec):
  run = _run(spec)
  try:
    devices = run.mgr.benchmark_cnn.raw_devices
    assert [d.split('/')[3] for d in devices] == [
        'task:0', 'task:0', 'task:1', 'task:1']
    _check_steps(run)
  finally:
    run.close()


@pytest.mark.parametrize('spec', COLLECTIVE)
def test_collective_specs_step_equal_numpy(spec):
  run = _run(spec, fresh=True)
  try:
    _check_steps(run)
  finally:
    run.close()


def test_the_check_tells_the_sum_from_the_mean():
  """The check's own control: the mean's steps are not the sum's."""
  run = _run('pscpu/pscpu')
  try:
    with pytest.raises(AssertionError, match='tower 0 step 0'):
      _check_steps(run, combine='mean')
  finally:
    run.close()


def test_mean_equals_one_device_and_its_checkpoint_restores_there(tmp_path):
  """reduction='mean' over 2 x 2 towers of 6 examples is one device's step
  on the 24 examples; the one-device run starts from the cluster's
  checkpoint, saved under the canonical names and restored by replicated."""
  run = _run('xring/pscpu', reduction='mean')
  path = str(tmp_path / 'init.ckpt')
  try:
    assert sorted(run.saved) == sorted(
        'layer%d/%s' % (1 if k.endswith('1') else 2, k) for k in VARIABLES)
    run.saver.save(run.sess, path)
    one = seed_harness.Run('replicated', 1, batch=24, restore_from=path)
    try:
      for k in VARIABLES:
        np.testing.assert_array_equal(one.values(0)[k], _values(run, 0)[k])
      for step_batches in make_batches(WORKERS * TOWERS, np.float32)[:STEPS]:
        run.step(step_batches)
        x = np.concatenate([b[0] for b in step_batches])
        y = np.concatenate([b[1] for b in step_batches])
        one.step([(x, y)])
        for t in range(WORKERS * TOWERS):
          for k in VARIABLES:
            np.testing.assert_allclose(_values(run, t)[k], one.values(0)[k],
                                       **TOLERANCE[np.float32])
    finally:
      one.close()
  finally:
    run.close()


def test_a_replicated_checkpoint_restores_on_every_tower(tmp_path):
  """replicated's checkpoint (after a step) loads into every tower of every
  worker: the restore fills tower 0, the post-init ops copy it."""
  local = seed_harness.Run('replicated', 2)
  path = str(tmp_path / 'replicated.ckpt')
  try:
    local.step(make_batches(2, np.float32)[0])
    local.saver.save(local.sess, path)
    saved = local.values(0)
  finally:
    local.close()
  run = _run('pscpu/pscpu', restore_from=path)
  try:
    for t in range(WORKERS * TOWERS):
      for k in VARIABLES:
        np.testing.assert_array_equal(_values(run, t)[k], saved[k])
  finally:
    run.close()


# -- Refusals, before any graph is built ----------------------------------------


def _controller(**kwargs):
  return variable_mgr.ControllerBenchmarkCnn(
      {'worker': ['127.0.0.1:1', '127.0.0.1:2']}, 2, **kwargs)


def _refused(error_class, fragments, host, **options):
  graph = tf.Graph()
  with graph.as_default():
    before = len(graph.get_operations())
    with pytest.raises(error_class) as info:
      variable_mgr.create('distributed_all_reduce', host, **options)
    assert len(graph.get_operations()) == before
  for fragment in fragments:
    assert fragment in str(info.value), (fragment, str(info.value))


@pytest.mark.parametrize('spec', [None, ''])
def test_no_spec(spec):
  _refused(errors.MissingAllReduceSpecError,
           ['all_reduce_spec=%r' % (spec,), 'reduced only as a spec says',
            "'xring'", "'pscpu/pscpu'"], _controller(), all_reduce_spec=spec)


@pytest.mark.parametrize('spec,position', [('nccl', 0), ('xring/nccl', 6),
                                           ('nccl/xring:8:pscpu/nccl', 19)])
def test_a_spec_whose_stage_across_workers_is_nccl(spec, position):
  _refused(allreduce_errors.AllReduceSpecError,
           [repr(spec), "'nccl' at position %d" % position,
            'between the GPUs of one machine', '"nccl/xring"'],
           _controller(device='gpu'), all_reduce_spec=spec)


def test_nccl_within_workers_needs_gpu_towers():
  _refused(errors.NcclDeviceError, ['NCCL runs only between GPUs'],
           _controller(), all_reduce_spec='nccl/xring')


def test_a_spec_that_breaks_the_grammar():
  _refused(allreduce_errors.AllReduceSpecError, ["'xring/ring'", "'ring'"],
           _controller(), all_reduce_spec='xring/ring')


def test_a_local_host():
  _refused(errors.MissingClusterError,
           ["'distributed_all_reduce'", 'ControllerBenchmarkCnn',
            'locally use replicated'],
           variable_mgr.LocalBenchmarkCnn(2), all_reduce_spec='xring')


def test_a_host_of_one_machine_devices_with_a_cluster():
  host = _controller()
  host.raw_devices = ['/cpu:0', '/cpu:1', '/cpu:2', '/cpu:3']
  _refused(errors.InterfaceError,
           ["'/cpu:0' names no task of the cluster's worker job (2 tasks)",
            'ControllerBenchmarkCnn'], host, all_reduce_spec='xring')


@pytest.mark.parametrize('device', [
    '/job:ps/replica:0/task:0/cpu:0', '/job:worker/replica:0/task:2/cpu:0',
    '/job:worker/replica:0/cpu:0'])
def test_a_tower_device_off_the_workers(device):
  """A tower on another job, on a worker task the cluster lacks, or on no
  task: refused naming the device."""
  host = _controller()
  host.raw_devices = [device] + list(host.raw_devices[1:])
  _refused(errors.InterfaceError,
           ["%r names no task of the cluster's worker job (2 tasks)" % device],
           host, all_reduce_spec='xring')


def test_the_class_without_a_cluster():
  host = _controller()
  host.cluster = None
  with pytest.raises(errors.MissingClusterError, match='cluster=None'):
    distributed_all_reduce.VariableMgrDistributedAllReduce(host, 'xring')


def test_a_cluster_without_workers():
  with pytest.raises(errors.MissingClusterError, match='"worker" job'):
    variable_mgr.ControllerBenchmarkCnn({'ps': ['127.0.0.1:1']}, 1)


def test_replicated_only_options():
  _refused(errors.IncompatibleOptionsError, ['use_nccl=True', 'use replicated'],
           _controller(device='gpu'), all_reduce_spec='nccl/xring',
           use_nccl=True)


def test_relaxed_consistency():
  _refused(errors.IncompatibleOptionsError,
           ["variable_consistency='relaxed'"], _controller(),
           all_reduce_spec='xring', variable_consistency='relaxed')


def test_the_host_and_the_outer_stages():
  host = _controller()
  assert host.num_gpus == 4 and host.worker_count == 2
  assert host.worker_devices(1) == ['/job:worker/replica:0/task:1/cpu:0',
                                    '/job:worker/replica:0/task:1/cpu:1']
  assert host.cpu_device == '/job:worker/replica:0/task:0/cpu:0'
  assert [(s.name, p) for s, p in distributed_all_reduce.outer_stages(
      'copy:4:nccl/xring#2:1K:rechd')] == [('copy', 0), ('xring', 12),
                                           ('rechd', 23)]
  # One graph holds every tower: a dynamic loss scale needs no exchange.
  mgr = variable_mgr.create('distributed_all_reduce', host,
                            all_reduce_spec='xring', use_fp16=True,
                            auto_loss_scale=True)
  assert mgr.reduction == 'sum'
