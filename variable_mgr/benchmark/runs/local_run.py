"""One local run: a host for the config, a session, the timed steps.

`run(args)` is the command without cluster flags or `--compare`; `run_one`
runs one BenchmarkConfig and returns its results (the sweep calls it for
every configuration); with `--eval` both evaluate the latest checkpoint
instead (`evaluation`).

Session and checkpoint options: `--num_intra_threads` and
`--num_inter_threads` go into the session's ConfigProto (None and 0:
TensorFlow's choice). With `--train_dir` the run restores the latest
checkpoint and times the batches left to `--num_batches`, counted from
global step 0 as tf_cnn_benchmarks counts them (`batch_target`); it saves
at the end and,
with `--save_model_secs`, also after the first step that ends at least
that many seconds after the last save (or the start), with
`--save_model_steps` N after every N-th timed step of this run (warm-up
steps not counted, as tf_cnn_benchmarks counts its local step); the Saver
keeps the last `--max_ckpts_to_keep`. Ctrl-C or SIGTERM save the step
reached (`interrupted`). With `--summary_dir` the summaries of
`--summary_verbosity` (see `harness`) are written after every
`--save_summaries_steps`-th step (0: every step). With
`--eval_during_training_every_n_steps N` the training variables are
evaluated after every N-th step (warm-up steps count: they train) and the
accuracy line printed with the global step; the evaluation's time is left
out of the images/sec.
"""

import collections
import os
import shutil
import tempfile
import time

import variable_mgr
from variable_mgr import checkpoint
from variable_mgr.allreduce import traffic as traffic_lib
from variable_mgr.benchmark.flags import as_typed
from variable_mgr.benchmark.reports import output
from variable_mgr.benchmark.runs import in_process
from variable_mgr.benchmark.runs import interrupted
from variable_mgr.benchmark.runs import train_dir_lock
from variable_mgr.benchmark.training import batch_target
from variable_mgr.benchmark.training import evaluation
from variable_mgr.benchmark.training import harness
from variable_mgr.benchmark.training import memory_estimate
from variable_mgr.benchmark.training import run_config
from variable_mgr.compat import tf


# The clock of --save_model_secs (tests replace it).
_clock = time.monotonic

# What the summaries of each --summary_verbosity hold.
_SUMMARIES = ('the loss', 'the loss and learning rate',
              'the loss, learning rate and gradient norms',
              'the loss, learning rate, gradient norms and variable '
              'histograms')


def run(args, log=print):
  """Runs the parsed flags' configuration; writes `--output`; returns 0.

  A training run with `--train_dir` holds the directory's lock
  (`train_dir_lock`) from before its graph is built to its end.
  """
  lock = None
  if args.train_dir and not args.eval:
    lock = train_dir_lock.acquire(args.train_dir,
                                  as_typed.given(args, 'train_dir'), log)
  try:
    config = run_config.from_args(args)
    if not args.eval:
      # Before any graph: data the towers cannot read, then a run that
      # would not fit in memory (its estimate builds the model in a
      # scratch graph).
      resolved = config.resolved()
      harness.check_data_config(resolved)
      memory_estimate.check(resolved, resolved.num_gpus, args)
    results = run_one(config, log)
  except interrupted.INTERRUPTIONS as e:
    # Stopped before its steps (building the graph, restoring): nothing
    # this run trained was saved; else `interrupted.session` said.
    interrupted.note_unsaved(e, args.train_dir)
    raise
  finally:
    if lock is not None:
      lock.release()
  if args.output:
    output.write_json(args.output, results, log)
  return 0


def make_host(config):
  """The BenchmarkCnn-like host, session target and session config.

  distributed_replicated gets a one-machine cluster (one PS task, one
  worker task); every other strategy a local host.

  Raises:
    VariableMgrError: a bad tower count or device name.
  """
  if config.variable_update == 'distributed_replicated':
    host = in_process.LocalClusterHost(config.num_gpus, config.device,
                                       config.local_parameter_device)
    return host, host.session_config()
  host = variable_mgr.LocalBenchmarkCnn(config.num_gpus, config.device,
                                        config.local_parameter_device)
  if config.device == 'cpu':
    # No GPU device either: TensorFlow then does not initialise CUDA, whose
    # failure on a machine without a driver it logs as an error line.
    return host, tf.ConfigProto(device_count={'CPU': config.num_gpus,
                                              'GPU': 0})
  return host, tf.ConfigProto(device_count={'CPU': 1})


