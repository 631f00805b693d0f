"""A staged parameter_server on a cluster pulls each variable from its PS
task once a step per worker: one snapshot of the variable on the worker's
CPU fills the staging area of every tower (`staging.StagedVariableGetter`
with a CPU device), instead of one pull a tower.

Read off the built graph (nothing runs): the cluster is two PS tasks and
one worker of two towers, and each Stage op is traced back to the snapshot
of the variable it stores (a ReadVariableOp, a ref variable's DeepCopy).
"""

import tensorflow as tf

import variable_mgr

tf1 = tf.compat.v1

CLUSTER = {'ps': ['h:2222', 'h:2223'], 'worker': ['h:2224']}
TOWERS = 2
SHAPES = {'a': [30], 'b': [10, 3], 'c': [7]}
_VARIABLE_TYPES = ('VarHandleOp', 'VariableV2')
_SNAPSHOT_TYPES = ('ReadVariableOp', 'DeepCopy')


def _build(mgr, host):
  """The towers of the harness protocol (see README), without updates."""
  host.devices = mgr.get_devices()
  for d in range(TOWERS):
    with mgr.create_outer_variable_scope(d), tf.name_scope('tower_%d' % d):
      with tf1.device(host.devices[d]):
        variables = [tf1.get_variable(n, s) for n, s in sorted(SHAPES.items())]
        tf.add_n([tf.reduce_sum(v) for v in variables])


def _source(tensor, types):
  """The first op of `types` up the chain of first inputs from `tensor`."""
  op = tensor.op
  while op.type not in types:
    assert op.inputs, (tensor.name, op.name, op.type)
    op = op.inputs[0].op
  return op


def test_one_snapshot_a_variable_fills_every_towers_area(variable_kind):
  with tf.Graph().as_default() as graph:
    host = variable_mgr.ClusterBenchmarkCnn(CLUSTER, task_index=0,
                                            num_towers=TOWERS)
    mgr = variable_mgr.create('parameter_server', host, staged_vars=True)
    _build(mgr, host)
    stages = [op for op in graph.get_operations() if op.type == 'Stage']
    snapshots = {}  # variable op name -> snapshot op names
    for stage in stages:
      snapshot = _source(stage.inputs[0], _SNAPSHOT_TYPES)
      variable = _source(snapshot.inputs[0], _VARIABLE_TYPES)
      snapshots.setdefault(variable.name, set()).add(snapshot.name)
  # One area a variable a tower, filled from one snapshot a variable (the
  # worker's copy, which test_placement_graphs finds on its CPU).
  assert len(stages) == len(SHAPES) * TOWERS
  assert dict((name, len(found)) for name, found in snapshots.items()) == (
      dict(('v/%s' % n, 1) for n in SHAPES)), snapshots
