"""The replicated strategy runs every all-reduce algorithm through the CLI,
with the same losses as the default copy, and the traffic meter reports."""

import json

import numpy as np
import pytest

from variable_mgr.benchmark import cli

# trivial model (the benchmark's own: 784 into 10), 3 towers (an odd count), 1 + 3 batches.
FLAGS = ['--model', 'trivial', '--data_name', 'small', '--num_gpus', '3',
         '--batch_size', '4', '--num_batches', '3', '--num_warmup_batches',
         '1', '--variable_update', 'replicated']


def _losses(tmp_path, extra, name):
  output = str(tmp_path / name)
  assert cli.main(FLAGS + extra + ['--output', output]) == 0
  with open(output) as f:
    return json.load(f)


@pytest.fixture(scope='module')
def copy_losses(tmp_path_factory):
  return _losses(tmp_path_factory.mktemp('copy'), [], 'copy.json')['losses']


@pytest.mark.parametrize('extra', [
    ['--all_reduce_spec', 'copy'],
    ['--all_reduce_spec', 'xring#2'],
    ['--all_reduce_spec', 'pscpu'],
    ['--all_reduce_spec', 'psgpu#2'],
    ['--all_reduce_spec', 'rechd'],
    ['--all_reduce_spec', 'hcopy'],
    ['--hierarchical_copy'],
    ['--all_reduce_spec', 'pscpu:4k:xring'],
    # Limits count elements (10 biases, 7840 weights): 1K sends the biases
    # to pscpu, 7840 both (7840 <= 7840), 9 neither.
    ['--all_reduce_spec', 'pscpu:1K:xring'],
    ['--all_reduce_spec', 'pscpu:7840:xring'],
    ['--all_reduce_spec', 'pscpu:9:xring'],
    ['--all_reduce_spec', 'xring', '--gradient_repacking', '2'],
    ['--agg_small_grads_max_bytes', '64', '--agg_small_grads_max_group', '2'],
    ['--agg_small_grads_max_bytes', '31360', '--agg_small_grads_max_group',
     '2'],
])
def test_algorithm_matches_copy(extra, copy_losses, tmp_path):
  results = _losses(tmp_path, extra, 'out.json')
  np.testing.assert_allclose(results['losses'], copy_losses, rtol=1e-5)


def test_compact_transfer_is_close_to_float32_transfer(tmp_path):
  """--compact_gradient_transfer (on by default, as in tf_cnn_benchmarks)
  acts with --use_fp16: the gradients travel as float16."""
  float32 = _losses(tmp_path, ['--use_fp16', '--nocompact_gradient_transfer'],
                    'float32.json')
  compact = _losses(tmp_path, ['--use_fp16'], 'compact.json')
  assert compact['config']['compact_gradient_transfer']
  np.testing.assert_allclose(compact['losses'], float32['losses'], rtol=2e-2)


def test_traffic_of_ring_is_near_the_bound(tmp_path):
  results = _losses(tmp_path, ['--all_reduce_spec', 'xring',
                               '--measure_traffic'], 'out.json')
  traffic = results['traffic']
  # trivial: a 784x10 weight and 10 biases in float32.
  assert traffic['gradient_bytes'] == (784 * 10 + 10) * 4
  assert traffic['ring_lower_bound_bytes'] == pytest.approx(
      2.0 * 2 / 3 * traffic['gradient_bytes'])
  # Inputs are made on the CPU and sent to the towers too: the bound holds
  # within their bytes (3 towers x 4 images x 784 floats + labels).
  inputs = 3 * 4 * (784 * 4 + 4)
  assert (traffic['ring_lower_bound_bytes'] <= traffic['busiest_bytes'] <=
          1.05 * traffic['ring_lower_bound_bytes'] + inputs)


def _total_sends(tmp_path, max_bytes):
  results = _losses(tmp_path, ['--all_reduce_spec', 'copy',
                               '--agg_small_grads_max_bytes', str(max_bytes),
                               '--agg_small_grads_max_group', '2',
                               '--measure_traffic'], 'sends.json')
  return sum(t['sends'] for t in results['traffic']['per_device'].values())


def test_small_gradient_limit_is_per_tensor_and_inclusive(tmp_path):
  """trivial's gradients are 31360 bytes (weights) and 40 (biases): at
  --agg_small_grads_max_bytes=31360 both are small and travel as one pack,
  so the copy all-reduce of one tensor on 3 towers (2 sends in, 2 out) is
  saved; at 31359 the weights are too large and nothing is packed."""
  unpacked = _total_sends(tmp_path, 31359)
  assert unpacked - _total_sends(tmp_path, 31360) == 2 * 2
  assert _total_sends(tmp_path, 0) == unpacked


@pytest.mark.parametrize('text,position,words', [
    ('xring#0', 6, 'positive integer'),
    ('pscpu:32m:xring', 6, "write '32M'"),
])
def test_bad_spec_is_one_line(capsys, text, position, words):
  assert cli.main(FLAGS + ['--all_reduce_spec', text]) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1, err
  assert repr(text) in err[0] and 'position %d' % position in err[0], err
  assert words in err[0], err
