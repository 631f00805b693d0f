"""The fields of the worker graph the cluster runner builds
(`cluster.worker_graph.build_worker_graph`) are the tensors their names
say: the chief's save decisions (`save_request`, fed; `save_step`, read by
every worker) and the saved step's snapshot (`snapshot_step`), each where
it is made and None where it is not (checked on the graph; the cluster
tests run them)."""

import pytest

import graph_walk
import variable_mgr
from variable_mgr.benchmark.cluster import task_spec
from variable_mgr.benchmark.cluster import worker_graph
from variable_mgr.benchmark.training import run_config
from variable_mgr.compat import tf


def _graph(task_index, tmp_path, variable_update='parameter_server',
           **fields):
  workers = ['127.0.0.1:%d' % (2400 + k) for k in range(2)]
  spec = task_spec.TaskSpec('worker', task_index, ['127.0.0.1:2399'], workers)
  config = run_config.BenchmarkConfig(
      model='trivial', num_gpus=1, variable_update=variable_update,
      train_dir=str(tmp_path), **fields).resolved()
  host = variable_mgr.ClusterBenchmarkCnn(spec.cluster_dict(), task_index, 1)
  return worker_graph.build_worker_graph(config, host, spec, sync=True)


def _read_variable(tensor):
  """The name of the variable a read tensor reads (ref or resource)."""
  op = tensor.op
  while op.type in ('Identity', 'ReadVariableOp') and op.inputs:
    op = op.inputs[0].op
  return op.name


def test_the_chief_s_save_fields(tmp_path):
  g = _graph(0, tmp_path, save_model_secs=60)
  # The chief's decision, fed before a step.
  assert g.save_request.op.type == 'Placeholder'
  assert g.save_request.dtype == tf.int64
  assert g.save_request.op.name == 'save_request'
  # What every worker reads after the step's barrier.
  assert _read_variable(g.save_step) == 'save_step'
  # The snapshot of the global step the saver writes.
  assert g.snapshot_step.dtype.base_dtype == tf.int64
  assert _read_variable(g.snapshot_step) == 'saved_global_step'
  assert g.saver is not None and g.restorer is not None


def test_another_worker_reads_the_decision_and_saves_nothing(tmp_path):
  g = _graph(1, tmp_path, save_model_secs=60)
  assert g.save_request is None
  assert _read_variable(g.save_step) == 'save_step'
  assert g.snapshot_step is None and g.saver is None


@pytest.mark.parametrize('task_index', [0, 1])
def test_without_timed_saves_no_decision_travels(task_index, tmp_path):
  g = _graph(task_index, tmp_path)
  assert g.save_request is None and g.save_step is None
  assert (g.snapshot_step is not None) == (task_index == 0)


def test_the_chief_hands_one_ready_token_to_each_other_worker(tmp_path):
  chief = _graph(0, tmp_path)
  tokens = [t for t in chief.ready_enqueue.inputs if t.dtype == tf.int32]
  assert [t.shape.as_list() for t in tokens] == [[1]]  # 2 workers: 1 other.
  assert chief.ready_dequeue is None
  other = _graph(1, tmp_path)
  assert other.ready_enqueue is None
  assert other.ready_dequeue.dtype == tf.int32


@pytest.mark.parametrize('task_index', [0, 1])
def test_a_worker_initialises_the_variables_on_its_own_task(task_index,
                                                           tmp_path):
  """collective_all_reduce keeps every copy (and its optimizer slots) on
  the worker's own task, in its own graph: the chief's global init covers
  its own, another worker's local init its own (the broadcast gives the
  copies their values, not the slots theirs), and no worker initialises
  the PS's variables twice."""
  g = _graph(task_index, tmp_path, 'collective_all_reduce',
             optimizer='momentum')
  with g.graph.as_default():
    variables = tf.global_variables()
  on_own = set(v.op.name for v in variables
               if tf.DeviceSpec.from_string(v.device).job == 'worker')
  assert any('Momentum' in n for n in on_own), sorted(on_own)
  above = graph_walk.ancestors(g.local_init_op)
  initialised = set(v.op.name for v in variables if v.initializer in above)
  assert initialised == (set() if task_index == 0 else on_own)


@pytest.mark.parametrize('task_index', [0, 1])
def test_the_token_counts_read_the_queues_their_names_say(task_index,
                                                          tmp_path):
  """`started_sizes` counts each worker's 'started' token on PS 0 (the
  peer watcher's proof that a worker came up), `done_sizes` its 'done'
  token, one queue a worker, in the workers' order."""
  g = _graph(task_index, tmp_path)
  for kind, sizes in (('started', g.started_sizes),
                      ('done', g.done_sizes)):
    assert [s.op.inputs[0].op.name for s in sizes] == [
        '%s_worker_%d_ps_0' % (kind, k) for k in range(2)]
