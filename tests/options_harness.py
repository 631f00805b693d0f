"""A harness for the training options (float16 towers, loss scale,
accumulation, relaxed consistency), and the NumPy steps they must equal.

`Run` drives a manager in the order of tf_cnn_benchmarks' harness, as
`seed_harness.Harness` does, but differentiates `mgr.scale_loss(loss)`, the
one call the options add to the protocol. The model is seed_harness's
two-layer network, built in float32 or float16 (then stored in float32 by
the manager's getter with `use_fp16`).
"""

import numpy as np
import tensorflow as tf

import seed_harness
import variable_mgr
from seed_harness import VARIABLES
from variable_mgr import checkpoint

tf1 = tf.compat.v1

LEARNING_RATE = 0.1
BATCH = 6

# name -> (create() arguments, host arguments, default combination)
LOCAL_STRATEGIES = dict(
    seed_harness.LOCAL_STRATEGIES,
    replicated_collective=(dict(variable_update='replicated',
                                all_reduce_spec='collective'), {}, 'sum'))
LOCAL_NAMES = sorted(LOCAL_STRATEGIES)


class Run(object):
  """One graph of the two-layer model on `num_towers` towers.

  Args:
    name: a key of `LOCAL_STRATEGIES`.
    num_towers: tower count.
    dtype: the dtype the model asks its variables and data in.
    optimizer: 'sgd' or 'momentum'.
    restore_from: a checkpoint to restore before the post-init ops.
    host_args: more `LocalBenchmarkCnn` arguments (device='gpu', ...).
    session: False builds the graph only (for graph checks).
    host: a ready host (e.g. a `ClusterBenchmarkCnn`) instead of a
      `LocalBenchmarkCnn` of `host_args`; then no session is made (the
      caller sets `sess`, running `init_ops` and `post_init_ops` as its
      cluster needs).
    seed: the graph's random seed (the initial values).
    batch: rows of a tower's batch.
    model: None for the two-layer model, else an object whose
      `build(dtype)` makes one tower and returns `(loss, inputs)`, the
      placeholders a batch feeds in order (read with `snapshot`).
    **options: more `variable_mgr.create` arguments.

  Attributes: mgr, graph, state, training_ops (what the manager appended),
  train_op, sess (None without a session), saved, init_ops, post_init_ops.
  """

  def __init__(self, name, num_towers, dtype=tf.float32, optimizer='sgd',
               restore_from=None, host_args=None, session=True, seed=1,
               batch=BATCH, model=None, host=None, **options):
    create_args, default_host_args, combine = LOCAL_STRATEGIES[name]
    host_args = dict(default_host_args, **(host_args or {}))
    self.name = name
    self.num_towers = num_towers
    self.combine = options.get('reduction') or combine
    self.stale = create_args.get('staged_vars', False)
    self.graph = tf.Graph()
    with self.graph.as_default():
      tf1.set_random_seed(seed)
      own_host = host is None
      if own_host:
        host = variable_mgr.LocalBenchmarkCnn(num_towers, **host_args)
      else:
        session = False
      self.mgr = mgr = variable_mgr.create(
          benchmark_cnn=host, **dict(create_args, **options))
      host.devices = mgr.get_devices()
      self.inputs = []
      device_grads = []
      update_ops = []
      for d in range(num_towers):
        with mgr.create_outer_variable_scope(d), tf.name_scope('tower_%i' % d):
          with tf1.device(host.devices[d]):
            if model is None:
              x = tf1.placeholder(dtype, [batch, seed_harness.IN])
              y = tf1.placeholder(dtype, [batch, seed_harness.OUT])
              loss, inputs = seed_harness.model(x, y, dtype), (x, y)
            else:
              loss, inputs = model.build(dtype)
            self.inputs.append(inputs)
            params = mgr.trainable_variables_on_device(d)
            grads = tf.gradients(mgr.scale_loss(loss), params)
            refs = mgr.trainable_variables_on_device(d, writable=True)
            device_grads.append(zip(grads, refs))
            if mgr.retain_tower_updates(d):
              update_ops.extend(mgr.staging_delta_ops)
      self.put_ops = []
      if mgr.supports_staged_vars():
        for staging_ops in mgr.staging_vars_on_devices:
          self.put_ops.extend(put for put, _ in staging_ops.values())
      apply_devices, self.state = mgr.preprocess_device_grads(device_grads)
      if optimizer == 'momentum':
        opt = tf1.train.MomentumOptimizer(LEARNING_RATE, 0.9, use_locking=True)
      else:
        opt = tf1.train.GradientDescentOptimizer(LEARNING_RATE,
                                                 use_locking=True)
      training_ops = []
      for i, dev in enumerate(apply_devices):
        with tf1.device(dev):
          grads = mgr.get_gradients_to_apply(i, self.state)
          mgr.append_apply_gradients_ops(self.state, opt, grads, training_ops)
      self.training_ops = list(training_ops)
      # A given host's worker keeps its own step (an op without a device
      # could land on another task of its cluster).
      with tf1.device(None if own_host else host.cpu_device):
        self.global_step = tf1.train.get_or_create_global_step()
      with tf1.control_dependencies(training_ops + update_ops):
        self.train_op = tf1.assign_add(self.global_step, 1)
      init = [tf1.global_variables_initializer(),
              tf1.local_variables_initializer()]
      post_init = mgr.get_post_init_ops()
      self.init_ops, self.post_init_ops = init, post_init
      self.saved = mgr.get_variables_to_save()
      self.saver = tf1.train.Saver(self.saved)
      self.model_variables = tf1.global_variables() + tf1.local_variables()
      self.graph.finalize()
    self.sess = None
    if not session:
      return
    self.sess = tf1.Session(graph=self.graph, config=host.session_config())
    self.sess.run(init)
    if restore_from:
      checkpoint.restore(self.sess, restore_from, self.saved, self.saver)
    self.sess.run(post_init)
    if self.put_ops:
      self.sess.run(self.put_ops)

  @property
  def towers(self):
    if self.mgr.each_tower_has_variables():
      return list(range(self.num_towers))
    return [0]

  def step(self, batches):
    feeds = {}
    for inputs, batch in zip(self.inputs, batches):
      feeds.update(zip(inputs, batch))
    self.sess.run([self.train_op] + self.put_ops, feeds)

  def values(self, tower=0):
    """{'w1': ..., ...} of tower `tower`'s copy (the shared one for PS)."""
    prefix = 'v%d/' % tower if self.mgr.each_tower_has_variables() else 'v/'
    by_short = {}
    for v in self.model_variables:
      if v.name.startswith(prefix) and v.trainable:
        by_short[v.op.name.split('/')[-1]] = v
    return dict(zip(VARIABLES,
                    self.sess.run([by_short[k] for k in VARIABLES])))

  def snapshot(self):
    """`(copies, scale)` in one session run: `copies[i]` is
    `{name without the copy's prefix: value}` of every trainable variable
    of copy `towers[i]` (the shared one for PS), `scale` the loss scale or
    None without `use_fp16`."""
    fetch = []
    for t in self.towers:
      prefix = 'v%d/' % t if self.mgr.each_tower_has_variables() else 'v/'
      fetch.append(dict((v.op.name[len(prefix):], v)
                        for v in self.model_variables
                        if v.op.name.startswith(prefix) and v.trainable))
    scale = self.mgr.loss_scale
    if scale is None:
      return self.sess.run(fetch), None
    copies, value = self.sess.run((fetch, scale))
    return copies, value

  def all_values(self):
    """Every copy's values, `[tower]{name: value}`."""
    return [self.values(t) for t in self.towers]

  def loss_scale(self):
    return self.sess.run(self.mgr.loss_scale)

  def global_step_value(self):
    return self.sess.run(self.global_step)

  def close(self):
    if self.sess is not None:
      self.sess.close()