def with_threads(session_config, config):
  """`session_config` with `--num_intra_threads` and `--num_inter_threads`
  (each left as it is when None or 0: TensorFlow's choice)."""
  if config.num_intra_threads:
    session_config.intra_op_parallelism_threads = config.num_intra_threads
  if config.num_inter_threads:
    session_config.inter_op_parallelism_threads = config.num_inter_threads
  return session_config


def run_one(config, log=print):
  """Runs one configuration; returns the results dict of run_benchmark
  (of `_run_eval` with `--eval`)."""
  if config.eval:
    # Refused before any graph: no checkpoint to evaluate.
    evaluation.latest_checkpoint(config.train_dir)
    config = evaluation.eval_config(config, log=log)
  host, session_config = make_host(config)
  session_config = with_threads(session_config, config)
  # Servers start once the graph is built: a refused configuration starts
  # none.
  target = getattr(host, 'start', '')
  if config.eval:
    return _run_eval(config, host, session_target=target,
                     session_config=session_config, log=log)
  return run_benchmark(config, host, session_target=target,
                       session_config=session_config, log=log)


def _run_eval(config, host, session_target='', session_config=None,
             log=print):
  """`--eval`: evaluates the latest checkpoint of `config.train_dir`.

  Args:
    config: an `eval_config`, with `host` made for it.

  Returns:
    The results dict: top_1_accuracy, top_5_accuracy, eval_examples,
    eval_batches, global_step, checkpoint, eval_seconds,
    images_per_sec (of the evaluation), config.

  Raises:
    NoCheckpointError: `--train_dir` holds no checkpoint (before any
      graph is built).
    VariableMgrError: a configuration the manager refuses, or a checkpoint
      of another model.
  """
  prefix = evaluation.latest_checkpoint(config.train_dir)
  config = config.resolved()
  evaluator = evaluation.Evaluator(config, host, session_target,
                                   session_config)
  try:
    output.print_header(evaluator.config, host, log)
    log('Evaluating %s' % prefix)
    result = evaluator.evaluate(prefix, config.num_eval_batches)
  finally:
    evaluator.close()
  log(output.accuracy_line(result.top_1, result.top_5, result.examples))
  images_per_sec = result.examples / result.seconds if result.seconds else None
  return collections.OrderedDict([
      ('top_1_accuracy', result.top_1),
      ('top_5_accuracy', result.top_5),
      ('eval_examples', result.examples),
      ('eval_batches', result.batches),
      ('global_step', result.global_step),
      ('checkpoint', result.checkpoint),
      ('eval_seconds', result.seconds),
      ('images_per_sec', images_per_sec),
      ('config', config._asdict()),
  ])


