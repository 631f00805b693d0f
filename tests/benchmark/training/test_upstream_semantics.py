"""tf_cnn_benchmarks' meaning of a few flags, as this benchmark follows it.

* the defaults: `--model=trivial`, `--variable_update=parameter_server`,
  `--num_gpus=1`, `--device=gpu` (the CPU where TensorFlow finds no GPU,
  said in the header), `--compact_gradient_transfer`;
* `--num_batches` on a restored run counts from global step 0
  (`end_local_step = num_batches - init_global_step // num_workers`);
* `--num_eval_batches` defaults to `--num_batches`; `--eval` takes
  `--print_training_accuracy`;
* `--gradient_clip`: every gradient clipped by value to [-c, c] after the
  towers' gradients are combined, against NumPy;
* `--hierarchical_copy`: replicated's hierarchical copy, and the
  combinations tf_cnn_benchmarks refuses or ignores.
"""

import json
import re
import os
import sys

import numpy as np
import pytest
import tensorflow as _tf

from variable_mgr.benchmark import cli
from variable_mgr.benchmark.flags import command_line
from variable_mgr.benchmark.reports import output
from variable_mgr.benchmark.runs import local_run
from variable_mgr.benchmark.training import batch_target
from variable_mgr.benchmark.training import harness
from variable_mgr.benchmark.training import run_config

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, os.pardir, 'distributed'))
import clusterlib  # pylint: disable=g-import-not-at-top,wrong-import-position

tf = _tf.compat.v1

UPSTREAM_DEFAULTS = dict((n, d) for n, _, d in command_line.TF_CNN_FLAGS)
# A tiny run: the trivial model on one tower of 4 images, no warm-up.
TINY = ['--batch_size', '4', '--num_warmup_batches', '0',
        '--display_every', '100']


def _parse(argv):
  return command_line.parse_args(argv, environ={})


def _refused(argv):
  with pytest.raises(command_line.UsageError) as info:
    _parse(argv)
  return str(info.value)


def _run(argv, tmp_path, name='out.json'):
  path = str(tmp_path / name)
  assert cli.main(list(argv) + ['--output', path]) == 0
  with open(path) as f:
    return json.load(f)


def _no_gpu():
  return run_config.gpu_count() == 0


# -- Defaults -----------------------------------------------------------------


def test_defaults_are_tf_cnn_benchmarks():
  args = _parse([])
  for name in ('model', 'variable_update', 'num_gpus',
               'compact_gradient_transfer', 'hierarchical_copy',
               'gradient_clip'):
    assert getattr(args, name) == UPSTREAM_DEFAULTS[name], name
  assert UPSTREAM_DEFAULTS['device'] == 'gpu'
  assert args.device is None  # gpu, or the CPU where there is no GPU.


def test_the_default_device_falls_back_to_the_cpu_and_says_so():
  assert run_config.default_device(count=0) == ('cpu', True)
  assert run_config.default_device(count=2) == ('gpu', False)
  run_config.check_devices(None, 1, count=0)
  run_config.check_devices(None, 2, count=2)
  with pytest.raises(run_config.DeviceUnavailableError) as info:
    run_config.check_devices(None, 4, count=2)
  assert str(info.value) == (
      '--device=gpu (the default) --num_gpus=4: TensorFlow finds 2 GPUs on '
      'this machine, one a tower; pass --num_gpus=2 or fewer, or --device=cpu')
  # An explicit --device=gpu without a GPU is refused, as before.
  with pytest.raises(run_config.DeviceUnavailableError,
                     match=r'^--device=gpu: TensorFlow finds no GPU'):
    run_config.check_devices('gpu', 1, count=0)
  config = run_config.BenchmarkConfig(
      model='trivial', num_gpus=1, device='cpu', device_fallback=True)
  lines = []
  output.print_header(config.resolved(), _Host(['/cpu:0']), lines.append)
  assert ("Devices:     ['/cpu:0'] (--device=gpu: no GPU found, running on "
          "the CPU)") in lines
  lines = []
  output.print_header(config._replace(device_fallback=False).resolved(),
                      _Host(['/cpu:0']), lines.append)
  assert "Devices:     ['/cpu:0']" in lines
  # A configuration made in Python names its device: no fallback said.
  lines = []
  output.print_header(run_config.BenchmarkConfig(model='trivial',
                                                 num_gpus=1).resolved(),
                      _Host(['/cpu:0']), lines.append)
  assert "Devices:     ['/cpu:0']" in lines


class _Host(object):

  def __init__(self, devices):
    self.raw_devices = devices
    self.num_gpus = len(devices)


