"""A dynamic loss scale under the strategies that share variables on PS
tasks (parameter_server, staged, distributed_replicated), on clusters of 2
workers of 2 towers inside this process (1 PS; see
tests/test_cluster_option_matrix.py), tests/matrix_model.py's model, ref and
resource variables, against NumPy.

- Synchronous (the host's `cross_replica_sync`, every worker's step run
  together): an inf on one worker only skips the step on both, for an inf
  on the worker that does not write the scale (worker 1) and on the one
  that does (worker 0); the weights after every step are NumPy's (each
  worker adds its towers' mean: the mean of the 4 towers at twice the
  rate; staged one step stale), the shared scale follows
  `matrix_model.next_loss_scale` step by step (every_n=2), and a skipped
  step leaves every variable and momentum slot as it was.
- Asynchronous parameter_server (`cross_replica_sync=False`; worker 0's
  step, then worker 1's): only the worker with the inf skips, and the one
  shared scale follows the schedule over the workers' steps in that order.
- Accumulation (2 micro-batches) under synchronous steps: an inf in one
  worker's micro-batch skips the cycle's update on both.
- A checkpoint saved after a halving restores the scale and its count on
  every worker.
"""

import numpy as np
import pytest
import tensorflow as tf

import matrix_model
import test_cluster_option_matrix as in_process
import variable_mgr
from matrix_model import Case
from matrix_model import dynamic_options
from variable_mgr import errors

tf1 = tf.compat.v1

WORKERS, TOWERS = in_process.WORKERS, in_process.TOWERS
EVERY_N = 2
SYNC_STRATEGIES = in_process.PS_STRATEGIES
ASYNC_STRATEGIES = ('parameter_server', 'staged')
# (step, global tower) of each planted inf: worker 1's last tower, then
# worker 0's first; between them the scale doubles once.
SYNC_INFS = ((1, 3), (5, 0))
ASYNC_INFS = ((1, 3),)


def _batches(steps, infs):
  batches = matrix_model.make_batches(WORKERS * TOWERS, steps)
  for step, tower in infs:
    batches[step] = matrix_model.with_inf(batches[step], tower)
  return batches


def _case(steps):
  return Case(steps, **dynamic_options(EVERY_N))


def _workers(ps_cluster, strategy, steps, sync, **run_args):
  spec, targets = ps_cluster
  tf1.Session.reset(targets[0])  # No variable or queue of an earlier graph.
  return in_process.Workers(spec, targets, _case(steps),
                            SYNC_STRATEGIES[strategy],
                            host_args=dict(cross_replica_sync=sync),
                            run_args=run_args)


@pytest.fixture(scope='module')
def ps_cluster():
  return in_process.start_cluster(1)


def _assert_steps(workers, batches, history, scales, parallel):
  for step, step_batches in enumerate(batches):
    workers.step(step_batches, parallel)
    for k, run in enumerate(workers.runs):
      copies, scale = run.snapshot()
      for t, got in zip(run.towers, copies):
        matrix_model.assert_close(got, history[step], matrix_model.FLOAT16,
                                  'step %d worker %d tower %d' % (step, k, t))
      assert scale == scales[step], (step, k, scale, scales)


@pytest.mark.parametrize('strategy', sorted(SYNC_STRATEGIES))
def test_synchronous_steps_skip_together(ps_cluster, strategy,
                                         variable_kind):
  del variable_kind
  batches = _batches(7, SYNC_INFS)
  workers = _workers(ps_cluster, strategy, len(batches), sync=True)
  try:
    init = workers.runs[0].snapshot()[0][0]
    history, scales = matrix_model.simulate(
        init, batches, 'mean', stale=strategy == 'staged', float16=True,
        dynamic=(4, EVERY_N),
        learning_rate=WORKERS * matrix_model.LEARNING_RATE)
    assert scales == [4, 2, 2, 2, 4, 2, 2], scales
    _assert_steps(workers, batches, [h[0] for h in history], scales,
                  parallel=True)
  finally:
    workers.close()


@pytest.mark.parametrize('strategy', ['parameter_server',
                                      'distributed_replicated'])