class _TrainingEvaluator(object):
  """--eval_during_training_every_n_steps: writes the training variables
  into a checkpoint of its own and evaluates it (see `evaluation`)."""

  def __init__(self, config, log):
    eval_config = evaluation.eval_config(config, during_training=True,
                                         log=log)
    host, session_config = make_host(eval_config)
    self._evaluator = evaluation.Evaluator(
        eval_config, host, session_config=with_threads(session_config,
                                                       eval_config))
    self._dir = tempfile.mkdtemp(prefix='eval_during_training_')
    self._num_batches = config.num_eval_batches
    self.results = []

  def evaluate(self, sess, saver, log):
    prefix = saver.save(sess, os.path.join(self._dir, 'model.ckpt'),
                        write_meta_graph=False, write_state=False)
    result = self._evaluator.evaluate(prefix, self._num_batches)
    log(output.accuracy_line(result.top_1, result.top_5, result.examples,
                             step=result.global_step))
    self.results.append(collections.OrderedDict([
        ('global_step', result.global_step),
        ('top_1_accuracy', result.top_1),
        ('top_5_accuracy', result.top_5),
        ('eval_examples', result.examples)]))
    return result.seconds

  def close(self):
    self._evaluator.close()
    shutil.rmtree(self._dir, ignore_errors=True)


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
    evaluations (with --eval_during_training_every_n_steps: a dict per
    evaluation, with its global_step, top_1_accuracy, top_5_accuracy and
    eval_examples; else None), and the resolved config.

  Raises:
    VariableMgrError: the manager refuses the configuration.
  """
  config = config.resolved()
  # Before any graph: a checkpoint that leaves no batch to train.
  batch_target.check_restored(config)
  start = time.time()
  # Built before anything is printed: a refused configuration prints only
  # its error.
  g = harness.build_training_graph(config, host)
  build_seconds = time.time() - start
  output.print_header(config, host, log)
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
  accuracy = g.top_1 is not None
  trainer_eval = None
  every_eval = config.eval_during_training_every_n_steps
  if every_eval:
    trainer_eval = _TrainingEvaluator(config, log)
  eval_seconds = 0.0
  saved_steps = []
  summaries_written = 0
  progress = interrupted.Progress()
  try:
    with interrupted.session(
        tf.Session(target=session_target, graph=g.graph,
                   config=session_config), progress,
        None if g.saver is None else
        lambda sess: _save(sess, g, config.train_dir, log),
        config.train_dir) as sess:
      sess.run(g.init_op)
      if g.saver is not None:
        restored_from = checkpoint.restore(sess, config.train_dir, g.saved,
                                           g.saver)
        if restored_from:
          log('Restored %s' % restored_from)
      if g.post_init_op is not None:
        sess.run(g.post_init_op)
      fetches = {'train': g.train_op, 'loss': g.loss}
      if accuracy:
        fetches['top_1'] = g.top_1
        fetches['top_5'] = g.top_5
      if g.staging_put_op is not None:
        # Fill the staging areas once; every step then gets and puts once.
        sess.run(g.staging_put_op)
        fetches['staging'] = g.staging_put_op
      summary_fetches = None
      if g.summary_op is not None:
        summary_fetches = dict(fetches, summary=g.summary_op)
        writer = tf.summary.FileWriter(config.summary_dir, g.graph)
      summary_every = config.save_summaries_steps or 1
      first_global_step = int(sess.run(g.global_step))
      # tf_cnn_benchmarks counts --num_batches from global step 0.
      num_batches = batch_target.batches_left(
          config.num_batches, first_global_step, train_dir=config.train_dir,
          num_warmup_batches=config.num_warmup_batches)
      if num_batches != config.num_batches:
        log(batch_target.resume_line(config.num_batches, first_global_step,
                                     num_batches, config.num_warmup_batches))
      # The traced step: the last warm-up batch, or the first timed one.
      trace_step = -1 if config.num_warmup_batches else 0
      last_save = _clock()

      # Restored and initialised: from here an interruption saves, once
      # the step in progress has ended.
      progress.start()
      if config.num_warmup_batches:
        log('Running warm up')
      global_batch = config.batch_size * host.num_gpus
      for step in range(-config.num_warmup_batches, num_batches):
        progress.check()
        # Steps this run has taken after this one (warm-up steps count).
        steps_run = config.num_warmup_batches + step + 1
        options = run_metadata = None
        if config.trace_file and step == trace_step:
          options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
          run_metadata = tf.RunMetadata()
        if step == 0:
          if config.num_warmup_batches:
            log('Done warm up')
          log(output.step_header(accuracy))
          loop_start = time.time()
          eval_seconds = 0.0
        step_fetches = fetches
        if summary_fetches is not None and steps_run % summary_every == 0:
          step_fetches = summary_fetches
        step_start = time.time()
        out = sess.run(step_fetches, options=options,
                       run_metadata=run_metadata)
        elapsed = time.time() - step_start
        if run_metadata is not None:
          _write_trace(config.trace_file, run_metadata)
          log('Wrote a Chrome trace of %s to %s' % (
              'the last warm-up step' if step < 0 else 'timed step 1',
              config.trace_file))
        if 'summary' in out:
          writer.add_summary(out['summary'], first_global_step + steps_run)
          summaries_written += 1
        if step >= 0:
          output.record_step(
              step, elapsed, out['loss'], step_times, losses, global_batch,
              config.display_every, log,
              (float(out['top_1']), float(out['top_5'])) if accuracy
              else None)
        if trainer_eval is not None and steps_run % every_eval == 0:
          eval_start = time.time()
          trainer_eval.evaluate(sess, g.eval_saver, log)
          eval_seconds += time.time() - eval_start
        if g.saver is not None and (
            (config.save_model_secs and
             _clock() - last_save >= config.save_model_secs) or
            (config.save_model_steps and step >= 0 and
             (step + 1) % config.save_model_steps == 0)):
          saved_steps.append(_save(sess, g, config.train_dir, log))
          last_save = _clock()
      progress.check()
      if step_times:
        total_seconds = time.time() - loop_start - eval_seconds
      traffic = None
      if config.measure_traffic:
        traffic = _measure_traffic(sess, fetches, g.gradient_bytes,
                                   host.num_gpus, log,
                                   _uncounted_transfers(config))
      global_step = int(sess.run(g.global_step))
      if g.saver is not None and global_step not in saved_steps:
        _save(sess, g, config.train_dir, log)
  finally:
    if trainer_eval is not None:
      trainer_eval.close()
  if writer is not None:
    writer.close()
    log('Wrote TensorBoard summaries of %s (%d steps) to %s' % (
        _SUMMARIES[min(config.summary_verbosity, 3)], summaries_written,
        config.summary_dir))

  images_per_sec = output.report_throughput(global_batch, step_times,
                                            total_seconds, log)
  return collections.OrderedDict([
      ('images_per_sec', images_per_sec),
      ('final_loss', losses[-1] if losses else None),
      ('losses', losses),
      ('step_seconds', step_times),
      ('global_step', global_step),
      ('restored_from', restored_from),
      ('build_seconds', build_seconds),
      ('traffic', traffic),
      ('evaluations', trainer_eval.results if trainer_eval else None),
      ('config', config._asdict()),
  ])


def _save(sess, g, train_dir, log):
  """Saves a checkpoint of the global step into `train_dir`; returns the
  step."""
  global_step = int(sess.run(g.global_step))
  os.makedirs(train_dir, exist_ok=True)
  path = g.saver.save(sess, os.path.join(train_dir, 'model.ckpt'),
                      global_step=global_step)
  log('Saved %s' % path)
  return global_step


def _uncounted_transfers(config):
  """What moves gradients inside ops, out of the meter's sight (see
  `variable_mgr.allreduce.traffic`): 'NCCL', 'collective ops' or None."""
  names = set()
  if config.all_reduce_spec:
    from variable_mgr.allreduce import spec as spec_lib  # pylint: disable=g-import-not-at-top
    for spec_range in spec_lib.parse_spec(config.all_reduce_spec):
      names.update(stage.name for stage in spec_range.stages)
  if config.use_nccl or 'nccl' in names:
    return 'NCCL'
  if 'collective' in names:
    return 'collective ops'
  return None


def _measure_traffic(sess, fetches, gradient_bytes, num_towers, log,
                     uncounted=None):
  """Runs one more step with partition graphs and reports the bytes each
  device sent and received, beside the ring all-reduce lower bound.

  Args:
    uncounted: what moves gradients unseen by the meter ('NCCL',
      'collective ops'), or None: then no ratio to the bound is given.
  """
  counts = traffic_lib.measure(sess, fetches)
  bound = traffic_lib.ring_lower_bound(num_towers, gradient_bytes)
  busiest = traffic_lib.busiest(counts)
  log('Traffic of one step (bytes sent / received per device, counted from '
      'the sends between devices):')
  for device in sorted(counts):
    log('  %s\t%d / %d' % (device, counts[device].sent_bytes,
                            counts[device].received_bytes))
  line = ('busiest device: %d bytes; ring lower bound 2(k-1)/k x %d = %d'
          % (busiest, gradient_bytes, bound))
  ratio = None
  if uncounted:
    line += ('; no ratio: the all-reduce moves its data inside %s, which '
             'the meter does not count' % uncounted)
  elif not bound:
    line += ('; no ratio: one tower has nothing to all-reduce' if
             num_towers == 1 else '; no ratio: no gradient bytes')
  else:
    ratio = busiest / bound
    line += ' (%.2fx)' % ratio
  log(line)
  return collections.OrderedDict([
      ('per_device', dict((d, c._asdict()) for d, c in counts.items())),
      ('busiest_bytes', busiest),
      ('ring_lower_bound_bytes', bound),
      ('gradient_bytes', gradient_bytes),
      ('ratio_to_bound', ratio),
      ('uncounted', uncounted),
  ])


def _write_trace(path, run_metadata):
  # The timeline module is TF's own Chrome-trace writer (TF 1.15 and 2.x).
  from tensorflow.python.client import timeline  # pylint: disable=g-import-not-at-top
  trace = timeline.Timeline(run_metadata.step_stats)
  # Its directory exists: the flags checked it before the run.
  with open(path, 'w') as f:
    f.write(trace.generate_chrome_trace_format())
