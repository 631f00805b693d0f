"""Master's constructor options as master's own signatures take them:
positional, by keyword, or some of each, and every one reaching the
strategy (a default left in place of a value given would train the same
on most models and differently on some)."""

import numpy as np
import tensorflow as tf

import variable_mgr

import master_host

RATE = master_host.RATE


def _expected_sum_step():
  w = master_host.W0
  grads = [master_host.tower_gradient(w, d) for d in range(2)]
  return w - RATE * sum(grads)


def test_master_replicated_options_by_keyword():
  """master's VariableMgrLocalReplicated(benchmark_cnn, all_reduce_spec,
  agg_small_grads_max_bytes, agg_small_grads_max_group,
  allreduce_merge_scope), the last three named."""
  with tf.Graph().as_default():
    bench = master_host.MasterBench()
    mgr = variable_mgr.VariableMgrLocalReplicated(
        bench, 'xring', agg_small_grads_max_bytes=0,
        agg_small_grads_max_group=10, allreduce_merge_scope=1)
    w, _, _ = master_host.one_step(bench, mgr)
  np.testing.assert_allclose(w, _expected_sum_step(), rtol=1e-6)


def test_master_small_gradient_groups_reach_the_strategy():
  """--agg_small_grads_max_bytes and --agg_small_grads_max_group as master
  passes them (positionally) group the small gradients; the step equals
  the plain sum."""
  with tf.Graph().as_default():
    bench = master_host.MasterBench(all_reduce_spec='xring',
                                    agg_small_grads_max_bytes=1 << 20,
                                    agg_small_grads_max_group=3)
    mgr = master_host.replicated(bench)
    w, _, _ = master_host.one_step(bench, mgr)
  np.testing.assert_allclose(w, _expected_sum_step(), rtol=1e-6)
