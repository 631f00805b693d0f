"""backward_passes_per_step=N: each tower adds N micro-batches' gradients and
the strategy combines and applies once every N steps.

With reduction='mean', N micro-batches of b rows equal one step on the
N x b rows (NumPy on the concatenated batch), in every local strategy, for
ref and resource variables; with 'sum' the micro-batches add up as towers
do. Between two updates no variable changes.
"""

import numpy as np
import pytest
import tensorflow as tf

import graph_as_run
import graph_walk
import options_harness
import variable_mgr
from options_harness import LOCAL_NAMES
from options_harness import Run
from options_harness import VARIABLES
from variable_mgr import accumulation
from variable_mgr import errors

tf1 = tf.compat.v1

NUM_TOWERS = 2
ROWS = 4
CYCLES = 2
FLOAT32 = dict(rtol=2e-5, atol=2e-6)
FLOAT16 = dict(rtol=3e-3, atol=3e-3)


def _concatenated(micro_batches):
  """`[tower]` batches of every micro-batch's rows, in order."""
  return [(np.concatenate([m[t][0] for m in micro_batches]),
           np.concatenate([m[t][1] for m in micro_batches]))
          for t in range(len(micro_batches[0]))]


def _reference(run, init, micro, passes, float16=False):
  """`[cycle][tower]` NumPy values: one step a cycle on the concatenated
  batch; micro-batches weigh as towers with 'sum'. Staged reads: the first
  micro-batch of a cycle sees the weights before the last update (its put
  ran before that update), the others the current weights."""
  towers = [dict((k, np.asarray(v, np.float64)) for k, v in init.items())
            for _ in range(NUM_TOWERS)]
  previous = towers[0]
  history = []
  for c in range(CYCLES):
    cycle = micro[c * passes:(c + 1) * passes]
    if run.combine == 'none':
      new = []
      for t, params in enumerate(towers):
        g = options_harness.gradients(params, _concatenated(cycle)[t],
                                      float16)
        new.append(dict((k, params[k] - options_harness.LEARNING_RATE * g[k])
                        for k in VARIABLES))
      towers = new
    else:
      current = towers[0]
      grads = []
      for m, step_batches in enumerate(cycle):
        at = previous if (run.stale and m == 0) else current
        grads.extend(options_harness.gradients(at, b, float16)
                     for b in step_batches)
      new = dict(
          (k, current[k] - options_harness.LEARNING_RATE *
           options_harness.combine_grads([g[k] for g in grads], run.combine))
          for k in VARIABLES)
      previous = current
      towers = [new] * NUM_TOWERS
    history.append(towers)
  return history


def _check(run, passes, float16=False, tolerance=FLOAT32):
  init = run.values(0)
  micro = options_harness.make_batches(NUM_TOWERS, CYCLES * passes,
                                       rows=ROWS)
  history = _reference(run, init, micro, passes, float16)
  before = run.all_values()
  for step, step_batches in enumerate(micro):
    run.step(step_batches)
    cycle, position = divmod(step, passes)
    got = run.all_values()
    if position < passes - 1:
      for t in range(len(got)):
        for k in VARIABLES:
          np.testing.assert_array_equal(
              got[t][k], before[t][k],
              err_msg='micro-step %d moved %s' % (step, k))
      continue
    for t, tower in enumerate(run.towers):
      for k in VARIABLES:
        np.testing.assert_allclose(
            got[t][k], history[cycle][tower][k],
            err_msg='%s N=%d cycle %d tower %d %s' %
            (run.name, passes, cycle, tower, k), **tolerance)
    before = got


@pytest.mark.parametrize('passes', [1, 2, 3])
@pytest.mark.parametrize('name', LOCAL_NAMES)
def test_n_micro_batches_equal_one_larger_batch(name, passes, variable_kind):
  options = {} if name == 'independent' else dict(reduction='mean')
  run = Run(name, NUM_TOWERS, batch=ROWS, backward_passes_per_step=passes,
            **options)
  try:
    _check(run, passes)
  finally:
    run.close()


def test_sum_adds_micro_batches_as_towers(variable_kind):
  run = Run('replicated', NUM_TOWERS, batch=ROWS, backward_passes_per_step=2)
  try:
    assert run.combine == 'sum'
    _check(run, 2)
  finally:
    run.close()


def test_one_larger_batch_in_tensorflow_equals_the_micro_batches():
  """The same, against TensorFlow itself: replicated (mean) with momentum
  on 2 x 4 rows equals the run on 8 rows without accumulation."""
  micro = options_harness.make_batches(NUM_TOWERS, 4, rows=ROWS)
  small = Run('replicated', NUM_TOWERS, batch=ROWS, optimizer='momentum',
              backward_passes_per_step=2, reduction='mean')
  large = Run('replicated', NUM_TOWERS, batch=2 * ROWS, optimizer='momentum',
              reduction='mean')
  try:
    for k in VARIABLES:
      np.testing.assert_array_equal(small.values(0)[k], large.values(0)[k])
    for cycle in range(2):
      small.step(micro[2 * cycle])
      small.step(micro[2 * cycle + 1])
      large.step(_concatenated(micro[2 * cycle:2 * cycle + 2]))
      for t in range(NUM_TOWERS):
        for k in VARIABLES:
          np.testing.assert_allclose(small.values(t)[k], large.values(t)[k],
                                     **FLOAT32)
  finally:
    small.close()
    large.close()


