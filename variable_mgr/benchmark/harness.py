"""Builds and runs a synchronous data-parallel training graph.

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
6. Init, restore, `mgr.get_post_init_ops()`, staging warm-up, training.
"""

import collections
import json
import os
import time

import numpy as np
import tensorflow as _tf

from variable_mgr import checkpoint
from variable_mgr.allreduce import traffic as traffic_lib
from variable_mgr.benchmark import models

tf = _tf.compat.v1

OPTIMIZERS = ('sgd', 'momentum')
DEVICES = ('cpu', 'gpu')

_CONFIG_FIELDS = collections.OrderedDict([
    ('model', 'lenet'),
    ('variable_update', 'replicated'),
    ('num_gpus', 4),
    ('device', 'cpu'),
    ('local_parameter_device', 'cpu'),
    ('staged_vars', False),
    ('use_nccl', False),
    ('all_reduce_spec', None),
    ('gradient_repacking', 0),
    ('agg_small_grads_max_bytes', 0),
    ('agg_small_grads_max_group', 10),
    ('compact_gradient_transfer', False),
    ('measure_traffic', False),
    ('batch_size', None),
    ('num_batches', 30),
    ('num_warmup_batches', 5),
    ('display_every', 10),
    ('optimizer', 'sgd'),
    ('learning_rate', None),
    ('momentum', 0.9),
    ('weight_decay', None),
    ('seed', 1234),
    ('use_resource_vars', None),
    ('train_dir', None),
    ('summary_dir', None),
    ('trace_file', None),
])


class BenchmarkConfig(collections.namedtuple('BenchmarkConfig',
                                             list(_CONFIG_FIELDS))):
  """Everything one benchmark run needs; field names follow the CLI flags.

  `batch_size` is per tower; `batch_size`, `learning_rate` and
  `weight_decay` default to the model's values when None.
  `use_resource_vars`: True for resource variables, False for ref variables,
  None for TensorFlow's default (ref in TF 1.15, resource in TF 2).
  """

  __slots__ = ()

  def __new__(cls, **kwargs):
    unknown = set(kwargs) - set(_CONFIG_FIELDS)
    if unknown:
      raise TypeError('unknown benchmark options: %s' %
                      ', '.join(sorted(unknown)))
    values = dict(_CONFIG_FIELDS)
    values.update(kwargs)
    return super(BenchmarkConfig, cls).__new__(cls, **values)

  def resolved(self):
    """A copy with the model defaults filled in."""
    model = models.get_model(self.model)
    return self._replace(
        batch_size=self.batch_size or model.default_batch_size,
        learning_rate=(model.learning_rate if self.learning_rate is None
                       else self.learning_rate),
        weight_decay=(model.weight_decay if self.weight_decay is None
                      else self.weight_decay))


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


def make_optimizer(config):
  if config.optimizer == 'momentum':
    return tf.train.MomentumOptimizer(config.learning_rate, config.momentum)
  return tf.train.GradientDescentOptimizer(config.learning_rate)


def create_manager(config, host):
  """The manager `config` asks for, with every strategy option it sets."""
  import variable_mgr  # pylint: disable=g-import-not-at-top
  return variable_mgr.create(
      config.variable_update, host, staged_vars=config.staged_vars,
      use_nccl=config.use_nccl, all_reduce_spec=config.all_reduce_spec,
      gradient_repacking=config.gradient_repacking,
      agg_small_grads_max_bytes=config.agg_small_grads_max_bytes,
      agg_small_grads_max_group=config.agg_small_grads_max_group,
      float16_transfer=config.compact_gradient_transfer)


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
      loss = model.build(images, labels, is_training=True,
                         weight_decay=config.weight_decay)
      tower_updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)[first_update:]
      params = mgr.trainable_variables_on_device(d)
      writable = mgr.trainable_variables_on_device(d, writable=True)
      grads = tf.gradients(loss, params)
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
    optimizer = make_optimizer(config)
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


