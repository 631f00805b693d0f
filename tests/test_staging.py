"""Staged variables: every staging area holds one item between steps.

An area that a step fills but never empties (the read of an unused variable)
would grow by one item a step. Statistics (non-trainable) are not staged.
"""

import numpy as np
import tensorflow as tf

import variable_mgr
from variable_mgr import staging

tf1 = tf.compat.v1


def _area_sizes(put_ops):
  sizes = []
  for put in put_ops:
    with tf1.device(put.device):
      sizes.append(tf.raw_ops.StageSize(
          dtypes=put.get_attr('dtypes'), shared_name=put.get_attr(
              'shared_name'), container=put.get_attr('container')))
  return sizes


def test_areas_hold_one_item_after_every_step(variable_kind):
  num_towers = 2
  with tf.Graph().as_default() as graph:
    host = variable_mgr.LocalBenchmarkCnn(num_towers)
    mgr = variable_mgr.create('parameter_server', host, staged_vars=True)
    host.devices = mgr.get_devices()
    device_grads = []
    kept_updates = []
    for d in range(num_towers):
      with mgr.create_outer_variable_scope(d), tf1.device(host.devices[d]):
        w = tf1.get_variable('w', initializer=tf.constant([1.0, 2.0]))
        tf1.get_variable('unused', initializer=tf.constant([5.0]))
        stat = tf1.get_variable('stat', initializer=tf.constant([0.0, 0.0]),
                                trainable=False)
        loss = tf.reduce_sum(w * w)
        update = stat.assign_sub(tf.convert_to_tensor(stat) - w)
        params = mgr.trainable_variables_on_device(d)
        grads = tf.gradients(loss, params)
        refs = mgr.trainable_variables_on_device(d, writable=True)
        device_grads.append(zip(grads, refs))
        if mgr.retain_tower_updates(d):
          kept_updates = [update] + list(mgr.staging_delta_ops)
    apply_devices, state = mgr.preprocess_device_grads(device_grads)
    opt = tf1.train.GradientDescentOptimizer(0.25)
    training_ops = []
    for i, dev in enumerate(apply_devices):
      with tf1.device(dev):
        mgr.append_apply_gradients_ops(
            state, opt, mgr.get_gradients_to_apply(i, state), training_ops)
    train_op = tf.group(*(training_ops + kept_updates))
    puts = staging.all_put_ops(mgr)
    delta_puts = list(mgr.staging_delta_ops)
    sizes = _area_sizes(puts)
    init = tf1.global_variables_initializer()
    real_w = [v for v in tf1.global_variables() if v.op.name == 'v/w'][0]
    graph.finalize()
  # Areas: w and unused on each tower; the statistic is read directly.
  assert len(puts) == 4
  with tf1.Session(graph=graph, config=host.session_config()) as sess:
    sess.run(init)
    sess.run(puts)
    w_values = [np.array([1.0, 2.0])]
    for _ in range(4):
      sess.run([train_op] + puts)
      assert sess.run(sizes) == [1] * len(puts)
      w_values.append(sess.run(real_w))
  assert not delta_puts
  # One-step-stale SGD on loss = |w|^2 summed over 2 towers, mean-reduced:
  # w[t+1] = w[t] - 0.25 * 2 w[t-1].
  expected = [np.array([1.0, 2.0])]
  previous = expected[0]
  for _ in range(4):
    current = expected[-1]
    expected.append(current - 0.25 * 2 * previous)
    previous = current
  np.testing.assert_allclose(w_values, expected, rtol=1e-6)


def test_a_variable_asked_for_twice_is_the_same_object(variable_kind):
  with tf.Graph().as_default():
    host = variable_mgr.LocalBenchmarkCnn(2)
    mgr = variable_mgr.create('parameter_server', host, staged_vars=True)
    host.devices = mgr.get_devices()
    got = []
    for _ in range(2):
      with mgr.create_outer_variable_scope(0), tf1.device(host.devices[0]):
        with tf1.variable_scope(tf1.get_variable_scope(),
                                reuse=tf1.AUTO_REUSE):
          got.append((tf1.get_variable('stat', [2], trainable=False),
                      tf1.get_variable('w', [2])))
    (stat_a, w_a), (stat_b, w_b) = got
    assert not isinstance(stat_a, variable_mgr.StagedModelVariable)
    assert stat_a.op.name == 'v/stat'  # The variable itself, not staged.
    assert w_a.op.type == 'Unstage'
    assert stat_b is stat_a and w_b is w_a
    assert list(mgr.staging_vars_on_devices[0]) == ['v/w']
