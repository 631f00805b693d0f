"""The benchmark's optimizer and learning rate, from a BenchmarkConfig."""

from variable_mgr.compat import tf


def make_optimizer(config, global_step=None, global_batch=None):
  """The optimizer `config` asks for.

  Args:
    config: a resolved BenchmarkConfig.
    global_step: the step variable a learning-rate schedule reads.
    global_batch: images a step over every tower of every worker.
  """
  del global_step, global_batch  # Read by the learning-rate schedules.
  if config.optimizer == 'momentum':
    return tf.train.MomentumOptimizer(config.learning_rate, config.momentum)
  return tf.train.GradientDescentOptimizer(config.learning_rate)