def test_synchronous_accumulation_skips_the_cycle_together(ps_cluster,
                                                           strategy):
  """backward_passes_per_step=2, every_n=1: the inf in the first micro-batch
  of worker 1's second cycle skips that cycle's update on both workers."""
  batches = _batches(8, ((2, 3),))
  workers = _workers(ps_cluster, strategy, len(batches), sync=True,
                     backward_passes_per_step=2, inc_loss_scale_every_n=1)
  try:
    init = workers.runs[0].snapshot()[0][0]
    history, scales = matrix_model.simulate(
        init, batches, 'mean', passes=2, micro_mean=True, float16=True,
        dynamic=(4, 1), learning_rate=WORKERS * matrix_model.LEARNING_RATE)
    assert scales == [4, 4, 4, 2, 2, 2, 2, 4], scales
    _assert_steps(workers, batches, [h[0] for h in history], scales,
                  parallel=True)
  finally:
    workers.close()


def async_reference(init, batches, stale, every_n):
  """`([worker-step]{name: value}, [worker-step] scale)`: worker 0's step,
  then worker 1's, each applying its towers' mean unless one of them is
  not finite, and each moving the one shared scale (from 4) by the
  schedule."""
  shared = dict((k, np.asarray(v, np.float64)) for k, v in init.items())
  read = [shared] * WORKERS
  scale, good = 4.0, 0
  history, scales = [], []
  for step_batches in batches:
    for k in range(WORKERS):
      at = read[k] if stale else shared
      read[k] = shared
      grads = [matrix_model.gradients(at, b, True)
               for b in step_batches[k * TOWERS:(k + 1) * TOWERS]]
      finite = all(np.isfinite(v).all() for g in grads for v in g.values())
      scale, good = matrix_model.next_loss_scale(scale, good, finite,
                                                 every_n)
      if finite:
        shared = dict((n, shared[n] - matrix_model.LEARNING_RATE *
                       sum(g[n] for g in grads) / TOWERS) for n in shared)
      history.append(shared)
      scales.append(scale)
  return history, scales


@pytest.mark.parametrize('strategy', ASYNC_STRATEGIES)
def test_asynchronous_workers_skip_their_own_steps(ps_cluster, strategy,
                                                   variable_kind):
  del variable_kind
  batches = _batches(4, ASYNC_INFS)
  workers = _workers(ps_cluster, strategy, len(batches), sync=False)
  try:
    init = workers.runs[0].snapshot()[0][0]
    history, scales = async_reference(init, batches, strategy == 'staged',
                                      EVERY_N)
    # Worker-steps: good, good | good (doubles), inf (halves) | ...
    assert scales == [4, 4, 8, 4, 4, 4, 8, 8], scales
    # Worker 0's step of the round with worker 1's inf applies.
    assert not np.allclose(history[2]['layer1/w1'], history[1]['layer1/w1'])
    np.testing.assert_array_equal(history[3]['layer1/w1'],
                                  history[2]['layer1/w1'])
    for step, step_batches in enumerate(batches):
      for k, run in enumerate(workers.runs):
        run.step(step_batches[k * TOWERS:(k + 1) * TOWERS])
        at = step * WORKERS + k
        for j, other in enumerate(workers.runs):
          copies, scale = other.snapshot()
          matrix_model.assert_close(
              copies[0], history[at], matrix_model.FLOAT16,
              'step %d of worker %d, read by worker %d' % (step, k, j))
          assert scale == scales[at], (step, k, j, scale, scales)
  finally:
    workers.close()


def _state(run):
  """Every variable of the worker's graph but the loss scale's and the
  global step: the model's (and local copies), the optimizer's slots."""
  skip = ('loss_scale', 'loss_scale_normal_steps', 'global_step')
  variables = [v for v in run.model_variables if v.op.name not in skip]
  values = run.sess.run(variables)
  return dict((v.op.name, value) for v, value in zip(variables, values))


@pytest.mark.parametrize('strategy', sorted(SYNC_STRATEGIES))
def test_a_skipped_step_leaves_every_variable_and_slot(ps_cluster,
                                                       strategy):
  """Momentum: an update of a skipped step would move the slot even at a
  zero gradient. Step 1 (inf on worker 1) changes nothing anywhere; steps
  0 and 2 change the weights and the slots."""
  batches = _batches(3, ((1, 3),))
  workers = _workers(ps_cluster, strategy, len(batches), sync=True,
                     optimizer='momentum')
  try:
    before = [_state(run) for run in workers.runs]
    slots = [n for n in before[0] if n.endswith('/Momentum')]
    assert slots, sorted(before[0])
    for step, step_batches in enumerate(batches):
      workers.step(step_batches, parallel=True)
      after = [_state(run) for run in workers.runs]
      for k in range(WORKERS):
        changed = [n for n in before[k]
                   if not np.array_equal(before[k][n], after[k][n])]
        if step == 1:
          assert not changed, (k, changed)
        else:
          assert set(slots) <= set(changed), (step, k, changed)
      before = after
  finally:
    workers.close()


