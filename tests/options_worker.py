"""One worker of a worker-only cluster training the two-layer model with
collective_all_reduce and training options.

    python options_worker.py CLUSTER_JSON TASK_INDEX TOWERS OUT.npz MODE

MODE 'fp16': use_fp16 with a dynamic loss scale (doubles after 2 good
steps); step 0 feeds an inf into the last tower of the last worker, steps
1 and 2 are clean. MODE 'accumulate': backward_passes_per_step=2, 4 steps.
Global tower g (= task * TOWERS + d) reads `batch(g, step)`. Writes tower
copies and the loss scale after the post-init ops (`initial/...`) and
after each step (`step<k>/...`).
"""

import os
import sys

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_HERE, os.path.dirname(_HERE)]

import tensorflow as _tf  # pylint: disable=g-import-not-at-top,wrong-import-position

_tf.compat.v1.disable_eager_execution()

import seed_harness  # pylint: disable=g-import-not-at-top,wrong-import-position
import variable_mgr  # pylint: disable=g-import-not-at-top,wrong-import-position
import worker_processes  # pylint: disable=g-import-not-at-top,wrong-import-position

tf = _tf.compat.v1
BATCH = 6
LEARNING_RATE = 0.1
MODES = {
    'fp16': (dict(use_fp16=True, auto_loss_scale=True,
                  inc_loss_scale_every_n=1), 3),
    'accumulate': (dict(backward_passes_per_step=2), 4),
}


def batch(global_tower, step, with_inf=False):
  rng = np.random.RandomState(1000 * step + global_tower)
  x = rng.randn(BATCH, seed_harness.IN).astype(np.float32)
  y = rng.randn(BATCH, seed_harness.OUT).astype(np.float32)
  if with_inf:
    x[0, 0] = np.inf
  return x, y


def main(argv):
  cluster_json, task_index, towers, output, mode = argv
  task_index, towers = int(task_index), int(towers)
  options, steps = MODES[mode]
  dtype = tf.float16 if options.get('use_fp16') else tf.float32
  server, host = worker_processes.serve(cluster_json, task_index, towers)
  workers = host.num_workers
  graph = tf.Graph()
  with graph.as_default():
    tf.set_random_seed(100 + task_index)
    mgr = variable_mgr.create('collective_all_reduce', host, **options)
    host.devices = mgr.get_devices()
    device_grads, inputs = [], []
    for d in range(towers):
      with mgr.create_outer_variable_scope(d), tf.name_scope('tower_%d' % d):
        with tf.device(host.devices[d]):
          x = tf.placeholder(dtype, [BATCH, seed_harness.IN])
          y = tf.placeholder(dtype, [BATCH, seed_harness.OUT])
          inputs.append((x, y))
          loss = seed_harness.model(x, y, dtype)
          params = mgr.trainable_variables_on_device(d)
          grads = tf.gradients(mgr.scale_loss(loss), params)
          device_grads.append(zip(grads, params))
    apply_devices, state = mgr.preprocess_device_grads(device_grads)
    opt = tf.train.GradientDescentOptimizer(LEARNING_RATE, use_locking=True)
    train_op = worker_processes.train_op(mgr, apply_devices, state, opt)
    init_op = tf.group(tf.global_variables_initializer(),
                       tf.local_variables_initializer())
    post_init_op = tf.group(*mgr.get_post_init_ops())
    variables = dict((v.op.name, v) for v in tf.global_variables())
    if mgr.loss_scale is not None:
      variables['loss_scale'] = mgr.loss_scale
  config = worker_processes.session_config(task_index)
  run_options = worker_processes.RUN_OPTIONS
  arrays = {}
  with tf.Session(server.target, graph=graph, config=config) as sess:
    sess.run(init_op, options=run_options)
    sess.run(post_init_op, options=run_options)
    for name, value in sess.run(variables, options=run_options).items():
      arrays['initial/' + name] = value
    for step in range(steps):
      feeds = {}
      for d, (x, y) in enumerate(inputs):
        g = task_index * towers + d
        planted = (mode == 'fp16' and step == 0 and
                   g == workers * towers - 1)
        feeds[x], feeds[y] = batch(g, step, planted)
      sess.run(train_op, feeds, options=run_options)
      for name, value in sess.run(variables, options=run_options).items():
        arrays['step%d/%s' % (step, name)] = value
  np.savez(output, **arrays)
  sys.stdout.flush()
  os._exit(0)  # pylint: disable=protected-access


if __name__ == '__main__':
  main(sys.argv[1:])
