"""variable_consistency='relaxed' (replicated): step t applies the
all-reduced gradients of step t-1, so the all-reduce needs nothing of step
t and can run under its compute; the first step applies nothing.

NumPy's reference: w[1] = w[0], w[t+1] = w[t] - lr * G(w[t-1], batch t-1)
(steps counted from 0, G the all-reduced gradient), for every all-reduce
of replicated, ref and resource variables.
"""

import time

import numpy as np
import pytest
import tensorflow as tf

import graph_as_run
import options_harness
import variable_mgr
from options_harness import Run
from options_harness import VARIABLES
from variable_mgr import accumulation
from variable_mgr import compat
from variable_mgr import errors
from variable_mgr import interface
from variable_mgr import mixed_precision
from variable_mgr import step_state

tf1 = tf.compat.v1

NUM_TOWERS = 3
STEPS = 4
FLOAT32 = dict(rtol=2e-5, atol=2e-6)
FLOAT16 = dict(rtol=3e-3, atol=3e-3)
REPLICATED = [n for n in options_harness.LOCAL_NAMES
              if n.startswith('replicated')]
DELAY_SECONDS = 0.05


def deferred_reference(init, batches, combine, float16=False, skipped=()):
  """`[step]{name: value}`: each step applies the previous step's combined
  gradient (the first applies nothing; a step after a `skipped` one neither:
  the gradient it would apply holds an inf)."""
  params = dict((k, np.asarray(v, np.float64)) for k, v in init.items())
  pending = None
  history = []
  for step, step_batches in enumerate(batches):
    grads = [options_harness.gradients(params, b, float16)
             for b in step_batches]
    if pending is not None and step - 1 not in skipped:
      params = dict((k, params[k] - options_harness.LEARNING_RATE *
                     pending[k]) for k in VARIABLES)
    pending = dict((k, options_harness.combine_grads(
        [g[k] for g in grads], combine)) for k in VARIABLES)
    history.append(params)
  return history


def _check(run, batches, history, tolerance=FLOAT32):
  for step, step_batches in enumerate(batches):
    run.step(step_batches)
    for t in run.towers:
      got = run.values(t)
      for k in VARIABLES:
        np.testing.assert_allclose(got[k], history[step][k],
                                   err_msg='%s step %d tower %d %s' %
                                   (run.name, step, t, k), **tolerance)


@pytest.mark.parametrize('name', REPLICATED)
def test_step_t_applies_the_gradients_of_step_t_minus_1(name, variable_kind):
  run = Run(name, NUM_TOWERS, variable_consistency='relaxed')
  try:
    init = run.values(0)
    batches = options_harness.make_batches(NUM_TOWERS, STEPS)
    history = deferred_reference(init, batches, run.combine)
    for k in VARIABLES:  # The first step applies nothing.
      np.testing.assert_array_equal(history[0][k], init[k])
    _check(run, batches, history)
  finally:
    run.close()


def test_the_deferred_reference_differs_from_synchronous_sgd():
  batches = options_harness.make_batches(2, STEPS)
  rng = np.random.RandomState(2)
  init = dict((k, rng.randn(*s) * 0.5) for k, s in zip(
      VARIABLES, [(5, 4), (4,), (4, 3), (3,)]))
  deferred = deferred_reference(init, batches, 'sum')[-1]
  sync = options_harness.reference(init, batches, 'sum')[-1][0]
  assert max(np.abs(deferred[k] - sync[k]).max() for k in VARIABLES) > 1e-2


def test_mean(variable_kind):
  run = Run('replicated', NUM_TOWERS, variable_consistency='relaxed',
            reduction='mean')
  try:
    init = run.values(0)
    batches = options_harness.make_batches(NUM_TOWERS, STEPS)
    _check(run, batches, deferred_reference(init, batches, 'mean'))
  finally:
    run.close()


def _dynamic_scale_run(session=True):
  return Run('replicated', NUM_TOWERS, dtype=tf.float16, use_fp16=True,
             auto_loss_scale=True, variable_consistency='relaxed',
             session=session)


