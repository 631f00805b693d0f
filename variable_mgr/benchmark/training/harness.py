"""Builds the synchronous data-parallel training graph of a config.

The graph follows the harness protocol of tf_cnn_benchmarks (May 2017), in
its order:

1. `mgr = variable_mgr.create(...)`; `host.devices = mgr.get_devices()`.
2. Per tower `d`, under `mgr.create_outer_variable_scope(d)`,
   `tf.name_scope('tower_%i' % d)` and `tf.device(host.devices[d])`: the
   input (on the CPU: the synthetic batch, or with `--data_name` tower d's
   share of one `datasets.InputPipeline`), the model (the data set's
   version of it: `model_for_data`), `tf.gradients` with respect to
   `mgr.trainable_variables_on_device(d)`, paired with the writable
   variables; tower `d`'s UPDATE_OPS (and `mgr.staging_delta_ops`) are kept
   when `mgr.retain_tower_updates(d)`.
3. Staged variables: the put ops of `mgr.staging_vars_on_devices`.
4. `mgr.preprocess_device_grads`.
5. Per apply device: `get_gradients_to_apply`, `--gradient_clip`'s
   clipping (`clip_gradients`), `append_apply_gradients_ops`.
6. Init, restore, `mgr.get_post_init_ops()`, staging warm-up, training:
   the runners' part (`local_run`, `cluster.worker_task`).

`--use_fp16`: the towers read float16 images, and the models ask for their
weights in float16 (the manager stores them in float32 and reads them as
float16 casts) and keep batch norm in float32 (`models.catalog` says how); the
gradients are taken of `mgr.scale_loss(loss)`.
`--backward_passes_per_step` and `--variable_consistency` are options of
the manager only.

`--forward_only`: the towers build the model with `is_training=False` and
no gradients; the step runs the forward pass and computes the batch's
top-1 and top-5 accuracy, no variable changes (no update, no global step).
(distributed_replicated makes its PS masters with the apply ops, so there
each tower's local copy keeps its own initial values.)
`--print_training_accuracy` adds the batch's accuracy to a training step.
`--summary_dir` summaries by `--summary_verbosity`: 0 the loss; 1 and the
learning rate; 2 and the norm of every variable's gradient (tower 0's,
before the towers' gradients are combined) and their global norm; 3 and a
histogram of every saved floating-point variable (`variables/` and its
canonical name).
"""

import collections

import tensorflow as _tf

from variable_mgr import base
from variable_mgr import compat
from variable_mgr import errors
from variable_mgr.benchmark.data import datasets
from variable_mgr.benchmark.models import catalog
from variable_mgr.benchmark.training import optimizers

tf = _tf.compat.v1

TrainingGraph = collections.namedtuple('TrainingGraph', [
    'graph', 'mgr', 'train_op', 'loss', 'global_step', 'init_op',
    'post_init_op', 'staging_put_op', 'saver', 'saved', 'summary_op',
    'gradient_bytes', 'top_1', 'top_5', 'eval_saver'])

Towers = collections.namedtuple('Towers', [
    'device_grads', 'losses', 'update_ops', 'staging_puts', 'top_1',
    'top_5'])


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


def input_device(host, tower):
  """The CPU that makes tower `tower`'s synthetic batch: that of the
  machine the tower runs on (a controller's towers live on every worker,
  and a batch made on worker 0 would cross the network every step), else
  the host's CPU."""
  spec = tf.DeviceSpec.from_string(host.raw_devices[tower])
  if spec.job is None:
    return host.cpu_device
  return '/job:%s/replica:%d/task:%d/cpu:0' % (spec.job, spec.replica or 0,
                                                 spec.task or 0)


def create_manager(config, host):
  """The manager `config` asks for, with every strategy option it sets:
  `--hierarchical_copy` is replicated's all-reduce spec `hcopy`, and
  `--compact_gradient_transfer` acts with `--use_fp16` under replicated
  only, as in tf_cnn_benchmarks."""
  import variable_mgr  # pylint: disable=g-import-not-at-top
  replicated = config.variable_update == 'replicated'
  spec = config.all_reduce_spec
  if spec is None and config.hierarchical_copy and replicated:
    spec = 'hcopy'
  return variable_mgr.create(
      config.variable_update, host, staged_vars=config.staged_vars,
      use_nccl=config.use_nccl, all_reduce_spec=spec,
      gradient_repacking=config.gradient_repacking,
      agg_small_grads_max_bytes=config.agg_small_grads_max_bytes,
      agg_small_grads_max_group=config.agg_small_grads_max_group,
      float16_transfer=bool(config.compact_gradient_transfer and
                            config.use_fp16 and replicated),
      use_fp16=config.use_fp16, loss_scale=config.fp16_loss_scale,
      auto_loss_scale=config.fp16_enable_auto_loss_scale,
      inc_loss_scale_every_n=config.fp16_inc_loss_scale_every_n,
      backward_passes_per_step=config.backward_passes_per_step,
      variable_consistency=config.variable_consistency,
      variable_partition_min_bytes=config.variable_partition_min_bytes,
      bucket_bytes=config.gradient_bucket_bytes)