def test_float16_gradients_add_up_in_float32(variable_kind):
  """Float16 variables (no use_fp16): the accumulators are float32 and the
  result is NumPy's within float16 tolerance."""
  run = Run('replicated', NUM_TOWERS, dtype=tf.float16, batch=ROWS,
            backward_passes_per_step=2, reduction='mean')
  try:
    accumulators = [v for v in run.graph.get_collection(
        tf1.GraphKeys.LOCAL_VARIABLES) if 'accumulator_' in v.op.name]
    assert len(accumulators) == NUM_TOWERS * len(VARIABLES)
    assert all(v.dtype.base_dtype == tf.float32 for v in accumulators)
    _check(run, 2, float16=True, tolerance=FLOAT16)
  finally:
    run.close()


def test_with_use_fp16_an_inf_in_one_micro_batch_skips_its_cycle(
    variable_kind):
  """An inf in the first micro-batch of a cycle: the cycle applies nothing,
  the scale halves once, at the cycle's end; the next cycle applies."""
  run = Run('replicated', NUM_TOWERS, dtype=tf.float16, batch=ROWS,
            backward_passes_per_step=2, reduction='mean', use_fp16=True,
            auto_loss_scale=True)
  try:
    before = run.all_values()
    micro = options_harness.make_batches(NUM_TOWERS, 2, rows=ROWS)
    run.step(options_harness.with_inf(micro[0], 1))
    assert run.loss_scale() == 128.0
    run.step(micro[1])
    assert run.loss_scale() == 64.0
    for got, want in zip(run.all_values(), before):
      for k in VARIABLES:
        np.testing.assert_array_equal(got[k], want[k])
    init = run.values(0)
    history = _reference(run, init, micro + micro, 2, float16=True)
    run.step(micro[0])
    run.step(micro[1])
    for t in run.towers:
      for k in VARIABLES:
        np.testing.assert_allclose(run.values(t)[k], history[0][t][k],
                                   **FLOAT16)
  finally:
    run.close()


def test_micro_steps_run_no_exchange_and_no_update():
  """Read off the executed graph: the copy all-reduce's sums and the
  updates run on the last micro-step of a cycle only."""
  run = Run('replicated', NUM_TOWERS, batch=ROWS, backward_passes_per_step=3)
  try:
    micro = options_harness.make_batches(NUM_TOWERS, 3, rows=ROWS)
    feeds = {}
    for (x, y), (bx, by) in zip(run.inputs, micro[0]):
      feeds[x], feeds[y] = bx, by
    executed = []
    for _ in range(3):
      options = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)
      metadata = tf1.RunMetadata()
      run.sess.run(run.train_op, feeds, options=options,
                   run_metadata=metadata)
      names = set(node.node_name for dev in metadata.step_stats.dev_stats
                  for node in dev.node_stats)
      sums = set(op.name for op, _ in graph_walk.sums(run.graph))
      applies = set(op.name for op in run.graph.get_operations()
                    if op.type in ('ApplyGradientDescent',
                                   'ResourceApplyGradientDescent'))
      executed.append({'sum': names & sums, 'apply': names & applies})
    assert [len(e['apply']) for e in executed] == [
        0, 0, NUM_TOWERS * len(VARIABLES)]
    assert [len(e['sum']) for e in executed] == [0, 0, len(VARIABLES)]
  finally:
    run.close()


@pytest.mark.parametrize('value', [0, -1, 1.5, True, '2'])
def test_bad_pass_counts_are_refused_before_any_graph(value):
  with tf.Graph().as_default() as graph:
    host = variable_mgr.LocalBenchmarkCnn(2)
    with pytest.raises(errors.InvalidOptionError,
                       match=r'backward_passes_per_step=%s: .*an integer of '
                             r'at least 1' % repr(value).replace('.', r'\.')):
      variable_mgr.create('replicated', host, backward_passes_per_step=value)
    assert not graph.get_operations()


@pytest.mark.parametrize('consistency,passes', [('strong', 2),
                                                ('relaxed', 1)])