@pytest.mark.filterwarnings('ignore:invalid value:RuntimeWarning')
def test_with_a_dynamic_loss_scale_the_step_after_an_inf_is_skipped(
    variable_kind):
  """An inf at step 1: step 2 (which would apply it) changes nothing and the
  scale halves then; steps 3.. apply as NumPy says. (With ref state this
  failed about one run in eight on TF 2.21: see the graph-as-run tests
  below and benchmarks/stress_relaxed_race.py.)"""
  run = _dynamic_scale_run()
  try:
    init = run.values(0)
    batches = options_harness.make_batches(NUM_TOWERS, 5)
    batches[1] = options_harness.with_inf(batches[1], 2)
    history = deferred_reference(init, batches, run.combine, float16=True,
                                 skipped={1})
    scales = []
    for step, step_batches in enumerate(batches):
      run.step(step_batches)
      scales.append(run.loss_scale())
      for t in run.towers:
        got = run.values(t)
        for k in VARIABLES:
          np.testing.assert_allclose(got[k], history[step][k],
                                     err_msg='step %d %s' % (step, k),
                                     **FLOAT16)
    assert scales == [128.0, 128.0, 64.0, 64.0, 64.0]
  finally:
    run.close()


def _step_as_run(run):
  """One step of `run`, as TensorFlow ran it (see graph_as_run)."""
  feeds = {}
  batches = options_harness.make_batches(NUM_TOWERS, 1)[0]
  for (x, y), (bx, by) in zip(run.inputs, batches):
    feeds[x], feeds[y] = bx, by
  return graph_as_run.GraphAsRun(run.sess, run.train_op, feeds)


def _state_names(run):
  """The manager's step state: here every local variable of the graph (the
  deferred gradients, their flag, the loss scale and its count)."""
  names = [v.op.name for v in
           run.graph.get_collection(tf1.GraphKeys.LOCAL_VARIABLES)]
  assert len(names) == NUM_TOWERS * len(VARIABLES) + 3, names
  return names


def test_every_read_of_the_step_state_runs_before_its_write(variable_kind):
  """In the graph as run (after grappler), each state variable is read and
  written in the step, and every op that reads it runs before the write."""
  run = _dynamic_scale_run()
  try:
    graph = _step_as_run(run)
    for name in _state_names(run):
      reads, writes = graph.reads_and_writes(name)
      assert reads and writes, (name, reads, writes)
      assert not graph.unordered_reads(name), name
  finally:
    run.close()


@pytest.mark.skipif(compat.major_version() < 2,
                    reason='TF 1.15.5\'s optimiser moves no op above a '
                           'DeepCopy: ref state does not race there')
def test_with_ref_state_the_optimiser_reads_past_the_snapshot(monkeypatch):
  """Why `step_state` makes resource variables: with ref state variables,
  grappler rebuilds the finite check of each deferred gradient and the
  float16 cast of the loss scale above their DeepCopy snapshot, on the
  variable itself, and nothing orders those reads before the writes."""
  monkeypatch.setattr(step_state, 'RESOURCE_STATE', False)
  resource_default = tf1.resource_variables_enabled()
  tf1.disable_resource_variables()
  try:
    run = _dynamic_scale_run()
  finally:
    if resource_default:
      tf1.enable_resource_variables()
  try:
    graph = _step_as_run(run)
    unordered = dict((name, graph.unordered_reads(name))
                     for name in _state_names(run))
    deferred = [n for n in unordered if '/deferred_v' in n]
    assert all(graph.nodes[r].op == 'IsFinite'
               for n in deferred for r, _ in unordered[n]), unordered
    assert all(unordered[n] for n in deferred), unordered
    assert any(graph.nodes[r].op == 'Cast'
               for r, _ in unordered[mixed_precision.LOSS_SCALE_NAME])
  finally:
    run.close()


def test_the_state_writes_wait_for_nothing_of_the_exchange(variable_kind):
  """Resource state adds no edge: in the graph as run, no write of the step
  state waits for the finite check, the all-reduce or an update, and no
  update waits for a write of the state."""
  run = _dynamic_scale_run()
  try:
    graph = _step_as_run(run)
    writes = [w for name in _state_names(run)
              for w in graph.reads_and_writes(name)[1]]
    deferred_writes = [w for w in writes if '/deferred_tower_' in w]
    assert len(deferred_writes) == NUM_TOWERS * len(VARIABLES)
    def exchange(name):  # The finite check, the all-reduce, an update.
      op = graph.nodes[name].op
      return (op == 'IsFinite' or compat.SUM_SCOPE in name or
              op.endswith('ApplyGradientDescent'))

    assert any(compat.SUM_SCOPE in name for name in graph.nodes)
    for w in deferred_writes:
      waited = [a for a in graph.ancestors(w) if exchange(a)]
      assert not waited, (w, waited)
    updates = [n for n, node in graph.nodes.items()
               if node.op.endswith('ApplyGradientDescent')]
    assert len(updates) == NUM_TOWERS * len(VARIABLES)
    for u in updates:
      assert not set(writes) & graph.ancestors(u), u
  finally:
    run.close()