class DataFormatError(errors.VariableMgrError):
  """--data_format=NCHW: the benchmark's models are NHWC only."""


def check_data_config(config):
  """Refuses an input configuration the towers cannot read, before any
  graph (the command's flags refuse it at parse time too).

  Returns:
    The DataSet of `--data_name` (its files checked: the validation split's
    with `--eval` or `--eval_during_training_every_n_steps`, the train
    split's unless `--eval`), or None for synthetic data.

  Raises:
    DataFormatError: --data_format=NCHW.
    DataError: an unknown data set, a missing --data_dir, or missing files.
  """
  if config.data_format != 'NHWC':
    raise DataFormatError(
        '--data_format=%s: the benchmark\'s models are written NHWC (and '
        'tf_cnn_benchmarks refuses NCHW with --device=cpu); pass '
        '--data_format=NHWC' % config.data_format)
  if config.synthetic:
    return None
  data = datasets.get_dataset(config.data_name, config.data_dir)
  if not config.eval:
    data.check_subset('train')
  if config.eval or config.eval_during_training_every_n_steps:
    data.check_subset('validation')
  return data


def model_of(config):
  """The model of `config` for `--data_name`'s data set: tf_cnn_benchmarks'
  image and classes on imagenet (1001 classes) and cifar10 (10), files or
  synthetic, the benchmark's own on digits (with its 10 classes) and
  `small` synthetic data.

  Raises:
    UnknownModelError: tf_cnn_benchmarks has no such model for the data
      set (before any graph).
    DataError: as `check_data_config`.
  """
  data = check_data_config(config)
  return model_for_data(catalog.get_model(config.model), config.data_name,
                        data)


def model_for_data(model, data_name, data):
  """`model` (of the benchmark's own table) as data set `data_name` (the
  DataSet `data`, or None for synthetic data) takes it: the model of its
  table (synthetic imagenet and cifar10 data take their tables too), with
  the data set's classes."""
  if model.name in catalog.MODELS:
    model = catalog.get_model(model.name, data_name)
  if data is not None and data.num_classes != model.num_classes:
    model = model._replace(num_classes=data.num_classes)
  return model


def top_k_correct(logits, labels, k, weights=None):
  """How many of the batch's labels are among the `k` largest logits (a
  tie at the k-th place counts as in, as `tf.nn.in_top_k`), float32."""
  hits = tf.cast(tf.nn.in_top_k(tf.cast(logits, tf.float32), labels, k),
                 tf.float32)
  if weights is not None:
    hits *= weights
  return tf.reduce_sum(hits)


def build_model(config, model, images, labels, is_training,
                return_logits=False):
  """One tower's model in the current scopes: `(loss, logits or None)`;
  the loss float32, under `--use_fp16` of a model computed in float16 on
  float16 images and float16 reads of the weights (batch norm in
  float32)."""
  if config.use_fp16:
    images = tf.cast(images, tf.float16)
  built = model.build(images, labels, is_training=is_training,
                      weight_decay=config.weight_decay,
                      return_logits=return_logits)
  loss, logits = built if return_logits else (built, None)
  return loss, logits


def _pipelines(config, host, data, model, shard):
  """[tower] (training pipeline, the tower's index in it): one pipeline a
  machine, on its CPU (`input_device`), for the towers of that machine. A
  worker's or a local host's towers share one pipeline, of `shard`; a
  controller's towers live on every worker, and worker k's read worker k's
  share of the data set from a pipeline on worker k (one pipeline on worker
  0 sent every other worker's images over the network each step)."""
  machines = collections.OrderedDict()
  for d in range(host.num_gpus):
    machines.setdefault(input_device(host, d), []).append(d)
  if len(machines) > 1:
    shards = [(k, len(machines)) for k in range(len(machines))]
  else:
    machines, shards = {host.cpu_device: list(range(host.num_gpus))}, [shard]
  feeds = [None] * host.num_gpus
  for (device, own), share in zip(machines.items(), shards):
    pipeline = datasets.InputPipeline(
        data, 'train', config.batch_size, len(own), model.image_shape,
        distortions=config.distortions, seed=config.seed, device=device,
        shard=share)
    for index, d in enumerate(own):
      feeds[d] = (pipeline, index)
  return feeds


