"""A harness written as tf_cnn_benchmarks' 2017 harness drives a manager.

It follows REFERENCE order exactly, with `import variable_mgr` and one-shot
`zip(...)` iterators for each tower's (grad, var) pairs, as that harness does
on Python 3. The model is a two-layer network, small enough for a NumPy
reference: h = tanh(x W1 + b1), y' = h W2 + b2, loss = 0.5 mean |y' - y|^2.
Its W1 gradient reads W2, so an update of W2 that races the backward pass
shows up in the numbers.
"""

import numpy as np
import tensorflow as tf

import controller_cluster
import variable_mgr
from variable_mgr import checkpoint

tf1 = tf.compat.v1

IN, HIDDEN, OUT = 5, 4, 3
LEARNING_RATE = 0.1
# Every local strategy and the all-reduce variants the tests drive:
# name -> (create() arguments, host arguments, how the towers combine).
LOCAL_STRATEGIES = {
    'independent': (dict(variable_update='independent'), {}, 'none'),
    'ps_cpu': (dict(variable_update='parameter_server'), {}, 'mean'),
    'ps_spread': (dict(variable_update='parameter_server'),
                  dict(local_parameter_device='gpu'), 'mean'),
    'staged_ps': (dict(variable_update='parameter_server', staged_vars=True),
                  {}, 'mean'),
    'replicated': (dict(variable_update='replicated'), {}, 'sum'),
    'replicated_spread': (dict(variable_update='replicated'),
                          dict(local_parameter_device='gpu'), 'sum'),
    'replicated_xring2': (dict(variable_update='replicated',
                               all_reduce_spec='xring#2'), {}, 'sum'),
    # Limits count elements: the biases (4, 3) to pscpu, w1, w2 to rechd.
    'replicated_pscpu_rechd': (dict(variable_update='replicated',
                                    all_reduce_spec='pscpu:4:rechd'), {},
                               'sum'),
    'replicated_hcopy_repacked': (dict(variable_update='replicated',
                                       all_reduce_spec='hcopy',
                                       gradient_repacking=2), {}, 'sum'),
    'replicated_small_grads': (dict(variable_update='replicated',
                                    agg_small_grads_max_bytes=64,
                                    agg_small_grads_max_group=2), {}, 'sum'),
}

# distributed_all_reduce on in-process workers (`controller_cluster`): the
# towers of a run are laid out as `controller_cluster.layout` says.
CLUSTER_STRATEGIES = {
    'distributed_all_reduce': (
        dict(variable_update='distributed_all_reduce',
             all_reduce_spec='pscpu/pscpu'), dict(workers='layout'), 'sum'),
}

VARIABLES = ('w1', 'b1', 'w2', 'b2')


