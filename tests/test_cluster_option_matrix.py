"""Training options on clusters of 2 workers of 2 towers inside this process
(gRPC servers, one graph and session a worker), on tests/matrix_model.py's
model, against NumPy.

- parameter_server and staged: asynchronous workers; the test runs worker 0's
  step, then worker 1's, so NumPy applies each worker's mean in that order
  (a staged worker's gradients are taken at what its previous step read).
- distributed_replicated: synchronous; every worker adds its towers' mean
  to the masters: one step of the mean over the 4 towers at twice the rate.
- collective_all_reduce: synchronous; the mean over the 4 towers. Its
  dynamic loss scale skips a step for an inf on another worker.

Where a strategy refuses an option (relaxed consistency outside
replicated) the refusal is asserted. The dynamic loss scale of the PS
strategies, synchronous and asynchronous: tests/test_cluster_loss_scale.py.
"""

import threading

import numpy as np
import pytest
import tensorflow as tf

import matrix_model
import variable_mgr
import worker_processes
from matrix_model import Case
from matrix_model import dynamic_options
from options_harness import Run
from variable_mgr import errors
from variable_mgr.benchmark.runs import in_process
from variable_mgr.strategies import collective_all_reduce

tf1 = tf.compat.v1

WORKERS, TOWERS = 2, 2
TIMEOUT_MS = 30000
PS_STRATEGIES = {'parameter_server': dict(variable_update='parameter_server'),
                 'staged': dict(variable_update='parameter_server',
                                staged_vars=True),
                 'distributed_replicated': dict(
                     variable_update='distributed_replicated')}
PS_CASES = {
    'fp16_fixed': Case(3, use_fp16=True, loss_scale=8),
    'accumulate3': Case(6, backward_passes_per_step=3),
}
COLLECTIVE_CASES = {
    # The inf on worker 1's last tower.
    'fp16_dynamic': Case(6, (1, 3), **dynamic_options(2)),
    # ... in the first micro-batch of the second cycle.
    'accumulate2_fp16_dynamic': Case(8, (2, 3), backward_passes_per_step=2,
                                     **dynamic_options(1)),
}


def _config():
  return collective_all_reduce.set_collective_group_leader(
      tf1.ConfigProto(device_count={'CPU': TOWERS},
                      operation_timeout_in_ms=TIMEOUT_MS))


def start_cluster(num_ps):
  """`(spec, worker targets)` of `num_ps` PS tasks and WORKERS workers in
  this process (servers live until it exits)."""
  spec, servers = in_process.start_servers(
      [('ps', num_ps), ('worker', WORKERS)] if num_ps else
      [('worker', WORKERS)],
      lambda job, _: (tf1.ConfigProto(device_count={'CPU': 1})
                      if job == 'ps' else _config()))
  return spec, [w.target for w in servers['worker']]


@pytest.fixture(scope='module')
def ps_cluster():
  return start_cluster(1)


def _in_parallel(functions):
  """Runs `functions` in threads (synchronous workers wait for each other)
  and raises the first error."""
  errors_ = []

  def call(function):
    try:
      function()
    except Exception as e:  # pylint: disable=broad-except
      errors_.append(e)

  threads = [threading.Thread(target=call, args=(f,)) for f in functions]
  for t in threads:
    t.start()
  for t in threads:
    t.join(TIMEOUT_MS / 1000.0 + 10)
  assert not any(t.is_alive() for t in threads), 'a worker hangs'
  if errors_:
    raise errors_[0]


class Workers(object):
  """One `options_harness.Run` a worker of the cluster `spec`, each in a
  session on its own server; `host_args`: more `ClusterBenchmarkCnn`
  arguments, `run_args` more `Run` arguments."""

  def __init__(self, spec, targets, case, create, host_args=None,
               run_args=None):
    dtype = tf.float16 if case.float16 else tf.float32
    self.runs = []
    for k, target in enumerate(targets):
      if 'ps' in spec:
        host = variable_mgr.ClusterBenchmarkCnn(spec, k, TOWERS,
                                                **(host_args or {}))
      else:
        host = worker_processes.WorkerHost(tf1.train.ClusterSpec(spec), k,
                                         TOWERS)
      run = Run('ps_cpu', TOWERS, dtype=dtype, host=host,
                model=matrix_model.GatherModel(),
                **dict(dict(create, **case.create), **(run_args or {})))
      run.sess = tf1.Session(target, graph=run.graph, config=_config())
      self.runs.append(run)
    # Worker 0 initialises the shared (PS) variables last, so that they
    # hold its values; no step has run yet.
    for run in reversed(self.runs):
      run.sess.run(run.init_ops)
    _in_parallel([lambda r=r: r.sess.run(r.post_init_ops)
                  for r in self.runs])
    for run in self.runs:
      if run.put_ops:
        run.sess.run(run.put_ops)

  def step(self, step_batches, parallel):
    """One step of every worker: `step_batches[k * TOWERS + d]` feeds
    worker k's tower d."""
    steps = [lambda r=r, k=k: r.step(step_batches[k * TOWERS:
                                                  (k + 1) * TOWERS])
             for k, r in enumerate(self.runs)]
    if parallel:
      _in_parallel(steps)
    else:
      for step in steps:
        step()

  def close(self):
    for run in self.runs:
      run.sess.close()


