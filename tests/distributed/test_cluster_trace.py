"""--trace_file on a cluster: each worker writes a Chrome trace of its last
warm-up step to the given path with its task inserted; PS tasks write
nothing."""

import json
import os
import re

import pytest

from variable_mgr import compat
from variable_mgr.benchmark.cluster import trace
from variable_mgr.benchmark.flags import command_line as cli_flags

import clusterlib

WORKERS = 2


def test_task_path_inserts_the_task_before_the_extension():
  assert trace.task_path('/tmp/t/trace.json', 'worker:1') == (
      '/tmp/t/trace.worker1.json')
  assert trace.task_path('run.trace.json', 'worker:12') == (
      'run.trace.worker12.json')
  assert trace.task_path('/tmp/t/trace', 'worker:0') == '/tmp/t/trace.worker0'


def test_traced_step_is_the_last_warm_up_step():
  assert trace.traced_step(10) == -1
  assert trace.traced_step(1) == -1
  assert trace.traced_step(0) == 0


def test_cluster_task_flags_accept_a_trace_file(tmp_path):
  path = str(tmp_path / 'trace.json')
  args = cli_flags.parse_task_args([
      '--job_name', 'worker', '--task_index', '0', '--ps_hosts', 'h:1',
      '--worker_hosts', 'h:2,h:3', '--variable_update',
      'collective_all_reduce', '--trace_file', path])
  assert args.trace_file == path


def _devices(events):
  """The device names of a Chrome trace's processes (TensorFlow's timeline
  names each process '<device> Compute' or '<device> Tensors')."""
  names = set()
  for event in events:
    if event.get('ph') == 'M' and event.get('name') == 'process_name':
      names.add(event['args']['name'].rsplit(' ', 1)[0])
  return names


def test_each_worker_writes_a_trace_of_its_devices(launch, tmp_path):
  trace_dir = tmp_path / 'traces'
  trace_dir.mkdir()
  cluster = launch(clusterlib.BASE_FLAGS + [
      '--variable_update', 'collective_all_reduce', '--num_ps', '1',
      '--num_workers', str(WORKERS), '--num_batches', '2',
      '--num_warmup_batches', '2', '--op_timeout_secs', '30',
      '--trace_file', str(trace_dir / 'trace.json')])
  assert cluster.finish() == 0, cluster.output
  clusterlib.assert_all_gone(cluster)
  # One a worker, none for the PS task and none under the path as given.
  assert sorted(os.listdir(str(trace_dir))) == [
      'trace.worker%d.json' % k for k in range(WORKERS)]
  for k in range(WORKERS):
    path = str(trace_dir / ('trace.worker%d.json' % k))
    assert 'Wrote a Chrome trace of the last warm-up step to %s' % path in (
        cluster.output)
    with open(path) as f:
      events = json.load(f)['traceEvents']
    devices = _devices(events)
    own = set(d for d in devices
              if re.search(r'/job:worker/replica:0/task:%d/' % k, d))
    # Both towers (CPU devices 0 and 1) of this worker, and no device of
    # the other worker, whose ops this session does not run.
    assert any(d.endswith('CPU:0') for d in own), devices
    assert any(d.endswith('CPU:1') for d in own), devices
    assert not [d for d in devices
                if re.search(r'/task:%d/' % (1 - k), d) and '/job:worker' in d]
    ops = [e for e in events if e.get('ph') == 'X']
    assert ops
    op_types = set(e['args'].get('op') for e in ops if 'args' in e)
    names = [e['args'].get('name', '') for e in ops if 'args' in e]
    # The step's gradient all-reduces, the worker's sum of its towers and
    # the update ran inside the traced step.
    assert 'CollectiveReduce' in op_types, sorted(op_types)
    assert any(compat.SUM_SCOPE in n for n in names), sorted(names)


@pytest.mark.long
def test_controller_writes_one_trace_of_every_worker(launch, tmp_path):
  """distributed_all_reduce: the controller runs the cluster's one graph
  and writes the path as given, with the devices of every worker."""
  trace_dir = tmp_path / 'traces'
  trace_dir.mkdir()
  cluster = launch(clusterlib.BASE_FLAGS + [
      '--variable_update', 'distributed_all_reduce', '--all_reduce_spec',
      'pscpu/pscpu', '--num_workers', str(WORKERS), '--num_batches', '2',
      '--num_warmup_batches', '2', '--op_timeout_secs', '30',
      '--trace_file', str(trace_dir / 'trace.json')])
  assert cluster.finish() == 0, cluster.output
  clusterlib.assert_all_gone(cluster)
  assert os.listdir(str(trace_dir)) == ['trace.json']
  with open(str(trace_dir / 'trace.json')) as f:
    devices = _devices(json.load(f)['traceEvents'])
  for k in range(WORKERS):
    for d in range(clusterlib.TOWERS):
      assert '/job:worker/replica:0/task:%d/device:CPU:%d' % (k, d) in (
          devices), devices
