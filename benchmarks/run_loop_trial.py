#!/usr/bin/env python
"""Several steps a run: can a step's transfer run beside the next step?

    sudo "$(command -v python)" benchmarks/run_loop_trial.py
    sudo "$(command -v python)" benchmarks/run_loop_trial.py --quick

A trial in plain TensorFlow, no manager: what a loop of steps would buy the
cluster strategies before the library builds one (docs/networks.md, "The
floor of a step a run"). Two worker hosts of the namespace cluster
(`variable_mgr.benchmark.cluster.netns`, root), one process each on
TensorFlow's gRPC runtime; the model an MLP of LAYERS dense layers of WIDTH
units (BATCH rows a worker), a copy of its variables (resource variables)
on each worker; every gradient averaged over the two workers by collective
all-reduces and applied with SGD. Modes, each a fresh cluster on a fresh
network:

* `compute`: one step a run, no all-reduce (each worker its own gradient):
  the step's compute alone.
* `step`: one step a `Session.run`: forward, backward, an all-reduce a
  variable, its update. The step of today's strategies.
* `split`: `step` with each gradient all-reduced in two parts as
  `loop_split` below sends them: what the split does without the loop.
* `loop`: STEPS_PER_RUN steps a run in a `tf.compat.v1.while_loop`
  (parallel_iterations 2). Each variable carries a token through the loop:
  the next iteration reads the variable after its token, which this
  iteration's update of it produced, and after nothing else, so a layer's
  next forward pass may start as soon as that layer's all-reduce and update
  end.
* `loop_first`: `loop` with its all-reduces chained first layer first (each
  after the previous layer's), the order the next forward pass reads them.
* `loop_split`: `loop` with each gradient all-reduced in two parts: its
  first HEAD fraction as soon as the backward pass produces it (beside the
  backward pass), the rest chained first layer first (beside the next
  forward pass, in the order it reads them).

Every mode runs the same number of steps from the same variables, so their
variables must end equal: each worker reports a sample of every variable,
the two workers must agree and every mode must agree with `step` (rtol
1e-4: float32 sums in another order), or the results say so.

The run measures c0 (`step` on unshaped links) first, then sets the links
to the rates where the ring bound B / R of the two workers (each link
carries the B bytes of the variables each way) is 1x and 2x of c0, R taken
as the rate given to `tc`. Each rate runs every mode in ROUNDS rounds, the
order reversed every other round; a mode's step is the slower worker's,
its ratio to `step` taken within a round.
"""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for _path in (HERE, ROOT):
  if _path not in sys.path:
    sys.path.insert(0, _path)

# pylint: disable=g-import-not-at-top,wrong-import-position
from variable_mgr.benchmark.reports import markdown
from variable_mgr.benchmark.reports import measure

MODES = ('compute', 'step', 'split', 'loop', 'loop_first', 'loop_split')
ONE_STEP_MODES = ('compute', 'step', 'split')
GROUP_KEY = 1
INSTANCE_KEY = 100
PORT = 2222
SAMPLE = 16  # Elements of each variable reported for the comparison.
FULL = dict(layers=8, width=1024, batch=128, steps=16, steps_per_run=8,
            warmup=1, lr=0.01, head=0.5, rounds=2, multiples=(1, 2))
QUICK = dict(FULL, layers=4, width=256, batch=32, steps=8, steps_per_run=4,
             rounds=1, multiples=(2,))


def initial_values(spec):
  rng = np.random.RandomState(1)
  x = rng.uniform(-1, 1, (spec['batch'], spec['width'])).astype(np.float32)
  weights = [rng.normal(0, 1.0 / np.sqrt(spec['width']),
                        (spec['width'], spec['width'])).astype(np.float32)
             for _ in range(spec['layers'])]
  return x, weights


