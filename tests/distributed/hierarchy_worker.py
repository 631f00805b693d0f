"""One worker of a worker-only cluster training a small model with a sparse
gradient, a None gradient and a dense one under collective_all_reduce.

    python hierarchy_worker.py CLUSTER_JSON TASK_INDEX TOWERS OUT.npz CASE

CASE is `<variables>-<reduction>-<dtype>[-<bucket_bytes>]`: variables `ref`
or `resource`, reduction `mean` or `sum`, dtype `float32`, `float16` (float16 variables
and gradients, added in float32: `accumulation_dtype=tf.float32`) or `half`
(float16, added in float16), and the strategy's `bucket_bytes` (its
default when not given).

The model of tower g (global tower `task * TOWERS + d`), batch `batch(g,
step)`: x = emb[ids] (a gather: an IndexedSlices gradient), loss = 0.5 *
sum((x W + b - y)^2); `unused` has no gradient. The backward pass produces
b's gradient (8 bytes in float32), then W's (24), then emb's (72). Each worker initialises its own
values (seed 100 + task), so only the post-init broadcast makes them agree.
Writes every variable before the post-init ops (`before/<name>`), after
them (`initial/<name>`) and after each of STEPS steps (`step<k>/<name>`).
"""

import os
import sys

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_HERE, os.path.dirname(_HERE),
                os.path.dirname(os.path.dirname(_HERE))]

import tensorflow as _tf  # pylint: disable=g-import-not-at-top,wrong-import-position

_tf.compat.v1.disable_eager_execution()

import variable_mgr  # pylint: disable=g-import-not-at-top,wrong-import-position
from variable_mgr import compat  # pylint: disable=g-import-not-at-top,wrong-import-position
import worker_processes  # pylint: disable=g-import-not-at-top,wrong-import-position

tf = _tf.compat.v1
STEPS = 2
ROWS, IN, OUT, BATCH = 6, 3, 2, 4
LEARNING_RATE = 0.1


def batch(global_tower, step):
  """The ids and targets of tower `global_tower` at `step`."""
  rng = np.random.RandomState(1000 * step + global_tower)
  ids = rng.randint(0, ROWS, size=BATCH).astype(np.int32)
  ids[0] = ids[1]  # A row read twice: its sparse gradient has two slices.
  y = rng.randn(BATCH, OUT)
  return ids, y


def main(argv):
  cluster_json, task_index, towers, output, case = argv
  task_index, towers = int(task_index), int(towers)
  kind, reduction, dtype_name = case.split('-')[:3]
  if kind == 'ref':
    tf.disable_resource_variables()
  else:
    tf.enable_resource_variables()
  dtype = tf.float16 if dtype_name == 'half' else tf.as_dtype(dtype_name)
  options = dict(reduction=reduction)
  if len(case.split('-')) > 3:
    options['bucket_bytes'] = int(case.split('-')[3])
  if dtype_name == 'float16':
    options['accumulation_dtype'] = tf.float32
  server, host = worker_processes.serve(cluster_json, task_index, towers)
  graph = tf.Graph()
  with graph.as_default():
    tf.set_random_seed(100 + task_index)
    mgr = variable_mgr.create('collective_all_reduce', host, **options)
    host.devices = mgr.get_devices()
    device_grads, inputs = [], []
    for d in range(towers):
      with mgr.create_outer_variable_scope(d), tf.name_scope('tower_%d' % d):
        with tf.device(host.devices[d]):
          emb = tf.get_variable('emb', [ROWS, IN], dtype)
          w = tf.get_variable('w', [IN, OUT], dtype)
          b = tf.get_variable('b', [OUT], dtype)
          tf.get_variable('unused', [2], dtype)
          ids = tf.placeholder(tf.int32, [BATCH])
          y = tf.placeholder(dtype, [BATCH, OUT])
          inputs.append((ids, y))
          r = tf.matmul(tf.gather(emb, ids), w) + b - y
          loss = 0.5 * tf.reduce_sum(r * r)
          params = mgr.trainable_variables_on_device(d)
          device_grads.append(zip(tf.gradients(loss, params), params))
    apply_devices, state = mgr.preprocess_device_grads(device_grads)
    opt = tf.train.GradientDescentOptimizer(
        tf.constant(LEARNING_RATE, dtype))
    train_op = worker_processes.train_op(mgr, apply_devices, state, opt)
    init_op = tf.global_variables_initializer()
    post_init_op = tf.group(*mgr.get_post_init_ops())
    variables = dict((v.op.name, v) for v in tf.global_variables())
    resource = all(compat.is_resource_variable(v) for v in variables.values())
  config = worker_processes.session_config(task_index)
  run_options = worker_processes.RUN_OPTIONS
  arrays = {'resource': np.array(resource)}
  with tf.Session(server.target, graph=graph, config=config) as sess:
    sess.run(init_op, options=run_options)
    for name, value in sess.run(variables, options=run_options).items():
      arrays['before/' + name] = value
    sess.run(post_init_op, options=run_options)
    for name, value in sess.run(variables, options=run_options).items():
      arrays['initial/' + name] = value
    for step in range(STEPS):
      feeds = {}
      for d, (ids, y) in enumerate(inputs):
        feeds[ids], feeds[y] = batch(task_index * towers + d, step)
      sess.run(train_op, feeds, options=run_options)
      for name, value in sess.run(variables, options=run_options).items():
        arrays['step%d/%s' % (step, name)] = value
  np.savez(output, **arrays)
  sys.stdout.flush()
  os._exit(0)  # pylint: disable=protected-access


if __name__ == '__main__':
  main(sys.argv[1:])
