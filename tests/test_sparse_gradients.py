"""Sparse gradients (IndexedSlices from embedding_lookup and gather).

Copy and parameter-server paths keep them sparse; an all-reduce algorithm
densifies them and says so once. Every path trains to the NumPy reference.

A plain `tf.gather` of a table that lives on another device than the tower
(the parameter-server strategies) is placed with its table, as
`embedding_lookup` places its gather (`variable_mgr.placement.table_device`):
`GATHER_LEFT_ON_TOWER` names where that is not done yet.
"""

import warnings

import numpy as np
import pytest
import tensorflow as tf

import real_models
from real_models import EmbeddingModel
import variable_mgr
from variable_mgr import aggregation
from variable_mgr import compat
from variable_mgr import placement
from variable_mgr.allreduce import layout

tf1 = tf.compat.v1

STEPS = 3
NUM_TOWERS = 2
DENSIFYING = ('replicated_xring',)
# Variables on another device than the towers that read them.
REMOTE_TABLES = ('ps_cpu', 'ps_spread')

# TensorFlow 2's tf.gradients colocates every gradient op with its forward
# op; TensorFlow 1.15's colocates none.
GRADIENTS_COLOCATE = compat.major_version() >= 2
# Strategies whose tower device functions leave a plain tf.gather of a table
# on the tower device: tf.train.replica_device_setter's, which
# VariableMgrLocalFetchFromPS.get_devices returns for
# local_parameter_device='cpu'.
GATHER_LEFT_ON_TOWER = ()

GATHER_NOT_PLACED = (
    'TensorFlow 2 only: a tf.gather of a table (ResourceGather, or GatherV2 '
    'of a ref variable) that the tower device functions leave on the tower '
    'device, the table on another device: the placer puts a ResourceGather '
    'with its resource (and a ref variable\'s shape op with its value) while '
    'the gradient ops colocated with the gather carry the tower device, and '
    'the session refuses the graph ("Cannot colocate nodes ... Gather_grad '
    '... Cannot merge devices with incompatible ids"). The device functions '
    'of VariableMgrLocalFetchFromPS.get_devices for '
    '--local_parameter_device=cpu are tf.train.replica_device_setter\'s; '
    'placement.replica_device_setter places such a gather with its table '
    'and ParamServerDeviceSetter does (local_parameter_device=gpu).')


def _densify_warnings(records):
  return [r for r in records if issubclass(r.category, UserWarning) and
          'IndexedSlices' in str(r.message)]


def _assert_trains_like_numpy(name, model, monkeypatch):
  """Builds `model` under strategy `name`, checks where its tables'
  gradients are sparse, and trains it STEPS steps against NumPy."""
  # The warning is once per process: forget earlier ones.
  monkeypatch.setattr(aggregation, '_densify_warned', [])
  with warnings.catch_warnings(record=True) as records:
    warnings.simplefilter('always')
    run = real_models.Run(name, NUM_TOWERS, model)
  try:
    if name in DENSIFYING:
      # Two tables on two towers are densified, and one warning says so.
      assert len(_densify_warnings(records)) == 1
    else:
      assert not _densify_warnings(records)
    tables = [(g, v) for grads in run.applied for g, v in grads
              if v.op.name.split('/', 1)[1] in model.TABLES]
    assert len(tables) == len(model.TABLES) * len(run.applied)
    for g, v in tables:
      table = v.op.name
      if name in DENSIFYING:
        assert isinstance(g, tf.Tensor), (table, g)
      else:
        assert isinstance(g, tf.IndexedSlices), (table, g)

    init = run.values(0)
    batches = real_models.make_batches(model, NUM_TOWERS, STEPS)
    history, _ = real_models.reference(model, init, batches, run.combine,
                                       stale=run.stale)
    for step, step_batches in enumerate(batches):
      run.step(step_batches)
      for t in run.towers:
        real_models.assert_close(run.values(t), history[step][t], np.float32,
                                 model.TRAINABLE,
                                 '%s tower %d step %d' % (name, t, step))
    # Rows no batch looks up never move.
    final = run.values(0)
    np.testing.assert_array_equal(final['embedding/words'][-2:],
                                  init['embedding/words'][-2:])
  finally:
    run.close()


@pytest.mark.parametrize('name', real_models.NAMES)
def test_embedding_tables_match_numpy(name, variable_kind, monkeypatch):
  _assert_trains_like_numpy(
      name, EmbeddingModel(gather=name not in REMOTE_TABLES), monkeypatch)