def perf_timing_str(batch_size, step_times):
  """tf_cnn_benchmarks' 'images/sec: mean +/- err (jitter = j)'."""
  times = np.array(step_times)
  speeds = batch_size / times
  mean = batch_size / np.mean(times)
  uncertainty = np.std(speeds) / np.sqrt(float(len(speeds)))
  jitter = 1.4826 * np.median(np.abs(speeds - np.median(speeds)))
  return 'images/sec: %.1f +/- %.1f (jitter = %.1f)' % (mean, uncertainty,
                                                        jitter)


def _write_trace(path, run_metadata):
  # The timeline module is TF's own Chrome-trace writer (TF 1.15 and 2.x).
  from tensorflow.python.client import timeline  # pylint: disable=g-import-not-at-top
  trace = timeline.Timeline(run_metadata.step_stats)
  directory = os.path.dirname(path)
  if directory:
    os.makedirs(directory, exist_ok=True)
  with open(path, 'w') as f:
    f.write(trace.generate_chrome_trace_format())


def _print_header(config, host, log):
  log('TensorFlow:  %s' % _tf.__version__)
  log('Model:       %s' % config.model)
  log('Mode:        training')
  log('Batch size:  %d global' % (config.batch_size * host.num_gpus))
  log('             %d per device' % config.batch_size)
  log('Num batches: %d' % config.num_batches)
  log('Devices:     %s' % list(host.raw_devices))
  log('Data format: NHWC')
  log('Optimizer:   %s' % config.optimizer)
  log('Variables:   %s%s%s' % (config.variable_update,
                               ' (staged)' if config.staged_vars else '',
                               ' (nccl)' if config.use_nccl else ''))
  log('==========')


