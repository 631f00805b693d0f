"""Staged parameter_server on a cluster: the push of a step's gradients
waits for nothing from the PS, so it overlaps the pull of the next step's
values; the updates still wait for what one-step-stale SGD needs.

Checked on the worker graph the cluster runner builds
(`cluster.worker_graph.build_worker_graph`), 1 worker (no barriers) and 2
(the `gradients_ready` barrier), ref and resource variables:

- every tensor a worker sends to a PS for an update (the pushed gradient)
  has no ancestor on a PS task and no ancestor that pulls a variable (a
  staged put or its snapshot): any such ancestor makes the push wait for a
  message from the PS, which on a link of finite speed queues behind the
  pull's bytes (a staged step then costs pull + push: 1100 ms against 600
  ms on 200 Mbit/s links, 1 PS, 2 workers, lenet, batch 8);
- every update still runs after this worker's pull of its variable (the
  snapshot read for the next step's put), after every tower's get of it,
  and with 2 workers after the `gradients_ready` barrier (no worker updates
  a variable another worker still pulls).

Devices are those the placer gives: an op with a ref or resource input runs
where that input's variable lives (the placer colocates them), any other op
where its device string says, and an op without one on the worker.
"""

import pytest
import tensorflow as _tf

import graph_walk
import variable_mgr
from variable_mgr.benchmark.cluster import task_spec
from variable_mgr.benchmark.cluster import worker_graph
from variable_mgr.benchmark.training import run_config

tf = _tf.compat.v1

UPDATE_PREFIXES = ('Apply', 'ResourceApply', 'SparseApply',
                   'ResourceSparseApply', 'ScatterSub', 'ResourceScatterSub',
                   'AssignSub', 'AssignSubVariableOp')
PULL_OP_TYPES = ('Stage', 'DeepCopy')


def _graph(num_workers, resource, min_bytes=0, **fields):
  """The worker graph; `min_bytes` > 0: 2 PS tasks, the trivial model's
  weights (31360 bytes) split in two slices; `fields`: more config."""
  workers = ['127.0.0.1:%d' % (2300 + k) for k in range(num_workers)]
  ps = ['127.0.0.1:2299'] + (['127.0.0.1:2298'] if min_bytes else [])
  spec = task_spec.TaskSpec('worker', 0, ps, workers)
  fields = dict(dict(variable_update='parameter_server', staged_vars=True),
                **fields)
  config = run_config.BenchmarkConfig(
      model='trivial', num_gpus=2, use_resource_vars=resource,
      variable_partition_min_bytes=min_bytes, **fields).resolved()
  host = variable_mgr.ClusterBenchmarkCnn(spec.cluster_dict(), 0, 2)
  return worker_graph.build_worker_graph(config, host, spec, sync=True)


def _is_ref_or_resource(tensor):
  return tensor.dtype == tf.resource or tensor.dtype._is_ref_dtype  # pylint: disable=protected-access


class _Placement(object):
  """The job of each op as the placer decides it (see module doc)."""

  def __init__(self):
    self._jobs = {}

  def job(self, op):
    if op not in self._jobs:
      inputs = [t for t in op.inputs if _is_ref_or_resource(t)]
      if inputs:
        self._jobs[op] = self.job(inputs[0].op)
      else:
        spec = tf.DeviceSpec.from_string(op.device or '')
        self._jobs[op] = spec.job or 'worker'
    return self._jobs[op]


def _updates(graph):
  return [op for op in graph.get_operations()
          if op.type.startswith(UPDATE_PREFIXES)]


def _pushes(update, placement):
  """The worker ops whose outputs reach `update` (on a PS) by data edges:
  what the worker sends."""
  result = set()
  stack = [update]
  seen = set()
  while stack:
    op = stack.pop()
    for tensor in op.inputs:
      producer = tensor.op
      if producer in seen:
        continue
      seen.add(producer)
      if placement.job(producer) == 'worker':
        result.add(producer)
      else:
        stack.append(producer)
  return result


@pytest.mark.parametrize('resource', [False, True], ids=['ref', 'resource'])
@pytest.mark.parametrize('num_workers,min_bytes', [(1, 0), (2, 0), (2, 10000)],
                         ids=['1', '2', '2-split'])
def test_push_waits_for_nothing_from_the_ps(num_workers, min_bytes, resource):
  g = _graph(num_workers, resource, min_bytes)
  placement = _Placement()
  updates = _updates(g.graph)
  # trivial: logits/weights (in 2 slices when split) and logits/biases.
  assert len(updates) == (3 if min_bytes else 2)
  for update in updates:
    assert placement.job(update) == 'ps', update.name
    pushes = _pushes(update, placement)
    assert pushes, update.name
    for push in pushes:
      from_ps = [op.name for op in graph_walk.ancestors(push) | {push}
                 if placement.job(op) == 'ps']
      assert not from_ps, (
          'the push %s of %s waits for %s on the PS' % (
              push.name, update.name, from_ps))
      pulls = [op.name for op in graph_walk.ancestors(push) | {push}
               if op.type in PULL_OP_TYPES]
      assert not pulls, (
          'the push %s of %s waits for the pulls %s' % (
              push.name, update.name, pulls))