def make_host(num_towers, host_args):
  """`(host, session target)`: a `LocalBenchmarkCnn` of `host_args`, or
  with `workers` in them (a count, or 'layout') a controller's host over
  that many in-process workers (target: worker 0's server)."""
  args = dict(host_args)
  workers = args.pop('workers', None)
  if workers is None:
    return variable_mgr.LocalBenchmarkCnn(num_towers, **args), ''
  if workers == 'layout':
    workers, _ = controller_cluster.layout(num_towers)
  return controller_cluster.host(workers, num_towers // workers, **args)


def model(x, y, dtype=tf.float32):
  init = tf1.random_normal_initializer(stddev=0.5)
  w1 = tf1.get_variable('layer1/w1', [IN, HIDDEN], dtype, init)
  b1 = tf1.get_variable('layer1/b1', [HIDDEN], dtype, init)
  w2 = tf1.get_variable('layer2/w2', [HIDDEN, OUT], dtype, init)
  b2 = tf1.get_variable('layer2/b2', [OUT], dtype, init)
  h = tf.tanh(tf.matmul(x, w1) + b1)
  pred = tf.matmul(h, w2) + b2
  return 0.5 * tf.reduce_mean(tf.reduce_sum(tf.square(pred - y), axis=1))


def numpy_gradients(params, x, y):
  """Gradients of `model`'s loss, by hand."""
  w1, b1, w2, b2 = (params[k] for k in VARIABLES)
  h = np.tanh(x.dot(w1) + b1)
  pred = h.dot(w2) + b2
  d_pred = (pred - y) / x.shape[0]
  d_h = d_pred.dot(w2.T) * (1 - h * h)
  return {'w1': x.T.dot(d_h), 'b1': d_h.sum(0),
          'w2': h.T.dot(d_pred), 'b2': d_pred.sum(0)}


class Harness(object):
  """A built training graph in the order of that harness, and its session.

  Args:
    create_args: `variable_mgr.create` arguments but the host.
    host_args: `LocalBenchmarkCnn` arguments but the tower count.
    num_towers: tower count.
    build_tower: `() -> (loss, inputs)`, called in each tower's scopes.
    learning_rate: SGD learning rate, a Python float.
    dtype: the learning rate's dtype (a Python float would round to float32).
    seed: graph-level random seed, or None.
    global_step: create `tf.train.get_or_create_global_step()` outside the
      manager's scopes and increment it after every step's updates.
    restore_from: a checkpoint to restore (then post-init ops, then puts).

  Attributes:
    mgr, graph, sess, inputs (per tower), losses, tower_grads (per tower, the
    `(grad, var)` pairs it gave the manager), built_by_towers (the ops of the
    graph before `preprocess_device_grads`), saver, saved
    (`get_variables_to_save()`), applied (what `get_gradients_to_apply`
    returned, per apply device), update_ops (the UPDATE_OPS and staging
    delta ops kept: tower 0's), post_init, put_ops, model_variables.
  """

  def __init__(self, create_args, host_args, num_towers, build_tower,
               learning_rate, dtype, seed=None, global_step=False,
               restore_from=None):
    self.graph = tf.Graph()
    self.num_towers = num_towers
    with self.graph.as_default():
      if seed is not None:
        tf1.set_random_seed(seed)
      self.global_step = None
      if global_step:
        self.global_step = tf1.train.get_or_create_global_step()
      host, self.target = make_host(num_towers, host_args)
      self.mgr = mgr = variable_mgr.create(benchmark_cnn=host, **create_args)
      host.devices = mgr.get_devices()
      self.inputs = []
      self.losses = []
      self.tower_grads = []
      device_grads = []
      update_ops = []
      for d in range(num_towers):
        with mgr.create_outer_variable_scope(d), tf.name_scope('tower_%i' % d):
          with tf1.device(host.devices[d]):
            loss, inputs = build_tower()
            self.inputs.append(inputs)
            self.losses.append(loss)
            params = mgr.trainable_variables_on_device(d)
            grads = tf.gradients(loss, params)
            param_refs = mgr.trainable_variables_on_device(d, writable=True)
            device_grads.append(zip(grads, param_refs))
            self.tower_grads.append(list(zip(grads, param_refs)))
            if mgr.retain_tower_updates(d):
              update_ops.extend(tf1.get_collection(tf1.GraphKeys.UPDATE_OPS))
              update_ops.extend(mgr.staging_delta_ops)
      self.put_ops = []
      if mgr.supports_staged_vars():
        for staging_ops in mgr.staging_vars_on_devices:
          self.put_ops.extend(put for put, _ in staging_ops.values())
      self.built_by_towers = set(self.graph.get_operations())
      apply_devices, state = mgr.preprocess_device_grads(device_grads)
      opt = tf1.train.GradientDescentOptimizer(
          tf.constant(learning_rate, dtype))
      training_ops = []
      self.applied = []
      for i, dev in enumerate(apply_devices):
        with tf1.device(dev):
          grads = mgr.get_gradients_to_apply(i, state)
          self.applied.append(grads)
          mgr.append_apply_gradients_ops(state, opt, grads, training_ops)
      if self.global_step is not None:
        with tf1.control_dependencies(training_ops):
          training_ops = [tf1.assign_add(self.global_step, 1)]
      self.update_ops = update_ops
      self.train_op = tf.group(*(training_ops + update_ops))
      init = [tf1.global_variables_initializer(),
              tf1.local_variables_initializer()]
      self.post_init = post_init = mgr.get_post_init_ops()
      self.saved = mgr.get_variables_to_save()
      self.saver = tf1.train.Saver(self.saved)
      self.model_variables = tf1.global_variables() + tf1.local_variables()
      self.graph.finalize()
    self.sess = tf1.Session(self.target, graph=self.graph,
                            config=host.session_config())
    self.sess.run(init)
    if restore_from:
      checkpoint.restore(self.sess, restore_from, self.saved, self.saver)
    self.sess.run(post_init)
    if self.put_ops:
      self.sess.run(self.put_ops)

  def step(self, batches):
    """One training step; `batches[d]` feeds tower d's inputs."""
    feeds = {}
    for inputs, batch in zip(self.inputs, batches):
      feeds.update(zip(inputs, batch))
    self.sess.run([self.train_op] + self.put_ops, feeds)

  def tower_variables(self, tower=0):
    """`{name without the copy's prefix: variable}` of tower `tower`'s copy
    (the shared copy for parameter-server strategies)."""
    prefix = 'v%d/' % tower if self.mgr.each_tower_has_variables() else 'v/'
    chosen = {}
    for v in self.model_variables:
      if v.name.startswith(prefix):
        name = v.name[:-2] if v.name.endswith(':0') else v.name
        chosen[name[len(prefix):]] = v
    return chosen

  def close(self):
    self.sess.close()
    if self.target:
      controller_cluster.close(self.target)


class Run(Harness):
  """The two-layer model: `step(batches)` trains one step, `batches[d]`
  being tower d's `(x, y)`; `values(tower)` reads."""

  def __init__(self, variable_update, num_towers,
               local_parameter_device='cpu', dtype=tf.float32, batch=6,
               restore_from=None, workers=None, **options):

    def build_tower():
      x = tf1.placeholder(dtype, [batch, IN])
      y = tf1.placeholder(dtype, [batch, OUT])
      return model(x, y, dtype), (x, y)

    Harness.__init__(
        self, dict(options, variable_update=variable_update),
        dict(local_parameter_device=local_parameter_device,
             **({} if workers is None else {'workers': workers})), num_towers,
        build_tower, LEARNING_RATE, dtype, restore_from=restore_from)

  def values(self, tower=0):
    """{'w1': ..., ...} of tower `tower`'s copy (the shared one for PS)."""
    by_short = dict((name.split('/')[-1], v)
                    for name, v in self.tower_variables(tower).items())
    values = self.sess.run([by_short[k] for k in VARIABLES])
    return dict(zip(VARIABLES, values))