def run_benchmark(config, host, session_target='', session_config=None,
                  log=print):
  """Builds the graph, trains, and returns the results.

  Args:
    config: a BenchmarkConfig (model defaults filled in here).
    host: the BenchmarkCnn-like object for the towers.
    session_target: '' for an in-process session, a server's target, or a
      function called once the graph is built that returns the target (to
      start servers only for a configuration the manager accepts).
    session_config: the ConfigProto of the session (virtual CPU count).
    log: called with each progress line.

  Returns:
    A dict: images_per_sec (None without timed batches), final_loss,
    losses (one per timed batch), global_step, restored_from, build_seconds,
    and the resolved config.

  Raises:
    VariableMgrError: the manager refuses the configuration.
  """
  config = config.resolved()
  start = time.time()
  # Built before anything is printed: a refused configuration prints only
  # its error.
  g = build_training_graph(config, host)
  build_seconds = time.time() - start
  _print_header(config, host, log)
  log('Generated model in %.2f s' % build_seconds)
  if callable(session_target):
    session_target = session_target()
  if config.measure_traffic:
    # Partition-graph names must be the built graph's: no rewriting.
    session_config = traffic_lib.meter_config(session_config)

  restored_from = None
  writer = None
  step_times, losses = [], []
  total_seconds = 0.0
  with tf.Session(target=session_target, graph=g.graph,
                  config=session_config) as sess:
    sess.run(g.init_op)
    if g.saver is not None:
      restored_from = checkpoint.restore(sess, config.train_dir, g.saved,
                                         g.saver)
      if restored_from:
        log('Restored %s' % restored_from)
    if g.post_init_op is not None:
      sess.run(g.post_init_op)
    fetches = {'train': g.train_op, 'loss': g.loss}
    if g.staging_put_op is not None:
      # Fill the staging areas once; every step then gets and puts once.
      sess.run(g.staging_put_op)
      fetches['staging'] = g.staging_put_op
    if g.summary_op is not None:
      fetches['summary'] = g.summary_op
      writer = tf.summary.FileWriter(config.summary_dir, g.graph)
    first_global_step = int(sess.run(g.global_step))
    # The traced step: the last warm-up batch, or the first timed one.
    trace_step = -1 if config.num_warmup_batches else 0

    if config.num_warmup_batches:
      log('Running warm up')
    global_batch = config.batch_size * host.num_gpus
    for step in range(-config.num_warmup_batches, config.num_batches):
      options = run_metadata = None
      if config.trace_file and step == trace_step:
        options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
        run_metadata = tf.RunMetadata()
      if step == 0:
        if config.num_warmup_batches:
          log('Done warm up')
        log('Step\tImg/sec\tloss')
        loop_start = time.time()
      step_start = time.time()
      out = sess.run(fetches, options=options, run_metadata=run_metadata)
      elapsed = time.time() - step_start
      if run_metadata is not None:
        _write_trace(config.trace_file, run_metadata)
      if writer is not None:
        writer.add_summary(out['summary'], first_global_step +
                           config.num_warmup_batches + step + 1)
      if step < 0:
        continue
      step_times.append(elapsed)
      losses.append(float(out['loss']))
      if step == 0 or (step + 1) % config.display_every == 0:
        log('%i\t%s\t%.3f' % (step + 1, perf_timing_str(global_batch,
                                                        step_times),
                              losses[-1]))
    if step_times:
      total_seconds = time.time() - loop_start
    traffic = None
    if config.measure_traffic:
      traffic = _measure_traffic(sess, fetches, g.gradient_bytes,
                                 host.num_gpus, log)
    global_step = int(sess.run(g.global_step))
    if g.saver is not None:
      os.makedirs(config.train_dir, exist_ok=True)
      path = g.saver.save(sess, os.path.join(config.train_dir, 'model.ckpt'),
                          global_step=global_step)
      log('Saved %s' % path)
  if writer is not None:
    writer.close()

  images_per_sec = report_throughput(global_batch, step_times, total_seconds,
                                     log)
  return collections.OrderedDict([
      ('images_per_sec', images_per_sec),
      ('final_loss', losses[-1] if losses else None),
      ('losses', losses),
      ('global_step', global_step),
      ('restored_from', restored_from),
      ('build_seconds', build_seconds),
      ('traffic', traffic),
      ('config', config._asdict()),
  ])


def _measure_traffic(sess, fetches, gradient_bytes, num_towers, log):
  """Runs one more step with partition graphs and reports the bytes each
  device sent and received, beside the ring all-reduce lower bound."""
  counts = traffic_lib.measure(sess, fetches)
  bound = traffic_lib.ring_lower_bound(num_towers, gradient_bytes)
  busiest = traffic_lib.busiest(counts)
  log('Traffic of one step (bytes sent / received per device):')
  for device in sorted(counts):
    log('  %s\t%d / %d' % (device, counts[device].sent_bytes,
                            counts[device].received_bytes))
  ratio = busiest / bound if bound else float('nan')
  log('busiest device: %d bytes; ring lower bound 2(k-1)/k x %d = %d '
      '(%.2fx)' % (busiest, gradient_bytes, bound, ratio))
  return collections.OrderedDict([
      ('per_device', dict((d, c._asdict()) for d, c in counts.items())),
      ('busiest_bytes', busiest),
      ('ring_lower_bound_bytes', bound),
      ('gradient_bytes', gradient_bytes),
  ])


def report_throughput(global_batch, step_times, total_seconds, log):
  """Logs tf_cnn_benchmarks' closing `total images/sec` lines; returns
  that figure (None without timed steps)."""
  if not step_times:
    return None
  images_per_sec = global_batch * len(step_times) / total_seconds
  log('-' * 64)
  log('total images/sec: %.2f' % images_per_sec)
  log('-' * 64)
  return images_per_sec


def write_json(path, results):
  directory = os.path.dirname(path)
  if directory:
    os.makedirs(directory, exist_ok=True)
  with open(path, 'w') as f:
    json.dump(results, f, indent=2)
    f.write('\n')
