"""use_fp16: float16 towers on float32 variables, with a fixed or dynamic
loss scale, in every local strategy, for ref and resource variables.

The towers build seed_harness's two-layer model in float16; the manager's
getter stores its variables in float32 and the towers read float16 casts.
NumPy's reference takes gradients at the float16-rounded weights and data
and updates float32 weights; loss scales are powers of two, so scaling and
unscaling cancel exactly and a scaled run equals the unscaled reference.
"""

import numpy as np
import pytest
import tensorflow as tf

import graph_walk
import options_harness
import variable_mgr
from options_harness import LOCAL_NAMES
from options_harness import Run
from options_harness import VARIABLES
from variable_mgr import errors
from variable_mgr import training_options

tf1 = tf.compat.v1

NUM_TOWERS = 3
# The float16 forward (about 3 decimal digits) against float64 NumPy.
FLOAT16 = dict(rtol=3e-3, atol=3e-3)


def _check_history(run, init, batches, history, skipped=()):
  for step, step_batches in enumerate(batches):
    run.step(step_batches)
    for t in run.towers:
      got = run.values(t)
      for k in VARIABLES:
        assert got[k].dtype == np.float32
        np.testing.assert_allclose(
            got[k], history[step][t][k], err_msg='%s tower %d step %d %s' %
            (run.name, t, step, k), **FLOAT16)


@pytest.mark.parametrize('name', LOCAL_NAMES)
def test_float16_towers_match_numpy(name, variable_kind):
  """Every strategy, with the default loss scale (128)."""
  run = Run(name, NUM_TOWERS, dtype=tf.float16, use_fp16=True)
  try:
    assert run.loss_scale() == 128.0
    init = run.values(0)
    assert all(v.dtype == np.float32 for v in init.values())
    batches = options_harness.make_batches(NUM_TOWERS, 3)
    history = options_harness.reference(init, batches, run.combine,
                                        stale=run.stale, float16=True)
    _check_history(run, init, batches, history)
    assert run.loss_scale() == 128.0  # Fixed: never changes.
  finally:
    run.close()


@pytest.mark.parametrize('name', ['replicated', 'staged_ps', 'ps_spread'])
def test_towers_compute_in_float16_on_float32_variables(name, variable_kind):
  """The towers' matmuls are float16, the variables and the gradients
  applied to them float32. (Float16 rounding moves these small values by
  less than the tolerance above: the graph says what the numbers cannot.)"""
  run = Run(name, 2, dtype=tf.float16, use_fp16=True, session=False)
  matmuls = [op for op in run.graph.get_operations()
             if op.type == 'MatMul' and op.name.split('/')[1:2] in (
                 ['tower_0'], ['tower_1'])]
  forward = [op for op in matmuls if 'gradients' not in op.name]
  assert len(forward) == 2 * 2
  assert all(op.get_attr('T') == tf.float16 for op in matmuls)
  for v in run.graph.get_collection(tf1.GraphKeys.TRAINABLE_VARIABLES):
    assert v.dtype.base_dtype == tf.float32, v.name
  for tower in run.state.tower_grads:
    for g, v in tower:
      assert g.dtype == tf.float32 and v.dtype.base_dtype == tf.float32


@pytest.mark.parametrize('name', ['replicated', 'ps_cpu'])
def test_loss_scales_cancel(name, variable_kind):
  """Scale 1 and scale 2**14 give the same variables."""
  batches = options_harness.make_batches(NUM_TOWERS, 3)
  results = []
  for scale in (1, 2 ** 14):
    run = Run(name, NUM_TOWERS, dtype=tf.float16, use_fp16=True,
              loss_scale=scale)
    try:
      assert run.loss_scale() == scale
      for step_batches in batches:
        run.step(step_batches)
      results.append(run.values(0))
    finally:
      run.close()
  for k in VARIABLES:
    np.testing.assert_allclose(results[0][k], results[1][k], **FLOAT16)


