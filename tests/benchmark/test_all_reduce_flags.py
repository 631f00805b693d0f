"""The replicated strategy runs every all-reduce algorithm through the CLI,
with the same losses as the default copy, and the traffic meter reports."""

import json

import numpy as np
import pytest

from variable_mgr.benchmark import cli

# trivial model, 3 towers (an odd count), 1 + 3 batches.
FLAGS = ['--model', 'trivial', '--num_gpus', '3', '--batch_size', '4',
         '--num_batches', '3', '--num_warmup_batches', '1',
         '--variable_update', 'replicated']


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
    ['--all_reduce_spec', 'pscpu:4k:xring'],
    ['--all_reduce_spec', 'xring', '--gradient_repacking', '2'],
    ['--agg_small_grads_max_bytes', '64', '--agg_small_grads_max_group', '2'],
])
def test_algorithm_matches_copy(extra, copy_losses, tmp_path):
  results = _losses(tmp_path, extra, 'out.json')
  np.testing.assert_allclose(results['losses'], copy_losses, rtol=1e-5)


def test_compact_transfer_is_close_to_copy(copy_losses, tmp_path):
  results = _losses(tmp_path, ['--compact_gradient_transfer'], 'out.json')
  np.testing.assert_allclose(results['losses'], copy_losses, rtol=2e-2)


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


def test_bad_spec_is_one_line(capsys):
  assert cli.main(FLAGS + ['--all_reduce_spec', 'xring#0']) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1, err
  assert "'xring#0'" in err[0] and 'position 6' in err[0], err
