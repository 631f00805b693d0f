"""Sparse gradients (IndexedSlices from embedding_lookup and gather).

Copy and parameter-server paths keep them sparse; an all-reduce algorithm
densifies them and says so once. Every path trains to the NumPy reference.

`tf.gather` of a table that lives on another device than the tower (the
parameter-server strategies) does not run: see
`test_gather_of_a_parameter_server_table`. Those strategies read both
tables with `embedding_lookup`, which colocates its gather with the table.
"""

import warnings

import numpy as np
import pytest
import tensorflow as tf

import real_models
from real_models import EmbeddingModel
from variable_mgr import aggregation

STEPS = 3
NUM_TOWERS = 2
DENSIFYING = ('replicated_xring',)
# Variables on another device than the towers that read them.
REMOTE_TABLES = ('ps_cpu', 'ps_spread')

GATHER_ON_PS = (
    'tf.gather (ResourceGather, or GatherV2 of a ref variable) built under '
    'the tower device of a parameter-server strategy, its table on another '
    'device: the placer puts the gather with its resource (or its '
    'colocated read) while gradient ops colocated with the gather carry '
    'the tower device, and the session refuses the graph ("Cannot colocate '
    'nodes ... Gather_grad ... Cannot merge devices with incompatible ids"). '
    'Plain TensorFlow does the same without a manager; embedding_lookup '
    'colocates its gather with the table and runs. The devices returned by '
    'VariableMgrLocalFetchFromPS.get_devices '
    '(variable_mgr/strategies/parameter_server.py) could place a gather '
    'whose params are a parameter-server variable on that variable\'s '
    'device, as embedding_lookup does')


def _densify_warnings(records):
  return [r for r in records if issubclass(r.category, UserWarning) and
          'IndexedSlices' in str(r.message)]


@pytest.mark.parametrize('name', real_models.NAMES)
def test_embedding_tables_match_numpy(name, variable_kind, monkeypatch):
  # The warning is once per process: forget earlier ones.
  monkeypatch.setattr(aggregation, '_densify_warned', [])
  model = EmbeddingModel(gather=name not in REMOTE_TABLES)
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


def test_densifying_all_reduce_warns_once(monkeypatch):
  """pytest.warns form of the check above, for the all-reduce path."""
  monkeypatch.setattr(aggregation, '_densify_warned', [])
  with pytest.warns(UserWarning, match='IndexedSlices') as records:
    run = real_models.Run('replicated_xring', 3, EmbeddingModel())
  run.close()
  assert len(_densify_warnings(records)) == 1


@pytest.mark.xfail(strict=True, raises=tf.errors.InvalidArgumentError,
                   reason=GATHER_ON_PS)
@pytest.mark.parametrize('name', REMOTE_TABLES)
def test_gather_of_a_parameter_server_table(name):
  run = real_models.Run(name, NUM_TOWERS, EmbeddingModel(gather=True))
  run.close()
