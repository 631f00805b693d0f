"""Training options on real clusters (the benchmark's runner, 2 workers of 2
towers, 1 PS): accumulation and float16 towers (a fixed and a dynamic loss
scale) under parameter_server and distributed_replicated, against
clusterlib's NumPy reference.

Every tower reads the same fixed batch at every step, so N micro-batches
of a cycle have the same gradient: 4 steps with N = 2 equal 2 plain steps.
"""

import json

import numpy as np
import pytest

import clusterlib
import matrix_model

# distributed_replicated's cases run with --long (the suite keeps to its
# time; parameter_server's run in it).
CASES = ['parameter_server',
         pytest.param('distributed_replicated', marks=pytest.mark.long)]


def _run(launch, tmp_path, flags, steps):
  output = str(tmp_path / 'summary.json')
  cluster = launch(clusterlib.BASE_FLAGS + [
      '--train_dir', str(tmp_path / 'train'), '--num_batches', str(steps),
      '--op_timeout_secs', '30', '--output', output, '--num_ps', '1',
      '--num_workers', '2'] + flags)
  status = cluster.finish()
  assert status == 0, cluster.output
  clusterlib.assert_all_gone(cluster)
  with open(output) as f:
    return json.load(f)


@pytest.mark.parametrize('strategy', CASES)
def test_accumulation_applies_once_every_n_steps(launch, tmp_path, strategy):
  initial = clusterlib.initial_values(seed=3)
  clusterlib.write_checkpoint(str(tmp_path / 'train'), initial, 0)
  summary = _run(launch, tmp_path, ['--variable_update', strategy,
                                    '--backward_passes_per_step', '2'], 4)
  for worker in summary['workers']:
    assert worker['global_step'] == 4
  values, step = clusterlib.read_checkpoint(str(tmp_path / 'train'))
  assert step == 4
  clusterlib.assert_close(values, clusterlib.reference(initial, 2, 2))
  # Not the 4 plain steps.
  plain = clusterlib.reference(initial, 2, 4)
  assert np.abs(values['logits/weights'] - plain['logits/weights']).max() > \
      1e-4


def test_float16_towers_with_a_fixed_scale(launch, tmp_path):
  """distributed_replicated with --use_fp16 --fp16_loss_scale 64: the
  reference within float16 tolerance; the scale is saved and restored."""
  initial = clusterlib.initial_values(seed=4)
  saved = dict(initial, loss_scale=np.float32(64.0),
               loss_scale_normal_steps=np.int32(0))
  clusterlib.write_checkpoint(str(tmp_path / 'train'), saved, 0)
  _run(launch, tmp_path, ['--variable_update', 'distributed_replicated',
                          '--use_fp16', '--fp16_loss_scale', '64'], 3)
  values, step = clusterlib.read_checkpoint(str(tmp_path / 'train'))
  assert step == 3
  assert values.pop('loss_scale') == 64.0
  assert values.pop('loss_scale_normal_steps') == 0
  clusterlib.assert_close(values, clusterlib.reference(initial, 2, 3),
                          rtol=3e-3, atol=3e-3)


@pytest.mark.parametrize('strategy', CASES)
def test_a_dynamic_loss_scale_on_synchronous_workers(launch, tmp_path,
                                                     strategy):
  """--use_fp16 --fp16_enable_auto_loss_scale: the scale restored from the
  checkpoint (4 after 1 good step) moves once a step by tf_cnn_benchmarks'
  schedule (every_n=2), whatever the worker count; the weights are the
  reference's within float16 tolerance."""
  initial = clusterlib.initial_values(seed=5)
  saved = dict(initial, loss_scale=np.float32(4.0),
               loss_scale_normal_steps=np.int32(1))
  clusterlib.write_checkpoint(str(tmp_path / 'train'), saved, 0)
  steps = 3
  _run(launch, tmp_path, ['--variable_update', strategy, '--use_fp16',
                          '--fp16_enable_auto_loss_scale',
                          '--fp16_loss_scale', '64',
                          '--fp16_inc_loss_scale_every_n', '2'], steps)
  values, step = clusterlib.read_checkpoint(str(tmp_path / 'train'))
  assert step == steps
  scale, good = 4.0, 1
  for _ in range(steps):
    scale, good = matrix_model.next_loss_scale(scale, good, True, 2)
  assert (scale, good) == (8.0, 1)
  assert values.pop('loss_scale') == scale
  assert values.pop('loss_scale_normal_steps') == good
  clusterlib.assert_close(values, clusterlib.reference(initial, 2, steps),
                          rtol=3e-3, atol=3e-3)
