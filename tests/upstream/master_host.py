"""A stand-in for tf_cnn_benchmarks master's BenchmarkCNN: the attributes its
variable_mgr.py and benchmark_cnn.py give a manager, with master's flag
defaults, and a driver that calls a manager in master's forms and order."""

import collections

import numpy as np
import tensorflow as tf

tf1 = tf.compat.v1

# Master's defaults of the flags a manager reads off `params`.
PARAM_DEFAULTS = collections.OrderedDict([
    ('ps_hosts', ''), ('cross_replica_sync', True), ('device', 'cpu'),
    ('gpu_indices', ''), ('xla_compile', False), ('hierarchical_copy', False),
    ('network_topology', 'dgx1'), ('gradient_repacking', 0),
    ('use_fp16', False), ('compact_gradient_transfer', True),
    ('variable_consistency', 'strong'), ('use_resource_vars', False),
    ('all_reduce_spec', None), ('agg_small_grads_max_bytes', 0),
    ('agg_small_grads_max_group', 10), ('allreduce_merge_scope', 1),
])
Params = collections.namedtuple('Params', list(PARAM_DEFAULTS))


class MasterBench(object):
  """Master's BenchmarkCNN as a manager sees it, local (no cluster)."""

  def __init__(self, num_gpus=2, local_parameter_device='cpu',
               enable_auto_loss_scale=False, **params):
    values = dict(PARAM_DEFAULTS)
    values.update(params)
    self.params = Params(**values)
    self.cluster_manager = None
    self.job_name = ''
    self.num_gpus = num_gpus
    self.num_workers = 1
    self.task_index = 0
    self.cpu_device = '/cpu:0'
    self.raw_devices = ['/cpu:%d' % i for i in range(num_gpus)]
    self.devices = None
    self.local_parameter_device_flag = local_parameter_device
    self.param_server_device = '/%s:0' % local_parameter_device
    self.enable_auto_loss_scale = enable_auto_loss_scale

  def session_config(self):
    return tf1.ConfigProto(device_count={'CPU': self.num_gpus})


class ClusterManager(object):
  """Master's cluster_manager: the cluster spec it was given."""

  def __init__(self, spec):
    self.spec = spec

  def get_cluster_spec(self):
    return tf1.train.ClusterSpec(self.spec)


class PsBench(MasterBench):
  """Master's BenchmarkCNN of the last of `workers` workers beside one PS
  task; its add_sync_queues_and_barrier records what it is asked to wait
  for."""

  def __init__(self, cross_replica_sync=True, workers=2):
    super(PsBench, self).__init__(ps_hosts='h:0',
                                  cross_replica_sync=cross_replica_sync)
    spec = {'ps': ['h:0'], 'worker': ['h:%d' % (k + 1)
                                      for k in range(workers)]}
    self.cluster_manager = ClusterManager(spec)
    self.job_name = 'worker'
    self.num_workers = workers
    self.task_index = workers - 1
    prefix = '/job:worker/replica:0/task:%d' % self.task_index
    self.cpu_device = prefix + '/cpu:0'
    self.raw_devices = [prefix + '/cpu:%d' % i for i in range(2)]
    self.param_server_device = '/job:ps/task:0/cpu:0'
    self.barriers = []

  def add_sync_queues_and_barrier(self, name_prefix, enqueue_after_list):
    with tf1.control_dependencies(enqueue_after_list):
      barrier = tf.no_op(name=name_prefix)
    self.barriers.append((barrier, list(enqueue_after_list)))
    return barrier


def replicated(bench):
  """`VariableMgrLocalReplicated` as master's benchmark_cnn.py builds it."""
  import variable_mgr  # pylint: disable=g-import-not-at-top
  p = bench.params
  return variable_mgr.VariableMgrLocalReplicated(
      bench, p.all_reduce_spec, p.agg_small_grads_max_bytes,
      p.agg_small_grads_max_group, p.allreduce_merge_scope)


LossScaleParams = collections.namedtuple(
    'LossScaleParams', 'enable_auto_loss_scale loss_scale '
    'loss_scale_normal_steps inc_loss_scale_every_n is_chief')

