"""Partitioned variables on a real cluster: 2 PS tasks, 2 workers.

The trivial model's weights, [784, 10] float32 (31360 bytes), are split by
`--variable_partition_min_bytes 10000` into 2 slices of 392 rows (15680
bytes), one on each PS task; its biases (40 bytes) stay whole. The chief
restores a checkpoint of whole variables written by the test and saves one
at the end, which holds whole tensors again; the variables equal the NumPy
reference of the same steps without partitioning (see clusterlib).
"""

import json

import pytest

import clusterlib

STEPS = 3
MIN_BYTES = 10000
SLICES = ('in 2 slices: ps:0 15680 B, ps:1 15680 B',
          'in 2 slices: ps:1 15680 B, ps:0 15680 B')


# Plain parameter_server runs on an in-process 2-PS cluster in
# tests/test_partitioning.py; these two add what it shares with them (the
# command line, the worker graph, its log) and run their own code paths:
# a staging area a slice, and masters split while the local copies are not.
@pytest.mark.parametrize('flags,staged,prefix', [
    (['--variable_update', 'parameter_server', '--staged_vars'], True, 'v'),
    (['--variable_update', 'distributed_replicated'], False, 'ps_var/v0'),
], ids=['staged', 'distributed_replicated'])
def test_partitioned_steps_match_numpy(launch, tmp_path, flags, staged,
                                       prefix):
  train_dir = tmp_path / 'train'
  initial = clusterlib.initial_values(seed=2)
  clusterlib.write_checkpoint(str(train_dir), initial, 0)
  output = str(tmp_path / 'out.json')
  cluster = launch(clusterlib.BASE_FLAGS + flags + [
      '--num_ps', '2', '--num_workers', '2',
      '--variable_partition_min_bytes', str(MIN_BYTES),
      '--train_dir', str(train_dir), '--num_batches', str(STEPS),
      '--op_timeout_secs', '30', '--output', output])
  status = cluster.finish()
  assert status == 0, cluster.output
  clusterlib.assert_all_gone(cluster)
  lines = [line for line in cluster.lines if 'Partitioned: ' in line]
  # Each worker says so once: the weights, split over both PS tasks.
  assert len(lines) == 2, cluster.output
  for line in lines:
    assert 'Partitioned: %s/logits/weights [784, 10] ' % prefix in line
    assert line.endswith(SLICES), line
  with open(output) as f:
    summary = json.load(f)
  for worker in summary['workers']:
    assert worker['global_step'] == STEPS
  values, step = clusterlib.read_checkpoint(str(train_dir))
  assert step == STEPS
  # Whole tensors under the canonical names: what every strategy restores.
  assert values['logits/weights'].shape == (784, 10)
  clusterlib.assert_close(values, clusterlib.reference(
      initial, 2, STEPS, staged=staged))