def test_a_checkpoint_restores_the_shared_scale(ps_cluster, tmp_path):
  """Saved by worker 0 after the halving (inf at step 0, then a good
  step: scale 2, count 1), restored by worker 0 alone into a new cluster
  graph: both workers read 2, also after the other one initialised its
  local variables, and the next good steps go on from the count (2, then
  4)."""
  batches = _batches(4, ((0, 3),))
  workers = _workers(ps_cluster, 'parameter_server', len(batches), sync=True)
  try:
    for step_batches in batches[:2]:
      workers.step(step_batches, parallel=True)
    chief = workers.runs[0]
    path = chief.saver.save(chief.sess, str(tmp_path / 'model.ckpt'))
  finally:
    workers.close()
  reader = tf1.train.load_checkpoint(path)
  assert reader.get_tensor('loss_scale') == 2.0
  assert reader.get_tensor('loss_scale_normal_steps') == 1
  workers = _workers(ps_cluster, 'parameter_server', len(batches), sync=True)
  try:
    chief = workers.runs[0]
    for run in workers.runs:
      assert run.loss_scale() == 4.0  # Initialised, not restored yet.
    chief.saver.restore(chief.sess, path)
    # The other worker then initialises its own (local) variables, as a
    # cluster's workers do after the chief restored: the shared scale is
    # not one of them.
    workers.runs[1].sess.run(workers.runs[1].init_ops[1])
    for run in workers.runs:
      assert run.loss_scale() == 2.0
    for step_batches, want in zip(batches[2:], (2.0, 4.0)):
      workers.step(step_batches, parallel=True)
      assert [run.loss_scale() for run in workers.runs] == [want] * WORKERS
  finally:
    workers.close()


def _scale_writes(run):
  """The step's assigns of the loss scale and its count in a worker's
  graph (not their initialisers, nor a saver's restores)."""
  targets = set(v.op.name for v in run.saved.values()
                if v.op.name.startswith('loss_scale'))
  return [op for op in run.graph.get_operations()
          if op.type in ('AssignVariableOp', 'Assign') and
          op.inputs[0].op.name in targets and
          'loss_scale_update' in op.name]


@pytest.mark.parametrize('sync', [True, False], ids=['sync', 'async'])
def test_the_chief_alone_writes_a_synchronous_step_scale(sync):
  """Synchronous: once a step, by worker 0 (every worker computing the
  same values would write them twice); asynchronous: every worker's step
  writes its own outcome."""
  spec = {'ps': ['127.0.0.1:1'], 'worker': ['127.0.0.1:2', '127.0.0.1:3']}
  writes = []
  for k in range(WORKERS):
    host = variable_mgr.ClusterBenchmarkCnn(spec, k, TOWERS,
                                            cross_replica_sync=sync)
    run = in_process.Run('ps_cpu', TOWERS, dtype=tf.float16, host=host,
                         model=matrix_model.GatherModel(),
                         variable_update='parameter_server',
                         **dynamic_options(EVERY_N))
    assert {'loss_scale', 'loss_scale_normal_steps'} <= set(run.saved)
    for name in ('loss_scale', 'loss_scale_normal_steps'):
      variable = [v for v in run.model_variables if v.op.name == name]
      assert len(variable) == 1, (name, variable)
      # Shared on PS 0, which the chief initialises.
      assert variable[0].device.startswith('/job:ps/replica:0/task:0')
    writes.append(len(_scale_writes(run)))
  assert writes == ([2, 0] if sync else [2, 2])


