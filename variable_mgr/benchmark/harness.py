"""Builds the synchronous data-parallel training graph of a config.

The graph follows the harness protocol of tf_cnn_benchmarks (May 2017), in
its order:

1. `mgr = variable_mgr.create(...)`; `host.devices = mgr.get_devices()`.
2. Per tower `d`, under `mgr.create_outer_variable_scope(d)`,
   `tf.name_scope('tower_%i' % d)` and `tf.device(host.devices[d])`: the
   synthetic input (on the CPU), the model, `tf.gradients` with respect to
   `mgr.trainable_variables_on_device(d)`, paired with the writable
   variables; tower `d`'s UPDATE_OPS (and `mgr.staging_delta_ops`) are kept
   when `mgr.retain_tower_updates(d)`.
3. Staged variables: the put ops of `mgr.staging_vars_on_devices`.
4. `mgr.preprocess_device_grads`.
5. Per apply device: `get_gradients_to_apply` + `append_apply_gradients_ops`.
6. Init, restore, `mgr.get_post_init_ops()`, staging warm-up, training:
   the runners' part (`local_run`, `cluster.worker_task`).

`--use_fp16`: the towers read float16 images and ask for float16 variables
(the benchmark models ask for float32; a getter inside the manager's scope
turns their trainable requests into float16 ones, which the manager stores
in float32 and reads as float16 casts); the gradients are taken of
`mgr.scale_loss(loss)`. `--backward_passes_per_step` and
`--variable_consistency` are options of the manager only.
"""

import collections

import tensorflow as _tf

from variable_mgr import errors
from variable_mgr.benchmark import models
from variable_mgr.benchmark import optimizers

tf = _tf.compat.v1

TrainingGraph = collections.namedtuple('TrainingGraph', [
    'graph', 'mgr', 'train_op', 'loss', 'global_step', 'init_op',
    'post_init_op', 'staging_put_op', 'saver', 'saved', 'summary_op',
    'gradient_bytes'])


def synthetic_inputs(model, batch_size, seed, tower):
  """A fixed batch of images in [-1, 1) and labels, different per tower.

  Stateless random ops give the same batch at every step, as
  tf_cnn_benchmarks' synthetic data does, without a variable to manage.
  """
  shape = [batch_size] + list(model.image_shape)
  images = tf.random.stateless_uniform(shape, [seed, 2 * tower],
                                       minval=-1.0, maxval=1.0)
  uniform = tf.random.stateless_uniform([batch_size], [seed, 2 * tower + 1])
  labels = tf.minimum(tf.cast(uniform * model.num_classes, tf.int32),
                      model.num_classes - 1)
  return images, labels


def create_manager(config, host):
  """The manager `config` asks for, with every strategy option it sets."""
  import variable_mgr  # pylint: disable=g-import-not-at-top
  check_float16_model(config)
  return variable_mgr.create(
      config.variable_update, host, staged_vars=config.staged_vars,
      use_nccl=config.use_nccl, all_reduce_spec=config.all_reduce_spec,
      gradient_repacking=config.gradient_repacking,
      agg_small_grads_max_bytes=config.agg_small_grads_max_bytes,
      agg_small_grads_max_group=config.agg_small_grads_max_group,
      float16_transfer=config.compact_gradient_transfer,
      use_fp16=config.use_fp16, loss_scale=config.fp16_loss_scale,
      auto_loss_scale=config.fp16_enable_auto_loss_scale,
      inc_loss_scale_every_n=config.fp16_inc_loss_scale_every_n,
      backward_passes_per_step=config.backward_passes_per_step,
      variable_consistency=config.variable_consistency,
      variable_partition_min_bytes=config.variable_partition_min_bytes)


# Models whose batch norm keeps float32 statistics that a float16 tower
# cannot update (models.py builds every variable in float32).
_FLOAT32_ONLY_MODELS = ('resnet20', 'resnet50')


def check_float16_model(config):
  """Refuses --use_fp16 with a model that cannot compute in float16.

  Raises:
    IncompatibleOptionsError: naming the model and the fix.
  """
  if config.use_fp16 and config.model in _FLOAT32_ONLY_MODELS:
    raise errors.IncompatibleOptionsError(
        '--use_fp16 with --model %s: its batch norm updates float32 moving '
        'statistics from the batch\'s statistics, which a float16 tower '
        'computes in float16; use --model trivial or lenet with --use_fp16.'
        % config.model)


def _float16_requests(getter, name, *args, **kwargs):
  """A custom getter: a float32 model's trainable variables asked for in
  float16 (the manager's getter stores them in float32)."""
  dtype = kwargs.get('dtype')
  if (kwargs.get('trainable') is not False and dtype is not None and
      tf.as_dtype(dtype) == tf.float32):
    kwargs['dtype'] = tf.float16
  return getter(name, *args, **kwargs)


