"""A synchronous cluster step's rate schedule and adam read the global step
from the run's feed (`run_start`, the global step the run starts at), never
from the variable on PS 0: the chief increments the variable once its own
part of the step is done, and nothing orders another worker's read before
that increment (the race a fed value cannot have).

Checked on the worker graphs (every synchronous strategy, both tasks, ref
and resource variables), and by running: two collective_all_reduce
workers with adam, resumed from a checkpoint at a global step above 0, end
where NumPy's adam does from that checkpoint, counting the steps from the
restored step (a run fed the wrong step gets the wrong bias correction).
"""

import numpy as np
import pytest

import clusterlib
import graph_walk
import variable_mgr
from variable_mgr.benchmark.cluster import task_spec
from variable_mgr.benchmark.cluster import worker_graph
from variable_mgr.benchmark.training import run_config
from variable_mgr.compat import tf

SCHEDULES = {
    'adam': dict(optimizer='adam'),
    'decay': dict(learning_rate=0.1, num_epochs_per_decay=1.0,
                  learning_rate_decay_factor=0.5),
}
STRATEGIES = {
    'parameter_server': dict(variable_update='parameter_server'),
    'staged': dict(variable_update='parameter_server', staged_vars=True),
    'distributed_replicated': dict(variable_update='distributed_replicated'),
    'collective_all_reduce': dict(variable_update='collective_all_reduce'),
}
INCREMENTS = ('AssignAdd', 'AssignAddVariableOp')


def _graph(task_index, sync=True, resource=False, **fields):
  workers = ['127.0.0.1:%d' % (2500 + k) for k in range(2)]
  spec = task_spec.TaskSpec('worker', task_index, ['127.0.0.1:2499'], workers)
  config = run_config.BenchmarkConfig(
      model='trivial', num_gpus=1, data_name='small',
      use_resource_vars=resource, **fields).resolved()
  host = variable_mgr.ClusterBenchmarkCnn(spec.cluster_dict(), task_index, 1)
  return worker_graph.build_worker_graph(config, host, spec, sync=sync)


def _step_reads(g):
  """The ops the train op depends on that read the global step's value,
  other than the reads that come after the chief's increment."""
  variable = g.global_step.op if g.global_step.op.type in (
      'VariableV2', 'VarHandleOp') else g.global_step.op.inputs[0].op
  before = graph_walk.ancestors(g.train_op)
  increments = [op for op in before if op.type in INCREMENTS]
  reads = []
  for op in before:
    if op is variable or op.type in INCREMENTS:
      continue
    if any(t.op is variable for t in op.inputs) and not (
        set(increments) & graph_walk.ancestors(op)):
      reads.append(op)
  return reads


@pytest.mark.parametrize('resource', [False, True])
@pytest.mark.parametrize('schedule', sorted(SCHEDULES))
@pytest.mark.parametrize('strategy', sorted(STRATEGIES))
@pytest.mark.parametrize('task_index', [0, 1])
def test_a_synchronous_step_reads_its_step_from_the_feed(
    task_index, strategy, schedule, resource):
  g = _graph(task_index, resource=resource,
             **dict(STRATEGIES[strategy], **SCHEDULES[schedule]))
  assert g.run_start.op.type == 'Placeholder'
  assert g.run_start.dtype == tf.int64
  assert g.run_start.op.name == 'run_start'
  device = tf.DeviceSpec.from_string(g.run_start.op.device)
  assert (device.job, device.task, device.device_type) == (
      'worker', task_index, 'CPU')
  assert g.run_start.op in graph_walk.ancestors(g.train_op)
  assert _step_reads(g) == []


@pytest.mark.parametrize('task_index', [0, 1])
def test_a_constant_rate_is_fed_nothing(task_index):
  g = _graph(task_index, variable_update='collective_all_reduce')
  assert g.run_start is None
  assert not [op for op in g.graph.get_operations()
              if op.type == 'Placeholder' and op.name == 'run_start']


def test_an_asynchronous_worker_reads_the_step_the_ps_holds():
  """Without a step barrier the global step is whatever the other workers'
  updates made it: each worker's schedule reads the variable."""
  g = _graph(1, sync=False, variable_update='parameter_server',
             **SCHEDULES['decay'])
  assert g.run_start is None
  assert _step_reads(g)


# -- Running --------------------------------------------------------------

WORKERS = 2
NAMES = ('logits/weights', 'logits/biases')


def _adam_reference(start, step, steps, config):
  """NumPy's adam (TensorFlow's update, bias correction at global step + 1)
  over `steps` collective steps from the checkpoint values `start`."""
  batches = clusterlib.tower_batches(WORKERS * clusterlib.TOWERS)
  w = dict((n, start[n].astype(np.float64)) for n in NAMES)
  m = dict((n, start[n + '/Adam'].astype(np.float64)) for n in NAMES)
  v = dict((n, start[n + '/Adam_1'].astype(np.float64)) for n in NAMES)
  b1, b2, eps = config.adam_beta1, config.adam_beta2, config.adam_epsilon
  for s in range(step, step + steps):
    grads = [clusterlib.gradients(w, b) for b in batches]
    t = s + 1
    rate = clusterlib.LEARNING_RATE * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
    for n in NAMES:
      g = sum(x[n] for x in grads) / len(grads)
      m[n] = b1 * m[n] + (1 - b1) * g
      v[n] = b2 * v[n] + (1 - b2) * g * g
      w[n] = w[n] - rate * m[n] / (np.sqrt(v[n]) + eps)
  return w


def _train(launch, train_dir, num_batches, warmup):
  flags = list(clusterlib.BASE_FLAGS)
  flags[flags.index('--num_warmup_batches') + 1] = str(warmup)
  cluster = launch(flags + [
      '--variable_update', 'collective_all_reduce', '--optimizer', 'adam',
      '--num_ps', '1', '--num_workers', str(WORKERS),
      '--train_dir', str(train_dir), '--num_batches', str(num_batches),
      '--op_timeout_secs', '30'])
  assert cluster.finish() == 0, cluster.output
  clusterlib.assert_all_gone(cluster)
  return clusterlib.read_checkpoint(str(train_dir))


def test_adam_resumed_across_workers_counts_from_the_restored_step(
    launch, tmp_path):
  train_dir = tmp_path / 'train'
  start, first = _train(launch, train_dir, 3, 1)
  assert first == 4  # the warm-up step trains too
  # Adam's moments are part of the checkpoint, and not zero by now.
  assert all(np.abs(start[n + '/Adam_1']).max() > 0 for n in NAMES)
  end, last = _train(launch, train_dir, 7, 1)
  assert last == 8  # 7 from global step 0, then the warm-up step
  config = run_config.BenchmarkConfig().resolved()
  expected = _adam_reference(start, first, last - first, config)
  clusterlib.assert_close(dict((n, end[n]) for n in NAMES), expected)
