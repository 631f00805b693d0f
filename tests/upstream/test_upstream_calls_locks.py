"""Master's parameter_server calls on a cluster: master's optimizers do not
lock, and several workers updating one variable on the PS without locks
lose parts of each other's updates, so the update locks where more than
one worker writes, and only there (a lock nobody contends is a needless
wait)."""

import pytest
import tensorflow as tf

import variable_mgr
from variable_mgr import compat

import master_host

tf1 = tf.compat.v1


@pytest.mark.parametrize('staged', [False, True], ids=['plain', 'staged'])
@pytest.mark.parametrize('workers', [1, 2, 3])
def test_master_ps_updates_lock_where_several_workers_write(staged, workers):
  with tf.Graph().as_default():
    bench = master_host.PsBench(workers=workers)
    cls = (variable_mgr.VariableMgrDistributedFetchFromStagedPS if staged
           else variable_mgr.VariableMgrDistributedFetchFromPS)
    mgr = cls(bench)
    bench.devices = mgr.get_devices()
    device_grads = []
    for d in range(2):
      with mgr.create_outer_variable_scope(d), tf1.device(bench.devices[d]):
        w = tf1.get_variable('w', initializer=tf.constant(master_host.W0))
        loss = tf.reduce_sum(tf.matmul(tf.constant(master_host.X[d:d + 1]),
                                       w))
        params = mgr.trainable_variables_on_device(d, d)
        refs = mgr.trainable_variables_on_device(d, d, writable=True)
        device_grads.append(list(zip(tf1.gradients(loss, params), refs)))
    apply_devices, state = mgr.preprocess_device_grads(device_grads)
    opts, training_ops = [], []
    for i, device in enumerate(apply_devices):
      with tf1.device(device):
        opts.append(tf1.train.GradientDescentOptimizer(master_host.RATE))
        mgr.append_apply_gradients_ops(
            state, opts[-1], mgr.get_gradients_to_apply(i, state),
            training_ops)
    updates = [op for op in tf1.get_default_graph().get_operations()
               if op.type in ('ApplyGradientDescent',
                              'ResourceApplyGradientDescent')]
  assert opts and updates
  assert [compat.optimizer_locks(opt) for opt in opts] == (
      [workers > 1] * len(opts))
  assert [u.get_attr('use_locking') for u in updates] == (
      [workers > 1] * len(updates))