def test_densifying_all_reduce_warns_once(monkeypatch):
  """pytest.warns form of the check above, for the all-reduce path."""
  monkeypatch.setattr(aggregation, '_densify_warned', [])
  with pytest.warns(UserWarning, match='IndexedSlices') as records:
    run = real_models.Run('replicated_xring', 3, EmbeddingModel())
  run.close()
  assert len(_densify_warnings(records)) == 1


def _same_device(a, b):
  return layout.device_key(a) == layout.device_key(b)


def _gather_op(row):
  """The gather op behind `row = tf.gather(table, ids)`: TensorFlow 1.15's
  `ResourceVariable.sparse_read` returns an Identity of its ResourceGather,
  later releases the ResourceGather itself."""
  op = row.op
  if op.type == 'Identity' and op.inputs[0].op.type == 'ResourceGather':
    return op.inputs[0].op
  return op


def _places_gathers(name):
  """Whether strategy `name`'s device functions put a plain tf.gather that
  tower 1 builds of a shared variable on the variable's device."""
  create_args, host_args, _ = real_models.STRATEGIES[name]
  with tf.Graph().as_default():
    host = variable_mgr.LocalBenchmarkCnn(NUM_TOWERS, **host_args)
    mgr = variable_mgr.create(benchmark_cnn=host, **create_args)
    devices = mgr.get_devices()
    for d in range(NUM_TOWERS):
      with mgr.create_outer_variable_scope(d), tf1.device(devices[d]):
        table = tf1.get_variable('table', [4, 3])
        row = tf.gather(table, [1])
  return _same_device(_gather_op(row).device, table.op.device)


@pytest.mark.parametrize('name', [
    pytest.param(name, marks=pytest.mark.xfail(
        GRADIENTS_COLOCATE, strict=True, raises=tf.errors.InvalidArgumentError,
        reason=GATHER_NOT_PLACED)) if name in GATHER_LEFT_ON_TOWER else name
    for name in REMOTE_TABLES])
def test_gather_of_a_parameter_server_table(name, variable_kind, monkeypatch):
  placed = _places_gathers(name)
  assert placed == (name not in GATHER_LEFT_ON_TOWER), (
      'GATHER_LEFT_ON_TOWER is out of date for %s' % name)
  _assert_trains_like_numpy(name, EmbeddingModel(gather=True), monkeypatch)


def _device_functions():
  return {
      'ParamServerDeviceSetter': placement.ParamServerDeviceSetter(
          '/cpu:1', ['/cpu:0']),
      'replica_device_setter': placement.replica_device_setter(
          worker_device='/cpu:1', ps_device='/cpu:0', ps_tasks=1,
          ps_ops=compat.ps_ops()),
  }


@pytest.mark.parametrize('setter', sorted(_device_functions()))
def test_a_gather_of_a_variable_goes_with_the_variable(setter, variable_kind):
  """Its gradient, colocated with it by TensorFlow 2's tf.gradients, then
  has the table's device too; other gathers and placed ones stay put."""
  with tf.Graph().as_default() as graph:
    with tf1.device(_device_functions()[setter]):
      table = tf1.get_variable('table', [4, 3])
      ids = tf1.placeholder(tf.int32, [2])
      row = tf.gather(table, ids)
      computed = tf.gather(tf.ones([4, 3]) * 2.0, ids)
      with tf1.device('/cpu:1'):
        pinned = tf.gather(table, ids)
      loss = tf.reduce_sum(row * row)
    (grad,) = tf.gradients(loss, [table])
  assert _gather_op(row).type == ('ResourceGather'
                                  if variable_kind == 'resource' else 'GatherV2')
  assert _same_device(table.op.device, '/cpu:0')
  assert _same_device(_gather_op(row).device, '/cpu:0')
  assert _same_device(computed.op.device, '/cpu:1')
  assert _same_device(_gather_op(pinned).device, '/cpu:1')
  assert isinstance(grad, tf.IndexedSlices)
  init = tf1.variables_initializer([table])
  config = tf1.ConfigProto(device_count={'CPU': 2})
  with tf1.Session(graph=graph, config=config) as sess:
    sess.run(init)
    table_value = sess.run(table)
    got, values, indices = sess.run([row, grad.values, grad.indices],
                                    feed_dict={ids: [3, 1]})
  np.testing.assert_array_equal(got, table_value[[3, 1]])
  np.testing.assert_allclose(values, 2 * table_value[[3, 1]], rtol=1e-6)
  np.testing.assert_array_equal(indices, [3, 1])