def make_batches(num_towers, steps, dtype=np.float32, seed=0, rows=BATCH):
  rng = np.random.RandomState(seed)
  return [[(rng.randn(rows, seed_harness.IN).astype(dtype),
            rng.randn(rows, seed_harness.OUT).astype(dtype))
           for _ in range(num_towers)] for _ in range(steps)]


def gradients(params, batch, float16=False):
  """NumPy gradients of the model's loss at `params` on `batch`; with
  `float16`, weights and data rounded to float16 first (the towers'
  forward reads float16 casts), the arithmetic in float64."""
  x, y = batch
  if float16:
    params = dict((k, v.astype(np.float16)) for k, v in params.items())
    x, y = x.astype(np.float16), y.astype(np.float16)
  params = dict((k, np.asarray(v, np.float64)) for k, v in params.items())
  return seed_harness.numpy_gradients(params, np.asarray(x, np.float64),
                                      np.asarray(y, np.float64))


def assert_close(got, want, message='', rtol=1e-4, atol=1e-5):
  for k in VARIABLES:
    np.testing.assert_allclose(got[k], want[k], rtol=rtol, atol=atol,
                               err_msg='%s %s' % (message, k))


def reference(init, batches, combine, stale=False, float16=False,
              skipped=(), learning_rate=LEARNING_RATE):
  """Plain SGD in NumPy (float64) from `init` (every tower's start).

  Args:
    batches: `[step][tower]` of `(x, y)`.
    combine: 'none' (each tower its own gradient), 'mean' or 'sum'.
    stale: gradients taken at the previous step's weights (staged reads).
    float16: gradients of the float16 forward (see `gradients`).
    skipped: steps that change nothing (an inf somewhere).

  Returns:
    `history[step][tower]`: `{name: value}` after the step.
  """
  num_towers = len(batches[0])
  towers = [dict((k, np.asarray(v, np.float64)) for k, v in init.items())
            for _ in range(num_towers)]
  previous = towers[0]
  history = []
  for step, step_batches in enumerate(batches):
    if step in skipped:
      previous = towers[0]
    elif combine == 'none':
      towers = [dict((k, p[k] - learning_rate * g[k]) for k in VARIABLES)
                for p, g in ((p, gradients(p, b, float16))
                             for p, b in zip(towers, step_batches))]
    else:
      current = towers[0]
      at = previous if stale else current
      grads = [gradients(at, b, float16) for b in step_batches]
      new = dict((k, current[k] - learning_rate *
                  combine_grads([g[k] for g in grads], combine))
                 for k in VARIABLES)
      previous = current
      towers = [new] * num_towers
    history.append(towers)
  return history