def build_towers(config, host, mgr, model, first_input=0, shard=None):
  """Builds every tower of `host` in the harness protocol's order.

  Sets `host.devices` from the manager. On synthetic data, tower d
  reads the synthetic batch number `first_input + d`, made on the CPU of
  its own machine (`input_device`);
  on real data, its share of its machine's training pipeline, on that
  machine's CPU (`_pipelines`; `shard`: `(worker index, workers)` for a
  cluster worker's own share of the data set). The model is the data
  set's version (`model_for_data`). With `--forward_only` no gradient is
  built.

  Returns:
    Towers: `device_grads` (the towers' one-shot `zip(grads, vars)`
    iterators, as tf_cnn_benchmarks passes them on Python 3; empty with
    `--forward_only`), their `losses`, the `update_ops` to keep (tower 0's
    batch-norm statistics and staged deltas), every `staging_puts`, and,
    with `--print_training_accuracy` or `--forward_only`, `top_1` and
    `top_5`: the fraction of the step's images (every tower's) whose label
    is the first, or among the first five, of the logits (else None).
  """
  host.devices = mgr.get_devices()
  feeds = None
  data = check_data_config(config)
  model = model_for_data(model, config.data_name, data)
  if data is not None:
    feeds = _pipelines(config, host, data, model, shard)
  accuracy = config.print_training_accuracy or config.forward_only
  is_training = not config.forward_only
  device_grads, losses, update_ops, correct = [], [], [], []
  for d in range(host.num_gpus):
    with mgr.create_outer_variable_scope(d), \
         tf.name_scope('tower_%i' % d), tf.device(host.devices[d]):
      if feeds is not None:
        pipeline, index = feeds[d]
        images, labels = pipeline.tower(index)
      else:
        with tf.device(input_device(host, d)):
          images, labels = synthetic_inputs(model, config.batch_size,
                                            config.seed, first_input + d)
      first_update = len(tf.get_collection(tf.GraphKeys.UPDATE_OPS))
      loss, logits = build_model(config, model, images, labels, is_training,
                                 accuracy)
      if accuracy:
        correct.append((top_k_correct(logits, labels, 1),
                        top_k_correct(logits, labels, 5)))
      losses.append(loss)
      if config.forward_only:
        continue
      tower_updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)[first_update:]
      params = mgr.trainable_variables_on_device(d)
      writable = mgr.trainable_variables_on_device(d, writable=True)
      grads = tf.gradients(mgr.scale_loss(loss), params)
      device_grads.append(zip(grads, writable))
      if mgr.retain_tower_updates(d):
        update_ops.extend(tower_updates)
        update_ops.extend(mgr.staging_delta_ops)
  staging_puts = []
  if mgr.supports_staged_vars():
    for tower in mgr.staging_vars_on_devices:
      staging_puts.extend(put for put, _ in tower.values())
  top_1 = top_5 = None
  if correct:
    with tf.device(host.cpu_device):
      images_a_step = float(config.batch_size * host.num_gpus)
      top_1 = tf.add_n([c[0] for c in correct]) / images_a_step
      top_5 = tf.add_n([c[1] for c in correct]) / images_a_step
  return Towers(device_grads, losses, update_ops, staging_puts, top_1, top_5)


def clip_gradients(grads, clip):
  """`--gradient_clip`: `[(grad, var)]` with every gradient clipped to
  `[-clip, clip]` element by element (tf_cnn_benchmarks'
  `tf.clip_by_value`; an IndexedSlices keeps its indices, a None gradient
  stays None); `grads` as it is when `clip` is None."""
  if clip is None:
    return grads
  with tf.name_scope('clip_gradients'):
    return [(None if g is None else tf.clip_by_value(g, -clip, clip), v)
            for g, v in grads]


def learning_rate_of(optimizer):
  """The learning rate `optimizer` applies, as a float32 tensor."""
  for name in ('_learning_rate', '_lr'):
    rate = getattr(optimizer, name, None)
    if rate is not None:
      return tf.cast(rate() if callable(rate) else rate, tf.float32)
  raise errors.VariableMgrError(
      '--summary_verbosity=1 or more: the learning rate of %s cannot be '
      'read; use --summary_verbosity=0' % type(optimizer).__name__)