def test_a_lone_synchronous_worker_writes_whatever_its_task_index():
  """One worker: the host's task_index is not read (the interface checks
  it only with several workers), and the worker writes the scale itself
  even where its host says 1: were it left to task 0, the scale would
  never change."""
  spec = {'ps': ['127.0.0.1:1'], 'worker': ['127.0.0.1:2']}
  host = variable_mgr.ClusterBenchmarkCnn(spec, 0, TOWERS,
                                          cross_replica_sync=True)
  host.task_index = 1
  run = in_process.Run('ps_cpu', TOWERS, dtype=tf.float16, host=host,
                       model=matrix_model.GatherModel(),
                       variable_update='parameter_server',
                       **dynamic_options(EVERY_N))
  assert len(_scale_writes(run)) == 2


@pytest.mark.parametrize('sync,workers,meet', [
    (True, 2, True), (False, 2, False), (True, 1, False)],
    ids=['sync-2-workers', 'async-2-workers', 'sync-1-worker'])
def test_workers_meet_after_reads_only_in_synchronous_steps_of_several(
    sync, workers, meet):
  """What a harness reads to leave out its own barrier before the updates:
  true only where the finite flags' exchange waits for every worker's
  reads, in synchronous steps of several workers; an asynchronous worker
  updates without waiting for the others' reads, and a lone worker has
  no other to meet."""
  spec = {'ps': ['127.0.0.1:1'],
          'worker': ['127.0.0.1:%d' % (2 + k) for k in range(workers)]}
  host = variable_mgr.ClusterBenchmarkCnn(spec, 0, TOWERS,
                                          cross_replica_sync=sync)
  run = in_process.Run('ps_cpu', TOWERS, dtype=tf.float16, host=host,
                       model=matrix_model.GatherModel(),
                       variable_update='parameter_server',
                       **dynamic_options(EVERY_N))
  assert run.mgr.workers_meet_after_reads is meet


class _Host(object):
  """A cluster worker's host with only the attributes given."""

  def __init__(self, **attributes):
    base = variable_mgr.ClusterBenchmarkCnn(
        {'ps': ['127.0.0.1:1'], 'worker': ['127.0.0.1:2', '127.0.0.1:3']},
        1, TOWERS)
    for name in ('raw_devices', 'devices', 'cpu_device',
                 'param_server_device', 'local_parameter_device_flag',
                 'num_gpus', 'ps_hosts', 'cluster'):
      setattr(self, name, getattr(base, name))
    self.add_sync_queues_and_barrier = base.add_sync_queues_and_barrier
    for name, value in attributes.items():
      setattr(self, name, value)


@pytest.mark.parametrize('strategy,attributes,match', [
    ('parameter_server', dict(task_index=1, num_workers=2),
     r'auto_loss_scale=True with VariableMgrDistributedFetchFromPS on 2 '
     r'workers: the host _Host lacks cross_replica_sync; .*build the host '
     r'with variable_mgr.ClusterBenchmarkCnn'),
    ('distributed_replicated', dict(num_workers=2),
     r'auto_loss_scale=True with VariableMgrDistributedReplicated on 2 '
     r'workers: the host _Host lacks task_index; '),
    ('parameter_server', dict(task_index=1, num_workers=2,
                              cross_replica_sync='yes'),
     r"cross_replica_sync='yes': the host says with True or False"),
    ('distributed_replicated', dict(task_index=2, num_workers=2),
     r"task_index=2, num_workers=2 but the cluster's worker job has 2 "
     r'tasks: .*task_index be one of 0..1'),
    # num_workers counted wrong either way: the exchange would wait for a
    # worker that never comes, or miss one's finite flag.
    ('distributed_replicated', dict(task_index=0, num_workers=1),
     r"task_index=0, num_workers=1 but the cluster's worker job has 2 "
     r'tasks: num_workers must equal it'),
    ('parameter_server', dict(task_index=0, num_workers=3,
                              cross_replica_sync=True),
     r"task_index=0, num_workers=3 but the cluster's worker job has 2 "
     r'tasks: num_workers must equal it'),
], ids=['no_sync', 'no_task_index', 'sync_not_bool', 'task_out_of_range',
        'fewer_workers', 'more_workers'])
def test_a_host_that_cannot_exchange_is_refused(strategy, attributes, match):
  with tf.Graph().as_default() as graph:
    with pytest.raises(errors.InterfaceError, match=match):
      variable_mgr.create(strategy, _Host(**attributes),
                          **dynamic_options(EVERY_N))
    # A fixed scale, or one worker's own, needs none of them.
    variable_mgr.create(strategy, _Host(**attributes), use_fp16=True,
                        loss_scale=8)
    assert not graph.get_operations()
