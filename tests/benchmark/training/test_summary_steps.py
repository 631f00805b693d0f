"""The step of each TensorBoard summary is the global step after the step
that wrote it, also in a run that restores a checkpoint: its summaries
follow the first run's instead of starting again at 1 (TensorBoard would
draw the second run over the first)."""

import os

import pytest
import tensorflow as _tf

from variable_mgr.benchmark.runs import local_run
from variable_mgr.benchmark.training import run_config

tf = _tf.compat.v1


def _config(**kwargs):
  values = dict(model='trivial', num_gpus=2, batch_size=8, num_batches=4,
                num_warmup_batches=1, weight_decay=0.0, learning_rate=0.05,
                save_summaries_steps=1)
  values.update(kwargs)
  return run_config.BenchmarkConfig(**values)


def _losses_by_step(summary_dir):
  """`{step: loss}` of the one event file of `summary_dir`."""
  events = [p for p in os.listdir(str(summary_dir)) if 'tfevents' in p]
  assert len(events) == 1
  losses = {}
  for event in tf.train.summary_iterator(str(summary_dir / events[0])):
    for value in event.summary.value:
      if value.tag == 'loss':
        losses[event.step] = value.simple_value
  return losses


def test_a_restored_run_numbers_its_summaries_by_the_global_step(tmp_path):
  train_dir = str(tmp_path / 'train')
  first = local_run.run_one(
      _config(train_dir=train_dir, summary_dir=str(tmp_path / 'first')),
      log=lambda *_: None)
  # One warm-up and four timed steps, all summarised.
  assert first['global_step'] == 5
  assert sorted(_losses_by_step(tmp_path / 'first')) == [1, 2, 3, 4, 5]

  second = local_run.run_one(
      _config(train_dir=train_dir, summary_dir=str(tmp_path / 'second'),
              num_batches=7),
      log=lambda *_: None)
  # 7 - 5 = 2 timed steps left, after one warm-up step: global steps 6-8.
  assert second['global_step'] == 8
  losses = _losses_by_step(tmp_path / 'second')
  assert sorted(losses) == [6, 7, 8]
  # The timed steps' summaries are the losses the run reports for them.
  assert [losses[7], losses[8]] == pytest.approx(second['losses'], rel=1e-6)
