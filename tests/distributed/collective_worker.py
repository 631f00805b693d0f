"""One worker of a worker-only cluster training with collective_all_reduce.

    python collective_worker.py CLUSTER_JSON TASK_INDEX TOWERS STEPS OUT.npz

Runs a `tf.train.Server` for `/job:worker/task:TASK_INDEX`, builds the
`trivial` model on TOWERS virtual CPU towers (global tower k*TOWERS+d reads
the fixed batch `clusterlib.tower_batches` replays), initialises its own
variables with a seed of its own (so that only the broadcast can make the
workers agree), runs the post-init ops, then STEPS SGD steps, and writes
every variable of every tower before the broadcast (`initial/<name>`) and at
the end (`final/<name>`). No PS task: the host is a plain object.
"""

import os
import sys

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_HERE, os.path.dirname(_HERE),
                os.path.dirname(os.path.dirname(_HERE))]

import clusterlib  # pylint: disable=g-import-not-at-top,wrong-import-position

import variable_mgr  # pylint: disable=g-import-not-at-top,wrong-import-position
from variable_mgr.benchmark.models import catalog  # pylint: disable=g-import-not-at-top,wrong-import-position
from variable_mgr.benchmark.training import harness  # pylint: disable=g-import-not-at-top,wrong-import-position
import worker_processes  # pylint: disable=g-import-not-at-top,wrong-import-position

tf = clusterlib.tf


def main(argv):
  cluster_json, task_index, towers, steps, output = argv
  task_index, towers, steps = int(task_index), int(towers), int(steps)
  server, host = worker_processes.serve(cluster_json, task_index, towers)
  model = catalog.get_model(clusterlib.MODEL)
  graph = tf.Graph()
  with graph.as_default():
    tf.set_random_seed(100 + task_index)
    mgr = variable_mgr.create('collective_all_reduce', host)
    host.devices = mgr.get_devices()
    device_grads = []
    for d in range(towers):
      with mgr.create_outer_variable_scope(d), tf.name_scope('tower_%d' % d):
        with tf.device(host.cpu_device):
          images, labels = harness.synthetic_inputs(
              model, clusterlib.BATCH, clusterlib.SEED,
              task_index * towers + d)
        with tf.device(host.devices[d]):
          loss = model.build(images, labels, is_training=True,
                             weight_decay=0.0)
          params = mgr.trainable_variables_on_device(d)
          grads = tf.gradients(loss, params)
          device_grads.append(zip(grads, params))
    apply_devices, state = mgr.preprocess_device_grads(device_grads)
    opt = tf.train.GradientDescentOptimizer(clusterlib.LEARNING_RATE)
    train_op = worker_processes.train_op(mgr, apply_devices, state, opt)
    init_op = tf.global_variables_initializer()
    post_init_op = tf.group(*mgr.get_post_init_ops())
    variables = dict((v.op.name, v) for v in tf.global_variables())
  config = worker_processes.session_config(task_index)
  options = worker_processes.RUN_OPTIONS
  with tf.Session(server.target, graph=graph, config=config) as sess:
    sess.run(init_op, options=options)
    initial = sess.run(variables, options=options)
    sess.run(post_init_op, options=options)
    for _ in range(steps):
      sess.run(train_op, options=options)
    final = sess.run(variables, options=options)
  arrays = {}
  for prefix, values in (('initial', initial), ('final', final)):
    for name, value in values.items():
      arrays['%s/%s' % (prefix, name)] = value
  np.savez(output, **arrays)
  sys.stdout.flush()
  os._exit(0)  # pylint: disable=protected-access


if __name__ == '__main__':
  main(sys.argv[1:])