def build(spec, mode, reduce_fn):
  """The graph of `mode` in the default graph: (the fetch of a run, the
  variables). `reduce_fn(tensor, key)` averages a tensor over the workers
  (its all-reduce of instance key `key`)."""
  from variable_mgr.compat import tf
  x_value, init = initial_values(spec)
  x = tf.constant(x_value)
  variables = [tf.get_variable('w%d' % i, initializer=value,
                                         use_resource=True)
               for i, value in enumerate(init)]
  width = spec['width']

  def reduce_split(i, grad, previous):
    flat = tf.reshape(grad, [-1])
    cut = int(spec['head'] * width * width)
    head = reduce_fn(flat[:cut], INSTANCE_KEY + 2 * i)
    with tf.control_dependencies([previous] if previous is not None else []):
      tail = reduce_fn(flat[cut:], INSTANCE_KEY + 2 * i + 1)
    return tf.reshape(tf.concat([head, tail], 0), grad.shape), tail

  def one_step(tokens):
    weights = []
    for var, token in zip(variables, tokens):
      with tf.control_dependencies([token]):
        weights.append(var.read_value())
    y = x
    for i, w in enumerate(weights):
      y = tf.matmul(y, w)
      if i + 1 < len(weights):
        y = tf.nn.relu(y)
    grads = tf.gradients(tf.reduce_mean(tf.square(y)), weights)
    new_tokens = []
    previous = None
    for i, (var, grad, token) in enumerate(zip(variables, grads, tokens)):
      if mode in ('split', 'loop_split'):
        grad, previous = reduce_split(i, grad, previous)
      elif mode != 'compute':
        chain = mode == 'loop_first' and previous is not None
        with tf.control_dependencies([previous] if chain else []):
          grad = reduce_fn(grad, INSTANCE_KEY + i)
        previous = grad
      update = var.assign_sub(spec['lr'] * grad, read_value=False)
      with tf.control_dependencies([update]):
        new_tokens.append(tf.identity(token))
    return new_tokens

  zeros = [tf.constant(0.0)] * len(variables)
  if mode in ONE_STEP_MODES:
    return tf.group(one_step(zeros)), variables

  def body(i, *tokens):
    return [i + 1] + one_step(list(tokens))

  out = tf.while_loop(
      lambda i, *tokens: i < spec['steps_per_run'], body,
      [tf.constant(0)] + zeros, parallel_iterations=2)
  return tf.group(out), variables


def steps_a_run(spec, mode):
  return 1 if mode in ONE_STEP_MODES else spec['steps_per_run']


