"""A model with dense and sparse gradients, and the NumPy steps every
training option must equal (tests/test_option_matrix.py and the others).

The model: z = x + table[ids] (a `tf.gather`, so the table's gradient is an
IndexedSlices), h = tanh(z W1), y' = h W2 + b2, loss = 0.5 mean |y' - y|^2.
Small enough (29 elements) that a run of a few steps costs little; its W1
gradient reads W2 and its table gradient reads W1, so an update that races
the backward pass, or a stale read, shows in the numbers.

`simulate` is plain SGD in float64 with every option of
`variable_mgr.training_options` on top: the towers' combination, staged
(one-step-stale) reads, accumulation, relaxed consistency and a dynamic
loss scale whose schedule is `next_loss_scale`.
"""

import numpy as np
import tensorflow as tf

tf1 = tf.compat.v1

IN, HIDDEN, OUT, ROWS, BATCH = 3, 3, 2, 6, 4
LEARNING_RATE = 0.1
TABLE = 'embedding/table'
TRAINABLE = (TABLE, 'layer1/w1', 'layer2/w2', 'layer2/b2')

FLOAT32 = dict(rtol=2e-5, atol=2e-6)
# The float16 forward (3 decimal digits; TensorFlow 1.15's CPU float16
# matmul also accumulates in float16) against float64 NumPy.
FLOAT16 = dict(rtol=4e-3, atol=4e-3)


class GatherModel(object):
  """One tower of the model; `build(dtype)` returns `(loss, inputs)`.

  Args:
    rows, hidden: the table's rows and the hidden width.
  """

  def __init__(self, rows=ROWS, hidden=HIDDEN):
    self.shapes = {TABLE: (rows, IN), 'layer1/w1': (IN, hidden),
                   'layer2/w2': (hidden, OUT), 'layer2/b2': (OUT,)}

  def build(self, dtype=tf.float32):
    ids = tf1.placeholder(tf.int32, [BATCH])
    x = tf1.placeholder(dtype, [BATCH, IN])
    y = tf1.placeholder(dtype, [BATCH, OUT])
    init = tf1.random_normal_initializer(stddev=0.5)
    table, w1, w2, b2 = (tf1.get_variable(k, self.shapes[k], dtype, init)
                         for k in TRAINABLE)
    h = tf.tanh(tf.matmul(x + tf.gather(table, ids), w1))
    pred = tf.matmul(h, w2) + b2
    loss = 0.5 * tf.reduce_mean(tf.reduce_sum(tf.square(pred - y), axis=1))
    return loss, (ids, x, y)


class Case(object):
  """One option set: `create` its `variable_mgr.create` arguments, `steps`
  the run's length, `inf` the `(step, tower)` fed an inf (or None)."""

  def __init__(self, steps, inf=None, **create):
    self.create = create
    self.steps = steps
    self.inf = inf

  @property
  def float16(self):
    return self.create.get('use_fp16', False)

  @property
  def dynamic(self):
    if not self.create.get('auto_loss_scale'):
      return None
    return (self.create['loss_scale'], self.create['inc_loss_scale_every_n'])

  def batches(self, num_towers, rows=ROWS):
    """`[step][tower]`, the inf planted."""
    batches = make_batches(num_towers, self.steps, rows=rows)
    if self.inf is not None:
      step, tower = self.inf
      batches[step] = with_inf(batches[step], tower)
    return batches


def dynamic_options(every_n):
  """`create` arguments of a dynamic loss scale from 4."""
  return dict(use_fp16=True, loss_scale=4, auto_loss_scale=True,
              inc_loss_scale_every_n=every_n)


def make_batches(num_towers, steps, seed=0, rows=ROWS):
  """`[step][tower]` of `(ids, x, y)`; ids repeat within and across towers,
  and never name the table's last row (which must never move)."""
  rng = np.random.RandomState(seed)
  return [[(rng.randint(0, rows - 1, BATCH).astype(np.int32),
            rng.randn(BATCH, IN).astype(np.float32),
            rng.randn(BATCH, OUT).astype(np.float32))
           for _ in range(num_towers)] for _ in range(steps)]


def with_inf(step_batches, tower):
  """`step_batches` with an inf in tower `tower`'s x: its W1 gradient is
  NaN (inf times tanh's zero slope)."""
  result = list(step_batches)
  ids, x, y = result[tower]
  x = x.copy()
  x[0, 0] = np.inf
  result[tower] = (ids, x, y)
  return result


