"""Master's parameter_server calls on a cluster: master's optimizers do not
lock, and several workers updating one variable on the PS without locks
lose parts of each other's updates, so the update locks where more than
one worker writes, and only there (a lock nobody contends is a needless
wait)."""

import pytest
import tensorflow as tf

from variable_mgr import compat

import master_host

tf1 = tf.compat.v1


@pytest.mark.parametrize('staged', [False, True], ids=['plain', 'staged'])
@pytest.mark.parametrize('workers', [1, 2, 3])
def test_master_ps_updates_lock_where_several_workers_write(staged, workers):
  with tf.Graph().as_default():
    bench = master_host.PsBench(workers=workers)
    mgr, apply_devices, state = master_host.ps_towers(bench, staged)
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