def test_benchmark_wires_accumulation_and_relaxed(consistency, passes):
  """The benchmark's graph: the first step changes no variable (a
  micro-step, or the first relaxed step), the second does."""
  from variable_mgr.benchmark.training import harness
  from variable_mgr.benchmark.runs import local_run
  from variable_mgr.benchmark.training import run_config
  config = run_config.BenchmarkConfig(
      model='trivial', num_gpus=2, batch_size=4,
      backward_passes_per_step=passes,
      variable_consistency=consistency).resolved()
  host, session_config = local_run.make_host(config)
  g = harness.build_training_graph(config, host)
  assert g.mgr.training_options.backward_passes_per_step == passes
  assert g.mgr.training_options.variable_consistency == consistency
  with g.graph.as_default():
    weights = [v for v in tf1.global_variables() if v.trainable]
  with tf1.Session(graph=g.graph, config=session_config) as sess:
    sess.run(g.init_op)
    sess.run(g.post_init_op or [])
    start = sess.run(weights)
    sess.run(g.train_op)
    after_one = sess.run(weights)
    sess.run(g.train_op)
    after_two = sess.run(weights)
    assert sess.run(g.global_step) == 2
  for a, b, c in zip(start, after_one, after_two):
    np.testing.assert_array_equal(a, b)
  assert any(np.abs(a - c).max() > 0 for a, c in zip(start, after_two))


def test_collective_workers_accumulate(tmp_path):
  """collective_all_reduce, 2 worker processes of 2 towers, N=2: each
  cycle's update is the mean over the 4 towers and 2 micro-batches; the
  micro-steps change nothing."""
  import options_worker
  towers, workers = 2, 2
  arrays = options_harness.run_collective_workers(tmp_path, 'accumulate',
                                                  workers, towers)
  init = options_harness.collective_values(arrays[0], 'initial', 0)
  params = dict((k, np.asarray(v, np.float64)) for k, v in init.items())
  for step in range(4):
    if step % 2 == 1:
      grads = [options_harness.gradients(params, options_worker.batch(g, s))
               for s in (step - 1, step) for g in range(workers * towers)]
      params = dict((k, params[k] - options_worker.LEARNING_RATE *
                     sum(g[k] for g in grads) / len(grads))
                    for k in VARIABLES)
    for k, worker in enumerate(arrays):
      for d in range(towers):
        got = options_harness.collective_values(worker, 'step%d' % step, d)
        for name in VARIABLES:
          np.testing.assert_allclose(
              got[name], params[name], err_msg='worker %d tower %d step %d '
              '%s' % (k, d, step, name), **FLOAT32)


def test_nccl_graph_exchanges_the_gated_sums():
  """NCCL (GPU towers, graph only on CPU): every NcclAllReduce input is a
  cycle's sum passed through a Switch on the last-micro-step predicate."""
  run = Run('replicated', NUM_TOWERS, batch=ROWS, use_nccl=True,
            host_args=dict(device='gpu'), backward_passes_per_step=4,
            reduction='mean', session=False)
  nccl = [op for op in run.graph.get_operations()
          if op.type == 'NcclAllReduce']
  assert len(nccl) == NUM_TOWERS * len(VARIABLES)
  go = run.state.step_control.go
  for op in nccl:
    source = op.inputs[0].op
    while source.type in ('Identity', 'Cast'):
      source = source.inputs[0].op
    assert source.type == 'Switch' and source.inputs[1] is go, op.name


def test_every_read_of_the_accumulation_state_runs_before_its_write(
    variable_kind):
  """With float16 towers and a dynamic scale: in the graph as run (after
  grappler), the counter, each accumulator, the loss scale and its count
  are read and written in a step, every read before the write (see
  variable_mgr.step_state)."""
  run = Run('replicated', NUM_TOWERS, dtype=tf.float16, use_fp16=True,
            auto_loss_scale=True, backward_passes_per_step=2, batch=ROWS)
  try:
    feeds = {}
    batches = options_harness.make_batches(NUM_TOWERS, 1, rows=ROWS)[0]
    for (x, y), (bx, by) in zip(run.inputs, batches):
      feeds[x], feeds[y] = bx, by
    graph = graph_as_run.GraphAsRun(run.sess, run.train_op, feeds)
    names = [v.op.name for v in
             run.graph.get_collection(tf1.GraphKeys.LOCAL_VARIABLES)]
    assert len(names) == NUM_TOWERS * len(VARIABLES) + 3, names
    for name in names:
      reads, writes = graph.reads_and_writes(name)
      assert reads and writes, (name, reads, writes)
      assert not graph.unordered_reads(name), name
  finally:
    run.close()


@pytest.mark.parametrize('passes', [2, 3, 5])
def test_cycle_counter_counts_the_micro_steps_of_a_cycle(passes):
  """The counter holds the micro-steps done in the current cycle (step s
  leaves s + 1 mod N, as a checkpoint taken then records it), and
  `is_last` is true on steps N-1, 2N-1, ... only."""
  graph = tf.Graph()
  with graph.as_default():
    is_last, update = accumulation.cycle_counter(passes, '/cpu:0')
    counter = [v for v in tf1.local_variables()
               if 'accumulation_step' in v.op.name]
    assert len(counter) == 1
    init = tf1.local_variables_initializer()
  with tf1.Session(graph=graph) as sess:
    sess.run(init)
    for step in range(2 * passes + 1):
      last, _ = sess.run([is_last, update])
      assert last == (step % passes == passes - 1), (step, last)
      assert sess.run(counter[0]) == (step + 1) % passes, step
