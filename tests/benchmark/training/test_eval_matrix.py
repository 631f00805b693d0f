"""--eval and --eval_during_training_every_n_steps under every local
strategy (parameter_server on the CPU and spread, staged, replicated with
the default and an all-reduce spec, independent), against NumPy's accuracy
(tests/benchmark/training/test_eval.py's).

During training, each evaluation must score the variables the training
session holds at that step (tower 0's copy, the shared one for the PS
strategies, the variables themselves under staging, not a staged read):
the test reads them from the session when the evaluation starts and scores
them in NumPy.
"""

import numpy as np
import pytest
import tensorflow as _tf

from test_eval import eval_config
from test_eval import numpy_accuracy
from variable_mgr.benchmark.runs import local_run
from variable_mgr.benchmark.training import run_config

tf = _tf.compat.v1

STRATEGIES = {
    'independent': dict(variable_update='independent'),
    'ps_cpu': dict(variable_update='parameter_server'),
    'ps_gpu': dict(variable_update='parameter_server',
                   local_parameter_device='gpu'),
    'staged': dict(variable_update='parameter_server', staged_vars=True),
    'replicated': dict(variable_update='replicated'),
    'replicated_xring': dict(variable_update='replicated',
                             all_reduce_spec='xring'),
}
NAMES = sorted(STRATEGIES)
EVERY, STEPS = 2, 4
EVAL_BATCHES = 3  # 96 of the 300 images: enough to tell two steps apart.


def _training_copy(graph, strategy):
  """`(weights, biases)`: the variables a training step updates, of tower
  0 (the shared ones for the PS strategies)."""
  prefix = 'v/' if strategy.startswith(('ps', 'staged')) else 'v0/'
  by_name = dict((v.op.name, v) for v in graph.get_collection(
      tf.GraphKeys.GLOBAL_VARIABLES))
  return (by_name[prefix + 'logits/weights'],
          by_name[prefix + 'logits/biases'])


@pytest.mark.parametrize('strategy', NAMES)
def test_eval_during_training_scores_the_training_variables(
    strategy, tmp_path, monkeypatch):
  seen = []
  evaluate = local_run._TrainingEvaluator.evaluate  # pylint: disable=protected-access

  def recording(self, sess, saver, log):
    weights, biases = _training_copy(sess.graph, strategy)
    seen.append(sess.run([weights, biases]))
    return evaluate(self, sess, saver, log)

  monkeypatch.setattr(local_run._TrainingEvaluator, 'evaluate', recording)  # pylint: disable=protected-access
  lines = []
  results = local_run.run_one(run_config.BenchmarkConfig(
      model='trivial', num_gpus=2, batch_size=16, data_name='digits',
      train_dir=str(tmp_path / 'train'), learning_rate=0.05,
      num_batches=STEPS, num_warmup_batches=0, display_every=100,
      eval_during_training_every_n_steps=EVERY,
      num_eval_batches=EVAL_BATCHES, **STRATEGIES[strategy]),
                              log=lines.append)
  evaluations = results['evaluations']
  assert [e['global_step'] for e in evaluations] == [EVERY, STEPS]
  assert len(seen) == len(evaluations)
  scored = []
  for (weights, biases), result in zip(seen, evaluations):
    top_1, top_5, count = numpy_accuracy(weights, biases,
                                         limit=result['eval_examples'])
    scored.append((top_1, top_5))
    assert result['eval_examples'] == count == 96
    np.testing.assert_allclose(result['top_1_accuracy'], top_1, atol=1e-9,
                               err_msg='step %d' % result['global_step'])
    np.testing.assert_allclose(result['top_5_accuracy'], top_5, atol=1e-9)
    assert ('Step %d: Accuracy @ 1 = %.4f Accuracy @ 5 = %.4f [%d examples]'
            % (result['global_step'], top_1, top_5, count)) in lines
  # The check can tell one step's variables from the other's.
  assert scored[0] != scored[1]


# test_eval.py evaluates a known checkpoint under independent, both
# parameter_server forms, replicated and distributed_replicated.
@pytest.mark.parametrize('strategy', ['ps_gpu', 'replicated_xring'])
def test_eval_of_a_known_checkpoint(strategy, tmp_path):
  from test_eval import write_checkpoint  # pylint: disable=g-import-not-at-top
  weights, biases = write_checkpoint(tmp_path)
  results = local_run.run_one(eval_config(tmp_path, **STRATEGIES[strategy]),
                              log=lambda *_: None)
  top_1, top_5, count = numpy_accuracy(weights, biases)
  assert results['eval_examples'] == count
  np.testing.assert_allclose(results['top_1_accuracy'], top_1, atol=1e-9)
  np.testing.assert_allclose(results['top_5_accuracy'], top_5, atol=1e-9)
