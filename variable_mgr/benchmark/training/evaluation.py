"""Evaluation: top-1 and top-5 accuracy of a checkpoint over the eval split.

`--eval` restores the latest checkpoint of `--train_dir` and runs the
forward pass (`is_training=False`: batch norm uses its moving statistics)
over the whole validation split of `--data_name` (or its first
`--num_eval_batches` steps), then prints tf_cnn_benchmarks' line::

    Accuracy @ 1 = 0.9123 Accuracy @ 5 = 0.9987 [300 examples]

Checkpoints are canonical (`variable_mgr.checkpoint`), so the evaluation
graph is built under the `--variable_update` given, whichever strategy
wrote the checkpoint: its towers are the manager's, each tower's share of
one step's images read through the manager's scopes. Two strategies are
evaluated under replicated, which keeps the same tower copies on one
machine (the run says so): collective_all_reduce, which runs across a
cluster only (the command refuses it without one, so evaluate its
checkpoint with any one-machine strategy; called directly, `eval_config`
makes the swap), and distributed_replicated, whose PS masters exist only
beside the gradients' apply ops (see EVAL_STRATEGY).

Under independent, whose towers train copies of their own, the checkpoint
holds tower 0's copy (`get_variables_to_save`), and every tower evaluates
it.

Every image of the split is counted once: a step reads `batch_size x
towers` images; the last, smaller step is padded to that size with
zero images whose weight is 0, so they count neither as images nor as
hits. A label counts as top-k when fewer than k classes have a larger
logit (`tf.nn.in_top_k`: a tie at the k-th place counts in).

`--eval_during_training_every_n_steps` (local runs) evaluates the training
variables the same way: the run writes them into a checkpoint of its own
(in a temporary directory) and an `Evaluator`, built once, restores it.
That evaluator uses the run's strategy, without staging areas (a staging
area warmed up again at every restore would yield the previous restore's
values first).
"""

import collections
import time

from variable_mgr import checkpoint
from variable_mgr import errors
from variable_mgr.benchmark.data import datasets
from variable_mgr.benchmark.training import harness
from variable_mgr.compat import tf

# Strategy -> the strategy its checkpoints are evaluated with:
# collective_all_reduce runs across a cluster only; distributed_replicated
# makes its PS masters with the apply ops of the gradients, so a graph
# without gradients has only the towers' local copies, of which the
# post-init ops would fill none but tower 0's from the checkpoint.
# replicated keeps the same tower copies on one machine.
EVAL_STRATEGY = {'collective_all_reduce': 'replicated',
                 'distributed_replicated': 'replicated'}

EvalResult = collections.namedtuple('EvalResult', [
    'top_1', 'top_5', 'examples', 'batches', 'global_step', 'checkpoint',
    'seconds'])


class NoCheckpointError(errors.VariableMgrError):
  """--eval with a --train_dir that holds no checkpoint."""


def latest_checkpoint(train_dir):
  """The latest checkpoint prefix of `train_dir`, checked to exist.

  Raises:
    NoCheckpointError: `train_dir` has no checkpoint (no `checkpoint`
      file, or the directory is missing).
    CheckpointMissingError: the `checkpoint` file names missing files.
  """
  prefix = checkpoint.latest_checkpoint(train_dir)
  if prefix is None:
    raise NoCheckpointError(
        '--eval --train_dir=%s: the directory holds no checkpoint (no '
        '`checkpoint` file); train into it first (the same command without '
        '--eval), or pass the --train_dir a training run saved into'
        % train_dir)
  return prefix


def eval_config(config, during_training=False, log=None):
  """The configuration an evaluation graph is built with: `config` with
  the training-only options off (backward passes, relaxed consistency,
  forward-only, training accuracy, the dynamic loss scale), the strategy of
  EVAL_STRATEGY in place of collective_all_reduce and
  distributed_replicated, and, `during_training`, no staging areas (see
  the module docstring).
  `log` is told of a strategy put in place of another."""
  update = EVAL_STRATEGY.get(config.variable_update, config.variable_update)
  staged = config.staged_vars and not during_training
  if update != config.variable_update and log is not None:
    log('Evaluating with --variable_update=%s in place of %s (checkpoints '
        'restore under any strategy)' % (update, config.variable_update))
  return config._replace(
      variable_update=update, staged_vars=staged, backward_passes_per_step=1,
      variable_consistency='strong', forward_only=False,
      print_training_accuracy=False, fp16_enable_auto_loss_scale=False,
      eval=True)


