"""BenchmarkConfig: the model's defaults fill only what the flags leave
unset (None); a value given, 0 included, stays."""

from variable_mgr.benchmark.models import catalog
from variable_mgr.benchmark.training import run_config


def test_resolved_takes_the_models_defaults_for_what_is_unset():
  model = catalog.get_model('resnet20')
  config = run_config.BenchmarkConfig(model='resnet20').resolved()
  assert (config.batch_size, config.learning_rate, config.weight_decay) == (
      model.default_batch_size, model.learning_rate, model.weight_decay)
  assert model.weight_decay > 0  # So that a 0 given below can be lost.


def test_resolved_keeps_a_weight_decay_of_zero():
  """--weight_decay=0 turns the L2 term off; it is not 'unset'."""
  config = run_config.BenchmarkConfig(
      model='resnet20', weight_decay=0.0, batch_size=3,
      learning_rate=0.5).resolved()
  assert (config.batch_size, config.learning_rate, config.weight_decay) == (
      3, 0.5, 0.0)