def gradients(params, batch, float16=False):
  """NumPy gradients of the loss at `params` on `batch`, in float64; with
  `float16`, the weights and data rounded to float16 first (the towers read
  float16 casts)."""
  ids, x, y = batch
  if float16:
    params = dict((k, v.astype(np.float16)) for k, v in params.items())
    x, y = x.astype(np.float16), y.astype(np.float16)
  table, w1, w2, b2 = (np.asarray(params[k], np.float64) for k in TRAINABLE)
  x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
  with np.errstate(invalid='ignore', over='ignore'):
    z = x + table[ids]
    h = np.tanh(z.dot(w1))
    d_pred = (h.dot(w2) + b2 - y) / BATCH
    d_h = d_pred.dot(w2.T) * (1 - h * h)
    d_z = d_h.dot(w1.T)
    d_table = np.zeros_like(table)
    np.add.at(d_table, ids, d_z)
    return {TABLE: d_table, 'layer1/w1': z.T.dot(d_h),
            'layer2/w2': h.T.dot(d_pred), 'layer2/b2': d_pred.sum(0)}


def next_loss_scale(scale, good_steps, finite, every_n):
  """The dynamic loss scale after one counted step: `(scale, good_steps)`.

  A step with an inf or NaN halves the scale, not below 1, and restarts the
  count; a good step that finds `every_n` good steps counted doubles the
  scale and restarts the count, any other good step counts
  (tf_cnn_benchmarks' schedule). From 4 with every_n=2 and only good steps,
  the scales after each step are 4, 4, 8, 8, 8, 16.
  """
  if not finite:
    return max(scale / 2.0, 1.0), 0
  if good_steps >= every_n:
    return scale * 2.0, 0
  return scale, good_steps + 1


def simulate(init, batches, combine, stale=False, passes=1, micro_mean=False,
             relaxed=False, float16=False, dynamic=None,
             learning_rate=LEARNING_RATE):
  """Plain SGD in NumPy (float64) under the training options.

  Args:
    init: `{name: value}`, every tower's start.
    batches: `[step][tower]`.
    combine: 'none' (each tower its own gradient), 'mean' or 'sum'.
    stale: staged reads: step t's gradients are taken at the weights of
      the start of step t-1 (the start for step 0).
    passes: backward passes per step: the towers hand over every `passes`
      steps the sum of their micro-batches' gradients (the mean with
      `micro_mean`).
    relaxed: the towers hand over the previous step's gradients (none on
      the first step).
    float16: gradients of the float16 forward (see `gradients`).
    dynamic: `(initial scale, every_n)` for a dynamic loss scale: a handed
      gradient that is not finite on any tower skips the update everywhere.

  Returns:
    `(history, scales)`: `history[step][tower]` `{name: value}` after the
    step; `scales[step]` the loss scale after it (None without `dynamic`).
  """
  num_towers = len(batches[0])
  towers = [dict((k, np.asarray(v, np.float64)) for k, v in init.items())
            for _ in range(num_towers)]
  previous = towers
  scale, good = (dynamic[0], 0) if dynamic else (None, 0)
  sums = None
  micro = 0
  pending = None
  history, scales = [], []
  for step_batches in batches:
    at = previous if stale else towers
    grads = [gradients(p, b, float16) for p, b in zip(at, step_batches)]
    handed = None
    if passes > 1:
      sums = grads if sums is None else [
          dict((k, s[k] + g[k]) for k in g) for s, g in zip(sums, grads)]
      micro += 1
      if micro == passes:
        handed = sums if not micro_mean else [
            dict((k, v / passes) for k, v in s.items()) for s in sums]
        sums, micro = None, 0
    elif relaxed:
      handed, pending = pending, grads
    else:
      handed = grads
    previous = towers
    if handed is not None:
      finite = all(np.isfinite(v).all() for g in handed for v in g.values())
      if dynamic:
        scale, good = next_loss_scale(scale, good, finite, dynamic[1])
      if finite or not dynamic:
        towers = _apply(towers, handed, combine, learning_rate)
    history.append(towers)
    scales.append(scale)
  return history, scales


def _apply(towers, handed, combine, learning_rate):
  if combine == 'none':
    return [dict((k, p[k] - learning_rate * g[k]) for k in p)
            for p, g in zip(towers, handed)]
  current = towers[0]
  new = {}
  for k in current:
    total = sum(g[k] for g in handed)
    if combine == 'mean':
      total = total / len(handed)
    new[k] = current[k] - learning_rate * total
  return [new] * len(towers)


def assert_close(got, want, tolerance, message=''):
  """`got` (`{name: value}`, float32) equals `want` for every name of
  `TRAINABLE`, within `tolerance`."""
  for k in TRAINABLE:
    assert got[k].dtype == np.float32, (message, k, got[k].dtype)
    np.testing.assert_allclose(got[k], want[k], err_msg='%s %s' % (message, k),
                               **tolerance)