@pytest.mark.parametrize('name', LOCAL_NAMES)
def test_an_inf_on_any_tower_skips_the_step_everywhere(name, variable_kind):
  """An inf in tower t's input, for each t in turn: no copy of any variable
  changes and the scale halves each time; the next clean step applies as
  NumPy says; the clean step after 2 clean steps in a row doubles the
  scale (tf_cnn_benchmarks' schedule)."""
  run = Run(name, NUM_TOWERS, dtype=tf.float16, use_fp16=True,
            auto_loss_scale=True, inc_loss_scale_every_n=2)
  try:
    init = run.values(0)
    before = run.all_values()
    clean = options_harness.make_batches(NUM_TOWERS, 3)
    scale = 128.0
    for t in range(NUM_TOWERS):
      value = np.nan if t == 1 else np.inf
      run.step(options_harness.with_inf(clean[0], t, value))
      scale /= 2
      assert run.loss_scale() == scale, (t, run.loss_scale())
      for tower, (got, want) in enumerate(zip(run.all_values(), before)):
        for k in VARIABLES:
          np.testing.assert_array_equal(
              got[k], want[k], err_msg='inf on tower %d moved %s of tower %d'
              % (t, k, tower))
    # Skipped steps count as steps of the history (staged reads move on).
    batches = [options_harness.with_inf(clean[0], t) for t in
               range(NUM_TOWERS)] + clean
    history = options_harness.reference(
        init, batches, run.combine, stale=run.stale, float16=True,
        skipped=range(NUM_TOWERS))
    for step in range(NUM_TOWERS, NUM_TOWERS + 3):
      run.step(batches[step])
      for t in run.towers:
        got = run.values(t)
        for k in VARIABLES:
          np.testing.assert_allclose(got[k], history[step][t][k],
                                     err_msg='step %d tower %d %s' %
                                     (step, t, k), **FLOAT16)
      clean_steps = step - NUM_TOWERS + 1
      expected = scale * (2 if clean_steps > 2 else 1)
      assert run.loss_scale() == expected, (step, run.loss_scale())
    assert run.global_step_value() == NUM_TOWERS + 3
  finally:
    run.close()


def tf_cnn_benchmarks_schedule(initial, every_n, finite_steps):
  """The scale after each step under tf_cnn_benchmarks'
  `get_loss_scale_update_op`: a good step doubles the scale and restarts
  the count when it finds `every_n` good steps counted, else counts; a bad
  step halves and restarts. Upstream's halving has no floor: ours stops at
  1 (the only difference, kept here)."""
  scale, counted, result = float(initial), 0, []
  for finite in finite_steps:
    if not finite:
      scale, counted = max(scale / 2.0, 1.0), 0
    elif counted >= every_n:
      scale, counted = scale * 2.0, 0
    else:
      counted += 1
    result.append(scale)
  return result