class Evaluator(object):
  """The evaluation graph of a config and the session it runs in.

  Args:
    config: a BenchmarkConfig with `data_name` (resolved here).
    host: the BenchmarkCnn-like host of the towers; its `devices` is set.
    session_target: as `local_run.run_benchmark`'s (a callable is called
      once the graph is built).
    session_config: the session's ConfigProto.

  Raises:
    VariableMgrError: the manager refuses the configuration, or the data
      set is missing (before any op is built).
  """

  def __init__(self, config, host, session_target='', session_config=None):
    config = config.resolved()
    self.config = config
    model = harness.model_of(config)
    data = harness.check_data_config(config)
    if data is None:
      raise datasets.DataError(
          '--eval needs real data: pass --data_name (digits needs no '
          'download); synthetic labels are random')
    self.global_batch = config.batch_size * host.num_gpus
    self.graph = tf.Graph()
    with self.graph.as_default(), tf.variable_scope(
        tf.get_variable_scope(), use_resource=config.use_resource_vars):
      tf.set_random_seed(config.seed)
      mgr = harness.create_manager(config, host)
      host.devices = mgr.get_devices()
      with tf.device(host.cpu_device):
        global_step = tf.train.get_or_create_global_step()
      pipeline = datasets.InputPipeline(
          data, 'validation', self.global_batch, 1, model.image_shape,
          train=False, device=host.cpu_device, drop_remainder=False)
      with tf.device(host.cpu_device), tf.name_scope('eval_input'):
        self._iterator = tf.data.make_initializable_iterator(
            pipeline.dataset())
        images, labels = self._iterator.get_next()
        count = tf.shape(labels)[0]
        pad = self.global_batch - count
        images = tf.pad(images, [[0, pad], [0, 0], [0, 0], [0, 0]])
        labels = tf.pad(labels, [[0, pad]])
        weights = tf.cast(tf.range(self.global_batch) < count, tf.float32)
        images.set_shape([self.global_batch] + list(model.image_shape))
        labels.set_shape([self.global_batch])
        splits = list(zip(tf.split(images, host.num_gpus),
                          tf.split(labels, host.num_gpus),
                          tf.split(weights, host.num_gpus)))
      hits = []
      for d in range(host.num_gpus):
        with mgr.create_outer_variable_scope(d), \
             tf.name_scope('tower_%i' % d), tf.device(host.devices[d]):
          tower_images, tower_labels, tower_weights = splits[d]
          _, logits = harness.build_model(config, model, tower_images,
                                          tower_labels, is_training=False,
                                          return_logits=True)
          hits.append((
              harness.top_k_correct(logits, tower_labels, 1, tower_weights),
              harness.top_k_correct(logits, tower_labels, 5, tower_weights)))
      staging_puts = []
      if mgr.supports_staged_vars():
        for tower in mgr.staging_vars_on_devices:
          staging_puts.extend(put for put, _ in tower.values())
      with tf.device(host.cpu_device):
        self._fetches = {
            'top_1': tf.add_n([h[0] for h in hits]),
            'top_5': tf.add_n([h[1] for h in hits]),
            'count': count}
        self._staging_put = tf.group(*staging_puts) if staging_puts else None
        if self._staging_put is not None:
          self._fetches['staging'] = self._staging_put
        self._init = tf.group(tf.global_variables_initializer(),
                              tf.local_variables_initializer())
        post_init = mgr.get_post_init_ops()
        self._post_init = tf.group(*post_init) if post_init else None
        self._to_restore = dict(mgr.get_variables_to_save())
        if not any(v is global_step for v in self._to_restore.values()):
          self._to_restore['global_step'] = global_step
        self._saver = tf.train.Saver(self._to_restore)
        self._global_step = global_step
      self.graph.finalize()
    if callable(session_target):
      session_target = session_target()
    self._session = tf.Session(target=session_target, graph=self.graph,
                               config=session_config)
    self._session.run(self._init)

  def evaluate(self, prefix, num_batches=None):
    """Restores the checkpoint `prefix` and evaluates it over the
    validation split (its first `num_batches` steps when given).

    Returns:
      EvalResult: top-1 and top-5 fractions, the examples and steps
      counted, the checkpoint's global step, the prefix, the seconds taken.
    """
    with self.graph.as_default():
      return self._evaluate(prefix, num_batches)

  def _evaluate(self, prefix, num_batches):
    sess = self._session
    start = time.time()
    checkpoint.restore(sess, prefix, self._to_restore, self._saver)
    if self._post_init is not None:
      sess.run(self._post_init)
    if self._staging_put is not None:
      sess.run(self._staging_put)
    global_step = int(sess.run(self._global_step))
    sess.run(self._iterator.initializer)
    top_1 = top_5 = 0.0
    examples = batches = 0
    while num_batches is None or batches < num_batches:
      try:
        out = sess.run(self._fetches)
      except tf.errors.OutOfRangeError:
        break
      top_1 += float(out['top_1'])
      top_5 += float(out['top_5'])
      examples += int(out['count'])
      batches += 1
    if not examples:
      raise datasets.DataError(
          '%s has no validation example to evaluate' % self.config.data_name)
    return EvalResult(top_1 / examples, top_5 / examples, examples, batches,
                      global_step, prefix, time.time() - start)

  def close(self):
    self._session.close()
