"""The convergence benchmark's commands: the benchmark's flags that train
and evaluate a cell, each run in a process of its own, and the figures read
from their --output JSON."""

import json
import os
import re
import shutil
import subprocess
import sys
import time

from .cells import DATA_NAME
from .cells import EVAL_IMAGES
from .cells import GLOBAL_BATCH
from .cells import LEARNING_RATE
from .cells import LOSS_STEPS
from .cells import MODEL
from .cells import NUM_PS
from .cells import describe
from .cells import examples_seen
from .cells import plan_cells

# The project's root: the benchmark runs there, its package on the path.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def train_args(cell, steps, train_dir, output):
  """The benchmark's flags that train `cell` into `train_dir`."""
  args = ['--model=%s' % MODEL, '--data_name=%s' % DATA_NAME,
          '--num_gpus=%d' % cell.towers, '--device=cpu',
          '--batch_size=%d' % cell.batch_per_tower,
          '--num_batches=%d' % steps, '--num_warmup_batches=0',
          '--display_every=%d' % max(steps // 4, 1), '--optimizer=sgd',
          '--init_learning_rate=%g' % LEARNING_RATE,
          '--tf_random_seed=%d' % cell.seed,
          '--train_dir=%s' % train_dir, '--output=%s' % output] + cell.flags
  if cell.cluster:
    args += ['--launch_local_cluster', '--num_workers=%d' % cell.workers,
             '--num_ps=%d' % NUM_PS]
  return args


def eval_args(cell, train_dir, output):
  """The benchmark's flags that evaluate `train_dir`'s latest checkpoint."""
  return ['--eval', '--model=%s' % MODEL, '--data_name=%s' % DATA_NAME,
          '--num_gpus=1', '--device=cpu', '--batch_size=%d' % EVAL_BATCH,
          '--tf_random_seed=%d' % cell.seed, '--train_dir=%s' % train_dir,
          '--output=%s' % output] + eval_strategy_flags(cell)


# The eval split in whole batches: 300 = 3 x 100.
EVAL_BATCH = 100


def eval_strategy_flags(cell):
  """The strategy the evaluation builds to restore `cell`'s checkpoint:
  its own, but on one machine (collective_all_reduce runs on a cluster
  only, and its checkpoint holds plain variable names: replicated's)."""
  if cell.label == 'collective_all_reduce':
    return ['--variable_update=replicated']
  return [f for f in cell.flags if not f.startswith('--cross_replica_sync')]


def shown(args):
  """A command line as the report quotes it."""
  return 'python -m variable_mgr.benchmark ' + ' '.join(args)


_ACCURACY = re.compile(
    r'Accuracy @ 1 = (?P<top1>[0-9.]+)\s+Accuracy @ 5 = (?P<top5>[0-9.]+)')


def parse_accuracy(text):
  """(top-1, top-5) of the last `Accuracy @ 1 = ... Accuracy @ 5 = ...`
  line of `text`, or None."""
  found = _ACCURACY.findall(text)
  if not found:
    return None
  return float(found[-1][0]), float(found[-1][1])


def _tail(text, lines=6):
  return ' / '.join(l.strip() for l in text.strip().splitlines()[-lines:])


def run_command(args, log_path, timeout):
  """Runs the benchmark with `args`; (status, stdout and stderr, seconds)."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONPATH=os.pathsep.join(
      [ROOT] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
  start = time.time()
  try:
    proc = subprocess.run(
        [sys.executable, '-m', 'variable_mgr.benchmark'] + args, env=env,
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        universal_newlines=True, timeout=timeout)
    status, text = proc.returncode, proc.stdout
  except subprocess.TimeoutExpired as e:
    status = 'timeout'
    text = (e.stdout or b'').decode() if isinstance(e.stdout, bytes) else (
        e.stdout or '')
    text += '\n(stopped after %d s)' % timeout
  with open(log_path, 'w') as f:
    f.write(shown(args) + '\n' + text)
  return status, text, time.time() - start


def _read_json(path):
  try:
    with open(path) as f:
      return json.load(f)
  except (OSError, ValueError):
    return None


def training_figures(cell, results):
  """{'global_step', 'final_loss', 'loss_curve'} of a training run's
  --output JSON (a cluster's: the chief's, worker 0); the curve maps each
  of LOSS_STEPS the run reached to its loss."""
  if results is None:
    return {}
  if cell.cluster:
    workers = results.get('workers') or [{}]
    results = workers[0]
  losses = results.get('losses') or []
  return {'global_step': results.get('global_step'),
          'final_loss': results.get('final_loss'),
          'loss_curve': dict((str(s), losses[s - 1]) for s in LOSS_STEPS
                             if s <= len(losses))}


def eval_figures(results, text):
  """{'top1', 'top5', 'eval_examples', 'checkpoint_step'} of an evaluation,
  from its --output JSON (`variable_mgr.benchmark.training.evaluation.run_eval`),
  else top-1 and top-5 from its printed line."""
  figures = {}
  for key, name in (('top1', 'top_1_accuracy'), ('top5', 'top_5_accuracy'),
                    ('eval_examples', 'eval_examples'),
                    ('checkpoint_step', 'global_step')):
    if results and results.get(name) is not None:
      figures[key] = results[name]
  if 'top1' not in figures:
    printed = parse_accuracy(text)
    if printed:
      figures['top1'], figures['top5'] = printed
  return figures


def run_cell(cell, steps, work_dir, log_dir, log):
  """Trains and evaluates `cell`; the figures, or an 'error'."""
  train_dir = os.path.join(work_dir, cell.key)
  train_out = os.path.join(work_dir, cell.key + '_train.json')
  eval_out = os.path.join(work_dir, cell.key + '_eval.json')
  train = train_args(cell, steps, train_dir, train_out)
  evaluate = eval_args(cell, train_dir, eval_out)
  run = {'cell': cell._asdict(), 'train_command': shown(train),
         'eval_command': shown(evaluate), 'steps': steps,
         'examples': examples_seen(cell, steps)}
  status, text, seconds = run_command(
      train, os.path.join(log_dir, cell.key + '_train.log'), TRAIN_TIMEOUT)
  run['train_seconds'] = seconds
  if status != 0:
    run['error'] = 'training exited with %s: %s' % (status, _tail(text))
    log('  %s: %s' % (describe(cell), run['error']))
    return run
  run.update(training_figures(cell, _read_json(train_out)))
  status, text, seconds = run_command(
      evaluate, os.path.join(log_dir, cell.key + '_eval.log'), EVAL_TIMEOUT)
  run['eval_seconds'] = seconds
  if status != 0:
    run['error'] = 'evaluation exited with %s: %s' % (status, _tail(text))
  else:
    run.update(eval_figures(_read_json(eval_out), text))
    if 'top1' not in run:
      run['error'] = 'evaluation printed no accuracy: %s' % _tail(text)
    elif run.get('eval_examples', EVAL_IMAGES) != EVAL_IMAGES:
      run['error'] = 'evaluated %s images, not the %d of the eval split' % (
          run['eval_examples'], EVAL_IMAGES)
  log('  %s: %s (%.0f s + %.0f s)' % (
      describe(cell), run.get('error') or 'top-1 %.4f, top-5 %.4f' % (
          run['top1'], run['top5']), run['train_seconds'],
      run['eval_seconds']))
  shutil.rmtree(train_dir, ignore_errors=True)
  return run


TRAIN_TIMEOUT = 900
EVAL_TIMEOUT = 300


def measure_all(plan, log, work_dir, log_dir):
  """Every cell of `plan` in turn: [run]."""
  cells = plan_cells(plan)
  log('%d runs of %d steps, a global batch of %d, one at a time' % (
      len(cells), plan['steps'], GLOBAL_BATCH))
  return [run_cell(cell, plan['steps'], work_dir, log_dir, log)
          for cell in cells]