def _summaries(config, mgr, average_loss, learning_rate, tower_grads):
  """The merged summary op of `--summary_verbosity` (see the module
  docstring); level 0 is the loss alone, as before the levels existed."""
  loss_summary = tf.summary.scalar('loss', average_loss)
  if config.summary_verbosity < 1:
    return loss_summary
  summaries = [loss_summary]
  if learning_rate is not None:
    summaries.append(tf.summary.scalar('learning_rate', learning_rate))
  if config.summary_verbosity >= 2 and tower_grads:
    norms = []
    for g, v in tower_grads:
      if g is None:
        continue
      if isinstance(g, tf.IndexedSlices):
        g = g.values
      norm = tf.norm(tf.cast(g, tf.float32))
      norms.append(norm)
      name = base.canonical_name(v.op.name)
      summaries.append(tf.summary.scalar('gradient_norm/' + name, norm))
    if norms:
      global_norm = tf.sqrt(compat.sum_in_order([n * n for n in norms]))
      summaries.append(tf.summary.scalar('gradient_norm/global', global_norm))
  if config.summary_verbosity >= 3:
    for name, var in sorted(mgr.get_variables_to_save().items()):
      if var.dtype.base_dtype.is_floating:
        summaries.append(tf.summary.histogram('variables/' + name, var))
  return tf.summary.merge(summaries)


def build_training_graph(config, host):
  """Builds the training graph of `config` (resolved) for `host`.

  Args:
    config: a resolved BenchmarkConfig.
    host: the BenchmarkCnn-like object; its `devices` is set here.

  Returns:
    A TrainingGraph; its graph is finalized. `top_1` and `top_5` are the
    step's accuracy (`--print_training_accuracy`, `--forward_only`) or
    None; `eval_saver` a Saver of the saved variables that
    `--eval_during_training_every_n_steps` writes with (else None).

  Raises:
    VariableMgrError: the manager refuses the configuration, or the data
      set is missing, before any op is built.
  """

  model = model_of(config)
  graph = tf.Graph()
  with graph.as_default(), tf.variable_scope(
      tf.get_variable_scope(), use_resource=config.use_resource_vars):
    tf.set_random_seed(config.seed)
    mgr = create_manager(config, host)
    with tf.device(host.cpu_device):
      global_step = tf.train.get_or_create_global_step()
    towers = build_towers(config, host, mgr, model)
    losses = towers.losses
    learning_rate = None
    tower_grads = []
    if config.forward_only:
      training_ops = []
    else:
      apply_devices, state = mgr.preprocess_device_grads(towers.device_grads)
      tower_grads = state.tower_grads[0]
      optimizer = optimizers.make_optimizer(
          config, global_step, config.batch_size * host.num_gpus)
      training_ops = []
      for i, device in enumerate(apply_devices):
        with tf.device(device):
          grads = clip_gradients(mgr.get_gradients_to_apply(i, state),
                                 config.gradient_clip)
          mgr.append_apply_gradients_ops(state, optimizer, grads,
                                         training_ops)
      if config.summary_dir and config.summary_verbosity >= 1:
        with tf.device(host.cpu_device):
          learning_rate = learning_rate_of(optimizer)

    with tf.device(host.cpu_device):
      if config.forward_only:
        train_op = tf.group(*([towers.top_1, towers.top_5] + losses),
                            name='forward_op')
      else:
        with tf.control_dependencies(training_ops + towers.update_ops):
          train_op = tf.group(global_step.assign_add(1), name='train_op')
      average_loss = compat.sum_in_order(losses) / float(len(losses))
      init_op = tf.group(tf.global_variables_initializer(),
                         tf.local_variables_initializer())
      post_init = mgr.get_post_init_ops()
      post_init_op = tf.group(*post_init) if post_init else None
      staging_put_op = (tf.group(*towers.staging_puts) if towers.staging_puts
                        else None)
      saver = to_save = eval_saver = None
      if config.train_dir or config.eval_during_training_every_n_steps:
        to_save = dict(mgr.get_variables_to_save())
        if not any(v is global_step for v in to_save.values()):
          to_save['global_step'] = global_step
      if config.train_dir:
        saver = tf.train.Saver(to_save, max_to_keep=config.max_ckpts_to_keep)
      if config.eval_during_training_every_n_steps:
        eval_saver = tf.train.Saver(to_save, max_to_keep=1)
      summary_op = None
      if config.summary_dir:
        summary_op = _summaries(config, mgr, average_loss, learning_rate,
                                tower_grads)
    graph.finalize()
  gradient_bytes = sum(
      v.shape.num_elements() * v.dtype.base_dtype.size
      for _, v in tower_grads)
  return TrainingGraph(graph, mgr, train_op, average_loss, global_step,
                       init_op, post_init_op, staging_put_op, saver,
                       to_save, summary_op, gradient_bytes, towers.top_1,
                       towers.top_5, eval_saver)