@pytest.mark.skipif(not _no_gpu(), reason='a GPU is there: no fallback')
def test_the_command_without_flags_runs_upstream_defaults(tmp_path, capsys):
  results = _run(['--num_batches', '2'] + TINY, tmp_path)
  out = capsys.readouterr().out
  assert "Devices:     ['/cpu:0'] (--device=gpu: no GPU found, running on " \
         "the CPU)" in out
  assert 'Model:       trivial' in out
  assert 'Variables:   parameter_server' in out
  config = results['config']
  assert (config['model'], config['variable_update'], config['num_gpus'],
          config['device'], config['device_fallback']) == (
              'trivial', 'parameter_server', 1, 'cpu', True)
  # An explicit --device=gpu is still refused on this machine.
  assert cli.main(['--device=gpu', '--num_batches', '1'] + TINY) == 2
  assert '--device=gpu: TensorFlow finds no GPU' in capsys.readouterr().err


# -- --num_batches on a restored run -------------------------------------------


def test_batches_left_are_tf_cnn_benchmarks_end_local_step():
  # end_local_step = num_batches - init_global_step // num_workers.
  for num_batches, step, workers in [(40, 25, 1), (40, 0, 1), (40, 39, 1),
                                     (40, 50, 2), (40, 79, 2), (7, 3, 4)]:
    assert batch_target.batches_left(num_batches, step, workers) == (
        num_batches - step // workers)
  for num_batches, step, workers in [(40, 40, 1), (40, 41, 1), (40, 80, 2),
                                     (40, 95, 2)]:
    with pytest.raises(batch_target.TargetReachedError):
      batch_target.batches_left(num_batches, step, workers)


def test_a_restored_run_trains_to_num_batches(tmp_path, capsys):
  """25 steps done, --num_batches=40 runs 15; a checkpoint at or past the
  target is refused before anything is built (tf_cnn_benchmarks would run
  and save its warm-up steps past it, then time none)."""
  train_dir = str(tmp_path / 'train')
  common = TINY + ['--train_dir', train_dir]
  first = _run(common + ['--num_batches', '25'], tmp_path, 'first.json')
  assert (len(first['losses']), first['global_step']) == (25, 25)
  capsys.readouterr()
  second = _run(common + ['--num_batches', '40'], tmp_path, 'second.json')
  assert second['restored_from'].endswith('model.ckpt-25')
  assert (len(second['losses']), second['global_step']) == (15, 40)
  assert ('Global step 25 restored: 15 of --num_batches=40 batches left '
          '(counted from global step 0, as tf_cnn_benchmarks counts them); '
          'this run ends at global step 40\n' in capsys.readouterr().out)
  # Warm-up batches train too, before the timed ones, as upstream's.
  third = _run(common + ['--num_batches', '42', '--num_warmup_batches', '3'],
               tmp_path, 'third.json')
  assert (len(third['losses']), third['global_step']) == (2, 45)
  capsys.readouterr()
  for num_batches in ('45', '30'):
    assert cli.main(common + ['--num_batches', num_batches]) == 2
    captured = capsys.readouterr()
    assert captured.out == ''  # Refused before the header.
    assert captured.err.strip() == (
        'variable_mgr_benchmark: error: --num_batches=%s --train_dir=%s: its '
        'checkpoint is at global step 45, and a restored run counts '
        '--num_batches (or --num_epochs) from global step 0, as '
        'tf_cnn_benchmarks does, so no batch is left to train; pass '
        '--num_batches=N above 45 to time N - 45 more batches, or a new '
        '--train_dir to start afresh' % (num_batches, train_dir))


def test_the_resume_advice_says_the_steps_the_run_takes(tmp_path, capsys):
  """The refusal's advice and the restored run's line say the steps it
  then takes, warm-up included (warm-up steps train, as upstream's), and
  the global step it ends at; the run does what they say."""
  train_dir = str(tmp_path / 'train')
  common = ['--batch_size', '4', '--display_every', '100',
            '--num_warmup_batches', '10', '--train_dir', train_dir]
  first = _run(common + ['--num_batches', '3'], tmp_path, 'first.json')
  assert first['global_step'] == 13
  capsys.readouterr()
  assert cli.main(common + ['--num_batches', '13']) == 2
  err = capsys.readouterr().err
  advice = re.search(r'pass --num_batches=N above (\d+) to time N - (\d+) '
                     r'more batches after (\d+) warm-up steps '
                     r'\(--num_warmup_batches\), which train too: the run '
                     r'ends at global step N \+ (\d+), or a new', err)
  assert advice, err
  above, more, warmup, plus = (int(g) for g in advice.groups())
  assert (above, more, warmup, plus) == (13, 13, 10, 10)
  n = 16
  second = _run(common + ['--num_batches', str(n)], tmp_path, 'second.json')
  out = capsys.readouterr().out
  line = re.search(r'Global step 13 restored: (\d+) of --num_batches=16 '
                   r'batches left \(counted from global step 0, as '
                   r'tf_cnn_benchmarks counts them\); with the (\d+) warm-up '
                   r'steps before them, which train too, this run takes (\d+) '
                   r'steps, to global step (\d+)', out)
  assert line, out
  left, warm, steps, end = (int(g) for g in line.groups())
  # What was said is what ran.
  assert left == n - more == len(second['losses']) == 3
  assert warm == 10 and steps == warm + left
  assert end == second['global_step'] == n + plus == 13 + steps == 26
  assert 'Saved %s/model.ckpt-26' % train_dir in out


def test_a_cluster_refuses_a_checkpoint_past_its_target(tmp_path):
  """Every task (and the launcher) asks before any server starts; under
  asynchronous steps the global step counts every worker's updates."""
  train_dir = str(tmp_path / 'train')
  clusterlib.write_checkpoint(train_dir, clusterlib.initial_values(), 24)
  cluster = {'ps': ['127.0.0.1:1'], 'worker': ['127.0.0.1:2', '127.0.0.1:3']}

  def check(*argv):
    args = command_line.parse_args(
        ['--launch_local_cluster', '--model', 'trivial', '--train_dir',
         train_dir] + list(argv), environ={})
    run_config.check_cluster_config(args, cluster)

  check('--num_batches', '25')
  with pytest.raises(batch_target.TargetReachedError,
                     match=r'checkpoint is at global step 24, and'):
    check('--num_batches', '24')
  check('--num_batches', '13', '--cross_replica_sync=false')
  with pytest.raises(batch_target.TargetReachedError,
                     match=r'at global step 24 \(12 steps a worker\), and'):
    check('--num_batches', '12', '--cross_replica_sync=false')


# -- Evaluation ----------------------------------------------------------------


@pytest.fixture(scope='module')
def digits_checkpoint(tmp_path_factory):
  train_dir = str(tmp_path_factory.mktemp('digits') / 'train')
  assert cli.main(['--data_name', 'digits', '--batch_size', '16',
                   '--num_batches', '3', '--num_warmup_batches', '0',
                   '--train_dir', train_dir]) == 0
  return train_dir


def test_num_eval_batches_defaults_to_num_batches():
  assert _parse(['--data_name=digits', '--eval_during_training_every_n_steps'
                 '=2']).num_eval_batches == 100
  assert _parse(['--data_name=digits', '--num_batches=7',
                 '--eval_during_training_every_n_steps=2']
               ).num_eval_batches == 7
  assert _parse(['--data_name=digits', '--num_batches=7',
                 '--num_eval_batches=2',
                 '--eval_during_training_every_n_steps=2']
               ).num_eval_batches == 2
  assert _parse([]).num_eval_batches is None


def test_eval_counts_num_batches_and_takes_training_accuracy(
    digits_checkpoint, tmp_path, capsys):
  common = ['--eval', '--data_name', 'digits', '--batch_size', '16',
            '--train_dir', digits_checkpoint]
  two = _run(common + ['--num_batches', '2'], tmp_path, 'two.json')
  assert (two['eval_batches'], two['eval_examples']) == (2, 32)
  assert 'Num batches: 2 (at most: the validation split is read once)' in (
      capsys.readouterr().out)
  one = _run(common + ['--num_batches', '2', '--num_eval_batches', '1'],
             tmp_path, 'one.json')
  assert (one['eval_batches'], one['eval_examples']) == (1, 16)
  # The default 30 batches of 16 outlast the split, read once.
  whole = _run(common, tmp_path, 'whole.json')
  examples = whole['eval_examples']
  assert whole['eval_batches'] == -(-examples // 16) < 30
  # --print_training_accuracy: accepted, as tf_cnn_benchmarks accepts it; an
  # evaluation prints its accuracy anyway, so nothing changes.
  capsys.readouterr()
  accuracy = _run(common + ['--print_training_accuracy'], tmp_path,
                  'accuracy.json')
  out = capsys.readouterr().out
  for key in ('top_1_accuracy', 'top_5_accuracy', 'eval_examples'):
    assert accuracy[key] == whole[key], key
  assert output.accuracy_line(whole['top_1_accuracy'],
                              whole['top_5_accuracy'], examples) in out


# -- --gradient_clip -----------------------------------------------------------

TOWERS = 2
STEPS = 3
RATE = 0.5
CLIP = 0.02


def _config(**fields):
  values = dict(model='trivial', num_gpus=TOWERS, batch_size=clusterlib.BATCH,
                weight_decay=0.0, seed=clusterlib.SEED, learning_rate=RATE)
  values.update(fields)
  return run_config.BenchmarkConfig(**values).resolved()


def _train(config):
  """(initial variables, variables after STEPS steps) of tower 0."""
  host, session_config = local_run.make_host(config)
  g = harness.build_training_graph(config, host)
  with g.graph.as_default():
    model_vars = dict((v.op.name.split('/', 1)[1], v)
                      for v in tf.global_variables()
                      if v.op.name.split('/')[0] in ('v', 'v0') and
                      v.op.name.split('/')[-1] in ('weights', 'biases'))
    clips = [op for op in g.graph.get_operations()
             if 'clip_gradients' in op.name]
  assert sorted(model_vars) == ['logits/biases', 'logits/weights']
  with tf.Session(graph=g.graph, config=session_config) as sess:
    sess.run(g.init_op)
    sess.run(g.post_init_op or [])
    initial = sess.run(model_vars)
    for _ in range(STEPS):
      sess.run(g.train_op)
    final = sess.run(model_vars)
  return initial, final, clips


def _reference(initial, clip, mean):
  """NumPy's SGD on the towers' mean (parameter_server) or sum
  (replicated) of the gradients, each element clipped to [-clip, clip];
  also how many elements the clip changed."""
  batches = clusterlib.tower_batches(TOWERS)
  w = dict((k, v.astype(np.float64)) for k, v in initial.items())
  clipped = 0
  for _ in range(STEPS):
    grads = [clusterlib.gradients(w, b) for b in batches]
    for k in w:
      g = sum(gd[k] for gd in grads) / (len(grads) if mean else 1)
      if clip is not None:
        clipped += int(np.sum(np.abs(g) > clip))
        g = np.clip(g, -clip, clip)
      w[k] = w[k] - RATE * g
  return w, clipped


@pytest.mark.parametrize('strategy,mean', [('parameter_server', True),
                                           ('replicated', False)])
def test_gradient_clip_matches_numpy(strategy, mean):
  initial, final, clips = _train(_config(variable_update=strategy,
                                         gradient_clip=CLIP))
  assert clips
  expected, clipped = _reference(initial, CLIP, mean)
  unclipped, _ = _reference(initial, None, mean)
  total = sum(v.size for v in initial.values()) * STEPS
  assert 0 < clipped < total  # The clip bites, but not on every element.
  for k in expected:
    np.testing.assert_allclose(final[k], expected[k], rtol=1e-4, atol=1e-6)
  assert any(not np.allclose(final[k], unclipped[k], rtol=1e-4, atol=1e-6)
             for k in expected)
  _, plain, none = _train(_config(variable_update=strategy))
  assert not none
  for k in unclipped:
    np.testing.assert_allclose(plain[k], unclipped[k], rtol=1e-4, atol=1e-6)


def test_gradient_clip_keeps_sparse_gradients_sparse():
  graph = tf.Graph()
  with graph.as_default():
    var = tf.get_variable('v', initializer=np.zeros([4, 2], np.float32))
    values = np.array([[0.5, -0.001], [-3.0, 0.02]], np.float32)
    sparse = tf.IndexedSlices(tf.constant(values), tf.constant([3, 1]),
                              tf.constant([4, 2]))
    dense = tf.constant(values)
    (g0, _), (g1, _), (g2, _) = harness.clip_gradients(
        [(sparse, var), (dense, var), (None, var)], 0.01)
    assert isinstance(g0, tf.IndexedSlices) and g2 is None
    with tf.Session() as sess:
      out0, indices, out1 = sess.run([g0.values, g0.indices, g1])
  np.testing.assert_array_equal(indices, [3, 1])
  for out in (out0, out1):
    np.testing.assert_allclose(out, np.clip(values, -0.01, 0.01), rtol=0)
  assert harness.clip_gradients([(dense, var)], None) == [(dense, var)]


@pytest.mark.parametrize('argv,message', [
    (['--gradient_clip=0'], '--gradient_clip=0: must be positive'),
    (['--gradient_clip=-1'], '--gradient_clip=-1: must be positive'),
    (['--forward_only', '--gradient_clip=1'],
     '--forward_only with --gradient_clip=1.0: a forward-only run'),
])
def test_gradient_clip_refusals(argv, message):
  assert _refused(argv).startswith(message)


# -- --hierarchical_copy and --compact_gradient_transfer ----------------------


@pytest.mark.parametrize('argv,message', [
    (['--hierarchical_copy', '--num_gpus=2'],
     '--hierarchical_copy with --variable_update=parameter_server: the '
     'hierarchical copy is an all-reduce of replicated; pass '
     '--variable_update=replicated or drop --hierarchical_copy'),
    (['--hierarchical_copy', '--variable_update=replicated'],
     '--hierarchical_copy with --num_gpus=1: the hierarchical copy '
     'all-reduces between towers, and tf_cnn_benchmarks requires --num_gpus '
     'greater than 1 for it; pass --num_gpus=2 or more, or drop '
     '--hierarchical_copy'),
    (['--hierarchical_copy=true', '--variable_update=replicated',
      '--num_gpus=2', '--all_reduce_spec=xring'],
     '--hierarchical_copy with --all_reduce_spec=xring: both choose the '
     'all-reduce (tf_cnn_benchmarks would use --all_reduce_spec and ignore '
     '--hierarchical_copy); drop one of them (--hierarchical_copy is '
     '--all_reduce_spec=hcopy)'),
    (['--hierarchical_copy', '--variable_update=replicated', '--num_gpus=2',
      '--use_nccl'],
     '--hierarchical_copy with --use_nccl: both choose the all-reduce; drop '
     'one of them'),
    (['--hierarchical_copy', '--compare'],
     '--hierarchical_copy with --compare: the sweep runs several strategies '
     'and tower counts, and the hierarchical copy is an all-reduce of '
     'replicated on 2 towers or more; drop --hierarchical_copy (or run one '
     'configuration with --variable_update=replicated --num_gpus=2 or '
     'more)'),
    (['--compact_gradient_transfer', '--variable_update=replicated'],
     '--compact_gradient_transfer without --use_fp16: it acts with '
     '--use_fp16 only (the gradients then travel as float16; on by default), '
     'as in tf_cnn_benchmarks; add --use_fp16 or drop '
     '--compact_gradient_transfer'),
    (['--compact_gradient_transfer=true', '--use_fp16'],
     '--compact_gradient_transfer with --variable_update=parameter_server: '
     'it acts on replicated\'s all-reduce only, as in tf_cnn_benchmarks; '
     'pass --variable_update=replicated or drop --compact_gradient_transfer'),
])
def test_all_reduce_flag_refusals(argv, message):
  assert _refused(argv) == message


def test_all_reduce_flags_that_are_accepted():
  for argv in (['--nocompact_gradient_transfer'],
               ['--nocompact_gradient_transfer', '--variable_update=independent'],
               ['--compact_gradient_transfer', '--use_fp16',
                '--variable_update=replicated'],
               ['--nohierarchical_copy'],
               ['--hierarchical_copy=false', '--compare'],
               ['--hierarchical_copy', '--variable_update=replicated',
                '--num_gpus=2']):
    _parse(argv)


@pytest.mark.parametrize('hierarchical_copy', [True, False])
def test_hierarchical_copy_is_the_hcopy_all_reduce(hierarchical_copy):
  config = _config(variable_update='replicated',
                   hierarchical_copy=hierarchical_copy)
  host, _ = local_run.make_host(config)
  graph = harness.build_training_graph(config, host).graph
  assert any('hierarchical_copy_all_reduce' in op.name
             for op in graph.get_operations()) == hierarchical_copy


def test_compact_transfer_acts_with_fp16_under_replicated_only(monkeypatch):
  """float16_transfer reaches the manager only with use_fp16 under
  replicated (tf_cnn_benchmarks' `use_fp16 and compact_gradient_transfer`)."""
  import variable_mgr  # pylint: disable=g-import-not-at-top
  seen = []
  create = variable_mgr.create

  def recording(name, host, **options):
    seen.append(options['float16_transfer'])
    return create(name, host, **options)

  monkeypatch.setattr(variable_mgr, 'create', recording)
  for fields, expected in [
      (dict(variable_update='replicated', use_fp16=True,
            compact_gradient_transfer=True), True),
      (dict(variable_update='replicated', use_fp16=True,
            compact_gradient_transfer=False), False),
      (dict(variable_update='replicated', compact_gradient_transfer=True),
       False),
      (dict(variable_update='parameter_server', use_fp16=True,
            compact_gradient_transfer=True), False)]:
    config = _config(**fields)
    host, _ = local_run.make_host(config)
    with tf.Graph().as_default():
      harness.create_manager(config, host)
    assert seen[-1] is expected, fields