def _pull_read(put):
  """The op that reads the variable for `put`: the snapshot (DeepCopy) of a
  ref variable's value, the ReadVariableOp of a resource variable."""
  op = put
  while op.inputs:
    op = op.inputs[0].op
    if op.type in ('DeepCopy', 'ReadVariableOp'):
      return op
  raise AssertionError('no read of a variable feeds %s' % put.name)


def _barrier_queue_names(dequeue):
  return [t.op.get_attr('shared_name').decode() for t in dequeue.inputs
          if t.op.type.startswith('FIFOQueue')]


@pytest.mark.parametrize('resource', [False, True], ids=['ref', 'resource'])
@pytest.mark.parametrize('num_workers', [1, 2])
def test_update_waits_for_its_pull_and_gets(num_workers, resource):
  g = _graph(num_workers, resource)
  staged = g.mgr.staging_vars_on_devices
  for update in _updates(g.graph):
    ancestors = graph_walk.ancestors(update)
    variable = [t.op for t in update.inputs if _is_ref_or_resource(t)][0]
    towers = [tower[variable.name] for tower in staged]
    assert len(towers) == 2
    for put, get in towers:
      assert get.op in ancestors, (update.name, get.name)
      # The put stores its value later; the read must come first.
      assert _pull_read(put) in ancestors, (update.name, put.name)
    barriers = [op for op in ancestors
                if op.type.startswith('QueueDequeueMany') and any(
                    name.startswith('gradients_ready_')
                    for name in _barrier_queue_names(op))]
    assert bool(barriers) == (num_workers > 1), update.name


@pytest.mark.parametrize('resource', [False, True], ids=['ref', 'resource'])
def test_gradients_ready_barrier_waits_for_every_pull_and_get(resource):
  """What other workers wait for before they update: this worker's pulls."""
  g = _graph(2, resource)
  enqueues = [op for op in g.graph.get_operations()
              if op.type.startswith('QueueEnqueue') and any(
                  name.startswith('gradients_ready_')
                  for name in _barrier_queue_names(op))]
  assert enqueues
  for enqueue in enqueues:
    ancestors = graph_walk.ancestors(enqueue)
    for tower in g.mgr.staging_vars_on_devices:
      for put, get in tower.values():
        assert _pull_read(put) in ancestors, (enqueue.name, put.name)
        assert get.op in ancestors, (enqueue.name, get.name)


def _exchange_ops(graph, kind):
  """The ops of `kind` ('QueueEnqueue', 'QueueDequeueMany') on the queues
  of the dynamic loss scale's exchange of finite flags."""
  return [op for op in graph.get_operations()
          if op.type.startswith(kind) and any(
              name.startswith('loss_scale_finite')
              for name in _barrier_queue_names(op))]


DYNAMIC_SCALE = dict(use_fp16=True, fp16_enable_auto_loss_scale=True)


@pytest.mark.parametrize('resource', [False, True], ids=['ref', 'resource'])
def test_a_dynamic_scale_exchange_replaces_gradients_ready(resource):
  """With a dynamic loss scale on 2 synchronous workers, the exchange of
  finite flags waits for every pull and get of this worker, and every
  update for the exchange: the `gradients_ready` barrier is not built."""
  g = _graph(2, resource, **DYNAMIC_SCALE)
  names = [n for op in g.graph.get_operations()
           if op.type.startswith('QueueDequeueMany')
           for n in _barrier_queue_names(op)]
  assert not [n for n in names if n.startswith('gradients_ready_')], names
  enqueues = _exchange_ops(g.graph, 'QueueEnqueue')
  takes = _exchange_ops(g.graph, 'QueueDequeueMany')
  assert len(enqueues) == 1 and len(takes) == 1, (enqueues, takes)
  ancestors = graph_walk.ancestors(enqueues[0])
  for tower in g.mgr.staging_vars_on_devices:
    for put, get in tower.values():
      assert _pull_read(put) in ancestors, put.name
      assert get.op in ancestors, get.name
  # The take follows this worker's own put, so that fetching the decision
  # hands the flag to the other worker.
  assert enqueues[0] in graph_walk.ancestors(takes[0])
  updates = _updates(g.graph)
  assert updates
  for update in updates:
    assert takes[0] in graph_walk.ancestors(update), update.name


@pytest.mark.parametrize('fields', [
    dict(variable_update='distributed_replicated', staged_vars=False),
    dict(DYNAMIC_SCALE, fp16_enable_auto_loss_scale=False)],
                         ids=['distributed_replicated', 'fixed_scale'])
def test_no_needless_wait_before_the_exchange(fields):
  """distributed_replicated's workers update only the masters, which no
  worker reads before the step's barriers: its exchange waits for its
  flag alone (no control input). A fixed scale has no exchange, and
  parameter_server keeps its `gradients_ready` barrier."""
  g = _graph(2, True, **dict(DYNAMIC_SCALE, **fields))
  enqueues = _exchange_ops(g.graph, 'QueueEnqueue')
  if not fields.get('fp16_enable_auto_loss_scale', True):
    assert not enqueues
    names = [n for op in g.graph.get_operations()
             if op.type.startswith('QueueDequeueMany')
             for n in _barrier_queue_names(op)]
    assert [n for n in names if n.startswith('gradients_ready_')], names
    return
  assert len(enqueues) == 1
  assert not enqueues[0].control_inputs, enqueues[0].control_inputs
