"""Data-parallel training with variable_mgr: a linear model on 4 CPU towers.

    python examples/train_towers.py [STRATEGY] [--staged_vars]

STRATEGY is replicated (the default), parameter_server, independent or
distributed_replicated (a cluster of one PS and one worker, started in this
process); --staged_vars reads parameter_server's variables through staging
areas. Prints the mean tower loss of each step and the trained variables.
"""

import os
import socket
import sys

import numpy as np

# TensorFlow's C++ info and warning lines stay off stderr (errors do not),
# as the benchmark command has them.
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
import tensorflow.compat.v1 as tf  # pylint: disable=g-import-not-at-top

import variable_mgr

NUM_TOWERS = 4
BATCH = 8  # Examples a tower a step.
LEARNING_RATE = 0.1


def make_data(seed=0):
  """Tower d's inputs x[d] ([BATCH, 3]) and targets y[d] ([BATCH, 1])."""
  rng = np.random.RandomState(seed)
  x = rng.randn(NUM_TOWERS, BATCH, 3).astype(np.float32)
  y = x.dot(np.array([[1.0], [-2.0], [0.5]], np.float32)) + 0.25
  return x, y


def build_model(x, y):
  """One tower's loss. Trainable variables come from tf.get_variable: the
  manager shares, places and copies them through its variable scope, which
  tf.Variable would bypass."""
  w = tf.get_variable('w', [3, 1], initializer=tf.random_normal_initializer())
  b = tf.get_variable('b', [1], initializer=tf.zeros_initializer())
  return tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))


def _free_port():
  with socket.socket() as sock:
    sock.bind(('localhost', 0))
    return sock.getsockname()[1]


def make_host(strategy):
  """The host object and the session target for `strategy`."""
  if strategy != 'distributed_replicated':
    return variable_mgr.LocalBenchmarkCnn(num_towers=NUM_TOWERS), ''
  # Keeps its master variables on a PS: one PS and one worker, in-process.
  cluster = {'ps': ['localhost:%d' % _free_port()],
             'worker': ['localhost:%d' % _free_port()]}
  host = variable_mgr.ClusterBenchmarkCnn(cluster, 0, num_towers=NUM_TOWERS)
  host.servers = [  # Kept alive with the host.
      tf.train.Server(host.cluster, 'ps', 0,
                      config=tf.ConfigProto(device_count={'CPU': 1})),
      tf.train.Server(host.cluster, 'worker', 0,
                      config=host.session_config())]
  return host, host.servers[1].target


def train(strategy='replicated', staged_vars=False, steps=5):
  """Returns (initial, losses, final): tower 0's variables after init and
  post-init, the mean tower loss of each step, the variables at the end
  ({name: array}, named as a checkpoint names them)."""
  x, y = make_data()
  with tf.Graph().as_default():
    tf.set_random_seed(0)  # The same run every time; each copy its own draw.
    host, target = make_host(strategy)
    options = {'staged_vars': True} if staged_vars else {}
    if strategy != 'independent':  # Independent towers combine nothing.
      options['reduction'] = 'mean'
    mgr = variable_mgr.create(strategy, host, **options)
    host.devices = mgr.get_devices()
    device_grads, losses, update_ops = [], [], []
    for d in range(NUM_TOWERS):
      with mgr.create_outer_variable_scope(d), tf.name_scope('tower_%i' % d):
        with tf.device(host.devices[d]):
          loss = build_model(tf.constant(x[d]), tf.constant(y[d]))
          params = mgr.trainable_variables_on_device(d)
          grads = tf.gradients(loss, params)
          refs = mgr.trainable_variables_on_device(d, writable=True)
          device_grads.append(zip(grads, refs))
          losses.append(loss)
          if mgr.retain_tower_updates(d):
            update_ops = (tf.get_collection(tf.GraphKeys.UPDATE_OPS) +
                          mgr.staging_delta_ops)
    apply_devices, state = mgr.preprocess_device_grads(device_grads)
    opt = tf.train.GradientDescentOptimizer(LEARNING_RATE)
    training_ops = []
    for i, dev in enumerate(apply_devices):
      with tf.device(dev):
        grads = mgr.get_gradients_to_apply(i, state)
        mgr.append_apply_gradients_ops(state, opt, grads, training_ops)
    train_op = tf.group(*(training_ops + update_ops))
    with tf.device(host.cpu_device):
      mean_loss = tf.add_n(losses) / NUM_TOWERS
    # Staged variables: staging_vars_on_devices[d] is tower d's
    # {variable name: (put_op, get_op)}; a put stores the variable's value
    # in the tower's staging area for the next step, the get is what the
    # tower reads. Every area starts empty.
    puts = []
    if mgr.supports_staged_vars():
      puts = [put for tower in mgr.staging_vars_on_devices
              for put, _ in tower.values()]
    # distributed_replicated keeps the towers' copies in LOCAL_VARIABLES,
    # which global_variables_initializer leaves alone.
    init = tf.group(tf.global_variables_initializer(),
                    tf.local_variables_initializer())
    post_init = mgr.get_post_init_ops()  # Copies tower 0 to every replica.
    saved = mgr.get_variables_to_save()  # What a tf.train.Saver would save.

    # Virtual CPU devices, one a tower; soft placement stays off.
    with tf.Session(target, config=host.session_config()) as sess:
      sess.run(init)
      # A restore goes here, before the post-init ops:
      # variable_mgr.checkpoint.restore(sess, train_dir, saved).
      sess.run(post_init)
      initial = sess.run(saved)
      if puts:
        sess.run(puts)  # Staged warm-up: fill every area once.
      history = []
      for step in range(steps):
        loss_value, _ = sess.run([mean_loss, [train_op] + puts])
        print('step %d: loss %.6f' % (step, loss_value))
        history.append(loss_value)
      return initial, history, sess.run(saved)


if __name__ == '__main__':
  # Where there is no NVIDIA driver, TensorFlow's expected "failed call to
  # cuInit" error line stays off stderr (variable_mgr.cuda_probe).
  from variable_mgr import cuda_probe  # pylint: disable=g-import-not-at-top
  cuda_probe.probe_devices()
  tf.disable_eager_execution()
  args = sys.argv[1:]
  staged = '--staged_vars' in args
  names = [a for a in args if a != '--staged_vars']
  _, _, trained = train(names[0] if names else 'replicated', staged)
  for name, value in sorted(trained.items()):
    print(name, np.round(value.ravel(), 4))
