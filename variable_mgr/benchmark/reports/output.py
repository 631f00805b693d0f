"""What a benchmark run prints and writes: tf_cnn_benchmarks' header, step
lines and closing total, and the results as JSON."""

import json
import os

import numpy as np


def print_header(config, host, log):
  """tf_cnn_benchmarks' opening lines for a resolved config and its host."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  log('TensorFlow:  %s' % tf.__version__)
  log('Model:       %s' % config.model)
  log('Mode:        %s' % mode_of(config))
  # As tf_cnn_benchmarks: the global batch is the whole cluster's, every
  # worker's towers.
  num_workers = getattr(host, 'num_workers', 1)
  per_worker = config.batch_size * host.num_gpus
  log('Batch size:  %d global' % (per_worker * num_workers))
  if num_workers > 1:
    log('             %d per worker (%d workers)' % (per_worker,
                                                     num_workers))
  log('             %d per device' % config.batch_size)
  if config.eval:
    log('Num batches: %s' % (
        '%d (at most: the validation split is read once)' %
        config.num_eval_batches if config.num_eval_batches else
        'the whole validation split'))
  else:
    log('Num batches: %d' % config.num_batches)
  log('Devices:     %s%s' % (list(host.raw_devices), (
      ' (--device=gpu: no GPU found, running on the CPU)'
      if getattr(config, 'device_fallback', False) else '')))
  if getattr(config, 'device_fallback', False) and host.num_gpus > 1:
    log('--device=gpu found no GPU: the %d towers are %d virtual CPU devices '
        'sharing this machine\'s %d processors and its memory (pass '
        '--device=cpu to say so, or fewer --num_gpus)' % (
            host.num_gpus, host.num_gpus, os.cpu_count() or 1))
  log('Data format: NHWC')
  log('Dataset:     %s' % dataset_line(config))
  if config.eval:
    # Training-only lines are left out: the optimizer, the strategy and the
    # training options the checkpoint was trained under are not recorded in
    # it, and the evaluation graph's own (one forward pass a tower, its
    # variables restored by canonical name) would read as if they were.
    log('Variables:   restored from --train_dir=%s (any strategy\'s '
        'checkpoint; the evaluation runs forward passes only)'
        % config.train_dir)
    log('==========')
    return
  from variable_mgr.benchmark.training import optimizers  # pylint: disable=g-import-not-at-top
  # The optimizer and its learning rate (the schedule's steps at this
  # global batch).
  log('Optimizer:   %s' % optimizers.describe(config,
                                              per_worker * num_workers))
  log('Variables:   %s%s%s' % (config.variable_update,
                               ' (staged)' if config.staged_vars else '',
                               ' (nccl)' if config.use_nccl else ''))
  log(training_options_line(config))
  log('==========')


def mode_of(config):
  """tf_cnn_benchmarks' mode names: training, evaluation, forward-only,
  training + evaluation (every --eval_during_training_every_n_steps)."""
  if config.eval:
    return 'evaluation'
  if config.forward_only:
    return 'forward-only'
  if config.eval_during_training_every_n_steps:
    return 'training + evaluation every %d steps' % (
        config.eval_during_training_every_n_steps)
  return 'training'


def dataset_line(config):
  """The header's Dataset line: 'synthetic (imagenet's shapes)',
  'digits (train split)', 'cifar10 (validation split in /data/cifar,
  ...)' (--eval), with ', distortions' when training with them."""
  if config.synthetic:
    return 'synthetic (%s\'s shapes)' % (config.data_name or 'small')
  subset = 'validation' if config.eval else 'train'
  where = '' if not config.data_dir else ' in %s' % config.data_dir
  return '%s (%s split%s%s)' % (
      config.data_name, subset, where,
      ', distortions' if config.distortions and not config.eval else '')


STEP_HEADER = 'Step\tImg/sec\tloss'
ACCURACY_HEADER = '\ttop_1_accuracy\ttop_5_accuracy'


def step_header(accuracy=False):
  """tf_cnn_benchmarks' header of the step lines; `accuracy` adds its
  top_1_accuracy and top_5_accuracy columns."""
  return STEP_HEADER + (ACCURACY_HEADER if accuracy else '')


def accuracy_line(top_1, top_5, count, step=None):
  """tf_cnn_benchmarks' evaluation line, 'Accuracy @ 1 = 0.9123 Accuracy @
  5 = 0.9987 [300 examples]', after 'Step 20: ' when `step` is given."""
  line = 'Accuracy @ 1 = %.4f Accuracy @ 5 = %.4f [%d examples]' % (
      top_1, top_5, count)
  return line if step is None else 'Step %d: %s' % (step, line)


def training_options_line(config):
  """The header line that says which training options are on (the
  `Training options:` line of `print_header`), e.g.
  'Training options: use_fp16 (loss scale 128, dynamic, doubles after 1000
  good steps), backward_passes_per_step=4, variable_consistency=relaxed';
  'Training options: none' when none is."""
  parts = []
  if config.use_fp16:
    scale = 128 if config.fp16_loss_scale is None else config.fp16_loss_scale
    if config.fp16_enable_auto_loss_scale:
      parts.append('use_fp16 (loss scale %g, dynamic, doubles after %d good '
                   'steps)' % (scale, config.fp16_inc_loss_scale_every_n))
    else:
      parts.append('use_fp16 (loss scale %g, fixed)' % scale)
  if config.backward_passes_per_step > 1:
    parts.append('backward_passes_per_step=%d' %
                 config.backward_passes_per_step)
  if config.variable_consistency != 'strong':
    parts.append('variable_consistency=%s' % config.variable_consistency)
  return 'Training options: %s' % (', '.join(parts) or 'none')


def perf_timing_str(batch_size, step_times):
  """tf_cnn_benchmarks' 'images/sec: mean +/- err (jitter = j)'."""
  times = np.array(step_times)
  speeds = batch_size / times
  mean = batch_size / np.mean(times)
  uncertainty = np.std(speeds) / np.sqrt(float(len(speeds)))
  jitter = 1.4826 * np.median(np.abs(speeds - np.median(speeds)))
  return 'images/sec: %.1f +/- %.1f (jitter = %.1f)' % (mean, uncertainty,
                                                        jitter)


def record_step(step, elapsed, loss, step_times, losses, global_batch,
                display_every, log, accuracy=None):
  """Keeps timed step `step` (0-based) of `elapsed` seconds and its loss,
  and prints tf_cnn_benchmarks' progress line for the first step and every
  `display_every`-th; `accuracy`, the batch's (top_1, top_5) fractions,
  adds its two columns (three decimals, as tf_cnn_benchmarks)."""
  step_times.append(elapsed)
  losses.append(float(loss))
  if step == 0 or (step + 1) % display_every == 0:
    line = '%i\t%s\t%.3f' % (step + 1, perf_timing_str(global_batch,
                                                       step_times), losses[-1])
    if accuracy is not None:
      line += '\t%.3f\t%.3f' % (accuracy[0], accuracy[1])
    log(line)


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


def write_json(path, results, log=None):
  """Writes `results` as JSON to `path` (its directory exists: the flags
  checked it); `log`, when given, is told where."""
  with open(path, 'w') as f:
    json.dump(results, f, indent=2)
    f.write('\n')
  if log is not None:
    log('Wrote the results (JSON) to %s' % path)