X = np.array([[1.0, 2.0], [3.0, -1.0], [-0.5, 1.5]],
             np.float32)  # Tower d's input: X[d].
W0 = np.array([[0.5], [-0.25]], np.float32)
RATE = 0.1


def tower_gradient(w, d, scale=1.0):
  """d loss_d / d w of loss_d = scale * sum(x_d . w) ** 2 / 2."""
  x = X[d:d + 1]
  return scale * x.T.dot(x.dot(w))


def one_step(bench, mgr, scale_gradient=1.0, loss_scale=None,
             steps=1):
  """Builds towers in master's order and calls, trains `steps` SGD steps;
  returns (tower 0's w after them, the loss scale's (value, normal steps)
  or None, the manager's grad_has_inf_nan value of the last step or
  None)."""
  bench.devices = mgr.get_devices()
  device_grads = []
  for d in range(len(bench.devices)):
    with tf1.name_scope('tower_%i' % d), mgr.create_outer_variable_scope(d):
      with tf1.device(bench.devices[d]):
        w = tf1.get_variable('w', initializer=tf.constant(W0))
        loss = scale_gradient * tf.square(
            tf.reduce_sum(tf.matmul(tf.constant(X[d:d + 1]), w))) / 2
        params = mgr.trainable_variables_on_device(d, d)
        grads = tf1.gradients(loss, params)
        refs = mgr.trainable_variables_on_device(d, d, writable=True)
        device_grads.append(list(zip(grads, refs)))
  apply_devices, state = mgr.preprocess_device_grads(device_grads)
  params = None
  if loss_scale is not None:
    with tf1.device(bench.cpu_device):
      scale = tf1.get_variable('loss_scale', initializer=loss_scale,
                               trainable=False)
      normal = tf1.get_variable('loss_scale_normal_steps', initializer=0,
                                trainable=False)
    params = LossScaleParams(True, scale, normal, 2, True)
  training_ops = []
  for i, device in enumerate(apply_devices):
    with tf1.device(device):
      grads = mgr.get_gradients_to_apply(i, state)
      opt = tf1.train.GradientDescentOptimizer(RATE)
      mgr.append_apply_gradients_ops(state, opt, grads, training_ops, params)
  train = tf.group(*training_ops)
  with tf1.Session(config=bench.session_config()) as sess:
    sess.run(tf1.global_variables_initializer())
    sess.run(mgr.get_post_init_ops())
    flag = None
    for _ in range(steps):
      if mgr.grad_has_inf_nan is not None:
        flag, _ = sess.run([mgr.grad_has_inf_nan, train])
      else:
        sess.run(train)
    w = sess.run(mgr.trainable_variables_on_device(0, 0)[0])
    scale_state = sess.run([params.loss_scale,
                            params.loss_scale_normal_steps]) if params else None
  return w, scale_state, flag


def ps_towers(bench, staged):
  """Master's distributed PS manager (staged or not) of `bench`, with two
  towers of `sum(x_d . w)` built in master's calls; returns `(mgr,
  apply_devices, state)` of its preprocess_device_grads."""
  import variable_mgr  # pylint: disable=g-import-not-at-top
  cls = (variable_mgr.VariableMgrDistributedFetchFromStagedPS if staged
         else variable_mgr.VariableMgrDistributedFetchFromPS)
  mgr = cls(bench)
  bench.devices = mgr.get_devices()
  device_grads = []
  for d in range(2):
    with mgr.create_outer_variable_scope(d), tf1.device(bench.devices[d]):
      w = tf1.get_variable('w', initializer=tf.constant(W0))
      loss = tf.reduce_sum(tf.matmul(tf.constant(X[d:d + 1]), w))
      params = mgr.trainable_variables_on_device(d, d)
      refs = mgr.trainable_variables_on_device(d, d, writable=True)
      device_grads.append(list(zip(tf1.gradients(loss, params), refs)))
  apply_devices, state = mgr.preprocess_device_grads(device_grads)
  return mgr, apply_devices, state