def async_reference(init, batches, stale, passes, micro_mean, float16):
  """`[step]{name: value}`: worker 0's step, then worker 1's, each applying
  the mean of its towers' gradients (of its cycle's micro-batches with
  accumulation) to the shared variables; staged: at what the worker's
  previous step read (its warm-up's for step 0)."""
  shared = dict((k, np.asarray(v, np.float64)) for k, v in init.items())
  read = [shared] * WORKERS
  sums = [None] * WORKERS
  history = []
  for step, step_batches in enumerate(batches):
    for k in range(WORKERS):
      at = read[k] if stale else shared
      grads = [matrix_model.gradients(at, b, float16)
               for b in step_batches[k * TOWERS:(k + 1) * TOWERS]]
      read[k] = shared
      sums[k] = grads if sums[k] is None else [
          dict((n, s[n] + g[n]) for n in g) for s, g in zip(sums[k], grads)]
      if (step + 1) % passes:
        continue
      handed = sums[k]
      if micro_mean:
        handed = [dict((n, v / passes) for n, v in g.items()) for g in handed]
      sums[k] = None
      shared = dict((n, shared[n] - matrix_model.LEARNING_RATE *
                     sum(g[n] for g in handed) / TOWERS) for n in shared)
    history.append(shared)
  return history


def _check(workers, case, history, scales, parallel):
  tolerance = (matrix_model.FLOAT16 if case.float16 else
               matrix_model.FLOAT32)
  for step, step_batches in enumerate(case.batches(WORKERS * TOWERS)):
    workers.step(step_batches, parallel)
    for k, run in enumerate(workers.runs):
      copies, scale = run.snapshot()
      for t, got in zip(run.towers, copies):
        matrix_model.assert_close(got, history[step], tolerance,
                                  'step %d worker %d tower %d' % (step, k, t))
      if case.float16:
        want = scales[step] if case.dynamic else case.create['loss_scale']
        assert scale == want, (step, k, scale, scales)
  final = workers.runs[-1].snapshot()[0][0]
  np.testing.assert_array_equal(final[matrix_model.TABLE][-1],
                                history[0][matrix_model.TABLE][-1])


@pytest.mark.parametrize('case', sorted(PS_CASES))
@pytest.mark.parametrize('strategy', sorted(PS_STRATEGIES))
def test_ps_strategies_match_numpy(ps_cluster, strategy, case):
  spec, targets = ps_cluster
  tf1.Session.reset(targets[0])  # No variable or area of an earlier graph.
  case = PS_CASES[case]
  workers = Workers(spec, targets, case, PS_STRATEGIES[strategy])
  try:
    init = workers.runs[0].snapshot()[0][0]
    batches = case.batches(WORKERS * TOWERS)
    passes = case.create.get('backward_passes_per_step', 1)
    if strategy == 'distributed_replicated':
      history = [h[0] for h in matrix_model.simulate(
          init, batches, 'mean', passes=passes, micro_mean=True,
          float16=case.float16,
          learning_rate=WORKERS * matrix_model.LEARNING_RATE)[0]]
    else:
      history = async_reference(init, batches, strategy == 'staged', passes,
                                True, case.float16)
    _check(workers, case, history, None,
           parallel=strategy == 'distributed_replicated')
  finally:
    workers.close()


@pytest.mark.parametrize('case', sorted(COLLECTIVE_CASES))
def test_collective_all_reduce_matches_numpy(case):
  # Collective ops keep a group's members in the servers for good: a
  # cluster a graph. No PS task: on TensorFlow 1.15 an op without a device
  # (the test's global step) would go there, and two workers' steps with
  # collectives touching one task abort each other ("Cleanup <step id>").
  spec, targets = start_cluster(0)
  case = COLLECTIVE_CASES[case]
  workers = Workers(spec, targets, case,
                    dict(variable_update='collective_all_reduce'))
  try:
    init = workers.runs[0].snapshot()[0][0]
    batches = case.batches(WORKERS * TOWERS)
    history, scales = matrix_model.simulate(
        init, batches, 'mean',
        passes=case.create.get('backward_passes_per_step', 1),
        micro_mean=True, float16=True, dynamic=case.dynamic)
    changes = np.diff([case.dynamic[0]] + scales)
    assert (changes < 0).any() and (changes > 0).any(), scales
    _check(workers, case, [h[0] for h in history], scales, parallel=True)
  finally:
    workers.close()


def _refusal_host():
  spec = {'ps': ['127.0.0.1:1'], 'worker': ['127.0.0.1:2', '127.0.0.1:3']}
  return variable_mgr.ClusterBenchmarkCnn(spec, 0, TOWERS)


@pytest.mark.parametrize('strategy', sorted(PS_STRATEGIES) +
                         ['collective_all_reduce'])
def test_relaxed_on_a_cluster_is_refused(strategy):
  create = PS_STRATEGIES.get(strategy, dict(variable_update=strategy))
  with tf.Graph().as_default() as graph:
    with pytest.raises(errors.IncompatibleOptionsError,
                       match=r"variable_consistency='relaxed' with \w+: "
                             r'relaxed consistency defers the all-reduce of '
                             r'replicated'):
      variable_mgr.create(benchmark_cnn=_refusal_host(),
                          variable_consistency='relaxed', **create)
    assert not graph.get_operations()