def build_towers(config, host, mgr, model, first_input=0):
  """Builds every tower of `host` in the harness protocol's order.

  Sets `host.devices` from the manager. Tower d reads the synthetic batch
  number `first_input + d`, made on the CPU.

  Returns:
    (device_grads, losses, update_ops, staging_puts): the towers' one-shot
    `zip(grads, vars)` iterators (as tf_cnn_benchmarks passes them on
    Python 3), their losses, the update ops to keep (tower 0's batch-norm
    statistics and staged deltas), and every staging put.
  """
  host.devices = mgr.get_devices()
  device_grads, losses, update_ops = [], [], []
  for d in range(host.num_gpus):
    with mgr.create_outer_variable_scope(d), \
         tf.name_scope('tower_%i' % d), tf.device(host.devices[d]):
      with tf.device(host.cpu_device):
        images, labels = synthetic_inputs(model, config.batch_size,
                                          config.seed, first_input + d)
      first_update = len(tf.get_collection(tf.GraphKeys.UPDATE_OPS))
      if config.use_fp16:
        with tf.variable_scope(tf.get_variable_scope(),
                               custom_getter=_float16_requests,
                               auxiliary_name_scope=False):
          loss = model.build(tf.cast(images, tf.float16), labels,
                             is_training=True,
                             weight_decay=config.weight_decay)
        loss = tf.cast(loss, tf.float32)
      else:
        loss = model.build(images, labels, is_training=True,
                           weight_decay=config.weight_decay)
      tower_updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)[first_update:]
      params = mgr.trainable_variables_on_device(d)
      writable = mgr.trainable_variables_on_device(d, writable=True)
      grads = tf.gradients(mgr.scale_loss(loss), params)
      device_grads.append(zip(grads, writable))
      losses.append(loss)
      if mgr.retain_tower_updates(d):
        update_ops.extend(tower_updates)
        update_ops.extend(mgr.staging_delta_ops)
  staging_puts = []
  if mgr.supports_staged_vars():
    for tower in mgr.staging_vars_on_devices:
      staging_puts.extend(put for put, _ in tower.values())
  return device_grads, losses, update_ops, staging_puts


def build_training_graph(config, host):
  """Builds the training graph of `config` (resolved) for `host`.

  Args:
    config: a resolved BenchmarkConfig.
    host: the BenchmarkCnn-like object; its `devices` is set here.

  Returns:
    A TrainingGraph; its graph is finalized.

  Raises:
    VariableMgrError: the manager refuses the configuration, before any op
      is built.
  """

  model = models.get_model(config.model)
  graph = tf.Graph()
  with graph.as_default(), tf.variable_scope(
      tf.get_variable_scope(), use_resource=config.use_resource_vars):
    tf.set_random_seed(config.seed)
    mgr = create_manager(config, host)
    with tf.device(host.cpu_device):
      global_step = tf.train.get_or_create_global_step()
    device_grads, losses, update_ops, staging_puts = build_towers(
        config, host, mgr, model)

    apply_devices, state = mgr.preprocess_device_grads(device_grads)
    optimizer = optimizers.make_optimizer(
        config, global_step, config.batch_size * host.num_gpus)
    training_ops = []
    for i, device in enumerate(apply_devices):
      with tf.device(device):
        grads = mgr.get_gradients_to_apply(i, state)
        mgr.append_apply_gradients_ops(state, optimizer, grads, training_ops)

    with tf.device(host.cpu_device):
      with tf.control_dependencies(training_ops + update_ops):
        train_op = tf.group(global_step.assign_add(1), name='train_op')
      average_loss = tf.add_n(losses) / float(len(losses))
      init_op = tf.group(tf.global_variables_initializer(),
                         tf.local_variables_initializer())
      post_init = mgr.get_post_init_ops()
      post_init_op = tf.group(*post_init) if post_init else None
      staging_put_op = tf.group(*staging_puts) if staging_puts else None
      saver = to_save = None
      if config.train_dir:
        to_save = dict(mgr.get_variables_to_save())
        if not any(v is global_step for v in to_save.values()):
          to_save['global_step'] = global_step
        saver = tf.train.Saver(to_save, max_to_keep=1)
      summary_op = None
      if config.summary_dir:
        summary_op = tf.summary.scalar('loss', average_loss)
    graph.finalize()
  gradient_bytes = sum(
      v.shape.num_elements() * v.dtype.base_dtype.size
      for _, v in state.tower_grads[0])
  return TrainingGraph(graph, mgr, train_op, average_loss, global_step,
                       init_op, post_init_op, staging_put_op, saver,
                       to_save, summary_op, gradient_bytes)