def run_steps(sess, fetch, spec, mode):
  """Runs the warm-up and timed steps of `mode`; the timed steps' seconds
  a step. Every mode runs (warmup + steps / steps_per_run) x steps_per_run
  steps in all."""
  per_run = steps_a_run(spec, mode)
  runs = spec['steps'] // per_run
  for _ in range(spec['warmup'] * spec['steps_per_run'] // per_run):
    sess.run(fetch)
  start = time.time()
  for _ in range(runs):
    sess.run(fetch)
  return (time.time() - start) / (runs * per_run)


def worker(task, addresses, mode, spec):
  """One worker task: its step time and variables' samples, on stdout."""
  from variable_mgr.compat import tf
  from tensorflow.python.ops import collective_ops
  tf.disable_eager_execution()
  cluster = tf.train.ClusterSpec({'worker': addresses})
  # As the library's cluster tasks: a spare inter-op thread, and a session
  # that sees its own task only (it then needs no other task to start or
  # to end).
  config = tf.ConfigProto(
      inter_op_parallelism_threads=(markdown.processors() or 1) + 1)
  config.experimental.collective_group_leader = '/job:worker/replica:0/task:0'
  server = tf.train.Server(cluster, 'worker', task, config=config)
  config.device_filters.append('/job:worker/replica:0/task:%d' % task)

  def reduce_fn(tensor, key):
    return collective_ops.all_reduce(tensor, len(addresses), GROUP_KEY, key,
                                     'Add', 'Div')

  with tf.Graph().as_default():
    with tf.device('/job:worker/task:%d' % task):
      fetch, variables = build(spec, mode, reduce_fn)
    with tf.Session(server.target, config=config) as sess:
      sess.run(tf.global_variables_initializer())
      seconds = run_steps(sess, fetch, spec, mode)
      values = sess.run(variables)
  print(json.dumps({'step_ms': 1000.0 * seconds, 'sample': [
      v.reshape(-1)[::v.size // SAMPLE].tolist() for v in values]}))
  sys.stdout.flush()
  os._exit(0)  # A Server has no shutdown; the parent waits for both tasks.


def run_cell(network, mode, spec, timeout=900):
  """Both workers of `mode` on `network`: their reports."""
  addresses = ['%s:%d' % (h.address, PORT) for h in network.hosts]
  procs = [subprocess.Popen(
      host.command([sys.executable, os.path.abspath(__file__), '--worker',
                    json.dumps(dict(task=task, addresses=addresses,
                                    mode=mode, spec=spec))]),
      stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
      env=dict(os.environ, PYTHONPATH=ROOT))
           for task, host in enumerate(network.hosts)]
  reports = []
  for proc in procs:
    out, err = proc.communicate(timeout=timeout)
    lines = [l for l in out.splitlines() if l.startswith('{')]
    if proc.returncode or not lines:
      raise RuntimeError('%s: a worker failed (exit %s):\n%s' % (
          mode, proc.returncode, '\n'.join(err.strip().splitlines()[-8:])))
    reports.append(json.loads(lines[-1]))
  return reports


def agree(a, b):
  return all(np.allclose(x, y, rtol=1e-4, atol=1e-7) for x, y in zip(a, b))


def measure_rate(rate, spec, log):
  """Every mode at link `rate` (bits/s, None unshaped), in rounds:
  {mode: [ms a step, a round each]}, and which modes' variables disagreed."""
  from variable_mgr.benchmark.cluster import netns
  times = {mode: [] for mode in MODES}
  samples, problems = {}, []
  for r in range(spec['rounds']):
    for mode in MODES if r % 2 == 0 else MODES[::-1]:
      with netns.Network(2, rate) as network:
        reports = run_cell(network, mode, spec)
      times[mode].append(max(rep['step_ms'] for rep in reports))
      if not agree(reports[0]['sample'], reports[1]['sample']):
        problems.append('%s: the two workers\' variables differ' % mode)
      samples[mode] = reports[0]['sample']
      log('%s round %d %s: %.1f ms a step' % (
          netns.rate_text(rate) if rate else 'unshaped', r, mode,
          times[mode][-1]))
  for mode in MODES:
    if mode != 'compute' and not agree(samples[mode], samples['step']):
      problems.append('%s: variables differ from step\'s' % mode)
  return times, problems


def results_lines(spec, runs, source, command, elapsed, tf_version):
  """The whole results file."""
  megabytes = 4.0 * spec['layers'] * spec['width'] ** 2 / 1e6
  lines = markdown.header('Several steps a run: a trial',
                          'run_loop_trial.py', source, command, elapsed,
                          tf_version)
  lines += ['', 'What each mode builds, and why: the docstring of '
            '`benchmarks/run_loop_trial.py`. An MLP of %d layers of %d '
            'units, %d rows a worker, 2 workers, %.1f MB of variables (B); '
            '%d steps a run in the loops; %d rounds; `loop_split` sends %.0f%% '
            'of each gradient beside the backward pass.' % (
                spec['layers'], spec['width'], spec['batch'], megabytes,
                spec['steps_per_run'], spec['rounds'], 100 * spec['head']),
            '']
  c0 = float(np.median(runs[0][1]['step']))
  rows = []
  for rate, times, problems in runs:
    bound = 1000.0 * megabytes * 8e6 / rate if rate else 0.0
    best = max(c0, bound)
    for mode in MODES:
      ratios = [t / s for t, s in zip(times[mode], times['step'])]
      median = float(np.median(times[mode]))
      rows.append([
          '%.0f Mbit/s' % (rate / 1e6) if rate else 'unshaped',
          '%.0f' % bound if rate else '-', mode,
          '%.1f (%.1f-%.1f)' % (median, min(times[mode]), max(times[mode])),
          '%.2fx (%.2f-%.2f)' % (float(np.median(ratios)), min(ratios),
                                 max(ratios)),
          '%.2fx' % (median / best)])
    for problem in problems:
      rows.append(['', '', problem, '', '', ''])
  lines += markdown.table(
      ['link', 'B / R (ms)', 'mode', 'ms a step (rounds)',
       'step / step mode\'s', 'step / max(c0, B / R)'], rows)
  lines += ['', 'c0 = %.1f ms (`step`, unshaped); `compute` is the step '
            'without its all-reduces.' % c0]
  return lines


def _interrupt(signum, frame):
  del signum, frame
  raise KeyboardInterrupt()


def main(argv=None):
  if argv is None and len(sys.argv) > 2 and sys.argv[1] == '--worker':
    job = json.loads(sys.argv[2])
    return worker(job['task'], job['addresses'], job['mode'], job['spec'])
  args, given = measure.script_args(
      __doc__.split('\n')[0], 'a small MLP at the 2x rate only, one round; '
      'writes LOOP_TRIAL_RESULTS_quick.md', argv)
  from variable_mgr.benchmark.cluster import netns
  import tensorflow as tf
  netns.check_supported('run_loop_trial.py')
  # SIGTERM unwinds as Ctrl-C does: each network's `with` removes its
  # namespaces and what runs in them.
  signal.signal(signal.SIGTERM, _interrupt)
  spec = QUICK if args.quick else FULL
  output = args.output or os.path.join(
      HERE, 'LOOP_TRIAL_RESULTS_quick.md' if args.quick
      else 'LOOP_TRIAL_RESULTS.md')
  source = markdown.source_state(ROOT)
  start = time.time()
  log = measure.make_log(start)
  runs = [(None,) + measure_rate(None, spec, log)]
  c0 = float(np.median(runs[0][1]['step']))
  megabits = 8 * 4.0 * spec['layers'] * spec['width'] ** 2 / 1e6
  for multiple in spec['multiples']:
    rate = int(megabits / (multiple * c0 / 1000.0)) * 1000000
    runs.append((rate,) + measure_rate(rate, spec, log))
  if args.json:
    with open(args.json, 'w') as f:
      json.dump({'spec': spec, 'runs': runs}, f, indent=1)
  markdown.write(output, results_lines(
      spec, runs, source, markdown.command_line('run_loop_trial.py', given),
      time.time() - start, tf.__version__))
  log('wrote %s' % output)
  return 0


if __name__ == '__main__':
  sys.exit(main())