def combine_grads(grads, how):
  """One variable's update direction from `grads` (a list over towers)."""
  total = sum(grads)
  return total / len(grads) if how == 'mean' else total


def with_inf(step_batches, tower, value=np.inf):
  """`step_batches` with one input of tower `tower` set to `value`."""
  result = list(step_batches)
  x, y = result[tower]
  x = x.copy()
  x[0, 0] = value
  result[tower] = (x, y)
  return result


def run_collective_workers(tmp_path, mode, workers=2, towers=2):
  """Runs `workers` options_worker.py processes of `mode` in a worker-only
  cluster on loopback; returns each one's arrays (see options_worker)."""
  import os  # pylint: disable=g-import-not-at-top
  import worker_processes  # pylint: disable=g-import-not-at-top
  script = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        'options_worker.py')
  return worker_processes.run_workers(
      tmp_path, script, workers,
      lambda cluster, k, output: [cluster, str(k), str(towers), output, mode])


def collective_values(arrays, when, tower):
  """`{short name: value}` of tower `tower`'s copy at `when` ('initial',
  'step0', ...) in one worker's arrays."""
  prefix = '%s/v%d/' % (when, tower)
  return dict((name[len(prefix):].split('/')[-1], value)
              for name, value in arrays.items() if name.startswith(prefix))
