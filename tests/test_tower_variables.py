"""A tower whose trainable variables were made with tf.Variable, not through
the manager's variable scope, is refused before the update graph is built,
naming the variable and tf.get_variable; get_variable models pass."""

import re

import numpy as np
import pytest
import tensorflow as tf

import variable_mgr
from variable_mgr import errors
from variable_mgr import tower_variables

tf1 = tf.compat.v1

NUM_TOWERS = 2
# (strategy, options): the local strategies, both kinds of variable scope.
STRATEGIES = [('parameter_server', {}), ('replicated', {}),
              ('independent', {})]


def _build(name, options, make_variable, outside=False):
  """Builds every tower with `make_variable(d)` -> a [2] variable; returns
  (mgr, device_grads as lists)."""
  host = variable_mgr.LocalBenchmarkCnn(NUM_TOWERS)
  mgr = variable_mgr.create(name, host, **options)
  host.devices = mgr.get_devices()
  device_grads = []
  for d in range(NUM_TOWERS):
    if outside:
      w = make_variable(d)
    with mgr.create_outer_variable_scope(d), tf1.name_scope('tower_%i' % d):
      with tf1.device(host.devices[d]):
        if not outside:
          w = make_variable(d)
        loss = tf.reduce_sum(w * w)
        params = mgr.trainable_variables_on_device(d)
        grads = tf1.gradients(loss, params)
        refs = mgr.trainable_variables_on_device(d, writable=True)
        device_grads.append(list(zip(grads, refs)))
  return mgr, device_grads


def _tf_variable(d):
  del d
  return tf1.Variable(np.array([1.0, 2.0], np.float32), name='w')


def _get_variable(d):
  del d
  return tf1.get_variable('w', initializer=tf.constant([1.0, 2.0]))


@pytest.mark.parametrize('name,options', STRATEGIES)
def test_a_tf_variable_tower_is_refused_naming_it(name, options,
                                                  variable_kind):
  del variable_kind
  with tf.Graph().as_default() as graph:
    mgr, device_grads = _build(name, options, _tf_variable)
    ops_before = len(graph.get_operations())
    with pytest.raises(errors.TowerVariableError) as info:
      mgr.preprocess_device_grads(device_grads)
    # Nothing of the update graph was built.
    assert len(graph.get_operations()) == ops_before
  message = str(info.value)
  # The variable as TensorFlow named it, and the fix.
  first = device_grads[0][0][1].op.name
  assert first.endswith('tower_0/w'), first
  assert 'tower 0\'s trainable variable %s' % first in message
  assert 'was not created with tf.get_variable' in message
  assert "tf.get_variable('w', ...)" in message
  assert 'create_outer_variable_scope(0)' in message


def test_tf_variables_outside_every_scope_are_named(variable_kind):
  """A tower of tf.Variables made outside the manager's scope lists no
  variables at all: the stray variable is named."""
  del variable_kind
  with tf.Graph().as_default():
    mgr, device_grads = _build('replicated', {}, _tf_variable, outside=True)
    assert device_grads == [[], []]
    with pytest.raises(errors.TowerVariableError) as info:
      mgr.preprocess_device_grads(device_grads)
  assert ('tower 0 lists no variables, and the trainable variable w was '
          'not created with tf.get_variable') in str(info.value)


@pytest.mark.parametrize('name,options', STRATEGIES + [
    ('parameter_server', {'staged_vars': True})])
def test_get_variable_towers_pass_and_train(name, options, variable_kind):
  """The same model with tf.get_variable passes the check and takes the
  step NumPy takes: w - lr * mean(2w) over equal towers."""
  del variable_kind
  with tf.Graph().as_default():
    if name != 'independent':  # Independent towers combine nothing.
      options = dict(options, reduction='mean')
    mgr, device_grads = _build(name, options, _get_variable)
    apply_devices, state = mgr.preprocess_device_grads(device_grads)
    opt = tf1.train.GradientDescentOptimizer(0.25)
    training_ops = []
    for i, dev in enumerate(apply_devices):
      with tf1.device(dev):
        grads = mgr.get_gradients_to_apply(i, state)
        mgr.append_apply_gradients_ops(state, opt, grads, training_ops)
    puts = [put for tower in getattr(mgr, 'staging_vars_on_devices', [])
            for put, _ in tower.values()]
    saved = mgr.get_variables_to_save()['w']
    with tf1.Session(config=mgr.benchmark_cnn.session_config()) as sess:
      sess.run(tf1.global_variables_initializer())
      sess.run(mgr.get_post_init_ops())
      if puts:
        sess.run(puts)
      sess.run([tf.group(*training_ops)] + puts)
      got = sess.run(saved)
  np.testing.assert_allclose(got, np.array([1.0, 2.0]) * (1 - 0.25 * 2),
                             rtol=1e-6)


def test_partitioned_and_float16_get_variables_are_recognised(variable_kind):
  del variable_kind
  with tf.Graph().as_default():
    with tf1.variable_scope('v0'):
      half = tf1.get_variable('h', shape=[2], dtype=tf.float16)
      parts = tf1.get_variable(
          'p', shape=[4, 2], partitioner=tf1.fixed_size_partitioner(2))
      plain = tf1.Variable([1.0], name='x')
    assert tower_variables.created_by_get_variable(half)
    for part in parts:
      assert tower_variables.created_by_get_variable(part)
    assert not tower_variables.created_by_get_variable(plain)
    assert not tower_variables.created_by_get_variable(tf.constant(1.0))


def test_check_variables_names_the_tower_and_the_variable(variable_kind):
  """What a strategy that lists a tower's variables itself (staged reads)
  calls before looking them up."""
  del variable_kind
  with tf.Graph().as_default():
    with tf1.variable_scope('v'):
      good = tf1.get_variable('a', shape=[1])
      bad = tf1.Variable([1.0], name='b')
    tower_variables.check_variables(1, [good, good])
    with pytest.raises(errors.TowerVariableError) as info:
      tower_variables.check_variables(1, [good, bad])
  assert str(info.value).startswith(
      "tower 1's trainable variable v/b was not created with tf.get_variable")
  assert "tf.get_variable('b', ...)" in str(info.value)


def test_a_tf_variable_staged_tower_is_refused_naming_it(variable_kind):
  """Staged parameter_server lists a tower's variables itself (their staged
  reads): a tf.Variable there has no staging area, and is named when the
  tower asks for its variables."""
  del variable_kind
  with tf.Graph().as_default():
    with pytest.raises(errors.TowerVariableError) as info:
      _build('parameter_server', {'staged_vars': True}, _tf_variable)
  message = str(info.value)
  assert re.search(r"tower 0's trainable variable \S*tower_0/w was not "
                   r'created with tf.get_variable', message), message
  assert "tf.get_variable('w', ...)" in message