def test_the_dynamic_scale_follows_tf_cnn_benchmarks_schedule(variable_kind):
  """From 4 with every_n=2: 4, 4, 8, 8, 8, 16 over good steps (doubling
  every n+1 = 3 of them, 4 * 2 ** (k // 3) after good step k), then a bad
  step halves and the count restarts."""
  finite = [True] * 7 + [False] + [True] * 4
  want = tf_cnn_benchmarks_schedule(4, 2, finite)
  assert want[:6] == [4, 4, 8, 8, 8, 16]
  assert want[:7] == [4.0 * 2 ** (k // 3) for k in range(1, 8)]
  assert want[7:] == [8, 8, 8, 16, 16]
  run = Run('replicated', 2, dtype=tf.float16, use_fp16=True, loss_scale=4,
            auto_loss_scale=True, inc_loss_scale_every_n=2)
  try:
    batches = options_harness.make_batches(2, len(finite))
    got = []
    for step_batches, ok in zip(batches, finite):
      run.step(step_batches if ok else
               options_harness.with_inf(step_batches, 1))
      got.append(run.loss_scale())
    assert got == want
  finally:
    run.close()


def test_the_scale_does_not_fall_below_one():
  run = Run('replicated', 2, dtype=tf.float16, use_fp16=True, loss_scale=2,
            auto_loss_scale=True)
  try:
    batch = options_harness.make_batches(2, 1)[0]
    for _ in range(3):
      run.step(options_harness.with_inf(batch, 0))
    assert run.loss_scale() == 1.0
  finally:
    run.close()


def test_a_fixed_scale_checks_nothing(variable_kind):
  """Without auto_loss_scale the step is not gated: no Switch in the graph,
  the scale stays, and an inf reaches the variables as in plain training."""
  run = Run('replicated', 2, dtype=tf.float16, use_fp16=True, loss_scale=8)
  try:
    assert not [op for op in run.graph.get_operations()
                if op.type in ('Switch', 'RefSwitch')]
    run.step(options_harness.with_inf(options_harness.make_batches(2, 1)[0],
                                      1))
    assert run.loss_scale() == 8.0
    assert not np.isfinite(run.values(0)['w1']).all()
  finally:
    run.close()


def test_the_scale_survives_a_checkpoint(tmp_path, variable_kind):
  run = Run('replicated', 2, dtype=tf.float16, use_fp16=True,
            auto_loss_scale=True, inc_loss_scale_every_n=3)
  try:
    assert run.saved['loss_scale'] is run.mgr.loss_scale
    assert 'loss_scale_normal_steps' in run.saved
    batches = options_harness.make_batches(2, 2)
    run.step(options_harness.with_inf(batches[0], 1))  # 64
    run.step(batches[1])  # one good step
    path = run.saver.save(run.sess, str(tmp_path / 'ckpt'))
    values = run.values(0)
  finally:
    run.close()
  restored = Run('ps_cpu', 2, dtype=tf.float16, use_fp16=True,
                 auto_loss_scale=True, inc_loss_scale_every_n=3, seed=7,
                 restore_from=path)
  try:
    assert restored.loss_scale() == 64.0
    assert restored.sess.run(restored.saved['loss_scale_normal_steps']) == 1
    for k in VARIABLES:
      np.testing.assert_array_equal(restored.values(0)[k], values[k])
    batch = options_harness.make_batches(2, 3, seed=5)
    restored.step(batch[0])
    restored.step(batch[1])  # The third good step in a row: counted.
    assert restored.loss_scale() == 64.0
    restored.step(batch[2])  # The good step after 3: doubles.
    assert restored.loss_scale() == 128.0
  finally:
    restored.close()


def test_saved_names_hold_no_internal_state():
  run = Run('replicated', 2, dtype=tf.float16, use_fp16=True,
            auto_loss_scale=True, backward_passes_per_step=2, session=False)
  assert sorted(run.saved) == sorted(
      ['global_step', 'layer1/w1', 'layer1/b1', 'layer2/w2', 'layer2/b2',
       'loss_scale',
       'loss_scale_normal_steps'])


def test_nccl_graph_gates_every_all_reduce_on_the_finite_check():
  """NCCL (GPU towers, graph only on CPU): every NcclAllReduce input comes
  through a Switch on the step's predicate, which reads every tower's
  finite check, and the loss scale's assign reads that check too."""
  run = Run('replicated', 2, dtype=tf.float16, use_fp16=True,
            auto_loss_scale=True, use_nccl=True, host_args=dict(device='gpu'),
            session=False)
  ops = run.graph.get_operations()
  nccl = [op for op in ops if op.type == 'NcclAllReduce']
  assert len(nccl) == 2 * len(VARIABLES)
  go = run.state.step_control.go
  finite_checks = [op for op in ops if op.type == 'IsFinite']
  assert len(finite_checks) == 2 * len(VARIABLES)
  go_ancestors = graph_walk.ancestors([go.op])
  assert set(finite_checks) <= go_ancestors
  for op in nccl:
    source = op.inputs[0].op
    while source.type in ('Identity', 'Cast'):
      source = source.inputs[0].op
    assert source.type == 'Switch', (op.name, source.type)
    assert source.inputs[1] is go
  scale_assigns = [op for op in ops if op.type in ('Assign',
                                                   'AssignVariableOp')
                   and 'loss_scale_update' in op.name]
  assert len(scale_assigns) == 2
  for op in scale_assigns:
    assert set(finite_checks) <= graph_walk.ancestors([op])


def test_plain_options_build_the_plain_graph():
  """Default training options add no op: the same op types, counted."""
  counts = []
  for options in ({}, dict(use_fp16=False, backward_passes_per_step=1,
                           variable_consistency='strong')):
    run = Run('replicated', 2, session=False, **options)
    types = {}
    for op in run.graph.get_operations():
      types[op.type] = types.get(op.type, 0) + 1
    counts.append(types)
  assert counts[0] == counts[1]
  assert 'Switch' not in counts[0] and 'Merge' not in counts[0]


def test_gradients_not_taken_of_the_scaled_loss_are_refused():
  with tf.Graph().as_default():
    host = variable_mgr.LocalBenchmarkCnn(2)
    mgr = variable_mgr.create('replicated', host, use_fp16=True)
    device_grads = []
    for d in range(2):
      with mgr.create_outer_variable_scope(d), tf.name_scope('tower_%d' % d):
        w = tf1.get_variable('w', [2], tf.float16)
        loss = tf.reduce_sum(w * w)
        if d == 0:
          loss_to_use = mgr.scale_loss(loss)
        else:
          loss_to_use = loss
        params = mgr.trainable_variables_on_device(d)
        device_grads.append(zip(tf.gradients(loss_to_use, params), params))
    with pytest.raises(errors.ProtocolError,
                       match=r'gradients of tower 1 are not taken of the '
                             r'scaled loss.*mgr.scale_loss\(loss\)'):
      mgr.preprocess_device_grads(device_grads)


def test_scale_loss_never_called_is_refused():
  with tf.Graph().as_default():
    host = variable_mgr.LocalBenchmarkCnn(1)
    mgr = variable_mgr.create('replicated', host, use_fp16=True)
    with mgr.create_outer_variable_scope(0):
      w = tf1.get_variable('w', [2], tf.float16)
      grads = tf.gradients(tf.reduce_sum(w), mgr.trainable_variables_on_device(0))
    with pytest.raises(errors.ProtocolError, match='scale_loss was never'):
      mgr.preprocess_device_grads([zip(grads,
                                       mgr.trainable_variables_on_device(0))])


@pytest.mark.parametrize('options,error,match', [
    (dict(use_fp16='yes'), errors.InvalidOptionError,
     r"use_fp16='yes': must be True or False"),
    (dict(use_fp16=True, loss_scale=0), errors.InvalidOptionError,
     r'loss_scale=0: a loss scale is a finite number of at least 1'),
    # Positive is not enough: a scale below 1 shrinks the loss instead.
    (dict(use_fp16=True, loss_scale=0.5), errors.InvalidOptionError,
     r'loss_scale=0.5: a loss scale is a finite number of at least 1'),
    (dict(use_fp16=True, loss_scale=float('inf')), errors.InvalidOptionError,
     r'loss_scale=inf'),
    (dict(use_fp16=True, loss_scale=True), errors.InvalidOptionError,
     r'loss_scale=True'),
    (dict(use_fp16=True, auto_loss_scale=1), errors.InvalidOptionError,
     r'auto_loss_scale=1: must be True or False'),
    (dict(use_fp16=True, auto_loss_scale=True, inc_loss_scale_every_n=0),
     errors.InvalidOptionError, r'inc_loss_scale_every_n=0: .*at least 1'),
    (dict(loss_scale=64), errors.IncompatibleOptionsError,
     r'loss_scale=64 without use_fp16: .*set use_fp16=True or drop'),
    (dict(auto_loss_scale=True), errors.IncompatibleOptionsError,
     r'auto_loss_scale=True without use_fp16'),
    (dict(use_fp16=True, inc_loss_scale_every_n=10),
     errors.IncompatibleOptionsError,
     r'inc_loss_scale_every_n=10 without auto_loss_scale: .*set '
     r'auto_loss_scale=True'),
])
def test_bad_options_are_refused_before_any_graph(options, error, match):
  with tf.Graph().as_default() as graph:
    host = variable_mgr.LocalBenchmarkCnn(2)
    with pytest.raises(error, match=match):
      variable_mgr.create('replicated', host, **options)
    assert not graph.get_operations()


def test_auto_loss_scale_across_workers_is_refused_where_unchecked():
  """A strategy that cannot tell every worker whether another's gradients
  hold an inf (here a local one's class given a cluster's host, as a
  subclass of a harness's own might be) refuses a dynamic scale on several
  workers; the cluster strategies check across workers and take it
  (tests/test_cluster_loss_scale.py)."""
  cluster = tf.train.ClusterSpec({'ps': ['127.0.0.1:1'],
                                  'worker': ['127.0.0.1:2', '127.0.0.1:3']})
  dynamic = training_options.TrainingOptions(use_fp16=True,
                                             auto_loss_scale=True)
  with tf.Graph().as_default() as graph:
    host = variable_mgr.ClusterBenchmarkCnn(cluster, 0, 1)
    mgr = variable_mgr.VariableMgrLocalFetchFromPS(host)
    with pytest.raises(errors.IncompatibleOptionsError,
                       match=r'auto_loss_scale=True with '
                             r'VariableMgrLocalFetchFromPS on 2 workers: '
                             r'.*use a fixed loss_scale, or a cluster '
                             r'strategy \(parameter_server, '
                             r'distributed_replicated, collective_all_reduce'
                             r'\)'):
      mgr.configure_training(dynamic)
    # A fixed scale needs no check across workers.
    variable_mgr.VariableMgrLocalFetchFromPS(host).configure_training(
        training_options.TrainingOptions(use_fp16=True, loss_scale=8))
    for name in ('parameter_server', 'distributed_replicated'):
      variable_mgr.create(name, host, use_fp16=True, auto_loss_scale=True)
    assert not graph.get_operations()


def _benchmark_graph(**fields):
  from variable_mgr.benchmark.training import harness
  from variable_mgr.benchmark.runs import local_run
  from variable_mgr.benchmark.training import run_config
  config = run_config.BenchmarkConfig(
      model='trivial', num_gpus=2, batch_size=4, **fields).resolved()
  host, session_config = local_run.make_host(config)
  return harness.build_training_graph(config, host), session_config


def test_benchmark_wires_float16_and_the_dynamic_scale(tmp_path):
  g, session_config = _benchmark_graph(
      use_fp16=True, fp16_loss_scale=256, fp16_enable_auto_loss_scale=True,
      fp16_inc_loss_scale_every_n=2, train_dir=str(tmp_path))
  options = g.mgr.training_options
  assert (options.use_fp16, options.loss_scale, options.auto_loss_scale,
          options.inc_loss_scale_every_n) == (True, 256, True, 2)
  assert g.saved['loss_scale'] is g.mgr.loss_scale
  matmuls = [op for op in g.graph.get_operations() if op.type == 'MatMul']
  assert matmuls and all(op.get_attr('T') == tf.float16 for op in matmuls)
  with tf1.Session(graph=g.graph, config=session_config) as sess:
    sess.run(g.init_op)
    sess.run(g.post_init_op or [])
    for _ in range(3):
      _, loss = sess.run([g.train_op, g.loss])
      assert np.isfinite(loss)
    # 2 good steps counted, the third doubles.
    assert sess.run(g.mgr.loss_scale) == 512.0


def test_benchmark_header_line():
  from variable_mgr.benchmark.reports import output
  from variable_mgr.benchmark.training import run_config
  line = output.training_options_line
  config = run_config.BenchmarkConfig
  assert line(config()) == 'Training options: none'
  assert line(config(use_fp16=True)) == (
      'Training options: use_fp16 (loss scale 128, fixed)')
  assert line(config(use_fp16=True, fp16_enable_auto_loss_scale=True,
                     fp16_inc_loss_scale_every_n=50,
                     backward_passes_per_step=4,
                     variable_consistency='relaxed')) == (
                         'Training options: use_fp16 (loss scale 128, '
                         'dynamic, doubles after 50 good steps), '
                         'backward_passes_per_step=4, '
                         'variable_consistency=relaxed')
  header = []
  output.print_header(config(use_fp16=True).resolved(),
                      variable_mgr.LocalBenchmarkCnn(1), header.append)
  assert header[-2:] == ['Training options: use_fp16 (loss scale 128, '
                         'fixed)', '==========']


def test_collective_workers_skip_an_inf_of_another_worker(tmp_path):
  """collective_all_reduce, 2 worker processes of 2 towers: an inf on the
  last tower of worker 1 leaves every copy of both workers as it was and
  halves both scales; the clean steps then match NumPy (the mean over the
  4 towers) and the second of them doubles the scale (every_n=1), on both
  workers."""
  import options_worker
  towers, workers = 2, 2
  arrays = options_harness.run_collective_workers(tmp_path, 'fp16', workers,
                                                  towers)
  init = options_harness.collective_values(arrays[0], 'initial', 0)
  params = dict((k, np.asarray(v, np.float64)) for k, v in init.items())
  for step in range(3):
    if step > 0:
      grads = [options_harness.gradients(
          params, options_worker.batch(g, step), float16=True)
               for g in range(workers * towers)]
      params = dict((k, params[k] - options_worker.LEARNING_RATE *
                     sum(g[k] for g in grads) / len(grads))
                    for k in VARIABLES)
    for k, worker in enumerate(arrays):
      assert worker['step%d/loss_scale' % step] == [64.0, 64.0, 128.0][step]
      for d in range(towers):
        got = options_harness.collective_values(worker, 'step%d' % step, d)
        for name in VARIABLES:
          if step == 0:
            np.testing.assert_array_equal(got[name], init[name])
          else:
            np.testing.assert_allclose(
                got[name], params[name], err_msg='worker %d tower %d step '
                '%d %s' % (k, d, step, name), **FLOAT16)