def test_the_all_reduce_needs_nothing_of_the_step():
  """NCCL graph (GPU towers, built on CPU): no NcclAllReduce has a tower's
  forward or backward op among its ancestors."""
  run = Run('replicated', 2, use_nccl=True, host_args=dict(device='gpu'),
            variable_consistency='relaxed', session=False)
  nccl = [op for op in run.graph.get_operations()
          if op.type == 'NcclAllReduce']
  assert len(nccl) == 2 * len(VARIABLES)
  seen = set()
  stack = list(nccl)
  while stack:
    op = stack.pop()
    for parent in [t.op for t in op.inputs] + list(op.control_inputs):
      if parent not in seen:
        seen.add(parent)
        stack.append(parent)
  tower_ops = [op for op in seen if '/tower_' in op.name]
  assert not tower_ops, [op.name for op in tower_ops][:5]


@pytest.fixture()
def late_deferred_reads(monkeypatch):
  """The read of each deferred gradient waits DELAY_SECONDS (a sleeping
  op), on a session with inter-op threads to spare; this step's gradient is
  ready long before."""
  original_config = interface.BenchmarkCnnLike.session_config

  def session_config(self):
    config = original_config(self)
    config.inter_op_parallelism_threads = 8
    return config

  monkeypatch.setattr(interface.BenchmarkCnnLike, 'session_config',
                      session_config)
  original = accumulation.compat.snapshot

  def sleep():
    time.sleep(DELAY_SECONDS)
    return np.float32(0)

  def late_snapshot(var):
    if 'deferred_v' not in var.op.name:
      return original(var)
    delay = tf1.py_func(sleep, [], tf.float32, stateful=True)
    with tf1.control_dependencies([delay]):
      return tf.identity(original(var))

  monkeypatch.setattr(accumulation.compat, 'snapshot', late_snapshot)


def _late_run():
  run = Run('replicated', 2, variable_consistency='relaxed')
  init = run.values(0)
  batches = options_harness.make_batches(2, STEPS)
  return run, batches, deferred_reference(init, batches, 'sum')


@pytest.mark.usefixtures('late_deferred_reads')
def test_a_late_read_of_the_deferred_gradient_is_ordered(variable_kind):
  run, batches, history = _late_run()
  try:
    _check(run, batches, history)
  finally:
    run.close()


@pytest.mark.usefixtures('late_deferred_reads')
def test_without_the_ordering_a_late_read_sees_this_step(monkeypatch,
                                                         variable_kind):
  """The control edge of `accumulation.defer` is needed: without it the
  late read hands over this step's gradient, and the run is no longer one
  step stale."""
  monkeypatch.setattr(accumulation, 'ORDER_DEFERRED_READS', False)
  run, batches, history = _late_run()
  try:
    with pytest.raises(AssertionError):
      _check(run, batches, history)
  finally:
    run.close()


@pytest.mark.parametrize('variable_update,options', [
    ('parameter_server', {}),
    ('parameter_server', dict(staged_vars=True)),
    ('independent', {}),
])
def test_relaxed_outside_replicated_is_refused(variable_update, options):
  with tf.Graph().as_default() as graph:
    host = variable_mgr.LocalBenchmarkCnn(2)
    with pytest.raises(errors.IncompatibleOptionsError,
                       match=r"variable_consistency='relaxed' with "
                             r"VariableMgr\w+: .*use replicated, or "
                             r"parameter_server with staged_vars=True"):
      variable_mgr.create(variable_update, host,
                          variable_consistency='relaxed', **options)
    assert not graph.get_operations()


def test_relaxed_with_accumulation_is_refused():
  with tf.Graph().as_default() as graph:
    host = variable_mgr.LocalBenchmarkCnn(2)
    with pytest.raises(errors.IncompatibleOptionsError,
                       match=r"variable_consistency='relaxed' with "
                             r"backward_passes_per_step=2: .*use one of "
                             r"them"):
      variable_mgr.create('replicated', host, variable_consistency='relaxed',
                          backward_passes_per_step=2)
    assert not graph.get_operations()


def test_an_unknown_consistency_is_refused():
  with tf.Graph().as_default():
    host = variable_mgr.LocalBenchmarkCnn(2)
    with pytest.raises(errors.InvalidOptionError,
                       match=r"variable_consistency='weak': choose 'strong' "
                             r"or 'relaxed'"):
      variable_mgr.create('replicated', host, variable_consistency='weak')
